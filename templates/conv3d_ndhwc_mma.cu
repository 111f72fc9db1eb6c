/*
 * conv3d_ndhwc_mma: int8 conv3d of layers with few input channels (the
 * stems) on mma.sync m16n8k32 (sm_80 and later), the reduction over the
 * flattened window rows (KW x C contiguous bytes). Data NDHWC, weights
 * ODHWI, output NDHWC. The body is conv_mma_nhwc.cuh. Any K and any groups
 * (groups_per_tile groups a block-diagonal tile). Knobs: tile_w, tile_h,
 * block_n, warp_m16, blocks_per_sm, groups_per_tile. templates/conv_mma_nhwc.c's
 * knob table describes them and sets each as a -D macro, its name in upper
 * case.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_mma_nhwc.cuh"
