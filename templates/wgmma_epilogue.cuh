/*
 * wgmma_epilogue.cuh: the epilogue of the channels-last wgmma templates
 * (conv_wgmma_nhwc.cuh, conv_wgmma_stem.cuh): a consumer warpgroup's
 * m64nN accumulators (per m64 block, warp w holds rows 16w + g and + 8,
 * channels 2t, 2t + 1 of each 8-channel group j in acc[4j .. 4j + 3]) to
 * the NHWC output through nhwc_store.cuh, int32 as they are or
 * requantized to 8 bits (tc_common.cuh). The including kernel defines MI
 * (m64 blocks per warpgroup), WG_BN (the tile's channels), M_TOTAL
 * (output pixels), WG_SPLITK and JPR (split-K: the 8-channel groups per
 * rank; 1 and WG_BN / 8 without). Included after nhwc_store.cuh.
 *
 * An 8-bit epilogue reads each channel's values from a table in shared
 * memory that its warpgroup fills when its tiles' channels change (once
 * per kernel where they never do): the values load_chan gives, the
 * requantization precomputed, as arrays (off, mult, shift, the fast
 * form's shift or -1 where it does not apply, its 64-bit addend), so that
 * a thread's channel pair is five conflict-free shared loads, where it
 * took global loads and the fast form's arithmetic per tile. The kernel
 * reserves CHAN_TAB_BYTES per consumer warpgroup, 16-byte aligned.
 */
#ifndef CT_TEMPLATES_WGMMA_EPILOGUE_CUH
#define CT_TEMPLATES_WGMMA_EPILOGUE_CUH

#if CT_OUT != 0
#define CHAN_TAB_BYTES (WG_BN * 24)
#else
#define CHAN_TAB_BYTES 0
#endif

/* The table of channels n0 .. n0 + WG_BN - 1 (those past K read channel 0:
 * in range, never stored), by the 128 threads of a warpgroup (ltid); the
 * caller brackets it with the warpgroup's barrier. */
__device__ __forceinline__ void chan_tab_fill(unsigned char *tab, const int *__restrict__ params,
                                              const q_head &qh, int n0, int ltid) {
  int *off = (int *)tab, *mult = off + WG_BN, *shift = mult + WG_BN, *fsh = shift + WG_BN;
  long long *add = (long long *)(fsh + WG_BN);
  for (int i = ltid; i < WG_BN; i += 128) {
    const q_chan c = load_chan(params, qh, n0 + i < CT_KR ? n0 + i : 0);
    off[i] = c.off, mult[i] = c.mult, shift[i] = c.shift;
    fsh[i] = c.f.ok ? c.f.sh : -1;
    add[i] = c.f.add;
  }
}

/* The table's channels i and i + 1 (i even) as load_chan gives them. */
__device__ __forceinline__ void chan_tab_pair(const unsigned char *tab, int i, q_chan &c0,
                                              q_chan &c1) {
  const int *off = (const int *)tab, *mult = off + WG_BN, *shift = mult + WG_BN, *fsh = shift + WG_BN;
  const long long *add = (const long long *)(fsh + WG_BN);
  const int2 o = *(const int2 *)(off + i), m = *(const int2 *)(mult + i);
  const int2 s = *(const int2 *)(shift + i), f = *(const int2 *)(fsh + i);
  const longlong2 a = *(const longlong2 *)(add + i);
  c0.off = o.x, c0.zw = 0, c0.mult = m.x, c0.shift = s.x;
  c1.off = o.y, c1.zw = 0, c1.mult = m.y, c1.shift = s.y;
  c0.f.add = a.x, c0.f.m = m.x, c0.f.sh = f.x & 31, c0.f.ok = f.x >= 0;
  c1.f.add = a.y, c1.f.m = m.y, c1.f.sh = f.y & 31, c1.f.ok = f.y >= 0;
}

/* The tile at (m0, tile_n) from this consumer warpgroup's accumulators,
 * its rows from row0; with split_k, rank's groups only; 8-bit: tab holds
 * the channels of tile_n (chan_tab_fill). */
__device__ __forceinline__ void tile_epilogue(const int (&acc)[MI][WG_BN / 2], long m0, int row0,
                                              int tile_n, unsigned rank,
                                              const int *__restrict__ params, const q_head &qh,
                                              const unsigned char *tab,
                                              const void *__restrict__ residual,
                                              void *__restrict__ out, int ltid) {
  (void)rank, (void)tab;
  /* The epilogue: per m64 block, rows 16 * warp + g and + 8. A thread
   * holds channels 2t, 2t + 1 of each 8-channel group; lanes t and t ^ 1
   * trade one group of a pair of groups (j0 = 2 jp, j1 = j0 + 1), so that
   * the even lane stores 4 channels of j0 and the odd one 4 of j1: one
   * 16-byte store (int32) or 4-byte store (8-bit) per row and pair. */
  const int lane = ltid & 31, g = lane >> 2, t = lane & 3, warp = ltid >> 5, odd = t & 1;
#if CT_OUT == 0
  (void)residual;
#pragma unroll
  for (int mi = 0; mi < MI; mi++) {
    const long ma = m0 + row0 + mi * 64 + 16 * warp + g, mb = ma + 8;
    const bool oka = ma < M_TOTAL, okb = mb < M_TOTAL;
#pragma unroll
    for (int jp = 0; jp < WG_BN / 16; jp++) {
      if (WG_SPLITK > 1 && (2 * jp) / JPR != (int)rank) continue; /* another rank's groups */
      int v[2][4]; /* [group of the pair][row a ch 0, 1, row b ch 0, 1] */
#pragma unroll
      for (int q = 0; q < 2; q++) {
        const int j = 2 * jp + q, k = tile_n * WG_BN + j * 8 + 2 * t;
        const int kk = k < CT_KR ? k : 0; /* params in range; not stored */
        const q_chan c0 = load_chan(params, qh, kk), c1 = load_chan(params, qh, kk + 1);
        v[q][0] = corrected(c0, acc[mi][4 * j], 0);
        v[q][1] = corrected(c1, acc[mi][4 * j + 1], 0);
        v[q][2] = corrected(c0, acc[mi][4 * j + 2], 0);
        v[q][3] = corrected(c1, acc[mi][4 * j + 3], 0);
      }
      /* the stored group and its first channel: j0 at 2t (even t), j1 at 2(t - 1) (odd t) */
      const int ks = tile_n * WG_BN + (2 * jp + odd) * 8 + 2 * (t - odd);
      const bool okk = ks < CT_KR; /* K % 8 == 0: a group is whole or absent */
      store_pair_nhwc((int *)out + ma * CT_KR + ks, (int *)out + mb * CT_KR + ks, v, odd,
                      okk && oka, okk && okb);
    }
  }
#else
  /* 8-bit: the pair loop outside the m64 blocks, so that a thread's 4
   * channels are read from the table once for all of its rows: in the
   * order of the int32 path NVRTC kept every channel of the thread live
   * across the blocks, and with rows_per_wg 128 spilled. One branch per
   * pair and block between the fast requantization and the general one
   * (quant.cuh). */
  (void)params;
  const unsigned char *res = (const unsigned char *)residual;
#pragma unroll
  for (int jp = 0; jp < WG_BN / 16; jp++) {
    if (WG_SPLITK > 1 && (2 * jp) / JPR != (int)rank) continue; /* another rank's groups */
    q_chan c[2][2]; /* [group of the pair][channel 2t, 2t + 1] */
    int k[2];
#pragma unroll
    for (int q = 0; q < 2; q++) {
      k[q] = tile_n * WG_BN + (2 * jp + q) * 8 + 2 * t;
      chan_tab_pair(tab, (2 * jp + q) * 8 + 2 * t, c[q][0], c[q][1]);
    }
    const bool fast = c[0][0].f.ok && c[0][1].f.ok && c[1][0].f.ok && c[1][1].f.ok;
    /* the stored group and its first channel: j0 at 2t (even t), j1 at 2(t - 1) (odd t) */
    const int ks = tile_n * WG_BN + (2 * jp + odd) * 8 + 2 * (t - odd);
    const bool okk = ks < CT_KR; /* K % 8 == 0: a group is whole or absent */
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
      const long ma = m0 + row0 + mi * 64 + 16 * warp + g, mb = ma + 8;
      const bool oka = ma < M_TOTAL, okb = mb < M_TOTAL;
      int v[2][4]; /* [group][row a ch 0, 1, row b ch 0, 1] */
      unsigned rs[2][2] = {{0, 0}, {0, 0}}; /* residual: [group][row], 2 channels each */
#pragma unroll
      for (int q = 0; q < 2; q++) {
#pragma unroll
        for (int l = 0; l < 4; l++) v[q][l] = corrected(c[q][l & 1], acc[mi][8 * jp + 4 * q + l], 0);
        if (CT_RES && k[q] < CT_KR) {
          if (oka) rs[q][0] = *(const unsigned short *)(res + ma * CT_KR + k[q]);
          if (okb) rs[q][1] = *(const unsigned short *)(res + mb * CT_KR + k[q]);
        }
      }
      unsigned r8[2][2]; /* [group][row]: 2 channels in bytes 0, 1 */
      if (fast) {
#pragma unroll
        for (int q = 0; q < 2; q++)
#pragma unroll
          for (int h = 0; h < 2; h++)
            r8[q][h] = requant2<true>(qh, c[q][0], c[q][1], v[q][2 * h], v[q][2 * h + 1], rs[q][h]);
      } else {
#pragma unroll
        for (int q = 0; q < 2; q++)
#pragma unroll
          for (int h = 0; h < 2; h++)
            r8[q][h] = requant2<false>(qh, c[q][0], c[q][1], v[q][2 * h], v[q][2 * h + 1], rs[q][h]);
      }
      unsigned char *const o8 = (unsigned char *)out + ks;
      store_pair_nhwc(o8 + ma * CT_KR, o8 + mb * CT_KR, r8, odd, okk && oka, okk && okb);
    }
  }
#endif
}

#endif
