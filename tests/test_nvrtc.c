/*
 * test_nvrtc.c: compiling with NVRTC (gpu/nvrtc.c), no GPU needed.
 *
 * A small dp4a kernel compiles to an sm_90 cubin (an ELF image) only when
 * its -D option arrives; compile errors, failed static_asserts and unknown
 * options come back as CT_ERR_NVRTC with the log kept and a one-line
 * excerpt, never a crash; bad arguments are rejected. Compiling without
 * the driver's compute cache gives the same cubin. Each compile costs
 * tens of milliseconds (more under ASan), hence the generous timeout.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "gpu/nvrtc.h"
#include "tests/util.h"

/* N reaches the source as -DN=...: without it the source does not compile. */
static const char kernel_source[] =
    "#ifndef N\n"
    "#error N must be defined with -DN=...\n"
    "#endif\n"
    "static_assert(N % 4 == 0, \"N must be a multiple of 4\");\n"
    "extern \"C\" __global__ void add_dp4a(const int *a, const int4 *b, int *out) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < N) out[i] = __dp4a(a[i], b[i].x, b[i].y) + __dp4a(b[i].z, b[i].w, 0);\n"
    "}\n";

static arch sm90(void) {
  arch a;
  ct_err err = {0};
  ck_assert_int_eq(arch_from_name("sm_90", &a, &err), CT_OK);
  return a;
}

START_TEST(compiles_to_an_elf_cubin) {
  arch a = sm90();
  const char *options[] = {"-DN=64"};
  cubin c;
  ct_err err = {0};
  ct_status st = nvrtc_compile_source("add_dp4a.cu", kernel_source, options, 1, &a, &c, &err);
  ck_assert_msg(st == CT_OK, "%s: %s", ct_status_name(st), err.msg);
  ck_assert_ptr_nonnull(c.data);
  ck_assert_uint_gt(c.size, 4);
  ck_assert_int_eq(memcmp(c.data,
                          "\x7f"
                          "ELF",
                          4),
                   0);
  ck_assert_ptr_nonnull(c.log);
  ck_assert_double_gt(c.compile_ms, 0.0);
  cubin_free(&c);
  ck_assert_ptr_null(c.data);
  ck_assert_ptr_null(c.log);
  ck_assert_uint_eq(c.size, 0);
  cubin_free(&c); /* a freed cubin is zeroed: freeing again is harmless */
  cubin_free(NULL);
}
END_TEST

START_TEST(compiles_for_other_architectures) {
  /* NVRTC 13 dropped everything before sm_75: the rest of the table. */
  static const char *const names[] = {"sm_75", "sm_80",  "sm_86", "sm_87",
                                      "sm_89", "sm_100", "sm_120"};
  const char *options[] = {"-DN=64"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    arch a;
    cubin c;
    ct_err err = {0};
    ck_assert_int_eq(arch_from_name(names[i], &a, &err), CT_OK);
    ct_status st = nvrtc_compile_source("add_dp4a.cu", kernel_source, options, 1, &a, &c, &err);
    ck_assert_msg(st == CT_OK, "%s: %s: %s", names[i], ct_status_name(st), err.msg);
    ck_assert_int_eq(memcmp(c.data,
                            "\x7f"
                            "ELF",
                            4),
                     0);
    cubin_free(&c);
  }
}
END_TEST

START_TEST(missing_option_is_a_compile_error_with_its_log) {
  arch a = sm90();
  cubin c;
  ct_err err = {0};
  ct_status st = nvrtc_compile_source("add_dp4a.cu", kernel_source, NULL, 0, &a, &c, &err);
  ck_assert_int_eq(st, CT_ERR_NVRTC);
  ck_assert_int_eq(err.status, CT_ERR_NVRTC);
  ck_assert_ptr_null(c.data);
  ck_assert_uint_eq(c.size, 0);
  ck_assert_ptr_nonnull(c.log);
  ck_assert_ptr_nonnull(strstr(c.log, "error"));
  ck_assert_ptr_nonnull(strstr(c.log, "N must be defined"));
  ck_assert_msg(strncmp(err.msg, "compile error: ", 15) == 0, "msg: %s", err.msg);
  ck_assert_msg(strstr(err.msg, "N must be defined") && !strchr(err.msg, '\n'), "msg: %s", err.msg);
  cubin_free(&c);
}
END_TEST

START_TEST(static_assert_reaches_the_message) {
  arch a = sm90();
  const char *options[] = {"-DN=6"};
  cubin c;
  ct_err err = {0};
  ck_assert_int_eq(nvrtc_compile_source("add_dp4a.cu", kernel_source, options, 1, &a, &c, &err),
                   CT_ERR_NVRTC);
  ck_assert_msg(strstr(err.msg, "N must be a multiple of 4"), "msg: %s", err.msg);
  ck_assert_ptr_nonnull(strstr(c.log, "N must be a multiple of 4"));
  cubin_free(&c);
}
END_TEST

START_TEST(syntax_error_names_the_line) {
  arch a = sm90();
  cubin c;
  ct_err err = {0};
  const char *bad = "extern \"C\" __global__ void k(int *p) {\n  p[0] = undefined_name;\n}\n";
  ck_assert_int_eq(nvrtc_compile_source("bad.cu", bad, NULL, 0, &a, &c, &err), CT_ERR_NVRTC);
  ck_assert_ptr_null(c.data);
  ck_assert_ptr_nonnull(strstr(c.log, "undefined_name"));
  /* NVRTC writes "bad.cu(2): error: identifier ... is undefined". */
  ck_assert_msg(strstr(err.msg, "bad.cu(2)") && strstr(err.msg, "undefined_name"), "msg: %s",
                err.msg);
  cubin_free(&c);
}
END_TEST

START_TEST(unknown_option_is_an_error_not_a_crash) {
  arch a = sm90();
  const char *options[] = {"-DN=64", "--no-such-option"};
  cubin c;
  ct_err err = {0};
  ck_assert_int_eq(nvrtc_compile_source("add_dp4a.cu", kernel_source, options, 2, &a, &c, &err),
                   CT_ERR_NVRTC);
  ck_assert_ptr_null(c.data);
  ck_assert_ptr_nonnull(c.log);
  ck_assert_msg(strncmp(err.msg, "compile error: ", 15) == 0, "msg: %s", err.msg);
  cubin_free(&c);
}
END_TEST

START_TEST(unsupported_architecture_is_an_error) {
  /* sm_61 has dp4a but NVRTC 13 no longer targets it (nor does the arch table). */
  arch a = sm90();
  cubin c;
  ct_err err = {0};
  const char *options[] = {"-DN=64"};
  ck_assert_int_eq(arch_from_name("sm_61", &a, &err), CT_ERR_NOT_FOUND);
  a.cc_major = 6, a.cc_minor = 1;
  arch_set_name(&a);
  ck_assert_int_eq(nvrtc_compile_source("add_dp4a.cu", kernel_source, options, 1, &a, &c, &err),
                   CT_ERR_NVRTC);
  ck_assert_ptr_null(c.data);
  ck_assert_ptr_nonnull(c.log);
  cubin_free(&c);
}
END_TEST

START_TEST(bad_arguments_are_rejected) {
  arch a = sm90();
  cubin c;
  ct_err err = {0};
  const char *null_option[] = {NULL};
  ck_assert_int_eq(nvrtc_compile_source(NULL, kernel_source, NULL, 0, &a, &c, &err),
                   CT_ERR_INVALID_ARG);
  cubin_free(&c);
  ck_assert_int_eq(nvrtc_compile_source("k.cu", NULL, NULL, 0, &a, &c, &err), CT_ERR_INVALID_ARG);
  cubin_free(&c);
  ck_assert_int_eq(nvrtc_compile_source("k.cu", kernel_source, NULL, 0, NULL, &c, &err),
                   CT_ERR_INVALID_ARG);
  cubin_free(&c);
  ck_assert_int_eq(nvrtc_compile_source("k.cu", kernel_source, NULL, 1, &a, &c, &err),
                   CT_ERR_INVALID_ARG);
  cubin_free(&c);
  ck_assert_int_eq(nvrtc_compile_source("k.cu", kernel_source, null_option, 1, &a, &c, &err),
                   CT_ERR_INVALID_ARG);
  cubin_free(&c);
  ck_assert_int_eq(nvrtc_compile_source("k.cu", kernel_source, NULL, 0, &a, NULL, &err),
                   CT_ERR_INVALID_ARG);
  ck_assert_int_eq(nvrtc_compile(NULL, &a, &c, &err), CT_ERR_INVALID_ARG);
  cubin_free(&c);
  instance inst;
  memset(&inst, 0, sizeof inst); /* no template */
  ck_assert_int_eq(nvrtc_compile(&inst, &a, &c, &err), CT_ERR_INVALID_ARG);
  cubin_free(&c);
}
END_TEST

START_TEST(templates_compile_with_their_embedded_headers) {
  arch a = sm90();
  cubin c;
  ct_err err = {0};
  instance inst;
  memset(&inst, 0, sizeof inst);
  /* A template whose source is not embedded is reported, not crashed on. */
  template_desc fake = {.name = "fake", .source = "no_such_template.cu"};
  inst.tpl = &fake;
  ck_assert_int_eq(nvrtc_compile(&inst, &a, &c, &err), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(err.msg, "no_such_template.cu"));
  cubin_free(&c);
  /* The real ones find the headers they include: without their knob options
   * they may fail, but never on a missing include. */
  const template_desc *const *all = template_all();
  for (int i = 0; all[i]; i++) {
    inst.tpl = all[i];
    ct_status st = nvrtc_compile(&inst, &a, &c, &err);
    ck_assert_ptr_nonnull(c.log);
    ck_assert_msg(st == CT_OK || st == CT_ERR_NVRTC, "%s: %s", all[i]->name, err.msg);
    ck_assert_msg(!strstr(c.log, "cannot open source file"), "%s:\n%s", all[i]->name, c.log);
    cubin_free(&c);
  }
}
END_TEST

/* Template tpl_name's instance of a random valid config (seed) on the
 * workload of key, for sm_90; s holds its space (space_free it). */
static void sampled_instance(const char *tpl_name, const char *key, uint64_t seed, space *s,
                             instance *inst) {
  arch a = sm90();
  const template_desc *tpl = template_find(tpl_name);
  ck_assert_ptr_nonnull(tpl);
  ct_workload w;
  ct_err err = {0};
  ck_assert_msg(workload_from_key(key, &w, &err) == CT_OK, "%s", err.msg);
  config cfg;
  rng r;
  rng_seed(&r, seed);
  ck_assert_msg(template_space(tpl, &w, s, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(template_sample(tpl, &w, s, &a, &r, 100000, &cfg, &err) == CT_OK, "%s: %s",
                tpl_name, err.msg);
  ck_assert_msg(instance_make(tpl, &w, s, &cfg, &a, inst, &err) == CT_OK, "%s", err.msg);
}

/* NVRTC_NO_DRIVER_CACHE (the builder's workers) changes where NVRTC keeps
 * nothing, not what it compiles: the same instance gives the same cubin. */
START_TEST(without_the_driver_cache_the_cubin_is_the_same) {
  arch a = sm90();
  space s;
  instance inst;
  sampled_instance("conv2d_nchw4c_dp4a",
                   "conv2d-nchw4c-i8.i8.i32-n1-c16-k16-14x14-r3x3-s1x1-p1x1.1x1-d1x1", 5, &s,
                   &inst);
  ct_err err = {0};
  cubin c0, c1;
  ck_assert_msg(nvrtc_compile(&inst, &a, &c0, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(nvrtc_compile_flags(&inst, &a, NVRTC_NO_DRIVER_CACHE, &c1, &err) == CT_OK, "%s",
                err.msg);
  ck_assert_uint_eq(c0.size, c1.size);
  ck_assert_int_eq(memcmp(c0.data, c1.data, c0.size), 0);
  cubin_free(&c0);
  cubin_free(&c1);
  space_free(&s);
}
END_TEST

/* A template's instance compiles with --minimal (nvrtc.c), which leaves out
 * of NVRTC's built-in header what no template uses: the same instance's
 * source compiled without it (nvrtc_compile_source) gives the same cubin,
 * byte for byte, for a channel-packed, a channels-last and an sm_90a
 * template. */
START_TEST(minimal_compiles_the_same_cubin) {
  static const struct {
    const char *tpl, *key;
  } cases[] = {
      {"conv2d_nchw4c_dp4a", "conv2d-nchw4c-i8.i8.i32-n1-c16-k16-14x14-r3x3-s1x1-p1x1.1x1-d1x1"},
      {"conv2d_nhwc_dw",
       "conv2d-nhwc-i8.i8.i8-n2-c144-k144-28x28-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g144"},
      {"conv2d_nhwc_wgmma",
       "conv2d-nhwc-i8.i8.i8-n2-c64-k128-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-res-onnx"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    arch a = sm90();
    space s;
    instance inst;
    sampled_instance(cases[i].tpl, cases[i].key, 11, &s, &inst);
    const template_desc *tpl = inst.tpl;
    ct_err err = {0};
    const char *opts[INSTANCE_MAX_OPTIONS];
    for (int o = 0; o < inst.n_options; o++) opts[o] = inst.options[o];
    arch target = a;
    if (inst.arch_specific) { /* "sm_90" -> "sm_90a", as nvrtc_compile does */
      size_t len = strlen(target.name);
      ck_assert_uint_lt(len + 1, sizeof target.name);
      target.name[len] = 'a', target.name[len + 1] = '\0';
    }
    cubin c0, c1;
    ck_assert_msg(nvrtc_compile(&inst, &a, &c0, &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(nvrtc_compile_source(tpl->source, template_source(tpl), opts, inst.n_options,
                                       &target, &c1, &err) == CT_OK,
                  "%s: %s", cases[i].tpl, err.msg);
    ck_assert_msg(c0.size == c1.size && memcmp(c0.data, c1.data, c0.size) == 0,
                  "%s: %zu bytes with --minimal, %zu without", cases[i].tpl, c0.size, c1.size);
    cubin_free(&c0);
    cubin_free(&c1);
    space_free(&s);
  }
}
END_TEST

START_TEST(version_is_major_dot_minor) {
  const char *v = nvrtc_version_string();
  int major = 0, minor = -1;
  char rest;
  ck_assert_msg(sscanf(v, "%d.%d%c", &major, &minor, &rest) == 2, "version '%s'", v);
  ck_assert_int_ge(major, 12);
  ck_assert_int_ge(minor, 0);
  ck_assert_ptr_eq(nvrtc_version_string(), v); /* static storage, stable */
}
END_TEST

static void add_nvrtc(TCase *tc) {
  tcase_add_test(tc, compiles_to_an_elf_cubin);
  tcase_add_test(tc, compiles_for_other_architectures);
  tcase_add_test(tc, missing_option_is_a_compile_error_with_its_log);
  tcase_add_test(tc, static_assert_reaches_the_message);
  tcase_add_test(tc, syntax_error_names_the_line);
  tcase_add_test(tc, unknown_option_is_an_error_not_a_crash);
  tcase_add_test(tc, unsupported_architecture_is_an_error);
  tcase_add_test(tc, bad_arguments_are_rejected);
  tcase_add_test(tc, templates_compile_with_their_embedded_headers);
  tcase_add_test(tc, without_the_driver_cache_the_cubin_is_the_same);
  tcase_add_test(tc, minimal_compiles_the_same_cubin);
  tcase_add_test(tc, version_is_major_dot_minor);
}

static const test_case suite_cases[] = {
    {"nvrtc", 120, add_nvrtc},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"nvrtc", suite_cases, 0, NULL};
  return test_main(&suite);
}
