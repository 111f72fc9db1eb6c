/*
 * cuda_check.h: the macros that wrap every CUDA runtime and NVRTC call: on
 * failure they record the call's text, the library's own message, the file
 * and line on err, set the function's `st`, and jump to its one cleanup
 * label `done`. Functions using them declare `ct_status st = CT_OK;` and
 * end with `done: ...; return st;`.
 */
#ifndef CT_GPU_CUDA_CHECK_H
#define CT_GPU_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <nvrtc.h>

#include "core/error.h"

#define CUDA_TRY(err, call)                                                                        \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      st = err_set((err),                                                                          \
                   e_ == cudaErrorNoDevice || e_ == cudaErrorInsufficientDriver ? CT_ERR_NO_DEVICE \
                                                                                : CT_ERR_CUDA,     \
                   __FILE__, __LINE__, "%s: %s (%s)", #call, cudaGetErrorString(e_),               \
                   cudaGetErrorName(e_));                                                          \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

#define NVRTC_TRY(err, call)                                                                       \
  do {                                                                                             \
    nvrtcResult r_ = (call);                                                                       \
    if (r_ != NVRTC_SUCCESS) {                                                                     \
      st = err_set((err), CT_ERR_NVRTC, __FILE__, __LINE__, "%s: %s", #call,                       \
                   nvrtcGetErrorString(r_));                                                       \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

#endif
