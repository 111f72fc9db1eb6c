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
#include <math.h>
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
static const char *const out_knob[N_OUT_AX] = {"tile_n", "tile_f", "tile_d", "tile_y", "tile_x"};
static const char *const out_macro[N_OUT_AX] = {"TILE_N", "TILE_F", "TILE_D", "TILE_Y", "TILE_X"};
static const char *const red_knob[N_RED_AX] = {"tile_rc", "tile_rd", "tile_ry", "tile_rx"};
static const char *const red_macro[N_RED_AX] = {"TILE_RC", "TILE_RD", "TILE_RY", "TILE_RX"};
static const int unroll_steps[] = {0, 512, 1500};
static const int zero_one[] = {0, 1};

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

static int supports_op(const ct_workload *w, ct_op op, char *why) {
  const char *reason = template_conv_refusal(w, op);
  if (reason && why) snprintf(why, TEMPLATE_WHY_MAX, "%s", reason);
  return reason == NULL;
}

static int supports2d(const ct_workload *w, char *why) {
  return supports_op(w, CT_OP_CONV2D, why);
}

static int supports3d(const ct_workload *w, char *why) {
  return supports_op(w, CT_OP_CONV3D, why);
}

static ct_status build_space(const ct_workload *w, space *s, ct_err *err) {
  geom3 g;
  workload_geom(w, &g);
  int is3 = w->op == CT_OP_CONV3D;
  ct_status st;
  const int out_extent[N_OUT_AX] = {(int)g.n, (int)(g.k + 3) / 4, (int)g.out[0], (int)g.out[1],
                                    (int)g.out[2]};
  const int red_extent[N_RED_AX] = {(int)g.c / 4, (int)g.ker[0], (int)g.ker[1], (int)g.ker[2]};
  for (int a = 0; a < N_OUT_AX; a++) {
    if (a == AXD && !is3) continue;
    if ((st = space_add_split(s, out_knob[a], out_extent[a], 4, err))) return st;
  }
  for (int a = 0; a < N_RED_AX; a++) {
    if (a == RD && !is3) continue;
    if ((st = space_add_split(s, red_knob[a], red_extent[a], 2, err))) return st;
  }
  if ((st = space_add_reorder(s, "reorder_inner", is3 ? 4 : 3, err))) return st;
  if ((st = space_add_choice(s, "fuse_yx", zero_one, 2, err))) return st;
  if ((st = space_add_choice(s, "auto_unroll_max_step", unroll_steps, 3, err))) return st;
  return space_add_choice(s, "unroll_explicit", zero_one, 2, err);
}

/* Fill p from cfg; derived sizes included. */
static void make_plan(const ct_workload *w, const space *s, const config *cfg, plan *p) {
  geom3 g;
  workload_geom(w, &g);
  for (int a = 0; a < N_OUT_AX; a++) {
    int k = space_find(s, out_knob[a]);
    for (int i = 0; i < 4; i++) p->out[a][i] = k >= 0 ? space_value(s, cfg, k)[i] : 1;
  }
  for (int a = 0; a < N_RED_AX; a++) {
    int k = space_find(s, red_knob[a]);
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
  p->fuse_yx = space_get(s, cfg, "fuse_yx", 1);
  p->unroll_max_step = space_get(s, cfg, "auto_unroll_max_step", 512);
  p->unroll_explicit = space_get(s, cfg, "unroll_explicit", 0);

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
  if (p.threads < 32) return template_fail(why, "%ld threads per block; at least %ld", p.threads, 32);
  if (p.threads > a->max_threads_per_block)
    return template_fail(why, "%ld threads per block; at most %ld", p.threads, a->max_threads_per_block);
  if (p.vthreads > DP4A_MAX_VTHREADS)
    return template_fail(why, "%ld vthreads; at most %ld", p.vthreads, DP4A_MAX_VTHREADS);
  if (p.acc > DP4A_MAX_ACC)
    return template_fail(why, "%ld accumulators per thread; at most %ld", p.acc, DP4A_MAX_ACC);
  if (p.regs > a->max_regs_per_thread)
    return template_fail(why, "at least %ld registers per thread; at most %ld", p.regs,
                a->max_regs_per_thread);
  if (p.regs * p.threads > a->regs_per_block)
    return template_fail(why, "at least %ld registers per block; at most %ld", p.regs * p.threads,
                a->regs_per_block);
  if (p.smem_bytes > a->smem_optin_bytes)
    return template_fail(why, "%ld bytes of shared memory; at most %ld", p.smem_bytes, a->smem_optin_bytes);
  if (p.grid[1] > 65535) return template_fail(why, "%ld blocks along grid y; at most %ld", p.grid[1], 65535);
  if (p.grid[2] > 65535) return template_fail(why, "%ld blocks along grid z; at most %ld", p.grid[2], 65535);
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
  static const char *const parts4[4] = {"B", "V", "T", "I"};
  static const char *const parts2[2] = {"O", "I"};
  for (int ax = 0; ax < N_OUT_AX; ax++)
    for (int i = 0; i < 4; i++) {
      snprintf(name, sizeof name, "%s_%s", out_macro[ax], parts4[i]);
      instance_opt(inst, name, p.out[ax][i]);
    }
  for (int ax = 0; ax < N_RED_AX; ax++)
    for (int i = 0; i < 2; i++) {
      snprintf(name, sizeof name, "%s_%s", red_macro[ax], parts2[i]);
      instance_opt(inst, name, p.red[ax][i]);
    }
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "REORDER_%d", i);
    instance_opt(inst, name, p.order[i]);
  }
  instance_opt(inst, "FUSE_YX", p.fuse_yx);
  instance_opt(inst, "UNROLL_MAX_STEP", p.unroll_max_step);
  instance_opt(inst, "UNROLL_EXPLICIT", p.unroll_explicit);
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
  int n = (int)(sizeof v / sizeof v[0]);
  for (int i = 0; i < n && i < max; i++) out[i] = (float)log2(v[i]);
  if (max > n) out[n++] = (float)p.fuse_yx;
  return n < max ? n : max;
}

const template_desc tpl_conv2d_nchw4c_dp4a = {
    .name = "conv2d_nchw4c_dp4a",
    .source = "conv2d_nchw4c_dp4a.cu",
    .op = CT_OP_CONV2D,
    .layout = CT_LAYOUT_NCHW4C,
    .supports = supports2d,
    .space = build_space,
    .valid = valid,
    .instance = make_instance,
    .describe = describe,
};

const template_desc tpl_conv3d_ncdhw4c_dp4a = {
    .name = "conv3d_ncdhw4c_dp4a",
    .source = "conv3d_ncdhw4c_dp4a.cu",
    .op = CT_OP_CONV3D,
    .layout = CT_LAYOUT_NCHW4C,
    .supports = supports3d,
    .space = build_space,
    .valid = valid,
    .instance = make_instance,
    .describe = describe,
};
