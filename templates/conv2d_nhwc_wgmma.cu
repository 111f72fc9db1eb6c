/*
 * conv2d_nhwc_wgmma: int8 conv2d as implicit GEMM on Hopper's wgmma
 * (sm_90a), both operands from shared memory by descriptor, both loaded by
 * TMA (the data in im2col mode). Data NHWC, weights OHWI, output NHWC. The
 * body is conv_wgmma_nhwc.cuh with the depth axes at 1. Knobs (set by
 * templates/conv_wgmma_nhwc.c as -D macros): block_n, block_k, stages,
 * warpgroups, rows_per_wg, split_k.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_wgmma_nhwc.cuh"
