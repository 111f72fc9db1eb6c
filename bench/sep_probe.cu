/*
 * sep_probe.cu: a probe, not a template: a depthwise conv fused with the
 * pointwise conv that reads it (MobileNetV2's dw 3x3 -> project 1x1), to
 * measure what fusion would give before the workload, the tuner and the
 * dispatch learn it (bench/sep_probe.c runs it, docs/experiments.md has
 * the figures).
 *
 * conv_pw_mma's kernel (a block owns all K channels' weights in shared
 * memory and loops over tiles of BM consecutive output pixels, mma.sync
 * m16n8k32 on a tile of BM pixel rows x C bytes) with the tile's rows
 * computed instead of loaded: each thread takes 16 channels of a pixel,
 * sums the depthwise window (one dp4a a tap and channel: the data word
 * masked to the channel's byte against the weights' word), requantizes
 * the 16 sums with ONNX Runtime's rounding (quant.cuh) and stores the 16
 * bytes into the tile. The intermediate never leaves shared memory.
 *
 * Macros: the pointwise workload's, as conv_pw_mma.c sets them for
 * conv2d_nhwc_pw_mma (CT_*, PW_C, M_TILES, N_TILES = K / 8, N_PER_WARP,
 * WARPS_M, M_UNROLL), with CT_IH x CT_IW the depthwise conv's output; and
 * DW_IH, DW_IW (its input), DW_R (kernel, square), DW_S (stride), DW_P
 * (padding). int8 data, onnx rounding, no data zero point.
 */
#include "quant.cuh"
#include "conv_shape.cuh"
#include "tc_common.cuh"

static_assert(CT_ONNX && CT_OUT != 0 && CT_D2S == 0 && CT_WZP == 0 && !CT_ZD, "the probe's case");
static_assert(PW_C % 16 == 0 && CT_KR == 8 * N_TILES, "C a multiple of 16; one block takes all K");

#define CPAD    ((PW_C + 31) / 32 * 32)
#define KS      (CPAD / 32)
#define RS      (CPAD + 16)
#define BM      (16 * M_TILES)
#define BN      (8 * N_TILES)
#define WARPS_N (N_TILES / N_PER_WARP)
#define THREADS (32 * WARPS_N * WARPS_M)
#define OPS_OF(x, m)                                                                               \
  ((x) % (m) <= (m) / 2 ? (x) - (x) % (m) + (m) / 2 : (x) - (x) % (m) + 3 * (m) / 2)
#define OPS        OPS_OF(BN, 32)
#define TAPS       (DW_R * DW_R)
#define CG         (PW_C / 16) /* 16-channel groups of a pixel */
#define SB_BYTES   ((long)BN * RS)
#define SA_BYTES   ((long)BM * RS)
#define SR_BYTES   (CT_RES ? (long)BM * OPS : 0L)
#define SO_BYTES   ((long)BM * OPS)
#define SW_BYTES   ((long)TAPS * PW_C) /* the depthwise weights, [tap][c] */
#define SD_BYTES   ((long)PW_C * 8)    /* its per-channel offset and scale */
#define PROBE_SMEM (SB_BYTES + SA_BYTES + SR_BYTES + SO_BYTES + SW_BYTES + SD_BYTES)
#define M_TOTAL    ((long)CT_N * CT_OH * CT_OW)
#define TILES_M    ((M_TOTAL + BM - 1) / BM)

__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x2(unsigned addr, unsigned (&r)[2]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
}

#ifndef PROBE_MIN_BLOCKS
#define PROBE_MIN_BLOCKS 1
#endif
extern "C" __global__ void __launch_bounds__(THREADS, PROBE_MIN_BLOCKS)
    sep_probe(const unsigned char *__restrict__ data, const unsigned char *__restrict__ wdw,
              const unsigned char *__restrict__ wpw, unsigned char *__restrict__ out,
              const int *__restrict__ pdw, const int *__restrict__ ppw,
              const unsigned char *__restrict__ residual) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, q = lane % 4;
  const int wn = warp % WARPS_N, wm = warp / WARPS_N;
  const int kw = wn * N_PER_WARP * 8;
  unsigned char *sa_p = smem_raw + SB_BYTES, *sr = sa_p + SA_BYTES, *so = sr + SR_BYTES;
  unsigned char *sw = so + SO_BYTES;
  int *soff = (int *)(sw + SW_BYTES);
  float *sscale = (float *)(soff + PW_C);
  const unsigned sb = smem_addr(smem_raw), sa = smem_addr(sa_p);

  /* the pointwise weights, BN rows of RS bytes (zero past C) */
  for (int u = tid; u < BN * (RS / 4); u += THREADS) {
    const int n = u / (RS / 4), c = (u - n * (RS / 4)) * 4;
    *(unsigned *)(smem_raw + n * RS + c) =
        c < PW_C ? *(const unsigned *)(wpw + (long)n * PW_C + c) : 0u;
  }
  /* the depthwise weights, OHWI [c][tap] -> [tap][c], and each channel's
   * offset (bias) and float scale from its params block */
  const int kpd = (PW_C + 3) / 4 * 4;
  for (int u = tid; u < TAPS * PW_C; u += THREADS) {
    const int c = u / TAPS, t = u - c * TAPS;
    sw[t * PW_C + c] = wdw[u];
  }
  for (int c = tid; c < PW_C; c += THREADS) {
    soff[c] = pdw[CTQ_HEADER + CTQ_OFF * kpd + c];
    sscale[c] = __int_as_float(pdw[CTQ_HEADER + CTQ_MULTS * kpd + c]);
  }
  const ctq_onnx od = ctq_onnx_load(pdw + CTQ_ONNX, pdw[CTQ_LO], pdw[CTQ_HI]);
  const q_head qh = load_head(ppw);
  q_chan c0[N_PER_WARP], c1[N_PER_WARP];
#pragma unroll
  for (int j = 0; j < N_PER_WARP; j++) load_chan2(ppw, qh, kw + 8 * j + 2 * q, c0[j], c1[j]);
  __syncthreads();

  const unsigned arow = (unsigned)(lane % 16 * RS + 16 * (lane / 16));
  const unsigned bofs = sb + (unsigned)((kw + lane % 8) * RS + 16 * (lane / 8 % 2));
  const unsigned oslot = (unsigned)g * OPS + (unsigned)(kw + 2 * q);

#pragma unroll 1
  for (long t = blockIdx.x; t < TILES_M; t += gridDim.x) {
    const long m0 = t * BM;
    const int left = M_TOTAL - m0 < BM ? (int)(M_TOTAL - m0) : BM;
    /* ---- the tile's rows: the depthwise conv of 16 channels a thread ---- */
#pragma unroll 1
    for (int u = tid; u < left * CG; u += THREADS) {
      const int r = u / CG, c0g = (u - r * CG) * 16;
      const long m = m0 + r;
      const int ow = (int)(m % CT_OW), oh = (int)(m / CT_OW % CT_OH),
                n = (int)(m / (CT_OW * CT_OH));
      int acc[16];
#pragma unroll
      for (int i = 0; i < 16; i++) acc[i] = soff[c0g + i];
      /* every tap's 16 bytes loaded before any is used (zero outside the
       * input: no data zero point), so that the loads are in flight together */
      uint4 xv[TAPS];
#pragma unroll
      for (int ky = 0; ky < DW_R; ky++)
#pragma unroll
        for (int kx = 0; kx < DW_R; kx++) {
          const int ih = oh * DW_S - DW_P + ky, iw = ow * DW_S - DW_P + kx;
          xv[ky * DW_R + kx] =
              ih >= 0 && ih < DW_IH && iw >= 0 && iw < DW_IW
                  ? __ldg(
                        (const uint4 *)(data + (((long)n * DW_IH + ih) * DW_IW + iw) * PW_C + c0g))
                  : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
      for (int ky = 0; ky < DW_R; ky++) {
#pragma unroll
        for (int kx = 0; kx < DW_R; kx++) {
          const uint4 x = xv[ky * DW_R + kx];
          const uint4 w = *(const uint4 *)(sw + (ky * DW_R + kx) * PW_C + c0g);
          const unsigned xs[4] = {x.x, x.y, x.z, x.w}, ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
          for (int i = 0; i < 4; i++)
#pragma unroll
            for (int l = 0; l < 4; l++)
              acc[4 * i + l] =
                  __dp4a((int)(xs[i] & (0xffu << (8 * l))), (int)ws[i], acc[4 * i + l]);
        }
      }
      unsigned y[4];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        unsigned v = 0;
#pragma unroll
        for (int l = 0; l < 4; l++)
          v |=
              (ctq_requant_onnx_word(acc[4 * i + l], sscale[c0g + 4 * i + l], &od, 0, 0.0f) & 0xffu)
              << (8 * l);
        y[i] = v;
      }
      *(uint4 *)(sa_p + r * RS + c0g) = make_uint4(y[0], y[1], y[2], y[3]);
    }
#if CT_RES
    for (int u = tid; u < left * (BN / 8); u += THREADS) {
      const int r = u / (BN / 8), p = u - r * (BN / 8);
      *(uint2 *)(sr + r * OPS + 8 * p) = *(const uint2 *)(residual + (m0 + r) * CT_KR + 8 * p);
    }
#else
    (void)residual;
#endif
    __syncthreads();

    /* ---- the mma and each m-tile's epilogue (conv_pw_mma's) ---- */
#pragma unroll 1
    for (int mb = wm * M_UNROLL; mb < M_TILES; mb += WARPS_M * M_UNROLL) {
      int acc[M_UNROLL][N_PER_WARP][4];
#pragma unroll
      for (int u = 0; u < M_UNROLL; u++)
#pragma unroll
        for (int j = 0; j < N_PER_WARP; j++)
          acc[u][j][0] = acc[u][j][2] = c0[j].off, acc[u][j][1] = acc[u][j][3] = c1[j].off;
#pragma unroll
      for (int s = 0; s < KS; s++)
#pragma unroll
        for (int u = 0; u < M_UNROLL; u++) {
          unsigned a[4];
          ldsm_x4(sa + (unsigned)((mb + u) * 16 * RS) + arow + 32u * s, a);
#pragma unroll
          for (int j = 0; j < N_PER_WARP; j++) {
            unsigned bb[2];
            ldsm_x2(bofs + (unsigned)(8 * j * RS + 32 * s), bb);
            mma16832(acc[u][j], a, bb);
          }
        }
      q_chan l0[N_PER_WARP], l1[N_PER_WARP];
#pragma unroll
      for (int j = 0; j < N_PER_WARP; j++) l0[j] = opaque_chan(c0[j]), l1[j] = opaque_chan(c1[j]);
#pragma unroll
      for (int u = 0; u < M_UNROLL; u++) {
        const unsigned mt = (unsigned)(mb + u);
#pragma unroll
        for (int j = 0; j < N_PER_WARP; j++) {
          unsigned char *o0 = so + mt * 16u * OPS + oslot + 8 * j, *o1 = o0 + 8 * OPS;
          unsigned rr[2] = {0, 0};
#if CT_RES
          const unsigned char *rp = sr + (mt * 16u + (unsigned)g) * OPS + (kw + 8 * j + 2 * q);
          rr[0] = *(const unsigned short *)rp;
          rr[1] = *(const unsigned short *)(rp + 8 * OPS);
#endif
          unsigned y0, y1;
          requant2_rows(qh, l0[j], l1[j], acc[u][j][0], acc[u][j][1], acc[u][j][2], acc[u][j][3],
                        rr, y0, y1);
          *(unsigned short *)o0 = (unsigned short)y0;
          *(unsigned short *)o1 = (unsigned short)y1;
        }
      }
    }
    __syncthreads();
    /* ---- the output tile, whole rows, 8 bytes at a time ---- */
    for (int u = tid; u < left * (BN / 8); u += THREADS) {
      const int r = u / (BN / 8), p = u - r * (BN / 8);
      *(uint2 *)(out + (m0 + r) * CT_KR + 8 * p) = *(const uint2 *)(so + r * OPS + 8 * p);
    }
    __syncthreads();
  }
}
