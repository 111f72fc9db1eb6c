/*
 * test_gpu_quant.c (label gpu): the quantized epilogues end to end on a GPU,
 * through the public API only (ct_make_params, ct_qconv2d / ct_qconv3d),
 * against the CPU reference of the unfolded formula (reference_qconv).
 *
 * Every layer of ResNet-50 (conv2d_nchw4c_dp4a) and ResNet3D-18
 * (conv3d_ncdhw4c_dp4a), and an ESPCN-style subpixel layer (64 -> 48
 * channels, 3x3, depth_to_space 4, both orders; and its 3x form, 64 -> 27),
 * runs with each of nine
 * epilogues: uint8 data with its zero point, weight zero points, bias,
 * per-tensor and per-channel scales, clamps, a residual, int32 / int8 /
 * uint8 output and depth_to_space; three of them with ONNX Runtime's
 * rounding (CT_ROUND_ONNX), the residual's Add in both orders. Layouts alternate between plain (the
 * library packs, padding the stems' fourth channel with the zero point)
 * and packed. Inputs are random bytes over the full range, values from
 * quant_random (the stems' nonzero data zero point pads their borders),
 * outputs poisoned (0xA5) before the call; every element is compared.
 *
 * Environment: CT_DISPATCH_DB (the database; unset: defaults) and
 * CT_QUANT_SETS ("resnet50,resnet3d18,espcn" by default). Exits 77 without
 * a GPU. One line per workload goes to stdout.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "convtune/convtune.h"
#include "core/pack.h"
#include "core/quant.h"
#include "core/reference.h"
#include "core/rng.h"
#include "core/wlset.h"
#include "tests/gpu_probe.h"
#include "tests/util.h"

#define POISON_BYTE 0xA5
#define N_VARIANTS  9

static const char *db_path;
static const char *sets = "resnet50,resnet3d18,espcn";

#define CUDA_OK(call)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                     \
  } while (0)

/* Epilogue variant v of w (see the file comment). */
static ct_workload variant(const ct_workload *w, int v) {
  ct_workload q = *w;
  ct_epilogue *e = &q.epi;
  switch (v) {
  case 0: /* uint8 data with a zero point, raw int32 */
    q.data_type = CT_DTYPE_UINT8;
    e->data_zero_point = 1;
    break;
  case 1: /* asymmetric weights, bias, int32 */
    e->data_zero_point = e->weight_zero_point = e->bias = 1;
    break;
  case 2: /* per-tensor requantization to int8 */
    q.data_type = CT_DTYPE_UINT8;
    q.out_type = CT_DTYPE_INT8;
    e->data_zero_point = e->weight_zero_point = e->bias = 1;
    break;
  case 3: /* a ResNet block's last conv: bias, per-channel, residual, ReLU */
    q.out_type = CT_DTYPE_INT8;
    e->data_zero_point = e->bias = e->residual = 1;
    e->scale = CT_SCALE_CHANNEL;
    break;
  case 4: /* everything at once, uint8 out */
    q.data_type = q.out_type = CT_DTYPE_UINT8;
    e->data_zero_point = e->weight_zero_point = e->bias = e->residual = 1;
    e->scale = CT_SCALE_CHANNEL;
    break;
  case 5: /* depth_to_space 2, CRD, uint8 */
    q.out_type = CT_DTYPE_UINT8;
    e->bias = 1;
    e->scale = CT_SCALE_CHANNEL;
    e->d2s_block = 2;
    e->d2s_mode = CT_D2S_CRD;
    break;
  case 6: /* onnx rounding: uint8 data with its zero point, per channel, int8 out */
    q.data_type = CT_DTYPE_UINT8;
    q.out_type = CT_DTYPE_INT8;
    e->data_zero_point = e->bias = 1;
    e->scale = CT_SCALE_CHANNEL;
    e->rounding = CT_ROUND_ONNX;
    break;
  case 7: /* onnx: a QDQ ResNet block's last conv, int8, per tensor, residual */
    q.out_type = CT_DTYPE_INT8;
    e->bias = e->residual = 1;
    e->rounding = CT_ROUND_ONNX;
    break;
  default: /* onnx with everything, uint8 */
    q.data_type = q.out_type = CT_DTYPE_UINT8;
    e->data_zero_point = e->weight_zero_point = e->bias = e->residual = 1;
    e->scale = CT_SCALE_CHANNEL;
    e->rounding = CT_ROUND_ONNX;
  }
  return q;
}

static void fill(rng *r, uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rng_next(r);
}

static int same_bytes(const void *a, const void *b, size_t n, size_t *first) {
  const uint8_t *x = a, *y = b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i]) {
      *first = i;
      return 0;
    }
  return 1;
}

/* Run w (any layout) through ct_qconv* and compare with the reference. */
static void run_case(ct_context *ctx, const ct_workload *w, uint64_t seed, const char *name) {
  char key[CT_KEY_MAX];
  workload_key(w, key, sizeof key);
  int packed = w->layout == CT_LAYOUT_NCHW4C;
  size_t nd = (size_t)workload_data_elems(w);
  size_t nw = (size_t)workload_weight_elems(w); /* plain weights: K x C x kvol */
  size_t npw = ct_packed_weights_bytes(w), nout = ct_out_bytes(w);
  size_t nres = (size_t)workload_out_elems(w), nparams = ct_params_bytes(w);
  ck_assert_msg(npw && nout && nparams, "%s: sizes", key);
  uint8_t *data = malloc(nd), *res = malloc(nres);
  int8_t *weights = malloc(nw), *pweights = malloc(npw);
  void *want = malloc(nout), *got = malloc(nout), *params = malloc(nparams);
  ck_assert(data && res && weights && pweights && want && got && params);
  rng r;
  rng_seed(&r, seed);
  fill(&r, data, nd);
  fill(&r, (uint8_t *)weights, nw);
  fill(&r, res, nres);
  quant_store qs;
  ct_err err = {0};
  ck_assert_msg(quant_random(w, seed, &qs, &err) == CT_OK, "%s", err.msg);
  /* onnx's Add in both orders: by the seed's parity (consecutive seeds of
   * a layer or a subpixel form) */
  if (w->epi.rounding == CT_ROUND_ONNX && w->epi.residual) qs.q.residual_first = (int)(seed % 2);
  ck_assert_msg(ct_make_params(ctx, w, &qs.q, weights, params) == CT_OK, "%s: %s", key,
                ct_errmsg(ctx));
  /* the reference takes the weights in w's layout */
  geom3 g;
  workload_geom(w, &g);
  int64_t kvol = g.ker[0] * g.ker[1] * g.ker[2];
  if (packed) pack_oi4o4i(weights, pweights, g.k, g.c, kvol);
  ck_assert_msg(reference_qconv(w, &qs.q, data, packed ? pweights : weights,
                                w->epi.residual ? res : NULL, want, &err) == CT_OK,
                "%s: %s", key, err.msg);

  void *d_data, *d_w, *d_pw, *d_out, *d_res = NULL, *d_params;
  CUDA_OK(cudaMalloc(&d_data, nd));
  CUDA_OK(cudaMalloc(&d_w, nw));
  CUDA_OK(cudaMalloc(&d_pw, npw));
  CUDA_OK(cudaMalloc(&d_out, nout));
  CUDA_OK(cudaMalloc(&d_params, nparams));
  if (w->epi.residual) {
    CUDA_OK(cudaMalloc(&d_res, nres));
    CUDA_OK(cudaMemcpy(d_res, res, nres, cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaMemcpy(d_data, data, nd, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_w, weights, nw, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_params, params, nparams, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d_out, POISON_BYTE, nout));
  CUDA_OK(cudaDeviceSynchronize());
  ck_assert_msg(ct_pack_weights(ctx, w, d_w, d_pw, NULL) == CT_OK, "%s: %s", key, ct_errmsg(ctx));
  ct_status st = w->op == CT_OP_CONV3D
                     ? ct_qconv3d(ctx, w, d_data, d_pw, d_params, d_res, d_out, NULL)
                     : ct_qconv2d(ctx, w, d_data, d_pw, d_params, d_res, d_out, NULL);
  ck_assert_msg(st == CT_OK, "%s: %s", key, ct_errmsg(ctx));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(got, d_out, nout, cudaMemcpyDeviceToHost));
  size_t first = 0;
  int ok = same_bytes(got, want, nout, &first);
  ct_explanation ex;
  ck_assert_int_eq(ct_explain(ctx, w, &ex), CT_OK);
  printf("%-14s %-6s %-26s %s %s\n", name, packed ? "packed" : "plain", ex.template_name,
         ok ? "exact" : "WRONG", key);
  fflush(stdout);
  ck_assert_msg(ok, "%s: output byte %zu of %zu is 0x%02x, want 0x%02x", key, first, nout,
                ((uint8_t *)got)[first], ((uint8_t *)want)[first]);
  cudaFree(d_data);
  cudaFree(d_w);
  cudaFree(d_pw);
  cudaFree(d_out);
  cudaFree(d_res);
  cudaFree(d_params);
  quant_store_free(&qs);
  free(data);
  free(res);
  free(weights);
  free(pweights);
  free(want);
  free(got);
  free(params);
}

static void run_set(const char *set_name) {
  ct_context *ctx = NULL;
  ck_assert_msg(ct_open(db_path, 0, &ctx) == CT_OK, "ct_open: %s", ct_errmsg(ctx));
  wlset *s = NULL;
  ct_err err = {0};
  ck_assert_msg(wlset_load_named(set_name, 1, &s, &err) == CT_OK, "%s", err.msg);
  for (int i = 0; i < s->n_items; i++)
    for (int v = 0; v < N_VARIANTS; v++) {
      ct_workload w = variant(&s->items[i].w, v);
      if ((i + v) % 2) workload_packed(&w, &w);
      run_case(ctx, &w, 1000u * (uint64_t)i + (uint64_t)v, s->items[i].name);
    }
  wlset_free(s);
  ct_close(ctx);
}

static int wanted(const char *name) {
  const char *p = strstr(sets, name);
  size_t n = strlen(name);
  return p && (p == sets || p[-1] == ',') && (p[n] == ',' || p[n] == '\0');
}

START_TEST(resnet50_every_layer_every_epilogue) {
  if (wanted("resnet50")) run_set("resnet50");
}
END_TEST

START_TEST(resnet3d18_every_layer_every_epilogue) {
  if (wanted("resnet3d18")) run_set("resnet3d18");
}
END_TEST

/* ESPCN's subpixel layer: 64 -> 48 = 3 x 4^2 channels, 3x3, then
 * depth_to_space 4 into 3 channels at 4x; and at 3x, 64 -> 27 = 3 x 3^2,
 * whose K is not a multiple of 4 (the packed workload keeps K = 27, its
 * weights 7 chunks). Both orders, every variant, both layouts (packed: the
 * 3 output channels fill one chunk of 4, the fourth lane zero). */
START_TEST(espcn_subpixel_every_epilogue) {
  if (!wanted("espcn")) return;
  ct_context *ctx = NULL;
  ck_assert_msg(ct_open(db_path, 0, &ctx) == CT_OK, "ct_open: %s", ct_errmsg(ctx));
  int n = 0;
  for (int b = 4; b >= 3; b--)
    for (int mode = 0; mode < 2; mode++)
      for (int v = 0; v < N_VARIANTS; v++)
        for (int packed = 0; packed < 2; packed++) {
          ct_workload base;
          ct_workload_init(&base, CT_OP_CONV2D);
          base.c = 64;
          base.k = 3 * b * b;
          base.in[0] = 64;
          base.in[1] = 48;
          base.kernel[0] = base.kernel[1] = 3;
          base.pad_before[0] = base.pad_before[1] = base.pad_after[0] = base.pad_after[1] = 1;
          ct_workload w = variant(&base, v);
          w.epi.d2s_block = b;
          w.epi.d2s_mode = mode ? CT_D2S_CRD : CT_D2S_DCR;
          if (packed) workload_packed(&w, &w);
          run_case(ctx, &w, 500u + (uint64_t)n++, b == 4 ? "espcn_x4" : "espcn_x3");
        }
  ct_close(ctx);
}
END_TEST

static void add_quant(TCase *tc) {
  tcase_add_test(tc, espcn_subpixel_every_epilogue);
  tcase_add_test(tc, resnet50_every_layer_every_epilogue);
  tcase_add_test(tc, resnet3d18_every_layer_every_epilogue);
}

static const test_case suite_cases[] = {
    {"quant", 0, add_quant},
    {NULL, 0, NULL},
};

int main(void) {
  const char *p = getenv("CT_DISPATCH_DB");
  db_path = p && p[0] ? p : NULL;
  p = getenv("CT_QUANT_SETS");
  if (p && p[0]) sets = p;
  printf("database: %s; sets: %s\n", db_path ? db_path : "none (every workload: the default)",
         sets);
  static const test_suite suite = {"gpu_quant", suite_cases, 1, gpu_probe};
  return test_main(&suite);
}
