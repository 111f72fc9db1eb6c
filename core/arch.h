/*
 * arch.h: the limits of a GPU architecture that decide whether a kernel
 * config can run there: shared memory per block (with opt-in), threads per
 * block, registers. Read from the device (gpu/device.h), or taken from the
 * table of named architectures here when there is no GPU (CI compiles for
 * sm_90 without one). Figures from the CUDA C Programming Guide's table of
 * compute capabilities.
 */
#ifndef CT_CORE_ARCH_H
#define CT_CORE_ARCH_H

#include "core/error.h"

typedef struct arch {
  char name[16];             /* "sm_90" */
  int cc_major, cc_minor;    /* compute capability */
  int smem_optin_bytes;      /* dynamic shared memory per block, opted in */
  int smem_per_sm_bytes;     /* shared memory per SM */
  int max_threads_per_block; /* 1024 on every architecture with dp4a */
  int regs_per_sm;           /* 32-bit registers per SM */
  int regs_per_block;        /* 32-bit registers per block */
  int max_regs_per_thread;   /* 255 */
  int sm_count;              /* 0 for a named architecture (unknown) */
} arch;

/* The limits of a named architecture: "sm_75" ... "sm_120" (also "90",
 * "9.0"). CT_ERR_NOT_FOUND lists the names. */
ct_status arch_from_name(const char *name, arch *out, ct_err *err);

/* Fill name ("sm_XY") from cc_major and cc_minor. */
void arch_set_name(arch *a);

#endif
