/*
 * search.c: the strategies of search.h (random, grid, ga, xgb) and the cost
 * model's features.
 *
 * Invariants: a config is handed out only when the template finds it valid
 * and its index is not in `visited` (handed out or measured before); a
 * pending list (a GA generation, an xgb round) holds distinct new configs
 * and is checked again at hand-out, so a config measured meanwhile is
 * skipped. Index sets are open-addressing hash tables that grow.
 * Costs: a random draw takes 1 / (valid share) validity checks (a small
 * space lists its valid configs once instead); a GA generation
 * O(population x knobs) checks; an xgb round retrains from scratch once per
 * batch of new results and anneals sa_walkers x sa_steps neighbours with one
 * XGBoost prediction per step: 0.1-0.3 s per round of 64 on one core.
 */
#include "tuner/search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

/* Consecutive random draws without a new valid config before drawing gives
 * up: at a valid share of 1e-4 a config that exists is missed with
 * probability e^-6.5. */
#define DRAW_MAX_MISSES 65536L
/* Spaces up to this size have their valid configs listed (one validity check
 * per point, 2 MiB at most) on the first draw: drawing is then exact (0 only
 * when every valid config was seen) and costs no rejections near the end. */
#define SMALL_SPACE (1ULL << 18)
/* Draws at a valid neighbour for one annealing move. */
#define NEIGHBOR_TRIES 16L
/* Tries at a valid, new child of two GA parents (every GA_REBREED-th try
 * starts over from the parents, the others mutate one more knob) before a
 * random valid config takes its place. */
#define GA_TRIES   32
#define GA_REBREED 8
/* Reorder knobs up to this many candidates are one-hot features; beyond, the
 * permutation itself (24 = 4!, the 3D reduction order). */
#define ONEHOT_MAX 24
/* xgb: boosting rounds per training (AutoTVM trains up to 8000 rounds with
 * early stopping on its own metric; on the synthetic function of
 * tests/test_search.c 32, 64 and 128 rounds found equally good configs, 64
 * a little sooner), annealing steps without a better top before stopping
 * (AutoTVM's early_stop), and XGBoost's threads: one, because the matrices
 * are small (128 rows to predict, thousands to train) and spinning OpenMP
 * threads made the sanitizer test 8x slower on a loaded 2-core machine; the
 * proposals are the same with 1 or 2. */
#define XGB_ROUNDS    64
#define SA_EARLY_STOP 50
#define XGB_THREADS   1
/* Pairwise ranking (AutoTVM's "rank" loss): annealing only needs the order
 * of configs, failures (label 0) rank last without a made-up cost, and with
 * each workload as its own query group transfer rows are only compared with
 * rows of the same workload, so costs of different workloads need not be
 * comparable. */
#define XGB_OBJECTIVE "rank:pairwise"

typedef enum kind_id { KIND_RANDOM, KIND_GRID, KIND_GA, KIND_XGB, N_KINDS } kind_id;
static const char *const kind_names[N_KINDS] = {"random", "grid", "ga", "xgb"};

/* An empty slot: indices are below the space's size, so never UINT64_MAX. */
#define SLOT_EMPTY UINT64_MAX

typedef struct idset {
  uint64_t *slot;
  size_t cap, n; /* cap is a power of two, n <= cap / 2 */
} idset;

struct search {
  search_opts o;
  kind_id kind;
  const template_desc *tpl;
  ct_workload w;
  const space *s;
  arch a;
  rng r;
  char settings[320];
  ct_err err;                   /* the last failure inside (out of memory, XGBoost) */
  char fallback[CT_ERRMSG_MAX]; /* the cost model's first failure ("" while none) */
  idset visited;
  idset pend_set;                 /* indices in the pending list */
  config first[SEARCH_FIRST_MAX]; /* search_first's configs, handed out first, in order */
  int n_first;
  /* a small space's valid indices not yet found visited (order scrambled) */
  uint64_t *small, n_small;
  int small_ready;
  /* every measured config and its cost (ga, xgb), with features (xgb) */
  config *hist;
  double *hist_cost;
  float *hist_feat;
  int n_hist, cap_hist;
  /* the pending list: a GA generation or an xgb round; pend_cost is what
   * search_update reported (NAN until then) */
  config *pend;
  uint64_t *pend_idx;
  double *pend_cost;
  int n_pend, pend_next, cap_pend;
  /* grid: the next index to look at, as digits */
  config grid_cur;
  int grid_done;
  /* xgb */
  int n_feat;
  BoosterHandle bst;
  int trained_once, hist_at_train; /* n_hist at the last training attempt */
  float *tr_feat, *tr_y;           /* transfer rows and labels */
  unsigned *tr_group;              /* sizes of the transfer groups, rows in order */
  int n_tr, cap_tr, n_tr_groups, cap_tr_groups;
  int walk_ready;
  config *walk, *cand;
  float *walk_score, *cand_score, *cand_feat;
  config *heap; /* min-heap of the round's best predicted new configs */
  uint64_t *heap_idx;
  float *heap_score;
  int n_heap;
};

/* ---- index sets -------------------------------------------------------------- */

/* The home slot of key in a table of cap slots. */
static size_t slot_of(uint64_t key, size_t cap) {
  key ^= key >> 33; /* murmur3's finaliser: indices are dense, slots must not be */
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  key *= 0xc4ceb9fe1a85ec53ULL;
  key ^= key >> 33;
  return (size_t)key & (cap - 1);
}

/* Whether key is in h (linear probing up to an empty slot). */
static int idset_has(const idset *h, uint64_t key) {
  if (h->cap == 0) return 0;
  for (size_t i = slot_of(key, h->cap);; i = (i + 1) & (h->cap - 1)) {
    if (h->slot[i] == key) return 1;
    if (h->slot[i] == SLOT_EMPTY) return 0;
  }
}

/* Insert into a table with room. */
static void put_slot(uint64_t *slot, size_t cap, uint64_t key) {
  size_t i = slot_of(key, cap);
  while (slot[i] != SLOT_EMPTY && slot[i] != key) i = (i + 1) & (cap - 1);
  slot[i] = key;
}

/* Add key: 0 on success (also when present), -1 when out of memory. */
static int idset_add(idset *h, uint64_t key) {
  if (idset_has(h, key)) return 0;
  if (2 * (h->n + 1) > h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 256;
    uint64_t *slot = malloc(cap * sizeof *slot);
    if (!slot) return -1;
    for (size_t i = 0; i < cap; i++) slot[i] = SLOT_EMPTY;
    for (size_t i = 0; i < h->cap; i++)
      if (h->slot[i] != SLOT_EMPTY) put_slot(slot, cap, h->slot[i]);
    free(h->slot);
    h->slot = slot;
    h->cap = cap;
  }
  put_slot(h->slot, h->cap, key);
  h->n++;
  return 0;
}

/* Empty h, keeping its table. */
static void idset_clear(idset *h) {
  for (size_t i = 0; i < h->cap; i++) h->slot[i] = SLOT_EMPTY;
  h->n = 0;
}

/* ---- shared helpers ---------------------------------------------------------- */

/* The template's own check on the search's architecture. */
static int is_valid(const search *se, const config *cfg) {
  return se->tpl->valid(&se->w, se->s, cfg, &se->a, NULL);
}

/* Neither handed out, measured, nor already waiting in the pending list. */
static int is_new(const search *se, uint64_t idx) {
  return !idset_has(&se->visited, idx) && !idset_has(&se->pend_set, idx);
}

/* Spaces up to this size are checked point by point by search_has_valid
 * (a wgmma space before sm_90, none valid: about 15 ms); larger ones by
 * DRAW_MAX_MISSES draws, as draw_new gives up. */
#define HAS_VALID_SCAN (1ULL << 16)

int search_has_valid(const template_desc *tpl, const ct_workload *w, const space *s, const arch *a,
                     char *why) {
  config c;
  if (s->size <= HAS_VALID_SCAN) {
    for (uint64_t idx = 0; idx < s->size; idx++) {
      space_config(s, idx, &c, NULL);
      if (tpl->valid(w, s, &c, a, NULL)) return 1;
    }
  } else {
    rng r;
    rng_seed(&r, 20261129);
    if (template_sample(tpl, w, s, a, &r, DRAW_MAX_MISSES, &c, NULL) == CT_OK) return 1;
  }
  if (why) {
    char first[TEMPLATE_WHY_MAX] = "";
    if (s->size) {
      space_config(s, 0, &c, NULL);
      tpl->valid(w, s, &c, a, first);
    }
    /* 19 + 16 + 2 + 120 bytes: within TEMPLATE_WHY_MAX, cut where longer */
    snprintf(why, TEMPLATE_WHY_MAX, "no valid config on %.16s%s%.120s", a->name,
             first[0] ? ": " : "", first);
  }
  return 0;
}

/* Record running out of memory on se->err; returns -1. */
static int oom(search *se, const char *what) {
  ERR_SET(&se->err, CT_ERR_NO_MEMORY, "search %s: out of memory (%s)", kind_names[se->kind], what);
  return -1;
}

/* Enumerate a small space's valid indices into se->small once: 0, or -1
 * when out of memory (drawing then works on the whole space). */
static int small_list(search *se) {
  if (se->small_ready) return se->small ? 0 : -1;
  se->small_ready = 1;
  se->small = malloc((size_t)(se->s->size ? se->s->size : 1) * sizeof *se->small);
  if (!se->small) return oom(se, "valid list");
  config c;
  for (uint64_t idx = 0; idx < se->s->size; idx++) {
    space_config(se->s, idx, &c, NULL);
    if (is_valid(se, &c)) se->small[se->n_small++] = idx;
  }
  return 0;
}

/* draw_new on a small space: uniform over its valid list, dropping entries
 * found visited (they never come back), then an exact scan when the draws
 * keep hitting pending ones. */
static int draw_small(search *se, config *out) {
  for (uint64_t t = 0; se->n_small > 0 && t < 4 * se->n_small + 64; t++) {
    uint64_t j = rng_below(&se->r, se->n_small), idx = se->small[j];
    if (idset_has(&se->visited, idx)) {
      se->small[j] = se->small[--se->n_small];
      continue;
    }
    if (idset_has(&se->pend_set, idx)) continue;
    space_config(se->s, idx, out, NULL);
    return 1;
  }
  uint64_t count = 0;
  for (uint64_t j = 0; j < se->n_small; j++) count += is_new(se, se->small[j]);
  if (count == 0) return 0;
  uint64_t pick = rng_below(&se->r, count);
  for (uint64_t j = 0;; j++)
    if (is_new(se, se->small[j]) && pick-- == 0) {
      space_config(se->s, se->small[j], out, NULL);
      return 1;
    }
}

/* A uniformly random valid new config into out: 1, or 0 when none was found
 * (rejection from the whole space; a small space keeps a list of its valid
 * configs instead, so that there 0 means every valid config was seen). */
static int draw_new(search *se, config *out) {
  if (se->s->size <= SMALL_SPACE && small_list(se) == 0) return draw_small(se, out);
  for (long i = 0; i < DRAW_MAX_MISSES; i++) {
    space_random(se->s, &se->r, out);
    if (is_valid(se, out) && is_new(se, space_index(se->s, out))) return 1;
  }
  return 0;
}

/* Start a new pending list. */
static void pend_reset(search *se) {
  se->n_pend = se->pend_next = 0;
  idset_clear(&se->pend_set);
}

/* Append a new config to the pending list: 0, or -1 when full or out of memory. */
static int pend_add(search *se, const config *cfg) {
  if (se->n_pend >= se->cap_pend) return -1;
  uint64_t idx = space_index(se->s, cfg);
  if (idset_add(&se->pend_set, idx)) return oom(se, "pending set");
  se->pend[se->n_pend] = *cfg;
  se->pend_idx[se->n_pend] = idx;
  se->pend_cost[se->n_pend] = NAN;
  se->n_pend++;
  return 0;
}

/* Hand out pending configs into out[got..n) in order, skipping any measured
 * since they were planned; returns the new got. */
static int hand_out(search *se, config *out, int n, int got) {
  while (got < n && se->pend_next < se->n_pend) {
    int i = se->pend_next++;
    if (idset_has(&se->visited, se->pend_idx[i])) continue;
    if (idset_add(&se->visited, se->pend_idx[i])) {
      oom(se, "visited set");
      se->pend_next = se->n_pend; /* a config not marked could come back */
      break;
    }
    out[got++] = se->pend[i];
  }
  return got;
}

/* ---- random and grid ----------------------------------------------------------- */

/* Up to n uniformly random valid new configs. */
static int random_next(search *se, config *out, int n) {
  int got = 0;
  while (got < n && draw_new(se, &out[got])) {
    if (idset_add(&se->visited, space_index(se->s, &out[got]))) {
      oom(se, "visited set");
      break;
    }
    got++;
  }
  return got;
}

/* Step the grid cursor to the next index (knob 0 the fastest digit). */
static void grid_advance(search *se) {
  for (int k = 0; k < se->s->n_knobs; k++) {
    if (++se->grid_cur.choice[k] < se->s->knobs[k].n_cands) return;
    se->grid_cur.choice[k] = 0;
  }
  se->grid_done = 1; /* every digit wrapped: past the last index */
}

/* Up to n valid new configs from the cursor on, in index order. */
static int grid_next(search *se, config *out, int n) {
  int got = 0;
  while (got < n && !se->grid_done) {
    config c = se->grid_cur;
    uint64_t idx = space_index(se->s, &c);
    if (!is_valid(se, &c) || idset_has(&se->visited, idx)) {
      grid_advance(se);
      continue;
    }
    if (idset_add(&se->visited, idx)) {
      oom(se, "visited set");
      break;
    }
    grid_advance(se);
    out[got++] = c;
  }
  return got;
}

/* ---- history -------------------------------------------------------------------- */

/* A measured config's cost and position, to rank by. */
typedef struct rank_entry {
  double cost;
  int i;
} rank_entry;

/* By cost, then by position. */
static int cmp_ranked(const void *pa, const void *pb) {
  const rank_entry *a = pa, *b = pb;
  if (a->cost != b->cost) return a->cost < b->cost ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Positions in the history of the configs with a finite cost, best first
 * (ties by order of arrival, so that the order is deterministic); owned,
 * NULL when out of memory. */
static int *ranked_history(search *se, int *n_out) {
  *n_out = 0;
  size_t cap = (size_t)(se->n_hist > 0 ? se->n_hist : 1);
  rank_entry *r = malloc(cap * sizeof *r);
  int *ix = malloc(cap * sizeof *ix);
  if (!r || !ix) {
    oom(se, "ranking");
    free(r);
    free(ix);
    return NULL;
  }
  int n = 0;
  for (int i = 0; i < se->n_hist; i++)
    if (isfinite(se->hist_cost[i])) r[n++] = (rank_entry){se->hist_cost[i], i};
  qsort(r, (size_t)n, sizeof *r, cmp_ranked);
  for (int i = 0; i < n; i++) ix[i] = r[i].i;
  free(r);
  *n_out = n;
  return ix;
}

/* Room for one more measured config: 0, or -1 when out of memory. */
static int hist_grow(search *se) {
  if (se->n_hist < se->cap_hist) return 0;
  int cap = se->cap_hist ? 2 * se->cap_hist : 256;
  config *h = realloc(se->hist, (size_t)cap * sizeof *h);
  if (!h) return oom(se, "history");
  se->hist = h;
  double *c = realloc(se->hist_cost, (size_t)cap * sizeof *c);
  if (!c) return oom(se, "history");
  se->hist_cost = c;
  if (se->kind == KIND_XGB && se->n_feat > 0) {
    float *f = realloc(se->hist_feat, (size_t)cap * (size_t)se->n_feat * sizeof *f);
    if (!f) return oom(se, "history");
    se->hist_feat = f;
  }
  se->cap_hist = cap;
  return 0;
}

/* ---- ga ----------------------------------------------------------------------------- */

/* A parent by roulette over fitness (their sum > 0), other than skip (-1:
 * any) unless skip is the only one with fitness above 0. */
static int roulette(search *se, const double *fit, int n, double sum, int skip) {
  if (skip >= 0) sum -= fit[skip];
  if (sum <= 0) return skip >= 0 ? skip : 0; /* the only fit parent mates with itself */
  double x = rng_double(&se->r) * sum;
  int last = -1;
  for (int i = 0; i < n; i++) {
    if (i == skip || fit[i] <= 0) continue;
    last = i;
    if ((x -= fit[i]) < 0) return i;
  }
  if (last >= 0) return last; /* rounding left x at 0 */
  return skip >= 0 ? skip : 0;
}

/* Knob by knob from either parent, then each knob mutated with probability
 * ga_mutation to a random candidate. */
static void crossover(search *se, const config *p1, const config *p2, config *child) {
  *child = *p1;
  for (int k = 0; k < se->s->n_knobs; k++) {
    if (rng_below(&se->r, 2)) child->choice[k] = p2->choice[k];
    if (rng_double(&se->r) < se->o.ga_mutation)
      child->choice[k] = (int)rng_below(&se->r, (uint64_t)se->s->knobs[k].n_cands);
  }
}

/* Breed the next generation into the pending list: parents are the measured
 * members of this generation and the ga_elite best configs so far (or, when
 * no member was measured yet, the best ga_population so far), chosen with
 * probability proportional to fitness 1 / cost; the elites are kept (they
 * were measured) and the rest of the population is children. Without any
 * finite cost the generation is random. Returns its size. */
static int ga_breed(search *se) {
  int pop = se->o.ga_population, n_ranked = 0, n_pool = 0;
  int *ranked = ranked_history(se, &n_ranked);
  if (!ranked) return 0;
  int cap = pop + se->o.ga_elite;
  config *pool = malloc((size_t)cap * sizeof *pool);
  double *fit = malloc((size_t)cap * sizeof *fit);
  int n_elite = n_ranked < se->o.ga_elite ? n_ranked : se->o.ga_elite, measured = 0;
  if (!pool || !fit) {
    oom(se, "parents");
    free(ranked);
    free(pool);
    free(fit);
    return 0;
  }
  for (int i = 0; i < se->n_pend; i++) measured += !isnan(se->pend_cost[i]);
  int from_hist = measured ? n_elite : (n_ranked < pop ? n_ranked : pop);
  for (int i = 0; i < from_hist; i++) {
    pool[n_pool] = se->hist[ranked[i]];
    fit[n_pool++] = 1.0 / se->hist_cost[ranked[i]];
  }
  for (int i = 0; i < se->n_pend && measured; i++) {
    if (isnan(se->pend_cost[i])) continue;
    int dup = 0; /* an elite may be a member of this generation */
    for (int e = 0; e < n_elite; e++)
      dup |= space_index(se->s, &se->hist[ranked[e]]) == se->pend_idx[i];
    if (dup) continue;
    pool[n_pool] = se->pend[i];
    fit[n_pool++] = isfinite(se->pend_cost[i]) ? 1.0 / se->pend_cost[i] : 0.0;
  }
  free(ranked);
  double sum = 0;
  for (int i = 0; i < n_pool; i++) sum += fit[i];

  pend_reset(se);
  int n_children = sum > 0 ? pop - n_elite : pop;
  for (int c = 0; c < n_children; c++) {
    config child;
    int ok = 0;
    for (int t = 0; t < GA_TRIES && sum > 0 && !ok; t++) {
      if (t % GA_REBREED == 0) {
        int p1 = roulette(se, fit, n_pool, sum, -1);
        int p2 = n_pool > 1 ? roulette(se, fit, n_pool, sum, p1) : p1;
        crossover(se, &pool[p1], &pool[p2], &child);
      } else {
        space_neighbor(se->s, &se->r, &child, &child);
      }
      ok = is_valid(se, &child) && is_new(se, space_index(se->s, &child));
    }
    if (!ok && !draw_new(se, &child)) break;
    if (pend_add(se, &child)) break;
  }
  free(pool);
  free(fit);
  return se->n_pend;
}

/* ---- xgb ----------------------------------------------------------------------------- */

/* Keep the cost model's first failure, from se->err, as the search's
 * fallback note (search_model_fallback): "xgboost: " and the reason's
 * first line (XGBoost appends a stack trace). */
static void note_fallback(search *se) {
  if (se->fallback[0]) return;
  const char *m = se->err.msg;
  if (strncmp(m, "XGBoost: ", 9) == 0) m += 9;
  int len = (int)strcspn(m, "\n");
  while (len > 0 && (m[len - 1] == ' ' || m[len - 1] == '\r')) len--;
  snprintf(se->fallback, sizeof se->fallback, "xgboost: %.*s", len, m);
}

/* XGBoost's last error without its "[hh:mm:ss] " time stamp. */
static const char *xgb_last_error(void) {
  const char *m = XGBGetLastError();
  const char *e = m && m[0] == '[' ? strstr(m, "] ") : NULL;
  return e && e - m <= 16 ? e + 2 : m ? m : "";
}

/* On failure: the function's name (the call's text up to its parenthesis)
 * and XGBoost's message go to se->err and the fallback note. */
#define XGB_CHECK(call)                                                                            \
  do {                                                                                             \
    if ((call) != 0) {                                                                             \
      ERR_SET(&se->err, CT_ERR_INTERNAL, "XGBoost: %.*s: %s", (int)strcspn(#call, "("), #call,     \
              xgb_last_error());                                                                   \
      note_fallback(se);                                                                           \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)

/* A retraining is due: the first once there are batch rows, then after
 * every batch of new results. */
static int xgb_due(const search *se) {
  if (se->n_feat <= 0) return 0;
  if (!se->trained_once) return se->n_hist + se->n_tr >= se->o.batch;
  return se->n_hist - se->hist_at_train >= se->o.batch;
}

/* Train a new model from scratch on the measured configs (labels best / cost,
 * 0 for failures) and the transfer rows. Keeps the old model when there is
 * nothing to learn (no label above 0) or XGBoost fails (err says why). */
static void xgb_train(search *se) {
  se->trained_once = 1;
  se->hist_at_train = se->n_hist;
  int n_rows = se->n_hist + se->n_tr, n_groups = 0, positive = 0;
  double best = INFINITY;
  for (int i = 0; i < se->n_hist; i++)
    if (se->hist_cost[i] < best) best = se->hist_cost[i];
  float *x = malloc((size_t)n_rows * (size_t)se->n_feat * sizeof *x);
  float *y = malloc((size_t)n_rows * sizeof *y);
  unsigned *groups = malloc((size_t)(se->n_tr_groups + 1) * sizeof *groups);
  DMatrixHandle dm = NULL;
  BoosterHandle b = NULL;
  if (!x || !y || !groups) {
    oom(se, "training set");
    note_fallback(se);
    goto cleanup;
  }
  if (se->n_hist > 0) {
    memcpy(x, se->hist_feat, (size_t)se->n_hist * (size_t)se->n_feat * sizeof *x);
    for (int i = 0; i < se->n_hist; i++) {
      y[i] = isfinite(best) && isfinite(se->hist_cost[i]) ? (float)(best / se->hist_cost[i]) : 0;
      positive |= y[i] > 0;
    }
    groups[n_groups++] = (unsigned)se->n_hist;
  }
  if (se->n_tr > 0) {
    memcpy(x + (size_t)se->n_hist * (size_t)se->n_feat, se->tr_feat,
           (size_t)se->n_tr * (size_t)se->n_feat * sizeof *x);
    memcpy(y + se->n_hist, se->tr_y, (size_t)se->n_tr * sizeof *y);
    for (int i = 0; i < se->n_tr_groups; i++) groups[n_groups++] = se->tr_group[i];
    positive = 1; /* transfer keeps only groups with a finite best */
  }
  if (!positive) goto cleanup;

  XGB_CHECK(XGDMatrixCreateFromMat_omp(x, (bst_ulong)n_rows, (bst_ulong)se->n_feat, NAN, &dm,
                                       XGB_THREADS));
  XGB_CHECK(XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)n_rows));
  XGB_CHECK(XGDMatrixSetUIntInfo(dm, "group", groups, (bst_ulong)n_groups));
  XGB_CHECK(XGBoosterCreate(&dm, 1, &b));
  char seed[24], threads[8];
  snprintf(seed, sizeof seed, "%u", (unsigned)(se->o.seed & 0x7fffffff));
  snprintf(threads, sizeof threads, "%d", XGB_THREADS);
  /* AutoTVM's parameters; verbosity first so that XGBoost never prints */
  const char *const params[][2] = {
      {"verbosity", "0"},       {"nthread", threads},
      {"seed", seed},           {"objective", XGB_OBJECTIVE},
      {"tree_method", "exact"}, {"max_depth", "3"},
      {"gamma", "0.0001"},      {"min_child_weight", "1"},
      {"subsample", "1"},       {"eta", "0.3"},
      {"lambda", "1"},          {"alpha", "0"},
  };
  for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
    XGB_CHECK(XGBoosterSetParam(b, params[i][0], params[i][1]));
  for (int it = 0; it < XGB_ROUNDS; it++) XGB_CHECK(XGBoosterUpdateOneIter(b, it, dm));
  if (se->bst) XGBoosterFree(se->bst);
  se->bst = b;
  b = NULL;
cleanup:
  if (b) XGBoosterFree(b);
  if (dm) XGDMatrixFree(dm);
  free(x);
  free(y);
  free(groups);
}

/* The model's scores of n configs into score: 0, or -1 when XGBoost fails. */
static int xgb_predict(search *se, const config *cfgs, int n, float *score) {
  DMatrixHandle dm = NULL;
  int rc = -1;
  for (int i = 0; i < n; i++)
    search_features(se->tpl, &se->w, se->s, &cfgs[i], se->cand_feat + (size_t)i * se->n_feat,
                    se->n_feat);
  bst_ulong len = 0;
  const float *res = NULL;
  XGB_CHECK(XGDMatrixCreateFromMat_omp(se->cand_feat, (bst_ulong)n, (bst_ulong)se->n_feat, NAN, &dm,
                                       XGB_THREADS));
  XGB_CHECK(XGBoosterPredict(se->bst, dm, 0, 0, 0, &len, &res));
  if (len != (bst_ulong)n) {
    ERR_SET(&se->err, CT_ERR_INTERNAL, "XGBoost: %llu predictions for %d rows",
            (unsigned long long)len, n);
    note_fallback(se);
    goto cleanup;
  }
  memcpy(score, res, (size_t)n * sizeof *score);
  rc = 0;
cleanup:
  if (dm) XGDMatrixFree(dm);
  return rc;
}

/* Swap two entries of the annealing heap. */
static void heap_swap(search *se, int i, int j) {
  config c = se->heap[i];
  se->heap[i] = se->heap[j];
  se->heap[j] = c;
  uint64_t x = se->heap_idx[i];
  se->heap_idx[i] = se->heap_idx[j];
  se->heap_idx[j] = x;
  float f = se->heap_score[i];
  se->heap_score[i] = se->heap_score[j];
  se->heap_score[j] = f;
}

/* Restore the min-heap below entry i. */
static void heap_sift_down(search *se, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < se->n_heap && se->heap_score[l] < se->heap_score[m]) m = l;
    if (r < se->n_heap && se->heap_score[r] < se->heap_score[m]) m = r;
    if (m == i) return;
    heap_swap(se, i, m);
    i = m;
  }
}

/* Offer a scored config to the min-heap of the cap best new ones: 1 if it
 * went in. */
static int heap_offer(search *se, int cap, const config *cfg, float score) {
  if (se->n_heap == cap && score <= se->heap_score[0]) return 0;
  uint64_t idx = space_index(se->s, cfg);
  if (!is_new(se, idx)) return 0;
  for (int i = 0; i < se->n_heap; i++)
    if (se->heap_idx[i] == idx) return 0;
  if (se->n_heap < cap) {
    int i = se->n_heap++;
    se->heap[i] = *cfg;
    se->heap_idx[i] = idx;
    se->heap_score[i] = score;
    for (; i > 0 && se->heap_score[(i - 1) / 2] > se->heap_score[i]; i = (i - 1) / 2)
      heap_swap(se, i, (i - 1) / 2);
    return 1;
  }
  se->heap[0] = *cfg; /* replace the worst */
  se->heap_idx[0] = idx;
  se->heap_score[0] = score;
  heap_sift_down(se, 0);
  return 1;
}

/* Simulated annealing on the model's scores (AutoTVM's find_maximums):
 * persistent walkers each move to a valid neighbour per step, accepted when
 * better or with probability exp(delta / T), T falling linearly from 1 to 0;
 * the best n_top new configs seen go to the pending list, best first.
 * Returns how many, or -1 when XGBoost failed. */
static int anneal(search *se, int n_top) {
  int nw = se->o.sa_walkers;
  if (!se->walk_ready) {
    for (int i = 0; i < nw; i++)
      if (template_sample(se->tpl, &se->w, se->s, &se->a, &se->r, DRAW_MAX_MISSES, &se->walk[i],
                          NULL))
        return 0;
    se->walk_ready = 1;
  }
  se->n_heap = 0;
  if (xgb_predict(se, se->walk, nw, se->walk_score)) return -1;
  for (int i = 0; i < nw; i++) heap_offer(se, n_top, &se->walk[i], se->walk_score[i]);
  for (int k = 0, last = 0; k < se->o.sa_steps && k - last < SA_EARLY_STOP; k++) {
    double t = 1.0 - (k + 1.0) / (se->o.sa_steps + 1.0);
    for (int i = 0; i < nw; i++)
      if (template_neighbor(se->tpl, &se->w, se->s, &se->a, &se->r, &se->walk[i], NEIGHBOR_TRIES,
                            &se->cand[i], NULL))
        se->cand[i] = se->walk[i];
    if (xgb_predict(se, se->cand, nw, se->cand_score)) return -1;
    for (int i = 0; i < nw; i++) {
      double d = (double)se->cand_score[i] - se->walk_score[i];
      if (d >= 0 || rng_double(&se->r) < exp(d / t)) {
        se->walk[i] = se->cand[i];
        se->walk_score[i] = se->cand_score[i];
      }
      if (heap_offer(se, n_top, &se->cand[i], se->cand_score[i])) last = k;
    }
  }
  /* pop the worst first into the tail, so that the round runs best first
   * (the pending list is empty here and has room for n_top) */
  int n = se->n_heap;
  for (int i = n - 1; i >= 0; i--) {
    heap_swap(se, 0, --se->n_heap);
    heap_sift_down(se, 0);
    se->pend[i] = se->heap[se->n_heap];
  }
  for (int i = 0; i < n; i++) {
    config c = se->pend[i];
    if (pend_add(se, &c)) return i;
  }
  return n;
}

/* Plan the next round into the pending list: retrain when due, anneal for
 * the model's best (when there is a model) and fill the eps_random share and
 * whatever annealing did not find with random new configs. Returns its size. */
static int xgb_plan(search *se) {
  pend_reset(se);
  if (xgb_due(se)) xgb_train(se);
  int batch = se->o.batch;
  if (se->bst) {
    int n_top = batch - (int)(se->o.eps_random * batch);
    if (n_top > 0 && anneal(se, n_top) < 0) {
      XGBoosterFree(se->bst); /* a model that cannot predict is no model */
      se->bst = NULL;
      pend_reset(se);
    }
  }
  config c;
  while (se->n_pend < batch && draw_new(se, &c))
    if (pend_add(se, &c)) break;
  return se->n_pend;
}

/* ---- public ------------------------------------------------------------------------- */

/* See search.h. The seed is 1, as in the example of the settings. */
void search_opts_default(search_opts *o, const char *kind) {
  memset(o, 0, sizeof *o);
  o->kind = kind;
  o->seed = 1;
  o->batch = 64;
  o->eps_random = 0.05;
  o->sa_walkers = 128;
  o->sa_steps = 500;
  o->ga_population = 100;
  o->ga_elite = 3;
  o->ga_mutation = 0.1;
}

/* Check the options the kind uses; CT_ERR_INVALID_ARG names the field. */
static ct_status check_opts(const search_opts *o, kind_id kind, ct_err *err) {
  if (kind == KIND_GA) {
    if (o->ga_population < 2 || o->ga_population > 1000000)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "ga_population %d; accepted: 2 to 1000000",
                     o->ga_population);
    if (o->ga_elite < 0 || o->ga_elite >= o->ga_population)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "ga_elite %d; accepted: 0 to ga_population - 1 (%d)",
                     o->ga_elite, o->ga_population - 1);
    if (!(o->ga_mutation >= 0 && o->ga_mutation <= 1))
      return ERR_SET(err, CT_ERR_INVALID_ARG, "ga_mutation %g; accepted: 0 to 1", o->ga_mutation);
  }
  if (kind == KIND_XGB) {
    if (o->batch < 1 || o->batch > 65536)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "batch %d; accepted: 1 to 65536", o->batch);
    if (!(o->eps_random >= 0 && o->eps_random <= 1))
      return ERR_SET(err, CT_ERR_INVALID_ARG, "eps_random %g; accepted: 0 to 1", o->eps_random);
    if (o->sa_walkers < 1 || o->sa_walkers > 65536)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "sa_walkers %d; accepted: 1 to 65536", o->sa_walkers);
    if (o->sa_steps < 0 || o->sa_steps > 1000000)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "sa_steps %d; accepted: 0 to 1000000", o->sa_steps);
  }
  return CT_OK;
}

/* See search.h. Copies the options, the workload and the architecture;
 * allocates what the kind needs up front. */
ct_status search_new(const search_opts *o, const template_desc *tpl, const ct_workload *w,
                     const space *s, const arch *a, search **out, ct_err *err) {
  if (!o || !tpl || !w || !s || !a || !out)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "search_new: NULL argument");
  *out = NULL;
  int kind = 0;
  while (kind < N_KINDS && !(o->kind && strcmp(o->kind, kind_names[kind]) == 0)) kind++;
  if (kind == N_KINDS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "unknown search kind \"%s\"; kinds: %s, %s, %s, %s",
                   o->kind ? o->kind : "(null)", kind_names[0], kind_names[1], kind_names[2],
                   kind_names[3]);
  ct_status st = check_opts(o, (kind_id)kind, err);
  if (st) return st;
  search *se = calloc(1, sizeof *se);
  if (!se) return ERR_SET(err, CT_ERR_NO_MEMORY, "search_new: out of memory");
  se->o = *o;
  se->o.kind = kind_names[kind]; /* static: the caller's string may go */
  se->kind = (kind_id)kind;
  se->tpl = tpl;
  se->w = *w;
  se->s = s;
  se->a = *a;
  rng_seed(&se->r, o->seed);
  const char *name = kind_names[kind];
  unsigned long long seed = (unsigned long long)o->seed;
  if (kind == KIND_GA)
    snprintf(se->settings, sizeof se->settings,
             "{\"kind\":\"%s\",\"seed\":%llu,\"population\":%d,\"elite\":%d,\"mutation\":%g}", name,
             seed, o->ga_population, o->ga_elite, o->ga_mutation);
  else if (kind == KIND_XGB)
    snprintf(se->settings, sizeof se->settings,
             "{\"kind\":\"%s\",\"seed\":%llu,\"batch\":%d,\"eps_random\":%g,\"sa_walkers\":%d,"
             "\"sa_steps\":%d,\"objective\":\"%s\",\"rounds\":%d}",
             name, seed, o->batch, o->eps_random, o->sa_walkers, o->sa_steps, XGB_OBJECTIVE,
             XGB_ROUNDS);
  else
    snprintf(se->settings, sizeof se->settings, "{\"kind\":\"%s\",\"seed\":%llu}", name, seed);

  int ok = 1;
  if (kind == KIND_GA || kind == KIND_XGB) {
    se->cap_pend = kind == KIND_GA ? o->ga_population : o->batch;
    se->pend = malloc((size_t)se->cap_pend * sizeof *se->pend);
    se->pend_idx = malloc((size_t)se->cap_pend * sizeof *se->pend_idx);
    se->pend_cost = malloc((size_t)se->cap_pend * sizeof *se->pend_cost);
    ok = se->pend && se->pend_idx && se->pend_cost;
  }
  if (kind == KIND_XGB && ok) {
    config zero;
    memset(&zero, 0, sizeof zero);
    float f[SEARCH_MAX_FEATURES];
    se->n_feat = search_features(tpl, w, s, &zero, f, SEARCH_MAX_FEATURES);
    size_t nw = (size_t)o->sa_walkers, nh = (size_t)o->batch;
    se->walk = malloc(nw * sizeof *se->walk);
    se->cand = malloc(nw * sizeof *se->cand);
    se->walk_score = malloc(nw * sizeof *se->walk_score);
    se->cand_score = malloc(nw * sizeof *se->cand_score);
    se->cand_feat = malloc(nw * (size_t)(se->n_feat > 0 ? se->n_feat : 1) * sizeof(float));
    se->heap = malloc(nh * sizeof *se->heap);
    se->heap_idx = malloc(nh * sizeof *se->heap_idx);
    se->heap_score = malloc(nh * sizeof *se->heap_score);
    ok = se->walk && se->cand && se->walk_score && se->cand_score && se->cand_feat && se->heap &&
         se->heap_idx && se->heap_score;
  }
  if (!ok) {
    search_free(se);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "search_new: out of memory");
  }
  memset(&se->grid_cur, 0, sizeof se->grid_cur);
  *out = se;
  return CT_OK;
}

/* See search.h: frees the model too. */
void search_free(search *se) {
  if (!se) return;
  if (se->bst) XGBoosterFree(se->bst);
  free(se->small);
  free(se->visited.slot);
  free(se->pend_set.slot);
  free(se->hist);
  free(se->hist_cost);
  free(se->hist_feat);
  free(se->pend);
  free(se->pend_idx);
  free(se->pend_cost);
  free(se->tr_feat);
  free(se->tr_y);
  free(se->tr_group);
  free(se->walk);
  free(se->cand);
  free(se->walk_score);
  free(se->cand_score);
  free(se->cand_feat);
  free(se->heap);
  free(se->heap_idx);
  free(se->heap_score);
  free(se);
}

/* See search.h: random and grid draw directly; ga and xgb hand out their
 * pending list and plan the next one when it runs out. */
int search_next(search *se, config *out, int n) {
  if (!se || !out || n <= 0) return 0;
  int got = 0;
  int used = 0;
  for (; used < se->n_first && got < n; used++) {
    const uint64_t idx = space_index(se->s, &se->first[used]);
    if (idset_has(&se->visited, idx)) continue; /* measured meanwhile */
    if (idset_add(&se->visited, idx)) {
      oom(se, "visited set");
      break;
    }
    out[got++] = se->first[used];
  }
  if (used > 0) {
    memmove(se->first, se->first + used, sizeof se->first[0] * (size_t)(se->n_first - used));
    se->n_first -= used;
  }
  if (got == n) return got;
  switch (se->kind) {
  case KIND_RANDOM:
    return got + random_next(se, out + got, n - got);
  case KIND_GRID:
    return got + grid_next(se, out + got, n - got);
  case KIND_GA:
  case KIND_XGB:
    break;
  default:
    return got;
  }
  /* a new model replans at once, as AutoTVM does, even mid-round */
  if (se->kind == KIND_XGB && xgb_due(se)) xgb_plan(se);
  for (;;) {
    got = hand_out(se, out, n, got);
    if (got == n) break;
    if ((se->kind == KIND_GA ? ga_breed(se) : xgb_plan(se)) == 0) break;
  }
  return got;
}

/* Whether every choice of cfg names one of its knob's candidates. */
static int in_space(const space *s, const config *cfg) {
  for (int k = 0; k < s->n_knobs; k++)
    if (cfg->choice[k] < 0 || cfg->choice[k] >= s->knobs[k].n_cands) return 0;
  return 1;
}

/* See search.h. */
int search_first(search *se, const config *cfg) {
  if (!se || !cfg || !in_space(se->s, cfg) || !is_valid(se, cfg)) return 0;
  const uint64_t idx = space_index(se->s, cfg);
  if (idset_has(&se->visited, idx) || se->n_first == SEARCH_FIRST_MAX) return 0;
  for (int i = 0; i < se->n_first; i++)
    if (space_index(se->s, &se->first[i]) == idx) return 0;
  se->first[se->n_first++] = *cfg;
  return 1;
}

/* See search.h. A cost that is not a positive number counts as a failure; a
 * config outside the space is ignored. Training waits for search_next. */
void search_update(search *se, const config *cfgs, const double *cost_us, int n) {
  if (!se || !cfgs || !cost_us) return;
  for (int i = 0; i < n; i++) {
    if (!in_space(se->s, &cfgs[i])) continue;
    uint64_t idx = space_index(se->s, &cfgs[i]);
    /* a cost that is not a positive number is a failure */
    double c = cost_us[i] > 0 ? cost_us[i] : INFINITY;
    if (idset_add(&se->visited, idx)) {
      oom(se, "visited set");
      return;
    }
    if (se->kind == KIND_GA)
      for (int j = 0; j < se->n_pend; j++)
        if (se->pend_idx[j] == idx) se->pend_cost[j] = c;
    if (se->kind != KIND_GA && se->kind != KIND_XGB) continue;
    if (hist_grow(se)) return;
    se->hist[se->n_hist] = cfgs[i];
    se->hist_cost[se->n_hist] = c;
    if (se->kind == KIND_XGB && se->n_feat > 0)
      search_features(se->tpl, &se->w, se->s, &cfgs[i],
                      se->hist_feat + (size_t)se->n_hist * (size_t)se->n_feat, se->n_feat);
    se->n_hist++;
  }
}

/* Order rows by group, then by position. */
typedef struct row_key {
  int group, row;
} row_key;

static int cmp_row_key(const void *pa, const void *pb) {
  const row_key *a = pa, *b = pb;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  return (a->row > b->row) - (a->row < b->row);
}

/* See search.h. Rows are kept sorted by group (XGBoost's query groups must
 * be contiguous); groups without a finite cost are dropped, rows of the
 * wrong width are ignored (the reason is kept on se->err). */
void search_transfer(search *se, const float *features, const double *cost_us, const int *group,
                     int n, int n_features) {
  if (!se || se->kind != KIND_XGB || !features || !cost_us || !group || n <= 0) return;
  if (n_features != se->n_feat || se->n_feat <= 0) {
    ERR_SET(&se->err, CT_ERR_INVALID_ARG,
            "search_transfer: rows of %d features; this space has %d (rows ignored)", n_features,
            se->n_feat);
    return;
  }
  row_key *key = malloc((size_t)n * sizeof *key);
  if (!key) {
    oom(se, "transfer");
    return;
  }
  for (int i = 0; i < n; i++) key[i] = (row_key){group[i], i};
  qsort(key, (size_t)n, sizeof *key, cmp_row_key);
  int need = se->n_tr + n, need_groups = se->n_tr_groups + n;
  if (need > se->cap_tr) {
    float *f = realloc(se->tr_feat, (size_t)need * (size_t)se->n_feat * sizeof *f);
    if (f) se->tr_feat = f;
    float *y = f ? realloc(se->tr_y, (size_t)need * sizeof *y) : NULL;
    if (y) se->tr_y = y;
    if (!f || !y) {
      oom(se, "transfer");
      free(key);
      return;
    }
    se->cap_tr = need;
  }
  if (need_groups > se->cap_tr_groups) {
    unsigned *g = realloc(se->tr_group, (size_t)need_groups * sizeof *g);
    if (!g) {
      oom(se, "transfer");
      free(key);
      return;
    }
    se->tr_group = g;
    se->cap_tr_groups = need_groups;
  }
  for (int lo = 0, hi; lo < n; lo = hi) {
    double best = INFINITY;
    for (hi = lo; hi < n && key[hi].group == key[lo].group; hi++) {
      double c = cost_us[key[hi].row];
      if (c > 0 && c < best) best = c;
    }
    if (!isfinite(best)) continue; /* every row failed: nothing to rank */
    for (int i = lo; i < hi; i++) {
      double c = cost_us[key[i].row];
      memcpy(se->tr_feat + (size_t)se->n_tr * (size_t)se->n_feat,
             features + (size_t)key[i].row * (size_t)n_features,
             (size_t)n_features * sizeof(float));
      se->tr_y[se->n_tr++] = c > 0 && isfinite(c) ? (float)(best / c) : 0.0f;
    }
    se->tr_group[se->n_tr_groups++] = (unsigned)(hi - lo);
  }
  free(key);
}

/* See search.h; "" for NULL. */
const char *search_settings(const search *se) {
  return se ? se->settings : "";
}

/* See search.h. */
const char *search_model_fallback(const search *se) {
  return se && se->fallback[0] ? se->fallback : NULL;
}

/* Append v when there is room. */
static void put(float *out, int max, int *n, float v) {
  if (*n < max) out[(*n)++] = v;
}

/* See search.h. cfg must be of s (choices in range). */
int search_features(const template_desc *tpl, const ct_workload *w, const space *s,
                    const config *cfg, float *out, int max) {
  if (!s || !cfg || !out || max <= 0) return 0;
  int n = 0;
  for (int k = 0; k < s->n_knobs; k++) {
    const knob *kn = &s->knobs[k];
    const int *v = space_value(s, cfg, k);
    if (kn->kind == KNOB_SPLIT) {
      for (int i = 0; i < kn->width; i++) put(out, max, &n, (float)log2((double)v[i]));
    } else if (kn->kind == KNOB_REORDER && kn->n_cands <= ONEHOT_MAX) {
      for (int c = 0; c < kn->n_cands; c++) put(out, max, &n, c == cfg->choice[k] ? 1.0f : 0.0f);
    } else {
      for (int i = 0; i < kn->width; i++) put(out, max, &n, (float)v[i]);
    }
  }
  if (tpl && tpl->describe && w && n < max) {
    int m = tpl->describe(w, s, cfg, out + n, max - n);
    if (m > 0) n += m < max - n ? m : max - n;
  }
  return n;
}
