/*
 * test_quant.c: the quantized epilogues on the CPU: the fixed-point
 * arithmetic (core/quant.cuh) and the kernels' precomputed form of it
 * (ctq_fast, equal to ctq_requant on 25 million cases, edges and rounding
 * ties included), the multiplier conversion and the value checks
 * (core/quant.c), the reference of every epilogue (reference_qconv)
 * against a naive formula written here, and the legalization: a CPU model
 * of what the kernels compute (raw data x weights with padding reading the
 * zero point, the window's data sum, then the params block) equal to the
 * reference on random cases, element for element.
 *
 * The naive formula indexes every tensor by its layout's own formula (NCHW,
 * NCHW4c, NHWC) and walks the output of depth_to_space from the output's
 * side (which conv channel lands on output (c, y, x)), the opposite
 * direction of ctq_d2s. The channels-last reference is also checked against
 * the plain one on random convolutions whose tensors are converted with
 * pack.c: the same numbers, element for element. With a fused pointwise
 * convolution: the params block's three parts, the checks of its values and
 * quant_random's store of them.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pack.h"
#include "core/quant.cuh"
#include "core/quant.h"
#include "core/reference.h"
#include "core/zpad.cuh"
#include "core/workload.h"
#include "tests/util.h"

/* ---- fixed point ------------------------------------------------------------ */

/* gemmlowp's rounding written another way: 128-bit products and explicit
 * half-up / half-away rules. */
static int32_t srdhm_slow(int32_t a, int32_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  __int128 ab = (__int128)a * b;
  __int128 half = (__int128)1 << 30;
  /* positive: round half up; negative: (ab + 1 - 2^30) / 2^31 truncated */
  if (ab >= 0) return (int32_t)((ab + half) >> 31);
  return (int32_t) - ((-ab + half - 1) >> 31);
}

/* x / 2^e rounded half away from zero. */
static int32_t rdbpot_slow(int32_t x, int e) {
  if (e == 0) return x;
  int64_t half = (int64_t)1 << (e - 1);
  if (x >= 0) return (int32_t)(((int64_t)x + half) >> e);
  return (int32_t) - ((-(int64_t)x + half) >> e);
}

START_TEST(fixed_point_matches_slow_forms) {
  rng r;
  rng_seed(&r, 7);
  const int32_t edges[] = {0,     1,         -1,        2,       -2,         3,
                           -3,    INT32_MAX, INT32_MIN, 1 << 30, -(1 << 30), (1 << 30) + 1,
                           12345, -12345};
  int n_edges = (int)(sizeof edges / sizeof edges[0]);
  for (int i = 0; i < 200000; i++) {
    int32_t a = i < n_edges * n_edges ? edges[i / n_edges] : (int32_t)rng_next(&r);
    int32_t b = i < n_edges * n_edges ? edges[i % n_edges] : (int32_t)rng_next(&r);
    if (ctq_srdhm(a, b) != srdhm_slow(a, b))
      ck_abort_msg("srdhm(%d, %d) = %d, slow form %d", a, b, ctq_srdhm(a, b), srdhm_slow(a, b));
    int e = rng_range(&r, 0, 31);
    if (ctq_rdbpot(a, e) != rdbpot_slow(a, e))
      ck_abort_msg("rdbpot(%d, %d) = %d, slow form %d", a, e, ctq_rdbpot(a, e), rdbpot_slow(a, e));
  }
  /* known values: with shift 0 only the doubling high mul rounds, and it
   * rounds a tie up (-1.5 -> -1, as gemmlowp does); a right shift rounds a
   * tie away from zero */
  int32_t m;
  int sh;
  ck_assert_int_eq(quant_multiplier(0.5, &m, &sh, NULL), CT_OK);
  ck_assert_int_eq(m, 1 << 30);
  ck_assert_int_eq(sh, 0);
  ck_assert_int_eq(ctq_rescale(3, m, sh), 2);
  ck_assert_int_eq(ctq_rescale(-3, m, sh), -1);
  ck_assert_int_eq(ctq_rescale(5, m, sh), 3);
  ck_assert_int_eq(ctq_rescale(-5, m, sh), -2);
  ck_assert_int_eq(quant_multiplier(0.25, &m, &sh, NULL), CT_OK);
  ck_assert_int_eq(sh, -1);
  ck_assert_int_eq(ctq_rescale(6, m, sh), 2);   /* 1.5 -> 2 */
  ck_assert_int_eq(ctq_rescale(-6, m, sh), -2); /* -1.5 -> -2 */
  ck_assert_int_eq(quant_multiplier(1.0, &m, &sh, NULL), CT_OK);
  ck_assert_int_eq(m, 1 << 30);
  ck_assert_int_eq(sh, 1);
  ck_assert_int_eq(ctq_rescale(1000, m, sh), 1000);
  /* the left-shifted value saturates (never wraps) before the multiply */
  ck_assert_int_eq(ctq_rescale(INT32_MAX, m, sh), 1073741824);
  ck_assert_int_eq(ctq_rescale(INT32_MIN, m, sh), -1073741824);
  ck_assert_int_eq(quant_multiplier(3.0, &m, &sh, NULL), CT_OK);
  ck_assert_int_eq(ctq_rescale(-7, m, sh), -21);
  /* a scale that rounds q up to 1 moves to the next power */
  ck_assert_int_eq(quant_multiplier(0.99999999999, &m, &sh, NULL), CT_OK);
  ck_assert_int_eq(m, 1 << 30);
  ck_assert_int_eq(sh, 1);
  /* below 2^-32: zero */
  ck_assert_int_eq(quant_multiplier(1e-12, &m, &sh, NULL), CT_OK);
  ck_assert_int_eq(m, 0);
  ck_assert_int_eq(ctq_rescale(INT32_MAX, m, sh), 0);
  /* every representable scale comes back within 2^-31 relative */
  for (int i = 0; i < 10000; i++) {
    double s = ldexp(1.0 + (double)(rng_next(&r) % 1000000) / 1e6, rng_range(&r, -30, 20));
    ck_assert_int_eq(quant_multiplier(s, &m, &sh, NULL), CT_OK);
    double back = ldexp((double)m, sh - 31);
    if (fabs(back - s) > s * ldexp(1.0, -30)) ck_abort_msg("scale %g comes back as %g", s, back);
  }
  ct_err err = {0};
  ck_assert_int_eq(quant_multiplier(0.0, &m, &sh, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "above 0"));
  ck_assert_int_eq(quant_multiplier(NAN, &m, &sh, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(quant_multiplier(-1.0, &m, &sh, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(quant_multiplier(2e9, &m, &sh, &err), CT_ERR_INVALID_ARG);
}
END_TEST

/* ---- the kernels' precomputed requantization ---------------------------------- */

/* One requantization: ctq_requant's arguments. */
typedef struct rq {
  int32_t x, m, zy, lo, hi, r, rm, rzp;
  int shift, has_res, rshift;
} rq;

typedef int32_t (*fast_fn)(ctq_fast f, int32_t v, int32_t lo, int32_t hi, int has_res, int32_t r,
                           int32_t rm, int rshift, int32_t rzp);

/* Two wrong variants, for the test to show that it can fail: without the
 * [x < 0] 2^31 (TFLite's rounding of a tie toward +inf instead of away from
 * zero), and with a rounding constant one short. */
static int32_t fast_no_sign(ctq_fast f, int32_t v, int32_t lo, int32_t hi, int has_res, int32_t r,
                            int32_t rm, int rshift, int32_t rzp) {
  (void)has_res, (void)r, (void)rm, (void)rshift, (void)rzp;
  int32_t y = (int32_t)(((int64_t)v * f.m + f.add) >> 32) >> f.sh;
  return y < lo ? lo : y > hi ? hi : y;
}
static int32_t fast_short(ctq_fast f, int32_t v, int32_t lo, int32_t hi, int has_res, int32_t r,
                          int32_t rm, int rshift, int32_t rzp) {
  f.add -= 1;
  return ctq_requant_fast(f, v, lo, hi, has_res, r, rm, rshift, rzp);
}

/* The kernels' RQ_SAT (ctq_requant_fast_sat) where a header allows it: no
 * residual, and ctq_sat_head for int8 or uint8 output; else
 * ctq_requant_fast. n_sat counts the cases it took. */
static int64_t n_sat;
static int32_t fast_sat(ctq_fast f, int32_t v, int32_t lo, int32_t hi, int has_res, int32_t r,
                        int32_t rm, int rshift, int32_t rzp) {
  for (int u8 = 0; u8 < 2 && !has_res; u8++)
    if (ctq_sat_head(lo, hi, u8)) {
      n_sat++;
      return ctq_requant_fast_sat(f, v, lo, u8);
    }
  return ctq_requant_fast(f, v, lo, hi, has_res, r, rm, rshift, rzp);
}
/* Wrong: the type's saturation alone, without max(y, lo) (ReLU lost). */
static int32_t fast_sat_no_lo(ctq_fast f, int32_t v, int32_t lo, int32_t hi, int has_res, int32_t r,
                              int32_t rm, int rshift, int32_t rzp) {
  for (int u8 = 0; u8 < 2 && !has_res; u8++)
    if (ctq_sat_head(lo, hi, u8)) return ctq_requant_fast_sat(f, v, u8 ? 0 : -128, u8);
  return ctq_requant_fast(f, v, lo, hi, has_res, r, rm, rshift, rzp);
}

/* conv_dw_nhwc.cuh's saturating form without the borrow (fast_value<true>)
 * where the clamp's lower end is at or above the zero point and there is
 * no residual: the value is non-decreasing in v and zy at v = 0, so for v <
 * 0 it stays at most zy <= lo and the clamp gives lo as with the borrow.
 * n_nb counts the cases it took; lo_slack 1 is a wrong variant that also
 * takes lo = zy - 1. */
static int64_t n_nb;
static int lo_slack;
static int32_t fast_nb(ctq_fast f, int32_t v, int32_t lo, int32_t hi, int has_res, int32_t r,
                       int32_t rm, int rshift, int32_t rzp) {
  const int32_t zy = (int32_t)((f.add >> 31) >> f.sh >> 1); /* A's w = (2 zy + 1) 2^(e-1) */
  if (has_res || lo < zy - lo_slack)
    return ctq_requant_fast(f, v, lo, hi, has_res, r, rm, rshift, rzp);
  n_nb++;
  const int32_t y = (int32_t)(((int64_t)v * f.m + f.add) >> 32) >> f.sh;
  return y < lo ? lo : y > hi ? hi : y;
}

static int fast_ok(int32_t m, int shift, int32_t zy, int32_t lo, int32_t hi) {
  return ctq_fast_make(m, shift, zy, ctq_fast_head(zy, lo, hi)).ok;
}

typedef struct rq_stats {
  int64_t n, n_fast, n_bad;
  rq first_bad;
  int32_t want, got;
} rq_stats;

/* Run one case through ctq_requant and the way a kernel takes it (the
 * header's and the channel's check, then fn where they pass, else
 * ctq_requant). */
static void rq_check(rq_stats *s, fast_fn fn, const rq *c) {
  s->n++;
  ctq_fast f = ctq_fast_make(c->m, c->shift, c->zy, ctq_fast_head(c->zy, c->lo, c->hi));
  int32_t want = ctq_requant(c->x, c->m, c->shift, c->zy, c->lo, c->hi, c->has_res, c->r, c->rm,
                             c->rshift, c->rzp);
  int32_t got;
  if (f.ok) {
    s->n_fast++;
    got = fn(f, c->x, c->lo, c->hi, c->has_res, c->r, c->rm, c->rshift, c->rzp);
  } else {
    got = ctq_requant(c->x, c->m, c->shift, c->zy, c->lo, c->hi, c->has_res, c->r, c->rm, c->rshift,
                      c->rzp);
  }
  if (got != want && s->n_bad++ == 0) {
    s->first_bad = *c;
    s->want = want;
    s->got = got;
  }
}

/* An output zero point and clamp: int8 and uint8 full range, ReLU (lo =
 * zy), ReLU6-like narrow ranges (6 / scale steps above zy), one-value
 * ranges; now and then values the fast form refuses (zy beyond 256, lo >
 * hi), which must then fall to ctq_requant. */
static void rq_clamp(rng *r, rq *c) {
  int u8 = rng_range(r, 0, 1), tmin = u8 ? 0 : -128, tmax = u8 ? 255 : 127;
  c->zy = rng_range(r, tmin, tmax);
  c->lo = tmin, c->hi = tmax;
  switch (rng_range(r, 0, 7)) {
  case 0:
    break;
  case 1:
    c->lo = c->zy;
    break;
  case 2: /* ReLU6 */
    c->lo = c->zy;
    c->hi = c->zy + rng_range(r, 1, 60);
    if (c->hi > tmax) c->hi = tmax;
    break;
  case 3:
    c->lo = rng_range(r, tmin, tmax), c->hi = rng_range(r, c->lo, tmax);
    break;
  case 4:
    c->lo = c->hi = rng_range(r, tmin, tmax);
    break;
  case 5:
    c->zy = rng_range(r, -256, 256);
    break;
  case 6:
    c->zy = rng_range(r, -300, 300), c->lo = rng_range(r, -300, 300),
    c->hi = rng_range(r, -300, 300);
    break;
  default:
    c->zy = (int32_t)rng_next(r);
    break;
  }
}

static void rq_residual(rng *r, rq *c) {
  c->has_res = rng_range(r, 0, 7) == 0;
  c->r = rng_range(r, -128, 255);
  c->rzp = rng_range(r, -128, 255);
  c->rm = (int32_t)rng_next(r);
  if (rng_range(r, 0, 3)) c->rm = (int32_t)((uint32_t)c->rm | 0x40000000u) & INT32_MAX;
  c->rshift = rng_range(r, -31, 30);
}

/* x: the ends, small values, powers of two and their neighbours */
static const int32_t rq_x_edges[] = {0,
                                     1,
                                     -1,
                                     2,
                                     -2,
                                     3,
                                     -3,
                                     12345,
                                     -12345,
                                     1 << 15,
                                     -(1 << 15),
                                     1 << 23,
                                     1 << 30,
                                     -(1 << 30),
                                     (1 << 30) - 1,
                                     -(1 << 30) + 1,
                                     INT32_MAX,
                                     INT32_MIN,
                                     INT32_MAX - 1,
                                     INT32_MIN + 1};
/* m: 0, tiny, 2^30 (0.5), 2^31 - 1 (1 - 2^-31), and what the fast form
 * refuses (INT32_MIN, negative) */
static const int32_t rq_m_edges[] = {
    0,         1,         2,  3,         1 << 29, 1 << 30, (1 << 30) + 1, 1518500250, INT32_MAX - 1,
    INT32_MAX, INT32_MIN, -1, -(1 << 30)};

/* Every case family, through fn: edges crossed (x, m, every shift from -31
 * to 30, each with random clamps), the rounding ties of rdbpot for each e
 * (values x whose srdhm(x, m) is k 2^e +- 2^(e-1), and their neighbours)
 * and of srdhm (x m = 2^30 mod 2^31), then n_random uniform cases with
 * random or usual multipliers. */
static void rq_run(rq_stats *s, fast_fn fn, int64_t n_random) {
  rng r;
  rng_seed(&r, 0x5eed);
  int nx = (int)(sizeof rq_x_edges / sizeof rq_x_edges[0]);
  int nm = (int)(sizeof rq_m_edges / sizeof rq_m_edges[0]);
  rq c;
  memset(&c, 0, sizeof c);
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < nm; j++)
      for (int shift = -31; shift <= 30; shift++)
        for (int k = 0; k < 4; k++) {
          c.x = rq_x_edges[i], c.m = rq_m_edges[j], c.shift = shift;
          rq_clamp(&r, &c);
          rq_residual(&r, &c);
          rq_check(s, fn, &c);
        }
  /* the sum's extremes: the largest products with the largest zero points
   * and every e the fast form takes, under wide and 8-bit clamps */
  static const int32_t zys[] = {-256, -255, -128, 255, 256};
  static const int32_t los[] = {-128, 0, -300, INT32_MIN}, his[] = {127, 255, 300, INT32_MAX};
  c.has_res = 0;
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < nm; j++)
      for (int e = 1; e <= 22; e++)
        for (int z = 0; z < 5; z++)
          for (int l = 0; l < 4; l++) {
            c.x = rq_x_edges[i], c.m = rq_m_edges[j], c.shift = -e;
            c.zy = zys[z], c.lo = los[l], c.hi = his[l];
            rq_check(s, fn, &c);
          }
  /* ties of the second rounding: r = srdhm(x, m) at k 2^e + 2^(e-1) (and
   * -), x = r 2^31 / m and its neighbours */
  for (int e = 0; e <= 31; e++)
    for (int t = 0; t < 3000; t++) {
      int32_t m = t % 4 == 0 ? rq_m_edges[rng_range(&r, 0, nm - 1)]
                             : (int32_t)(rng_next(&r) | 0x40000000u) & INT32_MAX;
      if (m <= 0) m = 1 << 30;
      int64_t half = e ? (int64_t)1 << (e - 1) : 0;
      int64_t k = (int64_t)(int32_t)rng_next(&r) >> rng_range(&r, e, 31);
      int64_t target = k * ((int64_t)1 << e) + (rng_range(&r, 0, 1) ? half : -half);
      int64_t x0 = (int64_t)((double)target * 2147483648.0 / (double)m);
      for (int64_t d = -2; d <= 2; d++) {
        int64_t x = x0 + d;
        if (x < INT32_MIN || x > INT32_MAX) continue;
        c.x = (int32_t)x, c.m = m, c.shift = -e;
        rq_clamp(&r, &c);
        rq_residual(&r, &c);
        rq_check(s, fn, &c);
        c.m = -m; /* the negative multiplier goes to ctq_requant */
        rq_check(s, fn, &c);
      }
    }
  /* ties of the first rounding: x m = 2^30 mod 2^31 (m = 2^30, odd x) */
  for (int t = 0; t < 200000; t++) {
    c.x = (int32_t)(rng_next(&r) | 1u) >> rng_range(&r, 0, 30);
    c.m = 1 << 30, c.shift = -rng_range(&r, 0, 31);
    rq_clamp(&r, &c);
    rq_residual(&r, &c);
    rq_check(s, fn, &c);
  }
  for (int64_t t = 0; t < n_random; t++) {
    int kind = rng_range(&r, 0, 3);
    /* x: full range, or an accumulator's usual size */
    c.x = kind == 0 ? (int32_t)rng_next(&r) : (int32_t)rng_next(&r) >> rng_range(&r, 0, 31);
    /* m: what quant_multiplier makes (2^30 .. 2^31 - 1), or anything */
    c.m = kind == 3 ? (int32_t)rng_next(&r) : (int32_t)(rng_next(&r) | 0x40000000u) & INT32_MAX;
    c.shift = kind == 3 ? rng_range(&r, -31, 30) : -rng_range(&r, 0, 24);
    rq_clamp(&r, &c);
    rq_residual(&r, &c);
    rq_check(s, fn, &c);
  }
}

/* A kernel's requantization (ctq_requant_fast where ctq_fast_make accepts
 * the channel, else ctq_requant) equals ctq_requant on 25 million cases, 14
 * million of them fast; the same cases catch two wrong variants, so that a
 * mismatch would not go unseen. The sanitizer pass (test_quick) draws a
 * quarter of the random cases, the edges whole: 31 of its 43 s went here. */
START_TEST(requant_fast_equals_requant) {
  rq_stats s;
  memset(&s, 0, sizeof s);
  const int64_t n_random = test_quick() ? 6000000 : 24000000;
  rq_run(&s, ctq_requant_fast, n_random);
  const rq *b = &s.first_bad;
  if (s.n_bad)
    ck_abort_msg("%lld of %lld fast cases differ; first: x %d m %d shift %d zy %d lo %d hi %d "
                 "res %d (r %d rm %d rshift %d rzp %d): ctq_requant %d, fast %d",
                 (long long)s.n_bad, (long long)s.n_fast, b->x, b->m, b->shift, b->zy, b->lo, b->hi,
                 b->has_res, b->r, b->rm, b->rshift, b->rzp, s.want, s.got);
  /* most cases take the fast form (the usual multipliers); the others
   * show that ctq_fast_make refuses what it cannot do */
  ck_assert_int_gt(s.n_fast, s.n / 2);
  ck_assert_int_gt(s.n, n_random + 1000000); /* the edges: more than a million */
  static const fast_fn wrong[] = {fast_no_sign, fast_short};
  for (int i = 0; i < 2; i++) {
    rq_stats w;
    memset(&w, 0, sizeof w);
    rq_run(&w, wrong[i], 0);
    ck_assert_msg(w.n_bad > 0, "wrong variant %d passes", i);
  }
  /* what the fast form accepts */
  ck_assert_int_eq(fast_ok(1 << 30, -1, 0, -128, 127), 1);
  ck_assert_int_eq(fast_ok(INT32_MAX, -22, 256, 0, 255), 1);
  ck_assert_int_eq(fast_ok(0, -5, -256, 0, 0), 1);
  ck_assert_int_eq(fast_ok(1 << 30, 0, 0, -128, 127), 0);   /* e = 0 */
  ck_assert_int_eq(fast_ok(1 << 30, 1, 0, -128, 127), 0);   /* left shift */
  ck_assert_int_eq(fast_ok(1 << 30, -23, 0, -128, 127), 0); /* e > 22 */
  ck_assert_int_eq(fast_ok(INT32_MIN, -3, 0, -128, 127), 0);
  ck_assert_int_eq(fast_ok(-1, -3, 0, -128, 127), 0);
  ck_assert_int_eq(fast_ok(1 << 30, -3, 257, -128, 127), 0);
  ck_assert_int_eq(fast_ok(1 << 30, -3, 0, 5, 4), 0); /* lo > hi */
  ck_assert_int_eq(fast_ok(1 << 30, INT32_MIN, 0, -128, 127), 0);
  ck_assert_int_eq(fast_ok(1 << 30, INT32_MAX, 0, -128, 127), 0);
  ck_assert_int_eq(fast_ok(1 << 30, -3, INT32_MIN, -128, 127), 0);
}
END_TEST

/* fn on rq_run's cases with n_random random ones: every fast case equal to
 * ctq_requant (else the first that differs, fn named by what); returns
 * the cases run. */
static int64_t rq_expect_equal(fast_fn fn, int64_t n_random, const char *what) {
  rq_stats s;
  memset(&s, 0, sizeof s);
  rq_run(&s, fn, n_random);
  const rq *b = &s.first_bad;
  if (s.n_bad)
    ck_abort_msg("%lld of %lld fast cases differ; first: x %d m %d shift %d zy %d lo %d hi %d "
                 "res %d: ctq_requant %d, %s %d",
                 (long long)s.n_bad, (long long)s.n_fast, b->x, b->m, b->shift, b->zy, b->lo, b->hi,
                 b->has_res, s.want, what, s.got);
  return s.n;
}

/* The saturating form (RQ_SAT: max(y, lo), then the output type's
 * saturation, where the clamp's upper end is the type's and there is no
 * residual) equals ctq_requant on the same kinds of cases, 6 million of
 * them random; a variant without max(y, lo) fails them. */
START_TEST(requant_fast_sat_equals_requant) {
  n_sat = 0;
  const int64_t n = rq_expect_equal(fast_sat, 6000000, "kernel's");
  ck_assert_int_gt(n_sat, n / 5);
  rq_stats w;
  memset(&w, 0, sizeof w);
  rq_run(&w, fast_sat_no_lo, 0);
  ck_assert_msg(w.n_bad > 0, "the saturation without max(y, lo) passes");
  /* what the header check accepts */
  ck_assert_int_eq(ctq_sat_head(-128, 127, 0), 1);
  ck_assert_int_eq(ctq_sat_head(5, 127, 0), 1);
  ck_assert_int_eq(ctq_sat_head(0, 255, 1), 1);
  ck_assert_int_eq(ctq_sat_head(0, 255, 0), 0);    /* int8: 255 is not the type's */
  ck_assert_int_eq(ctq_sat_head(-128, 126, 0), 0); /* ReLU6-like */
  ck_assert_int_eq(ctq_sat_head(-129, 127, 0), 0); /* lo below the type */
  ck_assert_int_eq(ctq_sat_head(-1, 255, 1), 0);
  ck_assert_int_eq(ctq_sat_head(128, 127, 0), 0); /* lo > hi */
}
END_TEST

/* The fast form without its borrow (the depthwise kernel's RQ_SAT where lo
 * >= zy) equals ctq_requant on the same kinds of cases where it applies,
 * 6 million of them random; taking it one step below (lo = zy - 1) fails
 * them. */
START_TEST(requant_fast_nb_equals_requant) {
  n_nb = 0, lo_slack = 0;
  const int64_t n = rq_expect_equal(fast_nb, 6000000, "without the borrow");
  ck_assert_int_gt(n_nb, n / 5);
  rq_stats w;
  memset(&w, 0, sizeof w);
  lo_slack = 1;
  rq_run(&w, fast_nb, 0);
  lo_slack = 0;
  ck_assert_msg(w.n_bad > 0, "the borrow-free form below the zero point passes");
}
END_TEST

/* ---- value checks ------------------------------------------------------------ */

static ct_workload small2d(ct_dtype data, ct_dtype out) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.c = 8;
  w.k = 8;
  w.in[0] = w.in[1] = 6;
  w.kernel[0] = w.kernel[1] = 3;
  w.data_type = data;
  w.out_type = out;
  return w;
}

#define EXPECT_BAD_QUANT(w, q, text)                                                               \
  do {                                                                                             \
    ct_err e_ = {0};                                                                               \
    ct_status st_ = quant_check((w), (q), &e_);                                                    \
    ck_assert_msg(st_ == CT_ERR_INVALID_ARG, "line %d: %s", __LINE__, ct_status_name(st_));        \
    ck_assert_msg(strstr(e_.msg, (text)) != NULL, "line %d: '%s' does not mention '%s'", __LINE__, \
                  e_.msg, (text));                                                                 \
  } while (0)

START_TEST(checks_name_the_field) {
  ct_workload w = small2d(CT_DTYPE_UINT8, CT_DTYPE_INT8);
  w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = w.epi.residual = 1;
  w.epi.scale = CT_SCALE_CHANNEL;
  int32_t zw[8] = {0}, bias[8] = {0};
  float scale[8] = {0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.01f};
  ct_quant q;
  quant_init(&q, &w);
  ck_assert_int_eq(q.clamp_min, -128);
  ck_assert_int_eq(q.clamp_max, 127);
  q.weight_zero_points = zw;
  q.bias = bias;
  q.scale = scale;
  ck_assert_int_eq(quant_check(&w, &q, NULL), CT_OK);
  EXPECT_BAD_QUANT(&w, NULL, "NULL");
  ct_quant b = q;
  b.data_zero_point = -1;
  EXPECT_BAD_QUANT(&w, &b, "data_zero_point is -1; for uint8 it must be 0 to 255");
  b = q, b.weight_zero_points = NULL;
  EXPECT_BAD_QUANT(&w, &b, "weight_zero_points is NULL");
  b = q, b.bias = NULL;
  EXPECT_BAD_QUANT(&w, &b, "bias is NULL");
  b = q, b.scale = NULL;
  EXPECT_BAD_QUANT(&w, &b, "8 values");
  zw[3] = 200;
  EXPECT_BAD_QUANT(&w, &q, "weight_zero_points[3]");
  zw[3] = 0;
  scale[5] = -1.0f;
  EXPECT_BAD_QUANT(&w, &q, "scale[5]");
  scale[5] = 0.01f;
  b = q, b.out_zero_point = 128;
  EXPECT_BAD_QUANT(&w, &b, "out_zero_point");
  b = q, b.clamp_min = 10, b.clamp_max = 5;
  EXPECT_BAD_QUANT(&w, &b, "clamp_min (10) is above clamp_max (5)");
  b = q, b.residual_scale = INFINITY;
  EXPECT_BAD_QUANT(&w, &b, "residual_scale");
  b = q, b.residual_zero_point = -129;
  EXPECT_BAD_QUANT(&w, &b, "residual_zero_point");
  /* a raw workload needs nothing */
  ct_workload raw = small2d(CT_DTYPE_INT8, CT_DTYPE_INT32);
  ck_assert_int_eq(quant_check(&raw, NULL, NULL), CT_OK);
}
END_TEST

/* ---- onnx rounding ----------------------------------------------------------- */

/* x rounded half to even, written out (x a double holding a float, or any
 * double: floor and the comparisons are exact). */
static double rne_slow(double x) {
  double f = floor(x), d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return fmod(f, 2.0) == 0.0 ? f : f + 1;
}

/* float(v) * s as ORT computes it, another way: v is exact as a double, so
 * one conversion to float rounds it as int -> float does; the product of
 * two floats is exact in a double (48 bits), so one more conversion rounds
 * it as a float multiply does. A product beyond 1e30 is returned as it is
 * (every clamp takes it to its end: no float conversion out of range). */
static double fmul_slow(int32_t v, float s) {
  const float fv = (float)(double)v;
  const double p = (double)fv * (double)s;
  return fabs(p) > 1e30 ? p : (double)(float)p;
}

/* ONNX's QuantizeLinear of v as the spec writes it: z + rne(clamp(x, lo - z, hi - z)). */
static int32_t onnx_quantize_slow(int32_t v, float s, int32_t z, int32_t lo, int32_t hi) {
  double x = fmul_slow(v, s);
  if (x < lo - z) x = lo - z;
  if (x > hi - z) x = hi - z;
  return z + (int32_t)rne_slow(x);
}

/* The same in its integer form: clamp(z + rne(x), lo, hi), rne saturated
 * to int32 as __float2int_rn saturates, the sum exact. The kernels take the
 * float form (as cheap, and no overflow of z + rne(x) in int32); this shows
 * the two equal: rne is monotone and lo, hi are integers. */
static int32_t onnx_quantize_int(int32_t v, float s, int32_t z, int32_t lo, int32_t hi) {
  double r = rne_slow(fmul_slow(v, s));
  int64_t q = r >= 2147483647.0 ? INT32_MAX : r <= -2147483648.0 ? INT32_MIN : (int64_t)r;
  int64_t y = z + q;
  return (int32_t)(y < lo ? lo : y > hi ? hi : y);
}

/* QLinearAdd's fixed part as ORT's x86 build computes float(zy) - (sA zA
 * + sB zB): the A product fused with the sum (the oracle's finding; core/
 * quant.c's onnx_fixed_part, which tests/test_onnx_oracle holds to ORT). */
static float onnx_fix_slow(float sa, int32_t za, float sb, int32_t zb, int32_t zy) {
  return (float)zy - fmaf(sa, (float)za, sb * (float)zb);
}

/* QLinearAdd(A, B) as ORT's x86 kernel computes it: B's fused
 * multiply-add first, then A's, rne, the packs' saturation and the Relu as
 * one clamp (after the rounding here). */
static int32_t onnx_add_slow(int32_t a, int32_t b, float sa, float sb, float f, int32_t lo,
                             int32_t hi) {
  float acc = fmaf((float)b, sb, f);
  acc = fmaf((float)a, sa, acc);
  double y = rne_slow(acc);
  return (int32_t)(y < lo ? lo : y > hi ? hi : y);
}

/* The whole onnx requantization of v from q's values (channel k), by the
 * slow forms: t, then the Add with the residual r in the graph's order. */
static int32_t onnx_slow(const ct_workload *w, const ct_quant *q, int k, int32_t v, int32_t r) {
  float s = q->scale[w->epi.scale == CT_SCALE_CHANNEL ? k : 0];
  if (!w->epi.residual)
    return onnx_quantize_slow(v, s, q->out_zero_point, q->clamp_min, q->clamp_max);
  int32_t t = onnx_quantize_slow(v, s, q->mid_zero_point, q->mid_clamp_min, q->mid_clamp_max);
  int first = q->residual_first;
  float sa = first ? q->residual_scale : q->mid_scale,
        sb = first ? q->mid_scale : q->residual_scale;
  int32_t za = first ? q->residual_zero_point : q->mid_zero_point,
          zb = first ? q->mid_zero_point : q->residual_zero_point;
  float f = onnx_fix_slow(sa, za, sb, zb, q->out_zero_point);
  return onnx_add_slow(first ? r : t, first ? t : r, sa, sb, f, q->clamp_min, q->clamp_max);
}

/* (zero point, lo, hi) of an 8-bit output: int8 and uint8, ReLU and not. */
static const int32_t onnx_clamps[][3] = {{0, -128, 127}, {-128, -128, 127},  {127, -128, 127},
                                         {5, 5, 127},    {-3, -20, 60},      {0, 0, 0},
                                         {0, 0, 255},    {255, 0, 255},      {128, 128, 255},
                                         {100, 0, 200},  {-128, -128, -128}, {7, -128, 6}};
#define N_ONNX_CLAMPS ((int)(sizeof onnx_clamps / sizeof onnx_clamps[0]))

/* QuantizeLinear: ctq_onnx_quantize equals the spec's float form and its
 * integer form on edges (ties at .5 of both signs, |v| > 2^24 where
 * float(v) rounds, int32's ends, products beyond int32 and float's range,
 * denormal and huge scales) and 4 million random cases; and known values
 * that a double product, a truncating or half-away rounding, or a clamp
 * after the conversion would get wrong. */
START_TEST(onnx_quantize_equals_the_spec) {
  const int32_t vs[] = {
      0,         1,         -1,        2,          -2,        3,         -3,
      5,         -5,        127,       -128,       255,       -256,      16777215,
      -16777215, 16777216,  -16777216, 16777217,   -16777217, 16777219,  -16777219,
      50331647,  -50331647, 1 << 30,   -(1 << 30), INT32_MAX, INT32_MIN, INT32_MAX - 63,
      12345,     -98765};
  const float ss[] = {0.5f,     0.25f, 0.125f,   1.0f,       1.5f,        1.0f / 3,
                      1.0f / 6, 0.1f,  0x1p-25f, 0x1p-24f,   1e-10f,      FLT_TRUE_MIN,
                      FLT_MIN,  3e9f,  FLT_MAX,  0.0078125f, 0.99999994f, 0.0123f};
  const int nv = (int)(sizeof vs / sizeof vs[0]), ns = (int)(sizeof ss / sizeof ss[0]);
  rng r;
  rng_seed(&r, 0x0dd5eedu);
  long n_ties_pos = 0, n_ties_neg = 0, n_big = 0;
  for (long i = 0; i < 4000000 + (long)nv * ns * N_ONNX_CLAMPS; i++) {
    int32_t v;
    float s;
    const int32_t *cl;
    long e = i - 4000000;
    if (e >= 0) {
      v = vs[e / (ns * N_ONNX_CLAMPS)];
      s = ss[e / N_ONNX_CLAMPS % ns];
      cl = onnx_clamps[e % N_ONNX_CLAMPS];
    } else {
      v = (int32_t)rng_next(&r) >> rng_range(&r, 0, 31);
      /* a float scale of any mantissa, 2^-40 .. 2^10; or a power of two (ties) */
      uint32_t bits = (uint32_t)rng_range(&r, 87, 137) << 23 | (rng_next(&r) & 0x7fffff);
      if (i % 3 == 0) bits &= 0xff800000u;
      memcpy(&s, &bits, sizeof s);
      cl = onnx_clamps[rng_range(&r, 0, N_ONNX_CLAMPS - 1)];
    }
    const int32_t z = cl[0], lo = cl[1], hi = cl[2];
    const int32_t got = ctq_onnx_quantize(v, s, z, (float)(lo - z), (float)(hi - z));
    const int32_t want = onnx_quantize_slow(v, s, z, lo, hi);
    const int32_t want_int = onnx_quantize_int(v, s, z, lo, hi);
    if (got != want || want_int != want)
      ck_abort_msg("v %d scale %a (zy %d, [%d, %d]): ctq_onnx_quantize %d, the spec %d, its "
                   "integer form %d",
                   v, (double)s, z, lo, hi, got, want, want_int);
    const double x = fmul_slow(v, s);
    if (x - floor(x) == 0.5 && x > lo - z && x < hi - z) {
      if (x > 0)
        n_ties_pos++;
      else
        n_ties_neg++;
    }
    n_big += v > 16777216 || v < -16777216;
  }
  ck_assert_int_gt(n_ties_pos, 1000);
  ck_assert_int_gt(n_ties_neg, 1000);
  ck_assert_int_gt(n_big, 100000);
  /* near ties with |v| > 2^24, where float(v) rounds: s = float(x / v)
   * for x = k + 0.5, so that v s lies within an ulp or so of the tie. Two
   * wrong forms differ from the spec on some of them (so would a kernel
   * that computed them): the exact product rounded to float once, and the
   * product in double */
  long n_single = 0, n_double = 0;
  for (int i = 0; i < 1000000; i++) {
    int32_t v = (int32_t)(rng_next(&r) | 0x01000000u) >> rng_range(&r, 0, 6);
    if (i % 2) v = -v;
    double x0 = rng_range(&r, -120, 120) + 0.5;
    float s = (float)(x0 / v);
    if (!(s > 0)) continue;
    const int32_t *cl = onnx_clamps[0];
    int32_t got = ctq_onnx_quantize(v, s, cl[0], (float)(cl[1] - cl[0]), (float)(cl[2] - cl[0]));
    int32_t want = onnx_quantize_slow(v, s, cl[0], cl[1], cl[2]);
    if (got != want)
      ck_abort_msg("near tie: v %d scale %a: ctq_onnx_quantize %d, the spec %d", v, (double)s, got,
                   want);
    n_single += (int32_t)rne_slow((float)((double)v * s)) != want;
    n_double += (int32_t)rne_slow((double)v * s) != want;
  }
  ck_assert_int_gt(n_single, 0);
  ck_assert_int_gt(n_double, 0);
  /* half to even, both signs */
  ck_assert_int_eq(ctq_onnx_quantize(1, 0.5f, 0, -128.0f, 127.0f), 0);
  ck_assert_int_eq(ctq_onnx_quantize(3, 0.5f, 0, -128.0f, 127.0f), 2);
  ck_assert_int_eq(ctq_onnx_quantize(5, 0.5f, 0, -128.0f, 127.0f), 2);
  ck_assert_int_eq(ctq_onnx_quantize(-1, 0.5f, 0, -128.0f, 127.0f), 0);
  ck_assert_int_eq(ctq_onnx_quantize(-3, 0.5f, 0, -128.0f, 127.0f), -2);
  ck_assert_int_eq(ctq_onnx_quantize(-5, 0.5f, 3, -131.0f, 124.0f), -2 + 3);
  ck_assert_int_eq(ctq_onnx_quantize(-6, 0.25f, 0, -128.0f, 127.0f), -2); /* -1.5 */
  /* float(50331647) is 50331648: 1.5 at 2^-25, which rounds to 2; in exact
   * (or double) arithmetic it is below 1.5 and would give 1 */
  ck_assert_int_eq(ctq_onnx_quantize(50331647, 0x1p-25f, 0, -128.0f, 127.0f), 2);
  /* 3 x float(1/6) = 0.50000001 in double, exactly 0.5 as a float
   * product: the tie goes to 0; a double product would give 1 */
  ck_assert_int_eq(ctq_onnx_quantize(3, 1.0f / 6, 0, -128.0f, 127.0f), 0);
  /* saturation before the conversion, however large the product */
  ck_assert_int_eq(ctq_onnx_quantize(INT32_MAX, 3e9f, 0, -128.0f, 127.0f), 127);
  ck_assert_int_eq(ctq_onnx_quantize(INT32_MIN, 3e9f, 0, -128.0f, 127.0f), -128);
  ck_assert_int_eq(ctq_onnx_quantize(INT32_MAX, FLT_MAX, 128, -128.0f, 127.0f), 255);
  ck_assert_int_eq(ctq_onnx_quantize(-1, FLT_MAX, 128, -128.0f, 127.0f), 0);
  ck_assert_int_eq(ctq_onnx_quantize(INT32_MAX, FLT_TRUE_MIN, 7, -135.0f, 120.0f), 7);
  ck_assert_int_eq(ctq_onnx_quantize(1000, 1.0f, 10, -138.0f, 117.0f), 127);
}
END_TEST

/* The residual add's values of case cfg into q: the pairs of ratios for
 * the first 2 x n_ratios cases (each int8 and uint8), then random ones;
 * random zero points but the first 4 cases' mid one (and, with
 * edge_res_zp, the residual's): the type's middle; a ReLU-like low clamp
 * every third case, a random high one every fifth, a ReLU before the add
 * every fourth. */
/* small2d with a residual and onnx rounding (int8 data, int8 or uint8
 * output), q initialised with the one tensor scale *scale. */
static ct_workload onnx_residual_case(int u8, float *scale, ct_quant *q) {
  ct_workload w = small2d(CT_DTYPE_INT8, u8 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8);
  w.epi.residual = 1;
  w.epi.rounding = CT_ROUND_ONNX;
  quant_init(q, &w);
  q->scale = scale;
  return w;
}

static void onnx_add_values(int cfg, const float (*ratios)[2], int n_ratios, int edge_res_zp,
                            int u8, rng *rs, ct_quant *q) {
  const int tmin = u8 ? 0 : -128, tmax = u8 ? 255 : 127;
  if (cfg < 2 * n_ratios) {
    q->mid_scale = ratios[cfg / 2][0];
    q->residual_scale = ratios[cfg / 2][1];
  } else {
    q->mid_scale = (float)(0.05 + (double)(rng_next(rs) % 20000) / 10000.0);
    q->residual_scale = (float)(0.05 + (double)(rng_next(rs) % 20000) / 10000.0);
  }
  q->out_zero_point = rng_range(rs, tmin, tmax);
  q->mid_zero_point = cfg < 4 ? (u8 ? 128 : 0) : rng_range(rs, tmin, tmax);
  q->residual_zero_point = edge_res_zp && cfg < 4 ? (u8 ? 128 : 0) : rng_range(rs, tmin, tmax);
  q->clamp_min = cfg % 3 == 0 ? q->out_zero_point : tmin;
  q->clamp_max = cfg % 5 == 0 ? rng_range(rs, q->clamp_min, tmax) : tmax;
  q->mid_clamp_min = cfg % 4 == 1 ? q->mid_zero_point : tmin;
  q->mid_clamp_max = tmax;
}

/* QLinearAdd: ctq_onnx_add equals the spec's fused multiply-adds on every
 * (t, r) pair of the type for edge and random ratios and zero points, in
 * both orders; the order is observable (the two Adds round differently on
 * some pairs); and the params block's onnx block (quant_onnx_block) carries
 * what the formula needs. */
START_TEST(onnx_add_equals_the_spec) {
  rng rs;
  rng_seed(&rs, 0xadd0u);
  long n = 0, n_order_differs = 0;
  for (int cfg = 0; cfg < 48; cfg++) {
    int u8 = cfg % 2, tmin = u8 ? 0 : -128, tmax = u8 ? 255 : 127;
    float scale = 0.01f;
    ct_quant q;
    ct_workload w = onnx_residual_case(u8, &scale, &q);
    static const float ratios[][2] = {{0.5f, 0.5f},   {0.25f, 0.75f},   {1.0f, 1.0f},
                                      {1e-6f, 1e-6f}, {1000.0f, 1e-3f}, {1048575.0f, 0.5f}};
    onnx_add_values(cfg, ratios, 6, 1, u8, &rs, &q);
    ct_err err = {0};
    int32_t block[2][CTQO_WORDS];
    for (int first = 0; first < 2; first++) {
      q.residual_first = first;
      ck_assert_msg(quant_check(&w, &q, &err) == CT_OK, "%s", err.msg);
      quant_onnx_block(&w, &q, block[first]);
    }
    ctq_onnx o[2];
    for (int first = 0; first < 2; first++)
      o[first] = ctq_onnx_load(block[first], q.clamp_min, q.clamp_max);
    ck_assert_int_eq(o[0].first, 0);
    ck_assert_int_eq(o[1].first, 1);
    ck_assert(o[0].sa == q.mid_scale && o[0].sb == q.residual_scale);
    ck_assert(o[1].sa == q.residual_scale && o[1].sb == q.mid_scale);
    ck_assert_int_eq(o[0].qz, q.mid_zero_point);
    ck_assert(o[0].qlo == (float)(q.mid_clamp_min - q.mid_zero_point));
    ck_assert(o[0].qhi == (float)(q.mid_clamp_max - q.mid_zero_point));
    for (int t = tmin; t <= tmax; t++)
      for (int r = tmin; r <= tmax; r++) {
        int32_t got[2];
        for (int first = 0; first < 2; first++) {
          const ctq_onnx *of = &o[first];
          got[first] = ctq_onnx_add(t, r, of);
          int32_t za = first ? q.residual_zero_point : q.mid_zero_point,
                  zb = first ? q.mid_zero_point : q.residual_zero_point;
          float f = onnx_fix_slow(of->sa, za, of->sb, zb, q.out_zero_point);
          if (of->fix != f) ck_abort_msg("f is %a, want %a", (double)of->fix, (double)f);
          int32_t want = onnx_add_slow(first ? r : t, first ? t : r, of->sa, of->sb, f, q.clamp_min,
                                       q.clamp_max);
          if (got[first] != want)
            ck_abort_msg("Add(%s) t %d r %d (sA %a sB %a f %a, zy %d, [%d, %d]): ctq_onnx_add "
                         "%d, the spec %d",
                         first ? "r, t" : "t, r", t, r, (double)of->sa, (double)of->sb, (double)f,
                         q.out_zero_point, q.clamp_min, q.clamp_max, got[first], want);
          n++;
        }
        n_order_differs += got[0] != got[1];
      }
  }
  ck_assert_int_gt(n, 6000000);
  ck_assert_int_gt(n_order_differs, 0);
}
END_TEST

/* The kernels' form (ctq_requant_onnx_word: the magic number's adds, the
 * output byte in the low byte of a float's bits) gives ctq_requant_onnx's
 * byte: with and without a residual, both orders, int8 and uint8, edge and
 * random ratios and zero points (odd ones included), scales that make ties
 * (0.5, 0.25) and others, every accumulator in [-1100, 1100] (every tie of
 * the first rounding there), random ones of every magnitude and the int32
 * extremes, every residual value of the type. */
START_TEST(onnx_word_equals_requant_onnx) {
  rng rs;
  rng_seed(&rs, 0x3a6du);
  long n = 0;
  for (int cfg = 0; cfg < 32; cfg++) {
    const int u8 = cfg % 2, tmin = u8 ? 0 : -128, tmax = u8 ? 255 : 127;
    float scale = 0.01f;
    ct_quant q;
    ct_workload w = onnx_residual_case(u8, &scale, &q);
    static const float ratios[][2] = {{0.5f, 0.5f}, {0.25f, 0.75f}, {1.0f, 1.0f}, {1000.0f, 1e-3f}};
    onnx_add_values(cfg, ratios, 4, 0, u8, &rs, &q);
    q.residual_first = cfg / 2 % 2;
    ct_err err = {0};
    ck_assert_msg(quant_check(&w, &q, &err) == CT_OK, "%s", err.msg);
    int32_t block[CTQO_WORDS];
    quant_onnx_block(&w, &q, block);
    const ctq_onnx o = ctq_onnx_load(block, q.clamp_min, q.clamp_max);
    const float scales[] = {0.5f, 0.25f, 1.0f / 3, 0.0173f, 3e-6f, 2.0f};
    const float s = scales[cfg % 6];
    for (int i = 0; i < 2201 + 4000; i++) {
      int32_t v = i < 2201 ? i - 1100 : (int32_t)rng_next(&rs) >> rng_range(&rs, 0, 31);
      if (i == 2201) v = INT32_MAX;
      if (i == 2202) v = INT32_MIN;
      for (int has_res = 0; has_res < 2; has_res++)
        for (int r = tmin; r <= (has_res ? tmax : tmin); r++) {
          const uint32_t got = ctq_requant_onnx_word(v, s, &o, has_res, (float)r) & 0xffu;
          const uint32_t want = (uint32_t)ctq_requant_onnx(v, s, &o, has_res, r) & 0xffu;
          if (got != want)
            ck_abort_msg("cfg %d v %d scale %a r %d (res %d, first %d, zt %d): the word's byte "
                         "0x%02x, ctq_requant_onnx's 0x%02x",
                         cfg, v, (double)s, r, has_res, o.first, o.qz, got, want);
          n++;
        }
    }
  }
  ck_assert_int_gt(n, 40000000);
}
END_TEST

/* The seeded forms (ctq_requant_onnx_seeded: the sums seeded with the
 * magic number's bits, the type's saturation after) give ctq_requant_onnx's
 * output wherever quant_onnx_block sets their flags: without the clamp's
 * min where CTQO_HISAT, with it where CTQO_SEED alone; int8 and uint8, zero
 * points odd and even, a ReLU's clamp and none, a clamp's top inside the
 * type, scales that make ties and others, per tensor and per channel,
 * every accumulator in [-1100, 1100] and random ones up to the bound the
 * flags prove. The flags are off where their conditions fail: a bias too
 * large (both), a scale too large (CTQO_HISAT), a residual (both). */
START_TEST(onnx_seeded_equals_requant_onnx) {
  rng rs;
  rng_seed(&rs, 0x5a7u);
  long n = 0, n_hi = 0;
  static const float scales[] = {0.5f, 0.25f, 1.0f / 3, 0.0173f, 3e-6f, 1.25f, 0.75f, 1.5f};
  for (int cfg = 0; cfg < 64; cfg++) {
    const int u8 = cfg % 2, tmin = u8 ? 0 : -128, tmax = u8 ? 255 : 127;
    ct_workload w = small2d(CT_DTYPE_INT8, u8 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8);
    w.epi.bias = 1;
    w.epi.rounding = CT_ROUND_ONNX;
    w.epi.scale = cfg / 2 % 2 ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
    float scale[8];
    int32_t bias[8];
    for (int k = 0; k < 8; k++) {
      scale[k] = scales[(cfg / 4 + k) % 8];
      bias[k] = (int32_t)rng_range(&rs, -300000, 300000);
    }
    ct_quant q;
    quant_init(&q, &w);
    q.scale = scale;
    q.bias = bias;
    q.out_zero_point = (int32_t)rng_range(&rs, tmin, tmax); /* odd and even */
    q.clamp_min = cfg / 4 % 3 == 0 ? tmin : cfg / 4 % 3 == 1 ? q.out_zero_point
                                                              : (int32_t)rng_range(&rs, tmin, tmax);
    /* the top: the type's, or inside it (a ReLU6's) */
    const int inside = cfg / 8 % 2;
    q.clamp_max = inside ? (int32_t)rng_range(&rs, q.clamp_min, tmax - 1) : tmax;
    ct_err err = {0};
    ck_assert_msg(quant_check(&w, &q, &err) == CT_OK, "%s", err.msg);
    int32_t block[CTQO_WORDS];
    quant_onnx_block(&w, &q, block);
    ck_assert_msg(block[CTQO_FIRST] == (inside ? CTQO_SEED : CTQO_SEED | CTQO_HISAT),
                  "cfg %d: flags %d", cfg, block[CTQO_FIRST]);
    const ctq_onnx o = ctq_onnx_load(block, q.clamp_min, q.clamp_max);
    ck_assert(o.seed && o.hisat == !inside && !o.first);
    /* the flags' bound on the sums: 72 x 255 x 128 past the bias */
    const int32_t bound = 72 * 255 * 128;
    for (int kk = 0; kk < 8; kk++) {
      const float s = scale[w.epi.scale == CT_SCALE_CHANNEL ? kk : 0];
      for (int i = 0; i < 2201 + 20000; i++) {
        int32_t v = i < 2201 ? i - 1100 : bias[kk] + (int32_t)rng_range(&rs, -bound, bound);
        if (i == 2201) v = bias[kk] + bound;
        if (i == 2202) v = bias[kk] - bound;
        const int32_t seeded = (int32_t)((uint32_t)v + (uint32_t)CTQ_MAGIC_I);
        int32_t got = ctq_requant_onnx_seeded(seeded, s, &o, !o.hisat);
        got = got < tmin ? tmin : got > tmax ? tmax : got;
        const int32_t want = ctq_requant_onnx(v, s, &o, 0, 0);
        if (got != want)
          ck_abort_msg("cfg %d v %d scale %a zy %d clamp [%d, %d]: the seeded form %d, "
                       "ctq_requant_onnx %d",
                       cfg, v, (double)s, q.out_zero_point, q.clamp_min, q.clamp_max, got, want);
        n++;
        n_hi += !o.hisat && want == q.clamp_max;
      }
    }
    /* where a condition fails, that flag is off */
    const int32_t b0 = bias[0];
    bias[0] = 4194304 - 256 - 72 * 255 * 128;
    quant_onnx_block(&w, &q, block);
    ck_assert_int_eq(block[CTQO_FIRST], 0);
    bias[0] = b0;
    const float s0 = scale[0];
    scale[0] = 2.0f * 4194304.0f / (float)(abs(b0) + 72 * 255 * 128);
    quant_onnx_block(&w, &q, block);
    ck_assert_int_eq(block[CTQO_FIRST], CTQO_SEED);
    scale[0] = s0;
  }
  ck_assert_int_gt(n, 10000000);
  ck_assert_int_gt(n_hi, 1000); /* the min clamped some */
  /* a residual: never a seeded form (CTQO_FIRST is the add's order) */
  float scale = 0.01f;
  ct_quant q;
  ct_workload w = onnx_residual_case(0, &scale, &q);
  q.residual_first = 1;
  q.mid_scale = q.residual_scale = 0.5f;
  ct_err err = {0};
  ck_assert_msg(quant_check(&w, &q, &err) == CT_OK, "%s", err.msg);
  int32_t block[CTQO_WORDS];
  quant_onnx_block(&w, &q, block);
  ck_assert_int_eq(block[CTQO_FIRST], 1);
  const ctq_onnx o = ctq_onnx_load(block, q.clamp_min, q.clamp_max);
  ck_assert(!o.seed && !o.hisat && o.first == 1);
}
END_TEST

/* The params block of an onnx workload (quant_params) read the way the
 * dp4a kernel reads it (ctq_requant_lane with onnx) equals the slow forms
 * on random values, per tensor and per channel, with and without a
 * residual, both orders; the multipliers are the scales' bits and a scale
 * that gemmlowp refuses (at least 2^30) is taken; the raw form carries the
 * same block. */
START_TEST(onnx_params_carry_the_formula) {
  rng rs;
  rng_seed(&rs, 0x0a11u);
  for (int c = 0; c < 16; c++) {
    int u8 = c % 2;
    ct_workload w = small2d(CT_DTYPE_INT8, u8 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8);
    w.k = 7; /* Kp 8: a padded channel */
    w.epi.bias = 1;
    w.epi.rounding = CT_ROUND_ONNX;
    w.epi.scale = c / 2 % 2 ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
    w.epi.residual = c / 4 % 2;
    quant_store qs;
    ct_err err = {0};
    ck_assert_msg(quant_random(&w, 77u + (uint64_t)c, &qs, &err) == CT_OK, "%s", err.msg);
    if (c >= 8) qs.q.residual_first = !qs.q.residual_first;
    if (c == 15) qs.scale[0] = 3e9f;
    int32_t sums[7] = {0}, *params = xmalloc(quant_params_words(&w) * sizeof *params);
    int32_t *raw = xmalloc(quant_raw_words(&w) * sizeof *raw);
    ck_assert_msg(quant_params(&w, &qs.q, sums, params, &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(quant_raw(&w, &qs.q, raw, &err) == CT_OK, "%s", err.msg);
    const int kp = 8, qc = w.epi.scale == CT_SCALE_CHANNEL;
    ck_assert_int_eq(raw[QRAW_FLAGS], QRAW_ONNX_FLAG);
    ck_assert_mem_eq(raw + QRAW_ONNX, params + CTQ_ONNX, CTQO_WORDS * sizeof *raw);
    for (int k = 0; k < w.k; k++) {
      float s = qs.q.scale[qc ? k : 0];
      int32_t bits;
      memcpy(&bits, &s, sizeof bits);
      ck_assert_int_eq(params[CTQ_HEADER + CTQ_MULTS * kp + k], bits);
      ck_assert_int_eq(params[CTQ_HEADER + CTQ_SHIFTS * kp + k], 0);
      ck_assert_int_eq(raw[QRAW_HEADER + 2 * w.k + k], bits);
    }
    for (int i = 0; i < 200000; i++) {
      int k = rng_range(&rs, 0, w.k - 1);
      int32_t v = (int32_t)rng_next(&rs) >> rng_range(&rs, 0, 31);
      uint32_t rb = rng_next(&rs) & 0xffu;
      int32_t r = u8 ? (int32_t)rb : (int8_t)rb;
      uint32_t got = ctq_requant_lane(params, kp, k, v, rb, qc, u8, w.epi.residual, 1);
      int32_t want = onnx_slow(&w, &qs.q, k, v, r);
      if (got != ((uint32_t)want & 0xffu))
        ck_abort_msg("case %d channel %d v %d r %d: the params block gives 0x%02x, the spec %d", c,
                     k, v, r, got, want);
    }
    free(params);
    free(raw);
    quant_store_free(&qs);
  }
}
END_TEST

/* quant_check with onnx rounding: any finite positive scale (gemmlowp's
 * 2^30 bound is not onnx's), the residual's mid_* values and ratios, each
 * named. */
START_TEST(onnx_checks_name_the_field) {
  ct_workload w = small2d(CT_DTYPE_UINT8, CT_DTYPE_UINT8);
  w.epi.rounding = CT_ROUND_ONNX;
  w.epi.scale = CT_SCALE_CHANNEL;
  float scale[8] = {0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 3e9f};
  ct_quant q;
  quant_init(&q, &w);
  q.scale = scale;
  ck_assert_int_eq(quant_check(&w, &q, NULL), CT_OK);
  scale[7] = FLT_TRUE_MIN;
  ck_assert_int_eq(quant_check(&w, &q, NULL), CT_OK);
  scale[6] = 0.0f;
  EXPECT_BAD_QUANT(&w, &q, "scale[6] is 0; with onnx rounding it must be finite and above 0");
  scale[6] = -0.5f;
  EXPECT_BAD_QUANT(&w, &q, "scale[6]");
  scale[6] = NAN;
  EXPECT_BAD_QUANT(&w, &q, "scale[6]");
  scale[6] = INFINITY;
  EXPECT_BAD_QUANT(&w, &q, "scale[6]");
  scale[6] = 0.01f;
  ct_quant b = q;
  b.clamp_min = 200, b.clamp_max = 100;
  EXPECT_BAD_QUANT(&w, &b, "clamp_min (200) is above clamp_max (100)");
  /* the residual's values: the mid_* ones and the two ratios */
  w.epi.residual = 1;
  q.mid_scale = 0.5f;
  q.mid_clamp_max = 255;
  ck_assert_int_eq(quant_check(&w, &q, NULL), CT_OK);
  b = q, b.mid_scale = 0.0f;
  EXPECT_BAD_QUANT(&w, &b, "mid_scale is 0; with onnx rounding it must be finite, above 0");
  b = q, b.mid_scale = NAN;
  EXPECT_BAD_QUANT(&w, &b, "mid_scale");
  b = q, b.residual_scale = 1048576.0f;
  EXPECT_BAD_QUANT(&w, &b,
                   "residual_scale is 1.04858e+06; with onnx rounding it must be finite, "
                   "above 0 and below 2^20");
  b = q, b.residual_scale = 1048575.0f;
  ck_assert_int_eq(quant_check(&w, &b, NULL), CT_OK);
  b = q, b.mid_zero_point = 256;
  EXPECT_BAD_QUANT(&w, &b, "mid_zero_point is 256; for uint8 it must be 0 to 255");
  b = q, b.mid_clamp_min = -1;
  EXPECT_BAD_QUANT(&w, &b, "mid_clamp_min");
  b = q, b.mid_clamp_max = 300;
  EXPECT_BAD_QUANT(&w, &b, "mid_clamp_max");
  b = q, b.mid_clamp_min = 9, b.mid_clamp_max = 8;
  EXPECT_BAD_QUANT(&w, &b, "mid_clamp_min (9) is above mid_clamp_max (8)");
  b = q, b.residual_first = 2;
  EXPECT_BAD_QUANT(&w, &b, "residual_first is 2");
  b = q, b.residual_zero_point = -1;
  EXPECT_BAD_QUANT(&w, &b, "residual_zero_point");
  /* gemmlowp ignores the mid_* values, and keeps its own scale bound */
  w.epi.rounding = CT_ROUND_GEMMLOWP;
  b = q, b.mid_scale = NAN, b.mid_clamp_min = 9, b.mid_clamp_max = 8, b.residual_first = 5;
  scale[7] = 0.01f;
  ck_assert_int_eq(quant_check(&w, &b, NULL), CT_OK);
  scale[7] = 3e9f;
  EXPECT_BAD_QUANT(&w, &b, "scale[7]");
}
END_TEST

/* ---- the naive quantized convolution ----------------------------------------- */

typedef struct qcase {
  ct_workload w;
  quant_store qs;
  uint8_t *data, *res; /* in w's layout */
  int8_t *weights;     /* in w's layout */
  size_t n_data, n_weights, n_out;
} qcase;

/* Element (n, c, z, y, x) of a data-like tensor of C channels in layout l. */
static int64_t act_index(ct_layout l, int64_t n, int64_t c, int64_t C, int64_t z, int64_t y,
                         int64_t x, int64_t D, int64_t H, int64_t W) {
  if (l == CT_LAYOUT_NHWC) return (((n * D + z) * H + y) * W + x) * C + c;
  if (l == CT_LAYOUT_NCHW) return (((n * C + c) * D + z) * H + y) * W + x;
  int64_t C4 = (C + 3) / 4;
  return ((((n * C4 + c / 4) * D + z) * H + y) * W + x) * 4 + c % 4;
}

static int64_t weight_index(ct_layout l, int64_t k, int64_t c, int64_t K, int64_t C, int64_t t,
                            int64_t kvol) {
  (void)K;
  if (l == CT_LAYOUT_NHWC) return (k * kvol + t) * C + c;
  if (l == CT_LAYOUT_NCHW) return (k * C + c) * kvol + t;
  int64_t C4 = (C + 3) / 4;
  return ((((k / 4) * C4 + c / 4) * kvol + t) * 4 + k % 4) * 4 + c % 4;
}

/* The output element at output coordinates (n, oc, z, y, x) of the remapped
 * tensor, computed from scratch. */
static int32_t naive_at(const qcase *t, int64_t n, int64_t oc, int64_t z, int64_t y, int64_t x) {
  const ct_workload *w = &t->w;
  const ct_quant *q = &t->qs.q;
  geom3 g;
  workload_geom(w, &g);
  ct_layout l = w->layout;
  int is3 = workload_nd(w) == 3;
  int b = w->epi.d2s_block ? w->epi.d2s_block : 1, bd = is3 ? b : 1;
  int64_t cout = workload_out_channels(w), vol = workload_d2s_volume(w);
  /* which conv channel and position land here */
  int64_t i_d = z % bd, i_h = y % b, i_w = x % b, od = z / bd, oh = y / b, ow = x / b;
  int64_t blk = (i_d * b + i_h) * b + i_w, k;
  if (vol == 1)
    k = oc;
  else if (w->epi.d2s_mode == CT_D2S_DCR)
    k = blk * cout + oc;
  else
    k = oc * vol + blk;
  int32_t zx = w->epi.data_zero_point ? q->data_zero_point : 0;
  int32_t zw = w->epi.weight_zero_point ? q->weight_zero_points[k] : 0;
  int64_t kvol = g.ker[0] * g.ker[1] * g.ker[2];
  int64_t acc = 0;
  for (int64_t c = 0; c < g.c; c++)
    for (int64_t kd = 0; kd < g.ker[0]; kd++)
      for (int64_t kh = 0; kh < g.ker[1]; kh++)
        for (int64_t kw = 0; kw < g.ker[2]; kw++) {
          int64_t id = od * g.str[0] - g.pb[0] + kd * g.dil[0];
          int64_t ih = oh * g.str[1] - g.pb[1] + kh * g.dil[1];
          int64_t iw = ow * g.str[2] - g.pb[2] + kw * g.dil[2];
          int32_t xv = zx; /* padding is the zero point */
          if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2]) {
            uint8_t byte = t->data[act_index(l, n, c, g.c, id, ih, iw, g.in[0], g.in[1], g.in[2])];
            xv = w->data_type == CT_DTYPE_UINT8 ? byte : (int8_t)byte;
          }
          int64_t tap = (kd * g.ker[1] + kh) * g.ker[2] + kw;
          int32_t wv = t->weights[weight_index(l, k, c, g.k, g.c, tap, kvol)];
          acc += (int64_t)(xv - zx) * (wv - zw);
        }
  int32_t v = (int32_t)(uint32_t)((uint64_t)acc + (uint64_t)(w->epi.bias ? q->bias[k] : 0));
  if (w->out_type == CT_DTYPE_INT32) return v;
  if (w->epi.rounding == CT_ROUND_ONNX) {
    int32_t r = 0;
    if (w->epi.residual) {
      int64_t OD = g.out[0] * bd, OH = g.out[1] * b, OW = g.out[2] * b;
      uint8_t rb = t->res[act_index(l, n, oc, cout, z, y, x, OD, OH, OW)];
      r = w->out_type == CT_DTYPE_UINT8 ? rb : (int8_t)rb;
    }
    return onnx_slow(w, q, (int)k, v, r);
  }
  int32_t m, sh, rm = 0, rs = 0;
  quant_multiplier(q->scale[w->epi.scale == CT_SCALE_CHANNEL ? k : 0], &m, &sh, NULL);
  int64_t y64 = (int64_t)q->out_zero_point + ctq_rescale(v, m, sh);
  if (w->epi.residual) {
    quant_multiplier(q->residual_scale, &rm, &rs, NULL);
    int64_t OD = g.out[0] * bd, OH = g.out[1] * b, OW = g.out[2] * b;
    uint8_t rb = t->res[act_index(l, n, oc, cout, z, y, x, OD, OH, OW)];
    int32_t r = w->out_type == CT_DTYPE_UINT8 ? rb : (int8_t)rb;
    y64 += ctq_rescale(r - q->residual_zero_point, rm, rs);
  }
  return (int32_t)(y64 < q->clamp_min ? q->clamp_min : y64 > q->clamp_max ? q->clamp_max : y64);
}

static void fill(rng *r, void *p, size_t n) {
  for (size_t i = 0; i < n; i++) ((uint8_t *)p)[i] = (uint8_t)rng_next(r);
}

static void qcase_make(qcase *t, const ct_workload *w, uint32_t seed) {
  memset(t, 0, sizeof *t);
  t->w = *w;
  ct_err err = {0};
  ck_assert_msg(workload_validate(w, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(quant_random(w, seed, &t->qs, &err) == CT_OK, "%s", err.msg);
  t->n_data = (size_t)workload_data_elems(w);
  t->n_weights = (size_t)workload_weight_elems(w);
  t->n_out = (size_t)workload_out_elems(w);
  t->data = xmalloc(t->n_data);
  t->weights = xmalloc(t->n_weights);
  t->res = xmalloc(t->n_out);
  rng r;
  rng_seed(&r, seed | 1);
  fill(&r, t->data, t->n_data);
  fill(&r, t->weights, t->n_weights);
  fill(&r, t->res, t->n_out);
}

static void qcase_free(qcase *t) {
  quant_store_free(&t->qs);
  free(t->data);
  free(t->weights);
  free(t->res);
}

/* Element i of an output buffer of w's type. */
static int32_t out_at(const ct_workload *w, const void *out, size_t i) {
  if (w->out_type == CT_DTYPE_INT32) return ((const int32_t *)out)[i];
  uint8_t b = ((const uint8_t *)out)[i];
  return w->out_type == CT_DTYPE_UINT8 ? b : (int8_t)b;
}

/* reference_qconv against naive_at on every element (packed padding lanes: 0). */
static void check_reference(const qcase *t, const char *what) {
  const ct_workload *w = &t->w;
  size_t eb = workload_out_elem_bytes(w);
  void *out = xmalloc(t->n_out * eb);
  memset(out, 0xA5, t->n_out * eb);
  ct_err err = {0};
  ct_status st = reference_qconv(w, &t->qs.q, t->data, t->weights, t->res, out, &err);
  ck_assert_msg(st == CT_OK, "%s: %s", what, err.msg);
  geom3 g;
  workload_geom(w, &g);
  int packed = w->layout == CT_LAYOUT_NCHW4C, is3 = workload_nd(w) == 3;
  int b = w->epi.d2s_block ? w->epi.d2s_block : 1, bd = is3 ? b : 1;
  int64_t cout = workload_out_channels(w), cpad = packed ? (cout + 3) / 4 * 4 : cout;
  int64_t OD = g.out[0] * bd, OH = g.out[1] * b, OW = g.out[2] * b;
  int64_t distinct = 0, prev = INT64_MIN;
  for (int64_t n = 0; n < g.n; n++)
    for (int64_t c = 0; c < cpad; c++)
      for (int64_t z = 0; z < OD; z++)
        for (int64_t y = 0; y < OH; y++)
          for (int64_t x = 0; x < OW; x++) {
            int64_t i = act_index(w->layout, n, c, cout, z, y, x, OD, OH, OW);
            int32_t want = c < cout ? naive_at(t, n, c, z, y, x) : 0;
            int32_t got = out_at(w, out, (size_t)i);
            if (got != want)
              ck_abort_msg("%s: output (%lld, %lld, %lld, %lld, %lld) is %d, want %d", what,
                           (long long)n, (long long)c, (long long)z, (long long)y, (long long)x,
                           got, want);
            if (want != prev) distinct++;
            prev = want;
          }
  /* a test whose outputs are all one clamped value would prove little */
  ck_assert_msg(distinct > 2, "%s: the outputs take only %lld values", what, (long long)distinct);
  free(out);
}

/* A small conv: 2D or 3D, stride and asymmetric padding so that borders pad. */
static ct_workload case_workload(int is3, int c, int k, ct_layout layout) {
  ct_workload w;
  workload_init(&w, is3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  int nd = workload_nd(&w);
  w.layout = layout;
  w.n = 2;
  w.c = c;
  w.k = k;
  for (int d = 0; d < nd; d++) {
    w.in[d] = is3 ? 4 + d : 7 + d;
    w.kernel[d] = 3;
    w.stride[d] = d == nd - 1 ? 2 : 1;
    w.pad_before[d] = 1;
    w.pad_after[d] = d == 0 ? 2 : 1;
  }
  return w;
}

START_TEST(reference_of_each_epilogue) {
  static const ct_dtype outs[3] = {CT_DTYPE_INT32, CT_DTYPE_INT8, CT_DTYPE_UINT8};
  static const ct_layout layouts[3] = {CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C, CT_LAYOUT_NHWC};
  int n = 0, n_first[2] = {0, 0};
  for (int is3 = 0; is3 < 2; is3++)
    for (int li = 0; li < 3; li++)
      for (int o = 0; o < 3; o++)
        for (int variant = 0; variant < 9; variant++) {
          int q8 = outs[o] != CT_DTYPE_INT32, packed = layouts[li] == CT_LAYOUT_NCHW4C;
          if (variant >= 6 && !q8) continue; /* onnx rounding: 8-bit output only */
          ct_workload w = case_workload(is3, packed ? 8 : 5, packed ? 8 : 6, layouts[li]);
          w.out_type = outs[o];
          /* one epilogue feature per variant, then all together */
          switch (variant) {
          case 0:
            break;
          case 1:
            w.data_type = CT_DTYPE_UINT8;
            w.epi.data_zero_point = 1;
            break;
          case 2:
            w.epi.data_zero_point = 1;
            w.epi.weight_zero_point = 1;
            break;
          case 3:
            w.epi.bias = 1;
            w.epi.scale = q8 ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
            break;
          case 4:
            w.epi.residual = q8;
            w.epi.bias = 1;
            break;
          case 5:
            w.data_type = CT_DTYPE_UINT8;
            w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = 1;
            w.epi.residual = q8;
            w.epi.scale = q8 ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
            break;
          case 6: /* onnx rounding, per channel */
            w.epi.bias = 1;
            w.epi.scale = CT_SCALE_CHANNEL;
            w.epi.rounding = CT_ROUND_ONNX;
            break;
          default: /* onnx with everything: the residual's Add in either order (by seed) */
            w.data_type = CT_DTYPE_UINT8;
            w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = w.epi.residual = 1;
            w.epi.scale = variant == 7 ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
            w.epi.rounding = CT_ROUND_ONNX;
          }
          qcase t;
          qcase_make(&t, &w, 1000u + (uint32_t)n++);
          if (w.epi.residual && w.epi.rounding == CT_ROUND_ONNX) {
            t.qs.q.residual_first = variant == 8;
            n_first[variant == 8]++;
          }
          char key[CT_KEY_MAX];
          check_reference(&t, workload_key(&w, key, sizeof key));
          qcase_free(&t);
        }
  ck_assert_int_gt(n_first[0], 0);
  ck_assert_int_gt(n_first[1], 0);
}
END_TEST

START_TEST(reference_depth_to_space_both_modes) {
  for (int is3 = 0; is3 < 2; is3++)
    for (int packed = 0; packed < 2; packed++)
      for (int mode = 0; mode < 2; mode++)
        for (int b = 2; b <= 3; b++) {
          int vol = is3 ? b * b * b : b * b;
          /* 3 output channels: packed, a chunk of 4 with one zero lane */
          ct_workload w = case_workload(is3, packed ? 4 : 3, 3 * vol,
                                        packed ? CT_LAYOUT_NCHW4C : CT_LAYOUT_NCHW);
          w.out_type = mode ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
          w.epi.bias = 1;
          w.epi.residual = 1;
          w.epi.d2s_block = b;
          w.epi.d2s_mode = mode ? CT_D2S_CRD : CT_D2S_DCR;
          qcase t;
          qcase_make(&t, &w, 77u + (uint32_t)(b * 8 + mode * 4 + packed * 2 + is3));
          char key[CT_KEY_MAX];
          check_reference(&t, workload_key(&w, key, sizeof key));
          qcase_free(&t);
        }
  /* int32 output remaps too: ESPCN's 48 channels into 3 at 4x */
  ct_workload w = case_workload(0, 8, 48, CT_LAYOUT_NCHW);
  w.epi.d2s_block = 4;
  qcase t;
  qcase_make(&t, &w, 5);
  check_reference(&t, "espcn-like int32");
  qcase_free(&t);
}
END_TEST

/* ---- channels last against plain ---------------------------------------------- */

/* A random conv (2D or 3D, stride up to 2, padding, dilation, odd channel
 * counts) with a random epilogue (no depth_to_space: NHWC has none), plain. */
static ct_workload random_plain_case(rng *r, int i) {
  int is3 = i % 2;
  ct_workload w;
  workload_init(&w, is3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  int nd = workload_nd(&w);
  w.n = rng_range(r, 1, 3);
  w.c = rng_range(r, 1, 9);
  w.k = rng_range(r, 1, 10);
  for (int d = 0; d < nd; d++) {
    w.kernel[d] = rng_range(r, 1, 3);
    w.stride[d] = rng_range(r, 1, 2);
    w.dilation[d] = rng_range(r, 0, 2) ? 1 : 2;
    w.pad_before[d] = rng_range(r, 0, 2);
    w.pad_after[d] = rng_range(r, 0, 2);
    int extent = w.dilation[d] * (w.kernel[d] - 1) + 1;
    int least = extent - w.pad_before[d] - w.pad_after[d];
    w.in[d] = (least > 1 ? least : 1) + rng_range(r, 0, is3 ? 3 : 6);
  }
  static const ct_dtype outs[3] = {CT_DTYPE_INT32, CT_DTYPE_INT8, CT_DTYPE_UINT8};
  w.out_type = outs[(i / 2) % 3];
  int q8 = w.out_type != CT_DTYPE_INT32;
  w.data_type = rng_range(r, 0, 1) ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
  w.epi.data_zero_point = rng_range(r, 0, 3) > 0;
  w.epi.weight_zero_point = rng_range(r, 0, 1);
  w.epi.bias = rng_range(r, 0, 3) > 0;
  w.epi.scale = q8 && rng_range(r, 0, 1) ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
  w.epi.residual = q8 && rng_range(r, 0, 1);
  return w;
}

/* The NHWC reference on tensors converted from plain ones (pack_nhwc,
 * pack_ohwi), its output converted back, equals the plain reference exactly;
 * and the params block of the NHWC twin (its weight sums from OHWI weights)
 * equals the plain one word for word. */
START_TEST(nhwc_reference_equals_plain_converted) {
  rng r;
  rng_seed(&r, 0x5eedu);
  int n_zw = 0, n_res = 0, n_qc = 0, n_dil = 0, n_s2 = 0, n_zw_odd = 0;
  for (int i = 0; i < 96; i++) {
    ct_workload w = random_plain_case(&r, i), nw = w;
    nw.layout = CT_LAYOUT_NHWC;
    qcase t;
    qcase_make(&t, &w, 4000u + (uint32_t)i);
    ct_err err = {0};
    ck_assert_msg(workload_validate(&nw, &err) == CT_OK, "%s", err.msg);
    ck_assert_uint_eq((size_t)workload_data_elems(&nw), t.n_data);
    ck_assert_uint_eq((size_t)workload_weight_elems(&nw), t.n_weights);
    ck_assert_uint_eq((size_t)workload_out_elems(&nw), t.n_out);
    geom3 g;
    workload_geom(&w, &g);
    int64_t in_sp = g.in[0] * g.in[1] * g.in[2], out_sp = g.out[0] * g.out[1] * g.out[2];
    int64_t kvol = g.ker[0] * g.ker[1] * g.ker[2];
    size_t eb = workload_out_elem_bytes(&w);

    uint8_t *data = xmalloc(t.n_data), *res = xmalloc(t.n_out);
    int8_t *weights = xmalloc(t.n_weights);
    pack_nhwc(t.data, data, 1, g.n, g.c, in_sp);
    pack_ohwi(t.weights, weights, g.k, g.c, kvol);
    pack_nhwc(t.res, res, 1, g.n, g.k, out_sp);
    void *want = xmalloc(t.n_out * eb), *got = xmalloc(t.n_out * eb), *back = xmalloc(t.n_out * eb);
    memset(got, 0xA5, t.n_out * eb);
    ck_assert_msg(reference_qconv(&w, &t.qs.q, t.data, t.weights, t.res, want, &err) == CT_OK, "%s",
                  err.msg);
    ck_assert_msg(reference_qconv(&nw, &t.qs.q, data, weights, res, got, &err) == CT_OK, "%s",
                  err.msg);
    unpack_nhwc(got, back, eb, g.n, g.k, out_sp);
    char key[CT_KEY_MAX];
    for (size_t j = 0; j < t.n_out; j++)
      if (out_at(&w, back, j) != out_at(&w, want, j))
        ck_abort_msg("case %d %s: plain element %zu is %d in nhwc, %d plain", i,
                     workload_key(&nw, key, sizeof key), j, out_at(&w, back, j),
                     out_at(&w, want, j));

    /* weight sums and the params block: the same, but for the border
     * classes' corrections that a channels-last block adds after its
     * arrays (zpad_classes_correct_zero_filled_padding checks those) */
    int32_t *sums = xmalloc((size_t)w.k * sizeof *sums),
            *nsums = xmalloc((size_t)w.k * sizeof *nsums);
    size_t words = quant_params_words(&w);
    ck_assert_uint_eq(quant_params_words(&nw),
                      words + (size_t)quant_zpad_classes(&nw) * (size_t)pack_round4(w.k));
    int32_t *params = xmalloc(words * sizeof *params),
            *nparams = xmalloc(quant_params_words(&nw) * sizeof *nparams);
    quant_weight_sums(&w, t.weights, sums);
    quant_weight_sums(&nw, weights, nsums);
    ck_assert_mem_eq(nsums, sums, (size_t)w.k * sizeof *sums);
    ck_assert_int_eq(quant_params(&w, &t.qs.q, sums, params, &err), CT_OK);
    ck_assert_int_eq(quant_params(&nw, &t.qs.q, nsums, nparams, &err), CT_OK);
    /* with weight zero points and C % 4 != 0 the offsets differ by the
     * padding lanes of the packed window, (round4(C) - C) x kvol x zx x zw:
     * channels-last kernels sum the real channels only */
    if (w.epi.weight_zero_point && w.c % 4) {
      const int64_t kp = (w.k + 3) / 4 * 4;
      const uint32_t zx = w.epi.data_zero_point ? (uint32_t)t.qs.q.data_zero_point : 0;
      for (int k = 0; k < w.k; k++) {
        const uint32_t lanes = (uint32_t)(((w.c + 3) / 4 * 4 - w.c) * kvol);
        uint32_t *off = (uint32_t *)&nparams[CTQ_HEADER + CTQ_OFF * kp + k];
        *off += lanes * zx * (uint32_t)t.qs.q.weight_zero_points[k];
      }
      n_zw_odd++;
    }
    ck_assert_mem_eq(nparams, params, words * sizeof *params);

    n_zw += w.epi.weight_zero_point;
    n_res += w.epi.residual;
    n_qc += w.epi.scale == CT_SCALE_CHANNEL;
    n_dil += w.dilation[0] > 1 || w.dilation[workload_nd(&w) - 1] > 1;
    n_s2 += w.stride[0] > 1 || w.stride[workload_nd(&w) - 1] > 1;
    free(sums);
    free(nsums);
    free(params);
    free(nparams);
    free(data);
    free(res);
    free(weights);
    free(want);
    free(got);
    free(back);
    qcase_free(&t);
  }
  /* the generator covers what it claims to */
  ck_assert_int_gt(n_zw, 20);
  ck_assert_int_gt(n_res, 10);
  ck_assert_int_gt(n_qc, 10);
  ck_assert_int_gt(n_dil, 10);
  ck_assert_int_gt(n_s2, 20);
  ck_assert_int_gt(n_zw_odd, 3);
}
END_TEST

/* ---- the legalization -------------------------------------------------------- */

/* What the kernels compute, on the CPU: the packed workload (channels padded
 * to 4 with the zero point, as the dispatch library packs a plain tensor),
 * raw products and the raw window sum with padding reading the zero point,
 * then the params block through ctq_correct and ctq_requant. Returns the
 * output in the plain remapped layout. */
static void legalized(const qcase *t, void *out) {
  const ct_workload *w = &t->w;
  const ct_quant *q = &t->qs.q;
  ct_workload pw;
  workload_packed(w, &pw);
  geom3 g, pg;
  workload_geom(w, &g);
  workload_geom(&pw, &pg);
  ck_assert(w->layout == CT_LAYOUT_NCHW);
  /* the params block from the plain weights */
  int32_t *sums = xmalloc((size_t)w->k * sizeof *sums);
  int32_t *params = xmalloc(quant_params_words(w) * sizeof *params);
  quant_weight_sums(w, t->weights, sums);
  ct_err err = {0};
  ck_assert_msg(quant_params(w, q, sums, params, &err) == CT_OK, "%s", err.msg);
  int64_t kp = pack_round4(w->k);
  const int32_t *arr = params + CTQ_HEADER;
  int32_t pad = (int32_t)(int8_t)(params[CTQ_PAD_WORD] & 0xff);
  if (w->data_type == CT_DTYPE_UINT8) pad = params[CTQ_PAD_WORD] & 0xff;
  int b = w->epi.d2s_block ? w->epi.d2s_block : 1, bd = workload_nd(w) == 3 ? b : 1;
  int64_t cout = workload_out_channels(w), vol = workload_d2s_volume(w);
  int64_t OD = g.out[0] * bd, OH = g.out[1] * b, OW = g.out[2] * b;
  int64_t kvol = g.ker[0] * g.ker[1] * g.ker[2];
  for (int64_t n = 0; n < g.n; n++)
    for (int64_t k = 0; k < g.k; k++)
      for (int64_t od = 0; od < g.out[0]; od++)
        for (int64_t oh = 0; oh < g.out[1]; oh++)
          for (int64_t ow = 0; ow < g.out[2]; ow++) {
            uint32_t acc = 0, xs = 0;
            for (int64_t c = 0; c < pg.c; c++) /* padded channels too */
              for (int64_t tap = 0; tap < kvol; tap++) {
                int64_t kd = tap / (g.ker[1] * g.ker[2]), kh = tap / g.ker[2] % g.ker[1],
                        kw = tap % g.ker[2];
                int64_t id = od * g.str[0] - g.pb[0] + kd * g.dil[0];
                int64_t ih = oh * g.str[1] - g.pb[1] + kh * g.dil[1];
                int64_t iw = ow * g.str[2] - g.pb[2] + kw * g.dil[2];
                int32_t xv = pad;
                if (c < g.c && id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 &&
                    iw < g.in[2]) {
                  uint8_t byte =
                      t->data[(((n * g.c + c) * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw];
                  xv = w->data_type == CT_DTYPE_UINT8 ? byte : (int8_t)byte;
                }
                int32_t wv = c < g.c ? t->weights[(k * g.c + c) * kvol + tap] : 0;
                acc += (uint32_t)(xv * wv);
                xs += (uint32_t)xv;
              }
            int32_t v =
                ctq_correct((int32_t)acc, arr[CTQ_OFF * kp + k], arr[CTQ_ZW * kp + k], (int32_t)xs);
            int c = (int)k, i_d = 0, i_h = 0, i_w = 0;
            if (vol > 1)
              ctq_d2s((int)k, (int)cout, b, (int)vol, w->epi.d2s_mode == CT_D2S_CRD, &c, &i_d, &i_h,
                      &i_w);
            int64_t dst =
                (((n * cout + c) * OD + od * bd + i_d) * OH + oh * b + i_h) * OW + ow * b + i_w;
            if (w->out_type == CT_DTYPE_INT32) {
              ((int32_t *)out)[dst] = v;
              continue;
            }
            int qc = w->epi.scale == CT_SCALE_CHANNEL;
            if (w->epi.rounding == CT_ROUND_ONNX) { /* as conv_dp4a.cuh reads the block */
              uint32_t rb = w->epi.residual ? t->res[dst] : 0;
              ((uint8_t *)out)[dst] =
                  (uint8_t)ctq_requant_lane(params, (int)kp, (int)k, v, rb, qc,
                                            w->out_type == CT_DTYPE_UINT8, w->epi.residual, 1);
              continue;
            }
            int32_t m = qc ? arr[CTQ_MULTS * kp + k] : params[CTQ_MULT];
            int32_t sh = qc ? arr[CTQ_SHIFTS * kp + k] : params[CTQ_SHIFT];
            int32_t r = 0;
            if (w->epi.residual)
              r = w->out_type == CT_DTYPE_UINT8 ? t->res[dst] : (int8_t)t->res[dst];
            ((uint8_t *)out)[dst] = (uint8_t)ctq_requant(
                v, m, sh, params[CTQ_OUT_ZP], params[CTQ_LO], params[CTQ_HI], w->epi.residual, r,
                params[CTQ_RES_MULT], params[CTQ_RES_SHIFT], params[CTQ_RES_ZP]);
          }
  free(sums);
  free(params);
}

START_TEST(legalization_equals_the_formula) {
  rng r;
  rng_seed(&r, 2024);
  for (int i = 0; i < 60; i++) {
    int is3 = rng_range(&r, 0, 3) == 0;
    ct_workload w = case_workload(is3, rng_range(&r, 1, 9), rng_range(&r, 1, 10), CT_LAYOUT_NCHW);
    static const ct_dtype outs[3] = {CT_DTYPE_INT32, CT_DTYPE_INT8, CT_DTYPE_UINT8};
    w.out_type = outs[i % 3];
    int q8 = w.out_type != CT_DTYPE_INT32;
    w.data_type = rng_range(&r, 0, 1) ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
    w.epi.data_zero_point = rng_range(&r, 0, 3) > 0;
    w.epi.weight_zero_point = rng_range(&r, 0, 1);
    w.epi.bias = rng_range(&r, 0, 1);
    w.epi.scale = q8 && rng_range(&r, 0, 1) ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
    w.epi.residual = q8 && rng_range(&r, 0, 1);
    /* onnx rounding on every other 8-bit case (i / 3 odd: int8 and uint8 both) */
    if (q8 && i / 3 % 2) w.epi.rounding = CT_ROUND_ONNX;
    if (rng_range(&r, 0, 3) == 0) {
      w.epi.d2s_block = 2;
      w.epi.d2s_mode = rng_range(&r, 0, 1) ? CT_D2S_CRD : CT_D2S_DCR;
      w.k = (is3 ? 8 : 4) * rng_range(&r, 1, 2);
    }
    qcase t;
    qcase_make(&t, &w, 300u + (uint32_t)i);
    size_t eb = workload_out_elem_bytes(&w);
    void *want = xmalloc(t.n_out * eb), *got = xmalloc(t.n_out * eb);
    ct_err err = {0};
    ck_assert_msg(reference_qconv(&w, &t.qs.q, t.data, t.weights, t.res, want, &err) == CT_OK, "%s",
                  err.msg);
    memset(got, 0xA5, t.n_out * eb);
    legalized(&t, got);
    char key[CT_KEY_MAX];
    for (size_t j = 0; j < t.n_out; j++)
      if (out_at(&w, got, j) != out_at(&w, want, j))
        ck_abort_msg("case %d %s: element %zu is %d legalized, %d by the formula", i,
                     workload_key(&w, key, sizeof key), j, out_at(&w, got, j), out_at(&w, want, j));
    free(want);
    free(got);
    qcase_free(&t);
  }
}
END_TEST

/* Weight sums from plain and packed weights agree; params fold the way the
 * file comment of quant.c says. */
START_TEST(params_fold_bias_and_corrections) {
  ct_workload w = small2d(CT_DTYPE_UINT8, CT_DTYPE_INT8);
  w.c = 3; /* packed C = 4: R = 4 x 9 */
  w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = 1;
  qcase t;
  qcase_make(&t, &w, 9);
  int32_t sums[8], psums[8];
  quant_weight_sums(&w, t.weights, sums);
  ct_workload pw;
  workload_packed(&w, &pw);
  int8_t *packed = xmalloc((size_t)workload_weight_elems(&pw));
  pack_oi4o4i(t.weights, packed, w.k, w.c, 9);
  quant_weight_sums(&pw, packed, psums);
  for (int k = 0; k < 8; k++) {
    int32_t s = 0;
    for (int i = 0; i < 27; i++) s += t.weights[k * 27 + i];
    ck_assert_int_eq(sums[k], s);
    ck_assert_int_eq(psums[k], s);
  }
  int32_t params[CTQ_HEADER + 4 * 8];
  ck_assert_uint_eq(quant_params_words(&w), CTQ_HEADER + 4 * 8);
  ck_assert_int_eq(quant_params(&w, &t.qs.q, sums, params, NULL), CT_OK);
  int32_t zx = t.qs.q.data_zero_point;
  ck_assert_int_eq(params[CTQ_PAD_WORD], (int32_t)((uint32_t)zx * 0x01010101u));
  for (int k = 0; k < 8; k++) {
    int64_t off = (int64_t)t.qs.q.bias[k] - (int64_t)zx * sums[k] +
                  (int64_t)36 * zx * t.qs.q.weight_zero_points[k];
    ck_assert_int_eq(params[CTQ_HEADER + k], (int32_t)off);
    ck_assert_int_eq(params[CTQ_HEADER + 3 * 8 + k], t.qs.q.weight_zero_points[k]);
  }
  free(packed);
  qcase_free(&t);
}
END_TEST

/* The kernels' magic-number conversions (quant.cuh ctq_f2i_magic,
 * ctq_i2f_magic, compiled here from the same text) against the host's
 * rintf and cast: every integer of magnitude below 2^22 and every tie
 * between two (x.5, rounded to even), then random floats of every scale
 * in that range and values next to the ties. */
START_TEST(magic_conversions_equal_rint) {
  const int32_t lim = 1 << 22;
  for (int32_t k = -lim + 1; k < lim; k++) {
    if (ctq_i2f_magic(k) != (float)k)
      ck_abort_msg("ctq_i2f_magic(%d) = %.9g", (int)k, (double)ctq_i2f_magic(k));
    const float x = (float)k, t = (float)k + 0.5f; /* exact below 2^23 */
    if (ctq_f2i_magic(x) != k) ck_abort_msg("ctq_f2i_magic(%d.0) = %d", (int)k, ctq_f2i_magic(x));
    if (k < lim - 1 && ctq_f2i_magic(t) != (int32_t)rintf(t))
      ck_abort_msg("ctq_f2i_magic(%.1f) = %d, rintf %d", (double)t, ctq_f2i_magic(t),
                   (int32_t)rintf(t));
  }
  rng r;
  rng_seed(&r, 22);
  for (int i = 0; i < 2000000; i++) {
    /* a magnitude of 2^-20 to 2^22, a sign, or the floats around a tie */
    const int e = (int)(rng_next(&r) % 42) - 20;
    float x = ldexpf((float)(rng_next(&r) % (1u << 24)) / (float)(1u << 24), e + 1);
    if (i % 4 == 0) {
      const float tie = (float)(int32_t)(rng_next(&r) % (uint64_t)lim) + 0.5f;
      x = nextafterf(tie, i % 8 ? 0.0f : INFINITY);
    }
    if (rng_next(&r) % 2) x = -x;
    if (!(fabsf(x) < (float)lim)) continue;
    if (ctq_f2i_magic(x) != (int32_t)rintf(x))
      ck_abort_msg("ctq_f2i_magic(%.9g) = %d, rintf %d", (double)x, ctq_f2i_magic(x),
                   (int32_t)rintf(x));
  }
}
END_TEST

/* The border classes of a channels-last layer with a data zero point and
 * padding (core/zpad.cuh) as conv_wgmma_nhwc.cuh uses them: the data read
 * with zeros for the padding (TMA's fill), offset by off[k] and by the
 * class's correction (none for the interior), equals the formula, whose
 * padding reads zx. Random shapes: 2D and 3D, strides 1 to 3, dilation,
 * asymmetric and one-sided padding, kernels wider than the input, outputs
 * of one position (no interior); int8 and uint8 data. */
START_TEST(zpad_classes_correct_zero_filled_padding) {
  rng r;
  rng_seed(&r, 36);
  int n_tables = 0, n_no_interior = 0;
  for (int i = 0; i < 80; i++) {
    const int is3 = i % 3 == 0;
    ct_workload w;
    workload_init(&w, is3 ? CT_OP_CONV3D : CT_OP_CONV2D);
    const int nd = workload_nd(&w);
    w.layout = CT_LAYOUT_NHWC;
    w.n = rng_range(&r, 1, 2);
    w.c = rng_range(&r, 1, 5);
    w.k = rng_range(&r, 1, 6);
    w.data_type = i % 2 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
    w.epi.data_zero_point = 1;
    w.epi.bias = rng_range(&r, 0, 1);
    for (int d = 0; d < nd; d++) {
      w.in[d] = rng_range(&r, 1, is3 ? 6 : 11);
      w.kernel[d] = rng_range(&r, 1, 5);
      w.stride[d] = rng_range(&r, 1, 3);
      w.dilation[d] = rng_range(&r, 0, 3) ? 1 : 2;
      w.pad_before[d] = rng_range(&r, 0, 3);
      w.pad_after[d] = rng_range(&r, 0, 3);
      /* at least one output */
      while (w.in[d] + w.pad_before[d] + w.pad_after[d] < w.dilation[d] * (w.kernel[d] - 1) + 1)
        w.pad_after[d]++;
    }
    if (workload_validate(&w, NULL) != CT_OK) continue;
    const long n_cls = quant_zpad_classes(&w);
    geom3 g;
    workload_geom(&w, &g);
    int padded = 0;
    for (int d = 0; d < 3; d++) padded |= g.pb[d] || g.pa[d];
    ck_assert_int_eq(n_cls > 0, padded);
    if (!n_cls) continue;
    n_tables++;
    qcase t;
    qcase_make(&t, &w, 500u + (uint32_t)i);
    ct_err err = {0};
    int32_t *want = xmalloc(t.n_out * sizeof *want);
    ck_assert_msg(reference_qconv(&w, &t.qs.q, t.data, t.weights, NULL, want, &err) == CT_OK, "%s",
                  err.msg);
    int32_t *sums = xmalloc((size_t)w.k * sizeof *sums);
    const size_t words = quant_params_words(&w);
    const int64_t kp = pack_round4(w.k);
    ck_assert_uint_eq(words, CTQ_HEADER + (size_t)(CTQ_ARRAYS + n_cls) * (size_t)kp);
    int32_t *params = xmalloc(words * sizeof *params);
    quant_weight_sums(&w, t.weights, sums);
    ck_assert_int_eq(quant_params(&w, &t.qs.q, sums, params, &err), CT_OK);
    ck_assert_int_eq(quant_zpad_fill(&w, &t.qs.q, t.weights, params, &err), CT_OK);
    ctz_axis ax[3];
    int interior[3];
    for (int d = 0; d < 3; d++) {
      ax[d] = ctz_axis_make((int)g.in[d], (int)g.out[d], (int)g.ker[d], (int)g.str[d],
                            (int)g.dil[d], (int)g.pb[d]);
      interior[d] = ctz_axis_interior(ax[d], (int)g.out[d]);
    }
    ck_assert_int_eq(n_cls, (long)ax[0].n * ax[1].n * ax[2].n);
    n_no_interior += interior[0] < 0 || interior[1] < 0 || interior[2] < 0;
    const int64_t taps = g.ker[0] * g.ker[1] * g.ker[2];
    for (int64_t n = 0; n < g.n; n++)
      for (int64_t od = 0; od < g.out[0]; od++)
        for (int64_t oh = 0; oh < g.out[1]; oh++)
          for (int64_t ow = 0; ow < g.out[2]; ow++) {
            const int64_t o3[3] = {od, oh, ow};
            int c3[3], inner = 1;
            for (int d = 0; d < 3; d++) {
              c3[d] = ctz_axis_class(ax[d], (int)g.out[d], (int)o3[d]);
              ck_assert(c3[d] >= 0 && c3[d] < ax[d].n);
              inner &= c3[d] == interior[d];
            }
            const long cls = ((long)c3[0] * ax[1].n + c3[1]) * ax[2].n + c3[2];
            for (int64_t k = 0; k < g.k; k++) {
              uint32_t acc = 0;
              for (int64_t tap = 0; tap < taps; tap++) {
                const int64_t r3[3] = {tap / (g.ker[1] * g.ker[2]), tap / g.ker[2] % g.ker[1],
                                       tap % g.ker[2]};
                int64_t at[3];
                int in = 1;
                for (int d = 0; d < 3; d++) {
                  at[d] = o3[d] * g.str[d] - g.pb[d] + r3[d] * g.dil[d];
                  in &= at[d] >= 0 && at[d] < g.in[d];
                }
                if (!in) continue; /* TMA's zeros */
                for (int64_t c = 0; c < g.c; c++) {
                  const uint8_t b =
                      t.data[(((n * g.in[0] + at[0]) * g.in[1] + at[1]) * g.in[2] + at[2]) * g.c +
                             c];
                  const int32_t x = w.data_type == CT_DTYPE_UINT8 ? b : (int8_t)b;
                  acc += (uint32_t)(x * t.weights[(k * taps + tap) * g.c + c]);
                }
              }
              acc += (uint32_t)params[CTQ_HEADER + CTQ_OFF * kp + k];
              if (!inner)
                acc += (uint32_t)params[CTQ_HEADER + (CTQ_ARRAYS + cls) * kp + k];
              else
                ck_assert_int_eq(params[CTQ_HEADER + (CTQ_ARRAYS + cls) * kp + k], 0);
              const int64_t at = (((n * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow) * g.k + k;
              char key[CT_KEY_MAX];
              if ((int32_t)acc != want[at])
                ck_abort_msg("case %d %s: pixel (%lld, %lld, %lld) class %ld channel %lld: %d "
                             "corrected, %d by the formula",
                             i, workload_key(&w, key, sizeof key), (long long)od, (long long)oh,
                             (long long)ow, cls, (long long)k, (int32_t)acc, want[at]);
            }
          }
    free(want);
    free(sums);
    free(params);
    qcase_free(&t);
  }
  /* the draw covered tables, and layers without an interior */
  ck_assert_int_ge(n_tables, 40);
  ck_assert_int_ge(n_no_interior, 5);
}
END_TEST

/* Which layers carry border corrections, and how many classes. */
START_TEST(zpad_classes_of_known_layers) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NHWC;
  w.n = 1, w.c = 64, w.k = 64;
  w.in[0] = w.in[1] = 56;
  w.kernel[0] = w.kernel[1] = 3;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 1;
  ck_assert_int_eq(quant_zpad_classes(&w), 0); /* no zero point */
  w.epi.data_zero_point = 1;
  ck_assert_int_eq(quant_zpad_classes(&w), 9);
  ck_assert_uint_eq(quant_params_words(&w), CTQ_HEADER + (4 + 9) * 64);
  w.layout = CT_LAYOUT_NCHW; /* the packed templates read the pad word */
  ck_assert_int_eq(quant_zpad_classes(&w), 0);
  w.layout = CT_LAYOUT_NHWC;
  w.groups = 2;
  ck_assert_int_eq(quant_zpad_classes(&w), 0);
  w.groups = 1;
  /* ResNet-50's stem: 7x7 stride 2, padding 3 on 224: 2 + 1 + 1 per axis */
  w.c = 16, w.in[0] = w.in[1] = 224, w.kernel[0] = w.kernel[1] = 7;
  w.stride[0] = w.stride[1] = 2;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 3;
  ck_assert_int_eq(quant_zpad_classes(&w), 16);
  /* a 3x3 on a 1x1 map: one class, no interior */
  w.in[0] = w.in[1] = 1, w.kernel[0] = w.kernel[1] = 3, w.stride[0] = w.stride[1] = 1;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 1;
  ck_assert_int_eq(quant_zpad_classes(&w), 1);
  /* no padding: none */
  w.in[0] = w.in[1] = 9;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 0;
  ck_assert_int_eq(quant_zpad_classes(&w), 0);
  /* 3D 3x3x3 padding 1 */
  workload_init(&w, CT_OP_CONV3D);
  w.layout = CT_LAYOUT_NHWC, w.n = 1, w.c = 64, w.k = 64, w.epi.data_zero_point = 1;
  for (int d = 0; d < 3; d++) w.in[d] = 8, w.kernel[d] = 3, w.pad_before[d] = w.pad_after[d] = 1;
  ck_assert_int_eq(quant_zpad_classes(&w), 27);
  /* past CTZ_MAX_CLASSES: no table (the wgmma templates refuse the layer) */
  for (int d = 0; d < 3; d++) w.in[d] = 64, w.kernel[d] = 17, w.pad_before[d] = w.pad_after[d] = 8;
  ck_assert_int_eq(quant_zpad_classes(&w), 0);
}
END_TEST

/* ---- a fused pointwise convolution (pre) ------------------------------------ */

/* A depthwise 3x3 (c channels, pad 1) on 6x5, channels last with int8
 * output, after a pointwise conv of pre_c channels; zd: the depthwise
 * conv's data zero point (with padding: border classes in its block). */
static ct_workload fused_small(int pre_c, int c, int groups, int zd) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NHWC;
  w.n = 2, w.c = c, w.k = c, w.groups = groups;
  w.in[0] = 6, w.in[1] = 5;
  w.kernel[0] = w.kernel[1] = 3;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 1;
  w.out_type = CT_DTYPE_INT8;
  w.data_type = zd ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
  w.epi.data_zero_point = zd;
  w.epi.bias = 1;
  w.epi.scale = CT_SCALE_CHANNEL;
  w.pre_c = pre_c;
  w.pre_data_type = CT_DTYPE_UINT8;
  w.pre_epi.data_zero_point = w.pre_epi.weight_zero_point = w.pre_epi.bias = 1;
  w.pre_epi.scale = CT_SCALE_CHANNEL;
  return w;
}

/* The params block with a pointwise conv: its three parts, each 16-byte
 * aligned where the offsets say; the first is quant_params of the main
 * conv, the second quant_params of the pointwise one with q->pre and its
 * weights' sums (written out here), the third the weights, one row of
 * pre_c per channel padded with zeros to a multiple of 32 bytes. Odd
 * channel counts, rows of exactly 32 and over 32, a main block with
 * border classes (dense, zero point, padding) and onnx rounding. */
START_TEST(pre_params_parts) {
  static const struct {
    int pre_c, c, groups, zd, onnx;
    size_t row;
  } cases[] = {{7, 12, 12, 0, 0, 32}, {24, 9, 9, 1, 0, 32}, {32, 8, 1, 1, 0, 32},
               {33, 5, 1, 0, 1, 64},  {1, 3, 3, 1, 1, 32},  {70, 6, 2, 0, 0, 96}};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    ct_workload w = fused_small(cases[ci].pre_c, cases[ci].c, cases[ci].groups, cases[ci].zd);
    if (cases[ci].onnx) w.epi.rounding = w.pre_epi.rounding = CT_ROUND_ONNX;
    ct_err err = {0};
    ck_assert_msg(workload_validate(&w, &err) == CT_OK, "case %zu: %s", ci, err.msg);
    ct_workload m, pre;
    workload_main(&w, &m);
    workload_pre(&w, &pre);
    ck_assert_int_eq(m.pre_c, 0);
    ck_assert_int_eq(pre.c, cases[ci].pre_c);
    ck_assert_int_eq(pre.k, cases[ci].c);
    /* the offsets: the main block as it would be alone, then the pointwise
     * one's, then c rows */
    const size_t off_pre = quant_pre_offset(&w), off_w = quant_pre_weights_offset(&w);
    const size_t row = quant_pre_row_bytes(&w), words = quant_params_words(&w);
    ck_assert_uint_eq(off_pre, quant_params_words(&m));
    ck_assert_uint_eq(off_w, off_pre + quant_params_words(&pre));
    ck_assert_uint_eq(row, cases[ci].row);
    ck_assert_uint_eq(row % QUANT_PRE_ROW_ALIGN, 0);
    ck_assert_uint_eq(words, off_w + (size_t)w.c * row / 4);
    ck_assert_uint_eq(off_pre % 4, 0); /* 4 words: 16 bytes */
    ck_assert_uint_eq(off_w % 4, 0);
    ck_assert_uint_eq(words % 4, 0);
    ck_assert_int_eq(quant_zpad_classes(&m) > 0, cases[ci].zd && cases[ci].groups == 1);
    /* the block's contents */
    quant_store qs;
    ck_assert_msg(quant_random(&w, 300u + ci, &qs, &err) == CT_OK, "%s", err.msg);
    qcase t;
    qcase_make(&t, &m, 400u + (uint32_t)ci); /* the main conv's weights */
    int32_t *sums = xmalloc((size_t)w.k * sizeof *sums);
    int32_t *pre_sums = xmalloc((size_t)w.c * sizeof *pre_sums);
    quant_weight_sums(&m, t.weights, sums);
    for (int k = 0; k < w.c; k++) { /* [c][pre_c] */
      int32_t s = 0;
      for (int i = 0; i < w.pre_c; i++) s += qs.q.pre_weights[k * w.pre_c + i];
      pre_sums[k] = s;
    }
    int32_t *params = xmalloc(words * sizeof *params);
    int32_t *main_block = xmalloc(quant_params_words(&m) * sizeof *main_block);
    int32_t *pre_block = xmalloc(quant_params_words(&pre) * sizeof *pre_block);
    memset(params, 0xA5, words * sizeof *params); /* every word must be written */
    ck_assert_msg(quant_params(&w, &qs.q, sums, params, &err) == CT_OK, "%s", err.msg);
    ck_assert_int_eq(quant_params(&m, &qs.q, sums, main_block, &err), CT_OK);
    ck_assert_int_eq(quant_params(&pre, qs.q.pre, pre_sums, pre_block, &err), CT_OK);
    ck_assert_mem_eq(params, main_block, off_pre * sizeof *params);
    ck_assert_mem_eq(params + off_pre, pre_block, (off_w - off_pre) * sizeof *params);
    const uint8_t *rows = (const uint8_t *)(params + off_w);
    for (int k = 0; k < w.c; k++)
      for (size_t i = 0; i < row; i++) {
        uint8_t want = i < (size_t)w.pre_c ? (uint8_t)qs.q.pre_weights[k * w.pre_c + (int)i] : 0;
        if (rows[(size_t)k * row + i] != want)
          ck_abort_msg("case %zu: weight row %d byte %zu is %d, want %d", ci, k, i,
                       rows[(size_t)k * row + i], want);
      }
    /* the pointwise block folds those sums: with a data zero point its
     * offsets differ from a block folded with zero sums */
    int32_t *zero_sums = xcalloc((size_t)w.c, sizeof *zero_sums);
    ck_assert_int_eq(quant_params(&pre, qs.q.pre, zero_sums, pre_block, &err), CT_OK);
    ck_assert_msg(memcmp(params + off_pre, pre_block, (off_w - off_pre) * sizeof *params),
                  "case %zu: the pointwise block does not depend on its weights", ci);
    /* the raw form is the main conv's alone */
    int32_t *raw = xmalloc(quant_raw_words(&w) * sizeof *raw);
    int32_t *raw_m = xmalloc(quant_raw_words(&m) * sizeof *raw_m);
    ck_assert_uint_eq(quant_raw_words(&w), quant_raw_words(&m));
    ck_assert_int_eq(quant_raw(&w, &qs.q, raw, &err), CT_OK);
    ck_assert_int_eq(quant_raw(&m, &qs.q, raw_m, &err), CT_OK);
    ck_assert_mem_eq(raw, raw_m, quant_raw_words(&m) * sizeof *raw);
    free(raw), free(raw_m), free(zero_sums);
    free(params), free(main_block), free(pre_block), free(sums), free(pre_sums);
    qcase_free(&t);
    quant_store_free(&qs);
  }
  /* the row rule alone */
  ct_workload w = fused_small(1, 4, 4, 0);
  ck_assert_uint_eq(quant_pre_row_bytes(&w), 32);
  w.pre_c = 31;
  ck_assert_uint_eq(quant_pre_row_bytes(&w), 32);
  w.pre_c = 64;
  ck_assert_uint_eq(quant_pre_row_bytes(&w), 64);
  w.pre_c = 65;
  ck_assert_uint_eq(quant_pre_row_bytes(&w), 96);
  /* no pointwise conv: the block is what it was */
  w.pre_c = 0;
  memset(&w.pre_epi, 0, sizeof w.pre_epi);
  w.pre_data_type = CT_DTYPE_INT8;
  ck_assert_uint_eq(quant_params_words(&w), CTQ_HEADER + CTQ_ARRAYS * 4);
}
END_TEST

/* quant_check with a pointwise conv: its values and weights are required,
 * and a bad value of its own is named with the prefix "pre". */
START_TEST(pre_checks_name_the_field) {
  ct_workload w = fused_small(7, 12, 12, 1);
  quant_store qs;
  ct_err err = {0};
  ck_assert_msg(quant_random(&w, 5, &qs, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(quant_check(&w, &qs.q, NULL), CT_OK);
  EXPECT_BAD_QUANT(&w, NULL, "NULL");
  ct_quant b = qs.q;
  b.pre = NULL;
  EXPECT_BAD_QUANT(&w, &b, "pre is NULL");
  b = qs.q, b.pre_weights = NULL;
  EXPECT_BAD_QUANT(&w, &b, "pre_weights is NULL");
  EXPECT_BAD_QUANT(&w, &b, "12 x 7");
  /* the pointwise conv's own values */
  ct_quant p = *qs.q.pre;
  b = qs.q, b.pre = &p;
  ck_assert_int_eq(quant_check(&w, &b, NULL), CT_OK);
  p.data_zero_point = -1; /* uint8 data */
  EXPECT_BAD_QUANT(&w, &b, "pre: data_zero_point is -1; for uint8 it must be 0 to 255");
  p = *qs.q.pre, p.weight_zero_points = NULL;
  EXPECT_BAD_QUANT(&w, &b, "pre: weight_zero_points is NULL; it needs 12 values");
  p = *qs.q.pre, p.bias = NULL;
  EXPECT_BAD_QUANT(&w, &b, "pre: bias is NULL");
  p = *qs.q.pre, p.scale = NULL;
  EXPECT_BAD_QUANT(&w, &b, "pre: scale is NULL; it needs 12 values");
  /* its output is the main conv's uint8 data */
  p = *qs.q.pre, p.out_zero_point = 256;
  EXPECT_BAD_QUANT(&w, &b, "pre: out_zero_point is 256; for uint8 it must be 0 to 255");
  p = *qs.q.pre, p.clamp_min = 9, p.clamp_max = 8;
  EXPECT_BAD_QUANT(&w, &b, "pre: clamp_min (9) is above clamp_max (8)");
  float scale[12];
  memcpy(scale, qs.q.pre->scale, sizeof scale);
  scale[11] = -1.0f;
  p = *qs.q.pre, p.scale = scale;
  EXPECT_BAD_QUANT(&w, &b, "pre: scale[11]");
  /* the main conv's values are its own: no prefix */
  b = qs.q, b.out_zero_point = 300;
  EXPECT_BAD_QUANT(&w, &b, "out_zero_point is 300");
  ct_err e = {0};
  ck_assert_int_eq(quant_check(&w, &b, &e), CT_ERR_INVALID_ARG);
  ck_assert_msg(strncmp(e.msg, "pre", 3) != 0, "'%s'", e.msg);
  /* quant_params and the reference refuse the same, with the same message */
  b = qs.q, b.pre = &p, p = *qs.q.pre, p.bias = NULL;
  int32_t *params = xmalloc(quant_params_words(&w) * sizeof *params);
  int32_t sums[12] = {0};
  err_clear(&e);
  ck_assert_int_eq(quant_params(&w, &b, sums, params, &e), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(e.msg, "pre: bias is NULL"), "'%s'", e.msg);
  free(params);
  /* a main conv with no values of its own still needs the pointwise
   * conv's */
  ct_workload raw = fused_small(7, 12, 12, 0);
  raw.out_type = CT_DTYPE_INT32;
  raw.epi.bias = 0, raw.epi.scale = CT_SCALE_TENSOR;
  ck_assert_int_eq(workload_validate(&raw, NULL), CT_OK);
  EXPECT_BAD_QUANT(&raw, NULL, "NULL");
  b = qs.q, b.pre = NULL;
  EXPECT_BAD_QUANT(&raw, &b, "pre is NULL");
  quant_store_free(&qs);
}
END_TEST

/* quant_random with a pointwise conv: the same seed gives the same values
 * (its own and the main conv's), another seed others; q.pre and
 * q.pre_weights point into the store, valid for quant_check, and
 * quant_store_free releases them (LeakSanitizer checks) and leaves a store
 * that can be freed again. */
START_TEST(pre_random_reproducible) {
  ct_workload w = fused_small(7, 12, 12, 1);
  w.pre_epi.rounding = CT_ROUND_ONNX;
  const int c = w.c, pre_c = w.pre_c;
  quant_store a, b, o;
  ct_err err = {0};
  ck_assert_msg(quant_random(&w, 42, &a, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(quant_random(&w, 42, &b, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(quant_random(&w, 43, &o, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(quant_check(&w, &a.q, &err), CT_OK);
  ck_assert_ptr_nonnull(a.pre);
  ck_assert_ptr_nonnull(a.pre_weights);
  ck_assert_ptr_eq(a.q.pre, &a.pre->q);
  ck_assert_ptr_eq(a.q.pre_weights, a.pre_weights);
  ck_assert_ptr_ne(a.q.pre, b.q.pre);
  const ct_quant *pa = a.q.pre, *pb = b.q.pre, *po = o.q.pre;
  /* the pointwise conv's values are those of its workload: c channels,
   * uint8 data with a zero point, weight zero points, bias, per-channel
   * scales */
  ck_assert_ptr_nonnull(pa->weight_zero_points);
  ck_assert_ptr_nonnull(pa->bias);
  ck_assert_ptr_nonnull(pa->scale);
  ck_assert_ptr_null(pa->pre);
  ck_assert_int_eq(pa->data_zero_point, pb->data_zero_point);
  ck_assert_int_eq(pa->out_zero_point, pb->out_zero_point);
  ck_assert_int_eq(pa->clamp_min, pb->clamp_min);
  ck_assert_int_eq(pa->clamp_max, pb->clamp_max);
  ck_assert_mem_eq(pa->weight_zero_points, pb->weight_zero_points, (size_t)c * sizeof(int32_t));
  ck_assert_mem_eq(pa->bias, pb->bias, (size_t)c * sizeof(int32_t));
  ck_assert_mem_eq(pa->scale, pb->scale, (size_t)c * sizeof(float));
  ck_assert_mem_eq(a.pre_weights, b.pre_weights, (size_t)c * pre_c);
  ck_assert_int_eq(a.q.data_zero_point, b.q.data_zero_point);
  ck_assert_mem_eq(a.q.bias, b.q.bias, (size_t)c * sizeof(int32_t));
  ck_assert_mem_eq(a.q.scale, b.q.scale, (size_t)c * sizeof(float));
  /* another seed: other weights and values */
  ck_assert(memcmp(a.pre_weights, o.pre_weights, (size_t)c * pre_c) != 0);
  ck_assert(memcmp(pa->bias, po->bias, (size_t)c * sizeof(int32_t)) != 0);
  ck_assert(memcmp(a.q.bias, o.q.bias, (size_t)c * sizeof(int32_t)) != 0);
  /* the weights spread over int8, and the pointwise conv's values are not
   * the main conv's */
  int lo = 127, hi = -128;
  for (int i = 0; i < c * pre_c; i++) {
    if (a.pre_weights[i] < lo) lo = a.pre_weights[i];
    if (a.pre_weights[i] > hi) hi = a.pre_weights[i];
  }
  ck_assert_int_lt(lo, -64);
  ck_assert_int_gt(hi, 64);
  ck_assert(memcmp(pa->bias, a.q.bias, (size_t)c * sizeof(int32_t)) != 0);
  quant_store_free(&a);
  ck_assert_ptr_null(a.pre);
  ck_assert_ptr_null(a.pre_weights);
  ck_assert_ptr_null(a.q.pre);
  quant_store_free(&a);
  quant_store_free(&b);
  quant_store_free(&o);
  quant_store_free(NULL);
  /* without a pointwise conv there is nothing of it */
  ct_workload m;
  workload_main(&w, &m);
  ck_assert_msg(quant_random(&m, 42, &a, &err) == CT_OK, "%s", err.msg);
  ck_assert_ptr_null(a.pre);
  ck_assert_ptr_null(a.pre_weights);
  ck_assert_ptr_null(a.q.pre);
  ck_assert_ptr_null(a.q.pre_weights);
  quant_store_free(&a);
}
END_TEST

/* quant_random's values must make a conv's 8-bit outputs spread: a bias far
 * above the accumulator's own spread (it was drawn up to 2^20 for every
 * channel) scaled each channel down so far that a depthwise conv's 9 taps
 * moved its outputs by a step or two, and a test that compares such outputs
 * proves little about the taps. Each seed of each layer here must give at
 * least 32 distinct output values, and at least a third of the outputs of
 * its channels of moderate bias must lie strictly inside the clamps (about
 * 1 in 8 channels keeps a bias of up to 2^20, for the range; a Relu clamps
 * about half of a channel's outputs). */
START_TEST(random_values_spread_outputs) {
  static const char *keys[] = {
      "conv2d-nhwc-i8.i8.i8-n2-c32-k32-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-g32",
      "conv2d-nhwc-i8.i8.i8-n2-c32-k32-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g32",
      "conv2d-nhwc-u8.i8.u8-n2-c16-k16-14x14-r3x3-s2x2-p1x1.1x1-d1x1-zd-zw-bias-qc-g16",
      "conv2d-nhwc-i8.i8.i8-n2-c64-k16-8x8-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc",
      "conv2d-nhwc-i8.i8.i8-n2-c256-k16-8x8-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-onnx",
      "conv3d-ndhwc-i8.i8.i8-n1-c16-k16-4x8x8-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1-bias-qc-g16",
  };
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    ct_workload w;
    ct_err err = {0};
    ck_assert_msg(workload_from_key(keys[i], &w, &err) == CT_OK, "%s: %s", keys[i], err.msg);
    for (uint32_t seed = 1; seed <= 16; seed++) {
      qcase t;
      qcase_make(&t, &w, seed);
      uint8_t *out = xmalloc(t.n_out);
      ck_assert_msg(reference_qconv(&w, &t.qs.q, t.data, t.weights, t.res, out, &err) == CT_OK,
                    "%s", err.msg);
      int seen[256] = {0}, distinct = 0;
      for (size_t j = 0; j < t.n_out; j++) distinct += !seen[out[j]]++;
      /* channels-last: output j is channel j % k */
      size_t inside = 0, n = 0;
      for (size_t j = 0; j < t.n_out; j++) {
        if (llabs((long long)t.qs.q.bias[j % (size_t)w.k]) >= (1 << 17)) continue;
        int v = w.out_type == CT_DTYPE_UINT8 ? out[j] : (int8_t)out[j];
        inside += v > t.qs.q.clamp_min && v < t.qs.q.clamp_max;
        n++;
      }
      ck_assert_msg(distinct >= 32, "%s seed %u: the outputs take %d values (clamps [%d, %d])",
                    keys[i], (unsigned)seed, distinct, t.qs.q.clamp_min, t.qs.q.clamp_max);
      ck_assert_msg(3 * inside >= n, "%s seed %u: %zu of %zu outputs inside the clamps [%d, %d]",
                    keys[i], (unsigned)seed, inside, n, t.qs.q.clamp_min, t.qs.q.clamp_max);
      free(out);
      qcase_free(&t);
    }
  }
}
END_TEST

/* The values a tuning measures with, by workload (quant_table): the first
 * values of a key stay, a plain layout's workload is found in its packed
 * form too (not where packing pads K), a channels-last one only as itself,
 * bad values are refused naming the field, and an empty or NULL table
 * finds nothing. */
START_TEST(table_finds_values_by_key) {
  ct_workload w = small2d(CT_DTYPE_INT8, CT_DTYPE_INT8);
  w.epi.bias = 1;
  int32_t bias[8] = {0}, bias2[8] = {0};
  float scale[1] = {0.01f};
  ct_quant q, q2;
  quant_init(&q, &w);
  q.bias = bias;
  q.scale = scale;
  q2 = q;
  q2.bias = bias2;
  quant_table t = {0};
  ck_assert_ptr_null(quant_table_find(&t, &w));
  ck_assert_ptr_null(quant_table_find(NULL, &w));
  ct_err err = {0};
  int added = -1;
  ck_assert_int_eq(quant_table_add(&t, &w, &q, &added, &err), CT_OK);
  ck_assert_int_eq(added, 1);
  ck_assert_int_eq(t.n, 2); /* w (nchw) and its packed form */
  ck_assert_ptr_eq(quant_table_find(&t, &w), &q);
  ct_workload packed;
  workload_packed(&w, &packed);
  ck_assert_int_eq(packed.layout, CT_LAYOUT_NCHW4C);
  ck_assert_ptr_eq(quant_table_find(&t, &packed), &q);
  /* the first values of a key stay */
  ck_assert_int_eq(quant_table_add(&t, &w, &q2, &added, &err), CT_OK);
  ck_assert_int_eq(added, 0);
  ck_assert_int_eq(t.n, 2);
  ck_assert_ptr_eq(quant_table_find(&t, &w), &q);
  /* another batch is another key */
  ct_workload b3 = w;
  b3.n = 3;
  ck_assert_ptr_null(quant_table_find(&t, &b3));
  /* channels-last: itself only */
  ct_workload nhwc = w;
  nhwc.layout = CT_LAYOUT_NHWC;
  nhwc.k = 8;
  ck_assert_ptr_null(quant_table_find(&t, &nhwc));
  ck_assert_int_eq(quant_table_add(&t, &nhwc, &q2, &added, &err), CT_OK);
  ck_assert_int_eq(added, 1);
  ck_assert_int_eq(t.n, 3);
  ck_assert_ptr_eq(quant_table_find(&t, &nhwc), &q2);
  ck_assert_ptr_eq(quant_table_find(&t, &w), &q);
  /* K 6 packs to 8: its values (6) cannot serve the packed form */
  ct_workload k6 = w;
  k6.k = 6;
  k6.in[0] = 5; /* its packed form is no other entry's */
  workload_packed(&k6, &packed);
  ck_assert_int_eq(packed.k, 8);
  ck_assert_int_eq(quant_table_add(&t, &k6, &q, &added, &err), CT_OK);
  ck_assert_int_eq(t.n, 4);
  ck_assert_ptr_eq(quant_table_find(&t, &k6), &q);
  ck_assert_ptr_null(quant_table_find(&t, &packed));
  /* values the workload cannot take: refused, the table unchanged */
  ct_workload other = w;
  other.in[0] = 7;
  ct_quant bad = q;
  bad.bias = NULL;
  ck_assert_int_eq(quant_table_add(&t, &other, &bad, &added, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "bias is NULL"));
  ck_assert_int_eq(added, 0);
  ck_assert_int_eq(t.n, 4);
  ck_assert_ptr_null(quant_table_find(&t, &other));
  /* more entries than the first allocation */
  for (int i = 0; i < 40; i++) {
    other.in[1] = 8 + i;
    ck_assert_int_eq(quant_table_add(&t, &other, &q2, NULL, &err), CT_OK);
  }
  ck_assert_int_eq(t.n, 84);
  ck_assert_ptr_eq(quant_table_find(&t, &other), &q2);
  ck_assert_ptr_eq(quant_table_find(&t, &w), &q);
  ck_assert_int_eq(quant_table_add(NULL, &w, &q, NULL, &err), CT_ERR_INVALID_ARG);
  quant_table_free(&t);
  ck_assert_int_eq(t.n, 0);
  ck_assert_ptr_null(quant_table_find(&t, &w));
  quant_table_free(NULL);
}
END_TEST

static void add_quant(TCase *tc) {
  tcase_add_test(tc, fixed_point_matches_slow_forms);
  tcase_add_test(tc, requant_fast_equals_requant);
  tcase_add_test(tc, requant_fast_sat_equals_requant);
  tcase_add_test(tc, requant_fast_nb_equals_requant);
  tcase_add_test(tc, checks_name_the_field);
  tcase_add_test(tc, onnx_quantize_equals_the_spec);
  tcase_add_test(tc, onnx_add_equals_the_spec);
  tcase_add_test(tc, onnx_word_equals_requant_onnx);
  tcase_add_test(tc, onnx_seeded_equals_requant_onnx);
  tcase_add_test(tc, onnx_params_carry_the_formula);
  tcase_add_test(tc, onnx_checks_name_the_field);
  tcase_add_test(tc, params_fold_bias_and_corrections);
  tcase_add_test(tc, reference_of_each_epilogue);
  tcase_add_test(tc, reference_depth_to_space_both_modes);
  tcase_add_test(tc, nhwc_reference_equals_plain_converted);
  tcase_add_test(tc, legalization_equals_the_formula);
  tcase_add_test(tc, magic_conversions_equal_rint);
  tcase_add_test(tc, zpad_classes_correct_zero_filled_padding);
  tcase_add_test(tc, zpad_classes_of_known_layers);
  tcase_add_test(tc, pre_params_parts);
  tcase_add_test(tc, pre_checks_name_the_field);
  tcase_add_test(tc, pre_random_reproducible);
  tcase_add_test(tc, random_values_spread_outputs);
  tcase_add_test(tc, table_finds_values_by_key);
}

static const test_case suite_cases[] = {
    {"quant", 120, add_quant},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"quant", suite_cases, 0, NULL};
  return test_main(&suite);
}
