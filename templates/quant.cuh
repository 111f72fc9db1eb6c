/*
 * quant.cuh: the integer arithmetic of the quantized epilogues, written once
 * in the common subset of C11 and CUDA C++ and compiled by both: the
 * templates (NVRTC, embedded) and the host (core/quant.c, the CPU reference
 * and the tests), so that GPU and CPU agree bit for bit by construction.
 *
 * rescale is gemmlowp's / TFLite's MultiplyByQuantizedMultiplier (double
 * rounding): SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT.
 * TFLite leaves a left shift that overflows int32 undefined; here it
 * saturates. Sums that may exceed int32 (zero point + two rescaled terms)
 * are int64 and clamped; the accumulator side wraps modulo 2^32 (uint32).
 *
 * The params block (ct_make_params; int32 words, Kp = K rounded up to 4):
 *   [CTQ_HEADER words of header][off: Kp][mult: Kp][shift: Kp][zw: Kp]
 * off[k] folds the bias and the zero-point corrections:
 *   bias[k] - zx * sum(w[k]) + R * zx * zw[k]   (R = packed C x kernel volume)
 * so that the kernel computes v = acc + off[k] - zw[k] * xsum, where acc sums
 * raw data x weights with padding (and padded channels) reading zx, and xsum
 * is the window's sum of the raw data.
 */
#ifndef CT_TEMPLATES_QUANT_CUH
#define CT_TEMPLATES_QUANT_CUH

#ifdef __CUDACC_RTC__
#define CTQ_FN static __device__ __forceinline__
typedef int ctq_i32;
typedef unsigned ctq_u32;
typedef long long ctq_i64;
#else
#include <stdint.h>
#define CTQ_FN static inline
typedef int32_t ctq_i32;
typedef uint32_t ctq_u32;
typedef int64_t ctq_i64;
#endif

/* Header words of the params block. */
#define CTQ_PAD_WORD  0 /* the data zero point in all 4 byte lanes: what padding reads */
#define CTQ_OUT_ZP    1
#define CTQ_LO        2
#define CTQ_HI        3
#define CTQ_MULT      4 /* per-tensor multiplier and shift */
#define CTQ_SHIFT     5
#define CTQ_RES_MULT  6
#define CTQ_RES_SHIFT 7
#define CTQ_RES_ZP    8
#define CTQ_HEADER    12 /* 48 bytes: the arrays start 16-byte aligned */
/* The arrays, each Kp words from CTQ_HEADER + i * Kp. */
#define CTQ_OFF    0
#define CTQ_MULTS  1
#define CTQ_SHIFTS 2
#define CTQ_ZW     3
#define CTQ_ARRAYS 4

#define CTQ_INT32_MIN (-2147483647 - 1)
#define CTQ_INT32_MAX 2147483647

/* gemmlowp SaturatingRoundingDoublingHighMul: round(a * b / 2^31), the one
 * overflowing case (INT32_MIN * INT32_MIN) saturated. */
CTQ_FN ctq_i32 ctq_srdhm(ctq_i32 a, ctq_i32 b) {
  if (a == CTQ_INT32_MIN && b == CTQ_INT32_MIN) return CTQ_INT32_MAX;
  ctq_i64 ab = (ctq_i64)a * (ctq_i64)b;
  /* gemmlowp: (ab + nudge) / 2^31 rounded toward zero, nudge 2^30 for ab >=
   * 0 and 1 - 2^30 below. For ab < 0 that is (ab + 1 - 2^30 + 2^31 - 1) >>
   * 31 = (ab + 2^30) >> 31, the same expression as for ab >= 0, so one
   * arithmetic shift serves both: no division, no branch (an 8-bit
   * epilogue runs this per element). Right shift of a negative value is
   * arithmetic on every compiler this builds with (GCC, Clang, NVRTC). */
  return (ctq_i32)((ab + ((ctq_i64)1 << 30)) >> 31);
}

/* gemmlowp RoundingDivideByPOT: x / 2^e rounded half away from zero, e in 0..31. */
CTQ_FN ctq_i32 ctq_rdbpot(ctq_i32 x, int e) {
  ctq_i32 mask = (ctq_i32)(((ctq_i64)1 << e) - 1);
  ctq_i32 rem = x & mask;
  ctq_i32 threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> e) + (rem > threshold ? 1 : 0);
}

/* MultiplyByQuantizedMultiplier(x, m, shift): x * m * 2^(shift - 31). */
CTQ_FN ctq_i32 ctq_rescale(ctq_i32 x, ctq_i32 m, int shift) {
  int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  ctq_i32 xs = x; /* the usual case: a multiplier below 1, no left shift */
  if (left > 0) {
    ctq_i64 t = (ctq_i64)x * ((ctq_i64)1 << left);
    xs = t > CTQ_INT32_MAX ? CTQ_INT32_MAX : t < CTQ_INT32_MIN ? CTQ_INT32_MIN : (ctq_i32)t;
  }
  return ctq_rdbpot(ctq_srdhm(xs, m), right);
}

/* The 8-bit output value of v: zy + rescale(v) (+ the rescaled residual),
 * the sum exact, then clamped to [lo, hi]. */
CTQ_FN ctq_i32 ctq_requant(ctq_i32 v, ctq_i32 m, int shift, ctq_i32 zy, ctq_i32 lo, ctq_i32 hi,
                           int has_res, ctq_i32 r, ctq_i32 rm, int rshift, ctq_i32 rzp) {
  ctq_i64 y = (ctq_i64)zy + ctq_rescale(v, m, shift);
  if (has_res) y += ctq_rescale(r - rzp, rm, rshift);
  return y < lo ? lo : y > hi ? hi : (ctq_i32)y;
}

/* One 8-bit output lane (the low byte) of channel k's corrected accumulator
 * v from the params block of a workload with kp = K rounded up to 4: the
 * per-channel (qc) or per-tensor multiplier, rb the residual's byte at the
 * same place (has_res), signed unless out_u8. */
CTQ_FN ctq_u32 ctq_requant_lane(const ctq_i32 *params, int kp, int k, ctq_i32 v, ctq_u32 rb,
                                int qc, int out_u8, int has_res) {
  const ctq_i32 m = qc ? params[CTQ_HEADER + CTQ_MULTS * kp + k] : params[CTQ_MULT];
  const int sh = qc ? params[CTQ_HEADER + CTQ_SHIFTS * kp + k] : params[CTQ_SHIFT];
  const ctq_i32 r = out_u8 ? (ctq_i32)rb : (ctq_i32)(signed char)rb;
  const ctq_i32 y = ctq_requant(v, m, sh, params[CTQ_OUT_ZP], params[CTQ_LO], params[CTQ_HI],
                                has_res, r, has_res ? params[CTQ_RES_MULT] : 0,
                                has_res ? params[CTQ_RES_SHIFT] : 0, has_res ? params[CTQ_RES_ZP] : 0);
  return (ctq_u32)y & 0xffu;
}

/* The corrected accumulator of the legalized kernel: acc + off[k] - zw[k] *
 * xsum, modulo 2^32 like the accumulator itself. */
CTQ_FN ctq_i32 ctq_correct(ctq_i32 acc, ctq_i32 off, ctq_i32 zw, ctq_i32 xsum) {
  return (ctq_i32)((ctq_u32)acc + (ctq_u32)off - (ctq_u32)zw * (ctq_u32)xsum);
}

/* depth_to_space: conv channel k of a block of b (vol = b^2, or b^3 when
 * depth is remapped too; C' = cout) -> output channel *c and the offsets
 * inside the block (depth offset 0 in 2D). DCR: k = blk * C' + c; CRD: k =
 * c * vol + blk; blk = (i_d * b + i_h) * b + i_w. */
CTQ_FN void ctq_d2s(int k, int cout, int b, int vol, int crd, int *c, int *i_d, int *i_h,
                    int *i_w) {
  int blk = crd ? k % vol : k / cout;
  *c = crd ? k / vol : k % cout;
  *i_w = blk % b;
  blk /= b;
  *i_h = blk % b;
  *i_d = blk / b;
}

#endif
