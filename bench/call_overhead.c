/*
 * call_overhead.c: the host time of one cached ct_qconv2d / ct_qconv3d call,
 * through the public API of the shared libconvtune only: the C side that
 * bench/issue37_gpu.py compares the Python package's calls with.
 *
 *   call_overhead KEY|'{JSON}' [CALLS]
 *
 * Random data and weights, params from ct_make_params (bias, scales), one
 * untimed warm-up call (the kernel's load) and a synchronisation, then
 * CALLS calls (default 20000) in rounds of SYNC_EVERY: each round's calls
 * are timed back to back and the stream synchronised, untimed, after it,
 * so the launch queue never fills and only the calls are counted. 5 runs;
 * prints one JSON object: the workload's key, each run's microseconds per
 * call and their median. bench/issue37_gpu.py times the Python calls the
 * same way on the same workload.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "convtune/convtune.h"

#define SYNC_EVERY 500
#define N_RUNS     5

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "call_overhead: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void cuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess) die("%s: %s", what, cudaGetErrorString(e));
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* n random bytes on the device */
static void *device_random(size_t n, unsigned *seed) {
  unsigned char *h = malloc(n ? n : 1);
  if (!h) die("out of memory");
  for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(rand_r(seed) >> 7);
  void *d = NULL;
  cuda(cudaMalloc(&d, n ? n : 1), "cudaMalloc");
  cuda(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice), "cudaMemcpy");
  free(h);
  return d;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) die("usage: call_overhead KEY|'{JSON}' [CALLS]");
  long calls = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
  if (calls < SYNC_EVERY || calls % SYNC_EVERY)
    die("CALLS: a multiple of %d, not %s", SYNC_EVERY, argv[2]);
  char msg[512];
  ct_workload w;
  if (ct_workload_parse(argv[1], &w, msg, sizeof msg)) die("%s", msg);
  char key[256]; /* ct_workload_key: at least 256 bytes */
  if (ct_workload_key(&w, key, sizeof key)) die("%s", key);
  if (w.layout != CT_LAYOUT_NHWC)
    die("%s: a channels-last workload (its weights need no packing)", key);

  ct_context *ctx = NULL;
  if (ct_open(NULL, 0, &ctx)) die("ct_open: %s", ctx ? ct_errmsg(ctx) : "failed");
  unsigned seed = 20261127;
  int64_t dims[6];
  int nd = ct_workload_out_dims(&w, dims);
  size_t out_elems = 1;
  for (int i = 0; i < nd; i++) out_elems *= (size_t)dims[i];
  size_t eb = w.out_type == CT_DTYPE_INT32 ? 4 : 1;
  size_t data_bytes = (size_t)w.n * w.c;
  size_t wt_bytes = (size_t)w.k * (w.c / (w.groups > 0 ? w.groups : 1));
  for (int d = 0; d < (w.op == CT_OP_CONV3D ? 3 : 2); d++) {
    data_bytes *= (size_t)w.in[d];
    wt_bytes *= (size_t)w.kernel[d];
  }
  void *data = device_random(data_bytes, &seed);
  void *wt = device_random(wt_bytes, &seed);
  void *res = w.epi.residual ? device_random(out_elems * eb, &seed) : NULL;
  void *out = NULL, *params = NULL;
  cuda(cudaMalloc(&out, out_elems * eb), "cudaMalloc");
  size_t pbytes = ct_params_bytes(&w);
  if (pbytes) {
    int8_t *hw = malloc(wt_bytes);
    int32_t *bias = calloc((size_t)w.k, sizeof *bias);
    float *scale = malloc((size_t)w.k * sizeof *scale);
    void *hp = malloc(pbytes);
    if (!hw || !bias || !scale || !hp) die("out of memory");
    for (int k = 0; k < w.k; k++) scale[k] = 1e-4f;
    cuda(cudaMemcpy(hw, wt, wt_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    ct_quant q = {.bias = bias,
                  .scale = scale,
                  .clamp_min = -128,
                  .clamp_max = 127,
                  .residual_scale = 0.5f,
                  .mid_clamp_min = -128,
                  .mid_clamp_max = 127,
                  .mid_scale = 1.0f};
    if (ct_make_params(ctx, &w, &q, hw, hp)) die("ct_make_params: %s", ct_errmsg(ctx));
    cuda(cudaMalloc(&params, pbytes), "cudaMalloc");
    cuda(cudaMemcpy(params, hp, pbytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    free(hw), free(bias), free(scale), free(hp);
  }
  cudaStream_t s;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  ct_status (*fn)(ct_context *, const ct_workload *, const void *, const void *, const void *,
                  const void *, void *, struct CUstream_st *) =
      w.op == CT_OP_CONV3D ? ct_qconv3d : ct_qconv2d;
  if (fn(ctx, &w, data, wt, params, res, out, s)) die("%s: %s", key, ct_errmsg(ctx));
  cuda(cudaStreamSynchronize(s), "the warm-up call");

  double runs[N_RUNS];
  for (int r = 0; r < N_RUNS; r++) {
    double total = 0;
    for (long done = 0; done < calls; done += SYNC_EVERY) {
      double t0 = now_us();
      for (int i = 0; i < SYNC_EVERY; i++)
        if (fn(ctx, &w, data, wt, params, res, out, s)) die("%s: %s", key, ct_errmsg(ctx));
      total += now_us() - t0;
      cuda(cudaStreamSynchronize(s), "a round");
    }
    runs[r] = total / (double)calls;
  }
  printf("{\"key\": \"%s\", \"calls\": %ld, \"sync_every\": %d, \"us_per_call\": [", key, calls,
         SYNC_EVERY);
  for (int r = 0; r < N_RUNS; r++) printf("%s%.4f", r ? ", " : "", runs[r]);
  qsort(runs, N_RUNS, sizeof runs[0], cmp_double);
  printf("], \"median_us\": %.4f}\n", runs[N_RUNS / 2]);
  cudaStreamDestroy(s);
  cudaFree(data), cudaFree(wt), cudaFree(out), cudaFree(params), cudaFree(res);
  ct_close(ctx);
  return 0;
}
