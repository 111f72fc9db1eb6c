/*
 * conv3d_ndhwc_wgmma_stem: int8 conv3d of layers with few input channels
 * (the stems) on Hopper's wgmma (sm_90a), the reduction over the flattened
 * window rows (KW x C contiguous bytes), one depth tap's rows per stage,
 * both operands staged K-major in shared memory by the warpgroups
 * themselves. Data NDHWC, weights ODHWI, output NDHWC. The body is
 * conv_wgmma_stem.cuh. Knobs: block_m, block_n, warpgroups, a_buffers,
 * blocks_per_sm, a_prefetch, out_tma, out_stage. templates/conv_wgmma_stem.c's
 * knob table describes them and sets each as a -D macro, its name in upper
 * case.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_wgmma_stem.cuh"
