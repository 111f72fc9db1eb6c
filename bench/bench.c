/*
 * bench.c: the benchmark's run loop, its timing, and its outputs.
 *
 * One process, one run: the peaks first (peaks.c), then per workload
 * convtune's kernel through the public dispatch API (ct_qconv2d /
 * ct_qconv3d, int32 and int8 output) in the run's layout, checked against
 * the CPU reference before it is timed: packed NCHW4c, then the plain-layout
 * call (for the cost of packing); or channels-last NHWC (tensors generated
 * plain from the same random stream and converted on the host, so both runs
 * of a set see the same numbers; no pack column). Then cuDNN's three
 * configs (cudnn_side.c), the same in both runs. Every side goes through
 * bench_time, so launch gaps are never counted for one side and not the
 * other.
 *
 * The check is exact int32 equality on the first and the last image of the
 * batch (the reference of a whole batch-16 set would take minutes; images
 * are independent, so these two catch both a wrong kernel and wrong batch
 * indexing), computed on all cores by splitting the output channels; an
 * NHWC output is converted to NCHW on the host first (pack.h).
 *
 * Cost: about a second of GPU time per layer and side, plus the reference.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "bench/bench.h"
#include "bench/bench_int.h"
#include "bench/cudnn_side.h"
#include "core/outfile.h"
#include "core/pack.h"
#include "core/quant.h"
#include "core/reference.h"
#include "core/rng.h"
#include "gpu/cuda_check.h"

const char *const bench_field_names[BENCH_N_FIELDS] = {
    "floor_us",         "convtune_us",   "convtune_i8_us", "cudnn_int8_us",
    "cudnn_int8x32_us", "cudnn_fp16_us", "pack_us"};

/* What each field's column writes, for the Markdown header. */
static const char *const field_titles[BENCH_N_FIELDS] = {"floor us (int32 out)",
                                                         "convtune us (int32 out)",
                                                         "convtune us (int8 out)",
                                                         "cuDNN int8 NHWC us (int8 out)",
                                                         "cuDNN int8x32 us (int8 out)",
                                                         "cuDNN fp16 NHWC us (fp16 out)",
                                                         "pack us"};

/* ---- roofline, median, sums ---------------------------------------------- */

double bench_floor_us(double ops, double bytes, const bench_peaks *p) {
  if (!(p->mma_int8_tops > 0) || !(p->copy_tbs > 0)) return BENCH_NONE;
  /* TOPS = 1e12 ops/s = 1e6 ops/us; TB/s = 1e6 bytes/us */
  double compute_us = ops / (p->mma_int8_tops * 1e6);
  double memory_us = bytes / (p->copy_tbs * 1e6);
  return compute_us > memory_us ? compute_us : memory_us;
}

double bench_conv_bytes(const ct_workload *w, int out_elem_bytes) {
  ct_workload plain = *w;
  plain.layout = CT_LAYOUT_NCHW; /* real channels, no padding lanes */
  /* the weights of a grouped conv are K x C/G x kernel volume (workload_weight_elems) */
  return (double)workload_data_elems(&plain) + (double)workload_weight_elems(&plain) +
         (double)workload_out_elems(&plain) * out_elem_bytes;
}

/* The floor of l with int8 in and out (the int8-output column's): what the
 * issue judges memory-bound layers (depthwise) against. Derived from l's
 * workload and the run's peaks, so that the layer struct and the results
 * files' existing fields stay as they are. */
static double floor_i8_us(const bench_layer *l, const bench_peaks *p) {
  return bench_floor_us(l->ops, bench_conv_bytes(&l->w, 1), p);
}

/* floor / measured: the share of the floor reached; BENCH_NONE without both. */
static double share_of(double floor_us, double us) {
  return bench_has(floor_us) && bench_has(us) && us > 0 ? floor_us / us : BENCH_NONE;
}

ct_status bench_layout_from_name(const char *name, ct_layout *out, ct_err *err) {
  static const struct {
    const char *name;
    ct_layout layout;
  } names[] = {{"nchw4c", CT_LAYOUT_NCHW4C},
               {"ncdhw4c", CT_LAYOUT_NCHW4C},
               {"nhwc", CT_LAYOUT_NHWC},
               {"ndhwc", CT_LAYOUT_NHWC}};
  for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(name, names[i].name)) {
      *out = names[i].layout;
      return CT_OK;
    }
  return ERR_SET(err, CT_ERR_INVALID_ARG,
                 "layout: expected nchw4c (or ncdhw4c; the default) or nhwc (or ndhwc), got '%s'",
                 name ? name : "(null)");
}

const char *bench_layout_name(ct_layout layout) {
  return workload_layout_name(layout == CT_LAYOUT_NHWC ? CT_LAYOUT_NHWC : CT_LAYOUT_NCHW4C,
                              CT_OP_CONV2D);
}

void bench_layer_init(bench_layer *l, const char *name, const ct_workload *w, ct_layout layout,
                      const bench_peaks *p) {
  memset(l, 0, sizeof *l);
  snprintf(l->name, sizeof l->name, "%s", name);
  l->w = *w;
  l->w.layout = CT_LAYOUT_NCHW;
  ct_workload pw;
  workload_packed(&l->w, &pw);
  /* cuDNN int8 always runs C and K padded to 4; convtune only when packed */
  l->padded = pw.c != l->w.c || pw.k != l->w.k;
  if (layout == CT_LAYOUT_NHWC) {
    pw = l->w;
    pw.layout = CT_LAYOUT_NHWC;
  }
  workload_key(&pw, l->key, sizeof l->key);
  l->ops = (double)workload_ops(&l->w);
  l->bytes = bench_conv_bytes(&l->w, 4);
  for (int f = 0; f < BENCH_N_FIELDS; f++) l->t[f] = BENCH_NONE;
  l->t[BENCH_FLOOR] = bench_floor_us(l->ops, l->bytes, p);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
  if (n <= 0) return BENCH_NONE;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_sum(const bench_result *r, bench_field f, int *n_null) {
  double sum = 0;
  int n = 0, nulls = 0;
  for (int i = 0; i < r->n_layers; i++) {
    if (bench_has(r->layers[i].t[f])) {
      sum += r->layers[i].t[f];
      n++;
    } else {
      nulls++;
    }
  }
  if (n_null) *n_null = nulls;
  return n ? sum : BENCH_NONE;
}

/* Sums of fields a and b over the layers that have both. */
static int pair_sums(const bench_result *r, bench_field a, bench_field b, double *sa, double *sb) {
  int n = 0;
  *sa = *sb = 0;
  for (int i = 0; i < r->n_layers; i++) {
    const bench_layer *l = &r->layers[i];
    if (!bench_has(l->t[a]) || !bench_has(l->t[b])) continue;
    *sa += l->t[a];
    *sb += l->t[b];
    n++;
  }
  return n;
}

/* ---- names, paths, stamps ---------------------------------------------- */

char *bench_slug(const char *name, char *buf, size_t size) {
  char tmp[256];
  size_t n = 0;
  int dash = 0;
  if (!size) return buf;
  for (const char *p = name ? name : ""; *p && n + 2 < sizeof tmp; p++) {
    char c = *p;
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      if (dash && n) tmp[n++] = '-';
      dash = 0;
      tmp[n++] = c;
    } else {
      dash = 1;
    }
  }
  tmp[n] = '\0';
  /* "nvidia-h200" -> "h200": every name of ours starts with the vendor */
  const char *s = !strncmp(tmp, "nvidia-", 7) && tmp[7] ? tmp + 7 : tmp;
  snprintf(buf, size, "%s", *s ? s : "unknown");
  return buf;
}

char *bench_results_file(const char *dir, const char *device_name, const char *name, int batch,
                         const char *suffix, char *buf, size_t size) {
  char dev[128], nm[128];
  bench_slug(device_name, dev, sizeof dev);
  bench_slug(name, nm, sizeof nm);
  snprintf(buf, size, "%s%s%s-%s-b%d%s.json", dir && *dir ? dir : "",
           dir && *dir && dir[strlen(dir) - 1] != '/' ? "/" : "", dev, nm, batch,
           suffix ? suffix : "");
  return buf;
}

char *bench_results_path(const bench_result *r, const char *dir, char *buf, size_t size) {
  return bench_results_file(dir, r->device, r->set, r->batch,
                            r->layout == CT_LAYOUT_NHWC ? "-nhwc" : "", buf, size);
}

/* The first line of a command's output, trailing white space removed; 0 when
 * it failed or printed nothing. */
static int command_line(const char *cmd, char *buf, size_t size) {
  FILE *p = popen(cmd, "r");
  if (!p) return 0;
  int ok = fgets(buf, (int)size, p) != NULL;
  int rc = pclose(p);
  if (!ok || rc != 0) return 0;
  size_t n = strlen(buf);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = '\0';
  return n > 0;
}

void bench_result_stamp(bench_result *r, const char *built, int argc, char **argv) {
  /* the tree measured: CT_COMMIT when the caller names it, else the
   * binary's own commit, else git where it runs (the GPU machine gets a
   * copy whose .git, if any, is not the tree's: git there has named older
   * commits than the binary's) */
  const char *env = getenv("CT_COMMIT");
  if (env && *env)
    snprintf(r->commit, sizeof r->commit, "%s", env);
  else if (built && *built && strcmp(built, "unknown"))
    snprintf(r->commit, sizeof r->commit, "%s", built);
  else if (!command_line("git rev-parse --short HEAD 2>/dev/null", r->commit, sizeof r->commit))
    snprintf(r->commit, sizeof r->commit, "unknown");
  size_t n = 0;
  r->command[0] = '\0';
  for (int i = 0; i < argc && n + 1 < sizeof r->command; i++)
    n += (size_t)snprintf(r->command + n, sizeof r->command - n, "%s%s", i ? " " : "", argv[i]);
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(r->date, sizeof r->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void bench_result_free(bench_result *r) {
  if (!r) return;
  free(r->layers);
  r->layers = NULL;
  r->n_layers = 0;
}

/* ---- JSON ------------------------------------------------------------------- */

/* Times to 1 ns, rates to 3 decimals: the JSON stays readable. */
static double round_to(double v, double unit) {
  return round(v / unit) * unit;
}

void bench_json_time(cJSON *o, const char *name, double us) {
  if (bench_has(us))
    cJSON_AddNumberToObject(o, name, round_to(us, 1e-3));
  else
    cJSON_AddNullToObject(o, name);
}

void bench_json_peaks(cJSON *o, const bench_peaks *p) {
  cJSON *pk = cJSON_AddObjectToObject(o, "peaks");
  if (!pk) return;
  bench_json_time(pk, "dp4a_tops", p->dp4a_tops > 0 ? round_to(p->dp4a_tops, 0.1) : -1);
  bench_json_time(pk, "mma_int8_tops", p->mma_int8_tops > 0 ? round_to(p->mma_int8_tops, 0.1) : -1);
  bench_json_time(pk, "copy_tbs", p->copy_tbs > 0 ? round_to(p->copy_tbs, 0.001) : -1);
}

cJSON *bench_to_json(const bench_result *r) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "device", r->device);
  cJSON_AddStringToObject(o, "commit", r->commit);
  cJSON_AddStringToObject(o, "command", r->command);
  cJSON_AddStringToObject(o, "date", r->date);
  cJSON_AddStringToObject(o, "set", r->set);
  cJSON_AddNumberToObject(o, "batch", r->batch);
  cJSON_AddStringToObject(o, "layout", bench_layout_name(r->layout));
  bench_json_peaks(o, &r->peaks);
  cJSON *layers = cJSON_AddArrayToObject(o, "layers");
  for (int i = 0; layers && i < r->n_layers; i++) {
    const bench_layer *l = &r->layers[i];
    cJSON *lo = cJSON_CreateObject();
    if (!lo) break;
    cJSON_AddItemToArray(layers, lo);
    cJSON_AddStringToObject(lo, "name", l->name);
    cJSON_AddStringToObject(lo, "key", l->key);
    for (int f = 0; f < BENCH_N_FIELDS; f++) bench_json_time(lo, bench_field_names[f], l->t[f]);
    /* the int8-in-and-out floor and the shares of the floors reached
     * (floor / measured, null when not measured) */
    double fl8 = floor_i8_us(l, &r->peaks), sh = share_of(l->t[BENCH_FLOOR], l->t[BENCH_CONVTUNE]),
           sh8 = share_of(fl8, l->t[BENCH_CONVTUNE_I8]);
    bench_json_time(lo, "floor_i8_us", fl8);
    bench_json_time(lo, "share_of_floor", sh); /* to 3 decimals, as the times */
    bench_json_time(lo, "share_of_floor_i8", sh8);
    cJSON_AddNumberToObject(lo, "groups", l->w.groups);
    /* beyond the fields: what a reader of the numbers needs */
    cJSON_AddBoolToObject(lo, "padded_to_4_channels", l->padded);
    cJSON_AddStringToObject(lo, "source", l->source);
    cJSON *algo = cJSON_AddObjectToObject(lo, "cudnn_algo");
    for (int c = 0; algo && c < BENCH_N_CUDNN; c++)
      if (l->algo[c][0])
        cJSON_AddStringToObject(algo, bench_field_names[BENCH_CUDNN_INT8 + c], l->algo[c]);
    cJSON *notes = cJSON_AddObjectToObject(lo, "notes");
    for (int f = 0; notes && f < BENCH_N_FIELDS; f++)
      if (l->note[f][0]) cJSON_AddStringToObject(notes, bench_field_names[f], l->note[f]);
  }
  cJSON *sum = cJSON_AddObjectToObject(o, "sum");
  cJSON *nulls = sum ? cJSON_CreateObject() : NULL;
  for (int f = 0; sum && f < BENCH_N_FIELDS; f++) {
    int n_null;
    bench_json_time(sum, bench_field_names[f], bench_sum(r, (bench_field)f, &n_null));
    if (nulls) cJSON_AddNumberToObject(nulls, bench_field_names[f], n_null);
  }
  if (nulls) cJSON_AddItemToObject(sum, "n_null", nulls);
  cJSON_AddNumberToObject(o, "repeats", r->repeats);
  if (r->cudnn_version[0])
    cJSON_AddStringToObject(o, "cudnn", r->cudnn_version);
  else
    cJSON_AddStringToObject(o, "cudnn", r->cudnn_built ? "not loaded" : "not built in");
  cJSON_AddStringToObject(
      o, "method",
      "per launch: median over replays of a CUDA graph of R launches / R; floor = max(ops / "
      "mma_int8 peak, (int8 data + int8 weights + int32 output bytes) / copy bandwidth); "
      "floor_i8_us the same with an int8 output; share_of_floor = floor_us / convtune_us, "
      "share_of_floor_i8 = floor_i8_us / convtune_i8_us; ops and weights of a grouped layer "
      "count C/groups input channels per output channel; copy "
      "bandwidth counts bytes read + bytes written; pack_us = plain-layout call - packed call "
      "(packs data and unpacks the output), null in layout nhwc (no conversion: the tensors "
      "are used as they are); convtune's columns run the layout named in 'layout'");
  return o;
}

/* mkdir -p of path's parent directory. */
static int make_parents(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) return 0;
  *slash = '\0';
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0777) && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(dir, 0777) && errno != EEXIST) return -1;
  return 0;
}

ct_status bench_write_json(const bench_result *r, const char *path, ct_err *err) {
  cJSON *o = bench_to_json(r);
  if (!o) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory writing %s", path);
  ct_status st = bench_write_doc(o, path, err);
  cJSON_Delete(o);
  return st;
}

ct_status bench_write_doc(const cJSON *o, const char *path, ct_err *err) {
  char *text = cJSON_Print(o);
  if (!text) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory writing %s", path);
  ct_status st = CT_OK;
  outfile f;
  /* whole or not at all: a temporary renamed into place (outfile) */
  if (make_parents(path)) {
    st = ERR_SET(err, CT_ERR_IO, "%s: %s", path, strerror(errno));
  } else if ((st = outfile_open(&f, path, "w", err)) == CT_OK) {
    int ok = fputs(text, f.f) >= 0 && fputc('\n', f.f) >= 0;
    st = outfile_close(&f, ok, err);
    if (!ok) st = ERR_SET(err, CT_ERR_IO, "%s: write failed", path);
  }
  free(text);
  return st;
}

/* ---- CSV ---------------------------------------------------------------------- */

void bench_csv_string(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

void bench_csv_num(FILE *f, double v, const char *fmt) {
  fputc(',', f);
  if (bench_has(v)) fprintf(f, fmt, v);
}

void bench_write_csv(const bench_result *r, FILE *f) {
  fputs("name,key,padded_to_4_channels", f);
  for (int fl = 0; fl < BENCH_N_FIELDS; fl++) fprintf(f, ",%s", bench_field_names[fl]);
  fputs(",convtune_tops,share_of_floor,ratio_cudnn_int8,ratio_cudnn_int8x32,ratio_cudnn_fp16,"
        "cudnn_int8_algo,cudnn_int8x32_algo,cudnn_fp16_algo,source,layout\n",
        f);
  for (int i = 0; i < r->n_layers; i++) {
    const bench_layer *l = &r->layers[i];
    double ct = l->t[BENCH_CONVTUNE];
    bench_csv_string(f, l->name);
    fputc(',', f);
    bench_csv_string(f, l->key);
    fprintf(f, ",%d", l->padded);
    for (int fl = 0; fl < BENCH_N_FIELDS; fl++) bench_csv_num(f, l->t[fl], "%.3f");
    bench_csv_num(f, bench_has(ct) && ct > 0 ? l->ops / ct / 1e6 : BENCH_NONE, "%.2f");
    bench_csv_num(f,
                  bench_has(ct) && ct > 0 && bench_has(l->t[BENCH_FLOOR]) ? l->t[BENCH_FLOOR] / ct
                                                                          : BENCH_NONE,
                  "%.4f");
    for (int c = 0; c < BENCH_N_CUDNN; c++) {
      double cu = l->t[BENCH_CUDNN_INT8 + c];
      bench_csv_num(f, bench_has(ct) && bench_has(cu) && cu > 0 ? ct / cu : BENCH_NONE, "%.4f");
    }
    for (int c = 0; c < BENCH_N_CUDNN; c++) {
      fputc(',', f);
      bench_csv_string(f, l->algo[c]);
    }
    fputc(',', f);
    bench_csv_string(f, l->source);
    fprintf(f, ",%s\n", bench_layout_name(r->layout));
  }
}

/* ---- Markdown ------------------------------------------------------------------ */

void bench_md_time(FILE *f, double us) {
  if (bench_has(us))
    fprintf(f, " %.2f |", us);
  else
    fputs(" - |", f);
}

void bench_md_ratio(FILE *f, double a, double b) {
  if (bench_has(a) && bench_has(b) && b > 0)
    fprintf(f, " %.2f |", a / b);
  else
    fputs(" - |", f);
}

void bench_write_markdown(const bench_result *r, FILE *f) {
  const bench_peaks *p = &r->peaks;
  const int nhwc = r->layout == CT_LAYOUT_NHWC;
  fprintf(f, "## convtune bench: %s, set %s, batch %d, layout %s\n\n", r->device, r->set, r->batch,
          bench_layout_name(r->layout));
  fprintf(f, "- %s (%s, %d SMs), commit %s, %s\n", r->device, r->arch, r->sm_count, r->commit,
          r->date);
  fprintf(f, "- command: `%s`\n", r->command);
  fprintf(f,
          "- peaks measured in this run: dp4a %.1f TOPS, int8 mma.sync %.1f TOPS, device copy "
          "%.2f TB/s (bytes read + written)\n",
          p->dp4a_tops, p->mma_int8_tops, p->copy_tbs);
  fprintf(f,
          "- every side timed alike: a CUDA graph of R launches, the median of %d replays, per "
          "launch; inputs stay in L2 across launches where they fit\n",
          r->repeats);
  fputs("- floor: max(ops / int8 mma.sync peak, (int8 data + int8 weights + int32 output) / copy "
        "bandwidth); TOPS and % of floor are convtune's; ratios are convtune time / cuDNN time "
        "(below 1: convtune is faster)\n",
        f);
  fputs("- floor (int8 in and out): the same with an int8 output; int8 out % of floor is that "
        "floor / convtune's int8-output time (a memory-bound layer is judged by it); a grouped "
        "layer's ops and weights count C/groups input channels per output channel\n",
        f);
  if (nhwc)
    fputs("- layout nhwc: convtune runs channels-last (NHWC data, OHWI weights, NHWC output, "
          "unpadded) on its nhwc templates (the stems, C % 16 != 0, on the channels-last mma "
          "ones), the tensors generated in that layout; a layer that no nhwc template runs has "
          "empty convtune cells, the reason in the notes\n",
          f);
  else
    fputs("- layout nchw4c: convtune runs the packed layout (NCHW4c data and output, OIHW4o4i "
          "weights)\n",
          f);
  if (nhwc)
    fputs("- padded to 4 channels: cuDNN int8 runs C = 4 with the extra channel zero (int8 NHWC "
          "needs C % 4 == 0); convtune (nhwc) and cuDNN fp16 run the real channels; the floor "
          "counts the real ones\n",
          f);
  else
    fputs("- padded to 4 channels: convtune and cuDNN int8 run C = 4 with the extra channel zero "
          "(int8 NHWC needs C % 4 == 0); cuDNN fp16 runs the real channels; the floor counts the "
          "real ones\n",
          f);
  fprintf(f,
          "- convtune int8 out (convtune_i8_us): the same layer requantized to int8 in the kernel "
          "(bias, per-channel fixed-point scales, ReLU clamp: the workload with `--out int8 "
          "--epilogue bias,qc`), layout %s, checked byte for byte against the CPU reference "
          "of the formula; the cuDNN int8 columns write int8 too\n",
          bench_layout_name(r->layout));
  if (nhwc)
    fputs("- pack: does not apply to layout nhwc (no layout conversion: the tensors are used as "
          "they are); the column is empty\n",
          f);
  else
    fputs("- pack: the plain-NCHW call minus the packed call: packing the data and unpacking the "
          "output, which a network that stays in NCHW4c pays once, not per layer\n",
          f);
  if (!r->cudnn_built)
    fputs("- cuDNN columns: cuDNN not built in\n", f);
  else if (!r->cudnn_version[0])
    fputs("- cuDNN columns: cuDNN did not load at run time\n", f);
  else
    fprintf(f,
            "- cuDNN %s, legacy API, every forward algorithm tried and the best kept; int8 NHWC "
            "(x, w, y int8, int32 compute), int8x32 NCHW_VECT_C, fp16 NHWC (fp32 accumulate, "
            "tensor-op math)\n",
            r->cudnn_version);
  fputs("\n| layer | note |", f);
  static const bench_field cols[] = {BENCH_FLOOR,     BENCH_CONVTUNE,   BENCH_CONVTUNE_I8,
                                     BENCH_PACK,      BENCH_CUDNN_INT8, BENCH_CUDNN_INT8X32,
                                     BENCH_CUDNN_FP16};
  fprintf(f, " %s | %s | TOPS | %% of floor | floor us (int8 in and out) | int8 out %% of floor |",
          field_titles[BENCH_FLOOR], field_titles[BENCH_CONVTUNE]);
  for (size_t c = 2; c < sizeof cols / sizeof cols[0]; c++)
    fprintf(f, " %s |", field_titles[cols[c]]);
  fputs(" convtune/int8 | convtune/int8x32 | convtune/fp16 | convtune int8 out/cuDNN int8 | "
        "convtune int8 out/fp16 | convtune's kernel |\n",
        f);
  fputs("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | ---: | ---: | ---: | --- |\n",
        f);
  for (int i = 0; i < r->n_layers; i++) {
    const bench_layer *l = &r->layers[i];
    double ct = l->t[BENCH_CONVTUNE], fl = l->t[BENCH_FLOOR];
    fprintf(f, "| %s | %s", l->name, l->padded ? "padded to 4 channels |" : "|");
    bench_md_time(f, fl);
    bench_md_time(f, ct);
    if (bench_has(ct) && ct > 0)
      fprintf(f, " %.1f |", l->ops / ct / 1e6);
    else
      fputs(" - |", f);
    if (bench_has(ct) && ct > 0 && bench_has(fl))
      fprintf(f, " %.0f%% |", 100 * fl / ct);
    else
      fputs(" - |", f);
    double fl8 = floor_i8_us(l, p), sh8 = share_of(fl8, l->t[BENCH_CONVTUNE_I8]);
    bench_md_time(f, fl8);
    if (bench_has(sh8))
      fprintf(f, " %.0f%% |", 100 * sh8);
    else
      fputs(" - |", f);
    for (size_t c = 2; c < sizeof cols / sizeof cols[0]; c++) bench_md_time(f, l->t[cols[c]]);
    for (int c = 0; c < BENCH_N_CUDNN; c++) bench_md_ratio(f, ct, l->t[BENCH_CUDNN_INT8 + c]);
    bench_md_ratio(f, l->t[BENCH_CONVTUNE_I8], l->t[BENCH_CUDNN_INT8]);
    bench_md_ratio(f, l->t[BENCH_CONVTUNE_I8], l->t[BENCH_CUDNN_FP16]);
    fprintf(f, " %s |\n", l->source[0] ? l->source : "-");
  }
  /* the sum row: each column over the layers it has; ratios over the layers both have */
  fprintf(f, "| **sum** (%d layers) | |", r->n_layers);
  int n_null[BENCH_N_FIELDS];
  double sums[BENCH_N_FIELDS];
  for (int fl = 0; fl < BENCH_N_FIELDS; fl++) sums[fl] = bench_sum(r, (bench_field)fl, &n_null[fl]);
  for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
    bench_field fl = cols[c];
    if (!bench_has(sums[fl]))
      fputs(" - |", f);
    else if (n_null[fl])
      fprintf(f, " %.2f (%d null) |", sums[fl], n_null[fl]);
    else
      fprintf(f, " %.2f |", sums[fl]);
    if (c == 1) {
      double sf, sc, ops = 0;
      int n = pair_sums(r, BENCH_FLOOR, BENCH_CONVTUNE, &sf, &sc);
      for (int i = 0; i < r->n_layers; i++)
        if (bench_has(r->layers[i].t[BENCH_CONVTUNE])) ops += r->layers[i].ops;
      if (n && sc > 0)
        fprintf(f, " %.1f | %.0f%% |", ops / sc / 1e6, 100 * sf / sc);
      else
        fputs(" - | - |", f);
      /* the int8 floor over every layer, its share over those with an int8 time */
      double f8 = 0, f8i = 0, t8 = 0;
      int n8 = 0;
      for (int i = 0; i < r->n_layers; i++) {
        double v = floor_i8_us(&r->layers[i], p);
        if (!bench_has(v)) continue;
        f8 += v;
        if (!bench_has(r->layers[i].t[BENCH_CONVTUNE_I8])) continue;
        f8i += v;
        t8 += r->layers[i].t[BENCH_CONVTUNE_I8];
        n8++;
      }
      bench_md_time(f, f8 > 0 ? f8 : BENCH_NONE);
      if (n8 && t8 > 0)
        fprintf(f, " %.0f%%%s |", 100 * f8i / t8, n8 < r->n_layers ? "*" : "");
      else
        fputs(" - |", f);
    }
  }
  static const bench_field ratios[][2] = {{BENCH_CONVTUNE, BENCH_CUDNN_INT8},
                                          {BENCH_CONVTUNE, BENCH_CUDNN_INT8X32},
                                          {BENCH_CONVTUNE, BENCH_CUDNN_FP16},
                                          {BENCH_CONVTUNE_I8, BENCH_CUDNN_INT8},
                                          {BENCH_CONVTUNE_I8, BENCH_CUDNN_FP16}};
  for (size_t c = 0; c < sizeof ratios / sizeof ratios[0]; c++) {
    double sa, sb;
    int n = pair_sums(r, ratios[c][0], ratios[c][1], &sa, &sb);
    if (n && sb > 0)
      fprintf(f, " %.2f%s |", sa / sb, n < r->n_layers ? "*" : "");
    else
      fputs(" - |", f);
  }
  fputs(" |\n", f);
  fputs("\nSums skip null cells and say how many there are; a ratio marked * is over the layers "
        "where both sides ran.\n",
        f);
  int header = 0;
  for (int i = 0; i < r->n_layers; i++) {
    const bench_layer *l = &r->layers[i];
    for (int fl = 0; fl < BENCH_N_FIELDS; fl++) {
      if (!l->note[fl][0]) continue;
      if (!header) fputs("\nNotes:\n", f);
      header = 1;
      fprintf(f, "- %s, %s: %s\n", l->name, bench_field_names[fl], l->note[fl]);
    }
  }
}

/* ---- timing ------------------------------------------------------------------------ */

#define MIN_LAUNCHES 5
#define MAX_LAUNCHES 1000

ct_status bench_time(const bench_timer *t, bench_launch_fn fn, void *user, double give_up_us,
                     double *us, ct_err *err) {
  ct_status st = CT_OK;
  cudaStream_t s = (cudaStream_t)t->stream;
  cudaEvent_t e0 = (cudaEvent_t)t->e0, e1 = (cudaEvent_t)t->e1;
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  int capturing = 0, repeats = t->repeats;
  double samples[BENCH_MAX_REPEATS];
  float ms = 0;
  *us = BENCH_NONE;
  if (repeats < 1) repeats = 1;
  if (repeats > BENCH_MAX_REPEATS) repeats = BENCH_MAX_REPEATS;

  /* warm-up, then an estimate of one launch (launch gaps included) */
  if ((st = fn(user, t->stream, err))) goto done;
  CUDA_TRY(err, cudaEventRecord(e0, s));
  for (int i = 0; i < 3; i++)
    if ((st = fn(user, t->stream, err))) goto done;
  CUDA_TRY(err, cudaEventRecord(e1, s));
  CUDA_TRY(err, cudaEventSynchronize(e1));
  CUDA_TRY(err, cudaEventElapsedTime(&ms, e0, e1));
  double est_us = ms * 1000.0 / 3;
  if (give_up_us > 0 && est_us > give_up_us) goto done;
  int r = est_us > 0 ? (int)ceil(t->min_replay_us / est_us) : MAX_LAUNCHES;
  if (r < MIN_LAUNCHES) r = MIN_LAUNCHES;
  if (r > MAX_LAUNCHES) r = MAX_LAUNCHES;

  /* R launches in one graph: its replay has no host launch gaps. The
   * estimate counts the host's launch time, so R may come out short for a
   * kernel of a few us: the warm replay is timed and, when it is under 80%
   * of min_replay_us, the graph is captured again with R scaled up. */
  for (int attempt = 0;; attempt++) {
    CUDA_TRY(err, cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    capturing = 1;
    for (int i = 0; i < r; i++)
      if ((st = fn(user, t->stream, err))) goto done;
    capturing = 0;
    CUDA_TRY(err, cudaStreamEndCapture(s, &graph));
    CUDA_TRY(err, cudaGraphInstantiate(&exec, graph, 0));
    CUDA_TRY(err, cudaGraphUpload(exec, s));
    CUDA_TRY(err, cudaEventRecord(e0, s));
    CUDA_TRY(err, cudaGraphLaunch(exec, s));
    CUDA_TRY(err, cudaEventRecord(e1, s));
    CUDA_TRY(err, cudaEventSynchronize(e1));
    CUDA_TRY(err, cudaEventElapsedTime(&ms, e0, e1));
    double replay_us = ms * 1000.0;
    if (attempt > 0 || r >= MAX_LAUNCHES || replay_us >= 0.8 * t->min_replay_us) break;
    int r2 = replay_us > 0 ? (int)ceil(r * t->min_replay_us / replay_us) : MAX_LAUNCHES;
    r = r2 > MAX_LAUNCHES ? MAX_LAUNCHES : r2;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    exec = NULL;
    graph = NULL;
  }
  for (int i = 0; i < repeats; i++) {
    CUDA_TRY(err, cudaEventRecord(e0, s));
    CUDA_TRY(err, cudaGraphLaunch(exec, s));
    CUDA_TRY(err, cudaEventRecord(e1, s));
    CUDA_TRY(err, cudaEventSynchronize(e1));
    CUDA_TRY(err, cudaEventElapsedTime(&ms, e0, e1));
    samples[i] = ms * 1000.0 / r;
  }
  *us = bench_median(samples, repeats);
done:
  if (capturing) {
    /* leave the stream out of capture whatever happened inside it */
    cudaGraph_t dead = NULL;
    (void)cudaStreamEndCapture(s, &dead);
    if (dead) cudaGraphDestroy(dead);
    (void)cudaGetLastError();
  }
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  return st;
}

/* ---- the run ------------------------------------------------------------------------- */

void bench_opts_default(bench_opts *o) {
  memset(o, 0, sizeof *o);
  o->db_path = "convtune.db";
  o->repeats = 7;
  o->min_replay_us = 1000;
  o->seed = 1;
  o->streams = 1;
  o->layout = CT_LAYOUT_NCHW4C;
}

typedef struct dbuf {
  void *p;
  size_t size;
} dbuf;

/* Grow-only device buffers: one set for the whole run, never per layer. */
static ct_status dbuf_reserve(dbuf *b, size_t size, ct_err *err) {
  ct_status st = CT_OK;
  if (size <= b->size) return CT_OK;
  if (b->p) cudaFree(b->p);
  b->p = NULL;
  b->size = 0;
  CUDA_TRY(err, cudaMalloc(&b->p, size));
  b->size = size;
done:
  return st;
}

enum { B_DATA, B_PDATA, B_W, B_PW, B_POUT, B_OUT, B_PARAMS, B_POUT8, N_BUFS };

typedef struct run {
  const bench_opts *o;
  bench_env e;
  dbuf buf[N_BUFS];
  rng rng;
} run;

typedef struct ct_launch {
  ct_context *ctx;
  const ct_workload *w;
  const void *data, *weights;
  void *out;
  const void *params; /* the int8-output column's */
} ct_launch;

static ct_status launch_convtune(void *user, struct CUstream_st *stream, ct_err *err) {
  const ct_launch *l = user;
  ct_status st =
      l->w->op == CT_OP_CONV3D
          ? ct_qconv3d(l->ctx, l->w, l->data, l->weights, l->params, NULL, l->out, stream)
          : ct_qconv2d(l->ctx, l->w, l->data, l->weights, l->params, NULL, l->out, stream);
  if (st) return ERR_SET(err, st, "%s", ct_errmsg(l->ctx));
  return CT_OK;
}

/* ---- the CPU reference on all cores -------------------------------------------------- */

typedef struct ref_job {
  ct_workload w; /* n = 1, k = this job's channels */
  ct_quant q;    /* its channels' values */
  const ct_quant *qp;
  const void *data, *residual;
  const int8_t *weights;
  void *out;
  ct_status st;
  ct_err err;
} ref_job;

static void *ref_worker(void *arg) {
  ref_job *j = arg;
  j->st = reference_qconv(&j->w, j->qp, j->data, j->weights, j->residual, j->out, &j->err);
  return NULL;
}

/* Each thread takes a run of output channels: their weights, values,
 * residual and output are contiguous in the plain layouts. A grouped conv
 * is split at group boundaries (a job is then a grouped conv of its own
 * groups over their input channels, which are contiguous too), so that
 * every job's output channel reads the same inputs as in the whole one. */
ct_status bench_reference_image(const ct_workload *w, const ct_quant *q, const void *data,
                                const int8_t *weights, const void *residual, void *out,
                                int n_threads, ct_err *err) {
  geom3 g;
  workload_geom(w, &g);
  int64_t kvol = g.ker[0] * g.ker[1] * g.ker[2], out_sp = g.out[0] * g.out[1] * g.out[2];
  size_t eb = workload_out_elem_bytes(w);
  /* units of the split: output channels, or whole groups */
  int n_units = w->groups > 1 ? w->groups : w->k;
  int64_t unit_k = w->k / n_units, unit_c = w->groups > 1 ? g.c / w->groups : 0;
  int64_t in_sp = g.in[0] * g.in[1] * g.in[2];
  int n = n_threads < n_units ? n_threads : n_units;
  if (n < 1 || w->epi.d2s_block) n = 1;
  ref_job *jobs = calloc((size_t)n, sizeof *jobs);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  int *started = calloc((size_t)n, sizeof *started);
  ct_status st = CT_OK;
  if (!jobs || !th || !started) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    int u0 = (int)((int64_t)n_units * i / n), u1 = (int)((int64_t)n_units * (i + 1) / n);
    int k0 = (int)(u0 * unit_k);
    ref_job *j = &jobs[i];
    j->w = *w;
    j->w.k = (int)((u1 - u0) * unit_k);
    j->data = data;
    if (w->groups > 1) {
      j->w.groups = u1 - u0;
      j->w.c = (int)((u1 - u0) * unit_c);
      j->data = (const uint8_t *)data + (size_t)(u0 * unit_c * in_sp); /* int8 data */
    }
    j->weights = weights + (int64_t)k0 * workload_cpg(w) * kvol;
    j->residual = residual ? (const uint8_t *)residual + (size_t)k0 * out_sp * eb : NULL;
    j->out = (uint8_t *)out + (size_t)k0 * out_sp * eb;
    if (q) {
      j->q = *q;
      if (q->weight_zero_points) j->q.weight_zero_points = q->weight_zero_points + k0;
      if (q->bias) j->q.bias = q->bias + k0;
      if (q->scale && w->epi.scale == CT_SCALE_CHANNEL) j->q.scale = q->scale + k0;
      j->qp = &j->q;
    }
    started[i] = n > 1 && pthread_create(&th[i], NULL, ref_worker, j) == 0;
    if (!started[i]) ref_worker(j); /* one job, or no thread: do it here */
  }
  for (int i = 0; i < n; i++)
    if (started[i]) pthread_join(th[i], NULL);
  for (int i = 0; i < n && !st; i++)
    if (jobs[i].st) {
      st = jobs[i].st;
      if (err) *err = jobs[i].err;
    }
done:
  free(jobs);
  free(th);
  free(started);
  return st;
}

void bench_fill_random(rng *r, void *p, size_t n) {
  uint8_t *b = p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng_next(r);
    memcpy(b + i, &v, 8);
  }
  for (; i < n; i++) b[i] = (uint8_t)rng_next(r);
}

#define POISON 0x5A

/* Note the first mismatch of a layout on note; returns the count. */
static int64_t compare(const int32_t *got, const int32_t *want, int64_t n, int64_t out_sp,
                       const char *layout, int64_t image, char *note, size_t note_size) {
  int64_t bad = 0, at = 0;
  for (int64_t i = 0; i < n; i++)
    if (got[i] != want[i] && !bad++) at = i;
  if (bad)
    snprintf(note, note_size,
             "WRONG ANSWER, %s layout: %lld of %lld outputs of image %lld differ (first: channel "
             "%lld pixel %lld gives %d, not %d)",
             layout, (long long)bad, (long long)n, (long long)image, (long long)(at / out_sp),
             (long long)(at % out_sp), got[at], want[at]);
  return bad;
}

/* Run convtune on layer l's inputs (already on the device) in both layouts
 * and check the first and the last image of each against the reference.
 * *ok_packed and *ok_plain say which layouts gave the right answer (a wrong
 * one is noted on l, and not timed); an error status when a call failed. */
static ct_status check_convtune(run *R, bench_layer *l, const ct_workload *w, const ct_workload *pw,
                                const int8_t *h_data, const int8_t *h_w, int *ok_packed,
                                int *ok_plain, ct_err *err) {
  ct_status st = CT_OK;
  cudaStream_t s = (cudaStream_t)R->e.t.stream;
  geom3 g;
  workload_geom(w, &g);
  int64_t in_sp = g.in[0] * g.in[1] * g.in[2], out_sp = g.out[0] * g.out[1] * g.out[2];
  /* an image of the packed output: round4(K) channels, the padding lanes included */
  int64_t img_out = g.k * out_sp, img_pout = pack_round4(g.k) * out_sp;
  int32_t *want = malloc((size_t)img_out * sizeof *want);
  int32_t *got = malloc((size_t)img_pout * sizeof *got);
  int32_t *plain = malloc((size_t)img_out * sizeof *plain);
  *ok_packed = *ok_plain = 0;
  if (!want || !got || !plain) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the reference of %s", l->name);
    goto done;
  }
  /* both layouts, outputs poisoned first so that an unwritten element shows */
  CUDA_TRY(err, cudaMemsetAsync(R->buf[B_POUT].p, POISON, R->buf[B_POUT].size, s));
  CUDA_TRY(err, cudaMemsetAsync(R->buf[B_OUT].p, POISON, R->buf[B_OUT].size, s));
  ct_launch packed = {R->e.ctx, pw, R->buf[B_PDATA].p, R->buf[B_PW].p, R->buf[B_POUT].p, NULL};
  ct_launch plainl = {R->e.ctx, w, R->buf[B_DATA].p, R->buf[B_PW].p, R->buf[B_OUT].p, NULL};
  if ((st = launch_convtune(&packed, R->e.t.stream, err))) goto done;
  if ((st = launch_convtune(&plainl, R->e.t.stream, err))) goto done;
  CUDA_TRY(err, cudaStreamSynchronize(s));
  int64_t images[2] = {0, g.n - 1};
  int64_t bad_packed = 0, bad_plain = 0;
  ct_workload img = *w;
  img.n = 1;
  for (int i = 0; i < (g.n > 1 ? 2 : 1); i++) {
    int64_t b = images[i];
    if ((st = bench_reference_image(&img, NULL, h_data + b * g.c * in_sp, h_w, NULL, want,
                                    R->e.n_threads, err)))
      goto done;
    if (!bad_packed) {
      CUDA_TRY(err, cudaMemcpy(got, (int32_t *)R->buf[B_POUT].p + b * img_pout,
                               (size_t)img_pout * sizeof *got, cudaMemcpyDeviceToHost));
      unpack_nc4c(got, plain, sizeof *got, 1, g.k, out_sp);
      bad_packed = compare(plain, want, img_out, out_sp, "packed", b, l->note[BENCH_CONVTUNE],
                           sizeof l->note[BENCH_CONVTUNE]);
    }
    if (!bad_plain) {
      CUDA_TRY(err, cudaMemcpy(plain, (int32_t *)R->buf[B_OUT].p + b * img_out,
                               (size_t)img_out * sizeof *plain, cudaMemcpyDeviceToHost));
      bad_plain = compare(plain, want, img_out, out_sp, "plain", b, l->note[BENCH_PACK],
                          sizeof l->note[BENCH_PACK]);
    }
  }
  *ok_packed = !bad_packed;
  *ok_plain = !bad_plain;
done:
  free(want);
  free(got);
  free(plain);
  return st;
}

static const char *const source_names[] = {"exact", "same compute capability", "nearest tuned",
                                           "default", "chain pick"};

ct_status bench_still_healthy(ct_err *err) {
  ct_status st = CT_OK;
  (void)cudaGetLastError();
  CUDA_TRY(err, cudaDeviceSynchronize());
done:
  return st;
}

/* The workload of the int8-output column: w requantized to int8 with a
 * bias, per-channel scales and ReLU (BENCH_I8_EPILOGUE). */
void bench_i8_workload(const ct_workload *w, ct_workload *out) {
  *out = *w;
  out->out_type = CT_DTYPE_INT8;
  memset(&out->epi, 0, sizeof out->epi);
  out->epi.bias = 1;
  out->epi.scale = CT_SCALE_CHANNEL;
}

/* Where a layer's inputs are, in the layout convtune runs: the device
 * copies of data and weights, and the host weights in that layout (for
 * ct_make_params). */
typedef struct layer_inputs {
  ct_layout layout; /* CT_LAYOUT_NCHW4C or CT_LAYOUT_NHWC */
  const void *d_data, *d_weights;
  const int8_t *h_weights;
} layer_inputs;

/* convtune with int8 output on layer l (plain host inputs h_data, h_w; the
 * device ones in in): values from quant_random with a ReLU clamp, params
 * made by ct_make_params, the first and last image checked byte for byte
 * against reference_qconv (the output converted to plain NCHW first), then
 * the call timed. A wrong answer or a failed call is a note on the column;
 * an error status only when the context is lost. */
static ct_status run_convtune_i8(run *R, bench_layer *l, const ct_workload *w, const int8_t *h_data,
                                 const int8_t *h_w, const layer_inputs *in, ct_err *err) {
  ct_status st = CT_OK;
  char *note = l->note[BENCH_CONVTUNE_I8];
  size_t note_size = sizeof l->note[BENCH_CONVTUNE_I8];
  const int nhwc = in->layout == CT_LAYOUT_NHWC;
  ct_workload wq, lwq, img;
  bench_i8_workload(w, &wq);
  /* the workload of the call: packed, or the same one channels-last */
  lwq = wq;
  if (nhwc)
    lwq.layout = CT_LAYOUT_NHWC;
  else
    workload_packed(&wq, &lwq);
  geom3 g;
  workload_geom(w, &g);
  int64_t in_sp = g.in[0] * g.in[1] * g.in[2], out_sp = g.out[0] * g.out[1] * g.out[2];
  int64_t img_out = g.k * out_sp, img_lout = (nhwc ? g.k : pack_round4(g.k)) * out_sp;
  size_t n_params = ct_params_bytes(&wq), n_lout = ct_out_bytes(&lwq);
  quant_store qs = {0};
  void *params = malloc(n_params);
  uint8_t *want = malloc((size_t)img_out), *got = malloc((size_t)img_lout),
          *plain = malloc((size_t)img_out);
  if (!params || !want || !got || !plain) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the int8 column of %s", l->name);
    goto done;
  }
  ct_err e = {0};
  if ((st = quant_random(&wq, R->o->seed + 1, &qs, err))) goto done;
  qs.q.clamp_min = qs.q.out_zero_point; /* ReLU */
  qs.q.clamp_max = 127;
  if (ct_make_params(R->e.ctx, &lwq, &qs.q, in->h_weights, params)) {
    snprintf(note, note_size, "ct_make_params: %.180s", ct_errmsg(R->e.ctx));
    goto done;
  }
  if ((st = dbuf_reserve(&R->buf[B_PARAMS], n_params, err)) ||
      (st = dbuf_reserve(&R->buf[B_POUT8], n_lout, err)))
    goto done;
  CUDA_TRY(err, cudaMemcpy(R->buf[B_PARAMS].p, params, n_params, cudaMemcpyHostToDevice));
  CUDA_TRY(err, cudaDeviceSynchronize());
  cudaStream_t s = (cudaStream_t)R->e.t.stream;
  CUDA_TRY(err, cudaMemsetAsync(R->buf[B_POUT8].p, POISON, n_lout, s));
  ct_launch launch = {R->e.ctx,          &lwq, in->d_data, in->d_weights, R->buf[B_POUT8].p,
                      R->buf[B_PARAMS].p};
  if (launch_convtune(&launch, R->e.t.stream, &e)) {
    snprintf(note, note_size, "failed: %.200s", e.msg);
    st = bench_still_healthy(err);
    goto done;
  }
  CUDA_TRY(err, cudaStreamSynchronize(s));
  img = wq;
  img.n = 1;
  int64_t images[2] = {0, g.n - 1};
  for (int i = 0; i < (g.n > 1 ? 2 : 1); i++) {
    int64_t b = images[i];
    if ((st = bench_reference_image(&img, &qs.q, h_data + b * g.c * in_sp, h_w, NULL, want,
                                    R->e.n_threads, err)))
      goto done;
    CUDA_TRY(err, cudaMemcpy(got, (uint8_t *)R->buf[B_POUT8].p + b * img_lout, (size_t)img_lout,
                             cudaMemcpyDeviceToHost));
    if (nhwc)
      unpack_nhwc(got, plain, 1, 1, g.k, out_sp);
    else
      unpack_nc4c(got, plain, 1, 1, g.k, out_sp);
    for (int64_t j = 0; j < img_out; j++)
      if (plain[j] != want[j]) {
        snprintf(note, note_size,
                 "WRONG ANSWER, int8 output: image %lld channel %lld pixel %lld gives %d, not %d",
                 (long long)b, (long long)(j / out_sp), (long long)(j % out_sp), (int8_t)plain[j],
                 (int8_t)want[j]);
        goto done;
      }
  }
  double us;
  if (bench_time(&R->e.t, launch_convtune, &launch, 0, &us, &e)) {
    snprintf(note, note_size, "timing: %.200s", e.msg);
    st = bench_still_healthy(err);
    goto done;
  }
  l->t[BENCH_CONVTUNE_I8] = us;
done:
  quant_store_free(&qs);
  free(params);
  free(want);
  free(got);
  free(plain);
  return st;
}

void bench_explain_source(ct_context *ctx, const ct_workload *w, char *buf, size_t size) {
  ct_explanation ex;
  if (size) buf[0] = '\0';
  if (ct_explain(ctx, w, &ex) != CT_OK) return;
  const char *src = (unsigned)ex.source < sizeof source_names / sizeof source_names[0]
                        ? source_names[ex.source]
                        : "?";
  int n = snprintf(buf, size, "%s, %s", src, ex.template_name);
  if (ex.measured_us > 0 && n > 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, " (tuned %.2f us)", ex.measured_us);
}

/* convtune's side of layer l in nchw4c: inputs, check, packed and plain
 * timings, then the int8 column. */
static ct_status run_convtune_packed(run *R, bench_layer *l, ct_err *err) {
  ct_status st = CT_OK;
  ct_workload w = l->w, pw;
  workload_packed(&w, &pw);
  geom3 g;
  workload_geom(&w, &g);
  int64_t in_sp = g.in[0] * g.in[1] * g.in[2];
  size_t n_data = (size_t)workload_data_elems(&w), n_pdata = (size_t)workload_data_elems(&pw);
  size_t n_w = (size_t)workload_weight_elems(&w), n_pw = ct_packed_weights_bytes(&w);
  size_t n_pout = (size_t)workload_out_elems(&pw), n_out = (size_t)workload_out_elems(&w);
  int8_t *h_data = malloc(n_data), *h_pdata = malloc(n_pdata), *h_w = malloc(n_w);
  int ok_packed = 0, ok_plain = 0;
  if (!h_data || !h_pdata || !h_w) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the inputs of %s", l->name);
    goto done;
  }
  bench_fill_random(&R->rng, h_data, n_data);
  bench_fill_random(&R->rng, h_w, n_w);
  pack_nc4c(h_data, h_pdata, 1, g.n, g.c, in_sp);
  if ((st = dbuf_reserve(&R->buf[B_DATA], n_data, err)) ||
      (st = dbuf_reserve(&R->buf[B_PDATA], n_pdata, err)) ||
      (st = dbuf_reserve(&R->buf[B_W], n_w, err)) ||
      (st = dbuf_reserve(&R->buf[B_PW], n_pw, err)) ||
      (st = dbuf_reserve(&R->buf[B_POUT], n_pout * sizeof(int32_t), err)) ||
      (st = dbuf_reserve(&R->buf[B_OUT], n_out * sizeof(int32_t), err)))
    goto done;
  CUDA_TRY(err, cudaMemcpy(R->buf[B_DATA].p, h_data, n_data, cudaMemcpyHostToDevice));
  CUDA_TRY(err, cudaMemcpy(R->buf[B_PDATA].p, h_pdata, n_pdata, cudaMemcpyHostToDevice));
  CUDA_TRY(err, cudaMemcpy(R->buf[B_W].p, h_w, n_w, cudaMemcpyHostToDevice));
  /* A pageable cudaMemcpy returns once the buffer is staged, and the timing
   * stream is non-blocking: wait for the copies before anything reads them. */
  CUDA_TRY(err, cudaDeviceSynchronize());
  if (ct_pack_weights(R->e.ctx, &w, R->buf[B_W].p, R->buf[B_PW].p, R->e.t.stream)) {
    st = ERR_SET(err, CT_ERR_CUDA, "ct_pack_weights: %s", ct_errmsg(R->e.ctx));
    goto done;
  }
  /* the first call loads the kernel (outside any timing), and is checked */
  if ((st = check_convtune(R, l, &w, &pw, h_data, h_w, &ok_packed, &ok_plain, err))) goto done;
  bench_explain_source(R->e.ctx, &pw, l->source, sizeof l->source);
  if (!ok_packed) goto done;
  ct_launch packed = {R->e.ctx, &pw, R->buf[B_PDATA].p, R->buf[B_PW].p, R->buf[B_POUT].p, NULL};
  ct_launch plain = {R->e.ctx, &w, R->buf[B_DATA].p, R->buf[B_PW].p, R->buf[B_OUT].p, NULL};
  double t_packed, t_plain;
  if ((st = bench_time(&R->e.t, launch_convtune, &packed, 0, &t_packed, err))) goto done;
  l->t[BENCH_CONVTUNE] = t_packed;
  if (!ok_plain) goto done;
  /* a plain call that cannot be timed costs the pack column only */
  ct_err e = {0};
  if (bench_time(&R->e.t, launch_convtune, &plain, 0, &t_plain, &e)) {
    snprintf(l->note[BENCH_PACK], sizeof l->note[BENCH_PACK], "plain-layout call: %.180s", e.msg);
    st = bench_still_healthy(err);
    goto done;
  }
  /* the layout kernels' time; below zero is noise on a layer where they are free */
  l->t[BENCH_PACK] = t_plain > t_packed ? t_plain - t_packed : 0;
done:
  /* the int8-output column, on the same inputs, whatever the int32 one did */
  if (st == CT_OK && h_data && h_w) {
    layer_inputs in = {CT_LAYOUT_NCHW4C, R->buf[B_PDATA].p, R->buf[B_PW].p, h_w};
    st = run_convtune_i8(R, l, &w, h_data, h_w, &in, err);
  }
  free(h_data);
  free(h_pdata);
  free(h_w);
  return st;
}

/* convtune's side of layer l in nhwc: the plain inputs drawn as in nchw4c
 * (the same stream), converted on the host to NHWC data and OHWI weights;
 * one call checked on the first and the last image against the plain CPU
 * reference (the output converted back with unpack_nhwc), then timed; then
 * the int8 column. Nothing to pack, so no pack column. A layer that no nhwc
 * template runs (ct_explain fails) gets the reason
 * on both convtune columns, and its inputs are still drawn, so that the
 * next layers see the same numbers as in an nchw4c run. */
static ct_status run_convtune_nhwc(run *R, bench_layer *l, ct_err *err) {
  ct_status st = CT_OK;
  ct_workload w = l->w, nw = l->w;
  nw.layout = CT_LAYOUT_NHWC;
  geom3 g;
  workload_geom(&w, &g);
  int64_t in_sp = g.in[0] * g.in[1] * g.in[2], out_sp = g.out[0] * g.out[1] * g.out[2];
  int64_t kvol = g.ker[0] * g.ker[1] * g.ker[2], img_out = g.k * out_sp;
  size_t n_data = (size_t)workload_data_elems(&w), n_w = (size_t)workload_weight_elems(&w);
  size_t n_out = (size_t)workload_out_elems(&w);
  int8_t *h_data = malloc(n_data), *h_ndata = malloc(n_data), *h_w = malloc(n_w),
         *h_nw = malloc(n_w);
  int32_t *want = malloc((size_t)img_out * sizeof *want), *got = malloc((size_t)img_out * 4),
          *plain = malloc((size_t)img_out * sizeof *plain);
  if (!h_data || !h_ndata || !h_w || !h_nw || !want || !got || !plain) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the inputs of %s", l->name);
    goto done;
  }
  bench_fill_random(&R->rng, h_data, n_data);
  bench_fill_random(&R->rng, h_w, n_w);
  ct_explanation ex;
  if (ct_explain(R->e.ctx, &nw, &ex) != CT_OK) {
    for (int f = BENCH_CONVTUNE; f <= BENCH_CONVTUNE_I8; f++)
      snprintf(l->note[f], sizeof l->note[f], "not run in nhwc: %.200s", ct_errmsg(R->e.ctx));
    goto done;
  }
  bench_explain_source(R->e.ctx, &nw, l->source, sizeof l->source);
  pack_nhwc(h_data, h_ndata, 1, g.n, g.c, in_sp);
  pack_ohwi(h_w, h_nw, g.k, workload_cpg(&w), kvol); /* [K][kvol][C/G] */
  if ((st = dbuf_reserve(&R->buf[B_DATA], n_data, err)) ||
      (st = dbuf_reserve(&R->buf[B_W], n_w, err)) ||
      (st = dbuf_reserve(&R->buf[B_OUT], n_out * sizeof(int32_t), err)))
    goto done;
  CUDA_TRY(err, cudaMemcpy(R->buf[B_DATA].p, h_ndata, n_data, cudaMemcpyHostToDevice));
  CUDA_TRY(err, cudaMemcpy(R->buf[B_W].p, h_nw, n_w, cudaMemcpyHostToDevice));
  /* pageable copies return once staged; the timing stream is non-blocking */
  CUDA_TRY(err, cudaDeviceSynchronize());
  cudaStream_t s = (cudaStream_t)R->e.t.stream;
  CUDA_TRY(err, cudaMemsetAsync(R->buf[B_OUT].p, POISON, R->buf[B_OUT].size, s));
  ct_launch call = {R->e.ctx, &nw, R->buf[B_DATA].p, R->buf[B_W].p, R->buf[B_OUT].p, NULL};
  /* the first call loads the kernel (outside any timing), and is checked */
  if ((st = launch_convtune(&call, R->e.t.stream, err))) goto done;
  CUDA_TRY(err, cudaStreamSynchronize(s));
  int64_t images[2] = {0, g.n - 1}, bad = 0;
  ct_workload img = w;
  img.n = 1;
  for (int i = 0; i < (g.n > 1 ? 2 : 1) && !bad; i++) {
    int64_t b = images[i];
    if ((st = bench_reference_image(&img, NULL, h_data + b * g.c * in_sp, h_w, NULL, want,
                                    R->e.n_threads, err)))
      goto done;
    CUDA_TRY(err, cudaMemcpy(got, (int32_t *)R->buf[B_OUT].p + b * img_out,
                             (size_t)img_out * sizeof *got, cudaMemcpyDeviceToHost));
    unpack_nhwc(got, plain, sizeof *got, 1, g.k, out_sp);
    bad = compare(plain, want, img_out, out_sp, "nhwc", b, l->note[BENCH_CONVTUNE],
                  sizeof l->note[BENCH_CONVTUNE]);
  }
  if (!bad) {
    double us;
    if ((st = bench_time(&R->e.t, launch_convtune, &call, 0, &us, err))) goto done;
    l->t[BENCH_CONVTUNE] = us;
  }
  {
    /* the int8-output column, on the same inputs, whatever the int32 one did */
    layer_inputs in = {CT_LAYOUT_NHWC, R->buf[B_DATA].p, R->buf[B_W].p, h_nw};
    st = run_convtune_i8(R, l, &w, h_data, h_w, &in, err);
  }
done:
  free(h_data);
  free(h_ndata);
  free(h_w);
  free(h_nw);
  free(want);
  free(got);
  free(plain);
  return st;
}

/* convtune's side of layer l in the run's layout. */
static ct_status run_convtune(run *R, bench_layer *l, ct_err *err) {
  return R->o->layout == CT_LAYOUT_NHWC ? run_convtune_nhwc(R, l, err)
                                        : run_convtune_packed(R, l, err);
}

ct_status bench_cudnn_best(cudnn_side *c, const bench_timer *t, const ct_workload *w,
                           cudnn_side_kind kind, cudnn_conv **keep, double *us, char *algo,
                           size_t algo_size, char *note, size_t note_size, ct_err *err) {
  cudnn_conv *cv = NULL;
  ct_workload cw = *w;
  cw.layout = CT_LAYOUT_NCHW; /* the description is cuDNN's; the sizes are what count */
  *us = BENCH_NONE;
  algo[0] = note[0] = '\0';
  if (keep) *keep = NULL;
  /* int8 NHWC wants C % 4 == 0 (one 32-bit word of channels): the stem is
   * zero-padded to 4 as for convtune; fp16 takes the real channels. A
   * grouped conv is never padded: extra channels would move the groups
   * (cuDNN then answers for the real channels, or says why not). */
  if (kind != CUDNN_SIDE_FP16 && w->groups <= 1) {
    cw.c = (int)pack_round4(cw.c);
    cw.k = (int)pack_round4(cw.k);
  }
  ct_status st = cudnn_conv_open(c, &cw, kind, &cv, note, note_size, err);
  if (!st && cv) st = cudnn_conv_search(cv, t, us, algo, algo_size, note, note_size, err);
  if (!st && !bench_has(*us) && kind == CUDNN_SIDE_FP16 && cw.c % 8 && w->groups <= 1) {
    /* no fp16 algorithm for odd channels: pad to 8, the tensor cores' width */
    char first[224];
    snprintf(first, sizeof first, "%s", note);
    cudnn_conv_close(cv);
    cv = NULL;
    cw.c = (cw.c + 7) / 8 * 8;
    st = cudnn_conv_open(c, &cw, kind, &cv, note, note_size, err);
    if (!st && cv) st = cudnn_conv_search(cv, t, us, algo, algo_size, note, note_size, err);
    if (!st && bench_has(*us))
      snprintf(note, note_size, "padded to 8 channels (with %d: %.100s)", w->c, first);
  }
  if (!st && keep && bench_has(*us)) {
    *keep = cv;
    cv = NULL;
  }
  cudnn_conv_close(cv);
  return st;
}

static ct_status run_cudnn(run *R, bench_layer *l, ct_err *err) {
  static const cudnn_side_kind kinds[BENCH_N_CUDNN] = {CUDNN_SIDE_INT8, CUDNN_SIDE_INT8X32,
                                                       CUDNN_SIDE_FP16};
  for (int c = 0; c < BENCH_N_CUDNN; c++) {
    bench_field f = (bench_field)(BENCH_CUDNN_INT8 + c);
    if (!R->e.cudnn) {
      snprintf(l->note[f], sizeof l->note[f], "%s",
               cudnn_side_built() ? "cuDNN did not load" : "cuDNN not built in");
      continue;
    }
    double us = BENCH_NONE;
    ct_err e = {0};
    ct_status st = bench_cudnn_best(R->e.cudnn, &R->e.t, &l->w, kinds[c], NULL, &us, l->algo[c],
                                    sizeof l->algo[c], l->note[f], sizeof l->note[f], &e);
    if (st) {
      snprintf(l->note[f], sizeof l->note[f], "%.150s", e.msg);
      if ((st = bench_still_healthy(err))) return st;
      continue;
    }
    l->t[f] = us;
  }
  return CT_OK;
}

static void progress(const run *R, const bench_result *r, int i) {
  if (R->o->quiet) return;
  const bench_layer *l = &r->layers[i];
  char buf[512];
  size_t n = (size_t)snprintf(buf, sizeof buf, "[bench] %d/%d %s/%s: floor %.2f us", i + 1,
                              r->n_layers, r->set, l->name, l->t[BENCH_FLOOR]);
  static const char *const short_names[BENCH_N_FIELDS] = {
      "floor", "convtune", "convtune int8", "cuDNN int8", "int8x32", "fp16", "pack"};
  for (int f = BENCH_CONVTUNE; f < BENCH_N_FIELDS && n < sizeof buf; f++) {
    if (bench_has(l->t[f]))
      n += (size_t)snprintf(buf + n, sizeof buf - n, ", %s %.2f", short_names[f], l->t[f]);
    else
      n += (size_t)snprintf(buf + n, sizeof buf - n, ", %s -", short_names[f]);
  }
  double sh8 = share_of(floor_i8_us(l, &r->peaks), l->t[BENCH_CONVTUNE_I8]);
  if (bench_has(sh8) && n < sizeof buf)
    snprintf(buf + n, sizeof buf - n, ", int8 out %.0f%% of floor", 100 * sh8);
  fprintf(stderr, "%s\n", buf);
  if (l->note[BENCH_CONVTUNE][0])
    fprintf(stderr, "[bench] %s: %s\n", l->name, l->note[BENCH_CONVTUNE]);
  if (l->note[BENCH_PACK][0]) fprintf(stderr, "[bench] %s: %s\n", l->name, l->note[BENCH_PACK]);
}

ct_status bench_env_open(const bench_opts *o, bench_env *e, bench_result *r, ct_err *err) {
  ct_status st = CT_OK;
  cudaStream_t stream = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  memset(e, 0, sizeof *e);
  r->repeats = o->repeats;
  r->cudnn_built = cudnn_side_built();
  /* the GPU first: without one, nothing else is done */
  if ((st = device_open(o->device, &e->dev, err))) return st;
  snprintf(r->device, sizeof r->device, "%s", e->dev.name);
  snprintf(r->arch, sizeof r->arch, "%s", e->dev.arch.name);
  r->sm_count = e->dev.arch.sm_count;
  ct_status cs = ct_open(o->db_path, o->device, &e->ctx);
  if (cs) {
    st = ERR_SET(err, cs, "%s: %s", o->db_path ? o->db_path : "(no database)", ct_errmsg(e->ctx));
    goto done;
  }
  CUDA_TRY(err, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  e->t.stream = (struct CUstream_st *)stream;
  CUDA_TRY(err, cudaEventCreate(&e0));
  e->t.e0 = (struct CUevent_st *)e0;
  CUDA_TRY(err, cudaEventCreate(&e1));
  e->t.e1 = (struct CUevent_st *)e1;
  e->t.repeats = o->repeats;
  e->t.min_replay_us = o->min_replay_us;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  e->n_threads = cores < 1 ? 1 : cores > 64 ? 64 : (int)cores;
  if (o->convtune_only) goto done;
  if (r->cudnn_built) {
    ct_err ce = {0};
    if (cudnn_side_open(e->t.stream, &e->cudnn, &ce) == CT_OK)
      snprintf(r->cudnn_version, sizeof r->cudnn_version, "%s", cudnn_side_version(e->cudnn));
    else if (!o->quiet)
      fprintf(stderr, "[bench] cuDNN: %s\n", ce.msg);
  }

  if ((st = bench_measure_peaks(&e->dev, e->t.stream, &r->peaks, err))) goto done;
  if (!o->quiet)
    fprintf(
        stderr,
        "[bench] %s (%s, %d SMs): dp4a %.1f TOPS, int8 mma.sync %.1f TOPS, copy %.2f TB/s%s%s\n",
        e->dev.name, e->dev.arch.name, e->dev.arch.sm_count, r->peaks.dp4a_tops,
        r->peaks.mma_int8_tops, r->peaks.copy_tbs, r->cudnn_version[0] ? ", cuDNN " : "",
        r->cudnn_version);
done:
  if (st) bench_env_close(e);
  return st;
}

void bench_env_close(bench_env *e) {
  if (!e) return;
  cudnn_side_close(e->cudnn);
  if (e->t.e0) cudaEventDestroy((cudaEvent_t)e->t.e0);
  if (e->t.e1) cudaEventDestroy((cudaEvent_t)e->t.e1);
  if (e->t.stream) cudaStreamDestroy((cudaStream_t)e->t.stream);
  ct_close(e->ctx);
  memset(e, 0, sizeof *e);
}

ct_status bench_run(const bench_opts *o, const wlset *s, bench_result *r, ct_err *err) {
  ct_status st = CT_OK;
  run R = {.o = o};
  r->layers = NULL;
  r->n_layers = 0;
  r->repeats = o->repeats;
  r->layout = o->layout;
  r->cudnn_built = cudnn_side_built();
  if (o->layout != CT_LAYOUT_NCHW4C && o->layout != CT_LAYOUT_NHWC)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "bench: layout %d; convtune's side runs nchw4c or nhwc",
                   (int)o->layout);
  snprintf(r->set, sizeof r->set, "%s", s->name);
  if ((st = bench_env_open(o, &R.e, r, err))) return st;
  rng_seed(&R.rng, o->seed);

  if (!(r->layers = calloc((size_t)(s->n_items ? s->n_items : 1), sizeof *r->layers))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < s->n_items; i++) {
    bench_layer *l = &r->layers[i];
    bench_layer_init(l, s->items[i].name, &s->items[i].w, o->layout, &r->peaks);
    r->n_layers = i + 1;
    if ((st = run_convtune(&R, l, err))) {
      /* a failing call is this layer's result, unless the context is gone */
      snprintf(l->note[BENCH_CONVTUNE], sizeof l->note[BENCH_CONVTUNE], "failed: %.140s", err->msg);
      if ((st = bench_still_healthy(err))) goto done;
    }
    if (strstr(l->note[BENCH_CONVTUNE], "WRONG") || strstr(l->note[BENCH_PACK], "WRONG") ||
        strstr(l->note[BENCH_CONVTUNE_I8], "WRONG"))
      r->n_wrong++;
    if ((st = run_cudnn(&R, l, err))) goto done;
    progress(&R, r, i);
  }
done:
  for (int i = 0; i < N_BUFS; i++)
    if (R.buf[i].p) cudaFree(R.buf[i].p);
  bench_env_close(&R.e);
  return st;
}
