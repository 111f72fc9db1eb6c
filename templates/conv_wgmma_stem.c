/*
 * conv_wgmma_stem.c: the C descriptor of conv2d_nhwc_wgmma_stem and
 * conv3d_ndhwc_wgmma_stem (kernel body: conv_wgmma_stem.cuh): the
 * channels-last templates of layers with few input channels on wgmma,
 * whose reduction runs over the flattened window rows (KW x C contiguous
 * bytes). Their knob space, validity, the instance, the features for the
 * cost model and a default.
 *
 * Knobs: block_m (output pixels per warpgroup tile: 64 or 128, one or two
 * m64 wgmmas per k32 step), block_n (32, 64, 128, 256: wgmma's N; 32 for
 * the stems of 32 channels, MobileNet's), warpgroups
 * (1 or 2 per block, sharing the block's staged weights), a_buffers (1 or
 * 2 per warpgroup: with 2 the next stage's A is written while this one's
 * wgmmas run), blocks_per_sm (1 to 4: the launch bounds' minimum, and
 * the persistent grid is that many blocks per SM) and, for int32 output,
 * a_prefetch (1: the next tile's data loads are issued before this tile's
 * epilogue, its stores into the A buffer after it) and out_tma (0: each
 * thread stores its values; 1: the tile is staged in shared memory and
 * stored by TMA, K a multiple of 32); for 8-bit output, out_stage (0:
 * each thread stores its 4-byte pieces, 16 bytes of each of 8 pixels a
 * warp store, half sectors; 1: each warp stages its rows in shared memory
 * and stores whole rows as 16-byte chunks, wgmma_epilogue.cuh). Not a
 * knob: a depth tap's window rows are concatenated into whole k32 steps
 * wherever that takes fewer steps than whole steps a row (rows of 4 bytes
 * or more; 5 steps for a 7x7 stem of 3 channels where rows take 7, 1 for
 * a 3x3 one where they take 3). As a knob it won on every config timed
 * both ways (3-19%, H200), and a model's tuning at batch 256 (80 trials
 * of the stem) kept an unpacked best, 194.3 us, whose packed twin takes
 * 176.4.
 *
 * What it runs (supports): nhwc_stem_refusal (conv_mma_nhwc.c): layout
 * nhwc / ndhwc, int8 weights, groups 1, C not a multiple of 16 (those run
 * on conv2d_nhwc_wgmma at full width), K a multiple of 8, no dilation
 * along W, no weight zero points, no depth_to_space. Padding reads the
 * data zero point.
 *
 * Validity, before any compile: exactly sm_90 (sm_90a); accumulators and
 * a register estimate within the registers; shared memory (the weights of
 * every k32 step, the A buffers of a stage: one depth tap's window rows,
 * out_tma's or out_stage's staging) within the opt-in limit; tiles not larger than twice
 * what the layer has; fewer than 2^31 output pixels and input rows (the
 * 32-bit arithmetic of the kernel's stages);
 * blocks_per_sm blocks fitting an SM's registers, shared memory and
 * threads.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* The window row's words, addresses, loop counters, params: a lower bound. */
#define WS_REG_OVERHEAD 48

static const int block_ms[] = {64, 128};
static const int block_ns[] = {32, 64, 128, 256};
static const int warpgroups[] = {1, 2};
static const int a_buffers[] = {1, 2};
static const int blocks_per_sms[] = {1, 2, 3, 4};
static const int out_tmas[] = {0, 1};
static const int a_prefetches[] = {0, 1};
static const int out_stages[] = {0, 1};

/* int32 output only: with 8-bit output a_prefetch lost on the H200
 * (ResNet-50 b16's stem at its best configs 19.8 -> 20.5 us) */
static int out32(const ct_workload *w) {
  return w->out_type == CT_DTYPE_INT32;
}
static int out8(const ct_workload *w) {
  return w->out_type != CT_DTYPE_INT32;
}

static const knob_def knobs[] = {
    KNOB("block_m", block_ms, 128),
    KNOB("block_n", block_ns, 64),
    KNOB("warpgroups", warpgroups, 2),
    KNOB("a_buffers", a_buffers, 2),
    KNOB("blocks_per_sm", blocks_per_sms, 1),
    KNOB_IF("a_prefetch", a_prefetches, 0, out32),
    KNOB_IF("out_tma", out_tmas, 0, out32),
    KNOB_IF("out_stage", out_stages, 0, out8),
    KNOB_END,
};

typedef struct wsplan {
  int bm, bn, wgs, abuf, minb, otma, apf, ostage;
  long row_bytes, rsteps, ck, ksteps, tapvol;
  long threads, acc, regs, smem_bytes, m_total, tiles_m, tiles_n, grid_x;
} wsplan;

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

/* The refusal of the channels-last stems (conv_mma_nhwc.c), with their
 * reasons: the same window rows as the mma ones. */
const char *nhwc_stem_refusal(const ct_workload *w, ct_op op);

/* The sizes of conv_wgmma_stem.cuh, macro for macro. */
static void make_plan(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                      wsplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->bm = knobs_get(knobs, s, cfg, "block_m");
  p->bn = knobs_get(knobs, s, cfg, "block_n");
  p->wgs = knobs_get(knobs, s, cfg, "warpgroups");
  p->abuf = knobs_get(knobs, s, cfg, "a_buffers");
  p->minb = knobs_get(knobs, s, cfg, "blocks_per_sm");
  p->otma = knobs_get(knobs, s, cfg, "out_tma");
  p->apf = knobs_get(knobs, s, cfg, "a_prefetch");
  p->ostage = knobs_get(knobs, s, cfg, "out_stage");
  p->row_bytes = g.ker[2] * g.c;
  p->rsteps = ceil_div(p->row_bytes, 32);
  const long stage = g.ker[1] * p->row_bytes; /* a depth tap's window rows */
  /* ROW_PACK: the rows concatenated where that takes fewer k32 steps */
  const int rpack = p->row_bytes >= 4 && ceil_div(stage, 32) < g.ker[1] * p->rsteps;
  p->ck = rpack ? ceil_div(stage, 32) : g.ker[1] * p->rsteps;
  p->ksteps = g.ker[0] * p->ck;
  p->tapvol = g.ker[0] * g.ker[1] * p->row_bytes;
  p->threads = 128L * p->wgs;
  p->acc = (long)(p->bm / 64) * (p->bn / 2);
  p->regs = p->acc + WS_REG_OVERHEAD;
  /* a thread's window rows of a stage: interleaved over the pixel's
   * 128 / block_m threads, or (ROW_PACK) those its part of the stage
   * covers, one more where a row straddles the parts */
  long rows_a = ceil_div((long)p->bm * g.ker[1], 128);
  if (rpack) {
    const long parts = 128 / p->bm, part = p->ck * 32 / parts;
    for (long h = 0; h < parts; h++) {
      if (h * part >= stage) continue;
      const long last = (h + 1) * part - 1 < stage ? (h + 1) * part - 1 : stage - 1;
      const long rows = last / p->row_bytes - h * part / p->row_bytes + 1;
      if (rows > rows_a) rows_a = rows;
    }
  }
  /* a_prefetch: the next tile's words held through the epilogue */
  if (p->apf) p->regs += rows_a * ((p->row_bytes + 6) / 4 + 1);
  const long b_bytes = p->ksteps * p->bn * 32;
  const long a_bytes = (long)p->wgs * p->abuf * p->ck * p->bm * 32;
  const long raw_bytes = ceil_div(p->bn * p->tapvol + 16, 16) * 16 + 16;
  /* 8-bit output: each warpgroup's channel table, with out_stage its 4
   * warps' slabs of 16 rows per m64 block, each row the tile's channels and
   * 16 bytes of pad (wgmma_epilogue.cuh's EPI_WG_BYTES) */
  const long slabs = p->ostage ? 4L * 16 * (p->bm / 64) * (p->bn + 16) : 0;
  const long tab = w->out_type != CT_DTYPE_INT32 ? (long)p->wgs * (p->bn * 24 + slabs) : 0;
  /* out_tma: each warpgroup's int32 tile */
  const long ost = p->otma ? (long)p->wgs * p->bm * p->bn * 4 : 0;
  p->smem_bytes = b_bytes + ost + (a_bytes > raw_bytes ? a_bytes : raw_bytes) + tab + 1024;
  p->m_total = g.n * g.out[0] * g.out[1] * g.out[2];
  p->tiles_m = ceil_div(p->m_total, p->bm);
  p->tiles_n = ceil_div(g.k, p->bn);
  /* persistent: blocks_per_sm blocks per SM over the grid's N tiles, each
   * warpgroup looping over M tiles (all of them in one wave when the SMs
   * are unknown: a named architecture) */
  const long need = ceil_div(p->tiles_m, p->wgs);
  const long resident = a && a->sm_count > 0 ? (long)a->sm_count * p->minb : 0;
  long per_n = resident > 0 ? resident / p->tiles_n : need;
  if (per_n < 1) per_n = 1;
  p->grid_x = need < per_n ? need : per_n;
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  wsplan p;
  make_plan(w, s, cfg, a, &p);
  geom3 g;
  workload_geom(w, &g);
  if (!template_need_sm90(a, why) || !template_acc_fits(p.acc, "block_m", p.bm, why) ||
      !template_tile_fits("block_m", p.bm, 64, p.m_total, "output pixels", why) ||
      !template_tile_fits("block_n", p.bn, 64, g.k, "channels", why))
    return 0;
  if (p.otma && g.k % 32)
    return template_fail(why, "out_tma stores rows of %ld channels: K %ld is not a multiple", 32,
                         (long)g.k);
  if (p.m_total >= 2147483648L || (long)g.n * g.in[0] * g.in[1] >= 2147483648L)
    return template_fail(why, "%ld output pixels and %ld input rows: each must be below 2^31",
                         p.m_total, (long)g.n * g.in[0] * g.in[1]);
  if (!template_blocks_fit(a, p.threads, p.minb, p.smem_bytes, why) ||
      !template_regs_fit(a, p.threads, p.minb, p.regs, why))
    return 0;
  if (p.tiles_n > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p.tiles_n, 65535);
  if (p.grid_x > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p.grid_x, 2147483647L);
  return 1;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  wsplan p;
  make_plan(w, s, cfg, a, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_wgmma_stem");
  inst->n_options = 0;
  /* the shape options with C rounded up to 4 (CT_C4, as conv_shape.cuh
   * checks it), the real C apart */
  ct_workload w4 = *w;
  w4.c = (w->c + 3) / 4 * 4;
  instance_conv_options(inst, &w4);
  instance_opt(inst, "STEM_C", w->c);
  knobs_options(knobs, s, cfg, inst);
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_wgmma_stem: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  inst->grid[0] = (unsigned)p.grid_x;
  inst->grid[1] = (unsigned)p.tiles_n;
  inst->grid[2] = 1;
  inst->block[0] = (unsigned)p.threads;
  inst->block[1] = inst->block[2] = 1;
  inst->smem_bytes = (size_t)p.smem_bytes;
  inst->arch_specific = 1;
  inst->pdl = 1; /* the kernel waits on griddepcontrol before touching memory */
  instance_conv_args(inst);
  if (p.otma) {
    /* the output as (K, pixels) int32, stored in boxes of 32 channels (128
     * bytes, the swizzle's span) x block_m pixels */
    tmap_tiled2(&inst->otmap, 4, 128, (unsigned long long)w->k, (unsigned long long)p.m_total, 32,
                (unsigned)p.bm);
    inst->args[inst->n_args++] = ARG_OUT_TMAP;
  }
  return CT_OK;
}

/* Derived sizes for the cost model, log2-scaled where they span decades. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  wsplan p;
  make_plan(w, s, cfg, NULL, &p);
  const double v[] = {p.threads,
                      p.acc,
                      p.regs,
                      p.smem_bytes + 1,
                      p.tiles_m,
                      p.tiles_n,
                      p.ksteps,
                      p.ck,
                      (double)p.tiles_m * p.tiles_n,
                      p.bm,
                      p.bn,
                      p.wgs,
                      p.abuf,
                      p.minb,
                      1 + p.otma,
                      1 + p.apf,
                      1 + p.ostage,
                      (double)p.tiles_m * p.bm / (double)p.m_total};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning: the narrowest block_n that covers K in the
 * fewest N tiles, 128-pixel tiles, two warpgroups, one A buffer where a
 * stage is 3 k32 steps or more and two where it is fewer, as many blocks
 * per SM as fit (at least 8 warps per SM) and, with 8-bit output,
 * out_stage; the valid config nearest to that. Tuned (H200,
 * h200-issue36/stems), the 7x7 stems' bests (5 steps a stage) took one A
 * buffer in 4 of 5 and MobileNetV2's 3x3 (1 step) two, whose default with
 * one ran 14% slower; every 8-bit best took out_stage. The default is
 * what the dispatch runs untuned and a tuning's first trial. */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  geom3 g;
  workload_geom(w, &g);
  config c;
  memset(&c, 0, sizeof c);
  template_set_choice(s, &c, "out_stage", 1); /* 8-bit output only: absent otherwise */
  int found = 0;
  double best = 0;
  for (int im = 0; im < 2; im++)
    for (int in = 0; in < (int)(sizeof block_ns / sizeof block_ns[0]); in++)
      for (int iw = 0; iw < 2; iw++)
        for (int ia = 0; ia < 2; ia++)
          for (int ib = 0; ib < 4; ib++) {
            if (!(template_set_choice(s, &c, "block_m", block_ms[im]) &&
                  template_set_choice(s, &c, "block_n", block_ns[in]) &&
                  template_set_choice(s, &c, "warpgroups", warpgroups[iw]) &&
                  template_set_choice(s, &c, "a_buffers", a_buffers[ia]) &&
                  template_set_choice(s, &c, "blocks_per_sm", blocks_per_sms[ib])))
              continue;
            /* 32 channels only where they are all: more N tiles would
             * stage each pixel's window once per tile */
            if (block_ns[in] == 32 && g.k > 32) continue;
            if (!valid(w, s, &c, a, NULL)) continue;
            wsplan p;
            make_plan(w, s, &c, a, &p);
            /* computed channels that exist, 8 warps or more per SM, then the rest */
            const double used = (double)g.k / ((double)p.tiles_n * p.bn);
            const long warps = p.minb * p.threads / 32;
            const double score = used + (warps >= 8 ? 0.1 : 0.0) + 0.01 * im + 0.005 * iw +
                                 0.004 * (p.ck >= 3 ? 1 - ia : ia) + 0.001 * ib;
            if (!found || score > best) {
              *out = c;
              best = score;
              found = 1;
            }
          }
  return found;
}

TEMPLATE_PAIR(conv2d_nhwc_wgmma_stem, conv3d_ndhwc_wgmma_stem, CT_LAYOUT_NHWC, knobs,
              nhwc_stem_refusal, valid, make_instance, describe, preferred);
