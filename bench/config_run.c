/*
 * config_run.c: one template config on one workload, outside the tuner: for
 * a profiler or a sanitizer (one launch) or a quick timing.
 *
 *   config_run TEMPLATE KEY CONFIG_JSON [LAUNCHES]
 *
 * Compiles the instance for device 0, fills random data, weights and (where
 * the key has them) a params block (quant_random) and a residual, and
 * launches it once. With LAUNCHES > 1 it then captures that many launches
 * in a CUDA graph and prints the best of 5 replays per launch, in us, and
 * the bytes moved (data and output) over that time. The output is not
 * checked: the tuner and the GPU suites do that; run this under ncu or
 * compute-sanitizer. Exit status: 0 done, 1 a failure (the message on
 * stderr), 2 bad arguments.
 *
 * CT_QUANT_FILE=PATH: the requantization's values (the zero points, bias,
 * scales, clamp and residual's of ct_quant) are read from PATH if it
 * exists, else quant_random's are written there. Two builds timing one key
 * (bench/regress36.py ab) then run the same epilogue path: the form an
 * 8-bit epilogue takes depends on the clamp and scales, and quant_random's
 * values for a key moved between commits (1abcecb). An ONNX-rounding or
 * fused key's other values stay each build's own.
 *
 * CT_CUBIN_OUT=PATH: compile only, for the architecture CT_ARCH names
 * (default sm_90, with an H200's 132 SMs where the config depends on the SM
 * count), write the cubin to PATH and exit: no device is opened, so two
 * builds' machine code for one config can be compared on a machine without
 * a GPU (cuobjdump -sass).
 *
 * CT_ALLOC_PAD=BYTES (0 to 2^30): that many bytes of device memory are
 * allocated, and held, before the buffers, which then start elsewhere: how
 * much a timing owes to where its buffers lie (two builds whose modules
 * differ by a global move them) rather than to the kernel.
 *
 * CT_FRESH=1 (with LAUNCHES > 1): what a kernel pays for an input just
 * written, as in a network, where its producer has written it an instant
 * before. Three more graphs of LAUNCHES steps: a device-to-device copy
 * into the data buffer (from a second copy of it) before each launch, the
 * same copy into a buffer of its own (the control: the same copy and
 * traffic, the input left as the last launch read it), and the copies
 * alone; each launch's time is its graph's less the copies'. What this
 * measures is mostly the copy's source, a second buffer of the input's
 * size in the L2, not freshness: an input rewritten by a kernel that reads
 * nothing costs a node what any kernel between its launches does (about
 * 1 us), and the control adds two buffers, so it can push the input out
 * (bench/results/h200-issue35/l2-probes-2c05ca9).
 */
#include <cJSON.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/quant.h"
#include "core/rng.h"
#include "core/workload.h"
#include "gpu/device.h"
#include "gpu/kernel.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"

static int fail(const char *what, const char *msg) {
  fprintf(stderr, "config_run: %s: %s\n", what, msg);
  return 1;
}

/* CT_QUANT_FILE's values into qs (from quant_random, its arrays of k):
 * read from path if it exists, else qs's written there (through a
 * temporary file linked into place, so that of two runs that race the
 * first wins and the other reads its values); 0, or -1 (a message on
 * stderr). Text, floats in hex: exact both ways. */
static int quant_read(const char *path, FILE *f, int64_t k, quant_store *qs) {
  ct_quant *q = &qs->q;
  int64_t fk = -1;
  int ok = fscanf(f, "ct_quant 1 dzp %d ozp %d lo %d hi %d rs %a rzp %d k %" SCNd64,
                  &q->data_zero_point, &q->out_zero_point, &q->clamp_min, &q->clamp_max,
                  &q->residual_scale, &q->residual_zero_point, &fk) == 7 &&
           fk == k;
  for (int64_t i = 0; ok && i < k; i++)
    ok = fscanf(f, "%d %d %a", &qs->zw[i], &qs->bias[i], &qs->scale[i]) == 3;
  fclose(f);
  if (!ok) fprintf(stderr, "config_run: %s: not %" PRId64 " channels' values\n", path, k);
  return ok ? 0 : -1;
}

static int quant_file(const char *path, int64_t k, quant_store *qs) {
  const ct_quant *q = &qs->q;
  FILE *f = fopen(path, "r");
  if (f) return quant_read(path, f, k, qs);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
  if (!(f = fopen(tmp, "w"))) {
    fprintf(stderr, "config_run: %s: cannot write\n", tmp);
    return -1;
  }
  fprintf(f, "ct_quant 1 dzp %d ozp %d lo %d hi %d rs %a rzp %d k %" PRId64 "\n",
          q->data_zero_point, q->out_zero_point, q->clamp_min, q->clamp_max, q->residual_scale,
          q->residual_zero_point, k);
  for (int64_t i = 0; i < k; i++) fprintf(f, "%d %d %a\n", qs->zw[i], qs->bias[i], qs->scale[i]);
  int st = fclose(f) == 0 && link(tmp, path) == 0 ? 0 : errno == EEXIST ? 1 : -1;
  unlink(tmp);
  if (st < 0) fprintf(stderr, "config_run: %s: cannot write\n", path);
  if (st == 1 && (f = fopen(path, "r"))) return quant_read(path, f, k, qs); /* another run's */
  return st == 0 ? 0 : -1;
}

/* n random bytes on the device, or NULL (*st set) on failure */
static void *device_random(size_t n, rng *r, cudaError_t *st) {
  unsigned char *h = malloc(n ? n : 1);
  void *d = NULL;
  if (!h) {
    *st = cudaErrorMemoryAllocation;
    return NULL;
  }
  for (size_t i = 0; i < n; i++) h[i] = (unsigned char)rng_next(r);
  *st = cudaMalloc(&d, n ? n : 1);
  if (*st == cudaSuccess) *st = cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
  free(h);
  return d;
}

/* The best of 5 replays of ge on st, per launch of its `launches` steps, in
 * us (*us); 0, or 1 with a message (fail's). */
static int best_replay(cudaGraphExec_t ge, cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1,
                       int launches, double *us) {
  float best = 0;
  for (int rep = 0; rep < 5; rep++) {
    float ms = 0;
    cudaEventRecord(e0, st);
    cudaGraphLaunch(ge, st);
    cudaEventRecord(e1, st);
    const cudaError_t ce = cudaEventSynchronize(e1);
    if (ce != cudaSuccess) return fail("replay", cudaGetErrorString(ce));
    cudaEventElapsedTime(&ms, e0, e1);
    if (rep == 0 || ms < best) best = ms;
  }
  *us = 1000.0 * best / launches;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: config_run TEMPLATE KEY CONFIG_JSON [LAUNCHES]\n");
    return 2;
  }
  const int launches = argc == 5 ? atoi(argv[4]) : 1;
  if (launches < 1 || launches > 100000) {
    fprintf(stderr, "config_run: LAUNCHES must be 1 to 100000, not '%s'\n", argv[4]);
    return 2;
  }
  size_t pad = 0;
  const char *pads = getenv("CT_ALLOC_PAD");
  if (pads && pads[0]) {
    char *end;
    errno = 0;
    const unsigned long long v = strtoull(pads, &end, 10);
    if (errno || *end || pads[0] == '-' || v > (1ull << 30)) {
      fprintf(stderr, "config_run: CT_ALLOC_PAD must be 0 to 1073741824 bytes, not '%s'\n", pads);
      return 2;
    }
    pad = (size_t)v;
  }
  ct_err err = {0};
  const template_desc *tpl = template_find(argv[1]);
  if (!tpl) {
    fprintf(stderr, "config_run: no template '%s'\n", argv[1]);
    return 2;
  }
  ct_workload w;
  if (workload_from_key(argv[2], &w, &err) != CT_OK) {
    fprintf(stderr, "config_run: key: %s\n", err.msg);
    return 2;
  }
  space sp;
  space_init(&sp);
  if (template_space(tpl, &w, &sp, &err) != CT_OK) {
    fprintf(stderr, "config_run: %s\n", err.msg);
    return 2;
  }
  cJSON *j = cJSON_Parse(argv[3]);
  config c;
  if (!j || space_config_from_json(&sp, j, &c, &err) != CT_OK) {
    fprintf(stderr, "config_run: config: %s\n", j ? err.msg : "not JSON");
    return 2;
  }
  cJSON_Delete(j);
  /* the requantization's values, before the device (CT_QUANT_FILE) */
  quant_store qs;
  memset(&qs, 0, sizeof qs);
  if (workload_has_params(&w)) {
    if (quant_random(&w, 5, &qs, &err) != CT_OK) return fail("quant_random", err.msg);
    const char *qf = getenv("CT_QUANT_FILE");
    if (qf && qf[0] && quant_file(qf, w.k, &qs) != 0) return 1;
  }
  /* the architecture: CT_CUBIN_OUT's (no device opened), else device 0's */
  const char *cubin_out = getenv("CT_CUBIN_OUT");
  arch a;
  if (cubin_out && cubin_out[0]) {
    const char *an = getenv("CT_ARCH");
    if (arch_from_name(an && an[0] ? an : "sm_90", &a, &err) != CT_OK)
      return fail("CT_ARCH", err.msg);
    a.sm_count = 132;
  } else {
    device dev;
    if (device_open(0, &dev, &err) != CT_OK) return fail("device", err.msg);
    a = dev.arch;
  }
  instance inst;
  if (instance_make(tpl, &w, &sp, &c, &a, &inst, &err) != CT_OK) return fail("config", err.msg);
  cubin cb;
  if (nvrtc_compile(&inst, &a, &cb, &err) != CT_OK)
    return fail("compile", cb.log && cb.log[0] ? cb.log : err.msg);
  if (cubin_out && cubin_out[0]) {
    FILE *f = fopen(cubin_out, "wb");
    const int bad = !f || fwrite(cb.data, 1, cb.size, f) != cb.size;
    if ((f && fclose(f) != 0) || bad) return fail("CT_CUBIN_OUT", strerror(errno));
    cubin_free(&cb);
    quant_store_free(&qs);
    space_free(&sp);
    return 0;
  }
  kernel k;
  if (kernel_load(cb.data, cb.size, &inst, &k, &err) != CT_OK) return fail("load", err.msg);

  rng r;
  rng_seed(&r, 1);
  const size_t nd = workload_data_elems(&w), nw = workload_weight_elems(&w);
  const size_t no = workload_out_elems(&w), ob = no * workload_out_elem_bytes(&w);
  cudaError_t ce = cudaSuccess;
  void *dpad = NULL; /* CT_ALLOC_PAD's, held to the end */
  if (pad && (ce = cudaMalloc(&dpad, pad)) != cudaSuccess)
    return fail("CT_ALLOC_PAD", cudaGetErrorString(ce));
  void *dd = device_random(nd, &r, &ce), *dw = NULL, *dout = NULL, *dp = NULL, *dr = NULL;
  if (ce == cudaSuccess) dw = device_random(nw, &r, &ce);
  if (ce == cudaSuccess) ce = cudaMalloc(&dout, ob);
  if (ce == cudaSuccess && w.epi.residual) dr = device_random(no, &r, &ce);
  if (ce == cudaSuccess && workload_has_params(&w)) {
    /* params from the values above and the weights as they are on the device */
    int8_t *hw = malloc(nw ? nw : 1);
    int32_t *sums = malloc(sizeof(int32_t) * (size_t)w.k);
    int32_t *params = malloc(quant_params_words(&w) * 4);
    if (!hw || !sums || !params) return fail("host", "out of memory");
    ce = cudaMemcpy(hw, dw, nw, cudaMemcpyDeviceToHost);
    quant_weight_sums(&w, hw, sums);
    if (quant_params(&w, &qs.q, sums, params, &err) != CT_OK ||
        quant_zpad_fill(&w, &qs.q, hw, params, &err) != CT_OK)
      return fail("quant_params", err.msg);
    if (ce == cudaSuccess) ce = cudaMalloc(&dp, quant_params_words(&w) * 4);
    if (ce == cudaSuccess)
      ce = cudaMemcpy(dp, params, quant_params_words(&w) * 4, cudaMemcpyHostToDevice);
    quant_store_free(&qs);
    free(hw), free(sums), free(params);
  }
  if (ce != cudaSuccess) return fail("buffers", cudaGetErrorString(ce));
  const kernel_io io = {dd, dw, dout, dp, dr};
  cudaStream_t st;
  if ((ce = cudaStreamCreate(&st)) != cudaSuccess) return fail("stream", cudaGetErrorString(ce));
  if (kernel_launch(&k, &inst, &io, st, &err) != CT_OK) return fail("launch", err.msg);
  if ((ce = cudaStreamSynchronize(st)) != cudaSuccess)
    return fail("kernel", cudaGetErrorString(ce));
  if (launches == 1) {
    printf("%s: one launch, grid %ux%ux%u, block %u, %zu bytes of shared memory\n", tpl->name,
           inst.grid[0], inst.grid[1], inst.grid[2], inst.block[0], inst.smem_bytes);
    return 0;
  }
  cudaGraph_t g;
  cudaGraphExec_t ge;
  if ((ce = cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal)) != cudaSuccess)
    return fail("capture", cudaGetErrorString(ce));
  for (int i = 0; i < launches; i++)
    if (kernel_launch(&k, &inst, &io, st, &err) != CT_OK) return fail("launch", err.msg);
  if ((ce = cudaStreamEndCapture(st, &g)) != cudaSuccess ||
      (ce = cudaGraphInstantiate(&ge, g, 0)) != cudaSuccess ||
      (ce = cudaGraphLaunch(ge, st)) != cudaSuccess || (ce = cudaStreamSynchronize(st)))
    return fail("graph", cudaGetErrorString(ce));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  double us = 0;
  if (best_replay(ge, st, e0, e1, launches, &us)) return 1;
  const char *fresh = getenv("CT_FRESH");
  if (fresh && !strcmp(fresh, "1")) {
    /* graphs: 0 copy into the data then launch, 1 copy elsewhere then
     * launch, 2 the copies alone */
    void *shadow = NULL, *other = NULL;
    if ((ce = cudaMalloc(&shadow, nd ? nd : 1)) != cudaSuccess ||
        (ce = cudaMalloc(&other, nd ? nd : 1)) != cudaSuccess ||
        (ce = cudaMemcpy(shadow, dd, nd, cudaMemcpyDeviceToDevice)) != cudaSuccess)
      return fail("CT_FRESH buffers", cudaGetErrorString(ce));
    double per[3];
    for (int v = 0; v < 3; v++) {
      cudaGraph_t fg;
      cudaGraphExec_t fge;
      if ((ce = cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal)) != cudaSuccess)
        return fail("capture", cudaGetErrorString(ce));
      for (int i = 0; i < launches; i++) {
        if ((ce = cudaMemcpyAsync(v == 0 ? dd : other, shadow, nd, cudaMemcpyDeviceToDevice,
                                  st)) != cudaSuccess)
          return fail("CT_FRESH copy", cudaGetErrorString(ce));
        if (v < 2 && kernel_launch(&k, &inst, &io, st, &err) != CT_OK) return fail("launch", err.msg);
      }
      if ((ce = cudaStreamEndCapture(st, &fg)) != cudaSuccess ||
          (ce = cudaGraphInstantiate(&fge, fg, 0)) != cudaSuccess ||
          (ce = cudaGraphLaunch(fge, st)) != cudaSuccess || (ce = cudaStreamSynchronize(st)))
        return fail("CT_FRESH graph", cudaGetErrorString(ce));
      if (best_replay(fge, st, e0, e1, launches, &per[v])) return 1;
      cudaGraphExecDestroy(fge);
      cudaGraphDestroy(fg);
    }
    cudaFree(shadow);
    cudaFree(other);
    printf("%s fresh: alone %.2f us, after a copy into its input %.2f, after a copy elsewhere "
           "%.2f (the copy %.2f): %s\n",
           tpl->name, us, per[0] - per[2], per[1] - per[2], per[2], argv[3]);
    return 0;
  }
  printf("%s %.2f us per launch, %.2f TB/s (data + output), grid %ux%u, block %u, smem %zu: %s\n",
         tpl->name, us, (double)(nd + ob) / (us * 1e-6) / 1e12, inst.grid[0], inst.grid[1],
         inst.block[0], inst.smem_bytes, argv[3]);
  return 0;
}
