/*
 * test_pool.c: the pool of GPUs (tuner/pool.c) without one: its refusals
 * of bad device lists, and without a GPU a clean CT_ERR_NO_DEVICE that
 * leaves no database behind. The pool's tuning runs in test_tune_gpu
 * (label gpu) on every GPU of the machine.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "tuner/mpi.h"
#include "tuner/pool.h"
#include "tests/util.h"

START_TEST(bad_device_lists_are_refused) {
  tune_opts o;
  tune_opts_default(&o);
  tune_pool *p = (tune_pool *)1;
  ct_err err = {0};
  int twice[] = {0, 1, 0}, negative[] = {-1};
  ck_assert_int_eq(tune_pool_open("x.db", &o, twice, 3, &p, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_null(p);
  ck_assert_msg(strstr(err.msg, "0 is named twice"), "%s", err.msg);
  ck_assert_int_eq(tune_pool_open("x.db", &o, negative, 1, &p, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "-1 is not a device ordinal"), "%s", err.msg);
  ck_assert_int_eq(tune_pool_open("x.db", &o, twice, 0, &p, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "accepted 1.."), "%s", err.msg);
  ck_assert_int_eq(access("x.db", F_OK), -1);
}
END_TEST

START_TEST(without_a_gpu_nothing_is_created) {
  char path[512];
  snprintf(path, sizeof path, "%s/pool.db", test_root());
  tune_opts o;
  tune_opts_default(&o);
  tune_pool *p = NULL;
  ct_err err = {0};
  int devs[] = {0};
  ct_status st = tune_pool_open(path, &o, devs, 1, &p, &err);
  if (st == CT_OK) { /* a GPU machine: the pool opens */
    ck_assert_int_eq(tune_pool_gpus(p), 1);
    ck_assert_int_eq(tune_pool_kinds(p), 1);
    tune_pool_close(p);
    return;
  }
  ck_assert_msg(st == CT_ERR_NO_DEVICE, "%s: %s", ct_status_name(st), err.msg);
  ck_assert_ptr_null(p);
  ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

/* The records protocol's text (tuner/mpi.c): trials as JSON lines and back,
 * every field kept; a bad line named; no leak (the sanitizer build). */
START_TEST(records_travel_as_json_lines) {
  trial v[3];
  memset(v, 0, sizeof v);
  for (int i = 0; i < 3; i++) {
    snprintf(v[i].uid, sizeof v[i].uid, "u-%d", i);
    snprintf(v[i].workload_key, sizeof v[i].workload_key,
             "conv2d-nchw4c-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1");
    snprintf(v[i].template_name, sizeof v[i].template_name, "conv2d_nchw4c_dp4a");
    snprintf(v[i].template_version, sizeof v[i].template_version, "0123456789abcdef");
    v[i].config_index = 7 + (uint64_t)i;
    v[i].config_json = strdup("{\"unroll\":2}");
    v[i].outcome = i == 1 ? OUT_WRONG_ANSWER : OUT_OK;
    v[i].error = i == 1 ? strdup("mismatch \"at\"\n 3") : NULL;
    v[i].median_us = 1.0 / 3.0 + i;
    v[i].options = strdup("-DA=1");
    snprintf(v[i].arch, sizeof v[i].arch, "sm_90");
    snprintf(v[i].tuner, sizeof v[i].tuner, "xgb");
    v[i].timestamp = 1790000000.125;
    snprintf(v[i].device.name, sizeof v[i].device.name, "NVIDIA H200");
    v[i].device.cc_major = 9;
  }
  size_t len = 0;
  char *text = mpi_trials_text(v, 3, &len);
  ck_assert_ptr_nonnull(text);
  ck_assert_int_eq((int)strlen(text), (int)len);
  trial *back = NULL;
  int n = 0;
  ct_err err = {0};
  ck_assert_msg(mpi_trials_parse(text, len, &back, &n, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(n, 3);
  for (int i = 0; i < 3; i++) {
    cJSON *a = trial_to_json(&v[i]), *b = trial_to_json(&back[i]);
    ck_assert(cJSON_Compare(a, b, 1));
    cJSON_Delete(a);
    cJSON_Delete(b);
  }
  trials_free(back, n);
  /* a broken second line: named, nothing returned */
  char *cut = strchr(text, '\n') + 10;
  *cut = '\0';
  ck_assert_int_eq(mpi_trials_parse(text, strlen(text), &back, &n, &err), CT_ERR_PARSE);
  ck_assert_msg(strstr(err.msg, "record 2"), "%s", err.msg);
  ck_assert_ptr_null(back);
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(mpi_trials_parse("", 0, &back, &n, &err), CT_OK);
  ck_assert_int_eq(n, 0);
  free(back);
  free(text);
  for (int i = 0; i < 3; i++) trial_free(&v[i]);
}
END_TEST

static void add_pool(TCase *tc) {
  tcase_add_test(tc, records_travel_as_json_lines);
  tcase_add_test(tc, bad_device_lists_are_refused);
  tcase_add_test(tc, without_a_gpu_nothing_is_created);
}

static const test_case suite_cases[] = {
    {"pool", 60, add_pool},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"pool", suite_cases, 1, NULL};
  return test_main(&suite);
}
