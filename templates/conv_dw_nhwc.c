/*
 * conv_dw_nhwc.c: the C descriptor of conv2d_nhwc_dw and conv3d_ndhwc_dw
 * (kernel body: conv_dw_nhwc.cuh): channels-last depthwise convolution (G
 * = C, channel multiplier M = K / C) with exact float multiply-adds or
 * dp4a over a kernel row's taps. Its knob space, validity, the instance,
 * the features for the cost model and a default.
 *
 * Knobs: chans (a thread's consecutive output channels: 4, 8, 16), pix and
 * rows (its output columns and rows), block_c, block_w, block_h (threads
 * of a block along channels, columns, rows), staging (1: the block's
 * input window in shared memory), blocks_per_sm (launch bounds) and mac
 * (0: FFMA on the FP32 pipe; 1: dp4a over 4 taps, multiplier 1 and no
 * column dilation) and, for conv3d, depths (a thread's output planes: 1,
 * 2 or 4, each input row loaded once for all of them).
 *
 * Validity (each a fact of the kernel): chans divides K; staging only
 * where M divides chans, and at depths 1; whole warps, 32 to 1024
 * threads; a register estimate (the filters chans x kvol, the
 * accumulators, a row of the window; or the epilogue's per-channel values)
 * within what blocks_per_sm blocks leave; the staged window within shared
 * memory; tiles (depths included) not larger than twice the layer; grid y
 * within 65535. Cost: a few dozen operations, and a loop over the
 * thread's input planes.
 */
#include <stdio.h>
#include <string.h>

#include "templates/template.h"

/* Addresses, loop counters, tile coordinates, params: a lower bound. */
#define DW_REG_OVERHEAD 24
/* The filters of 4 channels live in registers: 4 x 49 (7x7) and the rest
 * fit in 255; a longer kernel is the grouped template's. */
#define DW_MAX_KVOL 49

static const int chans_s[] = {4, 8, 16};
static const int pix_s[] = {1, 2, 4, 8};
static const int rows_s[] = {1, 2, 4, 7, 8};
/* 6, 12, 24 threads along channels, 7 along rows and columns and 7 rows
 * a thread: tiles that divide the channel counts of 3 x 2^n vectors (144,
 * 192, 576, 240, 480, 672, 1152) and the 7 x 2^n sizes (112 to 7) of the
 * mobile nets, where a power of two leaves up to half a tile of padding */
static const int block_cs[] = {1, 2, 4, 6, 8, 12, 16, 24, 32};
static const int block_ws[] = {1, 2, 4, 7, 8, 16, 32};
static const int block_hs[] = {1, 2, 4, 7, 8};
#define N_OF(a) ((int)(sizeof(a) / sizeof(a)[0]))
static const int zero_one[] = {0, 1};
static const int blocks_per_sms[] = {1, 2, 3, 4};
static const int depths_s[] = {1, 2, 4};

static const knob_def knobs[] = {
    KNOB("chans", chans_s, 8),
    KNOB("pix", pix_s, 4),
    KNOB("rows", rows_s, 2),
    KNOB("block_c", block_cs, 4),
    KNOB("block_w", block_ws, 8),
    KNOB("block_h", block_hs, 4),
    KNOB("staging", zero_one, 0),
    KNOB("blocks_per_sm", blocks_per_sms, 2),
    KNOB("mac", zero_one, 0),
    KNOB_3D("depths", depths_s, 1),
    KNOB_END,
};

static long kvol_of(const ct_workload *w) {
  geom3 g;
  workload_geom(w, &g);
  return g.ker[0] * g.ker[1] * g.ker[2];
}

static const char *refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NHWC)
    return op == CT_OP_CONV2D ? "it needs layout nhwc" : "it needs layout ndhwc";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups != w->c || w->c < 1 || w->k % w->c)
    return "it runs depthwise layers only (groups == C, K a multiple of C)";
  if (w->k % 4) return "K must be a multiple of 4 (a thread's output channels are one vector)";
  if (w->epi.d2s_block) return "depth_to_space runs on the dp4a templates";
  if (w->epi.weight_zero_point) return "weight zero points run on the packed templates";
  if (kvol_of(w) > DW_MAX_KVOL)
    return "a kernel volume above 49: the filters would not fit in registers";
  return NULL;
}

typedef struct dplan {
  int chans, pix, rows, bc, bw, bh, staging, minb, mac, depths;
  long m, mode, nin, nw, threads, wrow, hrow, zused, www, whh, cwp, smem_bytes, kvol;
  long acc, regs, grid_x, grid_y, tiles_pix, m_total, loads;
} dplan;

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

/* The sizes of conv_dw_nhwc.cuh, macro for macro. */
static void make_plan(const ct_workload *w, const space *s, const config *cfg, dplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->chans = knobs_get(knobs, s, cfg, "chans");
  p->pix = knobs_get(knobs, s, cfg, "pix");
  p->rows = knobs_get(knobs, s, cfg, "rows");
  p->bc = knobs_get(knobs, s, cfg, "block_c");
  p->bw = knobs_get(knobs, s, cfg, "block_w");
  p->bh = knobs_get(knobs, s, cfg, "block_h");
  p->staging = knobs_get(knobs, s, cfg, "staging");
  p->minb = knobs_get(knobs, s, cfg, "blocks_per_sm");
  p->mac = knobs_get(knobs, s, cfg, "mac");
  p->depths = knobs_get(knobs, s, cfg, "depths");
  p->m = w->c > 0 ? w->k / w->c : 1;
  p->mode = p->chans % p->m == 0 ? 0 : p->m % p->chans == 0 ? 1 : 2;
  p->nin = p->mode == 0 ? p->chans / p->m : p->mode == 1 ? 1 : p->chans;
  p->nw = ceil_div(p->nin, 4);
  p->kvol = g.ker[0] * g.ker[1] * g.ker[2];
  p->threads = (long)p->bc * p->bw * p->bh;
  p->wrow = (p->pix - 1) * g.str[2] + (g.ker[2] - 1) * g.dil[2] + 1;
  p->hrow = (p->rows - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  /* the input planes a thread's depths read (the kernel's plane_used) */
  p->zused = 0;
  for (long z = 0; z < (p->depths - 1) * g.str[0] + (g.ker[0] - 1) * g.dil[0] + 1; z++)
    for (long d = 0; d < p->depths; d++) {
      const long e = z - d * g.str[0];
      if (e >= 0 && e % g.dil[0] == 0 && e / g.dil[0] < g.ker[0]) {
        p->zused++;
        break;
      }
    }
  p->www = ((long)p->bw * p->pix - 1) * g.str[2] + (g.ker[2] - 1) * g.dil[2] + 1;
  p->whh = ((long)p->bh * p->rows - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  p->cwp = ceil_div((long)p->bc * p->nin, 16) * 16;
  p->smem_bytes = p->staging ? g.ker[0] * p->whh * p->www * p->cwp : 0;
  p->acc = (long)p->depths * p->rows * p->pix * p->chans;
  /* the loop: filters, accumulators, a row's words and its floats (mac
   * 1: the filter words, a row's words, its channels' byte streams and
   * each output column's tap words); the epilogue: values and each
   * channel's params (about 6 words) */
  const long kww = ceil_div(g.ker[2], 4);
  const long xb = ((p->pix - 1) * g.str[2] + 3) / 4 + kww;
  const long loop = p->mac ? p->chans * g.ker[0] * g.ker[1] * kww + p->acc + p->wrow * p->nw +
                                 p->chans * xb + p->pix * kww * p->chans
                           : p->chans * p->kvol + p->acc + p->wrow * p->nw + p->nin;
  const long epi = p->acc + 6L * p->chans;
  p->regs = (loop > epi ? loop : epi) + DW_REG_OVERHEAD;
  p->grid_x = g.n * ceil_div(g.out[0], p->depths) * ceil_div(g.out[1], (long)p->bh * p->rows) *
              ceil_div(g.out[2], (long)p->bw * p->pix);
  p->grid_y = ceil_div(g.k, (long)p->bc * p->chans);
  p->tiles_pix = p->grid_x * p->depths * p->bh * p->rows * p->bw * p->pix;
  p->m_total = g.n * g.out[0] * g.out[1] * g.out[2];
  /* input pixels a thread loads (ALU: one PRMT a byte) */
  p->loads = p->zused * p->hrow * p->wrow;
}

/* The share of the computed output channels that exist (K over the grid's
 * blocks of block_c x chans). */
static double dw_kused(const ct_workload *w, const dplan *p) {
  return (double)w->k / (double)(p->grid_y * p->bc * p->chans);
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  dplan p;
  make_plan(w, s, cfg, &p);
  geom3 g;
  workload_geom(w, &g);
  if (w->k % p.chans) return template_fail(why, "chans %ld does not divide K %ld", p.chans, w->k);
  if (p.mac && (p.m != 1 || g.dil[2] != 1))
    return template_fail(why,
                         "mac 1 needs the multiplier 1 (is %ld) and no column dilation (is %ld)",
                         p.m, g.dil[2]);
  if (p.staging && p.mode != 0)
    return template_fail(why, "staging needs the multiplier %ld to divide chans %ld", p.m, p.chans);
  if (p.staging && p.depths != 1)
    return template_fail(why, "staging takes one output plane a thread (depths is %ld)", p.depths,
                         0);
  if (p.threads < 32 || p.threads > a->max_threads_per_block || p.threads % 32)
    return template_fail(why, "%ld threads per block; whole warps, 32 to %ld", p.threads,
                         a->max_threads_per_block);
  if (!template_tile_fits("block_w x pix", (long)p.bw * p.pix, 8, g.out[2], "output columns",
                          why) ||
      !template_tile_fits("block_h x rows", (long)p.bh * p.rows, 4, g.out[1], "output rows", why) ||
      !template_tile_fits("block_c x chans", (long)p.bc * p.chans, 32, g.k, "channels", why) ||
      !template_tile_fits("depths", p.depths, 1, g.out[0], "output planes", why) ||
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
  dplan p;
  make_plan(w, s, cfg, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_dw_nhwc");
  inst->n_options = 0;
  /* the shape options with C rounded up to 4 (CT_C4, as conv_shape.cuh
   * checks it), the real C and the multiplier apart */
  ct_workload w4 = *w;
  w4.c = (w->c + 3) / 4 * 4;
  w4.groups = 1;
  instance_conv_options(inst, &w4);
  instance_opt(inst, "DW_C", w->c);
  instance_opt(inst, "DW_M", p.m);
  knobs_options(knobs, s, cfg, inst);
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_dw_nhwc: more than %d NVRTC options",
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

/* Derived sizes for the cost model, log2-scaled: the loads per output
 * (the halo a thread reads again, and its PRMTs) and the shares of computed
 * pixels and channels that exist matter most to a memory-bound layer
 * (MobileNetV2's 96-channel stride-2 layer: 14.4-15.3 us on blocks of 32 x
 * 4 channels, a quarter of each warp idle, 12.2 on 24 x 4; without the
 * channels' share the search often settled on the former: experiments.md). */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  dplan p;
  make_plan(w, s, cfg, &p);
  const double v[] = {p.threads,
                      p.acc,
                      p.regs,
                      p.smem_bytes + 1,
                      p.grid_x,
                      p.grid_y,
                      (double)p.grid_x * p.grid_y * p.threads,
                      p.chans,
                      p.pix,
                      p.rows,
                      p.bc,
                      p.bw,
                      p.bh,
                      p.staging + 1,
                      p.minb,
                      (double)p.loads / ((double)p.pix * p.rows * p.depths),
                      p.m,
                      (double)p.m_total / (double)p.tiles_pix,
                      p.mac + 1,
                      p.depths,
                      dw_kused(w, &p),
                      dw_kused(w, &p) * (double)p.m_total / (double)p.tiles_pix};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning (a model; the GPU has not ranked these): time
 * ~ the work per output over the share of the GPU kept busy. Work per
 * output: the epilogue's ~8 int32-pipe operations plus 1.25 per input
 * pixel loaded (a PRMT a byte, the xor a word), the pipe that binds when
 * the FFMAs move to FP32; busy: 768 resident threads per SM over all SMs
 * (fill) and per SM as the register estimate allows (occupancy, full at
 * 256 resident threads: a thread's rows are independent loads, and the
 * tuned bests run 7-8 rows a thread at a fifth to a third of the warps).
 * Four channels a thread (or four input channels of a multiplier) first,
 * the others only where none is valid: every tuned best of the three
 * depthwise sets has 4, and where a model at 512 threads took 8 it lost
 * to that at 1024 on 9 of 9 2D layers (29 November, H200; 256 and 4
 * channels: 1.22x the tuned bests' time in geometric mean against 1.46x
 * for 1024 and any, faster by more than 3% on 23 of the 29 layers, slower
 * on 3, the 3D stride-2 ones and dw1152_7_k3, by 3-15%). Computed
 * pixels and channels that do not exist are wasted; 8-byte or wider
 * channel vectors, and warps that read 32 bytes or more of a pixel row,
 * are preferred, as are warps along one row, blocks of 64 threads or more
 * and launch bounds at the residency; staging is left to tuning. mac 1
 * wherever it is valid (tuned at batch 32 on the H200, it was the best of
 * both on every one of the 26 depthwise layers of mobilenetv2,
 * efficientnet_b0_dw and csn_dw3d, 1.4-2.5x the FP32 path's best); its
 * work per output: the epilogue's ~9 operations, the dp4a of each kernel
 * row (KWW a row) and 0.75 per input pixel loaded (the transposes and the
 * shifted words, a load per 4 channels); conv3d's depths share a thread's
 * loads among its planes. */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  config c;
  memset(&c, 0, sizeof c);
  int found = 0;
  double best = 0;
  const long sms = a->sm_count > 0 ? a->sm_count : 132;
  geom3 g;
  workload_geom(w, &g);
  const long kww = ceil_div(g.ker[2], 4);
  const int is3d = w->op == CT_OP_CONV3D, nd = is3d ? N_OF(depths_s) : 1;
  for (int pass = 0; pass < 2 && !found; pass++)
    for (int mac = 1; mac >= 0 && !found; mac--)
      for (int id = 0; id < nd; id++)
        for (int ic = 0; ic < N_OF(chans_s); ic++)
          for (int ip = 0; ip < N_OF(pix_s); ip++)
            for (int ir = 0; ir < N_OF(rows_s); ir++)
              for (int ibc = 0; ibc < N_OF(block_cs); ibc++)
                for (int ibw = 0; ibw < N_OF(block_ws); ibw++)
                  for (int ibh = 0; ibh < N_OF(block_hs); ibh++)
                    for (int mb = 1; mb <= 4; mb++) {
                      if (!(template_set_choice(s, &c, "chans", chans_s[ic]) &&
                            template_set_choice(s, &c, "pix", pix_s[ip]) &&
                            template_set_choice(s, &c, "rows", rows_s[ir]) &&
                            template_set_choice(s, &c, "block_c", block_cs[ibc]) &&
                            template_set_choice(s, &c, "block_w", block_ws[ibw]) &&
                            template_set_choice(s, &c, "block_h", block_hs[ibh]) &&
                            template_set_choice(s, &c, "staging", 0) &&
                            template_set_choice(s, &c, "mac", mac) &&
                            template_set_choice(s, &c, "blocks_per_sm", mb) &&
                            (!is3d || template_set_choice(s, &c, "depths", depths_s[id]))))
                        continue;
                      if (!valid(w, s, &c, a, NULL)) continue;
                      dplan p;
                      make_plan(w, s, &c, &p);
                      const double used = (double)p.m_total / (double)p.tiles_pix;
                      const double kused = dw_kused(w, &p);
                      const double lpo = (double)p.loads / ((double)p.pix * p.rows * p.depths);
                      const double cost = mac ? 9.0 + (double)g.ker[0] * g.ker[1] * kww + 0.75 * lpo
                                              : 8.0 + 1.25 * lpo;
                      const double all = (double)p.grid_x * p.grid_y * p.threads / (sms * 768.0);
                      const long regs8 = (p.regs + 7) / 8 * 8;
                      long blocks = 65536 / (regs8 * p.threads);
                      if (blocks > 2048 / p.threads) blocks = 2048 / p.threads;
                      if (blocks > 32) blocks = 32; /* resident blocks an SM takes */
                      /* launch bounds at the residency the registers allow */
                      if (mb != (blocks < 4 ? blocks : 4)) continue;
                      const long res = blocks * p.threads;
                      const double occ = res >= 256 ? 1.0 : res / 256.0;
                      if (pass == 0 && chans_s[ic] != 4 && p.nin != 4) continue;
                      const double vec = p.nin >= 8 || p.nin * p.m >= 8 ? 1.0 : 0.9;
                      const double coal = p.bc * p.nin >= 32 || p.bc * p.nin >= w->c ? 1.0 : 0.8;
                      /* a warp along one row (lanes: channels, then columns),
                       * blocks of 64 threads or more */
                      const double row =
                          p.bc * p.bw >= 32 || (long)p.bw * p.pix >= w->in[1] ? 1.0 : 0.85;
                      const double lb = p.threads >= 64 ? row : 0.8 * row;
                      const double score =
                          used * kused * (all < 1 ? all : 1) * occ * vec * coal * lb / cost;
                      if (!found || score > best) {
                        *out = c;
                        best = score;
                        found = 1;
                      }
                    }
  if (found) return 1;
  /* a layer too small or too large for those bounds: the first valid config */
  for (int ic = 0; ic < N_OF(chans_s); ic++)
    for (int ibc = 0; ibc < N_OF(block_cs); ibc++)
      for (int ibw = 0; ibw < N_OF(block_ws); ibw++)
        for (int ibh = 0; ibh < N_OF(block_hs); ibh++) {
          if (!(template_set_choice(s, &c, "chans", chans_s[ic]) &&
                template_set_choice(s, &c, "pix", 1) && template_set_choice(s, &c, "rows", 1) &&
                template_set_choice(s, &c, "block_c", block_cs[ibc]) &&
                template_set_choice(s, &c, "block_w", block_ws[ibw]) &&
                template_set_choice(s, &c, "block_h", block_hs[ibh]) &&
                template_set_choice(s, &c, "staging", 0) && template_set_choice(s, &c, "mac", 0) &&
                template_set_choice(s, &c, "blocks_per_sm", 1) &&
                (!is3d || template_set_choice(s, &c, "depths", 1))))
            continue;
          if (valid(w, s, &c, a, NULL)) {
            *out = c;
            return 1;
          }
        }
  return 0;
}

TEMPLATE_PAIR(conv2d_nhwc_dw, conv3d_ndhwc_dw, CT_LAYOUT_NHWC, knobs, refusal, valid, make_instance,
              describe, preferred);
