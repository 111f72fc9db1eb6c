/*
 * quant.c: checking, converting and folding the values of a quantized
 * epilogue (see quant.h; the arithmetic and the params layout are in
 * core/quant.cuh, shared with the kernels).
 *
 * Folding (the legalization): the kernels accumulate raw data x weights
 * with padding, and the padded channels of a plain workload, reading the
 * data zero point zx; with weight zero points they also sum the raw data of
 * the window (xsum). Then, all modulo 2^32, over the R = round4(C) x kvol
 * taps of the packed window,
 *   sum (x - zx)(w - zw) = acc - zx sum(w) - zw xsum + R zx zw,
 * exactly, so off[k] = bias[k] - zx sum(w[k]) + R zx zw[k]. R counts the
 * packed window of a dense layer in the packed and plain layouts (the
 * channel-packed templates run them); a grouped layer's, and a
 * channels-last one's, count the real channels of k's group, C/G x kvol
 * (grouped packed kernels sum a lane's own group's channels; channels-last
 * is unpadded). Without weight zero points R is multiplied by zw = 0.
 *
 * CT_ROUND_ONNX: the multipliers are the float scales themselves (their
 * bits) and the header's onnx block (quant.cuh) holds what ONNX Runtime's
 * QuantizeLinear and QLinearAdd need, in the form the kernels use; its
 * fixed part f is computed in one place, onnx_fixed_part.
 */
#include "core/quant.h"
#include "core/zpad.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pack.h"
#include "core/quant.cuh"
#include "core/rng.h"

ct_status quant_multiplier(double scale, int32_t *multiplier, int *shift, ct_err *err) {
  if (!multiplier || !shift) return ERR_SET(err, CT_ERR_INVALID_ARG, "NULL multiplier or shift");
  if (!isfinite(scale) || scale <= 0 || scale >= 1073741824.0)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "scale %g: a multiplier must be finite, above 0 and below 2^30", scale);
  int e;
  double q = frexp(scale, &e); /* scale = q * 2^e, q in [0.5, 1) */
  int64_t m = llround(q * 2147483648.0);
  if (m == ((int64_t)1 << 31)) { /* q rounded up to 1 */
    m /= 2;
    e++;
  }
  if (e < -31) { /* below 2^-32: every int32 rescales to 0 (as TFLite) */
    m = 0;
    e = 0;
  }
  *multiplier = (int32_t)m;
  *shift = e;
  return CT_OK;
}

static int type_min(ct_dtype t) {
  return t == CT_DTYPE_UINT8 ? 0 : -128;
}

static int type_max(ct_dtype t) {
  return t == CT_DTYPE_UINT8 ? 255 : 127;
}

void quant_init(ct_quant *q, const ct_workload *w) {
  memset(q, 0, sizeof *q);
  q->clamp_min = w->out_type == CT_DTYPE_INT32 ? 0 : type_min(w->out_type);
  q->clamp_max = w->out_type == CT_DTYPE_INT32 ? 0 : type_max(w->out_type);
  q->residual_scale = 1.0f;
}

#define BAD(...) ERR_SET(err, CT_ERR_INVALID_ARG, __VA_ARGS__)

static ct_status check_range(const char *field, long v, ct_dtype t, ct_err *err) {
  if (v < type_min(t) || v > type_max(t))
    return BAD("%s is %ld; for %s it must be %d to %d", field, v, workload_dtype_name(t),
               type_min(t), type_max(t));
  return CT_OK;
}

/* The largest QLinearAdd ratio accepted (onnx rounding): with |A|, |B|,
 * |zA|, |zB|, |zy| <= 255 and sA, sB below 2^20, |acc| < 255 + 510 (sA +
 * sB) < 2^30 + 2^29 + 256, within int32: there ORT's x86 float -> int32
 * conversion, and so its result, is defined (beyond it cvtps2dq gives
 * INT32_MIN, which a saturating kernel would not). A ratio of scales near a
 * million is no real model's. */
#define ONNX_RATIO_MAX 1048576.0f

/* A QLinearAdd ratio that onnx rounding takes: finite, above 0 and below 2^20. */
static ct_status check_onnx_ratio(const char *field, float v, ct_err *err) {
  if (!isfinite(v) || v <= 0 || v >= ONNX_RATIO_MAX)
    return BAD("%s is %g; with onnx rounding it must be finite, above 0 and below 2^20 "
               "(1048576: QLinearAdd's sum stays within int32)",
               field, (double)v);
  return CT_OK;
}

/* The onnx rounding's values (w->epi.rounding == CT_ROUND_ONNX): scales
 * any positive finite float (the product is clamped before it is
 * converted); with a residual the conv's own quantization (mid_*) and the
 * QLinearAdd ratios. */
static ct_status check_onnx(const ct_workload *w, const ct_quant *q, ct_err *err) {
  ct_status st;
  int n_scales = w->epi.scale == CT_SCALE_CHANNEL ? w->k : 1;
  for (int k = 0; k < n_scales; k++)
    if (!isfinite(q->scale[k]) || q->scale[k] <= 0)
      return BAD("scale[%d] is %g; with onnx rounding it must be finite and above 0", k,
                 (double)q->scale[k]);
  if (!w->epi.residual) return CT_OK;
  if ((st = check_onnx_ratio("residual_scale", q->residual_scale, err)) ||
      (st = check_onnx_ratio("mid_scale", q->mid_scale, err)) ||
      (st = check_range("residual_zero_point", q->residual_zero_point, w->out_type, err)) ||
      (st = check_range("mid_zero_point", q->mid_zero_point, w->out_type, err)) ||
      (st = check_range("mid_clamp_min", q->mid_clamp_min, w->out_type, err)) ||
      (st = check_range("mid_clamp_max", q->mid_clamp_max, w->out_type, err)))
    return st;
  if (q->mid_clamp_min > q->mid_clamp_max)
    return BAD("mid_clamp_min (%d) is above mid_clamp_max (%d)", q->mid_clamp_min,
               q->mid_clamp_max);
  if (q->residual_first != 0 && q->residual_first != 1)
    return BAD("residual_first is %d; it must be 0 (Add(conv, residual)) or 1 (Add(residual, "
               "conv))",
               q->residual_first);
  return CT_OK;
}

static ct_status check_one(const ct_workload *w, const ct_quant *q, ct_err *err);

ct_status quant_check(const ct_workload *w, const ct_quant *q, ct_err *err) {
  if (w->pre_c <= 0) return check_one(w, q, err);
  if (!q)
    return BAD("the workload's fused pointwise convolution needs values: the quantization "
               "parameters are NULL");
  ct_workload m, pre;
  workload_main(w, &m);
  workload_pre(w, &pre);
  ct_status st = check_one(&m, q, err);
  if (st) return st;
  if (!q->pre)
    return BAD("pre is NULL; the fused pointwise convolution (pre_c %d) needs its own values",
               w->pre_c);
  if (!q->pre_weights)
    return BAD("pre_weights is NULL; the fused pointwise convolution needs %d x %d weights", w->c,
               w->pre_c);
  if ((st = check_one(&pre, q->pre, err))) err_prefix(err, "pre");
  return st;
}

static ct_status check_one(const ct_workload *w, const ct_quant *q, ct_err *err) {
  if (!workload_has_params(w)) return CT_OK;
  if (!q)
    return BAD("the workload's epilogue needs values (zero points, bias or scales): the "
               "quantization parameters are NULL");
  const ct_epilogue *e = &w->epi;
  ct_status st;
  if (e->data_zero_point &&
      (st = check_range("data_zero_point", q->data_zero_point, w->data_type, err)))
    return st;
  if (e->weight_zero_point) {
    if (!q->weight_zero_points) return BAD("weight_zero_points is NULL; it needs %d values", w->k);
    for (int k = 0; k < w->k; k++)
      if (q->weight_zero_points[k] < -128 || q->weight_zero_points[k] > 127)
        return BAD("weight_zero_points[%d] is %d; int8 weights take -128 to 127", k,
                   q->weight_zero_points[k]);
  }
  if (e->bias && !q->bias) return BAD("bias is NULL; it needs %d values", w->k);
  if (w->out_type == CT_DTYPE_INT32) return CT_OK;
  if (!q->scale)
    return BAD("scale is NULL; it needs %d value%s", e->scale == CT_SCALE_CHANNEL ? w->k : 1,
               e->scale == CT_SCALE_CHANNEL && w->k > 1 ? "s" : "");
  if ((st = check_range("out_zero_point", q->out_zero_point, w->out_type, err)) ||
      (st = check_range("clamp_min", q->clamp_min, w->out_type, err)) ||
      (st = check_range("clamp_max", q->clamp_max, w->out_type, err)))
    return st;
  if (q->clamp_min > q->clamp_max)
    return BAD("clamp_min (%d) is above clamp_max (%d)", q->clamp_min, q->clamp_max);
  if (e->rounding == CT_ROUND_ONNX) return check_onnx(w, q, err);
  int n_scales = e->scale == CT_SCALE_CHANNEL ? w->k : 1;
  for (int k = 0; k < n_scales; k++) {
    int32_t m;
    int sh;
    if ((st = quant_multiplier(q->scale[k], &m, &sh, err))) {
      err_prefix(err, "scale[%d]", k);
      return st;
    }
  }
  if (e->residual) {
    int32_t m;
    int sh;
    if ((st = quant_multiplier(q->residual_scale, &m, &sh, err))) {
      err_prefix(err, "residual_scale");
      return st;
    }
    if ((st = check_range("residual_zero_point", q->residual_zero_point, w->out_type, err)))
      return st;
  }
  return CT_OK;
}

/* The border axes of w (D, H, W: geom3's order). */
static void zpad_axes(const ct_workload *w, ctz_axis ax[3]) {
  geom3 g;
  workload_geom(w, &g);
  for (int d = 0; d < 3; d++)
    ax[d] = ctz_axis_make((int)g.in[d], (int)g.out[d], (int)g.ker[d], (int)g.str[d],
                          (int)g.dil[d], (int)g.pb[d]);
}

long quant_zpad_classes(const ct_workload *w) {
  if (w->layout != CT_LAYOUT_NHWC || w->groups != 1 || !w->epi.data_zero_point) return 0;
  geom3 g;
  workload_geom(w, &g);
  int pad = 0;
  for (int d = 0; d < 3; d++) pad |= g.pb[d] != 0 || g.pa[d] != 0;
  if (!pad) return 0;
  ctz_axis ax[3];
  zpad_axes(w, ax);
  /* each factor is at most an axis's outputs (workload_validate bounds them) */
  const long n = (long)ax[0].n * ax[1].n * ax[2].n;
  return n <= CTZ_MAX_CLASSES ? n : 0;
}

static size_t params_words_one(const ct_workload *w) {
  return CTQ_HEADER + (CTQ_ARRAYS + (size_t)quant_zpad_classes(w)) * (size_t)pack_round4(w->k);
}

size_t quant_pre_offset(const ct_workload *w) {
  ct_workload m;
  workload_main(w, &m);
  return params_words_one(&m);
}

size_t quant_pre_weights_offset(const ct_workload *w) {
  ct_workload pre;
  workload_pre(w, &pre);
  return quant_pre_offset(w) + params_words_one(&pre);
}

size_t quant_pre_row_bytes(const ct_workload *w) {
  return ((size_t)w->pre_c + QUANT_PRE_ROW_ALIGN - 1) / QUANT_PRE_ROW_ALIGN * QUANT_PRE_ROW_ALIGN;
}

size_t quant_params_words(const ct_workload *w) {
  if (w->pre_c <= 0) return params_words_one(w);
  return quant_pre_weights_offset(w) + (size_t)w->c * quant_pre_row_bytes(w) / 4;
}

ct_status quant_zpad_fill(const ct_workload *w, const ct_quant *q, const int8_t *weights,
                          int32_t *params, ct_err *err) {
  const long n_cls = quant_zpad_classes(w);
  if (!n_cls) return CT_OK;
  geom3 g;
  workload_geom(w, &g);
  ctz_axis ax[3];
  zpad_axes(w, ax);
  const int64_t kp = pack_round4(w->k), taps = g.ker[0] * g.ker[1] * g.ker[2];
  /* each channel's sum per tap: OHWI holds [k][tap][c] */
  uint32_t *ts = malloc((size_t)(g.k * taps) * sizeof *ts);
  if (!ts) return ERR_SET(err, CT_ERR_NO_MEMORY, "quant_zpad_fill: no memory for %lld sums",
                          (long long)(g.k * taps));
  for (int64_t i = 0; i < g.k * taps; i++) {
    uint32_t s = 0;
    for (int64_t c = 0; c < g.c; c++) s += (uint32_t)weights[i * g.c + c];
    ts[i] = s;
  }
  const uint32_t zx = (uint32_t)q->data_zero_point;
  int32_t *corr = params + CTQ_HEADER + CTQ_ARRAYS * kp;
  for (long cls = 0; cls < n_cls; cls++) {
    /* a pixel of the class, and which of its taps fall outside the input */
    const int c3[3] = {(int)(cls / (ax[1].n * ax[2].n)), (int)(cls / ax[2].n % ax[1].n),
                       (int)(cls % ax[2].n)};
    int o[3];
    for (int d = 0; d < 3; d++) o[d] = ctz_axis_position(ax[d], (int)g.out[d], c3[d]);
    for (int64_t k = 0; k < g.k; k++) corr[cls * kp + k] = 0;
    for (int64_t t = 0; t < taps; t++) {
      const int64_t r[3] = {t / (g.ker[1] * g.ker[2]), t / g.ker[2] % g.ker[1], t % g.ker[2]};
      int outside = 0;
      for (int d = 0; d < 3; d++) {
        const int64_t i = o[d] * g.str[d] - g.pb[d] + r[d] * g.dil[d];
        outside |= i < 0 || i >= g.in[d];
      }
      if (!outside) continue;
      for (int64_t k = 0; k < g.k; k++)
        corr[cls * kp + k] = (int32_t)((uint32_t)corr[cls * kp + k] + zx * ts[k * taps + t]);
    }
  }
  free(ts);
  return CT_OK;
}

void quant_weight_sums(const ct_workload *w, const int8_t *weights, int32_t *sums) {
  geom3 g;
  workload_geom(w, &g);
  int64_t kvol = g.ker[0] * g.ker[1] * g.ker[2], cpg = workload_cpg(w);
  int64_t c4 = pack_round4(cpg) / 4;
  for (int64_t k = 0; k < g.k; k++) {
    uint32_t s = 0;
    if (w->layout != CT_LAYOUT_NCHW4C) {
      /* OIHW [k][c][tap] and OHWI [k][tap][c] both hold channel k's C/G x
       * kvol weights contiguously: the order within does not change the sum */
      for (int64_t i = 0; i < cpg * kvol; i++) s += (uint32_t)weights[k * cpg * kvol + i];
    } else { /* [k/4][c/4][kvol][4o][4i] */
      for (int64_t cb = 0; cb < c4; cb++)
        for (int64_t t = 0; t < kvol; t++)
          for (int l = 0; l < 4; l++)
            s += (uint32_t)weights[(((k / 4) * c4 + cb) * kvol + t) * 16 + (k % 4) * 4 + l];
    }
    sums[k] = (int32_t)s;
  }
}

/* The multiplier of channel k (the per-tensor one for every k); with onnx
 * rounding the float scale's bits and shift 0. */
static void channel_multiplier(const ct_workload *w, const ct_quant *q, int k, int32_t *m,
                               int *sh) {
  *m = 0;
  *sh = 0;
  if (w->out_type == CT_DTYPE_INT32) return;
  const float scale = q->scale[w->epi.scale == CT_SCALE_CHANNEL ? k : 0];
  if (w->epi.rounding == CT_ROUND_ONNX)
    *m = ctq_float_bits(scale);
  else
    (void)quant_multiplier(scale, m, sh, NULL);
}

/* QLinearAdd's fixed part f = float(zy) - (sA zA + sB zB), in float32 as
 * ONNX Runtime's x86 build computes it once per call: MLAS's qladd writes
 * the plain expression, and GCC contracted it into fmaf(sA, zA, sB zB), the
 * A product the fused one (found by the oracle: of the four orders only
 * this one matched ORT on 60 parameter sets chosen to tell them apart,
 * every (A, B) pair each). -std=c11 keeps GCC from contracting anything
 * here, so the fmaf is the only fused operation. */
static float onnx_fixed_part(float sa, int32_t za, float sb, int32_t zb, int32_t zy) {
  const float pb = sb * (float)zb;
  return (float)zy - fmaf(sa, (float)za, pb);
}

/* The seeded forms' flags (quant.cuh's ctq_requant_onnx_seeded) for w and
 * q (onnx rounding, no residual): CTQO_SEED where every channel k's
 * corrected sum stays within 2^22 - 256 of zero, and CTQO_HISAT besides
 * where the clamp's top is the output type's and each sum times its scale
 * stays there too. Bounded from what any input can give, the weights
 * unseen (the raw form has none): |bias[k]| + R x 255 x 128 (255 x 255
 * with weight zero points), R the reduction's length, each data value less
 * its zero point within 255. Loose, as it must be without the weights:
 * MobileNetV2's expansions and depthwise convs pass (R 9 to 96), its
 * projections (R 144 and up) do not. */
static int32_t onnx_seed_flags(const ct_workload *w, const ct_quant *q) {
  geom3 g;
  workload_geom(w, &g);
  const double r = (double)workload_cpg(w) * (double)(g.ker[0] * g.ker[1] * g.ker[2]);
  const double dot = r * 255.0 * (w->epi.weight_zero_point ? 255.0 : 128.0);
  const double lim = 4194304.0 - 256.0;
  int hisat = q->clamp_max == (w->out_type == CT_DTYPE_UINT8 ? 255 : 127);
  for (int k = 0; k < w->k; k++) {
    const double acc = (w->epi.bias ? fabs((double)q->bias[k]) : 0.0) + dot;
    const double scale = q->scale[w->epi.scale == CT_SCALE_CHANNEL ? k : 0];
    if (!(acc < lim)) return 0;
    hisat = hisat && acc * scale < lim;
  }
  return CTQO_SEED | (hisat ? CTQO_HISAT : 0);
}

void quant_onnx_block(const ct_workload *w, const ct_quant *q, int32_t *block) {
  memset(block, 0, CTQO_WORDS * sizeof *block);
  if (w->out_type == CT_DTYPE_INT32 || w->epi.rounding != CT_ROUND_ONNX) return;
  if (!w->epi.residual) { /* QuantizeLinear into the output itself */
    block[CTQO_QZ] = q->out_zero_point;
    block[CTQO_QLO] = ctq_float_bits((float)(q->clamp_min - q->out_zero_point));
    block[CTQO_QHI] = ctq_float_bits((float)(q->clamp_max - q->out_zero_point));
    block[CTQO_FIRST] = onnx_seed_flags(w, q);
    return;
  }
  /* into t, then Add(A, B): A the graph's first input */
  block[CTQO_QZ] = q->mid_zero_point;
  block[CTQO_QLO] = ctq_float_bits((float)(q->mid_clamp_min - q->mid_zero_point));
  block[CTQO_QHI] = ctq_float_bits((float)(q->mid_clamp_max - q->mid_zero_point));
  const int first = q->residual_first;
  const float sa = first ? q->residual_scale : q->mid_scale;
  const float sb = first ? q->mid_scale : q->residual_scale;
  const int32_t za = first ? q->residual_zero_point : q->mid_zero_point;
  const int32_t zb = first ? q->mid_zero_point : q->residual_zero_point;
  block[CTQO_SA] = ctq_float_bits(sa);
  block[CTQO_SB] = ctq_float_bits(sb);
  block[CTQO_FIX] = ctq_float_bits(onnx_fixed_part(sa, za, sb, zb, q->out_zero_point));
  block[CTQO_FIRST] = first;
}

/* One conv's block (q checked by the caller). */
static void params_one(const ct_workload *w, const ct_quant *q, const int32_t *weight_sums,
                       int32_t *params);

ct_status quant_params(const ct_workload *w, const ct_quant *q, const int32_t *weight_sums,
                       int32_t *params, ct_err *err) {
  ct_status st = quant_check(w, q, err); /* both convs' values, with pre_c */
  if (st) return st;
  if (w->pre_c <= 0) {
    params_one(w, q, weight_sums, params);
    return CT_OK;
  }
  ct_workload m, pre;
  workload_main(w, &m);
  workload_pre(w, &pre);
  memset(params, 0, quant_params_words(w) * sizeof *params);
  int32_t *sums = malloc((size_t)w->c * sizeof *sums);
  if (!sums) return ERR_SET(err, CT_ERR_NO_MEMORY, "quant_params: no memory for %d sums", w->c);
  quant_weight_sums(&pre, q->pre_weights, sums); /* OHWI of a 1x1: [c][pre_c] */
  params_one(&m, q, weight_sums, params);
  params_one(&pre, q->pre, sums, params + quant_pre_offset(w));
  free(sums);
  /* the weights, a row of pre_c bytes per channel padded with zeros */
  uint8_t *rows = (uint8_t *)(params + quant_pre_weights_offset(w));
  size_t row = quant_pre_row_bytes(w);
  for (int k = 0; k < w->c; k++)
    memcpy(rows + (size_t)k * row, q->pre_weights + (size_t)k * (size_t)w->pre_c, (size_t)w->pre_c);
  return CT_OK;
}

static void params_one(const ct_workload *w, const ct_quant *q, const int32_t *weight_sums,
                       int32_t *params) {
  ct_quant none;
  if (!q) {
    quant_init(&none, w);
    q = &none;
  }
  const ct_epilogue *e = &w->epi;
  int64_t kp = pack_round4(w->k);
  memset(params, 0, params_words_one(w) * sizeof *params);
  geom3 g;
  workload_geom(w, &g);
  uint32_t zx = e->data_zero_point ? (uint32_t)q->data_zero_point : 0;
  /* R: the packed window of a dense layer in the packed or plain layout;
   * otherwise the real channels (a grouped layer's packed kernels sum a
   * lane's own group only, and channels-last is unpadded) */
  int64_t rc = w->groups > 1 || w->layout == CT_LAYOUT_NHWC ? workload_cpg(w) : pack_round4(g.c);
  uint32_t r = (uint32_t)(rc * g.ker[0] * g.ker[1] * g.ker[2]);
  params[CTQ_PAD_WORD] = (int32_t)((zx & 0xffu) * 0x01010101u);
  if (w->out_type != CT_DTYPE_INT32) {
    params[CTQ_OUT_ZP] = q->out_zero_point;
    params[CTQ_LO] = q->clamp_min;
    params[CTQ_HI] = q->clamp_max;
    channel_multiplier(w, q, 0, &params[CTQ_MULT], &params[CTQ_SHIFT]);
    if (e->rounding == CT_ROUND_ONNX) {
      quant_onnx_block(w, q, params + CTQ_ONNX); /* over the shift and the residual's words */
    } else if (e->residual) {
      (void)quant_multiplier(q->residual_scale, &params[CTQ_RES_MULT], &params[CTQ_RES_SHIFT],
                             NULL);
      params[CTQ_RES_ZP] = q->residual_zero_point;
    }
  }
  int32_t *arr = params + CTQ_HEADER;
  for (int k = 0; k < w->k; k++) {
    uint32_t zw = e->weight_zero_point ? (uint32_t)q->weight_zero_points[k] : 0;
    uint32_t off = e->bias ? (uint32_t)q->bias[k] : 0;
    off += -zx * (uint32_t)weight_sums[k] + r * zx * zw;
    arr[CTQ_OFF * kp + k] = (int32_t)off;
    channel_multiplier(w, q, k, &arr[CTQ_MULTS * kp + k], &arr[CTQ_SHIFTS * kp + k]);
    arr[CTQ_ZW * kp + k] = (int32_t)zw;
  }
}

size_t quant_raw_words(const ct_workload *w) {
  return QRAW_HEADER + 4 * (size_t)w->k;
}

ct_status quant_raw(const ct_workload *w_, const ct_quant *q, int32_t *raw, ct_err *err) {
  ct_status st = quant_check(w_, q, err);
  if (st) return st;
  ct_workload m; /* the fused pointwise convolution's raw form is its own */
  workload_main(w_, &m);
  const ct_workload *w = &m;
  ct_quant none;
  if (!q) {
    quant_init(&none, w);
    q = &none;
  }
  const ct_epilogue *e = &w->epi;
  memset(raw, 0, quant_raw_words(w) * sizeof *raw);
  raw[0] = e->data_zero_point ? q->data_zero_point : 0;
  if (w->out_type != CT_DTYPE_INT32) {
    raw[1] = q->out_zero_point;
    raw[2] = q->clamp_min;
    raw[3] = q->clamp_max;
    if (e->rounding == CT_ROUND_ONNX) {
      raw[QRAW_FLAGS] = QRAW_ONNX_FLAG;
      quant_onnx_block(w, q, raw + QRAW_ONNX);
    } else if (e->residual) {
      (void)quant_multiplier(q->residual_scale, &raw[4], &raw[5], NULL);
      raw[6] = q->residual_zero_point;
    }
  }
  int32_t *bias = raw + QRAW_HEADER, *zw = bias + w->k, *mult = zw + w->k, *shift = mult + w->k;
  for (int k = 0; k < w->k; k++) {
    bias[k] = e->bias ? q->bias[k] : 0;
    zw[k] = e->weight_zero_point ? q->weight_zero_points[k] : 0;
    channel_multiplier(w, q, k, &mult[k], &shift[k]);
  }
  return CT_OK;
}

void quant_store_free(quant_store *s) {
  if (!s) return;
  free(s->zw);
  free(s->bias);
  free(s->scale);
  if (s->pre) quant_store_free(s->pre);
  free(s->pre);
  free(s->pre_weights);
  memset(s, 0, sizeof *s);
}

static int table_slot(const quant_table *t, const char *key) {
  for (int i = 0; t && i < t->n; i++)
    if (strcmp(t->e[i].key, key) == 0) return i;
  return -1;
}

ct_status quant_table_add(quant_table *t, const ct_workload *w, const ct_quant *q, int *added,
                          ct_err *err) {
  if (added) *added = 0;
  if (!t || !w || !q) return ERR_SET(err, CT_ERR_INVALID_ARG, "quant_table_add: NULL argument");
  ct_status st = quant_check(w, q, err);
  if (st) return st;
  ct_workload packed;
  workload_packed(w, &packed);
  char keys[2][CT_KEY_MAX];
  workload_key(w, keys[0], sizeof keys[0]);
  workload_key(&packed, keys[1], sizeof keys[1]);
  int fresh[2] = {table_slot(t, keys[0]) < 0, 0};
  fresh[1] = w->layout == CT_LAYOUT_NCHW && packed.k == w->k && strcmp(keys[0], keys[1]) != 0 &&
             table_slot(t, keys[1]) < 0;
  int need = t->n + fresh[0] + fresh[1];
  if (need > t->cap) {
    int cap = t->cap ? t->cap : 16;
    while (cap < need) cap *= 2;
    quant_entry *e = realloc(t->e, (size_t)cap * sizeof *e);
    if (!e) return ERR_SET(err, CT_ERR_NO_MEMORY, "quant_table_add: no memory for %d entries", cap);
    t->e = e;
    t->cap = cap;
  }
  for (int i = 0; i < 2; i++)
    if (fresh[i]) {
      memcpy(t->e[t->n].key, keys[i], sizeof keys[i]);
      t->e[t->n++].q = q;
    }
  if (added) *added = fresh[0];
  return CT_OK;
}

const ct_quant *quant_table_find(const quant_table *t, const ct_workload *w) {
  if (!t || !w || t->n == 0) return NULL;
  char key[CT_KEY_MAX];
  int i = table_slot(t, workload_key(w, key, sizeof key));
  return i < 0 ? NULL : t->e[i].q;
}

void quant_table_free(quant_table *t) {
  if (!t) return;
  free(t->e);
  memset(t, 0, sizeof *t);
}

/* Uniform in [lo, hi]. */
static int32_t uniform(rng *r, int32_t lo, int32_t hi) {
  return lo + (int32_t)(rng_next(r) % (uint64_t)((int64_t)hi - lo + 1));
}

/* quant_random's onnx part, drawn after the rest (so that the gemmlowp
 * values of a seed stay what they were): about half the channels' scales
 * rounded to a power of two, so that float(v) * scale lands on exact ties
 * (x.5) often and rounding half to even is exercised; with a residual the
 * conv's own quantization t (zero point, a Relu half of the time, its
 * ratio) and the order of the Add. */
static void onnx_random(const ct_workload *w, rng *r, quant_store *s) {
  ct_quant *q = &s->q;
  int n_scales = w->epi.scale == CT_SCALE_CHANNEL ? w->k : 1;
  for (int i = 0; i < n_scales; i++)
    if (rng_next(r) % 2) {
      int e;
      (void)frexpf(s->scale[i], &e); /* scale in [2^(e-1), 2^e): exact, no libm rounding */
      s->scale[i] = ldexpf(1.0f, e - 1);
    }
  if (!w->epi.residual) return;
  int lo = type_min(w->out_type), hi = type_max(w->out_type);
  q->mid_zero_point = uniform(r, lo + (hi - lo) / 4, hi - (hi - lo) / 4);
  q->mid_clamp_min = lo;
  q->mid_clamp_max = hi;
  if (rng_next(r) % 2) q->mid_clamp_min = q->mid_zero_point;
  q->mid_scale = (float)(0.25 + (double)(rng_next(r) % 1000) / 1000.0);
  q->residual_first = (int)(rng_next(r) % 2);
}

/* What a conv's random values assume of its input: uniform bytes (its
 * mean the type's middle, spread ~74), or, for the conv after a fused
 * pointwise one, the intermediate: values about that conv's output zero
 * point, some 40 steps either side (a Relu clamps half of them to it).
 * A channel's bias cancels its accumulator's expected mean (the zero
 * points' cross term) and adds at most one spread of the accumulator, so
 * that its outputs spread over the range as a real layer's do; about one
 * channel in 8 takes a bias anywhere in +-bias_max instead, for the
 * range's sake (such a channel's outputs barely move: its scale is set by
 * the bias). */
typedef struct input_model {
  int uniform;      /* 1: uniform bytes; mean and spread below unused */
  double mean, sd;  /* the input's mean and spread */
  int32_t bias_max; /* the large biases within +-bias_max */
} input_model;
static const input_model uniform_bytes = {1, 0, 74.0, 1 << 20};

static ct_status random_one(const ct_workload *w, uint64_t seed, const input_model *in,
                            quant_store *s, ct_err *err);

ct_status quant_random(const ct_workload *w, uint64_t seed, quant_store *s, ct_err *err) {
  if (w->pre_c <= 0) return random_one(w, seed, &uniform_bytes, s, err);
  ct_workload m, pre;
  workload_main(w, &m);
  workload_pre(w, &pre);
  size_t nw = (size_t)w->c * (size_t)w->pre_c;
  quant_store *ps = calloc(1, sizeof *ps);
  int8_t *pw = malloc(nw);
  if (!ps || !pw) {
    free(ps), free(pw);
    memset(s, 0, sizeof *s);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "quant_random: no memory for %zu weights", nw);
  }
  /* the fused pointwise convolution's values and weights first, a stream
   * of their own: the main conv's scales follow from its output zero point */
  ct_status st = random_one(&pre, seed ^ 0x5bd1e995u, &uniform_bytes, ps, err);
  const input_model mid = {0, ps->q.out_zero_point, 40.0, 1 << 12};
  if (!st) st = random_one(&m, seed, &mid, s, err);
  if (st) {
    quant_store_free(ps);
    free(ps), free(pw);
    return st;
  }
  rng r;
  rng_seed(&r, seed ^ 0x27d4eb2f165667c5ull);
  for (size_t i = 0; i < nw; i++) pw[i] = (int8_t)(uint8_t)rng_next(&r);
  s->pre = ps;
  s->pre_weights = pw;
  s->q.pre = &ps->q;
  s->q.pre_weights = pw;
  return CT_OK;
}

static ct_status random_one(const ct_workload *w, uint64_t seed, const input_model *in,
                            quant_store *s, ct_err *err) {
  memset(s, 0, sizeof *s);
  quant_init(&s->q, w);
  rng r;
  rng_seed(&r, seed ^ 0x9e3779b97f4a7c15ull);
  size_t k = (size_t)w->k;
  s->zw = calloc(k, sizeof *s->zw);
  s->bias = calloc(k, sizeof *s->bias);
  s->scale = calloc(k, sizeof *s->scale);
  if (!s->zw || !s->bias || !s->scale) {
    quant_store_free(s);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "quant_random: no memory for %zu channels", k);
  }
  const ct_epilogue *e = &w->epi;
  ct_quant *q = &s->q;
  int32_t zx = e->data_zero_point ? uniform(&r, type_min(w->data_type), type_max(w->data_type)) : 0;
  q->data_zero_point = zx;
  /* x - zx has mean mx and spread in->sd (uniform bytes: ~74), w - zw[k]
   * mean -0.5 - zw[k] and spread ~74: a channel's accumulator has mean
   * taps mx mw (before the bias) and spread sd_acc */
  geom3 g;
  workload_geom(w, &g);
  double taps = (double)workload_cpg(w) * g.ker[0] * g.ker[1] * g.ker[2];
  double mx = (in->uniform ? (w->data_type == CT_DTYPE_UINT8 ? 127.5 : -0.5) : in->mean) - zx;
  double sd_acc = sqrt(taps) * in->sd * 74.0;
  int32_t spread = sd_acc < (double)in->bias_max ? (int32_t)sd_acc : in->bias_max;
  for (size_t i = 0; i < k; i++) {
    s->zw[i] = e->weight_zero_point ? uniform(&r, -128, 127) : 0;
    if (!e->bias) continue;
    if (rng_next(&r) % 8 == 0) {
      s->bias[i] = uniform(&r, -in->bias_max, in->bias_max);
    } else {
      /* within int32 whatever the layer's size (spread < 2^30) */
      double centre = -taps * mx * (-0.5 - s->zw[i]), lim = (double)INT32_MAX - spread;
      centre = centre > lim ? lim : centre < -lim ? -lim : centre;
      s->bias[i] = (int32_t)llround(centre) + uniform(&r, -spread, spread);
    }
  }
  q->weight_zero_points = e->weight_zero_point ? s->zw : NULL;
  q->bias = e->bias ? s->bias : NULL;
  if (w->out_type == CT_DTYPE_INT32) return CT_OK;

  /* Scale each channel so that |mean| + 3 sd of its accumulator maps to
   * about 100 output steps: outputs spread over the range, some clamped,
   * few all-clamped channels. */
  double worst = 0;
  for (size_t i = 0; i < k; i++) {
    double mw = -0.5 - s->zw[i];
    double mag = fabs(taps * mx * mw + (double)s->bias[i]) + 3.0 * sd_acc;
    s->scale[i] = (float)(100.0 / mag * (0.75 + 0.5 * (double)(rng_next(&r) % 1000) / 1000.0));
    if (mag > worst) worst = mag;
  }
  if (e->scale == CT_SCALE_TENSOR) s->scale[0] = (float)(100.0 / worst);
  q->scale = s->scale;
  int lo = type_min(w->out_type), hi = type_max(w->out_type);
  q->out_zero_point = uniform(&r, lo + (hi - lo) / 4, hi - (hi - lo) / 4);
  if (rng_next(&r) % 2) { /* ReLU, sometimes ReLU6-like (its top at least 32 steps up) */
    q->clamp_min = q->out_zero_point;
    q->clamp_max = rng_next(&r) % 2 ? hi : uniform(&r, (q->clamp_min + hi + 1) / 2, hi);
  }
  if (e->residual) {
    q->residual_scale = (float)(0.25 + (double)(rng_next(&r) % 1000) / 1000.0);
    q->residual_zero_point = uniform(&r, lo, hi);
  }
  if (e->rounding == CT_ROUND_ONNX) onnx_random(w, &r, s);
  return CT_OK;
}
