/*
 * probe_util.h: what the probes (sep_probe.c, irb_probe.c) share: a probe
 * is a bench program that times a kernel of its own, compiled at run time,
 * against convs served by libconvtune. Any failure ends the program with a
 * message on stderr, prefixed with probe_name.
 */
#ifndef CT_BENCH_PROBE_UTIL_H
#define CT_BENCH_PROBE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "convtune/convtune.h"
#include "core/rng.h"
#include "gpu/device.h"

/* The program's name in its messages ("sep_probe"). */
extern const char *probe_name;

/* "NAME: what: msg", then exit 1. */
void probe_fail(const char *what, const char *msg);

/* A CUDA call that must succeed: else "NAME: call: error (line L)", exit 1. */
void probe_check(cudaError_t e, const char *call, int line);
#define CK(x) probe_check((x), #x, __LINE__)

/* The probe's kernel source, bench/FILE of the source tree: argv[2] when
 * given, else $CT_SOURCE_DIR, else the current directory. */
char *probe_source(int argc, char **argv, const char *file);

/* n bytes of host memory h copied into a new device buffer (16 bytes when n
 * is 0). */
void *probe_dev_copy(const void *h, size_t n);

/* n random bytes from r into p. */
void probe_random_bytes(rng *r, int8_t *p, size_t n);

/* w's params block (quant_params: the layout every kernel reads) for values
 * q and weights (malloc'ed, quant_params_words(w) words). */
int32_t *probe_make_params(const ct_workload *w, const ct_quant *q, const int8_t *weights);

/* --compile's device, with no GPU: the H200's sm_90 and 132 SMs. */
void probe_sm90(device *dev);

/* The GPU (device 0) into *dev, the tuned database db opened into *ctx, and
 * a stream. */
void probe_open(const char *db, device *dev, ct_context **ctx, cudaStream_t *st);

/* MobileNetV2's QDQ nodes at batch n, channels-last, int8 in and out, a
 * bias, per-channel scales and ONNX Runtime's rounding: *w the depthwise
 * 3x3 (c channels, h x h, stride s, padding 1); *p the 1x1 conv of k
 * channels that reads its output, with a residual when res. */
void probe_mnv2_dw(ct_workload *w, int n, int c, int h, int s);
void probe_mnv2_pw(ct_workload *p, const ct_workload *dw, int k, int res);

/* A captured graph of `copies` launches: instantiated, replayed 6 times
 * (the first a warm-up), its best replay per copy in us; the graph is
 * destroyed. */
double probe_replay_best_us(cudaStream_t st, cudaGraph_t g, int copies);

#endif
