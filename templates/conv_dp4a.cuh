/*
 * conv_dp4a.cuh: the body of the dp4a convolution templates
 * conv2d_nchw4c_dp4a and conv3d_ncdhw4c_dp4a (conv2d is the D = 1 case).
 *
 * Data NCDHW4c (int8, or uint8 through dp4a.u32.s32), weights OIDHW4o4i,
 * output NCDHW4c: int32, or int8 / uint8 requantized by the epilogue (4
 * channels per 32-bit word), optionally remapped by depth_to_space. One int
 * of data is the 4 input channels that one dp4a consumes; one int4 of
 * weights is the 4 output lanes of those 4 input channels. Output axes (n, f = K/4 chunk,
 * d, y, x) are split four ways, block / vthread / thread / inner, as
 * AutoTVM's conv2d_NCHWc_int8 does; a thread owns
 *   position = b * (V*T*I) + v * (T*I) + t * I + i
 * along each axis, so vthreads interleave a thread's outputs with stride T*I.
 * Reduction axes (rc = C/4 chunk, rd, ry, rx) are split outer / inner: each
 * outer step stages the block's data window and weights for the inner
 * extents in shared memory by cooperative loads, then every thread runs the
 * inner steps on its register tile of accumulators. Splits are exact
 * factorisations of the extents (the descriptor guarantees it), so no output
 * bound is ever tested; only the input window tests for padding.
 *
 * The quantized epilogue (templates/quant.cuh: the params block and its
 * arithmetic) is legalized: padding reads the data zero point (a params
 * word), products are of raw values, and with weight zero points each
 * thread also sums the raw data of its positions' windows (one more dp4a
 * per data value, against 0x01010101); the store applies acc + off[k] -
 * zw[k] * xsum, then the rescale, residual and clamp (CT_ONNX: ONNX
 * Runtime's float form, quant.cuh's ctq_requant_onnx).
 *
 * Every knob and shape is a compile-time macro set by the C descriptor
 * (conv_dp4a.c) with -D; the static_asserts below catch a point that slips
 * through its checks as a COMPILE_ERROR with a clear log.
 */
#include "quant.cuh"

/* ---- the knobs and shapes ------------------------------------------------- */
#ifndef CT_N
#error "conv_dp4a.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

/* Reduction axes, in the order REORDER_0..3 name them. */
#define AX_RC 0
#define AX_RD 1
#define AX_RY 2
#define AX_RX 3

#include "conv_shape.cuh"

#if !CT_TEMPLATE_CONV3D
static_assert(TILE_D_B * TILE_D_V * TILE_D_T * TILE_D_I == 1 && TILE_RD_O * TILE_RD_I == 1,
              "conv2d: the depth tiles must all be 1");
#endif

static_assert(TILE_N_B * TILE_N_V * TILE_N_T * TILE_N_I == CT_N, "tile_n must split N exactly");
static_assert(TILE_F_B * TILE_F_V * TILE_F_T * TILE_F_I == CT_K4, "tile_f must split K/4 exactly");
static_assert(TILE_D_B * TILE_D_V * TILE_D_T * TILE_D_I == CT_OD, "tile_d must split OD exactly");
static_assert(TILE_Y_B * TILE_Y_V * TILE_Y_T * TILE_Y_I == CT_OH, "tile_y must split OH exactly");
static_assert(TILE_X_B * TILE_X_V * TILE_X_T * TILE_X_I == CT_OW, "tile_x must split OW exactly");
static_assert(TILE_RC_O * TILE_RC_I == CT_C4, "tile_rc must split C/4 exactly");
static_assert(TILE_RD_O * TILE_RD_I == CT_KD, "tile_rd must split KD exactly");
static_assert(TILE_RY_O * TILE_RY_I == CT_KH, "tile_ry must split KH exactly");
static_assert(TILE_RX_O * TILE_RX_I == CT_KW, "tile_rx must split KW exactly");
static_assert(REORDER_0 != REORDER_1 && REORDER_0 != REORDER_2 && REORDER_0 != REORDER_3 &&
                  REORDER_1 != REORDER_2 && REORDER_1 != REORDER_3 && REORDER_2 != REORDER_3 &&
                  REORDER_0 >= 0 && REORDER_0 < 4 && REORDER_1 >= 0 && REORDER_1 < 4 &&
                  REORDER_2 >= 0 && REORDER_2 < 4 && REORDER_3 >= 0 && REORDER_3 < 4,
              "REORDER_0..3 must be a permutation of the reduction axes 0..3");
static_assert(FUSE_YX == 0 || FUSE_YX == 1, "fuse_yx is 0 or 1");
/* The epilogue: CT_OUT 0 int32, 1 int8, 2 uint8; CT_OFF: a per-channel
 * offset (bias, zero-point corrections); CT_D2S block (0: none) over 2 or 3
 * dimensions; CT_KR the real K and CT_COUT the output channels. */
static_assert(CT_D2S == 0 || CT_COUT * CT_D2S * CT_D2S * (CT_D2S_3D ? CT_D2S : 1) == CT_KR,
              "depth_to_space: K must be C' x b^nd");
static_assert(UNROLL_EXPLICIT == 0 || UNROLL_EXPLICIT == 1, "unroll_explicit is 0 or 1");
static_assert(AUTO_UNROLL_MAX_STEP >= 0, "auto_unroll_max_step is at least 0");

/* Threads per block and the block's extent along each output axis. */
#define THREADS (TILE_N_T * TILE_F_T * TILE_D_T * TILE_Y_T * TILE_X_T)
static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the thread splits");
static_assert(THREADS >= 32 && THREADS <= 1024, "threads per block must be 32 to 1024");
#define NB (TILE_N_V * TILE_N_T * TILE_N_I)
#define FB (TILE_F_V * TILE_F_T * TILE_F_I)
#define DB (TILE_D_V * TILE_D_T * TILE_D_I)
#define YB (TILE_Y_V * TILE_Y_T * TILE_Y_I)
#define XB (TILE_X_V * TILE_X_T * TILE_X_I)

/* The register tile: outputs per thread along each axis. */
#define AN (TILE_N_V * TILE_N_I)
#define AF (TILE_F_V * TILE_F_I)
#define AD (TILE_D_V * TILE_D_I)
#define AY (TILE_Y_V * TILE_Y_I)
#define AX (TILE_X_V * TILE_X_I)

/* The shared window: the input rows and columns one outer step reads. */
#define WD ((DB - 1) * CT_STR_D + (TILE_RD_I - 1) * CT_DIL_D + 1)
#define WH ((YB - 1) * CT_STR_H + (TILE_RY_I - 1) * CT_DIL_H + 1)
#define WW ((XB - 1) * CT_STR_W + (TILE_RX_I - 1) * CT_DIL_W + 1)
#define A_ELEMS (NB * TILE_RC_I * WD * WH * WW)                     /* ints */
#define W_ELEMS (FB * TILE_RC_I * TILE_RD_I * TILE_RY_I * TILE_RX_I) /* int4s */
static_assert(16 * W_ELEMS + 4 * A_ELEMS == CT_SMEM_BYTES,
              "CT_SMEM_BYTES does not match the shared tiles");

/* Unrolling, as AutoTVM's auto_unroll_max_step / unroll_explicit: a loop
 * nest of at most AUTO_UNROLL_MAX_STEP steps is unrolled, by this source
 * (#pragma unroll) when explicit, else left to the compiler's judgement;
 * longer nests are kept rolled. The register-tile loops are always unrolled:
 * rolled, the accumulators would live in local memory. */
#define INNER_STEPS (TILE_RC_I * TILE_RD_I * TILE_RY_I * TILE_RX_I * AN * AF * AD * AY * AX)
#define A_TRIPS ((A_ELEMS + THREADS - 1) / THREADS)
#define W_TRIPS ((W_ELEMS + THREADS - 1) / THREADS)
#define CT_PRAGMA(x) _Pragma(#x)
#if AUTO_UNROLL_MAX_STEP > 0 && INNER_STEPS <= AUTO_UNROLL_MAX_STEP
#if UNROLL_EXPLICIT
#define UNROLL_INNER CT_PRAGMA(unroll)
#else
#define UNROLL_INNER
#endif
#else
#define UNROLL_INNER CT_PRAGMA(unroll 1)
#endif
#if AUTO_UNROLL_MAX_STEP > 0 && A_TRIPS + W_TRIPS <= AUTO_UNROLL_MAX_STEP
#if UNROLL_EXPLICIT
#define UNROLL_LOAD CT_PRAGMA(unroll)
#else
#define UNROLL_LOAD
#endif
#else
#define UNROLL_LOAD CT_PRAGMA(unroll 1)
#endif

/* a . b + c over 4 byte lanes: data lanes signed, or unsigned for uint8
 * data (PTX dp4a.u32.s32: the weights stay signed). */
__device__ __forceinline__ int dp4a_data(int a, int b, int c) {
#if CT_DATA_U8
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  return __dp4a(a, b, c);
#endif
}

/* Extent of reduction axis ax, outer and inner part. */
__device__ constexpr int outer_extent(int ax) {
  return ax == AX_RC ? TILE_RC_O : ax == AX_RD ? TILE_RD_O : ax == AX_RY ? TILE_RY_O : TILE_RX_O;
}
__device__ constexpr int inner_extent(int ax) {
  return ax == AX_RC ? TILE_RC_I : ax == AX_RD ? TILE_RD_I : ax == AX_RY ? TILE_RY_I : TILE_RX_I;
}

/* A thread's block-local position along an axis (see the file comment). */
#define LOCAL(v, t, i, T, I) ((v) * ((T) * (I)) + (t) * (I) + (i))

#if CT_OUT != 0
/* The 8-bit output (low byte) of output channel k's corrected accumulator
 * v, rb the residual's byte at the same place (0 without one). */
__device__ __forceinline__ unsigned requant_lane(const int *__restrict__ params, int k, int v,
                                                 unsigned rb) {
  return ctq_requant_lane(params, 4 * CT_K4, k, v, rb, CT_QC, CT_OUT == 2, CT_RES, CT_ONNX);
}
#endif

/* The convolution of one block; the kernel below is its entry point (a
 * test template wraps it in an entry of its own: CT_CUSTOM_ENTRY). */
__device__ __forceinline__ void conv_dp4a_body(const int *__restrict__ data,
                                               const int4 *__restrict__ weights,
                                               void *__restrict__ out,
                                               const int *__restrict__ params,
                                               const void *__restrict__ residual) {
  extern __shared__ int4 smem[];
  int4 *w_sh = smem;                      /* [FB][RC_I][RD_I][RY_I][RX_I] */
  int *a_sh = (int *)(smem + W_ELEMS);    /* [NB][RC_I][WD][WH][WW] */

  /* Thread coordinates. fuse_yx = 1: the spatial thread axes (d, y, x) are
   * fused and fastest, so a warp spans output pixels along x (contiguous
   * data loads and output stores). fuse_yx = 0: the output-channel thread
   * axis is fastest, so a warp spans output channels (contiguous weight
   * reads, data values broadcast within the warp). */
  int t = threadIdx.x;
#if FUSE_YX
  const int tx = t % TILE_X_T; t /= TILE_X_T;
  const int ty = t % TILE_Y_T; t /= TILE_Y_T;
  const int td = t % TILE_D_T; t /= TILE_D_T;
  const int tf = t % TILE_F_T; t /= TILE_F_T;
  const int tn = t;
#else
  const int tf = t % TILE_F_T; t /= TILE_F_T;
  const int tx = t % TILE_X_T; t /= TILE_X_T;
  const int ty = t % TILE_Y_T; t /= TILE_Y_T;
  const int td = t % TILE_D_T; t /= TILE_D_T;
  const int tn = t;
#endif
  /* Block coordinates: x carries the fused spatial blocks, y the channel
   * chunks, z the batch (y and z are limited to 65535, x is not). */
  int b = blockIdx.x;
  const int bx = b % TILE_X_B; b /= TILE_X_B;
  const int by = b % TILE_Y_B;
  const int bd = b / TILE_Y_B;
  const int n0 = blockIdx.z * NB, f0 = blockIdx.y * FB;
  const int od0 = bd * DB, oh0 = by * YB, ow0 = bx * XB;

  int acc[AN][AF][AD][AY][AX][4];
#pragma unroll
  for (int an = 0; an < AN; an++)
#pragma unroll
    for (int af = 0; af < AF; af++)
#pragma unroll
      for (int ad = 0; ad < AD; ad++)
#pragma unroll
        for (int ay = 0; ay < AY; ay++)
#pragma unroll
          for (int ax = 0; ax < AX; ax++)
#pragma unroll
            for (int l = 0; l < 4; l++) acc[an][af][ad][ay][ax][l] = 0;
#if CT_WZP
  int xsum[AN][AD][AY][AX]; /* the raw data summed over each position's window */
#pragma unroll
  for (int an = 0; an < AN; an++)
#pragma unroll
    for (int ad = 0; ad < AD; ad++)
#pragma unroll
      for (int ay = 0; ay < AY; ay++)
#pragma unroll
        for (int ax = 0; ax < AX; ax++) xsum[an][ad][ay][ax] = 0;
#endif
#if CT_ZD
  const int pad_word = params[CTQ_PAD_WORD]; /* padding reads the zero point */
#else
  const int pad_word = 0;
#endif

#pragma unroll 1
  for (int o0 = 0; o0 < outer_extent(REORDER_0); o0++)
#pragma unroll 1
    for (int o1 = 0; o1 < outer_extent(REORDER_1); o1++)
#pragma unroll 1
      for (int o2 = 0; o2 < outer_extent(REORDER_2); o2++)
#pragma unroll 1
        for (int o3 = 0; o3 < outer_extent(REORDER_3); o3++) {
          int oi[4];
          oi[REORDER_0] = o0;
          oi[REORDER_1] = o1;
          oi[REORDER_2] = o2;
          oi[REORDER_3] = o3;
          const int rc0 = oi[AX_RC] * TILE_RC_I, rd0 = oi[AX_RD] * TILE_RD_I;
          const int ry0 = oi[AX_RY] * TILE_RY_I, rx0 = oi[AX_RX] * TILE_RX_I;

          __syncthreads(); /* the previous step is done with the tiles */
          UNROLL_LOAD
          for (int i = threadIdx.x; i < W_ELEMS; i += THREADS) {
            int r = i;
            const int rx = r % TILE_RX_I; r /= TILE_RX_I;
            const int ry = r % TILE_RY_I; r /= TILE_RY_I;
            const int rd = r % TILE_RD_I; r /= TILE_RD_I;
            const int rc = r % TILE_RC_I;
            const int f = r / TILE_RC_I;
            w_sh[i] = weights[(((((long)(f0 + f) * CT_C4 + rc0 + rc) * CT_KD + rd0 + rd) * CT_KH +
                                ry0 + ry) * CT_KW) + rx0 + rx];
          }
          /* The input window's origin: output origin * stride - pad + the
           * outer step's first kernel tap * dilation. */
          const int id0 = od0 * CT_STR_D - CT_PAD_D + rd0 * CT_DIL_D;
          const int ih0 = oh0 * CT_STR_H - CT_PAD_H + ry0 * CT_DIL_H;
          const int iw0 = ow0 * CT_STR_W - CT_PAD_W + rx0 * CT_DIL_W;
          UNROLL_LOAD
          for (int i = threadIdx.x; i < A_ELEMS; i += THREADS) {
            int r = i;
            const int x = r % WW; r /= WW;
            const int y = r % WH; r /= WH;
            const int z = r % WD; r /= WD;
            const int rc = r % TILE_RC_I;
            const int n = r / TILE_RC_I;
            const int id = id0 + z, ih = ih0 + y, iw = iw0 + x;
            int v = pad_word; /* padding */
            if (id >= 0 && id < CT_ID && ih >= 0 && ih < CT_IH && iw >= 0 && iw < CT_IW)
              v = data[((((long)(n0 + n) * CT_C4 + rc0 + rc) * CT_ID + id) * CT_IH + ih) * CT_IW + iw];
            a_sh[i] = v;
          }
          __syncthreads();

          UNROLL_INNER
          for (int i0 = 0; i0 < inner_extent(REORDER_0); i0++)
            UNROLL_INNER
            for (int i1 = 0; i1 < inner_extent(REORDER_1); i1++)
              UNROLL_INNER
              for (int i2 = 0; i2 < inner_extent(REORDER_2); i2++)
                UNROLL_INNER
                for (int i3 = 0; i3 < inner_extent(REORDER_3); i3++) {
                  int ii[4];
                  ii[REORDER_0] = i0;
                  ii[REORDER_1] = i1;
                  ii[REORDER_2] = i2;
                  ii[REORDER_3] = i3;
                  const int rc = ii[AX_RC], rd = ii[AX_RD], ry = ii[AX_RY], rx = ii[AX_RX];
                  int4 wv[AF];
#pragma unroll
                  for (int vf = 0; vf < TILE_F_V; vf++)
#pragma unroll
                    for (int fi = 0; fi < TILE_F_I; fi++) {
                      const int f = LOCAL(vf, tf, fi, TILE_F_T, TILE_F_I);
                      wv[vf * TILE_F_I + fi] =
                          w_sh[(((f * TILE_RC_I + rc) * TILE_RD_I + rd) * TILE_RY_I + ry) *
                                   TILE_RX_I + rx];
                    }
#pragma unroll
                  for (int an = 0; an < AN; an++)
#pragma unroll
                    for (int ad = 0; ad < AD; ad++)
#pragma unroll
                      for (int ay = 0; ay < AY; ay++)
#pragma unroll
                        for (int ax = 0; ax < AX; ax++) {
                          const int n = LOCAL(an / TILE_N_I, tn, an % TILE_N_I, TILE_N_T, TILE_N_I);
                          const int d = LOCAL(ad / TILE_D_I, td, ad % TILE_D_I, TILE_D_T, TILE_D_I);
                          const int y = LOCAL(ay / TILE_Y_I, ty, ay % TILE_Y_I, TILE_Y_T, TILE_Y_I);
                          const int x = LOCAL(ax / TILE_X_I, tx, ax % TILE_X_I, TILE_X_T, TILE_X_I);
                          const int a = a_sh[(((n * TILE_RC_I + rc) * WD + d * CT_STR_D + rd * CT_DIL_D) *
                                                  WH + y * CT_STR_H + ry * CT_DIL_H) * WW +
                                             x * CT_STR_W + rx * CT_DIL_W];
#if CT_WZP
                          xsum[an][ad][ay][ax] = dp4a_data(a, 0x01010101, xsum[an][ad][ay][ax]);
#endif
#pragma unroll
                          for (int af = 0; af < AF; af++) {
                            int *o = acc[an][af][ad][ay][ax];
                            o[0] = dp4a_data(a, wv[af].x, o[0]);
                            o[1] = dp4a_data(a, wv[af].y, o[1]);
                            o[2] = dp4a_data(a, wv[af].z, o[2]);
                            o[3] = dp4a_data(a, wv[af].w, o[3]);
                          }
                        }
                }
        }

  /* Store the register tile: per position, 4 output lanes through the
   * epilogue; one int4 (int32) or one int (8-bit) per position, or element
   * by element in depth_to_space order. */
#pragma unroll
  for (int an = 0; an < AN; an++)
#pragma unroll
    for (int af = 0; af < AF; af++)
#pragma unroll
      for (int ad = 0; ad < AD; ad++)
#pragma unroll
        for (int ay = 0; ay < AY; ay++)
#pragma unroll
          for (int ax = 0; ax < AX; ax++) {
            const int n = n0 + LOCAL(an / TILE_N_I, tn, an % TILE_N_I, TILE_N_T, TILE_N_I);
            const int f = f0 + LOCAL(af / TILE_F_I, tf, af % TILE_F_I, TILE_F_T, TILE_F_I);
            const int od = od0 + LOCAL(ad / TILE_D_I, td, ad % TILE_D_I, TILE_D_T, TILE_D_I);
            const int oh = oh0 + LOCAL(ay / TILE_Y_I, ty, ay % TILE_Y_I, TILE_Y_T, TILE_Y_I);
            const int ow = ow0 + LOCAL(ax / TILE_X_I, tx, ax % TILE_X_I, TILE_X_T, TILE_X_I);
            int v[4];
#pragma unroll
            for (int l = 0; l < 4; l++) {
              v[l] = acc[an][af][ad][ay][ax][l];
#if CT_OFF || CT_WZP
              const int k = f * 4 + l;
              v[l] = ctq_correct(v[l], CT_OFF ? params[CTQ_HEADER + CTQ_OFF * 4 * CT_K4 + k] : 0,
                                 CT_WZP ? params[CTQ_HEADER + CTQ_ZW * 4 * CT_K4 + k] : 0,
#if CT_WZP
                                 xsum[an][ad][ay][ax]
#else
                                 0
#endif
              );
#endif
            }
#if CT_D2S == 0
            const long pos = (((long)(n * CT_K4 + f) * CT_OD + od) * CT_OH + oh) * CT_OW + ow;
#if CT_OUT == 0
            ((int4 *)out)[pos] = make_int4(v[0], v[1], v[2], v[3]);
#else
            const unsigned rword = CT_RES ? ((const unsigned *)residual)[pos] : 0u;
            unsigned word = 0;
#pragma unroll
            for (int l = 0; l < 4; l++)
              word |= requant_lane(params, f * 4 + l, v[l], (rword >> (8 * l)) & 0xffu) << (8 * l);
            ((unsigned *)out)[pos] = word;
#endif
#else /* depth_to_space: each lane to its own place */
#define D2S_VOL (CT_D2S * CT_D2S * (CT_D2S_3D ? CT_D2S : 1))
#define D2S_BD (CT_D2S_3D ? CT_D2S : 1)
#define COUT4 ((CT_COUT + 3) / 4)
#pragma unroll
            for (int l = 0; l < 4; l++) {
              const int k = f * 4 + l;
              if (k >= CT_KR) continue; /* the padding lanes of K */
              int c, i_d, i_h, i_w;
              ctq_d2s(k, CT_COUT, CT_D2S, D2S_VOL, CT_D2S_CRD, &c, &i_d, &i_h, &i_w);
              const long e =
                  ((((long)(n * COUT4 + c / 4) * (CT_OD * D2S_BD) + od * D2S_BD + i_d) *
                        (CT_OH * CT_D2S) + oh * CT_D2S + i_h) * (CT_OW * CT_D2S) + ow * CT_D2S + i_w) * 4 +
                  c % 4;
#if CT_OUT == 0
              ((int *)out)[e] = v[l];
              if (CT_COUT % 4 && c == CT_COUT - 1) /* the output's padding lanes are zero */
                for (int z = CT_COUT % 4; z < 4; z++) ((int *)out)[e + z - c % 4] = 0;
#else
              const unsigned rb = CT_RES ? ((const unsigned char *)residual)[e] : 0u;
              ((unsigned char *)out)[e] = (unsigned char)requant_lane(params, k, v[l], rb);
              if (CT_COUT % 4 && c == CT_COUT - 1)
                for (int z = CT_COUT % 4; z < 4; z++) ((unsigned char *)out)[e + z - c % 4] = 0;
#endif
            }
#endif
          }
}

#ifndef CT_CUSTOM_ENTRY
extern "C" __global__ void __launch_bounds__(THREADS)
    conv_dp4a(const int *__restrict__ data, const int4 *__restrict__ weights, void *__restrict__ out,
              const int *__restrict__ params, const void *__restrict__ residual) {
  conv_dp4a_body(data, weights, out, params, residual);
}
#endif
