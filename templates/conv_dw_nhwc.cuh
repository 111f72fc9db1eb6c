/*
 * conv_dw_nhwc.cuh: the body of conv2d_nhwc_dw and conv3d_ndhwc_dw (conv2d
 * is the D = 1 case): depthwise int8 convolution, channels-last, the
 * multiply-adds on the FP32 pipe (128 FFMA/clk/SM where dp4a's int32 pipe
 * does 64, and a depthwise dp4a uses one byte lane of four).
 *
 * Exact in float: |x| <= 255 (raw int8 or uint8 data, padding reading the
 * data zero point), |w| <= 128, so a product is below 2^15 and a partial sum
 * of KVOL <= 128 taps below 2^22 (static_assert): every FFMA is exact, any
 * order gives the int32 sum, and acc + 1.5 * 2^23 has the sum in its low
 * mantissa bits (no F2I). The kernel accumulates raw data x weights as the
 * dp4a templates do; params' off[k] folds bias - zx * sum(w[k]) (quant.c, R
 * = kvol). A byte becomes a float with one PRMT and one FADD:
 * bits 0x4B0000bb = 2^23 + bb (signed data xor 0x80 first: bb = b + 128).
 *
 * Data NDHWC (C), weights OHWI [K][kvol] (depthwise: one input channel),
 * output NDHWC (K = M x C, channel k reads input channel k / M). A thread:
 * CHANS consecutive output channels (their filters preloaded as floats), ROWS
 * output rows x PIX columns of one depth; it loads each input row of its
 * window once (NIN bytes a pixel: one vector) and feeds every output that
 * uses it. A block: BLOCK_C x BLOCK_W x BLOCK_H threads, channels fastest
 * (coalesced NHWC rows). STAGING 1 (M | CHANS): the block's window, padding
 * included, is staged in shared memory first. Epilogue: tc_common.cuh's.
 *
 * MAC 1 (multiplier 1, no column dilation): the multiply-adds are dp4a
 * over 4 taps of one kernel row, 3 or 4 products an instruction where the
 * FP32 pipe does 1 and the grouped template's depthwise dp4a 1. A row's
 * pixels load as above (4 channels a word); each 4 x 4 block of bytes
 * (pixels x channels) is transposed by 8 PRMTs into 4 words of one
 * channel's consecutive pixels, and an output's taps kx .. kx + 3 are the
 * word at its column's offset (one PRMT of two words where it is not
 * 4-aligned), dotted with the filter row's bytes (zero past KW). Each
 * transposed and shifted word serves every output row that reads the
 * input row. The sums are int32 as the FP32 path's: the epilogue is the
 * same.
 *
 * DEPTHS (conv3d): a thread's outputs lie in DEPTHS consecutive output
 * planes; each input row of the union of their windows is loaded and
 * transposed once and feeds every plane and row whose taps read it (a
 * 3x3x3 layer at depths 1 loads each input row for 3 output planes, in 3
 * threads).
 *
 * The 8-bit epilogue's saturating form (RQ_SAT) leaves out the fast form's
 * borrow where the clamp's lower end is at or above the zero point (ReLU):
 * without it a value is still exact for v >= 0 (the borrow is 0) and at
 * most zy for v < 0 (the value is non-decreasing in v and zy at v = 0), so
 * max(y, lo) is lo either way (tests/test_quant.c checks it on the fast
 * form's cases). Two instructions an output of about seven.
 *
 * With onnx rounding and no residual, where the params' onnx block has
 * CTQO_SEED (read before the loop): the sums start from off + CTQ_MAGIC_I
 * and the epilogue takes RQ_ONNX_SAT or RQ_ONNX_SEED (tc_common.cuh's
 * requant2_onnx_seeded: an FADD for I2FP, a saturating pack for a PRMT,
 * and with CTQO_HISAT the clamp's max alone).
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_dw_nhwc.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

#include "conv_shape.cuh"
#include "tc_common.cuh"
#include "l2_prefetch.cuh"

/* the seeded onnx forms can apply (the params decide: oseed in the kernel) */
#define DW_OSEED (CT_ONNX && !CT_RES && CT_OUT != 0)

static_assert(CT_D2S == 0 && CT_WZP == 0, "depth_to_space and weight zero points: not here");
static_assert(DW_C > 0 && (DW_C + 3) / 4 == CT_C4, "DW_C must round up to 4 * CT_C4");
static_assert(DW_M >= 1 && CT_KR == DW_C * DW_M, "depthwise: K = M x C");
static_assert(CHANS == 4 || CHANS == 8 || CHANS == 16, "chans: 4, 8 or 16");
static_assert(PIX == 1 || PIX == 2 || PIX == 4 || PIX == 8, "pix: 1 to 8");
static_assert(ROWS >= 1 && ROWS <= 8, "rows: 1 to 8");
static_assert(MAC == 0 || MAC == 1, "mac: 0 (FP32 FFMA) or 1 (dp4a over taps)");
static_assert(MAC == 0 || (DW_M == 1 && CT_DIL_W == 1), "mac 1: multiplier 1, no column dilation");
static_assert(BLOCK_C >= 1 && BLOCK_C <= 32 && BLOCK_W >= 1 && BLOCK_W <= 32 && BLOCK_H >= 1 &&
                  BLOCK_H <= 8 && CT_THREADS % 32 == 0,
              "block_c, block_w: 1 to 32 threads; block_h: 1 to 8; whole warps");
static_assert(STAGING == 0 || STAGING == 1, "staging: 0 (direct) or 1 (shared memory)");
static_assert(BLOCKS_PER_SM >= 1 && BLOCKS_PER_SM <= 4, "blocks_per_sm: 1 to 4");
static_assert(CT_KR % CHANS == 0, "chans must divide K (one output vector a pixel)");
static_assert(DEPTHS >= 1 && DEPTHS <= 4 && (DEPTHS == 1 || CT_OD > 1), "depths: 1 to 4 (conv3d)");
static_assert(DEPTHS == 1 || STAGING == 0, "staging takes one output plane a thread");

#define KVOL (CT_KD * CT_KH * CT_KW)
static_assert(KVOL * 32640 < 4194304, "float sums exact and below 2^22: at most 128 taps");
/* how a thread's input bytes map to its channels: 0: CHANS % M == 0 (M = 1
 * the main case), byte j / M; 1: M % CHANS == 0, one byte; 2: else a byte
 * per channel, each loaded alone */
#define MODE    (CHANS % DW_M == 0 ? 0 : DW_M % CHANS == 0 ? 1 : 2)
#define NIN     (MODE == 0 ? CHANS / DW_M : MODE == 1 ? 1 : CHANS)
#define NW      ((NIN + 3) / 4)
#define SLOT(j) (MODE == 0 ? (j) / DW_M : MODE == 1 ? 0 : (j))
/* bytes a load: the widest power of two dividing NIN and C (alignment) */
__host__ __device__ constexpr int load_bytes() {
  int v = 16;
  while (v > 1 && (MODE == 2 || NIN % v || DW_C % v)) v /= 2;
  return v;
}
#define LV         (load_bytes())
#define THREADS    (BLOCK_C * BLOCK_W * BLOCK_H)
#define TILE_W     (BLOCK_W * PIX)
#define TILE_H     (BLOCK_H * ROWS)
#define WROW       ((PIX - 1) * CT_STR_W + (CT_KW - 1) * CT_DIL_W + 1) /* a thread's input columns */
#define HROW       ((ROWS - 1) * CT_STR_H + (CT_KH - 1) * CT_DIL_H + 1)   /* and rows */
#define WWW        ((TILE_W - 1) * CT_STR_W + (CT_KW - 1) * CT_DIL_W + 1) /* the block's */
#define WHH        ((TILE_H - 1) * CT_STR_H + (CT_KH - 1) * CT_DIL_H + 1)
#define CWB        (BLOCK_C * NIN)        /* staged bytes a pixel */
#define CWP        ((CWB + 15) / 16 * 16) /* padded to 16: vector reads stay aligned */
#define SMEM_BYTES (STAGING ? (long)CT_KD * WHH * WWW * CWP : 0L)
#define TWN        ((CT_OW + TILE_W - 1) / TILE_W)
#define THN        ((CT_OH + TILE_H - 1) / TILE_H)
#define TDN        ((CT_OD + DEPTHS - 1) / DEPTHS)
#define ZROW       ((DEPTHS - 1) * CT_STR_D + (CT_KD - 1) * CT_DIL_D + 1) /* a thread's input planes */

static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the block");
static_assert(SMEM_BYTES == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the tile");
static_assert(!STAGING || MODE == 0, "staging needs M to divide chans");

/* mac 1: a kernel row's filter words (4 taps each) and the words of one
 * channel's bytes along a row of the window that its outputs' taps read */
#define KWW ((CT_KW + 3) / 4)
#define XB  (((PIX - 1) * CT_STR_W + 3) / 4 + KWW)

/* Whether input row y / column x of a thread's window feeds a tap of one
 * of its outputs (dilation and stride leave gaps: those are never loaded). */
__host__ __device__ constexpr bool row_used(int y) {
  for (int r = 0; r < ROWS; r++) {
    const int d = y - r * CT_STR_H;
    if (d >= 0 && d % CT_DIL_H == 0 && d / CT_DIL_H < CT_KH) return true;
  }
  return false;
}
__host__ __device__ constexpr bool plane_used(int z) {
  for (int d = 0; d < DEPTHS; d++) {
    const int e = z - d * CT_STR_D;
    if (e >= 0 && e % CT_DIL_D == 0 && e / CT_DIL_D < CT_KD) return true;
  }
  return false;
}
__host__ __device__ constexpr bool col_used(int x) {
  for (int p = 0; p < PIX; p++) {
    const int d = x - p * CT_STR_W;
    if (d >= 0 && d % CT_DIL_W == 0 && d / CT_DIL_W < CT_KW) return true;
  }
  return false;
}

/* NIN bytes from p (global or shared) into x, LV bytes a piece. */
__device__ __forceinline__ void load_px(unsigned (&x)[NW], const unsigned char *p) {
#pragma unroll
  for (int i = 0; i < NW; i++) x[i] = 0;
#pragma unroll
  for (int o = 0; o < NIN; o += LV) {
    if (LV == 16) {
      const uint4 v = *(const uint4 *)(p + o);
      x[o / 4] = v.x, x[o / 4 + 1] = v.y, x[o / 4 + 2] = v.z, x[o / 4 + 3] = v.w;
    } else if (LV == 8) {
      const uint2 v = *(const uint2 *)(p + o);
      x[o / 4] = v.x, x[o / 4 + 1] = v.y;
    } else if (LV == 4) {
      x[o / 4] = *(const unsigned *)(p + o);
    } else if (LV == 2) {
      x[o / 4] |= (unsigned)*(const unsigned short *)(p + o) << (8 * (o % 4));
    } else {
      x[o / 4] |= (unsigned)p[o] << (8 * (o % 4));
    }
  }
}

/* Byte i of word x (already xor 0x80 for signed data) as the float
 * 2^23 + byte: one PRMT (0x4B is the float's top byte). */
__device__ __forceinline__ float byte_float(unsigned x, int i) {
  return __int_as_float((int)__byte_perm(x, 0x4B000000u, 0x7440u | (unsigned)i));
}
/* What byte_float adds: 2^23, and for signed data the xor's 128. */
#define BYTE_BIAS (CT_DATA_U8 ? 8388608.0f : 8388736.0f)
#define XFLIP     (CT_DATA_U8 ? 0u : 0x80808080u)

/* n (1 to 4) bytes of the byte stream w from byte e, the rest zero: one
 * PRMT of the two words they span (e and n constants once unrolled). */
template <int NWORDS>
__device__ __forceinline__ unsigned bytes_at(const unsigned (&w)[NWORDS], int e, int n) {
  const int s = e % 4;
  unsigned v;
  if (s == 0)
    v = w[e / 4];
  else if (s + n <= 4)
    v = w[e / 4] >> (8 * s);
  else
    v = __byte_perm(w[e / 4], w[e / 4 + 1 < NWORDS ? e / 4 + 1 : e / 4],
                    (unsigned)(s | (s + 1) << 4 | (s + 2) << 8 | (s + 3) << 12));
  return n >= 4 ? v : v & ((1u << (8 * n)) - 1u);
}

/* 4 words of 4 bytes (p_i's byte j: pixel i, channel j) transposed: c_j's
 * byte i is p_i's byte j. 8 PRMTs. */
__device__ __forceinline__ void transpose4(unsigned p0, unsigned p1, unsigned p2, unsigned p3,
                                           unsigned &c0, unsigned &c1, unsigned &c2, unsigned &c3) {
  const unsigned t0 = __byte_perm(p0, p1, 0x5140u), t1 = __byte_perm(p0, p1, 0x7362u);
  const unsigned t2 = __byte_perm(p2, p3, 0x5140u), t3 = __byte_perm(p2, p3, 0x7362u);
  c0 = __byte_perm(t0, t2, 0x5410u), c1 = __byte_perm(t0, t2, 0x7632u);
  c2 = __byte_perm(t1, t3, 0x5410u), c3 = __byte_perm(t1, t3, 0x7632u);
}

/* Whether plane d, row r, column p of a thread's tile (its first at od0,
 * oh0, ow0 of image n) lies in the layer, and then its output element at
 * channel k0 in o. */
__device__ __forceinline__ bool out_at(int n, int od0, int oh0, int ow0, int d, int r, int p,
                                       int k0, long &o) {
  const int od = od0 + d, oh = oh0 + r, ow = ow0 + p;
  if (od >= CT_OD || oh >= CT_OH || ow >= CT_OW) return false;
  const long m0 = ((long)n * CT_OD + od) * CT_OH; /* output row of (n, od, oh 0) */
  o = ((m0 + oh) * CT_OW + ow) * CT_KR + k0;
  return true;
}

#if CT_OUT != 0
/* ctq_fast_value by PTX's mad.wide.s32: ptxas builds the C form's signed
 * 64-bit product here from IMAD.WIDE.U32, two IMADs for the signs and two
 * moves of the addend (10 instructions with the borrow and shift, 7 here). */
template <bool NB> __device__ __forceinline__ int fast_value(const ctq_fast &f, int v) {
  long long p;
  asm("mad.wide.s32 %0, %1, %2, %3;" : "=l"(p) : "r"(v), "r"(f.m), "l"((long long)f.add));
  if (NB) return (int)(p >> 32) >> f.sh; /* lo >= zy: see the top */
  const unsigned borrow = ((unsigned)v & ~(unsigned)p) >> 31;
  return ((int)(p >> 32) - (int)borrow) >> f.sh;
}

/* The 8-bit epilogue of a thread's outputs (v: corrected sums), every pair
 * of channels in requant2's form RQ (RQ_SAT without the borrow where NB):
 * one branch a thread, so that the pixels' requantizations interleave (a
 * branch per pair fenced each). */
template <int RQ, bool NB>
__device__ __forceinline__ void store8(void *__restrict__ out, const void *__restrict__ residual,
                                       const q_head &qh, const q_chan (&qc)[CHANS],
                                       const int (&v)[DEPTHS][ROWS][PIX][CHANS], int n, int od0,
                                       int oh0, int ow0, int k0) {
#pragma unroll
  for (int d = 0; d < DEPTHS; d++)
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
      for (int p = 0; p < PIX; p++) {
        long o;
        if (!out_at(n, od0, oh0, ow0, d, r, p, k0, o)) continue;
        unsigned rb[CHANS / 4];
#pragma unroll
        for (int i = 0; i < CHANS / 4; i++) rb[i] = 0;
        if (CT_RES) {
          const unsigned char *rp = (const unsigned char *)residual + o;
          if (CHANS == 16) {
            const uint4 q = *(const uint4 *)rp;
            rb[0] = q.x, rb[CHANS > 4 ? 1 : 0] = q.y, rb[CHANS > 8 ? 2 : 0] = q.z,
            rb[CHANS > 8 ? 3 : 0] = q.w;
          } else if (CHANS == 8) {
            const uint2 q = *(const uint2 *)rp;
            rb[0] = q.x, rb[CHANS > 4 ? 1 : 0] = q.y;
          } else {
            rb[0] = *(const unsigned *)rp;
          }
        }
        /* pairs of channels: bytes 0, 1 of a requant2 word */
        unsigned half[CHANS / 2];
#pragma unroll
        for (int j = 0; j < CHANS; j += 2) {
#if CT_ONNX
          if (RQ == RQ_ONNX_SAT || RQ == RQ_ONNX_SEED) {
            half[j / 2] = requant2_onnx_seeded<RQ == RQ_ONNX_SEED>(
                qh, qc[j], qc[j + 1], v[d][r][p][j], v[d][r][p][j + 1]);
            continue;
          }
#endif
          if (RQ == RQ_SAT && !CT_ONNX) { /* requant2's RQ_SAT */
            const int y0 = fast_value<NB>(qc[j].f, v[d][r][p][j]),
                      y1 = fast_value<NB>(qc[j + 1].f, v[d][r][p][j + 1]);
            half[j / 2] = pack_sat2(y0 > qh.lo ? y0 : qh.lo, y1 > qh.lo ? y1 : qh.lo);
          } else {
            half[j / 2] = requant2<RQ>(qh, qc[j], qc[j + 1], v[d][r][p][j], v[d][r][p][j + 1],
                                       rb[j / 4] >> (8 * (j % 4)));
          }
        }
        unsigned w8[CHANS / 4];
#pragma unroll
        for (int i = 0; i < CHANS / 4; i++) w8[i] = join_halves(half[2 * i], half[2 * i + 1]);
        unsigned char *op = (unsigned char *)out + o;
        if (CHANS == 16)
          *(uint4 *)op = make_uint4(w8[0], w8[CHANS > 4 ? 1 : 0], w8[CHANS > 8 ? 2 : 0],
                                    w8[CHANS > 8 ? 3 : 0]);
        else if (CHANS == 8)
          *(uint2 *)op = make_uint2(w8[0], w8[CHANS > 4 ? 1 : 0]);
        else
          *(unsigned *)op = w8[0];
      }
}

#endif

/* load_chan of the CHANS channels from k0 (4-aligned, as the params
 * arrays are): 16-byte loads, a quarter of load_chan's 4-byte ones. */
__device__ __forceinline__ void load_chans(const int *__restrict__ params, const q_head &h, int k0,
                                           q_chan (&qc)[CHANS]) {
#pragma unroll
  for (int j = 0; j < CHANS; j += 4) {
    const int4 z = make_int4(0, 0, 0, 0);
    const int4 o4 = CT_OFF ? *(const int4 *)&params[CTQ_HEADER + CTQ_OFF * KP + k0 + j] : z;
    const int4 m4 = CT_QC ? *(const int4 *)&params[CTQ_HEADER + CTQ_MULTS * KP + k0 + j]
                          : make_int4(h.mult, h.mult, h.mult, h.mult);
    const int4 s4 = CT_QC ? *(const int4 *)&params[CTQ_HEADER + CTQ_SHIFTS * KP + k0 + j]
                          : make_int4(h.shift, h.shift, h.shift, h.shift);
    const int o[4] = {o4.x, o4.y, o4.z, o4.w}, m[4] = {m4.x, m4.y, m4.z, m4.w},
              sh[4] = {s4.x, s4.y, s4.z, s4.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
      q_chan &c = qc[j + i];
      c.off = o[i], c.zw = 0, c.mult = m[i], c.shift = sh[i];
#if CT_OUT != 0 && !CT_ONNX
      c.f = ctq_fast_make(c.mult, c.shift, h.zp, h.fast);
#else
      c.f = ctq_fast{0, 0, 0, 0};
#endif
    }
  }
}

/* ---- the kernel ---------------------------------------------------------- */
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    conv_dw_nhwc(const unsigned char *__restrict__ data, const unsigned char *__restrict__ weights,
                 void *__restrict__ out, const int *__restrict__ params,
                 const void *__restrict__ residual) {
#if STAGING
  extern __shared__ __align__(16) unsigned char smem_raw[];
#endif
  const int tid = threadIdx.x;
  const int tc = tid % BLOCK_C, txw = tid / BLOCK_C % BLOCK_W, tyh = tid / (BLOCK_C * BLOCK_W);
  const long bx = blockIdx.x;
  const int tw = (int)(bx % TWN), th = (int)(bx / TWN % THN),
            od0 = (int)(bx / ((long)TWN * THN) % TDN) * DEPTHS;
  const int n = (int)(bx / ((long)TWN * THN * TDN));
  const int k0b = blockIdx.y * (BLOCK_C * CHANS), k0 = k0b + tc * CHANS;
  const int oh0 = th * TILE_H + tyh * ROWS, ow0 = tw * TILE_W + txw * PIX;
  const int iz0 = od0 * CT_STR_D - CT_PAD_D, iy0 = oh0 * CT_STR_H - CT_PAD_H,
            ix0 = ow0 * CT_STR_W - CT_PAD_W;
  /* the filters and the params into L2 (l2_prefetch.cuh), by the first block */
  if (tid == 0 && bx == 0 && blockIdx.y == 0) {
    l2_prefetch(weights, (unsigned long long)CT_KR * KVOL);
    l2_prefetch(params, L2P_PARAMS_BYTES(CT_KR));
  }
  pdl_wait_then_release(); /* nothing global but prefetches before: the previous kernel may run */
#if DW_OSEED
  const int oflags = params[CTQ_ONNX + CTQO_FIRST]; /* the seeded onnx forms */
  const bool oseed = (oflags & CTQO_SEED) != 0;
#else
  const bool oseed = false;
#endif
#if CT_ZD
  const unsigned padw = (unsigned)params[CTQ_PAD_WORD];
#else
  const unsigned padw = 0;
#endif

#if STAGING
  {
    /* the block's window: KD depth taps x WHH x WWW pixels x CWB bytes */
    const int y0 = th * TILE_H * CT_STR_H - CT_PAD_H, x0 = tw * TILE_W * CT_STR_W - CT_PAD_W;
    const int cs = k0b / DW_M, upp = CWB / LV;
#pragma unroll 1
    for (int u = tid; u < CT_KD * WHH * WWW * upp; u += THREADS) {
      const int cu = u % upp, pix = u / upp;
      const int xx = pix % WWW, yy = pix / WWW % WHH, zz = pix / (WWW * WHH);
      const int iz = iz0 + zz * CT_DIL_D, iy = y0 + yy, ix = x0 + xx, c = cs + cu * LV;
      const bool in =
          iz >= 0 && iz < CT_ID && iy >= 0 && iy < CT_IH && ix >= 0 && ix < CT_IW && c < DW_C;
      const long src = in ? ((((long)n * CT_ID + iz) * CT_IH + iy) * CT_IW + ix) * DW_C + c : 0;
      unsigned char *dst = smem_raw + (long)pix * CWP + cu * LV;
      if (LV == 16)
        *(uint4 *)dst = in ? *(const uint4 *)(data + src) : make_uint4(padw, padw, padw, padw);
      else if (LV == 8)
        *(uint2 *)dst = in ? *(const uint2 *)(data + src) : make_uint2(padw, padw);
      else if (LV == 4)
        *(unsigned *)dst = in ? *(const unsigned *)(data + src) : padw;
      else if (LV == 2)
        *(unsigned short *)dst = in ? *(const unsigned short *)(data + src) : (unsigned short)padw;
      else
        *dst = in ? data[src] : (unsigned char)padw;
    }
    __syncthreads();
  }
#endif
  /* no barrier follows: a thread whose channels, rows or columns are all
   * past the layer's (the last tiles') stops here, and so does a warp of
   * them, where it ran the loop on padding before */
  if (k0 >= CT_KR || oh0 >= CT_OH || ow0 >= CT_OW) return;

  /* mode 2: each channel's input byte */
  int cin[MODE == 2 ? CHANS : 1];
#pragma unroll
  for (int j = 0; j < (MODE == 2 ? CHANS : 1); j++) cin[j] = (k0 + j) / DW_M;
  const int ci = k0 / DW_M; /* modes 0, 1: the first input channel */

#if MAC
  /* the thread's filters, CHANS x KVOL bytes from k0 x KVOL (4-aligned:
   * CHANS is), as 4-tap words of each kernel row */
  unsigned wq[CHANS][CT_KD * CT_KH][KWW];
  {
    const unsigned *wp = (const unsigned *)(weights + (long)k0 * KVOL);
    unsigned wraw[CHANS * KVOL / 4];
#pragma unroll
    for (int i = 0; i < CHANS * KVOL / 4; i++) wraw[i] = wp[i];
#pragma unroll
    for (int j = 0; j < CHANS; j++)
#pragma unroll
      for (int t = 0; t < CT_KD * CT_KH; t++)
#pragma unroll
        for (int a = 0; a < KWW; a++)
          wq[j][t][a] = bytes_at(wraw, (j * CT_KD * CT_KH + t) * CT_KW + 4 * a,
                                 CT_KW - 4 * a < 4 ? CT_KW - 4 * a : 4);
  }
  typedef int acc_t;
  /* the sums start at the folded offset (corrected(): acc + off[k]): one
   * 16-byte load of 4 channels' (the arrays are 16-byte aligned, k0 is
   * 4-aligned) where the epilogue added it to each output; plus
   * CTQ_MAGIC_I for the seeded onnx forms */
  const unsigned seed = oseed ? (unsigned)CTQ_MAGIC_I : 0u;
  int off0[CHANS];
#pragma unroll
  for (int j = 0; j < CHANS; j += 4) {
    const int4 o =
        CT_OFF ? *(const int4 *)&params[CTQ_HEADER + CTQ_OFF * KP + k0 + j] : make_int4(0, 0, 0, 0);
    off0[j] = (int)((unsigned)o.x + seed), off0[j + 1] = (int)((unsigned)o.y + seed),
    off0[j + 2] = (int)((unsigned)o.z + seed), off0[j + 3] = (int)((unsigned)o.w + seed);
  }
#else
  /* the thread's filters, CHANS x KVOL bytes from k0 x KVOL (4-aligned:
   * CHANS is), as floats */
  float wf[CHANS][KVOL];
  {
    const unsigned *wp = (const unsigned *)(weights + (long)k0 * KVOL);
#pragma unroll
    for (int i = 0; i < CHANS * KVOL / 4; i++) {
      const unsigned v = wp[i];
#pragma unroll
      for (int b = 0; b < 4; b++)
        wf[(4 * i + b) / KVOL][(4 * i + b) % KVOL] = (float)(signed char)(v >> (8 * b));
    }
  }
  typedef float acc_t;
#endif
  acc_t acc[DEPTHS][ROWS][PIX][CHANS]; /* mac 1: int32 sums from off[k]; 0: exact float sums */
#pragma unroll
  for (int d = 0; d < DEPTHS; d++)
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
      for (int p = 0; p < PIX; p++)
#pragma unroll
        for (int j = 0; j < CHANS; j++) {
#if MAC
          acc[d][r][p][j] = off0[j];
#else
          acc[d][r][p][j] = 0.0f;
#endif
        }

        /* input plane z of the thread's window (depths 1: z = tz x dil, the
         * staged window's plane tz) */
#pragma unroll
  for (int z = 0; z < ZROW; z++) {
    if (!plane_used(z)) continue;
    const int iz = iz0 + z;
    const bool inz = iz >= 0 && iz < CT_ID;
#pragma unroll
    for (int y = 0; y < HROW; y++) {
      if (!row_used(y)) continue;
      const int iy = iy0 + y;
      const bool iny = inz && iy >= 0 && iy < CT_IH;
      /* the row's pixels, loaded before any is used (loads in flight together) */
      unsigned xw[WROW][NW];
#if STAGING
      const unsigned char *rowp =
          smem_raw +
          ((long)(z / CT_DIL_D * WHH + tyh * ROWS * CT_STR_H + y) * WWW + txw * PIX * CT_STR_W) *
              CWP +
          tc * NIN;
#else
      const unsigned char *rowp = data + (((long)n * CT_ID + iz) * CT_IH + iy) * CT_IW * DW_C;
#endif
#pragma unroll
      for (int x = 0; x < WROW; x++) {
        if (!col_used(x)) continue;
#if STAGING
        load_px(xw[x], rowp + (long)x * CWP);
#else
        const int ix = ix0 + x;
        if (iny && ix >= 0 && ix < CT_IW) {
          const unsigned char *px = rowp + (long)ix * DW_C;
          if (MODE == 2) {
#pragma unroll
            for (int i = 0; i < NW; i++) xw[x][i] = 0;
#pragma unroll
            for (int j = 0; j < NIN; j++)
              xw[x][j / 4] |= (unsigned)px[cin[MODE == 2 ? j : 0]] << (8 * (j % 4));
          } else {
            load_px(xw[x], px + ci);
          }
        } else {
#pragma unroll
          for (int i = 0; i < NW; i++) xw[x][i] = padw;
        }
#endif
      }
      (void)iny;
#if MAC
      /* the row as CHANS byte streams along x (zeros past the window and
       * in the columns no output reads), then each output column's taps */
      unsigned xs[CHANS][XB];
#pragma unroll
      for (int i = 0; i < NW; i++)
#pragma unroll
        for (int q = 0; q < XB; q++) {
          unsigned pw[4];
#pragma unroll
          for (int b = 0; b < 4; b++)
            pw[b] = 4 * q + b < WROW && col_used(4 * q + b)
                        ? xw[4 * q + b < WROW ? 4 * q + b : 0][i]
                        : 0u;
          transpose4(pw[0], pw[1], pw[2], pw[3], xs[4 * i][q], xs[4 * i + 1][q], xs[4 * i + 2][q],
                     xs[4 * i + 3][q]);
        }
      unsigned xt[PIX][KWW][CHANS];
#pragma unroll
      for (int p = 0; p < PIX; p++)
#pragma unroll
        for (int a = 0; a < KWW; a++)
#pragma unroll
          for (int j = 0; j < CHANS; j++) xt[p][a][j] = bytes_at(xs[j], p * CT_STR_W + 4 * a, 4);
#pragma unroll
      for (int d = 0; d < DEPTHS; d++) {
        const int dz = z - d * CT_STR_D;
        if (dz < 0 || dz % CT_DIL_D || dz / CT_DIL_D >= CT_KD) continue;
        const int tz = dz / CT_DIL_D;
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
          const int dy = y - r * CT_STR_H;
          if (dy < 0 || dy % CT_DIL_H || dy / CT_DIL_H >= CT_KH) continue;
#pragma unroll
          for (int p = 0; p < PIX; p++)
#pragma unroll
            for (int a = 0; a < KWW; a++)
#pragma unroll
              for (int j = 0; j < CHANS; j++)
                acc[d][r][p][j] =
                    dp4a_data(xt[p][a][j], wq[j][tz * CT_KH + dy / CT_DIL_H][a], acc[d][r][p][j]);
        }
      }
#else
#pragma unroll
      for (int x = 0; x < WROW; x++) {
        if (!col_used(x)) continue;
        float xf[NIN];
#pragma unroll
        for (int i = 0; i < NW; i++) {
          const unsigned v = xw[x][i] ^ XFLIP;
#pragma unroll
          for (int b = 0; b < 4 && 4 * i + b < NIN; b++)
            xf[4 * i + b] = byte_float(v, b) - BYTE_BIAS; /* exact: both below 2^24 */
        }
#pragma unroll
        for (int d = 0; d < DEPTHS; d++) {
          const int dz = z - d * CT_STR_D;
          if (dz < 0 || dz % CT_DIL_D || dz / CT_DIL_D >= CT_KD) continue;
#pragma unroll
          for (int r = 0; r < ROWS; r++) {
            const int dy = y - r * CT_STR_H;
            if (dy < 0 || dy % CT_DIL_H || dy / CT_DIL_H >= CT_KH) continue;
#pragma unroll
            for (int p = 0; p < PIX; p++) {
              const int dx = x - p * CT_STR_W;
              if (dx < 0 || dx % CT_DIL_W || dx / CT_DIL_W >= CT_KW) continue;
              const int t = (dz / CT_DIL_D * CT_KH + dy / CT_DIL_H) * CT_KW + dx / CT_DIL_W;
#pragma unroll
              for (int j = 0; j < CHANS; j++)
                acc[d][r][p][j] = __fmaf_rn(xf[SLOT(j)], wf[j][t], acc[d][r][p][j]);
            }
          }
        }
      }
#endif
    }
  }

  /* ---- the epilogue ------------------------------------------------------ */
  /* acc + 1.5 x 2^23 holds the exact sum (|acc| < 2^22) at 0x4B400000 +
   * sum: the bias 0x4B400000 comes off with the folded offset, one IADD */
  const q_head qh = load_head(params);
  int v[DEPTHS][ROWS][PIX][CHANS];
  q_chan qc[CHANS];
  load_chans(params, qh, k0, qc);
#pragma unroll
  for (int j = 0; j < CHANS; j++) {
#if MAC
#pragma unroll
    for (int d = 0; d < DEPTHS; d++)
#pragma unroll
      for (int r = 0; r < ROWS; r++)
#pragma unroll
        for (int p = 0; p < PIX; p++)
          v[d][r][p][j] = acc[d][r][p][j]; /* corrected(): seeded with off */
#else
    /* corrected(): acc + off[k] (+ CTQ_MAGIC_I for the seeded onnx forms) */
    const unsigned off = (unsigned)qc[j].off - (oseed ? 0u : 0x4B400000u);
#pragma unroll
    for (int d = 0; d < DEPTHS; d++)
#pragma unroll
      for (int r = 0; r < ROWS; r++)
#pragma unroll
        for (int p = 0; p < PIX; p++)
          v[d][r][p][j] = (int)((unsigned)__float_as_int(acc[d][r][p][j] + 12582912.0f) + off);
#endif
  }
#if CT_OUT == 0
  (void)residual, (void)qh;
#pragma unroll
  for (int d = 0; d < DEPTHS; d++)
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
      for (int p = 0; p < PIX; p++) {
        long e;
        if (!out_at(n, od0, oh0, ow0, d, r, p, k0, e)) continue;
        int4 *o = (int4 *)((int *)out + e);
#pragma unroll
        for (int j = 0; j < CHANS; j += 4)
          o[j / 4] =
              make_int4(v[d][r][p][j], v[d][r][p][j + 1], v[d][r][p][j + 2], v[d][r][p][j + 3]);
      }
#else
  /* the fast forms where all the thread's channels take them; the
   * saturating one without the borrow where lo >= zy (the top) */
  bool fast = true;
#pragma unroll
  for (int j = 0; j < CHANS; j++) fast = fast && qc[j].f.ok;
#if DW_OSEED
  if (oseed && (oflags & CTQO_HISAT))
    store8<RQ_ONNX_SAT, false>(out, residual, qh, qc, v, n, od0, oh0, ow0, k0);
  else if (oseed)
    store8<RQ_ONNX_SEED, false>(out, residual, qh, qc, v, n, od0, oh0, ow0, k0);
  else
#endif
  if (fast && qh.sat && qh.lo >= qh.zp)
    store8<RQ_SAT, true>(out, residual, qh, qc, v, n, od0, oh0, ow0, k0);
  else if (fast && qh.sat)
    store8<RQ_SAT, false>(out, residual, qh, qc, v, n, od0, oh0, ow0, k0);
  else if (fast)
    store8<RQ_FAST, false>(out, residual, qh, qc, v, n, od0, oh0, ow0, k0);
  else
    store8<RQ_GENERAL, false>(out, residual, qh, qc, v, n, od0, oh0, ow0, k0);
#endif
}
