/*
 * reference.h: the CPU reference convolution, the ground truth that every
 * kernel is checked against (exact int32 equality).
 *
 * int8 data x int8 weights -> int32, for conv2d and conv3d in every layout of
 * ct_layout, with per-dimension kernel size, stride, padding and dilation.
 * Written for obviousness first and speed second: the inner loop runs along
 * the output row so that it vectorises, which keeps a ResNet-50 layer at
 * batch 1 well under a second. The packed (NCHW4c) and channels-last (NHWC)
 * layouts are converted to plain, computed plain and the output converted
 * back, so that every layout gives the plain layout's numbers exactly.
 */
#ifndef CT_CORE_REFERENCE_H
#define CT_CORE_REFERENCE_H

#include <stdint.h>

#include "core/workload.h"

/* out = conv(data, weights) for a valid workload w without epilogue values
 * (int32 output, no zero points or bias), every tensor in w's layout (NCHW /
 * OIHW, NCHW4c / OIHW4o4i, or NHWC / OHWI; sizes: workload_data_elems,
 * _weight_elems, _out_elems). Sums wrap modulo 2^32,
 * as the GPU's dp4a does. Returns CT_OK, CT_ERR_INVALID_ARG (w NULL, or with
 * an epilogue), CT_ERR_INVALID_WORKLOAD (w not valid; message on err) or
 * CT_ERR_NO_MEMORY (the scratch). */
ct_status reference_conv(const ct_workload *w, const int8_t *data, const int8_t *weights,
                         int32_t *out, ct_err *err);

/* The quantized formula of ct_epilogue computed directly, for any valid w:
 * data (int8 or uint8), weights, residual (out type, remapped output shape;
 * NULL without one) and out (workload_out_elems of workload_out_elem_bytes)
 * in w's layouts; q as quant_check wants it (NULL when w has no params). */
ct_status reference_qconv(const ct_workload *w, const ct_quant *q, const void *data,
                          const int8_t *weights, const void *residual, void *out, ct_err *err);
/* The same with the conv and the epilogue on threads threads (0:
 * reference_conv_plain's): the same bytes whatever the count. */
ct_status reference_qconv_threads(const ct_workload *w, const ct_quant *q, const void *data,
                                  const int8_t *weights, const void *residual, void *out,
                                  int threads, ct_err *err);

/* The plain-layout kernel behind both, on the normalised geometry: data
 * [N][C][D][H][W] and weights [K][C/G][KD][KH][KW] as int16 (zero points
 * already taken off; G = g->g groups, output channel k reading input
 * channels k / (K/G) x C/G onwards), out [N][K][OD][OH][OW], sums modulo 2^32.
 * On threads threads (at most 32, one an output plane at most; 0: by the
 * work and the online CPUs): the same sums bit for bit, whatever the count. */
void reference_conv_plain(const geom3 *g, const int16_t *data, const int16_t *weights, int32_t *out,
                          int threads);

#endif
