/*
 * conv3d_ndhwc_wgmma: int8 conv3d as implicit GEMM on Hopper's wgmma
 * (sm_90a), both operands from shared memory by descriptor, both loaded by
 * TMA (the data in im2col mode). Data NDHWC, weights ODHWI, output NDHWC.
 * The body is conv_wgmma_nhwc.cuh. Knobs (set by
 * templates/conv_wgmma_nhwc.c as -D macros): block_n, block_k, stages,
 * warpgroups, rows_per_wg, split_k.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_wgmma_nhwc.cuh"
