/*
 * test_sched_gpu.c (label gpu): the task scheduler on the GPU
 * (tuner/sched.h, sched_run): two small packed workloads, one listed twice
 * (merged, counts summed) and an nhwc one that the named template cannot
 * run (kept as unsupported, out of the total), share an 8 s budget.
 * Checked: both get rounds and an OK best; the database holds every trial
 * the result counts; each best is the database's (what tuner_tune reports)
 * and the total is exactly the sum of counts x bests; the run ends within a
 * batch of its budget; the curve starts unknown and ends at the total.
 * Then the run resumes: it starts from the stored total, warms nothing up,
 * and counts the first run's trials as stored.
 * Exits 77 without a GPU.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/sched.h"
#include "tests/tuner_probe.h"
#include "tests/util.h"

static char db_path[256];

static void packed(ct_workload *w, int c, int k, int hw, int kernel) {
  workload_init(w, CT_OP_CONV2D);
  w->layout = CT_LAYOUT_NCHW4C;
  w->n = 2, w->c = c, w->k = k;
  w->in[0] = w->in[1] = hw;
  w->kernel[0] = w->kernel[1] = kernel;
  w->pad_before[0] = w->pad_before[1] = w->pad_after[0] = w->pad_after[1] = kernel / 2;
}

typedef struct seen {
  int rounds, warmups;
} seen;

static void on_round(void *user, const sched_progress *p) {
  seen *s = user;
  if (p->batch) return;
  s->rounds++;
  s->warmups += p->warmup;
}

static void open_tuner(tuner **t) {
  tune_opts o;
  tune_opts_default(&o);
  o.search.seed = 3;
  ct_err err = {0};
  ck_assert_msg(tuner_open(db_path, &o, t, &err) == CT_OK, "%s", err.msg);
}

START_TEST(two_workloads_share_a_budget_and_resume) {
  const template_desc *tpl = template_find("conv2d_nchw4c_dp4a");
  ck_assert_ptr_nonnull(tpl);
  sched_item items[4];
  packed(&items[0].w, 16, 16, 14, 3);
  packed(&items[1].w, 32, 16, 14, 1);
  items[2].w = items[0].w;
  packed(&items[3].w, 16, 16, 14, 3);
  items[3].w.layout = CT_LAYOUT_NHWC; /* the dp4a template runs nchw4c only */
  items[0].name = "a", items[0].count = 3;
  items[1].name = "b", items[1].count = 1;
  items[2].name = "a again", items[2].count = 2;
  items[3].name = "nhwc", items[3].count = 2;

  sched_opts o;
  sched_opts_default(&o);
  o.budget_s = 8;
  o.round_multiple = 8;
  tuner *t = NULL;
  open_tuner(&t);
  sched_result *r = NULL;
  ct_err err = {0};
  seen s1 = {0};
  ck_assert_msg(sched_run(t, "pair", items, 4, tpl, &o, on_round, &s1, &r, &err) == CT_OK, "%s",
                err.msg);
  printf("first run: %d rounds, %d trials in %.1f s, total %.3f us (%s)\n", r->n_rounds,
         r->n_trials, r->wall_s, r->total_us, r->end == SCHED_BUDGET_SPENT ? "budget" : "done");
  ck_assert_int_eq(r->n_workloads, 3);
  ck_assert_int_eq(r->workloads[0].count, 5);
  ck_assert_int_eq(r->workloads[1].count, 1);
  ck_assert(!r->workloads[2].supported && r->workloads[2].why[0]);
  ck_assert_int_eq(r->n_unsupported, 1);
  ck_assert_int_eq(r->n_unknown, 0);
  ck_assert_int_eq(s1.rounds, r->n_rounds);
  ck_assert_int_eq(s1.warmups, 2);
  ck_assert(r->end == SCHED_BUDGET_SPENT || r->end == SCHED_ALL_DONE);
  /* the budget is met within the batch in flight (a round here is at most
   * 16 small dp4a compiles) */
  ck_assert_msg(r->wall_s < o.budget_s + 6, "took %.1f s", r->wall_s);

  /* the database holds every trial, and its bests are the result's */
  db_device dev;
  tune_db_device(tuner_device(t), &dev);
  db *d = NULL;
  ck_assert_int_eq(db_open(db_path, 1, &d, &err), CT_OK);
  double want = 0;
  for (int w = 0; w < 2; w++) {
    const sched_wl *x = &r->workloads[w];
    ck_assert_int_ge(x->rounds, 1);
    ck_assert(x->best_us > 0);
    ck_assert_str_eq(x->template_name, tpl->name);
    trial *tr = NULL;
    int n = 0;
    ck_assert_int_eq(db_trials(d, x->key, &dev, tpl->name, NULL, &tr, &n, &err), CT_OK);
    ck_assert_int_eq(n, x->n_stored + x->n_trials);
    trials_free(tr, n);
    tune_result st;
    ck_assert_int_eq(tuner_stored(t, &items[w].w, tpl, &st, &err), CT_OK);
    ck_assert(st.best_us == x->best_us);
    want += x->count * x->best_us;
  }
  db_close(d);
  ck_assert(r->total_us == want);
  ck_assert_int_eq(r->workloads[0].n_trials + r->workloads[1].n_trials, r->n_trials);
  /* the curve: unknown at the start, the total at the end */
  ck_assert_int_eq(r->curve[0].n_unknown, 2);
  ck_assert_int_eq(r->n_points, r->n_rounds + 1);
  ck_assert(r->curve[r->n_points - 1].total_us == r->total_us);
  for (int i = 3; i < r->n_points; i++) /* both known from the third point */
    ck_assert(r->curve[i].total_us <= r->curve[i - 1].total_us);
  double first_total = r->total_us;
  int first_trials = r->n_trials;
  sched_result_free(r);
  tuner_close(t);

  /* resume: the stored bests are the start, nothing needs a warm-up */
  open_tuner(&t);
  o.budget_s = 4;
  seen s2 = {0};
  ck_assert_msg(sched_run(t, "pair", items, 3, tpl, &o, on_round, &s2, &r, &err) == CT_OK, "%s",
                err.msg);
  ck_assert_msg(r->start_total_us == first_total, "started from %.17g, ended at %.17g",
                r->start_total_us, first_total);
  ck_assert_int_eq(r->start_unknown, 0);
  ck_assert_int_eq(s2.warmups, 0);
  ck_assert_int_eq(r->workloads[0].n_stored + r->workloads[1].n_stored, first_trials);
  ck_assert(r->total_us <= r->start_total_us);
  sched_result_free(r);
  tuner_close(t);
}
END_TEST

static void add_sched_gpu(TCase *tc) {
  tcase_add_test(tc, two_workloads_share_a_budget_and_resume);
}

static const test_case suite_cases[] = {
    {"sched_gpu", 300, add_sched_gpu},
    {NULL, 0, NULL},
};

/* test_main's probe (tests/tuner_probe.h), the databases in the run's
 * scratch folder. */
static int have_gpu(char *why, size_t size) {
  snprintf(db_path, sizeof db_path, "%s/s.db", test_root());
  return tuner_probe(why, size);
}

int main(void) {
  static const test_suite suite = {"sched_gpu", suite_cases, 1, have_gpu};
  return test_main(&suite);
}
