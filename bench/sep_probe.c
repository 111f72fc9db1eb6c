/*
 * sep_probe.c: what fusing a depthwise conv with the pointwise conv that
 * reads it would give (bench/sep_probe.cu, a probe kernel), on
 * MobileNetV2's blocks at batch 32, against the two convs as libconvtune
 * serves them from a tuned database. Not a template: no workload, tuner or
 * dispatch knows the fused form yet.
 *
 *   sep_probe DB [SOURCE_DIR]
 *   sep_probe --compile [SOURCE_DIR]   (no GPU: the probe compiles for sm_90)
 *   sep_probe DB SOURCE_DIR --pairs    (no probe: each pair's two convs through
 *                                       libconvtune alone and back to back)
 *
 * Per block: the depthwise workload and the pointwise one (the keys of the
 * QDQ model's nodes: int8, bias, per-channel scales, ONNX Runtime's
 * rounding, a residual where the block has one), random data, weights and
 * quantization (quant_random); the CPU reference of the pair (the
 * depthwise output requantized, then the pointwise conv); the probe kernel
 * compiled by NVRTC for a few tile shapes, each checked byte for byte
 * against the reference, the fastest kept; then three timings, each the
 * best of 5 replays of a CUDA graph of 200 launches (or pairs):
 *   - fused: the probe kernel;
 *   - pair: ct_qconv2d of the depthwise conv, then of the pointwise one
 *     (the tuned configs), its output checked too;
 *   - with L2 dirty: each launch (pair) after a 64 MB memset, less the
 *     memsets alone, as in a chain where the L2 is full of earlier outputs.
 * Prints one line a block and the sums. With --pairs: no probe; the
 * depthwise conv alone, the pointwise conv alone (each 100 launches in a
 * graph) and the pair back to back, whose excess over the two alone is
 * what one kernel following another costs (a chain's nodes run longer
 * than alone: docs/experiments.md).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "convtune/convtune.h"
#include "core/quant.h"
#include "core/rng.h"
#include "core/workload.h"
#include "gpu/device.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"
#include "bench/probe_util.h"

typedef struct blk {
  const char *name;
  int c, h, s, k, res;
} blk;

static const blk blocks[] = {
    {"block0", 32, 112, 1, 16, 0},   {"block1", 96, 112, 2, 24, 0},  {"block2", 144, 56, 1, 24, 1},
    {"block3", 144, 56, 2, 32, 0},   {"block4", 192, 28, 1, 32, 1},  {"block6", 192, 28, 2, 64, 0},
    {"block7", 384, 14, 1, 64, 1},   {"block10", 384, 14, 1, 96, 0}, {"block11", 576, 14, 1, 96, 1},
    {"block13", 576, 14, 2, 160, 0}, {"block14", 960, 7, 1, 160, 1},
};
#define N_BATCH 32

typedef struct probe_k {
  cudaLibrary_t lib;
  cudaKernel_t fn;
  unsigned threads, grid;
  size_t smem;
} probe_k;

/* the probe compiled for w's pointwise conv with tile (m_tiles, n_per_warp,
 * warps_m, m_unroll); 0 when the shape does not fit */
static int no_gpu;     /* --compile: stop after the compile */
static int min_blocks; /* __launch_bounds__'s minimum blocks an SM (PROBE_MIN_BLOCKS) */
static int build(const ct_workload *wp, const blk *b, const char *src, const device *dev, int mt,
                 int npw, int wm, int mu, probe_k *out) {
  const template_desc *tpl = template_find("conv2d_nhwc_pw_mma");
  ct_err err = {0};
  space sp;
  if (template_space(tpl, wp, &sp, &err) != CT_OK) probe_fail("space", err.msg);
  /* any valid config: the instance is for its shape macros; the knobs are set below */
  char js[256];
  snprintf(js, sizeof js,
           "{\"m_tiles\":2,\"n_tiles\":1,\"n_per_warp\":1,\"warps_m\":1,\"m_unroll\":1,"
           "\"stages\":2,\"blocks_per_sm\":1}");
  cJSON *j = cJSON_Parse(js);
  config c;
  if (space_config_from_json(&sp, j, &c, &err) != CT_OK) probe_fail("config", err.msg);
  cJSON_Delete(j);
  instance inst;
  if (instance_make(tpl, wp, &sp, &c, &dev->arch, &inst, &err) != CT_OK)
    probe_fail("instance", err.msg);
  space_free(&sp);
  const int nt = b->k / 8;
  if (nt % npw || mt < wm * mu) return 0;
  const int wn = nt / npw, threads = 32 * wn * wm;
  if (threads > 1024 || threads < 64) return 0;
  const long cpad = (b->c + 31) / 32 * 32, rs = cpad + 16, bm = 16 * mt, bn = 8 * nt;
  const long ops = bn % 32 <= 16 ? bn - bn % 32 + 16 : bn - bn % 32 + 48;
  const long smem = bn * rs + bm * rs + (b->res ? bm * ops : 0) + bm * ops + 9L * b->c + 8L * b->c;
  if (smem > 227 * 1024) return 0;
  const char *opts[INSTANCE_MAX_OPTIONS + 8];
  int n = 0;
  static char extra[12][64];
  for (int i = 0; i < inst.n_options; i++) {
    const char *o = inst.options[i];
    if (!strncmp(o, "-DM_TILES=", 10) || !strncmp(o, "-DN_TILES=", 10) ||
        !strncmp(o, "-DN_PER_WARP=", 13) || !strncmp(o, "-DWARPS_M=", 10) ||
        !strncmp(o, "-DM_UNROLL=", 11))
      continue;
    opts[n++] = o;
  }
  snprintf(extra[0], 64, "-DM_TILES=%d", mt);
  snprintf(extra[1], 64, "-DN_TILES=%d", nt);
  snprintf(extra[2], 64, "-DN_PER_WARP=%d", npw);
  snprintf(extra[3], 64, "-DWARPS_M=%d", wm);
  snprintf(extra[4], 64, "-DM_UNROLL=%d", mu);
  snprintf(extra[5], 64, "-DDW_IH=%d", b->h);
  snprintf(extra[6], 64, "-DDW_IW=%d", b->h);
  snprintf(extra[7], 64, "-DDW_R=3");
  snprintf(extra[8], 64, "-DDW_S=%d", b->s);
  snprintf(extra[9], 64, "-DDW_P=1");
  snprintf(extra[10], 64, "-DPROBE_MIN_BLOCKS=%d", min_blocks > 0 ? min_blocks : 1);
  for (int i = 0; i < 11; i++) opts[n++] = extra[i];
  cubin cb;
  if (nvrtc_compile_source("sep_probe.cu", src, opts, n, &dev->arch, &cb, &err) != CT_OK) {
    fprintf(stderr, "sep_probe: %s mt %d npw %d wm %d mu %d: %s\n%s\n", b->name, mt, npw, wm, mu,
            err.msg, cb.log ? cb.log : "");
    cubin_free(&cb);
    return 0;
  }
  if (no_gpu) {
    cubin_free(&cb);
    return 1;
  }
  CK(cudaLibraryLoadData(&out->lib, cb.data, NULL, NULL, 0, NULL, NULL, 0));
  cubin_free(&cb);
  CK(cudaLibraryGetKernel(&out->fn, out->lib, "sep_probe"));
  CK(cudaFuncSetAttribute((const void *)out->fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)out->fn, threads,
                                                   (size_t)smem));
  if (per_sm < 1) return 0;
  const long tiles = ((long)wp->n * wp->in[0] * wp->in[1] + bm - 1) / bm;
  const long cap = (long)per_sm * dev->arch.sm_count;
  out->grid = (unsigned)(tiles < cap ? tiles : cap);
  out->threads = (unsigned)threads;
  out->smem = (size_t)smem;
  return 1;
}

static int compile_only(const ct_workload *wp, const blk *b, const char *src, const device *dev) {
  probe_k k;
  no_gpu = 1;
  return build(wp, b, src, dev, 2, 1, 1, 1, &k);
}

typedef struct io {
  void *x, *wd, *wp, *y, *pd, *pp, *r, *t;
} io;

static void launch(const probe_k *k, const io *b, cudaStream_t st) {
  void *args[] = {(void *)&b->x,  (void *)&b->wd, (void *)&b->wp, (void *)&b->y,
                  (void *)&b->pd, (void *)&b->pp, (void *)&b->r};
  dim3 grid = {k->grid, 1, 1}, block = {k->threads, 1, 1};
  CK(cudaLaunchKernel((const void *)k->fn, grid, block, args, k->smem, st));
}

/* Block b's two workloads, as the QDQ model's nodes: the depthwise conv
 * wd and the pointwise conv wp that reads its output. */
static void pair_of(const blk *b, ct_workload *wd, ct_workload *wp) {
  ct_err err = {0};
  probe_mnv2_dw(wd, N_BATCH, b->c, b->h, b->s);
  probe_mnv2_pw(wp, wd, b->k, b->res);
  if (workload_validate(wd, &err) || workload_validate(wp, &err)) probe_fail("workload", err.msg);
}

int main(int argc, char **argv) {
  probe_name = "sep_probe";
  if (argc < 2) {
    fprintf(stderr, "usage: sep_probe DB [SOURCE_DIR]\n");
    return 2;
  }
  const int pairs = argc > 3 && !strcmp(argv[3], "--pairs");
  char *src = probe_source(argc, argv, "sep_probe.cu");
  ct_err err = {0};
  device dev;
  if (!strcmp(argv[1], "--compile")) {
    /* no GPU: compile every block's first tile shape for sm_90 (NVRTC needs no device) */
    probe_sm90(&dev);
    int ok = 1;
    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
      const blk *b = &blocks[bi];
      ct_workload wd, wp;
      pair_of(b, &wd, &wp);
      const int r = compile_only(&wp, b, src, &dev);
      printf("%s: %s\n", b->name, r ? "compiled" : "FAILED");
      ok &= r;
    }
    return ok ? 0 : 1;
  }
  ct_context *ctx = NULL;
  cudaStream_t st;
  probe_open(argv[1], &dev, &ctx, &st);
  void *scratch = NULL;
  const size_t scratch_bytes = 64u << 20;
  CK(cudaMalloc(&scratch, scratch_bytes));
  if (pairs)
    printf("%-8s %5s %4s %2s %4s %3s | %9s %9s %9s %9s %9s\n", "block", "C", "H", "s", "K", "res",
           "dw alone", "pw alone", "sum", "pair", "excess");
  else
    printf("%-8s %5s %4s %2s %4s %3s | %9s %9s %9s %9s | %s\n", "block", "C", "H", "s", "K", "res",
           "fused", "pair", "fused+L2", "pair+L2", "tile (m_tiles n_per_warp warps_m m_unroll)");
  double sum[4] = {0};
  int all_exact = 1;
  for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
    const blk *b = &blocks[bi];
    ct_workload wd, wp;
    pair_of(b, &wd, &wp);
    quant_store qd, qp;
    if (quant_random(&wd, 11 + bi, &qd, &err) || quant_random(&wp, 101 + bi, &qp, &err))
      probe_fail("quant_random", err.msg);
    rng r;
    rng_seed(&r, 7 + bi);
    const size_t nx = (size_t)workload_data_elems(&wd), nwd = (size_t)workload_weight_elems(&wd);
    const size_t nwp = (size_t)workload_weight_elems(&wp), ny = (size_t)workload_out_elems(&wp);
    const size_t nt = (size_t)workload_out_elems(&wd);
    int8_t *x = malloc(nx), *w1 = malloc(nwd), *w2 = malloc(nwp), *res = malloc(ny);
    int8_t *t = malloc(nt), *yref = malloc(ny), *y = malloc(ny), *y2 = malloc(ny);
    if (!x || !w1 || !w2 || !res || !t || !yref || !y || !y2) probe_fail("host", "out of memory");
    probe_random_bytes(&r, x, nx), probe_random_bytes(&r, w1, nwd), probe_random_bytes(&r, w2, nwp);
    probe_random_bytes(&r, res, ny);
    char eb[256];
    if (ct_reference_qconv(&wd, &qd.q, x, w1, NULL, t, eb, sizeof eb) ||
        ct_reference_qconv(&wp, &qp.q, t, w2, b->res ? res : NULL, yref, eb, sizeof eb))
      probe_fail("reference", eb);
    int32_t *p1 = probe_make_params(&wd, &qd.q, w1), *p2 = probe_make_params(&wp, &qp.q, w2);
    io d;
    d.x = probe_dev_copy(x, nx), d.wd = probe_dev_copy(w1, nwd), d.wp = probe_dev_copy(w2, nwp);
    d.pd = probe_dev_copy(p1, quant_params_words(&wd) * 4),
    d.pp = probe_dev_copy(p2, quant_params_words(&wp) * 4);
    d.r = b->res ? probe_dev_copy(res, ny) : NULL;
    CK(cudaMalloc(&d.y, ny));
    CK(cudaMalloc(&d.t, nt));

    /* the probe: a few tile shapes, each checked, the fastest kept */
    static const int shapes[][4] = {{2, 1, 1, 1}, {2, 1, 2, 1}, {4, 1, 2, 1}, {4, 1, 4, 1},
                                    {4, 2, 2, 1}, {8, 1, 4, 1}, {8, 2, 4, 1}, {8, 1, 8, 1},
                                    {4, 4, 2, 2}, {2, 2, 2, 1}, {2, 4, 1, 2}, {8, 4, 4, 2}};
    probe_k best = {0};
    double best_us = 0;
    int bs = -1;
    int best_mb = 1;
    for (size_t si = 0; !pairs && si < 3 * (sizeof shapes / sizeof shapes[0]); si++) {
      probe_k k;
      const int sh = (int)(si / 3);
      min_blocks = 1 << (si % 3); /* 1, 2, 4 */
      if (!build(&wp, b, src, &dev, shapes[sh][0], shapes[sh][1], shapes[sh][2], shapes[sh][3], &k))
        continue;
      CK(cudaMemset(d.y, 0x5a, ny));
      launch(&k, &d, st);
      CK(cudaStreamSynchronize(st));
      CK(cudaMemcpy(y, d.y, ny, cudaMemcpyDeviceToHost));
      size_t bad = 0;
      for (size_t i = 0; i < ny; i++) bad += y[i] != yref[i];
      if (bad) {
        printf("%s: tile %d %d %d %d: %zu of %zu bytes differ from the reference\n", b->name,
               shapes[sh][0], shapes[sh][1], shapes[sh][2], shapes[sh][3], bad, ny);
        all_exact = 0;
        CK(cudaLibraryUnload(k.lib));
        continue;
      }
      /* 200 launches in a graph, the best of 5 replays */
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < 200; i++) launch(&k, &d, st);
      CK(cudaStreamEndCapture(st, &g));
      const double us = probe_replay_best_us(st, g, 200);
      if (bs < 0 || us < best_us) {
        if (bs >= 0) CK(cudaLibraryUnload(best.lib));
        best = k, best_us = us, bs = sh, best_mb = min_blocks;
      } else {
        CK(cudaLibraryUnload(k.lib));
      }
    }
    if (bs < 0 && !pairs) {
      printf("%s: no tile shape ran\n", b->name);
      continue;
    }

    /* the two convs through libconvtune, checked, then the four timings */
    ct_status s1 = ct_qconv2d(ctx, &wd, d.x, d.wd, d.pd, NULL, d.t, st);
    ct_status s2 = s1 ? s1 : ct_qconv2d(ctx, &wp, d.t, d.wp, d.pp, d.r, d.y, st);
    if (s2) probe_fail("ct_qconv2d", ct_errmsg(ctx));
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(y2, d.y, ny, cudaMemcpyDeviceToHost));
    size_t bad2 = 0;
    for (size_t i = 0; i < ny; i++) bad2 += y2[i] != yref[i];
    if (bad2) {
      printf("%s: the pair through libconvtune: %zu bytes differ\n", b->name, bad2);
      all_exact = 0;
    }
    double us4[7];
    for (int mode = 0; mode < 7; mode++) {
      /* 0 fused, 1 pair, 2 memset + fused, 3 memset + pair, 4 memset alone;
       * --pairs: 1, 5 the depthwise conv alone, 6 the pointwise conv alone */
      if (pairs != (mode == 1 || mode >= 5)) continue;
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < 100; i++) {
        if (mode >= 2 && mode <= 4) CK(cudaMemsetAsync(scratch, i & 0xff, scratch_bytes, st));
        if (mode == 0 || mode == 2) launch(&best, &d, st);
        if ((mode == 1 || mode == 3 || mode == 5) &&
            ct_qconv2d(ctx, &wd, d.x, d.wd, d.pd, NULL, d.t, st))
          probe_fail("ct_qconv2d", ct_errmsg(ctx));
        if ((mode == 1 || mode == 3 || mode == 6) &&
            ct_qconv2d(ctx, &wp, d.t, d.wp, d.pp, d.r, d.y, st))
          probe_fail("ct_qconv2d", ct_errmsg(ctx));
      }
      CK(cudaStreamEndCapture(st, &g));
      us4[mode] = probe_replay_best_us(st, g, 100);
    }
    if (pairs) {
      const double a = us4[5], b2 = us4[6], p = us4[1];
      sum[0] += a, sum[1] += b2, sum[2] += p;
      printf("%-8s %5d %4d %2d %4d %3d | %9.2f %9.2f %9.2f %9.2f %9.2f\n", b->name, b->c, b->h,
             b->s, b->k, b->res, a, b2, a + b2, p, p - a - b2);
    }
    if (!pairs) {
      const double f = us4[0], p = us4[1], fl = us4[2] - us4[4], pl = us4[3] - us4[4];
      sum[0] += f, sum[1] += p, sum[2] += fl, sum[3] += pl;
      printf("%-8s %5d %4d %2d %4d %3d | %9.2f %9.2f %9.2f %9.2f | %d %d %d %d, min blocks %d\n",
             b->name, b->c, b->h, b->s, b->k, b->res, f, p, fl, pl, shapes[bs][0], shapes[bs][1],
             shapes[bs][2], shapes[bs][3], best_mb);
      CK(cudaLibraryUnload(best.lib));
    }
    fflush(stdout);
    void *ptrs[] = {d.x, d.wd, d.wp, d.y, d.pd, d.pp, d.r, d.t};
    for (int i = 0; i < 8; i++)
      if (ptrs[i]) CK(cudaFree(ptrs[i]));
    free(x), free(w1), free(w2), free(res), free(t), free(yref), free(y), free(y2), free(p1),
        free(p2);
    quant_store_free(&qd), quant_store_free(&qp);
  }
  if (pairs)
    printf("sums: depthwise alone %.2f us, pointwise alone %.2f, pairs %.2f (excess %.2f); %s\n",
           sum[0], sum[1], sum[2], sum[2] - sum[0] - sum[1],
           all_exact ? "every output exact" : "NOT every output exact");
  else
    printf("sums: fused %.2f us, pair %.2f; with the L2 dirty: fused %.2f, pair %.2f; %s\n", sum[0],
           sum[1], sum[2], sum[3], all_exact ? "every output exact" : "NOT every output exact");
  ct_close(ctx);
  return all_exact ? 0 : 1;
}
