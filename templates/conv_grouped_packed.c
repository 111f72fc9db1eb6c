/*
 * conv_grouped_packed.c: the C descriptor of conv2d_nchw4c_grouped and
 * conv3d_ncdhw4c_grouped (kernel body: conv_grouped_packed.cuh), grouped
 * and depthwise convolution in the packed layout: support (groups > 1
 * only), the knob table, validity, the instance, describe and preferred.
 *
 * The window (NWIN: data words one output word reads) and the staged words
 * of a block (JB) follow from C/G and K/G alone; they are periodic in the
 * output word with period K/G, so NWIN is a loop over at most min(K/4, K/G)
 * words (4 groups where K/G % 4 == 0).
 * Validity, decided before any compile: pix <= tile_w, thread_f <=
 * block_f; at least 32 threads unless one block covers an image's output;
 * at most 128 accumulators; the register estimate within what
 * blocks_per_sm blocks leave; shared memory (aligned weights, masks, halo)
 * within the limits; grid x (images x tiles) below 2^31, y (word blocks) at
 * most 65535; tiles not more than half padding. Cost: valid() is a few
 * hundred operations, plus the NWIN loop for K/G not a multiple of 4.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* Addresses, loop counters, coordinates, the window's base words. */
#define GP_REG_OVERHEAD 24
/* A thread's row window in registers up to this many words (the kernel's
 * RW_MAX): beyond, taps are loaded one by one. */
#define GP_RW_MAX 32
/* Aligned weights in shared memory up to this many bytes a block; beyond
 * (wide groups with large kernels) they are made from global memory at
 * each use. */
#define GP_W_SHARED_MAX 49152

static const int tile_ds[] = {1, 2, 4};
static const int tile_hs[] = {1, 2, 4, 8, 16};
static const int tile_ws[] = {1, 2, 4, 8, 16, 32, 64};
static const int block_fs[] = {1, 2, 4, 8, 16, 32};
static const int thread_fs[] = {1, 2, 4};
static const int pixs[] = {1, 2, 4, 8};
static const int stages[] = {0, 1};
static const int bpsms[] = {1, 2, 4};

static const knob_def knobs[] = {
    KNOB_3D("tile_d", tile_ds, 1), KNOB("tile_h", tile_hs, 4),      KNOB("tile_w", tile_ws, 16),
    KNOB("block_f", block_fs, 4),  KNOB("thread_f", thread_fs, 1),  KNOB("pix", pixs, 2),
    KNOB("stage", stages, 1),      KNOB("blocks_per_sm", bpsms, 1), KNOB_END,
};

static const char *refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NCHW4C)
    return op == CT_OP_CONV2D ? "it needs layout nchw4c" : "it needs layout ncdhw4c";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups <= 1)
    return "it runs groups > 1 only (groups = 1: the other channel-packed templates)";
  if (w->c % 4 || w->k % 4) return "grouped in the packed layout: C and K must be multiples of 4";
  if (w->epi.d2s_block) return "it has no depth_to_space";
  return NULL;
}

/* The group structure: channels per group, the window and the staged words. */
typedef struct groups {
  long c4, k4, cpg, kpg, cw, nwin;
} groups;

static long jbase(const groups *g, long f) {
  return (4 * f / g->kpg) * g->cpg / 4;
}

/* The data words output word f reads: from jbase(f) to the last word of
 * lane 3's group. */
static long span(const groups *g, long f) {
  long g3 = (4 * f + 3) / g->kpg;
  return (g3 * g->cpg + g->cpg - 1) / 4 - jbase(g, f) + 1;
}

static void make_groups(const ct_workload *w, groups *g) {
  g->c4 = w->c / 4;
  g->k4 = w->k / 4;
  g->cpg = w->c / w->groups;
  g->kpg = w->k / w->groups;
  g->cw = (g->cpg + 3) / 4;
  g->nwin = 1;
  /* jbase(f + kpg) = jbase(f) + cpg: the spans repeat with period kpg in
   * f; where kpg % 4 == 0 a word is one group's and depends on g * cpg
   * mod 4 only (4 groups) */
  long n = g->kpg % 4 == 0 ? (w->groups < 4 ? w->groups : 4) : (g->k4 < g->kpg ? g->k4 : g->kpg);
  for (long i = 0; i < n; i++) {
    long f = g->kpg % 4 == 0 ? i * g->kpg / 4 : i;
    long s = span(g, f);
    if (s > g->nwin) g->nwin = s;
  }
  if (g->nwin > g->c4) g->nwin = g->c4;
}

/* A config made concrete. */
typedef struct plan {
  int td, th, tw, bf, tf, pix, stage, bpsm, w_shared;
  long threads, acc, rw, regs, jb, hd, hh, hw, smem_bytes;
  long ntx, nty, ntd, grid[2];
  groups g;
} plan;

static long cdiv(long a, long b) {
  return (a + b - 1) / b;
}

static void make_plan(const ct_workload *w, const space *s, const config *cfg, plan *p) {
  geom3 g;
  workload_geom(w, &g);
  make_groups(w, &p->g);
  p->td = knobs_get(knobs, s, cfg, "tile_d");
  p->th = knobs_get(knobs, s, cfg, "tile_h");
  p->tw = knobs_get(knobs, s, cfg, "tile_w");
  p->bf = knobs_get(knobs, s, cfg, "block_f");
  p->tf = knobs_get(knobs, s, cfg, "thread_f");
  p->pix = knobs_get(knobs, s, cfg, "pix");
  p->stage = knobs_get(knobs, s, cfg, "stage");
  p->bpsm = knobs_get(knobs, s, cfg, "blocks_per_sm");
  const long tx = p->pix <= p->tw ? p->tw / p->pix : 1, tfs = p->tf <= p->bf ? p->bf / p->tf : 1;
  p->threads = tx * p->th * p->td * tfs;
  const int wzp = w->epi.weight_zero_point != 0;
  p->acc = (long)p->tf * p->pix * 4 * (wzp ? 2 : 1);
  p->rw = (p->pix - 1) * g.str[2] + (g.ker[2] - 1) * g.dil[2] + 1;
  p->regs = p->acc + (p->rw <= GP_RW_MAX ? p->rw : 1) + 4 + (wzp ? 4 : 0) + p->tf + GP_REG_OVERHEAD;
  /* staged words: jbase(f + bf - 1) - jbase(f) <= ceil((floor(4(bf-1)/kpg) + 1) cpg / 4) */
  p->jb = ((4 * (p->bf - 1) / p->g.kpg + 1) * p->g.cpg + 3) / 4 + p->g.nwin;
  if (p->jb > p->g.c4) p->jb = p->g.c4;
  p->hd = (p->td - 1) * g.str[0] + (g.ker[0] - 1) * g.dil[0] + 1;
  p->hh = (p->th - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  p->hw = (p->tw - 1) * g.str[2] + (g.ker[2] - 1) * g.dil[2] + 1;
  const long kvol = g.ker[0] * g.ker[1] * g.ker[2];
  const long w_bytes = 16L * p->bf * kvol * p->g.nwin;
  p->w_shared = w_bytes <= GP_W_SHARED_MAX;
  p->smem_bytes = (p->w_shared ? w_bytes : 0) + (wzp ? 16L * p->bf * p->g.nwin : 0) +
                  (p->stage ? 4 * p->jb * p->hd * p->hh * p->hw : 0);
  p->ntx = cdiv(g.out[2], p->tw);
  p->nty = cdiv(g.out[1], p->th);
  p->ntd = cdiv(g.out[0], p->td);
  p->grid[0] = g.n * p->ntd * p->nty * p->ntx;
  p->grid[1] = cdiv(p->g.k4, p->bf);
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  plan p;
  make_plan(w, s, cfg, &p);
  geom3 g;
  workload_geom(w, &g);
  if (p.pix > p.tw) return template_fail(why, "pix %ld above tile_w %ld", p.pix, p.tw);
  if (p.tf > p.bf) return template_fail(why, "thread_f %ld above block_f %ld", p.tf, p.bf);
  if (!template_tile_fits("tile_w", p.tw, 4, g.out[2], "output columns", why) ||
      !template_tile_fits("tile_h", p.th, 1, g.out[1], "output rows", why) ||
      !template_tile_fits("tile_d", p.td, 1, g.out[0], "output planes", why) ||
      !template_tile_fits("block_f", p.bf, 1, p.g.k4, "output words", why))
    return 0;
  /* below a warp only where one block is an image's whole output */
  if (p.threads < 32 && (p.ntx > 1 || p.nty > 1 || p.ntd > 1 || p.grid[1] > 1))
    return template_fail(why, "%ld threads per block; at least %ld", p.threads, 32);
  if (p.acc > 128)
    return template_fail(why, "%ld accumulators per thread (thread_f x pix x 4); at most %ld",
                         p.acc, 128);
  if (!template_blocks_fit(a, p.threads, p.bpsm, p.smem_bytes, why)) return 0;
  if (!template_regs_fit(a, p.threads, p.bpsm, p.regs, why)) return 0;
  if (p.grid[0] > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p.grid[0], 2147483647L);
  if (p.grid[1] > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p.grid[1], 65535);
  return 1;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  plan p;
  make_plan(w, s, cfg, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_grouped");
  inst->n_options = 0;
  instance_conv_options(inst, w);
  knobs_options(knobs, s, cfg, inst);
  instance_opt(inst, "CT_G", w->groups);
  instance_opt(inst, "CT_CPG", p.g.cpg);
  instance_opt(inst, "CT_KPG", p.g.kpg);
  instance_opt(inst, "CT_CW", p.g.cw);
  instance_opt(inst, "NWIN", p.g.nwin);
  instance_opt(inst, "JB", p.jb);
  instance_opt(inst, "W_SHARED", p.w_shared);
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_grouped: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  inst->grid[0] = (unsigned)p.grid[0];
  inst->grid[1] = (unsigned)p.grid[1];
  inst->grid[2] = 1;
  inst->block[0] = (unsigned)p.threads;
  inst->block[1] = inst->block[2] = 1;
  inst->smem_bytes = (size_t)p.smem_bytes;
  instance_conv_args(inst);
  (void)a;
  return CT_OK;
}

/* Derived sizes for the cost model, log2-scaled. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  plan p;
  make_plan(w, s, cfg, &p);
  geom3 g;
  workload_geom(w, &g);
  const long blocks = p.grid[0] * p.grid[1];
  /* outputs computed over outputs kept: the tiles' padding */
  const double waste = (double)(p.ntx * p.tw) / g.out[2] * (double)(p.nty * p.th) / g.out[1] *
                       (double)(p.ntd * p.td) / g.out[0] * (double)(p.grid[1] * p.bf) / p.g.k4;
  const double v[] = {
      p.threads, p.acc, p.regs,   p.smem_bytes + 1, blocks, (double)blocks * p.threads,
      waste,     p.pix, p.g.nwin, p.stage + 1};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* The least padding of a power-of-two tile of cands (at most hi) over
 * extent, ties to the larger tile. */
static int best_tile(long extent, int lo, int hi) {
  int best = lo;
  long best_pad = cdiv(extent, lo) * lo;
  for (int t = lo * 2; t <= hi; t *= 2) {
    long pad = cdiv(extent, t) * t;
    if (pad <= best_pad) best = t, best_pad = pad;
  }
  return best;
}

/* A default for depthwise 3x3 / 5x5 and ResNeXt's grouped 3x3: 4 (2, 1)
 * pixels a thread along W, a tile of W that wastes least, rows up to 64
 * spatial threads, output words up to 256 threads a block, the halo in
 * shared memory; then the first valid config nearest it (stage 0, fewer
 * threads), else the first valid one of the space. */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  geom3 g;
  workload_geom(w, &g);
  const long ow = g.out[2], oh = g.out[1];
  const int pix = ow >= 16 ? 4 : ow >= 4 ? 2 : 1;
  const int tw = best_tile(ow, pix, 8 * pix > 64 ? 64 : 8 * pix);
  const int tx = tw / pix;
  const int th = best_tile(oh, 1, 64 / tx < 16 ? (64 / tx < 1 ? 1 : 64 / tx) : 16);
  long k4 = w->k / 4;
  int bf = 1;
  while (bf < 32 && (long)tx * th * bf * 2 <= 256 && bf * 2 <= k4) bf *= 2;
  for (int stage = 1; stage >= 0; stage--)
    for (int bpsm = 2; bpsm >= 1; bpsm--)
      for (int b = bf; b >= 1; b /= 2) {
        config c;
        memset(&c, 0, sizeof c);
        if (!template_set_choice(s, &c, "tile_h", th) ||
            !template_set_choice(s, &c, "tile_w", tw) ||
            !template_set_choice(s, &c, "block_f", b) || !template_set_choice(s, &c, "pix", pix) ||
            !template_set_choice(s, &c, "stage", stage) ||
            !template_set_choice(s, &c, "blocks_per_sm", bpsm) ||
            !template_set_choice(s, &c, "thread_f", 1))
          continue;
        if (w->op == CT_OP_CONV3D) template_set_choice(s, &c, "tile_d", 1);
        if (valid(w, s, &c, a, NULL)) {
          *out = c;
          return 1;
        }
      }
  for (uint64_t i = 0; i < s->size; i++) {
    config c;
    if (space_config(s, i, &c, NULL) == CT_OK && valid(w, s, &c, a, NULL)) {
      *out = c;
      return 1;
    }
  }
  return 0;
}

TEMPLATE_PAIR(conv2d_nchw4c_grouped, conv3d_ncdhw4c_grouped, CT_LAYOUT_NCHW4C, knobs, refusal,
              valid, make_instance, describe, preferred);
