/*
 * peaks.c: the hardware limits the benchmark compares with, measured in the
 * same run: __dp4a throughput, int8 mma.sync throughput, device copy
 * bandwidth.
 *
 * The two throughput kernels are compiled at run time by NVRTC from the
 * source below (no nvcc in the build) for the device's architecture. Each
 * thread keeps 8 independent accumulator chains in registers (enough to
 * hide the instruction latency), nothing touches memory inside the loop,
 * and the instructions are inline PTX marked volatile so that the compiler
 * can neither fold nor drop them; the result is written only under a
 * condition it cannot decide. The grid fills every SM to its occupancy, so
 * there is no partial last wave. The iteration count is calibrated so that
 * one launch lasts about 20 ms; the median of 5 launches is kept.
 *
 * Operation counts: dp4a = 4 multiplies + 4 adds = 8; mma.sync
 * m16n8k32 = 2 x 16 x 8 x 32 = 8192 per warp instruction. Copy bandwidth
 * counts bytes read plus bytes written (2 x size / time), the convention
 * of the 4.3 TB/s in the GPU notes and of the roofline floor's bytes.
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "bench/bench.h"
#include "gpu/cuda_check.h"
#include "gpu/kernel.h"
#include "gpu/nvrtc.h"

static const char dp4a_source[] =
    "extern \"C\" __global__ void peak_dp4a(int iters, int seed, int *out) {\n"
    "  int b = seed ^ (int)(threadIdx.x * 2654435761u);\n"
    "  int acc[8];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < 8; i++) acc[i] = seed + 7 * i + (int)threadIdx.x;\n"
    "  for (int it = 0; it < iters; it++) {\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < 8; u++) {\n"
    "#pragma unroll\n"
    "      for (int i = 0; i < 8; i++)\n"
    "        asm volatile(\"dp4a.s32.s32 %0, %0, %1, %0;\" : \"+r\"(acc[i]) : \"r\"(b));\n"
    "    }\n"
    "  }\n"
    "  int s = 0;\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < 8; i++) s ^= acc[i];\n"
    "  if (s == 0x7fffffff) out[0] = s;\n"
    "}\n";

/* 64 dp4a per thread and iteration */
#define DP4A_PER_ITER 64

static const char mma_source[] =
    "extern \"C\" __global__ void peak_mma(int iters, int seed, int *out) {\n"
    "  unsigned a0 = (unsigned)seed ^ threadIdx.x, a1 = a0 * 3u + 1u, a2 = a0 * 5u + 2u;\n"
    "  unsigned a3 = a0 * 7u + 3u, b0 = a0 * 11u + 4u, b1 = a0 * 13u + 5u;\n"
    "  int d[8][4];\n"
    "#pragma unroll\n"
    "  for (int j = 0; j < 8; j++)\n"
    "#pragma unroll\n"
    "    for (int q = 0; q < 4; q++) d[j][q] = j + q;\n"
    "  for (int it = 0; it < iters; it++) {\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < 8; j++)\n"
    "      asm volatile(\"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 \"\n"
    "                   \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
    "                   : \"+r\"(d[j][0]), \"+r\"(d[j][1]), \"+r\"(d[j][2]), \"+r\"(d[j][3])\n"
    "                   : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
    "  }\n"
    "  int s = 0;\n"
    "#pragma unroll\n"
    "  for (int j = 0; j < 8; j++) s ^= d[j][0] ^ d[j][1] ^ d[j][2] ^ d[j][3];\n"
    "  if (s == 0x7fffffff) out[0] = s;\n"
    "}\n";

/* 8 mma.sync per warp and iteration, 8192 operations each */
#define MMA_PER_ITER 8
#define MMA_OPS      8192.0

#define THREADS      256
#define TARGET_MS    20.0
#define PEAK_REPEATS 5

const char *bench_peaks_source(int which) {
  return which ? mma_source : dp4a_source;
}

typedef struct peak_kernel {
  kernel k;
  unsigned blocks;
} peak_kernel;

static ct_status load(const device *dev, const char *name, const char *source, peak_kernel *out,
                      ct_err *err) {
  cubin cb = {0};
  instance inst;
  memset(&inst, 0, sizeof inst);
  snprintf(inst.kernel_name, sizeof inst.kernel_name, "%s", name);
  ct_status st = nvrtc_compile_source(name, source, NULL, 0, &dev->arch, &cb, err);
  if (!st) st = kernel_load(cb.data, cb.size, &inst, &out->k, err);
  cubin_free(&cb);
  if (st) return st;
  /* every SM full, one wave: a partial last wave would read as a lower peak */
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)out->k.fn, THREADS, 0) !=
          cudaSuccess ||
      per_sm < 1) {
    (void)cudaGetLastError();
    per_sm = 1;
  }
  out->blocks = (unsigned)(per_sm * (dev->arch.sm_count > 0 ? dev->arch.sm_count : 1));
  return CT_OK;
}

static ct_status time_launch(const peak_kernel *pk, int iters, int *d_out, cudaStream_t s,
                             cudaEvent_t e0, cudaEvent_t e1, double *ms_out, ct_err *err) {
  ct_status st = CT_OK;
  int seed = 12345;
  void *args[] = {&iters, &seed, &d_out};
  dim3 grid = {pk->blocks, 1, 1}, block = {THREADS, 1, 1};
  float ms = 0;
  CUDA_TRY(err, cudaEventRecord(e0, s));
  CUDA_TRY(err, cudaLaunchKernel((const void *)pk->k.fn, grid, block, args, 0, s));
  CUDA_TRY(err, cudaEventRecord(e1, s));
  CUDA_TRY(err, cudaEventSynchronize(e1));
  CUDA_TRY(err, cudaEventElapsedTime(&ms, e0, e1));
  *ms_out = ms;
done:
  return st;
}

/* Calibrate the iterations to about TARGET_MS, then the median of
 * PEAK_REPEATS launches; *iters_out gets the count used. */
static ct_status time_peak(const peak_kernel *pk, int *d_out, cudaStream_t s, cudaEvent_t e0,
                           cudaEvent_t e1, int *iters_out, double *ms_out, ct_err *err) {
  int iters = 256;
  double ms = 0, samples[PEAK_REPEATS];
  ct_status st = time_launch(pk, iters, d_out, s, e0, e1, &ms, err); /* warm-up */
  if (!st) st = time_launch(pk, iters, d_out, s, e0, e1, &ms, err);
  if (st) return st;
  double scaled = ms > 0 ? iters * TARGET_MS / ms : 1 << 22;
  iters = scaled < 256 ? 256 : scaled > (1 << 22) ? 1 << 22 : (int)scaled;
  for (int i = 0; i < PEAK_REPEATS; i++)
    if ((st = time_launch(pk, iters, d_out, s, e0, e1, &samples[i], err))) return st;
  *iters_out = iters;
  *ms_out = bench_median(samples, PEAK_REPEATS);
  return CT_OK;
}

ct_status bench_measure_peaks(const device *dev, struct CUstream_st *stream, bench_peaks *out,
                              ct_err *err) {
  ct_status st = CT_OK;
  cudaStream_t s = (cudaStream_t)stream;
  cudaEvent_t e0 = NULL, e1 = NULL;
  peak_kernel dp4a = {0}, mma = {0};
  int *d_out = NULL;
  void *src = NULL, *dst = NULL;
  memset(out, 0, sizeof *out);
  CUDA_TRY(err, cudaEventCreate(&e0));
  CUDA_TRY(err, cudaEventCreate(&e1));
  CUDA_TRY(err, cudaMalloc((void **)&d_out, sizeof(int)));

  int iters = 0;
  double ms = 0;
  if ((st = load(dev, "peak_dp4a", dp4a_source, &dp4a, err))) goto done;
  if ((st = time_peak(&dp4a, d_out, s, e0, e1, &iters, &ms, err))) goto done;
  out->dp4a_tops = (double)dp4a.blocks * THREADS * iters * DP4A_PER_ITER * 8.0 / (ms * 1e-3) / 1e12;

  /* mma.sync with s8 inputs and m16n8k32 needs sm_80 */
  if (dev->arch.cc_major >= 8) {
    if ((st = load(dev, "peak_mma", mma_source, &mma, err))) goto done;
    if ((st = time_peak(&mma, d_out, s, e0, e1, &iters, &ms, err))) goto done;
    out->mma_int8_tops =
        (double)mma.blocks * (THREADS / 32) * iters * MMA_PER_ITER * MMA_OPS / (ms * 1e-3) / 1e12;
  }

  /* device copy: 1 GiB (a quarter of the free memory at most), far beyond L2 */
  size_t free_b = 0, total_b = 0;
  CUDA_TRY(err, cudaMemGetInfo(&free_b, &total_b));
  size_t bytes = (size_t)1 << 30;
  if (bytes > free_b / 4) bytes = free_b / 4 / 256 * 256;
  CUDA_TRY(err, cudaMalloc(&src, bytes));
  CUDA_TRY(err, cudaMalloc(&dst, bytes));
  CUDA_TRY(err, cudaMemsetAsync(src, 1, bytes, s));
  CUDA_TRY(err, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)); /* warm-up */
  double samples[PEAK_REPEATS];
  for (int i = 0; i < PEAK_REPEATS; i++) {
    float f = 0;
    CUDA_TRY(err, cudaEventRecord(e0, s));
    CUDA_TRY(err, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    CUDA_TRY(err, cudaEventRecord(e1, s));
    CUDA_TRY(err, cudaEventSynchronize(e1));
    CUDA_TRY(err, cudaEventElapsedTime(&f, e0, e1));
    samples[i] = f;
  }
  ms = bench_median(samples, PEAK_REPEATS);
  out->copy_tbs = 2.0 * (double)bytes / (ms * 1e-3) / 1e12;
done:
  kernel_unload(&dp4a.k);
  kernel_unload(&mma.k);
  if (d_out) cudaFree(d_out);
  if (src) cudaFree(src);
  if (dst) cudaFree(dst);
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  return st;
}
