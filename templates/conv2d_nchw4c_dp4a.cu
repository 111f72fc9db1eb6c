/*
 * conv2d_nchw4c_dp4a: int8 conv2d on __dp4a. Data NCHW4c, weights OIHW4o4i,
 * int32 output NCHW4c. The body is conv_dp4a.cuh with the depth axes at 1.
 * Knobs: tile_n, tile_f, tile_y, tile_x, tile_rc, tile_ry, tile_rx,
 * reorder_inner, fuse_yx, auto_unroll_max_step, unroll_explicit.
 * templates/conv_dp4a.c's knob table describes them and sets each as a -D
 * macro, its name in upper case: the splits one macro a part (TILE_F_B, _V,
 * _T, _I: block, vthread, thread, inner; TILE_RC_O, _I: outer, inner) and
 * reorder_inner as the loop order REORDER_0 to REORDER_3. After AutoTVM's
 * conv2d_NCHWc_int8.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_dp4a.cuh"
