/*
 * pack.c: NCHW <-> NCHW4c and OIHW <-> OIHW4o4i (layouts in pack.h).
 *
 * Invariant: every element of a packed destination is written, the lanes
 * beyond C (and K) with zero, so a packed tensor never carries stale bytes
 * into a dp4a; unpacking reads only the real lanes. Each loop walks its
 * destination in order, so the writes are contiguous, and computes the
 * source index directly. Elements of any size work; 1 and 4 bytes (int8 data,
 * int32 output) take a fast path. Cost: one pass over the tensor, no allocation.
 */
#include "core/pack.h"

#include <string.h>

int64_t pack_round4(int64_t c) {
  return (c + 3) / 4 * 4;
}

/* Copy element si of src to element di of dst; a switch rather than a
 * memcpy of a variable size so that each case compiles to one move. */
static void copy_elem(void *dst, int64_t di, const void *src, int64_t si, size_t elem_bytes) {
  switch (elem_bytes) {
  case 1:
    ((int8_t *)dst)[di] = ((const int8_t *)src)[si];
    break;
  case 4:
    ((int32_t *)dst)[di] = ((const int32_t *)src)[si];
    break;
  default:
    memcpy((char *)dst + di * (int64_t)elem_bytes, (const char *)src + si * (int64_t)elem_bytes,
           elem_bytes);
  }
}

static void zero_elem(void *dst, int64_t di, size_t elem_bytes) {
  memset((char *)dst + di * (int64_t)elem_bytes, 0, elem_bytes);
}

void pack_nc4c(const void *src, void *dst, size_t elem_bytes, int64_t n, int64_t c,
               int64_t spatial) {
  int64_t cb_n = pack_round4(c) / 4;
  int64_t di = 0; /* dst index of (b, cb, s, lane), walked in order */
  for (int64_t b = 0; b < n; b++)
    for (int64_t cb = 0; cb < cb_n; cb++)
      for (int64_t s = 0; s < spatial; s++)
        for (int64_t lane = 0; lane < 4; lane++, di++) {
          int64_t ch = cb * 4 + lane;
          if (ch < c)
            copy_elem(dst, di, src, (b * c + ch) * spatial + s, elem_bytes);
          else
            zero_elem(dst, di, elem_bytes);
        }
}

void unpack_nc4c(const void *src, void *dst, size_t elem_bytes, int64_t n, int64_t c,
                 int64_t spatial) {
  int64_t cb_n = pack_round4(c) / 4;
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t s = 0; s < spatial; s++)
        copy_elem(dst, (b * c + ch) * spatial + s, src,
                  ((b * cb_n + ch / 4) * spatial + s) * 4 + ch % 4, elem_bytes);
}

void pack_oi4o4i(const int8_t *src, int8_t *dst, int64_t k, int64_t c, int64_t spatial) {
  int64_t kb_n = pack_round4(k) / 4, cb_n = pack_round4(c) / 4;
  int64_t di = 0; /* dst index of (kb, cb, s, o, i), walked in order */
  for (int64_t kb = 0; kb < kb_n; kb++)
    for (int64_t cb = 0; cb < cb_n; cb++)
      for (int64_t s = 0; s < spatial; s++)
        for (int64_t o = 0; o < 4; o++)
          for (int64_t i = 0; i < 4; i++, di++) {
            int64_t ko = kb * 4 + o, ci = cb * 4 + i;
            dst[di] = (ko < k && ci < c) ? src[(ko * c + ci) * spatial + s] : 0;
          }
}

void unpack_oi4o4i(const int8_t *src, int8_t *dst, int64_t k, int64_t c, int64_t spatial) {
  int64_t cb_n = pack_round4(c) / 4;
  for (int64_t ko = 0; ko < k; ko++)
    for (int64_t ci = 0; ci < c; ci++)
      for (int64_t s = 0; s < spatial; s++)
        dst[(ko * c + ci) * spatial + s] =
            src[(((ko / 4 * cb_n + ci / 4) * spatial + s) * 4 + ko % 4) * 4 + ci % 4];
}
