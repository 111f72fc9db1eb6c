/*
 * model.c: the ONNX importer: from an indexed graph (graph.h) to the
 * model's convolutions, each a workload with the epilogue its graph implies
 * and the values behind it.
 *
 * Per conv, by form: QDQ (DequantizeLinear on data, weights and an int32
 * bias, the float output through QuantizeLinear), QLinearConv, ConvInteger
 * (int32 output, what follows listed as not fused) and float Conv (shapes
 * only). uint8 weights are made int8 by subtracting 128 from the weights
 * and their zero points, which leaves w - zw unchanged. The requantizing
 * scale is (x_scale * w_scale[k]) / y_scale in float32, in that order, as
 * ONNX Runtime's QLinearConv computes it.
 *
 * What follows the conv's quantized output t is folded only where that is
 * exact: a Relu / Clip between a DequantizeLinear and a QuantizeLinear with
 * t's very scale and zero point (bitwise), or before t's QuantizeLinear,
 * as the clamp; a DepthToSpace; a quantized Add of a residual of the same
 * shape (QDQ, or com.microsoft QLinearAdd), with a Relu / Clip after it.
 * Every fused tensor must have no other reader. When both inputs of an Add
 * are conv outputs, the conv whose output is its first input takes the
 * residual unless the other input depends on it; the convs are then ordered
 * topologically over the fused graph, file order where free, so that a
 * block's closing conv comes after its downsample.
 *
 * A conv that the engine cannot run stays listed with supported = 0 and the
 * reason; only a malformed file (or a shape that cannot be derived) fails
 * the whole load.
 *
 * Last, with opts.fuse_pre, pairs are fused (fuse_pairs): a pointwise conv
 * A whose requantized output is read by one conv B alone (through B's
 * DequantizeLinear, or directly by a QLinearConv) runs inside B, when the
 * hook says a kernel runs B's workload with A before it. This comes after
 * the order, so that B.q.pre can point into the final convs array; B then
 * reads A's input, which comes before A, so the order stays topological.
 */
#include "model/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quant.h"
#include "model/graph.h"

/* A per-tensor quantization: scale, zero point and ONNX type (INT8 / UINT8). */
typedef struct qp {
  float s;
  int32_t zp;
  int type;
} qp;

static int tmin(int type) {
  return type == ONNX_UINT8 ? 0 : -128;
}

static int tmax(int type) {
  return type == ONNX_UINT8 ? 255 : 127;
}

static ct_dtype ct_type(int onnx) {
  return onnx == ONNX_UINT8 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
}

/* Equal scale bits, zero point and type: only then is a requantization the
 * identity, and a fold exact. */
static int qp_eq(const qp *a, const qp *b) {
  return !memcmp(&a->s, &b->s, sizeof a->s) && a->zp == b->zp && a->type == b->type;
}

/* Longest fused list kept. */
#define FUSED_MAX 256
/* Ops between a tensor and its QuantizeLinear that a fold follows. */
#define ACTS_MAX 8

/* The chain of ops fused after one conv. */
typedef struct chain {
  int ok;         /* 1: the conv has a quantized output t to follow */
  int v;          /* the conv's final (fused) output */
  qp t;           /* t's quantization: the conv's own QuantizeLinear */
  qp q;           /* the final output's (t's without a residual) */
  int lo, hi;     /* the final output's clamp */
  int t_lo, t_hi; /* t's clamp, before a residual */
  int d2s, d2s_mode;
  int res, res_v, res_first;
  qp r;
  int cand_add, cand_side, cand_r; /* a residual Add it stopped at (-1: none) */
  int *nodes;
  int n_nodes, cap;
  char fused[FUSED_MAX];
  char not_fused[FUSED_MAX];
} chain;

/* What a conv's form gives before its chain. */
typedef struct parts {
  int data_v;     /* the data as convtune reads it: quantized (or float data) */
  qp x;           /* its quantization (ConvInteger: x.s unused) */
  int zx_dynamic; /* ConvInteger: the zero point is computed at run time */
  int w_v;        /* the weights' constant (quantized) */
  gtensor w;
  float *ws;
  int n_ws;
  int32_t *wzp; /* raw, n_ws of them (or 1) */
  int n_wzp;
  int bias_v; /* int32 constant, -1 */
} parts;

typedef struct imp {
  graph *g;
  /* vname's excerpts, by turns: a message quotes at most two names */
  char quoted[4][CT_EXCERPT_MAX];
  unsigned n_quoted;
  model_opts o;
  model *m;
  int *conv_of;   /* node -> conv index, -1 */
  int *conv_node; /* conv index -> node */
  char **why;     /* conv index -> the reason it cannot run (owned), NULL */
  chain *chains;
  parts *parts;
  int *mark, *seen, *stack; /* the dependency search */
  int gen;
  int *sorted_node;            /* after order_convs: conv index (its place in m->convs) -> node */
  char why_buf[CT_ERRMSG_MAX]; /* the reason of the conv being extracted */
} imp;

void model_opts_default(model_opts *o) {
  memset(o, 0, sizeof *o);
  o->batch = 0;
  o->layout = CT_LAYOUT_NHWC;
  o->float_out = CT_DTYPE_INT32;
  o->float_epilogue = NULL;
  o->float_data = CT_DTYPE_INT8;
}

const char *model_form_name(model_form f) {
  switch (f) {
  case MODEL_FLOAT:
    return "float";
  case MODEL_QDQ:
    return "qdq";
  case MODEL_QLINEAR:
    return "qlinear";
  case MODEL_CONVINTEGER:
    return "convinteger";
  }
  return "?";
}

static ct_status unsup(imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static ct_status unsup(imp *im, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(im->why_buf, sizeof im->why_buf, fmt, ap);
  va_end(ap);
  return CT_ERR_UNSUPPORTED;
}

static void append(char *buf, const char *item) {
  size_t len = strlen(buf);
  if (len + strlen(item) + 2 >= FUSED_MAX) return;
  snprintf(buf + len, FUSED_MAX - len, "%s%s", len ? "," : "", item);
}

/* Tensor v's name as a message quotes it: an excerpt (err_excerpt), so that
 * a long name cannot push the reason out of the message. */
static const char *vname(imp *im, int v) {
  char *b = im->quoted[im->n_quoted++ % 4];
  return v >= 0 ? err_excerpt(b, CT_EXCERPT_MAX, im->g->values[v].name) : "(absent)";
}

static int is_const(const imp *im, int v) {
  return v >= 0 && im->g->values[v].constant;
}

/* ---- constants ------------------------------------------------------------ */

/* A constant float scale, one value (n_max 1) or up to n_max. */
static ct_status read_scales(imp *im, int v, int node, const char *what, int n_max, float **out,
                             int *n, ct_err *err) {
  *out = NULL;
  *n = 0;
  if (v < 0) return graph_err(im->g, err, CT_ERR_PARSE, node, "its %s is missing", what);
  if (!is_const(im, v)) return unsup(im, "the %s '%s' is not a constant", what, vname(im, v));
  gtensor t;
  ct_status st = graph_const(im->g, v, node, &t, err);
  if (st) return st;
  if (t.dtype != ONNX_FLOAT) {
    gtensor_free(&t);
    return graph_err(im->g, err, CT_ERR_PARSE, node, "its %s '%s' must be FLOAT", what,
                     vname(im, v));
  }
  if (t.n < 1 || t.n > n_max) {
    int64_t count = t.n;
    gtensor_free(&t);
    if (n_max == 1)
      return unsup(im,
                   "the %s '%s' has %lld values: per-axis quantization of a tensor other "
                   "than the weights is not supported",
                   what, vname(im, v), (long long)count);
    return unsup(im, "the %s '%s' has %lld values; it takes 1 or %d (one per output channel)", what,
                 vname(im, v), (long long)count, n_max);
  }
  *out = t.data;
  *n = (int)t.n;
  return CT_OK;
}

static ct_status read_scale(imp *im, int v, int node, const char *what, float *s, ct_err *err) {
  float *vals;
  int n;
  ct_status st = read_scales(im, v, node, what, 1, &vals, &n, err);
  if (st) return st;
  *s = vals[0];
  free(vals);
  return CT_OK;
}

/* A constant 8-bit zero point (absent: n_max zeros of dflt_type). */
static ct_status read_zps(imp *im, int v, int node, const char *what, int dflt_type, int n_max,
                          int32_t **out, int *n, int *type, ct_err *err) {
  *out = NULL;
  *n = 0;
  *type = dflt_type;
  if (v < 0) {
    *out = calloc(1, sizeof **out);
    *n = 1;
    return *out ? CT_OK : ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  }
  if (!is_const(im, v)) return unsup(im, "the %s '%s' is not a constant", what, vname(im, v));
  gtensor t;
  ct_status st = graph_const(im->g, v, node, &t, err);
  if (st) return st;
  if (t.dtype != ONNX_INT8 && t.dtype != ONNX_UINT8) {
    char tb[32];
    int dt = t.dtype;
    gtensor_free(&t);
    return graph_err(im->g, err, CT_ERR_PARSE, node,
                     "its %s '%s' is %s; convtune reads INT8 and UINT8 quantization", what,
                     vname(im, v), onnx_type_name(dt, tb, sizeof tb));
  }
  if (t.n < 1 || t.n > n_max) {
    int64_t count = t.n;
    gtensor_free(&t);
    return unsup(im, "the %s '%s' has %lld values; it takes %s", what, vname(im, v),
                 (long long)count, n_max == 1 ? "1" : "1 or one per output channel");
  }
  *out = malloc((size_t)t.n * sizeof **out);
  if (!*out) {
    gtensor_free(&t);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  }
  for (int64_t i = 0; i < t.n; i++) (*out)[i] = (int32_t)gtensor_i64(&t, i);
  *n = (int)t.n;
  *type = t.dtype;
  gtensor_free(&t);
  return CT_OK;
}

/* The 8-bit type a quantized tensor has when its zero point is absent. */
static int default_qtype(const imp *im, int v) {
  int t = v >= 0 ? im->g->values[v].elem_type : 0;
  return t == ONNX_INT8 ? ONNX_INT8 : ONNX_UINT8;
}

/* The per-tensor quantization at inputs (si, zi) of node. */
static ct_status node_qp(imp *im, int node, int si, int zi, int dflt_type, qp *q, ct_err *err) {
  int32_t *zp;
  int n;
  ct_status st = read_scale(im, graph_in(im->g, node, si), node, "scale", &q->s, err);
  if (st) return st;
  if ((st = read_zps(im, graph_in(im->g, node, zi), node, "zero point", dflt_type, 1, &zp, &n,
                     &q->type, err)))
    return st;
  q->zp = zp[0];
  free(zp);
  return CT_OK;
}

/* A QuantizeLinear's / DequantizeLinear's quantization. */
static ct_status qdq_params(imp *im, int node, qp *q, ct_err *err) {
  int dflt = ONNX_UINT8;
  if (graph_is_ms(im->g, node, "QuantizeLinear")) {
    int64_t to = 0;
    ct_status st = graph_attr_int(im->g, node, "output_dtype", 0, &to, err);
    if (st) return st;
    if (to == ONNX_INT8) dflt = ONNX_INT8;
  } else {
    dflt = default_qtype(im, graph_in(im->g, node, 0));
  }
  return node_qp(im, node, 1, 2, dflt, q, err);
}

/* node_qp / qdq_params where a quantization that is not a per-tensor
 * constant only means "no fold": 1 when q was read, 0 when not, -1 on a
 * fatal error (*st). The reason of the conv being extracted is kept. */
static int soft_qp(imp *im, int node, int si, int zi, int dflt, qp *q, ct_err *err, ct_status *st) {
  char keep[sizeof im->why_buf];
  memcpy(keep, im->why_buf, sizeof keep);
  ct_status s = si < 0 ? qdq_params(im, node, q, err) : node_qp(im, node, si, zi, dflt, q, err);
  memcpy(im->why_buf, keep, sizeof keep);
  *st = s == CT_ERR_UNSUPPORTED ? CT_OK : s;
  return s == CT_OK ? 1 : s == CT_ERR_UNSUPPORTED ? 0 : -1;
}

static int soft_qdq(imp *im, int node, qp *q, ct_err *err, ct_status *st) {
  return soft_qp(im, node, -1, -1, 0, q, err, st);
}

/* ---- the chain ---------------------------------------------------------- */

static ct_status push_node(chain *c, int n, ct_err *err) {
  if (c->n_nodes == c->cap) {
    int cap = c->cap ? 2 * c->cap : 8;
    int *p = realloc(c->nodes, (size_t)cap * sizeof *p);
    if (!p) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    c->nodes = p;
    c->cap = cap;
  }
  c->nodes[c->n_nodes++] = n;
  return CT_OK;
}

static ct_status push_nodes(chain *c, const int *nodes, int count, ct_err *err) {
  ct_status st = CT_OK;
  for (int i = 0; i < count && !st; i++)
    if (nodes[i] >= 0) st = push_node(c, nodes[i], err);
  return st;
}

/* From float tensor f, the run of sole-use Relu / Clip ops (and one
 * DepthToSpace when d2s_ok) up to a QuantizeLinear: 1 with the ops and the
 * QuantizeLinear, 0 when the run ends elsewhere. */
static int float_run(const imp *im, int f, int d2s_ok, int *acts, int *n_acts, int *q) {
  const graph *g = im->g;
  *n_acts = 0;
  for (int u = graph_sole_use(g, f); u >= 0; u = graph_sole_use(g, f)) {
    if (graph_in(g, u, 0) != f) return 0;
    if (graph_is_ms(g, u, "QuantizeLinear")) {
      *q = u;
      return graph_out(g, u, 0) >= 0;
    }
    int act = graph_is(g, u, "Relu") || graph_is(g, u, "Clip");
    int d2s = d2s_ok && graph_is(g, u, "DepthToSpace");
    if ((!act && !d2s) || *n_acts == ACTS_MAX || graph_out(g, u, 0) < 0) return 0;
    if (d2s) d2s_ok = 0;
    acts[(*n_acts)++] = u;
    f = graph_out(g, u, 0);
  }
  return 0;
}

/* One bound of a Clip (a float) in q's integer domain: zp + rne(a / s) in
 * float32, saturated to the type: what QuantizeLinear makes of a. */
static int clip_bound(float a, const qp *q, int *out) {
  float x = nearbyintf(a / q->s) + (float)q->zp;
  if (isnan(x)) return 0;
  if (x < (float)tmin(q->type)) x = (float)tmin(q->type);
  if (x > (float)tmax(q->type)) x = (float)tmax(q->type);
  *out = (int)x;
  return 1;
}

/* A Clip's bound: input i, else attribute attr (opset < 11); *has 0 when
 * absent; *ok 0 when it cannot be folded (not a constant float scalar). */
static ct_status clip_arg(imp *im, int node, int i, const char *attr, float *val, int *has, int *ok,
                          ct_err *err) {
  int v = graph_in(im->g, node, i);
  *has = 0;
  if (v >= 0) {
    if (!is_const(im, v)) {
      *ok = 0;
      return CT_OK;
    }
    gtensor t;
    ct_status st = graph_const(im->g, v, node, &t, err);
    if (st) return st;
    if (t.dtype != ONNX_FLOAT || t.n != 1) {
      *ok = 0;
    } else {
      *val = ((const float *)t.data)[0];
      *has = 1;
    }
    gtensor_free(&t);
    return CT_OK;
  }
  if (graph_attr(im->g, node, attr)) {
    *has = 1;
    return graph_attr_float(im->g, node, attr, 0, val, err);
  }
  return CT_OK;
}

/* Fold acts (Relu, Clip, DepthToSpace) in q's domain into *lo, *hi and the
 * depth_to_space, their names onto fused; *ok 0 (nothing changed) when one
 * cannot be folded. */
static ct_status fold_acts(imp *im, const int *acts, int n_acts, const qp *q, int *lo, int *hi,
                           int *d2s, int *d2s_mode, char *fused, int *ok, ct_err *err) {
  int l = *lo, h = *hi, b = *d2s, mode = *d2s_mode;
  char names[FUSED_MAX];
  snprintf(names, sizeof names, "%s", fused);
  *ok = 1;
  for (int i = 0; i < n_acts && *ok; i++) {
    int a = acts[i];
    ct_status st;
    if (graph_is(im->g, a, "Relu")) {
      if (q->zp > l) l = q->zp;
    } else if (graph_is(im->g, a, "Clip")) {
      float lo_f = 0, hi_f = 0;
      int has_lo, has_hi, bound;
      if ((st = clip_arg(im, a, 1, "min", &lo_f, &has_lo, ok, err)) ||
          (st = clip_arg(im, a, 2, "max", &hi_f, &has_hi, ok, err)))
        return st;
      if (*ok && has_lo) {
        if (!clip_bound(lo_f, q, &bound))
          *ok = 0;
        else if (bound > l)
          l = bound;
      }
      if (*ok && has_hi) {
        if (!clip_bound(hi_f, q, &bound))
          *ok = 0;
        else if (bound < h)
          h = bound;
      }
    } else { /* DepthToSpace */
      if (im->o.layout == CT_LAYOUT_NHWC) {
        /* the channels-last templates have no depth_to_space remap */
        *ok = 0;
        break;
      }
      int64_t block;
      char m[16];
      if ((st = graph_attr_int(im->g, a, "blocksize", 0, &block, err)) ||
          (st = graph_attr_str(im->g, a, "mode", "DCR", m, sizeof m, err)))
        return st;
      if (b || block < 2 || block > CT_D2S_MAX_BLOCK || (strcmp(m, "DCR") && strcmp(m, "CRD"))) {
        *ok = 0;
        break;
      }
      b = (int)block;
      mode = strcmp(m, "CRD") ? CT_D2S_DCR : CT_D2S_CRD;
    }
    append(names, im->g->nodes[a].op);
  }
  if (*ok && l > h) *ok = 0; /* a Clip that empties the range is no clamp */
  if (!*ok) return CT_OK;
  *lo = l;
  *hi = h;
  *d2s = b;
  *d2s_mode = mode;
  snprintf(fused, FUSED_MAX, "%s", names);
  return CT_OK;
}

/* A residual Add found after the chain's current tensor. */
typedef struct resmatch {
  int add;  /* the Add or QLinearAdd */
  int dq;   /* the DequantizeLinear between t and an Add; -1 for QLinearAdd */
  int side; /* t's position among the Add's inputs: 0 first, 1 second */
  int r;    /* the residual tensor (quantized) */
  qp rq, y;
  int n_acts, acts[ACTS_MAX]; /* float ops after an Add, before its QuantizeLinear */
  int qy;                     /* that QuantizeLinear; -1 for QLinearAdd */
  int y_v;                    /* the sum, quantized */
  int lo, hi;                 /* its clamp */
  char fused[FUSED_MAX];
} resmatch;

static int same_known_shape(const imp *im, int a, int b) {
  const gshape *sa = &im->g->values[a].shape, *sb = &im->g->values[b].shape;
  if (!gshape_known(sa) || !gshape_known(sb) || sa->rank != sb->rank) return 0;
  for (int i = 0; i < sa->rank; i++)
    if (sa->dims[i] != sb->dims[i]) return 0;
  return 1;
}

/* Whether the chain's current tensor t flows into a residual Add that can
 * be fused: QDQ's DequantizeLinear -> Add <- DequantizeLinear(r) ->
 * [Relu / Clip] -> QuantizeLinear, or com.microsoft QLinearAdd; t, r and
 * the sum of one 8-bit type and one shape (no broadcasting), t seen by the
 * Add with its own quantization. 1 with *rm, 0 when not, -1 on a fatal
 * error (*st). */
static int match_residual(imp *im, const chain *c, resmatch *rm, ct_err *err, ct_status *st) {
  const graph *g = im->g;
  memset(rm, 0, sizeof *rm);
  rm->dq = rm->qy = -1;
  *st = CT_OK;
  int u = graph_sole_use(g, c->v), k;
  if (u < 0) return 0;
  if (graph_is_ms(g, u, "QLinearAdd")) {
    int a = graph_in(g, u, 0), b = graph_in(g, u, 3);
    if ((a == c->v) == (b == c->v)) return 0;
    rm->add = u;
    rm->side = a == c->v ? 0 : 1;
    rm->r = rm->side ? a : b;
    qp tq;
    if ((k = soft_qp(im, u, rm->side ? 4 : 1, rm->side ? 5 : 2, c->q.type, &tq, err, st)) <= 0)
      return k;
    if (!qp_eq(&tq, &c->q) || rm->r < 0) return 0;
    if ((k = soft_qp(im, u, rm->side ? 1 : 4, rm->side ? 2 : 5, default_qtype(im, rm->r), &rm->rq,
                     err, st)) <= 0 ||
        (k = soft_qp(im, u, 6, 7, c->q.type, &rm->y, err, st)) <= 0)
      return k;
    rm->y_v = graph_out(g, u, 0);
    snprintf(rm->fused, sizeof rm->fused, "QLinearAdd(residual)");
    if (rm->y_v < 0 || !same_known_shape(im, c->v, rm->r) || !same_known_shape(im, c->v, rm->y_v))
      return 0;
  } else if (graph_is_ms(g, u, "DequantizeLinear") && graph_in(g, u, 0) == c->v) {
    qp dq;
    if ((k = soft_qdq(im, u, &dq, err, st)) <= 0) return k;
    int f = graph_out(g, u, 0), a = f >= 0 ? graph_sole_use(g, f) : -1;
    if (!qp_eq(&dq, &c->q) || !graph_is(g, a, "Add") || g->nodes[a].n_in != 2) return 0;
    int i0 = graph_in(g, a, 0), i1 = graph_in(g, a, 1);
    if ((i0 == f) == (i1 == f)) return 0;
    rm->add = a;
    rm->dq = u;
    rm->side = i0 == f ? 0 : 1;
    int o = rm->side ? i0 : i1, dr = o >= 0 ? g->values[o].producer : -1;
    if (!graph_is_ms(g, dr, "DequantizeLinear") || (rm->r = graph_in(g, dr, 0)) < 0) return 0;
    if ((k = soft_qdq(im, dr, &rm->rq, err, st)) <= 0) return k;
    int sum = graph_out(g, a, 0);
    if (sum < 0 || !float_run(im, sum, 0, rm->acts, &rm->n_acts, &rm->qy)) return 0;
    if ((k = soft_qdq(im, rm->qy, &rm->y, err, st)) <= 0) return k;
    rm->y_v = graph_out(g, rm->qy, 0);
    snprintf(rm->fused, sizeof rm->fused, "Add(residual)");
    if (!same_known_shape(im, f, o) || !same_known_shape(im, f, sum)) return 0;
  } else {
    return 0;
  }
  if (rm->rq.type != c->q.type || rm->y.type != c->q.type) return 0;
  rm->lo = tmin(rm->y.type);
  rm->hi = tmax(rm->y.type);
  int d2s = 0, d2s_mode = 0, ok;
  if ((*st = fold_acts(im, rm->acts, rm->n_acts, &rm->y, &rm->lo, &rm->hi, &d2s, &d2s_mode,
                       rm->fused, &ok, err)))
    return -1;
  return ok;
}

/* A DepthToSpace after the conv in an nhwc model: the channels-last
 * templates have no depth_to_space remap, so the conv runs without it and
 * the listing says so. */
static ct_status d2s_nhwc(chain *c) {
  snprintf(c->not_fused, sizeof c->not_fused,
           "DepthToSpace (the nhwc templates have no depth_to_space; --layout nchw fuses it)");
  return CT_OK;
}

/* Follow the chain c past what can be fused. phase 0 stops at a residual
 * Add, recording it as the candidate; phase 1 fuses the candidate. */
static ct_status walk(imp *im, chain *c, int phase, ct_err *err) {
  const graph *g = im->g;
  ct_status st = CT_OK;
  for (int steps = 0; steps <= g->n_nodes; steps++) {
    int u = graph_sole_use(g, c->v), k, ok;
    if (u < 0) return CT_OK;
    /* DepthToSpace on the quantized tensor */
    if (graph_is(g, u, "DepthToSpace") && graph_in(g, u, 0) == c->v && !c->res &&
        graph_out(g, u, 0) >= 0) {
      if (im->o.layout == CT_LAYOUT_NHWC) return d2s_nhwc(c);
      if ((st = fold_acts(im, &u, 1, &c->q, &c->lo, &c->hi, &c->d2s, &c->d2s_mode, c->fused, &ok,
                          err)))
        return st;
      if (!ok) return CT_OK;
      if ((st = push_node(c, u, err))) return st;
      c->v = graph_out(g, u, 0);
      continue;
    }
    /* DequantizeLinear -> Relu / Clip / DepthToSpace -> QuantizeLinear with
     * t's very quantization: a clamp (or a remap) of t itself */
    int f = graph_is_ms(g, u, "DequantizeLinear") ? graph_out(g, u, 0) : -1;
    int u2 = f >= 0 ? graph_sole_use(g, f) : -1;
    if (graph_in(g, u, 0) == c->v &&
        (graph_is(g, u2, "Relu") || graph_is(g, u2, "Clip") || graph_is(g, u2, "DepthToSpace"))) {
      qp dq, q2;
      int acts[ACTS_MAX], n_acts, qn;
      if ((k = soft_qdq(im, u, &dq, err, &st)) < 0) return st;
      if (!k || !qp_eq(&dq, &c->q)) return CT_OK;
      if (!float_run(im, f, !c->d2s && !c->res, acts, &n_acts, &qn)) {
        /* DequantizeLinear -> DepthToSpace into float consumers (a model's
         * float output, as an exported pixel shuffle): the remap moves
         * before the per-tensor DequantizeLinear, which it commutes with,
         * so the conv writes t remapped and the DequantizeLinear reads it */
        if (!graph_is(g, u2, "DepthToSpace") || graph_in(g, u2, 0) != f || c->d2s ||
            graph_out(g, u2, 0) < 0)
          return CT_OK;
        if (im->o.layout == CT_LAYOUT_NHWC) return d2s_nhwc(c);
        if ((st = fold_acts(im, &u2, 1, &c->q, &c->lo, &c->hi, &c->d2s, &c->d2s_mode, c->fused,
                            &ok, err)))
          return st;
        if (!ok || (st = push_node(c, u, err))) return st;
        return push_node(c, u2, err);
      }
      if ((k = soft_qdq(im, qn, &q2, err, &st)) < 0) return st;
      for (int i = 0; i < n_acts; i++)
        if (graph_is(g, acts[i], "DepthToSpace") && im->o.layout == CT_LAYOUT_NHWC)
          return d2s_nhwc(c);
      if (k && !qp_eq(&q2, &c->q)) {
        /* ONNX Runtime computes this op in float between two different
         * quantizations: not a clamp of t */
        snprintf(c->not_fused, sizeof c->not_fused, "%s (requantized)", g->nodes[acts[0]].op);
        return CT_OK;
      }
      if (!k) return CT_OK;
      if ((st = fold_acts(im, acts, n_acts, &c->q, &c->lo, &c->hi, &c->d2s, &c->d2s_mode, c->fused,
                          &ok, err)))
        return st;
      if (!ok) return CT_OK;
      if ((st = push_node(c, u, err)) || (st = push_nodes(c, acts, n_acts, err)) ||
          (st = push_node(c, qn, err)))
        return st;
      c->v = graph_out(g, qn, 0);
      continue;
    }
    /* a residual Add */
    if (c->res) return CT_OK;
    resmatch rm;
    if ((k = match_residual(im, c, &rm, err, &st)) < 0) return st;
    if (!k) return CT_OK;
    if (phase == 0) {
      c->cand_add = rm.add;
      c->cand_side = rm.side;
      c->cand_r = rm.r;
      return CT_OK;
    }
    if (rm.add != c->cand_add) return CT_OK;
    c->t_lo = c->lo;
    c->t_hi = c->hi;
    c->res = 1;
    c->res_v = rm.r;
    c->r = rm.rq;
    c->res_first = rm.side == 1;
    c->q = rm.y;
    c->lo = rm.lo;
    c->hi = rm.hi;
    append(c->fused, rm.fused);
    int around[3] = {rm.dq, rm.add, rm.qy}; /* -1s (QLinearAdd's) are skipped */
    if ((st = push_nodes(c, around, 2, err)) || (st = push_nodes(c, rm.acts, rm.n_acts, err)) ||
        (st = push_nodes(c, around + 2, 1, err)))
      return st;
    c->v = rm.y_v;
  }
  return CT_OK;
}

/* The ops that follow tensor v (sole uses), for "not fused: ...": up to
 * the next op that starts other work. */
static void list_after(const imp *im, int v, char *buf) {
  static const char *const stops[] = {
      "Conv",   "ConvInteger",   "QLinearConv", "QuantizeLinear", "DynamicQuantizeLinear",
      "MatMul", "MatMulInteger", "Gemm"};
  char items[FUSED_MAX] = "";
  int count = 0;
  for (int u = graph_sole_use(im->g, v); u >= 0 && count < 6; u = graph_sole_use(im->g, v)) {
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
      if (graph_is_ms(im->g, u, stops[i])) u = -1;
    if (u < 0) break;
    append(items, im->g->nodes[u].op);
    count++;
    if ((v = graph_out(im->g, u, 0)) < 0) break;
  }
  if (*items) snprintf(buf, FUSED_MAX, "%s", items);
}

/* ---- a conv's inputs, by form ----------------------------------------------- */

/* Weights (constant w_v), their scales (scale_v: with scaled, required;
 * ConvInteger has none) and
 * zero points (zp_v, -1: zeros) into p. dq: the weights' DequantizeLinear
 * (its axis must be the output channels for per-channel scales), or -1. */
static ct_status read_weights(imp *im, int node, parts *p, int dq, int scaled, int scale_v,
                              int zp_v, ct_err *err) {
  if (!is_const(im, p->w_v))
    return unsup(im, "its weights '%s' are not a constant", vname(im, p->w_v));
  ct_status st = graph_const(im->g, p->w_v, node, &p->w, err);
  if (st) return st;
  char tb[32];
  if (p->w.dtype != ONNX_INT8 && p->w.dtype != ONNX_UINT8)
    return unsup(im, "its weights '%s' are %s; convtune takes INT8 or UINT8 weights",
                 vname(im, p->w_v), onnx_type_name(p->w.dtype, tb, sizeof tb));
  if (p->w.rank < 3)
    return graph_err(im->g, err, CT_ERR_PARSE, node,
                     "its weights '%s' have rank %d; a convolution's have rank 3 or more",
                     vname(im, p->w_v), p->w.rank);
  int k = (int)(p->w.dims[0] > INT32_MAX ? INT32_MAX : p->w.dims[0]);
  /* an input that names no value is missing too (read_scales says so): a
   * quantized conv without weight scales must not pass as ConvInteger */
  if (scaled && (st = read_scales(im, scale_v, node, "weight scale", k, &p->ws, &p->n_ws, err)))
    return st;
  int ztype;
  if ((st = read_zps(im, zp_v, node, "weight zero point", p->w.dtype, k, &p->wzp, &p->n_wzp, &ztype,
                     err)))
    return st;
  if (ztype != p->w.dtype)
    return graph_err(
        im->g, err, CT_ERR_PARSE, node, "its weight zero point is %s but its weights are %s",
        onnx_type_name(ztype, tb, sizeof tb), onnx_type_name(p->w.dtype, tb + 16, sizeof tb - 16));
  if (p->n_ws > 1 && p->n_ws != k)
    return unsup(im, "its weight scale has %d values for %d output channels", p->n_ws, k);
  if (p->n_wzp > 1 && p->n_wzp != k)
    return unsup(im, "its weight zero point has %d values for %d output channels", p->n_wzp, k);
  if (dq >= 0 && (p->n_ws > 1 || p->n_wzp > 1)) {
    int64_t axis;
    if ((st = graph_attr_int(im->g, dq, "axis", 1, &axis, err))) return st;
    if (axis < 0) axis += p->w.rank;
    if (axis != 0)
      return unsup(im,
                   "its weights are quantized per axis %lld; convtune takes per-channel "
                   "weights along the output channels (axis 0)",
                   (long long)axis);
  }
  return CT_OK;
}

static ct_status parts_qdq(imp *im, int node, parts *p, ct_err *err) {
  const graph *g = im->g;
  int x = graph_in(g, node, 0), w = graph_in(g, node, 1), b = graph_in(g, node, 2);
  int dx = x >= 0 ? g->values[x].producer : -1, dw = w >= 0 ? g->values[w].producer : -1;
  ct_status st;
  if (!graph_is_ms(g, dx, "DequantizeLinear") || graph_in(g, dx, 0) < 0)
    return unsup(im, "its data '%s' is float (no DequantizeLinear before it) in a quantized model",
                 vname(im, x));
  p->data_v = graph_in(g, dx, 0);
  if ((st = qdq_params(im, dx, &p->x, err))) return st;
  if (!graph_is_ms(g, dw, "DequantizeLinear")) {
    if (is_const(im, w))
      return unsup(im, "its weights '%s' are float (no DequantizeLinear) in a quantized model",
                   vname(im, w));
    return unsup(im, "its weights '%s' are not a constant", vname(im, w));
  }
  p->w_v = graph_in(g, dw, 0);
  if ((st = read_weights(im, node, p, dw, 1, graph_in(g, dw, 1), graph_in(g, dw, 2), err)))
    return st;
  p->bias_v = -1;
  if (b < 0) return CT_OK;
  int db = g->values[b].producer;
  if (is_const(im, b))
    return unsup(im,
                 "its bias '%s' is float: a quantized model's bias must be int32 through "
                 "DequantizeLinear",
                 vname(im, b));
  if (!graph_is_ms(g, db, "DequantizeLinear") || !is_const(im, graph_in(g, db, 0)))
    return unsup(im, "its bias '%s' is not a constant through DequantizeLinear", vname(im, b));
  p->bias_v = graph_in(g, db, 0);
  int zv = graph_in(g, db, 2);
  if (zv >= 0) {
    gtensor z;
    if (!is_const(im, zv))
      return unsup(im, "its bias zero point '%s' is not a constant", vname(im, zv));
    if ((st = graph_const(g, zv, node, &z, err))) return st;
    int nonzero = 0;
    for (int64_t i = 0; i < z.n; i++) nonzero |= gtensor_i64(&z, i) != 0;
    gtensor_free(&z);
    if (nonzero) return unsup(im, "its bias has a zero point other than 0");
  }
  return CT_OK;
}

static ct_status parts_qlinear(imp *im, int node, parts *p, qp *y, ct_err *err) {
  const graph *g = im->g;
  ct_status st;
  p->data_v = graph_in(g, node, 0);
  if (p->data_v < 0) return graph_err(im->g, err, CT_ERR_PARSE, node, "it has no data input");
  if ((st = node_qp(im, node, 1, 2, default_qtype(im, p->data_v), &p->x, err))) return st;
  p->w_v = graph_in(g, node, 3);
  if ((st = read_weights(im, node, p, -1, 1, graph_in(g, node, 4), graph_in(g, node, 5), err)) ||
      (st = node_qp(im, node, 6, 7, p->x.type, y, err)))
    return st;
  p->bias_v = graph_in(g, node, 8);
  if (p->bias_v >= 0 && !is_const(im, p->bias_v))
    return unsup(im, "its bias '%s' is not a constant", vname(im, p->bias_v));
  return CT_OK;
}

static ct_status parts_convinteger(imp *im, int node, parts *p, ct_err *err) {
  const graph *g = im->g;
  ct_status st;
  p->data_v = graph_in(g, node, 0);
  if (p->data_v < 0) return graph_err(im->g, err, CT_ERR_PARSE, node, "it has no data input");
  int zx = graph_in(g, node, 2);
  p->x.type = default_qtype(im, p->data_v);
  if (zx >= 0 && !is_const(im, zx)) {
    /* DynamicQuantizeLinear's: its value is known only at run time */
    p->zx_dynamic = 1;
    if (g->values[zx].elem_type == ONNX_INT8 || g->values[zx].elem_type == ONNX_UINT8)
      p->x.type = g->values[zx].elem_type;
  } else {
    int32_t *z;
    int n;
    if ((st = read_zps(im, zx, node, "data zero point", p->x.type, 1, &z, &n, &p->x.type, err)))
      return st;
    p->x.zp = z[0];
    free(z);
  }
  p->w_v = graph_in(g, node, 1);
  p->bias_v = -1;
  return read_weights(im, node, p, -1, 0, -1, graph_in(g, node, 3), err);
}

/* ---- a conv's workload and values ---------------------------------------------- */

/* conv_geom's values into the workload's ints: 0 when one does not fit. */
static int geom_to_workload(const conv_geom *cg, ct_workload *w) {
  int64_t top = 0;
  const int64_t scalars[] = {cg->n, cg->c, cg->k, cg->group};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
    top = scalars[i] > top ? scalars[i] : top;
  for (int d = 0; d < cg->nd; d++) {
    const int64_t vals[] = {cg->in[d],  cg->kernel[d], cg->stride[d],
                            cg->dil[d], cg->pb[d],     cg->pa[d]};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) top = vals[i] > top ? vals[i] : top;
  }
  if (top > INT32_MAX) return 0;
  w->n = (int)cg->n;
  w->c = (int)cg->c;
  w->k = (int)cg->k;
  w->groups = (int)cg->group;
  for (int d = 0; d < cg->nd; d++) {
    w->in[d] = (int)cg->in[d];
    w->kernel[d] = (int)cg->kernel[d];
    w->stride[d] = (int)cg->stride[d];
    w->dilation[d] = (int)cg->dil[d];
    w->pad_before[d] = (int)cg->pb[d];
    w->pad_after[d] = (int)cg->pa[d];
  }
  return 1;
}

/* The workload's geometry from the conv's data shape and weight shape.
 * need: a shape that cannot be derived fails the load (else: left unset). */
static ct_status conv_workload(imp *im, int node, const gshape *ws, int need, ct_workload *w,
                               ct_err *err) {
  const graph *g = im->g;
  int x = graph_in(g, node, 0);
  if (ws->rank == 3) return unsup(im, "a 1D convolution: convtune runs conv2d and conv3d");
  if (ws->rank > 5)
    return unsup(im, "a %dD convolution: convtune runs conv2d and conv3d", ws->rank - 2);
  int wv = graph_in(g, node, graph_is_ms(g, node, "QLinearConv") ? 3 : 1);
  if (x < 0 || !gshape_known(&g->values[x].shape) || !gshape_known(ws)) {
    if (!need) return CT_OK;
    if (x < 0 || wv < 0)
      return graph_err(g, err, CT_ERR_PARSE, node, "it has no %s input",
                       x < 0 ? "data" : "weights");
    if (!gshape_known(&g->values[x].shape)) return graph_shape_err(g, x, node, "data", err);
    return graph_shape_err(g, wv, node, "weights", err);
  }
  conv_geom cg;
  ct_status st = graph_conv_geom(g, node, &g->values[x].shape, ws, &cg, err);
  if (st) return st;
  workload_init(w, cg.nd == 3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  w->layout = im->o.layout;
  if (!geom_to_workload(&cg, w)) return unsup(im, "a size beyond the int32 range");
  return CT_OK;
}

/* The values of a quantized conv from its parts and chain. */
static ct_status conv_values(imp *im, int node, model_conv *mc, const parts *p, const chain *c,
                             ct_err *err) {
  ct_workload *w = &mc->w;
  ct_status st;
  int64_t n_w = p->w.n;
  int u8 = p->w.dtype == ONNX_UINT8, k = w->k;
  if (k < 1) return unsup(im, "its weights have no output channels");
  if (p->w.dims[0] != k)
    return unsup(im, "its weights hold %lld output channels, not %d", (long long)p->w.dims[0], k);
  mc->weights = malloc((size_t)(n_w ? n_w : 1));
  mc->weight_zero_points = malloc((size_t)k * sizeof *mc->weight_zero_points);
  if (!mc->weights || !mc->weight_zero_points)
    return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  /* uint8 weights as int8: w - 128 and zw - 128 leave w - zw unchanged */
  for (int64_t i = 0; i < n_w; i++)
    mc->weights[i] = (int8_t)(gtensor_i64(&p->w, i) - (u8 ? 128 : 0));
  int any_zw = 0;
  for (int i = 0; i < k; i++) {
    mc->weight_zero_points[i] = p->wzp[p->n_wzp > 1 ? i : 0] - (u8 ? 128 : 0);
    any_zw |= mc->weight_zero_points[i] != 0;
  }
  if (!any_zw) {
    free(mc->weight_zero_points);
    mc->weight_zero_points = NULL;
  }
  if (p->bias_v >= 0) {
    gtensor b;
    if ((st = graph_const(im->g, p->bias_v, node, &b, err))) return st;
    if (b.dtype != ONNX_INT32 || b.n != k) {
      char tb[32];
      int dt = b.dtype;
      int64_t count = b.n;
      gtensor_free(&b);
      if (dt == ONNX_FLOAT)
        return unsup(im, "its bias '%s' is float: a quantized conv's bias must be int32",
                     vname(im, p->bias_v));
      return unsup(im, "its bias '%s' holds %lld %s values; it takes %d INT32 ones",
                   vname(im, p->bias_v), (long long)count, onnx_type_name(dt, tb, sizeof tb), k);
    }
    mc->bias = b.data; /* the int32 values, taken over */
  }
  ct_epilogue *e = &w->epi;
  w->data_type = ct_type(p->x.type);
  w->out_type = c->ok ? ct_type(c->q.type) : CT_DTYPE_INT32;
  e->data_zero_point = p->x.zp != 0 || p->zx_dynamic;
  e->weight_zero_point = any_zw;
  e->bias = mc->bias != NULL;
  if (c->ok) {
    int n_sc = p->n_ws > 1 ? p->n_ws : 1;
    mc->scale = malloc((size_t)n_sc * sizeof *mc->scale);
    if (!mc->scale) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < n_sc; i++) {
      /* float32 as ONNX Runtime's QLinearConv: (x_scale * w_scale) / y_scale */
      float xw = p->x.s * p->ws[i];
      mc->scale[i] = xw / c->t.s;
    }
    e->scale = n_sc > 1 ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
    e->residual = c->res;
    e->d2s_block = c->d2s;
    e->d2s_mode = (ct_d2s_mode)c->d2s_mode;
    e->rounding = CT_ROUND_ONNX;
  }
  quant_init(&mc->q, w);
  ct_quant *q = &mc->q;
  q->data_zero_point = p->x.zp;
  q->weight_zero_points = mc->weight_zero_points;
  q->bias = mc->bias;
  q->scale = mc->scale;
  if (c->ok) {
    q->out_zero_point = c->q.zp;
    q->clamp_min = c->lo;
    q->clamp_max = c->hi;
    if (c->res) {
      q->residual_zero_point = c->r.zp;
      q->residual_scale = c->r.s / c->q.s;
      q->mid_zero_point = c->t.zp;
      q->mid_clamp_min = c->t_lo;
      q->mid_clamp_max = c->t_hi;
      q->mid_scale = c->t.s / c->q.s;
      q->residual_first = c->res_first;
    }
  }
  return CT_OK;
}

/* ---- the graph around the convs ---------------------------------------------- */

/* The QDQ conv's quantized output t, after the ops that fold before its
 * QuantizeLinear; without one, the conv's output stays int32. */
static ct_status start_qdq(imp *im, int node, chain *c, ct_err *err) {
  const graph *g = im->g;
  int cf = graph_out(g, node, 0), acts[ACTS_MAX], n_acts, q0, k, ok;
  ct_status st;
  c->v = cf;
  if (cf < 0 || !float_run(im, cf, 1, acts, &n_acts, &q0)) {
    list_after(im, cf, c->not_fused);
    if (!*c->not_fused) snprintf(c->not_fused, sizeof c->not_fused, "float output");
    return CT_OK;
  }
  qp t;
  if ((k = soft_qdq(im, q0, &t, err, &st)) < 0) return st;
  if (!k)
    return unsup(im,
                 "its output's QuantizeLinear '%s' is not per-tensor with a constant scale "
                 "and zero point",
                 err_excerpt(im->quoted[im->n_quoted++ % 4], CT_EXCERPT_MAX, g->nodes[q0].name));
  c->t = c->q = t;
  c->lo = tmin(t.type);
  c->hi = tmax(t.type);
  if ((st = fold_acts(im, acts, n_acts, &t, &c->lo, &c->hi, &c->d2s, &c->d2s_mode, c->fused, &ok,
                      err)))
    return st;
  if (!ok) {
    list_after(im, cf, c->not_fused);
    return CT_OK;
  }
  if ((st = push_nodes(c, acts, n_acts, err)) || (st = push_node(c, q0, err))) return st;
  c->v = graph_out(g, q0, 0);
  c->ok = 1;
  return CT_OK;
}

/* Whether tensor v depends on conv ci's node or anything fused after it. */
static int depends_on(imp *im, int v, int ci) {
  const graph *g = im->g;
  if (v < 0 || g->values[v].producer < 0) return 0;
  int gen = ++im->gen, top = 0;
  im->mark[im->conv_node[ci]] = gen;
  for (int i = 0; i < im->chains[ci].n_nodes; i++) im->mark[im->chains[ci].nodes[i]] = gen;
  im->stack[top++] = g->values[v].producer;
  im->seen[g->values[v].producer] = gen;
  while (top) {
    int n = im->stack[--top];
    if (im->mark[n] == gen) return 1;
    for (int i = 0; i < g->nodes[n].n_in; i++) {
      int u = g->nodes[n].in[i], p = u >= 0 ? g->values[u].producer : -1;
      if (p >= 0 && im->seen[p] != gen) {
        im->seen[p] = gen;
        im->stack[top++] = p;
      }
    }
  }
  return 0;
}

/* Which conv takes each residual Add that two convs reach: the one whose
 * output is the Add's first input, unless the other input depends on it
 * (ResNet's Add(conv3, downsample): conv3; the downsample gets none). */
static ct_status assign_residuals(imp *im, ct_err *err) {
  int n = im->m->n_convs;
  for (int i = 0; i < n; i++) {
    int add = im->chains[i].cand_add, j = -1;
    if (add < 0) continue;
    for (int x = i + 1; x < n && j < 0; x++)
      if (im->chains[x].cand_add == add) j = x;
    int order[2] = {i, j};
    if (j >= 0 && im->chains[j].cand_side == 0 && im->chains[i].cand_side != 0) {
      order[0] = j;
      order[1] = i;
    }
    int winner = -1;
    for (int t = 0; t < 2 && winner < 0; t++)
      if (order[t] >= 0 && !depends_on(im, im->chains[order[t]].cand_r, order[t]))
        winner = order[t];
    if (j >= 0 && j != winner) im->chains[j].cand_add = -1;
    if (i != winner) im->chains[i].cand_add = -1;
    if (winner < 0) continue;
    ct_status st = walk(im, &im->chains[winner], 1, err);
    if (st) return st;
    im->chains[winner].cand_add = -1;
  }
  return CT_OK;
}

static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dup_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = len >= 0 ? malloc((size_t)len + 1) : NULL;
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)len + 1, fmt, ap);
  va_end(ap);
  /* what it quotes comes from the file: printable, whole */
  char *p = err_printable(s);
  free(s);
  return p;
}

/* Where tensor v comes from: the conv whose final output it is (*conv),
 * else the op that makes it, looking through QuantizeLinear and
 * DequantizeLinear ("MaxPool pool1", "graph input 'x'"). Owned. */
static char *source_of(const imp *im, int v, const int *final_of, int *conv) {
  const graph *g = im->g;
  int first_q = -1;
  *conv = -1;
  for (int steps = 0; v >= 0 && steps <= g->n_nodes; steps++) {
    if (final_of[v] >= 0 && first_q < 0) {
      *conv = final_of[v];
      return strdup(im->m->convs[final_of[v]].name);
    }
    int p = g->values[v].producer;
    if (final_of[v] >= 0) /* a conv's output, requantized on the way */
      return dup_printf("%s %s", g->nodes[first_q].op, g->nodes[first_q].name);
    if (p < 0) {
      if (g->values[v].is_input) return dup_printf("graph input '%s'", g->values[v].name);
      if (g->values[v].constant) return dup_printf("constant '%s'", g->values[v].name);
      return dup_printf("undefined tensor '%s'", g->values[v].name);
    }
    if (!graph_is_ms(g, p, "QuantizeLinear") && !graph_is_ms(g, p, "DequantizeLinear"))
      return dup_printf("%s %s", g->nodes[p].op, g->nodes[p].name);
    if (first_q < 0) first_q = p;
    v = graph_in(g, p, 0);
  }
  return strdup("?");
}

/* The convs in a topological order of the fused graph (each conv's unit:
 * its node and every node fused after it), file order where free. */
static ct_status order_convs(imp *im, ct_err *err) {
  const graph *g = im->g;
  model *m = im->m;
  size_t nn = (size_t)g->n_nodes + 1;
  int *unit = malloc(nn * sizeof *unit), *reps = malloc(nn * sizeof *reps);
  int *perm = malloc(((size_t)m->n_convs + 1) * sizeof *perm);
  int *inv = malloc(((size_t)m->n_convs + 1) * sizeof *inv);
  model_conv *sorted = calloc((size_t)m->n_convs + 1, sizeof *sorted);
  ct_status st = CT_OK;
  int count = 0, n_sorted = 0;
  if (!unit || !reps || !perm || !inv || !sorted) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int n = 0; n < g->n_nodes; n++) unit[n] = n;
  for (int ci = 0; ci < m->n_convs; ci++)
    for (int i = 0; i < im->chains[ci].n_nodes; i++)
      unit[im->chains[ci].nodes[i]] = im->conv_node[ci];
  if ((st = graph_order_units(g, unit, reps, &count, err))) goto done;
  for (int i = 0; i < count; i++)
    if (im->conv_of[reps[i]] >= 0) perm[n_sorted++] = im->conv_of[reps[i]];
  if (n_sorted != m->n_convs) {
    st = ERR_SET(err, CT_ERR_INTERNAL, "%s: ordered %d of %d convolutions", g->path, n_sorted,
                 m->n_convs);
    goto done;
  }
  if (!(im->sorted_node = malloc(((size_t)m->n_convs + 1) * sizeof *im->sorted_node))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < m->n_convs; i++) {
    sorted[i] = m->convs[perm[i]];
    inv[perm[i]] = i;
    im->sorted_node[i] = im->conv_node[perm[i]];
  }
  for (int i = 0; i < m->n_convs; i++) {
    if (sorted[i].input_conv >= 0) sorted[i].input_conv = inv[sorted[i].input_conv];
    if (sorted[i].residual_conv >= 0) sorted[i].residual_conv = inv[sorted[i].residual_conv];
  }
  free(m->convs);
  m->convs = sorted;
  sorted = NULL;
done:
  free(unit);
  free(reps);
  free(perm);
  free(inv);
  free(sorted);
  return st;
}

/* ---- float convs --------------------------------------------------------------- */

/* ---- load ------------------------------------------------------------------------ */

static int conv_form(const graph *g, int n) {
  if (graph_is_ms(g, n, "QLinearConv")) return MODEL_QLINEAR;
  if (graph_is(g, n, "ConvInteger")) return MODEL_CONVINTEGER;
  int w = graph_in(g, n, 1), p = w >= 0 ? g->values[w].producer : -1;
  return graph_is_ms(g, n, "DequantizeLinear") || graph_is_ms(g, p, "DequantizeLinear")
             ? MODEL_QDQ
             : MODEL_FLOAT;
}

static int is_conv(const graph *g, int n) {
  return graph_is(g, n, "Conv") || graph_is(g, n, "ConvInteger") ||
         graph_is_ms(g, n, "QLinearConv");
}

/* A stage's result for conv ci: CT_ERR_UNSUPPORTED keeps the reason and
 * goes on; anything else but CT_OK stops the load. */
static ct_status note(imp *im, int ci, ct_status st) {
  if (st != CT_ERR_UNSUPPORTED) return st;
  if (!im->why[ci] && !(im->why[ci] = err_printable(im->why_buf))) return CT_ERR_NO_MEMORY;
  return CT_OK;
}

/* Parts, the chain's start and its walk up to a residual Add. */
static ct_status stage_parts(imp *im, int ci, ct_err *err) {
  int node = im->conv_node[ci], form = conv_form(im->g, node);
  parts *p = &im->parts[ci];
  chain *c = &im->chains[ci];
  qp y;
  ct_status st = CT_OK;
  if (form == MODEL_FLOAT) {
    if (im->m->form != MODEL_FLOAT)
      st = unsup(im, "a float Conv (its data and weights not quantized) in a %s model",
                 model_form_name(im->m->form));
    return note(im, ci, st);
  }
  if (form == MODEL_QDQ) {
    /* a conv that cannot run still has its output followed, so that the
     * convs after it name it as their input */
    if ((st = note(im, ci, parts_qdq(im, node, p, err)))) return st;
    if ((st = note(im, ci, start_qdq(im, node, c, err)))) return st;
  } else if (form == MODEL_QLINEAR) {
    int k = 1;
    if ((st = note(im, ci, parts_qlinear(im, node, p, &y, err)))) return st;
    if (im->why[ci] && (k = soft_qp(im, node, 6, 7, default_qtype(im, graph_in(im->g, node, 0)), &y,
                                    err, &st)) < 0)
      return st;
    if (!k) return CT_OK;
    c->v = graph_out(im->g, node, 0);
    c->ok = c->v >= 0;
    c->t = c->q = y;
    c->lo = tmin(y.type);
    c->hi = tmax(y.type);
  } else {
    if ((st = parts_convinteger(im, node, p, err))) return note(im, ci, st);
    list_after(im, graph_out(im->g, node, 0), c->not_fused);
  }
  return c->ok ? walk(im, c, 0, err) : CT_OK;
}

/* The workload, the values and whether the engine runs it. */
static ct_status stage_workload(imp *im, int ci, const ct_epilogue *float_epi, ct_err *err) {
  const graph *g = im->g;
  int node = im->conv_node[ci], form = conv_form(g, node);
  model_conv *mc = &im->m->convs[ci];
  parts *p = &im->parts[ci];
  ct_status st;
  gshape ws = {-1, {0}};
  if (p->w.data) {
    ws.rank = p->w.rank;
    memcpy(ws.dims, p->w.dims, sizeof ws.dims);
  } else {
    int wv = graph_in(g, node, form == MODEL_QLINEAR ? 3 : 1);
    if (wv >= 0) ws = g->values[wv].shape;
  }
  if (im->why[ci]) { /* listed with what can be known */
    if (conv_workload(im, node, &ws, 0, &mc->w, err) == CT_ERR_NO_MEMORY) return CT_ERR_NO_MEMORY;
    return CT_OK;
  }
  if ((st = note(im, ci, conv_workload(im, node, &ws, 1, &mc->w, err))) || im->why[ci]) return st;
  if (form == MODEL_FLOAT) {
    mc->w.data_type = im->o.float_data;
    mc->w.out_type = im->o.float_out;
    mc->w.epi = *float_epi;
    quant_init(&mc->q, &mc->w);
  } else if ((st = note(im, ci, conv_values(im, node, mc, p, &im->chains[ci], err))) ||
             im->why[ci]) {
    return st;
  }
  ct_err e = {0};
  if (workload_validate(&mc->w, &e) || (form != MODEL_FLOAT && quant_check(&mc->w, &mc->q, &e)))
    if (!(im->why[ci] = strdup(e.msg))) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  return CT_OK;
}

static void imp_free(imp *im) {
  for (int ci = 0; im->chains && im->parts && ci < im->m->n_convs; ci++) {
    free(im->chains[ci].nodes);
    gtensor_free(&im->parts[ci].w);
    free(im->parts[ci].ws);
    free(im->parts[ci].wzp);
  }
  for (int ci = 0; im->why && ci < im->m->n_convs; ci++) free(im->why[ci]);
  free(im->why);
  free(im->chains);
  free(im->parts);
  free(im->conv_of);
  free(im->conv_node);
  free(im->mark);
  free(im->seen);
  free(im->stack);
  free(im->sorted_node);
}

static ct_status assemble(imp *im, ct_err *err) {
  const graph *g = im->g;
  model *m = im->m;
  int *final_of = malloc(((size_t)g->n_values + 1) * sizeof *final_of);
  if (!final_of) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  for (int v = 0; v < g->n_values; v++) final_of[v] = -1;
  for (int ci = 0; ci < m->n_convs; ci++) {
    int v = im->chains[ci].ok ? im->chains[ci].v : graph_out(g, im->conv_node[ci], 0);
    if (v >= 0) final_of[v] = ci;
  }
  ct_status st = CT_OK;
  for (int ci = 0; ci < m->n_convs && !st; ci++) {
    model_conv *mc = &m->convs[ci];
    chain *c = &im->chains[ci];
    int data = im->parts[ci].data_v >= 0 ? im->parts[ci].data_v : graph_in(g, im->conv_node[ci], 0);
    char fused[2 * FUSED_MAX + 16];
    snprintf(fused, sizeof fused, "%s%s%s%s", c->fused, *c->not_fused && *c->fused ? "; " : "",
             *c->not_fused ? "not fused: " : "", c->not_fused);
    mc->fused = strdup(fused);
    int out = im->chains[ci].ok ? im->chains[ci].v : graph_out(g, im->conv_node[ci], 0);
    mc->input_from = source_of(im, data, final_of, &mc->input_conv);
    mc->data_tensor = strdup(data >= 0 ? g->values[data].name : "");
    mc->out_tensor = strdup(out >= 0 ? g->values[out].name : "");
    mc->residual_conv = -1;
    if (c->res) {
      mc->residual_from = source_of(im, c->res_v, final_of, &mc->residual_conv);
      mc->residual_tensor = strdup(g->values[c->res_v].name);
    }
    mc->supported = im->why[ci] == NULL;
    if (im->why[ci]) {
      mc->why = im->why[ci];
      im->why[ci] = NULL;
    }
    if (!mc->fused || !mc->input_from || !mc->data_tensor || !mc->out_tensor ||
        (c->res && (!mc->residual_from || !mc->residual_tensor)))
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  }
  free(final_of);
  return st ? st : order_convs(im, err);
}

/* ---- fused pairs ------------------------------------------------------------------ */

/* Whether w is a pointwise conv: every kernel dim 1, stride 1, no padding,
 * dilation 1, one group. */
static int pointwise(const ct_workload *w) {
  if (w->groups != 1) return 0;
  for (int d = 0; d < workload_nd(w); d++)
    if (w->kernel[d] != 1 || w->stride[d] != 1 || w->dilation[d] != 1 || w->pad_before[d] ||
        w->pad_after[d])
      return 0;
  return 1;
}

/* Whether B's node reads conv A's final output v and nothing else sees it:
 * v has one use and is no graph output, and that use is B itself (a
 * QLinearConv's data) or B's data DequantizeLinear, whose output has one
 * use, B's data, and is no graph output either. */
static int sole_reader(const imp *im, int v, int b_node) {
  const graph *g = im->g;
  if (v < 0 || g->values[v].is_output || g->values[v].n_uses != 1) return 0;
  int u = g->values[v].uses[0];
  if (u == b_node) return graph_in(g, b_node, 0) == v;
  if (!graph_is_ms(g, u, "DequantizeLinear") || graph_in(g, u, 0) != v) return 0;
  int f = graph_out(g, u, 0);
  if (f < 0 || g->values[f].is_output || g->values[f].n_uses != 1) return 0;
  return g->values[f].uses[0] == b_node && graph_in(g, b_node, 0) == f;
}

/* Whether conv a can run fused before conv b, which reads its output; *fw
 * gets b's workload with a before it (validated, with b's values and a's). */
static int fusable(const imp *im, int a, int b, ct_workload *fw) {
  const model_conv *A = &im->m->convs[a], *B = &im->m->convs[b];
  const ct_workload *aw = &A->w, *bw = &B->w;
  if (a == b || !A->supported || !B->supported || !A->weights || !B->weights) return 0;
  /* A runs on its own (neither absorbed nor fused itself), B has no pre yet */
  if (A->fused_into >= 0 || A->pre_conv >= 0 || B->pre_conv >= 0 || bw->pre_c || aw->pre_c)
    return 0;
  if (bw->layout != CT_LAYOUT_NHWC || aw->layout != bw->layout || aw->op != bw->op) return 0;
  if (!pointwise(aw) || aw->out_type == CT_DTYPE_INT32 || aw->epi.residual || aw->epi.d2s_block)
    return 0;
  /* A's output is B's data tensor exactly: type, channels, batch, sizes */
  if (aw->out_type != bw->data_type || aw->k != bw->c || aw->n != bw->n ||
      aw->weight_type != CT_DTYPE_INT8)
    return 0;
  for (int d = 0; d < workload_nd(bw); d++)
    if (aw->in[d] != bw->in[d]) return 0;
  if (!sole_reader(im, graph_find(im->g, A->out_tensor), im->sorted_node[b])) return 0;
  *fw = *bw;
  fw->pre_c = aw->c;
  fw->pre_data_type = aw->data_type;
  fw->pre_epi = aw->epi;
  ct_quant q = B->q;
  q.pre = &A->q;
  q.pre_weights = A->weights;
  return workload_validate(fw, NULL) == CT_OK && quant_check(fw, &q, NULL) == CT_OK;
}

/* Fuse every pair that fusable allows and the caller's hook accepts, in
 * order (a conv absorbed or fused already takes part in no other pair). */
static ct_status fuse_pairs(imp *im, ct_err *err) {
  model *m = im->m;
  for (int b = 0; b < m->n_convs; b++) {
    model_conv *B = &m->convs[b];
    int a = B->input_conv;
    ct_workload fw;
    if (a < 0 || a >= m->n_convs || !fusable(im, a, b, &fw) ||
        im->o.fuse_pre(&fw, im->o.fuse_user) != 1)
      continue;
    model_conv *A = &m->convs[a];
    char *from = strdup(A->input_from ? A->input_from : "");
    char *data = strdup(A->data_tensor ? A->data_tensor : "");
    char *fused = dup_printf("pre: %s (1x1)%s%s", A->name, *B->fused ? ", " : "", B->fused);
    if (!from || !data || !fused) {
      free(from);
      free(data);
      free(fused);
      return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    }
    B->w = fw;
    B->q.pre = &A->q;
    B->q.pre_weights = A->weights;
    B->input_conv = A->input_conv;
    free(B->input_from);
    B->input_from = from;
    free(B->data_tensor);
    B->data_tensor = data;
    free(B->fused);
    B->fused = fused;
    B->pre_conv = a;
    A->fused_into = b;
  }
  return CT_OK;
}

int model_pre_of(const model *m, int i) {
  if (!m || i < 0 || i >= m->n_convs) return -1;
  int a = m->convs[i].pre_conv;
  return a >= 0 && a < m->n_convs && a != i && m->convs[i].w.pre_c > 0 &&
                 m->convs[a].fused_into == i
             ? a
             : -1;
}

int model_absorbed_by(const model *m, int i) {
  if (!m || i < 0 || i >= m->n_convs) return -1;
  int b = m->convs[i].fused_into;
  return b >= 0 && b < m->n_convs && model_pre_of(m, b) == i ? b : -1;
}

int model_n_fused(const model *m) {
  int n = 0;
  for (int i = 0; m && i < m->n_convs; i++) n += model_pre_of(m, i) >= 0;
  return n;
}

ct_status model_quant_table(const model *m, quant_table *t, ct_err *err) {
  if (!m || !t) return ERR_SET(err, CT_ERR_INVALID_ARG, "model_quant_table: NULL argument");
  if (m->form == MODEL_FLOAT) return CT_OK;
  for (int i = 0; i < m->n_convs; i++) {
    const model_conv *c = &m->convs[i];
    if (!c->supported || !workload_has_params(&c->w)) continue;
    ct_workload own;
    workload_main(&c->w, &own);
    ct_status st = quant_table_add(t, &c->w, &c->q, NULL, err);
    if (!st && c->w.pre_c > 0) st = quant_table_add(t, &own, &c->q, NULL, err);
    if (st) {
      err_prefix(err, "node '%s'", c->name);
      return st;
    }
  }
  return CT_OK;
}

ct_status model_load(const char *path, const model_opts *opts, model **out, ct_err *err) {
  if (!out) return ERR_SET(err, CT_ERR_INVALID_ARG, "out is NULL");
  *out = NULL;
  if (!path) return ERR_SET(err, CT_ERR_INVALID_ARG, "model path is NULL");
  imp im = {0};
  model_opts_default(&im.o);
  if (opts) im.o = *opts;
  if (im.o.layout != CT_LAYOUT_NCHW && im.o.layout != CT_LAYOUT_NCHW4C &&
      im.o.layout != CT_LAYOUT_NHWC)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "layout must be nchw (%d), nchw4c (%d) or nhwc (%d), "
                   "got %d",
                   CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C, CT_LAYOUT_NHWC, (int)im.o.layout);
  if (im.o.batch < 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "batch must be 0 or more, got %d", im.o.batch);
  ct_epilogue float_epi;
  ct_status st = workload_epilogue_parse(im.o.float_epilogue, &float_epi, err);
  if (st) {
    err_prefix(err, "the float models' epilogue");
    return st;
  }
  if ((st = graph_open(path, &im.g, err))) return st;
  graph *g = im.g;
  if ((st = graph_shapes(g, im.o.batch, err))) goto fail;
  im.m = calloc(1, sizeof *im.m);
  if (!im.m || !(im.m->path = strdup(path))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto fail;
  }
  model *m = im.m;
  m->batch = g->batch;
  m->form = MODEL_FLOAT;
  size_t nn = (size_t)g->n_nodes + 1;
  im.conv_of = malloc(nn * sizeof *im.conv_of);
  im.conv_node = malloc(nn * sizeof *im.conv_node);
  im.mark = calloc(nn, sizeof *im.mark);
  im.seen = calloc(nn, sizeof *im.seen);
  im.stack = malloc(nn * sizeof *im.stack);
  if (!im.conv_of || !im.conv_node || !im.mark || !im.seen || !im.stack) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto fail;
  }
  for (int n = 0; n < g->n_nodes; n++) {
    im.conv_of[n] = -1;
    if (!is_conv(g, n)) continue;
    im.conv_of[n] = m->n_convs;
    im.conv_node[m->n_convs++] = n;
    if (m->form == MODEL_FLOAT) m->form = (model_form)conv_form(g, n);
  }
  size_t nc = (size_t)m->n_convs + 1;
  m->convs = calloc(nc, sizeof *m->convs);
  im.chains = calloc(nc, sizeof *im.chains);
  im.parts = calloc(nc, sizeof *im.parts);
  im.why = calloc(nc, sizeof *im.why);
  if (!m->convs || !im.chains || !im.parts || !im.why) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto fail;
  }
  for (int ci = 0; ci < m->n_convs && !st; ci++) {
    const gnode *nd = &g->nodes[im.conv_node[ci]];
    model_conv *mc = &m->convs[ci];
    mc->input_conv = mc->residual_conv = mc->pre_conv = mc->fused_into = -1;
    im.chains[ci].cand_add = im.chains[ci].res_v = -1;
    im.chains[ci].v = graph_out(g, im.conv_node[ci], 0);
    im.parts[ci].data_v = im.parts[ci].w_v = im.parts[ci].bias_v = -1;
    /* the names are the file's: printable (control bytes as \xHH), whole */
    if (!(mc->name = err_printable(nd->name)) || !(mc->op_type = err_printable(nd->op)))
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  }
  for (int ci = 0; ci < m->n_convs && !st; ci++) {
    im.why_buf[0] = '\0';
    st = stage_parts(&im, ci, err);
  }
  if (!st) st = assign_residuals(&im, err);
  for (int ci = 0; ci < m->n_convs && !st; ci++) {
    im.why_buf[0] = '\0';
    st = stage_workload(&im, ci, &float_epi, err);
  }
  if (!st) st = assemble(&im, err);
  if (!st && im.o.fuse_pre) st = fuse_pairs(&im, err);
  if (st) goto fail;
  imp_free(&im);
  graph_free(g);
  *out = m;
  return CT_OK;
fail:
  if (im.m) imp_free(&im);
  model_free(im.m);
  graph_free(im.g);
  return st;
}

void model_free(model *m) {
  if (!m) return;
  for (int i = 0; m->convs && i < m->n_convs; i++) {
    model_conv *c = &m->convs[i];
    free(c->name);
    free(c->op_type);
    free(c->why);
    free(c->fused);
    free(c->weights);
    free(c->bias);
    free(c->scale);
    free(c->weight_zero_points);
    free(c->input_from);
    free(c->residual_from);
    free(c->data_tensor);
    free(c->out_tensor);
    free(c->residual_tensor);
  }
  free(m->convs);
  free(m->path);
  free(m);
}

/* The file's base name without ".onnx". Owned. */
static char *set_name(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len = strlen(base);
  if (len > 5 && !strcmp(base + len - 5, ".onnx")) len -= 5;
  return strndup(base, len);
}

ct_status model_workloads(const model *m, wlset **out, int **counts, ct_err *err) {
  *out = NULL;
  *counts = NULL;
  wlset *s = calloc(1, sizeof *s);
  char(*keys)[CT_KEY_MAX] = malloc(((size_t)m->n_convs + 1) * sizeof *keys);
  int *cnt = calloc((size_t)m->n_convs + 1, sizeof *cnt);
  if (!s || !keys || !cnt || !(s->items = calloc((size_t)m->n_convs + 1, sizeof *s->items)) ||
      !(s->name = set_name(m->path)))
    goto oom;
  for (int i = 0; i < m->n_convs; i++) {
    const model_conv *c = &m->convs[i];
    if (!c->supported || model_absorbed_by(m, i) >= 0) continue;
    char key[CT_KEY_MAX];
    workload_key(&c->w, key, sizeof key);
    int j = 0;
    while (j < s->n_items && strcmp(keys[j], key)) j++;
    if (j == s->n_items) {
      if (!(s->items[j].name = strdup(c->name))) goto oom;
      s->items[j].w = c->w;
      memcpy(keys[j], key, sizeof key);
      s->n_items++;
    }
    cnt[j]++;
  }
  free(keys);
  *out = s;
  *counts = cnt;
  return CT_OK;
oom:
  wlset_free(s);
  free(keys);
  free(cnt);
  return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
}
