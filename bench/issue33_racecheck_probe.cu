/*
 * issue33_racecheck_probe.cu: does compute-sanitizer's racecheck see the
 * ordering that cp.async.mbarrier.arrive gives? conv_wgmma's producer
 * (tma=0) fills a ring of shared stages with 4-byte cp.async and signals
 * the stage's full barrier with cp.async.mbarrier.arrive.noinc; consumers
 * wait on it, read with ld.shared and release the stage through an empty
 * barrier. racecheck 2025.3.1 reported hazards between those reads and
 * writes in one split-K config while every output was exact; 2026.4.0
 * does not. This kernel is that protocol alone, in modes that differ in
 * one thing each:
 *   mode 0: the producer signals with cp.async.mbarrier.arrive.noinc, and
 *           every consumer thread arrives on the empty barrier;
 *   mode 1: the producer waits for its copies (cp.async.wait_all), then
 *           arrives (release);
 *   mode 2: as 0, but one lane of each consumer warp arrives on the empty
 *           barrier, after __syncwarp (what the template did before 0a6f344);
 *   mode 3: as 0, with a zero-filling cp.async (source size 0) for a
 *           quarter of the words (the template's padding);
 *   mode 4: as 0, 8 copies per producer thread and stage (the template's
 *           A and B words);
 *   mode 5: as 0, launched as clusters of 4 blocks (the template's split-K);
 *   mode 6: as 4 in clusters, and after the ring the consumers (past a
 *           named barrier of their own) store into its memory, then the
 *           cluster meets (the template's split-K partial sums);
 *   mode 7: as 6 with 2 iterations over 4 stages (a split's share);
 *   mode 8: as 4, but the producer signals with a plain mbarrier.arrive
 *           right after issuing its copies, which need not have landed:
 *           a real race, the control that racecheck can see one here.
 * All but mode 8 are correct by the PTX memory model; the result is
 * checked exactly (mode 8 may still come out exact).
 * A mode with hazards where mode 0 has none shows which construct
 * racecheck does not follow. On the H200, racecheck 2025.3.1 and 2026.4.0
 * both report modes 2 and 8 and none of 0, 1, 4, 6 and 7 (2025.3.1: nor
 * 3 and 5), for nvcc 13.0 and 13.1
 * (bench/results/h200-issue33-sanitize). Build: nvcc -arch=sm_90a -o probe
 * issue33_racecheck_probe.cu
 * Run: compute-sanitizer --tool racecheck ./probe MODE.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define STAGES    4
#define THREADS_P 128 /* producer threads, and as many consumer threads */
#define MAX_ITERS 64  /* the ring wraps MAX_ITERS / STAGES times */
#define BLOCKS    8

__host__ __device__ constexpr int copies_of(int mode) {
  return mode == 4 || mode >= 6 ? 8 : 1;
}
__host__ __device__ constexpr int iters_of(int mode) {
  return mode == 7 ? 2 : MAX_ITERS;
}
/* zero fill (mode 3) for a quarter of the words */
__host__ __device__ constexpr bool zero_of(int mode, int word, int it) {
  return mode == 3 && (word + it) % 4 == 0;
}

__device__ __forceinline__ unsigned sa(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(unsigned b, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(b), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned b, int parity) {
  asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               " @!p bra W;\n}\n" ::"r"(b),
               "r"(parity)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned b) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(b)
               : "memory");
}
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

template <int MODE> __device__ __forceinline__ void body(const int *in, int *out) {
  constexpr int C = copies_of(MODE), WORDS = THREADS_P * C, ITERS = iters_of(MODE);
  __shared__ __align__(16) int buf[STAGES][WORDS];
  __shared__ __align__(8) unsigned long long bars[2 * STAGES]; /* full, then empty */
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbar_init(sa(&bars[s]), THREADS_P); /* every producer thread arrives */
      /* every consumer thread arrives, or (mode 2) one per warp */
      mbar_init(sa(&bars[STAGES + s]), MODE == 2 ? THREADS_P / 32 : THREADS_P);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (tid < THREADS_P) { /* producer */
    for (int it = 0; it < ITERS; it++) {
      const int s = it % STAGES;
      mbar_wait(sa(&bars[STAGES + s]), ((it / STAGES) & 1) ^ 1);
      for (int c = 0; c < C; c++) {
        const int word = c * THREADS_P + tid;
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(sa(&buf[s][word])),
                     "l"(in + it * WORDS + word), "r"(zero_of(MODE, word, it) ? 0 : 4)
                     : "memory");
      }
      if (MODE == 1) {
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        mbar_arrive(sa(&bars[s]));
      } else if (MODE == 8) { /* the race: the copies may still be in flight */
        mbar_arrive(sa(&bars[s]));
      } else {
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(sa(&bars[s]))
                     : "memory");
      }
    }
  } else { /* consumer: reads another thread's words of each stage */
    const int t = tid - THREADS_P;
    int acc = 0;
    for (int it = 0; it < ITERS; it++) {
      const int s = it % STAGES;
      mbar_wait(sa(&bars[s]), (it / STAGES) & 1);
      for (int c = 0; c < C; c++) acc += *(volatile int *)&buf[s][(t * 37 + it + c * 101) % WORDS];
      if (MODE == 2) {
        __syncwarp();
        if ((t & 31) == 0) mbar_arrive(sa(&bars[STAGES + s]));
      } else {
        mbar_arrive(sa(&bars[STAGES + s]));
      }
    }
    if (MODE >= 6) { /* the consumers alone, then their store into the ring's memory */
      asm volatile("bar.sync 1, %0;\n" ::"n"(THREADS_P) : "memory");
      for (int c = 0; c < C; c++) buf[0][c * THREADS_P + t] = acc;
    }
    out[blockIdx.x * THREADS_P + t] = acc;
  }
  if (MODE >= 5) cluster_sync_all();
}

template <int MODE> __global__ void __launch_bounds__(256) probe(const int *in, int *out) {
  body<MODE>(in, out);
}
template <int MODE>
__global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(256) probe_cl(const int *in, int *out) {
  body<MODE>(in, out);
}

int main(int argc, char **argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : 0;
  const int n_in = MAX_ITERS * THREADS_P * 8, n_out = BLOCKS * THREADS_P;
  int *in, *out, *h_in = (int *)malloc(n_in * sizeof(int)), h_out[BLOCKS * THREADS_P];
  for (int i = 0; i < n_in; i++) h_in[i] = (i * 2654435761u) >> 7 & 0xffff;
  if (cudaMalloc(&in, n_in * sizeof(int)) || cudaMalloc(&out, sizeof h_out)) return 1;
  cudaMemcpy(in, h_in, n_in * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemset(out, 0xa5, sizeof h_out);
  switch (mode) {
  case 0:
    probe<0><<<BLOCKS, 256>>>(in, out);
    break;
  case 1:
    probe<1><<<BLOCKS, 256>>>(in, out);
    break;
  case 2:
    probe<2><<<BLOCKS, 256>>>(in, out);
    break;
  case 3:
    probe<3><<<BLOCKS, 256>>>(in, out);
    break;
  case 4:
    probe<4><<<BLOCKS, 256>>>(in, out);
    break;
  case 5:
    probe_cl<5><<<BLOCKS, 256>>>(in, out);
    break;
  case 6:
    probe_cl<6><<<BLOCKS, 256>>>(in, out);
    break;
  case 7:
    probe_cl<7><<<BLOCKS, 256>>>(in, out);
    break;
  default:
    probe<8><<<BLOCKS, 256>>>(in, out);
    break;
  }
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost);
  const int m = mode >= 0 && mode < 8 ? mode : 8, C = copies_of(m), words = THREADS_P * C;
  int bad = 0;
  for (int t = 0; t < THREADS_P; t++) {
    int want = 0;
    for (int it = 0; it < iters_of(m); it++)
      for (int c = 0; c < C; c++) {
        const int word = (t * 37 + it + c * 101) % words;
        want += zero_of(m, word, it) ? 0 : h_in[it * words + word];
      }
    for (int b = 0; b < BLOCKS; b++) bad += h_out[b * THREADS_P + t] != want;
  }
  static const char *const what[] = {
      "cp.async.mbarrier.arrive.noinc, every consumer arrives",
      "cp.async.wait_all + mbarrier.arrive",
      "one lane per consumer warp arrives after __syncwarp",
      "zero-filling cp.async for a quarter of the words",
      "8 copies per producer thread and stage",
      "clusters of 4",
      "8 copies, clusters of 4, consumers store into the ring after a named barrier",
      "as 6, 2 iterations over 4 stages",
      "plain mbarrier.arrive before the copies land (a real race)"};
  printf("probe mode %d (%s): %s, %d of %d outputs wrong\n", m, what[m], cudaGetErrorString(e), bad,
         n_out);
  free(h_in);
  return e != cudaSuccess || bad;
}
