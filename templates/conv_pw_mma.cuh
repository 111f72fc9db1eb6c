/*
 * conv_pw_mma.cuh: the body of conv2d_nhwc_pw_mma and conv3d_ndhwc_pw_mma
 * (conv2d is the D = 1 case): dense pointwise (1x1 or 1x1x1, no padding,
 * any stride) int8 convolution, channels-last, on mma.sync m16n8k32.
 *
 * Why a family of its own: a pointwise layer is the matrix product of the
 * pixels (M x C) and the weights (C x K), and where C or K is small (the
 * expand and project layers of MobileNet and EfficientNet: 16 to 160
 * channels on one side) it is bound by its bytes, not its multiply-adds.
 * The implicit-GEMM templates then pay for what they are built around:
 * TMA needs C a multiple of 16, a tile's reduction is one block_k slice
 * with the prologue, barriers and epilogue of a whole GEMM around it, and
 * the stem runs C 24 at a quarter of the memory floor. Here:
 *   - a block keeps its N_TILES x 8 output channels' weights (BN x C bytes)
 *     in shared memory for its life, and in registers where they are few
 *     (BREG);
 *   - it is persistent: grid x blocks loop over the tiles of BM consecutive
 *     output pixels (M_TILES x 16), the next STAGES - 1 tiles' pixel rows
 *     (and residual rows) loading by cp.async while one computes, so that
 *     the loads of a memory-bound layer are in flight all the time;
 *   - a pixel's C bytes are one row of the tile (row stride RS: C padded to
 *     32, plus 16, so that ldmatrix's 8 rows of 16 bytes fall on distinct
 *     banks); the k-steps are 32-byte slices of it. Bytes past C are
 *     whatever the row holds (stale, or never written): their weights are
 *     zero in shared memory, so they add nothing.
 * A k-step's A fragments (16 rows x 32 bytes) are one ldmatrix.x4 and an
 * n-tile's B fragments (8 output channels' weight rows) one ldmatrix.x2,
 * each landing in mma.sync's register order (8-byte loads of a lane's
 * bytes took four moves a fragment). The sums start from params' folded offset off[k] (bias - zx
 * x sum(w[k]), quant.c); each fragment is requantized (tc_common.cuh) into
 * a shared output tile, which the block writes out in 16-byte (8-byte)
 * pieces, whole rows of the output: coalesced.
 *
 * Warps: WARPS_N x WARPS_M; warp (wn, wm) holds the n-tiles N_PER_WARP wn
 * .. + N_PER_WARP - 1 and the m-tiles wm M_UNROLL, + WARPS_M M_UNROLL, ...
 * of each tile, M_UNROLL at once.
 *
 * Macros (conv_pw_mma.c): PW_C (C), the knobs M_TILES, N_TILES,
 * N_PER_WARP, WARPS_M, M_UNROLL, STAGES, BLOCKS_PER_SM, and CT_THREADS,
 * CT_SMEM_BYTES.
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_pw_mma.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

#include "conv_shape.cuh"
#include "tc_common.cuh"
#include "l2_prefetch.cuh"

static_assert(CT_D2S == 0 && CT_WZP == 0, "depth_to_space and weight zero points: not here");
static_assert(CT_KD * CT_KH * CT_KW == 1, "pointwise: a 1x1 (1x1x1) kernel");
static_assert(CT_PAD_D + CT_PAD_H + CT_PAD_W + CT_PADA_D + CT_PADA_H + CT_PADA_W == 0,
              "pointwise: no padding");
static_assert(PW_C > 0 && PW_C % 8 == 0 && CT_C4 * 4 == PW_C, "C must be a multiple of 8");
static_assert(CT_KR % 8 == 0, "K must be a multiple of 8 (mma n-tiles of 8 channels)");
static_assert(M_TILES == 2 || M_TILES == 4 || M_TILES == 8 || M_TILES == 16,
              "m_tiles: 2, 4, 8 or 16 (32 to 256 pixels a tile)");
static_assert(N_TILES >= 1 && N_TILES <= 16, "n_tiles: 1 to 16");
static_assert(N_PER_WARP >= 1 && N_PER_WARP <= 4 && N_TILES % N_PER_WARP == 0,
              "n_per_warp: 1 to 4, dividing n_tiles");
static_assert(WARPS_M == 1 || WARPS_M == 2 || WARPS_M == 4 || WARPS_M == 8, "warps_m: 1 to 8");
static_assert(M_UNROLL == 1 || M_UNROLL == 2, "m_unroll: 1 or 2");
static_assert(M_TILES >= WARPS_M * M_UNROLL, "warps_m x m_unroll m-tiles at most: no warp idles");
static_assert(STAGES >= 2 && STAGES <= 4, "stages: 2 to 4");
static_assert(BLOCKS_PER_SM >= 1 && BLOCKS_PER_SM <= 8, "blocks_per_sm: 1 to 8");

#define CPAD    ((PW_C + 31) / 32 * 32)
#define KS      (CPAD / 32)    /* k-steps */
#define RS      (CPAD + 16)    /* a pixel row's stride in shared memory: RS / 16 odd */
#define BM      (16 * M_TILES) /* pixels a tile */
#define BN      (8 * N_TILES)  /* output channels a block */
#define WARPS_N (N_TILES / N_PER_WARP)
#define THREADS (32 * WARPS_N * WARPS_M)
#define ESZ     (CT_OUT == 0 ? 4 : 1)
/* the output tile's row stride: a fragment's 8 rows on distinct banks and
 * a multiple of 16 (the copy's pieces); int32: OPS % 64 == 32, 8-bit: OPS
 * % 32 == 16. The residual tile's the same (8-bit only). */
#define OPS_OF(x, m)                                                                               \
  ((x) % (m) <= (m) / 2 ? (x) - (x) % (m) + (m) / 2 : (x) - (x) % (m) + 3 * (m) / 2)
#define OPS        (ESZ == 4 ? OPS_OF(4 * BN, 64) : OPS_OF(BN, 32))
#define SB_BYTES   ((long)BN * RS)
#define SA_BYTES   ((long)BM * RS)
#define SR_BYTES   (CT_RES ? (long)BM * OPS : 0L)
#define SO_BYTES   ((long)BM * OPS)
#define SMEM_BYTES (SB_BYTES + STAGES * (SA_BYTES + SR_BYTES) + SO_BYTES)
/* the pieces: a pixel row's loads (16 bytes where C allows), the residual's
 * and the output's (16 where the block's channels and K allow) */
#define APIECE (PW_C % 16 == 0 ? 16 : 8)
#define RPIECE (BN % 16 == 0 && CT_KR % 16 == 0 ? 16 : 8)
#define PIECE  ((BN * ESZ) % 16 == 0 && (CT_KR * ESZ) % 16 == 0 ? 16 : 8)
/* the B fragments in registers where they are few */
#define BREG    (KS * N_PER_WARP <= 8)
#define M_TOTAL ((long)CT_N * CT_OD * CT_OH * CT_OW)
#define TILES_M ((M_TOTAL + BM - 1) / BM)
#define STRIDED (CT_STR_D * CT_STR_H * CT_STR_W != 1)

static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the block");
static_assert(SMEM_BYTES == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the tile");
static_assert(TILES_M < 2147483648L, "fewer than 2^31 tiles");

/* The input pixel of output pixel m (N x OD x OH x OW order). */
__device__ __forceinline__ long in_pixel(long m) {
#if STRIDED
  const long ow = m % CT_OW, t = m / CT_OW, oh = t % CT_OH, t2 = t / CT_OH, od = t2 % CT_OD,
             n = t2 / CT_OD;
  return ((n * CT_ID + od * CT_STR_D) * CT_IH + oh * CT_STR_H) * CT_IW + ow * CT_STR_W;
#else
  return m;
#endif
}

/* ldmatrix: four (two) 8x8 matrices of 16-bit elements, each lane giving
 * a row address (16-byte aligned), each lane receiving its fragment's words:
 * lane (g, q) gets row g's bytes 4q .. 4q + 3 of each matrix, in mma.sync's
 * register order (lanes 0-7 address the first matrix, 8-15 the second...). */
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

/* A thread's share of a tile's NP pieces (PPR_ a row): piece u = tid +
 * THREADS i, row u / PPR_, column piece u % PPR_. Where a thread has few
 * (PRE), each one's row and offsets are set once for the block's life, so
 * that a tile costs an add, a compare and the copy a piece (the loop's
 * division and 64-bit address took about 50 instructions a piece); row
 * NOROW: no piece (past the tile, or its channels past K). */
#define NOROW   (1 << 30)
#define UP(np)  (((np) + THREADS - 1) / THREADS)
#define PRE_MAX 6
template <int N> struct piece_set {
  int row[N];
  unsigned soff[N]; /* shared offset in the tile's buffer */
  int goff[N];      /* global offset from the tile's first pixel (bytes) */
};
/* The set of NP pieces of PB bytes, PPR_ a row, shared row stride SROW,
 * global row stride GROW, global column offset G0 (bytes); cols: the row's
 * bytes that exist (pieces at or past it have none). */
template <typename SET>
__device__ __forceinline__ SET pieces_of(int tid, int np, int ppr, int pb, int srow, int grow,
                                         int g0, int cols) {
  SET ps;
  constexpr int N = sizeof ps.row / sizeof ps.row[0];
#pragma unroll
  for (int i = 0; i < N; i++) {
    const int u = tid + THREADS * i, r = u / ppr, c = (u - r * ppr) * pb;
    ps.row[i] = u < np && c < cols ? r : NOROW;
    ps.soff[i] = (unsigned)(r * srow + c);
    ps.goff[i] = r * grow + g0 + c;
  }
  return ps;
}

/* PB bytes global -> shared, asynchronously. */
template <int PB> __device__ __forceinline__ void cp_piece(unsigned dst, const void *src) {
  if (PB == 16)
    cp_async16(dst, src, 16);
  else
    cp_async8(dst, src);
}

#define PPR_A (PW_C / APIECE) /* pieces a pixel row */
#define PPR_R (BN / RPIECE)   /* pieces a residual row */
#define PPR_O (BN * ESZ / PIECE)
#define PRE_A (!STRIDED && UP(BM * PPR_A) <= PRE_MAX)
#define PRE_R (UP(BM * PPR_R) <= PRE_MAX)
#define PRE_O (UP(BM * PPR_O) <= PRE_MAX)
typedef piece_set<PRE_A ? UP(BM *PPR_A) : 1> a_set;
typedef piece_set<PRE_R ? UP(BM *PPR_R) : 1> r_set;
typedef piece_set<PRE_O ? UP(BM *PPR_O) : 1> o_set;

/* Start tile t's pixel rows (and residual rows) into stage buffers sa (and
 * sr), cp.async a piece at a time; rows past the last pixel and residual
 * pieces past K are left as they are (never stored). The caller commits. */
__device__ __forceinline__ void load_tile(const unsigned char *__restrict__ data,
                                          const void *__restrict__ residual, long t, unsigned sa,
                                          unsigned sr, int n0, int tid, const a_set &pa,
                                          const r_set &pr) {
  const long m0 = t * BM;
  const int left = M_TOTAL - m0 < BM ? (int)(M_TOTAL - m0) : BM; /* rows of the tile that exist */
#if PRE_A
  const unsigned char *base = data + m0 * PW_C;
#pragma unroll
  for (int i = 0; i < UP(BM * PPR_A); i++)
    if (pa.row[i] < left) cp_piece<APIECE>(sa + pa.soff[i], base + pa.goff[i]);
#else
  (void)pa;
#pragma unroll 4
  for (int u = tid; u < BM * PPR_A; u += THREADS) {
    const int r = u / PPR_A, p = u - r * PPR_A;
    if (r >= left) continue;
    cp_piece<APIECE>(sa + (unsigned)(r * RS + p * APIECE),
                     data + in_pixel(m0 + r) * PW_C + p * APIECE);
  }
#endif
#if CT_RES
  const unsigned char *rbase = (const unsigned char *)residual + m0 * CT_KR;
#if PRE_R
  (void)n0;
#pragma unroll
  for (int i = 0; i < UP(BM * PPR_R); i++)
    if (pr.row[i] < left) cp_piece<RPIECE>(sr + pr.soff[i], rbase + pr.goff[i]);
#else
  (void)pr;
#pragma unroll 2
  for (int u = tid; u < BM * PPR_R; u += THREADS) {
    const int r = u / PPR_R, p = u - r * PPR_R;
    const int k = n0 + p * RPIECE;
    if (r >= left || k >= CT_KR) continue;
    cp_piece<RPIECE>(sr + (unsigned)(r * OPS + p * RPIECE), rbase + (long)r * CT_KR + k);
  }
#endif
#else
  (void)residual, (void)sr, (void)n0, (void)pr;
#endif
}

/* onnx rounding without a residual can take the seeded forms (quant.cuh's
 * ctq_requant_onnx_seeded) where the params' onnx block has CTQO_SEED */
#define PW_SEED (CT_ONNX && !CT_RES && CT_OUT != 0)

/* The epilogue of one group of M_UNROLL m-tiles (first mb): each n-tile's
 * sums into the output tile so, the thread's slot oslot, rres its first
 * residual pair's place in the residual tile (CT_RES). FORM RQ_ONNX_SAT or
 * RQ_ONNX_SEED: that seeded onnx form, the sums started from off +
 * CTQ_MAGIC_I (the kernel's prologue); RQ_GENERAL: requant2_rows's forms.
 * Chosen once for the group by the caller, so that no branch fences one
 * n-tile's requantization from the next's. */
template <int FORM>
__device__ __forceinline__ void epilogue_mtiles(const q_head &qh, const int (&acc)[M_UNROLL][N_PER_WARP][4],
                                                const q_chan (&l0)[N_PER_WARP],
                                                const q_chan (&l1)[N_PER_WARP],
                                                const bool (&live)[N_PER_WARP], int mb,
                                                unsigned char *so, unsigned oslot,
                                                const unsigned char *rres) {
  (void)qh, (void)l0, (void)l1, (void)rres;
#pragma unroll
  for (int u = 0; u < M_UNROLL; u++) {
    const unsigned mt = (unsigned)(mb + u);
#pragma unroll
    for (int j = 0; j < N_PER_WARP; j++) {
      if (!live[j]) continue;
      unsigned char *o0 = so + mt * 16u * OPS + oslot + 8 * j * ESZ, *o1 = o0 + 8 * OPS;
      /* channels kw + 8 j + 2q, + 1 of rows 16 mt + g (acc 0, 1) and
       * + 8 (acc 2, 3) */
      const int v00 = acc[u][j][0], v01 = acc[u][j][1], v10 = acc[u][j][2], v11 = acc[u][j][3];
#if CT_OUT == 0
      *(int2 *)o0 = make_int2(v00, v01);
      *(int2 *)o1 = make_int2(v10, v11);
#else
      unsigned y0, y1;
#if PW_SEED
      if (FORM != RQ_GENERAL) {
        constexpr int hi = FORM == RQ_ONNX_SEED;
        y0 = requant2_onnx_seeded<hi>(qh, l0[j], l1[j], v00, v01);
        y1 = requant2_onnx_seeded<hi>(qh, l0[j], l1[j], v10, v11);
      } else
#endif
      {
        unsigned rr[2] = {0, 0};
#if CT_RES
        {
          const unsigned char *rp = rres + mt * 16u * OPS + 8 * j;
          rr[0] = *(const unsigned short *)rp;
          rr[1] = *(const unsigned short *)(rp + 8 * OPS);
        }
#endif
        requant2_rows(qh, l0[j], l1[j], v00, v01, v10, v11, rr, y0, y1);
      }
      *(unsigned short *)o0 = (unsigned short)y0;
      *(unsigned short *)o1 = (unsigned short)y1;
#endif
    }
  }
}

/* ---- the kernel ---------------------------------------------------------- */
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    conv_pw_mma(const unsigned char *__restrict__ data, const unsigned char *__restrict__ weights,
                void *__restrict__ out, const int *__restrict__ params,
                const void *__restrict__ residual) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, q = lane % 4;
  const int wn = warp % WARPS_N, wm = warp / WARPS_N;
  const int n0 = blockIdx.y * BN;          /* the block's first output channel */
  const int kw = n0 + wn * N_PER_WARP * 8; /* the warp's */
  unsigned char *so = smem_raw + SB_BYTES + STAGES * (SA_BYTES + SR_BYTES);
  const unsigned sbase = smem_addr(smem_raw);
  const unsigned sb = sbase, sa0 = sbase + (unsigned)SB_BYTES,
                 sr0 = sa0 + (unsigned)(STAGES * SA_BYTES);

  /* the params into L2 (l2_prefetch.cuh), read after the wait */
  if (tid == 0 && blockIdx.x == 0 && blockIdx.y == 0) l2_prefetch(params, L2P_PARAMS_BYTES(CT_KR));
  /* the block's weights, BN rows of RS bytes: zero past C and past K (the
   * weights are constant: read before the wait) */
  for (int u = tid; u < BN * (RS / 4); u += THREADS) {
    const int n = u / (RS / 4), c = (u - n * (RS / 4)) * 4;
    const unsigned v =
        n0 + n < CT_KR && c < PW_C ? *(const unsigned *)(weights + (long)(n0 + n) * PW_C + c) : 0u;
    *(unsigned *)(smem_raw + n * RS + c) = v;
  }
  __syncthreads();
  /* the lane's row address for ldmatrix in n-tile j of the warp (add 8 j
   * RS) and k-step s (add 32 s): lanes 0-7 its 8 rows' bytes 0-15, lanes 8-15
   * their bytes 16-31 (b0, b1) */
  const unsigned bofs = sb + (unsigned)((kw - n0 + lane % 8) * RS + 16 * (lane / 8 % 2));
#if BREG
  unsigned bf[KS][N_PER_WARP][2];
#pragma unroll
  for (int s = 0; s < KS; s++)
#pragma unroll
    for (int j = 0; j < N_PER_WARP; j++) ldsm_x2(bofs + (unsigned)(8 * j * RS + 32 * s), bf[s][j]);
#endif

  pdl_wait_then_release(); /* nothing global but the weights before: the previous kernel may run */
  const q_head qh = load_head(params);
  q_chan c0[N_PER_WARP] = {}, c1[N_PER_WARP] = {};
  /* K is a multiple of 8: an n-tile is whole or absent. Where the blocks'
   * channels divide K every n-tile is live, known to ptxas: the epilogue's
   * n-tiles then need no branch each, which would fence their
   * requantizations apart (BSSY/BSYNC) and leave the warp one n-tile's
   * dependent chain to issue from at a time */
  bool live[N_PER_WARP];
#pragma unroll
  for (int j = 0; j < N_PER_WARP; j++) {
    live[j] = CT_KR % BN == 0 || kw + 8 * j < CT_KR;
    if (live[j]) load_chan2(params, qh, kw + 8 * j + 2 * q, c0[j], c1[j]);
  }
#if PW_SEED
  const int form = !qh.onnx.seed ? RQ_GENERAL : qh.onnx.hisat ? RQ_ONNX_SAT : RQ_ONNX_SEED;
  if (form != RQ_GENERAL) /* the sums start from off + CTQ_MAGIC_I */
#pragma unroll
    for (int j = 0; j < N_PER_WARP; j++) {
      c0[j].off = (int)((unsigned)c0[j].off + (unsigned)CTQ_MAGIC_I);
      c1[j].off = (int)((unsigned)c1[j].off + (unsigned)CTQ_MAGIC_I);
    }
#endif

  /* the thread's pieces of a tile: pixel rows, residual rows, output rows */
  const a_set pa = pieces_of<a_set>(tid, BM * PPR_A, PPR_A, APIECE, RS, PW_C, 0, PW_C);
  const r_set pr = pieces_of<r_set>(tid, BM * PPR_R, PPR_R, RPIECE, OPS, CT_KR, n0, CT_KR - n0);
  const o_set po = pieces_of<o_set>(tid, BM * PPR_O, PPR_O, PIECE, OPS, CT_KR * ESZ, n0 * ESZ,
                                    (CT_KR - n0) * ESZ);

  /* the block's tiles: blockIdx.x, + gridDim.x, ... */
  const long t0 = blockIdx.x, tstep = gridDim.x;
  const int nt = t0 < TILES_M ? (int)((TILES_M - 1 - t0) / tstep + 1) : 0;
#pragma unroll 1
  for (int i = 0; i < STAGES - 1; i++) {
    if (i < nt)
      load_tile(data, residual, t0 + i * tstep, sa0 + (unsigned)(i * SA_BYTES),
                sr0 + (unsigned)(i * SR_BYTES), n0, tid, pa, pr);
    cp_async_commit();
  }
  /* the lane's row address for ldmatrix in an m-tile: lanes 0-15 its rows'
   * bytes 0-15, lanes 16-31 their bytes 16-31 (a0, a1 and a2, a3) */
  const unsigned arow = (unsigned)(lane % 16 * RS + 16 * (lane / 16));
  /* the thread's place in the output tile: row g, channels 2q, 2q + 1 of
   * its first n-tile */
  const unsigned oslot = (unsigned)g * OPS + (unsigned)(kw - n0 + 2 * q) * ESZ;

#pragma unroll 1
  for (int i = 0; i < nt; i++) {
    cp_async_wait<STAGES - 2>();
    __syncthreads(); /* tile i is in; every thread is past tile i - 1 (its stage, the copy-out) */
    {
      const int j = i + STAGES - 1; /* into the stage tile i - 1 used */
      if (j < nt)
        load_tile(data, residual, t0 + j * tstep, sa0 + (unsigned)((j % STAGES) * SA_BYTES),
                  sr0 + (unsigned)((j % STAGES) * SR_BYTES), n0, tid, pa, pr);
      cp_async_commit();
    }
    const long m0 = (t0 + i * tstep) * BM;
    const unsigned sa = sa0 + (unsigned)((i % STAGES) * SA_BYTES);
#if CT_RES
    const unsigned char *sr = smem_raw + SB_BYTES + STAGES * SA_BYTES + (i % STAGES) * SR_BYTES;
#endif

    /* ---- the mma and each m-tile's epilogue ---- */
    if (live[0]) {
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
#if BREG
              mma16832(acc[u][j], a, bf[s][j]);
#else
              unsigned bb[2];
              ldsm_x2(bofs + (unsigned)(8 * j * RS + 32 * s), bb);
              mma16832(acc[u][j], a, bb);
#endif
            }
          }
        q_chan l0[N_PER_WARP], l1[N_PER_WARP]; /* the channels' values, opaque here */
#pragma unroll
        for (int j = 0; j < N_PER_WARP; j++) l0[j] = opaque_chan(c0[j]), l1[j] = opaque_chan(c1[j]);
#if CT_RES
        const unsigned char *rres = sr + (unsigned)g * OPS + (unsigned)(kw - n0 + 2 * q);
#else
        const unsigned char *rres = nullptr;
#endif
#if PW_SEED
        if (form == RQ_ONNX_SAT)
          epilogue_mtiles<RQ_ONNX_SAT>(qh, acc, l0, l1, live, mb, so, oslot, rres);
        else if (form == RQ_ONNX_SEED)
          epilogue_mtiles<RQ_ONNX_SEED>(qh, acc, l0, l1, live, mb, so, oslot, rres);
        else
#endif
          epilogue_mtiles<RQ_GENERAL>(qh, acc, l0, l1, live, mb, so, oslot, rres);
      }
    }
    __syncthreads(); /* the output tile is whole */

    /* ---- the output tile, whole rows of the output, PIECE bytes at a time ---- */
    {
      const int left = M_TOTAL - m0 < BM ? (int)(M_TOTAL - m0) : BM;
      unsigned char *obase = (unsigned char *)out + m0 * (CT_KR * ESZ);
#if PRE_O
#pragma unroll
      for (int i = 0; i < UP(BM * PPR_O); i++) {
        if (po.row[i] >= left) continue;
        if (PIECE == 16)
          *(uint4 *)(obase + po.goff[i]) = *(const uint4 *)(so + po.soff[i]);
        else
          *(uint2 *)(obase + po.goff[i]) = *(const uint2 *)(so + po.soff[i]);
      }
#else
      (void)po;
#pragma unroll 2
      for (int u = tid; u < BM * PPR_O; u += THREADS) {
        const int r = u / PPR_O, jj = u - r * PPR_O;
        const int kb = n0 * ESZ + jj * PIECE; /* the piece's byte offset in the pixel */
        if (r >= left || kb >= CT_KR * ESZ) continue;
        unsigned char *dst = obase + (long)r * (CT_KR * ESZ) + kb;
        const unsigned char *src = so + r * OPS + jj * PIECE;
        if (PIECE == 16)
          *(uint4 *)dst = *(const uint4 *)src;
        else
          *(uint2 *)dst = *(const uint2 *)src;
      }
#endif
    }
  }
  cp_async_wait<0>(); /* no copy outlives the block */
}
