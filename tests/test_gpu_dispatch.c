/*
 * test_gpu_dispatch.c (label gpu): the dispatch library end to end on a GPU
 * (dispatch/dispatch.c through convtune.h only, with the CPU reference).
 *
 * Every layer of ResNet-50 (ct_conv2d) and ResNet3D-18 (ct_conv3d), and a
 * few awkward shapes (batch > 1, odd and non-square sizes, asymmetric
 * padding, dilation, channels that are not multiples of 4), runs twice:
 * in the plain layout (weights packed on the GPU by ct_pack_weights, which
 * must equal the host's pack_oi4o4i byte for byte) and in the packed layout
 * (data and weights packed on the host with core/pack.h; the 3-channel
 * stems are zero-padded to 4). Inputs are random int8 over the full range,
 * outputs are poisoned (0xA5 bytes) before each call, and every element is
 * compared with reference_conv. One line per workload goes to stdout. Then
 * two threads, each with its own stream, run the same and different new
 * workloads on one context at once, and calls are captured into a CUDA
 * graph and replayed (case graph). Channels-last (nhwc): awkward shapes
 * and ResNet-50 / ResNet3D-18 in nhwc / ndhwc (random NHWC data and OHWI
 * weights), int32 and int8 output, against reference_conv /
 * reference_qconv of the same nhwc workload; every layer, the stems (C %
 * 16 != 0, on the channels-last mma templates) included, must be served by
 * an nhwc template, or, where none runs it, refused with
 * CT_ERR_UNSUPPORTED naming the layout. The
 * nhwc templates are looked up at run time: without them, or on a GPU other
 * than sm_90 (wgmma), the case is skipped with a message.
 *
 * Case grouped (issue 35): every layer of the four grouped and depthwise
 * sets and the odd 5x5 stride-2 layer, plain and channels-last, int32 and
 * int8 output, exact; none refused.
 *
 * Environment: CT_DISPATCH_DB, the database (unset: none, every workload
 * gets the default); CT_DISPATCH_BATCH, the batch of both sets (default 1).
 * Exits 77 without a GPU. Check runs in CK_NOFORK mode: the probe creates
 * the CUDA context, which a fork would not carry.
 */
#include <check.h>
#include <pthread.h>
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
#include "templates/template.h"
#include "tests/gpu_probe.h"
#include "tests/util.h"

#define POISON_BYTE 0xA5

static const char *db_path; /* NULL: no database */
static int batch = 1;

#define CUDA_OK(call)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                     \
  } while (0)

static const char *source_name(ct_source s) {
  switch (s) {
  case CT_SOURCE_EXACT:
    return "exact";
  case CT_SOURCE_SAME_CC:
    return "same-cc";
  case CT_SOURCE_NEAREST:
    return "nearest";
  case CT_SOURCE_DEFAULT:
    return "default";
  case CT_SOURCE_CHAIN:
    return "chain";
  }
  return "?";
}

static void fill_random(rng *r, int8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (int8_t)(uint8_t)rng_next(r);
}

/* Elements where got differs from want; the first one described in first. */
static long long count_mismatches(const int32_t *got, const int32_t *want, size_t n, char *first,
                                  size_t size) {
  long long bad = 0;
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i] && !bad++)
      snprintf(first, size, "first at %zu: got %d (0x%08x), want %d", i, got[i], (unsigned)got[i],
               want[i]);
  return bad;
}

/* The host side of one workload: plain and packed inputs and both
 * reference outputs. */
typedef struct host_case {
  ct_workload w, pw;                 /* plain, and packed (C and K padded to 4) */
  size_t data_n, weight_n, out_n;    /* plain element counts */
  size_t pdata_n, pweight_n, pout_n; /* packed element counts */
  int8_t *data, *weights, *pdata, *pweights;
  int32_t *ref, *pref;
} host_case;

static void host_case_make(host_case *h, const ct_workload *w, uint64_t seed) {
  memset(h, 0, sizeof *h);
  h->w = *w;
  h->w.layout = CT_LAYOUT_NCHW;
  ck_assert_int_eq(workload_validate(&h->w, NULL), CT_OK);
  workload_packed(&h->w, &h->pw);
  h->data_n = (size_t)workload_data_elems(&h->w);
  h->weight_n = (size_t)workload_weight_elems(&h->w);
  h->out_n = (size_t)workload_out_elems(&h->w);
  h->pdata_n = (size_t)workload_data_elems(&h->pw);
  h->pweight_n = (size_t)workload_weight_elems(&h->pw);
  h->pout_n = (size_t)workload_out_elems(&h->pw);
  ck_assert_uint_eq(h->pweight_n, ct_packed_weights_bytes(&h->w));
  h->data = xmalloc(h->data_n);
  h->weights = xmalloc(h->weight_n);
  h->pdata = xmalloc(h->pdata_n);
  h->pweights = xmalloc(h->pweight_n);
  h->ref = xmalloc(h->out_n * sizeof(int32_t));
  h->pref = xmalloc(h->pout_n * sizeof(int32_t));
  rng r;
  rng_seed(&r, seed);
  fill_random(&r, h->data, h->data_n);
  fill_random(&r, h->weights, h->weight_n);
  geom3 g;
  workload_geom(&h->w, &g);
  int64_t in_sp = g.in[0] * g.in[1] * g.in[2], kvol = g.ker[0] * g.ker[1] * g.ker[2];
  pack_nc4c(h->data, h->pdata, 1, g.n, g.c, in_sp);
  pack_oi4o4i(h->weights, h->pweights, g.k, workload_cpg(&h->w), kvol);
  ct_err err = {0};
  ck_assert_msg(reference_conv(&h->w, h->data, h->weights, h->ref, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(reference_conv(&h->pw, h->pdata, h->pweights, h->pref, &err) == CT_OK, "%s",
                err.msg);
}

static void host_case_free(host_case *h) {
  free(h->data);
  free(h->weights);
  free(h->pdata);
  free(h->pweights);
  free(h->ref);
  free(h->pref);
}

static ct_status conv(ct_context *ctx, const ct_workload *w, const void *data, const void *weights,
                      void *out, cudaStream_t stream) {
  return w->op == CT_OP_CONV3D ? ct_conv3d(ctx, w, data, weights, out, stream)
                               : ct_conv2d(ctx, w, data, weights, out, stream);
}

/* The result of one layout's run: "exact", or what went wrong. */
typedef struct run_result {
  long long bad; /* mismatching elements, or -1 when a call failed */
  char what[CT_ERRMSG_MAX + 128];
} run_result;

/* Run w (plain or packed, per h) on the GPU and compare with the reference.
 * The plain run packs the weights with ct_pack_weights and checks them too. */
static void run_layout(ct_context *ctx, const host_case *h, int packed, cudaStream_t stream,
                       run_result *res) {
  const ct_workload *w = packed ? &h->pw : &h->w;
  size_t data_n = packed ? h->pdata_n : h->data_n, out_n = packed ? h->pout_n : h->out_n;
  const int32_t *want = packed ? h->pref : h->ref;
  void *d_data = NULL, *d_wplain = NULL, *d_weights = NULL, *d_out = NULL;
  int32_t *got = xmalloc(out_n * sizeof *got);
  res->bad = -1;
  snprintf(res->what, sizeof res->what, "not run");
  CUDA_OK(cudaMalloc(&d_data, data_n));
  CUDA_OK(cudaMalloc(&d_weights, h->pweight_n));
  CUDA_OK(cudaMalloc(&d_out, out_n * sizeof(int32_t)));
  CUDA_OK(cudaMemcpy(d_data, packed ? h->pdata : h->data, data_n, cudaMemcpyHostToDevice));
  ct_status st = CT_OK;
  if (packed) {
    CUDA_OK(cudaMemcpy(d_weights, h->pweights, h->pweight_n, cudaMemcpyHostToDevice));
  } else {
    CUDA_OK(cudaMalloc(&d_wplain, h->weight_n));
    CUDA_OK(cudaMemcpy(d_wplain, h->weights, h->weight_n, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_weights, POISON_BYTE, h->pweight_n));
    st = ct_pack_weights(ctx, w, d_wplain, d_weights, stream);
    if (st) {
      snprintf(res->what, sizeof res->what, "ct_pack_weights: %s: %s", ct_status_name(st),
               ct_errmsg(ctx));
      goto done;
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    int8_t *pw = xmalloc(h->pweight_n);
    CUDA_OK(cudaMemcpy(pw, d_weights, h->pweight_n, cudaMemcpyDeviceToHost));
    int same = !memcmp(pw, h->pweights, h->pweight_n);
    free(pw);
    if (!same) {
      snprintf(res->what, sizeof res->what, "ct_pack_weights differs from pack_oi4o4i");
      goto done;
    }
  }
  CUDA_OK(cudaMemset(d_out, POISON_BYTE, out_n * sizeof(int32_t)));
  CUDA_OK(cudaDeviceSynchronize());
  st = conv(ctx, w, d_data, d_weights, d_out, stream);
  if (st) {
    snprintf(res->what, sizeof res->what, "%s: %s", ct_status_name(st), ct_errmsg(ctx));
    goto done;
  }
  cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) {
    snprintf(res->what, sizeof res->what, "after the call: %s", cudaGetErrorString(e));
    goto done;
  }
  CUDA_OK(cudaMemcpy(got, d_out, out_n * sizeof(int32_t), cudaMemcpyDeviceToHost));
  res->bad = count_mismatches(got, want, out_n, res->what, sizeof res->what);
  if (!res->bad) snprintf(res->what, sizeof res->what, "exact");
done:
  cudaFree(d_data);
  cudaFree(d_wplain);
  cudaFree(d_weights);
  cudaFree(d_out);
  free(got);
}

/* Both layouts of each workload; one line each; returns the failures. */
static int run_all(ct_context *ctx, const char *set_name, const ct_workload *ws,
                   const char *const *names, int n) {
  int failures = 0;
  for (int i = 0; i < n; i++) {
    host_case h;
    host_case_make(&h, &ws[i], 1000 + (uint64_t)i);
    run_result plain, packed;
    run_layout(ctx, &h, 0, NULL, &plain);
    run_layout(ctx, &h, 1, NULL, &packed);
    ct_explanation ex, pex;
    ct_status st = ct_explain(ctx, &h.w, &ex);
    ct_status pst = ct_explain(ctx, &h.pw, &pex);
    char key[CT_KEY_MAX];
    ct_workload_key(&h.w, key, sizeof key);
    printf("%s/%-14s %-8s %-20s %9.2f us  plain: %s%s  packed: %s%s  (%s)\n", set_name, names[i],
           st ? "?" : source_name(ex.source), st ? "?" : ex.template_name,
           st ? 0.0 : ex.measured_us, plain.bad > 0 ? "mismatches, " : "", plain.what,
           packed.bad > 0 ? "mismatches, " : "", packed.what, key);
    fflush(stdout);
    /* both layouts run the same packed workload: one resolution */
    int same = !st && !pst && ex.source == pex.source && !strcmp(ex.config, pex.config);
    failures += plain.bad != 0 || packed.bad != 0 || !same;
    host_case_free(&h);
  }
  return failures;
}

static ct_context *open_ctx(void) {
  ct_context *ctx = NULL;
  ct_status st = ct_open(db_path, 0, &ctx);
  ck_assert_msg(st == CT_OK, "ct_open(%s): %s: %s", db_path ? db_path : "no database",
                ct_status_name(st), ct_errmsg(ctx));
  return ctx;
}

static void run_set(const char *name) {
  wlset *set = NULL;
  ct_err err = {0};
  ck_assert_msg(wlset_load_named(name, batch, &set, &err) == CT_OK, "%s", err.msg);
  ct_workload *ws = xmalloc(sizeof *ws * (size_t)set->n_items);
  const char **names = xmalloc(sizeof *names * (size_t)set->n_items);
  for (int i = 0; i < set->n_items; i++) {
    ws[i] = set->items[i].w;
    names[i] = set->items[i].name;
  }
  ct_context *ctx = open_ctx();
  int failures = run_all(ctx, name, ws, names, set->n_items);
  ct_close(ctx);
  free(ws);
  free(names);
  int n = set->n_items;
  wlset_free(set);
  ck_assert_msg(failures == 0, "%s: %d of %d workloads not exact", name, failures, n);
}

START_TEST(resnet50_every_layer_exact) {
  run_set("resnet50");
}
END_TEST

START_TEST(resnet3d18_every_layer_exact) {
  run_set("resnet3d18");
}
END_TEST

/* op, n, c, k, in, kernel, stride, pad before, pad after, dilation; conv2d
 * uses the first two of each triple. */
typedef struct shape {
  const char *name;
  ct_op op;
  int n, c, k, in[3], ker[3], str[3], pb[3], pa[3], dil[3];
} shape;

/* clang-format off */
static const shape awkward[] = {
    {"c5k7-dil-asym", CT_OP_CONV2D, 2, 5, 7, {13, 11}, {3, 5}, {1, 2}, {0, 1}, {2, 3}, {1, 2}},
    {"stem-b3-odd", CT_OP_CONV2D, 3, 3, 6, {15, 9}, {7, 7}, {2, 2}, {3, 3}, {3, 3}, {1, 1}},
    {"1x1-s2", CT_OP_CONV2D, 1, 8, 12, {9, 9}, {1, 1}, {2, 2}, {0, 0}, {0, 0}, {1, 1}},
    {"1x7", CT_OP_CONV2D, 1, 4, 8, {12, 10}, {1, 7}, {1, 1}, {0, 3}, {0, 3}, {1, 1}},
    {"3d-b2-c5", CT_OP_CONV3D, 2, 5, 6, {5, 9, 7}, {3, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
    {"3d-3x1x1", CT_OP_CONV3D, 1, 3, 4, {4, 8, 8}, {3, 1, 1}, {1, 1, 1}, {1, 0, 0}, {1, 0, 0}, {1, 1, 1}},
};
/* clang-format on */

static ct_workload from_shape(const shape *s) {
  ct_workload w;
  workload_init(&w, s->op);
  w.n = s->n, w.c = s->c, w.k = s->k;
  for (int d = 0; d < (s->op == CT_OP_CONV3D ? 3 : 2); d++) {
    w.in[d] = s->in[d];
    w.kernel[d] = s->ker[d];
    w.stride[d] = s->str[d];
    w.pad_before[d] = s->pb[d];
    w.pad_after[d] = s->pa[d];
    w.dilation[d] = s->dil[d];
  }
  ck_assert_int_eq(workload_validate(&w, NULL), CT_OK);
  return w;
}

START_TEST(awkward_shapes_exact) {
  enum { N = sizeof awkward / sizeof awkward[0] };
  ct_workload ws[N];
  const char *names[N];
  for (int i = 0; i < N; i++) {
    ws[i] = from_shape(&awkward[i]);
    names[i] = awkward[i].name;
  }
  ct_context *ctx = open_ctx();
  int failures = run_all(ctx, "awkward", ws, names, N);
  ct_close(ctx);
  ck_assert_msg(failures == 0, "%d of %d awkward workloads not exact", failures, N);
}
END_TEST

/* ---- channels last ------------------------------------------------------------- */

/* Run the nhwc workload w (int32 output; with q8, its int8-output variant:
 * bias, per-channel scales, values from quant_random) and compare every
 * byte with the CPU reference of the same workload. Returns 0 when exact,
 * 1 when wrong or failed, and -1 when refused with CT_ERR_UNSUPPORTED
 * (message in what). */
static int layout_case(ct_context *ctx, const ct_workload *w0, ct_layout layout, int q8,
                       uint64_t seed, char *what, size_t what_size, char *tpl_name) {
  ct_workload w = *w0;
  w.layout = layout;
  if (q8) {
    w.out_type = CT_DTYPE_INT8;
    w.epi.bias = 1;
    w.epi.scale = CT_SCALE_CHANNEL;
  }
  ck_assert_int_eq(workload_validate(&w, NULL), CT_OK);
  size_t nd = (size_t)workload_data_elems(&w), nw = (size_t)workload_weight_elems(&w);
  size_t nob = ct_out_bytes(&w), np = ct_params_bytes(&w);
  int8_t *data = xmalloc(nd), *weights = xmalloc(nw);
  uint8_t *want = xmalloc(nob), *got = xmalloc(nob);
  void *params = xmalloc(np);
  rng r;
  rng_seed(&r, seed);
  fill_random(&r, data, nd);
  fill_random(&r, weights, nw);
  quant_store qs;
  ct_err err = {0};
  ck_assert_msg(quant_random(&w, seed, &qs, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(reference_qconv(&w, &qs.q, data, weights, NULL, want, &err) == CT_OK, "%s",
                err.msg);
  int rc = 1;
  void *d_data = NULL, *d_w = NULL, *d_out = NULL, *d_params = NULL, *d_wp = NULL;
  tpl_name[0] = '\0';
  ct_explanation ex;
  ct_status st = ct_explain(ctx, &w, &ex);
  if (st == CT_ERR_UNSUPPORTED) {
    snprintf(what, what_size, "refused: %s", ct_errmsg(ctx));
    rc = -1;
    goto done;
  }
  if (st) {
    snprintf(what, what_size, "ct_explain: %s: %s", ct_status_name(st), ct_errmsg(ctx));
    goto done;
  }
  snprintf(tpl_name, 48, "%s", ex.template_name);
  ck_assert_int_eq(ct_make_params(ctx, &w, &qs.q, weights, params), CT_OK);
  CUDA_OK(cudaMalloc(&d_data, nd));
  CUDA_OK(cudaMalloc(&d_w, nw));
  CUDA_OK(cudaMalloc(&d_out, nob));
  CUDA_OK(cudaMalloc(&d_params, np));
  CUDA_OK(cudaMemcpy(d_data, data, nd, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_w, weights, nw, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_params, params, np, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d_out, POISON_BYTE, nob));
  if (layout == CT_LAYOUT_NCHW) { /* the plain layout takes packed weights */
    CUDA_OK(cudaMalloc(&d_wp, ct_packed_weights_bytes(&w)));
    if ((st = ct_pack_weights(ctx, &w, d_w, d_wp, NULL))) {
      snprintf(what, what_size, "ct_pack_weights: %s: %s", ct_status_name(st), ct_errmsg(ctx));
      goto done;
    }
  }
  CUDA_OK(cudaDeviceSynchronize());
  const void *wts = d_wp ? d_wp : d_w;
  st = w.op == CT_OP_CONV3D ? ct_qconv3d(ctx, &w, d_data, wts, d_params, NULL, d_out, NULL)
                            : ct_qconv2d(ctx, &w, d_data, wts, d_params, NULL, d_out, NULL);
  if (st) {
    snprintf(what, what_size, "%s: %s", ct_status_name(st), ct_errmsg(ctx));
    goto done;
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    snprintf(what, what_size, "after the call: %s", cudaGetErrorString(e));
    goto done;
  }
  CUDA_OK(cudaMemcpy(got, d_out, nob, cudaMemcpyDeviceToHost));
  if (q8) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < nob; i++)
      if (got[i] != want[i] && !bad++) first = i;
    if (bad)
      snprintf(what, what_size, "%zu of %zu bytes differ, first at %zu: got %d, want %d", bad, nob,
               first, (int8_t)got[first], (int8_t)want[first]);
    rc = bad != 0;
  } else {
    long long bad =
        count_mismatches((int32_t *)got, (int32_t *)want, nob / sizeof(int32_t), what, what_size);
    rc = bad != 0;
  }
  if (!rc) snprintf(what, what_size, "exact");
done:
  cudaFree(d_data);
  cudaFree(d_w);
  cudaFree(d_wp);
  cudaFree(d_out);
  cudaFree(d_params);
  quant_store_free(&qs);
  free(data);
  free(weights);
  free(want);
  free(got);
  free(params);
  return rc;
}

/* Whether the nhwc cases can run here: an nhwc template and an sm_90 GPU;
 * else why not in why. */
static int nhwc_runs_here(char *why, size_t size) {
  if (!template_find("conv2d_nhwc_wgmma") && !template_find("conv3d_ndhwc_wgmma")) {
    snprintf(why, size, "no nhwc template is registered");
    return 0;
  }
  struct cudaDeviceProp p;
  CUDA_OK(cudaGetDeviceProperties(&p, 0));
  if (p.major != 9 || p.minor != 0) {
    snprintf(why, size, "the nhwc templates run wgmma on sm_90 only; this is sm_%d%d", p.major,
             p.minor);
    return 0;
  }
  return 1;
}

/* Each workload in nhwc, int32 and int8 out; one line each. A workload must
 * be served by an nhwc template and exact, or refused naming the layout
 * where no nhwc template runs it (C % 16 != 0 and a dilation along W).
 * Returns the failures. */
static int run_all_nhwc(ct_context *ctx, const char *set_name, const ct_workload *ws,
                        const char *const *names, int n) {
  int failures = 0;
  for (int i = 0; i < n; i++)
    for (int q8 = 0; q8 < 2; q8++) {
      char what[CT_ERRMSG_MAX + 128], tpl[48];
      int rc =
          layout_case(ctx, &ws[i], CT_LAYOUT_NHWC, q8, 2000 + (uint64_t)i, what, sizeof what, tpl);
      const int dil_w = ws[i].dilation[ws[i].op == CT_OP_CONV2D ? 1 : 2];
      int refused_ok = rc == -1 && ws[i].c % 16 != 0 && dil_w > 1 && strstr(what, "layout n");
      int served_ok = rc == 0 && strstr(tpl, "hwc_");
      printf("%s/%-14s nhwc %-5s %-20s %s\n", set_name, names[i], q8 ? "int8" : "int32",
             tpl[0] ? tpl : "-", what);
      fflush(stdout);
      failures += !refused_ok && !served_ok;
    }
  return failures;
}

/* clang-format off */
static const shape nhwc_awkward[] = {
    {"c64-b2", CT_OP_CONV2D, 2, 64, 64, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
    {"c16k24-s2-asym", CT_OP_CONV2D, 1, 16, 24, {13, 11}, {3, 3}, {2, 2}, {1, 0}, {1, 1}, {1, 1}},
    {"1x1-s2", CT_OP_CONV2D, 3, 32, 16, {9, 9}, {1, 1}, {2, 2}, {0, 0}, {0, 0}, {1, 1}},
    {"1x7-dil", CT_OP_CONV2D, 1, 48, 8, {12, 16}, {1, 7}, {1, 1}, {0, 6}, {0, 6}, {1, 2}},
    {"stem-c3", CT_OP_CONV2D, 1, 3, 64, {32, 32}, {7, 7}, {2, 2}, {3, 3}, {3, 3}, {1, 1}},
    {"c3-dilw-refused", CT_OP_CONV2D, 1, 3, 16, {20, 20}, {3, 3}, {1, 1}, {1, 2}, {1, 2}, {1, 2}},
    {"3d-c32-b2", CT_OP_CONV3D, 2, 32, 64, {4, 8, 6}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
};
/* clang-format on */

START_TEST(nhwc_exact_or_refused) {
  char why[160];
  if (!nhwc_runs_here(why, sizeof why)) {
    TEST_SKIP("%s", why);
  }
  enum { N = sizeof nhwc_awkward / sizeof nhwc_awkward[0] };
  ct_workload ws[N];
  const char *names[N];
  for (int i = 0; i < N; i++) {
    ws[i] = from_shape(&nhwc_awkward[i]);
    names[i] = nhwc_awkward[i].name;
  }
  ct_context *ctx = open_ctx();
  int failures = run_all_nhwc(ctx, "awkward", ws, names, N);
  static const char *const sets[] = {"resnet50", "resnet3d18"};
  int total = 2 * N;
  for (int k = 0; k < 2; k++) {
    wlset *set = NULL;
    ct_err err = {0};
    ck_assert_msg(wlset_load_named(sets[k], batch, &set, &err) == CT_OK, "%s", err.msg);
    ct_workload *sw = xmalloc(sizeof *sw * (size_t)set->n_items);
    const char **sn = xmalloc(sizeof *sn * (size_t)set->n_items);
    for (int i = 0; i < set->n_items; i++) {
      sw[i] = set->items[i].w;
      sn[i] = set->items[i].name;
    }
    failures += run_all_nhwc(ctx, sets[k], sw, sn, set->n_items);
    total += 2 * set->n_items;
    free(sw);
    free(sn);
    wlset_free(set);
  }
  ct_close(ctx);
  ck_assert_msg(failures == 0, "nhwc: %d of %d cases neither exact nor rightly refused", failures,
                total);
}
END_TEST

/* Issue 35: every layer of the grouped and depthwise sets, 3D ResNeXt's
 * included (and their dense
 * layers: MobileNetV2's pointwise ones and stem), and the odd 5x5 stride-2
 * layer (C 12, K 20) with its 3D counterpart, in the plain layout (served
 * packed) and channels-last, int32 and int8 output, each exact against the
 * CPU reference; none may be refused. CT_DISPATCH_BATCH sets the batch. */
START_TEST(grouped_sets_every_layer_exact) {
  char why[160];
  if (!nhwc_runs_here(why, sizeof why)) {
    TEST_SKIP("%s", why);
  }
  static const char *const sets[] = {"mobilenetv2", "efficientnet_b0_dw", "resnext50_g", "csn_dw3d",
                                     "resnext3d_g"};
  enum { N_SETS = sizeof sets / sizeof sets[0] };
  ct_context *ctx = open_ctx();
  int failures = 0, total = 0;
  for (int k = 0; k <= N_SETS; k++) {
    wlset *set = NULL;
    ct_workload odd[2];
    const char *odd_names[2] = {"odd5x5s2", "odd3d"};
    int n;
    const ct_workload *ws;
    const char *const *names;
    const char **sn = NULL;
    if (k < N_SETS) {
      ct_err err = {0};
      ck_assert_msg(wlset_load_named(sets[k], batch, &set, &err) == CT_OK, "%s", err.msg);
      n = set->n_items;
      ct_workload *sw = xmalloc(sizeof *sw * (size_t)n);
      sn = xmalloc(sizeof *sn * (size_t)n);
      for (int i = 0; i < n; i++) sw[i] = set->items[i].w, sn[i] = set->items[i].name;
      ws = sw, names = sn;
    } else { /* the odd layer: N 3, C 12, 17x17, K 20, 5x5 stride 2, and in 3D */
      n = 2;
      for (int d = 0; d < 2; d++) {
        ct_workload *w = &odd[d];
        workload_init(w, d ? CT_OP_CONV3D : CT_OP_CONV2D);
        w->n = 3, w->c = 12, w->k = 20;
        for (int i = 0; i < workload_nd(w); i++) {
          int depth = d && i == 0;
          w->in[i] = depth ? 7 : 17;
          w->kernel[i] = depth ? 3 : 5;
          w->stride[i] = 2;
          w->pad_before[i] = w->pad_after[i] = depth ? 1 : 2;
        }
      }
      ws = odd, names = odd_names;
    }
    for (int i = 0; i < n; i++)
      for (int l = 0; l < 2; l++)
        for (int q8 = 0; q8 < 2; q8++) {
          char what[CT_ERRMSG_MAX + 128], tpl[48];
          ct_layout layout = l ? CT_LAYOUT_NHWC : CT_LAYOUT_NCHW;
          int rc = layout_case(ctx, &ws[i], layout, q8, 3000 + (uint64_t)(64 * k + i), what,
                               sizeof what, tpl);
          printf("%s/%-16s b%d %-5s %-5s %-24s %s\n", k < N_SETS ? sets[k] : "odd", names[i],
                 ws[i].n, l ? "nhwc" : "plain", q8 ? "int8" : "int32", tpl[0] ? tpl : "-", what);
          fflush(stdout);
          failures += rc != 0;
          total++;
        }
    if (k < N_SETS) {
      free((void *)ws);
      free(sn);
      wlset_free(set);
    }
  }
  ct_close(ctx);
  ck_assert_msg(failures == 0, "grouped sets: %d of %d cases not exact", failures, total);
}
END_TEST

/* Layers in a row on one stream, nothing synchronised between them, as a
 * network runs: the nhwc kernels are launched as programmatic dependents
 * (their blocks start while the previous kernel finishes and wait on
 * griddepcontrol before touching memory), so a missing wait shows here as
 * a read of the previous layer's unfinished output or a write over the
 * input it still reads. A stem (x -> A, a stem template), then 3 times a
 * 3x3 A -> B and a 3x3 B -> A (conv2d_nhwc_wgmma): int8 out with bias and
 * per-channel scales, against the CPU reference of the same chain. */
START_TEST(nhwc_layers_in_a_row_exact) {
  char why[160];
  if (!nhwc_runs_here(why, sizeof why)) {
    TEST_SKIP("%s", why);
  }
  enum { L = 3, REPS = 3 };
  ct_workload w[L];
  for (int i = 0; i < L; i++) {
    workload_init(&w[i], CT_OP_CONV2D);
    w[i].layout = CT_LAYOUT_NHWC;
    w[i].n = 2, w[i].c = 64, w[i].k = 64;
    w[i].in[0] = w[i].in[1] = 28;
    w[i].kernel[0] = w[i].kernel[1] = 3;
    w[i].pad_before[0] = w[i].pad_before[1] = w[i].pad_after[0] = w[i].pad_after[1] = 1;
    w[i].out_type = CT_DTYPE_INT8;
    w[i].epi.bias = 1;
    w[i].epi.scale = CT_SCALE_CHANNEL;
  }
  w[0].c = 3, w[0].in[0] = w[0].in[1] = 56; /* the stem: 7x7 stride 2 to 28 x 28 */
  w[0].kernel[0] = w[0].kernel[1] = 7;
  w[0].stride[0] = w[0].stride[1] = 2;
  w[0].pad_before[0] = w[0].pad_before[1] = w[0].pad_after[0] = w[0].pad_after[1] = 3;
  ct_context *ctx = open_ctx();
  rng r;
  rng_seed(&r, 77);
  quant_store qs[L];
  int8_t *wt[L];
  void *d_w[L], *d_p[L];
  ct_err err = {0};
  for (int i = 0; i < L; i++) {
    ck_assert_int_eq(workload_validate(&w[i], NULL), CT_OK);
    size_t nw = (size_t)workload_weight_elems(&w[i]), np = ct_params_bytes(&w[i]);
    wt[i] = xmalloc(nw);
    fill_random(&r, wt[i], nw);
    ck_assert_msg(quant_random(&w[i], 300 + (uint64_t)i, &qs[i], &err) == CT_OK, "%s", err.msg);
    void *params = xmalloc(np);
    ck_assert_int_eq(ct_make_params(ctx, &w[i], &qs[i].q, wt[i], params), CT_OK);
    CUDA_OK(cudaMalloc(&d_w[i], nw));
    CUDA_OK(cudaMalloc(&d_p[i], np));
    CUDA_OK(cudaMemcpy(d_w[i], wt[i], nw, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_p[i], params, np, cudaMemcpyHostToDevice));
    free(params);
    ct_explanation ex;
    ck_assert_msg(ct_explain(ctx, &w[i], &ex) == CT_OK, "%s", ct_errmsg(ctx));
    printf("nhwc chain: layer %d on %s\n", i, ex.template_name);
  }
  size_t nx = (size_t)workload_data_elems(&w[0]), nb = ct_out_bytes(&w[1]);
  int8_t *x = xmalloc(nx), *a = xmalloc(nb), *b = xmalloc(nb), *got = xmalloc(nb);
  fill_random(&r, x, nx);
  /* the CPU: the same chain */
  ck_assert_msg(reference_qconv(&w[0], &qs[0].q, x, wt[0], NULL, a, &err) == CT_OK, "%s", err.msg);
  for (int k = 0; k < REPS; k++) {
    ck_assert(reference_qconv(&w[1], &qs[1].q, a, wt[1], NULL, b, &err) == CT_OK);
    ck_assert(reference_qconv(&w[2], &qs[2].q, b, wt[2], NULL, a, &err) == CT_OK);
  }
  void *d_x, *d_a, *d_b;
  CUDA_OK(cudaMalloc(&d_x, nx));
  CUDA_OK(cudaMalloc(&d_a, nb));
  CUDA_OK(cudaMalloc(&d_b, nb));
  CUDA_OK(cudaMemcpy(d_x, x, nx, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d_a, POISON_BYTE, nb));
  CUDA_OK(cudaMemset(d_b, POISON_BYTE, nb));
  CUDA_OK(cudaDeviceSynchronize());
  /* the GPU: one stream, no synchronisation until the end */
  ck_assert_int_eq(ct_qconv2d(ctx, &w[0], d_x, d_w[0], d_p[0], NULL, d_a, NULL), CT_OK);
  for (int k = 0; k < REPS; k++) {
    ck_assert_int_eq(ct_qconv2d(ctx, &w[1], d_a, d_w[1], d_p[1], NULL, d_b, NULL), CT_OK);
    ck_assert_int_eq(ct_qconv2d(ctx, &w[2], d_b, d_w[2], d_p[2], NULL, d_a, NULL), CT_OK);
  }
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(got, d_a, nb, cudaMemcpyDeviceToHost));
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < nb; i++)
    if (got[i] != a[i] && !bad++) first = i;
  printf("nhwc chain: %d layers in a row, %zu of %zu bytes differ\n", 1 + 2 * REPS, bad, nb);
  ck_assert_msg(bad == 0, "first at %zu: got %d, want %d", first, got[first], a[first]);
  for (int i = 0; i < L; i++) {
    cudaFree(d_w[i]);
    cudaFree(d_p[i]);
    quant_store_free(&qs[i]);
    free(wt[i]);
  }
  cudaFree(d_x);
  cudaFree(d_a);
  cudaFree(d_b);
  free(x);
  free(a);
  free(b);
  free(got);
  ct_close(ctx);
}
END_TEST

/* ---- two threads, two streams, one context -------------------------------------------- */

#define N_ITERS 20

/* Device copies of a host_case's inputs, shared read-only by the threads. */
typedef struct dev_case {
  const host_case *h;
  void *data, *pdata, *wplain, *pweights;
} dev_case;

typedef struct thread_job {
  ct_context *ctx;
  pthread_barrier_t *start;
  const dev_case *cases[2]; /* this thread's two workloads */
  int packed[2];            /* run each in the packed layout? */
  int n_bad;
  char what[CT_ERRMSG_MAX + 128];
} thread_job;

static void job_fail(thread_job *j, const char *fmt, const char *a, const char *b) {
  if (!j->n_bad++) snprintf(j->what, sizeof j->what, fmt, a, b);
}

/* No Check calls here: the main thread asserts on the results. */
static void *conv_thread(void *arg) {
  thread_job *j = arg;
  cudaStream_t stream = NULL;
  void *out[2] = {NULL, NULL}, *weights[2] = {NULL, NULL};
  int32_t *got[2] = {NULL, NULL};
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    job_fail(j, "%s%s", "cudaStreamCreate failed", "");
    pthread_barrier_wait(j->start);
    return NULL;
  }
  for (int i = 0; i < 2; i++) {
    const host_case *h = j->cases[i]->h;
    size_t n = j->packed[i] ? h->pout_n : h->out_n;
    got[i] = malloc(n * sizeof(int32_t));
    if (!got[i] || cudaMalloc(&out[i], n * sizeof(int32_t)) != cudaSuccess ||
        cudaMalloc(&weights[i], h->pweight_n) != cudaSuccess)
      job_fail(j, "%s%s", "out of memory", "");
  }
  pthread_barrier_wait(j->start);
  for (int it = 0; it < N_ITERS && !j->n_bad; it++)
    for (int i = 0; i < 2 && !j->n_bad; i++) {
      const dev_case *dc = j->cases[i];
      const host_case *h = dc->h;
      int packed = j->packed[i];
      const ct_workload *w = packed ? &h->pw : &h->w;
      size_t n = packed ? h->pout_n : h->out_n;
      /* the plain run packs its own weights on its stream, every time */
      ct_status st = packed ? CT_OK : ct_pack_weights(j->ctx, w, dc->wplain, weights[i], stream);
      if (st) {
        job_fail(j, "ct_pack_weights: %s: %s", ct_status_name(st), ct_errmsg(j->ctx));
        break;
      }
      if (cudaMemsetAsync(out[i], POISON_BYTE, n * sizeof(int32_t), stream) != cudaSuccess)
        job_fail(j, "%s%s", "cudaMemsetAsync failed", "");
      st = conv(j->ctx, w, packed ? dc->pdata : dc->data, packed ? dc->pweights : weights[i],
                out[i], stream);
      if (st) {
        job_fail(j, "conv: %s: %s", ct_status_name(st), ct_errmsg(j->ctx));
        break;
      }
      cudaError_t e =
          cudaMemcpyAsync(got[i], out[i], n * sizeof(int32_t), cudaMemcpyDeviceToHost, stream);
      if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
      if (e != cudaSuccess) {
        job_fail(j, "%s: %s", "after the call", cudaGetErrorString(e));
        break;
      }
      char first[160] = "";
      long long bad = count_mismatches(got[i], packed ? h->pref : h->ref, n, first, sizeof first);
      if (bad) {
        char key[CT_KEY_MAX];
        ct_workload_key(w, key, sizeof key);
        job_fail(j, "%s: %s", key, first);
      }
    }
  for (int i = 0; i < 2; i++) {
    cudaFree(out[i]);
    cudaFree(weights[i]);
    free(got[i]);
  }
  cudaStreamDestroy(stream);
  return NULL;
}

static void dev_case_make(dev_case *d, const host_case *h) {
  memset(d, 0, sizeof *d);
  d->h = h;
  CUDA_OK(cudaMalloc(&d->data, h->data_n));
  CUDA_OK(cudaMalloc(&d->pdata, h->pdata_n));
  CUDA_OK(cudaMalloc(&d->wplain, h->weight_n));
  CUDA_OK(cudaMalloc(&d->pweights, h->pweight_n));
  CUDA_OK(cudaMemcpy(d->data, h->data, h->data_n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d->pdata, h->pdata, h->pdata_n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d->wplain, h->weights, h->weight_n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d->pweights, h->pweights, h->pweight_n, cudaMemcpyHostToDevice));
}

static void dev_case_free(dev_case *d) {
  cudaFree(d->data);
  cudaFree(d->pdata);
  cudaFree(d->wplain);
  cudaFree(d->pweights);
}

/* A fresh context, so that both threads make their first calls (the table
 * inserts) at the same moment: X in both threads, Y in one, Z in the other. */
START_TEST(two_threads_two_streams_exact) {
  /* clang-format off */
  static const shape xs[3] = {
      {"x", CT_OP_CONV2D, 2, 16, 32, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {"y", CT_OP_CONV2D, 1, 6, 10, {9, 7}, {1, 3}, {2, 1}, {0, 1}, {0, 1}, {1, 1}},
      {"z", CT_OP_CONV3D, 1, 8, 16, {4, 10, 10}, {3, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
  };
  /* clang-format on */
  host_case h[3];
  dev_case d[3];
  for (int i = 0; i < 3; i++) {
    ct_workload w = from_shape(&xs[i]);
    host_case_make(&h[i], &w, 77 + (uint64_t)i);
    dev_case_make(&d[i], &h[i]);
  }
  ct_context *ctx = open_ctx();
  pthread_barrier_t start;
  ck_assert_int_eq(pthread_barrier_init(&start, NULL, 2), 0);
  thread_job jobs[2] = {
      {.ctx = ctx, .start = &start, .cases = {&d[0], &d[1]}, .packed = {0, 0}},
      {.ctx = ctx, .start = &start, .cases = {&d[0], &d[2]}, .packed = {0, 1}},
  };
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, conv_thread, &jobs[i]), 0);
  for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);
  pthread_barrier_destroy(&start);
  ct_close(ctx);
  for (int i = 0; i < 3; i++) {
    dev_case_free(&d[i]);
    host_case_free(&h[i]);
  }
  for (int i = 0; i < 2; i++) ck_assert_msg(jobs[i].n_bad == 0, "thread %d: %s", i, jobs[i].what);
}
END_TEST

/* Calls captured into a CUDA graph, as a runtime captures a network once
 * and replays it: a plain-layout conv2d (its data packed and its output
 * unpacked in the context's stream-ordered scratch, which the capture
 * turns into graph memory nodes), the same workload packed, and (on sm_90)
 * an nhwc layer with 8-bit output, each the first call of its workload on
 * a fresh context, so that its kernel is loaded inside the capture. The
 * capture runs nothing (the outputs stay poisoned); the graph, replayed
 * twice with the outputs poisoned before each replay, is exact. */
START_TEST(calls_captured_in_a_graph_exact) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.n = 2, w.c = 30, w.k = 44; /* C and K not multiples of 4: padded in the scratch */
  w.in[0] = 15, w.in[1] = 13;
  w.kernel[0] = w.kernel[1] = 3;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 1;
  host_case h;
  host_case_make(&h, &w, 4242);
  char why[160];
  const int nhwc = nhwc_runs_here(why, sizeof why);
  if (!nhwc) test_skip("graph's nhwc layer", "%s", why);
  ct_workload q; /* nhwc, int8 out with bias and per-channel scales */
  workload_init(&q, CT_OP_CONV2D);
  q.layout = CT_LAYOUT_NHWC;
  q.n = 2, q.c = 64, q.k = 64;
  q.in[0] = q.in[1] = 28;
  q.kernel[0] = q.kernel[1] = 3;
  q.pad_before[0] = q.pad_before[1] = q.pad_after[0] = q.pad_after[1] = 1;
  q.out_type = CT_DTYPE_INT8;
  q.epi.bias = 1;
  q.epi.scale = CT_SCALE_CHANNEL;
  ck_assert_int_eq(workload_validate(&q, NULL), CT_OK);
  ct_context *ctx = open_ctx();
  const size_t qx_n = (size_t)workload_data_elems(&q), qw_n = (size_t)workload_weight_elems(&q);
  const size_t qy_n = ct_out_bytes(&q), qp_n = ct_params_bytes(&q);
  int8_t *qx = xmalloc(qx_n), *qw = xmalloc(qw_n), *qref = xmalloc(qy_n), *qgot = xmalloc(qy_n);
  void *qparams = xmalloc(qp_n);
  quant_store qs;
  ct_err err = {0};
  rng r;
  rng_seed(&r, 4243);
  fill_random(&r, qx, qx_n);
  fill_random(&r, qw, qw_n);
  ck_assert_msg(quant_random(&q, 4244, &qs, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(ct_make_params(ctx, &q, &qs.q, qw, qparams), CT_OK);
  ck_assert_msg(reference_qconv(&q, &qs.q, qx, qw, NULL, qref, &err) == CT_OK, "%s", err.msg);

  void *d_data, *d_pdata, *d_pw, *d_out, *d_pout, *d_qx, *d_qw, *d_qp, *d_qy;
  const size_t out_b = h.out_n * sizeof(int32_t), pout_b = h.pout_n * sizeof(int32_t);
  CUDA_OK(cudaMalloc(&d_data, h.data_n));
  CUDA_OK(cudaMalloc(&d_pdata, h.pdata_n));
  CUDA_OK(cudaMalloc(&d_pw, h.pweight_n));
  CUDA_OK(cudaMalloc(&d_out, out_b));
  CUDA_OK(cudaMalloc(&d_pout, pout_b));
  CUDA_OK(cudaMalloc(&d_qx, qx_n));
  CUDA_OK(cudaMalloc(&d_qw, qw_n));
  CUDA_OK(cudaMalloc(&d_qp, qp_n));
  CUDA_OK(cudaMalloc(&d_qy, qy_n));
  CUDA_OK(cudaMemcpy(d_data, h.data, h.data_n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_pdata, h.pdata, h.pdata_n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_pw, h.pweights, h.pweight_n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_qx, qx, qx_n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_qw, qw, qw_n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_qp, qparams, qp_n, cudaMemcpyHostToDevice));
  void *const outs[] = {d_out, d_pout, d_qy};
  const size_t out_sizes[] = {out_b, pout_b, nhwc ? qy_n : 0};
  for (int i = 0; i < 3; i++) CUDA_OK(cudaMemset(outs[i], POISON_BYTE, out_sizes[i]));
  CUDA_OK(cudaDeviceSynchronize());

  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  ct_status s[3] = {CT_OK, CT_OK, CT_OK};
  char msg[3][CT_ERRMSG_MAX];
  s[0] = ct_conv2d(ctx, &h.w, d_data, d_pw, d_out, st);
  snprintf(msg[0], sizeof msg[0], "%s", ct_errmsg(ctx));
  s[1] = ct_conv2d(ctx, &h.pw, d_pdata, d_pw, d_pout, st);
  snprintf(msg[1], sizeof msg[1], "%s", ct_errmsg(ctx));
  if (nhwc) s[2] = ct_qconv2d(ctx, &q, d_qx, d_qw, d_qp, NULL, d_qy, st);
  snprintf(msg[2], sizeof msg[2], "%s", ct_errmsg(ctx));
  cudaGraph_t graph = NULL;
  const cudaError_t ec = cudaStreamEndCapture(st, &graph);
  for (int i = 0; i < 3; i++)
    ck_assert_msg(s[i] == CT_OK, "call %d inside the capture: %s: %s", i, ct_status_name(s[i]),
                  msg[i]);
  ck_assert_msg(ec == cudaSuccess, "cudaStreamEndCapture: %s", cudaGetErrorString(ec));
  CUDA_OK(cudaDeviceSynchronize());
  size_t seen_b = 0;
  for (int i = 0; i < 3; i++) seen_b = out_sizes[i] > seen_b ? out_sizes[i] : seen_b;
  unsigned char *seen = xmalloc(seen_b);
  for (int i = 0; i < 3; i++) { /* captured, not run */
    if (!out_sizes[i]) continue;
    CUDA_OK(cudaMemcpy(seen, outs[i], out_sizes[i], cudaMemcpyDeviceToHost));
    size_t touched = 0;
    for (size_t j = 0; j < out_sizes[i]; j++) touched += seen[j] != POISON_BYTE;
    ck_assert_msg(touched == 0, "output %d: %zu bytes written during the capture", i, touched);
  }
  free(seen);
  size_t nodes = 0;
  CUDA_OK(cudaGraphGetNodes(graph, NULL, &nodes));
  cudaGraphExec_t exec = NULL;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  int32_t *got = xmalloc(out_b), *pgot = xmalloc(pout_b);
  for (int rep = 0; rep < 2; rep++) {
    for (int i = 0; i < 3; i++) CUDA_OK(cudaMemset(outs[i], POISON_BYTE, out_sizes[i]));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaGraphLaunch(exec, st));
    CUDA_OK(cudaStreamSynchronize(st));
    CUDA_OK(cudaMemcpy(got, d_out, out_b, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(pgot, d_pout, pout_b, cudaMemcpyDeviceToHost));
    char first[160] = "";
    long long bad = count_mismatches(got, h.ref, h.out_n, first, sizeof first);
    ck_assert_msg(bad == 0, "replay %d, plain: %lld mismatches, %s", rep, bad, first);
    bad = count_mismatches(pgot, h.pref, h.pout_n, first, sizeof first);
    ck_assert_msg(bad == 0, "replay %d, packed: %lld mismatches, %s", rep, bad, first);
    if (nhwc) {
      CUDA_OK(cudaMemcpy(qgot, d_qy, qy_n, cudaMemcpyDeviceToHost));
      size_t qbad = 0, qfirst = 0;
      for (size_t j = 0; j < qy_n; j++)
        if (qgot[j] != qref[j] && !qbad++) qfirst = j;
      ck_assert_msg(qbad == 0,
                    "replay %d, nhwc int8: %zu of %zu bytes differ, first at %zu: %d, "
                    "want %d",
                    rep, qbad, qy_n, qfirst, qgot[qfirst], qref[qfirst]);
    }
  }
  printf("graph: %zu nodes captured from %d calls (each its workload's first), 2 replays exact\n",
         nodes, nhwc ? 3 : 2);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(st));
  for (int i = 0; i < 3; i++) cudaFree(outs[i]);
  cudaFree(d_data);
  cudaFree(d_pdata);
  cudaFree(d_pw);
  cudaFree(d_qx);
  cudaFree(d_qw);
  cudaFree(d_qp);
  ct_close(ctx);
  quant_store_free(&qs);
  free(qx);
  free(qw);
  free(qref);
  free(qgot);
  free(qparams);
  free(got);
  free(pgot);
  host_case_free(&h);
}
END_TEST

static void add_layers(TCase *tc) {
  /* the CPU reference of a set takes a while at larger batches */
  tcase_add_test(tc, awkward_shapes_exact);
  tcase_add_test(tc, resnet50_every_layer_exact);
  tcase_add_test(tc, resnet3d18_every_layer_exact);
  tcase_add_test(tc, two_threads_two_streams_exact);
  tcase_add_test(tc, nhwc_exact_or_refused);
  tcase_add_test(tc, nhwc_layers_in_a_row_exact);
}

static void add_grouped(TCase *tc) {
  tcase_add_test(tc, grouped_sets_every_layer_exact);
}

/* CK_RUN_CASE=graph runs it alone */
static void add_graph(TCase *tc) {
  tcase_add_test(tc, calls_captured_in_a_graph_exact);
}

static const test_case suite_cases[] = {
    {"layers", 0, add_layers},
    {"graph", 0, add_graph},
    {"grouped", 0, add_grouped},
    {NULL, 0, NULL},
};

int main(void) {
  const char *p = getenv("CT_DISPATCH_DB");
  db_path = p && p[0] ? p : NULL;
  const char *b = getenv("CT_DISPATCH_BATCH");
  if (b && b[0]) {
    char *end = NULL;
    long v = strtol(b, &end, 10);
    if (*end || v < 1 || v > 256) {
      fprintf(stderr, "test_gpu_dispatch: CT_DISPATCH_BATCH '%s': accepted 1..256\n", b);
      return EXIT_FAILURE;
    }
    batch = (int)v;
  }
  printf("database: %s, batch %d\n", db_path ? db_path : "none (every workload: the default)",
         batch);

  static const test_suite suite = {"gpu_dispatch", suite_cases, 1, gpu_probe};
  return test_main(&suite);
}
