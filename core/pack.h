/*
 * pack.h: conversion between the plain layouts and the channel-packed and
 * channels-last ones.
 *
 *   data / output:  [N][C][S]  <->  [N][ceil(C/4)][S][4]        (NCHW <-> NCHW4c)
 *   weights:        [K][C][S]  <->  [ceil(K/4)][ceil(C/4)][S][4o][4i]
 *                                                            (OIHW <-> OIHW4o4i)
 *   data / output:  [N][C][S]  <->  [N][S][C]                   (NCHW <-> NHWC)
 *   weights:        [K][C][S]  <->  [K][S][C]                   (OIHW <-> OHWI)
 * S is the flattened spatial extent (H*W, or D*H*W; the kernel volume for
 * weights). Packing zero-fills the lanes beyond C (and K), so a 3-channel stem
 * packs into 4 channels whose fourth is zero and the convolution is
 * unchanged; unpacking drops those lanes. Channels-last is unpadded: the same
 * elements in another order. src and dst must not overlap; any elem_bytes
 * works (1 and 4 are the fast paths). Cost: one pass over the tensor.
 */
#ifndef CT_CORE_PACK_H
#define CT_CORE_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/workload.h"

/* Channels rounded up to the packing width of 4. */
int64_t pack_round4(int64_t c);

/* Data or output, elements of elem_bytes (1 for int8, 4 for int32).
 * dst holds n * pack_round4(c) * spatial elements. */
void pack_nc4c(const void *src, void *dst, size_t elem_bytes, int64_t n, int64_t c,
               int64_t spatial);
/* The inverse: dst holds n * c * spatial elements. */
void unpack_nc4c(const void *src, void *dst, size_t elem_bytes, int64_t n, int64_t c,
                 int64_t spatial);

/* Weights: dst holds pack_round4(k) * pack_round4(c) * spatial int8. */
void pack_oi4o4i(const int8_t *src, int8_t *dst, int64_t k, int64_t c, int64_t spatial);
/* The inverse: dst holds k * c * spatial int8. */
void unpack_oi4o4i(const int8_t *src, int8_t *dst, int64_t k, int64_t c, int64_t spatial);

/* Data or output to channels-last: [n][c][spatial] -> [n][spatial][c], elements
 * of elem_bytes; both hold n * c * spatial elements. */
void pack_nhwc(const void *src, void *dst, size_t elem_bytes, int64_t n, int64_t c,
               int64_t spatial);
/* The inverse: [n][spatial][c] -> [n][c][spatial]. */
void unpack_nhwc(const void *src, void *dst, size_t elem_bytes, int64_t n, int64_t c,
                 int64_t spatial);

/* Weights to channels-last: [k][c][spatial] (OIHW) -> [k][spatial][c] (OHWI),
 * int8; both hold k * c * spatial. */
void pack_ohwi(const int8_t *src, int8_t *dst, int64_t k, int64_t c, int64_t spatial);
/* The inverse: OHWI -> OIHW. */
void unpack_ohwi(const int8_t *src, int8_t *dst, int64_t k, int64_t c, int64_t spatial);

#endif
