/*
 * kernel_check.h: what the template families' CPU tests share: the loop
 * that draws configs of a shape, fills random tensors and params, runs a
 * family's CPU emulation of its kernel and checks it byte for byte against
 * reference_qconv, every output written once (test_dw_nhwc.c,
 * test_dw_mma.c); the loop that compiles a shape's configs for sm_90 and
 * sm_80 (those and test_grouped_nhwc.c); the depthwise shapes and
 * epilogues; an instance's NVRTC macros.
 */
#ifndef CT_TESTS_KERNEL_CHECK_H
#define CT_TESTS_KERNEL_CHECK_H

#include <stdint.h>

#include "core/rng.h"
#include "templates/template.h"

/* A depthwise conv2d (d3 = 0) or conv3d workload, channels-last, K = m x C,
 * every spatial axis in, ker, str, pad. */
ct_workload dw_shape(int d3, int n, int c, int m, int in, int ker, int str, int pad);

/* The epilogues, e % 4: int32 with bias; int8 per-channel with a residual;
 * uint8 data and output with a data zero point, bias and residual; onnx
 * rounding with a data zero point and a residual. */
void dw_epilogue(ct_workload *w, int e);

/* What an emulated kernel writes as output o (channel k) of w, its int32 sum
 * v: v itself, or the requantized byte of the folded params (the residual's
 * byte res[o] where res is not NULL); counted in writes[o]. */
void emulated_store(const ct_workload *w, const int32_t *params, long o, long k, int32_t v,
                    const unsigned char *res, void *out, int *writes);

/* A family's test: its shapes (case i), the epilogue rotation (e), the
 * template of a workload, and (for emulations_match) its kernel
 * emulated on the CPU: x the data,
 * wt the weights, params the folded block, res the residual (NULL: none);
 * out in w's output type, writes[o] counted for each output written, *bad
 * the reads the kernel must never make; noise for what the kernel leaves
 * unwritten (its staged slack). */
typedef struct tpl_family {
  ct_workload (*shape)(int i);
  void (*epilogue)(ct_workload *w, int e);
  const template_desc *(*tpl_of)(const ct_workload *w);
  void (*emulate)(const ct_workload *w, const space *s, const config *cfg, const unsigned char *x,
                  const signed char *wt, const int32_t *params, const unsigned char *res, void *out,
                  int *writes, long *bad, rng *noise);
  const char *bad_reads; /* what *bad counts, for the failure message */
} tpl_family;

/* Case i: draws configs (the first the preferred one, then sampled; the
 * epilogue rotating from i), each emulated and checked; seeds from seed. */
void emulations_match(const tpl_family *f, int i, int draws, unsigned seed);

/* Case i: per configs (the preferred one, then sampled) compile for sm_90
 * and then sm_80, the epilogue e = d + arch_step x arch + i for draw d;
 * no_spills: ptxas's log must show no stack frame; must_option (or NULL):
 * an NVRTC option every instance must carry once. */
void configs_compile(const tpl_family *f, int i, int per, unsigned seed, int arch_step,
                     int no_spills, const char *must_option);

/* A config past valid(): w's preferred config with knob_name set to value is
 * refused with why_part in the reason, and its instance, compiled anyway,
 * fails its static_assert with log_part in NVRTC's log. */
void invalid_point_fails_to_compile(const ct_workload *w, const char *knob_name, int value,
                                    const char *why_part, const char *log_part,
                                    const template_desc *tpl);

/* The value of -DNAME= in inst's options (the test fails when absent). */
long instance_macro(const instance *inst, const char *name);

#endif
