/*
 * conv2d_nhwc_grouped: int8 grouped and depthwise conv2d on the CUDA cores
 * (dp4a), and the fallback of channels-last layers that no tensor-core
 * template runs. Data NHWC, weights OHWI [K][kh][kw][C/G], output NHWC.
 * The body is conv_grouped_nhwc.cuh with the depth axes at 1. Knobs:
 * tile_w, tile_h, rows, pix_w, chans, block_k, vec, staging, blocks_per_sm.
 * templates/conv_grouped_nhwc.c's knob table describes them and sets each
 * as a -D macro, its name in upper case.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_grouped_nhwc.cuh"
