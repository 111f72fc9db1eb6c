/*
 * fault_dp4a.cu: conv2d_nchw4c_dp4a with planted faults, for testing that the
 * engine survives what a kernel can do. Not registered among the templates:
 * only tests use it (tests/test_tune_gpu.c), with CT_FAULT from a knob:
 *   0 none (the real convolution)   1 writes far out of bounds (a fault)
 *   2 never ends                    3 does not compile
 *   4 computes a wrong value        5 asks for too much shared memory at launch
 */
#define CT_TEMPLATE_CONV3D 0
#define CT_CUSTOM_ENTRY 1
#include "conv_dp4a.cuh"

#if CT_FAULT == 3
static_assert(CT_FAULT != 3, "planted fault 3: this config does not compile");
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
    conv_dp4a(const int *__restrict__ data, const int4 *__restrict__ weights, void *__restrict__ out_,
              const int *__restrict__ params, const void *__restrict__ residual) {
  int *out = (int *)out_;
#if CT_FAULT == 1
  /* an address far beyond any allocation: an illegal-address fault */
  ((volatile int *)out)[0x3fffffff00LL + threadIdx.x] = 1;
#elif CT_FAULT == 2
  /* spin on a value that never changes; volatile so that it is not elided */
  volatile const int *p = data;
  while (p[0] == p[0]) __nanosleep(1000);
#endif
  conv_dp4a_body(data, weights, out, params, residual);
#if CT_FAULT == 4
  __syncthreads();
  if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0) out[0] ^= 1;
#endif
}
