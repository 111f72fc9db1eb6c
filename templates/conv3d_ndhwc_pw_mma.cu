/*
 * conv3d_ndhwc_pw_mma: int8 dense pointwise conv3d (1x1x1, no padding, any
 * stride; C and K multiples of 8), channels-last, on mma.sync. Data NDHWC,
 * weights [K][1][1][1][C], output NDHWC. The body is conv_pw_mma.cuh.
 * Knobs: m_tiles, n_tiles, n_per_warp, warps_m, m_unroll, stages,
 * blocks_per_sm. templates/conv_pw_mma.c's knob table describes them.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_pw_mma.cuh"
