/*
 * test_tune_gpu.c (label gpu): the whole tuning loop on the GPU.
 *
 * Planted faults: a template that wraps conv2d_nchw4c_dp4a with a "fault"
 * knob (templates/fault_dp4a.cu: out-of-bounds write, endless loop, compile
 * error, wrong value, launch refused) is tuned by the random strategy; every
 * trial must be recorded with the outcome its fault predicts, every clean
 * config must be OK, and the run must complete. Then resume: tuning the same
 * task again measures no config twice. Channels-last: an nhwc workload is
 * tuned as it is on the nhwc templates (its records carry the nhwc key,
 * none the packed one), an nhwc stem (C % 16 != 0) is tuned on the
 * channels-last mma template, exact, and a layer no nhwc template runs (C
 * 3 with a dilation along W) is refused with a message naming the layout;
 * the wgmma part is skipped, with a message, when the GPU is not sm_90.
 * A workload's first trial is the nearest tuned workload's best config,
 * or with none tuned the template's default; after a template change, its
 * own best config under the retired version. The pool (tuner/pool.c) on
 * every GPU of the machine (up to 4) tunes each of its tasks once, with
 * the planted faults, every trial recorded once.
 * Exits 77 without a GPU.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "resolve/resolve.h"
#include "tuner/pool.h"
#include "tuner/tune.h"
#include "tests/tuner_probe.h"
#include "tests/util.h"

static const int fault_values[] = {0, 1, 2, 3, 4, 5};
static const outcome expected[] = {
    OUT_OK, OUT_RUNTIME_ERROR, OUT_TIMEOUT, OUT_COMPILE_ERROR, OUT_WRONG_ANSWER, OUT_LAUNCH_ERROR};

static const template_desc *real(void) {
  return template_find("conv2d_nchw4c_dp4a");
}

static int f_supports(const ct_workload *w, char *why) {
  return real()->supports(w, why);
}

static ct_status f_space(const ct_workload *w, space *s, ct_err *err) {
  ct_status st = real()->space(w, s, err);
  return st ? st : space_add_choice(s, "fault", fault_values, 6, err);
}

static int f_valid(const ct_workload *w, const space *s, const config *c, const arch *a,
                   char *why) {
  return real()->valid(w, s, c, a, why);
}

static ct_status f_instance(const ct_workload *w, const space *s, const config *c, const arch *a,
                            instance *inst, ct_err *err) {
  ct_status st = real()->instance(w, s, c, a, inst, err);
  if (st) return st;
  int fault = space_get(s, c, "fault", 0);
  snprintf(inst->options[inst->n_options++], INSTANCE_OPTION_MAX, "-DCT_FAULT=%d", fault);
  if (fault == 5) inst->smem_bytes = 4u << 20; /* 4 MB: no GPU has it */
  return CT_OK;
}

static const template_desc fault_tpl = {
    .name = "fault_dp4a",
    .source = "fault_dp4a.cu",
    .op = CT_OP_CONV2D,
    .layout = CT_LAYOUT_NCHW4C,
    .supports = f_supports,
    .space = f_space,
    .valid = f_valid,
    .instance = f_instance,
};

static char db_path[256], near_path[256], retired_path[256], pool_path[256];

static void small_workload(ct_workload *w) {
  workload_init(w, CT_OP_CONV2D);
  w->layout = CT_LAYOUT_NCHW4C;
  w->n = 2, w->c = 16, w->k = 16;
  w->in[0] = w->in[1] = 14;
  w->kernel[0] = w->kernel[1] = 3;
  w->pad_before[0] = w->pad_before[1] = w->pad_after[0] = w->pad_after[1] = 1;
}

static int fault_of(const trial *t) {
  cJSON *j = NULL;
  ck_assert_int_eq(json_parse(t->config_json, "config", &j, NULL), CT_OK);
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "fault");
  ck_assert_ptr_nonnull(f);
  int v = f->valueint;
  cJSON_Delete(j);
  return v;
}

START_TEST(planted_faults_are_recorded_and_tuning_completes) {
  tune_opts o;
  tune_opts_default(&o);
  search_opts_default(&o.search, "random");
  o.search.seed = 5;
  o.n_trials = 96;
  o.transfer = 0;
  o.runner.timeout_s = 1.0;
  tuner *t = NULL;
  ct_err err = {0};
  ck_assert_msg(tuner_open(db_path, &o, &t, &err) == CT_OK, "%s", err.msg);
  ct_workload w;
  small_workload(&w);
  tune_result res;
  ck_assert_msg(tuner_tune(t, "planted", &w, &fault_tpl, NULL, NULL, &res, &err) == CT_OK, "%s",
                err.msg);
  ck_assert_int_eq(res.n_trials, 96);
  ck_assert(res.best_us > 0);
  printf("planted faults: %d trials, outcomes:", res.n_trials);
  for (int i = 0; i < OUT_COUNT; i++) printf(" %s %d", outcome_name((outcome)i), res.by_outcome[i]);
  printf("\n");
  tuner_close(t);

  db *d = NULL;
  ck_assert_int_eq(db_open(db_path, 1, &d, &err), CT_OK);
  char key[CT_KEY_MAX];
  trial *tr = NULL;
  int n = 0;
  ck_assert_int_eq(
      db_trials(d, workload_key(&w, key, sizeof key), NULL, "fault_dp4a", NULL, &tr, &n, &err),
      CT_OK);
  ck_assert_int_eq(n, 96);
  int seen[6] = {0};
  for (int i = 0; i < n; i++) {
    int f = fault_of(&tr[i]);
    seen[f]++;
    ck_assert_msg(tr[i].outcome == expected[f], "fault %d recorded as %s: %s", f,
                  outcome_name(tr[i].outcome), tr[i].error ? tr[i].error : "");
    if (f) ck_assert_msg(tr[i].error && tr[i].error[0], "fault %d without a log excerpt", f);
  }
  for (int f = 0; f < 6; f++) ck_assert_msg(seen[f] > 0, "fault %d never drawn", f);
  trials_free(tr, n);
  db_close(d);
}
END_TEST

START_TEST(resume_never_measures_a_config_twice) {
  tune_opts o;
  tune_opts_default(&o);
  search_opts_default(&o.search, "xgb");
  o.search.seed = 9;
  o.n_trials = 80;
  o.transfer = 0;
  ct_workload w;
  small_workload(&w);
  w.n = 1;
  const template_desc *tpl = real();
  tune_result r1, r2;
  ct_err err = {0};
  for (int run = 0; run < 2; run++) {
    tuner *t = NULL;
    ck_assert_msg(tuner_open(db_path, &o, &t, &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(tuner_tune(t, "resume", &w, tpl, NULL, NULL, run ? &r2 : &r1, &err) == CT_OK,
                  "%s", err.msg);
    tuner_close(t);
  }
  ck_assert_int_eq(r1.n_resumed, 0);
  ck_assert_int_eq(r2.n_resumed, 80);
  ck_assert_int_eq(r2.n_trials, 80);
  ck_assert(r2.best_us > 0 && r2.best_us <= r1.best_us);
  db *d = NULL;
  ck_assert_int_eq(db_open(db_path, 1, &d, &err), CT_OK);
  char key[CT_KEY_MAX];
  trial *tr = NULL;
  int n = 0;
  ck_assert_int_eq(
      db_trials(d, workload_key(&w, key, sizeof key), NULL, tpl->name, NULL, &tr, &n, &err), CT_OK);
  ck_assert_int_eq(n, 160);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      ck_assert_msg(tr[i].config_index != tr[j].config_index, "config %llu measured twice",
                    (unsigned long long)tr[i].config_index);
  /* the best config's cubin is in the kernel cache */
  trial best;
  db_match m;
  db_device dev = tr[0].device;
  ck_assert_int_eq(db_best(d, key, &dev, tpl->name, NULL, &best, &m, &err), CT_OK);
  void *data = NULL;
  size_t size = 0;
  ck_assert_int_eq(
      db_load_kernel(d, best.template_version, best.options, best.arch, &data, &size, &err), CT_OK);
  ck_assert_uint_gt(size, 0);
  free(data);
  trial_free(&best);
  trials_free(tr, n);
  db_close(d);
}
END_TEST

START_TEST(nhwc_is_tuned_as_it_is) {
  tune_opts o;
  tune_opts_default(&o);
  search_opts_default(&o.search, "random");
  o.search.seed = 3;
  o.n_trials = 16;
  o.transfer = 0;
  tuner *t = NULL;
  ct_err err = {0};
  ck_assert_msg(tuner_open(db_path, &o, &t, &err) == CT_OK, "%s", err.msg);
  tune_result res;
  /* the stem (C % 16 != 0): a stem template's (conv2d_nhwc_mma, on sm_90
   * also conv2d_nhwc_wgmma_stem), as it is, exact */
  ct_workload stem;
  small_workload(&stem);
  stem.layout = CT_LAYOUT_NHWC;
  stem.c = 3;
  stem.k = 64;
  stem.kernel[0] = stem.kernel[1] = 7;
  stem.stride[0] = stem.stride[1] = 2;
  stem.pad_before[0] = stem.pad_before[1] = stem.pad_after[0] = stem.pad_after[1] = 3;
  ck_assert_msg(tuner_tune(t, "stem", &stem, NULL, NULL, NULL, &res, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(!strcmp(res.template_name, "conv2d_nhwc_mma") ||
                    !strcmp(res.template_name, "conv2d_nhwc_wgmma_stem"),
                "%s", res.template_name);
  ck_assert_int_eq(res.n_trials, 16);
  ck_assert_int_eq(res.by_outcome[OUT_WRONG_ANSWER], 0);
  ck_assert_msg(res.best_us > 0, "no OK trial of the stem: %d invalid",
                res.by_outcome[OUT_INVALID]);
  printf("nhwc stem: %d trials, best %.2f us (%s)\n", res.n_trials, res.best_us, res.best_config);
  /* a dilation along W as well: no tensor-core nhwc template runs it; the
   * channels-last fallback does (issue 35), nothing is converted */
  stem.dilation[1] = 2;
  err = (ct_err){0};
  ck_assert_msg(tuner_tune(t, "dil", &stem, NULL, NULL, NULL, &res, &err) == CT_OK, "%s", err.msg);
  ck_assert_str_eq(res.template_name, "conv2d_nhwc_grouped");
  ck_assert_int_eq(res.by_outcome[OUT_WRONG_ANSWER], 0);
  const template_desc *tpl = template_find("conv2d_nhwc_wgmma");
  const arch *a = &tuner_device(t)->arch;
  ck_assert_ptr_nonnull(tpl);
  if (a->cc_major != 9 || a->cc_minor != 0) {
    tuner_close(t);
    test_skip("nhwc tuning (the stems ran)", "the nhwc templates run on sm_90 only, this is %s",
              a->name);
    return;
  }
  ct_workload w;
  small_workload(&w);
  w.layout = CT_LAYOUT_NHWC;
  w.c = w.k = 64;
  err = (ct_err){0};
  ck_assert_msg(tuner_tune(t, "nhwc", &w, NULL, NULL, NULL, &res, &err) == CT_OK, "%s", err.msg);
  char key[CT_KEY_MAX], pkey[CT_KEY_MAX];
  workload_key(&w, key, sizeof key);
  ck_assert_str_eq(res.key, key);
  ck_assert_str_eq(res.template_name, tpl->name);
  ck_assert_int_eq(res.n_trials, 16);
  ck_assert_msg(res.best_us > 0, "no OK trial: %d invalid, %d wrong", res.by_outcome[OUT_INVALID],
                res.by_outcome[OUT_WRONG_ANSWER]);
  ck_assert_int_eq(res.by_outcome[OUT_WRONG_ANSWER], 0);
  printf("nhwc: %d trials, best %.2f us (%s)\n", res.n_trials, res.best_us, res.best_config);
  tuner_close(t);
  db *d = NULL;
  ck_assert_int_eq(db_open(db_path, 1, &d, &err), CT_OK);
  trial *tr = NULL;
  int n = 0;
  ck_assert_int_eq(db_trials(d, key, NULL, NULL, NULL, &tr, &n, &err), CT_OK);
  ck_assert_int_eq(n, 16);
  for (int i = 0; i < n; i++) ck_assert_str_eq(tr[i].template_name, tpl->name);
  trials_free(tr, n);
  ct_workload pw;
  workload_packed(&w, &pw);
  ck_assert_int_eq(
      db_trials(d, workload_key(&pw, pkey, sizeof pkey), NULL, NULL, NULL, &tr, &n, &err), CT_OK);
  ck_assert_int_eq(n, 0); /* nothing was packed */
  trials_free(tr, n);
  db_close(d);
}
END_TEST

/* A workload's first trial is what the dispatch ran for it untuned: the
 * best config of the nearest tuned workload (resolve_nearest), ahead of
 * the template's default and the strategy's draws; with nothing tuned, the
 * default (resolve_default: this template has no preferred hook, so the
 * dispatch's scored sample). */
START_TEST(the_first_trial_is_the_nearest_best) {
  tune_opts o;
  tune_opts_default(&o);
  search_opts_default(&o.search, "random");
  o.search.seed = 11;
  o.n_trials = 24;
  o.transfer = 0;
  const template_desc *tpl = real();
  ct_workload w, w3;
  small_workload(&w);
  w3 = w;
  w3.n = 4; /* twice w's batch: every split of w's carries over */
  ct_err err = {0};
  tune_result res;
  for (int run = 0; run < 2; run++) { /* w for 24 trials, then w3 for one */
    tuner *t = NULL;
    ck_assert_msg(tuner_open(near_path, &o, &t, &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(tuner_tune(t, "near", run ? &w3 : &w, tpl, NULL, NULL, &res, &err) == CT_OK, "%s",
                  err.msg);
    tuner_close(t);
    ck_assert_int_eq(res.n_trials, o.n_trials);
    o.n_trials = 1;
  }
  db *d = NULL;
  ck_assert_int_eq(db_open(near_path, 1, &d, &err), CT_OK);
  char key[CT_KEY_MAX], from[CT_KEY_MAX], wkey[CT_KEY_MAX];
  trial *tr = NULL;
  int n = 0, found = 0;
  ck_assert_int_eq(
      db_trials(d, workload_key(&w3, key, sizeof key), NULL, tpl->name, NULL, &tr, &n, &err),
      CT_OK);
  ck_assert_int_eq(n, 1);
  ck_assert_int_eq(tr[0].outcome, OUT_OK);
  /* what the dispatch runs for w3 without its own record (it skips w3's) */
  arch a;
  ck_assert_int_eq(arch_from_name(tr[0].arch, &a, &err), CT_OK);
  space s;
  config want;
  ck_assert_int_eq(template_space(tpl, &w3, &s, &err), CT_OK);
  ck_assert_int_eq(
      resolve_nearest(d, &tr[0].device, &a, tpl, &w3, &want, from, sizeof from, &found, &err),
      CT_OK);
  ck_assert_int_eq(found, 1);
  ck_assert_str_eq(from, workload_key(&w, wkey, sizeof wkey));
  ck_assert_msg(tr[0].config_index == space_index(&s, &want), "first trial %s", tr[0].config_json);
  space_free(&s);
  trials_free(tr, n);
  /* w's first trial, when nothing was tuned: the default */
  ck_assert_ptr_null(tpl->preferred);
  ck_assert_int_eq(
      db_trials(d, workload_key(&w, key, sizeof key), NULL, tpl->name, NULL, &tr, &n, &err), CT_OK);
  ck_assert_int_eq(n, 24);
  ck_assert_int_eq(template_space(tpl, &w, &s, &err), CT_OK);
  ck_assert_int_eq(resolve_default(tpl, &w, &s, &a, &want, &err), CT_OK);
  ck_assert_msg(tr[0].config_index == space_index(&s, &want), "first trial %s", tr[0].config_json);
  space_free(&s);
  trials_free(tr, n);
  db_close(d);
}
END_TEST

/* After a template change (the version of every record but the new one's
 * retired: here the records of 24 trials copied under another version), a
 * workload's first trial is its best config of before, measured again
 * under the current version, ahead of the nearest and the default. */
START_TEST(the_first_trial_is_the_retired_best) {
  tune_opts o;
  tune_opts_default(&o);
  search_opts_default(&o.search, "random");
  o.search.seed = 12;
  o.n_trials = 24;
  o.transfer = 0;
  const template_desc *tpl = real();
  ct_workload w;
  small_workload(&w);
  ct_err err = {0};
  tune_result res;
  char fresh[300];
  snprintf(fresh, sizeof fresh, "%s.fresh", retired_path);
  tuner *t = NULL;
  ck_assert_msg(tuner_open(fresh, &o, &t, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(tuner_tune(t, "retired", &w, tpl, NULL, NULL, &res, &err) == CT_OK, "%s", err.msg);
  tuner_close(t);
  /* the 24 trials under a retired version, in a database of their own */
  db *d = NULL;
  char key[CT_KEY_MAX];
  trial *tr = NULL;
  int n = 0;
  workload_key(&w, key, sizeof key);
  ck_assert_int_eq(db_open(fresh, 1, &d, &err), CT_OK);
  ck_assert_int_eq(db_trials(d, key, NULL, tpl->name, NULL, &tr, &n, &err), CT_OK);
  db_close(d);
  ck_assert_int_eq(n, 24);
  /* the default, which a tuning measures first without the retired record */
  arch a;
  space s;
  config dflt;
  ck_assert_int_eq(arch_from_name(tr[0].arch, &a, &err), CT_OK);
  ck_assert_int_eq(template_space(tpl, &w, &s, &err), CT_OK);
  ck_assert_int_eq(resolve_default(tpl, &w, &s, &a, &dflt, &err), CT_OK);
  const uint64_t dflt_index = space_index(&s, &dflt);
  space_free(&s);
  /* the retired best: an OK trial other than the default, made the fastest */
  int best = -1;
  for (int i = 0; i < n; i++) {
    ck_assert_str_eq(tr[i].template_version, template_version(tpl));
    snprintf(tr[i].template_version, sizeof tr[i].template_version, "0000000000000000");
    tr[i].uid[0] = 'r'; /* another uid, the same trial */
    if (best < 0 && tr[i].outcome == OUT_OK && tr[i].config_index != dflt_index) best = i;
  }
  ck_assert_int_ge(best, 0);
  tr[best].median_us = 1e-3;
  const uint64_t want = tr[best].config_index;
  ck_assert_int_eq(db_open(retired_path, 0, &d, &err), CT_OK);
  ck_assert_msg(db_insert_trials(d, tr, n, NULL, &err) == CT_OK, "%s", err.msg);
  db_close(d);
  trials_free(tr, n);
  /* tuned again, one trial: the retired best */
  o.n_trials = 1;
  ck_assert_msg(tuner_open(retired_path, &o, &t, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(tuner_tune(t, "retired", &w, tpl, NULL, NULL, &res, &err) == CT_OK, "%s", err.msg);
  tuner_close(t);
  ck_assert_int_eq(res.n_trials, 1);
  ck_assert_int_eq(db_open(retired_path, 1, &d, &err), CT_OK);
  ck_assert_int_eq(db_trials(d, key, NULL, tpl->name, template_version(tpl), &tr, &n, &err), CT_OK);
  db_close(d);
  ck_assert_int_eq(n, 1);
  ck_assert_msg(tr[0].config_index == want, "first trial %s", tr[0].config_json);
  trials_free(tr, n);
}
END_TEST

typedef struct pool_seen {
  int gpus[POOL_MAX_GPUS];
  long last_total;
} pool_seen;

static void pool_progress_cb(void *user, const pool_progress *p) {
  pool_seen *s = user;
  ck_assert(p->gpu >= 0 && p->gpu < POOL_MAX_GPUS);
  s->gpus[p->gpu]++;
  ck_assert_int_ge(p->trials, s->last_total); /* reports are serialised */
  s->last_total = p->trials;
}

START_TEST(a_pool_tunes_every_task_once) {
  ct_err err = {0};
  int n = runner_device_count(&err);
  ck_assert_msg(n >= 1, "%s", err.msg);
  if (n > 4) n = 4;
  int devs[] = {0, 1, 2, 3};
  tune_opts o;
  tune_opts_default(&o);
  search_opts_default(&o.search, "random");
  o.search.seed = 7;
  o.n_trials = 24;
  o.transfer = 0;
  o.runner.timeout_s = 1.0;
  tune_pool *p = NULL;
  ck_assert_msg(tune_pool_open(pool_path, &o, devs, n, &p, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(tune_pool_gpus(p), n);
  const int kinds = tune_pool_kinds(p);
  enum { N_TASKS = 5 };
  pool_task tasks[N_TASKS];
  char names[N_TASKS][16];
  for (int i = 0; i < N_TASKS; i++) {
    snprintf(names[i], sizeof names[i], "pool%d", i);
    tasks[i] = (pool_task){.name = names[i], .tpl = &fault_tpl};
    small_workload(&tasks[i].w);
    tasks[i].w.n = i + 1; /* five keys */
  }
  tune_result res[N_TASKS * 4];
  pool_seen seen = {0};
  ck_assert_msg(tune_pool_run(p, tasks, N_TASKS, pool_progress_cb, &seen, res, &err) == CT_OK, "%s",
                err.msg);
  long all = 0;
  int busy = 0;
  for (int g = 0; g < n; g++) {
    long tr;
    double s;
    tune_pool_gpu_stats(p, g, &tr, &s);
    all += tr;
    busy += tr > 0;
    printf("pool: gpu %d (device %d, kind %d): %ld trials in %.1f s, %d reports\n", g,
           tune_pool_device(p, g)->ordinal, tune_pool_kind(p, g), tr, s, seen.gpus[g]);
  }
  tune_pool_close(p);
  ck_assert_int_eq(all, (long)N_TASKS * 24 * kinds);
  /* each GPU takes a task as it starts: with one kind, min(n, 5) GPUs work */
  if (kinds == 1) ck_assert_int_ge(busy, n < N_TASKS ? n : N_TASKS);
  db *d = NULL;
  ck_assert_int_eq(db_open(pool_path, 1, &d, &err), CT_OK);
  char uids[N_TASKS * 4 * 24][40];
  int n_uids = 0;
  for (int i = 0; i < N_TASKS; i++) {
    for (int k = 0; k < kinds; k++) {
      const tune_result *r = &res[i * kinds + k];
      ck_assert_int_eq(r->n_trials, 24);
      ck_assert_msg(r->best_us > 0, "task %d on kind %d: no OK trial", i, k);
    }
    char key[CT_KEY_MAX];
    trial *tr = NULL;
    int m = 0;
    ck_assert_int_eq(db_trials(d, workload_key(&tasks[i].w, key, sizeof key), NULL, "fault_dp4a",
                               NULL, &tr, &m, &err),
                     CT_OK);
    ck_assert_int_eq(m, 24 * kinds);
    for (int j = 0; j < m; j++) {
      int f = fault_of(&tr[j]);
      ck_assert_msg(tr[j].outcome == expected[f], "fault %d recorded as %s", f,
                    outcome_name(tr[j].outcome));
      for (int u = 0; u < n_uids; u++) ck_assert_str_ne(uids[u], tr[j].uid);
      snprintf(uids[n_uids++], sizeof uids[0], "%s", tr[j].uid);
    }
    trials_free(tr, m);
  }
  db_close(d);
}
END_TEST

static void add_tune_gpu(TCase *tc) {
  tcase_add_test(tc, planted_faults_are_recorded_and_tuning_completes);
  tcase_add_test(tc, resume_never_measures_a_config_twice);
  tcase_add_test(tc, nhwc_is_tuned_as_it_is);
  tcase_add_test(tc, the_first_trial_is_the_nearest_best);
  tcase_add_test(tc, the_first_trial_is_the_retired_best);
  tcase_add_test(tc, a_pool_tunes_every_task_once);
}

static const test_case suite_cases[] = {
    {"tune_gpu", 600, add_tune_gpu},
    {NULL, 0, NULL},
};

/* test_main's probe (tests/tuner_probe.h), the databases in the run's
 * scratch folder. */
static int have_gpu(char *why, size_t size) {
  snprintf(db_path, sizeof db_path, "%s/t.db", test_root());
  snprintf(near_path, sizeof near_path, "%s/near.db", test_root());
  snprintf(retired_path, sizeof retired_path, "%s/retired.db", test_root());
  snprintf(pool_path, sizeof pool_path, "%s/pool.db", test_root());
  return tuner_probe(why, size);
}

int main(void) {
  static const test_suite suite = {"tune_gpu", suite_cases, 1, have_gpu};
  return test_main(&suite);
}
