// microbenchmark: IMAD.HI (64-bit addend, high word only) vs IMAD.WIDE (both words used) vs IMAD
#include <cstdio>
#include <cuda_runtime.h>
#define N 4096
template <int MODE>
__global__ void k(int *out, const int *ms, const long long *cs, int iters) {
  int x[8], mm[8];
  long long cc[8];
  for (int i = 0; i < 8; i++) x[i] = threadIdx.x * 7 + i, mm[i] = ms[(threadIdx.x + i) & 63], cc[i] = cs[(threadIdx.x + 3 * i) & 63];
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int u = 0; u < 16; u++) {
#pragma unroll
      for (int i = 0; i < 8; i++) asm volatile("" : "+r"(mm[i]), "+r"(x[i]));
#pragma unroll
      for (int i = 0; i < 8; i++) {
        if (MODE == 0) x[i] = (int)(((long long)x[i] * mm[i] + cc[i]) >> 32);            // IMAD.HI
        else if (MODE == 1) { long long p = (long long)x[i] * mm[i] + cc[i]; x[i] = (int)(p >> 32) ^ (int)p; } // IMAD.WIDE + LOP3
        else if (MODE == 2) x[i] = x[i] * mm[i] + (int)cc[i];                              // IMAD
        else { x[i] = (x[i] ^ mm[i]) + (int)cc[i]; }                                       // LOP3/IADD3 (ALU)
      }
    }
  }
  int s = 0;
  for (int i = 0; i < 8; i++) s += x[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
static int *g_ms;
static long long *g_cs;
template <int MODE> float run(int *d, int blocks, int threads, int iters) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  k<MODE><<<blocks, threads>>>(d, g_ms, g_cs, iters);
  cudaEventRecord(a);
  k<MODE><<<blocks, threads>>>(d, g_ms, g_cs, iters);
  cudaEventRecord(b); cudaEventSynchronize(b);
  float ms; cudaEventElapsedTime(&ms, a, b); return ms;
}
int main() {
  int *d; cudaMalloc(&d, 132 * 1024 * 4 * 8);
  int hm[64]; long long hc[64];
  for (int i = 0; i < 64; i++) hm[i] = 0x40000000 + i * 7919, hc[i] = ((long long)i << 33) + (3LL << 30);
  cudaMalloc(&g_ms, sizeof hm); cudaMalloc(&g_cs, sizeof hc);
  cudaMemcpy(g_ms, hm, sizeof hm, cudaMemcpyHostToDevice); cudaMemcpy(g_cs, hc, sizeof hc, cudaMemcpyHostToDevice);
  int sm; cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0);
  int clk; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  const char *names[] = {"IMAD.HI (64-bit addend)", "IMAD.WIDE + LOP3", "IMAD", "LOP3 + IADD3"};
  const int iters = 2000;
  for (int warps = 1; warps <= 16; warps *= 4) {
    int threads = 32 * 4 * warps; /* warps per scheduler */
    float t[4] = {run<0>(d, sm, threads, iters), run<1>(d, sm, threads, iters), run<2>(d, sm, threads, iters), run<3>(d, sm, threads, iters)};
    for (int m = 0; m < 4; m++) {
      double ops = (double)sm * threads / 32 * iters * 16 * 8 * (m == 1 || m == 3 ? 2 : 1); /* warp instructions */
      double cyc = t[m] * 1e-3 * clk * 1e3;
      printf("%-26s warps/scheduler %2d: %8.3f ms, %.2f cycles per warp instruction per scheduler\n", names[m], warps, t[m], cyc * sm * 4 / ops);
    }
  }
  return 0;
}
