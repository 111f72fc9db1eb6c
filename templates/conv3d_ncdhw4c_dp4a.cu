/*
 * conv3d_ncdhw4c_dp4a: int8 conv3d on __dp4a. Data NCDHW4c, weights
 * OIDHW4o4i, int32 output NCDHW4c. The body is conv_dp4a.cuh. Knobs: tile_n,
 * tile_f, tile_d, tile_y, tile_x, tile_rc, tile_rd, tile_ry, tile_rx,
 * reorder_inner, fuse_yx, auto_unroll_max_step, unroll_explicit.
 * templates/conv_dp4a.c's knob table describes them and sets each as a -D
 * macro, its name in upper case: the splits one macro a part (TILE_F_B, _V,
 * _T, _I: block, vthread, thread, inner; TILE_RC_O, _I: outer, inner) and
 * reorder_inner as the loop order REORDER_0 to REORDER_3. tile_d splits the
 * output depth 4 ways, tile_rd the kernel depth 2 ways (the published
 * AutoTVM conv3d template splits rd over the kernel height by mistake; this
 * one does not), and reorder_inner orders the four reduction axes (rc, rd,
 * ry, rx).
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_dp4a.cuh"
