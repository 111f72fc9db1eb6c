/*
 * conv_pw_mma.c: the C descriptor of conv2d_nhwc_pw_mma and
 * conv3d_ndhwc_pw_mma (conv_pw_mma.cuh): dense pointwise layers (1x1 or
 * 1x1x1, no padding, any stride), channels-last, on int8 mma.sync, for the
 * memory-bound ones of few channels on one side. Its knob space, validity,
 * the instance, the features for the cost model and a default.
 *
 * Knobs: m_tiles (a tile's pixels in sixteens), n_tiles (a block's output
 * channels in eights, fixed for its life), n_per_warp (a warp's n-tiles,
 * sharing its A fragments), warps_m (warps along the pixels per n-tile
 * column), m_unroll (m-tiles a warp computes at once), stages (tiles in
 * shared memory: the next stages - 1 loading while one computes) and
 * blocks_per_sm (launch bounds, and the grid: that many blocks an SM over
 * the block columns, each looping over a fixed share of the tiles; the
 * launch's shared memory holds the SMs to that many, so that a grid
 * launched under the previous kernel's tail does not pile blocks onto the
 * SMs it frees first).
 *
 * Validity (each a fact of the kernel): sm_80 or later; n_per_warp dividing
 * n_tiles; at most 1024 threads; m_tiles at least warps_m x m_unroll (no
 * warp idles); tiles not larger than twice the layer (pixels, channels);
 * the weights, the stages and the output tile within shared memory, and a
 * register estimate within what blocks_per_sm blocks leave; grid y within
 * 65535. Cost: a few dozen operations.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* Addresses, loop counters, the header, the tile's bounds. */
#define PW_REG_BASE 48
/* C at most: a pixel row of 2048 bytes (ResNet-50's widest); the stages of
 * wider rows leave no room for a tile of 32 pixels. */
#define PW_MAX_C 2048

static const int m_tiless[] = {2, 4, 8, 16};
static const int n_tiless[] = {1, 2, 3, 4, 6, 8, 12, 16};
static const int n_per_warps[] = {1, 2, 3, 4};
static const int warps_ms[] = {1, 2, 4, 8};
static const int m_unrolls[] = {1, 2};
static const int stagess[] = {2, 3, 4};
static const int blocks_per_sms[] = {1, 2, 3, 4, 6, 8};

static const knob_def knobs[] = {
    KNOB("m_tiles", m_tiless, 8),
    KNOB("n_tiles", n_tiless, 4),
    KNOB("n_per_warp", n_per_warps, 2),
    KNOB("warps_m", warps_ms, 2),
    KNOB("m_unroll", m_unrolls, 1),
    KNOB("stages", stagess, 3),
    KNOB("blocks_per_sm", blocks_per_sms, 2),
    KNOB_END,
};

static const char *refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NHWC)
    return op == CT_OP_CONV2D ? "it needs layout nhwc" : "it needs layout ndhwc";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups > 1) return "it runs dense layers only (groups 1)";
  geom3 g;
  workload_geom(w, &g);
  if (g.ker[0] * g.ker[1] * g.ker[2] != 1) return "it runs pointwise layers only (a 1x1 kernel)";
  for (int d = 0; d < 3; d++)
    if (g.pb[d] || g.pa[d]) return "it runs pointwise layers without padding only";
  if (w->c % 8 || w->k % 8) return "C and K must be multiples of 8 (mma n-tiles of 8 channels)";
  if (w->c > PW_MAX_C) return "C above 2048: a pixel row's stages would not fit shared memory";
  if (w->epi.d2s_block) return "depth_to_space runs on the dp4a templates";
  if (w->epi.weight_zero_point) return "weight zero points run on the packed templates";
  return NULL;
}

typedef struct pwplan {
  int mt, nt, npw, wm, mu, stages, minb;
  long cpad, ks, rs, bm, bn, threads, esz, ops, smem_bytes, regs;
  long m_total, tiles_m, grid_x, grid_y;
} pwplan;

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

/* conv_pw_mma.cuh's OPS_OF: the smallest stride >= x with stride % m ==
 * m / 2. */
static long ops_of(long x, long m) {
  return x % m <= m / 2 ? x - x % m + m / 2 : x - x % m + 3 * m / 2;
}

/* The sizes of conv_pw_mma.cuh, macro for macro; the grid from a's SMs. */
static void make_plan(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                      pwplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->mt = knobs_get(knobs, s, cfg, "m_tiles");
  p->nt = knobs_get(knobs, s, cfg, "n_tiles");
  p->npw = knobs_get(knobs, s, cfg, "n_per_warp");
  p->wm = knobs_get(knobs, s, cfg, "warps_m");
  p->mu = knobs_get(knobs, s, cfg, "m_unroll");
  p->stages = knobs_get(knobs, s, cfg, "stages");
  p->minb = knobs_get(knobs, s, cfg, "blocks_per_sm");
  p->cpad = ceil_div(g.c, 32) * 32;
  p->ks = p->cpad / 32;
  p->rs = p->cpad + 16;
  p->bm = 16L * p->mt;
  p->bn = 8L * p->nt;
  p->threads = 32L * (p->nt / p->npw > 0 ? p->nt / p->npw : 1) * p->wm;
  p->esz = w->out_type == CT_DTYPE_INT32 ? 4 : 1;
  p->ops = p->esz == 4 ? ops_of(4 * p->bn, 64) : ops_of(p->bn, 32);
  const long sr = w->epi.residual ? p->bm * p->ops : 0;
  p->smem_bytes = p->bn * p->rs + p->stages * (p->bm * p->rs + sr) + p->bm * p->ops;
  /* about 48 + per n-tile a warp 16 (its two channels' epilogue values)
   * and 4 an m-tile at once (accumulators), 4 an m-tile at once (its A
   * fragment), and the B fragments where they stay in registers (2 a
   * k-step and n-tile, else 2 an n-tile loaded) */
  const long breg = p->ks * p->npw <= 8;
  p->regs = PW_REG_BASE + 16L * p->npw + 4L * p->mu * p->npw + 4L * p->mu +
            (breg ? 2 * p->ks * p->npw : 2L * p->npw);
  p->m_total = g.n * g.out[0] * g.out[1] * g.out[2];
  p->tiles_m = ceil_div(p->m_total, p->bm);
  p->grid_y = ceil_div(g.k, p->bn);
  /* the grid: at most blocks_per_sm blocks an SM (rounding up would put a
   * block column's worth of blocks beside others, each sharing an SM for
   * its whole share) */
  const long sms = a && a->sm_count > 0 ? a->sm_count : 132;
  long gx = sms * p->minb / p->grid_y;
  if (gx > p->tiles_m) gx = p->tiles_m;
  p->grid_x = gx > 0 ? gx : 1;
}

/* The dynamic shared memory to launch the grid with (smem_bytes or more):
 * enough that no more than blocks_per_sm blocks of threads threads fit an
 * SM. A block's share of the tiles is fixed, so the grid finishes when its
 * busiest SM does; launched early (programmatic dependent launch), its
 * blocks would otherwise pile onto the SMs the previous kernel frees first.
 * smem_bytes itself where the threads already pin it, the SM's size is
 * unknown, or the padding would not leave room for blocks_per_sm. Here,
 * not in template.c, which every template's version hashes: the channels-
 * last wgmma family's persistent grids gained nothing from it (MobileNetV2
 * b32, h200-issue35/pdl-pin-5adc285). */
static long pinned_smem(const arch *a, long threads, long blocks_per_sm, long smem_bytes) {
  if (!a || a->smem_per_sm_bytes <= 0 || blocks_per_sm < 1) return smem_bytes;
  if ((blocks_per_sm + 1) * threads > 2048) return smem_bytes;
  /* 1 KB per block is the runtime's; the allocation unit is 128 bytes */
  long pin = a->smem_per_sm_bytes / (blocks_per_sm + 1) - 1024 + 1;
  pin = (pin + 127) / 128 * 128;
  if (pin <= smem_bytes) return smem_bytes;
  if (blocks_per_sm * (pin + 1024) > a->smem_per_sm_bytes || pin > a->smem_optin_bytes)
    return smem_bytes;
  return pin;
}

static int plan_valid(const ct_workload *w, const pwplan *p, const arch *a, char *why) {
  if (a->cc_major < 8)
    return template_fail(why, "int8 mma.sync needs sm_80 or later, not sm_%ld%ld", a->cc_major,
                         a->cc_minor);
  if (p->nt % p->npw)
    return template_fail(why, "n_per_warp %ld does not divide n_tiles %ld", p->npw, p->nt);
  if (p->threads > a->max_threads_per_block)
    return template_fail(why, "%ld threads per block; at most %ld", p->threads,
                         a->max_threads_per_block);
  if (p->mt < (long)p->wm * p->mu)
    return template_fail(why, "%ld m-tiles of 16 pixels for warps_m x m_unroll %ld: warps idle",
                         p->mt, (long)p->wm * p->mu);
  if (!template_tile_fits("m_tiles x 16", p->bm, 32, p->m_total, "output pixels", why) ||
      !template_tile_fits("n_tiles x 8", p->bn, 8, w->k, "channels", why) ||
      !template_blocks_fit(a, p->threads, p->minb, p->smem_bytes, why) ||
      !template_regs_fit(a, p->threads, p->minb, p->regs, why))
    return 0;
  if (p->grid_y > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p->grid_y, 65535);
  if (p->tiles_m > 2147483647L)
    return template_fail(why, "%ld tiles; at most %ld", p->tiles_m, 2147483647L);
  return 1;
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  pwplan p;
  make_plan(w, s, cfg, a, &p);
  return plan_valid(w, &p, a, why);
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  pwplan p;
  make_plan(w, s, cfg, a, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_pw_mma");
  inst->n_options = 0;
  instance_conv_options(inst, w);
  instance_opt(inst, "PW_C", w->c);
  knobs_options(knobs, s, cfg, inst); /* each knob as its upper-case macro */
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_pw_mma: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  inst->grid[0] = (unsigned)p.grid_x;
  inst->grid[1] = (unsigned)p.grid_y;
  inst->grid[2] = 1;
  inst->block[0] = (unsigned)p.threads;
  inst->block[1] = inst->block[2] = 1;
  inst->arch_specific = 0;
  /* sm_90: the kernel waits on griddepcontrol before touching memory */
  inst->pdl = a->cc_major >= 9;
  /* each block's share of the tiles is fixed: launched early, the grid
   * must still land blocks_per_sm an SM (pinned_smem). Not where
   * it has more blocks than the SMs hold (more block columns than that):
   * pinned, the blocks beyond would wait for a whole share. */
  const int pin = inst->pdl && a->sm_count > 0 && p.grid_x * p.grid_y <= a->sm_count * p.minb;
  inst->smem_bytes =
      (size_t)(pin ? pinned_smem(a, p.threads, p.minb, p.smem_bytes) : p.smem_bytes);
  instance_conv_args(inst);
  return CT_OK;
}

/* Derived sizes for the cost model, log2-scaled: the share of computed
 * pixels and channels that exist, the tiles a block loops over, the times
 * the pixel rows are read (grid y) and the bytes a tile moves. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  pwplan p;
  make_plan(w, s, cfg, NULL, &p);
  const double v[] = {p.threads,
                      p.regs,
                      p.smem_bytes,
                      p.grid_x,
                      p.grid_y,
                      (double)p.grid_x * p.grid_y * p.threads,
                      p.mt,
                      p.nt,
                      p.npw,
                      p.wm,
                      p.mu,
                      p.stages,
                      p.minb,
                      p.ks,
                      (double)p.m_total / (double)(p.tiles_m * p.bm),
                      (double)w->k / (double)(p.grid_y * p.bn),
                      (double)p.tiles_m / (double)p.grid_x,
                      (double)p.bm * ((double)w->c + (double)p.bn * p.esz)};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning (a model; the GPU has not ranked these): the
 * bytes the layer must move over those a config moves (the pixel rows read
 * once per block column, grid y), times the share of computed pixels and
 * channels that exist, the SMs' threads kept busy (512 an SM or more) and
 * the loads in flight (stages - 1 tiles of rows an SM, 32 KB or more). */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  config c;
  memset(&c, 0, sizeof c);
  int found = 0;
  double best = 0;
  const long smem_sm = a->smem_per_sm_bytes > 0 ? a->smem_per_sm_bytes : 233472;
  for (int im = 0; im < 4; im++)
    for (int in = 0; in < 8; in++)
      for (int ip = 0; ip < 4; ip++)
        for (int iw = 0; iw < 4; iw++)
          for (int iu = 0; iu < 2; iu++)
            for (int is = 0; is < 3 * 2; is++) {
              if (!(template_set_choice(s, &c, "m_tiles", m_tiless[im]) &&
                    template_set_choice(s, &c, "n_tiles", n_tiless[in]) &&
                    template_set_choice(s, &c, "n_per_warp", n_per_warps[ip]) &&
                    template_set_choice(s, &c, "warps_m", warps_ms[iw]) &&
                    template_set_choice(s, &c, "m_unroll", m_unrolls[iu]) &&
                    template_set_choice(s, &c, "stages", stagess[is / 2]) &&
                    template_set_choice(s, &c, "blocks_per_sm", 2 - is % 2)))
                continue;
              pwplan p;
              make_plan(w, s, &c, a, &p);
              if (!plan_valid(w, &p, a, NULL)) continue;
              long blocks = smem_sm / (p.smem_bytes + 1024);
              if (blocks > 2048 / p.threads) blocks = 2048 / p.threads;
              if (blocks > 32) blocks = 32;
              if (blocks < 1) continue;
              const double need = (double)w->c + (double)w->k * p.esz;
              const double moved = (double)w->c * p.grid_y + (double)w->k * p.esz;
              const double used = (double)p.m_total / (double)(p.tiles_m * p.bm);
              const double kused = (double)w->k / (double)(p.grid_y * p.bn);
              const double occ = blocks * p.threads >= 512 ? 1.0 : blocks * p.threads / 512.0;
              const double flight = (double)blocks * (p.stages - 1) * p.bm * w->c;
              const double fl = flight >= 32768 ? 1.0 : 0.5 + 0.5 * flight / 32768;
              /* one block an SM only where two do not fit */
              const double one = p.minb == 1 ? 0.9 : 1.0;
              const double score = need / moved * used * kused * occ * fl * one;
              if (!found || score > best) {
                *out = c;
                best = score;
                found = 1;
              }
            }
  return found;
}

TEMPLATE_PAIR(conv2d_nhwc_pw_mma, conv3d_ndhwc_pw_mma, CT_LAYOUT_NHWC, knobs, refusal, valid,
              make_instance, describe, preferred);
