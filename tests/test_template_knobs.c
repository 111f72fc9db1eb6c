/*
 * test_template_knobs.c: every template's knob table against what is
 * written elsewhere: its stub's opening comment names exactly its knobs
 * ("Knobs: a, b, c."), in table order (conv3d-only rows in conv3d stubs
 * only), and every knob's macro (its name in upper case, a split's one a
 * part) occurs in the kernel source or its headers; knobs_get and
 * knobs_options read the table's defaults. Loops over the registry, so a
 * new template is checked without editing this file. CPU only, instant.
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "templates/template.h"

/* The names of "Knobs: a, b, c." in the source's first comment, comma
 * separated without spaces, into out. 0 when there is no such list. */
static int stub_knobs(const char *src, char *out, size_t size) {
  const char *end = strstr(src, "*/");
  const char *at = strstr(src, "Knobs:");
  if (!end || !at || at > end) return 0;
  size_t n = 0;
  for (const char *p = at + strlen("Knobs:"); p < end && *p != '.'; p++)
    if ((isalnum((unsigned char)*p) || *p == '_' || *p == ',') && n + 1 < size) out[n++] = *p;
  out[n] = 0;
  return 1;
}

/* The table's knobs for tpl, comma separated, into out. */
static void table_knobs(const template_desc *tpl, char *out, size_t size) {
  out[0] = 0;
  for (const knob_def *k = tpl->knobs; k->name; k++) {
    if (k->only3d && tpl->op != CT_OP_CONV3D) continue;
    if (out[0]) strncat(out, ",", size - strlen(out) - 1);
    strncat(out, k->name, size - strlen(out) - 1);
  }
}

/* Whether word occurs in the template's source or any embedded header as a
 * whole identifier. */
static int in_kernel(const template_desc *tpl, const char *word) {
  const char *const *names, *const *sources;
  const int n = template_headers(&names, &sources);
  const size_t len = strlen(word);
  for (int i = -1; i < n; i++) {
    const char *text = i < 0 ? template_source(tpl) : sources[i];
    for (const char *p = text; (p = strstr(p, word)) != NULL; p += len) {
      const int before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
      const int after = isalnum((unsigned char)p[len]) || p[len] == '_';
      if (!before && !after) return 1;
    }
  }
  return 0;
}

START_TEST(every_stub_lists_exactly_its_knobs) {
  const template_desc *const *all = template_all();
  int n = 0;
  for (int i = 0; all[i]; i++, n++) {
    const template_desc *tpl = all[i];
    ck_assert_msg(tpl->knobs != NULL, "%s has no knob table", tpl->name);
    const char *src = template_source(tpl);
    ck_assert_ptr_nonnull(src);
    char listed[1024], table[1024];
    ck_assert_msg(stub_knobs(src, listed, sizeof listed), "%s: no \"Knobs: \" list in %s",
                  tpl->name, tpl->source);
    table_knobs(tpl, table, sizeof table);
    ck_assert_msg(strcmp(listed, table) == 0, "%s lists knobs\n  %s\nbut its table has\n  %s",
                  tpl->source, listed, table);
  }
  ck_assert_int_ge(n, 12);
}
END_TEST

START_TEST(every_knob_macro_is_in_the_kernel) {
  const template_desc *const *all = template_all();
  for (int i = 0; all[i]; i++) {
    for (const knob_def *k = all[i]->knobs; k->name; k++) {
      char macro[KNOB_NAME_MAX], part[KNOB_NAME_MAX + 4];
      knob_macro(k->name, macro, sizeof macro);
      if (k->kind == KNOB_CHOICE) {
        ck_assert_msg(in_kernel(all[i], macro), "%s: knob %s, but no %s in its kernel",
                      all[i]->name, k->name, macro);
      } else if (k->kind == KNOB_SPLIT) {
        for (int j = 0; k->parts[j]; j++) {
          snprintf(part, sizeof part, "%s_%c", macro, k->parts[j]);
          ck_assert_msg(in_kernel(all[i], part), "%s: no %s in its kernel", all[i]->name, part);
        }
      }
    }
  }
}
END_TEST

/* A knob the space lacks reads as its table default, in knobs_get and in
 * the -D options; one it has reads as the config's value. */
START_TEST(defaults_come_from_the_table) {
  static const int values[] = {8, 16, 32};
  static const knob_def knobs[] = {KNOB("block_q", values, 16), KNOB("absent_k", values, 8),
                                   KNOB_END};
  space s;
  space_init(&s);
  ct_err err = {0};
  ck_assert_int_eq(space_add_choice(&s, "block_q", values, 3, &err), CT_OK);
  config c = {{2}};
  ck_assert_int_eq(knobs_get(knobs, &s, &c, "block_q"), 32);
  ck_assert_int_eq(knobs_get(knobs, &s, &c, "absent_k"), 8);
  instance inst = {0};
  knobs_options(knobs, &s, &c, &inst);
  ck_assert_int_eq(inst.n_options, 2);
  ck_assert_str_eq(inst.options[0], "-DBLOCK_Q=32");
  ck_assert_str_eq(inst.options[1], "-DABSENT_K=8");
  space_free(&s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("template_knobs");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, every_stub_lists_exactly_its_knobs);
  tcase_add_test(tc, every_knob_macro_is_in_the_kernel);
  tcase_add_test(tc, defaults_come_from_the_table);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
