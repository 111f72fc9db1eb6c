/*
 * wgmma_epilogue.cuh: the epilogue of the channels-last wgmma templates
 * (conv_wgmma_nhwc.cuh, conv_wgmma_stem.cuh): a consumer warpgroup's
 * m64nN accumulators (per m64 block, warp w holds rows 16w + g and + 8,
 * channels 2t, 2t + 1 of each 8-channel group j in acc[4j .. 4j + 3]) to
 * the NHWC output through nhwc_store.cuh, int32 as they are or
 * requantized to 8 bits (tc_common.cuh). The including kernel defines MI
 * (m64 blocks per warpgroup), BLOCK_N (the tile's channels), M_TOTAL
 * (output pixels), SPLIT_K and JPR (split-K: the 8-channel groups per
 * rank; 1 and BLOCK_N / 8 without), OUT_STAGE and TILE_REQUANT (below).
 * Included after nhwc_store.cuh.
 *
 * An 8-bit epilogue reads each channel's values from a table in shared
 * memory that its warpgroup fills when its tiles' channels change (once
 * per kernel where they never do): the values load_chan gives, the
 * requantization precomputed, as arrays (off, mult, shift, the fast
 * form's shift or -1 where it does not apply, its 64-bit addend), so that
 * a thread's channel pair is five conflict-free shared loads, where it
 * took global loads and the fast form's arithmetic per tile.
 *
 * OUT_STAGE 1 (8-bit output): each warp writes its rows' output bytes
 * (16 x MI rows: 16w + g and + 8 of each m64 block) into a slab of shared
 * memory of its own, two bytes per store and no lane trade, then stores
 * the slab to the output as 16-byte chunks (8-byte where K % 16 != 0),
 * consecutive lanes along a row. A warp's 4-byte stores of the direct form
 * (0) write 16 bytes to each of 8 pixels; the slab's write whole rows,
 * with a fifth of the instructions per byte (an 8-bit epilogue is bound by
 * the integer pipes). Rows are padded by 16 bytes, so that the 8 rows of
 * a store land in different banks.
 *
 * TILE_REQUANT (8-bit output): how a thread picks the requantization's
 * form (tc_common.cuh's RQ_*: the saturating fast one, the fast one, the
 * general one). 0: per pair of channel groups, from the pair's table
 * entries, a branch each; every pair then waits out its table loads and
 * its dependent chain in turn, at one warp per scheduler. 1: once per
 * tile, for all of the warp's channels, so that the tile's epilogue is
 * one straight-line block that ptxas interleaves (ResNet-50 b16's 8-bit
 * configs as tuned with 0, on an H100: four 1x1 layers 9-12% faster, the
 * sum 2% faster). It takes more registers (l3_3x3_256's 1x64 tile: 105 ->
 * 130), which can keep the next launch's block (programmatic dependent
 * launch) from sharing the SM: there a one-wave layer pays the launch gap
 * again (l3_3x3_256 6.43 -> 7.28 us; the same under ncu, which launches
 * one at a time). Hence a knob; the stems keep 0. With CT_ONNX (ONNX
 * Runtime's float requantization, tc_common.cuh) there is one form, and
 * the descriptors leave the knob out.
 *
 * WG_RES_PREFETCH 1 (8-bit output with a residual and OUT_STAGE 1,
 * defined by conv_wgmma_nhwc.cuh): before a tile's mainloop each warp
 * copies its rows' residual bytes into its slab by cp.async (res_prefetch:
 * the slab's layout, 16-byte chunks along a row as slab_store writes
 * them), and the epilogue reads each value from the slab where its output
 * byte goes. The direct form loads 2 bytes per row and group pair from
 * global memory inside the epilogue, where nothing hides their latency
 * (ResNet-50's residual 1x1 layers at batch 256 took 2.8x their floor).
 * With ONNX rounding each residual byte is a load of its own (signed or
 * unsigned) converted by I2FP (requant2_onnx): taken from a 2-byte word,
 * ptxas converted each byte with I2F.S8, and the magic number's form takes
 * three instructions.
 *
 * WG_ACC_OFF 1 (8-bit output, defined by conv_wgmma_nhwc.cuh): the
 * kernel starts each tile's accumulators at the channels' offsets
 * (acc_start, from the table, filled before the mainloop), and the
 * epilogue takes them as corrected: one add less per element, and no
 * offset load per channel pair. The stems (scale_d 0) correct here.
 *
 * OUT_TMA 1 (int32 output, the stems' out_tma): tile_stage32 writes the
 * tile into shared memory as the output's tensor map lays out a box, and
 * the kernel stores the boxes by TMA (tma_store2), where the direct form
 * takes a 16-byte store per thread and pair of groups: 8 rows of 64 bytes
 * per warp store, each costing the L1 pipeline as much as a whole line
 * (on the H200, ncu: the int32 stem's stores were 46% of its L1 data
 * wavefronts, with the pipeline 70% busy).
 *
 * The kernel reserves EPI_WG_BYTES per consumer warpgroup, 16-byte
 * aligned: the channel table (CHAN_TAB_BYTES), then the 4 warps' slabs.
 */
#ifndef CT_TEMPLATES_WGMMA_EPILOGUE_CUH
#define CT_TEMPLATES_WGMMA_EPILOGUE_CUH

#ifndef WG_ACC_OFF
#define WG_ACC_OFF 0
#endif
#ifndef OUT_TMA
#define OUT_TMA 0
#endif
#ifndef WG_RES_PREFETCH
#define WG_RES_PREFETCH 0
#endif
static_assert(OUT_TMA == 0 || CT_OUT == 0, "out_tma: the int32 output");
static_assert(WG_ACC_OFF == 0 || CT_OUT != 0, "WG_ACC_OFF: the offsets come from the 8-bit table");

/* the table's arrays, BLOCK_N entries each, in int units from its start:
 * off, mult, shift, the fast form's shift (int), then its addend (int64) */
enum { TAB_OFF = 0, TAB_MULT = 1, TAB_SHIFT = 2, TAB_FSH = 3, TAB_ADD = 4 };
#if CT_OUT != 0
#define CHAN_TAB_BYTES (BLOCK_N * 24)
#else
#define CHAN_TAB_BYTES 0
#endif
#if CT_OUT != 0 && OUT_STAGE
#define OST_ROW (BLOCK_N + 16)           /* a slab row: the tile's channels and the pad */
#define OST_WARP_BYTES (16 * MI * OST_ROW) /* a warp's 16 rows of each m64 block */
#else
#define OST_WARP_BYTES 0
#endif
#define EPI_WG_BYTES (CHAN_TAB_BYTES + 4 * OST_WARP_BYTES)
static_assert(OUT_STAGE == 0 || OUT_STAGE == 1, "out_stage: 0 or 1");
#if WG_RES_PREFETCH && !(CT_RES && OST_WARP_BYTES)
#error "WG_RES_PREFETCH: 8-bit output with a residual, staged (OUT_STAGE 1)"
#endif
static_assert(TILE_REQUANT == 0 || TILE_REQUANT == 1, "tile_requant: 0 or 1");

/* The table of channels n0 .. n0 + BLOCK_N - 1 (those past K read channel 0:
 * in range, never stored), by the 128 threads of a warpgroup (ltid); the
 * caller brackets it with the warpgroup's barrier. */
__device__ __forceinline__ void chan_tab_fill(unsigned char *tab, const int *__restrict__ params,
                                              const q_head &qh, int n0, int ltid) {
  int *const t = (int *)tab;
  int *off = t + TAB_OFF * BLOCK_N, *mult = t + TAB_MULT * BLOCK_N, *shift = t + TAB_SHIFT * BLOCK_N;
  int *fsh = t + TAB_FSH * BLOCK_N;
  long long *add = (long long *)(t + TAB_ADD * BLOCK_N);
  for (int i = ltid; i < BLOCK_N; i += 128) {
    const q_chan c = load_chan(params, qh, n0 + i < CT_KR ? n0 + i : 0);
    off[i] = c.off, mult[i] = c.mult, shift[i] = c.shift;
    fsh[i] = c.f.ok ? c.f.sh : -1;
    add[i] = c.f.add;
  }
}

/* Pin the accumulators: every value is written before what follows (a
 * wgmma.fence, or the epilogue after wgmma_wait), or ptxas serializes
 * wgmmas around them (C7515). */
__device__ __forceinline__ void acc_fence(int (&acc)[MI][BLOCK_N / 2]) {
#pragma unroll
  for (int mi = 0; mi < MI; mi++)
#pragma unroll
    for (int i = 0; i < BLOCK_N / 2; i++) asm volatile("" : "+r"(acc[mi][i])::"memory");
}

/* A tile's accumulators before its first wgmma: zero, or with WG_ACC_OFF
 * (and with_off) each channel's offset (off, from the table: channels 2t,
 * 2t + 1 of each group, t = ltid % 4), so that the epilogue adds nothing
 * (the sum is the same modulo 2^32, as ctq_correct's); then acc_fence. */
__device__ __forceinline__ void acc_start(int (&acc)[MI][BLOCK_N / 2], const unsigned char *tab,
                                          int ltid, bool with_off) {
  (void)tab, (void)ltid, (void)with_off;
#pragma unroll
  for (int j = 0; j < BLOCK_N / 8; j++) {
    int2 o = make_int2(0, 0);
    if (WG_ACC_OFF && with_off)
      o = *(const int2 *)((const int *)tab + TAB_OFF * BLOCK_N + j * 8 + 2 * (ltid & 3));
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
      acc[mi][4 * j] = o.x, acc[mi][4 * j + 1] = o.y;
      acc[mi][4 * j + 2] = o.x, acc[mi][4 * j + 3] = o.y;
    }
  }
  acc_fence(acc);
}

/* The table's channels i and i + 1 (i even) as load_chan gives them, but
 * for the fast form's shift where it does not apply: -1, not a shift (no
 * mask per element: only the fast form, where ok, reads it). */
__device__ __forceinline__ void chan_tab_pair(const unsigned char *tab, int i, q_chan &c0,
                                              q_chan &c1) {
  const int *const t = (const int *)tab;
  const int *off = t + TAB_OFF * BLOCK_N, *mult = t + TAB_MULT * BLOCK_N;
  const int *shift = t + TAB_SHIFT * BLOCK_N, *fsh = t + TAB_FSH * BLOCK_N;
  const long long *add = (const long long *)(t + TAB_ADD * BLOCK_N);
  const int2 o = *(const int2 *)(off + i), m = *(const int2 *)(mult + i);
  const int2 s = *(const int2 *)(shift + i), f = *(const int2 *)(fsh + i);
  const longlong2 a = *(const longlong2 *)(add + i);
  c0.off = o.x, c0.zw = 0, c0.mult = m.x, c0.shift = s.x;
  c1.off = o.y, c1.zw = 0, c1.mult = m.y, c1.shift = s.y;
  /* CT_ONNX: no fast form, known at compile time (the table says -1 too) */
  c0.f.add = a.x, c0.f.m = m.x, c0.f.sh = f.x, c0.f.ok = !CT_ONNX && f.x >= 0;
  c1.f.add = a.y, c1.f.m = m.y, c1.f.sh = f.y, c1.f.ok = !CT_ONNX && f.y >= 0;
}

/* The 8-bit epilogue's values of a pair of groups and two rows (v, rs:
 * [group][row a ch 0, 1, row b ch 0, 1], [group][row]) to r8 ([group][row],
 * 2 channels in bytes 0, 1), MODE as requant2's for all four. */
template <int MODE>
__device__ __forceinline__ void requant_pairs(const q_head &qh, const q_chan (&c)[2][2],
                                              const int (&v)[2][4], const unsigned (&rs)[2][2],
                                              unsigned (&r8)[2][2]) {
#pragma unroll
  for (int q = 0; q < 2; q++)
#pragma unroll
    for (int h = 0; h < 2; h++)
      r8[q][h] = requant2<MODE>(qh, c[q][0], c[q][1], v[q][2 * h], v[q][2 * h + 1], rs[q][h]);
}

#if WG_RES_PREFETCH && CT_ONNX
/* requant_pairs of ONNX rounding, the residual's values as ints ([group][row][channel]:
 * requant2_onnx's) */
__device__ __forceinline__ void requant_pairs_onnx(const q_head &qh, const q_chan (&c)[2][2],
                                                   const int (&v)[2][4], const int (&rv)[2][2][2],
                                                   unsigned (&r8)[2][2]) {
#pragma unroll
  for (int q = 0; q < 2; q++)
#pragma unroll
    for (int h = 0; h < 2; h++)
      r8[q][h] = requant2_onnx(qh, c[q][0], c[q][1], v[q][2 * h], v[q][2 * h + 1], rv[q][h][0],
                               rv[q][h][1]);
}
#endif

#if OST_WARP_BYTES
/* How a warp walks its slab (16 x MI rows of rank's channels) against the
 * output, for slab_store and res_prefetch: each instruction covers RPI =
 * 32 / NC whole rows, lane l at row l / NC and chunk l % NC of CH bytes,
 * so that a lane's pixel and channel move by constants from one
 * instruction to the next (immediate offsets). Slab row r is pixel m0 +
 * row0 + 16 * warp + 64 (r / 16) + r % 16. */
struct slab_walk {
  static constexpr int CH = CT_KR % 16 == 0 ? 16 : 8; /* bytes per access: K % 8 == 0 */
  static constexpr int NC = JPR * 8 / CH;             /* chunks per row of rank's channels: 1 to 32 */
  static constexpr int RPI = 32 / NC;                 /* rows per instruction */
  static constexpr int ROWS = 16 * MI;
  static_assert(NC >= 1 && 32 % NC == 0, "slab_walk: a row's chunks must divide the warp");
  int l, c, k;
  long mw;
  bool okk;
  __device__ __forceinline__ slab_walk(long m0, int row0, int warp, int tile_n, unsigned rank,
                                       int lane)
      : l(lane / NC), c((int)rank * JPR * 8 + (lane % NC) * CH), k(tile_n * BLOCK_N + c),
        mw(m0 + row0 + 16 * warp), okk(k < CT_KR) {} /* K % CH == 0 or CH == 8: whole or absent */
  /* this lane's slab row at instruction r0, or -1 past the rows (ROWS % RPI != 0) */
  __device__ __forceinline__ int row(int r0) const {
    return ROWS % RPI == 0 || r0 + l < ROWS ? r0 + l : -1;
  }
  /* its pixel (RPI <= 16 keeps an instruction's rows in one m64 block) */
  __device__ __forceinline__ long pixel(int r0) const {
    const int r = r0 + l;
    return mw + (RPI <= 16 ? (r0 >> 4) * 64 + (r0 & 15) + l : (r >> 4) * 64 + (r & 15));
  }
};

/* out_stage 1: a warp's slab to the output. The slab is read outside the
 * bounds checks (only the stores are predicated). */
__device__ __forceinline__ void slab_store(const unsigned char *slab, long m0, int row0, int warp,
                                           int tile_n, unsigned rank, unsigned char *out,
                                           int lane) {
  const slab_walk sw(m0, row0, warp, tile_n, rank, lane);
#pragma unroll
  for (int r0 = 0; r0 < slab_walk::ROWS; r0 += slab_walk::RPI) {
    const int r = sw.row(r0);
    const long m = sw.pixel(r0);
    const bool ok = r >= 0 && sw.okk && m < M_TOTAL;
    const unsigned char *const from = slab + (r >= 0 ? r : 0) * OST_ROW + sw.c;
    unsigned char *const to = out + m * CT_KR + sw.k;
    if (slab_walk::CH == 16) {
      const uint4 v = *(const uint4 *)from;
      if (ok) *(uint4 *)to = v;
    } else {
      const uint2 v = *(const uint2 *)from;
      if (ok) *(uint2 *)to = v;
    }
  }
}
#endif

#if WG_RES_PREFETCH
/* The residual of this warp's rows of the tile at (m0, tile_n), rank's
 * channels, into its slab (tab: its warpgroup's table and slabs) by
 * cp.async, zeros where a pixel or channel is past the output; one commit
 * group, which tile_epilogue8 waits for. The caller issues it while the
 * slab is free: after the warp's previous slab_store. */
__device__ __forceinline__ void res_prefetch(const void *__restrict__ residual, unsigned char *tab,
                                             long m0, int row0, int tile_n, unsigned rank,
                                             int ltid) {
  const int lane = ltid & 31, warp = ltid >> 5;
  const unsigned slab = smem_addr(tab + CHAN_TAB_BYTES + warp * OST_WARP_BYTES);
  const unsigned char *const res = (const unsigned char *)residual;
  const slab_walk sw(m0, row0, warp, tile_n, rank, lane);
#pragma unroll
  for (int r0 = 0; r0 < slab_walk::ROWS; r0 += slab_walk::RPI) {
    const int r = sw.row(r0);
    if (r < 0) continue;
    const long m = sw.pixel(r0);
    const bool ok = sw.okk && m < M_TOTAL;
    const unsigned char *const from = ok ? res + m * CT_KR + sw.k : res; /* 0 bytes read */
    const unsigned to = slab + r * OST_ROW + sw.c;
    if (slab_walk::CH == 16)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from),
                   "r"(ok ? 16 : 0)
                   : "memory");
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(to), "l"(from),
                   "r"(ok ? 8 : 0)
                   : "memory");
  }
  cp_async_commit();
}
#endif

#if CT_OUT != 0
/* The 8-bit epilogue of a tile (tile_epilogue's arguments), every pair of
 * this thread's channels requantized as MODE (requant2's), which the
 * caller picks once per tile (TILE_REQUANT 1): the pairs' table loads,
 * arithmetic and stores are one straight-line block that ptxas can
 * interleave. MODE -1 (TILE_REQUANT 0): each pair picks its own from its
 * table entries, a branch each. FIRST (ONNX rounding with a residual):
 * the add's operand order (q_head's onnx.first, a kernel argument) as a
 * constant, which the caller picks once per tile; -1 reads it per pair.
 * Read per pair, it was a branch per 8 values that ptxas could not
 * interleave across: taken once, ResNet-50's residual 1x1 layers at batch
 * 256 take 1-24% less time, the most with 128 rows a warpgroup (H200,
 * config_run).
 *
 * The pair loop is outside the m64 blocks, so that a thread's 4 channels
 * are read from the table once for all of its rows: in the order of the
 * int32 path NVRTC kept every channel of the thread live across the
 * blocks, and with rows_per_wg 128 spilled. */
template <int MODE, int FIRST>
__device__ __forceinline__ void
tile_epilogue8(const int (&acc)[MI][BLOCK_N / 2], long m0, int row0, int tile_n, unsigned rank,
               const q_head &qhead, unsigned char *tab, const void *__restrict__ residual,
               void *__restrict__ out, int ltid) {
  (void)rank;
  const int lane = ltid & 31, g = lane >> 2, t = lane & 3, warp = ltid >> 5, odd = t & 1;
  const unsigned char *res = (const unsigned char *)residual;
  q_head qh = qhead;
#if CT_ONNX
  if (FIRST >= 0) qh.onnx.first = FIRST;
#endif
#if OST_WARP_BYTES
  /* this thread's bytes in its warp's slab: row g of each m64 block, channel 2t of each group */
  unsigned char *const slab = tab + CHAN_TAB_BYTES + warp * OST_WARP_BYTES;
  unsigned char *const mine = slab + g * OST_ROW + 2 * t;
#endif
#if WG_RES_PREFETCH
  cp_async_wait<0>(); /* this lane's residual copies */
  __syncwarp();       /* and the warp's: a lane reads bytes another copied */
#endif
#pragma unroll
  for (int jp = 0; jp < BLOCK_N / 16; jp++) {
    if (SPLIT_K > 1 && (2 * jp) / JPR != (int)rank) continue; /* another rank's groups */
    q_chan c[2][2]; /* [group of the pair][channel 2t, 2t + 1] */
    int k[2];
#pragma unroll
    for (int q = 0; q < 2; q++) {
      k[q] = tile_n * BLOCK_N + (2 * jp + q) * 8 + 2 * t;
      chan_tab_pair(tab, (2 * jp + q) * 8 + 2 * t, c[q][0], c[q][1]);
    }
    const bool fast = c[0][0].f.ok && c[0][1].f.ok && c[1][0].f.ok && c[1][1].f.ok;
    (void)fast; /* MODE -1 only */
    /* the stored group and its first channel: j0 at 2t (even t), j1 at 2(t - 1) (odd t) */
    const int ks = tile_n * BLOCK_N + (2 * jp + odd) * 8 + 2 * (t - odd);
    const bool okk = ks < CT_KR; /* K % 8 == 0: a group is whole or absent */
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
      const long ma = m0 + row0 + mi * 64 + 16 * warp + g, mb = ma + 8;
      const bool oka = ma < M_TOTAL, okb = mb < M_TOTAL;
      int v[2][4]; /* [group][row a ch 0, 1, row b ch 0, 1] */
      unsigned rs[2][2] = {{0, 0}, {0, 0}}; /* residual: [group][row], 2 channels each */
#if WG_RES_PREFETCH && CT_ONNX
      int rv[2][2][2]; /* ONNX rounding: the residual's values, [group][row][channel] */
#endif
#pragma unroll
      for (int q = 0; q < 2; q++) {
#pragma unroll
        for (int l = 0; l < 4; l++)
          v[q][l] = WG_ACC_OFF ? acc[mi][8 * jp + 4 * q + l]
                               : corrected(c[q][l & 1], acc[mi][8 * jp + 4 * q + l], 0);
#if WG_RES_PREFETCH && CT_ONNX
        /* where this pair's output bytes go (zeros past the output), byte by byte */
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
          for (int e = 0; e < 2; e++) {
            const unsigned char *const p =
                mine + (16 * mi + 8 * h) * OST_ROW + (2 * jp + q) * 8 + e;
            rv[q][h][e] = CT_OUT == 2 ? (int)*p : (int)*(const signed char *)p;
          }
        (void)res;
#elif WG_RES_PREFETCH
        /* where this pair's output bytes go (zeros past the output) */
        rs[q][0] = *(const unsigned short *)(mine + 16 * mi * OST_ROW + (2 * jp + q) * 8);
        rs[q][1] = *(const unsigned short *)(mine + (16 * mi + 8) * OST_ROW + (2 * jp + q) * 8);
        (void)res;
#else
        if (CT_RES && k[q] < CT_KR) {
          if (oka) rs[q][0] = *(const unsigned short *)(res + ma * CT_KR + k[q]);
          if (okb) rs[q][1] = *(const unsigned short *)(res + mb * CT_KR + k[q]);
        }
#endif
      }
      unsigned r8[2][2]; /* [group][row]: 2 channels in bytes 0, 1 */
#if WG_RES_PREFETCH && CT_ONNX
      requant_pairs_onnx(qh, c, v, rv, r8);
      (void)fast, (void)rs;
#else
      if (MODE >= 0) requant_pairs<MODE < 0 ? 0 : MODE>(qh, c, v, rs, r8);
      else if (fast && qh.sat) requant_pairs<RQ_SAT>(qh, c, v, rs, r8);
      else if (fast) requant_pairs<RQ_FAST>(qh, c, v, rs, r8);
      else requant_pairs<RQ_GENERAL>(qh, c, v, rs, r8);
#endif
#if OST_WARP_BYTES
      (void)ks, (void)okk, (void)odd;
#pragma unroll
      for (int q = 0; q < 2; q++)
#pragma unroll
        for (int h = 0; h < 2; h++)
          *(unsigned short *)(mine + (16 * mi + 8 * h) * OST_ROW + (2 * jp + q) * 8) =
              (unsigned short)r8[q][h];
#else
      unsigned char *const o8 = (unsigned char *)out + ks;
      store_pair_nhwc(o8 + ma * CT_KR, o8 + mb * CT_KR, r8, odd, okk && oka, okk && okb);
#endif
    }
  }
#if OST_WARP_BYTES
  __syncwarp(); /* the slab is whole */
  slab_store(slab, m0, row0, warp, tile_n, rank, (unsigned char *)out, lane);
  __syncwarp(); /* read before the next tile writes it */
#endif
}
#endif

#if OUT_TMA
/* out_tma 1: the tile's corrected int32 values into stage (1024-byte
 * aligned): BLOCK_N / 32 boxes of 32 channels (128 bytes) x 64 MI rows, each
 * 128-byte swizzled as the output's tensor map stores it (16-byte chunk c
 * of row r at chunk c ^ (r % 8)), so that a warp's 8-byte stores (rows g,
 * channels 2t, 2t + 1 of a group) hit every bank once per 256 bytes.
 * Channels past K are written too (the store leaves them out). The caller
 * fences, meets and has one thread store the boxes. */
__device__ __forceinline__ void tile_stage32(const int (&acc)[MI][BLOCK_N / 2], unsigned char *stage,
                                             int tile_n, const int *__restrict__ params,
                                             const q_head &qh, int ltid) {
  const int lane = ltid & 31, g = lane >> 2, t = lane & 3, warp = ltid >> 5;
#pragma unroll
  for (int j = 0; j < BLOCK_N / 8; j++) {
    const int k = tile_n * BLOCK_N + j * 8 + 2 * t;
    const int kk = k < CT_KR ? k : 0; /* params in range; not stored */
    const q_chan c0 = load_chan(params, qh, kk), c1 = load_chan(params, qh, kk + 1);
    /* box j / 4; in a row of it, chunk 2 (j % 4) + t / 2, word 2 (t % 2) */
    unsigned char *const box = stage + (j / 4) * (64 * MI * 128) + 8 * (t & 1);
    const int chunk = 2 * (j % 4) + (t >> 1);
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int r = mi * 64 + 16 * warp + 8 * h + g; /* r % 8 == g */
        *(int2 *)(box + r * 128 + ((chunk ^ g) << 4)) = make_int2(
            corrected(c0, acc[mi][4 * j + 2 * h], 0), corrected(c1, acc[mi][4 * j + 2 * h + 1], 0));
      }
  }
}
#endif

/* The tile at (m0, tile_n) from this consumer warpgroup's accumulators,
 * its rows from row0; with split_k, rank's groups only; 8-bit: tab holds
 * the channels of tile_n (chan_tab_fill), then the warps' slabs. */
__device__ __forceinline__ void tile_epilogue(const int (&acc)[MI][BLOCK_N / 2], long m0, int row0,
                                              int tile_n, unsigned rank,
                                              const int *__restrict__ params, const q_head &qh,
                                              unsigned char *tab,
                                              const void *__restrict__ residual,
                                              void *__restrict__ out, int ltid) {
  (void)rank, (void)tab;
  /* The epilogue: per m64 block, rows 16 * warp + g and + 8. A thread
   * holds channels 2t, 2t + 1 of each 8-channel group; lanes t and t ^ 1
   * trade one group of a pair of groups (j0 = 2 jp, j1 = j0 + 1), so that
   * the even lane stores 4 channels of j0 and the odd one 4 of j1: one
   * 16-byte store (int32) or 4-byte store (8-bit) per row and pair. */
  const int lane = ltid & 31, t = lane & 3;
#if CT_OUT == 0
  const int g = lane >> 2, warp = ltid >> 5, odd = t & 1;
  (void)residual;
#pragma unroll
  for (int mi = 0; mi < MI; mi++) {
    const long ma = m0 + row0 + mi * 64 + 16 * warp + g, mb = ma + 8;
    const bool oka = ma < M_TOTAL, okb = mb < M_TOTAL;
#pragma unroll
    for (int jp = 0; jp < BLOCK_N / 16; jp++) {
      if (SPLIT_K > 1 && (2 * jp) / JPR != (int)rank) continue; /* another rank's groups */
      int v[2][4]; /* [group of the pair][row a ch 0, 1, row b ch 0, 1] */
#pragma unroll
      for (int q = 0; q < 2; q++) {
        const int j = 2 * jp + q, k = tile_n * BLOCK_N + j * 8 + 2 * t;
        const int kk = k < CT_KR ? k : 0; /* params in range; not stored */
        const q_chan c0 = load_chan(params, qh, kk), c1 = load_chan(params, qh, kk + 1);
        v[q][0] = corrected(c0, acc[mi][4 * j], 0);
        v[q][1] = corrected(c1, acc[mi][4 * j + 1], 0);
        v[q][2] = corrected(c0, acc[mi][4 * j + 2], 0);
        v[q][3] = corrected(c1, acc[mi][4 * j + 3], 0);
      }
      /* the stored group and its first channel: j0 at 2t (even t), j1 at 2(t - 1) (odd t) */
      const int ks = tile_n * BLOCK_N + (2 * jp + odd) * 8 + 2 * (t - odd);
      const bool okk = ks < CT_KR; /* K % 8 == 0: a group is whole or absent */
      store_pair_nhwc((int *)out + ma * CT_KR + ks, (int *)out + mb * CT_KR + ks, v, odd,
                      okk && oka, okk && okb);
    }
  }
#else
  /* 8-bit: one mode for all of this thread's channels, from the table's
   * fast-form shifts (-1 where the fast form does not apply): the fast
   * requantization (with the saturating pack where the header allows:
   * RQ_SAT) where every channel of the warp takes it, else the general
   * one for all (quant.cuh: the same values, bit for bit, for the fast
   * channels). */
  (void)params;
#if CT_ONNX && CT_RES
  /* onnx: the general form; the add's operand order once per tile */
  if (qh.onnx.first)
    tile_epilogue8<-1, 1>(acc, m0, row0, tile_n, rank, qh, tab, residual, out, ltid);
  else
    tile_epilogue8<-1, 0>(acc, m0, row0, tile_n, rank, qh, tab, residual, out, ltid);
#else
  if (!TILE_REQUANT || CT_ONNX) { /* onnx: the general form, per pair or per tile alike */
    tile_epilogue8<-1, -1>(acc, m0, row0, tile_n, rank, qh, tab, residual, out, ltid);
    return;
  }
  const int *const fsh = (const int *)tab + TAB_FSH * BLOCK_N;
  bool all_fast = true;
#pragma unroll
  for (int j = 0; j < BLOCK_N / 8; j++) {
    if (SPLIT_K > 1 && j / JPR != (int)rank) continue;
    const int2 f = *(const int2 *)(fsh + j * 8 + 2 * t);
    all_fast = all_fast && (f.x | f.y) >= 0;
  }
  /* the warp's answer: uniform branches, and converged lanes for the
   * stores' shuffles (no divergence check around them) */
  all_fast = __all_sync(0xffffffffu, all_fast);
  if (all_fast && qh.sat)
    tile_epilogue8<RQ_SAT, -1>(acc, m0, row0, tile_n, rank, qh, tab, residual, out, ltid);
  else if (all_fast)
    tile_epilogue8<RQ_FAST, -1>(acc, m0, row0, tile_n, rank, qh, tab, residual, out, ltid);
  else
    tile_epilogue8<RQ_GENERAL, -1>(acc, m0, row0, tile_n, rank, qh, tab, residual, out, ltid);
#endif
#endif
}

#endif
