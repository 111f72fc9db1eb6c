/*
 * cudnn_side.h: what a user would run instead of convtune: cuDNN's
 * convolution forward (the legacy API, still in cuDNN 9's libcudnn) in three
 * configs, each with every forward algorithm cuDNN offers tried and the
 * fastest kept, timed by bench_time exactly as convtune is.
 *
 * cuDNN is optional at build time (CT_HAVE_CUDNN): without it every call
 * here says "cuDNN not built in" and the benchmark's cuDNN columns are null.
 */
#ifndef CT_BENCH_CUDNN_SIDE_H
#define CT_BENCH_CUDNN_SIDE_H

#include <stddef.h>

#include "bench/bench.h"

typedef enum cudnn_side_kind {
  CUDNN_SIDE_INT8,    /* INT8_CONFIG: x, w, y int8 NHWC, int32 compute; C and K % 4 == 0 */
  CUDNN_SIDE_INT8X32, /* INT8x32_CONFIG: NCHW_VECT_C, 32 channels per vector; C and K % 32 == 0 */
  CUDNN_SIDE_FP16     /* x, w, y half NHWC, float accumulate, CUDNN_TENSOR_OP_MATH */
} cudnn_side_kind;

typedef struct cudnn_side cudnn_side;

/* 1 when cuDNN was found at build time. */
int cudnn_side_built(void);

/* A cuDNN handle bound to stream, with grow-only buffers for the tensors and
 * the workspace. Owned: cudnn_side_close. CT_ERR_UNSUPPORTED when cuDNN is
 * not built in; CT_ERR_CUDA when cudnnCreate fails (message on err). */
ct_status cudnn_side_open(struct CUstream_st *stream, cudnn_side **out, ct_err *err);

/* cuDNN's version at run time, "9.14.0". Borrowed: valid until close. */
const char *cudnn_side_version(const cudnn_side *c);

/* Release everything; NULL is accepted. */
void cudnn_side_close(cudnn_side *c);

/* Time w (plain: channels as cuDNN is to see them, already padded by the
 * caller where a config needs it) in config kind: every algorithm, the best
 * per-launch time into *us and its name into algo (size algo_size). When
 * none runs, *us = BENCH_NONE and why says why (size why_size); that is
 * CT_OK. An error status only for what breaks the CUDA context. */
ct_status cudnn_side_time(cudnn_side *c, const bench_timer *t, const ct_workload *w,
                          cudnn_side_kind kind, double *us, char *algo, size_t algo_size, char *why,
                          size_t why_size, ct_err *err);

#endif
