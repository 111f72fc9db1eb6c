/*
 * conv3d_ndhwc_grouped_mma: int8 grouped conv3d (at most 32 input channels
 * a group; C and K multiples of 8), channels-last, on mma.sync with a
 * block-diagonal B over super-groups of whole groups. Data NDHWC, weights
 * ODHWI [K][kd][kh][kw][C/G], output NDHWC. The body is conv_dw_mma.cuh.
 * Knobs: tile_w, tile_h, n_tiles, warps_m, m_unroll, blocks_per_sm, tiles,
 * tma, sg_c, n_per_warp. templates/conv_dw_mma.c's knob table gknobs
 * describes them.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_dw_mma.cuh"
