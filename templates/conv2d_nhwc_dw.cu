/*
 * conv2d_nhwc_dw: int8 depthwise conv2d (G = C, any channel multiplier),
 * channels-last, the multiply-adds exact on the FP32 pipe or (mac 1) dp4a
 * over a kernel row's taps. Data NHWC, weights OHWI [K][kh][kw][1], output
 * NHWC. The body is conv_dw_nhwc.cuh with the depth axes at 1. Knobs:
 * chans, pix, rows, block_c, block_w, block_h, staging, blocks_per_sm, mac. templates/conv_dw_nhwc.c's knob table
 * describes them and sets each as a -D macro, its name in upper case.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_dw_nhwc.cuh"
