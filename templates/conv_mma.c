/*
 * conv_mma.c: the C descriptor of conv2d_nchw4c_mma and conv3d_ncdhw4c_mma
 * (kernel body: conv_mma.cuh): their knob space, validity, the instance, the
 * features for the cost model and a default config.
 *
 * Knobs: block_m, block_n (the block tile), block_k (bytes of the reduction
 * per pipeline stage: 32, 64 or 128), warp_m, warp_n (the warp tile), stages, smem_layout
 * (0: rows padded by 8 words, 1: XOR swizzle), split_k (blocks of a
 * cluster sharing a tile's reduction), raster (tiles grouped along M),
 * persistent, epi_smem (stores staged through shared memory) and a_vec
 * (16-byte data loads; present only for 1x1, stride 1, unpadded layers).
 *
 * Validity, decided before any compile (each rule is a fact of the kernel
 * or of the hardware): mma.sync.m16n8k32 int8 needs sm_80, clusters (split_k
 * > 1) sm_90; warp tile within the block tile; 1 to 16 warps; accumulators
 * and a register estimate within 255 per thread and the block's registers;
 * shared memory within the opt-in limit; split_k at most the reduction's
 * slices; tiles not larger than twice what the layer has (a larger tile
 * computes only padding); raster and persistent only where they change the
 * order or the grid (no duplicate points).
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* Addresses, loop counters, pipeline indices, params: a lower bound. */
#define MMA_REG_OVERHEAD 40

static const int tiles_mn[] = {32, 64, 128, 256};
static const int block_ks[] = {32, 64, 128};
static const int warp_ms[] = {16, 32, 64};
static const int warp_ns[] = {16, 32, 64};
static const int stage_counts[] = {2, 3, 4, 5};
static const int zero_one[] = {0, 1};
static const int split_ks[] = {1, 2, 4, 8};
static const int rasters[] = {1, 4, 16};
static const int a_vecs[] = {1, 4};

static int a_vec_possible(const ct_workload *w);

static const knob_def knobs[] = {
    KNOB("block_m", tiles_mn, 128),
    KNOB("block_n", tiles_mn, 128),
    KNOB("block_k", block_ks, 64),
    KNOB("warp_m", warp_ms, 64),
    KNOB("warp_n", warp_ns, 64),
    KNOB("stages", stage_counts, 3),
    KNOB("smem_layout", zero_one, 1),
    KNOB("split_k", split_ks, 1),
    KNOB("raster", rasters, 1),
    KNOB("persistent", zero_one, 0),
    KNOB("epi_smem", zero_one, 0),
    KNOB_IF("a_vec", a_vecs, 1, a_vec_possible),
    KNOB_END,
};

typedef struct mplan {
  int bm, bn, bk, wm, wn, stages, swizzle, split_k, raster, persist, epi_smem, a_vec;
  long m_total, kwords, kt_total, tiles_m, tiles_n, tiles;
  long warps, threads, acc, regs, smem_bytes, grid_x, resident;
} mplan;

static const char *refusal(const ct_workload *w, ct_op op) {
  const char *reason = template_conv_refusal(w, op);
  if (!reason && w->epi.d2s_block) reason = "depth_to_space runs on the dp4a templates";
  return reason;
}

/* 16-byte data loads: 4 consecutive positions of one channel chunk. */
static int a_vec_possible(const ct_workload *w) {
  geom3 gg, *g = &gg;
  workload_geom(w, g);
  int unit = 1;
  for (int d = 0; d < 3; d++)
    unit = unit && g->ker[d] == 1 && g->str[d] == 1 && g->pb[d] == 0 && g->pa[d] == 0;
  return unit && (g->out[0] * g->out[1] * g->out[2]) % 4 == 0;
}

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

static void make_plan(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                      mplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->bm = knobs_get(knobs, s, cfg, "block_m");
  p->bn = knobs_get(knobs, s, cfg, "block_n");
  p->bk = knobs_get(knobs, s, cfg, "block_k");
  p->wm = knobs_get(knobs, s, cfg, "warp_m");
  p->wn = knobs_get(knobs, s, cfg, "warp_n");
  p->stages = knobs_get(knobs, s, cfg, "stages");
  p->swizzle = knobs_get(knobs, s, cfg, "smem_layout");
  p->split_k = knobs_get(knobs, s, cfg, "split_k");
  p->raster = knobs_get(knobs, s, cfg, "raster");
  p->persist = knobs_get(knobs, s, cfg, "persistent");
  p->epi_smem = knobs_get(knobs, s, cfg, "epi_smem");
  p->a_vec = knobs_get(knobs, s, cfg, "a_vec");

  long positions = g.out[0] * g.out[1] * g.out[2];
  p->m_total = g.n * positions;
  p->kwords = g.c / 4 * g.ker[0] * g.ker[1] * g.ker[2];
  p->kt_total = ceil_div(p->kwords, p->bk / 4);
  p->tiles_m = ceil_div(p->m_total, p->bm);
  p->tiles_n = ceil_div(4 * ceil_div(g.k, 4), p->bn);
  p->tiles = p->tiles_m * p->tiles_n;
  p->warps = p->wm > 0 && p->wn > 0 ? (long)(p->bm / p->wm) * (p->bn / p->wn) : 0;
  p->threads = 32 * p->warps;
  long mi = p->wm / 16, nj = p->wn / 8;
  p->acc = mi * nj * 4 + (w->epi.weight_zero_point ? mi * 4 : 0);
  long a_row = p->bm / p->a_vec;
  long mslot = p->threads > 0 && a_row > p->threads ? a_row / p->threads : 1;
  p->regs = p->acc + mi * 4 + nj * 2 + 4 * mslot + MMA_REG_OVERHEAD;
  long bkw = p->bk / 4;
  long pad = p->swizzle ? 0 : 8;
  /* A rows pair two kwords with 4-byte data loads (conv_mma.cuh) */
  long a_words = p->a_vec == 1 ? bkw / 2 * (2 * p->bm + pad) : bkw * (p->bm + pad);
  long pipe = (long)p->stages * (a_words + bkw * (p->bn + pad));
  long split = p->split_k > 1 ? p->threads * p->acc : 0;
  long epi = p->epi_smem ? (long)p->bm * p->bn : 0;
  long words = pipe > split ? pipe : split;
  if (epi > words) words = epi;
  p->smem_bytes = 4 * words;
  /* blocks resident per SM, for the persistent grid */
  long per_sm = 32;
  if (p->threads > 0 && 2048 / p->threads < per_sm) per_sm = 2048 / p->threads;
  if (a->smem_per_sm_bytes > 0 && a->smem_per_sm_bytes / (p->smem_bytes + 1024) < per_sm)
    per_sm = a->smem_per_sm_bytes / (p->smem_bytes + 1024);
  long regs_block = ((p->regs + 7) / 8 * 8) * p->threads;
  if (regs_block > 0 && a->regs_per_sm / regs_block < per_sm) per_sm = a->regs_per_sm / regs_block;
  if (per_sm < 1) per_sm = 1;
  long sms = a->sm_count > 0 ? a->sm_count : 132;
  p->resident = sms * per_sm / p->split_k;
  if (p->resident < 1) p->resident = 1;
  p->grid_x = p->persist && p->tiles > p->resident ? p->resident : p->tiles;
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  mplan p;
  make_plan(w, s, cfg, a, &p);
  if (a->cc_major < 8)
    return template_fail(why, "mma.sync.m16n8k32 int8 needs sm_80 or later, not sm_%ld%ld",
                         a->cc_major, a->cc_minor);
  if (p.split_k > 1 && a->cc_major < 9)
    return template_fail(why, "split_k %ld needs thread-block clusters (sm_90); this is sm_%ld",
                         p.split_k, a->cc_major * 10 + a->cc_minor);
  if (p.wm > p.bm) return template_fail(why, "warp_m %ld is larger than block_m %ld", p.wm, p.bm);
  if (p.wn > p.bn) return template_fail(why, "warp_n %ld is larger than block_n %ld", p.wn, p.bn);
  if (p.warps > 16) return template_fail(why, "%ld warps per block; at most %ld", p.warps, 16);
  if (p.threads > a->max_threads_per_block)
    return template_fail(why, "%ld threads per block; at most %ld", p.threads,
                         a->max_threads_per_block);
  if (p.acc > 128)
    return template_fail(why, "%ld accumulators per thread; at most %ld", p.acc, 128);
  if (!template_block_fits(a, p.threads, p.regs, p.smem_bytes, why)) return 0;
  if (p.split_k > p.kt_total)
    return template_fail(why, "split_k %ld, but the reduction has %ld slices", p.split_k,
                         p.kt_total);
  if (!template_tile_fits("block_m", p.bm, 32, p.m_total, "positions", why) ||
      !template_tile_fits("block_n", p.bn, 32, 4 * ceil_div(w->k, 4), "channels (padded to 4)",
                          why))
    return 0;
  if (p.raster > 1 && p.tiles_n == 1)
    return template_fail(why, "raster %ld changes nothing with %ld tile along N", p.raster,
                         p.tiles_n);
  if (p.raster > 4 && p.tiles_m <= 4)
    return template_fail(why, "raster %ld is raster 4 with %ld tiles along M", p.raster, p.tiles_m);
  if (p.raster > 1 && p.tiles_m == 1)
    return template_fail(why, "raster %ld changes nothing with %ld tile along M", p.raster,
                         p.tiles_m);
  if (p.persist && p.tiles <= p.resident)
    return template_fail(why, "persistent with %ld tiles for %ld resident blocks: the plain grid",
                         p.tiles, p.resident);
  if (p.epi_smem && w->out_type != CT_DTYPE_INT32) {
    geom3 g;
    workload_geom(w, &g);
    if ((g.out[0] * g.out[1] * g.out[2]) % 4)
      return template_fail(why,
                           "a staged 8-bit epilogue needs positions %% 4 == 0, not %ld (%% %ld)",
                           g.out[0] * g.out[1] * g.out[2], 4);
  }
  if (p.grid_x > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p.grid_x, 2147483647L);
  return 1;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  mplan p;
  make_plan(w, s, cfg, a, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_mma");
  inst->n_options = 0;
  instance_conv_options(inst, w);
  knobs_options(knobs, s, cfg, inst);
  instance_opt(inst, "MMA_GRID", p.grid_x);
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_mma: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  inst->grid[0] = (unsigned)p.grid_x;
  inst->grid[1] = (unsigned)p.split_k;
  inst->grid[2] = 1;
  inst->block[0] = (unsigned)p.threads;
  inst->block[1] = inst->block[2] = 1;
  inst->smem_bytes = (size_t)p.smem_bytes;
  instance_conv_args(inst);
  return CT_OK;
}

/* Derived sizes for the cost model, log2-scaled where they span decades. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  arch a = {.sm_count = 132, .smem_per_sm_bytes = 233472, .regs_per_sm = 65536};
  mplan p;
  make_plan(w, s, cfg, &a, &p);
  const double v[] = {p.threads, p.acc,     p.regs,     p.smem_bytes + 1,
                      p.tiles,   p.split_k, p.kt_total, (double)p.tiles * p.split_k,
                      p.bm,      p.bn,      p.stages};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning: the largest square-ish tile that gives every
 * SM a block, 64x64 warp tiles where they fit, split-K while the grid is
 * small, 3 stages of 64 bytes, the XOR layout. */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  static const int bms[] = {128, 64, 32, 256};
  static const int bns[] = {128, 64, 32, 256};
  static const int wms[] = {64, 32, 16};
  static const int wns[] = {64, 32, 16};
  static const int splits[] = {1, 2, 4, 8};
  long sms = a->sm_count > 0 ? a->sm_count : 132;
  int found = 0;
  long best_blocks = 0;
  config c;
  memset(&c, 0, sizeof c);
  for (int im = 0; im < 4; im++)
    for (int in = 0; in < 4; in++)
      for (int iw = 0; iw < 3; iw++)
        for (int iv = 0; iv < 3; iv++)
          for (int is = 0; is < 4; is++) {
            if (!(template_set_choice(s, &c, "block_m", bms[im]) &&
                  template_set_choice(s, &c, "block_n", bns[in]) &&
                  template_set_choice(s, &c, "block_k", 64) &&
                  template_set_choice(s, &c, "warp_m", wms[iw]) &&
                  template_set_choice(s, &c, "warp_n", wns[iv]) &&
                  template_set_choice(s, &c, "stages", 3) &&
                  template_set_choice(s, &c, "smem_layout", 1) &&
                  template_set_choice(s, &c, "split_k", splits[is]) &&
                  template_set_choice(s, &c, "raster", 1) &&
                  template_set_choice(s, &c, "persistent", 0) &&
                  template_set_choice(s, &c, "epi_smem", 0)))
              continue;
            template_set_choice(s, &c, "a_vec", 4);
            if (!valid(w, s, &c, a, NULL)) {
              template_set_choice(s, &c, "a_vec", 1);
              if (!valid(w, s, &c, a, NULL)) continue;
            }
            mplan p;
            make_plan(w, s, &c, a, &p);
            long blocks = p.tiles * p.split_k;
            /* the first (largest tiles, least split) that fills the SMs;
             * else the one with the most blocks */
            if (blocks >= sms) {
              *out = c;
              return 1;
            }
            if (!found || blocks > best_blocks) {
              *out = c;
              best_blocks = blocks;
              found = 1;
            }
          }
  return found;
}

TEMPLATE_PAIR(conv2d_nchw4c_mma, conv3d_ncdhw4c_mma, CT_LAYOUT_NCHW4C, knobs, refusal, valid,
              make_instance, describe, preferred);
