/*
 * kernel.h: loading a cubin (cudaLibraryLoadData: no JIT, about 0.14 ms on
 * an H200) and launching its kernel with an instance's geometry. A launch
 * is asynchronous on the caller's stream; launch errors come back at once,
 * execution errors at the next synchronisation, as CUDA reports them.
 */
#ifndef CT_GPU_KERNEL_H
#define CT_GPU_KERNEL_H

#include <stddef.h>

#include <cuda_runtime.h>

#include "templates/template.h"

typedef struct kernel {
  cudaLibrary_t lib;
  cudaKernel_t fn;
  size_t smem_bytes; /* dynamic shared memory it was set up for */
  void *encode_tmap;   /* the driver's cuTensorMapEncodeTiled, for a tiled tensor map argument */
  void *encode_im2col; /* its cuTensorMapEncodeIm2col, for an im2col one */
} kernel;

/* Load cubin (size bytes) and find inst's kernel in it; sets the dynamic
 * shared memory limit when inst needs more than 48 KB. Owned: kernel_unload. */
ct_status kernel_load(const void *cubin, size_t size, const instance *inst, kernel *out,
                      ct_err *err);

/* The device pointers a kernel may take, one per kernel_arg. */
typedef struct kernel_io {
  const void *data, *weights;
  void *out;
  const void *params;   /* the epilogue's params block (NULL when none) */
  const void *residual; /* NULL when none */
} kernel_io;

/* Launch k with inst's grid, block and shared memory on stream; inst's
 * arguments are taken from io (a tensor map is encoded from io->data and
 * inst->tmap, io->weights and inst->wtmap, or io->out and inst->otmap, on
 * the host: a few microseconds). */
ct_status kernel_launch(const kernel *k, const instance *inst, const kernel_io *io,
                        cudaStream_t stream, ct_err *err);

/* Unload; a zeroed kernel is accepted. */
void kernel_unload(kernel *k);

#endif
