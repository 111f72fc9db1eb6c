/*
 * conv3d_ncdhw4c_dp4a: int8 conv3d on __dp4a. Data NCDHW4c, weights
 * OIDHW4o4i, int32 output NCDHW4c. The body is conv_dp4a.cuh. Knobs: those
 * of conv2d_nchw4c_dp4a plus tile_d (4-way over the output depth) and
 * tile_rd (2-way over the kernel depth: the published AutoTVM conv3d
 * template splits rd over the kernel height by mistake; this one does not),
 * and reorder_inner over the four reduction axes (rc, rd, ry, rx).
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_dp4a.cuh"
