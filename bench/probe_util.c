/*
 * probe_util.c: what the probes share (probe_util.h).
 */
#include "bench/probe_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quant.h"
#include "core/workload.h"

const char *probe_name = "probe";

void probe_fail(const char *what, const char *msg) {
  fprintf(stderr, "%s: %s: %s\n", probe_name, what, msg);
  exit(1);
}

void probe_check(cudaError_t e, const char *call, int line) {
  if (e == cudaSuccess) return;
  fprintf(stderr, "%s: %s: %s (line %d)\n", probe_name, call, cudaGetErrorString(e), line);
  exit(1);
}

/* The file at path, whole and NUL-terminated (malloc'ed). */
static char *probe_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) probe_fail("source", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) probe_fail("source", path);
  s[n] = 0;
  fclose(f);
  return s;
}

char *probe_source(int argc, char **argv, const char *file) {
  const char *dir = argc > 2 ? argv[2] : (getenv("CT_SOURCE_DIR") ? getenv("CT_SOURCE_DIR") : ".");
  char path[1024];
  snprintf(path, sizeof path, "%s/bench/%s", dir, file);
  return probe_read_file(path);
}

void *probe_dev_copy(const void *h, size_t n) {
  void *d = NULL;
  CK(cudaMalloc(&d, n ? n : 16));
  if (n) CK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
  return d;
}

void probe_random_bytes(rng *r, int8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (int8_t)rng_next(r);
}

int32_t *probe_make_params(const ct_workload *w, const ct_quant *q, const int8_t *weights) {
  ct_err err = {0};
  int32_t *sums = malloc(sizeof(int32_t) * (size_t)w->k);
  int32_t *p = calloc(quant_params_words(w), 4);
  if (!sums || !p) probe_fail("host", "out of memory");
  quant_weight_sums(w, weights, sums);
  if (quant_params(w, q, sums, p, &err) != CT_OK) probe_fail("quant_params", err.msg);
  free(sums);
  return p;
}

double probe_replay_best_us(cudaStream_t st, cudaGraph_t g, int copies) {
  cudaGraphExec_t ge;
  cudaEvent_t e0, e1;
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float bestms = 0;
  for (int rep = 0; rep < 6; rep++) {
    float ms;
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (rep == 1 || (rep > 1 && ms < bestms)) bestms = ms;
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return 1000.0 * bestms / copies;
}

void probe_mnv2_dw(ct_workload *w, int n, int c, int h, int s) {
  ct_workload_init(w, CT_OP_CONV2D);
  w->layout = CT_LAYOUT_NHWC, w->out_type = CT_DTYPE_INT8, w->n = n;
  w->c = w->k = w->groups = c;
  w->in[0] = w->in[1] = h;
  w->kernel[0] = w->kernel[1] = 3;
  w->stride[0] = w->stride[1] = s;
  w->pad_before[0] = w->pad_before[1] = w->pad_after[0] = w->pad_after[1] = 1;
  w->epi.bias = 1, w->epi.scale = CT_SCALE_CHANNEL, w->epi.rounding = CT_ROUND_ONNX;
}

void probe_mnv2_pw(ct_workload *p, const ct_workload *dw, int k, int res) {
  ct_workload_init(p, CT_OP_CONV2D);
  p->layout = CT_LAYOUT_NHWC, p->out_type = CT_DTYPE_INT8, p->n = dw->n;
  p->c = dw->k, p->k = k;
  p->in[0] = p->in[1] = (int)workload_out_size(dw, 0);
  p->kernel[0] = p->kernel[1] = 1;
  p->epi.bias = 1, p->epi.scale = CT_SCALE_CHANNEL, p->epi.rounding = CT_ROUND_ONNX;
  p->epi.residual = res;
}

void probe_sm90(device *dev) {
  memset(dev, 0, sizeof *dev);
  if (arch_from_name("sm_90", &dev->arch, NULL) != CT_OK) probe_fail("arch", "sm_90");
  dev->arch.sm_count = 132;
}

void probe_open(const char *db, device *dev, ct_context **ctx, cudaStream_t *st) {
  ct_err err = {0};
  if (device_open(0, dev, &err) != CT_OK) probe_fail("device", err.msg);
  if (ct_open(db, 0, ctx) != CT_OK) probe_fail("ct_open", "the database");
  CK(cudaStreamCreate(st));
}
