/*
 * test_grouped_nhwc.c: the channels-last grouped / depthwise templates
 * (templates/conv_grouped_nhwc.{c,cuh}) on the CPU: what they refuse (G =
 * 1 where a tensor-core template runs the layer), a CPU emulation of the
 * kernel's index mapping and channel selection (block, thread, rows,
 * pixels, chunks, staged window) checked exactly against a plain grouped
 * convolution for sampled valid configs; the same emulation with weight
 * zero points (the window sums xsum, the padded tap's masked words, the
 * epilogue's correction and requantization from quant_params) checked
 * exactly against reference_qconv (uint8 and int8 data, data zero points,
 * padding, G = 1 fallbacks and G > 1, 2D and 3D, int32 and 8-bit output);
 * and sampled configs (and the preferred one) compiled by NVRTC for sm_90
 * and sm_80, with and without weight zero points. The hooks are called
 * directly (not through template_space) so that grouped shapes are
 * checked whatever workload_validate accepts. CPU only; the compiles take
 * about a second each (CT_GROUPED_COMPILES, default 2 per shape and arch).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quant.cuh"
#include "core/quant.h"
#include "core/reference.h"
#include "core/rng.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"
#include "tests/kernel_check.h"
#include "tests/util.h"

/* A conv2d (d = 0) or conv3d workload, channels-last. */
static ct_workload shape(int d3, int n, int c, int k, int g, int in, int ker, int str, int pad) {
  ct_workload w;
  workload_init(&w, d3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NHWC;
  w.n = n, w.c = c, w.k = k, w.groups = g;
  for (int i = 0; i < (d3 ? 3 : 2); i++) {
    w.in[i] = in, w.kernel[i] = ker, w.stride[i] = str;
    w.pad_before[i] = w.pad_after[i] = pad;
  }
  return w;
}

static const template_desc *tpl_of(const ct_workload *w) {
  return template_find(w->op == CT_OP_CONV3D ? "conv3d_ndhwc_grouped" : "conv2d_nhwc_grouped");
}

START_TEST(refuses_what_the_tensor_cores_run_and_what_it_cannot) {
  char why[TEMPLATE_WHY_MAX];
  ct_workload w = shape(0, 1, 64, 64, 1, 56, 3, 1, 1); /* conv2d_nhwc_wgmma's */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "tensor-core"));
  /* a data zero point with padding: wgmma's too (TMA pads with zeros; the
   * params block corrects each border class) */
  w.epi.data_zero_point = 1;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "tensor-core"));
  /* a dilation along W and K = 20: neither wgmma (K % 8) nor mma (contiguous rows) */
  w = shape(1, 3, 12, 20, 1, 17, 5, 2, 2);
  w.dilation[2] = 2;
  ck_assert_msg(tpl_of(&w)->supports(&w, why), "%s", why);
  ck_assert_int_eq(template_find("conv2d_nhwc_grouped")->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "conv2d"));
  w = shape(0, 1, 64, 64, 64, 56, 3, 1, 1);
  ck_assert_msg(tpl_of(&w)->supports(&w, why), "%s", why);
  /* weight zero points: depthwise, and G = 1 where a tensor-core template
   * runs the layer without them (none takes them: the layer is this one's) */
  w.epi.weight_zero_point = 1;
  ck_assert_msg(tpl_of(&w)->supports(&w, why), "%s", why);
  ct_workload w1 = shape(1, 1, 64, 64, 1, 12, 3, 1, 1);
  ck_assert_int_eq(tpl_of(&w1)->supports(&w1, why), 0);
  w1.epi.weight_zero_point = 1;
  ck_assert_msg(tpl_of(&w1)->supports(&w1, why), "%s", why);
  w.epi.weight_zero_point = 0;
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "nhwc"));
  w = shape(0, 1, 64, 64, 6, 56, 3, 1, 1);
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "divide"));
}
END_TEST

/* The shapes: depthwise 3x3 / 5x5 / 3x3x3 (with odd C), a channel
 * multiplier, ResNeXt-like groups of 4 and 32, odd groups of 3 and 12,
 * G = 1 fallbacks (data and weight zero points with padding; K = 20 dilated along
 * W, 2D and 3D), dilation. */
static ct_workload case_shape(int i) {
  ct_workload w;
  switch (i) {
  case 0:
    return shape(0, 2, 32, 32, 32, 9, 3, 1, 1);
  case 1:
    return shape(0, 1, 24, 24, 24, 11, 5, 2, 2);
  case 2:
    return shape(0, 2, 20, 40, 20, 7, 3, 1, 1); /* multiplier 2 */
  case 3:
    return shape(0, 1, 64, 64, 16, 8, 3, 1, 1); /* 4 per group */
  case 4:
    return shape(0, 1, 128, 128, 4, 6, 3, 2, 1); /* 32 per group */
  case 5:
    return shape(0, 2, 12, 12, 4, 7, 3, 1, 0); /* 3 per group */
  case 6: /* G = 1, data and weight zero points with padding (no tensor-core template takes
            * weight zero points) */
    w = shape(0, 3, 32, 32, 1, 17, 5, 2, 2);
    w.epi.data_zero_point = w.epi.weight_zero_point = 1;
    return w;
  case 7:
    return shape(1, 1, 16, 16, 16, 6, 3, 1, 1); /* depthwise 3D */
  case 8: /* G = 1, K = 20, dilated along W: the 3D fallback */
    w = shape(1, 2, 12, 20, 1, 7, 5, 2, 2);
    for (int d = 0; d < 3; d++) w.dilation[d] = 2;
    return w;
  case 9:
    return shape(0, 1, 36, 36, 3, 9, 3, 1, 2); /* 12 per group */
  case 10:
    w = shape(0, 1, 24, 24, 24, 12, 3, 1, 2);
    w.dilation[0] = w.dilation[1] = 2;
    return w;
  default: /* G = 1, C = 72, K = 20, dilated */
    w = shape(0, 1, 72, 20, 1, 9, 3, 1, 1);
    w.dilation[0] = w.dilation[1] = 2;
    return w;
  }
}
#define N_CASES 12

static int knob_of(const space *s, const config *c, const char *name, int dflt) {
  return space_get(s, c, name, dflt);
}

/* The kernel's arithmetic on the CPU, macro for macro and loop for loop
 * (conv_grouped_nhwc.cuh): every output written exactly once; the staged
 * window read within its bounds (*bad counts the reads that are not: a
 * ck_assert per read would cost a pipe write each). x holds w's data type's
 * bytes; padding reads the bytes of padw. params NULL: out is the raw
 * accumulators; else (quant_params) the epilogue's output as an int: the
 * corrected sum (int32 output) or the 8-bit value, res the residual's bytes
 * (NULL without one). With weight zero points the window sums are the
 * kernel's: every byte of the data words summed (bytes past the group's
 * channels zero: in a padded tap by its masked words). */
static void emulate(const ct_workload *w, const space *s, const config *cfg, const unsigned char *x,
                    unsigned padw, const signed char *wt, const int32_t *params,
                    const unsigned char *res, int *out, int *writes, long *bad) {
  geom3 g;
  workload_geom(w, &g);
  const int TW = knob_of(s, cfg, "tile_w", 16), TH = knob_of(s, cfg, "tile_h", 4),
            TD = knob_of(s, cfg, "tile_d", 1), ROWS = knob_of(s, cfg, "rows", 2),
            PIX = knob_of(s, cfg, "pix_w", 2), CH = knob_of(s, cfg, "chans", 16),
            BK = knob_of(s, cfg, "block_k", 32), VEC = knob_of(s, cfg, "vec", 16),
            ST = knob_of(s, cfg, "staging", 1);
  const int C = w->c, K = w->k, G = w->groups, CPG = C / G, KPG = K / G;
  const int DW = CPG == 1 && KPG == 1, CPG4 = (CPG + 3) / 4 * 4;
  const int CCH = DW ? 4 : CPG4 < 32 ? CPG4 : 32, NCH = DW ? 1 : (CPG + CCH - 1) / CCH;
  const int ONEG = KPG % CH == 0, NVX = DW || ONEG ? 1 : CH, NB = DW ? CH : CCH;
  const int TK = BK / CH, TWT = TW / PIX, THT = TH / ROWS, THREADS = TK * TWT * THT * TD;
  const long WDD = (TD - 1) * g.str[0] + (g.ker[0] - 1) * g.dil[0] + 1;
  const long WHH = (TH - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  const long WWW = (TW - 1) * g.str[2] + (g.ker[2] - 1) * g.dil[2] + 1;
  const int ngs_raw = (BK + KPG - 2) / KPG + 1, NGS = ngs_raw < G ? ngs_raw : G;
  const int CW = DW ? BK : NGS * CPG;
  const long TWN = (g.out[2] + TW - 1) / TW, THN = (g.out[1] + TH - 1) / TH,
             TDN = (g.out[0] + TD - 1) / TD;
  const long KVOL = g.ker[0] * g.ker[1] * g.ker[2];
  const int u8 = w->data_type == CT_DTYPE_UINT8, WZP = w->epi.weight_zero_point;
  const long gx = g.n * TDN * THN * TWN, gy = (K + BK - 1) / BK;
  for (long bx = 0; bx < gx; bx++)
    for (long by = 0; by < gy; by++)
      for (int tid = 0; tid < THREADS; tid++) {
        const int ck = tid % TK, txw = tid / TK % TWT, tyh = tid / (TK * TWT) % THT,
                  tzd = tid / (TK * TWT * THT);
        const long tw = bx % TWN, th = bx / TWN % THN, tdd = bx / (TWN * THN) % TDN,
                   n = bx / (TWN * THN * TDN);
        const int k0b = (int)by * BK, k0 = k0b + ck * CH;
        const long od = tdd * TD + tzd, oh0 = th * TH + tyh * ROWS, ow0 = tw * TW + txw * PIX;
        const int cs = DW ? k0b : k0b / KPG * CPG;
        if (k0 >= K || od >= g.out[0]) continue;
        int cb[16];
        for (int v = 0; v < NVX; v++) {
          const int k = k0 + v < K ? k0 + v : K - 1;
          cb[v] = DW ? k0 : k / KPG * CPG;
        }
        uint32_t acc[4][8][16] = {{{0}}}, xs[4][8][16] = {{{0}}};
        for (long tz = 0; tz < g.ker[0]; tz++)
          for (long rh = 0; rh < g.ker[1]; rh++)
            for (int chn = 0; chn < NCH; chn++)
              for (long sx = 0; sx < g.ker[2]; sx++) {
                const long t = (tz * g.ker[1] + rh) * g.ker[2] + sx, ci0 = (long)chn * CCH;
                unsigned padx[8]; /* a padded tap's words (with weight zero points masked) */
                for (int i = 0; i < 8; i++) {
                  const long rem = DW ? 4 : CPG - ci0 - 4 * i;
                  padx[i] = !WZP || rem >= 4 ? padw
                            : rem <= 0       ? 0u
                                             : padw & (0xffffffffu >> (8 * (4 - rem)));
                }
                for (int r = 0; r < ROWS; r++)
                  for (int p = 0; p < PIX; p++) {
                    const long iz = od * g.str[0] - g.pb[0] + tz * g.dil[0];
                    const long iy = (oh0 + r) * g.str[1] - g.pb[1] + rh * g.dil[1];
                    const long ix = (ow0 + p) * g.str[2] - g.pb[2] + sx * g.dil[2];
                    const int in = iz >= 0 && iz < g.in[0] && iy >= 0 && iy < g.in[1] && ix >= 0 &&
                                   ix < g.in[2];
                    if (ST) { /* the staged window's coordinates: within it, and the same pixel */
                      const long sz = tzd * g.str[0] + tz * g.dil[0];
                      const long sy = (tyh * ROWS + r) * g.str[1] + rh * g.dil[1];
                      const long sxx = (txw * PIX + p) * g.str[2] + sx * g.dil[2];
                      *bad += !(sz < WDD && sy < WHH && sxx < WWW);
                      *bad += tdd * TD * g.str[0] - g.pb[0] + sz != iz;
                      *bad += th * TH * g.str[1] - g.pb[1] + sy != iy;
                      *bad += tw * TW * g.str[2] - g.pb[2] + sxx != ix;
                    }
                    const long pix = ((n * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix;
                    for (int v = 0; v < NVX; v++) {
                      int xb[32] = {0};
                      const long base = cb[v] + (DW ? 0 : ci0);
                      const long lim = DW ? C - cb[v] : CPG - ci0;
                      for (int o = 0; o < NB; o += VEC) {
                        if (o >= lim) break;
                        if (ST) /* within the staged channels */
                          *bad += !(base - cs + o >= 0 && base - cs + o + VEC <= CW);
                        for (int b = 0; b < VEC; b++) {
                          *bad += !(base + o + b < C); /* whole pieces within the pixel */
                          if (in) {
                            const unsigned char byte = x[pix * C + base + o + b];
                            xb[o + b] = u8 ? byte : (signed char)byte;
                          }
                        }
                      }
                      if (!in) /* the padded tap's words, whole: past lim too */
                        for (int b = 0; b < NB; b++) {
                          const unsigned char byte = (unsigned char)(padx[b / 4] >> (8 * (b % 4)));
                          xb[b] = u8 ? byte : (signed char)byte;
                        }
                      if (!DW) /* one dp4a against 0x01010101 per data word */
                        for (int q = 0; q < CCH; q++) xs[r][p][v] += (uint32_t)xb[q];
                      for (int jj = 0; jj < (NVX == 1 ? CH : 1); jj++) {
                        const int j = NVX == 1 ? jj : v, k = k0 + j;
                        if (k >= K) continue;
                        if (DW) {
                          acc[r][p][j] += (uint32_t)(xb[j] * wt[(long)k * KVOL + t]);
                          xs[r][p][j] += (uint32_t)xb[j]; /* the channel's own byte lane */
                        } else {
                          for (int q = 0; q < CCH; q++)
                            if (ci0 + q < CPG)
                              acc[r][p][j] +=
                                  (uint32_t)(xb[q] * wt[((long)k * KVOL + t) * CPG + ci0 + q]);
                        }
                      }
                    }
                  }
              }
        for (int r = 0; r < ROWS; r++)
          for (int p = 0; p < PIX; p++) {
            const long oh = oh0 + r, ow = ow0 + p;
            if (oh >= g.out[1] || ow >= g.out[2]) continue;
            for (int j = 0; j < CH && k0 + j < K; j++) {
              const long o = (((n * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow) * K + k0 + j;
              const int k = k0 + j, kp = (K + 3) / 4 * 4;
              int32_t v = (int32_t)acc[r][p][j];
              if (params) {
                const int32_t *arr = params + CTQ_HEADER;
                v = ctq_correct(v, arr[CTQ_OFF * kp + k], arr[CTQ_ZW * kp + k],
                                WZP ? (int32_t)xs[r][p][DW || NVX > 1 ? j : 0] : 0);
                if (w->out_type != CT_DTYPE_INT32) {
                  const int ou8 = w->out_type == CT_DTYPE_UINT8;
                  const unsigned b = ctq_requant_lane(
                      params, kp, k, v, res ? res[o] : 0u, w->epi.scale == CT_SCALE_CHANNEL, ou8,
                      w->epi.residual, w->epi.rounding == CT_ROUND_ONNX);
                  v = ou8 ? (int)b : (signed char)b;
                }
              }
              out[o] = v;
              writes[o]++;
            }
          }
      }
}

/* A plain grouped convolution, NDHWC x OHWI. */
static void reference(const ct_workload *w, const signed char *x, const signed char *wt, int *out) {
  geom3 g;
  workload_geom(w, &g);
  const int C = w->c, K = w->k, CPG = C / w->groups, KPG = K / w->groups;
  long o = 0;
  for (long n = 0; n < g.n; n++)
    for (long od = 0; od < g.out[0]; od++)
      for (long oh = 0; oh < g.out[1]; oh++)
        for (long ow = 0; ow < g.out[2]; ow++)
          for (int k = 0; k < K; k++, o++) {
            int s = 0;
            for (long a = 0; a < g.ker[0]; a++)
              for (long b = 0; b < g.ker[1]; b++)
                for (long c = 0; c < g.ker[2]; c++) {
                  const long iz = od * g.str[0] - g.pb[0] + a * g.dil[0];
                  const long iy = oh * g.str[1] - g.pb[1] + b * g.dil[1];
                  const long ix = ow * g.str[2] - g.pb[2] + c * g.dil[2];
                  if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1] || ix < 0 || ix >= g.in[2])
                    continue;
                  const long t = (a * g.ker[1] + b) * g.ker[2] + c;
                  for (int ci = 0; ci < CPG; ci++)
                    s += x[(((n * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix) * C +
                           k / KPG * CPG + ci] *
                         wt[((long)k * (g.ker[0] * g.ker[1] * g.ker[2]) + t) * CPG + ci];
                }
            out[o] = s;
          }
}

/* Sampled valid configs (and the preferred one) of each shape, emulated. */
START_TEST(emulated_index_mapping_matches_a_grouped_convolution) {
  ct_workload w = case_shape(_i);
  const template_desc *tpl = tpl_of(&w);
  char why[TEMPLATE_WHY_MAX];
  ck_assert_msg(tpl->supports(&w, why), "case %d: %s", _i, why);
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  a.sm_count = 132;
  space sp;
  space_init(&sp);
  ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
  const long nx = workload_data_elems(&w), nw = (long)w.k * (w.c / w.groups) * w.kernel[0] *
                                                w.kernel[1] *
                                                (w.op == CT_OP_CONV3D ? w.kernel[2] : 1);
  const long no = workload_out_elems(&w);
  signed char *x = malloc(nx), *wt = malloc(nw);
  int *ref = malloc(no * sizeof *ref), *got = malloc(no * sizeof *got);
  int *writes = malloc(no * sizeof *writes);
  rng r;
  rng_seed(&r, 35 + _i);
  for (long i = 0; i < nx; i++) x[i] = (signed char)(rng_next(&r) % 15) - 7;
  for (long i = 0; i < nw; i++) wt[i] = (signed char)(rng_next(&r) % 15) - 7;
  reference(&w, x, wt, ref);
  for (int d = 0; d < (test_quick() ? 9 : 41); d++) {
    config c;
    if (d == 0) {
      ck_assert_msg(tpl->preferred(&w, &sp, &a, &c), "case %d: no preferred config", _i);
      ck_assert(tpl->valid(&w, &sp, &c, &a, NULL));
    } else {
      ck_assert_int_eq(template_sample(tpl, &w, &sp, &a, &r, 1000000, &c, NULL), CT_OK);
    }
    memset(writes, 0, no * sizeof *writes);
    long bad = 0;
    emulate(&w, &sp, &c, (const unsigned char *)x, 0, wt, NULL, NULL, got, writes, &bad);
    char text[512];
    ck_assert_msg(bad == 0, "case %d %s: %ld reads outside the window or the pixel", _i,
                  space_config_str(&sp, &c, text, sizeof text), bad);
    for (long i = 0; i < no && bad == 0; i++) {
      if (writes[i] == 1 && got[i] == ref[i]) continue;
      ck_assert_msg(writes[i] == 1, "case %d %s: output %ld written %d times", _i,
                    space_config_str(&sp, &c, text, sizeof text), i, writes[i]);
      ck_assert_msg(got[i] == ref[i], "case %d %s: output %ld is %d, not %d", _i,
                    space_config_str(&sp, &c, text, sizeof text), i, got[i], ref[i]);
    }
  }
  free(x), free(wt), free(ref), free(got), free(writes);
  space_free(&sp);
}
END_TEST

/* Weight zero points: G = 1 fallbacks (nhwc C = K = 32, which no
 * tensor-core template takes with them; 3D K = 20; C = 72 in chunks of 32,
 * 32 and 8; C = 6), depthwise 2D and 3D, a channel multiplier of 2 (one
 * channel a group: the padded words masked to one byte), groups of 3
 * channels (and 3 outputs: a thread's channels in several groups), of 40
 * (a chunk of 8 past 32), 3D groups of 6, all padded. */
static ct_workload zw_shape(int i) {
  ct_workload w;
  switch (i) {
  case 0:
    w = shape(0, 2, 32, 32, 1, 9, 3, 1, 1);
    break;
  case 1:
    w = shape(1, 1, 12, 20, 1, 7, 3, 2, 1);
    break;
  case 2:
    w = shape(0, 1, 24, 24, 24, 11, 5, 2, 2);
    break;
  case 3:
    w = shape(0, 2, 20, 40, 20, 7, 3, 1, 1);
    break;
  case 4:
    w = shape(0, 2, 12, 12, 4, 7, 3, 1, 1);
    break;
  case 5:
    w = shape(0, 1, 80, 16, 2, 6, 3, 1, 1);
    break;
  case 6:
    w = shape(1, 1, 16, 16, 16, 6, 3, 1, 1);
    break;
  case 7:
    w = shape(1, 1, 24, 12, 4, 5, 3, 1, 1);
    break;
  case 8:
    w = shape(0, 1, 72, 20, 1, 9, 3, 1, 1);
    w.dilation[0] = w.dilation[1] = 2;
    break;
  default:
    w = shape(0, 2, 6, 10, 1, 8, 3, 1, 1);
    break;
  }
  w.epi.weight_zero_point = 1;
  return w;
}
#define N_ZW_CASES 10

/* The zero-point epilogues: uint8 data, its zero point, bias, int32 out;
 * int8 data with a zero point, per-channel scales, int8 out; uint8 data and
 * out with a residual, onnx rounding. */
static void zw_epilogue(ct_workload *w, int e) {
  w->epi.data_zero_point = w->epi.bias = 1;
  switch (e % 3) {
  case 0:
    w->data_type = CT_DTYPE_UINT8;
    break;
  case 1:
    w->out_type = CT_DTYPE_INT8, w->epi.scale = CT_SCALE_CHANNEL;
    break;
  default:
    w->data_type = w->out_type = CT_DTYPE_UINT8;
    w->epi.residual = 1, w->epi.rounding = CT_ROUND_ONNX;
    break;
  }
}

/* Sampled valid configs (and the preferred one) of each zero-point shape and
 * epilogue, emulated with the params block and compared with reference_qconv. */
START_TEST(emulated_weight_zero_points_match_reference_qconv) {
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  a.sm_count = 132;
  rng r;
  rng_seed(&r, 3500 + _i);
  for (int e = 0; e < 3; e++) {
    ct_workload w = zw_shape(_i);
    zw_epilogue(&w, e);
    const template_desc *tpl = tpl_of(&w);
    char why[TEMPLATE_WHY_MAX];
    ck_assert_msg(tpl->supports(&w, why), "case %d: %s", _i, why);
    ct_err err = {0};
    ck_assert_msg(workload_validate(&w, &err) == CT_OK, "case %d: %s", _i, err.msg);
    space sp;
    space_init(&sp);
    ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
    const long nx = workload_data_elems(&w), nw = workload_weight_elems(&w);
    const long no = workload_out_elems(&w), ob = workload_out_elem_bytes(&w);
    unsigned char *x = malloc(nx), *res = malloc(no);
    signed char *wt = malloc(nw);
    void *refo = malloc(no * ob);
    int *ref = malloc(no * sizeof *ref), *got = malloc(no * sizeof *got);
    int *writes = malloc(no * sizeof *writes);
    int32_t *sums = malloc(w.k * sizeof *sums), *params = malloc(quant_params_words(&w) * 4);
    for (long i = 0; i < nx; i++) x[i] = (unsigned char)rng_next(&r);
    for (long i = 0; i < nw; i++) wt[i] = (signed char)rng_next(&r);
    for (long i = 0; i < no; i++) res[i] = (unsigned char)rng_next(&r);
    quant_store qs;
    ck_assert_int_eq(quant_random(&w, 350 + _i * 3 + e, &qs, &err), CT_OK);
    ck_assert_msg(reference_qconv(&w, &qs.q, x, (const int8_t *)wt, w.epi.residual ? res : NULL,
                                  refo, &err) == CT_OK,
                  "case %d: %s", _i, err.msg);
    for (long i = 0; i < no; i++)
      ref[i] = ob == 4                        ? ((const int32_t *)refo)[i]
               : w.out_type == CT_DTYPE_UINT8 ? ((const unsigned char *)refo)[i]
                                              : ((const signed char *)refo)[i];
    quant_weight_sums(&w, (const int8_t *)wt, sums);
    ck_assert_int_eq(quant_params(&w, &qs.q, sums, params, &err), CT_OK);
    for (int d = 0; d < (test_quick() ? 3 : 9); d++) {
      config c;
      if (d == 0)
        ck_assert_msg(tpl->preferred(&w, &sp, &a, &c), "case %d: no preferred config", _i);
      else
        ck_assert_int_eq(template_sample(tpl, &w, &sp, &a, &r, 1000000, &c, NULL), CT_OK);
      memset(writes, 0, no * sizeof *writes);
      long bad = 0;
      emulate(&w, &sp, &c, x, (unsigned)params[CTQ_PAD_WORD], wt, params,
              w.epi.residual ? res : NULL, got, writes, &bad);
      char text[512];
      ck_assert_msg(bad == 0, "case %d epilogue %d %s: %ld reads outside the window or the pixel",
                    _i, e, space_config_str(&sp, &c, text, sizeof text), bad);
      for (long i = 0; i < no; i++) {
        if (writes[i] == 1 && got[i] == ref[i]) continue;
        ck_assert_msg(writes[i] == 1, "case %d epilogue %d %s: output %ld written %d times", _i, e,
                      space_config_str(&sp, &c, text, sizeof text), i, writes[i]);
        ck_assert_msg(got[i] == ref[i], "case %d epilogue %d %s: output %ld is %d, not %d", _i, e,
                      space_config_str(&sp, &c, text, sizeof text), i, got[i], ref[i]);
      }
    }
    quant_store_free(&qs);
    free(x), free(res), free(wt), free(refo), free(ref), free(got), free(writes), free(sums);
    free(params);
    space_free(&sp);
  }
}
END_TEST

/* The epilogues that the compiles rotate through. */
static void epilogue(ct_workload *w, int e) {
  switch (e % 4) {
  case 1:
    w->out_type = CT_DTYPE_INT8, w->epi.bias = 1, w->epi.scale = CT_SCALE_CHANNEL;
    break;
  case 2:
    w->data_type = w->out_type = CT_DTYPE_UINT8;
    w->epi.data_zero_point = w->epi.bias = w->epi.residual = 1;
    break;
  case 3:
    w->out_type = CT_DTYPE_INT8, w->epi.rounding = CT_ROUND_ONNX, w->epi.residual = 1;
    break;
  default:
    w->epi.bias = 1;
    break;
  }
}

/* Shape i of shape_of, with epilogue variants from epi in turn: its
 * preferred config and sampled ones (CT_GROUPED_COMPILES a shape and arch,
 * default 2) compile for sm_90 and sm_80 without spills; with wzp, each
 * instance compiles the kernel's window sums in (-DCT_WZP=1). */
static void compile_shape(int i, ct_workload (*shape_of)(int), void (*epi)(ct_workload *, int),
                          uint32_t seed, int wzp) {
  const char *env = getenv("CT_GROUPED_COMPILES");
  const tpl_family f = {shape_of, epi, tpl_of, NULL, NULL};
  configs_compile(&f, i, env ? atoi(env) : 2, seed - (uint32_t)i, 1, 1, wzp ? "-DCT_WZP=1" : NULL);
}

/* Each shape: its preferred config and sampled ones compile for sm_90 and sm_80. */
START_TEST(sampled_configs_compile_for_sm90_and_sm80) {
  compile_shape(_i, case_shape, epilogue, 350 + (uint32_t)_i, 0);
}
END_TEST

/* Each zero-point shape: its preferred config and sampled ones, each
 * epilogue in turn, compile for sm_90 and sm_80 without spills. */
START_TEST(zero_point_configs_compile_for_sm90_and_sm80) {
  compile_shape(_i, zw_shape, zw_epilogue, 3550 + (uint32_t)_i, 1);
}
END_TEST

/* A config that slips past valid() (vec not dividing C) fails its static_assert. */
START_TEST(an_invalid_point_fails_to_compile) {
  const ct_workload w = case_shape(1); /* C = 24 */
  invalid_point_fails_to_compile(&w, "vec", 16, "vec", "vec must divide C", tpl_of(&w));
}
END_TEST

static void add_cpu(TCase *tc) {
  tcase_add_test(tc, refuses_what_the_tensor_cores_run_and_what_it_cannot);
  tcase_add_loop_test(tc, emulated_index_mapping_matches_a_grouped_convolution, 0, N_CASES);
  tcase_add_loop_test(tc, emulated_weight_zero_points_match_reference_qconv, 0, N_ZW_CASES);
}

static void add_compile(TCase *tc) {
  tcase_add_test(tc, an_invalid_point_fails_to_compile);
  tcase_add_loop_test(tc, sampled_configs_compile_for_sm90_and_sm80, 0, N_CASES);
  tcase_add_loop_test(tc, zero_point_configs_compile_for_sm90_and_sm80, 0, N_ZW_CASES);
}

static const test_case suite_cases[] = {
    {"cpu", 600, add_cpu},
    {"compile", 3000, add_compile},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"grouped_nhwc", suite_cases, 0, NULL};
  return test_main(&suite);
}
