/*
 * shape.c: the shapes and element types of a graph's values: graph inputs
 * (with the batch applied), value_info where present, else propagated in
 * topological order through the ops a CNN uses: convolutions, Q/DQ,
 * elementwise ops (numpy broadcasting), pooling, Flatten, Reshape of a
 * constant shape, Concat, DepthToSpace, Gemm / MatMul, Transpose, Squeeze,
 * Unsqueeze, Pad.
 *
 * A shape that cannot be derived stays unknown with the reason and the node
 * where derivation stopped; only the importer, which knows which shapes it
 * needs, turns that into an error. Sizes are bounded (DIM_MAX) and every
 * product is checked, so that no file can make the arithmetic overflow.
 */
#include "model/graph.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sizes above this are treated as unknown: far beyond any tensor that could
 * be run, small enough that products of a few never overflow int64. */
#define DIM_MAX ((int64_t)1 << 40)

int gshape_known(const gshape *s) {
  if (s->rank < 0) return 0;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0) return 0;
  return 1;
}

char *gshape_str(const gshape *s, char *buf, size_t size) {
  if (s->rank < 0) {
    snprintf(buf, size, "unknown");
    return buf;
  }
  if (s->rank == 0) {
    snprintf(buf, size, "scalar");
    return buf;
  }
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < s->rank && len < size; i++) {
    if (s->dims[i] < 0)
      len += (size_t)snprintf(buf + len, size - len, i ? "x?" : "?");
    else
      len += (size_t)snprintf(buf + len, size - len, i ? "x%" PRId64 : "%" PRId64, s->dims[i]);
  }
  return buf;
}

static const gshape unknown_shape = {-1, {0}};

/* The shape of node n's input i (unknown when absent). */
static const gshape *in_shape(const graph *g, int n, int i) {
  int v = graph_in(g, n, i);
  return v >= 0 ? &g->values[v].shape : &unknown_shape;
}

ct_status graph_shape_err(const graph *g, int v, int node, const char *what, ct_err *err) {
  const gvalue *val = &g->values[v];
  const char *why = val->shape_why ? val->shape_why : "no value_info and no node gives it";
  /* names as excerpts: a long one cannot push the reason out */
  char vn[CT_EXCERPT_MAX], nn[CT_EXCERPT_MAX], op[CT_EXCERPT_MAX];
  err_excerpt(vn, sizeof vn, val->name);
  if (val->shape_why_node >= 0 && val->shape_why_node != node)
    return graph_err(g, err, CT_ERR_PARSE, node,
                     "cannot derive the shape of its %s '%s': %s (at node '%s' (%s))", what, vn,
                     why, err_excerpt(nn, sizeof nn, g->nodes[val->shape_why_node].name),
                     err_excerpt(op, sizeof op, g->nodes[val->shape_why_node].op));
  return graph_err(g, err, CT_ERR_PARSE, node, "cannot derive the shape of its %s '%s': %s", what,
                   vn, why);
}

/* ---- convolution and pooling geometry ------------------------------------- */

/* An INTS attribute of nd values (or absent: dflt each) into v, each in
 * [lo, DIM_MAX]. */
static ct_status spatial_attr(const graph *g, int n, const char *name, int nd, int count_mult,
                              int64_t dflt, int64_t lo, int64_t *v, ct_err *err) {
  int count;
  int64_t vals[2 * GRAPH_MAX_RANK];
  ct_status st = graph_attr_ints(g, n, name, vals, 2 * GRAPH_MAX_RANK, &count, err);
  if (st) return st;
  if (count < 0) {
    for (int i = 0; i < nd * count_mult; i++) v[i] = dflt;
    return CT_OK;
  }
  if (count != nd * count_mult)
    return graph_err(g, err, CT_ERR_PARSE, n,
                     "attribute '%s' has %d values; with %d spatial dimensions it takes %d", name,
                     count, nd, nd * count_mult);
  for (int i = 0; i < count; i++) {
    if (vals[i] < lo || vals[i] > DIM_MAX)
      return graph_err(g, err, CT_ERR_PARSE, n, "attribute '%s'[%d] = %" PRId64 " is out of range",
                       name, i, vals[i]);
    v[i] = vals[i];
  }
  return CT_OK;
}

typedef enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } auto_pad;

static ct_status read_auto_pad(const graph *g, int n, auto_pad *ap, ct_err *err) {
  char buf[32];
  ct_status st = graph_attr_str(g, n, "auto_pad", "NOTSET", buf, sizeof buf, err);
  if (st) return st;
  if (!strcmp(buf, "NOTSET") || !*buf)
    *ap = PAD_NOTSET;
  else if (!strcmp(buf, "SAME_UPPER"))
    *ap = PAD_SAME_UPPER;
  else if (!strcmp(buf, "SAME_LOWER"))
    *ap = PAD_SAME_LOWER;
  else if (!strcmp(buf, "VALID"))
    *ap = PAD_VALID;
  else
    return graph_err(g, err, CT_ERR_PARSE, n,
                     "auto_pad '%s' is none of NOTSET, SAME_UPPER, SAME_LOWER and VALID", buf);
  return CT_OK;
}

/* Pads from auto_pad for one dimension (ONNX's rule: SAME gives out =
 * ceil(in / stride); the odd pixel goes after for SAME_UPPER, before for
 * SAME_LOWER). */
static void same_pads(auto_pad ap, int64_t in, int64_t ext, int64_t stride, int64_t *pb,
                      int64_t *pa) {
  if (ap == PAD_VALID) {
    *pb = *pa = 0;
    return;
  }
  int64_t out = (in + stride - 1) / stride;
  int64_t total = (out - 1) * stride + ext - in;
  if (total < 0) total = 0;
  *pb = ap == PAD_SAME_UPPER ? total / 2 : (total + 1) / 2;
  *pa = total - *pb;
}

ct_status graph_conv_geom(const graph *g, int node, const gshape *x, const gshape *w, conv_geom *cg,
                          ct_err *err) {
  memset(cg, 0, sizeof *cg);
  if (!gshape_known(w) || !gshape_known(x))
    return graph_err(g, err, CT_ERR_PARSE, node, "the shapes of its data and weights are unknown");
  if (w->rank < 3)
    return graph_err(g, err, CT_ERR_PARSE, node,
                     "its weights have rank %d; a convolution's have rank 3 or more", w->rank);
  int nd = w->rank - 2;
  if (nd > 3)
    return graph_err(g, err, CT_ERR_UNSUPPORTED, node,
                     "a %dD convolution: convtune runs 2D and 3D ones", nd);
  if (x->rank != w->rank)
    return graph_err(g, err, CT_ERR_PARSE, node, "its data has rank %d but its weights rank %d",
                     x->rank, w->rank);
  for (int i = 0; i < x->rank; i++)
    if (x->dims[i] > DIM_MAX || w->dims[i] > DIM_MAX)
      return graph_err(g, err, CT_ERR_PARSE, node, "sizes beyond %" PRId64, DIM_MAX);
  cg->nd = nd;
  cg->n = x->dims[0];
  cg->c = x->dims[1];
  cg->k = w->dims[0];
  ct_status st = graph_attr_int(g, node, "group", 1, &cg->group, err);
  if (st) return st;
  if (cg->group < 1 || cg->group > DIM_MAX)
    return graph_err(g, err, CT_ERR_PARSE, node, "group %" PRId64 " must be at least 1", cg->group);
  if (w->dims[1] * cg->group != cg->c)
    return graph_err(g, err, CT_ERR_PARSE, node,
                     "its data has %" PRId64 " channels but its weights take %" PRId64
                     " x group %" PRId64,
                     cg->c, w->dims[1], cg->group);
  if (cg->k % cg->group)
    return graph_err(g, err, CT_ERR_PARSE, node,
                     "%" PRId64 " output channels are not a multiple of group %" PRId64, cg->k,
                     cg->group);
  int64_t ks[3], pads[6];
  if ((st = spatial_attr(g, node, "kernel_shape", nd, 1, 0, 0, ks, err)) ||
      (st = spatial_attr(g, node, "strides", nd, 1, 1, 1, cg->stride, err)) ||
      (st = spatial_attr(g, node, "dilations", nd, 1, 1, 1, cg->dil, err)) ||
      (st = spatial_attr(g, node, "pads", nd, 2, 0, 0, pads, err)))
    return st;
  auto_pad ap;
  if ((st = read_auto_pad(g, node, &ap, err))) return st;
  for (int d = 0; d < nd; d++) {
    cg->in[d] = x->dims[2 + d];
    cg->kernel[d] = w->dims[2 + d];
    if (graph_attr(g, node, "kernel_shape") && ks[d] != cg->kernel[d])
      return graph_err(g, err, CT_ERR_PARSE, node,
                       "kernel_shape[%d] = %" PRId64 " but the weights' size there is %" PRId64, d,
                       ks[d], cg->kernel[d]);
    int64_t ext = cg->dil[d] * (cg->kernel[d] - 1) + 1;
    if (ap == PAD_NOTSET) {
      cg->pb[d] = pads[d];
      cg->pa[d] = pads[nd + d];
    } else {
      same_pads(ap, cg->in[d], ext, cg->stride[d], &cg->pb[d], &cg->pa[d]);
    }
    int64_t span = cg->in[d] + cg->pb[d] + cg->pa[d] - ext;
    cg->out[d] = span < 0 ? 0 : span / cg->stride[d] + 1;
  }
  return CT_OK;
}

/* ---- propagation ------------------------------------------------------------ */

static void set_unknown(graph *g, int v, int node, const char *why) {
  if (v < 0) return;
  g->values[v].shape = unknown_shape;
  g->values[v].shape_why = why;
  g->values[v].shape_why_node = node;
}

static int dims_ok(const gshape *s) {
  if (s->rank < 0 || s->rank > GRAPH_MAX_RANK) return 0;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0 || s->dims[i] > DIM_MAX) return 0;
  return 1;
}

static int64_t volume(const gshape *s, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++)
    if (__builtin_mul_overflow(p, s->dims[i], &p) || p > DIM_MAX) return -1;
  return p;
}

/* numpy broadcasting of a and b into out: 1, or 0 when they do not fit. */
static int broadcast(const gshape *a, const gshape *b, gshape *out) {
  if (!dims_ok(a) || !dims_ok(b)) return 0;
  int r = a->rank > b->rank ? a->rank : b->rank;
  out->rank = r;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) return 0;
    out->dims[i] = da == 1 ? db : da;
  }
  return 1;
}

/* A constant int64 list (Reshape's shape, axes, pads) of at most max values. */
static int const_ints(const graph *g, int v, int64_t *vals, int max, int *count) {
  gtensor t;
  if (v < 0 || graph_const(g, v, -1, &t, NULL)) return 0;
  int ok = (t.dtype == ONNX_INT64 || t.dtype == ONNX_INT32) && t.rank <= 1 && t.n <= max;
  for (int64_t i = 0; ok && i < t.n; i++) vals[i] = gtensor_i64(&t, i);
  *count = ok ? (int)t.n : 0;
  gtensor_free(&t);
  return ok;
}

/* Axes (attribute, or input 1 from opset 13) normalised against rank. */
static int read_axes(const graph *g, int n, int rank, int64_t *axes, int *count) {
  int64_t vals[GRAPH_MAX_RANK];
  if (graph_attr_ints(g, n, "axes", vals, GRAPH_MAX_RANK, count, NULL)) return 0;
  if (*count < 0 && graph_in(g, n, 1) >= 0 &&
      !const_ints(g, graph_in(g, n, 1), vals, GRAPH_MAX_RANK, count))
    return 0;
  for (int i = 0; i < *count; i++) {
    if (vals[i] < -rank || vals[i] >= rank) return 0;
    axes[i] = vals[i] < 0 ? vals[i] + rank : vals[i];
  }
  return 1;
}

static ct_status pool_shape(graph *g, int n, const gshape *x, gshape *out) {
  int nd = x->rank - 2;
  int64_t ks[3], st[3], dil[3], pads[6], ceil_mode = 0;
  auto_pad ap;
  if (nd < 1 || nd > 3 || spatial_attr(g, n, "kernel_shape", nd, 1, -1, 1, ks, NULL) || ks[0] < 0 ||
      spatial_attr(g, n, "strides", nd, 1, 1, 1, st, NULL) ||
      spatial_attr(g, n, "dilations", nd, 1, 1, 1, dil, NULL) ||
      spatial_attr(g, n, "pads", nd, 2, 0, 0, pads, NULL) ||
      graph_attr_int(g, n, "ceil_mode", 0, &ceil_mode, NULL) || read_auto_pad(g, n, &ap, NULL))
    return CT_ERR_PARSE;
  *out = *x;
  for (int d = 0; d < nd; d++) {
    int64_t in = x->dims[2 + d], ext = dil[d] * (ks[d] - 1) + 1, o;
    if (ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER) {
      o = (in + st[d] - 1) / st[d];
    } else if (ap == PAD_VALID) {
      o = in < ext ? 0 : (in - ext) / st[d] + 1;
    } else {
      int64_t span = in + pads[d] + pads[nd + d] - ext;
      if (span < 0) return CT_ERR_PARSE;
      o = (ceil_mode ? (span + st[d] - 1) / st[d] : span / st[d]) + 1;
      /* the last window must start inside the input or its leading padding */
      if (ceil_mode && (o - 1) * st[d] >= in + pads[d]) o--;
    }
    if (o < 1) return CT_ERR_PARSE;
    out->dims[2 + d] = o;
  }
  return CT_OK;
}

static int reshape_shape(const graph *g, int n, const gshape *x, gshape *out) {
  int64_t vals[GRAPH_MAX_RANK], allowzero = 0;
  int count;
  if (!const_ints(g, graph_in(g, n, 1), vals, GRAPH_MAX_RANK, &count) ||
      graph_attr_int(g, n, "allowzero", 0, &allowzero, NULL))
    return 0;
  int64_t total = volume(x, 0, x->rank), known = 1;
  int infer = -1;
  out->rank = count;
  for (int i = 0; i < count; i++) {
    int64_t s = vals[i];
    if (s == 0 && !allowzero) {
      if (i >= x->rank) return 0;
      s = x->dims[i];
    } else if (s == -1) {
      if (infer >= 0) return 0;
      infer = i;
      continue;
    } else if (s < 0 || s > DIM_MAX) {
      return 0;
    }
    out->dims[i] = s;
    if (__builtin_mul_overflow(known, s, &known) || known > DIM_MAX) return 0;
  }
  if (infer >= 0) {
    if (known == 0 || total % known) return 0;
    out->dims[infer] = total / known;
  } else if (known != total) {
    return 0;
  }
  return 1;
}

static int concat_shape(const graph *g, int n, gshape *out) {
  int64_t axis;
  const gnode *nd = &g->nodes[n];
  if (nd->n_in < 1 || graph_attr_int(g, n, "axis", INT64_MIN, &axis, NULL)) return 0;
  const gshape *first = in_shape(g, n, 0);
  if (!dims_ok(first) || axis < -first->rank || axis >= first->rank) return 0;
  if (axis < 0) axis += first->rank;
  *out = *first;
  for (int i = 1; i < nd->n_in; i++) {
    const gshape *s = in_shape(g, n, i);
    if (!dims_ok(s) || s->rank != first->rank) return 0;
    for (int d = 0; d < s->rank; d++)
      if (d != axis && s->dims[d] != first->dims[d]) return 0;
    out->dims[axis] += s->dims[axis];
    if (out->dims[axis] > DIM_MAX) return 0;
  }
  return 1;
}

static int matmul_shape(const gshape *a0, const gshape *b0, gshape *out) {
  if (!dims_ok(a0) || !dims_ok(b0) || a0->rank < 1 || b0->rank < 1) return 0;
  gshape a = *a0, b = *b0;
  int a1 = a.rank == 1, b1 = b.rank == 1;
  if (a1) { /* (K) -> (1, K) */
    a.rank = 2;
    a.dims[1] = a.dims[0];
    a.dims[0] = 1;
  }
  if (b1) { /* (K) -> (K, 1) */
    b.rank = 2;
    b.dims[1] = 1;
  }
  if (a.dims[a.rank - 1] != b.dims[b.rank - 2]) return 0;
  gshape ba = a, bb = b;
  ba.rank -= 2;
  bb.rank -= 2;
  if (!broadcast(&ba, &bb, out) || out->rank + 2 > GRAPH_MAX_RANK) return 0;
  if (!a1) out->dims[out->rank++] = a.dims[a.rank - 2];
  if (!b1) out->dims[out->rank++] = b.dims[b.rank - 1];
  return 1;
}

static int gemm_shape(const graph *g, int n, gshape *out) {
  const gshape *a = in_shape(g, n, 0), *b = in_shape(g, n, 1);
  int64_t ta = 0, tb = 0;
  if (!dims_ok(a) || !dims_ok(b) || a->rank != 2 || b->rank != 2 ||
      graph_attr_int(g, n, "transA", 0, &ta, NULL) || graph_attr_int(g, n, "transB", 0, &tb, NULL))
    return 0;
  int64_t m = a->dims[ta ? 1 : 0], ka = a->dims[ta ? 0 : 1];
  int64_t kb = b->dims[tb ? 1 : 0], nn = b->dims[tb ? 0 : 1];
  if (ka != kb) return 0;
  out->rank = 2;
  out->dims[0] = m;
  out->dims[1] = nn;
  return 1;
}

static int transpose_shape(const graph *g, int n, const gshape *x, gshape *out) {
  int64_t perm[GRAPH_MAX_RANK];
  int count, seen[GRAPH_MAX_RANK] = {0};
  if (graph_attr_ints(g, n, "perm", perm, GRAPH_MAX_RANK, &count, NULL)) return 0;
  if (count < 0) {
    count = x->rank;
    for (int i = 0; i < count; i++) perm[i] = count - 1 - i;
  }
  if (count != x->rank) return 0;
  out->rank = count;
  for (int i = 0; i < count; i++) {
    if (perm[i] < 0 || perm[i] >= count || seen[perm[i]]++) return 0;
    out->dims[i] = x->dims[perm[i]];
  }
  return 1;
}

static int squeeze_shape(const graph *g, int n, const gshape *x, int unsqueeze, gshape *out) {
  int64_t axes[GRAPH_MAX_RANK];
  int count;
  int out_rank = x->rank;
  if (unsqueeze) {
    /* the axes refer to the output's rank, which they decide */
    int64_t raw[GRAPH_MAX_RANK];
    int c2;
    if (graph_attr_ints(g, n, "axes", raw, GRAPH_MAX_RANK, &c2, NULL)) return 0;
    if (c2 < 0 && !const_ints(g, graph_in(g, n, 1), raw, GRAPH_MAX_RANK, &c2)) return 0;
    out_rank = x->rank + c2;
    if (c2 < 0 || out_rank > GRAPH_MAX_RANK) return 0;
    if (!read_axes(g, n, out_rank, axes, &count)) return 0;
    int is_axis[GRAPH_MAX_RANK] = {0};
    for (int i = 0; i < count; i++)
      if (is_axis[axes[i]]++) return 0;
    out->rank = out_rank;
    for (int i = 0, j = 0; i < out_rank; i++) out->dims[i] = is_axis[i] ? 1 : x->dims[j++];
    return 1;
  }
  if (!read_axes(g, n, x->rank, axes, &count)) return 0;
  int drop[GRAPH_MAX_RANK] = {0};
  if (count < 0) {
    for (int i = 0; i < x->rank; i++) drop[i] = x->dims[i] == 1;
  } else {
    for (int i = 0; i < count; i++) {
      if (x->dims[axes[i]] != 1) return 0;
      drop[axes[i]] = 1;
    }
  }
  out->rank = 0;
  for (int i = 0; i < x->rank; i++)
    if (!drop[i]) out->dims[out->rank++] = x->dims[i];
  return 1;
}

static int pad_shape(const graph *g, int n, const gshape *x, gshape *out) {
  int64_t pads[2 * GRAPH_MAX_RANK];
  int count;
  if (graph_in(g, n, 3) >= 0) return 0; /* axes (opset 18): not followed */
  if (graph_attr_ints(g, n, "pads", pads, 2 * GRAPH_MAX_RANK, &count, NULL)) return 0;
  if (count < 0 && !const_ints(g, graph_in(g, n, 1), pads, 2 * GRAPH_MAX_RANK, &count)) return 0;
  if (count != 2 * x->rank) return 0;
  *out = *x;
  for (int i = 0; i < x->rank; i++) {
    out->dims[i] = x->dims[i] + pads[i] + pads[x->rank + i];
    if (pads[i] < -DIM_MAX || pads[i] > DIM_MAX || pads[x->rank + i] < -DIM_MAX ||
        pads[x->rank + i] > DIM_MAX || out->dims[i] < 0)
      return 0;
  }
  return 1;
}

/* Ops whose outputs (the first) have the shape of their first input. */
static const char *const same_shape_ops[] = {"QuantizeLinear",
                                             "DequantizeLinear",
                                             "Relu",
                                             "Clip",
                                             "Identity",
                                             "Cast",
                                             "CastLike",
                                             "LeakyRelu",
                                             "Sigmoid",
                                             "Tanh",
                                             "HardSigmoid",
                                             "HardSwish",
                                             "Softmax",
                                             "LogSoftmax",
                                             "BatchNormalization",
                                             "Dropout",
                                             "Neg",
                                             "Abs",
                                             "Sqrt",
                                             "Exp",
                                             "Log",
                                             "Erf",
                                             "Elu",
                                             "Selu",
                                             "Round",
                                             "Floor",
                                             "Ceil",
                                             "Reciprocal",
                                             "Softplus",
                                             "Gelu",
                                             "LRN",
                                             "InstanceNormalization",
                                             "DynamicQuantizeLinear"};

/* Elementwise ops with numpy broadcasting over all their inputs. */
static const char *const broadcast_ops[] = {"Add",  "Sub",     "Mul",  "Div",   "Pow",   "Max",
                                            "Min",  "Sum",     "Mean", "PRelu", "Where", "Equal",
                                            "Less", "Greater", "And",  "Or"};

static int in_list(const graph *g, int n, const char *const *ops, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (graph_is(g, n, ops[i])) return 1;
  return 0;
}

/* The element type of n's outputs from its inputs and attributes. */
static void infer_types(graph *g, int n) {
  const gnode *nd = &g->nodes[n];
  int t0 = nd->n_in > 0 && nd->in[0] >= 0 ? g->values[nd->in[0]].elem_type : 0;
  int t = t0;
  int64_t to;
  if (graph_is_ms(g, n, "QuantizeLinear")) {
    int zp = graph_in(g, n, 2);
    t = zp >= 0 ? g->values[zp].elem_type : ONNX_UINT8;
    if (zp < 0 && !graph_attr_int(g, n, "output_dtype", 0, &to, NULL) && to) t = (int)to;
  } else if (graph_is_ms(g, n, "DequantizeLinear")) {
    int s = graph_in(g, n, 1);
    t = s >= 0 && g->values[s].elem_type ? g->values[s].elem_type : ONNX_FLOAT;
  } else if (graph_is_ms(g, n, "QLinearConv") || graph_is_ms(g, n, "QLinearMatMul")) {
    int zp = graph_in(g, n, 7);
    t = zp >= 0 ? g->values[zp].elem_type : t0;
  } else if (graph_is_ms(g, n, "QLinearAdd") || graph_is_ms(g, n, "QLinearMul")) {
    int zp = graph_in(g, n, 7);
    t = zp >= 0 ? g->values[zp].elem_type : t0;
  } else if (graph_is(g, n, "ConvInteger") || graph_is(g, n, "MatMulInteger")) {
    t = ONNX_INT32;
  } else if (graph_is(g, n, "Cast")) {
    t = graph_attr_int(g, n, "to", 0, &to, NULL) ? 0 : (int)to;
  } else if (graph_is(g, n, "Shape")) {
    t = ONNX_INT64;
  }
  for (int o = 0; o < nd->n_out; o++) {
    int v = nd->out[o];
    if (v < 0 || g->values[v].elem_type) continue;
    g->values[v].elem_type = t;
  }
  if (graph_is(g, n, "DynamicQuantizeLinear")) {
    int types[3] = {ONNX_UINT8, ONNX_FLOAT, ONNX_UINT8};
    for (int o = 0; o < nd->n_out && o < 3; o++)
      if (nd->out[o] >= 0) g->values[nd->out[o]].elem_type = types[o];
  }
}

/* The shape of n's first output into out: 1, or 0 with *why. Other
 * outputs that follow the first (MaxPool's indices, Dropout's mask) are
 * set by the caller. */
static int infer_shape(graph *g, int n, gshape *out, const char **why) {
  const gshape *x = in_shape(g, n, 0);
  *why = "an input's shape is unknown";
  if (in_list(g, n, same_shape_ops, sizeof same_shape_ops / sizeof same_shape_ops[0])) {
    if (x->rank < 0) return 0;
    *out = *x;
    return 1;
  }
  if (in_list(g, n, broadcast_ops, sizeof broadcast_ops / sizeof broadcast_ops[0])) {
    *out = *x;
    for (int i = 1; i < g->nodes[n].n_in; i++) {
      gshape r;
      if (!broadcast(out, in_shape(g, n, i), &r)) {
        *why = "its inputs' shapes are unknown or do not broadcast";
        return 0;
      }
      *out = r;
    }
    return dims_ok(out);
  }
  if (graph_is_ms(g, n, "QLinearAdd") || graph_is_ms(g, n, "QLinearMul")) {
    *why = "its inputs' shapes are unknown or do not broadcast";
    return broadcast(x, in_shape(g, n, 3), out);
  }
  if (graph_is(g, n, "Conv") || graph_is(g, n, "ConvInteger") || graph_is_ms(g, n, "QLinearConv")) {
    const gshape *w = in_shape(g, n, graph_is_ms(g, n, "QLinearConv") ? 3 : 1);
    conv_geom cg;
    if (!dims_ok(x) || !dims_ok(w)) return 0;
    if (graph_conv_geom(g, n, x, w, &cg, NULL)) {
      *why = "its attributes do not fit its data and weights";
      return 0;
    }
    out->rank = x->rank;
    out->dims[0] = cg.n;
    out->dims[1] = cg.k;
    for (int d = 0; d < cg.nd; d++) {
      if (cg.out[d] < 1) {
        *why = "its output would be empty";
        return 0;
      }
      out->dims[2 + d] = cg.out[d];
    }
    return 1;
  }
  if (graph_is(g, n, "MaxPool") || graph_is(g, n, "AveragePool") || graph_is(g, n, "LpPool") ||
      graph_is_ms(g, n, "QLinearAveragePool")) {
    if (!dims_ok(x)) return 0;
    *why = "its attributes do not fit its input";
    return pool_shape(g, n, x, out) == CT_OK;
  }
  if (graph_is(g, n, "GlobalAveragePool") || graph_is(g, n, "GlobalMaxPool") ||
      graph_is(g, n, "GlobalLpPool") || graph_is_ms(g, n, "QLinearGlobalAveragePool")) {
    int64_t last = 0;
    if (!dims_ok(x) || x->rank < 3) return 0;
    if (graph_attr_int(g, n, "channels_last", 0, &last, NULL)) return 0;
    *out = *x;
    for (int d = last ? 1 : 2; d < x->rank - (last ? 1 : 0); d++) out->dims[d] = 1;
    return 1;
  }
  if (graph_is(g, n, "Flatten")) {
    int64_t axis;
    if (!dims_ok(x) || graph_attr_int(g, n, "axis", 1, &axis, NULL)) return 0;
    if (axis < 0) axis += x->rank;
    *why = "its axis is out of range";
    if (axis < 0 || axis > x->rank) return 0;
    out->rank = 2;
    out->dims[0] = volume(x, 0, (int)axis);
    out->dims[1] = volume(x, (int)axis, x->rank);
    return out->dims[0] >= 0 && out->dims[1] >= 0;
  }
  if (graph_is(g, n, "Reshape")) {
    if (!dims_ok(x)) return 0;
    *why = "its shape is not a constant, or does not fit its input";
    return reshape_shape(g, n, x, out);
  }
  if (graph_is(g, n, "Concat")) {
    *why = "its inputs' shapes are unknown or do not fit its axis";
    return concat_shape(g, n, out);
  }
  if (graph_is(g, n, "DepthToSpace") || graph_is(g, n, "SpaceToDepth")) {
    int64_t b;
    int d2s = graph_is(g, n, "DepthToSpace");
    if (!dims_ok(x) || x->rank != 4 || graph_attr_int(g, n, "blocksize", 0, &b, NULL)) return 0;
    *why = "its blocksize does not fit its input";
    if (b < 1 || b > 1024) return 0;
    *out = *x;
    if (d2s) {
      if (x->dims[1] % (b * b)) return 0;
      out->dims[1] = x->dims[1] / (b * b);
      out->dims[2] = x->dims[2] * b;
      out->dims[3] = x->dims[3] * b;
    } else {
      if (x->dims[2] % b || x->dims[3] % b) return 0;
      out->dims[1] = x->dims[1] * b * b;
      out->dims[2] = x->dims[2] / b;
      out->dims[3] = x->dims[3] / b;
    }
    return dims_ok(out);
  }
  if (graph_is(g, n, "Gemm")) {
    *why = "its inputs' shapes are unknown or do not fit";
    return gemm_shape(g, n, out);
  }
  if (graph_is(g, n, "MatMul") || graph_is(g, n, "MatMulInteger") ||
      graph_is_ms(g, n, "QLinearMatMul")) {
    *why = "its inputs' shapes are unknown or do not fit";
    return matmul_shape(x, in_shape(g, n, graph_is_ms(g, n, "QLinearMatMul") ? 3 : 1), out);
  }
  if (graph_is(g, n, "Transpose")) {
    if (!dims_ok(x)) return 0;
    *why = "its perm does not fit its input";
    return transpose_shape(g, n, x, out);
  }
  if (graph_is(g, n, "Squeeze") || graph_is(g, n, "Unsqueeze")) {
    if (!dims_ok(x)) return 0;
    *why = "its axes are not constant or do not fit its input";
    return squeeze_shape(g, n, x, graph_is(g, n, "Unsqueeze"), out);
  }
  if (graph_is(g, n, "Pad")) {
    if (!dims_ok(x)) return 0;
    *why = "its pads are not constant or do not fit its input";
    return pad_shape(g, n, x, out);
  }
  if (graph_is(g, n, "Shape")) {
    if (x->rank < 0) return 0;
    out->rank = 1;
    out->dims[0] = x->rank;
    return 1;
  }
  *why = "convtune does not follow shapes through this op";
  return 0;
}

/* A TypeProto's tensor shape into s (rank -1 when absent); dimension 0 of a
 * tensor of rank >= 2 is the batch: symbolic there gives -2. */
static void type_shape(const Onnx__TypeProto *tp, gshape *s, int *elem_type, const char **param) {
  s->rank = -1;
  *param = NULL;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) return;
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  if (tt->has_elem_type) *elem_type = tt->elem_type;
  if (!tt->shape || tt->shape->n_dim > GRAPH_MAX_RANK) return;
  s->rank = (int)tt->shape->n_dim;
  for (int i = 0; i < s->rank; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    s->dims[i] = -1;
    if (!d) continue;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
        d->dim_value >= 0 && d->dim_value <= DIM_MAX)
      s->dims[i] = d->dim_value;
    else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && i == 0)
      *param = d->dim_param;
    /* a batch of 0 is how some exporters write a dynamic one */
    if (i == 0 && s->rank >= 2 && s->dims[0] == 0) s->dims[0] = -1;
  }
}

/* When n failed for want of an input's shape, v's reason is that input's:
 * the message then names where derivation really stopped. */
static void inherit_why(graph *g, int n, int v, const char *why) {
  if (why && strcmp(why, "an input's shape is unknown") && g->values[v].shape_why) return;
  for (int i = 0; i < g->nodes[n].n_in; i++) {
    int u = graph_in(g, n, i);
    if (u >= 0 && !gshape_known(&g->values[u].shape) && g->values[u].shape_why) {
      g->values[v].shape_why = g->values[u].shape_why;
      g->values[v].shape_why_node = g->values[u].shape_why_node;
      return;
    }
  }
}

static int same_shape(const gshape *a, const gshape *b) {
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

ct_status graph_shapes(graph *g, int batch, ct_err *err) {
  const Onnx__GraphProto *gp = g->gp;
  int64_t own = -1; /* the model's own static batch */
  int sym_input = -1;
  const char *sym_param = NULL;
  /* graph inputs */
  for (size_t i = 0; i < gp->n_input; i++) {
    int v = gp->input[i] ? graph_find(g, gp->input[i]->name) : -1;
    if (v < 0 || !g->values[v].is_input) continue;
    gvalue *val = &g->values[v];
    const char *param;
    type_shape(gp->input[i]->type, &val->shape, &val->elem_type, &param);
    if (val->shape.rank < 0) {
      set_unknown(g, v, -1, "the graph input has no shape");
      continue;
    }
    if (val->shape.rank >= 2) {
      if (val->shape.dims[0] < 0 && sym_input < 0) {
        sym_input = v;
        sym_param = param;
      } else if (val->shape.dims[0] >= 0 && own < 0) {
        own = val->shape.dims[0];
      }
    }
    if (!gshape_known(&val->shape))
      val->shape_why = "the graph input has a symbolic or unknown size besides its batch";
  }
  if (batch > 0) {
    g->batch = batch;
  } else if (sym_input >= 0) {
    return ERR_SET(
        err, CT_ERR_INVALID_ARG,
        "%s: input '%s' has a symbolic batch%s%s%s: give the batch (--batch N)", g->path,
        err_excerpt((char[CT_EXCERPT_MAX]){0}, CT_EXCERPT_MAX, g->values[sym_input].name),
        sym_param ? " ('" : "",
        sym_param ? err_excerpt((char[CT_EXCERPT_MAX]){0}, CT_EXCERPT_MAX, sym_param) : "",
        sym_param ? "')" : "");
  } else {
    g->batch = own > 0 ? (int)(own > INT32_MAX ? INT32_MAX : own) : 1;
  }
  for (int v = 0; v < g->n_values; v++) {
    gvalue *val = &g->values[v];
    if (val->is_input && val->shape.rank >= 2) val->shape.dims[0] = g->batch;
    if (val->is_input && val->shape_why && gshape_known(&val->shape)) val->shape_why = NULL;
  }
  /* declared shapes: value_info and graph outputs */
  for (int pass = 0; pass < 2; pass++) {
    size_t count = pass ? gp->n_output : gp->n_value_info;
    Onnx__ValueInfoProto **list = pass ? gp->output : gp->value_info;
    for (size_t i = 0; i < count; i++) {
      int v = list[i] ? graph_find(g, list[i]->name) : -1;
      if (v < 0 || g->values[v].is_input || g->values[v].constant) continue;
      gvalue *val = &g->values[v];
      gshape s;
      const char *param;
      type_shape(list[i]->type, &s, &val->elem_type, &param);
      if (s.rank >= 2 && (s.dims[0] < 0 || (batch > 0 && s.dims[0] == own))) s.dims[0] = g->batch;
      if (gshape_known(&s)) val->declared = s;
    }
  }
  /* constants */
  for (int v = 0; v < g->n_values; v++) {
    const Onnx__TensorProto *t = g->values[v].constant;
    if (!t) continue;
    g->values[v].elem_type = t->has_data_type ? t->data_type : 0;
    if (t->n_dims > GRAPH_MAX_RANK) {
      set_unknown(g, v, -1, "the constant's rank is too large");
      continue;
    }
    gshape s = {(int)t->n_dims, {0}};
    for (size_t d = 0; d < t->n_dims; d++) s.dims[d] = t->dims[d];
    if (!dims_ok(&s)) {
      set_unknown(g, v, -1, "the constant's dims are negative or too large");
      continue;
    }
    g->values[v].shape = s;
  }
  /* undefined names: neither produced, nor inputs, nor constants */
  for (int v = 0; v < g->n_values; v++) {
    gvalue *val = &g->values[v];
    if (val->producer < 0 && !val->is_input && !val->constant)
      set_unknown(g, v, -1, "no node, input or initializer defines it");
  }
  /* propagation */
  for (int i = 0; i < g->n_nodes; i++) {
    int n = g->order[i];
    const gnode *nd = &g->nodes[n];
    infer_types(g, n);
    if (graph_is(g, n, "Constant")) {
      if (graph_out(g, n, 0) >= 0 && !g->values[graph_out(g, n, 0)].constant)
        set_unknown(g, graph_out(g, n, 0), n, "the Constant is not a tensor convtune reads");
      continue;
    }
    gshape s;
    const char *why;
    int ok = infer_shape(g, n, &s, &why);
    for (int o = 0; o < nd->n_out; o++) {
      int v = nd->out[o];
      if (v < 0) continue;
      gvalue *val = &g->values[v];
      /* outputs past the first: those of MaxPool (indices) and Dropout
       * (mask) have its shape; the rest only what value_info declares */
      int follows = o == 0 || graph_is(g, n, "MaxPool") || graph_is(g, n, "Dropout");
      if (val->declared.rank >= 0) {
        int conv = graph_is(g, n, "Conv") || graph_is(g, n, "ConvInteger") ||
                   graph_is_ms(g, n, "QLinearConv");
        if (conv && ok && o == 0 && !same_shape(&s, &val->declared)) {
          char a[96], b[96];
          return graph_err(g, err, CT_ERR_PARSE, n,
                           "value_info gives its output '%s' the shape %s, but its data, weights "
                           "and attributes give %s",
                           val->name, gshape_str(&val->declared, a, sizeof a),
                           gshape_str(&s, b, sizeof b));
        }
        val->shape = val->declared;
      } else if (ok && follows && gshape_known(&s)) {
        val->shape = s;
      } else if (!ok || !follows) {
        set_unknown(g, v, n, ok ? "no value_info gives this output's shape" : why);
      } else {
        val->shape = s; /* partly known: the unknown sizes' reason is an input's */
      }
      if (!gshape_known(&val->shape) && (!ok || follows)) inherit_why(g, n, v, why);
    }
  }
  return CT_OK;
}
