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
#include <math.h>
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

typedef struct wplan {
  int bn, bk, stages, cwg, th, td, tma, split;
  long bm, rows, tn, tiles_w, tiles_h, tiles_d, tiles_ni, tiles_m, tiles_n;
  long threads, acc, regs, smem_bytes, kt, kt_split;
} wplan;

static int supports_op(const ct_workload *w, ct_op op, char *why) {
  const char *reason = template_conv_refusal(w, op);
  if (!reason && w->epi.d2s_block) reason = "depth_to_space runs on the dp4a templates";
  if (!reason && w->c % 32)
    reason = "the reduction is tap-major in slices of 8 channel words or more: C must be a "
             "multiple of 32 (stems run on the mma templates)";
  if (reason && why) snprintf(why, TEMPLATE_WHY_MAX, "%s", reason);
  return reason == NULL;
}

static int supports2d(const ct_workload *w, char *why) {
  return supports_op(w, CT_OP_CONV2D, why);
}

static int supports3d(const ct_workload *w, char *why) {
  return supports_op(w, CT_OP_CONV3D, why);
}

/* Whether a tensor map can describe w's data: rows of 16-byte multiples,
 * unit stride along W (TMA has no traversal stride on its innermost axis),
 * at most 8 along H and D, and no data zero point where TMA's zero fill
 * would be the padding. */
static int tma_possible(const ct_workload *w, const geom3 *g) {
  int pad = 0, ok = g->in[2] % 4 == 0 && g->str[2] == 1;
  for (int d = 0; d < 3; d++) {
    ok = ok && g->str[d] <= 8;
    pad += (int)(g->pb[d] + g->pa[d]);
  }
  return ok && !(w->epi.data_zero_point && pad);
}

static ct_status build_space(const ct_workload *w, space *s, ct_err *err) {
  geom3 g;
  workload_geom(w, &g);
  ct_status st;
#define CHOICE(name, v) \
  if ((st = space_add_choice(s, name, v, (int)(sizeof v / sizeof v[0]), err))) return st
  CHOICE("block_n", block_ns);
  CHOICE("block_k", block_ks);
  CHOICE("stages", stage_counts);
  CHOICE("warpgroups", warpgroups);
  CHOICE("tile_h", tile_hs);
  if (w->op == CT_OP_CONV3D) CHOICE("tile_d", tile_ds);
  if (tma_possible(w, &g)) CHOICE("tma", zero_one);
  CHOICE("split_k", split_ks);
#undef CHOICE
  return CT_OK;
}

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

static void make_plan(const ct_workload *w, const space *s, const config *cfg, wplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->bn = space_get(s, cfg, "block_n", 128);
  p->bk = space_get(s, cfg, "block_k", 64);
  p->stages = space_get(s, cfg, "stages", 4);
  p->cwg = space_get(s, cfg, "warpgroups", 2);
  p->th = space_get(s, cfg, "tile_h", 8);
  p->td = space_get(s, cfg, "tile_d", 1);
  p->tma = space_get(s, cfg, "tma", 0);
  p->split = space_get(s, cfg, "split_k", 1);
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
  if (a->cc_major != 9 || a->cc_minor != 0)
    return template_fail(why, "wgmma needs sm_90a (compute capability 9.0), not sm_%ld%ld",
                         a->cc_major, a->cc_minor);
  if ((g.c / 4) % (p.bk / 4))
    return template_fail(why, "block_k %ld: C/4 = %ld is not a multiple of block_k / 4", p.bk,
                         g.c / 4);
  if (p.tn == 0)
    return template_fail(why, "tile_h x tile_d = %ld does not divide block_m / 8 = %ld",
                         (long)p.th * p.td, p.rows);
  if (p.th > 1 && p.th >= 2 * g.out[1])
    return template_fail(why, "tile_h %ld for %ld output rows: half the tile would be padding",
                         p.th, g.out[1]);
  if (p.td > 1 && p.td >= 2 * g.out[0])
    return template_fail(why, "tile_d %ld for depth %ld: half the tile would be padding", p.td,
                         g.out[0]);
  if (p.tn > 1 && p.tn >= 2 * g.n)
    return template_fail(why, "%ld images per tile for batch %ld: half the tile would be padding",
                         p.tn, g.n);
  if (p.bn > 64 && p.bn >= 2 * 4 * ceil_div(g.k, 4))
    return template_fail(why, "block_n %ld for %ld channels: half the tile would be padding", p.bn,
                         g.k);
  if ((p.bn / 8) % p.split)
    return template_fail(why, "split_k %ld does not divide block_n / 8 = %ld", p.split, p.bn / 8);
  if ((p.split - 1) * p.kt_split >= p.kt)
    return template_fail(why, "split_k %ld over %ld stages of the reduction leaves a split empty",
                         p.split, p.kt);
  if (p.threads > a->max_threads_per_block)
    return template_fail(why, "%ld threads per block; at most %ld", p.threads,
                         a->max_threads_per_block);
  long reg_cap = a->regs_per_block / p.threads / 8 * 8;
  if (reg_cap > a->max_regs_per_thread) reg_cap = a->max_regs_per_thread;
  if (p.regs > reg_cap)
    return template_fail(why, "at least %ld registers per thread; at most %ld", p.regs, reg_cap);
  if (p.smem_bytes > a->smem_optin_bytes)
    return template_fail(why, "%ld bytes of shared memory; at most %ld", p.smem_bytes,
                         a->smem_optin_bytes);
  if (p.tiles_m > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p.tiles_m, 2147483647L);
  if (p.tiles_n > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p.tiles_n, 65535);
  if (p.tma && ((long)p.th * g.str[1] > 256 ||
                (long)p.td * g.str[0] > 256 || p.tn > 256))
    return template_fail(why, "a TMA box of more than %ld elements along an axis (tile_h %ld)",
                         256, p.th);
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
  instance_opt(inst, "WG_BN", p.bn);
  instance_opt(inst, "WG_BK", p.bk);
  instance_opt(inst, "WG_STAGES", p.stages);
  instance_opt(inst, "WG_CWG", p.cwg);
  instance_opt(inst, "WG_TH", p.th);
  instance_opt(inst, "WG_TD", p.td);
  instance_opt(inst, "WG_TMA", p.tma);
  instance_opt(inst, "WG_SPLITK", p.split);
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
    const unsigned long long strides[4] = {4ULL * plane, 4ULL * g.in[2],
                                           4ULL * g.in[1] * g.in[2], 4ULL * (g.c / 4) * plane};
    const unsigned box[5] = {12, (unsigned)(p.bk / 4),
                             (unsigned)(p.th * g.str[1]), (unsigned)(p.td * g.str[0]),
                             (unsigned)p.tn};
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
  const double v[] = {p.threads, p.acc,      p.regs,         p.smem_bytes + 1,
                      p.tiles_m, p.tiles_n,  p.kt + 1,       (double)p.tiles_m * p.tiles_n * p.split,
                      p.bm,      p.bn,       p.stages,       p.tn,
                      p.split,   p.kt_split};
  int n = (int)(sizeof v / sizeof v[0]);
  for (int i = 0; i < n && i < max; i++) out[i] = (float)log2(v[i]);
  return n < max ? n : max;
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
  for (int k = 1; k < 4 && 2 * p.tiles_m * p.tiles_n * split_ks[k - 1] <= sms; k++) {
    c = *out;
    if (!template_set_choice(s, &c, "split_k", split_ks[k]) || !valid(w, s, &c, a, NULL)) break;
    *out = c;
  }
  return 1;
}

const template_desc tpl_conv2d_nchw4c_wgmma = {
    .name = "conv2d_nchw4c_wgmma",
    .source = "conv2d_nchw4c_wgmma.cu",
    .op = CT_OP_CONV2D,
    .layout = CT_LAYOUT_NCHW4C,
    .supports = supports2d,
    .space = build_space,
    .valid = valid,
    .instance = make_instance,
    .describe = describe,
    .preferred = preferred,
};

const template_desc tpl_conv3d_ncdhw4c_wgmma = {
    .name = "conv3d_ncdhw4c_wgmma",
    .source = "conv3d_ncdhw4c_wgmma.cu",
    .op = CT_OP_CONV3D,
    .layout = CT_LAYOUT_NCHW4C,
    .supports = supports3d,
    .space = build_space,
    .valid = valid,
    .instance = make_instance,
    .describe = describe,
    .preferred = preferred,
};
