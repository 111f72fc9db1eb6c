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

/* ---- one convolution kept, for a chain of them (bench/model_bench.c) ----
 * cudnn_side_time is cudnn_conv_open + cudnn_conv_search + cudnn_conv_close.
 * A model's chain keeps each node's conv with the algorithm its search
 * found, bound to tensors of its own, and launches them one after another
 * (captured into one graph by bench_time). */
typedef struct cudnn_conv cudnn_conv;

/* Describe w (plain, as for cudnn_side_time) in config kind. When cuDNN
 * cannot take it, *out is NULL and why says why: CT_OK. Owned:
 * cudnn_conv_close. The conv borrows c: close it before c. */
ct_status cudnn_conv_open(cudnn_side *c, const ct_workload *w, cudnn_side_kind kind,
                          cudnn_conv **out, char *why, size_t why_size, ct_err *err);

/* Try every algorithm on c's scratch tensors (random) as cudnn_side_time
 * does and keep the fastest: *us (BENCH_NONE when none runs, with why),
 * its name into algo. The conv stays bound to the scratch: bind it before
 * launching it elsewhere. */
ct_status cudnn_conv_search(cudnn_conv *cv, const bench_timer *t, double *us, char *algo,
                            size_t algo_size, char *why, size_t why_size, ct_err *err);

/* Take like's algorithm (found by a search of the same workload and kind)
 * instead of searching again. */
void cudnn_conv_use_algo(cudnn_conv *cv, const cudnn_conv *like);

/* The workload the conv was opened with (borrowed). */
const ct_workload *cudnn_conv_workload(const cudnn_conv *cv);

/* Bytes of its input (x), weights (w), output (y), and the workspace its
 * algorithm needs (0 before a search found one). */
typedef enum cudnn_conv_tensor {
  CUDNN_CONV_X,
  CUDNN_CONV_W,
  CUDNN_CONV_Y,
  CUDNN_CONV_WS
} cudnn_conv_tensor;
size_t cudnn_conv_bytes(const cudnn_conv *cv, cudnn_conv_tensor which);

/* Bind device tensors (x and w of cudnn_conv_bytes, y likewise, ws of at
 * least the workspace) and the scale of the output: y = alpha x conv(x, w). */
void cudnn_conv_bind(cudnn_conv *cv, const void *x, const void *w, void *y, void *ws, double alpha);

/* One launch of the bound conv with its algorithm, on its side's stream; a
 * bench_launch_fn (user: the cudnn_conv). */
ct_status cudnn_conv_launch(void *user, struct CUstream_st *stream, ct_err *err);

/* Random contents in kind's type (int8 bytes; fp16 values in [-1, 1] in
 * steps of 1/4) for bytes of device memory at dst. */
ct_status cudnn_side_fill(cudnn_side *c, void *dst, size_t bytes, cudnn_side_kind kind,
                          ct_err *err);

/* The root mean square of a value cudnn_side_fill writes in kind: the scale
 * that keeps a chain's activations in range (alpha = 1 / (rms sqrt(C x
 * kernel volume))). */
double cudnn_side_fill_rms(cudnn_side_kind kind);

/* Release the conv; NULL is accepted. */
void cudnn_conv_close(cudnn_conv *cv);

#endif
