/*
 * test_dw_nhwc.c: the depthwise float templates (templates/conv_dw_nhwc.{c,cuh})
 * on the CPU: what they refuse; a CPU emulation of the kernel, loop for loop
 * (block, thread, the row window, the staged window, the magic-number byte
 * and int conversions in float, the folded offset) followed by the host's
 * requantization of the same params, checked exactly against
 * reference_qconv for sampled valid configs and the preferred one in four
 * epilogues (int32 with bias; int8 per-channel with a residual; uint8 with
 * a data zero point; onnx rounding), every output written once; and NVRTC
 * compiles for sm_90 and sm_80 (CT_DW_COMPILES configs per shape and arch,
 * default 2: the preferred one and a sampled one; under a second each).
 * CT_DW_DRAWS: configs emulated per shape (default 16, the first the
 * preferred one).
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
#include "tests/util.h"

/* A depthwise conv2d (d3 = 0) or conv3d workload, channels-last, K = m x C. */
static ct_workload shape(int d3, int n, int c, int m, int in, int ker, int str, int pad) {
  ct_workload w;
  workload_init(&w, d3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NHWC;
  w.n = n, w.c = c, w.k = c * m, w.groups = c;
  for (int i = 0; i < (d3 ? 3 : 2); i++) {
    w.in[i] = in, w.kernel[i] = ker, w.stride[i] = str;
    w.pad_before[i] = w.pad_after[i] = pad;
  }
  return w;
}

static const template_desc *tpl_of(const ct_workload *w) {
  return template_find(w->op == CT_OP_CONV3D ? "conv3d_ndhwc_dw" : "conv2d_nhwc_dw");
}

START_TEST(refuses_what_it_cannot_run) {
  char why[TEMPLATE_WHY_MAX];
  ct_workload w = shape(0, 1, 64, 1, 56, 3, 1, 1);
  ck_assert_msg(tpl_of(&w)->supports(&w, why), "%s", why);
  w.groups = 16; /* grouped, not depthwise */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "depthwise"));
  w = shape(0, 1, 6, 1, 9, 3, 1, 1); /* K = 6 */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "multiple of 4"));
  w = shape(0, 1, 64, 1, 56, 3, 1, 1);
  w.epi.weight_zero_point = 1;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "weight zero points"));
  w = shape(0, 1, 64, 1, 56, 3, 1, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "nhwc"));
  w = shape(1, 1, 16, 1, 9, 5, 1, 2); /* 125 taps */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "registers"));
  w = shape(0, 1, 16, 1, 9, 3, 1, 1);
  ck_assert_int_eq(template_find("conv3d_ndhwc_dw")->supports(&w, why), 0);
}
END_TEST

/* Depthwise 3x3, 5x5 s2, multipliers 2, 3 (mode 2) and 8 (mode 1), 3D,
 * dilation, a non-square kernel with odd sizes and stride along W only,
 * 7x7, 1x1. */
static ct_workload case_shape(int i) {
  ct_workload w;
  switch (i) {
  case 0:
    return shape(0, 2, 32, 1, 9, 3, 1, 1);
  case 1:
    return shape(0, 1, 24, 1, 11, 5, 2, 2);
  case 2:
    return shape(0, 2, 20, 2, 7, 3, 1, 1);
  case 3:
    return shape(0, 1, 4, 3, 8, 3, 1, 1);
  case 4:
    return shape(0, 1, 4, 8, 6, 3, 2, 1);
  case 5:
    return shape(1, 2, 16, 1, 5, 3, 1, 1);
  case 6:
    w = shape(0, 1, 24, 1, 12, 3, 1, 2);
    w.dilation[0] = w.dilation[1] = 2;
    return w;
  case 7:
    w = shape(0, 3, 12, 1, 13, 3, 1, 1);
    w.in[1] = 7, w.kernel[1] = 5, w.stride[1] = 2, w.pad_before[1] = 2, w.pad_after[1] = 1;
    return w;
  case 8:
    return shape(0, 1, 8, 1, 10, 7, 1, 3);
  default:
    return shape(0, 2, 16, 1, 5, 1, 1, 0);
  }
}
#define N_CASES 10

/* The epilogues: int32 with bias; int8 per-channel with a residual; uint8
 * data and output with a data zero point, bias and residual; onnx rounding. */
static void epilogue(ct_workload *w, int e) {
  switch (e % 4) {
  case 1:
    w->out_type = CT_DTYPE_INT8, w->epi.bias = 1, w->epi.scale = CT_SCALE_CHANNEL;
    w->epi.residual = 1;
    break;
  case 2:
    w->data_type = w->out_type = CT_DTYPE_UINT8;
    w->epi.data_zero_point = w->epi.bias = w->epi.residual = 1;
    break;
  case 3:
    w->out_type = CT_DTYPE_INT8, w->epi.rounding = CT_ROUND_ONNX, w->epi.residual = 1;
    w->epi.data_zero_point = 1;
    break;
  default:
    w->epi.bias = 1;
    break;
  }
}

static float bits_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static uint32_t float_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

/* The kernel on the CPU, macro for macro (conv_dw_nhwc.cuh): x the data
 * bytes, wt the weights, params the folded block, res the residual bytes;
 * out in w's output type, writes counted, *bad the reads outside the staged
 * window or a pixel's channels. */
static void emulate(const ct_workload *w, const space *s, const config *cfg, const unsigned char *x,
                    const signed char *wt, const int32_t *params, const unsigned char *res,
                    void *out, int *writes, long *bad) {
  geom3 g;
  workload_geom(w, &g);
  const int CH = space_get(s, cfg, "chans", 8), PIX = space_get(s, cfg, "pix", 4),
            ROWS = space_get(s, cfg, "rows", 2), BC = space_get(s, cfg, "block_c", 4),
            BW = space_get(s, cfg, "block_w", 8), BH = space_get(s, cfg, "block_h", 4),
            ST = space_get(s, cfg, "staging", 0);
  const long C = w->c, K = w->k, M = K / C, KVOL = g.ker[0] * g.ker[1] * g.ker[2];
  const int MODE = CH % M == 0 ? 0 : M % CH == 0 ? 1 : 2;
  const int NIN = MODE == 0 ? CH / (int)M : MODE == 1 ? 1 : CH;
  int LV = 16;
  while (LV > 1 && (MODE == 2 || NIN % LV || C % LV)) LV /= 2;
  const long TILE_W = (long)BW * PIX, TILE_H = (long)BH * ROWS;
  const long WROW = (PIX - 1) * g.str[2] + (g.ker[2] - 1) * g.dil[2] + 1;
  const long HROW = (ROWS - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  const long WWW = (TILE_W - 1) * g.str[2] + (g.ker[2] - 1) * g.dil[2] + 1;
  const long WHH = (TILE_H - 1) * g.str[1] + (g.ker[1] - 1) * g.dil[1] + 1;
  const long CWB = (long)BC * NIN, CWP = (CWB + 15) / 16 * 16;
  const long TWN = (g.out[2] + TILE_W - 1) / TILE_W, THN = (g.out[1] + TILE_H - 1) / TILE_H;
  const long gx = g.n * g.out[0] * THN * TWN, gy = (K + BC * CH - 1) / (BC * CH);
  const int zx = w->epi.data_zero_point ? params[CTQ_PAD_WORD] & 0xff : 0;
  const int u8 = w->data_type == CT_DTYPE_UINT8;
  const int kp = (int)((K + 3) / 4 * 4);
  const long smem_n = ST ? g.ker[0] * WHH * WWW * CWP : 1;
  unsigned char *smem = malloc(smem_n);
  for (long bx = 0; bx < gx; bx++)
    for (long by = 0; by < gy; by++) {
      const long tw = bx % TWN, th = bx / TWN % THN, od = bx / (TWN * THN) % g.out[0];
      const long n = bx / (TWN * THN * g.out[0]);
      const long k0b = by * BC * CH;
      const long iz0 = od * g.str[0] - g.pb[0];
      if (ST) { /* the block's copy loop */
        memset(smem, 0xee, smem_n);
        const long y0 = th * TILE_H * g.str[1] - g.pb[1], x0 = tw * TILE_W * g.str[2] - g.pb[2];
        const long cs = k0b / M, upp = CWB / LV;
        for (long u = 0; u < g.ker[0] * WHH * WWW * upp; u++) {
          const long cu = u % upp, pix = u / upp;
          const long xx = pix % WWW, yy = pix / WWW % WHH, zz = pix / (WWW * WHH);
          const long iz = iz0 + zz * g.dil[0], iy = y0 + yy, ix = x0 + xx, c = cs + cu * LV;
          const int in = iz >= 0 && iz < g.in[0] && iy >= 0 && iy < g.in[1] && ix >= 0 &&
                         ix < g.in[2] && c < C;
          *bad += in && c + LV > C; /* a piece past the pixel */
          for (int b = 0; b < LV; b++)
            smem[pix * CWP + cu * LV + b] =
                in ? x[(((n * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix) * C + c + b]
                   : (unsigned char)zx;
        }
      }
      for (long tid = 0; tid < (long)BC * BW * BH; tid++) {
        const long tc = tid % BC, txw = tid / BC % BW, tyh = tid / (BC * BW);
        const long k0 = k0b + tc * CH, oh0 = th * TILE_H + tyh * ROWS,
                   ow0 = tw * TILE_W + txw * PIX;
        const long iy0 = oh0 * g.str[1] - g.pb[1], ix0 = ow0 * g.str[2] - g.pb[2];
        if (k0 >= K) continue;
        float acc[4][8][16];
        memset(acc, 0, sizeof acc);
        for (long tz = 0; tz < g.ker[0]; tz++) {
          const long iz = iz0 + tz * g.dil[0];
          for (long y = 0; y < HROW; y++) {
            const long iy = iy0 + y;
            for (long xc = 0; xc < WROW; xc++) {
              unsigned char xb[16];
              for (int i = 0; i < NIN; i++) {
                const long c = MODE == 2 ? (k0 + i) / M : k0 / M + i;
                *bad += c >= C;
                if (ST) {
                  const long sy = tyh * ROWS * g.str[1] + y, sx = txw * PIX * g.str[2] + xc;
                  const long a = ((tz * WHH + sy) * WWW + sx) * CWP + tc * NIN + i;
                  *bad += !(sy < WHH && sx < WWW && tc * NIN + i < CWB);
                  xb[i] = a < smem_n ? smem[a] : 0;
                } else {
                  const long ix = ix0 + xc;
                  const int in =
                      iz >= 0 && iz < g.in[0] && iy >= 0 && iy < g.in[1] && ix >= 0 && ix < g.in[2];
                  xb[i] = in ? x[(((n * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix) * C + c]
                             : (unsigned char)zx;
                }
              }
              for (int r = 0; r < ROWS; r++) {
                const long dy = y - r * g.str[1];
                if (dy < 0 || dy % g.dil[1] || dy / g.dil[1] >= g.ker[1]) continue;
                for (int p = 0; p < PIX; p++) {
                  const long dx = xc - p * g.str[2];
                  if (dx < 0 || dx % g.dil[2] || dx / g.dil[2] >= g.ker[2]) continue;
                  const long t = (tz * g.ker[1] + dy / g.dil[1]) * g.ker[2] + dx / g.dil[2];
                  for (int j = 0; j < CH; j++) {
                    const int slot = MODE == 0 ? j / (int)M : MODE == 1 ? 0 : j;
                    /* byte_float: 0x4B0000bb, then the bias off */
                    const unsigned bb = u8 ? xb[slot] : xb[slot] ^ 0x80u;
                    const float xf = bits_float(0x4B000000u | bb) - (u8 ? 8388608.0f : 8388736.0f);
                    acc[r][p][j] = fmaf(xf, (float)wt[(k0 + j) * KVOL + t], acc[r][p][j]);
                  }
                }
              }
            }
          }
        }
        for (int r = 0; r < ROWS; r++)
          for (int p = 0; p < PIX; p++) {
            const long oh = oh0 + r, ow = ow0 + p;
            if (oh >= g.out[1] || ow >= g.out[2]) continue;
            for (int j = 0; j < CH; j++) {
              const long k = k0 + j;
              const uint32_t off = w->epi.bias || w->epi.data_zero_point
                                       ? (uint32_t)params[CTQ_HEADER + CTQ_OFF * kp + k]
                                       : 0;
              const int32_t v =
                  (int32_t)(float_bits(acc[r][p][j] + 12582912.0f) + (off - 0x4B400000u));
              const long o = (((n * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow) * K + k;
              writes[o]++;
              if (w->out_type == CT_DTYPE_INT32) {
                ((int32_t *)out)[o] = v;
              } else {
                ((unsigned char *)out)[o] = (unsigned char)ctq_requant_lane(
                    params, kp, (int)k, v, res ? res[o] : 0, w->epi.scale == CT_SCALE_CHANNEL,
                    w->out_type == CT_DTYPE_UINT8, w->epi.residual,
                    w->epi.rounding == CT_ROUND_ONNX);
              }
            }
          }
      }
    }
  free(smem);
}

/* Sampled valid configs (and the preferred one) of each shape, emulated in
 * each epilogue against reference_qconv. */
START_TEST(emulated_kernel_matches_reference_qconv) {
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  a.sm_count = 132;
  rng r;
  rng_seed(&r, 36 + _i);
  const char *env = getenv("CT_DW_DRAWS");
  const int draws = env ? atoi(env) : 16;
  for (int d = 0; d < draws; d++) {
    ct_workload w = case_shape(_i);
    epilogue(&w, _i + d);
    const template_desc *tpl = tpl_of(&w);
    char why[TEMPLATE_WHY_MAX];
    ct_err err = {0};
    ck_assert_msg(tpl->supports(&w, why), "case %d: %s", _i, why);
    ck_assert_msg(workload_validate(&w, &err) == CT_OK, "case %d: %s", _i, err.msg);
    space sp;
    space_init(&sp);
    ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
    config c;
    if (d == 0) {
      ck_assert_msg(tpl->preferred(&w, &sp, &a, &c), "case %d: no preferred config", _i);
      ck_assert(tpl->valid(&w, &sp, &c, &a, NULL));
    } else {
      ck_assert_int_eq(template_sample(tpl, &w, &sp, &a, &r, 1000000, &c, NULL), CT_OK);
    }
    const long nx = workload_data_elems(&w), nw = workload_weight_elems(&w);
    const long no = workload_out_elems(&w);
    const size_t ob = workload_out_elem_bytes(&w);
    unsigned char *x = malloc(nx), *res = malloc(no);
    signed char *wt = malloc(nw);
    void *ref = malloc(no * ob), *got = malloc(no * ob);
    int *writes = calloc(no, sizeof *writes);
    /* data and weights over their whole ranges (the float sums' bound) */
    for (long i = 0; i < nx; i++) x[i] = (unsigned char)rng_next(&r);
    for (long i = 0; i < nw; i++) wt[i] = (signed char)rng_next(&r);
    for (long i = 0; i < no; i++) res[i] = (unsigned char)rng_next(&r);
    quant_store qs;
    memset(&qs, 0, sizeof qs);
    ck_assert_int_eq(quant_random(&w, 3500 + 16 * _i + d, &qs, &err), CT_OK);
    const ct_quant *q = workload_has_params(&w) ? &qs.q : NULL;
    int32_t *params = calloc(quant_params_words(&w) + 16, sizeof *params);
    int32_t *sums = malloc(w.k * sizeof *sums);
    quant_weight_sums(&w, (const int8_t *)wt, sums);
    if (q) ck_assert_msg(quant_params(&w, q, sums, params, &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(reference_qconv(&w, q, x, (const int8_t *)wt, w.epi.residual ? res : NULL, ref,
                                  &err) == CT_OK,
                  "%s", err.msg);
    long bad = 0;
    emulate(&w, &sp, &c, x, wt, params, w.epi.residual ? res : NULL, got, writes, &bad);
    char text[512];
    space_config_str(&sp, &c, text, sizeof text);
    ck_assert_msg(bad == 0, "case %d %s: %ld reads outside the window or the pixel", _i, text, bad);
    for (long i = 0; i < no; i++) {
      ck_assert_msg(writes[i] == 1, "case %d %s: output %ld written %d times", _i, text, i,
                    writes[i]);
      ck_assert_msg(memcmp((char *)got + i * ob, (char *)ref + i * ob, ob) == 0,
                    "case %d epilogue %d %s: output %ld differs", _i, (_i + d) % 4, text, i);
    }
    free(x), free(res), free(wt), free(ref), free(got), free(writes), free(params), free(sums);
    quant_store_free(&qs);
    space_free(&sp);
  }
}
END_TEST

/* Each shape: its preferred config (then sampled ones) compile for sm_90
 * and sm_80, the epilogue rotating, without spills. */
START_TEST(configs_compile_for_sm90_and_sm80) {
  const char *env = getenv("CT_DW_COMPILES");
  const int per = env ? atoi(env) : 2;
  static const char *const archs[] = {"sm_90", "sm_80"};
  rng r;
  rng_seed(&r, 360 + _i);
  for (int ai = 0; ai < 2; ai++) {
    arch a;
    ck_assert_int_eq(arch_from_name(archs[ai], &a, NULL), CT_OK);
    a.sm_count = ai ? 108 : 132;
    for (int d = 0; d < per; d++) {
      ct_workload w = case_shape(_i);
      epilogue(&w, d + 2 * ai + _i);
      const template_desc *tpl = tpl_of(&w);
      space sp;
      space_init(&sp);
      ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
      config c;
      if (d == 0)
        ck_assert(tpl->preferred(&w, &sp, &a, &c));
      else
        ck_assert_int_eq(template_sample(tpl, &w, &sp, &a, &r, 1000000, &c, NULL), CT_OK);
      instance inst;
      ct_err err = {0};
      ck_assert_msg(instance_make(tpl, &w, &sp, &c, &a, &inst, &err) == CT_OK, "%s", err.msg);
      cubin cb;
      char text[512];
      const ct_status st = nvrtc_compile(&inst, &a, &cb, &err);
      ck_assert_msg(st == CT_OK && cb.size > 0, "case %d %s %s: %s\n%s", _i, archs[ai],
                    space_config_str(&sp, &c, text, sizeof text), err.msg, cb.log ? cb.log : "");
      ck_assert_msg(!cb.log || !strstr(cb.log, "stack frame"), "case %d: spills\n%s", _i, cb.log);
      cubin_free(&cb);
      space_free(&sp);
    }
  }
}
END_TEST

/* A config that slips past valid() (chans not dividing K) fails its static_assert. */
START_TEST(an_invalid_point_fails_to_compile) {
  ct_workload w = shape(0, 1, 12, 1, 9, 3, 1, 1); /* K = 12 */
  const template_desc *tpl = tpl_of(&w);
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  space sp;
  space_init(&sp);
  ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
  config c;
  ck_assert(tpl->preferred(&w, &sp, &a, &c));
  ck_assert(template_set_choice(&sp, &c, "chans", 8));
  char why[TEMPLATE_WHY_MAX];
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "chans"));
  instance inst;
  memset(&inst, 0, sizeof inst);
  inst.tpl = tpl;
  ck_assert_int_eq(tpl->instance(&w, &sp, &c, &a, &inst, NULL), CT_OK);
  cubin cb;
  ct_err err = {0};
  ck_assert_int_eq(nvrtc_compile(&inst, &a, &cb, &err), CT_ERR_NVRTC);
  ck_assert_ptr_nonnull(strstr(cb.log, "chans must divide K"));
  cubin_free(&cb);
  space_free(&sp);
}
END_TEST

static void add_cpu(TCase *tc) {
  tcase_add_test(tc, refuses_what_it_cannot_run);
  tcase_add_loop_test(tc, emulated_kernel_matches_reference_qconv, 0, N_CASES);
}

static void add_compile(TCase *tc) {
  tcase_add_test(tc, an_invalid_point_fails_to_compile);
  tcase_add_loop_test(tc, configs_compile_for_sm90_and_sm80, 0, N_CASES);
}

static const test_case suite_cases[] = {
    {"cpu", 600, add_cpu},
    {"compile", 3000, add_compile},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"dw_nhwc", suite_cases, 0, NULL};
  return test_main(&suite);
}
