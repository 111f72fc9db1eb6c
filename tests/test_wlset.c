/*
 * test_wlset.c: workload sets (core/wlset.c): the embedded sets, parsing of
 * set text, and loading from files.
 *
 * The embedded sets are checked layer by layer against the shapes of
 * /work/shared/workloads.md, copied into tables here (never read back from
 * scripts/workloads), and the shipped files, loaded by path from the source
 * tree (CT_SOURCE_DIR, set by ctest), must give the same keys as the embedded
 * copies. Parse errors must name the origin, the entry (index and name) and
 * the field. File tests write into a fresh scratch folder (tests/util.h) under $TMPDIR
 * (or /tmp) and remove it. Every set is freed: the suite also runs under
 * ASan/LSan.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/wlset.h"
#include "tests/util.h"

/* Assert that st is want and that err's message holds needle (and needle2
 * when not NULL). what names the case in the failure message. */
static void expect_err_at(int line, ct_status st, ct_status want, const ct_err *err,
                          const char *what, const char *needle, const char *needle2) {
  ck_assert_msg(st == want, "line %d, %s: status %s, want %s (message: %s)", line, what,
                ct_status_name(st), ct_status_name(want), err->msg);
  ck_assert_msg(strstr(err->msg, needle), "line %d, %s: message '%s' does not mention '%s'", line,
                what, err->msg, needle);
  if (needle2)
    ck_assert_msg(strstr(err->msg, needle2), "line %d, %s: message '%s' does not mention '%s'",
                  line, what, err->msg, needle2);
}
#define EXPECT_ERR(st, want, err, what, needle, needle2)                                           \
  expect_err_at(__LINE__, (st), (want), (err), (what), (needle), (needle2))

/* wlset_parse(text) must fail with want, naming needle and needle2; nothing
 * is handed out. */
static void expect_bad_set_at(int line, const char *text, int batch, ct_status want,
                              const char *needle, const char *needle2) {
  wlset *s = NULL;
  ct_err err = {0};
  expect_err_at(line, wlset_parse(text, "test.json", batch, &s, &err), want, &err, text, needle,
                needle2);
  ck_assert_msg(s == NULL, "line %d: a set was handed out on failure", line);
}
#define EXPECT_BAD_SET(text, batch, want, needle, needle2)                                         \
  expect_bad_set_at(__LINE__, (text), (batch), (want), (needle), (needle2))

/* Parse text, which must be accepted. Owned: wlset_free. */
static wlset *parse_ok_at(int line, const char *text, const char *origin, int batch) {
  wlset *s = NULL;
  ct_err err = {0};
  ct_status st = wlset_parse(text, origin, batch, &s, &err);
  ck_assert_msg(st == CT_OK, "line %d: %s rejected with %s: %s", line, text, ct_status_name(st),
                err.msg);
  ck_assert_ptr_nonnull(s);
  return s;
}
#define PARSE_OK(text, origin, batch) parse_ok_at(__LINE__, (text), (origin), (batch))

static wlset *load_named_ok(const char *name, int batch) {
  wlset *s = NULL;
  ct_err err = {0};
  ct_status st = wlset_load_named(name, batch, &s, &err);
  ck_assert_msg(st == CT_OK, "set %s batch %d: %s: %s", name, batch, ct_status_name(st), err.msg);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* A 2D layer of workloads.md: C H W K kernel stride pad, square and symmetric. */
typedef struct layer2 {
  const char *name;
  int c, h, w, k, r, s, p;
} layer2;

/* A 3D layer: C D H W K, then kernel, stride and pad per dimension (d, h, w). */
typedef struct layer3 {
  const char *name;
  int c, d, h, w, k;
  int r[3], s[3], p[3];
} layer3;

static const layer2 resnet50[] = {
    {"conv1", 3, 224, 224, 64, 7, 2, 3},
    {"l1_1x1_64_64", 64, 56, 56, 64, 1, 1, 0},
    {"l1_3x3_64", 64, 56, 56, 64, 3, 1, 1},
    {"l1_1x1_64_256", 64, 56, 56, 256, 1, 1, 0},
    {"l1_1x1_256_64", 256, 56, 56, 64, 1, 1, 0},
    {"l2_1x1_256_128", 256, 56, 56, 128, 1, 1, 0},
    {"l2_3x3_128_s2", 128, 56, 56, 128, 3, 2, 1},
    {"l2_1x1_128_512", 128, 28, 28, 512, 1, 1, 0},
    {"l2_ds_256_512_s2", 256, 56, 56, 512, 1, 2, 0},
    {"l2_1x1_512_128", 512, 28, 28, 128, 1, 1, 0},
    {"l2_3x3_128", 128, 28, 28, 128, 3, 1, 1},
    {"l3_1x1_512_256", 512, 28, 28, 256, 1, 1, 0},
    {"l3_3x3_256_s2", 256, 28, 28, 256, 3, 2, 1},
    {"l3_1x1_256_1024", 256, 14, 14, 1024, 1, 1, 0},
    {"l3_ds_512_1024_s2", 512, 28, 28, 1024, 1, 2, 0},
    {"l3_1x1_1024_256", 1024, 14, 14, 256, 1, 1, 0},
    {"l3_3x3_256", 256, 14, 14, 256, 3, 1, 1},
    {"l4_1x1_1024_512", 1024, 14, 14, 512, 1, 1, 0},
    {"l4_3x3_512_s2", 512, 14, 14, 512, 3, 2, 1},
    {"l4_1x1_512_2048", 512, 7, 7, 2048, 1, 1, 0},
    {"l4_ds_1024_2048_s2", 1024, 14, 14, 2048, 1, 2, 0},
    {"l4_1x1_2048_512", 2048, 7, 7, 512, 1, 1, 0},
    {"l4_3x3_512", 512, 7, 7, 512, 3, 1, 1},
};

/* workloads.md gives ResNet-18 shapes only; names are not checked. */
static const layer2 resnet18[] = {
    {NULL, 64, 56, 56, 64, 3, 1, 1},   {NULL, 64, 56, 56, 64, 1, 1, 0},
    {NULL, 64, 56, 56, 128, 3, 2, 1},  {NULL, 64, 56, 56, 128, 1, 2, 0},
    {NULL, 128, 28, 28, 128, 3, 1, 1}, {NULL, 128, 28, 28, 256, 3, 2, 1},
    {NULL, 128, 28, 28, 256, 1, 2, 0}, {NULL, 256, 14, 14, 256, 3, 1, 1},
    {NULL, 256, 14, 14, 512, 3, 2, 1}, {NULL, 256, 14, 14, 512, 1, 2, 0},
    {NULL, 512, 7, 7, 512, 3, 1, 1},
};

static const layer3 resnet3d18[] = {
    {"stem", 3, 16, 112, 112, 64, {3, 7, 7}, {1, 2, 2}, {1, 3, 3}},
    {"l1_3x3x3", 64, 16, 56, 56, 64, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"l2_3x3x3_s2", 64, 16, 56, 56, 128, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}},
    {"l2_ds_s2", 64, 16, 56, 56, 128, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}},
    {"l2_3x3x3", 128, 8, 28, 28, 128, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"l3_3x3x3_s2", 128, 8, 28, 28, 256, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}},
    {"l3_ds_s2", 128, 8, 28, 28, 256, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}},
    {"l3_3x3x3", 256, 4, 14, 14, 256, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"l4_3x3x3_s2", 256, 4, 14, 14, 512, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}},
    {"l4_ds_s2", 256, 4, 14, 14, 512, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}},
    {"l4_3x3x3", 512, 2, 7, 7, 512, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
};

/* C3D: all 3x3x3, stride 1, pad 1. */
static const layer3 c3d[] = {
    {"conv1", 3, 16, 112, 112, 64, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"conv2", 64, 16, 56, 56, 128, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"conv3a", 128, 8, 28, 28, 256, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"conv3b", 256, 8, 28, 28, 256, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"conv4a", 256, 4, 14, 14, 512, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"conv4b", 512, 4, 14, 14, 512, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"conv5a", 512, 2, 7, 7, 512, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"conv5b", 512, 2, 7, 7, 512, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
};

/* The grouped and depthwise sets (workloads.md, "Grouped and depthwise"): a
 * 2D layer C H W K kernel stride pad groups; a 3D one C D H W K kernel stride
 * pad groups, the same in every dimension. */
typedef struct glayer {
  const char *name;
  int c, d, h, w, k, r, s, p, g;
} glayer;

static const glayer mobilenetv2[] = {
    {"stem", 3, 1, 224, 224, 32, 3, 2, 1, 1},
    {"dw32_112", 32, 1, 112, 112, 32, 3, 1, 1, 32},
    {"pw32_16", 32, 1, 112, 112, 16, 1, 1, 0, 1},
    {"pw16_96", 16, 1, 112, 112, 96, 1, 1, 0, 1},
    {"dw96_s2", 96, 1, 112, 112, 96, 3, 2, 1, 96},
    {"pw96_24", 96, 1, 56, 56, 24, 1, 1, 0, 1},
    {"pw24_144", 24, 1, 56, 56, 144, 1, 1, 0, 1},
    {"dw144_56", 144, 1, 56, 56, 144, 3, 1, 1, 144},
    {"pw144_24", 144, 1, 56, 56, 24, 1, 1, 0, 1},
    {"dw144_s2", 144, 1, 56, 56, 144, 3, 2, 1, 144},
    {"pw144_32", 144, 1, 28, 28, 32, 1, 1, 0, 1},
    {"pw32_192", 32, 1, 28, 28, 192, 1, 1, 0, 1},
    {"dw192_28", 192, 1, 28, 28, 192, 3, 1, 1, 192},
    {"pw192_32", 192, 1, 28, 28, 32, 1, 1, 0, 1},
    {"dw192_s2", 192, 1, 28, 28, 192, 3, 2, 1, 192},
    {"pw192_64", 192, 1, 14, 14, 64, 1, 1, 0, 1},
    {"pw64_384", 64, 1, 14, 14, 384, 1, 1, 0, 1},
    {"dw384_14", 384, 1, 14, 14, 384, 3, 1, 1, 384},
    {"pw384_64", 384, 1, 14, 14, 64, 1, 1, 0, 1},
    {"pw384_96", 384, 1, 14, 14, 96, 1, 1, 0, 1},
    {"pw96_576", 96, 1, 14, 14, 576, 1, 1, 0, 1},
    {"dw576_14", 576, 1, 14, 14, 576, 3, 1, 1, 576},
    {"pw576_96", 576, 1, 14, 14, 96, 1, 1, 0, 1},
    {"dw576_s2", 576, 1, 14, 14, 576, 3, 2, 1, 576},
    {"pw576_160", 576, 1, 7, 7, 160, 1, 1, 0, 1},
    {"pw160_960", 160, 1, 7, 7, 960, 1, 1, 0, 1},
    {"dw960_7", 960, 1, 7, 7, 960, 3, 1, 1, 960},
    {"pw960_160", 960, 1, 7, 7, 160, 1, 1, 0, 1},
    {"pw960_320", 960, 1, 7, 7, 320, 1, 1, 0, 1},
    {"pw320_1280", 320, 1, 7, 7, 1280, 1, 1, 0, 1},
};

static const glayer efficientnet_b0_dw[] = {
    {"dw32_112_k3", 32, 1, 112, 112, 32, 3, 1, 1, 32},
    {"dw96_112_k3s2", 96, 1, 112, 112, 96, 3, 2, 1, 96},
    {"dw144_56_k3", 144, 1, 56, 56, 144, 3, 1, 1, 144},
    {"dw144_56_k5s2", 144, 1, 56, 56, 144, 5, 2, 2, 144},
    {"dw240_28_k5", 240, 1, 28, 28, 240, 5, 1, 2, 240},
    {"dw240_28_k3s2", 240, 1, 28, 28, 240, 3, 2, 1, 240},
    {"dw480_14_k3", 480, 1, 14, 14, 480, 3, 1, 1, 480},
    {"dw480_14_k5", 480, 1, 14, 14, 480, 5, 1, 2, 480},
    {"dw672_14_k5", 672, 1, 14, 14, 672, 5, 1, 2, 672},
    {"dw672_14_k5s2", 672, 1, 14, 14, 672, 5, 2, 2, 672},
    {"dw1152_7_k5", 1152, 1, 7, 7, 1152, 5, 1, 2, 1152},
    {"dw1152_7_k3", 1152, 1, 7, 7, 1152, 3, 1, 1, 1152},
};

static const glayer resnext50_g[] = {
    {"g3x3_128", 128, 1, 56, 56, 128, 3, 1, 1, 32},
    {"g3x3_256_s2", 256, 1, 56, 56, 256, 3, 2, 1, 32},
    {"g3x3_256", 256, 1, 28, 28, 256, 3, 1, 1, 32},
    {"g3x3_512_s2", 512, 1, 28, 28, 512, 3, 2, 1, 32},
    {"g3x3_512", 512, 1, 14, 14, 512, 3, 1, 1, 32},
    {"g3x3_1024_s2", 1024, 1, 14, 14, 1024, 3, 2, 1, 32},
    {"g3x3_1024", 1024, 1, 7, 7, 1024, 3, 1, 1, 32},
};

static const glayer csn_dw3d[] = {
    {"dw64", 64, 16, 56, 56, 64, 3, 1, 1, 64},    {"dw128_s2", 128, 16, 56, 56, 128, 3, 2, 1, 128},
    {"dw128", 128, 8, 28, 28, 128, 3, 1, 1, 128}, {"dw256_s2", 256, 8, 28, 28, 256, 3, 2, 1, 256},
    {"dw256", 256, 4, 14, 14, 256, 3, 1, 1, 256}, {"dw512_s2", 512, 4, 14, 14, 512, 3, 2, 1, 512},
    {"dw512", 512, 2, 7, 7, 512, 3, 1, 1, 512},
};

/* 3D ResNeXt-101 32x4d's grouped 3x3x3 layers (Hara et al., CVPR 2018;
 * 16 x 112 x 112 clips, the stride on the 3x3x3) */
static const glayer resnext3d_g[] = {
    {"g128", 128, 8, 28, 28, 128, 3, 1, 1, 32},  {"g256_s2", 256, 8, 28, 28, 256, 3, 2, 1, 32},
    {"g256", 256, 4, 14, 14, 256, 3, 1, 1, 32},  {"g512_s2", 512, 4, 14, 14, 512, 3, 2, 1, 32},
    {"g512", 512, 2, 7, 7, 512, 3, 1, 1, 32},    {"g1024_s2", 1024, 2, 7, 7, 1024, 3, 2, 1, 32},
    {"g1024", 1024, 1, 4, 4, 1024, 3, 1, 1, 32},
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The workload a 2D layer describes at batch n, NCHW, int8. */
static ct_workload want2(const layer2 *l, int n) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.n = n, w.c = l->c, w.k = l->k;
  w.in[0] = l->h, w.in[1] = l->w;
  for (int d = 0; d < 2; d++) {
    w.kernel[d] = l->r;
    w.stride[d] = l->s;
    w.pad_before[d] = w.pad_after[d] = l->p;
  }
  return w;
}

static ct_workload want3(const layer3 *l, int n) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV3D);
  w.n = n, w.c = l->c, w.k = l->k;
  w.in[0] = l->d, w.in[1] = l->h, w.in[2] = l->w;
  for (int d = 0; d < 3; d++) {
    w.kernel[d] = l->r[d];
    w.stride[d] = l->s[d];
    w.pad_before[d] = w.pad_after[d] = l->p[d];
  }
  return w;
}

/* The workload a grouped layer of a 2D (d3 0) or 3D set describes at batch
 * n. */
static ct_workload wantg(const glayer *l, int d3, int n) {
  ct_workload w;
  int nd = d3 ? 3 : 2;
  workload_init(&w, nd == 3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  w.n = n, w.c = l->c, w.k = l->k, w.groups = l->g;
  const int in[3] = {l->d, l->h, l->w};
  for (int d = 0; d < nd; d++) {
    w.in[d] = in[d + 3 - nd];
    w.kernel[d] = l->r;
    w.stride[d] = l->s;
    w.pad_before[d] = w.pad_after[d] = l->p;
  }
  return w;
}

/* Check item i of s against want, by key so that a mismatch reads well. */
static void check_item(const wlset *s, int i, const ct_workload *want, const char *name) {
  char got_key[CT_KEY_MAX], want_key[CT_KEY_MAX];
  workload_key(&s->items[i].w, got_key, sizeof got_key);
  workload_key(want, want_key, sizeof want_key);
  if (memcmp(&s->items[i].w, want, sizeof *want))
    ck_abort_msg("set %s item %d (%s): %s, want %s", s->name, i + 1, s->items[i].name, got_key,
                 want_key);
  if (name && strcmp(s->items[i].name, name))
    ck_abort_msg("set %s item %d: name %s, want %s", s->name, i + 1, s->items[i].name, name);
}

/* No two items of s share a key (the networks list unique layers). */
static void check_unique_keys(const wlset *s) {
  for (int i = 0; i < s->n_items; i++)
    for (int j = 0; j < i; j++) {
      char a[CT_KEY_MAX], b[CT_KEY_MAX];
      if (!strcmp(workload_key(&s->items[i].w, a, sizeof a),
                  workload_key(&s->items[j].w, b, sizeof b)))
        ck_abort_msg("set %s: items %s and %s are the same workload %s", s->name, s->items[j].name,
                     s->items[i].name, a);
    }
}

/* ---- embedded sets --------------------------------------------------------- */

START_TEST(resnet50_embedded) {
  wlset *s = load_named_ok("resnet50", 16);
  ck_assert_str_eq(s->name, "resnet50");
  ck_assert_int_eq(s->n_items, 23);
  ck_assert_int_eq(COUNT(resnet50), 23);
  for (int i = 0; i < s->n_items; i++) {
    ct_workload w = want2(&resnet50[i], 16);
    check_item(s, i, &w, resnet50[i].name);
  }
  /* Spelled out for the first and the last layer. */
  const ct_workload *first = &s->items[0].w;
  ck_assert_str_eq(s->items[0].name, "conv1");
  ck_assert_int_eq(first->op, CT_OP_CONV2D);
  ck_assert_int_eq(first->n, 16);
  ck_assert_int_eq(first->c, 3);
  ck_assert_int_eq(first->k, 64);
  ck_assert_int_eq(first->in[0], 224);
  ck_assert_int_eq(first->in[1], 224);
  ck_assert_int_eq(first->kernel[0], 7);
  ck_assert_int_eq(first->kernel[1], 7);
  ck_assert_int_eq(first->stride[0], 2);
  ck_assert_int_eq(first->stride[1], 2);
  ck_assert_int_eq(first->pad_before[0], 3);
  ck_assert_int_eq(first->pad_after[1], 3);
  ck_assert_int_eq(workload_out_size(first, 0), 112);
  ck_assert_str_eq(s->items[22].name, "l4_3x3_512");
  ck_assert_int_eq(s->items[22].w.c, 512);
  ck_assert_int_eq(s->items[22].w.in[0], 7);
  for (int i = 0; i < s->n_items; i++) ck_assert_int_eq(s->items[i].w.n, 16);
  check_unique_keys(s);
  wlset_free(s);
}
END_TEST

START_TEST(resnet18_embedded) {
  wlset *s = load_named_ok("resnet18", 4);
  ck_assert_str_eq(s->name, "resnet18");
  ck_assert_int_eq(s->n_items, 11);
  for (int i = 0; i < s->n_items; i++) {
    ct_workload w = want2(&resnet18[i], 4);
    check_item(s, i, &w, NULL);
  }
  check_unique_keys(s);
  wlset_free(s);
}
END_TEST

START_TEST(resnet3d18_embedded) {
  wlset *s = load_named_ok("resnet3d18", 2);
  ck_assert_str_eq(s->name, "resnet3d18");
  ck_assert_int_eq(s->n_items, 11);
  for (int i = 0; i < s->n_items; i++) {
    ct_workload w = want3(&resnet3d18[i], 2);
    check_item(s, i, &w, resnet3d18[i].name);
  }
  /* The stem, spelled out: per-dimension kernel, stride and pad. */
  const ct_workload *stem = &s->items[0].w;
  ck_assert_str_eq(s->items[0].name, "stem");
  ck_assert_int_eq(stem->op, CT_OP_CONV3D);
  ck_assert_int_eq(stem->layout, CT_LAYOUT_NCHW);
  static const int r[3] = {3, 7, 7}, st[3] = {1, 2, 2}, p[3] = {1, 3, 3}, out[3] = {16, 56, 56};
  for (int d = 0; d < 3; d++) {
    ck_assert_int_eq(stem->kernel[d], r[d]);
    ck_assert_int_eq(stem->stride[d], st[d]);
    ck_assert_int_eq(stem->pad_before[d], p[d]);
    ck_assert_int_eq(stem->pad_after[d], p[d]);
    ck_assert_int_eq(workload_out_size(stem, d), out[d]);
  }
  check_unique_keys(s);
  wlset_free(s);
}
END_TEST

START_TEST(c3d_embedded) {
  wlset *s = load_named_ok("c3d", 1);
  ck_assert_str_eq(s->name, "c3d");
  ck_assert_int_eq(s->n_items, 8);
  for (int i = 0; i < s->n_items; i++) {
    ct_workload w = want3(&c3d[i], 1);
    check_item(s, i, &w, c3d[i].name);
  }
  wlset_free(s);
}
END_TEST

/* The four grouped and depthwise sets: every layer as workloads.md gives it,
 * groups included, valid at batch 1, 3 and 32, unique. Depthwise layers
 * (groups == C == K) and ResNeXt's 32 groups are spelled out: a set that
 * lost its "groups" would still parse, as a dense conv. */
static void check_grouped_set(const char *name, int d3, const glayer *want, int n_want, int n_dw) {
  static const int batches[] = {1, 3, 32};
  for (int b = 0; b < 3; b++) {
    wlset *s = load_named_ok(name, batches[b]);
    ck_assert_str_eq(s->name, name);
    ck_assert_int_eq(s->n_items, n_want);
    int dw = 0;
    for (int i = 0; i < s->n_items; i++) {
      ct_workload w = wantg(&want[i], d3, batches[b]);
      check_item(s, i, &w, want[i].name);
      const ct_workload *got = &s->items[i].w;
      ct_err err = {0};
      ck_assert_msg(workload_validate(got, &err) == CT_OK, "%s/%s: %s", name, want[i].name,
                    err.msg);
      ck_assert_int_eq(got->c % got->groups, 0);
      ck_assert_int_eq(got->k % got->groups, 0);
      dw += got->groups > 1 && got->groups == got->c && got->k == got->c;
    }
    ck_assert_int_eq(dw, n_dw);
    check_unique_keys(s);
    wlset_free(s);
  }
}

START_TEST(grouped_sets_embedded) {
  ck_assert_int_eq(COUNT(mobilenetv2), 30);
  check_grouped_set("mobilenetv2", 0, mobilenetv2, 30, 10);
  check_grouped_set("efficientnet_b0_dw", 0, efficientnet_b0_dw, 12, 12);
  check_grouped_set("resnext50_g", 0, resnext50_g, 7, 0);
  check_grouped_set("csn_dw3d", 1, csn_dw3d, 7, 7);
  check_grouped_set("resnext3d_g", 1, resnext3d_g, 7, 0);
  /* spelled out: MobileNetV2's stem is dense, its first depthwise is not */
  wlset *s = load_named_ok("mobilenetv2", 32);
  ck_assert_str_eq(s->items[0].name, "stem");
  ck_assert_int_eq(s->items[0].w.groups, 1);
  ck_assert_str_eq(s->items[1].name, "dw32_112");
  ck_assert_int_eq(s->items[1].w.groups, 32);
  ck_assert_int_eq(s->items[1].w.c, 32);
  ck_assert_int_eq(s->items[1].w.k, 32);
  ck_assert_int_eq(s->items[4].w.stride[0], 2);
  wlset_free(s);
  s = load_named_ok("resnext50_g", 1);
  for (int i = 0; i < s->n_items; i++) {
    ck_assert_int_eq(s->items[i].w.groups, 32);
    ck_assert_int_ge(s->items[i].w.c / 32, 4); /* 4 to 32 channels per group */
    ck_assert_int_le(s->items[i].w.c / 32, 32);
  }
  wlset_free(s);
  /* 3D ResNeXt's last layer: a 1 x 4 x 4 input, still conv3d */
  s = load_named_ok("resnext3d_g", 1);
  ck_assert_int_eq(s->items[6].w.op, CT_OP_CONV3D);
  ck_assert_int_eq(s->items[6].w.in[0], 1);
  ck_assert_int_eq(workload_out_size(&s->items[5].w, 0), 1);
  wlset_free(s);
  s = load_named_ok("csn_dw3d", 1);
  ck_assert_int_eq(s->items[0].w.op, CT_OP_CONV3D);
  ck_assert_int_eq(s->items[0].w.in[0], 16);
  ck_assert_int_eq(s->items[6].w.in[0], 2);
  ck_assert_int_eq(workload_out_size(&s->items[1].w, 0), 8);
  wlset_free(s);
  /* EfficientNet's 5x5 layers pad 2 */
  s = load_named_ok("efficientnet_b0_dw", 1);
  ck_assert_int_eq(s->items[3].w.kernel[0], 5);
  ck_assert_int_eq(s->items[3].w.pad_before[1], 2);
  ck_assert_int_eq(workload_out_size(&s->items[3].w, 0), 28);
  wlset_free(s);
}
END_TEST

START_TEST(batch_zero_keeps_entry_n) {
  const char *names[] = {"resnet50",    "resnet18",    "resnet3d18",
                         "c3d",         "mobilenetv2", "efficientnet_b0_dw",
                         "resnext50_g", "csn_dw3d",    "resnext3d_g"};
  for (int k = 0; k < COUNT(names); k++) {
    wlset *s = load_named_ok(names[k], 0);
    for (int i = 0; i < s->n_items; i++)
      if (s->items[i].w.n != 1)
        ck_abort_msg("set %s item %s: n %d at batch 0, want 1", names[k], s->items[i].name,
                     s->items[i].w.n);
    wlset_free(s);
  }
  /* A batch changes only n. */
  wlset *a = load_named_ok("resnet3d18", 0), *b = load_named_ok("resnet3d18", 7);
  ck_assert_int_eq(a->n_items, b->n_items);
  for (int i = 0; i < a->n_items; i++) {
    ck_assert_str_eq(a->items[i].name, b->items[i].name);
    ct_workload w = a->items[i].w;
    w.n = 7;
    ck_assert_mem_eq(&w, &b->items[i].w, sizeof w);
  }
  wlset_free(a);
  wlset_free(b);
}
END_TEST

START_TEST(unknown_set_not_found) {
  wlset *s = NULL;
  ct_err err = {0};
  ct_status st = wlset_load_named("resnet51", 1, &s, &err);
  EXPECT_ERR(st, CT_ERR_NOT_FOUND, &err, "resnet51", "resnet51", "resnet50");
  ck_assert_ptr_null(s);
  const char *all[] = {"c3d",         "resnet18",    "resnet3d18",
                       "resnet50",    "mobilenetv2", "efficientnet_b0_dw",
                       "resnext50_g", "csn_dw3d",    "resnext3d_g"};
  for (int i = 0; i < COUNT(all); i++)
    ck_assert_msg(strstr(err.msg, all[i]), "message '%s' does not list %s", err.msg, all[i]);
  /* The name is a set's name, not a file name. */
  st = wlset_load_named("resnet50.json", 1, &s, &err);
  EXPECT_ERR(st, CT_ERR_NOT_FOUND, &err, "resnet50.json", "resnet50.json", "c3d");
  st = wlset_load_named("", 1, &s, &err);
  EXPECT_ERR(st, CT_ERR_NOT_FOUND, &err, "empty name", "c3d", NULL);
  ck_assert_ptr_null(s);
  /* Bad arguments. */
  st = wlset_load_named(NULL, 1, &s, &err);
  EXPECT_ERR(st, CT_ERR_INVALID_ARG, &err, "NULL name", "NULL", NULL);
  ck_assert_int_eq(wlset_load_named("resnet50", 1, NULL, &err), CT_ERR_INVALID_ARG);
  st = wlset_load_named("resnet50", -1, &s, &err);
  EXPECT_ERR(st, CT_ERR_INVALID_ARG, &err, "batch -1", "batch", NULL);
  ck_assert_ptr_null(s);
}
END_TEST

START_TEST(names_lists_every_set) {
  char buf[256];
  ck_assert_ptr_eq(wlset_names(buf, sizeof buf), buf);
  const char *all[] = {"c3d",         "resnet18",    "resnet3d18",
                       "resnet50",    "mobilenetv2", "efficientnet_b0_dw",
                       "resnext50_g", "csn_dw3d",    "resnext3d_g"};
  for (int i = 0; i < COUNT(all); i++)
    ck_assert_msg(strstr(buf, all[i]), "'%s' does not list %s", buf, all[i]);
  ck_assert_ptr_null(strstr(buf, ".json"));
  /* Every listed name loads. */
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ", ", &save); tok;
       tok = strtok_r(NULL, ", ", &save), n++) {
    wlset *s = load_named_ok(tok, 1);
    ck_assert_str_eq(s->name, tok);
    ck_assert_int_gt(s->n_items, 0);
    wlset_free(s);
  }
  ck_assert_int_ge(n, 8);
  /* A short buffer is truncated and terminated, never overrun (heap
   * buffers of the exact size, so ASan sees any overrun). */
  for (size_t size = 1; size < 48; size++) {
    char *small = malloc(size);
    ck_assert_ptr_nonnull(small);
    wlset_names(small, size);
    if (strlen(small) >= size) ck_abort_msg("size %zu: '%s' overruns", size, small);
    free(small);
  }
}
END_TEST

/* ---- parsing --------------------------------------------------------------- */

/* A conv2d entry with c and k, 7x7 input, 3x3 kernel, and extra fields
 * spliced in (never c or k again: cJSON keeps duplicate keys, and the first
 * one wins). E: a valid one. */
#define EK(c, k, extra)                                                                            \
  "{\"op\": \"conv2d\", \"c\": " #c ", \"k\": " #k ", \"h\": 7, \"w\": 7, \"kernel\": 3" extra "}"
#define E(extra) EK(8, 8, extra)

START_TEST(parse_single_object_is_set_of_one) {
  wlset *s = PARSE_OK(E(", \"name\": \"only\""), "dir/one.json", 0);
  ck_assert_str_eq(s->name, "one");
  ck_assert_int_eq(s->n_items, 1);
  ck_assert_str_eq(s->items[0].name, "only");
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.c = w.k = 8, w.in[0] = w.in[1] = 7, w.kernel[0] = w.kernel[1] = 3;
  ck_assert_mem_eq(&s->items[0].w, &w, sizeof w);
  wlset_free(s);
  /* Unnamed: "#1". The origin need not end in .json. */
  s = PARSE_OK(E(""), "inline", 3);
  ck_assert_str_eq(s->name, "inline");
  ck_assert_int_eq(s->n_items, 1);
  ck_assert_str_eq(s->items[0].name, "#1");
  ck_assert_int_eq(s->items[0].w.n, 3);
  wlset_free(s);
}
END_TEST

START_TEST(parse_list_names_unnamed_entries) {
  wlset *s = PARSE_OK("[" E("") ", " EK(8, 16, ", \"name\": \"mid\"") ", " EK(4, 8, "") "]",
                      "/tmp/x/three.json", 0);
  ck_assert_str_eq(s->name, "three");
  ck_assert_int_eq(s->n_items, 3);
  ck_assert_str_eq(s->items[0].name, "#1");
  ck_assert_str_eq(s->items[1].name, "mid");
  ck_assert_str_eq(s->items[2].name, "#3");
  ck_assert_int_eq(s->items[0].w.k, 8);
  ck_assert_int_eq(s->items[1].w.k, 16);
  ck_assert_int_eq(s->items[2].w.c, 4);
  wlset_free(s);

  /* A long list, built here. */
  enum { N = 300 };
  size_t cap = (size_t)N * 128 + 16, len = 0;
  char *text = malloc(cap);
  ck_assert_ptr_nonnull(text);
  len += (size_t)snprintf(text + len, cap - len, "[");
  for (int i = 0; i < N; i++)
    len += (size_t)snprintf(text + len, cap - len,
                            "%s{\"op\": \"conv2d\", \"c\": %d, \"k\": 4, \"h\": 9, \"w\": 9, "
                            "\"kernel\": 1}",
                            i ? ", " : "", i + 1);
  snprintf(text + len, cap - len, "]");
  s = PARSE_OK(text, "long", 2);
  free(text);
  ck_assert_int_eq(s->n_items, N);
  for (int i = 0; i < N; i++) {
    char want[16];
    snprintf(want, sizeof want, "#%d", i + 1);
    if (strcmp(s->items[i].name, want) || s->items[i].w.c != i + 1 || s->items[i].w.n != 2)
      ck_abort_msg("item %d: name %s c %d n %d", i, s->items[i].name, s->items[i].w.c,
                   s->items[i].w.n);
  }
  wlset_free(s);
}
END_TEST

START_TEST(parse_errors_name_entry_and_field) {
  /* A bad entry in the middle: origin, index, name and field. */
  EXPECT_BAD_SET(
      "[" E(", \"name\": \"a\"") ", {\"name\": \"b\", \"op\": \"conv2d\", \"c\": 8, "
                                 "\"h\": 7, \"w\": 7, \"kernel\": 3}, " E(", \"name\": \"c\"") "]",
      0, CT_ERR_INVALID_WORKLOAD, "workload #2 (b)", "'k'");
  EXPECT_BAD_SET("[" E(", \"name\": \"a\"") ", " E(", \"name\": \"b\", \"kernal\": 3") "]", 0,
                 CT_ERR_INVALID_WORKLOAD, "test.json", "'kernal'");
  EXPECT_BAD_SET("[" E("") ", " E(", \"stride\": [1, 2, 3]") ", " E("") "]", 0,
                 CT_ERR_INVALID_WORKLOAD, "workload #2", "'stride'");
  EXPECT_BAD_SET("[" E("") ", " E("") ", " E(", \"name\": \"x\", \"layout\": \"nchw4c\"") ", " EK(
                     8, 6, ", \"name\": \"y\", \"layout\": \"nchw4c\"") "]",
                 0, CT_ERR_INVALID_WORKLOAD, "workload #4 (y)", "k (output channels)");
  /* The last entry bad, unnamed. */
  EXPECT_BAD_SET("[" E("") ", " E(", \"n\": 0") "]", 0, CT_ERR_INVALID_WORKLOAD, "workload #2",
                 "'n'");
  /* A list entry that is not an object. */
  EXPECT_BAD_SET("[" E("") ", 42]", 0, CT_ERR_INVALID_WORKLOAD, "workload #2", "object");
  EXPECT_BAD_SET("[[" E("") "]]", 0, CT_ERR_INVALID_WORKLOAD, "workload #1", "object");
  /* Names: strings, not empty. */
  EXPECT_BAD_SET("[" E("") ", " E(", \"name\": 5") "]", 0, CT_ERR_INVALID_WORKLOAD, "#2", "'name'");
  EXPECT_BAD_SET("[" E(", \"name\": \"\"") "]", 0, CT_ERR_INVALID_WORKLOAD, "#1", "'name'");
  EXPECT_BAD_SET(E(", \"name\": null"), 0, CT_ERR_INVALID_WORKLOAD, "'name'", NULL);
  /* A single object's error names the field (8 channels in 3 groups). */
  EXPECT_BAD_SET(E(", \"groups\": 3"), 0, CT_ERR_INVALID_WORKLOAD, "test.json", "groups");
}
END_TEST

START_TEST(parse_rejects_duplicate_names) {
  EXPECT_BAD_SET(
      "[" E(", \"name\": \"a\"") ", " E(", \"name\": \"b\"") ", " EK(8, 4, ", \"name\": \"a\"") "]",
      0, CT_ERR_INVALID_WORKLOAD, "'a'", "unique");
  EXPECT_BAD_SET(
      "[" E(", \"name\": \"a\"") ", " E(", \"name\": \"b\"") ", " EK(8, 4, ", \"name\": \"a\"") "]",
      0, CT_ERR_INVALID_WORKLOAD, "#3", "#1");
  /* Same workload, different names: fine. */
  wlset *s = PARSE_OK("[" E(", \"name\": \"a\"") ", " E(", \"name\": \"b\"") "]", "t", 0);
  ck_assert_int_eq(s->n_items, 2);
  wlset_free(s);
}
END_TEST

/* err's message keeps its reason within CT_ERRMSG_MAX and quotes at most a
 * short excerpt of a long input: no run of CT_EXCERPT_BYTES + 1 'x' (issue
 * 33, defect 7). */
static void expect_short_message_at(int line, const ct_err *err, const char *reason) {
  ck_assert_msg(strstr(err->msg, reason), "line %d: message '%s' lost its reason '%s'", line,
                err->msg, reason);
  ck_assert_msg(strlen(err->msg) < CT_ERRMSG_MAX - 1, "line %d: message cut: '%s'", line, err->msg);
  char run[CT_EXCERPT_BYTES + 2];
  memset(run, 'x', sizeof run - 1);
  run[sizeof run - 1] = '\0';
  ck_assert_msg(!strstr(err->msg, run), "line %d: message quotes too much: '%s'", line, err->msg);
}
#define EXPECT_SHORT_MESSAGE(err, reason) expect_short_message_at(__LINE__, (err), (reason))

START_TEST(long_inputs_keep_the_reason) {
  enum { LONG = 2000 };
  char *big = malloc(LONG + 1), *text = malloc(3 * LONG);
  ck_assert_ptr_nonnull(big);
  ck_assert_ptr_nonnull(text);
  memset(big, 'x', LONG);
  big[LONG] = '\0';
  wlset *s = NULL;
  ct_err err = {0};
  /* a long origin (a file name) and bad JSON */
  ck_assert_int_eq(wlset_parse("[{", big, 0, &s, &err), CT_ERR_PARSE);
  EXPECT_SHORT_MESSAGE(&err, "bad JSON: syntax error at line 1");
  /* a long name given twice */
  snprintf(text, 3 * LONG, "[" E(", \"name\": \"%s\"") ", " E(", \"name\": \"%s\"") "]", big, big);
  ck_assert_int_eq(wlset_parse(text, "t.json", 0, &s, &err), CT_ERR_INVALID_WORKLOAD);
  EXPECT_SHORT_MESSAGE(&err, "is already used by workload #1; names must be unique");
  ck_assert_msg(strstr(err.msg, "xxx...'"), "no ellipsis: '%s'", err.msg);
  /* a long name, with an escape byte, on an entry with a bad field */
  snprintf(text, 3 * LONG, "[" E(", \"name\": \"\\u001b%s\", \"groups\": 3") "]", big);
  ck_assert_int_eq(wlset_parse(text, "t.json", 0, &s, &err), CT_ERR_INVALID_WORKLOAD);
  EXPECT_SHORT_MESSAGE(&err, "groups");
  ck_assert_msg(strstr(err.msg, "#1 (\\x1bxxx"), "name not escaped: '%s'", err.msg);
  /* a long set name */
  ck_assert_int_eq(wlset_load_named(big, 1, &s, &err), CT_ERR_NOT_FOUND);
  EXPECT_SHORT_MESSAGE(&err, "c3d");
  /* a long file name that does not exist */
  snprintf(text, 3 * LONG, "/nonexistent/%s", big);
  ck_assert_int_eq(wlset_load_file(text, 0, &s, &err), CT_ERR_NOT_FOUND);
  EXPECT_SHORT_MESSAGE(&err, "No such file");
  ck_assert_ptr_null(s);
  free(big);
  free(text);
}
END_TEST

START_TEST(parse_rejects_bad_shapes_of_text) {
  EXPECT_BAD_SET("[]", 0, CT_ERR_INVALID_WORKLOAD, "empty", "test.json");
  EXPECT_BAD_SET("[ ]", 4, CT_ERR_INVALID_WORKLOAD, "empty", NULL);
  EXPECT_BAD_SET("42", 0, CT_ERR_PARSE, "list", "test.json");
  EXPECT_BAD_SET("\"resnet50\"", 0, CT_ERR_PARSE, "list", NULL);
  EXPECT_BAD_SET("null", 0, CT_ERR_PARSE, "list", NULL);
  EXPECT_BAD_SET("true", 0, CT_ERR_PARSE, "list", NULL);
  /* JSON syntax errors say where. */
  EXPECT_BAD_SET("[" E("") ",\n" E("") ",,\n]", 0, CT_ERR_PARSE, "line 2", "column");
  EXPECT_BAD_SET("[" E(""), 0, CT_ERR_PARSE, "test.json", "line 1");
  EXPECT_BAD_SET("", 0, CT_ERR_PARSE, "line", "column");
  EXPECT_BAD_SET("[" E("") "] []", 0, CT_ERR_PARSE, "line", "column");
  /* Arguments. */
  wlset *s = NULL;
  ct_err err = {0};
  EXPECT_ERR(wlset_parse(NULL, "x", 0, &s, &err), CT_ERR_INVALID_ARG, &err, "NULL text", "NULL",
             NULL);
  EXPECT_ERR(wlset_parse(E(""), NULL, 0, &s, &err), CT_ERR_INVALID_ARG, &err, "NULL origin", "NULL",
             NULL);
  EXPECT_ERR(wlset_parse(E(""), "x", 0, NULL, &err), CT_ERR_INVALID_ARG, &err, "NULL out", "NULL",
             NULL);
  EXPECT_ERR(wlset_parse(E(""), "x", -2, &s, &err), CT_ERR_INVALID_ARG, &err, "batch -2", "batch",
             NULL);
  ck_assert_ptr_null(s);
  wlset_free(NULL);
}
END_TEST

START_TEST(parse_batch_overrides_every_n) {
  const char *text = "[" E(", \"name\": \"a\", \"n\": 4") ", " E(", \"name\": \"b\"") "]";
  wlset *s = PARSE_OK(text, "t", 0);
  ck_assert_int_eq(s->items[0].w.n, 4);
  ck_assert_int_eq(s->items[1].w.n, 1);
  wlset_free(s);
  s = PARSE_OK(text, "t", 32);
  ck_assert_int_eq(s->items[0].w.n, 32);
  ck_assert_int_eq(s->items[1].w.n, 32);
  wlset_free(s);
  /* The batch replaces even an entry's own invalid n. */
  s = PARSE_OK("[" E(", \"n\": 0") "]", "t", 2);
  ck_assert_int_eq(s->items[0].w.n, 2);
  wlset_free(s);
  /* Names are untouched by the override. */
  s = PARSE_OK(E(", \"name\": \"z\", \"n\": 9"), "t", 5);
  ck_assert_str_eq(s->items[0].name, "z");
  ck_assert_int_eq(s->items[0].w.n, 5);
  wlset_free(s);
}
END_TEST

START_TEST(parse_batch_checked_against_int32) {
  /* 64 x 1024 x 1024 = 2^26 elements per image: 31 images fit, 32 do not. */
  const char *text = "[" E(
      ", \"name\": \"small\"") ", {\"name\": \"big\", \"op\": \"conv2d\", "
                               "\"c\": 64, \"k\": 8, \"h\": 1024, \"w\": 1024, \"kernel\": 1}]";
  wlset *s = PARSE_OK(text, "t", 31);
  ck_assert_int_eq(s->items[1].w.n, 31);
  wlset_free(s);
  EXPECT_BAD_SET(text, 32, CT_ERR_INVALID_WORKLOAD, "workload #2 (big)", "int32");
  /* The embedded ResNet-50 at an absurd batch: the largest tensor is
   * 802816 elements per image (conv1's output, 64 x 112 x 112, the first
   * entry), so batch 2674 fits int32 and 2675 does not. */
  s = load_named_ok("resnet50", 2674);
  wlset_free(s);
  s = NULL;
  ct_err err = {0};
  ct_status st = wlset_load_named("resnet50", 2675, &s, &err);
  EXPECT_ERR(st, CT_ERR_INVALID_WORKLOAD, &err, "resnet50 batch 2675", "workload #1 (conv1)",
             "int32");
  ck_assert_ptr_null(s);
}
END_TEST

/* ---- files ----------------------------------------------------------------- */

/* Write size bytes of data to dir/name; the path goes to path. */
static void write_file(const char *dir, const char *name, const char *data, size_t size, char *path,
                       size_t path_size) {
  snprintf(path, path_size, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot create %s", path);
  ck_assert_uint_eq(fwrite(data, 1, size, f), size);
  ck_assert_int_eq(fclose(f), 0);
}

START_TEST(load_file_good_and_bad) {
  char dir[512], path[1024];
  scratch(dir, sizeof dir);
  const char *good = "[\n  " E(", \"name\": \"a\"") ",\n  " EK(8, 12, ", \"name\": \"b\"") "\n]\n";
  write_file(dir, "mine.json", good, strlen(good), path, sizeof path);
  wlset *s = NULL;
  ct_err err = {0};
  ck_assert_int_eq(wlset_load_file(path, 3, &s, &err), CT_OK);
  ck_assert_str_eq(s->name, "mine");
  ck_assert_int_eq(s->n_items, 2);
  ck_assert_str_eq(s->items[0].name, "a");
  ck_assert_str_eq(s->items[1].name, "b");
  ck_assert_int_eq(s->items[1].w.k, 12);
  ck_assert_int_eq(s->items[0].w.n, 3);
  wlset_free(s);
  ck_assert_int_eq(unlink(path), 0);

  /* Without ".json" the whole base name is the set's name. */
  write_file(dir, "plain", good, strlen(good), path, sizeof path);
  s = NULL;
  ck_assert_int_eq(wlset_load_file(path, 0, &s, &err), CT_OK);
  ck_assert_str_eq(s->name, "plain");
  wlset_free(s);
  ck_assert_int_eq(unlink(path), 0);

  /* Bad JSON: the path, line and column. */
  const char *bad = "[\n  " E("") ",\n  {\"op\": \"conv2d\" \"c\": 8}\n]\n";
  write_file(dir, "bad.json", bad, strlen(bad), path, sizeof path);
  s = NULL;
  EXPECT_ERR(wlset_load_file(path, 0, &s, &err), CT_ERR_PARSE, &err, "bad JSON", path, "line 3");
  ck_assert_ptr_null(s);
  ck_assert_int_eq(unlink(path), 0);

  /* A bad entry: the path, the entry and the field. */
  const char *bad_entry = "[" E(", \"name\": \"a\"") ", " EK(0, 8, ", \"name\": \"b\"") "]";
  write_file(dir, "entry.json", bad_entry, strlen(bad_entry), path, sizeof path);
  EXPECT_ERR(wlset_load_file(path, 0, &s, &err), CT_ERR_INVALID_WORKLOAD, &err, "bad entry",
             "workload #2 (b)", "'c'");
  ck_assert_ptr_null(s);
  ck_assert_int_eq(unlink(path), 0);

  /* Empty file, and a NUL byte inside the text. */
  write_file(dir, "empty.json", "", 0, path, sizeof path);
  EXPECT_ERR(wlset_load_file(path, 0, &s, &err), CT_ERR_PARSE, &err, "empty file", path, NULL);
  ck_assert_int_eq(unlink(path), 0);
  const char nul[] = "[" E("") "]\0garbage";
  write_file(dir, "nul.json", nul, sizeof nul - 1, path, sizeof path);
  EXPECT_ERR(wlset_load_file(path, 0, &s, &err), CT_ERR_PARSE, &err, "NUL byte", path, "NUL");
  ck_assert_ptr_null(s);
  ck_assert_int_eq(unlink(path), 0);

  /* Missing file: not found, with the path. A directory cannot be read. */
  snprintf(path, sizeof path, "%s/missing.json", dir);
  EXPECT_ERR(wlset_load_file(path, 0, &s, &err), CT_ERR_NOT_FOUND, &err, "missing", path, NULL);
  ck_assert_ptr_null(s);
  EXPECT_ERR(wlset_load_file(dir, 0, &s, &err), CT_ERR_IO, &err, "directory", dir, NULL);
  ck_assert_ptr_null(s);
  EXPECT_ERR(wlset_load_file(NULL, 0, &s, &err), CT_ERR_INVALID_ARG, &err, "NULL path", "NULL",
             NULL);
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(load_file_from_mkstemp) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  char path[512];
  snprintf(path, sizeof path, "%s/ct_test_wlset_XXXXXX", base);
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  const char *text = E(", \"name\": \"solo\"");
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  ck_assert_int_eq(close(fd), 0);
  wlset *s = NULL;
  ct_err err = {0};
  ct_status st = wlset_load_file(path, 1, &s, &err);
  unlink(path);
  ck_assert_msg(st == CT_OK, "%s: %s", path, err.msg);
  ck_assert_str_eq(s->name, strrchr(path, '/') + 1);
  ck_assert_int_eq(s->n_items, 1);
  ck_assert_str_eq(s->items[0].name, "solo");
  wlset_free(s);
}
END_TEST

START_TEST(load_file_larger_than_read_buffer) {
  /* About 100 kB, so the reader has to grow its buffer several times. */
  enum { N = 1000 };
  size_t cap = (size_t)N * 160 + 16, len = 0;
  char *text = malloc(cap);
  ck_assert_ptr_nonnull(text);
  len += (size_t)snprintf(text + len, cap - len, "[\n");
  for (int i = 0; i < N; i++)
    len += (size_t)snprintf(text + len, cap - len,
                            "%s  {\"name\": \"layer_%04d\", \"op\": \"conv2d\", \"c\": %d, "
                            "\"k\": 4, \"h\": 9, \"w\": 9, \"kernel\": 3, \"pad\": 1}",
                            i ? ",\n" : "", i, i + 1);
  len += (size_t)snprintf(text + len, cap - len, "\n]\n");
  ck_assert_uint_gt(len, 64 * 1024);
  char dir[512], path[1024];
  scratch(dir, sizeof dir);
  write_file(dir, "big.json", text, len, path, sizeof path);
  free(text);
  wlset *s = NULL;
  ct_err err = {0};
  ct_status st = wlset_load_file(path, 0, &s, &err);
  unlink(path);
  rmdir(dir);
  ck_assert_msg(st == CT_OK, "%s", err.msg);
  ck_assert_int_eq(s->n_items, N);
  for (int i = 0; i < N; i++) {
    char want[16];
    snprintf(want, sizeof want, "layer_%04d", i);
    if (strcmp(s->items[i].name, want) || s->items[i].w.c != i + 1)
      ck_abort_msg("item %d: name %s c %d", i, s->items[i].name, s->items[i].w.c);
  }
  wlset_free(s);
}
END_TEST

/* The shipped files, loaded by path, give the embedded sets' names and keys. */
START_TEST(shipped_files_match_embedded) {
  const char *src = getenv("CT_SOURCE_DIR");
  if (!src || !*src) {
    fprintf(stderr, "test_wlset: CT_SOURCE_DIR is not set; shipped files not checked\n");
    return;
  }
  const char *names[] = {"resnet50",    "resnet18",    "resnet3d18",
                         "c3d",         "mobilenetv2", "efficientnet_b0_dw",
                         "resnext50_g", "csn_dw3d",    "resnext3d_g"};
  for (int k = 0; k < COUNT(names); k++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/scripts/workloads/%s.json", src, names[k]);
    wlset *f = NULL;
    ct_err err = {0};
    ct_status st = wlset_load_file(path, 16, &f, &err);
    ck_assert_msg(st == CT_OK, "%s: %s", path, err.msg);
    wlset *e = load_named_ok(names[k], 16);
    ck_assert_str_eq(f->name, names[k]);
    ck_assert_int_eq(f->n_items, e->n_items);
    for (int i = 0; i < e->n_items; i++) {
      char a[CT_KEY_MAX], b[CT_KEY_MAX];
      workload_key(&f->items[i].w, a, sizeof a);
      workload_key(&e->items[i].w, b, sizeof b);
      if (strcmp(a, b) || strcmp(f->items[i].name, e->items[i].name))
        ck_abort_msg("%s item %d: file %s %s, embedded %s %s", names[k], i + 1, f->items[i].name, a,
                     e->items[i].name, b);
    }
    wlset_free(f);
    wlset_free(e);
  }
}
END_TEST

static void add_embedded(TCase *tc) {
  tcase_add_test(tc, resnet50_embedded);
  tcase_add_test(tc, resnet18_embedded);
  tcase_add_test(tc, resnet3d18_embedded);
  tcase_add_test(tc, c3d_embedded);
  tcase_add_test(tc, grouped_sets_embedded);
  tcase_add_test(tc, batch_zero_keeps_entry_n);
  tcase_add_test(tc, unknown_set_not_found);
  tcase_add_test(tc, names_lists_every_set);
}

static void add_parse(TCase *tc) {
  tcase_add_test(tc, parse_single_object_is_set_of_one);
  tcase_add_test(tc, parse_list_names_unnamed_entries);
  tcase_add_test(tc, parse_errors_name_entry_and_field);
  tcase_add_test(tc, parse_rejects_duplicate_names);
  tcase_add_test(tc, long_inputs_keep_the_reason);
  tcase_add_test(tc, parse_rejects_bad_shapes_of_text);
  tcase_add_test(tc, parse_batch_overrides_every_n);
  tcase_add_test(tc, parse_batch_checked_against_int32);
}

static void add_file(TCase *tc) {
  tcase_add_test(tc, load_file_good_and_bad);
  tcase_add_test(tc, load_file_from_mkstemp);
  tcase_add_test(tc, load_file_larger_than_read_buffer);
  tcase_add_test(tc, shipped_files_match_embedded);
}

static const test_case suite_cases[] = {
    {"embedded", -1, add_embedded},
    {"parse", -1, add_parse},
    {"file", -1, add_file},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"wlset", suite_cases, 0, NULL};
  return test_main(&suite);
}
