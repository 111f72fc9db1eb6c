/*
 * test_dw_ring.c: the depthwise ring template (templates/conv_dw_ring.{c,cuh})
 * on the CPU: what it refuses; a CPU emulation of the kernel, block for
 * block and step for step (the ring's rows, the copies and the data zero
 * point's bytes written at each step for the step AHEAD of it, each
 * thread's taps read back from the ring, the sums from the folded offset)
 * followed by the host's requantization of the same params, checked
 * exactly against reference_qconv for sampled valid configs and the
 * preferred one in four epilogues, every output written once; the ring's
 * discipline checked on the way: a step reads only rows that were copied
 * in a group its wait_group has completed, and a copy never lands in a
 * row that the step before or the current one may still read (the one
 * barrier a step allows). NVRTC compiles for sm_90 and sm_80 without
 * spills. CT_DW_DRAWS: configs emulated per shape (default 16).
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

static const template_desc *tpl_of(const ct_workload *w) {
  (void)w;
  return template_find("conv2d_nhwc_dw_ring");
}

START_TEST(refuses_what_it_cannot_run) {
  char why[TEMPLATE_WHY_MAX];
  const template_desc *t = tpl_of(NULL);
  ck_assert_ptr_nonnull(t);
  ct_workload w = dw_shape(0, 1, 64, 1, 56, 3, 1, 1);
  ck_assert_msg(t->supports(&w, why), "%s", why);
  w = dw_shape(0, 1, 16, 2, 9, 3, 1, 1); /* multiplier 2 */
  ck_assert_int_eq(t->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "multiplier 1"));
  w = dw_shape(0, 1, 64, 1, 56, 3, 1, 1);
  w.groups = 16; /* grouped, not depthwise */
  ck_assert_int_eq(t->supports(&w, why), 0);
  w = dw_shape(0, 1, 6, 1, 9, 3, 1, 1); /* K = 6 */
  ck_assert_int_eq(t->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "multiple of 4"));
  w = dw_shape(0, 1, 16, 1, 12, 3, 1, 2);
  w.dilation[1] = 2; /* columns */
  ck_assert_int_eq(t->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "column dilation"));
  w.dilation[1] = 1, w.dilation[0] = 2; /* rows only: taken */
  ck_assert_msg(t->supports(&w, why), "%s", why);
  w = dw_shape(1, 1, 16, 1, 9, 3, 1, 1);
  ck_assert_int_eq(t->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "conv2d only"));
  w = dw_shape(0, 1, 64, 1, 56, 3, 1, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(t->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "nhwc"));
  w = dw_shape(0, 1, 16, 1, 20, 9, 1, 4); /* 81 taps */
  ck_assert_int_eq(t->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "registers"));
  w = dw_shape(0, 1, 64, 1, 56, 3, 1, 1);
  w.epi.weight_zero_point = 1;
  ck_assert_int_eq(t->supports(&w, why), 0);
}
END_TEST

/* 3x3, 5x5 stride 2, 7x7, a tall map (many steps: the ring wraps, the last
 * strip partial), C 20 and 12 (4-byte copies) and 8, a row dilation, a
 * 5x3 kernel with stride 2 along rows only and asymmetric padding, no
 * padding, a 1x1 at stride 2 (steps read rows with gaps). */
static ct_workload case_shape(int i) {
  ct_workload w;
  switch (i) {
  case 0:
    return dw_shape(0, 2, 32, 1, 9, 3, 1, 1);
  case 1:
    return dw_shape(0, 1, 24, 1, 11, 5, 2, 2);
  case 2:
    return dw_shape(0, 1, 8, 1, 10, 7, 1, 3);
  case 3:
    w = dw_shape(0, 1, 20, 1, 9, 3, 1, 1);
    w.in[0] = 41;
    return w;
  case 4:
    w = dw_shape(0, 2, 12, 1, 12, 3, 1, 2);
    w.dilation[0] = 2;
    return w;
  case 5:
    w = dw_shape(0, 3, 16, 1, 13, 3, 1, 1);
    w.in[0] = 15, w.kernel[0] = 5, w.stride[0] = 2, w.pad_before[0] = 2, w.pad_after[0] = 1;
    return w;
  case 6:
    return dw_shape(0, 1, 48, 1, 8, 3, 1, 0);
  default:
    return dw_shape(0, 2, 16, 1, 9, 1, 2, 0);
  }
}
#define N_CASES 8

/* Whether step t (0 up) of a strip reads its input row rr (0: the strip's
 * first): one of its ROWS output rows has a kernel row there. */
static int step_reads(const geom3 *g, int rows, long t, long rr) {
  const long y = rr - t * rows * g->str[1];
  if (t < 0 || y < 0) return 0;
  for (int r = 0; r < rows; r++) {
    const long dy = y - r * g->str[1];
    if (dy >= 0 && dy % g->dil[1] == 0 && dy / g->dil[1] < g->ker[1]) return 1;
  }
  return 0;
}

/* The kernel on the CPU, macro for macro (conv_dw_ring.cuh): x the data
 * bytes, wt the weights, params the folded block, res the residual bytes;
 * out in w's output type, writes counted, *bad the reads outside a ring
 * row or a pixel's channels, the reads of a row not (yet) in its ring row,
 * and the copies into a ring row that a running step may still read. */
static void emulate(const ct_workload *w, const space *s, const config *cfg, const unsigned char *x,
                    const signed char *wt, const int32_t *params, const unsigned char *res,
                    void *out, int *writes, long *bad, rng *noise) {
  (void)noise; /* the ring holds every byte a step reads */
  geom3 g;
  workload_geom(w, &g);
  const int CH = space_get(s, cfg, "chans", 4), PIX = space_get(s, cfg, "pix", 2),
            ROWS = space_get(s, cfg, "rows", 2), BC = space_get(s, cfg, "block_c", 8),
            BW = space_get(s, cfg, "block_w", 8), STEPS = space_get(s, cfg, "steps", 14),
            AHEAD = space_get(s, cfg, "ahead", 3);
  const long C = w->c, K = w->k, KH = g.ker[1], KW = g.ker[2];
  const long SH = g.str[1], SW = g.str[2], DH = g.dil[1];
  const long TILE_W = (long)BW * PIX, SADV = (long)ROWS * SH, STRIP = (long)STEPS * ROWS;
  const long HROW = (ROWS - 1) * SH + (KH - 1) * DH + 1;
  const long WWW = (TILE_W - 1) * SW + KW;
  const long CWB = (long)BC * CH, CWP = (CWB + 15) / 16 * 16, RB = WWW * CWP;
  const long SLOTS = HROW + (AHEAD + 1L) * SADV;
  const long CPB = CWB % 16 == 0 && C % 16 == 0 ? 16 : CWB % 8 == 0 && C % 8 == 0 ? 8 : 4;
  const long OH = g.out[1], OW = g.out[2];
  const long TWN = (OW + TILE_W - 1) / TILE_W, RTHN = (OH + STRIP - 1) / STRIP;
  const long gx = g.n * RTHN * TWN, gy = (K + CWB - 1) / CWB;
  const int zx = w->epi.data_zero_point ? params[CTQ_PAD_WORD] & 0xff : 0;
  const int u8 = w->data_type == CT_DTYPE_UINT8;
  const int kp = (int)((K + 3) / 4 * 4);
  unsigned char *ring = malloc((size_t)(SLOTS * RB));
  long *slot_row = malloc(sizeof(long) * (size_t)SLOTS), *slot_group = malloc(sizeof(long) * (size_t)SLOTS);
  ck_assert(ring && slot_row && slot_group);
  for (long bx = 0; bx < gx; bx++)
    for (long by = 0; by < gy; by++) {
      const long tw = bx % TWN, th = bx / TWN % RTHN, n = bx / (TWN * RTHN);
      const long k0b = by * CWB, oh_first = th * STRIP;
      const long iy0 = oh_first * SH - g.pb[1], x0 = tw * TILE_W * SW - g.pb[2];
      long steps = (OH - oh_first + ROWS - 1) / ROWS;
      if (steps > STEPS) steps = STEPS;
      memset(ring, 0xee, (size_t)(SLOTS * RB));
      for (long i = 0; i < SLOTS; i++) slot_row[i] = -1, slot_group[i] = -1;
      /* ring_fill of step t's new rows in iteration it (-1: before the
       * loop), its group t */
      for (long it = -1; it < steps; it++) {
        for (long t = it < 0 ? 0 : it + AHEAD; t < (it < 0 ? AHEAD : it + AHEAD + 1); t++) {
          if (t >= steps) continue;
          const long r0 = t == 0 ? 0 : (t - 1) * SADV + HROW, r1 = t * SADV + HROW;
          for (long rr = r0; rr < r1; rr++) {
            const long sl = rr % SLOTS, old = slot_row[sl];
            /* a thread may still be in step it - 1, none in it - 2 */
            *bad += it >= 0 && old >= 0 && (step_reads(&g, ROWS, it - 1, old) || step_reads(&g, ROWS, it, old));
            slot_row[sl] = rr, slot_group[sl] = t;
            const long iy = iy0 + rr;
            for (long xx = 0; xx < WWW; xx++)
              for (long cu = 0; cu < CWB / CPB; cu++) {
                const long ix = x0 + xx, c = k0b + cu * CPB;
                const int in = iy >= 0 && iy < g.in[1] && ix >= 0 && ix < g.in[2] && c < C;
                *bad += in && c + CPB > C; /* a piece past the pixel */
                for (long b = 0; b < CPB; b++)
                  ring[sl * RB + xx * CWP + cu * CPB + b] =
                      in ? x[((n * g.in[1] + iy) * g.in[2] + ix) * C + c + b] : (unsigned char)zx;
              }
          }
        }
        if (it < 0) continue;
        const long st = it; /* the step: wait_group AHEAD completes groups 0 .. st */
        for (long tid = 0; tid < (long)BC * BW; tid++) {
          const long tc = tid % BC, txw = tid / BC;
          const long k0 = k0b + tc * CH, ow0 = tw * TILE_W + txw * PIX;
          if (k0 >= K || ow0 >= OW) continue;
          for (int r = 0; r < ROWS; r++)
            for (int p = 0; p < PIX; p++)
              for (int j = 0; j < CH; j++) {
                const long k = k0 + j, oh = oh_first + st * ROWS + r, ow = ow0 + p;
                int32_t sum = 0;
                for (long ky = 0; ky < KH; ky++) {
                  const long rr = st * SADV + r * SH + ky * DH, sl = rr % SLOTS;
                  *bad += slot_row[sl] != rr || slot_group[sl] > st;
                  for (long kx = 0; kx < KW; kx++) {
                    const long sx = txw * PIX * SW + p * SW + kx, sc = tc * CH + j;
                    *bad += !(sx < WWW && sc < CWB);
                    const unsigned char b = ring[sl * RB + sx * CWP + sc];
                    sum += (u8 ? (int)b : (int)(signed char)b) * wt[k * KH * KW + ky * KW + kx];
                  }
                }
                if (oh >= OH || ow >= OW) continue;
                const uint32_t off = w->epi.bias || w->epi.data_zero_point
                                         ? (uint32_t)params[CTQ_HEADER + CTQ_OFF * kp + k]
                                         : 0;
                const int32_t v = (int32_t)((uint32_t)sum + off);
                const long o = ((n * OH + oh) * OW + ow) * K + k;
                emulated_store(w, params, o, k, v, res, out, writes);
              }
        }
      }
    }
  free(ring);
  free(slot_row);
  free(slot_group);
}

static const tpl_family family = {case_shape, dw_epilogue, tpl_of, emulate,
                                  "reads outside a ring row or a pixel, of a row not in the ring, "
                                  "or copies over a row in use"};

/* Sampled valid configs (and the preferred one) of each shape, emulated in
 * each epilogue against reference_qconv. */
START_TEST(emulated_kernel_matches_reference_qconv) {
  const char *env = getenv("CT_DW_DRAWS");
  emulations_match(&family, _i, env ? atoi(env) : 16, 38);
}
END_TEST

/* Each shape: its preferred config (then a sampled one) compile for sm_90
 * and sm_80, the epilogue rotating, without spills. */
START_TEST(configs_compile_for_sm90_and_sm80) {
  const char *env = getenv("CT_DW_COMPILES");
  configs_compile(&family, _i, env ? atoi(env) : 2, 380, 2, 1, NULL);
}
END_TEST

/* A config that slips past valid() (chans not dividing K) fails its static_assert. */
START_TEST(an_invalid_point_fails_to_compile) {
  const ct_workload w = dw_shape(0, 1, 12, 1, 9, 3, 1, 1); /* K = 12 */
  invalid_point_fails_to_compile(&w, "chans", 8, "chans", "chans must divide K", tpl_of(&w));
}
END_TEST

/* The mobile nets' depthwise layers of multiplier 1 at batch 32 have a
 * preferred config, and the preferred configs of MobileNetV2's largest
 * ones compile without spills for sm_90. */
START_TEST(preferred_fits_the_mobile_layers) {
  static const int layers[][4] = {{32, 112, 3, 1}, {96, 112, 3, 2}, {144, 56, 3, 1},
                                  {144, 56, 5, 2}, {240, 28, 5, 1}, {192, 28, 3, 1},
                                  {576, 14, 3, 1}, {960, 7, 3, 1},  {1152, 7, 5, 1}};
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  for (int i = 0; i < (int)(sizeof layers / sizeof layers[0]); i++) {
    const ct_workload w =
        dw_shape(0, 32, layers[i][0], 1, layers[i][1], layers[i][2], layers[i][3], layers[i][2] / 2);
    const template_desc *tpl = tpl_of(&w);
    space sp;
    space_init(&sp);
    ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
    config c;
    ck_assert_msg(tpl->preferred(&w, &sp, &a, &c), "layer %d", i);
    char why[TEMPLATE_WHY_MAX], text[512];
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "layer %d: %s", i, why);
    if (i < 3) {
      instance inst;
      ct_err err = {0};
      ck_assert_msg(instance_make(tpl, &w, &sp, &c, &a, &inst, &err) == CT_OK, "%s", err.msg);
      cubin cb;
      ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s: %s\n%s",
                    space_config_str(&sp, &c, text, sizeof text), err.msg, cb.log ? cb.log : "");
      ck_assert_msg(!cb.log || !strstr(cb.log, "stack frame"), "%s: spills\n%s",
                    space_config_str(&sp, &c, text, sizeof text), cb.log);
      cubin_free(&cb);
    }
    space_free(&sp);
  }
}
END_TEST

static void add_cpu(TCase *tc) {
  tcase_add_test(tc, refuses_what_it_cannot_run);
  tcase_add_loop_test(tc, emulated_kernel_matches_reference_qconv, 0, N_CASES);
}

static void add_compile(TCase *tc) {
  tcase_add_test(tc, an_invalid_point_fails_to_compile);
  tcase_add_test(tc, preferred_fits_the_mobile_layers);
  tcase_add_loop_test(tc, configs_compile_for_sm90_and_sm80, 0, N_CASES);
}

static const test_case suite_cases[] = {
    {"cpu", 600, add_cpu},
    {"compile", 3000, add_compile},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"dw_ring", suite_cases, 0, NULL};
  return test_main(&suite);
}
