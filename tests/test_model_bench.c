/*
 * test_model_bench.c: the CPU side of `convtune bench --model`
 * (bench/model_bench.h), on models built here in memory: the wiring of the
 * chain (a producer's output feeds its consumer only when it runs, comes
 * first and writes exactly the tensor read; otherwise a fresh tensor that
 * says which op or why), the skipped nodes, the floors and their sum, the
 * short key, the images the check covers and the comparison's first
 * mismatch (int8, uint8, int32, depth_to_space, 3D), the CPU reference on
 * several threads against the one-thread reference, the results path, and
 * the JSON, CSV and Markdown writers; the plan of the importer's tiny QDQ
 * model file, whose values the reference takes as they are; a fused node (a
 * 1x1 conv run inside the conv it feeds): its wiring, counts and writers.
 * Without a GPU, mbench_run must say so.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_int.h"
#include "bench/model_bench.h"
#include "core/pack.h"
#include "core/quant.h"
#include "core/reference.h"
#include "core/rng.h"
#include "tests/util.h"

static const bench_peaks h200 = {130.0, 1267.0, 4.3};

/* An nhwc conv2d, int8 data: n x c x hw x hw, k output channels, r x r
 * kernel, stride s, padding p; out int8 with bias and per-channel scales,
 * or int32 without epilogue; res: a residual. */
static ct_workload conv(int n, int c, int k, int hw, int r, int s, int p, ct_dtype out, int res) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NHWC;
  w.n = n, w.c = c, w.k = k;
  w.in[0] = w.in[1] = hw;
  w.kernel[0] = w.kernel[1] = r;
  w.stride[0] = w.stride[1] = s;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = p;
  w.out_type = out;
  if (out != CT_DTYPE_INT32) {
    w.epi.bias = 1;
    w.epi.scale = CT_SCALE_CHANNEL;
    w.epi.residual = res;
  }
  return w;
}

/* A model of n convs (the caller fills them); freed by free_model. */
static model *new_model(int n, int batch) {
  model *m = calloc(1, sizeof *m);
  ck_assert_ptr_nonnull(m);
  m->path = strdup("/tmp/models/tiny_qdq.onnx");
  m->form = MODEL_QDQ;
  m->batch = batch;
  m->n_convs = n;
  m->convs = calloc((size_t)n, sizeof *m->convs);
  ck_assert_ptr_nonnull(m->convs);
  return m;
}

static void set_conv(model *m, int i, const char *name, ct_workload w, int input_conv,
                     const char *input_from, int residual_conv, const char *residual_from) {
  model_conv *c = &m->convs[i];
  c->name = strdup(name);
  c->op_type = strdup("QLinearConv");
  c->w = w;
  c->supported = 1;
  c->fused = strdup(w.epi.residual ? "Add(residual),Relu" : "Relu");
  c->input_conv = input_conv;
  c->residual_conv = residual_conv;
  c->input_from = input_from ? strdup(input_from) : NULL;
  c->residual_from = residual_from ? strdup(residual_from) : NULL;
  c->pre_conv = c->fused_into = -1;
}

static void free_model(model *m) {
  for (int i = 0; i < m->n_convs; i++) {
    model_conv *c = &m->convs[i];
    free(c->name);
    free(c->op_type);
    free(c->why);
    free(c->fused);
    free(c->input_from);
    free(c->residual_from);
  }
  free(m->convs);
  free(m->path);
  free(m);
}

/* The graph every wiring case below reads: a stem from the graph input, a
 * conv fed by it, one fed by a MaxPool, a block's last conv (data from 1,
 * residual from 0), one whose producer's output has another size, an
 * unsupported grouped conv and its consumer, an int32 producer and its
 * consumer, and one naming a later conv. Batch 16. */
static model *wiring_model(void) {
  model *m = new_model(10, 16);
  set_conv(m, 0, "stem", conv(16, 3, 16, 8, 3, 1, 1, CT_DTYPE_INT8, 0), -1, "graph input 'x'", -1,
           NULL);
  set_conv(m, 1, "a", conv(16, 16, 16, 8, 3, 1, 1, CT_DTYPE_INT8, 0), 0, NULL, -1, NULL);
  set_conv(m, 2, "after_pool", conv(16, 16, 32, 8, 3, 2, 1, CT_DTYPE_INT8, 0), -1,
           "MaxPool /pool/MaxPool", -1, NULL);
  set_conv(m, 3, "block_end", conv(16, 16, 16, 8, 1, 1, 0, CT_DTYPE_INT8, 1), 1, NULL, 0, NULL);
  /* conv 2 writes 4x4 with 32 channels: not the 8x8 x 32 this one reads */
  set_conv(m, 4, "mismatch", conv(16, 32, 32, 8, 1, 1, 0, CT_DTYPE_INT8, 0), 2, NULL, -1, NULL);
  set_conv(m, 5, "grouped", conv(16, 32, 32, 4, 3, 1, 1, CT_DTYPE_INT8, 0), 2, NULL, -1, NULL);
  m->convs[5].w.groups = 3; /* invalid: 3 does not divide 32 */
  m->convs[5].supported = 0;
  m->convs[5].why = strdup("groups 3: groups must divide c and k");
  set_conv(m, 6, "after_grouped", conv(16, 32, 32, 4, 1, 1, 0, CT_DTYPE_INT8, 0), 5, NULL, -1,
           NULL);
  set_conv(m, 7, "int32_out", conv(16, 32, 32, 4, 1, 1, 0, CT_DTYPE_INT32, 0), 6, NULL, -1, NULL);
  set_conv(m, 8, "after_int32", conv(16, 32, 32, 4, 1, 1, 0, CT_DTYPE_INT8, 0), 7, NULL, -1, NULL);
  set_conv(m, 9, "forward", conv(16, 32, 32, 4, 1, 1, 0, CT_DTYPE_INT8, 0), 9, NULL, -1, NULL);
  return m;
}

START_TEST(images_first_and_last) {
  int im[2] = {-1, -1};
  ck_assert_int_eq(mbench_images(1, im), 1);
  ck_assert_int_eq(im[0], 0);
  ck_assert_int_eq(mbench_images(2, im), 2);
  ck_assert_int_eq(im[0], 0);
  ck_assert_int_eq(im[1], 1);
  ck_assert_int_eq(mbench_images(256, im), 2);
  ck_assert_int_eq(im[1], 255);
}
END_TEST

START_TEST(plan_wiring) {
  model *m = wiring_model();
  mbench_result r;
  memset(&r, 0, sizeof r);
  ct_err err = {0};
  ck_assert_int_eq(mbench_plan(m, &h200, NULL, &r, &err), CT_OK);
  ck_assert_int_eq(r.n_nodes, 10);
  ck_assert_int_eq(r.n_run, 9);
  ck_assert_str_eq(r.head.set, "tiny_qdq");
  ck_assert_str_eq(r.form, "qdq");
  ck_assert_int_eq(r.head.batch, 16);
  ck_assert_int_eq(r.head.layout, CT_LAYOUT_NHWC);
  ck_assert_int_eq(r.n_images, 2);
  ck_assert_int_eq(r.images[1], 15);
  const mbench_node *nd = r.nodes;
  /* the graph input and the MaxPool are fresh, and say what they stand for */
  ck_assert_int_eq(nd[0].input_conv, -1);
  ck_assert_str_eq(nd[0].input, "fresh: graph input 'x'");
  ck_assert_int_eq(nd[2].input_conv, -1);
  ck_assert_str_eq(nd[2].input, "fresh: MaxPool /pool/MaxPool");
  /* direct connections are real tensors */
  ck_assert_int_eq(nd[1].input_conv, 0);
  ck_assert_str_eq(nd[1].input, "conv stem");
  ck_assert_int_eq(nd[3].input_conv, 1);
  ck_assert_int_eq(nd[3].residual_conv, 0);
  ck_assert_str_eq(nd[3].residual, "conv stem");
  ck_assert_str_eq(nd[1].residual, ""); /* no residual: nothing to say */
  /* a producer whose output is not this input */
  ck_assert_int_eq(nd[4].input_conv, -1);
  ck_assert_ptr_nonnull(strstr(nd[4].input, "fresh: after_pool writes 16x4x4x32 int8"));
  ck_assert_ptr_nonnull(strstr(nd[4].input, "reads 16x8x8x32 int8"));
  /* the unsupported conv is skipped, with its reason, and its consumer is fresh */
  ck_assert_int_eq(nd[5].runs, 0);
  ck_assert_str_eq(nd[5].why, "groups 3: groups must divide c and k");
  ck_assert_str_eq(nd[5].key, "-");
  ck_assert_int_eq(nd[6].input_conv, -1);
  ck_assert_str_eq(nd[6].input, "fresh: grouped is not run");
  /* int32 cannot feed int8 data */
  ck_assert_int_eq(nd[7].input_conv, 6);
  ck_assert_int_eq(nd[8].input_conv, -1);
  ck_assert_ptr_nonnull(strstr(nd[8].input, "int32_out writes 16x4x4x32 int32"));
  /* a conv that names itself (or a later one) as its producer */
  ck_assert_int_eq(nd[9].input_conv, -1);
  ck_assert_str_eq(nd[9].input, "fresh: conv #9 does not come before this one");
  /* fresh: 0, 2, 4, 6, 8, 9; the residual of 3 is real */
  ck_assert_int_eq(r.n_fresh_inputs, 6);
  ck_assert_int_eq(r.all_int32, 0);
  for (int i = 0; i < r.n_nodes; i++)
    for (int f = MBENCH_CONVTUNE; f < MBENCH_N_FIELDS; f++) ck_assert(!bench_has(nd[i].t[f]));

  /* a node skipped at run time (no kernel, a failed call) rewires its consumers */
  const char *skip[10] = {0};
  skip[1] = "no kernel runs it in layout nhwc: test";
  ck_assert_int_eq(mbench_plan(m, &h200, skip, &r, &err), CT_OK);
  ck_assert_int_eq(r.n_run, 8);
  ck_assert_int_eq(r.nodes[1].runs, 0);
  ck_assert_str_eq(r.nodes[1].why, "no kernel runs it in layout nhwc: test");
  ck_assert_int_eq(r.nodes[3].input_conv, -1);
  ck_assert_str_eq(r.nodes[3].input, "fresh: a is not run");
  ck_assert_int_eq(r.nodes[3].residual_conv, 0);
  mbench_result_free(&r);
  ck_assert_ptr_null(r.nodes);
  free_model(m);
}
END_TEST

START_TEST(plan_rejects_invalid_supported) {
  model *m = new_model(1, 2);
  set_conv(m, 0, "bad", conv(2, 16, 16, 8, 3, 1, 1, CT_DTYPE_INT8, 0), -1, "graph input", -1, NULL);
  m->convs[0].w.kernel[0] = 0;
  mbench_result r;
  memset(&r, 0, sizeof r);
  ct_err err = {0};
  ck_assert_int_eq(mbench_plan(m, &h200, NULL, &r, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "conv bad: "));
  ck_assert_ptr_null(r.nodes);
  free_model(m);
}
END_TEST

/* What writer w writes of r, as a string (free it). */
static char *written(void (*w)(const mbench_result *, FILE *), const mbench_result *r) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  w(r, f);
  fclose(f);
  return text;
}
static char *markdown(const mbench_result *r) {
  return written(mbench_write_markdown, r);
}
static char *csv_of(const mbench_result *r) {
  return written(mbench_write_csv, r);
}

START_TEST(plan_int32_all_fresh) {
  /* a float model read with int32 output: nothing can feed int8 data */
  model *m = new_model(2, 4);
  m->form = MODEL_FLOAT;
  set_conv(m, 0, "c0", conv(4, 16, 16, 8, 3, 1, 1, CT_DTYPE_INT32, 0), -1, "graph input 'x'", -1,
           NULL);
  set_conv(m, 1, "c1", conv(4, 16, 16, 8, 3, 1, 1, CT_DTYPE_INT32, 0), 0, NULL, -1, NULL);
  mbench_result r;
  memset(&r, 0, sizeof r);
  ct_err err = {0};
  ck_assert_int_eq(mbench_plan(m, &h200, NULL, &r, &err), CT_OK);
  ck_assert_int_eq(r.all_int32, 1);
  ck_assert_int_eq(r.n_fresh_inputs, 2);
  ck_assert_ptr_nonnull(strstr(r.nodes[1].input, "writes 4x8x8x16 int32"));
  ck_assert_str_eq(r.form, "float");
  char *md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "every conv writes int32"));
  free(md);
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

START_TEST(plan_packed_layout) {
  /* a plain model runs packed: the stem's 3 channels become 4, and the
   * conv it feeds still reads its real output */
  model *m = new_model(2, 2);
  ct_workload w0 = conv(2, 3, 16, 8, 3, 1, 1, CT_DTYPE_INT8, 0);
  ct_workload w1 = conv(2, 16, 16, 8, 3, 1, 1, CT_DTYPE_INT8, 0);
  w0.layout = w1.layout = CT_LAYOUT_NCHW;
  set_conv(m, 0, "stem", w0, -1, "graph input 'x'", -1, NULL);
  set_conv(m, 1, "next", w1, 0, NULL, -1, NULL);
  mbench_result r;
  memset(&r, 0, sizeof r);
  ct_err err = {0};
  ck_assert_int_eq(mbench_plan(m, &h200, NULL, &r, &err), CT_OK);
  ck_assert_int_eq(r.head.layout, CT_LAYOUT_NCHW4C);
  ck_assert_ptr_nonnull(strstr(r.nodes[0].key, "conv2d-nchw4c-"));
  ck_assert_ptr_nonnull(strstr(r.nodes[0].key, "-c4-k16-"));
  ck_assert_int_eq(r.nodes[1].input_conv, 0);
  /* the floor counts the real channels */
  ck_assert_double_eq(r.nodes[0].ops, 2.0 * 2 * 16 * 64 * 3 * 9);
  char path[256];
  snprintf(r.head.device, sizeof r.head.device, "NVIDIA H200");
  ck_assert_str_eq(mbench_results_path(&r, "bench/results", path, sizeof path),
                   "bench/results/h200-tiny-qdq-b2-nchw4c.json");
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

START_TEST(short_key_and_floor) {
  model *m = new_model(1, 16);
  set_conv(m, 0, "l", conv(16, 64, 64, 56, 3, 1, 1, CT_DTYPE_INT8, 1), -1, "MaxPool", -1,
           "MaxPool");
  mbench_result r;
  memset(&r, 0, sizeof r);
  ct_err err = {0};
  ck_assert_int_eq(mbench_plan(m, &h200, NULL, &r, &err), CT_OK);
  const mbench_node *nd = &r.nodes[0];
  ck_assert_str_eq(nd->key, "conv2d-nhwc-i8.i8.i8-n16-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1-"
                            "bias-qc-res");
  ck_assert_str_eq(nd->short_key, "i8.i8.i8-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-bias-qc-res");
  ck_assert_str_eq(nd->residual, "fresh: MaxPool");
  /* ops: 2 x 16 x 64 x 56 x 56 x 64 x 9; bytes: data + weights + residual + int8 output */
  double ops = 2.0 * 16 * 64 * 56 * 56 * 64 * 9, act = 16.0 * 64 * 56 * 56;
  double bytes = act + 64.0 * 64 * 9 + act + act;
  ck_assert_double_eq(nd->ops, ops);
  ck_assert_double_eq(nd->bytes, bytes);
  double floor_us = fmax(ops / (1267.0 * 1e6), bytes / (4.3 * 1e6));
  ck_assert_double_eq_tol(nd->t[MBENCH_FLOOR], floor_us, 1e-12);
  ck_assert_double_eq_tol(mbench_sum(&r, MBENCH_FLOOR, NULL), floor_us, 1e-12);
  /* no peaks, no floor */
  bench_peaks none = {0};
  ck_assert_int_eq(mbench_plan(m, &none, NULL, &r, &err), CT_OK);
  ck_assert(!bench_has(r.nodes[0].t[MBENCH_FLOOR]));
  /* dilation other than 1 stays in the short key */
  m->convs[0].w.dilation[0] = m->convs[0].w.dilation[1] = 2;
  m->convs[0].w.pad_before[0] = m->convs[0].w.pad_before[1] = 2;
  m->convs[0].w.pad_after[0] = m->convs[0].w.pad_after[1] = 2;
  ck_assert_int_eq(mbench_plan(m, &h200, NULL, &r, &err), CT_OK);
  ck_assert_ptr_nonnull(strstr(r.nodes[0].short_key, "-d2x2"));
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

/* A plain one-image workload for the comparison. */
static ct_workload plain_img(int k, int h, int w, ct_dtype out) {
  ct_workload x = conv(1, 4, k, 1, 1, 1, 0, out, 0);
  x.layout = CT_LAYOUT_NCHW;
  x.in[0] = h;
  x.in[1] = w;
  return x;
}

START_TEST(compare_first_mismatch) {
  char note[256];
  /* int8: 3 channels of 4 x 5 */
  ct_workload w = plain_img(3, 4, 5, CT_DTYPE_INT8);
  int8_t want[60], got[60];
  for (int i = 0; i < 60; i++) want[i] = got[i] = (int8_t)(i * 7 - 100);
  ck_assert_int_eq(mbench_compare(&w, got, want, 7, note, sizeof note), 0);
  ck_assert_str_eq(note, "exact");
  got[2 * 20 + 1 * 5 + 3] = 5; /* channel 2, y 1, x 3 */
  got[59] = 0;
  ck_assert_int_eq(mbench_compare(&w, got, want, 7, note, sizeof note), 2);
  ck_assert_str_eq(note, "WRONG: image 7 channel 2 at (y, x) = (1, 3) gives 5, not -20; 2 of 60 "
                         "elements of the image differ");
  /* uint8 reads unsigned */
  w.out_type = CT_DTYPE_UINT8;
  uint8_t uw[60] = {0}, ug[60] = {0};
  ug[0] = 200;
  ck_assert_int_eq(mbench_compare(&w, ug, uw, 0, note, sizeof note), 1);
  ck_assert_ptr_nonnull(strstr(note, "channel 0 at (y, x) = (0, 0) gives 200, not 0"));
  /* int32 compares whole words */
  ct_workload w32 = plain_img(2, 2, 2, CT_DTYPE_INT32);
  int32_t iw[8] = {0}, ig[8] = {0};
  ig[7] = -70000;
  ck_assert_int_eq(mbench_compare(&w32, ig, iw, 3, note, sizeof note), 1);
  ck_assert_ptr_nonnull(strstr(note, "image 3 channel 1 at (y, x) = (1, 1) gives -70000, not 0"));
  /* depth_to_space: 8 channels of 2 x 3 become 2 of 4 x 6 */
  ct_workload d = plain_img(8, 2, 3, CT_DTYPE_INT8);
  d.epi.d2s_block = 2;
  int8_t dw[48] = {0}, dg[48] = {0};
  dg[24 + 2 * 6 + 5] = 1; /* channel 1, y 2, x 5 of the remapped output */
  ck_assert_int_eq(mbench_compare(&d, dg, dw, 0, note, sizeof note), 1);
  ck_assert_ptr_nonnull(strstr(note, "channel 1 at (y, x) = (2, 5) gives 1, not 0; 1 of 48"));
  /* conv3d: the position has a depth */
  ct_workload w3;
  workload_init(&w3, CT_OP_CONV3D);
  w3.n = 1, w3.c = 4, w3.k = 2;
  w3.in[0] = 2, w3.in[1] = 3, w3.in[2] = 4;
  w3.kernel[0] = w3.kernel[1] = w3.kernel[2] = 1;
  w3.out_type = CT_DTYPE_INT8;
  w3.epi.bias = 1;
  int8_t tw[48] = {0}, tg[48] = {0};
  tg[24 + 1 * 12 + 2 * 4 + 3] = -1;
  ck_assert_int_eq(mbench_compare(&w3, tg, tw, 1, note, sizeof note), 1);
  ck_assert_ptr_nonnull(strstr(note, "channel 1 at (d, y, x) = (1, 2, 3) gives -1, not 0"));
}
END_TEST

START_TEST(reference_on_threads_equals_one) {
  /* a block's last conv at an awkward shape: uint8 data with its zero point,
   * weight zero points, bias, per-channel scales, a residual, stride 2 */
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.n = 1, w.c = 6, w.k = 11;
  w.in[0] = 9, w.in[1] = 7;
  w.kernel[0] = 3, w.kernel[1] = 2;
  w.stride[0] = w.stride[1] = 2;
  w.pad_before[0] = w.pad_after[0] = 1;
  w.data_type = CT_DTYPE_UINT8;
  w.out_type = CT_DTYPE_INT8;
  w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = w.epi.residual = 1;
  w.epi.scale = CT_SCALE_CHANNEL;
  ct_err err = {0};
  ck_assert_int_eq(workload_validate(&w, &err), CT_OK);
  quant_store qs;
  ck_assert_int_eq(quant_random(&w, 42, &qs, &err), CT_OK);
  size_t nd = (size_t)workload_data_elems(&w), nw = (size_t)workload_weight_elems(&w);
  size_t no = (size_t)workload_out_elems(&w);
  uint8_t *data = malloc(nd), *res = malloc(no), *want = malloc(no), *got = malloc(no);
  int8_t *weights = malloc(nw);
  rng r;
  rng_seed(&r, 7);
  bench_fill_random(&r, data, nd);
  bench_fill_random(&r, weights, nw);
  bench_fill_random(&r, res, no);
  ck_assert_int_eq(reference_qconv(&w, &qs.q, data, weights, res, want, &err), CT_OK);
  for (int threads = 1; threads <= 16; threads += 3) {
    memset(got, 0xA5, no);
    ck_assert_int_eq(bench_reference_image(&w, &qs.q, data, weights, res, got, threads, &err),
                     CT_OK);
    ck_assert_msg(!memcmp(got, want, no), "%d threads differ from one", threads);
  }
  /* int32 output without values: q NULL */
  ct_workload w32 = w;
  w32.data_type = CT_DTYPE_INT8;
  w32.out_type = CT_DTYPE_INT32;
  memset(&w32.epi, 0, sizeof w32.epi);
  int32_t *want32 = malloc(no * 4), *got32 = malloc(no * 4);
  ck_assert_int_eq(reference_qconv(&w32, NULL, data, weights, NULL, want32, &err), CT_OK);
  ck_assert_int_eq(bench_reference_image(&w32, NULL, data, weights, NULL, got32, 4, &err), CT_OK);
  ck_assert(!memcmp(got32, want32, no * 4));
  /* a bad value is an error from the thread that met it */
  qs.q.out_zero_point = 1000;
  ck_assert_int_eq(bench_reference_image(&w, &qs.q, data, weights, res, got, 4, &err),
                   CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "zero"));
  quant_store_free(&qs);
  free(data);
  free(res);
  free(want);
  free(got);
  free(weights);
  free(want32);
  free(got32);
}
END_TEST

/* The wiring model with synthetic results: every node timed, one wrong. */
static void synthetic(mbench_result *r, model **m) {
  *m = wiring_model();
  ct_err err = {0};
  memset(r, 0, sizeof *r);
  ck_assert_int_eq(mbench_plan(*m, &h200, NULL, r, &err), CT_OK);
  snprintf(r->head.device, sizeof r->head.device, "NVIDIA H200");
  snprintf(r->head.arch, sizeof r->head.arch, "sm_90");
  r->head.sm_count = 132;
  snprintf(r->head.commit, sizeof r->head.commit, "abc1234");
  snprintf(r->head.command, sizeof r->head.command,
           "convtune bench --model tiny_qdq.onnx --batch 16");
  snprintf(r->head.date, sizeof r->head.date, "2026-12-01T00:00:00Z");
  r->head.peaks = h200;
  r->head.repeats = 7;
  for (int i = 0; i < r->n_nodes; i++) {
    mbench_node *nd = &r->nodes[i];
    if (!nd->runs) continue;
    nd->t[MBENCH_CONVTUNE] = 10 + i;
    nd->t[MBENCH_CUDNN_FP16] = 20 + i;
    nd->t[MBENCH_CUDNN_INT8] = i == 4 ? BENCH_NONE : 30 + i;
    nd->check = i == 3 ? MBENCH_WRONG : MBENCH_EXACT;
    snprintf(nd->check_note, sizeof nd->check_note, "%s",
             i == 3 ? "WRONG: image 15 channel 2 at (y, x) = (0, 1) gives 3, not 4; 1 of 1024 "
                      "elements of the image differ"
                    : "exact (images 0, 15)");
  }
  snprintf(r->nodes[4].note[MBENCH_CUDNN_INT8], sizeof r->nodes[4].note[0],
           "no algorithm runs: 8 unsupported");
  r->chain[MBENCH_CONVTUNE] = 80;
  r->chain[MBENCH_CUDNN_FP16] = 200;
  snprintf(r->chain_note[MBENCH_CUDNN_INT8], sizeof r->chain_note[0],
           "cuDNN int8 does not run 1 of the 9 nodes (first mismatch: no algorithm runs)");
  r->n_exact = 8;
  r->n_wrong = 1;
}

START_TEST(sums_and_rates) {
  mbench_result r;
  model *m;
  synthetic(&r, &m);
  int nulls = -1;
  /* nodes 0..9 but 5: 10+0 + ... */
  double want = 0;
  for (int i = 0; i < 10; i++)
    if (i != 5) want += 10 + i;
  ck_assert_double_eq(mbench_sum(&r, MBENCH_CONVTUNE, &nulls), want);
  ck_assert_int_eq(nulls, 0);
  ck_assert(!bench_has(mbench_sum(&r, MBENCH_CUDNN_INT8, &nulls)));
  ck_assert_int_eq(nulls, 1);
  ck_assert_double_eq_tol(mbench_images_per_s(&r, 80), 16 / 80e-6, 1e-6);
  ck_assert(!bench_has(mbench_images_per_s(&r, BENCH_NONE)));
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

START_TEST(json_document) {
  mbench_result r;
  model *m;
  synthetic(&r, &m);
  cJSON *o = mbench_to_json(&r);
  ck_assert_ptr_nonnull(o);
  ck_assert_str_eq(cJSON_GetObjectItem(o, "device")->valuestring, "NVIDIA H200");
  ck_assert_str_eq(cJSON_GetObjectItem(o, "commit")->valuestring, "abc1234");
  ck_assert_str_eq(cJSON_GetObjectItem(o, "model")->valuestring, "tiny_qdq");
  ck_assert_str_eq(cJSON_GetObjectItem(o, "layout")->valuestring, "nhwc");
  ck_assert_int_eq(cJSON_GetObjectItem(o, "batch")->valueint, 16);
  ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(o, "peaks_source")->valuestring, "this run"));
  ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "all_exact")));
  ck_assert_int_eq(cJSON_GetObjectItem(o, "n_wrong")->valueint, 1);
  cJSON *imgs = cJSON_GetObjectItem(o, "images_checked");
  ck_assert_int_eq(cJSON_GetArraySize(imgs), 2);
  ck_assert_int_eq(cJSON_GetArrayItem(imgs, 1)->valueint, 15);
  cJSON *chain = cJSON_GetObjectItem(o, "chain");
  ck_assert_double_eq(cJSON_GetObjectItem(chain, "convtune_us")->valuedouble, 80);
  ck_assert_double_eq(cJSON_GetObjectItem(chain, "cudnn_fp16_us")->valuedouble, 200);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(chain, "cudnn_int8_us")));
  ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(chain, "floor_us")));
  cJSON *sum = cJSON_GetObjectItem(o, "sum_of_nodes");
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(sum, "cudnn_int8_us")));
  ck_assert_double_eq(cJSON_GetObjectItem(sum, "convtune_us")->valuedouble, 130);
  cJSON *ips = cJSON_GetObjectItem(o, "images_per_s");
  ck_assert_double_eq_tol(cJSON_GetObjectItem(ips, "convtune_us")->valuedouble, 200000, 0.05);
  ck_assert_double_eq_tol(cJSON_GetObjectItem(ips, "cudnn_fp16_us")->valuedouble, 80000, 0.05);
  ck_assert_double_eq_tol(cJSON_GetObjectItem(o, "convtune_over_cudnn_fp16")->valuedouble, 0.4,
                          1e-9);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "convtune_over_cudnn_int8")));
  ck_assert_ptr_nonnull(strstr(
      cJSON_GetObjectItem(cJSON_GetObjectItem(o, "chain_notes"), "cudnn_int8_us")->valuestring,
      "does not run 1 of the 9"));
  ck_assert_str_eq(cJSON_GetObjectItem(o, "tensors")->valuestring, "own");
  ck_assert_ptr_null(cJSON_GetObjectItem(o, "arena_buffers"));
  ck_assert_ptr_null(cJSON_GetObjectItem(o, "streams")); /* one chain: no copies */
  cJSON *nodes = cJSON_GetObjectItem(o, "nodes");
  ck_assert_int_eq(cJSON_GetArraySize(nodes), 10);
  cJSON *n3 = cJSON_GetArrayItem(nodes, 3);
  ck_assert_str_eq(cJSON_GetObjectItem(n3, "check")->valuestring, "wrong");
  ck_assert_str_eq(cJSON_GetObjectItem(n3, "residual")->valuestring, "conv stem");
  ck_assert_int_eq(cJSON_GetObjectItem(n3, "residual_conv")->valueint, 0);
  ck_assert_double_eq(cJSON_GetObjectItem(n3, "convtune_us")->valuedouble, 13);
  cJSON *n5 = cJSON_GetArrayItem(nodes, 5);
  ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(n5, "runs")));
  ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(n5, "why")->valuestring, "groups 3"));
  cJSON *n4 = cJSON_GetArrayItem(nodes, 4);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(n4, "cudnn_int8_us")));
  ck_assert_str_eq(
      cJSON_GetObjectItem(cJSON_GetObjectItem(n4, "notes"), "cudnn_int8_us")->valuestring,
      "no algorithm runs: 8 unsupported");
  cJSON_Delete(o);

  /* every node exact: the document says so */
  r.nodes[3].check = MBENCH_EXACT;
  r.n_exact = 9;
  r.n_wrong = 0;
  o = mbench_to_json(&r);
  ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "all_exact")));
  cJSON_Delete(o);

  /* written and read back */
  char dir[400];
  scratch(dir, sizeof dir);
  char path[600];
  mbench_results_path(&r, dir, path, sizeof path);
  char want[600];
  snprintf(want, sizeof want, "%s/h200-tiny-qdq-b16.json", dir);
  ck_assert_str_eq(path, want);
  ct_err err = {0};
  ck_assert_int_eq(mbench_write_json(&r, path, &err), CT_OK);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  cJSON *back = cJSON_Parse(buf);
  ck_assert_ptr_nonnull(back);
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(back, "nodes")), 10);
  cJSON_Delete(back);
  unlink(path);
  rmdir(dir);
  /* a file in a folder that cannot be made */
  ck_assert_int_eq(mbench_write_json(&r, "/proc/no/such/dir/x.json", &err), CT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err.msg, "/proc/no/such/dir/x.json"));
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

/* Every table row of md has its header's number of cells; returns how
 * many tables there are. */
static int tables_whole(char *md) {
  int header_bars = -1, tables = 0;
  for (char *line = md; *line;) {
    char *end = strchr(line, '\n');
    if (end) *end = '\0';
    if (line[0] != '|') {
      header_bars = -1;
    } else {
      int bars = 0;
      for (char *p = line; *p; p++) bars += *p == '|' && (p == line || p[-1] != '\\');
      if (header_bars < 0) {
        header_bars = bars;
        tables++;
      }
      ck_assert_int_eq(bars, header_bars);
    }
    if (!end) break;
    *end = '\n';
    line = end + 1;
  }
  return tables;
}

START_TEST(markdown_report) {
  mbench_result r;
  model *m;
  synthetic(&r, &m);
  char *md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "## convtune bench --model: tiny_qdq, batch 16, layout nhwc"));
  ck_assert_ptr_nonnull(strstr(md, "- command: `convtune bench --model tiny_qdq.onnx"));
  ck_assert_ptr_nonnull(strstr(md, "10 conv nodes, 9 run, 1 skipped"));
  ck_assert_ptr_nonnull(strstr(md, "peaks measured in this run"));
  ck_assert_ptr_nonnull(strstr(md, "- inputs: 6 of the 10 node inputs"));
  ck_assert_ptr_nonnull(strstr(md, "images 0 and 15 of the batch"));
  ck_assert_ptr_nonnull(strstr(md, "- tensors: each node's output in a buffer of its own"));
  ck_assert_ptr_nonnull(strstr(md, "**not every node exact: 8 exact, 1 wrong, 0 unchecked**"));
  ck_assert_ptr_null(strstr(md, "every node exact**"));
  ck_assert_ptr_nonnull(strstr(md, "cuDNN sides: cuDNN not built in"));
  /* the node rows: name, short key, fused, input, times, floor, ratio, check */
  ck_assert_ptr_nonnull(strstr(md, "| 1 | a | `i8.i8.i8-c16-k16-8x8-r3x3-s1x1-p1x1.1x1-bias-qc` | "
                                   "Relu | conv stem | 11.00 | 21.00 | 31.00 |"));
  ck_assert_ptr_nonnull(strstr(md, "conv a; residual: conv stem"));
  ck_assert_ptr_nonnull(strstr(md, "| WRONG: image 15 channel 2"));
  ck_assert_ptr_nonnull(strstr(md, "| fresh: MaxPool /pool/MaxPool |"));
  /* totals */
  ck_assert_ptr_nonnull(strstr(md, "| chain, one graph, us | 80.00 | 200.00 | - |"));
  ck_assert_ptr_nonnull(strstr(md, "| sum of the nodes alone, us | 130.00 |"));
  ck_assert_ptr_nonnull(strstr(md, "| images per second (chain) | 200000 | 80000 | - |"));
  ck_assert_ptr_nonnull(strstr(md, "| convtune / side (chain) | 1.00 | 0.40 | - |"));
  ck_assert_ptr_nonnull(strstr(md, "2.50x as fast as cuDNN fp16's (80.0 against 200.0 us)"));
  ck_assert_ptr_nonnull(strstr(md, "- chain, cudnn_int8_us: cuDNN int8 does not run 1 of the 9"));
  ck_assert_ptr_nonnull(strstr(md, "- mismatch, cudnn_int8_us: no algorithm runs"));
  ck_assert_ptr_nonnull(strstr(md, "Skipped (not run on any side):\n- 5 grouped `-`: groups 3"));
  /* a skipped node has no row */
  ck_assert_ptr_null(strstr(md, "| 5 | grouped |"));
  /* every row of a table has its header's number of cells */
  ck_assert_int_eq(tables_whole(md), 2);
  free(md);
  /* all exact, cuDNN loaded, a name with a '|' */
  r.nodes[3].check = MBENCH_EXACT;
  r.n_exact = 9;
  r.n_wrong = 0;
  r.head.cudnn_built = 1;
  snprintf(r.head.cudnn_version, sizeof r.head.cudnn_version, "9.14.0");
  snprintf(r.nodes[1].name, sizeof r.nodes[1].name, "a|b");
  md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "- **every node exact** (9 of 9)"));
  ck_assert_ptr_nonnull(strstr(md, "- cuDNN 9.14.0, legacy API"));
  ck_assert_ptr_nonnull(strstr(md, "| a\\|b |"));
  free(md);
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

/* --streams: S chains at once, in the document and the report beside the
 * one chain; the floor S times the chain's, images S x batch. */
START_TEST(streams_report) {
  mbench_result r;
  model *m;
  synthetic(&r, &m);
  r.streams = 2;
  r.streams_chain[MBENCH_CONVTUNE] = 120;
  r.streams_chain[MBENCH_CUDNN_FP16] = 400;
  r.streams_chain[MBENCH_CUDNN_INT8] = BENCH_NONE;
  snprintf(r.streams_note[MBENCH_CUDNN_INT8], sizeof r.streams_note[0], "no chain on this side");
  r.copies_identical = 1;
  double floor_chain = mbench_sum(&r, MBENCH_FLOOR, NULL);
  ck_assert(floor_chain > 0);
  cJSON *o = mbench_to_json(&r);
  cJSON *so = cJSON_GetObjectItem(o, "streams");
  ck_assert_ptr_nonnull(so);
  ck_assert_int_eq(cJSON_GetObjectItem(so, "copies")->valueint, 2);
  ck_assert_int_eq(cJSON_GetObjectItem(so, "images")->valueint, 32);
  ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(so, "copies_identical")));
  cJSON *ch = cJSON_GetObjectItem(so, "chain");
  ck_assert_double_eq(cJSON_GetObjectItem(ch, "convtune_us")->valuedouble, 120);
  ck_assert_double_eq(cJSON_GetObjectItem(ch, "cudnn_fp16_us")->valuedouble, 400);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(ch, "cudnn_int8_us")));
  ck_assert_double_eq_tol(cJSON_GetObjectItem(ch, "floor_us")->valuedouble, 2 * floor_chain,
                          0.01);
  ck_assert_double_eq_tol(
      cJSON_GetObjectItem(cJSON_GetObjectItem(so, "images_per_s"), "convtune_us")->valuedouble,
      32 / 120e-6, 0.05);
  ck_assert_double_eq_tol(cJSON_GetObjectItem(so, "convtune_over_cudnn_fp16")->valuedouble, 0.3,
                          1e-9);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(so, "convtune_over_cudnn_int8")));
  ck_assert_str_eq(
      cJSON_GetObjectItem(cJSON_GetObjectItem(so, "notes"), "cudnn_int8_us")->valuestring,
      "no chain on this side");
  /* the one chain's figures stand beside them */
  ck_assert_double_eq(
      cJSON_GetObjectItem(cJSON_GetObjectItem(o, "chain"), "convtune_us")->valuedouble, 80);
  cJSON_Delete(o);
  char *md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "- 2 chains at once (--streams 2)"));
  ck_assert_ptr_nonnull(strstr(md, "2 x 16 = 32 images"));
  ck_assert_ptr_nonnull(strstr(md, "every copy's outputs equal the first's, byte for byte"));
  ck_assert_ptr_nonnull(strstr(md, "| 2 chains at once, 32 images, us | 120.00 | 400.00 | - |"));
  ck_assert_ptr_nonnull(strstr(md, "| images per second (2 chains at once) | 266667 | 80000 | - |"));
  ck_assert_ptr_nonnull(strstr(md, "| convtune / side (2 chains at once) | 1.00 | 0.30 | - |"));
  ck_assert_ptr_nonnull(
      strstr(md, "With 2 chains at once (32 images), convtune's are 3.33x as fast as cuDNN "
                 "fp16's (120.0 against 400.0 us)."));
  ck_assert_ptr_nonnull(strstr(md, "- 2 chains at once, cudnn_int8_us: no chain on this side"));
  ck_assert_int_eq(tables_whole(md), 2);
  free(md);
  /* copies that differ say which, and have no speed */
  r.copies_identical = 0;
  r.streams_chain[MBENCH_CONVTUNE] = BENCH_NONE;
  snprintf(r.streams_note[MBENCH_CONVTUNE], sizeof r.streams_note[0],
           "copy 1's output of node 3 b differs from copy 0's");
  md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "convtune's copies: copy 1's output of node 3 b differs"));
  ck_assert_ptr_nonnull(strstr(md, "| 2 chains at once, 32 images, us | - | 400.00 | - |"));
  ck_assert_ptr_null(strstr(md, "With 2 chains at once"));
  free(md);
  o = mbench_to_json(&r);
  so = cJSON_GetObjectItem(o, "streams");
  ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(so, "copies_identical")));
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(so, "chain"), "convtune_us")));
  ck_assert_ptr_nonnull(strstr(
      cJSON_GetObjectItem(cJSON_GetObjectItem(so, "notes"), "convtune_us")->valuestring,
      "differs from copy 0's"));
  cJSON_Delete(o);
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

START_TEST(csv_rows) {
  mbench_result r;
  model *m;
  synthetic(&r, &m);
  char *csv = csv_of(&r);
  int lines = 0;
  for (char *p = csv; *p; p++) lines += *p == '\n';
  ck_assert_int_eq(lines, 11);
  ck_assert_ptr_nonnull(strstr(csv, "index,name,key,fused,runs,input,residual,floor_us,"
                                    "convtune_us,cudnn_fp16_us,cudnn_int8_us,"));
  ck_assert_ptr_nonnull(strstr(csv, ",conv stem,,"));
  /* node 4: no cuDNN int8, so an empty field and no ratio */
  ck_assert_ptr_nonnull(strstr(csv, ",convtune_in_chain_us,ratio_cudnn_fp16,"));
  ck_assert_ptr_nonnull(strstr(csv, ",14.000,24.000,,,0.5833,,exact,"));
  ck_assert_ptr_nonnull(strstr(csv, "\n5,grouped,-,"));
  ck_assert_ptr_nonnull(strstr(csv, ",nhwc,groups 3: groups must divide c and k\n"));
  free(csv);
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

/* --arena's plan: a buffer is reused once the last node reading it has
 * run, never before; the smallest free one that fits is taken */
START_TEST(arena_plan) {
  /* 0 -> 1 -> 2 -> 3 -> 4, node 3 also reads node 1 (a residual) */
  const int runs[] = {1, 1, 1, 1, 1}, last[] = {1, 3, 3, 4, 4};
  const size_t bytes[] = {100, 50, 100, 50, 100};
  int buf[5];
  size_t bb[5];
  ck_assert_int_eq(mbench_arena_plan(5, runs, bytes, last, buf, bb), 3);
  ck_assert_int_eq(buf[0], 0);
  ck_assert_int_eq(buf[1], 1);
  ck_assert_int_eq(buf[2], 0); /* node 0's, free once node 1 has run */
  ck_assert_int_eq(buf[3], 2); /* node 1's is still to be read by node 3 */
  ck_assert_int_eq(buf[4], 0); /* the smallest free one that fits: 0 (100), not 1 (50) */
  ck_assert_uint_eq(bb[0], 100);
  ck_assert_uint_eq(bb[1], 50);
  ck_assert_uint_eq(bb[2], 50);
  /* a node that does not run takes none */
  const int runs2[] = {1, 0, 1};
  const int last2[] = {2, 1, 2};
  const size_t bytes2[] = {8, 8, 8};
  int buf2[3];
  size_t bb2[3];
  ck_assert_int_eq(mbench_arena_plan(3, runs2, bytes2, last2, buf2, bb2), 2);
  ck_assert_int_eq(buf2[1], -1);
  /* random DAGs: no buffer is written while its tensor has a reader to come,
   * and every buffer holds its tensors */
  uint64_t x = 88172645463325252ull;
  for (int trial = 0; trial < 500; trial++) {
    enum { N = 40 };
    int rn[N], lu[N], bo[N];
    size_t by[N], bz[N];
    for (int i = 0; i < N; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      rn[i] = x % 10 != 0;
      by[i] = 1 + x % 1000;
      lu[i] = i;
    }
    for (int j = 1; j < N; j++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const int a = (int)(x % (uint64_t)j), b = (int)((x >> 20) % (uint64_t)j);
      if (!rn[j]) continue;
      if (rn[a] && lu[a] < j) lu[a] = j;
      if (x % 3 == 0 && rn[b] && lu[b] < j) lu[b] = j;
    }
    const int nb = mbench_arena_plan(N, rn, by, lu, bo, bz);
    ck_assert_int_ge(nb, 1);
    for (int i = 0; i < N; i++) {
      if (!rn[i]) {
        ck_assert_int_eq(bo[i], -1);
        continue;
      }
      ck_assert_int_lt(bo[i], nb);
      ck_assert_uint_ge(bz[bo[i]], by[i]);
      for (int j = i + 1; j <= lu[i]; j++) ck_assert(!rn[j] || bo[j] != bo[i]);
    }
  }
  /* the report says how the tensors were placed */
  mbench_result r;
  model *m;
  synthetic(&r, &m);
  r.arena = 1, r.arena_buffers = 3, r.arena_bytes = 2.5e6, r.out_bytes = 7.25e6;
  char *md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "- tensors (--arena): placed as a runtime's arena does"));
  ck_assert_ptr_nonnull(strstr(md, "7.2 MB of outputs in 3 buffers of 2.5 MB"));
  free(md);
  cJSON *o = mbench_to_json(&r);
  ck_assert_str_eq(cJSON_GetObjectItem(o, "tensors")->valuestring, "arena");
  ck_assert_int_eq(cJSON_GetObjectItem(o, "arena_buffers")->valueint, 3);
  ck_assert_double_eq(cJSON_GetObjectItem(o, "arena_mb")->valuedouble, 2.5);
  ck_assert_double_eq(cJSON_GetObjectItem(o, "outputs_mb")->valuedouble, 7.25);
  cJSON_Delete(o);
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

START_TEST(in_chain_cells) {
  /* --in-chain's values: a column after convtune's, a sum row, a field of
   * each node (null where not measured), a CSV column; absent from the
   * tables when no node has one */
  mbench_result r;
  model *m;
  synthetic(&r, &m);
  ck_assert(!mbench_has_in_chain(r.nodes[0].in_chain));
  ck_assert(!bench_has(mbench_in_chain_sum(&r)));
  char *md = markdown(&r);
  ck_assert_ptr_null(strstr(md, "in chain"));
  free(md);
  cJSON *o = mbench_to_json(&r);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "convtune_in_chain_sum_us")));
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "nodes"), 1),
                                             "convtune_in_chain_us")));
  cJSON_Delete(o);
  /* measured on every node that runs but one: no sum */
  double want = 0;
  for (int i = 0; i < r.n_nodes; i++)
    if (r.nodes[i].runs) want += r.nodes[i].in_chain = 5 + 0.5 * i;
  r.nodes[2].in_chain = NAN;
  ck_assert(!bench_has(mbench_in_chain_sum(&r)));
  md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "| convtune us | convtune in chain us | cuDNN fp16 us |"));
  ck_assert_ptr_nonnull(strstr(md, "- in chain (--in-chain): convtune's chain cut after the node"));
  ck_assert_ptr_nonnull(strstr(md, "| conv stem | 11.00 | 5.50 | 21.00 | 31.00 |"));
  ck_assert_ptr_nonnull(strstr(md, "| sum of the nodes in the chain (cut by cut), us | - |"));
  ck_assert_int_eq(tables_whole(md), 2);
  free(md);
  r.nodes[2].in_chain = 6;
  ck_assert_double_eq_tol(mbench_in_chain_sum(&r), want, 1e-9);
  md = markdown(&r);
  char row[128];
  snprintf(row, sizeof row, "| sum of the nodes in the chain (cut by cut), us | %.2f | - |", want);
  ck_assert_ptr_nonnull(strstr(md, row));
  ck_assert_int_eq(tables_whole(md), 2);
  free(md);
  o = mbench_to_json(&r);
  ck_assert_double_eq_tol(cJSON_GetObjectItem(o, "convtune_in_chain_sum_us")->valuedouble, want,
                          1e-3);
  ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "nodes"), 1),
                                          "convtune_in_chain_us")
                          ->valuedouble,
                      5.5);
  cJSON_Delete(o);
  char *csv = csv_of(&r);
  ck_assert_ptr_nonnull(strstr(csv, ",14.000,24.000,,7.000,0.5833,,exact,"));
  free(csv);
  /* a difference of two chain timings may be negative (a small node in
   * the noise): kept in every writer and in the sum, not taken for "not
   * measured" (it was, and the sum came out null: ResNet-50 at b256) */
  want += -1.25 - r.nodes[1].in_chain;
  r.nodes[1].in_chain = -1.25;
  ck_assert(mbench_has_in_chain(r.nodes[1].in_chain));
  ck_assert_double_eq_tol(mbench_in_chain_sum(&r), want, 1e-9);
  md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "| conv stem | 11.00 | -1.25 | 21.00 | 31.00 |"));
  snprintf(row, sizeof row, "| sum of the nodes in the chain (cut by cut), us | %.2f | - |", want);
  ck_assert_ptr_nonnull(strstr(md, row));
  free(md);
  o = mbench_to_json(&r);
  ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "nodes"), 1),
                                          "convtune_in_chain_us")
                          ->valuedouble,
                      -1.25);
  ck_assert_double_eq_tol(cJSON_GetObjectItem(o, "convtune_in_chain_sum_us")->valuedouble, want,
                          1e-3);
  cJSON_Delete(o);
  csv = csv_of(&r);
  ck_assert_ptr_nonnull(strstr(csv, ",-1.250,"));
  free(csv);
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

/* A MobileNetV2 block's start, batch 2: a stem (3 -> 8) from the graph
 * input, the expansion (8 -> 24, 1x1) fused into the depthwise 3x3 it
 * feeds (the importer's model_opts.fuse_pre), and a projection (24 -> 8)
 * reading the depthwise conv's output. */
static model *fused_model(void) {
  model *m = new_model(4, 2);
  set_conv(m, 0, "stem", conv(2, 3, 8, 8, 3, 1, 1, CT_DTYPE_INT8, 0), -1, "graph input 'x'", -1,
           NULL);
  set_conv(m, 1, "expand", conv(2, 8, 24, 8, 1, 1, 0, CT_DTYPE_INT8, 0), 0, NULL, -1, NULL);
  ct_workload dw = conv(2, 24, 24, 8, 3, 1, 1, CT_DTYPE_INT8, 0);
  dw.groups = 24;
  dw.pre_c = 8;
  dw.pre_data_type = CT_DTYPE_INT8;
  dw.pre_epi = m->convs[1].w.epi;
  set_conv(m, 2, "dw", dw, 0, NULL, -1, NULL); /* its data: the expansion's, the stem's output */
  free(m->convs[2].fused);
  m->convs[2].fused = strdup("pre: expand (1x1), Relu");
  m->convs[2].pre_conv = 1;
  m->convs[1].fused_into = 2;
  set_conv(m, 3, "project", conv(2, 24, 8, 8, 1, 1, 0, CT_DTYPE_INT8, 0), 2, NULL, -1, NULL);
  return m;
}

/* A fused node: runs once, as its own conv, reading the expansion's input
 * (the stem's real output: pre_c channels of pre_data_type), and feeds the
 * next; the expansion's node does not run and says where it went; ops and
 * bytes count both convs, the key the fused workload; every writer says how
 * many convs ran fused into how many nodes and names both. Its consumer
 * skipped, the expansion says so too. */
START_TEST(plan_fused_node) {
  model *m = fused_model();
  mbench_result r;
  memset(&r, 0, sizeof r);
  ct_err err = {0};
  ck_assert_msg(mbench_plan(m, &h200, NULL, &r, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(r.n_nodes, 4);
  ck_assert_int_eq(r.n_run, 3);
  ck_assert_int_eq(r.n_fused, 1);
  const mbench_node *nd = r.nodes;
  ck_assert_int_eq(nd[1].runs, 0);
  ck_assert_int_eq(nd[1].fused_into, 2);
  ck_assert_int_eq(nd[1].pre_conv, -1);
  ck_assert_str_eq(nd[1].why, "fused into dw: runs inside it as its 1x1 conv");
  ck_assert_int_eq(nd[2].runs, 1);
  ck_assert_int_eq(nd[2].pre_conv, 1);
  ck_assert_int_eq(nd[2].fused_into, -1);
  ck_assert_str_eq(nd[2].pre_name, "expand");
  ck_assert_str_eq(nd[2].fused, "pre: expand (1x1), Relu");
  ck_assert_ptr_nonnull(strstr(nd[2].key, "-g24-pre8.i8.bias.qc"));
  /* the stem's 8 int8 channels are the fused node's data, and its output the projection's */
  ck_assert_int_eq(nd[2].input_conv, 0);
  ck_assert_str_eq(nd[2].input, "conv stem");
  ck_assert_int_eq(nd[3].input_conv, 2);
  ck_assert_str_eq(nd[3].input, "conv dw");
  ck_assert_int_eq(r.n_fresh_inputs, 1);
  /* both convs' operations and weights; the 24-channel intermediate never in memory */
  const double px = 2.0 * 8 * 8;
  ck_assert_double_eq(nd[2].ops, 2 * px * 24 * 9 + 2 * px * 24 * 8);
  ck_assert_double_eq(nd[2].bytes, px * 8 + 24 * 9 + 24 * 8 + px * 24);
  for (int i = 0; i < 4; i++) r.nodes[i].t[MBENCH_CONVTUNE] = nd[i].runs ? 1 + i : BENCH_NONE;
  ck_assert_double_eq(mbench_sum(&r, MBENCH_CONVTUNE, NULL), 1 + 3 + 4);
  char *md = markdown(&r);
  ck_assert_msg(strstr(md, "4 conv nodes, 3 run, 0 skipped; 2 convs ran fused into 1 node (") !=
                    NULL,
                "%s", md);
  ck_assert_ptr_nonnull(strstr(md, "| 2 | dw | `"));
  ck_assert_ptr_nonnull(strstr(md, "| pre: expand (1x1), Relu | conv stem |"));
  ck_assert_ptr_nonnull(strstr(md, "Fused nodes"));
  ck_assert_ptr_nonnull(strstr(md, "- 2 dw runs 1 expand `conv2d-nhwc-i8.i8.i8-n2-c8-k24-"));
  ck_assert_ptr_null(strstr(md, "| 1 | expand |"));
  ck_assert_ptr_null(strstr(md, "Skipped"));
  ck_assert_int_eq(tables_whole(md), 2);
  free(md);
  cJSON *o = mbench_to_json(&r);
  ck_assert_int_eq(cJSON_GetObjectItem(o, "n_fused_nodes")->valueint, 1);
  ck_assert_int_eq(cJSON_GetObjectItem(o, "n_fused_convs")->valueint, 2);
  cJSON *nodes = cJSON_GetObjectItem(o, "nodes");
  cJSON *n1 = cJSON_GetArrayItem(nodes, 1), *n2 = cJSON_GetArrayItem(nodes, 2);
  ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(n1, "runs")));
  ck_assert_str_eq(cJSON_GetObjectItem(n1, "fused_into")->valuestring, "dw");
  ck_assert_int_eq(cJSON_GetObjectItem(n1, "fused_into_conv")->valueint, 2);
  ck_assert_str_eq(cJSON_GetObjectItem(n2, "pre")->valuestring, "expand");
  ck_assert_int_eq(cJSON_GetObjectItem(n2, "pre_conv")->valueint, 1);
  ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 3), "pre"));
  ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(o, "method")->valuestring, "fused node"));
  cJSON_Delete(o);
  char *csv = csv_of(&r);
  ck_assert_ptr_nonnull(strstr(csv, "\n1,expand,"));
  ck_assert_ptr_nonnull(strstr(csv, ",fused into dw: runs inside it as its 1x1 conv\n"));
  free(csv);

  /* the fused node skipped at run time: the expansion with it, and both listed */
  const char *skip[4] = {0};
  skip[2] = "no kernel runs it in layout nhwc: test";
  ck_assert_int_eq(mbench_plan(m, &h200, skip, &r, &err), CT_OK);
  ck_assert_int_eq(r.n_run, 2);
  ck_assert_int_eq(r.n_fused, 0);
  ck_assert_int_eq(r.nodes[1].runs, 0);
  ck_assert_ptr_nonnull(strstr(r.nodes[1].why, "fused into dw, which is not run: no kernel"));
  ck_assert_str_eq(r.nodes[3].input, "fresh: dw is not run");
  md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "4 conv nodes, 2 run, 2 skipped\n"));
  ck_assert_ptr_nonnull(strstr(md, "- 1 expand `"));
  ck_assert_ptr_null(strstr(md, "Fused nodes"));
  free(md);

  /* a producer whose output is not the fused node's data (16 channels, not pre_c 8) */
  m->convs[0].w.k = 16;
  ck_assert_int_eq(mbench_plan(m, &h200, NULL, &r, &err), CT_OK);
  ck_assert_int_eq(r.nodes[2].input_conv, -1);
  ck_assert_msg(strstr(r.nodes[2].input, "(16 channels), this conv reads 2x8x8x8 int8") != NULL,
                "%s", r.nodes[2].input);
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

START_TEST(plan_of_a_model_file) {
  /* the importer's tiny QDQ model (tests/data/tiny_qdq.onnx): a stem from
   * the graph input, two convs after a MaxPool, a block's last conv (data
   * from one, residual from the other), then two convs in a row */
  const char *src = getenv("CT_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/tiny_qdq.onnx", src ? src : ".");
  model_opts mo;
  model_opts_default(&mo);
  mo.batch = 4;
  model *m = NULL;
  ct_err err = {0};
  ck_assert_msg(model_load(path, &mo, &m, &err) == CT_OK, "%s", err.msg);
  mbench_result r;
  memset(&r, 0, sizeof r);
  ck_assert_int_eq(mbench_plan(m, &h200, NULL, &r, &err), CT_OK);
  ck_assert_str_eq(r.head.set, "tiny_qdq");
  ck_assert_int_eq(r.head.batch, 4);
  ck_assert_int_eq(r.n_nodes, 6);
  ck_assert_int_eq(r.n_run, 6);
  static const struct {
    const char *name;
    int input, residual;
  } want[] = {{"stem", -1, -1}, {"a", -1, -1}, {"ds", -1, -1},
              {"b", 1, 2},      {"c1", 3, -1}, {"c2", 4, -1}};
  for (int i = 0; i < 6; i++) {
    ck_assert_str_eq(r.nodes[i].name, want[i].name);
    ck_assert_int_eq(r.nodes[i].input_conv, want[i].input);
    ck_assert_int_eq(r.nodes[i].residual_conv, want[i].residual);
    ck_assert(bench_has(r.nodes[i].t[MBENCH_FLOOR]));
    /* the model's values go through the reference as they are */
    const model_conv *mc = &m->convs[i];
    ct_workload pw = mc->w;
    pw.layout = CT_LAYOUT_NCHW;
    pw.n = 1;
    size_t nd = (size_t)workload_data_elems(&pw), no = (size_t)workload_out_elems(&pw);
    uint8_t *data = malloc(nd), *res = malloc(no), *out = malloc(no);
    rng g;
    rng_seed(&g, (uint64_t)i);
    bench_fill_random(&g, data, nd);
    bench_fill_random(&g, res, no);
    ck_assert_msg(bench_reference_image(&pw, &mc->q, data, mc->weights,
                                        pw.epi.residual ? res : NULL, out, 3, &err) == CT_OK,
                  "%s: %s", mc->name, err.msg);
    free(data);
    free(res);
    free(out);
  }
  ck_assert_str_eq(r.nodes[0].input, "fresh: graph input 'x'");
  ck_assert_ptr_nonnull(strstr(r.nodes[1].input, "fresh: MaxPool"));
  ck_assert_int_eq(r.n_fresh_inputs, 3);
  mbench_result_free(&r);
  model_free(m);
}
END_TEST

/* model_opts.fuse_pre that fuses every pair the importer allows. */
static int fuse_all(const ct_workload *w, void *user) {
  (void)w;
  (void)user;
  return 1;
}

/* The committed inverted residual block (tests/data/tiny_grouped_qdq.onnx)
 * read with its expansion fused into its depthwise conv: one node of the
 * plan; and the check's reference of that node (ct_reference_qconv of the
 * fused workload, one image, channels-last as it runs, OHWI weights) equals
 * the two convs' references chained as the check of separate nodes computes
 * them (bench_reference_image, plain), on the same image. */
START_TEST(plan_of_a_fused_model_file) {
  const char *src = getenv("CT_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/tiny_grouped_qdq.onnx", src ? src : ".");
  model_opts mo;
  model_opts_default(&mo);
  mo.batch = 2;
  mo.fuse_pre = fuse_all;
  model *m = NULL;
  ct_err err = {0};
  ck_assert_msg(model_load(path, &mo, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(model_n_fused(m), 1);
  mbench_result r;
  memset(&r, 0, sizeof r);
  ck_assert_int_eq(mbench_plan(m, &h200, NULL, &r, &err), CT_OK);
  ck_assert_int_eq(r.n_nodes, 5);
  ck_assert_int_eq(r.n_run, 4);
  ck_assert_int_eq(r.n_fused, 1);
  ck_assert_int_eq(r.nodes[0].runs, 0);
  ck_assert_int_eq(r.nodes[1].pre_conv, 0);
  ck_assert_str_eq(r.nodes[1].input, "fresh: graph input 'x'");
  ck_assert_int_eq(r.nodes[2].input_conv, 1);
  const model_conv *e = &m->convs[0], *d = &m->convs[1];
  ct_workload w1 = d->w, we = e->w, wd;
  w1.n = we.n = 1;
  workload_main(&w1, &wd);
  we.layout = wd.layout = CT_LAYOUT_NCHW;
  const int64_t sp = (int64_t)w1.in[0] * w1.in[1], c0 = w1.pre_c, c1 = w1.c, k = w1.k;
  size_t n_in = (size_t)(c0 * sp), n_mid = (size_t)(c1 * sp), n_out = (size_t)(k * sp);
  int8_t *ohwi = malloc((size_t)workload_weight_elems(&wd));
  uint8_t *plain = malloc(n_in), *nhwc = malloc(n_in), *mid = malloc(n_mid);
  uint8_t *chained = malloc(n_out), *fused = malloc(n_out), *fused_plain = malloc(n_out);
  ck_assert(ohwi && plain && nhwc && mid && chained && fused && fused_plain);
  rng g;
  rng_seed(&g, 5);
  bench_fill_random(&g, plain, n_in);
  pack_nhwc(plain, nhwc, 1, 1, c0, sp);
  pack_ohwi(d->weights, ohwi, k, workload_cpg(&wd), (int64_t)wd.kernel[0] * wd.kernel[1]);
  char msg[256];
  ck_assert_msg(ct_reference_qconv(&w1, &d->q, nhwc, ohwi, NULL, fused, msg, sizeof msg) == CT_OK,
                "%s", msg);
  unpack_nhwc(fused, fused_plain, 1, 1, k, sp);
  ck_assert_msg(bench_reference_image(&we, &e->q, plain, e->weights, NULL, mid, 2, &err) == CT_OK,
                "%s", err.msg);
  ct_quant qd = d->q; /* the depthwise conv's own values */
  qd.pre = NULL;
  qd.pre_weights = NULL;
  ck_assert_msg(bench_reference_image(&wd, &qd, mid, d->weights, NULL, chained, 3, &err) == CT_OK,
                "%s", err.msg);
  char note[256];
  ck_assert_msg(mbench_compare(&wd, fused_plain, chained, 0, note, sizeof note) == 0, "%s", note);
  /* a wrong intermediate is seen */
  mid[0] ^= 0x55;
  ck_assert_int_eq(bench_reference_image(&wd, &qd, mid, d->weights, NULL, chained, 3, &err), CT_OK);
  ck_assert_int_gt(mbench_compare(&wd, fused_plain, chained, 0, note, sizeof note), 0);
  free(ohwi);
  free(plain);
  free(nhwc);
  free(mid);
  free(chained);
  free(fused);
  free(fused_plain);
  mbench_result_free(&r);
  model_free(m);
}
END_TEST

/* --streams out of range, or with --arena: refused before the GPU is asked */
START_TEST(streams_refused) {
  model *m = wiring_model();
  bench_opts o;
  bench_opts_default(&o);
  o.quiet = 1;
  ck_assert_int_eq(o.streams, 1);
  mbench_result r;
  memset(&r, 0, sizeof r);
  ct_err err = {0};
  o.streams = MBENCH_MAX_STREAMS + 1;
  ck_assert_int_eq(mbench_run(&o, m, &r, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "streams: 9, accepted 1..8"));
  o.streams = 0;
  ck_assert_int_eq(mbench_run(&o, m, &r, &err), CT_ERR_INVALID_ARG);
  o.streams = 2;
  o.arena = 1;
  ck_assert_int_eq(mbench_run(&o, m, &r, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "streams and arena together"));
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

START_TEST(run_without_gpu) {
  if (device_count() > 0) return; /* the GPU machine: test_gpu_model_bench runs it */
  model *m = wiring_model();
  bench_opts o;
  bench_opts_default(&o);
  o.quiet = 1;
  mbench_result r;
  memset(&r, 0, sizeof r);
  ct_err err = {0};
  ck_assert_int_eq(mbench_run(&o, m, &r, &err), CT_ERR_NO_DEVICE);
  ck_assert_ptr_nonnull(strstr(err.msg, "no CUDA device"));
  mbench_result_free(&r);
  free_model(m);
}
END_TEST

static void add_cpu(TCase *tc) {
  tcase_add_test(tc, images_first_and_last);
  tcase_add_test(tc, plan_wiring);
  tcase_add_test(tc, plan_rejects_invalid_supported);
  tcase_add_test(tc, plan_int32_all_fresh);
  tcase_add_test(tc, plan_packed_layout);
  tcase_add_test(tc, short_key_and_floor);
  tcase_add_test(tc, compare_first_mismatch);
  tcase_add_test(tc, reference_on_threads_equals_one);
  tcase_add_test(tc, sums_and_rates);
  tcase_add_test(tc, json_document);
  tcase_add_test(tc, markdown_report);
  tcase_add_test(tc, streams_report);
  tcase_add_test(tc, csv_rows);
  tcase_add_test(tc, in_chain_cells);
  tcase_add_test(tc, arena_plan);
  tcase_add_test(tc, plan_fused_node);
  tcase_add_test(tc, plan_of_a_model_file);
  tcase_add_test(tc, plan_of_a_fused_model_file);
  tcase_add_test(tc, streams_refused);
  tcase_add_test(tc, run_without_gpu);
}

static const test_case suite_cases[] = {
    {"cpu", 60, add_cpu},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"model_bench", suite_cases, 0, NULL};
  return test_main(&suite);
}
