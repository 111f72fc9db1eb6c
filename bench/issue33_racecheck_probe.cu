/*
 * issue33_racecheck_probe.cu: does compute-sanitizer's racecheck see the
 * ordering that cp.async.mbarrier.arrive gives? conv_wgmma's producer
 * (tma=0) fills a ring of shared stages with 4-byte cp.async and signals
 * the stage's full barrier with cp.async.mbarrier.arrive.noinc; consumers
 * wait on it, read with ld.shared and release the stage through an empty
 * barrier. racecheck 2025.3 reported hazards between those reads and
 * writes while every output was exact. This kernel is that protocol alone,
 * in modes that differ in one thing each:
 *   mode 0: the producer signals with cp.async.mbarrier.arrive.noinc, and
 *           every consumer thread arrives on the empty barrier;
 *   mode 1: the producer waits for its copies (cp.async.wait_all), then
 *           arrives (release);
 *   mode 2: as 0, but one lane of each consumer warp arrives on the empty
 *           barrier, after __syncwarp (what the template does);
 *   mode 3: as 0, with a zero-filling cp.async (source size 0) for a
 *           quarter of the words (the template's padding).
 * All are correct by the PTX memory model; the result is checked exactly.
 * A mode with hazards where mode 0 has none shows which construct
 * racecheck does not follow. Build: nvcc -arch=sm_90a -o probe issue33_racecheck_probe.cu
 * Run: compute-sanitizer --tool racecheck ./probe 0 (and 1).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define STAGES 3
#define WORDS  128 /* per stage: one per producer thread */
#define ITERS  64  /* the ring wraps ITERS / STAGES times */

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

template <int MODE>
__global__ void __launch_bounds__(256) probe(const int *in, int *out) {
  __shared__ __align__(16) int buf[STAGES][WORDS];
  __shared__ __align__(8) unsigned long long bars[2 * STAGES]; /* full, then empty */
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbar_init(sa(&bars[s]), WORDS);          /* every producer thread arrives */
      /* every consumer thread arrives, or (mode 2) one per warp */
      mbar_init(sa(&bars[STAGES + s]), MODE == 2 ? WORDS / 32 : WORDS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (tid < WORDS) { /* producer */
    for (int it = 0; it < ITERS; it++) {
      const int s = it % STAGES;
      mbar_wait(sa(&bars[STAGES + s]), ((it / STAGES) & 1) ^ 1);
      const int src_bytes = MODE == 3 && (tid + it) % 4 == 0 ? 0 : 4; /* 0: zero fill */
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(sa(&buf[s][tid])),
                   "l"(in + it * WORDS + tid), "r"(src_bytes)
                   : "memory");
      if (MODE != 1) {
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(
                         sa(&bars[s]))
                     : "memory");
      } else {
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        mbar_arrive(sa(&bars[s]));
      }
    }
  } else { /* consumer: reads another thread's word of each stage */
    const int t = tid - WORDS;
    int acc = 0;
    for (int it = 0; it < ITERS; it++) {
      const int s = it % STAGES;
      mbar_wait(sa(&bars[s]), (it / STAGES) & 1);
      acc += *(volatile int *)&buf[s][(t * 37 + it) % WORDS];
      if (MODE == 2) {
        __syncwarp();
        if ((t & 31) == 0) mbar_arrive(sa(&bars[STAGES + s]));
      } else {
        mbar_arrive(sa(&bars[STAGES + s]));
      }
    }
    out[t] = acc;
  }
}

int main(int argc, char **argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : 0;
  int *in, *out, h_in[ITERS * WORDS], h_out[WORDS];
  for (int i = 0; i < ITERS * WORDS; i++) h_in[i] = (i * 2654435761u) >> 7 & 0xffff;
  if (cudaMalloc(&in, sizeof h_in) || cudaMalloc(&out, sizeof h_out)) return 1;
  cudaMemcpy(in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
  cudaMemset(out, 0xa5, sizeof h_out);
  switch (mode) {
  case 0: probe<0><<<8, 256>>>(in, out); break;
  case 1: probe<1><<<8, 256>>>(in, out); break;
  case 2: probe<2><<<8, 256>>>(in, out); break;
  default: probe<3><<<8, 256>>>(in, out); break;
  }
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int t = 0; t < WORDS; t++) {
    int want = 0;
    for (int it = 0; it < ITERS; it++) {
      const int word = (t * 37 + it) % WORDS;
      want += mode == 3 && (word + it) % 4 == 0 ? 0 : h_in[it * WORDS + word];
    }
    bad += h_out[t] != want;
  }
  static const char *const what[] = {
      "cp.async.mbarrier.arrive.noinc, every consumer arrives",
      "cp.async.wait_all + mbarrier.arrive", "one lane per consumer warp arrives after __syncwarp",
      "zero-filling cp.async for a quarter of the words"};
  printf("probe mode %d (%s): %s, %d of %d outputs wrong\n", mode, what[mode < 3 ? mode : 3],
         cudaGetErrorString(e), bad, WORDS);
  return e != cudaSuccess || bad;
}
