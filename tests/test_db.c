/*
 * test_db.c: the database (db/): insert <-> best, trial <-> JSON,
 * export <-> import, the trial queries used by resume and transfer learning,
 * the kernel cache, summaries, the picks of tune --model, the schema
 * version guard and migrations, bad files, readonly opens, all-or-none
 * batches and two processes writing at once.
 *
 * Trials are compared field by field, doubles by their bits, so "exact"
 * means exact. test_main (tests/util.h) makes one mkdtemp folder for
 * the run; each test makes its own inside it (scratch), and it goes after
 * the run, failures included. Loops call Check only on a mismatch.
 * Everything is freed: the suite also runs under ASan/LSan.
 */
#include <check.h>
#include <signal.h>
#include <dirent.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <sqlite3.h>

#include "db/db.h"
#include "tests/util.h"

#define KEY_A "conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1"
#define KEY_B "conv2d-nchw-i8.i8.i32-n1-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1"
#define KEY_C "conv2d-nchw-i8.i8.i32-n2-c5-k7-10x12-r3x5-s1x2-p0x1.2x3-d1x2"
#define TPL   "conv2d_nchw4c_dp4a"
#define TPL2  "conv2d_nchw4c_mma"
#define VER   "0123456789abcdef"
#define VER2  "fedcba9876543210"

/* 9.0 twice (the CC fallback) and an 8.9 one (never a fallback for 9.0). */
static const db_device H200 = {"NVIDIA H200", 9, 0, 132, 13000, 13000, "13.0"};
static const db_device H100 = {"NVIDIA H100 80GB HBM3", 9, 0, 132, 12080, 12080, "12.8"};
static const db_device L40S = {"NVIDIA L40S", 8, 9, 142, 13000, 13000, "13.0"};

#define N_WRITER_BATCHES 50
#define N_WRITER_TRIALS  20

/* ---- helpers ----------------------------------------------------------------- */

static void path_in(char *out, size_t size, const char *dir, const char *name) {
  snprintf(out, size, "%s/%s", dir, name);
}

/* A trial of key/template/device with every field set: strings with quotes,
 * NULL where NULL is allowed (odd index: no tuner settings; OK: no error). */
static void make_trial(trial *t, const char *uid, const char *key, const char *tpl, const char *ver,
                       const db_device *dev, outcome oc, double median_us, uint64_t index) {
  char buf[128];
  memset(t, 0, sizeof *t);
  snprintf(t->uid, sizeof t->uid, "%s", uid);
  snprintf(t->workload_key, sizeof t->workload_key, "%s", key);
  snprintf(t->template_name, sizeof t->template_name, "%s", tpl);
  snprintf(t->template_version, sizeof t->template_version, "%s", ver);
  t->config_index = index;
  snprintf(buf, sizeof buf, "{\"tile_f\":[1,2,4,8],\"unroll\":%d}", (int)(index % 4));
  t->config_json = xstrdup(buf);
  t->outcome = oc;
  t->error = oc == OUT_OK ? NULL : xstrdup("ptxas: \"too many\" registers\n\tline 2 \\ end");
  t->median_us = median_us;
  t->n_samples = oc == OUT_OK ? 3 : 0;
  if (t->n_samples) {
    t->samples_us = malloc(3 * sizeof *t->samples_us);
    ck_assert_ptr_nonnull(t->samples_us);
    t->samples_us[0] = median_us * 0.99;
    t->samples_us[1] = median_us;
    t->samples_us[2] = median_us * 1.01 + 1e-9;
  }
  t->compile_ms = 31.25 + (double)(index % 100) / 3.0;
  t->options = xstrdup("-DTILE_F_T=8 -DUNROLL=1");
  snprintf(t->arch, sizeof t->arch, "sm_%d%d", dev->cc_major, dev->cc_minor);
  snprintf(t->tuner, sizeof t->tuner, "xgb");
  t->tuner_settings = index % 2 ? NULL : xstrdup("{\"batch\":64,\"seed\":7}");
  snprintf(t->session, sizeof t->session, "session-1");
  t->timestamp = 1700000000.123456 + (double)index / 7.0;
  t->device = *dev;
}

static int same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_double(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

/* The first field where a and b differ, or NULL when they are identical. */
static const char *trial_diff(const trial *a, const trial *b) {
  if (strcmp(a->uid, b->uid)) return "uid";
  if (strcmp(a->workload_key, b->workload_key)) return "workload_key";
  if (strcmp(a->template_name, b->template_name)) return "template_name";
  if (strcmp(a->template_version, b->template_version)) return "template_version";
  if (a->config_index != b->config_index) return "config_index";
  if (!same_str(a->config_json, b->config_json)) return "config_json";
  if (a->outcome != b->outcome) return "outcome";
  if (!same_str(a->error, b->error)) return "error";
  if (!same_double(a->median_us, b->median_us)) return "median_us";
  if (a->n_samples != b->n_samples) return "n_samples";
  for (int i = 0; i < a->n_samples; i++)
    if (!same_double(a->samples_us[i], b->samples_us[i])) return "samples_us";
  if (!same_double(a->compile_ms, b->compile_ms)) return "compile_ms";
  if (!same_str(a->options, b->options)) return "options";
  if (strcmp(a->arch, b->arch)) return "arch";
  if (strcmp(a->tuner, b->tuner)) return "tuner";
  if (!same_str(a->tuner_settings, b->tuner_settings)) return "tuner_settings";
  if (strcmp(a->session, b->session)) return "session";
  if (!same_double(a->timestamp, b->timestamp)) return "timestamp";
  if (strcmp(a->device.name, b->device.name)) return "device.name";
  if (a->device.cc_major != b->device.cc_major || a->device.cc_minor != b->device.cc_minor)
    return "device.cc";
  if (a->device.sm_count != b->device.sm_count) return "device.sm_count";
  if (a->device.driver_version != b->device.driver_version) return "device.driver_version";
  if (a->device.runtime_version != b->device.runtime_version) return "device.runtime_version";
  if (strcmp(a->device.nvrtc_version, b->device.nvrtc_version)) return "device.nvrtc_version";
  return NULL;
}

static void assert_same_trial(const trial *want, const trial *got) {
  const char *diff = trial_diff(want, got);
  ck_assert_msg(diff == NULL, "trial %s: %s differs", want->uid, diff ? diff : "");
}

static db *open_db(const char *path) {
  db *d = NULL;
  ct_err err = {0};
  ct_status st = db_open(path, 0, &d, &err);
  ck_assert_msg(st == CT_OK, "db_open %s: %s", path, err.msg);
  return d;
}

static void insert(db *d, trial *t, int n, int want_skipped) {
  ct_err err = {0};
  int skipped = -1;
  ct_status st = db_insert_trials(d, t, n, &skipped, &err);
  ck_assert_msg(st == CT_OK, "insert: %s", err.msg);
  ck_assert_int_eq(skipped, want_skipped);
}

static int count_trials(db *d, const char *key) {
  trial *t = NULL;
  int n = -1;
  ct_err err = {0};
  ct_status st = db_trials(d, key, NULL, NULL, NULL, &t, &n, &err);
  ck_assert_msg(st == CT_OK, "db_trials: %s", err.msg);
  trials_free(t, n);
  return n;
}

static void free_all(trial *t, int n) {
  for (int i = 0; i < n; i++) trial_free(&t[i]);
}

/* The whole file into an owned buffer (NULL when it is missing). */
static char *slurp(const char *path, long *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)*size + 1);
  ck_assert_ptr_nonnull(buf);
  ck_assert_int_eq((long)fread(buf, 1, (size_t)*size, f), *size);
  buf[*size] = '\0';
  fclose(f);
  return buf;
}

static void spit(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq((long)fwrite(text, 1, strlen(text), f), (long)strlen(text));
  fclose(f);
}

static void sql(const char *path, const char *statements) {
  sqlite3 *h = NULL;
  ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
  char *msg = NULL;
  int rc = sqlite3_exec(h, statements, NULL, NULL, &msg);
  ck_assert_msg(rc == SQLITE_OK, "%s: %s", statements, msg ? msg : "");
  sqlite3_free(msg);
  sqlite3_close(h);
}

static int file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* db_export's trials written, db_import's trials imported and skipped
 * (the picks' counts are checked where a test has picks). */
static ct_status export_n(db *d, const char *key, FILE *f, int *written, ct_err *err) {
  db_io_counts c = {0};
  ct_status st = db_export(d, key, f, &c, err);
  if (written) *written = c.trials;
  return st;
}

static ct_status import_n(db *d, FILE *f, int *imported, int *skipped, ct_err *err) {
  db_io_counts c = {0};
  ct_status st = db_import(d, f, &c, err);
  if (imported) *imported = c.trials;
  if (skipped) *skipped = c.trials_present;
  return st;
}

/* ---- outcomes ------------------------------------------------------------------- */

START_TEST(outcome_names_round_trip) {
  for (int o = 0; o < OUT_COUNT; o++) {
    if (outcome_from_name(outcome_name((outcome)o)) != o)
      ck_abort_msg("outcome %d (%s) does not round-trip", o, outcome_name((outcome)o));
  }
  ck_assert_str_eq(outcome_name(OUT_OK), "OK");
  ck_assert_str_eq(outcome_name(OUT_WRONG_ANSWER), "WRONG_ANSWER");
  ck_assert_str_eq(outcome_name(OUT_COUNT), "UNKNOWN");
  ck_assert_int_eq(outcome_from_name("ok"), -1);
  ck_assert_int_eq(outcome_from_name(""), -1);
  ck_assert_int_eq(outcome_from_name(NULL), -1);
}
END_TEST

/* ---- insert and best ---------------------------------------------------------------- */

START_TEST(insert_best_round_trip) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t;
  make_trial(&t, "u-1", KEY_A, TPL, VER, &H200, OUT_OK, 12.375, UINT64_MAX - 5);
  insert(d, &t, 1, 0);

  trial got;
  db_match m = DB_MATCH_NONE;
  ct_err err = {0};
  ck_assert_msg(db_best(d, KEY_A, &H200, NULL, NULL, &got, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m, DB_MATCH_DEVICE);
  assert_same_trial(&t, &got);
  ck_assert(got.config_index == UINT64_MAX - 5);
  trial_free(&got);
  trial_free(&got); /* twice: the pointers were zeroed */
  trial_free(NULL);
  trial_free(&t);
  db_close(d);
  db_close(NULL);
}
END_TEST

START_TEST(best_lowest_ok_ignores_failures) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t[7];
  make_trial(&t[0], "u0", KEY_A, TPL, VER, &H200, OUT_OK, 5.0, 0);
  make_trial(&t[1], "u1", KEY_A, TPL, VER, &H200, OUT_OK, 3.0, 1);
  make_trial(&t[2], "u2", KEY_A, TPL, VER, &H200, OUT_OK, 4.0, 2);
  /* Failures carrying a lower time than any OK trial: never the best. */
  make_trial(&t[3], "u3", KEY_A, TPL, VER, &H200, OUT_WRONG_ANSWER, 1.0, 3);
  make_trial(&t[4], "u4", KEY_A, TPL, VER, &H200, OUT_TIMEOUT, 0.5, 4);
  make_trial(&t[5], "u5", KEY_A, TPL, VER, &H200, OUT_COMPILE_ERROR, 0, 5);
  /* Faster on another 9.0 device: the device's own trials come first. */
  make_trial(&t[6], "u6", KEY_A, TPL, VER, &H100, OUT_OK, 2.0, 6);
  insert(d, t, 7, 0);

  trial got;
  db_match m;
  ct_err err = {0};
  ck_assert_msg(db_best(d, KEY_A, &H200, NULL, NULL, &got, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m, DB_MATCH_DEVICE);
  assert_same_trial(&t[1], &got);
  trial_free(&got);
  ck_assert_msg(db_best(d, KEY_A, &H100, NULL, NULL, &got, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m, DB_MATCH_DEVICE);
  assert_same_trial(&t[6], &got);
  trial_free(&got);
  free_all(t, 7);
  db_close(d);
}
END_TEST

START_TEST(best_falls_back_to_same_cc) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t[3];
  make_trial(&t[0], "u0", KEY_A, TPL, VER, &H100, OUT_OK, 7.5, 0);
  make_trial(&t[1], "u1", KEY_A, TPL, VER, &H100, OUT_OK, 6.5, 1);
  make_trial(&t[2], "u2", KEY_A, TPL, VER, &H200, OUT_RUNTIME_ERROR, 0, 2);
  insert(d, t, 3, 0);

  trial got;
  db_match m;
  ct_err err = {0};
  ck_assert_msg(db_best(d, KEY_A, &H200, NULL, NULL, &got, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m, DB_MATCH_CC);
  assert_same_trial(&t[1], &got);
  ck_assert_str_eq(got.device.name, H100.name);
  trial_free(&got);

  /* 8.9 is not 9.0: nothing, even though 9.0 trials exist. */
  m = DB_MATCH_DEVICE;
  ck_assert_int_eq(db_best(d, KEY_A, &L40S, NULL, NULL, &got, &m, &err), CT_ERR_NOT_FOUND);
  ck_assert_int_eq(m, DB_MATCH_NONE);
  ck_assert_ptr_null(got.config_json);
  ck_assert_ptr_nonnull(strstr(err.msg, KEY_A));
  /* A workload never tuned. */
  ck_assert_int_eq(db_best(d, KEY_B, &H200, NULL, NULL, &got, &m, &err), CT_ERR_NOT_FOUND);
  ck_assert_int_eq(db_best(d, NULL, &H200, NULL, NULL, &got, &m, &err), CT_ERR_INVALID_ARG);
  free_all(t, 3);
  db_close(d);
}
END_TEST

START_TEST(best_template_filter) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t[4];
  make_trial(&t[0], "u0", KEY_A, TPL, VER, &H200, OUT_OK, 9.0, 0);
  make_trial(&t[1], "u1", KEY_A, TPL, VER, &H200, OUT_OK, 8.0, 1);
  make_trial(&t[2], "u2", KEY_A, TPL2, VER2, &H200, OUT_OK, 4.0, 2);
  make_trial(&t[3], "u3", KEY_A, TPL2, VER2, &H200, OUT_OK, 4.5, 3);
  insert(d, t, 4, 0);

  trial got;
  db_match m;
  ct_err err = {0};
  ck_assert_int_eq(db_best(d, KEY_A, &H200, NULL, NULL, &got, &m, &err), CT_OK);
  assert_same_trial(&t[2], &got);
  trial_free(&got);
  ck_assert_int_eq(db_best(d, KEY_A, &H200, TPL, NULL, &got, &m, &err), CT_OK);
  assert_same_trial(&t[1], &got);
  trial_free(&got);
  ck_assert_int_eq(db_best(d, KEY_A, &H200, TPL2, NULL, &got, &m, &err), CT_OK);
  assert_same_trial(&t[2], &got);
  trial_free(&got);
  ck_assert_int_eq(db_best(d, KEY_A, &H200, "conv2d_nope", NULL, &got, &m, &err), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(err.msg, "conv2d_nope"));
  /* a version filter that no trial matches */
  ck_assert_int_eq(db_best(d, KEY_A, &H200, TPL, "ffffffffffffffff", &got, &m, &err),
                   CT_ERR_NOT_FOUND);
  free_all(t, 4);
  db_close(d);
}
END_TEST

/* db_best_retired: the best OK trial of one template under any version but
 * the current one, this device's before its compute capability's; the
 * current version, other templates, failures and other keys never count. */
START_TEST(best_retired_skips_the_current_version) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t[7];
  make_trial(&t[0], "u0", KEY_A, TPL, VER, &H200, OUT_OK, 1.0, 0);  /* current: never */
  make_trial(&t[1], "u1", KEY_A, TPL, VER2, &H200, OUT_OK, 6.0, 1);
  make_trial(&t[2], "u2", KEY_A, TPL, "1111111111111111", &H200, OUT_OK, 5.0, 2);
  make_trial(&t[3], "u3", KEY_A, TPL, VER2, &H200, OUT_WRONG_ANSWER, 0.5, 3);
  make_trial(&t[4], "u4", KEY_A, TPL2, VER2, &H200, OUT_OK, 0.25, 4); /* another template */
  make_trial(&t[5], "u5", KEY_B, TPL, VER2, &H200, OUT_OK, 0.125, 5); /* another key */
  make_trial(&t[6], "u6", KEY_A, TPL, VER2, &H100, OUT_OK, 2.0, 6);  /* the same cc */
  insert(d, t, 7, 0);
  trial got;
  db_match m;
  ct_err err = {0};
  /* of both retired versions, the faster; this device first */
  ck_assert_msg(db_best_retired(d, KEY_A, &H200, TPL, VER, &got, &m, &err) == CT_OK, "%s", err.msg);
  assert_same_trial(&t[2], &got);
  ck_assert_int_eq(m, DB_MATCH_DEVICE);
  trial_free(&got);
  /* an H100 has its own */
  ck_assert_int_eq(db_best_retired(d, KEY_A, &H100, TPL, VER, &got, &m, &err), CT_OK);
  assert_same_trial(&t[6], &got);
  trial_free(&got);
  /* with VER2 current, VER's and 1111...'s are the retired ones */
  ck_assert_int_eq(db_best_retired(d, KEY_A, &H200, TPL, VER2, &got, &m, &err), CT_OK);
  assert_same_trial(&t[0], &got);
  trial_free(&got);
  /* another device of the compute capability */
  const db_device other = {"NVIDIA H800", 9, 0, 132, 13000, 13000, "13.0"};
  ck_assert_int_eq(db_best_retired(d, KEY_A, &other, TPL, VER, &got, &m, &err), CT_OK);
  assert_same_trial(&t[6], &got);
  ck_assert_int_eq(m, DB_MATCH_CC);
  trial_free(&got);
  /* none: another compute capability, or a template with no retired record */
  ck_assert_int_eq(db_best_retired(d, KEY_A, &L40S, TPL, VER, &got, &m, &err), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(err.msg, "no OK retired trial"));
  ck_assert_int_eq(m, DB_MATCH_NONE);
  ck_assert_int_eq(db_best_retired(d, KEY_A, &H200, TPL2, VER2, &got, &m, &err),
                   CT_ERR_NOT_FOUND);
  ck_assert_int_eq(db_best_retired(d, KEY_A, &H200, TPL, NULL, &got, &m, &err),
                   CT_ERR_INVALID_ARG);
  ck_assert_int_eq(db_best_retired(d, KEY_A, &H200, NULL, VER, &got, &m, &err),
                   CT_ERR_INVALID_ARG);
  free_all(t, 7);
  db_close(d);
}
END_TEST

/* ---- trial <-> JSON ------------------------------------------------------------------ */

/* A finite double >= 0 from random bits: every exponent, subnormals included. */
static double random_double(rng *s) {
  for (;;) {
    uint64_t bits = rng_next(s) & ~(1ull << 63);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (isfinite(v)) return v;
  }
}

/* t -> JSON tree -> trial, and t -> JSON text -> tree -> trial: both exact. */
static void assert_json_round_trip(const trial *t) {
  ct_err err = {0};
  cJSON *j = trial_to_json(t);
  ck_assert_ptr_nonnull(j);
  trial back;
  ck_assert_msg(trial_from_json(j, &back, &err) == CT_OK, "from tree: %s", err.msg);
  assert_same_trial(t, &back);
  trial_free(&back);

  char *text = cJSON_PrintUnformatted(j);
  ck_assert_ptr_nonnull(text);
  cJSON *parsed = cJSON_Parse(text);
  ck_assert_ptr_nonnull(parsed);
  ck_assert_msg(trial_from_json(parsed, &back, &err) == CT_OK, "from text: %s", err.msg);
  assert_same_trial(t, &back);
  /* And printing it again gives the same line. */
  cJSON *again = trial_to_json(&back);
  char *text2 = cJSON_PrintUnformatted(again);
  ck_assert_str_eq(text, text2);
  trial_free(&back);
  free(text);
  free(text2);
  cJSON_Delete(j);
  cJSON_Delete(parsed);
  cJSON_Delete(again);
}

START_TEST(json_round_trip_exact) {
  trial t;
  make_trial(&t, "sess-0001-9f", KEY_C, TPL, VER, &H200, OUT_OK, 0.1, UINT64_MAX);
  assert_json_round_trip(&t);

  /* Index bits cJSON's doubles cannot hold. */
  const uint64_t indexes[] = {UINT64_MAX - 1, 1ull << 63, (1ull << 53) + 1, 0};
  for (size_t i = 0; i < sizeof indexes / sizeof *indexes; i++) {
    t.config_index = indexes[i];
    assert_json_round_trip(&t);
  }

  /* Random doubles in every timed field: cJSON's own printer loses about
   * one in six of these. */
  rng s; /* seeded: the doubles are the same on every run */
  rng_seed(&s, 0x9e3779b97f4a7c15ull);
  free(t.samples_us);
  t.n_samples = 1000;
  t.samples_us = malloc((size_t)t.n_samples * sizeof *t.samples_us);
  ck_assert_ptr_nonnull(t.samples_us);
  for (int i = 0; i < t.n_samples; i++) t.samples_us[i] = random_double(&s);
  t.samples_us[0] = 394.38292681909303; /* cJSON prints 394.382926819093 */
  t.samples_us[1] = 5e-324;
  t.samples_us[2] = 1.7976931348623157e308;
  t.samples_us[3] = 0;
  t.median_us = random_double(&s);
  t.compile_ms = random_double(&s);
  t.timestamp = 1732244400.0 + 1.0 / 3.0;
  assert_json_round_trip(&t);

  /* Strings that need escaping; a config not in cJSON's compact form (kept
   * as a string, exactly); a failure with no samples; NULL fields. */
  free(t.config_json);
  t.config_json = xstrdup("{ \"tile_f\": [1, 2],  \"unroll\": 1 }");
  free(t.error);
  t.error = xstrdup("line 1 \"quoted\"\n\ttab \\ back \xc3\xa9");
  free(t.options);
  t.options = NULL;
  free(t.tuner_settings);
  t.tuner_settings = xstrdup("[1,2,3]");
  t.outcome = OUT_LAUNCH_ERROR;
  assert_json_round_trip(&t);
  free(t.samples_us);
  t.samples_us = NULL;
  t.n_samples = 0;
  free(t.tuner_settings);
  t.tuner_settings = NULL;
  free(t.error);
  t.error = xstrdup("");
  t.median_us = 0;
  assert_json_round_trip(&t);
  trial_free(&t);

  /* The compact config is embedded as an object, with the format and device. */
  make_trial(&t, "u", KEY_A, TPL, VER, &H100, OUT_OK, 1.5, 7);
  cJSON *j = trial_to_json(&t);
  ck_assert(cJSON_IsObject(cJSON_GetObjectItem(j, "config")));
  ck_assert_int_eq(cJSON_GetObjectItem(j, "format")->valueint, DB_TRIAL_FORMAT);
  ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "device"), "name")->valuestring,
                   H100.name);
  ck_assert_str_eq(cJSON_GetObjectItem(j, "config_index")->valuestring, "7");
  cJSON_Delete(j);
  trial_free(&t);
}
END_TEST

/* Parse text (a valid export line edited by the caller) and expect a
 * CT_ERR_PARSE whose message contains want; out must come back empty. */
static void expect_bad_json(const char *text, const char *want) {
  cJSON *j = cJSON_Parse(text);
  ck_assert_msg(j != NULL, "test JSON does not parse: %s", text);
  trial t;
  ct_err err = {0};
  ct_status st = trial_from_json(j, &t, &err);
  ck_assert_msg(st == CT_ERR_PARSE, "%s: status %d (%s)", want, st, err.msg);
  ck_assert_msg(strstr(err.msg, want) != NULL, "message '%s' does not name '%s'", err.msg, want);
  ck_assert_ptr_null(t.config_json);
  ck_assert_ptr_null(t.samples_us);
  cJSON_Delete(j);
}

/* A valid line with field name replaced by value (raw JSON), or removed when value is NULL. */
static char *edited_line(const char *name, const char *value) {
  trial t;
  make_trial(&t, "u", KEY_A, TPL, VER, &H200, OUT_OK, 1.5, 3);
  cJSON *j = trial_to_json(&t);
  trial_free(&t);
  cJSON *target = j;
  const char *leaf = name;
  if (strncmp(name, "device.", 7) == 0) {
    target = cJSON_GetObjectItem(j, "device");
    leaf = name + 7;
  }
  cJSON_DeleteItemFromObjectCaseSensitive(target, leaf);
  if (value) cJSON_AddItemToObject(target, leaf, cJSON_Parse(value));
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return text;
}

static void expect_bad_field(const char *name, const char *value, const char *want) {
  char *text = edited_line(name, value);
  expect_bad_json(text, want);
  free(text);
}

START_TEST(json_rejects_name_the_field) {
  expect_bad_field("uid", NULL, "uid: missing");
  expect_bad_field("uid", "7", "uid");
  expect_bad_field("colour", "\"red\"", "colour: unknown field");
  expect_bad_field("format", "3", "newer");
  expect_bad_field("format", "2", "a pick's");
  expect_bad_field("format", NULL, "format");
  expect_bad_field("outcome", "\"FAST\"", "outcome");
  expect_bad_field("workload_key", "\"conv2d-bogus\"", "workload_key");
  expect_bad_field("template_name", "\"\"", "template_name");
  expect_bad_field("template_name", "\"0123456789012345678901234567890123456789012345678\"",
                   "template_name: 49 characters, at most 47");
  expect_bad_field("samples_us", "[1.5,\"x\"]", "samples_us[1]");
  expect_bad_field("samples_us", "3", "samples_us");
  expect_bad_field("median_us", "\"1.5\"", "median_us");
  expect_bad_field("median_us", "-1", "median_us");
  expect_bad_field("config_index", "\"-1\"", "config_index");
  expect_bad_field("config_index", "\"18446744073709551616\"", "config_index");
  expect_bad_field("config_index", "1.5", "config_index");
  expect_bad_field("config", "7", "config");
  expect_bad_field("config", "\"{not json\"", "config_json");
  expect_bad_field("device", "[]", "device");
  expect_bad_field("device.cc_major", "\"9\"", "device.cc_major");
  expect_bad_field("device.sm", "132", "device.sm: unknown field");
  expect_bad_field("device.name", NULL, "device.name");
  expect_bad_json("[1,2]", "object");

  trial t;
  ct_err err = {0};
  ck_assert_int_eq(trial_from_json(NULL, &t, &err), CT_ERR_PARSE);
  ck_assert_ptr_null(trial_to_json(NULL));
}
END_TEST

/* ---- export and import --------------------------------------------------------------- */

/* n trials over three workloads, two templates and three devices, uids "x-%03d". */
static trial *varied_trials(int n) {
  trial *t = calloc((size_t)n, sizeof *t);
  ck_assert_ptr_nonnull(t);
  const char *keys[] = {KEY_A, KEY_B, KEY_C};
  const db_device *devs[] = {&H200, &H100, &L40S};
  const outcome ocs[] = {OUT_OK, OUT_OK, OUT_INVALID, OUT_OK, OUT_WRONG_ANSWER};
  for (int i = 0; i < n; i++) {
    char uid[40];
    snprintf(uid, sizeof uid, "x-%03d", i);
    outcome oc = ocs[i % 5];
    make_trial(&t[i], uid, keys[i % 3], i % 4 ? TPL : TPL2, i % 4 ? VER : VER2,
               devs[(i % 2 + i / 20) % 3], oc, oc == OUT_OK ? 10.0 + (double)i / 3.0 : 0,
               1000u + (uint64_t)i * 7919u);
  }
  return t;
}

static void assert_same_db(db *a, db *b) {
  const char *keys[] = {KEY_A, KEY_B, KEY_C};
  ct_err err = {0};
  for (int k = 0; k < 3; k++) {
    trial *ta = NULL, *tb = NULL;
    int na = 0, nb = 0;
    ck_assert_int_eq(db_trials(a, keys[k], NULL, NULL, NULL, &ta, &na, &err), CT_OK);
    ck_assert_int_eq(db_trials(b, keys[k], NULL, NULL, NULL, &tb, &nb, &err), CT_OK);
    ck_assert_int_eq(na, nb);
    for (int i = 0; i < na; i++) assert_same_trial(&ta[i], &tb[i]);
    trials_free(ta, na);
    trials_free(tb, nb);
  }
}

/* A -0 read from JSON is 0: SQLite's REAL columns do not keep the sign of
 * a zero, so an import that kept it would export something else (found by
 * tests/fuzz/fuzz_import.c; corpus/fuzz_import/import-negative-zero.jsonl). */
START_TEST(negative_zero_reads_as_zero) {
  char dir[512], path[600], out[700];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "z.db");
  snprintf(out, sizeof out, "%s.jsonl", path);
  trial t, back;
  make_trial(&t, "z-1", KEY_A, TPL, VER, &H200, OUT_LAUNCH_ERROR, 0, 1);
  t.median_us = -0.0;
  t.compile_ms = -0.0;
  t.timestamp = -0.0;
  cJSON *j = trial_to_json(&t);
  char *text = cJSON_PrintUnformatted(j);
  ck_assert_msg(strstr(text, "\"compile_ms\":-0") != NULL, "%s", text);
  cJSON_Delete(j);
  ct_err err = {0};
  j = cJSON_Parse(text);
  ck_assert_msg(trial_from_json(j, &back, &err) == CT_OK, "%s", err.msg);
  cJSON_Delete(j);
  free(text);
  ck_assert(!signbit(back.median_us) && !signbit(back.compile_ms) && !signbit(back.timestamp));
  db *d = open_db(path);
  insert(d, &back, 1, 0);
  FILE *f = fopen(out, "w");
  int written = 0;
  ck_assert_msg(export_n(d, NULL, f, &written, &err) == CT_OK, "%s", err.msg);
  fclose(f);
  j = trial_to_json(&back);
  text = cJSON_PrintUnformatted(j);
  long n = 0;
  char *exported = slurp(out, &n);
  ck_assert_int_eq(written, 1);
  ck_assert_msg(n == (long)strlen(text) + 1 && memcmp(exported, text, strlen(text)) == 0,
                "imported %s, exported %s", text, exported);
  free(exported);
  free(text);
  cJSON_Delete(j);
  db_close(d);
  trial_free(&t);
  trial_free(&back);
}
END_TEST

START_TEST(export_import_identical) {
  char dir[512], pa[600], pb[600], fa[600], fb[600];
  scratch(dir, sizeof dir);
  path_in(pa, sizeof pa, dir, "a.db");
  path_in(pb, sizeof pb, dir, "b.db");
  path_in(fa, sizeof fa, dir, "a.jsonl");
  path_in(fb, sizeof fb, dir, "b.jsonl");
  db *a = open_db(pa), *b = open_db(pb);
  trial *t = varied_trials(45);
  insert(a, t, 45, 0);

  ct_err err = {0};
  int written = 0, imported = -1, skipped = -1;
  FILE *f = fopen(fa, "w");
  ck_assert_msg(export_n(a, NULL, f, &written, &err) == CT_OK, "%s", err.msg);
  fclose(f);
  ck_assert_int_eq(written, 45);
  f = fopen(fa, "r");
  ck_assert_msg(import_n(b, f, &imported, &skipped, &err) == CT_OK, "%s", err.msg);
  fclose(f);
  ck_assert_int_eq(imported, 45);
  ck_assert_int_eq(skipped, 0);
  assert_same_db(a, b);

  /* Exporting the copy gives the same bytes. */
  f = fopen(fb, "w");
  ck_assert_int_eq(export_n(b, NULL, f, &written, &err), CT_OK);
  fclose(f);
  long na = 0, nb = 0;
  char *ta = slurp(fa, &na), *tb = slurp(fb, &nb);
  ck_assert_int_eq(na, nb);
  ck_assert_msg(memcmp(ta, tb, (size_t)na) == 0, "exports differ");
  free(ta);
  free(tb);

  /* One workload only. */
  f = fopen(fb, "w");
  ck_assert_int_eq(export_n(b, KEY_B, f, &written, &err), CT_OK);
  fclose(f);
  ck_assert_int_eq(written, 15);
  f = fopen(fb, "w");
  ck_assert_int_eq(export_n(b, "conv2d-not-there", f, &written, &err), CT_OK);
  fclose(f);
  ck_assert_int_eq(written, 0);

  trials_free(t, 45);
  db_close(a);
  db_close(b);
}
END_TEST

START_TEST(import_twice_is_idempotent) {
  char dir[512], pa[600], pb[600], fa[600];
  scratch(dir, sizeof dir);
  path_in(pa, sizeof pa, dir, "a.db");
  path_in(pb, sizeof pb, dir, "b.db");
  path_in(fa, sizeof fa, dir, "a.jsonl");
  db *a = open_db(pa), *b = open_db(pb);
  trial *t = varied_trials(30);
  insert(a, t, 30, 0);
  ct_err err = {0};
  int written = 0, imported = -1, skipped = -1;
  FILE *f = fopen(fa, "w");
  ck_assert_int_eq(export_n(a, NULL, f, &written, &err), CT_OK);
  fclose(f);
  for (int pass = 0; pass < 2; pass++) {
    f = fopen(fa, "r");
    ck_assert_msg(import_n(b, f, &imported, &skipped, &err) == CT_OK, "%s", err.msg);
    fclose(f);
    ck_assert_int_eq(imported, pass ? 0 : 30);
    ck_assert_int_eq(skipped, pass ? 30 : 0);
  }
  ck_assert_int_eq(count_trials(b, KEY_A) + count_trials(b, KEY_B) + count_trials(b, KEY_C), 30);
  assert_same_db(a, b);
  /* Importing into the source itself: everything is already there. */
  f = fopen(fa, "r");
  ck_assert_int_eq(import_n(a, f, &imported, &skipped, &err), CT_OK);
  fclose(f);
  ck_assert_int_eq(imported, 0);
  ck_assert_int_eq(skipped, 30);
  trials_free(t, 30);
  db_close(a);
  db_close(b);
}
END_TEST

/* Import text into a fresh database: expect CT_ERR_PARSE naming want, and nothing imported. */
static void expect_bad_import(const char *dir, const char *name, const char *text,
                              const char *want) {
  char path[600], file[700];
  path_in(path, sizeof path, dir, name);
  snprintf(file, sizeof file, "%s.jsonl", path);
  spit(file, text);
  db *d = open_db(path);
  FILE *f = fopen(file, "r");
  ct_err err = {0};
  int imported = -1, skipped = -1;
  ct_status st = import_n(d, f, &imported, &skipped, &err);
  fclose(f);
  ck_assert_msg(st == CT_ERR_PARSE, "%s: status %d (%s)", want, st, err.msg);
  ck_assert_msg(strstr(err.msg, want) != NULL, "message '%s' does not name '%s'", err.msg, want);
  ck_assert_int_eq(imported, 0);
  ck_assert_int_eq(count_trials(d, KEY_A), 0);
  int n = -1;
  db_summary *s = NULL;
  ck_assert_int_eq(db_list(d, &s, &n, &err), CT_OK);
  ck_assert_int_eq(n, 0);
  free(s);
  db_close(d);
}

/* Export lines of three good trials of KEY_A into *text (owned). */
static char *good_lines(int n) {
  size_t cap = 1, len = 0;
  char *text = calloc(1, 1);
  for (int i = 0; i < n; i++) {
    char uid[16];
    snprintf(uid, sizeof uid, "g-%d", i);
    trial t;
    make_trial(&t, uid, KEY_A, TPL, VER, &H200, OUT_OK, 2.0 + i, (uint64_t)i);
    cJSON *j = trial_to_json(&t);
    char *line = cJSON_PrintUnformatted(j);
    cap = len + strlen(line) + 2;
    text = realloc(text, cap);
    ck_assert_ptr_nonnull(text);
    len += (size_t)sprintf(text + len, "%s\n", line);
    free(line);
    cJSON_Delete(j);
    trial_free(&t);
  }
  return text;
}

START_TEST(import_bad_line_imports_nothing) {
  char dir[512];
  scratch(dir, sizeof dir);
  char *good = good_lines(2);
  const char *second = strchr(good, '\n') + 1;
  char text[8192];

  /* Bad JSON on line 3, after a blank line 2 (skipped, but counted). */
  snprintf(text, sizeof text, "%.*s\n{\"format\":1,\"uid\":\n%s", (int)(second - good), good,
           second);
  expect_bad_import(dir, "a.db", text, "line 3: bad JSON");
  /* A field problem on line 2. */
  char *bad = edited_line("outcome", "\"FAST\"");
  snprintf(text, sizeof text, "%.*s%s\n%s", (int)(second - good), good, bad, second);
  expect_bad_import(dir, "b.db", text, "line 2: outcome");
  free(bad);
  /* A line of a newer format. */
  bad = edited_line("format", "3");
  snprintf(text, sizeof text, "%s%s\n", good, bad);
  expect_bad_import(dir, "c.db", text, "line 3: format: 3 is newer");
  free(bad);
  /* An empty uid: a second import would duplicate it. */
  bad = edited_line("uid", "\"\"");
  snprintf(text, sizeof text, "%s\n", bad);
  expect_bad_import(dir, "d.db", text, "line 1: uid");
  free(bad);
  /* A template convtune does not know, and one of another op. */
  bad = edited_line("template_name", "\"conv2d_nchw4c_fast\"");
  snprintf(text, sizeof text, "%s%s\n", good, bad);
  expect_bad_import(dir, "e.db", text,
                    "line 3: template_name: 'conv2d_nchw4c_fast' is no template");
  free(bad);
  bad = edited_line("template_name", "\"conv3d_ncdhw4c_dp4a\"");
  snprintf(text, sizeof text, "%s%s\n", good, bad);
  expect_bad_import(dir, "f.db", text,
                    "line 3: template_name: 'conv3d_ncdhw4c_dp4a' is a conv3d template, the "
                    "workload a conv2d");
  free(bad);
  free(good);
}
END_TEST

/* Two different records of one uid in a file are a conflict, naming both
 * lines, and nothing is imported; the same record twice is no conflict. */
START_TEST(import_uid_conflict_refused) {
  char dir[512], path[600], file[700];
  scratch(dir, sizeof dir);
  char *good = good_lines(1);
  char *one = edited_line("median_us", "1.5"), *other = edited_line("median_us", "2.5");
  char text[8192];
  snprintf(text, sizeof text, "%s%s\n%s\n", good, one, other);
  expect_bad_import(dir, "a.db", text, "line 3: uid 'u' conflicts with line 2");
  snprintf(text, sizeof text, "%s\n%s%s\n", other, good, one);
  expect_bad_import(dir, "b.db", text, "line 3: uid 'u' conflicts with line 1");

  snprintf(text, sizeof text, "%s%s\n%s\n", good, one, one);
  path_in(path, sizeof path, dir, "c.db");
  snprintf(file, sizeof file, "%s.jsonl", path);
  spit(file, text);
  db *d = open_db(path);
  FILE *f = fopen(file, "r");
  ct_err err = {0};
  int imported = -1, skipped = -1;
  ck_assert_msg(import_n(d, f, &imported, &skipped, &err) == CT_OK, "%s", err.msg);
  fclose(f);
  ck_assert_int_eq(imported, 2);
  ck_assert_int_eq(skipped, 1);
  /* the database now holds uid 'u' as `one`: `other` conflicts with it,
   * naming the field, and the good line beside it is not imported either */
  char *fresh = good_lines(3);
  snprintf(text, sizeof text, "%s%s\n", fresh, other);
  snprintf(file, sizeof file, "%s.2.jsonl", path);
  spit(file, text);
  f = fopen(file, "r");
  ck_assert_int_eq(import_n(d, f, &imported, &skipped, &err), CT_ERR_PARSE);
  fclose(f);
  ck_assert_msg(strstr(err.msg, "line 4: uid 'u' is in the database with another median_us"), "%s",
                err.msg);
  trial *tr = NULL;
  int n = 0;
  ck_assert_int_eq(db_trials(d, KEY_A, NULL, NULL, NULL, &tr, &n, &err), CT_OK);
  ck_assert_int_eq(n, 2);
  trials_free(tr, n);
  /* the same record again is no conflict */
  snprintf(text, sizeof text, "%s\n", one);
  spit(file, text);
  f = fopen(file, "r");
  ck_assert_msg(import_n(d, f, &imported, &skipped, &err) == CT_OK, "%s", err.msg);
  fclose(f);
  ck_assert_int_eq(skipped, 1);
  db_close(d);
  free(fresh);
  free(good);
  free(one);
  free(other);
}
END_TEST

/* A malformed row (written by something else) costs that row, counted with
 * its message by db_bad_rows, not the read: db_trials and db_export. */
START_TEST(malformed_row_costs_the_row) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "m.db");
  trial t[5];
  for (int i = 0; i < 5; i++) {
    char uid[16];
    snprintf(uid, sizeof uid, "m-%d", i);
    make_trial(&t[i], uid, KEY_A, TPL, VER, &H200, OUT_OK, 2.0 + i, (uint64_t)i);
  }
  db *d = open_db(path);
  ct_err err = {0};
  ck_assert_msg(db_insert_trials(d, t, 5, NULL, &err) == CT_OK, "%s", err.msg);
  db_close(d);
  sql(path, "UPDATE trials SET outcome = 'FAST' WHERE uid = 'm-1';"
            "UPDATE trials SET n_samples = n_samples + 1 WHERE uid = 'm-2';"
            "UPDATE trials SET uid = replace(hex(zeroblob(150)), '0', 'u') WHERE uid = 'm-3';");
  d = open_db(path);
  char msg[CT_ERRMSG_MAX];
  ck_assert_int_eq(db_bad_rows(d, msg, sizeof msg), 0);
  trial *got = NULL;
  int n = -1;
  ck_assert_msg(db_trials(d, KEY_A, NULL, NULL, NULL, &got, &n, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(n, 2);
  assert_same_trial(&t[0], &got[0]);
  assert_same_trial(&t[4], &got[1]);
  trials_free(got, n);
  ck_assert_int_eq(db_bad_rows(d, msg, sizeof msg), 3);
  ck_assert_msg(strstr(msg, "trial m-1: unknown outcome 'FAST'") != NULL, "%s", msg);
  ck_assert_int_eq(db_bad_rows(d, msg, sizeof msg), 0);
  ck_assert_str_eq(msg, "");

  char out[700];
  snprintf(out, sizeof out, "%s.jsonl", path);
  FILE *f = fopen(out, "w");
  int written = -1;
  ck_assert_msg(export_n(d, NULL, f, &written, &err) == CT_OK, "%s", err.msg);
  fclose(f);
  ck_assert_int_eq(written, 2);
  ck_assert_int_eq(db_bad_rows(d, NULL, 0), 3);
  db_close(d);
  for (int i = 0; i < 5; i++) trial_free(&t[i]);
}
END_TEST

/* db_best and db_list skip a malformed row too: a best trial that cannot be
 * read gives way to the next best, and a workload whose key does not fit
 * costs its own summary, not the list. */
START_TEST(malformed_row_costs_best_and_list_that_row) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "mb.db");
  trial t[3];
  make_trial(&t[0], "b-0", KEY_A, TPL, VER, &H200, OUT_OK, 1.0, 0);
  make_trial(&t[1], "b-1", KEY_A, TPL, VER, &H200, OUT_OK, 3.0, 1);
  make_trial(&t[2], "b-2", KEY_B, TPL, VER, &H200, OUT_OK, 5.0, 2);
  db *d = open_db(path);
  ct_err err = {0};
  ck_assert_msg(db_insert_trials(d, t, 3, NULL, &err) == CT_OK, "%s", err.msg);
  db_close(d);
  sql(path, "UPDATE trials SET n_samples = n_samples + 1 WHERE uid = 'b-0';"
            "UPDATE workloads SET key = key || replace(hex(zeroblob(150)), '0', 'k')"
            " WHERE key = '" KEY_B "';");
  d = open_db(path);
  trial best = {0};
  db_match match = DB_MATCH_NONE;
  ck_assert_msg(db_best(d, KEY_A, &H200, NULL, NULL, &best, &match, &err) == CT_OK, "%s", err.msg);
  ck_assert_str_eq(best.uid, "b-1");
  ck_assert_int_eq(match, DB_MATCH_DEVICE);
  trial_free(&best);
  char msg[CT_ERRMSG_MAX];
  ck_assert_int_eq(db_bad_rows(d, msg, sizeof msg), 1);
  ck_assert_msg(strstr(msg, "trial b-0") != NULL, "%s", msg);

  db_summary *rows = NULL;
  int n = -1;
  ck_assert_msg(db_list(d, &rows, &n, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(rows[0].workload_key, KEY_A);
  free(rows);
  ck_assert_int_eq(db_bad_rows(d, msg, sizeof msg), 1);
  ck_assert_msg(strstr(msg, "workload") != NULL, "%s", msg);
  db_close(d);
  for (int i = 0; i < 3; i++) trial_free(&t[i]);
}
END_TEST

/* A failed write names the database, so that a caller's file or workload
 * is not taken for the culprit. */
START_TEST(failed_write_names_the_database) {
  char dir[512], path[600], want[700];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "w.db");
  trial t;
  make_trial(&t, "w-1", KEY_A, TPL, VER, &H200, OUT_OK, 2.0, 1);
  db *d = open_db(path);
  db_close(d);
  sql(path,
      "CREATE TRIGGER no_more BEFORE INSERT ON trials BEGIN SELECT RAISE(ABORT, 'no more'); END");
  d = open_db(path);
  ct_err err = {0};
  ck_assert_int_eq(db_insert_trials(d, &t, 1, NULL, &err), CT_ERR_DB);
  snprintf(want, sizeof want, "database %s: ", path);
  ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "'%s' does not start '%s'", err.msg,
                want);
  ck_assert_msg(strstr(err.msg, "no more") != NULL, "%s", err.msg);
  db_close(d);
  trial_free(&t);
}
END_TEST

/* ---- trials for resume and transfer learning ------------------------------------------ */

START_TEST(trials_order_and_filters) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  /* Three batches, interleaving devices and templates, uids in insertion order. */
  trial t[12];
  for (int i = 0; i < 12; i++) {
    char uid[16];
    snprintf(uid, sizeof uid, "o-%02d", i);
    make_trial(&t[i], uid, i == 11 ? KEY_B : KEY_A, i % 3 == 2 ? TPL2 : TPL,
               i % 3 == 2 ? VER2 : VER, i % 2 ? &H100 : &H200, OUT_OK, 20.0 - i, (uint64_t)i);
  }
  /* A different template version of TPL: the resume of a changed template must not see it. */
  snprintf(t[4].template_version, sizeof t[4].template_version, "%s", VER2);
  insert(d, t, 4, 0);
  insert(d, t + 4, 4, 0);
  insert(d, t + 8, 4, 0);

  struct {
    const db_device *dev;
    const char *tpl, *ver;
  } cases[] = {{NULL, NULL, NULL}, {&H200, NULL, NULL}, {&H100, TPL, NULL},
               {NULL, TPL, VER},   {&H200, TPL, VER},   {NULL, NULL, VER2}};
  ct_err err = {0};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    trial *got = NULL;
    int n = -1, want_n = 0;
    ck_assert_int_eq(db_trials(d, KEY_A, cases[c].dev, cases[c].tpl, cases[c].ver, &got, &n, &err),
                     CT_OK);
    for (int i = 0; i < 12; i++) {
      const trial *w = &t[i];
      if (strcmp(w->workload_key, KEY_A) != 0) continue;
      if (cases[c].dev && strcmp(w->device.name, cases[c].dev->name) != 0) continue;
      if (cases[c].tpl && strcmp(w->template_name, cases[c].tpl) != 0) continue;
      if (cases[c].ver && strcmp(w->template_version, cases[c].ver) != 0) continue;
      ck_assert_msg(want_n < n, "case %zu: too few trials (%d)", c, n);
      assert_same_trial(w, &got[want_n]);
      want_n++;
    }
    ck_assert_msg(n == want_n, "case %zu: %d trials, want %d", c, n, want_n);
    trials_free(got, n);
  }
  /* A device of the same name but another cc is another device. */
  db_device other = H200;
  other.cc_minor = 1;
  trial *got = NULL;
  int n = -1;
  ck_assert_int_eq(db_trials(d, KEY_A, &other, NULL, NULL, &got, &n, &err), CT_OK);
  ck_assert_int_eq(n, 0);
  ck_assert_ptr_null(got);
  ck_assert_int_eq(db_trials(d, KEY_C, NULL, NULL, NULL, &got, &n, &err), CT_OK);
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(db_trials(d, NULL, NULL, NULL, NULL, &got, &n, &err), CT_ERR_INVALID_ARG);
  trials_free(NULL, 0);
  free_all(t, 12);
  db_close(d);
}
END_TEST

START_TEST(trials_other_excludes_the_workload) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t[9];
  const char *keys[] = {KEY_A, KEY_B, KEY_C};
  for (int i = 0; i < 9; i++) {
    char uid[16];
    snprintf(uid, sizeof uid, "o-%d", i);
    make_trial(&t[i], uid, keys[i % 3], TPL, i == 7 ? VER2 : VER, i == 8 ? &H100 : &H200, OUT_OK,
               5.0 + i, (uint64_t)i);
  }
  insert(d, t, 9, 0);
  ct_err err = {0};
  trial *got = NULL;
  int n = -1;
  /* Newest first; KEY_A's own (0, 3, 6), the other version (7) and device (8) excluded. */
  ck_assert_int_eq(db_trials_other(d, KEY_A, &H200, TPL, VER, 100, &got, &n, &err), CT_OK);
  const int want[] = {5, 4, 2, 1};
  ck_assert_int_eq(n, 4);
  for (int i = 0; i < n; i++) assert_same_trial(&t[want[i]], &got[i]);
  trials_free(got, n);
  ck_assert_int_eq(db_trials_other(d, KEY_A, &H200, TPL, VER, 2, &got, &n, &err), CT_OK);
  ck_assert_int_eq(n, 2);
  assert_same_trial(&t[5], &got[0]);
  assert_same_trial(&t[4], &got[1]);
  trials_free(got, n);
  /* Any device, any version. */
  ck_assert_int_eq(db_trials_other(d, KEY_A, NULL, TPL, NULL, 100, &got, &n, &err), CT_OK);
  ck_assert_int_eq(n, 6);
  trials_free(got, n);
  ck_assert_int_eq(db_trials_other(d, KEY_A, &H200, TPL, VER, 0, &got, &n, &err), CT_OK);
  ck_assert_int_eq(n, 0);
  trials_free(got, n);
  ck_assert_int_eq(db_trials_other(d, KEY_A, &H200, TPL, VER, -1, &got, &n, &err),
                   CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "limit"));
  free_all(t, 9);
  db_close(d);
}
END_TEST

/* ---- kernel cache ----------------------------------------------------------------------- */

START_TEST(kernel_cache_store_load_replace) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  ct_err err = {0};
  void *data = (void *)1;
  size_t size = 1;
  ck_assert_int_eq(db_load_kernel(d, VER, "-DA=1", "sm_90", &data, &size, &err), CT_ERR_NOT_FOUND);
  ck_assert_ptr_null(data);
  ck_assert_int_eq(size, 0);

  unsigned char cubin[3000];
  for (size_t i = 0; i < sizeof cubin; i++)
    cubin[i] = (unsigned char)(i * 131 % 256); /* zeros too */
  ck_assert_int_eq(db_store_kernel(d, VER, "-DA=1", "sm_90", cubin, sizeof cubin, &err), CT_OK);
  ck_assert_int_eq(db_load_kernel(d, VER, "-DA=1", "sm_90", &data, &size, &err), CT_OK);
  ck_assert_int_eq(size, sizeof cubin);
  ck_assert(memcmp(data, cubin, size) == 0);
  free(data);

  /* Replace with a shorter one. */
  ck_assert_int_eq(db_store_kernel(d, VER, "-DA=1", "sm_90", cubin + 7, 100, &err), CT_OK);
  ck_assert_int_eq(db_load_kernel(d, VER, "-DA=1", "sm_90", &data, &size, &err), CT_OK);
  ck_assert_int_eq(size, 100);
  ck_assert(memcmp(data, cubin + 7, size) == 0);
  free(data);

  /* Every part of the key matters. */
  ck_assert_int_eq(db_load_kernel(d, VER, "-DA=1", "sm_89", &data, &size, &err), CT_ERR_NOT_FOUND);
  ck_assert_int_eq(db_load_kernel(d, VER, "-DA=2", "sm_90", &data, &size, &err), CT_ERR_NOT_FOUND);
  ck_assert_int_eq(db_load_kernel(d, VER2, "-DA=1", "sm_90", &data, &size, &err), CT_ERR_NOT_FOUND);
  ck_assert_int_eq(db_store_kernel(d, VER, "-DA=1", "sm_90", NULL, 10, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(db_store_kernel(d, VER, "-DA=1", "sm_90", cubin, 0, &err), CT_ERR_INVALID_ARG);
  db_close(d);
}
END_TEST

/* ---- summaries --------------------------------------------------------------------------- */

START_TEST(list_summaries) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t[7];
  make_trial(&t[0], "l0", KEY_A, TPL, VER, &H200, OUT_OK, 9.0, 0);
  make_trial(&t[1], "l1", KEY_A, TPL2, VER2, &H200, OUT_OK, 7.0, 1);
  make_trial(&t[2], "l2", KEY_A, TPL, VER, &H200, OUT_TIMEOUT, 0, 2);
  make_trial(&t[3], "l3", KEY_A, TPL, VER, &H100, OUT_OK, 8.0, 3);
  make_trial(&t[4], "l4", KEY_B, TPL, VER, &H200, OUT_COMPILE_ERROR, 0, 4);
  make_trial(&t[5], "l5", KEY_B, TPL, VER, &H200, OUT_INVALID, 0, 5);
  /* The same name with another driver is the same device for the summary. */
  db_device newer = H200;
  newer.driver_version = 13010;
  make_trial(&t[6], "l6", KEY_A, TPL, VER, &newer, OUT_OK, 6.5, 6);
  insert(d, t, 7, 0);

  db_summary *s = NULL;
  int n = -1;
  ct_err err = {0};
  ck_assert_msg(db_list(d, &s, &n, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(n, 3);
  /* Ordered by key then device: KEY_A sorts after KEY_B ("nchw-" < "nchw4"). */
  ck_assert_str_eq(s[0].workload_key, KEY_B);
  ck_assert_str_eq(s[0].device, H200.name);
  ck_assert_int_eq(s[0].n_trials, 2);
  ck_assert_int_eq(s[0].n_ok, 0);
  ck_assert(s[0].best_us == 0);
  ck_assert_str_eq(s[0].template_name, "");
  ck_assert_str_eq(s[1].workload_key, KEY_A);
  ck_assert_str_eq(s[1].device, H100.name);
  ck_assert_int_eq(s[1].n_trials, 1);
  ck_assert_int_eq(s[1].n_ok, 1);
  ck_assert(s[1].best_us == 8.0);
  ck_assert_str_eq(s[1].template_name, TPL);
  ck_assert_str_eq(s[2].workload_key, KEY_A);
  ck_assert_str_eq(s[2].device, H200.name);
  ck_assert_int_eq(s[2].n_trials, 4);
  ck_assert_int_eq(s[2].n_ok, 3);
  ck_assert(s[2].best_us == 6.5);
  ck_assert_str_eq(s[2].template_name, TPL);
  free(s);
  free_all(t, 7);
  db_close(d);
}
END_TEST

/* ---- picks ------------------------------------------------------------------------------ */

#define MODEL "mobilenetv2_qdq.onnx, batch 32"

/* The trials picks name: KEY_A's pa1 (OK 5.0), pa2 (OK 6.0) and pa3
 * (TIMEOUT) on the H200, KEY_B's pb1 (OK 3.0) on the H100. KEY_C has none,
 * so no workload row either. */
static void pick_trials(db *d, trial t[4]) {
  make_trial(&t[0], "pa1", KEY_A, TPL, VER, &H200, OUT_OK, 5.0, 1);
  make_trial(&t[1], "pa2", KEY_A, TPL2, VER2, &H200, OUT_OK, 6.0, 2);
  make_trial(&t[2], "pa3", KEY_A, TPL, VER, &H200, OUT_TIMEOUT, 0, 3);
  make_trial(&t[3], "pb1", KEY_B, TPL, VER, &H100, OUT_OK, 3.0, 4);
  insert(d, t, 4, 0);
}

/* A fresh database (a.db in a scratch folder, its path into path) holding
 * pick_trials' trials, t. */
static db *picks_db(char *path, size_t size, trial t[4]) {
  char dir[512];
  scratch(dir, sizeof dir);
  path_in(path, size, dir, "a.db");
  db *d = open_db(path);
  pick_trials(d, t);
  return d;
}

static db_pick make_pick(const char *key, const char *uid, double chain_us, double base_us) {
  db_pick p;
  memset(&p, 0, sizeof p);
  snprintf(p.workload_key, sizeof p.workload_key, "%s", key);
  snprintf(p.trial_uid, sizeof p.trial_uid, "%s", uid);
  p.chain_us = chain_us;
  p.base_us = base_us;
  snprintf(p.model, sizeof p.model, "%s", MODEL);
  snprintf(p.session, sizeof p.session, "s-%s", uid);
  p.timestamp = 1700000100.25 + chain_us / 3.0;
  return p;
}

static void set_picks(db *d, const db_device *dev, const char *const *keys, int n_keys,
                      const db_pick *p, int n) {
  ct_err err = {0};
  ct_status st = db_set_picks(d, dev, keys, n_keys, p, n, &err);
  ck_assert_msg(st == CT_OK, "db_set_picks: %s", err.msg);
}

static void assert_same_pick(const db_pick *want, const db_pick *got) {
  ck_assert_str_eq(got->workload_key, want->workload_key);
  ck_assert_str_eq(got->trial_uid, want->trial_uid);
  ck_assert_msg(same_double(got->chain_us, want->chain_us), "chain_us %.17g", got->chain_us);
  ck_assert_msg(same_double(got->base_us, want->base_us), "base_us %.17g", got->base_us);
  ck_assert_str_eq(got->model, want->model);
  ck_assert_str_eq(got->session, want->session);
  ck_assert_msg(same_double(got->timestamp, want->timestamp), "timestamp %.17g", got->timestamp);
}

/* Whether key has a pick for dev; when it has, its trial is want (when not
 * NULL) and the pick is want_pick (when not NULL). When it has not, out and
 * the pick come back zeroed. */
static int picked(db *d, const char *key, const db_device *dev, const trial *want,
                  const db_pick *want_pick) {
  trial got;
  db_pick p;
  int found = -1;
  ct_err err = {0};
  memset(&p, 0x5a, sizeof p);
  ct_status st = db_picked(d, key, dev, &got, &p, &found, &err);
  ck_assert_msg(st == CT_OK, "db_picked: %s", err.msg);
  ck_assert(found == 0 || found == 1);
  if (found) {
    if (want) assert_same_trial(want, &got);
    if (want_pick) assert_same_pick(want_pick, &p);
  } else {
    ck_assert_str_eq(got.uid, "");
    ck_assert_ptr_null(got.config_json);
    ck_assert_ptr_null(got.samples_us);
    ck_assert_str_eq(p.trial_uid, "");
    ck_assert(p.chain_us == 0);
  }
  trial_free(&got);
  return found;
}

/* The number of picks db_list_picks lists. */
static int count_picks(db *d) {
  db_pick_row *r = NULL;
  int n = -1;
  ct_err err = {0};
  ck_assert_msg(db_list_picks(d, &r, &n, &err) == CT_OK, "db_list_picks: %s", err.msg);
  free(r);
  return n;
}

/* Set, get, replace, clear: a set touches only the keys it is given, a pick
 * may name a trial of another device, and a key never tuned can be cleared. */
START_TEST(picks_set_get_replace_clear) {
  char path[600];
  trial t[4];
  db *d = picks_db(path, sizeof path, t);
  ck_assert_int_eq(picked(d, KEY_A, &H200, NULL, NULL), 0);

  /* pa2 is not KEY_A's fastest (pa1 is): a pick need not be the best. */
  const char *const abc[] = {KEY_A, KEY_B, KEY_C};
  db_pick p[2] = {make_pick(KEY_A, "pa2", 100.5, 110.25), make_pick(KEY_B, "pb1", 100.5, 110.25)};
  set_picks(d, &H200, abc, 3, p, 2);
  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[1], &p[0]), 1);
  ck_assert_int_eq(picked(d, KEY_B, &H200, &t[3], &p[1]), 1);
  ck_assert_int_eq(picked(d, KEY_C, &H200, NULL, NULL), 0);
  ck_assert_int_eq(count_picks(d), 2);
  /* The best is unchanged by a pick. */
  trial best;
  db_match m;
  ct_err err = {0};
  ck_assert_int_eq(db_best(d, KEY_A, &H200, NULL, NULL, &best, &m, &err), CT_OK);
  ck_assert_str_eq(best.uid, "pa1");
  trial_free(&best);

  /* Replace KEY_A's only: KEY_B's stays. */
  const char *const a[] = {KEY_A};
  db_pick q = make_pick(KEY_A, "pa1", 98.0, 110.0);
  set_picks(d, &H200, a, 1, &q, 1);
  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[0], &q), 1);
  ck_assert_int_eq(picked(d, KEY_B, &H200, &t[3], &p[1]), 1);
  ck_assert_int_eq(count_picks(d), 2);

  /* A key given with no pick is cleared; one with no workload row too. */
  const char *const bc[] = {KEY_B, KEY_C};
  set_picks(d, &H200, bc, 2, NULL, 0);
  ck_assert_int_eq(picked(d, KEY_B, &H200, NULL, NULL), 0);
  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[0], &q), 1);
  ck_assert_int_eq(count_picks(d), 1);
  /* No keys: nothing changes. */
  set_picks(d, &H200, NULL, 0, NULL, 0);
  ck_assert_int_eq(count_picks(d), 1);
  set_picks(d, &H200, a, 1, NULL, 0);
  ck_assert_int_eq(picked(d, KEY_A, &H200, NULL, NULL), 0);
  ck_assert_int_eq(count_picks(d), 0);

  /* They persist. */
  set_picks(d, &H200, a, 1, &q, 1);
  db_close(d);
  d = open_db(path);
  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[0], &q), 1);
  free_all(t, 4);
  db_close(d);
}
END_TEST

/* Picks are per device name and compute capability: another name of the
 * same cc, or the same name with another cc, has none of its own (no cc
 * fallback, unlike db_best); other device fields do not matter. */
START_TEST(picks_per_device_name_and_cc) {
  char path[600];
  trial t[4];
  db *d = picks_db(path, sizeof path, t);
  const char *const a[] = {KEY_A};
  db_pick on_h200 = make_pick(KEY_A, "pa2", 50.0, 52.0);
  set_picks(d, &H200, a, 1, &on_h200, 1);

  ck_assert_int_eq(picked(d, KEY_A, &H100, NULL, NULL), 0);
  db_device other_cc = H200;
  other_cc.cc_minor = 1;
  ck_assert_int_eq(picked(d, KEY_A, &other_cc, NULL, NULL), 0);
  other_cc = H200;
  other_cc.cc_major = 8;
  ck_assert_int_eq(picked(d, KEY_A, &other_cc, NULL, NULL), 0);
  db_device newer = H200;
  newer.driver_version = 13010;
  newer.sm_count = 114;
  snprintf(newer.nvrtc_version, sizeof newer.nvrtc_version, "13.1");
  ck_assert_int_eq(picked(d, KEY_A, &newer, &t[1], &on_h200), 1);

  /* The H100's own pick (of a trial measured on the H200) beside it;
   * clearing one device's leaves the other's. */
  db_pick on_h100 = make_pick(KEY_A, "pa1", 40.0, 41.0);
  set_picks(d, &H100, a, 1, &on_h100, 1);
  ck_assert_int_eq(picked(d, KEY_A, &H100, &t[0], &on_h100), 1);
  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[1], &on_h200), 1);
  set_picks(d, &other_cc, a, 1, NULL, 0);
  set_picks(d, &H200, a, 1, NULL, 0);
  ck_assert_int_eq(picked(d, KEY_A, &H200, NULL, NULL), 0);
  ck_assert_int_eq(picked(d, KEY_A, &H100, &t[0], &on_h100), 1);
  free_all(t, 4);
  db_close(d);
}
END_TEST

/* db_set_picks(keys, picks) is expected to fail with CT_ERR_INVALID_ARG
 * and a message holding want1 and want2. */
static void expect_bad_picks(db *d, const char *const *keys, int n_keys, const db_pick *p, int n,
                             const char *want1, const char *want2) {
  ct_err err = {0};
  ct_status st = db_set_picks(d, &H200, keys, n_keys, p, n, &err);
  ck_assert_msg(st == CT_ERR_INVALID_ARG, "status %d: %s", (int)st, err.msg);
  ck_assert_msg(strstr(err.msg, want1) && strstr(err.msg, want2), "%s", err.msg);
}

/* A pick of an unknown uid, of a trial that is not OK, of another
 * workload's trial, of a key not among keys, two of one key, or with a bad
 * time is refused, and nothing of the set is written: not even the
 * deletes of the keys' old picks. */
START_TEST(picks_refused_write_nothing) {
  char path[600];
  trial t[4];
  db *d = picks_db(path, sizeof path, t);
  const char *const ab[] = {KEY_A, KEY_B};
  db_pick old[2] = {make_pick(KEY_A, "pa1", 10.0, 11.0), make_pick(KEY_B, "pb1", 10.0, 11.0)};
  set_picks(d, &H200, ab, 2, old, 2);

  db_pick p[2] = {make_pick(KEY_A, "pa2", 9.0, 11.0), make_pick(KEY_B, "nope", 9.0, 11.0)};
  expect_bad_picks(d, ab, 2, p, 2, "picks[1]: trial_uid", "no trial nope");
  p[1] = make_pick(KEY_B, "pa3", 9.0, 11.0); /* KEY_A's, and TIMEOUT */
  expect_bad_picks(d, ab, 2, p, 2, "picks[1]: trial_uid", "is of workload " KEY_A ", not " KEY_B);
  p[1] = make_pick(KEY_A, "pa3", 9.0, 11.0);
  expect_bad_picks(d, ab, 2, p, 2, "picks[0] and picks[1]", "two picks of workload " KEY_A);
  p[0] = make_pick(KEY_A, "pa3", 9.0, 11.0);
  expect_bad_picks(d, ab, 2, p, 1, "picks[0]: trial_uid", "pa3 is TIMEOUT, accepted OK");
  p[0] = make_pick(KEY_A, "pb1", 9.0, 11.0);
  expect_bad_picks(d, ab, 2, p, 1, "picks[0]: trial_uid", "is of workload " KEY_B);
  /* KEY_B's pick is only cleared when KEY_B is among keys. */
  const char *const b[] = {KEY_B};
  p[0] = make_pick(KEY_A, "pa2", 9.0, 11.0);
  expect_bad_picks(d, b, 1, p, 1, "picks[0].workload_key", "not one of the 1 keys");
  expect_bad_picks(d, NULL, 0, p, 1, "picks[0].workload_key", "not one of the 0 keys");
  p[0].chain_us = NAN;
  expect_bad_picks(d, ab, 2, p, 1, "picks[0].chain_us", "finite value > 0");
  p[0].chain_us = 9.0;
  p[0].base_us = 0;
  expect_bad_picks(d, ab, 2, p, 1, "picks[0].base_us", "finite value > 0");
  p[0].base_us = 11.0;
  memset(p[0].model, 'm', sizeof p[0].model);
  expect_bad_picks(d, ab, 2, p, 1, "picks[0].model", "not NUL-terminated");

  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[0], &old[0]), 1);
  ck_assert_int_eq(picked(d, KEY_B, &H200, &t[3], &old[1]), 1);
  ck_assert_int_eq(count_picks(d), 2);
  free_all(t, 4);
  db_close(d);
}
END_TEST

/* A readonly database refuses a set and changes nothing; it reads them. */
START_TEST(picks_readonly_refused) {
  char path[600];
  trial t[4];
  db *d = picks_db(path, sizeof path, t);
  const char *const a[] = {KEY_A};
  db_pick p = make_pick(KEY_A, "pa1", 10.0, 11.0);
  set_picks(d, &H200, a, 1, &p, 1);
  db_close(d);

  ct_err err = {0};
  ck_assert_msg(db_open(path, 1, &d, &err) == CT_OK, "%s", err.msg);
  db_pick q = make_pick(KEY_A, "pa2", 9.0, 11.0);
  ck_assert_int_eq(db_set_picks(d, &H200, a, 1, &q, 1, &err), CT_ERR_DB);
  ck_assert_msg(strstr(err.msg, "readonly") && strstr(err.msg, path), "%s", err.msg);
  ck_assert_int_eq(db_set_picks(d, &H200, a, 1, NULL, 0, &err), CT_ERR_DB);
  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[0], &p), 1);
  ck_assert_int_eq(count_picks(d), 1);
  db_close(d);
  free_all(t, 4);
}
END_TEST

/* db_list_picks: every device's, ordered by key, device name, cc, with the
 * trial's template, config and median; a long config is cut to the buffer. */
START_TEST(picks_list) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t[5];
  pick_trials(d, t);
  /* A config of 1500 bytes: listed as its first 1023. */
  make_trial(&t[4], "pb2", KEY_B, TPL2, VER2, &H200, OUT_OK, 2.5, 5);
  char *long_config = malloc(1501);
  ck_assert_ptr_nonnull(long_config);
  memset(long_config, 'x', 1500);
  memcpy(long_config, "{\"k\":\"", 6);
  memcpy(long_config + 1498, "\"}", 3);
  free(t[4].config_json);
  t[4].config_json = long_config;
  insert(d, &t[4], 1, 0);

  const char *const a[] = {KEY_A}, *const b[] = {KEY_B};
  db_pick a_h200 = make_pick(KEY_A, "pa2", 20.0, 21.0);
  db_pick a_h100 = make_pick(KEY_A, "pa1", 30.0, 31.0);
  db_pick b_h200 = make_pick(KEY_B, "pb1", 20.0, 21.0);
  db_pick b_l40s = make_pick(KEY_B, "pb2", 40.0, 41.5);
  set_picks(d, &L40S, b, 1, &b_l40s, 1);
  set_picks(d, &H200, a, 1, &a_h200, 1);
  set_picks(d, &H100, a, 1, &a_h100, 1);
  set_picks(d, &H200, b, 1, &b_h200, 1);

  db_pick_row *r = NULL;
  int n = -1;
  ct_err err = {0};
  ck_assert_msg(db_list_picks(d, &r, &n, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(n, 4);
  /* KEY_B sorts before KEY_A ("nchw-" < "nchw4"); "H100 80GB" < "H200" < "L40S". */
  const db_pick *want[4] = {&b_h200, &b_l40s, &a_h100, &a_h200};
  const db_device *dev[4] = {&H200, &L40S, &H100, &H200};
  const trial *tr[4] = {&t[3], &t[4], &t[0], &t[1]};
  for (int i = 0; i < 4; i++) {
    assert_same_pick(want[i], &r[i].p);
    ck_assert_str_eq(r[i].device_name, dev[i]->name);
    ck_assert_int_eq(r[i].cc_major, dev[i]->cc_major);
    ck_assert_int_eq(r[i].cc_minor, dev[i]->cc_minor);
    ck_assert_str_eq(r[i].template_name, tr[i]->template_name);
    ck_assert_msg(same_double(r[i].alone_us, tr[i]->median_us), "row %d: alone_us %.17g", i,
                  r[i].alone_us);
  }
  ck_assert_str_eq(r[0].config_json, t[3].config_json);
  ck_assert_int_eq(strlen(r[1].config_json), 1023);
  ck_assert(strncmp(r[1].config_json, long_config, 1023) == 0);
  ck_assert_str_eq(r[2].config_json, t[0].config_json);
  ck_assert_str_eq(r[3].config_json, t[1].config_json);
  free(r);
  free_all(t, 5);
  db_close(d);
}
END_TEST

/* A pick row that convtune did not write (an over-long model) reads as no
 * pick and is counted as a bad row; db_list_picks skips it. */
START_TEST(picks_malformed_row_skipped) {
  char path[600];
  trial t[4];
  db *d = picks_db(path, sizeof path, t);
  const char *const ab[] = {KEY_A, KEY_B};
  db_pick p[2] = {make_pick(KEY_A, "pa1", 10.0, 11.0), make_pick(KEY_B, "pb1", 10.0, 11.0)};
  set_picks(d, &H200, ab, 2, p, 2);
  db_close(d);
  sql(path, "UPDATE picks SET model = printf('%0300d', 7) WHERE trial_id ="
            " (SELECT id FROM trials WHERE uid = 'pa1')");
  d = open_db(path);
  char msg[CT_ERRMSG_MAX];
  ck_assert_int_eq(picked(d, KEY_A, &H200, NULL, NULL), 0);
  ck_assert_int_eq(db_bad_rows(d, msg, sizeof msg), 1);
  ck_assert_msg(strstr(msg, "model") && strstr(msg, "300 bytes"), "%s", msg);
  ck_assert_int_eq(picked(d, KEY_B, &H200, &t[3], &p[1]), 1);
  ck_assert_int_eq(count_picks(d), 1);
  ck_assert_int_eq(db_bad_rows(d, NULL, 0), 1);
  free_all(t, 4);
  db_close(d);
}
END_TEST

/* db_export's lines of d (all workloads, or key) into an owned string; the
 * counts into *c. */
static char *export_text(db *d, const char *key, db_io_counts *c) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  ct_err err = {0};
  ck_assert_msg(db_export(d, key, f, c, &err) == CT_OK, "db_export: %s", err.msg);
  fclose(f);
  return buf;
}

/* db_import of text into d: its status, the counts into *c, the message into *err. */
static ct_status import_text(db *d, const char *text, db_io_counts *c, ct_err *err) {
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  ck_assert_ptr_nonnull(f);
  ct_status st = db_import(d, f, c, err);
  fclose(f);
  return st;
}

static void assert_counts(const db_io_counts *c, int trials, int present, int picks,
                          int picks_present, int picks_kept) {
  ck_assert_int_eq(c->trials, trials);
  ck_assert_int_eq(c->trials_present, present);
  ck_assert_int_eq(c->picks, picks);
  ck_assert_int_eq(c->picks_present, picks_present);
  ck_assert_int_eq(c->picks_kept, picks_kept);
}

/* A pick's export line of key on dev, naming uid, at timestamp ts. */
static char *pick_json(const char *key, const char *uid, const db_device *dev, double ts) {
  char *s = malloc(2048);
  ck_assert_ptr_nonnull(s);
  int n = snprintf(s, 2048,
                   "{\"format\":2,\"record\":\"pick\",\"workload_key\":\"%s\","
                   "\"trial_uid\":\"%s\",\"device\":{\"name\":\"%s\",\"cc_major\":%d,"
                   "\"cc_minor\":%d},\"chain_us\":250.5,\"base_us\":260.25,"
                   "\"model\":\"" MODEL "\",\"session\":\"s9\",\"timestamp\":%.17g}",
                   key, uid, dev->name, dev->cc_major, dev->cc_minor, ts);
  ck_assert(n > 0 && n < 2048);
  return s;
}

/* Export carries the picks after the trials, per device; an import into a
 * fresh database serves them and exports the same bytes; a second import
 * finds them present; an export of one workload carries its picks only. */
START_TEST(picks_export_import) {
  char path[600], pb[600];
  trial t[4];
  db *a = picks_db(path, sizeof path, t);
  const char *const ka[] = {KEY_A}, *const kab[] = {KEY_A, KEY_B};
  db_pick h200 = make_pick(KEY_A, "pa2", 50.0, 52.0);
  db_pick h100[2] = {make_pick(KEY_A, "pa1", 40.0, 41.0), make_pick(KEY_B, "pb1", 40.0, 41.0)};
  set_picks(a, &H200, ka, 1, &h200, 1);
  set_picks(a, &H100, kab, 2, h100, 2);

  db_io_counts c;
  char *out = export_text(a, NULL, &c);
  assert_counts(&c, 4, 0, 3, 0, 0);
  /* the three picks are the last lines, each of format 2 */
  const char *p = out;
  for (int i = 0; i < 4; i++) p = strchr(p, '\n') + 1;
  ck_assert_msg(strncmp(p, "{\"format\":2,\"record\":\"pick\",", 28) == 0, "%s", p);
  ck_assert_ptr_nonnull(strstr(p, "\"trial_uid\":\"pa2\""));
  ck_assert_ptr_nonnull(strstr(p, "\"name\":\"NVIDIA H200\""));

  snprintf(pb, sizeof pb, "%.*sb.db", (int)(strrchr(path, '/') - path + 1), path);
  db *b = open_db(pb);
  ct_err err = {0};
  ck_assert_msg(import_text(b, out, &c, &err) == CT_OK, "%s", err.msg);
  assert_counts(&c, 4, 0, 3, 0, 0);
  ck_assert_int_eq(picked(b, KEY_A, &H200, &t[1], &h200), 1);
  ck_assert_int_eq(picked(b, KEY_A, &H100, &t[0], &h100[0]), 1);
  ck_assert_int_eq(picked(b, KEY_B, &H100, &t[3], &h100[1]), 1);
  ck_assert_int_eq(picked(b, KEY_B, &H200, NULL, NULL), 0);
  char *again = export_text(b, NULL, &c);
  ck_assert_str_eq(again, out);
  free(again);
  ck_assert_msg(import_text(b, out, &c, &err) == CT_OK, "%s", err.msg);
  assert_counts(&c, 0, 4, 0, 3, 0);
  ck_assert_int_eq(count_picks(b), 3);

  char *one = export_text(b, KEY_B, &c);
  ck_assert_int_eq(c.trials, 1);
  ck_assert_int_eq(c.picks, 1);
  ck_assert_ptr_nonnull(strstr(one, "\"trial_uid\":\"pb1\""));
  free(one);
  free(out);
  db_close(b);
  free_all(t, 4);
  db_close(a);
}
END_TEST

/* A pick replaces the database's pick of its workload and device only when
 * newer; its trial may be one the database already holds. */
START_TEST(picks_import_newest_wins) {
  char path[600];
  trial t[4];
  db *d = picks_db(path, sizeof path, t);
  const char *const ka[] = {KEY_A};
  db_pick now = make_pick(KEY_A, "pa1", 50.0, 52.0);
  set_picks(d, &H200, ka, 1, &now, 1);

  char *older = pick_json(KEY_A, "pa2", &H200, now.timestamp - 10);
  char *newer = pick_json(KEY_A, "pa2", &H200, now.timestamp + 10);
  char *other_dev = pick_json(KEY_A, "pa2", &H100, now.timestamp - 10);
  char text[8192];
  db_io_counts c;
  ct_err err = {0};
  snprintf(text, sizeof text, "%s\n%s\n", older, other_dev);
  ck_assert_msg(import_text(d, text, &c, &err) == CT_OK, "%s", err.msg);
  assert_counts(&c, 0, 0, 1, 0, 1);
  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[0], &now), 1);
  ck_assert_int_eq(picked(d, KEY_A, &H100, &t[1], NULL), 1);

  snprintf(text, sizeof text, "%s\n", newer);
  ck_assert_msg(import_text(d, text, &c, &err) == CT_OK, "%s", err.msg);
  assert_counts(&c, 0, 0, 1, 0, 0);
  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[1], NULL), 1);
  ck_assert_msg(import_text(d, text, &c, &err) == CT_OK, "%s", err.msg);
  assert_counts(&c, 0, 0, 0, 1, 0);
  ck_assert_int_eq(count_picks(d), 2);
  free(older);
  free(newer);
  free(other_dev);
  free_all(t, 4);
  db_close(d);
}
END_TEST

/* Import text into a fresh database holding pick_trials' trials: refused
 * with CT_ERR_PARSE naming want, and neither a trial nor a pick written. */
static void expect_bad_pick_import(const char *text, const char *want) {
  char path[600];
  trial t[4];
  db *d = picks_db(path, sizeof path, t);
  db_io_counts c;
  ct_err err = {0};
  ct_status st = import_text(d, text, &c, &err);
  ck_assert_msg(st == CT_ERR_PARSE, "%s: status %d (%s)", want, st, err.msg);
  ck_assert_msg(strstr(err.msg, want) != NULL, "message '%s' does not name '%s'", err.msg, want);
  assert_counts(&c, 0, 0, 0, 0, 0);
  ck_assert_int_eq(count_picks(d), 0);
  ck_assert_int_eq(count_trials(d, KEY_A) + count_trials(d, KEY_B) + count_trials(d, KEY_C), 4);
  free_all(t, 4);
  db_close(d);
}

/* A bad pick line imports nothing, the trials beside it included. */
START_TEST(picks_import_refused) {
  char *good = good_lines(2); /* KEY_A's g-0, g-1: OK */
  char *ok = pick_json(KEY_A, "g-1", &H200, 1700000200.5);
  char text[16384];
#define BAD(line, want)                                                                            \
  do {                                                                                             \
    snprintf(text, sizeof text, "%s%s\n", good, line);                                             \
    expect_bad_pick_import(text, want);                                                            \
  } while (0)
  /* the pick line alone is good, its trial among the file's */
  {
    char path[600];
    trial t[4];
    db *d = picks_db(path, sizeof path, t);
    db_io_counts c;
    ct_err err = {0};
    snprintf(text, sizeof text, "%s%s\n", good, ok);
    ck_assert_msg(import_text(d, text, &c, &err) == CT_OK, "%s", err.msg);
    assert_counts(&c, 2, 0, 1, 0, 0);
    free_all(t, 4);
    db_close(d);
  }
  char *p = pick_json(KEY_A, "nope", &H200, 1.0);
  BAD(p, "line 3: trial_uid: no trial nope");
  free(p);
  p = pick_json(KEY_A, "pa3", &H200, 1.0); /* in the database, TIMEOUT */
  BAD(p, "line 3: trial_uid: trial pa3 is TIMEOUT, accepted OK");
  free(p);
  p = pick_json(KEY_B, "g-0", &H200, 1.0); /* in the file, of KEY_A */
  BAD(p, "line 3: trial_uid: trial g-0 is of workload " KEY_A ", not " KEY_B);
  free(p);
  p = pick_json(KEY_A, "g-0", &H200, 1.0);
  snprintf(text, sizeof text, "%s%s\n%s\n", good, ok, p);
  expect_bad_pick_import(text,
                         "line 4: a pick of " KEY_A " on NVIDIA H200 (9.0) conflicts with line 3");
  free(p);
  /* the same pick twice is one */
  {
    char path[600];
    trial t[4];
    db *d = picks_db(path, sizeof path, t);
    db_io_counts c;
    ct_err err = {0};
    snprintf(text, sizeof text, "%s%s\n%s\n", good, ok, ok);
    ck_assert_msg(import_text(d, text, &c, &err) == CT_OK, "%s", err.msg);
    assert_counts(&c, 2, 0, 1, 1, 0);
    free_all(t, 4);
    db_close(d);
  }
  /* malformed lines */
  struct {
    const char *from, *to, *want;
  } edits[] = {
      {"\"record\":\"pick\"", "\"record\":\"trial\"", "line 3: record: expected \"pick\""},
      {"\"format\":2", "\"format\":1", "line 3: format: 1; a pick is format 2"},
      {"\"format\":2", "\"format\":3", "line 3: format: 3 is newer than this convtune knows"},
      {"\"chain_us\":250.5", "\"chain_us\":0", "line 3: chain_us: 0, expected a time > 0"},
      {"\"base_us\":260.25", "\"base_us\":-1", "line 3: base_us: -1, expected a time > 0"},
      {"\"name\":\"NVIDIA H200\"", "\"name\":\"\"", "line 3: device.name: empty"},
      {"\"cc_major\":9", "\"cc_major\":9.5", "line 3: device.cc_major"},
      {"\"cc_minor\":0}", "\"cc_minor\":0,\"sm_count\":132}", "line 3: device.sm_count: unknown"},
      {"\"session\":\"s9\"", "\"session\":\"s9\",\"extra\":1", "line 3: extra: unknown field"},
      {"\"trial_uid\":\"g-1\"", "\"trial_uid\":\"\"", "line 3: trial_uid: empty"},
      {"\"trial_uid\":\"g-1\",", "", "line 3: trial_uid: missing"},
      {"\"timestamp\":", "\"timestamp\":\"x\",\"t\":", "line 3: t: unknown field"},
      {"conv2d-nchw", "conv9d-nchw", "line 3: workload_key"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
    const char *at = strstr(ok, edits[i].from);
    ck_assert_msg(at != NULL, "edit %zu: %s not in %s", i, edits[i].from, ok);
    char line[4096];
    snprintf(line, sizeof line, "%.*s%s%s", (int)(at - ok), ok, edits[i].to,
             at + strlen(edits[i].from));
    BAD(line, edits[i].want);
  }
#undef BAD
  free(ok);
  free(good);
}
END_TEST

/* ---- opening: persistence, schema, bad files, readonly ------------------------------------ */

/* The journal mode stored in the file, read by a connection of its own. */
static void assert_journal_mode(const char *path, const char *mode) {
  sqlite3 *h = NULL;
  sqlite3_stmt *s = NULL;
  ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), mode);
  sqlite3_finalize(s);
  sqlite3_close(h);
}

START_TEST(reopen_persists) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t;
  make_trial(&t, "p-1", KEY_B, TPL, VER, &H200, OUT_OK, 3.25, 99);
  insert(d, &t, 1, 0);
  ct_err err = {0};
  ck_assert_int_eq(db_store_kernel(d, VER, "-DX=1", "sm_90", "cubin", 5, &err), CT_OK);
  db_close(d);

  for (int readonly = 0; readonly < 2; readonly++) {
    ck_assert_msg(db_open(path, readonly, &d, &err) == CT_OK, "%s", err.msg);
    trial got;
    db_match m;
    ck_assert_int_eq(db_best(d, KEY_B, &H200, NULL, NULL, &got, &m, &err), CT_OK);
    assert_same_trial(&t, &got);
    trial_free(&got);
    void *data = NULL;
    size_t size = 0;
    ck_assert_int_eq(db_load_kernel(d, VER, "-DX=1", "sm_90", &data, &size, &err), CT_OK);
    ck_assert_int_eq(size, 5);
    ck_assert(memcmp(data, "cubin", 5) == 0);
    free(data);
    db_close(d);
  }
  /* The schema version is recorded and WAL is on. */
  sqlite3 *h = NULL;
  sqlite3_stmt *s = NULL;
  ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  ck_assert_int_eq(sqlite3_column_int(s, 0), DB_SCHEMA_VERSION);
  sqlite3_finalize(s);
  sqlite3_close(h);
  assert_journal_mode(path, "wal");
  trial_free(&t);
}
END_TEST

/* A new database at a fresh path named name (into path), then sql run on
 * it by a plain SQLite connection. */
static void altered_db(char *path, size_t size, const char *name, const char *sql) {
  char dir[512];
  scratch(dir, sizeof dir);
  path_in(path, size, dir, name);
  db_close(open_db(path));
  sqlite3 *h = NULL;
  ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(h);
}

/* A schema-1 database (no trials_best index, no picks) is refused
 * read-only with a message, and migrated to the current schema by a
 * writable open. */
START_TEST(older_schema_migrates) {
  char path[600];
  altered_db(path, sizeof path, "old.db",
             "DROP INDEX trials_best; DROP TABLE picks; PRAGMA user_version = 1");
  db *d = NULL;
  sqlite3 *h = NULL;
  ct_err err = {0};
  ck_assert_int_eq(db_open(path, 1, &d, &err), CT_ERR_DB);
  ck_assert_ptr_nonnull(strstr(err.msg, "older"));
  ck_assert_int_eq(db_open(path, 0, &d, &err), CT_OK);
  db_close(d);
  ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
  sqlite3_stmt *s = NULL;
  ck_assert_int_eq(sqlite3_prepare_v2(h,
                                      "SELECT (SELECT count(*) FROM sqlite_master WHERE name = "
                                      "'trials_best'), (SELECT user_version FROM "
                                      "pragma_user_version)",
                                      -1, &s, NULL),
                   SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  ck_assert_int_eq(sqlite3_column_int(s, 0), 1);
  ck_assert_int_eq(sqlite3_column_int(s, 1), DB_SCHEMA_VERSION);
  sqlite3_finalize(s);
  sqlite3_close(h);
  ck_assert_int_eq(db_open(path, 1, &d, &err), CT_OK);
  db_close(d);
}
END_TEST

/* A schema-2 database (trials, no picks table) opens and is checked as
 * version 2, is refused read-only, and a writable open migrates it to 3:
 * the picks table added, its trials kept, picks then set and read. A
 * version-3 file without the table is not convtune's. */
START_TEST(schema_2_migrates_to_picks) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "v2.db");
  db *d = open_db(path);
  trial t[4];
  pick_trials(d, t);
  db_close(d);
  sql(path, "DROP TABLE picks; PRAGMA user_version = 2");

  /* read as it is (a deployed library keeps reading it): its trials, no
   * picks, and nothing written */
  ct_err err = {0};
  ck_assert_msg(db_open(path, 1, &d, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(count_trials(d, KEY_A), 3);
  ck_assert_int_eq(count_picks(d), 0);
  ck_assert_int_eq(picked(d, KEY_A, &H200, NULL, NULL), 0);
  db_close(d);
  {
    sqlite3 *h = NULL;
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT user_version FROM pragma_user_version", -1, &s,
                                        NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(s, 0), 2);
    sqlite3_finalize(s);
    sqlite3_close(h);
  }
  ck_assert_msg(db_open(path, 0, &d, &err) == CT_OK, "%s", err.msg);
  db_close(d);
  sqlite3 *h = NULL;
  sqlite3_stmt *s = NULL;
  ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(h,
                                      "SELECT (SELECT count(*) FROM sqlite_master WHERE type ="
                                      " 'table' AND name = 'picks'), (SELECT user_version FROM"
                                      " pragma_user_version), (SELECT count(*) FROM trials)",
                                      -1, &s, NULL),
                   SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  ck_assert_int_eq(sqlite3_column_int(s, 0), 1);
  ck_assert_int_eq(sqlite3_column_int(s, 1), 3);
  ck_assert_int_eq(sqlite3_column_int(s, 2), 4);
  sqlite3_finalize(s);
  sqlite3_close(h);

  ck_assert_msg(db_open(path, 1, &d, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(count_picks(d), 0);
  ck_assert_int_eq(count_trials(d, KEY_A), 3);
  db_close(d);
  d = open_db(path);
  const char *const a[] = {KEY_A};
  db_pick p = make_pick(KEY_A, "pa2", 10.0, 11.0);
  set_picks(d, &H200, a, 1, &p, 1);
  ck_assert_int_eq(picked(d, KEY_A, &H200, &t[1], &p), 1);
  db_close(d);

  /* Version 3 requires the table. */
  sql(path, "DROP TABLE picks");
  for (int readonly = 0; readonly < 2; readonly++) {
    ck_assert_int_eq(db_open(path, readonly, &d, &err), CT_ERR_DB);
    ck_assert_msg(strstr(err.msg, "schema version 3 but no table picks"), "%s", err.msg);
  }
  free_all(t, 4);
}
END_TEST

START_TEST(newer_schema_refused_unchanged) {
  char dir[512], path[600], sqlbuf[64];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  db_close(d);
  snprintf(sqlbuf, sizeof sqlbuf, "PRAGMA user_version = %d", DB_SCHEMA_VERSION + 1);
  sql(path, sqlbuf);
  long n0 = 0, n1 = 0;
  char *before = slurp(path, &n0);
  for (int readonly = 0; readonly < 2; readonly++) {
    ct_err err = {0};
    d = (db *)1;
    ck_assert_int_eq(db_open(path, readonly, &d, &err), CT_ERR_DB);
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(err.msg, "newer convtune") && strstr(err.msg, path), "%s", err.msg);
    char want[64];
    snprintf(want, sizeof want, "schema %d, this one knows %d", DB_SCHEMA_VERSION + 1,
             DB_SCHEMA_VERSION);
    ck_assert_msg(strstr(err.msg, want) != NULL, "%s", err.msg);
  }
  char *after = slurp(path, &n1);
  ck_assert_int_eq(n0, n1);
  ck_assert_msg(memcmp(before, after, (size_t)n0) == 0, "the refused database was modified");
  free(before);
  free(after);
}
END_TEST

START_TEST(not_a_database_refused) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "garbage.db");
  char text[4097];
  for (int i = 0; i < 4096; i++) text[i] = (char)('!' + i * 7 % 90);
  text[4096] = '\0';
  spit(path, text);
  for (int readonly = 0; readonly < 2; readonly++) {
    ct_err err = {0};
    db *d = NULL;
    ck_assert_int_eq(db_open(path, readonly, &d, &err), CT_ERR_DB);
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "not a database"), "%s", err.msg);
  }
  long n = 0;
  char *after = slurp(path, &n);
  ck_assert_int_eq(n, 4096);
  ck_assert(memcmp(after, text, 4096) == 0);
  free(after);

  /* An SQLite database of something else: not migrated into. */
  path_in(path, sizeof path, dir, "other.db");
  sql(path, "CREATE TABLE songs (title TEXT)");
  ct_err err = {0};
  db *d = NULL;
  ck_assert_int_eq(db_open(path, 0, &d, &err), CT_ERR_DB);
  ck_assert_msg(strstr(err.msg, "not a convtune database"), "%s", err.msg);
}
END_TEST

START_TEST(readonly_missing_and_no_writes) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "missing.db");
  ct_err err = {0};
  db *d = (db *)1;
  ck_assert_int_eq(db_open(path, 1, &d, &err), CT_ERR_NOT_FOUND);
  ck_assert_ptr_null(d);
  ck_assert_ptr_nonnull(strstr(err.msg, path));
  ck_assert(!file_exists(path));

  /* An empty file has no schema yet: readonly does not give it one. */
  spit(path, "");
  ck_assert_int_eq(db_open(path, 1, &d, &err), CT_ERR_DB);
  ck_assert_msg(strstr(err.msg, "empty") && strstr(err.msg, "writing command"), "%s", err.msg);

  d = open_db(path);
  trial t;
  make_trial(&t, "r-1", KEY_A, TPL, VER, &H200, OUT_OK, 2.5, 1);
  insert(d, &t, 1, 0);
  db_close(d);

  ck_assert_msg(db_open(path, 1, &d, &err) == CT_OK, "%s", err.msg);
  snprintf(t.uid, sizeof t.uid, "r-2");
  int skipped = -1;
  ck_assert_int_eq(db_insert_trials(d, &t, 1, &skipped, &err), CT_ERR_DB);
  ck_assert_ptr_nonnull(strstr(err.msg, "readonly"));
  ck_assert_int_eq(db_store_kernel(d, VER, "", "sm_90", "x", 1, &err), CT_ERR_DB);
  FILE *f = tmpfile();
  ck_assert_int_eq(import_n(d, f, NULL, NULL, &err), CT_ERR_DB);
  fclose(f);
  ck_assert_int_eq(count_trials(d, KEY_A), 1);
  db_close(d);
  trial_free(&t);
}
END_TEST

/* The -wal and -shm files beside path: whether either exists. */
static int has_sidecars(const char *path) {
  char side[700];
  snprintf(side, sizeof side, "%s-wal", path);
  int any = file_exists(side);
  snprintf(side, sizeof side, "%s-shm", path);
  return any || file_exists(side);
}

/* A WAL database with one trial of KEY_A at path, closed (no -wal left). */
static void one_trial_db(const char *path) {
  db *d = open_db(path);
  trial t;
  make_trial(&t, "ro-1", KEY_A, TPL, VER, &H200, OUT_OK, 2.5, 1);
  insert(d, &t, 1, 0);
  db_close(d);
  trial_free(&t);
  assert_journal_mode(path, "wal");
  ck_assert_msg(!has_sidecars(path), "a writable close left -wal/-shm");
}

/* A readonly open (and its reads) leaves the folder as it found it: no
 * -wal or -shm behind, the file's bytes unchanged. */
START_TEST(readonly_open_leaves_no_files) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  one_trial_db(path);
  long n0 = 0, n1 = 0;
  char *before = slurp(path, &n0);
  for (int i = 0; i < 2; i++) {
    db *d = NULL;
    ct_err err = {0};
    ck_assert_msg(db_open(path, 1, &d, &err) == CT_OK, "%s", err.msg);
    ck_assert_int_eq(count_trials(d, KEY_A), 1);
    db_close(d);
    ck_assert_msg(!has_sidecars(path), "readonly open %d left -wal/-shm beside %s", i, path);
  }
  char *after = slurp(path, &n1);
  ck_assert_int_eq(n0, n1);
  ck_assert_msg(memcmp(before, after, (size_t)n0) == 0, "a readonly open changed the file");
  free(before);
  free(after);
  /* A writer open at the same time keeps its files: only what the readonly
   * open made alone is removed, and the writer's data stays readable. */
  db *w = open_db(path);
  db *r = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(path, 1, &r, &err) == CT_OK, "%s", err.msg);
  trial t;
  make_trial(&t, "ro-2", KEY_A, TPL, VER, &H200, OUT_OK, 2.0, 2);
  insert(w, &t, 1, 0);
  ck_assert_int_eq(count_trials(r, KEY_A), 2);
  db_close(r);
  ck_assert_int_eq(count_trials(w, KEY_A), 2);
  db_close(w);
  trial_free(&t);
  ck_assert(!has_sidecars(path));
}
END_TEST

/* Read a WAL database in a folder the reader cannot write (a read-only
 * install). Root ignores permissions, so as root the reader is a forked
 * child that drops to nobody (65534) first. Returns the child's exit code:
 * 0 read 1 trial, 10+ the failing step. */
static int read_as_other_user(const char *path) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
    db *d = NULL;
    ct_err err = {0};
    if (db_open(path, 1, &d, &err) != CT_OK) {
      fprintf(stderr, "readonly open as uid %d: %s\n", (int)getuid(), err.msg);
      _exit(11);
    }
    trial *t = NULL;
    int n = 0;
    if (db_trials(d, KEY_A, NULL, NULL, NULL, &t, &n, &err) != CT_OK || n != 1) {
      fprintf(stderr, "db_trials as uid %d: n %d: %s\n", (int)getuid(), n, err.msg);
      _exit(12);
    }
    trials_free(t, n);
    db_close(d);
    _exit(has_sidecars(path) ? 13 : 0);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

START_TEST(readonly_folder_is_readable) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  one_trial_db(path);
  /* nobody must reach the file: the run's folders are mkdtemp's 0700 */
  ck_assert_int_eq(chmod(test_root(), 0755), 0);
  ck_assert_int_eq(chmod(path, 0644), 0);
  ck_assert_int_eq(chmod(dir, 0555), 0);
  int rc = read_as_other_user(path);
  ck_assert_int_eq(chmod(dir, 0755), 0);
  ck_assert_msg(rc == 0, "reading a WAL database in a read-only folder: child exited %d", rc);
  ck_assert(!has_sidecars(path));
}
END_TEST

/* Readonly opens never migrate or convert: an empty file and an older
 * schema are refused with a message naming the file and what to do, and
 * stay byte for byte as they were. */
START_TEST(readonly_refuses_empty_and_old_unchanged) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "empty.db");
  spit(path, "");
  ct_err err = {0};
  db *d = (db *)1;
  ck_assert_int_eq(db_open(path, 1, &d, &err), CT_ERR_DB);
  ck_assert_ptr_null(d);
  ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "empty") &&
                    strstr(err.msg, "writing command"),
                "%s", err.msg);
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);
  ck_assert_int_eq(sb.st_size, 0);
  ck_assert(!has_sidecars(path));

  altered_db(path, sizeof path, "old.db",
             "DROP INDEX trials_best; DROP TABLE picks; PRAGMA user_version = 1;"
             " PRAGMA journal_mode = DELETE");
  long n0 = 0, n1 = 0;
  char *before = slurp(path, &n0);
  ck_assert_int_eq(db_open(path, 1, &d, &err), CT_ERR_DB);
  ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "older") &&
                    strstr(err.msg, "writing command"),
                "%s", err.msg);
  char *after = slurp(path, &n1);
  ck_assert_int_eq(n0, n1);
  ck_assert_msg(memcmp(before, after, (size_t)n0) == 0, "a readonly open changed the file");
  ck_assert(!has_sidecars(path));
  assert_journal_mode(path, "delete");
  free(before);
  free(after);
}
END_TEST

/* An SQLite file of another program that happens to carry a schema version
 * convtune knows is refused by its tables, before it is switched to WAL or
 * written at all, by readonly and writable opens alike. */
START_TEST(foreign_file_refused_before_wal) {
  char dir[512], path[600], want[64];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "songs.db");
  snprintf(want, sizeof want, "PRAGMA user_version = %d", DB_SCHEMA_VERSION);
  sql(path, "CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('a')");
  sql(path, want);
  long n0 = 0, n1 = 0;
  char *before = slurp(path, &n0);
  for (int readonly = 1; readonly >= 0; readonly--) {
    ct_err err = {0};
    db *d = (db *)1;
    ck_assert_int_eq(db_open(path, readonly, &d, &err), CT_ERR_DB);
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "not a convtune database"), "%s",
                  err.msg);
    char *after = slurp(path, &n1);
    ck_assert_int_eq(n0, n1);
    ck_assert_msg(memcmp(before, after, (size_t)n0) == 0, "refused file modified (readonly %d)",
                  readonly);
    free(after);
    assert_journal_mode(path, "delete");
    ck_assert(!has_sidecars(path));
  }
  free(before);
}
END_TEST

/* ---- writes: all or none, duplicates, uids, two writers ---------------------------------- */

/* Insert a batch of 20 where trial 10 is broken by breaker; expect status
 * and a message naming "trial 10" and field; nothing of the batch lands. */
static void expect_rolled_back(db *d, void (*breaker)(trial *), ct_status want, const char *field) {
  trial t[20];
  for (int i = 0; i < 20; i++) {
    char uid[16];
    snprintf(uid, sizeof uid, "b-%02d", i);
    /* A workload of its own, so that a leaked workload row would show in db_list. */
    make_trial(&t[i], uid, KEY_C, TPL2, VER2, &L40S, OUT_OK, 1.0 + i, (uint64_t)i);
  }
  breaker(&t[10]);
  ct_err err = {0};
  int skipped = -1;
  ct_status st = db_insert_trials(d, t, 20, &skipped, &err);
  ck_assert_msg(st == want, "%s: status %d (%s)", field, st, err.msg);
  ck_assert_msg(strstr(err.msg, "trial 10") && strstr(err.msg, field),
                "message '%s' does not name trial 10 and '%s'", err.msg, field);
  ck_assert_int_eq(count_trials(d, KEY_C), 0);
  db_summary *s = NULL;
  int n = -1;
  ck_assert_int_eq(db_list(d, &s, &n, &err), CT_OK);
  ck_assert_int_eq(n, 1); /* only KEY_A from before */
  free(s);
  free_all(t, 20);
}

static void bad_outcome(trial *t) {
  t->outcome = (outcome)99;
}
static void bad_template(trial *t) {
  t->template_name[0] = '\0';
}
static void bad_key(trial *t) {
  snprintf(t->workload_key, sizeof t->workload_key, "conv2d-nchw-i8.i8.i32-n0-c3");
}
static void bad_median(trial *t) {
  t->median_us = 0;
}
static void bad_sample(trial *t) {
  t->samples_us[1] = NAN;
}
static void bad_config(trial *t) {
  free(t->config_json);
  t->config_json = NULL;
}
static void bad_device(trial *t) {
  t->device.name[0] = '\0';
}
static void bad_uid(trial *t) {
  memset(t->uid, 'x', sizeof t->uid);
}

START_TEST(failed_insert_rolls_back) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial before[5];
  for (int i = 0; i < 5; i++) {
    char uid[16];
    snprintf(uid, sizeof uid, "k-%d", i);
    make_trial(&before[i], uid, KEY_A, TPL, VER, &H200, OUT_OK, 4.0 + i, (uint64_t)i);
  }
  insert(d, before, 5, 0);
  expect_rolled_back(d, bad_outcome, CT_ERR_INVALID_ARG, "outcome: 99");
  expect_rolled_back(d, bad_template, CT_ERR_INVALID_ARG, "template_name");
  expect_rolled_back(d, bad_key, CT_ERR_PARSE, "workload_key"); /* workload_from_key's status */
  expect_rolled_back(d, bad_median, CT_ERR_INVALID_ARG, "median_us");
  expect_rolled_back(d, bad_sample, CT_ERR_INVALID_ARG, "samples_us[1]");
  expect_rolled_back(d, bad_config, CT_ERR_INVALID_ARG, "config_json");
  expect_rolled_back(d, bad_device, CT_ERR_INVALID_ARG, "device.name");
  expect_rolled_back(d, bad_uid, CT_ERR_INVALID_ARG, "uid");
  ck_assert_int_eq(count_trials(d, KEY_A), 5);
  /* The batch itself goes in once repaired. */
  ct_err err = {0};
  ck_assert_int_eq(db_insert_trials(d, before, 0, NULL, &err), CT_OK);
  ck_assert_int_eq(db_insert_trials(d, NULL, 1, NULL, &err), CT_ERR_INVALID_ARG);
  free_all(before, 5);
  db_close(d);
}
END_TEST

START_TEST(duplicate_uids_skipped) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  trial t[8];
  for (int i = 0; i < 8; i++) {
    char uid[16];
    snprintf(uid, sizeof uid, "dup-%d", i);
    make_trial(&t[i], uid, KEY_A, TPL, VER, &H200, OUT_OK, 4.0 + i, (uint64_t)i);
  }
  insert(d, t, 5, 0);
  insert(d, t, 5, 5);
  insert(d, t + 3, 5, 2); /* 3 and 4 are in, 5..7 are new */
  ck_assert_int_eq(count_trials(d, KEY_A), 8);
  /* A uid twice in one batch: the second is skipped. */
  trial twice[2];
  make_trial(&twice[0], "same", KEY_A, TPL, VER, &H200, OUT_OK, 1.0, 0);
  make_trial(&twice[1], "same", KEY_A, TPL, VER, &H200, OUT_OK, 2.0, 1);
  insert(d, twice, 2, 1);
  trial got;
  db_match m;
  ct_err err = {0};
  ck_assert_int_eq(db_best(d, KEY_A, &H200, NULL, NULL, &got, &m, &err), CT_OK);
  assert_same_trial(&twice[0], &got);
  trial_free(&got);
  free_all(twice, 2);
  free_all(t, 8);
  db_close(d);
}
END_TEST

static int cmp_str(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

START_TEST(generated_uids_unique) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "a.db");
  db *d = open_db(path);
  enum { N = 200 };
  trial t[N];
  for (int i = 0; i < N; i++) make_trial(&t[i], "", KEY_A, TPL, VER, &H200, OUT_OK, 4.0, 0);
  insert(d, t, N / 2, 0);
  insert(d, t + N / 2, N / 2, 0);
  trial *got = NULL;
  int n = 0;
  ct_err err = {0};
  ck_assert_int_eq(db_trials(d, KEY_A, NULL, NULL, NULL, &got, &n, &err), CT_OK);
  ck_assert_int_eq(n, N);
  char(*uids)[40] = malloc(sizeof(char[40]) * N);
  ck_assert_ptr_nonnull(uids);
  for (int i = 0; i < n; i++) {
    if (strlen(got[i].uid) != 32 || strspn(got[i].uid, "0123456789abcdef") != 32)
      ck_abort_msg("generated uid '%s' is not 32 hex digits", got[i].uid);
    memcpy(uids[i], got[i].uid, 40);
  }
  qsort(uids, N, sizeof *uids, cmp_str);
  for (int i = 1; i < N; i++)
    if (strcmp(uids[i - 1], uids[i]) == 0) ck_abort_msg("uid %s generated twice", uids[i]);
  free(uids);
  trials_free(got, n);
  free_all(t, N);
  db_close(d);
}
END_TEST

/* A writable open switches a rollback-journal file to WAL even while
 * another process holds the write lock: SQLite does not wait there by
 * itself, so db_open must. */
START_TEST(wal_switch_waits_for_a_writer) {
  char path[600];
  altered_db(path, sizeof path, "rollback.db", "PRAGMA journal_mode = DELETE");
  assert_journal_mode(path, "delete");
  db *d = NULL;
  int locked[2];
  ck_assert_int_eq(pipe(locked), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    /* Hold the write lock for 300 ms, then commit; the commit waits for the
     * parent's read lock of each try like any writer. */
    close(locked[0]);
    sqlite3 *c = NULL;
    if (sqlite3_open(path, &c) != SQLITE_OK || sqlite3_busy_timeout(c, 10000) != SQLITE_OK ||
        sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
      _exit(1);
    if (write(locked[1], "x", 1) != 1) _exit(2);
    sqlite3_sleep(300);
    _exit(sqlite3_exec(c, "COMMIT", NULL, NULL, NULL) == SQLITE_OK && sqlite3_close(c) == SQLITE_OK
              ? 0
              : 3);
  }
  close(locked[1]);
  char byte;
  ck_assert_int_eq(read(locked[0], &byte, 1), 1);
  close(locked[0]);
  ct_err err = {0};
  ct_status st = db_open(path, 0, &d, &err);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(st == CT_OK, "db_open under another's write lock: %s", err.msg);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  db_close(d);
  assert_journal_mode(path, "wal");
}
END_TEST

/* One writer process: wait for the start signal, open, insert the batches
 * with generated uids. Exit 0, or 1 with the error message on fd out. */
static void writer(const char *path, int go, int out, int id) {
  char dummy;
  if (read(go, &dummy, 1) < 0) _exit(2);
  db *d = NULL;
  ct_err err = {0};
  ct_status st = db_open(path, 0, &d, &err);
  trial t[N_WRITER_TRIALS];
  for (int i = 0; i < N_WRITER_TRIALS; i++)
    make_trial(&t[i], "", id ? KEY_A : KEY_B, TPL, VER, &H200, OUT_OK, 1.0 + i, (uint64_t)i);
  for (int b = 0; st == CT_OK && b < N_WRITER_BATCHES; b++) {
    int skipped = -1;
    st = db_insert_trials(d, t, N_WRITER_TRIALS, &skipped, &err);
    if (st == CT_OK && skipped != 0) {
      snprintf(err.msg, sizeof err.msg, "batch %d: %d skipped", b, skipped);
      st = CT_ERR_INTERNAL;
    }
  }
  free_all(t, N_WRITER_TRIALS);
  db_close(d);
  if (st != CT_OK) {
    ssize_t ignored = write(out, err.msg, strlen(err.msg));
    (void)ignored;
    _exit(1);
  }
  _exit(0);
}

/* Two child processes of fn(path, go, out, w), w 0 and 1, released at
 * once (each reads go first), waited for: the number that failed (exit
 * status not 0), and the failures' messages (fn writes them to out) into
 * msg. */
static int run_two(void (*fn)(const char *path, int go, int out, int w), const char *path,
                   char *msg, size_t size) {
  int go[2], out[2];
  ck_assert_int_eq(pipe(go), 0);
  ck_assert_int_eq(pipe(out), 0);
  pid_t pids[2];
  for (int w = 0; w < 2; w++) {
    pids[w] = fork();
    ck_assert_int_ge(pids[w], 0);
    if (pids[w] == 0) {
      close(go[1]);
      close(out[0]);
      fn(path, go[0], out[1], w);
    }
  }
  close(go[0]);
  close(out[1]);
  close(go[1]); /* both start now */
  int failed = 0;
  for (int w = 0; w < 2; w++) {
    int status = 0;
    ck_assert_int_eq(waitpid(pids[w], &status, 0), pids[w]);
    failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  ssize_t n = read(out[0], msg, size - 1);
  msg[n > 0 ? n : 0] = '\0';
  close(out[0]);
  return failed;
}

START_TEST(two_concurrent_writers) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "shared.db");
  /* Both start at once, on a file that does not exist yet: they also race
   * to create the schema. */
  char msg[1024];
  int failed = run_two(writer, path, msg, sizeof msg);
  ck_assert_msg(!failed, "a writer failed: %s", msg);

  db *d = open_db(path);
  ck_assert_int_eq(count_trials(d, KEY_A), N_WRITER_BATCHES * N_WRITER_TRIALS);
  ck_assert_int_eq(count_trials(d, KEY_B), N_WRITER_BATCHES * N_WRITER_TRIALS);
  db_close(d);
}
END_TEST

/* The clock the waits below are measured with, in ms. */
static double mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Whether some connection holds path's write lock: a BEGIN IMMEDIATE that
 * does not wait fails busy. */
static int write_locked(const char *path) {
  sqlite3 *c = NULL;
  int busy = 0;
  if (sqlite3_open(path, &c) == SQLITE_OK) {
    int rc = sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    busy = rc == SQLITE_BUSY;
    if (rc == SQLITE_OK) sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
  }
  sqlite3_close(c);
  return busy;
}

#define N_LONG_TRIALS 60000
/* Tries at catching the long insert mid-way (below). */
#define N_LONG_TRIES 4

/* The long insert's end: the time its child reported on fd, once the child
 * has exited successfully. */
static double long_insert_end(int fd, pid_t pid) {
  double long_end = 0;
  ck_assert_int_eq(read(fd, &long_end, sizeof long_end), (ssize_t)sizeof long_end);
  close(fd);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the long insert failed");
  return long_end;
}

/* A long insert commits in bounded batches and lets a waiting writer in
 * between them: the short insert finishes while the long one still runs
 * (before, it waited for the whole of it, and failed after 10 s). The long
 * insert takes a few hundred ms: on a loaded machine it can start and end
 * while this process is not scheduled, and then nothing can be judged, so
 * a try that never sees it holding the lock before it reports its end is
 * made again on a fresh database (N_LONG_TRIES in all). */
START_TEST(long_insert_lets_a_waiting_writer_in) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  for (int attempt = 0;; attempt++) {
    char name[32];
    snprintf(name, sizeof name, "long-%d.db", attempt);
    path_in(path, sizeof path, dir, name);
    db_close(open_db(path));
    int done[2];
    ck_assert_int_eq(pipe(done), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      close(done[0]);
      /* N_LONG_TRIALS shallow copies of one trial: their uids are generated. */
      trial one, *many = malloc(N_LONG_TRIALS * sizeof *many);
      make_trial(&one, "", KEY_A, TPL, VER, &H200, OUT_OK, 1.0, 1);
      for (int i = 0; many && i < N_LONG_TRIALS; i++) many[i] = one;
      db *d = NULL;
      ct_err err = {0};
      int ok = many && db_open(path, 0, &d, &err) == CT_OK &&
               db_insert_trials(d, many, N_LONG_TRIALS, NULL, &err) == CT_OK;
      double end = mono_ms();
      if (write(done[1], &end, sizeof end) != sizeof end) _exit(2);
      db_close(d);
      _exit(ok ? 0 : 1);
    }
    close(done[1]);
    /* until the lock is seen, the child reports its end, or 10 s */
    double t0 = mono_ms();
    int locked = 0, ended = 0;
    while (!(locked = write_locked(path)) && mono_ms() - t0 < 10000) {
      struct pollfd pf = {done[0], POLLIN, 0};
      if ((ended = poll(&pf, 1, 0) > 0)) break;
      sqlite3_sleep(1);
    }
    if (!locked) {
      (void)long_insert_end(done[0], pid);
      ck_assert_msg(ended && attempt + 1 < N_LONG_TRIES,
                    "the long insert was never seen holding the lock (%d tries)", attempt + 1);
      continue; /* it ran and ended unseen: try again */
    }
    trial t;
    make_trial(&t, "short-1", KEY_B, TPL, VER, &H200, OUT_OK, 2.0, 2);
    db *d = open_db(path);
    ct_err err = {0};
    double start = mono_ms();
    ck_assert_msg(db_insert_trials(d, &t, 1, NULL, &err) == CT_OK, "%s", err.msg);
    double end = mono_ms(), long_end = long_insert_end(done[0], pid);
    ck_assert_msg(end < long_end,
                  "the short insert waited %.0f ms, until %.0f ms after the long one", end - start,
                  end - long_end);
    ck_assert_int_eq(count_trials(d, KEY_A), N_LONG_TRIALS);
    ck_assert_int_eq(count_trials(d, KEY_B), 1);
    db_close(d);
    trial_free(&t);
    break;
  }
}
END_TEST

/* A writer that holds the lock and commits nothing (hung) fails a waiting
 * one after the stall limit, with a message that names the database and
 * says why. */
START_TEST(hung_writer_fails_a_waiting_one_with_a_reason) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  path_in(path, sizeof path, dir, "hung.db");
  db_close(open_db(path));
  int held[2];
  ck_assert_int_eq(pipe(held), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(held[0]);
    sqlite3 *c = NULL;
    if (sqlite3_open(path, &c) != SQLITE_OK ||
        sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
      _exit(1);
    if (write(held[1], "x", 1) != 1) _exit(2);
    sqlite3_sleep(30000); /* killed before */
    _exit(0);
  }
  close(held[1]);
  char byte;
  ck_assert_int_eq(read(held[0], &byte, 1), 1);
  close(held[0]);
  trial t;
  make_trial(&t, "w-1", KEY_A, TPL, VER, &H200, OUT_OK, 2.0, 1);
  db *d = open_db(path);
  ct_err err = {0};
  double start = mono_ms();
  ct_status st = db_insert_trials(d, &t, 1, NULL, &err);
  double waited = mono_ms() - start;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  ck_assert_int_eq(st, CT_ERR_DB);
  ck_assert_msg(waited >= 9000 && waited < 20000, "gave up after %.0f ms", waited);
  char want[700];
  snprintf(want, sizeof want, "database %s: ", path);
  ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
  ck_assert_msg(strstr(err.msg, "another writer held the lock for 10 s without committing"), "%s",
                err.msg);
  db_close(d);
  trial_free(&t);
}
END_TEST

/* ---- main ------------------------------------------------------------------------------ */

static void add_records(TCase *tc) {
  tcase_add_test(tc, outcome_names_round_trip);
  tcase_add_test(tc, json_round_trip_exact);
  tcase_add_test(tc, json_rejects_name_the_field);
}

static void add_queries(TCase *tc) {
  tcase_add_test(tc, insert_best_round_trip);
  tcase_add_test(tc, best_lowest_ok_ignores_failures);
  tcase_add_test(tc, best_falls_back_to_same_cc);
  tcase_add_test(tc, best_template_filter);
  tcase_add_test(tc, best_retired_skips_the_current_version);
  tcase_add_test(tc, trials_order_and_filters);
  tcase_add_test(tc, trials_other_excludes_the_workload);
  tcase_add_test(tc, kernel_cache_store_load_replace);
  tcase_add_test(tc, list_summaries);
}

static void add_picks(TCase *tc) {
  tcase_add_test(tc, picks_set_get_replace_clear);
  tcase_add_test(tc, picks_per_device_name_and_cc);
  tcase_add_test(tc, picks_refused_write_nothing);
  tcase_add_test(tc, picks_readonly_refused);
  tcase_add_test(tc, picks_list);
  tcase_add_test(tc, picks_malformed_row_skipped);
  tcase_add_test(tc, picks_export_import);
  tcase_add_test(tc, picks_import_newest_wins);
  tcase_add_test(tc, picks_import_refused);
}

static void add_exchange(TCase *tc) {
  tcase_add_test(tc, export_import_identical);
  tcase_add_test(tc, negative_zero_reads_as_zero);
  tcase_add_test(tc, import_twice_is_idempotent);
  tcase_add_test(tc, import_bad_line_imports_nothing);
  tcase_add_test(tc, import_uid_conflict_refused);
  tcase_add_test(tc, malformed_row_costs_the_row);
  tcase_add_test(tc, malformed_row_costs_best_and_list_that_row);
}

static void add_files(TCase *tc) {
  tcase_add_test(tc, reopen_persists);
  tcase_add_test(tc, older_schema_migrates);
  tcase_add_test(tc, schema_2_migrates_to_picks);
  tcase_add_test(tc, newer_schema_refused_unchanged);
  tcase_add_test(tc, not_a_database_refused);
  tcase_add_test(tc, readonly_missing_and_no_writes);
  tcase_add_test(tc, readonly_open_leaves_no_files);
  tcase_add_test(tc, readonly_folder_is_readable);
  tcase_add_test(tc, readonly_refuses_empty_and_old_unchanged);
  tcase_add_test(tc, foreign_file_refused_before_wal);
}

/* Two processes creating one new database at once, many times over: no
 * open is refused. Each reads the file's schema version, then checks its
 * objects; the other one's migration committed between those two reads
 * once in about 300 opens, and the fresh database was refused as "schema
 * version 0 but 12 objects in it" (both are read in one transaction now). */
/* One process that opens (creating) the database once: exit 0, or 1 with
 * the error message on fd out. */
static void creator(const char *path, int go, int out, int id) {
  (void)id;
  char dummy;
  if (read(go, &dummy, 1) < 0) _exit(2);
  db *d = NULL;
  ct_err err = {0};
  if (db_open(path, 0, &d, &err) != CT_OK) {
    ssize_t ignored = write(out, err.msg, strlen(err.msg));
    (void)ignored;
    _exit(1);
  }
  db_close(d);
  _exit(0);
}

START_TEST(concurrent_creators_never_refused) {
  char dir[512];
  scratch(dir, sizeof dir);
  /* the sanitizer build forks slowly (6 s for 500 pairs idle, 18 s and more
   * under CI's load, past the case's timeout once): it runs 150 pairs, the
   * normal build all 500 */
  int pairs = test_quick() ? 150 : 500, refused = 0;
  char first[1024] = "", msg[1024];
  for (int i = 0; i < pairs; i++) {
    char path[600], name[32];
    snprintf(name, sizeof name, "%d.db", i);
    path_in(path, sizeof path, dir, name);
    int n = run_two(creator, path, msg, sizeof msg);
    if (n && !refused) snprintf(first, sizeof first, "%s", msg);
    refused += n;
  }
  ck_assert_msg(refused == 0, "%d of %d opens refused, the first: %s", refused, 2 * pairs, first);
}
END_TEST

static void add_writes(TCase *tc) {
  tcase_add_test(tc, failed_insert_rolls_back);
  tcase_add_test(tc, failed_write_names_the_database);
  tcase_add_test(tc, duplicate_uids_skipped);
  tcase_add_test(tc, generated_uids_unique);
  tcase_add_test(tc, two_concurrent_writers);
  tcase_add_test(tc, concurrent_creators_never_refused);
  tcase_add_test(tc, long_insert_lets_a_waiting_writer_in);
  tcase_add_test(tc, hung_writer_fails_a_waiting_one_with_a_reason);
  tcase_add_test(tc, wal_switch_waits_for_a_writer);
}

static const test_case suite_cases[] = {
    {"records", -1, add_records},
    {"queries", -1, add_queries},
    {"picks", -1, add_picks},
    {"exchange", -1, add_exchange},
    {"files", -1, add_files},
    {"writes", 60, add_writes},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"db", suite_cases, 0, NULL};
  return test_main(&suite);
}
