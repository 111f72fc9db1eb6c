/*
 * test_dw_nhwc.c: the depthwise float templates (templates/conv_dw_nhwc.{c,cuh})
 * on the CPU: what they refuse; a CPU emulation of the kernel, loop for loop
 * (block, thread, the row window, the staged window, the magic-number byte
 * and int conversions in float, the folded offset; mac 1: the row's
 * transposed byte streams, each output column's 4-tap words and their
 * dp4a against the filter rows' words) followed by the host's
 * requantization of the same params, checked exactly against
 * reference_qconv for sampled valid configs and the preferred one in four
 * epilogues (int32 with bias; int8 per-channel with a residual; uint8 with
 * a data zero point; onnx rounding), every output written once; the cost
 * model's share of a block's channels that exist (describe); the
 * untuned default's tile on MobileNetV2's layers (preferred); and NVRTC
 * compiles for sm_90 and sm_80 (CT_DW_COMPILES configs per shape and arch,
 * default 2: the preferred one and a sampled one; under a second each).
 * CT_DW_DRAWS: configs emulated per shape (default 16, the first the
 * preferred one).
 */
#include <check.h>
#include <math.h>
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

static const template_desc *tpl_of(const ct_workload *w) {
  return template_find(w->op == CT_OP_CONV3D ? "conv3d_ndhwc_dw" : "conv2d_nhwc_dw");
}

START_TEST(refuses_what_it_cannot_run) {
  char why[TEMPLATE_WHY_MAX];
  ct_workload w = dw_shape(0, 1, 64, 1, 56, 3, 1, 1);
  ck_assert_msg(tpl_of(&w)->supports(&w, why), "%s", why);
  w.groups = 16; /* grouped, not depthwise */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "depthwise"));
  w = dw_shape(0, 1, 6, 1, 9, 3, 1, 1); /* K = 6 */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "multiple of 4"));
  w = dw_shape(0, 1, 64, 1, 56, 3, 1, 1);
  w.epi.weight_zero_point = 1;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "weight zero points"));
  w = dw_shape(0, 1, 64, 1, 56, 3, 1, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "nhwc"));
  w = dw_shape(1, 1, 16, 1, 9, 5, 1, 2); /* 125 taps */
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "registers"));
  w = dw_shape(0, 1, 16, 1, 9, 3, 1, 1);
  ck_assert_int_eq(template_find("conv3d_ndhwc_dw")->supports(&w, why), 0);
}
END_TEST

/* Depthwise 3x3, 5x5 s2, multipliers 2, 3 (mode 2) and 8 (mode 1), 3D,
 * dilation, a non-square kernel with odd sizes and stride along W only,
 * 7x7, 1x1; 3D with stride 2 and dilation 2 along depth (depths 2 and 4
 * then read planes with gaps and tails). */
static ct_workload case_shape(int i) {
  ct_workload w;
  switch (i) {
  case 0:
    return dw_shape(0, 2, 32, 1, 9, 3, 1, 1);
  case 1:
    return dw_shape(0, 1, 24, 1, 11, 5, 2, 2);
  case 2:
    return dw_shape(0, 2, 20, 2, 7, 3, 1, 1);
  case 3:
    return dw_shape(0, 1, 4, 3, 8, 3, 1, 1);
  case 4:
    return dw_shape(0, 1, 4, 8, 6, 3, 2, 1);
  case 5:
    return dw_shape(1, 2, 16, 1, 5, 3, 1, 1);
  case 6:
    w = dw_shape(0, 1, 24, 1, 12, 3, 1, 2);
    w.dilation[0] = w.dilation[1] = 2;
    return w;
  case 7:
    w = dw_shape(0, 3, 12, 1, 13, 3, 1, 1);
    w.in[1] = 7, w.kernel[1] = 5, w.stride[1] = 2, w.pad_before[1] = 2, w.pad_after[1] = 1;
    return w;
  case 8:
    return dw_shape(0, 1, 8, 1, 10, 7, 1, 3);
  case 10:
    w = dw_shape(1, 1, 8, 1, 6, 3, 1, 1);
    w.in[0] = 11, w.stride[0] = 2;
    return w;
  case 11:
    w = dw_shape(1, 2, 4, 1, 5, 3, 1, 1);
    w.in[0] = 9, w.dilation[0] = 2, w.pad_before[0] = 2, w.pad_after[0] = 1;
    return w;
  default:
    return dw_shape(0, 2, 16, 1, 5, 1, 1, 0);
  }
}
#define N_CASES 12

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

/* Whether output plane d, row r of a thread's tile reads input plane z,
 * row y of its window, and then through which kernel row (*kr: kz x KH +
 * ky). */
static int reads_row(const geom3 *g, long z, long y, int d, int r, long *kr) {
  const long dz = z - d * g->str[0], dy = y - r * g->str[1];
  if (dz < 0 || dz % g->dil[0] || dz / g->dil[0] >= g->ker[0]) return 0;
  if (dy < 0 || dy % g->dil[1] || dy / g->dil[1] >= g->ker[1]) return 0;
  *kr = dz / g->dil[0] * g->ker[1] + dy / g->dil[1];
  return 1;
}

/* The kernel on the CPU, macro for macro (conv_dw_nhwc.cuh): x the data
 * bytes, wt the weights, params the folded block, res the residual bytes;
 * out in w's output type, writes counted, *bad the reads outside the staged
 * window or a pixel's channels. */
static void emulate(const ct_workload *w, const space *s, const config *cfg, const unsigned char *x,
                    const signed char *wt, const int32_t *params, const unsigned char *res,
                    void *out, int *writes, long *bad, rng *noise) {
  (void)noise; /* the kernel stages every byte it reads */
  geom3 g;
  workload_geom(w, &g);
  const int CH = space_get(s, cfg, "chans", 8), PIX = space_get(s, cfg, "pix", 4),
            ROWS = space_get(s, cfg, "rows", 2), BC = space_get(s, cfg, "block_c", 4),
            BW = space_get(s, cfg, "block_w", 8), BH = space_get(s, cfg, "block_h", 4),
            ST = space_get(s, cfg, "staging", 0), MAC = space_get(s, cfg, "mac", 0),
            DEP = space_get(s, cfg, "depths", 1);
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
  const long ZROW = (DEP - 1) * g.str[0] + (g.ker[0] - 1) * g.dil[0] + 1;
  const long TWN = (g.out[2] + TILE_W - 1) / TILE_W, THN = (g.out[1] + TILE_H - 1) / TILE_H,
             TDN = (g.out[0] + DEP - 1) / DEP;
  const long gx = g.n * TDN * THN * TWN, gy = (K + BC * CH - 1) / (BC * CH);
  const int zx = w->epi.data_zero_point ? params[CTQ_PAD_WORD] & 0xff : 0;
  const int u8 = w->data_type == CT_DTYPE_UINT8;
  const int kp = (int)((K + 3) / 4 * 4);
  const long smem_n = ST ? g.ker[0] * WHH * WWW * CWP : 1;
  unsigned char *smem = malloc(smem_n);
  for (long bx = 0; bx < gx; bx++)
    for (long by = 0; by < gy; by++) {
      const long tw = bx % TWN, th = bx / TWN % THN, od0 = bx / (TWN * THN) % TDN * DEP;
      const long n = bx / (TWN * THN * TDN);
      const long k0b = by * BC * CH;
      const long iz0 = od0 * g.str[0] - g.pb[0];
      ck_assert(!ST || DEP == 1);
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
        static float acc[4][8][8][16];
        memset(acc, 0, sizeof acc);
        static int32_t iacc[4][8][8][16]; /* mac 1 */
        memset(iacc, 0, sizeof iacc);
        const long KWW = (g.ker[2] + 3) / 4, XB = ((PIX - 1) * g.str[2] + 3) / 4 + KWW;
        for (long z = 0; z < ZROW; z++) {
          /* the planes any of the thread's output planes reads (plane_used) */
          int zu = 0;
          for (int d = 0; d < DEP; d++) {
            const long dz = z - d * g.str[0];
            zu |= dz >= 0 && dz % g.dil[0] == 0 && dz / g.dil[0] < g.ker[0];
          }
          if (!zu) continue;
          const long iz = iz0 + z;
          for (long y = 0; y < HROW; y++) {
            const long iy = iy0 + y;
            /* mac 1: the row's channel streams, xs[j][x] (4 * XB bytes, zero
             * past WROW and in columns no output reads) */
            unsigned char xs[16][64];
            memset(xs, 0, sizeof xs);
            for (long xc = 0; xc < WROW; xc++) {
              unsigned char xb[16];
              for (int i = 0; i < NIN; i++) {
                const long c = MODE == 2 ? (k0 + i) / M : k0 / M + i;
                *bad += c >= C;
                if (ST) {
                  const long sy = tyh * ROWS * g.str[1] + y, sx = txw * PIX * g.str[2] + xc;
                  const long a = ((z / g.dil[0] * WHH + sy) * WWW + sx) * CWP + tc * NIN + i;
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
              if (MAC) {
                int used = 0;
                for (int p = 0; p < PIX; p++) {
                  const long dx = xc - p * g.str[2];
                  used |= dx >= 0 && dx % g.dil[2] == 0 && dx / g.dil[2] < g.ker[2];
                }
                for (int j = 0; j < CH && used; j++) xs[j][xc] = xb[j];
                continue;
              }
              for (int d = 0; d < DEP; d++)
                for (int r = 0; r < ROWS; r++) {
                  long kr;
                  if (!reads_row(&g, z, y, d, r, &kr)) continue;
                  for (int p = 0; p < PIX; p++) {
                    const long dx = xc - p * g.str[2];
                    if (dx < 0 || dx % g.dil[2] || dx / g.dil[2] >= g.ker[2]) continue;
                    const long t = kr * g.ker[2] + dx / g.dil[2];
                    for (int j = 0; j < CH; j++) {
                      const int slot = MODE == 0 ? j / (int)M : MODE == 1 ? 0 : j;
                      /* byte_float: 0x4B0000bb, then the bias off */
                      const unsigned bb = u8 ? xb[slot] : xb[slot] ^ 0x80u;
                      const float xf =
                          bits_float(0x4B000000u | bb) - (u8 ? 8388608.0f : 8388736.0f);
                      acc[d][r][p][j] = fmaf(xf, (float)wt[(k0 + j) * KVOL + t], acc[d][r][p][j]);
                    }
                  }
                }
            }
            if (!MAC) continue;
            ck_assert_int_le(4 * XB, 64);
            for (int d = 0; d < DEP; d++)
              for (int r = 0; r < ROWS; r++) {
                long kr;
                if (!reads_row(&g, z, y, d, r, &kr)) continue;
                for (int p = 0; p < PIX; p++)
                  for (long a = 0; a < KWW; a++)
                    for (int j = 0; j < CH; j++)
                      for (int b = 0; b < 4; b++) { /* dp4a: the word at p * SW + 4a */
                        const long kx = 4 * a + b, o = p * g.str[2] + kx;
                        *bad += o >= 4 * XB;
                        const int xv = u8 ? xs[j][o] : (signed char)xs[j][o];
                        const int wv = kx < g.ker[2] ? wt[(k0 + j) * KVOL + kr * g.ker[2] + kx] : 0;
                        iacc[d][r][p][j] += xv * wv;
                      }
              }
          }
        }
        for (int d = 0; d < DEP; d++)
          for (int r = 0; r < ROWS; r++)
            for (int p = 0; p < PIX; p++) {
              const long od = od0 + d, oh = oh0 + r, ow = ow0 + p;
              if (od >= g.out[0] || oh >= g.out[1] || ow >= g.out[2]) continue;
              for (int j = 0; j < CH; j++) {
                const long k = k0 + j;
                const uint32_t off = w->epi.bias || w->epi.data_zero_point
                                         ? (uint32_t)params[CTQ_HEADER + CTQ_OFF * kp + k]
                                         : 0;
                const int32_t v = MAC ? (int32_t)((uint32_t)iacc[d][r][p][j] + off)
                                      : (int32_t)(float_bits(acc[d][r][p][j] + 12582912.0f) +
                                                  (off - 0x4B400000u));
                const long o = (((n * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow) * K + k;
                emulated_store(w, params, o, k, v, res, out, writes);
              }
            }
      }
    }
  free(smem);
}

static const tpl_family family = {case_shape, dw_epilogue, tpl_of, emulate,
                                  "reads outside the window or the pixel"};

/* Sampled valid configs (and the preferred one) of each shape, emulated in
 * each epilogue against reference_qconv. */
START_TEST(emulated_kernel_matches_reference_qconv) {
  const char *env = getenv("CT_DW_DRAWS");
  emulations_match(&family, _i, env ? atoi(env) : 16, 36);
}
END_TEST

/* Each shape: its preferred config (then sampled ones) compile for sm_90
 * and sm_80, the epilogue rotating, without spills. */
START_TEST(configs_compile_for_sm90_and_sm80) {
  const char *env = getenv("CT_DW_COMPILES");
  configs_compile(&family, _i, env ? atoi(env) : 2, 360, 2, 1, NULL);
}
END_TEST

/* A config that slips past valid() (chans not dividing K) fails its static_assert. */
START_TEST(an_invalid_point_fails_to_compile) {
  const ct_workload w = dw_shape(0, 1, 12, 1, 9, 3, 1, 1); /* K = 12 */
  invalid_point_fails_to_compile(&w, "chans", 8, "chans", "chans must divide K", tpl_of(&w));
}
END_TEST

/* mac 1 (dp4a over taps) on a multiplier of 2 is refused, and its
 * instance fails its static_assert. */
START_TEST(mac1_refuses_a_multiplier) {
  const ct_workload w = dw_shape(0, 1, 16, 2, 9, 3, 1, 1);
  invalid_point_fails_to_compile(&w, "mac", 1, "multiplier 1", "mac 1: multiplier 1", tpl_of(&w));
}
END_TEST

/* sm_90's limits into a, w's space of its template into sp (space_free
 * it); the template. */
static const template_desc *sm90_space(const ct_workload *w, arch *a, space *sp) {
  ck_assert_int_eq(arch_from_name("sm_90", a, NULL), CT_OK);
  space_init(sp);
  const template_desc *tpl = tpl_of(w);
  ck_assert_int_eq(tpl->space(w, sp, NULL), CT_OK);
  return tpl;
}

/* c: the preferred config of w with mac 1 and the tile given (staging 0,
 * depths left as preferred). */
static void mac1_tile(const template_desc *tpl, const ct_workload *w, space *sp, const arch *a,
                      config *c, int chans, int pix, int rows, int bc, int bw, int bh, int minb) {
  ck_assert(tpl->preferred(w, sp, a, c));
  ck_assert(template_set_choice(sp, c, "mac", 1));
  ck_assert(template_set_choice(sp, c, "chans", chans));
  ck_assert(template_set_choice(sp, c, "pix", pix));
  ck_assert(template_set_choice(sp, c, "rows", rows));
  ck_assert(template_set_choice(sp, c, "staging", 0));
  ck_assert(template_set_choice(sp, c, "blocks_per_sm", minb));
  ck_assert(template_set_choice(sp, c, "block_c", bc));
  ck_assert(template_set_choice(sp, c, "block_w", bw));
  ck_assert(template_set_choice(sp, c, "block_h", bh));
}

/* The untuned default takes what the tuned bests take on MobileNetV2's
 * two largest 3x3 stride-1 layers at batch 32: four channels a thread and
 * 7 or 8 rows, at part of the SM's warps (before 29 November: 4 rows at
 * full occupancy, 1.46x the tuned bests' time over the depthwise sets
 * against 1.22x now, H200). */
START_TEST(preferred_takes_four_channels_and_long_columns) {
  static const int shapes[][2] = {{144, 56}, {32, 112}};
  for (int i = 0; i < 2; i++) {
    const ct_workload w = dw_shape(0, 32, shapes[i][0], 1, shapes[i][1], 3, 1, 1);
    arch a;
    space sp;
    const template_desc *tpl = sm90_space(&w, &a, &sp);
    config c;
    ck_assert(tpl->preferred(&w, &sp, &a, &c));
    char why[TEMPLATE_WHY_MAX];
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
    ck_assert_int_eq(space_get(&sp, &c, "mac", -1), 1);
    ck_assert_int_eq(space_get(&sp, &c, "chans", -1), 4);
    ck_assert_int_ge(space_get(&sp, &c, "rows", -1), 7);
    space_free(&sp);
  }
}
END_TEST

/* The tiles beyond powers of two: on MobileNetV2's dw144_56 at batch 32,
 * 12 x 4 channels a block divide 144 (3 blocks along grid y, where 32
 * channels a block take 5 with half of the last idle), 7 x 8 rows divide
 * 56 (one tile a column of tiles) and so do 4 x 7; a block of part of a
 * warp (12 x 4 x 7 threads) is refused, and its instance fails the
 * kernel's static_assert. */
START_TEST(tiles_fit_the_mobile_sizes) {
  const ct_workload w = dw_shape(0, 32, 144, 1, 56, 3, 1, 1);
  arch a;
  space sp;
  const template_desc *tpl = sm90_space(&w, &a, &sp);
  static const int tiles[][5] = {/* block_c, block_w, block_h, grid y, rows */ {12, 8, 1, 3, 8},
                                 {8, 4, 7, 5, 8},
                                 {24, 4, 1, 2, 8},
                                 {6, 16, 1, 6, 8},
                                 {8, 4, 4, 5, 7},
                                 {12, 4, 7, 3, 8}};
  for (int i = 0; i < 6; i++) {
    config c;
    mac1_tile(tpl, &w, &sp, &a, &c, 4, 2, tiles[i][4], tiles[i][0], tiles[i][1], tiles[i][2], 1);
    char why[TEMPLATE_WHY_MAX];
    instance inst;
    ct_err err = {0};
    if (i == 5) { /* 336 threads */
      ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a, why), 0);
      ck_assert_ptr_nonnull(strstr(why, "whole warps"));
      memset(&inst, 0, sizeof inst);
      inst.tpl = tpl;
      ck_assert_int_eq(tpl->instance(&w, &sp, &c, &a, &inst, NULL), CT_OK);
      cubin cb;
      ck_assert_int_eq(nvrtc_compile(&inst, &a, &cb, &err), CT_ERR_NVRTC);
      ck_assert_ptr_nonnull(strstr(cb.log, "whole warps"));
      cubin_free(&cb);
      break;
    }
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "tile %d: %s", i, why);
    ck_assert_msg(instance_make(tpl, &w, &sp, &c, &a, &inst, &err) == CT_OK, "%s", err.msg);
    ck_assert_uint_eq(inst.grid[1], (unsigned)tiles[i][3]);
    /* 56 columns in tiles of block_w x 2, 56 rows in tiles of block_h x rows */
    const unsigned tw = (56 + 2 * tiles[i][1] - 1) / (2 * tiles[i][1]),
                   th = (56 + tiles[i][4] * tiles[i][2] - 1) / (tiles[i][4] * tiles[i][2]);
    ck_assert_uint_eq(inst.grid[0], 32u * tw * th);
  }
  space_free(&sp);
}
END_TEST

/* mac 1 on the depthwise shapes that ship (MobileNetV2's 3x3, EfficientNet's
 * 5x5 stride 2, CSN's 3x3x3), at the widest tiles its knobs allow (CSN's
 * also with 2 and 4 output planes a thread): valid, and compiled for sm_90
 * without spills. */
START_TEST(mac1_compiles_without_spills) {
  static const int shapes[][5] = {{0, 144, 56, 3, 1}, {0, 144, 56, 5, 2}, {1, 64, 14, 3, 1}};
  /* chans, pix, rows; 5x5's and 3x3x3's filters of 16 channels alone take
   * 160 and 144 registers */
  static const int tiles[][4] = {{4, 4, 8, 1}, {8, 2, 4, 1}, {16, 2, 2, 1}},
                   narrow[4] = {4, 2, 8, 1}, deep[][4] = {{4, 2, 4, 2}, {4, 1, 4, 4}};
  for (int si = 0; si < 3; si++)
    for (int ti = 0; ti < (si == 2 ? 5 : 3); ti++) {
      const ct_workload w = dw_shape(shapes[si][0], 32, shapes[si][1], 1, shapes[si][2],
                                     shapes[si][3], shapes[si][4], shapes[si][3] / 2);
      arch a;
      space sp;
      const template_desc *tpl = sm90_space(&w, &a, &sp);
      const int *t = ti > 2 ? deep[ti - 3] : si > 0 && ti == 2 ? narrow : tiles[ti];
      config c;
      mac1_tile(tpl, &w, &sp, &a, &c, t[0], t[1], t[2], 4, 4, 2, 1);
      ck_assert(shapes[si][0] ? template_set_choice(&sp, &c, "depths", t[3]) : t[3] == 1);
      char why[TEMPLATE_WHY_MAX], text[512];
      ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "shape %d tile %d: %s", si, ti, why);
      instance inst;
      ct_err err = {0};
      ck_assert_msg(instance_make(tpl, &w, &sp, &c, &a, &inst, &err) == CT_OK, "%s", err.msg);
      cubin cb;
      ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s: %s\n%s",
                    space_config_str(&sp, &c, text, sizeof text), err.msg, cb.log ? cb.log : "");
      ck_assert_msg(!cb.log || !strstr(cb.log, "stack frame"), "%s: spills\n%s",
                    space_config_str(&sp, &c, text, sizeof text), cb.log);
      cubin_free(&cb);
      space_free(&sp);
    }
}
END_TEST

/* The cost model's features tell a block whose channels pass K from one
 * that divides it: MobileNetV2's 96-channel stride-2 layer at 32 x 4
 * channels a block (a quarter of each warp idle) against 24 x 4, the
 * tuned best. */
START_TEST(features_count_idle_channels) {
  const ct_workload w = dw_shape(0, 32, 96, 1, 112, 3, 2, 1);
  arch a;
  space sp;
  const template_desc *tpl = sm90_space(&w, &a, &sp);
  float f[2][64];
  int n[2];
  for (int i = 0; i < 2; i++) {
    config c;
    mac1_tile(tpl, &w, &sp, &a, &c, 4, 1, 8, i ? 32 : 24, 4, 1, 2);
    char why[TEMPLATE_WHY_MAX];
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
    n[i] = tpl->describe(&w, &sp, &c, f[i], 64);
  }
  ck_assert_int_eq(n[0], n[1]);
  ck_assert_int_ge(n[0], 2);
  /* the last two: the channels' share, and it times the pixels' (both
   * tiles divide the 56 x 56 output: 1) */
  const double idle = log2(96.0 / 128.0);
  for (int j = n[0] - 2; j < n[0]; j++) {
    ck_assert_double_eq_tol(f[0][j], 0.0, 1e-6);
    ck_assert_double_eq_tol(f[1][j], idle, 1e-6);
  }
  space_free(&sp);
}
END_TEST

static void add_cpu(TCase *tc) {
  tcase_add_test(tc, refuses_what_it_cannot_run);
  tcase_add_test(tc, features_count_idle_channels);
  tcase_add_loop_test(tc, emulated_kernel_matches_reference_qconv, 0, N_CASES);
}

static void add_compile(TCase *tc) {
  tcase_add_test(tc, an_invalid_point_fails_to_compile);
  tcase_add_test(tc, mac1_refuses_a_multiplier);
  tcase_add_test(tc, tiles_fit_the_mobile_sizes);
  tcase_add_test(tc, preferred_takes_four_channels_and_long_columns);
  tcase_add_test(tc, mac1_compiles_without_spills);
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
