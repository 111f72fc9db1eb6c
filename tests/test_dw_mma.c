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

/* c: an 8 x 4 tile of n_tiles n-tiles, one warp along the pixels, one
 * m-tile at once, 2 blocks an SM, one tile a block, tma 1 (the knobs both
 * families share). */
static int set_tma_tile(const space *sp, config *c, int n_tiles) {
  return template_set_choice(sp, c, "tile_w", 8) && template_set_choice(sp, c, "tile_h", 4) &&
         template_set_choice(sp, c, "n_tiles", n_tiles) &&
         template_set_choice(sp, c, "warps_m", 1) && template_set_choice(sp, c, "m_unroll", 1) &&
         template_set_choice(sp, c, "blocks_per_sm", 2) && template_set_choice(sp, c, "tiles", 1) &&
         template_set_choice(sp, c, "tma", 1);
}

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
  ck_assert(set_tma_tile(&sp, &c, 2));
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

START_TEST(grouped_refuses_what_it_cannot_run) {
  char why[TEMPLATE_WHY_MAX];
  const template_desc *t2 = template_find("conv2d_nhwc_grouped_mma");
  const template_desc *t3 = template_find("conv3d_ndhwc_grouped_mma");
  ck_assert_ptr_nonnull(t2);
  ck_assert_ptr_nonnull(t3);
  ct_workload w = dw_shape(0, 1, 128, 1, 56, 3, 1, 1);
  w.groups = 32; /* ResNeXt's first: 4 channels a group */
  ck_assert_msg(t2->supports(&w, why), "%s", why);
  ck_assert_int_eq(t3->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "conv3d only"));
  w.groups = 1; /* dense: only 8, 16 or 32 input channels */
  ck_assert_int_eq(t2->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "dense ones"));
  w.c = 16, w.k = 96; /* MobileNetV2's block1 expand: one super-group */
  ck_assert_msg(t2->supports(&w, why), "%s", why);
  w.c = 128, w.k = 128;
  w.groups = 128; /* depthwise: the other family's */
  ck_assert_int_eq(t2->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "conv2d_nhwc_dw_mma"));
  w.k = 256; /* with a channel multiplier: this one's */
  ck_assert_msg(t2->supports(&w, why), "%s", why);
  w.k = 128, w.groups = 2; /* 64 a group */
  ck_assert_int_eq(t2->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "more than 32"));
  w.groups = 32, w.c = 96, w.k = 36; /* K not a multiple of 8 */
  ck_assert_int_eq(t2->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "multiples of 8"));
  w.c = 24, w.k = 24, w.groups = 8; /* 3 a group: no super-group of whole groups */
  ck_assert_int_eq(t2->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "super-group"));
  w = dw_shape(1, 1, 64, 1, 9, 5, 1, 2);
  w.groups = 2; /* 5x5x5 at 32 a group: 125 k-steps */
  ck_assert_int_eq(t3->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "k-steps"));
  w = dw_shape(0, 1, 64, 1, 9, 3, 1, 1);
  w.groups = 8;
  w.epi.weight_zero_point = 1;
  ck_assert_int_eq(t2->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "weight zero points"));
}
END_TEST

/* sg_c: whole groups dividing the groups, 8 output channels or more;
 * n_per_warp within one super-group; a block of whole super-groups; tma's
 * 16 input channels a block. */
START_TEST(grouped_rejects_configs_with_the_reason) {
  arch a90;
  ck_assert_int_eq(arch_from_name("sm_90", &a90, NULL), CT_OK);
  ct_workload w = dw_shape(0, 2, 64, 1, 28, 3, 1, 1);
  w.groups = 8; /* 8 a group */
  const template_desc *tpl = template_find("conv2d_nhwc_grouped_mma");
  space sp;
  space_init(&sp);
  ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
  config c;
  ck_assert(tpl->preferred(&w, &sp, &a90, &c));
  char why[TEMPLATE_WHY_MAX];
  ck_assert(set_tma_tile(&sp, &c, 4) && template_set_choice(&sp, &c, "sg_c", 16) &&
            template_set_choice(&sp, &c, "n_per_warp", 2));
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a90, why), "%s", why);
  ck_assert(template_set_choice(&sp, &c, "n_per_warp", 4)); /* 4 n-tiles; 2 a super-group */
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "n_per_warp"));
  ck_assert(template_set_choice(&sp, &c, "n_per_warp", 1) &&
            template_set_choice(&sp, &c, "sg_c", 8) && template_set_choice(&sp, &c, "n_tiles", 1));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0); /* 8 input channels: no tma */
  ck_assert_ptr_nonnull(strstr(why, "16 input channels"));
  space_free(&sp);
  w.groups = 16; /* 4 a group: sg_c 8 holds 2 groups, 8 outputs */
  w.k = 32;      /* 2 a group out: sg_c 8 gives 4 outputs */
  space_init(&sp);
  ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
  ck_assert(tpl->preferred(&w, &sp, &a90, &c));
  ck_assert_int_ne(space_get(&sp, &c, "sg_c", 0), 8);
  ck_assert(template_set_choice(&sp, &c, "sg_c", 8));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "sg_c 8"));
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
#define N_CASES  10
#define N_GCASES 13

/* Byte i of word v as the mma's operand: signed, or unsigned (u8 data). */
static int opnd(uint32_t v, int i, int u8) {
  const unsigned b = (v >> (8 * i)) & 0xffu;
  return u8 ? (int)b : (int)(signed char)b;
}

/* The kernel on the CPU, macro for macro (conv_dw_mma.cuh; depthwise is
 * sg_c 8, n_per_warp 1): x the data bytes, wt the weights, params the
 * folded block, res the residual bytes; out in w's output type, writes
 * counted, *bad the A reads past the buffer. */
static void emulate(const ct_workload *w, const space *s, const config *cfg, const unsigned char *x,
                    const signed char *wt, const int32_t *params, const unsigned char *res,
                    void *out, int *writes, long *bad, rng *noise) {
  geom3 g;
  workload_geom(w, &g);
  const long TW = space_get(s, cfg, "tile_w", 16), TH = space_get(s, cfg, "tile_h", 4),
             NT = space_get(s, cfg, "n_tiles", 4), WM = space_get(s, cfg, "warps_m", 1),
             MU = space_get(s, cfg, "m_unroll", 2), TMA = space_get(s, cfg, "tma", 0),
             SGC = space_get(s, cfg, "sg_c", 8), NPW = space_get(s, cfg, "n_per_warp", 1);
  const long C = w->c, K = w->k, KD = g.ker[0], KH = g.ker[1], KW = g.ker[2];
  const long CPG = C / w->groups, KPG = K / w->groups, SGK = SGC / CPG * KPG;
  const long TPK = 32 / SGC, LPT = 4 / TPK;
  const long KVOL = KD * KH * KW, KWP = (KW + TPK - 1) / TPK * TPK, KROW = KWP / TPK,
             KS = KD * KH * KROW;
  const long CB = 8 * NT, CBIN = CB >= SGK ? CB / SGK * SGC : SGC;
  const long PS = TMA ? CBIN : CBIN == 8 ? 8 : CBIN + 8, TPIX = TW * TH, MT = TPIX / 16;
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
      const long n = ti / (TWN * THN * g.out[0]), k0b = by * CB, cin0 = k0b / SGK * SGC;
      const long iz0 = od * g.str[0] - g.pb[0], iy0 = oh0 * g.str[1] - g.pb[1],
                 ix0 = ow0 * g.str[2] - g.pb[2];
      /* the window: noise first (the slack a padded tap reads is never staged) */
      for (long i = 0; i < WIN; i++) win[i] = (unsigned char)rng_next(noise);
      for (long pix = 0; pix < KD * WHH * WWW; pix++)
        for (long cu = 0; cu < CBIN / 8; cu++) {
          const long xx = pix % WWW, yy = pix / WWW % WHH, zz = pix / (WWW * WHH);
          const long iz = iz0 + zz * g.dil[0], iy = iy0 + yy, ix = ix0 + xx, c = cin0 + cu * 8;
          const int in =
              iz >= 0 && iz < g.in[0] && iy >= 0 && iy < g.in[1] && ix >= 0 && ix < g.in[2];
          for (int b = 0; b < 8; b++)
            win[pix * PS + cu * 8 + b] =
                c >= C ? 0
                : in   ? x[(((n * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix) * C + c + b]
                : TMA  ? 0
                       : zx;
        }
      for (long warp = 0; warp < NT / NPW * WM; warp++) {
        const long wn = warp % (NT / NPW), wm = warp / (NT / NPW), kw = k0b + wn * NPW * 8;
        const long sgi = kw / SGK * SGC; /* the warp's super-group's first input channel */
        if (kw >= K) continue;
        for (long mb = wm * MU; mb < MT; mb += WM * MU)
          for (long mt = mb; mt < mb + MU && mt < MT; mt++)
            for (long j = 0; j < NPW; j++) {
              const long kn = kw + 8 * j; /* the n-tile's first output channel */
              int32_t d[16][8];
              for (int r = 0; r < 16; r++)
                for (int col = 0; col < 8; col++)
                  d[r][col] = has_off ? params[CTQ_HEADER + CTQ_OFF * kp + kn + col] : 0;
              for (long st = 0; st < KS; st++) {
                int a[16][32], b[32][8];
                for (int lane = 0; lane < 32; lane++) {
                  const int lg = lane / 4, q = lane % 4;
                  const long tcol = q / LPT, lc8 = 8 * (q % LPT);
                  /* A: rows lg, lg + 8 at tap column tcol of k-step st,
                   * channels lc8.. of the super-group */
                  const long zy = st / KROW, col0 = TPK * (st % KROW);
                  const long tap = ((zy / KH * WHH) + zy % KH * g.dil[1]) * WWW + col0 * g.dil[2];
                  for (int h = 0; h < 2; h++) {
                    const long m = mt * 16 + lg + 8 * h;
                    const long off = ((m / TW) * g.str[1] * WWW + (m % TW) * g.str[2]) * PS +
                                     tap * PS + tcol * g.dil[2] * PS + lc8 + (sgi - cin0);
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
                  /* B: output channel kn + lg, input channels sgi + lc8 ..
                   * + 7 at the tap, zero where of another group */
                  const long xk = col0 + tcol, o = kn + lg, gi = o / KPG;
                  for (int i = 0; i < 8; i++) {
                    const long ci = sgi + lc8 + i;
                    const int v = xk < KW && ci / CPG == gi
                                      ? wt[((o * KVOL) + zy * KW + xk) * CPG + ci - gi * CPG]
                                      : 0;
                    b[(i < 4 ? 4 * q : 16 + 4 * q) + i % 4][lg] = v;
                  }
                }
                for (int r = 0; r < 16; r++)
                  for (int col = 0; col < 8; col++)
                    for (int k = 0; k < 32; k++) d[r][col] += a[r][k] * b[k][col];
              }
              for (int r = 0; r < 16; r++)
                for (int col = 0; col < 8; col++) {
                  const long m = mt * 16 + r, k = kn + col;
                  const long oh = oh0 + m / TW, ow = ow0 + m % TW;
                  if (oh >= g.out[1] || ow >= g.out[2]) continue; /* never copied out */
                  const long o = (((n * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow) * K + k;
                  emulated_store(w, params, o, k, d[r][col], res, out, writes);
                }
            }
      }
    }
  free(win);
}

static const tpl_family family = {case_shape, dw_epilogue, tpl_of, emulate,
                                  "A reads past the buffer"};

/* The grouped family's shapes: groups of 4 to 32 channels (ResNeXt's), 2,
 * a channel multiplier, K/G != C/G, strides, dilation, a 5x5 kernel, 3D
 * with a depth-1 input; dense layers of 8, 16 and 32 channels. */
static ct_workload gshape(int d3, int n, int c, int k, int groups, int in, int ker, int str,
                          int pad) {
  ct_workload w = dw_shape(d3, n, c, 1, in, ker, str, pad);
  w.k = k, w.groups = groups;
  return w;
}

static ct_workload gcase_shape(int i) {
  ct_workload w;
  switch (i) {
  case 0:
    return gshape(0, 2, 32, 32, 8, 9, 3, 1, 1); /* 4 a group */
  case 1:
    return gshape(0, 1, 64, 64, 8, 11, 3, 2, 1); /* 8 */
  case 2:
    return gshape(0, 3, 64, 64, 4, 7, 3, 1, 1); /* 16 */
  case 3:
    return gshape(0, 2, 64, 64, 2, 6, 3, 1, 1); /* 32 */
  case 4:
    return gshape(1, 2, 32, 32, 4, 5, 3, 1, 1); /* 3D, 8 */
  case 5:
    return gshape(0, 1, 16, 32, 16, 10, 3, 1, 1); /* a channel multiplier of 2 */
  case 6:
    return gshape(0, 1, 24, 48, 6, 9, 5, 2, 2); /* 4 in, 8 out a group, 5x5 */
  case 7:
    w = gshape(0, 1, 16, 16, 8, 12, 3, 1, 2); /* 2 a group, dilation 2 */
    w.dilation[0] = w.dilation[1] = 2;
    return w;
  case 8:
    return gshape(1, 1, 64, 64, 2, 8, 3, 2, 1); /* 3D, 32 a group, stride 2 */
  case 9:
    w = gshape(1, 2, 64, 64, 2, 4, 3, 1, 1); /* 3D ResNeXt's last: depth 1 */
    w.in[0] = 1;
    return w;
  case 10:
    return gshape(0, 2, 16, 96, 1, 9, 1, 1, 0); /* dense 1x1, 16 channels in */
  case 11:
    return gshape(0, 1, 32, 16, 1, 10, 1, 1, 0); /* dense 1x1, 32 in, 16 out */
  default:
    return gshape(0, 1, 8, 24, 1, 9, 3, 2, 1); /* dense 3x3 stride 2, 8 in */
  }
}

static const template_desc *gtpl_of(const ct_workload *w) {
  return template_find(w->op == CT_OP_CONV3D ? "conv3d_ndhwc_grouped_mma"
                                             : "conv2d_nhwc_grouped_mma");
}

static const tpl_family gfamily = {gcase_shape, dw_epilogue, gtpl_of, emulate,
                                   "A reads past the buffer"};

/* Case i: the depthwise family's shape i, then (from N_CASES) the grouped
 * family's. */
static const tpl_family *family_of(int *i) {
  if (*i < N_CASES) return &family;
  *i -= N_CASES;
  return &gfamily;
}

/* Sampled valid configs (and the preferred one) of each shape, emulated in
 * each epilogue against reference_qconv. */
START_TEST(emulated_kernel_matches_reference_qconv) {
  const char *env = getenv("CT_DW_DRAWS");
  int i = _i;
  const tpl_family *f = family_of(&i);
  emulations_match(f, i, env ? atoi(env) : test_quick() ? 4 : 16, f == &family ? 46 : 146);
}
END_TEST

/* Each shape: its preferred config (then sampled ones) compile for sm_90
 * and sm_80, the epilogue rotating, without spills. */
START_TEST(configs_compile_for_sm90_and_sm80) {
  const char *env = getenv("CT_DW_COMPILES");
  int i = _i;
  const tpl_family *f = family_of(&i);
  configs_compile(f, i, env ? atoi(env) : 2, f == &family ? 460 : 560, 2, 0, NULL);
}
END_TEST

static void add_cpu(TCase *tc) {
  tcase_add_test(tc, refuses_what_it_cannot_run);
  tcase_add_test(tc, rejects_configs_with_the_reason);
  tcase_add_test(tc, grouped_refuses_what_it_cannot_run);
  tcase_add_test(tc, grouped_rejects_configs_with_the_reason);
  tcase_add_loop_test(tc, emulated_kernel_matches_reference_qconv, 0, N_CASES + N_GCASES);
}

static void add_compile(TCase *tc) {
  tcase_add_loop_test(tc, configs_compile_for_sm90_and_sm80, 0, N_CASES + N_GCASES);
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
