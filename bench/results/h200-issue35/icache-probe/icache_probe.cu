// scratch probe: does a chain of distinct kernels pay for cold instruction caches?
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
constexpr int NK = 52;
template <int ID, int N>
__global__ void __launch_bounds__(256) body(float *out, float a, float b) {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  float x[8];
#pragma unroll
  for (int j = 0; j < 8; j++) x[j] = threadIdx.x * a + (ID + j);
#pragma unroll
  for (int i = 0; i < N; i++) {
#pragma unroll
    for (int j = 0; j < 8; j++) x[j] = fmaf(x[j], a, b);
  }
  float s = 0;
#pragma unroll
  for (int j = 0; j < 8; j++) s += x[j];
  out[blockIdx.x * 256 + threadIdx.x] = s;
}
template <int N, int... I> void table(void **t, std::integer_sequence<int, I...>) { ((t[I] = (void *)body<I, N>), ...); }

static float run_chain(void **fns, bool distinct, bool pdl, float *out, int blocks, cudaStream_t st) {
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < NK; i++) {
    cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute at[1];
    cfg.gridDim = blocks; cfg.blockDim = 256; cfg.stream = st;
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; at[0].val.programmaticStreamSerializationAllowed = pdl;
    cfg.attrs = at; cfg.numAttrs = 1;
    float a = 0.999f, b = 0.001f;
    void *args[] = {&out, &a, &b};
    CK(cudaLaunchKernelExC(&cfg, fns[distinct ? i : 0], args));
  }
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int w = 0; w < 5; w++) CK(cudaGraphLaunch(ge, st));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> v;
  for (int r = 0; r < 15; r++) {
    CK(cudaEventRecord(e0, st));
    for (int k = 0; k < 20; k++) CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); v.push_back(ms * 1000 / 20 / NK);
  }
  std::sort(v.begin(), v.end());
  CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g));
  return v[v.size() / 2];
}
int main() {
  void *t[5][NK];
  const int sizes[5] = {8, 32, 64, 128, 256};
  table<8>(t[0], std::make_integer_sequence<int, NK>{});
  table<32>(t[1], std::make_integer_sequence<int, NK>{});
  table<64>(t[2], std::make_integer_sequence<int, NK>{});
  table<128>(t[3], std::make_integer_sequence<int, NK>{});
  table<256>(t[4], std::make_integer_sequence<int, NK>{});
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("# %s, %d SMs; us a node over a chain of %d nodes (graph, median of 15 x 20 replays)\n", p.name, p.multiProcessorCount, NK);
  float *out; CK(cudaMalloc(&out, 1 << 24));
  cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  printf("%-10s %-8s %10s %10s %10s %10s %8s\n", "code", "blocks", "same+pdl", "dist+pdl", "same", "dist", "dist-same(pdl)");
  for (int s = 0; s < 5; s++)
    for (int bm = 1; bm <= 2; bm++) {
      const int blocks = bm * p.multiProcessorCount;
      float a = run_chain(t[s], false, true, out, blocks, st), b = run_chain(t[s], true, true, out, blocks, st);
      float c = run_chain(t[s], false, false, out, blocks, st), d = run_chain(t[s], true, false, out, blocks, st);
      printf("%-10d %-8d %10.3f %10.3f %10.3f %10.3f %8.3f\n", sizes[s] * 128, blocks, a, b, c, d, b - a);
    }
  return 0;
}
