/*
 * pool.h: tuning on several GPUs of one host at once (`convtune tune
 * --devices`).
 *
 * One tuner per GPU, each with its own runner (an isolated worker process
 * on that GPU: a fault costs that GPU's trial, as with one GPU) and its own
 * thread; all of them compile through one shared builder per architecture
 * (each tuner a client, builder.h) and record through one database
 * connection per kind of GPU, serialised by one lock: one writer. GPUs
 * whose records would carry the same device (name, compute capability, SM
 * count, driver, runtime: the database's device key) are one kind and
 * share the work: each task (workload x template, tune_plan) is tuned once
 * per kind, on whichever of its GPUs is free. A host with mixed GPUs tunes
 * every task on each kind.
 *
 * A GPU whose tuner fails (its runner cannot be restarted, ...) hands its
 * task back and stops; the others go on. The run fails only when a task
 * has no GPU of its kind left. Threads live until the whole run ends: the
 * worker processes a thread starts die with it (proc.h), so none may end
 * while others still compile or measure.
 */
#ifndef CT_TUNER_POOL_H
#define CT_TUNER_POOL_H

#include <pthread.h>

#include "tuner/tune.h"

#define POOL_MAX_GPUS 64

/* Whether two GPUs are one kind: their records would carry the same
 * device (name, compute capability, SM count, driver, runtime). */
int tune_same_kind(const device *a, const device *b);

/* A store whose every call holds *lock (the inner store's close is the
 * owner's: the wrapper has none). */
typedef struct tune_locked_store {
  tune_store inner;
  pthread_mutex_t *lock;
} tune_locked_store;
tune_store tune_store_locked(tune_locked_store *ls);

typedef struct tune_pool tune_pool;

/* Start a runner on each of the n device ordinals (distinct), then one
 * builder per architecture (o->n_builders processes in all, 0: one per
 * core, shared out by the GPUs' counts) and one store per kind on the
 * database at db_path. Owned: tune_pool_close. */
ct_status tune_pool_open(const char *db_path, const tune_opts *o, const int *devices, int n,
                         tune_pool **out, ct_err *err);

/* Where the pool's stores come from: one per kind, made for a device of
 * that kind (into *out, which the pool locks around every call and closes
 * with out->close when not NULL). tune_pool_open's makes the database's. */
typedef ct_status (*pool_store_fn)(void *ctx, const device *dev, tune_store *out, ct_err *err);
ct_status tune_pool_open_with(pool_store_fn make_store, void *ctx, const tune_opts *o,
                              const int *devices, int n, tune_pool **out, ct_err *err);
void tune_pool_close(tune_pool *p);

int tune_pool_gpus(const tune_pool *p);
const device *tune_pool_device(const tune_pool *p, int gpu);
/* The kind of a GPU (0 .. tune_pool_kinds - 1, in the order first seen). */
int tune_pool_kind(const tune_pool *p, int gpu);
int tune_pool_kinds(const tune_pool *p);

/* One task to tune: w in tpl's layout (tune_plan's), named name. */
typedef struct pool_task {
  const char *name;
  const template_desc *tpl;
  ct_workload w;
} pool_task;

/* After each batch of any GPU's task, serialised. */
typedef struct pool_progress {
  int gpu, kind;
  const tune_progress *task; /* the task's own progress (tune.h) */
  long gpu_trials;           /* new trials of this GPU in the run so far */
  double gpu_trials_per_s;   /* of this GPU, over the run's wall time */
  long trials;               /* all GPUs' */
  double elapsed_s;
} pool_progress;
typedef void (*pool_progress_fn)(void *user, const pool_progress *p);

/* Tune every task on every kind: results[i * kinds + k] is task i's result
 * on kind k. Stops after the batches in flight when o->stop is set. Errors
 * are engine errors (a kind with no GPU left, its first failure's message);
 * what was measured is in the database either way. */
ct_status tune_pool_run(tune_pool *p, const pool_task *tasks, int n, pool_progress_fn fn,
                        void *user, tune_result *results, ct_err *err);

/* Where a run's tasks come from, and where their results go: the pool's
 * own queue (tune_pool_run), or MPI's rank 0 (tuner/mpi.c). Called from the
 * GPUs' threads at once: a source locks what it shares. next: the next task
 * for a GPU of device dev (kind: the pool's kind index), into *out with the
 * source's id of it; 0 when none is left for that kind (the GPU ends its
 * run; a source that may still get a task back, as MPI's while a rank that
 * may be lost holds one, waits in next instead). done: the task's end, its result when st is CT_OK,
 * else the failure of the GPU, which ends its run: the source hands the task to another GPU of its
 * kind, or counts it lost. The strings of *out live until the run ends. */
typedef struct pool_source {
  void *ctx;
  int (*next)(void *ctx, int kind, const device *dev, pool_task *out, long *id);
  void (*done)(void *ctx, int kind, const device *dev, long id, ct_status st,
               const tune_result *res, const ct_err *err);
} pool_source;

/* tune_pool_run with the tasks of a source; CT_OK unless a thread could not
 * start (what failed is the source's to say). */
ct_status tune_pool_run_source(tune_pool *p, const pool_source *src, pool_progress_fn fn,
                               void *user, ct_err *err);

/* Per GPU over the last run: new trials and the seconds it spent tuning. */
void tune_pool_gpu_stats(const tune_pool *p, int gpu, long *trials, double *busy_s);

#endif
