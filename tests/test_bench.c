/*
 * test_bench.c: the CPU side of the benchmark (bench/): the roofline floor
 * on known numbers and on ResNet-50 (where the GPU notes quote the sum:
 * 106 us at batch 16 with int32 output, 62 us with int8), the median and
 * sums with nulls, the device-name slug and results path, the JSON, CSV and
 * Markdown writers on synthetic results, and the peak kernels compiling
 * with NVRTC for sm_90 (no GPU needed). Without a GPU, bench_run must say
 * so and do nothing. The layout of convtune's side (--layout): its names,
 * the nhwc layer's key, and the layout stated by the results path, JSON,
 * CSV and Markdown. (Charts: scripts/plot_bench, tests/test_plot_bench.sh.)
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "core/arch.h"
#include "gpu/nvrtc.h"
#include "tests/util.h"

static const bench_peaks h200 = {130.0, 1267.0, 4.3};

START_TEST(floor_known_numbers) {
  /* 1267e6 ops take 1 us at 1267 TOPS; 4.3e6 bytes take 1 us at 4.3 TB/s */
  ck_assert_double_eq_tol(bench_floor_us(1267e6, 4.3e6, &h200), 1.0, 1e-12);
  ck_assert_double_eq_tol(bench_floor_us(2 * 1267e6, 4.3e6, &h200), 2.0, 1e-12); /* compute */
  ck_assert_double_eq_tol(bench_floor_us(1267e6, 3 * 4.3e6, &h200), 3.0, 1e-12); /* memory */
  bench_peaks none = {130.0, 0, 4.3};
  ck_assert(!bench_has(bench_floor_us(1e9, 1e6, &none)));
}
END_TEST

START_TEST(conv_bytes_real_channels) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.n = 2, w.c = 3, w.k = 8, w.in[0] = w.in[1] = 10, w.kernel[0] = w.kernel[1] = 3;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 1;
  /* data 2*3*100, weights 8*3*9, output 2*8*100 int32 */
  ck_assert_double_eq(bench_conv_bytes(&w, 4), 600 + 216 + 6400);
  ck_assert_double_eq(bench_conv_bytes(&w, 1), 600 + 216 + 1600);
  bench_layer l;
  bench_layer_init(&l, "stem", &w, CT_LAYOUT_NCHW4C, &h200);
  ck_assert_int_eq(l.padded, 1);
  ck_assert_ptr_nonnull(strstr(l.key, "-c4-"));
  ck_assert_ptr_nonnull(strstr(l.key, "nchw4c"));
  ck_assert_double_eq(l.ops, 2.0 * 2 * 8 * 100 * 3 * 9);
  ck_assert_double_eq(l.bytes, 7216);
  for (int f = BENCH_CONVTUNE; f < BENCH_N_FIELDS; f++) ck_assert(!bench_has(l.t[f]));
  ck_assert(bench_has(l.t[BENCH_FLOOR]));
}
END_TEST

START_TEST(layout_names) {
  static const struct {
    const char *name;
    ct_layout layout;
  } ok[] = {{"nchw4c", CT_LAYOUT_NCHW4C},
            {"ncdhw4c", CT_LAYOUT_NCHW4C},
            {"nhwc", CT_LAYOUT_NHWC},
            {"ndhwc", CT_LAYOUT_NHWC}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    ct_layout l = CT_LAYOUT_NCHW;
    ck_assert_int_eq(bench_layout_from_name(ok[i].name, &l, NULL), CT_OK);
    ck_assert_int_eq(l, ok[i].layout);
  }
  /* plain nchw is not a side of its own (nchw4c measures it), nor are other spellings */
  static const char *const bad[] = {"nchw", "NHWC", "nhwc4c", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ct_err err = {0};
    ct_layout l = CT_LAYOUT_NHWC;
    ck_assert_int_eq(bench_layout_from_name(bad[i], &l, &err), CT_ERR_INVALID_ARG);
    ck_assert_int_eq(l, CT_LAYOUT_NHWC); /* untouched */
    ck_assert_ptr_nonnull(strstr(err.msg, "nchw4c"));
    ck_assert_ptr_nonnull(strstr(err.msg, "nhwc"));
  }
  ck_assert_int_eq(bench_layout_from_name(NULL, &(ct_layout){0}, NULL), CT_ERR_INVALID_ARG);
  ck_assert_str_eq(bench_layout_name(CT_LAYOUT_NHWC), "nhwc");
  ck_assert_str_eq(bench_layout_name(CT_LAYOUT_NCHW4C), "nchw4c");
  ck_assert_str_eq(bench_layout_name(CT_LAYOUT_NCHW), "nchw4c"); /* a zeroed result */
  bench_opts o;
  bench_opts_default(&o);
  ck_assert_int_eq(o.layout, CT_LAYOUT_NCHW4C);
}
END_TEST

/* In nhwc the key is the unpadded channels-last workload convtune runs;
 * padded still says that cuDNN int8 pads the stem; the rest is as packed. */
START_TEST(nhwc_layer_key) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.n = 2, w.c = 3, w.k = 8, w.in[0] = w.in[1] = 10, w.kernel[0] = w.kernel[1] = 3;
  bench_layer p, l;
  bench_layer_init(&p, "stem", &w, CT_LAYOUT_NCHW4C, &h200);
  bench_layer_init(&l, "stem", &w, CT_LAYOUT_NHWC, &h200);
  ck_assert_ptr_nonnull(strstr(l.key, "conv2d-nhwc-"));
  ck_assert_ptr_nonnull(strstr(l.key, "-c3-k8-"));
  ct_workload back;
  ck_assert_int_eq(workload_from_key(l.key, &back, NULL), CT_OK);
  ck_assert_int_eq(back.layout, CT_LAYOUT_NHWC);
  ck_assert_int_eq(back.c, 3);
  ck_assert_int_eq(l.w.layout, CT_LAYOUT_NCHW); /* cuDNN's side takes the plain workload */
  ck_assert_int_eq(l.padded, 1);
  ck_assert_double_eq(l.ops, p.ops);
  ck_assert_double_eq(l.bytes, p.bytes);
  ck_assert_double_eq(l.t[BENCH_FLOOR], p.t[BENCH_FLOOR]);
  /* conv3d: ndhwc */
  workload_init(&w, CT_OP_CONV3D);
  w.c = 64, w.k = 64, w.in[0] = 4, w.in[1] = w.in[2] = 8;
  w.kernel[0] = w.kernel[1] = w.kernel[2] = 3;
  bench_layer_init(&l, "3d", &w, CT_LAYOUT_NHWC, &h200);
  ck_assert_ptr_nonnull(strstr(l.key, "conv3d-ndhwc-"));
  ck_assert_int_eq(l.padded, 0);
}
END_TEST

/* The sums the GPU notes quote for ResNet-50 come out of the same formula. */
START_TEST(floor_resnet50_matches_notes) {
  wlset *s = NULL;
  ct_err err = {0};
  ck_assert_int_eq(wlset_load_named("resnet50", 16, &s, &err), CT_OK);
  double sum32 = 0, sum8 = 0;
  for (int i = 0; i < s->n_items; i++) {
    bench_layer l;
    bench_layer_init(&l, s->items[i].name, &s->items[i].w, CT_LAYOUT_NCHW4C, &h200);
    sum32 += l.t[BENCH_FLOOR];
    sum8 += bench_floor_us(l.ops, bench_conv_bytes(&l.w, 1), &h200);
  }
  ck_assert_double_eq_tol(sum32, 106.0, 0.1);
  ck_assert_double_eq_tol(sum8, 61.3, 0.1);
  wlset_free(s);
}
END_TEST

START_TEST(median_and_sums) {
  double a[] = {3, 1, 2};
  ck_assert_double_eq(bench_median(a, 3), 2);
  double b[] = {4, 1, 3, 2};
  ck_assert_double_eq(bench_median(b, 4), 2.5);
  double c[] = {7};
  ck_assert_double_eq(bench_median(c, 1), 7);
  ck_assert(!bench_has(bench_median(c, 0)));

  bench_layer layers[3];
  bench_result r = {.n_layers = 3, .layers = layers};
  for (int i = 0; i < 3; i++)
    for (int f = 0; f < BENCH_N_FIELDS; f++) layers[i].t[f] = BENCH_NONE;
  layers[0].t[BENCH_CONVTUNE] = 1.5;
  layers[2].t[BENCH_CONVTUNE] = 2.25;
  int n_null = -1;
  ck_assert_double_eq(bench_sum(&r, BENCH_CONVTUNE, &n_null), 3.75);
  ck_assert_int_eq(n_null, 1);
  ck_assert(!bench_has(bench_sum(&r, BENCH_CUDNN_INT8X32, &n_null)));
  ck_assert_int_eq(n_null, 3);
}
END_TEST

START_TEST(slug_and_path) {
  char buf[64];
  ck_assert_str_eq(bench_slug("NVIDIA H200", buf, sizeof buf), "h200");
  ck_assert_str_eq(bench_slug("NVIDIA H200 NVL", buf, sizeof buf), "h200-nvl");
  ck_assert_str_eq(bench_slug("NVIDIA GeForce RTX 4090", buf, sizeof buf), "geforce-rtx-4090");
  ck_assert_str_eq(bench_slug("Tesla V100-SXM2-16GB", buf, sizeof buf), "tesla-v100-sxm2-16gb");
  ck_assert_str_eq(bench_slug("  --", buf, sizeof buf), "unknown");
  ck_assert_str_eq(bench_slug("NVIDIA", buf, sizeof buf), "nvidia");
  ck_assert_str_eq(bench_slug("NVIDIA H200", buf, 4), "h20");
  bench_result r = {.batch = 16};
  snprintf(r.device, sizeof r.device, "NVIDIA H200");
  snprintf(r.set, sizeof r.set, "resnet50");
  char path[256];
  ck_assert_str_eq(bench_results_path(&r, "bench/results", path, sizeof path),
                   "bench/results/h200-resnet50-b16.json");
  ck_assert_str_eq(bench_results_path(&r, "out/", path, sizeof path), "out/h200-resnet50-b16.json");
  /* the nhwc run keeps its own file beside the nchw4c one */
  r.layout = CT_LAYOUT_NHWC;
  ck_assert_str_eq(bench_results_path(&r, "bench/results", path, sizeof path),
                   "bench/results/h200-resnet50-b16-nhwc.json");
}
END_TEST

/* Two layers: a padded stem that cuDNN int8x32 cannot run, and a layer
 * without a convtune time. */
static void synthetic(bench_result *r, bench_layer *layers) {
  memset(r, 0, sizeof *r);
  snprintf(r->device, sizeof r->device, "NVIDIA H200");
  snprintf(r->arch, sizeof r->arch, "sm_90");
  r->sm_count = 132;
  snprintf(r->commit, sizeof r->commit, "abc1234");
  snprintf(r->command, sizeof r->command, "convtune bench --set resnet50 --batch 16");
  snprintf(r->date, sizeof r->date, "2025-01-01T00:00:00Z");
  snprintf(r->set, sizeof r->set, "resnet50");
  r->batch = 16;
  r->repeats = 7;
  r->peaks = h200;
  r->n_layers = 2;
  r->layers = layers;
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.n = 16, w.c = 3, w.k = 64, w.in[0] = w.in[1] = 224, w.kernel[0] = w.kernel[1] = 7;
  w.stride[0] = w.stride[1] = 2;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 3;
  bench_layer_init(&layers[0], "conv1", &w, CT_LAYOUT_NCHW4C, &h200);
  layers[0].t[BENCH_CONVTUNE] = 40.0;
  layers[0].t[BENCH_PACK] = 12.5;
  layers[0].t[BENCH_CUDNN_INT8] = 400.0;
  layers[0].t[BENCH_CUDNN_FP16] = 50.0;
  snprintf(layers[0].note[BENCH_CUDNN_INT8X32], sizeof layers[0].note[0],
           "INT8x32 needs C and K multiples of 32 (C 4, K 64)");
  snprintf(layers[0].source, sizeof layers[0].source, "exact, conv2d_nchw4c_dp4a");
  snprintf(layers[0].algo[0], sizeof layers[0].algo[0], "IMPLICIT_PRECOMP_GEMM, tensor op");
  w.c = 64, w.in[0] = w.in[1] = 56, w.kernel[0] = w.kernel[1] = 3, w.stride[0] = w.stride[1] = 1;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 1;
  bench_layer_init(&layers[1], "l1_3x3_64", &w, CT_LAYOUT_NCHW4C, &h200);
  layers[1].t[BENCH_CUDNN_INT8] = 100.0;
  layers[1].t[BENCH_CUDNN_INT8X32] = 60.0;
  layers[1].t[BENCH_CUDNN_FP16] = 10.0;
}

START_TEST(json_with_nulls) {
  bench_layer layers[2];
  bench_result r;
  synthetic(&r, layers);
  char dir[] = "/tmp/test_bench.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/a/b/%s", dir, "h200-resnet50-b16.json");
  ct_err err = {0};
  ck_assert_int_eq(bench_write_json(&r, path, &err), CT_OK); /* parents created */
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char text[65536];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  cJSON *o = cJSON_Parse(text);
  ck_assert_ptr_nonnull(o);
  static const char *const top[] = {"device", "commit", "command", "date", "set",
                                    "batch",  "peaks",  "layers",  "sum"};
  for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
    ck_assert_msg(cJSON_GetObjectItemCaseSensitive(o, top[i]), "missing %s", top[i]);
  ck_assert_str_eq(cJSON_GetObjectItem(o, "device")->valuestring, "NVIDIA H200");
  ck_assert_str_eq(cJSON_GetObjectItem(o, "commit")->valuestring, "abc1234");
  ck_assert_str_eq(cJSON_GetObjectItem(o, "layout")->valuestring, "nchw4c");
  ck_assert_int_eq(cJSON_GetObjectItem(o, "batch")->valueint, 16);
  cJSON *pk = cJSON_GetObjectItem(o, "peaks");
  ck_assert_double_eq(cJSON_GetObjectItem(pk, "dp4a_tops")->valuedouble, 130.0);
  ck_assert_double_eq(cJSON_GetObjectItem(pk, "mma_int8_tops")->valuedouble, 1267.0);
  ck_assert_double_eq(cJSON_GetObjectItem(pk, "copy_tbs")->valuedouble, 4.3);
  cJSON *ls = cJSON_GetObjectItem(o, "layers");
  ck_assert_int_eq(cJSON_GetArraySize(ls), 2);
  static const char *const fields[] = {
      "name",           "key",           "floor_us",         "convtune_us",
      "convtune_i8_us", "cudnn_int8_us", "cudnn_int8x32_us", "cudnn_fp16_us",
      "pack_us"};
  for (int i = 0; i < 2; i++)
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
      ck_assert_msg(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ls, i), fields[k]),
                    "layer %d lacks %s", i, fields[k]);
  cJSON *l0 = cJSON_GetArrayItem(ls, 0), *l1 = cJSON_GetArrayItem(ls, 1);
  ck_assert_str_eq(cJSON_GetObjectItem(l0, "name")->valuestring, "conv1");
  ck_assert_double_eq(cJSON_GetObjectItem(l0, "convtune_us")->valuedouble, 40.0);
  ck_assert_double_eq(cJSON_GetObjectItem(l0, "pack_us")->valuedouble, 12.5);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(l0, "convtune_i8_us")));
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(l0, "cudnn_int8x32_us")));
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(l1, "convtune_us")));
  ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(l1, "floor_us")));
  ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(l0, "padded_to_4_channels")));
  cJSON *sum = cJSON_GetObjectItem(o, "sum");
  ck_assert_double_eq(cJSON_GetObjectItem(sum, "convtune_us")->valuedouble, 40.0);
  ck_assert_double_eq(cJSON_GetObjectItem(sum, "cudnn_int8_us")->valuedouble, 500.0);
  ck_assert_double_eq(cJSON_GetObjectItem(sum, "cudnn_int8x32_us")->valuedouble, 60.0);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(sum, "convtune_i8_us")));
  cJSON *nn = cJSON_GetObjectItem(sum, "n_null");
  ck_assert_int_eq(cJSON_GetObjectItem(nn, "convtune_us")->valueint, 1);
  ck_assert_int_eq(cJSON_GetObjectItem(nn, "convtune_i8_us")->valueint, 2);
  ck_assert_int_eq(cJSON_GetObjectItem(nn, "cudnn_fp16_us")->valueint, 0);
  cJSON_Delete(o);
  /* an nhwc run says so, and why its pack column is null */
  r.layout = CT_LAYOUT_NHWC;
  layers[0].t[BENCH_PACK] = BENCH_NONE;
  o = bench_to_json(&r);
  ck_assert_ptr_nonnull(o);
  ck_assert_str_eq(cJSON_GetObjectItem(o, "layout")->valuestring, "nhwc");
  ck_assert(cJSON_IsNull(
      cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "layers"), 0), "pack_us")));
  ck_assert_ptr_nonnull(
      strstr(cJSON_GetObjectItem(o, "method")->valuestring, "null in layout nhwc"));
  cJSON_Delete(o);
  /* an unwritable path is an I/O error naming it */
  err = (ct_err){0};
  ck_assert_int_eq(bench_write_json(&r, "/proc/nonexistent/x.json", &err), CT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err.msg, "/proc/nonexistent"));
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Split one CSV line into fields (quotes respected); returns the count. */
static int csv_fields(const char *line, char fields[][128], int max) {
  int n = 0, len = 0, quoted = 0;
  fields[0][0] = '\0';
  for (const char *p = line; *p && *p != '\n'; p++) {
    if (quoted) {
      if (*p == '"' && p[1] == '"') {
        if (len < 127) fields[n][len++] = '"';
        p++;
      } else if (*p == '"') {
        quoted = 0;
      } else if (len < 127) {
        fields[n][len++] = *p;
      }
    } else if (*p == '"') {
      quoted = 1;
    } else if (*p == ',') {
      fields[n][len] = '\0';
      if (++n >= max) return n;
      len = 0;
    } else if (len < 127) {
      fields[n][len++] = *p;
    }
  }
  fields[n][len] = '\0';
  return n + 1;
}

START_TEST(csv_with_nulls) {
  bench_layer layers[2];
  bench_result r;
  synthetic(&r, layers);
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  bench_write_csv(&r, f);
  rewind(f);
  char line[4096];
  static char head[64][128], row[64][128];
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  int nh = csv_fields(line, head, 64);
  ck_assert_str_eq(head[0], "name");
  int col_ct = -1, col_x32 = -1, col_src = -1, col_ratio = -1;
  ck_assert_str_eq(head[nh - 1], "layout");
  for (int i = 0; i < nh; i++) {
    if (!strcmp(head[i], "convtune_us")) col_ct = i;
    if (!strcmp(head[i], "cudnn_int8x32_us")) col_x32 = i;
    if (!strcmp(head[i], "source")) col_src = i;
    if (!strcmp(head[i], "ratio_cudnn_fp16")) col_ratio = i;
  }
  ck_assert(col_ct > 0 && col_x32 > 0 && col_src > 0 && col_ratio > 0);
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_int_eq(csv_fields(line, row, 64), nh);
  ck_assert_str_eq(row[0], "conv1");
  ck_assert_str_eq(row[col_ct], "40.000");
  ck_assert_str_eq(row[col_x32], "");
  ck_assert_str_eq(row[col_src], "exact, conv2d_nchw4c_dp4a"); /* quoted: it has a comma */
  ck_assert_str_eq(row[col_ratio], "0.8000");
  ck_assert_str_eq(row[nh - 1], "nchw4c");
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_int_eq(csv_fields(line, row, 64), nh);
  ck_assert_str_eq(row[0], "l1_3x3_64");
  ck_assert_str_eq(row[col_ct], "");
  ck_assert_str_eq(row[col_ratio], "");
  ck_assert_ptr_null(fgets(line, sizeof line, f));
  fclose(f);
  /* the layout column of an nhwc run */
  r.layout = CT_LAYOUT_NHWC;
  f = tmpfile();
  ck_assert_ptr_nonnull(f);
  bench_write_csv(&r, f);
  rewind(f);
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  ck_assert_int_eq(csv_fields(line, row, 64), nh);
  ck_assert_str_eq(row[nh - 1], "nhwc");
  fclose(f);
}
END_TEST

static char *markdown(const bench_result *r) {
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  bench_write_markdown(r, f);
  long n = ftell(f);
  rewind(f);
  char *text = calloc(1, (size_t)n + 1);
  ck_assert_ptr_nonnull(text);
  ck_assert_int_eq(fread(text, 1, (size_t)n, f), n);
  fclose(f);
  return text;
}

START_TEST(markdown_table) {
  bench_layer layers[2];
  bench_result r;
  synthetic(&r, layers);
  char *md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "cuDNN not built in"));
  ck_assert_ptr_nonnull(strstr(md, "batch 16, layout nchw4c\n"));
  ck_assert_ptr_nonnull(strstr(md, "- pack: the plain-NCHW call minus the packed call"));
  ck_assert_ptr_nonnull(strstr(md, "convtune us (int32 out)"));
  ck_assert_ptr_nonnull(strstr(md, "(int8 out)"));
  ck_assert_ptr_nonnull(strstr(md, "(fp16 out)"));
  ck_assert_ptr_nonnull(strstr(md, "| conv1 | padded to 4 channels |"));
  ck_assert_ptr_nonnull(strstr(md, "| l1_3x3_64 | |"));
  ck_assert_ptr_nonnull(strstr(md, "**sum** (2 layers)"));
  ck_assert_ptr_nonnull(strstr(md, "40.00 (1 null)")); /* convtune's sum skips the null */
  ck_assert_ptr_nonnull(strstr(md, "0.80*"));          /* convtune/fp16 over conv1 only */
  ck_assert_ptr_nonnull(strstr(md, "INT8x32 needs C and K multiples of 32"));
  /* every table row has the header's number of cells */
  int header_bars = -1;
  for (char *line = strtok(md, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] != '|') continue;
    int bars = 0;
    for (char *p = line; *p; p++) bars += *p == '|';
    if (header_bars < 0) header_bars = bars;
    ck_assert_int_eq(bars, header_bars);
  }
  free(md);
  r.cudnn_built = 1;
  snprintf(r.cudnn_version, sizeof r.cudnn_version, "9.14.0");
  md = markdown(&r);
  ck_assert_ptr_null(strstr(md, "not built in"));
  ck_assert_ptr_nonnull(strstr(md, "cuDNN 9.14.0"));
  free(md);
  /* nhwc: the title says so, the pack column is explained, the stem's
   * empty convtune cells carry their note, and the table keeps its shape */
  r.layout = CT_LAYOUT_NHWC;
  layers[0].t[BENCH_CONVTUNE] = layers[0].t[BENCH_PACK] = BENCH_NONE;
  snprintf(layers[0].note[BENCH_CONVTUNE], sizeof layers[0].note[0],
           "not run in nhwc: no template runs this workload in layout nhwc");
  md = markdown(&r);
  ck_assert_ptr_nonnull(strstr(md, "batch 16, layout nhwc\n"));
  ck_assert_ptr_nonnull(strstr(md, "- pack: does not apply to layout nhwc"));
  ck_assert_ptr_nonnull(strstr(md, "- layout nhwc: convtune runs channels-last"));
  ck_assert_ptr_nonnull(strstr(md, "conv1, convtune_us: not run in nhwc"));
  header_bars = -1;
  for (char *line = strtok(md, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] != '|') continue;
    int bars = 0;
    for (char *p = line; *p; p++) bars += *p == '|';
    if (header_bars < 0) header_bars = bars;
    ck_assert_int_eq(bars, header_bars);
  }
  free(md);
}
END_TEST

/* CT_COMMIT names the tree when set, whatever the binary or git says;
 * else the binary's build commit; else git (or "unknown"). */
START_TEST(stamp_prefers_ct_commit) {
  bench_result r;
  memset(&r, 0, sizeof r);
  char *argv[] = {"convtune", "bench", "--set", "resnet50"};
  setenv("CT_COMMIT", "abc1234", 1);
  bench_result_stamp(&r, "fed9876", 4, argv);
  ck_assert_str_eq(r.commit, "abc1234");
  ck_assert_str_eq(r.command, "convtune bench --set resnet50");
  unsetenv("CT_COMMIT");
  bench_result_stamp(&r, "fed9876", 4, argv);
  ck_assert_str_eq(r.commit, "fed9876");
  const char *unknown[] = {NULL, "", "unknown"};
  for (int i = 0; i < 3; i++) {
    bench_result_stamp(&r, unknown[i], 4, argv);
    ck_assert_str_ne(r.commit, "fed9876");
    ck_assert(strlen(r.commit) > 0);
  }
}
END_TEST

/* The peak kernels are compiled at run time: check here that they compile
 * for the H200's architecture, without a GPU. */
START_TEST(peak_kernels_compile) {
  arch a;
  ct_err err = {0};
  ck_assert_int_eq(arch_from_name("sm_90", &a, &err), CT_OK);
  static const char *const names[] = {"peak_dp4a", "peak_mma"};
  for (int i = 0; i < 2; i++) {
    cubin cb = {0};
    ct_status st = nvrtc_compile_source(names[i], bench_peaks_source(i), NULL, 0, &a, &cb, &err);
    ck_assert_msg(st == CT_OK, "%s: %s\n%s", names[i], err.msg, cb.log ? cb.log : "");
    ck_assert(cb.size > 0);
    cubin_free(&cb);
  }
}
END_TEST

START_TEST(run_without_gpu) {
  if (device_count() > 0) return; /* the GPU machine: nothing to check here */
  wlset *s = NULL;
  ct_err err = {0};
  ck_assert_int_eq(wlset_load_named("resnet50", 1, &s, &err), CT_OK);
  bench_opts o;
  bench_opts_default(&o);
  o.quiet = 1;
  bench_result r;
  memset(&r, 0, sizeof r);
  ck_assert_int_eq(bench_run(&o, s, &r, &err), CT_ERR_NO_DEVICE);
  ck_assert_ptr_nonnull(strstr(err.msg, "no CUDA device"));
  ck_assert_int_eq(r.n_layers, 0);
  bench_result_free(&r);
  wlset_free(s);
}
END_TEST

static void add_cpu(TCase *tc) {
  tcase_add_test(tc, floor_known_numbers);
  tcase_add_test(tc, layout_names);
  tcase_add_test(tc, nhwc_layer_key);
  tcase_add_test(tc, conv_bytes_real_channels);
  tcase_add_test(tc, floor_resnet50_matches_notes);
  tcase_add_test(tc, median_and_sums);
  tcase_add_test(tc, slug_and_path);
  tcase_add_test(tc, json_with_nulls);
  tcase_add_test(tc, csv_with_nulls);
  tcase_add_test(tc, markdown_table);
  tcase_add_test(tc, stamp_prefers_ct_commit);
  tcase_add_test(tc, peak_kernels_compile);
  tcase_add_test(tc, run_without_gpu);
}

static const test_case suite_cases[] = {
    {"cpu", 60, add_cpu},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"bench", suite_cases, 0, NULL};
  return test_main(&suite);
}
