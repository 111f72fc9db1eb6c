/*
 * pack.c: NCHW <-> NCHW4c, OIHW <-> OIHW4o4i, NCHW <-> NHWC and OIHW <-> OHWI
 * (layouts in pack.h).
 *
 * Invariant: every element of a packed destination is written, the lanes
 * beyond C (and K) with zero, so a packed tensor never carries stale bytes
 * into a dp4a; unpacking reads only the real lanes. Each loop walks its
 * destination in order, so the writes are contiguous, and computes the
 * source index directly. The channels-last conversions are one batched
 * transpose, walked in tiles so that the strided side stays in cache too.
 * Elements of any size work; 1 and 4 bytes (int8 data, int32 output) take a
 * fast path. Cost: one pass over the tensor, no allocation.
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

/* Tile edge of the transpose: 32 x 32 elements of up to 4 bytes are 4 KB of
 * source rows and 4 KB of destination rows, well inside L1, so each source
 * cache line is fetched once rather than once per element. */
#define TILE 32

/* dst[b][j][i] = src[b][i][j] for b < n, i < rows, j < cols. */
static inline void transpose_tiles(const void *src, void *dst, size_t elem_bytes, int64_t n,
                                   int64_t rows, int64_t cols) {
  for (int64_t b = 0; b < n; b++) {
    int64_t base = b * rows * cols;
    for (int64_t j0 = 0; j0 < cols; j0 += TILE)
      for (int64_t i0 = 0; i0 < rows; i0 += TILE) {
        int64_t j1 = j0 + TILE < cols ? j0 + TILE : cols;
        int64_t i1 = i0 + TILE < rows ? i0 + TILE : rows;
        for (int64_t j = j0; j < j1; j++)
          for (int64_t i = i0; i < i1; i++)
            copy_elem(dst, base + j * rows + i, src, base + i * cols + j, elem_bytes);
      }
  }
}

/* transpose_tiles with the element size a constant in the fast paths, so
 * that copy_elem's switch folds away out of the inner loop. */
static void transpose(const void *src, void *dst, size_t elem_bytes, int64_t n, int64_t rows,
                      int64_t cols) {
  switch (elem_bytes) {
  case 1:
    transpose_tiles(src, dst, 1, n, rows, cols);
    break;
  case 4:
    transpose_tiles(src, dst, 4, n, rows, cols);
    break;
  default:
    transpose_tiles(src, dst, elem_bytes, n, rows, cols);
  }
}

void pack_nhwc(const void *src, void *dst, size_t elem_bytes, int64_t n, int64_t c,
               int64_t spatial) {
  transpose(src, dst, elem_bytes, n, c, spatial);
}

void unpack_nhwc(const void *src, void *dst, size_t elem_bytes, int64_t n, int64_t c,
                 int64_t spatial) {
  transpose(src, dst, elem_bytes, n, spatial, c);
}

void pack_ohwi(const int8_t *src, int8_t *dst, int64_t k, int64_t c, int64_t spatial) {
  transpose(src, dst, 1, k, c, spatial);
}

void unpack_ohwi(const int8_t *src, int8_t *dst, int64_t k, int64_t c, int64_t spatial) {
  transpose(src, dst, 1, k, spatial, c);
}
