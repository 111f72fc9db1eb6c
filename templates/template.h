/*
 * template.h: kernel templates and their instances.
 *
 * A template is a named, versioned family of kernels: a CUDA source that
 * NVRTC compiles (embedded at build time: the .cu files of templates/ and their .cuh headers) and
 * a C descriptor that builds its knob space for a workload, rejects invalid
 * configs before any compile, and computes the launch geometry. Its version
 * is a hash of the source it compiles (the .cu and every embedded .cuh).
 *
 * An instance is template + workload + config + architecture made concrete:
 * every knob and shape as a -D option, grid, block, dynamic shared memory and
 * the kernel's arguments. instance_make is the one function that builds it,
 * used by the tuner and the dispatch library alike, so that what was
 * measured is exactly what runs.
 */
#ifndef CT_TEMPLATES_TEMPLATE_H
#define CT_TEMPLATES_TEMPLATE_H

#include <stddef.h>

#include "core/arch.h"
#include "core/workload.h"
#include "space/space.h"

#define INSTANCE_MAX_OPTIONS 96
#define INSTANCE_OPTION_MAX  48
#define INSTANCE_MAX_ARGS    8
#define TEMPLATE_WHY_MAX     160

/* What each kernel argument is; the launcher passes the matching pointer,
 * or for ARG_DATA_TMAP / ARG_WEIGHTS_TMAP / ARG_OUT_TMAP a TMA tensor map
 * (CUtensorMap, by value) of the data / weights / output pointer as the
 * instance's tmap / wtmap / otmap describes it. */
typedef enum kernel_arg {
  ARG_DATA,
  ARG_WEIGHTS,
  ARG_OUT,
  ARG_PARAMS,
  ARG_RESIDUAL,
  ARG_DATA_TMAP,
  ARG_WEIGHTS_TMAP,
  ARG_OUT_TMAP
} kernel_arg;

/* A TMA tensor map: elements of elem_bytes (4: 32-bit words, 1: bytes),
 * dims[0] contiguous, strides (in bytes, multiples of 16) of dims 1..,
 * traversal strides (elements) and the shared-memory swizzle (0, 32, 64 or
 * 128 bytes). Tiled (im2col 0): the box loaded per copy. im2col (1): the
 * tensor is (C, W, H[, D], N); each copy loads pixels rows of channels
 * elements, walking the pixels of the bounding box whose corners are
 * lower[] and upper[] (W first, offsets from the first and last pixel). */
#define TMAP_MAX_RANK 5
typedef struct tmap_desc {
  int rank;
  int elem_bytes;
  int swizzle;
  int im2col;
  unsigned long long dims[TMAP_MAX_RANK];
  unsigned long long strides[TMAP_MAX_RANK - 1];
  unsigned box[TMAP_MAX_RANK];
  unsigned elem_strides[TMAP_MAX_RANK];
  int lower[TMAP_MAX_RANK - 2], upper[TMAP_MAX_RANK - 2];
  unsigned channels, pixels;
} tmap_desc;

typedef struct instance {
  const struct template_desc *tpl;
  char kernel_name[48]; /* extern "C" name in the source */
  int n_options;        /* NVRTC options: -D for every knob and shape */
  char options[INSTANCE_MAX_OPTIONS][INSTANCE_OPTION_MAX];
  unsigned grid[3], block[3];
  size_t smem_bytes; /* dynamic shared memory */
  int n_args;
  kernel_arg args[INSTANCE_MAX_ARGS];
  int arch_specific; /* 1: compile for the architecture's "a" variant (sm_90a: wgmma, setmaxnreg) */
  /* 1: the kernel touches global memory only after griddepcontrol.wait
   * (sm_90), so it is launched with programmatic stream serialization: its
   * blocks may start, and run their prologue, while the previous kernel on
   * the stream finishes (that kernel lets them once all its blocks run) */
  int pdl;
  tmap_desc tmap;    /* for an ARG_DATA_TMAP argument */
  tmap_desc wtmap;   /* for an ARG_WEIGHTS_TMAP argument */
  tmap_desc otmap;   /* for an ARG_OUT_TMAP argument */
} instance;

typedef struct template_desc {
  const char *name;   /* "conv2d_nchw4c_dp4a" */
  const char *source; /* embedded file name, "conv2d_nchw4c_dp4a.cu" */
  ct_op op;
  ct_layout layout;
  /* Whether the template can run w at all (op, layout, dtypes); why says
   * why not (buffer of TEMPLATE_WHY_MAX). */
  int (*supports)(const ct_workload *w, char *why);
  /* Build the knob space for w into out (initialised by the caller). */
  ct_status (*space)(const ct_workload *w, space *out, ct_err *err);
  /* 1 if cfg can run on a (threads, shared memory, registers, grid), else 0
   * with the first reason in why. Cheap: called millions of times when
   * sampling. */
  int (*valid)(const ct_workload *w, const space *s, const config *cfg, const arch *a, char *why);
  /* Fill inst for a valid cfg (everything but tpl). */
  ct_status (*instance)(const ct_workload *w, const space *s, const config *cfg, const arch *a,
                        instance *inst, ct_err *err);
  /* Optional (NULL): derived sizes of cfg for the cost model (threads,
   * shared memory, accumulators, ...) into out, at most max; returns the
   * count, the same for every config of a space. */
  int (*describe)(const ct_workload *w, const space *s, const config *cfg, float *out, int max);
  /* Optional (NULL): a good valid config for w on a without tuning, into
   * out; 0 when it has none. Without it the dispatch library's default
   * scores a sample of valid configs (dispatch/resolve.c). */
  int (*preferred)(const ct_workload *w, const space *s, const arch *a, config *out);
} template_desc;

/* What the convolution descriptors share (templates/template.c). */

/* Why a channel-packed template of op cannot run w (another op, a layout
 * other than nchw4c / ncdhw4c, non-int8 weights, groups), or NULL. */
const char *template_conv_refusal(const ct_workload *w, ct_op op);
/* Write the reason (fmt with two longs) into why when not NULL; returns 0,
 * for valid() hooks. */
int template_fail(char *why, const char *fmt, long a, long b);
/* Append "-DNAME=VALUE" (dropped past INSTANCE_MAX_OPTIONS: instance hooks
 * check n_options at the end). */
void instance_opt(instance *inst, const char *name, long value);
/* The options of w's shape (CT_N, CT_C4, CT_K4, per dimension CT_I, CT_K,
 * CT_STR_, CT_PAD_, CT_PADA_, CT_DIL_, CT_O) and epilogue (CT_KR, CT_COUT,
 * CT_DATA_U8, CT_OUT, CT_OFF, CT_ZD, CT_WZP, CT_QC, CT_RES, CT_D2S,
 * CT_D2S_CRD, CT_D2S_3D, CT_ONNX), which templates/conv_shape.cuh checks; and the
 * five arguments (data, weights, out, params, residual). */
void instance_conv_options(instance *inst, const ct_workload *w);
void instance_conv_args(instance *inst);
/* t as a tiled map of a row-major matrix of rows x cols elements of
 * elem_bytes (rows contiguous), boxes of box_cols x box_rows, with the
 * shared-memory swizzle (0, 32, 64, 128 bytes). */
void tmap_tiled2(tmap_desc *t, int elem_bytes, int swizzle, unsigned long long cols,
                 unsigned long long rows, unsigned box_cols, unsigned box_rows);

/* Set cfg's choice knob name to value: 0 when the space lacks either (for
 * the descriptors' preferred hooks). */
int template_set_choice(const space *s, config *cfg, const char *name, int value);

/* Every template, NULL-terminated. */
const template_desc *const *template_all(void);
/* The template named name, or NULL. */
const template_desc *template_find(const char *name);

/* The source NVRTC compiles for tpl (static, NUL-terminated), and the
 * embedded headers it may include: names and sources, n_headers of them.
 * Borrowed, static. */
const char *template_source(const template_desc *tpl);
int template_headers(const char *const **names, const char *const **sources);

/* Any embedded file of templates/ by name (e.g. "ref_conv.cu", the GPU
 * reference kernel), or NULL. Static. */
const char *template_embedded(const char *file);

/* The template's version: 16 hex digits of the SHA-256 of its source, every
 * embedded header and the C descriptors (computed at build time); static. */
const char *template_version(const template_desc *tpl);

/* Build tpl's space for w: CT_ERR_UNSUPPORTED when tpl cannot run w. */
ct_status template_space(const template_desc *tpl, const ct_workload *w, space *out, ct_err *err);

/* Validate cfg and make its instance: CT_ERR_INVALID_ARG with the reason when
 * cfg is not valid on a. */
ct_status instance_make(const template_desc *tpl, const ct_workload *w, const space *s,
                        const config *cfg, const arch *a, instance *out, ct_err *err);

/* A uniformly random valid config by rejection sampling from the whole
 * space (uniform over the valid ones), at most max_tries draws:
 * CT_ERR_NOT_FOUND when none was valid. */
ct_status template_sample(const template_desc *tpl, const ct_workload *w, const space *s,
                          const arch *a, rng *r, long max_tries, config *out, ct_err *err);

/* The share of valid configs, estimated from n uniform draws. */
double template_valid_share(const template_desc *tpl, const ct_workload *w, const space *s,
                            const arch *a, rng *r, long n);

/* A valid neighbour of cfg (one knob changed), at most max_tries draws;
 * CT_ERR_NOT_FOUND when none was found. */
ct_status template_neighbor(const template_desc *tpl, const ct_workload *w, const space *s,
                            const arch *a, rng *r, const config *cfg, long max_tries, config *out,
                            ct_err *err);

#endif
