/*
 * tune.c: the tuning loop (see tune.h).
 *
 * Compilation overlaps measurement inside a batch: the whole batch is
 * submitted to the builder's processes at once and the runner measures each
 * cubin as soon as it comes back, so the GPU waits only for the first
 * compile of a batch. The model learns between batches (its proposals depend
 * on the batch's results). One database transaction per batch: a crash
 * loses at most the batch in flight, and a resumed task never measures a
 * config twice. A task is a session (open: resume, transfer, first configs;
 * run: batches; close): tuner_tune opens, runs and closes each of its
 * tasks, a scheduler (sched.h) runs a session in rounds. A run is named
 * steps: next_batch (stop or propose), compile_batch and measure_batch
 * (builder and runner), record_batch (the store), learn_batch (the
 * strategy) and report_batch (progress). Storage is the store's (store.h:
 * the database by default): the loop reads and writes trials only through
 * it.
 */
#include "tuner/tune.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/json.h"
#include "resolve/resolve.h"
#include "tuner/store.h"

#define ERROR_EXCERPT_MAX 2000

struct tuner {
  tune_opts opts;
  builder *b;
  int client; /* this tuner's client number in b (0 unless shared) */
  int shared; /* b and store belong to a pool (tuner_open_shared) */
  runner *r;
  device dev;
  tune_store store; /* the database's (tune_store_db_open), or the pool's */
  char session[40];
  long seq; /* trials recorded in this session: uids */
  /* The session whose workload the runner holds (NULL: none, or not one a
   * session set): a session's run sets the runner's task only when another
   * one had it, and a session that closes clears it. */
  const tune_session *runner_owner;
};

/* A task held open across runs (tune.h). */
struct tune_session {
  tuner *t;
  char *name; /* owned */
  const template_desc *tpl;
  ct_workload w;
  char key[CT_KEY_MAX];
  space s;
  int has_space;
  search *se;
  int batch_cap;
  /* one batch's configs, instances, trials and costs, reused per batch */
  config *cfgs;
  instance *insts;
  trial *trials;
  double *costs;
  cubin best_cb; /* the cubin of the best config measured in this session */
  uint64_t best_index;
  tune_progress p;
  tune_result res; /* summed over the runs */
  int since_best, exhausted, n_runs, n_transfer;
};

void tune_opts_default(tune_opts *o) {
  memset(o, 0, sizeof *o);
  search_opts_default(&o->search, "xgb");
  o->n_trials = 1000;
  o->early_stopping = 0;
  o->time_budget_s = 0;
  o->transfer = 1;
  o->n_builders = 0;
  runner_opts_default(&o->runner);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* tune.h. Time and pid were not enough: two tuners of one process in one
 * second had one name, and so had ranks on two hosts (or containers)
 * whose processes had the same pid; the later one's trials were not
 * recorded (the database keeps the first row of a uid). The random bits
 * come from getrandom; where it fails, from the clock's nanoseconds, the
 * pid, an address and a counter, mixed. */
void tune_session_name(char *buf, size_t size, int ordinal) {
  static unsigned long long counter;
  unsigned long long r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)getpid() << 32) ^
        (unsigned long long)(uintptr_t)&ts ^ __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    r ^= r >> 33, r *= 0xff51afd7ed558ccdULL, r ^= r >> 33; /* murmur3's finaliser */
  }
  r &= (1ULL << 40) - 1;
  if (ordinal < 0)
    snprintf(buf, size, "%lx-%010llx", (unsigned long)time(NULL), r);
  else
    snprintf(buf, size, "%lx-%010llx-%d", (unsigned long)time(NULL), r, ordinal);
}

ct_status tuner_open(const char *db_path, const tune_opts *o, tuner **out, ct_err *err) {
  *out = NULL;
  tuner *t = calloc(1, sizeof *t);
  if (!t) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  t->opts = *o;
  ct_status st;
  /* The runner identifies the device; the builder needs its architecture
   * but must fork before anything initialises CUDA in this process, which
   * nothing here does: both fork, only the runner's child touches CUDA. */
  if ((st = runner_start(&o->runner, &t->r, &t->dev, err))) goto fail;
  if ((st = builder_start(o->n_builders, &t->dev.arch, &t->b, err))) goto fail;
  if ((st = tune_store_db_open(db_path, &t->dev, &t->store, err))) goto fail;
  tune_session_name(t->session, sizeof t->session, -1);
  *out = t;
  return CT_OK;
fail:
  tuner_close(t);
  return st;
}

ct_status tuner_open_shared(const tune_opts *o, runner *r, const device *dev, builder *b,
                            int client, const tune_store *store, tuner **out, ct_err *err) {
  *out = NULL;
  tuner *t = calloc(1, sizeof *t);
  if (!t) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  t->opts = *o;
  t->opts.runner.device = dev->ordinal;
  t->r = r;
  t->dev = *dev;
  t->b = b;
  t->client = client;
  t->shared = 1;
  t->store = *store;
  /* the device in the session too: the pool's tuners open at once */
  tune_session_name(t->session, sizeof t->session, dev->ordinal);
  *out = t;
  return CT_OK;
}

void tuner_close(tuner *t) {
  if (!t) return;
  if (t->b && !t->shared) builder_stop(t->b);
  if (t->r) runner_stop(t->r);
  if (t->store.close && !t->shared) t->store.close(t->store.ctx);
  free(t);
}

const device *tuner_device(const tuner *t) {
  return &t->dev;
}

static double tops(const ct_workload *w, double us) {
  return us > 0 ? (double)workload_ops(w) / (us * 1e-6) / 1e12 : 0;
}

/* Options joined by spaces (the record's provenance and the cache key). */
static char *join_options(const instance *inst) {
  size_t len = 1;
  for (int i = 0; i < inst->n_options; i++) len += strlen(inst->options[i]) + 1;
  char *s = malloc(len), *p = s;
  if (!s) return NULL;
  for (int i = 0; i < inst->n_options; i++) p += sprintf(p, i ? " %s" : "%s", inst->options[i]);
  *p = '\0';
  return s;
}

static char *excerpt(const char *text) {
  if (!text) return NULL;
  size_t n = strlen(text);
  if (n > ERROR_EXCERPT_MAX) n = ERROR_EXCERPT_MAX;
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, text, n);
    s[n] = '\0';
  }
  return s;
}

/* Transfer learning: features and costs of other workloads' trials of tpl on
 * this device. Each workload's space is built once. Returns the rows given
 * to the strategy. */
static int seed_transfer(tuner *t, search *se, const template_desc *tpl, const char *key) {
  trial *tr = NULL;
  int n = 0;
  if (t->store.trials_other(t->store.ctx, key, tpl, TUNE_TRANSFER_MAX, &tr, &n, NULL) || n == 0) {
    trials_free(tr, n);
    return 0;
  }
  float *rows = malloc(sizeof *rows * SEARCH_MAX_FEATURES * n);
  double *cost = malloc(sizeof *cost * n);
  int *group = malloc(sizeof *group * n);
  enum { MAX_GROUPS = 64 };
  char *keys[MAX_GROUPS];
  ct_workload ws[MAX_GROUPS];
  space spaces[MAX_GROUPS];
  int n_groups = 0, n_rows = 0, n_features = 0;
  for (int i = 0; rows && cost && group && i < n; i++) {
    int g = 0;
    while (g < n_groups && strcmp(keys[g], tr[i].workload_key)) g++;
    if (g == n_groups) {
      if (n_groups == MAX_GROUPS) continue;
      if (workload_from_key(tr[i].workload_key, &ws[g], NULL) ||
          template_space(tpl, &ws[g], &spaces[g], NULL))
        continue;
      keys[n_groups++] = tr[i].workload_key;
    }
    cJSON *j = NULL;
    config c;
    if (json_parse(tr[i].config_json, "config", &j, NULL) ||
        space_config_from_json(&spaces[g], j, &c, NULL)) {
      cJSON_Delete(j);
      continue;
    }
    cJSON_Delete(j);
    int nf = search_features(tpl, &ws[g], &spaces[g], &c,
                             rows + (size_t)n_rows * SEARCH_MAX_FEATURES, SEARCH_MAX_FEATURES);
    if (n_features && nf != n_features) continue;
    n_features = nf;
    cost[n_rows] = tr[i].outcome == OUT_OK ? tr[i].median_us : INFINITY;
    group[n_rows++] = g;
  }
  /* rows were written with stride SEARCH_MAX_FEATURES; pack them */
  for (int i = 1; i < n_rows; i++)
    memmove(rows + (size_t)i * n_features, rows + (size_t)i * SEARCH_MAX_FEATURES,
            sizeof *rows * n_features);
  if (n_rows) search_transfer(se, rows, cost, group, n_rows, n_features);
  for (int g = 0; g < n_groups; g++) space_free(&spaces[g]);
  free(rows);
  free(cost);
  free(group);
  trials_free(tr, n);
  return n_rows;
}

/* Resume: feed the task's recorded trials to the strategy. Returns how many,
 * and the best OK median among them in *best_us (0 if none). */
static int resume(tuner *t, search *se, const template_desc *tpl, const ct_workload *w,
                  const space *s, double *best_us) {
  char key[CT_KEY_MAX];
  trial *tr = NULL;
  int n = 0, fed = 0;
  *best_us = 0;
  if (t->store.trials(t->store.ctx, workload_key(w, key, sizeof key), tpl, &tr, &n, NULL)) return 0;
  for (int i = 0; i < n; i++) {
    cJSON *j = NULL;
    config c;
    if (json_parse(tr[i].config_json, "config", &j, NULL) ||
        space_config_from_json(s, j, &c, NULL)) {
      cJSON_Delete(j);
      continue;
    }
    cJSON_Delete(j);
    double cost = tr[i].outcome == OUT_OK ? tr[i].median_us : INFINITY;
    search_update(se, &c, &cost, 1);
    fed++;
    if (tr[i].outcome == OUT_OK && (*best_us == 0 || tr[i].median_us < *best_us))
      *best_us = tr[i].median_us;
  }
  trials_free(tr, n);
  return fed;
}

/* Make sure the kernel cache holds the cubin of the task's best config on
 * this device: from this run's copy when it is the best, else compiled. */
static ct_status cache_best(tuner *t, const template_desc *tpl, const ct_workload *w,
                            const space *s, const cubin *best_cb, uint64_t best_index,
                            tune_result *res, ct_err *err) {
  char key[CT_KEY_MAX];
  trial best = {0};
  int found = 0;
  ct_status st =
      t->store.best(t->store.ctx, workload_key(w, key, sizeof key), tpl, &best, &found, NULL);
  if (st || !found) {
    trial_free(&best);
    return CT_OK; /* nothing OK to store */
  }
  res->best_us = best.median_us;
  res->best_tops = tops(w, best.median_us);
  snprintf(res->best_config, sizeof res->best_config, "%s", best.config_json);
  if (t->store.has_kernel(t->store.ctx, &best)) {
    trial_free(&best);
    return CT_OK;
  }
  if (best_cb && best_cb->data && best_index == best.config_index) {
    st = t->store.put_kernel(t->store.ctx, &best, best_cb->data, best_cb->size, err);
    trial_free(&best);
    return st;
  }
  /* The best came from an earlier run: compile it again. */
  cJSON *j = NULL;
  config c;
  instance inst;
  cubin cb = {0};
  long tag;
  if ((st = json_parse(best.config_json, "best config", &j, err)) ||
      (st = space_config_from_json(s, j, &c, err)) ||
      (st = instance_make(tpl, w, s, &c, &t->dev.arch, &inst, err)) ||
      (st = builder_submit_for(t->b, t->client, &inst, -1, err)) ||
      (st = builder_collect_for(t->b, t->client, &tag, &cb, err)))
    goto done;
  st = t->store.put_kernel(t->store.ctx, &best, cb.data, cb.size, err);
done:
  cJSON_Delete(j);
  cubin_free(&cb);
  trial_free(&best);
  return st;
}

/* Queue the task's first trials: the workload's best config under a
 * retired version of the template, the best config of the nearest tuned
 * workload and, with dflt, the template's default (see
 * tune_session_open). */
static ct_status queue_first(tune_session *ss, int dflt, ct_err *err) {
  tuner *t = ss->t;
  config seed;
  int found = 0;
  ct_status st = t->store.retired(t->store.ctx, &t->dev.arch, ss->tpl, &ss->w, &seed, &found, err);
  if (st) return st;
  if (found) search_first(ss->se, &seed);
  st = t->store.nearest(t->store.ctx, &t->dev.arch, ss->tpl, &ss->w, &seed, &found, err);
  if (st) return st;
  if (found) search_first(ss->se, &seed);
  if (dflt && resolve_default(ss->tpl, &ss->w, &ss->s, &t->dev.arch, &seed, NULL) == CT_OK)
    search_first(ss->se, &seed);
  return CT_OK;
}

ct_status tune_session_open(tuner *t, const char *name, const ct_workload *w,
                            const template_desc *tpl, tune_session **out, ct_err *err) {
  *out = NULL;
  const tune_opts *o = &t->opts;
  tune_session *ss = calloc(1, sizeof *ss);
  if (!ss) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  ct_status st;
  ss->t = t;
  ss->tpl = tpl;
  ss->w = *w;
  ss->name = strdup(name ? name : "");
  workload_key(w, ss->key, sizeof ss->key);
  snprintf(ss->res.key, sizeof ss->res.key, "%s", ss->key);
  snprintf(ss->res.template_name, sizeof ss->res.template_name, "%s", tpl->name);
  ss->batch_cap = o->search.batch > 0 ? o->search.batch : 64;
  ss->cfgs = calloc(ss->batch_cap, sizeof *ss->cfgs);
  ss->insts = calloc(ss->batch_cap, sizeof *ss->insts);
  ss->trials = calloc(ss->batch_cap, sizeof *ss->trials);
  ss->costs = calloc(ss->batch_cap, sizeof *ss->costs);
  if (!ss->name || !ss->cfgs || !ss->insts || !ss->trials || !ss->costs) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto fail;
  }
  if ((st = template_space(tpl, w, &ss->s, err))) goto fail;
  ss->has_space = 1;
  if ((st = search_new(&o->search, tpl, w, &ss->s, &t->dev.arch, &ss->se, err))) goto fail;

  double best_us = 0;
  ss->res.n_resumed = resume(t, ss->se, tpl, w, &ss->s, &best_us);
  if (o->transfer && !strcmp(o->search.kind, "xgb"))
    ss->n_transfer = seed_transfer(t, ss->se, tpl, ss->key);
  /* the first trials, unless measured before: the workload's best config
   * under a retired version of the template (resolve_retired: a change to
   * the template or its headers retires every record, and a fresh search
   * of 64 trials can miss what 256 found: ResNet3D-18 b8's l1_3x3x3 lost
   * 19% so at e19bc32, its old config as fast as ever); what the dispatch
   * runs for this workload untuned, the best config of the nearest tuned
   * workload (resolve.h), then the template's default, the dispatch's own
   * (resolve_default: the preferred hook, else a scored sample). A model
   * or a random draw can miss both: on ResNet-50 b1's l4_3x3_512_s2, 64
   * trials held no split-K config, which fills the SMs there; on b16's
   * l4_1x1_2048_512 with 8-bit output, 64 trials ended at 5.34 us on the
   * H200, where untuned it ran in 4.36 on the best config of the nearest
   * tuned 8-bit layer (l4_1x1_1024_512's) */
  if ((st = queue_first(ss, 1, err))) goto fail;
  ss->p = (tune_progress){.name = ss->name,
                          .template_name = tpl->name,
                          .resumed = ss->res.n_resumed,
                          .best_us = best_us,
                          .best_tops = tops(w, best_us)};
  *out = ss;
  return CT_OK;
fail:
  tune_session_close(ss);
  return st;
}

void tune_session_close(tune_session *ss) {
  if (!ss) return;
  if (ss->t && ss->t->runner_owner == ss) ss->t->runner_owner = NULL;
  search_free(ss->se);
  if (ss->has_space) space_free(&ss->s);
  for (int i = 0; ss->trials && i < ss->batch_cap; i++) trial_free(&ss->trials[i]);
  cubin_free(&ss->best_cb);
  free(ss->cfgs);
  free(ss->insts);
  free(ss->trials);
  free(ss->costs);
  free(ss->name);
  free(ss);
}

int tune_session_since_best(const tune_session *ss) {
  return ss ? ss->since_best : 0;
}

int tune_session_exhausted(const tune_session *ss) {
  return ss ? ss->exhausted : 0;
}

int tune_session_transfer_rows(const tune_session *ss) {
  return ss ? ss->n_transfer : 0;
}

/* The search's fallback note (search_model_fallback) into the progress and
 * the result. */
static void note_fallback(tune_session *ss) {
  const char *note = search_model_fallback(ss->se);
  ss->p.model_fallback = note;
  if (note && !ss->res.model_fallback[0])
    snprintf(ss->res.model_fallback, sizeof ss->res.model_fallback, "%s", note);
}

/* Take the runner (a session sets its task only when another one had it)
 * and, on every run after the first, queue the first trials again (other
 * tasks' rounds may have changed the nearest tuned workload's best; what
 * was measured is not queued). */
static ct_status run_begin(tune_session *ss, int n_trials, ct_err *err) {
  tuner *t = ss->t;
  ct_status st;
  if (t->runner_owner != ss) {
    if ((st = runner_set_task(t->r, &ss->w, err))) return st;
    t->runner_owner = ss;
  }
  if (ss->n_runs++ > 0 && (st = queue_first(ss, 0, err))) return st;
  ss->p.total = ss->res.n_trials + n_trials;
  ss->p.finished = 0;
  return CT_OK;
}

/* The next batch's configs into ss->cfgs, at most want of them: their
 * count, or 0 when the run ends here (time cap, stop flag, early stopping,
 * or nothing left to propose). */
static int next_batch(tune_session *ss, int want, double time_cap_s, double t0) {
  const tune_opts *o = &ss->t->opts;
  if (want <= 0) return 0;
  if (time_cap_s > 0 && mono_s() - t0 >= time_cap_s) return 0;
  if (o->stop && *o->stop) return 0;
  if (o->early_stopping > 0 && ss->since_best >= o->early_stopping) {
    ss->res.stopped_early = 1;
    return 0;
  }
  int n = search_next(ss->se, ss->cfgs, want < ss->batch_cap ? want : ss->batch_cap);
  if (n == 0) ss->exhausted = 1; /* nothing left to propose */
  return n;
}

/* The record of config i of the batch, as far as it is known before it is
 * compiled: identity, provenance and config. */
static void begin_trial(tune_session *ss, int i) {
  tuner *t = ss->t;
  trial *tr = &ss->trials[i];
  memset(tr, 0, sizeof *tr);
  snprintf(tr->uid, sizeof tr->uid, "%.24s-%ld", t->session, t->seq++);
  snprintf(tr->workload_key, sizeof tr->workload_key, "%s", ss->key);
  snprintf(tr->template_name, sizeof tr->template_name, "%s", ss->tpl->name);
  snprintf(tr->template_version, sizeof tr->template_version, "%s", template_version(ss->tpl));
  snprintf(tr->arch, sizeof tr->arch, "%s", t->dev.arch.name);
  snprintf(tr->tuner, sizeof tr->tuner, "%s", t->opts.search.kind);
  snprintf(tr->session, sizeof tr->session, "%s", t->session);
  tr->tuner_settings = excerpt(search_settings(ss->se));
  tr->config_index = space_index(&ss->s, &ss->cfgs[i]);
  cJSON *cj = space_config_to_json(&ss->s, &ss->cfgs[i]);
  tr->config_json = cj ? cJSON_PrintUnformatted(cj) : NULL;
  cJSON_Delete(cj);
}

/* Submit the batch's n configs to the builder at once; a config the
 * descriptor rejects is an INVALID trial, never submitted. *submitted: how
 * many were. */
static ct_status compile_batch(tune_session *ss, int n, int *submitted, ct_err *err) {
  tuner *t = ss->t;
  *submitted = 0;
  for (int i = 0; i < n; i++) {
    trial *tr = &ss->trials[i];
    begin_trial(ss, i);
    ct_err e = {0};
    if (instance_make(ss->tpl, &ss->w, &ss->s, &ss->cfgs[i], &t->dev.arch, &ss->insts[i], &e)) {
      tr->outcome = OUT_INVALID;
      tr->error = excerpt(e.msg);
      tr->timestamp = now_s();
      continue;
    }
    tr->options = join_options(&ss->insts[i]);
    tr->outcome = OUT_COUNT; /* pending */
    ct_status st = builder_submit_for(t->b, t->client, &ss->insts[i], i, err);
    if (st) return st;
    (*submitted)++;
  }
  return CT_OK;
}

/* Measure each of the submitted cubins as it comes back from the builder,
 * keeping the best one's cubin for the kernel cache. A compile error is the
 * trial's outcome; only the builder or the runner failing is an error. */
static ct_status measure_batch(tune_session *ss, int submitted, ct_err *err) {
  tuner *t = ss->t;
  for (int k = 0; k < submitted; k++) {
    long tag;
    cubin cb = {0};
    ct_err e = {0};
    ct_status cs = builder_collect_for(t->b, t->client, &tag, &cb, &e);
    if (cs != CT_OK && cs != CT_ERR_NVRTC) {
      cubin_free(&cb);
      return err_set(err, cs, e.file, e.line, "%s", e.msg);
    }
    trial *tr = &ss->trials[tag];
    tr->compile_ms = cb.compile_ms;
    if (cs == CT_ERR_NVRTC) {
      tr->outcome = OUT_COMPILE_ERROR;
      tr->error = excerpt(cb.log && cb.log[0] ? cb.log : e.msg);
    } else {
      run_result rr;
      ct_status st = runner_measure(t->r, &ss->insts[tag], cb.data, cb.size, &rr, err);
      if (st) {
        cubin_free(&cb);
        return st;
      }
      tr->outcome = rr.outcome;
      if (rr.outcome == OUT_OK) {
        tr->median_us = rr.median_us;
        tr->n_samples = rr.n_samples;
        tr->samples_us = malloc(sizeof(double) * (rr.n_samples ? rr.n_samples : 1));
        if (tr->samples_us)
          memcpy(tr->samples_us, rr.samples_us, sizeof(double) * rr.n_samples);
        else
          tr->n_samples = 0;
        if (ss->p.best_us == 0 || rr.median_us < ss->p.best_us) {
          /* keep the best cubin for the kernel cache */
          cubin_free(&ss->best_cb);
          ss->best_cb = cb;
          cb = (cubin){0};
          ss->best_index = tr->config_index;
        }
      } else {
        tr->error = excerpt(rr.error);
      }
    }
    tr->timestamp = now_s();
    cubin_free(&cb);
  }
  return CT_OK;
}

/* Keep the batch's n trials: one transaction in the store. */
static ct_status record_batch(tune_session *ss, int n, ct_err *err) {
  return ss->t->store.record(ss->t->store.ctx, ss->trials, n, err);
}

/* Count the batch's outcomes into the result and the progress, free its
 * trials and teach the strategy their costs (a failure costs infinity). */
static void learn_batch(tune_session *ss, int n) {
  tune_progress *p = &ss->p;
  for (int i = 0; i < n; i++) {
    trial *tr = &ss->trials[i];
    ss->costs[i] = tr->outcome == OUT_OK ? tr->median_us : INFINITY;
    ss->res.by_outcome[tr->outcome]++;
    p->by_outcome[tr->outcome]++;
    ss->res.n_trials++;
    if (tr->outcome != OUT_OK) p->errors++;
    if (tr->outcome == OUT_OK && (p->best_us == 0 || tr->median_us < p->best_us)) {
      p->best_us = tr->median_us;
      ss->since_best = 0;
    } else {
      ss->since_best++;
    }
    trial_free(tr);
  }
  search_update(ss->se, ss->cfgs, ss->costs, n);
}

/* Progress after a batch, elapsed_s into the session's runs. */
static void report_batch(tune_session *ss, double elapsed_s, tune_progress_fn fn, void *user) {
  tune_progress *p = &ss->p;
  p->done = ss->res.n_trials;
  p->best_tops = tops(&ss->w, p->best_us);
  p->elapsed_s = elapsed_s;
  p->eta_s = p->done ? p->elapsed_s / p->done * (p->total - p->done) : 0;
  note_fallback(ss);
  if (fn) fn(user, p);
}

/* The run's last progress: finished, with the task's stored best. */
static void report_end(tune_session *ss, tune_progress_fn fn, void *user) {
  tune_progress *p = &ss->p;
  p->finished = 1;
  p->best_us = ss->res.best_us;
  p->best_tops = ss->res.best_tops;
  p->elapsed_s = ss->res.wall_s;
  p->eta_s = 0;
  note_fallback(ss);
  if (fn) fn(user, p);
}

ct_status tune_session_run(tune_session *ss, int n_trials, double time_cap_s, tune_progress_fn fn,
                           void *user, tune_result *out, ct_err *err) {
  tune_result *res = &ss->res;
  ct_status st = run_begin(ss, n_trials, err);
  if (st) return st;
  const int start = res->n_trials;
  const double wall0 = res->wall_s, t0 = mono_s();
  int n, submitted;
  while ((n = next_batch(ss, n_trials - (res->n_trials - start), time_cap_s, t0)) > 0) {
    if ((st = compile_batch(ss, n, &submitted, err)) || (st = measure_batch(ss, submitted, err)) ||
        (st = record_batch(ss, n, err))) {
      /* the batch in flight is lost: its trials were not recorded */
      for (int i = 0; i < ss->batch_cap; i++) trial_free(&ss->trials[i]);
      note_fallback(ss);
      *out = *res;
      return st;
    }
    learn_batch(ss, n);
    report_batch(ss, wall0 + (mono_s() - t0), fn, user);
  }
  res->wall_s = wall0 + (mono_s() - t0);
  res->trials_per_s = res->wall_s > 0 ? res->n_trials / res->wall_s : 0;
  st = cache_best(ss->t, ss->tpl, &ss->w, &ss->s, &ss->best_cb, ss->best_index, res, err);
  report_end(ss, fn, user);
  *out = *res;
  return st;
}

/* Tune one task: w in tpl's layout (tune_plan), with one template. */
static ct_status run_task(tuner *t, const char *name, const ct_workload *w,
                          const template_desc *tpl, tune_progress_fn fn, void *user,
                          tune_result *res, ct_err *err) {
  memset(res, 0, sizeof *res);
  tune_session *ss = NULL;
  ct_status st = tune_session_open(t, name, w, tpl, &ss, err);
  if (!st) st = tune_session_run(ss, t->opts.n_trials, t->opts.time_budget_s, fn, user, res, err);
  tune_session_close(ss);
  return st;
}

const tune_opts *tuner_opts(const tuner *t) {
  return &t->opts;
}

ct_status tuner_stored(tuner *t, const ct_workload *w, const template_desc *tpl, tune_result *res,
                       ct_err *err) {
  memset(res, 0, sizeof *res);
  workload_key(w, res->key, sizeof res->key);
  snprintf(res->template_name, sizeof res->template_name, "%s", tpl->name);
  trial *tr = NULL;
  int n = 0, best = -1;
  ct_status st = t->store.trials(t->store.ctx, res->key, tpl, &tr, &n, err);
  if (st) return st;
  res->n_resumed = n;
  /* the lowest median among OK trials, as db_best picks (first on a tie) */
  for (int i = 0; i < n; i++)
    if (tr[i].outcome == OUT_OK && (best < 0 || tr[i].median_us < tr[best].median_us)) best = i;
  if (best >= 0) {
    res->best_us = tr[best].median_us;
    res->best_tops = tops(w, res->best_us);
    snprintf(res->best_config, sizeof res->best_config, "%s",
             tr[best].config_json ? tr[best].config_json : "");
  }
  trials_free(tr, n);
  return CT_OK;
}

int tune_task_workload(const template_desc *tpl, const ct_workload *w, ct_workload *out,
                       char *why) {
  ct_workload tw;
  if (!workload_for_layout(w, tpl->layout, &tw)) {
    if (why)
      snprintf(why, TEMPLATE_WHY_MAX,
               "it runs layout %s; the workload is %s, which is not converted for it",
               workload_layout_name(tpl->layout, w->op), workload_layout_name(w->layout, w->op));
    return 0;
  }
  *out = tw;
  return 1;
}

/* Whether tpl, which supports tw, has a config to tune on a (NULL: on any
 * device): 1 yes, 0 no (why, when not NULL, gets search_has_valid's
 * reason), -1 when its space cannot be built (*err says why). */
static int runs_on(const template_desc *tpl, const ct_workload *tw, const arch *a, char *why,
                   ct_err *err) {
  if (!a) return 1;
  space s;
  if (template_space(tpl, tw, &s, err)) return -1;
  int ok = search_has_valid(tpl, tw, &s, a, why);
  space_free(&s);
  return ok;
}

/* Whether the search leaves cand out of tw's tasks: the dense mma
 * templates and the grouped CUDA-core fallback, on a depthwise layer of
 * multiplier 1 that the depthwise family runs. In the 30 MobileNetV2
 * benchmark documents of issue 35 (h200-issue35: batch 1 and 32, H200), no
 * depthwise node ran on either; in three tunings of MobileNetV2 at batch 32
 * they took 86 of the depthwise layers' 243 rounds (skipdw-99721c9, the
 * base runs). They still run such a layer when named (--template), and
 * their records of it are still served. */
static int tune_skips(const template_desc *cand, const ct_workload *tw, const arch *a) {
  if (tw->groups <= 1 || tw->groups != tw->c || tw->k != tw->c) return 0;
  const int d3 = cand->op == CT_OP_CONV3D;
  if (strcmp(cand->name, d3 ? "conv3d_ndhwc_mma" : "conv2d_nhwc_mma") &&
      strcmp(cand->name, d3 ? "conv3d_ndhwc_grouped" : "conv2d_nhwc_grouped"))
    return 0;
  const template_desc *dw = template_find(d3 ? "conv3d_ndhwc_dw" : "conv2d_nhwc_dw");
  ct_err e = {0};
  return dw && dw->supports(tw, NULL) && runs_on(dw, tw, a, NULL, &e) == 1;
}

ct_status tune_plan(const char *name, const ct_workload *w, const template_desc *tpl, const arch *a,
                    tune_task *tasks, int *n, ct_err *err) {
  *n = 0;
  /* one template when given, else every registered one */
  const template_desc *only[2] = {tpl, NULL};
  const template_desc *const *list = tpl ? only : template_all();
  char why[TEMPLATE_WHY_MAX], reasons[768] = "", on_dev[768] = "";
  int n_layout = 0; /* templates of w's op that take its layout */
  int n_device = 0; /* of those, the ones that support w but have no config on a */
  for (int i = 0; list[i]; i++) {
    const template_desc *cand = list[i];
    ct_workload tw;
    why[0] = '\0';
    int takes = tune_task_workload(cand, w, &tw, why);
    n_layout += takes && cand->op == w->op;
    if (takes && cand->supports(&tw, why)) {
      const int on = runs_on(cand, &tw, a, why, err);
      if (on < 0) return err->status;
      if (on) {
        if (*n < TUNE_MAX_TASKS && (tpl || !tune_skips(cand, &tw, a)))
          tasks[(*n)++] = (tune_task){cand, tw};
        continue;
      }
      if (cand->op == w->op) {
        err_join(on_dev, sizeof on_dev, cand->name, why);
        n_device++;
      }
    }
    /* the reasons worth reading: the named template's, else those of the
     * templates of w's op and layout */
    if (tpl || (takes && cand->op == w->op)) err_join(reasons, sizeof reasons, cand->name, why);
  }
  if (*n) return CT_OK;
  const char *layout = workload_layout_name(w->layout, w->op);
  if (tpl)
    return ERR_SET(err, CT_ERR_UNSUPPORTED, "%s: template %s does not run this workload%s%s: %s",
                   name, tpl->name, n_device ? " on " : "", n_device ? a->name : "", reasons);
  if (!n_layout)
    return ERR_SET(err, CT_ERR_UNSUPPORTED,
                   "%s: no template runs this workload: none of layout %s is registered", name,
                   layout);
  /* an nhwc workload the channels-last templates refuse may still run on
   * the packed ones, in another layout (on a, when given): say so */
  const char *hint = "";
  if (w->layout == CT_LAYOUT_NHWC) {
    ct_workload pw;
    ct_err e = {0};
    workload_packed(w, &pw);
    for (int i = 0; list[i] && !hint[0]; i++)
      if (list[i]->layout == CT_LAYOUT_NCHW4C && list[i]->supports(&pw, NULL) &&
          runs_on(list[i], &pw, a, NULL, &e) == 1)
        hint = w->op == CT_OP_CONV2D
                   ? " (the channel-packed templates run it: tune it in layout nchw or nchw4c)"
                   : " (the channel-packed templates run it: tune it in layout ncdhw or ncdhw4c)";
  }
  /* the templates that run w but not on a: their reasons alone (the
   * others' are why they never could) */
  if (n_device)
    return ERR_SET(err, CT_ERR_UNSUPPORTED,
                   "%s: no template of layout %s runs this workload on %s: %s%s", name, layout,
                   a->name, on_dev, hint);
  return ERR_SET(err, CT_ERR_UNSUPPORTED, "%s: no template runs this workload in layout %s: %s%s",
                 name, layout, reasons, hint);
}

int tune_device_refusal(const char *name, const ct_workload *w, const template_desc *tpl,
                        const arch *a, char *why) {
  tune_task tt[TUNE_MAX_TASKS];
  int nt = 0;
  ct_err e = {0}, any = {0};
  why[0] = '\0';
  if (tune_plan(name, w, tpl, a, tt, &nt, &e) != CT_ERR_UNSUPPORTED ||
      tune_plan(name, w, tpl, NULL, tt, &nt, &any) != CT_OK)
    return 0;
  snprintf(why, CT_ERRMSG_MAX, "%s", e.msg);
  return 1;
}

ct_status tuner_tune(tuner *t, const char *name, const ct_workload *w, const template_desc *tpl,
                     tune_progress_fn fn, void *user, tune_result *res, ct_err *err) {
  ct_status st = workload_validate(w, err);
  if (st) return st;
  tune_task tasks[TUNE_MAX_TASKS];
  int n = 0;
  if ((st = tune_plan(name, w, tpl, &t->dev.arch, tasks, &n, err))) return st;
  tune_result rs[TUNE_MAX_TASKS];
  for (int i = 0; i < n; i++)
    if ((st = run_task(t, name, &tasks[i].w, tasks[i].tpl, fn, user, &rs[i], err))) return st;
  tune_results_best(rs, n, res);
  return CT_OK;
}

void tune_results_best(const tune_result *rs, int n, tune_result *out) {
  tune_result best = {0};
  char note[sizeof best.model_fallback] = "";
  for (int i = 0; i < n; i++) {
    const tune_result *r = &rs[i];
    if (!note[0]) memcpy(note, r->model_fallback, sizeof note);
    if (!i || (r->best_us > 0 && (best.best_us == 0 || r->best_us < best.best_us))) best = *r;
  }
  /* the first task's fallback, whichever task holds the best */
  memcpy(best.model_fallback, note, sizeof note);
  *out = best;
}
