/*
 * conv3d_ndhwc_dw: int8 depthwise conv3d (G = C, any channel multiplier),
 * channels-last, the multiply-adds exact on the FP32 pipe or (mac 1) dp4a
 * over a kernel row's taps. Data NDHWC, weights ODHWI [K][kd][kh][kw][1],
 * output NDHWC; depths output planes a thread and a block (the grid runs
 * over D in steps of depths). The body is conv_dw_nhwc.cuh. Knobs: chans,
 * pix, rows, block_c, block_w, block_h, staging, blocks_per_sm, mac,
 * depths.
 * templates/conv_dw_nhwc.c's knob table describes them and sets each as a
 * -D macro, its name in upper case.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_dw_nhwc.cuh"
