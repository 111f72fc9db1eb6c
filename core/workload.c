/*
 * workload.c: validation, derived sizes, the canonical key and the JSON form
 * of a workload (see workload.h for the key's grammar).
 *
 * Every message names the field and the accepted range, so that a user can
 * fix the input from the message alone. Key and JSON parsing go through
 * workload_validate, so a parsed workload is always a valid one. Sizes are
 * computed in int64: a workload that would overflow int32 indexing is
 * rejected here rather than wrapped in a kernel.
 */
#include "core/workload.h"

#include "core/json.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dim_names2[] = {"h", "w"};
static const char *const dim_names3[] = {"d", "h", "w"};

static const char *dim_name(const ct_workload *w, int d) {
  return workload_nd(w) == 3 ? dim_names3[d] : dim_names2[d];
}

void workload_init(ct_workload *w, ct_op op) {
  memset(w, 0, sizeof *w);
  w->op = op;
  w->layout = CT_LAYOUT_NCHW;
  w->data_type = CT_DTYPE_INT8;
  w->weight_type = CT_DTYPE_INT8;
  w->out_type = CT_DTYPE_INT32;
  w->n = 1;
  w->groups = 1;
  for (int d = 0; d < CT_MAX_SPATIAL; d++) {
    w->stride[d] = 1;
    w->dilation[d] = 1;
  }
}

int workload_nd(const ct_workload *w) {
  return w->op == CT_OP_CONV3D ? 3 : 2;
}

const char *workload_op_name(ct_op op) {
  switch (op) {
  case CT_OP_CONV2D:
    return "conv2d";
  case CT_OP_CONV3D:
    return "conv3d";
  }
  return "?";
}

const char *workload_layout_name(ct_layout layout, ct_op op) {
  int is3 = op == CT_OP_CONV3D;
  switch (layout) {
  case CT_LAYOUT_NCHW:
    return is3 ? "ncdhw" : "nchw";
  case CT_LAYOUT_NCHW4C:
    return is3 ? "ncdhw4c" : "nchw4c";
  case CT_LAYOUT_NHWC:
    return is3 ? "ndhwc" : "nhwc";
  }
  return "?";
}

/* Every layout, in the order that messages list them. */
static const ct_layout all_layouts[] = {CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C, CT_LAYOUT_NHWC};
#define N_LAYOUTS ((int)(sizeof all_layouts / sizeof all_layouts[0]))

/* "nchw, nchw4c or nhwc" (conv3d: the 3D names) into buf. */
static const char *layout_list(ct_op op, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < N_LAYOUTS && len < size; i++) {
    const char *sep = i == 0 ? "" : ", ";
    if (i > 0 && i == N_LAYOUTS - 1) sep = " or ";
    len += snprintf(buf + len, size - len, "%s%s", sep, workload_layout_name(all_layouts[i], op));
  }
  return buf;
}

const char *workload_dtype_name(ct_dtype t) {
  switch (t) {
  case CT_DTYPE_INT8:
    return "int8";
  case CT_DTYPE_UINT8:
    return "uint8";
  case CT_DTYPE_INT32:
    return "int32";
  }
  return "?";
}

/* Short dtype names used in keys. */
static const char *dtype_code(ct_dtype t) {
  switch (t) {
  case CT_DTYPE_INT8:
    return "i8";
  case CT_DTYPE_UINT8:
    return "u8";
  case CT_DTYPE_INT32:
    return "i32";
  }
  return "?";
}

int64_t workload_out_size(const ct_workload *w, int d) {
  int64_t span = (int64_t)w->in[d] + w->pad_before[d] + w->pad_after[d] -
                 (int64_t)w->dilation[d] * (w->kernel[d] - 1) - 1;
  if (span < 0 || w->stride[d] <= 0) return span < 0 ? 0 : span;
  return span / w->stride[d] + 1;
}

/* a * b, saturated at INT64_MAX: counts of absurd workloads must not wrap
 * back under the int32 limit. Operands are >= 0. */
static int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t spatial_prod(const int *v, int nd) {
  int64_t p = 1;
  for (int d = 0; d < nd; d++) p = mul_sat(p, v[d] > 0 ? v[d] : 0);
  return p;
}

static int64_t out_pixels(const ct_workload *w) {
  int64_t p = 1;
  for (int d = 0; d < workload_nd(w); d++) p = mul_sat(p, workload_out_size(w, d));
  return p;
}

int workload_data_channels(const ct_workload *w) {
  return w->pre_c > 0 ? w->pre_c : w->c;
}

int64_t workload_data_elems(const ct_workload *w) {
  return mul_sat(mul_sat(w->n, workload_data_channels(w)), spatial_prod(w->in, workload_nd(w)));
}

void workload_pre(const ct_workload *w, ct_workload *pre) {
  workload_init(pre, w->op);
  pre->layout = w->layout;
  pre->data_type = w->pre_data_type;
  pre->out_type = w->data_type;
  pre->n = w->n;
  pre->c = w->pre_c;
  pre->k = w->c;
  for (int d = 0; d < workload_nd(w); d++) {
    pre->in[d] = w->in[d];
    pre->kernel[d] = 1;
  }
  pre->epi = w->pre_epi;
}

void workload_main(const ct_workload *w, ct_workload *main_conv) {
  *main_conv = *w;
  main_conv->pre_c = 0;
  main_conv->pre_data_type = CT_DTYPE_INT8;
  memset(&main_conv->pre_epi, 0, sizeof main_conv->pre_epi);
}

int64_t workload_weight_elems(const ct_workload *w) {
  /* packed weights always hold whole chunks of 4 output channels */
  int64_t k = w->layout == CT_LAYOUT_NCHW4C && w->k > 0 ? (w->k + 3) / 4 * 4 : w->k;
  int64_t cpg = workload_cpg(w);
  /* and whole chunks of 4 of a group's input channels (depthwise: 1 of 4 used) */
  if (w->layout == CT_LAYOUT_NCHW4C && w->groups > 1) cpg = (cpg + 3) / 4 * 4;
  return mul_sat(mul_sat(k, cpg), spatial_prod(w->kernel, workload_nd(w)));
}

int64_t workload_out_elems(const ct_workload *w) {
  /* the remapped output holds the same elements as the conv's; packed, its
   * channels are rounded up to 4 */
  int64_t per = w->epi.d2s_block >= 2 ? workload_d2s_volume(w) : 1;
  int64_t ch = w->k > 0 ? w->k / per : 0;
  if (w->layout == CT_LAYOUT_NCHW4C) ch = (ch + 3) / 4 * 4;
  return mul_sat(mul_sat(mul_sat(w->n, ch), out_pixels(w)), per);
}

int64_t workload_ops(const ct_workload *w) {
  int64_t conv_out = mul_sat(mul_sat(w->n, w->k), out_pixels(w));
  int64_t ops = mul_sat(
      2, mul_sat(mul_sat(conv_out, workload_cpg(w)), spatial_prod(w->kernel, workload_nd(w))));
  if (w->pre_c > 0) {
    ct_workload pre;
    workload_pre(w, &pre);
    int64_t pre_ops = workload_ops(&pre);
    ops = ops > INT64_MAX - pre_ops ? INT64_MAX : ops + pre_ops;
  }
  return ops;
}

int64_t workload_cpg(const ct_workload *w) {
  return w->groups > 1 ? w->c / w->groups : w->c;
}

void workload_geom(const ct_workload *w, geom3 *g) {
  int nd = workload_nd(w), off = 3 - nd;
  g->n = w->n;
  g->c = w->c;
  g->k = w->k;
  g->g = w->groups > 1 ? w->groups : 1;
  for (int d = 0; d < 3; d++) {
    g->in[d] = g->ker[d] = g->str[d] = g->dil[d] = g->out[d] = 1;
    g->pb[d] = g->pa[d] = 0;
  }
  for (int d = 0; d < nd; d++) {
    g->in[d + off] = w->in[d];
    g->ker[d + off] = w->kernel[d];
    g->str[d + off] = w->stride[d];
    g->pb[d + off] = w->pad_before[d];
    g->pa[d + off] = w->pad_after[d];
    g->dil[d + off] = w->dilation[d];
    g->out[d + off] = workload_out_size(w, d);
  }
}

void workload_packed(const ct_workload *w, ct_workload *out) {
  *out = *w;
  out->layout = CT_LAYOUT_NCHW4C;
  /* a grouped conv's channels cannot be padded without moving the groups:
   * it packs only when C and K are multiples of 4 (workload_for_layout) */
  if (w->groups > 1) return;
  out->c = (w->c + 3) / 4 * 4;
  /* depth_to_space maps real channels: K stays, the kernel pads the output */
  if (!w->epi.d2s_block) out->k = (w->k + 3) / 4 * 4;
}

int workload_for_layout(const ct_workload *w, ct_layout layout, ct_workload *out) {
  if (layout == w->layout) {
    *out = *w;
    return 1;
  }
  if (layout == CT_LAYOUT_NCHW4C && w->layout == CT_LAYOUT_NCHW &&
      (w->groups <= 1 || (w->c % 4 == 0 && w->k % 4 == 0 && !w->epi.d2s_block))) {
    const ct_workload plain = *w; /* out may be w */
    workload_packed(&plain, out);
    return 1;
  }
  return 0;
}

int workload_out_dims(const ct_workload *w, int64_t dims[CT_MAX_SPATIAL + 3]) {
  int nd = workload_nd(w), n_dims = 0;
  int64_t ch = workload_out_channels(w), b = w->epi.d2s_block ? w->epi.d2s_block : 1;
  dims[n_dims++] = w->n;
  if (w->layout == CT_LAYOUT_NCHW) dims[n_dims++] = ch;
  if (w->layout == CT_LAYOUT_NCHW4C) dims[n_dims++] = (ch + 3) / 4;
  for (int d = 0; d < nd; d++) dims[n_dims++] = workload_out_size(w, d) * b;
  if (w->layout == CT_LAYOUT_NCHW4C) dims[n_dims++] = 4;
  if (w->layout == CT_LAYOUT_NHWC) dims[n_dims++] = ch;
  return n_dims;
}

char *workload_out_shape(const ct_workload *w, char *buf, size_t size) {
  int64_t dims[CT_MAX_SPATIAL + 3];
  int n_dims = workload_out_dims(w, dims), len = 0;
  if (size) buf[0] = '\0';
  for (int i = 0; i < n_dims && len >= 0 && (size_t)len < size; i++)
    len += snprintf(buf + len, size - len, i ? "x%" PRId64 : "%" PRId64, dims[i]);
  return buf;
}

/* ---- validation ---------------------------------------------------------- */

#define INVALID(...) ERR_SET(err, CT_ERR_INVALID_WORKLOAD, __VA_ARGS__)

static ct_status check_elems(const char *what, int64_t n, ct_err *err) {
  if (n > CT_MAX_ELEMS)
    return INVALID("%s has %" PRId64 " elements; the kernels index with int32, so at most %d "
                   "are accepted: use a smaller batch or split the layer",
                   what, n, CT_MAX_ELEMS);
  return CT_OK;
}

/* The epilogue's fields against each other and the dtypes. */
static ct_status validate_epilogue(const ct_workload *w, ct_err *err) {
  const ct_epilogue *e = &w->epi;
  const struct {
    const char *name;
    int v;
  } flags[] = {{"data_zero_point", e->data_zero_point},
               {"weight_zero_point", e->weight_zero_point},
               {"bias", e->bias},
               {"residual", e->residual}};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if (flags[i].v != 0 && flags[i].v != 1)
      return INVALID("epilogue %s must be 0 or 1, got %d", flags[i].name, flags[i].v);
  if (e->scale != CT_SCALE_TENSOR && e->scale != CT_SCALE_CHANNEL)
    return INVALID("epilogue scale must be tensor (%d) or channel (%d), got %d", CT_SCALE_TENSOR,
                   CT_SCALE_CHANNEL, (int)e->scale);
  if (w->out_type == CT_DTYPE_INT32 && e->scale == CT_SCALE_CHANNEL)
    return INVALID("a per-channel scale needs an int8 or uint8 output; int32 output is the raw "
                   "accumulators");
  if (w->out_type == CT_DTYPE_INT32 && e->residual)
    return INVALID("a residual needs an int8 or uint8 output (it is added after the rescale)");
  if (e->rounding != CT_ROUND_GEMMLOWP && e->rounding != CT_ROUND_ONNX)
    return INVALID("epilogue rounding must be gemmlowp (%d) or onnx (%d), got %d",
                   CT_ROUND_GEMMLOWP, CT_ROUND_ONNX, (int)e->rounding);
  if (w->out_type == CT_DTYPE_INT32 && e->rounding == CT_ROUND_ONNX)
    return INVALID("rounding onnx needs an int8 or uint8 output; int32 output is the raw "
                   "accumulators, which nothing rounds");
  if (e->d2s_mode != CT_D2S_DCR && e->d2s_mode != CT_D2S_CRD)
    return INVALID("depth_to_space mode must be dcr (%d) or crd (%d), got %d", CT_D2S_DCR,
                   CT_D2S_CRD, (int)e->d2s_mode);
  if (e->d2s_block == 0) {
    if (e->d2s_mode != CT_D2S_DCR)
      return INVALID("depth_to_space mode is set but the block size is 0 (no depth_to_space)");
    return CT_OK;
  }
  /* The remap is written by the channel-major kernels' epilogues; no kernel
   * of the channels-last layout has one. */
  if (w->layout == CT_LAYOUT_NHWC)
    return INVALID("depth_to_space (block %d) is not supported with layout %s; use layout %s or "
                   "%s",
                   e->d2s_block, workload_layout_name(w->layout, w->op),
                   workload_layout_name(CT_LAYOUT_NCHW, w->op),
                   workload_layout_name(CT_LAYOUT_NCHW4C, w->op));
  if (e->d2s_block < 2 || e->d2s_block > CT_D2S_MAX_BLOCK)
    return INVALID("depth_to_space block must be 0 (none) or 2 to %d, got %d", CT_D2S_MAX_BLOCK,
                   e->d2s_block);
  int64_t per = workload_d2s_volume(w);
  if (w->k % per)
    return INVALID("k (%d) must be a multiple of %" PRId64 " (depth_to_space block %d, %d "
                   "spatial dimensions)",
                   w->k, per, e->d2s_block, workload_nd(w));
  return CT_OK;
}

/* The fields' upper bounds (workload.h says why each). Checked after the
 * element counts, which are computed saturating, so that a workload too big
 * as a whole is reported as such. */
static ct_status check_bounds(const ct_workload *w, ct_err *err) {
  const struct {
    const char *name;
    int v, max;
  } scalars[] = {{"n (batch)", w->n, CT_MAX_BATCH},
                 {"c (input channels)", w->c, CT_MAX_CHANNELS},
                 {"k (output channels)", w->k, CT_MAX_CHANNELS}};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
    if (scalars[i].v > scalars[i].max)
      return INVALID("%s must be from 1 to %d, got %d", scalars[i].name, scalars[i].max,
                     scalars[i].v);
  int nd = workload_nd(w);
  int64_t padded = mul_sat(w->n, w->c);
  for (int d = 0; d < nd; d++) {
    const char *dn = dim_name(w, d);
    const struct {
      const char *name;
      int v, min, max;
    } dims[] = {{"kernel", w->kernel[d], 1, CT_MAX_KERNEL},
                {"stride", w->stride[d], 1, CT_MAX_STRIDE},
                {"dilation", w->dilation[d], 1, CT_MAX_DILATION},
                {"pad (before)", w->pad_before[d], 0, CT_MAX_PAD},
                {"pad (after)", w->pad_after[d], 0, CT_MAX_PAD}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
      if (dims[i].v > dims[i].max)
        return INVALID("%s[%s] must be from %d to %d, got %d", dims[i].name, dn, dims[i].min,
                       dims[i].max, dims[i].v);
    padded = mul_sat(padded, (int64_t)w->in[d] + w->pad_before[d] + w->pad_after[d]);
  }
  if (padded > CT_MAX_PADDED)
    return INVALID("pad: the padded data (n x c x padded input) has %" PRId64 " elements; at "
                   "most %" PRId64 " are accepted (the padding is larger than any network's)",
                   padded, (int64_t)CT_MAX_PADDED);
  return CT_OK;
}

/* The fused pointwise convolution: none, with every pre field at its
 * default (one key per workload), or a valid 1x1 conv of its own into w's
 * channels-last data. */
static ct_status validate_pre(const ct_workload *w, ct_err *err) {
  static const ct_epilogue none;
  if (w->pre_c == 0) {
    if (w->pre_data_type != CT_DTYPE_INT8 || memcmp(&w->pre_epi, &none, sizeof none))
      return INVALID("pre_data_type and pre_epi describe a fused pointwise convolution, but "
                     "pre_c is 0 (none): set pre_c, or leave them at their defaults");
    return CT_OK;
  }
  if (w->pre_c < 0 || w->pre_c > CT_MAX_CHANNELS)
    return INVALID("pre_c (the fused pointwise convolution's input channels) must be 0 (none) "
                   "or from 1 to %d, got %d",
                   CT_MAX_CHANNELS, w->pre_c);
  if (w->layout != CT_LAYOUT_NHWC)
    return INVALID("a fused pointwise convolution (pre_c %d) needs layout %s; got %s", w->pre_c,
                   workload_layout_name(CT_LAYOUT_NHWC, w->op),
                   workload_layout_name(w->layout, w->op));
  if (w->pre_data_type != CT_DTYPE_INT8 && w->pre_data_type != CT_DTYPE_UINT8)
    return INVALID("pre_data_type must be int8 or uint8, got %s",
                   workload_dtype_name(w->pre_data_type));
  if (w->pre_epi.residual)
    return INVALID("the fused pointwise convolution (pre_c %d) cannot have a residual", w->pre_c);
  ct_workload pre;
  workload_pre(w, &pre);
  ct_status st = workload_validate(&pre, err);
  if (st) err_prefix(err, "the fused pointwise convolution (pre_c %d)", w->pre_c);
  return st;
}

int64_t workload_d2s_volume(const ct_workload *w) {
  int64_t v = 1;
  for (int d = 0; d < workload_nd(w); d++) v *= w->epi.d2s_block ? w->epi.d2s_block : 1;
  return v;
}

int workload_out_channels(const ct_workload *w) {
  return (int)(w->k / workload_d2s_volume(w));
}

int workload_has_params(const ct_workload *w) {
  return w->epi.data_zero_point || w->epi.weight_zero_point || w->epi.bias ||
         w->out_type != CT_DTYPE_INT32 || w->pre_c > 0;
}

size_t workload_out_elem_bytes(const ct_workload *w) {
  return w->out_type == CT_DTYPE_INT32 ? 4 : 1;
}

ct_status workload_validate(const ct_workload *w, ct_err *err) {
  if (!w) return ERR_SET(err, CT_ERR_INVALID_ARG, "workload is NULL");
  if (w->op != CT_OP_CONV2D && w->op != CT_OP_CONV3D)
    return INVALID("op must be conv2d or conv3d, got %d", (int)w->op);
  if (w->layout != CT_LAYOUT_NCHW && w->layout != CT_LAYOUT_NCHW4C && w->layout != CT_LAYOUT_NHWC) {
    char names[64];
    return INVALID("layout must be %s, got %d", layout_list(w->op, names, sizeof names),
                   (int)w->layout);
  }
  if (w->data_type != CT_DTYPE_INT8 && w->data_type != CT_DTYPE_UINT8)
    return INVALID("data_type must be int8 or uint8, got %s", workload_dtype_name(w->data_type));
  if (w->weight_type != CT_DTYPE_INT8)
    return INVALID("weight_type must be int8 (weights are symmetric or have per-channel zero "
                   "points), got %s",
                   workload_dtype_name(w->weight_type));
  if (w->out_type != CT_DTYPE_INT32 && w->out_type != CT_DTYPE_INT8 &&
      w->out_type != CT_DTYPE_UINT8)
    return INVALID("out_type must be int32, int8 or uint8, got %s",
                   workload_dtype_name(w->out_type));
  if (w->n < 1) return INVALID("n (batch) must be at least 1, got %d", w->n);
  if (w->c < 1) return INVALID("c (input channels) must be at least 1, got %d", w->c);
  if (w->k < 1) return INVALID("k (output channels) must be at least 1, got %d", w->k);
  if (w->groups < 1 || w->groups > CT_MAX_CHANNELS)
    return INVALID("groups must be between 1 and %d, got %d", CT_MAX_CHANNELS, w->groups);
  if (w->c % w->groups || w->k % w->groups)
    return INVALID("groups (%d) must divide both c (%d input channels) and k (%d output "
                   "channels); depthwise is groups = c",
                   w->groups, w->c, w->k);
  int nd = workload_nd(w);
  for (int d = 0; d < nd; d++) {
    const char *dn = dim_name(w, d);
    if (w->in[d] < 1) return INVALID("%s (input size) must be at least 1, got %d", dn, w->in[d]);
    if (w->kernel[d] < 1) return INVALID("kernel[%s] must be at least 1, got %d", dn, w->kernel[d]);
    if (w->stride[d] < 1) return INVALID("stride[%s] must be at least 1, got %d", dn, w->stride[d]);
    if (w->dilation[d] < 1)
      return INVALID("dilation[%s] must be at least 1, got %d", dn, w->dilation[d]);
    if (w->pad_before[d] < 0 || w->pad_after[d] < 0)
      return INVALID("pad[%s] must be at least 0, got %d before and %d after", dn, w->pad_before[d],
                     w->pad_after[d]);
    int64_t extent = (int64_t)w->dilation[d] * (w->kernel[d] - 1) + 1;
    int64_t padded = (int64_t)w->in[d] + w->pad_before[d] + w->pad_after[d];
    if (padded < extent)
      return INVALID("output size along %s is 0: the padded input (%" PRId64 ") is smaller than "
                     "the dilated kernel (%" PRId64 "); it must be at least as large",
                     dn, padded, extent);
  }
  ct_status st;
  if ((st = validate_epilogue(w, err))) return st;
  if (w->layout == CT_LAYOUT_NCHW4C) {
    const char *ln = workload_layout_name(w->layout, w->op);
    if (w->c % 4)
      return INVALID("c (input channels) must be a multiple of 4 for layout %s, got %d "
                     "(pad the channels, or use layout %s or %s)",
                     ln, w->c, workload_layout_name(CT_LAYOUT_NCHW, w->op),
                     workload_layout_name(CT_LAYOUT_NHWC, w->op));
    /* With depth_to_space the packed tensor is the remapped output, whose
     * channels are padded to 4 by the kernel itself. */
    if (w->k % 4 && !w->epi.d2s_block)
      return INVALID("k (output channels) must be a multiple of 4 for layout %s, got %d", ln, w->k);
    /* a group's channels are not padded: a packed word must not straddle
     * two groups' outputs differently from the plain layout's */
    if (w->groups > 1 && w->epi.d2s_block)
      return INVALID("groups > 1 with depth_to_space is not supported in layout %s", ln);
  }
  if ((st = check_elems("data", workload_data_elems(w), err))) return st;
  if ((st = check_elems("weights", workload_weight_elems(w), err))) return st;
  if ((st = check_elems("output", workload_out_elems(w), err))) return st;
  if ((st = check_bounds(w, err))) return st;
  return validate_pre(w, err);
}

/* ---- key ------------------------------------------------------------------- */

/* Append "AxBxC" for nd values of v. */
static int put_dims(char *buf, size_t size, const int *v, int nd) {
  int len = 0;
  for (int d = 0; d < nd && (size_t)len < size; d++)
    len += snprintf(buf + len, size - len, d ? "x%d" : "%d", v[d]);
  return len;
}

char *workload_key(const ct_workload *w, char *buf, size_t size) {
  int nd = workload_nd(w);
  char in[40], ker[40], str[40], pb[40], pa[40], dil[40];
  put_dims(in, sizeof in, w->in, nd);
  put_dims(ker, sizeof ker, w->kernel, nd);
  put_dims(str, sizeof str, w->stride, nd);
  put_dims(pb, sizeof pb, w->pad_before, nd);
  put_dims(pa, sizeof pa, w->pad_after, nd);
  put_dims(dil, sizeof dil, w->dilation, nd);
  snprintf(buf, size, "%s-%s-%s.%s.%s-n%d-c%d-k%d-%s-r%s-s%s-p%s.%s-d%s", workload_op_name(w->op),
           workload_layout_name(w->layout, w->op), dtype_code(w->data_type),
           dtype_code(w->weight_type), dtype_code(w->out_type), w->n, w->c, w->k, in, ker, str, pb,
           pa, dil);
  /* epilogue segments, each only when not the default, in this order */
  size_t len = strlen(buf);
  const ct_epilogue *e = &w->epi;
  const struct {
    int on;
    const char *text;
  } segs[] = {{e->data_zero_point, "-zd"},
              {e->weight_zero_point, "-zw"},
              {e->bias, "-bias"},
              {e->scale == CT_SCALE_CHANNEL, "-qc"},
              {e->residual, "-res"}};
  for (size_t i = 0; i < sizeof segs / sizeof segs[0] && len < size; i++)
    if (segs[i].on) len += snprintf(buf + len, size - len, "%s", segs[i].text);
  if (e->d2s_block && len < size)
    len += snprintf(buf + len, size - len, "-d2s%d%s", e->d2s_block,
                    e->d2s_mode == CT_D2S_CRD ? "crd" : "dcr");
  if (e->rounding == CT_ROUND_ONNX && len < size) len += snprintf(buf + len, size - len, "-onnx");
  /* appended after the epilogue (keys only grow at the end) */
  if (w->groups > 1 && len < size) len += snprintf(buf + len, size - len, "-g%d", w->groups);
  if (w->pre_c > 0 && len < size) {
    const ct_epilogue *pe = &w->pre_epi;
    len += snprintf(buf + len, size - len, "-pre%d.%s%s%s%s%s%s", w->pre_c,
                    dtype_code(w->pre_data_type), pe->data_zero_point ? ".zd" : "",
                    pe->weight_zero_point ? ".zw" : "", pe->bias ? ".bias" : "",
                    pe->scale == CT_SCALE_CHANNEL ? ".qc" : "",
                    pe->rounding == CT_ROUND_ONNX ? ".onnx" : "");
  }
  return buf;
}

/* Parse a non-negative decimal int at *p, advancing *p. */
static int parse_uint(const char **p, int *out) {
  const char *s = *p;
  if (*s < '0' || *s > '9') return 0;
  errno = 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (errno || v > INT_MAX) return 0;
  *out = (int)v;
  *p = end;
  return 1;
}

/* Parse exactly nd values "AxB(xC)" at *p. */
static int parse_dims(const char **p, int *v, int nd) {
  for (int d = 0; d < nd; d++) {
    if (d && **p != 'x') return 0;
    if (d) (*p)++;
    if (!parse_uint(p, &v[d])) return 0;
  }
  return 1;
}

static int parse_dtype_code(const char **p, ct_dtype *t) {
  static const struct {
    const char *code;
    ct_dtype t;
  } codes[] = {{"i32", CT_DTYPE_INT32}, {"i8", CT_DTYPE_INT8}, {"u8", CT_DTYPE_UINT8}};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    size_t n = strlen(codes[i].code);
    if (strncmp(*p, codes[i].code, n) == 0) {
      *t = codes[i].t;
      *p += n;
      return 1;
    }
  }
  return 0;
}

/* Expect the literal text lit at *p. */
static int expect(const char **p, const char *lit) {
  size_t n = strlen(lit);
  if (strncmp(*p, lit, n)) return 0;
  *p += n;
  return 1;
}

#define KEY_FORM                                                                                   \
  "op-layout-dtypes-nN-cC-kK-input-rKERNEL-sSTRIDE-pBEFORE.AFTER-dDILATION[-zd][-zw][-bias][-qc]"  \
  "[-res][-d2sBMODE][-onnx][-gG][-preC.T[.zd][.zw][.bias][.qc][.onnx]]"

ct_status workload_from_key(const char *key, ct_workload *out, ct_err *err) {
  if (!key) return ERR_SET(err, CT_ERR_INVALID_ARG, "key is NULL");
  ct_workload w;
  char quoted[CT_EXCERPT_MAX];
  const char *p = key;
  const char *field = "op";
  if (expect(&p, "conv2d-"))
    workload_init(&w, CT_OP_CONV2D);
  else if (expect(&p, "conv3d-"))
    workload_init(&w, CT_OP_CONV3D);
  else
    goto bad;
  int nd = workload_nd(&w);
  field = "layout";
  {
    /* the longest name first: "nchw" is a prefix of "nchw4c" */
    static const ct_layout by_length[] = {CT_LAYOUT_NCHW4C, CT_LAYOUT_NCHW, CT_LAYOUT_NHWC};
    const int n = (int)(sizeof by_length / sizeof by_length[0]);
    int i = 0;
    while (i < n && !expect(&p, workload_layout_name(by_length[i], w.op))) i++;
    if (i == n) goto bad;
    w.layout = by_length[i];
  }
  field = "dtypes";
  if (!expect(&p, "-") || !parse_dtype_code(&p, &w.data_type) || !expect(&p, ".") ||
      !parse_dtype_code(&p, &w.weight_type) || !expect(&p, ".") ||
      !parse_dtype_code(&p, &w.out_type))
    goto bad;
  field = "n";
  if (!expect(&p, "-n") || !parse_uint(&p, &w.n)) goto bad;
  field = "c";
  if (!expect(&p, "-c") || !parse_uint(&p, &w.c)) goto bad;
  field = "k";
  if (!expect(&p, "-k") || !parse_uint(&p, &w.k)) goto bad;
  field = "input size";
  if (!expect(&p, "-") || !parse_dims(&p, w.in, nd)) goto bad;
  field = "kernel";
  if (!expect(&p, "-r") || !parse_dims(&p, w.kernel, nd)) goto bad;
  field = "stride";
  if (!expect(&p, "-s") || !parse_dims(&p, w.stride, nd)) goto bad;
  field = "pad";
  if (!expect(&p, "-p") || !parse_dims(&p, w.pad_before, nd) || !expect(&p, ".") ||
      !parse_dims(&p, w.pad_after, nd))
    goto bad;
  field = "dilation";
  if (!expect(&p, "-d") || !parse_dims(&p, w.dilation, nd)) goto bad;
  /* epilogue segments: any order parses; the canonical check below fixes it */
  field = "epilogue";
  while (*p) {
    if (expect(&p, "-zd"))
      w.epi.data_zero_point = 1;
    else if (expect(&p, "-zw"))
      w.epi.weight_zero_point = 1;
    else if (expect(&p, "-bias"))
      w.epi.bias = 1;
    else if (expect(&p, "-qc"))
      w.epi.scale = CT_SCALE_CHANNEL;
    else if (expect(&p, "-res"))
      w.epi.residual = 1;
    else if (expect(&p, "-onnx"))
      w.epi.rounding = CT_ROUND_ONNX;
    else if (expect(&p, "-pre")) {
      field = "pre";
      if (!parse_uint(&p, &w.pre_c) || !expect(&p, ".") || !parse_dtype_code(&p, &w.pre_data_type))
        goto bad;
      while (*p == '.') {
        if (expect(&p, ".zd"))
          w.pre_epi.data_zero_point = 1;
        else if (expect(&p, ".zw"))
          w.pre_epi.weight_zero_point = 1;
        else if (expect(&p, ".bias"))
          w.pre_epi.bias = 1;
        else if (expect(&p, ".qc"))
          w.pre_epi.scale = CT_SCALE_CHANNEL;
        else if (expect(&p, ".onnx"))
          w.pre_epi.rounding = CT_ROUND_ONNX;
        else
          goto bad;
      }
      field = "epilogue";
    } else if (expect(&p, "-g")) {
      if (!parse_uint(&p, &w.groups)) goto bad;
    } else if (expect(&p, "-d2s")) {
      if (!parse_uint(&p, &w.epi.d2s_block)) goto bad;
      if (expect(&p, "dcr"))
        w.epi.d2s_mode = CT_D2S_DCR;
      else if (expect(&p, "crd"))
        w.epi.d2s_mode = CT_D2S_CRD;
      else
        goto bad;
    } else
      goto bad;
  }

  ct_status st = workload_validate(&w, err);
  if (st) {
    err_suffix(err, " (in key '%s')", err_excerpt(quoted, sizeof quoted, key));
    return st;
  }
  char canon[CT_KEY_MAX];
  workload_key(&w, canon, sizeof canon);
  if (strcmp(canon, key))
    return ERR_SET(err, CT_ERR_PARSE, "key is not canonical; its canonical form is '%s' (got '%s')",
                   canon, err_excerpt(quoted, sizeof quoted, key));
  *out = w;
  return CT_OK;
bad:
  /* the reason and the grammar first: the key may be any length */
  return ERR_SET(err, CT_ERR_PARSE,
                 "malformed %s at offset %d of key '%s'; a key reads " KEY_FORM
                 ", e.g. conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1",
                 field, (int)(p - key), err_excerpt(quoted, sizeof quoted, key));
}

/* ---- JSON ------------------------------------------------------------------ */

static int epilogue_to_json(cJSON *j, const ct_epilogue *e);

cJSON *workload_to_json(const ct_workload *w) {
  int nd = workload_nd(w);
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  int pad[2 * CT_MAX_SPATIAL];
  for (int d = 0; d < nd; d++) {
    pad[d] = w->pad_before[d];
    pad[nd + d] = w->pad_after[d];
  }
  int ok = cJSON_AddStringToObject(j, "op", workload_op_name(w->op)) &&
           cJSON_AddStringToObject(j, "layout", workload_layout_name(w->layout, w->op)) &&
           cJSON_AddStringToObject(j, "data_type", workload_dtype_name(w->data_type)) &&
           cJSON_AddStringToObject(j, "weight_type", workload_dtype_name(w->weight_type)) &&
           cJSON_AddStringToObject(j, "out_type", workload_dtype_name(w->out_type)) &&
           cJSON_AddNumberToObject(j, "n", w->n) && cJSON_AddNumberToObject(j, "c", w->c) &&
           cJSON_AddNumberToObject(j, "k", w->k);
  for (int d = 0; ok && d < nd; d++) ok = cJSON_AddNumberToObject(j, dim_name(w, d), w->in[d]) != 0;
  const struct {
    const char *name;
    const int *v;
    int count;
  } lists[] = {{"kernel", w->kernel, nd},
               {"stride", w->stride, nd},
               {"pad", pad, 2 * nd},
               {"dilation", w->dilation, nd}};
  for (size_t i = 0; ok && i < sizeof lists / sizeof lists[0]; i++) {
    cJSON *a = cJSON_CreateIntArray(lists[i].v, lists[i].count);
    ok = a && cJSON_AddItemToObject(j, lists[i].name, a);
    if (!ok) cJSON_Delete(a);
  }
  ok = ok && cJSON_AddNumberToObject(j, "groups", w->groups) && epilogue_to_json(j, &w->epi);
  if (ok && w->pre_c > 0) {
    cJSON *pre = cJSON_CreateObject();
    ok = pre && cJSON_AddItemToObject(j, "pre", pre);
    if (!ok) cJSON_Delete(pre);
    ok = ok && cJSON_AddNumberToObject(pre, "c", w->pre_c) &&
         cJSON_AddStringToObject(pre, "data_type", workload_dtype_name(w->pre_data_type)) &&
         epilogue_to_json(pre, &w->pre_epi);
  }
  if (!ok) {
    cJSON_Delete(j);
    return NULL;
  }
  return j;
}

/* The epilogue's fields into j, only what is not the default (as in the
 * key): 1, or 0 when out of memory. */
static int epilogue_to_json(cJSON *j, const ct_epilogue *e) {
  int ok = 1;
  if (ok && e->data_zero_point) ok = cJSON_AddTrueToObject(j, "data_zero_point") != NULL;
  if (ok && e->weight_zero_point) ok = cJSON_AddTrueToObject(j, "weight_zero_point") != NULL;
  if (ok && e->bias) ok = cJSON_AddTrueToObject(j, "bias") != NULL;
  if (ok && e->scale == CT_SCALE_CHANNEL)
    ok = cJSON_AddStringToObject(j, "scale", "channel") != NULL;
  if (ok && e->residual) ok = cJSON_AddTrueToObject(j, "residual") != NULL;
  if (ok && e->d2s_block)
    ok = cJSON_AddNumberToObject(j, "depth_to_space", e->d2s_block) &&
         cJSON_AddStringToObject(j, "d2s_mode", e->d2s_mode == CT_D2S_CRD ? "crd" : "dcr");
  if (ok && e->rounding == CT_ROUND_ONNX)
    ok = cJSON_AddStringToObject(j, "rounding", "onnx") != NULL;
  return ok;
}

/* An integer field value: a JSON number with no fraction within [lo, hi]. */
static ct_status json_int(const cJSON *v, const char *field, int lo, int hi, int *out,
                          ct_err *err) {
  double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!cJSON_IsNumber(v) || x != floor(x) || x < lo || x > hi) {
    char got[64];
    if (cJSON_IsNumber(v) && x == floor(x) && fabs(x) < 1e18)
      snprintf(got, sizeof got, "%.0f", x); /* every digit: 2147483648, not 2.14748e+09 */
    else if (cJSON_IsNumber(v))
      snprintf(got, sizeof got, "%g", x);
    else
      snprintf(got, sizeof got, "%s",
               cJSON_IsString(v)   ? "a string"
               : cJSON_IsArray(v)  ? "a list"
               : cJSON_IsObject(v) ? "an object"
               : cJSON_IsBool(v)   ? "a boolean"
                                   : "null");
    return ERR_SET(err, CT_ERR_INVALID_WORKLOAD,
                   "field '%s' must be an integer from %d to %d, got %s", field, lo, hi, got);
  }
  *out = (int)x;
  return CT_OK;
}

/* A per-dimension field: a number for every dimension, or a list of nd
 * numbers (or, with allow_double, 2 x nd: all befores then all afters). */
static ct_status json_dims(const cJSON *v, const char *field, int nd, int lo, int hi,
                           int allow_double, int *out, int *out2, ct_err *err) {
  if (cJSON_IsNumber(v)) {
    int x;
    ct_status st = json_int(v, field, lo, hi, &x, err);
    if (st) return st;
    for (int d = 0; d < nd; d++) out[d] = x;
    if (out2)
      for (int d = 0; d < nd; d++) out2[d] = x;
    return CT_OK;
  }
  int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
  if (n != nd && !(allow_double && n == 2 * nd)) {
    char got[48];
    snprintf(got, sizeof got, n < 0 ? "no number or list" : "a list of %d", n);
    if (allow_double)
      return ERR_SET(err, CT_ERR_INVALID_WORKLOAD,
                     "field '%s' must be a number, or a list of %d (per dimension) or %d numbers "
                     "(all befores, then all afters), got %s",
                     field, nd, 2 * nd, got);
    return ERR_SET(
        err, CT_ERR_INVALID_WORKLOAD,
        "field '%s' must be a number or a list of %d numbers (one per dimension), got %s", field,
        nd, got);
  }
  for (int i = 0; i < n; i++) {
    char name[48];
    snprintf(name, sizeof name, "%s[%d]", field, i);
    int x;
    ct_status st = json_int(cJSON_GetArrayItem(v, i), name, lo, hi, &x, err);
    if (st) return st;
    if (i < nd) {
      out[i] = x;
      if (out2 && n == nd) out2[i] = x;
    } else {
      out2[i - nd] = x;
    }
  }
  return CT_OK;
}

static ct_status json_enum(const cJSON *v, const char *field, const char *const *names, int count,
                           int *out, ct_err *err) {
  char accepted[160] = "";
  size_t len = 0;
  for (int i = 0; i < count; i++) {
    if (cJSON_IsString(v) && strcmp(v->valuestring, names[i]) == 0) {
      *out = i;
      return CT_OK;
    }
    len += snprintf(accepted + len, sizeof accepted - len, "%s%s", i ? ", " : "", names[i]);
  }
  char quoted[CT_EXCERPT_MAX];
  return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "field '%s' must be one of %s, got %s%s%s", field,
                 accepted, cJSON_IsString(v) ? "'" : "",
                 cJSON_IsString(v) ? err_excerpt(quoted, sizeof quoted, v->valuestring)
                                   : "a non-string",
                 cJSON_IsString(v) ? "'" : "");
}

static const char *const known_fields[] = {
    "name",
    "op",
    "layout",
    "data_type",
    "weight_type",
    "out_type",
    "n",
    "c",
    "k",
    "d",
    "h",
    "w",
    "kernel",
    "stride",
    "pad",
    "dilation",
    "groups",
    "data_zero_point",
    "bias",
    "residual",
    "scale",
    "weight_zero_point",
    "depth_to_space",
    "d2s_mode",
    "rounding",
    "pre",
};

/* A boolean field: true or false. */
static ct_status json_bool(const cJSON *v, const char *field, int *out, ct_err *err) {
  if (!cJSON_IsBool(v))
    return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "field '%s' must be true or false", field);
  *out = cJSON_IsTrue(v) ? 1 : 0;
  return CT_OK;
}

/* The epilogue fields of a workload object. */
static ct_status json_epilogue(const cJSON *json, ct_epilogue *e, ct_err *err) {
  const struct {
    const char *name;
    int *v;
  } flags[] = {{"data_zero_point", &e->data_zero_point},
               {"weight_zero_point", &e->weight_zero_point},
               {"bias", &e->bias},
               {"residual", &e->residual}};
  const cJSON *v;
  ct_status st;
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if ((v = cJSON_GetObjectItemCaseSensitive(json, flags[i].name)) &&
        (st = json_bool(v, flags[i].name, flags[i].v, err)))
      return st;
  static const char *const scales[] = {"tensor", "channel"};
  static const char *const modes[] = {"dcr", "crd"};
  int x;
  if ((v = cJSON_GetObjectItemCaseSensitive(json, "scale"))) {
    if ((st = json_enum(v, "scale", scales, 2, &x, err))) return st;
    e->scale = x ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(json, "depth_to_space")) &&
      (st = json_int(v, "depth_to_space", 0, CT_D2S_MAX_BLOCK, &e->d2s_block, err)))
    return st;
  if ((v = cJSON_GetObjectItemCaseSensitive(json, "d2s_mode"))) {
    if ((st = json_enum(v, "d2s_mode", modes, 2, &x, err))) return st;
    e->d2s_mode = x ? CT_D2S_CRD : CT_D2S_DCR;
  }
  static const char *const roundings[] = {"gemmlowp", "onnx"};
  if ((v = cJSON_GetObjectItemCaseSensitive(json, "rounding"))) {
    if ((st = json_enum(v, "rounding", roundings, 2, &x, err))) return st;
    e->rounding = x ? CT_ROUND_ONNX : CT_ROUND_GEMMLOWP;
  }
  return CT_OK;
}

/* The "pre" object: the fused pointwise convolution's c (required),
 * data_type and epilogue fields (no residual, no depth_to_space). */
static ct_status json_pre(const cJSON *json, ct_workload *w, ct_err *err) {
  static const char *const fields[] = {"c",    "data_type", "data_zero_point", "weight_zero_point",
                                       "bias", "scale",     "rounding"};
  const size_t n_fields = sizeof fields / sizeof fields[0];
  char quoted[CT_EXCERPT_MAX];
  if (!cJSON_IsObject(json))
    return ERR_SET(err, CT_ERR_INVALID_WORKLOAD,
                   "field 'pre' must be an object (the fused pointwise convolution: c, "
                   "data_type, data_zero_point, weight_zero_point, bias, scale, rounding)");
  for (const cJSON *f = json->child; f; f = f->next) {
    size_t i = 0;
    while (i < n_fields && strcmp(f->string, fields[i])) i++;
    if (i == n_fields)
      return ERR_SET(err, CT_ERR_INVALID_WORKLOAD,
                     "unknown field 'pre.%s'; a fused pointwise convolution has c, data_type, "
                     "data_zero_point, weight_zero_point, bias, scale and rounding",
                     err_excerpt(quoted, sizeof quoted, f->string));
    for (const cJSON *g = json->child; g != f; g = g->next)
      if (strcmp(g->string, f->string) == 0)
        return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "field 'pre.%s' is given twice",
                       err_excerpt(quoted, sizeof quoted, f->string));
  }
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, "c");
  if (!v) return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "missing field 'pre.c'");
  ct_status st = json_int(v, "pre.c", 1, CT_MAX_CHANNELS, &w->pre_c, err);
  if (st) return st;
  if ((v = cJSON_GetObjectItemCaseSensitive(json, "data_type"))) {
    static const char *const dtypes[] = {"int8", "uint8"};
    int t = 0;
    if ((st = json_enum(v, "pre.data_type", dtypes, 2, &t, err))) return st;
    w->pre_data_type = t ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
  }
  if ((st = json_epilogue(json, &w->pre_epi, err))) err_prefix(err, "in 'pre'");
  return st;
}

ct_status workload_from_json(const cJSON *json, ct_workload *out, ct_err *err) {
  if (!cJSON_IsObject(json))
    return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "a workload must be a JSON object");
  char quoted[CT_EXCERPT_MAX];
  for (const cJSON *f = json->child; f; f = f->next) {
    size_t i = 0, n = sizeof known_fields / sizeof known_fields[0];
    while (i < n && strcmp(f->string, known_fields[i])) i++;
    if (i == n)
      return ERR_SET(err, CT_ERR_INVALID_WORKLOAD,
                     "unknown field '%s'; the fields are op, layout, data_type, weight_type, "
                     "out_type, n, c, k, d, h, w, kernel, stride, pad, dilation, groups, name, "
                     "data_zero_point, weight_zero_point, bias, scale, residual, depth_to_space, "
                     "d2s_mode, rounding, pre",
                     err_excerpt(quoted, sizeof quoted, f->string));
    for (const cJSON *g = json->child; g != f; g = g->next)
      if (strcmp(g->string, f->string) == 0)
        return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "field '%s' is given twice",
                       err_excerpt(quoted, sizeof quoted, f->string));
  }
  static const char *const ops[] = {"conv2d", "conv3d"};
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, "op");
  if (!v) return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "missing field 'op' (conv2d or conv3d)");
  int op;
  ct_status st;
  if ((st = json_enum(v, "op", ops, 2, &op, err))) return st;
  ct_workload w;
  workload_init(&w, op ? CT_OP_CONV3D : CT_OP_CONV2D);
  int nd = workload_nd(&w);

  if ((v = cJSON_GetObjectItemCaseSensitive(json, "layout"))) {
    const char *layouts[N_LAYOUTS];
    for (int i = 0; i < N_LAYOUTS; i++) layouts[i] = workload_layout_name(all_layouts[i], w.op);
    int l = 0;
    if ((st = json_enum(v, "layout", layouts, N_LAYOUTS, &l, err))) return st;
    w.layout = all_layouts[l];
  }
  static const char *const dtypes[] = {"int8", "uint8", "int32"};
  const struct {
    const char *name;
    ct_dtype *t;
  } types[] = {
      {"data_type", &w.data_type}, {"weight_type", &w.weight_type}, {"out_type", &w.out_type}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    int t = 0;
    if (!(v = cJSON_GetObjectItemCaseSensitive(json, types[i].name))) continue;
    if ((st = json_enum(v, types[i].name, dtypes, 3, &t, err))) return st;
    *types[i].t = (ct_dtype)t;
  }

  /* the ranges are workload_validate's, so that a message states one range */
  const struct {
    const char *name;
    int *v;
    int required, max;
  } scalars[] = {{"n", &w.n, 0, CT_MAX_BATCH},
                 {"c", &w.c, 1, CT_MAX_CHANNELS},
                 {"k", &w.k, 1, CT_MAX_CHANNELS},
                 {"groups", &w.groups, 0, INT_MAX}};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
    if (!(v = cJSON_GetObjectItemCaseSensitive(json, scalars[i].name))) {
      if (scalars[i].required)
        return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "missing field '%s'", scalars[i].name);
      continue;
    }
    if ((st = json_int(v, scalars[i].name, 1, scalars[i].max, scalars[i].v, err))) return st;
  }
  for (int d = 0; d < nd; d++) {
    const char *dn = dim_name(&w, d);
    if (!(v = cJSON_GetObjectItemCaseSensitive(json, dn)))
      return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "missing field '%s' (input size; %s needs %s)",
                     dn, workload_op_name(w.op), nd == 3 ? "d, h and w" : "h and w");
    if ((st = json_int(v, dn, 1, INT_MAX, &w.in[d], err))) return st;
  }
  if (nd == 2 && cJSON_GetObjectItemCaseSensitive(json, "d"))
    return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "field 'd' is for conv3d only; this is conv2d");

  if (!(v = cJSON_GetObjectItemCaseSensitive(json, "kernel")))
    return ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "missing field 'kernel'");
  if ((st = json_dims(v, "kernel", nd, 1, CT_MAX_KERNEL, 0, w.kernel, NULL, err))) return st;
  if ((v = cJSON_GetObjectItemCaseSensitive(json, "stride")) &&
      (st = json_dims(v, "stride", nd, 1, CT_MAX_STRIDE, 0, w.stride, NULL, err)))
    return st;
  if ((v = cJSON_GetObjectItemCaseSensitive(json, "dilation")) &&
      (st = json_dims(v, "dilation", nd, 1, CT_MAX_DILATION, 0, w.dilation, NULL, err)))
    return st;
  if ((v = cJSON_GetObjectItemCaseSensitive(json, "pad")) &&
      (st = json_dims(v, "pad", nd, 0, CT_MAX_PAD, 1, w.pad_before, w.pad_after, err)))
    return st;

  if ((st = json_epilogue(json, &w.epi, err))) return st;
  if ((v = cJSON_GetObjectItemCaseSensitive(json, "pre")) && (st = json_pre(v, &w, err))) return st;
  if ((st = workload_validate(&w, err))) return st;
  *out = w;
  return CT_OK;
}

ct_status workload_from_json_text(const char *text, ct_workload *out, ct_err *err) {
  cJSON *j;
  ct_status st = json_parse(text, "workload", &j, err);
  if (st) return st;
  st = workload_from_json(j, out, err);
  cJSON_Delete(j);
  return st;
}

ct_status workload_epilogue_parse(const char *list, ct_epilogue *e, ct_err *err) {
  char buf[256], quoted[CT_EXCERPT_MAX];
  memset(e, 0, sizeof *e);
  if (!list) return CT_OK;
  if (strlen(list) >= sizeof buf)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "the list is too long (%zu bytes, at most %zu)",
                   strlen(list), sizeof buf - 1);
  strcpy(buf, list);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!strcmp(t, "none"))
      memset(e, 0, sizeof *e);
    else if (!strcmp(t, "zd"))
      e->data_zero_point = 1;
    else if (!strcmp(t, "zw"))
      e->weight_zero_point = 1;
    else if (!strcmp(t, "bias"))
      e->bias = 1;
    else if (!strcmp(t, "qc"))
      e->scale = CT_SCALE_CHANNEL;
    else if (!strcmp(t, "res"))
      e->residual = 1;
    else if (!strcmp(t, "onnx"))
      e->rounding = CT_ROUND_ONNX;
    else if (!strncmp(t, "d2s", 3) && t[3] >= '0' && t[3] <= '9') {
      /* digits only (no sign or space, which strtol would take), and a
       * number past int named as out of range rather than wrapped */
      char *end;
      errno = 0;
      long b = strtol(t + 3, &end, 10);
      if (strcmp(end, "dcr") && strcmp(end, "crd"))
        return ERR_SET(err, CT_ERR_INVALID_ARG,
                       "unknown item '%s'; depth_to_space reads d2sBdcr or d2sBcrd (e.g. d2s4dcr)",
                       err_excerpt(quoted, sizeof quoted, t));
      if (errno == ERANGE || b < 2 || b > CT_D2S_MAX_BLOCK) {
        char digits[sizeof buf], block[CT_EXCERPT_MAX];
        snprintf(digits, sizeof digits, "%.*s", (int)(end - (t + 3)), t + 3);
        return ERR_SET(err, CT_ERR_INVALID_ARG,
                       "the depth_to_space block %s is out of range; it must be 2 to %d (item "
                       "'%s')",
                       err_excerpt(block, sizeof block, digits), CT_D2S_MAX_BLOCK,
                       err_excerpt(quoted, sizeof quoted, t));
      }
      e->d2s_block = (int)b;
      e->d2s_mode = strcmp(end, "crd") ? CT_D2S_DCR : CT_D2S_CRD;
    } else
      return ERR_SET(err, CT_ERR_INVALID_ARG,
                     "unknown item '%s'; the items are zd, zw, bias, qc, res, d2sBdcr and "
                     "d2sBcrd (e.g. d2s4dcr), onnx, or none",
                     err_excerpt(quoted, sizeof quoted, t));
  }
  return CT_OK;
}
