/*
 * test_dispatch.c: the dispatch library without a GPU (resolve/resolve.c,
 * dispatch/dispatch.c): the lookup and fallback order on databases made
 * here, the heuristic default, the workload distance, every bad-argument
 * path of the public calls, silence, and concurrent ct_explain.
 *
 * Databases are built with db_insert_trials from real configs: sampled in
 * the current template's space of the packed workload, valid on sm_80,
 * sm_89 and sm_90, stored as the tuner stores them (JSON of the config,
 * options joined by spaces). test_main (tests/util.h) makes one
 * mkdtemp folder for the run; each test makes its own inside it (scratch),
 * and it goes after the run. Loops call Check only on a mismatch.
 * Everything is freed: the suite also runs under ASan/LSan.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <sqlite3.h>

#include "convtune/convtune.h"
#include "core/pack.h"
#include "core/wlset.h"
#include "db/db.h"
#include "resolve/resolve.h"
#include "tests/util.h"

#define TPL2D   "conv2d_nchw4c_dp4a"
#define MMA2D   "conv2d_nchw4c_mma" /* registered first: the default's template on sm_80+ */
#define VER_OLD "0000000000000000"

/* 9.0 twice (exact, then the same-CC fallback), 8.0 (neither) and an 8.9
 * device whose records must never serve 9.0 or 8.0. */
static const db_device H200 = {"NVIDIA H200", 9, 0, 132, 13000, 13000, "13.0"};
static const db_device H100 = {"NVIDIA H100 80GB HBM3", 9, 0, 132, 12080, 12080, "12.8"};
static const db_device A100 = {"NVIDIA A100-SXM4-80GB", 8, 0, 108, 13000, 13000, "13.0"};
static const db_device L40S = {"NVIDIA L40S", 8, 9, 142, 13000, 13000, "13.0"};

/* ---- helpers ----------------------------------------------------------------- */

/* The template whose trials put_trial writes (TPL2D unless a test says). */
static const char *put_tpl = TPL2D;

static const template_desc *tpl2d(void) {
  const template_desc *t = template_find(put_tpl);
  ck_assert_ptr_nonnull(t);
  return t;
}

static arch arch_named(const char *name) {
  arch a;
  ck_assert_int_eq(arch_from_name(name, &a, NULL), CT_OK);
  return a;
}

/* A packed conv2d: square input, kernel, stride, padding and dilation. */
static ct_workload wl2d(int n, int c, int k, int size, int ker, int stride, int pad, int dil) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NCHW4C;
  w.n = n, w.c = c, w.k = k;
  for (int d = 0; d < 2; d++) {
    w.in[d] = size;
    w.kernel[d] = ker;
    w.stride[d] = stride;
    w.pad_before[d] = w.pad_after[d] = pad;
    w.dilation[d] = dil;
  }
  ck_assert_int_eq(workload_validate(&w, NULL), CT_OK);
  return w;
}

/* The key records carry: the packed workload's. */
static void packed_key(const ct_workload *w, char key[CT_KEY_MAX]) {
  ct_workload pw;
  workload_packed(w, &pw);
  workload_key(&pw, key, CT_KEY_MAX);
}

/* The whole file, owned (free); NULL when it does not exist. */
static char *slurp(const char *path, long *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  ck_assert_int_ge(n, 0);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(buf);
  ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *size = n;
  return buf;
}

static int file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* A config of w's packed space, valid on sm_80, sm_89 and sm_90 (so that
 * every device of these tests could run it), drawn from seed; its compact
 * JSON (as the tuner stores it) into json and the instance options joined
 * by spaces into *options (owned). */
static void sample_config(const ct_workload *w, uint64_t seed, config *cfg, char *json, size_t size,
                          char **options, uint64_t *index) {
  const template_desc *t = tpl2d();
  ct_workload pw;
  workload_packed(w, &pw);
  space s;
  space_init(&s);
  ck_assert_int_eq(template_space(t, &pw, &s, NULL), CT_OK);
  arch a90 = arch_named("sm_90"), a89 = arch_named("sm_89"), a80 = arch_named("sm_80");
  rng r;
  rng_seed(&r, seed);
  int ok = 0;
  for (int i = 0; i < 1000 && !ok; i++) {
    ck_assert_int_eq(template_sample(t, &pw, &s, &a90, &r, 100000, cfg, NULL), CT_OK);
    ok = t->valid(&pw, &s, cfg, &a89, NULL) && t->valid(&pw, &s, cfg, &a80, NULL);
  }
  ck_assert_msg(ok, "no config valid on sm_80, sm_89 and sm_90 (seed %llu)",
                (unsigned long long)seed);
  cJSON *j = space_config_to_json(&s, cfg);
  char *text = cJSON_PrintUnformatted(j);
  ck_assert_ptr_nonnull(text);
  ck_assert_uint_lt(strlen(text), size);
  snprintf(json, size, "%s", text);
  free(text);
  cJSON_Delete(j);
  instance inst;
  ck_assert_int_eq(instance_make(t, &pw, &s, cfg, &a90, &inst, NULL), CT_OK);
  size_t len = 1;
  for (int i = 0; i < inst.n_options; i++) len += strlen(inst.options[i]) + 1;
  char *p = *options = malloc(len);
  ck_assert_ptr_nonnull(p);
  for (int i = 0; i < inst.n_options; i++) p += sprintf(p, i ? " %s" : "%s", inst.options[i]);
  *p = '\0';
  *index = space_index(&s, cfg);
  space_free(&s);
}

/* Insert one trial of w (config drawn from seed) as the tuner writes it;
 * its config JSON into json (at least 1024 bytes) when json is not NULL. */
static void put_trial(db *d, const char *uid, const ct_workload *w, const char *version,
                      const db_device *dev, outcome oc, double median_us, uint64_t seed,
                      char *json) {
  trial t;
  memset(&t, 0, sizeof t);
  char cfg_json[1024];
  config cfg;
  sample_config(w, seed, &cfg, cfg_json, sizeof cfg_json, &t.options, &t.config_index);
  if (json) snprintf(json, 1024, "%s", cfg_json);
  snprintf(t.uid, sizeof t.uid, "%s", uid);
  packed_key(w, t.workload_key);
  snprintf(t.template_name, sizeof t.template_name, "%s", put_tpl);
  snprintf(t.template_version, sizeof t.template_version, "%s",
           version ? version : template_version(tpl2d()));
  t.config_json = strdup(cfg_json);
  ck_assert_ptr_nonnull(t.config_json);
  t.outcome = oc;
  t.error = oc == OUT_OK ? NULL : strdup("planted failure");
  t.median_us = median_us;
  t.n_samples = 3;
  t.samples_us = malloc(3 * sizeof *t.samples_us);
  ck_assert_ptr_nonnull(t.samples_us);
  for (int i = 0; i < 3; i++) t.samples_us[i] = median_us * (0.99 + 0.01 * i);
  t.compile_ms = 120.5;
  snprintf(t.arch, sizeof t.arch, "sm_%d%d", dev->cc_major, dev->cc_minor);
  snprintf(t.tuner, sizeof t.tuner, "random");
  snprintf(t.session, sizeof t.session, "test-dispatch");
  t.timestamp = 1767225600.0 + (double)seed;
  t.device = *dev;
  ct_err err = {0};
  ck_assert_msg(db_insert_trials(d, &t, 1, NULL, &err) == CT_OK, "insert %s: %s", uid, err.msg);
  trial_free(&t);
}

/* The workloads of the lookup tests. T is never tuned. A, B and N2 are
 * tuned neighbours of T: A and B have T's loop extents (N, K/4, the 16x16
 * output, C/4, the 3x3 kernel), so their configs are valid for T; N2 is the
 * nearest (batch 2) but its tile_n splits 2, not T's 1. */
typedef struct fixture {
  char dir[512], path[600];
  ct_workload w1;  /* tuned on the H200 (and an L40S) */
  ct_workload t;   /* untuned: n1 c16 k16 16x16 r3 s1 p1 */
  ct_workload a;   /* 18x18, no padding: distance about 2.3 */
  ct_workload b;   /* 32x32, stride 2: distance about 10 */
  ct_workload n2;  /* T with batch 2: distance 1 */
  ct_workload old; /* records of an old template version only */
  char w1_best[1024], w1_l40s[1024], a_best[1024], b_best[1024];
  char w1_old[1024], old_best[1024]; /* the old version's records */
} fixture;

enum { WITH_A = 1, WITH_B = 2, WITH_N2 = 4, WITH_ALL = 7 };

static void build_db(fixture *f, int which) {
  memset(f, 0, sizeof *f);
  scratch(f->dir, sizeof f->dir);
  snprintf(f->path, sizeof f->path, "%s/tuned.db", f->dir);
  f->w1 = wl2d(1, 64, 64, 28, 3, 1, 1, 1);
  f->t = wl2d(1, 16, 16, 16, 3, 1, 1, 1);
  f->a = wl2d(1, 16, 16, 18, 3, 1, 0, 1);
  f->b = wl2d(1, 16, 16, 32, 3, 2, 1, 1);
  f->n2 = wl2d(2, 16, 16, 16, 3, 1, 1, 1);
  f->old = wl2d(1, 32, 32, 8, 1, 1, 0, 1);
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(f->path, 0, &d, &err) == CT_OK, "%s", err.msg);
  /* W1 on the H200: the best OK is 5 us; a failure and an old version
   * measured faster must both be ignored. */
  put_trial(d, "w1-1", &f->w1, NULL, &H200, OUT_OK, 10.0, 1, NULL);
  put_trial(d, "w1-2", &f->w1, NULL, &H200, OUT_OK, 5.0, 2, f->w1_best);
  put_trial(d, "w1-3", &f->w1, NULL, &H200, OUT_WRONG_ANSWER, 1.0, 3, NULL);
  put_trial(d, "w1-4", &f->w1, NULL, &H200, OUT_RUNTIME_ERROR, 0.0, 4, NULL);
  put_trial(d, "w1-5", &f->w1, VER_OLD, &H200, OUT_OK, 0.5, 5, f->w1_old);
  put_trial(d, "w1-6", &f->w1, NULL, &L40S, OUT_OK, 0.25, 6, f->w1_l40s);
  if (which & WITH_A) {
    put_trial(d, "a-1", &f->a, NULL, &H200, OUT_OK, 20.0, 11, NULL);
    put_trial(d, "a-2", &f->a, NULL, &H200, OUT_OK, 7.0, 12, f->a_best);
  }
  if (which & WITH_B) put_trial(d, "b-1", &f->b, NULL, &H200, OUT_OK, 3.0, 21, f->b_best);
  if (which & WITH_N2) put_trial(d, "n2-1", &f->n2, NULL, &H200, OUT_OK, 1.0, 31, NULL);
  put_trial(d, "old-1", &f->old, VER_OLD, &H200, OUT_OK, 2.0, 41, f->old_best);
  db_close(d);
}

/* Resolve w on dev (limits of arch_name) in the database at path (NULL: none). */
static void resolve_on(const char *path, const db_device *dev, const char *arch_name,
                       const ct_workload *w, resolution *r) {
  db *d = NULL;
  ct_err err = {0};
  if (path) ck_assert_msg(db_open(path, 1, &d, &err) == CT_OK, "%s", err.msg);
  arch a = arch_named(arch_name);
  ct_status st = resolve(d, dev, &a, w, r, &err);
  db_close(d);
  ck_assert_msg(st == CT_OK, "resolve: %s", err.msg);
}

/* Check a record-backed explanation: source, config, time, key, device. */
static void expect_record(const ct_explanation *ex, ct_source source, const char *cfg_json,
                          double us, const ct_workload *tuned, const char *device) {
  char key[CT_KEY_MAX];
  packed_key(tuned, key);
  ck_assert_int_eq(ex->source, source);
  ck_assert_str_eq(ex->template_name, TPL2D);
  ck_assert_str_eq(ex->config, cfg_json);
  ck_assert_double_eq(ex->measured_us, us);
  ck_assert_str_eq(ex->tuned_key, key);
  ck_assert_str_eq(ex->device, device);
  ck_assert_int_gt((int)strlen(ex->reason), 0);
}

static void expect_default(const ct_explanation *ex) {
  ck_assert_int_eq(ex->source, CT_SOURCE_DEFAULT);
  ck_assert_str_eq(ex->template_name, MMA2D);
  ck_assert_str_eq(ex->tuned_key, "");
  ck_assert_str_eq(ex->device, "");
  ck_assert_double_eq(ex->measured_us, 0.0);
  ck_assert_int_gt((int)strlen(ex->config), 2);
  ck_assert_int_gt((int)strlen(ex->reason), 0);
}

/* r's config is valid for its packed workload on arch_name. */
static void expect_valid(const resolution *r, const char *arch_name) {
  arch a = arch_named(arch_name);
  char why[TEMPLATE_WHY_MAX] = "";
  ck_assert_msg(r->tpl->valid(&r->pw, &r->s, &r->cfg, &a, why), "config not valid: %s", why);
}

/* ---- lookup and fallback ------------------------------------------------------- */

START_TEST(exact_then_same_cc_then_neither) {
  fixture f;
  build_db(&f, WITH_ALL);
  resolution r;

  resolve_on(f.path, &H200, "sm_90", &f.w1, &r);
  expect_record(&r.ex, CT_SOURCE_EXACT, f.w1_best, 5.0, &f.w1, H200.name);
  ck_assert_str_eq(r.rec.template_version, template_version(tpl2d()));
  ck_assert_int_eq(r.rec.outcome, OUT_OK);
  expect_valid(&r, "sm_90");
  resolution_free(&r);

  /* The plain layout resolves through the packed workload's records. */
  ct_workload plain = f.w1;
  plain.layout = CT_LAYOUT_NCHW;
  resolve_on(f.path, &H200, "sm_90", &plain, &r);
  expect_record(&r.ex, CT_SOURCE_EXACT, f.w1_best, 5.0, &f.w1, H200.name);
  ck_assert_int_eq(r.pw.layout, CT_LAYOUT_NCHW4C);
  resolution_free(&r);

  resolve_on(f.path, &H100, "sm_90", &f.w1, &r);
  expect_record(&r.ex, CT_SOURCE_SAME_CC, f.w1_best, 5.0, &f.w1, H200.name);
  resolution_free(&r);

  /* 8.0: no record of this capability (the 8.9 one does not count). */
  resolve_on(f.path, &A100, "sm_80", &f.w1, &r);
  expect_default(&r.ex);
  expect_valid(&r, "sm_80");
  resolution_free(&r);

  /* The 8.9 record serves 8.9 only. */
  resolve_on(f.path, &L40S, "sm_89", &f.w1, &r);
  expect_record(&r.ex, CT_SOURCE_EXACT, f.w1_l40s, 0.25, &f.w1, L40S.name);
  resolution_free(&r);
}
END_TEST

/* Both templates tuned for one workload: the faster one serves it, and the
 * explanation names it; without records on this device both fall back to
 * the same compute capability and compare there. */
static void fastest_case(double dp4a_us, double mma_us, const char *want) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/two.db", dir);
  ct_workload w = wl2d(1, 64, 64, 28, 3, 1, 1, 1);
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(path, 0, &d, &err) == CT_OK, "%s", err.msg);
  put_tpl = TPL2D;
  put_trial(d, "dp4a-1", &w, NULL, &H200, OUT_OK, dp4a_us, 1, NULL);
  put_tpl = MMA2D;
  put_trial(d, "mma-1", &w, NULL, &H200, OUT_OK, mma_us, 2, NULL);
  put_trial(d, "mma-2", &w, NULL, &H200, OUT_WRONG_ANSWER, 0.1, 3, NULL); /* never counts */
  put_tpl = TPL2D;
  db_close(d);
  resolution r;
  resolve_on(path, &H200, "sm_90", &w, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_EXACT);
  ck_assert_str_eq(r.ex.template_name, want);
  ck_assert_str_eq(r.tpl->name, want);
  ck_assert_double_eq(r.ex.measured_us, strcmp(want, MMA2D) ? dp4a_us : mma_us);
  ck_assert_ptr_nonnull(strstr(r.ex.reason, "fastest of 2 templates"));
  expect_valid(&r, "sm_90");
  resolution_free(&r);
  resolve_on(path, &H100, "sm_90", &w, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_SAME_CC);
  ck_assert_str_eq(r.ex.template_name, want);
  resolution_free(&r);
  /* untuned batch 2: both templates' nearest is w, at the same distance */
  ct_workload w2 = wl2d(2, 64, 64, 28, 3, 1, 1, 1);
  resolve_on(path, &H200, "sm_90", &w2, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_NEAREST);
  ck_assert_str_eq(r.ex.template_name, want);
  expect_valid(&r, "sm_90");
  resolution_free(&r);
}

START_TEST(the_fastest_template_serves_a_workload) {
  fastest_case(5.0, 3.0, MMA2D);
  fastest_case(5.0, 8.0, TPL2D);
}
END_TEST

/* Set (or with uid NULL clear) W1's pick on dev. */
static void pick_w1(const fixture *f, const db_device *dev, const char *uid, double when) {
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(f->path, 0, &d, &err) == CT_OK, "%s", err.msg);
  char key[CT_KEY_MAX];
  packed_key(&f->w1, key);
  const char *keys[1] = {key};
  db_pick p;
  memset(&p, 0, sizeof p);
  snprintf(p.workload_key, sizeof p.workload_key, "%s", key);
  snprintf(p.trial_uid, sizeof p.trial_uid, "%s", uid ? uid : "");
  p.chain_us = 250.5;
  p.base_us = 260.25;
  snprintf(p.model, sizeof p.model, "net.onnx, batch 1");
  snprintf(p.session, sizeof p.session, "test");
  p.timestamp = when;
  ck_assert_msg(db_set_picks(d, dev, keys, 1, &p, uid ? 1 : 0, &err) == CT_OK, "%s", err.msg);
  db_close(d);
}

/* A chain's pick serves its workload first, on its device (name and
 * compute capability) only, under the current template version only, and
 * until a faster record of the workload arrives after it. */
START_TEST(chain_pick_serves_first) {
  fixture f;
  build_db(&f, WITH_ALL);
  char w1_slow[1024], *options = NULL;
  config cfg;
  uint64_t index;
  sample_config(&f.w1, 1, &cfg, w1_slow, sizeof w1_slow, &options, &index); /* w1-1's */
  free(options);
  pick_w1(&f, &H200, "w1-1", 1767225600.0 + 100);
  resolution r;
  resolve_on(f.path, &H200, "sm_90", &f.w1, &r);
  expect_record(&r.ex, CT_SOURCE_CHAIN, w1_slow, 10.0, &f.w1, H200.name);
  ck_assert_ptr_nonnull(strstr(r.ex.reason, "net.onnx, batch 1: 250.5 us, 260.2"));
  expect_valid(&r, "sm_90");
  resolution_free(&r);
  /* the plain layout, as the packed chain ran it */
  ct_workload plain = f.w1;
  plain.layout = CT_LAYOUT_NCHW;
  resolve_on(f.path, &H200, "sm_90", &plain, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_CHAIN);
  resolution_free(&r);
  /* another device of the same capability: its records, not the pick */
  resolve_on(f.path, &H100, "sm_90", &f.w1, &r);
  expect_record(&r.ex, CT_SOURCE_SAME_CC, f.w1_best, 5.0, &f.w1, H200.name);
  resolution_free(&r);
  /* a pick of a retired version's trial is not served */
  pick_w1(&f, &H200, "w1-5", 1767225600.0 + 100);
  resolve_on(f.path, &H200, "sm_90", &f.w1, &r);
  expect_record(&r.ex, CT_SOURCE_EXACT, f.w1_best, 5.0, &f.w1, H200.name);
  resolution_free(&r);
  /* a faster record after the pick serves instead; one before it does not */
  pick_w1(&f, &H200, "w1-1", 1767225600.0 + 100);
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(f.path, 0, &d, &err) == CT_OK, "%s", err.msg);
  char early[1024], late[1024];
  put_trial(d, "w1-7", &f.w1, NULL, &H200, OUT_OK, 4.0, 50, early); /* at +50: before */
  db_close(d);
  resolve_on(f.path, &H200, "sm_90", &f.w1, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_CHAIN);
  ck_assert_str_eq(r.ex.config, w1_slow);
  resolution_free(&r);
  ck_assert_msg(db_open(f.path, 0, &d, &err) == CT_OK, "%s", err.msg);
  put_trial(d, "w1-8", &f.w1, NULL, &H200, OUT_OK, 3.0, 200, late); /* at +200: after */
  db_close(d);
  resolve_on(f.path, &H200, "sm_90", &f.w1, &r);
  expect_record(&r.ex, CT_SOURCE_EXACT, late, 3.0, &f.w1, H200.name);
  resolution_free(&r);
  /* cleared: the records again */
  pick_w1(&f, &H200, NULL, 0);
  resolve_on(f.path, &H200, "sm_90", &f.w1, &r);
  expect_record(&r.ex, CT_SOURCE_EXACT, late, 3.0, &f.w1, H200.name);
  resolution_free(&r);
  (void)early;
}
END_TEST

START_TEST(old_template_version_ignored) {
  fixture f;
  build_db(&f, WITH_ALL);
  resolution r;
  /* Its only record is of an old version, and no tuned workload has its
   * extents: the default, not the old record. */
  resolve_on(f.path, &H200, "sm_90", &f.old, &r);
  expect_default(&r.ex);
  resolution_free(&r);
  /* W1's old-version record (0.5 us) loses to the current 5 us one. */
  resolve_on(f.path, &H200, "sm_90", &f.w1, &r);
  ck_assert_double_eq(r.ex.measured_us, 5.0);
  resolution_free(&r);
}
END_TEST

START_TEST(nearest_valid_candidate) {
  fixture f;
  build_db(&f, WITH_ALL);
  /* The test means something only with N2 < A < B. */
  double dn2 = resolve_distance(&f.t, &f.n2), da = resolve_distance(&f.t, &f.a),
         db_ = resolve_distance(&f.t, &f.b);
  ck_assert_msg(dn2 < da && da < db_, "distances N2 %g, A %g, B %g", dn2, da, db_);

  /* N2 is nearest but its config does not fit T; A is the nearer valid
   * one (B is faster, which must not matter). */
  resolution r;
  resolve_on(f.path, &H200, "sm_90", &f.t, &r);
  expect_record(&r.ex, CT_SOURCE_NEAREST, f.a_best, 7.0, &f.a, H200.name);
  expect_valid(&r, "sm_90");
  ck_assert_ptr_nonnull(strstr(r.ex.reason, "nearest"));
  resolution_free(&r);

  /* Same capability: the H200's records serve an H100 as well. */
  resolve_on(f.path, &H100, "sm_90", &f.t, &r);
  expect_record(&r.ex, CT_SOURCE_NEAREST, f.a_best, 7.0, &f.a, H200.name);
  resolution_free(&r);

  /* No record of 8.0 at all: the default. */
  resolve_on(f.path, &A100, "sm_80", &f.t, &r);
  expect_default(&r.ex);
  resolution_free(&r);
}
END_TEST

START_TEST(nearest_falls_through_invalid_candidates) {
  fixture f;
  build_db(&f, WITH_B | WITH_N2);
  resolution r;
  resolve_on(f.path, &H200, "sm_90", &f.t, &r);
  expect_record(&r.ex, CT_SOURCE_NEAREST, f.b_best, 3.0, &f.b, H200.name);
  expect_valid(&r, "sm_90");
  resolution_free(&r);
}
END_TEST

/* The index of config JSON json in w's packed space. */
static uint64_t json_index(const ct_workload *w, const char *json) {
  ct_workload pw;
  workload_packed(w, &pw);
  space s;
  space_init(&s);
  ck_assert_int_eq(template_space(tpl2d(), &pw, &s, NULL), CT_OK);
  cJSON *j = cJSON_Parse(json);
  config c;
  ck_assert_int_eq(space_config_from_json(&s, j, &c, NULL), CT_OK);
  cJSON_Delete(j);
  const uint64_t idx = space_index(&s, &c);
  space_free(&s);
  return idx;
}

/* resolve_retired, the tuner's first trial after a template change: the
 * workload's own best record under another version (w1's at 0.5 us, not
 * its current 5.0), this device's or its compute capability's; none for
 * a workload without one, on another compute capability, or without a
 * database. The dispatch itself never takes it. */
START_TEST(retired_best_for_the_tuner) {
  fixture f;
  build_db(&f, WITH_ALL);
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(f.path, 1, &d, &err) == CT_OK, "%s", err.msg);
  arch a = arch_named("sm_90");
  ct_workload pw;
  config cfg;
  int found = -1;
  workload_packed(&f.w1, &pw);
  ck_assert_int_eq(resolve_retired(d, &H200, &a, tpl2d(), &pw, &cfg, &found, &err), CT_OK);
  ck_assert_int_eq(found, 1);
  space s;
  space_init(&s);
  ck_assert_int_eq(template_space(tpl2d(), &pw, &s, NULL), CT_OK);
  ck_assert(space_index(&s, &cfg) == json_index(&f.w1, f.w1_old));
  ck_assert(json_index(&f.w1, f.w1_old) != json_index(&f.w1, f.w1_best)); /* not the current best */
  space_free(&s);
  /* the H100 shares the H200's compute capability */
  ck_assert_int_eq(resolve_retired(d, &H100, &a, tpl2d(), &pw, &cfg, &found, &err), CT_OK);
  ck_assert_int_eq(found, 1);
  arch a80 = arch_named("sm_80");
  ck_assert_int_eq(resolve_retired(d, &A100, &a80, tpl2d(), &pw, &cfg, &found, &err), CT_OK);
  ck_assert_int_eq(found, 0);
  /* a workload with old records only */
  workload_packed(&f.old, &pw);
  ck_assert_int_eq(resolve_retired(d, &H200, &a, tpl2d(), &pw, &cfg, &found, &err), CT_OK);
  ck_assert_int_eq(found, 1);
  space_init(&s);
  ck_assert_int_eq(template_space(tpl2d(), &pw, &s, NULL), CT_OK);
  ck_assert(space_index(&s, &cfg) == json_index(&f.old, f.old_best));
  space_free(&s);
  /* never tuned */
  workload_packed(&f.t, &pw);
  ck_assert_int_eq(resolve_retired(d, &H200, &a, tpl2d(), &pw, &cfg, &found, &err), CT_OK);
  ck_assert_int_eq(found, 0);
  db_close(d);
  ck_assert_int_eq(resolve_retired(NULL, &H200, &a, tpl2d(), &pw, &cfg, &found, &err), CT_OK);
  ck_assert_int_eq(found, 0);
  /* the dispatch serves the old workload by nothing of its own */
  resolution r;
  resolve_on(f.path, &H200, "sm_90", &f.old, &r);
  ck_assert_int_ne(r.ex.source, CT_SOURCE_EXACT);
  resolution_free(&r);
}
END_TEST

/* resolve_nearest, the tuner's first trial: step (3) alone for one
 * template, the same config as resolve's for an untuned workload; none
 * without a valid candidate or a database. */
START_TEST(nearest_alone_for_the_tuner) {
  fixture f;
  build_db(&f, WITH_ALL);
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(f.path, 1, &d, &err) == CT_OK, "%s", err.msg);
  arch a = arch_named("sm_90");
  ct_workload pw;
  workload_packed(&f.t, &pw);
  config cfg;
  char key[CT_KEY_MAX], want[CT_KEY_MAX];
  int found = -1;
  ck_assert_int_eq(resolve_nearest(d, &H200, &a, tpl2d(), &pw, &cfg, key, sizeof key, &found, &err),
                   CT_OK);
  ck_assert_int_eq(found, 1);
  packed_key(&f.a, want);
  ck_assert_str_eq(key, want);
  resolution r;
  resolve_on(f.path, &H200, "sm_90", &f.t, &r);
  ck_assert(space_index(&r.s, &r.cfg) == space_index(&r.s, &cfg));
  resolution_free(&r);
  /* a tuned workload's nearest is another one, not itself */
  workload_packed(&f.w1, &pw);
  ck_assert_int_eq(resolve_nearest(d, &H200, &a, tpl2d(), &pw, &cfg, key, sizeof key, &found, &err),
                   CT_OK);
  packed_key(&f.w1, want);
  ck_assert(!found || strcmp(key, want) != 0);
  db_close(d);
  /* N2's config does not fit T: nothing */
  fixture g;
  build_db(&g, WITH_N2);
  ck_assert_msg(db_open(g.path, 1, &d, &err) == CT_OK, "%s", err.msg);
  workload_packed(&g.t, &pw);
  ck_assert_int_eq(resolve_nearest(d, &H200, &a, tpl2d(), &pw, &cfg, key, sizeof key, &found, &err),
                   CT_OK);
  ck_assert_int_eq(found, 0);
  ck_assert_str_eq(key, "");
  db_close(d);
  ck_assert_int_eq(resolve_nearest(NULL, &H200, &a, tpl2d(), &pw, &cfg, NULL, 0, &found, &err),
                   CT_OK);
  ck_assert_int_eq(found, 0);
}
END_TEST

START_TEST(no_valid_candidate_is_default) {
  fixture f;
  build_db(&f, WITH_N2);
  resolution r;
  resolve_on(f.path, &H200, "sm_90", &f.t, &r);
  expect_default(&r.ex);
  expect_valid(&r, "sm_90");
  ck_assert_int_eq(r.rec.config_json == NULL, 1);
  resolution_free(&r);
}
END_TEST

START_TEST(no_database_is_default) {
  fixture f;
  build_db(&f, WITH_ALL);
  resolution r;
  resolve_on(NULL, &H200, "sm_90", &f.w1, &r);
  expect_default(&r.ex);
  ck_assert_ptr_nonnull(strstr(r.ex.reason, "no database"));
  resolution_free(&r);

  ct_context *ctx = NULL;
  ck_assert_int_eq(ct_open_arch(NULL, "sm_90", &ctx), CT_OK);
  ct_explanation ex;
  ck_assert_int_eq(ct_explain(ctx, &f.w1, &ex), CT_OK);
  expect_default(&ex);
  ct_close(ctx);
}
END_TEST

/* Through the public API: an architecture context has no device name, so
 * records match by compute capability; the database is never written. */
START_TEST(open_arch_explains_by_compute_capability) {
  fixture f;
  build_db(&f, WITH_ALL);
  long before_size = 0, after_size = 0;
  char *before = slurp(f.path, &before_size);
  ck_assert_ptr_nonnull(before);

  ct_context *ctx = NULL;
  ct_explanation ex;
  ck_assert_int_eq(ct_open_arch(f.path, "sm_90", &ctx), CT_OK);
  ck_assert_str_eq(ct_errmsg(ctx), "");
  ck_assert_int_eq(ct_explain(ctx, &f.w1, &ex), CT_OK);
  expect_record(&ex, CT_SOURCE_SAME_CC, f.w1_best, 5.0, &f.w1, H200.name);
  ck_assert_int_eq(ct_explain(ctx, &f.t, &ex), CT_OK);
  expect_record(&ex, CT_SOURCE_NEAREST, f.a_best, 7.0, &f.a, H200.name);
  ck_assert_int_eq(ct_explain(ctx, &f.old, &ex), CT_OK);
  expect_default(&ex);
  ct_close(ctx);

  /* a database of schema 2 (before the picks), read as it is: a deployed
   * library keeps serving it, and the file stays as it was */
  {
    char v2[700];
    snprintf(v2, sizeof v2, "%s/v2.db", f.dir);
    FILE *o = fopen(v2, "wb");
    ck_assert_ptr_nonnull(o);
    ck_assert_uint_eq(fwrite(before, 1, (size_t)before_size, o), (size_t)before_size);
    ck_assert_int_eq(fclose(o), 0);
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open(v2, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, "DROP TABLE picks; PRAGMA user_version = 2", NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_close(h), SQLITE_OK);
    long v2_size = 0, v2_after_size = 0;
    char *v2_before = slurp(v2, &v2_size);
    ck_assert_int_eq(ct_open_arch(v2, "sm_90", &ctx), CT_OK);
    ck_assert_int_eq(ct_explain(ctx, &f.w1, &ex), CT_OK);
    expect_record(&ex, CT_SOURCE_SAME_CC, f.w1_best, 5.0, &f.w1, H200.name);
    ct_close(ctx);
    char *v2_after = slurp(v2, &v2_after_size);
    ck_assert_int_eq(v2_after_size, v2_size);
    ck_assert_int_eq(memcmp(v2_before, v2_after, (size_t)v2_size), 0);
    free(v2_before);
    free(v2_after);
  }

  ck_assert_int_eq(ct_open_arch(f.path, "sm_89", &ctx), CT_OK);
  ck_assert_int_eq(ct_explain(ctx, &f.w1, &ex), CT_OK);
  expect_record(&ex, CT_SOURCE_SAME_CC, f.w1_l40s, 0.25, &f.w1, L40S.name);
  ct_close(ctx);

  ck_assert_int_eq(ct_open_arch(f.path, "8.0", &ctx), CT_OK);
  ck_assert_int_eq(ct_explain(ctx, &f.w1, &ex), CT_OK);
  expect_default(&ex);
  ct_close(ctx);

  char *after = slurp(f.path, &after_size);
  ck_assert_ptr_nonnull(after);
  ck_assert_int_eq(after_size, before_size);
  ck_assert_msg(!memcmp(before, after, (size_t)before_size), "the database file changed");
  free(before);
  free(after);
}
END_TEST

/* A deployment installs the database read-only: a WAL database in a folder
 * the process cannot write is served, and nothing is created beside it.
 * Root ignores permissions, so as root the reader is a forked child that
 * drops to nobody (65534) first; it reports by its exit code. */
START_TEST(open_reads_a_readonly_folder) {
  fixture f;
  build_db(&f, 0);
  ck_assert_int_eq(chmod(test_root(), 0755), 0);
  ck_assert_int_eq(chmod(f.path, 0644), 0);
  ck_assert_int_eq(chmod(f.dir, 0555), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
    ct_context *ctx = NULL;
    ct_explanation ex;
    if (ct_open_arch(f.path, "sm_90", &ctx) != CT_OK) {
      fprintf(stderr, "ct_open_arch as uid %d: %s\n", (int)getuid(), ct_errmsg(ctx));
      _exit(11);
    }
    if (ct_explain(ctx, &f.w1, &ex) != CT_OK || ex.source != CT_SOURCE_SAME_CC) _exit(12);
    ct_close(ctx);
    char side[700];
    snprintf(side, sizeof side, "%s-wal", f.path);
    _exit(access(side, F_OK) == 0 ? 13 : 0);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_int_eq(chmod(f.dir, 0755), 0);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "serving a read-only folder: child status %d", status);
}
END_TEST

/* ---- the default and the distance -------------------------------------------------- */

/* The default of w (any layout): deterministic, valid, >= 32 threads. */
static void check_default_of(const template_desc *t, const ct_workload *w, const char *name) {
  ck_assert_ptr_nonnull(t);
  ct_workload pw;
  workload_packed(w, &pw);
  space s;
  space_init(&s);
  ck_assert_int_eq(template_space(t, &pw, &s, NULL), CT_OK);
  arch a = arch_named("sm_90");
  config c1, c2;
  ct_err err = {0};
  ct_status st = resolve_default(t, &pw, &s, &a, &c1, &err);
  ck_assert_msg(st == CT_OK, "%s: %s", name, err.msg);
  ck_assert_int_eq(resolve_default(t, &pw, &s, &a, &c2, NULL), CT_OK);
  if (space_index(&s, &c1) != space_index(&s, &c2))
    ck_abort_msg("%s: the default differs between two calls", name);
  char why[TEMPLATE_WHY_MAX] = "";
  if (!t->valid(&pw, &s, &c1, &a, why)) ck_abort_msg("%s: default not valid: %s", name, why);
  instance inst;
  ck_assert_int_eq(instance_make(t, &pw, &s, &c1, &a, &inst, NULL), CT_OK);
  unsigned threads = inst.block[0] * inst.block[1] * inst.block[2];
  if (threads < 32) ck_abort_msg("%s: the default has %u threads per block", name, threads);
  space_free(&s);
}

/* The default of w on both template families. */
static void check_default(const ct_workload *w, const char *name) {
  int is2 = w->op == CT_OP_CONV2D;
  check_default_of(template_find(is2 ? TPL2D : "conv3d_ncdhw4c_dp4a"), w, name);
  check_default_of(template_find(is2 ? MMA2D : "conv3d_ncdhw4c_mma"), w, name);
}

START_TEST(default_deterministic_valid_for_resnet50) {
  /* batch 1, and an odd batch 3 */
  for (int batch = 1; batch <= 3; batch += 2) {
    wlset *set = NULL;
    ct_err err = {0};
    ck_assert_msg(wlset_load_named("resnet50", batch, &set, &err) == CT_OK, "%s", err.msg);
    ck_assert_int_gt(set->n_items, 0);
    for (int i = 0; i < set->n_items; i++) check_default(&set->items[i].w, set->items[i].name);
    wlset_free(set);
  }
  /* Awkward ones: batch 3, odd non-square sizes, 1x7, stride 2, 7 channels. */
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.n = 3, w.c = 7, w.k = 5;
  w.in[0] = 13, w.in[1] = 9;
  w.kernel[0] = 1, w.kernel[1] = 7;
  w.stride[0] = 2;
  w.pad_after[1] = 3;
  check_default(&w, "awkward");
}
END_TEST

START_TEST(default_valid_for_resnet3d18) {
  wlset *set = NULL;
  ck_assert_int_eq(wlset_load_named("resnet3d18", 1, &set, NULL), CT_OK);
  for (int i = 0; i < set->n_items; i++) check_default(&set->items[i].w, set->items[i].name);
  wlset_free(set);
}
END_TEST

START_TEST(distance_properties) {
  ct_workload a = wl2d(1, 64, 64, 56, 3, 1, 1, 1);
  ct_workload b = wl2d(8, 128, 32, 28, 3, 2, 1, 1);
  ct_workload batch2 = wl2d(2, 64, 64, 56, 3, 1, 1, 1);
  ct_workload chan2 = wl2d(1, 128, 64, 56, 3, 1, 1, 1);
  ct_workload ker1 = wl2d(1, 64, 64, 56, 1, 1, 1, 1);
  ck_assert_double_eq(resolve_distance(&a, &a), 0.0);
  ck_assert_double_eq(resolve_distance(&b, &b), 0.0);
  ck_assert_double_eq(resolve_distance(&a, &b), resolve_distance(&b, &a));
  ck_assert_double_eq(resolve_distance(&a, &ker1), resolve_distance(&ker1, &a));
  ck_assert_double_gt(resolve_distance(&a, &batch2), 0.0);
  /* A different kernel is farther than twice the batch or the channels. */
  ck_assert_double_gt(resolve_distance(&a, &ker1), resolve_distance(&a, &batch2));
  ck_assert_double_gt(resolve_distance(&a, &ker1), resolve_distance(&a, &chan2));
  ck_assert_double_gt(resolve_distance(&a, &ker1), 2 * resolve_distance(&a, &chan2));
  /* Another epilogue on the same shape is near, but not the same. */
  ct_workload q8 = a;
  q8.out_type = CT_DTYPE_INT8;
  q8.epi.bias = 1;
  ck_assert_double_eq(resolve_distance(&a, &q8), 0.5);
  ck_assert_double_lt(resolve_distance(&a, &q8), resolve_distance(&a, &batch2));
  /* 3D: the depth counts too. */
  ct_workload v, v2;
  workload_init(&v, CT_OP_CONV3D);
  v.c = v.k = 16;
  v.in[0] = v.in[1] = v.in[2] = 8;
  v.kernel[0] = v.kernel[1] = v.kernel[2] = 3;
  v2 = v;
  v2.kernel[0] = 1;
  ck_assert_double_eq(resolve_distance(&v, &v), 0.0);
  ck_assert_double_gt(resolve_distance(&v, &v2), 0.0);
  ck_assert_double_eq(resolve_distance(&v, &v2), resolve_distance(&v2, &v));
}
END_TEST

/* ---- bad arguments ------------------------------------------------------------------ */

/* Whether the machine has an NVIDIA driver node, without initialising CUDA here. */
static int gpu_present(void) {
  return access("/dev/nvidiactl", F_OK) == 0;
}

static void expect_msg(const ct_context *ctx, const char *part) {
  const char *m = ct_errmsg(ctx);
  ck_assert_ptr_nonnull(m);
  ck_assert_msg(strstr(m, part), "message '%s' does not name '%s'", m, part);
}

START_TEST(open_rejects_bad_databases_unchanged) {
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  ct_context *ctx = NULL;

  /* missing: not found, and not created */
  snprintf(path, sizeof path, "%s/missing.db", dir);
  ck_assert_int_eq(ct_open(path, 0, &ctx), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(ctx);
  expect_msg(ctx, path);
  expect_msg(ctx, "no such database");
  ct_close(ctx);
  ck_assert_int_eq(ct_open_arch(path, "sm_90", &ctx), CT_ERR_NOT_FOUND);
  expect_msg(ctx, path);
  ct_close(ctx);
  ck_assert(!file_exists(path));

  /* garbage */
  snprintf(path, sizeof path, "%s/garbage.db", dir);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  for (int i = 0; i < 4096; i++) fputc((i * 7919) & 0xff, f);
  fclose(f);
  long size0 = 0, size1 = 0;
  char *bytes0 = slurp(path, &size0);
  ck_assert_int_eq(ct_open(path, 0, &ctx), CT_ERR_DB);
  expect_msg(ctx, path);
  expect_msg(ctx, "not a database");
  ct_close(ctx);
  ck_assert_int_eq(ct_open_arch(path, "sm_90", &ctx), CT_ERR_DB);
  ct_close(ctx);
  char *bytes1 = slurp(path, &size1);
  ck_assert_int_eq(size0, size1);
  ck_assert(!memcmp(bytes0, bytes1, (size_t)size0));
  free(bytes0);
  free(bytes1);

  /* a newer schema */
  snprintf(path, sizeof path, "%s/newer.db", dir);
  db *d = NULL;
  ck_assert_int_eq(db_open(path, 0, &d, NULL), CT_OK);
  db_close(d);
  sqlite3 *h = NULL;
  ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", DB_SCHEMA_VERSION + 1);
  ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_close(h), SQLITE_OK);
  bytes0 = slurp(path, &size0);
  ck_assert_int_eq(ct_open(path, 0, &ctx), CT_ERR_DB);
  expect_msg(ctx, "newer");
  ct_close(ctx);
  ck_assert_int_eq(ct_open_arch(path, "sm_90", &ctx), CT_ERR_DB);
  expect_msg(ctx, "newer");
  ct_close(ctx);
  bytes1 = slurp(path, &size1);
  ck_assert_int_eq(size0, size1);
  ck_assert_msg(!memcmp(bytes0, bytes1, (size_t)size0), "a newer database was written");
  free(bytes0);
  free(bytes1);
}
END_TEST

START_TEST(open_rejects_bad_arguments) {
  ct_context *ctx = NULL;
  ck_assert_int_eq(ct_open(NULL, -1, &ctx), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(ctx);
  expect_msg(ctx, "device");
  expect_msg(ctx, "-1");
  ct_close(ctx);
  ck_assert_int_eq(ct_open(NULL, 0, NULL), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(ct_open_arch(NULL, "sm_90", NULL), CT_ERR_INVALID_ARG);

  ctx = NULL;
  /* an unknown architecture is a bad argument, not a missing database
   * (CT_ERR_NOT_FOUND) */
  ck_assert_int_eq(ct_open_arch(NULL, "sm_999", &ctx), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(ctx);
  expect_msg(ctx, "sm_999");
  expect_msg(ctx, "sm_90"); /* the known names */
  expect_msg(ctx, "sm_75");
  ct_close(ctx);
  ck_assert_int_eq(ct_open_arch(NULL, "bogus", &ctx), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "bogus");
  expect_msg(ctx, "sm_90");
  ct_close(ctx);
  ck_assert_int_eq(ct_open_arch(NULL, NULL, &ctx), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "architecture");
  ct_close(ctx);

  if (gpu_present()) return; /* the no-GPU answer needs a machine without one */
  ck_assert_int_eq(ct_open(NULL, 0, &ctx), CT_ERR_NO_DEVICE);
  ck_assert_ptr_nonnull(ctx);
  expect_msg(ctx, "CUDA");
  ct_close(ctx);
  /* with a database: opened, then closed again with the context */
  fixture f;
  build_db(&f, 0);
  ck_assert_int_eq(ct_open(f.path, 0, &ctx), CT_ERR_NO_DEVICE);
  ct_close(ctx);
}
END_TEST

START_TEST(conv_rejects_bad_arguments) {
  ct_context *ctx = NULL;
  ck_assert_int_eq(ct_open_arch(NULL, "sm_90", &ctx), CT_OK);
  ct_workload w2 = wl2d(1, 16, 16, 8, 3, 1, 1, 1), w3;
  workload_init(&w3, CT_OP_CONV3D);
  w3.c = w3.k = 8;
  w3.in[0] = w3.in[1] = w3.in[2] = 6;
  w3.kernel[0] = w3.kernel[1] = w3.kernel[2] = 3;
  _Alignas(16) char buf[64];
  void *p = buf; /* never dereferenced: every call fails before a launch */

  ck_assert_int_eq(ct_conv2d(NULL, &w2, p, p, p, NULL), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(ct_conv3d(NULL, &w3, p, p, p, NULL), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(ct_conv2d(ctx, NULL, p, p, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "workload");
  ck_assert_int_eq(ct_conv2d(ctx, &w2, NULL, p, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "data is NULL");
  ck_assert_int_eq(ct_conv2d(ctx, &w2, p, NULL, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "weights is NULL");
  ck_assert_int_eq(ct_conv2d(ctx, &w2, p, p, NULL, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "out is NULL");
  ck_assert_int_eq(ct_conv3d(ctx, &w3, NULL, p, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "ct_conv3d");
  ck_assert_int_eq(ct_conv2d(ctx, &w3, p, p, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "ct_conv3d");
  ck_assert_int_eq(ct_conv3d(ctx, &w2, p, p, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "ct_conv2d");
  /* 16-byte alignment, named per tensor */
  ck_assert_int_eq(ct_conv2d(ctx, &w2, buf + 4, p, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "data (");
  expect_msg(ctx, "16-byte aligned");
  ck_assert_int_eq(ct_conv2d(ctx, &w2, p, buf + 8, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "weights (");
  ck_assert_int_eq(ct_conv3d(ctx, &w3, p, p, buf + 1, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "out (");

  ct_workload bad = w2;
  bad.c = 0;
  ck_assert_int_eq(ct_conv2d(ctx, &bad, p, p, p, NULL), CT_ERR_INVALID_WORKLOAD);
  expect_msg(ctx, "c (input channels)");
  bad = w2;
  bad.groups = 3; /* does not divide the channels */
  ck_assert_int_eq(ct_conv2d(ctx, &bad, p, p, p, NULL), CT_ERR_INVALID_WORKLOAD);
  expect_msg(ctx, "groups");
  bad = w3;
  bad.kernel[0] = 9; /* larger than the padded depth */
  ck_assert_int_eq(ct_conv3d(ctx, &bad, p, p, p, NULL), CT_ERR_INVALID_WORKLOAD);

  ck_assert_int_eq(ct_conv2d(ctx, &w2, p, p, p, NULL), CT_ERR_NO_DEVICE);
  expect_msg(ctx, "no GPU");
  ck_assert_int_eq(ct_conv3d(ctx, &w3, p, p, p, NULL), CT_ERR_NO_DEVICE);

  ck_assert_int_eq(ct_pack_weights(NULL, &w2, p, p, NULL), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(ct_pack_weights(ctx, NULL, p, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "workload");
  ck_assert_int_eq(ct_pack_weights(ctx, &w2, NULL, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "weights is NULL");
  ck_assert_int_eq(ct_pack_weights(ctx, &w2, p, NULL, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "packed is NULL");
  bad = w2;
  bad.k = -4;
  ck_assert_int_eq(ct_pack_weights(ctx, &bad, p, p, NULL), CT_ERR_INVALID_WORKLOAD);
  expect_msg(ctx, "k (output channels)");
  ck_assert_int_eq(ct_pack_weights(ctx, &w2, p, p, NULL), CT_ERR_NO_DEVICE);
  ct_close(ctx);
}
END_TEST

START_TEST(explain_and_helpers_reject_bad_arguments) {
  ct_context *ctx = NULL;
  ck_assert_int_eq(ct_open_arch(NULL, "sm_90", &ctx), CT_OK);
  ct_workload w = wl2d(1, 16, 16, 8, 3, 1, 1, 1), bad = w;
  bad.in[1] = 0;
  ct_explanation ex;
  ck_assert_int_eq(ct_explain(NULL, &w, &ex), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(ct_explain(ctx, NULL, &ex), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "NULL");
  ck_assert_int_eq(ct_explain(ctx, &w, NULL), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(ct_explain(ctx, &bad, &ex), CT_ERR_INVALID_WORKLOAD);
  expect_msg(ctx, "input size");
  /* a packed workload whose channels are not a multiple of 4 */
  bad = w;
  bad.c = 6;
  ck_assert_int_eq(ct_explain(ctx, &bad, &ex), CT_ERR_INVALID_WORKLOAD);
  expect_msg(ctx, "multiple of 4");
  ct_close(ctx);

  char key[CT_KEY_MAX], small[16];
  ck_assert_int_eq(ct_workload_key(&w, key, sizeof key), CT_OK);
  char want[CT_KEY_MAX];
  workload_key(&w, want, sizeof want);
  ck_assert_str_eq(key, want);
  ck_assert_int_eq(ct_workload_key(&w, small, sizeof small), CT_ERR_INVALID_ARG);
  ck_assert_uint_lt(strlen(small), sizeof small); /* terminated, not overrun */
  ck_assert_int_gt((int)strlen(small), 0);
  ck_assert_int_eq(ct_workload_key(NULL, key, sizeof key), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(key, "NULL"));
  ck_assert_int_eq(ct_workload_key(&w, NULL, 256), CT_ERR_INVALID_ARG);
  bad = w;
  bad.c = 0;
  ck_assert_int_eq(ct_workload_key(&bad, key, sizeof key), CT_ERR_INVALID_WORKLOAD);
  ck_assert_ptr_nonnull(strstr(key, "c (input channels)"));

  /* the stem: C = 3 padded to 4, K = 64, 7x7 */
  ct_workload stem;
  workload_init(&stem, CT_OP_CONV2D);
  stem.c = 3, stem.k = 64;
  stem.in[0] = stem.in[1] = 224;
  stem.kernel[0] = stem.kernel[1] = 7;
  stem.stride[0] = stem.stride[1] = 2;
  stem.pad_before[0] = stem.pad_before[1] = stem.pad_after[0] = stem.pad_after[1] = 3;
  ck_assert_uint_eq(ct_packed_weights_bytes(&stem), 64u * 4u * 49u);
  stem.k = 6; /* K padded too */
  ck_assert_uint_eq(ct_packed_weights_bytes(&stem), 8u * 4u * 49u);
  ck_assert_uint_eq(ct_packed_weights_bytes(&w), 16u * 16u * 9u);
  bad = w;
  bad.groups = 2; /* K x C/2, C/2 in whole fours */
  ck_assert_uint_eq(ct_packed_weights_bytes(&bad), 16u * 8u * 9u);
  bad.groups = 16; /* depthwise: one channel of each four */
  ck_assert_uint_eq(ct_packed_weights_bytes(&bad), 16u * 4u * 9u);
  bad.groups = 3; /* invalid: 3 does not divide 16 */
  ck_assert_uint_eq(ct_packed_weights_bytes(&bad), 0);
  bad.c = bad.k = bad.groups = 6; /* grouped, C % 4 != 0: does not pack */
  ck_assert_uint_eq(ct_packed_weights_bytes(&bad), 0);
  ck_assert_uint_eq(ct_packed_weights_bytes(NULL), 0);

  ct_close(NULL);
  ck_assert_ptr_nonnull(ct_errmsg(NULL));
  ck_assert_int_gt((int)strlen(ct_errmsg(NULL)), 0);
  ct_set_log(NULL, NULL, NULL, CT_LOG_DEBUG);
  int8_t i8[4] = {0};
  int32_t i32[4] = {0};
  ck_assert_int_eq(ct_reference_conv(&w, NULL, i8, i32), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(ct_reference_conv(NULL, i8, i8, i32), CT_ERR_INVALID_ARG);
}
END_TEST

/* ---- layouts ------------------------------------------------------------------------ */

/* w (packed, from wl2d) in another layout. */
static ct_workload in_layout(ct_workload w, ct_layout layout) {
  w.layout = layout;
  ck_assert_int_eq(workload_validate(&w, NULL), CT_OK);
  return w;
}

/* The first registered template of layout and op, or NULL (the nhwc ones
 * are looked up at run time, so that this file builds without them). */
static const template_desc *registered(ct_layout layout, ct_op op) {
  for (const template_desc *const *t = template_all(); *t; t++)
    if ((*t)->layout == layout && (*t)->op == op) return *t;
  return NULL;
}

/* Resolve w without a database on sm_90: its status, r filled on CT_OK. */
static ct_status resolve_nodb(const ct_workload *w, resolution *r, ct_err *err) {
  arch a = arch_named("sm_90");
  return resolve(NULL, &H200, &a, w, r, err);
}

/* Each layout goes to templates of its own: nchw packed and nchw4c as they
 * are to the channel-packed ones, nhwc as it is to the nhwc ones (or, when
 * none is registered, nowhere); an nhwc stem is refused with the reason. */
START_TEST(layouts_resolve_to_their_templates) {
  ct_workload p4 = wl2d(2, 64, 64, 14, 3, 1, 1, 1);
  ct_workload plain = in_layout(p4, CT_LAYOUT_NCHW), nw = in_layout(p4, CT_LAYOUT_NHWC);
  resolution r;
  ct_err err = {0};
  ck_assert_msg(resolve_nodb(&plain, &r, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(r.tpl->layout, CT_LAYOUT_NCHW4C);
  ck_assert_mem_eq(&r.pw, &p4, sizeof p4); /* C and K already multiples of 4 */
  resolution_free(&r);
  ck_assert_msg(resolve_nodb(&p4, &r, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(r.tpl->layout, CT_LAYOUT_NCHW4C);
  resolution_free(&r);

  for (int op = CT_OP_CONV2D; op <= CT_OP_CONV3D; op++) {
    ct_workload w = nw;
    if (op == CT_OP_CONV3D) {
      workload_init(&w, CT_OP_CONV3D);
      w.layout = CT_LAYOUT_NHWC;
      w.c = w.k = 64;
      w.in[0] = 4, w.in[1] = w.in[2] = 8;
      w.kernel[0] = w.kernel[1] = w.kernel[2] = 3;
      w.pad_before[0] = w.pad_before[1] = w.pad_before[2] = 1;
      w.pad_after[0] = w.pad_after[1] = w.pad_after[2] = 1;
    }
    const char *lname = workload_layout_name(CT_LAYOUT_NHWC, (ct_op)op);
    const template_desc *t = registered(CT_LAYOUT_NHWC, (ct_op)op);
    err = (ct_err){0};
    ct_status st = resolve_nodb(&w, &r, &err);
    ck_assert_msg(t, "no %s template is registered", lname); /* registry.c lists them */
    ck_assert_msg(st == CT_OK, "%s", err.msg);
    ck_assert_int_eq(r.tpl->layout, CT_LAYOUT_NHWC);
    ck_assert_mem_eq(&r.pw, &w, sizeof w); /* never converted */
    ck_assert_str_eq(r.ex.template_name, r.tpl->name);
    ck_assert_int_eq(r.ex.source, CT_SOURCE_DEFAULT);
    expect_valid(&r, "sm_90");
    resolution_free(&r);
  }

  /* the nhwc stem (C % 16 != 0): on sm_90 the channels-last wgmma stem
   * template's (registered before the mma one), never packed */
  ct_workload stem;
  workload_init(&stem, CT_OP_CONV2D);
  stem.layout = CT_LAYOUT_NHWC;
  stem.c = 3, stem.k = 64;
  stem.in[0] = stem.in[1] = 56;
  stem.kernel[0] = stem.kernel[1] = 7;
  stem.stride[0] = stem.stride[1] = 2;
  stem.pad_before[0] = stem.pad_before[1] = stem.pad_after[0] = stem.pad_after[1] = 3;
  ck_assert_int_eq(workload_validate(&stem, NULL), CT_OK);
  const template_desc *nm = template_find("conv2d_nhwc_wgmma_stem");
  err = (ct_err){0};
  if (nm) {
    ck_assert_msg(resolve_nodb(&stem, &r, &err) == CT_OK, "%s", err.msg);
    ck_assert_ptr_eq(r.tpl, nm);
    ck_assert_mem_eq(&r.pw, &stem, sizeof stem);
    ck_assert_int_eq(r.ex.source, CT_SOURCE_DEFAULT);
    expect_valid(&r, "sm_90");
    resolution_free(&r);
  }
  /* an nhwc layer no tensor-core template runs (C 3 and a dilation along
   * W): the channels-last fallback (issue 35: no valid channels-last
   * workload is refused), never packed */
  ct_workload dil = stem;
  dil.dilation[1] = 2;
  ck_assert_int_eq(workload_validate(&dil, NULL), CT_OK);
  err = (ct_err){0};
  const template_desc *fb = template_find("conv2d_nhwc_grouped");
  if (fb) {
    ck_assert_msg(resolve_nodb(&dil, &r, &err) == CT_OK, "%s", err.msg);
    ck_assert_ptr_eq(r.tpl, fb);
    ck_assert_int_eq(r.pw.layout, CT_LAYOUT_NHWC);
    resolution_free(&r);
  }
  const template_desc *t = registered(CT_LAYOUT_NHWC, CT_OP_CONV2D);

  /* the same through the public API, which explains nhwc by its template */
  ct_context *ctx = NULL;
  ck_assert_int_eq(ct_open_arch(NULL, "sm_90", &ctx), CT_OK);
  ct_explanation ex;
  if (fb) {
    ck_assert_int_eq(ct_explain(ctx, &dil, &ex), CT_OK);
    ck_assert_str_eq(ex.template_name, fb->name);
  }
  if (nm) {
    ck_assert_int_eq(ct_explain(ctx, &stem, &ex), CT_OK);
    ck_assert_str_eq(ex.template_name, nm->name);
  }
  if (t) {
    ck_assert_int_eq(ct_explain(ctx, &nw, &ex), CT_OK);
    ck_assert_str_eq(ex.template_name, t->name);
  }
  ck_assert_int_eq(ct_explain(ctx, &plain, &ex), CT_OK);
  ck_assert_ptr_null(strstr(ex.template_name, "nhwc"));
  ct_close(ctx);
}
END_TEST

/* A channels-last 3x3 layer (pad 1) of n images of hw x hw (conv3d: 8
 * planes deep), validated. */
static ct_workload nhwc3x3(ct_op op, int n, int c, int k, int groups, int hw) {
  ct_workload w;
  workload_init(&w, op);
  w.layout = CT_LAYOUT_NHWC;
  w.n = n, w.c = c, w.k = k, w.groups = groups;
  const int nd = op == CT_OP_CONV3D ? 3 : 2;
  for (int d = 0; d < nd; d++) {
    w.in[d] = d == 0 && nd == 3 ? 8 : hw;
    w.kernel[d] = 3;
    w.pad_before[d] = w.pad_after[d] = 1;
  }
  ck_assert_int_eq(workload_validate(&w, NULL), CT_OK);
  return w;
}

/* With nothing tuned, a depthwise layer takes the depthwise CUDA-core
 * family's default and a grouped one the grouped mma family's, in 2D and
 * 3D: the dense mma template's default ran them 3.3-91x slower (H200,
 * batch 32; registry.c). */
START_TEST(grouped_layers_default_to_their_families) {
  static const struct {
    int op, c, k, groups;
    const char *want;
  } cases[] = {{CT_OP_CONV2D, 144, 144, 144, "conv2d_nhwc_dw"},
               {CT_OP_CONV2D, 32, 64, 32, "conv2d_nhwc_dw"}, /* a channel multiplier */
               {CT_OP_CONV3D, 64, 64, 64, "conv3d_ndhwc_dw"},
               {CT_OP_CONV2D, 128, 128, 32, "conv2d_nhwc_grouped_mma"},
               {CT_OP_CONV3D, 256, 256, 32, "conv3d_ndhwc_grouped_mma"}};
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    const ct_workload w =
        nhwc3x3((ct_op)cases[i].op, 32, cases[i].c, cases[i].k, cases[i].groups, 28);
    resolution r;
    ct_err err = {0};
    ck_assert_msg(resolve_nodb(&w, &r, &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(!strcmp(r.tpl->name, cases[i].want), "case %d: %s", i, r.tpl->name);
    ck_assert_int_eq(r.ex.source, CT_SOURCE_DEFAULT);
    expect_valid(&r, "sm_90");
    resolution_free(&r);
  }
}
END_TEST

/* Before sm_90 a dense channels-last 3x3 layer of C % 16 == 0 has no
 * template with a valid config (only the wgmma ones run it): the refusal
 * says so, names the device, and points to the packed layout, whose
 * templates do run it there. On sm_90 it resolves; its 1x1 twin does on
 * sm_80 (the pointwise mma family). */
START_TEST(nhwc_dense_before_sm90_points_to_packed) {
  arch a80 = arch_named("sm_80"), a90 = arch_named("sm_90");
  for (int op = CT_OP_CONV2D; op <= CT_OP_CONV3D; op++) {
    const ct_workload w = nhwc3x3((ct_op)op, 8, 64, 64, 1, 14);
    resolution r;
    ct_err err = {0};
    ck_assert_int_eq(resolve(NULL, NULL, &a80, &w, &r, &err), CT_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "valid config for this workload on sm_80") &&
                      strstr(err.msg, op == CT_OP_CONV2D ? "use layout nchw or nchw4c"
                                                         : "use layout ncdhw or ncdhw4c"),
                  "%s", err.msg);
    ct_workload pw = w;
    pw.layout = CT_LAYOUT_NCHW;
    ck_assert_msg(resolve(NULL, NULL, &a80, &pw, &r, &err) == CT_OK, "%s", err.msg);
    resolution_free(&r);
    ck_assert_msg(resolve(NULL, NULL, &a90, &w, &r, &err) == CT_OK, "%s", err.msg);
    resolution_free(&r);
    ct_workload pt = w;
    for (int d = 0; d < 3; d++) pt.kernel[d] = 1, pt.pad_before[d] = pt.pad_after[d] = 0;
    ck_assert_msg(resolve(NULL, NULL, &a80, &pt, &r, &err) == CT_OK, "%s", err.msg);
    resolution_free(&r);
  }
}
END_TEST

/* Insert one OK trial of the nhwc workload w with template t on the H200
 * at cfg (of s, w's space of t; valid on sm_90); its JSON into json (1024
 * bytes) unless NULL. */
static void put_nhwc_at(db *d, const char *uid, const template_desc *t, const ct_workload *w,
                        const space *s, const config *cfg, double median_us, uint64_t seed,
                        char *json) {
  arch a90 = arch_named("sm_90");
  char why[TEMPLATE_WHY_MAX] = "";
  ck_assert_msg(t->valid(w, s, cfg, &a90, why), "%s", why);
  instance inst;
  ck_assert_int_eq(instance_make(t, w, s, cfg, &a90, &inst, NULL), CT_OK);
  trial tr;
  memset(&tr, 0, sizeof tr);
  cJSON *j = space_config_to_json(s, cfg);
  tr.config_json = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  ck_assert_ptr_nonnull(tr.config_json);
  if (json) snprintf(json, 1024, "%s", tr.config_json);
  size_t len = 1;
  for (int i = 0; i < inst.n_options; i++) len += strlen(inst.options[i]) + 1;
  char *p = tr.options = malloc(len);
  ck_assert_ptr_nonnull(p);
  for (int i = 0; i < inst.n_options; i++) p += sprintf(p, i ? " %s" : "%s", inst.options[i]);
  *p = '\0';
  tr.config_index = space_index(s, cfg);
  snprintf(tr.uid, sizeof tr.uid, "%s", uid);
  workload_key(w, tr.workload_key, sizeof tr.workload_key);
  snprintf(tr.template_name, sizeof tr.template_name, "%s", t->name);
  snprintf(tr.template_version, sizeof tr.template_version, "%s", template_version(t));
  tr.outcome = OUT_OK;
  tr.median_us = median_us;
  tr.n_samples = 1;
  tr.samples_us = malloc(sizeof *tr.samples_us);
  ck_assert_ptr_nonnull(tr.samples_us);
  tr.samples_us[0] = median_us;
  snprintf(tr.arch, sizeof tr.arch, "sm_90");
  snprintf(tr.tuner, sizeof tr.tuner, "random");
  snprintf(tr.session, sizeof tr.session, "test-dispatch");
  tr.timestamp = 1767225600.0 + (double)seed;
  tr.device = H200;
  ct_err err = {0};
  ck_assert_msg(db_insert_trials(d, &tr, 1, NULL, &err) == CT_OK, "insert %s: %s", uid, err.msg);
  trial_free(&tr);
}

/* put_nhwc_at with a config of t's space valid on sm_90 drawn from seed. */
static void put_nhwc_trial(db *d, const char *uid, const template_desc *t, const ct_workload *w,
                           double median_us, uint64_t seed, char *json) {
  space s;
  space_init(&s);
  ck_assert_int_eq(template_space(t, w, &s, NULL), CT_OK);
  arch a90 = arch_named("sm_90");
  rng r;
  rng_seed(&r, seed);
  config cfg;
  ck_assert_int_eq(template_sample(t, w, &s, &a90, &r, 100000, &cfg, NULL), CT_OK);
  put_nhwc_at(d, uid, t, w, &s, &cfg, median_us, seed, json);
  space_free(&s);
}

/* put_nhwc_at with the config cfg_json. */
static void put_nhwc_config(db *d, const char *uid, const template_desc *t, const ct_workload *w,
                            const char *cfg_json, double median_us, uint64_t seed) {
  space s;
  space_init(&s);
  ck_assert_int_eq(template_space(t, w, &s, NULL), CT_OK);
  cJSON *j = cJSON_Parse(cfg_json);
  config cfg;
  ct_err err = {0};
  ck_assert_msg(space_config_from_json(&s, j, &cfg, &err) == CT_OK, "%s", err.msg);
  cJSON_Delete(j);
  put_nhwc_at(d, uid, t, w, &s, &cfg, median_us, seed, NULL);
  space_free(&s);
}

/* Fusion decided by records (resolve_fuse_estimate): the fused kernel's
 * time against the two convs' alone and one launch (the intermediate's
 * bytes reported, not credited); nothing known without all three records. */
START_TEST(fuse_estimate_by_records) {
  const char *fkey = "conv2d-nhwc-i8.i8.i8-n2-c96-k96-28x28-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-"
                     "g96-pre16.i8.bias.qc.onnx";
  ct_workload f, pre, m;
  ct_err err = {0};
  ck_assert_msg(workload_from_key(fkey, &f, &err) == CT_OK, "%s", err.msg);
  workload_pre(&f, &pre);
  workload_main(&f, &m);
  const template_desc *tf = template_find("conv2d_nhwc_pwdw"),
                      *tp = template_find("conv2d_nhwc_pw_mma"),
                      *td = template_find("conv2d_nhwc_dw");
  ck_assert(tf && tp && td);
  ck_assert(tf->supports(&f, NULL) && tp->supports(&pre, NULL) && td->supports(&m, NULL));
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/fuse.db", dir);
  db *d = NULL;
  ck_assert_msg(db_open(path, 0, &d, &err) == CT_OK, "%s", err.msg);
  arch a90 = arch_named("sm_90");
  fuse_estimate e;
  ck_assert_int_eq(resolve_fuse_estimate(d, &H200, &a90, &f, &e, &err), CT_OK);
  ck_assert_int_eq(e.known, 0);
  ck_assert_ptr_nonnull(strstr(e.why, "no record of the fused workload"));
  ck_assert_double_eq(e.mid_bytes, 2.0 * 28 * 28 * 96); /* the intermediate, int8 */
  put_nhwc_trial(d, "pre-1", tp, &pre, 3.0, 1, NULL);
  put_nhwc_trial(d, "dw-1", td, &m, 2.0, 2, NULL);
  ck_assert_int_eq(resolve_fuse_estimate(d, &H200, &a90, &f, &e, &err), CT_OK);
  ck_assert_int_eq(e.known, 0);
  ck_assert_double_eq(e.pre_us, 3.0);
  ck_assert_double_eq(e.main_us, 2.0);
  /* fused at 5.5 us: 3 + 2 + 1 (a launch) - 5.5; the intermediate's trip
   * would have credited 6.5 too, which is not a gain */
  put_nhwc_trial(d, "f-1", tf, &f, 5.5, 3, NULL);
  ck_assert_int_eq(resolve_fuse_estimate(d, &H200, &a90, &f, &e, &err), CT_OK);
  ck_assert_int_eq(e.known, 1);
  ck_assert_double_eq_tol(e.gain_us, 0.5, 1e-9);
  ck_assert_msg(!strncmp(e.why, "fused:", 6), "%s", e.why);
  ck_assert_ptr_nonnull(strstr(e.why, "0.2 MB not credited"));
  /* a faster apart record of the 1x1 conv tips it the other way */
  put_nhwc_trial(d, "pre-2", tp, &pre, 2.0, 4, NULL);
  ck_assert_int_eq(resolve_fuse_estimate(d, &H200, &a90, &f, &e, &err), CT_OK);
  ck_assert_double_eq_tol(e.gain_us, -0.5, 1e-9);
  ck_assert_msg(!strncmp(e.why, "apart:", 6), "%s", e.why);
  /* another device of the same capability reads the H200's records; a
   * nearest workload's do not count */
  ck_assert_int_eq(resolve_fuse_estimate(d, &H100, &a90, &f, &e, &err), CT_OK);
  ck_assert_int_eq(e.known, 1);
  ct_workload f2 = f;
  f2.n = 4;
  ck_assert_int_eq(resolve_fuse_estimate(d, &H200, &a90, &f2, &e, &err), CT_OK);
  ck_assert_int_eq(e.known, 0);
  /* refusals: no fused conv; no database: nothing known */
  ck_assert_int_eq(resolve_fuse_estimate(d, &H200, &a90, &m, &e, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(resolve_fuse_estimate(NULL, &H200, &a90, &f, &e, &err), CT_OK);
  ck_assert_int_eq(e.known, 0);
  db_close(d);
}
END_TEST

/* Records count under the key of their layout: an nhwc record serves the
 * nhwc workload (exactly, and as the nearest of an untuned one), never its
 * nchw or nchw4c twin, and a faster nchw4c record never serves nhwc. */
START_TEST(records_serve_their_layout) {
  const template_desc *t = registered(CT_LAYOUT_NHWC, CT_OP_CONV2D);
  ck_assert_ptr_nonnull(t);
  char dir[512], path[600], nhwc_json[1024], key[CT_KEY_MAX];
  scratch(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/layouts.db", dir);
  ct_workload x = wl2d(1, 64, 64, 28, 3, 1, 1, 1);
  ct_workload xn = in_layout(x, CT_LAYOUT_NHWC), xp = in_layout(x, CT_LAYOUT_NCHW);
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(path, 0, &d, &err) == CT_OK, "%s", err.msg);
  put_trial(d, "x-dp4a", &x, NULL, &H200, OUT_OK, 1.0, 1, NULL); /* faster, nchw4c */
  put_nhwc_trial(d, "x-nhwc", t, &xn, 5.0, 2, nhwc_json);
  db_close(d);

  resolution r;
  resolve_on(path, &H200, "sm_90", &xn, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_EXACT);
  ck_assert_str_eq(r.ex.template_name, t->name);
  ck_assert_str_eq(r.ex.config, nhwc_json);
  ck_assert_double_eq(r.ex.measured_us, 5.0);
  ck_assert_str_eq(r.ex.tuned_key, workload_key(&xn, key, sizeof key));
  ck_assert_mem_eq(&r.pw, &xn, sizeof xn);
  resolution_free(&r);
  for (int i = 0; i < 2; i++) {
    resolve_on(path, &H200, "sm_90", i ? &xp : &x, &r);
    ck_assert_int_eq(r.ex.source, CT_SOURCE_EXACT);
    ck_assert_str_eq(r.ex.template_name, TPL2D);
    ck_assert_double_eq(r.ex.measured_us, 1.0);
    resolution_free(&r);
  }
  /* untuned batch 2: each layout's nearest is x in that layout */
  ct_workload yn = xn, yp = xp;
  yn.n = yp.n = 2;
  resolve_on(path, &H200, "sm_90", &yn, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_NEAREST);
  ck_assert_str_eq(r.ex.template_name, t->name);
  ck_assert_str_eq(r.ex.tuned_key, workload_key(&xn, key, sizeof key));
  expect_valid(&r, "sm_90");
  resolution_free(&r);
  resolve_on(path, &H200, "sm_90", &yp, &r);
  ck_assert_ptr_null(strstr(r.ex.template_name, "nhwc"));
  ck_assert_ptr_null(strstr(r.ex.tuned_key, "nhwc"));
  resolution_free(&r);
}
END_TEST

/* A workload's nearest records are of its own kind: dense, depthwise or
 * grouped. conv2d_nhwc_mma runs all three, but a depthwise layer on it ran
 * 5-42x slower than the depthwise family's default (H200; registry.c), so
 * its record of a dense or grouped layer never serves a depthwise one,
 * which takes that default; a record of its own kind does serve it. */

START_TEST(nearest_records_are_of_the_same_kind) {
  const template_desc *mma = template_find("conv2d_nhwc_mma");
  ck_assert_ptr_nonnull(mma);
  const ct_workload dense = nhwc3x3(CT_OP_CONV2D, 8, 24, 48, 1, 28),
                    grouped = nhwc3x3(CT_OP_CONV2D, 8, 128, 128, 32, 28),
                    dw = nhwc3x3(CT_OP_CONV2D, 8, 48, 48, 48, 28);
  ck_assert(mma->supports(&dense, NULL) && mma->supports(&grouped, NULL) &&
            mma->supports(&dw, NULL));
  char dir[512], path[600];
  scratch(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/kinds.db", dir);
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(path, 0, &d, &err) == CT_OK, "%s", err.msg);
  put_nhwc_trial(d, "dense-1", mma, &dense, 5.0, 1, NULL);
  put_nhwc_trial(d, "grouped-1", mma, &grouped, 6.0, 2, NULL);
  arch a90 = arch_named("sm_90");
  resolution r;
  ck_assert_msg(resolve(d, &H200, &a90, &dw, &r, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_DEFAULT);
  ck_assert_str_eq(r.tpl->name, "conv2d_nhwc_dw");
  resolution_free(&r);
  /* a dense and a grouped layer of other sizes: their own kind's record */
  const ct_workload dense2 = nhwc3x3(CT_OP_CONV2D, 8, 24, 48, 1, 56),
                    grouped2 = nhwc3x3(CT_OP_CONV2D, 8, 128, 128, 32, 56);
  ck_assert_msg(resolve(d, &H200, &a90, &dense2, &r, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_NEAREST);
  ck_assert_str_eq(r.tpl->name, "conv2d_nhwc_mma");
  ck_assert_int_eq(r.rec.median_us, 5.0);
  resolution_free(&r);
  ck_assert_msg(resolve(d, &H200, &a90, &grouped2, &r, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_NEAREST);
  ck_assert_str_eq(r.tpl->name, "conv2d_nhwc_mma");
  ck_assert_int_eq(r.rec.median_us, 6.0);
  resolution_free(&r);
  /* a depthwise record on mma serves another depthwise layer */
  put_nhwc_trial(d, "dw-1", mma, &dw, 7.0, 3, NULL);
  const ct_workload dw2 = nhwc3x3(CT_OP_CONV2D, 8, 48, 48, 48, 56);
  ck_assert_msg(resolve(d, &H200, &a90, &dw2, &r, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_NEAREST);
  ck_assert_str_eq(r.tpl->name, "conv2d_nhwc_mma");
  ck_assert_int_eq(r.rec.median_us, 7.0);
  resolution_free(&r);
  db_close(d);
}
END_TEST

/* A record carries to a workload whose space has other knobs: conv2d_nhwc_wgmma
 * tuned for int32 output serves its untuned 8-bit twin (nearest: the same
 * shape) with the same knobs and the 8-bit epilogue's (out_stage,
 * tile_requant) from the template's default; an 8-bit record serves an
 * int32 workload without them. */
START_TEST(records_carry_to_other_output_types) {
  const template_desc *t = template_find("conv2d_nhwc_wgmma");
  ck_assert_ptr_nonnull(t);
  char dir[512], path[600], key[CT_KEY_MAX];
  scratch(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/out-types.db", dir);
  ct_workload x = in_layout(wl2d(1, 64, 64, 28, 3, 1, 1, 1), CT_LAYOUT_NHWC), x8 = x;
  x8.out_type = CT_DTYPE_INT8;
  x8.epi.bias = 1;
  x8.epi.scale = CT_SCALE_CHANNEL;
  ct_workload y8 = x8, y = x;
  y8.in[0] = y8.in[1] = y.in[0] = y.in[1] = 14;
  const char *cfg32 = "{\"block_n\":64,\"block_k\":64,\"k_slices\":1,\"stages\":4,"
                      "\"warpgroups\":2,\"rows_per_wg\":64,\"split_k\":1,\"blocks_per_sm\":1,"
                      "\"persistent\":0,\"w_early\":0}";
  const char *cfg8 = "{\"block_n\":64,\"block_k\":64,\"k_slices\":1,\"stages\":3,"
                     "\"warpgroups\":1,\"rows_per_wg\":64,\"split_k\":1,\"blocks_per_sm\":1,"
                     "\"persistent\":0,\"out_stage\":1,\"tile_requant\":0,\"w_early\":0}";
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(path, 0, &d, &err) == CT_OK, "%s", err.msg);
  put_nhwc_config(d, "x32", t, &x, cfg32, 5.0, 1);
  put_nhwc_config(d, "y8", t, &y8, cfg8, 3.0, 2);
  db_close(d);

  /* x8: x's knobs, then the default's 8-bit ones */
  resolution r;
  resolve_on(path, &H200, "sm_90", &x8, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_NEAREST);
  ck_assert_str_eq(r.ex.template_name, t->name);
  ck_assert_str_eq(r.ex.tuned_key, workload_key(&x, key, sizeof key));
  expect_valid(&r, "sm_90");
  config dflt;
  arch a90 = arch_named("sm_90");
  ck_assert_int_eq(resolve_default(t, &r.pw, &r.s, &a90, &dflt, &err), CT_OK);
  cJSON *want = cJSON_Parse(cfg32), *got = cJSON_Parse(r.ex.config);
  ck_assert_ptr_nonnull(want);
  ck_assert_ptr_nonnull(got);
  for (const char *const *k = (const char *const[]){"out_stage", "tile_requant", NULL}; *k; k++)
    cJSON_AddNumberToObject(want, *k, space_get(&r.s, &dflt, *k, -1));
  ck_assert_msg(cJSON_Compare(want, got, 1), "got %s", r.ex.config);
  cJSON_Delete(want);
  cJSON_Delete(got);
  resolution_free(&r);

  /* y (int32, the 8-bit record's shape): its knobs without the 8-bit ones */
  resolve_on(path, &H200, "sm_90", &y, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_NEAREST);
  ck_assert_str_eq(r.ex.tuned_key, workload_key(&y8, key, sizeof key));
  expect_valid(&r, "sm_90");
  ck_assert_ptr_null(strstr(r.ex.config, "out_stage"));
  ck_assert_ptr_nonnull(strstr(r.ex.config, "\"stages\":3"));
  resolution_free(&r);

  /* ResNet-50 b16's l2_3x3_128_s2, tuned for int32 at 216 KB of stages:
   * with the default's 8-bit knobs (its epilogue slabs) too big, so its
   * 8-bit twin takes the first valid others (no slabs), not another
   * workload's config */
  ct_workload z = in_layout(wl2d(16, 128, 128, 56, 3, 2, 1, 1), CT_LAYOUT_NHWC), z8 = z;
  z8.out_type = CT_DTYPE_INT8;
  z8.epi.bias = 1;
  z8.epi.scale = CT_SCALE_CHANNEL;
  const char *cfgz = "{\"block_n\":128,\"block_k\":128,\"k_slices\":3,\"stages\":3,"
                     "\"warpgroups\":2,\"rows_per_wg\":64,\"split_k\":1,\"blocks_per_sm\":1,"
                     "\"persistent\":2,\"w_early\":0}";
  ck_assert_msg(db_open(path, 0, &d, &err) == CT_OK, "%s", err.msg);
  put_nhwc_config(d, "z32", t, &z, cfgz, 5.8, 3);
  db_close(d);
  resolve_on(path, &H200, "sm_90", &z8, &r);
  ck_assert_int_eq(r.ex.source, CT_SOURCE_NEAREST);
  ck_assert_str_eq(r.ex.tuned_key, workload_key(&z, key, sizeof key));
  expect_valid(&r, "sm_90");
  ck_assert_int_eq(resolve_default(t, &r.pw, &r.s, &a90, &dflt, &err), CT_OK);
  config tried = r.cfg;
  for (const char *const *k = (const char *const[]){"out_stage", "tile_requant", NULL}; *k; k++)
    tried.choice[space_find(&r.s, *k)] = dflt.choice[space_find(&r.s, *k)];
  char why[TEMPLATE_WHY_MAX] = "";
  ck_assert(!t->valid(&r.pw, &r.s, &tried, &a90, why)); /* the default's knobs do not fit */
  ck_assert_msg(strstr(why, "shared memory") != NULL, "%s", why);
  ck_assert_int_eq(space_get(&r.s, &r.cfg, "out_stage", -1), 0);
  ck_assert_ptr_nonnull(strstr(r.ex.config, "\"k_slices\":3,\"stages\":3"));
  resolution_free(&r);
}
END_TEST

/* nhwc weights are OHWI, used as they are: nothing to pack, and said so
 * before anything else is looked at. */
START_TEST(nhwc_weights_are_not_packed) {
  ct_context *ctx = NULL;
  ck_assert_int_eq(ct_open_arch(NULL, "sm_90", &ctx), CT_OK);
  ct_workload nw = in_layout(wl2d(1, 16, 16, 8, 3, 1, 1, 1), CT_LAYOUT_NHWC);
  char buf[64];
  void *p = buf;
  ck_assert_uint_eq(ct_packed_weights_bytes(&nw), 0);
  ck_assert_int_eq(ct_pack_weights(ctx, &nw, p, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "nothing to pack");
  expect_msg(ctx, "OHWI");
  ck_assert_int_eq(ct_pack_weights(ctx, &nw, NULL, NULL, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "nothing to pack");
  ct_workload n3;
  workload_init(&n3, CT_OP_CONV3D);
  n3.layout = CT_LAYOUT_NHWC;
  n3.c = n3.k = 16;
  n3.in[0] = n3.in[1] = n3.in[2] = 6;
  n3.kernel[0] = n3.kernel[1] = n3.kernel[2] = 3;
  ck_assert_int_eq(ct_pack_weights(ctx, &n3, p, p, NULL), CT_ERR_INVALID_ARG);
  expect_msg(ctx, "ODHWI");
  expect_msg(ctx, "ct_conv3d");
  /* ct_make_params takes OHWI weights: the sums are those of OIHW; the
   * channels-last block also carries the 9 border classes' corrections of
   * a data zero point with padding (core/zpad.cuh) */
  ct_workload q = nw, qp = in_layout(nw, CT_LAYOUT_NCHW);
  q.out_type = qp.out_type = CT_DTYPE_INT8;
  q.epi.bias = qp.epi.bias = 1;
  q.data_type = qp.data_type = CT_DTYPE_UINT8;
  q.epi.data_zero_point = qp.epi.data_zero_point = 1;
  ck_assert_int_eq(workload_validate(&q, NULL), CT_OK);
  size_t nwt = (size_t)workload_weight_elems(&q), np = ct_params_bytes(&q);
  ck_assert_uint_eq(np, ct_params_bytes(&qp) + 9 * 16 * sizeof(int32_t));
  int8_t *oihw = malloc(nwt), *ohwi = malloc(nwt);
  void *pa = malloc(np), *pb = malloc(np);
  ck_assert(oihw && ohwi && pa && pb);
  for (size_t i = 0; i < nwt; i++) oihw[i] = (int8_t)(i * 37 + 11);
  pack_ohwi(oihw, ohwi, q.k, q.c, 9);
  int32_t bias[16];
  for (int i = 0; i < 16; i++) bias[i] = 1000 * i - 7;
  float scale = 0.01f;
  ct_quant qv = {
      .data_zero_point = 17, .bias = bias, .scale = &scale, .clamp_min = -128, .clamp_max = 127};
  ck_assert_int_eq(ct_make_params(ctx, &q, &qv, ohwi, pa), CT_OK);
  ck_assert_int_eq(ct_make_params(ctx, &qp, &qv, oihw, pb), CT_OK);
  ck_assert_mem_eq(pa, pb, ct_params_bytes(&qp));
  /* class 0 (the top-left corner) misses the taps of row 0 and column 0;
   * class 4, the interior, none */
  const int32_t *corr = (const int32_t *)pa + ct_params_bytes(&qp) / sizeof(int32_t);
  for (int k = 0; k < 16; k++) {
    int32_t s = 0;
    for (int c = 0; c < 16; c++)
      for (int t = 0; t < 9; t++)
        if (t / 3 == 0 || t % 3 == 0) s += oihw[(k * 16 + c) * 9 + t];
    ck_assert_int_eq(corr[k], 17 * s);
    ck_assert_int_eq(corr[4 * 16 + k], 0);
  }
  free(oihw);
  free(ohwi);
  free(pa);
  free(pb);
  ct_close(ctx);
}
END_TEST

START_TEST(strerror_of_every_status) {
  static const struct {
    ct_status st;
    const char *name, *msg;
  } all[] = {
#define ROW(name, value, msg) {name, #name, msg},
      CT_STATUS_LIST(ROW)
#undef ROW
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    ck_assert_str_eq(ct_strerror(all[i].st), all[i].msg);
    ck_assert_str_eq(ct_status_name(all[i].st), all[i].name);
    for (size_t j = 0; j < i; j++) ck_assert_str_ne(ct_strerror(all[i].st), all[j].msg);
  }
  ck_assert_ptr_nonnull(ct_strerror((ct_status)-99));
  ck_assert_ptr_nonnull(ct_strerror((ct_status)5));
  ck_assert_ptr_nonnull(ct_status_name((ct_status)-99));
  ck_assert_ptr_nonnull(ct_version());
}
END_TEST

/* ---- silence --------------------------------------------------------------------------- */

typedef struct log_sink {
  int n;
  char last[CT_ERRMSG_MAX];
} log_sink;

static void sink(void *user, ct_log_level level, const char *msg) {
  log_sink *s = user;
  s->n++;
  snprintf(s->last, sizeof s->last, "%s", msg);
  (void)level;
}

/* Every failing call, and some succeeding ones, with stdout and stderr
 * sent to a file that must stay empty; errors reach the log callback. */
START_TEST(library_prints_nothing) {
  fixture f;
  build_db(&f, WITH_ALL);
  char out_path[700], missing[700], garbage[700];
  snprintf(out_path, sizeof out_path, "%s/output.txt", f.dir);
  snprintf(missing, sizeof missing, "%s/missing.db", f.dir);
  snprintf(garbage, sizeof garbage, "%s/garbage.db", f.dir);
  FILE *g = fopen(garbage, "wb");
  ck_assert_ptr_nonnull(g);
  fputs("this is not a database, it is a sentence long enough to be a header.\n", g);
  fclose(g);

  int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  fflush(stdout);
  fflush(stderr);
  int saved_out = dup(1), saved_err = dup(2);
  ck_assert_int_ge(saved_out, 0);
  ck_assert_int_ge(saved_err, 0);
  ck_assert_int_ge(dup2(fd, 1), 0);
  ck_assert_int_ge(dup2(fd, 2), 0);

  ct_status st[32];
  int n = 0;
  ct_context *ctx = NULL;
  st[n++] = ct_open(missing, 0, &ctx);
  ct_close(ctx);
  st[n++] = ct_open(garbage, 0, &ctx);
  ct_close(ctx);
  st[n++] = ct_open(NULL, -3, &ctx);
  ct_close(ctx);
  st[n++] = ct_open_arch(NULL, "sm_1", &ctx);
  ct_close(ctx);
  if (!gpu_present()) {
    st[n++] = ct_open(f.path, 0, &ctx);
    ct_close(ctx);
  }
  log_sink ls = {0};
  st[n++] = ct_open_arch(f.path, "sm_90", &ctx);
  ct_set_log(ctx, sink, &ls, CT_LOG_DEBUG);
  ct_explanation ex;
  ct_workload bad = f.t;
  bad.groups = 3;
  _Alignas(16) char buf[16];
  st[n++] = ct_explain(ctx, &f.w1, &ex);
  st[n++] = ct_explain(ctx, &f.t, &ex);
  st[n++] = ct_explain(ctx, &bad, &ex);
  st[n++] = ct_explain(ctx, NULL, &ex);
  st[n++] = ct_conv2d(ctx, &f.t, buf, buf, NULL, NULL);
  st[n++] = ct_conv2d(ctx, &bad, buf, buf, buf, NULL);
  st[n++] = ct_conv2d(ctx, &f.t, buf, buf, buf, NULL);
  st[n++] = ct_conv3d(ctx, &f.t, buf, buf, buf, NULL);
  st[n++] = ct_pack_weights(ctx, &f.t, buf, buf, NULL);
  st[n++] = ct_workload_key(&bad, buf, sizeof buf);
  int n_logged = ls.n;
  char last_logged[CT_ERRMSG_MAX], last_err[CT_ERRMSG_MAX];
  snprintf(last_logged, sizeof last_logged, "%s", ls.last);
  snprintf(last_err, sizeof last_err, "%s", ct_errmsg(ctx));
  ct_close(ctx);

  fflush(stdout);
  fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  close(fd);

  struct stat sb;
  ck_assert_int_eq(stat(out_path, &sb), 0);
  if (sb.st_size != 0) {
    long size = 0;
    char *text = slurp(out_path, &size);
    text[size] = '\0';
    ck_abort_msg("the library printed %ld bytes: %.300s", size, text);
  }
  int n_failed = 0;
  for (int i = 0; i < n; i++) n_failed += st[i] != CT_OK;
  ck_assert_int_eq(n_failed, n - 3); /* all but the open and two explains */
  /* the seven failures after the callback was installed: each logged */
  ck_assert_int_eq(n_logged, 7);
  ck_assert_str_eq(last_logged, last_err);
}
END_TEST

/* ---- threads ------------------------------------------------------------------------- */

#define N_THREADS 4
#define N_ROUNDS  3

typedef struct explain_job {
  ct_context *ctx;
  const ct_workload *w; /* N_THREADS of them */
  const ct_explanation *want;
  int first;
  int n_bad;
  char what[256];
} explain_job;

static int same_explanation(const ct_explanation *a, const ct_explanation *b) {
  return a->source == b->source && !strcmp(a->template_name, b->template_name) &&
         !strcmp(a->config, b->config) && !strcmp(a->tuned_key, b->tuned_key) &&
         !strcmp(a->device, b->device) && a->measured_us == b->measured_us &&
         !strcmp(a->reason, b->reason);
}

/* Each thread starts at its own workload, so that at any moment the
 * threads explain different ones. No Check calls here: results only. */
static void *explain_thread(void *arg) {
  explain_job *j = arg;
  for (int r = 0; r < N_ROUNDS; r++)
    for (int i = 0; i < N_THREADS; i++) {
      int k = (j->first + i) % N_THREADS;
      ct_explanation ex;
      ct_status st = ct_explain(j->ctx, &j->w[k], &ex);
      if (st != CT_OK || !same_explanation(&ex, &j->want[k])) {
        if (!j->n_bad++)
          snprintf(j->what, sizeof j->what, "workload %d: status %d, source %d, config %.150s", k,
                   (int)st, (int)ex.source, st ? "" : ex.config);
      }
    }
  return NULL;
}

START_TEST(concurrent_explain_matches_serial) {
  fixture f;
  build_db(&f, WITH_ALL);
  ct_context *ctx = NULL;
  ck_assert_int_eq(ct_open_arch(f.path, "sm_90", &ctx), CT_OK);
  ct_workload w[N_THREADS] = {f.w1, f.t, f.old, wl2d(2, 32, 64, 14, 3, 2, 1, 1)};
  w[3].layout = CT_LAYOUT_NCHW;
  ct_explanation want[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) ck_assert_int_eq(ct_explain(ctx, &w[i], &want[i]), CT_OK);
  ck_assert_int_eq(want[0].source, CT_SOURCE_SAME_CC);
  ck_assert_int_eq(want[1].source, CT_SOURCE_NEAREST);
  ck_assert_int_eq(want[2].source, CT_SOURCE_DEFAULT);
  ck_assert_int_eq(want[3].source, CT_SOURCE_DEFAULT);

  pthread_t th[N_THREADS];
  explain_job jobs[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    jobs[i] = (explain_job){.ctx = ctx, .w = w, .want = want, .first = i};
    ck_assert_int_eq(pthread_create(&th[i], NULL, explain_thread, &jobs[i]), 0);
  }
  for (int i = 0; i < N_THREADS; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);
  for (int i = 0; i < N_THREADS; i++)
    ck_assert_msg(jobs[i].n_bad == 0, "thread %d: %d mismatches, first %s", i, jobs[i].n_bad,
                  jobs[i].what);
  ct_close(ctx);
}
END_TEST

/* ---- main ------------------------------------------------------------------------------ */

/* ct_workload_parse takes a canonical key or a JSON object, as the command
 * line does, and gives the workload whose key is that key; it refuses a
 * key out of canonical form (naming it), an unknown JSON field, an invalid
 * workload and NULL, each with its message, and truncates a short message
 * buffer. ct_workload_out_dims and ct_workload_ops give the internal
 * values, 0 and -1 for an invalid workload. */
START_TEST(workload_parse_shape_and_ops) {
  static const char *keys[] = {
      "conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1",
      "conv2d-nhwc-i8.i8.i8-n256-c64-k256-56x56-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-res-onnx",
      "conv3d-ndhwc-i8.i8.i32-n8-c64-k64-16x56x56-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1",
  };
  char msg[256], key[CT_KEY_MAX];
  for (int i = 0; i < 3; i++) {
    ct_workload w;
    ck_assert_msg(ct_workload_parse(keys[i], &w, msg, sizeof msg) == CT_OK, "%s: %s", keys[i], msg);
    ck_assert_str_eq(msg, "");
    ck_assert_int_eq(ct_workload_key(&w, key, sizeof key), CT_OK);
    ck_assert_str_eq(key, keys[i]);
    int64_t dims[6], want[6];
    const int nd = ct_workload_out_dims(&w, dims);
    ck_assert_int_eq(nd, workload_out_dims(&w, want));
    for (int d = 0; d < nd; d++) ck_assert_int_eq(dims[d], want[d]);
    ck_assert_int_eq(ct_workload_ops(&w), workload_ops(&w));
  }
  /* the JSON form reads back as the same workload; a short buffer is refused */
  for (int i = 0; i < 3; i++) {
    ct_workload w, back;
    char json[1024], small[80];
    ck_assert_int_eq(ct_workload_parse(keys[i], &w, NULL, 0), CT_OK);
    ck_assert_int_eq(ct_workload_json(&w, json, sizeof json), CT_OK);
    ck_assert_msg(ct_workload_parse(json, &back, msg, sizeof msg) == CT_OK, "%s: %s", json, msg);
    ck_assert_int_eq(ct_workload_key(&back, key, sizeof key), CT_OK);
    ck_assert_str_eq(key, keys[i]);
    ck_assert_int_eq(ct_workload_json(&w, small, sizeof small), CT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(small, "needed"));
  }
  /* the first key's output: 16 x 16 x 28 x 28 x 4; 2 x 16 x 64 x 784 x 64 x 9 ops */
  ct_workload w;
  ck_assert_int_eq(ct_workload_parse(keys[0], &w, NULL, 0), CT_OK);
  int64_t dims[6];
  ck_assert_int_eq(ct_workload_out_dims(&w, dims), 5);
  ck_assert(dims[0] == 16 && dims[1] == 16 && dims[2] == 28 && dims[3] == 28 && dims[4] == 4);
  ck_assert_int_eq(ct_workload_ops(&w), 2LL * 16 * 64 * 28 * 28 * 64 * 9);
  /* JSON: the same workload as the first key, with blanks before it */
  const char *json = " \n{\"op\": \"conv2d\", \"layout\": \"nchw4c\", \"n\": 16, \"c\": 64, "
                     "\"k\": 64, \"h\": 56, \"w\": 56, \"kernel\": 3, \"stride\": 2, \"pad\": 1}";
  ct_workload j;
  ck_assert_msg(ct_workload_parse(json, &j, msg, sizeof msg) == CT_OK, "%s", msg);
  ck_assert_int_eq(ct_workload_key(&j, key, sizeof key), CT_OK);
  ck_assert_str_eq(key, keys[0]);
  /* refusals, each with its message */
  /* the padding in a short form: not canonical */
  const char *short_pad = "conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1-d1x1";
  ck_assert_int_eq(ct_workload_parse(short_pad, &w, msg, sizeof msg), CT_ERR_PARSE);
  ck_assert_int_gt((int)strlen(msg), 0);
  ck_assert_int_eq(ct_workload_parse("{\"op\": \"conv2d\", \"c\": 64, \"k\": 64, \"h\": 56, "
                                     "\"w\": 56, \"kernel\": 3, \"strid\": 2}",
                                     &w, msg, sizeof msg),
                   CT_ERR_INVALID_WORKLOAD);
  ck_assert_ptr_nonnull(strstr(msg, "strid"));
  const ct_status st = ct_workload_parse(
      "{\"op\": \"conv2d\", \"c\": 0, \"k\": 64, \"h\": 56, \"w\": 56, \"kernel\": 3}", &w,
      msg, sizeof msg);
  ck_assert_msg(st == CT_ERR_INVALID_WORKLOAD || st == CT_ERR_PARSE, "%s", ct_status_name(st));
  ck_assert_int_gt((int)strlen(msg), 0);
  ck_assert_int_eq(ct_workload_parse("{\"op\": ", &w, msg, sizeof msg), CT_ERR_PARSE);
  ck_assert_int_eq(ct_workload_parse(NULL, &w, msg, sizeof msg), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(msg, "NULL"));
  ck_assert_int_eq(ct_workload_parse(keys[0], NULL, NULL, 0), CT_ERR_INVALID_ARG);
  char tiny[8];
  ck_assert_int_eq(ct_workload_parse("nonsense", &w, tiny, sizeof tiny), CT_ERR_PARSE);
  ck_assert_uint_eq(strlen(tiny), sizeof tiny - 1); /* truncated and terminated */
  /* invalid workloads: no dims, no ops */
  ct_workload bad;
  ck_assert_int_eq(ct_workload_parse(keys[0], &bad, NULL, 0), CT_OK);
  bad.c = 0;
  ck_assert_int_eq(ct_workload_out_dims(&bad, dims), 0);
  ck_assert_int_eq(ct_workload_ops(&bad), -1);
  ck_assert_int_eq(ct_workload_json(&bad, msg, sizeof msg), CT_ERR_INVALID_WORKLOAD);
  ck_assert_ptr_nonnull(strstr(msg, "c (input channels)"));
  ck_assert_int_eq(ct_workload_json(NULL, msg, sizeof msg), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(ct_workload_out_dims(NULL, dims), 0);
  ck_assert_int_eq(ct_workload_out_dims(&w, NULL), 0);
  ck_assert_int_eq(ct_workload_ops(NULL), -1);
}
END_TEST

static void add_lookup(TCase *tc) {
  tcase_add_test(tc, exact_then_same_cc_then_neither);
  tcase_add_test(tc, old_template_version_ignored);
  tcase_add_test(tc, chain_pick_serves_first);
  tcase_add_test(tc, the_fastest_template_serves_a_workload);
  tcase_add_test(tc, nearest_valid_candidate);
  tcase_add_test(tc, nearest_falls_through_invalid_candidates);
  tcase_add_test(tc, nearest_alone_for_the_tuner);
  tcase_add_test(tc, retired_best_for_the_tuner);
  tcase_add_test(tc, no_valid_candidate_is_default);
  tcase_add_test(tc, no_database_is_default);
  tcase_add_test(tc, open_arch_explains_by_compute_capability);
  tcase_add_test(tc, open_reads_a_readonly_folder);
  tcase_add_test(tc, layouts_resolve_to_their_templates);
  tcase_add_test(tc, grouped_layers_default_to_their_families);
  tcase_add_test(tc, nhwc_dense_before_sm90_points_to_packed);
  tcase_add_test(tc, records_serve_their_layout);
  tcase_add_test(tc, nearest_records_are_of_the_same_kind);
  tcase_add_test(tc, fuse_estimate_by_records);
  tcase_add_test(tc, records_carry_to_other_output_types);
  tcase_add_test(tc, nhwc_weights_are_not_packed);
}

static void add_default(TCase *tc) {
  tcase_add_test(tc, default_deterministic_valid_for_resnet50);
  tcase_add_test(tc, default_valid_for_resnet3d18);
  tcase_add_test(tc, distance_properties);
}

static void add_errors(TCase *tc) {
  tcase_add_test(tc, open_rejects_bad_databases_unchanged);
  tcase_add_test(tc, open_rejects_bad_arguments);
  tcase_add_test(tc, conv_rejects_bad_arguments);
  tcase_add_test(tc, explain_and_helpers_reject_bad_arguments);
  tcase_add_test(tc, workload_parse_shape_and_ops);
  tcase_add_test(tc, strerror_of_every_status);
  tcase_add_test(tc, library_prints_nothing);
}

static void add_threads(TCase *tc) {
  tcase_add_test(tc, concurrent_explain_matches_serial);
}

static const test_case suite_cases[] = {
    {"lookup", 120, add_lookup},
    {"default", 300, add_default},
    {"errors", 120, add_errors},
    {"threads", 300, add_threads},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"dispatch", suite_cases, 0, NULL};
  return test_main(&suite);
}
