/* test_error.c: the status tables and the ct_err helpers. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tests/util.h"

START_TEST(status_tables_cover_every_code) {
#define CHECK_ONE(name, value, msg)                                                                \
  ck_assert_int_eq(name, value);                                                                   \
  ck_assert_str_eq(ct_strerror(name), msg);                                                        \
  ck_assert_str_eq(ct_status_name(name), #name);
  CT_STATUS_LIST(CHECK_ONE)
#undef CHECK_ONE
  ck_assert_int_eq(CT_OK, 0);
  ck_assert_str_eq(ct_strerror((ct_status)12345), "unknown status");
  ck_assert_str_eq(ct_status_name((ct_status)-999), "CT_UNKNOWN");
}
END_TEST

START_TEST(err_set_records_message_and_origin) {
  ct_err err = {0};
  ck_assert_int_eq(ERR_SET(&err, CT_ERR_PARSE, "field '%s' bad: %d", "c", 6), CT_ERR_PARSE);
  ck_assert_int_eq(err.status, CT_ERR_PARSE);
  ck_assert_str_eq(err.msg, "field 'c' bad: 6");
  ck_assert_ptr_nonnull(err.file);
  ck_assert_int_gt(err.line, 0);
  err_prefix(&err, "file %s", "a.json");
  ck_assert_str_eq(err.msg, "file a.json: field 'c' bad: 6");
  err_clear(&err);
  ck_assert_int_eq(err.status, CT_OK);
  ck_assert_str_eq(err.msg, "");
  /* NULL err: the status still comes back. */
  ck_assert_int_eq(ERR_SET(NULL, CT_ERR_IO, "x"), CT_ERR_IO);
  err_prefix(NULL, "x");
  err_clear(NULL);
}
END_TEST

START_TEST(long_messages_are_truncated_not_overflowed) {
  ct_err err = {0};
  char big[2 * CT_ERRMSG_MAX];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ERR_SET(&err, CT_ERR_INTERNAL, "%s", big);
  ck_assert_uint_eq(strlen(err.msg), CT_ERRMSG_MAX - 1);
  err_prefix(&err, "%s", big);
  ck_assert_uint_eq(strlen(err.msg), CT_ERRMSG_MAX - 1);
  err_suffix(&err, "%s", big);
  ck_assert_uint_eq(strlen(err.msg), CT_ERRMSG_MAX - 1);
  ERR_SET(&err, CT_ERR_PARSE, "reason");
  err_suffix(&err, " (in key '%s')", "k");
  ck_assert_str_eq(err.msg, "reason (in key 'k')");
  err_suffix(NULL, "x");
}
END_TEST

START_TEST(excerpt_is_short_and_escaped) {
  char buf[CT_EXCERPT_MAX];
  ck_assert_str_eq(err_excerpt(buf, sizeof buf, "conv2d-nchw"), "conv2d-nchw");
  ck_assert_str_eq(err_excerpt(buf, sizeof buf, ""), "");
  ck_assert_str_eq(err_excerpt(buf, sizeof buf, NULL), "(null)");
  ck_assert_str_eq(err_excerpt(buf, sizeof buf, "a\x1b[31mb'c\\d\n\xff"),
                   "a\\x1b[31mb\\'c\\\\d\\x0a\\xff");
  /* exactly CT_EXCERPT_BYTES: whole, no ellipsis; one more: cut, with one */
  char text[2001];
  memset(text, 'k', sizeof text - 1);
  text[CT_EXCERPT_BYTES] = '\0';
  ck_assert_str_eq(err_excerpt(buf, sizeof buf, text), text);
  text[CT_EXCERPT_BYTES] = 'k';
  text[sizeof text - 1] = '\0';
  err_excerpt(buf, sizeof buf, text);
  ck_assert_uint_eq(strlen(buf), CT_EXCERPT_BYTES + 3);
  ck_assert_int_eq(strncmp(buf, text, CT_EXCERPT_BYTES), 0);
  ck_assert_str_eq(buf + CT_EXCERPT_BYTES, "...");
  /* the worst case fits CT_EXCERPT_MAX */
  memset(text, 0x1b, sizeof text - 1);
  err_excerpt(buf, sizeof buf, text);
  ck_assert_uint_eq(strlen(buf), 4 * CT_EXCERPT_BYTES + 3);
  ck_assert_str_eq(buf + 4 * CT_EXCERPT_BYTES, "...");
  /* a small buffer is cut between escapes, never inside one */
  char small[7];
  ck_assert_str_eq(err_excerpt(small, sizeof small, "\x01\x02"), "\\x01");
  ck_assert_str_eq(err_excerpt(small, sizeof small, "abcdefgh"), "abcdef");
}
END_TEST

/* err_escape: err_excerpt's escaping with a bound of the caller's (the
 * command quotes paths whole): 2000 bytes kept whole under a bound of 4096,
 * cut with "..." past it, every byte escaped alike. */
START_TEST(escape_keeps_up_to_its_bound) {
  static char buf[4 * 4096 + 4];
  char text[2001];
  memset(text, 'p', sizeof text - 1);
  text[sizeof text - 1] = '\0';
  text[1000] = 0x1b;
  err_escape(buf, sizeof buf, text, 4096);
  ck_assert_uint_eq(strlen(buf), 2000 + 3); /* the escape's 3 more bytes, no ellipsis */
  ck_assert_int_eq(strncmp(buf + 1000, "\\x1b", 4), 0);
  ck_assert_int_eq(buf[strlen(buf) - 1], 'p');
  err_escape(buf, sizeof buf, text, 100);
  ck_assert_uint_eq(strlen(buf), 103);
  ck_assert_str_eq(buf + 100, "...");
  ck_assert_str_eq(err_escape(buf, sizeof buf, NULL, 10), "(null)");
  /* err_excerpt is err_escape at CT_EXCERPT_BYTES */
  char a[CT_EXCERPT_MAX], b[CT_EXCERPT_MAX];
  ck_assert_str_eq(err_excerpt(a, sizeof a, text), err_escape(b, sizeof b, text, CT_EXCERPT_BYTES));
}
END_TEST

/* err_set, err_prefix and err_suffix write each control byte of the
 * formatted message as \\xHH: a name or path quoted raw cannot put an
 * escape sequence or a line break on a terminal. Bytes above 0x7f (UTF-8)
 * stay; an escape is never cut in two at the message's end. */
START_TEST(messages_escape_control_bytes) {
  ct_err err = {0};
  ERR_SET(&err, CT_ERR_PARSE, "node '%s': %s", "a\x1b[31mb", "line\nbreak\x7f \xc3\xa9");
  ck_assert_str_eq(err.msg, "node 'a\\x1b[31mb': line\\x0abreak\\x7f \xc3\xa9");
  err_prefix(&err, "%s", "m\tx");
  ck_assert_int_eq(strncmp(err.msg, "m\\x09x: node", 12), 0);
  err_suffix(&err, " (%s)", "\r");
  ck_assert_ptr_nonnull(strstr(err.msg, "(\\x0d)"));
  char many[CT_ERRMSG_MAX * 2];
  memset(many, 0x1b, sizeof many - 1);
  many[sizeof many - 1] = '\0';
  ERR_SET(&err, CT_ERR_PARSE, "%s", many);
  const size_t n = strlen(err.msg);
  ck_assert_uint_lt(n, CT_ERRMSG_MAX);
  ck_assert_uint_eq(n % 4, 0);
  ck_assert_str_eq(err.msg + n - 4, "\\x1b");
}
END_TEST

/* err_printable: each control byte as \xHH, UTF-8 and long text whole */
START_TEST(printable_copies_escape_control_bytes_only) {
  char *p = err_printable("a\x1b[31mb\n\x7f\xc3\xa9");
  ck_assert_ptr_nonnull(p);
  ck_assert_str_eq(p, "a\\x1b[31mb\\x0a\\x7f\xc3\xa9");
  free(p);
  char big[5001];
  memset(big, 'x', 5000);
  big[5000] = '\0';
  big[4999] = '\t';
  ck_assert_ptr_nonnull(p = err_printable(big));
  ck_assert_uint_eq(strlen(p), 4999 + 4);
  ck_assert_str_eq(p + 4999, "\\x09");
  free(p);
  ck_assert_ptr_null(err_printable(NULL));
}
END_TEST

/* err_join: "; " between entries, "name: " when named, cut at the buffer */
START_TEST(join_lists_reasons_within_the_buffer) {
  char buf[24] = "";
  err_join(buf, sizeof buf, "a", "x");
  ck_assert_str_eq(buf, "a: x");
  err_join(buf, sizeof buf, NULL, "why");
  ck_assert_str_eq(buf, "a: x; why");
  err_join(buf, sizeof buf, "template", "a long reason");
  ck_assert_str_eq(buf, "a: x; why; template: a ");
  err_join(buf, sizeof buf, "b", "y"); /* full: unchanged */
  ck_assert_str_eq(buf, "a: x; why; template: a ");
}
END_TEST

START_TEST(version_matches_header) {
  ck_assert_str_eq(ct_version(), CT_VERSION_STRING);
}
END_TEST

static void add_error(TCase *tc) {
  tcase_add_test(tc, status_tables_cover_every_code);
  tcase_add_test(tc, err_set_records_message_and_origin);
  tcase_add_test(tc, long_messages_are_truncated_not_overflowed);
  tcase_add_test(tc, excerpt_is_short_and_escaped);
  tcase_add_test(tc, escape_keeps_up_to_its_bound);
  tcase_add_test(tc, messages_escape_control_bytes);
  tcase_add_test(tc, printable_copies_escape_control_bytes_only);
  tcase_add_test(tc, join_lists_reasons_within_the_buffer);
  tcase_add_test(tc, version_matches_header);
}

static const test_case suite_cases[] = {
    {"error", -1, add_error},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"error", suite_cases, 0, NULL};
  return test_main(&suite);
}
