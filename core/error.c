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
