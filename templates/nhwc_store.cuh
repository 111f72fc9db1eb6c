/*
 * nhwc_store.cuh: the output stores the channels-last templates share
 * (conv_wgmma_nhwc.cuh, conv_mma_nhwc.cuh). Both hold m16n8 accumulator
 * fragments: a thread has channels 2t, 2t + 1 of each 8-channel group for
 * rows g and g + 8. For a pair of groups (j0, j1), lanes t and t ^ 1 trade
 * one group, so that the even lane stores 4 channels of j0 and the odd one
 * 4 of j1: the lane's stored group starts at channel ks = 8 (j0 + odd) +
 * 2 (t - odd). pa and pb are rows a and b of the output at channel ks; a
 * row is stored where its ok is true, and every lane of the warp must call
 * (the trade is a shuffle). Included after tc_common.cuh.
 */
#ifndef CT_TEMPLATES_NHWC_STORE_CUH
#define CT_TEMPLATES_NHWC_STORE_CUH

/* int32: v[group of the pair][row a ch 0, 1, row b ch 0, 1], 16 bytes per row. */
__device__ __forceinline__ void store_pair_nhwc(int *pa, int *pb, const int (&v)[2][4], int odd,
                                                bool oka, bool okb) {
  /* selects, not v[odd]: a register array indexed at run time goes to local memory */
  int x[4], mine[4];
#pragma unroll
  for (int l = 0; l < 4; l++) {
    x[l] = __shfl_xor_sync(0xffffffffu, odd ? v[0][l] : v[1][l], 1);
    mine[l] = odd ? v[1][l] : v[0][l];
  }
  if (oka)
    *(int4 *)pa =
        odd ? make_int4(x[0], x[1], mine[0], mine[1]) : make_int4(mine[0], mine[1], x[0], x[1]);
  if (okb)
    *(int4 *)pb =
        odd ? make_int4(x[2], x[3], mine[2], mine[3]) : make_int4(mine[2], mine[3], x[2], x[3]);
}

/* 8-bit: r8[group of the pair][row], its 2 channels in bytes 0, 1 (bytes
 * 2, 3 undefined, as requant2 leaves them), 4 bytes per row. */
__device__ __forceinline__ void store_pair_nhwc(unsigned char *pa, unsigned char *pb,
                                                const unsigned (&r8)[2][2], int odd, bool oka,
                                                bool okb) {
  const unsigned xa = __shfl_xor_sync(0xffffffffu, odd ? r8[0][0] : r8[1][0], 1);
  const unsigned xb = __shfl_xor_sync(0xffffffffu, odd ? r8[0][1] : r8[1][1], 1);
  if (oka) *(unsigned *)pa = odd ? join_halves(xa, r8[1][0]) : join_halves(r8[0][0], xa);
  if (okb) *(unsigned *)pb = odd ? join_halves(xb, r8[1][1]) : join_halves(r8[0][1], xb);
}

#endif
