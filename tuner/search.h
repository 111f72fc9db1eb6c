/*
 * search.h: search strategies over a template's space for one workload.
 *
 * A strategy proposes configs that are valid (the template's own check) and
 * were never proposed or measured before in this search, and learns from the
 * costs it is told. Strategies: "random" (uniform over valid configs),
 * "grid" (valid configs in index order), "ga" (genetic: elitism, crossover
 * per knob, mutation), "xgb" (an XGBoost cost model trained on the trials so
 * far, proposing batches by simulated annealing over the space, with a share
 * of random picks; AutoTVM's defaults: batch 64, 5% random, 500 annealing
 * steps from 128 walkers). Costs are times in microseconds; a failed config
 * has cost INFINITY. Everything is deterministic for a given seed.
 */
#ifndef CT_TUNER_SEARCH_H
#define CT_TUNER_SEARCH_H

#include <stdint.h>

#include "templates/template.h"

typedef struct search search;

typedef struct search_opts {
  const char *kind; /* "random", "grid", "ga", "xgb" */
  uint64_t seed;
  int batch;          /* xgb: configs per proposal round (64) */
  double eps_random;  /* xgb: share of random picks in a round (0.05) */
  int sa_walkers;     /* xgb: annealing walkers (128) */
  int sa_steps;       /* xgb: annealing steps (500) */
  int ga_population;  /* ga: population (100) */
  int ga_elite;       /* ga: elites kept (3) */
  double ga_mutation; /* ga: per-knob mutation probability (0.1) */
} search_opts;

/* Defaults as documented above for kind. */
void search_opts_default(search_opts *o, const char *kind);

/* A strategy for (tpl, w) on architecture a; the space s must outlive it.
 * CT_ERR_INVALID_ARG for an unknown kind (the message lists them). Owned:
 * search_free. */
ct_status search_new(const search_opts *o, const template_desc *tpl, const ct_workload *w,
                     const space *s, const arch *a, search **out, ct_err *err);
void search_free(search *se);

/* Up to n new configs into out; returns how many (0 when the strategy has
 * nothing left: grid exhausted, or every valid config seen). */
int search_next(search *se, config *out, int n);

/* Queue cfg to be handed out by search_next before anything the strategy
 * proposes, after the configs queued before it (the tuner's first trials:
 * the best config of the nearest tuned workload and the template's
 * default, which the dispatch runs for a workload without records, so
 * that tuning never ends below what it ran untuned). Returns 1 when cfg is
 * queued; 0, and nothing changes, when it is outside the space, invalid,
 * already queued, proposed or measured, or SEARCH_FIRST_MAX configs wait.
 * One measured meanwhile (search_update) is dropped at hand-out. */
#define SEARCH_FIRST_MAX 4
int search_first(search *se, const config *cfg);

/* The measured costs of configs (proposed or not: resume feeds old trials
 * here before the first search_next, and they are never proposed again). */
void search_update(search *se, const config *cfgs, const double *cost_us, int n);

/* Transfer learning (xgb only; others ignore it): trials of other workloads
 * of the same template, as feature rows (n_features each, from
 * search_features) and costs; each workload's costs are normalised by its
 * own best before training. group[i] identifies the workload of row i. */
void search_transfer(search *se, const float *features, const double *cost_us, const int *group,
                     int n, int n_features);

/* Whether a search of (tpl, w) on a has any config to hand out: a space of
 * up to 2^16 points has a valid one, or a larger one gives one within the
 * search's own limit of draws (seeded: the same answer every run). When
 * not, why (TEMPLATE_WHY_MAX bytes, or NULL) gets "no valid config on
 * ARCH: " and the template's reason for the space's first point (for the
 * wgmma templates before sm_90: that they need sm_90a). The tuner's plan
 * asks it so that a template that cannot run on the device is not a task
 * (tune_plan). */
int search_has_valid(const template_desc *tpl, const ct_workload *w, const space *s, const arch *a,
                     char *why);

/* The settings as compact JSON (static per search, borrowed). */
const char *search_settings(const search *se);

/* Why the cost model fell back to random proposals: NULL while it never
 * failed, else the first failure of the run, kept for the rest of it
 * ("xgboost: " and XGBoost's reason, one line; borrowed, valid until
 * search_free). It keeps proposing: a failed training keeps the last
 * model (random new configs while there is none), a failed prediction
 * drops the model (random new configs until a later training succeeds). */
const char *search_model_fallback(const search *se);

/* The cost model's features of cfg into out (at most max); returns the
 * count, the same for every config of a space. Knob values (log2 of split
 * factors, the permutation one-hot, choice values) and derived sizes of the
 * plan (threads, shared memory, accumulators per thread, ...) through the
 * template's own describe hook when it has one. */
int search_features(const template_desc *tpl, const ct_workload *w, const space *s,
                    const config *cfg, float *out, int max);

#define SEARCH_MAX_FEATURES 96

#endif
