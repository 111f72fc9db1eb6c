/*
 * conv2d_nchw4c_wgmma: int8 conv2d as implicit GEMM on Hopper's wgmma
 * (sm_90a), fed by TMA through an mbarrier pipeline. Data NCHW4c, weights
 * OIHW4o4i, output NCHW4c: the layouts of the dp4a and mma templates, so all
 * serve one workload. The body is conv_wgmma.cuh with the depth axes at 1.
 * Knobs: block_n, block_k, stages, warpgroups, tile_h, tma, split_k.
 * templates/conv_wgmma.c's knob table describes them and sets each as a -D
 * macro, its name in upper case.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_wgmma.cuh"
