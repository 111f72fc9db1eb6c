/*
 * bench.h: `convtune bench`: convtune's tuned kernels against cuDNN and the
 * hardware's limits, measured in one process and one run.
 *
 * For each workload of a set: convtune's kernel through the dispatch library
 * (int32 and int8 output) in the run's layout: packed NCHW4c (the default,
 * with the cost of packing from plain NCHW) or channels-last NHWC (--layout
 * nhwc: the nhwc templates, tensors used as they are), and cuDNN int8
 * (NHWC INT8 and NCHW_VECT_C INT8x32) and cuDNN fp16 (NHWC, tensor cores),
 * every side timed the same way (bench_time: a CUDA graph of R launches,
 * replays timed with events, the median); the peaks (dp4a, int8 mma.sync,
 * device copy) measured in the same run; and the roofline floor.
 *
 * Times are in microseconds per launch; a time that was not measured (a
 * side that does not run the workload) is BENCH_NONE and is written as
 * null. The CPU parts (roofline, median, the writers) need no GPU and are
 * tested in tests/test_bench.c. Only bench/ and cli/ print. Charts are drawn
 * from the results file by scripts/plot_bench, outside the command.
 */
#ifndef CT_BENCH_BENCH_H
#define CT_BENCH_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "core/wlset.h"
#include "gpu/device.h"

/* A time that was not measured: written as null, skipped by sums. */
#define BENCH_NONE (-1.0)
static inline int bench_has(double us) {
  return us >= 0;
}

/* The per-layer time fields, in the order of the results file. */
typedef enum bench_field {
  BENCH_FLOOR = 0,     /* roofline floor, int32 output */
  BENCH_CONVTUNE,      /* convtune, the run's layout (nchw4c or nhwc), int32 output */
  BENCH_CONVTUNE_I8,   /* convtune, int8 output (bench_i8_workload), the run's layout */
  BENCH_CUDNN_INT8,    /* cuDNN NHWC INT8 config, int8 output */
  BENCH_CUDNN_INT8X32, /* cuDNN NCHW_VECT_C INT8x32 config, int8 output */
  BENCH_CUDNN_FP16,    /* cuDNN NHWC fp16, tensor-op math, fp16 output */
  BENCH_PACK,          /* plain-layout call minus packed call: pack data + unpack output;
                          nchw4c runs only (nhwc converts nothing: null) */
  BENCH_N_FIELDS
} bench_field;

/* The workload of the int8-output column for w: int8 output, bias,
 * per-channel scales (values: random, with a ReLU clamp). */
void bench_i8_workload(const ct_workload *w, ct_workload *out);

/* The JSON / CSV names of the fields ("floor_us", "convtune_us", ...). */
extern const char *const bench_field_names[BENCH_N_FIELDS];

/* The three cuDNN columns, in bench_field order from BENCH_CUDNN_INT8. */
#define BENCH_N_CUDNN 3

/* The layouts convtune's side can run in, by name: "nchw4c" (or "ncdhw4c")
 * and "nhwc" (or "ndhwc"); one name serves both ops of a set. CT_ERR_INVALID_ARG
 * naming the accepted names otherwise. */
ct_status bench_layout_from_name(const char *name, ct_layout *out, ct_err *err);
/* "nhwc" for CT_LAYOUT_NHWC, else "nchw4c" (the default, which a zeroed
 * result's CT_LAYOUT_NCHW stands for); the conv2d names stand for both ops. */
const char *bench_layout_name(ct_layout layout);

typedef struct bench_peaks {
  double dp4a_tops;     /* __dp4a: 8 operations per instruction */
  double mma_int8_tops; /* mma.sync m16n8k32 s8: 8192 operations per warp instruction */
  double copy_tbs;      /* device-to-device copy, bytes read + bytes written per second */
} bench_peaks;

typedef struct bench_layer {
  char name[128];
  char key[CT_KEY_MAX]; /* the workload convtune runs: packed (C and K padded to 4), or nhwc */
  ct_workload w;        /* the workload as given, plain layout */
  int padded;   /* C (or K) was zero-padded to a multiple of 4 for cuDNN int8 (and for convtune
                   when it runs nchw4c; nhwc is never padded) */
  double ops;   /* useful operations: 2 x multiply-adds of the real channels */
  double bytes; /* int8 data + int8 weights + int32 output, real channels */
  double t[BENCH_N_FIELDS];
  char source[192];               /* where convtune's kernel comes from (ct_explain) */
  char algo[BENCH_N_CUDNN][48];   /* cuDNN's best algorithm per cuDNN column, "" when none */
  char note[BENCH_N_FIELDS][224]; /* why a field is null, or what went wrong; "" when nothing */
} bench_layer;

typedef struct bench_result {
  char device[256]; /* "NVIDIA H200" */
  char arch[16];    /* "sm_90" */
  int sm_count;
  char commit[64];    /* the tree measured: bench_result_stamp */
  char command[1024]; /* argv joined with spaces */
  char date[32];      /* UTC, ISO 8601 */
  char set[128];
  int batch;
  ct_layout layout; /* convtune's side: CT_LAYOUT_NHWC, else nchw4c (bench_layout_name) */
  int repeats;      /* replays per measurement (the median is kept) */
  bench_peaks peaks;
  int cudnn_built;        /* cuDNN was found at build time */
  char cudnn_version[32]; /* at run time, "" when not loaded */
  int n_wrong;            /* layers whose output did not match the CPU reference */
  int n_layers;
  bench_layer *layers; /* owned: bench_result_free */
} bench_result;

/* ---- CPU parts ------------------------------------------------------------ */

/* The roofline floor in us: max(ops / mma int8 peak, bytes / copy bandwidth);
 * BENCH_NONE when a peak needed is missing (<= 0). */
double bench_floor_us(double ops, double bytes, const bench_peaks *p);

/* Bytes a convolution must move at least: int8 data + int8 weights + the
 * output at out_elem_bytes per element (4 for int32, 1 for int8), for w's
 * real channels. */
double bench_conv_bytes(const ct_workload *w, int out_elem_bytes);

/* Fill l's name, w, key (of the workload convtune runs in layout: nchw4c
 * or nhwc), padded, ops, bytes and floor for peaks p; every time
 * BENCH_NONE, notes empty. w valid in its own layout. */
void bench_layer_init(bench_layer *l, const char *name, const ct_workload *w, ct_layout layout,
                      const bench_peaks *p);

/* The median of n values (sorts v in place); BENCH_NONE when n == 0. */
double bench_median(double *v, int n);

/* Sum of field f over the layers that have it; *n_null (may be NULL) gets
 * the number of layers without it. BENCH_NONE when no layer has it. */
double bench_sum(const bench_result *r, bench_field f, int *n_null);

/* The device name as a file-name slug: lower case, [a-z0-9-], a leading
 * "nvidia" dropped ("NVIDIA H200" -> "h200"); "unknown" when empty. */
char *bench_slug(const char *name, char *buf, size_t size);

/* dir/<device slug>-<set slug>-b<batch>.json into buf (-nhwc before .json
 * when r's layout is nhwc, so that the two runs of a set keep both files).
 * Returns buf. */
char *bench_results_path(const bench_result *r, const char *dir, char *buf, size_t size);

/* Fill commit, command (argv joined) and date (now, UTC). The commit:
 * $CT_COMMIT when set; else built, the commit the running binary was built
 * from, when known (not NULL, "" or "unknown"); else git's HEAD where the
 * process runs (a copied tree's .git may lag the binary); else "unknown". */
void bench_result_stamp(bench_result *r, const char *built, int argc, char **argv);

/* Release the layers; NULL is accepted. The struct itself is the caller's. */
void bench_result_free(bench_result *r);

/* The results document (the fields plus a few: see bench.c). Owned:
 * cJSON_Delete; NULL when out of memory. */
cJSON *bench_to_json(const bench_result *r);

/* Write the results document to path (parent directories are created).
 * CT_ERR_IO with the path and errno's message. */
ct_status bench_write_json(const bench_result *r, const char *path, ct_err *err);

/* One row per layer, nulls as empty fields, a header row first; the last
 * column is the run's layout. */
void bench_write_csv(const bench_result *r, FILE *f);

/* The Markdown report: what was measured (the layout in its title), the
 * table with a sum row, notes. */
void bench_write_markdown(const bench_result *r, FILE *f);

/* ---- GPU parts -------------------------------------------------------------- */

struct CUstream_st;
struct CUevent_st;

/* One launch of the thing timed, enqueued on stream; must be capturable. */
typedef ct_status (*bench_launch_fn)(void *user, struct CUstream_st *stream, ct_err *err);

#define BENCH_MAX_REPEATS 101

typedef struct bench_timer {
  struct CUstream_st *stream; /* a created (non-default) stream: capture needs one */
  struct CUevent_st *e0, *e1;
  int repeats;          /* timed replays, 1..BENCH_MAX_REPEATS */
  double min_replay_us; /* R is chosen so that one replay lasts at least this */
} bench_timer;

/* Time fn the same way for every side: one warm-up launch, an estimate from
 * three launches, R launches (5..1000, enough for min_replay_us; captured
 * again with a larger R once when the timed warm replay falls short)
 * captured into a CUDA graph, then `repeats` replays each timed with
 * events; *us = median replay time / R. When give_up_us > 0 and the
 * estimate is above it, nothing more is launched and *us = BENCH_NONE (it
 * cannot win). A failing launch or capture returns its status. */
ct_status bench_time(const bench_timer *t, bench_launch_fn fn, void *user, double give_up_us,
                     double *us, ct_err *err);

/* Measure the peaks on dev (current) with kernels compiled by NVRTC at run
 * time: dp4a and mma.sync throughput, device copy bandwidth. */
ct_status bench_measure_peaks(const device *dev, struct CUstream_st *stream, bench_peaks *out,
                              ct_err *err);

/* The CUDA source of a peak kernel (0: dp4a, 1: mma.sync), static: for
 * tests that compile it without a GPU. */
const char *bench_peaks_source(int which);

typedef struct bench_opts {
  const char *db_path;  /* the database of tuned kernels */
  int device;           /* CUDA ordinal */
  int repeats;          /* replays per measurement (default 7) */
  double min_replay_us; /* default 1000 */
  int quiet;            /* no progress on stderr */
  uint64_t seed;        /* of the random inputs */
  ct_layout layout;     /* convtune's side: CT_LAYOUT_NCHW4C (default) or CT_LAYOUT_NHWC */
  int in_chain;         /* --model: time each node inside convtune's chain (mbench_node.in_chain) */
  int arena; /* --model: the chain's tensors in reused buffers, every side (mbench_arena_plan) */
  int streams; /* --model: also S copies of each side's chain at once, 1..MBENCH_MAX_STREAMS
                  (mbench_result.streams); 1: none */
  int convtune_only; /* bench_env_open: no cuDNN, no peaks (mbench_refine's session) */
} bench_opts;

void bench_opts_default(bench_opts *o);

/* Run the benchmark of set s into r (r's stamp fields are left as they are:
 * see bench_result_stamp). CT_ERR_NO_DEVICE without a GPU,
 * CT_ERR_INVALID_ARG for a layout other than nchw4c or nhwc; a layer whose
 * convtune output is wrong is reported in its notes and r->n_wrong, not as
 * an error, and so is (in nhwc) a layer that no nhwc template runs: its
 * convtune cells stay null with the reason in the notes. Progress goes to
 * stderr, one line per layer. */
ct_status bench_run(const bench_opts *o, const wlset *s, bench_result *r, ct_err *err);

#endif
