/*
 * zpad.cuh: the border classes of a channels-last layer with a data zero
 * point and padding, written once in the common subset of C11 and CUDA C++
 * (as quant.cuh): core/quant.c folds a correction per class and output
 * channel into the params block, and conv_wgmma_nhwc.cuh adds it.
 *
 * Why: the wgmma templates load the data by TMA, which fills the padding
 * with zeros, where the convolution reads the zero point zx. An output
 * pixel whose window falls partly outside the input then sums x * w over
 * its taps inside only, and off[k] (quant.cuh) subtracts zx * w over all
 * taps: it lacks zx * (the sum of w[k] over the taps outside). Which taps
 * fall outside depends on the pixel's position along each axis only near
 * the edges, so the pixels fall into few classes: per axis, each output
 * position whose window starts before the input (lo of them) or ends past
 * it (hi) has a class of its own, and all the others share one, the
 * interior, whose correction is zero. Where lo + hi reaches the axis's
 * outputs, every position is its own class (no interior). A pixel's class
 * is (class along D x classes along H + class along H) x classes along W +
 * class along W, and its correction for channel k
 *   corr[class][k] = zx * sum over the taps outside of sum_c w[k][tap][c]
 * (modulo 2^32, as every offset), stored as CTZ words after the params
 * block's four arrays: word CTQ_HEADER + CTQ_ARRAYS * Kp + class * Kp + k.
 *
 * A layer has a table only when it is channels-last, groups 1, with a data
 * zero point and padding, and at most CTZ_MAX_CLASSES classes (a 3x3x3
 * layer with padding 1 has 27; a 7x7 stride-2 one with padding 3, 25).
 */
#ifndef CT_CORE_ZPAD_CUH
#define CT_CORE_ZPAD_CUH

#ifdef __CUDACC_RTC__
#define CTZ_FN static __device__ __forceinline__ constexpr
#else
#define CTZ_FN static inline
#endif

#define CTZ_MAX_CLASSES 1024

/* One axis: lo positions at the low edge and hi at the high one, each its
 * own class; n classes in all (lo + 1 + hi, or the positions, out, where
 * there is no interior, lo = out and hi = 0 then). */
typedef struct ctz_axis {
  int lo, hi, n;
} ctz_axis;

/* The axis of an input of in positions, out outputs, a kernel of ker taps
 * at stride str and dilation dil, pb positions of padding before it. */
CTZ_FN ctz_axis ctz_axis_make(int in, int out, int ker, int str, int dil, int pb) {
  /* tap 0 of output o reads o * str - pb: before the input for o < ceil(pb / str) */
  const int lo0 = pb > 0 ? (pb + str - 1) / str : 0;
  const int lo = lo0 < out ? lo0 : out;
  /* the last tap reads o * str - pb + (ker - 1) * dil: past it from ceil(x / str) */
  const int x = in + pb - (ker - 1) * dil;
  const int first_hi = x > 0 ? (x + str - 1) / str : 0;
  const int hi = first_hi < out ? out - first_hi : 0;
  ctz_axis a = {lo, hi, lo + 1 + hi};
  if (lo + hi >= out) {
    a.lo = out;
    a.hi = 0;
    a.n = out;
  }
  return a;
}

/* The class of output position o along a (out positions). */
CTZ_FN int ctz_axis_class(ctz_axis a, int out, int o) {
  return o < a.lo ? o : o >= out - a.hi ? a.lo + 1 + (o - (out - a.hi)) : a.lo;
}

/* The interior's class along a, or -1 where every position has its own. */
CTZ_FN int ctz_axis_interior(ctz_axis a, int out) {
  return a.lo < out ? a.lo : -1;
}

/* An output position of class c along a (the first, for the interior). */
CTZ_FN int ctz_axis_position(ctz_axis a, int out, int c) {
  return c <= a.lo ? c : out - a.hi + (c - a.lo - 1);
}

#endif
