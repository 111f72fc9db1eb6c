/*
 * conv_dp4a.c: the C descriptor of conv2d_nchw4c_dp4a and conv3d_ncdhw4c_dp4a
 * (kernel body: conv_dp4a.cuh): their knob space for a workload, validity,
 * and the instance (-D options, grid, block, shared memory).
 *
 * Validity, decided before any compile (each rule is a fact of the kernel):
 *   threads per block (product of the thread splits) in [32, 1024];
 *   vthreads (product of the vthread splits) at most DP4A_MAX_VTHREADS;
 *   accumulators per thread at most DP4A_MAX_ACC, and the register estimate
 *     (accumulators + operands + DP4A_REG_OVERHEAD, a lower bound of what is
 *     live in the inner loop) within 255 per thread and the block's registers;
 *   the shared tiles within the architecture's opt-in limit per block;
 *   grid y (K/4 blocks) and z (batch blocks) at most 65535.
 * Cost: valid() is a few hundred integer operations; sampling calls it often.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* A thread's interleaved sub-tiles: beyond 16 the stride pattern stops
 * paying and the register tile is better spent on inner elements. */
#define DP4A_MAX_VTHREADS 16
/* 128 int32 accumulators: beyond that a thread spills whatever else it has. */
#define DP4A_MAX_ACC 128
/* Addresses, loop counters, thread coordinates: measured around 20-30 in
 * SASS of small configs; 16 keeps the estimate a lower bound. */
#define DP4A_REG_OVERHEAD 16

/* Output axes split four ways, reduction axes two ways. */
enum { AXN, AXF, AXD, AXY, AXX, N_OUT_AX };
enum { RC, RD, RY, RX, N_RED_AX };
static const int unroll_steps[] = {0, 512, 1500};
static const int zero_one[] = {0, 1};

/* The split extents: output axes (n, K/4 chunks, d, y, x), reduction axes
 * (C/4, then the kernel's d, y, x). */
static geom3 geom(const ct_workload *w) {
  geom3 g;
  workload_geom(w, &g);
  return g;
}
static int ext_n(const ct_workload *w) {
  return (int)geom(w).n;
}
static int ext_f(const ct_workload *w) {
  return (int)(geom(w).k + 3) / 4;
}
static int ext_d(const ct_workload *w) {
  return (int)geom(w).out[0];
}
static int ext_y(const ct_workload *w) {
  return (int)geom(w).out[1];
}
static int ext_x(const ct_workload *w) {
  return (int)geom(w).out[2];
}
static int ext_rc(const ct_workload *w) {
  return (int)geom(w).c / 4;
}
static int ext_rd(const ct_workload *w) {
  return (int)geom(w).ker[0];
}
static int ext_ry(const ct_workload *w) {
  return (int)geom(w).ker[1];
}
static int ext_rx(const ct_workload *w) {
  return (int)geom(w).ker[2];
}
/* reorder_inner permutes (rc, ry, rx) in conv2d, (rc, rd, ry, rx) in conv3d */
static int n_inner(const ct_workload *w) {
  return w->op == CT_OP_CONV3D ? 4 : 3;
}

/* Rows in axis order: knobs[a] is output axis a's split, knobs[N_OUT_AX +
 * a] reduction axis a's (their parts: block, vthread, thread, inner; outer,
 * inner). */
static const knob_def knobs[] = {
    KNOB_SPLIT("tile_n", "BVTI", ext_n),    KNOB_SPLIT("tile_f", "BVTI", ext_f),
    KNOB_SPLIT_3D("tile_d", "BVTI", ext_d), KNOB_SPLIT("tile_y", "BVTI", ext_y),
    KNOB_SPLIT("tile_x", "BVTI", ext_x),    KNOB_SPLIT("tile_rc", "OI", ext_rc),
    KNOB_SPLIT_3D("tile_rd", "OI", ext_rd), KNOB_SPLIT("tile_ry", "OI", ext_ry),
    KNOB_SPLIT("tile_rx", "OI", ext_rx),    KNOB_REORDER("reorder_inner", n_inner),
    KNOB("fuse_yx", zero_one, 1),           KNOB("auto_unroll_max_step", unroll_steps, 512),
    KNOB("unroll_explicit", zero_one, 0),   KNOB_END,
};

/* A config made concrete: every split (absent knobs are 1s), the loop order
 * and the derived sizes. */
typedef struct plan {
  int out[N_OUT_AX][4]; /* block, vthread, thread, inner */
  int red[N_RED_AX][2]; /* outer, inner */
  int order[4];         /* reduction axes, outermost first */
  int fuse_yx, unroll_max_step, unroll_explicit;
  long threads, vthreads, acc, regs, smem_bytes;
  long grid[3];
} plan;

/* Fill p from cfg; derived sizes included. */
static void make_plan(const ct_workload *w, const space *s, const config *cfg, plan *p) {
  geom3 g;
  workload_geom(w, &g);
  for (int a = 0; a < N_OUT_AX; a++) {
    int k = space_find(s, knobs[a].name);
    for (int i = 0; i < 4; i++) p->out[a][i] = k >= 0 ? space_value(s, cfg, k)[i] : 1;
  }
  for (int a = 0; a < N_RED_AX; a++) {
    int k = space_find(s, knobs[N_OUT_AX + a].name);
    for (int i = 0; i < 2; i++) p->red[a][i] = k >= 0 ? space_value(s, cfg, k)[i] : 1;
  }
  /* reorder_inner permutes (rc, ry, rx) in conv2d, whose rd has extent 1
   * and goes outermost; (rc, rd, ry, rx) in conv3d. */
  int k = space_find(s, "reorder_inner");
  const int *perm = space_value(s, cfg, k);
  if (s->knobs[k].width == 3) {
    static const int axes2d[3] = {RC, RY, RX};
    p->order[0] = RD;
    for (int i = 0; i < 3; i++) p->order[i + 1] = axes2d[perm[i]];
  } else {
    for (int i = 0; i < 4; i++) p->order[i] = perm[i];
  }
  p->fuse_yx = knobs_get(knobs, s, cfg, "fuse_yx");
  p->unroll_max_step = knobs_get(knobs, s, cfg, "auto_unroll_max_step");
  p->unroll_explicit = knobs_get(knobs, s, cfg, "unroll_explicit");

  p->threads = p->vthreads = p->acc = 1;
  long ext[N_OUT_AX]; /* block extent per axis */
  for (int a = 0; a < N_OUT_AX; a++) {
    p->threads *= p->out[a][2];
    p->vthreads *= p->out[a][1];
    p->acc *= (long)p->out[a][1] * p->out[a][3];
    ext[a] = (long)p->out[a][1] * p->out[a][2] * p->out[a][3];
  }
  long af = (long)p->out[AXF][1] * p->out[AXF][3];
  p->acc *= 4; /* four output lanes per channel chunk */
  /* live in the inner step: accumulators, the weights of every chunk (4 ints
   * each), one data value, overhead */
  p->regs = p->acc + 4 * af + 1 + DP4A_REG_OVERHEAD;
  if (w->epi.weight_zero_point) p->regs += p->acc / (4 * af); /* a window sum per position */
  long wd = (ext[AXD] - 1) * g.str[0] + (p->red[RD][1] - 1) * g.dil[0] + 1;
  long wh = (ext[AXY] - 1) * g.str[1] + (p->red[RY][1] - 1) * g.dil[1] + 1;
  long ww = (ext[AXX] - 1) * g.str[2] + (p->red[RX][1] - 1) * g.dil[2] + 1;
  long a_elems = ext[AXN] * p->red[RC][1] * wd * wh * ww;
  long w_elems = ext[AXF] * p->red[RC][1] * p->red[RD][1] * p->red[RY][1] * p->red[RX][1];
  p->smem_bytes = 16 * w_elems + 4 * a_elems;
  p->grid[0] = (long)p->out[AXD][0] * p->out[AXY][0] * p->out[AXX][0];
  p->grid[1] = p->out[AXF][0];
  p->grid[2] = p->out[AXN][0];
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  plan p;
  make_plan(w, s, cfg, &p);
  if (p.threads < 32)
    return template_fail(why, "%ld threads per block; at least %ld", p.threads, 32);
  if (p.threads > a->max_threads_per_block)
    return template_fail(why, "%ld threads per block; at most %ld", p.threads,
                         a->max_threads_per_block);
  if (p.vthreads > DP4A_MAX_VTHREADS)
    return template_fail(why, "%ld vthreads; at most %ld", p.vthreads, DP4A_MAX_VTHREADS);
  if (p.acc > DP4A_MAX_ACC)
    return template_fail(why, "%ld accumulators per thread; at most %ld", p.acc, DP4A_MAX_ACC);
  if (!template_block_fits(a, p.threads, p.regs, p.smem_bytes, why)) return 0;
  if (p.grid[1] > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p.grid[1], 65535);
  if (p.grid[2] > 65535)
    return template_fail(why, "%ld blocks along grid z; at most %ld", p.grid[2], 65535);
  if (p.grid[0] > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p.grid[0], 2147483647L);
  return 1;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  plan p;
  make_plan(w, s, cfg, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_dp4a");
  inst->n_options = 0;
  char name[32];
  instance_conv_options(inst, w);
  knobs_options(knobs, s, cfg, inst);
  /* the loop order, outermost first (reorder_inner's axes mapped) */
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "REORDER_%d", i);
    instance_opt(inst, name, p.order[i]);
  }
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_dp4a: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  for (int i = 0; i < 3; i++) inst->grid[i] = (unsigned)p.grid[i];
  inst->block[0] = (unsigned)p.threads;
  inst->block[1] = inst->block[2] = 1;
  inst->smem_bytes = (size_t)p.smem_bytes;
  instance_conv_args(inst);
  (void)a;
  return CT_OK;
}

/* Derived sizes for the cost model, log2-scaled where they span decades. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  plan p;
  make_plan(w, s, cfg, &p);
  long blocks = p.grid[0] * p.grid[1] * p.grid[2];
  const double v[] = {p.threads,
                      p.vthreads,
                      p.acc,
                      p.regs,
                      p.smem_bytes + 1,
                      blocks,
                      (double)blocks * p.threads,
                      p.out[AXX][2] * p.out[AXX][3]};
  int n = template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
  if (max > n) out[n++] = (float)p.fuse_yx;
  return n;
}

TEMPLATE_PAIR(conv2d_nchw4c_dp4a, conv3d_ncdhw4c_dp4a, CT_LAYOUT_NCHW4C, knobs,
              template_conv_refusal, valid, make_instance, describe, NULL);
