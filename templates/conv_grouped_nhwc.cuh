/*
 * conv_grouped_nhwc.cuh: the body of conv2d_nhwc_grouped and
 * conv3d_ndhwc_grouped (conv2d is the D = 1 case): channels-last int8
 * grouped and depthwise convolution on the CUDA cores, and the fallback of
 * every channels-last layer that no tensor-core template runs (G = 1).
 *
 * Data NDHWC, weights OHWI [K][kvol][C/G], output NDHWC, all unpadded, any
 * C and K. Output channel k is in group k / KPG and reads input channels
 * grp * CPG .. + CPG - 1. A block owns TILE_D x TILE_H x TILE_W output
 * pixels of one image by BLOCK_K output channels; a thread CHANS
 * consecutive channels of ROWS rows x PIX_W columns, so that each weight it
 * loads serves ROWS x PIX_W pixels. Depthwise (CPG = KPG = 1): a pixel's
 * CHANS input bytes are one vector load (VEC bytes a piece) and each
 * multiply-add one dp4a against a weight alone in its byte lane (no byte
 * extraction of the data). Otherwise: dp4a over 4 channels of the group,
 * the group's bytes in chunks of CCH (at most 32; zero weights past CPG).
 * STAGING 1: the block's input window (its halo included, padding reading
 * the data zero point) is staged in shared memory once, so each input
 * byte comes from DRAM once per block; 0: direct loads through L1.
 * The epilogue is tc_common.cuh's (bias, requantization, residual, onnx
 * rounding); depth_to_space is refused. Weight zero points (CT_WZP): the
 * kernel also sums the raw data of each window, per pixel and group (xsum:
 * the group's C/G channels over the taps, padding reading the data zero
 * point), and the epilogue takes acc + off[k] - zw[k] * xsum (quant.cuh;
 * R = C/G x kvol in off). Depthwise: one dp4a per channel against a 1 in
 * the channel's byte lane (as many as the products: the sum is the
 * channel's alone); else one dp4a per data word against 0x01010101, shared
 * by a thread's channels of one group. Without CT_WZP none of it compiles.
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_grouped_nhwc.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

#include "conv_shape.cuh"
#include "tc_common.cuh"

static_assert(CT_D2S == 0, "depth_to_space: the dp4a templates");
static_assert(GR_C > 0 && (GR_C + 3) / 4 == CT_C4, "GR_C must round up to 4 * CT_C4");
static_assert(GR_G >= 1 && GR_C % GR_G == 0 && CT_KR % GR_G == 0, "groups must divide C and K");
static_assert(TILE_W == 4 || TILE_W == 8 || TILE_W == 16 || TILE_W == 32 || TILE_W == 64,
              "tile_w: 4 to 64");
static_assert(TILE_H == 1 || TILE_H == 2 || TILE_H == 4 || TILE_H == 8 || TILE_H == 16,
              "tile_h: 1 to 16");
static_assert(TILE_D == 1 || TILE_D == 2 || TILE_D == 4, "tile_d: 1, 2 or 4");
static_assert(ROWS == 1 || ROWS == 2 || ROWS == 4, "rows: 1, 2 or 4");
static_assert(PIX_W == 1 || PIX_W == 2 || PIX_W == 4 || PIX_W == 8, "pix_w: 1 to 8");
static_assert(CHANS == 1 || CHANS == 2 || CHANS == 4 || CHANS == 8 || CHANS == 16, "chans: 1 to 16");
static_assert(VEC == 1 || VEC == 2 || VEC == 4 || VEC == 8 || VEC == 16, "vec: 1 to 16 bytes");
static_assert(STAGING == 0 || STAGING == 1, "staging: 0 (direct) or 1 (shared memory)");
static_assert(BLOCKS_PER_SM >= 1 && BLOCKS_PER_SM <= 4, "blocks_per_sm: 1 to 4");
#if !CT_TEMPLATE_CONV3D
static_assert(TILE_D == 1, "conv2d: tile_d is 1");
#endif

#define CPG (GR_C / GR_G)
#define KPG (CT_KR / GR_G)
#define DW_MODE (CPG == 1 && KPG == 1)
#define CPG4 ((CPG + 3) / 4 * 4)
#define CCH (DW_MODE ? 4 : CPG4 < 32 ? CPG4 : 32) /* bytes of the group per reduction chunk */
#define NCH (DW_MODE ? 1 : (CPG + CCH - 1) / CCH)
#define ONEG (KPG % CHANS == 0) /* a thread's channels share one group */
#define NVX (DW_MODE || ONEG ? 1 : CHANS)
#define NB (DW_MODE ? CHANS : CCH) /* bytes of one data vector */
#define NW ((NB + 3) / 4)
/* window sums (CT_WZP) per pixel: each channel's (depthwise), else one per data vector */
#define NXS (DW_MODE ? CHANS : NVX)
#define XI(j) (NXS == 1 ? 0 : (j))
#define KVOL (CT_KD * CT_KH * CT_KW)
#define TK (BLOCK_K / CHANS)
#define TWT (TILE_W / PIX_W)
#define THT (TILE_H / ROWS)
#define THREADS (TK * TWT * THT * TILE_D)
#define WDD ((TILE_D - 1) * CT_STR_D + (CT_KD - 1) * CT_DIL_D + 1)
#define WHH ((TILE_H - 1) * CT_STR_H + (CT_KH - 1) * CT_DIL_H + 1)
#define WWW ((TILE_W - 1) * CT_STR_W + (CT_KW - 1) * CT_DIL_W + 1)
/* groups one block's BLOCK_K channels can touch */
#define NGS_RAW ((BLOCK_K + KPG - 2) / KPG + 1)
#define NGS (NGS_RAW < GR_G ? NGS_RAW : GR_G)
#define CW (DW_MODE ? BLOCK_K : NGS * CPG) /* staged channels per pixel */
#define CWP ((CW + 15) / 16 * 16)
#define SMEM_BYTES (STAGING ? (long)WDD * WHH * WWW * CWP : 0L)
#define TWN ((CT_OW + TILE_W - 1) / TILE_W)
#define THN ((CT_OH + TILE_H - 1) / TILE_H)
#define TDN ((CT_OD + TILE_D - 1) / TILE_D)

static_assert(BLOCK_K % CHANS == 0 && TILE_W % PIX_W == 0 && TILE_H % ROWS == 0,
              "chans, pix_w and rows must divide block_k, tile_w and tile_h");
static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the tile");
static_assert(SMEM_BYTES == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the tile");
static_assert(GR_C % VEC == 0, "vec must divide C (pixel rows of whole vectors)");
static_assert(DW_MODE ? CHANS % VEC == 0 : (CCH % VEC == 0 && CPG % VEC == 0),
              "vec must divide the bytes a thread loads per pixel (depthwise: chans; else the group)");
static_assert(ROWS * PIX_W * CHANS <= 128, "accumulators: rows x pix_w x chans at most 128");

/* Channels per output store: the vector, within the thread's channels, dividing K. */
__host__ __device__ constexpr int store_vec() {
  int v = VEC < CHANS ? VEC : CHANS;
  while (CT_KR % v) v /= 2;
  return v;
}
#define STV (store_vec())
#define SVI (STV < 4 ? STV : 4) /* int32 output: at most 16 bytes a store */
/* an index clamped into the thread's channels / output words (for the
 * branches of a wider store that a narrower one never takes) */
#define CI(j) ((j) < CHANS ? (j) : CHANS - 1)
#define CW8(i) ((i) < (CHANS + 3) / 4 ? (i) : (CHANS + 3) / 4 - 1)

/* ---- loads -------------------------------------------------------------- */
/* NB bytes from p (global or shared) into x, in pieces of VEC bytes; the
 * pieces at or past lim bytes are zero (not read). */
__device__ __forceinline__ void load_vec(unsigned (&x)[NW], const unsigned char *p, int lim) {
#pragma unroll
  for (int i = 0; i < NW; i++) x[i] = 0;
#pragma unroll
  for (int o = 0; o < NB; o += VEC) {
    if (o >= lim) break;
    if (VEC == 16) {
      const uint4 v = *(const uint4 *)(p + o);
      x[o / 4] = v.x, x[o / 4 + 1] = v.y, x[o / 4 + 2] = v.z, x[o / 4 + 3] = v.w;
    } else if (VEC == 8) {
      const uint2 v = *(const uint2 *)(p + o);
      x[o / 4] = v.x, x[o / 4 + 1] = v.y;
    } else if (VEC == 4) {
      x[o / 4] = *(const unsigned *)(p + o);
    } else if (VEC == 2) {
      x[o / 4] |= (unsigned)*(const unsigned short *)(p + o) << (8 * (o % 4));
    } else {
      x[o / 4] |= (unsigned)p[o] << (8 * (o % 4));
    }
  }
}

/* VEC bytes global -> shared (the staging), or the pad byte in each. */
__device__ __forceinline__ void copy_piece(unsigned char *dst, const unsigned char *src, bool in,
                                           unsigned padw) {
  if (VEC == 16) {
    *(uint4 *)dst = in ? *(const uint4 *)src : make_uint4(padw, padw, padw, padw);
  } else if (VEC == 8) {
    *(uint2 *)dst = in ? *(const uint2 *)src : make_uint2(padw, padw);
  } else if (VEC == 4) {
    *(unsigned *)dst = in ? *(const unsigned *)src : padw;
  } else if (VEC == 2) {
    *(unsigned short *)dst = in ? *(const unsigned short *)src : (unsigned short)padw;
  } else {
    *dst = in ? *src : (unsigned char)padw;
  }
}

/* Weight word q (4 bytes of the group from chunk byte ci0 + 4 q) of output
 * channel k at tap t; zero past CPG. */
__device__ __forceinline__ unsigned weight_word(const unsigned char *__restrict__ w, int k, int t,
                                                int c) {
  const unsigned char *p = w + ((long)k * KVOL + t) * CPG + c;
  if (CPG % 4 == 0) return c < CPG ? *(const unsigned *)p : 0u;
  unsigned v = 0;
#pragma unroll
  for (int b = 0; b < 4; b++) v |= (c + b < CPG ? (unsigned)p[b] : 0u) << (8 * b);
  return v;
}

/* ---- the kernel ---------------------------------------------------------- */
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    conv_grouped_nhwc(const unsigned char *__restrict__ data,
                      const unsigned char *__restrict__ weights, void *__restrict__ out,
                      const int *__restrict__ params, const void *__restrict__ residual) {
#if STAGING
  extern __shared__ __align__(16) unsigned char smem_raw[];
#endif
  const int tid = threadIdx.x;
  const int ck = tid % TK, txw = tid / TK % TWT, tyh = tid / (TK * TWT) % THT,
            tzd = tid / (TK * TWT * THT);
  long bx = blockIdx.x;
  const int tw = (int)(bx % TWN), th = (int)(bx / TWN % THN), tdd = (int)(bx / ((long)TWN * THN) % TDN);
  const int n = (int)(bx / ((long)TWN * THN * TDN));
  const int k0b = blockIdx.y * BLOCK_K, k0 = k0b + ck * CHANS;
  const int od = tdd * TILE_D + tzd, oh0 = th * TILE_H + tyh * ROWS, ow0 = tw * TILE_W + txw * PIX_W;
  /* the first input channel of the block's staged window */
  const int cs = DW_MODE ? k0b : k0b / KPG * CPG;
  pdl_wait_then_release(); /* nothing global before: the previous kernel may still run */
#if CT_ZD
  const unsigned padw = (unsigned)params[CTQ_PAD_WORD];
#else
  const unsigned padw = 0;
#endif
  const q_head qh = load_head(params);

#if STAGING
  {
    const int z0 = tdd * TILE_D * CT_STR_D - CT_PAD_D, y0 = th * TILE_H * CT_STR_H - CT_PAD_H;
    const int x0 = tw * TILE_W * CT_STR_W - CT_PAD_W;
    const int upp = CW / VEC; /* pieces per pixel */
#pragma unroll 1
    for (int u = tid; u < WDD * WHH * WWW * upp; u += THREADS) {
      const int cu = u % upp, pix = u / upp;
      const int xx = pix % WWW, yy = pix / WWW % WHH, zz = pix / (WWW * WHH);
      const int iz = z0 + zz, iy = y0 + yy, ix = x0 + xx, c = cs + cu * VEC;
      const bool in = iz >= 0 && iz < CT_ID && iy >= 0 && iy < CT_IH && ix >= 0 && ix < CT_IW &&
                      c < GR_C;
      const long src = in ? (((long)n * CT_ID + iz) * CT_IH + iy) * CT_IW + ix : 0;
      copy_piece(smem_raw + (long)pix * CWP + cu * VEC, data + src * GR_C + (in ? c : 0), in, padw);
    }
    __syncthreads();
  }
#endif
  (void)cs;
  if (k0 >= CT_KR || od >= CT_OD) return; /* no barrier follows */

  /* the input channel of each data vector: depthwise k0; else the group's
   * first of channel k0 (+ v) (within K: a channel past it reads its last) */
  int cb[NVX];
#pragma unroll
  for (int v = 0; v < NVX; v++) {
    const int k = k0 + v < CT_KR ? k0 + v : CT_KR - 1;
    cb[v] = DW_MODE ? k0 : k / KPG * CPG;
  }

  int acc[ROWS][PIX_W][CHANS];
#pragma unroll
  for (int r = 0; r < ROWS; r++)
#pragma unroll
    for (int p = 0; p < PIX_W; p++)
#pragma unroll
      for (int j = 0; j < CHANS; j++) acc[r][p][j] = 0;
#if CT_WZP
  int xs[ROWS][PIX_W][NXS]; /* the raw data summed over each window (mod 2^32) */
#pragma unroll
  for (int r = 0; r < ROWS; r++)
#pragma unroll
    for (int p = 0; p < PIX_W; p++)
#pragma unroll
      for (int v = 0; v < NXS; v++) xs[r][p][v] = 0;
#endif

#pragma unroll 1
  for (int tz = 0; tz < CT_KD; tz++)
#pragma unroll 1
    for (int rh = 0; rh < CT_KH; rh++)
#pragma unroll 1
      for (int ch = 0; ch < NCH; ch++) {
        const int ci0 = ch * CCH;
#if CT_WZP
        /* a padded tap's words: the pad byte in the group's channels only
         * (xsum counts every byte; the weights past CPG are zero anyway) */
        unsigned padx[NW];
#pragma unroll
        for (int i = 0; i < NW; i++) {
          const int rem = DW_MODE ? 4 : CPG - ci0 - 4 * i;
          padx[i] = rem >= 4 ? padw : rem <= 0 ? 0u : padw & (0xffffffffu >> (8 * (4 - rem)));
        }
#endif
#pragma unroll
        for (int s = 0; s < CT_KW; s++) {
          const int t = (tz * CT_KH + rh) * CT_KW + s;
          /* the tap's weights: depthwise alone in their byte lane, else
           * words of 4 channels of the group */
          unsigned wq[CHANS][DW_MODE ? 1 : CCH / 4];
#pragma unroll
          for (int j = 0; j < CHANS; j++) {
            const int k = k0 + j;
            if (DW_MODE) {
              wq[j][0] = k < CT_KR ? (unsigned)weights[(long)k * KVOL + t] << (8 * (j % 4)) : 0u;
            } else {
#pragma unroll
              for (int q = 0; q < (DW_MODE ? 1 : CCH / 4); q++)
                wq[j][q] = k < CT_KR ? weight_word(weights, k, t, ci0 + 4 * q) : 0u;
            }
          }
#pragma unroll
          for (int r = 0; r < ROWS; r++)
#pragma unroll
            for (int p = 0; p < PIX_W; p++) {
#if STAGING
              const int sz = tzd * CT_STR_D + tz * CT_DIL_D;
              const int sy = (tyh * ROWS + r) * CT_STR_H + rh * CT_DIL_H;
              const int sx = (txw * PIX_W + p) * CT_STR_W + s * CT_DIL_W;
              const unsigned char *px = smem_raw + ((long)(sz * WHH + sy) * WWW + sx) * CWP - cs;
              const bool in = true;
#else
              const int iz = od * CT_STR_D - CT_PAD_D + tz * CT_DIL_D;
              const int iy = (oh0 + r) * CT_STR_H - CT_PAD_H + rh * CT_DIL_H;
              const int ix = (ow0 + p) * CT_STR_W - CT_PAD_W + s * CT_DIL_W;
              const bool in =
                  iz >= 0 && iz < CT_ID && iy >= 0 && iy < CT_IH && ix >= 0 && ix < CT_IW;
              const unsigned char *px =
                  data + (in ? ((((long)n * CT_ID + iz) * CT_IH + iy) * CT_IW + ix) * GR_C : 0);
#endif
#pragma unroll
              for (int v = 0; v < NVX; v++) {
                unsigned x[NW];
                /* bytes of the vector that exist: the channels below C
                 * (depthwise), the group's rest (else) */
                const int lim = DW_MODE ? GR_C - cb[v] : CPG - ci0;
                if (in) {
                  load_vec(x, px + cb[v] + (DW_MODE ? 0 : ci0), lim);
                } else {
#pragma unroll
                  for (int i = 0; i < NW; i++) {
#if CT_WZP
                    x[i] = padx[i];
#else
                    x[i] = padw;
#endif
                  }
                }
#if CT_WZP
                if (!DW_MODE) {
#pragma unroll
                  for (int q = 0; q < (DW_MODE ? 1 : CCH / 4); q++)
                    xs[r][p][v] = dp4a_data(x[DW_MODE ? 0 : q], 0x01010101u, xs[r][p][v]);
                }
#endif
#pragma unroll
                for (int jj = 0; jj < (NVX == 1 ? CHANS : 1); jj++) {
                  const int j = NVX == 1 ? jj : v;
                  if (DW_MODE) {
                    acc[r][p][j] = dp4a_data(x[j / 4], wq[j][0], acc[r][p][j]);
#if CT_WZP
                    xs[r][p][XI(j)] = dp4a_data(x[j / 4], 1u << (8 * (j % 4)), xs[r][p][XI(j)]);
#endif
                  } else {
#pragma unroll
                    for (int q = 0; q < (DW_MODE ? 1 : CCH / 4); q++)
                      acc[r][p][j] = dp4a_data(x[DW_MODE ? 0 : q], wq[j][q], acc[r][p][j]);
                  }
                }
              }
            }
        }
      }

  /* ---- the epilogue: per channel its params, then the pixels ---------- */
#if CT_WZP
#define XSUM(r, p, j) xs[r][p][XI(j)]
#else
#define XSUM(r, p, j) 0
#endif
  const long m0 = ((long)n * CT_OD + od) * CT_OH; /* output row index of (n, od, oh 0) */
#if CT_OUT == 0
  (void)residual, (void)qh;
#pragma unroll
  for (int j = 0; j < CHANS; j++) {
    const int k = k0 + j < CT_KR ? k0 + j : CT_KR - 1; /* params in range; not stored */
    const q_chan c = load_chan(params, qh, k);
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
      for (int p = 0; p < PIX_W; p++) acc[r][p][j] = corrected(c, acc[r][p][j], XSUM(r, p, j));
  }
#pragma unroll
  for (int r = 0; r < ROWS; r++)
#pragma unroll
    for (int p = 0; p < PIX_W; p++) {
      const int oh = oh0 + r, ow = ow0 + p;
      if (oh >= CT_OH || ow >= CT_OW) continue;
      int *o = (int *)out + ((m0 + oh) * CT_OW + ow) * CT_KR + k0;
      /* elements named by constant indices: a register array's address
       * would move it to local memory */
#pragma unroll
      for (int j = 0; j < CHANS; j += SVI) {
        if (k0 + j >= CT_KR) continue;
        if constexpr (SVI == 4)
          *(int4 *)(o + j) = make_int4(acc[r][p][j], acc[r][p][CI(j + 1)], acc[r][p][CI(j + 2)],
                                       acc[r][p][CI(j + 3)]);
        else if constexpr (SVI == 2)
          *(int2 *)(o + j) = make_int2(acc[r][p][j], acc[r][p][CI(j + 1)]);
        else
          o[j] = acc[r][p][j];
      }
    }
#else
  unsigned o8[ROWS][PIX_W][(CHANS + 3) / 4];
#pragma unroll
  for (int r = 0; r < ROWS; r++)
#pragma unroll
    for (int p = 0; p < PIX_W; p++)
#pragma unroll
      for (int i = 0; i < (CHANS + 3) / 4; i++) o8[r][p][i] = 0;
#pragma unroll
  for (int j = 0; j < CHANS; j++) {
    const bool okk = k0 + j < CT_KR;
    const int k = okk ? k0 + j : CT_KR - 1; /* params in range; not stored */
    const q_chan c = load_chan(params, qh, k);
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
      for (int p = 0; p < PIX_W; p++) {
        const int oh = oh0 + r, ow = ow0 + p;
        unsigned rb = 0;
        if (CT_RES && okk && oh < CT_OH && ow < CT_OW)
          rb = ((const unsigned char *)residual)[((m0 + oh) * CT_OW + ow) * CT_KR + k];
        o8[r][p][j / 4] |= requant(qh, c, corrected(c, acc[r][p][j], XSUM(r, p, j)), rb)
                           << (8 * (j % 4));
      }
  }
#pragma unroll
  for (int r = 0; r < ROWS; r++)
#pragma unroll
    for (int p = 0; p < PIX_W; p++) {
      const int oh = oh0 + r, ow = ow0 + p;
      if (oh >= CT_OH || ow >= CT_OW) continue;
      unsigned char *o = (unsigned char *)out + ((m0 + oh) * CT_OW + ow) * CT_KR + k0;
#pragma unroll
      for (int j = 0; j < CHANS; j += STV) {
        if (k0 + j >= CT_KR) continue;
        const int i = j / 4;
        if constexpr (STV == 16)
          *(uint4 *)(o + j) = make_uint4(o8[r][p][i], o8[r][p][CW8(i + 1)], o8[r][p][CW8(i + 2)],
                                         o8[r][p][CW8(i + 3)]);
        else if constexpr (STV == 8)
          *(uint2 *)(o + j) = make_uint2(o8[r][p][i], o8[r][p][CW8(i + 1)]);
        else if constexpr (STV == 4)
          *(unsigned *)(o + j) = o8[r][p][i];
        else if constexpr (STV == 2)
          *(unsigned short *)(o + j) = (unsigned short)(o8[r][p][i] >> (8 * (j % 4)));
        else
          o[j] = (unsigned char)(o8[r][p][i] >> (8 * (j % 4)));
      }
    }
#endif
}
