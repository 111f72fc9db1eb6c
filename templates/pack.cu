/*
 * pack.cu: the layout kernels of the dispatch library (not a template):
 * NCHW -> NCHW4c for data, NCHW4c -> NCHW for int32 output, OIHW ->
 * OIHW4o4i for weights, each for any spatial size (3D flattens D*H*W).
 * Channels beyond C (and K) are zero-filled, so a 3-channel stem packs into
 * 4 channels without changing the convolution. One thread per packed
 * element; sizes are kernel arguments, so one compile serves every workload.
 */

/* data [n][c][s] int8 -> [n][c4][s] int (4 channels each) */
extern "C" __global__ void pack_data(const signed char *__restrict__ src, int *__restrict__ dst,
                                     int n, int c, int c4, long long spatial) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long total = (long long)n * c4 * spatial;
  if (i >= total) return;
  long long s = i % spatial, r = i / spatial;
  int cb = (int)(r % c4), b = (int)(r / c4);
  unsigned v = 0;
  for (int l = 0; l < 4; l++) {
    int ch = cb * 4 + l;
    unsigned char byte = ch < c ? (unsigned char)src[((long long)b * c + ch) * spatial + s] : 0;
    v |= (unsigned)byte << (8 * l);
  }
  dst[i] = (int)v;
}

/* output [n][k4][s] int4 -> [n][k][s] int */
extern "C" __global__ void unpack_out(const int *__restrict__ src, int *__restrict__ dst, int n,
                                      int k, int k4, long long spatial) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long total = (long long)n * k * spatial;
  if (i >= total) return;
  long long s = i % spatial, r = i / spatial;
  int ch = (int)(r % k), b = (int)(r / k);
  dst[i] = src[(((long long)b * k4 + ch / 4) * spatial + s) * 4 + ch % 4];
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
