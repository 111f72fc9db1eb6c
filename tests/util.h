/*
 * util.h: what every Check test program shares (tests/util.c, compiled into
 * each ct_test): allocation that fails the test instead of returning NULL,
 * core's seedable RNG (core/rng.h) with an inclusive range, scratch folders
 * under one folder per run, skips that cannot be read as passes, and the
 * one main: a suite built from a table of cases, run, and its exit code.
 *
 * Exit codes (what ctest reads): 0 every test passed (those that printed
 * SKIP are counted apart), 1 a failure, 77 nothing ran: no GPU, or every
 * test skipped.
 * Skips are counted in a shared page, so forked (CK_FORK) tests count too.
 */
#ifndef CT_TESTS_UTIL_H
#define CT_TESTS_UTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"

/* malloc / calloc / strdup that fail the running test on NULL; owned (free).
 * A zero size allocates one byte, so the result is never NULL. */
void *xmalloc(size_t bytes);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);

/* Uniform in [lo, hi] (inclusive; lo <= hi) from core's generator. */
int rng_range(rng *r, int lo, int hi);

/* The run's scratch folder (test_main makes it under $TMPDIR or /tmp and
 * removes it, with everything in it, at the end); borrowed. */
const char *test_root(void);
/* A fresh folder inside the run's folder, its path into dir (fails the
 * test when it cannot be made). */
void scratch(char *dir, size_t size);
/* Remove path and, for a folder, everything in it. */
void remove_tree(const char *path);

/* The running test did not run (all or part of) its checks on this
 * machine: prints "SKIP <what>: why" and counts the test once as skipped.
 * what names the part (a template); TEST_SKIP names the test and returns. */
void test_skip(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define TEST_SKIP(...)                                                                             \
  do {                                                                                             \
    test_skip(__func__, __VA_ARGS__);                                                              \
    return;                                                                                        \
  } while (0)

/* One TCase: its name, timeout in seconds (0: none; negative: Check's
 * default) and the function that adds its tests. */
typedef struct test_case {
  const char *name;
  double timeout_s;
  void (*add)(TCase *tc);
} test_case;

/* What a program needs before its cases run: 1 when present; 0 absent and
 * -1 failed, with why. GPU programs probe for a device with it (77 when
 * absent). */
typedef int (*test_probe)(char *why, size_t size);

/* A test program: the suite's name, its cases (NULL-terminated by a case
 * without a name), whether Check forks per test (GPU programs do not: a
 * CUDA context does not survive a fork), and an optional probe. */
typedef struct test_suite {
  const char *name;
  const test_case *cases;
  int no_fork;
  test_probe probe;
} test_suite;

/* Make the scratch root, probe, build and run the suite, print the skip
 * count, remove the root; returns main's exit code (see the top). */
int test_main(const test_suite *s);

/* 1 where CT_TEST_QUICK is set (the sanitizer builds, CMake's ct_test): the
 * CPU emulations of kernels then draw fewer configs, since every draw costs
 * several times more there and checks no new kind of access. */
int test_quick(void);

#endif
