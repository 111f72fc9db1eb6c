/*
 * conv2d_nchw4c_mma: int8 conv2d as implicit GEMM on the tensor cores
 * (mma.sync.m16n8k32, sm_80 and later). Data NCHW4c, weights OIHW4o4i,
 * output NCHW4c: the layouts of conv2d_nchw4c_dp4a, so both serve one
 * workload. The body is conv_mma.cuh with the depth axes at 1. Knobs:
 * block_m, block_n, block_k, warp_m, warp_n, stages, smem_layout, split_k,
 * raster, persistent, epi_smem, a_vec. templates/conv_mma.c's knob table
 * describes them and sets each as a -D macro, its name in upper case.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_mma.cuh"
