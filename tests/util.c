/*
 * util.c: the shared part of the Check test programs (tests/util.h). The
 * skip count lives in an anonymous shared page mapped before the suite
 * runs, so that a test that Check forks still adds to it; the scratch root
 * is named by CT_TEST_DIR in the environment, which forked tests inherit.
 */
#define _GNU_SOURCE
#include "tests/util.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  ck_assert_msg(p != NULL, "out of memory: %zu bytes", bytes);
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  ck_assert_msg(p != NULL, "out of memory: %zu x %zu bytes", n, size);
  return p;
}

char *xstrdup(const char *s) {
  char *p = strdup(s);
  ck_assert_msg(p != NULL, "out of memory: a string of %zu bytes", strlen(s));
  return p;
}

int rng_range(rng *r, int lo, int hi) {
  return lo + (int)rng_below(r, (uint64_t)((long)hi - lo + 1));
}

const char *test_root(void) {
  const char *root = getenv("CT_TEST_DIR");
  return root ? root : "";
}

void scratch(char *dir, size_t size) {
  const char *root = getenv("CT_TEST_DIR");
  ck_assert_msg(root && root[0], "no scratch root: the program's main is not test_main");
  int len = snprintf(dir, size, "%s/t.XXXXXX", root);
  ck_assert_msg(len > 0 && (size_t)len < size, "scratch path too long for %zu bytes", size);
  ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s failed", dir);
}

void remove_tree(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return;
  if (S_ISDIR(sb.st_mode)) {
    DIR *dir = opendir(path);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char child[4096];
      int len = snprintf(child, sizeof child, "%s/%s", path, e->d_name);
      if (len > 0 && (size_t)len < sizeof child) remove_tree(child);
    }
    if (dir) closedir(dir);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* Shared with forked tests; NULL outside test_main: [0] the tests that
 * skipped, [1] whether the running test has (a checked fixture clears it
 * before each test, in the test's own process). */
static int *skips;

static void skip_reset(void) {
  if (skips) skips[1] = 0;
}

void test_skip(const char *what, const char *fmt, ...) {
  /* START_TEST(name) defines name_fn: print the test's own name */
  size_t n = strlen(what);
  if (n > 3 && !strcmp(what + n - 3, "_fn")) n -= 3;
  printf("SKIP %.*s: ", (int)n, what);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  if (skips && !skips[1]) {
    skips[1] = 1;
    __atomic_add_fetch(&skips[0], 1, __ATOMIC_SEQ_CST);
  }
}

int test_main(const test_suite *s) {
  const char *tmp = getenv("TMPDIR");
  char root[512];
  snprintf(root, sizeof root, "%s/%s.XXXXXX", tmp && tmp[0] ? tmp : "/tmp", s->name);
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return EXIT_FAILURE;
  }
  setenv("CT_TEST_DIR", root, 1);
  int rc = EXIT_FAILURE;
  if (s->probe) {
    char why[512] = "";
    int have = s->probe(why, sizeof why);
    if (have <= 0) {
      if (have == 0) {
        fprintf(stderr, "test_%s: skipped: %s\n", s->name, why);
        rc = 77;
      } else {
        fprintf(stderr, "test_%s: %s\n", s->name, why);
      }
      remove_tree(root);
      return rc;
    }
  }
  skips = mmap(NULL, 2 * sizeof *skips, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (skips == MAP_FAILED) {
    perror("mmap");
    skips = NULL;
    remove_tree(root);
    return EXIT_FAILURE;
  }
  skips[0] = skips[1] = 0;
  Suite *suite = suite_create(s->name);
  for (const test_case *c = s->cases; c->name; c++) {
    TCase *tc = tcase_create(c->name);
    /* the case's name is its tag, so that CK_EXCLUDE_TAGS=compile leaves
     * every NVRTC compile case out (the sanitizer builds: NVRTC is not
     * instrumented); a case's add may set its own tags instead */
    tcase_set_tags(tc, c->name);
    if (c->timeout_s >= 0) tcase_set_timeout(tc, c->timeout_s);
    tcase_add_checked_fixture(tc, skip_reset, NULL);
    c->add(tc);
    suite_add_tcase(suite, tc);
  }
  SRunner *sr = srunner_create(suite);
  if (s->no_fork) srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int run = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  int skipped = skips[0];
  munmap(skips, 2 * sizeof *skips);
  skips = NULL;
  /* Check counts a skipped test as passed: say how many of them did not run */
  if (skipped)
    printf("test_%s: %d of %d tests SKIPPED, all or part (see the SKIP lines): Check's count "
           "above includes them\n",
           s->name, skipped, run);
  if (failed)
    rc = EXIT_FAILURE;
  else if (run > 0 && skipped >= run)
    rc = 77;
  else
    rc = EXIT_SUCCESS;
  remove_tree(root);
  return rc;
}

int test_quick(void) {
  const char *v = getenv("CT_TEST_QUICK");
  return v && v[0] && strcmp(v, "0") != 0;
}
