/*
 * bench_int.h: what the set benchmark (bench.c) shares with the model's
 * (model_bench.c): the GPU session of a run, the checks and the CPU
 * reference on all cores, cuDNN's best algorithm as the set benchmark runs
 * it, and the pieces of the writers. Not for use outside bench/.
 */
#ifndef CT_BENCH_BENCH_INT_H
#define CT_BENCH_BENCH_INT_H

#include <stdio.h>

#include <cJSON.h>

#include "bench/bench.h"
#include "bench/cudnn_side.h"
#include "convtune/convtune.h"
#include "core/rng.h"
#include "gpu/device.h"

/* A run's GPU session: the device, a dispatch context on the database, a
 * non-blocking stream with the timing events, cuDNN when it loads, and the
 * cores the CPU reference may use. */
typedef struct bench_env {
  device dev;
  ct_context *ctx;
  cudnn_side *cudnn; /* NULL when cuDNN is not built in or did not load */
  bench_timer t;
  int n_threads;
} bench_env;

/* Open the session for o, and fill r's device, arch, sm_count,
 * cudnn_built, cudnn_version, repeats and peaks (measured now, printed to
 * stderr unless o->quiet). CT_ERR_NO_DEVICE without a GPU; on failure what
 * was opened is closed. */
ct_status bench_env_open(const bench_opts *o, bench_env *e, bench_result *r, ct_err *err);

/* Close what bench_env_open opened; a zeroed env is accepted. */
void bench_env_close(bench_env *e);

/* After a side failed: CT_OK when the CUDA context is healthy (go on), the
 * error when it is sticky (an illegal address poisons every later call). */
ct_status bench_still_healthy(ct_err *err);

/* n random bytes at p (never all zeros in practice: the generator's). */
void bench_fill_random(rng *r, void *p, size_t n);

/* "exact, conv2d_nhwc_wgmma (tuned 4.21 us)": where ctx takes w's kernel
 * from (ct_explain), into buf; "" when ct_explain fails. */
void bench_explain_source(ct_context *ctx, const ct_workload *w, char *buf, size_t size);

/* The CPU reference of one image: w plain (layout NCHW, n = 1), q as
 * reference_qconv takes it (NULL without params), data / residual / out
 * plain, the output channels split over n_threads (one thread with
 * depth_to_space, whose remap mixes channels). */
ct_status bench_reference_image(const ct_workload *w, const ct_quant *q, const void *data,
                                const int8_t *weights, const void *residual, void *out,
                                int n_threads, ct_err *err);

/* cuDNN's fastest algorithm for w (plain, the real channels) in kind, as
 * the set benchmark runs it: the int8 configs with C and K padded to 4, fp16
 * on the real channels, or padded to 8 where those find no algorithm (said
 * in note). *us (BENCH_NONE with the reason in note when none runs), algo
 * its name. keep (may be NULL) gets the conv with its algorithm, ready to
 * bind (owned: cudnn_conv_close), NULL when none runs. An error status only
 * when the CUDA context is lost. */
ct_status bench_cudnn_best(cudnn_side *c, const bench_timer *t, const ct_workload *w,
                           cudnn_side_kind kind, cudnn_conv **keep, double *us, char *algo,
                           size_t algo_size, char *note, size_t note_size, ct_err *err);

/* ---- the writers' pieces ---------------------------------------------- */

/* name: us to 1 ns, or null when not measured. */
void bench_json_time(cJSON *o, const char *name, double us);

/* The "peaks" object of a results file. */
void bench_json_peaks(cJSON *o, const bench_peaks *p);

/* Write the document o to path, creating its parent directories.
 * CT_ERR_IO with the path and errno's message. */
ct_status bench_write_doc(const cJSON *o, const char *path, ct_err *err);

/* A CSV field: s quoted where it needs it; ",value" in fmt, or "," alone
 * for a value not measured. */
void bench_csv_string(FILE *f, const char *s);
void bench_csv_num(FILE *f, double v, const char *fmt);

/* A Markdown cell: " 1.23 |", " - |" when not measured; a ratio a / b. */
void bench_md_time(FILE *f, double us);
void bench_md_ratio(FILE *f, double a, double b);

/* dir/<device slug>-<name slug>-b<batch><suffix>.json into buf; returns buf. */
char *bench_results_file(const char *dir, const char *device_name, const char *name, int batch,
                         const char *suffix, char *buf, size_t size);

#endif
