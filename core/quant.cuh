/*
 * quant.cuh: the arithmetic of the quantized epilogues (gemmlowp's integer
 * one and ONNX Runtime's float32 one), written once
 * in the common subset of C11 and CUDA C++ and compiled by both: the
 * templates (NVRTC, embedded) and the host (core/quant.c, the CPU reference
 * and the tests), so that GPU and CPU agree bit for bit by construction.
 *
 * rescale is gemmlowp's / TFLite's MultiplyByQuantizedMultiplier (double
 * rounding): SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT.
 * TFLite leaves a left shift that overflows int32 undefined; here it
 * saturates. Sums that may exceed int32 (zero point + two rescaled terms)
 * are int64 and clamped; the accumulator side wraps modulo 2^32 (uint32).
 * The tensor-core kernels requantize through ctq_fast where it applies, the
 * same result precomputed per channel (one 64-bit multiply-add per
 * element); the host keeps the reference formulas; tests/test_quant.c
 * proves the two equal.
 *
 * The params block (ct_make_params; int32 words, Kp = K rounded up to 4):
 *   [CTQ_HEADER words of header][off: Kp][mult: Kp][shift: Kp][zw: Kp]
 * off[k] folds the bias and the zero-point corrections:
 *   bias[k] - zx * sum(w[k]) + R * zx * zw[k]   (R = packed C x kernel volume)
 * so that the kernel computes v = acc + off[k] - zw[k] * xsum, where acc sums
 * raw data x weights with padding (and padded channels) reading zx, and xsum
 * is the window's sum of the raw data.
 *
 * CT_ROUND_ONNX (ctq_requant_onnx) requantizes as ONNX Runtime's CPU
 * kernels do, in float32: the multipliers (CTQ_MULT, the mult array) are
 * the float scales' bits, the shifts 0, and the header words that only
 * gemmlowp reads (CTQ_SHIFT and the residual's three) with the spare ones
 * hold the onnx block (CTQ_ONNX + CTQO_*), so that the layout, and the
 * gemmlowp kernels' code, stay as they were. A kernel compiled with
 * CT_ONNX 1 takes this form; the values are folded by core/quant.c.
 */
#ifndef CT_TEMPLATES_QUANT_CUH
#define CT_TEMPLATES_QUANT_CUH

#ifdef __CUDACC_RTC__
#define CTQ_FN static __device__ __forceinline__
typedef int ctq_i32;
typedef unsigned ctq_u32;
typedef long long ctq_i64;
typedef unsigned long long ctq_u64;
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
#define CTQ_FN static inline
typedef int32_t ctq_i32;
typedef uint32_t ctq_u32;
typedef int64_t ctq_i64;
typedef uint64_t ctq_u64;
#endif

/* float32 arithmetic that rounds the same on both sides: every operation
 * one IEEE operation rounded to nearest even. In a kernel the intrinsics,
 * which NVRTC never contracts (a plain a * b + c becomes an FMA, -fmad
 * being on) nor flushes (no -ftz); on the host C11 float arithmetic
 * (FLT_EVAL_METHOD 0 on x86-64 and aarch64; -std=c11 turns contraction
 * off) and math.h's correctly rounded fmaf and rintf, under the default
 * rounding mode.
 *
 * ctq_f2i (round half to even) and ctq_i2f_small take values of magnitude
 * below 2^22 (the callers clamp to the output type first). A kernel
 * converts them by the magic number 1.5 x 2^23, where float's unit in the
 * last place is 1: x + 1.5 x 2^23, rounded to nearest even by the add, is
 * that integer's bits plus 0x4B400000, and back. One FADD and one IADD,
 * where F2I and I2F issue 16 a clock per SM (sm_80 / sm_90, the CUDA
 * guide's throughput table; FP32 adds 128, integer adds 64): ONNX rounding
 * with a residual took five conversions per element. ctq_i2f converts any
 * int32 (the accumulator). */
#define CTQ_MAGIC_F 12582912.0f /* 1.5 x 2^23 */
#define CTQ_MAGIC_I 0x4B400000  /* its bits */
#ifdef __CUDACC_RTC__
CTQ_FN float ctq_i2f(ctq_i32 v) { return __int2float_rn(v); }
CTQ_FN float ctq_fadd(float a, float b) { return __fadd_rn(a, b); }
CTQ_FN float ctq_fmul(float a, float b) { return __fmul_rn(a, b); }
CTQ_FN float ctq_fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
CTQ_FN float ctq_bits_float(ctq_i32 b) { return __int_as_float(b); }
CTQ_FN ctq_i32 ctq_float_bits(float f) { return __float_as_int(f); }
#else
CTQ_FN float ctq_i2f(ctq_i32 v) { return (float)v; }
CTQ_FN float ctq_fadd(float a, float b) { return a + b; }
CTQ_FN float ctq_fmul(float a, float b) { return a * b; }
CTQ_FN float ctq_fma(float a, float b, float c) { return fmaf(a, b, c); }
CTQ_FN float ctq_bits_float(ctq_i32 b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
CTQ_FN ctq_i32 ctq_float_bits(float f) {
  ctq_i32 b;
  memcpy(&b, &f, sizeof b);
  return b;
}
#endif

/* The magic-number conversions, compiled by both sides from this text, so
 * that tests/test_quant.c proves the kernels' form on the host: equal to
 * rintf and to the cast for every value of magnitude below 2^22. */
CTQ_FN ctq_i32 ctq_f2i_magic(float x) {
  return ctq_float_bits(ctq_fadd(x, CTQ_MAGIC_F)) - CTQ_MAGIC_I;
}
CTQ_FN float ctq_i2f_magic(ctq_i32 v) {
  return ctq_fadd(ctq_bits_float(CTQ_MAGIC_I + v), -CTQ_MAGIC_F);
}
#ifdef __CUDACC_RTC__
CTQ_FN ctq_i32 ctq_f2i(float x) { return ctq_f2i_magic(x); }
CTQ_FN float ctq_i2f_small(ctq_i32 v) { return ctq_i2f_magic(v); }
#else
CTQ_FN ctq_i32 ctq_f2i(float x) { return (ctq_i32)rintf(x); }
CTQ_FN float ctq_i2f_small(ctq_i32 v) { return (float)v; }
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
#define CTQ_ONNX      5  /* CT_ROUND_ONNX: its block of CTQO_WORDS words (below) */
#define CTQ_HEADER    12 /* 48 bytes: the arrays start 16-byte aligned */
/* The arrays, each Kp words from CTQ_HEADER + i * Kp. */
#define CTQ_OFF    0
#define CTQ_MULTS  1
#define CTQ_SHIFTS 2
#define CTQ_ZW     3
#define CTQ_ARRAYS 4

/* The onnx block, at CTQ_ONNX in the params header (over CTQ_SHIFT,
 * CTQ_RES_MULT, CTQ_RES_SHIFT, CTQ_RES_ZP and the 3 spare words) and at
 * QRAW_ONNX in the raw form (core/quant.h). Floats as their bits. */
#define CTQO_QZ    0 /* the conv's QuantizeLinear: zero point (zy; zt with a residual) */
#define CTQO_QLO   1 /* float: its clamp less that zero point, lo - zy (mid_clamp_min - zt) */
#define CTQO_QHI   2 /* float: hi - zy (mid_clamp_max - zt) */
#define CTQO_SA    3 /* residual, float: QLinearAdd's first input's ratio s_A / s_y */
#define CTQO_SB    4 /* float: the second input's, s_B / s_y */
#define CTQO_FIX   5 /* float: f = zy - (sA zA + sB zB), core/quant.c's onnx_fixed_part */
#define CTQO_FIRST 6 /* bit 0, residual: 1 the residual is A (Add(r, t)), 0 it is B (Add(t, r));
                      * no residual: CTQO_SEED and CTQO_HISAT (quant_onnx_block) */
#define CTQO_SEED  2  /* ctq_requant_onnx_seeded applies: |corrected sum| < 2^22 - 256 */
#define CTQO_HISAT 4  /* and without its min: the clamp's top is the type's, and |sum x scale|
                       * < 2^22 - 256 */
#define CTQO_WORDS 7

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

/* ---- ctq_requant precomputed per channel, for the kernels ------------------
 * In the usual channel (multiplier 0 <= m < 2^31, shift = -e with 1 <= e <=
 * 22: a scale in [2^-23, 0.5)) the two roundings of rescale and the zero
 * point fold into one 64-bit multiply-add and a shift:
 *   zy + rdbpot(srdhm(x, m), e) = (x m + A - [x < 0] 2^31) >> (31 + e),
 *   A = 2^30 + (2 zy + 1) 2^(30+e).
 * Why: with r = srdhm(x, m) = floor((x m + 2^30) / 2^31), gemmlowp's mask
 * and threshold are one floor, rdbpot(r, e) = floor((r + 2^(e-1) - [r <
 * 0]) / 2^e); nested floors of divisions by powers of two collapse into
 * one; and [r < 0] may be read as [x < 0]: they differ only where r = 0 (m
 * >= 0: r < 0 needs x m < -2^30, r > 0 needs x m >= 2^30), and there both
 * give 0 for e >= 1. The bounds keep it exact: |x m| < 2^62 and |A| + 2^31
 * < 2^61 + 2^53 (|zy| <= 256), so the sum fits int64; zy + rdbpot(...) is
 * within 2^30 + 256 (e >= 1), so it fits int32 and so does its clamp (lo
 * <= hi, min then max). Since 31 + e >= 32 the shift is the sum's high
 * word (less the borrow of - [x < 0] 2^31) shifted by e - 1. Per element:
 * one IMAD.WIDE, the borrow (LOP3, shift, subtract), a shift, min, max;
 * the general formula takes several times that. Other
 * channels (a left shift, m < 0, e = 0 or e > 22), and a header out of
 * those bounds, take ctq_requant; tests/test_quant.c checks that both are
 * equal bit for bit. The residual term is ctq_rescale's, added in int64. */
typedef struct ctq_fast {
  ctq_i64 add; /* A */
  ctq_i32 m;
  int sh; /* e - 1 */
  int ok; /* 1: the channel takes ctq_requant_fast */
} ctq_fast;

/* (int64)a * b + c: in a kernel one IMAD.WIDE with its 64-bit addend,
 * where the caller uses both words of the result (ctq_requant_fast). As
 * inline PTX (mad.wide.s32) ptxas splits it into a multiply and a 64-bit
 * add with carry: three instructions. */
CTQ_FN ctq_i64 ctq_mad_wide(ctq_i32 a, ctq_i32 b, ctq_i64 c) { return (ctq_i64)a * b + c; }

/* Whether a tensor's output zero point zy and clamp [lo, hi] admit the fast
 * form (once per kernel; ctq_fast_make takes the answer). */
CTQ_FN int ctq_fast_head(ctq_i32 zy, ctq_i32 lo, ctq_i32 hi) {
  return (zy >= -256) & (zy <= 256) & (lo <= hi);
}

/* The fast form of ctq_requant(., m, shift, zy, lo, hi, ...), head_ok =
 * ctq_fast_head(zy, lo, hi); ok = 0 where it does not apply (add and sh
 * then hold harmless values). No branch and few instructions: a kernel
 * makes it per channel, and a branch here lets the compiler copy the whole
 * epilogue for each outcome. */
CTQ_FN ctq_fast ctq_fast_make(ctq_i32 m, int shift, ctq_i32 zy, int head_ok) {
  ctq_fast f;
  /* -22 <= shift <= -1 (~shift = e - 1 in 0..21) and m >= 0: one LOP3 and
   * one unsigned compare */
  f.ok = head_ok & ((~(ctq_u32)shift | ((ctq_u32)m & 0x80000000u)) < 22u);
  f.m = m;
  f.sh = (int)(~(ctq_u32)shift & 31u); /* e - 1 when ok; always a valid shift */
  /* A = 2^30 + w 2^31 with w = (2 zy + 1) 2^(e-1) (|w| < 2^31 when ok):
   * high word w >> 1, low word (w mod 2) 2^31 + 2^30; built from 32-bit
   * halves (and unsigned shifts: a negative value's left shift is
   * undefined in C) so that a kernel spends no 64-bit shift on it */
  const ctq_i32 w = (ctq_i32)(((ctq_u32)zy * 2u + 1u) << f.sh);
  f.add = (ctq_i64)((ctq_u64)(ctq_i64)(w >> 1) << 32 | ((ctq_u32)w << 31 | 1u << 30));
  return f;
}

/* The fast form's value before the clamp (and the residual): zy +
 * rdbpot(srdhm(v, m), e) for f.ok. */
CTQ_FN ctq_i32 ctq_fast_value(ctq_fast f, ctq_i32 v) {
  /* p = v m + A; floor((p - [v < 0] 2^31) / 2^32) is p's high word less
   * one where v < 0 and p's low word is below 2^31 (the borrow); then >>
   * (e - 1). One IMAD.WIDE, no 64-bit add or shift (ptxas: LOP3 and
   * LEA.HI.SX32 for the borrow, SHF for the shift). */
  const ctq_i64 p = ctq_mad_wide(v, f.m, f.add);
  const ctq_u32 borrow = ((ctq_u32)v & ~(ctq_u32)p) >> 31;
  return ((ctq_i32)(p >> 32) - (ctq_i32)borrow) >> f.sh;
}

/* ctq_requant(v, m, shift, zy, lo, hi, has_res, r, rm, rshift, rzp) for f =
 * ctq_fast_make(m, shift, zy, ctq_fast_head(zy, lo, hi)) with f.ok, bit
 * for bit. */
CTQ_FN ctq_i32 ctq_requant_fast(ctq_fast f, ctq_i32 v, ctq_i32 lo, ctq_i32 hi, int has_res,
                                ctq_i32 r, ctq_i32 rm, int rshift, ctq_i32 rzp) {
  ctq_i32 y = ctq_fast_value(f, v);
  if (has_res) {
    const ctq_i64 s = (ctq_i64)y + ctq_rescale(r - rzp, rm, rshift);
    return s < lo ? lo : s > hi ? hi : (ctq_i32)s;
  }
  y = y > hi ? hi : y;
  return y < lo ? lo : y;
}

/* Whether the clamp [lo, hi] is [lo, the 8-bit output type's maximum]
 * with lo in the type (ReLU, or no activation): then, without a residual,
 * the clamp is max(y, lo) and the type's saturation: a kernel's
 * saturating pack (cvt.pack.sat) saturates and packs two values in one
 * instruction, where their two mins and a byte permute took three. */
CTQ_FN int ctq_sat_head(ctq_i32 lo, ctq_i32 hi, int out_u8) {
  const ctq_i32 tmin = out_u8 ? 0 : -128, tmax = out_u8 ? 255 : 127;
  return (hi == tmax) & (lo >= tmin) & (lo <= hi);
}

/* ctq_requant(v, ...) without a residual where ctq_sat_head(lo, hi,
 * out_u8) and f.ok: what a kernel computes, max then the type's
 * saturation. */
CTQ_FN ctq_i32 ctq_requant_fast_sat(ctq_fast f, ctq_i32 v, ctq_i32 lo, int out_u8) {
  ctq_i32 y = ctq_fast_value(f, v);
  y = y < lo ? lo : y;
  const ctq_i32 tmin = out_u8 ? 0 : -128, tmax = out_u8 ? 255 : 127;
  return y < tmin ? tmin : y > tmax ? tmax : y;
}

/* ---- CT_ROUND_ONNX: ONNX Runtime's requantization, in float32 -------------
 * Without a residual, QLinearConv's (MLAS's MlasRequantizeOutput):
 *   y = zy + rne(clamp(float(v) * scale[k], lo - zy, hi - zy))
 * float(v) rounded to nearest even (exact up to 2^24), one float multiply,
 * the clamp in float before the conversion (so that a product of any size
 * saturates), rne rounding half to even. With a residual, ONNX's two
 * steps: the same quantizes v into t (zt and the mid clamp), then
 * QLinearAdd(A, B) as ORT's x86 kernel computes it:
 *   acc = fma(A, sA, fma(B, sB, f)),   y = clamp(rne(acc), lo, hi)
 * (A, B) = (t, r), or (r, t) with residual_first; f is folded on the host.
 * The final clamp comes before the conversion too: rne is monotone and lo,
 * hi are integers, so rne(clamp(x, lo, hi)) = clamp(rne(x), lo, hi), what
 * ORT's saturating packs and the Relu after them give (quant_check bounds
 * the ratios so that acc stays within int32, where x86's conversion is
 * defined); so ctq_f2i only ever sees a value within the output type. Per
 * element in a kernel (ctq_requant_onnx_word, below): I2F, FMUL, two
 * FMNMX, FADD, IADD; with a residual, in place of the IADD: the residual's
 * conversion, two FADD, two FFMA and two FMNMX. The fast fixed-point
 * forms above are gemmlowp's only. */
typedef struct ctq_onnx {
  ctq_i32 qz;        /* CTQO_QZ */
  float qlo, qhi;    /* CTQO_QLO, CTQO_QHI */
  float sa, sb, fix; /* residual: CTQO_SA, CTQO_SB, CTQO_FIX */
  float lo, hi;      /* residual: the output clamp */
  int first;         /* residual: CTQO_FIRST's bit 0 */
  float tq;          /* qz - 1.5 x 2^23 (exact): ctq_requant_onnx_word's */
  int seed, hisat;   /* CTQO_SEED, CTQO_HISAT: ctq_requant_onnx_seeded applies, and without its min */
  ctq_i32 sat_add;   /* qz - CTQ_MAGIC_I: ctq_requant_onnx_seeded's */
} ctq_onnx;

/* The onnx block b (CTQO_WORDS words) with the output clamp [lo, hi]. */
CTQ_FN ctq_onnx ctq_onnx_load(const ctq_i32 *b, ctq_i32 lo, ctq_i32 hi) {
  ctq_onnx o;
  o.qz = b[CTQO_QZ];
  o.qlo = ctq_bits_float(b[CTQO_QLO]);
  o.qhi = ctq_bits_float(b[CTQO_QHI]);
  o.sa = ctq_bits_float(b[CTQO_SA]);
  o.sb = ctq_bits_float(b[CTQO_SB]);
  o.fix = ctq_bits_float(b[CTQO_FIX]);
  o.lo = ctq_i2f_small(lo);
  o.hi = ctq_i2f_small(hi);
  o.first = b[CTQO_FIRST] & 1;
  o.tq = ctq_fadd(ctq_i2f_small(o.qz), -CTQ_MAGIC_F);
  o.seed = (b[CTQO_FIRST] & CTQO_SEED) != 0;
  o.hisat = (b[CTQO_FIRST] & CTQO_HISAT) != 0;
  o.sat_add = (ctq_i32)((ctq_u32)o.qz - (ctq_u32)CTQ_MAGIC_I);
  return o;
}

/* QuantizeLinear of v: qz + rne(clamp(float(v) * scale, qlo, qhi)). */
CTQ_FN ctq_i32 ctq_onnx_quantize(ctq_i32 v, float scale, ctq_i32 qz, float qlo, float qhi) {
  float x = ctq_fmul(ctq_i2f(v), scale);
  x = fmaxf(x, qlo);
  x = fminf(x, qhi);
  return ctq_f2i(x) + qz;
}

/* QLinearAdd of the conv's t and the residual's r (both within the type). */
CTQ_FN ctq_i32 ctq_onnx_add(ctq_i32 t, ctq_i32 r, const ctq_onnx *o) {
  const float ft = ctq_i2f_small(t), fr = ctq_i2f_small(r);
  const float a = o->first ? fr : ft, b = o->first ? ft : fr;
  float acc = ctq_fma(b, o->sb, o->fix);
  acc = ctq_fma(a, o->sa, acc);
  acc = fmaxf(acc, o->lo);
  acc = fminf(acc, o->hi);
  return ctq_f2i(acc);
}

/* The 8-bit output value of v under CT_ROUND_ONNX: scale is channel k's
 * (or the tensor's) float scale, r the residual's value (has_res). */
CTQ_FN ctq_i32 ctq_requant_onnx(ctq_i32 v, float scale, const ctq_onnx *o, int has_res, ctq_i32 r) {
  const ctq_i32 t = ctq_onnx_quantize(v, scale, o->qz, o->qlo, o->qhi);
  return has_res ? ctq_onnx_add(t, r, o) : t;
}

/* ctq_requant_onnx's output byte, as kernels compute it: the low byte of
 * the word returned (the bytes above are not the value's), the residual's
 * value r given as its float fr (exact: |r| < 2^24). By the magic number,
 * where every float below is within 2^22 of an integer (the clamps):
 *   - y = x + 1.5 x 2^23 has the bits CTQ_MAGIC_I + rne(x), whose low
 *     byte is rne(x)'s (CTQ_MAGIC_I's is 0): t's byte is one IADD away,
 *     and t's float one exact FADD (y + tq), where ctq_f2i, the zero
 *     point's add and ctq_i2f_small took four;
 *   - the result's byte is that of acc + 1.5 x 2^23's bits: no conversion
 *     back.
 * tests/test_quant.c holds it to ctq_requant_onnx on the host, where the
 * same text compiles with the same float operations. */
CTQ_FN ctq_u32 ctq_requant_onnx_word(ctq_i32 v, float scale, const ctq_onnx *o, int has_res,
                                     float fr) {
  float x = ctq_fmul(ctq_i2f(v), scale);
  x = fmaxf(x, o->qlo);
  x = fminf(x, o->qhi);
  const float y = ctq_fadd(x, CTQ_MAGIC_F);
  if (!has_res) return (ctq_u32)ctq_float_bits(y) + (ctq_u32)o->qz;
  const float ft = ctq_fadd(y, o->tq);
  const float a = o->first ? fr : ft, b = o->first ? ft : fr;
  float acc = ctq_fma(b, o->sb, o->fix);
  acc = ctq_fma(a, o->sa, acc);
  acc = fmaxf(acc, o->lo);
  acc = fminf(acc, o->hi);
  return (ctq_u32)ctq_float_bits(ctq_fadd(acc, CTQ_MAGIC_F));
}

/* The seeded forms of ctq_requant_onnx without a residual, where the onnx
 * block has CTQO_SEED: every corrected sum within 2^22 - 256 of zero
 * (quant_onnx_block proves it from the bias and the reduction's length).
 *   - The kernel's sums start from the offset plus CTQ_MAGIC_I: seeded is
 *     acc + CTQ_MAGIC_I (modulo 2^32, as the sums add), whose float is
 *     1.5 x 2^23 + acc exactly, so float(acc) is one FADD on the FMA pipe
 *     where I2FP is an ALU op.
 *   - The value returned, qz + rne(clamp(float(acc) x scale, qlo, qhi)), is
 *     the output once saturated to the output type, which the kernel's
 *     cvt.pack.sat does for two values in one instruction (a PRMT's place).
 *   - clamp_hi 0 (a kernel's constant), where also CTQO_HISAT: the clamp's
 *     top is the type's and |acc x scale| within 2^22 - 256, so the min is
 *     the saturation's and the magic number's add stays exact without it.
 * tests/test_quant.c holds both, saturated, to ctq_requant_onnx. */
CTQ_FN ctq_i32 ctq_requant_onnx_seeded(ctq_i32 seeded, float scale, const ctq_onnx *o,
                                       int clamp_hi) {
  float x = ctq_fmul(ctq_fadd(ctq_bits_float(seeded), -CTQ_MAGIC_F), scale);
  x = fmaxf(x, o->qlo);
  if (clamp_hi) x = fminf(x, o->qhi);
  return ctq_float_bits(ctq_fadd(x, CTQ_MAGIC_F)) + o->sat_add;
}

/* One 8-bit output lane (the low byte) of channel k's corrected accumulator
 * v from the params block of a workload with kp = K rounded up to 4: the
 * per-channel (qc) or per-tensor multiplier, rb the residual's byte at the
 * same place (has_res), signed unless out_u8; onnx: CT_ROUND_ONNX's
 * arithmetic (a constant in a kernel, so the other form compiles away). */
CTQ_FN ctq_u32 ctq_requant_lane(const ctq_i32 *params, int kp, int k, ctq_i32 v, ctq_u32 rb, int qc,
                                int out_u8, int has_res, int onnx) {
  const ctq_i32 m = qc ? params[CTQ_HEADER + CTQ_MULTS * kp + k] : params[CTQ_MULT];
  const int sh = qc ? params[CTQ_HEADER + CTQ_SHIFTS * kp + k] : params[CTQ_SHIFT];
  const ctq_i32 r = out_u8 ? (ctq_i32)rb : (ctq_i32)(signed char)rb;
  if (onnx) {
    const ctq_onnx o = ctq_onnx_load(params + CTQ_ONNX, params[CTQ_LO], params[CTQ_HI]);
    return (ctq_u32)ctq_requant_onnx(v, ctq_bits_float(m), &o, has_res, r) & 0xffu;
  }
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
