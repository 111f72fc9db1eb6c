/*
 * test_grouped_packed.c: conv2d_nchw4c_grouped and conv3d_ncdhw4c_grouped
 * on the CPU. What it refuses, with the reason; the kernel's group
 * arithmetic emulated in C from the instance's own -D values (window base
 * J(f), NWIN, the staged words JB, the funnel-shifted aligned weights and
 * masks) against the grouped convolution's definition, for every output
 * word of depthwise (multipliers 1, 2, 3), channels per group 2, 3, 4, 6,
 * 8 and 32 layers; and the preferred and random valid configs of those
 * layers, each epilogue in turn, compiled by NVRTC for sm_90 and sm_80
 * (no GPU needed; a few seconds a compile, about 2 minutes in all).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pack.h"
#include "core/rng.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"
#include "tests/kernel_check.h"
#include "tests/util.h"

typedef struct shape {
  const char *name;
  int op, c, k, g, in, ker, str, pad;
} shape;

/* Depthwise (MobileNetV2, EfficientNet, CSN), multipliers 2 and 3,
 * channels per group 2, 3, 6, 8 and ResNeXt's 4 and 32, odd sizes. */
static const shape shapes[] = {
    {"dw32_112", 2, 32, 32, 32, 112, 3, 1, 1},     {"dw96_s2", 2, 96, 96, 96, 112, 3, 2, 1},
    {"dw144_k5s2", 2, 144, 144, 144, 56, 5, 2, 2}, {"dw960_7", 2, 960, 960, 960, 7, 3, 1, 1},
    {"dw_m2", 2, 16, 32, 16, 13, 3, 1, 1},         {"dw_m3", 2, 8, 24, 8, 9, 3, 2, 0},
    {"cpg2", 2, 16, 16, 8, 11, 3, 1, 1},           {"cpg3", 2, 12, 12, 4, 10, 3, 1, 1},
    {"cpg6_k2", 2, 24, 8, 4, 9, 5, 2, 2},          {"cpg8", 2, 64, 32, 8, 15, 3, 1, 1},
    {"g3x3_128", 2, 128, 128, 32, 56, 3, 1, 1},    {"g3x3_1024", 2, 1024, 1024, 32, 7, 3, 1, 1},
    {"dw3d_64", 3, 64, 64, 64, 12, 3, 1, 1},       {"g3d_cpg2", 3, 8, 16, 4, 7, 3, 2, 1},
};
#define N_SHAPES (int)(sizeof shapes / sizeof shapes[0])

static ct_workload workload(const shape *s) {
  ct_workload w;
  workload_init(&w, s->op == 3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NCHW4C;
  w.n = 2, w.c = s->c, w.k = s->k, w.groups = s->g;
  for (int d = 0; d < s->op; d++) {
    w.in[d] = d == 0 && s->op == 3 ? 6 : s->in;
    w.kernel[d] = s->ker, w.stride[d] = s->str;
    w.pad_before[d] = w.pad_after[d] = s->pad;
  }
  return w;
}

static const template_desc *tpl_of(const ct_workload *w) {
  return template_find(w->op == CT_OP_CONV3D ? "conv3d_ncdhw4c_grouped" : "conv2d_nchw4c_grouped");
}

START_TEST(what_it_refuses_says_why) {
  const template_desc *t2 = template_find("conv2d_nchw4c_grouped");
  ck_assert_ptr_nonnull(t2);
  ck_assert_ptr_nonnull(template_find("conv3d_ncdhw4c_grouped"));
  ct_workload w = workload(&shapes[0]);
  char why[TEMPLATE_WHY_MAX];
  ck_assert(t2->supports(&w, why));
  w.groups = 1;
  ck_assert(!t2->supports(&w, why));
  ck_assert_ptr_nonnull(strstr(why, "groups > 1 only"));
  w.groups = 32;
  w.layout = CT_LAYOUT_NCHW;
  ck_assert(!t2->supports(&w, why));
  ck_assert_ptr_nonnull(strstr(why, "nchw4c"));
  w.layout = CT_LAYOUT_NCHW4C;
  w.epi.d2s_block = 2;
  ck_assert(!t2->supports(&w, why));
  ck_assert_ptr_nonnull(strstr(why, "depth_to_space"));
  w = workload(&shapes[0]);
  ck_assert(!template_find("conv3d_ncdhw4c_grouped")->supports(&w, why));
  ck_assert_ptr_nonnull(strstr(why, "conv3d"));
  /* the plain layout reaches it packed (C and K multiples of 4) */
  w.layout = CT_LAYOUT_NCHW;
  ct_workload pw;
  ck_assert(workload_for_layout(&w, CT_LAYOUT_NCHW4C, &pw));
  ck_assert(t2->supports(&pw, why));
}
END_TEST

/* The kernel's gp_jbase, gp_lanes and gp_align (conv_grouped_packed.cuh),
 * from the instance's values. */
typedef struct gp {
  long c4, k4, cpg, kpg, cw, nwin, jb, bf;
} gp;
static long jbase(const gp *g, long f) {
  return (4 * f / g->kpg) * g->cpg / 4;
}
static uint32_t lanes(const gp *g, long q) {
  if (q < 0 || q >= g->cw) return 0;
  long n = g->cpg - 4 * q;
  return n >= 4 ? 0xffffffffu : (1u << (8 * n)) - 1u;
}
/* packed word q of channel k's weights at tap (wp: the packed bytes), or
 * the mask (wp NULL) */
static uint32_t packed(const gp *g, const int8_t *wp, long kvol, long k, long q, long tap) {
  uint32_t m = lanes(g, q);
  if (!m) return 0;
  if (!wp) return m & 0x01010101u;
  uint32_t v;
  memcpy(&v, wp + ((((k / 4) * g->cw + q) * kvol + tap) * 4 + k % 4) * 4, 4);
  return v & m;
}
static uint32_t align(const gp *g, const int8_t *wp, long kvol, long f, int l, long t, long tap) {
  long grp = (4 * f + l) / g->kpg;
  long delta = grp * g->cpg - 4 * jbase(g, f);
  long q = t - delta / 4, dr = delta % 4;
  uint32_t hi = packed(g, wp, kvol, 4 * f + l, q, tap),
           lo = packed(g, wp, kvol, 4 * f + l, q - 1, tap);
  return dr ? (hi << (8 * dr)) | (lo >> (32 - 8 * dr)) : hi;
}
static int dp4a(uint32_t a, uint32_t b) {
  int s = 0;
  for (int i = 0; i < 4; i++) s += (int8_t)(a >> (8 * i)) * (int8_t)(b >> (8 * i));
  return s;
}

/* For every output channel and tap: the window words against the aligned
 * weights give the grouped dot product of one pixel's channels; the masks
 * their sum; every word a block reads lies within its JB staged words. */
START_TEST(aligned_weights_give_the_grouped_dot_product) {
  arch a;
  arch_from_name("sm_90", &a, NULL);
  rng r;
  rng_seed(&r, 35);
  for (int i = 0; i < N_SHAPES; i++) {
    ct_workload w = workload(&shapes[i]);
    const template_desc *tpl = tpl_of(&w);
    space sp;
    ct_err err = {0};
    ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s: %s", shapes[i].name, err.msg);
    long kvol = 1;
    for (int d = 0; d < shapes[i].op; d++) kvol *= shapes[i].ker;
    const long cpg = w.c / w.groups;
    int8_t *plain = malloc((size_t)w.k * cpg * kvol), *wp = malloc(workload_weight_elems(&w));
    int8_t *x = malloc((size_t)w.c);
    for (long e = 0; e < w.k * cpg * kvol; e++) plain[e] = (int8_t)(rng_next(&r) & 0xff);
    for (long e = 0; e < w.c; e++) x[e] = (int8_t)(rng_next(&r) & 0xff);
    pack_oi4o4i(plain, wp, w.k, cpg, kvol);
    for (int trial = 0; trial < 4; trial++) {
      config c;
      if (trial == 0)
        ck_assert(tpl->preferred(&w, &sp, &a, &c));
      else
        ck_assert_int_eq(template_sample(tpl, &w, &sp, &a, &r, 100000, &c, &err), CT_OK);
      instance inst;
      ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
      gp g = {w.c / 4,
              w.k / 4,
              instance_macro(&inst, "CT_CPG"),
              instance_macro(&inst, "CT_KPG"),
              instance_macro(&inst, "CT_CW"),
              instance_macro(&inst, "NWIN"),
              instance_macro(&inst, "JB"),
              instance_macro(&inst, "BLOCK_F")};
      ck_assert_int_eq(g.cpg, cpg);
      ck_assert_int_eq(g.kpg * w.groups, w.k);
      for (long f = 0; f < g.k4; f++) {
        const long j0 = jbase(&g, f / g.bf * g.bf);
        for (int l = 0; l < 4; l++) {
          const long k = 4 * f + l, grp = k / g.kpg;
          for (long tap = 0; tap < kvol; tap++) {
            int got = 0, want = 0, xsum = 0, xwant = 0;
            for (long t = 0; t < g.nwin; t++) {
              long j = jbase(&g, f) + t;
              if (j > g.c4 - 1) j = g.c4 - 1;
              ck_assert_msg(j - j0 >= 0 && j - j0 < g.jb, "%s: word %ld of block at %ld, JB %ld",
                            shapes[i].name, j, j0, g.jb);
              uint32_t word;
              memcpy(&word, x + 4 * j, 4);
              got += dp4a(word, align(&g, wp, kvol, f, l, t, tap));
              if (tap == 0) xsum += dp4a(word, align(&g, NULL, kvol, f, l, t, 0));
            }
            for (long ci = 0; ci < cpg; ci++) {
              want += x[grp * cpg + ci] * plain[(k * cpg + ci) * kvol + tap];
              xwant += x[grp * cpg + ci];
            }
            ck_assert_msg(got == want, "%s: k %ld tap %ld: %d, want %d", shapes[i].name, k, tap,
                          got, want);
            if (tap == 0)
              ck_assert_msg(xsum == xwant, "%s: k %ld: window sum %d, want %d", shapes[i].name, k,
                            xsum, xwant);
          }
        }
      }
    }
    free(plain);
    free(wp);
    free(x);
    space_free(&sp);
  }
}
END_TEST

/* The i-th epilogue of w: raw; uint8 data with zero points, bias, int8
 * out; per-channel uint8 out with a residual; onnx rounding. */
static ct_workload variant(const ct_workload *w, int i) {
  ct_workload v = *w;
  ct_epilogue *e = &v.epi;
  if (i % 4 == 1) {
    v.data_type = CT_DTYPE_UINT8;
    v.out_type = CT_DTYPE_INT8;
    e->data_zero_point = e->weight_zero_point = e->bias = 1;
  } else if (i % 4 == 2) {
    v.out_type = CT_DTYPE_UINT8;
    e->bias = e->residual = 1;
    e->scale = CT_SCALE_CHANNEL;
  } else if (i % 4 == 3) {
    v.out_type = CT_DTYPE_INT8;
    e->bias = 1;
    e->rounding = CT_ROUND_ONNX;
  }
  return v;
}

/* The preferred config and a random one of every shape, the epilogues in
 * turn, compiled for sm_90 and sm_80. CT_GP_CONFIGS=n: n random more each. */
START_TEST(preferred_and_random_configs_compile) {
  const char *more = getenv("CT_GP_CONFIGS");
  const int n_random = more ? atoi(more) : 1;
  static const char *const archs[] = {"sm_90", "sm_80"};
  rng r;
  rng_seed(&r, 3535);
  int compiled = 0;
  for (int i = 0; i < N_SHAPES; i++)
    for (int ai = 0; ai < 2; ai++) {
      arch a;
      arch_from_name(archs[ai], &a, NULL);
      for (int trial = 0; trial <= n_random; trial++) {
        const ct_workload base = workload(&shapes[i]);
        const ct_workload w = variant(&base, i + trial + ai);
        const template_desc *tpl = tpl_of(&w);
        space sp;
        ct_err err = {0};
        ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
        config c;
        if (trial == 0)
          ck_assert(tpl->preferred(&w, &sp, &a, &c));
        else
          ck_assert_int_eq(template_sample(tpl, &w, &sp, &a, &r, 100000, &c, &err), CT_OK);
        instance inst;
        ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
        cubin cb;
        char text[512];
        space_config_str(&sp, &c, text, sizeof text);
        ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK && cb.size > 0,
                      "%s %s %s: %s\n%s", shapes[i].name, archs[ai], text, err.msg,
                      cb.log ? cb.log : "");
        cubin_free(&cb);
        compiled++;
        space_free(&sp);
      }
    }
  printf("grouped_packed: %d configs compiled\n", compiled);
}
END_TEST

static void add_host(TCase *tc) {
  tcase_add_test(tc, what_it_refuses_says_why);
  tcase_add_test(tc, aligned_weights_give_the_grouped_dot_product);
}

static void add_compile(TCase *tc) {
  tcase_add_test(tc, preferred_and_random_configs_compile);
}

static const test_case suite_cases[] = {
    {"host", 60, add_host},
    {"compile", 1200, add_compile},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"grouped_packed", suite_cases, 0, NULL};
  return test_main(&suite);
}
