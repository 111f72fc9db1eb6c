/*
 * conv_wgmma.c: the C descriptor of conv2d_nchw4c_wgmma and
 * conv3d_ncdhw4c_wgmma (kernel body: conv_wgmma.cuh): their knob space,
 * validity, the instance (with its TMA tensor map), the features for the
 * cost model and a default config.
 *
 * Knobs: block_n (64, 128, 256: wgmma's N), block_k (bytes of the
 * reduction per stage), stages, warpgroups (consumer warpgroups: block_m
 * is 64 per warpgroup), tile_h and (conv3d) tile_d (the block's positions
 * are 8 along W x tile_h x tile_d x the images that fill block_m), and tma
 * (present where a tensor map can describe the data: W % 4 == 0, stride 1
 * along W and at most 8 along H and D, no data zero point with padding; 0
 * loads with cp.async) and split_k (the blocks of a cluster that share a
 * tile's reduction and meet in distributed shared memory).
 *
 * Validity, decided before any compile: wgmma needs exactly sm_90 (the
 * sm_90a target); C/4 a multiple of block_k / 4 (the tap-major reduction);
 * tile_h x tile_d dividing block_m / 8; registers within the block's share
 * (accumulators are block_n / 2 per consumer thread); shared memory within
 * the opt-in limit; tiles not larger than twice what the layer has;
 * split_k dividing block_n / 8 (each rank stores a share of the tile's
 * channels) and giving every split a stage of the reduction.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* Addresses, loop counters, pipeline indices, params: a lower bound. */
#define WG_REG_OVERHEAD 48

static const int block_ns[] = {64, 128, 256};
static const int block_ks[] = {32, 64, 128};
static const int stage_counts[] = {2, 3, 4, 5, 6};
static const int warpgroups[] = {1, 2};
static const int tile_hs[] = {1, 2, 4, 8, 16};
static const int tile_ds[] = {1, 2, 4};
static const int zero_one[] = {0, 1};
static const int split_ks[] = {1, 2, 4, 8};

static int tma_possible(const ct_workload *w);

static const knob_def knobs[] = {
    KNOB("block_n", block_ns, 128),
    KNOB("block_k", block_ks, 64),
    KNOB("stages", stage_counts, 4),
    KNOB("warpgroups", warpgroups, 2),
    KNOB("tile_h", tile_hs, 8),
    KNOB_3D("tile_d", tile_ds, 1),
    KNOB_IF("tma", zero_one, 0, tma_possible),
    KNOB("split_k", split_ks, 1),
    KNOB_END,
};

typedef struct wplan {
  int bn, bk, stages, cwg, th, td, tma, split;
  long bm, rows, tn, tiles_w, tiles_h, tiles_d, tiles_ni, tiles_m, tiles_n;
  long threads, acc, regs, smem_bytes, kt, kt_split;
} wplan;

static const char *refusal(const ct_workload *w, ct_op op) {
  const char *reason = template_conv_refusal(w, op);
  if (!reason && w->epi.d2s_block) reason = "depth_to_space runs on the dp4a templates";
  if (!reason && w->c % 32)
    reason = "the reduction is tap-major in slices of 8 channel words or more: C must be a "
             "multiple of 32 (stems run on the mma templates)";
  return reason;
}

/* Whether a tensor map can describe w's data: rows of 16-byte multiples,
 * unit stride along W (TMA has no traversal stride on its innermost axis),
 * at most 8 along H and D, and no data zero point where TMA's zero fill
 * would be the padding. */
static int tma_possible(const ct_workload *w) {
  geom3 gg, *g = &gg;
  workload_geom(w, g);
  int pad = 0, ok = g->in[2] % 4 == 0 && g->str[2] == 1;
  for (int d = 0; d < 3; d++) {
    ok = ok && g->str[d] <= 8;
    pad += (int)(g->pb[d] + g->pa[d]);
  }
  return ok && !(w->epi.data_zero_point && pad);
}

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

static void make_plan(const ct_workload *w, const space *s, const config *cfg, wplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->bn = knobs_get(knobs, s, cfg, "block_n");
  p->bk = knobs_get(knobs, s, cfg, "block_k");
  p->stages = knobs_get(knobs, s, cfg, "stages");
  p->cwg = knobs_get(knobs, s, cfg, "warpgroups");
  p->th = knobs_get(knobs, s, cfg, "tile_h");
  p->td = knobs_get(knobs, s, cfg, "tile_d");
  p->tma = knobs_get(knobs, s, cfg, "tma");
  p->split = knobs_get(knobs, s, cfg, "split_k");
  p->bm = 64L * p->cwg;
  p->rows = p->bm / 8;
  p->tn = p->rows % ((long)p->th * p->td) == 0 ? p->rows / ((long)p->th * p->td) : 0;
  p->tiles_w = ceil_div(g.out[2], 8);
  p->tiles_h = ceil_div(g.out[1], p->th);
  p->tiles_d = ceil_div(g.out[0], p->td);
  p->tiles_ni = p->tn > 0 ? ceil_div(g.n, p->tn) : 0;
  p->tiles_m = p->tiles_w * p->tiles_h * p->tiles_d * p->tiles_ni;
  p->tiles_n = ceil_div(4 * ceil_div(g.k, 4), p->bn);
  p->threads = 128L * (p->cwg + 1);
  p->acc = p->bn / 2 + (w->epi.weight_zero_point ? 4 : 0);
  p->regs = p->acc + 2L * (p->bk / 32) * 4 + WG_REG_OVERHEAD;
  /* A rows of 12 words for 8 positions (conv_wgmma.cuh); with split-K the
   * pipeline's memory then holds the partial accumulators */
  long pipe = (long)p->stages * (p->bm * p->bk * 3 / 2 + (long)p->bn * p->bk);
  long red = p->split > 1 ? 128L * p->cwg * p->acc * 4 : 0;
  p->smem_bytes = (pipe > red ? pipe : red) + 16L * p->stages;
  p->kt = g.ker[0] * g.ker[1] * g.ker[2] * (g.c / 4 / (p->bk / 4));
  p->kt_split = ceil_div(p->kt, p->split);
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  wplan p;
  make_plan(w, s, cfg, &p);
  geom3 g;
  workload_geom(w, &g);
  if (!template_need_sm90(a, why)) return 0;
  if ((g.c / 4) % (p.bk / 4))
    return template_fail(why, "block_k %ld: C/4 = %ld is not a multiple of block_k / 4", p.bk,
                         g.c / 4);
  if (p.tn == 0)
    return template_fail(why, "tile_h x tile_d = %ld does not divide block_m / 8 = %ld",
                         (long)p.th * p.td, p.rows);
  if (!template_tile_fits("tile_h", p.th, 1, g.out[1], "output rows", why) ||
      !template_tile_fits("tile_d", p.td, 1, g.out[0], "output planes", why) ||
      !template_tile_fits("a tile's images", p.tn, 1, g.n, "images", why) ||
      !template_tile_fits("block_n", p.bn, 64, 4 * ceil_div(g.k, 4), "channels (padded to 4)", why))
    return 0;
  if ((p.bn / 8) % p.split)
    return template_fail(why, "split_k %ld does not divide block_n / 8 = %ld", p.split, p.bn / 8);
  if ((p.split - 1) * p.kt_split >= p.kt)
    return template_fail(why, "split_k %ld over %ld stages of the reduction leaves a split empty",
                         p.split, p.kt);
  if (p.threads > a->max_threads_per_block)
    return template_fail(why, "%ld threads per block; at most %ld", p.threads,
                         a->max_threads_per_block);
  if (!template_regs_fit(a, p.threads, 1, p.regs, why)) return 0;
  if (p.smem_bytes > a->smem_optin_bytes)
    return template_fail(why, "%ld bytes of shared memory; at most %ld", p.smem_bytes,
                         a->smem_optin_bytes);
  if (p.tiles_m > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p.tiles_m, 2147483647L);
  if (p.tiles_n > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p.tiles_n, 65535);
  if (p.tma && ((long)p.th * g.str[1] > 256 || (long)p.td * g.str[0] > 256 || p.tn > 256))
    return template_fail(why, "a TMA box of more than %ld elements along an axis (tile_h %ld)", 256,
                         p.th);
  return 1;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  (void)a;
  wplan p;
  make_plan(w, s, cfg, &p);
  geom3 g;
  workload_geom(w, &g);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_wgmma");
  inst->n_options = 0;
  instance_conv_options(inst, w);
  knobs_options(knobs, s, cfg, inst);
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_wgmma: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  inst->grid[0] = (unsigned)p.tiles_m;
  inst->grid[1] = (unsigned)p.tiles_n;
  inst->grid[2] = (unsigned)p.split;
  inst->block[0] = (unsigned)p.threads;
  inst->block[1] = inst->block[2] = 1;
  inst->smem_bytes = (size_t)p.smem_bytes;
  inst->arch_specific = 1;
  instance_conv_args(inst);
  if (p.tma) {
    /* the data as (W, C/4, H, D, N) 32-bit words; the box of one stage */
    const long plane = g.in[0] * g.in[1] * g.in[2];
    tmap_desc *t = &inst->tmap;
    t->rank = 5;
    t->elem_bytes = 4;
    const unsigned long long dims[5] = {(unsigned long long)g.in[2], (unsigned long long)g.c / 4,
                                        (unsigned long long)g.in[1], (unsigned long long)g.in[0],
                                        (unsigned long long)g.n};
    const unsigned long long strides[4] = {4ULL * plane, 4ULL * g.in[2], 4ULL * g.in[1] * g.in[2],
                                           4ULL * (g.c / 4) * plane};
    const unsigned box[5] = {12, (unsigned)(p.bk / 4), (unsigned)(p.th * g.str[1]),
                             (unsigned)(p.td * g.str[0]), (unsigned)p.tn};
    const unsigned estr[5] = {1, 1, (unsigned)g.str[1], (unsigned)g.str[0], 1};
    memcpy(t->dims, dims, sizeof dims);
    memcpy(t->strides, strides, sizeof strides);
    memcpy(t->box, box, sizeof box);
    memcpy(t->elem_strides, estr, sizeof estr);
    inst->args[inst->n_args++] = ARG_DATA_TMAP;
  }
  return CT_OK;
}

/* Derived sizes for the cost model, log2-scaled where they span decades. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  wplan p;
  make_plan(w, s, cfg, &p);
  const double v[] = {p.threads, p.acc,     p.regs,   p.smem_bytes + 1,
                      p.tiles_m, p.tiles_n, p.kt + 1, (double)p.tiles_m * p.tiles_n * p.split,
                      p.bm,      p.bn,      p.stages, p.tn,
                      p.split,   p.kt_split};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning: two consumer warpgroups, 4 stages of 64
 * bytes, TMA where it can, the widest N tile that still gives every SM a
 * block, and the tile shape that wastes the fewest positions; then, where
 * the grid leaves more than half the SMs idle, the split-K that fills
 * them. */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  static const int bns[] = {128, 64, 256};
  long sms = a->sm_count > 0 ? a->sm_count : 132;
  int found = 0;
  double best = 0;
  config c;
  memset(&c, 0, sizeof c);
  for (int ib = 0; ib < 3; ib++)
    for (int ih = 0; ih < 5; ih++)
      for (int id = 0; id < 3; id++)
        for (int ik = 0; ik < 2; ik++) {
          if (!(template_set_choice(s, &c, "block_n", bns[ib]) &&
                template_set_choice(s, &c, "block_k", ik ? 32 : 64) &&
                template_set_choice(s, &c, "stages", 4) &&
                template_set_choice(s, &c, "warpgroups", 2) &&
                template_set_choice(s, &c, "tile_h", tile_hs[ih])))
            continue;
          if (w->op == CT_OP_CONV3D && !template_set_choice(s, &c, "tile_d", tile_ds[id])) continue;
          if (w->op != CT_OP_CONV3D && id > 0) continue;
          template_set_choice(s, &c, "tma", 1);
          if (!valid(w, s, &c, a, NULL)) continue;
          wplan p;
          make_plan(w, s, &c, &p);
          geom3 g;
          workload_geom(w, &g);
          /* share of computed positions that exist, and whether the SMs fill */
          double used = (double)g.n * g.out[0] * g.out[1] * g.out[2] / ((double)p.tiles_m * p.bm);
          double score = used * (p.tiles_m * p.tiles_n >= sms ? 2.0 : 1.0) - 0.01 * ib;
          if (!found || score > best) {
            *out = c;
            best = score;
            found = 1;
          }
        }
  if (!found) return 0;
  wplan p;
  make_plan(w, s, out, &p);
  template_grow_split(w, s, a, p.tiles_m * p.tiles_n, sms, valid, out);
  return 1;
}

TEMPLATE_PAIR(conv2d_nchw4c_wgmma, conv3d_ncdhw4c_wgmma, CT_LAYOUT_NCHW4C, knobs, refusal, valid,
              make_instance, describe, preferred);
