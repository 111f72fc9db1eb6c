/*
 * conv_wgmma.cuh: the body of the Hopper tensor-core templates
 * conv2d_nchw4c_wgmma and conv3d_ncdhw4c_wgmma (conv2d is the D = 1 case):
 * implicit GEMM on wgmma.mma_async m64nNk32 (sm_90a), fed by the bulk
 * tensor copy engine (TMA) through an mbarrier pipeline, with a producer
 * warpgroup and one or two consumer warpgroups.
 *
 * Layouts are those of the dp4a and mma templates (data NCDHW4c, weights
 * OIDHW4o4i, output NCDHW4c), so that all of them serve one packed
 * workload. int8 wgmma takes both operands K-major, which these layouts are
 * not, so:
 *   - A (the data) goes from shared memory to registers: wgmma's register
 *     fragment of A is that of mma.sync m16n8k32, and 4 conflict-free
 *     32-bit shared loads make one. Shared memory holds a stage of A as
 *     [row][kword][12 words]: a row is 8 consecutive output positions
 *     along W (at offset 0-3 of the 12: TMA's innermost coordinate must
 *     be 16-byte aligned), and 2 rows make a warp's 16; the kwords of a
 *     k32 step are ordered even ones first (k_slot), which with the pitch
 *     of 12 makes the loads free of bank conflicts. The tile of a block is a box of
 *     8 (W) x tile_h (H) x tile_d (D) x tile_n (images) output positions,
 *     64 per consumer warpgroup, so that one TMA box per stage loads it:
 *     the tensor map views the data as (W, C/4, H, D, N) 32-bit words with
 *     the conv's strides along H and D as traversal strides; the padding
 *     is the box falling outside the tensor, which TMA fills with zeros.
 *     Where the tensor map cannot describe the data (W not a multiple of
 *     4: its rows are not 16-byte multiples; a stride along W: TMA has no
 *     traversal stride on its innermost axis), or the knob says so, the producer
 *     warpgroup loads the same layout with 4-byte cp.async instead.
 *   - B (the weights) is written K-major by the producer warpgroup with
 *     4-byte cp.async, 8 x 16-byte core matrices, no swizzle: the 4x4
 *     transposition of each 16-byte weight chunk is in the addresses.
 *
 * The reduction is tap-major (the kernel tap outermost, then slices of
 * block_k / 4 channel words), so a stage is one tap and one box: C/4 must
 * be a multiple of block_k / 4 (the 3-channel stems run on the mma
 * templates). A stage's full barrier counts the producers' cp.async
 * arrivals and the TMA's bytes; its empty barrier one arrival per consumer
 * thread once its wgmma has read the stage. Consumers keep one wgmma group
 * in flight (two register sets of A fragments alternate).
 *
 * The epilogue is the mma templates' fragment store (tc_common.cuh): a
 * wgmma accumulator is, per warp, the m16n8 layout. With weight zero
 * points the window sum comes from an mma.sync of the A fragment against
 * a B of ones. depth_to_space is left to the dp4a templates; data zero
 * points with padding to the cp.async loads (TMA pads with zeros).
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_wgmma.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

/* ---- shapes and knobs ------------------------------------------------------ */
#include "conv_shape.cuh"
#include "tc_common.cuh"

static_assert(CT_D2S == 0, "depth_to_space runs on the dp4a templates");
static_assert(BLOCK_N == 64 || BLOCK_N == 128 || BLOCK_N == 256, "block_n is 64, 128 or 256");
static_assert(BLOCK_K == 32 || BLOCK_K == 64 || BLOCK_K == 128, "block_k is 32, 64 or 128 bytes");
static_assert(WARPGROUPS == 1 || WARPGROUPS == 2, "warpgroups: 1 or 2 consumer warpgroups");
static_assert(STAGES >= 2 && STAGES <= 8, "stages: 2 to 8");
static_assert(TMA == 0 || TMA == 1, "tma is 0 or 1");
static_assert(SPLIT_K == 1 || SPLIT_K == 2 || SPLIT_K == 4 || SPLIT_K == 8,
              "split_k: 1, 2, 4 or 8 blocks (a portable cluster)");
/* Every consumer thread arrives on a stage's empty barrier (128 per
 * consumer warpgroup). One arrival per warp from lane 0 after __syncwarp is
 * as correct under the PTX memory model, but compute-sanitizer's racecheck
 * (2025.3) does not carry __syncwarp into the arrival and reports every
 * refill of the stage as a race (bench/issue33_racecheck_probe.cu, mode
 * 2); the arrival of every thread measured the same speed (geomean 0.997
 * over 136 configs on the H200, bench/results/h200-issue33-sanitize). */
#define EMPTY_ARRIVALS (128 * WARPGROUPS)

#define TAPS (CT_KD * CT_KH * CT_KW)
#define P_OUT (CT_OD * CT_OH * CT_OW)
#define I_PLANE (CT_ID * CT_IH * CT_IW)
#define BKW (BLOCK_K / 4)     /* channel words per stage */
#define KSTEPS (BLOCK_K / 32) /* k32 steps per stage */
#define CSLICES (CT_C4 / BKW)
#define KT (TAPS * CSLICES) /* stages of the reduction */
#define KT_SPLIT ((KT + SPLIT_K - 1) / SPLIT_K) /* stages per split */
#define BM (64 * WARPGROUPS)
#define ROWS (BM / 8)
#define TN (ROWS / (TILE_H * TILE_D)) /* images per tile */
#define TILES_W ((CT_OW + 7) / 8)
#define TILES_H ((CT_OH + TILE_H - 1) / TILE_H)
#define TILES_D ((CT_OD + TILE_D - 1) / TILE_D)
#define TILES_NI ((CT_N + TN - 1) / TN)
#define THREADS (128 * (WARPGROUPS + 1))
/* A row: the 8 positions at word offset off (0-3) of 12 loaded from the
 * 16-byte-aligned column below the tap's first one (TMA's innermost
 * coordinate must be 16-byte aligned) */
#define AW 12
#define A_STAGE_BYTES (ROWS * BKW * AW * 4)
#define B_STAGE_BYTES (BLOCK_N * BLOCK_K)
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define NACC (BLOCK_N / 2)
#define CTHREADS (128 * WARPGROUPS)
/* split-K: each block of the cluster leaves its accumulators (and window
 * sums) in shared memory, [value][consumer thread]; rank r reduces and
 * stores the accumulator groups j (8 channels each) with j / JPR == r */
#define NRED (NACC + (CT_WZP ? 4 : 0))
#define RED_BYTES (SPLIT_K > 1 ? CTHREADS * NRED * 4 : 0)
#define JPR (BLOCK_N / 8 / SPLIT_K)
#define PIPE_BYTES (STAGES * STAGE_BYTES)
#define DATA_BYTES (PIPE_BYTES > RED_BYTES ? PIPE_BYTES : RED_BYTES)
#define SMEM_BYTES (DATA_BYTES + 16 * STAGES)

static_assert(CT_C4 % BKW == 0, "the reduction is tap-major: C/4 must be a multiple of block_k/4");
static_assert(TN >= 1 && TN * TILE_H * TILE_D == ROWS, "tile_h x tile_d must divide block_m / 8");
static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the warpgroups");
static_assert(SMEM_BYTES == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the stages");
static_assert((SPLIT_K - 1) * KT_SPLIT < KT, "split_k: a split without a stage of the reduction");
static_assert(JPR >= 1 && JPR * 8 * SPLIT_K == BLOCK_N, "split_k must divide block_n / 8");
#if TMA
static_assert(CT_IW % 4 == 0, "tma: the rows of the data must be 16-byte multiples (W % 4 == 0)");
static_assert(CT_STR_W == 1 && CT_STR_H <= 8 && CT_STR_D <= 8,
              "tma: stride 1 along W (no traversal stride on the innermost axis), at most 8");
static_assert(!CT_ZD || CT_PAD_D + CT_PAD_H + CT_PAD_W + CT_PADA_D + CT_PADA_H + CT_PADA_W == 0,
              "tma pads with zeros: a data zero point with padding needs the cp.async loads");
#endif

/* ---- PTX ------------------------------------------------------------------ */
#include "wgmma_ptx.cuh"

/* The descriptor of a K-major B in shared memory, no swizzle: core
 * matrices of 8 rows x 16 bytes; the next 16 bytes of K 128 bytes on
 * (leading byte offset), the next 8 rows block_k * 8 bytes on (stride). */
__device__ __forceinline__ unsigned long long b_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (unsigned long long)(128 >> 4) << 16 |
         (unsigned long long)((BLOCK_K * 8) >> 4) << 32;
}

/* Where kword c of a stage sits along K: within each 8, the even ones are
 * the fragments' slots 0-3 and the odd ones slots 4-7, which with rows of
 * 12 words makes the fragment loads conflict-free. */
__device__ __forceinline__ int k_slot(int c) {
  return (c & ~7) | (c & 1) << 2 | (c & 7) >> 1;
}

__device__ __forceinline__ void wgmma_step(int *acc, const unsigned *a, unsigned long long b) {
#if BLOCK_N == 64
  wgmma_rs_n64(acc, a, b);
#elif BLOCK_N == 128
  wgmma_rs_n128(acc, a, b);
#else
  wgmma_rs_n256(acc, a, b);
#endif
}

/* Registers the compiler must keep until here (A fragments an in-flight
 * wgmma may still read). */
__device__ __forceinline__ void keep(const unsigned (&f)[KSTEPS][4]) {
#pragma unroll
  for (int k = 0; k < KSTEPS; k++)
    asm volatile("" ::"r"(f[k][0]), "r"(f[k][1]), "r"(f[k][2]), "r"(f[k][3]) : "memory");
}

/* ---- the producer warpgroup ----------------------------------------------- */
__device__ __forceinline__ void produce(unsigned char *smem, unsigned bars, const int *__restrict__ data,
                                        const int *__restrict__ weights, const int *__restrict__ params,
                                        const void *map, int ltid, int tw, int th, int td, int tn,
                                        int tile_n, int kt0, int nkt) {
  (void)map, (void)params, (void)data;
#pragma unroll 1
  for (int it = 0; it < nkt; it++) {
    const int s = it % STAGES, kt = kt0 + it;
    const unsigned full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
    mbar_wait(empty, ((it / STAGES) & 1) ^ 1);
    const int tap = kt / CSLICES, c0 = (kt % CSLICES) * BKW;
    const int rx = tap % CT_KW, ry = (tap / CT_KW) % CT_KH, rd = tap / (CT_KW * CT_KH);
    const int x0 = tw * 8 * CT_STR_W - CT_PAD_W + rx * CT_DIL_W;
    const int y0 = th * TILE_H * CT_STR_H - CT_PAD_H + ry * CT_DIL_H;
    const int z0 = td * TILE_D * CT_STR_D - CT_PAD_D + rd * CT_DIL_D;
    const int n0 = tn * TN;
    const unsigned as = smem_addr(smem + s * STAGE_BYTES), bs = as + A_STAGE_BYTES;
#if TMA
    if (ltid == 0) {
      mbar_expect_tx(full, A_STAGE_BYTES);
      tma_tile5(as, (const ct_tmap *)map, x0 & ~3, c0, y0, z0, n0, full);
    }
#else
    /* A: element e = (row, kword, position) of the stage, at offset 0 */
#pragma unroll 4
    for (int e = ltid; e < BM * BKW; e += 128) {
      const int w = e & 7, c = (e >> 3) % BKW, r = (e >> 3) / BKW;
      const int ni = r / (TILE_D * TILE_H), dd = (r / TILE_H) % TILE_D, hh = r % TILE_H;
      const int x = x0 + w * CT_STR_W, y = y0 + hh * CT_STR_H, z = z0 + dd * CT_STR_D, n = n0 + ni;
      if ((unsigned)x < (unsigned)CT_IW && (unsigned)y < (unsigned)CT_IH &&
          (unsigned)z < (unsigned)CT_ID && n < CT_N)
        cp_async4(as + 4 * ((r * BKW + c) * AW + w),
                  data + ((long)(n * CT_C4 + c0 + c) * CT_ID + z) * (CT_IH * CT_IW) + y * CT_IW + x,
                  4);
      else /* padding reads the data zero point */
        cp_async4(as + 4 * ((r * BKW + c) * AW + w), CT_ZD ? params + CTQ_PAD_WORD : data,
                  CT_ZD ? 4 : 0);
    }
#endif
    /* B: word (n, kword) of the stage at its K-major core-matrix place
     * (k_slot); a warp covers 8 rows x 4 kwords */
#pragma unroll 4
    for (int f = ltid; f < BLOCK_N * BKW; f += 128) {
      const int o = f & 3, cl = (f >> 2) & 3, kl = (f >> 4) & 1, rest = f >> 5;
      const int ch = rest % (BKW / 4), kh = rest / (BKW / 4);
      const int k4 = tile_n * (BLOCK_N / 4) + kh * 2 + kl;
      const bool ok = k4 < CT_K4;
      const int slot = k_slot(ch * 4 + cl);
      cp_async4(bs + kh * (BLOCK_K * 8) + (slot >> 2) * 128 + (kl * 4 + o) * 16 + (slot & 3) * 4,
                weights + (ok ? ((long)(k4 * CT_C4 + c0 + ch * 4 + cl) * TAPS + tap) * 4 + o : 0),
                ok ? 4 : 0);
    }
    cp_async_mbar_arrive(full);
  }
}

/* ---- a consumer stage ------------------------------------------------------ */
/* Wait for stage it (reduction stage kt), load its A fragments into cur,
 * issue its wgmma, then wait for stage it - 1's (whose fragments are prev)
 * and release it. */
__device__ __forceinline__ void consume(const unsigned char *smem, unsigned bars, int it, int kt,
                                        int tw,
                                        int *acc, unsigned (&cur)[KSTEPS][4],
                                        const unsigned (&prev)[KSTEPS][4], int *xacc, int r0,
                                        int g, int t) {
  (void)xacc;
  const int s = it % STAGES;
  mbar_wait(bars + 8 * s, (it / STAGES) & 1);
  fence_proxy_async();
#if TMA
  /* the tap's first column within the 16-byte-aligned box */
  const int rx = (kt / CSLICES) % CT_KW;
  const int off = (tw * 8 - CT_PAD_W + rx * CT_DIL_W) & 3;
#else
  const int off = 0;
  (void)tw, (void)kt;
#endif
  const unsigned *as = (const unsigned *)(smem + s * STAGE_BYTES) + g + off;
#pragma unroll
  for (int k = 0; k < KSTEPS; k++) {
    cur[k][0] = as[(r0 * BKW + k * 8 + 2 * t) * AW];
    cur[k][1] = as[((r0 + 1) * BKW + k * 8 + 2 * t) * AW];
    cur[k][2] = as[(r0 * BKW + k * 8 + 2 * t + 1) * AW];
    cur[k][3] = as[((r0 + 1) * BKW + k * 8 + 2 * t + 1) * AW];
  }
#if CT_WZP
  const unsigned ones[2] = {0x01010101u, 0x01010101u};
#pragma unroll
  for (int k = 0; k < KSTEPS; k++) mma16832(xacc, cur[k], ones);
#endif
  const unsigned bs = smem_addr(smem + s * STAGE_BYTES + A_STAGE_BYTES);
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < KSTEPS; k++) wgmma_step(acc, cur[k], b_desc(bs + k * 256));
  wgmma_commit();
  wgmma_wait<1>();
  keep(prev);
  if (it > 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
}

/* ---- the kernel ---------------------------------------------------------- */
#ifndef CT_CUSTOM_ENTRY
extern "C" __global__ void __launch_bounds__(THREADS, 1)
#if SPLIT_K > 1
    __cluster_dims__(1, 1, SPLIT_K)
#endif
    conv_wgmma(const int *__restrict__ data, const int *__restrict__ weights,
               void *__restrict__ out, const int *__restrict__ params,
               const void *__restrict__ residual
#if TMA
               ,
               const __grid_constant__ ct_tmap map
#endif
    ) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, wg = tid >> 7, ltid = tid & 127;
  const unsigned bars = smem_addr(smem + DATA_BYTES);
  if (tid == 0) {
#pragma unroll 1
    for (int s = 0; s < STAGES; s++) {
      mbar_init(bars + 8 * s, 128 + TMA);
      mbar_init(bars + 8 * (STAGES + s), EMPTY_ARRIVALS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    fence_proxy_async();
  }
  __syncthreads();
  int bx = blockIdx.x;
  const int tw = bx % TILES_W;
  bx /= TILES_W;
  const int th = bx % TILES_H;
  bx /= TILES_H;
  const int td = bx % TILES_D, tn = bx / TILES_D;
  const int tile_n = blockIdx.y;
  /* this block's share of the reduction (every split has one: static_assert) */
  const int kt0 = blockIdx.z * KT_SPLIT;
  const int nkt = KT - kt0 < KT_SPLIT ? KT - kt0 : KT_SPLIT;

  const int lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int r0 = (wg - 1) * 8 + ((ltid >> 5) << 1); /* the warp's two rows of 8 positions */
  /* zeroed, then fenced: every zero is written here, before the branch
   * (else ptxas serializes the wgmmas: C7515) */
  int acc[NACC];
#pragma unroll
  for (int i = 0; i < NACC; i++) acc[i] = 0;
#pragma unroll
  for (int i = 0; i < NACC; i++) asm volatile("" : "+r"(acc[i])::"memory");
  int xacc[4] = {0, 0, 0, 0};
  if (wg == 0) {
#if TMA
    produce(smem, bars, data, weights, params, &map, ltid, tw, th, td, tn, tile_n, kt0, nkt);
#else
    produce(smem, bars, data, weights, params, NULL, ltid, tw, th, td, tn, tile_n, kt0, nkt);
#endif
#if SPLIT_K == 1
    return;
#endif
  } else {
    unsigned f0[KSTEPS][4], f1[KSTEPS][4];
#pragma unroll
    for (int k = 0; k < KSTEPS; k++)
#pragma unroll
      for (int l = 0; l < 4; l++) f0[k][l] = f1[k][l] = 0;
#pragma unroll 1
    for (int it = 0; it < nkt; it += 2) {
      consume(smem, bars, it, kt0 + it, tw, acc, f0, f1, xacc, r0, g, t);
      if (it + 1 < nkt)
        consume(smem, bars, it + 1, kt0 + it + 1, tw, acc, f1, f0, xacc, r0, g, t);
    }
    wgmma_wait<0>();
    keep(f0);
    keep(f1);
#pragma unroll
    for (int i = 0; i < NACC; i++) asm volatile("" : "+r"(acc[i])::"memory");
  }

#if SPLIT_K > 1
  /* The cluster's partial sums meet in distributed shared memory: every
   * block leaves its accumulators in its own pipeline memory (free once
   * all of its consumers are past their last wgmma: every stage has
   * landed and been read), then rank r adds the others' groups j with
   * j / JPR == r to its own and stores those. */
  const unsigned rank = cluster_rank();
  const int ct = tid - 128;
  int *red = (int *)smem;
  if (wg > 0) {
    asm volatile("bar.sync 1, %0;\n" ::"n"(CTHREADS) : "memory");
#pragma unroll
    for (int i = 0; i < NACC; i++) red[i * CTHREADS + ct] = acc[i];
#if CT_WZP
#pragma unroll
    for (int l = 0; l < 4; l++) red[(NACC + l) * CTHREADS + ct] = xacc[l];
#endif
  }
  cluster_sync();
  if (wg > 0) {
#pragma unroll 1
    for (unsigned q = 1; q < SPLIT_K; q++) {
      const unsigned base = cluster_map(smem_addr(red), (rank + q) % SPLIT_K) + 4u * ct;
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; j++)
        if (j / JPR == (int)rank)
#pragma unroll
          for (int l = 0; l < 4; l++)
            acc[4 * j + l] = (int)((unsigned)acc[4 * j + l] +
                                   cluster_load(base + 4u * (4 * j + l) * CTHREADS));
#if CT_WZP
#pragma unroll
      for (int l = 0; l < 4; l++)
        xacc[l] = (int)((unsigned)xacc[l] + cluster_load(base + 4u * (NACC + l) * CTHREADS));
#endif
    }
  }
  cluster_sync(); /* the others keep their shared memory until every rank has read it */
  if (wg == 0) return;
#else
  const unsigned rank = 0;
#endif

  /* the epilogue: rows r0 and r0 + 1, position g of each */
  long base[2];
  bool ok[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int r = r0 + h;
    const int ni = r / (TILE_D * TILE_H), dd = (r / TILE_H) % TILE_D, hh = r % TILE_H;
    const int n = tn * TN + ni, od = td * TILE_D + dd, oh = th * TILE_H + hh, ow = tw * 8 + g;
    ok[h] = n < CT_N && od < CT_OD && oh < CT_OH && ow < CT_OW;
    base[h] = (long)n * CT_K4 * P_OUT + (od * CT_OH + oh) * CT_OW + ow;
  }
  const q_head qh = load_head(params);
#pragma unroll
  for (int j = 0; j < BLOCK_N / 8; j++) {
    if (SPLIT_K > 1 && j / JPR != (int)rank) continue; /* another rank's groups */
    const int kc = tile_n * BLOCK_N + j * 8 + 2 * t, k4 = kc >> 2;
    const int k = k4 < CT_K4 ? kc : 0; /* params in range; not stored */
    const q_chan c0 = load_chan(params, qh, k), c1 = load_chan(params, qh, k + 1);
    const int v00 = corrected(c0, acc[4 * j], xacc[0]);
    const int v01 = corrected(c1, acc[4 * j + 1], xacc[0]);
    const int v10 = corrected(c0, acc[4 * j + 2], xacc[2]);
    const int v11 = corrected(c1, acc[4 * j + 3], xacc[2]);
    store_frag(out, residual, qh, c0, c1, k4, t, v00, v01, v10, v11, base[0] + (long)k4 * P_OUT,
               ok[0], base[1] + (long)k4 * P_OUT, ok[1]);
  }
}
#endif
