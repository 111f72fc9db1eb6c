/*
 * test_pack.c: layout packing (core/pack.c).
 *
 * Every packed element is checked against index formulas written out here,
 * independently of pack.c: NCHW4c [N][C/4][S][4], OIHW4o4i
 * [K/4][C/4][S][4o][4i], NHWC [N][S][C] and OHWI [K][S][C] (elements of 1,
 * 2 and 4 bytes, sizes on both sides of the 32-element tile of the
 * transpose). Destinations are poisoned with 0x5A first, so a
 * padding lane that is not zero-filled, or an element that is not written,
 * shows. Round trips (pack then unpack) must give back the original exactly,
 * for channel counts that are and are not multiples of 4. Element loops
 * call Check only on a mismatch: each passing ck_assert costs a write to
 * Check's log.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pack.h"
#include "tests/util.h"

#define POISON 0x5A

/* Channel counts around the packing width, and spatial extents. */
static const int64_t chans[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 13};
static const int64_t spatials[] = {1, 3, 9, 16};
#define N_CHANS    (sizeof chans / sizeof chans[0])
#define N_SPATIALS (sizeof spatials / sizeof spatials[0])

START_TEST(round4) {
  ck_assert_int_eq(pack_round4(0), 0);
  ck_assert_int_eq(pack_round4(1), 4);
  ck_assert_int_eq(pack_round4(3), 4);
  ck_assert_int_eq(pack_round4(4), 4);
  ck_assert_int_eq(pack_round4(5), 8);
  ck_assert_int_eq(pack_round4(7), 8);
  ck_assert_int_eq(pack_round4(8), 8);
  ck_assert_int_eq(pack_round4(64), 64);
  ck_assert_int_eq(pack_round4(65), 68);
}
END_TEST

/* Data, int8 or int32 by elem: pack (checked element by element against the
 * NCHW4c formula), then unpack (checked against the original). */
static void data_round_trip(size_t elem, int64_t n, int64_t c, int64_t s, rng *gen) {
  int64_t cp = (c + 3) / 4 * 4; /* channels after padding, written out on purpose */
  int64_t plain = n * c * s, packed = n * cp * s;
  unsigned char *src = xmalloc((size_t)plain * elem);
  unsigned char *dst = xmalloc((size_t)packed * elem);
  unsigned char *back = xmalloc((size_t)plain * elem);
  for (int64_t i = 0; i < plain * (int64_t)elem; i++) src[i] = (unsigned char)rng_next(gen);
  memset(dst, POISON, (size_t)packed * elem);
  memset(back, POISON, (size_t)plain * elem);

  pack_nc4c(src, dst, elem, n, c, s);
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < cp; ch++)
      for (int64_t x = 0; x < s; x++) {
        int64_t di = (((b * (cp / 4) + ch / 4) * s) + x) * 4 + ch % 4;
        for (size_t byte = 0; byte < elem; byte++) {
          unsigned char want = ch < c ? src[((b * c + ch) * s + x) * (int64_t)elem + byte] : 0;
          if (dst[di * (int64_t)elem + byte] != want)
            ck_abort_msg("elem %zu n %lld c %lld s %lld: packed (b %lld, ch %lld, x %lld) byte %zu "
                         "is 0x%02x, want 0x%02x",
                         elem, (long long)n, (long long)c, (long long)s, (long long)b,
                         (long long)ch, (long long)x, byte, dst[di * (int64_t)elem + byte], want);
        }
      }

  unpack_nc4c(dst, back, elem, n, c, s);
  ck_assert_msg(memcmp(src, back, (size_t)plain * elem) == 0,
                "elem %zu n %lld c %lld s %lld: unpack(pack(x)) != x", elem, (long long)n,
                (long long)c, (long long)s);
  free(src);
  free(dst);
  free(back);
}

START_TEST(data_int8_round_trip) {
  rng gen;
  rng_seed(&gen, 0x1234567u);
  for (int64_t n = 1; n <= 2; n++)
    for (size_t ci = 0; ci < N_CHANS; ci++)
      for (size_t si = 0; si < N_SPATIALS; si++)
        data_round_trip(1, n, chans[ci], spatials[si], &gen);
}
END_TEST

START_TEST(data_int32_round_trip) {
  rng gen;
  rng_seed(&gen, 0x89abcdefu);
  for (int64_t n = 1; n <= 3; n++)
    for (size_t ci = 0; ci < N_CHANS; ci++)
      for (size_t si = 0; si < N_SPATIALS; si++)
        data_round_trip(4, n, chans[ci], spatials[si], &gen);
}
END_TEST

/* Weights: pack (checked against the OIHW4o4i formula), then unpack. */
static void weight_round_trip(int64_t k, int64_t c, int64_t s, rng *gen) {
  int64_t kp = (k + 3) / 4 * 4, cp = (c + 3) / 4 * 4;
  int64_t plain = k * c * s, packed = kp * cp * s;
  int8_t *src = xmalloc((size_t)plain);
  int8_t *dst = xmalloc((size_t)packed);
  int8_t *back = xmalloc((size_t)plain);
  for (int64_t i = 0; i < plain; i++) src[i] = (int8_t)(rng_next(gen) & 0xff);
  memset(dst, POISON, (size_t)packed);
  memset(back, POISON, (size_t)plain);

  pack_oi4o4i(src, dst, k, c, s);
  for (int64_t ko = 0; ko < kp; ko++)
    for (int64_t ci = 0; ci < cp; ci++)
      for (int64_t x = 0; x < s; x++) {
        int64_t di = ((((ko / 4) * (cp / 4) + ci / 4) * s + x) * 4 + ko % 4) * 4 + ci % 4;
        int want = (ko < k && ci < c) ? src[(ko * c + ci) * s + x] : 0;
        if (dst[di] != want)
          ck_abort_msg("k %lld c %lld s %lld: packed (o %lld, i %lld, x %lld) is %d, want %d",
                       (long long)k, (long long)c, (long long)s, (long long)ko, (long long)ci,
                       (long long)x, dst[di], want);
      }

  unpack_oi4o4i(dst, back, k, c, s);
  ck_assert_msg(memcmp(src, back, (size_t)plain) == 0, "k %lld c %lld s %lld: unpack(pack(w)) != w",
                (long long)k, (long long)c, (long long)s);
  free(src);
  free(dst);
  free(back);
}

START_TEST(weights_round_trip) {
  rng gen;
  rng_seed(&gen, 0x5eed5eedu);
  for (size_t ki = 0; ki < N_CHANS; ki++)
    for (size_t ci = 0; ci < N_CHANS; ci++)
      for (size_t si = 0; si < N_SPATIALS; si++)
        weight_round_trip(chans[ki], chans[ci], spatials[si], &gen);
}
END_TEST

/* Hand-checked: n 2, c 6, spatial 3, src[i] = i. Plain index (b*6 + ch)*3 + x;
 * packed [2][2][3][4]. Positions below were worked out by hand. */
START_TEST(data_by_hand) {
  int8_t src[36], dst[48];
  for (int i = 0; i < 36; i++) src[i] = (int8_t)i;
  memset(dst, POISON, sizeof dst);
  pack_nc4c(src, dst, 1, 2, 6, 3);
  /* b 0, block 0, x 0: channels 0..3 at x 0 are plain 0, 3, 6, 9 */
  ck_assert_int_eq(dst[0], 0);
  ck_assert_int_eq(dst[1], 3);
  ck_assert_int_eq(dst[2], 6);
  ck_assert_int_eq(dst[3], 9);
  /* b 0, block 0, x 2: plain 2, 5, 8, 11 */
  ck_assert_int_eq(dst[8], 2);
  ck_assert_int_eq(dst[11], 11);
  /* b 0, block 1 (channels 4, 5, pad, pad), x 0 at 12: plain 12, 15, 0, 0 */
  ck_assert_int_eq(dst[12], 12);
  ck_assert_int_eq(dst[13], 15);
  ck_assert_int_eq(dst[14], 0);
  ck_assert_int_eq(dst[15], 0);
  /* b 1 starts at 24: channel 0, x 0 is plain 18; channel 5, x 2 (block 1,
   * lane 1) is at ((1*2 + 1)*3 + 2)*4 + 1 = 45 and holds plain 35 */
  ck_assert_int_eq(dst[24], 18);
  ck_assert_int_eq(dst[45], 35);
  ck_assert_int_eq(dst[46], 0);
  ck_assert_int_eq(dst[47], 0);

  int8_t back[36];
  memset(back, POISON, sizeof back);
  unpack_nc4c(dst, back, 1, 2, 6, 3);
  ck_assert_mem_eq(back, src, sizeof src);
}
END_TEST

/* int32: values whose four bytes all differ, so a byte-level slip shows. */
START_TEST(data_int32_by_hand) {
  int32_t src[5 * 2], dst[8 * 2];
  for (int i = 0; i < 10; i++) src[i] = (int32_t)(0x01020304u * (uint32_t)(i + 1)) - 7;
  memset(dst, POISON, sizeof dst);
  pack_nc4c(src, dst, 4, 1, 5, 2);  /* c 5, spatial 2: packed [1][2][2][4] */
  ck_assert_int_eq(dst[0], src[0]); /* ch 0, x 0 */
  ck_assert_int_eq(dst[1], src[2]); /* ch 1, x 0 */
  ck_assert_int_eq(dst[3], src[6]); /* ch 3, x 0 */
  ck_assert_int_eq(dst[4], src[1]); /* ch 0, x 1 */
  ck_assert_int_eq(dst[8], src[8]); /* ch 4, x 0 */
  ck_assert_int_eq(dst[9], 0);
  ck_assert_int_eq(dst[11], 0);
  ck_assert_int_eq(dst[12], src[9]); /* ch 4, x 1 */
  ck_assert_int_eq(dst[15], 0);
}
END_TEST

/* Hand-checked weights: k 5, c 3, spatial 2, src[i] = i with plain index
 * (ko*3 + ci)*2 + x; packed [2][1][2][4][4] = 64 bytes. */
START_TEST(weights_by_hand) {
  int8_t src[30], dst[64];
  for (int i = 0; i < 30; i++) src[i] = (int8_t)i;
  memset(dst, POISON, sizeof dst);
  pack_oi4o4i(src, dst, 5, 3, 2);
  /* block (0, 0), x 0, o 0: inputs 0, 1, 2 of output 0 = plain 0, 2, 4; lane 3 pad */
  ck_assert_int_eq(dst[0], 0);
  ck_assert_int_eq(dst[1], 2);
  ck_assert_int_eq(dst[2], 4);
  ck_assert_int_eq(dst[3], 0);
  /* o 1: plain 6, 8, 10 */
  ck_assert_int_eq(dst[4], 6);
  ck_assert_int_eq(dst[6], 10);
  /* o 3, i 2, x 0 at 3*4 + 2 = 14: plain (3*3 + 2)*2 = 22 */
  ck_assert_int_eq(dst[14], 22);
  /* x 1 starts at 16: o 0, i 0 is plain 1; o 2, i 1 at 16 + 9 = 25 is plain (2*3 + 1)*2 + 1 = 15 */
  ck_assert_int_eq(dst[16], 1);
  ck_assert_int_eq(dst[25], 15);
  /* block (1, 0) starts at 32: only o 0 (output 4) is real: plain 24, 26, 28 */
  ck_assert_int_eq(dst[32], 24);
  ck_assert_int_eq(dst[33], 26);
  ck_assert_int_eq(dst[34], 28);
  ck_assert_int_eq(dst[35], 0);
  for (int i = 36; i < 48; i++) ck_assert_int_eq(dst[i], 0); /* outputs 5..7, x 0 */
  ck_assert_int_eq(dst[48], 25);                             /* output 4, input 0, x 1 */
  for (int i = 51; i < 64; i++) ck_assert_int_eq(dst[i], 0);

  int8_t back[30];
  memset(back, POISON, sizeof back);
  unpack_oi4o4i(dst, back, 5, 3, 2);
  ck_assert_mem_eq(back, src, sizeof src);
}
END_TEST

/* Unpacking writes exactly n * c * spatial elements: nothing past them. */
START_TEST(unpack_writes_only_real_lanes) {
  int8_t packed[2 * 4 * 3], plain[2 * 3 * 3 + 4];
  for (int i = 0; i < (int)sizeof packed; i++) packed[i] = (int8_t)(i + 1);
  memset(plain, POISON, sizeof plain);
  unpack_nc4c(packed, plain, 1, 2, 3, 3);
  for (int i = 18; i < (int)sizeof plain; i++) ck_assert_int_eq(plain[i], POISON);
  /* b 1, ch 2, x 1: packed ((1*1 + 0)*3 + 1)*4 + 2 = 18 holds 19 */
  ck_assert_int_eq(plain[(1 * 3 + 2) * 3 + 1], 19);
}
END_TEST

/* ---- channels last --------------------------------------------------------- */

/* Channel counts and spatial extents for the transposes: odd ones, and ones
 * below, at and across the 32-element tile. */
static const int64_t nhwc_chans[] = {1, 2, 3, 4, 5, 7, 13, 32, 33, 64};
static const int64_t nhwc_spatials[] = {1, 3, 7, 9, 31, 32, 49, 70};
#define N_NHWC_CHANS    (sizeof nhwc_chans / sizeof nhwc_chans[0])
#define N_NHWC_SPATIALS (sizeof nhwc_spatials / sizeof nhwc_spatials[0])

/* Data [n][c][s] -> NHWC [n][s][c], checked byte by byte, then back. */
static void nhwc_round_trip(size_t elem, int64_t n, int64_t c, int64_t s, rng *gen) {
  int64_t count = n * c * s;
  size_t bytes = (size_t)count * elem;
  unsigned char *src = xmalloc(bytes), *dst = xmalloc(bytes), *back = xmalloc(bytes);
  for (size_t i = 0; i < bytes; i++) src[i] = (unsigned char)rng_next(gen);
  memset(dst, POISON, bytes);
  memset(back, POISON, bytes);

  pack_nhwc(src, dst, elem, n, c, s);
  for (int64_t b = 0; b < n; b++)
    for (int64_t x = 0; x < s; x++)
      for (int64_t ch = 0; ch < c; ch++) {
        int64_t di = (b * s + x) * c + ch, si = (b * c + ch) * s + x;
        if (memcmp(dst + di * (int64_t)elem, src + si * (int64_t)elem, elem))
          ck_abort_msg("elem %zu n %lld c %lld s %lld: nhwc (b %lld, x %lld, ch %lld) differs from "
                       "plain element %lld",
                       elem, (long long)n, (long long)c, (long long)s, (long long)b, (long long)x,
                       (long long)ch, (long long)si);
      }
  unpack_nhwc(dst, back, elem, n, c, s);
  ck_assert_msg(memcmp(src, back, bytes) == 0,
                "elem %zu n %lld c %lld s %lld: unpack_nhwc(pack_nhwc(x)) != x", elem, (long long)n,
                (long long)c, (long long)s);
  free(src);
  free(dst);
  free(back);
}

/* Loop index _i: element size 1, 4 (the fast paths) or 2 (the general one). */
START_TEST(nhwc_round_trip_all_sizes) {
  static const size_t elems[] = {1, 4, 2};
  rng gen;
  rng_seed(&gen, 0x0badcafeu + (uint32_t)_i);
  for (int64_t n = 1; n <= 3; n += 2)
    for (size_t ci = 0; ci < N_NHWC_CHANS; ci++)
      for (size_t si = 0; si < N_NHWC_SPATIALS; si++)
        nhwc_round_trip(elems[_i], n, nhwc_chans[ci], nhwc_spatials[si], &gen);
}
END_TEST

/* Weights OIHW [k][c][s] -> OHWI [k][s][c], checked element by element, then back. */
static void ohwi_round_trip(int64_t k, int64_t c, int64_t s, rng *gen) {
  int64_t count = k * c * s;
  int8_t *src = xmalloc((size_t)count), *dst = xmalloc((size_t)count);
  int8_t *back = xmalloc((size_t)count);
  for (int64_t i = 0; i < count; i++) src[i] = (int8_t)(rng_next(gen) & 0xff);
  memset(dst, POISON, (size_t)count);
  memset(back, POISON, (size_t)count);

  pack_ohwi(src, dst, k, c, s);
  for (int64_t ko = 0; ko < k; ko++)
    for (int64_t x = 0; x < s; x++)
      for (int64_t ci = 0; ci < c; ci++)
        if (dst[(ko * s + x) * c + ci] != src[(ko * c + ci) * s + x])
          ck_abort_msg("k %lld c %lld s %lld: ohwi (o %lld, x %lld, i %lld) is %d, want %d",
                       (long long)k, (long long)c, (long long)s, (long long)ko, (long long)x,
                       (long long)ci, dst[(ko * s + x) * c + ci], src[(ko * c + ci) * s + x]);
  unpack_ohwi(dst, back, k, c, s);
  ck_assert_msg(memcmp(src, back, (size_t)count) == 0,
                "k %lld c %lld s %lld: unpack_ohwi(pack_ohwi(w)) != w", (long long)k, (long long)c,
                (long long)s);
  free(src);
  free(dst);
  free(back);
}

START_TEST(ohwi_round_trip_all_sizes) {
  static const int64_t ks[] = {1, 3, 5, 8, 33};
  static const int64_t kvols[] = {1, 7, 9, 27, 49};
  rng gen;
  rng_seed(&gen, 0x7e577e57u);
  for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
    for (size_t ci = 0; ci < N_NHWC_CHANS; ci++)
      for (size_t si = 0; si < sizeof kvols / sizeof kvols[0]; si++)
        ohwi_round_trip(ks[ki], nhwc_chans[ci], kvols[si], &gen);
}
END_TEST

/* Hand-checked: n 2, c 3, spatial 2, src[i] = i with plain index
 * (b*3 + ch)*2 + x; NHWC [2][2][3]. */
START_TEST(nhwc_by_hand) {
  int8_t src[12], dst[12], back[12];
  for (int i = 0; i < 12; i++) src[i] = (int8_t)i;
  memset(dst, POISON, sizeof dst);
  pack_nhwc(src, dst, 1, 2, 3, 2);
  /* b 0: x 0 holds channels 0..2 = plain 0, 2, 4; x 1: 1, 3, 5; b 1 the same + 6 */
  static const int8_t want[12] = {0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11};
  ck_assert_mem_eq(dst, want, sizeof want);
  memset(back, POISON, sizeof back);
  unpack_nhwc(dst, back, 1, 2, 3, 2);
  ck_assert_mem_eq(back, src, sizeof src);

  /* int32, c 2, spatial 3: values whose four bytes all differ */
  int32_t s32[6], d32[6];
  for (int i = 0; i < 6; i++) s32[i] = (int32_t)(0x01020304u * (uint32_t)(i + 1)) - 7;
  pack_nhwc(s32, d32, 4, 1, 2, 3);
  ck_assert_int_eq(d32[0], s32[0]); /* x 0, ch 0 */
  ck_assert_int_eq(d32[1], s32[3]); /* x 0, ch 1 */
  ck_assert_int_eq(d32[2], s32[1]); /* x 1, ch 0 */
  ck_assert_int_eq(d32[5], s32[5]); /* x 2, ch 1 */

  /* weights k 2, c 3, kernel 2: OHWI [2][2][3] is the same transpose per k */
  int8_t w[12], wo[12];
  for (int i = 0; i < 12; i++) w[i] = (int8_t)(i - 6);
  pack_ohwi(w, wo, 2, 3, 2);
  for (int i = 0; i < 12; i++) ck_assert_int_eq(wo[i], want[i] - 6);
}
END_TEST

static void add_core(TCase *tc) {
  tcase_add_test(tc, round4);
  tcase_add_test(tc, data_int8_round_trip);
  tcase_add_test(tc, data_int32_round_trip);
  tcase_add_test(tc, weights_round_trip);
  tcase_add_test(tc, data_by_hand);
  tcase_add_test(tc, data_int32_by_hand);
  tcase_add_test(tc, weights_by_hand);
  tcase_add_test(tc, unpack_writes_only_real_lanes);
  tcase_add_loop_test(tc, nhwc_round_trip_all_sizes, 0, 3);
  tcase_add_test(tc, ohwi_round_trip_all_sizes);
  tcase_add_test(tc, nhwc_by_hand);
}

static const test_case suite_cases[] = {
    {"core", -1, add_core},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"pack", suite_cases, 0, NULL};
  return test_main(&suite);
}
