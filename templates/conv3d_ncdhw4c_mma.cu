/*
 * conv3d_ncdhw4c_mma: int8 conv3d as implicit GEMM on the tensor cores
 * (mma.sync.m16n8k32, sm_80 and later). Data NCDHW4c, weights OIDHW4o4i,
 * output NCDHW4c: the layouts of conv3d_ncdhw4c_dp4a. The body is
 * conv_mma.cuh. Knobs: block_m, block_n, block_k, warp_m, warp_n, stages,
 * smem_layout, split_k, raster, persistent, epi_smem, a_vec.
 * templates/conv_mma.c's knob table describes them and sets each as a -D
 * macro, its name in upper case. The GEMM view flattens depth into the
 * positions and the kernel window into the reduction.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_mma.cuh"
