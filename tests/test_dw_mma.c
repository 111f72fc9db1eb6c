/*
 * test_dw_mma.c: the depthwise mma templates (templates/conv_dw_mma.{c,cuh})
 * on the CPU: what they refuse and which configs they reject; a CPU
 * emulation of the kernel (the tile sequence and channel blocks, the staged
 * window with its padding and its unread slack filled with noise, each
 * warp's m-tiles, each lane's A and B registers as the kernel builds them,
 * mma.sync m16n8k32 through its fragment layouts, the folded offset as the
 * sums' start, the output tile's copy) followed by the host's
 * requantization of the same params, checked exactly against
 * reference_qconv for sampled valid configs and the preferred one in four
 * epilogues, every output written once and no A read outside the buffer;
 * and NVRTC compiles for sm_90 and sm_80 (CT_DW_COMPILES configs per
 * shape and arch, default 2). CT_DW_DRAWS: configs emulated per shape
 * (default 16, the first the preferred one).
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

/* A depthwise workload without a channel multiplier (dw_shape's m = 1). */
static ct_workload shape(int d3, int n, int c, int in, int ker, int str, int pad) {
  return dw_shape(d3, n, c, 1, in, ker, str, pad);
}

static const template_desc *tpl_of(const ct_workload *w) {
  return template_find(w->op == CT_OP_CONV3D ? "conv3d_ndhwc_dw_mma" : "conv2d_nhwc_dw_mma");
}

START_TEST(refuses_what_it_cannot_run) {
  char why[TEMPLATE_WHY_MAX];
  ct_workload w = shape(0, 1, 64, 56, 3, 1, 1);
  ck_assert_msg(tpl_of(&w)->supports(&w, why), "%s", why);
  w.k = 128; /* a channel multiplier */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "channel multiplier"));
  w = shape(0, 1, 64, 56, 3, 1, 1);
  w.groups = 16; /* grouped, not depthwise */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  w = shape(0, 1, 12, 9, 3, 1, 1); /* C = 12 */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "multiple of 8"));
  w = shape(1, 1, 16, 9, 5, 1, 2); /* 5 x 5 x 2 = 50 k-steps */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "k-steps"));
  w = shape(0, 1, 64, 56, 3, 1, 1);
  w.epi.weight_zero_point = 1;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "weight zero points"));
  w = shape(0, 1, 64, 56, 3, 1, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "nhwc"));
}
END_TEST

/* tma: sm_90 only, no data zero point, 16 channels a block and C % 16; a
 * tile of whole m-tiles; no idle warps. */
START_TEST(rejects_configs_with_the_reason) {
  arch a90, a80;
  ck_assert_int_eq(arch_from_name("sm_90", &a90, NULL), CT_OK);
  ck_assert_int_eq(arch_from_name("sm_80", &a80, NULL), CT_OK);
  ct_workload w = shape(0, 2, 32, 28, 3, 1, 1);
  const template_desc *tpl = tpl_of(&w);
  space sp;
  space_init(&sp);
  ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
  config c;
  ck_assert(tpl->preferred(&w, &sp, &a90, &c));
  char why[TEMPLATE_WHY_MAX];
  ck_assert(
      template_set_choice(&sp, &c, "tile_w", 8) && template_set_choice(&sp, &c, "tile_h", 4) &&
      template_set_choice(&sp, &c, "n_tiles", 2) && template_set_choice(&sp, &c, "warps_m", 1) &&
      template_set_choice(&sp, &c, "m_unroll", 1) &&
      template_set_choice(&sp, &c, "blocks_per_sm", 2) &&
      template_set_choice(&sp, &c, "tiles", 1) && template_set_choice(&sp, &c, "tma", 1));
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a90, why), "%s", why);
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a80, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "tma needs sm_90"));
  ck_assert(template_set_choice(&sp, &c, "n_tiles", 1));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "n_tiles"));
  ck_assert(template_set_choice(&sp, &c, "n_tiles", 2) &&
            template_set_choice(&sp, &c, "tile_h", 1) && template_set_choice(&sp, &c, "tile_w", 8));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "whole m-tiles"));
  ck_assert(template_set_choice(&sp, &c, "tile_h", 2) &&
            template_set_choice(&sp, &c, "warps_m", 2));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "warps idle"));
  space_free(&sp);
  w.epi.data_zero_point = 1, w.epi.bias = 1, w.out_type = CT_DTYPE_INT8;
  space_init(&sp);
  ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
  ck_assert(tpl->preferred(&w, &sp, &a90, &c));
  ck_assert_int_eq(space_get(&sp, &c, "tma", 0), 0); /* the zero point: cp.async */
  ck_assert(template_set_choice(&sp, &c, "tma", 1));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "data zero point"));
  space_free(&sp);
}
END_TEST

static ct_workload case_shape(int i) {
  ct_workload w;
  switch (i) {
  case 0:
    return shape(0, 2, 32, 9, 3, 1, 1);
  case 1:
    return shape(0, 1, 24, 11, 5, 2, 2);
  case 2:
    return shape(0, 3, 16, 7, 3, 1, 1);
  case 3:
    return shape(1, 2, 16, 5, 3, 1, 1);
  case 4:
    w = shape(0, 1, 48, 12, 3, 1, 2);
    w.dilation[0] = w.dilation[1] = 2;
    return w;
  case 5:
    w = shape(0, 2, 40, 13, 3, 1, 1);
    w.in[1] = 7, w.kernel[1] = 5, w.stride[1] = 2, w.pad_before[1] = 2, w.pad_after[1] = 1;
    return w;
  case 6:
    return shape(0, 1, 8, 10, 7, 1, 3);
  case 7:
    return shape(0, 2, 16, 5, 1, 1, 0);
  case 8:
    return shape(0, 1, 144, 6, 3, 1, 1);
  default:
    w = shape(1, 1, 32, 9, 3, 2, 1);
    w.in[0] = 4, w.stride[0] = 1;
    return w;
  }
}
#define N_CASES 10

/* Byte i of word v as the mma's operand: signed, or unsigned (u8 data). */
static int opnd(uint32_t v, int i, int u8) {
  const unsigned b = (v >> (8 * i)) & 0xffu;
  return u8 ? (int)b : (int)(signed char)b;
}

/* The kernel on the CPU, macro for macro (conv_dw_mma.cuh): x the data
 * bytes, wt the weights, params the folded block, res the residual bytes;
 * out in w's output type, writes counted, *bad the A reads past the
 * buffer. */
static void emulate(const ct_workload *w, const space *s, const config *cfg, const unsigned char *x,
                    const signed char *wt, const int32_t *params, const unsigned char *res,
                    void *out, int *writes, long *bad, rng *noise) {
  geom3 g;
  workload_geom(w, &g);
  const long TW = space_get(s, cfg, "tile_w", 16), TH = space_get(s, cfg, "tile_h", 4),
             NT = space_get(s, cfg, "n_tiles", 4), WM = space_get(s, cfg, "warps_m", 1),
             MU = space_get(s, cfg, "m_unroll", 2), TMA = space_get(s, cfg, "tma", 0);
  const long C = w->c, K = w->k, KD = g.ker[0], KH = g.ker[1], KW = g.ker[2];
  const long KVOL = KD * KH * KW, KWP = (KW + 3) / 4 * 4, KS = KD * KH * (KWP / 4);
  const long CB = 8 * NT, PS = TMA ? CB : CB == 8 ? 8 : CB + 8, TPIX = TW * TH, MT = TPIX / 16;
  const long WWW = (TW - 1) * g.str[2] + (KW - 1) * g.dil[2] + 1;
  const long WHH = (TH - 1) * g.str[1] + (KH - 1) * g.dil[1] + 1;
  const long AL = TMA ? 128 : 16;
  const long WIN = (KD * WHH * WWW * PS + (KWP - KW) * g.dil[2] * PS + AL - 1) / AL * AL;
  const long TWN = (g.out[2] + TW - 1) / TW, THN = (g.out[1] + TH - 1) / TH;
  const long ntiles = g.n * g.out[0] * THN * TWN, gy = (K + CB - 1) / CB;
  /* TMA pads with zeros; cp.async with the zero point word (tma never has one) */
  const unsigned char zx =
      w->epi.data_zero_point ? (unsigned char)(params[CTQ_PAD_WORD] & 0xff) : 0;
  const int u8 = w->data_type == CT_DTYPE_UINT8, kp = (int)((K + 3) / 4 * 4);
  const int has_off = w->epi.bias || w->epi.data_zero_point;
  unsigned char *win = malloc(WIN);
  for (long ti = 0; ti < ntiles; ti++)
    for (long by = 0; by < gy; by++) {
      const long ow0 = ti % TWN * TW, oh0 = ti / TWN % THN * TH, od = ti / (TWN * THN) % g.out[0];
      const long n = ti / (TWN * THN * g.out[0]), k0b = by * CB;
      const long iz0 = od * g.str[0] - g.pb[0], iy0 = oh0 * g.str[1] - g.pb[1],
                 ix0 = ow0 * g.str[2] - g.pb[2];
      /* the window: noise first (the slack a padded tap reads is never staged) */
      for (long i = 0; i < WIN; i++) win[i] = (unsigned char)rng_next(noise);
      for (long pix = 0; pix < KD * WHH * WWW; pix++)
        for (long cu = 0; cu < NT; cu++) {
          const long xx = pix % WWW, yy = pix / WWW % WHH, zz = pix / (WWW * WHH);
          const long iz = iz0 + zz * g.dil[0], iy = iy0 + yy, ix = ix0 + xx, c = k0b + cu * 8;
          const int in =
              iz >= 0 && iz < g.in[0] && iy >= 0 && iy < g.in[1] && ix >= 0 && ix < g.in[2];
          for (int b = 0; b < 8; b++)
            win[pix * PS + cu * 8 + b] =
                c >= C ? 0
                : in   ? x[(((n * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix) * C + c + b]
                : TMA  ? 0
                       : zx;
        }
      for (long warp = 0; warp < NT * WM; warp++) {
        const long nt = warp % NT, wm = warp / NT, kw = k0b + nt * 8;
        if (kw >= K) continue;
        for (long mb = wm * MU; mb < MT; mb += WM * MU)
          for (long mt = mb; mt < mb + MU && mt < MT; mt++) {
            int32_t d[16][8];
            for (int r = 0; r < 16; r++)
              for (int col = 0; col < 8; col++)
                d[r][col] = has_off ? params[CTQ_HEADER + CTQ_OFF * kp + kw + col] : 0;
            for (long st = 0; st < KS; st++) {
              int a[16][32], b[32][8];
              for (int lane = 0; lane < 32; lane++) {
                const int lg = lane / 4, q = lane % 4;
                /* A: rows lg, lg + 8 at tap column q of k-step st */
                const long zy = st / (KWP / 4), col0 = 4 * (st % (KWP / 4));
                const long tap = ((zy / KH * WHH) + zy % KH * g.dil[1]) * WWW + col0 * g.dil[2];
                for (int h = 0; h < 2; h++) {
                  const long m = mt * 16 + lg + 8 * h;
                  const long off = ((m / TW) * g.str[1] * WWW + (m % TW) * g.str[2]) * PS +
                                   tap * PS + q * g.dil[2] * PS + nt * 8;
                  if (off < 0 || off + 8 > WIN) {
                    (*bad)++;
                    continue;
                  }
                  uint32_t lo, hi;
                  memcpy(&lo, win + off, 4);
                  memcpy(&hi, win + off + 4, 4);
                  for (int i = 0; i < 4; i++) {
                    a[lg + 8 * h][4 * q + i] = opnd(lo, i, u8);
                    a[lg + 8 * h][16 + 4 * q + i] = opnd(hi, i, u8);
                  }
                }
                /* B: this lane's tap of channel kw + lg in byte lg % 4 */
                const long xk = col0 + q;
                const uint32_t wv =
                    xk < KW ? (uint32_t)(unsigned char)wt[(kw + lg) * KVOL + zy * KW + xk] : 0;
                const uint32_t b0 = lg < 4 ? wv << (8 * lg) : 0,
                               b1 = lg >= 4 ? wv << (8 * (lg - 4)) : 0;
                for (int i = 0; i < 4; i++) {
                  b[4 * q + i][lg] = opnd(b0, i, 0);
                  b[16 + 4 * q + i][lg] = opnd(b1, i, 0);
                }
              }
              for (int r = 0; r < 16; r++)
                for (int col = 0; col < 8; col++)
                  for (int k = 0; k < 32; k++) d[r][col] += a[r][k] * b[k][col];
            }
            for (int r = 0; r < 16; r++)
              for (int col = 0; col < 8; col++) {
                const long m = mt * 16 + r, k = kw + col;
                const long oh = oh0 + m / TW, ow = ow0 + m % TW;
                if (oh >= g.out[1] || ow >= g.out[2]) continue; /* never copied out */
                const long o = (((n * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow) * K + k;
                writes[o]++;
                if (w->out_type == CT_DTYPE_INT32)
                  ((int32_t *)out)[o] = d[r][col];
                else
                  ((unsigned char *)out)[o] = (unsigned char)ctq_requant_lane(
                      params, kp, (int)k, d[r][col], res ? res[o] : 0,
                      w->epi.scale == CT_SCALE_CHANNEL, w->out_type == CT_DTYPE_UINT8,
                      w->epi.residual, w->epi.rounding == CT_ROUND_ONNX);
              }
          }
      }
    }
  free(win);
}

static const tpl_family family = {case_shape, dw_epilogue, tpl_of, emulate,
                                  "A reads past the buffer"};

/* Sampled valid configs (and the preferred one) of each shape, emulated in
 * each epilogue against reference_qconv. */
START_TEST(emulated_kernel_matches_reference_qconv) {
  const char *env = getenv("CT_DW_DRAWS");
  emulations_match(&family, _i, env ? atoi(env) : test_quick() ? 4 : 16, 46);
}
END_TEST

/* Each shape: its preferred config (then sampled ones) compile for sm_90
 * and sm_80, the epilogue rotating, without spills. */
START_TEST(configs_compile_for_sm90_and_sm80) {
  const char *env = getenv("CT_DW_COMPILES");
  configs_compile(&family, _i, env ? atoi(env) : 2, 460, 2, 0, NULL);
}
END_TEST

static void add_cpu(TCase *tc) {
  tcase_add_test(tc, refuses_what_it_cannot_run);
  tcase_add_test(tc, rejects_configs_with_the_reason);
  tcase_add_loop_test(tc, emulated_kernel_matches_reference_qconv, 0, N_CASES);
}

static void add_compile(TCase *tc) {
  tcase_add_loop_test(tc, configs_compile_for_sm90_and_sm80, 0, N_CASES);
}

static const test_case suite_cases[] = {
    {"cpu", 600, add_cpu},
    {"compile", 3000, add_compile},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"dw_mma", suite_cases, 0, NULL};
  return test_main(&suite);
}
