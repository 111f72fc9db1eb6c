/*
 * template.h: kernel templates and their instances.
 *
 * A template is a named, versioned family of kernels: a CUDA source that
 * NVRTC compiles (embedded at build time: the .cu files of templates/ and their .cuh headers) and
 * a C descriptor that builds its knob space for a workload, rejects invalid
 * configs before any compile, and computes the launch geometry. Its version
 * is a hash of the source it compiles (the .cu and every embedded .cuh).
 * A family (one descriptor, a conv2d and a conv3d template, TEMPLATE_PAIR)
 * is declared by a knob table: each knob's name, values and default; the
 * kernel's macro is the name in upper case.
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
  tmap_desc tmap;  /* for an ARG_DATA_TMAP argument */
  tmap_desc wtmap; /* for an ARG_WEIGHTS_TMAP argument */
  tmap_desc otmap; /* for an ARG_OUT_TMAP argument */
} instance;

/* One knob of a template family, a row of its knob table. The name is
 * what tuning databases store and must never change; the kernel's macro is
 * the name in upper case (block_n -> BLOCK_N), and for a split one macro a
 * part, NAME_<letter> (tile_f, parts "BVTI" -> TILE_F_B ... TILE_F_I).
 * The table's order is the space's order: it decides config indices and
 * sampling, so rows are only ever appended. A table ends with a row whose
 * name is NULL. */
typedef struct knob_def {
  const char *name;
  knob_kind kind;
  const int *values; /* choice: the candidates */
  int n_values;
  int dflt;          /* choice: the value where w's space has no such knob */
  const char *parts; /* split: one letter a part; its length is the part count */
  /* split: the axis extent; reorder: the axis count; NULL for a choice */
  int (*extent)(const ct_workload *w);
  /* whether w's space has the knob; NULL: always */
  int (*when)(const ct_workload *w);
  int only3d; /* 1: conv3d's template has it, conv2d's never */
} knob_def;

/* Table rows: a choice knob (values is a static int array), one present
 * only where when(w), one of conv3d only, a split of extent(w) into
 * strlen(parts) factors (of conv3d only), a reorder of extent(w) axes. */
#define KNOB(name, values, dflt)                                                                   \
  { name, KNOB_CHOICE, values, (int)(sizeof values / sizeof values[0]), dflt, NULL, NULL, NULL, 0 }
#define KNOB_IF(name, values, dflt, when)                                                          \
  { name, KNOB_CHOICE, values, (int)(sizeof values / sizeof values[0]), dflt, NULL, NULL, when, 0 }
#define KNOB_3D(name, values, dflt)                                                                \
  { name, KNOB_CHOICE, values, (int)(sizeof values / sizeof values[0]), dflt, NULL, NULL, NULL, 1 }
#define KNOB_SPLIT(name, parts, extent)                                                            \
  { name, KNOB_SPLIT, NULL, 0, 1, parts, extent, NULL, 0 }
#define KNOB_SPLIT_3D(name, parts, extent)                                                         \
  { name, KNOB_SPLIT, NULL, 0, 1, parts, extent, NULL, 1 }
#define KNOB_REORDER(name, extent)                                                                 \
  { name, KNOB_REORDER, NULL, 0, 0, NULL, extent, NULL, 0 }
#define KNOB_END                                                                                   \
  { NULL, KNOB_CHOICE, NULL, 0, 0, NULL, NULL, NULL, 0 }

/* Add knobs's rows that w has to s, in table order. */
ct_status knobs_space(const knob_def *knobs, const ct_workload *w, space *s, ct_err *err);
/* The value of choice knob name in cfg, or its table default where s has
 * no such knob. name must be a choice row of knobs (asserted). */
int knobs_get(const knob_def *knobs, const space *s, const config *cfg, const char *name);
/* Append every choice knob's -DNAME=value (the default where s lacks it)
 * and every split's -DNAME_<part>=factor (1s where s lacks it). Reorder
 * knobs map to the kernel's loop order, which their family emits. */
void knobs_options(const knob_def *knobs, const space *s, const config *cfg, instance *inst);
/* The macro of a knob (name in upper case) into buf. Returns buf. */
char *knob_macro(const char *name, char *buf, size_t size);

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
   * scores a sample of valid configs (resolve/resolve.c). */
  int (*preferred)(const ct_workload *w, const space *s, const arch *a, config *out);
  /* The family's knob table (its space, defaults and -D options), or NULL
   * for a template whose space hook builds its own. */
  const knob_def *knobs;
} template_desc;

/* What the convolution descriptors share (templates/template.c). */

/* Why a channel-packed template of op cannot run w (another op, a layout
 * other than nchw4c / ncdhw4c, non-int8 weights, groups), or NULL. */
const char *template_conv_refusal(const ct_workload *w, ct_op op);
/* Write the reason (fmt with two longs) into why when not NULL; returns 0,
 * for valid() hooks. */
int template_fail(char *why, const char *fmt, long a, long b);
/* supports() of a family whose refusal says why it cannot run w as op
 * (NULL: it can): the reason into why when not NULL; 1 when it can. */
int template_supports(const ct_workload *w, ct_op op,
                      const char *(*refusal)(const ct_workload *w, ct_op op), char *why);
/* template_supports for a family whose refusal also decides about a fused
 * pointwise convolution (w->pre_c), which template_supports refuses. */
int template_supports_pre(const ct_workload *w, ct_op op,
                          const char *(*refusal)(const ct_workload *w, ct_op op), char *why);
/* The validity checks the families share; each returns 1 when it passes,
 * else template_fail's 0 with the reason. wgmma: exactly sm_90 (sm_90a). */
int template_need_sm90(const arch *a, char *why);
/* regs per thread within what threads-thread blocks get, blocks_per_sm of
 * them on one SM (the allocation is per warp in units of 8), and 255. */
int template_regs_fit(const arch *a, long threads, long blocks_per_sm, long regs, char *why);
/* acc accumulators per thread at most 128 (name value x block_n: the
 * knob that multiplies them); beyond, a thread spills. */
int template_acc_fits(long acc, const char *name, long value, char *why);
/* Blocks of threads threads and smem_bytes of shared memory: within the
 * block limits, and blocks_per_sm of them within an SM's shared memory (1
 * KB a block is the runtime's) and 2048 threads. */
int template_blocks_fit(const arch *a, long threads, long blocks_per_sm, long smem_bytes,
                        char *why);
/* The estimate-based families (dp4a, mma): regs per thread within 255
 * and the block's registers, smem_bytes within the opt-in limit. */
int template_block_fits(const arch *a, long threads, long regs, long smem_bytes, char *why);
/* The cost model's features: log2 of the n values v into out, at most
 * max; returns the count written. */
int template_features(const double *v, int n, float *out, int max);
/* For the preferred hooks: raise out's split_k to 2, 4, 8 while tiles
 * blocks times the split leave more than half of sms SMs idle and the
 * config stays valid. */
void template_grow_split(const ct_workload *w, const space *s, const arch *a, long tiles, long sms,
                         int (*valid)(const ct_workload *w, const space *s, const config *cfg,
                                      const arch *a, char *why),
                         config *out);
/* A tile of tile along an extent of have (unit names it): not when tile is
 * above floor and at least twice have (half the tile would be padding). */
int template_tile_fits(const char *name, long tile, long floor, long have, const char *unit,
                       char *why);

/* Declare a family's pair of templates, tpl_<name2d> (conv2d) and
 * tpl_<name3d> (conv3d), sources <name>.cu, from its layout, knob table,
 * refusal (template_supports) and hooks. Defines the static functions
 * name2d##_supports, name3d##_supports and name2d##_space. */
#define TEMPLATE_PAIR(name2d, name3d, layout_, knobs_, refusal_, valid_, instance_, describe_,     \
                      preferred_)                                                                  \
  static int name2d##_supports(const ct_workload *w, char *why) {                                  \
    return template_supports(w, CT_OP_CONV2D, refusal_, why);                                      \
  }                                                                                                \
  static int name3d##_supports(const ct_workload *w, char *why) {                                  \
    return template_supports(w, CT_OP_CONV3D, refusal_, why);                                      \
  }                                                                                                \
  static ct_status name2d##_space(const ct_workload *w, space *s, ct_err *err) {                   \
    return knobs_space(knobs_, w, s, err);                                                         \
  }                                                                                                \
  const template_desc tpl_##name2d = {.name = #name2d,                                             \
                                      .source = #name2d ".cu",                                     \
                                      .op = CT_OP_CONV2D,                                          \
                                      .layout = layout_,                                           \
                                      .supports = name2d##_supports,                               \
                                      .space = name2d##_space,                                     \
                                      .valid = valid_,                                             \
                                      .instance = instance_,                                       \
                                      .describe = describe_,                                       \
                                      .preferred = preferred_,                                     \
                                      .knobs = knobs_};                                            \
  const template_desc tpl_##name3d = {.name = #name3d,                                             \
                                      .source = #name3d ".cu",                                     \
                                      .op = CT_OP_CONV3D,                                          \
                                      .layout = layout_,                                           \
                                      .supports = name3d##_supports,                               \
                                      .space = name2d##_space,                                     \
                                      .valid = valid_,                                             \
                                      .instance = instance_,                                       \
                                      .describe = describe_,                                       \
                                      .preferred = preferred_,                                     \
                                      .knobs = knobs_}
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

/* 1 when some registered template (template_all) of w's op runs w: takes
 * w's layout by workload_for_layout, as the tuner and resolve pick them,
 * and supports that workload; else 0. What model_opts.fuse_pre asks before
 * a model's pointwise conv is fused into the conv it feeds. */
int template_any_supports(const ct_workload *w);

#endif
