/*
 * sched.c: the task scheduler of sched.h: the policy (pure: histories in,
 * the next round out) and sched_run, which drives it with a tuner.
 *
 * Each task keeps a history of points (its trials so far, stored ones
 * included, and its best): point 0 is what the database held at the start,
 * then one per round. The policy is O(tasks^2) per decision (a workload's
 * best and a group's best rate are recomputed), nothing next to a round.
 * sched_run keeps a task's session open between its rounds (at most
 * MAX_OPEN at once, the least recently run closed first) and reopens one
 * whose transfer rows have gone stale (sched.h).
 */
#include "tuner/sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"

/* The warm-up takes at most 1 / WARM_SHARE of the budget (sched.h). */
#define WARM_SHARE 3.0
/* Open sessions at most: a session holds its strategy (the xgb model's
 * transfer rows: up to 4000 x the features, about 1.5 MB) and a batch's
 * buffers, so that ResNet-50's 23 tasks stay open at about 50 MB and a
 * model of hundreds of unique workloads is bounded. */
#define MAX_OPEN 64
/* Similar tasks' operations lie within this factor (Ansor's log base). */
#define SIMILAR_OPS 1.618
/* A session is opened again for fresh transfer rows once its template's
 * trials by other tasks in this run reach REFRESH_GROWTH x what it was
 * seeded with (at least a round's): the rows available have grown about
 * fourfold, so that a task reopens about once in a run (ResNet-50's first
 * tasks of the warm-up, opened with few rows, once after it), each time an
 * open (4-10 ms on the H200), a retraining of its model and the loss of
 * its pending proposals. */
#define REFRESH_GROWTH 3

static const char *const state_names[SCHED_STATE_COUNT] = {"live", "trials", "early-stopped",
                                                           "exhausted", "failing"};

const char *sched_state_name(sched_state s) {
  return s >= 0 && s < SCHED_STATE_COUNT ? state_names[s] : "?";
}

void sched_opts_default(sched_opts *o) {
  memset(o, 0, sizeof *o);
  o->min_round = 16;
  o->max_round = 64;
  o->round_multiple = 1;
  o->alpha = 0.2;
  o->beta = 2.0;
  o->window = 3;
  o->eps = 0.05;
  o->fail_rounds = 3;
  o->seed = 1;
}

/* ---- the policy ------------------------------------------------------------ */

typedef struct ptask {
  sched_task_desc d;
  sched_task_stat st;
  int warm; /* had a round, or a stored OK best */
  int n_hist, cap_hist;
  int *h_trials;  /* trials (stored + run) at each point */
  double *h_best; /* the best at each point (0: none) */
} ptask;

struct sched {
  sched_opts o;
  int n_wl;
  int *counts;
  int *wl_since; /* trials of the workload since its best improved */
  int n_tasks;
  ptask *t;
  rng r;
  int run_trials;
  double run_seconds;
};

static int push_point(ptask *t, int trials, double best) {
  if (t->n_hist == t->cap_hist) {
    int cap = t->cap_hist ? 2 * t->cap_hist : 8;
    int *ht = realloc(t->h_trials, sizeof *ht * cap);
    if (!ht) return -1;
    t->h_trials = ht;
    double *hb = realloc(t->h_best, sizeof *hb * cap);
    if (!hb) return -1;
    t->h_best = hb;
    t->cap_hist = cap;
  }
  t->h_trials[t->n_hist] = trials;
  t->h_best[t->n_hist++] = best;
  return 0;
}

ct_status sched_new(const sched_opts *o, int n_workloads, const int *counts, int n_tasks,
                    const sched_task_desc *tasks, sched **out, ct_err *err) {
  *out = NULL;
  if (o->budget_s < 0 || o->max_trials < 0 || o->early_stopping < 0 || o->round_trials < 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "scheduler: budget, trials, early stopping and round size must be >= 0");
  if (o->min_round < 1 || o->max_round < 1 || o->round_multiple < 1 || o->window < 1 ||
      o->fail_rounds < 1)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "scheduler: min_round, max_round, round_multiple, window and fail_rounds must "
                   "be >= 1");
  if (!(o->alpha >= 0 && o->alpha <= 1) || !(o->eps >= 0 && o->eps <= 1) || !(o->beta >= 1))
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "scheduler: alpha %g and eps %g must be in [0, 1], beta %g >= 1", o->alpha,
                   o->eps, o->beta);
  if (n_workloads < 0 || n_tasks < 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "scheduler: negative counts");
  for (int w = 0; w < n_workloads; w++)
    if (counts[w] < 1)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "scheduler: workload %d occurs %d times; at least 1",
                     w, counts[w]);
  for (int i = 0; i < n_tasks; i++)
    if (tasks[i].workload < 0 || tasks[i].workload >= n_workloads)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "scheduler: task %d of workload %d; %d workloads", i,
                     tasks[i].workload, n_workloads);
  sched *s = calloc(1, sizeof *s);
  if (!s) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  s->o = *o;
  s->n_wl = n_workloads;
  s->n_tasks = n_tasks;
  s->counts = calloc(n_workloads + 1, sizeof *s->counts);
  s->wl_since = calloc(n_workloads + 1, sizeof *s->wl_since);
  s->t = calloc(n_tasks + 1, sizeof *s->t);
  if (!s->counts || !s->wl_since || !s->t) goto oom;
  if (n_workloads) memcpy(s->counts, counts, sizeof *counts * n_workloads);
  for (int i = 0; i < n_tasks; i++) {
    s->t[i].d = tasks[i];
    if (push_point(&s->t[i], 0, 0)) goto oom;
  }
  rng_seed(&s->r, o->seed);
  *out = s;
  return CT_OK;
oom:
  sched_free(s);
  return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
}

void sched_free(sched *s) {
  if (!s) return;
  for (int i = 0; s->t && i < s->n_tasks; i++) {
    free(s->t[i].h_trials);
    free(s->t[i].h_best);
  }
  free(s->t);
  free(s->counts);
  free(s->wl_since);
  free(s);
}

void sched_resume(sched *s, int task, int n_trials, double best_us) {
  if (!s || task < 0 || task >= s->n_tasks) return;
  ptask *t = &s->t[task];
  t->st.stored_trials = n_trials > 0 ? n_trials : 0;
  t->st.best_us = best_us > 0 ? best_us : 0;
  t->warm = t->st.best_us > 0;
  /* point 0 is the start; resuming after a round would rewrite history */
  if (t->n_hist >= 1) {
    t->h_trials[0] = t->st.stored_trials;
    t->h_best[0] = t->st.best_us;
  }
}

double sched_workload_best(const sched *s, int workload) {
  double best = 0;
  for (int i = 0; i < s->n_tasks; i++) {
    const ptask *t = &s->t[i];
    if (t->d.workload == workload && t->st.best_us > 0 && (best == 0 || t->st.best_us < best))
      best = t->st.best_us;
  }
  return best;
}

double sched_total_us(const sched *s, int *n_unknown) {
  double total = 0;
  int unknown = 0;
  for (int w = 0; w < s->n_wl; w++) {
    int has_task = 0;
    for (int i = 0; i < s->n_tasks && !has_task; i++) has_task = s->t[i].d.workload == w;
    if (!has_task) continue;
    double b = sched_workload_best(s, w);
    if (b > 0)
      total += s->counts[w] * b;
    else
      unknown++;
  }
  if (n_unknown) *n_unknown = unknown;
  return total;
}

const sched_task_stat *sched_task(const sched *s, int task) {
  return s && task >= 0 && task < s->n_tasks ? &s->t[task].st : NULL;
}

int sched_n_tasks(const sched *s) {
  return s ? s->n_tasks : 0;
}

/* Trials per second: the task's own in this run, else the run's, else 0. */
static double task_rate(const sched *s, int j) {
  const sched_task_stat *st = &s->t[j].st;
  if (st->seconds > 0 && st->run_trials > 0) return st->run_trials / st->seconds;
  if (s->run_seconds > 0 && s->run_trials > 0) return s->run_trials / s->run_seconds;
  return 0;
}

int sched_round_size(const sched *s) {
  const sched_opts *o = &s->o;
  if (o->round_trials > 0) return o->round_trials;
  int m = o->round_multiple;
  int lo = o->min_round > m ? o->min_round : m;
  lo = (lo + m - 1) / m * m;
  int hi = o->max_round / m * m;
  if (hi < lo) hi = lo;
  if (o->budget_s <= 0) return hi;
  double rate = s->run_seconds > 0 && s->run_trials > 0 ? s->run_trials / s->run_seconds : 0;
  if (rate <= 0 || s->n_tasks == 0) return lo;
  double r = o->budget_s * rate / (WARM_SHARE * s->n_tasks);
  int n = r >= hi ? hi : (int)(r / m) * m;
  return n < lo ? lo : n;
}

/* Ansor's similarity bound of task j: beta x its ops at the best rate (ops
 * per us) among the tasks of its group; 0 when it has no group of two. */
static double group_bound(const sched *s, int j) {
  const ptask *t = &s->t[j];
  if (t->d.group < 0 || !(t->d.ops > 0)) return 0;
  int members = 0;
  double best_rate = 0;
  for (int i = 0; i < s->n_tasks; i++) {
    const ptask *u = &s->t[i];
    if (u->d.group != t->d.group) continue;
    members++;
    if (u->st.best_us > 0 && u->d.ops > 0 && u->d.ops / u->st.best_us > best_rate)
      best_rate = u->d.ops / u->st.best_us;
  }
  if (members < 2 || best_rate <= 0) return 0;
  return s->o.beta * t->d.ops / best_rate;
}

/* The expected cut of the total per second from a round of R trials of
 * task j (sched.h); 0 for a task without a best. */
static double score(const sched *s, int j, int R) {
  const ptask *t = &s->t[j];
  const sched_opts *o = &s->o;
  double b = t->st.best_us;
  if (b <= 0) return 0;
  double wl_best = sched_workload_best(s, t->d.workload);
  int trials = t->st.stored_trials + t->st.run_trials;
  if (trials < 1) trials = 1;
  double backward = 0;
  int k = t->n_hist - 1;
  if (k >= o->window) {
    double b0 = t->h_best[k - o->window];
    int dt = t->h_trials[k] - t->h_trials[k - o->window];
    if (b0 > 0 && dt > 0) backward = (t->h_best[k] - b0) / dt;
    if (backward > 0) backward = 0;
  }
  double forward = -b / trials;
  double bound = group_bound(s, j);
  if (bound > 0 && (bound - b) / R < forward) forward = (bound - b) / R;
  double g = o->alpha * backward + (1 - o->alpha) * forward;
  double cut = s->counts[t->d.workload] * (wl_best - (b + g * R)) / R;
  if (!(cut > 0)) return 0;
  double rate = task_rate(s, j);
  return cut * (rate > 0 ? rate : 1);
}

sched_end sched_next(sched *s, double elapsed_s, sched_pick *out) {
  const sched_opts *o = &s->o;
  memset(out, 0, sizeof *out);
  out->task = -1;
  if (o->budget_s > 0 && elapsed_s >= o->budget_s) return SCHED_BUDGET_SPENT;
  int n_live = 0;
  for (int i = 0; i < s->n_tasks; i++) n_live += s->t[i].st.state == SCHED_LIVE;
  if (n_live == 0) return SCHED_ALL_DONE;
  int R = sched_round_size(s), pick = -1;
  /* warm-up: every task once, in order */
  for (int i = 0; i < s->n_tasks && pick < 0; i++)
    if (s->t[i].st.state == SCHED_LIVE && !s->t[i].warm) pick = i;
  /* a workload without an OK trial leaves the total unknown: it goes first,
   * its task with the fewest rounds, until fail_rounds give it up */
  for (int w = 0; w < s->n_wl && pick < 0; w++) {
    if (sched_workload_best(s, w) > 0) continue;
    for (int i = 0; i < s->n_tasks; i++)
      if (s->t[i].d.workload == w && s->t[i].st.state == SCHED_LIVE &&
          (pick < 0 || s->t[i].st.rounds < s->t[pick].st.rounds))
        pick = i;
  }
  if (pick >= 0) {
    out->warmup = 1;
  } else if (o->eps > 0 && rng_double(&s->r) < o->eps) {
    int k = (int)rng_below(&s->r, (uint64_t)n_live);
    for (int i = 0; i < s->n_tasks && pick < 0; i++)
      if (s->t[i].st.state == SCHED_LIVE && k-- == 0) pick = i;
    out->explore = 1;
  } else {
    double best = 0;
    for (int i = 0; i < s->n_tasks; i++) {
      if (s->t[i].st.state != SCHED_LIVE) continue;
      double sc = score(s, i, R);
      if (sc > best) best = sc, pick = i;
    }
    out->score = best;
    /* no task is expected to cut the total (every live one loses to
     * another template): the one with the fewest rounds */
    for (int i = 0; i < s->n_tasks && best == 0; i++)
      if (s->t[i].st.state == SCHED_LIVE && (pick < 0 || s->t[i].st.rounds < s->t[pick].st.rounds))
        pick = i;
  }
  int n = R;
  const sched_task_stat *st = &s->t[pick].st;
  if (o->max_trials > 0 && o->max_trials - st->run_trials < n) n = o->max_trials - st->run_trials;
  if (o->budget_s > 0) {
    double left = o->budget_s - elapsed_s, rate = task_rate(s, pick);
    out->time_cap_s = left;
    /* the last round: what its task's rate fits in what is left, unless
     * that is under a quarter round, whose fixed cost (the first compile)
     * would outweigh its trials */
    if (rate > 0 && floor(left * rate) < n) {
      int fit = (int)floor(left * rate);
      if (fit < 1 || fit < R / 4) return SCHED_BUDGET_SPENT;
      n = fit;
    }
  }
  out->task = pick;
  out->n_trials = n;
  return SCHED_GO;
}

/* Ansor's regrouping: a task tuned 5 rounds more than any other of its
 * group and still below 1 / beta of the group's best rate is not like them. */
static void adjust_group(sched *s, int j) {
  ptask *t = &s->t[j];
  if (t->d.group < 0 || t->st.best_us <= 0) return;
  double best_rate = 0;
  int members = 0, most_rounds = 0;
  for (int i = 0; i < s->n_tasks; i++) {
    const ptask *u = &s->t[i];
    if (u->d.group != t->d.group) continue;
    members++;
    if (u->st.best_us > 0 && u->d.ops / u->st.best_us > best_rate)
      best_rate = u->d.ops / u->st.best_us;
    if (i != j && u->st.rounds > most_rounds) most_rounds = u->st.rounds;
  }
  if (members > 1 && t->d.ops / t->st.best_us < best_rate / s->o.beta &&
      t->st.rounds > 5 + most_rounds)
    t->d.group = -1;
}

void sched_record(sched *s, int task, const sched_round *r) {
  if (!s || task < 0 || task >= s->n_tasks || !r) return;
  const sched_opts *o = &s->o;
  ptask *t = &s->t[task];
  int w = t->d.workload;
  double before = sched_workload_best(s, w);
  int n = r->n_trials > 0 ? r->n_trials : 0;
  t->st.run_trials += n;
  t->st.rounds++;
  t->st.seconds += r->seconds > 0 ? r->seconds : 0;
  t->warm = 1;
  s->run_trials += n;
  s->run_seconds += r->seconds > 0 ? r->seconds : 0;
  if (r->best_us > 0 && (t->st.best_us == 0 || r->best_us < t->st.best_us))
    t->st.best_us = r->best_us;
  /* a point that cannot be stored leaves the backward term on older ones */
  (void)push_point(t, t->st.stored_trials + t->st.run_trials, t->st.best_us);
  double after = sched_workload_best(s, w);
  if (after > 0 && (before == 0 || after < before))
    s->wl_since[w] = r->since_best < n ? (r->since_best > 0 ? r->since_best : 0) : n;
  else
    s->wl_since[w] += n;

  if (t->st.state == SCHED_LIVE) {
    if (o->max_trials > 0 && t->st.run_trials >= o->max_trials)
      t->st.state = SCHED_DONE_TRIALS;
    else if (r->exhausted)
      t->st.state = SCHED_DONE_EXHAUSTED;
    else if (t->st.best_us == 0 && t->st.rounds >= o->fail_rounds)
      t->st.state = SCHED_DONE_FAILING;
  }
  if (o->early_stopping > 0 && s->wl_since[w] >= o->early_stopping)
    for (int i = 0; i < s->n_tasks; i++)
      if (s->t[i].d.workload == w && s->t[i].st.state == SCHED_LIVE)
        s->t[i].st.state = s->t[i].st.best_us > 0 ? SCHED_DONE_EARLY : SCHED_DONE_FAILING;
  adjust_group(s, task);
}

/* ---- the run --------------------------------------------------------------- */

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One task of the run. */
typedef struct rtask {
  int wl;
  tune_task task;
  tune_session *ss;        /* open, or NULL */
  int last_round;          /* the last round it ran in (LRU) */
  long tpl_trials_at_open; /* its template's trials in this run when it opened */
  int trials_at_open;      /* its own new trials then */
  int ss_trials;           /* the session's n_trials after its last run */
  int ss_errors;
  tune_result best; /* the result holding its best (stored, or a run's) */
  int errors;       /* its trials in this run that were not OK */
} rtask;

typedef struct run_ctx {
  sched_progress p;
  sched_progress_fn fn;
  void *user;
  int trials_before; /* the run's trials before the round */
  int ss_before;     /* the session's trials before the round */
  double t0;
} run_ctx;

static void on_batch(void *user, const tune_progress *tp) {
  run_ctx *c = user;
  if (tp->finished || !c->fn) return;
  c->p.batch = tp;
  c->p.n_trials = c->trials_before + (tp->done - c->ss_before);
  c->p.elapsed_s = mono_s() - c->t0;
  c->fn(c->user, &c->p);
  c->p.batch = NULL;
}

/* A tag for similarity (sched.h): template, kernel, stride, ops bucket. */
static void group_tag(const tune_task *k, char *buf, size_t size) {
  double ops = (double)workload_ops(&k->w);
  int bucket = ops > 0 ? (int)floor(log(ops) / log(SIMILAR_OPS)) : -1;
  snprintf(buf, size, "%s/%dx%dx%d/%dx%dx%d/%d", k->tpl->name, k->w.kernel[0], k->w.kernel[1],
           k->w.kernel[2], k->w.stride[0], k->w.stride[1], k->w.stride[2], bucket);
}

static ct_status add_point(sched_result *res, const sched *s, double elapsed, int n_trials) {
  sched_point *c = realloc(res->curve, sizeof *c * (res->n_points + 1));
  if (!c) return CT_ERR_NO_MEMORY;
  res->curve = c;
  sched_point *pt = &c[res->n_points++];
  pt->elapsed_s = elapsed;
  pt->total_us = sched_total_us(s, &pt->n_unknown);
  pt->n_trials = n_trials;
  return CT_OK;
}

void sched_result_free(sched_result *r) {
  if (!r) return;
  free(r->workloads);
  free(r->curve);
  free(r);
}

/* Fill res's per-workload lines and totals from the policy and the tasks. */
static void summarize(sched_result *res, const sched *s, const rtask *rt, int n_rt) {
  res->total_us = 0;
  res->n_unknown = res->n_unsupported = 0;
  for (int w = 0; w < res->n_workloads; w++) {
    sched_wl *x = &res->workloads[w];
    x->best_us = x->best_tops = 0;
    x->template_name[0] = x->best_config[0] = '\0';
    x->n_trials = x->n_stored = x->rounds = x->errors = 0;
    x->state = SCHED_DONE_FAILING;
    int any = 0, live = 0, best_task = -1;
    for (int i = 0; i < n_rt; i++) {
      if (rt[i].wl != w) continue;
      const sched_task_stat *st = sched_task(s, i);
      if (!any) x->state = st->state;
      any = 1;
      live |= st->state == SCHED_LIVE;
      x->n_trials += st->run_trials;
      x->n_stored += st->stored_trials;
      x->rounds += st->rounds;
      x->errors += rt[i].errors;
      if (st->best_us > 0 && (best_task < 0 || st->best_us < sched_task(s, best_task)->best_us))
        best_task = i;
    }
    if (!x->supported) {
      res->n_unsupported++;
      continue;
    }
    if (!any) continue;
    if (best_task >= 0) {
      const tune_result *b = &rt[best_task].best;
      x->best_us = sched_task(s, best_task)->best_us;
      x->best_tops = b->best_tops;
      snprintf(x->template_name, sizeof x->template_name, "%s", rt[best_task].task.tpl->name);
      snprintf(x->best_config, sizeof x->best_config, "%s", b->best_config);
      x->state = sched_task(s, best_task)->state;
      res->total_us += x->count * x->best_us;
    } else {
      res->n_unknown++;
    }
    if (live) x->state = SCHED_LIVE;
  }
}

ct_status sched_run(tuner *t, const char *model, const sched_item *items, int n,
                    const template_desc *tpl, const sched_opts *o, sched_progress_fn fn, void *user,
                    sched_result **out, ct_err *err) {
  *out = NULL;
  double t0 = mono_s();
  ct_status st = CT_OK;
  sched_result *res = calloc(1, sizeof *res);
  rtask *rt = NULL;
  int n_rt = 0, *wl_of = NULL, *counts = NULL;
  sched_task_desc *descs = NULL;
  sched *s = NULL;
  const template_desc **tpls = NULL;
  long *tpl_trials = NULL;
  char(*tags)[160] = NULL;
  if (!res || !(res->workloads = calloc(n + 1, sizeof *res->workloads)) ||
      !(wl_of = calloc(n + 1, sizeof *wl_of)) ||
      !(rt = calloc((size_t)n * TUNE_MAX_TASKS + 1, sizeof *rt))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  res->budget_s = o->budget_s;

  /* the unique workloads, counts summed */
  for (int i = 0; i < n; i++) {
    if ((st = workload_validate(&items[i].w, err))) goto done;
    if (items[i].count < 1) {
      st = ERR_SET(err, CT_ERR_INVALID_ARG, "%s: occurs %d times; at least 1", items[i].name,
                   items[i].count);
      goto done;
    }
    char key[CT_KEY_MAX];
    workload_key(&items[i].w, key, sizeof key);
    int w = 0;
    while (w < res->n_workloads && strcmp(res->workloads[w].key, key)) w++;
    wl_of[i] = w;
    sched_wl *x = &res->workloads[w];
    if (w == res->n_workloads) {
      res->n_workloads++;
      snprintf(x->name, sizeof x->name, "%s", items[i].name);
      snprintf(x->key, sizeof x->key, "%s", key);
      x->supported = 1;
    }
    x->count += items[i].count;
  }
  /* the tasks of each: what tune_plan gives; none: unsupported */
  for (int w = 0; w < res->n_workloads; w++) {
    int i = 0;
    while (wl_of[i] != w) i++;
    tune_task tasks[TUNE_MAX_TASKS];
    int k = 0;
    ct_err e = {0};
    ct_status ps =
        tune_plan(res->workloads[w].name, &items[i].w, tpl, &tuner_device(t)->arch, tasks, &k, &e);
    if (ps == CT_ERR_UNSUPPORTED) {
      res->workloads[w].supported = 0;
      snprintf(res->workloads[w].why, sizeof res->workloads[w].why, "%s", e.msg);
      continue;
    }
    if (ps) {
      st = err_set(err, ps, e.file, e.line, "%s", e.msg);
      goto done;
    }
    for (int j = 0; j < k; j++) rt[n_rt++] = (rtask){.wl = w, .task = tasks[j]};
  }
  /* similarity groups and the templates' trial counters */
  counts = calloc(res->n_workloads + 1, sizeof *counts);
  descs = calloc(n_rt + 1, sizeof *descs);
  tags = calloc(n_rt + 1, sizeof *tags);
  tpls = calloc(n_rt + 1, sizeof *tpls);
  tpl_trials = calloc(n_rt + 1, sizeof *tpl_trials);
  if (!counts || !descs || !tags || !tpls || !tpl_trials) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int w = 0; w < res->n_workloads; w++) counts[w] = res->workloads[w].count;
  for (int i = 0; i < n_rt; i++) {
    group_tag(&rt[i].task, tags[i], sizeof tags[i]);
    int g = 0;
    while (g < i && strcmp(tags[g], tags[i])) g++;
    descs[i] = (sched_task_desc){.workload = rt[i].wl,
                                 .group = g < i ? descs[g].group : i,
                                 .ops = (double)workload_ops(&rt[i].task.w)};
    int p = 0;
    while (tpls[p] && tpls[p] != rt[i].task.tpl) p++;
    tpls[p] = rt[i].task.tpl;
  }
  if ((st = sched_new(o, res->n_workloads, counts, n_rt, descs, &s, err))) goto done;
  /* what the database holds: the totals start from it */
  for (int i = 0; i < n_rt; i++) {
    if ((st = tuner_stored(t, &rt[i].task.w, rt[i].task.tpl, &rt[i].best, err))) goto done;
    sched_resume(s, i, rt[i].best.n_resumed, rt[i].best.best_us);
  }
  res->start_total_us = sched_total_us(s, &res->start_unknown);
  if (add_point(res, s, mono_s() - t0, 0)) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }

  const tune_opts *to = tuner_opts(t);
  int refresh = to->transfer && to->search.kind && !strcmp(to->search.kind, "xgb");
  int n_open = 0;
  run_ctx c = {.fn = fn, .user = user, .t0 = t0};
  c.p.model = model;
  c.p.budget_s = o->budget_s;
  for (;;) {
    if (o->stop && *o->stop) {
      res->interrupted = 1;
      break;
    }
    sched_pick pk;
    res->end = sched_next(s, mono_s() - t0, &pk);
    if (res->end != SCHED_GO) break;
    rtask *r = &rt[pk.task];
    int p = 0;
    while (tpls[p] != r->task.tpl) p++;
    /* a session whose transfer rows were seeded before most of its
     * template's trials of this run existed is opened again (sched.h) */
    if (r->ss && refresh && tune_session_transfer_rows(r->ss) < TUNE_TRANSFER_MAX) {
      long others = tpl_trials[p] - r->tpl_trials_at_open -
                    (sched_task(s, pk.task)->run_trials - r->trials_at_open);
      int rows = tune_session_transfer_rows(r->ss);
      if (others >= (long)REFRESH_GROWTH * (rows > pk.n_trials ? rows : pk.n_trials)) {
        tune_session_close(r->ss);
        r->ss = NULL;
        n_open--;
      }
    }
    if (!r->ss) {
      if (n_open == MAX_OPEN) { /* close the least recently run */
        int lru = -1;
        for (int i = 0; i < n_rt; i++)
          if (rt[i].ss && (lru < 0 || rt[i].last_round < rt[lru].last_round)) lru = i;
        tune_session_close(rt[lru].ss);
        rt[lru].ss = NULL;
        n_open--;
      }
      ct_err e = {0};
      char name[200];
      snprintf(name, sizeof name, "%s", res->workloads[r->wl].name);
      if ((st = tune_session_open(t, name, &r->task.w, r->task.tpl, &r->ss, &e))) {
        *err = e;
        goto done;
      }
      n_open++;
      r->tpl_trials_at_open = tpl_trials[p];
      r->trials_at_open = sched_task(s, pk.task)->run_trials;
      r->ss_trials = r->ss_errors = 0;
    }
    r->last_round = res->n_rounds;
    sched_wl *x = &res->workloads[r->wl];
    c.p.name = x->name;
    c.p.template_name = r->task.tpl->name;
    c.p.count = x->count;
    c.p.round = res->n_rounds + 1;
    c.p.round_trials = pk.n_trials;
    c.p.warmup = pk.warmup;
    c.p.explore = pk.explore;
    c.p.prev_best_us = c.p.best_us = sched_workload_best(s, r->wl);
    c.p.total_us = sched_total_us(s, &c.p.n_unknown);
    c.trials_before = res->n_trials;
    c.ss_before = r->ss_trials;
    double r0 = mono_s();
    tune_result tr;
    st = tune_session_run(r->ss, pk.n_trials, pk.time_cap_s, fn ? on_batch : NULL, &c, &tr, err);
    if (st) goto done;
    int ran = tr.n_trials - r->ss_trials, errors = tr.n_trials - tr.by_outcome[OUT_OK];
    r->errors += errors - r->ss_errors;
    r->ss_trials = tr.n_trials;
    r->ss_errors = errors;
    if (tr.best_us > 0) r->best = tr;
    if (tr.model_fallback[0] && !x->model_fallback[0])
      snprintf(x->model_fallback, sizeof x->model_fallback, "%s", tr.model_fallback);
    if (tr.model_fallback[0] && !res->model_fallback[0])
      snprintf(res->model_fallback, sizeof res->model_fallback, "%s", tr.model_fallback);
    int stopped = o->stop && *o->stop;
    sched_round rr = {.n_trials = ran,
                      .seconds = mono_s() - r0,
                      .best_us = tr.best_us,
                      .since_best = tune_session_since_best(r->ss),
                      /* a round that ran nothing without being stopped
                       * would run nothing again */
                      .exhausted = tune_session_exhausted(r->ss) || (ran == 0 && !stopped)};
    sched_record(s, pk.task, &rr);
    tpl_trials[p] += ran;
    res->n_trials += ran;
    res->n_rounds++;
    double now = mono_s() - t0;
    if (add_point(res, s, now, res->n_trials)) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
      goto done;
    }
    if (fn) {
      c.p.best_us = sched_workload_best(s, r->wl);
      c.p.total_us = sched_total_us(s, &c.p.n_unknown);
      c.p.n_trials = res->n_trials;
      c.p.elapsed_s = now;
      fn(user, &c.p);
    }
  }
done:
  for (int i = 0; rt && i < n_rt; i++) tune_session_close(rt[i].ss);
  if (res && s) {
    res->wall_s = mono_s() - t0;
    res->trials_per_s = res->wall_s > 0 ? res->n_trials / res->wall_s : 0;
    summarize(res, s, rt, n_rt);
    *out = res;
    res = NULL;
  }
  sched_result_free(res);
  sched_free(s);
  free(rt);
  free(wl_of);
  free(counts);
  free(descs);
  free(tags);
  free(tpls);
  free(tpl_trials);
  return st;
}
