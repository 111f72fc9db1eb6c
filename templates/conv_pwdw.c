/*
 * conv_pwdw.c: the C descriptor of conv2d_nhwc_pwdw (conv_pwdw.cuh): a
 * pointwise conv fused into the depthwise conv it feeds (the workload's
 * pre_c), channels-last, int8. Its knob space, validity, the instance, the
 * features for the cost model and a default. conv2d only: the fused blocks
 * of the mobile nets are 2D (a 3D one would need the window's depth in
 * shared memory as well).
 *
 * Knobs: tile_h, tile_w (a block's output pixels), cb8 (its channels in
 * eights: the pointwise conv's n-tiles and the depthwise conv's planes),
 * warps, pixt (output pixels a thread of the depthwise conv, along a row)
 * and blocks_per_sm (launch bounds).
 *
 * Validity (each a fact of the kernel): sm_80 or later; cb8 x 8 dividing C;
 * pixt dividing tile_w, pixt x stride a multiple of 4 (aligned words);
 * tiles not larger than twice the output (rows, columns); A, B and the
 * planes within shared memory for blocks_per_sm blocks, and a register
 * estimate within what they leave; the grid within its limits. Cost: a few
 * dozen operations.
 */
#include <stdio.h>
#include <string.h>

#include "core/quant.h"
#include "templates/template.h"

/* Addresses, loop counters, the two heads. */
#define PWDW_REG_BASE 56
/* The pointwise conv's input channels at most: A's rows (a window of 18 x
 * 18 pixels takes 90 KB at 256 channels). */
#define PWDW_MAX_PRE_C 512

static const int tile_hs[] = {1, 2, 4, 7, 8, 14, 16};
static const int tile_ws[] = {4, 8, 12, 14, 16, 28, 32};
static const int cb8s[] = {1, 2, 3, 4, 6, 8, 12, 16};
static const int warpss[] = {2, 4, 8};
static const int pixts[] = {2, 4, 8};
static const int blocks_per_sms[] = {1, 2, 3, 4, 6, 8};

static const knob_def knobs[] = {
    KNOB("tile_h", tile_hs, 8),
    KNOB("tile_w", tile_ws, 16),
    KNOB("cb8", cb8s, 4),
    KNOB("warps", warpss, 4),
    KNOB("pixt", pixts, 4),
    KNOB("blocks_per_sm", blocks_per_sms, 2),
    KNOB_END,
};

static const char *refusal(const ct_workload *w, ct_op op) {
  if (w->op != op || op != CT_OP_CONV2D) return "it runs conv2d only";
  if (w->layout != CT_LAYOUT_NHWC) return "it needs layout nhwc";
  if (w->pre_c <= 0) return "it runs a pointwise conv fused into a depthwise conv (pre_c) only";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups != w->c || w->k != w->c)
    return "it runs depthwise convs of channel multiplier 1 only (groups = c = k)";
  if (w->c % 8) return "C must be a multiple of 8 (mma n-tiles of 8 channels)";
  if (w->pre_c % 8) return "pre_c must be a multiple of 8 (8-byte pieces of a pixel)";
  if (w->pre_c > PWDW_MAX_PRE_C) return "pre_c above 512: the window's rows would not fit";
  if (w->kernel[0] > 8 || w->kernel[1] > 8)
    return "a kernel above 8 x 8 (a thread keeps 4 channels' filters in registers)";
  if (w->dilation[0] != 1 || w->dilation[1] != 1) return "it runs no dilation";
  if (w->out_type == CT_DTYPE_INT32) return "it needs an 8-bit output";
  if (w->out_type != w->data_type)
    return "the output type must be the intermediate's (the two convs' outputs share one "
           "epilogue type)";
  if (w->epi.residual || w->epi.d2s_block || w->epi.weight_zero_point ||
      w->pre_epi.weight_zero_point)
    return "a residual, depth_to_space and weight zero points run on other templates";
  if (w->pre_epi.rounding != w->epi.rounding || w->pre_epi.scale != w->epi.scale)
    return "the two convs must share their rounding and their scale mode";
  return NULL;
}

typedef struct pdplan {
  int th, tw, cb8, warps, pixt, minb;
  long threads, cb, cpad, rsa, hh, ww, wwp, npix, mtiles, xw, pr, psw, smem_bytes, regs;
  long oh, ow, twn, thn, grid_x, grid_y;
} pdplan;

static long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}

/* The sizes of conv_pwdw.cuh, macro for macro. */
static void make_plan(const ct_workload *w, const space *s, const config *cfg, pdplan *p) {
  geom3 g;
  workload_geom(w, &g);
  p->th = knobs_get(knobs, s, cfg, "tile_h");
  p->tw = knobs_get(knobs, s, cfg, "tile_w");
  p->cb8 = knobs_get(knobs, s, cfg, "cb8");
  p->warps = knobs_get(knobs, s, cfg, "warps");
  p->pixt = knobs_get(knobs, s, cfg, "pixt");
  p->minb = knobs_get(knobs, s, cfg, "blocks_per_sm");
  const long sh = g.str[1], sw = g.str[2], kh = g.ker[1], kw = g.ker[2];
  p->threads = 32L * p->warps;
  p->cb = 8L * p->cb8;
  p->cpad = ceil_div(w->pre_c, 32) * 32;
  p->rsa = p->cpad + 16;
  p->hh = (p->th - 1) * sh + kh;
  p->ww = (p->tw - 1) * sw + kw;
  p->wwp = (p->ww + 1) / 2 * 2;
  p->npix = p->hh * p->wwp;
  p->mtiles = ceil_div(p->npix, 16);
  p->xw = ceil_div((p->pixt - 1) * sw + kw, 4);
  const long prb0 = (p->tw - p->pixt) * sw + 4 * p->xw;
  p->pr = ceil_div(prb0 > p->wwp ? prb0 : p->wwp, 4) * 4;
  const long psw0 = ceil_div(p->hh * p->pr, 4);
  p->psw = psw0 % 2 ? psw0 : psw0 + 1;
  p->smem_bytes = p->mtiles * 16 * p->rsa + p->cb * p->rsa + p->cb * 4 * p->psw + 24 * p->cb +
                  ceil_div(p->cb * kh * kw, 16) * 16;
  /* about 56 + the m-tiles' place and mask (2 a warp's m-tile), the B
   * fragments (2 a k-step), the depthwise conv's filters (4 channels x
   * kernel rows x words), sums (4 a pixel), words of a row and the
   * channels' values (16) */
  const long mpw = ceil_div(p->mtiles, p->warps), kww = ceil_div(kw, 4);
  const long pw = 2 * mpw + 2 * (p->cpad / 32);
  const long dw = 4 * kh * kww + 4L * p->pixt + p->xw + 16;
  p->regs = PWDW_REG_BASE + (pw > dw ? pw : dw);
  p->oh = g.out[1];
  p->ow = g.out[2];
  p->twn = ceil_div(p->ow, p->tw);
  p->thn = ceil_div(p->oh, p->th);
  p->grid_x = g.n * p->twn * p->thn;
  p->grid_y = w->c / (p->cb > 0 ? p->cb : 1);
}

static int plan_valid(const ct_workload *w, const pdplan *p, const arch *a, char *why) {
  if (a->cc_major < 8)
    return template_fail(why, "int8 mma.sync needs sm_80 or later, not sm_%ld%ld", a->cc_major,
                         a->cc_minor);
  if (w->c % p->cb)
    return template_fail(why, "cb8 x 8 = %ld channels does not divide C = %ld", p->cb, w->c);
  if (p->tw % p->pixt)
    return template_fail(why, "pixt %ld does not divide tile_w %ld", p->pixt, p->tw);
  if ((p->pixt * w->stride[1]) % 4)
    return template_fail(why, "pixt %ld x stride %ld is not a multiple of 4 (aligned words)",
                         p->pixt, w->stride[1]);
  if (!template_tile_fits("tile_h", p->th, 1, p->oh, "output rows", why) ||
      !template_tile_fits("tile_w", p->tw, 4, p->ow, "output columns", why) ||
      !template_blocks_fit(a, p->threads, p->minb, p->smem_bytes, why) ||
      !template_regs_fit(a, p->threads, p->minb, p->regs, why))
    return 0;
  if (p->grid_y > 65535)
    return template_fail(why, "%ld blocks along grid y; at most %ld", p->grid_y, 65535);
  if (p->grid_x > 2147483647L)
    return template_fail(why, "%ld blocks along grid x; at most %ld", p->grid_x, 2147483647L);
  return 1;
}

static int valid(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                 char *why) {
  pdplan p;
  make_plan(w, s, cfg, &p);
  return plan_valid(w, &p, a, why);
}

static ct_status make_instance(const ct_workload *w, const space *s, const config *cfg,
                               const arch *a, instance *inst, ct_err *err) {
  (void)a;
  pdplan p;
  make_plan(w, s, cfg, &p);
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "conv_pwdw");
  inst->n_options = 0;
  instance_conv_options(inst, w);
  instance_opt(inst, "PRE_C", w->pre_c);
  instance_opt(inst, "PRE_U8", w->pre_data_type == CT_DTYPE_UINT8);
  instance_opt(inst, "PRE_OFFW", (long)quant_pre_offset(w));
  instance_opt(inst, "PRE_WOFFW", (long)quant_pre_weights_offset(w));
  knobs_options(knobs, s, cfg, inst); /* each knob as its upper-case macro */
  instance_opt(inst, "CT_THREADS", p.threads);
  instance_opt(inst, "CT_SMEM_BYTES", p.smem_bytes);
  if (inst->n_options >= INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INTERNAL, "conv_pwdw: more than %d NVRTC options",
                   INSTANCE_MAX_OPTIONS);
  if (quant_pre_row_bytes(w) != (size_t)p.cpad)
    return ERR_SET(err, CT_ERR_INTERNAL,
                   "conv_pwdw: the params' weight rows are %zu bytes, not %ld",
                   quant_pre_row_bytes(w), p.cpad);
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

/* Derived sizes for the cost model, log2-scaled: the window's pixels per
 * output pixel (the pointwise conv's work), the share of computed outputs
 * that exist, the blocks, and the bytes of shared memory. */
static int describe(const ct_workload *w, const space *s, const config *cfg, float *out, int max) {
  pdplan p;
  make_plan(w, s, cfg, &p);
  const double tile = (double)p.th * p.tw;
  const double v[] = {p.threads,
                      p.regs,
                      p.smem_bytes,
                      p.grid_x,
                      p.grid_y,
                      (double)p.grid_x * p.grid_y * p.threads,
                      p.th,
                      p.tw,
                      p.cb8,
                      p.warps,
                      p.pixt,
                      p.minb,
                      (double)p.mtiles * 16 / tile,
                      (double)p.oh * p.ow / ((double)p.thn * p.th * p.twn * p.tw),
                      (double)p.mtiles / p.warps,
                      tile * p.cb / ((double)p.threads * 4 * p.pixt)};
  return template_features(v, (int)(sizeof v / sizeof v[0]), out, max);
}

/* A default without tuning (a model; the GPU has not ranked these): the
 * bytes the layer must move over those a config reads (each channel block
 * reads its window again), the outputs over the pointwise conv's rows
 * computed for them (the window's overlap), the share of computed outputs
 * that exist, the SMs kept busy (at least two waves of blocks, 512 threads
 * an SM). */
static int preferred(const ct_workload *w, const space *s, const arch *a, config *out) {
  config c;
  memset(&c, 0, sizeof c);
  int found = 0;
  double best = 0;
  const long sms = a->sm_count > 0 ? a->sm_count : 132;
  const long smem_sm = a->smem_per_sm_bytes > 0 ? a->smem_per_sm_bytes : 233472;
  for (size_t ih = 0; ih < sizeof tile_hs / sizeof *tile_hs; ih++)
    for (size_t iw = 0; iw < sizeof tile_ws / sizeof *tile_ws; iw++)
      for (size_t ic = 0; ic < sizeof cb8s / sizeof *cb8s; ic++)
        for (size_t ip = 0; ip < sizeof pixts / sizeof *pixts; ip++) {
          if (!(template_set_choice(s, &c, "tile_h", tile_hs[ih]) &&
                template_set_choice(s, &c, "tile_w", tile_ws[iw]) &&
                template_set_choice(s, &c, "cb8", cb8s[ic]) &&
                template_set_choice(s, &c, "warps", 4) &&
                template_set_choice(s, &c, "pixt", pixts[ip]) &&
                template_set_choice(s, &c, "blocks_per_sm", 2)))
            continue;
          pdplan p;
          make_plan(w, s, &c, &p);
          if (!plan_valid(w, &p, a, NULL)) continue;
          long blocks = smem_sm / (p.smem_bytes + 1024);
          if (blocks > 2048 / p.threads) blocks = 2048 / p.threads;
          if (blocks > 32) blocks = 32;
          if (blocks < 1) continue;
          const double tile = (double)p.th * p.tw;
          const double overlap = tile * w->stride[0] * w->stride[1] / ((double)p.mtiles * 16);
          const double used = (double)p.oh * p.ow / ((double)p.thn * p.th * p.twn * p.tw);
          const double total = (double)p.grid_x * p.grid_y;
          const double waves = total / (double)(sms * blocks);
          const double fill = waves >= 2 ? 1.0 : waves / 2;
          const double occ = blocks * p.threads >= 512 ? 1.0 : blocks * p.threads / 512.0;
          /* a thread's work: a few items of the depthwise conv each */
          const double items = tile * p.cb / (4.0 * p.pixt * p.threads);
          const double it = items >= 1 && items <= 4 ? 1.0 : 0.8;
          /* the bytes a block column reads again: the window for each of
           * the grid's channel blocks, against those the layer must move */
          const double px = (double)p.thn * p.th * p.twn * p.tw;
          const double need = (double)w->pre_c * w->stride[0] * w->stride[1] + w->c;
          const double moved =
              (double)w->pre_c * p.grid_y * (double)p.npix * p.thn * p.twn / px + w->c;
          const double score = need / moved * overlap * used * fill * occ * it;
          if (!found || score > best) {
            *out = c;
            best = score;
            found = 1;
          }
        }
  return found;
}

static int conv2d_nhwc_pwdw_supports(const ct_workload *w, char *why) {
  return template_supports_pre(w, CT_OP_CONV2D, refusal, why);
}

static ct_status conv2d_nhwc_pwdw_space(const ct_workload *w, space *s, ct_err *err) {
  return knobs_space(knobs, w, s, err);
}

const template_desc tpl_conv2d_nhwc_pwdw = {.name = "conv2d_nhwc_pwdw",
                                            .source = "conv2d_nhwc_pwdw.cu",
                                            .op = CT_OP_CONV2D,
                                            .layout = CT_LAYOUT_NHWC,
                                            .supports = conv2d_nhwc_pwdw_supports,
                                            .space = conv2d_nhwc_pwdw_space,
                                            .valid = valid,
                                            .instance = make_instance,
                                            .describe = describe,
                                            .preferred = preferred,
                                            .knobs = knobs};
