/*
 * model.h: a CNN read from an ONNX file (protobuf-c over Debian's
 * onnx.proto): its convolutions in graph order, each as a workload with the
 * epilogue the graph implies, the values behind that epilogue, and how the
 * convs connect, so that a model can be listed, tuned as one unit and its
 * conv stack benchmarked end to end.
 *
 * Forms recognised: QDQ (QuantizeLinear / DequantizeLinear around Conv,
 * the weights through DequantizeLinear), QLinearConv, ConvInteger, and a
 * float Conv (shapes only: tuned as int8, int32 output unless opts say
 * otherwise). What follows a conv in the graph is folded into its epilogue
 * where the engine can do it exactly: bias, the requantization, Relu / Clip
 * as the clamp, a quantized Add of a residual, DepthToSpace. Quantized
 * forms get CT_ROUND_ONNX, so that outputs equal ONNX Runtime's.
 *
 * Shapes come from value_info where present, else are propagated through
 * the ops a CNN uses. A conv's `group` makes a grouped workload (depthwise
 * when group == C; weights K x C/group x kernel volume). A conv the engine
 * cannot run (1D, a float bias, ...) stays in the list with supported = 0
 * and the reason: never dropped.
 *
 * A pointwise conv whose only reader is the next conv (an inverted residual
 * block's 1x1 expansion before its depthwise conv) may be fused into that
 * conv (ct_workload.pre_c), when the caller's model_opts.fuse_pre says a
 * kernel runs the fused workload: the second conv then reads the first's
 * input and runs both, and the first stays listed, absorbed (fused_into).
 *
 * Errors: a file that does not exist is CT_ERR_NOT_FOUND, as a missing
 * workload file, one that cannot be read CT_ERR_IO; a truncated or
 * malformed file, an unknown dtype, a shape that cannot be derived,
 * CT_ERR_PARSE with one line naming the file and the node; a symbolic
 * batch without opts.batch, CT_ERR_INVALID_ARG. Nothing here prints or
 * exits.
 */
#ifndef CT_MODEL_MODEL_H
#define CT_MODEL_MODEL_H

#include "core/error.h"
#include "core/wlset.h"
#include "core/workload.h"

typedef enum model_form {
  MODEL_FLOAT = 0, /* float Conv: shapes only */
  MODEL_QDQ = 1,
  MODEL_QLINEAR = 2,
  MODEL_CONVINTEGER = 3,
} model_form;

typedef struct model_opts {
  int batch; /* > 0: every graph input's batch; 0: the model's own (a symbolic one is an error) */
  ct_layout layout; /* the workloads' layout: CT_LAYOUT_NHWC (default), NCHW or NCHW4C */
  /* A float model's convs: the output type and the epilogue segments
   * ("bias,qc", as the CLI's --epilogue), applied to each; NULL / INT32:
   * int8 x int8 -> int32. Ignored for quantized models. */
  ct_dtype float_out;
  const char *float_epilogue;
  ct_dtype float_data; /* a float model's data type (the CLI's --data): INT8 (default) or UINT8 */
  /* Fusion of a pointwise conv A into the conv B that alone reads its
   * output (model_load: every kernel dim 1, stride 1, no padding, dilation
   * 1, one group, a requantized 8-bit output without residual or
   * depth_to_space, no other reader, not a graph output; B channels-last;
   * quantized models only). fuse_pre gets B's workload with A before it
   * (pre_c, pre_data_type, pre_epi) and fuse_user; 1: fuse them. NULL (the
   * default): no fusion. model/ depends on core only, so whether a kernel
   * runs the fused workload is the caller's to say (the CLI asks the
   * templates: template_any_supports). */
  int (*fuse_pre)(const ct_workload *w, void *user);
  void *fuse_user;
} model_opts;

/* Defaults: batch 0, layout nhwc, float models int8 x int8 -> int32 without
 * an epilogue, no fusion of pointwise convs. */
void model_opts_default(model_opts *o);

/* One conv node. The values are host memory owned by the model; q points
 * into them (ct_make_params and ct_reference_qconv take it as it is). */
typedef struct model_conv {
  char *name;    /* the node's name, or "<op_type>#<index>" when it has none */
  char *op_type; /* "Conv", "QLinearConv", "ConvInteger" */
  ct_workload w; /* in opts.layout, with the epilogue the graph implies */
  int supported; /* 0: the engine cannot run it; why says so */
  char *why;     /* NULL when supported */
  /* The fused ops after the conv, for listing: e.g. "Relu", "Add(residual)",
   * "DepthToSpace"; "" when none. */
  char *fused;
  /* Values (quantized forms; NULL / zero for a float model): */
  int8_t *weights;             /* plain OIHW / OIDHW int8, K x C/groups x kernel volume */
  int32_t *bias;               /* K values, or NULL */
  float *scale;                /* 1 or K values (w.epi.scale) */
  int32_t *weight_zero_points; /* K values, or NULL (all zero) */
  ct_quant q; /* the epilogue's values, pointing into the above (float: quant_init's defaults) */
  /* Graph connections, as indices into model.convs (-1: none): the conv
   * whose final (fused) output is this conv's data, and with a residual the
   * conv whose final output is the residual. -1 also when the tensor comes
   * from an op convtune does not run (pooling, Concat, a graph input):
   * input_from / residual_from then name that op ("MaxPool /maxpool/...",
   * "graph input 'x'"). input_from is always set (the conv's name when
   * input_conv >= 0); residual_from is NULL without a residual. */
  int input_conv, residual_conv;
  char *input_from, *residual_from;
  /* The graph's tensors: the data the conv reads (quantized forms: the
   * 8-bit tensor before its DequantizeLinear), its final (fused) output,
   * and its residual (NULL without one). For matching the convs to a run
   * of the whole graph, e.g. by ONNX Runtime. */
  char *data_tensor, *out_tensor, *residual_tensor;
  /* A fused pair (model_opts.fuse_pre), indices into model.convs, -1 when
   * none. On the conv B that runs both: pre_conv is A, w has pre_c (A's
   * input channels), pre_data_type and pre_epi (A's), q.pre points at A's
   * q and q.pre_weights at A's weights (a 1x1 conv's OIHW is [c][pre_c]),
   * and input_conv, input_from and data_tensor are A's; fused lists "pre: A
   * (1x1)" first. On A: fused_into is B; A keeps its workload and values
   * (B reads them through q.pre) but runs no more: model_workloads skips
   * it. Read them through model_pre_of and model_absorbed_by, which check
   * both ends (a zeroed conv is neither). */
  int pre_conv, fused_into;
} model_conv;

typedef struct model {
  char *path;
  model_form form;
  int batch; /* the batch every workload has */
  int n_convs;
  /* In a topological order of the fused graph: each conv after the convs
   * whose outputs it reads, as data or residual (a block's closing conv
   * after its downsample); the file's order where that leaves a choice.
   * Never moved after model_load: a fused conv's q.pre points into it. */
  model_conv *convs;
} model;

/* Read path into a model. Owned: model_free. On failure *out is NULL and
 * err says why in one line that names the file (and the node, where one is
 * at fault). */
ct_status model_load(const char *path, const model_opts *o, model **out, ct_err *err);

/* Free a model; NULL is accepted. */
void model_free(model *m);

/* The model's unique supported workloads, in order of first occurrence,
 * as a set named after the file (each item named after its first node),
 * with counts[i] the number of nodes that run item i; a conv absorbed by a
 * fused one (model_absorbed_by) is no node of its own. Owned: wlset_free,
 * free(counts). */
ct_status model_workloads(const model *m, wlset **out, int **counts, ct_err *err);

/* The pointwise conv that conv i runs fused before itself (its pre_conv,
 * whose fused_into names i, and i's w.pre_c > 0), or -1. */
int model_pre_of(const model *m, int i);

/* The conv that absorbed conv i (its fused_into, whose pre_conv names i),
 * or -1: conv i runs as a node of its own. */
int model_absorbed_by(const model *m, int i);

/* How many convs run fused with a pointwise conv before them: the fused
 * nodes, each of which runs two of the model's convs. */
int model_n_fused(const model *m);

/* The values every supported conv of a quantized model runs with, by
 * workload (quant_table_add; t zeroed or holding earlier entries): its own
 * workload's, a fused conv's also as its own conv's alone (workload_main:
 * tune --fuse tunes the pair apart too). Where convs share a workload the
 * first in graph order gives the values. A float model adds nothing (its
 * values are no model's). The entries borrow m's values: free the table
 * before m. */
struct quant_table;
ct_status model_quant_table(const model *m, struct quant_table *t, ct_err *err);

/* The form's name: "float", "qdq", "qlinear", "convinteger". */
const char *model_form_name(model_form f);

#endif
