/*
 * runner.h: measuring configs on the GPU in a worker process.
 *
 * The worker is a child process that owns the CUDA context, so that a kernel
 * that faults (a sticky error) or hangs kills only the worker: the parent
 * records the outcome, starts a new worker, sets the task up again and goes
 * on. The parent never touches CUDA.
 *
 * Per task (one workload in a layout the templates run: packed NCHW4c /
 * NCDHW4c, or channels-last NHWC / NDHWC; any epilogue): device buffers
 * allocated once, random inputs (never zeros) and epilogue values
 * (quant_random from the seed, or the task's entry in opts.values), the
 * reference output computed once on the
 * GPU by a simple direct kernel of the unfolded formula in the task's
 * layout (itself tested against the CPU reference), and an L2 flush
 * buffer. Per trial: load the cubin, poison the output, one run, compare on
 * the GPU word by word (exact: an int32 element, or 4 bytes of an 8-bit
 * output), then time: a
 * warm-up, then `number` launches captured into a CUDA graph, `number`
 * grown until one replay lasts min_repeat_ms, `repeats` replays timed with
 * CUDA events, L2 flushed before each replay when the working set fits in
 * L2; the median per launch is kept with all samples. Replayed, the
 * launches run back to back on the GPU: launched one by one from the host
 * (a few us each, with the tensor maps encoded) a kernel shorter than that
 * would be timed by the host's pace, not its own.
 */
#ifndef CT_TUNER_RUNNER_H
#define CT_TUNER_RUNNER_H

#include "core/quant.h"
#include "db/db.h"
#include "gpu/device.h"
#include "templates/template.h"

typedef struct runner_opts {
  int device;           /* CUDA ordinal (0) */
  double timeout_s;     /* per trial, from sending it to its result (5) */
  double min_repeat_ms; /* a repeat lasts at least this (1.0) */
  int repeats;          /* timed repeats (5) */
  int max_number;       /* launches per repeat at most (1000) */
  int flush_l2;         /* flush L2 before each repeat when the working set fits (1) */
  uint64_t seed;        /* inputs */
  /* Epilogue values by workload (core/quant.h), or NULL: a task whose key
   * has an entry runs with those values instead of quant_random's, so that
   * a model's trials run the epilogue forms its convs are served with
   * (tune --model). Borrowed: alive while the runner is (its workers are
   * forked, and read their copy). */
  const quant_table *values;
} runner_opts;

void runner_opts_default(runner_opts *o);

/* The result of one trial. */
typedef struct run_result {
  outcome outcome;
  double median_us; /* OK only */
  int n_samples;
  double samples_us[16]; /* per-launch time of each repeat */
  int number;            /* launches per repeat */
  char error[1024];      /* outcome detail: CUDA message, first mismatch, ... */
} run_result;

typedef struct runner runner;

/* Start a worker on o->device and identify it. CT_ERR_NO_DEVICE with a clear
 * message when there is no GPU. Owned: runner_stop. */
ct_status runner_start(const runner_opts *o, runner **out, device *dev, ct_err *err);

/* Set the task up: w must be a valid workload of layout nchw4c (ncdhw4c)
 * or nhwc (ndhwc), int8 weights, any groups (CT_ERR_UNSUPPORTED otherwise).
 * Replaces the previous task and its buffers. */
ct_status runner_set_task(runner *r, const ct_workload *w, ct_err *err);

/* Measure one compiled instance. A failing config is an outcome in *res, not
 * an error; the return is not CT_OK only when the worker could not be
 * (re)started or the task set up again, or (CT_ERR_INVALID_ARG) when
 * inst's template runs another layout than the task's. */
ct_status runner_measure(runner *r, const instance *inst, const void *cubin, size_t size,
                         run_result *res, ct_err *err);

/* Copy the task's inputs and its GPU reference output back to the host:
 * data (workload_data_elems bytes), weights (workload_weight_elems bytes),
 * the residual (workload_out_elems bytes; only when the task has one, else
 * residual may be NULL) and out (workload_out_elems elements of
 * workload_out_elem_bytes), all in the task's layouts (packed, or NHWC with
 * OHWI weights), so that a test can check the GPU reference against the
 * CPU one. The epilogue's values are the task's entry in opts.values, else
 * quant_random(task, opts.seed). The caller owns the buffers.
 * CT_ERR_INVALID_ARG without a task. */
ct_status runner_reference(runner *r, void *out, void *data, int8_t *weights, void *residual,
                           ct_err *err);

/* The number of CUDA devices, counted in a child process (the caller's
 * process initialises no CUDA): 0 with no GPU or driver; -1 (err set) when
 * the child could not run or answer. */
int runner_device_count(ct_err *err);

/* How many times the worker was replaced (after faults and timeouts). */
int runner_restarts(const runner *r);

void runner_stop(runner *r);

#endif
