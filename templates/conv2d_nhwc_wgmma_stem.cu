/*
 * conv2d_nhwc_wgmma_stem: int8 conv2d of layers with few input channels
 * (the stems) on Hopper's wgmma (sm_90a), the reduction over the flattened
 * window rows (KW x C contiguous bytes), both operands staged K-major in
 * shared memory by the warpgroups themselves. Data NHWC, weights OHWI,
 * output NHWC. The body is conv_wgmma_stem.cuh with the depth axes at 1.
 * Knobs (set by templates/conv_wgmma_stem.c as -D macros): block_m,
 * block_n, warpgroups, a_buffers, blocks_per_sm.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_wgmma_stem.cuh"
