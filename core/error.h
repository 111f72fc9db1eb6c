/*
 * error.h: where an error's detail lives until the caller reads it.
 *
 * Every fallible internal function takes a `ct_err *` (which may be NULL when
 * the caller only wants the status) and returns a ct_status. The first error
 * set wins nothing special: each ERR_SET overwrites, so the message a caller
 * sees is the one closest to the failure. Messages name the field and the
 * accepted range; the file and line are kept apart so that the CLI can show
 * a clean one-line message and still print the origin with -v.
 */
#ifndef CT_CORE_ERROR_H
#define CT_CORE_ERROR_H

#include "convtune/convtune.h"

#define CT_ERRMSG_MAX 512

typedef struct ct_err {
  ct_status status;
  const char *file; /* static string from __FILE__, or NULL */
  int line;
  char msg[CT_ERRMSG_MAX];
} ct_err;

/* Record status and a printf-style message on err (NULL: ignored); returns status. */
ct_status err_set(ct_err *err, ct_status status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Reset err to CT_OK with an empty message. NULL is accepted. */
void err_clear(ct_err *err);
/* Prefix the message already on err with "prefix: " (for context such as a
 * file name or a workload's name). NULL or an empty prefix does nothing. */
void err_prefix(ct_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ERR_SET(err, status, ...) err_set((err), (status), __FILE__, __LINE__, __VA_ARGS__)

#endif
