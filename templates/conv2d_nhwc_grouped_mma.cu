/*
 * conv2d_nhwc_grouped_mma: int8 grouped conv2d (at most 32 input channels
 * a group; C and K multiples of 8), channels-last, on mma.sync with a
 * block-diagonal B over super-groups of whole groups. Data NHWC, weights
 * OHWI [K][kh][kw][C/G], output NHWC. The body is conv_dw_mma.cuh with the
 * depth axes at 1. Knobs: tile_w, tile_h, n_tiles, warps_m, m_unroll,
 * blocks_per_sm, tiles, tma, sg_c, n_per_warp. templates/conv_dw_mma.c's
 * knob table gknobs describes them.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_dw_mma.cuh"
