/*
 * convtune.h: the whole public contract of libconvtune.
 *
 * libconvtune serves tuned int8 convolution kernels to an inference runtime.
 * This header holds the status codes (one X-macro list generates the enum,
 * the names and the messages), the version, and the workload descriptor that
 * every call takes. The dispatch calls (ct_open, ct_conv2d, ...) join it as
 * they are built. Nothing here prints, exits or allocates behind the caller's
 * back; every pointer a call returns says who owns it.
 */
#ifndef CONVTUNE_CONVTUNE_H
#define CONVTUNE_CONVTUNE_H

#include <stdint.h>

#include "convtune/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: CT_OK is 0, errors are negative and never renumbered. */
#define CT_STATUS_LIST(X)                                                                          \
  X(CT_OK, 0, "success")                                                                           \
  X(CT_ERR_INVALID_ARG, -1, "invalid argument")                                                    \
  X(CT_ERR_INVALID_WORKLOAD, -2, "invalid workload")                                               \
  X(CT_ERR_UNSUPPORTED, -3, "unsupported")                                                         \
  X(CT_ERR_PARSE, -4, "malformed input")                                                           \
  X(CT_ERR_NO_MEMORY, -5, "out of memory")                                                         \
  X(CT_ERR_IO, -6, "file error")                                                                   \
  X(CT_ERR_NOT_FOUND, -7, "not found")                                                             \
  X(CT_ERR_CUDA, -8, "CUDA error")                                                                 \
  X(CT_ERR_NVRTC, -9, "NVRTC error")                                                               \
  X(CT_ERR_DB, -10, "database error")                                                              \
  X(CT_ERR_NO_DEVICE, -11, "no CUDA device")                                                       \
  X(CT_ERR_INTERNAL, -12, "internal error")

typedef enum ct_status {
#define CT_STATUS_ENUM(name, value, msg) name = value,
  CT_STATUS_LIST(CT_STATUS_ENUM)
#undef CT_STATUS_ENUM
} ct_status;

/* A static English message for a status ("invalid workload"); never NULL. */
const char *ct_strerror(ct_status status);
/* The status's enum name ("CT_ERR_INVALID_WORKLOAD"); never NULL. */
const char *ct_status_name(ct_status status);
/* The library's version, "MAJOR.MINOR.PATCH"; static storage. */
const char *ct_version(void);

/* ---- Workloads ---------------------------------------------------------
 * A workload is one convolution: op, shapes, dtypes and layouts; everything
 * but the schedule. Spatial arrays are ordered outermost first: (H, W) for
 * conv2d in elements [0..1], (D, H, W) for conv3d in [0..2]; unused entries
 * are ignored. The output size per dimension is
 *   out = (in + pad_before + pad_after - dilation * (kernel - 1) - 1) / stride + 1.
 */
typedef enum ct_op { CT_OP_CONV2D = 2, CT_OP_CONV3D = 3 } ct_op;

/* Layouts of (data, weights, output). In 3D each gains a D after C / I.
 *   CT_LAYOUT_NCHW:   data NCHW,   weights OIHW,     output NCHW.
 *   CT_LAYOUT_NCHW4C: data NCHW4c, weights OIHW4o4i, output NCHW4c: channels
 *                     in chunks of 4 innermost, so one 32-bit load carries the
 *                     4 int8 that a dp4a consumes; C and K multiples of 4. */
typedef enum ct_layout { CT_LAYOUT_NCHW = 0, CT_LAYOUT_NCHW4C = 1 } ct_layout;

typedef enum ct_dtype { CT_DTYPE_INT8 = 0, CT_DTYPE_UINT8 = 1, CT_DTYPE_INT32 = 2 } ct_dtype;

#define CT_MAX_SPATIAL 3

typedef struct ct_workload {
  ct_op op;
  ct_layout layout;
  ct_dtype data_type;   /* int8 */
  ct_dtype weight_type; /* int8 */
  ct_dtype out_type;    /* int32 (requantized int8 output comes later) */
  int n;                /* batch */
  int c;                /* input channels */
  int k;                /* output channels */
  int groups;           /* 1: grouped convolution is not supported */
  int in[CT_MAX_SPATIAL];
  int kernel[CT_MAX_SPATIAL];
  int stride[CT_MAX_SPATIAL];
  int pad_before[CT_MAX_SPATIAL];
  int pad_after[CT_MAX_SPATIAL];
  int dilation[CT_MAX_SPATIAL];
} ct_workload;

#ifdef __cplusplus
}
#endif
#endif
