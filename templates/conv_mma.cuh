/*
 * conv_mma.cuh: the body of the tensor-core convolution templates
 * conv2d_nchw4c_mma and conv3d_ncdhw4c_mma (conv2d is the D = 1 case):
 * implicit GEMM on int8 mma.sync.m16n8k32 (sm_80 and later).
 *
 * Layouts are those of the dp4a templates, so both serve one workload and
 * the dispatch library picks the faster: data NCDHW4c (int8, or uint8
 * through the u8.s8 form of the instruction), weights OIDHW4o4i, output
 * NCDHW4c (int32, or int8 / uint8 requantized, 4 channels per word).
 *
 * The GEMM: M = N x OD x OH x OW output positions, N = K output channels,
 * and the reduction over the flattened (C/4 chunks x kernel window) in
 * 4-channel words ("kwords"), so that a 3-channel stem pads C to 4, not to
 * 16 or 32. The order of the reduction is a fact of the shape: when C/4 is
 * a multiple of the block's kwords (every layer but stems), tap-major (the
 * kernel tap outermost, channel chunks fastest), so that a whole stage
 * shares one tap and the padding test is made once per position and stage;
 * otherwise the natural order of the weights (chunk, then tap) with the tap
 * decoded per word.
 *
 * A block computes a BM x BN tile with WARPS_M x WARPS_N warps, each a WM x
 * WN warp tile of m16n8 accumulators, over a STAGES-deep cp.async pipeline
 * of BK-byte reduction slices. Shared memory holds both operands k-major
 * (a row per kword): A[kword][m], B[kword][n], one 32-bit word per element
 * of 4 int8 lanes, so that a fragment register is one 32-bit load; rows are
 * padded by 8 words or XOR-swizzled (knob), either of which makes the
 * fragment loads and the cp.async stores free of bank conflicts.
 *
 * Split-K (sm_90): the SPLITK blocks of one tile form a thread-block
 * cluster, each reduces a share of the k-slices, and the partial
 * accumulators meet in distributed shared memory; rank 0 runs the
 * epilogue. No workspace, nothing to zero, no atomics.
 *
 * Rasterisation: tiles are ordered in groups of RASTER tiles along M, so
 * that blocks running together share data and weights in L2. Persistent:
 * MMA_GRID blocks loop over the tiles.
 *
 * The epilogue (templates/quant.cuh) is that of the dp4a templates:
 * acc + off[k] - zw[k] * xsum, then for 8-bit outputs the rescale, the
 * residual and the clamp. With weight zero points the window sum of the raw
 * data (xsum) comes from one more mma per m16 tile against a B of ones.
 * It either stores from the fragments (int32: 8 bytes per thread; 8-bit:
 * one word per thread after a shuffle) or stages the tile through shared
 * memory for 16-byte stores (knob). depth_to_space is left to the dp4a
 * templates.
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_mma.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

/* ---- shapes and knobs ------------------------------------------------------ */
#include "conv_shape.cuh"
#include "tc_common.cuh"

static_assert(CT_D2S == 0, "depth_to_space runs on the dp4a templates");

static_assert(BLOCK_M == 32 || BLOCK_M == 64 || BLOCK_M == 128 || BLOCK_M == 256, "block_m");
static_assert(BLOCK_N == 32 || BLOCK_N == 64 || BLOCK_N == 128 || BLOCK_N == 256, "block_n");
static_assert(BLOCK_K == 32 || BLOCK_K == 64 || BLOCK_K == 128, "block_k is 32, 64 or 128 bytes");
static_assert(WARP_M % 16 == 0 && BLOCK_M % WARP_M == 0, "warp_m: a multiple of 16 dividing block_m");
static_assert(WARP_N % 8 == 0 && BLOCK_N % WARP_N == 0, "warp_n: a multiple of 8 dividing block_n");
static_assert(STAGES >= 2 && STAGES <= 8, "stages: 2 to 8");
static_assert(SMEM_LAYOUT == 0 || SMEM_LAYOUT == 1, "smem_layout is 0 (padded) or 1 (xor)");
static_assert(SPLIT_K >= 1 && SPLIT_K <= 8, "split_k: 1 to 8 (a portable cluster)");
static_assert(A_VEC == 1 || A_VEC == 4, "a_vec: 1 or 4 words");
static_assert(EPI_SMEM == 0 || EPI_SMEM == 1, "epi_smem is 0 or 1");

#define TAPS (CT_KD * CT_KH * CT_KW)
#define KWORDS (CT_C4 * TAPS)             /* reduction length in 4-channel words */
#define P_OUT (CT_OD * CT_OH * CT_OW)     /* output positions per image */
#define M_TOTAL (CT_N * P_OUT)
#define I_PLANE (CT_ID * CT_IH * CT_IW)   /* words of one channel chunk of one image */
#define BKW (BLOCK_K / 4)                  /* kwords per stage */
#define TAP_MAJOR (CT_C4 % BKW == 0)
#define KT_TOTAL ((KWORDS + BKW - 1) / BKW)
#define KT_SPLIT ((KT_TOTAL + SPLIT_K - 1) / SPLIT_K)
#define TILES_M ((M_TOTAL + BLOCK_M - 1) / BLOCK_M)
#define TILES_N ((CT_K4 * 4 + BLOCK_N - 1) / BLOCK_N)
#define TILES (TILES_M * TILES_N)
#define WARPS_M (BLOCK_M / WARP_M)
#define WARPS_N (BLOCK_N / WARP_N)
#define THREADS (WARPS_M * WARPS_N * 32)
#define MI (WARP_M / 16) /* m16 tiles per warp */
#define NJ (WARP_N / 8)  /* n8 tiles per warp */
/* A rows: with 4-byte data loads (a_vec 1) a row holds kwords kw and kw + 4
 * of every position, interleaved so that one 16-byte load is a whole
 * fragment (a0..a3); with 16-byte data loads a row is one kword. */
#define A_PAIRED (A_VEC == 1)
#define APITCH ((A_PAIRED ? 2 : 1) * BLOCK_M + (SMEM_LAYOUT ? 0 : 8))
#define BPITCH (BLOCK_N + (SMEM_LAYOUT ? 0 : 8))
#define A_STAGE ((A_PAIRED ? BKW / 2 : BKW) * APITCH) /* words */
#define B_STAGE (BKW * BPITCH)
#define PIPE_WORDS (STAGES * (A_STAGE + B_STAGE))
#define NACC (MI * NJ * 4 + (CT_WZP ? MI * 4 : 0))
#define SPLIT_WORDS (SPLIT_K > 1 ? THREADS * NACC : 0)
#define EPI_WORDS (EPI_SMEM ? BLOCK_M * BLOCK_N : 0)
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#define SMEM_WORDS MAX2(PIPE_WORDS, MAX2(SPLIT_WORDS, EPI_WORDS))

static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the warp tiling");
static_assert(THREADS >= 32 && THREADS <= 1024, "threads per block must be 32 to 1024");
static_assert(4 * SMEM_WORDS == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the tiles");
static_assert(KT_TOTAL >= SPLIT_K, "split_k: more splits than reduction slices");
static_assert(A_VEC == 1 || (TAPS == 1 && CT_STR_D == 1 && CT_STR_H == 1 && CT_STR_W == 1 &&
                                 CT_PAD_D + CT_PAD_H + CT_PAD_W == 0 && P_OUT % 4 == 0),
              "a_vec 4 needs a 1x1 kernel, stride 1, no padding and positions % 4 == 0");
static_assert(!EPI_SMEM || CT_OUT == 0 || P_OUT % 4 == 0,
              "a staged 8-bit epilogue stores 4 positions per thread: positions % 4 == 0");
static_assert(PERSISTENT == 0 || MMA_GRID >= 1, "persistent: MMA_GRID blocks");


/* ---- shared memory --------------------------------------------------------- */
/* Word index of (kword, column) in an operand stage: padded rows (pitch %
 * 32 == 8), or the column's bits 3-4 XORed with the row's low bits (pitch %
 * 32 == 0); either keeps the fragment loads and the stores conflict-free.
 * Paired A rows: row (kw % 4) + 4 (kw / 8) holds, per 16 positions, 8 groups
 * of 4 words: (kw, m), (kw, m + 8), (kw + 4, m), (kw + 4, m + 8). */
__device__ __forceinline__ int a_idx(int kw, int m) {
#if A_PAIRED
  const int r = (kw & 3) + 4 * (kw >> 3);
  const int c = (m >> 4) * 32 + (m & 7) * 4 + ((kw >> 2) & 1) * 2 + ((m >> 3) & 1);
  return r * APITCH + (SMEM_LAYOUT ? (c ^ ((r & 3) << 3)) : c);
#else
  return kw * APITCH + (SMEM_LAYOUT ? (m ^ ((kw & 3) << 3)) : m);
#endif
}
__device__ __forceinline__ int b_idx(int kw, int n) {
  return kw * BPITCH + (SMEM_LAYOUT ? (n ^ ((kw & 3) << 3)) : n);
}

/* ---- A: the data tile --------------------------------------------------- */
/* A thread loads elements e = tid + j * THREADS of the BKW x A_ROW stage,
 * A_ROW positions (or groups of 4 with a_vec 4) per kword row. Its positions
 * are fixed: one when THREADS >= A_ROW, else MSLOT of them. */
#define A_ROW (BLOCK_M / A_VEC)
#define A_ELEMS (A_ROW * BKW)
#define A_ITERS ((A_ELEMS + THREADS - 1) / THREADS)
#define MSLOT (A_ROW > THREADS ? A_ROW / THREADS : 1)
#define B_ELEMS ((BLOCK_N / 4) * BKW) /* 16-byte chunks: 4 channels x 4 kwords... of one kword */
#define B_ITERS ((B_ELEMS + THREADS - 1) / THREADS)

struct a_rows {
  int org[MSLOT];           /* word offset of (n, chunk 0, z0, y0, x0); may be negative */
  int z[MSLOT], y[MSLOT], x[MSLOT]; /* window origin; invalid rows fail every bound */
};

__device__ __forceinline__ int a_slot_m(int tid, int s) {
  return MSLOT == 1 ? tid % A_ROW : tid + s * THREADS;
}
__device__ __forceinline__ int a_kw(int tid, int j) {
  return MSLOT == 1 ? tid / A_ROW + j * (THREADS / A_ROW) : j / MSLOT;
}

__device__ __forceinline__ void a_rows_init(a_rows &r, int tile_m, int tid) {
#pragma unroll
  for (int s = 0; s < MSLOT; s++) {
    const int m = tile_m * BLOCK_M + a_slot_m(tid, s) * A_VEC;
    if (m < M_TOTAL) {
      const int n = m / P_OUT, p = m % P_OUT;
      const int ow = p % CT_OW, oh = (p / CT_OW) % CT_OH, od = p / (CT_OW * CT_OH);
      r.z[s] = od * CT_STR_D - CT_PAD_D;
      r.y[s] = oh * CT_STR_H - CT_PAD_H;
      r.x[s] = ow * CT_STR_W - CT_PAD_W;
      r.org[s] = n * CT_C4 * I_PLANE + (r.z[s] * CT_IH + r.y[s]) * CT_IW + r.x[s];
    } else {
      r.z[s] = r.y[s] = r.x[s] = -(1 << 28);
      r.org[s] = 0;
    }
  }
}

__device__ __forceinline__ void load_a(unsigned *As, const int *__restrict__ data, const a_rows &r,
                                       int kt, int tid, int pad_word) {
#if A_VEC == 4
  /* 1x1, stride 1, no padding: kword = chunk, 4 positions in one 16 bytes */
#pragma unroll
  for (int j = 0; j < A_ITERS; j++) {
    const int kwl = a_kw(tid, j);
    if (A_ELEMS % THREADS == 0 || kwl < BKW) {
      const int s = j % MSLOT, kw = kt * BKW + kwl;
      const bool ok = r.z[s] >= 0 && kw < KWORDS;
      cp_async16(smem_addr(As + a_idx(kwl, a_slot_m(tid, s) * 4)),
                 data + (ok ? r.org[s] + kw * I_PLANE : 0), ok ? 16 : 0);
    }
  }
#elif TAP_MAJOR
  /* one tap per stage: the bounds once per position */
  const int tap = kt / (CT_C4 / BKW), c0 = (kt % (CT_C4 / BKW)) * BKW;
  const int rx = tap % CT_KW, ry = (tap / CT_KW) % CT_KH, rd = tap / (CT_KW * CT_KH);
  const int dz = rd * CT_DIL_D, dy = ry * CT_DIL_H, dx = rx * CT_DIL_W;
  const int off = (dz * CT_IH + dy) * CT_IW + dx + c0 * I_PLANE;
  bool ok[MSLOT];
#pragma unroll
  for (int s = 0; s < MSLOT; s++)
    ok[s] = (unsigned)(r.z[s] + dz) < (unsigned)CT_ID && (unsigned)(r.y[s] + dy) < (unsigned)CT_IH &&
            (unsigned)(r.x[s] + dx) < (unsigned)CT_IW;
#pragma unroll
  for (int j = 0; j < A_ITERS; j++) {
    const int kwl = a_kw(tid, j);
    if (A_ELEMS % THREADS == 0 || kwl < BKW) {
      const int s = j % MSLOT;
      unsigned *dst = As + a_idx(kwl, a_slot_m(tid, s));
      if (ok[s])
        cp_async4(smem_addr(dst), data + r.org[s] + off + kwl * I_PLANE, 4);
      else
        *dst = pad_word;
    }
  }
#else
  /* natural order: each word decodes its chunk and tap */
#pragma unroll
  for (int j = 0; j < A_ITERS; j++) {
    const int kwl = a_kw(tid, j);
    if (A_ELEMS % THREADS == 0 || kwl < BKW) {
      const int s = j % MSLOT, kw = kt * BKW + kwl;
      const int c = kw / TAPS, tap = kw % TAPS;
      const int rx = tap % CT_KW, ry = (tap / CT_KW) % CT_KH, rd = tap / (CT_KW * CT_KH);
      const int dz = rd * CT_DIL_D, dy = ry * CT_DIL_H, dx = rx * CT_DIL_W;
      unsigned *dst = As + a_idx(kwl, a_slot_m(tid, s));
      if (kw >= KWORDS)
        *dst = 0; /* beyond the reduction: the weights there are zero too */
      else if ((unsigned)(r.z[s] + dz) < (unsigned)CT_ID &&
               (unsigned)(r.y[s] + dy) < (unsigned)CT_IH &&
               (unsigned)(r.x[s] + dx) < (unsigned)CT_IW)
        cp_async4(smem_addr(dst), data + r.org[s] + c * I_PLANE + (dz * CT_IH + dy) * CT_IW + dx, 4);
      else
        *dst = pad_word;
    }
  }
#endif
}

/* ---- B: the weight tile ------------------------------------------------- */
/* 16-byte chunks (4 output channels x 4 input channels of one kword); lanes
 * 0-3 of every 4 take 4 kwords of one channel chunk (64 contiguous bytes),
 * which also makes the stores to the k-major tile conflict-free. */
__device__ __forceinline__ void load_b(unsigned *Bs, const int4 *__restrict__ weights, int tile_n,
                                       int kt, int tid) {
#if TAP_MAJOR
  const int tap = kt / (CT_C4 / BKW), c0 = (kt % (CT_C4 / BKW)) * BKW;
#endif
#pragma unroll
  for (int j = 0; j < B_ITERS; j++) {
    const int e = tid + j * THREADS;
    if (B_ELEMS % THREADS == 0 || e < B_ELEMS) {
      const int f = (e >> 2) % (BLOCK_N / 4), kwl = ((e >> 2) / (BLOCK_N / 4)) * 4 + (e & 3);
      const int k4 = tile_n * (BLOCK_N / 4) + f;
#if TAP_MAJOR
      const bool ok = k4 < CT_K4;
      const long chunk = ((long)k4 * CT_C4 + c0 + kwl) * TAPS + tap;
#else
      const int kw = kt * BKW + kwl;
      const bool ok = k4 < CT_K4 && kw < KWORDS;
      const long chunk = (long)k4 * KWORDS + kw;
#endif
      cp_async16(smem_addr(Bs + b_idx(kwl, f * 4)), weights + (ok ? chunk : 0), ok ? 16 : 0);
    }
  }
}

/* ---- the kernel ---------------------------------------------------------- */
#ifndef CT_CUSTOM_ENTRY
extern "C" __global__ void
#if SPLIT_K > 1
__cluster_dims__(1, SPLIT_K, 1)
#endif
__launch_bounds__(THREADS) conv_mma(const int *__restrict__ data, const int4 *__restrict__ weights,
                                    void *__restrict__ out, const int *__restrict__ params,
                                    const void *__restrict__ residual) {
  extern __shared__ int4 smem4[];
  unsigned *smem = (unsigned *)smem4;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wm = warp % WARPS_M, wn = warp / WARPS_M;
#if CT_ZD
  const int pad_word = params[CTQ_PAD_WORD]; /* padding reads the data zero point */
#else
  const int pad_word = 0;
#endif
  const q_head qh = load_head(params);
  const int split = blockIdx.y;
  const int kt0 = split * KT_SPLIT;
  const int kt1 = kt0 + KT_SPLIT < KT_TOTAL ? kt0 + KT_SPLIT : KT_TOTAL;
  const int nkt = kt1 > kt0 ? kt1 - kt0 : 0;

#if PERSISTENT
#pragma unroll 1
  for (int u = blockIdx.x; u < TILES; u += MMA_GRID) {
#else
  {
    const int u = blockIdx.x;
#endif
    /* rasterisation: groups of RASTER tiles along M, N across a group */
    const int width = RASTER * TILES_N, grp = u / width;
    const int first_m = grp * RASTER;
    const int gsz = TILES_M - first_m < RASTER ? TILES_M - first_m : RASTER;
    const int tile_m = first_m + (u % width) % gsz, tile_n = (u % width) / gsz;

    a_rows rows;
    a_rows_init(rows, tile_m, tid);
    int acc[MI][NJ][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
      for (int j = 0; j < NJ; j++)
#pragma unroll
        for (int l = 0; l < 4; l++) acc[i][j][l] = 0;
#if CT_WZP
    int xacc[MI][4];
    const unsigned ones[2] = {0x01010101u, 0x01010101u};
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
      for (int l = 0; l < 4; l++) xacc[i][l] = 0;
#endif

    __syncthreads(); /* the previous tile is done with shared memory */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
      if (s < nkt) {
        load_a(smem + s * A_STAGE, data, rows, kt0 + s, tid, pad_word);
        load_b(smem + STAGES * A_STAGE + s * B_STAGE, weights, tile_n, kt0 + s, tid);
      }
      cp_async_commit();
    }
#pragma unroll 1
    for (int it = 0; it < nkt; it++) {
      cp_async_wait<STAGES - 2>();
      __syncthreads(); /* stage it has landed; stage it - 1 is free */
      const int nx = it + STAGES - 1;
      if (nx < nkt) {
        const int sn = nx % STAGES;
        load_a(smem + sn * A_STAGE, data, rows, kt0 + nx, tid, pad_word);
        load_b(smem + STAGES * A_STAGE + sn * B_STAGE, weights, tile_n, kt0 + nx, tid);
      }
      cp_async_commit();
      const int sc = it % STAGES;
      const unsigned *As = smem + sc * A_STAGE;
      const unsigned *Bs = smem + STAGES * A_STAGE + sc * B_STAGE;
#pragma unroll
      for (int kk = 0; kk < BKW / 8; kk++) {
        const int kw = kk * 8 + t;
        unsigned af[MI][4], bf[NJ][2];
#pragma unroll
        for (int i = 0; i < MI; i++) {
          const int m = wm * WARP_M + i * 16 + g;
#if A_PAIRED
          const uint4 q = *(const uint4 *)&As[a_idx(kw, m)];
          af[i][0] = q.x;
          af[i][1] = q.y;
          af[i][2] = q.z;
          af[i][3] = q.w;
#else
          af[i][0] = As[a_idx(kw, m)];
          af[i][1] = As[a_idx(kw, m + 8)];
          af[i][2] = As[a_idx(kw + 4, m)];
          af[i][3] = As[a_idx(kw + 4, m + 8)];
#endif
        }
#pragma unroll
        for (int j = 0; j < NJ; j++) {
          const int n = wn * WARP_N + j * 8 + g;
          bf[j][0] = Bs[b_idx(kw, n)];
          bf[j][1] = Bs[b_idx(kw + 4, n)];
        }
#pragma unroll
        for (int i = 0; i < MI; i++) {
#pragma unroll
          for (int j = 0; j < NJ; j++) mma16832(acc[i][j], af[i], bf[j]);
#if CT_WZP
          mma16832(xacc[i], af[i], ones);
#endif
        }
      }
    }
    cp_async_wait<0>();
    __syncthreads(); /* shared memory is free for the reduction and the epilogue */

#if SPLIT_K > 1
    {
      /* the cluster's partial sums meet in rank 0's registers */
      unsigned *red = smem;
#pragma unroll
      for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
          for (int l = 0; l < 4; l++) red[((i * NJ + j) * 4 + l) * THREADS + tid] = acc[i][j][l];
#if CT_WZP
#pragma unroll
      for (int i = 0; i < MI; i++)
#pragma unroll
        for (int l = 0; l < 4; l++) red[(MI * NJ * 4 + i * 4 + l) * THREADS + tid] = xacc[i][l];
#endif
      cluster_sync();
      const unsigned rank = cluster_rank();
      if (rank == 0) {
#pragma unroll 1
        for (unsigned q = 1; q < SPLIT_K; q++) {
          const unsigned base = cluster_map(smem_addr(red), q);
#pragma unroll
          for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
              for (int l = 0; l < 4; l++)
                acc[i][j][l] = (int)((unsigned)acc[i][j][l] +
                                     cluster_load(base + 4u * (((i * NJ + j) * 4 + l) * THREADS + tid)));
#if CT_WZP
#pragma unroll
          for (int i = 0; i < MI; i++)
#pragma unroll
            for (int l = 0; l < 4; l++)
              xacc[i][l] = (int)((unsigned)xacc[i][l] +
                                 cluster_load(base + 4u * ((MI * NJ * 4 + i * 4 + l) * THREADS + tid)));
#endif
        }
      }
      cluster_sync(); /* the others keep their shared memory until rank 0 has read it */
      if (rank != 0) {
#if PERSISTENT
        continue;
#else
        return;
#endif
      }
    }
#endif

    const int mb = tile_m * BLOCK_M + wm * WARP_M, nb = tile_n * BLOCK_N + wn * WARP_N;
#if EPI_SMEM
    /* stage the corrected int32 tile as [BN/4][BM][4], then 16-byte stores */
    int *stile = (int *)smem;
#pragma unroll
    for (int j = 0; j < NJ; j++) {
      const int kl = wn * WARP_N + j * 8 + 2 * t;
      const int k = tile_n * BLOCK_N + kl < KP ? tile_n * BLOCK_N + kl : 0; /* params in range */
      const q_chan c0 = load_chan(params, qh, k), c1 = load_chan(params, qh, k + 1);
#pragma unroll
      for (int i = 0; i < MI; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int ml = wm * WARP_M + i * 16 + g + 8 * h;
#if CT_WZP
          const int xs = xacc[i][2 * h];
#else
          const int xs = 0;
#endif
          int2 v;
          v.x = corrected(c0, acc[i][j][2 * h], xs);
          v.y = corrected(c1, acc[i][j][2 * h + 1], xs);
          *(int2 *)&stile[((kl >> 2) * BLOCK_M + ml) * 4 + (kl & 3)] = v;
        }
    }
    __syncthreads();
#if CT_OUT == 0
#pragma unroll 1
    for (int e = tid; e < (BLOCK_N / 4) * BLOCK_M; e += THREADS) {
      const int ml = e % BLOCK_M, f = e / BLOCK_M;
      const int m = tile_m * BLOCK_M + ml, k4 = tile_n * (BLOCK_N / 4) + f;
      if (m < M_TOTAL && k4 < CT_K4) {
        const int n = m / P_OUT, p = m % P_OUT;
        ((int4 *)out)[((long)n * CT_K4 + k4) * P_OUT + p] = ((const int4 *)stile)[e];
      }
    }
#else
#pragma unroll 1
    for (int e = tid; e < (BLOCK_N / 4) * (BLOCK_M / 4); e += THREADS) {
      const int ml = (e % (BLOCK_M / 4)) * 4, f = e / (BLOCK_M / 4);
      const int m = tile_m * BLOCK_M + ml, k4 = tile_n * (BLOCK_N / 4) + f;
      if (m < M_TOTAL && k4 < CT_K4) {
        const int n = m / P_OUT, p = m % P_OUT;
        const long pos = ((long)n * CT_K4 + k4) * P_OUT + p; /* 4 positions, 16 bytes */
        uint4 rw = make_uint4(0, 0, 0, 0);
        if (CT_RES) rw = ((const uint4 *)residual)[pos / 4];
        const unsigned rws[4] = {rw.x, rw.y, rw.z, rw.w};
        q_chan cs[4];
#pragma unroll
        for (int l = 0; l < 4; l++) cs[l] = load_chan(params, qh, k4 * 4 + l);
        unsigned words[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
          const int4 v = ((const int4 *)stile)[f * BLOCK_M + ml + q];
          const int vs[4] = {v.x, v.y, v.z, v.w};
          unsigned word = 0;
#pragma unroll
          for (int l = 0; l < 4; l++)
            word |= requant(qh, cs[l], vs[l], (rws[q] >> (8 * l)) & 0xffu) << (8 * l);
          words[q] = word;
        }
        ((uint4 *)out)[pos / 4] = make_uint4(words[0], words[1], words[2], words[3]);
      }
    }
#endif
#else /* stores from the fragments */
#pragma unroll
    for (int j = 0; j < NJ; j++) {
      const int k4 = (nb + j * 8 + 2 * t) >> 2;
      const int k = k4 < CT_K4 ? nb + j * 8 + 2 * t : 0; /* params in range; not stored */
      const q_chan c0 = load_chan(params, qh, k), c1 = load_chan(params, qh, k + 1);
#pragma unroll
      for (int i = 0; i < MI; i++) {
        const int m0 = mb + i * 16 + g, m1 = m0 + 8;
        const long o0 = ((long)(m0 / P_OUT) * CT_K4 + k4) * P_OUT + m0 % P_OUT;
        const long o1 = ((long)(m1 / P_OUT) * CT_K4 + k4) * P_OUT + m1 % P_OUT;
#if CT_WZP
        const int xs0 = xacc[i][0], xs1 = xacc[i][2];
#else
        const int xs0 = 0, xs1 = 0;
#endif
        const int v00 = corrected(c0, acc[i][j][0], xs0);
        const int v01 = corrected(c1, acc[i][j][1], xs0);
        const int v10 = corrected(c0, acc[i][j][2], xs1);
        const int v11 = corrected(c1, acc[i][j][3], xs1);
        store_frag(out, residual, qh, c0, c1, k4, t, v00, v01, v10, v11, o0, m0 < M_TOTAL, o1,
                   m1 < M_TOTAL);
      }
    }
#endif
  }
}
#endif
