/*
 * conv3d_ndhwc_dw_mma: int8 depthwise conv3d (G = C = K, C a multiple of
 * 8), channels-last, on mma.sync with a block-diagonal B. Data NDHWC,
 * weights [K][kd][kh][kw][1], output NDHWC. The body is conv_dw_mma.cuh;
 * a block computes one output depth. Knobs: tile_w, tile_h, n_tiles,
 * warps_m, m_unroll, blocks_per_sm, tiles, tma. templates/conv_dw_mma.c's
 * knob table describes them.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_dw_mma.cuh"
