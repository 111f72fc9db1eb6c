/*
 * reference.c: the CPU reference convolution (int8 x int8 -> int32).
 *
 * One loop nest on the normalised 3D geometry serves conv2d and conv3d. The
 * output is zeroed, then each weight (n, k, c, kd, kh, kw) is multiplied into
 * every output row it touches; the valid output ranges ([ow_lo, ow_hi) and
 * the like) are computed once per kernel tap, so the innermost loop has no
 * bounds test and vectorises at stride 1. Sums wrap modulo 2^32 like the
 * GPU's dp4a (uint32 arithmetic: no undefined behaviour however large C x
 * kernel volume is). Index math is int64. reference_qconv computes the
 * quantized formula as written: inputs become (x - zx) and (w - zw[k]) in
 * int16, then the epilogue (core/quant.cuh's arithmetic, the one the
 * kernels use: gemmlowp's fixed point, or with onnx rounding ONNX Runtime's
 * float32 form) and the depth_to_space remap, element by element. Cost: N*K*C*kvol*OD*OH*OW
 * multiply-adds: a ResNet-50 3x3 layer at batch 1 takes about 0.04 s at -O2,
 * 0.3 s at -O0. The packed and channels-last layouts add one scratch
 * allocation (plain copies of all three tensors) and a pass over each: they
 * are converted to plain, computed plain, and the output converted back, so
 * every layout shares the one loop nest and its results exactly. The conv
 * and the epilogue are split by output plane (image, channel) over up to
 * 32 threads, one a CPU, where their work passes 2^24 operations: the same
 * results, bit for bit, whatever the split.
 */
#include "core/reference.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pack.h"
#include "core/quant.cuh"
#include "core/quant.h"

/* Work (multiply-adds) from which reference_conv_plain splits its planes
 * over threads (about 10 ms of one core below it), and the most threads. */
#define REF_THREAD_MACS (1LL << 24)
#define REF_MAX_THREADS 32

/* o[i] += w * x[i]: the stride-1 inner loop. restrict because int8_t may
 * alias anything, which would keep the compiler from vectorising; blocks of a
 * fixed 16 because GCC's -O2 cost model (RelWithDebInfo) vectorises only
 * loops whose trip count is known (about 3x faster than the scalar loop). */
static void madd_row(uint32_t *restrict o, const int16_t *restrict x, int32_t w, int64_t len) {
  int64_t i = 0;
  for (; i + 16 <= len; i += 16)
    for (int j = 0; j < 16; j++) o[i + j] += (uint32_t)(w * x[i + j]);
  for (; i < len; i++) o[i] += (uint32_t)(w * x[i]);
}

/* o[i] += w * x[i * stride]. */
static void madd_row_strided(uint32_t *restrict o, const int16_t *restrict x, int64_t stride,
                             int32_t w, int64_t len) {
  for (int64_t i = 0; i < len; i++) o[i] += (uint32_t)(w * x[i * stride]);
}

/* The outputs o in [*lo, *hi) whose input coordinate o * str + off lies in
 * [0, in); an empty range has *lo >= *hi. */
static void valid_range(int64_t in, int64_t out, int64_t str, int64_t off, int64_t *lo,
                        int64_t *hi) {
  *lo = off >= 0 ? 0 : (-off + str - 1) / str;
  *hi = in - 1 - off < 0 ? 0 : (in - 1 - off) / str + 1;
  if (*hi > out) *hi = out;
}

/* One output plane: image n, output channel k (every input channel of its
 * group, every tap). */
static void conv_plane(const geom3 *g, const int16_t *data, const int16_t *weights, uint32_t *acc,
                       int64_t n, int64_t k) {
  const int64_t D = g->in[0], H = g->in[1], W = g->in[2];
  const int64_t KD = g->ker[0], KH = g->ker[1], KW = g->ker[2];
  const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2];
  const int64_t in_plane = D * H * W, out_plane = OD * OH * OW, kvol = KD * KH * KW;
  /* groups: output channel k reads the cpg input channels of its group */
  const int64_t groups = g->g > 1 ? g->g : 1, cpg = g->c / groups, kpg = g->k / groups;
  uint32_t *oplane = acc + (n * g->k + k) * out_plane;
  const int64_t c0 = k / kpg * cpg;
  for (int64_t c = 0; c < cpg; c++) {
    const int16_t *iplane = data + (n * g->c + c0 + c) * in_plane;
    const int16_t *wk = weights + (k * cpg + c) * kvol;
    for (int64_t kd = 0; kd < KD; kd++)
      for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = 0; kw < KW; kw++) {
          int32_t wv = wk[(kd * KH + kh) * KW + kw];
          /* input coordinate = output * stride + off, per dimension */
          int64_t off_d = kd * g->dil[0] - g->pb[0];
          int64_t off_h = kh * g->dil[1] - g->pb[1];
          int64_t off_w = kw * g->dil[2] - g->pb[2];
          int64_t od_lo, od_hi, oh_lo, oh_hi, ow_lo, ow_hi;
          valid_range(D, OD, g->str[0], off_d, &od_lo, &od_hi);
          valid_range(H, OH, g->str[1], off_h, &oh_lo, &oh_hi);
          valid_range(W, OW, g->str[2], off_w, &ow_lo, &ow_hi);
          /* a zero weight adds nothing (the zero lanes of a packed stem) */
          if (wv == 0 || ow_lo >= ow_hi) continue;
          for (int64_t od = od_lo; od < od_hi; od++)
            for (int64_t oh = oh_lo; oh < oh_hi; oh++) {
              int64_t id = od * g->str[0] + off_d, ih = oh * g->str[1] + off_h;
              uint32_t *orow = oplane + (od * OH + oh) * OW + ow_lo;
              const int16_t *irow = iplane + ((id * H + ih) * W + ow_lo * g->str[2] + off_w);
              if (g->str[2] == 1)
                madd_row(orow, irow, wv, ow_hi - ow_lo);
              else
                madd_row_strided(orow, irow, g->str[2], wv, ow_hi - ow_lo);
            }
        }
  }
}

/* Work on output planes (image, channel) that are independent: fn(ctx, p)
 * for p in [0, planes), split over threads when the work is large. Each
 * plane is one thread's, so results do not depend on the split. */
typedef void (*plane_fn)(void *ctx, int64_t plane);
typedef struct plane_job {
  plane_fn fn;
  void *ctx;
  int64_t planes, first, step;
} plane_job;

static void *plane_worker(void *arg) {
  const plane_job *j = arg;
  for (int64_t p = j->first; p < j->planes; p += j->step) j->fn(j->ctx, p);
  return NULL;
}

/* threads > 0: that many (at most REF_MAX_THREADS and planes); 0: one a
 * CPU where work (multiply-adds or their like) reaches REF_THREAD_MACS. A
 * thread that cannot start leaves its planes to the caller's thread. */
static void run_planes(plane_fn fn, void *ctx, int64_t planes, int64_t work, int threads) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t nt = threads > 0 ? threads : work < REF_THREAD_MACS || cpus < 2 ? 1 : cpus;
  if (nt > REF_MAX_THREADS) nt = REF_MAX_THREADS;
  if (nt > planes) nt = planes;
  if (nt < 1) nt = 1; /* no planes: nothing to run */
  plane_job jobs[REF_MAX_THREADS];
  pthread_t tids[REF_MAX_THREADS];
  int started[REF_MAX_THREADS];
  for (int64_t t = 0; t < nt; t++) {
    jobs[t] = (plane_job){fn, ctx, planes, t, nt};
    started[t] = t > 0 && pthread_create(&tids[t], NULL, plane_worker, &jobs[t]) == 0;
  }
  plane_worker(&jobs[0]);
  for (int64_t t = 1; t < nt; t++) {
    if (started[t])
      pthread_join(tids[t], NULL);
    else
      plane_worker(&jobs[t]);
  }
}

typedef struct conv_ctx {
  const geom3 *g;
  const int16_t *data, *weights;
  uint32_t *acc;
} conv_ctx;

static void conv_plane_fn(void *ctx, int64_t p) {
  const conv_ctx *c = ctx;
  conv_plane(c->g, c->data, c->weights, c->acc, p / c->g->k, p % c->g->k);
}

void reference_conv_plain(const geom3 *g, const int16_t *data, const int16_t *weights, int32_t *out,
                          int threads) {
  const int64_t out_plane = g->out[0] * g->out[1] * g->out[2], planes = g->n * g->k;
  const int64_t groups = g->g > 1 ? g->g : 1;
  memset(out, 0, (size_t)(planes * out_plane) * sizeof *out);
  /* Work above REF_THREAD_MACS multiply-adds is split over the online CPUs
   * (at most REF_MAX_THREADS): the GPU machine's batch-32 dispatch check of
   * the grouped sets, which computes these on the CPU, ran past 215 s on
   * one of its 16 cores. int32 and uint32 may alias: the sums are kept
   * unsigned so that they wrap. */
  conv_ctx c = {g, data, weights, (uint32_t *)out};
  const int64_t macs = planes * (g->c / groups) * g->ker[0] * g->ker[1] * g->ker[2] * out_plane;
  run_planes(conv_plane_fn, &c, planes, macs, threads);
}

/* Scratch of reference_qconv, one block. */
typedef struct scratch {
  int16_t *x, *w; /* x - zx, w - zw[k], plain */
  int32_t *acc;   /* plain conv output (before the remap) */
  uint8_t *res;   /* plain residual (remapped shape) */
  void *out;      /* plain output (remapped shape), layouts other than plain only */
  uint8_t *tmp;   /* unpacked int8 data or weights */
} scratch;

/* A data-like tensor (data, output, residual: [n][c][spatial] when plain) of
 * layout l into the plain layout, elements of eb bytes. */
static void act_to_plain(ct_layout l, const void *src, void *dst, size_t eb, int64_t n, int64_t c,
                         int64_t spatial) {
  if (l == CT_LAYOUT_NCHW4C)
    unpack_nc4c(src, dst, eb, n, c, spatial);
  else if (l == CT_LAYOUT_NHWC)
    unpack_nhwc(src, dst, eb, n, c, spatial);
  else
    memcpy(dst, src, (size_t)(n * c * spatial) * eb);
}

/* The inverse of act_to_plain. */
static void act_from_plain(ct_layout l, const void *src, void *dst, size_t eb, int64_t n, int64_t c,
                           int64_t spatial) {
  if (l == CT_LAYOUT_NCHW4C)
    pack_nc4c(src, dst, eb, n, c, spatial);
  else if (l == CT_LAYOUT_NHWC)
    pack_nhwc(src, dst, eb, n, c, spatial);
  else
    memcpy(dst, src, (size_t)(n * c * spatial) * eb);
}

/* act_to_plain (to_plain) or act_from_plain of n images, an image a plane
 * of run_planes (the conversions are strided copies: a few operations an
 * element). */
typedef struct act_ctx {
  ct_layout l;
  const uint8_t *src;
  uint8_t *dst;
  size_t eb;
  int64_t c, sp;
  int to_plain;
} act_ctx;

static void act_image(void *ctx, int64_t i) {
  const act_ctx *a = ctx;
  const int64_t plain = a->c * a->sp * (int64_t)a->eb,
                other =
                    (a->l == CT_LAYOUT_NCHW4C ? pack_round4(a->c) : a->c) * a->sp * (int64_t)a->eb;
  if (a->to_plain)
    act_to_plain(a->l, a->src + i * other, a->dst + i * plain, a->eb, 1, a->c, a->sp);
  else
    act_from_plain(a->l, a->src + i * plain, a->dst + i * other, a->eb, 1, a->c, a->sp);
}

static void act_convert(ct_layout l, const void *src, void *dst, size_t eb, int64_t n, int64_t c,
                        int64_t sp, int to_plain, int threads) {
  act_ctx a = {l, src, dst, eb, c, sp, to_plain};
  run_planes(act_image, &a, n, 4 * n * c * sp, threads);
}

/* Weights of layout l into plain OIDHW. */
static void weights_to_plain(ct_layout l, const int8_t *src, int8_t *dst, int64_t k, int64_t c,
                             int64_t kvol) {
  if (l == CT_LAYOUT_NCHW4C)
    unpack_oi4o4i(src, dst, k, c, kvol);
  else if (l == CT_LAYOUT_NHWC)
    unpack_ohwi(src, dst, k, c, kvol);
  else
    memcpy(dst, src, (size_t)(k * c * kvol));
}

/* The epilogue of reference_qconv on one plane (image n, channel k of
 * the conv's output): the bias, the requantization and the
 * depth_to_space remap, element by element. */
typedef struct epi_ctx {
  const ct_workload *w;
  const geom3 *g;
  const int32_t *raw, *bias, *mult, *shift;
  const ctq_onnx *ox;
  const uint32_t *acc;
  const uint8_t *res;
  void *po;
  int64_t cout, vol, bd, OD, OH, OW;
  int b, onnx;
  size_t eb;
} epi_ctx;

static void epi_plane(void *ctx, int64_t p) {
  const epi_ctx *e = ctx;
  const ct_workload *w = e->w;
  const geom3 *g = e->g;
  const int64_t n = p / g->k, k = p % g->k, b = e->b;
  const int32_t zy = e->raw[1], lo = e->raw[2], hi = e->raw[3];
  int c = (int)k, i_d = 0, i_h = 0, i_w = 0;
  if (e->vol > 1)
    ctq_d2s((int)k, (int)e->cout, e->b, (int)e->vol, w->epi.d2s_mode == CT_D2S_CRD, &c, &i_d, &i_h,
            &i_w);
  for (int64_t od = 0; od < g->out[0]; od++)
    for (int64_t oh = 0; oh < g->out[1]; oh++)
      for (int64_t ow = 0; ow < g->out[2]; ow++) {
        int64_t src =
            ((n * g->k + k) * g->out[0] + od) * g->out[1] * g->out[2] + oh * g->out[2] + ow;
        int64_t dst =
            (((n * e->cout + c) * e->OD + od * e->bd + i_d) * e->OH + oh * b + i_h) * e->OW +
            ow * b + i_w;
        int32_t v = (int32_t)(e->acc[src] + (uint32_t)e->bias[k]);
        if (e->eb == 4) {
          ((int32_t *)e->po)[dst] = v;
          continue;
        }
        int32_t r = 0;
        if (w->epi.residual) r = w->out_type == CT_DTYPE_UINT8 ? e->res[dst] : (int8_t)e->res[dst];
        int32_t y = e->onnx
                        ? ctq_requant_onnx(v, ctq_bits_float(e->mult[k]), e->ox, w->epi.residual, r)
                        : ctq_requant(v, e->mult[k], e->shift[k], zy, lo, hi, w->epi.residual, r,
                                      e->raw[4], e->raw[5], e->raw[6]);
        ((uint8_t *)e->po)[dst] = (uint8_t)y;
      }
}

ct_status reference_qconv(const ct_workload *w, const ct_quant *q, const void *data,
                          const int8_t *weights, const void *residual, void *out, ct_err *err) {
  return reference_qconv_threads(w, q, data, weights, residual, out, 0, err);
}

ct_status reference_qconv_threads(const ct_workload *w, const ct_quant *q, const void *data,
                                  const int8_t *weights, const void *residual, void *out,
                                  int threads, ct_err *err) {
  ct_status st = workload_validate(w, err);
  if (st != CT_OK) return st;
  if ((st = quant_check(w, q, err)) != CT_OK) return st;
  if (w->pre_c > 0) {
    /* the fused pointwise convolution into its own tensor, then w's conv of
     * it: the two convolutions the fused one stands for, as written */
    ct_workload pre, m;
    workload_pre(w, &pre);
    workload_main(w, &m);
    void *mid = malloc((size_t)workload_out_elems(&pre));
    if (!mid) return ERR_SET(err, CT_ERR_NO_MEMORY, "reference: no memory for the intermediate");
    st = reference_qconv_threads(&pre, q->pre, data, q->pre_weights, NULL, mid, threads, err);
    if (st == CT_OK) st = reference_qconv_threads(&m, q, mid, weights, residual, out, threads, err);
    free(mid);
    if (st != CT_OK) err_prefix(err, "reference of the fused convolutions");
    return st;
  }
  if (w->epi.residual && !residual)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "reference: the workload has a residual; it is NULL");
  int32_t *raw = malloc(quant_raw_words(w) * sizeof *raw);
  if (!raw) return ERR_SET(err, CT_ERR_NO_MEMORY, "reference: no memory");
  (void)quant_raw(w, q, raw, NULL);
  const int32_t zx = raw[0], lo = raw[2], hi = raw[3];
  const int32_t *bias = raw + QRAW_HEADER, *zw = bias + w->k, *mult = zw + w->k,
                *shift = mult + w->k;
  /* onnx rounding: ONNX Runtime's float32 form, mult the float scales */
  const int onnx = (raw[QRAW_FLAGS] & QRAW_ONNX_FLAG) != 0;
  const ctq_onnx ox = ctq_onnx_load(raw + QRAW_ONNX, lo, hi);

  geom3 g;
  workload_geom(w, &g);
  /* every layout but the plain one is converted to plain and back */
  const int converted = w->layout != CT_LAYOUT_NCHW;
  const int64_t in_sp = g.in[0] * g.in[1] * g.in[2], out_sp = g.out[0] * g.out[1] * g.out[2];
  const int64_t kvol = g.ker[0] * g.ker[1] * g.ker[2];
  const int64_t cpg = workload_cpg(w); /* the weights' input channels */
  const int64_t n_data = g.n * g.c * in_sp, n_weights = g.k * cpg * kvol,
                n_out = g.n * g.k * out_sp;
  const size_t eb = workload_out_elem_bytes(w);
  scratch s = {0};
  s.x = malloc((size_t)n_data * sizeof *s.x);
  s.w = malloc((size_t)n_weights * sizeof *s.w);
  s.acc = malloc((size_t)n_out * sizeof *s.acc);
  s.tmp = malloc((size_t)(n_data > n_weights ? n_data : n_weights));
  if (w->epi.residual) s.res = malloc((size_t)n_out);
  if (converted) s.out = malloc((size_t)n_out * eb);
  if (!s.x || !s.w || !s.acc || !s.tmp || (w->epi.residual && !s.res) || (converted && !s.out)) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY,
                 "reference: no memory for the scratch of %" PRId64 " outputs", n_out);
    goto done;
  }

  /* The formula as written: (x - zx) and (w - zw[k]); padding adds nothing
   * because a padded x equals zx. */
  const uint8_t *xb = data;
  if (converted) {
    act_convert(w->layout, data, s.tmp, 1, g.n, g.c, in_sp, 1, threads);
    xb = s.tmp;
  }
  for (int64_t i = 0; i < n_data; i++)
    s.x[i] = (int16_t)((w->data_type == CT_DTYPE_UINT8 ? (int)xb[i] : (int)(int8_t)xb[i]) - zx);
  const int8_t *wb = weights;
  if (converted) {
    weights_to_plain(w->layout, weights, (int8_t *)s.tmp, g.k, cpg, kvol);
    wb = (const int8_t *)s.tmp;
  }
  for (int64_t i = 0; i < n_weights; i++) s.w[i] = (int16_t)(wb[i] - zw[i / (cpg * kvol)]);
  reference_conv_plain(&g, s.x, s.w, s.acc, threads);

  /* The remapped output: C' channels, each spatial size b times larger
   * (depth only in conv3d). */
  const int b = w->epi.d2s_block ? w->epi.d2s_block : 1;
  const int64_t vol = workload_d2s_volume(w), cout = g.k / vol;
  const int64_t bd = workload_nd(w) == 3 ? b : 1;
  const int64_t OD = g.out[0] * bd, OH = g.out[1] * b, OW = g.out[2] * b;
  if (w->epi.residual)
    act_convert(w->layout, residual, s.res, 1, g.n, cout, OD * OH * OW, 1, threads);
  void *po = converted ? s.out : out;
  /* about 8 operations an element (the requantization's), the same split
   * as the conv's */
  epi_ctx e = {.w = w,
               .g = &g,
               .raw = raw,
               .bias = bias,
               .mult = mult,
               .shift = shift,
               .ox = &ox,
               .acc = (const uint32_t *)s.acc,
               .res = s.res,
               .po = po,
               .cout = cout,
               .vol = vol,
               .bd = bd,
               .OD = OD,
               .OH = OH,
               .OW = OW,
               .b = b,
               .onnx = onnx,
               .eb = eb};
  run_planes(epi_plane, &e, g.n * g.k, 8 * n_out, threads);
  if (converted) act_convert(w->layout, s.out, out, eb, g.n, cout, OD * OH * OW, 0, threads);
done:
  free(s.x);
  free(s.w);
  free(s.acc);
  free(s.res);
  free(s.out);
  free(s.tmp);
  free(raw);
  return st;
}

ct_status reference_conv(const ct_workload *w, const int8_t *data, const int8_t *weights,
                         int32_t *out, ct_err *err) {
  if (!w) return ERR_SET(err, CT_ERR_INVALID_ARG, "reference: the workload is NULL");
  if (w->out_type != CT_DTYPE_INT32 || workload_has_params(w))
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "reference_conv: the workload has an epilogue; use reference_qconv");
  return reference_qconv(w, NULL, data, weights, NULL, out, err);
}
