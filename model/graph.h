/*
 * graph.h: an ONNX graph as the importer reads it (internal to model/):
 * the file unpacked by protobuf-c, every tensor name resolved once into a
 * value (its producer, its consumers, its constant, its shape), the nodes
 * in a topological order, attributes read with their types checked, and
 * constant tensors decoded from raw_data, the typed fields or external data.
 *
 * Invariants: value and node indices are checked once here, so that users
 * never index out of range; a node's omitted optional input is -1. Nothing
 * trusts the file: counts, dims, sizes and offsets are checked before use,
 * products in int64 with overflow checks, and nesting depth before
 * protobuf-c recurses. Messages name the file and the node ("m.onnx: node
 * 'conv1' (Conv): ...").
 *
 * Cost: one pass over the file to check its nesting, protobuf-c's unpack,
 * then O(nodes + values) for the index and the order; constants are decoded
 * on demand, each a copy of its bytes.
 */
#ifndef CT_MODEL_GRAPH_H
#define CT_MODEL_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "onnx.pb-c.h"

/* Ranks above this are refused as constants and unknown as shapes. */
#define GRAPH_MAX_RANK 8

/* ONNX data types the importer reads (TensorProto.DataType). */
enum {
  ONNX_FLOAT = 1,
  ONNX_UINT8 = 2,
  ONNX_INT8 = 3,
  ONNX_INT32 = 6,
  ONNX_INT64 = 7,
};

/* A shape: rank < 0 when unknown; dims[i] < 0 when that size is unknown. */
typedef struct gshape {
  int rank;
  int64_t dims[GRAPH_MAX_RANK];
} gshape;

/* 1 when the rank and every size are known. */
int gshape_known(const gshape *s);
/* "1x64x56x56" (or "?" parts) into buf; returns buf. */
char *gshape_str(const gshape *s, char *buf, size_t size);

typedef struct gvalue {
  const char *name;                  /* borrowed from the protobuf */
  int producer;                      /* node index, -1: none (input, constant or undefined) */
  int n_uses;                        /* node inputs that read it (a node reading it twice: 2) */
  int *uses;                         /* node index of each use */
  const Onnx__TensorProto *constant; /* initializer or Constant node's value, or NULL */
  int is_input;                      /* a graph input (not an initializer) */
  int is_output;                     /* a graph output */
  int elem_type;                     /* ONNX data type, 0 when unknown */
  gshape shape;
  /* shape.rank < 0: why it could not be derived, and the node where that
   * happened (-1: the value itself, e.g. a graph input without a shape) */
  const char *shape_why;
  int shape_why_node;
  gshape declared; /* from value_info / graph outputs, batch applied; rank < 0: none */
} gvalue;

typedef struct gnode {
  const Onnx__NodeProto *p;
  char *name;         /* the node's name, or "<op_type>#<index>" when it has none; owned */
  const char *op;     /* op_type, "" when missing */
  const char *domain; /* "" for ai.onnx */
  int n_in, n_out;
  int *in, *out; /* value indices; -1 for an omitted optional input or output */
} gnode;

typedef struct graph {
  const char *path; /* borrowed from the caller */
  char *dir;        /* the model's folder, for external data; owned */
  uint8_t *bytes;   /* the file; owned */
  size_t n_bytes;
  Onnx__ModelProto *mp;
  const Onnx__GraphProto *gp;
  int n_nodes;
  gnode *nodes;
  int *order; /* the nodes in a topological order, file order where free */
  int n_values;
  gvalue *values;
  int *table; /* hash table: value index + 1, 0 empty */
  size_t table_size;
  /* Constant nodes' value_int(s) / value_float(s) made tensors; owned */
  Onnx__TensorProto **synth;
  int n_synth;
  int batch; /* the batch applied to the graph's inputs (graph_shapes) */
} graph;

/* Read and index path. Owned: graph_free. CT_ERR_NOT_FOUND (no such file),
 * CT_ERR_IO, CT_ERR_PARSE (malformed, with the file named). */
ct_status graph_open(const char *path, graph **out, ct_err *err);
void graph_free(graph *g);

/* The value called name, or -1. */
int graph_find(const graph *g, const char *name);

/* Input i / output i of node n as a value index, -1 when absent. */
int graph_in(const graph *g, int n, int i);
int graph_out(const graph *g, int n, int i);

/* Whether node n is op (in the default domain, or com.microsoft when
 * ms_too: ONNX Runtime's contrib ops that mirror standard ones). */
int graph_is(const graph *g, int n, const char *op);
int graph_is_ms(const graph *g, int n, const char *op);

/* The one node that reads v, or -1 when none, several, or v is a graph
 * output (a fused tensor must not be seen by anything else). */
int graph_sole_use(const graph *g, int v);

/* A one-line message "PATH: node 'NAME' (OP): MSG" (node -1: "PATH: MSG"). */
ct_status graph_err(const graph *g, ct_err *err, ct_status st, int node, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Order units of nodes topologically: unit[n] is the representative node
 * of n's unit (n itself when alone); a unit waits for every unit whose
 * nodes produce its nodes' inputs. *out receives each representative once,
 * smallest index first where the order is free; *count their number.
 * CT_ERR_PARSE when the units wait on each other. */
ct_status graph_order_units(const graph *g, const int *unit, int *out, int *count, ct_err *err);

/* ---- attributes (NULL when absent) ------------------------------------- */
const Onnx__AttributeProto *graph_attr(const graph *g, int n, const char *name);
/* An INT attribute into *v (dflt when absent). CT_ERR_PARSE for another type. */
ct_status graph_attr_int(const graph *g, int n, const char *name, int64_t dflt, int64_t *v,
                         ct_err *err);
/* A FLOAT attribute into *v (dflt when absent). */
ct_status graph_attr_float(const graph *g, int n, const char *name, float dflt, float *v,
                           ct_err *err);
/* An INTS attribute: *count values into v (at most max); *count = -1 when
 * absent. CT_ERR_PARSE for another type or more than max values. */
ct_status graph_attr_ints(const graph *g, int n, const char *name, int64_t *v, int max, int *count,
                          ct_err *err);
/* A STRING attribute into buf (dflt when absent); CT_ERR_PARSE when too long. */
ct_status graph_attr_str(const graph *g, int n, const char *name, const char *dflt, char *buf,
                         size_t size, ct_err *err);

/* ---- constants ----------------------------------------------------------- */
typedef struct gtensor {
  int dtype; /* one of ONNX_FLOAT, UINT8, INT8, INT32, INT64 */
  int rank;
  int64_t dims[GRAPH_MAX_RANK];
  int64_t n;  /* elements */
  void *data; /* n elements of float, uint8_t, int8_t, int32_t or int64_t; owned */
} gtensor;

/* Decode value v's constant. node names the node that needs it (messages).
 * CT_ERR_PARSE for a dtype other than the five above, sizes that do not
 * match the dims, bad external data; CT_ERR_NOT_FOUND for a missing external
 * file; CT_ERR_UNSUPPORTED when v is not a constant. Owned: gtensor_free. */
ct_status graph_const(const graph *g, int v, int node, gtensor *out, ct_err *err);
void gtensor_free(gtensor *t);
/* Element i as int64 (integer types) or float (any type). */
int64_t gtensor_i64(const gtensor *t, int64_t i);
float gtensor_f32(const gtensor *t, int64_t i);
/* "FLOAT", "UINT8", ... or "type N". */
const char *onnx_type_name(int t, char *buf, size_t size);

/* ---- shapes (shape.c) ------------------------------------------------------ */

/* A convolution's geometry from ONNX attributes (Conv, ConvInteger,
 * QLinearConv, with its data and weight shapes): nd spatial dimensions
 * (1 to 3), pads resolved from auto_pad. CT_ERR_PARSE for attributes that
 * do not fit (counts, ranges, kernel_shape against the weights). */
typedef struct conv_geom {
  int nd;
  int64_t n, c, k, group;
  int64_t in[3], kernel[3], stride[3], dil[3], pb[3], pa[3], out[3];
} conv_geom;
ct_status graph_conv_geom(const graph *g, int node, const gshape *x, const gshape *w, conv_geom *cg,
                          ct_err *err);

/* Shapes and element types of every value: graph inputs (batch applied),
 * value_info where it is there, else propagated in topological order
 * through the ops a CNN uses. batch > 0 replaces every input's batch;
 * batch 0 keeps the model's own, and a symbolic one is CT_ERR_INVALID_ARG.
 * A shape that cannot be derived is left unknown with shape_why: only the
 * importer knows which ones it needs. */
ct_status graph_shapes(graph *g, int batch, ct_err *err);

/* ct_err for an unknown shape of v, needed by node (CT_ERR_PARSE). */
ct_status graph_shape_err(const graph *g, int v, int node, const char *what, ct_err *err);

#endif
