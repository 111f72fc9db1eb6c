/*
 * conv2d_nchw4c_grouped: grouped and depthwise int8 conv2d (groups > 1) on
 * the CUDA cores (dp4a), data NCHW4c, weights pack_oi4o4i(K, C/G), output
 * NCHW4c int32 or 8-bit through the fused epilogue. The body is
 * conv_grouped_packed.cuh with the depth axes at 1. Knobs: tile_h, tile_w,
 * block_f, thread_f, pix, stage, blocks_per_sm. templates/conv_grouped_packed.c's
 * knob table describes them and sets each as a -D macro, its name in upper
 * case.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_grouped_packed.cuh"
