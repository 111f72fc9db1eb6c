/*
 * conv_wgmma_nhwc.c: the C descriptor of conv2d_nhwc_wgmma and
 * conv3d_ndhwc_wgmma (kernel body: conv_wgmma_nhwc.cuh): their knob space,
 * validity, the instance with its two TMA tensor maps (the data in im2col
 * mode, or tiled for a 1x1 layer at stride 1 without padding; the weights
 * tiled), the features for the cost model and a default.
 *
 * Knobs: block_n (64, 128, 256: wgmma's N), block_k (bytes of the
 * reduction per slice: 32, 64, 128, also the swizzle span), k_slices
 * (1 to 4 slices per stage: one barrier round trip and one wgmma group per
 * stage, whatever its size), stages,
 * warpgroups (consumer warpgroups), rows_per_wg (64 or 128 rows per
 * consumer warpgroup: block_m = warpgroups x rows_per_wg), split_k (the
 * blocks of a cluster that share a tile's reduction), blocks_per_sm (1
 * to 3: the registers and shared memory that many blocks need per SM) and
 * persistent (0: a block per tile; 1: as many blocks as fit the GPU at
 * once, each looping over tiles, its consumer warpgroups sharing each
 * tile; 2: the same in ping-pong, the consumer warpgroups (2 to 4) taking
 * tiles of rows_per_wg rows in turn, so that the others' epilogues overlap
 * one's mainloop); with 8-bit output, out_stage (0: each thread stores
 * its 4-byte pieces; 1: each warp stages its rows in shared memory and
 * stores them as 16-byte chunks) and tile_requant (0: the requantization's
 * form, fast or general, chosen per pair of channel groups; 1: once per
 * tile and warp, so that the whole epilogue is one straight-line block:
 * faster where a block runs many tiles, but its extra registers can keep
 * the next launch's block off the SM, wgmma_epilogue.cuh; gemmlowp
 * rounding only: onnx rounding has one form); w_early (1: the producer
 * loads the weights of the block's first stage before griddepcontrol.wait,
 * under the previous kernel's tail in a chain; it helps some layers and
 * costs others 2-6% alone, so the tuner decides).
 *
 * What it runs (supports): layout nhwc / ndhwc, int8 weights, groups 1;
 * C a multiple of 16 (TMA's strides are 16-byte multiples: the stems run
 * on the packed templates), K a multiple of 8 (whole 8-channel store
 * groups); strides at most 8 (TMA's traversal strides); the im2col
 * bounding box within TMA's corner ranges ([-128, 127] in 2D, [-16, 15] in
 * 3D); no weight zero points, no depth_to_space; a data zero point with
 * padding where the layer has at most CTZ_MAX_CLASSES border classes (TMA
 * pads with zeros; the params block carries each class's correction,
 * core/zpad.cuh).
 *
 * Validity, before any compile: exactly sm_90 (sm_90a); accumulators
 * (rows_per_wg / 64 x block_n / 2 per consumer thread, at most 128) within
 * the registers; shared memory within the opt-in limit; tiles not larger
 * than twice what the layer has; k_slices dividing the reduction's slices
 * (taps x ceil(C / block_k)); split_k leaving each rank pairs of
 * 8-channel groups (the stores pair them) and giving every split a stage;
 * blocks_per_sm blocks fitting an SM's registers, shared memory, threads;
 * persistent with split_k 1, ping-pong with two to four consumer
 * warpgroups and the others with one or two, and
 * cooperative only where the tiles outnumber the blocks that fit at once
 * (otherwise it is the plain schedule).
 */
#include <stdio.h>
#include <string.h>

#include "core/quant.h"
#include "core/zpad.cuh"
#include "templates/template.h"

#define WN_STR_(x) #x
#define WN_STR(x) WN_STR_(x)

/* Addresses, loop counters, pipeline indices, params: a lower bound. */
#define WN_REG_OVERHEAD 40

static const int block_ns[] = {64, 128, 256};
static const int block_ks[] = {32, 64, 128};
static const int stage_counts[] = {2, 3, 4, 5, 6, 8};
static const int k_slice_counts[] = {1, 2, 3, 4};
static const int warpgroups[] = {1, 2, 3, 4};
static const int rows_per_wgs[] = {64, 128};
static const int split_ks[] = {1, 2, 4, 8};
static const int blocks_per_sms[] = {1, 2, 3};
static const int persistents[] = {0, 1, 2};
static const int zero_one[] = {0, 1};

static int out8(const ct_workload *w) {
  return w->out_type != CT_DTYPE_INT32;
}

/* onnx rounding has one form (wgmma_epilogue.cuh): the knob would only
 * double the space */
static int out8_gemmlowp(const ct_workload *w) {
  return out8(w) && w->epi.rounding == CT_ROUND_GEMMLOWP;
}

static const knob_def knobs[] = {
    KNOB("block_n", block_ns, 128),
    KNOB("block_k", block_ks, 128),
    KNOB("k_slices", k_slice_counts, 1),
    KNOB("stages", stage_counts, 4),
    KNOB("warpgroups", warpgroups, 2),
    KNOB("rows_per_wg", rows_per_wgs, 64),
    KNOB("split_k", split_ks, 1),
    KNOB("blocks_per_sm", blocks_per_sms, 1),
    KNOB("persistent", persistents, 0),
    KNOB_IF("out_stage", zero_one, 0, out8),
    KNOB_IF("tile_requant", zero_one, 0, out8_gemmlowp),
    KNOB("w_early", zero_one, 0),
    KNOB_END,
};

typedef struct nplan {
  int bn, bk, ks, stages, cwg, mw, split, minb, persist, ostage, treq;
  long bm, m_total, tiles_m, tiles_n, threads, acc, regs, smem_bytes, kt, kt_split;
  long slices;   /* block_k slices of the reduction: taps x ceil(C / block_k) */
  long resident; /* blocks that fit the GPU at once (0: the SM count is unknown) */
  long blocks;   /* grid x: tiles_m, or for persistent blocks min(tiles, resident) */
} nplan;

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

static const char *refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NHWC)
    return op == CT_OP_CONV2D ? "it needs layout nhwc" : "it needs layout ndhwc";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups != 1) return "it runs groups = 1 only";
  if (w->epi.d2s_block) return "depth_to_space runs on the dp4a templates";
  if (w->epi.weight_zero_point) return "weight zero points run on the packed templates";
  if (w->c % 16)
    return "C must be a multiple of 16 (TMA's pixel stride is a 16-byte multiple); stems run on "
           "the packed templates";
  if (w->k % 8) return "K must be a multiple of 8 (the stores write whole 8-channel groups)";
  geom3 g;
  workload_geom(w, &g);
  const long lim = op == CT_OP_CONV3D ? 16 : 128;
  int pad = 0;
  for (int d = 0; d < 3; d++) {
    if (g.str[d] > 8) return "a stride above 8 (TMA's traversal strides stop at 8)";
    const long lower = -g.pb[d], upper = g.pa[d] - g.dil[d] * (g.ker[d] - 1);
    if (lower < -lim || lower >= lim || upper < -lim || upper >= lim)
      return op == CT_OP_CONV3D
                 ? "padding or kernel extent outside TMA's im2col box corners ([-16, 15] in 3D)"
                 : "padding or kernel extent outside TMA's im2col box corners ([-128, 127])";
    if (g.dil[d] * (g.ker[d] - 1) > 255) return "a kernel extent above 255 (im2col offsets)";
    pad += (int)(g.pb[d] + g.pa[d]);
  }
  if (w->epi.data_zero_point && pad && !quant_zpad_classes(w))
    return "a data zero point with padding and more than " WN_STR(CTZ_MAX_CLASSES)
           " border classes (TMA pads with zeros; the params block corrects each class): the "
           "packed templates run it";
  return NULL;
}

static void make_plan(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                      nplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->bn = knobs_get(knobs, s, cfg, "block_n");
  p->bk = knobs_get(knobs, s, cfg, "block_k");
  p->ks = knobs_get(knobs, s, cfg, "k_slices");
  p->stages = knobs_get(knobs, s, cfg, "stages");
  p->cwg = knobs_get(knobs, s, cfg, "warpgroups");
  p->mw = knobs_get(knobs, s, cfg, "rows_per_wg");
  p->split = knobs_get(knobs, s, cfg, "split_k");
  p->minb = knobs_get(knobs, s, cfg, "blocks_per_sm");
  p->persist = knobs_get(knobs, s, cfg, "persistent");
  p->ostage = knobs_get(knobs, s, cfg, "out_stage");
  p->treq = knobs_get(knobs, s, cfg, "tile_requant");
  p->bm = p->persist == 2 ? p->mw : (long)p->mw * p->cwg; /* ping-pong: a warpgroup's tile */
  p->m_total = g.n * g.out[0] * g.out[1] * g.out[2];
  p->tiles_m = ceil_div(p->m_total, p->bm);
  p->tiles_n = ceil_div(g.k, p->bn);
  p->threads = 128L * (p->cwg + 1);
  p->acc = (long)(p->mw / 64) * (p->bn / 2);
  p->regs = p->acc + WN_REG_OVERHEAD;
  /* the stages, or the partial sums of split-K where they are larger; the
   * barriers (ping-pong: one more per warpgroup, its turn, rounded up to
   * 16 bytes); the channel
   * tables; 1024 bytes to align the swizzled stages (conv_wgmma_nhwc.cuh) */
  long pipe = (long)p->stages * p->ks * (p->bm + p->bn) * p->bk;
  long red = p->split > 1 ? 128L * p->cwg * p->acc * 4 : 0;
  /* 8-bit output: each consumer warpgroup's channel table, with out_stage
   * its 4 warps' slabs of 16 rows per m64 block (wgmma_epilogue.cuh) */
  const long tab =
      w->out_type != CT_DTYPE_INT32
          ? p->cwg * ((long)p->bn * 24 + (p->ostage ? 4L * 16 * (p->mw / 64) * (p->bn + 16) : 0))
          : 0;
  p->smem_bytes = (pipe > red ? pipe : red) + 16L * p->stages +
                  (p->persist == 2 ? 16L * ((p->cwg + 1) / 2) : 0) + tab + 1024;
  p->slices = g.ker[0] * g.ker[1] * g.ker[2] * ceil_div(g.c, p->bk);
  p->kt = p->slices / p->ks;
  p->kt_split = ceil_div(p->kt, p->split);
  p->resident = a && a->sm_count > 0 ? (long)a->sm_count * p->minb : 0;
  p->blocks = p->tiles_m;
  if (p->persist) {
    const long tiles = p->tiles_m * p->tiles_n;
    p->blocks = p->resident > 0 && p->resident < tiles ? p->resident : tiles;
  }
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  nplan p;
  make_plan(w, s, cfg, a, &p);
  geom3 g;
  workload_geom(w, &g);
  if (!template_need_sm90(a, why)) return 0;
  if (!template_acc_fits(p.acc, "rows_per_wg", p.mw, why)) return 0;
  if (!template_tile_fits("block_k", p.bk, 32, g.c, "channels", why) ||
      !template_tile_fits("block_m", p.bm, 64, p.m_total, "output pixels", why) ||
      !template_tile_fits("block_n", p.bn, 64, g.k, "channels", why))
    return 0;
  if (p.slices % p.ks)
    return template_fail(why, "k_slices %ld does not divide the %ld slices of the reduction", p.ks,
                         p.slices);
  if ((p.bn / 8) % (2 * p.split))
    return template_fail(why,
                         "split_k %ld does not leave each rank pairs of the %ld 8-channel groups",
                         p.split, p.bn / 8);
  if (p.persist && p.split > 1)
    return template_fail(why, "persistent blocks take whole tiles: split_k %ld needs persistent 0",
                         p.split, 0);
  if (p.persist == 2 && p.cwg < 2)
    return template_fail(why, "ping-pong (persistent 2) needs 2 to 4 consumer warpgroups, not %ld",
                         p.cwg, 0);
  if (p.persist != 2 && p.cwg > 2)
    return template_fail(why, "%ld consumer warpgroups run ping-pong (persistent 2) only", p.cwg,
                         0);
  if (p.persist == 1 && p.resident > 0 && p.tiles_m * p.tiles_n <= p.resident)
    return template_fail(
        why, "persistent 1 with %ld tiles for %ld resident blocks is the plain schedule",
        p.tiles_m * p.tiles_n, p.resident);
  if ((p.split - 1) * p.kt_split >= p.kt)
    return template_fail(why, "split_k %ld over %ld stages of the reduction leaves a split empty",
                         p.split, p.kt);
  if (!template_blocks_fit(a, p.threads, p.minb, p.smem_bytes, why) ||
      !template_regs_fit(a, p.threads, p.minb, p.regs, why))
    return 0;
  if (p.tiles_m > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p.tiles_m, 2147483647L);
  if (p.tiles_n > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p.tiles_n, 65535);
  return 1;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  (void)a;
  nplan p;
  make_plan(w, s, cfg, a, &p);
  geom3 g;
  workload_geom(w, &g);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_wgmma_nhwc");
  inst->n_options = 0;
  instance_conv_options(inst, w);
  knobs_options(knobs, s, cfg, inst);
  /* a 1x1 layer at stride 1 without padding reads its data as the matrix
   * it is, (C, pixels), by tiled copies: the same bytes as im2col's, a
   * little faster (ResNet-50 b16's 1x1 layers 0-4%, H200) */
  const long taps = g.ker[0] * g.ker[1] * g.ker[2];
  int pad = 0, str = 1;
  for (int d = 0; d < 3; d++) pad += (int)(g.pb[d] + g.pa[d]), str *= (int)g.str[d];
  const int atile = taps == 1 && str == 1 && pad == 0 && p.m_total < 2147483648L;
  instance_opt(inst, "WG_ATILE", atile);
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_wgmma_nhwc: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  inst->grid[0] = (unsigned)p.blocks;
  inst->grid[1] = p.persist ? 1 : (unsigned)p.tiles_n;
  inst->grid[2] = (unsigned)p.split;
  inst->block[0] = (unsigned)p.threads;
  inst->block[1] = inst->block[2] = 1;
  inst->smem_bytes = (size_t)p.smem_bytes;
  inst->arch_specific = 1;
  inst->pdl = 1; /* the kernel waits on griddepcontrol before touching memory */
  instance_conv_args(inst);

  /* the data: (C, W, H[, D], N) bytes in im2col mode, the bounding box
   * where tap 0 of an output pixel reads, pixels of block_m per copy; or,
   * tiled (atile), (C, pixels) bytes, a box of block_k x block_m */
  const int nd = w->op == CT_OP_CONV3D ? 3 : 2;
  tmap_desc *t = &inst->tmap;
  if (atile) {
    tmap_tiled2(t, 1, p.bk, (unsigned long long)g.c, (unsigned long long)p.m_total, (unsigned)p.bk,
                (unsigned)p.bm);
  } else {
    t->rank = nd + 2;
    t->elem_bytes = 1;
    t->swizzle = p.bk;
    t->im2col = 1;
    t->channels = (unsigned)p.bk;
    t->pixels = (unsigned)p.bm;
    t->dims[0] = (unsigned long long)g.c;
    t->elem_strides[0] = 1;
    unsigned long long stride = (unsigned long long)g.c;
    for (int i = 0; i < nd; i++) {
      const int d = 2 - i; /* W, H, then D: geom3 holds (D, H, W) */
      t->dims[1 + i] = (unsigned long long)g.in[d];
      t->strides[i] = stride;
      stride *= (unsigned long long)g.in[d];
      t->elem_strides[1 + i] = (unsigned)g.str[d];
      t->lower[i] = (int)-g.pb[d];
      t->upper[i] = (int)(g.pa[d] - g.dil[d] * (g.ker[d] - 1));
    }
    t->dims[nd + 1] = (unsigned long long)g.n;
    t->strides[nd] = stride;
    t->elem_strides[nd + 1] = 1;
  }
  inst->args[inst->n_args++] = ARG_DATA_TMAP;

  /* the weights: (C, taps, K) bytes, a box of block_k x 1 x block_n */
  tmap_desc *u = &inst->wtmap;
  u->rank = 3;
  u->elem_bytes = 1;
  u->swizzle = p.bk;
  const unsigned long long wdims[3] = {(unsigned long long)g.c, (unsigned long long)taps,
                                       (unsigned long long)g.k};
  const unsigned long long wstrides[2] = {(unsigned long long)g.c,
                                          (unsigned long long)(g.c * taps)};
  const unsigned wbox[3] = {(unsigned)p.bk, 1, (unsigned)p.bn};
  memcpy(u->dims, wdims, sizeof wdims);
  memcpy(u->strides, wstrides, sizeof wstrides);
  memcpy(u->box, wbox, sizeof wbox);
  for (int i = 0; i < 3; i++) u->elem_strides[i] = 1;
  inst->args[inst->n_args++] = ARG_WEIGHTS_TMAP;
  return CT_OK;
}

/* Derived sizes for the cost model, log2-scaled where they span decades. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  nplan p;
  make_plan(w, s, cfg, NULL, &p);
  const double v[] = {p.threads,
                      p.acc,
                      p.regs,
                      p.smem_bytes + 1,
                      p.tiles_m,
                      p.tiles_n,
                      p.kt + 1,
                      (double)p.tiles_m * p.tiles_n * p.split,
                      p.bm,
                      p.bn,
                      p.stages,
                      p.bk,
                      p.split,
                      p.kt_split,
                      (double)p.tiles_m * p.bm / (double)p.m_total,
                      p.minb,
                      p.persist + 1,
                      p.ostage + 1,
                      p.ks,
                      p.treq + 1};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning: two consumer warpgroups of 64 rows, 4 stages
 * of the widest block_k that C fills, 8-bit output staged and requantized
 * in one form per tile, the widest N
 * tile that still gives
 * every SM a block; then, where the grid leaves more than half the SMs
 * idle, the split-K that fills them. */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  static const int bns[] = {128, 64, 256};
  static const int bks[] = {128, 64, 32};
  long sms = a->sm_count > 0 ? a->sm_count : 132;
  int found = 0;
  double best = 0;
  config c;
  memset(&c, 0, sizeof c);
  for (int ib = 0; ib < 3; ib++)
    for (int ik = 0; ik < 3; ik++)
      for (int iw = 0; iw < 2; iw++) {
        if (!(template_set_choice(s, &c, "block_n", bns[ib]) &&
              template_set_choice(s, &c, "block_k", bks[ik]) &&
              template_set_choice(s, &c, "k_slices", 1) &&
              template_set_choice(s, &c, "stages", 4) &&
              template_set_choice(s, &c, "warpgroups", 2 - iw) &&
              template_set_choice(s, &c, "rows_per_wg", 64) &&
              template_set_choice(s, &c, "split_k", 1) &&
              template_set_choice(s, &c, "blocks_per_sm", 1) &&
              template_set_choice(s, &c, "persistent", 0) &&
              (space_find(s, "out_stage") < 0 || template_set_choice(s, &c, "out_stage", 1)) &&
              (space_find(s, "tile_requant") < 0 ||
               template_set_choice(s, &c, "tile_requant", 1)) &&
              template_set_choice(s, &c, "w_early", 0)))
          continue;
        if (!valid(w, s, &c, a, NULL)) continue;
        nplan p;
        make_plan(w, s, &c, a, &p);
        /* share of computed pixels that exist, whether the SMs fill, wider block_k */
        double used = (double)p.m_total / ((double)p.tiles_m * p.bm);
        double score =
            used * (p.tiles_m * p.tiles_n >= sms ? 2.0 : 1.0) - 0.01 * ib - 0.001 * ik - 0.02 * iw;
        if (!found || score > best) {
          *out = c;
          best = score;
          found = 1;
        }
      }
  if (!found) return 0;
  nplan p;
  make_plan(w, s, out, a, &p);
  template_grow_split(w, s, a, p.tiles_m * p.tiles_n, sms, valid, out);
  return 1;
}

TEMPLATE_PAIR(conv2d_nhwc_wgmma, conv3d_ndhwc_wgmma, CT_LAYOUT_NHWC, knobs, refusal, valid,
              make_instance, describe, preferred);
