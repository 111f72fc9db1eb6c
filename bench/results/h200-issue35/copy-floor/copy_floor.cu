// copy_floor.cu: a scratch probe, not built by CMake (README.md here):
//   nvcc -O3 -arch=sm_90 -o copy_floor copy_floor.cu
//   copy_floor NAME NIN NOUT [NAME NIN NOUT ...]
// For each layer: a kernel that reads NIN bytes once and writes NOUT bytes once (16 bytes a
// thread, coalesced, 256 threads a block, no arithmetic), timed as `convtune bench --set` times
// a layer: R launches captured in one CUDA graph (R such that a replay takes at least 1 ms),
// the median of 15 replays, per launch; each launch with programmatic dependent launch (the
// kernel waits on griddepcontrol, then releases its dependants, as convtune's kernels do) and
// without. Prints: name, us with PDL, us without.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                                     \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                                    \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

__global__ void mv(const uint4 *__restrict__ a, uint4 *__restrict__ b, long nin, long nout) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  uint4 v = make_uint4(0, 0, 0, 0);
  if (i < nin) v = a[i];
  if (i < nout)
    b[i] = v;
  else if (v.x == 0x9e3779b9u && v.y == 0x7f4a7c15u)
    b[0] = v; /* keeps the load */
}

static void launch(cudaStream_t s, bool pdl, const uint4 *a, uint4 *b, long nin, long nout) {
  long n = std::max(nin, nout);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)((n + 255) / 256));
  cfg.blockDim = dim3(256);
  cfg.stream = s;
  cudaLaunchAttribute at = {};
  at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &at;
  cfg.numAttrs = pdl ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, mv, a, b, nin, nout));
}

static double time_us(bool pdl, const uint4 *a, uint4 *b, long nin, long nout) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  int r = 100;
  double per = 0;
  for (int attempt = 0; attempt < 2; attempt++) {
    cudaGraph_t g;
    cudaGraphExec_t x;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < r; i++) launch(s, pdl, a, b, nin, nout);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&x, g, 0));
    CK(cudaGraphLaunch(x, s));
    CK(cudaStreamSynchronize(s));
    std::vector<double> t;
    for (int k = 0; k < 15; k++) {
      CK(cudaEventRecord(e0, s));
      CK(cudaGraphLaunch(x, s));
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms * 1000.0);
    }
    std::sort(t.begin(), t.end());
    per = t[t.size() / 2] / r;
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
    if (t[t.size() / 2] >= 1000.0) break;
    r = (int)(r * 1000.0 / t[t.size() / 2]) + 1;
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s));
  return per;
}

int main(int argc, char **argv) {
  if (argc < 4 || (argc - 1) % 3) {
    fprintf(stderr, "usage: copy_floor NAME NIN NOUT [...]\n");
    return 2;
  }
  for (int i = 1; i < argc; i += 3) {
    long nin = atol(argv[i + 1]), nout = atol(argv[i + 2]);
    long n16in = (nin + 15) / 16, n16out = (nout + 15) / 16;
    uint4 *a, *b;
    CK(cudaMalloc(&a, n16in * 16));
    CK(cudaMalloc(&b, n16out * 16));
    CK(cudaMemset(a, 0x5a, n16in * 16));
    double with = time_us(true, a, b, n16in, n16out), without = time_us(false, a, b, n16in, n16out);
    printf("%s %.3f %.3f\n", argv[i], with, without);
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  return 0;
}
