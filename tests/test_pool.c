/*
 * test_pool.c: the pool of GPUs (tuner/pool.c) without one: its refusals
 * of bad device lists, and without a GPU a clean CT_ERR_NO_DEVICE that
 * leaves no database behind. The pool's tuning runs in test_tune_gpu
 * (label gpu) on every GPU of the machine.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

static void add_pool(TCase *tc) {
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
