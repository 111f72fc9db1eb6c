/*
 * conv2d_nhwc_dw_ring: int8 depthwise conv2d (G = C = K), channels-last,
 * dp4a over a kernel row's taps (conv_dw_nhwc.cuh's mac 1), the input
 * streamed through a ring of rows in shared memory by cp.async, steps of
 * rows ahead of the compute. Data NHWC, weights OHWI [K][kh][kw][1],
 * output NHWC. The body is conv_dw_ring.cuh. Knobs: chans, pix, rows,
 * block_c, block_w, steps, ahead, blocks_per_sm. templates/conv_dw_ring.c's
 * knob table describes them and sets each as a -D macro, its name in upper
 * case.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_dw_ring.cuh"
