/*
 * pool.c: tuning on several GPUs of one host (see pool.h).
 *
 * Shared by the GPUs' threads: the builders (thread-safe, each tuner a
 * client) and the stores, each call of which goes through one lock (a
 * locked store wraps the database's): SQLite would serialise its writers
 * anyway, and one connection per kind keeps the writes in one place. The
 * run's own state (the next task of each kind, tasks handed back, results,
 * counters) is under the run lock, which progress reports also take, so
 * that the caller's callback is never called from two threads at once.
 */
#include "tuner/pool.h"

#include "tuner/proc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- a store behind a lock ---------------------------------------------- */

typedef tune_locked_store locked_store;

#define LOCKED(call)                                                                               \
  do {                                                                                             \
    locked_store *ls = ctx;                                                                        \
    pthread_mutex_lock(ls->lock);                                                                  \
    ct_status st_ = (call);                                                                        \
    pthread_mutex_unlock(ls->lock);                                                                \
    return st_;                                                                                    \
  } while (0)

static ct_status l_trials(void *ctx, const char *key, const template_desc *tpl, trial **out, int *n,
                          ct_err *err) {
  LOCKED(ls->inner.trials(ls->inner.ctx, key, tpl, out, n, err));
}
static ct_status l_trials_other(void *ctx, const char *key, const template_desc *tpl, int limit,
                                trial **out, int *n, ct_err *err) {
  LOCKED(ls->inner.trials_other(ls->inner.ctx, key, tpl, limit, out, n, err));
}
static ct_status l_nearest(void *ctx, const arch *a, const template_desc *tpl,
                           const ct_workload *pw, config *out, int *found, ct_err *err) {
  LOCKED(ls->inner.nearest(ls->inner.ctx, a, tpl, pw, out, found, err));
}
static ct_status l_retired(void *ctx, const arch *a, const template_desc *tpl,
                           const ct_workload *pw, config *out, int *found, ct_err *err) {
  LOCKED(ls->inner.retired(ls->inner.ctx, a, tpl, pw, out, found, err));
}
static ct_status l_record(void *ctx, trial *trials, int n, ct_err *err) {
  LOCKED(ls->inner.record(ls->inner.ctx, trials, n, err));
}
static ct_status l_best(void *ctx, const char *key, const template_desc *tpl, trial *out,
                        int *found, ct_err *err) {
  LOCKED(ls->inner.best(ls->inner.ctx, key, tpl, out, found, err));
}
static int l_has_kernel(void *ctx, const trial *rec) {
  LOCKED(ls->inner.has_kernel(ls->inner.ctx, rec));
}
static ct_status l_put_kernel(void *ctx, const trial *rec, const void *data, size_t size,
                              ct_err *err) {
  LOCKED(ls->inner.put_kernel(ls->inner.ctx, rec, data, size, err));
}

tune_store tune_store_locked(tune_locked_store *ls) {
  return (tune_store){.ctx = ls,
                      .trials = l_trials,
                      .trials_other = l_trials_other,
                      .nearest = l_nearest,
                      .retired = l_retired,
                      .record = l_record,
                      .best = l_best,
                      .has_kernel = l_has_kernel,
                      .put_kernel = l_put_kernel,
                      .close = NULL}; /* the pool closes the inner store */
}

/* ---- the pool ------------------------------------------------------------ */

typedef struct gpu_slot {
  struct tune_pool *p;
  int index;
  device dev;
  int kind, arch_i, client;
  runner *r; /* until its tuner takes it */
  tuner *t;
  pthread_t thread;
  /* the current run */
  long trials_done, trials_cur;
  double busy_s;
  int dead;
} gpu_slot;

struct tune_pool {
  int n;
  gpu_slot gpu[POOL_MAX_GPUS];
  int n_kinds;
  int kind_first[POOL_MAX_GPUS]; /* a GPU of each kind */
  tune_store stores[POOL_MAX_GPUS];
  locked_store lstores[POOL_MAX_GPUS];
  int n_archs;
  builder *builders[POOL_MAX_GPUS];
  pthread_mutex_t db_lock;
  /* the current run */
  pthread_mutex_t run_lock;
  pthread_cond_t ended;
  const pool_source *src;
  int running; /* threads not yet finished */
  pool_progress_fn fn;
  void *user;
  double t0;
  const volatile int *stop;
};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int tune_same_kind(const device *a, const device *b) {
  db_device x, y;
  tune_db_device(a, &x);
  tune_db_device(b, &y);
  return !strcmp(x.name, y.name) && x.cc_major == y.cc_major && x.cc_minor == y.cc_minor &&
         x.sm_count == y.sm_count && x.driver_version == y.driver_version &&
         x.runtime_version == y.runtime_version;
}

static ct_status db_store(void *ctx, const device *dev, tune_store *out, ct_err *err) {
  return tune_store_db_open(ctx, dev, out, err);
}

ct_status tune_pool_open(const char *db_path, const tune_opts *o, const int *devices, int n,
                         tune_pool **out, ct_err *err) {
  return tune_pool_open_with(db_store, (void *)db_path, o, devices, n, out, err);
}

ct_status tune_pool_open_with(pool_store_fn make_store, void *ctx, const tune_opts *o,
                              const int *devices, int n, tune_pool **out, ct_err *err) {
  *out = NULL;
  if (n < 1 || n > POOL_MAX_GPUS || n > BUILDER_MAX_CLIENTS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "devices: %d, accepted 1..%d", n, POOL_MAX_GPUS);
  for (int i = 0; i < n; i++) {
    if (devices[i] < 0)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "devices: %d is not a device ordinal", devices[i]);
    for (int j = 0; j < i; j++)
      if (devices[j] == devices[i])
        return ERR_SET(err, CT_ERR_INVALID_ARG, "devices: %d is named twice", devices[i]);
  }
  tune_pool *p = calloc(1, sizeof *p);
  if (!p) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  pthread_mutex_init(&p->db_lock, NULL);
  pthread_mutex_init(&p->run_lock, NULL);
  pthread_cond_init(&p->ended, NULL);
  ct_status st = CT_OK;
  /* runners first: they fork, and so do the builders; no CUDA here */
  for (int i = 0; i < n; i++) {
    gpu_slot *g = &p->gpu[i];
    g->p = p;
    g->index = i;
    runner_opts ro = o->runner;
    ro.device = devices[i];
    if ((st = runner_start(&ro, &g->r, &g->dev, err))) goto fail;
    p->n = i + 1;
    g->kind = -1;
    for (int k = 0; k < p->n_kinds && g->kind < 0; k++)
      if (tune_same_kind(&g->dev, &p->gpu[p->kind_first[k]].dev)) g->kind = k;
    if (g->kind < 0) {
      g->kind = p->n_kinds;
      p->kind_first[p->n_kinds++] = i;
    }
    g->arch_i = -1;
    for (int j = 0; j < i && g->arch_i < 0; j++)
      if (!strcmp(p->gpu[j].dev.arch.name, g->dev.arch.name)) g->arch_i = p->gpu[j].arch_i;
    if (g->arch_i < 0) g->arch_i = p->n_archs++;
  }
  /* the builders: the cores shared out by each architecture's GPUs */
  long total = o->n_builders > 0 ? o->n_builders : proc_usable_cores();
  if (total < 1) total = 1;
  for (int a = 0; a < p->n_archs; a++) {
    int gpus = 0, first = -1;
    for (int i = 0; i < n; i++)
      if (p->gpu[i].arch_i == a) {
        p->gpu[i].client = gpus++;
        if (first < 0) first = i;
      }
    long workers = total * gpus / n;
    if (workers < 1) workers = 1;
    if (workers > 256) workers = 256;
    if ((st = builder_start((int)workers, &p->gpu[first].dev.arch, &p->builders[a], err)))
      goto fail;
  }
  for (int k = 0; k < p->n_kinds; k++) {
    if ((st = make_store(ctx, &p->gpu[p->kind_first[k]].dev, &p->stores[k], err))) goto fail;
    p->lstores[k] = (locked_store){.inner = p->stores[k], .lock = &p->db_lock};
  }
  for (int i = 0; i < n; i++) {
    gpu_slot *g = &p->gpu[i];
    tune_store s = tune_store_locked(&p->lstores[g->kind]);
    if ((st = tuner_open_shared(o, g->r, &g->dev, p->builders[g->arch_i], g->client, &s, &g->t,
                                err)))
      goto fail;
    g->r = NULL; /* the tuner's now */
  }
  *out = p;
  return CT_OK;
fail:
  tune_pool_close(p);
  return st;
}

void tune_pool_close(tune_pool *p) {
  if (!p) return;
  for (int i = 0; i < p->n; i++) {
    tuner_close(p->gpu[i].t);
    if (p->gpu[i].r) runner_stop(p->gpu[i].r);
  }
  for (int a = 0; a < p->n_archs; a++)
    if (p->builders[a]) builder_stop(p->builders[a]);
  for (int k = 0; k < p->n_kinds; k++)
    if (p->stores[k].close) p->stores[k].close(p->stores[k].ctx);
  pthread_cond_destroy(&p->ended);
  pthread_mutex_destroy(&p->run_lock);
  pthread_mutex_destroy(&p->db_lock);
  free(p);
}

int tune_pool_gpus(const tune_pool *p) {
  return p->n;
}

const device *tune_pool_device(const tune_pool *p, int gpu) {
  return &p->gpu[gpu].dev;
}

int tune_pool_kind(const tune_pool *p, int gpu) {
  return p->gpu[gpu].kind;
}

int tune_pool_kinds(const tune_pool *p) {
  return p->n_kinds;
}

void tune_pool_gpu_stats(const tune_pool *p, int gpu, long *trials, double *busy_s) {
  *trials = p->gpu[gpu].trials_done;
  *busy_s = p->gpu[gpu].busy_s;
}

/* ---- a run --------------------------------------------------------------- */

/* A task's progress, as the pool's (under the run lock). */
static void on_progress(void *user, const tune_progress *tp) {
  gpu_slot *g = user;
  tune_pool *p = g->p;
  pthread_mutex_lock(&p->run_lock);
  g->trials_cur = tp->done;
  if (tp->finished) {
    g->trials_done += tp->done;
    g->trials_cur = 0;
  }
  if (p->fn) {
    double el = mono_s() - p->t0;
    pool_progress pp = {.gpu = g->index, .kind = g->kind, .task = tp, .elapsed_s = el};
    pp.gpu_trials = g->trials_done + g->trials_cur;
    pp.gpu_trials_per_s = el > 0 ? pp.gpu_trials / el : 0;
    for (int i = 0; i < p->n; i++) pp.trials += p->gpu[i].trials_done + p->gpu[i].trials_cur;
    p->fn(p->user, &pp);
  }
  pthread_mutex_unlock(&p->run_lock);
}

static void *gpu_main(void *arg) {
  gpu_slot *g = arg;
  tune_pool *p = g->p;
  const pool_source *src = p->src;
  for (;;) {
    if (p->stop && *p->stop) break;
    pool_task tk;
    long id;
    if (!src->next(src->ctx, g->kind, &g->dev, &tk, &id)) break;
    tune_result r;
    ct_err e = {0};
    double t0 = mono_s();
    ct_status st = tuner_tune(g->t, tk.name, &tk.w, tk.tpl, on_progress, g, &r, &e);
    pthread_mutex_lock(&p->run_lock);
    g->busy_s += mono_s() - t0;
    g->trials_done += g->trials_cur; /* a run that failed reported no end */
    g->trials_cur = 0;
    pthread_mutex_unlock(&p->run_lock);
    if (st) err_prefix(&e, "%s (device %d)", g->dev.name, g->dev.ordinal);
    src->done(src->ctx, g->kind, &g->dev, id, st, st ? NULL : &r, &e);
    if (st) { /* this GPU is done for */
      g->dead = 1;
      break;
    }
  }
  /* wait for the others: the processes this thread started die with it */
  pthread_mutex_lock(&p->run_lock);
  if (--p->running == 0)
    pthread_cond_broadcast(&p->ended);
  else
    while (p->running > 0) pthread_cond_wait(&p->ended, &p->run_lock);
  pthread_mutex_unlock(&p->run_lock);
  return NULL;
}

ct_status tune_pool_run_source(tune_pool *p, const pool_source *src, pool_progress_fn fn,
                               void *user, ct_err *err) {
  p->src = src;
  p->fn = fn;
  p->user = user;
  p->stop = tuner_opts(p->gpu[0].t)->stop;
  for (int i = 0; i < p->n; i++) {
    p->gpu[i].trials_done = p->gpu[i].trials_cur = 0;
    p->gpu[i].busy_s = 0;
  }
  p->t0 = mono_s();
  pthread_mutex_lock(&p->run_lock);
  p->running = 0;
  ct_status st = CT_OK;
  for (int i = 0; i < p->n; i++) {
    gpu_slot *g = &p->gpu[i];
    if (g->dead) continue;
    if (pthread_create(&g->thread, NULL, gpu_main, g) != 0) {
      st = ERR_SET(err, CT_ERR_INTERNAL, "pool: could not start the thread of GPU %d",
                   g->dev.ordinal);
      g->dead = 1;
      continue;
    }
    g->dead = -1; /* started: joined below */
    p->running++;
  }
  pthread_mutex_unlock(&p->run_lock);
  for (int i = 0; i < p->n; i++)
    if (p->gpu[i].dead == -1) {
      pthread_join(p->gpu[i].thread, NULL);
      if (p->gpu[i].dead == -1) p->gpu[i].dead = 0;
    }
  return st;
}

/* ---- the pool's own queue -------------------------------------------------------- */

/* Each task once per kind: a kind's next task, or one a failed GPU handed
 * back; a kind whose last GPU failed ends the run in failure. */
typedef struct queue {
  tune_pool *p;
  pthread_mutex_t lock;
  const pool_task *tasks;
  int n;
  tune_result *results;
  int next[POOL_MAX_GPUS]; /* per kind: the next task not yet handed out */
  int *back;               /* per kind, n slots: tasks handed back */
  int n_back[POOL_MAX_GPUS];
  int alive[POOL_MAX_GPUS]; /* per kind: GPUs still tuning */
  ct_status failed;         /* the failure of the first kind left without a GPU */
  ct_err fail_err;
} queue;

static int q_next(void *ctx, int kind, const device *dev, pool_task *out, long *id) {
  (void)dev;
  queue *q = ctx;
  int i = -1;
  pthread_mutex_lock(&q->lock);
  if (q->n_back[kind])
    i = q->back[kind * q->n + --q->n_back[kind]];
  else if (q->next[kind] < q->n)
    i = q->next[kind]++;
  pthread_mutex_unlock(&q->lock);
  if (i < 0) return 0;
  *out = q->tasks[i];
  *id = i;
  return 1;
}

static void q_done(void *ctx, int kind, const device *dev, long id, ct_status st,
                   const tune_result *res, const ct_err *err) {
  (void)dev;
  queue *q = ctx;
  pthread_mutex_lock(&q->lock);
  if (!st) {
    q->results[(size_t)id * q->p->n_kinds + kind] = *res;
  } else {
    q->back[kind * q->n + q->n_back[kind]++] = (int)id;
    if (--q->alive[kind] == 0 && !q->failed) {
      q->failed = st;
      q->fail_err = *err;
    }
  }
  pthread_mutex_unlock(&q->lock);
}

ct_status tune_pool_run(tune_pool *p, const pool_task *tasks, int n, pool_progress_fn fn,
                        void *user, tune_result *results, ct_err *err) {
  queue q = {.p = p, .tasks = tasks, .n = n, .results = results};
  pthread_mutex_init(&q.lock, NULL);
  q.back = calloc((size_t)(n ? n : 1) * p->n_kinds, sizeof *q.back);
  if (!q.back) {
    pthread_mutex_destroy(&q.lock);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  }
  memset(results, 0, sizeof *results * (size_t)n * p->n_kinds);
  for (int i = 0; i < p->n; i++)
    if (!p->gpu[i].dead) q.alive[p->gpu[i].kind]++;
  ct_status st = CT_OK;
  for (int k = 0; k < p->n_kinds && !st; k++)
    if (!q.alive[k])
      st = ERR_SET(err, CT_ERR_CUDA, "%s: no GPU of this kind is left in the pool",
                   p->gpu[p->kind_first[k]].dev.name);
  pool_source src = {.ctx = &q, .next = q_next, .done = q_done};
  if (!st) st = tune_pool_run_source(p, &src, fn, user, err);
  /* a thread that could not start leaves its kind's tasks to the others */
  for (int k = 0; k < p->n_kinds && !st && !q.failed; k++)
    if (q.next[k] < n || q.n_back[k])
      if (!(p->stop && *p->stop))
        st = ERR_SET(err, CT_ERR_CUDA, "%s: no GPU of this kind is left in the pool",
                     p->gpu[p->kind_first[k]].dev.name);
  if (!st && q.failed) {
    *err = q.fail_err;
    st = q.failed;
  }
  free(q.back);
  pthread_mutex_destroy(&q.lock);
  return st;
}
