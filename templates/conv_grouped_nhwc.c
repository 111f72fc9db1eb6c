/*
 * conv_grouped_nhwc.c: the C descriptor of conv2d_nhwc_grouped and
 * conv3d_ndhwc_grouped (kernel body: conv_grouped_nhwc.cuh): channels-last
 * grouped and depthwise convolution on the CUDA cores, and the fallback of
 * a channels-last layer (G = 1) that no tensor-core template runs (none
 * takes weight zero points: every such layer is this template's, so the
 * dispatch always has one for a valid channels-last workload). Its knob
 * space, validity, the instance, the features for the cost model and a
 * default.
 *
 * Knobs: tile_w, tile_h, tile_d (3D) (the block's output tile), rows and
 * pix_w (a thread's output rows and columns), chans (its consecutive
 * output channels), block_k (the block's channels), vec (bytes a load:
 * 1 to 16), staging (1: the input window in shared memory; 0: direct loads
 * through L1) and blocks_per_sm (the launch bounds' minimum).
 *
 * Validity, before any compile (each a fact of the kernel): vec divides C,
 * and the bytes a thread loads per pixel (depthwise: chans; else the
 * group's chunk and C/G); 32 to 1024 threads; accumulators (rows x pix_w
 * x chans) at most 128 and a register estimate (with weight zero points
 * the window sums too) within what blocks_per_sm blocks leave; the staged
 * window within shared memory; tiles not larger than twice the layer; grid
 * y within 65535. Cost: a few dozen operations.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* Addresses, loop counters, tile coordinates, params: a lower bound. */
#define GR_REG_OVERHEAD 32

static const int tile_ws[] = {4, 8, 16, 32, 64};
static const int tile_hs[] = {1, 2, 4, 8, 16};
static const int tile_ds[] = {1, 2, 4};
static const int rows_s[] = {1, 2, 4};
static const int pix_ws[] = {1, 2, 4, 8};
static const int chans_s[] = {1, 2, 4, 8, 16};
static const int block_ks[] = {4, 8, 16, 32, 64, 128, 256};
static const int vecs[] = {1, 2, 4, 8, 16};
static const int zero_one[] = {0, 1};
static const int blocks_per_sms[] = {1, 2, 3, 4};

static const knob_def knobs[] = {
    KNOB("tile_w", tile_ws, 16),
    KNOB("tile_h", tile_hs, 4),
    KNOB_3D("tile_d", tile_ds, 1),
    KNOB("rows", rows_s, 2),
    KNOB("pix_w", pix_ws, 2),
    KNOB("chans", chans_s, 16),
    KNOB("block_k", block_ks, 32),
    KNOB("vec", vecs, 16),
    KNOB("staging", zero_one, 1),
    KNOB("blocks_per_sm", blocks_per_sms, 2),
    KNOB_END,
};

extern const template_desc tpl_conv2d_nhwc_wgmma, tpl_conv3d_ndhwc_wgmma;
extern const template_desc tpl_conv2d_nhwc_mma, tpl_conv3d_ndhwc_mma;
extern const template_desc tpl_conv2d_nhwc_wgmma_stem, tpl_conv3d_ndhwc_wgmma_stem;

static const char *refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NHWC)
    return op == CT_OP_CONV2D ? "it needs layout nhwc" : "it needs layout ndhwc";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups < 1 || w->c % w->groups || w->k % w->groups) return "groups must divide C and K";
  if (w->epi.d2s_block) return "depth_to_space runs on the dp4a templates";
  if (w->groups == 1) {
    /* the fallback only: a layer the tensor cores run is theirs to tune */
    const template_desc *tc2[] = {&tpl_conv2d_nhwc_wgmma, &tpl_conv2d_nhwc_mma,
                                  &tpl_conv2d_nhwc_wgmma_stem};
    const template_desc *tc3[] = {&tpl_conv3d_ndhwc_wgmma, &tpl_conv3d_ndhwc_mma,
                                  &tpl_conv3d_ndhwc_wgmma_stem};
    for (int i = 0; i < 3; i++)
      if ((op == CT_OP_CONV2D ? tc2 : tc3)[i]->supports(w, NULL))
        return "groups = 1 where a tensor-core channels-last template runs the layer";
  }
  return NULL;
}

typedef struct gplan {
  int tw, th, td, rows, pix, chans, bk, vec, staging, minb;
  long cpg, kpg, dw, cch, nvx, nb, threads, acc, regs, smem_bytes;
  long wdd, whh, www, cw, cwp, grid_x, grid_y, tiles_pix, m_total;
} gplan;

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

/* The sizes of conv_grouped_nhwc.cuh, macro for macro. */
static void make_plan(const ct_workload *w, const space *s, const config *cfg, gplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->tw = knobs_get(knobs, s, cfg, "tile_w");
  p->th = knobs_get(knobs, s, cfg, "tile_h");
  p->td = knobs_get(knobs, s, cfg, "tile_d");
  p->rows = knobs_get(knobs, s, cfg, "rows");
  p->pix = knobs_get(knobs, s, cfg, "pix_w");
  p->chans = knobs_get(knobs, s, cfg, "chans");
  p->bk = knobs_get(knobs, s, cfg, "block_k");
  p->vec = knobs_get(knobs, s, cfg, "vec");
  p->staging = knobs_get(knobs, s, cfg, "staging");
  p->minb = knobs_get(knobs, s, cfg, "blocks_per_sm");
  const long G = w->groups > 0 ? w->groups : 1;
  p->cpg = w->c / G;
  p->kpg = w->k / G;
  p->dw = p->cpg == 1 && p->kpg == 1;
  const long cpg4 = ceil_div(p->cpg, 4) * 4;
  p->cch = p->dw ? 4 : cpg4 < 32 ? cpg4 : 32;
  p->nvx = p->dw || p->kpg % p->chans == 0 ? 1 : p->chans;
  p->nb = p->dw ? p->chans : p->cch;
  p->threads = (long)(p->bk / p->chans) * (p->tw / p->pix) * (p->th / p->rows) * p->td;
  p->acc = (long)p->rows * p->pix * p->chans;
  /* accumulators, a tap's weights, one data vector, the 8-bit output words;
   * weight zero points: the window sums (a channel's each in depthwise, a
   * data vector's else) and the padded tap's words */
  const long wregs = p->dw ? p->chans : p->chans * p->cch / 4;
  const long xregs = w->epi.weight_zero_point
                         ? (long)p->rows * p->pix * (p->dw ? p->chans : p->nvx) + ceil_div(p->nb, 4)
                         : 0;
  p->regs = p->acc + wregs + ceil_div(p->nb, 4) + xregs + GR_REG_OVERHEAD;
  p->wdd = (p->td - 1) * g.str[0] + (g.ker[0] - 1) * g.dil[0] + 1;
  p->whh = (p->th - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  p->www = (p->tw - 1) * g.str[2] + (g.ker[2] - 1) * g.dil[2] + 1;
  const long ngs_raw = (p->bk + p->kpg - 2) / p->kpg + 1;
  const long ngs = ngs_raw < G ? ngs_raw : G;
  p->cw = p->dw ? p->bk : ngs * p->cpg;
  p->cwp = ceil_div(p->cw, 16) * 16;
  p->smem_bytes = p->staging ? p->wdd * p->whh * p->www * p->cwp : 0;
  p->grid_x =
      g.n * ceil_div(g.out[0], p->td) * ceil_div(g.out[1], p->th) * ceil_div(g.out[2], p->tw);
  p->grid_y = ceil_div(g.k, p->bk);
  p->tiles_pix = p->grid_x * p->td * p->th * p->tw;
  p->m_total = g.n * g.out[0] * g.out[1] * g.out[2];
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  gplan p;
  make_plan(w, s, cfg, &p);
  geom3 g;
  workload_geom(w, &g);
  if (a->cc_major < 6)
    return template_fail(why, "dp4a needs sm_61 or later, not sm_%ld%ld", a->cc_major, a->cc_minor);
  if (p.chans > p.bk || p.pix > p.tw || p.rows > p.th)
    return template_fail(why, "a thread's tile exceeds the block's (chans %ld, block_k %ld)",
                         p.chans, p.bk);
  if (w->c % p.vec) return template_fail(why, "vec %ld does not divide C %ld", p.vec, w->c);
  if (p.dw && p.chans % p.vec)
    return template_fail(why, "vec %ld does not divide chans %ld", p.vec, p.chans);
  if (!p.dw && (p.cch % p.vec || p.cpg % p.vec))
    return template_fail(why, "vec %ld does not divide the group's %ld channels", p.vec, p.cpg);
  if (p.threads < 32 || p.threads > a->max_threads_per_block)
    return template_fail(why, "%ld threads per block; 32 to %ld", p.threads,
                         a->max_threads_per_block);
  if (p.acc > 128)
    return template_fail(why, "%ld accumulators per thread (rows x pix_w x chans); at most %ld",
                         p.acc, 128);
  if (!template_tile_fits("tile_w", p.tw, 4, g.out[2], "output columns", why) ||
      !template_tile_fits("tile_h", p.th, 1, g.out[1], "output rows", why) ||
      !template_tile_fits("tile_d", p.td, 1, g.out[0], "output depths", why) ||
      !template_tile_fits("block_k", p.bk, 4, g.k, "channels", why) ||
      !template_blocks_fit(a, p.threads, p.minb, p.smem_bytes, why) ||
      !template_regs_fit(a, p.threads, p.minb, p.regs, why))
    return 0;
  if (p.grid_y > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p.grid_y, 65535);
  if (p.grid_x > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p.grid_x, 2147483647L);
  return 1;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  gplan p;
  make_plan(w, s, cfg, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_grouped_nhwc");
  inst->n_options = 0;
  /* the shape options with C rounded up to 4 (CT_C4, as conv_shape.cuh
   * checks it), the real C and the groups apart */
  ct_workload w4 = *w;
  w4.c = (w->c + 3) / 4 * 4;
  w4.groups = 1;
  instance_conv_options(inst, &w4);
  instance_opt(inst, "GR_C", w->c);
  instance_opt(inst, "GR_G", w->groups);
  knobs_options(knobs, s, cfg, inst);
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_grouped_nhwc: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  inst->grid[0] = (unsigned)p.grid_x;
  inst->grid[1] = (unsigned)p.grid_y;
  inst->grid[2] = 1;
  inst->block[0] = (unsigned)p.threads;
  inst->block[1] = inst->block[2] = 1;
  inst->smem_bytes = (size_t)p.smem_bytes;
  inst->arch_specific = 0;
  /* sm_90: the kernel waits on griddepcontrol before touching memory */
  inst->pdl = a->cc_major >= 9;
  instance_conv_args(inst);
  return CT_OK;
}

/* Derived sizes for the cost model, log2-scaled where they span decades:
 * the halo's read amplification (window / tile pixels) and the share of
 * computed pixels that exist matter most to a memory-bound layer. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  gplan p;
  make_plan(w, s, cfg, &p);
  const double halo = (double)(p.wdd * p.whh * p.www) / ((double)p.td * p.th * p.tw);
  const double v[] = {p.threads,
                      p.acc,
                      p.regs,
                      p.smem_bytes + 1,
                      p.grid_x,
                      p.grid_y,
                      (double)p.grid_x * p.grid_y * p.threads,
                      p.tw,
                      p.th,
                      p.td,
                      p.rows,
                      p.pix,
                      p.chans,
                      p.bk,
                      p.vec,
                      p.staging + 1,
                      p.minb,
                      halo,
                      p.cpg,
                      (double)p.m_total / (double)p.tiles_pix};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning, for the depthwise 3x3 / 5x5 layers: the widest
 * vector C allows, staging, then the config that wastes the fewest
 * computed pixels and channels, reads the least halo and fills the GPU
 * (at least 1024 threads per SM), preferring 64 or fewer registers. */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  config c;
  memset(&c, 0, sizeof c);
  int found = 0;
  double best = 0;
  const long sms = a->sm_count > 0 ? a->sm_count : 132;
  for (int iv = 4; iv >= 0 && !found; iv--)
    for (int st = 1; st >= 0; st--)
      for (int iw = 0; iw < 5; iw++)
        for (int ih = 0; ih < 5; ih++)
          for (int ir = 0; ir < 3; ir++)
            for (int ip = 0; ip < 4; ip++)
              for (int ic = 0; ic < 5; ic++)
                for (int ib = 0; ib < 7; ib++) {
                  if (!(template_set_choice(s, &c, "tile_w", tile_ws[iw]) &&
                        template_set_choice(s, &c, "tile_h", tile_hs[ih]) &&
                        template_set_choice(s, &c, "rows", rows_s[ir]) &&
                        template_set_choice(s, &c, "pix_w", pix_ws[ip]) &&
                        template_set_choice(s, &c, "chans", chans_s[ic]) &&
                        template_set_choice(s, &c, "block_k", block_ks[ib]) &&
                        template_set_choice(s, &c, "vec", vecs[iv]) &&
                        template_set_choice(s, &c, "staging", st) &&
                        template_set_choice(s, &c, "blocks_per_sm", 2)))
                    continue;
                  if (!valid(w, s, &c, a, NULL)) continue;
                  gplan p;
                  make_plan(w, s, &c, &p);
                  const double used = (double)p.m_total / (double)p.tiles_pix;
                  const double kused = (double)w->k / (double)(p.grid_y * p.bk);
                  const double halo =
                      (double)(p.wdd * p.whh * p.www) / ((double)p.td * p.th * p.tw);
                  const double fill = (double)p.grid_x * p.grid_y * p.threads / (sms * 1024.0);
                  double score = used * kused / (1.0 + 0.5 * (halo - 1.0)) * (fill < 1 ? fill : 1) *
                                 (p.regs <= 64 ? 1.0 : 0.8) * (st ? 1.0 : 0.7);
                  if (!found || score > best) {
                    *out = c;
                    best = score;
                    found = 1;
                  }
                }
  return found;
}

TEMPLATE_PAIR(conv2d_nhwc_grouped, conv3d_ndhwc_grouped, CT_LAYOUT_NHWC, knobs, refusal, valid,
              make_instance, describe, preferred);
