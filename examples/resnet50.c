/*
 * resnet50.c: runs the 23 distinct convolutions of ResNet-50 v1.5 through
 * libconvtune and checks every output element against the library's CPU
 * reference. It is built only against the installed package (convtune.h,
 * libconvtune) and the CUDA runtime, as an inference runtime would be.
 *
 * Usage: resnet50 [DB [BATCH]]. DB is a tuning database ("-" or "": none,
 * every layer gets the heuristic default); BATCH is 1..64, default 1.
 * Data and weights are random int8 over the full range from a fixed seed, in
 * the plain layouts (NCHW data, OIHW weights, NCHW int32 output); weights
 * are packed on the GPU with ct_pack_weights. It times nothing (bench/ does):
 * the CPU reference dominates, about 2 G multiply-adds per image.
 * Exit status: 0 all layers exact, 1 a mismatch or an error, 2 bad
 * arguments, 77 no GPU.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include <convtune/convtune.h>

/* scripts/workloads/resnet50.json: square kernels, strides and pads. The
 * 3-channel stem stays C = 3; the library zero-pads it to 4 for dp4a. */
typedef struct layer {
  const char *name;
  int c, h, w, k, kernel, stride, pad;
} layer;

static const layer layers[] = {
    {"conv1", 3, 224, 224, 64, 7, 2, 3},
    {"l1_1x1_64_64", 64, 56, 56, 64, 1, 1, 0},
    {"l1_3x3_64", 64, 56, 56, 64, 3, 1, 1},
    {"l1_1x1_64_256", 64, 56, 56, 256, 1, 1, 0},
    {"l1_1x1_256_64", 256, 56, 56, 64, 1, 1, 0},
    {"l2_1x1_256_128", 256, 56, 56, 128, 1, 1, 0},
    {"l2_3x3_128_s2", 128, 56, 56, 128, 3, 2, 1},
    {"l2_1x1_128_512", 128, 28, 28, 512, 1, 1, 0},
    {"l2_ds_256_512_s2", 256, 56, 56, 512, 1, 2, 0},
    {"l2_1x1_512_128", 512, 28, 28, 128, 1, 1, 0},
    {"l2_3x3_128", 128, 28, 28, 128, 3, 1, 1},
    {"l3_1x1_512_256", 512, 28, 28, 256, 1, 1, 0},
    {"l3_3x3_256_s2", 256, 28, 28, 256, 3, 2, 1},
    {"l3_1x1_256_1024", 256, 14, 14, 1024, 1, 1, 0},
    {"l3_ds_512_1024_s2", 512, 28, 28, 1024, 1, 2, 0},
    {"l3_1x1_1024_256", 1024, 14, 14, 256, 1, 1, 0},
    {"l3_3x3_256", 256, 14, 14, 256, 3, 1, 1},
    {"l4_1x1_1024_512", 1024, 14, 14, 512, 1, 1, 0},
    {"l4_3x3_512_s2", 512, 14, 14, 512, 3, 2, 1},
    {"l4_1x1_512_2048", 512, 7, 7, 2048, 1, 1, 0},
    {"l4_ds_1024_2048_s2", 1024, 14, 14, 2048, 1, 2, 0},
    {"l4_1x1_2048_512", 2048, 7, 7, 512, 1, 1, 0},
    {"l4_3x3_512", 512, 7, 7, 512, 3, 1, 1},
};
#define N_LAYERS (sizeof layers / sizeof layers[0])

/* The batch is capped because the CPU reference grows with it. */
#define MAX_BATCH 64

static const char *const source_names[] = {"exact", "same-cc", "nearest", "default"};

/* splitmix64: a fixed-seed generator, so every run checks the same data. */
static uint64_t next_random(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* n int8 over the whole range -128..127 (the top byte of each draw). */
static void fill_int8(int8_t *p, size_t n, uint64_t *seed) {
  for (size_t i = 0; i < n; i++) p[i] = (int8_t)(uint8_t)(next_random(seed) >> 56);
}

static int out_size(int in, int kernel, int stride, int pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

/* Jump to the function's cleanup with a message naming the failed call. */
#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s: %s: %s\n", l->name, #call, cudaGetErrorString(e_));                     \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)
#define CT_CHECK(call)                                                                             \
  do {                                                                                             \
    ct_status s_ = (call);                                                                         \
    if (s_ != CT_OK) {                                                                             \
      fprintf(stderr, "%s: %s: %s: %s\n", l->name, #call, ct_strerror(s_), ct_errmsg(ctx));        \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

/* Run one layer on the GPU and compare it with the CPU reference; print its
 * line. Returns 0 when exact, 1 on a mismatch or an error. */
static int run_layer(ct_context *ctx, const layer *l, int batch, cudaStream_t stream,
                     uint64_t *seed) {
  int rc = 1;
  int8_t *data = NULL, *weights = NULL;
  int32_t *out = NULL, *ref = NULL;
  void *d_data = NULL, *d_weights = NULL, *d_packed = NULL, *d_out = NULL;

  ct_workload w;
  ct_workload_init(&w, CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NCHW;
  w.n = batch;
  w.c = l->c;
  w.k = l->k;
  for (int i = 0; i < 2; i++) {
    w.kernel[i] = l->kernel;
    w.stride[i] = l->stride;
    w.pad_before[i] = w.pad_after[i] = l->pad;
  }
  w.in[0] = l->h;
  w.in[1] = l->w;
  int p = out_size(l->h, l->kernel, l->stride, l->pad);
  int q = out_size(l->w, l->kernel, l->stride, l->pad);
  size_t n_data = (size_t)batch * l->c * l->h * l->w;
  size_t n_weights = (size_t)l->k * l->c * l->kernel * l->kernel;
  size_t n_out = (size_t)batch * l->k * p * q;
  size_t packed_bytes = ct_packed_weights_bytes(&w);
  if (packed_bytes == 0) {
    char key[256];
    ct_workload_key(&w, key, sizeof key);
    fprintf(stderr, "%s: invalid workload: %s\n", l->name, key);
    goto done;
  }

  data = malloc(n_data);
  weights = malloc(n_weights);
  out = malloc(n_out * sizeof *out);
  ref = malloc(n_out * sizeof *ref);
  if (!data || !weights || !out || !ref) {
    fprintf(stderr, "%s: out of host memory\n", l->name);
    goto done;
  }
  fill_int8(data, n_data, seed);
  fill_int8(weights, n_weights, seed);

  CUDA_CHECK(cudaMalloc(&d_data, n_data));
  CUDA_CHECK(cudaMalloc(&d_weights, n_weights));
  CUDA_CHECK(cudaMalloc(&d_packed, packed_bytes));
  CUDA_CHECK(cudaMalloc(&d_out, n_out * sizeof *out));
  CUDA_CHECK(cudaMemcpy(d_data, data, n_data, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_weights, weights, n_weights, cudaMemcpyHostToDevice));
  /* A sentinel, so that an element the kernel never writes cannot pass. */
  CUDA_CHECK(cudaMemsetAsync(d_out, 0x7f, n_out * sizeof *out, stream));
  CT_CHECK(ct_pack_weights(ctx, &w, d_weights, d_packed, stream));
  CT_CHECK(ct_conv2d(ctx, &w, d_data, d_packed, d_out, stream));
  CUDA_CHECK(cudaMemcpyAsync(out, d_out, n_out * sizeof *out, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));

  ct_explanation why;
  CT_CHECK(ct_explain(ctx, &w, &why));
  CT_CHECK(ct_reference_conv(&w, data, weights, ref));

  size_t n_bad = 0, first = 0;
  for (size_t i = 0; i < n_out; i++) {
    if (out[i] != ref[i] && n_bad++ == 0) first = i;
  }
  char tuned[32] = "-";
  if (why.source != CT_SOURCE_DEFAULT) snprintf(tuned, sizeof tuned, "%.1f", why.measured_us);
  const char *source = (unsigned)why.source < 4 ? source_names[why.source] : "?";
  printf("%-20s %-8s %-24s %9s  ", l->name, source, why.template_name, tuned);
  if (n_bad == 0) {
    printf("exact\n");
    rc = 0;
  } else {
    /* NCHW: the first wrong element's coordinates, for the bug report. */
    size_t x = first % q, y = first / q % p, k = first / ((size_t)p * q) % l->k;
    size_t n = first / ((size_t)p * q * l->k);
    printf("%zu mismatches (first at n%zu k%zu y%zu x%zu: %d, expected %d)\n", n_bad, n, k, y, x,
           out[first], ref[first]);
  }

done:
  cudaFree(d_data);
  cudaFree(d_weights);
  cudaFree(d_packed);
  cudaFree(d_out);
  free(data);
  free(weights);
  free(out);
  free(ref);
  return rc;
}

int main(int argc, char **argv) {
  const char *db_path = NULL;
  int batch = 1;
  if (argc > 3 || (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
    fprintf(stderr, "usage: resnet50 [DB|- [BATCH]]\n");
    return 2;
  }
  if (argc > 1 && strcmp(argv[1], "-") != 0 && argv[1][0] != '\0') db_path = argv[1];
  if (argc > 2) {
    char *end;
    long b = strtol(argv[2], &end, 10);
    if (end == argv[2] || *end != '\0' || b < 1 || b > MAX_BATCH) {
      fprintf(stderr, "resnet50: BATCH must be an integer in 1..%d, got '%s'\n", MAX_BATCH,
              argv[2]);
      return 2;
    }
    batch = (int)b;
  }

  ct_context *ctx = NULL;
  ct_status st = ct_open(db_path, 0, &ctx);
  if (st != CT_OK) {
    fprintf(stderr, "resnet50: %s\n", ctx ? ct_errmsg(ctx) : ct_strerror(st));
    ct_close(ctx);
    return st == CT_ERR_NO_DEVICE ? 77 : 1;
  }
  cudaStream_t stream;
  cudaError_t err = cudaStreamCreate(&stream);
  if (err != cudaSuccess) {
    fprintf(stderr, "resnet50: cudaStreamCreate: %s\n", cudaGetErrorString(err));
    ct_close(ctx);
    return 1;
  }

  printf("convtune %s, batch %d, database %s\n", ct_version(), batch, db_path ? db_path : "none");
  printf("%-20s %-8s %-24s %9s  %s\n", "layer", "source", "template", "tuned_us", "result");
  uint64_t seed = 50;
  int n_failed = 0;
  for (size_t i = 0; i < N_LAYERS; i++)
    n_failed += run_layer(ctx, &layers[i], batch, stream, &seed);
  printf("%zu layers: %zu exact, %d failed\n", N_LAYERS, N_LAYERS - (size_t)n_failed, n_failed);

  cudaStreamDestroy(stream);
  ct_close(ctx);
  return n_failed ? 1 : 0;
}
