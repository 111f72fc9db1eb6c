/*
 * cudnn_side.c: cuDNN's side of the benchmark (see cudnn_side.h).
 *
 * Tensors are described with the Nd calls (4 dims for conv2d, 5 for
 * conv3d; sizes always in N, C, [D,] H, W order, the format giving the
 * strides). For each config every forward algorithm is asked for its
 * workspace (an algorithm that cannot run the workload answers
 * NOT_SUPPORTED there), run once, and timed with bench_time; int8 configs
 * are tried with tensor-op and default math, fp16 with tensor-op math. An
 * algorithm whose estimate is ten times the best so far is not timed in
 * full: it cannot win. Inputs are random (int8 bytes; fp16 values in
 * [-1, 1]), buffers grow and are reused across layers. cuDNN keeps no int8
 * conv3d: it answers NOT_SUPPORTED for every algorithm, which is reported.
 * A grouped conv is one descriptor with cudnnSetConvolutionGroupCount and
 * K x C/G filters; an algorithm or config that refuses groups (int8 with
 * few channels per group, typically) answers NOT_SUPPORTED the same way,
 * and the column says so with cuDNN's status.
 * A searched conv (cudnn_conv) keeps its descriptors and the winning
 * algorithm and math, so that a model's chain launches exactly what was
 * timed, on tensors bound later.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/cudnn_side.h"

double cudnn_side_fill_rms(cudnn_side_kind kind) {
  /* fp16: the nine quarters of [-1, 1], mean square 3.75 / 9; int8: every
   * byte, mean square (2 x sum of i^2 to 127 + 128^2) / 256 = 5461.5 */
  return kind == CUDNN_SIDE_FP16 ? sqrt(3.75 / 9) : sqrt(5461.5);
}

#ifdef CT_HAVE_CUDNN

#include <cuda_runtime.h>
#include <cudnn.h>

#include "core/rng.h"
#include "gpu/cuda_check.h"

struct cudnn_side {
  cudnnHandle_t h;
  void *x, *w, *y, *ws;
  size_t x_size, w_size, y_size, ws_size;
  rng rng;
  char version[32];
};

int cudnn_side_built(void) {
  return 1;
}

ct_status cudnn_side_open(struct CUstream_st *stream, cudnn_side **out, ct_err *err) {
  *out = NULL;
  cudnn_side *c = calloc(1, sizeof *c);
  if (!c) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  cudnnStatus_t s = cudnnCreate(&c->h);
  if (s != CUDNN_STATUS_SUCCESS) {
    free(c);
    return ERR_SET(err, CT_ERR_CUDA, "cudnnCreate: %s", cudnnGetErrorString(s));
  }
  if ((s = cudnnSetStream(c->h, (cudaStream_t)stream)) != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(c->h);
    free(c);
    return ERR_SET(err, CT_ERR_CUDA, "cudnnSetStream: %s", cudnnGetErrorString(s));
  }
  size_t v = cudnnGetVersion(); /* 91400 = 9.14.0 */
  snprintf(c->version, sizeof c->version, "%zu.%zu.%zu", v / 10000, v % 10000 / 100, v % 100);
  rng_seed(&c->rng, 0x5eed);
  *out = c;
  return CT_OK;
}

const char *cudnn_side_version(const cudnn_side *c) {
  return c ? c->version : "";
}

void cudnn_side_close(cudnn_side *c) {
  if (!c) return;
  if (c->x) cudaFree(c->x);
  if (c->w) cudaFree(c->w);
  if (c->y) cudaFree(c->y);
  if (c->ws) cudaFree(c->ws);
  cudnnDestroy(c->h);
  free(c);
}

static ct_status reserve(void **p, size_t *have, size_t size, ct_err *err) {
  ct_status st = CT_OK;
  if (size <= *have) return CT_OK;
  if (*p) cudaFree(*p);
  *p = NULL;
  *have = 0;
  CUDA_TRY(err, cudaMalloc(p, size));
  *have = size;
done:
  return st;
}

/* Random contents: int8 bytes, or fp16 values in [-1, 1] (quarters, exact). */
static ct_status fill(cudnn_side *c, void *dst, size_t bytes, int half, ct_err *err) {
  static const uint16_t halves[9] = {0xBC00, 0xBA00, 0xB800, 0xB400, 0x0000,
                                     0x3400, 0x3800, 0x3A00, 0x3C00}; /* -1 .. 1 by 0.25 */
  ct_status st = CT_OK;
  unsigned char *h = malloc(bytes ? bytes : 1);
  if (!h) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  if (half) {
    for (size_t i = 0; i + 1 < bytes; i += 2) {
      uint16_t v = halves[rng_next(&c->rng) % 9];
      memcpy(h + i, &v, 2);
    }
  } else {
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
      uint64_t v = rng_next(&c->rng);
      memcpy(h + i, &v, 8);
    }
    for (; i < bytes; i++) h[i] = (unsigned char)rng_next(&c->rng);
  }
  CUDA_TRY(err, cudaMemcpy(dst, h, bytes, cudaMemcpyHostToDevice));
  /* a pageable copy returns once staged; the bench's streams are non-blocking */
  CUDA_TRY(err, cudaDeviceSynchronize());
done:
  free(h);
  return st;
}

ct_status cudnn_side_fill(cudnn_side *c, void *dst, size_t bytes, cudnn_side_kind kind,
                          ct_err *err) {
  return fill(c, dst, bytes, kind == CUDNN_SIDE_FP16, err);
}

struct cudnn_conv {
  cudnn_side *c;
  ct_workload w;
  cudnn_side_kind kind;
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnConvolutionFwdAlgo_t algo;
  cudnnMathType_t math;
  int has_algo;
  size_t ws_bytes, x_bytes, w_bytes, y_bytes;
  const void *x, *wt;
  void *y, *ws;
  float alpha;
};

void cudnn_conv_close(cudnn_conv *cv) {
  if (!cv) return;
  if (cv->xd) cudnnDestroyTensorDescriptor(cv->xd);
  if (cv->yd) cudnnDestroyTensorDescriptor(cv->yd);
  if (cv->wd) cudnnDestroyFilterDescriptor(cv->wd);
  if (cv->cd) cudnnDestroyConvolutionDescriptor(cv->cd);
  free(cv);
}

ct_status cudnn_conv_launch(void *user, struct CUstream_st *stream, ct_err *err) {
  (void)stream; /* the handle is bound to it */
  const cudnn_conv *f = user;
  /* alpha and beta are float for every data type but double */
  float zero = 0.0f;
  cudnnStatus_t s = cudnnConvolutionForward(f->c->h, &f->alpha, f->xd, f->x, f->wd, f->wt, f->cd,
                                            f->algo, f->ws, f->ws_bytes, &zero, f->yd, f->y);
  if (s != CUDNN_STATUS_SUCCESS)
    return ERR_SET(err, CT_ERR_UNSUPPORTED, "cudnnConvolutionForward: %s", cudnnGetErrorString(s));
  return CT_OK;
}

static const char *algo_name(int a) {
  static const char *const names[] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  return a >= 0 && a < (int)(sizeof names / sizeof names[0]) ? names[a] : "ALGO_?";
}

#define CUDNN_TRY(call)                                                                            \
  do {                                                                                             \
    cudnnStatus_t s_ = (call);                                                                     \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                                              \
      snprintf(why, why_size, "%s: %s", #call, cudnnGetErrorString(s_));                           \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

ct_status cudnn_conv_open(cudnn_side *c, const ct_workload *w, cudnn_side_kind kind,
                          cudnn_conv **out, char *why, size_t why_size, ct_err *err) {
  ct_status st = CT_OK;
  *out = NULL;
  why[0] = '\0';
  int nd = workload_nd(w), nb = nd + 2;
  const int groups = w->groups > 1 ? w->groups : 1;
  for (int d = 0; d < nd; d++)
    if (w->pad_before[d] != w->pad_after[d]) {
      snprintf(why, why_size, "cuDNN pads symmetrically; this workload does not");
      return CT_OK;
    }
  if (kind == CUDNN_SIDE_INT8 && (w->c % 4 || w->k % 4)) {
    snprintf(why, why_size, "int8 NHWC needs C and K multiples of 4 (C %d, K %d)", w->c, w->k);
    return CT_OK;
  }
  if (kind == CUDNN_SIDE_INT8X32 && (w->c % 32 || w->k % 32)) {
    snprintf(why, why_size, "INT8x32 needs C and K multiples of 32 (C %d, K %d)", w->c, w->k);
    return CT_OK;
  }
  cudnn_conv *f = calloc(1, sizeof *f);
  if (!f) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  f->c = c;
  f->w = *w;
  f->kind = kind;
  f->alpha = 1.0f;
  cudnnDataType_t dt = kind == CUDNN_SIDE_INT8      ? CUDNN_DATA_INT8
                       : kind == CUDNN_SIDE_INT8X32 ? CUDNN_DATA_INT8x32
                                                    : CUDNN_DATA_HALF;
  cudnnTensorFormat_t fmt =
      kind == CUDNN_SIDE_INT8X32 ? CUDNN_TENSOR_NCHW_VECT_C : CUDNN_TENSOR_NHWC;
  cudnnDataType_t compute = kind == CUDNN_SIDE_FP16 ? CUDNN_DATA_FLOAT : CUDNN_DATA_INT32;
  size_t esize = kind == CUDNN_SIDE_FP16 ? 2 : 1;
  int xdims[5], wdims[5], ydims[5], pad[3], str[3], dil[3];
  xdims[0] = w->n;
  xdims[1] = w->c;
  wdims[1] = w->c / groups; /* a grouped filter holds C/G input channels */
  wdims[0] = w->k;
  for (int d = 0; d < nd; d++) {
    xdims[2 + d] = w->in[d];
    wdims[2 + d] = w->kernel[d];
    pad[d] = w->pad_before[d];
    str[d] = w->stride[d];
    dil[d] = w->dilation[d];
  }
  CUDNN_TRY(cudnnCreateTensorDescriptor(&f->xd));
  CUDNN_TRY(cudnnCreateTensorDescriptor(&f->yd));
  CUDNN_TRY(cudnnCreateFilterDescriptor(&f->wd));
  CUDNN_TRY(cudnnCreateConvolutionDescriptor(&f->cd));
  CUDNN_TRY(cudnnSetTensorNdDescriptorEx(f->xd, fmt, dt, nb, xdims));
  CUDNN_TRY(cudnnSetFilterNdDescriptor(f->wd, dt, fmt, nb, wdims));
  CUDNN_TRY(
      cudnnSetConvolutionNdDescriptor(f->cd, nd, pad, str, dil, CUDNN_CROSS_CORRELATION, compute));
  if (groups > 1) CUDNN_TRY(cudnnSetConvolutionGroupCount(f->cd, groups));
  CUDNN_TRY(cudnnGetConvolutionNdForwardOutputDim(f->cd, f->xd, f->wd, nb, ydims));
  for (int d = 0; d < nd; d++)
    if (ydims[2 + d] != workload_out_size(w, d)) {
      st = ERR_SET(err, CT_ERR_INTERNAL, "cuDNN's output size %d differs from the workload's %lld",
                   ydims[2 + d], (long long)workload_out_size(w, d));
      goto done;
    }
  CUDNN_TRY(cudnnSetTensorNdDescriptorEx(f->yd, fmt, dt, nb, ydims));
  size_t kvol = 1, in_sp = 1, out_sp = 1;
  for (int d = 0; d < nd; d++) {
    kvol *= (size_t)w->kernel[d];
    in_sp *= (size_t)w->in[d];
    out_sp *= (size_t)ydims[2 + d];
  }
  f->x_bytes = (size_t)w->n * w->c * in_sp * esize;
  f->w_bytes = (size_t)w->k * (size_t)(w->c / groups) * kvol * esize;
  f->y_bytes = (size_t)w->n * w->k * out_sp * esize;
  *out = f;
  f = NULL;
done:
  cudnn_conv_close(f);
  return st;
}

const ct_workload *cudnn_conv_workload(const cudnn_conv *cv) {
  return &cv->w;
}

size_t cudnn_conv_bytes(const cudnn_conv *cv, cudnn_conv_tensor which) {
  switch (which) {
  case CUDNN_CONV_X:
    return cv->x_bytes;
  case CUDNN_CONV_W:
    return cv->w_bytes;
  case CUDNN_CONV_Y:
    return cv->y_bytes;
  default:
    return cv->has_algo ? cv->ws_bytes : 0;
  }
}

void cudnn_conv_bind(cudnn_conv *cv, const void *x, const void *w, void *y, void *ws,
                     double alpha) {
  cv->x = x;
  cv->wt = w;
  cv->y = y;
  cv->ws = ws;
  cv->alpha = (float)alpha;
}

void cudnn_conv_use_algo(cudnn_conv *cv, const cudnn_conv *like) {
  cv->algo = like->algo;
  cv->math = like->math;
  cv->ws_bytes = like->ws_bytes;
  cv->has_algo = like->has_algo;
  if (cv->has_algo) (void)cudnnSetConvolutionMathType(cv->cd, cv->math);
}

ct_status cudnn_conv_search(cudnn_conv *f, const bench_timer *t, double *us, char *algo,
                            size_t algo_size, char *why, size_t why_size, ct_err *err) {
  ct_status st = CT_OK;
  cudnn_side *c = f->c;
  *us = BENCH_NONE;
  algo[0] = why[0] = '\0';
  f->has_algo = 0;
  CUDNN_TRY(cudnnSetStream(c->h, (cudaStream_t)t->stream));
  if ((st = reserve(&c->x, &c->x_size, f->x_bytes, err)) ||
      (st = reserve(&c->w, &c->w_size, f->w_bytes, err)) ||
      (st = reserve(&c->y, &c->y_size, f->y_bytes, err)) ||
      (st = fill(c, c->x, f->x_bytes, f->kind == CUDNN_SIDE_FP16, err)) ||
      (st = fill(c, c->w, f->w_bytes, f->kind == CUDNN_SIDE_FP16, err)))
    goto done;

  /* a workspace beyond half the free memory (at most 8 GiB) is not tried */
  size_t free_b = 0, total_b = 0;
  CUDA_TRY(err, cudaMemGetInfo(&free_b, &total_b));
  size_t ws_cap = (free_b + c->ws_size) / 2;
  if (ws_cap > ((size_t)8 << 30)) ws_cap = (size_t)8 << 30;

  int max_count = 0;
  CUDNN_TRY(cudnnGetConvolutionForwardAlgorithmMaxCount(c->h, &max_count));
  if (max_count < CUDNN_CONVOLUTION_FWD_ALGO_COUNT) max_count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  /* implicit GEMMs first: they usually win, and a good early best lets the
   * slow algorithms be dropped after their estimate */
  int order[64], n_order = 0;
  order[n_order++] = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  order[n_order++] = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  for (int a = 0; a < max_count && n_order < 64; a++)
    if (a != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM &&
        a != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM)
      order[n_order++] = a;
  static const cudnnMathType_t int8_maths[] = {CUDNN_TENSOR_OP_MATH, CUDNN_DEFAULT_MATH};
  static const cudnnMathType_t fp16_maths[] = {CUDNN_TENSOR_OP_MATH};
  const cudnnMathType_t *maths = f->kind == CUDNN_SIDE_FP16 ? fp16_maths : int8_maths;
  int n_maths = f->kind == CUDNN_SIDE_FP16 ? 1 : 2;

  int n_unsupported = 0, n_failed = 0, n_big = 0, n_ran = 0;
  char first_unsupported[96] = "", first_failed[160] = "";
  double best = BENCH_NONE;
  cudnnConvolutionFwdAlgo_t best_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t best_math = maths[0];
  size_t best_ws = 0;
  for (int m = 0; m < n_maths; m++) {
    CUDNN_TRY(cudnnSetConvolutionMathType(f->cd, maths[m]));
    for (int i = 0; i < n_order; i++) {
      f->algo = (cudnnConvolutionFwdAlgo_t)order[i];
      cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(c->h, f->xd, f->wd, f->cd, f->yd,
                                                                f->algo, &f->ws_bytes);
      if (s != CUDNN_STATUS_SUCCESS) {
        if (!n_unsupported++)
          snprintf(first_unsupported, sizeof first_unsupported, "%s", cudnnGetErrorString(s));
        continue;
      }
      if (f->ws_bytes > ws_cap) {
        n_big++;
        continue;
      }
      if ((st = reserve(&c->ws, &c->ws_size, f->ws_bytes, err))) goto done;
      cudnn_conv_bind(f, c->x, c->w, c->y, c->ws, 1.0);
      double t_us = BENCH_NONE;
      ct_err e = {0};
      ct_status ts =
          bench_time(t, cudnn_conv_launch, f, bench_has(best) ? 10 * best : 0, &t_us, &e);
      if (ts) {
        /* unsupported at run time, or not capturable: the next algorithm,
         * unless the context is broken */
        if (!n_failed++)
          snprintf(first_failed, sizeof first_failed, "%s %s: %.120s", algo_name(f->algo),
                   maths[m] == CUDNN_TENSOR_OP_MATH ? "tensor op" : "default math", e.msg);
        (void)cudaGetLastError();
        CUDA_TRY(err, cudaDeviceSynchronize());
        continue;
      }
      n_ran++;
      if (bench_has(t_us) && (!bench_has(best) || t_us < best)) {
        best = t_us;
        best_algo = f->algo;
        best_math = maths[m];
        best_ws = f->ws_bytes;
        if (f->kind == CUDNN_SIDE_FP16)
          snprintf(algo, algo_size, "%s", algo_name(f->algo));
        else
          snprintf(algo, algo_size, "%s, %s", algo_name(f->algo),
                   maths[m] == CUDNN_TENSOR_OP_MATH ? "tensor op" : "default math");
      }
    }
  }
  *us = best;
  if (bench_has(best)) {
    /* keep the winner, so that a chain launches exactly what was timed */
    f->algo = best_algo;
    f->math = best_math;
    f->ws_bytes = best_ws;
    f->has_algo = 1;
    CUDNN_TRY(cudnnSetConvolutionMathType(f->cd, best_math));
  }
  if (!n_ran) {
    int n = snprintf(why, why_size, "no algorithm runs:");
    if (n_unsupported && n > 0 && (size_t)n < why_size)
      n += snprintf(why + n, why_size - (size_t)n, " %d unsupported (%s)", n_unsupported,
                    first_unsupported);
    if (n_big && n > 0 && (size_t)n < why_size)
      n += snprintf(why + n, why_size - (size_t)n, " %d want over %zu MiB of workspace", n_big,
                    ws_cap >> 20);
    if (n_failed && n > 0 && (size_t)n < why_size)
      snprintf(why + n, why_size - (size_t)n, " %d failed (%s)", n_failed, first_failed);
  } else if (n_failed) {
    snprintf(why, why_size, "%d algorithm(s) failed to run or be captured, first %s", n_failed,
             first_failed);
  }
done:
  return st;
}

ct_status cudnn_side_time(cudnn_side *c, const bench_timer *t, const ct_workload *w,
                          cudnn_side_kind kind, double *us, char *algo, size_t algo_size, char *why,
                          size_t why_size, ct_err *err) {
  cudnn_conv *cv = NULL;
  *us = BENCH_NONE;
  algo[0] = '\0';
  ct_status st = cudnn_conv_open(c, w, kind, &cv, why, why_size, err);
  if (!st && cv) st = cudnn_conv_search(cv, t, us, algo, algo_size, why, why_size, err);
  cudnn_conv_close(cv);
  return st;
}

#else /* no cuDNN at build time */

struct cudnn_side {
  int unused;
};

int cudnn_side_built(void) {
  return 0;
}

ct_status cudnn_side_open(struct CUstream_st *stream, cudnn_side **out, ct_err *err) {
  (void)stream;
  *out = NULL;
  return ERR_SET(err, CT_ERR_UNSUPPORTED, "cuDNN not built in");
}

const char *cudnn_side_version(const cudnn_side *c) {
  (void)c;
  return "";
}

void cudnn_side_close(cudnn_side *c) {
  (void)c;
}

ct_status cudnn_side_time(cudnn_side *c, const bench_timer *t, const ct_workload *w,
                          cudnn_side_kind kind, double *us, char *algo, size_t algo_size, char *why,
                          size_t why_size, ct_err *err) {
  (void)c, (void)t, (void)w, (void)kind, (void)err;
  *us = BENCH_NONE;
  if (algo_size) algo[0] = '\0';
  snprintf(why, why_size, "cuDNN not built in");
  return CT_OK;
}

struct cudnn_conv {
  ct_workload w;
};

ct_status cudnn_conv_open(cudnn_side *c, const ct_workload *w, cudnn_side_kind kind,
                          cudnn_conv **out, char *why, size_t why_size, ct_err *err) {
  (void)c, (void)w, (void)kind, (void)err;
  *out = NULL;
  snprintf(why, why_size, "cuDNN not built in");
  return CT_OK;
}

/* Without cuDNN no conv is ever opened: the calls below never see one. */
ct_status cudnn_conv_search(cudnn_conv *cv, const bench_timer *t, double *us, char *algo,
                            size_t algo_size, char *why, size_t why_size, ct_err *err) {
  (void)cv, (void)t, (void)err;
  *us = BENCH_NONE;
  if (algo_size) algo[0] = '\0';
  snprintf(why, why_size, "cuDNN not built in");
  return CT_OK;
}

void cudnn_conv_use_algo(cudnn_conv *cv, const cudnn_conv *like) {
  (void)cv, (void)like;
}

const ct_workload *cudnn_conv_workload(const cudnn_conv *cv) {
  return &cv->w;
}

size_t cudnn_conv_bytes(const cudnn_conv *cv, cudnn_conv_tensor which) {
  (void)cv, (void)which;
  return 0;
}

void cudnn_conv_bind(cudnn_conv *cv, const void *x, const void *w, void *y, void *ws,
                     double alpha) {
  (void)cv, (void)x, (void)w, (void)y, (void)ws, (void)alpha;
}

ct_status cudnn_conv_launch(void *user, struct CUstream_st *stream, ct_err *err) {
  (void)user, (void)stream;
  return ERR_SET(err, CT_ERR_UNSUPPORTED, "cuDNN not built in");
}

ct_status cudnn_side_fill(cudnn_side *c, void *dst, size_t bytes, cudnn_side_kind kind,
                          ct_err *err) {
  (void)c, (void)dst, (void)bytes, (void)kind;
  return ERR_SET(err, CT_ERR_UNSUPPORTED, "cuDNN not built in");
}

void cudnn_conv_close(cudnn_conv *cv) {
  (void)cv;
}

#endif
