/*
 * conv_pwdw.cuh: the body of conv2d_nhwc_pwdw: a pointwise convolution
 * fused into the depthwise convolution it feeds (an inverted residual
 * block's expansion and its depthwise conv, MobileNetV2 and EfficientNet),
 * channels-last, int8. The workload is the depthwise conv's with pre_c:
 * the data holds PRE_C channels; their 1x1 conv into C channels,
 * requantized by the pointwise conv's own epilogue (params' second block),
 * is the depthwise conv's input. That tensor (the largest of the block)
 * never leaves shared memory, and the two convs are one launch.
 *
 * A block: a tile of TILE_H x TILE_W output pixels of one image, CB = 8 x
 * CB8 of the C channels (grid y). Per block:
 *   1. the window's pixels (HH x WW, the tile's taps' extent), PRE_C bytes
 *      each, into a pixel-row tile A by cp.async (pixels outside the image
 *      are not loaded: their values are replaced in step 3);
 *   2. the pointwise conv of the window on mma.sync m16n8k32: A (pixels x
 *      PRE_C) times the block's CB rows of the pointwise weights (B, in
 *      shared memory for the block), requantized (tc_common.cuh, the second
 *      params block) into E, one plane of bytes per channel (HH rows of PR
 *      bytes: a channel's consecutive pixels are consecutive bytes, the
 *      order dp4a wants). An m-tile's rows g and g + 8 are two adjacent
 *      pixels of a row (ldmatrix takes any row address), so a thread's two
 *      rows of a channel are one 2-byte store;
 *   3. pixels outside the image are the depthwise conv's padding: they
 *      take its data zero point (params' pad word), by a mask per m-tile
 *      computed once (an LOP3 a store);
 *   4. the depthwise conv from E: a thread takes 4 consecutive channels x
 *      PIXT consecutive output pixels of a row, loads each kernel row's
 *      bytes of each channel as words (PIXT x stride a multiple of 4: the
 *      words are aligned), and sums an output's kernel row with one dp4a
 *      (bytes_at: a PRMT where the taps straddle two words); then the
 *      depthwise conv's epilogue and one 4-byte store a pixel (4 channels),
 *      threads along channels first: coalesced.
 * Exact: the sums are int32 as the two convs' (the pointwise conv's from
 * its folded offset, bias - zx sum(w)); the requantizations are
 * tc_common.cuh's, the same code as the separate kernels'.
 *
 * Macros (conv_pwdw.c): PRE_C, PRE_U8 (the pointwise conv's data is
 * uint8), PRE_OFFW and PRE_WOFFW (words to its params block and weights),
 * the knobs TILE_H, TILE_W, CB8, WARPS, PIXT, BLOCKS_PER_SM, and
 * CT_THREADS, CT_SMEM_BYTES.
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_pwdw.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

#include "conv_shape.cuh"
#include "tc_common.cuh"
#include "l2_prefetch.cuh"

static_assert(CT_TEMPLATE_CONV3D == 0, "conv2d only");
static_assert(CT_D2S == 0 && CT_WZP == 0 && CT_RES == 0,
              "depth_to_space, weight zero points and a residual: not here");
static_assert(CT_OUT != 0, "8-bit output (the pointwise conv's output type is the same)");
static_assert(CT_KR == 4 * CT_C4, "depthwise, multiplier 1: K = C, a multiple of 4");
static_assert(CT_KR % 8 == 0, "C a multiple of 8 (mma n-tiles of 8 channels)");
static_assert(PRE_C > 0 && PRE_C % 8 == 0, "PRE_C a multiple of 8 (8-byte pieces)");
static_assert(CT_DIL_H == 1 && CT_DIL_W == 1, "no dilation");
static_assert(CT_KW <= 8, "kernel width at most 8 (two words a kernel row)");
static_assert(CB8 >= 1 && CB8 <= 16 && CT_KR % (8 * CB8) == 0, "cb8 x 8 divides C");
static_assert(WARPS >= 1 && WARPS <= 16, "warps: 1 to 16");
static_assert(PIXT == 2 || PIXT == 4 || PIXT == 8, "pixt: 2, 4 or 8");
static_assert((PIXT * CT_STR_W) % 4 == 0, "pixt x stride a multiple of 4: aligned words");
static_assert(TILE_W % PIXT == 0, "pixt divides tile_w");
static_assert(BLOCKS_PER_SM >= 1 && BLOCKS_PER_SM <= 8, "blocks_per_sm: 1 to 8");

#define THREADS (32 * WARPS)
#define CB      (8 * CB8)
#define CPAD    ((PRE_C + 31) / 32 * 32)
#define KS      (CPAD / 32)
#define RSA                                                                                        \
  (CPAD + 16) /* A's and B's row stride: RSA / 16 odd, ldmatrix's rows on distinct banks */
#define HH     ((TILE_H - 1) * CT_STR_H + CT_KH) /* the window */
#define WW     ((TILE_W - 1) * CT_STR_W + CT_KW)
#define WWP    ((WW + 1) / 2 * 2) /* even: a pixel pair never straddles two rows */
#define NPIX   (HH * WWP)
#define MTILES ((NPIX + 15) / 16)
#define MPW    ((MTILES + WARPS - 1) / WARPS) /* m-tiles a warp, at most */
/* a thread's words of a kernel row's bytes, and E's row pitch: past the
 * window for the last thread's words (their bytes past the taps are
 * masked) */
#define XW   (((PIXT - 1) * CT_STR_W + CT_KW + 3) / 4)
#define PRB0 ((TILE_W - PIXT) * CT_STR_W + 4 * XW)
#define PR   (((PRB0 > WWP ? PRB0 : WWP) + 3) / 4 * 4)
/* a plane's stride in words, odd: the 8 channel groups a warp reads at once
 * fall on distinct banks */
#define PSW0     ((HH * PR + 3) / 4)
#define PSW      (PSW0 % 2 ? PSW0 : PSW0 + 1)
#define PS       (4 * PSW)
#define SA_BYTES ((long)MTILES * 16 * RSA)
#define SB_BYTES ((long)CB * RSA)
#define SE_BYTES ((long)CB * PS)
/* the block's channels' constants: both convs' offsets, multipliers and
 * shifts (6 x CB ints), then the depthwise filters (CB x KVOL bytes) */
#define SC_BYTES   (24L * CB + ((long)CB * KVOL + 15) / 16 * 16)
#define SMEM_BYTES (SA_BYTES + SB_BYTES + SE_BYTES + SC_BYTES)
#define APIECE     (PRE_C % 16 == 0 ? 16 : 8)
#define PPR        (PRE_C / APIECE)
#define TWN        ((CT_OW + TILE_W - 1) / TILE_W)
#define THN        ((CT_OH + TILE_H - 1) / TILE_H)
#define KWW        ((CT_KW + 3) / 4)
#define KVOL       (CT_KH * CT_KW)

static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the block");
static_assert(SMEM_BYTES == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the tile");

/* Written here again, not shared: the ldmatrix wrappers are
 * conv_pw_mma.cuh's, pwdw_bytes is conv_dw_nhwc.cuh's bytes_at and pre_mma
 * tc_common.cuh's mma16832 with the pointwise conv's data type. A
 * template's version hashes the headers it includes, so moving them into
 * one would retire every tuned record of those families for no change in
 * their code; they move with the next change to those kernels.
 *
 * ldmatrix: lane (g, q) gets row g's bytes 4q .. 4q + 3 of each 8x8
 * matrix, in mma.sync's register order. */
__device__ __forceinline__ void pwdw_ldsm_x4(unsigned addr, unsigned (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void pwdw_ldsm_x2(unsigned addr, unsigned (&r)[2]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
}

/* mma.sync m16n8k32 with the pointwise conv's data type (PRE_U8), which
 * may differ from the depthwise conv's (CT_DATA_U8, mma16832's). */
__device__ __forceinline__ void pre_mma(int *d, const unsigned *a, const unsigned *b) {
#if PRE_U8
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
#else
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
#endif
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* The block's channels' constants in shared memory (sc: 6 arrays of CB
 * ints: the pointwise conv's offsets, multipliers, shifts, then the
 * depthwise conv's), from params block p with head h: the offsets always
 * (a conv without bias or zero point has zeros there), a per-tensor scale
 * repeated. */
__device__ __forceinline__ void stage_chans(int *sc, const int *__restrict__ p, const q_head &h,
                                            int cb0, int tid) {
  for (int u = tid; u < CB; u += THREADS) {
    const int k = cb0 + u;
    sc[u] = p[CTQ_HEADER + CTQ_OFF * KP + k];
    sc[CB + u] = CT_QC ? p[CTQ_HEADER + CTQ_MULTS * KP + k] : h.mult;
    sc[2 * CB + u] = CT_QC ? p[CTQ_HEADER + CTQ_SHIFTS * KP + k] : h.shift;
  }
}

/* Channel u of the block (sc as stage_chans wrote it), its
 * requantization precomputed as load_chan's. */
__device__ __forceinline__ q_chan chan_at(const int *sc, const q_head &h, int u) {
  q_chan c;
  c.off = sc[u], c.zw = 0, c.mult = sc[CB + u], c.shift = sc[2 * CB + u];
#if !CT_ONNX
  c.f = ctq_fast_make(c.mult, c.shift, h.zp, h.fast);
#else
  c.f = ctq_fast{0, 0, 0, 0};
#endif
  return c;
}

/* n (1 to 4) bytes of the byte stream w from byte e (a constant once
 * unrolled), the rest zero: one PRMT where they span two words. */
template <int NWORDS>
__device__ __forceinline__ unsigned pwdw_bytes(const unsigned (&w)[NWORDS], int e, int n) {
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

/* The depthwise conv's 8-bit outputs of a thread's PIXT pixels x 4
 * channels (v: sums from the folded offset), each pair in requant2's form
 * RQ; a pixel's 4 bytes one store. */
template <int RQ>
__device__ __forceinline__ void pwdw_store(unsigned char *__restrict__ out, const q_head &qh,
                                           const q_chan (&qc)[4], const int (&v)[PIXT][4], long o0,
                                           int ow0) {
#pragma unroll
  for (int p = 0; p < PIXT; p++) {
    if (ow0 + p >= CT_OW) continue;
    const unsigned lo = requant2<RQ>(qh, qc[0], qc[1], v[p][0], v[p][1], 0u);
    const unsigned hi = requant2<RQ>(qh, qc[2], qc[3], v[p][2], v[p][3], 0u);
    *(unsigned *)(out + o0 + (long)p * CT_KR) = join_halves(lo, hi);
  }
}

/* ---- the kernel ---------------------------------------------------------- */
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    conv_pwdw(const unsigned char *__restrict__ data, const unsigned char *__restrict__ weights,
              void *__restrict__ out, const int *__restrict__ params,
              const void *__restrict__ residual) {
  (void)residual;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, q = lane % 4;
  const long bx = blockIdx.x;
  const int tw = (int)(bx % TWN), th = (int)(bx / TWN % THN), n = (int)(bx / ((long)TWN * THN));
  const int cb0 = blockIdx.y * CB; /* the block's first channel */
  const int oh0 = th * TILE_H, ow0 = tw * TILE_W;
  const int iy0 = oh0 * CT_STR_H - CT_PAD_H, ix0 = ow0 * CT_STR_W - CT_PAD_W;
  unsigned char *se = smem_raw + SA_BYTES + SB_BYTES;
  int *sc_pre = (int *)(se + SE_BYTES), *sc_dw = sc_pre + 3 * CB; /* the channels' constants */
  unsigned char *sf = (unsigned char *)(sc_pre + 6 * CB);         /* the depthwise filters */
  const unsigned sa = smem_addr(smem_raw), sb = sa + (unsigned)SA_BYTES;
  const int *__restrict__ pre = params + PRE_OFFW;

  /* the filters and the params into L2, by the first block */
  if (tid == 0 && bx == 0 && blockIdx.y == 0) {
    l2_prefetch(weights, (unsigned long long)CT_KR * KVOL);
    l2_prefetch(params, 4ull * (PRE_WOFFW + (unsigned long long)CT_KR * CPAD / 4));
  }
  /* constants, read before the wait (cp.async: every load in flight at
   * once): B, the block's CB rows of the pointwise weights, CPAD bytes each
   * (zero past PRE_C in the params); the depthwise filters, CB x KVOL bytes
   * from cb0 x KVOL (4-aligned: CB is a multiple of 8); both convs' heads
   * and their channels' constants */
  {
    const unsigned char *wp = (const unsigned char *)(params + PRE_WOFFW) + (long)cb0 * CPAD;
    for (int u = tid; u < CB * (CPAD / 16); u += THREADS) {
      const int r = u / (CPAD / 16), c = (u - r * (CPAD / 16)) * 16;
      cp_async16(sb + (unsigned)(r * RSA + c), wp + (long)r * CPAD + c, 16);
    }
    const unsigned char *fp = weights + (long)cb0 * KVOL;
    const unsigned sfa = smem_addr(sf);
    for (int u = tid; u < CB * KVOL / 4; u += THREADS)
      cp_async4(sfa + 4u * (unsigned)u, fp + 4 * u, 4);
  }
  const q_head ph = load_head(pre), qh = load_head(params);
  stage_chans(sc_pre, pre, ph, cb0, tid);
  stage_chans(sc_dw, params, qh, cb0, tid);
  pdl_wait_then_release(); /* nothing global but constants before: the previous kernel may run */

  /* ---- 1. the window's pixels into A: a thread's pixels whole (their
   * place computed once a pixel, not once a piece) ---- */
#pragma unroll 2
  for (int pix = tid; pix < NPIX; pix += THREADS) {
    const int y = pix / WWP, x = pix - y * WWP;
    const int iy = iy0 + y, ix = ix0 + x;
    if (x < WW && (unsigned)iy < (unsigned)CT_IH && (unsigned)ix < (unsigned)CT_IW) {
      const unsigned char *src = data + (((long)n * CT_IH + iy) * CT_IW + ix) * PRE_C;
      const unsigned dst = sa + (unsigned)(pix * RSA);
#pragma unroll
      for (int pc = 0; pc < PPR; pc++) {
        if (APIECE == 16)
          cp_async16(dst + pc * 16, src + pc * 16, 16);
        else
          cp_async8(dst + pc * 8, src + pc * 8);
      }
    }
  }
  cp_async_commit();

  /* the thread's m-tiles: their first pixel pair's place in a plane and
   * which of the two bytes are inside the image (the rest take the pad) */
  const unsigned padw = (unsigned)params[CTQ_PAD_WORD]; /* the depthwise conv's data zero point */
  int poff[MPW];
  unsigned keep[MPW];
#pragma unroll
  for (int i = 0; i < MPW; i++) {
    const int p0 = 16 * (warp + i * WARPS) + 2 * g; /* rows g and g + 8: pixels p0, p0 + 1 */
    const int y = p0 / WWP, x = p0 - y * WWP;
    const int iy = iy0 + y, ix = ix0 + x;
    const bool iny = (unsigned)iy < (unsigned)CT_IH;
    keep[i] = (iny && (unsigned)ix < (unsigned)CT_IW ? 0x00ffu : 0u) |
              (iny && (unsigned)(ix + 1) < (unsigned)CT_IW ? 0xff00u : 0u);
    poff[i] = p0 < NPIX ? y * PR + x : -1;
  }
  cp_async_wait<0>();
  __syncthreads(); /* A, B and the constants are in */

  /* ---- 2, 3. the pointwise conv into E ---- */
  {
    /* the lane's ldmatrix row: m-tile row r = lane % 16 is pixel 2r (r <
     * 8) or 2 (r - 8) + 1, bytes 16 (lane / 16) on */
    const int r = lane % 16;
    const unsigned arow = (unsigned)((r < 8 ? 2 * r : 2 * (r - 8) + 1) * RSA + 16 * (lane / 16));
    const unsigned brow = sb + (unsigned)((lane % 8) * RSA + 16 * (lane / 8 % 2));
#pragma unroll 1
    for (int j = 0; j < CB8; j++) {
      const q_chan c0 = opaque_chan(chan_at(sc_pre, ph, 8 * j + 2 * q)),
                   c1 = opaque_chan(chan_at(sc_pre, ph, 8 * j + 2 * q + 1));
      unsigned bf[KS][2];
#pragma unroll
      for (int s = 0; s < KS; s++) pwdw_ldsm_x2(brow + (unsigned)(8 * j * RSA + 32 * s), bf[s]);
      unsigned char *e0 = se + (8 * j + 2 * q) * PS, *e1 = e0 + PS;
#pragma unroll
      for (int i = 0; i < MPW; i++) {
        const int mt = warp + i * WARPS;
        if (mt >= MTILES) break;
        int acc[4] = {c0.off, c1.off, c0.off, c1.off};
#pragma unroll
        for (int s = 0; s < KS; s++) {
          unsigned a[4];
          pwdw_ldsm_x4(sa + (unsigned)(mt * 16 * RSA) + arow + 32u * s, a);
          pre_mma(acc, a, bf[s]);
        }
        const unsigned rr[2] = {0u, 0u};
        unsigned y0, y1;
        requant2_rows(ph, c0, c1, acc[0], acc[1], acc[2], acc[3], rr, y0, y1);
        if (poff[i] < 0) continue;
        /* channel 2q of pixels p0, p0 + 1, and channel 2q + 1 */
        const unsigned k = keep[i];
        const unsigned v0 = (__byte_perm(y0, y1, 0x0040u) & k) | (padw & ~k);
        const unsigned v1 = (__byte_perm(y0, y1, 0x0051u) & k) | (padw & ~k);
        *(unsigned short *)(e0 + poff[i]) = (unsigned short)v0;
        *(unsigned short *)(e1 + poff[i]) = (unsigned short)v1;
      }
    }
  }
  __syncthreads(); /* E is whole */

  /* ---- 4. the depthwise conv from E ---- */
  constexpr int CGN = CB / 4, XGN = TILE_W / PIXT;
#pragma unroll 1
  for (int u = tid; u < CGN * XGN * TILE_H; u += THREADS) {
    const int cg = u % CGN, xg = u / CGN % XGN, row = u / (CGN * XGN);
    const int oh = oh0 + row, owp = ow0 + xg * PIXT;
    if (oh >= CT_OH || owp >= CT_OW) continue;
    const int k0 = cb0 + 4 * cg;
    /* the 4 channels' filters, KVOL bytes each (4-aligned: 4 x KVOL), as
     * words of each kernel row's taps */
    unsigned wq[4][CT_KH][KWW];
    {
      const unsigned *wp = (const unsigned *)(sf + 4 * cg * KVOL);
      unsigned wraw[KVOL];
#pragma unroll
      for (int i = 0; i < KVOL; i++) wraw[i] = wp[i];
#pragma unroll
      for (int c = 0; c < 4; c++)
#pragma unroll
        for (int t = 0; t < CT_KH; t++)
#pragma unroll
          for (int a = 0; a < KWW; a++)
            wq[c][t][a] = pwdw_bytes(wraw, (c * CT_KH + t) * CT_KW + 4 * a,
                                     CT_KW - 4 * a < 4 ? CT_KW - 4 * a : 4);
    }
    q_chan qc[4];
#pragma unroll
    for (int c = 0; c < 4; c++) qc[c] = chan_at(sc_dw, qh, 4 * cg + c);
    int v[PIXT][4];
#pragma unroll
    for (int p = 0; p < PIXT; p++)
#pragma unroll
      for (int c = 0; c < 4; c++) v[p][c] = qc[c].off; /* zero without bias or zero point */
    const unsigned char *ep = se + 4 * cg * PS + row * CT_STR_H * PR + xg * PIXT * CT_STR_W;
#pragma unroll
    for (int t = 0; t < CT_KH; t++)
#pragma unroll
      for (int c = 0; c < 4; c++) {
        unsigned xw[XW];
#pragma unroll
        for (int i = 0; i < XW; i++) xw[i] = *(const unsigned *)(ep + c * PS + t * PR + 4 * i);
#pragma unroll
        for (int p = 0; p < PIXT; p++)
#pragma unroll
          for (int a = 0; a < KWW; a++)
            v[p][c] = dp4a_data(pwdw_bytes(xw, p * CT_STR_W + 4 * a, 4), wq[c][t][a], v[p][c]);
      }
    unsigned char *o = (unsigned char *)out;
    const long o0 = (((long)n * CT_OH + oh) * CT_OW + owp) * CT_KR + k0;
#if CT_ONNX
    pwdw_store<RQ_GENERAL>(o, qh, qc, v, o0, owp);
#else
    if (qc[0].f.ok && qc[1].f.ok && qc[2].f.ok && qc[3].f.ok)
      if (qh.sat)
        pwdw_store<RQ_SAT>(o, qh, qc, v, o0, owp);
      else
        pwdw_store<RQ_FAST>(o, qh, qc, v, o0, owp);
    else
      pwdw_store<RQ_GENERAL>(o, qh, qc, v, o0, owp);
#endif
  }
}
