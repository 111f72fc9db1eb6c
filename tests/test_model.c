/*
 * test_model.c: the ONNX importer (model/). Each test builds its model here
 * in C with protobuf-c (the generated onnx structs, packed to a temporary
 * file), loads it, and checks the convs exactly: workloads, fused ops,
 * values (weights, bias, zero points, the scale's float bits, clamps), the
 * residual's assignment and the order; shapes propagated through pooling,
 * Flatten, Gemm, Reshape and Concat; the batch; external data; and refusals
 * of hostile files (every prefix of a model, garbage, unknown dtypes, bad
 * sizes, deep nesting, cycles), each failing cleanly with the file named;
 * and a 1x1 expansion fused into the depthwise conv it alone feeds when the
 * caller's hook says so, never when its output has another reader.
 */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/quant.h"
#include "core/reference.h"
#include "model/graph.h"
#include "model/model.h"
#include "tests/util.h"

/* ---- a model builder ------------------------------------------------------ */

#define ARENA_MAX 8192
#define LIST_MAX  256

typedef struct mb {
  Onnx__ModelProto m;
  Onnx__GraphProto g;
  Onnx__OperatorSetIdProto opsets[2];
  Onnx__OperatorSetIdProto *opset_list[2];
  Onnx__NodeProto *nodes[LIST_MAX];
  Onnx__TensorProto *inits[LIST_MAX];
  Onnx__ValueInfoProto *inputs[8], *outputs[8], *vinfo[LIST_MAX];
  void *arena[ARENA_MAX];
  int n_arena;
  char dir[512];
} mb;

static void *mb_alloc(mb *b, size_t size) {
  ck_assert_int_lt(b->n_arena, ARENA_MAX);
  void *p = calloc(1, size ? size : 1);
  ck_assert_ptr_nonnull(p);
  b->arena[b->n_arena++] = p;
  return p;
}

static char *mb_str(mb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *mb_str(mb *b, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  char *s = mb_alloc(b, strlen(buf) + 1);
  strcpy(s, buf);
  return s;
}

static void mb_init(mb *b) {
  memset(b, 0, sizeof *b);
  onnx__model_proto__init(&b->m);
  onnx__graph_proto__init(&b->g);
  onnx__operator_set_id_proto__init(&b->opsets[0]);
  onnx__operator_set_id_proto__init(&b->opsets[1]);
  b->opsets[0].domain = "";
  b->opsets[0].has_version = 1;
  b->opsets[0].version = 13;
  b->opsets[1].domain = "com.microsoft";
  b->opsets[1].has_version = 1;
  b->opsets[1].version = 1;
  b->opset_list[0] = &b->opsets[0];
  b->opset_list[1] = &b->opsets[1];
  b->m.has_ir_version = 1;
  b->m.ir_version = 7;
  b->m.n_opset_import = 2;
  b->m.opset_import = b->opset_list;
  b->m.graph = &b->g;
  b->g.name = "test";
  b->g.node = b->nodes;
  b->g.initializer = b->inits;
  b->g.input = b->inputs;
  b->g.output = b->outputs;
  b->g.value_info = b->vinfo;
  scratch(b->dir, sizeof b->dir);
}

static void mb_free(mb *b) {
  for (int i = 0; i < b->n_arena; i++) free(b->arena[i]);
  remove_tree(b->dir);
}

static size_t dtype_size(int t) {
  return t == ONNX_FLOAT || t == ONNX_INT32 ? 4 : t == ONNX_INT64 ? 8 : 1;
}

/* An initializer with raw_data (data: n elements of dtype's C type). */
static Onnx__TensorProto *mb_tensor(mb *b, const char *name, int dtype, int rank,
                                    const int64_t *dims, const void *data) {
  Onnx__TensorProto *t = mb_alloc(b, sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = mb_str(b, "%s", name);
  t->has_data_type = 1;
  t->data_type = dtype;
  t->n_dims = (size_t)rank;
  t->dims = mb_alloc(b, sizeof(int64_t) * (size_t)(rank ? rank : 1));
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    t->dims[i] = dims[i];
    n *= dims[i];
  }
  t->has_raw_data = 1;
  t->raw_data.len = (size_t)n * dtype_size(dtype);
  t->raw_data.data = mb_alloc(b, t->raw_data.len);
  if (data) memcpy(t->raw_data.data, data, t->raw_data.len);
  ck_assert_int_lt(b->g.n_initializer, LIST_MAX);
  b->inits[b->g.n_initializer++] = t;
  return t;
}

static const char *mb_float(mb *b, const char *name, float v) {
  mb_tensor(b, name, ONNX_FLOAT, 0, NULL, &v);
  return name;
}

/* A scalar 8-bit zero point of dtype. */
static const char *mb_zp(mb *b, const char *name, int dtype, int v) {
  int8_t i8 = (int8_t)v;
  uint8_t u8 = (uint8_t)v;
  mb_tensor(b, name, dtype, 0, NULL, dtype == ONNX_INT8 ? (void *)&i8 : (void *)&u8);
  return name;
}

/* "a,b,,d" into a list (empty entries: omitted inputs). */
static char **mb_names(mb *b, const char *list, size_t *n) {
  *n = 0;
  if (!list || !*list) return NULL;
  char **out = mb_alloc(b, sizeof(char *) * 16);
  const char *p = list;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    ck_assert_uint_lt(*n, 16);
    out[*n] = mb_alloc(b, len + 1);
    memcpy(out[*n], p, len);
    (*n)++;
    if (!e) break;
    p = e + 1;
  }
  return out;
}

static Onnx__NodeProto *mb_node(mb *b, const char *op, const char *name, const char *inputs,
                                const char *outputs) {
  Onnx__NodeProto *n = mb_alloc(b, sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = mb_str(b, "%s", op);
  n->name = mb_str(b, "%s", name);
  n->input = mb_names(b, inputs, &n->n_input);
  n->output = mb_names(b, outputs, &n->n_output);
  n->attribute = mb_alloc(b, sizeof(Onnx__AttributeProto *) * 16);
  if (!strcmp(op, "QLinearAdd")) n->domain = "com.microsoft";
  ck_assert_int_lt(b->g.n_node, LIST_MAX);
  b->nodes[b->g.n_node++] = n;
  return n;
}

static Onnx__AttributeProto *mb_attr(mb *b, Onnx__NodeProto *n, const char *name,
                                     Onnx__AttributeProto__AttributeType type) {
  Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = mb_str(b, "%s", name);
  a->has_type = 1;
  a->type = type;
  ck_assert_uint_lt(n->n_attribute, 16);
  n->attribute[n->n_attribute++] = a;
  return a;
}

static void attr_i(mb *b, Onnx__NodeProto *n, const char *name, int64_t v) {
  Onnx__AttributeProto *a = mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
}

static void attr_f(mb *b, Onnx__NodeProto *n, const char *name, float v) {
  Onnx__AttributeProto *a = mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
}

static void attr_s(mb *b, Onnx__NodeProto *n, const char *name, const char *v) {
  Onnx__AttributeProto *a = mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1;
  a->s.len = strlen(v);
  a->s.data = (uint8_t *)mb_str(b, "%s", v);
}

static void attr_ints(mb *b, Onnx__NodeProto *n, const char *name, int count, ...) {
  Onnx__AttributeProto *a = mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = (size_t)count;
  a->ints = mb_alloc(b, sizeof(int64_t) * (size_t)count);
  va_list ap;
  va_start(ap, count);
  for (int i = 0; i < count; i++) a->ints[i] = va_arg(ap, int);
  va_end(ap);
}

/* A tensor type; dims < 0 are the symbolic "N". */
static Onnx__TypeProto *mb_type(mb *b, int elem, int rank, const int64_t *dims) {
  Onnx__TypeProto *tp = mb_alloc(b, sizeof *tp);
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = mb_alloc(b, sizeof *tt);
  onnx__type_proto__tensor__init(tt);
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  if (rank < 0) return tp;
  Onnx__TensorShapeProto *sh = mb_alloc(b, sizeof *sh);
  onnx__tensor_shape_proto__init(sh);
  tt->shape = sh;
  sh->n_dim = (size_t)rank;
  sh->dim = mb_alloc(b, sizeof(void *) * (size_t)(rank ? rank : 1));
  for (int i = 0; i < rank; i++) {
    Onnx__TensorShapeProto__Dimension *d = mb_alloc(b, sizeof *d);
    onnx__tensor_shape_proto__dimension__init(d);
    if (dims[i] >= 0) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = dims[i];
    } else {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = "N";
    }
    sh->dim[i] = d;
  }
  return tp;
}

static Onnx__ValueInfoProto *mb_vi(mb *b, const char *name, Onnx__TypeProto *tp) {
  Onnx__ValueInfoProto *vi = mb_alloc(b, sizeof *vi);
  onnx__value_info_proto__init(vi);
  vi->name = mb_str(b, "%s", name);
  vi->type = tp;
  return vi;
}

static void mb_input(mb *b, const char *name, int elem, int rank, ...) {
  int64_t dims[8];
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) dims[i] = va_arg(ap, int);
  va_end(ap);
  b->inputs[b->g.n_input++] = mb_vi(b, name, mb_type(b, elem, rank, dims));
}

static void mb_output(mb *b, const char *name) {
  b->outputs[b->g.n_output++] = mb_vi(b, name, NULL);
}

static void mb_value_info(mb *b, const char *name, int elem, int rank, ...) {
  int64_t dims[8];
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) dims[i] = va_arg(ap, int);
  va_end(ap);
  b->vinfo[b->g.n_value_info++] = mb_vi(b, name, mb_type(b, elem, rank, dims));
}

/* Pack the model into b->dir/file; returns the path (in b's arena). */
static const char *mb_write(mb *b, const char *file) {
  size_t len = onnx__model_proto__get_packed_size(&b->m);
  uint8_t *buf = mb_alloc(b, len);
  ck_assert_uint_eq(onnx__model_proto__pack(&b->m, buf), len);
  const char *path = mb_str(b, "%s/%s", b->dir, file);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
  fclose(f);
  return path;
}

/* ---- QDQ pieces ------------------------------------------------------------ */

/* A quantization's initializers "P.s" and "P.z". */
typedef struct qpn {
  const char *s, *z;
  float scale;
  int zp, type;
} qpn;

static qpn mb_qp(mb *b, const char *prefix, float scale, int zp, int type) {
  qpn q = {mb_str(b, "%s.s", prefix), mb_str(b, "%s.z", prefix), scale, zp, type};
  mb_float(b, q.s, scale);
  mb_zp(b, q.z, type, zp);
  return q;
}

static const char *Q(mb *b, const char *x, qpn q, const char *out) {
  mb_node(b, "QuantizeLinear", mb_str(b, "Q_%s", out), mb_str(b, "%s,%s,%s", x, q.s, q.z), out);
  return out;
}

static const char *DQ(mb *b, const char *x, qpn q, const char *out) {
  mb_node(b, "DequantizeLinear", mb_str(b, "DQ_%s", out), mb_str(b, "%s,%s,%s", x, q.s, q.z), out);
  return out;
}

/* The weight value i of a conv's weights: every int8 value occurs. */
static int wval(int i, int u8) {
  int v = (i * 37 + 11) % 256;
  return u8 ? v : v - 128;
}

/* A QDQ conv's weights and bias. */
typedef struct wspec {
  int k, c, nd, kernel[3];
  int per_channel; /* K weight scales, else 1 */
  int u8;          /* uint8 weights */
  int zw;          /* the weight zero point (each channel: zw + k % 3 when per_channel) */
  int bias;        /* 0: none; 1: int32 through DQ; 2: float */
  int group;
} wspec;

static float wscale(int k) {
  return 0.002f + 0.0005f * (float)k;
}

static int32_t bias_val(int k) {
  return k * 1000 - 3333;
}

static int zw_of(const wspec *w, int k) {
  return w->zw + (w->per_channel ? k % 3 : 0);
}

/* Conv `name` on DQ(xq) with weights per ws; returns its float output. */
static const char *qdq_conv(mb *b, const char *name, const char *xq, qpn x, const wspec *ws,
                            float x_s) {
  int64_t dims[5] = {ws->k, ws->c / (ws->group ? ws->group : 1), ws->kernel[0], ws->kernel[1],
                     ws->kernel[2]};
  int rank = ws->nd + 2;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  int8_t *w = mb_alloc(b, (size_t)n);
  for (int64_t i = 0; i < n; i++) w[i] = (int8_t)wval((int)i, ws->u8);
  int nsc = ws->per_channel ? ws->k : 1;
  float *sc = mb_alloc(b, sizeof(float) * (size_t)nsc);
  uint8_t *zp = mb_alloc(b, (size_t)nsc);
  for (int i = 0; i < nsc; i++) {
    sc[i] = wscale(i);
    zp[i] = (uint8_t)zw_of(ws, i);
  }
  int64_t kdim = nsc;
  int wt = ws->u8 ? ONNX_UINT8 : ONNX_INT8;
  mb_tensor(b, mb_str(b, "%s.wq", name), wt, rank, dims, w);
  mb_tensor(b, mb_str(b, "%s.ws", name), ONNX_FLOAT, ws->per_channel, &kdim, sc);
  mb_tensor(b, mb_str(b, "%s.wz", name), wt, ws->per_channel, &kdim, zp);
  Onnx__NodeProto *dqw =
      mb_node(b, "DequantizeLinear", mb_str(b, "%s.DQw", name),
              mb_str(b, "%s.wq,%s.ws,%s.wz", name, name, name), mb_str(b, "%s.w", name));
  if (ws->per_channel) attr_i(b, dqw, "axis", 0);
  const char *xf = DQ(b, xq, x, mb_str(b, "%s.x", name));
  const char *bias = "";
  if (ws->bias == 1) {
    int64_t k = ws->k;
    int32_t *bv = mb_alloc(b, sizeof(int32_t) * (size_t)ws->k);
    float *bs = mb_alloc(b, sizeof(float) * (size_t)ws->k);
    for (int i = 0; i < ws->k; i++) {
      bv[i] = bias_val(i);
      bs[i] = x_s * wscale(ws->per_channel ? i : 0);
    }
    mb_tensor(b, mb_str(b, "%s.bq", name), ONNX_INT32, 1, &k, bv);
    mb_tensor(b, mb_str(b, "%s.bs", name), ONNX_FLOAT, 1, &k, bs);
    mb_node(b, "DequantizeLinear", mb_str(b, "%s.DQb", name), mb_str(b, "%s.bq,%s.bs", name, name),
            mb_str(b, "%s.b", name));
    bias = mb_str(b, "%s.b", name);
  } else if (ws->bias == 2) {
    int64_t k = ws->k;
    float *bv = mb_alloc(b, sizeof(float) * (size_t)ws->k);
    mb_tensor(b, mb_str(b, "%s.bf", name), ONNX_FLOAT, 1, &k, bv);
    bias = mb_str(b, "%s.bf", name);
  }
  const char *out = mb_str(b, "%s.out", name);
  Onnx__NodeProto *c =
      mb_node(b, "Conv", name, mb_str(b, "%s,%s.w%s%s", xf, name, *bias ? "," : "", bias), out);
  if (ws->group > 1) attr_i(b, c, "group", ws->group);
  return out;
}

static ct_status load(const char *path, int batch, ct_layout layout, model **m, ct_err *err) {
  model_opts o;
  model_opts_default(&o);
  o.batch = batch;
  o.layout = layout;
  memset(err, 0, sizeof *err);
  return model_load(path, &o, m, err);
}

/* The conv called name. */
static const model_conv *conv_named(const model *m, const char *name) {
  for (int i = 0; i < m->n_convs; i++)
    if (!strcmp(m->convs[i].name, name)) return &m->convs[i];
  ck_abort_msg("no conv '%s'", name);
  return NULL;
}

static int conv_index(const model *m, const char *name) {
  return (int)(conv_named(m, name) - m->convs);
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static char *key_of(const ct_workload *w) {
  static char buf[CT_KEY_MAX];
  return workload_key(w, buf, sizeof buf);
}

/* x (float [N,C,H,W]) -> Q -> a quantized tensor "xq" with q. */
static const char *quant_input(mb *b, int c, int h, int w, qpn q) {
  mb_input(b, "x", ONNX_FLOAT, 4, 2, c, h, w);
  return Q(b, "x", q, "xq");
}

static Onnx__NodeProto *find_node(mb *b, const char *name) {
  for (size_t i = 0; i < b->g.n_node; i++)
    if (!strcmp(b->nodes[i]->name, name)) return b->nodes[i];
  ck_abort_msg("no node '%s'", name);
  return NULL;
}

/* ---- forms and values ---------------------------------------------------------- */

START_TEST(qdq_int8_per_tensor) {
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 3, 9, 7, x);
  wspec ws = {.k = 5, .c = 3, .nd = 2, .kernel = {3, 3}, .bias = 1};
  const char *cf = qdq_conv(&b, "conv", xq, x, &ws, x.scale);
  attr_ints(&b, find_node(&b, "conv"), "pads", 4, 1, 0, 1, 2);
  attr_ints(&b, find_node(&b, "conv"), "strides", 2, 2, 1);
  qpn y = mb_qp(&b, "y", 0.1f, -3, ONNX_INT8);
  Q(&b, cf, y, "yq");
  mb_output(&b, "yq");
  const char *path = mb_write(&b, "m.onnx");
  model *m;
  ct_err err;
  ck_assert_msg(load(path, 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->form, MODEL_QDQ);
  ck_assert_int_eq(m->batch, 2);
  ck_assert_int_eq(m->n_convs, 1);
  const model_conv *c = &m->convs[0];
  ck_assert_msg(c->supported, "%s", c->why ? c->why : "");
  ck_assert_str_eq(c->name, "conv");
  ck_assert_str_eq(c->op_type, "Conv");
  ck_assert_str_eq(c->fused, "");
  ck_assert_str_eq(c->input_from, "graph input 'x'");
  ck_assert_int_eq(c->input_conv, -1);
  ck_assert_ptr_null(c->residual_from);
  /* out = (9 + 1 + 1 - 3) / 2 + 1 = 5, (7 + 0 + 2 - 3) / 1 + 1 = 7 */
  ck_assert_str_eq(key_of(&c->w),
                   "conv2d-nhwc-i8.i8.i8-n2-c3-k5-9x7-r3x3-s2x1-p1x0.1x2-d1x1-bias-onnx");
  ck_assert_int_eq(c->w.epi.rounding, CT_ROUND_ONNX);
  ck_assert_int_eq(c->w.epi.scale, CT_SCALE_TENSOR);
  for (int i = 0; i < 5 * 3 * 9; i++) ck_assert_int_eq(c->weights[i], wval(i, 0));
  for (int k = 0; k < 5; k++) ck_assert_int_eq(c->bias[k], bias_val(k));
  ck_assert_ptr_null(c->weight_zero_points);
  float xw = 0.02f * wscale(0);
  ck_assert_uint_eq(bits(c->scale[0]), bits(xw / 0.1f));
  ck_assert_ptr_eq(c->q.scale, c->scale);
  ck_assert_ptr_eq(c->q.bias, c->bias);
  ck_assert_int_eq(c->q.out_zero_point, -3);
  ck_assert_int_eq(c->q.clamp_min, -128);
  ck_assert_int_eq(c->q.clamp_max, 127);
  ck_assert_int_eq(c->q.data_zero_point, 0);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* uint8 data and output with zero points; weights per channel, int8 (_i 0)
 * or uint8 (_i 1, made int8 by subtracting 128 from weights and zero points). */
START_TEST(qdq_uint8_per_channel) {
  int u8w = _i;
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.03f, 128, ONNX_UINT8);
  const char *xq = quant_input(&b, 4, 6, 6, x);
  wspec ws = {.k = 6,
              .c = 4,
              .nd = 2,
              .kernel = {3, 1},
              .per_channel = 1,
              .u8 = u8w,
              .zw = u8w ? 128 : 0,
              .bias = 1};
  const char *cf = qdq_conv(&b, "conv", xq, x, &ws, x.scale);
  qpn y = mb_qp(&b, "y", 0.25f, 7, ONNX_UINT8);
  Q(&b, cf, y, "yq");
  mb_output(&b, "yq");
  const char *path = mb_write(&b, "m.onnx");
  model *m;
  ct_err err;
  ck_assert_msg(load(path, 0, CT_LAYOUT_NCHW, &m, &err) == CT_OK, "%s", err.msg);
  const model_conv *c = &m->convs[0];
  ck_assert_msg(c->supported, "%s", c->why ? c->why : "");
  ck_assert_int_eq(c->w.data_type, CT_DTYPE_UINT8);
  ck_assert_int_eq(c->w.weight_type, CT_DTYPE_INT8);
  ck_assert_int_eq(c->w.out_type, CT_DTYPE_UINT8);
  ck_assert_int_eq(c->w.epi.data_zero_point, 1);
  ck_assert_int_eq(c->w.epi.weight_zero_point, 1); /* k % 3 */
  ck_assert_int_eq(c->w.epi.scale, CT_SCALE_CHANNEL);
  ck_assert_int_eq(c->w.kernel[0], 3);
  ck_assert_int_eq(c->w.kernel[1], 1);
  ck_assert_int_eq(c->q.data_zero_point, 128);
  ck_assert_int_eq(c->q.out_zero_point, 7);
  ck_assert_int_eq(c->q.clamp_min, 0);
  ck_assert_int_eq(c->q.clamp_max, 255);
  for (int i = 0; i < 6 * 4 * 3; i++)
    ck_assert_int_eq(c->weights[i], wval(i, u8w) - (u8w ? 128 : 0));
  for (int k = 0; k < 6; k++) {
    ck_assert_int_eq(c->weight_zero_points[k], k % 3);
    float xw = 0.03f * wscale(k);
    ck_assert_uint_eq(bits(c->scale[k]), bits(xw / 0.25f));
  }
  ck_assert_ptr_eq(c->q.weight_zero_points, c->weight_zero_points);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* uint8 weights with zero point 128: int8 weights without a zero point. */
START_TEST(qdq_uint8_weights_symmetric) {
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.5f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 4, 5, 5, x);
  wspec ws = {.k = 4, .c = 4, .nd = 2, .kernel = {1, 1}, .u8 = 1, .zw = 128};
  Q(&b, qdq_conv(&b, "conv", xq, x, &ws, x.scale), mb_qp(&b, "y", 1.0f, 0, ONNX_INT8), "yq");
  mb_output(&b, "yq");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  const model_conv *c = &m->convs[0];
  ck_assert(c->supported);
  ck_assert_int_eq(c->w.epi.weight_zero_point, 0);
  ck_assert_ptr_null(c->weight_zero_points);
  ck_assert_int_eq(c->w.epi.bias, 0);
  ck_assert_ptr_null(c->bias);
  for (int i = 0; i < 16; i++) ck_assert_int_eq(c->weights[i], wval(i, 1) - 128);
  model_free(m);
  mb_free(&b);
}
END_TEST

START_TEST(qdq_conv3d) {
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, -5, ONNX_INT8);
  mb_input(&b, "x", ONNX_FLOAT, 5, 1, 4, 5, 6, 7);
  const char *xq = Q(&b, "x", x, "xq");
  wspec ws = {.k = 8, .c = 4, .nd = 3, .kernel = {3, 3, 1}, .per_channel = 1, .bias = 1};
  const char *cf = qdq_conv(&b, "c3", xq, x, &ws, x.scale);
  attr_ints(&b, find_node(&b, "c3"), "pads", 6, 1, 1, 0, 1, 0, 0);
  attr_ints(&b, find_node(&b, "c3"), "strides", 3, 1, 2, 2);
  attr_ints(&b, find_node(&b, "c3"), "kernel_shape", 3, 3, 3, 1);
  Q(&b, cf, mb_qp(&b, "y", 0.1f, 0, ONNX_INT8), "yq");
  mb_output(&b, "yq");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  const model_conv *c = &m->convs[0];
  ck_assert_msg(c->supported, "%s", c->why ? c->why : "");
  ck_assert_int_eq(c->w.op, CT_OP_CONV3D);
  ck_assert_str_eq(
      key_of(&c->w),
      "conv3d-ndhwc-i8.i8.i8-n1-c4-k8-5x6x7-r3x3x1-s1x2x2-p1x1x0.1x0x0-d1x1x1-zd-zw-bias-qc-onnx");
  ck_assert_int_eq(c->q.data_zero_point, -5);
  for (int i = 0; i < 8 * 4 * 9; i++) ck_assert_int_eq(c->weights[i], wval(i, 0));
  model_free(m);
  mb_free(&b);
}
END_TEST

/* ---- fusion ------------------------------------------------------------------- */

/* A 4 -> 4 channel 1x1 conv named name on quantized xq; its float output. */
static const char *conv44(mb *b, const char *name, const char *xq, qpn x) {
  wspec ws = {.k = 4, .c = 4, .nd = 2, .kernel = {1, 1}, .bias = 1};
  return qdq_conv(b, name, xq, x, &ws, x.scale);
}

/* DQ(t) -> op -> Q(q2): returns Q's output. */
static const char *dq_op_q(mb *b, const char *t, qpn q, Onnx__NodeProto **op_node, const char *op,
                           const char *extra_inputs, qpn q2, const char *out) {
  const char *f = DQ(b, t, q, mb_str(b, "%s.dq", out));
  *op_node =
      mb_node(b, op, mb_str(b, "%s_%s", op, out),
              mb_str(b, "%s%s", f, extra_inputs ? extra_inputs : ""), mb_str(b, "%s.f", out));
  return Q(b, mb_str(b, "%s.f", out), q2, out);
}

START_TEST(relu_and_clip) {
  mb b;
  mb_init(&b);
  Onnx__NodeProto *op;
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 4, 5, 5, x);
  /* c1: Q -> DQ -> Relu -> Q of the same quantization: folded */
  qpn y1 = mb_qp(&b, "y1", 0.05f, -10, ONNX_INT8);
  const char *t1 = Q(&b, conv44(&b, "c1", xq, x), y1, "t1");
  const char *r1 = dq_op_q(&b, t1, y1, &op, "Relu", NULL, y1, "r1");
  /* c2: Conv -> Relu -> Q: folded */
  qpn y2 = mb_qp(&b, "y2", 0.04f, 3, ONNX_INT8);
  mb_node(&b, "Relu", "relu2", conv44(&b, "c2", r1, y1), "c2.relu");
  const char *t2 = Q(&b, "c2.relu", y2, "t2");
  /* c3: Relu between two different quantizations: not folded */
  qpn y3 = mb_qp(&b, "y3", 0.05f, -10, ONNX_INT8), y3b = mb_qp(&b, "y3b", 0.05f, -9, ONNX_INT8);
  const char *t3 = Q(&b, conv44(&b, "c3", t2, y2), y3, "t3");
  const char *r3 = dq_op_q(&b, t3, y3, &op, "Relu", NULL, y3b, "r3");
  /* c4: Clip(0, 6) on inputs, the same quantization: [zp, zp + rne(6 / s)] */
  qpn y4 = mb_qp(&b, "y4", 0.05f, -10, ONNX_INT8);
  mb_float(&b, "zero", 0.0f);
  mb_float(&b, "six", 6.0f);
  const char *t4 = Q(&b, conv44(&b, "c4", r3, y3b), y4, "t4");
  const char *r4 = dq_op_q(&b, t4, y4, &op, "Clip", ",zero,six", y4, "r4");
  /* c5: Clip with attributes (opset 6), max saturating */
  qpn y5 = mb_qp(&b, "y5", 0.05f, 0, ONNX_UINT8);
  const char *t5 = Q(&b, conv44(&b, "c5", r4, y4), y5, "t5");
  const char *r5 = dq_op_q(&b, t5, y5, &op, "Clip", NULL, y5, "r5");
  attr_f(&b, op, "min", 0.26f);
  attr_f(&b, op, "max", 100.0f);
  /* c6: Clip whose max is not a constant: not folded */
  mb_input(&b, "hi", ONNX_FLOAT, 0);
  const char *t6 = Q(&b, conv44(&b, "c6", r5, y5), y4, "t6");
  const char *r6 = dq_op_q(&b, t6, y4, &op, "Clip", ",zero,hi", y4, "r6");
  mb_output(&b, r6);
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->n_convs, 6);
  const model_conv *c1 = conv_named(m, "c1"), *c2 = conv_named(m, "c2"), *c3 = conv_named(m, "c3");
  const model_conv *c4 = conv_named(m, "c4"), *c5 = conv_named(m, "c5"), *c6 = conv_named(m, "c6");
  ck_assert_str_eq(c1->fused, "Relu");
  ck_assert_int_eq(c1->q.clamp_min, -10);
  ck_assert_int_eq(c1->q.clamp_max, 127);
  ck_assert_int_eq(c2->input_conv, conv_index(m, "c1"));
  ck_assert_str_eq(c2->fused, "Relu");
  ck_assert_int_eq(c2->q.clamp_min, 3);
  ck_assert_int_eq(c3->q.clamp_min, -128);
  ck_assert_str_eq(c3->fused, "not fused: Relu (requantized)");
  ck_assert_int_eq(c4->input_conv, -1);
  ck_assert_str_eq(c4->input_from, "Relu Relu_r3");
  ck_assert_str_eq(c4->fused, "Clip");
  ck_assert_int_eq(c4->q.clamp_min, -10);
  ck_assert_int_eq(c4->q.clamp_max, (int)(nearbyintf(6.0f / 0.05f) + -10.0f));
  ck_assert_int_eq(c5->w.out_type, CT_DTYPE_UINT8);
  ck_assert_int_eq(c5->q.clamp_min, (int)nearbyintf(0.26f / 0.05f));
  ck_assert_int_eq(c5->q.clamp_max, 255);
  ck_assert_str_eq(c6->fused, "");
  ck_assert_int_eq(c6->q.clamp_min, -128);
  for (int i = 0; i < 6; i++) ck_assert(m->convs[i].supported);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* conv -> [Relu] -> Q(t) -> DQ -> Add with DQ(r) (r the graph's quantized
 * input), second (_i 0) or first (_i 1) -> Relu -> Q(y). */
START_TEST(residual_add) {
  int first = _i;
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 5, ONNX_INT8);
  const char *xq = quant_input(&b, 4, 5, 5, x);
  qpn t = mb_qp(&b, "t", 0.03f, -2, ONNX_INT8), y = mb_qp(&b, "y", 0.07f, -6, ONNX_INT8);
  mb_node(&b, "Relu", "pre", conv44(&b, "conv", xq, x), "pre.out");
  const char *tq = Q(&b, "pre.out", t, "tq");
  const char *tf = DQ(&b, tq, t, "tf"), *rf = DQ(&b, xq, x, "rf");
  mb_node(&b, "Add", "add", first ? mb_str(&b, "%s,%s", rf, tf) : mb_str(&b, "%s,%s", tf, rf),
          "sum");
  mb_node(&b, "Relu", "post", "sum", "sum.relu");
  Q(&b, "sum.relu", y, "yq");
  mb_output(&b, "yq");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  const model_conv *c = &m->convs[0];
  ck_assert_msg(c->supported, "%s", c->why ? c->why : "");
  ck_assert_str_eq(c->fused, "Relu,Add(residual),Relu");
  ck_assert_int_eq(c->w.epi.residual, 1);
  ck_assert_int_eq(c->w.epi.data_zero_point, 1);
  ck_assert_ptr_nonnull(strstr(key_of(&c->w), "-res"));
  ck_assert_str_eq(c->residual_from, "graph input 'x'");
  ck_assert_int_eq(c->residual_conv, -1);
  ck_assert_str_eq(c->data_tensor, "xq");
  ck_assert_str_eq(c->out_tensor, "yq");
  ck_assert_str_eq(c->residual_tensor, "xq");
  ck_assert_int_eq(c->q.residual_first, first);
  ck_assert_int_eq(c->q.residual_zero_point, 5);
  ck_assert_uint_eq(bits(c->q.residual_scale), bits(0.02f / 0.07f));
  ck_assert_int_eq(c->q.mid_zero_point, -2);
  ck_assert_uint_eq(bits(c->q.mid_scale), bits(0.03f / 0.07f));
  ck_assert_int_eq(c->q.mid_clamp_min, -2); /* the Relu before the Add */
  ck_assert_int_eq(c->q.mid_clamp_max, 127);
  ck_assert_int_eq(c->q.out_zero_point, -6);
  ck_assert_int_eq(c->q.clamp_min, -6); /* the Relu after it */
  ck_assert_int_eq(c->q.clamp_max, 127);
  float xw = 0.02f * wscale(0); /* scale maps to t */
  ck_assert_uint_eq(bits(c->scale[0]), bits(xw / 0.03f));
  model_free(m);
  mb_free(&b);
}
END_TEST

/* An Add that broadcasts is no residual: the conv ends at t. */
START_TEST(residual_broadcast_not_fused) {
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8), t = mb_qp(&b, "t", 0.03f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 4, 5, 5, x);
  const char *tq = Q(&b, conv44(&b, "conv", xq, x), t, "tq");
  int8_t r[4] = {1, 2, 3, 4};
  int64_t rd[4] = {1, 4, 1, 1};
  mb_tensor(&b, "rq", ONNX_INT8, 4, rd, r);
  mb_node(&b, "Add", "add", mb_str(&b, "%s,%s", DQ(&b, tq, t, "tf"), DQ(&b, "rq", t, "rf")), "sum");
  Q(&b, "sum", t, "yq");
  mb_output(&b, "yq");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->convs[0].w.epi.residual, 0);
  ck_assert_str_eq(m->convs[0].fused, "");
  model_free(m);
  mb_free(&b);
}
END_TEST

/* ResNet's bottleneck with a downsample, in torchvision's node order
 * (conv1, conv2, conv3, ds, Add): Add(conv3, ds) gives conv3 the residual
 * (_i 0); Add(ds, conv3) gives it to ds (_i 1). The taker comes after the
 * other in the order. */
START_TEST(resnet_block_downsample) {
  int ds_first = _i;
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 16, 8, 8, x);
  qpn t1 = mb_qp(&b, "t1", 0.03f, 0, ONNX_INT8), t2 = mb_qp(&b, "t2", 0.04f, 0, ONNX_INT8);
  qpn t3 = mb_qp(&b, "t3", 0.05f, 0, ONNX_INT8), td = mb_qp(&b, "td", 0.06f, 0, ONNX_INT8);
  qpn y = mb_qp(&b, "y", 0.07f, 0, ONNX_INT8);
  wspec w1 = {.k = 8, .c = 16, .nd = 2, .kernel = {1, 1}, .per_channel = 1, .bias = 1};
  wspec w2 = {.k = 8, .c = 8, .nd = 2, .kernel = {3, 3}, .per_channel = 1, .bias = 1};
  wspec w3 = {.k = 32, .c = 8, .nd = 2, .kernel = {1, 1}, .per_channel = 1, .bias = 1};
  wspec wd = {.k = 32, .c = 16, .nd = 2, .kernel = {1, 1}, .per_channel = 1, .bias = 1};
  mb_node(&b, "Relu", "relu1", qdq_conv(&b, "conv1", xq, x, &w1, x.scale), "r1");
  const char *q1 = Q(&b, "r1", t1, "q1");
  const char *c2 = qdq_conv(&b, "conv2", q1, t1, &w2, t1.scale);
  attr_ints(&b, find_node(&b, "conv2"), "pads", 4, 1, 1, 1, 1);
  mb_node(&b, "Relu", "relu2", c2, "r2");
  const char *q2 = Q(&b, "r2", t2, "q2");
  const char *q3 = Q(&b, qdq_conv(&b, "conv3", q2, t2, &w3, t2.scale), t3, "q3");
  const char *qd = Q(&b, qdq_conv(&b, "ds", xq, x, &wd, x.scale), td, "qd");
  const char *f3 = DQ(&b, q3, t3, "f3"), *fd = DQ(&b, qd, td, "fd");
  mb_node(&b, "Add", "add", ds_first ? mb_str(&b, "%s,%s", fd, f3) : mb_str(&b, "%s,%s", f3, fd),
          "sum");
  mb_node(&b, "Relu", "relu3", "sum", "r3");
  const char *yq = Q(&b, "r3", y, "yq");
  wspec wn = {.k = 4, .c = 32, .nd = 2, .kernel = {1, 1}};
  Q(&b, qdq_conv(&b, "next", yq, y, &wn, y.scale), y, "out");
  mb_output(&b, "out");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->n_convs, 5);
  int i1 = conv_index(m, "conv1"), i2 = conv_index(m, "conv2"), i3 = conv_index(m, "conv3");
  int id = conv_index(m, "ds"), in = conv_index(m, "next");
  const model_conv *taker = &m->convs[ds_first ? id : i3], *other = &m->convs[ds_first ? i3 : id];
  ck_assert(i1 < i2 && i2 < i3);
  ck_assert_int_eq(taker->w.epi.residual, 1);
  ck_assert_int_eq(other->w.epi.residual, 0);
  ck_assert_int_eq(taker->residual_conv, (int)(other - m->convs));
  ck_assert_str_eq(taker->residual_from, other->name);
  ck_assert_int_eq(taker->q.residual_first, 0);
  ck_assert_str_eq(taker->fused, "Add(residual),Relu");
  ck_assert_str_eq(other->fused, "");
  ck_assert_str_eq(taker->residual_tensor, other->out_tensor);
  ck_assert_str_eq(m->convs[in].data_tensor, "yq");
  ck_assert_str_eq(taker->out_tensor, "yq");
  ck_assert_ptr_null(other->residual_tensor);
  ck_assert_int_lt((int)(other - m->convs), (int)(taker - m->convs));
  ck_assert_int_eq(taker->q.clamp_min, 0);
  ck_assert_int_eq(m->convs[in].input_conv, (int)(taker - m->convs));
  ck_assert_int_eq(m->convs[i3].input_conv, i2);
  ck_assert_int_eq(m->convs[i2].input_conv, i1);
  ck_assert_str_eq(m->convs[id].input_from, "graph input 'x'");
  ck_assert_str_eq(m->convs[i1].fused, "Relu");
  ck_assert_int_eq(m->convs[in].w.c, 32);
  ck_assert_int_eq(m->convs[in].w.in[0], 8);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* conv -> Q -> DepthToSpace (_i 0, on the quantized tensor, CRD),
 * DQ -> DepthToSpace -> Q (_i 1, DCR by default), or DQ -> DepthToSpace
 * into the float output (_i 2: an exported pixel shuffle, as
 * scripts/models' ESPCN-like net ends). */
START_TEST(depth_to_space) {
  mb b;
  mb_init(&b);
  Onnx__NodeProto *d2s;
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8), t = mb_qp(&b, "t", 0.05f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 4, 6, 5, x);
  wspec ws = {.k = 16, .c = 4, .nd = 2, .kernel = {3, 3}, .bias = 1};
  const char *cf = qdq_conv(&b, "conv", xq, x, &ws, x.scale);
  attr_ints(&b, find_node(&b, "conv"), "pads", 4, 1, 1, 1, 1);
  const char *tq = Q(&b, cf, t, "tq");
  if (_i == 0) {
    d2s = mb_node(&b, "DepthToSpace", "d2s", tq, "out");
    attr_s(&b, d2s, "mode", "CRD");
    mb_output(&b, "out");
  } else if (_i == 1) {
    mb_output(&b, dq_op_q(&b, tq, t, &d2s, "DepthToSpace", NULL, t, "out"));
  } else {
    d2s = mb_node(&b, "DepthToSpace", "d2s", DQ(&b, tq, t, "tf"), "out");
    mb_output(&b, "out");
  }
  attr_i(&b, d2s, "blocksize", 2);
  const char *path = mb_write(&b, "m.onnx");
  model *m;
  ct_err err;
  ck_assert_msg(load(path, 0, CT_LAYOUT_NCHW, &m, &err) == CT_OK, "%s", err.msg);
  const model_conv *c = &m->convs[0];
  ck_assert_msg(c->supported, "%s", c->why ? c->why : "");
  ck_assert_str_eq(c->fused, "DepthToSpace");
  ck_assert_int_eq(c->w.epi.d2s_block, 2);
  ck_assert_int_eq(c->w.epi.d2s_mode, _i == 0 ? CT_D2S_CRD : CT_D2S_DCR);
  model_free(m);
  /* channels-last: the engine has no remap there, so the conv runs and
   * the DepthToSpace is listed as not fused */
  ck_assert_msg(load(path, 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(m->convs[0].supported, "%s", m->convs[0].why ? m->convs[0].why : "");
  ck_assert_int_eq(m->convs[0].w.epi.d2s_block, 0);
  ck_assert_msg(strstr(m->convs[0].fused, "DepthToSpace"), "%s", m->convs[0].fused);
  ck_assert_msg(strstr(m->convs[0].fused, "not fused"), "%s", m->convs[0].fused);
  wlset *s;
  int *counts;
  ck_assert_int_eq(model_workloads(m, &s, &counts, &err), CT_OK);
  ck_assert_int_eq(s->n_items, 1);
  wlset_free(s);
  free(counts);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* QLinearConv (uint8 data, int8 per-channel weights, int32 bias) then
 * com.microsoft QLinearAdd of the model's input as the residual. */
START_TEST(qlinear_conv_add) {
  mb b;
  mb_init(&b);
  mb_input(&b, "xq", ONNX_UINT8, 4, 1, 4, 5, 5);
  qpn x = mb_qp(&b, "x", 0.02f, 100, ONNX_UINT8), y = mb_qp(&b, "y", 0.05f, 120, ONNX_UINT8);
  qpn z = mb_qp(&b, "z", 0.07f, 110, ONNX_UINT8);
  int64_t wd[4] = {4, 4, 3, 3}, k = 4;
  int8_t w[144];
  float ws[4];
  int8_t wz[4] = {0, 0, 0, 0};
  int32_t bias[4];
  for (int i = 0; i < 144; i++) w[i] = (int8_t)wval(i, 0);
  for (int i = 0; i < 4; i++) {
    ws[i] = wscale(i);
    bias[i] = bias_val(i);
  }
  mb_tensor(&b, "w", ONNX_INT8, 4, wd, w);
  mb_tensor(&b, "ws", ONNX_FLOAT, 1, &k, ws);
  mb_tensor(&b, "wz", ONNX_INT8, 1, &k, wz);
  mb_tensor(&b, "bias", ONNX_INT32, 1, &k, bias);
  Onnx__NodeProto *c = mb_node(&b, "QLinearConv", "qconv",
                               mb_str(&b, "xq,%s,%s,w,ws,wz,%s,%s,bias", x.s, x.z, y.s, y.z), "t");
  attr_ints(&b, c, "pads", 4, 1, 1, 1, 1);
  mb_node(&b, "QLinearAdd", "qadd",
          mb_str(&b, "t,%s,%s,xq,%s,%s,%s,%s", y.s, y.z, x.s, x.z, z.s, z.z), "out");
  mb_output(&b, "out");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->form, MODEL_QLINEAR);
  const model_conv *mc = &m->convs[0];
  ck_assert_msg(mc->supported, "%s", mc->why ? mc->why : "");
  ck_assert_str_eq(mc->op_type, "QLinearConv");
  ck_assert_str_eq(mc->fused, "QLinearAdd(residual)");
  ck_assert_str_eq(key_of(&mc->w),
                   "conv2d-nhwc-u8.i8.u8-n1-c4-k4-5x5-r3x3-s1x1-p1x1.1x1-d1x1-zd-bias-qc-res-onnx");
  ck_assert_int_eq(mc->q.data_zero_point, 100);
  ck_assert_int_eq(mc->q.mid_zero_point, 120);
  ck_assert_int_eq(mc->q.out_zero_point, 110);
  ck_assert_int_eq(mc->q.residual_zero_point, 100);
  ck_assert_int_eq(mc->q.residual_first, 0);
  ck_assert_uint_eq(bits(mc->q.mid_scale), bits(0.05f / 0.07f));
  ck_assert_uint_eq(bits(mc->q.residual_scale), bits(0.02f / 0.07f));
  for (int i = 0; i < 4; i++) {
    float xw = 0.02f * wscale(i);
    ck_assert_uint_eq(bits(mc->scale[i]), bits(xw / 0.05f));
    ck_assert_int_eq(mc->bias[i], bias_val(i));
  }
  ck_assert_str_eq(mc->residual_from, "graph input 'xq'");
  model_free(m);
  mb_free(&b);
}
END_TEST

/* ConvInteger with a constant data zero point (_i 0) or
 * DynamicQuantizeLinear's (_i 1): int32 output, what follows not fused. */
START_TEST(conv_integer) {
  mb b;
  mb_init(&b);
  const char *xz = "xz";
  if (_i == 0) {
    mb_input(&b, "xq", ONNX_UINT8, 4, 1, 3, 8, 8);
    mb_zp(&b, "xz", ONNX_UINT8, 5);
  } else {
    mb_input(&b, "x", ONNX_FLOAT, 4, 1, 3, 8, 8);
    mb_node(&b, "DynamicQuantizeLinear", "dql", "x", "xq,xs,xz");
  }
  int64_t wd[4] = {8, 3, 3, 3};
  uint8_t w[216];
  for (int i = 0; i < 216; i++) w[i] = (uint8_t)wval(i, 1);
  mb_tensor(&b, "w", ONNX_UINT8, 4, wd, w);
  mb_zp(&b, "wz", ONNX_UINT8, 130);
  mb_node(&b, "ConvInteger", "ci", mb_str(&b, "xq,w,%s,wz", xz), "acc");
  Onnx__NodeProto *cast = mb_node(&b, "Cast", "cast", "acc", "accf");
  attr_i(&b, cast, "to", ONNX_FLOAT);
  mb_float(&b, "scale", 0.001f);
  mb_node(&b, "Mul", "mul", "accf,scale", "out");
  mb_output(&b, "out");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->form, MODEL_CONVINTEGER);
  const model_conv *c = &m->convs[0];
  ck_assert_msg(c->supported, "%s", c->why ? c->why : "");
  ck_assert_str_eq(c->fused, "not fused: Cast,Mul");
  ck_assert_int_eq(c->w.out_type, CT_DTYPE_INT32);
  ck_assert_int_eq(c->w.data_type, CT_DTYPE_UINT8);
  ck_assert_int_eq(c->w.epi.data_zero_point, 1);
  ck_assert_int_eq(c->w.epi.weight_zero_point, 1);
  ck_assert_ptr_null(c->scale);
  ck_assert_int_eq(c->q.data_zero_point, _i == 0 ? 5 : 0);
  for (int k = 0; k < 8; k++) ck_assert_int_eq(c->weight_zero_points[k], 2);
  for (int i = 0; i < 216; i++) ck_assert_int_eq(c->weights[i], wval(i, 1) - 128);
  ck_assert_str_eq(c->input_from, _i == 0 ? "graph input 'xq'" : "DynamicQuantizeLinear dql");
  ck_assert_str_eq(key_of(&c->w),
                   "conv2d-nhwc-u8.i8.i32-n1-c3-k8-8x8-r3x3-s1x1-p0x0.0x0-d1x1-zd-zw");
  model_free(m);
  mb_free(&b);
}
END_TEST

/* Float convs (auto_pad SAME_UPPER, SAME_LOWER, VALID, with a dilation):
 * int8 x int8 -> int32, or what the options say. */
START_TEST(float_conv_auto_pad) {
  mb b;
  mb_init(&b);
  mb_input(&b, "x", ONNX_FLOAT, 4, 2, 3, 8, 7);
  int64_t wd[4] = {4, 3, 3, 3};
  mb_tensor(&b, "w", ONNX_FLOAT, 4, wd, NULL);
  const char *pads[] = {"SAME_UPPER", "SAME_LOWER", "VALID", "SAME_UPPER"};
  for (int i = 0; i < 4; i++) {
    Onnx__NodeProto *n = mb_node(&b, "Conv", mb_str(&b, "c%d", i), "x,w", mb_str(&b, "y%d", i));
    attr_s(&b, n, "auto_pad", pads[i]);
    attr_ints(&b, n, "strides", 2, 2, 2);
    if (i == 3) attr_ints(&b, n, "dilations", 2, 2, 1);
    mb_output(&b, mb_str(&b, "y%d", i));
  }
  const char *path = mb_write(&b, "m.onnx");
  model *m;
  ct_err err;
  ck_assert_msg(load(path, 0, CT_LAYOUT_NCHW, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->form, MODEL_FLOAT);
  quant_table qt = {0};
  ck_assert_int_eq(model_quant_table(m, &qt, &err), CT_OK); /* a float model's are no model's */
  ck_assert_int_eq(qt.n, 0);
  ck_assert_int_eq(model_quant_table(NULL, &qt, &err), CT_ERR_INVALID_ARG);
  /* SAME: out = ceil(in / 2) = 4 x 4; total pads h (3 * 2 + 3 - 8) = 1, w 2 */
  ck_assert_str_eq(key_of(&m->convs[0].w),
                   "conv2d-nchw-i8.i8.i32-n2-c3-k4-8x7-r3x3-s2x2-p0x1.1x1-d1x1");
  ck_assert_str_eq(key_of(&m->convs[1].w),
                   "conv2d-nchw-i8.i8.i32-n2-c3-k4-8x7-r3x3-s2x2-p1x1.0x1-d1x1");
  ck_assert_str_eq(key_of(&m->convs[2].w),
                   "conv2d-nchw-i8.i8.i32-n2-c3-k4-8x7-r3x3-s2x2-p0x0.0x0-d1x1");
  /* dilation 2 along h: extent 5, total 3 * 2 + 5 - 8 = 3 */
  ck_assert_str_eq(key_of(&m->convs[3].w),
                   "conv2d-nchw-i8.i8.i32-n2-c3-k4-8x7-r3x3-s2x2-p1x1.2x1-d2x1");
  ck_assert_ptr_null(m->convs[0].weights);
  ck_assert_str_eq(m->convs[0].fused, "");
  wlset *s;
  int *counts;
  ck_assert_int_eq(model_workloads(m, &s, &counts, &err), CT_OK);
  ck_assert_int_eq(s->n_items, 4);
  wlset_free(s);
  free(counts);
  model_free(m);
  model_opts o;
  model_opts_default(&o);
  o.float_out = CT_DTYPE_INT8;
  o.float_data = CT_DTYPE_UINT8;
  o.float_epilogue = "zd,bias,qc";
  ck_assert_msg(model_load(path, &o, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_str_eq(key_of(&m->convs[2].w),
                   "conv2d-nhwc-u8.i8.i8-n2-c3-k4-8x7-r3x3-s2x2-p0x0.0x0-d1x1-zd-bias-qc");
  model_free(m);
  o.float_epilogue = "bias,relu";
  ck_assert_int_eq(model_load(path, &o, &m, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "'relu'"));
  ck_assert_ptr_null(m);
  mb_free(&b);
}
END_TEST

/* ---- shapes ------------------------------------------------------------------- */

START_TEST(shape_propagation) {
  mb b;
  mb_init(&b);
  mb_input(&b, "x", ONNX_FLOAT, 4, 2, 3, 17, 17);
  int64_t d4[4] = {4, 3, 1, 1}, d6[4] = {6, 8, 3, 3}, d5[4] = {5, 10, 1, 1}, dg[2] = {10, 6};
  int64_t dm[2] = {6, 12}, df[4] = {2, 3, 2, 2}, dr = 4, dr2 = 4;
  mb_tensor(&b, "w4", ONNX_FLOAT, 4, d4, NULL);
  mb_tensor(&b, "w6", ONNX_FLOAT, 4, d6, NULL);
  mb_tensor(&b, "w5", ONNX_FLOAT, 4, d5, NULL);
  mb_tensor(&b, "wg", ONNX_FLOAT, 2, dg, NULL);
  mb_tensor(&b, "wm", ONNX_FLOAT, 2, dm, NULL);
  mb_tensor(&b, "wf", ONNX_FLOAT, 4, df, NULL);
  int64_t shape1[4] = {0, -1, 1, 1}, shape2[4] = {-1, 3, 2, 2};
  mb_tensor(&b, "shape1", ONNX_INT64, 1, &dr, shape1);
  mb_tensor(&b, "shape2", ONNX_INT64, 1, &dr2, shape2);
  /* MaxPool 3 / 2, pads 1, ceil: (17 + 2 - 3) / 2 ceil + 1 = 9 */
  Onnx__NodeProto *mp = mb_node(&b, "MaxPool", "maxpool", "x", "p");
  attr_ints(&b, mp, "kernel_shape", 2, 3, 3);
  attr_ints(&b, mp, "strides", 2, 2, 2);
  attr_ints(&b, mp, "pads", 4, 1, 1, 1, 1);
  attr_i(&b, mp, "ceil_mode", 1);
  mb_node(&b, "Conv", "ca", "p,w4", "a");
  mb_node(&b, "Conv", "cb", "p,w4", "a2");
  Onnx__NodeProto *cat = mb_node(&b, "Concat", "concat", "a,a2", "cat");
  attr_i(&b, cat, "axis", -3);
  mb_node(&b, "Conv", "cc", "cat,w6", "c");
  mb_node(&b, "GlobalAveragePool", "gap", "c", "g");
  mb_node(&b, "Flatten", "flatten", "g", "f");
  Onnx__NodeProto *gemm = mb_node(&b, "Gemm", "gemm", "f,wg", "fc");
  attr_i(&b, gemm, "transB", 1);
  mb_node(&b, "Reshape", "reshape", "fc,shape1", "fc4");
  mb_node(&b, "Conv", "cd", "fc4,w5", "d");
  mb_node(&b, "MatMul", "matmul", "f,wm", "mm");
  mb_node(&b, "Reshape", "reshape2", "mm,shape2", "mm4");
  mb_node(&b, "Conv", "cf", "mm4,wf", "e");
  /* AveragePool 3 / 2 ceil on 9: (9 - 3) / 2 ceil + 1 = 4 */
  Onnx__NodeProto *ap = mb_node(&b, "AveragePool", "avgpool", "a", "ap");
  attr_ints(&b, ap, "kernel_shape", 2, 3, 3);
  attr_ints(&b, ap, "strides", 2, 2, 2);
  attr_i(&b, ap, "ceil_mode", 1);
  int64_t d44[4] = {2, 4, 3, 3};
  mb_tensor(&b, "w44", ONNX_FLOAT, 4, d44, NULL);
  mb_node(&b, "Conv", "ce", "ap,w44", "ee");
  mb_output(&b, "d");
  mb_output(&b, "e");
  mb_output(&b, "ee");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NCHW, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->n_convs, 6);
  const model_conv *ca = conv_named(m, "ca"), *cc = conv_named(m, "cc");
  const model_conv *cd = conv_named(m, "cd"), *cf = conv_named(m, "cf");
  const model_conv *ce = conv_named(m, "ce");
  ck_assert_int_eq(ca->w.in[0], 9);
  ck_assert_int_eq(ca->w.in[1], 9);
  ck_assert_str_eq(ca->input_from, "MaxPool maxpool");
  ck_assert_int_eq(cc->w.c, 8);
  ck_assert_str_eq(cc->input_from, "Concat concat");
  ck_assert_int_eq(cd->w.c, 10);
  ck_assert_int_eq(cd->w.n, 2);
  ck_assert_int_eq(cd->w.in[0], 1);
  ck_assert_int_eq(cf->w.n, 2); /* 2 x 12 elements as (-1, 3, 2, 2) */
  ck_assert_int_eq(cf->w.in[1], 2);
  ck_assert_int_eq(ce->w.in[0], 4);
  ck_assert_int_eq(ce->w.in[1], 4);
  for (int i = 0; i < m->n_convs; i++) ck_assert(m->convs[i].supported);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* Transpose, Unsqueeze / Squeeze (input and attribute axes), Identity,
 * Cast, Sub (broadcasting a [C,1,1] constant), Pad. */
START_TEST(shape_more) {
  mb b;
  mb_init(&b);
  mb_input(&b, "x", ONNX_FLOAT, 4, 1, 3, 10, 6);
  int64_t wd[4] = {4, 3, 1, 1}, one = 1, pd = 8, cd[3] = {3, 1, 1};
  int64_t axes[1] = {2}, pads[8] = {0, 0, 1, 2, 0, 0, 3, 4};
  float mean[3] = {0.5f, 0.5f, 0.5f};
  mb_tensor(&b, "w", ONNX_FLOAT, 4, wd, NULL);
  mb_tensor(&b, "axes", ONNX_INT64, 1, &one, axes);
  mb_tensor(&b, "pads", ONNX_INT64, 1, &pd, pads);
  mb_tensor(&b, "mean", ONNX_FLOAT, 3, cd, mean);
  Onnx__NodeProto *tr = mb_node(&b, "Transpose", "tr", "x", "xt");
  attr_ints(&b, tr, "perm", 4, 0, 1, 3, 2);
  mb_node(&b, "Conv", "c_t", "xt,w", "y1");
  mb_node(&b, "Unsqueeze", "un", "x,axes", "x5"); /* 1x3x1x10x6 */
  Onnx__NodeProto *sq = mb_node(&b, "Squeeze", "sq", "x5", "x4");
  attr_ints(&b, sq, "axes", 1, -3);
  mb_node(&b, "Identity", "id", "x4", "x4i");
  Onnx__NodeProto *cast = mb_node(&b, "Cast", "cast", "x4i", "x4c");
  attr_i(&b, cast, "to", ONNX_FLOAT);
  mb_node(&b, "Sub", "sub", "x4c,mean", "x4s");
  mb_node(&b, "Pad", "pad", "x4s,pads", "xp"); /* 1x3x14x12 */
  mb_node(&b, "Conv", "c_p", "xp,w", "y2");
  mb_output(&b, "y1");
  mb_output(&b, "y2");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(conv_named(m, "c_t")->w.in[0], 6);
  ck_assert_int_eq(conv_named(m, "c_t")->w.in[1], 10);
  ck_assert_int_eq(conv_named(m, "c_p")->w.in[0], 14);
  ck_assert_int_eq(conv_named(m, "c_p")->w.in[1], 12);
  ck_assert_str_eq(conv_named(m, "c_p")->input_from, "Pad pad");
  model_free(m);
  mb_free(&b);
}
END_TEST

/* A symbolic batch needs opts.batch; opts.batch replaces a static one. */
START_TEST(batch) {
  mb b;
  mb_init(&b);
  mb_input(&b, "x", ONNX_FLOAT, 4, -1, 3, 8, 8);
  int64_t wd[4] = {4, 3, 3, 3};
  mb_tensor(&b, "w", ONNX_FLOAT, 4, wd, NULL);
  mb_node(&b, "Conv", "conv", "x,w", "y");
  mb_node(&b, "Relu", "relu", "y", "r");
  mb_node(&b, "Conv", "conv2", "r,w2", "z");
  int64_t wd2[4] = {4, 4, 1, 1};
  mb_tensor(&b, "w2", ONNX_FLOAT, 4, wd2, NULL);
  mb_value_info(&b, "r", ONNX_FLOAT, 4, -1, 4, 6, 6);
  mb_output(&b, "z");
  const char *path = mb_write(&b, "sym.onnx");
  model *m;
  ct_err err;
  ck_assert_int_eq(load(path, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_null(m);
  ck_assert_ptr_nonnull(strstr(err.msg, path));
  ck_assert_ptr_nonnull(strstr(err.msg, "--batch"));
  ck_assert_msg(load(path, 3, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->batch, 3);
  ck_assert_int_eq(m->convs[0].w.n, 3);
  ck_assert_int_eq(m->convs[1].w.n, 3);
  ck_assert_int_eq(m->convs[1].w.in[0], 6);
  model_free(m);
  b.inputs[0]->type = mb_type(&b, ONNX_FLOAT, 4, (int64_t[]){2, 3, 8, 8});
  b.vinfo[0]->type = mb_type(&b, ONNX_FLOAT, 4, (int64_t[]){2, 4, 6, 6});
  path = mb_write(&b, "static.onnx");
  ck_assert_msg(load(path, 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->convs[1].w.n, 2);
  model_free(m);
  ck_assert_msg(load(path, 5, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->batch, 5);
  ck_assert_int_eq(m->convs[0].w.n, 5);
  ck_assert_int_eq(m->convs[1].w.n, 5);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* A conv after an op whose shape is not followed: value_info gives it, or
 * the load fails naming the conv and where derivation stopped. A
 * value_info that contradicts a conv's own output is refused. */
/* Into b: a Resize node (resize, whose output big has no known shape) and
 * a Conv node (conv) reading big; written as file, whose path is returned. */
static const char *resize_then_conv(mb *b, const char *resize, const char *big, const char *conv,
                                    const char *file) {
  char in[64];
  mb_input(b, "x", ONNX_FLOAT, 4, 1, 3, 8, 8);
  int64_t wd[4] = {4, 3, 3, 3}, sd = 4;
  float scales[4] = {1, 1, 2, 2};
  mb_tensor(b, "w", ONNX_FLOAT, 4, wd, NULL);
  mb_tensor(b, "scales", ONNX_FLOAT, 1, &sd, scales);
  mb_node(b, "Resize", resize, "x,,scales", big);
  snprintf(in, sizeof in, "%s,w", big);
  mb_node(b, "Conv", conv, in, "y");
  mb_output(b, "y");
  return mb_write(b, file);
}

START_TEST(shape_unknown) {
  mb b;
  mb_init(&b);
  const char *path = resize_then_conv(&b, "resize", "big", "conv", "m.onnx");
  model *m;
  ct_err err;
  ck_assert_int_eq(load(path, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, path));
  ck_assert_ptr_nonnull(strstr(err.msg, "node 'conv' (Conv)"));
  ck_assert_ptr_nonnull(strstr(err.msg, "resize"));
  mb_value_info(&b, "big", ONNX_FLOAT, 4, 1, 3, 16, 16);
  path = mb_write(&b, "m2.onnx");
  ck_assert_msg(load(path, 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->convs[0].w.in[0], 16);
  model_free(m);
  mb_value_info(&b, "y", ONNX_FLOAT, 4, 1, 4, 15, 14);
  path = mb_write(&b, "m3.onnx");
  ck_assert_int_eq(load(path, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "1x4x14x14"));
  mb_free(&b);
}
END_TEST

/* A node and a tensor named with a terminal's escape sequence and a line
 * break (a hostile model file): the error that names them carries each
 * control byte as \\xHH (err_set), on one line. */
START_TEST(hostile_names_escaped) {
  mb b;
  mb_init(&b);
  const char *path = resize_then_conv(&b, "re\x1b[31msize", "bi\ng", "co\x1b]0;t\x07nv", "h.onnx");
  model *m;
  ct_err err;
  ck_assert_int_eq(load(path, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_msg(strstr(err.msg, "node 'co\\x1b]0;t\\x07nv' (Conv)") != NULL, "%s", err.msg);
  ck_assert_msg(strstr(err.msg, "bi\\x0ag") != NULL, "%s", err.msg);
  for (const char *p = err.msg; *p; p++) ck_assert_int_ge((unsigned char)*p, 0x20);
  mb_free(&b);
}
END_TEST

/* Names of 450 bytes (the conv node and the node that hides its input's
 * shape): the message quotes them as excerpts, so the reason stays in it
 * (whole, they left no room for it in CT_ERRMSG_MAX). */
START_TEST(long_names_leave_the_reason) {
  mb b;
  mb_init(&b);
  char conv[451], resize[451];
  memset(conv, 'c', 450), memset(resize, 'r', 450);
  conv[450] = resize[450] = '\0';
  const char *path = resize_then_conv(&b, resize, "big", conv, "long.onnx");
  model *m;
  ct_err err;
  ck_assert_int_eq(load(path, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_msg(strstr(err.msg, "cannot derive the shape of its data 'big'") != NULL, "%s",
                err.msg);
  ck_assert_msg(strstr(err.msg, "ccc...' (Conv)") != NULL, "%s", err.msg);
  ck_assert_msg(strstr(err.msg, "rrr...' (Resize)") != NULL, "%s", err.msg);
  mb_free(&b);
}
END_TEST

/* A model that loads, whose conv node and graph input carry an escape
 * sequence and a line break: the conv's name and where its input comes from,
 * which the command prints in its tables, hold each control byte as \xHH
 * (and the rest of the name whole). */
START_TEST(hostile_names_printable) {
  mb b;
  mb_init(&b);
  const char *conv = "co\x1b[2Jnv\nnext", *in = "in\x1b[31mput";
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8);
  mb_input(&b, in, ONNX_FLOAT, 4, 2, 3, 9, 7);
  const char *xq = Q(&b, in, x, "xq");
  wspec ws = {.k = 5, .c = 3, .nd = 2, .kernel = {3, 3}, .bias = 1};
  const char *cf = qdq_conv(&b, conv, xq, x, &ws, x.scale);
  qpn y = mb_qp(&b, "y", 0.1f, -3, ONNX_INT8);
  Q(&b, cf, y, "yq");
  mb_output(&b, "yq");
  const char *path = mb_write(&b, "hp.onnx");
  model *m;
  ct_err err;
  ck_assert_msg(load(path, 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->n_convs, 1);
  const model_conv *c = &m->convs[0];
  ck_assert_str_eq(c->name, "co\\x1b[2Jnv\\x0anext");
  ck_assert_msg(strstr(c->input_from, "in\\x1b[31mput") != NULL, "%s", c->input_from);
  for (const char *p = c->input_from; *p; p++) ck_assert_int_ge((unsigned char)*p, 0x20);
  wlset *set;
  int *counts;
  ck_assert_int_eq(model_workloads(m, &set, &counts, &err), CT_OK);
  for (const char *p = set->items[0].name; *p; p++) ck_assert_int_ge((unsigned char)*p, 0x20);
  wlset_free(set);
  free(counts);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* ---- grouped and depthwise ---------------------------------------------------- */

/* A MobileNetV2-like chain with `group`: a depthwise 3x3 (G = C = 8), a
 * depthwise stride-2 with channel multiplier 2 (K = 16), a grouped 3x3 (16
 * channels in 4 groups), and a conv3d depthwise beside them. Each is a
 * grouped workload in every layout, its weights K x C/G x kernel volume as
 * the file holds them, its per-channel scales K; shapes propagate through
 * them. A group that does not divide the weights' channels is rejected. */
START_TEST(grouped_convs) {
  static const ct_layout layouts[] = {CT_LAYOUT_NHWC, CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C};
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8), t = mb_qp(&b, "t", 0.05f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 8, 9, 9, x);
  wspec wdw = {.k = 8, .c = 8, .nd = 2, .kernel = {3, 3}, .per_channel = 1, .bias = 1, .group = 8};
  const char *t1 = Q(&b, qdq_conv(&b, "dw", xq, x, &wdw, x.scale), t, "t1");
  attr_ints(&b, find_node(&b, "dw"), "pads", 4, 1, 1, 1, 1);
  wspec wdm = {.k = 16, .c = 8, .nd = 2, .kernel = {3, 3}, .per_channel = 1, .group = 8};
  const char *t2 = Q(&b, qdq_conv(&b, "dwm", t1, t, &wdm, t.scale), t, "t2");
  attr_ints(&b, find_node(&b, "dwm"), "strides", 2, 2, 2);
  wspec wg = {.k = 16, .c = 16, .nd = 2, .kernel = {3, 3}, .per_channel = 1, .group = 4};
  const char *t3 = Q(&b, qdq_conv(&b, "g4", t2, t, &wg, t.scale), t, "t3");
  mb_output(&b, t3);
  const char *path = mb_write(&b, "g.onnx");
  static const struct {
    const char *name;
    int groups, c, k, out;
  } want[] = {{"dw", 8, 8, 8, 9}, {"dwm", 8, 8, 16, 4}, {"g4", 4, 16, 16, 2}};
  for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
    model *m;
    ct_err err;
    ck_assert_msg(load(path, 0, layouts[l], &m, &err) == CT_OK, "%s", err.msg);
    ck_assert_int_eq(m->n_convs, 3);
    for (int i = 0; i < 3; i++) {
      const model_conv *c = conv_named(m, want[i].name);
      ck_assert_msg(c->supported, "%s: %s", want[i].name, c->why ? c->why : "");
      ck_assert_int_eq(c->w.groups, want[i].groups);
      ck_assert_int_eq(c->w.c, want[i].c);
      ck_assert_int_eq(c->w.k, want[i].k);
      ck_assert_int_eq(c->w.layout, layouts[l]);
      ck_assert_int_eq(workload_out_size(&c->w, 0), want[i].out);
      ck_assert_int_eq(c->w.epi.scale, CT_SCALE_CHANNEL);
      int64_t n_w = (int64_t)want[i].k * (want[i].c / want[i].groups) * 9;
      ct_workload plain = c->w;
      plain.layout = CT_LAYOUT_NCHW;
      ck_assert_int_eq(workload_weight_elems(&plain), n_w);
      for (int64_t j = 0; j < n_w; j++) ck_assert_int_eq(c->weights[j], wval((int)j, 0));
      for (int k = 0; k < want[i].k; k++) {
        float xw = (i ? 0.05f : 0.02f) * wscale(k);
        ck_assert_uint_eq(bits(c->scale[k]), bits(xw / 0.05f));
      }
      char key[CT_KEY_MAX], seg[16];
      snprintf(seg, sizeof seg, "-g%d", want[i].groups);
      workload_key(&c->w, key, sizeof key);
      ck_assert_msg(strstr(key, seg), "%s: key %s lacks %s", want[i].name, key, seg);
      if (i) ck_assert_int_eq(c->input_conv, i - 1);
    }
    model_free(m);
  }
  mb_free(&b);

  /* conv3d, depthwise 3x3x3 */
  mb_init(&b); /* a new builder: its names are new too */
  x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8), t = mb_qp(&b, "t", 0.05f, 0, ONNX_INT8);
  mb_input(&b, "x", ONNX_FLOAT, 5, 1, 4, 4, 5, 6);
  const char *x3 = Q(&b, "x", x, "xq");
  wspec w3 = {.k = 4, .c = 4, .nd = 3, .kernel = {3, 3, 3}, .per_channel = 1, .group = 4};
  Q(&b, qdq_conv(&b, "dw3", x3, x, &w3, x.scale), t, "y3");
  attr_ints(&b, find_node(&b, "dw3"), "pads", 6, 1, 1, 1, 1, 1, 1);
  mb_output(&b, "y3");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "g3.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  const model_conv *c = &m->convs[0];
  ck_assert_msg(c->supported, "%s", c->why ? c->why : "");
  ck_assert_int_eq(c->w.op, CT_OP_CONV3D);
  ck_assert_int_eq(c->w.groups, 4);
  for (int j = 0; j < 4 * 27; j++) ck_assert_int_eq(c->weights[j], wval(j, 0));
  ck_assert_int_eq(workload_out_size(&c->w, 0), 4);
  model_free(m);
  mb_free(&b);

  /* weights of 2 input channels in 3 groups: not the data's 8 */
  mb_init(&b);
  x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8), t = mb_qp(&b, "t", 0.05f, 0, ONNX_INT8);
  xq = quant_input(&b, 8, 6, 6, x);
  wspec wbad = {.k = 6, .c = 6, .nd = 2, .kernel = {1, 1}, .group = 3};
  Q(&b, qdq_conv(&b, "bad", xq, x, &wbad, x.scale), t, "yb");
  mb_output(&b, "yb");
  ck_assert_int_eq(load(mb_write(&b, "gb.onnx"), 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_msg(strstr(err.msg, "group") && strstr(err.msg, "bad"), "%s", err.msg);
  ck_assert_ptr_null(m);
  mb_free(&b);
}
END_TEST

/* ---- a pointwise conv fused into the conv it feeds ------------------------------- */

/* What a fuse_pre hook saw: how often it was asked, the last workload, and
 * what it answers. */
typedef struct hook_log {
  int calls, answer;
  ct_workload last;
} hook_log;

static int fuse_hook(const ct_workload *w, void *user) {
  hook_log *h = user;
  h->calls++;
  h->last = *w;
  return h->answer;
}

static ct_status load_fused(const char *path, ct_layout layout, hook_log *h, model **m,
                            ct_err *err) {
  model_opts o;
  model_opts_default(&o);
  o.layout = layout;
  if (h) {
    o.fuse_pre = fuse_hook;
    o.fuse_user = h;
  }
  memset(err, 0, sizeof *err);
  return model_load(path, &o, m, err);
}

/* An inverted residual block's first half, QDQ: xq (2 x 8 x 6 x 6, int8,
 * zero point 3) -> expand, a 1x1 conv 8 -> 24 (per-channel scales, bias)
 * -> Relu (expand_act 0) or Clip(0, 6) (1) -> Q(t, zero point -5) -> the
 * depthwise 3x3 dw (group 24, pad 1) -> Relu -> Q(y). second: 1, t is also read by
 * another conv (side, a 1x1 24 -> 4); 2, t is also a graph output. */
static const char *ir_block(mb *b, int expand_act, int second) {
  qpn x = mb_qp(b, "x", 0.02f, 3, ONNX_INT8), t = mb_qp(b, "t", 0.05f, -5, ONNX_INT8);
  const char *xq = quant_input(b, 8, 6, 6, x);
  wspec we = {.k = 24, .c = 8, .nd = 2, .kernel = {1, 1}, .per_channel = 1, .bias = 1};
  const char *ef = qdq_conv(b, "expand", xq, x, &we, x.scale);
  if (expand_act) {
    mb_float(b, "zero", 0.0f);
    mb_float(b, "six", 6.0f);
    mb_node(b, "Clip", "clip_e", mb_str(b, "%s,zero,six", ef), "e.act");
  } else {
    mb_node(b, "Relu", "relu_e", ef, "e.act");
  }
  const char *tq = Q(b, "e.act", t, "tq");
  wspec wd = {
      .k = 24, .c = 24, .nd = 2, .kernel = {3, 3}, .per_channel = 1, .bias = 1, .group = 24};
  const char *df = qdq_conv(b, "dw", tq, t, &wd, t.scale);
  attr_ints(b, find_node(b, "dw"), "pads", 4, 1, 1, 1, 1);
  mb_node(b, "Relu", "relu_d", df, "d.act");
  Q(b, "d.act", mb_qp(b, "y", 0.1f, 2, ONNX_INT8), "yq");
  mb_output(b, "yq");
  if (second == 1) {
    wspec ws = {.k = 4, .c = 24, .nd = 2, .kernel = {1, 1}, .bias = 1};
    Q(b, qdq_conv(b, "side", tq, t, &ws, t.scale), t, "sq");
    mb_output(b, "sq");
  } else if (second == 2) {
    mb_output(b, tq);
  }
  return mb_write(b, "ir.onnx");
}

/* expand -> Relu / Clip -> dw with a hook that accepts (_i 0: Relu, 1:
 * Clip): dw becomes the fused conv (pre_c 8, the expansion's epilogue, its
 * data and input), the expansion is absorbed, and one workload runs the
 * pair; a hook that refuses, or none, changes nothing. */
START_TEST(pointwise_fused) {
  mb b;
  mb_init(&b);
  const char *path = ir_block(&b, _i, 0);
  model *m, *m0;
  ct_err err;
  hook_log h = {.answer = 1};
  ck_assert_msg(load_fused(path, CT_LAYOUT_NHWC, &h, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(load_fused(path, CT_LAYOUT_NHWC, NULL, &m0, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->n_convs, 2);
  const int e = conv_index(m, "expand"), d = conv_index(m, "dw");
  const model_conv *ce = &m->convs[e], *cd = &m->convs[d];
  const model_conv *e0 = conv_named(m0, "expand"), *d0 = conv_named(m0, "dw");
  ck_assert_int_eq(h.calls, 1);
  ck_assert_msg(ce->supported && cd->supported, "%s", cd->why ? cd->why : "");
  /* the hook was asked about exactly the fused workload */
  ck_assert_int_eq(h.last.pre_c, 8);
  ck_assert_str_eq(key_of(&h.last), key_of(&cd->w));
  /* the fused conv: dw's own workload, with the expansion before it */
  ck_assert_int_eq(cd->w.pre_c, 8);
  ck_assert_int_eq(cd->w.pre_data_type, ce->w.data_type);
  ck_assert_int_eq(cd->w.pre_data_type, CT_DTYPE_INT8);
  ck_assert_mem_eq(&cd->w.pre_epi, &ce->w.epi, sizeof ce->w.epi);
  ck_assert_int_eq(cd->w.pre_epi.scale, CT_SCALE_CHANNEL);
  ck_assert_int_eq(cd->w.pre_epi.bias, 1);
  ck_assert_int_eq(cd->w.pre_epi.data_zero_point, 1);
  ct_workload own;
  workload_main(&cd->w, &own);
  ck_assert_str_eq(key_of(&own), key_of(&d0->w));
  ck_assert_int_eq(cd->w.groups, 24);
  ck_assert_int_eq(cd->w.pre_epi.weight_zero_point, 1); /* per channel: k % 3 */
  ck_assert_msg(strstr(key_of(&cd->w), "-g24-pre8.i8.zd.zw.bias.qc.onnx") != NULL, "%s",
                key_of(&cd->w));
  /* the expansion's clamp: Relu, or Clip(0, 6), in t's domain */
  ck_assert_int_eq(ce->q.clamp_min, -5);
  ck_assert_int_eq(ce->q.clamp_max, _i ? (int)(nearbyintf(6.0f / 0.05f) - 5.0f) : 127);
  /* its data: the expansion's input; its values: the expansion's */
  ck_assert_int_eq(cd->input_conv, -1);
  ck_assert_str_eq(cd->input_from, "graph input 'x'");
  ck_assert_str_eq(cd->data_tensor, "xq");
  ck_assert_str_eq(cd->data_tensor, ce->data_tensor);
  ck_assert_str_eq(cd->out_tensor, d0->out_tensor);
  ck_assert_ptr_eq(cd->q.pre, &ce->q);
  ck_assert_ptr_eq(cd->q.pre_weights, ce->weights);
  ck_assert_str_eq(cd->fused, "pre: expand (1x1), Relu"); /* then dw's own */
  /* the pair, from both ends */
  ck_assert_int_eq(cd->pre_conv, e);
  ck_assert_int_eq(ce->fused_into, d);
  ck_assert_int_eq(cd->fused_into, -1);
  ck_assert_int_eq(ce->pre_conv, -1);
  ck_assert_int_eq(model_pre_of(m, d), e);
  ck_assert_int_eq(model_absorbed_by(m, e), d);
  ck_assert_int_eq(model_pre_of(m, e), -1);
  ck_assert_int_eq(model_absorbed_by(m, d), -1);
  ck_assert_int_eq(model_n_fused(m), 1);
  /* the absorbed conv keeps its own workload and values */
  ck_assert_int_eq(ce->w.pre_c, 0);
  ck_assert_str_eq(key_of(&ce->w), key_of(&e0->w));
  ck_assert_str_eq(ce->fused, _i ? "Clip" : "Relu");
  /* one workload runs the pair */
  wlset *s;
  int *counts;
  ck_assert_int_eq(model_workloads(m, &s, &counts, &err), CT_OK);
  ck_assert_int_eq(s->n_items, 1);
  ck_assert_str_eq(s->items[0].name, "dw");
  ck_assert_int_eq(counts[0], 1);
  ck_assert_str_eq(key_of(&s->items[0].w), key_of(&cd->w));
  wlset_free(s);
  free(counts);
  ck_assert_int_eq(model_workloads(m0, &s, &counts, &err), CT_OK);
  ck_assert_int_eq(s->n_items, 2);
  wlset_free(s);
  free(counts);
  /* the values a tuning measures with: the fused workload's, and each conv
   * apart (tune --fuse tunes both ways) */
  quant_table qt = {0};
  ck_assert_msg(model_quant_table(m, &qt, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(qt.n, 3);
  ck_assert_ptr_eq(quant_table_find(&qt, &cd->w), &cd->q);
  ck_assert_ptr_eq(quant_table_find(&qt, &own), &cd->q);
  ck_assert_ptr_eq(quant_table_find(&qt, &ce->w), &ce->q);
  quant_table_free(&qt);

  /* the fused conv's reference equals the two convs', chained, of the
   * model read without fusion */
  ct_workload wf = cd->w, we = e0->w, wd = d0->w;
  wf.n = we.n = wd.n = 1;
  size_t n_in = (size_t)workload_data_elems(&wf), n_mid = (size_t)workload_out_elems(&we);
  size_t n_out = (size_t)workload_out_elems(&wf);
  ck_assert_uint_eq(n_in, 8 * 36);
  uint8_t *data = malloc(n_in), *mid = malloc(n_mid), *chained = malloc(n_out),
          *fused = malloc(n_out);
  ck_assert(data && mid && chained && fused);
  for (size_t i = 0; i < n_in; i++) data[i] = (uint8_t)(i * 97 + 13);
  /* a depthwise and a 1x1 conv: OIHW weights are OHWI too */
  ck_assert_int_eq(reference_qconv(&we, &e0->q, data, e0->weights, NULL, mid, &err), CT_OK);
  ck_assert_int_eq(reference_qconv(&wd, &d0->q, mid, d0->weights, NULL, chained, &err), CT_OK);
  ck_assert_msg(reference_qconv(&wf, &cd->q, data, cd->weights, NULL, fused, &err) == CT_OK, "%s",
                err.msg);
  ck_assert_mem_eq(fused, chained, n_out);
  int distinct = 0; /* not a constant output: the check means something */
  for (size_t i = 1; i < n_out; i++) distinct |= fused[i] != fused[0];
  ck_assert(distinct);
  free(data);
  free(mid);
  free(chained);
  free(fused);
  model_free(m);

  /* a hook that refuses: asked once, nothing changes; no hook: the same */
  hook_log no = {.answer = 0};
  ck_assert_msg(load_fused(path, CT_LAYOUT_NHWC, &no, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(no.calls, 1);
  ck_assert_int_eq(model_n_fused(m), 0);
  for (int i = 0; i < 2; i++) {
    const model_conv *c = &m->convs[i], *c0 = &m0->convs[i];
    ck_assert_str_eq(c->name, c0->name);
    ck_assert_int_eq(c->w.pre_c, 0);
    ck_assert_int_eq(c->pre_conv, -1);
    ck_assert_int_eq(c->fused_into, -1);
    ck_assert_int_eq(c0->pre_conv, -1);
    ck_assert_int_eq(c0->fused_into, -1);
    ck_assert_int_eq(c->input_conv, c0->input_conv);
    ck_assert_str_eq(c->fused, c0->fused);
    ck_assert_str_eq(c->input_from, c0->input_from);
    ck_assert_ptr_null(c->q.pre);
    ck_assert_str_eq(key_of(&c->w), key_of(&c0->w));
  }
  ck_assert_int_eq(conv_named(m0, "dw")->input_conv, conv_index(m0, "expand"));
  ck_assert_str_eq(conv_named(m0, "dw")->input_from, "expand");
  ck_assert_int_eq(model_n_fused(m0), 0);
  model_free(m);
  /* channels-last only: in nchw the hook is not even asked */
  hook_log nchw = {.answer = 1};
  ck_assert_msg(load_fused(path, CT_LAYOUT_NCHW, &nchw, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(nchw.calls, 0);
  ck_assert_int_eq(model_n_fused(m), 0);
  model_free(m);
  model_free(m0);
  mb_free(&b);
}
END_TEST

/* The expansion's output read by anything else, another conv (_i 1) or as
 * a graph output (_i 2): never fused, the hook never asked. */
START_TEST(pointwise_shared_not_fused) {
  mb b;
  mb_init(&b);
  const char *path = ir_block(&b, 0, _i);
  model *m;
  ct_err err;
  hook_log h = {.answer = 1};
  ck_assert_msg(load_fused(path, CT_LAYOUT_NHWC, &h, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->n_convs, _i == 1 ? 3 : 2);
  ck_assert_int_eq(h.calls, 0);
  ck_assert_int_eq(model_n_fused(m), 0);
  const model_conv *cd = conv_named(m, "dw");
  ck_assert_msg(cd->supported, "%s", cd->why ? cd->why : "");
  ck_assert_int_eq(cd->w.pre_c, 0);
  ck_assert_int_eq(cd->input_conv, conv_index(m, "expand"));
  ck_assert_int_eq(conv_named(m, "expand")->fused_into, -1);
  if (_i == 1) ck_assert_int_eq(conv_named(m, "side")->input_conv, conv_index(m, "expand"));
  wlset *s;
  int *counts;
  ck_assert_int_eq(model_workloads(m, &s, &counts, &err), CT_OK);
  ck_assert_int_eq(s->n_items, _i == 1 ? 3 : 2);
  wlset_free(s);
  free(counts);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* ---- what the engine cannot run ------------------------------------------------ */

START_TEST(unsupported_listed) {
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8), t = mb_qp(&b, "t", 0.05f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 4, 6, 6, x);
  /* a grouped conv: runs (grouped_convs), and is the input of the next */
  wspec wg = {.k = 4, .c = 4, .nd = 2, .kernel = {3, 3}, .group = 2, .bias = 1};
  const char *g1 = Q(&b, qdq_conv(&b, "grouped", xq, x, &wg, x.scale), t, "g1");
  /* a float bias */
  wspec wf = {.k = 4, .c = 4, .nd = 2, .kernel = {1, 1}, .bias = 2};
  const char *g2 = Q(&b, qdq_conv(&b, "fbias", g1, t, &wf, t.scale), t, "g2");
  /* weights that are a graph input */
  mb_input(&b, "wq", ONNX_INT8, 4, 4, 4, 1, 1);
  const char *wf2 = DQ(&b, "wq", t, "wdq");
  mb_node(&b, "Conv", "dynw", mb_str(&b, "%s,%s", DQ(&b, g2, t, "g2f"), wf2), "dyn");
  const char *g3 = Q(&b, "dyn", t, "g3");
  /* a 1D conv on a reshaped tensor */
  int64_t sd = 3, shape[3] = {2, 4, 36};
  mb_tensor(&b, "shape", ONNX_INT64, 1, &sd, shape);
  mb_node(&b, "Reshape", "flat", mb_str(&b, "%s,shape", g3), "g3r");
  wspec w1 = {.k = 4, .c = 4, .nd = 1, .kernel = {3}};
  Q(&b, qdq_conv(&b, "conv1d", "g3r", t, &w1, t.scale), t, "g4");
  /* and one that runs */
  wspec wo = {.k = 8, .c = 4, .nd = 2, .kernel = {1, 1}};
  Q(&b, qdq_conv(&b, "fine", g2, t, &wo, t.scale), t, "g5");
  mb_output(&b, "g4");
  mb_output(&b, "g5");
  model *m;
  ct_err err;
  ck_assert_msg(load(mb_write(&b, "m.onnx"), 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->n_convs, 5);
  const struct {
    const char *name, *why;
  } want[] = {{"fbias", "bias 'fbias.bf' is float"},
              {"dynw", "weights 'wq' are not a constant"},
              {"conv1d", "1D convolution"}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const model_conv *c = conv_named(m, want[i].name);
    ck_assert_int_eq(c->supported, 0);
    ck_assert_msg(c->why && strstr(c->why, want[i].why), "%s: '%s'", want[i].name,
                  c->why ? c->why : "(null)");
  }
  ck_assert_int_eq(conv_named(m, "grouped")->w.groups, 2);
  ck_assert(conv_named(m, "grouped")->supported);
  ck_assert(conv_named(m, "fine")->supported);
  ck_assert_int_eq(conv_named(m, "fbias")->input_conv, conv_index(m, "grouped"));
  /* a conv that cannot run is still the input of those after it */
  ck_assert_int_eq(conv_named(m, "fine")->input_conv, conv_index(m, "fbias"));
  ck_assert_int_eq(conv_named(m, "dynw")->input_conv, conv_index(m, "fbias"));
  wlset *s;
  int *counts;
  ck_assert_int_eq(model_workloads(m, &s, &counts, &err), CT_OK);
  ck_assert_int_eq(s->n_items, 2);
  ck_assert_str_eq(s->items[0].name, "grouped");
  ck_assert_str_eq(s->items[1].name, "fine");
  wlset_free(s);
  free(counts);
  model_free(m);
  mb_free(&b);
}
END_TEST

/* Unique workloads in order of first occurrence, named after their first
 * node, with counts. */
START_TEST(unique_workloads) {
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8), t = mb_qp(&b, "t", 0.05f, 0, ONNX_INT8);
  const char *v = quant_input(&b, 4, 6, 6, x);
  const char *names[] = {"first", "same1", "other", "same2"};
  for (int i = 0; i < 4; i++) {
    wspec ws = {.k = 4, .c = 4, .nd = 2, .kernel = {i == 2 ? 1 : 3, i == 2 ? 1 : 3}, .bias = 1};
    const char *cf = qdq_conv(&b, names[i], v, i ? t : x, &ws, i ? t.scale : x.scale);
    if (i != 2) attr_ints(&b, find_node(&b, names[i]), "pads", 4, 1, 1, 1, 1);
    v = Q(&b, cf, t, mb_str(&b, "%s.q", names[i]));
  }
  mb_output(&b, v);
  const char *path = mb_write(&b, "net.onnx");
  model *m;
  ct_err err;
  ck_assert_msg(load(path, 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  wlset *s;
  int *counts;
  ck_assert_int_eq(model_workloads(m, &s, &counts, &err), CT_OK);
  ck_assert_str_eq(s->name, "net");
  ck_assert_int_eq(s->n_items, 2);
  ck_assert_str_eq(s->items[0].name, "first");
  ck_assert_str_eq(s->items[1].name, "other");
  ck_assert_int_eq(counts[0], 3);
  ck_assert_int_eq(counts[1], 1);
  char k0[CT_KEY_MAX];
  ck_assert_str_eq(workload_key(&s->items[0].w, k0, sizeof k0), key_of(&m->convs[3].w));
  wlset_free(s);
  free(counts);
  model_free(m);
  ck_assert_str_eq(model_form_name(MODEL_QDQ), "qdq");
  ck_assert_str_eq(model_form_name(MODEL_FLOAT), "float");
  ck_assert_str_eq(model_form_name(MODEL_QLINEAR), "qlinear");
  ck_assert_str_eq(model_form_name(MODEL_CONVINTEGER), "convinteger");
  model_free(NULL);
  mb_free(&b);
}
END_TEST

/* ---- external data --------------------------------------------------------------- */

/* A QDQ conv whose weights live in w.bin at offset 16: loads (_i 0), the
 * file missing (_i 1), too short (_i 2), a length that does not fit the
 * dims (_i 3), an absolute location (_i 4). */
START_TEST(external_data) {
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 4, 5, 5, x);
  wspec ws = {.k = 4, .c = 4, .nd = 2, .kernel = {3, 3}, .bias = 1};
  Q(&b, qdq_conv(&b, "conv", xq, x, &ws, x.scale), x, "yq");
  mb_output(&b, "yq");
  Onnx__TensorProto *t = NULL;
  for (size_t i = 0; i < b.g.n_initializer; i++)
    if (!strcmp(b.inits[i]->name, "conv.wq")) t = b.inits[i];
  ck_assert_ptr_nonnull(t);
  size_t n = t->raw_data.len;
  char *file = mb_str(&b, "%s/w.bin", b.dir);
  if (_i != 1) {
    FILE *f = fopen(file, "wb");
    ck_assert_ptr_nonnull(f);
    char pad[16] = "0123456789abcdef";
    fwrite(pad, 1, 16, f);
    fwrite(t->raw_data.data, 1, _i == 2 ? n - 1 : n, f);
    fclose(f);
  }
  t->has_raw_data = 0;
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  const char *keys[3] = {"location", "offset", "length"};
  const char *vals[3] = {_i == 4 ? file : "w.bin", "16", mb_str(&b, "%zu", _i == 3 ? n - 4 : n)};
  t->n_external_data = 3;
  t->external_data = mb_alloc(&b, 3 * sizeof(void *));
  for (int i = 0; i < 3; i++) {
    Onnx__StringStringEntryProto *e = mb_alloc(&b, sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = (char *)keys[i];
    e->value = (char *)vals[i];
    t->external_data[i] = e;
  }
  const char *path = mb_write(&b, "m.onnx");
  model *m;
  ct_err err;
  ct_status st = load(path, 0, CT_LAYOUT_NHWC, &m, &err);
  const ct_status want[] = {CT_OK, CT_ERR_NOT_FOUND, CT_ERR_PARSE, CT_ERR_PARSE, CT_ERR_PARSE};
  const char *msg[] = {"", "cannot open", "too short", "holds 140 bytes", "relative"};
  ck_assert_msg(st == want[_i], "status %d: %s", st, err.msg);
  if (st == CT_OK) {
    for (int i = 0; i < 144; i++) ck_assert_int_eq(m->convs[0].weights[i], wval(i, 0));
    model_free(m);
  } else {
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    ck_assert_ptr_nonnull(strstr(err.msg, "node 'conv' (Conv)"));
    ck_assert_msg(strstr(err.msg, msg[_i]), "%s", err.msg);
  }
  mb_free(&b);
}
END_TEST

/* ---- hostile files ----------------------------------------------------------------- */

/* A small model with a bit of everything: QDQ conv, Relu, Add, pooling. */
static const char *small_model(mb *b) {
  qpn x = mb_qp(b, "x", 0.02f, 3, ONNX_UINT8), t = mb_qp(b, "t", 0.05f, 0, ONNX_UINT8);
  const char *xq = quant_input(b, 4, 5, 5, x);
  wspec ws = {.k = 4, .c = 4, .nd = 2, .kernel = {3, 3}, .per_channel = 1, .bias = 1};
  const char *cf = qdq_conv(b, "conv", xq, x, &ws, x.scale);
  attr_ints(b, find_node(b, "conv"), "pads", 4, 1, 1, 1, 1);
  mb_node(b, "Relu", "relu", cf, "r");
  const char *tq = Q(b, "r", t, "tq");
  mb_node(b, "Add", "add", mb_str(b, "%s,%s", DQ(b, tq, t, "tf"), DQ(b, xq, x, "xf")), "sum");
  const char *yq = Q(b, "sum", t, "yq");
  Onnx__NodeProto *mp = mb_node(b, "MaxPool", "pool", DQ(b, yq, t, "yf"), "p");
  attr_ints(b, mp, "kernel_shape", 2, 2, 2);
  mb_output(b, "p");
  return mb_write(b, "small.onnx");
}

static uint8_t *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(*len + 1);
  ck_assert_uint_eq(fread(buf, 1, *len, f), *len);
  fclose(f);
  return buf;
}

static void write_all(const char *path, const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
  fclose(f);
}

/* Every prefix of a model loads or fails with one line naming the file. */
START_TEST(truncated_prefixes) {
  mb b;
  mb_init(&b);
  const char *full = small_model(&b);
  model *m;
  ct_err err;
  ck_assert_msg(load(full, 0, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_str_eq(m->convs[0].fused, "Relu,Add(residual)");
  model_free(m);
  size_t len;
  uint8_t *buf = read_all(full, &len);
  const char *cut = mb_str(&b, "%s/cut.onnx", b.dir);
  int ok = 0, failed = 0;
  for (size_t n = 0; n < len; n++) {
    write_all(cut, buf, n);
    ct_status st = load(cut, 0, CT_LAYOUT_NHWC, &m, &err);
    if (st == CT_OK) {
      ck_assert_int_le(m->n_convs, 1);
      for (int i = 0; i < m->n_convs; i++) ck_assert_ptr_nonnull(m->convs[i].fused);
      model_free(m);
      ok++;
      continue;
    }
    failed++;
    ck_assert_ptr_null(m);
    ck_assert_msg(st == CT_ERR_PARSE || st == CT_ERR_INVALID_ARG, "prefix %zu: status %d: %s", n,
                  st, err.msg);
    ck_assert_msg(strstr(err.msg, cut) && !strchr(err.msg, '\n'), "prefix %zu: %s", n, err.msg);
  }
  ck_assert_int_gt(failed, 0);
  free(buf);
  mb_free(&b);
}
END_TEST

/* The small model with a few bytes changed at random, many times: each
 * loads or fails cleanly (run under the sanitizers in CI). */
START_TEST(mutated_bytes) {
  mb b;
  mb_init(&b);
  size_t len;
  uint8_t *orig = read_all(small_model(&b), &len);
  uint8_t *buf = malloc(len);
  const char *path = mb_str(&b, "%s/mutant.onnx", b.dir);
  uint64_t s = 99;
  for (int round = 0; round < 1500; round++) {
    memcpy(buf, orig, len);
    int flips = 1 + round % 4;
    for (int f = 0; f < flips; f++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      buf[(s >> 33) % len] = (uint8_t)(s >> 8);
    }
    write_all(path, buf, len);
    model *m;
    ct_err err;
    ct_status st = load(path, 0, CT_LAYOUT_NHWC, &m, &err);
    if (st == CT_OK) {
      model_free(m);
      continue;
    }
    ck_assert_ptr_null(m);
    ck_assert_msg(st != CT_ERR_INTERNAL && st != CT_ERR_NO_MEMORY, "round %d: %s", round, err.msg);
    ck_assert_msg(strstr(err.msg, path) && !strchr(err.msg, '\n'), "round %d: %s", round, err.msg);
  }
  free(orig);
  free(buf);
  mb_free(&b);
}
END_TEST

/* Garbage, an empty file, a missing file. */
START_TEST(garbage) {
  mb b;
  mb_init(&b);
  const char *path = mb_str(&b, "%s/junk.onnx", b.dir);
  uint64_t s = 12345;
  uint8_t buf[4096];
  model *m;
  ct_err err;
  for (int round = 0; round < 64; round++) {
    size_t len = (size_t)(round * 61) % sizeof buf + 1;
    for (size_t i = 0; i < len; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      buf[i] = (uint8_t)(s >> 56);
    }
    write_all(path, buf, len);
    ct_status st = load(path, 0, CT_LAYOUT_NHWC, &m, &err);
    ck_assert_msg(st == CT_ERR_PARSE, "round %d: status %d: %s", round, st, err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, path));
  }
  write_all(path, buf, 0);
  ck_assert_int_eq(load(path, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "no graph"));
  const char *none = mb_str(&b, "%s/none.onnx", b.dir);
  ck_assert_int_eq(load(none, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(err.msg, none));
  ck_assert_int_eq(load(b.dir, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_IO);
  mb_free(&b);
}
END_TEST

/* Weights of a dtype the importer does not read: FLOAT16 (_i 0), an
 * unknown number (_i 1). */
START_TEST(unknown_dtype) {
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 4, 5, 5, x);
  wspec ws = {.k = 4, .c = 4, .nd = 2, .kernel = {1, 1}};
  Q(&b, qdq_conv(&b, "conv", xq, x, &ws, x.scale), x, "yq");
  mb_output(&b, "yq");
  for (size_t i = 0; i < b.g.n_initializer; i++)
    if (!strcmp(b.inits[i]->name, "conv.wq")) b.inits[i]->data_type = _i ? 99 : 10;
  const char *path = mb_write(&b, "m.onnx");
  model *m;
  ct_err err;
  ck_assert_int_eq(load(path, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, path));
  ck_assert_ptr_nonnull(strstr(err.msg, "node 'conv' (Conv)"));
  ck_assert_msg(strstr(err.msg, _i ? "type 99" : "FLOAT16"), "%s", err.msg);
  mb_free(&b);
}
END_TEST

/* Sizes that do not add up: raw_data shorter than the dims (_i 0), dims
 * whose product overflows (_i 1), negative dims (_i 2), int32_data out of
 * an int8's range (_i 3), too few typed values (_i 4). */
START_TEST(bad_sizes) {
  mb b;
  mb_init(&b);
  qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8);
  const char *xq = quant_input(&b, 4, 5, 5, x);
  wspec ws = {.k = 4, .c = 4, .nd = 2, .kernel = {1, 1}};
  Q(&b, qdq_conv(&b, "conv", xq, x, &ws, x.scale), x, "yq");
  mb_output(&b, "yq");
  Onnx__TensorProto *t = NULL;
  for (size_t i = 0; i < b.g.n_initializer; i++)
    if (!strcmp(b.inits[i]->name, "conv.wq")) t = b.inits[i];
  static int32_t vals[16] = {1, 2, 300};
  const char *want[] = {"raw_data holds", "too large", "negative", "out of range",
                        "holds 15 values"};
  switch (_i) {
  case 0:
    t->raw_data.len--;
    break;
  case 1:
    t->dims[0] = t->dims[1] = (int64_t)1 << 40;
    break;
  case 2:
    t->dims[2] = -1;
    break;
  default:
    t->has_raw_data = 0;
    t->int32_data = vals;
    t->n_int32_data = _i == 3 ? 16 : 15;
    if (_i == 4) vals[2] = 3;
  }
  const char *path = mb_write(&b, "m.onnx");
  model *m;
  ct_err err;
  ck_assert_int_eq(load(path, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, path));
  ck_assert_msg(strstr(err.msg, want[_i]), "%s", err.msg);
  mb_free(&b);
}
END_TEST

/* Messages nested far deeper than any model: refused before protobuf-c
 * recurses over them. */
START_TEST(deep_nesting) {
  mb b;
  mb_init(&b);
  /* node -> attribute -> graph -> node -> ... 1000 levels */
  Onnx__GraphProto *g = &b.g;
  for (int i = 0; i < 1000; i++) {
    Onnx__NodeProto *n = mb_alloc(&b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = "If";
    Onnx__AttributeProto *a = mb_alloc(&b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = "then_branch";
    Onnx__GraphProto *sub = mb_alloc(&b, sizeof *sub);
    onnx__graph_proto__init(sub);
    a->g = sub;
    n->n_attribute = 1;
    n->attribute = mb_alloc(&b, sizeof(void *));
    n->attribute[0] = a;
    g->n_node = 1;
    g->node = mb_alloc(&b, sizeof(void *));
    g->node[0] = n;
    g = sub;
  }
  const char *path = mb_write(&b, "deep.onnx");
  model *m;
  ct_err err;
  ck_assert_int_eq(load(path, 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "nested"));
  mb_free(&b);
}
END_TEST

/* Two nodes that wait on each other; a tensor made twice. */
START_TEST(bad_graphs) {
  mb b;
  mb_init(&b);
  mb_input(&b, "x", ONNX_FLOAT, 4, 1, 4, 4, 4);
  mb_node(&b, "Add", "a1", "x,b2", "a2");
  mb_node(&b, "Relu", "r2", "a2", "b2");
  mb_output(&b, "b2");
  model *m;
  ct_err err;
  ck_assert_int_eq(load(mb_write(&b, "cycle.onnx"), 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "cycle"));
  mb_free(&b);
  mb_init(&b);
  mb_input(&b, "x", ONNX_FLOAT, 4, 1, 4, 4, 4);
  mb_node(&b, "Relu", "r1", "x", "y");
  mb_node(&b, "Relu", "r2", "x", "y");
  mb_output(&b, "y");
  ck_assert_int_eq(load(mb_write(&b, "twice.onnx"), 0, CT_LAYOUT_NHWC, &m, &err), CT_ERR_PARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "node 'r2' (Relu)"));
  mb_free(&b);
}
END_TEST

/* A quantized conv whose weight scale is an absent input (an empty name:
 * scripts/fuzz mutated one to start with a NUL; the importer then read
 * the scales as a ConvInteger's, none, and the requantization ran off a
 * NULL pointer): refused, naming it; in a QLinearConv too. */
START_TEST(weight_scale_missing) {
  for (int qlinear = 0; qlinear < 2; qlinear++) {
    mb b;
    mb_init(&b);
    qpn x = mb_qp(&b, "x", 0.02f, 0, ONNX_INT8);
    const char *xq = quant_input(&b, 3, 9, 7, x);
    wspec ws = {.k = 5, .c = 3, .nd = 2, .kernel = {3, 3}, .bias = 1};
    const char *cf = qdq_conv(&b, "conv", xq, x, &ws, x.scale);
    qpn y = mb_qp(&b, "y", 0.1f, -3, ONNX_INT8);
    Q(&b, cf, y, "yq");
    mb_output(&b, "yq");
    Onnx__NodeProto *dqw = find_node(&b, "conv.DQw");
    dqw->input[1] = mb_str(&b, "%s", "");
    if (qlinear) { /* the same as a QLinearConv: x, xs, xz, w, ws (missing), wz, ys, yz */
      Onnx__NodeProto *conv = find_node(&b, "conv");
      conv->op_type = mb_str(&b, "QLinearConv");
      size_t n = 0;
      conv->input = mb_names(&b, "xq,x.s,x.z,conv.wq,-,conv.wz,y.s,y.z", &n);
      conv->input[4] = mb_str(&b, "%s", ""); /* absent */
      conv->n_input = n;
    }
    model *m = NULL;
    ct_err err;
    const ct_status st = load(mb_write(&b, "noscale.onnx"), 0, CT_LAYOUT_NHWC, &m, &err);
    if (st == CT_OK) { /* listed as unsupported, with the reason */
      ck_assert_int_eq(m->n_convs, 1);
      ck_assert(!m->convs[0].supported);
      ck_assert_ptr_nonnull(strstr(m->convs[0].why, "weight scale"));
      model_free(m);
    } else {
      ck_assert_int_eq(st, CT_ERR_PARSE);
      ck_assert_msg(strstr(err.msg, "weight scale is missing") != NULL, "%s", err.msg);
    }
    mb_free(&b);
  }
}
END_TEST

/* The committed tiny model (scripts/models/tiny_model.py): six convs in a
 * ResNet-like block, the residual on b, none on ds, b after ds. */
START_TEST(tiny_committed) {
  const char *src = getenv("CT_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/tiny_qdq.onnx", src ? src : ".");
  model *m;
  ct_err err;
  ck_assert_msg(load(path, 4, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->n_convs, 6);
  const char *order[] = {"stem", "a", "ds", "b", "c1", "c2"};
  for (int i = 0; i < 6; i++) {
    ck_assert_str_eq(m->convs[i].name, order[i]);
    ck_assert(m->convs[i].supported);
    ck_assert_int_eq(m->convs[i].w.n, 4);
  }
  ck_assert_str_eq(m->convs[0].fused, "Relu");
  ck_assert_str_eq(m->convs[3].fused, "Add(residual),Relu");
  ck_assert_int_eq(m->convs[3].residual_conv, 2);
  ck_assert_int_eq(m->convs[3].input_conv, 1);
  ck_assert_int_eq(m->convs[4].input_conv, 3);
  ck_assert_int_eq(m->convs[2].w.epi.residual, 0);
  wlset *s;
  int *counts;
  ck_assert_int_eq(model_workloads(m, &s, &counts, &err), CT_OK);
  ck_assert_int_eq(s->n_items, 5);
  ck_assert_int_eq(counts[4], 2);
  wlset_free(s);
  free(counts);
  /* the values a tuning measures with: each workload's first conv's (c1
   * and c2 share one); channels-last, so no packed forms */
  quant_table t = {0};
  ck_assert_msg(model_quant_table(m, &t, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(t.n, 5);
  for (int i = 0; i < 6; i++)
    ck_assert_ptr_eq(quant_table_find(&t, &m->convs[i].w), &m->convs[i == 5 ? 4 : i].q);
  quant_table_free(&t);
  model_free(m);
  /* plain layout: each workload also by its packed form, as tuned */
  ck_assert_msg(load(path, 4, CT_LAYOUT_NCHW, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_msg(model_quant_table(m, &t, &err) == CT_OK, "%s", err.msg);
  int twins = 0;
  for (int i = 0; i < 6; i++) {
    const ct_quant *want = &m->convs[i == 5 ? 4 : i].q;
    ck_assert_ptr_eq(quant_table_find(&t, &m->convs[i].w), want);
    ct_workload p;
    workload_packed(&m->convs[i].w, &p);
    if (p.k != m->convs[i].w.k) continue;
    ck_assert_ptr_eq(quant_table_find(&t, &p), want);
    twins += i != 5;
  }
  ck_assert_int_eq(t.n, 5 + twins);
  ck_assert_int_ge(twins, 4);
  quant_table_free(&t);
  model_free(m);
}
END_TEST

/* tests/data/tiny_grouped_qdq.onnx (scripts/models/grouped_models.py): an
 * inverted-residual block (expand, depthwise, project + the residual Add),
 * a depthwise stride 2 with multiplier 2, a grouped 3x3: every conv runs,
 * with its groups and its fused ops. */
START_TEST(tiny_grouped_committed) {
  const char *src = getenv("CT_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/tiny_grouped_qdq.onnx", src ? src : ".");
  model *m;
  ct_err err;
  ck_assert_msg(load(path, 3, CT_LAYOUT_NHWC, &m, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(m->n_convs, 5);
  static const struct {
    const char *name, *fused;
    int groups, c, k;
  } want[] = {{"ir_expand_out_Conv", "Clip", 1, 8, 48},
              {"ir_dw_out_Conv", "Clip", 48, 48, 48},
              {"ir_project_out_Conv", "Add(residual)", 1, 48, 8},
              {"dwm_out_Conv", "Relu", 8, 8, 16},
              {"g4_out_Conv", "", 4, 16, 16}};
  for (int i = 0; i < 5; i++) {
    const model_conv *c = &m->convs[i];
    ck_assert_str_eq(c->name, want[i].name);
    ck_assert_msg(c->supported, "%s: %s", c->name, c->why ? c->why : "");
    ck_assert_str_eq(c->fused, want[i].fused);
    ck_assert_int_eq(c->w.groups, want[i].groups);
    ck_assert_int_eq(c->w.c, want[i].c);
    ck_assert_int_eq(c->w.k, want[i].k);
    ck_assert_int_eq(c->w.n, 3);
    if (i) ck_assert_int_eq(c->input_conv, i - 1);
  }
  ck_assert_int_eq(workload_out_size(&m->convs[3].w, 0), 6);
  ck_assert_int_eq(m->convs[2].residual_conv, -1); /* the block's input: a graph input */
  model_free(m);
}
END_TEST

static void add_forms(TCase *tc) {
  tcase_add_test(tc, qdq_int8_per_tensor);
  tcase_add_loop_test(tc, qdq_uint8_per_channel, 0, 2);
  tcase_add_test(tc, qdq_uint8_weights_symmetric);
  tcase_add_test(tc, qdq_conv3d);
  tcase_add_test(tc, grouped_convs);
  tcase_add_test(tc, qlinear_conv_add);
  tcase_add_loop_test(tc, conv_integer, 0, 2);
  tcase_add_test(tc, float_conv_auto_pad);
}

static void add_fusion(TCase *tc) {
  tcase_add_test(tc, relu_and_clip);
  tcase_add_loop_test(tc, residual_add, 0, 2);
  tcase_add_test(tc, residual_broadcast_not_fused);
  tcase_add_loop_test(tc, resnet_block_downsample, 0, 2);
  tcase_add_loop_test(tc, depth_to_space, 0, 3);
  tcase_add_test(tc, tiny_committed);
  tcase_add_test(tc, tiny_grouped_committed);
  tcase_add_loop_test(tc, pointwise_fused, 0, 2);
  tcase_add_loop_test(tc, pointwise_shared_not_fused, 1, 3);
}

static void add_graph(TCase *tc) {
  tcase_add_test(tc, shape_propagation);
  tcase_add_test(tc, shape_more);
  tcase_add_test(tc, batch);
  tcase_add_test(tc, shape_unknown);
  tcase_add_test(tc, hostile_names_escaped);
  tcase_add_test(tc, hostile_names_printable);
  tcase_add_test(tc, long_names_leave_the_reason);
  tcase_add_test(tc, unsupported_listed);
  tcase_add_test(tc, unique_workloads);
  tcase_add_loop_test(tc, external_data, 0, 5);
}

static void add_hostile(TCase *tc) {
  tcase_add_test(tc, truncated_prefixes);
  tcase_add_test(tc, mutated_bytes);
  tcase_add_test(tc, garbage);
  tcase_add_loop_test(tc, unknown_dtype, 0, 2);
  tcase_add_loop_test(tc, bad_sizes, 0, 5);
  tcase_add_test(tc, deep_nesting);
  tcase_add_test(tc, bad_graphs);
  tcase_add_test(tc, weight_scale_missing);
}

static const test_case suite_cases[] = {
    {"forms", -1, add_forms}, {"fusion", -1, add_fusion},
    {"graph", -1, add_graph}, {"hostile", 60, add_hostile},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"model", suite_cases, 0, NULL};
  return test_main(&suite);
}
