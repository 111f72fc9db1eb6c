/*
 * conv2d_nhwc_pw_mma: int8 dense pointwise conv2d (1x1, no padding, any
 * stride; C and K multiples of 8), channels-last, on mma.sync. Data NHWC,
 * weights OHWI [K][1][1][C], output NHWC. The body is conv_pw_mma.cuh with
 * the depth axes at 1. Knobs: m_tiles, n_tiles, n_per_warp, warps_m,
 * m_unroll, stages, blocks_per_sm. templates/conv_pw_mma.c's knob table
 * describes them.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_pw_mma.cuh"
