/*
 * convtune.h: the whole public contract of libconvtune.
 *
 * libconvtune serves tuned int8 convolution kernels to an inference runtime.
 * This header holds the status codes (one X-macro list generates the enum,
 * the names and the messages), the version, the workload descriptor, and the
 * dispatch calls: open a context on a database and a GPU, then run
 * convolutions with ct_conv2d / ct_conv3d, which launch the best kernel
 * tuned for this device (or the best fallback) on the caller's stream.
 * Nothing here prints, exits or allocates behind the caller's back; every
 * pointer a call returns says who owns it. All calls are thread-safe.
 */
#ifndef CONVTUNE_CONVTUNE_H
#define CONVTUNE_CONVTUNE_H

#include <stddef.h>
#include <stdint.h>

#include "convtune/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The public functions; everything else in the shared library is hidden. */
#if defined(__GNUC__)
#define CT_API __attribute__((visibility("default")))
#else
#define CT_API
#endif

/* Status codes: CT_OK is 0, errors are negative and never renumbered. */
#define CT_STATUS_LIST(X)                                                                          \
  X(CT_OK, 0, "success")                                                                           \
  X(CT_ERR_INVALID_ARG, -1, "invalid argument")                                                    \
  X(CT_ERR_INVALID_WORKLOAD, -2, "invalid workload")                                               \
  X(CT_ERR_UNSUPPORTED, -3, "unsupported")                                                         \
  X(CT_ERR_PARSE, -4, "malformed input")                                                           \
  X(CT_ERR_NO_MEMORY, -5, "out of memory")                                                         \
  X(CT_ERR_IO, -6, "file error")                                                                   \
  X(CT_ERR_NOT_FOUND, -7, "not found")                                                             \
  X(CT_ERR_CUDA, -8, "CUDA error")                                                                 \
  X(CT_ERR_NVRTC, -9, "NVRTC error")                                                               \
  X(CT_ERR_DB, -10, "database error")                                                              \
  X(CT_ERR_NO_DEVICE, -11, "no CUDA device")                                                       \
  X(CT_ERR_INTERNAL, -12, "internal error")

typedef enum ct_status {
#define CT_STATUS_ENUM(name, value, msg) name = value,
  CT_STATUS_LIST(CT_STATUS_ENUM)
#undef CT_STATUS_ENUM
} ct_status;

/* A static English message for a status ("invalid workload"); never NULL. */
CT_API const char *ct_strerror(ct_status status);
/* The status's enum name ("CT_ERR_INVALID_WORKLOAD"); never NULL. */
CT_API const char *ct_status_name(ct_status status);
/* The library's version, "MAJOR.MINOR.PATCH"; static storage. */
CT_API const char *ct_version(void);

/* ---- Workloads ---------------------------------------------------------
 * A workload is one convolution: op, shapes, dtypes and layouts; everything
 * but the schedule. Spatial arrays are ordered outermost first: (H, W) for
 * conv2d in elements [0..1], (D, H, W) for conv3d in [0..2]; unused entries
 * are ignored. The output size per dimension is
 *   out = (in + pad_before + pad_after - dilation * (kernel - 1) - 1) / stride + 1.
 */
typedef enum ct_op { CT_OP_CONV2D = 2, CT_OP_CONV3D = 3 } ct_op;

/* Layouts of (data, weights, output). In 3D each gains a D after C / I.
 *   CT_LAYOUT_NCHW:   data NCHW,   weights OIHW,     output NCHW.
 *   CT_LAYOUT_NCHW4C: data NCHW4c, weights OIHW4o4i, output NCHW4c: channels
 *                     in chunks of 4 innermost, so one 32-bit load carries the
 *                     4 int8 that a dp4a consumes; C and K multiples of 4.
 *   CT_LAYOUT_NHWC:   data NHWC,   weights OHWI,     output NHWC: channels
 *                     last (conv3d: NDHWC, ODHWI), unpadded, so that a pixel's
 *                     channels (and an output channel's reduction) are
 *                     contiguous: what the bulk tensor copy engine's im2col
 *                     mode and wgmma's K-major operands read. */
typedef enum ct_layout { CT_LAYOUT_NCHW = 0, CT_LAYOUT_NCHW4C = 1, CT_LAYOUT_NHWC = 2 } ct_layout;

typedef enum ct_dtype { CT_DTYPE_INT8 = 0, CT_DTYPE_UINT8 = 1, CT_DTYPE_INT32 = 2 } ct_dtype;

#define CT_MAX_SPATIAL 3

/* Granularity of the requantizing multiplier. */
typedef enum ct_scale_mode { CT_SCALE_TENSOR = 0, CT_SCALE_CHANNEL = 1 } ct_scale_mode;

/* depth_to_space orders (ONNX's names): conv channel k of block offset
 * (i, j) and output channel c' is k = (i * b + j) * C' + c' in DCR
 * (TensorFlow, ONNX's default) and k = c' * b * b + i * b + j in CRD
 * (PyTorch's pixel_shuffle). conv3d adds the depth offset outermost. */
typedef enum ct_d2s_mode { CT_D2S_DCR = 0, CT_D2S_CRD = 1 } ct_d2s_mode;

/* How an 8-bit output is requantized. CT_ROUND_GEMMLOWP: fixed-point
 * multipliers with gemmlowp's / TFLite's double rounding (the default).
 * CT_ROUND_ONNX: ONNX Runtime's CPU kernels, in float32: y = zy +
 * rne(clamp(float(v) * scale, lo - zy, hi - zy)), rne rounding half to
 * even; with a residual, ONNX's QLinearAdd after the conv's own
 * QuantizeLinear (ct_quant's mid_* fields). What the ONNX importer picks,
 * so that a model's outputs equal ONNX Runtime's byte for byte. */
typedef enum ct_rounding { CT_ROUND_GEMMLOWP = 0, CT_ROUND_ONNX = 1 } ct_rounding;

/* What a convolution does around its int32 accumulators: the parts that
 * change the kernel (and so are part of the workload and its key). The
 * values (zero points, bias, scales, clamp bounds) come at run time in a
 * ct_quant. All zero: raw int32 accumulators, as int8 x int8 -> int32.
 *
 * The quantized formula, per output element of channel k:
 *   acc = sum over the window of (x - zx) * (w - zw[k])   (padding: x = zx)
 *   v   = acc + bias[k]                                  (int32, wraps)
 *   int32 output: y = v
 *   8-bit output: y = clamp(zy + rescale(v, M[k]) + rescale(r - zr, Mr), lo, hi)
 * where rescale(v, M) multiplies by a fixed-point multiplier and shift with
 * gemmlowp's / TFLite's rounding (ct_quantize_multiplier), r is the residual
 * element at the same output position, and the sum before the clamp is
 * exact (int64). With d2s_block b the output is written in depth_to_space
 * order: K channels become K / b^2 (conv3d: K / b^3), each spatial size b
 * times larger. */
typedef struct ct_epilogue {
  int data_zero_point;   /* 1: data has a zero point zx (padding reads it) */
  int weight_zero_point; /* 1: per-output-channel weight zero points zw[k] */
  int bias;              /* 1: a per-output-channel int32 bias */
  ct_scale_mode scale;   /* 8-bit output: one multiplier, or one per output channel */
  int residual;          /* 8-bit output: a residual tensor, same shape and type as the output */
  int d2s_block;         /* 0: none; 2 or more: depth_to_space block size */
  ct_d2s_mode d2s_mode;  /* with d2s_block */
  ct_rounding rounding;  /* 8-bit output: the requantization's arithmetic */
} ct_epilogue;

typedef struct ct_workload {
  ct_op op;
  ct_layout layout;
  ct_dtype data_type;   /* int8 or uint8 */
  ct_dtype weight_type; /* int8 */
  ct_dtype out_type;    /* int32 (accumulators), or int8 / uint8 requantized */
  int n;                /* batch */
  int c;                /* input channels */
  int k;                /* output channels of the convolution (before depth_to_space) */
  int groups;           /* G, dividing c and k (1: dense; c: depthwise); weights K x C/G x kernel */
  int in[CT_MAX_SPATIAL];
  int kernel[CT_MAX_SPATIAL];
  int stride[CT_MAX_SPATIAL];
  int pad_before[CT_MAX_SPATIAL];
  int pad_after[CT_MAX_SPATIAL];
  int dilation[CT_MAX_SPATIAL];
  ct_epilogue epi; /* zero: none */
  /* A pointwise convolution fused before this one (0: none): the data holds
   * pre_c channels of pre_data_type, and their 1x1 convolution into c
   * channels (stride 1, no padding, one group; weights c x pre_c, OHWI),
   * requantized by pre_epi to data_type, is this convolution's input, which
   * never reaches memory. An inverted residual block's expansion feeding
   * its depthwise conv is the case it is for. Channels-last only; pre_epi
   * has no residual and no depth_to_space. Its values come in ct_quant's
   * pre and pre_weights. */
  int pre_c;
  ct_dtype pre_data_type; /* int8 or uint8 */
  ct_epilogue pre_epi;
} ct_workload;

/* Defaults for op: batch 1, stride 1, dilation 1, no padding, groups 1,
 * layout NCHW, int8 x int8 -> int32, no epilogue; channels and sizes left 0
 * to be set. */
CT_API void ct_workload_init(ct_workload *w, ct_op op);

/* The canonical key of w into buf (at least 256 bytes): the name its
 * records carry. CT_ERR_INVALID_WORKLOAD (message in buf) when w is not valid. */
CT_API ct_status ct_workload_key(const ct_workload *w, char *buf, size_t size);

/* A workload from text into *out (valid): its canonical key
 * (ct_workload_key's form) or a JSON object, as the command line takes
 * them (`convtune tune KEY | '{JSON}'`): op, c, k, h, w (and d), kernel;
 * n, stride, pad, dilation, groups, layout, data_type, weight_type,
 * out_type and the epilogue's fields optional; an unknown field is
 * refused. A key that is not canonical is
 * refused with its canonical form in the message. CT_ERR_PARSE or
 * CT_ERR_INVALID_WORKLOAD (or CT_ERR_INVALID_ARG: NULL text or out), the
 * message into msg (msg_size bytes; NULL and 0 for none). */
CT_API ct_status ct_workload_parse(const char *text, ct_workload *out, char *msg, size_t msg_size);

/* The canonical JSON object of w (the form ct_workload_parse reads, as
 * `convtune workload --json` prints it, on one line) into buf. Fails with
 * CT_ERR_INVALID_WORKLOAD when w is not valid, CT_ERR_INVALID_ARG when buf
 * is NULL or too small (its size is then the message's), the message in
 * buf where it fits. */
CT_API ct_status ct_workload_json(const ct_workload *w, char *buf, size_t size);

/* The output tensor's dimensions in w's layout, outermost first, into dims
 * (room for 6); returns their number, or 0 when w is not valid. NCHW: N,
 * C, [D,] H, W; NCHW4c: N, ceil(C / 4), [D,] H, W, 4; NHWC: N, [D,] H, W,
 * C; C and the sizes those after depth_to_space. */
CT_API int ct_workload_out_dims(const ct_workload *w, int64_t dims[6]);

/* The operations of w: 2 (multiply and add) x N x K x output pixels x
 * C / groups x the kernel's volume, saturated at INT64_MAX; -1 when w is
 * not valid. */
CT_API int64_t ct_workload_ops(const ct_workload *w);

/* ---- Dispatch -------------------------------------------------------------
 * A context binds a database (read-only: the library never writes it) and a
 * GPU. The first call of a workload looks its kernel up (this device's best
 * record, else the same compute capability's, else the best config of the
 * nearest tuned workload that is valid for it, else a heuristic default),
 * loads the stored cubin (compiling with NVRTC only when none fits this
 * architecture), and caches it; later calls are a hash lookup and a launch.
 *
 * Tensors are device pointers. With layout CT_LAYOUT_NCHW, data and output
 * are plain NCHW / NCDHW and the library packs and unpacks them on the GPU
 * (stream-ordered scratch; channels that are not a multiple of 4 are
 * zero-padded); with CT_LAYOUT_NCHW4C they are packed NCHW4c / NCDHW4c and
 * used as they are. Their weights are packed (OIHW4o4i / OIDHW4o4i, C and
 * K padded to 4): pack them once with ct_pack_weights and keep them. With
 * CT_LAYOUT_NHWC, data, weights (OHWI / ODHWI) and output are used as they
 * are, and only the channels-last templates serve the workload: any C, K
 * and groups (C a multiple of 16 and K of 8 on sm_90's wgmma ones; the
 * others on the mma, grouped and depthwise ones, sm_80 and later). A
 * grouped workload (groups > 1) runs in the plain and packed layouts only
 * when C and K are multiples of 4.
 * Device pointers must be 16-byte aligned (cudaMalloc's are): the calls
 * refuse others with CT_ERR_INVALID_ARG.
 * Weights and params are read as constants: on sm_90 a channels-last
 * kernel is a programmatic dependent launch, which may fetch them (the
 * pointwise ones: read them) while the kernel before it on the stream
 * still runs. Write them before, with a copy or an event between, not
 * with a kernel just before the call on the same stream. Data, residual
 * and output are touched only once the kernel before has finished.
 */
struct CUstream_st; /* a cudaStream_t is a struct CUstream_st *; NULL: the default stream */
typedef struct ct_context ct_context;

/* Log levels, and the callback that receives the library's only output. */
typedef enum ct_log_level { CT_LOG_ERROR = 0, CT_LOG_INFO = 1, CT_LOG_DEBUG = 2 } ct_log_level;
typedef void (*ct_log_fn)(void *user, ct_log_level level, const char *msg);

/* Open a context on the database at db_path (NULL: no database, every
 * workload gets the heuristic default) and CUDA device `device` (made the
 * calling thread's current device). Compiles the layout kernels (about 0.1
 * s of NVRTC) and maps 64 MB of scratch for plain layouts, so that no later
 * call pays for either. As with sqlite3_open, *out is set
 * even on failure (unless out of memory): read ct_errmsg, then ct_close it.
 * Fails with CT_ERR_NOT_FOUND (no such database), CT_ERR_DB (not a
 * database, corrupt, or of a newer schema), CT_ERR_NO_DEVICE,
 * CT_ERR_INVALID_ARG. */
CT_API ct_status ct_open(const char *db_path, int device, ct_context **out);

/* A context without a GPU, for a named architecture ("sm_90"): ct_explain
 * tells what that architecture would run; ct_conv* return CT_ERR_NO_DEVICE.
 * Fails as ct_open does, and with CT_ERR_INVALID_ARG for an unknown
 * architecture (the message lists the known ones). */
CT_API ct_status ct_open_arch(const char *db_path, const char *arch, ct_context **out);

/* Release the context and every kernel it loaded; NULL is accepted. Work
 * enqueued through ctx must have finished (synchronise its streams first). */
CT_API void ct_close(ct_context *ctx);

/* The message of the calling thread's last error on ctx, "" when none.
 * Borrowed: valid until this thread's next failing call on ctx. One line of
 * printable text: a control byte it would quote (from a path, a model's
 * names) is written as \xHH. */
CT_API const char *ct_errmsg(const ct_context *ctx);

/* Install a log callback (NULL: none) receiving messages up to level. */
CT_API void ct_set_log(ct_context *ctx, ct_log_fn fn, void *user, ct_log_level level);

/* out = conv(data, weights) for a conv2d (ct_conv2d) or conv3d (ct_conv3d)
 * workload, enqueued on stream: ct_qconv* with no params and no residual
 * (a workload whose epilogue needs params is refused). A valid workload
 * never fails for lack of a tuned kernel. CT_ERR_INVALID_ARG / CT_ERR_INVALID_WORKLOAD for bad
 * input (nothing launched); CT_ERR_UNSUPPORTED where no template runs w in
 * its layout on this device (the message says why and, for a channels-last
 * layer the packed templates run, that layout: before sm_90, the dense
 * channels-last layers with C % 16 == 0 and K % 8 == 0, 1x1 ones aside);
 * CT_ERR_CUDA / CT_ERR_NVRTC for failures below.
 * The calls (ct_qconv* too) may be captured into a CUDA graph on stream
 * (cudaStreamBeginCapture, even in global mode), a workload's first call
 * included: its kernel is loaded, compiled if need be, when the call is
 * captured, and replays only launch; a plain layout's scratch becomes the
 * graph's memory nodes. A graph replays without the host's cost per call. */
CT_API ct_status ct_conv2d(ct_context *ctx, const ct_workload *w, const void *data,
                           const void *weights, void *out, struct CUstream_st *stream);
CT_API ct_status ct_conv3d(ct_context *ctx, const ct_workload *w, const void *data,
                           const void *weights, void *out, struct CUstream_st *stream);

/* ---- Quantized convolutions ---------------------------------------------
 * A workload with an epilogue (w->epi, or uint8 data, or 8-bit output)
 * runs through ct_qconv2d / ct_qconv3d with its parameters folded once into
 * a params block by ct_make_params: bias, zero points and multipliers
 * (float scales converted to fixed point once), clamp bounds. The engine
 * legalizes what its kernels do not take directly: the data zero point and
 * the weight zero points become a per-channel int32 offset (sum of weights
 * x zx, window size x zx x zw[k]) plus, with weight zero points, a window
 * sum of the data that the kernel accumulates beside the products; padding
 * reads the zero point. The result is exactly the formula of ct_epilogue.
 * Output and residual tensors are int8 / uint8 in the output's layout
 * (NCHW4c: 4 channels per 32-bit word); with depth_to_space the packed
 * output has ceil(C'/4) chunks of 4 channels, the lanes beyond C' zero. */

/* The values behind a workload's epilogue; host memory, read by
 * ct_make_params (and ct_reference_qconv) only. Fields that w does not use
 * are ignored. */
typedef struct ct_quant {
  int32_t data_zero_point;           /* epi.data_zero_point: int8 -128..127, uint8 0..255 */
  const int32_t *weight_zero_points; /* epi.weight_zero_point: K values, -128..127 */
  const int32_t *bias;               /* epi.bias: K values */
  const float *scale;     /* 8-bit output: 1 or (CT_SCALE_CHANNEL) K values s_data*s_weight/s_out */
  int32_t out_zero_point; /* 8-bit output, within its type */
  int32_t clamp_min;      /* 8-bit output: lo <= hi within the type; ReLU: lo = out_zero_point */
  int32_t clamp_max;
  float residual_scale;        /* epi.residual: s_residual / s_out */
  int32_t residual_zero_point; /* epi.residual, within the output type */
  /* epi.residual with CT_ROUND_ONNX: ONNX's two steps, the conv's own
   * QuantizeLinear into t, then QLinearAdd of t and the residual r:
   *   t = clamp(zt + rne(float(v) * scale[k]), mid_clamp_min, mid_clamp_max)
   *   y = clamp(rne(A * sA + B * sB + f), clamp_min, clamp_max)
   * evaluated as ONNX Runtime's x86 kernel does (fused multiply-adds, B
   * first), (A, B) = (t, r), or (r, t) with residual_first (the graph's
   * Add takes the residual as its first input); sA, sB the float ratios
   * s_A / s_y, s_B / s_y (mid_scale = s_t / s_y, residual_scale = s_r /
   * s_y) and f = float(zy) - (sA zA + sB zB). scale[k] then maps v to t.
   * mid_scale and residual_scale must be below 2^20: past about 2^21 the
   * sum can leave int32, where ONNX Runtime's x86 conversion gives the
   * type's minimum, which convtune does not copy (ct_make_params refuses). */
  int32_t mid_zero_point; /* zt, within the output type */
  int32_t mid_clamp_min;  /* t's clamp (a Relu before the Add), within the type */
  int32_t mid_clamp_max;
  float mid_scale;    /* s_t / s_out */
  int residual_first; /* 1: Add(r, t); 0: Add(t, r) */
  /* w->pre_c: the fused pointwise convolution's values, a ct_quant of its
   * own (its data zero point, weight zero points, bias, scales, output zero
   * point and clamp; no residual), and its weights, c x pre_c int8 (one row
   * of pre_c per channel of this convolution's input). Its output zero
   * point quantizes the intermediate tensor that this convolution reads with
   * its own data_zero_point (and pads with): in a quantized graph the two
   * are one value, and the result is the two convolutions' either way. */
  const struct ct_quant *pre;
  const int8_t *pre_weights;
} ct_quant;

/* The fixed-point form of a positive real multiplier, as TFLite's
 * QuantizeMultiplier: scale = multiplier * 2^(shift - 31), multiplier in
 * [2^30, 2^31), shift <= 30 (positive: a left shift); scales below 2^-32
 * become multiplier 0. CT_ERR_INVALID_ARG for a scale that is not finite,
 * not positive or at least 2^30. */
CT_API ct_status ct_quantize_multiplier(double scale, int32_t *multiplier, int *shift);

/* Bytes of w's params block (a few words per output channel; a
 * channels-last layer with a data zero point and padding also carries a
 * correction per border class and output channel, up to 1024 classes:
 * 9 for a 3x3 layer with padding 1); 0 when w is not valid. */
CT_API size_t ct_params_bytes(const ct_workload *w);

/* Fold q and w's weights (plain OIHW / OIDHW int8, host memory) into params
 * (host memory, ct_params_bytes(w)): copy it to the device once and pass it
 * to every ct_qconv* of w. CT_ERR_INVALID_ARG (message on ctx) for values
 * out of range; ctx may be a context of ct_open_arch. */
CT_API ct_status ct_make_params(ct_context *ctx, const ct_workload *w, const ct_quant *q,
                                const int8_t *weights, void *params);

/* out = the quantized convolution of w (ct_epilogue's formula) on stream.
 * params: device copy of ct_make_params' block (NULL only when w has no
 * epilogue values: int32 output without zero points or bias); residual:
 * device, w's output shape and type, when w->epi.residual, else NULL.
 * Errors as ct_conv2d. */
CT_API ct_status ct_qconv2d(ct_context *ctx, const ct_workload *w, const void *data,
                            const void *weights, const void *params, const void *residual,
                            void *out, struct CUstream_st *stream);
CT_API ct_status ct_qconv3d(ct_context *ctx, const ct_workload *w, const void *data,
                            const void *weights, const void *params, const void *residual,
                            void *out, struct CUstream_st *stream);

/* Bytes of w's output in its layout (int32: 4 per element, 8-bit: 1;
 * packed: channels rounded up to 4; depth_to_space: remapped shape); 0 when
 * w is not valid. */
CT_API size_t ct_out_bytes(const ct_workload *w);

/* Bytes of w's packed weights: round4(K) x round4(C/groups) x kernel
 * volume; 0 for layout nhwc, whose weights are used as they are, and for a
 * grouped workload that does not pack (C or K not a multiple of 4). */
CT_API size_t ct_packed_weights_bytes(const ct_workload *w);

/* Pack plain weights (OIHW / OIDHW int8, K x C/groups x kernel, device
 * memory) into packed (ct_packed_weights_bytes of device memory), on
 * stream. CT_ERR_INVALID_ARG for layout nhwc: there is nothing to pack;
 * CT_ERR_UNSUPPORTED for a grouped workload whose C or K is not a multiple
 * of 4 (run it channels-last). */
CT_API ct_status ct_pack_weights(ct_context *ctx, const ct_workload *w, const void *weights,
                                 void *packed, struct CUstream_st *stream);

/* Where a workload's kernel comes from. */
typedef enum ct_source {
  CT_SOURCE_EXACT = 0, /* a record of this workload on this device */
  CT_SOURCE_SAME_CC =
      1, /* a record of this workload on another device of this compute capability */
  CT_SOURCE_NEAREST = 2, /* the best config of the nearest tuned workload that is valid for it */
  CT_SOURCE_DEFAULT = 3, /* the heuristic default */
  CT_SOURCE_CHAIN = 4    /* a record of this workload on this device, chosen by its time in a
                            model's chain (tune --model): not always its fastest alone */
} ct_source;

typedef struct ct_explanation {
  ct_source source;
  char template_name[48];
  char config[1024];   /* the knob values, JSON */
  char tuned_key[256]; /* the workload of the record used ("" for the default) */
  char device[256];    /* the device the record was measured on ("" for the default) */
  double measured_us;  /* that record's median (0 for the default) */
  char reason[256];    /* one line: why this source */
} ct_explanation;

/* Which config w gets on this context's device, and why. */
CT_API ct_status ct_explain(ct_context *ctx, const ct_workload *w, ct_explanation *out);

/* The CPU reference: out = conv(data, weights) in w's layout (plain weights
 * OIHW for CT_LAYOUT_NCHW, packed for CT_LAYOUT_NCHW4C, OHWI for
 * CT_LAYOUT_NHWC), host memory, for a workload without epilogue values. For
 * checking results; cost N*K*C*kernel*output multiply-adds, split over up
 * to 32 threads (one an online CPU, joined before it returns) above 2^24 of
 * them. */
CT_API ct_status ct_reference_conv(const ct_workload *w, const int8_t *data, const int8_t *weights,
                                   int32_t *out);

/* The CPU reference of any workload, the formula of ct_epilogue computed
 * directly (not legalized): data (int8 or uint8), weights, residual (or
 * NULL) and out in w's layouts as ct_reference_conv, q as ct_make_params
 * (NULL when w has no epilogue values). errbuf (may be NULL) receives the
 * message of a failure. */
CT_API ct_status ct_reference_qconv(const ct_workload *w, const ct_quant *q, const void *data,
                                    const int8_t *weights, const void *residual, void *out,
                                    char *errbuf, size_t errbuf_size);

#ifdef __cplusplus
}
#endif
#endif
