/* test_space.c: knob candidates against brute force, index <-> config and
 * config <-> JSON round trips, every rejection path, sampling and text. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space.h"
#include "tests/util.h"

/* ---- helpers ---------------------------------------------------------------- */

/* A passing ck_assert records a mark point (a write to the runner): too slow
 * for loops of a million checks, so hot loops use this instead. */
#define REQUIRE(cond)                                                                              \
  do {                                                                                             \
    if (!(cond)) ck_abort_msg("failed: %s", #cond);                                                \
  } while (0)

/* A space shaped like the conv2d dp4a template on a ResNet-50 3x3 layer. */
static void conv_space(space *s) {
  static const int fuse[] = {0, 1}, unroll[] = {0, 512, 1500}, expl[] = {0, 1};
  ct_err err = {0};
  space_init(s);
  ck_assert_int_eq(space_add_split(s, "tile_n", 16, 4, &err), CT_OK);
  ck_assert_int_eq(space_add_split(s, "tile_f", 64, 4, &err), CT_OK);
  ck_assert_int_eq(space_add_split(s, "tile_y", 56, 4, &err), CT_OK);
  ck_assert_int_eq(space_add_split(s, "tile_x", 56, 4, &err), CT_OK);
  ck_assert_int_eq(space_add_split(s, "tile_rc", 64, 2, &err), CT_OK);
  ck_assert_int_eq(space_add_split(s, "tile_ry", 3, 2, &err), CT_OK);
  ck_assert_int_eq(space_add_split(s, "tile_rx", 3, 2, &err), CT_OK);
  ck_assert_int_eq(space_add_reorder(s, "reorder_inner", 3, &err), CT_OK);
  ck_assert_int_eq(space_add_choice(s, "fuse_yx", fuse, 2, &err), CT_OK);
  ck_assert_int_eq(space_add_choice(s, "auto_unroll_max_step", unroll, 3, &err), CT_OK);
  ck_assert_int_eq(space_add_choice(s, "unroll_explicit", expl, 2, &err), CT_OK);
}

/* 6 x 6 x 3 = 108 points: small enough to enumerate and to test uniformity. */
static void small_space(space *s) {
  static const int vals[] = {5, 7, 9};
  space_init(s);
  ck_assert_int_eq(space_add_split(s, "tile", 12, 2, NULL), CT_OK);
  ck_assert_int_eq(space_add_reorder(s, "order", 3, NULL), CT_OK);
  ck_assert_int_eq(space_add_choice(s, "unroll", vals, 3, NULL), CT_OK);
  ck_assert_uint_eq(s->size, 108);
}

/* The space of the JSON and text examples in space.h. */
static void example_space(space *s) {
  static const int fuse[] = {0, 1}, unroll[] = {0, 512, 1500};
  space_init(s);
  ck_assert_int_eq(space_add_split(s, "tile_f", 16, 4, NULL), CT_OK);
  ck_assert_int_eq(space_add_reorder(s, "reorder_inner", 3, NULL), CT_OK);
  ck_assert_int_eq(space_add_choice(s, "fuse_yx", fuse, 2, NULL), CT_OK);
  ck_assert_int_eq(space_add_choice(s, "auto_unroll_max_step", unroll, 3, NULL), CT_OK);
}

static int cmp_cand(const int *a, const int *b, int width) {
  for (int i = 0; i < width; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

/* Every ordered factorisation by brute force, lexicographic by construction
 * (nested loops, outermost factor in the outermost loop). Returns the count. */
static int brute_splits(int extent, int parts, int *out) {
  int n = 0, lim[3] = {1, 1, 1};
  for (int i = 0; i < parts - 1; i++) lim[i] = extent;
  for (int a = 1; a <= lim[0]; a++)
    for (int b = 1; b <= lim[1]; b++)
      for (int c = 1; c <= lim[2]; c++) {
        int f[4] = {a, b, c, 1};
        long p = 1;
        for (int i = 0; i < parts - 1; i++) p *= f[i];
        if (extent % p) continue;
        f[parts - 1] = (int)(extent / p);
        memcpy(out + n * parts, f, (size_t)parts * sizeof(int));
        n++;
      }
  return n;
}

/* A failed add must leave everything as it was: same knobs, same pointers. */
typedef struct snapshot {
  int n_knobs;
  uint64_t size;
  knob knobs[SPACE_MAX_KNOBS];
} snapshot;

static void take(const space *s, snapshot *snap) {
  memset(snap, 0, sizeof *snap);
  snap->n_knobs = s->n_knobs;
  snap->size = s->size;
  memcpy(snap->knobs, s->knobs, sizeof s->knobs);
}

static void assert_unchanged(const space *s, const snapshot *snap) {
  ck_assert_int_eq(s->n_knobs, snap->n_knobs);
  ck_assert_uint_eq(s->size, snap->size);
  ck_assert(memcmp(s->knobs, snap->knobs, sizeof s->knobs) == 0);
}

static int same_config(const space *s, const config *a, const config *b) {
  for (int k = 0; k < s->n_knobs; k++)
    if (a->choice[k] != b->choice[k]) return 0;
  return 1;
}

/* ---- candidates ------------------------------------------------------------- */

START_TEST(split_counts) {
  static const struct {
    int extent, parts, count;
  } cases[] = {
      /* 720720 = 2^4 3^2 5 7 11 13: C(7,3) C(5,3) 4^4 ordered 4-factorisations */
      {1, 1, 1},          {1, 4, 1},         {7, 4, 4},      {13, 2, 2},         {12, 2, 6},
      {16, 1, 1},         {16, 4, 35},       {56, 4, 80},    {64, 2, 7},         {64, 4, 84},
      {3, 2, 2},          {224, 4, 224},     {2048, 4, 364}, {2147483647, 4, 4}, {1 << 30, 4, 5456},
      {720720, 4, 89600}, {1000000, 3, 784},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    space s;
    space_init(&s);
    ct_err err = {0};
    ck_assert_int_eq(space_add_split(&s, "t", cases[i].extent, cases[i].parts, &err), CT_OK);
    const knob *k = &s.knobs[0];
    ck_assert_int_eq(k->kind, KNOB_SPLIT);
    ck_assert_int_eq(k->width, cases[i].parts);
    ck_assert_int_eq(k->extent, cases[i].extent);
    int want = cases[i].count;
    ck_assert_msg(k->n_cands == want, "%d into %d: %d candidates, want %d", cases[i].extent,
                  cases[i].parts, k->n_cands, want);
    ck_assert_uint_eq(s.size, (uint64_t)want);
    /* each a factorisation, strictly increasing: sorted and distinct */
    for (int c = 0; c < k->n_cands; c++) {
      const int *v = k->cands + (size_t)c * k->width;
      long long p = 1;
      for (int j = 0; j < k->width; j++) {
        REQUIRE(v[j] >= 1);
        p *= v[j];
      }
      REQUIRE(p == cases[i].extent);
      if (c) REQUIRE(cmp_cand(v - k->width, v, k->width) < 0);
    }
    space_free(&s);
  }
}
END_TEST

START_TEST(split_matches_brute_force) {
  int *want = malloc(40 * 40 * 40 * 4 * sizeof *want);
  ck_assert_ptr_nonnull(want);
  for (int extent = 1; extent <= 40; extent++) {
    for (int parts = 1; parts <= KNOB_MAX_WIDTH; parts++) {
      space s;
      space_init(&s);
      ck_assert_int_eq(space_add_split(&s, "t", extent, parts, NULL), CT_OK);
      int n = brute_splits(extent, parts, want);
      ck_assert_int_eq(s.knobs[0].n_cands, n);
      ck_assert(memcmp(s.knobs[0].cands, want, (size_t)n * parts * sizeof *want) == 0);
      space_free(&s);
    }
  }
  free(want);
}
END_TEST

START_TEST(split_of_12_into_2) {
  static const int want[] = {1, 12, 2, 6, 3, 4, 4, 3, 6, 2, 12, 1};
  space s;
  space_init(&s);
  ck_assert_int_eq(space_add_split(&s, "t", 12, 2, NULL), CT_OK);
  ck_assert_int_eq(s.knobs[0].n_cands, 6);
  ck_assert(memcmp(s.knobs[0].cands, want, sizeof want) == 0);
  space_free(&s);
}
END_TEST

START_TEST(reorder_permutations) {
  static const int want3[] = {0, 1, 2, 0, 2, 1, 1, 0, 2, 1, 2, 0, 2, 0, 1, 2, 1, 0};
  static const int counts[] = {0, 1, 2, 6, 24};
  for (int n = 1; n <= KNOB_MAX_WIDTH; n++) {
    space s;
    space_init(&s);
    ck_assert_int_eq(space_add_reorder(&s, "r", n, NULL), CT_OK);
    const knob *k = &s.knobs[0];
    ck_assert_int_eq(k->kind, KNOB_REORDER);
    ck_assert_int_eq(k->width, n);
    ck_assert_int_eq(k->extent, 0);
    ck_assert_int_eq(k->n_cands, counts[n]);
    for (int c = 0; c < k->n_cands; c++) {
      const int *v = k->cands + (size_t)c * n;
      int seen = 0;
      for (int j = 0; j < n; j++) {
        ck_assert(v[j] >= 0 && v[j] < n);
        if (c == 0) ck_assert_int_eq(v[j], j); /* identity first */
        seen |= 1 << v[j];
      }
      ck_assert_int_eq(seen, (1 << n) - 1);
      if (c) ck_assert_int_lt(cmp_cand(v - n, v, n), 0);
    }
    if (n == 3) ck_assert(memcmp(k->cands, want3, sizeof want3) == 0);
    space_free(&s);
  }
}
END_TEST

START_TEST(choice_keeps_order) {
  static const int vals[] = {1500, 0, 512, -3};
  space s;
  space_init(&s);
  ck_assert_int_eq(space_add_choice(&s, "u", vals, 4, NULL), CT_OK);
  ck_assert_int_eq(s.knobs[0].kind, KNOB_CHOICE);
  ck_assert_int_eq(s.knobs[0].width, 1);
  ck_assert_int_eq(s.knobs[0].n_cands, 4);
  ck_assert(memcmp(s.knobs[0].cands, vals, sizeof vals) == 0);
  ck_assert_int_eq(space_find(&s, "u"), 0);
  ck_assert_int_eq(space_find(&s, "v"), -1);
  space_free(&s);
  ck_assert_int_eq(s.n_knobs, 0);
  ck_assert_uint_eq(s.size, 1);
  space_free(&s); /* freeing an empty space again is fine */
  space_free(NULL);
}
END_TEST

/* ---- adder errors ----------------------------------------------------------- */

static void expect_add_error(space *s, ct_status st, ct_status want, const ct_err *err,
                             const char *needle, const snapshot *snap) {
  ck_assert_msg(st == want, "status %d, want %d (%s), expecting '%s'", st, want, err->msg, needle);
  ck_assert_int_eq(err->status, want);
  ck_assert_msg(strstr(err->msg, needle), "message '%s' lacks '%s'", err->msg, needle);
  assert_unchanged(s, snap);
}

START_TEST(adder_rejects_bad_arguments) {
  static const int vals[] = {0, 1}, dup[] = {0, 512, 0};
  space s;
  example_space(&s);
  snapshot snap;
  take(&s, &snap);
  ct_err err = {0};
  expect_add_error(&s, space_add_split(&s, NULL, 16, 4, &err), CT_ERR_INVALID_ARG, &err, "NULL",
                   &snap);
  expect_add_error(&s, space_add_split(&s, "", 16, 4, &err), CT_ERR_INVALID_ARG, &err, "empty",
                   &snap);
  char longname[KNOB_NAME_MAX + 1];
  memset(longname, 'a', KNOB_NAME_MAX);
  longname[KNOB_NAME_MAX] = '\0';
  expect_add_error(&s, space_add_split(&s, longname, 16, 4, &err), CT_ERR_INVALID_ARG, &err,
                   "too long", &snap);
  longname[KNOB_NAME_MAX - 1] = '\0'; /* 31 characters: fits */
  expect_add_error(&s, space_add_split(&s, "tile f", 16, 4, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 'tile f': name must be a C identifier", &snap);
  expect_add_error(&s, space_add_split(&s, "1x", 16, 4, &err), CT_ERR_INVALID_ARG, &err,
                   "identifier", &snap);
  /* duplicates across kinds */
  expect_add_error(&s, space_add_split(&s, "tile_f", 16, 4, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 'tile_f': duplicate name", &snap);
  expect_add_error(&s, space_add_reorder(&s, "fuse_yx", 3, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 'fuse_yx': duplicate name", &snap);
  expect_add_error(&s, space_add_choice(&s, "reorder_inner", vals, 2, &err), CT_ERR_INVALID_ARG,
                   &err, "knob 'reorder_inner': duplicate name", &snap);
  /* split arguments */
  expect_add_error(&s, space_add_split(&s, "t", 0, 4, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 't': extent 0 (must be >= 1)", &snap);
  expect_add_error(&s, space_add_split(&s, "t", -16, 4, &err), CT_ERR_INVALID_ARG, &err,
                   "extent -16", &snap);
  expect_add_error(&s, space_add_split(&s, "t", 16, 0, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 't': 0 parts (must be 1..4)", &snap);
  expect_add_error(&s, space_add_split(&s, "t", 16, 5, &err), CT_ERR_INVALID_ARG, &err, "5 parts",
                   &snap);
  /* reorder arguments */
  expect_add_error(&s, space_add_reorder(&s, "r", 0, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 'r': 0 axes (must be 1..4)", &snap);
  expect_add_error(&s, space_add_reorder(&s, "r", 5, &err), CT_ERR_INVALID_ARG, &err, "5 axes",
                   &snap);
  /* choice arguments */
  expect_add_error(&s, space_add_choice(&s, "c", vals, 0, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 'c': 0 values (must be >= 1)", &snap);
  expect_add_error(&s, space_add_choice(&s, "c", NULL, 2, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 'c': values is NULL", &snap);
  expect_add_error(&s, space_add_choice(&s, "c", dup, 3, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 'c': value 0 appears twice", &snap);
  /* a NULL space is an error, not a crash; a NULL err just drops the detail */
  ck_assert_int_eq(space_add_split(NULL, "t", 16, 4, NULL), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(space_add_split(&s, "t", 0, 4, NULL), CT_ERR_INVALID_ARG);
  assert_unchanged(&s, &snap);
  /* and the space still works after all that */
  ck_assert_int_eq(space_add_split(&s, longname, 16, 4, &err), CT_OK);
  ck_assert_int_eq(s.n_knobs, 5);
  ck_assert_uint_eq(s.size, snap.size * 35);
  space_free(&s);
}
END_TEST

START_TEST(adder_rejects_huge_split) {
  /* 2095133040 = 2^4 3^4 5 7 11 13 17 19 has the most divisors of any int
   * (1600) and C(7,3)^2 4^6 = 5017600 ordered 4-factorisations. */
  space s;
  example_space(&s);
  snapshot snap;
  take(&s, &snap);
  ct_err err = {0};
  expect_add_error(&s, space_add_split(&s, "huge", 2095133040, 4, &err), CT_ERR_UNSUPPORTED, &err,
                   "knob 'huge': 2095133040 into 4 factors has 5017600 splits (at most 1048576)",
                   &snap);
  /* the same extent in 2 parts is fine: one candidate per divisor */
  ck_assert_int_eq(space_add_split(&s, "huge", 2095133040, 2, &err), CT_OK);
  ck_assert_int_eq(s.knobs[s.n_knobs - 1].n_cands, 1600);
  space_free(&s);
}
END_TEST

START_TEST(adder_rejects_too_many_knobs) {
  static const int one[] = {3};
  space s;
  space_init(&s);
  char name[16];
  for (int k = 0; k < SPACE_MAX_KNOBS; k++) {
    snprintf(name, sizeof name, "k%d", k);
    ck_assert_int_eq(space_add_choice(&s, name, one, 1, NULL), CT_OK);
  }
  snapshot snap;
  take(&s, &snap);
  ct_err err = {0};
  expect_add_error(&s, space_add_split(&s, "extra", 16, 4, &err), CT_ERR_INVALID_ARG, &err,
                   "knob 'extra': too many knobs (at most 24)", &snap);
  expect_add_error(&s, space_add_reorder(&s, "extra", 2, &err), CT_ERR_INVALID_ARG, &err,
                   "too many knobs", &snap);
  expect_add_error(&s, space_add_choice(&s, "extra", one, 1, &err), CT_ERR_INVALID_ARG, &err,
                   "too many knobs", &snap);
  space_free(&s);
}
END_TEST

START_TEST(adder_rejects_overflow) {
  /* 364^7 < 2^64 < 364^8 */
  space s;
  space_init(&s);
  char name[16];
  for (int k = 0; k < 7; k++) {
    snprintf(name, sizeof name, "t%d", k);
    ck_assert_int_eq(space_add_split(&s, name, 2048, 4, NULL), CT_OK);
  }
  uint64_t size = 1;
  for (int k = 0; k < 7; k++) size *= 364;
  ck_assert_uint_eq(s.size, size);
  snapshot snap;
  take(&s, &snap);
  ct_err err = {0};
  expect_add_error(&s, space_add_split(&s, "big", 2048, 4, &err), CT_ERR_UNSUPPORTED, &err,
                   "knob 'big': the space would exceed 2^64 points", &snap);
  expect_add_error(&s, space_add_reorder(&s, "big", 4, &err), CT_ERR_UNSUPPORTED, &err,
                   "knob 'big'", &snap);
  static const int many[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                               16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
  expect_add_error(&s, space_add_choice(&s, "big", many, 32, &err), CT_ERR_UNSUPPORTED, &err,
                   "knob 'big'", &snap);
  /* a factor that still fits is accepted */
  ck_assert_int_eq(space_add_choice(&s, "small", many, 16, &err), CT_OK);
  ck_assert_uint_eq(s.size, size * 16);
  /* the last index of a huge space round-trips */
  config cfg;
  ck_assert_int_eq(space_config(&s, s.size - 1, &cfg, &err), CT_OK);
  for (int k = 0; k < s.n_knobs; k++) ck_assert_int_eq(cfg.choice[k], s.knobs[k].n_cands - 1);
  ck_assert_uint_eq(space_index(&s, &cfg), s.size - 1);
  space_free(&s);
}
END_TEST

/* ---- index <-> config -------------------------------------------------------- */

START_TEST(index_round_trip_small_space) {
  space s;
  small_space(&s);
  ct_err err = {0};
  config cfg;
  for (uint64_t i = 0; i < s.size; i++) {
    REQUIRE(space_config(&s, i, &cfg, &err) == CT_OK);
    for (int k = 0; k < s.n_knobs; k++)
      REQUIRE(cfg.choice[k] >= 0 && cfg.choice[k] < s.knobs[k].n_cands);
    REQUIRE(space_index(&s, &cfg) == i);
  }
  /* knob 0 is the least significant digit */
  ck_assert_int_eq(space_config(&s, 1, &cfg, &err), CT_OK);
  ck_assert(cfg.choice[0] == 1 && cfg.choice[1] == 0 && cfg.choice[2] == 0);
  ck_assert_int_eq(space_config(&s, 6, &cfg, &err), CT_OK);
  ck_assert(cfg.choice[0] == 0 && cfg.choice[1] == 1 && cfg.choice[2] == 0);
  ck_assert_int_eq(space_config(&s, 6 * 6 * 2 + 5, &cfg, &err), CT_OK);
  ck_assert(cfg.choice[0] == 5 && cfg.choice[1] == 0 && cfg.choice[2] == 2);
  /* out of range */
  config before = cfg;
  ck_assert_int_eq(space_config(&s, s.size, &cfg, &err), CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "108"), "%s", err.msg);
  ck_assert_int_eq(space_config(&s, UINT64_MAX, &cfg, NULL), CT_ERR_INVALID_ARG);
  ck_assert(same_config(&s, &cfg, &before));
  space_free(&s);
}
END_TEST

START_TEST(index_of_empty_space) {
  space s;
  space_init(&s);
  ck_assert_uint_eq(s.size, 1);
  config cfg;
  ck_assert_int_eq(space_config(&s, 0, &cfg, NULL), CT_OK);
  ck_assert_uint_eq(space_index(&s, &cfg), 0);
  ck_assert_int_eq(space_config(&s, 1, &cfg, NULL), CT_ERR_INVALID_ARG);
  char buf[8];
  ck_assert_str_eq(space_config_str(&s, &cfg, buf, sizeof buf), "");
  cJSON *j = space_config_to_json(&s, &cfg);
  ck_assert_ptr_nonnull(j);
  char *text = cJSON_PrintUnformatted(j);
  ck_assert_str_eq(text, "{}");
  ck_assert_int_eq(space_config_from_json(&s, j, &cfg, NULL), CT_OK);
  free(text);
  cJSON_Delete(j);
  space_free(&s);
}
END_TEST

START_TEST(index_round_trip_conv_space) {
  space s;
  conv_space(&s);
  /* 35 * 84 * 80 * 80 * 7 * 2 * 2 * 6 * 2 * 3 * 2 */
  ck_assert_uint_eq(s.size, 37933056000ULL);
  ck_assert_uint_gt(s.size, 1000000000ULL);
  rng r;
  rng_seed(&r, 2024);
  config cfg;
  for (int t = 0; t < 5000; t++) {
    uint64_t i = rng_below(&r, s.size);
    REQUIRE(space_config(&s, i, &cfg, NULL) == CT_OK);
    REQUIRE(space_index(&s, &cfg) == i);
  }
  ck_assert_int_eq(space_config(&s, s.size - 1, &cfg, NULL), CT_OK);
  ck_assert_uint_eq(space_index(&s, &cfg), s.size - 1);
  ck_assert_int_eq(space_config(&s, s.size, &cfg, NULL), CT_ERR_INVALID_ARG);
  space_free(&s);
}
END_TEST

/* ---- JSON ------------------------------------------------------------------ */

START_TEST(json_round_trip) {
  space s;
  conv_space(&s);
  rng r;
  rng_seed(&r, 7);
  for (int t = 0; t < 2000; t++) {
    config cfg, back;
    space_random(&s, &r, &cfg);
    cJSON *j = space_config_to_json(&s, &cfg);
    REQUIRE(j != NULL);
    /* through text, as the database stores it */
    char *text = cJSON_PrintUnformatted(j);
    REQUIRE(text != NULL);
    cJSON *parsed = cJSON_Parse(text);
    REQUIRE(parsed != NULL);
    ct_err err = {0};
    ck_assert_msg(space_config_from_json(&s, parsed, &back, &err) == CT_OK, "%s: %s", text,
                  err.msg);
    REQUIRE(same_config(&s, &cfg, &back));
    REQUIRE(space_index(&s, &back) == space_index(&s, &cfg));
    free(text);
    cJSON_Delete(parsed);
    cJSON_Delete(j);
  }
  space_free(&s);
}
END_TEST

START_TEST(json_form) {
  space s;
  example_space(&s);
  const char *text = "{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
                     "\"auto_unroll_max_step\":1500}";
  cJSON *in = cJSON_Parse(text);
  config cfg;
  ct_err err = {0};
  ck_assert_msg(space_config_from_json(&s, in, &cfg, &err) == CT_OK, "%s", err.msg);
  cJSON *out = space_config_to_json(&s, &cfg);
  ck_assert(cJSON_IsArray(cJSON_GetObjectItem(out, "tile_f")));
  ck_assert(cJSON_IsArray(cJSON_GetObjectItem(out, "reorder_inner")));
  ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(out, "fuse_yx")));
  char *printed = cJSON_PrintUnformatted(out);
  ck_assert_str_eq(printed, text);
  free(printed);
  /* key order does not matter */
  cJSON *shuffled = cJSON_Parse("{\"auto_unroll_max_step\":1500,\"fuse_yx\":1,"
                                "\"reorder_inner\":[0,2,1],\"tile_f\":[2,1,8,1]}");
  config cfg2;
  ck_assert_int_eq(space_config_from_json(&s, shuffled, &cfg2, &err), CT_OK);
  ck_assert(same_config(&s, &cfg, &cfg2));
  /* integral floats are integers in JSON */
  cJSON *floaty = cJSON_Parse("{\"auto_unroll_max_step\":1.5e3,\"fuse_yx\":1.0,"
                              "\"reorder_inner\":[0,2,1],\"tile_f\":[2,1,8,1]}");
  ck_assert_int_eq(space_config_from_json(&s, floaty, &cfg2, &err), CT_OK);
  ck_assert(same_config(&s, &cfg, &cfg2));
  cJSON_Delete(floaty);
  cJSON_Delete(shuffled);
  cJSON_Delete(out);
  cJSON_Delete(in);
  space_free(&s);
}
END_TEST

START_TEST(json_rejects_bad_configs) {
  /* Each case is the valid config of json_form with one thing broken. */
  static const struct {
    const char *text, *needle;
  } cases[] = {
      {"{\"reorder_inner\":[0,2,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'tile_f' (split) is missing"},
      {"{\"tile_f\":[2,1,8,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'reorder_inner' (reorder) is missing"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"auto_unroll_max_step\":0}",
       "knob 'fuse_yx' (choice) is missing"},
      {"{}", "knob 'tile_f' (split) is missing"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0,"
       "\"x\":1}",
       "unknown knob 'x'; the knobs are tile_f, reorder_inner, fuse_yx, auto_unroll_max_step"},
      {"{\"Tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "unknown knob 'Tile_f'"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,\"fuse_yx\":0,"
       "\"auto_unroll_max_step\":0}",
       "knob 'fuse_yx' appears twice"},
      /* splits */
      {"{\"tile_f\":[3,1,1,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'tile_f': [3,1,1,1] is not a split of 16 into 4 factors"},
      {"{\"tile_f\":[0,16,1,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'tile_f': [0,16,1,1] is not a split of 16 into 4 factors"},
      {"{\"tile_f\":[-1,-16,1,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
       "\"auto_unroll_max_step\":0}",
       "knob 'tile_f': [-1,-16,1,1] is not a split of 16 into 4 factors"},
      {"{\"tile_f\":[65536,65536,1,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
       "\"auto_unroll_max_step\":0}",
       "is not a split of 16 into 4 factors"},
      {"{\"tile_f\":[4,4],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'tile_f': got a list of 2; expected a list of 4 positive integers whose product is "
       "16"},
      {"{\"tile_f\":[2,2,2,2,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
       "\"auto_unroll_max_step\":0}",
       "knob 'tile_f': got a list of 5"},
      {"{\"tile_f\":16,\"reorder_inner\":[0,2,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'tile_f': got a number; expected a list of 4 positive integers"},
      {"{\"tile_f\":\"2,1,8,1\",\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
       "\"auto_unroll_max_step\":0}",
       "knob 'tile_f': got a string"},
      {"{\"tile_f\":{},\"reorder_inner\":[0,2,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'tile_f': got an object"},
      {"{\"tile_f\":[2,1,8,1.5],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
       "\"auto_unroll_max_step\":0}",
       "knob 'tile_f': element 3 is not an integer"},
      {"{\"tile_f\":[2,\"1\",8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
       "\"auto_unroll_max_step\":0}",
       "knob 'tile_f': element 1 is not an integer"},
      {"{\"tile_f\":[2,1e300,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
       "\"auto_unroll_max_step\":0}",
       "knob 'tile_f': element 1 is not an integer"},
      /* reorders */
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,0,1],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'reorder_inner': [0,0,1] is not a permutation of 0..2"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,1,3],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'reorder_inner': [0,1,3] is not a permutation of 0..2"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[-1,0,1],\"fuse_yx\":1,"
       "\"auto_unroll_max_step\":0}",
       "knob 'reorder_inner': [-1,0,1] is not a permutation of 0..2"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[1,0],\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'reorder_inner': got a list of 2; expected a permutation of 0..2"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":null,\"fuse_yx\":1,\"auto_unroll_max_step\":0}",
       "knob 'reorder_inner': got null"},
      /* choices */
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":2,\"auto_unroll_max_step\":0}",
       "knob 'fuse_yx': 2 is not one of 0, 1"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
       "\"auto_unroll_max_step\":100}",
       "knob 'auto_unroll_max_step': 100 is not one of 0, 512, 1500"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":\"1\","
       "\"auto_unroll_max_step\":0}",
       "knob 'fuse_yx': got a string; expected an integer, one of 0, 1"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":true,"
       "\"auto_unroll_max_step\":0}",
       "knob 'fuse_yx': got a boolean"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":0.5,"
       "\"auto_unroll_max_step\":0}",
       "knob 'fuse_yx': got a non-integer"},
      {"{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":[1],"
       "\"auto_unroll_max_step\":0}",
       "knob 'fuse_yx': got a list"},
      /* not an object */
      {"[1,2]", "not a JSON object"},
      {"3", "not a JSON object"},
  };
  space s;
  example_space(&s);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cJSON *j = cJSON_Parse(cases[i].text);
    ck_assert_msg(j != NULL, "case %zu does not parse", i);
    config cfg;
    memset(&cfg, 0x5a, sizeof cfg);
    config before = cfg;
    ct_err err = {0};
    ct_status st = space_config_from_json(&s, j, &cfg, &err);
    ck_assert_msg(st == CT_ERR_PARSE, "case %zu: status %d", i, st);
    ck_assert_int_eq(err.status, CT_ERR_PARSE);
    ck_assert_msg(strstr(err.msg, cases[i].needle), "case %zu: message '%s' lacks '%s'", i, err.msg,
                  cases[i].needle);
    ck_assert_msg(memcmp(&cfg, &before, sizeof cfg) == 0, "case %zu wrote out", i);
    ck_assert_int_eq(space_config_from_json(&s, j, &cfg, NULL), CT_ERR_PARSE);
    cJSON_Delete(j);
  }
  ck_assert_int_eq(space_config_from_json(&s, NULL, &(config){{0}}, NULL), CT_ERR_PARSE);
  space_free(&s);
}
END_TEST

/* ---- sampling ---------------------------------------------------------------- */

START_TEST(random_is_uniform) {
  space s;
  small_space(&s);
  enum { DRAWS = 60000 };
  long counts[108] = {0}, digit[3][6] = {{0}};
  rng r;
  rng_seed(&r, 5);
  config cfg;
  for (int t = 0; t < DRAWS; t++) {
    space_random(&s, &r, &cfg);
    uint64_t i = space_index(&s, &cfg);
    REQUIRE(i < s.size);
    counts[i]++;
    for (int k = 0; k < s.n_knobs; k++) digit[k][cfg.choice[k]]++;
  }
  /* chi-square over all 108 points, 107 degrees of freedom: mean 107, sd
   * sqrt(214) ~ 14.6; a fixed seed far below 6 sd over the mean */
  double expect = (double)DRAWS / 108, chi = 0;
  for (int i = 0; i < 108; i++) {
    ck_assert_int_gt(counts[i], 0);
    chi += (counts[i] - expect) * (counts[i] - expect) / expect;
  }
  ck_assert_msg(chi < 107 + 6 * sqrt(214.0), "chi2 %.1f", chi);
  /* each digit within 5% of its share */
  for (int k = 0; k < s.n_knobs; k++) {
    int n = s.knobs[k].n_cands;
    for (int c = 0; c < n; c++) {
      double share = (double)DRAWS / n;
      ck_assert_msg(fabs(digit[k][c] - share) < 0.05 * share, "knob %d cand %d: %ld of %.0f", k, c,
                    digit[k][c], share);
    }
  }
  /* reproducible for a seed */
  rng a, b;
  rng_seed(&a, 11);
  rng_seed(&b, 11);
  config ca, cb;
  for (int t = 0; t < 100; t++) {
    space_random(&s, &a, &ca);
    space_random(&s, &b, &cb);
    REQUIRE(same_config(&s, &ca, &cb));
  }
  space_free(&s);
}
END_TEST

START_TEST(random_covers_the_large_space) {
  /* The top digits of a 3.8e10 space are reached: no truncation to 32 bits. */
  space s;
  conv_space(&s);
  rng r;
  rng_seed(&r, 3);
  config cfg;
  int top_seen[2] = {0, 0};
  uint64_t max_index = 0;
  for (int t = 0; t < 5000; t++) {
    space_random(&s, &r, &cfg);
    for (int k = 0; k < s.n_knobs; k++)
      REQUIRE(cfg.choice[k] >= 0 && cfg.choice[k] < s.knobs[k].n_cands);
    top_seen[cfg.choice[s.n_knobs - 1]] = 1;
    uint64_t i = space_index(&s, &cfg);
    if (i > max_index) max_index = i;
  }
  ck_assert(top_seen[0] && top_seen[1]);
  ck_assert_uint_gt(max_index, s.size / 10 * 9);
  space_free(&s);
}
END_TEST

START_TEST(neighbor_changes_exactly_one_knob) {
  static const int one[] = {4}, three[] = {0, 1, 2};
  space s;
  conv_space(&s);
  /* a knob with a single candidate is never the one moved */
  ck_assert_int_eq(space_add_choice(&s, "fixed", one, 1, NULL), CT_OK);
  ck_assert_int_eq(space_add_split(&s, "tile_z", 1, 4, NULL), CT_OK);
  ck_assert_int_eq(space_add_choice(&s, "three", three, 3, NULL), CT_OK);
  int movable = s.n_knobs - 2;
  enum { DRAWS = 30000 };
  long per_knob[SPACE_MAX_KNOBS] = {0}, to[3] = {0};
  long from_zero = 0;
  rng r;
  rng_seed(&r, 17);
  config cfg, nb;
  for (int t = 0; t < DRAWS; t++) {
    space_random(&s, &r, &cfg);
    int k = space_neighbor(&s, &r, &cfg, &nb);
    REQUIRE(k >= 0 && k < s.n_knobs);
    REQUIRE(s.knobs[k].n_cands > 1);
    REQUIRE(nb.choice[k] >= 0 && nb.choice[k] < s.knobs[k].n_cands);
    REQUIRE(nb.choice[k] != cfg.choice[k]);
    for (int j = 0; j < s.n_knobs; j++)
      if (j != k) REQUIRE(nb.choice[j] == cfg.choice[j]);
    REQUIRE(space_index(&s, &nb) != space_index(&s, &cfg));
    per_knob[k]++;
    if (k == s.n_knobs - 1 && cfg.choice[k] == 0) {
      to[nb.choice[k]]++;
      from_zero++;
    }
  }
  /* knobs uniformly (within 10%), and the other candidates uniformly */
  ck_assert_int_eq(per_knob[s.n_knobs - 3], 0);
  ck_assert_int_eq(per_knob[s.n_knobs - 2], 0);
  for (int k = 0; k < s.n_knobs - 3; k++)
    ck_assert_msg(fabs(per_knob[k] - (double)DRAWS / movable) < 0.1 * DRAWS / movable,
                  "knob %d moved %ld times", k, per_knob[k]);
  ck_assert_int_eq(to[0], 0);
  ck_assert_int_gt(from_zero, 100);
  ck_assert(fabs((double)to[1] - to[2]) < 0.3 * from_zero);
  /* in place: cfg and out may be the same */
  space_random(&s, &r, &cfg);
  config copy = cfg;
  int k = space_neighbor(&s, &r, &cfg, &cfg);
  ck_assert_int_ge(k, 0);
  ck_assert_int_ne(cfg.choice[k], copy.choice[k]);
  space_free(&s);
}
END_TEST

START_TEST(neighbor_of_a_single_point) {
  static const int one[] = {4};
  space s;
  space_init(&s);
  rng r;
  rng_seed(&r, 1);
  config cfg, nb;
  ck_assert_int_eq(space_config(&s, 0, &cfg, NULL), CT_OK);
  ck_assert_int_eq(space_neighbor(&s, &r, &cfg, &nb), -1); /* empty space */
  ck_assert_int_eq(space_add_split(&s, "t", 1, 4, NULL), CT_OK);
  ck_assert_int_eq(space_add_split(&s, "p", 1, 1, NULL), CT_OK);
  ck_assert_int_eq(space_add_reorder(&s, "r", 1, NULL), CT_OK);
  ck_assert_int_eq(space_add_choice(&s, "c", one, 1, NULL), CT_OK);
  ck_assert_uint_eq(s.size, 1);
  ck_assert_int_eq(space_config(&s, 0, &cfg, NULL), CT_OK);
  memset(&nb, 0x7f, sizeof nb);
  ck_assert_int_eq(space_neighbor(&s, &r, &cfg, &nb), -1);
  ck_assert(same_config(&s, &cfg, &nb));
  space_free(&s);
}
END_TEST

/* ---- reading values ---------------------------------------------------------- */

START_TEST(get_and_value) {
  space s;
  example_space(&s);
  cJSON *j = cJSON_Parse("{\"tile_f\":[2,1,8,1],\"reorder_inner\":[1,2,0],\"fuse_yx\":1,"
                         "\"auto_unroll_max_step\":512}");
  config cfg;
  ck_assert_int_eq(space_config_from_json(&s, j, &cfg, NULL), CT_OK);
  ck_assert_int_eq(space_get(&s, &cfg, "fuse_yx", -1), 1);
  ck_assert_int_eq(space_get(&s, &cfg, "auto_unroll_max_step", -1), 512);
  ck_assert_int_eq(space_get(&s, &cfg, "tile_f", -1), 2);
  ck_assert_int_eq(space_get(&s, &cfg, "reorder_inner", -1), 1);
  ck_assert_int_eq(space_get(&s, &cfg, "unroll_explicit", 42), 42);
  const int *v = space_value(&s, &cfg, 0);
  ck_assert(v[0] == 2 && v[1] == 1 && v[2] == 8 && v[3] == 1);
  /* borrowed: it points into the knob's candidates */
  ck_assert_ptr_eq(v, s.knobs[0].cands + cfg.choice[0] * 4);
  v = space_value(&s, &cfg, 1);
  ck_assert(v[0] == 1 && v[1] == 2 && v[2] == 0);
  cJSON_Delete(j);
  space_free(&s);
}
END_TEST

START_TEST(config_str) {
  space s;
  example_space(&s);
  cJSON *j = cJSON_Parse("{\"tile_f\":[2,1,8,1],\"reorder_inner\":[0,2,1],\"fuse_yx\":1,"
                         "\"auto_unroll_max_step\":1500}");
  config cfg;
  ck_assert_int_eq(space_config_from_json(&s, j, &cfg, NULL), CT_OK);
  const char *want = "tile_f=[2,1,8,1] reorder_inner=[0,2,1] fuse_yx=1 auto_unroll_max_step=1500";
  char buf[128];
  ck_assert_ptr_eq(space_config_str(&s, &cfg, buf, sizeof buf), buf);
  ck_assert_str_eq(buf, want);
  /* every short buffer holds a terminated prefix and nothing past its end */
  size_t len = strlen(want);
  for (size_t size = 1; size <= len + 1; size++) {
    char small[128];
    memset(small, '#', sizeof small);
    space_config_str(&s, &cfg, small, size);
    ck_assert_uint_eq(strlen(small), size - 1);
    ck_assert(strncmp(small, want, size - 1) == 0);
    ck_assert_int_eq(small[size], '#');
  }
  char untouched = '#';
  ck_assert_ptr_eq(space_config_str(&s, &cfg, &untouched, 0), &untouched);
  ck_assert_int_eq(untouched, '#');
  cJSON_Delete(j);
  space_free(&s);
}
END_TEST

static void add_space(TCase *tc) {
  tcase_add_test(tc, split_counts);
  tcase_add_test(tc, split_matches_brute_force);
  tcase_add_test(tc, split_of_12_into_2);
  tcase_add_test(tc, reorder_permutations);
  tcase_add_test(tc, choice_keeps_order);
  tcase_add_test(tc, adder_rejects_bad_arguments);
  tcase_add_test(tc, adder_rejects_huge_split);
  tcase_add_test(tc, adder_rejects_too_many_knobs);
  tcase_add_test(tc, adder_rejects_overflow);
  tcase_add_test(tc, index_round_trip_small_space);
  tcase_add_test(tc, index_of_empty_space);
  tcase_add_test(tc, index_round_trip_conv_space);
  tcase_add_test(tc, json_round_trip);
  tcase_add_test(tc, json_form);
  tcase_add_test(tc, json_rejects_bad_configs);
  tcase_add_test(tc, random_is_uniform);
  tcase_add_test(tc, random_covers_the_large_space);
  tcase_add_test(tc, neighbor_changes_exactly_one_knob);
  tcase_add_test(tc, neighbor_of_a_single_point);
  tcase_add_test(tc, get_and_value);
  tcase_add_test(tc, config_str);
}

static const test_case suite_cases[] = {
    {"space", 60, add_space},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"space", suite_cases, 0, NULL};
  return test_main(&suite);
}
