/*
 * test_workload.c: the workload model (core/workload.c): defaults, derived
 * sizes, validation, the canonical key and the JSON form.
 *
 * Sizes are checked against values worked out by hand here (ResNet-50 conv1,
 * the ResNet3D-18 stem, stride 2 with padding, dilation, asymmetric padding),
 * never against workload.c's own formula. Every rejection asserts both the
 * status and that the message names the field. Key and JSON are round-tripped
 * for a few hundred random valid workloads from core's fixed-seed RNG (conv2d
 * and conv3d, all three layouts, asymmetric pads, dilation, strides); loops call
 * Check only on a mismatch, since each passing ck_assert writes to its log.
 * A fused pointwise convolution (pre) has its own case: its key segment
 * and JSON object round-tripped, its parts, sizes and refusals. Every cJSON
 * tree and printed string is freed: the suite also runs under ASan/LSan.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/workload.h"
#include "tests/util.h"

#define N_RANDOM 400

/* A conv2d with square sizes and symmetric padding. */
static ct_workload conv2d(int n, int c, int k, int hw, int r, int s, int p) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.n = n;
  w.c = c;
  w.k = k;
  for (int d = 0; d < 2; d++) {
    w.in[d] = hw;
    w.kernel[d] = r;
    w.stride[d] = s;
    w.pad_before[d] = w.pad_after[d] = p;
  }
  return w;
}

/* A conv3d with per-dimension kernel, stride and symmetric padding. */
static ct_workload conv3d(int n, int c, int k, const int in[3], const int r[3], const int s[3],
                          const int p[3]) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV3D);
  w.n = n;
  w.c = c;
  w.k = k;
  for (int d = 0; d < 3; d++) {
    w.in[d] = in[d];
    w.kernel[d] = r[d];
    w.stride[d] = s[d];
    w.pad_before[d] = w.pad_after[d] = p[d];
  }
  return w;
}

/* The ResNet3D-18 stem: 3x16x112x112 -> 64, kernel (3,7,7), stride (1,2,2), pad (1,3,3). */
static ct_workload stem3d(int n) {
  static const int in[3] = {16, 112, 112}, r[3] = {3, 7, 7}, s[3] = {1, 2, 2}, p[3] = {1, 3, 3};
  return conv3d(n, 3, 64, in, r, s, p);
}

/* A random valid workload: both ops and all layouts (NHWC with any channel
 * count, never depth_to_space), kernels 1..7, strides 1..3,
 * dilation mostly 1, independent pads before and after, and input sizes from
 * the smallest that gives one output upwards. Sizes stay small enough that
 * every element count is far below int32. */
static ct_workload random_workload(rng *gen) {
  ct_workload w;
  workload_init(&w, rng_range(gen, 0, 1) ? CT_OP_CONV3D : CT_OP_CONV2D);
  int nd = workload_nd(&w);
  static const ct_layout layouts[3] = {CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C, CT_LAYOUT_NHWC};
  w.layout = layouts[rng_range(gen, 0, 2)];
  int mult = w.layout == CT_LAYOUT_NCHW4C ? 4 : 1;
  w.n = rng_range(gen, 1, 4) == 4 ? rng_range(gen, 1, 64) : 1;
  w.c = mult * rng_range(gen, 1, 40);
  w.k = mult * rng_range(gen, 1, 40);
  for (int d = 0; d < nd; d++) {
    w.kernel[d] = rng_range(gen, 1, 7);
    w.stride[d] = rng_range(gen, 1, 3);
    w.dilation[d] = rng_range(gen, 0, 3) ? 1 : rng_range(gen, 2, 3);
    w.pad_before[d] = rng_range(gen, 0, 4);
    w.pad_after[d] = rng_range(gen, 0, 4);
    int extent = w.dilation[d] * (w.kernel[d] - 1) + 1;
    int min_in = extent - w.pad_before[d] - w.pad_after[d];
    if (min_in < 1) min_in = 1;
    w.in[d] = min_in + rng_range(gen, 0, nd == 3 ? 10 : 60);
  }
  /* half of them quantized: dtypes and every epilogue field */
  if (rng_range(gen, 0, 1)) {
    w.data_type = rng_range(gen, 0, 1) ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
    static const ct_dtype outs[3] = {CT_DTYPE_INT32, CT_DTYPE_INT8, CT_DTYPE_UINT8};
    w.out_type = outs[rng_range(gen, 0, 2)];
    int q8 = w.out_type != CT_DTYPE_INT32;
    w.epi.data_zero_point = rng_range(gen, 0, 1);
    w.epi.weight_zero_point = rng_range(gen, 0, 1);
    w.epi.bias = rng_range(gen, 0, 1);
    w.epi.scale = q8 && rng_range(gen, 0, 1) ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
    w.epi.residual = q8 && rng_range(gen, 0, 1);
    if (q8 && rng_range(gen, 0, 2) == 0) w.epi.rounding = CT_ROUND_ONNX;
    if (rng_range(gen, 0, 3) == 0 && w.layout != CT_LAYOUT_NHWC) {
      int b = rng_range(gen, 2, 3), vol = nd == 3 ? b * b * b : b * b;
      w.epi.d2s_block = b;
      w.epi.d2s_mode = rng_range(gen, 0, 1) ? CT_D2S_CRD : CT_D2S_DCR;
      w.k = vol * rng_range(gen, 1, 4);
    }
  }
  return w;
}

/* N_RANDOM random workloads, each checked valid. Owned: free(). */
static ct_workload *random_workloads(uint32_t seed) {
  ct_workload *ws = xmalloc(N_RANDOM * sizeof *ws);
  rng gen;
  rng_seed(&gen, seed);
  for (int i = 0; i < N_RANDOM; i++) {
    ws[i] = random_workload(&gen);
    ct_err err = {0};
    if (workload_validate(&ws[i], &err) != CT_OK) {
      char key[CT_KEY_MAX];
      ck_abort_msg("random workload %d (%s) rejected: %s", i, workload_key(&ws[i], key, sizeof key),
                   err.msg);
    }
  }
  return ws;
}

/* Assert that st is want and that err's message holds needle (and needle2
 * when not NULL). what names the case in the failure message. */
static void expect_err_at(int line, ct_status st, ct_status want, const ct_err *err,
                          const char *what, const char *needle, const char *needle2) {
  ck_assert_msg(st == want, "line %d, %s: status %s, want %s (message: %s)", line, what,
                ct_status_name(st), ct_status_name(want), err->msg);
  ck_assert_msg(err->status == want, "line %d, %s: err.status %s, want %s", line, what,
                ct_status_name(err->status), ct_status_name(want));
  ck_assert_msg(strstr(err->msg, needle), "line %d, %s: message '%s' does not mention '%s'", line,
                what, err->msg, needle);
  if (needle2)
    ck_assert_msg(strstr(err->msg, needle2), "line %d, %s: message '%s' does not mention '%s'",
                  line, what, err->msg, needle2);
}
#define EXPECT_ERR(st, want, err, what, needle, needle2)                                           \
  expect_err_at(__LINE__, (st), (want), (err), (what), (needle), (needle2))

/* workload_validate on w must fail with CT_ERR_INVALID_WORKLOAD naming needle. */
static void expect_invalid_at(int line, const ct_workload *w, const char *what, const char *needle,
                              const char *needle2) {
  ct_err err = {0};
  expect_err_at(line, workload_validate(w, &err), CT_ERR_INVALID_WORKLOAD, &err, what, needle,
                needle2);
  /* The status alone comes back without an err. */
  ck_assert_int_eq(workload_validate(w, NULL), CT_ERR_INVALID_WORKLOAD);
}
#define EXPECT_INVALID(w, what, needle, needle2)                                                   \
  expect_invalid_at(__LINE__, (w), (what), (needle), (needle2))

static void expect_valid_at(int line, const ct_workload *w, const char *what) {
  ct_err err = {0};
  ct_status st = workload_validate(w, &err);
  ck_assert_msg(st == CT_OK, "line %d, %s: rejected with %s: %s", line, what, ct_status_name(st),
                err.msg);
}
#define EXPECT_VALID(w, what) expect_valid_at(__LINE__, (w), (what))

/* ---- defaults and derived sizes -------------------------------------------- */

START_TEST(init_sets_defaults) {
  const ct_op ops[] = {CT_OP_CONV2D, CT_OP_CONV3D};
  for (int i = 0; i < 2; i++) {
    ct_workload w;
    memset(&w, 0x5A, sizeof w); /* every field must be written */
    workload_init(&w, ops[i]);
    ck_assert_int_eq(w.op, ops[i]);
    ck_assert_int_eq(w.layout, CT_LAYOUT_NCHW);
    ck_assert_int_eq(w.data_type, CT_DTYPE_INT8);
    ck_assert_int_eq(w.weight_type, CT_DTYPE_INT8);
    ck_assert_int_eq(w.out_type, CT_DTYPE_INT32);
    ck_assert_int_eq(w.n, 1);
    ck_assert_int_eq(w.c, 0);
    ck_assert_int_eq(w.k, 0);
    ck_assert_int_eq(w.groups, 1);
    for (int d = 0; d < CT_MAX_SPATIAL; d++) {
      ck_assert_int_eq(w.in[d], 0);
      ck_assert_int_eq(w.kernel[d], 0);
      ck_assert_int_eq(w.stride[d], 1);
      ck_assert_int_eq(w.dilation[d], 1);
      ck_assert_int_eq(w.pad_before[d], 0);
      ck_assert_int_eq(w.pad_after[d], 0);
    }
  }
}
END_TEST

START_TEST(nd_and_names) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  ck_assert_int_eq(workload_nd(&w), 2);
  workload_init(&w, CT_OP_CONV3D);
  ck_assert_int_eq(workload_nd(&w), 3);

  ck_assert_str_eq(workload_op_name(CT_OP_CONV2D), "conv2d");
  ck_assert_str_eq(workload_op_name(CT_OP_CONV3D), "conv3d");
  ck_assert_str_eq(workload_layout_name(CT_LAYOUT_NCHW, CT_OP_CONV2D), "nchw");
  ck_assert_str_eq(workload_layout_name(CT_LAYOUT_NCHW4C, CT_OP_CONV2D), "nchw4c");
  ck_assert_str_eq(workload_layout_name(CT_LAYOUT_NCHW, CT_OP_CONV3D), "ncdhw");
  ck_assert_str_eq(workload_layout_name(CT_LAYOUT_NCHW4C, CT_OP_CONV3D), "ncdhw4c");
  ck_assert_str_eq(workload_layout_name(CT_LAYOUT_NHWC, CT_OP_CONV2D), "nhwc");
  ck_assert_str_eq(workload_layout_name(CT_LAYOUT_NHWC, CT_OP_CONV3D), "ndhwc");
  ck_assert_str_eq(workload_dtype_name(CT_DTYPE_INT8), "int8");
  ck_assert_str_eq(workload_dtype_name(CT_DTYPE_UINT8), "uint8");
  ck_assert_str_eq(workload_dtype_name(CT_DTYPE_INT32), "int32");
  /* Out-of-range values get a placeholder, never NULL. */
  ck_assert_ptr_nonnull(workload_op_name((ct_op)7));
  ck_assert_ptr_nonnull(workload_layout_name((ct_layout)7, CT_OP_CONV2D));
  ck_assert_ptr_nonnull(workload_dtype_name((ct_dtype)7));
}
END_TEST

START_TEST(out_size_hand_computed) {
  /* ResNet-50 conv1: (224 + 3 + 3 - 7) / 2 + 1 = 112. */
  ct_workload w = conv2d(1, 3, 64, 224, 7, 2, 3);
  ck_assert_int_eq(workload_out_size(&w, 0), 112);
  ck_assert_int_eq(workload_out_size(&w, 1), 112);

  /* Stride 2 with padding: 3x3, pad 1 on 56: (56 + 2 - 3) / 2 + 1 = 28; on
   * an odd 57: (57 + 2 - 3) / 2 + 1 = 29. */
  w = conv2d(1, 64, 64, 56, 3, 2, 1);
  ck_assert_int_eq(workload_out_size(&w, 0), 28);
  w = conv2d(1, 64, 64, 57, 3, 2, 1);
  ck_assert_int_eq(workload_out_size(&w, 1), 29);
  /* Stride 2, 1x1, no padding on 56 -> 28; stride 3 on 10 -> 4 (0, 3, 6, 9). */
  w = conv2d(1, 8, 8, 56, 1, 2, 0);
  ck_assert_int_eq(workload_out_size(&w, 0), 28);
  w = conv2d(1, 8, 8, 10, 1, 3, 0);
  ck_assert_int_eq(workload_out_size(&w, 0), 4);

  /* Dilation 2: a 3x3 spans 5, so 10 -> 6 without padding, 10 with pad 2. */
  w = conv2d(1, 8, 8, 10, 3, 1, 0);
  w.dilation[0] = w.dilation[1] = 2;
  ck_assert_int_eq(workload_out_size(&w, 0), 6);
  w.pad_before[1] = w.pad_after[1] = 2;
  ck_assert_int_eq(workload_out_size(&w, 1), 10);
  /* Dilation 3 with stride 2: 3x3 spans 7; (20 - 7) / 2 + 1 = 7. */
  w = conv2d(1, 8, 8, 20, 3, 2, 0);
  w.dilation[0] = 3;
  ck_assert_int_eq(workload_out_size(&w, 0), 7);

  /* Asymmetric padding (TensorFlow SAME with stride 2 on an even size):
   * 7 + 0 + 1 = 8 padded, 3-wide, stride 2: (8 - 3) / 2 + 1 = 3. */
  w = conv2d(1, 8, 8, 7, 3, 2, 0);
  w.pad_after[0] = 1;
  ck_assert_int_eq(workload_out_size(&w, 0), 3);
  ck_assert_int_eq(workload_out_size(&w, 1), 3); /* (7 - 3) / 2 + 1 */
  /* pad 1 before, 2 after on 5 with a 2-wide kernel: 8 - 2 + 1 = 7. */
  w = conv2d(1, 8, 8, 5, 2, 1, 0);
  w.pad_before[1] = 1;
  w.pad_after[1] = 2;
  ck_assert_int_eq(workload_out_size(&w, 1), 7);
  ck_assert_int_eq(workload_out_size(&w, 0), 4);

  /* Non-square: 1x7 with pad (0, 3) keeps 17x17. */
  w = conv2d(1, 8, 8, 17, 1, 1, 0);
  w.kernel[1] = 7;
  w.pad_before[1] = w.pad_after[1] = 3;
  ck_assert_int_eq(workload_out_size(&w, 0), 17);
  ck_assert_int_eq(workload_out_size(&w, 1), 17);

  /* Output exactly 1: the kernel covers the input. */
  w = conv2d(1, 8, 8, 7, 7, 1, 0);
  ck_assert_int_eq(workload_out_size(&w, 0), 1);
  w = conv2d(1, 8, 8, 7, 7, 5, 0);
  ck_assert_int_eq(workload_out_size(&w, 0), 1);

  /* A kernel larger than the padded input gives no positive size. */
  w = conv2d(1, 8, 8, 2, 5, 1, 0);
  ck_assert_int_le(workload_out_size(&w, 0), 0);
}
END_TEST

START_TEST(out_size_3d_per_dimension) {
  /* ResNet3D-18 stem: D (16 + 2 - 3) / 1 + 1 = 16, H and W (112 + 6 - 7) / 2 + 1 = 56. */
  ct_workload w = stem3d(1);
  ck_assert_int_eq(workload_out_size(&w, 0), 16);
  ck_assert_int_eq(workload_out_size(&w, 1), 56);
  ck_assert_int_eq(workload_out_size(&w, 2), 56);

  /* A 3x1x1 temporal kernel, pad (1,0,0), stride (2,1,1) on 8x14x14: 4x14x14. */
  static const int in[3] = {8, 14, 14}, r[3] = {3, 1, 1}, s[3] = {2, 1, 1}, p[3] = {1, 0, 0};
  w = conv3d(1, 8, 8, in, r, s, p);
  ck_assert_int_eq(workload_out_size(&w, 0), 4);
  ck_assert_int_eq(workload_out_size(&w, 1), 14);
  ck_assert_int_eq(workload_out_size(&w, 2), 14);

  /* Different everything per dimension: D 9, k 3, d 2, s 2, pad 1/0 ->
   * (9 + 1 - 5) / 2 + 1 = 3; H 10, k 2, s 3, pad 0/2 -> (12 - 2) / 3 + 1 = 4;
   * W 5, k 5, s 1, pad 0 -> 1. */
  static const int in2[3] = {9, 10, 5}, r2[3] = {3, 2, 5}, s2[3] = {2, 3, 1}, p2[3] = {0, 0, 0};
  w = conv3d(1, 4, 4, in2, r2, s2, p2);
  w.dilation[0] = 2;
  w.pad_before[0] = 1;
  w.pad_after[1] = 2;
  ck_assert_int_eq(workload_out_size(&w, 0), 3);
  ck_assert_int_eq(workload_out_size(&w, 1), 4);
  ck_assert_int_eq(workload_out_size(&w, 2), 1);
}
END_TEST

START_TEST(ops_and_element_counts) {
  /* ResNet-50 conv1 at batch 1: 64 x 112 x 112 outputs, each 3 x 7 x 7
   * multiply-adds: 64*112*112*3*49 = 118013952 MACs, 2 ops each. */
  ct_workload w = conv2d(1, 3, 64, 224, 7, 2, 3);
  ck_assert_int_eq(workload_ops(&w), INT64_C(2) * 118013952);
  ck_assert_int_eq(workload_data_elems(&w), 3 * 224 * 224);
  ck_assert_int_eq(workload_weight_elems(&w), 64 * 3 * 7 * 7);
  ck_assert_int_eq(workload_out_elems(&w), 64 * 112 * 112);
  /* Ops and data scale with the batch; weights do not. */
  w.n = 16;
  ck_assert_int_eq(workload_ops(&w), INT64_C(32) * 118013952);
  ck_assert_int_eq(workload_data_elems(&w), 16 * 3 * 224 * 224);
  ck_assert_int_eq(workload_weight_elems(&w), 64 * 3 * 7 * 7);
  ck_assert_int_eq(workload_out_elems(&w), 16 * 64 * 112 * 112);

  /* ResNet-50 l2_3x3_128_s2 at batch 16, NCHW4c: C and K are multiples of 4,
   * so the packed counts equal the plain ones. */
  w = conv2d(16, 128, 128, 56, 3, 2, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(workload_data_elems(&w), 16 * 128 * 56 * 56);
  ck_assert_int_eq(workload_weight_elems(&w), 128 * 128 * 9);
  ck_assert_int_eq(workload_out_elems(&w), 16 * 128 * 28 * 28);
  ck_assert_int_eq(workload_ops(&w), INT64_C(2) * 16 * 128 * 28 * 28 * 128 * 9);

  /* NHWC holds the plain counts, unpadded: C 3 and K 5 stay 3 and 5. */
  w = conv2d(2, 3, 5, 7, 3, 2, 1);
  w.layout = CT_LAYOUT_NHWC;
  EXPECT_VALID(&w, "nhwc c 3 k 5");
  ck_assert_int_eq(workload_data_elems(&w), 2 * 3 * 7 * 7);
  ck_assert_int_eq(workload_weight_elems(&w), 5 * 3 * 3 * 3);
  /* (7 + 2 - 3) / 2 + 1 = 4 */
  ck_assert_int_eq(workload_out_elems(&w), 2 * 5 * 4 * 4);
  ck_assert_int_eq(workload_ops(&w), 2 * 2 * 5 * 4 * 4 * 3 * 9);
  /* ... and packed, the same convolution holds whole chunks of 4 */
  ct_workload pw;
  workload_packed(&w, &pw);
  ck_assert_int_eq(pw.layout, CT_LAYOUT_NCHW4C);
  ck_assert_int_eq(pw.c, 4);
  ck_assert_int_eq(pw.k, 8);
  ck_assert_int_eq(workload_out_size(&pw, 0), 4);
  ck_assert_int_eq(workload_data_elems(&pw), 2 * 4 * 7 * 7);
  ck_assert_int_eq(workload_out_elems(&pw), 2 * 8 * 4 * 4);

  /* Asymmetric, non-square: 2x5 input 9x11, 1x3 kernel, stride (2, 1), pad
   * (0,1) before (1,0) after: out (9+1-1)/2+1 = 5 by (11+1-3)/1+1 = 10. */
  w = conv2d(3, 5, 7, 9, 1, 1, 0);
  w.in[1] = 11;
  w.kernel[1] = 3;
  w.stride[0] = 2;
  w.pad_before[1] = 1;
  w.pad_after[0] = 1;
  ck_assert_int_eq(workload_out_elems(&w), 3 * 7 * 5 * 10);
  ck_assert_int_eq(workload_data_elems(&w), 3 * 5 * 9 * 11);
  ck_assert_int_eq(workload_weight_elems(&w), 7 * 5 * 1 * 3);
  ck_assert_int_eq(workload_ops(&w), 2 * 3 * 7 * 5 * 10 * 5 * 3);

  /* ResNet3D-18 stem at batch 2. */
  w = stem3d(2);
  ck_assert_int_eq(workload_data_elems(&w), 2 * 3 * 16 * 112 * 112);
  ck_assert_int_eq(workload_weight_elems(&w), 64 * 3 * 3 * 7 * 7);
  ck_assert_int_eq(workload_out_elems(&w), 2 * 64 * 16 * 56 * 56);
  ck_assert_int_eq(workload_ops(&w), INT64_C(2) * 2 * 64 * 16 * 56 * 56 * 3 * 3 * 7 * 7);
  w.layout = CT_LAYOUT_NHWC;
  w.k = 7;
  ck_assert_int_eq(workload_data_elems(&w), 2 * 3 * 16 * 112 * 112);
  ck_assert_int_eq(workload_weight_elems(&w), 7 * 3 * 3 * 7 * 7);
  ck_assert_int_eq(workload_out_elems(&w), 2 * 7 * 16 * 56 * 56);
}
END_TEST

START_TEST(geom_conv2d_is_d1_conv3d) {
  ct_workload w = conv2d(2, 12, 20, 9, 3, 2, 1);
  w.in[1] = 13;
  w.kernel[1] = 5;
  w.stride[1] = 3;
  w.pad_before[0] = 0;
  w.pad_after[1] = 4;
  w.dilation[0] = 2;
  geom3 g;
  memset(&g, 0x5A, sizeof g);
  workload_geom(&w, &g);
  ck_assert_int_eq(g.n, 2);
  ck_assert_int_eq(g.c, 12);
  ck_assert_int_eq(g.k, 20);
  /* D: a unit dimension. */
  ck_assert_int_eq(g.in[0], 1);
  ck_assert_int_eq(g.ker[0], 1);
  ck_assert_int_eq(g.str[0], 1);
  ck_assert_int_eq(g.pb[0], 0);
  ck_assert_int_eq(g.pa[0], 0);
  ck_assert_int_eq(g.dil[0], 1);
  ck_assert_int_eq(g.out[0], 1);
  /* H: 9, k 3 dilated 2 (span 5), stride 2, pad 0/1: (9 + 1 - 5) / 2 + 1 = 3. */
  ck_assert_int_eq(g.in[1], 9);
  ck_assert_int_eq(g.ker[1], 3);
  ck_assert_int_eq(g.str[1], 2);
  ck_assert_int_eq(g.pb[1], 0);
  ck_assert_int_eq(g.pa[1], 1);
  ck_assert_int_eq(g.dil[1], 2);
  ck_assert_int_eq(g.out[1], 3);
  /* W: 13, k 5, stride 3, pad 1/4: (13 + 5 - 5) / 3 + 1 = 5. */
  ck_assert_int_eq(g.in[2], 13);
  ck_assert_int_eq(g.ker[2], 5);
  ck_assert_int_eq(g.str[2], 3);
  ck_assert_int_eq(g.pb[2], 1);
  ck_assert_int_eq(g.pa[2], 4);
  ck_assert_int_eq(g.dil[2], 1);
  ck_assert_int_eq(g.out[2], 5);
}
END_TEST

START_TEST(geom_conv3d_copies_every_dimension) {
  ct_workload w = stem3d(4);
  w.pad_after[0] = 2;
  w.dilation[2] = 2;
  geom3 g;
  memset(&g, 0x5A, sizeof g);
  workload_geom(&w, &g);
  ck_assert_int_eq(g.n, 4);
  ck_assert_int_eq(g.c, 3);
  ck_assert_int_eq(g.k, 64);
  static const int64_t in[3] = {16, 112, 112}, ker[3] = {3, 7, 7}, str[3] = {1, 2, 2};
  static const int64_t pb[3] = {1, 3, 3}, pa[3] = {2, 3, 3}, dil[3] = {1, 1, 2};
  /* D (16 + 3 - 3) + 1 = 17; H 56; W span 13: (112 + 6 - 13) / 2 + 1 = 53. */
  static const int64_t out[3] = {17, 56, 53};
  for (int d = 0; d < 3; d++) {
    ck_assert_int_eq(g.in[d], in[d]);
    ck_assert_int_eq(g.ker[d], ker[d]);
    ck_assert_int_eq(g.str[d], str[d]);
    ck_assert_int_eq(g.pb[d], pb[d]);
    ck_assert_int_eq(g.pa[d], pa[d]);
    ck_assert_int_eq(g.dil[d], dil[d]);
    ck_assert_int_eq(g.out[d], out[d]);
  }
}
END_TEST

START_TEST(out_shape_strings) {
  char buf[64];
  ct_workload w = conv2d(1, 3, 64, 224, 7, 2, 3);
  ck_assert_str_eq(workload_out_shape(&w, buf, sizeof buf), "1x64x112x112");
  ck_assert_ptr_eq(workload_out_shape(&w, buf, sizeof buf), buf);
  w = conv2d(1, 64, 64, 56, 3, 1, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_str_eq(workload_out_shape(&w, buf, sizeof buf), "1x16x56x56x4");
  w = conv2d(16, 64, 128, 56, 3, 2, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_str_eq(workload_out_shape(&w, buf, sizeof buf), "16x32x28x28x4");
  /* Non-square output: H 9 -> 9, W 9 with 1x3 stride 2 -> 4. */
  w = conv2d(2, 5, 7, 9, 1, 1, 0);
  w.kernel[1] = 3;
  w.stride[1] = 2;
  ck_assert_str_eq(workload_out_shape(&w, buf, sizeof buf), "2x7x9x4");
  w = stem3d(2);
  ck_assert_str_eq(workload_out_shape(&w, buf, sizeof buf), "2x64x16x56x56");
  w.c = 4;
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_str_eq(workload_out_shape(&w, buf, sizeof buf), "2x16x16x56x56x4");
  /* Channels last: N x [OD x] OH x OW x K, K unpadded. */
  w = conv2d(16, 64, 64, 56, 3, 1, 1);
  w.layout = CT_LAYOUT_NHWC;
  ck_assert_str_eq(workload_out_shape(&w, buf, sizeof buf), "16x56x56x64");
  w = conv2d(2, 3, 5, 9, 1, 1, 0);
  w.kernel[1] = 3;
  w.stride[1] = 2;
  w.layout = CT_LAYOUT_NHWC;
  ck_assert_str_eq(workload_out_shape(&w, buf, sizeof buf), "2x9x4x5");
  w = stem3d(2);
  w.layout = CT_LAYOUT_NHWC;
  w.k = 7;
  ck_assert_str_eq(workload_out_shape(&w, buf, sizeof buf), "2x16x56x56x7");
  int64_t dims[CT_MAX_SPATIAL + 3];
  ck_assert_int_eq(workload_out_dims(&w, dims), 5);
  ck_assert_int_eq(dims[0], 2);
  ck_assert_int_eq(dims[1], 16);
  ck_assert_int_eq(dims[3], 56);
  ck_assert_int_eq(dims[4], 7);
  w = stem3d(2);
  w.c = 4;
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(workload_out_dims(&w, dims), 6);
  ck_assert_int_eq(dims[1], 16);
  ck_assert_int_eq(dims[5], 4);
  /* A short buffer is truncated, never overrun. */
  char small[6];
  memset(small, 'Z', sizeof small);
  workload_out_shape(&w, small, sizeof small);
  ck_assert_str_eq(small, "2x16x");
}
END_TEST

/* ---- validation ------------------------------------------------------------ */

START_TEST(validate_rejects_each_field) {
  const ct_workload base = conv2d(2, 64, 64, 56, 3, 1, 1);
  EXPECT_VALID(&base, "base");
  ct_workload w;

  w = base, w.n = 0;
  EXPECT_INVALID(&w, "n = 0", "n (batch)", NULL);
  w = base, w.n = -3;
  EXPECT_INVALID(&w, "n = -3", "n (batch)", "-3");
  w = base, w.c = 0;
  EXPECT_INVALID(&w, "c = 0", "c (input channels)", NULL);
  w = base, w.k = 0;
  EXPECT_INVALID(&w, "k = 0", "k (output channels)", NULL);
  w = base, w.in[0] = 0;
  EXPECT_INVALID(&w, "h = 0", "h (input size)", NULL);
  w = base, w.in[1] = -1;
  EXPECT_INVALID(&w, "w = -1", "w (input size)", NULL);
  w = base, w.kernel[0] = 0;
  EXPECT_INVALID(&w, "kernel h = 0", "kernel[h]", NULL);
  w = base, w.kernel[1] = 0;
  EXPECT_INVALID(&w, "kernel w = 0", "kernel[w]", NULL);
  w = base, w.stride[0] = 0;
  EXPECT_INVALID(&w, "stride h = 0", "stride[h]", NULL);
  w = base, w.stride[1] = -2;
  EXPECT_INVALID(&w, "stride w = -2", "stride[w]", NULL);
  w = base, w.dilation[1] = 0;
  EXPECT_INVALID(&w, "dilation w = 0", "dilation[w]", NULL);
  w = base, w.pad_before[0] = -1;
  EXPECT_INVALID(&w, "pad before h = -1", "pad[h]", NULL);
  w = base, w.pad_after[1] = -1;
  EXPECT_INVALID(&w, "pad after w = -1", "pad[w]", NULL);
  /* Output size 0: a 7x7 on 4x4 padded to 6x6; and dilation 3 on a 3x3
   * (span 7) over 4 + 1 + 1. */
  w = conv2d(1, 8, 8, 4, 7, 1, 1);
  EXPECT_INVALID(&w, "kernel larger than padded input", "output size along h", NULL);
  w = conv2d(1, 8, 8, 4, 3, 1, 1);
  w.dilation[1] = 3;
  EXPECT_INVALID(&w, "dilated kernel larger than padded input", "output size along w", NULL);
  /* Packed layout: channels in fours. */
  w = base, w.layout = CT_LAYOUT_NCHW4C, w.c = 6;
  EXPECT_INVALID(&w, "c = 6 nchw4c", "c (input channels)", "multiple of 4");
  w = base, w.layout = CT_LAYOUT_NCHW4C, w.k = 6;
  EXPECT_INVALID(&w, "k = 6 nchw4c", "k (output channels)", "multiple of 4");
  w = base, w.layout = CT_LAYOUT_NCHW4C, w.c = 3;
  EXPECT_INVALID(&w, "c = 3 nchw4c", "c (input channels)", "nchw4c");
  EXPECT_INVALID(&w, "c = 3 nchw4c", "c (input channels)", "nhwc");
  /* Channels last: any C and K, but no depth_to_space (the message names
   * the layouts that have it). */
  w = base, w.layout = CT_LAYOUT_NHWC, w.c = 3, w.k = 5;
  EXPECT_VALID(&w, "c = 3, k = 5 nhwc");
  w = base, w.layout = CT_LAYOUT_NHWC, w.c = 1, w.k = 1;
  EXPECT_VALID(&w, "c = 1, k = 1 nhwc");
  w = base, w.layout = CT_LAYOUT_NHWC, w.c = 0;
  EXPECT_INVALID(&w, "c = 0 nhwc", "c (input channels)", NULL);
  w = base, w.layout = CT_LAYOUT_NHWC, w.k = 0;
  EXPECT_INVALID(&w, "k = 0 nhwc", "k (output channels)", NULL);
  w = base, w.layout = CT_LAYOUT_NHWC, w.out_type = CT_DTYPE_INT8, w.epi.d2s_block = 2;
  EXPECT_INVALID(&w, "d2s nhwc", "depth_to_space", "nhwc");
  EXPECT_INVALID(&w, "d2s nhwc", "nchw or nchw4c", NULL);
  w.epi.d2s_mode = CT_D2S_CRD, w.out_type = CT_DTYPE_INT32;
  EXPECT_INVALID(&w, "d2s crd int32 nhwc", "not supported with layout nhwc", NULL);
  /* every other epilogue field is as for the other layouts */
  w = base, w.layout = CT_LAYOUT_NHWC, w.c = 3, w.k = 5, w.data_type = CT_DTYPE_UINT8;
  w.out_type = CT_DTYPE_UINT8;
  w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = w.epi.residual = 1;
  w.epi.scale = CT_SCALE_CHANNEL;
  EXPECT_VALID(&w, "nhwc with every epilogue but d2s");
  w = base, w.layout = CT_LAYOUT_NHWC, w.epi.residual = 1;
  EXPECT_INVALID(&w, "residual with int32 output nhwc", "residual", "int8");
  w = base, w.groups = 0;
  EXPECT_INVALID(&w, "groups = 0", "groups", NULL);
  w = base, w.c = 6, w.k = 8, w.groups = 4;
  EXPECT_INVALID(&w, "groups 4 of c 6", "groups (4) must divide", "depthwise");
  w = base, w.c = 8, w.k = 6, w.groups = 4;
  EXPECT_INVALID(&w, "groups 4 of k 6", "groups (4) must divide", NULL);
  w = base, w.c = 8, w.k = 16, w.groups = 8;
  EXPECT_VALID(&w, "depthwise with multiplier 2");
  w = base, w.layout = CT_LAYOUT_NHWC, w.c = 6, w.k = 9, w.groups = 3;
  EXPECT_VALID(&w, "grouped nhwc, odd channels");
  w = base, w.layout = CT_LAYOUT_NCHW4C, w.c = 8, w.k = 8, w.groups = 8;
  EXPECT_VALID(&w, "depthwise nchw4c");
  /* Types that are not supported. */
  w = base, w.data_type = CT_DTYPE_INT32;
  EXPECT_INVALID(&w, "int32 data", "data_type", "uint8");
  w = base, w.weight_type = CT_DTYPE_UINT8;
  EXPECT_INVALID(&w, "uint8 weights", "weight_type", NULL);
  /* Epilogues that do not fit the output type, or each other. */
  w = base, w.epi.residual = 1;
  EXPECT_INVALID(&w, "residual with int32 output", "residual", "int8");
  w = base, w.epi.scale = CT_SCALE_CHANNEL;
  EXPECT_INVALID(&w, "per-channel scale with int32 output", "per-channel", NULL);
  w = base, w.out_type = CT_DTYPE_INT8, w.epi.bias = 2;
  EXPECT_INVALID(&w, "bias 2", "bias", "0 or 1");
  w = base, w.out_type = CT_DTYPE_INT8, w.epi.scale = (ct_scale_mode)2;
  EXPECT_INVALID(&w, "scale 2", "scale", NULL);
  w = base, w.epi.d2s_block = 1;
  EXPECT_INVALID(&w, "d2s block 1", "depth_to_space block", "2 to 16");
  w = base, w.epi.d2s_block = 3;
  EXPECT_INVALID(&w, "k not a multiple of b^2", "multiple of 9", NULL);
  w = base, w.epi.d2s_mode = CT_D2S_CRD;
  EXPECT_INVALID(&w, "d2s mode without block", "block size is 0", NULL);
  w = base, w.epi.d2s_block = 2, w.epi.d2s_mode = (ct_d2s_mode)3;
  EXPECT_INVALID(&w, "d2s mode 3", "depth_to_space mode", NULL);
  /* onnx rounding: 8-bit output only; the enum's values only */
  w = base, w.out_type = CT_DTYPE_UINT8, w.epi.rounding = CT_ROUND_ONNX;
  EXPECT_VALID(&w, "onnx rounding, uint8 out");
  w.epi.weight_zero_point = w.epi.residual = 1, w.epi.scale = CT_SCALE_CHANNEL;
  EXPECT_VALID(&w, "onnx rounding with weight zero points, a residual, per channel");
  w = base, w.epi.rounding = CT_ROUND_ONNX;
  EXPECT_INVALID(&w, "onnx rounding, int32 out", "rounding onnx", "int8 or uint8 output");
  w = base, w.out_type = CT_DTYPE_INT8, w.epi.rounding = (ct_rounding)2;
  EXPECT_INVALID(&w, "rounding 2", "rounding", "gemmlowp (0) or onnx (1), got 2");
  /* Values outside the enums. */
  w = base, w.op = (ct_op)4;
  EXPECT_INVALID(&w, "op 4", "op", NULL);
  w = base, w.layout = (ct_layout)5;
  EXPECT_INVALID(&w, "layout 5", "layout", "nchw, nchw4c or nhwc");
}
END_TEST

START_TEST(validate_rejects_conv3d_fields) {
  const ct_workload base = stem3d(1);
  EXPECT_VALID(&base, "stem");
  ct_workload w;
  w = base, w.in[0] = 0;
  EXPECT_INVALID(&w, "d = 0", "d (input size)", NULL);
  w = base, w.kernel[0] = 0;
  EXPECT_INVALID(&w, "kernel d = 0", "kernel[d]", NULL);
  w = base, w.stride[2] = 0;
  EXPECT_INVALID(&w, "stride w = 0", "stride[w]", NULL);
  w = base, w.dilation[0] = 0;
  EXPECT_INVALID(&w, "dilation d = 0", "dilation[d]", NULL);
  w = base, w.pad_after[0] = -2;
  EXPECT_INVALID(&w, "pad after d = -2", "pad[d]", NULL);
  /* Depth 2 without padding is shorter than a 3-deep kernel. */
  w = base, w.in[0] = 2, w.pad_before[0] = w.pad_after[0] = 0;
  EXPECT_INVALID(&w, "kernel deeper than input", "output size along d", NULL);
  w = base, w.layout = CT_LAYOUT_NCHW4C;
  EXPECT_INVALID(&w, "c = 3 ncdhw4c", "c (input channels)", "ncdhw4c");
  w = base, w.layout = CT_LAYOUT_NHWC;
  EXPECT_VALID(&w, "stem ndhwc, c = 3");
  w = base, w.layout = CT_LAYOUT_NHWC, w.k = 8, w.epi.d2s_block = 2;
  EXPECT_INVALID(&w, "d2s ndhwc", "depth_to_space", "ncdhw or ncdhw4c");
  w = base, w.layout = (ct_layout)3;
  EXPECT_INVALID(&w, "layout 3 conv3d", "layout", "ncdhw, ncdhw4c or ndhwc");
}
END_TEST

START_TEST(validate_rejects_over_int32_elements) {
  /* Data: 1024 x 256 x 112 x 112 = 3.3e9. */
  ct_workload w = conv2d(1024, 256, 64, 112, 1, 1, 0);
  EXPECT_INVALID(&w, "data over int32", "data", "int32");
  /* Weights: 65536 x 65536 x 1 x 1 = 2^32. */
  w = conv2d(1, 65536, 65536, 1, 1, 1, 0);
  EXPECT_INVALID(&w, "weights over int32", "weights", "int32");
  /* Output only: 1 x 40000 x 40000 data fits (1.6e9), 2 channels out do not. */
  w = conv2d(1, 1, 2, 40000, 1, 1, 0);
  EXPECT_INVALID(&w, "output over int32", "output", "int32");
  /* Exactly at the limit is accepted, one over is not: 2^31 - 2 and 2^31. */
  w = conv2d(1, 1, 1, 1, 1, 1, 0);
  w.in[0] = 2;
  w.in[1] = (1 << 30) - 1;
  EXPECT_VALID(&w, "2^31 - 2 elements");
  w.in[1] = 1 << 30;
  EXPECT_INVALID(&w, "2^31 elements", "int32", NULL);
  w.in[0] = 1;
  w.in[1] = INT32_MAX;
  EXPECT_VALID(&w, "INT32_MAX elements");
  /* ResNet3D stem at batch 256: 256 x 64 x 16 x 56 x 56 = 8.2e8 outputs, fine;
   * at 1024 the output is 3.3e9. */
  w = stem3d(256);
  EXPECT_VALID(&w, "stem batch 256");
  w = stem3d(1024);
  EXPECT_INVALID(&w, "stem batch 1024", "output", "int32");
}
END_TEST

/* Element counts whose int64 product wraps must still be rejected, not
 * wrapped into a small or negative count that passes the int32 limit. */
START_TEST(validate_rejects_counts_that_overflow_int64) {
  /* conv2d: data is 65536^4 = 2^64 elements (wraps to 0 in int64);
   * weights 65536 and output 65536 (stride 65536 gives one pixel) are fine. */
  ct_workload w = conv2d(65536, 65536, 1, 65536, 1, 65536, 0);
  EXPECT_INVALID(&w, "data 2^64 elements", "data", "int32");
  /* The same through a key: it must not parse into a workload. */
  ct_err err = {0};
  ct_workload got;
  ct_status st = workload_from_key(
      "conv2d-nchw-i8.i8.i32-n65536-c65536-k1-65536x65536-r1x1-s65536x65536-p0x0.0x0-d1x1", &got,
      &err);
  EXPECT_ERR(st, CT_ERR_INVALID_WORKLOAD, &err, "key of a 2^64-element workload", "int32", NULL);
  /* conv3d: data 2^21 cubed = 2^63 elements (wraps to INT64_MIN). */
  static const int in[3] = {1 << 21, 1 << 21, 1 << 21}, r[3] = {1, 1, 1};
  static const int s[3] = {1 << 21, 1 << 21, 1 << 21}, p[3] = {0, 0, 0};
  w = conv3d(1, 1, 1, in, r, s, p);
  EXPECT_INVALID(&w, "data 2^63 elements", "data", "int32");
}
END_TEST

START_TEST(validate_accepts_edge_cases) {
  ct_workload w;
  w = conv2d(1, 1, 1, 1, 1, 1, 0);
  EXPECT_VALID(&w, "1x1 on 1x1, one channel");
  w = conv2d(3, 64, 64, 56, 1, 1, 0);
  EXPECT_VALID(&w, "1x1");
  w = conv2d(1, 3, 64, 224, 7, 2, 3);
  EXPECT_VALID(&w, "7x7 stride 2 pad 3");
  w = conv2d(1, 8, 8, 17, 1, 1, 0);
  w.kernel[1] = 7, w.pad_before[1] = w.pad_after[1] = 3;
  EXPECT_VALID(&w, "1x7");
  w = conv2d(1, 8, 8, 17, 7, 1, 0);
  w.kernel[1] = 1, w.pad_before[0] = w.pad_after[0] = 3;
  EXPECT_VALID(&w, "7x1");
  w = conv2d(1, 8, 8, 7, 7, 1, 0);
  EXPECT_VALID(&w, "output exactly 1");
  w = conv2d(1, 8, 8, 4, 7, 1, 0);
  w.pad_before[0] = w.pad_before[1] = 3;
  EXPECT_VALID(&w, "output exactly 1 thanks to padding before only");
  w = conv2d(1, 8, 8, 5, 3, 7, 0);
  EXPECT_VALID(&w, "stride larger than input");
  w = conv2d(1, 8, 8, 5, 3, 1, 4);
  EXPECT_VALID(&w, "padding larger than the kernel");
  w = conv2d(1, 4, 4, 9, 3, 1, 0);
  w.layout = CT_LAYOUT_NCHW4C, w.dilation[0] = w.dilation[1] = 4;
  EXPECT_VALID(&w, "nchw4c, dilation 4, output 1");
  static const int in[3] = {8, 14, 14}, r[3] = {3, 1, 1}, s[3] = {1, 1, 1}, p[3] = {1, 0, 0};
  w = conv3d(2, 16, 32, in, r, s, p);
  EXPECT_VALID(&w, "3x1x1 conv3d");
  w = stem3d(16);
  EXPECT_VALID(&w, "ResNet3D stem batch 16");
  /* Unused dimensions of a conv2d are ignored, whatever they hold. */
  w = conv2d(1, 8, 8, 7, 3, 1, 1);
  w.in[2] = w.kernel[2] = w.stride[2] = w.dilation[2] = 0;
  w.pad_before[2] = w.pad_after[2] = -5;
  EXPECT_VALID(&w, "junk in the third dimension of a conv2d");
}
END_TEST

START_TEST(validate_null_is_invalid_arg) {
  ct_err err = {0};
  EXPECT_ERR(workload_validate(NULL, &err), CT_ERR_INVALID_ARG, &err, "NULL workload", "NULL",
             NULL);
  ck_assert_int_eq(workload_validate(NULL, NULL), CT_ERR_INVALID_ARG);
}
END_TEST

/* ---- key ------------------------------------------------------------------- */

/* Groups (issue 35): the trailing -gG segment, what the weights and the ops
 * count, and which layouts serve a grouped workload. */
START_TEST(key_groups) {
  char key[CT_KEY_MAX];
  ct_workload w = conv2d(32, 144, 144, 56, 3, 1, 1), back;
  w.layout = CT_LAYOUT_NHWC;
  w.groups = 144;
  w.out_type = CT_DTYPE_INT8;
  w.epi.bias = 1;
  w.epi.rounding = CT_ROUND_ONNX;
  ck_assert_str_eq(
      workload_key(&w, key, sizeof key),
      "conv2d-nhwc-i8.i8.i8-n32-c144-k144-56x56-r3x3-s1x1-p1x1.1x1-d1x1-bias-onnx-g144");
  ct_err err;
  err_clear(&err);
  ck_assert_int_eq(workload_from_key(key, &back, &err), CT_OK);
  ck_assert_int_eq(back.groups, 144);
  ck_assert_mem_eq(&back, &w, sizeof w);
  ck_assert_int_eq(workload_weight_elems(&w), 144 * 1 * 9);
  ck_assert_int_eq(workload_ops(&w), (int64_t)2 * 32 * 144 * 56 * 56 * 9);
  ck_assert_int_eq(workload_cpg(&w), 1);
  /* -g1 is not canonical, nor -g before the epilogue */
  ck_assert_int_eq(
      workload_from_key("conv2d-nchw-i8.i8.i32-n1-c8-k8-7x7-r3x3-s1x1-p1x1.1x1-d1x1-g1", &back,
                        &err),
      CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "d1x1'"));
  ck_assert_int_eq(
      workload_from_key("conv2d-nhwc-i8.i8.i8-n1-c8-k8-7x7-r3x3-s1x1-p1x1.1x1-d1x1-g8-bias", &back,
                        &err),
      CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "-bias-g8"));
  ck_assert_int_eq(
      workload_from_key("conv2d-nchw-i8.i8.i32-n1-c8-k8-7x7-r3x3-s1x1-p1x1.1x1-d1x1-g3", &back,
                        &err),
      CT_ERR_INVALID_WORKLOAD);
  /* ResNeXt's 4 channels a group, packed: weights K x 4 x 9 */
  w = conv2d(1, 128, 128, 56, 3, 1, 1);
  w.groups = 32;
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(workload_weight_elems(&w), 128 * 4 * 9);
  /* packed depthwise: a group's one channel is a chunk of 4 */
  w.groups = 128;
  ck_assert_int_eq(workload_weight_elems(&w), 128 * 4 * 9);
  /* plain NCHW is packed only when C and K are multiples of 4 */
  ct_workload pw;
  w.layout = CT_LAYOUT_NCHW;
  ck_assert_int_eq(workload_for_layout(&w, CT_LAYOUT_NCHW4C, &pw), 1);
  ck_assert_int_eq(pw.c, 128);
  ck_assert_int_eq(pw.groups, 128);
  w = conv2d(1, 6, 6, 9, 3, 1, 1);
  w.groups = 6;
  ck_assert_int_eq(workload_for_layout(&w, CT_LAYOUT_NCHW4C, &pw), 0);
  ck_assert_int_eq(workload_for_layout(&w, CT_LAYOUT_NHWC, &pw), 0);
  /* JSON keeps it */
  cJSON *j = workload_to_json(&w);
  ck_assert_int_eq(workload_from_json(j, &back, &err), CT_OK);
  ck_assert_int_eq(back.groups, 6);
  cJSON_Delete(j);
}
END_TEST

START_TEST(key_exact_strings) {
  char key[CT_KEY_MAX];
  ct_workload w = conv2d(16, 64, 64, 56, 3, 2, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_str_eq(workload_key(&w, key, sizeof key),
                   "conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1");
  ck_assert_ptr_eq(workload_key(&w, key, sizeof key), key);

  w = conv2d(1, 3, 64, 224, 7, 2, 3);
  ck_assert_str_eq(workload_key(&w, key, sizeof key),
                   "conv2d-nchw-i8.i8.i32-n1-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1");

  /* Every spatial field outermost first, pads befores then afters. */
  w = conv2d(2, 5, 7, 10, 3, 1, 0);
  w.in[1] = 12;
  w.kernel[1] = 5;
  w.stride[1] = 2;
  w.pad_before[0] = 0, w.pad_before[1] = 1;
  w.pad_after[0] = 2, w.pad_after[1] = 3;
  w.dilation[1] = 2;
  ck_assert_str_eq(workload_key(&w, key, sizeof key),
                   "conv2d-nchw-i8.i8.i32-n2-c5-k7-10x12-r3x5-s1x2-p0x1.2x3-d1x2");

  w = stem3d(8);
  ck_assert_str_eq(workload_key(&w, key, sizeof key),
                   "conv3d-ncdhw-i8.i8.i32-n8-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1");
  w.c = 4;
  w.layout = CT_LAYOUT_NCHW4C;
  w.pad_after[0] = 0;
  w.dilation[2] = 2;
  ck_assert_str_eq(
      workload_key(&w, key, sizeof key),
      "conv3d-ncdhw4c-i8.i8.i32-n8-c4-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.0x3x3-d1x1x2");

  /* Parsing the exact strings gives the workloads back. */
  ct_workload got;
  ct_err err = {0};
  ck_assert_int_eq(workload_from_key(key, &got, &err), CT_OK);
  ck_assert_mem_eq(&got, &w, sizeof w);
  ck_assert_int_eq(
      workload_from_key("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", &got,
                        &err),
      CT_OK);
  w = conv2d(16, 64, 64, 56, 3, 2, 1);
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_mem_eq(&got, &w, sizeof w);

  /* Channels last: "nhwc" / "ndhwc", channels as given. */
  w = conv2d(16, 3, 5, 56, 3, 2, 1);
  w.layout = CT_LAYOUT_NHWC;
  ck_assert_str_eq(workload_key(&w, key, sizeof key),
                   "conv2d-nhwc-i8.i8.i32-n16-c3-k5-56x56-r3x3-s2x2-p1x1.1x1-d1x1");
  memset(&got, 0x5A, sizeof got);
  ck_assert_int_eq(workload_from_key(key, &got, &err), CT_OK);
  ck_assert_mem_eq(&got, &w, sizeof w);
  w = stem3d(2);
  w.layout = CT_LAYOUT_NHWC;
  w.data_type = CT_DTYPE_UINT8;
  w.out_type = CT_DTYPE_INT8;
  w.epi.data_zero_point = w.epi.bias = w.epi.residual = 1;
  ck_assert_str_eq(
      workload_key(&w, key, sizeof key),
      "conv3d-ndhwc-u8.i8.i8-n2-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1-zd-bias-res");
  memset(&got, 0x5A, sizeof got);
  ck_assert_int_eq(workload_from_key(key, &got, &err), CT_OK);
  ck_assert_mem_eq(&got, &w, sizeof w);
}
END_TEST

START_TEST(key_round_trip_random) {
  ct_workload *ws = random_workloads(0x9E3779B9u);
  int n_3d = 0, n_packed = 0, n_nhwc = 0, n_asym = 0, n_dil = 0;
  for (int i = 0; i < N_RANDOM; i++) {
    char key[CT_KEY_MAX], again[CT_KEY_MAX];
    workload_key(&ws[i], key, sizeof key);
    ct_workload got;
    ct_err err = {0};
    memset(&got, 0x5A, sizeof got);
    ct_status st = workload_from_key(key, &got, &err);
    if (st != CT_OK) ck_abort_msg("case %d: key %s rejected: %s", i, key, err.msg);
    if (memcmp(&got, &ws[i], sizeof got))
      ck_abort_msg("case %d: key %s parses to %s", i, key, workload_key(&got, again, sizeof again));
    n_3d += ws[i].op == CT_OP_CONV3D;
    n_packed += ws[i].layout == CT_LAYOUT_NCHW4C;
    n_nhwc += ws[i].layout == CT_LAYOUT_NHWC;
    n_asym += ws[i].pad_before[0] != ws[i].pad_after[0];
    n_dil += ws[i].dilation[0] > 1;
  }
  /* The generator covers what it claims to. */
  ck_assert_int_gt(n_3d, N_RANDOM / 4);
  ck_assert_int_lt(n_3d, 3 * N_RANDOM / 4);
  ck_assert_int_gt(n_packed, N_RANDOM / 4);
  ck_assert_int_gt(n_nhwc, N_RANDOM / 4);
  ck_assert_int_gt(n_asym, N_RANDOM / 4);
  ck_assert_int_gt(n_dil, N_RANDOM / 10);
  free(ws);
}
END_TEST

START_TEST(key_distinct_for_distinct_workloads) {
  ct_workload *ws = random_workloads(12345u);
  char(*keys)[CT_KEY_MAX] = xmalloc(N_RANDOM * sizeof *keys);
  for (int i = 0; i < N_RANDOM; i++) workload_key(&ws[i], keys[i], sizeof keys[i]);
  for (int i = 0; i < N_RANDOM; i++)
    for (int j = 0; j < i; j++) {
      int same_w = memcmp(&ws[i], &ws[j], sizeof ws[i]) == 0;
      int same_k = strcmp(keys[i], keys[j]) == 0;
      if (same_w != same_k)
        ck_abort_msg("cases %d and %d: workloads %s, keys %s and %s", j, i,
                     same_w ? "equal" : "differ", keys[j], keys[i]);
    }
  free(keys);
  free(ws);

  /* Hand-made near misses. */
  char a[CT_KEY_MAX], b[CT_KEY_MAX];
  ct_workload w = conv2d(1, 8, 8, 10, 3, 1, 0), v;
  w.pad_before[0] = 1; /* pad (1,0) before, (0,0) after */
  v = w, v.pad_before[0] = 0, v.pad_after[0] = 1;
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  v = w, v.in[1] = 11;
  w.in[0] = 11; /* 11x10 against 10x11 */
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  v = w, v.layout = CT_LAYOUT_NCHW4C;
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  v = w, v.layout = CT_LAYOUT_NHWC;
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  v = w, v.stride[1] = 2;
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  v = w, v.dilation[0] = 2;
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  v = w, v.c = 80, v.k = 1; /* c8 k8 against c80 k1: no run-together digits */
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  /* A conv3d with D = 1 is still a different workload from the conv2d. */
  static const int in[3] = {1, 10, 10}, r[3] = {1, 3, 3}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  v = conv3d(1, 8, 8, in, r, s, p);
  w = conv2d(1, 8, 8, 10, 3, 1, 0);
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
}
END_TEST

/* workload_from_key must reject key with want, naming needle. */
static void expect_bad_key_at(int line, const char *key, ct_status want, const char *needle,
                              const char *needle2) {
  ct_workload got;
  ct_err err = {0};
  expect_err_at(line, workload_from_key(key, &got, &err), want, &err, key, needle, needle2);
}
#define EXPECT_BAD_KEY(key, want, needle, needle2)                                                 \
  expect_bad_key_at(__LINE__, (key), (want), (needle), (needle2))

START_TEST(key_malformed_rejected) {
  /* The good key these are variations of. */
  const char *good = "conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1";
  ct_workload got;
  ct_err err = {0};
  ck_assert_int_eq(workload_from_key(good, &got, &err), CT_OK);

  EXPECT_BAD_KEY("", CT_ERR_PARSE, "malformed op", NULL);
  EXPECT_BAD_KEY("conv2d", CT_ERR_PARSE, "malformed op", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64", CT_ERR_PARSE, "malformed k", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1", CT_ERR_PARSE,
                 "malformed dilation", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d", CT_ERR_PARSE,
                 "malformed dilation", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1", CT_ERR_PARSE,
                 "malformed dilation", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1-d1x1", CT_ERR_PARSE,
                 "malformed pad", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.-d1x1", CT_ERR_PARSE,
                 "malformed pad", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1-x",
                 CT_ERR_PARSE, "malformed epilogue", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1 ", CT_ERR_PARSE,
                 "malformed epilogue", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1x1",
                 CT_ERR_PARSE, "malformed epilogue", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i8-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1-d2s2xyz",
                 CT_ERR_PARSE, "malformed epilogue", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i8-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1-ONNX",
                 CT_ERR_PARSE, "malformed epilogue", "[-d2sBMODE][-onnx]");
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i8-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1-onnx1",
                 CT_ERR_PARSE, "malformed epilogue", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i8-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1-on",
                 CT_ERR_PARSE, "malformed epilogue", NULL);
  /* parsed, but not in canonical order */
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i8-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1-bias-zd",
                 CT_ERR_PARSE, "canonical", "-zd-bias");
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i8-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1-onnx-res",
                 CT_ERR_PARSE, "canonical", "-res-onnx");
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i8-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1-onnx-d2s2dcr",
                 CT_ERR_PARSE, "canonical", "-d2s2dcr-onnx");
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i8-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1-onnx-onnx",
                 CT_ERR_PARSE, "canonical", "d1x1-onnx'");
  EXPECT_BAD_KEY("conv1d-nchw-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed op", NULL);
  EXPECT_BAD_KEY("Conv2d-nchw-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed op", NULL);
  EXPECT_BAD_KEY("conv2d-nhcw-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed layout", NULL);
  EXPECT_BAD_KEY("conv2d-nhwc4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed dtypes", NULL);
  /* the 2D and 3D names are not interchangeable */
  EXPECT_BAD_KEY("conv2d-ndhwc-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed layout", NULL);
  EXPECT_BAD_KEY("conv3d-nhwc-i8.i8.i32-n1-c64-k64-8x56x56-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1",
                 CT_ERR_PARSE, "malformed layout", NULL);
  EXPECT_BAD_KEY("conv2d-ncdhw-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed layout", NULL);
  EXPECT_BAD_KEY("conv3d-nchw-i8.i8.i32-n1-c64-k64-8x56x56-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1",
                 CT_ERR_PARSE, "malformed layout", NULL);
  EXPECT_BAD_KEY("conv2d-nchw-f32.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed dtypes", NULL);
  EXPECT_BAD_KEY("conv2d-nchw-i8.i8-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed dtypes", NULL);
  /* Letters, signs and overflow in numbers. */
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n1b-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed c", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-nx-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed n", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56xa6-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed input size", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p-1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed pad", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n+16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed n", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64- 56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed input size", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n99999999999-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1",
                 CT_ERR_PARSE, "malformed n", NULL);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1\n",
                 CT_ERR_PARSE, "malformed epilogue", NULL);
  /* A conv3d key needs three values everywhere. */
  EXPECT_BAD_KEY("conv3d-ncdhw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed input size", NULL);
  /* Fields out of order. */
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-c64-n16-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "malformed n", NULL);
  /* The message shows the grammar. */
  EXPECT_BAD_KEY("nonsense", CT_ERR_PARSE, "nonsense", "conv2d-nchw-i8.i8.i32-n1-");

  EXPECT_ERR(workload_from_key(NULL, &got, &err), CT_ERR_INVALID_ARG, &err, "NULL key", "NULL",
             NULL);
}
END_TEST

/* err's message says its reason within CT_ERRMSG_MAX and quotes at most a
 * short excerpt of a long input (issue 33, defect 7). */
static void expect_short_message(const ct_err *err, const char *reason) {
  ck_assert_msg(strstr(err->msg, reason), "message '%s' lost its reason '%s'", err->msg, reason);
  ck_assert_msg(strlen(err->msg) < CT_ERRMSG_MAX - 1, "message cut: '%s'", err->msg);
  char run[CT_EXCERPT_BYTES + 2];
  memset(run, 'x', sizeof run - 1);
  run[sizeof run - 1] = '\0';
  ck_assert_msg(!strstr(err->msg, run), "message quotes too much: '%s'", err->msg);
}

START_TEST(long_key_message_keeps_reason) {
  char key[2100];
  ct_workload got;
  ct_err err = {0};
  /* a bogus key, 2000 bytes of junk after an escape byte */
  snprintf(key, sizeof key, "conv2d-nchw-\x1b");
  size_t len = strlen(key);
  memset(key + len, 'x', 2000);
  key[len + 2000] = '\0';
  ck_assert_int_eq(workload_from_key(key, &got, &err), CT_ERR_PARSE);
  expect_short_message(&err, "malformed dtypes at offset 12");
  ck_assert_msg(strstr(err.msg, "conv2d-nchw-\\x1bxxx"), "no escaped excerpt: '%s'", err.msg);
  ck_assert_msg(strstr(err.msg, "xxx...'"), "no ellipsis: '%s'", err.msg);
  ck_assert_msg(strstr(err.msg, "[-d2sBMODE][-onnx]"), "no grammar: '%s'", err.msg);
  /* a long key that parses but is not canonical: -bias 400 times */
  snprintf(key, sizeof key, "conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1");
  for (int i = 0; i < 400; i++) strcat(key, "-bias");
  ck_assert_int_eq(workload_from_key(key, &got, &err), CT_ERR_PARSE);
  expect_short_message(&err, "-d1x1-bias'");
  ck_assert_msg(strstr(err.msg, "not canonical"), "'%s'", err.msg);
  ck_assert_msg(!strstr(err.msg, "-bias-bias-bias-bias-bias-bias-bias-bias-bias-bias-bias-bias"),
                "message quotes too much: '%s'", err.msg);
  /* a long key whose fields are out of range: n with 2000 leading zeros */
  snprintf(key, sizeof key, "conv2d-nchw-i8.i8.i32-n");
  len = strlen(key);
  memset(key + len, '0', 2000);
  snprintf(key + len + 2000, sizeof key - len - 2000, "0-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1");
  ck_assert_int_ne(workload_from_key(key, &got, &err), CT_OK);
  expect_short_message(&err, "n (batch) must be at least 1");
  ck_assert_msg(strstr(err.msg, "(in key 'conv2d-nchw-i8.i8.i32-n000"), "'%s'", err.msg);
}
END_TEST

START_TEST(long_json_message_keeps_reason) {
  enum { LONG = 2000 };
  char *big = malloc(LONG + 1), *text = malloc(2 * LONG);
  ck_assert_ptr_nonnull(big);
  ck_assert_ptr_nonnull(text);
  memset(big, 'x', LONG);
  big[LONG] = '\0';
  ct_workload got;
  ct_err err = {0};
  const char *good = "\"op\":\"conv2d\",\"c\":64,\"h\":56,\"w\":56,\"k\":64,\"kernel\":3";
  /* a long unknown field: the list of fields must survive */
  snprintf(text, 2 * LONG, "{%s,\"%s\":1}", good, big);
  cJSON *j = cJSON_Parse(text);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(workload_from_json(j, &got, &err), CT_ERR_INVALID_WORKLOAD);
  cJSON_Delete(j);
  expect_short_message(&err, "d2s_mode, rounding");
  ck_assert_msg(strstr(err.msg, "unknown field 'xxx"), "'%s'", err.msg);
  /* a long, escaped enum value */
  snprintf(text, 2 * LONG, "{%s,\"layout\":\"\\u0007%s\"}", good, big);
  j = cJSON_Parse(text);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(workload_from_json(j, &got, &err), CT_ERR_INVALID_WORKLOAD);
  cJSON_Delete(j);
  expect_short_message(&err, "field 'layout' must be one of");
  ck_assert_msg(strstr(err.msg, "got '\\x07xxx"), "not escaped: '%s'", err.msg);
  ck_assert_msg(strstr(err.msg, "xxx...'"), "no ellipsis: '%s'", err.msg);
  free(big);
  free(text);
}
END_TEST

START_TEST(key_not_canonical_says_canonical_form) {
  const char *canon = "conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1";
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n016-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "canonical", canon);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x056-r3x3-s2x2-p1x1.1x1-d1x1", CT_ERR_PARSE,
                 "canonical", canon);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p01x1.1x1-d1x1", CT_ERR_PARSE,
                 "canonical", canon);
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x00001",
                 CT_ERR_PARSE, "canonical", canon);
  EXPECT_BAD_KEY("conv3d-ncdhw-i8.i8.i32-n1-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x03-d1x1x1",
                 CT_ERR_PARSE, "canonical",
                 "conv3d-ncdhw-i8.i8.i32-n1-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1");
}
END_TEST

START_TEST(key_of_invalid_workload_rejected) {
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i32-n16-c6-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1",
                 CT_ERR_INVALID_WORKLOAD, "c (input channels)", "multiple of 4");
  EXPECT_BAD_KEY("conv2d-nchw-i8.i8.i32-n0-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1",
                 CT_ERR_INVALID_WORKLOAD, "n (batch)", NULL);
  EXPECT_BAD_KEY("conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x0-s1x1-p1x1.1x1-d1x1",
                 CT_ERR_INVALID_WORKLOAD, "kernel[w]", NULL);
  EXPECT_BAD_KEY("conv2d-nchw-i8.i8.i32-n1-c64-k64-4x4-r9x9-s1x1-p0x0.0x0-d1x1",
                 CT_ERR_INVALID_WORKLOAD, "output size", NULL);
  EXPECT_BAD_KEY("conv2d-nchw-u8.u8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1",
                 CT_ERR_INVALID_WORKLOAD, "weight_type", NULL);
  EXPECT_BAD_KEY("conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1-res",
                 CT_ERR_INVALID_WORKLOAD, "residual", NULL);
  EXPECT_BAD_KEY("conv2d-nchw-i8.i8.i8-n1-c64-k48-56x56-r3x3-s1x1-p1x1.1x1-d1x1-d2s3dcr",
                 CT_ERR_INVALID_WORKLOAD, "multiple of 9", NULL);
  EXPECT_BAD_KEY("conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1-bias-onnx",
                 CT_ERR_INVALID_WORKLOAD, "rounding onnx", "int8 or uint8 output");
  EXPECT_BAD_KEY("conv2d-nhwc-i8.i8.i8-n1-c64-k48-56x56-r3x3-s1x1-p1x1.1x1-d1x1-d2s2dcr",
                 CT_ERR_INVALID_WORKLOAD, "depth_to_space", "nchw or nchw4c");
  EXPECT_BAD_KEY("conv2d-nchw-i8.i8.i32-n1024-c256-k64-112x112-r1x1-s1x1-p0x0.0x0-d1x1",
                 CT_ERR_INVALID_WORKLOAD, "int32", NULL);
  /* The message says which key. */
  EXPECT_BAD_KEY("conv3d-ncdhw4c-i8.i8.i32-n1-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1",
                 CT_ERR_INVALID_WORKLOAD, "c (input channels)", "conv3d-ncdhw4c-i8");
}
END_TEST

/* ---- JSON ------------------------------------------------------------------ */

START_TEST(json_canonical_form) {
  ct_workload w = conv2d(1, 3, 64, 224, 7, 2, 3);
  w.pad_after[1] = 2;
  cJSON *j = workload_to_json(&w);
  ck_assert_ptr_nonnull(j);
  char *text = cJSON_PrintUnformatted(j);
  ck_assert_ptr_nonnull(text);
  ck_assert_str_eq(text, "{\"op\":\"conv2d\",\"layout\":\"nchw\",\"data_type\":\"int8\","
                         "\"weight_type\":\"int8\",\"out_type\":\"int32\",\"n\":1,\"c\":3,"
                         "\"k\":64,\"h\":224,\"w\":224,\"kernel\":[7,7],\"stride\":[2,2],"
                         "\"pad\":[3,3,3,2],\"dilation\":[1,1],\"groups\":1}");
  cJSON_free(text);
  cJSON_Delete(j);

  w = stem3d(2);
  w.c = 4;
  w.layout = CT_LAYOUT_NCHW4C;
  j = workload_to_json(&w);
  ck_assert_ptr_nonnull(j);
  text = cJSON_PrintUnformatted(j);
  ck_assert_ptr_nonnull(text);
  ck_assert_str_eq(text, "{\"op\":\"conv3d\",\"layout\":\"ncdhw4c\",\"data_type\":\"int8\","
                         "\"weight_type\":\"int8\",\"out_type\":\"int32\",\"n\":2,\"c\":4,"
                         "\"k\":64,\"d\":16,\"h\":112,\"w\":112,\"kernel\":[3,7,7],"
                         "\"stride\":[1,2,2],\"pad\":[1,3,3,1,3,3],\"dilation\":[1,1,1],"
                         "\"groups\":1}");
  cJSON_free(text);
  cJSON_Delete(j);

  w = conv2d(1, 3, 5, 9, 3, 1, 1);
  w.layout = CT_LAYOUT_NHWC;
  j = workload_to_json(&w);
  ck_assert_ptr_nonnull(j);
  text = cJSON_PrintUnformatted(j);
  ck_assert_ptr_nonnull(text);
  ck_assert_str_eq(text, "{\"op\":\"conv2d\",\"layout\":\"nhwc\",\"data_type\":\"int8\","
                         "\"weight_type\":\"int8\",\"out_type\":\"int32\",\"n\":1,\"c\":3,"
                         "\"k\":5,\"h\":9,\"w\":9,\"kernel\":[3,3],\"stride\":[1,1],"
                         "\"pad\":[1,1,1,1],\"dilation\":[1,1],\"groups\":1}");
  cJSON_free(text);
  cJSON_Delete(j);
  w = stem3d(1);
  w.layout = CT_LAYOUT_NHWC;
  j = workload_to_json(&w);
  ck_assert_ptr_nonnull(j);
  ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "layout")->valuestring, "ndhwc");
  cJSON_Delete(j);
}
END_TEST

START_TEST(epilogue_keys_and_sizes) {
  ct_workload w = conv2d(1, 64, 48, 17, 3, 1, 1);
  w.data_type = CT_DTYPE_UINT8;
  w.out_type = CT_DTYPE_INT8;
  w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = w.epi.residual = 1;
  w.epi.scale = CT_SCALE_CHANNEL;
  w.epi.d2s_block = 4;
  w.epi.d2s_mode = CT_D2S_CRD;
  ct_err err = {0};
  ck_assert_msg(workload_validate(&w, &err) == CT_OK, "%s", err.msg);
  char key[CT_KEY_MAX], shape[64];
  ck_assert_str_eq(workload_key(&w, key, sizeof key),
                   "conv2d-nchw-u8.i8.i8-n1-c64-k48-17x17-r3x3-s1x1-p1x1.1x1-d1x1-zd-zw-bias-qc-"
                   "res-d2s4crd");
  /* 48 channels of 17x17 become 3 of 68x68; the elements stay */
  ck_assert_int_eq(workload_out_channels(&w), 3);
  ck_assert_int_eq(workload_out_elems(&w), 48 * 17 * 17);
  ck_assert_str_eq(workload_out_shape(&w, shape, sizeof shape), "1x3x68x68");
  ck_assert_int_eq(workload_out_elem_bytes(&w), 1);
  ck_assert_int_eq(workload_has_params(&w), 1);
  /* packed: the 3 output channels fill one chunk of 4; K stays 48 */
  ct_workload pw;
  workload_packed(&w, &pw);
  ck_assert_int_eq(pw.k, 48);
  ck_assert_msg(workload_validate(&pw, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(workload_out_elems(&pw), 4 * 68 * 68);
  ck_assert_str_eq(workload_out_shape(&pw, shape, sizeof shape), "1x1x68x68x4");
  /* b = 3 with 27 channels: the packed workload keeps K = 27, weights in 7 chunks */
  w.k = 27;
  w.epi.d2s_block = 3;
  workload_packed(&w, &pw);
  ck_assert_msg(workload_validate(&pw, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(pw.k, 27);
  ck_assert_int_eq(workload_weight_elems(&pw), 28 * 64 * 9);
  /* conv3d remaps depth too: b^3 channels per output channel */
  ct_workload w3;
  workload_init(&w3, CT_OP_CONV3D);
  w3.c = 8;
  w3.k = 16;
  for (int d = 0; d < 3; d++) w3.in[d] = 5, w3.kernel[d] = 1;
  w3.epi.d2s_block = 2;
  ck_assert_msg(workload_validate(&w3, &err) == CT_OK, "%s", err.msg);
  ck_assert_str_eq(workload_out_shape(&w3, shape, sizeof shape), "1x2x10x10x10");
  ck_assert_str_eq(
      workload_key(&w3, key, sizeof key),
      "conv3d-ncdhw-i8.i8.i32-n1-c8-k16-5x5x5-r1x1x1-s1x1x1-p0x0x0.0x0x0-d1x1x1-d2s2dcr");
  /* onnx rounding: the last segment, in the JSON only when set, kept by
   * the packed form and the layout rule, and its own workload */
  w.k = 48;
  w.epi.d2s_block = 4;
  w.epi.rounding = CT_ROUND_ONNX;
  ck_assert_msg(workload_validate(&w, &err) == CT_OK, "%s", err.msg);
  ck_assert_str_eq(workload_key(&w, key, sizeof key),
                   "conv2d-nchw-u8.i8.i8-n1-c64-k48-17x17-r3x3-s1x1-p1x1.1x1-d1x1-zd-zw-bias-qc-"
                   "res-d2s4crd-onnx");
  ct_workload back;
  ck_assert_msg(workload_from_key(key, &back, &err) == CT_OK, "%s", err.msg);
  ck_assert_mem_eq(&back, &w, sizeof w);
  cJSON *j = workload_to_json(&w);
  ck_assert_ptr_nonnull(j);
  ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "rounding")->valuestring, "onnx");
  memset(&back, 0x5A, sizeof back);
  ck_assert_msg(workload_from_json(j, &back, &err) == CT_OK, "%s", err.msg);
  ck_assert_mem_eq(&back, &w, sizeof w);
  cJSON_Delete(j);
  workload_packed(&w, &pw);
  ck_assert_int_eq(pw.epi.rounding, CT_ROUND_ONNX);
  ck_assert(workload_for_layout(&w, CT_LAYOUT_NCHW4C, &back));
  ck_assert_mem_eq(&back, &pw, sizeof pw);
  w.epi.rounding = CT_ROUND_GEMMLOWP;
  ck_assert_str_eq(workload_key(&w, key, sizeof key),
                   "conv2d-nchw-u8.i8.i8-n1-c64-k48-17x17-r3x3-s1x1-p1x1.1x1-d1x1-zd-zw-bias-qc-"
                   "res-d2s4crd");
  j = workload_to_json(&w);
  ck_assert_ptr_nonnull(j);
  ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j, "rounding"));
  cJSON_Delete(j);
  ct_workload nh = conv2d(2, 32, 16, 9, 1, 1, 0);
  nh.layout = CT_LAYOUT_NHWC;
  nh.out_type = CT_DTYPE_INT8;
  nh.epi.rounding = CT_ROUND_ONNX;
  ck_assert(workload_for_layout(&nh, CT_LAYOUT_NHWC, &back));
  ck_assert_int_eq(back.epi.rounding, CT_ROUND_ONNX);
  ck_assert_str_eq(workload_key(&nh, key, sizeof key),
                   "conv2d-nhwc-i8.i8.i8-n2-c32-k16-9x9-r1x1-s1x1-p0x0.0x0-d1x1-onnx");
  /* the raw workload's key is what it always was, and it needs no params */
  ct_workload raw = conv2d(1, 64, 64, 56, 3, 1, 1);
  ck_assert_str_eq(workload_key(&raw, key, sizeof key),
                   "conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1");
  ck_assert_int_eq(workload_has_params(&raw), 0);
  raw.epi.bias = 1;
  ck_assert_int_eq(workload_has_params(&raw), 1);
}
END_TEST

START_TEST(json_round_trip_random) {
  ct_workload *ws = random_workloads(0x9E3779B9u);
  for (int i = 0; i < N_RANDOM; i++) {
    char key[CT_KEY_MAX], again[CT_KEY_MAX];
    workload_key(&ws[i], key, sizeof key);
    cJSON *j = workload_to_json(&ws[i]);
    if (!j) ck_abort_msg("case %d (%s): workload_to_json gave NULL", i, key);
    ct_workload got;
    ct_err err = {0};
    memset(&got, 0x5A, sizeof got);
    ct_status st = workload_from_json(j, &got, &err);
    if (st != CT_OK) ck_abort_msg("case %d (%s): JSON rejected: %s", i, key, err.msg);
    if (memcmp(&got, &ws[i], sizeof got))
      ck_abort_msg("case %d: %s comes back as %s", i, key, workload_key(&got, again, sizeof again));
    /* Through text too, formatted and not. */
    char *texts[2] = {cJSON_PrintUnformatted(j), cJSON_Print(j)};
    cJSON_Delete(j);
    for (int t = 0; t < 2; t++) {
      if (!texts[t]) ck_abort_msg("case %d: cJSON print failed", i);
      memset(&got, 0x5A, sizeof got);
      st = workload_from_json_text(texts[t], &got, &err);
      if (st != CT_OK) ck_abort_msg("case %d: text %s rejected: %s", i, texts[t], err.msg);
      if (memcmp(&got, &ws[i], sizeof got))
        ck_abort_msg("case %d: text %s comes back as %s", i, texts[t],
                     workload_key(&got, again, sizeof again));
      cJSON_free(texts[t]);
    }
  }
  free(ws);
}
END_TEST

/* Parse text, which must be accepted, into *out. */
static void parse_ok_at(int line, const char *text, ct_workload *out) {
  ct_err err = {0};
  memset(out, 0x5A, sizeof *out);
  ct_status st = workload_from_json_text(text, out, &err);
  ck_assert_msg(st == CT_OK, "line %d: %s rejected with %s: %s", line, text, ct_status_name(st),
                err.msg);
}
#define PARSE_OK(text, out) parse_ok_at(__LINE__, (text), (out))

START_TEST(json_accepted_forms) {
  ct_workload got, want;

  /* Only the required fields: everything else takes its default. */
  PARSE_OK("{\"op\": \"conv2d\", \"c\": 3, \"k\": 8, \"h\": 5, \"w\": 6, \"kernel\": 3}", &got);
  workload_init(&want, CT_OP_CONV2D);
  want.c = 3, want.k = 8, want.in[0] = 5, want.in[1] = 6;
  want.kernel[0] = want.kernel[1] = 3;
  ck_assert_mem_eq(&got, &want, sizeof want);

  /* Scalars for every per-dimension field. */
  PARSE_OK("{\"op\": \"conv2d\", \"n\": 4, \"c\": 64, \"k\": 128, \"h\": 56, \"w\": 56, "
           "\"kernel\": 3, \"stride\": 2, \"pad\": 1, \"dilation\": 2}",
           &got);
  want = conv2d(4, 64, 128, 56, 3, 2, 1);
  want.dilation[0] = want.dilation[1] = 2;
  ck_assert_mem_eq(&got, &want, sizeof want);

  /* Per-dimension lists, and every optional field spelled out; "name" is
   * accepted and ignored. */
  PARSE_OK("{\"name\": \"x\", \"op\": \"conv2d\", \"layout\": \"nchw4c\", \"data_type\": "
           "\"int8\", \"weight_type\": \"int8\", \"out_type\": \"int32\", \"groups\": 1, "
           "\"n\": 1, \"c\": 8, \"k\": 4, \"h\": 17, \"w\": 19, \"kernel\": [1, 7], "
           "\"stride\": [2, 1], \"pad\": [0, 3], \"dilation\": [1, 2]}",
           &got);
  want = conv2d(1, 8, 4, 17, 1, 1, 0);
  want.layout = CT_LAYOUT_NCHW4C;
  want.in[1] = 19;
  want.kernel[1] = 7;
  want.stride[0] = 2;
  want.pad_before[1] = want.pad_after[1] = 3;
  want.dilation[1] = 2;
  ck_assert_mem_eq(&got, &want, sizeof want);

  /* rounding: "gemmlowp" is the default spelled out, "onnx" the other */
  PARSE_OK("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 1, "
           "\"out_type\": \"uint8\", \"rounding\": \"gemmlowp\"}",
           &got);
  want = conv2d(1, 8, 8, 7, 1, 1, 0);
  want.out_type = CT_DTYPE_UINT8;
  ck_assert_mem_eq(&got, &want, sizeof want);
  PARSE_OK("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 1, "
           "\"out_type\": \"uint8\", \"rounding\": \"onnx\"}",
           &got);
  want.epi.rounding = CT_ROUND_ONNX;
  ck_assert_mem_eq(&got, &want, sizeof want);

  /* Pad with 2 x nd values: all befores, then all afters (ONNX). */
  PARSE_OK("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3, "
           "\"stride\": 2, \"pad\": [0, 1, 2, 3]}",
           &got);
  want = conv2d(1, 8, 8, 7, 3, 2, 0);
  want.pad_before[0] = 0, want.pad_before[1] = 1;
  want.pad_after[0] = 2, want.pad_after[1] = 3;
  ck_assert_mem_eq(&got, &want, sizeof want);

  /* conv3d: the ResNet3D stem as written in scripts/workloads. */
  PARSE_OK("{\"op\": \"conv3d\", \"c\": 3, \"d\": 16, \"h\": 112, \"w\": 112, \"k\": 64, "
           "\"kernel\": [3, 7, 7], \"stride\": [1, 2, 2], \"pad\": [1, 3, 3]}",
           &got);
  want = stem3d(1);
  ck_assert_mem_eq(&got, &want, sizeof want);
  PARSE_OK("{\"op\": \"conv3d\", \"layout\": \"ncdhw4c\", \"c\": 4, \"d\": 9, \"h\": 10, "
           "\"w\": 11, \"k\": 8, \"kernel\": 3, \"pad\": [1, 2, 3, 4, 5, 6]}",
           &got);
  static const int in[3] = {9, 10, 11}, r[3] = {3, 3, 3}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  want = conv3d(1, 4, 8, in, r, s, p);
  want.layout = CT_LAYOUT_NCHW4C;
  for (int d = 0; d < 3; d++) want.pad_before[d] = 1 + d, want.pad_after[d] = 4 + d;
  ck_assert_mem_eq(&got, &want, sizeof want);

  /* Channels last, with channel counts the packed layout refuses. */
  PARSE_OK("{\"op\": \"conv2d\", \"layout\": \"nhwc\", \"c\": 3, \"k\": 5, \"h\": 7, "
           "\"w\": 7, \"kernel\": 3, \"stride\": 2, \"pad\": 1}",
           &got);
  want = conv2d(1, 3, 5, 7, 3, 2, 1);
  want.layout = CT_LAYOUT_NHWC;
  ck_assert_mem_eq(&got, &want, sizeof want);
  PARSE_OK(
      "{\"op\": \"conv3d\", \"layout\": \"ndhwc\", \"c\": 3, \"d\": 16, \"h\": 112, "
      "\"w\": 112, \"k\": 64, \"kernel\": [3, 7, 7], \"stride\": [1, 2, 2], \"pad\": [1, 3, 3]}",
      &got);
  want = stem3d(1);
  want.layout = CT_LAYOUT_NHWC;
  ck_assert_mem_eq(&got, &want, sizeof want);

  /* Numbers written as 3.0 or 3e0 are integers. */
  PARSE_OK("{\"op\": \"conv2d\", \"c\": 3.0, \"k\": 8, \"h\": 5e0, \"w\": 6, \"kernel\": 3}", &got);
  ck_assert_int_eq(got.c, 3);
  ck_assert_int_eq(got.in[0], 5);

  /* The order of the fields does not matter. */
  PARSE_OK("{\"kernel\": 3, \"w\": 6, \"h\": 5, \"k\": 8, \"c\": 3, \"op\": \"conv2d\"}", &got);
  workload_init(&want, CT_OP_CONV2D);
  want.c = 3, want.k = 8, want.in[0] = 5, want.in[1] = 6;
  want.kernel[0] = want.kernel[1] = 3;
  ck_assert_mem_eq(&got, &want, sizeof want);

  /* workload_from_json on a tree the caller built. */
  cJSON *j = cJSON_Parse("{\"op\": \"conv2d\", \"c\": 3, \"k\": 8, \"h\": 5, \"w\": 6, "
                         "\"kernel\": 3}");
  ck_assert_ptr_nonnull(j);
  ct_err err = {0};
  ck_assert_int_eq(workload_from_json(j, &got, &err), CT_OK);
  ck_assert_mem_eq(&got, &want, sizeof want);
  cJSON_Delete(j);
}
END_TEST

/* workload_from_json_text must reject text with want, naming needle. */
static void expect_bad_json_at(int line, const char *text, ct_status want, const char *needle,
                               const char *needle2) {
  ct_workload got;
  ct_err err = {0};
  expect_err_at(line, workload_from_json_text(text, &got, &err), want, &err, text, needle, needle2);
}
#define EXPECT_BAD_JSON(text, needle, needle2)                                                     \
  expect_bad_json_at(__LINE__, (text), CT_ERR_INVALID_WORKLOAD, (needle), (needle2))

/* A valid conv2d, with the text before and after a field spliced in. */
#define W2(extra)                                                                                  \
  "{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3" extra "}"

/* Issue 33: huge channel counts, pads, strides and dilations passed the
 * element-count checks and overflowed int later (workload_packed, the
 * templates' estimates). Each field is bounded, and the message names it
 * and the accepted range; the key and the JSON go through the same check. */
START_TEST(validate_bounds_every_field) {
  char range[64];
  /* the reports' reproducers */
  EXPECT_BAD_JSON("{\"op\":\"conv2d\",\"c\":2147483647,\"k\":1,\"h\":1,\"w\":1,\"kernel\":1}",
                  "'c'", "from 1 to 65536, got 2147483647");
  EXPECT_BAD_JSON("{\"op\":\"conv2d\",\"c\":4,\"k\":4,\"h\":1,\"w\":1,\"kernel\":2,"
                  "\"dilation\":2147483647,\"pad\":1073741824}",
                  "'dilation'", "from 1 to 1024, got 2147483647");
  EXPECT_BAD_JSON("{\"op\":\"conv2d\",\"layout\":\"nchw4c\",\"c\":4,\"k\":4,\"h\":1,\"w\":1,"
                  "\"kernel\":1,\"stride\":1000000000,\"pad\":1000000000}",
                  "'stride'", "from 1 to 1024, got 1000000000");
  EXPECT_BAD_JSON("{\"op\":\"conv2d\",\"layout\":\"nhwc\",\"c\":3,\"k\":4,\"h\":1,\"w\":1,"
                  "\"kernel\":1,\"stride\":1000000000,\"pad\":1000000000}",
                  "'stride'", "from 1 to 1024, got 1000000000");
  /* each field one over its bound, alone; at the bound it is accepted */
  struct {
    const char *name;
    int max;
  } cases[] = {{"n (batch)", CT_MAX_BATCH},
               {"c (input channels)", CT_MAX_CHANNELS},
               {"k (output channels)", CT_MAX_CHANNELS},
               {"kernel[w]", CT_MAX_KERNEL},
               {"stride[w]", CT_MAX_STRIDE},
               {"dilation[w]", CT_MAX_DILATION},
               {"pad (before)[w]", CT_MAX_PAD},
               {"pad (after)[w]", CT_MAX_PAD}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_workload w = conv2d(1, 4, 4, 8, 1, 1, 0);
    w.in[1] = 1 << 20; /* room for the largest dilated kernel */
    int *f[] = {
        &w.n,           &w.c, &w.k, &w.kernel[1], &w.stride[1], &w.dilation[1], &w.pad_before[1],
        &w.pad_after[1]};
    *f[i] = cases[i].max;
    if (f[i] == &w.n || f[i] == &w.c || f[i] == &w.k) w.in[1] = 8; /* within the element limit */
    EXPECT_VALID(&w, cases[i].name);
    char key[CT_KEY_MAX];
    ct_workload back;
    ct_err err = {0};
    ck_assert_msg(workload_from_key(workload_key(&w, key, sizeof key), &back, &err) == CT_OK,
                  "%s: %s", key, err.msg);
    ck_assert_mem_eq(&back, &w, sizeof w);
    *f[i] = cases[i].max + 1;
    snprintf(range, sizeof range, "to %d, got %d", cases[i].max, cases[i].max + 1);
    EXPECT_INVALID(&w, cases[i].name, cases[i].name, range);
    /* the same through a key */
    workload_key(&w, key, sizeof key);
    EXPECT_ERR(workload_from_key(key, &back, &err), CT_ERR_INVALID_WORKLOAD, &err, key,
               cases[i].name, range);
  }
  /* conv3d names its depth */
  static const int in[3] = {8, 8, 8}, r[3] = {1, 1, 1}, st[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  ct_workload w = conv3d(1, 4, 4, in, r, st, p);
  w.stride[0] = CT_MAX_STRIDE + 1;
  EXPECT_INVALID(&w, "conv3d stride", "stride[d]", "from 1 to 1024");
  /* the padded data: every pad at its bound on a 3D input */
  w = conv3d(1, 4, 4, in, r, st, p);
  for (int d = 0; d < 3; d++) {
    w.pad_before[d] = w.pad_after[d] = CT_MAX_PAD;
    w.stride[d] = CT_MAX_STRIDE; /* 3 x 3 x 3 outputs */
  }
  w.c = 1 << 8; /* 2^8 x 2056^3 > 2^40 */
  EXPECT_INVALID(&w, "padded data over 2^40", "pad", "padded data");
  w.c = 64; /* 2^6 x 2056^3 < 2^40 */
  EXPECT_VALID(&w, "padded data under 2^40");
}
END_TEST

/* The epilogue list of --epilogue and the importer's float models. */
START_TEST(epilogue_list) {
  ct_epilogue e;
  ct_err err = {0};
  ck_assert_int_eq(workload_epilogue_parse("bias,qc,res,onnx", &e, &err), CT_OK);
  ck_assert(e.bias && e.scale == CT_SCALE_CHANNEL && e.residual && e.rounding == CT_ROUND_ONNX);
  ck_assert(!e.data_zero_point && !e.weight_zero_point && !e.d2s_block);
  ck_assert_int_eq(workload_epilogue_parse("zd,zw,d2s4crd", &e, &err), CT_OK);
  ck_assert(e.data_zero_point && e.weight_zero_point && !e.bias);
  ck_assert_int_eq(e.d2s_block, 4);
  ck_assert_int_eq(e.d2s_mode, CT_D2S_CRD);
  ck_assert_int_eq(workload_epilogue_parse("bias,none,qc", &e, &err), CT_OK);
  ck_assert(!e.bias && e.scale == CT_SCALE_CHANNEL);
  ck_assert_int_eq(workload_epilogue_parse(NULL, &e, &err), CT_OK);
  ck_assert(!e.bias && e.scale == CT_SCALE_TENSOR);
  static const char *const bad[] = {"relu", "bias,", "d2s4", "d2s4xyz", "d2s4dcrx", "BIAS", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&err, 0, sizeof err);
    ct_status st = workload_epilogue_parse(bad[i], &e, &err);
    if (!*bad[i] || !strcmp(bad[i], "bias,")) { /* empty items are skipped */
      ck_assert_int_eq(st, CT_OK);
      continue;
    }
    ck_assert_msg(st == CT_ERR_INVALID_ARG, "'%s' accepted", bad[i]);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown item"));
  }
  /* a block number out of int's range is named as such, not wrapped
   * (issue 33: "d2s99999999999dcr" said "got 1215752191") */
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(workload_epilogue_parse("bias,d2s99999999999dcr", &e, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "d2s99999999999dcr") && strstr(err.msg, "out of range") &&
                    strstr(err.msg, "2 to 16") && !strstr(err.msg, "1215752191"),
                "%s", err.msg);
  ck_assert_int_eq(workload_epilogue_parse("d2s17dcr", &e, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "2 to 16") && strstr(err.msg, "17"), "%s", err.msg);
  ck_assert_int_eq(workload_epilogue_parse("d2s-4dcr", &e, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(workload_epilogue_parse("d2s+4dcr", &e, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(workload_epilogue_parse("d2s 4dcr", &e, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(workload_epilogue_parse("d2s16dcr", &e, &err), CT_OK);
  ck_assert_int_eq(e.d2s_block, 16);
  char longer[400];
  memset(longer, 'b', sizeof longer - 1);
  longer[sizeof longer - 1] = 0;
  ck_assert_int_eq(workload_epilogue_parse(longer, &e, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "too long"));
}
END_TEST

START_TEST(json_syntax_errors) {
  expect_bad_json_at(__LINE__, "{\"op\": \"conv2d\", \"c\": 3,,}", CT_ERR_PARSE, "line 1",
                     "column");
  expect_bad_json_at(__LINE__, "{\n  \"op\": \"conv2d\",\n  \"c\": 3 \"k\": 4\n}", CT_ERR_PARSE,
                     "line 3", "column");
  expect_bad_json_at(__LINE__, "", CT_ERR_PARSE, "line", "column");
  expect_bad_json_at(__LINE__, W2("") " trailing", CT_ERR_PARSE, "line", "column");
  expect_bad_json_at(__LINE__, "{\"op\": 'conv2d'}", CT_ERR_PARSE, "line", "column");
}
END_TEST

START_TEST(json_errors_name_the_field) {
  /* The base text is valid. */
  ct_workload got;
  PARSE_OK(W2(""), &got);

  EXPECT_BAD_JSON("{\"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3}", "'op'", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3}", "'c'", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3}", "'k'", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"w\": 7, \"kernel\": 3}", "'h'", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"kernel\": 3}", "'w'", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv3d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3}",
                  "'d'", "conv3d");
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7}", "'kernel'", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernal\": 3}",
                  "'kernal'", NULL);
  EXPECT_BAD_JSON(W2(", \"Pad\": 1"), "'Pad'", NULL);
  /* Wrong types and values. */
  EXPECT_BAD_JSON(W2(", \"n\": \"16\""), "'n'", "string");
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": \"8\", \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3}",
                  "'c'", "string");
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 6.5, \"h\": 7, \"w\": 7, \"kernel\": 3}",
                  "'k'", "6.5");
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": true, \"w\": 7, \"kernel\": 3}",
                  "'h'", "boolean");
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 2.5}",
                  "'kernel'", "2.5");
  EXPECT_BAD_JSON(W2(", \"n\": 0"), "'n'", NULL);
  EXPECT_BAD_JSON(W2(", \"n\": -1"), "'n'", NULL);
  EXPECT_BAD_JSON(W2(", \"n\": 1e10"), "'n'", NULL);
  EXPECT_BAD_JSON(W2(", \"n\": null"), "'n'", "null");
  EXPECT_BAD_JSON(W2(", \"stride\": 0"), "'stride'", NULL);
  EXPECT_BAD_JSON(W2(", \"stride\": null"), "'stride'", NULL);
  EXPECT_BAD_JSON(W2(", \"stride\": \"2\""), "'stride'", NULL);
  EXPECT_BAD_JSON(W2(", \"dilation\": [1, 0]"), "'dilation[1]'", NULL);
  EXPECT_BAD_JSON(W2(", \"pad\": -1"), "'pad'", NULL);
  EXPECT_BAD_JSON(W2(", \"pad\": [0, -1]"), "'pad[1]'", NULL);
  EXPECT_BAD_JSON(W2(", \"pad\": [0, 1, 2, \"x\"]"), "'pad[3]'", "string");
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": [3, "
                  "\"3\"]}",
                  "'kernel[1]'", "string");
  /* Lists of the wrong length. */
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": [3, 3, "
                  "3]}",
                  "'kernel'", "list of 3");
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": []}",
                  "'kernel'", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": [3, "
                  "3, 3, 3]}",
                  "'kernel'", NULL);
  EXPECT_BAD_JSON(W2(", \"stride\": [1]"), "'stride'", "list of 1");
  EXPECT_BAD_JSON(W2(", \"pad\": [1, 1, 1]"), "'pad'", "list of 3");
  EXPECT_BAD_JSON(W2(", \"pad\": [1, 1, 1, 1, 1, 1]"), "'pad'", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv3d\", \"c\": 8, \"k\": 8, \"d\": 7, \"h\": 7, \"w\": 7, "
                  "\"kernel\": 3, \"pad\": [1, 1, 1, 1]}",
                  "'pad'", "list of 4");
  EXPECT_BAD_JSON("{\"op\": \"conv3d\", \"c\": 8, \"k\": 8, \"d\": 7, \"h\": 7, \"w\": 7, "
                  "\"kernel\": [3, 3]}",
                  "'kernel'", NULL);
  /* Enumerations. */
  EXPECT_BAD_JSON(W2(", \"layout\": \"NHWC\""), "'layout'", "nchw, nchw4c, nhwc");
  EXPECT_BAD_JSON(W2(", \"layout\": \"ncdhw\""), "'layout'", NULL);
  EXPECT_BAD_JSON(W2(", \"layout\": \"ndhwc\""), "'layout'", "'ndhwc'");
  EXPECT_BAD_JSON("{\"op\": \"conv3d\", \"layout\": \"nhwc\", \"c\": 8, \"k\": 8, \"d\": 7, "
                  "\"h\": 7, \"w\": 7, \"kernel\": 3}",
                  "'layout'", "ncdhw, ncdhw4c, ndhwc");
  EXPECT_BAD_JSON(W2(", \"layout\": 1"), "'layout'", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv1d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3}",
                  "'op'", "conv1d");
  EXPECT_BAD_JSON("{\"op\": 2, \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3}", "'op'",
                  NULL);
  EXPECT_BAD_JSON(W2(", \"data_type\": \"float32\""), "'data_type'", NULL);
  EXPECT_BAD_JSON(W2(", \"out_type\": \"fp16\""), "'out_type'", NULL);
  /* "d" belongs to conv3d. */
  EXPECT_BAD_JSON(W2(", \"d\": 4"), "'d'", "conv2d");
  /* Well-formed fields of a workload that validation rejects. */
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"layout\": \"nchw4c\", \"c\": 6, \"k\": 8, \"h\": 7, "
                  "\"w\": 7, \"kernel\": 3}",
                  "c (input channels)", "multiple of 4");
  EXPECT_BAD_JSON(W2(", \"groups\": 3"), "groups (3) must divide", NULL);
  EXPECT_BAD_JSON(W2(", \"data_type\": \"int32\""), "data_type", NULL);
  EXPECT_BAD_JSON(W2(", \"residual\": true"), "residual", "int8");
  EXPECT_BAD_JSON(W2(", \"bias\": 1"), "'bias'", "true or false");
  EXPECT_BAD_JSON(W2(", \"scale\": \"row\""), "'scale'", "tensor, channel");
  EXPECT_BAD_JSON(W2(", \"out_type\": \"int8\", \"depth_to_space\": 3"), "multiple of 9", NULL);
  EXPECT_BAD_JSON(W2(", \"layout\": \"nhwc\", \"depth_to_space\": 2"), "depth_to_space",
                  "nchw or nchw4c");
  EXPECT_BAD_JSON(W2(", \"d2s_mode\": \"xyz\""), "'d2s_mode'", "dcr, crd");
  EXPECT_BAD_JSON(W2(", \"out_type\": \"int8\", \"rounding\": \"ONNX\""), "'rounding'",
                  "gemmlowp, onnx, got 'ONNX'");
  EXPECT_BAD_JSON(W2(", \"out_type\": \"int8\", \"rounding\": 1"), "'rounding'", "non-string");
  EXPECT_BAD_JSON(W2(", \"rounding\": \"onnx\""), "rounding onnx", "int8 or uint8 output");
  EXPECT_BAD_JSON(W2(", \"out_type\": \"int8\", \"rounding\": \"onnx\", \"rounding\": \"onnx\""),
                  "'rounding' is given twice", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"c\": 8, \"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 9}",
                  "output size", NULL);
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"n\": 1024, \"c\": 256, \"k\": 8, \"h\": 112, \"w\": 112, "
                  "\"kernel\": 1}",
                  "int32", NULL);
  /* Not an object. */
  EXPECT_BAD_JSON("[]", "object", NULL);
  EXPECT_BAD_JSON("[" W2("") "]", "object", NULL);
  EXPECT_BAD_JSON("42", "object", NULL);
  EXPECT_BAD_JSON("\"conv2d\"", "object", NULL);
  EXPECT_BAD_JSON("null", "object", NULL);

  ct_err err = {0};
  EXPECT_ERR(workload_from_json(NULL, &got, &err), CT_ERR_INVALID_WORKLOAD, &err, "NULL tree",
             "object", NULL);
}
END_TEST

/* ---- a fused pointwise convolution (pre) ------------------------------------ */

/* A channels-last conv2d with int8 output and a pointwise convolution of
 * pre_c channels fused before it (no epilogue on either yet). */
static ct_workload fused2d(int n, int pre_c, int c, int k, int hw, int r, int s, int p,
                           int groups) {
  ct_workload w = conv2d(n, c, k, hw, r, s, p);
  w.layout = CT_LAYOUT_NHWC;
  w.groups = groups;
  w.out_type = CT_DTYPE_INT8;
  w.pre_c = pre_c;
  return w;
}

/* w must give key exactly, parse back from it and from its JSON (text and
 * tree) into the same struct. */
static void expect_fused_round_trip_at(int line, const ct_workload *w, const char *key) {
  char got[CT_KEY_MAX], again[CT_KEY_MAX];
  expect_valid_at(line, w, key);
  ck_assert_msg(!strcmp(workload_key(w, got, sizeof got), key), "line %d: key %s, want %s", line,
                got, key);
  ct_workload back;
  ct_err err = {0};
  memset(&back, 0x5A, sizeof back);
  ct_status st = workload_from_key(key, &back, &err);
  ck_assert_msg(st == CT_OK, "line %d: %s rejected: %s", line, key, err.msg);
  ck_assert_msg(!memcmp(&back, w, sizeof back), "line %d: %s parses to %s", line, key,
                workload_key(&back, again, sizeof again));
  cJSON *j = workload_to_json(w);
  ck_assert_ptr_nonnull(j);
  char *text = cJSON_PrintUnformatted(j);
  ck_assert_ptr_nonnull(text);
  memset(&back, 0x5A, sizeof back);
  st = workload_from_json(j, &back, &err);
  ck_assert_msg(st == CT_OK, "line %d: JSON %s rejected: %s", line, text, err.msg);
  ck_assert_msg(!memcmp(&back, w, sizeof back), "line %d: JSON %s comes back as %s", line, text,
                workload_key(&back, again, sizeof again));
  memset(&back, 0x5A, sizeof back);
  st = workload_from_json_text(text, &back, &err);
  ck_assert_msg(st == CT_OK && !memcmp(&back, w, sizeof back), "line %d: text %s: %s", line, text,
                err.msg);
  cJSON_free(text);
  cJSON_Delete(j);
}
#define EXPECT_FUSED_ROUND_TRIP(w, key) expect_fused_round_trip_at(__LINE__, (w), (key))

START_TEST(pre_key_round_trip) {
  /* MobileNetV2's expansion (24 -> 144) fused before its depthwise 3x3,
   * as ONNX Runtime quantizes both */
  ct_workload w = fused2d(32, 24, 144, 144, 56, 3, 1, 1, 144);
  w.epi.bias = 1, w.epi.scale = CT_SCALE_CHANNEL, w.epi.rounding = CT_ROUND_ONNX;
  w.pre_epi = w.epi;
  EXPECT_FUSED_ROUND_TRIP(&w, "conv2d-nhwc-i8.i8.i8-n32-c144-k144-56x56-r3x3-s1x1-p1x1.1x1-d1x1-"
                              "bias-qc-onnx-g144-pre24.i8.bias.qc.onnx");
  /* each of the pre epilogue's flags alone, uint8 data, stride 2 and odd
   * channel counts */
  static const char *const flags[] = {".zd", ".zw", ".bias", ".qc", ".onnx"};
  for (int f = 0; f < 5; f++) {
    w = fused2d(2, 7, 12, 12, 9, 3, 2, 1, 12);
    w.pre_data_type = CT_DTYPE_UINT8;
    int *on[] = {&w.pre_epi.data_zero_point, &w.pre_epi.weight_zero_point, &w.pre_epi.bias};
    if (f < 3) *on[f] = 1;
    if (f == 3) w.pre_epi.scale = CT_SCALE_CHANNEL;
    if (f == 4) w.pre_epi.rounding = CT_ROUND_ONNX;
    char want[CT_KEY_MAX];
    snprintf(want, sizeof want,
             "conv2d-nhwc-i8.i8.i8-n2-c12-k12-9x9-r3x3-s2x2-p1x1.1x1-d1x1-g12-pre7.u8%s", flags[f]);
    EXPECT_FUSED_ROUND_TRIP(&w, want);
  }
  /* every flag, in the canonical order; uint8 into a uint8 conv with its
   * own zero point */
  w = fused2d(1, 7, 12, 12, 9, 3, 1, 1, 12);
  w.data_type = CT_DTYPE_UINT8, w.out_type = CT_DTYPE_UINT8, w.epi.data_zero_point = 1;
  w.pre_data_type = CT_DTYPE_UINT8;
  w.pre_epi.data_zero_point = w.pre_epi.weight_zero_point = w.pre_epi.bias = 1;
  w.pre_epi.scale = CT_SCALE_CHANNEL, w.pre_epi.rounding = CT_ROUND_ONNX;
  EXPECT_FUSED_ROUND_TRIP(&w, "conv2d-nhwc-u8.i8.u8-n1-c12-k12-9x9-r3x3-s1x1-p1x1.1x1-d1x1-zd-"
                              "g12-pre7.u8.zd.zw.bias.qc.onnx");
  /* a dense 3x3 (no groups) with int32 output and no epilogue of its own:
   * only the pointwise one requantizes */
  w = fused2d(1, 7, 12, 10, 9, 3, 1, 1, 1);
  w.out_type = CT_DTYPE_INT32;
  EXPECT_FUSED_ROUND_TRIP(&w,
                          "conv2d-nhwc-i8.i8.i32-n1-c12-k10-9x9-r3x3-s1x1-p1x1.1x1-d1x1-pre7.i8");
  /* a residual on the main convolution is still allowed */
  w.out_type = CT_DTYPE_INT8, w.epi.residual = 1;
  EXPECT_FUSED_ROUND_TRIP(
      &w, "conv2d-nhwc-i8.i8.i8-n1-c12-k10-9x9-r3x3-s1x1-p1x1.1x1-d1x1-res-pre7.i8");
  /* 3D, channels last: a depthwise 3x3x3, stride (1, 2, 2) */
  static const int in[3] = {4, 9, 9}, r[3] = {3, 3, 3}, s[3] = {1, 2, 2}, p[3] = {1, 1, 1};
  w = conv3d(2, 8, 8, in, r, s, p);
  w.layout = CT_LAYOUT_NHWC, w.groups = 8, w.out_type = CT_DTYPE_INT8;
  w.pre_c = 5, w.pre_data_type = CT_DTYPE_UINT8, w.pre_epi.data_zero_point = 1;
  EXPECT_FUSED_ROUND_TRIP(&w, "conv3d-ndhwc-i8.i8.i8-n2-c8-k8-4x9x9-r3x3x3-s1x2x2-p1x1x1.1x1x1-"
                              "d1x1x1-g8-pre5.u8.zd");
  /* the pre segment tells workloads apart that differ only there */
  char a[CT_KEY_MAX], b[CT_KEY_MAX];
  ct_workload v = w;
  v.pre_c = 0, v.pre_data_type = CT_DTYPE_INT8, v.pre_epi.data_zero_point = 0;
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  v = w, v.pre_c = 50; /* pre5 against pre50: no run-together digits */
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  v = w, v.pre_data_type = CT_DTYPE_INT8;
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
  v = w, v.pre_epi.data_zero_point = 0, v.epi.data_zero_point = 1, v.data_type = CT_DTYPE_UINT8;
  ck_assert_str_ne(workload_key(&w, a, sizeof a), workload_key(&v, b, sizeof b));
}
END_TEST

/* A random fused workload: a random channels-last workload of
 * random_workload with a random pointwise convolution before it. */
static ct_workload random_fused(rng *gen) {
  ct_workload w;
  do w = random_workload(gen);
  while (w.layout != CT_LAYOUT_NHWC);
  if (rng_range(gen, 0, 2) == 0) { /* grouped or depthwise */
    w.groups = rng_range(gen, 1, 8);
    w.c = w.k = w.groups * rng_range(gen, 1, 4);
  }
  w.pre_c = rng_range(gen, 1, 40);
  w.pre_data_type = rng_range(gen, 0, 1) ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
  ct_epilogue *e = &w.pre_epi;
  e->data_zero_point = rng_range(gen, 0, 1);
  e->weight_zero_point = rng_range(gen, 0, 1);
  e->bias = rng_range(gen, 0, 1);
  e->scale = rng_range(gen, 0, 1) ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
  e->rounding = rng_range(gen, 0, 1) ? CT_ROUND_ONNX : CT_ROUND_GEMMLOWP;
  return w;
}

START_TEST(pre_round_trip_random) {
  rng gen;
  rng_seed(&gen, 0x5eedf00du);
  enum { N = N_RANDOM / 2 };
  ct_workload *ws = xmalloc(N * sizeof *ws);
  char(*keys)[CT_KEY_MAX] = xmalloc(N * sizeof *keys);
  int n_3d = 0, n_grouped = 0, n_u8 = 0, n_onnx = 0;
  for (int i = 0; i < N; i++) {
    ws[i] = random_fused(&gen);
    char again[CT_KEY_MAX];
    ct_err err = {0};
    workload_key(&ws[i], keys[i], sizeof keys[i]);
    if (workload_validate(&ws[i], &err) != CT_OK)
      ck_abort_msg("case %d (%s) rejected: %s", i, keys[i], err.msg);
    ct_workload got;
    memset(&got, 0x5A, sizeof got);
    if (workload_from_key(keys[i], &got, &err) != CT_OK)
      ck_abort_msg("case %d: key %s rejected: %s", i, keys[i], err.msg);
    if (memcmp(&got, &ws[i], sizeof got))
      ck_abort_msg("case %d: key %s parses to %s", i, keys[i],
                   workload_key(&got, again, sizeof again));
    cJSON *j = workload_to_json(&ws[i]);
    if (!j) ck_abort_msg("case %d (%s): workload_to_json gave NULL", i, keys[i]);
    memset(&got, 0x5A, sizeof got);
    ct_status st = workload_from_json(j, &got, &err);
    cJSON_Delete(j);
    if (st != CT_OK) ck_abort_msg("case %d (%s): JSON rejected: %s", i, keys[i], err.msg);
    if (memcmp(&got, &ws[i], sizeof got))
      ck_abort_msg("case %d: JSON of %s comes back as %s", i, keys[i],
                   workload_key(&got, again, sizeof again));
    n_3d += ws[i].op == CT_OP_CONV3D;
    n_grouped += ws[i].groups > 1;
    n_u8 += ws[i].pre_data_type == CT_DTYPE_UINT8;
    n_onnx += ws[i].pre_epi.rounding == CT_ROUND_ONNX;
  }
  /* one key per workload among them, and the draw covers what it claims */
  for (int i = 0; i < N; i++)
    for (int j = 0; j < i; j++)
      if ((memcmp(&ws[i], &ws[j], sizeof ws[i]) == 0) != (strcmp(keys[i], keys[j]) == 0))
        ck_abort_msg("cases %d and %d: keys %s and %s", j, i, keys[j], keys[i]);
  ck_assert_int_gt(n_3d, N / 4);
  ck_assert_int_gt(n_grouped, N / 10);
  ck_assert_int_gt(n_u8, N / 4);
  ck_assert_int_gt(n_onnx, N / 4);
  free(keys);
  free(ws);
}
END_TEST

/* workload_pre and workload_main against the two workloads written out. */
START_TEST(pre_parts) {
  ct_workload w = fused2d(2, 7, 12, 12, 9, 3, 2, 1, 12);
  w.in[1] = 11;
  w.data_type = CT_DTYPE_UINT8;
  w.epi.data_zero_point = w.epi.bias = 1;
  w.pre_data_type = CT_DTYPE_INT8;
  w.pre_epi.weight_zero_point = 1, w.pre_epi.scale = CT_SCALE_CHANNEL;
  w.pre_epi.rounding = CT_ROUND_ONNX;
  EXPECT_VALID(&w, "fused");
  ct_workload pre, want;
  memset(&pre, 0x5A, sizeof pre);
  workload_pre(&w, &pre);
  workload_init(&want, CT_OP_CONV2D);
  want.layout = CT_LAYOUT_NHWC;
  want.data_type = CT_DTYPE_INT8; /* pre_data_type */
  want.out_type = CT_DTYPE_UINT8; /* the main conv's data_type */
  want.n = 2, want.c = 7, want.k = 12;
  want.in[0] = 9, want.in[1] = 11;
  want.kernel[0] = want.kernel[1] = 1;
  want.epi.weight_zero_point = 1, want.epi.scale = CT_SCALE_CHANNEL;
  want.epi.rounding = CT_ROUND_ONNX;
  ck_assert_mem_eq(&pre, &want, sizeof want);
  EXPECT_VALID(&pre, "pre part");
  ct_workload m;
  memset(&m, 0x5A, sizeof m);
  workload_main(&w, &m);
  want = fused2d(2, 0, 12, 12, 9, 3, 2, 1, 12);
  want.in[1] = 11;
  want.data_type = CT_DTYPE_UINT8;
  want.epi.data_zero_point = want.epi.bias = 1;
  ck_assert_mem_eq(&m, &want, sizeof want);
  EXPECT_VALID(&m, "main part");
  /* 3D: every spatial dimension copied, the kernel 1x1x1 */
  static const int in[3] = {4, 9, 10}, r[3] = {3, 1, 3}, s[3] = {1, 2, 2}, p[3] = {1, 0, 1};
  w = conv3d(1, 8, 16, in, r, s, p);
  w.layout = CT_LAYOUT_NHWC, w.out_type = CT_DTYPE_INT8, w.pre_c = 3;
  workload_pre(&w, &pre);
  ck_assert_int_eq(pre.op, CT_OP_CONV3D);
  for (int d = 0; d < 3; d++) {
    ck_assert_int_eq(pre.in[d], in[d]);
    ck_assert_int_eq(pre.kernel[d], 1);
    ck_assert_int_eq(pre.stride[d], 1);
    ck_assert_int_eq(pre.pad_before[d] + pre.pad_after[d], 0);
  }
  ck_assert_int_eq(workload_out_elems(&pre), 1 * 8 * 4 * 9 * 10);
}
END_TEST

START_TEST(pre_elems_and_ops) {
  /* 7 -> 12 pointwise on 9x9, then a depthwise 3x3 stride 2 pad 1: out
   * (9 + 2 - 3) / 2 + 1 = 5 */
  ct_workload w = fused2d(2, 7, 12, 12, 9, 3, 2, 1, 12);
  EXPECT_VALID(&w, "fused");
  ck_assert_int_eq(workload_data_channels(&w), 7);
  ck_assert_int_eq(workload_data_elems(&w), 2 * 7 * 9 * 9);
  ck_assert_int_eq(workload_weight_elems(&w), 12 * 1 * 3 * 3); /* the main conv's */
  ck_assert_int_eq(workload_out_elems(&w), 2 * 12 * 5 * 5);
  /* the depthwise conv's 2 x 2 x 12 x 25 x 1 x 9 plus the pointwise one's
   * 2 x 2 x 12 x 81 x 7 (its outputs are the 9x9 input) */
  ck_assert_int_eq(workload_ops(&w), 2 * 2 * 12 * 25 * 9 + 2 * 2 * 12 * 81 * 7);
  char shape[64];
  ck_assert_str_eq(workload_out_shape(&w, shape, sizeof shape), "2x5x5x12");
  ck_assert_int_eq(workload_out_elem_bytes(&w), 1);
  /* without the pointwise conv: c channels of data */
  ct_workload m = w;
  m.pre_c = 0;
  ck_assert_int_eq(workload_data_channels(&m), 12);
  ck_assert_int_eq(workload_data_elems(&m), 2 * 12 * 9 * 9);
  ck_assert_int_eq(workload_ops(&m), 2 * 2 * 12 * 25 * 9);
  /* a raw main conv needs no params; with a pointwise conv before it, the
   * pointwise conv's requantization does */
  m.out_type = CT_DTYPE_INT32;
  ck_assert_int_eq(workload_has_params(&m), 0);
  m.pre_c = 7;
  EXPECT_VALID(&m, "raw main conv with a pointwise conv");
  ck_assert_int_eq(workload_has_params(&m), 1);
  /* a dense 3D one: pointwise 5 -> 8 on 4x6x6, then 3x3x3 pad 1 to 16 */
  static const int in[3] = {4, 6, 6}, r[3] = {3, 3, 3}, s[3] = {1, 1, 1}, p[3] = {1, 1, 1};
  w = conv3d(3, 8, 16, in, r, s, p);
  w.layout = CT_LAYOUT_NHWC, w.out_type = CT_DTYPE_INT8, w.pre_c = 5;
  EXPECT_VALID(&w, "fused 3d");
  ck_assert_int_eq(workload_data_elems(&w), 3 * 5 * 4 * 6 * 6);
  ck_assert_int_eq(workload_ops(&w), INT64_C(2) * 3 * 16 * 144 * 8 * 27 + 2 * 3 * 8 * 144 * 5);
}
END_TEST

START_TEST(pre_validate_rejects) {
  const ct_workload base = fused2d(1, 8, 16, 16, 9, 3, 1, 1, 16);
  EXPECT_VALID(&base, "base");
  ct_workload w;
  /* channels-last only, and the message names both layouts */
  w = base, w.layout = CT_LAYOUT_NCHW;
  EXPECT_INVALID(&w, "pre on nchw", "needs layout nhwc", "got nchw");
  w = base, w.layout = CT_LAYOUT_NCHW4C;
  EXPECT_INVALID(&w, "pre on nchw4c", "needs layout nhwc", "got nchw4c");
  static const int in[3] = {4, 9, 9}, r[3] = {3, 3, 3}, s[3] = {1, 1, 1}, p[3] = {1, 1, 1};
  w = conv3d(1, 8, 8, in, r, s, p);
  w.pre_c = 4;
  EXPECT_INVALID(&w, "pre on ncdhw", "needs layout ndhwc", "got ncdhw");
  w.layout = CT_LAYOUT_NHWC;
  EXPECT_VALID(&w, "pre on ndhwc");
  /* pre_c's range */
  w = base, w.pre_c = CT_MAX_CHANNELS + 1;
  EXPECT_INVALID(&w, "pre_c over", "pre_c", "from 1 to 65536, got 65537");
  w = base, w.pre_c = CT_MAX_CHANNELS;
  EXPECT_VALID(&w, "pre_c at its bound");
  w = base, w.pre_c = -1;
  EXPECT_INVALID(&w, "pre_c -1", "pre_c", "got -1");
  w = base, w.pre_c = 1;
  EXPECT_VALID(&w, "pre_c 1");
  /* its data type */
  w = base, w.pre_data_type = CT_DTYPE_INT32;
  EXPECT_INVALID(&w, "pre int32", "pre_data_type", "got int32");
  w = base, w.pre_data_type = (ct_dtype)7;
  EXPECT_INVALID(&w, "pre dtype 7", "pre_data_type", "int8 or uint8");
  /* its epilogue: no residual, no depth_to_space, the flags' own values */
  w = base, w.pre_epi.residual = 1;
  EXPECT_INVALID(&w, "pre residual", "residual", "pre_c 8");
  w = base, w.pre_epi.d2s_block = 2;
  EXPECT_INVALID(&w, "pre depth_to_space", "fused pointwise", "depth_to_space");
  w = base, w.pre_epi.bias = 2;
  EXPECT_INVALID(&w, "pre bias 2", "fused pointwise", "bias must be 0 or 1");
  w = base, w.pre_epi.rounding = (ct_rounding)2;
  EXPECT_INVALID(&w, "pre rounding 2", "fused pointwise", "rounding");
  w = base, w.pre_epi.scale = (ct_scale_mode)2;
  EXPECT_INVALID(&w, "pre scale 2", "fused pointwise", "scale");
  /* every pre field at its default without one: one key per workload */
  w = base, w.pre_c = 0, w.pre_data_type = CT_DTYPE_UINT8;
  EXPECT_INVALID(&w, "pre_data_type without pre", "pre_c is 0", "pre_data_type");
  w = base, w.pre_c = 0, w.pre_epi.bias = 1;
  EXPECT_INVALID(&w, "pre_epi without pre", "pre_c is 0", "pre_epi");
  w = base, w.pre_c = 0, w.pre_epi.rounding = CT_ROUND_ONNX;
  EXPECT_INVALID(&w, "pre rounding without pre", "pre_c is 0", NULL);
  /* the intermediate tensor (n x c x input) is bounded as any output: 1
   * channel in, 65536 out of the pointwise conv on 200x200 is 2.6e9 */
  w = fused2d(1, 1, 65536, 1, 200, 1, 1, 0, 1);
  EXPECT_INVALID(&w, "intermediate over int32", "fused pointwise", "int32");
  /* the same through keys */
  EXPECT_BAD_KEY("conv2d-nchw-i8.i8.i8-n1-c16-k16-9x9-r3x3-s1x1-p1x1.1x1-d1x1-g16-pre8.i8",
                 CT_ERR_INVALID_WORKLOAD, "needs layout nhwc", "got nchw");
  EXPECT_BAD_KEY("conv2d-nchw4c-i8.i8.i8-n1-c16-k16-9x9-r3x3-s1x1-p1x1.1x1-d1x1-g16-pre8.i8",
                 CT_ERR_INVALID_WORKLOAD, "needs layout nhwc", "got nchw4c");
  EXPECT_BAD_KEY("conv2d-nhwc-i8.i8.i8-n1-c16-k16-9x9-r3x3-s1x1-p1x1.1x1-d1x1-g16-pre8.i32",
                 CT_ERR_INVALID_WORKLOAD, "pre_data_type", "int32");
  EXPECT_BAD_KEY("conv2d-nhwc-i8.i8.i8-n1-c16-k16-9x9-r3x3-s1x1-p1x1.1x1-d1x1-g16-pre65537.i8",
                 CT_ERR_INVALID_WORKLOAD, "pre_c", "65537");
  EXPECT_BAD_KEY("conv2d-nhwc-i8.i8.i8-n1-c16-k16-9x9-r3x3-s1x1-p1x1.1x1-d1x1-g16-pre0.u8",
                 CT_ERR_INVALID_WORKLOAD, "pre_c is 0", NULL);
}
END_TEST

START_TEST(pre_key_malformed_rejected) {
  const char *good = "conv2d-nhwc-i8.i8.i8-n1-c16-k16-9x9-r3x3-s1x1-p1x1.1x1-d1x1-g16-pre8.i8.zd";
  ct_workload got;
  ct_err err = {0};
  ck_assert_msg(workload_from_key(good, &got, &err) == CT_OK, "%s", err.msg);
#define K16 "conv2d-nhwc-i8.i8.i8-n1-c16-k16-9x9-r3x3-s1x1-p1x1.1x1-d1x1-g16"
  /* malformed: the message names the segment and shows its grammar */
  static const char *const bad[] = {
      K16 "-pre",
      K16 "-pre8",
      K16 "-pre8.",
      K16 "-pre.i8",
      K16 "-pre8.i16",
      K16 "-pre8.f32",
      K16 "-pre8.i8.",
      K16 "-pre8.i8.xx",
      K16 "-pre8.i8.ZD",
      K16 "-pre-8.i8",
      K16 "-pre8i8",
      K16 "-pre8.i8.res",
      K16 "-pre8.i8.d2s2dcr",
      K16 "-pre+8.i8",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    EXPECT_BAD_KEY(bad[i], CT_ERR_PARSE, "malformed pre", "[-preC.T[.zd][.zw][.bias][.qc][.onnx]]");
  /* a malformed main segment after a good pre one is the epilogue's */
  EXPECT_BAD_KEY(K16 "-pre8.i8-x", CT_ERR_PARSE, "malformed epilogue", NULL);
  EXPECT_BAD_KEY(K16 "-pre8.i8-", CT_ERR_PARSE, "malformed epilogue", NULL);
  EXPECT_BAD_KEY(K16 "-pre8.i8.zd ", CT_ERR_PARSE, "malformed epilogue", NULL);
  /* parsed, but not canonical: the message gives the canonical key */
  EXPECT_BAD_KEY(K16 "-pre8.i8.bias.zd", CT_ERR_PARSE, "canonical", "-pre8.i8.zd.bias'");
  EXPECT_BAD_KEY(K16 "-pre8.i8.onnx.qc", CT_ERR_PARSE, "canonical", "-pre8.i8.qc.onnx'");
  EXPECT_BAD_KEY(K16 "-pre8.i8.zd.zd", CT_ERR_PARSE, "canonical", "-pre8.i8.zd'");
  EXPECT_BAD_KEY(K16 "-pre08.i8", CT_ERR_PARSE, "canonical", "-pre8.i8'");
  EXPECT_BAD_KEY(K16 "-pre8.i8-pre8.i8", CT_ERR_PARSE, "canonical", "-g16-pre8.i8'");
  /* -pre is last: after -g, after the epilogue */
  EXPECT_BAD_KEY("conv2d-nhwc-i8.i8.i8-n1-c16-k16-9x9-r3x3-s1x1-p1x1.1x1-d1x1-pre8.i8-g16",
                 CT_ERR_PARSE, "canonical", "-g16-pre8.i8'");
  EXPECT_BAD_KEY("conv2d-nhwc-i8.i8.i8-n1-c16-k16-9x9-r3x3-s1x1-p1x1.1x1-d1x1-pre8.i8-bias-g16",
                 CT_ERR_PARSE, "canonical", "-bias-g16-pre8.i8'");
  /* pre_c 0 with the default type is the workload without one, whose key
   * has no segment */
  EXPECT_BAD_KEY(K16 "-pre0.i8", CT_ERR_PARSE, "canonical", K16 "'");
#undef K16
}
END_TEST

/* workload_from_json_text must reject text with CT_ERR_INVALID_WORKLOAD
 * naming needle; text is W2NHWC's "pre" object. */
#define W2NHWC(pre)                                                                                \
  "{\"op\": \"conv2d\", \"layout\": \"nhwc\", \"out_type\": \"int8\", \"c\": 8, \"k\": 8, "        \
  "\"groups\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3, \"pad\": 1, \"pre\": " pre "}"

START_TEST(pre_json) {
  ct_workload w = fused2d(32, 24, 144, 144, 56, 3, 1, 1, 144);
  w.epi.bias = 1, w.epi.scale = CT_SCALE_CHANNEL, w.epi.rounding = CT_ROUND_ONNX;
  w.pre_data_type = CT_DTYPE_UINT8;
  w.pre_epi.data_zero_point = w.pre_epi.bias = 1, w.pre_epi.rounding = CT_ROUND_ONNX;
  cJSON *j = workload_to_json(&w);
  ck_assert_ptr_nonnull(j);
  char *text = cJSON_PrintUnformatted(j);
  ck_assert_ptr_nonnull(text);
  /* "pre" last; within it c, data_type, then the epilogue's non-defaults */
  ck_assert_str_eq(text, "{\"op\":\"conv2d\",\"layout\":\"nhwc\",\"data_type\":\"int8\","
                         "\"weight_type\":\"int8\",\"out_type\":\"int8\",\"n\":32,\"c\":144,"
                         "\"k\":144,\"h\":56,\"w\":56,\"kernel\":[3,3],\"stride\":[1,1],"
                         "\"pad\":[1,1,1,1],\"dilation\":[1,1],\"groups\":144,\"bias\":true,"
                         "\"scale\":\"channel\",\"rounding\":\"onnx\",\"pre\":{\"c\":24,"
                         "\"data_type\":\"uint8\",\"data_zero_point\":true,\"bias\":true,"
                         "\"rounding\":\"onnx\"}}");
  cJSON_free(text);
  cJSON_Delete(j);
  /* no pre: no field */
  w.pre_c = 0, w.pre_data_type = CT_DTYPE_INT8;
  memset(&w.pre_epi, 0, sizeof w.pre_epi);
  j = workload_to_json(&w);
  ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j, "pre"));
  cJSON_Delete(j);
  /* accepted forms: c alone (int8 data, no epilogue), each field spelled out */
  ct_workload got, want = fused2d(1, 5, 8, 8, 7, 3, 1, 1, 8);
  PARSE_OK(W2NHWC("{\"c\": 5}"), &got);
  ck_assert_mem_eq(&got, &want, sizeof want);
  PARSE_OK(W2NHWC("{\"rounding\": \"gemmlowp\", \"scale\": \"tensor\", \"bias\": false, "
                  "\"data_type\": \"int8\", \"c\": 5.0}"),
           &got);
  ck_assert_mem_eq(&got, &want, sizeof want);
  PARSE_OK(W2NHWC("{\"c\": 5, \"data_type\": \"uint8\", \"data_zero_point\": true, "
                  "\"weight_zero_point\": true, \"bias\": true, \"scale\": \"channel\", "
                  "\"rounding\": \"onnx\"}"),
           &got);
  want.pre_data_type = CT_DTYPE_UINT8;
  want.pre_epi.data_zero_point = want.pre_epi.weight_zero_point = want.pre_epi.bias = 1;
  want.pre_epi.scale = CT_SCALE_CHANNEL, want.pre_epi.rounding = CT_ROUND_ONNX;
  ck_assert_mem_eq(&got, &want, sizeof want);
  /* refusals, each naming the field */
  EXPECT_BAD_JSON(W2NHWC("3"), "'pre' must be an object", NULL);
  EXPECT_BAD_JSON(W2NHWC("[5]"), "'pre' must be an object", NULL);
  EXPECT_BAD_JSON(W2NHWC("null"), "'pre' must be an object", NULL);
  EXPECT_BAD_JSON(W2NHWC("\"pre5.i8\""), "'pre' must be an object", NULL);
  EXPECT_BAD_JSON(W2NHWC("{}"), "missing field 'pre.c'", NULL);
  EXPECT_BAD_JSON(W2NHWC("{\"data_type\": \"uint8\"}"), "missing field 'pre.c'", NULL);
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"relu\": true}"), "unknown field 'pre.relu'",
                  "c, data_type, data_zero_point");
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"residual\": true}"), "unknown field 'pre.residual'", NULL);
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"depth_to_space\": 2}"), "unknown field 'pre.depth_to_space'",
                  NULL);
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"C\": 5}"), "unknown field 'pre.C'", NULL);
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"c\": 6}"), "'pre.c' is given twice", NULL);
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 0}"), "'pre.c'", "from 1 to 65536, got 0");
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 65537}"), "'pre.c'", "from 1 to 65536, got 65537");
  EXPECT_BAD_JSON(W2NHWC("{\"c\": -3}"), "'pre.c'", NULL);
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 2.5}"), "'pre.c'", "2.5");
  EXPECT_BAD_JSON(W2NHWC("{\"c\": \"5\"}"), "'pre.c'", "string");
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"data_type\": \"int32\"}"), "'pre.data_type'",
                  "int8, uint8, got 'int32'");
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"data_type\": 1}"), "'pre.data_type'", NULL);
  /* the epilogue's fields are pre's own: the message says so */
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"bias\": 1}"), "pre", "'bias'");
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"scale\": \"row\"}"), "pre", "'scale'");
  EXPECT_BAD_JSON(W2NHWC("{\"c\": 5, \"rounding\": \"ONNX\"}"), "pre", "'rounding'");
  /* valid fields, invalid workload */
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"out_type\": \"int8\", \"c\": 8, \"k\": 8, \"h\": 7, "
                  "\"w\": 7, \"kernel\": 3, \"pre\": {\"c\": 5}}",
                  "needs layout nhwc", "got nchw");
  EXPECT_BAD_JSON("{\"op\": \"conv2d\", \"layout\": \"nchw4c\", \"out_type\": \"int8\", \"c\": 8, "
                  "\"k\": 8, \"h\": 7, \"w\": 7, \"kernel\": 3, \"pre\": {\"c\": 5}}",
                  "needs layout nhwc", "got nchw4c");
  /* the top level's list of fields names it */
  EXPECT_BAD_JSON(W2(", \"prec\": 5"), "unknown field 'prec'", "rounding, pre");
}
END_TEST

static void add_pre(TCase *tc) {
  tcase_add_test(tc, pre_key_round_trip);
  tcase_add_test(tc, pre_round_trip_random);
  tcase_add_test(tc, pre_parts);
  tcase_add_test(tc, pre_elems_and_ops);
  tcase_add_test(tc, pre_validate_rejects);
  tcase_add_test(tc, pre_key_malformed_rejected);
  tcase_add_test(tc, pre_json);
}

static void add_model(TCase *tc) {
  tcase_add_test(tc, init_sets_defaults);
  tcase_add_test(tc, nd_and_names);
  tcase_add_test(tc, out_size_hand_computed);
  tcase_add_test(tc, out_size_3d_per_dimension);
  tcase_add_test(tc, ops_and_element_counts);
  tcase_add_test(tc, geom_conv2d_is_d1_conv3d);
  tcase_add_test(tc, geom_conv3d_copies_every_dimension);
  tcase_add_test(tc, out_shape_strings);
}

static void add_validate(TCase *tc) {
  tcase_add_test(tc, validate_rejects_each_field);
  tcase_add_test(tc, validate_rejects_conv3d_fields);
  tcase_add_test(tc, validate_rejects_over_int32_elements);
  tcase_add_test(tc, validate_rejects_counts_that_overflow_int64);
  tcase_add_test(tc, validate_bounds_every_field);
  tcase_add_test(tc, validate_accepts_edge_cases);
  tcase_add_test(tc, validate_null_is_invalid_arg);
}

static void add_key(TCase *tc) {
  tcase_add_test(tc, key_exact_strings);
  tcase_add_test(tc, key_groups);
  tcase_add_test(tc, key_round_trip_random);
  tcase_add_test(tc, key_distinct_for_distinct_workloads);
  tcase_add_test(tc, key_malformed_rejected);
  tcase_add_test(tc, long_key_message_keeps_reason);
  tcase_add_test(tc, long_json_message_keeps_reason);
  tcase_add_test(tc, key_not_canonical_says_canonical_form);
  tcase_add_test(tc, key_of_invalid_workload_rejected);
}

static void add_json(TCase *tc) {
  tcase_add_test(tc, json_canonical_form);
  tcase_add_test(tc, epilogue_keys_and_sizes);
  tcase_add_test(tc, json_round_trip_random);
  tcase_add_test(tc, json_accepted_forms);
  tcase_add_test(tc, json_syntax_errors);
  tcase_add_test(tc, json_errors_name_the_field);
  tcase_add_test(tc, epilogue_list);
}

static const test_case suite_cases[] = {
    {"model", -1, add_model}, {"validate", -1, add_validate}, {"key", -1, add_key},
    {"json", -1, add_json},   {"pre", -1, add_pre},           {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"workload", suite_cases, 0, NULL};
  return test_main(&suite);
}
