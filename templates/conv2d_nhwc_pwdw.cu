/*
 * conv2d_nhwc_pwdw: a pointwise conv2d fused into the depthwise conv2d it
 * feeds (the workload's pre_c), int8, channels-last. Data NHWC of PRE_C
 * channels, the depthwise weights OHWI [C][KH][KW][1], the pointwise
 * weights and both convs' epilogues in the params block, output NHWC. The
 * body is conv_pwdw.cuh. Knobs: tile_h, tile_w, cb8, warps, pixt,
 * blocks_per_sm. templates/conv_pwdw.c's knob table describes them.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_pwdw.cuh"
