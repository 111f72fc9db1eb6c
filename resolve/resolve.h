/*
 * resolve.h: which config a workload gets, and why: the lookup and fallback
 * order of the dispatch library, separate from loading and launching so
 * that it can be tested without a GPU. A module of its own below both the
 * dispatch (which runs what it picks) and the tuner (whose first trial of a
 * workload is what the dispatch would run for it untuned).
 *
 * Order: (0) the workload's pick on this device (db.h: the config that made
 * a model's chain fastest among its fastest few, chosen by tune --model),
 * unless a faster record of it on this device came after the pick, (1) the
 * best OK record of this workload on this device, (2) on any
 * device of the same compute capability, (3) the best config of the nearest
 * tuned workload (same template and version, and the same kind: dense,
 * depthwise or grouped) that is valid for this one,
 * (4) a heuristic default. A config carried to another workload keeps the
 * shape of its blocks and takes the number of blocks from the new extents;
 * knobs the new workload's space lacks are dropped and those the config
 * lacks come from the template's default, or where those do not fit, the
 * first values that do (an int32 record serves an 8-bit twin, whose space
 * adds the 8-bit epilogue's knobs, and the reverse). Records count only
 * when their template version is the one compiled into this library: a
 * version covers the kernel source and its descriptor, so an old record's
 * geometry could be wrong.
 */
#ifndef CT_RESOLVE_RESOLVE_H
#define CT_RESOLVE_RESOLVE_H

#include "db/db.h"
#include "templates/template.h"

typedef struct resolution {
  ct_explanation ex;
  const template_desc *tpl;
  ct_workload pw; /* the workload the kernel runs: w, or nchw w packed with C and K padded to 4 */
  space s;        /* pw's space, owned */
  config cfg;
  trial rec; /* the record used; zeroed for the default. Owned: resolution_free */
} resolution;

/* Resolve w (valid, any layout) for device dev (name "" for an architecture
 * without a device) with limits a. d may be NULL (no database: default).
 * Only templates of w's layout serve it: the channel-packed ones serve
 * nchw4c, and nchw packed (out->pw); the channels-last ones serve nhwc, as
 * it is; records count under the key of that workload. CT_ERR_UNSUPPORTED
 * when no template runs w, naming the refusals (e.g. an nhwc stem), or
 * when none that runs it has a valid config on a, naming why and, for a
 * channels-last w the channel-packed templates run there, that layout
 * (before sm_90, nhwc's dense layers with C % 16 == 0 and K % 8 == 0, the
 * 1x1 ones aside, have only the wgmma templates). */
ct_status resolve(db *d, const db_device *dev, const arch *a, const ct_workload *w, resolution *out,
                  ct_err *err);
void resolution_free(resolution *r);

/* w (valid, any layout) run by template_name with config_json (a record's
 * knob values, adapted to w's space as a nearest workload's are): for a
 * caller that chose the config itself (the chain refinement's candidates,
 * dispatch_pin). CT_ERR_INVALID_ARG for an unknown template or a config not
 * valid for w, CT_ERR_UNSUPPORTED when the template does not run w. */
ct_status resolve_config(const ct_workload *w, const char *template_name, const char *config_json,
                         const arch *a, resolution *out, ct_err *err);

/* Step (3) alone, for one template: the best config of the nearest tuned
 * workload other than pw (tpl's current version; this device's records,
 * else its compute capability's) that is valid for pw, into *out, and that
 * workload's key into key (key_size bytes, may be NULL); *found 1 if
 * there is one. It is what the dispatch runs for pw while pw itself has no
 * record, so the tuner measures it first. d may be NULL (none found).
 * Fails only when pw's space cannot be built. */
ct_status resolve_nearest(db *d, const db_device *dev, const arch *a, const template_desc *tpl,
                          const ct_workload *pw, config *out, char *key, size_t key_size,
                          int *found, ct_err *err);

/* For the tuner too, outside the dispatch's order: pw's own best record
 * under a version of tpl other than the current one (a change of the
 * template or its headers retired it; this device's, else its compute
 * capability's), adapted to the current space as a nearest workload's
 * config is, into *out; *found 1 when it is valid there. The dispatch never
 * runs it (its geometry may be the old kernel's); the tuner measures it
 * first, so that a template change does not lose a config that was best.
 * d may be NULL (none found). Fails only when pw's space cannot be built. */
ct_status resolve_retired(db *d, const db_device *dev, const arch *a, const template_desc *tpl,
                          const ct_workload *pw, config *out, int *found, ct_err *err);

/* The heuristic default for pw: among a fixed sample of valid configs (the
 * same every time), the one whose shape is closest to what tuning finds good
 * on dp4a templates: 128-256 threads, a register tile of about 8
 * accumulators, no vthreads, enough blocks for every SM, spatial threads
 * fastest. Never one thread per block. */
ct_status resolve_default(const template_desc *tpl, const ct_workload *pw, const space *s,
                          const arch *a, config *out, ct_err *err);

/* The distance between two workloads of one op, for "nearest": differing
 * kernel, stride, dilation or padding weigh most, then the log2 ratios of
 * batch, channels and sizes, then (0.25 each) another data type, output
 * type or epilogue on the same shape. */
double resolve_distance(const ct_workload *a, const ct_workload *b);

/* Fusion, decided by records: whether the fused workload w (w->pre_c > 0)
 * is predicted to run faster in a chain of layers than its two convs apart
 * (workload_pre(w), then workload_main(w)). The pair pays its two kernels'
 * best records and one more launch (RESOLVE_FUSE_LAUNCH_US: what a node
 * costs a chain over its time alone, measured on MobileNetV2 at batch 32);
 * the fused node pays its own record. The intermediate tensor the fused
 * node never writes is not credited: reused buffers changed no chain, and
 * fused nodes still paid the chain 1.5-7 us each over their time alone
 * (MobileNetV2 b32 on the H200, bench/results/h200-issue35/
 * autofuse-97dc6a7: crediting its write-back at the DRAM's bandwidth fused
 * six pairs and cost the chain 25 us). Records are resolve's steps (1) and
 * (2) only: a nearest workload's time says nothing of this one. An
 * estimate, not a measurement. */
#define RESOLVE_FUSE_LAUNCH_US 1.0
typedef struct fuse_estimate {
  int known;                        /* 1: all three workloads have records */
  double fused_us, pre_us, main_us; /* their best records' medians; 0: none */
  double mid_bytes;                 /* the intermediate tensor (reported, not credited) */
  double gain_us;                   /* pre + main + launch - fused; > 0: fuse */
  char why[224]; /* one line: the decision and its terms, or which record is missing */
} fuse_estimate;

/* Fill *out for w on dev (d may be NULL: nothing known). Fails only for a
 * workload that is not a valid fused one; a workload no template runs is
 * "not known" (its why says so). */
ct_status resolve_fuse_estimate(db *d, const db_device *dev, const arch *a, const ct_workload *w,
                                fuse_estimate *out, ct_err *err);

#endif
