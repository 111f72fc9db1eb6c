/*
 * conv_wgmma_nhwc.cuh: the body of the channels-last Hopper templates
 * conv2d_nhwc_wgmma and conv3d_ndhwc_wgmma (conv2d is the D = 1 case):
 * implicit GEMM on wgmma.mma_async m64nNk32 (sm_90a) with both operands
 * read by descriptor from shared memory, both loaded by the bulk tensor
 * copy engine (TMA) through an mbarrier pipeline.
 *
 * Data NHWC (NDHWC), weights OHWI (ODHWI), output NHWC: a pixel's channels
 * and an output channel's reduction are contiguous, so both operands are
 * K-major in global memory, as int8 wgmma wants them in shared memory:
 *   - A (the data): one im2col copy per stage loads block_m output pixels
 *     (consecutive in N x OD x OH x OW order, across rows and images) x
 *     block_k channels at one kernel tap: the tensor map's bounding box is
 *     the range of the tap-(0,0,0) input positions, its traversal strides
 *     the conv's strides, and the copy's offsets the tap times the
 *     dilation; padding is the box falling outside the tensor, which TMA
 *     fills with zeros, as it fills the channels beyond C. A 1x1 layer at
 *     stride 1 without padding (WG_ATILE) is the matrix (C, pixels): a
 *     tiled copy of block_k x block_m, zeros past the last pixel.
 *   - B (the weights): one tiled copy per stage of block_n output channels
 *     x block_k channels of the tap, from the weights viewed as (C, taps,
 *     K) bytes.
 *   - Both land swizzled with a row of block_k bytes (32, 64 or 128: the
 *     swizzle span), which is wgmma's K-major swizzled layout: 8-row groups
 *     block_k * 8 bytes apart; a k32 step is a 32-byte offset into the rows.
 *
 * The reduction is tap-major (the tap outermost, then slices of block_k
 * channels; a slice past C reads zeros). A stage holds k_slices
 * consecutive slices (A's, then B's, each 1024-byte aligned): one
 * producer thread issues the copies of a stage on its full barrier (the
 * bytes of all of them); each consumer warp arrives on the stage's empty
 * barrier once its wgmmas have read it; consumers keep one wgmma group
 * (a stage's wgmmas) in flight. More slices per stage spread a barrier
 * round trip and a group's wait over more wgmmas. Each consumer warpgroup owns
 * rows_per_wg (64 or 128: one or two m64 wgmmas per k32 step) rows of the
 * tile. split_k splits the stages over a cluster along grid z, which meets
 * in distributed shared memory: 16-byte groups of partial sums, each rank
 * adding its share of the groups with its rank a compile-time constant.
 *
 * The epilogue (wgmma_epilogue.cuh) stores 4 channels of one pixel per
 * thread and store (lanes trade accumulator pairs) to the NHWC output:
 * int32 16 bytes, 8-bit 4 bytes after the requantization of tc_common.cuh. blocks_per_sm (the
 * launch bounds' minimum) lets blocks of layers with few stages overlap
 * one's loads with another's stores.
 *
 * persistent (1 or 2) launches at most as many blocks as fit the GPU at
 * once and each loops over tiles, the producer running on into the next
 * tile's stages while the consumers store this one. Cooperative (1): the
 * consumer warpgroups share a tile as above. Ping-pong (2, two to four
 * consumer warpgroups): the warpgroups take the block's tiles in turn,
 * each all rows_per_wg rows of its tile (block_m = rows_per_wg), so that
 * one warpgroup's wgmmas use the tensor cores while the others' epilogues
 * run: with three or four, two or three epilogues at once, more warps to
 * hide an 8-bit epilogue's latency.
 *
 * With 8-bit output, a residual and out_stage 1, each warp copies its
 * rows' residual into its output slab by cp.async before the mainloop
 * (WG_RES_PREFETCH, wgmma_epilogue.cuh).
 *
 * A data zero point with padding (WG_ZPAD): TMA fills the padding with
 * zeros, not the zero point, so a pixel near an edge lacks zx x the
 * weights of its taps outside; the params block carries that correction
 * per border class and channel (core/zpad.cuh), which the rank that takes
 * the offsets adds to its accumulators before the mainloop. Weight zero
 * points and depth_to_space run on the channel-packed templates (the
 * descriptor refuses them).
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_wgmma_nhwc.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

#include "conv_shape.cuh"
#include "tc_common.cuh"
#include "nhwc_store.cuh"
#include "wgmma_ptx.cuh"
#include "zpad.cuh"
#include "l2_prefetch.cuh"

static_assert(CT_D2S == 0 && CT_WZP == 0, "depth_to_space and weight zero points: packed templates");
static_assert(BLOCK_N == 64 || BLOCK_N == 128 || BLOCK_N == 256, "block_n is 64, 128 or 256");
static_assert(W_EARLY == 0 || W_EARLY == 1, "w_early: 0 or 1");
static_assert(BLOCK_K == 32 || BLOCK_K == 64 || BLOCK_K == 128, "block_k is 32, 64 or 128 bytes");
static_assert(WARPGROUPS >= 1 && WARPGROUPS <= 4, "warpgroups: 1 to 4 consumer warpgroups");
static_assert(ROWS_PER_WG == 64 || ROWS_PER_WG == 128, "rows_per_wg: 64 or 128");
static_assert(STAGES >= 2 && STAGES <= 8, "stages: 2 to 8");
static_assert(K_SLICES >= 1 && K_SLICES <= 4, "k_slices: 1 to 4 slices of block_k per stage");
static_assert(BLOCKS_PER_SM >= 1 && BLOCKS_PER_SM <= 3, "blocks_per_sm: 1 to 3");
static_assert(SPLIT_K == 1 || SPLIT_K == 2 || SPLIT_K == 4 || SPLIT_K == 8,
              "split_k: 1, 2, 4 or 8 blocks (a portable cluster)");
static_assert(PERSISTENT >= 0 && PERSISTENT <= 2, "persistent: 0, 1 (cooperative) or 2 (ping-pong)");
static_assert(PERSISTENT == 0 || SPLIT_K == 1, "persistent blocks take whole tiles: split_k 1");
static_assert(PERSISTENT != 2 || WARPGROUPS >= 2, "ping-pong needs two or more consumer warpgroups");
static_assert(PERSISTENT == 2 || WARPGROUPS <= 2, "three or four consumer warpgroups: ping-pong only");
#ifndef WG_ATILE
#define WG_ATILE 0
#endif
static_assert(!WG_ATILE || (CT_KD * CT_KH * CT_KW == 1 && CT_STR_D * CT_STR_H * CT_STR_W == 1 &&
                            CT_PAD_D + CT_PAD_H + CT_PAD_W + CT_PADA_D + CT_PADA_H + CT_PADA_W == 0 &&
                            (long)CT_N * CT_OD * CT_OH * CT_OW < 2147483648L),
              "a tiled A: 1x1, stride 1, no padding, fewer than 2^31 pixels");
static_assert(CT_C4 % 4 == 0, "channels-last TMA: C must be a multiple of 16 (16-byte pixel strides)");
static_assert(CT_KR % 8 == 0, "the NHWC stores: K must be a multiple of 8");
/* a data zero point with padding: the border classes' corrections */
#define WG_ZPAD (CT_ZD && CT_PAD_D + CT_PAD_H + CT_PAD_W + CT_PADA_D + CT_PADA_H + CT_PADA_W > 0)

#define TAPS (CT_KD * CT_KH * CT_KW)
#define C_REAL (4 * CT_C4)
#define CSLICES ((C_REAL + BLOCK_K - 1) / BLOCK_K)
#define KSLICES (TAPS * CSLICES) /* slices of the reduction: block_k channels of one tap */
#define KT (KSLICES / K_SLICES) /* stages of the reduction */
#define KT_SPLIT ((KT + SPLIT_K - 1) / SPLIT_K)
#define KSTEPS (BLOCK_K / 32)
#define MI (ROWS_PER_WG / 64) /* m64 wgmmas per consumer warpgroup and k32 step */
#define PINGPONG (PERSISTENT == 2)
#define BM (PINGPONG ? ROWS_PER_WG : ROWS_PER_WG * WARPGROUPS) /* rows of a tile */
#define P_OUT (CT_OD * CT_OH * CT_OW)
#define M_TOTAL ((long)CT_N * P_OUT)
#define TILES_M ((M_TOTAL + BM - 1) / BM)
#define TILES ((long)TILES_M * ((CT_KR + BLOCK_N - 1) / BLOCK_N))
/* the consumer warps that read a stage: in ping-pong one warpgroup's */
#define EMPTY_ARRIVALS (PINGPONG ? 4 : 4 * WARPGROUPS)
#define THREADS (128 * (WARPGROUPS + 1))
#define CTHREADS (128 * WARPGROUPS)
#define A_SLICE_BYTES (BM * BLOCK_K) /* multiples of 1024: the swizzle's alignment */
#define B_SLICE_BYTES (BLOCK_N * BLOCK_K)
#define A_STAGE_BYTES (K_SLICES * A_SLICE_BYTES)
#define B_STAGE_BYTES (K_SLICES * B_SLICE_BYTES)
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define NACC (MI * BLOCK_N / 2)
#define RED_BYTES (SPLIT_K > 1 ? CTHREADS * NACC * 4 : 0)
#define JPR (BLOCK_N / 8 / SPLIT_K)
#define PIPE_BYTES (STAGES * STAGE_BYTES)
#define DATA_BYTES (PIPE_BYTES > RED_BYTES ? PIPE_BYTES : RED_BYTES)
/* the barriers: full and empty per stage, in ping-pong a turn per
 * consumer warpgroup (rounded up to 16 bytes: the channel tables and
 * slabs after them take 16-byte accesses); 1024 bytes of slack: the
 * swizzled stages start 1024-byte aligned */
#define BAR_BYTES (16 * STAGES + (PINGPONG ? 16 * ((WARPGROUPS + 1) / 2) : 0))

/* 8-bit output with a per-channel offset: the accumulators start at it */
#define WG_ACC_OFF (CT_OUT != 0 && CT_OFF)
/* 8-bit output staged, with a residual: the residual copied into the
 * slabs under the mainloop (wgmma_epilogue.cuh) */
#if CT_OUT != 0 && CT_RES && OUT_STAGE
#define WG_RES_PREFETCH 1
#endif
#include "wgmma_epilogue.cuh"

/* after the barriers, 8-bit: each consumer warpgroup's channel table and slabs */
#define SMEM_BYTES (DATA_BYTES + BAR_BYTES + WARPGROUPS * EPI_WG_BYTES + 1024)

static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the warpgroups");
static_assert(SMEM_BYTES == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the stages");
static_assert(KSLICES % K_SLICES == 0, "k_slices must divide the slices of the reduction");
static_assert(A_SLICE_BYTES % 1024 == 0 && B_SLICE_BYTES % 1024 == 0,
              "a swizzled slice starts 1024-byte aligned");
static_assert((SPLIT_K - 1) * KT_SPLIT < KT, "split_k: a split without a stage of the reduction");
static_assert(JPR >= 2 && JPR % 2 == 0 && JPR * 8 * SPLIT_K == BLOCK_N,
              "split_k must leave each rank pairs of 8-channel groups (block_n / 8 / split_k even)");
static_assert((DATA_BYTES + BAR_BYTES) % 16 == 0, "the epilogue's tables and slabs 16-byte aligned");
static_assert(NACC <= 128, "accumulators: rows_per_wg x block_n / 128 at most 128 per thread");

/* The descriptor of a K-major operand with rows of BLOCK_K bytes, swizzled
 * over BLOCK_K bytes: 8-row groups BLOCK_K * 8 bytes apart (stride byte
 * offset); the leading byte offset is unused with a swizzle. */
__device__ __forceinline__ unsigned long long sw_desc(unsigned addr) {
  const unsigned long long layout = BLOCK_K == 128 ? 1 : BLOCK_K == 64 ? 2 : 3;
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | 1ull << 16 |
         (unsigned long long)((BLOCK_K * 8) >> 4) << 32 | layout << 62;
}

__device__ __forceinline__ void wgmma_ss(int *acc, unsigned long long a, unsigned long long b) {
#if BLOCK_N == 64
  wgmma_ss_n64(acc, a, b);
#elif BLOCK_N == 128
  wgmma_ss_n128(acc, a, b);
#else
  wgmma_ss_n256(acc, a, b);
#endif
}

#if WG_ZPAD
/* The border classes along D, H, W (core/zpad.cuh), and the interior's
 * (-1: none, where an axis has no interior). */
constexpr ctz_axis ZP_D = ctz_axis_make(CT_ID, CT_OD, CT_KD, CT_STR_D, CT_DIL_D, CT_PAD_D);
constexpr ctz_axis ZP_H = ctz_axis_make(CT_IH, CT_OH, CT_KH, CT_STR_H, CT_DIL_H, CT_PAD_H);
constexpr ctz_axis ZP_W = ctz_axis_make(CT_IW, CT_OW, CT_KW, CT_STR_W, CT_DIL_W, CT_PAD_W);
constexpr int ZP_INTERIOR =
    ctz_axis_interior(ZP_D, CT_OD) < 0 || ctz_axis_interior(ZP_H, CT_OH) < 0 ||
            ctz_axis_interior(ZP_W, CT_OW) < 0
        ? -1
        : (ctz_axis_interior(ZP_D, CT_OD) * ZP_H.n + ctz_axis_interior(ZP_H, CT_OH)) * ZP_W.n +
              ctz_axis_interior(ZP_W, CT_OW);
static_assert((long)ZP_D.n * ZP_H.n * ZP_W.n <= CTZ_MAX_CLASSES,
              "a data zero point with padding: at most CTZ_MAX_CLASSES border classes");

/* Add each of this thread's rows' border correction (its pixel's class's,
 * none for the interior) to its accumulators of the tile at (m0, tile_n):
 * channels 2t, 2t + 1 of each group, rows 16 warp + g and + 8 of each m64
 * block, as wgmma lays them out. Every thread calls it, on false adding
 * nothing: accumulators changed on one side of a branch around the
 * pipeline make ptxas serialize the wgmmas (C7515). */
__device__ __forceinline__ void zpad_correct(int (&acc)[MI][BLOCK_N / 2],
                                             const int *__restrict__ params, long m0, int row0,
                                             int tile_n, int ltid, bool on) {
  const int lane = ltid & 31, g = lane >> 2, t = lane & 3, warp = ltid >> 5; /* KP: tc_common.cuh */
  const int *const corr = params + CTQ_HEADER + CTQ_ARRAYS * KP + tile_n * BLOCK_N + 2 * t;
#pragma unroll
  for (int mi = 0; mi < MI; mi++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const long m = m0 + row0 + mi * 64 + 16 * warp + 8 * h + g;
      const int p = (int)(m % P_OUT);
      const int ow = p % CT_OW, oh = p / CT_OW % CT_OH, od = p / (CT_OW * CT_OH);
      const int cls = (ctz_axis_class(ZP_D, CT_OD, od) * ZP_H.n + ctz_axis_class(ZP_H, CT_OH, oh)) *
                          ZP_W.n +
                      ctz_axis_class(ZP_W, CT_OW, ow);
      const bool use = on && m < M_TOTAL && cls != ZP_INTERIOR;
      const int *const row = corr + (use ? cls : 0) * KP;
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; j++) {
        /* K % 8 == 0: both channels or none; zeros where unused, added alike */
        int2 v = make_int2(0, 0);
        if (use && tile_n * BLOCK_N + 8 * j + 2 * t < CT_KR) v = __ldg((const int2 *)(row + 8 * j));
        acc[mi][4 * j + 2 * h] = (int)((unsigned)acc[mi][4 * j + 2 * h] + (unsigned)v.x);
        acc[mi][4 * j + 2 * h + 1] = (int)((unsigned)acc[mi][4 * j + 2 * h + 1] + (unsigned)v.y);
      }
    }
  acc_fence(acc);
}
#endif

/* ---- the producer thread ---------------------------------------------------- */
/* Slice sl of the reduction's weights (block_k channels of one tap) for N
 * tile tile_n into bs, arriving on full. */
__device__ __forceinline__ void produce_b_slice(unsigned bs, const ct_tmap *wmap, int sl,
                                                int tile_n, unsigned full) {
  tma_tile3(bs, wmap, (sl % CSLICES) * BLOCK_K, sl / CSLICES, tile_n * BLOCK_N, full);
}

/* w_early: the weights of stage kt0 of a block's first tile (N tile
 * tile_n) into pipeline slot 0, the slot's expected bytes (its data's too)
 * set: before griddepcontrol.wait, since the weights are no kernel's
 * output; in a chain they come from DRAM under the previous kernel's tail.
 * The first stage only: the data of stage 0 follows them on the TMA unit,
 * so more stages here would delay it (measured: up to 10% alone). A knob,
 * not a rule: it took 1.9% off ResNet-50 b16's tuned nodes alone and 3.3%
 * off their chain, and cost 2-6% alone on one-wave and split-K layers
 * (h200x4-issue36-regress). */
__device__ __forceinline__ void produce_b_first(unsigned stages, unsigned bars,
                                                const ct_tmap *wmap, int tile_n, int kt0) {
  const unsigned full = bars, bs = stages + A_STAGE_BYTES;
  mbar_expect_tx(full, STAGE_BYTES);
#pragma unroll
  for (int j = 0; j < K_SLICES; j++)
    produce_b_slice(bs + j * B_SLICE_BYTES, wmap, kt0 * K_SLICES + j, tile_n, full);
}

/* Stages kt0 .. kt0 + nkt - 1 of the tile at (m0, tile_n), the first in
 * the pipeline's it0-th slot use (persistent blocks run on through their
 * tiles without draining the pipeline); with b_first, the first stage's
 * weights and expected bytes are issued already (produce_b_first). */
__device__ __forceinline__ void produce(unsigned stages, unsigned bars, const ct_tmap *amap,
                                        const ct_tmap *wmap, long m0, int tile_n, int kt0,
                                        int nkt, int it0, bool b_first) {
  /* the tile's first output pixel, and the input position of its tap 0 */
  const int n0 = (int)(m0 / P_OUT), p0 = (int)(m0 % P_OUT);
  const int ow0 = p0 % CT_OW, oh0 = (p0 / CT_OW) % CT_OH, od0 = p0 / (CT_OW * CT_OH);
  const int x0 = ow0 * CT_STR_W - CT_PAD_W, y0 = oh0 * CT_STR_H - CT_PAD_H;
  const int z0 = od0 * CT_STR_D - CT_PAD_D;
  (void)z0;
#pragma unroll 1
  for (int i = 0; i < nkt; i++) {
    const int it = it0 + i, s = it % STAGES, kt = kt0 + i;
    const unsigned full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
    mbar_wait(empty, ((it / STAGES) & 1) ^ 1);
    const unsigned as = stages + s * STAGE_BYTES, bs = as + A_STAGE_BYTES;
    const bool b = i > 0 || !b_first;
    if (b) mbar_expect_tx(full, STAGE_BYTES);
#pragma unroll
    for (int j = 0; j < K_SLICES; j++) {
      const int sl = kt * K_SLICES + j, tap = sl / CSLICES, c0 = (sl % CSLICES) * BLOCK_K;
      const int rx = tap % CT_KW, ry = (tap / CT_KW) % CT_KH, rd = tap / (CT_KW * CT_KH);
#if WG_ATILE
      (void)rx, (void)ry, (void)rd, (void)x0, (void)y0, (void)n0;
      tma_tile2(as + j * A_SLICE_BYTES, amap, c0, (int)m0, full);
#elif CT_TEMPLATE_CONV3D
      tma_im2col5(as + j * A_SLICE_BYTES, amap, c0, x0, y0, z0, n0,
                  (unsigned short)(rx * CT_DIL_W), (unsigned short)(ry * CT_DIL_H),
                  (unsigned short)(rd * CT_DIL_D), full);
#else
      (void)rd;
      tma_im2col4(as + j * A_SLICE_BYTES, amap, c0, x0, y0, n0, (unsigned short)(rx * CT_DIL_W),
                  (unsigned short)(ry * CT_DIL_H), full);
#endif
      if (b) produce_b_slice(bs + j * B_SLICE_BYTES, wmap, sl, tile_n, full);
    }
  }
}

/* ---- a consumer stage ------------------------------------------------------ */
/* Wait for stage it, issue its wgmmas on this warpgroup's rows, then wait
 * for stage it - 1's and release it (unless it is a tile's first: the
 * previous tile's last is released after its wait for all). */
__device__ __forceinline__ void consume(unsigned stages, unsigned bars, int it, bool first, int row0,
                                        int (&acc)[MI][BLOCK_N / 2], int lane) {
  const int s = it % STAGES;
  mbar_wait(bars + 8 * s, (it / STAGES) & 1);
  const unsigned as = stages + s * STAGE_BYTES + row0 * BLOCK_K, bs = stages + s * STAGE_BYTES +
                                                                    A_STAGE_BYTES;
  wgmma_fence();
#pragma unroll
  for (int j = 0; j < K_SLICES; j++)
#pragma unroll
    for (int k = 0; k < KSTEPS; k++)
#pragma unroll
      for (int mi = 0; mi < MI; mi++)
        wgmma_ss(acc[mi], sw_desc(as + j * A_SLICE_BYTES + mi * 64 * BLOCK_K + k * 32),
                 sw_desc(bs + j * B_SLICE_BYTES + k * 32));
  wgmma_commit();
  wgmma_wait<1>();
  if (!first) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
  }
}

#if SPLIT_K > 1
/* 16 bytes of block rank's shared memory at this block's address addr. */
__device__ __forceinline__ uint4 cluster_load4(unsigned addr) {
  uint4 v;
  asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

/* split-K's meeting for rank R: add the other ranks' partial sums of the
 * groups j (4 words of each m64 block) with j / JPR == R to acc. base:
 * this thread's first 16 bytes of the partial sums, a local address. */
template <int R>
__device__ __forceinline__ void split_meet(int (&acc)[MI][BLOCK_N / 2], unsigned base) {
  unsigned at[SPLIT_K - 1];
#pragma unroll
  for (int q = 1; q < SPLIT_K; q++) at[q - 1] = cluster_map(base, (R + q) % SPLIT_K);
#pragma unroll
  for (int mi = 0; mi < MI; mi++)
#pragma unroll
    for (int jj = 0; jj < JPR; jj++) {
      const int j = R * JPR + jj;
      uint4 v[SPLIT_K - 1];
#pragma unroll
      for (int q = 0; q < SPLIT_K - 1; q++)
        v[q] = cluster_load4(at[q] + 16u * (mi * (BLOCK_N / 8) + j) * CTHREADS);
#pragma unroll
      for (int q = 0; q < SPLIT_K - 1; q++) {
        acc[mi][4 * j] = (int)((unsigned)acc[mi][4 * j] + v[q].x);
        acc[mi][4 * j + 1] = (int)((unsigned)acc[mi][4 * j + 1] + v[q].y);
        acc[mi][4 * j + 2] = (int)((unsigned)acc[mi][4 * j + 2] + v[q].z);
        acc[mi][4 * j + 3] = (int)((unsigned)acc[mi][4 * j + 3] + v[q].w);
      }
    }
}
#endif

/* The 128 threads of consumer warpgroup wg (1 or 2): barriers 3 and 4
 * (split-K's is 1). */
__device__ __forceinline__ void cwg_bar(int wg) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(2 + wg) : "memory");
}

/* ---- the kernel ---------------------------------------------------------- */
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
#if SPLIT_K > 1
    __cluster_dims__(1, 1, SPLIT_K)
#endif
    conv_wgmma_nhwc(const signed char *__restrict__ data, const signed char *__restrict__ weights,
                    void *__restrict__ out, const int *__restrict__ params,
                    const void *__restrict__ residual, const __grid_constant__ ct_tmap amap,
                    const __grid_constant__ ct_tmap wmap) {
  (void)data;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  /* the swizzled stages need 1024-byte alignment */
  const unsigned raw = smem_addr(smem_raw), stages = (raw + 1023u) & ~1023u;
  const int tid = threadIdx.x, wg = tid >> 7, ltid = tid & 127;
  const unsigned bars = stages + DATA_BYTES;
  /* this consumer warpgroup's channel table and slabs (8-bit output) */
  unsigned char *tab = smem_raw + (stages - raw) + DATA_BYTES + BAR_BYTES +
                       (wg > 0 ? wg - 1 : 0) * EPI_WG_BYTES;
  if (tid == 0) {
    /* fetch the maps' descriptors while the barriers are set up, before
     * griddepcontrol.wait: they are kernel parameters, not the previous
     * kernel's output */
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)&amap) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)&wmap) : "memory");
#pragma unroll 1
    for (int s = 0; s < STAGES; s++) {
      mbar_init(bars + 8 * s, 1);
      mbar_init(bars + 8 * (STAGES + s), EMPTY_ARRIVALS);
    }
    /* ping-pong: warpgroup w's turn, on which the warps of the warpgroup
     * before it arrive (warpgroup 1's: the last one's) */
#pragma unroll 1
    for (int w = 0; PINGPONG && w < WARPGROUPS; w++) mbar_init(bars + 16 * STAGES + 8 * w, 4);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    fence_proxy_async();
    /* this thread is the producer: with w_early, the weights of the
     * block's first stage now. (0162ccc prefetched each weight panel whole
     * into L2 here, by its first block: that block's own loads queued
     * behind it on the TMA unit, 2-4% on some layers alone.) */
#if W_EARLY && PERSISTENT
    if (blockIdx.x < TILES) produce_b_first(stages, bars, &wmap, (int)(blockIdx.x / TILES_M), 0);
#elif W_EARLY
    if (blockIdx.z * KT_SPLIT < KT)
      produce_b_first(stages, bars, &wmap, blockIdx.y, blockIdx.z * KT_SPLIT);
#endif
  }
  __syncthreads();
  if (wg == 1 && blockIdx.x + blockIdx.y + blockIdx.z == 0) {
    /* the params into L2 by the first block's first consumer warpgroup, a
     * 128-byte line a thread, through the load/store path: the TMA unit
     * stays the producer's */
    const unsigned char *pb = (const unsigned char *)params;
#pragma unroll 1
    for (unsigned long long off = 128ull * ltid; params && off < L2P_PARAMS_BYTES(CT_KR);
         off += 128ull * 128)
      asm volatile("prefetch.global.L2 [%0];\n" ::"l"(pb + off) : "memory");
  }
  pdl_wait_then_release(); /* nothing global before: the previous kernel may still run */
  const int lane = tid & 31;
#if PERSISTENT
  /* Persistent: block b takes tiles b, b + grid, ... (M fastest), the
   * producer filling the pipeline for the next tile while the consumers
   * store this one. Cooperative (1): both consumer warpgroups share each
   * tile's rows. Ping-pong (2): the WARPGROUPS warpgroups take the block's
   * tiles in turn (warpgroup w its w-th, (w + WARPGROUPS)-th, ...), each all
   * of a tile's rows, so the others' epilogues run under one's wgmmas;
   * the pipeline's slots run through the tiles in order.
   *
   * In ping-pong a warpgroup starts its tile's mainloop only once the one
   * before it in the turn has waited for every stage of the tile before
   * (an arrival on this warpgroup's turn barrier). An mbarrier wait tells
   * phases apart by parity alone: a warpgroup that ran ahead to its tile's
   * stages while the slots still held earlier phases would take a phase
   * two behind for its own, and read another tile's data. The turns chain
   * the warpgroups, so a turn barrier is never more than one phase ahead
   * of its waiter. They also keep the mainloops from sharing the tensor
   * cores, as CUTLASS's ping-pong. */
  if (wg == 0) {
    if (ltid == 0) {
      int it0 = 0;
#pragma unroll 1
      for (long t = blockIdx.x; t < TILES; t += gridDim.x, it0 += KT)
        produce(stages, bars, &amap, &wmap, t % TILES_M * BM, (int)(t / TILES_M), 0, KT, it0,
                W_EARLY && it0 == 0);
    }
    return;
  }
  /* warp-uniform by construction (a shuffle from lane 0), so that ptxas
   * sees no divergence around the wgmmas */
  const int first = PINGPONG ? __shfl_sync(0xffffffffu, wg - 1, 0) : 0;
  const int step = PINGPONG ? WARPGROUPS : 1;
  const int row0 = PINGPONG ? 0 : (wg - 1) * ROWS_PER_WG;
  const q_head qh = load_head(params);
  int tab_n = -1; /* the N tile whose channels the table holds */
  const unsigned my_turn = bars + 16 * STAGES + 8 * first,
                 next_turn = bars + 16 * STAGES + 8 * ((first + 1) % WARPGROUPS);
  (void)my_turn, (void)next_turn;
  /* the turns waited: warpgroup 1's first tile (the block's first) has none */
  int it0 = first * KT, turn = first == 0 ? -1 : 0;
#pragma unroll 1
  for (long t = blockIdx.x + (long)first * gridDim.x; t < TILES;
       t += (long)step * gridDim.x, it0 += step * KT, turn++) {
    const int tile_n = (int)(t / TILES_M);
    if (CT_OUT != 0 && tile_n != tab_n) {
      /* the tile's channels, before its mainloop (read while its stages
       * land, or the other warpgroup's run; its accumulators start at
       * their offsets); they change seldom (M runs fastest) */
      cwg_bar(wg); /* every thread is done with the old ones */
      chan_tab_fill(tab, params, qh, tile_n * BLOCK_N, ltid);
      cwg_bar(wg);
      tab_n = tile_n;
    }
#if WG_RES_PREFETCH
    /* this warpgroup's slabs are free: its last tile's epilogue is done */
    res_prefetch(residual, tab, t % TILES_M * BM, row0, tile_n, 0, ltid);
#endif
    if (PINGPONG && turn >= 0) mbar_wait(my_turn, turn & 1);
    int acc[MI][BLOCK_N / 2];
    acc_start(acc, tab, ltid, true);
#if WG_ZPAD
    zpad_correct(acc, params, t % TILES_M * BM, row0, tile_n, ltid, true);
#endif
#pragma unroll 1
    for (int kk = 0; kk < KT; kk++) consume(stages, bars, it0 + kk, kk == 0, row0, acc, lane);
    if (PINGPONG) {
      __syncwarp();
      if (lane == 0) mbar_arrive(next_turn); /* every stage of this tile has landed */
    }
    wgmma_wait<0>();
    acc_fence(acc);
    __syncwarp();
    if (lane == 0) mbar_arrive(bars + 8 * (STAGES + (it0 + KT - 1) % STAGES));
    tile_epilogue(acc, t % TILES_M * BM, row0, tile_n, 0, params, qh, tab, residual, out, ltid);
  }
#else
  const long m0 = (long)blockIdx.x * BM;
  const int tile_n = blockIdx.y;
  const q_head qh = load_head(params);
  const int kt0 = blockIdx.z * KT_SPLIT;
  const int nkt = KT - kt0 < KT_SPLIT ? KT - kt0 : KT_SPLIT;
  const int row0 = (wg - 1) * ROWS_PER_WG; /* this consumer warpgroup's first row */
  if (CT_OUT != 0 && wg > 0) {
    /* the tile's channels, read while its stages land (not after) */
    chan_tab_fill(tab, params, qh, tile_n * BLOCK_N, ltid);
#if WG_RES_PREFETCH
    /* and its residual, rank's channels (split-K: the rank is the z index) */
    res_prefetch(residual, tab, m0, row0, tile_n, blockIdx.z, ltid);
#endif
    cwg_bar(wg);
  }
  /* every thread's accumulators defined before the branch (or ptxas
   * serializes the wgmmas); split-K: one rank's sum takes the offsets */
  int acc[MI][BLOCK_N / 2];
  acc_start(acc, tab, ltid, wg > 0 && blockIdx.z == 0);
  if (wg == 0) {
    if (ltid == 0)
      produce(stages, bars, &amap, &wmap, m0, tile_n, kt0, nkt, 0, W_EARLY && kt0 < KT);
#if SPLIT_K == 1
    return;
#endif
  } else {
#if WG_ZPAD
    zpad_correct(acc, params, m0, row0, tile_n, ltid, blockIdx.z == 0);
#endif
#pragma unroll 1
    for (int it = 0; it < nkt; it++) consume(stages, bars, it, it == 0, row0, acc, lane);
    wgmma_wait<0>();
    acc_fence(acc);
  }

#if SPLIT_K > 1
  /* The cluster's partial sums meet in distributed shared memory: each
   * block leaves its accumulators in its pipeline memory, 16 bytes (one
   * group j of 4 words) per thread and group, then rank r adds the others'
   * groups j with j / JPR == r to its own and stores those. */
  const unsigned rank = cluster_rank();
  const int ct = tid - 128;
  int4 *red = (int4 *)(smem_raw + (stages - raw));
  if (wg > 0) {
    asm volatile("bar.sync 1, %0;\n" ::"n"(CTHREADS) : "memory");
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; j++)
        red[(mi * (BLOCK_N / 8) + j) * CTHREADS + ct] =
            make_int4(acc[mi][4 * j], acc[mi][4 * j + 1], acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
  }
  cluster_sync();
  if (wg > 0) {
    const unsigned base = smem_addr(red) + 16u * ct;
    /* the rank as a constant in each case, so that the groups it adds are
     * registers known at compile time and its loads run without branches */
    switch (rank) {
#define SPLIT_MEET(r) \
  case r:             \
    if (r < SPLIT_K) split_meet<r % SPLIT_K>(acc, base); \
    break;
      SPLIT_MEET(0) SPLIT_MEET(1) SPLIT_MEET(2) SPLIT_MEET(3)
      SPLIT_MEET(4) SPLIT_MEET(5) SPLIT_MEET(6) SPLIT_MEET(7)
#undef SPLIT_MEET
    }
  }
  cluster_sync();
  if (wg == 0) return;
#else
  const unsigned rank = 0;
#endif
  tile_epilogue(acc, m0, row0, tile_n, rank, params, qh, tab, residual, out, ltid);
#endif

}
