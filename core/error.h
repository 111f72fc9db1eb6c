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

/* Record status and a printf-style message on err (NULL: ignored); returns
 * status. Here and in err_prefix and err_suffix each control byte of the
 * formatted message (below 0x20, or 0x7f) is written as \xHH, so that no
 * message carries an escape sequence or a line break, whatever it quotes. */
ct_status err_set(ct_err *err, ct_status status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Reset err to CT_OK with an empty message. NULL is accepted. */
void err_clear(ct_err *err);
/* Prefix the message already on err with "prefix: " (for context such as a
 * file name or a workload's name). NULL or an empty prefix does nothing. */
void err_prefix(ct_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append formatted text to the message already on err (for context that
 * must not push the reason out, such as the input it came from); what does
 * not fit is cut. NULL err or fmt does nothing. */
void err_suffix(ct_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Most input bytes a message quotes, and the buffer err_excerpt needs: each
 * byte may grow to a 4-byte escape, plus "..." and the NUL. */
#define CT_EXCERPT_BYTES 60
#define CT_EXCERPT_MAX   (4 * CT_EXCERPT_BYTES + 4)
/* Write into buf (size bytes, CT_EXCERPT_MAX is always enough) a quotable
 * excerpt of text: its first CT_EXCERPT_BYTES bytes, then "..." when it is
 * longer; quotes, backslashes and bytes outside printable ASCII escaped as
 * \', \\ and \xHH. NULL text gives "(null)". Returns buf. Messages quote user
 * input (keys, JSON strings, names, file names, flag values) only through
 * this, so that a long input cannot push the reason out of CT_ERRMSG_MAX. */
const char *err_excerpt(char *buf, size_t size, const char *text);
/* err_excerpt's escaping with max_bytes in place of CT_EXCERPT_BYTES (buf
 * then needs 4 * max_bytes + 4 bytes): for the command's own messages,
 * whose lines are not bounded by CT_ERRMSG_MAX, quoting a path whole
 * (whose end is the part that matters) but never a control byte raw. */
const char *err_escape(char *buf, size_t size, const char *text, size_t max_bytes);

/* Append to buf (size bytes, a string) "; " unless it is empty, then
 * "name: text" (name NULL: text), truncating: the lists of reasons that
 * the tuner's plan and the dispatch's refusals give. */
void err_join(char *buf, size_t size, const char *name, const char *text);

/* A copy of text (malloc'd; NULL when out of memory) with each control byte
 * (below 0x20, or 0x7f) written as \xHH, as messages have them, whole and
 * UTF-8 left as it is: for names from input files (a model's node names, a
 * workload file's labels) that the command prints as they are, in tables
 * and progress lines. */
char *err_printable(const char *text);

#define ERR_SET(err, status, ...) err_set((err), (status), __FILE__, __LINE__, __VA_ARGS__)

#endif
