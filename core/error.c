/*
 * error.c: the status tables (generated from CT_STATUS_LIST) and the ct_err
 * helpers. Messages are truncated to CT_ERRMSG_MAX - 1 bytes; the tables are
 * const and shared by every context.
 */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ct_strerror(ct_status status) {
  switch (status) {
#define CT_STATUS_MSG(name, value, msg)                                                            \
  case name:                                                                                       \
    return msg;
    CT_STATUS_LIST(CT_STATUS_MSG)
#undef CT_STATUS_MSG
  }
  return "unknown status";
}

const char *ct_status_name(ct_status status) {
  switch (status) {
#define CT_STATUS_NAME(name, value, msg)                                                           \
  case name:                                                                                       \
    return #name;
    CT_STATUS_LIST(CT_STATUS_NAME)
#undef CT_STATUS_NAME
  }
  return "CT_UNKNOWN";
}

const char *ct_version(void) {
  return CT_VERSION_STRING;
}

ct_status err_set(ct_err *err, ct_status status, const char *file, int line, const char *fmt, ...) {
  if (!err) return status;
  err->status = status;
  err->file = file;
  err->line = line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return status;
}

void err_suffix(ct_err *err, const char *fmt, ...) {
  if (!err || !fmt) return;
  size_t len = strlen(err->msg);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg + len, sizeof err->msg - len, fmt, ap);
  va_end(ap);
}

const char *err_excerpt(char *buf, size_t size, const char *text) {
  return err_escape(buf, size, text, CT_EXCERPT_BYTES);
}

const char *err_escape(char *buf, size_t size, const char *text, size_t max_bytes) {
  if (!buf || size == 0) return buf;
  if (!text) text = "(null)";
  size_t len = 0, i = 0;
  for (; text[i] && i < max_bytes; i++) {
    unsigned char c = (unsigned char)text[i];
    char esc[5];
    if (c == '\'' || c == '\\')
      snprintf(esc, sizeof esc, "\\%c", c);
    else if (c < 0x20 || c > 0x7e)
      snprintf(esc, sizeof esc, "\\x%02x", c);
    else
      esc[0] = (char)c, esc[1] = '\0';
    size_t n = strlen(esc);
    if (len + n + 1 > size) break; /* a small buf: cut between escapes, never inside one */
    memcpy(buf + len, esc, n);
    len += n;
  }
  if (text[i] && len + 4 <= size) {
    memcpy(buf + len, "...", 3);
    len += 3;
  }
  buf[len] = '\0';
  return buf;
}

void err_clear(ct_err *err) {
  if (!err) return;
  err->status = CT_OK;
  err->file = NULL;
  err->line = 0;
  err->msg[0] = '\0';
}

void err_prefix(ct_err *err, const char *fmt, ...) {
  if (!err || !fmt || !fmt[0]) return;
  char prefix[CT_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  /* Truncation is intended: the message keeps its first CT_ERRMSG_MAX - 1 bytes. */
  char joined[CT_ERRMSG_MAX];
  size_t len = strlen(prefix);
  memcpy(joined, prefix, len + 1);
  if (len + 2 < sizeof joined) {
    memcpy(joined + len, ": ", 3);
    len += 2;
    size_t rest = strlen(err->msg);
    if (rest > sizeof joined - 1 - len) rest = sizeof joined - 1 - len;
    memcpy(joined + len, err->msg, rest);
    joined[len + rest] = '\0';
  }
  memcpy(err->msg, joined, sizeof err->msg);
}
