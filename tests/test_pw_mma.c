/*
 * test_pw_mma.c: the pointwise mma templates (templates/conv_pw_mma.{c,cuh})
 * on the CPU: what they refuse and which configs they reject; a CPU
 * emulation of the kernel (the persistent blocks' tiles, the weights and
 * the stage ring in shared memory with the rows past the last pixel left
 * stale (noise, then an earlier tile's), each warp's m-tiles, each lane's A
 * and B registers as the kernel loads them, mma.sync m16n8k32 through its
 * fragment layouts, the folded offset as the sums' start, the output
 * tile's rows) followed by the host's requantization of the same params,
 * checked exactly against reference_qconv for sampled valid configs and
 * the preferred one in four epilogues, every output written once and no
 * read outside shared memory; and NVRTC compiles for sm_90 and sm_80
 * without spills (CT_PW_COMPILES configs per shape and arch, default 2).
 * CT_PW_DRAWS: configs emulated per shape (default 16, the first the
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
#include "tests/kernel_check.h"
#include "tests/util.h"

/* A dense pointwise workload: C in, K out, every spatial axis in, stride
 * str. */
static ct_workload pshape(int d3, int n, int c, int k, int in, int str) {
  ct_workload w = dw_shape(d3, n, c, 1, in, 1, str, 0);
  w.k = k, w.groups = 1;
  return w;
}

static const template_desc *tpl_of(const ct_workload *w) {
  return template_find(w->op == CT_OP_CONV3D ? "conv3d_ndhwc_pw_mma" : "conv2d_nhwc_pw_mma");
}

START_TEST(refuses_what_it_cannot_run) {
  char why[TEMPLATE_WHY_MAX];
  ct_workload w = pshape(0, 1, 24, 144, 56, 1);
  ck_assert_msg(tpl_of(&w)->supports(&w, why), "%s", why);
  w = pshape(1, 2, 40, 16, 7, 2); /* 3D, strided */
  ck_assert_msg(tpl_of(&w)->supports(&w, why), "%s", why);
  w = pshape(0, 1, 24, 144, 56, 1);
  w.groups = 2;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "dense"));
  w = dw_shape(0, 1, 24, 1, 9, 3, 1, 1);
  w.groups = 1;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "1x1"));
  w = pshape(0, 1, 24, 144, 9, 1);
  w.pad_before[0] = 1;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "padding"));
  w = pshape(0, 1, 12, 144, 9, 1);
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "multiples of 8"));
  w = pshape(0, 1, 24, 20, 9, 1);
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "multiples of 8"));
  w = pshape(0, 1, 4096, 64, 3, 1);
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "2048"));
  w = pshape(0, 1, 24, 144, 9, 1);
  w.epi.weight_zero_point = 1;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "weight zero points"));
  w = pshape(0, 1, 24, 144, 9, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(tpl_of(&w)->supports(&w, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "nhwc"));
}
END_TEST

/* n_per_warp dividing n_tiles; sm_80 or later; no idle warps; tiles not
 * mostly padding; shared memory. */
START_TEST(rejects_configs_with_the_reason) {
  arch a90, a75;
  ck_assert_int_eq(arch_from_name("sm_90", &a90, NULL), CT_OK);
  ck_assert_int_eq(arch_from_name("sm_75", &a75, NULL), CT_OK);
  ct_workload w = pshape(0, 2, 32, 96, 28, 1);
  const template_desc *tpl = tpl_of(&w);
  space sp;
  space_init(&sp);
  ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
  config c;
  ck_assert(tpl->preferred(&w, &sp, &a90, &c));
  char why[TEMPLATE_WHY_MAX];
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a90, why), "%s", why);
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a75, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "sm_80"));
  ck_assert(template_set_choice(&sp, &c, "n_tiles", 4) &&
            template_set_choice(&sp, &c, "n_per_warp", 3));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "does not divide"));
  ck_assert(
      template_set_choice(&sp, &c, "n_per_warp", 2) && template_set_choice(&sp, &c, "m_tiles", 2) &&
      template_set_choice(&sp, &c, "warps_m", 2) && template_set_choice(&sp, &c, "m_unroll", 2));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "warps idle"));
  ck_assert(template_set_choice(&sp, &c, "m_unroll", 1) &&
            template_set_choice(&sp, &c, "n_tiles", 16) &&
            template_set_choice(&sp, &c, "n_per_warp", 4) &&
            template_set_choice(&sp, &c, "blocks_per_sm", 2));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "registers"));
  ck_assert(template_set_choice(&sp, &c, "blocks_per_sm", 1));
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a90, why), "%s", why); /* 128 channels for 96 */
  space_free(&sp);
  w = pshape(0, 2, 32, 24, 28, 1); /* 128 channels for 24: mostly padding */
  space_init(&sp);
  ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
  ck_assert(tpl->preferred(&w, &sp, &a90, &c));
  ck_assert(template_set_choice(&sp, &c, "n_tiles", 16) &&
            template_set_choice(&sp, &c, "n_per_warp", 4));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "padding"));
  space_free(&sp);
  w = pshape(0, 1, 2048, 512, 14, 1); /* rows of 2080 bytes: 256 pixels, 4 stages */
  space_init(&sp);
  ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
  ck_assert(tpl->preferred(&w, &sp, &a90, &c));
  ck_assert(template_set_choice(&sp, &c, "m_tiles", 16) &&
            template_set_choice(&sp, &c, "stages", 4));
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "shared memory"));
  space_free(&sp);
}
END_TEST

static ct_workload case_shape(int i) {
  switch (i) {
  case 0:
    return pshape(0, 2, 24, 144, 9, 1); /* MobileNetV2's expand: C 24, rows of 32 */
  case 1:
    return pshape(0, 3, 16, 96, 5, 1); /* 75 pixels: a partial last tile */
  case 2:
    return pshape(0, 1, 96, 24, 10, 1); /* a project: K 24, rows of 96 */
  case 3:
    return pshape(0, 1, 144, 40, 11, 2); /* stride 2, K 40 */
  case 4:
    return pshape(1, 2, 32, 64, 5, 1); /* 3D */
  case 5:
    return pshape(1, 1, 40, 16, 7, 2); /* 3D stride 2, C 40 (8-byte pieces) */
  case 6:
    return pshape(0, 1, 256, 64, 6, 1); /* 8 k-steps: B from shared memory */
  case 7:
    return pshape(0, 2, 64, 384, 5, 1); /* 2 k-steps: rows of 96 */
  default:
    return pshape(0, 1, 8, 8, 3, 1); /* 9 pixels, one n-tile */
  }
}
#define N_CASES 9

/* The kernel on the CPU, macro for macro (conv_pw_mma.cuh), as on 132 SMs:
 * x the data bytes, wt the weights, params the folded block, res the
 * residual bytes; out in w's output type, writes counted, *bad the shared
 * reads past a buffer. */
static void emulate(const ct_workload *w, const space *s, const config *cfg, const unsigned char *x,
                    const signed char *wt, const int32_t *params, const unsigned char *res,
                    void *out, int *writes, long *bad, rng *noise) {
  geom3 g;
  workload_geom(w, &g);
  const long MT = space_get(s, cfg, "m_tiles", 8), NT = space_get(s, cfg, "n_tiles", 4),
             NPW = space_get(s, cfg, "n_per_warp", 2), WM = space_get(s, cfg, "warps_m", 2),
             MU = space_get(s, cfg, "m_unroll", 1), ST = space_get(s, cfg, "stages", 3),
             MINB = space_get(s, cfg, "blocks_per_sm", 2);
  const long C = w->c, K = w->k, CPAD = (C + 31) / 32 * 32, KS = CPAD / 32;
  const long RS = CPAD + 16, BM = 16 * MT, BN = 8 * NT;
  const long M = g.n * g.out[0] * g.out[1] * g.out[2], TILES = (M + BM - 1) / BM;
  const long GY = (K + BN - 1) / BN;
  long GX = (132 * MINB + GY - 1) / GY;
  if (GX > TILES) GX = TILES;
  const int u8 = w->data_type == CT_DTYPE_UINT8, kp = (int)((K + 3) / 4 * 4);
  const int has_off = w->epi.bias || w->epi.data_zero_point;
  unsigned char *sb = malloc(BN * RS), *sa = malloc(ST * BM * RS);
  for (long by = 0; by < GY; by++)
    for (long bx = 0; bx < GX; bx++) {
      const long n0 = by * BN;
      /* the weights: zero past C and K */
      for (long n = 0; n < BN; n++)
        for (long c = 0; c < RS; c++)
          sb[n * RS + c] = n0 + n < K && c < C ? (unsigned char)wt[(n0 + n) * C + c] : 0;
      /* the stages: whatever shared memory held */
      for (long i = 0; i < ST * BM * RS; i++) sa[i] = (unsigned char)rng_next(noise);
      const long nt = bx < TILES ? (TILES - 1 - bx) / GX + 1 : 0;
      for (long i = 0; i < nt; i++) {
        const long m0 = (bx + i * GX) * BM;
        unsigned char *stage = sa + (i % ST) * BM * RS;
        /* tile i's rows (those past the last pixel keep what the stage held) */
        for (long r = 0; r < BM; r++) {
          const long m = m0 + r;
          if (m >= M) continue;
          const long ow = m % g.out[2], oh = m / g.out[2] % g.out[1],
                     od = m / (g.out[2] * g.out[1]) % g.out[0],
                     n = m / (g.out[2] * g.out[1] * g.out[0]);
          const long p =
              ((n * g.in[0] + od * g.str[0]) * g.in[1] + oh * g.str[1]) * g.in[2] + ow * g.str[2];
          memcpy(stage + r * RS, x + p * C, C);
        }
        for (long warp = 0; warp < NT / NPW * WM; warp++) {
          const long wn = warp % (NT / NPW), wm = warp / (NT / NPW), kw = n0 + wn * NPW * 8;
          if (kw >= K) continue;
          for (long mb = wm * MU; mb < MT; mb += WM * MU)
            for (long mt = mb; mt < mb + MU; mt++)
              for (long j = 0; j < NPW; j++) {
                const long kn = kw + 8 * j; /* the n-tile's first output channel */
                if (kn >= K) continue;
                int32_t d[16][8];
                for (int r = 0; r < 16; r++)
                  for (int col = 0; col < 8; col++)
                    d[r][col] = has_off ? params[CTQ_HEADER + CTQ_OFF * kp + kn + col] : 0;
                for (long st = 0; st < KS; st++) {
                  int a[16][32], b[32][8];
                  for (int lane = 0; lane < 32; lane++) {
                    const int lg = lane / 4, q = lane % 4;
                    /* ldmatrix: a0..a3 are rows lg, lg + 8 at bytes 4q and
                     * 16 + 4q of the k-step; b0, b1 weight row lg's */
                    for (int h = 0; h < 4; h++) {
                      const long r = mt * 16 + lg + 8 * (h % 2), k0 = 4 * q + 16 * (h / 2);
                      const long off = r * RS + 32 * st + k0;
                      if (off < 0 || off + 4 > BM * RS) {
                        (*bad)++;
                        continue;
                      }
                      for (int v = 0; v < 4; v++)
                        a[lg + 8 * (h % 2)][k0 + v] =
                            u8 ? (int)stage[off + v] : (int)(signed char)stage[off + v];
                    }
                    for (int h = 0; h < 2; h++) {
                      const long k0 = 4 * q + 16 * h, boff = (kn - n0 + lg) * RS + 32 * st + k0;
                      if (boff < 0 || boff + 4 > BN * RS) {
                        (*bad)++;
                        continue;
                      }
                      for (int v = 0; v < 4; v++) b[k0 + v][lg] = (signed char)sb[boff + v];
                    }
                  }
                  for (int r = 0; r < 16; r++)
                    for (int col = 0; col < 8; col++)
                      for (int k = 0; k < 32; k++) d[r][col] += a[r][k] * b[k][col];
                }
                for (int r = 0; r < 16; r++)
                  for (int col = 0; col < 8; col++) {
                    const long m = m0 + mt * 16 + r, k = kn + col;
                    if (m >= M) continue; /* never copied out */
                    emulated_store(w, params, m * K + k, k, d[r][col], res, out, writes);
                  }
              }
        }
      }
    }
  free(sb);
  free(sa);
}

static const tpl_family family = {case_shape, dw_epilogue, tpl_of, emulate,
                                  "shared reads past a buffer"};

/* The persistent grid on a GPU of known SMs (an H200's 132): at most
 * blocks_per_sm blocks an SM, and on sm_90 (launched early, PDL) shared
 * memory that admits no more than that many an SM, whatever the tiles'
 * own; on sm_80 (no early launch) the tiles' own. */
START_TEST(persistent_grid_lands_blocks_per_sm_an_sm) {
  arch a90, a80;
  ck_assert_int_eq(arch_from_name("sm_90", &a90, NULL), CT_OK);
  ck_assert_int_eq(arch_from_name("sm_80", &a80, NULL), CT_OK);
  a90.sm_count = 132, a80.sm_count = 108;
  const ct_workload ws[] = {pshape(0, 32, 16, 96, 112, 1), pshape(0, 32, 24, 144, 56, 1),
                            pshape(1, 2, 32, 40, 16, 1), pshape(0, 1, 320, 1280, 7, 1)};
  int pinned = 0;
  rng r;
  rng_seed(&r, 0x5eed);
  for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
    const ct_workload *w = &ws[i];
    const template_desc *tpl = tpl_of(w);
    space sp;
    space_init(&sp);
    ck_assert_int_eq(tpl->space(w, &sp, NULL), CT_OK);
    for (int draw = 0; draw < 64; draw++) {
      config c;
      if (draw == 0)
        ck_assert(tpl->preferred(w, &sp, &a90, &c));
      else
        ck_assert_int_eq(template_sample(tpl, w, &sp, &a90, &r, 1000000, &c, NULL), CT_OK);
      for (int ai = 0; ai < 2; ai++) {
        const arch *a = ai ? &a80 : &a90;
        if (!tpl->valid(w, &sp, &c, a, NULL)) continue;
        instance inst;
        ct_err err = {0};
        ck_assert_msg(instance_make(tpl, w, &sp, &c, a, &inst, &err) == CT_OK, "%s", err.msg);
        const long own = instance_macro(&inst, "CT_SMEM_BYTES"),
                   minb = instance_macro(&inst, "BLOCKS_PER_SM");
        ck_assert(own > 0 && minb > 0);
        const long blocks = (long)inst.grid[0] * inst.grid[1] * inst.grid[2];
        ck_assert_int_ge(blocks, 1);
        if (inst.grid[1] <= a->sm_count * minb)
          ck_assert_msg(blocks <= a->sm_count * minb, "%ld blocks for %ld SMs x %ld", blocks,
                        (long)a->sm_count, minb);
        ck_assert_int_ge((long)inst.smem_bytes, own);
        ck_assert_int_le(minb * ((long)inst.smem_bytes + 1024), a->smem_per_sm_bytes);
        if (ai) {
          ck_assert_int_eq((long)inst.smem_bytes, own);
        } else if ((minb + 1) * (long)inst.block[0] <= 2048 && blocks <= a->sm_count * minb) {
          ck_assert_msg((minb + 1) * ((long)inst.smem_bytes + 1024) > a->smem_per_sm_bytes,
                        "%ld bytes admit %ld blocks an SM", (long)inst.smem_bytes, minb + 1);
          pinned += (long)inst.smem_bytes > own;
        }
      }
    }
    space_free(&sp);
  }
  ck_assert_int_gt(pinned, 0); /* the padding was exercised */
}
END_TEST

/* Sampled valid configs (and the preferred one) of each shape, emulated in
 * each epilogue against reference_qconv. */
START_TEST(emulated_kernel_matches_reference_qconv) {
  const char *env = getenv("CT_PW_DRAWS");
  emulations_match(&family, _i, env ? atoi(env) : test_quick() ? 4 : 16, 71);
}
END_TEST

/* Each shape: its preferred config (then sampled ones) compile for sm_90
 * and sm_80, the epilogue rotating, without spills. */
START_TEST(configs_compile_for_sm90_and_sm80) {
  const char *env = getenv("CT_PW_COMPILES");
  configs_compile(&family, _i, env ? atoi(env) : 2, 710, 2, 1, NULL);
}
END_TEST

static void add_cpu(TCase *tc) {
  tcase_add_test(tc, refuses_what_it_cannot_run);
  tcase_add_test(tc, rejects_configs_with_the_reason);
  tcase_add_test(tc, persistent_grid_lands_blocks_per_sm_an_sm);
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
  static const test_suite suite = {"pw_mma", suite_cases, 0, NULL};
  return test_main(&suite);
}
