/*
 * irb_probe.cu: a probe, not a template: a whole inverted residual block
 * (MobileNetV2's expansion 1x1, depthwise 3x3, projection 1x1 and its
 * residual) in one kernel, to measure what such a template would give
 * against the three convs as libconvtune serves them (bench/irb_probe.c).
 *
 * It compiles with conv2d_nhwc_pwdw's macros (the depthwise conv with its
 * expansion fused, pre_c) and takes that template's helpers and its first
 * two steps from conv_pwdw.cuh. Added here:
 *   POST_K     the projection's output channels (its weights POST_K x C,
 *              OHWI, in post_w; its params block, ONNX rounding and
 *              per-channel scales, in post_params);
 *   KB         the projection's channels a block (grid y: POST_K / KB);
 *   POST_RES   1: the projection adds a residual (NHWC, POST_K channels).
 * A block: a tile of TILE_H x TILE_W output pixels of one image and KB of
 * the projection's channels. It walks the expanded channels in chunks of CB
 * (conv_pwdw's block, in turn rather than across grid y):
 *   1. the chunk's expansion weights, depthwise filters and projection
 *      weights into shared memory (cp.async), the window once before;
 *   2. the expansion of the window into E (conv_pwdw's step 2, 3);
 *   3. the depthwise conv from E into D: a row of CB bytes a tile pixel,
 *      requantized by the depthwise conv's epilogue;
 *   4. D times the chunk's projection weights, on mma.sync m16n8k32, into
 *      accumulators that live across the chunks.
 * Then the projection's epilogue (ONNX rounding with its residual) and a
 * 2-byte store a fragment row. No stage overlaps another: a first
 * measure of the idea, not its best form.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_pwdw.cuh"

#ifndef POST_K
#error "irb_probe.cu: POST_K, KB and POST_RES come from bench/irb_probe.c"
#endif

static_assert(CT_ONNX == 1, "the probe takes ONNX rounding (the QDQ models')");
static_assert(CB % 32 == 0, "cb a multiple of 32: whole k32 steps of the projection");
static_assert(KB % 8 == 0 && POST_K % KB == 0, "KB a multiple of 8 dividing POST_K");
static_assert(CT_DATA_U8 == (CT_OUT == 2),
              "D (the depthwise conv's output) has the data's type: mma16832's A");

#define TP        (TILE_H * TILE_W)
#define MTP       ((TP + 15) / 16)
#define NTP       (KB / 8)
#define NPW       ((NTP + WARPS - 1) / WARPS)
#define RSD       (CB + 16) /* D's and W3's rows: RSD / 16 odd */
#define SD_BYTES  ((long)MTP * 16 * RSD)
#define SW3_BYTES ((long)KB * RSD)
#ifndef IRB_DB
#define IRB_DB 0
#endif
/* IRB_DB 1: a second set of the chunk's buffers (B, the constants, W3), so
 * that the next chunk's loads run under this chunk's work */
#define BUF1_BYTES (SB_BYTES + SC_BYTES + SW3_BYTES)
#define IRB_SMEM   (SMEM_BYTES + SD_BYTES + SW3_BYTES + (IRB_DB ? BUF1_BYTES : 0))

/* the host reads it (cudaLibraryGetGlobal) */
__device__ int irb_smem_bytes = (int)IRB_SMEM;

extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    irb_probe(const unsigned char *__restrict__ data, const unsigned char *__restrict__ weights,
              unsigned char *__restrict__ out, const int *__restrict__ params,
              const int *__restrict__ post_params, const unsigned char *__restrict__ post_w,
              const unsigned char *__restrict__ residual) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, q = lane % 4;
  const long bx = blockIdx.x;
  const int tw = (int)(bx % TWN), th = (int)(bx / TWN % THN), n = (int)(bx / ((long)TWN * THN));
  const int kb0 = blockIdx.y * KB; /* the block's first projection channel */
  const int oh0 = th * TILE_H, ow0 = tw * TILE_W;
  const int iy0 = oh0 * CT_STR_H - CT_PAD_H, ix0 = ow0 * CT_STR_W - CT_PAD_W;
  unsigned char *se = smem_raw + SA_BYTES + SB_BYTES;
  unsigned char *sd = smem_raw + SMEM_BYTES;
  const unsigned sa = smem_addr(smem_raw), sda = smem_addr(sd);
  /* the chunk's buffers: set 0 where conv_pwdw.cuh has them (W3 after D),
   * set 1 past W3 */
  unsigned char *const buf1 = sd + SD_BYTES + SW3_BYTES;
  const unsigned sbs[2] = {sa + (unsigned)SA_BYTES, smem_addr(buf1)};
  int *const scs[2] = {(int *)(se + SE_BYTES), (int *)(buf1 + SB_BYTES)};
  const unsigned sws[2] = {sda + (unsigned)SD_BYTES, smem_addr(buf1 + SB_BYTES + SC_BYTES)};
  const int *__restrict__ pre = params + PRE_OFFW;
  const q_head ph = load_head(pre), qh = load_head(params), pq = load_head(post_params);

  /* ---- the window's pixels into A, once ---- */
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

  const unsigned padw = (unsigned)params[CTQ_PAD_WORD];
  int poff[MPW];
  unsigned keep[MPW];
#pragma unroll
  for (int i = 0; i < MPW; i++) {
    const int p0 = 16 * (warp + i * WARPS) + 2 * g;
    const int y = p0 / WWP, x = p0 - y * WWP;
    const int iy = iy0 + y, ix = ix0 + x;
    const bool iny = (unsigned)iy < (unsigned)CT_IH;
    keep[i] = (iny && (unsigned)ix < (unsigned)CT_IW ? 0x00ffu : 0u) |
              (iny && (unsigned)(ix + 1) < (unsigned)CT_IW ? 0xff00u : 0u);
    poff[i] = p0 < NPIX ? y * PR + x : -1;
  }

  /* the projection's sums, from its folded offsets */
  int acc[MTP][NPW][4];
#pragma unroll
  for (int j = 0; j < NPW; j++) {
    const int k = kb0 + 8 * (warp + j * WARPS) + 2 * q;
    const bool ok = warp + j * WARPS < NTP;
    const int o0 = ok ? post_params[CTQ_HEADER + CTQ_OFF * POST_K + k] : 0;
    const int o1 = ok ? post_params[CTQ_HEADER + CTQ_OFF * POST_K + k + 1] : 0;
#pragma unroll
    for (int m = 0; m < MTP; m++)
      acc[m][j][0] = o0, acc[m][j][1] = o1, acc[m][j][2] = o0, acc[m][j][3] = o1;
  }

  /* chunk cb0's weights into buffer set bi (cp.async, one group), its
   * channels' constants by plain loads */
  auto issue = [&](int cb0, int bi) {
    const unsigned char *wp = (const unsigned char *)(params + PRE_WOFFW) + (long)cb0 * CPAD;
    for (int u = tid; u < CB * (CPAD / 16); u += THREADS) {
      const int r = u / (CPAD / 16), c = (u - r * (CPAD / 16)) * 16;
      cp_async16(sbs[bi] + (unsigned)(r * RSA + c), wp + (long)r * CPAD + c, 16);
    }
    const unsigned char *fp = weights + (long)cb0 * KVOL;
    const unsigned sfa = smem_addr(scs[bi] + 6 * CB);
    for (int u = tid; u < CB * KVOL / 4; u += THREADS)
      cp_async4(sfa + 4u * (unsigned)u, fp + 4 * u, 4);
    for (int u = tid; u < KB * (CB / 16); u += THREADS) {
      const int r = u / (CB / 16), c = (u - r * (CB / 16)) * 16;
      cp_async16(sws[bi] + (unsigned)(r * RSD + c), post_w + (long)(kb0 + r) * CT_KR + cb0 + c, 16);
    }
    cp_async_commit();
    stage_chans(scs[bi], pre, ph, cb0, tid);
    stage_chans(scs[bi] + 3 * CB, params, qh, cb0, tid);
  };
  if (IRB_DB) issue(0, 0);

#pragma unroll 1
  for (int cb0 = 0, ci = 0; cb0 < CT_KR; cb0 += CB, ci++) {
    const int bi = IRB_DB ? ci & 1 : 0;
    if (!IRB_DB) {
      __syncthreads(); /* the last chunk's B, E, D and W3 are read */
      issue(cb0, 0);
    }
    cp_async_wait<0>();
    __syncthreads(); /* the chunk's buffers are in; the other set is free */
    if (IRB_DB && cb0 + CB < CT_KR) issue(cb0 + CB, bi ^ 1);
    const unsigned sb = sbs[bi], swa = sws[bi];
    const int *sc_pre = scs[bi], *sc_dw = sc_pre + 3 * CB;
    const unsigned char *sf = (const unsigned char *)(sc_pre + 6 * CB);

    /* ---- the expansion into E (conv_pwdw's steps 2, 3) ---- */
    {
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
          int a4[4] = {c0.off, c1.off, c0.off, c1.off};
#pragma unroll
          for (int s = 0; s < KS; s++) {
            unsigned a[4];
            pwdw_ldsm_x4(sa + (unsigned)(mt * 16 * RSA) + arow + 32u * s, a);
            pre_mma(a4, a, bf[s]);
          }
          const unsigned rr[2] = {0u, 0u};
          unsigned y0, y1;
          requant2_rows(ph, c0, c1, a4[0], a4[1], a4[2], a4[3], rr, y0, y1);
          if (poff[i] < 0) continue;
          const unsigned k = keep[i];
          const unsigned v0 = (__byte_perm(y0, y1, 0x0040u) & k) | (padw & ~k);
          const unsigned v1 = (__byte_perm(y0, y1, 0x0051u) & k) | (padw & ~k);
          *(unsigned short *)(e0 + poff[i]) = (unsigned short)v0;
          *(unsigned short *)(e1 + poff[i]) = (unsigned short)v1;
        }
      }
    }
    __syncthreads(); /* E is whole */

    /* ---- the depthwise conv from E into D ---- */
    constexpr int CGN = CB / 4, XGN = TILE_W / PIXT;
#pragma unroll 1
    for (int u = tid; u < CGN * XGN * TILE_H; u += THREADS) {
      const int cg = u % CGN, xg = u / CGN % XGN, row = u / (CGN * XGN);
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
        for (int c = 0; c < 4; c++) v[p][c] = qc[c].off;
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
        /* a tile pixel's 4 channels, one word (pixels past the layer are
         * computed too: their rows of the projection are not stored) */
#pragma unroll
      for (int p = 0; p < PIXT; p++) {
        const unsigned lo = requant2<RQ_GENERAL>(qh, qc[0], qc[1], v[p][0], v[p][1], 0u);
        const unsigned hi = requant2<RQ_GENERAL>(qh, qc[2], qc[3], v[p][2], v[p][3], 0u);
        *(unsigned *)(sd + (row * TILE_W + xg * PIXT + p) * RSD + 4 * cg) = join_halves(lo, hi);
      }
    }
    __syncthreads(); /* D and W3 are whole */

    /* ---- the projection of the chunk ---- */
#pragma unroll
    for (int s = 0; s < CB / 32; s++) {
      unsigned bf[NPW][2];
#pragma unroll
      for (int j = 0; j < NPW; j++) {
        const int nt = warp + j * WARPS;
        if (nt < NTP)
          pwdw_ldsm_x2(swa + (unsigned)((8 * nt + lane % 8) * RSD + 16 * (lane / 8 % 2) + 32 * s),
                       bf[j]);
      }
#pragma unroll
      for (int m = 0; m < MTP; m++) {
        unsigned a[4];
        pwdw_ldsm_x4(sda + (unsigned)((16 * m + lane % 16) * RSD + 16 * (lane / 16) + 32 * s), a);
#pragma unroll
        for (int j = 0; j < NPW; j++)
          if (warp + j * WARPS < NTP) mma16832(acc[m][j], a, bf[j]);
      }
    }
  }

  /* ---- the projection's epilogue ---- */
#pragma unroll
  for (int j = 0; j < NPW; j++) {
    const int nt = warp + j * WARPS;
    if (nt >= NTP) continue;
    const int k = kb0 + 8 * nt + 2 * q;
    const float s0 = __int_as_float(post_params[CTQ_HEADER + CTQ_MULTS * POST_K + k]);
    const float s1 = __int_as_float(post_params[CTQ_HEADER + CTQ_MULTS * POST_K + k + 1]);
#pragma unroll
    for (int m = 0; m < MTP; m++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int p = 16 * m + g + 8 * h;
        if (p >= TP) continue;
        const int oh = oh0 + p / TILE_W, ow = ow0 + p % TILE_W;
        if (oh >= CT_OH || ow >= CT_OW) continue;
        const long o = (((long)n * CT_OH + oh) * CT_OW + ow) * POST_K + k;
        float r0 = 0.f, r1 = 0.f;
        if (POST_RES) {
          const unsigned rb = *(const unsigned short *)(residual + o);
          r0 = CT_OUT == 2 ? (float)(rb & 0xffu) : (float)(signed char)(rb & 0xffu);
          r1 = CT_OUT == 2 ? (float)(rb >> 8) : (float)(signed char)(rb >> 8);
        }
        const unsigned w0 = ctq_requant_onnx_word(acc[m][j][2 * h], s0, &pq.onnx, POST_RES, r0);
        const unsigned w1 = ctq_requant_onnx_word(acc[m][j][2 * h + 1], s1, &pq.onnx, POST_RES, r1);
        *(unsigned short *)(out + o) = (unsigned short)__byte_perm(w0, w1, 0x0040u);
      }
  }
}
