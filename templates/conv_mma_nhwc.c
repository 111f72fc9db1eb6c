/*
 * conv_mma_nhwc.c: the C descriptor of conv2d_nhwc_mma and conv3d_ndhwc_mma
 * (kernel body: conv_mma_nhwc.cuh): the channels-last templates of layers
 * with few input channels, whose mma.sync reduction runs over the
 * flattened window rows (KW x C contiguous bytes). Their knob space,
 * validity, the instance, the features for the cost model and a default.
 *
 * Knobs: tile_w (output columns per tile row: 16 to 128), tile_h (output
 * rows per tile: 1, 2, 4), block_n (output channels per block: 32, 64,
 * 128), warp_m16 (m16 blocks per warp: 1, 2, 4; the warps are the tile's
 * m16 blocks / warp_m16), blocks_per_sm (1 to 4: the launch bounds'
 * minimum, and the persistent grid is that many blocks per SM) and, with
 * groups only, groups_per_tile (1 to 32 consecutive groups run as one
 * block-diagonal convolution: a super-group; grid y runs over the
 * super-groups times their block_n tiles).
 *
 * What it runs (supports): layout nhwc / ndhwc, int8 weights, any K (K not
 * a multiple of 4 stores element by element), C not a multiple of 16 or
 * K not a multiple of 8 (the rest runs on conv2d_nhwc_wgmma at full
 * width), any groups, no dilation along W (a window row must be
 * contiguous), no weight zero points, no depth_to_space. Padding reads the
 * data zero point.
 *
 * Validity, before any compile: sm_80 or later (mma.sync int8);
 * accumulators and a register estimate within the registers; shared memory
 * (the staged weights and input rows) within the opt-in limit; tiles not
 * larger than twice what the layer (a super-group) has; groups_per_tile
 * dividing the groups, and not so few that a larger packing would fill
 * block_n's 32 channels better; blocks_per_sm blocks fitting an SM's
 * registers, shared memory and threads.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* Addresses, pixel offsets, loop counters, params: a lower bound. */
#define SM_REG_OVERHEAD 40

static const int tile_ws[] = {16, 32, 64, 128};
static const int tile_hs[] = {1, 2, 4};
static const int block_ns[] = {32, 64, 128};
static const int warp_m16s[] = {1, 2, 4};
static const int blocks_per_sms[] = {1, 2, 3, 4};
static const int groups_per_tiles[] = {1, 2, 4, 8, 16, 32};

static int grouped(const ct_workload *w) {
  return w->groups > 1;
}

/* Rows are only appended (the space's order); groups_per_tile exists for
 * G > 1 only, so that the spaces (and every cubin) of G == 1 stay as they
 * were. */
static const knob_def knobs[] = {
    KNOB("tile_w", tile_ws, 64),
    KNOB("tile_h", tile_hs, 2),
    KNOB("block_n", block_ns, 64),
    KNOB("warp_m16", warp_m16s, 2),
    KNOB("blocks_per_sm", blocks_per_sms, 2),
    KNOB_IF("groups_per_tile", groups_per_tiles, 1, grouped),
    KNOB_END,
};

typedef struct splan {
  int tw, th, bn, mi, minb, gpt;
  long groups, cin, sgk, n_sg, tiles_ns; /* a super-group's input, output channels; their count */
  long row_pad, ksteps, in_rows, srows, pstep, nalign, rowb, copyb, w_bytes, in_bytes, wraw;
  long raw_words, pf;
  long mblk, warps, threads, acc, regs, smem_bytes, tiles_m, tiles_n, grid_x, m_total;
} splan;

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

/* The refusal of the wgmma stems (conv_wgmma_stem.c), and of these
 * templates before groups and any K: the same window rows, groups 1, K a
 * multiple of 8 (the stem's stores write whole 8-channel groups). */
const char *nhwc_stem_refusal(const ct_workload *w, ct_op op);
const char *nhwc_stem_refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NHWC)
    return op == CT_OP_CONV2D ? "it needs layout nhwc" : "it needs layout ndhwc";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups != 1) return "it runs groups = 1 only";
  if (w->epi.d2s_block) return "depth_to_space runs on the dp4a templates";
  if (w->epi.weight_zero_point) return "weight zero points run on the packed templates";
  if (w->c % 16 == 0)
    return op == CT_OP_CONV2D ? "C is a multiple of 16: conv2d_nhwc_wgmma runs it at full width"
                              : "C is a multiple of 16: conv3d_ndhwc_wgmma runs it at full width";
  if (w->k % 8) return "K must be a multiple of 8 (the stores write whole 8-channel groups)";
  geom3 g;
  workload_geom(w, &g);
  if (g.dil[2] != 1) return "a dilation along W (a window row must be contiguous bytes)";
  return NULL;
}

/* These templates' own: the stems' rules less groups and K % 8. C a
 * multiple of 16 with K a multiple of 8 stays conv2d_nhwc_wgmma's (at full
 * width); with K not a multiple of 8, or groups, that template refuses it. */
static const char *refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NHWC)
    return op == CT_OP_CONV2D ? "it needs layout nhwc" : "it needs layout ndhwc";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->epi.d2s_block) return "depth_to_space runs on the dp4a templates";
  if (w->epi.weight_zero_point) return "weight zero points run on the packed templates";
  if (w->groups <= 1 && w->c % 16 == 0 && w->k % 8 == 0)
    return op == CT_OP_CONV2D
               ? "C is a multiple of 16 and K of 8: conv2d_nhwc_wgmma runs it at full width"
               : "C is a multiple of 16 and K of 8: conv3d_ndhwc_wgmma runs it at full width";
  geom3 g;
  workload_geom(w, &g);
  if (g.dil[2] != 1) return "a dilation along W (a window row must be contiguous bytes)";
  return NULL;
}

/* The sizes of conv_mma_nhwc.cuh, macro for macro. */
static void make_plan(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                      splan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->tw = knobs_get(knobs, s, cfg, "tile_w");
  p->th = knobs_get(knobs, s, cfg, "tile_h");
  p->bn = knobs_get(knobs, s, cfg, "block_n");
  p->mi = knobs_get(knobs, s, cfg, "warp_m16");
  p->minb = knobs_get(knobs, s, cfg, "blocks_per_sm");
  p->gpt = knobs_get(knobs, s, cfg, "groups_per_tile");
  /* a super-group: gpt groups (the whole layer without groups); valid()
   * refuses a gpt that does not divide the groups */
  p->groups = w->groups > 1 ? w->groups : 1;
  const long cpg = g.c / p->groups;
  p->cin = p->groups > 1 ? p->gpt * cpg : g.c;
  p->sgk = p->groups > 1 ? p->gpt * (g.k / p->groups) : g.k;
  p->n_sg = p->groups > p->gpt ? p->groups / p->gpt : 1; /* >= 1: the grid's divisor below */
  const long row_bytes = g.ker[2] * p->cin;
  p->row_pad = ceil_div(row_bytes, 32) * 32;
  p->ksteps = g.ker[0] * g.ker[1] * (p->row_pad / 32);
  p->in_rows = (p->th - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  p->srows = g.ker[0] * p->in_rows;
  p->pstep = g.str[2] * p->cin;
  p->nalign = p->pstep % 4 == 0 ? 1 : p->pstep % 2 == 0 ? 2 : 4;
  p->rowb = ceil_div((p->tw - 1) * p->pstep + p->row_pad + 4, 16) * 16;
  const long copy_raw = p->srows * p->rowb;
  p->copyb = copy_raw + ((16 - (copy_raw / 4) % 32) + 32) % 32 * 4;
  p->in_bytes = p->nalign * p->copyb;
  p->w_bytes = p->ksteps * p->bn * 32;
  /* the raw weight bytes, where the copies go later */
  p->wraw = (p->bn * g.ker[0] * g.ker[1] * g.ker[2] * cpg + 6) / 4 * 4;
  p->raw_words = p->srows * (p->rowb / 4 + 2);
  p->smem_bytes = p->w_bytes + (p->in_bytes > p->wraw ? p->in_bytes : p->wraw) + p->raw_words * 4;
  p->mblk = (long)p->th * p->tw / 16;
  p->warps = p->mblk / p->mi > 0 ? p->mblk / p->mi : 1; /* valid() refuses mblk % mi */
  p->threads = 32 * p->warps;
  p->acc = (long)p->mi * p->bn / 2;
  /* the next tile's raw words, held in registers across this one */
  p->pf = ceil_div(p->raw_words, p->threads);
  p->regs = p->acc + p->bn / 4 + 4 + p->pf + SM_REG_OVERHEAD;
  p->m_total = g.n * g.out[0] * g.out[1] * g.out[2];
  p->tiles_m = g.n * g.out[0] * ceil_div(g.out[1], p->th) * ceil_div(g.out[2], p->tw);
  p->tiles_ns = ceil_div(p->sgk, p->bn);
  p->tiles_n = p->n_sg * p->tiles_ns;
  /* persistent: blocks_per_sm blocks per SM loop over the tiles (all the
   * tiles when the SMs are unknown: a named architecture) */
  const long resident = a && a->sm_count > 0 ? (long)a->sm_count * p->minb : p->tiles_m;
  p->grid_x = p->tiles_m < resident ? p->tiles_m : resident;
  /* groups: the super-groups' columns share the resident blocks (G == 1
   * keeps its grid: a column per block_n tile, few of them) */
  if (p->groups > 1 && a && a->sm_count > 0) {
    const long per = resident / p->tiles_n > 0 ? resident / p->tiles_n : 1;
    p->grid_x = p->tiles_m < per ? p->tiles_m : per;
  }
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  splan p;
  make_plan(w, s, cfg, a, &p);
  geom3 g;
  workload_geom(w, &g);
  if (a->cc_major < 8)
    return template_fail(why, "int8 mma.sync needs sm_80 or later, not sm_%ld%ld", a->cc_major,
                         a->cc_minor);
  if (p.mblk % p.mi)
    return template_fail(why, "warp_m16 %ld does not divide the tile's %ld m16 blocks", p.mi,
                         p.mblk);
  if (p.groups > 1) {
    if (p.groups % p.gpt)
      return template_fail(why, "groups_per_tile %ld does not divide the %ld groups", p.gpt,
                           p.groups);
    /* block_n 32 over fewer than 16 channels of a super-group: more than
     * half the tile idle, where packing twice the groups would fill it */
    const long twice = 2L * p.gpt;
    if (p.bn > 2 * p.sgk && twice <= 32 && p.groups % twice == 0)
      return template_fail(why,
                           "block_n %ld over %ld channels: groups_per_tile twice as large fills it",
                           p.bn, p.sgk);
  }
  if (!template_acc_fits(p.acc, "warp_m16", p.mi, why) ||
      !template_tile_fits("tile_w", p.tw, 16, g.out[2], "output columns", why) ||
      !template_tile_fits("tile_h", p.th, 1, g.out[1], "output rows", why) ||
      !template_tile_fits("block_n", p.bn, 32, p.sgk, "channels", why) ||
      !template_blocks_fit(a, p.threads, p.minb, p.smem_bytes, why) ||
      !template_regs_fit(a, p.threads, p.minb, p.regs, why))
    return 0;
  if (p.tiles_n > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p.tiles_n, 65535);
  return 1;
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  splan p;
  make_plan(w, s, cfg, a, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_mma_nhwc");
  inst->n_options = 0;
  /* the shape options with C rounded up to 4 (CT_C4, as conv_shape.cuh
   * checks it), the real C apart */
  ct_workload w4 = *w;
  w4.c = (w->c + 3) / 4 * 4;
  instance_conv_options(inst, &w4);
  instance_opt(inst, "STEM_C", w->c);
  instance_opt(inst, "STEM_G", p.groups);
  knobs_options(knobs, s, cfg, inst);
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_mma_nhwc: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  if (p.grid_x > 2147483647L)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "conv_mma_nhwc: %ld blocks along grid x", p.grid_x);
  inst->grid[0] = (unsigned)p.grid_x;
  inst->grid[1] = (unsigned)p.tiles_n;
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

/* Derived sizes for the cost model, log2-scaled where they span decades. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  splan p;
  make_plan(w, s, cfg, NULL, &p);
  const double v[] = {p.threads,
                      p.acc,
                      p.regs,
                      p.smem_bytes + 1,
                      p.tiles_m,
                      p.tiles_n,
                      p.ksteps,
                      (double)p.tiles_m * p.tiles_n,
                      p.tw,
                      p.th,
                      p.bn,
                      p.mi,
                      p.minb,
                      p.nalign,
                      (double)p.tiles_m * p.th * p.tw / (double)p.m_total};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning: the widest tile_w that wastes at most a
 * quarter of the output columns, 2 rows, block_n 64, two m16 blocks per
 * warp, two blocks per SM (one where two do not fit); the valid config
 * nearest to that. With groups, first the groups_per_tile and block_n
 * whose tensor-core work is most useful: the share of the tile's channels
 * that exist times the share of a channel's reduction that is its own
 * group's (the rest meets the zeros off the diagonal). */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  geom3 g;
  workload_geom(w, &g);
  config c;
  memset(&c, 0, sizeof c);
  int found = 0;
  double best = 0;
  const int n_gpt = grouped(w) ? (int)(sizeof groups_per_tiles / sizeof groups_per_tiles[0]) : 1;
  for (int ig = 0; ig < n_gpt; ig++)
    for (int iw = 0; iw < 4; iw++)
      for (int ih = 0; ih < 3; ih++)
        for (int ib = 0; ib < 3; ib++)
          for (int im = 0; im < 3; im++)
            for (int ib2 = 0; ib2 < 2; ib2++) {
              if (!(template_set_choice(s, &c, "tile_w", tile_ws[iw]) &&
                    template_set_choice(s, &c, "tile_h", tile_hs[ih]) &&
                    template_set_choice(s, &c, "block_n", block_ns[ib]) &&
                    template_set_choice(s, &c, "warp_m16", warp_m16s[im]) &&
                    template_set_choice(s, &c, "blocks_per_sm", 2 - ib2)))
                continue;
              if (grouped(w) &&
                  !template_set_choice(s, &c, "groups_per_tile", groups_per_tiles[ig]))
                continue;
              if (!valid(w, s, &c, a, NULL)) continue;
              splan p;
              make_plan(w, s, &c, a, &p);
              /* computed pixels that exist, wide tiles, block_n 64, 2 rows and 2 m16 per warp */
              double used = (double)p.m_total / ((double)p.tiles_m * p.th * p.tw);
              double score = (used >= 0.75 ? 1.0 : used) + 0.01 * iw - 0.01 * (ib != 1) -
                             0.005 * (ih != 1) - 0.005 * (im != 1) - 0.02 * ib2;
              if (grouped(w)) {
                const double fill = (double)p.sgk / ((double)p.tiles_ns * p.bn);
                const double own = (double)(g.ker[2] * (g.c / p.groups)) / (double)p.row_pad;
                score += 2.0 * fill * own;
              }
              if (!found || score > best) {
                *out = c;
                best = score;
                found = 1;
              }
            }
  return found;
}

TEMPLATE_PAIR(conv2d_nhwc_mma, conv3d_ndhwc_mma, CT_LAYOUT_NHWC, knobs, refusal, valid,
              make_instance, describe, preferred);
