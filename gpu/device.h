/*
 * device.h: the GPU's identity and limits. Records are per device: name,
 * compute capability, SM count, driver and runtime versions; the arch limits
 * that validity checks use are read from the device here.
 */
#ifndef CT_GPU_DEVICE_H
#define CT_GPU_DEVICE_H

#include "core/arch.h"

typedef struct device {
  int ordinal;
  char name[256];     /* "NVIDIA H200" */
  arch arch;          /* limits read from the device; name "sm_90" */
  int driver_version; /* cudaDriverGetVersion: 13000 = 13.0 */
  int runtime_version;
  long long global_mem_bytes;
  int l2_bytes;
  int clock_khz; /* SM clock (cudaDevAttrClockRate) */
} device;

/* Number of CUDA devices; 0 when there is none or no driver (not an error). */
int device_count(void);

/* Identify device ordinal (and make it current on this thread).
 * CT_ERR_NO_DEVICE with a clear message when there is no GPU or driver;
 * CT_ERR_INVALID_ARG for an ordinal out of range. */
ct_status device_open(int ordinal, device *out, ct_err *err);

#endif
