/*
 * conv3d_ncdhw4c_wgmma: int8 conv3d as implicit GEMM on Hopper's wgmma
 * (sm_90a), fed by TMA through an mbarrier pipeline. Data NCDHW4c, weights
 * OIDHW4o4i, output NCDHW4c, as the dp4a and mma templates. The body is
 * conv_wgmma.cuh. Knobs: block_n, block_k, stages, warpgroups, tile_h,
 * tile_d, tma, split_k. templates/conv_wgmma.c's knob table describes them
 * and sets each as a -D macro, its name in upper case.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_wgmma.cuh"
