/*
 * tune.h: the tuning loop. A tuner holds the database, the builder (NVRTC
 * worker processes), the runner (a GPU worker process) and the device; it
 * tunes one task (workload x template) at a time:
 *   resume from the task's trials in the database (never re-measured, the
 *   model starts from them) -> seed the model with other workloads' trials
 *   (transfer) -> repeat: the strategy proposes a batch, the builder compiles
 *   it in parallel while the runner measures each cubin as it arrives, the
 *   batch's trials go to the database in one transaction, the strategy
 *   learns -> until the trial count, early stopping or the time budget ->
 *   the best config's cubin goes to the kernel cache.
 * A failing config is a trial outcome, never an error of the loop.
 */
#ifndef CT_TUNER_TUNE_H
#define CT_TUNER_TUNE_H

#include "db/db.h"
#include "tuner/builder.h"
#include "tuner/runner.h"
#include "tuner/search.h"

typedef struct tune_opts {
  search_opts search;   /* strategy and its settings (kind "xgb") */
  int n_trials;         /* new trials per task at most (1000) */
  int early_stopping;   /* stop after this many trials without a better one (0: never) */
  double time_budget_s; /* per task (0: none) */
  int transfer;         /* seed the model with other workloads' trials (1) */
  int n_builders;       /* compiler processes (0: one per core) */
  runner_opts runner;
  /* When not NULL and nonzero, tuning stops after the batch in flight (set
   * by the caller's SIGINT handler): what was measured is kept. */
  const volatile int *stop;
} tune_opts;

void tune_opts_default(tune_opts *o);

/* Progress after each batch (and once at the end with finished = 1). */
typedef struct tune_progress {
  const char *name; /* the task's name, e.g. "resnet50/l1_3x3_64" */
  const char *template_name;
  int done, total; /* new trials so far, n_trials */
  int resumed;     /* trials found in the database */
  double best_us;  /* 0 until one is OK */
  double best_tops;
  int errors; /* trials not OK */
  int by_outcome[OUT_COUNT];
  double elapsed_s, eta_s;
  int finished;
} tune_progress;
typedef void (*tune_progress_fn)(void *user, const tune_progress *p);

typedef struct tune_result {
  char key[CT_KEY_MAX];
  char template_name[48];
  int n_trials, n_resumed;
  int by_outcome[OUT_COUNT];
  double best_us; /* 0 when no OK trial */
  double best_tops;
  char best_config[1024]; /* compact JSON */
  double wall_s;
  double trials_per_s; /* new trials / wall time, compile and measurement included */
  int stopped_early;
} tune_result;

typedef struct tuner tuner;

/* Start the builder and the runner (in that order: both fork before any
 * CUDA use), identify the GPU, then open the database. CT_ERR_NO_DEVICE
 * (nothing created on disk) when there is no GPU. Owned: tuner_close. */
ct_status tuner_open(const char *db_path, const tune_opts *o, tuner **out, ct_err *err);
void tuner_close(tuner *t);

/* The device the tuner measures on. Borrowed. */
const device *tuner_device(const tuner *t);

/* Tune w with tpl (NULL: every template that runs it, see tune_plan), named
 * name for progress and records; *res is the best of its tasks. */
ct_status tuner_tune(tuner *t, const char *name, const ct_workload *w, const template_desc *tpl,
                     tune_progress_fn fn, void *user, tune_result *res, ct_err *err);

/* Template selection by layout, without a GPU. A template runs the tensors
 * of its own layout: a channel-packed one (nchw4c) takes an nchw4c
 * workload as it is and a plain nchw one packed (workload_packed: what the
 * dispatch library packs at run time); a channels-last one (nhwc) takes
 * nhwc workloads only. An nhwc workload is never converted, and an nchw or
 * nchw4c one is never offered to an nhwc template: the records of a
 * workload are those of the layout its caller's tensors are in. */

/* The workload tpl tunes for w into *out (which may be w): 1, or 0 when tpl
 * does not take w's layout, the reason in why (TEMPLATE_WHY_MAX bytes; may
 * be NULL). Layout only: tpl->supports decides the rest. */
int tune_task_workload(const template_desc *tpl, const ct_workload *w, ct_workload *out, char *why);

/* One task of tuner_tune: a template and the workload it tunes. */
typedef struct tune_task {
  const template_desc *tpl;
  ct_workload w;
} tune_task;
#define TUNE_MAX_TASKS 16

/* The tasks tuner_tune runs for the valid workload w: tpl alone when given
 * (registered or not: tests plant their own), else every registered
 * template that takes w's layout and supports it, in registration order;
 * into tasks (room for TUNE_MAX_TASKS), their count in *n. When there is
 * none: CT_ERR_UNSUPPORTED, the message naming name, w's layout and why
 * the templates of that layout refuse it (e.g. an nhwc stem: C % 16 != 0). */
ct_status tune_plan(const char *name, const ct_workload *w, const template_desc *tpl,
                    tune_task *tasks, int *n, ct_err *err);

/* The db_device of a device (for records and queries). */
void tune_db_device(const device *dev, db_device *out);

#endif
