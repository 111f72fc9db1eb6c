/*
 * tune.h: the tuning loop. A tuner holds a store (store.h: the database),
 * the builder (NVRTC worker processes), the runner (a GPU worker process)
 * and the device; it tunes one task (workload x template) at a time:
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

#include "tuner/builder.h"
#include "tuner/runner.h"
#include "tuner/search.h"
#include "tuner/store.h"

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
  /* NULL, or why the search's cost model fell back to random proposals
   * (search_model_fallback: its first failure, kept; borrowed) */
  const char *model_fallback;
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
  char model_fallback[CT_ERRMSG_MAX]; /* "" or, as tune_progress's, the cost model's failure */
} tune_result;

typedef struct tuner tuner;

/* Start the builder and the runner (in that order: both fork before any
 * CUDA use), identify the GPU, then open the database as the tuner's store
 * (tune_store_db_open). CT_ERR_NO_DEVICE (nothing created on disk) when
 * there is no GPU. Owned: tuner_close. */
ct_status tuner_open(const char *db_path, const tune_opts *o, tuner **out, ct_err *err);
void tuner_close(tuner *t);

/* A tuner on a started runner r (taken over: tuner_close stops it) of
 * device dev, with a builder and a store that it shares with others (a
 * pool's, tune_pool.h): it compiles as b's client `client` and records
 * through store, whose functions must be safe to call from its thread;
 * tuner_close leaves both to their owner. Its trials' uids name dev's
 * ordinal, so tuners of one process never collide. */
ct_status tuner_open_shared(const tune_opts *o, runner *r, const device *dev, builder *b,
                            int client, const tune_store *store, tuner **out, ct_err *err);

/* The device the tuner measures on. Borrowed. */
const device *tuner_device(const tuner *t);

/* Tune w with tpl (NULL: every template that runs it, see tune_plan), named
 * name for progress and records; *res is the best of its tasks
 * (tune_results_best). */
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
 * template that takes w's layout and supports it, in registration order,
 * less those whose rounds never paid on such a layer (tune.c, tune_skips:
 * the dense mma and grouped fallback templates on a depthwise layer the
 * depthwise family runs); with a device's architecture a (NULL: any),
 * also less those with no valid config there (search_has_valid: the
 * wgmma templates before sm_90); into tasks (room for TUNE_MAX_TASKS),
 * their count in *n. When there is none: CT_ERR_UNSUPPORTED, the message
 * naming name, w's layout (and a, where it is a that refuses) and why the
 * templates of that layout refuse it (e.g. an nhwc stem: C % 16 != 0),
 * with a pointer to the packed layout where a packed template runs it. */
ct_status tune_plan(const char *name, const ct_workload *w, const template_desc *tpl, const arch *a,
                    tune_task *tasks, int *n, ct_err *err);

/* Whether tune_plan refuses w on a alone (it plans tasks with no
 * architecture): 1, why (CT_ERRMSG_MAX bytes) its message; else 0 and "".
 * The pools plan before they know their GPUs, so a task whose template has
 * no config on a kind runs no trial there; this says why. */
int tune_device_refusal(const char *name, const ct_workload *w, const template_desc *tpl,
                        const arch *a, char *why);

/* The result of a workload from those of its n tasks: the one with the
 * lowest best (the first when none ran OK), carrying the first task's
 * model fallback note. */
void tune_results_best(const tune_result *rs, int n, tune_result *out);

/* Transfer learning reads at most this many trials of other workloads. */
#define TUNE_TRANSFER_MAX 4000

/* The options the tuner was opened with. Borrowed. */
const tune_opts *tuner_opts(const tuner *t);

/* What the database holds for one task (w in tpl's layout, as tune_plan
 * gives) on the tuner's device with tpl's current version, as the result of
 * a run of no trials: key, template, n_resumed (the trials a run resumes
 * from), best_us, best_tops and best_config (the best OK trial; 0 and ""
 * when none): the numbers tuner_tune starts from and reports. */
ct_status tuner_stored(tuner *t, const ct_workload *w, const template_desc *tpl, tune_result *res,
                       ct_err *err);

/* A tuner's session name, which its trials' uids extend ("%.24s-%ld"):
 * the start time in hex and 40 random bits, then "-ORDINAL" for a pool's
 * tuner, its GPU's ordinal (ordinal < 0: none; bench/mpi_kill.py finds a
 * rank's trials by it); at most 24 characters for an ordinal below 10000,
 * so that a uid holds it whole. */
void tune_session_name(char *buf, size_t size, int ordinal);

/* A task held open across rounds, for a scheduler that shares one budget
 * among tasks: opening resumes from the database, seeds the model with
 * other workloads' trials and queues the first trials (as tuner_tune does);
 * each run continues the same search (its model, its pending proposals),
 * so that a round costs no more than the same trials in one long run,
 * besides setting the runner's task up again (allocations and a reference
 * run: tens of ms on ResNet-50's layers). Sessions of one tuner take turns:
 * one runs at a time. Owned: tune_session_close. */
typedef struct tune_session tune_session;

/* Open the task (w in tpl's layout, from tune_plan) named name (copied). */
ct_status tune_session_open(tuner *t, const char *name, const ct_workload *w,
                            const template_desc *tpl, tune_session **out, ct_err *err);

/* Run up to n_trials new trials in batches of at most the strategy's batch,
 * until time_cap_s seconds (0: none; checked between batches, so a batch in
 * flight ends), the stop flag, early stopping (tune_opts.early_stopping,
 * counted across the session's runs) or the strategy has nothing left. A
 * run after the first queues again the best config of the nearest tuned
 * workload, which other tasks' rounds may have changed. The best config's
 * cubin is in the kernel cache after each run. *res sums the session's
 * runs (n_trials, outcomes, wall_s; best_* is the database's best of the
 * task on this device). Errors are engine errors, never a trial's. */
ct_status tune_session_run(tune_session *s, int n_trials, double time_cap_s, tune_progress_fn fn,
                           void *user, tune_result *res, ct_err *err);

/* After a run: trials since the task's best improved (or since it opened,
 * with no OK trial), whether the strategy had nothing left to propose, and
 * how many transfer rows the model was seeded with at open. */
int tune_session_since_best(const tune_session *s);
int tune_session_exhausted(const tune_session *s);
int tune_session_transfer_rows(const tune_session *s);

/* Close a session; NULL is accepted. What was measured is in the database. */
void tune_session_close(tune_session *s);

#endif
