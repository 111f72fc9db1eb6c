/*
 * ref_conv.cu: the runner's GPU reference convolution and its output check
 * (tuner/runner.c). Not a template: it has no knobs and is compiled once per
 * runner worker with nvrtc_compile_source, the shape passed as an argument.
 *
 * ref_conv is deliberately naive: one thread per output position
 * (n, k/4 chunk, od, oh, ow) writing its 4 lanes, a plain loop over
 * (c/4, kd, kh, kw), int8 products taken byte by byte (not __dp4a, so that a
 * misreading of dp4a in the templates cannot hide in the reference) and
 * summed modulo 2^32 as the CPU reference does. Layouts as conv_dp4a.cuh:
 * data int per (n, c4, d, h, w) holding 4 channels; weights int4 per
 * (k4, c4, kd, kh, kw) whose .x is output lane 0 over the 4 input lanes;
 * output int4 per (n, k4, od, oh, ow). It runs once per task; it is tested
 * against core/reference.c (tests/test_runner.c).
 *
 * ref_compare counts the elements where out != ref and finds the smallest
 * such index: one atomic per thread, not per element, so a fully wrong
 * output costs no more than a right one.
 */

/* The normalised 3D shape (conv2d: depth 1), spatial arrays (d, h, w). Laid
 * out as runner.c's ref_shape: 21 ints. */
struct ref_shape {
  int n, c4, k4;
  int in[3], ker[3], str[3], pad[3], dil[3], out[3];
};

/* The 4 output lanes of output position i, i = (((n * K4 + f) * OD + od) * OH + oh) * OW + ow. */
__device__ int4 ref_conv_at(const ref_shape &s, const int *data, const int4 *weights, long long i) {
  long long r = i;
  const int ow = (int)(r % s.out[2]);
  r /= s.out[2];
  const int oh = (int)(r % s.out[1]);
  r /= s.out[1];
  const int od = (int)(r % s.out[0]);
  r /= s.out[0];
  const int f = (int)(r % s.k4);
  const long long n = r / s.k4;
  unsigned acc[4] = {0u, 0u, 0u, 0u};
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
          const int4 w =
              weights[((((long long)f * s.c4 + c) * s.ker[0] + kd) * s.ker[1] + kh) * s.ker[2] + kw];
          const int lanes[4] = {w.x, w.y, w.z, w.w};
          for (int o = 0; o < 4; o++)
            for (int j = 0; j < 4; j++) {
              const int x = (signed char)(a >> (8 * j));
              const int y = (signed char)(lanes[o] >> (8 * j));
              acc[o] += (unsigned)(x * y);
            }
        }
      }
    }
  return make_int4((int)acc[0], (int)acc[1], (int)acc[2], (int)acc[3]);
}

extern "C" __global__ void ref_conv(ref_shape s, const int *data, const int4 *weights, int4 *out) {
  const long long total = (long long)s.n * s.k4 * s.out[0] * s.out[1] * s.out[2];
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) out[i] = ref_conv_at(s, data, weights, i);
}

/* result[0] += elements where out != ref; result[1] = min(result[1], their
 * smallest index). The caller sets result to {0, 0xffffffff} first; n is at
 * most 2^31 - 1 (workloads index with int32). */
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
