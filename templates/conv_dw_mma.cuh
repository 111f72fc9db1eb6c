/*
 * conv_dw_mma.cuh: the body of conv2d_nhwc_dw_mma and conv3d_ndhwc_dw_mma
 * (depthwise, G = C = K) and of conv2d_nhwc_grouped_mma and
 * conv3d_ndhwc_grouped_mma (groups of 2 to 32 channels), channels-last, on
 * mma.sync m16n8k32 with a block-diagonal B. conv2d is the D = 1 case.
 *
 * Why tensor cores for a layer whose output channels read few input
 * channels: on the FP32 pipe (conv_dw_nhwc.cuh) every byte costs a PRMT
 * and an FADD before its FFMAs, and a depthwise kernel is issue-bound at a
 * quarter of the memory floor. Here a warp's mma multiplies 16 output
 * pixels (M) by 8 output channels (N) over K = 32 bytes of a super-group:
 * SG_C consecutive input channels (GPT = SG_C / CPG whole groups) at 32 /
 * SG_C taps (TPK: 4 taps x 8 channels, 2 x 16 or 1 x 32), B[(tap, c)][n] =
 * w[n][tap][c] where input channel c is of output channel n's group and 0
 * elsewhere. Depthwise is SG_C 8 over 8 groups of one channel: an eighth
 * of the tensor core's work is useful, which at mma.sync's int8 rate is
 * still twice the FP32 pipe's; ResNeXt's groups of 32 channels fill it.
 * The bytes go in as they are: no conversion, exact int32 sums.
 *
 * The k order makes each A register pair one 8-byte shared-memory load:
 * lane (g = lane / 4, q = lane % 4) holds k = 4q..4q+3 in a0 and 16+4q..
 * in a2, which are taken as 8 consecutive channels of one pixel at one
 * tap: tap column q / LPT of the k-step (LPT = 4 / TPK lanes a tap),
 * channels 8 (q % LPT) .. + 7 of the super-group (a1, a3 the same for row
 * g + 8). B follows the same map: b0 = w[n][tap][c..c+3], b1 = [c+4..c+7]
 * for output channel n = g of the n-tile, each byte zero where c is of
 * another group. A k-step is TPK columns of one kernel row, the kernel's
 * width padded to TPK (KS = kd x kh x ceil(kw / TPK) mma per m-tile and
 * n-tile; the padded taps have zero weights and read the window's next
 * pixels, or the slack after it), so that a k-step's offset is a constant
 * and the loads take it as an immediate.
 *
 * A block: TILES consecutive tiles (along W first) of TILE_H x TILE_W
 * output pixels (powers of two; flattened, m-tiles of 16) at one output
 * depth, and N_TILES x 8 output channels (CB), which read CB_IN input
 * channels: their super-groups (or, where a super-group has more output
 * channels than a block, the block's one). A tile's input window (padding
 * included, filled with the data zero point) is staged in shared memory by
 * cp.async, 8 bytes at a time and all of a thread's in flight at once, PS
 * bytes a pixel (PS / 8 odd: consecutive pixels fall on different banks);
 * with TILES > 1 the next tile's window loads into a second buffer while
 * one computes. (Plain loads through registers, one in flight per thread,
 * reached a quarter of the memory floor.) TMA 1 (sm_90, no data zero
 * point): the window is one tensor copy instead (rank 5, C W H D N; the
 * padding and the channels past C are its zero fill), completing on the
 * buffer's mbarrier, and a pixel is CB_IN dense bytes: the staging costs
 * the threads nothing, where cp.async's address arithmetic took a fifth of
 * the instructions. Warps: WARPS_N x WARPS_M, warp (wn, wm) the n-tiles
 * N_PER_WARP wn .. + N_PER_WARP - 1 (of one super-group: they share the A
 * fragments) and the m-tiles wm, wm + WARPS_M, ..., so a thread holds the
 * B fragments and the epilogue values of 2 N_PER_WARP channels only. The
 * epilogue requantizes each fragment (tc_common.cuh) into a shared output
 * tile; the block then writes it out in 16-byte (8-byte) pieces,
 * coalesced. The kernel accumulates raw data x weights as the dp4a
 * templates do; params' off[k] folds bias - zx * sum(w[k]) (quant.c).
 *
 * Macros (the descriptors, conv_dw_mma.c): GM_C (C), GM_CPG and GM_KPG
 * (input and output channels a group; 1 and 1 depthwise), SG_C and
 * N_PER_WARP (knobs of the grouped family; 8 and 1 depthwise), and the
 * knobs of both.
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_dw_mma.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

#include "conv_shape.cuh"
#include "tc_common.cuh"
#if TMA
#include "wgmma_ptx.cuh"
#endif

static_assert(CT_D2S == 0 && CT_WZP == 0, "depth_to_space and weight zero points: not here");
static_assert(GM_C > 0 && GM_C % 8 == 0 && CT_C4 * 4 == GM_C, "C must be a multiple of 8");
static_assert(GM_CPG >= 1 && GM_KPG >= 1 && GM_C % GM_CPG == 0 && CT_KR % GM_KPG == 0 &&
                  GM_C / GM_CPG == CT_KR / GM_KPG,
              "GM_CPG and GM_KPG: the channels of a group, in and out");
static_assert(SG_C == 8 || SG_C == 16 || SG_C == 32, "sg_c: 8, 16 or 32");
static_assert(SG_C % GM_CPG == 0 && (GM_C / GM_CPG) % (SG_C / GM_CPG) == 0,
              "sg_c: whole groups, a number of them that divides the groups");
static_assert(N_TILES == 1 || N_TILES == 2 || N_TILES == 4 || N_TILES == 8,
              "n_tiles: 1, 2, 4 or 8");
static_assert(N_PER_WARP == 1 || N_PER_WARP == 2 || N_PER_WARP == 4, "n_per_warp: 1, 2 or 4");
static_assert(WARPS_M >= 1 && WARPS_M <= 8, "warps_m: 1 to 8");
static_assert(TILE_W >= 1 && TILE_W <= 64 && TILE_H >= 1 && TILE_H <= 32, "tile_w, tile_h");
static_assert(BLOCKS_PER_SM >= 1 && BLOCKS_PER_SM <= 8, "blocks_per_sm: 1 to 8");
static_assert(M_UNROLL == 1 || M_UNROLL == 2 || M_UNROLL == 4, "m_unroll: 1, 2 or 4");
static_assert(TILES == 1 || TILES == 2 || TILES == 4 || TILES == 8, "tiles: 1, 2, 4 or 8");
static_assert((TILE_W & (TILE_W - 1)) == 0 && (TILE_H & (TILE_H - 1)) == 0 &&
                  TILE_W * TILE_H % 16 == 0,
              "tile_w and tile_h: powers of two, at least 16 pixels (whole m-tiles)");

#define GPT   (SG_C / GM_CPG)                        /* groups a super-group */
#define SG_K  (GPT * GM_KPG)                         /* its output channels */
#define CB    (8 * N_TILES)                          /* a block's output channels */
#define CB_IN (CB >= SG_K ? CB / SG_K * SG_C : SG_C) /* ... and the input channels they read */
#define TPK   (32 / SG_C)                            /* taps a k-step */
#define LPT   (4 / TPK)                              /* lanes a tap */
static_assert(SG_K % (8 * N_PER_WARP) == 0 && N_TILES % N_PER_WARP == 0,
              "n_per_warp: n-tiles of one super-group, dividing n_tiles");
static_assert(CB % SG_K == 0 || SG_K % CB == 0, "a block: whole super-groups, or part of one");
static_assert(TMA == 0 || (!CT_ZD && CB_IN % 16 == 0 && GM_C % 16 == 0 && CT_DIL_D == 1),
              "tma: no data zero point (the copy pads with zeros), 16 input channels a block or "
              "more, C a multiple of 16 (row strides of 16 bytes), no depth dilation");

#define KVOL    (CT_KD * CT_KH * CT_KW)
#define KWP     ((CT_KW + TPK - 1) / TPK * TPK) /* kernel columns padded to TPK */
#define KROW    (KWP / TPK)                     /* k-steps a kernel row */
#define KS      (CT_KD * CT_KH * KROW)          /* k-steps: TPK taps of one kernel row */
#define WARPS_N (N_TILES / N_PER_WARP)
#define THREADS (32 * WARPS_N * WARPS_M)
#define TPIX    (TILE_W * TILE_H)
#define MT      (TPIX / 16) /* m-tiles of a block */
#define WWW     ((TILE_W - 1) * CT_STR_W + (CT_KW - 1) * CT_DIL_W + 1)
#define WHH     ((TILE_H - 1) * CT_STR_H + (CT_KH - 1) * CT_DIL_H + 1)
/* input bytes a staged pixel: PS / 8 odd (consecutive pixels on other
 * banks), or, staged by TMA, the box's dense rows */
#define PS (TMA ? CB_IN : CB_IN == 8 ? 8 : CB_IN + 8)
/* the window, and the columns a padded tap reads past its end */
#define WIN_AL (TMA ? 128 : 16) /* a TMA destination is 128-byte aligned */
#define WIN                                                                                        \
  (((long)CT_KD * WHH * WWW * PS + (long)(KWP - CT_KW) * CT_DIL_W * PS + WIN_AL - 1) / WIN_AL *    \
   WIN_AL)
/* the output tile: bytes a pixel, padded so that a fragment's 8 pixels
 * fall on different banks and kept a multiple of 16 (the copy's pieces) */
#define ESZ   (CT_OUT == 0 ? 4 : 1)
#define OPS   (CT_OUT == 0 ? CB * 4 + (CB > 8 ? 32 : 0) : CB <= 16 ? CB : CB + 16)
#define OTILE ((long)MT * 16 * OPS)
/* window buffers: the next tile's loads while one computes */
#define NBUF       (TILES > 1 ? 2 : 1)
#define SMEM_BYTES (NBUF * WIN + OTILE + (TMA ? 16 : 0)) /* TMA: an mbarrier a buffer */
/* the copy's piece: 16 bytes where the row of CB channels and K are
 * multiples of 16 bytes, else 8 */
#define PIECE ((CB * ESZ) % 16 == 0 && (CT_KR * ESZ) % 16 == 0 ? 16 : 8)
#define TWN   ((CT_OW + TILE_W - 1) / TILE_W)
#define THN   ((CT_OH + TILE_H - 1) / TILE_H)

static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the block");
static_assert(SMEM_BYTES == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the tile");

/* Where tile i of the grid's sequence starts: its image, output depth and
 * first output row and column (tiles along W fastest, so a block's
 * consecutive tiles share their halo). */
struct tile_pos {
  int n, od, oh0, ow0;
};
__device__ __forceinline__ tile_pos tile_at(unsigned i) {
  tile_pos t;
  t.ow0 = (int)(i % TWN) * TILE_W;
  t.oh0 = (int)(i / TWN % THN) * TILE_H;
  t.od = (int)(i / (TWN * THN) % CT_OD);
  t.n = (int)(i / (TWN * THN * CT_OD));
  return t;
}

/* A window row is WWW pixels x CB_IN / 8 8-byte chunks; lane l stages
 * chunks l, l + 32, ... (UPL of them): the same in every row and tile, so
 * their shared and global offsets are computed once. */
#define CHUNKS (CB_IN / 8)
#define UPL    ((WWW * CHUNKS + 31) / 32)
#define WARPS  (WARPS_N * WARPS_M)
struct lane_chunks {
  unsigned soff[UPL]; /* shared offset in a row */
  int goff[UPL];      /* global offset from the row's first pixel and channel */
  int xx[UPL];        /* the chunk's column in the window; WWW: past the row */
  bool chan[UPL];     /* its channels exist (else zeros) */
};

__device__ __forceinline__ lane_chunks chunks_of(int lane, int cin0) {
  lane_chunks lc;
#pragma unroll
  for (int i = 0; i < UPL; i++) {
    const int u = lane + 32 * i, xx = u / CHUNKS, cu = u % CHUNKS;
    lc.xx[i] = u < WWW * CHUNKS ? xx : WWW;
    lc.soff[i] = (unsigned)(xx * PS + cu * 8);
    lc.goff[i] = xx * GM_C + cu * 8;
    lc.chan[i] = cin0 + cu * 8 < GM_C;
  }
  return lc;
}

/* Start tile t's window (KD x WHH x WWW pixels x CB_IN bytes) into the
 * shared buffer at address sbuf (smem its generic pointer): a warp a row,
 * cp.async 8 bytes at a time (all of a thread's in flight at once);
 * padding (the data zero point) and the channels past C (zeros) are plain
 * stores. */
__device__ __forceinline__ void stage_window(const unsigned char *__restrict__ data,
                                             unsigned char *smem, unsigned sbuf,
                                             const lane_chunks &lc, tile_pos t, int cin0,
                                             unsigned padw, int warp) {
  const int iz0 = t.od * CT_STR_D - CT_PAD_D, iy0 = t.oh0 * CT_STR_H - CT_PAD_H,
            ix0 = t.ow0 * CT_STR_W - CT_PAD_W;
  bool col[UPL];
#pragma unroll
  for (int i = 0; i < UPL; i++)
    col[i] = lc.xx[i] < WWW && (unsigned)(ix0 + lc.xx[i]) < (unsigned)CT_IW && lc.chan[i];
#pragma unroll 1
  for (int r = warp; r < CT_KD * WHH; r += WARPS) {
    const int zz = r / WHH, yy = r - zz * WHH;
    const int iz = iz0 + zz * CT_DIL_D, iy = iy0 + yy;
    const bool row = (unsigned)iz < (unsigned)CT_ID && (unsigned)iy < (unsigned)CT_IH;
    const unsigned char *gp =
        data + ((((long)t.n * CT_ID + iz) * CT_IH + iy) * CT_IW + ix0) * GM_C + cin0;
    const unsigned sr = sbuf + (unsigned)(r * WWW * PS);
#pragma unroll
    for (int i = 0; i < UPL; i++) {
      if (lc.xx[i] >= WWW) continue;
      if (row && col[i])
        cp_async8(sr + lc.soff[i], gp + lc.goff[i]);
      else
        *(uint2 *)(smem + (sr - smem_addr(smem)) + lc.soff[i]) =
            lc.chan[i] ? make_uint2(padw, padw) : make_uint2(0u, 0u);
    }
  }
  cp_async_commit();
}

/* The shared offset of the window pixel under m-tile pixel m = 16 mt + j
 * (j < 16; TILE_W and 16 divide one another): F(mt) + G(j). */
__device__ __forceinline__ unsigned pix_off(unsigned m) {
  return ((m / TILE_W) * CT_STR_H * WWW + (m % TILE_W) * CT_STR_W) * PS;
}

/* The shared offset of k-step s's first tap (lane q adds q / LPT
 * columns): a constant, so that the loads take it as an immediate. */
__host__ __device__ constexpr unsigned tap_off(int s) {
  return (unsigned)((((s / KROW / CT_KH) * WHH + (s / KROW % CT_KH) * CT_DIL_H) * WWW +
                     TPK * (s % KROW) * CT_DIL_W) *
                    PS);
}

/* The weight bytes c..c+3 (input channels of the super-group's first, sgi)
 * of output channel n (< K) at kernel row zy, column x: each byte zero where
 * the column is past the kernel or its channel is of another group than
 * n's. */
__device__ __forceinline__ unsigned b_word(const unsigned char *__restrict__ weights, int n, int zy,
                                           int x, int sgi, int c) {
  if (x >= CT_KW) return 0u;
  const int gi = n / GM_KPG; /* n's group: input channels gi CPG .. + CPG - 1 */
  const long tap = ((long)n * KVOL + zy * CT_KW + x) * GM_CPG;
#if GM_CPG % 4 == 0
  /* the 4 channels are of one group (c and CPG multiples of 4): one word */
  return (sgi + c) / GM_CPG == gi ? *(const unsigned *)(weights + tap + sgi + c - gi * GM_CPG) : 0u;
#else
  unsigned v = 0;
#pragma unroll
  for (int b = 0; b < 4; b++)
    if ((sgi + c + b) / GM_CPG == gi)
      v |= (unsigned)weights[tap + sgi + c + b - gi * GM_CPG] << (8 * b);
  return v;
#endif
}

/* ---- the kernel ---------------------------------------------------------- */
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    conv_dw_mma(const unsigned char *__restrict__ data, const unsigned char *__restrict__ weights,
                void *__restrict__ out, const int *__restrict__ params,
                const void *__restrict__ residual
#if TMA
                ,
                const __grid_constant__ ct_tmap dmap
#endif
    ) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, q = lane % 4;
  const int wn = warp % WARPS_N, wm = warp / WARPS_N;
  const unsigned tile0 = blockIdx.x * TILES; /* the block's first tile (fewer than 2^31) */
  const int k0b = blockIdx.y * CB;           /* the block's first output channel */
  const int cin0 = k0b / SG_K * SG_C;        /* ... and input channel */
  const int kw = k0b + wn * N_PER_WARP * 8;  /* the warp's first output channel */
  const int sgi = kw / SG_K * SG_C;          /* its super-group's first input channel */
  /* K is a multiple of SG_K, and a warp's n-tiles are of one super-group:
   * whole or absent together */
  const bool live = kw < CT_KR;
  unsigned char *otile = smem_raw + NBUF * WIN;
  const unsigned sbase = smem_addr(smem_raw);
#if TMA
  /* a window's copy completes on its buffer's mbarrier */
  const unsigned bars = sbase + (unsigned)(NBUF * WIN + OTILE);
  if (tid == 0) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)&dmap) : "memory");
    mbar_init(bars, 1);
    mbar_init(bars + 8, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    fence_proxy_async();
  }
  __syncthreads();
#endif

  /* the lane's tap column in a k-step and its 8 channels in a tap */
  const int tcol = q / LPT, lc8 = 8 * (q % LPT);
  /* the B fragments: k-step s is kernel row s / KROW (depth and height),
   * columns TPK (s % KROW) + tcol; for n-tile j, output channel kw + 8 j +
   * g, channels lc8 .. + 3 (b0) and + 4 .. + 7 (b1) of the super-group.
   * Depthwise: its tap of channel kw + g in byte g % 4 of b0 (g < 4) or b1
   * (g >= 4). The weights are constant: read before the wait. */
  unsigned bf[KS][N_PER_WARP][2];
#pragma unroll
  for (int s = 0; s < KS; s++) {
    const int x = TPK * (s % KROW) + tcol, zy = s / KROW;
#pragma unroll
    for (int j = 0; j < N_PER_WARP; j++) {
#if GM_CPG == 1 && GM_KPG == 1
      const unsigned wv =
          live && x < CT_KW ? (unsigned)weights[(long)(kw + g) * KVOL + zy * CT_KW + x] : 0u;
      bf[s][j][0] = g < 4 ? wv << (8 * g) : 0u;
      bf[s][j][1] = g >= 4 ? wv << (8 * (g - 4)) : 0u;
#else
      const int n = kw + 8 * j + g;
      bf[s][j][0] = live ? b_word(weights, n, zy, x, sgi, lc8) : 0u;
      bf[s][j][1] = live ? b_word(weights, n, zy, x, sgi, lc8 + 4) : 0u;
#endif
    }
  }
  /* rows g and g + 8 of an m-tile: G(g), G(g + 8), with the lane's tap
   * column and channels, and the super-group's place in a staged pixel
   * (the k-steps' offsets are constants: tap_off) */
  const unsigned lofs = (unsigned)(tcol * CT_DIL_W * PS + lc8 + (sgi - cin0));
  const unsigned grow[2] = {pix_off((unsigned)g) + lofs, pix_off((unsigned)g + 8u) + lofs};
  /* the thread's place in the output tile: row g, channels 2q, 2q + 1 of
   * its first n-tile (the next ones 8 channels on) */
  const unsigned oslot = (unsigned)g * OPS + (unsigned)(kw - k0b + 2 * q) * ESZ;
#if !TMA
  const lane_chunks lc = chunks_of(lane, cin0);
#endif
  pdl_wait_then_release(); /* nothing global before: the previous kernel may still run */
#if CT_ZD
  const unsigned padw = (unsigned)params[CTQ_PAD_WORD];
#else
  const unsigned padw = 0;
#endif
#if TMA
  (void)padw, (void)data;
#endif
  const q_head qh = load_head(params);
  q_chan c0[N_PER_WARP] = {}, c1[N_PER_WARP] = {};
  if (live)
#pragma unroll
    for (int j = 0; j < N_PER_WARP; j++) load_chan2(params, qh, kw + 8 * j + 2 * q, c0[j], c1[j]);

  /* tiles of the block: the next one's window loads while this one
   * computes (j = -1 only starts the first) */
  const unsigned ntiles = (unsigned)CT_N * CT_OD * THN * TWN;
#pragma unroll 1
  for (int j = -1; j < TILES; j++) {
    const unsigned tn = tile0 + (unsigned)(j + 1);  /* the next tile */
    const bool next = j + 1 < TILES && tn < ntiles; /* uniform over the block */
    if (next) {
#if TMA
      /* one copy of the whole window (padding and channels past C are
       * zeros), by one thread; the buffer's readers passed the last barrier */
      if (tid == 0) {
        const tile_pos t = tile_at(tn);
        const unsigned bar = bars + 8u * (unsigned)((j + 1) % NBUF);
        fence_proxy_async();
        mbar_expect_tx(bar, (unsigned)(CT_KD * WHH * WWW * CB_IN));
        tma_tile5(sbase + (unsigned)((j + 1) % NBUF) * (unsigned)WIN, &dmap, cin0,
                  t.ow0 * CT_STR_W - CT_PAD_W, t.oh0 * CT_STR_H - CT_PAD_H,
                  t.od * CT_STR_D - CT_PAD_D, t.n, bar);
      }
#else
      stage_window(data, smem_raw, sbase + (unsigned)((j + 1) % NBUF) * (unsigned)WIN, lc,
                   tile_at(tn), cin0, padw, warp);
#endif
    }
    if (j < 0) continue;
    const unsigned ti = tn - 1u;
    if (ti >= ntiles) break;
#if TMA
    mbar_wait(bars + 8u * (unsigned)(j % NBUF), (unsigned)(j / NBUF) & 1u);
#else
    if (next)
      cp_async_wait<1>();
    else
      cp_async_wait<0>();
#endif
    const tile_pos tp = tile_at(ti);
    const unsigned win = sbase + (unsigned)(j % NBUF) * (unsigned)WIN;
    __syncthreads(); /* the window is whole; the last tile's copy-out is done */

    /* ---- the mainloop and each m-tile's epilogue ---- */
    if (live) {
#pragma unroll 1
      for (int mb = wm * M_UNROLL; mb < MT; mb += WARPS_M * M_UNROLL) {
        /* M_UNROLL m-tiles at once (their mma chains interleave) */
        int acc[M_UNROLL][N_PER_WARP][4];
        unsigned base[M_UNROLL][2];
#pragma unroll
        for (int i = 0; i < M_UNROLL; i++) {
          const unsigned f = win + pix_off((unsigned)(mb + i) * 16u);
          base[i][0] = f + grow[0], base[i][1] = f + grow[1];
          /* the sums start from the folded offset (bias - zx sum(w); no
           * weight zero points here): the epilogue adds nothing */
#pragma unroll
          for (int j = 0; j < N_PER_WARP; j++)
            acc[i][j][0] = acc[i][j][2] = c0[j].off, acc[i][j][1] = acc[i][j][3] = c1[j].off;
        }
#pragma unroll
        for (int s = 0; s < KS; s++)
#pragma unroll
          for (int i = 0; i < M_UNROLL; i++) {
            const uint2 x0 = lds64(base[i][0] + tap_off(s)), x1 = lds64(base[i][1] + tap_off(s));
            const unsigned a[4] = {x0.x, x1.x, x0.y, x1.y};
#pragma unroll
            for (int j = 0; j < N_PER_WARP; j++) mma16832(acc[i][j], a, bf[s][j]);
          }
        q_chan l0[N_PER_WARP], l1[N_PER_WARP]; /* the channels' values, opaque here */
#pragma unroll
        for (int j = 0; j < N_PER_WARP; j++) l0[j] = opaque_chan(c0[j]), l1[j] = opaque_chan(c1[j]);
#pragma unroll
        for (int i = 0; i < M_UNROLL; i++) {
          if (MT % M_UNROLL && mb + i >= MT) break;
          const unsigned mt = (unsigned)(mb + i);
#pragma unroll
          for (int j = 0; j < N_PER_WARP; j++) {
            unsigned char *o0 = otile + mt * 16u * OPS + oslot + 8 * j * ESZ, *o1 = o0 + 8 * OPS;
            /* channels kw + 8 j + 2q, + 1 of rows 16 mt + g (acc 0, 1) and
             * + 8 (acc 2, 3) */
            const int v00 = acc[i][j][0], v01 = acc[i][j][1], v10 = acc[i][j][2],
                      v11 = acc[i][j][3];
#if CT_OUT == 0
            (void)residual;
            *(int2 *)o0 = make_int2(v00, v01);
            *(int2 *)o1 = make_int2(v10, v11);
#else
            /* the residual's two bytes of each row that exists */
            unsigned rr[2] = {0, 0};
            if (CT_RES) {
#pragma unroll
              for (int h = 0; h < 2; h++) {
                const unsigned m = mt * 16u + (unsigned)g + 8u * h;
                const int oh = tp.oh0 + (int)(m / TILE_W), ow = tp.ow0 + (int)(m % TILE_W);
                if (oh < CT_OH && ow < CT_OW)
                  rr[h] =
                      ((const unsigned short *)
                           residual)[(((((long)tp.n * CT_OD + tp.od) * CT_OH + oh) * CT_OW + ow) *
                                          CT_KR +
                                      kw + 8 * j + 2 * q) /
                                     2];
              }
            }
            unsigned y0, y1;
            requant2_rows(qh, l0[j], l1[j], v00, v01, v10, v11, rr, y0, y1);
            *(unsigned short *)o0 = (unsigned short)y0;
            *(unsigned short *)o1 = (unsigned short)y1;
#endif
          }
        }
      }
    }
    __syncthreads(); /* the output tile is whole; the window may be refilled */

    /* ---- the output tile, PIECE bytes at a time ---- */
    {
      constexpr int PPP = CB * ESZ / PIECE; /* pieces a pixel */
      const long obase = ((((long)tp.n * CT_OD + tp.od) * CT_OH + tp.oh0) * CT_OW + tp.ow0) * CT_KR;
#pragma unroll 2
      for (int u = tid; u < TPIX * PPP; u += THREADS) {
        const unsigned jj = (unsigned)u % PPP, m = (unsigned)u / PPP;
        const unsigned row = m / TILE_W, colm = m % TILE_W;
        const int kb = k0b * ESZ + (int)jj * PIECE; /* the piece's byte offset in the pixel */
        if (tp.oh0 + (int)row >= CT_OH || tp.ow0 + (int)colm >= CT_OW || kb >= CT_KR * ESZ)
          continue;
        unsigned char *dst =
            (unsigned char *)out + (obase + ((long)row * CT_OW + colm) * CT_KR) * ESZ + kb;
        const unsigned char *src = otile + m * OPS + jj * PIECE;
        if (PIECE == 16)
          *(uint4 *)dst = *(const uint4 *)src;
        else
          *(uint2 *)dst = *(const uint2 *)src;
      }
    }
  }
}
