/*
 * conv_dw_ring.c: the C descriptor of conv2d_nhwc_dw_ring (kernel body:
 * conv_dw_ring.cuh): depthwise conv2d, channels-last, multiplier 1, dp4a
 * over a kernel row's taps, the input streamed through a ring of rows in
 * shared memory by cp.async. Its knob space, validity, the instance, the
 * features for the cost model and a default.
 *
 * Knobs: chans, pix, rows (a thread's consecutive output channels, its
 * output columns and the rows of one step), block_c, block_w (threads of a
 * block along channels and columns), steps (a block's steps: its strip is
 * steps x rows output rows), ahead (the steps whose rows are in flight
 * ahead of the compute) and blocks_per_sm (launch bounds).
 *
 * Validity (each a fact of the kernel): chans divides K; conv2d with the
 * multiplier 1 and no column dilation (conv_dw_nhwc's mac 1); whole warps,
 * 32 to 1024 threads; a register estimate within what blocks_per_sm blocks
 * leave; the ring within shared memory; tiles and strips not larger than
 * twice the layer; grid y within 65535.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* Addresses, loop counters, the ring's indices: a lower bound. */
#define RING_REG_OVERHEAD 28
/* As conv_dw_nhwc.c: the filters of 4 channels in registers */
#define RING_MAX_KVOL 49

static const int chans_s[] = {4, 8, 16};
static const int pix_s[] = {1, 2, 4, 8};
static const int rows_s[] = {1, 2, 4, 7, 8};
/* conv_dw_nhwc.c's: tiles that divide 3 x 2^n channels and 7 x 2^n sizes */
static const int block_cs[] = {1, 2, 4, 6, 8, 12, 16, 24, 32};
static const int block_ws[] = {1, 2, 4, 7, 8, 16, 32};
static const int steps_s[] = {1, 2, 4, 7, 8, 14, 16, 28, 56};
static const int aheads[] = {1, 2, 3, 4, 6};
static const int blocks_per_sms[] = {1, 2, 3, 4};
#define N_OF(a) ((int)(sizeof(a) / sizeof(a)[0]))

static const knob_def knobs[] = {
    KNOB("chans", chans_s, 4),
    KNOB("pix", pix_s, 2),
    KNOB("rows", rows_s, 2),
    KNOB("block_c", block_cs, 8),
    KNOB("block_w", block_ws, 8),
    KNOB("steps", steps_s, 14),
    KNOB("ahead", aheads, 3),
    KNOB("blocks_per_sm", blocks_per_sms, 4),
    KNOB_END,
};

static const char *refusal(const ct_workload *w, ct_op op) {
  if (op != CT_OP_CONV2D || w->op != CT_OP_CONV2D) return "it runs conv2d only";
  if (w->layout != CT_LAYOUT_NHWC) return "it needs layout nhwc";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups != w->c || w->c < 1 || w->k != w->c)
    return "it runs depthwise layers with the multiplier 1 only (groups == C == K)";
  if (w->k % 4) return "K must be a multiple of 4 (a thread's output channels are one vector)";
  if (w->epi.d2s_block) return "depth_to_space runs on the dp4a templates";
  if (w->epi.weight_zero_point) return "weight zero points run on the packed templates";
  geom3 g;
  workload_geom(w, &g);
  if (g.dil[2] != 1) return "it takes no column dilation (dp4a over consecutive taps)";
  if (g.ker[1] * g.ker[2] > RING_MAX_KVOL)
    return "a kernel volume above 49: the filters would not fit in registers";
  return NULL;
}

typedef struct rplan {
  int chans, pix, rows, bc, bw, steps, ahead, minb;
  long threads, tile_w, wrow, hrow, www, cwb, cwp, sadv, slots, smem_bytes, kww, xb;
  long acc, regs, grid_x, grid_y, strip, tiles_pix, m_total;
} rplan;

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

/* The sizes of conv_dw_ring.cuh (and conv_dw_nhwc.cuh's), macro for macro. */
static void make_plan(const ct_workload *w, const space *s, const config *cfg, rplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->chans = knobs_get(knobs, s, cfg, "chans");
  p->pix = knobs_get(knobs, s, cfg, "pix");
  p->rows = knobs_get(knobs, s, cfg, "rows");
  p->bc = knobs_get(knobs, s, cfg, "block_c");
  p->bw = knobs_get(knobs, s, cfg, "block_w");
  p->steps = knobs_get(knobs, s, cfg, "steps");
  p->ahead = knobs_get(knobs, s, cfg, "ahead");
  p->minb = knobs_get(knobs, s, cfg, "blocks_per_sm");
  p->threads = (long)p->bc * p->bw;
  p->tile_w = (long)p->bw * p->pix;
  p->wrow = (p->pix - 1) * g.str[2] + g.ker[2];
  p->hrow = (p->rows - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  p->www = (p->tile_w - 1) * g.str[2] + g.ker[2];
  p->cwb = (long)p->bc * p->chans;
  p->cwp = ceil_div(p->cwb, 16) * 16;
  p->sadv = (long)p->rows * g.str[1];
  p->slots = p->hrow + (p->ahead + 1L) * p->sadv;
  p->smem_bytes = p->slots * p->www * p->cwp;
  p->kww = ceil_div(g.ker[2], 4);
  p->xb = ((p->pix - 1) * g.str[2] + 3) / 4 + p->kww;
  p->acc = (long)p->rows * p->pix * p->chans;
  /* live through the loop: the filter words, the params (about 6 words a
   * channel), the sums; within a row: its words, the byte streams, the
   * tap words */
  const long nw = ceil_div(p->chans, 4);
  p->regs = p->chans * g.ker[1] * p->kww + 6L * p->chans + p->acc + p->wrow * nw +
            p->chans * p->xb + (long)p->pix * p->kww * p->chans + RING_REG_OVERHEAD;
  p->strip = (long)p->steps * p->rows;
  p->grid_x = g.n * ceil_div(g.out[1], p->strip) * ceil_div(g.out[2], p->tile_w);
  p->grid_y = ceil_div(g.k, p->cwb);
  p->tiles_pix = p->grid_x * p->strip * p->tile_w;
  p->m_total = g.n * g.out[1] * g.out[2];
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  rplan p;
  make_plan(w, s, cfg, &p);
  geom3 g;
  workload_geom(w, &g);
  if (w->k % p.chans) return template_fail(why, "chans %ld does not divide K %ld", p.chans, w->k);
  if (p.threads < 32 || p.threads > a->max_threads_per_block || p.threads % 32)
    return template_fail(why, "%ld threads per block; whole warps, 32 to %ld", p.threads,
                         a->max_threads_per_block);
  if (!template_tile_fits("block_w x pix", p.tile_w, 8, g.out[2], "output columns", why) ||
      !template_tile_fits("steps x rows", p.strip, 4, g.out[1], "output rows", why) ||
      !template_tile_fits("block_c x chans", p.cwb, 32, g.k, "channels", why) ||
      !template_blocks_fit(a, p.threads, p.minb, p.smem_bytes, why) ||
      !template_regs_fit(a, p.threads, p.minb, p.regs, why))
    return 0;
  if (p.ahead >= p.steps && p.ahead > 1)
    return template_fail(why, "ahead %ld of %ld steps: the strip would be in flight at once",
                         p.ahead, p.steps);
  if (p.grid_y > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p.grid_y, 65535);
  if (p.grid_x > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p.grid_x, 2147483647L);
  return 1;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  rplan p;
  make_plan(w, s, cfg, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_dw_ring");
  inst->n_options = 0;
  /* the shape as conv_dw_nhwc.c gives it (C rounded up to 4 in CT_C4) */
  ct_workload w4 = *w;
  w4.c = (w->c + 3) / 4 * 4;
  w4.groups = 1;
  instance_conv_options(inst, &w4);
  instance_opt(inst, "DW_C", w->c);
  instance_opt(inst, "DW_M", 1);
  knobs_options(knobs, s, cfg, inst);
  /* conv_dw_nhwc.cuh's knobs, fixed here */
  instance_opt(inst, "BLOCK_H", 1);
  instance_opt(inst, "STAGING", 0);
  instance_opt(inst, "MAC", 1);
  instance_opt(inst, "DEPTHS", 1);
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_dw_ring: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  inst->grid[0] = (unsigned)p.grid_x;
  inst->grid[1] = (unsigned)p.grid_y;
  inst->grid[2] = 1;
  inst->block[0] = (unsigned)p.threads;
  inst->block[1] = inst->block[2] = 1;
  inst->smem_bytes = (size_t)p.smem_bytes;
  inst->arch_specific = 0;
  /* sm_90: the kernel waits on griddepcontrol before touching the data */
  inst->pdl = a->cc_major >= 9;
  instance_conv_args(inst);
  return CT_OK;
}

/* Derived sizes for the cost model, log2-scaled: the halo a block reads
 * again (columns and the strip's first rows), the rows a step reads per
 * output row, and the bytes in flight a block. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  rplan p;
  make_plan(w, s, cfg, &p);
  const double v[] = {p.threads,
                      p.acc,
                      p.regs,
                      p.smem_bytes,
                      p.grid_x,
                      p.grid_y,
                      (double)p.grid_x * p.grid_y * p.threads,
                      p.chans,
                      p.pix,
                      p.rows,
                      p.bc,
                      p.bw,
                      p.steps,
                      p.ahead,
                      p.minb,
                      (double)p.www / (double)p.tile_w,
                      (double)p.hrow / (double)p.rows,
                      (double)p.ahead * p.sadv * p.www * p.cwb,
                      (double)p.m_total / (double)p.tiles_pix};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning (a model; the GPU has not ranked these): 4
 * channels and 2 columns a thread, 2 rows a step, 3 steps ahead; of the
 * blocks along channels and columns and the strips, the one with the
 * least padding (computed pixels and channels that do not exist) and at
 * least two blocks an SM's worth over the GPU, then the larger block. */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  config c;
  memset(&c, 0, sizeof c);
  int found = 0;
  double best = 0;
  const long sms = a->sm_count > 0 ? a->sm_count : 132;
  for (int ibc = 0; ibc < N_OF(block_cs); ibc++)
    for (int ibw = 0; ibw < N_OF(block_ws); ibw++)
      for (int ist = 0; ist < N_OF(steps_s); ist++) {
        if (!(template_set_choice(s, &c, "chans", 4) && template_set_choice(s, &c, "pix", 2) &&
              template_set_choice(s, &c, "rows", 2) &&
              template_set_choice(s, &c, "block_c", block_cs[ibc]) &&
              template_set_choice(s, &c, "block_w", block_ws[ibw]) &&
              template_set_choice(s, &c, "steps", steps_s[ist]) &&
              template_set_choice(s, &c, "ahead", 3) &&
              template_set_choice(s, &c, "blocks_per_sm", 4)))
          continue;
        if (!valid(w, s, &c, a, NULL)) continue;
        rplan p;
        make_plan(w, s, &c, &p);
        const double used = (double)p.m_total / (double)p.tiles_pix;
        const double kused = (double)w->k / (double)(p.grid_y * p.cwb);
        const double blocks = (double)p.grid_x * p.grid_y;
        const double fill = blocks >= 2.0 * sms ? 1.0 : blocks / (2.0 * sms);
        const double score = used * kused * fill * (1.0 + 1e-3 * (double)p.threads);
        if (!found || score > best) {
          *out = c;
          best = score;
          found = 1;
        }
      }
  if (found) return 1;
  /* a layer too small for those: the first valid config */
  for (int ibc = 0; ibc < N_OF(block_cs); ibc++)
    for (int ibw = 0; ibw < N_OF(block_ws); ibw++)
      for (int ist = 0; ist < N_OF(steps_s); ist++) {
        if (!(template_set_choice(s, &c, "chans", 4) && template_set_choice(s, &c, "pix", 1) &&
              template_set_choice(s, &c, "rows", 1) &&
              template_set_choice(s, &c, "block_c", block_cs[ibc]) &&
              template_set_choice(s, &c, "block_w", block_ws[ibw]) &&
              template_set_choice(s, &c, "steps", steps_s[ist]) &&
              template_set_choice(s, &c, "ahead", 1) &&
              template_set_choice(s, &c, "blocks_per_sm", 1)))
          continue;
        if (valid(w, s, &c, a, NULL)) {
          *out = c;
          return 1;
        }
      }
  return 0;
}

static int conv2d_nhwc_dw_ring_supports(const ct_workload *w, char *why) {
  return template_supports(w, CT_OP_CONV2D, refusal, why);
}

static ct_status conv2d_nhwc_dw_ring_space(const ct_workload *w, space *s, ct_err *err) {
  return knobs_space(knobs, w, s, err);
}

const template_desc tpl_conv2d_nhwc_dw_ring = {.name = "conv2d_nhwc_dw_ring",
                                               .source = "conv2d_nhwc_dw_ring.cu",
                                               .op = CT_OP_CONV2D,
                                               .layout = CT_LAYOUT_NHWC,
                                               .supports = conv2d_nhwc_dw_ring_supports,
                                               .space = conv2d_nhwc_dw_ring_space,
                                               .valid = valid,
                                               .instance = make_instance,
                                               .describe = describe,
                                               .preferred = preferred,
                                               .knobs = knobs};
