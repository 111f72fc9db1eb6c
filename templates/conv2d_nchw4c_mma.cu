/*
 * conv2d_nchw4c_mma: int8 conv2d as implicit GEMM on the tensor cores
 * (mma.sync.m16n8k32, sm_80 and later). Data NCHW4c, weights OIHW4o4i,
 * output NCHW4c: the layouts of conv2d_nchw4c_dp4a, so both serve one
 * workload. The body is conv_mma.cuh with the depth axes at 1. Knobs (set
 * by templates/conv_mma.c as -D macros): block_m, block_n, block_k, warp_m,
 * warp_n, stages, smem_layout (padded or xor-swizzled), split_k (a cluster
 * of blocks per tile), raster, persistent, epi_smem, a_vec.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_mma.cuh"
