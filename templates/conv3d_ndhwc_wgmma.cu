/*
 * conv3d_ndhwc_wgmma: int8 conv3d as implicit GEMM on Hopper's wgmma
 * (sm_90a), both operands from shared memory by descriptor, both loaded by
 * TMA (the data in im2col mode). Data NDHWC, weights ODHWI, output NDHWC.
 * The body is conv_wgmma_nhwc.cuh. Knobs: block_n, block_k, k_slices,
 * stages, warpgroups, rows_per_wg, split_k, blocks_per_sm, persistent,
 * out_stage, tile_requant, w_early. templates/conv_wgmma_nhwc.c's knob table
 * describes them and sets each as a -D macro, its name in upper case.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_wgmma_nhwc.cuh"
