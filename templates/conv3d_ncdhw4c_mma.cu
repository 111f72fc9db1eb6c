/*
 * conv3d_ncdhw4c_mma: int8 conv3d as implicit GEMM on the tensor cores
 * (mma.sync.m16n8k32, sm_80 and later). Data NCDHW4c, weights OIDHW4o4i,
 * output NCDHW4c: the layouts of conv3d_ncdhw4c_dp4a. The body is
 * conv_mma.cuh; the knobs are those of conv2d_nchw4c_mma (the GEMM view
 * flattens depth into the positions and the kernel window into the
 * reduction).
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_mma.cuh"
