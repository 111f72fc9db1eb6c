/*
 * ref_conv.cu: the runner's GPU reference convolution and its output check
 * (tuner/runner.c). Not a template: it has no knobs and is compiled once per
 * runner worker with nvrtc_compile_source, the shape passed as an argument.
 * No template includes it, so changing it moves no template's version.
 *
 * ref_conv is deliberately naive and computes the quantized formula as
 * written, not the legalized one the templates run: one thread per conv
 * output element (n, k, od, oh, ow), a plain loop over the reduction and
 * (x - zx) * (w - zw[k]) byte by byte (not dp4a, so that a misreading of
 * dp4a in the templates cannot hide in the reference), padded taps skipped
 * (a padded x equals zx), sums modulo 2^32 as the CPU reference does; then
 * bias, the requantization of templates/quant.cuh (gemmlowp's, or ONNX
 * Runtime's float form with onnx rounding) and the depth_to_space remap.
 * It reads the raw values (core/quant.h's quant_raw: no folding but
 * QLinearAdd's fixed part, which is ORT's own).
 * Two layouts, chosen by shape.nhwc:
 *   packed (0): NCDHW4c data, OIDHW4o4i weights, NCDHW4c output, a loop over
 *     (c/4, kd, kh, kw) and the 4 lanes (layouts as conv_dp4a.cuh); it
 *     writes every real element of the packed output, and the runner zeroes
 *     the output first, which is what the padding lanes must hold.
 *   channels last (1): NDHWC data, ODHWI weights, N(D)HWC output (C and K
 *     unpadded, any value), a loop over (kd, kh, kw, c) reading bytes.
 * The residual, when there is one, has the output's layout and type. It
 * runs once per task; it is tested against core/reference.c
 * (tests/test_runner.c).
 *
 * ref_compare counts the 32-bit words where out != ref and finds the
 * smallest such index: one atomic per thread, not per element, so a fully
 * wrong output costs no more than a right one. An 8-bit channels-last
 * output need not be whole words: the runner allocates both buffers rounded
 * up to 4 bytes with the tail zeroed once, and poisons only the real bytes,
 * so the tail compares equal unless a kernel writes past the output.
 */
#include "quant.cuh"

/* The normalised 3D shape (conv2d: depth 1), spatial arrays (d, h, w),
 * then the epilogue and the layout. Laid out as runner.c's ref_shape: 31
 * ints, then groups (32). */
struct ref_shape {
  int n, c4, k4; /* c4, k4: channel chunks of 4 (packed layout) */
  int in[3], ker[3], str[3], pad[3], dil[3], out[3];
  int kr;       /* real output channels of the conv (K) */
  int cout;     /* channels of the output tensor (K / b^nd) */
  int d2s;      /* depth_to_space block, 0: none */
  int d2s_crd;  /* 1: CRD order, 0: DCR */
  int d2s_3d;   /* 1: the depth is remapped too */
  int out_type; /* 0 int32, 1 int8, 2 uint8 */
  int data_u8;  /* 1: data bytes are unsigned */
  int has_res;  /* 1: a residual */
  int nhwc;     /* 1: channels last (NDHWC, ODHWI), 0: packed */
  int c;        /* input channels (channels last: unpadded) */
  int groups;   /* groups G (0 or 1: none); output channel k reads C/G channels from k / (K/G) x C/G */
};

/* The raw words (quant_raw): [zx, zy, lo, hi, rm, rs, rzp, flags, the onnx
 * block (CTQO_WORDS), 0], then bias, zw, mult and shift, K each. NULL: all
 * zero (int32 output). flags bit 0: onnx rounding (ctq_requant_onnx, mult
 * the float scales' bits). core/quant.h's QRAW_* name the same words. */
#define RAW_HEADER 16
#define RAW_FLAGS  7
#define RAW_ONNX   8

/* Conv output element i, i = (((n * K + k) * OD + od) * OH + oh) * OW + ow
 * (real K): its output value, and its element index in the output (packed
 * or channels last) in *e. */
__device__ int ref_conv_value(const ref_shape &s, const int *data, const int4 *weights,
                              const int *raw, const void *residual, long long i, long long *e) {
  long long r = i;
  const int ow = (int)(r % s.out[2]);
  r /= s.out[2];
  const int oh = (int)(r % s.out[1]);
  r /= s.out[1];
  const int od = (int)(r % s.out[0]);
  r /= s.out[0];
  const int k = (int)(r % s.kr);
  const long long n = r / s.kr;
  const int zx = raw ? raw[0] : 0;
  const int zw = raw ? raw[RAW_HEADER + s.kr + k] : 0;
  unsigned acc = 0u;
  /* groups: k's input channels [c0, c0 + cpg); the weights hold cpg of them */
  const int groups = s.groups > 1 ? s.groups : 1;
  const int cpg = s.c / groups, c0 = k / (s.kr / groups) * cpg;
  if (s.nhwc) {
    const unsigned char *x8 = (const unsigned char *)data;
    const signed char *w8 = (const signed char *)weights;
    for (int kd = 0; kd < s.ker[0]; kd++) {
      const int id = od * s.str[0] - s.pad[0] + kd * s.dil[0];
      if (id < 0 || id >= s.in[0]) continue;
      for (int kh = 0; kh < s.ker[1]; kh++) {
        const int ih = oh * s.str[1] - s.pad[1] + kh * s.dil[1];
        if (ih < 0 || ih >= s.in[1]) continue;
        for (int kw = 0; kw < s.ker[2]; kw++) {
          const int iw = ow * s.str[2] - s.pad[2] + kw * s.dil[2];
          if (iw < 0 || iw >= s.in[2]) continue;
          const long long xp = (((n * s.in[0] + id) * s.in[1] + ih) * s.in[2] + iw) * s.c + c0;
          const long long wp =
              ((((long long)k * s.ker[0] + kd) * s.ker[1] + kh) * s.ker[2] + kw) * cpg;
          for (int c = 0; c < cpg; c++) {
            const int xb = x8[xp + c];
            const int x = s.data_u8 ? xb : (int)(signed char)xb;
            acc += (unsigned)((x - zx) * ((int)w8[wp + c] - zw));
          }
        }
      }
    }
  } else if (groups > 1) {
    /* packed and grouped: byte by byte, since a group's channels need not
     * start on a word (depthwise: one channel of a word); weights
     * [K/4][ceil(cpg/4)][kvol] int4, lane k % 4, byte ci % 4 */
    const unsigned char *x8 = (const unsigned char *)data;
    const int cpg4 = (cpg + 3) / 4;
    for (int ci = 0; ci < cpg; ci++)
      for (int kd = 0; kd < s.ker[0]; kd++) {
        const int id = od * s.str[0] - s.pad[0] + kd * s.dil[0];
        if (id < 0 || id >= s.in[0]) continue;
        for (int kh = 0; kh < s.ker[1]; kh++) {
          const int ih = oh * s.str[1] - s.pad[1] + kh * s.dil[1];
          if (ih < 0 || ih >= s.in[1]) continue;
          for (int kw = 0; kw < s.ker[2]; kw++) {
            const int iw = ow * s.str[2] - s.pad[2] + kw * s.dil[2];
            if (iw < 0 || iw >= s.in[2]) continue;
            const int ch = c0 + ci;
            const int xb =
                x8[((((n * s.c4 + ch / 4) * s.in[0] + id) * s.in[1] + ih) * s.in[2] + iw) * 4 +
                   ch % 4];
            const int4 w4 =
                weights[((((long long)(k / 4) * cpg4 + ci / 4) * s.ker[0] + kd) * s.ker[1] + kh) *
                            s.ker[2] +
                        kw];
            const int lanes[4] = {w4.x, w4.y, w4.z, w4.w};
            const int x = s.data_u8 ? xb : (int)(signed char)xb;
            const int y = (signed char)(lanes[k % 4] >> (8 * (ci % 4)));
            acc += (unsigned)((x - zx) * (y - zw));
          }
        }
      }
  } else {
    for (int c = 0; c < s.c4; c++)
      for (int kd = 0; kd < s.ker[0]; kd++) {
        const int id = od * s.str[0] - s.pad[0] + kd * s.dil[0];
        if (id < 0 || id >= s.in[0]) continue;
        for (int kh = 0; kh < s.ker[1]; kh++) {
          const int ih = oh * s.str[1] - s.pad[1] + kh * s.dil[1];
          if (ih < 0 || ih >= s.in[1]) continue;
          for (int kw = 0; kw < s.ker[2]; kw++) {
            const int iw = ow * s.str[2] - s.pad[2] + kw * s.dil[2];
            if (iw < 0 || iw >= s.in[2]) continue;
            const int a = data[(((n * s.c4 + c) * s.in[0] + id) * s.in[1] + ih) * s.in[2] + iw];
            const int4 w4 =
                weights[((((long long)(k / 4) * s.c4 + c) * s.ker[0] + kd) * s.ker[1] + kh) *
                            s.ker[2] +
                        kw];
            const int lanes[4] = {w4.x, w4.y, w4.z, w4.w};
            for (int j = 0; j < 4; j++) {
              const int xb = (a >> (8 * j)) & 0xff;
              const int x = s.data_u8 ? xb : (int)(signed char)xb;
              const int y = (signed char)(lanes[k % 4] >> (8 * j));
              acc += (unsigned)((x - zx) * (y - zw));
            }
          }
        }
      }
  }
  const int v = (int)(acc + (unsigned)(raw ? raw[RAW_HEADER + k] : 0));
  /* where it lands */
  int c = k, i_d = 0, i_h = 0, i_w = 0;
  const int b = s.d2s ? s.d2s : 1, bd = s.d2s_3d ? b : 1;
  if (s.d2s) ctq_d2s(k, s.cout, b, b * b * bd, s.d2s_crd, &c, &i_d, &i_h, &i_w);
  const long long pd = od * bd + i_d, ph = oh * b + i_h, pw = ow * b + i_w;
  if (s.nhwc) {
    *e = (((n * (s.out[0] * bd) + pd) * (s.out[1] * b) + ph) * (s.out[2] * b) + pw) * s.cout + c;
  } else {
    const long long cout4 = (s.cout + 3) / 4;
    *e = ((((n * cout4 + c / 4) * (s.out[0] * bd) + pd) * (s.out[1] * b) + ph) * (s.out[2] * b) +
          pw) *
             4 +
         c % 4;
  }
  if (s.out_type == 0) return v;
  int res = 0;
  if (s.has_res) {
    const unsigned char rb = ((const unsigned char *)residual)[*e];
    res = s.out_type == 2 ? (int)rb : (int)(signed char)rb;
  }
  if (raw[RAW_FLAGS] & 1) {
    const ctq_onnx o = ctq_onnx_load(raw + RAW_ONNX, raw[2], raw[3]);
    return ctq_requant_onnx(v, __int_as_float(raw[RAW_HEADER + 2 * s.kr + k]), &o, s.has_res, res);
  }
  return ctq_requant(v, raw[RAW_HEADER + 2 * s.kr + k], raw[RAW_HEADER + 3 * s.kr + k], raw[1],
                     raw[2], raw[3], s.has_res, res, raw[4], raw[5], raw[6]);
}

extern "C" __global__ void ref_conv(ref_shape s, const int *data, const int4 *weights, void *out,
                                    const int *raw, const void *residual) {
  const long long total = (long long)s.n * s.kr * s.out[0] * s.out[1] * s.out[2];
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  long long e;
  const int v = ref_conv_value(s, data, weights, raw, residual, i, &e);
  if (s.out_type == 0)
    ((int *)out)[e] = v;
  else
    ((unsigned char *)out)[e] = (unsigned char)v;
}

/* result[0] += 32-bit words where out != ref; result[1] = min(result[1],
 * their smallest index). The caller sets result to {0, 0xffffffff} first; n
 * is at most 2^31 - 1 (workloads index with int32). */
extern "C" __global__ void ref_compare(const int *out, const int *ref, long long n,
                                       unsigned *result) {
  unsigned bad = 0, first = 0xffffffffu;
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    if (out[i] != ref[i]) {
      if (bad++ == 0) first = (unsigned)i;
    }
  if (bad) {
    atomicAdd(&result[0], bad);
    atomicMin(&result[1], first);
  }
}
