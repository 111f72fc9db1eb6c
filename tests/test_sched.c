/*
 * test_sched.c: the task scheduler's policy (tuner/sched.h), driven with
 * synthetic tuning curves instead of a tuner: each task's best after n
 * trials is a decaying exponential from a start to a floor, on a 0.01 us
 * grid as measurements are, at a fixed rate of trials per second. The
 * policy only sees what a tuner reports (trials, seconds, best, trials
 * since the best, exhaustion), so this exercises it exactly as sched_run
 * does.
 *
 * Checked: the warm-up order, and that a stored best needs none; that a
 * heavy improving workload gets more rounds and a converged one fewer,
 * then none after early stopping; the budget (rounds sized to it, the last
 * one cut to what is left, the run ending within a round's fixed cost of
 * it); ties go to the lower index; eps draws depend on the seed only; a
 * workload with no OK trial goes first until given up; trial caps and
 * exhaustion; a template that loses to another of its workload; Ansor's
 * similarity bound; rejected options. CPU only, well under a second.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/sched.h"
#include "tests/util.h"

/* ---- synthetic tasks ------------------------------------------------------- */

typedef struct curve {
  double start, floor; /* the best after the first trial, and the limit */
  double tau;          /* trials that cut the gap by e */
  double rate;         /* trials per second */
  int fail;            /* never an OK trial */
  int space;           /* configs in all (0: unbounded); exhausted there */
} curve;

/* The best after n trials of this run (0: none OK). */
static double best_at(const curve *c, int n) {
  if (c->fail || n <= 0) return 0;
  double b = c->floor + (c->start - c->floor) * exp(-(n - 1) / c->tau);
  return round(b * 100) / 100;
}

/* Trials after the one that reached the best of n trials. */
static int since_best_at(const curve *c, int n) {
  if (c->fail) return n;
  int k = n;
  while (k > 1 && best_at(c, k - 1) == best_at(c, n)) k--;
  return n - k;
}

#define MAX_PICKS 4096

typedef struct sim {
  sched *s;
  const curve *c;
  double elapsed, overhead_s; /* overhead_s: a round's fixed cost */
  int n_picks;
  sched_pick picks[MAX_PICKS];
  int sizes_after[MAX_PICKS]; /* sched_round_size after each round */
  sched_end end;
} sim;

/* Run up to max_rounds rounds (or until the policy ends the run). */
static void run(sim *m, int max_rounds) {
  for (int k = 0; k < max_rounds && m->n_picks < MAX_PICKS; k++) {
    sched_pick pk;
    m->end = sched_next(m->s, m->elapsed, &pk);
    if (m->end != SCHED_GO) return;
    ck_assert_int_gt(pk.n_trials, 0);
    const curve *c = &m->c[pk.task];
    int done = sched_task(m->s, pk.task)->run_trials, n = pk.n_trials, exhausted = 0;
    if (c->space && done + n >= c->space) {
      n = c->space - done;
      exhausted = 1;
    }
    double sec = n / c->rate + m->overhead_s;
    sched_round r = {.n_trials = n,
                     .seconds = sec,
                     .best_us = best_at(c, done + n),
                     .since_best = since_best_at(c, done + n),
                     .exhausted = exhausted};
    m->elapsed += sec;
    sched_record(m->s, pk.task, &r);
    m->sizes_after[m->n_picks] = sched_round_size(m->s);
    m->picks[m->n_picks++] = pk;
  }
}

/* A policy for n tasks, task i of workload wl[i] (NULL: workload i),
 * counts[w] (NULL: 1 each), no groups. */
static sched *make(const sched_opts *o, int n_wl, const int *counts, int n, const int *wl) {
  int ones[64];
  sched_task_desc d[64];
  for (int i = 0; i < 64; i++) ones[i] = 1;
  for (int i = 0; i < n; i++)
    d[i] = (sched_task_desc){.workload = wl ? wl[i] : i, .group = -1, .ops = 1e9};
  sched *s = NULL;
  ct_err err = {0};
  ck_assert_msg(sched_new(o, n_wl, counts ? counts : ones, n, d, &s, &err) == CT_OK, "%s", err.msg);
  return s;
}

static int rounds_of(const sim *m, int task, int from) {
  int n = 0;
  for (int i = from; i < m->n_picks; i++) n += m->picks[i].task == task;
  return n;
}

static void quiet(sched_opts *o) {
  sched_opts_default(o);
  o->eps = 0;
  o->round_trials = 16;
}

/* ---- warm-up --------------------------------------------------------------- */

START_TEST(warm_up_goes_in_order) {
  sched_opts o;
  quiet(&o);
  o.eps = 0.5; /* the warm-up draws nothing */
  curve c[4];
  for (int i = 0; i < 4; i++) c[i] = (curve){.start = 10 + 5 * i, .floor = 5, .tau = 80, .rate = 8};
  sim m = {.s = make(&o, 4, NULL, 4, NULL), .c = c};
  run(&m, 5);
  ck_assert_int_eq(m.n_picks, 5);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(m.picks[i].task, i);
    ck_assert(m.picks[i].warmup && !m.picks[i].explore);
  }
  ck_assert(!m.picks[4].warmup);
  /* the total knows every workload now */
  int unknown = -1;
  double total = sched_total_us(m.s, &unknown);
  ck_assert_int_eq(unknown, 0);
  double want = 0;
  for (int w = 0; w < 4; w++) want += sched_workload_best(m.s, w);
  ck_assert(total == want);
  sched_free(m.s);
}
END_TEST

START_TEST(a_stored_best_needs_no_warm_up) {
  sched_opts o;
  quiet(&o);
  int counts[3] = {2, 3, 1};
  curve c[3] = {{.start = 12, .floor = 6, .tau = 80, .rate = 8},
                {.start = 12, .floor = 6, .tau = 80, .rate = 8},
                {.start = 12, .floor = 6, .tau = 80, .rate = 8}};
  sim m = {.s = make(&o, 3, counts, 3, NULL), .c = c};
  sched_resume(m.s, 1, 400, 7.5); /* tuned before */
  sched_resume(m.s, 2, 50, 0);    /* measured, never OK: warms up */
  int unknown = 0;
  ck_assert(sched_total_us(m.s, &unknown) == 3 * 7.5);
  ck_assert_int_eq(unknown, 2);
  ck_assert_int_eq(sched_task(m.s, 1)->stored_trials, 400);
  run(&m, 30);
  ck_assert_int_eq(m.picks[0].task, 0);
  ck_assert_int_eq(m.picks[1].task, 2);
  ck_assert(m.picks[0].warmup && m.picks[1].warmup && !m.picks[2].warmup);
  /* its 400 trials make its forward term small: the fresh ones go first */
  ck_assert_int_lt(rounds_of(&m, 1, 0), rounds_of(&m, 0, 0));
  sched_free(m.s);
}
END_TEST

/* ---- where the rounds go ----------------------------------------------------- */

START_TEST(a_heavy_improving_workload_gets_more_rounds) {
  sched_opts o;
  quiet(&o);
  int counts[2] = {6, 1}; /* the same curve, six times the weight */
  curve c[2] = {{.start = 20, .floor = 10, .tau = 100, .rate = 10},
                {.start = 20, .floor = 10, .tau = 100, .rate = 10}};
  sim m = {.s = make(&o, 2, counts, 2, NULL), .c = c};
  run(&m, 42);
  int a = rounds_of(&m, 0, 2), b = rounds_of(&m, 1, 2);
  ck_assert_int_eq(a + b, 40);
  /* the cut is count x |gradient|: task 1 gets a round only once task 0's
   * forward term (best / trials) has fallen to a sixth of its own */
  ck_assert_msg(a >= 4 * b, "heavy %d rounds, light %d", a, b);
  ck_assert_int_gt(b, 0); /* and still some */
  sched_free(m.s);
}
END_TEST

START_TEST(a_converged_workload_gets_fewer_then_none) {
  sched_opts o;
  quiet(&o);
  curve c[2] = {{.start = 30, .floor = 10, .tau = 400, .rate = 8},
                {.start = 10, .floor = 10, .tau = 1, .rate = 8}}; /* flat from the first trial */
  sim m = {.s = make(&o, 2, NULL, 2, NULL), .c = c};
  run(&m, 62);
  int improving = rounds_of(&m, 0, 2), flat = rounds_of(&m, 1, 2);
  /* Ansor's forward term is best / trials, backward only adds to the
   * improving one: at equal counts trials go as the bests, so the flat one
   * (10 us) has at most 10 / (the other's best) of its rounds, one more
   * for rounding; it keeps some until early stopping (below) */
  double b0 = sched_task(m.s, 0)->best_us;
  ck_assert_msg(flat < improving && flat <= improving * 10 / b0 + 1,
                "flat %d rounds, improving %d (best %g)", flat, improving, b0);
  ck_assert_int_eq(sched_task(m.s, 1)->state, SCHED_LIVE);
  sched_free(m.s);

  /* with early stopping at 48 trials: after its warm-up (15 trials since
   * its first, the best) and 2 more flat rounds (47), the third ends it */
  o.early_stopping = 48;
  sim e = {.s = make(&o, 2, NULL, 2, NULL), .c = c};
  run(&e, 200);
  ck_assert_int_eq(sched_task(e.s, 1)->state, SCHED_DONE_EARLY);
  ck_assert_int_eq(sched_task(e.s, 1)->rounds, 4);
  int last = -1;
  for (int i = 0; i < e.n_picks; i++)
    if (e.picks[i].task == 1) last = i;
  /* task 0 went on alone until its own curve flattened */
  ck_assert_int_gt(rounds_of(&e, 0, last + 1), 0);
  ck_assert_int_eq(rounds_of(&e, 1, last + 1), 0);
  ck_assert_int_eq(e.end, SCHED_ALL_DONE);
  ck_assert_int_eq(sched_task(e.s, 0)->state, SCHED_DONE_EARLY);
  sched_free(e.s);
}
END_TEST

START_TEST(early_stopping_counts_trials_since_the_workload_best) {
  sched_opts o;
  quiet(&o);
  o.early_stopping = 20;
  curve c[1] = {{.start = 10, .floor = 10, .tau = 1, .rate = 8}};
  sim m = {.s = make(&o, 1, NULL, 1, NULL), .c = c};
  run(&m, 10);
  /* 15 trials since the best after one round, 31 after two */
  ck_assert_int_eq(sched_task(m.s, 0)->rounds, 2);
  ck_assert_int_eq(sched_task(m.s, 0)->state, SCHED_DONE_EARLY);
  ck_assert_int_eq(m.end, SCHED_ALL_DONE);
  sched_free(m.s);

  /* a workload that improves on its last trial of each round never stops */
  o.early_stopping = 17;
  curve d[1] = {{.start = 100, .floor = 1, .tau = 2000, .rate = 8}};
  sim n = {.s = make(&o, 1, NULL, 1, NULL), .c = d};
  run(&n, 10);
  ck_assert_int_eq(n.n_picks, 10);
  ck_assert_int_eq(sched_task(n.s, 0)->state, SCHED_LIVE);
  sched_free(n.s);
}
END_TEST

START_TEST(a_recent_improvement_weighs_in) {
  /* two tasks at 10 us after 64 trials each: task 0 has been there for its
   * last 3 rounds, task 1 came down from 16 in them (Ansor's backward
   * window). Without it they tie, and the tie goes to task 0 */
  sched_opts o;
  quiet(&o);
  sched *s = make(&o, 2, NULL, 2, NULL);
  double flat[4] = {10, 10, 10, 10}, falling[4] = {16, 13, 11.5, 10};
  for (int k = 0; k < 4; k++) {
    sched_record(s, 0, &(sched_round){.n_trials = 16, .seconds = 2, .best_us = flat[k]});
    sched_record(s, 1, &(sched_round){.n_trials = 16, .seconds = 2, .best_us = falling[k]});
  }
  sched_pick pk;
  ck_assert_int_eq(sched_next(s, 0, &pk), SCHED_GO);
  ck_assert(!pk.warmup && !pk.explore);
  ck_assert_int_eq(pk.task, 1);
  /* and its score is the formula's: count x -(0.2 x (10 - 16) / 48 + 0.8 x
   * -10 / 64) per trial, times its 8 trials/s */
  ck_assert_msg(fabs(pk.score - (0.2 * 6 / 48 + 0.8 * 10 / 64) * 8) < 1e-12, "score %.17g",
                pk.score);
  sched_free(s);
}
END_TEST

START_TEST(ties_go_to_the_lower_index) {
  sched_opts o;
  quiet(&o);
  curve c[2] = {{.start = 20, .floor = 10, .tau = 100, .rate = 10},
                {.start = 20, .floor = 10, .tau = 100, .rate = 10}};
  sim m = {.s = make(&o, 2, NULL, 2, NULL), .c = c};
  run(&m, 12);
  /* equal after the warm-up: 0 first; then 1 has fewer trials; equal again */
  for (int i = 2; i < 12; i++) ck_assert_int_eq(m.picks[i].task, i % 2);
  sched_free(m.s);
}
END_TEST

START_TEST(a_workload_without_an_ok_trial_goes_first_until_given_up) {
  sched_opts o;
  quiet(&o);
  curve c[3] = {{.start = 20, .floor = 10, .tau = 100, .rate = 10},
                {.fail = 1, .rate = 10},
                {.start = 20, .floor = 10, .tau = 100, .rate = 10}};
  sim m = {.s = make(&o, 3, NULL, 3, NULL), .c = c};
  run(&m, 20);
  int want[5] = {0, 1, 2, 1, 1}; /* warm-up, then the unknown one twice more */
  for (int i = 0; i < 5; i++) ck_assert_int_eq(m.picks[i].task, want[i]);
  ck_assert(m.picks[3].warmup && m.picks[4].warmup);
  ck_assert_int_eq(sched_task(m.s, 1)->state, SCHED_DONE_FAILING);
  ck_assert_int_eq(rounds_of(&m, 1, 5), 0);
  int unknown = 0;
  ck_assert(sched_total_us(m.s, &unknown) ==
            sched_workload_best(m.s, 0) + sched_workload_best(m.s, 2));
  ck_assert_int_eq(unknown, 1);
  sched_free(m.s);
}
END_TEST

START_TEST(trial_caps_and_exhaustion_end_a_task) {
  sched_opts o;
  quiet(&o);
  o.max_trials = 40;
  curve c[2] = {{.start = 20, .floor = 10, .tau = 100, .rate = 10},
                {.start = 20, .floor = 10, .tau = 100, .rate = 10, .space = 20}};
  sim m = {.s = make(&o, 2, NULL, 2, NULL), .c = c};
  run(&m, 50);
  ck_assert_int_eq(m.end, SCHED_ALL_DONE);
  ck_assert_int_eq(sched_task(m.s, 0)->state, SCHED_DONE_TRIALS);
  ck_assert_int_eq(sched_task(m.s, 0)->run_trials, 40);
  ck_assert_int_eq(sched_task(m.s, 0)->rounds, 3); /* 16, 16, then 8 */
  ck_assert_int_eq(sched_task(m.s, 1)->state, SCHED_DONE_EXHAUSTED);
  ck_assert_int_eq(sched_task(m.s, 1)->run_trials, 20);
  int last8 = 0;
  for (int i = 0; i < m.n_picks; i++)
    if (m.picks[i].task == 0 && m.picks[i].n_trials == 8) last8++;
  ck_assert_int_eq(last8, 1);
  sched_free(m.s);
}
END_TEST

START_TEST(a_losing_template_gets_rounds_only_while_it_may_win) {
  sched_opts o;
  quiet(&o);
  int wl[3] = {0, 0, 1}; /* workload 0 has two templates */
  curve c[3] = {{.start = 20, .floor = 10, .tau = 100, .rate = 10},
                {.start = 60, .floor = 45, .tau = 100, .rate = 10},
                {.start = 20, .floor = 10, .tau = 100, .rate = 10}};
  sim m = {.s = make(&o, 2, NULL, 3, wl), .c = c};
  run(&m, 43);
  ck_assert(sched_workload_best(m.s, 0) == sched_task(m.s, 0)->best_us);
  /* after one round (57.9 us, 16 trials) Ansor's optimism projects it to
   * 57.9 - 0.8 x 57.9 / 16 x 16 = 11.6, below the workload's 18.6: a
   * second round; after two (56.0, 32 trials) 33.6, above it: no more */
  ck_assert_int_le(sched_task(m.s, 1)->rounds, 2);
  ck_assert_int_ge(sched_task(m.s, 0)->rounds, 15);
  int unknown = 0;
  ck_assert(sched_total_us(m.s, &unknown) ==
            sched_task(m.s, 0)->best_us + sched_task(m.s, 2)->best_us);
  sched_free(m.s);
}
END_TEST

START_TEST(the_similarity_bound_lifts_a_slow_task) {
  /* two workloads of equal ops, stored: A at 10 us (count 5), B at 40 us.
   * Without a group A's cut is larger (5 x 10 against 40, both / trials);
   * in one group B is 4x below A's rate, beyond beta 2: its target is 20 */
  sched_opts o;
  quiet(&o);
  int counts[2] = {5, 1};
  curve c[2] = {{.start = 10, .floor = 9, .tau = 100, .rate = 10},
                {.start = 40, .floor = 30, .tau = 100, .rate = 10}};
  for (int grouped = 0; grouped < 2; grouped++) {
    sched_task_desc d[2] = {{.workload = 0, .group = grouped ? 0 : -1, .ops = 1e9},
                            {.workload = 1, .group = grouped ? 0 : -1, .ops = 1e9}};
    sched *s = NULL;
    ct_err err = {0};
    ck_assert_int_eq(sched_new(&o, 2, counts, 2, d, &s, &err), CT_OK);
    sched_resume(s, 0, 100, 10);
    sched_resume(s, 1, 100, 40);
    sim m = {.s = s, .c = c};
    run(&m, 1);
    ck_assert(!m.picks[0].warmup);
    ck_assert_int_eq(m.picks[0].task, grouped ? 1 : 0);
    sched_free(s);
  }
}
END_TEST

/* ---- budget and rounds ----------------------------------------------------- */

START_TEST(the_budget_sizes_the_rounds_and_ends_the_run) {
  sched_opts o;
  sched_opts_default(&o);
  o.eps = 0;
  o.budget_s = 121;
  o.round_multiple = 16;
  curve c[23];
  for (int i = 0; i < 23; i++)
    c[i] = (curve){.start = 8 + i % 5, .floor = 4 + i % 3, .tau = 60 + 10 * i, .rate = 8};
  sim m = {.s = make(&o, 23, NULL, 23, NULL), .c = c};
  run(&m, MAX_PICKS);
  ck_assert_int_eq(m.end, SCHED_BUDGET_SPENT);
  /* no rate before the first round: the smallest; at 8 trials/s, 121 s
   * over 23 tasks is 14.0 trials a third: still 16 (968 trials: 60
   * rounds of 16 and one of 8) */
  ck_assert_int_eq(m.picks[0].n_trials, 16);
  for (int i = 0; i + 1 < m.n_picks; i++) ck_assert_int_eq(m.sizes_after[i], 16);
  /* every round got what was left as its cap; the last fits it exactly */
  double t = 0;
  for (int i = 0; i < m.n_picks; i++) {
    ck_assert(fabs(m.picks[i].time_cap_s - (121 - t)) < 1e-9);
    t += m.picks[i].n_trials / 8.0;
  }
  ck_assert_msg(m.elapsed <= 121 + 1e-9 && m.elapsed > 121 - 1 / 8.0, "ended at %g s", m.elapsed);
  ck_assert_int_lt(m.picks[m.n_picks - 1].n_trials, 16);
  for (int i = 0; i < 23; i++) ck_assert_int_ge(sched_task(m.s, i)->rounds, 1);
  sched_free(m.s);

  /* with 0.3 s left (2 trials) after 60 rounds, no round of less than a
   * quarter of 16 starts: the run ends at 120 s */
  o.budget_s = 120.3;
  sim q = {.s = make(&o, 23, NULL, 23, NULL), .c = c};
  run(&q, MAX_PICKS);
  ck_assert_int_eq(q.end, SCHED_BUDGET_SPENT);
  ck_assert_int_eq(q.n_picks, 60);
  ck_assert(q.elapsed == 120);
  sched_free(q.s);
  o.budget_s = 121;

  /* at 50 trials/s: 87.7 a third, capped at 64; at 20: 35.1, down to 32 */
  double rates[2] = {50, 20};
  int sizes[2] = {64, 32};
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < 23; i++) c[i].rate = rates[k];
    sim r = {.s = make(&o, 23, NULL, 23, NULL), .c = c};
    run(&r, 1);
    ck_assert_int_eq(r.sizes_after[0], sizes[k]);
    sched_free(r.s);
  }

  /* a fixed cost per round is in the measured rate: the run overshoots by
   * at most one round's fixed cost */
  for (int i = 0; i < 23; i++) c[i].rate = 8;
  sim v = {.s = make(&o, 23, NULL, 23, NULL), .c = c, .overhead_s = 0.25};
  run(&v, MAX_PICKS);
  ck_assert_int_eq(v.end, SCHED_BUDGET_SPENT);
  ck_assert_msg(v.elapsed <= 121 + 0.25 + 1e-9, "ended at %g s", v.elapsed);
  sched_free(v.s);
}
END_TEST

START_TEST(round_sizes_without_a_budget_and_fixed) {
  sched_opts o;
  sched_opts_default(&o);
  sched *s = make(&o, 1, NULL, 1, NULL);
  ck_assert_int_eq(sched_round_size(s), 64); /* no budget: the xgb batch */
  sched_free(s);
  o.round_multiple = 24; /* bounds rounded to it: [24, 48] */
  s = make(&o, 1, NULL, 1, NULL);
  ck_assert_int_eq(sched_round_size(s), 48);
  sched_free(s);
  o.budget_s = 10;
  s = make(&o, 1, NULL, 1, NULL);
  ck_assert_int_eq(sched_round_size(s), 24);
  sched_free(s);
  o.round_trials = 7; /* given: as it is */
  s = make(&o, 1, NULL, 1, NULL);
  ck_assert_int_eq(sched_round_size(s), 7);
  sched_pick pk;
  ck_assert_int_eq(sched_next(s, 0, &pk), SCHED_GO);
  ck_assert_int_eq(pk.n_trials, 7);
  ck_assert_int_eq(sched_next(s, 10, &pk), SCHED_BUDGET_SPENT);
  ck_assert_int_eq(pk.task, -1);
  sched_free(s);
}
END_TEST

/* ---- exploration --------------------------------------------------------------- */

static void eps_run(uint64_t seed, sim *m, const curve *c) {
  sched_opts o;
  quiet(&o);
  o.eps = 0.3;
  o.seed = seed;
  int counts[6] = {4, 1, 2, 1, 3, 1};
  memset(m, 0, sizeof *m);
  m->s = make(&o, 6, counts, 6, NULL);
  m->c = c;
  run(m, 106);
}

START_TEST(eps_draws_depend_on_the_seed_only) {
  curve c[6];
  for (int i = 0; i < 6; i++)
    c[i] = (curve){.start = 20 + i, .floor = 8, .tau = 120 + 30 * i, .rate = 10};
  static sim a, b, d;
  eps_run(7, &a, c);
  eps_run(7, &b, c);
  eps_run(8, &d, c);
  ck_assert_int_eq(a.n_picks, 106);
  int same = 1, explores = 0;
  for (int i = 0; i < a.n_picks; i++) {
    ck_assert_int_eq(a.picks[i].task, b.picks[i].task);
    ck_assert_int_eq(a.picks[i].explore, b.picks[i].explore);
    same &= a.picks[i].task == d.picks[i].task && a.picks[i].explore == d.picks[i].explore;
    explores += a.picks[i].explore;
    if (i < 6) ck_assert(!a.picks[i].explore);
  }
  ck_assert_msg(!same, "seeds 7 and 8 made the same picks");
  /* 100 draws at 0.3 */
  ck_assert_msg(explores >= 15 && explores <= 45, "%d eps rounds of 100", explores);
  sched_free(a.s);
  sched_free(b.s);
  sched_free(d.s);
}
END_TEST

/* ---- inputs ---------------------------------------------------------------- */

START_TEST(bad_options_and_tasks_are_rejected) {
  sched_opts o;
  sched_opts_default(&o);
  sched *s = NULL;
  ct_err err = {0};
  int counts[2] = {1, 0};
  sched_task_desc d[2] = {{.workload = 0, .group = -1}, {.workload = 1, .group = -1}};
  ck_assert_int_eq(sched_new(&o, 2, counts, 2, d, &s, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_null(s);
  ck_assert_msg(strstr(err.msg, "workload 1 occurs 0 times"), "%s", err.msg);
  counts[1] = 2;
  d[1].workload = 5;
  ck_assert_int_eq(sched_new(&o, 2, counts, 2, d, &s, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "task 1 of workload 5; 2 workloads"), "%s", err.msg);
  d[1].workload = 1;
  o.alpha = 1.5;
  ck_assert_int_eq(sched_new(&o, 2, counts, 2, d, &s, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "alpha 1.5"), "%s", err.msg);
  sched_opts_default(&o);
  o.window = 0;
  ck_assert_int_eq(sched_new(&o, 2, counts, 2, d, &s, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "window"), "%s", err.msg);
  sched_opts_default(&o);
  o.budget_s = -1;
  ck_assert_int_eq(sched_new(&o, 2, counts, 2, d, &s, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "budget"), "%s", err.msg);
  ck_assert_ptr_null(s);
  /* no tasks: done at once; a workload without tasks is not in the total */
  sched_opts_default(&o);
  ck_assert_int_eq(sched_new(&o, 2, counts, 0, d, &s, &err), CT_OK);
  sched_pick pk;
  ck_assert_int_eq(sched_next(s, 0, &pk), SCHED_ALL_DONE);
  int unknown = -1;
  ck_assert(sched_total_us(s, &unknown) == 0);
  ck_assert_int_eq(unknown, 0);
  /* out-of-range calls change nothing */
  sched_resume(s, 3, 10, 1);
  sched_record(s, -1, &(sched_round){.n_trials = 4});
  ck_assert_ptr_null(sched_task(s, 0));
  sched_free(s);
  sched_free(NULL);
  ck_assert_str_eq(sched_state_name(SCHED_DONE_EARLY), "early-stopped");
}
END_TEST

static void add_policy(TCase *tc) {
  tcase_add_test(tc, warm_up_goes_in_order);
  tcase_add_test(tc, a_stored_best_needs_no_warm_up);
  tcase_add_test(tc, a_heavy_improving_workload_gets_more_rounds);
  tcase_add_test(tc, a_converged_workload_gets_fewer_then_none);
  tcase_add_test(tc, early_stopping_counts_trials_since_the_workload_best);
  tcase_add_test(tc, a_recent_improvement_weighs_in);
  tcase_add_test(tc, ties_go_to_the_lower_index);
  tcase_add_test(tc, a_workload_without_an_ok_trial_goes_first_until_given_up);
  tcase_add_test(tc, trial_caps_and_exhaustion_end_a_task);
  tcase_add_test(tc, a_losing_template_gets_rounds_only_while_it_may_win);
  tcase_add_test(tc, the_similarity_bound_lifts_a_slow_task);
  tcase_add_test(tc, the_budget_sizes_the_rounds_and_ends_the_run);
  tcase_add_test(tc, round_sizes_without_a_budget_and_fixed);
  tcase_add_test(tc, eps_draws_depend_on_the_seed_only);
  tcase_add_test(tc, bad_options_and_tasks_are_rejected);
}

static const test_case suite_cases[] = {
    {"policy", -1, add_policy},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"sched", suite_cases, 0, NULL};
  return test_main(&suite);
}
