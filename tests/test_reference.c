/*
 * test_reference.c: the CPU reference convolution (core/reference.c).
 *
 * The reference is checked against a naive direct formula written here: for
 * every output element, the sum over c, kd, kh, kw with an explicit bounds
 * test of the input coordinate, and every tensor indexed by its layout's
 * formula written out here (NCHW / OIHW, NCHW4c / OIHW4o4i and NHWC / OHWI),
 * never by pack.c or geom3. Equality is exact. Named awkward shapes and ~290
 * random small ones (and as many grouped and depthwise ones) run in all six combinations of conv2d
 * / conv3d x NCHW / NCHW4c / NHWC (NHWC with the odd channel counts NCHW4c cannot take), with int8
 * inputs over the full [-128, 127] range from core's fixed-seed RNG and the output poisoned, so
 * every element must be written. Rejected workloads and the int32 accumulator extreme have their
 * own tests. The named shapes run once more requantized with onnx rounding (8-bit output, bias,
 * per-tensor and per-channel scales, a residual in both orders), against ONNX Runtime's formula
 * written out here. The reference's split over threads gives the sums of one thread. A fused
 * pointwise convolution (pre) equals its two convolutions run one after the other, and, on small
 * cases, the composition written out here. Element loops call Check only on a mismatch (each
 * passing ck_assert writes a log).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quant.cuh"
#include "core/quant.h"
#include "core/reference.h"
#include "core/rng.h"
#include "core/workload.h"
#include "tests/util.h"

#define POISON ((int32_t)0x7EADBEEF)

/* ---- the naive direct convolution ------------------------------------------ */

/* Sizes in 3D: conv2d is D = 1 with a 1-deep kernel. Written out here rather
 * than taken from workload_geom, so the test does not trust the code it checks. */
typedef struct shape {
  int64_t n, c, k, d, h, w, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow;
  int64_t g, cpg; /* groups, and input channels per group (the weights' C) */
  ct_layout layout;
} shape;

static int64_t out_size(int in, int pb, int pa, int dil, int ker, int str) {
  return ((int64_t)in + pb + pa - (int64_t)dil * (ker - 1) - 1) / str + 1;
}

static shape shape_of(const ct_workload *w) {
  shape s = {.n = w->n, .c = w->c, .k = w->k, .layout = w->layout};
  s.g = w->groups;
  s.cpg = w->c / w->groups;
  s.d = s.kd = s.sd = s.dd = s.od = 1;
  s.pd = 0;
  int o = 0; /* index of H in w's arrays */
  if (w->op == CT_OP_CONV3D) {
    s.d = w->in[0];
    s.kd = w->kernel[0];
    s.sd = w->stride[0];
    s.pd = w->pad_before[0];
    s.dd = w->dilation[0];
    s.od = out_size(w->in[0], w->pad_before[0], w->pad_after[0], w->dilation[0], w->kernel[0],
                    w->stride[0]);
    o = 1;
  }
  s.h = w->in[o];
  s.w = w->in[o + 1];
  s.kh = w->kernel[o];
  s.kw = w->kernel[o + 1];
  s.sh = w->stride[o];
  s.sw = w->stride[o + 1];
  s.ph = w->pad_before[o];
  s.pw = w->pad_before[o + 1];
  s.dh = w->dilation[o];
  s.dw = w->dilation[o + 1];
  s.oh = out_size(w->in[o], w->pad_before[o], w->pad_after[o], w->dilation[o], w->kernel[o],
                  w->stride[o]);
  s.ow = out_size(w->in[o + 1], w->pad_before[o + 1], w->pad_after[o + 1], w->dilation[o + 1],
                  w->kernel[o + 1], w->stride[o + 1]);
  return s;
}

/* Data NCDHW: [n][c][d][h][w]; NCDHW4c: [n][c/4][d][h][w][c%4]; NDHWC:
 * [n][d][h][w][c]. */
static int64_t data_at(const shape *s, int64_t n, int64_t c, int64_t z, int64_t y, int64_t x) {
  if (s->layout == CT_LAYOUT_NHWC) return (((n * s->d + z) * s->h + y) * s->w + x) * s->c + c;
  if (s->layout == CT_LAYOUT_NCHW) return (((n * s->c + c) * s->d + z) * s->h + y) * s->w + x;
  return ((((n * (s->c / 4) + c / 4) * s->d + z) * s->h + y) * s->w + x) * 4 + c % 4;
}

/* Weights OIDHW: [k][c][kd][kh][kw]; OIDHW4o4i: [k/4][c/4][kd][kh][kw][k%4][c%4];
 * ODHWI: [k][kd][kh][kw][c]; c counting a group's channels (cpg; packed:
 * rounded up to 4). */
static int64_t weight_at(const shape *s, int64_t k, int64_t c, int64_t z, int64_t y, int64_t x) {
  const int64_t ci = s->cpg, c4 = (ci + 3) / 4;
  if (s->layout == CT_LAYOUT_NHWC) return (((k * s->kd + z) * s->kh + y) * s->kw + x) * ci + c;
  if (s->layout == CT_LAYOUT_NCHW) return (((k * ci + c) * s->kd + z) * s->kh + y) * s->kw + x;
  return (((((k / 4) * c4 + c / 4) * s->kd + z) * s->kh + y) * s->kw + x) * 16 + (k % 4) * 4 +
         c % 4;
}

/* Elements of the weights: k x cpg x kernel (packed: k and cpg rounded up to 4). */
static int64_t weight_elems(const shape *s) {
  const int64_t kv = s->kd * s->kh * s->kw;
  if (s->layout == CT_LAYOUT_NCHW4C) return (s->k + 3) / 4 * 4 * ((s->cpg + 3) / 4 * 4) * kv;
  return s->k * s->cpg * kv;
}

/* Output NKDHW: [n][k][od][oh][ow]; NKDHW4k: [n][k/4][od][oh][ow][k%4];
 * NDHWK: [n][od][oh][ow][k]. */
static int64_t out_at(const shape *s, int64_t n, int64_t k, int64_t z, int64_t y, int64_t x) {
  if (s->layout == CT_LAYOUT_NHWC) return (((n * s->od + z) * s->oh + y) * s->ow + x) * s->k + k;
  if (s->layout == CT_LAYOUT_NCHW) return (((n * s->k + k) * s->od + z) * s->oh + y) * s->ow + x;
  return ((((n * (s->k / 4) + k / 4) * s->od + z) * s->oh + y) * s->ow + x) * 4 + k % 4;
}

/* One output element, straight from the definition of convolution. */
static int64_t naive_at(const shape *s, const int8_t *data, const int8_t *weights, int64_t n,
                        int64_t k, int64_t oz, int64_t oy, int64_t ox) {
  int64_t acc = 0;
  const int64_t c0 = k / (s->k / s->g) * s->cpg; /* k's group's first channel */
  for (int64_t c = 0; c < s->cpg; c++)
    for (int64_t kz = 0; kz < s->kd; kz++)
      for (int64_t ky = 0; ky < s->kh; ky++)
        for (int64_t kx = 0; kx < s->kw; kx++) {
          int64_t z = oz * s->sd - s->pd + kz * s->dd;
          int64_t y = oy * s->sh - s->ph + ky * s->dh;
          int64_t x = ox * s->sw - s->pw + kx * s->dw;
          if (z < 0 || z >= s->d || y < 0 || y >= s->h || x < 0 || x >= s->w) continue;
          acc += (int64_t)data[data_at(s, n, c0 + c, z, y, x)] *
                 weights[weight_at(s, k, c, kz, ky, kx)];
        }
  return acc;
}

static const char *layout_name(ct_layout l) {
  return l == CT_LAYOUT_NCHW4C ? "nchw4c" : l == CT_LAYOUT_NHWC ? "nhwc" : "nchw";
}

static const ct_layout layouts[3] = {CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C, CT_LAYOUT_NHWC};

/* Run reference_conv on w with random inputs from seed and compare every
 * output element with the naive formula. what names the case in messages. */
static void check_against_naive(const ct_workload *w, uint32_t seed, const char *what) {
  ct_err err;
  err_clear(&err);
  ck_assert_msg(workload_validate(w, &err) == CT_OK, "%s: workload rejected: %s", what, err.msg);
  shape s = shape_of(w);
  int64_t n_data = s.n * s.c * s.d * s.h * s.w, n_weights = weight_elems(&s);
  int64_t n_out = s.n * s.k * s.od * s.oh * s.ow;
  ck_assert_int_eq(workload_data_elems(w), n_data);
  ck_assert_int_eq(workload_weight_elems(w), n_weights);
  ck_assert_int_eq(workload_out_elems(w), n_out);

  int8_t *data = xmalloc((size_t)n_data), *weights = xmalloc((size_t)n_weights);
  int32_t *out = xmalloc((size_t)n_out * sizeof *out);
  rng gen;
  rng_seed(&gen, seed ? seed : 1);
  for (int64_t i = 0; i < n_data; i++) data[i] = (int8_t)((int)(rng_next(&gen) & 0xff) - 128);
  for (int64_t i = 0; i < n_weights; i++) weights[i] = (int8_t)((int)(rng_next(&gen) & 0xff) - 128);
  for (int64_t i = 0; i < n_out; i++) out[i] = POISON;

  ct_status st = reference_conv(w, data, weights, out, &err);
  ck_assert_msg(st == CT_OK, "%s: reference_conv returned %s: %s", what, ct_status_name(st),
                err.msg);
  for (int64_t n = 0; n < s.n; n++)
    for (int64_t k = 0; k < s.k; k++)
      for (int64_t z = 0; z < s.od; z++)
        for (int64_t y = 0; y < s.oh; y++)
          for (int64_t x = 0; x < s.ow; x++) {
            int64_t want = naive_at(&s, data, weights, n, k, z, y, x);
            int32_t got = out[out_at(&s, n, k, z, y, x)];
            if (got != want)
              ck_abort_msg("%s: out[n %lld][k %lld][%lld][%lld][%lld] is %d, want %lld", what,
                           (long long)n, (long long)k, (long long)z, (long long)y, (long long)x,
                           got, (long long)want);
          }
  free(data);
  free(weights);
  free(out);
}

/* ---- named shapes ---------------------------------------------------------- */

/* Spatial arrays outermost first, as in ct_workload. Channels are rounded up
 * to 4 for the packed layout. */
typedef struct conv_case {
  const char *name;
  ct_op op;
  int n, c, k;
  int in[3], ker[3], str[3], pb[3], pa[3], dil[3];
} conv_case;

#define C2 CT_OP_CONV2D
#define C3 CT_OP_CONV3D

/* One row per case, so that the cases read as a table. */
/* clang-format off */
static const conv_case cases[] = {
  /* name                    op  n  c  k  in         kernel   stride   pad bef. pad aft. dilation */
  {"2d 1x1 batch 3",         C2, 3, 5, 7, {6,5},     {1,1},   {1,1},   {0,0},   {0,0},   {1,1}},
  {"2d 1x1 stride 2",        C2, 2, 8, 4, {7,9},     {1,1},   {2,2},   {0,0},   {0,0},   {1,1}},
  {"2d 1x1 on 1x1",          C2, 2, 3, 5, {1,1},     {1,1},   {1,1},   {0,0},   {0,0},   {1,1}},
  {"2d 3x3 pad 1",           C2, 2, 6, 5, {9,11},    {3,3},   {1,1},   {1,1},   {1,1},   {1,1}},
  {"2d 3x3 s2 asym pad",     C2, 2, 3, 4, {10,9},    {3,3},   {2,2},   {1,0},   {2,1},   {1,1}},
  {"2d 3x3 s3",              C2, 1, 4, 4, {13,11},   {3,3},   {3,3},   {1,1},   {1,1},   {1,1}},
  {"2d 3x3 dil 2",           C2, 2, 5, 3, {11,12},   {3,3},   {1,1},   {2,2},   {2,2},   {2,2}},
  {"2d 3x3 s2 dil 2",        C2, 2, 4, 4, {12,13},   {3,3},   {2,2},   {1,2},   {2,0},   {2,2}},
  {"2d 7x7 s2 pad 3 (stem)", C2, 2, 3, 8, {15,17},   {7,7},   {2,2},   {3,3},   {3,3},   {1,1}},
  {"2d 7x7 unpadded",        C2, 1, 2, 3, {7,8},     {7,7},   {1,1},   {0,0},   {0,0},   {1,1}},
  {"2d 7x7 on 5x4 padded",   C2, 2, 2, 3, {5,4},     {7,7},   {1,1},   {3,3},   {3,3},   {1,1}},
  {"2d 1x7",                 C2, 2, 4, 5, {9,13},    {1,7},   {1,1},   {0,3},   {0,3},   {1,1}},
  {"2d 7x1",                 C2, 2, 5, 4, {13,9},    {7,1},   {1,1},   {3,0},   {3,0},   {1,1}},
  {"2d s2x1",                C2, 2, 4, 3, {10,11},   {3,3},   {2,1},   {1,1},   {1,1},   {1,1}},
  {"2d s1x3 dil 1x2",        C2, 2, 3, 4, {8,17},    {3,3},   {1,3},   {1,2},   {1,2},   {1,2}},
  {"2d 5x3 s3x2 dil2x1 asym",C2, 3, 5, 6, {17,14},   {5,3},   {3,2},   {3,0},   {1,2},   {2,1}},
  {"2d pad beyond kernel",   C2, 2, 3, 4, {5,6},     {3,3},   {1,2},   {4,3},   {5,4},   {1,1}},
  {"2d odd sizes",           C2, 3, 7, 9, {11,13},   {3,5},   {1,2},   {2,1},   {0,3},   {1,1}},
  {"2d wide rows",           C2, 1, 4, 4, {5,67},    {3,3},   {1,1},   {1,1},   {1,1},   {1,1}},
  {"2d wide rows s1x2",      C2, 2, 4, 4, {4,70},    {3,3},   {1,2},   {1,1},   {1,0},   {1,1}},
  {"3d 3x3x3 pad 1",         C3, 2, 3, 4, {5,6,7},   {3,3,3}, {1,1,1}, {1,1,1}, {1,1,1}, {1,1,1}},
  {"3d 3x1x1",               C3, 2, 5, 3, {7,4,5},   {3,1,1}, {1,1,1}, {1,0,0}, {1,0,0}, {1,1,1}},
  {"3d 1x3x3",               C3, 2, 4, 5, {3,7,6},   {1,3,3}, {1,1,1}, {0,1,1}, {0,1,1}, {1,1,1}},
  {"3d 1x1x1 s2",            C3, 3, 6, 5, {5,6,7},   {1,1,1}, {2,2,2}, {0,0,0}, {0,0,0}, {1,1,1}},
  {"3d 3x3x3 s2",            C3, 2, 3, 4, {7,9,8},   {3,3,3}, {2,2,2}, {1,1,1}, {1,1,1}, {1,1,1}},
  {"3d s3x2x1 asym pad",     C3, 2, 3, 5, {8,7,9},   {3,3,3}, {3,2,1}, {1,0,2}, {0,2,1}, {1,1,1}},
  {"3d dil 2",               C3, 2, 2, 3, {7,7,8},   {3,3,3}, {1,1,1}, {2,2,2}, {2,2,2}, {2,2,2}},
  {"3d s2x1x3 dil 1x2x3",    C3, 2, 3, 4, {6,9,14},  {2,3,3}, {2,1,3}, {1,2,3}, {0,1,2}, {1,2,3}},
  {"3d 7x7x7 small",         C3, 1, 2, 3, {7,8,9},   {7,7,7}, {1,1,1}, {3,0,1}, {3,2,0}, {1,1,1}},
  {"3d odd sizes",           C3, 3, 5, 7, {3,5,7},   {3,1,3}, {1,2,3}, {1,0,1}, {0,1,2}, {1,1,1}},
  {"3d wide rows",           C3, 1, 4, 4, {2,3,40},  {3,3,3}, {1,1,1}, {1,1,1}, {1,1,1}, {1,1,1}},
};
/* clang-format on */

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static void workload_of(const conv_case *cc, ct_layout layout, ct_workload *w) {
  workload_init(w, cc->op);
  w->layout = layout;
  w->n = cc->n;
  w->c = layout == CT_LAYOUT_NCHW4C ? (cc->c + 3) / 4 * 4 : cc->c;
  w->k = layout == CT_LAYOUT_NCHW4C ? (cc->k + 3) / 4 * 4 : cc->k;
  for (int d = 0; d < workload_nd(w); d++) {
    w->in[d] = cc->in[d];
    w->kernel[d] = cc->ker[d];
    w->stride[d] = cc->str[d];
    w->pad_before[d] = cc->pb[d];
    w->pad_after[d] = cc->pa[d];
    w->dilation[d] = cc->dil[d];
  }
}

/* Loop index _i: case _i / 3 in layout _i % 3. */
START_TEST(named_shapes) {
  const conv_case *cc = &cases[_i / 3];
  ct_layout layout = layouts[_i % 3];
  ct_workload w;
  workload_of(cc, layout, &w);
  char what[160];
  snprintf(what, sizeof what, "%s, %s", cc->name, layout_name(layout));
  check_against_naive(&w, 0x9e3779b9u * (uint32_t)(_i + 1), what);
}
END_TEST

/* ---- random shapes --------------------------------------------------------- */

#define RANDOM_PER_LOOP 36
#define RANDOM_LOOPS    8

/* A random valid workload; op and layout come from j so that the six
 * combinations are covered equally. Padding goes up to 3 on either side,
 * sometimes beyond the kernel, so whole output rows can fall in padding. */
static void random_workload(rng *gen, int j, ct_workload *w) {
  ct_op op = j % 2 ? CT_OP_CONV3D : CT_OP_CONV2D;
  workload_init(w, op);
  w->layout = layouts[(j / 2) % 3];
  int packed = w->layout == CT_LAYOUT_NCHW4C;
  w->n = rng_range(gen, 1, 3);
  w->c = packed ? 4 * rng_range(gen, 1, 3) : rng_range(gen, 1, 9);
  w->k = packed ? 4 * rng_range(gen, 1, 3) : rng_range(gen, 1, 9);
  int nd = workload_nd(w);
  for (int d = 0; d < nd; d++) {
    w->kernel[d] = rng_range(gen, 1, nd == 3 ? 4 : 7);
    w->stride[d] = rng_range(gen, 1, 3);
    w->dilation[d] = rng_range(gen, 0, 3) < 2 ? 1 : rng_range(gen, 2, 3);
    w->pad_before[d] = rng_range(gen, 0, 3);
    w->pad_after[d] = rng_range(gen, 0, 3);
    int extent = w->dilation[d] * (w->kernel[d] - 1) + 1;
    int least = extent - w->pad_before[d] - w->pad_after[d];
    w->in[d] = (least > 1 ? least : 1) + rng_range(gen, 0, nd == 3 ? 5 : 9);
  }
}

START_TEST(random_shapes) {
  rng gen;
  rng_seed(&gen, 0xc0ffee00u + (uint32_t)_i);
  for (int j = 0; j < RANDOM_PER_LOOP; j++) {
    ct_workload w;
    random_workload(&gen, j, &w);
    char key[CT_KEY_MAX], what[CT_KEY_MAX + 32];
    snprintf(what, sizeof what, "random %d/%d %s", _i, j, workload_key(&w, key, sizeof key));
    check_against_naive(&w, rng_next(&gen), what);
  }
}
END_TEST

/* Grouped and depthwise: random_workload's shapes with G groups of 1-3
 * input and 1-3 output channels each (1 input channel: depthwise with a
 * channel multiplier); packed, G a multiple of 4 so that C and K are. */
START_TEST(grouped_shapes) {
  rng gen;
  rng_seed(&gen, 0x9a0u + (uint32_t)_i);
  for (int j = 0; j < RANDOM_PER_LOOP; j++) {
    ct_workload w;
    random_workload(&gen, j, &w);
    int groups = w.layout == CT_LAYOUT_NCHW4C ? 4 * rng_range(&gen, 1, 3) : rng_range(&gen, 2, 9);
    int cpg = rng_range(&gen, 0, 2) ? 1 : rng_range(&gen, 2, 3);
    w.groups = groups;
    w.c = groups * cpg;
    w.k = groups * rng_range(&gen, 1, 3);
    char key[CT_KEY_MAX], what[CT_KEY_MAX + 32];
    snprintf(what, sizeof what, "grouped %d/%d %s", _i, j, workload_key(&w, key, sizeof key));
    check_against_naive(&w, rng_next(&gen), what);
  }
}
END_TEST

/* ---- threads ------------------------------------------------------------------- */

/* reference_conv_plain on 2, 3, 7 and 64 threads (more than there
 * are planes; the limit is 32), and with the automatic count, gives the
 * sums of one thread bit for bit (the one-thread path is what the naive
 * checks above test): a dense 2D layer of 37.7M multiply-adds, above the
 * automatic split's threshold, a grouped 3D layer with a stride, and a
 * depthwise one with fewer planes than threads. */
START_TEST(threads_give_the_same_sums) {
  static const struct {
    ct_op op;
    int n, c, k, g, size, depth, ker, str;
  } tcases[] = {{CT_OP_CONV2D, 4, 32, 32, 1, 32, 1, 3, 1},
                {CT_OP_CONV3D, 2, 16, 24, 4, 12, 5, 3, 2},
                {CT_OP_CONV2D, 1, 5, 5, 5, 19, 1, 5, 1}};
  static const int counts[] = {2, 3, 7, 64, 0};
  for (int ci = 0; ci < 3; ci++) {
    ct_workload w;
    workload_init(&w, tcases[ci].op);
    w.n = tcases[ci].n, w.c = tcases[ci].c, w.k = tcases[ci].k, w.groups = tcases[ci].g;
    for (int i = 0; i < workload_nd(&w); i++) {
      const int depth = workload_nd(&w) == 3 && i == 0;
      w.in[i] = depth ? tcases[ci].depth : tcases[ci].size;
      w.kernel[i] = tcases[ci].ker;
      w.stride[i] = tcases[ci].str;
      w.pad_before[i] = w.pad_after[i] = tcases[ci].ker / 2;
    }
    ck_assert_int_eq(workload_validate(&w, NULL), CT_OK);
    geom3 g;
    workload_geom(&w, &g);
    const size_t nd = (size_t)workload_data_elems(&w), nw = (size_t)workload_weight_elems(&w),
                 no = (size_t)workload_out_elems(&w);
    int16_t *x = xmalloc(nd * sizeof *x), *wt = xmalloc(nw * sizeof *wt);
    int32_t *one = xmalloc(no * sizeof *one), *many = xmalloc(no * sizeof *many);
    rng r;
    rng_seed(&r, 77u + (uint32_t)ci);
    for (size_t i = 0; i < nd; i++) x[i] = (int16_t)((int)(rng_next(&r) % 511) - 255);
    for (size_t i = 0; i < nw; i++) wt[i] = (int16_t)((int)(rng_next(&r) % 511) - 255);
    memset(one, 0x5a, no * sizeof *one);
    reference_conv_plain(&g, x, wt, one, 1);
    for (int t = 0; t < 5; t++) {
      memset(many, 0x5a, no * sizeof *many); /* poison: every plane must be written */
      reference_conv_plain(&g, x, wt, many, counts[t]);
      ck_assert_msg(!memcmp(one, many, no * sizeof *one), "case %d on %d threads: other sums", ci,
                    counts[t]);
    }
    free(x), free(wt), free(one), free(many);
  }
}
END_TEST

/* reference_qconv_threads on 2 and 5 threads and the automatic count
 * gives the bytes of one thread, conv, epilogue and layout conversions
 * all split: channels last with 8-bit output, bias, per-channel scales and
 * a residual; a plain conv2d with depth_to_space and uint8 data with a
 * zero point; a 3D one with onnx rounding; the packed layout with a
 * residual. */
START_TEST(qconv_threads_give_the_same_bytes) {
  for (int ci = 0; ci < 4; ci++) {
    ct_workload w;
    workload_init(&w, ci == 2 ? CT_OP_CONV3D : CT_OP_CONV2D);
    w.n = 2, w.c = 32, w.k = 48;
    for (int i = 0; i < workload_nd(&w); i++) {
      w.in[i] = ci == 2 && i == 0 ? 6 : 20;
      w.kernel[i] = 3;
      w.pad_before[i] = w.pad_after[i] = 1;
    }
    w.out_type = CT_DTYPE_INT8;
    w.epi.bias = 1;
    w.epi.scale = ci == 1 ? CT_SCALE_TENSOR : CT_SCALE_CHANNEL;
    if (ci == 0) w.layout = CT_LAYOUT_NHWC, w.epi.residual = 1;
    if (ci == 1) {
      w.data_type = CT_DTYPE_UINT8, w.out_type = CT_DTYPE_UINT8;
      w.epi.data_zero_point = 1;
      w.epi.d2s_block = 2, w.epi.d2s_mode = CT_D2S_CRD;
    }
    if (ci == 2) w.epi.rounding = CT_ROUND_ONNX;
    if (ci == 3) w.layout = CT_LAYOUT_NCHW4C, w.epi.residual = 1;
    ck_assert_int_eq(workload_validate(&w, NULL), CT_OK);
    const size_t nd = (size_t)workload_data_elems(&w), nw = (size_t)workload_weight_elems(&w),
                 no = (size_t)workload_out_elems(&w);
    uint8_t *x = xmalloc(nd), *res = xmalloc(no), *one = xmalloc(no), *many = xmalloc(no);
    int8_t *wt = xmalloc(nw);
    rng r;
    rng_seed(&r, 91u + (uint32_t)ci);
    for (size_t i = 0; i < nd; i++) x[i] = (uint8_t)rng_next(&r);
    for (size_t i = 0; i < nw; i++) wt[i] = (int8_t)rng_next(&r);
    for (size_t i = 0; i < no; i++) res[i] = (uint8_t)rng_next(&r);
    quant_store qs;
    ct_err err = {0};
    ck_assert_msg(quant_random(&w, 7u + (uint64_t)ci, &qs, &err) == CT_OK, "%s", err.msg);
    memset(one, 0xa5, no);
    ck_assert_msg(reference_qconv_threads(&w, &qs.q, x, wt, w.epi.residual ? res : NULL, one, 1,
                                          &err) == CT_OK,
                  "%s", err.msg);
    static const int counts[] = {2, 5, 0};
    for (int t = 0; t < 3; t++) {
      memset(many, 0xa5, no);
      ck_assert(reference_qconv_threads(&w, &qs.q, x, wt, w.epi.residual ? res : NULL, many,
                                        counts[t], &err) == CT_OK);
      ck_assert_msg(!memcmp(one, many, no), "case %d on %d threads: other bytes", ci, counts[t]);
    }
    quant_store_free(&qs);
    free(x), free(res), free(one), free(many), free(wt);
  }
}
END_TEST

/* ---- onnx rounding ------------------------------------------------------------ */

/* x rounded half to even, written out (x a float, or +-inf). */
static double rne(double x) {
  double f = floor(x), d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return fmod(f, 2.0) == 0.0 ? f : f + 1;
}

/* ONNX Runtime's QuantizeLinear of v: z + rne(float(v) * s), clamped to
 * [lo, hi]: the clamp after the rounding here (the reference clamps the
 * float first; they agree because lo and hi are integers). */
static int32_t onnx_quantize(int32_t v, float s, int32_t z, int32_t lo, int32_t hi) {
  const float x = (float)v * s;
  const double y = z + rne(x);
  return (int32_t)(y < lo ? lo : y > hi ? hi : y);
}

/* One ct_quant for an onnx workload and its arrays (K scales). */
typedef struct onnx_values {
  ct_quant q;
  float *scale;
  int32_t *bias;
} onnx_values;

/* Values that spread the outputs over the type: scales about 40 output
 * steps per standard deviation of the accumulator (+-128 x +-128 products
 * over C x kvol taps), half of them powers of two (exact ties), ReLU on
 * the output and on t by turns, the residual's ratios and zero points. */
static void onnx_values_make(const ct_workload *w, rng *gen, onnx_values *o) {
  const shape s = shape_of(w);
  o->scale = xmalloc((size_t)s.k * sizeof *o->scale);
  o->bias = xmalloc((size_t)s.k * sizeof *o->bias);
  const double sd = 5476.0 * sqrt((double)(s.c * s.kd * s.kh * s.kw));
  for (int64_t k = 0; k < s.k; k++) {
    o->scale[k] = (float)(40.0 / sd * (0.7 + 0.6 * (rng_next(gen) % 1000) / 1000.0));
    if (k % 2) o->scale[k] = ldexpf(1.0f, (int)floor(log2((double)o->scale[k])));
    o->bias[k] = rng_range(gen, -16384, 16384);
  }
  const int u8 = w->out_type == CT_DTYPE_UINT8, tmin = u8 ? 0 : -128, tmax = u8 ? 255 : 127;
  memset(&o->q, 0, sizeof o->q);
  o->q.bias = o->bias;
  o->q.scale = o->scale;
  o->q.out_zero_point = rng_range(gen, tmin + 40, tmax - 40);
  o->q.clamp_min = rng_range(gen, 0, 1) ? o->q.out_zero_point : tmin;
  o->q.clamp_max = tmax;
  o->q.mid_zero_point = rng_range(gen, tmin + 40, tmax - 40);
  o->q.mid_clamp_min = rng_range(gen, 0, 1) ? o->q.mid_zero_point : tmin;
  o->q.mid_clamp_max = tmax;
  o->q.mid_scale = (float)(0.3 + (rng_next(gen) % 1000) / 1000.0);
  o->q.residual_scale = (float)(0.3 + (rng_next(gen) % 1000) / 1000.0);
  o->q.residual_zero_point = rng_range(gen, tmin, tmax);
  o->q.residual_first = rng_range(gen, 0, 1);
}

/* The output value of accumulator v of channel k with residual value r:
 * ORT's QLinearConv, or its QuantizeLinear into t and QLinearAdd (the
 * fixed part as its qladd computes it, B's fused multiply-add first). */
static int32_t onnx_out(const ct_workload *w, const ct_quant *q, int64_t k, int32_t v, int32_t r) {
  const float s = q->scale[w->epi.scale == CT_SCALE_CHANNEL ? k : 0];
  if (!w->epi.residual) return onnx_quantize(v, s, q->out_zero_point, q->clamp_min, q->clamp_max);
  const int32_t t = onnx_quantize(v, s, q->mid_zero_point, q->mid_clamp_min, q->mid_clamp_max);
  const int first = q->residual_first;
  const int32_t a = first ? r : t, b = first ? t : r;
  const float sa = first ? q->residual_scale : q->mid_scale;
  const float sb = first ? q->mid_scale : q->residual_scale;
  const float za = (float)(first ? q->residual_zero_point : q->mid_zero_point);
  const float zb = (float)(first ? q->mid_zero_point : q->residual_zero_point);
  const float f = (float)q->out_zero_point - fmaf(sa, za, sb * zb); /* as ORT's x86 build */
  const float acc = fmaf((float)a, sa, fmaf((float)b, sb, f));
  const double y = rne(acc);
  return (int32_t)(y < q->clamp_min ? q->clamp_min : y > q->clamp_max ? q->clamp_max : y);
}

/* reference_qconv of an onnx workload against the naive convolution and
 * the onnx formula written above, on every named shape and layout: 8-bit
 * output of both types, per-tensor and per-channel scales, and a residual
 * in both orders, by turns. */
START_TEST(onnx_rounding_named_shapes) {
  const conv_case *cc = &cases[_i / 3];
  ct_workload w;
  workload_of(cc, layouts[_i % 3], &w);
  w.out_type = _i % 2 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
  w.epi.bias = 1;
  w.epi.scale = _i / 2 % 2 ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
  w.epi.residual = _i % 3 != 0;
  w.epi.rounding = CT_ROUND_ONNX;
  char key[CT_KEY_MAX], what[CT_KEY_MAX + 64];
  snprintf(what, sizeof what, "%s, %s", cc->name, workload_key(&w, key, sizeof key));
  ct_err err;
  err_clear(&err);
  ck_assert_msg(workload_validate(&w, &err) == CT_OK, "%s: %s", what, err.msg);
  rng gen;
  rng_seed(&gen, 0x600d5eedu * (uint32_t)(_i + 1));
  onnx_values o;
  onnx_values_make(&w, &gen, &o);
  if (w.epi.residual) o.q.residual_first = _i / 3 % 2; /* both orders on every layout */
  shape s = shape_of(&w);
  int64_t n_data = s.n * s.c * s.d * s.h * s.w, n_weights = weight_elems(&s);
  int64_t n_out = s.n * s.k * s.od * s.oh * s.ow;
  int8_t *data = xmalloc((size_t)n_data), *weights = xmalloc((size_t)n_weights);
  uint8_t *res = xmalloc((size_t)n_out), *out = xmalloc((size_t)n_out);
  for (int64_t i = 0; i < n_data; i++) data[i] = (int8_t)rng_next(&gen);
  for (int64_t i = 0; i < n_weights; i++) weights[i] = (int8_t)rng_next(&gen);
  for (int64_t i = 0; i < n_out; i++) res[i] = (uint8_t)rng_next(&gen);
  memset(out, 0xA5, (size_t)n_out);
  ct_status st = reference_qconv(&w, &o.q, data, weights, w.epi.residual ? res : NULL, out, &err);
  ck_assert_msg(st == CT_OK, "%s: reference_qconv returned %s: %s", what, ct_status_name(st),
                err.msg);
  int seen[256] = {0}, distinct = 0;
  for (int64_t n = 0; n < s.n; n++)
    for (int64_t k = 0; k < s.k; k++)
      for (int64_t z = 0; z < s.od; z++)
        for (int64_t y = 0; y < s.oh; y++)
          for (int64_t x = 0; x < s.ow; x++) {
            const int64_t e = out_at(&s, n, k, z, y, x);
            const int32_t v = (int32_t)(naive_at(&s, data, weights, n, k, z, y, x) + o.bias[k]);
            const int32_t r = w.out_type == CT_DTYPE_UINT8 ? res[e] : (int8_t)res[e];
            const int32_t want = onnx_out(&w, &o.q, k, v, r);
            const int32_t got = w.out_type == CT_DTYPE_UINT8 ? out[e] : (int8_t)out[e];
            if (got != want)
              ck_abort_msg("%s: out[n %lld][k %lld][%lld][%lld][%lld] is %d, want %d (v %d, r %d)",
                           what, (long long)n, (long long)k, (long long)z, (long long)y,
                           (long long)x, got, want, v, r);
            distinct += !seen[want & 0xff]++;
          }
  /* outputs spread over the type, not one clamped value */
  ck_assert_msg(distinct > 8 || n_out < 40, "%s: the outputs take only %d values", what, distinct);
  free(data);
  free(weights);
  free(res);
  free(out);
  free(o.scale);
  free(o.bias);
}
END_TEST

/* ---- rejected workloads and extremes --------------------------------------- */

/* Workloads that workload_validate rejects: reference_conv must say so and
 * leave the output untouched. */
START_TEST(rejects_invalid_workload) {
  ct_workload w;
  workload_init(&w, _i < 5 ? CT_OP_CONV2D : CT_OP_CONV3D);
  w.c = 4;
  w.k = 4;
  for (int d = 0; d < 3; d++) w.in[d] = w.kernel[d] = 3;
  switch (_i % 5) {
  case 0:
    w.c = 0;
    break;
  case 1:
    w.stride[0] = 0;
    break;
  case 2: /* the packed layout needs whole groups of 4 channels */
    w.layout = CT_LAYOUT_NCHW4C;
    w.c = 6;
    break;
  case 3: /* kernel larger than the padded input */
    w.kernel[1] = 5;
    w.pad_before[1] = 1;
    break;
  case 4: /* channels last has no depth_to_space */
    w.layout = CT_LAYOUT_NHWC;
    w.k = _i < 5 ? 4 : 8;
    w.epi.d2s_block = 2;
    break;
  }
  int8_t data[256] = {1}, weights[256] = {1};
  int32_t out[256];
  for (int i = 0; i < 256; i++) out[i] = POISON;
  ct_err err;
  err_clear(&err);
  ct_status st = reference_conv(&w, data, weights, out, &err);
  ck_assert_msg(st == CT_ERR_INVALID_WORKLOAD, "case %d: got %s", _i, ct_status_name(st));
  ck_assert_int_eq(err.status, CT_ERR_INVALID_WORKLOAD);
  ck_assert_msg(err.msg[0] != '\0', "case %d: no message", _i);
  for (int i = 0; i < 256; i++)
    if (out[i] != POISON) ck_abort_msg("case %d: out[%d] was written", _i, i);
}
END_TEST

/* Every product is (-128) x (-128) = 16384 and no padding is touched, so each
 * output is exactly 16384 x C x kernel volume: 1.26e9 and 1.64e9, near the
 * int32 limit of 2.15e9 (an int16 or float accumulator would fail here). */
START_TEST(accumulator_extreme) {
  ct_workload w;
  int is3 = _i / 3;
  workload_init(&w, is3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  w.layout = layouts[_i % 3];
  w.n = 2;
  w.k = 4;
  if (is3) {
    w.c = 1024;
    w.kernel[0] = 3, w.kernel[1] = 5, w.kernel[2] = 5;
    w.in[0] = 4, w.in[1] = 6, w.in[2] = 7;
  } else {
    w.c = 2048;
    w.kernel[0] = 7, w.kernel[1] = 7;
    w.in[0] = 8, w.in[1] = 9;
  }
  ct_err err;
  err_clear(&err);
  ck_assert_int_eq(workload_validate(&w, &err), CT_OK);
  int64_t kvol = is3 ? 3 * 5 * 5 : 7 * 7;
  int64_t want = 16384 * (int64_t)w.c * kvol;
  ck_assert_int_le(want, INT32_MAX);
  int64_t n_data = workload_data_elems(&w), n_weights = workload_weight_elems(&w);
  int64_t n_out = workload_out_elems(&w);
  ck_assert_int_eq(n_out, is3 ? 2 * 4 * 2 * 2 * 3 : 2 * 4 * 2 * 3);
  int8_t *data = xmalloc((size_t)n_data), *weights = xmalloc((size_t)n_weights);
  int32_t *out = xmalloc((size_t)n_out * sizeof *out);
  memset(data, 0x80, (size_t)n_data); /* -128 */
  memset(weights, 0x80, (size_t)n_weights);
  for (int64_t i = 0; i < n_out; i++) out[i] = POISON;
  ck_assert_int_eq(reference_conv(&w, data, weights, out, &err), CT_OK);
  for (int64_t i = 0; i < n_out; i++)
    if (out[i] != want)
      ck_abort_msg("out[%lld] is %d, want %lld", (long long)i, out[i], (long long)want);
  free(data);
  free(weights);
  free(out);
}
END_TEST

/* ---- a fused pointwise convolution (pre) ------------------------------------ */

/* A fused layer: a pointwise conv of pre_c channels into the c channels a
 * channels-last conv (kernel, stride, pad 1 or 0, g groups) reads. */
typedef struct fused_case {
  const char *name;
  ct_op op;
  int n, pre_c, c, k, g, in[3], ker, str[3], pad;
  ct_dtype pre_type, data_type, out_type;
  int pre_zd, pre_zw, pre_qc, pre_onnx; /* the pointwise conv's epilogue (bias always) */
  int zd, zw, qc, onnx, res;            /* the main conv's (bias always) */
} fused_case;

#define I8  CT_DTYPE_INT8
#define U8  CT_DTYPE_UINT8
#define I32 CT_DTYPE_INT32

/* clang-format off */
static const fused_case fused_cases[] = {
  /* name                               op  n pre c   k   g   in         ker str      pad pre data out  pzd pzw pqc pnx zd zw qc onnx res */
  {"depthwise 3x3 s1, int8, gemmlowp",  C2, 2, 7, 12, 12, 12, {9,7},     3, {1,1},   1, I8, I8, I8,  0, 0, 1, 0,  0, 0, 1, 0, 0},
  {"depthwise 3x3 s2, uint8, onnx",     C2, 2, 7, 12, 12, 12, {11,10},   3, {2,2},   1, U8, U8, U8,  1, 0, 1, 1,  1, 0, 1, 1, 0},
  {"depthwise s2, zero point pre only", C2, 1, 7, 12, 12, 12, {9,9},     3, {2,2},   1, U8, I8, I8,  1, 1, 1, 0,  0, 0, 1, 0, 0},
  {"depthwise s1, zero point main only",C2, 2, 7, 12, 12, 12, {6,9},     3, {1,1},   1, I8, U8, I8,  0, 0, 0, 0,  1, 0, 1, 0, 0},
  {"dense 3x3, int32 out",              C2, 2, 7, 12, 10, 1,  {7,8},     3, {1,1},   1, U8, I8, I32, 1, 0, 1, 0,  1, 1, 0, 0, 0},
  {"dense 3x3 s2, uint8 out, onnx pre", C2, 1, 5, 12, 9,  1,  {9,9},     3, {2,2},   1, I8, U8, U8,  0, 1, 0, 1,  1, 0, 1, 0, 0},
  {"depthwise, residual, onnx main",    C2, 2, 7, 12, 12, 12, {7,7},     3, {1,1},   1, U8, I8, I8,  1, 1, 1, 0,  0, 0, 1, 1, 1},
  {"grouped 3x3, per-tensor scales",    C2, 2, 7, 12, 8,  4,  {8,7},     3, {1,1},   1, I8, I8, U8,  0, 0, 0, 0,  1, 1, 0, 0, 0},
  {"3d depthwise 3x3x3 s(1,2,2)",       C3, 2, 5, 8,  8,  8,  {4,7,7},   3, {1,2,2}, 1, U8, I8, I8,  1, 0, 1, 1,  1, 0, 1, 0, 0},
  {"MobileNetV2 24 -> 144, dw",         C2, 1, 24,144,144,144,{7,7},     3, {1,1},   1, I8, I8, I8,  0, 0, 1, 1,  0, 0, 1, 1, 0},
  {"1x1 after 1x1, no padding",         C2, 3, 9, 6,  11, 1,  {5,6},     1, {1,1},   0, U8, U8, I8,  1, 1, 1, 0,  1, 1, 1, 0, 0},
};
/* clang-format on */
#define N_FUSED ((int)(sizeof fused_cases / sizeof fused_cases[0]))

static ct_workload fused_of(const fused_case *fc) {
  ct_workload w;
  workload_init(&w, fc->op);
  w.layout = CT_LAYOUT_NHWC;
  w.n = fc->n, w.c = fc->c, w.k = fc->k, w.groups = fc->g;
  for (int d = 0; d < workload_nd(&w); d++) {
    w.in[d] = fc->in[d];
    w.kernel[d] = fc->ker;
    w.stride[d] = fc->str[d];
    w.pad_before[d] = w.pad_after[d] = fc->pad;
  }
  w.data_type = fc->data_type, w.out_type = fc->out_type;
  w.epi.data_zero_point = fc->zd, w.epi.weight_zero_point = fc->zw, w.epi.bias = 1;
  w.epi.scale = fc->qc ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
  w.epi.rounding = fc->onnx ? CT_ROUND_ONNX : CT_ROUND_GEMMLOWP;
  w.epi.residual = fc->res;
  w.pre_c = fc->pre_c, w.pre_data_type = fc->pre_type;
  w.pre_epi.data_zero_point = fc->pre_zd, w.pre_epi.weight_zero_point = fc->pre_zw;
  w.pre_epi.bias = 1;
  w.pre_epi.scale = fc->pre_qc ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
  w.pre_epi.rounding = fc->pre_onnx ? CT_ROUND_ONNX : CT_ROUND_GEMMLOWP;
  return w;
}

/* The two workloads a fused one stands for, written out here (not by
 * workload_pre / workload_main): the pointwise conv, pre_c -> c, 1x1 on
 * the whole input, its output the main conv's data type; and the main
 * conv with no pre fields. */
static void fused_parts(const ct_workload *w, ct_workload *pre, ct_workload *m) {
  workload_init(pre, w->op);
  pre->layout = CT_LAYOUT_NHWC;
  pre->data_type = w->pre_data_type;
  pre->out_type = w->data_type;
  pre->n = w->n, pre->c = w->pre_c, pre->k = w->c;
  for (int d = 0; d < workload_nd(w); d++) pre->in[d] = w->in[d], pre->kernel[d] = 1;
  pre->epi = w->pre_epi;
  *m = *w;
  m->pre_c = 0;
  m->pre_data_type = CT_DTYPE_INT8;
  memset(&m->pre_epi, 0, sizeof m->pre_epi);
}

/* Calibrate the requantization of w (no pre; bias on) on its real input,
 * as a quantizer would: quant_random's values assume uniform input bytes,
 * which the intermediate tensor is not. Each channel's bias is moved so
 * that its sums centre on 0 and its scale set so that 3 standard
 * deviations span about 60 output steps (per tensor: the widest
 * channel's), from the reference's int32 sums; a clamp narrower than 32
 * steps is opened to the type's top. */
static void calibrate(const ct_workload *w, quant_store *s, const void *data,
                      const int8_t *weights) {
  if (w->out_type == CT_DTYPE_INT32) return;
  ct_workload raw = *w;
  raw.out_type = CT_DTYPE_INT32;
  raw.epi.scale = CT_SCALE_TENSOR, raw.epi.rounding = CT_ROUND_GEMMLOWP, raw.epi.residual = 0;
  const size_t n_out = (size_t)workload_out_elems(&raw), K = (size_t)w->k;
  int32_t *acc = xmalloc(n_out * sizeof *acc);
  ct_err err = {0};
  ck_assert_msg(reference_qconv(&raw, &s->q, data, weights, NULL, acc, &err) == CT_OK, "%s",
                err.msg);
  double widest = 0;
  for (size_t k = 0; k < K; k++) {
    double sum = 0, sq = 0, n = 0;
    for (size_t i = k; i < n_out; i += K) /* channels last */
      sum += acc[i], sq += (double)acc[i] * acc[i], n++;
    const double mean = sum / n, sd = sqrt(fmax(sq / n - mean * mean, 0));
    s->bias[k] -= (int32_t)lround(mean);
    s->scale[k] = (float)(20.0 / (sd + 1));
    widest = fmax(widest, sd);
  }
  if (w->epi.scale == CT_SCALE_TENSOR) s->scale[0] = (float)(20.0 / (widest + 1));
  /* a ReLU6-like clamp of a few steps would leave a few values */
  if (s->q.clamp_max - s->q.clamp_min < 32)
    s->q.clamp_max = w->out_type == CT_DTYPE_UINT8 ? 255 : 127;
  free(acc);
}

/* Calibrate both stages of the fused w: the pointwise conv on data, the
 * main conv on the pointwise conv's output. */
static void calibrate_fused(const ct_workload *w, quant_store *s, const void *data,
                            const int8_t *weights) {
  ct_workload pre, m;
  fused_parts(w, &pre, &m);
  calibrate(&pre, s->pre, data, s->q.pre_weights);
  uint8_t *mid = xmalloc((size_t)workload_out_elems(&pre));
  ct_err err = {0};
  ck_assert_msg(reference_qconv(&pre, s->q.pre, data, s->q.pre_weights, NULL, mid, &err) == CT_OK,
                "%s", err.msg);
  calibrate(&m, s, mid, weights);
  free(mid);
}

/* The fused reference (reference_qconv of the fused workload) equals the
 * reference of the pointwise conv (q->pre, q->pre_weights) into a buffer,
 * then the reference of the main conv on it, byte for byte, on random
 * values from quant_random (biases and scales calibrated); and its threads
 * give the same bytes. */
START_TEST(fused_equals_two_convs) {
  const fused_case *fc = &fused_cases[_i];
  ct_workload w = fused_of(fc);
  ct_err err = {0};
  ck_assert_msg(workload_validate(&w, &err) == CT_OK, "%s: %s", fc->name, err.msg);
  ct_workload pre, m, lib;
  fused_parts(&w, &pre, &m);
  ck_assert_msg(workload_validate(&pre, &err) == CT_OK, "%s: pre %s", fc->name, err.msg);
  workload_pre(&w, &lib);
  ck_assert_mem_eq(&lib, &pre, sizeof pre);
  workload_main(&w, &lib);
  ck_assert_mem_eq(&lib, &m, sizeof m);
  quant_store qs;
  ck_assert_msg(quant_random(&w, 1000u + (uint64_t)_i, &qs, &err) == CT_OK, "%s", err.msg);
  const size_t n_data = (size_t)workload_data_elems(&w), n_mid = (size_t)workload_out_elems(&pre);
  const size_t n_weights = (size_t)workload_weight_elems(&w),
               n_out = (size_t)workload_out_elems(&w);
  const size_t eb = workload_out_elem_bytes(&w);
  ck_assert_uint_eq(n_data, (size_t)workload_data_elems(&pre));
  ck_assert_uint_eq(n_mid, (size_t)workload_data_elems(&m));
  uint8_t *data = xmalloc(n_data), *mid = xmalloc(n_mid), *res = xmalloc(n_out);
  int8_t *weights = xmalloc(n_weights);
  uint8_t *fused = xmalloc(n_out * eb), *two = xmalloc(n_out * eb), *many = xmalloc(n_out * eb);
  rng gen;
  rng_seed(&gen, 2000u + (uint32_t)_i);
  for (size_t i = 0; i < n_data; i++) data[i] = (uint8_t)rng_next(&gen);
  for (size_t i = 0; i < n_weights; i++) weights[i] = (int8_t)rng_next(&gen);
  for (size_t i = 0; i < n_out; i++) res[i] = (uint8_t)rng_next(&gen);
  const void *r = fc->res ? res : NULL;
  calibrate_fused(&w, &qs, data, weights);
  memset(fused, 0xA5, n_out * eb);
  memset(two, 0x5A, n_out * eb);
  memset(mid, 0x5A, n_mid);
  ct_status st = reference_qconv(&w, &qs.q, data, weights, r, fused, &err);
  ck_assert_msg(st == CT_OK, "%s: fused: %s", fc->name, err.msg);
  st = reference_qconv(&pre, qs.q.pre, data, qs.q.pre_weights, NULL, mid, &err);
  ck_assert_msg(st == CT_OK, "%s: pointwise: %s", fc->name, err.msg);
  st = reference_qconv(&m, &qs.q, mid, weights, r, two, &err);
  ck_assert_msg(st == CT_OK, "%s: main: %s", fc->name, err.msg);
  for (size_t i = 0; i < n_out * eb; i++)
    if (fused[i] != two[i])
      ck_abort_msg("%s: output byte %zu is 0x%02x fused, 0x%02x by the two convs", fc->name, i,
                   fused[i], two[i]);
  memset(many, 0xA5, n_out * eb);
  ck_assert(reference_qconv_threads(&w, &qs.q, data, weights, r, many, 3, &err) == CT_OK);
  ck_assert_msg(!memcmp(fused, many, n_out * eb), "%s: 3 threads give other bytes", fc->name);
  /* neither tensor is one clamped value */
  int seen_mid[256] = {0}, seen_out[256] = {0}, d_mid = 0, d_out = 0;
  for (size_t i = 0; i < n_mid; i++) d_mid += !seen_mid[mid[i]]++;
  for (size_t i = 0; i < n_out * eb; i += eb) d_out += !seen_out[fused[i]]++;
  ck_assert_msg(d_mid > 8 && d_out > 8, "%s: %d values in the intermediate, %d out", fc->name,
                d_mid, d_out);
  quant_store_free(&qs);
  free(data), free(mid), free(res), free(weights), free(fused), free(two), free(many);
}
END_TEST

/* One requantization of v for output channel k: gemmlowp's fixed point
 * (quant_multiplier, ctq_rescale) or ONNX Runtime's float form. */
static int32_t requant_one(const ct_epilogue *e, const ct_quant *q, int64_t k, int32_t v) {
  const float s = q->scale[e->scale == CT_SCALE_CHANNEL ? k : 0];
  if (e->rounding == CT_ROUND_ONNX)
    return onnx_quantize(v, s, q->out_zero_point, q->clamp_min, q->clamp_max);
  int32_t mult;
  int sh;
  ck_assert_int_eq(quant_multiplier(s, &mult, &sh, NULL), CT_OK);
  const int64_t y = (int64_t)q->out_zero_point + ctq_rescale(v, mult, sh);
  return (int32_t)(y < q->clamp_min ? q->clamp_min : y > q->clamp_max ? q->clamp_max : y);
}

/* A byte of type t as its value. */
static int32_t typed(ct_dtype t, uint8_t b) {
  return t == CT_DTYPE_UINT8 ? b : (int8_t)b;
}

/* The fused conv2d w (8-bit output, no residual) from its definition, every
 * index written out: t[n][y][x][ch] = requant(sum over ci of (x - zx') (w'
 * - zw'[ch]) + bias'[ch]) with the pointwise conv's values q->pre and
 * weights q->pre_weights [ch][ci]; then the main conv (OHWI weights, g
 * groups) of t, whose padding reads its own data zero point, into out
 * [n][oy][ox][k]. wrong makes it wrong on purpose, to show that the
 * comparison can fail: 1 padding reads 0, 2 the pointwise weights read
 * [ci][ch]. */
static void fused_naive(const ct_workload *w, const ct_quant *q, const uint8_t *data,
                        const int8_t *weights, uint8_t *out, int wrong) {
  const ct_quant *p = q->pre;
  const ct_epilogue *pe = &w->pre_epi, *e = &w->epi;
  const int N = w->n, PC = w->pre_c, C = w->c, K = w->k, H = w->in[0], W = w->in[1];
  const int R = w->kernel[0], S = w->kernel[1], G = w->groups, CPG = C / G, KPG = K / G;
  const int OH = (H + w->pad_before[0] + w->pad_after[0] - R) / w->stride[0] + 1;
  const int OW = (W + w->pad_before[1] + w->pad_after[1] - S) / w->stride[1] + 1;
  uint8_t *t = xmalloc((size_t)N * H * W * C);
  const int32_t zxp = pe->data_zero_point ? p->data_zero_point : 0;
  for (int n = 0; n < N; n++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        for (int ch = 0; ch < C; ch++) {
          const int32_t zwp = pe->weight_zero_point ? p->weight_zero_points[ch] : 0;
          int64_t acc = 0;
          for (int ci = 0; ci < PC; ci++) {
            const int32_t xv = typed(w->pre_data_type, data[((n * H + y) * W + x) * PC + ci]);
            const int32_t wv = q->pre_weights[wrong == 2 ? ci * C + ch : ch * PC + ci];
            acc += (int64_t)(xv - zxp) * (wv - zwp);
          }
          const int32_t v = (int32_t)(acc + (pe->bias ? p->bias[ch] : 0));
          t[((n * H + y) * W + x) * C + ch] = (uint8_t)requant_one(pe, p, ch, v);
        }
  const int32_t zx = e->data_zero_point ? q->data_zero_point : 0;
  for (int n = 0; n < N; n++)
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OW; ox++)
        for (int k = 0; k < K; k++) {
          const int c0 = k / KPG * CPG; /* k's group's first channel */
          const int32_t zw = e->weight_zero_point ? q->weight_zero_points[k] : 0;
          int64_t acc = 0;
          for (int ky = 0; ky < R; ky++)
            for (int kx = 0; kx < S; kx++)
              for (int c = 0; c < CPG; c++) {
                const int y = oy * w->stride[0] - w->pad_before[0] + ky;
                const int x = ox * w->stride[1] - w->pad_before[1] + kx;
                int32_t tv = wrong == 1 ? 0 : zx; /* padding */
                if (y >= 0 && y < H && x >= 0 && x < W)
                  tv = typed(w->data_type, t[((n * H + y) * W + x) * C + c0 + c]);
                const int32_t wv = weights[((k * R + ky) * S + kx) * CPG + c];
                acc += (int64_t)(tv - zx) * (wv - zw);
              }
          const int32_t v = (int32_t)(acc + (e->bias ? q->bias[k] : 0));
          out[((n * OH + oy) * OW + ox) * K + k] = (uint8_t)requant_one(e, q, k, v);
        }
  free(t);
}

/* The fused reference against fused_naive on small cases: uint8 data with
 * zero points on both stages and gemmlowp (depthwise); uint8 data into an
 * int8 conv with onnx rounding (dense, stride 2, asymmetric padding). The
 * two wrong variants differ from it. */
START_TEST(fused_equals_naive) {
  for (int ci = 0; ci < 2; ci++) {
    ct_workload w;
    workload_init(&w, CT_OP_CONV2D);
    w.layout = CT_LAYOUT_NHWC;
    w.n = 2, w.pre_c = 5, w.c = 6;
    w.in[0] = 5, w.in[1] = 4;
    w.kernel[0] = w.kernel[1] = 3;
    w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 1;
    w.out_type = CT_DTYPE_INT8;
    w.epi.bias = w.pre_epi.bias = 1;
    w.epi.data_zero_point = 1; /* padding reads it */
    w.epi.scale = w.pre_epi.scale = CT_SCALE_CHANNEL;
    if (ci == 0) { /* depthwise, uint8 everywhere, both zero points on the pointwise conv */
      w.k = 6, w.groups = 6;
      w.data_type = w.pre_data_type = CT_DTYPE_UINT8;
      w.pre_epi.data_zero_point = w.pre_epi.weight_zero_point = 1;
    } else { /* dense, stride 2, more padding after, onnx on both, uint8 into int8 */
      w.k = 4, w.in[1] = 6;
      w.pre_data_type = CT_DTYPE_UINT8;
      w.stride[0] = w.stride[1] = 2;
      w.pad_after[1] = 2;
      w.epi.weight_zero_point = 1;
      w.epi.rounding = w.pre_epi.rounding = CT_ROUND_ONNX;
      w.out_type = CT_DTYPE_UINT8;
    }
    ct_err err = {0};
    ck_assert_msg(workload_validate(&w, &err) == CT_OK, "case %d: %s", ci, err.msg);
    quant_store qs;
    ck_assert_msg(quant_random(&w, 31u + (uint64_t)ci, &qs, &err) == CT_OK, "%s", err.msg);
    ck_assert_int_ne(qs.q.data_zero_point, 0);
    const size_t n_data = (size_t)workload_data_elems(&w), n_out = (size_t)workload_out_elems(&w);
    const size_t n_weights = (size_t)workload_weight_elems(&w);
    ck_assert_uint_eq(n_data, (size_t)w.n * 5 * w.in[0] * w.in[1]);
    uint8_t *data = xmalloc(n_data), *got = xmalloc(n_out), *want = xmalloc(n_out);
    int8_t *weights = xmalloc(n_weights);
    rng gen;
    rng_seed(&gen, 3000u + (uint32_t)ci);
    for (size_t i = 0; i < n_data; i++) data[i] = (uint8_t)rng_next(&gen);
    for (size_t i = 0; i < n_weights; i++) weights[i] = (int8_t)rng_next(&gen);
    calibrate_fused(&w, &qs, data, weights);
    memset(got, 0xA5, n_out);
    ck_assert_msg(reference_qconv(&w, &qs.q, data, weights, NULL, got, &err) == CT_OK, "%s",
                  err.msg);
    memset(want, 0x5A, n_out);
    fused_naive(&w, &qs.q, data, weights, want, 0);
    int seen[256] = {0}, distinct = 0;
    for (size_t i = 0; i < n_out; i++) {
      if (got[i] != want[i])
        ck_abort_msg("case %d: output %zu is %d, the definition gives %d", ci, i,
                     typed(w.out_type, got[i]), typed(w.out_type, want[i]));
      distinct += !seen[got[i]]++;
    }
    ck_assert_msg(distinct > 8, "case %d: %d distinct outputs", ci, distinct);
    for (int wrong = 1; wrong <= 2; wrong++) {
      fused_naive(&w, &qs.q, data, weights, want, wrong);
      ck_assert_msg(memcmp(got, want, n_out), "case %d: wrong variant %d passes", ci, wrong);
    }
    quant_store_free(&qs);
    free(data), free(got), free(want), free(weights);
  }
}
END_TEST

/* What the fused reference refuses: a workload without pointwise values,
 * with its error message; the output untouched. */
START_TEST(fused_refusals) {
  ct_workload w = fused_of(&fused_cases[0]);
  quant_store qs;
  ct_err err = {0};
  ck_assert_int_eq(quant_random(&w, 5, &qs, &err), CT_OK);
  const size_t n_data = (size_t)workload_data_elems(&w), n_out = (size_t)workload_out_elems(&w);
  uint8_t *data = xcalloc(n_data, 1), *out = xmalloc(n_out);
  int8_t *weights = xcalloc((size_t)workload_weight_elems(&w), 1);
  memset(out, 0xA5, n_out);
  ct_quant q = qs.q;
  q.pre = NULL;
  ck_assert_int_eq(reference_qconv(&w, &q, data, weights, NULL, out, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "pre is NULL"), "'%s'", err.msg);
  q = qs.q, q.pre_weights = NULL;
  ck_assert_int_eq(reference_qconv(&w, &q, data, weights, NULL, out, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "pre_weights is NULL"), "'%s'", err.msg);
  /* a residual the main conv has must be given */
  ct_workload wr = fused_of(&fused_cases[6]);
  quant_store qr;
  ck_assert_int_eq(quant_random(&wr, 6, &qr, &err), CT_OK);
  ck_assert_int_eq(reference_qconv(&wr, &qr.q, data, weights, NULL, out, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "residual"), "'%s'", err.msg);
  for (size_t i = 0; i < n_out; i++)
    if (out[i] != 0xA5) ck_abort_msg("out[%zu] was written", i);
  quant_store_free(&qs);
  quant_store_free(&qr);
  free(data), free(out), free(weights);
}
END_TEST

static void add_core(TCase *tc) {
  /* generous: the random loops run slowly under ASan on a loaded machine */
  tcase_add_loop_test(tc, named_shapes, 0, 3 * N_CASES);
  tcase_add_loop_test(tc, onnx_rounding_named_shapes, 0, 3 * N_CASES);
  tcase_add_loop_test(tc, random_shapes, 0, RANDOM_LOOPS);
  tcase_add_loop_test(tc, grouped_shapes, 0, RANDOM_LOOPS);
  tcase_add_loop_test(tc, rejects_invalid_workload, 0, 10);
  tcase_add_loop_test(tc, accumulator_extreme, 0, 6);
  tcase_add_test(tc, threads_give_the_same_sums);
  tcase_add_test(tc, qconv_threads_give_the_same_bytes);
  tcase_add_loop_test(tc, fused_equals_two_convs, 0, N_FUSED);
  tcase_add_test(tc, fused_equals_naive);
  tcase_add_test(tc, fused_refusals);
}

static const test_case suite_cases[] = {
    {"core", 60, add_core},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"reference", suite_cases, 0, NULL};
  return test_main(&suite);
}
