/*
 * workload.h: the workload model: defaults, validation, derived sizes, the
 * canonical key and the JSON form.
 *
 * Invariant: every function that hands out a workload (workload_from_json,
 * workload_from_key) hands out a valid one; the others take one that
 * workload_validate accepted. Internally conv2d is the D = 1 case of conv3d:
 * workload_geom() gives that normalised view, which the reference, the
 * packing and the templates use so that one loop nest serves both ops.
 *
 * The canonical key (stable, one per distinct workload; see docs/workloads.md):
 *   conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1
 *   op-layout-data.weight.out-batch-in_ch-out_ch-input-kernel-stride-
 *   pad_before.pad_after-dilation (layout: nchw, nchw4c or nhwc; for conv3d
 *   ncdhw, ncdhw4c or ndhwc), spatial sizes outermost first, then the
 *   epilogue segments that are not the default, in this order: -zd (data
 *   zero point), -zw (weight zero points), -bias, -qc (per-channel scale),
 *   -res (residual), -d2sBdcr / -d2sBcrd (depth_to_space block B), -onnx
 *   (ONNX Runtime's rounding, CT_ROUND_ONNX); then -gG (groups G, when > 1);
 *   last -preC.T[.zd][.zw][.bias][.qc][.onnx] for a fused pointwise
 *   convolution before it (pre_c C, its data type T and its epilogue).
 */
#ifndef CT_CORE_WORKLOAD_H
#define CT_CORE_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "convtune/convtune.h"
#include "core/error.h"

/* Longest key: 11 fields, each spatial one up to 3 x 10 digits. */
#define CT_KEY_MAX 256

/* The kernels index every tensor with int32: element counts above this are rejected. */
#define CT_MAX_ELEMS INT32_MAX

/* Upper bounds of the fields, checked by workload_validate so that no later
 * arithmetic (the key, the derived sizes, the templates' tile, window and
 * shared-memory estimates, all int64) can overflow. Each is far above what
 * real networks use: channels reach about 2^13 (2^16 allows 1x1 convs over
 * flattened features), batches a few thousand (2^20 leaves a too large batch
 * to the element counts, which say so), kernels 31 (large-kernel
 * CNNs; 1D audio front ends reach a few hundred), strides 320 (audio
 * framing), dilations 512 (WaveNet). With them a per-block window
 * (tile x stride + kernel x dilation) stays under 2^21 per dimension and
 * channels x stride x tile under 2^40. Input sizes are bounded by the
 * element counts (CT_MAX_ELEMS), and the padded data by CT_MAX_PADDED. */
#define CT_MAX_BATCH    (1 << 20)
#define CT_MAX_CHANNELS (1 << 16)
#define CT_MAX_KERNEL   1024 /* per dimension, as the next three */
#define CT_MAX_STRIDE   1024
#define CT_MAX_DILATION 1024
#define CT_MAX_PAD      1024
/* Elements of the padded data, N x C x (in + pads) per dimension: 2^40, so
 * that a window estimate over it (x 16 bytes) stays within int64. */
#define CT_MAX_PADDED (INT64_C(1) << 40)

/* A workload normalised to three spatial dimensions (conv2d: D = 1, kernel
 * depth 1, stride 1, no padding), with the output sizes computed. int64 so
 * that products of sizes do not overflow. */
typedef struct geom3 {
  int64_t n, c, k;
  int64_t g; /* groups: output channel k reads input channels [k / (K/g) x C/g, + C/g) */
  int64_t in[3], ker[3], str[3], pb[3], pa[3], dil[3], out[3];
} geom3;

/* Defaults for op: batch 1, stride 1, dilation 1, no padding, groups 1, NCHW,
 * int8 x int8 -> int32. Channels, input and kernel sizes are left 0 (unset). */
void workload_init(ct_workload *w, ct_op op);

/* Number of spatial dimensions: 2 or 3. */
int workload_nd(const ct_workload *w);

/* CT_OK, or CT_ERR_INVALID_WORKLOAD with a message naming the field and the
 * accepted range. Checks every field, output sizes > 0, channels % 4 for the
 * packed layout (NHWC takes any C and K), depth_to_space only with the
 * channel-major layouts (NCHW, NCHW4c), onnx rounding only with an 8-bit
 * output, element counts within int32, and every field within its CT_MAX_*
 * bound above. */
ct_status workload_validate(const ct_workload *w, ct_err *err);

/* The normalised 3D view of a valid workload. */
void workload_geom(const ct_workload *w, geom3 *g);

/* Output size along spatial dimension dim (0 = outermost), possibly <= 0 for
 * a workload that workload_validate would reject. */
int64_t workload_out_size(const ct_workload *w, int dim);

/* Operation count: 2 (multiply and add) x N x K x output pixels x C/groups x
 * kernel volume, plus the fused pointwise convolution's (pre_c). */
int64_t workload_ops(const ct_workload *w);

/* Input channels per group, C / groups: what each output channel reads, and
 * the weights' second dimension. */
int64_t workload_cpg(const ct_workload *w);

/* Element counts of data, weights and output in the workload's layout,
 * saturated at INT64_MAX (as is workload_ops). Packed weights hold whole
 * chunks of 4 output channels; the output is the remapped one with
 * depth_to_space, its channels rounded up to 4 when packed. NCHW and NHWC
 * hold the same (unpadded) counts, in another order. Weights hold C/groups
 * input channels (packed and grouped: rounded up to 4). */
int64_t workload_data_elems(const ct_workload *w);
int64_t workload_weight_elems(const ct_workload *w);
int64_t workload_out_elems(const ct_workload *w);

/* The output tensor's dimensions in its layout, outermost first, into dims;
 * returns their number (at most CT_MAX_SPATIAL + 3). NCHW: N, C, [D,] H, W;
 * NCHW4c: N, ceil(C/4), [D,] H, W, 4; NHWC: N, [D,] H, W, C; C being the
 * output channels and the sizes the remapped ones with depth_to_space. */
int workload_out_dims(const ct_workload *w, int64_t dims[CT_MAX_SPATIAL + 3]);

/* The output's shape in its layout (workload_out_dims joined by 'x'), e.g.
 * "16x64x56x56" (NCHW), "16x16x56x56x4" (NCHW4c) or "16x56x56x64" (NHWC),
 * into buf (size >= 64; a shorter one truncates). Returns buf. */
char *workload_out_shape(const ct_workload *w, char *buf, size_t size);

/* w in the channel-packed layout (NCHW4c / NCDHW4c), with C and K rounded
 * up to multiples of 4: the extra channels are zero-padded by packing, so the
 * convolution of the real channels is unchanged (a 3-channel stem becomes 4).
 * With depth_to_space K stays: the remap needs the real channels, and the
 * kernel pads the output's channels itself. Any input layout (NCHW, NHWC, or
 * NCHW4c itself) gives the packed form of the same convolution: this is
 * what the NCHW4c templates tune and run for it; the tensors themselves are
 * converted by pack.h (NHWC: unpack_nhwc, then pack_nc4c). */
void workload_packed(const ct_workload *w, ct_workload *out);

/* The workload a template of layout `layout` runs for w, into *out (which
 * may be w): 1 when it takes w's layout, else 0. A channel-packed template
 * takes nchw4c as it is and plain nchw packed (the dispatch packs the
 * tensors at run time); a channels-last one takes nhwc only, never
 * converted (the caller's tensors are channels-last). The tuner and the
 * dispatch library select by this one rule, so that the records of a key
 * serve that key's layout. */
int workload_for_layout(const ct_workload *w, ct_layout layout, ct_workload *out);

/* Largest depth_to_space block accepted. */
#define CT_D2S_MAX_BLOCK 16

/* Output channels per depth_to_space block: b^nd (1 without it). */
int64_t workload_d2s_volume(const ct_workload *w);
/* Channels of the output tensor: K, or K / b^nd with depth_to_space. */
int workload_out_channels(const ct_workload *w);
/* The fused pointwise convolution of w (w->pre_c > 0) as a workload of its
 * own: pre_c -> c channels, 1x1, its data type pre_data_type, its output
 * w's data type, its epilogue pre_epi. */
void workload_pre(const ct_workload *w, ct_workload *pre);
/* w without its fused pointwise convolution (pre_c 0): the convolution that
 * reads the intermediate tensor. */
void workload_main(const ct_workload *w, ct_workload *main_conv);
/* Channels of the data tensor: pre_c with a fused pointwise convolution, else c. */
int workload_data_channels(const ct_workload *w);

/* Whether w's kernels take a params block (zero points, bias, 8-bit output). */
int workload_has_params(const ct_workload *w);
/* Bytes per output element: 4 (int32) or 1. */
size_t workload_out_elem_bytes(const ct_workload *w);

/* Names used in keys, JSON and the CLI. Layouts: "nchw", "nchw4c", "nhwc"
 * for conv2d; "ncdhw", "ncdhw4c", "ndhwc" for conv3d; "?" out of range. */
const char *workload_op_name(ct_op op);
const char *workload_layout_name(ct_layout layout, ct_op op);
const char *workload_dtype_name(ct_dtype t); /* "int8" */

/* The canonical key into buf (size >= CT_KEY_MAX). Returns buf. */
char *workload_key(const ct_workload *w, char *buf, size_t size);

/* Parse a canonical key into a valid workload. Rejects a key that is not in
 * canonical form, saying what the canonical form would be. */
ct_status workload_from_key(const char *key, ct_workload *out, ct_err *err);

/* The canonical JSON object; owned by the caller (cJSON_Delete). NULL when
 * out of memory. */
cJSON *workload_to_json(const ct_workload *w);

/* Parse a JSON object into a valid workload. Required: op, c, k, the input
 * sizes (h, w; and d for conv3d) and kernel. Optional: n (1), stride (1),
 * pad (0), dilation (1), groups (1), layout ("nchw"; also "nchw4c" and
 * "nhwc", or for conv3d "ncdhw", "ncdhw4c" and "ndhwc"), data_type ("int8"),
 * weight_type ("int8"), out_type ("int32"), name (ignored here), and the
 * epilogue: data_zero_point, weight_zero_point, bias, residual (booleans,
 * false), scale ("tensor" or "channel"), depth_to_space (block, 0),
 * d2s_mode ("dcr" or "crd") and rounding ("gemmlowp" or "onnx"; emitted
 * only when onnx). Sizes per
 * dimension are a number (all dimensions) or a list of one per dimension;
 * pad may also list 2 x nd values, all befores then all afters, as ONNX
 * does. Unknown fields are rejected, so that a typo is never ignored. */
ct_status workload_from_json(const cJSON *json, ct_workload *out, ct_err *err);

/* A comma-separated list of the key's epilogue segments ("bias,qc,res",
 * "zd", "d2s4dcr", "onnx"; "none" clears what came before) into *e, which
 * it replaces; NULL is the empty list. CT_ERR_INVALID_ARG names an unknown
 * item and lists the accepted ones; the caller prefixes where the list
 * came from. Shared by the CLI's --epilogue and the ONNX importer's float
 * models, so that both accept the same words. */
ct_status workload_epilogue_parse(const char *list, ct_epilogue *e, ct_err *err);

/* Parse a text that holds one JSON workload object. */
ct_status workload_from_json_text(const char *text, ct_workload *out, ct_err *err);

#endif
