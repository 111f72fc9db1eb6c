/*
 * device.c: the GPU's identity and limits, read through the CUDA runtime
 * (see device.h). device_open makes the device current, which creates its
 * primary context (tens of milliseconds the first time in a process); the
 * rest are attribute reads. The arch limits come from the device itself, not
 * from core/arch.c's table, so that validity checks use what this card
 * allows (e.g. 227 KB of opt-in shared memory per block on an H200).
 */
#include "gpu/device.h"

#include <stdio.h>
#include <string.h>

#include "gpu/cuda_check.h"

/* The ISA's limit on registers per thread since Kepler; no attribute
 * reports it. */
#define MAX_REGS_PER_THREAD 255

int device_count(void) {
  int n = 0;
  /* No device or no driver is an answer (0), not an error to report. The
   * runtime also keeps the failure as the thread's last error: clear it so
   * that a later cudaGetLastError does not blame someone else. */
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

ct_status device_open(int ordinal, device *out, ct_err *err) {
  ct_status st = CT_OK;
  if (!out) return ERR_SET(err, CT_ERR_INVALID_ARG, "device_open: NULL out");
  memset(out, 0, sizeof *out);
  int n = 0;
  CUDA_TRY(err, cudaGetDeviceCount(&n));
  if (n <= 0) {
    st = ERR_SET(err, CT_ERR_NO_DEVICE, "cudaGetDeviceCount: 0 devices");
    goto done;
  }
  if (ordinal < 0 || ordinal >= n) {
    st = ERR_SET(err, CT_ERR_INVALID_ARG, "device ordinal %d out of range: accepted 0..%d", ordinal,
                 n - 1);
    goto done;
  }
  CUDA_TRY(err, cudaSetDevice(ordinal));
  struct cudaDeviceProp prop;
  CUDA_TRY(err, cudaGetDeviceProperties(&prop, ordinal));
  out->ordinal = ordinal;
  snprintf(out->name, sizeof out->name, "%s", prop.name);
  out->global_mem_bytes = (long long)prop.totalGlobalMem;

  arch *a = &out->arch;
  CUDA_TRY(err, cudaDeviceGetAttribute(&a->cc_major, cudaDevAttrComputeCapabilityMajor, ordinal));
  CUDA_TRY(err, cudaDeviceGetAttribute(&a->cc_minor, cudaDevAttrComputeCapabilityMinor, ordinal));
  CUDA_TRY(err, cudaDeviceGetAttribute(&a->smem_optin_bytes,
                                       cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal));
  CUDA_TRY(err, cudaDeviceGetAttribute(&a->smem_per_sm_bytes,
                                       cudaDevAttrMaxSharedMemoryPerMultiprocessor, ordinal));
  CUDA_TRY(err, cudaDeviceGetAttribute(&a->max_threads_per_block, cudaDevAttrMaxThreadsPerBlock,
                                       ordinal));
  CUDA_TRY(err, cudaDeviceGetAttribute(&a->regs_per_sm, cudaDevAttrMaxRegistersPerMultiprocessor,
                                       ordinal));
  CUDA_TRY(err,
           cudaDeviceGetAttribute(&a->regs_per_block, cudaDevAttrMaxRegistersPerBlock, ordinal));
  CUDA_TRY(err, cudaDeviceGetAttribute(&a->sm_count, cudaDevAttrMultiProcessorCount, ordinal));
  a->max_regs_per_thread = MAX_REGS_PER_THREAD;
  arch_set_name(a);

  CUDA_TRY(err, cudaDriverGetVersion(&out->driver_version));
  CUDA_TRY(err, cudaRuntimeGetVersion(&out->runtime_version));
  CUDA_TRY(err, cudaDeviceGetAttribute(&out->l2_bytes, cudaDevAttrL2CacheSize, ordinal));
  CUDA_TRY(err, cudaDeviceGetAttribute(&out->clock_khz, cudaDevAttrClockRate, ordinal));

done:
  if (st == CT_ERR_NO_DEVICE) err_prefix(err, "no CUDA device: running kernels needs an NVIDIA GPU");
  if (st != CT_OK) {
    (void)cudaGetLastError(); /* the failure is reported here; do not leave it behind */
    memset(out, 0, sizeof *out);
  }
  return st;
}
