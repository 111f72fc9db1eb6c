/*
 * conv2d_nhwc_dw_mma: int8 depthwise conv2d (G = C = K, C a multiple of 8),
 * channels-last, on mma.sync with a block-diagonal B. Data NHWC, weights
 * OHWI [K][kh][kw][1], output NHWC. The body is conv_dw_mma.cuh with the
 * depth axes at 1. Knobs: tile_w, tile_h, n_tiles, warps_m, m_unroll,
 * blocks_per_sm, tiles, tma. templates/conv_dw_mma.c's knob table
 * describes them.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_dw_mma.cuh"
