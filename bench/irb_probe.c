/*
 * irb_probe.c: what a whole inverted residual block in one kernel
 * (bench/irb_probe.cu: expansion, depthwise conv, projection and residual)
 * would give on MobileNetV2's 14x14 and 7x7 blocks at batch 32, against
 * the three convs as libconvtune serves them from a tuned database. Not a
 * template: no workload, tuner or dispatch knows the whole block yet.
 *
 *   irb_probe DB [SOURCE_DIR]
 *   irb_probe --compile [SOURCE_DIR]   (no GPU: one shape a block compiles for sm_90)
 *
 * Per block: the expansion fused into the depthwise conv as the pwdw
 * template's workload (pre_c) and the projection (int8, bias, per-channel
 * scales, ONNX Runtime's rounding, the block's input as its residual where
 * the block has one), random data and weights, quant_random's values; the
 * CPU reference of the block (the fused workload's, then the projection's);
 * the probe compiled by NVRTC for a list of shapes (in parallel), each
 * checked byte for byte against the reference, the fastest kept; then the
 * timings, each the best of 5 replays of a CUDA graph of 100 launches (or
 * triples): the probe, and ct_qconv2d of the three convs (their tuned
 * configs), whose outputs are checked too. Prints a line a block, and the
 * sums over MobileNetV2's ten blocks at 14x14 and 7x7 (a block counted as
 * often as the network has it).
 */
#include <cuda_runtime.h>
#include <pthread.h>
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
  int cin, e, h, s, k, res, count; /* count: blocks of the network like it */
} blk;

static const blk blocks[] = {
    {"block7", 64, 384, 14, 1, 64, 1, 3},   {"block10", 64, 384, 14, 1, 96, 0, 1},
    {"block11", 96, 576, 14, 1, 96, 1, 2},  {"block13", 96, 576, 14, 2, 160, 0, 1},
    {"block14", 160, 960, 7, 1, 160, 1, 2}, {"block16", 160, 960, 7, 1, 320, 0, 1},
};
#define N_BATCH 32

/* Block b's workloads: wf, the depthwise conv with its expansion fused
 * (pre_c, the pwdw template's), and wp, the projection. */
static void block_of(const blk *b, ct_workload *wf, ct_workload *wp) {
  ct_err err = {0};
  probe_mnv2_dw(wf, N_BATCH, b->e, b->h, b->s);
  probe_mnv2_pw(wp, wf, b->k, b->res);
  wf->pre_c = b->cin;
  wf->pre_data_type = CT_DTYPE_INT8;
  wf->pre_epi = wf->epi;
  if (workload_validate(wf, &err) || workload_validate(wp, &err)) probe_fail("workload", err.msg);
}

/* one shape of the probe: the pwdw knobs, then KB */
typedef struct shape {
  int th, tw, cb8, warps, pixt, kb, db; /* db: IRB_DB */
} shape;

typedef struct job {
  shape sh;
  instance inst;
  cubin cb;
  int ok; /* compiled */
} job;

typedef struct pool {
  job *jobs;
  int n, next;
  const char *src;
  const arch *a;
  const blk *b;
  pthread_mutex_t mu;
} pool;

static void *compile_worker(void *arg) {
  pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    const int i = p->next++;
    pthread_mutex_unlock(&p->mu);
    if (i >= p->n) return NULL;
    job *j = &p->jobs[i];
    const char *opts[INSTANCE_MAX_OPTIONS + 4];
    char extra[4][64];
    int n = 0;
    for (int o = 0; o < j->inst.n_options; o++) opts[n++] = j->inst.options[o];
    snprintf(extra[0], 64, "-DPOST_K=%d", p->b->k);
    snprintf(extra[1], 64, "-DKB=%d", j->sh.kb);
    snprintf(extra[2], 64, "-DPOST_RES=%d", p->b->res);
    snprintf(extra[3], 64, "-DIRB_DB=%d", j->sh.db);
    for (int e = 0; e < 4; e++) opts[n++] = extra[e];
    ct_err err = {0};
    j->ok = nvrtc_compile_source("irb_probe.cu", p->src, opts, n, p->a, &j->cb, &err) == CT_OK;
    if (!j->ok)
      fprintf(stderr, "irb_probe: %s shape %d x %d cb8 %d warps %d kb %d: %s\n%s\n", p->b->name,
              j->sh.th, j->sh.tw, j->sh.cb8, j->sh.warps, j->sh.kb, err.msg,
              j->cb.log ? j->cb.log : "");
  }
}

/* The shapes tried for block b whose pwdw instance is valid, compiled in
 * parallel (threads); *n_out of them. first_only (--compile): the first
 * valid shape only, in both forms (IRB_DB 0 and 1). */
static job *compile_shapes(const ct_workload *wf, const blk *b, const char *src, const arch *a,
                           int threads, int first_only, int *n_out) {
  static const int ths[] = {2, 4, 7, 8, 14};
  static const int tws[] = {4, 8, 16};
  static const int cb8s[] = {4, 8};
  static const int warpss[] = {4, 8};
  const template_desc *tpl = template_find("conv2d_nhwc_pwdw");
  ct_err err = {0};
  space sp;
  if (template_space(tpl, wf, &sp, &err) != CT_OK) probe_fail("space", err.msg);
  const size_t most = sizeof ths / sizeof *ths * (sizeof tws / sizeof *tws) *
                      (sizeof cb8s / sizeof *cb8s) * (sizeof warpss / sizeof *warpss) * 4;
  job *jobs = calloc(most, sizeof *jobs);
  if (!jobs) probe_fail("host", "out of memory");
  int n = 0;
  const int oh = (int)workload_out_size(wf, 0), pixt = b->s == 1 ? 4 : 2;
  for (size_t i = 0; i < sizeof ths / sizeof *ths; i++)
    for (size_t k = 0; k < sizeof tws / sizeof *tws; k++)
      for (size_t c = 0; c < sizeof cb8s / sizeof *cb8s; c++)
        for (size_t w = 0; w < sizeof warpss / sizeof *warpss; w++)
          for (int half = 0; half < 2; half++)
            for (int db = 0; db < 2; db++) {
              const int th = ths[i], tw = tws[k];
              if (th > oh || tw > oh + 3 || (first_only && n == 2)) continue;
              if (b->e % (8 * cb8s[c])) continue;
              const int kb = half ? b->k / 2 : b->k;
              if (kb % 8 || (half && kb < 32)) continue;
              char js[256];
              snprintf(js, sizeof js,
                       "{\"tile_h\":%d,\"tile_w\":%d,\"cb8\":%d,\"warps\":%d,\"pixt\":%d,"
                       "\"blocks_per_sm\":1}",
                       th, tw, cb8s[c], warpss[w], pixt);
              cJSON *jj = cJSON_Parse(js);
              config cfg;
              const ct_status st = space_config_from_json(&sp, jj, &cfg, &err);
              cJSON_Delete(jj);
              if (st != CT_OK) continue;
              job *j = &jobs[n];
              if (instance_make(tpl, wf, &sp, &cfg, a, &j->inst, &err) != CT_OK) continue;
              j->sh = (shape){th, tw, cb8s[c], warpss[w], pixt, kb, db};
              n++;
            }
  space_free(&sp);
  pool p = {jobs, n, 0, src, a, b, PTHREAD_MUTEX_INITIALIZER};
  pthread_t t[64];
  if (threads > 64) threads = 64;
  if (threads < 1) threads = 1;
  int started = 0;
  for (int i = 0; i < threads; i++)
    started += !pthread_create(&t[started], NULL, compile_worker, &p);
  if (!started) compile_worker(&p); /* no thread: this one compiles them all */
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  *n_out = n;
  return jobs;
}

typedef struct probe_k {
  cudaLibrary_t lib;
  cudaKernel_t fn;
  dim3 grid, block;
  size_t smem;
} probe_k;

/* j's cubin loaded; 0 when it cannot run (shared memory, occupancy) */
static int load(const job *j, const blk *b, probe_k *k) {
  CK(cudaLibraryLoadData(&k->lib, j->cb.data, NULL, NULL, 0, NULL, NULL, 0));
  CK(cudaLibraryGetKernel(&k->fn, k->lib, "irb_probe"));
  void *sym = NULL;
  size_t bytes = 0;
  CK(cudaLibraryGetGlobal(&sym, &bytes, k->lib, "irb_smem_bytes"));
  int smem = 0;
  CK(cudaMemcpy(&smem, sym, sizeof smem, cudaMemcpyDeviceToHost));
  if (smem > 227 * 1024 ||
      cudaFuncSetAttribute((const void *)k->fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           smem) != cudaSuccess) {
    (void)cudaGetLastError();
    CK(cudaLibraryUnload(k->lib));
    return 0;
  }
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)k->fn,
                                                   (int)j->inst.block[0], (size_t)smem));
  if (per_sm < 1) {
    CK(cudaLibraryUnload(k->lib));
    return 0;
  }
  k->grid = (dim3){j->inst.grid[0], (unsigned)(b->k / j->sh.kb), 1};
  k->block = (dim3){j->inst.block[0], 1, 1};
  k->smem = (size_t)smem;
  return 1;
}

typedef struct io {
  void *x, *w1, *w2, *pw, *y, *pf, *pp, *pe, *pd, *t1, *t2;
} io;

static void launch(const probe_k *k, const io *d, int res, cudaStream_t st) {
  void *r = res ? d->x : NULL;
  void *args[] = {(void *)&d->x,  (void *)&d->w1, (void *)&d->y, (void *)&d->pf,
                  (void *)&d->pp, (void *)&d->w2, (void *)&r};
  CK(cudaLaunchKernel((const void *)k->fn, k->grid, k->block, args, k->smem, st));
}

static size_t count_bad(const int8_t *a, const int8_t *b, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += a[i] != b[i];
  return bad;
}

int main(int argc, char **argv) {
  probe_name = "irb_probe";
  if (argc < 2) {
    fprintf(stderr, "usage: irb_probe DB|--compile [SOURCE_DIR]\n");
    return 2;
  }
  char *src = probe_source(argc, argv, "irb_probe.cu");
  const int threads = getenv("IRB_THREADS") ? atoi(getenv("IRB_THREADS")) : 16;
  ct_err err = {0};
  device dev;
  if (!strcmp(argv[1], "--compile")) {
    probe_sm90(&dev);
    int ok = 1;
    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
      ct_workload wf, wp;
      block_of(&blocks[bi], &wf, &wp);
      int n = 0;
      job *jobs = compile_shapes(&wf, &blocks[bi], src, &dev.arch, 1, 1, &n);
      const int r = n == 2 && jobs[0].ok && jobs[1].ok;
      printf("%s: %s\n", blocks[bi].name, r ? "compiled" : "FAILED");
      for (int i = 0; i < n; i++) cubin_free(&jobs[i].cb);
      free(jobs);
      ok &= r;
    }
    return ok ? 0 : 1;
  }
  ct_context *ctx = NULL;
  cudaStream_t st;
  probe_open(argv[1], &dev, &ctx, &st);
  printf("%-8s %4s %4s %4s %2s %4s %3s | %9s %9s %9s | %s\n", "block", "Cin", "E", "H", "s", "K",
         "res", "fused", "3 convs", "ratio",
         "shape (tile_h x tile_w, cb, warps, kb, db), shapes run");
  double sum[2] = {0};
  int all_exact = 1;
  for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
    const blk *b = &blocks[bi];
    ct_workload wf, wp, we, wd;
    block_of(b, &wf, &wp);
    workload_pre(&wf, &we);
    workload_main(&wf, &wd);
    quant_store qf, qp;
    if (quant_random(&wf, 11 + bi, &qf, &err) || quant_random(&wp, 101 + bi, &qp, &err))
      probe_fail("quant_random", err.msg);
    ct_quant qd = qf.q; /* the depthwise conv alone */
    qd.pre = NULL, qd.pre_weights = NULL;
    rng r;
    rng_seed(&r, 7 + bi);
    const size_t nx = (size_t)workload_data_elems(&wf), nw1 = (size_t)workload_weight_elems(&wd);
    const size_t nw2 = (size_t)workload_weight_elems(&wp), ny = (size_t)workload_out_elems(&wp);
    const size_t nt = (size_t)workload_out_elems(&wd), ne = (size_t)workload_out_elems(&we);
    const size_t npw = (size_t)b->e * (size_t)b->cin;
    int8_t *x = malloc(nx), *w1 = malloc(nw1), *w2 = malloc(nw2), *t = malloc(nt);
    int8_t *yref = malloc(ny), *y = malloc(ny), *t2 = malloc(nt);
    if (!x || !w1 || !w2 || !t || !yref || !y || !t2) probe_fail("host", "out of memory");
    probe_random_bytes(&r, x, nx), probe_random_bytes(&r, w1, nw1), probe_random_bytes(&r, w2, nw2);
    char eb[256];
    if (ct_reference_qconv(&wf, &qf.q, x, w1, NULL, t, eb, sizeof eb) ||
        ct_reference_qconv(&wp, &qp.q, t, w2, b->res ? x : NULL, yref, eb, sizeof eb))
      probe_fail("reference", eb);
    int distinct[256] = {0}, nd = 0;
    for (size_t i = 0; i < ny; i++) nd += !distinct[(uint8_t)yref[i]]++;
    int32_t *pf = probe_make_params(&wf, &qf.q, w1), *pp = probe_make_params(&wp, &qp.q, w2);
    int32_t *pe = probe_make_params(&we, qf.q.pre, qf.pre_weights),
            *pd = probe_make_params(&wd, &qd, w1);
    io d;
    d.x = probe_dev_copy(x, nx), d.w1 = probe_dev_copy(w1, nw1), d.w2 = probe_dev_copy(w2, nw2);
    d.pw = probe_dev_copy(qf.pre_weights, npw);
    d.pf = probe_dev_copy(pf, quant_params_words(&wf) * 4);
    d.pp = probe_dev_copy(pp, quant_params_words(&wp) * 4);
    d.pe = probe_dev_copy(pe, quant_params_words(&we) * 4);
    d.pd = probe_dev_copy(pd, quant_params_words(&wd) * 4);
    CK(cudaMalloc(&d.y, ny));
    CK(cudaMalloc(&d.t1, ne));
    CK(cudaMalloc(&d.t2, nt));

    /* the probe: every shape compiled, checked and timed; the fastest kept */
    int n_jobs = 0, n_ran = 0;
    job *jobs = compile_shapes(&wf, b, src, &dev.arch, threads, 0, &n_jobs);
    double best_us = 0, best_sb = 0;
    int bj = -1;
    for (int ji = 0; ji < n_jobs; ji++) {
      probe_k k;
      if (!jobs[ji].ok || !load(&jobs[ji], b, &k)) continue;
      CK(cudaMemset(d.y, 0x5a, ny));
      launch(&k, &d, b->res, st);
      CK(cudaStreamSynchronize(st));
      CK(cudaMemcpy(y, d.y, ny, cudaMemcpyDeviceToHost));
      const size_t bad = count_bad(y, yref, ny);
      const shape *s = &jobs[ji].sh;
      if (bad) {
        printf("%s: shape %d x %d cb %d warps %d kb %d db %d: %zu of %zu bytes differ\n", b->name,
               s->th, s->tw, 8 * s->cb8, s->warps, s->kb, s->db, bad, ny);
        all_exact = 0;
        CK(cudaLibraryUnload(k.lib));
        continue;
      }
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < 100; i++) launch(&k, &d, b->res, st);
      CK(cudaStreamEndCapture(st, &g));
      const double us = probe_replay_best_us(st, g, 100);
      n_ran++;
      if (bj < 0 || us < best_us) best_us = us, bj = ji;
      if (!s->db && (best_sb == 0 || us < best_sb)) best_sb = us;
      CK(cudaLibraryUnload(k.lib));
    }

    /* the three convs through libconvtune, checked, then timed */
    if (ct_qconv2d(ctx, &we, d.x, d.pw, d.pe, NULL, d.t1, st) ||
        ct_qconv2d(ctx, &wd, d.t1, d.w1, d.pd, NULL, d.t2, st) ||
        ct_qconv2d(ctx, &wp, d.t2, d.w2, d.pp, b->res ? d.x : NULL, d.y, st))
      probe_fail("ct_qconv2d", ct_errmsg(ctx));
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(y, d.y, ny, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(t2, d.t2, nt, cudaMemcpyDeviceToHost));
    const size_t bad3 = count_bad(y, yref, ny), badt = count_bad(t2, t, nt);
    if (bad3 || badt) {
      printf("%s: the three convs through libconvtune: %zu output and %zu intermediate bytes "
             "differ\n",
             b->name, bad3, badt);
      all_exact = 0;
    }
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 100; i++)
      if (ct_qconv2d(ctx, &we, d.x, d.pw, d.pe, NULL, d.t1, st) ||
          ct_qconv2d(ctx, &wd, d.t1, d.w1, d.pd, NULL, d.t2, st) ||
          ct_qconv2d(ctx, &wp, d.t2, d.w2, d.pp, b->res ? d.x : NULL, d.y, st))
        probe_fail("ct_qconv2d", ct_errmsg(ctx));
    CK(cudaStreamEndCapture(st, &g));
    const double three = probe_replay_best_us(st, g, 100);
    if (bj >= 0) {
      const shape *s = &jobs[bj].sh;
      sum[0] += b->count * best_us, sum[1] += b->count * three;
      printf("%-8s %4d %4d %4d %2d %4d %3d | %9.2f %9.2f %8.2fx | %d x %d, %d, %d, %d, %d; %d of "
             "%d (%d output values); single-buffered best %.2f\n",
             b->name, b->cin, b->e, b->h, b->s, b->k, b->res, best_us, three, three / best_us,
             s->th, s->tw, 8 * s->cb8, s->warps, s->kb, s->db, n_ran, n_jobs, nd, best_sb);
    } else {
      printf("%-8s: no shape ran (%d compiled); 3 convs %.2f us\n", b->name, n_jobs, three);
      all_exact = 0;
    }
    fflush(stdout);
    for (int i = 0; i < n_jobs; i++) cubin_free(&jobs[i].cb);
    free(jobs);
    void *ptrs[] = {d.x, d.w1, d.w2, d.pw, d.y, d.pf, d.pp, d.pe, d.pd, d.t1, d.t2};
    for (int i = 0; i < 11; i++) CK(cudaFree(ptrs[i]));
    free(x), free(w1), free(w2), free(t), free(yref), free(y), free(t2);
    free(pf), free(pp), free(pe), free(pd);
    quant_store_free(&qf), quant_store_free(&qp);
  }
  printf("sums over blocks 7-16 (each counted as the network has it): fused %.2f us, 3 convs "
         "%.2f us (%.2fx); %s\n",
         sum[0], sum[1], sum[1] / (sum[0] > 0 ? sum[0] : 1),
         all_exact ? "every output exact" : "NOT every output exact");
  ct_close(ctx);
  return all_exact ? 0 : 1;
}
