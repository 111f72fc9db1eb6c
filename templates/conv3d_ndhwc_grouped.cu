/*
 * conv3d_ndhwc_grouped: int8 grouped and depthwise conv3d on the CUDA cores
 * (dp4a), and the fallback of channels-last layers that no tensor-core
 * template runs. Data NDHWC, weights ODHWI [K][kd][kh][kw][C/G], output
 * NDHWC. The body is conv_grouped_nhwc.cuh. Knobs: tile_w, tile_h, tile_d,
 * rows, pix_w, chans, block_k, vec, staging, blocks_per_sm.
 * templates/conv_grouped_nhwc.c's knob table describes them and sets each
 * as a -D macro, its name in upper case.
 */
#define CT_TEMPLATE_CONV3D 1
#include "conv_grouped_nhwc.cuh"
