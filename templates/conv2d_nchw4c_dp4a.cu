/*
 * conv2d_nchw4c_dp4a: int8 conv2d on __dp4a. Data NCHW4c, weights OIHW4o4i,
 * int32 output NCHW4c. The body is conv_dp4a.cuh with the depth axes at 1.
 * Knobs (set by templates/conv_dp4a.c as -D macros), after AutoTVM's
 * conv2d_NCHWc_int8: tile_n, tile_f, tile_y, tile_x (block / vthread /
 * thread / inner), tile_rc, tile_ry, tile_rx (outer / inner),
 * reorder_inner (order of the outer and inner reduction loops), fuse_yx
 * (thread layout), auto_unroll_max_step {0, 512, 1500}, unroll_explicit.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_dp4a.cuh"
