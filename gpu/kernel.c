/*
 * kernel.c: loading a cubin and launching its kernel (see kernel.h).
 *
 * cudaLibraryLoadData takes the cubin as it is (SASS for this architecture:
 * no JIT) and gives a context-independent cudaKernel_t, which the runtime
 * accepts wherever it takes a kernel function pointer once cast to
 * const void * (cudaFuncSetAttribute, cudaLaunchKernel: CUDA 12.0+). More
 * than 48 KB of dynamic shared memory needs an explicit opt-in per kernel.
 * An instance marked pdl is launched with programmatic stream
 * serialization (cudaLaunchKernelExC), the others by cudaLaunchKernel.
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

  for (int i = 0; i < inst->n_args && i < INSTANCE_MAX_ARGS; i++) {
    const tmap_desc *t = inst->args[i] == ARG_DATA_TMAP      ? &inst->tmap
                         : inst->args[i] == ARG_WEIGHTS_TMAP ? &inst->wtmap
                         : inst->args[i] == ARG_OUT_TMAP     ? &inst->otmap
                                                             : NULL;
    if (!t) continue;
    /* the driver's entry points, without linking the driver library */
    const char *sym = t->im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled";
    void **fn = t->im2col ? &out->encode_im2col : &out->encode_tmap;
    if (*fn) continue;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    CUDA_TRY(err, cudaGetDriverEntryPointByVersion(sym, fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !*fn) {
      st = ERR_SET(err, CT_ERR_CUDA, "the driver has no %s (CUDA 12.0+)", sym);
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

/* Encode the tensor map t of ptr into map. */
static ct_status encode_tmap(const kernel *k, const tmap_desc *t, const void *ptr, CUtensorMap *map,
                             ct_err *err) {
  void *fn = t->im2col ? k->encode_im2col : k->encode_tmap;
  if (!fn)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "kernel_launch: a tensor map argument, but the kernel "
                                            "was loaded without the driver's encoder");
  if (t->rank < (t->im2col ? 3 : 1) || t->rank > TMAP_MAX_RANK)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: tensor map rank %d, accepted %d..%d", t->rank,
                   t->im2col ? 3 : 1, TMAP_MAX_RANK);
  if (t->elem_bytes != 1 && t->elem_bytes != 4)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: tensor map of %d-byte elements, accepted 1, 4",
                   t->elem_bytes);
  CUtensorMapSwizzle sw;
  switch (t->swizzle) {
  case 0: sw = CU_TENSOR_MAP_SWIZZLE_NONE; break;
  case 32: sw = CU_TENSOR_MAP_SWIZZLE_32B; break;
  case 64: sw = CU_TENSOR_MAP_SWIZZLE_64B; break;
  case 128: sw = CU_TENSOR_MAP_SWIZZLE_128B; break;
  default:
    return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: swizzle %d, accepted 0, 32, 64, 128",
                   t->swizzle);
  }
  const CUtensorMapDataType type =
      t->elem_bytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT32;
  cuuint64_t dims[TMAP_MAX_RANK], strides[TMAP_MAX_RANK];
  cuuint32_t box[TMAP_MAX_RANK], estr[TMAP_MAX_RANK];
  for (int i = 0; i < t->rank; i++) {
    dims[i] = t->dims[i];
    box[i] = t->box[i];
    estr[i] = t->elem_strides[i];
    if (i > 0) strides[i - 1] = t->strides[i - 1];
  }
  CUresult r;
  if (t->im2col) {
    PFN_cuTensorMapEncodeIm2col_v12000 encode = (PFN_cuTensorMapEncodeIm2col_v12000)fn;
    r = encode(map, type, (cuuint32_t)t->rank, (void *)ptr, dims, strides, t->lower, t->upper,
               t->channels, t->pixels, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
               CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  } else {
    PFN_cuTensorMapEncodeTiled_v12000 encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    r = encode(map, type, (cuuint32_t)t->rank, (void *)ptr, dims, strides, box, estr,
               CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  }
  if (r != CUDA_SUCCESS)
    return ERR_SET(err, CT_ERR_CUDA, "%s: error %d (rank %d, pointer %p: 16-byte aligned?)",
                   t->im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled", (int)r,
                   t->rank, ptr);
  return CT_OK;
}

ct_status kernel_launch(const kernel *k, const instance *inst, const kernel_io *io,
                        cudaStream_t stream, ct_err *err) {
  ct_status st = CT_OK;
  CUtensorMap maps[3];
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
      if ((st = encode_tmap(k, &inst->tmap, io->data, &maps[0], err))) return st;
      args[i] = (void *)&maps[0];
      break;
    case ARG_WEIGHTS_TMAP:
      if ((st = encode_tmap(k, &inst->wtmap, io->weights, &maps[1], err))) return st;
      args[i] = (void *)&maps[1];
      break;
    case ARG_OUT_TMAP:
      if ((st = encode_tmap(k, &inst->otmap, io->out, &maps[2], err))) return st;
      args[i] = (void *)&maps[2];
      break;
    default:
      return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: args[%d] is %d, accepted %d..%d", i,
                     (int)inst->args[i], ARG_DATA, ARG_OUT_TMAP);
    }
  }
  dim3 grid = {inst->grid[0], inst->grid[1], inst->grid[2]};
  dim3 block = {inst->block[0], inst->block[1], inst->block[2]};
  if (inst->pdl) {
    /* programmatic dependent launch: the kernel's griddepcontrol.wait
     * stands for the stream order before it touches memory */
    cudaLaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = inst->smem_bytes;
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    CUDA_TRY(err, cudaLaunchKernelExC(&cfg, (const void *)k->fn, args));
  } else {
    CUDA_TRY(err,
             cudaLaunchKernel((const void *)k->fn, grid, block, args, inst->smem_bytes, stream));
  }

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
