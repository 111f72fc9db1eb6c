/*
 * pdl_probe.cu: what Programmatic Dependent Launch saves between the
 * dependent kernels of a chain on this GPU, measured before the templates
 * use it (issues 35 and 36: MobileNetV2's and ResNet-50's chains of 52-53
 * convs, each a few microseconds).
 *
 * A chain of LEN kernels, captured as one CUDA graph, each reading the
 * previous one's output (ping-pong buffers of S bytes) and adding 1 to
 * every byte. Three ways:
 *   plain  every kernel launched as usual: the next starts when this one
 *          has finished and its writes are visible;
 *   pdl    launched with programmatic stream serialisation: each kernel
 *          lets its dependants launch on entry (griddepcontrol.
 *          launch_dependents) and waits for its prerequisite
 *          (griddepcontrol.wait) before touching the buffers;
 *   pdl+p  pdl with a prologue before the wait: 16 KB of "weights" from a
 *          constant buffer into shared memory, as a conv kernel would load
 *          them before it needs its input.
 * Two grids: one block per 4 KB (many waves) and a persistent grid (2
 * blocks an SM, grid-stride). Each way's chain is checked: every byte must
 * be its start plus LEN (mod 256), so a kernel that read its input early
 * would show.
 *
 * Not built by CMake (the project compiles kernels with NVRTC only):
 *   nvcc -O2 -arch=sm_90a -o pdl_probe bench/pdl_probe.cu
 *   ./pdl_probe [LEN]       (default 52)
 * Prints one line per size, grid and way: microseconds a node, the median
 * of 15 replays of the graph over LEN.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

enum { PLAIN = 0, PDL = 1, PDL_PROLOGUE = 2 };

__global__ void step(const uint4 *in, uint4 *out, size_t n, int way, const uint4 *weights,
                     int *sink) {
  __shared__ uint4 w[1024]; /* 16 KB */
  if (way != PLAIN) asm volatile("griddepcontrol.launch_dependents;");
  if (way == PDL_PROLOGUE) {
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) w[i] = weights[i];
    __syncthreads();
  }
  if (way != PLAIN) asm volatile("griddepcontrol.wait;" ::: "memory");
  unsigned acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = in[i];
    v.x = __vadd4(v.x, 0x01010101u);
    v.y = __vadd4(v.y, 0x01010101u);
    v.z = __vadd4(v.z, 0x01010101u);
    v.w = __vadd4(v.w, 0x01010101u);
    out[i] = v;
    if (way == PDL_PROLOGUE) acc += w[i & 1023].x;
  }
  if (way == PDL_PROLOGUE && acc == 0x7fffffffu) *sink = 1; /* keeps the prologue */
}

int main(int argc, char **argv) {
  int len = argc > 1 ? atoi(argv[1]) : 52;
  if (len < 2 || len > 1000) {
    fprintf(stderr, "pdl_probe: LEN must be 2..1000\n");
    return 2;
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs, chain of %d kernels\n", prop.name, sms, len);
  const size_t sizes[] = {256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  const size_t max_bytes = 64 << 20;
  uint4 *buf[2], *weights;
  int *sink;
  CK(cudaMalloc(&buf[0], max_bytes));
  CK(cudaMalloc(&buf[1], max_bytes));
  CK(cudaMalloc(&weights, 16384));
  CK(cudaMalloc(&sink, sizeof(int)));
  CK(cudaMemset(weights, 1, 16384));
  std::vector<unsigned char> start(max_bytes), got(max_bytes);
  for (size_t i = 0; i < max_bytes; i++) start[i] = (unsigned char)(i * 2654435761u >> 13);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const char *way_name[] = {"plain", "pdl", "pdl+p"};
  int failures = 0;
  for (size_t bytes : sizes) {
    size_t n = bytes / sizeof(uint4);
    for (int persistent = 0; persistent < 2; persistent++) {
      unsigned grid = persistent ? 2u * (unsigned)sms : (unsigned)((bytes + 4095) / 4096);
      double per_node[3];
      for (int way = 0; way < 3; way++) {
        CK(cudaMemcpy(buf[0], start.data(), bytes, cudaMemcpyHostToDevice));
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int k = 0; k < len; k++) {
          cudaLaunchConfig_t cfg;
          memset(&cfg, 0, sizeof cfg);
          cfg.gridDim = dim3(grid);
          cfg.blockDim = dim3(256);
          cfg.stream = s;
          cudaLaunchAttribute attr[1];
          attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
          attr[0].val.programmaticStreamSerializationAllowed = 1;
          if (way != PLAIN) {
            cfg.attrs = attr;
            cfg.numAttrs = 1;
          }
          CK(cudaLaunchKernelEx(&cfg, step, (const uint4 *)buf[k & 1], buf[(k + 1) & 1], n, way,
                                (const uint4 *)weights, sink));
        }
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        /* the check: one replay from the start */
        CK(cudaGraphLaunch(ge, s));
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(got.data(), buf[len & 1], bytes, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < bytes; i++) bad += got[i] != (unsigned char)(start[i] + len);
        if (bad) {
          printf("  %s %s %zu bytes: %zu bytes wrong\n", way_name[way],
                 persistent ? "persistent" : "waves", bytes, bad);
          failures++;
        }
        std::vector<float> t;
        for (int r = 0; r < 16; r++) {
          CK(cudaEventRecord(e0, s));
          CK(cudaGraphLaunch(ge, s));
          CK(cudaEventRecord(e1, s));
          CK(cudaEventSynchronize(e1));
          float ms;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          if (r > 0) t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        per_node[way] = t[t.size() / 2] * 1e3 / len;
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
      }
      printf("%8zu KB %-10s grid %6u: plain %7.2f us a node, pdl %7.2f (%+.2f), pdl+p %7.2f "
             "(%+.2f)\n",
             bytes >> 10, persistent ? "persistent" : "waves", grid, per_node[0], per_node[1],
             per_node[1] - per_node[0], per_node[2], per_node[2] - per_node[0]);
    }
  }
  printf("%s\n", failures ? "FAILED: a chain's output was wrong" : "every chain exact");
  return failures ? 1 : 0;
}
