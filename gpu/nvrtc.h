/*
 * nvrtc.h: compiling an instance to a cubin with NVRTC.
 *
 * The program is the template's embedded source with the embedded headers;
 * the options are the instance's -D list plus the architecture
 * (--gpu-architecture=sm_XY, so the result is SASS, loadable without a JIT
 * step) and -std=c++17. A compile error is not an engine error: the status
 * is CT_ERR_NVRTC and the program log is kept on the result, so that the
 * tuner stores it as a COMPILE_ERROR outcome. NVRTC needs no GPU. It
 * serialises inside a process, so a parallel builder uses processes.
 */
#ifndef CT_GPU_NVRTC_H
#define CT_GPU_NVRTC_H

#include <stddef.h>

#include "core/arch.h"
#include "templates/template.h"

typedef struct cubin {
  void *data; /* the cubin, owned (cubin_free) */
  size_t size;
  char *log;         /* NVRTC's program log, owned, "" when empty; kept on failure too */
  double compile_ms; /* wall time of nvrtcCompileProgram */
} cubin;

/* Compile inst for architecture a into out (zeroed first). CT_OK; or
 * CT_ERR_NVRTC (compile error: out->log holds the log, err a one-line
 * excerpt); CT_ERR_NO_MEMORY. */
ct_status nvrtc_compile(const instance *inst, const arch *a, cubin *out, ct_err *err);

/* nvrtc_compile's flags. NVRTC_NO_DRIVER_CACHE: --no-cache, so that NVRTC
 * never loads the CUDA driver. Without it, a process's first compile loads
 * the driver and starts it (cuInit) to reach the driver's compute cache
 * (~/.nv/ComputeCache), which keeps every compile's result for a later
 * process compiling the same source. */
enum { NVRTC_NO_DRIVER_CACHE = 1 };

/* nvrtc_compile with flags (a set of the NVRTC_ values above). */
ct_status nvrtc_compile_flags(const instance *inst, const arch *a, unsigned flags, cubin *out,
                              ct_err *err);

/* Compile source (which may include the embedded headers, e.g. quant.cuh) under name with options
 * (n_options strings, e.g. "-DN=5"), plus the architecture and -std=c++17 exactly as nvrtc_compile
 * adds them, into out (zeroed first). Same statuses and log. */
ct_status nvrtc_compile_source(const char *name, const char *source, const char *const *options,
                               int n_options, const arch *a, cubin *out, ct_err *err);

/* Free what a cubin owns and zero it; NULL is accepted. */
void cubin_free(cubin *c);

/* NVRTC's version, "13.0". Static storage. */
const char *nvrtc_version_string(void);

#endif
