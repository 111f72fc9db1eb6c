/*
 * conv_dw_mma.c: the C descriptors of two families on one kernel body
 * (conv_dw_mma.cuh), channels-last on int8 mma.sync with a block-diagonal
 * B: conv2d_nhwc_dw_mma / conv3d_ndhwc_dw_mma, depthwise (G = C = K, C a
 * multiple of 8), and conv2d_nhwc_grouped_mma / conv3d_ndhwc_grouped_mma,
 * grouped layers of at most 32 input channels a group (ResNeXt's 4 to 32;
 * depthwise with a channel multiplier) and dense ones of 8, 16 or 32 input
 * channels (one group: MobileNetV2's narrow pointwise layers). Their knob
 * spaces, validity, the instances, the features for the cost model and
 * defaults.
 *
 * Knobs: tile_w, tile_h (a block's output columns and rows), n_tiles (its
 * output channels in eights), warps_m (warps along the pixels per n-tile
 * column), m_unroll (m-tiles of 16 pixels a warp computes at once),
 * blocks_per_sm (launch bounds), tiles (consecutive tiles a block runs,
 * the next one's window loading while one computes) and tma (1: each
 * window one TMA copy; 0: cp.async, 8 bytes a thread at a time). The
 * grouped family adds sg_c (8, 16, 32: the input channels of a
 * super-group, whole groups, that an mma's 32 bytes of K take as 32 / sg_c
 * taps) and n_per_warp (1, 2, 4: a warp's n-tiles, of one super-group,
 * sharing its A fragments); depthwise is sg_c 8, n_per_warp 1.
 *
 * Validity (each a fact of the kernel): sm_80 or later; tma on sm_90,
 * without a data zero point (the copy pads with zeros), with 16 input
 * channels a block or more, C a multiple of 16 and no depth dilation; at
 * most 1024 threads; tiles of whole m-tiles (16 pixels); at least warps_m
 * x m_unroll m-tiles, so that no warp idles; tiles at most the layer's;
 * the staged windows (two where tiles > 1) and the output tile within
 * shared memory; a register estimate within what blocks_per_sm blocks
 * leave; tiles not larger than twice the layer; grid y within 65535;
 * grouped: a super-group of whole groups dividing the groups, with a
 * multiple of 8 output channels, that a block holds whole (or that holds
 * the block), n_per_warp n-tiles within one, at most 27 k-steps. Cost: a
 * few dozen operations.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* Addresses, loop counters, tile coordinates, the header and two
 * channels' epilogue values. */
#define DWM_REG_BASE     80
#define DWM_REG_BASE_TMA 54
/* k-steps (kernel rows of 32 / sg_c columns; depthwise kd x kh x ceil(kw /
 * 4)): 7x7 takes 14, 3x3x3 9; the B fragments of more would crowd the
 * registers. */
#define DWM_MAX_KSTEPS 16
/* grouped: 3x3x3 at 32 channels a tap (27), one n-tile a warp */
#define GMM_MAX_KSTEPS 27

static const int tile_ws[] = {4, 8, 16, 32};
static const int tile_hs[] = {1, 2, 4, 8, 16};
static const int n_tiless[] = {1, 2, 4, 8};
static const int warps_ms[] = {1, 2, 4, 8};
static const int m_unrolls[] = {1, 2, 4};
static const int blocks_per_sms[] = {1, 2, 3, 4, 6, 8};
static const int tiless[] = {1, 2, 4, 8};
static const int zero_one[] = {0, 1};
static const int sg_cs[] = {8, 16, 32};
static const int n_per_warps[] = {1, 2, 4};

static const knob_def knobs[] = {
    KNOB("tile_w", tile_ws, 16),
    KNOB("tile_h", tile_hs, 4),
    KNOB("n_tiles", n_tiless, 4),
    KNOB("warps_m", warps_ms, 1),
    KNOB("m_unroll", m_unrolls, 2),
    KNOB("blocks_per_sm", blocks_per_sms, 2),
    KNOB("tiles", tiless, 2),
    KNOB("tma", zero_one, 0),
    KNOB_END,
};

/* The grouped family's: depthwise's, then the super-group and the n-tiles
 * a warp. */
static const knob_def gknobs[] = {
    KNOB("tile_w", tile_ws, 8),
    KNOB("tile_h", tile_hs, 8),
    KNOB("n_tiles", n_tiless, 4),
    KNOB("warps_m", warps_ms, 2),
    KNOB("m_unroll", m_unrolls, 1),
    KNOB("blocks_per_sm", blocks_per_sms, 2),
    KNOB("tiles", tiless, 2),
    KNOB("tma", zero_one, 0),
    KNOB("sg_c", sg_cs, 32),
    KNOB("n_per_warp", n_per_warps, 1),
    KNOB_END,
};

static const char *refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NHWC)
    return op == CT_OP_CONV2D ? "it needs layout nhwc" : "it needs layout ndhwc";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups != w->c || w->k != w->c)
    return "it runs depthwise layers without a channel multiplier only (groups == C == K)";
  if (w->c % 8) return "C must be a multiple of 8 (an mma n-tile of 8 channels)";
  if (w->epi.d2s_block) return "depth_to_space runs on the dp4a templates";
  if (w->epi.weight_zero_point) return "weight zero points run on the packed templates";
  geom3 g;
  workload_geom(w, &g);
  if (g.ker[0] * g.ker[1] * ((g.ker[2] + 3) / 4) > DWM_MAX_KSTEPS)
    return "more than 16 k-steps (kernel depth x height x ceil(width / 4)): the B fragments "
           "would crowd the registers";
  return NULL;
}

/* A super-group of sgc input channels for w: whole groups, a number of
 * them dividing the groups, with a multiple of 8 output channels. */
static int sg_fits(const ct_workload *w, long sgc) {
  const long cpg = w->c / w->groups, kpg = w->k / w->groups;
  return sgc % cpg == 0 && w->groups % (sgc / cpg) == 0 && (sgc / cpg * kpg) % 8 == 0;
}

/* The k-steps of a super-group of sgc channels: kernel rows of 32 / sgc
 * columns. */
static long ksteps(const geom3 *g, long sgc) {
  const long tpk = 32 / sgc;
  return g->ker[0] * g->ker[1] * ((g->ker[2] + tpk - 1) / tpk);
}

static const char *grouped_refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NHWC)
    return op == CT_OP_CONV2D ? "it needs layout nhwc" : "it needs layout ndhwc";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups <= 1 && w->c != 8 && w->c != 16 && w->c != 32)
    return "it runs grouped layers, and dense ones (groups 1) of 8, 16 or 32 input channels "
           "only (a super-group)";
  if (w->groups == w->c && w->k == w->c)
    return op == CT_OP_CONV2D
               ? "depthwise without a channel multiplier runs on conv2d_nhwc_dw_mma"
               : "depthwise without a channel multiplier runs on conv3d_ndhwc_dw_mma";
  if (w->c % 8 || w->k % 8) return "C and K must be multiples of 8 (mma n-tiles of 8 channels)";
  if (w->c / w->groups > 32)
    return "more than 32 input channels a group: the implicit-GEMM templates run the group as a "
           "grid dimension";
  if (w->epi.d2s_block) return "depth_to_space runs on the dp4a templates";
  if (w->epi.weight_zero_point) return "weight zero points run on the packed templates";
  geom3 g;
  workload_geom(w, &g);
  long best = 0; /* the fewest k-steps of a super-group that fits */
  for (int i = 0; i < 3; i++)
    if (sg_fits(w, sg_cs[i]) && (!best || ksteps(&g, sg_cs[i]) < best)) best = ksteps(&g, sg_cs[i]);
  if (!best)
    return "no super-group of 8, 16 or 32 input channels holds whole groups, divides the "
           "groups and has a multiple of 8 output channels";
  if (best > GMM_MAX_KSTEPS)
    return "more than 27 k-steps (kernel depth x height x ceil(width / taps a k-step)): the B "
           "fragments would crowd the registers";
  return NULL;
}

typedef struct dmplan {
  int grouped; /* the grouped family (else depthwise: sg_c 8, n_per_warp 1) */
  int tw, th, nt, wm, mu, minb, tiles, tma, sgc, npw;
  long cpg, kpg, sgk, cb_in, tpk, kwp;
  long kvol, ks, cb, threads, tpix, mt, www, whh, ps, win, esz, ops, otile, smem_bytes;
  long regs, n_tiles_all, grid_x, grid_y, tiles_pix, m_total, window_pix;
} dmplan;

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

/* The sizes of conv_dw_mma.cuh, macro for macro; grouped picks the knob
 * table. */
static void make_plan(const ct_workload *w, int grouped, const space *s, const config *cfg,
                      dmplan *p) {
  geom3 g;
  workload_geom(w, &g);
  const knob_def *kt = grouped ? gknobs : knobs;
  p->grouped = grouped;
  p->tw = knobs_get(kt, s, cfg, "tile_w");
  p->th = knobs_get(kt, s, cfg, "tile_h");
  p->nt = knobs_get(kt, s, cfg, "n_tiles");
  p->wm = knobs_get(kt, s, cfg, "warps_m");
  p->mu = knobs_get(kt, s, cfg, "m_unroll");
  p->minb = knobs_get(kt, s, cfg, "blocks_per_sm");
  p->tiles = knobs_get(kt, s, cfg, "tiles");
  p->tma = knobs_get(kt, s, cfg, "tma");
  p->sgc = grouped ? knobs_get(kt, s, cfg, "sg_c") : 8;
  p->npw = grouped ? knobs_get(kt, s, cfg, "n_per_warp") : 1;
  const long groups = w->groups > 0 ? w->groups : 1;
  p->cpg = g.c / groups;
  p->kpg = g.k / groups;
  /* a super-group's output channels; valid() refuses an sgc of part groups */
  p->sgk = p->cpg > 0 ? p->sgc / p->cpg * p->kpg : 0;
  p->cb = 8L * p->nt;
  p->cb_in = p->sgk > 0 && p->cb >= p->sgk ? p->cb / p->sgk * p->sgc : p->sgc;
  p->tpk = 32 / p->sgc;
  p->kwp = ceil_div(g.ker[2], p->tpk) * p->tpk;
  p->kvol = g.ker[0] * g.ker[1] * g.ker[2];
  p->ks = ksteps(&g, p->sgc);
  p->threads = 32L * (p->nt / p->npw > 0 ? p->nt / p->npw : 1) * p->wm;
  p->tpix = (long)p->tw * p->th;
  p->mt = ceil_div(p->tpix, 16);
  p->www = (p->tw - 1) * g.str[2] + (g.ker[2] - 1) * g.dil[2] + 1;
  p->whh = (p->th - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  p->ps = p->tma ? p->cb_in : p->cb_in == 8 ? 8 : p->cb_in + 8;
  p->window_pix = g.ker[0] * p->whh * p->www;
  const long al = p->tma ? 128 : 16; /* a TMA destination is 128-byte aligned */
  p->win = ceil_div(p->window_pix * p->ps + (p->kwp - g.ker[2]) * g.dil[2] * p->ps, al) * al;
  p->esz = w->out_type == CT_DTYPE_INT32 ? 4 : 1;
  p->ops = p->esz == 4 ? p->cb * 4 + (p->cb > 8 ? 32 : 0) : p->cb <= 16 ? p->cb : p->cb + 16;
  p->otile = p->mt * 16 * p->ops;
  p->smem_bytes = (p->tiles > 1 ? 2 : 1) * p->win + p->otile + (p->tma ? 16 : 0);
  /* ptxas's counts (sm_90, int8 output, depthwise): about 80 (54 with
   * tma: no staging addresses) + 3 a k-step (B fragments and their loads),
   * and per further m-tile at once 5 + 1 a k-step (its accumulators, A
   * pair, bases and the interleaved loads); per further n-tile a warp 2 a
   * k-step (its B fragments), 4 an m-tile at once (accumulators) and 8
   * (its channels' epilogue values) */
  p->regs = (p->tma ? DWM_REG_BASE_TMA : DWM_REG_BASE) + 3 * p->ks + (p->mu - 1) * (5 + p->ks) +
            (p->npw - 1) * (2 * p->ks + 4 * p->mu + 8);
  p->n_tiles_all = g.n * g.out[0] * ceil_div(g.out[1], p->th) * ceil_div(g.out[2], p->tw);
  p->grid_x = ceil_div(p->n_tiles_all, p->tiles);
  p->grid_y = ceil_div(g.k, p->cb);
  p->tiles_pix = p->n_tiles_all * p->tpix;
  p->m_total = g.n * g.out[0] * g.out[1] * g.out[2];
}

static int plan_valid(const ct_workload *w, const dmplan *p, const arch *a, char *why) {
  geom3 g;
  workload_geom(w, &g);
  if (a->cc_major < 8)
    return template_fail(why, "int8 mma.sync needs sm_80 or later, not sm_%ld%ld", a->cc_major,
                         a->cc_minor);
  if (p->grouped) {
    if (!sg_fits(w, p->sgc))
      return template_fail(why,
                           "sg_c %ld: not whole groups of %ld channels, a number of them dividing "
                           "the groups, with a multiple of 8 output channels",
                           p->sgc, p->cpg);
    if (p->ks > GMM_MAX_KSTEPS)
      return template_fail(why, "sg_c %ld: %ld k-steps; at most 27", p->sgc, p->ks);
    if (p->nt % p->npw || p->sgk % (8L * p->npw))
      return template_fail(why,
                           "n_per_warp %ld: n-tiles of one super-group (%ld channels) dividing "
                           "n_tiles",
                           p->npw, p->sgk);
    if (p->cb % p->sgk && p->sgk % p->cb)
      return template_fail(why,
                           "n_tiles x 8 = %ld channels: whole super-groups of %ld, or part of "
                           "one",
                           p->cb, p->sgk);
  }
  if (p->threads > a->max_threads_per_block)
    return template_fail(why, "%ld threads per block; at most %ld", p->threads,
                         a->max_threads_per_block);
  if (p->tma && a->cc_major < 9)
    return template_fail(why, "tma needs sm_90 or later, not sm_%ld%ld", a->cc_major, a->cc_minor);
  if (p->tma && (w->epi.data_zero_point || p->cb_in % 16 || w->c % 16 || g.dil[0] != 1))
    return template_fail(why,
                         p->grouped
                             ? "tma needs no data zero point (it pads with zeros), 16 input "
                               "channels a block or more (%ld), C a multiple of 16 and no depth "
                               "dilation (C %ld)"
                             : "tma needs no data zero point (it pads with zeros), n_tiles of 2 "
                               "or more (%ld channels), C a multiple of 16 and no depth dilation "
                               "(C %ld)",
                         p->cb_in, w->c);
  if (p->tpix % 16)
    return template_fail(why, "a tile of %ld pixels; whole m-tiles of %ld", p->tpix, 16);
  if (p->mt < (long)p->wm * p->mu)
    return template_fail(why, "%ld m-tiles of 16 pixels for warps_m x m_unroll %ld: warps idle",
                         p->mt, (long)p->wm * p->mu);
  if (p->tiles > p->n_tiles_all)
    return template_fail(why, "tiles %ld a block where the layer has %ld", p->tiles,
                         p->n_tiles_all);
  if (!template_tile_fits("tile_w", p->tw, 4, g.out[2], "output columns", why) ||
      !template_tile_fits("tile_h", p->th, 1, g.out[1], "output rows", why) ||
      !template_tile_fits("n_tiles x 8", p->cb, 8, g.k, "channels", why) ||
      !template_blocks_fit(a, p->threads, p->minb, p->smem_bytes, why) ||
      !template_regs_fit(a, p->threads, p->minb, p->regs, why))
    return 0;
  if (p->grid_y > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p->grid_y, 65535);
  if (p->n_tiles_all > 2147483647L)
    return template_fail(why, "%ld tiles; at most %ld", p->n_tiles_all, 2147483647L);
  return 1;
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  dmplan p;
  make_plan(w, 0, s, cfg, &p);
  return plan_valid(w, &p, a, why);
}

static int grouped_valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                         char *why) {
  dmplan p;
  make_plan(w, 1, s, cfg, &p);
  return plan_valid(w, &p, a, why);
}

static ct_status plan_instance(const ct_workload *w, const dmplan *p, const space *s,
                               const config *cfg, const arch *a, instance *inst, ct_err *err) {
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_dw_mma");
  inst->n_options = 0;
  ct_workload w1 = *w; /* the shape options of the dense layer: C stays C */
  w1.groups = 1;
  instance_conv_options(inst, &w1);
  instance_opt(inst, "GM_C", w->c);
  instance_opt(inst, "GM_CPG", p->cpg);
  instance_opt(inst, "GM_KPG", p->kpg);
  /* each knob as its upper-case macro; depthwise's super-group fixed */
  knobs_options(p->grouped ? gknobs : knobs, s, cfg, inst);
  if (!p->grouped) {
    instance_opt(inst, "SG_C", 8);
    instance_opt(inst, "N_PER_WARP", 1);
  }
  instance_opt(inst, "CT_THREADS", p->threads);
  instance_opt(inst, "CT_SMEM_BYTES", p->smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_dw_mma: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  inst->grid[0] = (unsigned)p->grid_x;
  inst->grid[1] = (unsigned)p->grid_y;
  inst->grid[2] = 1;
  inst->block[0] = (unsigned)p->threads;
  inst->block[1] = inst->block[2] = 1;
  inst->smem_bytes = (size_t)p->smem_bytes;
  inst->arch_specific = 0;
  /* sm_90: the kernel waits on griddepcontrol before touching memory */
  inst->pdl = a->cc_major >= 9;
  instance_conv_args(inst);
  if (p->tma) {
    /* the data as (C, W, H, D, N) bytes, tiled; a box is a tile's window:
     * CB_IN channels x its columns x rows x depth taps */
    geom3 g;
    workload_geom(w, &g);
    tmap_desc *t = &inst->tmap;
    memset(t, 0, sizeof *t);
    t->rank = 5;
    t->elem_bytes = 1;
    const unsigned long long dims[5] = {(unsigned long long)g.c, (unsigned long long)g.in[2],
                                        (unsigned long long)g.in[1], (unsigned long long)g.in[0],
                                        (unsigned long long)g.n};
    const unsigned box[5] = {(unsigned)p->cb_in, (unsigned)p->www, (unsigned)p->whh,
                             (unsigned)g.ker[0], 1};
    unsigned long long stride = 1;
    for (int i = 0; i < 5; i++) {
      t->dims[i] = dims[i];
      t->box[i] = box[i];
      t->elem_strides[i] = 1;
      if (i) t->strides[i - 1] = stride;
      stride *= dims[i];
    }
    inst->args[inst->n_args++] = ARG_DATA_TMAP;
  }
  return CT_OK;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  dmplan p;
  make_plan(w, 0, s, cfg, &p);
  return plan_instance(w, &p, s, cfg, a, inst, err);
}

static ct_status grouped_instance(const ct_workload *w, const space *s, const config *cfg,
                                  const arch *a, instance *inst, ct_err *err) {
  dmplan p;
  make_plan(w, 1, s, cfg, &p);
  return plan_instance(w, &p, s, cfg, a, inst, err);
}

/* Derived sizes for the cost model, log2-scaled: the window's pixels per
 * output pixel (the halo read again) and the share of computed pixels that
 * exist matter most to a memory-bound layer. */
static int plan_describe(const dmplan *p, float *out, int max) {
  const double v[] = {p->threads,
                      p->regs,
                      p->smem_bytes,
                      p->grid_x,
                      p->grid_y,
                      (double)p->grid_x * p->grid_y * p->threads,
                      p->tw,
                      p->th,
                      p->nt,
                      p->wm,
                      p->mu,
                      p->minb,
                      p->tiles,
                      p->tma + 1,
                      p->ks,
                      (double)p->window_pix / (double)p->tpix,
                      (double)p->mt * 16 / (double)p->tpix,
                      (double)p->m_total / (double)p->tiles_pix,
                      p->sgc,
                      p->npw,
                      p->cb_in};
  /* depthwise: the features it always had (sg_c, n_per_warp and cb_in
   * added by the grouped family) */
  const int n = (int)(sizeof v / sizeof v[0]) - (p->grouped ? 0 : 3);
  return template_features(v, n, out, max);
}

static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  dmplan p;
  make_plan(w, 0, s, cfg, &p);
  return plan_describe(&p, out, max);
}

static int grouped_describe(const ct_workload *w, const space *s, const config *cfg, float *out,
                            int max) {
  dmplan p;
  make_plan(w, 1, s, cfg, &p);
  return plan_describe(&p, out, max);
}

/* A default without tuning (a model; the GPU has not ranked these): time
 * ~ the bytes a block moves over the share of the GPU kept busy. Bytes:
 * the window it stages (the halo read again) and its output; the SMs kept
 * busy: the resident blocks (shared memory, threads) over the grid's
 * waves. Channels and pixels computed that do not exist are wasted; 32
 * input channels or more a block (a pixel's 32-byte sector whole) are
 * preferred, and tma where it is valid. Grouped: the mma work that meets
 * the block-diagonal's zeros or padded taps is counted against a config
 * (weight 0.2: the layers are memory-bound), and n_per_warp sharing the A
 * loads for it. */
static int plan_preferred(const ct_workload *w, int grouped, const space *s, const arch *a,
                          config *out) {
  config c;
  memset(&c, 0, sizeof c);
  int found = 0;
  double best = 0;
  const long sms = a->sm_count > 0 ? a->sm_count : 132;
  const long smem_sm = a->smem_per_sm_bytes > 0 ? a->smem_per_sm_bytes : 233472;
  const int n_sg = grouped ? 3 : 1, n_npw = grouped ? 3 : 1;
  geom3 g;
  workload_geom(w, &g);
  for (int isg = 0; isg < n_sg; isg++)
    for (int inp = 0; inp < n_npw; inp++)
      for (int iw = 0; iw < 4; iw++)
        for (int ih = 0; ih < 5; ih++)
          for (int in = 0; in < 4; in++)
            for (int im = 0; im < 4; im++)
              for (int iu = 0; iu < 3; iu++)
                for (int it = 0; it < 4; it++) {
                  /* tma where it is valid (the odd it), else cp.async */
                  if (!(template_set_choice(s, &c, "tiles", tiless[it / 2]) &&
                        template_set_choice(s, &c, "tma", it % 2) &&
                        template_set_choice(s, &c, "tile_w", tile_ws[iw]) &&
                        template_set_choice(s, &c, "tile_h", tile_hs[ih]) &&
                        template_set_choice(s, &c, "n_tiles", n_tiless[in]) &&
                        template_set_choice(s, &c, "warps_m", warps_ms[im]) &&
                        template_set_choice(s, &c, "m_unroll", m_unrolls[iu]) &&
                        template_set_choice(s, &c, "blocks_per_sm", 2)))
                    continue;
                  if (grouped && !(template_set_choice(s, &c, "sg_c", sg_cs[isg]) &&
                                   template_set_choice(s, &c, "n_per_warp", n_per_warps[inp])))
                    continue;
                  dmplan p;
                  make_plan(w, grouped, s, &c, &p);
                  if (!plan_valid(w, &p, a, NULL)) continue;
                  long blocks = smem_sm / (p.smem_bytes + 1024);
                  if (blocks > 2048 / p.threads) blocks = 2048 / p.threads;
                  if (blocks > 32) blocks = 32;
                  if (blocks < 1) continue;
                  const double used = (double)p.m_total / (double)p.tiles_pix;
                  const double kused = (double)w->k / (double)(p.grid_y * p.cb);
                  const double bytes =
                      (double)p.window_pix * p.cb_in + (double)p.tpix * p.cb * p.esz;
                  const double per_out = bytes / ((double)p.tpix * p.cb);
                  const double waves = (double)p.grid_x * p.grid_y / (double)(sms * blocks);
                  const double fill = waves >= 1 ? waves / (double)(long)(waves + 0.999999) : waves;
                  const double sector = p.cb_in >= 32 || p.cb_in >= w->c ? 1.0 : 0.7;
                  const double occ = blocks * p.threads >= 512 ? 1.0 : blocks * p.threads / 512.0;
                  /* cp.async's address arithmetic: about a fifth of the issue */
                  const double stage = p.tma ? 1.0 : 0.8;
                  double score = used * kused * fill * sector * occ * stage / per_out;
                  if (grouped) {
                    /* the useful share of the mma's K (own group's channels,
                     * real taps), the A loads shared by n_per_warp n-tiles */
                    const double own = (double)(p.kvol * p.cpg) / (double)(p.ks * 32);
                    const double loads = 2.0 / (2.0 + p.npw);
                    score *= 1.0 - 0.2 * (1.0 - own) - 0.1 * loads;
                  }
                  if (!found || score > best) {
                    *out = c;
                    best = score;
                    found = 1;
                  }
                }
  return found;
}

static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  return plan_preferred(w, 0, s, a, out);
}

static int grouped_preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  return plan_preferred(w, 1, s, a, out);
}

TEMPLATE_PAIR(conv2d_nhwc_dw_mma, conv3d_ndhwc_dw_mma, CT_LAYOUT_NHWC, knobs, refusal, valid,
              make_instance, describe, preferred);
TEMPLATE_PAIR(conv2d_nhwc_grouped_mma, conv3d_ndhwc_grouped_mma, CT_LAYOUT_NHWC, gknobs,
              grouped_refusal, grouped_valid, grouped_instance, grouped_describe,
              grouped_preferred);
