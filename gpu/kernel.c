/*
 * kernel.c: loading a cubin and launching its kernel (see kernel.h).
 *
 * cudaLibraryLoadData takes the cubin as it is (SASS for this architecture:
 * no JIT) and gives a context-independent cudaKernel_t, which the runtime
 * accepts wherever it takes a kernel function pointer once cast to
 * const void * (cudaFuncSetAttribute, cudaLaunchKernel: CUDA 12.0+). More
 * than 48 KB of dynamic shared memory needs an explicit opt-in per kernel.
 * A launch only enqueues: no synchronisation here, so that the runner times
 * back-to-back launches; a failed call's error is cleared from the runtime's
 * last-error slot once reported, so that the next config does not inherit it.
 */
#include "gpu/kernel.h"

#include <limits.h>
#include <string.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "gpu/cuda_check.h"

/* Dynamic shared memory every kernel may use without opting in. */
#define SMEM_DEFAULT_BYTES (48 * 1024)

ct_status kernel_load(const void *cubin, size_t size, const instance *inst, kernel *out,
                      ct_err *err) {
  ct_status st = CT_OK;
  if (!out) return ERR_SET(err, CT_ERR_INVALID_ARG, "kernel_load: NULL out");
  memset(out, 0, sizeof *out);
  if (!cubin || size == 0 || !inst)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "kernel_load: NULL or empty cubin, or NULL instance");
  if (!memchr(inst->kernel_name, '\0', sizeof inst->kernel_name) || !inst->kernel_name[0])
    return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: kernel_name is empty or not NUL-terminated");
  if (inst->smem_bytes > INT_MAX)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: smem_bytes %zu, accepted 0..%d",
                   inst->smem_bytes, INT_MAX);

  for (int i = 0; i < inst->n_args && i < INSTANCE_MAX_ARGS; i++)
    if (inst->args[i] == ARG_DATA_TMAP && !out->encode_tmap) {
      /* the driver's entry point, without linking the driver library */
      enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
      CUDA_TRY(err, cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &out->encode_tmap,
                                                     12000, cudaEnableDefault, &found));
      if (found != cudaDriverEntryPointSuccess || !out->encode_tmap) {
        st = ERR_SET(err, CT_ERR_CUDA, "the driver has no cuTensorMapEncodeTiled (CUDA 12.0+)");
        goto done;
      }
    }
  CUDA_TRY(err, cudaLibraryLoadData(&out->lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
  CUDA_TRY(err, cudaLibraryGetKernel(&out->fn, out->lib, inst->kernel_name));
  if (inst->smem_bytes > SMEM_DEFAULT_BYTES)
    CUDA_TRY(err, cudaFuncSetAttribute((const void *)out->fn,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)inst->smem_bytes));
  out->smem_bytes = inst->smem_bytes;

done:
  if (st != CT_OK) {
    err_prefix(err, "kernel %s", inst->kernel_name);
    (void)cudaGetLastError();
    kernel_unload(out);
  }
  return st;
}

/* Encode inst's tensor map of io->data into map. */
static ct_status encode_tmap(const kernel *k, const instance *inst, const kernel_io *io,
                             CUtensorMap *map, ct_err *err) {
  const tmap_desc *t = &inst->tmap;
  if (!k->encode_tmap)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "kernel_launch: a tensor map argument, but the kernel "
                                            "was loaded without the driver's encoder");
  if (t->rank < 1 || t->rank > TMAP_MAX_RANK)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: tensor map rank %d, accepted 1..%d", t->rank,
                   TMAP_MAX_RANK);
  cuuint64_t dims[TMAP_MAX_RANK], strides[TMAP_MAX_RANK];
  cuuint32_t box[TMAP_MAX_RANK], estr[TMAP_MAX_RANK];
  for (int i = 0; i < t->rank; i++) {
    dims[i] = t->dims[i];
    box[i] = t->box[i];
    estr[i] = t->elem_strides[i];
    if (i > 0) strides[i - 1] = t->strides[i - 1];
  }
  PFN_cuTensorMapEncodeTiled_v12000 encode = (PFN_cuTensorMapEncodeTiled_v12000)k->encode_tmap;
  CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT32, (cuuint32_t)t->rank, (void *)io->data,
                      dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return ERR_SET(err, CT_ERR_CUDA,
                   "cuTensorMapEncodeTiled: error %d (rank %d, data %p: 16-byte aligned?)", (int)r,
                   t->rank, io->data);
  return CT_OK;
}

ct_status kernel_launch(const kernel *k, const instance *inst, const kernel_io *io,
                        cudaStream_t stream, ct_err *err) {
  ct_status st = CT_OK;
  CUtensorMap map;
  if (!k || !k->fn || !inst || !io)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "kernel_launch: NULL or unloaded kernel, or NULL instance or io");
  if (inst->n_args < 0 || inst->n_args > INSTANCE_MAX_ARGS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: n_args is %d, accepted 0..%d", inst->n_args,
                   INSTANCE_MAX_ARGS);
  /* The opt-in was made at load time for that kernel's instance; a larger
   * request would fail inside the launch with a vaguer message. */
  if (inst->smem_bytes > SMEM_DEFAULT_BYTES && inst->smem_bytes > k->smem_bytes)
    return ERR_SET(
        err, CT_ERR_INVALID_ARG,
        "instance: %zu bytes of dynamic shared memory, but the kernel was loaded for %zu",
        inst->smem_bytes, k->smem_bytes);

  /* cudaLaunchKernel copies each argument from the address in args[i]:
   * io's fields hold the pointer values for it. */
  void *args[INSTANCE_MAX_ARGS];
  for (int i = 0; i < inst->n_args; i++) {
    switch (inst->args[i]) {
    case ARG_DATA:
      args[i] = (void *)&io->data;
      break;
    case ARG_WEIGHTS:
      args[i] = (void *)&io->weights;
      break;
    case ARG_OUT:
      args[i] = (void *)&io->out;
      break;
    case ARG_PARAMS:
      args[i] = (void *)&io->params;
      break;
    case ARG_RESIDUAL:
      args[i] = (void *)&io->residual;
      break;
    case ARG_DATA_TMAP:
      if ((st = encode_tmap(k, inst, io, &map, err))) return st;
      args[i] = (void *)&map;
      break;
    default:
      return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: args[%d] is %d, accepted %d..%d", i,
                     (int)inst->args[i], ARG_DATA, ARG_DATA_TMAP);
    }
  }
  dim3 grid = {inst->grid[0], inst->grid[1], inst->grid[2]};
  dim3 block = {inst->block[0], inst->block[1], inst->block[2]};
  CUDA_TRY(err, cudaLaunchKernel((const void *)k->fn, grid, block, args, inst->smem_bytes, stream));

done:
  if (st != CT_OK) {
    err_prefix(err, "kernel %.*s grid %ux%ux%u block %ux%ux%u smem %zu",
               (int)sizeof inst->kernel_name, inst->kernel_name, grid.x, grid.y, grid.z, block.x,
               block.y, block.z, inst->smem_bytes);
    (void)cudaGetLastError();
  }
  return st;
}

void kernel_unload(kernel *k) {
  if (!k) return;
  /* An unload failure leaves nothing the caller could do: ignored. */
  if (k->lib) (void)cudaLibraryUnload(k->lib);
  memset(k, 0, sizeof *k);
}
