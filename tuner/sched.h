/*
 * sched.h: a task scheduler that shares one tuning budget among the unique
 * workloads of a model (or a set tuned as one), after Ansor's (Zheng et al.,
 * OSDI 2020, section 6; TVM's auto_scheduler/task_scheduler.py). A task is a
 * workload x template (tune_plan). The objective is the model's total, the
 * sum over workloads of count x best, a workload's best being its tasks'
 * lowest. The run goes in rounds of a few trials of one task each:
 *   warm-up: each task once, in order, unless the database already holds an
 *   OK trial of it (it starts from that best);
 *   then a workload with no OK trial yet, if any (the total is unknown
 *   without it), else with probability eps a random live task, else the
 *   task whose next round is expected to cut the total the most per second.
 * Expected cut (per trial, then times the task's measured trials/s): the
 * task's gradient g = alpha x backward + (1 - alpha) x forward, backward the
 * change of its best over its last `window` rounds per trial, forward the
 * optimistic -best / trials (trials counted with the stored ones), or where
 * similar tasks (same template, kernel, stride, ops within 1.618x) run at a
 * higher rate, Ansor's bound beta x ops / their best ops-per-us, if more
 * optimistic; projected best b + g x R after a round of R trials; cut =
 * count x max(0, workload best - projected) / R. A task that loses to
 * another template of its workload so gets rounds only while it is
 * projected to win. Ansor counts rounds where this counts trials, so that
 * rounds of different sizes compare, and weighs by time because the budget
 * is wall-clock and a task's trials cost what its compiles cost.
 * A task is done at --trials new trials, when its strategy has nothing left,
 * after fail_rounds rounds without an OK trial, or when its workload went
 * early_stopping trials without a better best.
 *
 * Round size and overhead. A round runs a tune_session (tune.h) that stays
 * open, so it continues its search: the xgb model retrains every 64 new
 * results as in one long run, not per round. What a round adds, measured
 * on the H200 (ResNet-50 b16 nhwc as one model, 30-40 s runs): the
 * runner's task set up again (buffers, inputs, the reference run) 12 ms,
 * the nearest workload's best looked up again and the kernel cache checked
 * 1 ms each, a session opened 4-10 ms (reopened for fresh transfer rows
 * about once per task, below): about 15 ms, 3% of a 16-trial round of
 * int32 layers (0.5 s) and under 1% of one with 8-bit output (2.6 s).
 * What costs more is the batch's pipeline, which every batch pays in a
 * long run too: the GPU waits for the first cubin (0.2 s int32, 0.8 s
 * 8-bit) and the round for its slowest compile, so rounds of 16 ran 31
 * trials/s and rounds of 64 51 trials/s (int32); 8-bit output, whose
 * compiles take 1-2.5 s on 16 builders, 5.8 trials/s at 16. Hence,
 * without --round-trials: R = budget x rate / (3 x tasks), the warm-up so
 * taking at most a third of the budget, rounded down to a multiple of the
 * builders (whole compile waves), within [max(16, builders), 64]: 120 s of
 * ResNet-50 with 8-bit output (23 tasks + the stem's second template) gives
 * 16, int32 64. Without a budget R = 64, the xgb batch. The first round,
 * with no rate yet, takes the smallest R; the last is cut to the trials
 * its task's rate fits in what is left (not started under a quarter of R)
 * and ends after its batch in flight: a batch is never cut.
 *
 * The policy (sched_new .. sched_record) is pure: it decides from per-task
 * histories and is driven in tests with synthetic curves. sched_run drives
 * it with a tuner. Deterministic for a seed, given the same measurements.
 */
#ifndef CT_TUNER_SCHED_H
#define CT_TUNER_SCHED_H

#include <stdint.h>

#include "tuner/tune.h"

typedef struct sched_opts {
  double budget_s;    /* wall-clock budget of the whole run (0: none) */
  int max_trials;     /* new trials per task in this run (0: no cap) */
  int early_stopping; /* trials of a workload without a better best that end it (0: never) */
  int round_trials;   /* trials per round (0: chosen, see above) */
  int min_round;      /* bounds of the chosen size (16, 64) */
  int max_round;
  int round_multiple; /* the chosen size is a multiple of this (1; the CLI: the builders) */
  double alpha;       /* weight of the backward window (0.2, Ansor's) */
  double beta;        /* similarity bound (2, Ansor's) */
  int window;         /* backward window in rounds (3, Ansor's) */
  double eps;         /* share of rounds given to a random live task after the warm-up (0.05) */
  int fail_rounds;    /* rounds without an OK trial before a task is given up (3) */
  uint64_t seed;      /* of the eps draws (1) */
  /* sched_run: when not NULL and nonzero, the run ends after the batch in
   * flight (the caller's SIGINT handler sets it). */
  const volatile int *stop;
} sched_opts;

void sched_opts_default(sched_opts *o);

/* Why a task takes no more rounds. */
typedef enum sched_state {
  SCHED_LIVE = 0,
  SCHED_DONE_TRIALS,    /* max_trials new trials */
  SCHED_DONE_EARLY,     /* its workload went early_stopping trials without a better best */
  SCHED_DONE_EXHAUSTED, /* the strategy had nothing left to propose */
  SCHED_DONE_FAILING,   /* fail_rounds rounds (or early stopping) without an OK trial */
  SCHED_STATE_COUNT
} sched_state;

/* "live", "trials", "early-stopped", "exhausted", "failing". */
const char *sched_state_name(sched_state s);

/* ---- the policy ------------------------------------------------------------ */

typedef struct sched sched;

/* A task as the policy sees it. */
typedef struct sched_task_desc {
  int workload; /* its workload, 0 .. n_workloads - 1 */
  int group;    /* its similarity group (>= 0), or -1 for none */
  double ops;   /* its operations, for the similarity bound */
} sched_task_desc;

/* What the policy knows of a task (read-only). */
typedef struct sched_task_stat {
  int stored_trials; /* in the database at the start (sched_resume) */
  int run_trials;    /* new in this run */
  int rounds;        /* rounds run in this run */
  double seconds;    /* wall time of those rounds */
  double best_us;    /* the task's best (0: no OK trial) */
  sched_state state;
} sched_task_stat;

/* A policy for n_tasks tasks over n_workloads workloads, counts[w] > 0 the
 * occurrences of workload w (a workload may have no task: it is then left
 * out of the total). CT_ERR_INVALID_ARG names a bad option or task.
 * Owned: sched_free. */
ct_status sched_new(const sched_opts *o, int n_workloads, const int *counts, int n_tasks,
                    const sched_task_desc *tasks, sched **out, ct_err *err);
void sched_free(sched *s);

/* What the database holds of task before the run: n_trials trials, best_us
 * their best OK median (0: none). Call before the first sched_next. */
void sched_resume(sched *s, int task, int n_trials, double best_us);

typedef enum sched_end {
  SCHED_GO = 0,       /* a round is picked */
  SCHED_ALL_DONE,     /* every task is done */
  SCHED_BUDGET_SPENT, /* elapsed >= budget, or what is left fits under a quarter round */
} sched_end;

typedef struct sched_pick {
  int task;
  int n_trials;      /* the round's trials */
  double time_cap_s; /* what is left of the budget (0: no budget) */
  int warmup;        /* a warm-up round (or one for a workload with no OK trial yet) */
  int explore;       /* an eps draw */
  double score;      /* the expected cut of the total per second (0 for the above) */
} sched_pick;

/* The next round, elapsed_s seconds into the run: SCHED_GO with *out, or
 * why the run is over. */
sched_end sched_next(sched *s, double elapsed_s, sched_pick *out);

/* What a round of task measured. */
typedef struct sched_round {
  int n_trials;   /* new trials (may be fewer than picked) */
  double seconds; /* its wall time */
  double best_us; /* the task's best after it (0: none OK) */
  int since_best; /* trials since the task's best improved (tune_session_since_best) */
  int exhausted;  /* the strategy had nothing left */
} sched_round;

/* Record a round of task (any task: the pick is a suggestion); its state
 * becomes done at max_trials, exhaustion, fail_rounds without an OK trial
 * or its workload's early stopping. Out-of-range calls are ignored. */
void sched_record(sched *s, int task, const sched_round *r);

/* The model's estimated total: sum of count x best over the workloads that
 * have a best; *n_unknown (may be NULL) counts those with tasks but no OK
 * trial. */
double sched_total_us(const sched *s, int *n_unknown);

/* A workload's best (its tasks' lowest; 0: none). */
double sched_workload_best(const sched *s, int workload);

/* The round size the next round would get (before the budget's cut). */
int sched_round_size(const sched *s);

/* A task's record (borrowed, valid until sched_free; NULL out of range),
 * and how many tasks there are. */
const sched_task_stat *sched_task(const sched *s, int task);
int sched_n_tasks(const sched *s);

/* ---- the run --------------------------------------------------------------- */

/* One workload of the model: its name and how often the model runs it. */
typedef struct sched_item {
  const char *name;
  ct_workload w;
  int count;
} sched_item;

/* Progress: after each batch (batch not NULL: the tuner's progress of the
 * task in flight) and after each round (batch NULL). */
typedef struct sched_progress {
  const char *model; /* the run's name */
  const char *name;  /* the round's workload */
  const char *template_name;
  int count;        /* its occurrences */
  int round;        /* 1-based */
  int round_trials; /* picked for this round */
  int warmup, explore;
  double best_us;      /* the workload's best (0: none); before the round while in flight */
  double prev_best_us; /* before the round */
  double total_us;     /* the model's estimated total */
  int n_unknown;       /* workloads with no OK trial yet */
  int n_trials;        /* new trials in the run so far */
  double elapsed_s, budget_s;
  const tune_progress *batch;
} sched_progress;
typedef void (*sched_progress_fn)(void *user, const sched_progress *p);

/* One workload in the result. */
typedef struct sched_wl {
  char name[128];
  char key[CT_KEY_MAX];
  int count;
  int supported; /* 0: no template runs it; why says so */
  char why[512];
  double best_us; /* 0: no OK trial */
  double best_tops;
  char template_name[48]; /* of the best ("" when none) */
  char best_config[1024];
  int n_trials, n_stored, rounds, errors; /* summed over its tasks */
  sched_state state;                      /* its tasks' lowest: live while one is */
  char model_fallback[CT_ERRMSG_MAX];     /* "" or its first task's (tune_result's) */
} sched_wl;

/* A point of the estimated total's curve (at the start and after each round). */
typedef struct sched_point {
  double elapsed_s;
  double total_us;
  int n_unknown;
  int n_trials;
} sched_point;

typedef struct sched_result {
  int n_workloads;
  sched_wl *workloads; /* in the items' order, duplicates merged */
  double total_us;     /* over the workloads with a best */
  int n_unknown;       /* supported workloads with no OK trial */
  int n_unsupported;
  double start_total_us; /* from the database, before the first round */
  int start_unknown;
  int n_trials, n_rounds;
  double wall_s, trials_per_s, budget_s;
  sched_end end;   /* why it ended (SCHED_GO: stopped by the flag, or an error) */
  int interrupted; /* the stop flag ended it */
  int n_points;
  sched_point *curve;
  char model_fallback[CT_ERRMSG_MAX]; /* "" or the run's first (tune_result's) */
} sched_result;

void sched_result_free(sched_result *r);

/* Tune items (n of them; items with the same workload key are merged, their
 * counts summed) with one budget on the open tuner t: tpl alone when not
 * NULL, else every template that runs each workload. A workload no template
 * runs stays in the result as unsupported. The tuner's own early_stopping
 * also applies per task; leave it 0 for the scheduler's, per workload.
 * Everything measured is in the database. *out (owned: sched_result_free)
 * is set once the workloads are planned and read from the database, also
 * when an engine error ends the run later (what was done until then); else
 * NULL. */
ct_status sched_run(tuner *t, const char *model, const sched_item *items, int n,
                    const template_desc *tpl, const sched_opts *o, sched_progress_fn fn, void *user,
                    sched_result **out, ct_err *err);

#endif
