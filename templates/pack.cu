/*
 * pack.cu: the layout kernels of the dispatch library (not a template):
 * NCHW -> NCHW4c for data (and a residual), NCHW4c -> NCHW for the output
 * (4-byte or 1-byte elements; a depth_to_space output is unpacked as the
 * tensor it is, C' channels of the remapped size), OIHW -> OIHW4o4i for
 * weights, each for any spatial size (3D flattens D*H*W). Channels beyond C
 * are filled with the data's zero point (the low byte of *pad, 0 when pad is
 * NULL), so that they add nothing to the quantized formula (quant.cuh), and
 * with zeros in the weights, so a 3-channel stem packs into 4 channels
 * without changing the convolution. One thread per packed element; sizes are
 * kernel arguments, so one compile serves every workload.
 */

/* data [n][c][s] bytes -> [n][c4][s] int (4 channels each) */
extern "C" __global__ void pack_data(const unsigned char *__restrict__ src, int *__restrict__ dst,
                                     int n, int c, int c4, long long spatial,
                                     const int *__restrict__ pad) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long total = (long long)n * c4 * spatial;
  if (i >= total) return;
  long long s = i % spatial, r = i / spatial;
  int cb = (int)(r % c4), b = (int)(r / c4);
  const unsigned fill = pad ? (unsigned)*pad & 0xffu : 0u;
  unsigned v = 0;
  for (int l = 0; l < 4; l++) {
    int ch = cb * 4 + l;
    unsigned byte = ch < c ? src[((long long)b * c + ch) * spatial + s] : fill;
    v |= byte << (8 * l);
  }
  dst[i] = (int)v;
}

/* output [n][k4][s][4] -> [n][k][s], elements of elem_bytes (4 or 1) */
extern "C" __global__ void unpack_out(const void *__restrict__ src, void *__restrict__ dst, int n,
                                      int k, int k4, long long spatial, int elem_bytes) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long total = (long long)n * k * spatial;
  if (i >= total) return;
  long long s = i % spatial, r = i / spatial;
  int ch = (int)(r % k), b = (int)(r / k);
  long long from = (((long long)b * k4 + ch / 4) * spatial + s) * 4 + ch % 4;
  if (elem_bytes == 4)
    ((int *)dst)[i] = ((const int *)src)[from];
  else
    ((unsigned char *)dst)[i] = ((const unsigned char *)src)[from];
}

/* weights [k][c][kvol] int8 -> [k4][c4][kvol] int4 (.x..w = output lanes, each 4 input lanes) */
extern "C" __global__ void pack_weights(const signed char *__restrict__ src, int4 *__restrict__ dst,
                                        int k, int c, int k4, int c4, int kvol) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long total = (long long)k4 * c4 * kvol;
  if (i >= total) return;
  int t = (int)(i % kvol);
  long long r = i / kvol;
  int cb = (int)(r % c4), kb = (int)(r / c4);
  int lanes[4];
  for (int o = 0; o < 4; o++) {
    unsigned v = 0;
    for (int l = 0; l < 4; l++) {
      int oc = kb * 4 + o, ic = cb * 4 + l;
      unsigned char byte =
          oc < k && ic < c ? (unsigned char)src[((long long)oc * c + ic) * kvol + t] : 0;
      v |= (unsigned)byte << (8 * l);
    }
    lanes[o] = (int)v;
  }
  dst[i] = make_int4(lanes[0], lanes[1], lanes[2], lanes[3]);
}
