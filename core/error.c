/*
 * error.c: the status tables (generated from CT_STATUS_LIST) and the ct_err
 * helpers. Messages are truncated to CT_ERRMSG_MAX - 1 bytes; the tables are
 * const and shared by every context.
 */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The formatted text into msg (CT_ERRMSG_MAX bytes), each control byte
 * (below 0x20, or 0x7f) written as \xHH, cut between escapes. A safety
 * net under err_excerpt: a name or path a message quotes raw (an ONNX
 * model's node and tensor names, SQLite's and NVRTC's texts) can then put
 * no escape sequence or line break on the terminal of whoever prints it.
 * Bytes above 0x7f stay (UTF-8 names print as themselves). */
static void set_msg(char *msg, const char *text) {
  size_t len = 0;
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    const int ctl = *p < 0x20 || *p == 0x7f;
    const size_t n = ctl ? 4 : 1;
    if (len + n + 1 > CT_ERRMSG_MAX) break;
    if (ctl)
      snprintf(msg + len, 5, "\\x%02x", *p);
    else
      msg[len] = (char)*p;
    len += n;
  }
  msg[len] = '\0';
}

ct_status err_set(ct_err *err, ct_status status, const char *file, int line, const char *fmt, ...) {
  if (!err) return status;
  err->status = status;
  err->file = file;
  err->line = line;
  char text[CT_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  set_msg(err->msg, text);
  return status;
}

void err_suffix(ct_err *err, const char *fmt, ...) {
  if (!err || !fmt) return;
  char text[CT_ERRMSG_MAX], joined[CT_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  /* Truncation is intended: the message keeps its first CT_ERRMSG_MAX - 1 bytes. */
  size_t len = strlen(err->msg), rest = strlen(text);
  memcpy(joined, err->msg, len);
  if (rest > sizeof joined - 1 - len) rest = sizeof joined - 1 - len;
  memcpy(joined + len, text, rest);
  joined[len + rest] = '\0';
  set_msg(err->msg, joined);
}

void err_join(char *buf, size_t size, const char *name, const char *text) {
  const size_t len = strlen(buf);
  if (len + 1 >= size) return;
  snprintf(buf + len, size - len, "%s%s%s%s", len ? "; " : "", name ? name : "", name ? ": " : "",
           text);
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

char *err_printable(const char *text) {
  if (!text) return NULL;
  size_t n = 1;
  for (const unsigned char *p = (const unsigned char *)text; *p; p++)
    n += *p < 0x20 || *p == 0x7f ? 4 : 1;
  char *out = malloc(n), *o = out;
  if (!out) return NULL;
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    if (*p < 0x20 || *p == 0x7f)
      o += snprintf(o, 5, "\\x%02x", *p);
    else
      *o++ = (char)*p;
  }
  *o = '\0';
  return out;
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
  set_msg(err->msg, joined);
}
