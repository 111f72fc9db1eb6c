/*
 * dispatch_bench.c: what the dispatch library costs on the host.
 *
 *   dispatch_bench DB|- SET BATCH [OUT.json]
 *
 * (a) First-call latency: for each workload of SET (a fresh context each,
 *     opened untimed), the host wall time of the first ct_conv2d/ct_conv3d
 *     call from call to return (the launch is asynchronous: the kernel's
 *     own time is not in it). Measured in the packed layout (lookup, cubin
 *     load or NVRTC compile, launch) and in the plain layout with the layout
 *     kernels already loaded by an untimed ct_pack_weights (add their
 *     one-time compile, reported apart). Summary over the layers whose
 *     source is EXACT: max and median (target <= 1 ms). One untimed call
 *     before the loop takes the process's one-time costs (CUDA context,
 *     NVRTC's builtins, the stream-ordered pool).
 * (b) Host overhead of a cached call: a small packed workload (no layout
 *     kernels), 20000 ct_conv2d calls against 20000 bare cudaLaunchKernel
 *     calls of the same kernel. The bare side rebuilds the entry as
 *     dispatch.c does (resolve + instance_make + nvrtc_compile + kernel_load)
 *     and calls cudaLaunchKernel directly with the kernel handle and
 *     arguments prepared once: the floor of any launch. Same stream, same
 *     count; both sync every 1000 calls, untimed, so the launch queue never
 *     fills and only the calls are timed. Both outputs are checked against
 *     the CPU reference first. 5 runs each, interleaved (the order flips
 *     every run); medians and their difference (target <= 1 us).
 * Results: a Markdown table on stdout; JSON to OUT.json when given.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>
#include <cuda_runtime.h>

#include "convtune/convtune.h"
#include "core/reference.h"
#include "core/rng.h"
#include "core/wlset.h"
#include "db/db.h"
#include "gpu/device.h"
#include "gpu/kernel.h"
#include "gpu/nvrtc.h"
#include "resolve/resolve.h"

#define N_CALLS    20000
#define SYNC_EVERY 1000
#define N_RUNS     5

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "dispatch_bench: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(EXIT_FAILURE);
}

#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) die("%s: %s", #call, cudaGetErrorString(e_));                           \
  } while (0)

static void ct_check(ct_status st, ct_context *ctx, const char *what) {
  if (st) die("%s: %s", what, ct_errmsg(ctx));
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v (n > 0; v is sorted in place). */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char *source_name(ct_source s) {
  static const char *const names[] = {"exact", "same-cc", "nearest", "default"};
  return (unsigned)s < 4 ? names[s] : "?";
}

static ct_status conv(ct_context *ctx, const ct_workload *w, const void *data, const void *weights,
                      void *out, cudaStream_t stream) {
  return w->op == CT_OP_CONV3D ? ct_conv3d(ctx, w, data, weights, out, stream)
                               : ct_conv2d(ctx, w, data, weights, out, stream);
}

/* ---- (a) first-call latency ---------------------------------------------------------- */

typedef struct layer_row {
  const char *name;
  char key[CT_KEY_MAX];
  ct_source source;
  double packed_ms, plain_ms;
} layer_row;

/* Device buffers for the largest layer of a set, in either layout; their
 * contents do not matter for timing. */
typedef struct buffers {
  void *data, *wplain, *weights, *out;
} buffers;

/* The host time of the first call of w on a fresh context; its source into *src.
 * preload: load the layout kernels first (untimed), for the plain layout. */
static double first_call_ms(const char *db_path, const ct_workload *w, const buffers *b,
                            cudaStream_t stream, int preload, ct_source *src) {
  ct_context *ctx = NULL;
  ct_check(ct_open(db_path, 0, &ctx), ctx, "ct_open");
  if (preload) {
    ct_check(ct_pack_weights(ctx, w, b->wplain, b->weights, stream), ctx, "ct_pack_weights");
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  double t0 = now_s();
  ct_status st = conv(ctx, w, b->data, b->weights, b->out, stream);
  double t1 = now_s();
  ct_check(st, ctx, "first call");
  CUDA_CHECK(cudaStreamSynchronize(stream));
  ct_explanation ex;
  ct_check(ct_explain(ctx, w, &ex), ctx, "ct_explain");
  *src = ex.source;
  ct_close(ctx);
  return 1e3 * (t1 - t0);
}

/* The one-time cost of the layout kernels: the first ct_pack_weights of a context. */
static double pack_kernels_ms(const char *db_path, const ct_workload *w, const buffers *b,
                              cudaStream_t stream) {
  ct_context *ctx = NULL;
  ct_check(ct_open(db_path, 0, &ctx), ctx, "ct_open");
  double t0 = now_s();
  ct_status st = ct_pack_weights(ctx, w, b->wplain, b->weights, stream);
  double t1 = now_s();
  ct_check(st, ctx, "ct_pack_weights");
  CUDA_CHECK(cudaStreamSynchronize(stream));
  ct_close(ctx);
  return 1e3 * (t1 - t0);
}

static cJSON *first_calls(const char *db_path, const wlset *set, cudaStream_t stream) {
  /* buffers for the largest layer in either layout (contents do not matter) */
  size_t data_n = 0, weight_n = 0, out_n = 0;
  for (int i = 0; i < set->n_items; i++) {
    ct_workload pw;
    workload_packed(&set->items[i].w, &pw);
    size_t d = (size_t)workload_data_elems(&pw), wt = (size_t)workload_weight_elems(&pw);
    size_t o = (size_t)workload_out_elems(&pw) * sizeof(int32_t);
    data_n = d > data_n ? d : data_n;
    weight_n = wt > weight_n ? wt : weight_n;
    out_n = o > out_n ? o : out_n;
  }
  /* plain sizes are at most the packed ones */
  buffers b = {0};
  CUDA_CHECK(cudaMalloc(&b.data, data_n));
  CUDA_CHECK(cudaMalloc(&b.wplain, weight_n));
  CUDA_CHECK(cudaMalloc(&b.weights, weight_n));
  CUDA_CHECK(cudaMalloc(&b.out, out_n));
  CUDA_CHECK(cudaMemset(b.data, 0, data_n));
  CUDA_CHECK(cudaMemset(b.wplain, 0, weight_n));
  CUDA_CHECK(cudaMemset(b.weights, 0, weight_n));

  layer_row *rows = calloc((size_t)set->n_items, sizeof *rows);
  double *exact_packed = calloc((size_t)set->n_items + 1, sizeof(double));
  double *exact_plain = calloc((size_t)set->n_items + 1, sizeof(double));
  if (!rows || !exact_packed || !exact_plain) die("out of memory");

  /* the process's one-time costs, untimed */
  ct_source src;
  ct_workload w0 = set->items[0].w;
  (void)first_call_ms(db_path, &w0, &b, stream, 1, &src);
  double pack_ms = pack_kernels_ms(db_path, &w0, &b, stream);

  int n_exact = 0;
  for (int i = 0; i < set->n_items; i++) {
    layer_row *r = &rows[i];
    ct_workload w = set->items[i].w, pw;
    workload_packed(&w, &pw);
    r->name = set->items[i].name;
    workload_key(&pw, r->key, sizeof r->key);
    ct_source plain_src;
    r->packed_ms = first_call_ms(db_path, &pw, &b, stream, 0, &r->source);
    r->plain_ms = first_call_ms(db_path, &w, &b, stream, 1, &plain_src);
    if (plain_src != r->source) die("%s: plain and packed resolve differently", r->key);
    if (r->source == CT_SOURCE_EXACT) {
      exact_packed[n_exact] = r->packed_ms;
      exact_plain[n_exact++] = r->plain_ms;
    }
  }

  printf("## First-call latency: %s, %d layers\n\n", set->name, set->n_items);
  printf("| layer | source | packed first call (ms) | plain first call (ms) |\n");
  printf("|---|---|---:|---:|\n");
  for (int i = 0; i < set->n_items; i++)
    printf("| %s | %s | %.3f | %.3f |\n", rows[i].name, source_name(rows[i].source),
           rows[i].packed_ms, rows[i].plain_ms);
  cJSON *j = cJSON_CreateObject(), *layers = cJSON_AddArrayToObject(j, "layers");
  for (int i = 0; i < set->n_items; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "layer", rows[i].name);
    cJSON_AddStringToObject(o, "key", rows[i].key);
    cJSON_AddStringToObject(o, "source", source_name(rows[i].source));
    cJSON_AddNumberToObject(o, "packed_ms", rows[i].packed_ms);
    cJSON_AddNumberToObject(o, "plain_ms", rows[i].plain_ms);
    cJSON_AddItemToArray(layers, o);
  }
  cJSON_AddNumberToObject(j, "n_exact", n_exact);
  printf("\nLayout kernels (NVRTC compile and load, once per context): %.1f ms\n", pack_ms);
  cJSON_AddNumberToObject(j, "pack_kernels_ms", pack_ms);
  if (n_exact) {
    double pmax = 0, lmax = 0;
    for (int i = 0; i < n_exact; i++) {
      pmax = exact_packed[i] > pmax ? exact_packed[i] : pmax;
      lmax = exact_plain[i] > lmax ? exact_plain[i] : lmax;
    }
    double pmed = median(exact_packed, n_exact), lmed = median(exact_plain, n_exact);
    printf("EXACT layers (%d): packed max %.3f ms, median %.3f ms; plain max %.3f ms, median "
           "%.3f ms (target <= 1 ms)\n\n",
           n_exact, pmax, pmed, lmax, lmed);
    cJSON_AddNumberToObject(j, "exact_packed_max_ms", pmax);
    cJSON_AddNumberToObject(j, "exact_packed_median_ms", pmed);
    cJSON_AddNumberToObject(j, "exact_plain_max_ms", lmax);
    cJSON_AddNumberToObject(j, "exact_plain_median_ms", lmed);
  } else {
    printf("No layer has an EXACT record on this device: no summary.\n\n");
  }
  free(rows);
  free(exact_packed);
  free(exact_plain);
  cudaFree(b.data);
  cudaFree(b.wplain);
  cudaFree(b.weights);
  cudaFree(b.out);
  return j;
}

/* ---- (b) cached-call overhead ------------------------------------------------------------ */

typedef struct bare_kernel {
  instance inst;
  kernel k;
  void *args[INSTANCE_MAX_ARGS];
  const void *data, *weights;
  void *out;
  char config[1024];
} bare_kernel;

/* Rebuild the kernel dispatch.c would run for w on dev, as dispatch.c does. */
static void bare_make(const char *db_path, const device *dev, const ct_workload *w,
                      bare_kernel *b) {
  db *d = NULL;
  ct_err err = {0};
  if (db_path && db_open(db_path, 1, &d, &err)) die("%s", err.msg);
  db_device dd;
  memset(&dd, 0, sizeof dd);
  snprintf(dd.name, sizeof dd.name, "%s", dev->name);
  dd.cc_major = dev->arch.cc_major;
  dd.cc_minor = dev->arch.cc_minor;
  dd.sm_count = dev->arch.sm_count;
  resolution r;
  if (resolve(d, &dd, &dev->arch, w, &r, &err)) die("resolve: %s", err.msg);
  snprintf(b->config, sizeof b->config, "%s", r.ex.config);
  if (instance_make(r.tpl, &r.pw, &r.s, &r.cfg, &dev->arch, &b->inst, &err))
    die("instance_make: %s", err.msg);
  cubin cb = {0};
  if (nvrtc_compile(&b->inst, &dev->arch, &cb, &err)) die("nvrtc_compile: %s", err.msg);
  if (kernel_load(cb.data, cb.size, &b->inst, &b->k, &err)) die("kernel_load: %s", err.msg);
  cubin_free(&cb);
  resolution_free(&r);
  db_close(d);
  /* cudaLaunchKernel reads each argument from the address in args[i] */
  for (int i = 0; i < b->inst.n_args; i++)
    b->args[i] = b->inst.args[i] == ARG_DATA      ? (void *)&b->data
                 : b->inst.args[i] == ARG_WEIGHTS ? (void *)&b->weights
                                                  : (void *)&b->out;
}

static cudaError_t bare_launch(const bare_kernel *b, cudaStream_t stream) {
  dim3 grid = {b->inst.grid[0], b->inst.grid[1], b->inst.grid[2]};
  dim3 block = {b->inst.block[0], b->inst.block[1], b->inst.block[2]};
  return cudaLaunchKernel((const void *)b->k.fn, grid, block, (void **)b->args, b->inst.smem_bytes,
                          stream);
}

/* Host microseconds per call over N_CALLS calls, syncs excluded. */
static double time_ct(ct_context *ctx, const ct_workload *w, const void *data, const void *weights,
                      void *out, cudaStream_t stream) {
  double total = 0;
  for (int done = 0; done < N_CALLS; done += SYNC_EVERY) {
    int bad = 0;
    double t0 = now_s();
    for (int i = 0; i < SYNC_EVERY; i++) bad |= ct_conv2d(ctx, w, data, weights, out, stream);
    total += now_s() - t0;
    if (bad) die("ct_conv2d: %s", ct_errmsg(ctx));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  return 1e6 * total / N_CALLS;
}

static double time_bare(const bare_kernel *b, cudaStream_t stream) {
  double total = 0;
  for (int done = 0; done < N_CALLS; done += SYNC_EVERY) {
    int bad = 0;
    double t0 = now_s();
    for (int i = 0; i < SYNC_EVERY; i++) bad |= bare_launch(b, stream) != cudaSuccess;
    total += now_s() - t0;
    if (bad) die("cudaLaunchKernel failed");
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  return 1e6 * total / N_CALLS;
}

static void check_exact(const void *d_out, const int32_t *want, size_t n, const char *who) {
  int32_t *got = malloc(n * sizeof *got);
  if (!got) die("out of memory");
  CUDA_CHECK(cudaMemcpy(got, d_out, n * sizeof *got, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += got[i] != want[i];
  free(got);
  if (bad) die("%s: output differs from the reference", who);
}

static cJSON *cached_calls(const char *db_path, const device *dev, cudaStream_t stream) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NCHW4C;
  w.c = w.k = 16;
  w.in[0] = w.in[1] = 8;
  w.kernel[0] = w.kernel[1] = 3;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 1;
  char key[CT_KEY_MAX];
  workload_key(&w, key, sizeof key);
  size_t data_n = (size_t)workload_data_elems(&w), weight_n = (size_t)workload_weight_elems(&w);
  size_t out_n = (size_t)workload_out_elems(&w);
  int8_t *data = malloc(data_n), *weights = malloc(weight_n);
  int32_t *ref = malloc(out_n * sizeof *ref);
  if (!data || !weights || !ref) die("out of memory");
  rng r;
  rng_seed(&r, 7);
  for (size_t i = 0; i < data_n; i++) data[i] = (int8_t)(uint8_t)rng_next(&r);
  for (size_t i = 0; i < weight_n; i++) weights[i] = (int8_t)(uint8_t)rng_next(&r);
  if (reference_conv(&w, data, weights, ref, NULL)) die("reference_conv failed");
  void *d_data = NULL, *d_weights = NULL, *d_out_ct = NULL, *d_out_bare = NULL;
  CUDA_CHECK(cudaMalloc(&d_data, data_n));
  CUDA_CHECK(cudaMalloc(&d_weights, weight_n));
  CUDA_CHECK(cudaMalloc(&d_out_ct, out_n * sizeof(int32_t)));
  CUDA_CHECK(cudaMalloc(&d_out_bare, out_n * sizeof(int32_t)));
  CUDA_CHECK(cudaMemcpy(d_data, data, data_n, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_weights, weights, weight_n, cudaMemcpyHostToDevice));

  ct_context *ctx = NULL;
  ct_check(ct_open(db_path, 0, &ctx), ctx, "ct_open");
  bare_kernel b;
  memset(&b, 0, sizeof b);
  bare_make(db_path, dev, &w, &b);
  b.data = d_data, b.weights = d_weights, b.out = d_out_bare;
  ct_explanation ex;

  /* validate before timing: both exact, and the same config */
  CUDA_CHECK(cudaMemset(d_out_ct, 0xA5, out_n * sizeof(int32_t)));
  CUDA_CHECK(cudaMemset(d_out_bare, 0xA5, out_n * sizeof(int32_t)));
  ct_check(ct_conv2d(ctx, &w, d_data, d_weights, d_out_ct, stream), ctx, "ct_conv2d");
  CUDA_CHECK(bare_launch(&b, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  check_exact(d_out_ct, ref, out_n, "ct_conv2d");
  check_exact(d_out_bare, ref, out_n, "cudaLaunchKernel");
  ct_check(ct_explain(ctx, &w, &ex), ctx, "ct_explain");
  if (strcmp(ex.config, b.config))
    die("the bare kernel's config differs: %s vs %s", b.config, ex.config);

  /* warm-up, then what the GPU takes per kernel (to see whether it lags) */
  (void)time_ct(ctx, &w, d_data, d_weights, d_out_ct, stream);
  (void)time_bare(&b, stream);
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  CUDA_CHECK(cudaEventRecord(e0, stream));
  for (int i = 0; i < SYNC_EVERY; i++) CUDA_CHECK(bare_launch(&b, stream));
  CUDA_CHECK(cudaEventRecord(e1, stream));
  CUDA_CHECK(cudaEventSynchronize(e1));
  float gpu_ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&gpu_ms, e0, e1));
  double gpu_us = 1e3 * gpu_ms / SYNC_EVERY;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);

  double ct_us[N_RUNS], bare_us[N_RUNS];
  for (int run = 0; run < N_RUNS; run++) {
    if (run % 2 == 0) {
      ct_us[run] = time_ct(ctx, &w, d_data, d_weights, d_out_ct, stream);
      bare_us[run] = time_bare(&b, stream);
    } else {
      bare_us[run] = time_bare(&b, stream);
      ct_us[run] = time_ct(ctx, &w, d_data, d_weights, d_out_ct, stream);
    }
  }
  /* the outputs are still right after the runs */
  check_exact(d_out_ct, ref, out_n, "ct_conv2d");
  check_exact(d_out_bare, ref, out_n, "cudaLaunchKernel");

  printf("## Host overhead of a cached call\n\n");
  printf("%s (%s, %s), %d calls per run, sync every %d (untimed), %d runs interleaved; "
         "GPU time per kernel %.2f us\n\n",
         key, source_name(ex.source), ex.template_name, N_CALLS, SYNC_EVERY, N_RUNS, gpu_us);
  printf("| run | ct_conv2d (us/call) | cudaLaunchKernel (us/call) |\n|---:|---:|---:|\n");
  for (int run = 0; run < N_RUNS; run++)
    printf("| %d | %.3f | %.3f |\n", run + 1, ct_us[run], bare_us[run]);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "workload", key);
  cJSON_AddStringToObject(j, "source", source_name(ex.source));
  cJSON_AddNumberToObject(j, "calls", N_CALLS);
  cJSON_AddNumberToObject(j, "sync_every", SYNC_EVERY);
  cJSON_AddItemToObject(j, "ct_us", cJSON_CreateDoubleArray(ct_us, N_RUNS));
  cJSON_AddItemToObject(j, "bare_us", cJSON_CreateDoubleArray(bare_us, N_RUNS));
  double ct_med = median(ct_us, N_RUNS), bare_med = median(bare_us, N_RUNS);
  printf("| median | %.3f | %.3f |\n\nOverhead of ct_conv2d over a bare launch: %.3f us per call "
         "(target <= 1 us)\n",
         ct_med, bare_med, ct_med - bare_med);
  cJSON_AddNumberToObject(j, "ct_median_us", ct_med);
  cJSON_AddNumberToObject(j, "bare_median_us", bare_med);
  cJSON_AddNumberToObject(j, "overhead_us", ct_med - bare_med);
  cJSON_AddNumberToObject(j, "kernel_gpu_us", gpu_us);

  ct_close(ctx);
  kernel_unload(&b.k);
  cudaFree(d_data);
  cudaFree(d_weights);
  cudaFree(d_out_ct);
  cudaFree(d_out_bare);
  free(data);
  free(weights);
  free(ref);
  return j;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: dispatch_bench DB|- SET BATCH [OUT.json]\n"
                    "  DB: a convtune database ('-': none, every workload gets the default)\n"
                    "  SET: an embedded workload set (resnet50, ...) or a JSON file\n");
    return 2;
  }
  const char *db_path = strcmp(argv[1], "-") ? argv[1] : NULL;
  char *end = NULL;
  errno = 0;
  long batch = strtol(argv[3], &end, 10);
  if (errno || *end || batch < 1 || batch > 4096) die("BATCH '%s': accepted 1..4096", argv[3]);
  wlset *set = NULL;
  ct_err err = {0};
  if (wlset_load_named(argv[2], (int)batch, &set, &err) &&
      wlset_load_file(argv[2], (int)batch, &set, &err))
    die("%s", err.msg);
  if (set->n_items == 0) die("%s: an empty set", argv[2]);

  device dev;
  if (device_open(0, &dev, &err)) die("%s", err.msg);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  printf("# dispatch_bench: %s, %s batch %ld, database %s\n\n", dev.name, set->name, batch,
         db_path ? db_path : "none");

  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "device", dev.name);
  cJSON_AddStringToObject(root, "set", set->name);
  cJSON_AddNumberToObject(root, "batch", (double)batch);
  if (db_path)
    cJSON_AddStringToObject(root, "db", db_path);
  else
    cJSON_AddNullToObject(root, "db");
  cJSON_AddItemToObject(root, "first_call", first_calls(db_path, set, stream));
  cJSON_AddItemToObject(root, "cached_call", cached_calls(db_path, &dev, stream));

  if (argc == 5) {
    char *text = cJSON_Print(root);
    FILE *f = fopen(argv[4], "w");
    if (!text || !f || fputs(text, f) < 0 || fputc('\n', f) == EOF || fclose(f))
      die("%s: %s", argv[4], strerror(errno));
    free(text);
  }
  cJSON_Delete(root);
  cudaStreamDestroy(stream);
  wlset_free(set);
  return 0;
}
