/*
 * test_gpu_templates.c (label gpu): random valid configs of each dp4a,
 * mma and wgmma template (the tensor-core ones also on wider layers; the
 * channels-last wgmma, wgmma stem and mma ones in nhwc / ndhwc), compiled by NVRTC for this
 * GPU, run on random int8 inputs with
 * a poisoned output, and compared element for element with the CPU
 * reference. The workloads cover batch 1 and 3, stride 2, padding (also
 * asymmetric), dilation, odd sizes, 1x1, 3x3, 7x7, 1x7 and 7x1 kernels, and
 * in 3D 3x3x3, 1x1x1, 3x1x1 and the (3,7,7) stem. Without a GPU it exits 77
 * (skipped). The number of configs per workload is the first argument
 * (default 30: at least 200 per template).
 *
 * The channels-last wgmma templates also run with 8-bit output (cases
 * nhwc8 and stem8): requantized in the kernel (bias, per-channel scales and a
 * residual to int8, or bias and a per-tensor scale to uint8, the values
 * from quant_random; and int8 with per-channel scales of which some the
 * fast requantization does not take, a multiplier of 0.75 or 2.5, so that
 * the warps holding them run the general one and the others the fast one),
 * compared byte for byte with reference_qconv.
 *
 * Cases grouped, grouped8 and grouped_onnx: the grouped templates (packed
 * and channels-last) and the channels-last mma ones on grouped and
 * depthwise layers, and the mma ones also on K not a multiple of 8; int32,
 * the four 8-bit kinds, and onnx rounding. Case grouped_zw: the
 * channels-last grouped templates with data and weight zero points (the
 * channels-last fallback's), int32 and 8-bit.
 *
 * Case pointwise: the pointwise mma templates (dense 1x1, no padding) on
 * their own shapes, int32, the four 8-bit kinds and onnx rounding.
 *
 * Case nhwc_zpad: the channels-last wgmma templates with a data zero point
 * (int8 and uint8 data) and padding, which TMA fills with zeros: the
 * params block's border-class corrections, int32 and 8-bit output.
 *
 * Cases onnx and onnx_stem: every template family with ONNX Runtime's rounding
 * (CT_ROUND_ONNX), a fifth of the configs: int8 out per channel with a
 * residual added as Add(t, r), uint8 out per tensor with Add(r, t), int8
 * per channel, uint8 data and out; values from quant_random (half the
 * scales powers of two: exact ties), byte for byte with reference_qconv.
 *
 * Case pwdw: the fused pointwise + depthwise template (pre_c) on depthwise
 * shapes, each with a pointwise conv before it: int8 and uint8, ONNX and
 * gemmlowp rounding, data zero points on either conv, byte for byte with
 * reference_qconv (the two convs chained).
 *
 * For runs under compute-sanitizer (bench/issue33_sanitize.sh), where a
 * kernel runs 10-100 times slower, the environment bounds and varies a run
 * (unset: the behaviour above): CT_GT_SHAPES=R/M runs only the workloads
 * whose index in a template's list is R modulo M; CT_GT_SEED=N seeds the
 * inputs and configs (default 20261122); CT_GT_TRACE=1 prints "launch
 * <template> [<workload>] <config>" before each launch, so that a
 * sanitizer's report can be matched to its config. With one config per
 * workload (argument 1), the configs as on 1 to 3 SMs alternate over the
 * workloads, not within one (where there would be none). CT_GT_TEMPLATE=S
 * keeps the registry cases' templates whose name contains S (S ending in
 * '$': whose name ends in the rest). CT_GT_REF=1 adds
 * case ref: the runner's GPU reference (templates/ref_conv.cu) in this
 * process, which test_runner checks in a forked worker beside planted faults.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quant.h"
#include "core/quant.cuh"
#include "core/reference.h"
#include "core/rng.h"
#include "gpu/device.h"
#include "gpu/kernel.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"
#include "tests/shapes.h"
#include "tests/util.h"

static int per_workload = 30;
/* onnx without a residual: the workloads whose params carry CTQO_SEED, and
 * of them CTQO_HISAT (quant_onnx_block), per run_template */
static int n_seeded, n_hisat;
static device dev;
/* 1: run_shape requantizes to 8 bits (four kinds by turns per workload) */
static int out8;
/* 1: run_shape adds data and weight zero points (uint8 data) and a bias */
static int zw;
/* zpad: a data zero point (int8 and uint8 data by turns) and a bias */
static int zpad;
/* 1 (with out8): ONNX Runtime's rounding (CT_ROUND_ONNX), its own four kinds */
static int onnx;
/* 1: run_shape fuses a pointwise conv before the workload (pre_c, the
 * fused template's case): 8-bit output, four kinds by turns */
static int fused;
/* > 0: run_shape takes only configs with at least this many consumer
 * warpgroups (the channels-last wgmma templates' ping-pong with 3 or 4) */
static int min_warpgroups;
/* CT_GT_SEED, CT_GT_SHAPES (shapes_rem / shapes_mod), CT_GT_TRACE */
static uint64_t seed = 20261122;
static int shapes_rem = 0, shapes_mod = 1;
static int trace;
/* CT_GT_LINEINFO=1: kernels compiled with -lineinfo (a sanitizer's report
 * then names the source line) */
static int lineinfo;

/* clang-format off */
static const shape shapes2d[] = {
    {"3x3 s1 p1", CT_OP_CONV2D, 1, 16, 16, {0, 14, 14}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"3x3 s2 b3 odd", CT_OP_CONV2D, 3, 8, 12, {0, 15, 13}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"7x7 s2 p3 stem", CT_OP_CONV2D, 1, 4, 16, {0, 23, 23}, {0, 7, 7}, {0, 2, 2}, {0, 3, 3}, {0, 3, 3}, {0, 1, 1}, 1},
    {"1x1", CT_OP_CONV2D, 1, 32, 32, {0, 7, 7}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"1x1 s2 b3", CT_OP_CONV2D, 3, 16, 8, {0, 14, 14}, {0, 1, 1}, {0, 2, 2}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"1x7", CT_OP_CONV2D, 1, 8, 16, {0, 9, 11}, {0, 1, 7}, {0, 1, 1}, {0, 0, 3}, {0, 0, 3}, {0, 1, 1}, 1},
    {"7x1 b3", CT_OP_CONV2D, 3, 8, 8, {0, 11, 9}, {0, 7, 1}, {0, 1, 1}, {0, 3, 0}, {0, 3, 0}, {0, 1, 1}, 1},
    {"3x3 dil2 asym pad", CT_OP_CONV2D, 1, 8, 8, {0, 10, 12}, {0, 3, 3}, {0, 1, 2}, {0, 1, 2}, {0, 2, 0}, {0, 2, 2}, 1},
};
/* clang-format on */

/* clang-format off */
static const shape shapes3d[] = {
    {"3x3x3 s1 p1", CT_OP_CONV3D, 1, 8, 8, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"3x3x3 s2 b3 odd", CT_OP_CONV3D, 3, 4, 8, {5, 7, 6}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"1x1x1", CT_OP_CONV3D, 1, 16, 16, {3, 6, 6}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
    {"1x1x1 s2 b2", CT_OP_CONV3D, 2, 8, 8, {4, 6, 6}, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
    {"3x1x1", CT_OP_CONV3D, 1, 8, 12, {6, 5, 5}, {3, 1, 1}, {1, 1, 1}, {1, 0, 0}, {1, 0, 0}, {1, 1, 1}, 1},
    {"(3,7,7) stem", CT_OP_CONV3D, 1, 4, 8, {4, 10, 10}, {3, 7, 7}, {1, 2, 2}, {1, 3, 3}, {1, 3, 3}, {1, 1, 1}, 1},
    {"3x3x3 dil2 asym", CT_OP_CONV3D, 1, 4, 4, {5, 6, 7}, {3, 3, 3}, {1, 2, 1}, {2, 1, 0}, {0, 1, 2}, {2, 1, 2}, 1},
};
/* clang-format on */

/* Wider layers for the tensor-core templates: C/4 a multiple of 8 or 16
 * (the tap-major reduction), K not a multiple of the block tile, positions
 * not a multiple of it, 16-byte data loads (1x1, stride 1), batch 3. */
/* clang-format off */
static const shape wide2d[] = {
    {"3x3 c64 k96 b2", CT_OP_CONV2D, 2, 64, 96, {0, 14, 14}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"3x3 s2 c64 k40 b3 odd", CT_OP_CONV2D, 3, 64, 40, {0, 15, 13}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"1x1 c128 k72 b3", CT_OP_CONV2D, 3, 128, 72, {0, 12, 12}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"1x1 s2 c256 k64", CT_OP_CONV2D, 1, 256, 64, {0, 14, 14}, {0, 1, 1}, {0, 2, 2}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"1x7 c32 k36", CT_OP_CONV2D, 1, 32, 36, {0, 9, 11}, {0, 1, 7}, {0, 1, 1}, {0, 0, 3}, {0, 0, 3}, {0, 1, 1}, 1},
    {"7x7 s2 c4 k64 stem b3", CT_OP_CONV2D, 3, 4, 64, {0, 29, 27}, {0, 7, 7}, {0, 2, 2}, {0, 3, 3}, {0, 3, 3}, {0, 1, 1}, 1},
    {"3x3 c512 k512 7x7", CT_OP_CONV2D, 1, 512, 512, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
};
/* clang-format on */
/* clang-format off */
static const shape wide3d[] = {
    {"3x3x3 c64 k64 b2", CT_OP_CONV3D, 2, 64, 64, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"3x3x3 s2 c32 k72 odd", CT_OP_CONV3D, 1, 32, 72, {5, 9, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"1x1x1 c128 k32 b3", CT_OP_CONV3D, 3, 128, 32, {2, 6, 6}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
    {"(3,7,7) s(1,2,2) c4 k64 stem", CT_OP_CONV3D, 1, 4, 64, {4, 18, 18}, {3, 7, 7}, {1, 2, 2}, {1, 3, 3}, {1, 3, 3}, {1, 1, 1}, 1},
};
/* clang-format on */

/* Layers for the wgmma templates (C % 32 == 0): the data loaded by TMA
 * (W % 4 == 0 and unit stride along W: stride 2 along H and D, padding on
 * one axis, asymmetric padding and dilation, several images per tile, a
 * partial last tile along W) and by cp.async (odd sizes, 7x7 and 14x14
 * maps, stride 2 along W). */
/* clang-format off */
static const shape wg2d[] = {
    {"3x3 c64 k96 b2 14x14", CT_OP_CONV2D, 2, 64, 96, {0, 14, 14}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"3x3 s2 c64 k40 b3 odd", CT_OP_CONV2D, 3, 64, 40, {0, 15, 13}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"1x1 c128 k72 b3 12x12", CT_OP_CONV2D, 3, 128, 72, {0, 12, 12}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"3x3 c32 k48 b3 16x20", CT_OP_CONV2D, 3, 32, 48, {0, 16, 20}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"3x3 s2 c64 k64 b2 17x24", CT_OP_CONV2D, 2, 64, 64, {0, 17, 24}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"1x7 c32 k36 9x12", CT_OP_CONV2D, 1, 32, 36, {0, 9, 12}, {0, 1, 7}, {0, 1, 1}, {0, 0, 3}, {0, 0, 3}, {0, 1, 1}, 1},
    {"7x1 c32 k40 b3 12x8", CT_OP_CONV2D, 3, 32, 40, {0, 12, 8}, {0, 7, 1}, {0, 1, 1}, {0, 3, 0}, {0, 3, 0}, {0, 1, 1}, 1},
    {"3x3 dil2 asym c32 k32 10x12", CT_OP_CONV2D, 1, 32, 32, {0, 10, 12}, {0, 3, 3}, {0, 2, 1}, {0, 1, 2}, {0, 2, 0}, {0, 2, 2}, 1},
    {"3x3 s(2,1) c32 k32 b2 10x16", CT_OP_CONV2D, 2, 32, 32, {0, 10, 16}, {0, 3, 3}, {0, 2, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"1x1 c64 k256 b5 8x8", CT_OP_CONV2D, 5, 64, 256, {0, 8, 8}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"3x3 c512 k512 7x7", CT_OP_CONV2D, 1, 512, 512, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
};
/* clang-format on */
/* clang-format off */
static const shape wg3d[] = {
    {"3x3x3 c64 k64 b2", CT_OP_CONV3D, 2, 64, 64, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"3x3x3 s2 c32 k72 odd", CT_OP_CONV3D, 1, 32, 72, {5, 9, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"1x1x1 c128 k32 b3", CT_OP_CONV3D, 3, 128, 32, {2, 6, 6}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
    {"3x3x3 c32 k40 b3 5x6x8", CT_OP_CONV3D, 3, 32, 40, {5, 6, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"3x3x3 s(2,2,1) c64 k64 b2 6x10x12", CT_OP_CONV3D, 2, 64, 64, {6, 10, 12}, {3, 3, 3}, {2, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"3x1x1 c32 k32 6x5x8", CT_OP_CONV3D, 1, 32, 32, {6, 5, 8}, {3, 1, 1}, {1, 1, 1}, {1, 0, 0}, {1, 0, 0}, {1, 1, 1}, 1},
};
/* clang-format on */

/* The channels-last wgmma templates (C % 16, K % 8): im2col copies across
 * rows and images (batch 3, odd sizes, 7x7 maps), stride 2 (also 1x1),
 * asymmetric padding, dilation, 1x7 and 7x1, C not a multiple of block_k
 * (48, and 16 under a 32-byte block_k: slices past C read zeros), K not a
 * multiple of block_n, a K of 8; 1x1 at stride 1, whose data is read as a
 * (C, pixels) matrix by tiled copies (the last tile past the pixels). */
/* clang-format off */
static const shape nh2d[] = {
    {"3x3 c64 k96 b2 14x14", CT_OP_CONV2D, 2, 64, 96, {0, 14, 14}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"3x3 s2 c64 k40 b3 odd", CT_OP_CONV2D, 3, 64, 40, {0, 15, 13}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"1x1 s2 c128 k72 b3 13x12", CT_OP_CONV2D, 3, 128, 72, {0, 13, 12}, {0, 1, 1}, {0, 2, 2}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"3x3 c48 k48 b3 9x11", CT_OP_CONV2D, 3, 48, 48, {0, 9, 11}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"3x3 c16 k8 b2 10x10", CT_OP_CONV2D, 2, 16, 8, {0, 10, 10}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"1x7 c32 k40 9x12", CT_OP_CONV2D, 1, 32, 40, {0, 9, 12}, {0, 1, 7}, {0, 1, 1}, {0, 0, 3}, {0, 0, 3}, {0, 1, 1}, 1},
    {"7x1 c32 k40 b3 12x8", CT_OP_CONV2D, 3, 32, 40, {0, 12, 8}, {0, 7, 1}, {0, 1, 1}, {0, 3, 0}, {0, 3, 0}, {0, 1, 1}, 1},
    {"3x3 dil2 asym c32 k32 10x12", CT_OP_CONV2D, 1, 32, 32, {0, 10, 12}, {0, 3, 3}, {0, 2, 1}, {0, 1, 2}, {0, 2, 0}, {0, 2, 2}, 1},
    {"7x7 s2 c16 k64 b2 23x21", CT_OP_CONV2D, 2, 16, 64, {0, 23, 21}, {0, 7, 7}, {0, 2, 2}, {0, 3, 3}, {0, 3, 3}, {0, 1, 1}, 1},
    {"1x1 c64 k256 b5 8x8", CT_OP_CONV2D, 5, 64, 256, {0, 8, 8}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"3x3 c512 k512 7x7", CT_OP_CONV2D, 1, 512, 512, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
};
/* clang-format on */
/* clang-format off */
static const shape nh3d[] = {
    {"3x3x3 c64 k64 b2", CT_OP_CONV3D, 2, 64, 64, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"3x3x3 s2 c32 k72 odd", CT_OP_CONV3D, 1, 32, 72, {5, 9, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"1x1x1 s2 c128 k32 b3", CT_OP_CONV3D, 3, 128, 32, {3, 7, 6}, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
    {"3x3x3 c48 k40 b3 5x6x8", CT_OP_CONV3D, 3, 48, 40, {5, 6, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"3x1x1 c32 k32 6x5x8", CT_OP_CONV3D, 1, 32, 32, {6, 5, 8}, {3, 1, 1}, {1, 1, 1}, {1, 0, 0}, {1, 0, 0}, {1, 1, 1}, 1},
    /* 1x1x1 at stride 1: the data read as a (C, pixels) matrix, 315 pixels */
    {"1x1x1 c64 k40 b3 3x5x7", CT_OP_CONV3D, 3, 64, 40, {3, 5, 7}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
};
/* clang-format on */

/* The channels-last mma templates (C not a multiple of 16, K % 8): the
 * stems (7x7 stride 2, (3,7,7) stride (1,2,2)) at batch 2 and 3 on odd
 * maps, window rows of 1 to 4 k32 steps (C 3 to 40), the 4 byte
 * alignments of the staged copies (C 3 and 5 at stride 1, C 3 at stride
 * 2, C 6 at stride 3), dilation along H and D, asymmetric padding, 1x1,
 * 1x7 and 7x1, K not a multiple of block_n, stride 2 at 1, 2 and 4 channels (an
 * even kernel, odd and asymmetric padding; in 3D along D too). */
/* clang-format off */
static const shape nm2d[] = {
    {"7x7 s2 c3 k64 b3 29x27 stem", CT_OP_CONV2D, 3, 3, 64, {0, 29, 27}, {0, 7, 7}, {0, 2, 2}, {0, 3, 3}, {0, 3, 3}, {0, 1, 1}, 1},
    {"3x3 c3 k8 b2 9x10", CT_OP_CONV2D, 2, 3, 8, {0, 9, 10}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"1x1 c5 k24 b3 7x9", CT_OP_CONV2D, 3, 5, 24, {0, 7, 9}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"3x3 s(1,3) c6 k32 asym 11x40", CT_OP_CONV2D, 1, 6, 32, {0, 11, 40}, {0, 3, 3}, {0, 1, 3}, {0, 2, 0}, {0, 0, 2}, {0, 1, 1}, 1},
    {"1x7 c7 k40 b2 6x33", CT_OP_CONV2D, 2, 7, 40, {0, 6, 33}, {0, 1, 7}, {0, 1, 1}, {0, 0, 3}, {0, 0, 3}, {0, 1, 1}, 1},
    {"7x1 dil(2,1) c3 k16 b3 20x17", CT_OP_CONV2D, 3, 3, 16, {0, 20, 17}, {0, 7, 1}, {0, 1, 1}, {0, 3, 0}, {0, 3, 0}, {0, 2, 1}, 1},
    {"3x3 c40 k136 b2 12x13", CT_OP_CONV2D, 2, 40, 136, {0, 12, 13}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"5x5 s2 c3 k128 70x66", CT_OP_CONV2D, 1, 3, 128, {0, 70, 66}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 1},
    /* input rows of whole words (W x C % 4 == 0: the stems' word loads)
     * on stem-like layers: a 96-byte row, and a 60-byte one on a map so
     * narrow that a 128-pixel tile spans 14 output rows and images */
    {"7x7 s2 c3 k64 b3 29x32 stem", CT_OP_CONV2D, 3, 3, 64, {0, 29, 32}, {0, 7, 7}, {0, 2, 2}, {0, 3, 3}, {0, 3, 3}, {0, 1, 1}, 1},
    {"7x7 s2 c3 k24 b3 15x20", CT_OP_CONV2D, 3, 3, 24, {0, 15, 20}, {0, 7, 7}, {0, 2, 2}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, 1},
    /* stride 2 at 1, 2 and 4 channels, even and odd padding and kernels */
    {"3x3 s2 c1 k16 b2 17x19", CT_OP_CONV2D, 2, 1, 16, {0, 17, 19}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"4x4 s2 c2 k32 asym 12x24", CT_OP_CONV2D, 1, 2, 32, {0, 12, 24}, {0, 4, 4}, {0, 2, 2}, {0, 1, 2}, {0, 2, 1}, {0, 1, 1}, 1},
    {"3x3 s2 c4 k24 b3 9x8", CT_OP_CONV2D, 3, 4, 24, {0, 9, 8}, {0, 3, 3}, {0, 2, 2}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
};
/* clang-format on */
/* clang-format off */
static const shape nm3d[] = {
    {"(3,7,7) s(1,2,2) c3 k64 b2 stem 4x18x19", CT_OP_CONV3D, 2, 3, 64, {4, 18, 19}, {3, 7, 7}, {1, 2, 2}, {1, 3, 3}, {1, 3, 3}, {1, 1, 1}, 1},
    {"3x3x3 c5 k16 b3 odd 5x7x9", CT_OP_CONV3D, 3, 5, 16, {5, 7, 9}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"1x1x1 s2 c3 k24 5x6x7", CT_OP_CONV3D, 1, 3, 24, {5, 6, 7}, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
    {"3x3x3 dil(2,2,1) s(2,1,2) c3 k8 7x9x10", CT_OP_CONV3D, 1, 3, 8, {7, 9, 10}, {3, 3, 3}, {2, 1, 2}, {2, 2, 1}, {2, 2, 1}, {2, 2, 1}, 1},
    /* input rows of whole words (W x C % 4 == 0), the second with
     * dilation along D and H */
    {"(3,7,7) s(1,2,2) c3 k64 b2 stem 5x16x32", CT_OP_CONV3D, 2, 3, 64, {5, 16, 32}, {3, 7, 7}, {1, 2, 2}, {1, 3, 3}, {1, 3, 3}, {1, 1, 1}, 1},
    {"3x3x3 dil(2,2,1) c4 k16 b2 6x9x7", CT_OP_CONV3D, 2, 4, 16, {6, 9, 7}, {3, 3, 3}, {1, 1, 1}, {2, 2, 1}, {2, 2, 1}, {2, 2, 1}, 1},
    {"(2,5,5) s2 c2 k16 asym 6x11x14", CT_OP_CONV3D, 1, 2, 16, {6, 11, 14}, {2, 5, 5}, {2, 2, 2}, {0, 2, 2}, {1, 2, 2}, {1, 1, 1}, 1},
};
/* clang-format on */

/* Grouped and depthwise (issue 35), run by the grouped templates and the
 * channels-last mma ones: depthwise 3x3 and 5x5 at stride 1 and 2 with
 * channel multipliers 1 and 2, MobileNet-like channel counts that are not
 * multiples of 16 (24, 40), ResNeXt's 4, 8 and 16 channels per group, few
 * groups of many channels, dilation with asymmetric padding; C and K
 * multiples of 4 so that the packed templates run them too. */
/* clang-format off */
static const shape gr2d[] = {
    {"dw 3x3 c32 b2 14x13", CT_OP_CONV2D, 2, 32, 32, {0, 14, 13}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 32},
    {"dw 3x3 s2 c24 b3 15x17", CT_OP_CONV2D, 3, 24, 24, {0, 15, 17}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 24},
    {"dw x2 5x5 s2 c16 k32 13x12", CT_OP_CONV2D, 1, 16, 32, {0, 13, 12}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 16},
    {"dw 5x5 c40 b2 9x9", CT_OP_CONV2D, 2, 40, 40, {0, 9, 9}, {0, 5, 5}, {0, 1, 1}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 40},
    {"g32 cpg4 3x3 c128 b2 8x8", CT_OP_CONV2D, 2, 128, 128, {0, 8, 8}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 32},
    {"g32 cpg8 3x3 s2 c256 9x9", CT_OP_CONV2D, 1, 256, 256, {0, 9, 9}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 32},
    {"g32 cpg16 3x3 c512 b2 7x7", CT_OP_CONV2D, 2, 512, 512, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 32},
    {"g4 cpg32 3x3 c128 k64 6x6", CT_OP_CONV2D, 1, 128, 64, {0, 6, 6}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 4},
    {"g2 3x3 dil(2,1) asym c8 k12 10x12", CT_OP_CONV2D, 1, 8, 12, {0, 10, 12}, {0, 3, 3}, {0, 1, 2}, {0, 2, 1}, {0, 2, 0}, {0, 2, 1}, 2},
};
static const shape gr3d[] = {
    {"dw 3x3x3 c32 b2 4x8x8", CT_OP_CONV3D, 2, 32, 32, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 32},
    {"dw 3x3x3 s2 c24 5x9x7", CT_OP_CONV3D, 1, 24, 24, {5, 9, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 24},
    {"g8 cpg8 3x3x3 c64 b2 4x6x6", CT_OP_CONV3D, 2, 64, 64, {4, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 8},
    {"dw x2 3x3x3 s(1,2,2) c16 k32 3x7x9", CT_OP_CONV3D, 1, 16, 32, {3, 7, 9}, {3, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 16},
};
/* the depthwise-only templates: the depthwise shapes above and more:
 * multipliers 1 and 2, 3x3, 5x5 and 7x7, stride 1 and 2, dilation, odd
 * maps, C 8 to 96, uint8 data by turns (run_shape) */
static const shape dw2d[] = {
    {"dw 3x3 c32 b2 14x13", CT_OP_CONV2D, 2, 32, 32, {0, 14, 13}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 32},
    {"dw 3x3 s2 c24 b3 15x17", CT_OP_CONV2D, 3, 24, 24, {0, 15, 17}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 24},
    {"dw x2 5x5 s2 c16 k32 13x12", CT_OP_CONV2D, 1, 16, 32, {0, 13, 12}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 16},
    {"dw 5x5 c40 b2 9x9", CT_OP_CONV2D, 2, 40, 40, {0, 9, 9}, {0, 5, 5}, {0, 1, 1}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 40},
    {"dw 3x3 dil2 c96 b2 11x10", CT_OP_CONV2D, 2, 96, 96, {0, 11, 10}, {0, 3, 3}, {0, 1, 1}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, 96},
    {"dw 7x7 c8 asym 12x19", CT_OP_CONV2D, 1, 8, 8, {0, 12, 19}, {0, 7, 7}, {0, 1, 1}, {0, 3, 2}, {0, 2, 3}, {0, 1, 1}, 8},
    {"dw 3x3 c64 b2 7x7", CT_OP_CONV2D, 2, 64, 64, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 64},
    {"dw x2 3x3 c12 k24 b2 9x9", CT_OP_CONV2D, 2, 12, 24, {0, 9, 9}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 12},
};
static const shape dw3d[] = {
    {"dw 3x3x3 c32 b2 4x8x8", CT_OP_CONV3D, 2, 32, 32, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 32},
    {"dw 3x3x3 s2 c24 5x9x7", CT_OP_CONV3D, 1, 24, 24, {5, 9, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 24},
    {"dw x2 3x3x3 s(1,2,2) c16 k32 3x7x9", CT_OP_CONV3D, 1, 16, 32, {3, 7, 9}, {3, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 16},
    {"dw 3x3x3 c64 b3 3x5x6", CT_OP_CONV3D, 3, 64, 64, {3, 5, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 64},
};

/* the depthwise mma templates (K == C, C a multiple of 8): those of the
 * lists above, a C that leaves a block's last n-tiles empty (144 and 40
 * in blocks of 32), a narrow map and a 5x5 stride 2 */
static const shape dwm2d[] = {
    {"dw 3x3 c32 b2 14x13", CT_OP_CONV2D, 2, 32, 32, {0, 14, 13}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 32},
    {"dw 3x3 s2 c24 b3 15x17", CT_OP_CONV2D, 3, 24, 24, {0, 15, 17}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 24},
    {"dw 5x5 c40 b2 9x9", CT_OP_CONV2D, 2, 40, 40, {0, 9, 9}, {0, 5, 5}, {0, 1, 1}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 40},
    {"dw 3x3 dil2 c96 b2 11x10", CT_OP_CONV2D, 2, 96, 96, {0, 11, 10}, {0, 3, 3}, {0, 1, 1}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, 96},
    {"dw 7x7 c8 asym 12x19", CT_OP_CONV2D, 1, 8, 8, {0, 12, 19}, {0, 7, 7}, {0, 1, 1}, {0, 3, 2}, {0, 2, 3}, {0, 1, 1}, 8},
    {"dw 3x3 c64 b2 7x7", CT_OP_CONV2D, 2, 64, 64, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 64},
    {"dw 5x5 s2 c144 b2 13x12", CT_OP_CONV2D, 2, 144, 144, {0, 13, 12}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 144},
    {"dw 3x3 c16 33x5", CT_OP_CONV2D, 1, 16, 16, {0, 33, 5}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 16},
};
static const shape dwm3d[] = {
    {"dw 3x3x3 c32 b2 4x8x8", CT_OP_CONV3D, 2, 32, 32, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 32},
    {"dw 3x3x3 s2 c24 5x9x7", CT_OP_CONV3D, 1, 24, 24, {5, 9, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 24},
    {"dw 3x3x3 c64 b3 3x5x6", CT_OP_CONV3D, 3, 64, 64, {3, 5, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 64},
    {"dw 3x3x3 s(1,2,2) c40 3x7x9", CT_OP_CONV3D, 1, 40, 40, {3, 7, 9}, {3, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 40},
};

/* the grouped mma templates (at most 32 input channels a group, C and K
 * multiples of 8): ResNeXt's groups of 4 to 32 channels, 2 a group with
 * dilation, a channel multiplier, K/G != C/G, a 5x5 stride 2, a block's
 * last super-groups past K (K 40 in blocks of 32), dense layers of 16, 32
 * and 8 channels (1x1 and 3x3), 3D ResNeXt's 1 x 4 x 4 input and a stride
 * along depth */
static const shape gm2d[] = {
    {"g32 cpg4 3x3 c128 b2 8x8", CT_OP_CONV2D, 2, 128, 128, {0, 8, 8}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 32},
    {"g32 cpg8 3x3 s2 c256 9x9", CT_OP_CONV2D, 1, 256, 256, {0, 9, 9}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 32},
    {"g32 cpg16 3x3 c512 b2 7x7", CT_OP_CONV2D, 2, 512, 512, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 32},
    {"g4 cpg32 3x3 c128 k64 6x6", CT_OP_CONV2D, 1, 128, 64, {0, 6, 6}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 4},
    {"dw x2 5x5 s2 c16 k32 13x12", CT_OP_CONV2D, 1, 16, 32, {0, 13, 12}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 16},
    {"g8 cpg2 3x3 dil2 c16 b2 11x10", CT_OP_CONV2D, 2, 16, 16, {0, 11, 10}, {0, 3, 3}, {0, 1, 1}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, 8},
    {"g16 cpg4 kpg8 5x5 s2 c64 k128 9x9", CT_OP_CONV2D, 1, 64, 128, {0, 9, 9}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 16},
    {"g5 cpg16 kpg8 3x3 c80 k40 b3 5x7", CT_OP_CONV2D, 3, 80, 40, {0, 5, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 5},
    {"g1 1x1 c16 k96 b2 10x9", CT_OP_CONV2D, 2, 16, 96, {0, 10, 9}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"g1 1x1 c32 k16 b3 7x12", CT_OP_CONV2D, 3, 32, 16, {0, 7, 12}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"g1 3x3 s2 c8 k24 11x11", CT_OP_CONV2D, 1, 8, 24, {0, 11, 11}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
};
static const shape gm3d[] = {
    {"g8 cpg8 3x3x3 c64 b2 4x6x6", CT_OP_CONV3D, 2, 64, 64, {4, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 8},
    {"dw x2 3x3x3 s(1,2,2) c16 k32 3x7x9", CT_OP_CONV3D, 1, 16, 32, {3, 7, 9}, {3, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 16},
    {"g32 cpg32 3x3x3 c1024 b2 1x4x4", CT_OP_CONV3D, 2, 1024, 1024, {1, 4, 4}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 32},
    {"g2 cpg16 3x3x3 s2 c32 5x8x8", CT_OP_CONV3D, 1, 32, 32, {5, 8, 8}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 2},
};

/* the pointwise mma templates (dense 1x1, no padding, C and K multiples of
 * 8): MobileNetV2's expand (C 24, rows of 32 bytes) and project (K 24)
 * layers, a partial last tile and K past a block's channels (40, 72),
 * stride 2, 8-byte pieces (C 40), 8 k-steps (the weights from shared
 * memory), 3D */
/* clang-format off */
static const shape pw2d[] = {
    {"pw c24 k144 b2 9x9", CT_OP_CONV2D, 2, 24, 144, {0, 9, 9}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"pw c16 k96 b3 5x5", CT_OP_CONV2D, 3, 16, 96, {0, 5, 5}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"pw c144 k24 14x13", CT_OP_CONV2D, 1, 144, 24, {0, 14, 13}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"pw s2 c96 k40 b2 11x11", CT_OP_CONV2D, 2, 96, 40, {0, 11, 11}, {0, 1, 1}, {0, 2, 2}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"pw c256 k72 6x7", CT_OP_CONV2D, 1, 256, 72, {0, 6, 7}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"pw c40 k8 b3 3x3", CT_OP_CONV2D, 3, 40, 8, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
};
static const shape pw3d[] = {
    {"pw c32 k64 b2 3x5x6", CT_OP_CONV3D, 2, 32, 64, {3, 5, 6}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
    {"pw s2 c40 k16 5x7x7", CT_OP_CONV3D, 1, 40, 16, {5, 7, 7}, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
    {"pw c64 k24 b2 2x4x4", CT_OP_CONV3D, 2, 64, 24, {2, 4, 4}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
    {"pw s(1,2,2) c24 k48 4x9x8", CT_OP_CONV3D, 1, 24, 48, {4, 9, 8}, {1, 1, 1}, {1, 2, 2}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 1},
};
/* clang-format on */

/* the fused pointwise + depthwise template (depthwise of multiplier 1, C a
 * multiple of 8; the pointwise conv before it in run_shape): MobileNetV2's
 * 3x3 at stride 1 and 2, a 5x5 stride 2 (EfficientNet's), partial tiles
 * (odd maps), a 7x7 map, C 144 in blocks that are not a power of two, a
 * 7x7 kernel with asymmetric padding, no padding */
/* clang-format off */
static const shape pwdw2d[] = {
    {"dw 3x3 c48 b2 14x13", CT_OP_CONV2D, 2, 48, 48, {0, 14, 13}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 48},
    {"dw 3x3 s2 c24 b3 15x17", CT_OP_CONV2D, 3, 24, 24, {0, 15, 17}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 24},
    {"dw 5x5 s2 c40 b2 13x12", CT_OP_CONV2D, 2, 40, 40, {0, 13, 12}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 40},
    {"dw 3x3 c144 b2 7x7", CT_OP_CONV2D, 2, 144, 144, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 144},
    {"dw 3x3 c96 b3 9x11", CT_OP_CONV2D, 3, 96, 96, {0, 9, 11}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 96},
    {"dw 7x7 c16 asym 12x19", CT_OP_CONV2D, 1, 16, 16, {0, 12, 19}, {0, 7, 7}, {0, 1, 1}, {0, 3, 2}, {0, 2, 3}, {0, 1, 1}, 16},
    {"dw 3x3 nopad c32 b2 10x10", CT_OP_CONV2D, 2, 32, 32, {0, 10, 10}, {0, 3, 3}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 32},
    {"dw 3x3 s2 c64 33x6", CT_OP_CONV2D, 1, 64, 64, {0, 33, 6}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 64},
};
/* clang-format on */

/* weight zero points on the channels-last fallback (the grouped
 * templates): G 1 layers no tensor-core template runs with them, grouped
 * and depthwise ones, 2D and 3D, all padded */
static const shape zw2d[] = {
    {"g1 c32 k32 b2 9x9", CT_OP_CONV2D, 2, 32, 32, {0, 9, 9}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"dw 5x5 s2 c24 11x11", CT_OP_CONV2D, 1, 24, 24, {0, 11, 11}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 24},
    {"dw x2 c20 k40 b2 7x7", CT_OP_CONV2D, 2, 20, 40, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 20},
    {"g4 cpg3 c12 b2 7x7", CT_OP_CONV2D, 2, 12, 12, {0, 7, 7}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 4},
    {"g2 cpg40 c80 k16 6x6", CT_OP_CONV2D, 1, 80, 16, {0, 6, 6}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 2},
    {"g1 dil2 c72 k20 9x9", CT_OP_CONV2D, 1, 72, 20, {0, 9, 9}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 2, 2}, 1},
    {"g1 c6 k10 b2 8x8", CT_OP_CONV2D, 2, 6, 10, {0, 8, 8}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
};
static const shape zw3d[] = {
    {"g1 c12 k20 s2 7x7x7", CT_OP_CONV3D, 1, 12, 20, {7, 7, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"dw c16 6x6x6", CT_OP_CONV3D, 1, 16, 16, {6, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 16},
    {"g4 c24 k12 5x5x5", CT_OP_CONV3D, 1, 24, 12, {5, 5, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 4},
};

/* channels-last only (C or K not a multiple of 4), and the layers whose K
 * is not a multiple of 8 (issue 35's odd 5x5 stride-2 layer, C 12, K 20,
 * and its 3D counterpart) */
static const shape grn2d[] = {
    {"g3 cpg2 c6 k9 b2 9x10", CT_OP_CONV2D, 2, 6, 9, {0, 9, 10}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 3},
    {"dw x3 3x3 s2 c5 k15 7x7", CT_OP_CONV2D, 1, 5, 15, {0, 7, 7}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 5},
};
static const shape oddk2d[] = {
    {"5x5 s2 c12 k20 b3 17x17", CT_OP_CONV2D, 3, 12, 20, {0, 17, 17}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 1},
    {"3x3 c16 k20 b2 9x9", CT_OP_CONV2D, 2, 16, 20, {0, 9, 9}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"1x1 c24 k12 b3 8x7", CT_OP_CONV2D, 3, 24, 12, {0, 8, 7}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"3x3 c5 k7 b2 9x9", CT_OP_CONV2D, 2, 5, 7, {0, 9, 9}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
};
static const shape oddk3d[] = {
    {"(3,5,5) s2 c12 k20 b3 5x17x17", CT_OP_CONV3D, 3, 12, 20, {5, 17, 17}, {3, 5, 5}, {2, 2, 2}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, 1},
    {"3x3x3 c16 k12 4x6x6", CT_OP_CONV3D, 1, 16, 12, {4, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
};
/* clang-format on */

/* Run per_workload random valid configs of tpl on sh; returns the number
 * that were exact, and counts the configs tried in *tried. */
static int run_shape(const template_desc *tpl, const shape *sh, rng *r, int *tried) {
  ct_workload w;
  shape_workload(sh, &w);
  w.layout = tpl->layout; /* nchw4c, or nhwc for the channels-last templates */
  /* 8-bit output, by turns per workload: int8 with per-channel scales and
   * a residual; uint8 with a per-tensor scale; int8 with per-channel
   * scales and no residual (these two take the saturating pack where the
   * clamp's upper end is the type's, RQ_SAT); the same with some scales
   * outside the fast form's range (slow). Every other uint8 turn takes a
   * ReLU clamp, [zy, 255], whatever quant_random drew: the depthwise
   * family's borrow-free form then runs on every such workload. */
  const int kind = out8 ? *tried / per_workload % 4 : 0, u8 = kind == 1, slow = kind == 3 && !onnx;
  const int relu = u8 && !onnx && *tried / per_workload / 4 % 2;
  if (out8) {
    w.out_type = u8 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
    w.epi.bias = 1;
    w.epi.scale = u8 ? CT_SCALE_TENSOR : CT_SCALE_CHANNEL;
    w.epi.residual = kind == 0;
    /* the depthwise CUDA-core templates: a data zero point on the uint8
     * turns, which their padding reads (direct or staged) */
    if (u8 && !onnx && strstr(tpl->name, "_dw") && !strstr(tpl->name, "mma"))
      w.epi.data_zero_point = 1;
  }
  /* onnx, by turns: int8 per channel with a residual, Add(t, r); uint8 per
   * tensor with a residual, Add(r, t); int8 per channel; uint8 data and
   * output per channel */
  if (out8 && onnx) {
    w.epi.rounding = CT_ROUND_ONNX;
    w.epi.residual = kind <= 1;
    if (kind == 3) w.data_type = w.out_type = CT_DTYPE_UINT8;
  }
  /* zw: uint8 data with data and weight zero points and a bias, whatever
   * the output */
  if (zw) {
    w.data_type = CT_DTYPE_UINT8;
    w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = 1;
  }
  if (zpad) {
    w.data_type = *tried / per_workload % 2 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
    w.epi.data_zero_point = w.epi.bias = 1;
  }
  /* fused, by turns: int8 with per-channel scales and onnx rounding (the
   * pointwise conv's data int8); uint8 data and output with a data zero
   * point and a per-tensor scale (its data uint8 with one); int8 gemmlowp
   * per channel (its data uint8); uint8 gemmlowp per tensor; the pointwise
   * conv about C / 3 channels (a multiple of 8, 8 to 40), a bias on both */
  const int fkind = fused ? *tried / per_workload % 4 : 0;
  if (fused) {
    w.data_type = w.out_type = fkind % 2 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
    w.epi.bias = 1;
    w.epi.data_zero_point = fkind % 2;
    w.epi.scale = fkind % 2 ? CT_SCALE_TENSOR : CT_SCALE_CHANNEL;
    w.epi.rounding = fkind < 2 ? CT_ROUND_ONNX : CT_ROUND_GEMMLOWP;
    w.pre_c = (w.c / 3 + 7) / 8 * 8 > 40 ? 40 : (w.c / 3 + 7) / 8 * 8;
    w.pre_data_type = fkind == 0 ? CT_DTYPE_INT8 : CT_DTYPE_UINT8;
    w.pre_epi.bias = 1;
    w.pre_epi.data_zero_point = fkind != 0;
    w.pre_epi.scale = w.epi.scale;
    w.pre_epi.rounding = w.epi.rounding;
  }
  const int qp = out8 || zw || zpad || fused; /* a params block */
  ct_err err = {0};
  ck_assert_msg(workload_validate(&w, &err) == CT_OK, "%s: %s", sh->name, err.msg);
  size_t nd = workload_data_elems(&w), nw = workload_weight_elems(&w), no = workload_out_elems(&w);
  const int ob8 = out8 || fused;       /* 8-bit output */
  const size_t ob = ob8 ? no : no * 4; /* output bytes */
  int8_t *data = malloc(nd), *weights = malloc(nw);
  uint8_t *res = malloc(no);
  int32_t *want = malloc(no * 4), *got = malloc(no * 4);
  ck_assert(data && weights && res && want && got);
  for (size_t i = 0; i < nd; i++) data[i] = (int8_t)rng_next(r);
  for (size_t i = 0; i < nw; i++) weights[i] = (int8_t)rng_next(r);
  for (size_t i = 0; i < no; i++) res[i] = (uint8_t)rng_next(r);
  int32_t *params = NULL;
  quant_store qs = {0};
  if (qp) {
    int32_t *sums = malloc(sizeof(int32_t) * (size_t)w.k);
    params = malloc(quant_params_words(&w) * 4);
    ck_assert(sums && params);
    ck_assert_msg(quant_random(&w, rng_next(r), &qs, &err) == CT_OK, "%s", err.msg);
    /* slow: every 11th channel at a multiplier in [0.5, 1) (no right
     * shift) and every 13th above 1 (a left shift): ctq_fast_make refuses
     * both, so a tile's warps holding one requantize the general way */
    for (int k = 0; slow && k < w.k; k++)
      if (k % 11 == 5 || k % 13 == 6) qs.scale[k] = k % 11 == 5 ? 0.75f : 2.5f;
    if (relu) qs.q.clamp_min = qs.q.out_zero_point, qs.q.clamp_max = 255;
    if (onnx && w.epi.residual) qs.q.residual_first = kind == 1;
    /* onnx, uint8 data and out (kind 3): quant_random's biases, well within
     * quant_onnx_block's bound, so that the seeded forms (quant.cuh
     * ctq_requant_onnx_seeded) run where a template has them: the clamp's
     * top the type's (CTQO_HISAT) and inside it (CTQO_SEED alone) by turns */
    const int seeded = onnx && kind == 3;
    if (seeded)
      qs.q.clamp_max = *tried / per_workload / 4 % 2 ? (qs.q.clamp_min + 255 + 1) / 2 : 255;
    /* onnx, int8 per channel (kind 2): a few channels whose offsets put the
     * accumulator past 2^22 (where the magic number's conversions stop
     * being exact) and past 2^24 (where float(v) rounds), scaled back into
     * the output's range: a kernel that converts v by a shortcut valid only
     * for small values fails here (quant_random's biases keep v within
     * about 2^21), and the seeded forms' flags stay off */
    for (int k = 0; onnx && !seeded && w.epi.scale == CT_SCALE_CHANNEL && k < w.k; k++)
      if (k % 17 == 3 || k % 19 == 7) {
        qs.bias[k] = k % 17 == 3 ? (1 << 24) + 12345 + 2 * k : -5000001 - 2 * k;
        qs.scale[k] = k % 17 == 3 ? 0x1p-18f : 0x1p-17f;
      }
    quant_weight_sums(&w, weights, sums);
    ck_assert_msg(quant_params(&w, &qs.q, sums, params, &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(quant_zpad_fill(&w, &qs.q, weights, params, &err) == CT_OK, "%s", err.msg);
    if (onnx && !fused && !w.epi.residual) {
      const int32_t f = params[CTQ_ONNX + CTQO_FIRST];
      n_seeded += (f & CTQO_SEED) != 0;
      n_hisat += (f & CTQO_HISAT) != 0;
    }
    ck_assert_msg(
        reference_qconv(&w, &qs.q, data, weights, w.epi.residual ? res : NULL, want, &err) == CT_OK,
        "%s: %s", sh->name, err.msg);
    free(sums);
    if (fused) {
      /* the outputs spread over many values: a test of a constant proves nothing */
      int seen[256] = {0}, distinct = 0;
      for (size_t j = 0; j < no; j++) distinct += !seen[((uint8_t *)want)[j]]++;
      ck_assert_msg(distinct >= 16, "%s: the reference's output takes %d values", sh->name,
                    distinct);
    }
  } else {
    ck_assert_int_eq(reference_conv(&w, data, weights, want, &err), CT_OK);
  }

  void *d_data = NULL, *d_weights = NULL, *d_out = NULL, *d_params = NULL, *d_res = NULL;
  ck_assert_int_eq(cudaMalloc(&d_data, nd), cudaSuccess);
  ck_assert_int_eq(cudaMalloc(&d_weights, nw), cudaSuccess);
  ck_assert_int_eq(cudaMalloc(&d_out, ob), cudaSuccess);
  ck_assert_int_eq(cudaMemcpy(d_data, data, nd, cudaMemcpyHostToDevice), cudaSuccess);
  ck_assert_int_eq(cudaMemcpy(d_weights, weights, nw, cudaMemcpyHostToDevice), cudaSuccess);
  if (qp) {
    const size_t pb = quant_params_words(&w) * 4;
    ck_assert_int_eq(cudaMalloc(&d_params, pb), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(d_params, params, pb, cudaMemcpyHostToDevice), cudaSuccess);
    if (w.epi.residual) {
      ck_assert_int_eq(cudaMalloc(&d_res, no), cudaSuccess);
      ck_assert_int_eq(cudaMemcpy(d_res, res, no, cudaMemcpyHostToDevice), cudaSuccess);
    }
  }

  space sp;
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  /* every other config as if this GPU had 1 to 3 SMs: persistent blocks
   * (as many as fit at once) then each loop over many tiles, and a
   * ping-pong block's two warpgroups get unequal numbers of them */
  arch few = dev.arch;
  int exact = 0;
  for (int i = 0; i < per_workload; i++) {
    config c;
    char text[512];
    /* one config per workload: the turns run over the workloads */
    const int turn = per_workload == 1 ? *tried : i;
    few.sm_count = 1 + turn / 2 % 3;
    const arch *ar = turn % 2 ? &few : &dev.arch;
    int draws = 0;
    do
      ck_assert_msg(template_sample(tpl, &w, &sp, ar, r, 1000000, &c, &err) == CT_OK, "%s",
                    err.msg);
    while (space_get(&sp, &c, "warpgroups", 0) < min_warpgroups && ++draws < 100000);
    ck_assert_msg(draws < 100000, "%s [%s]: no valid config with %d or more warpgroups", tpl->name,
                  sh->name, min_warpgroups);
    space_config_str(&sp, &c, text, sizeof text);
    if (ar == &few) {
      const size_t len = strlen(text);
      snprintf(text + len, sizeof text - len, " (as on %d SMs)", few.sm_count);
    }
    (*tried)++;
    instance inst;
    cubin cb = {0};
    kernel k = {0};
    if (instance_make(tpl, &w, &sp, &c, ar, &inst, &err) ||
        (lineinfo && inst.n_options < INSTANCE_MAX_OPTIONS &&
         (snprintf(inst.options[inst.n_options++], INSTANCE_OPTION_MAX, "-lineinfo"), 0)) ||
        nvrtc_compile(&inst, &dev.arch, &cb, &err) ||
        kernel_load(cb.data, cb.size, &inst, &k, &err)) {
      fprintf(stderr, "FAIL %s [%s] %s: %s\n", tpl->name, sh->name, text, err.msg);
      cubin_free(&cb);
      continue;
    }
    /* poison: every element must be written */
    ck_assert_int_eq(cudaMemset(d_out, 0xA5, ob), cudaSuccess);
    if (trace) {
      printf("launch %s [%s] %s\n", tpl->name, sh->name, text);
      fflush(stdout);
    }
    if (kernel_launch(&k, &inst, &(kernel_io){d_data, d_weights, d_out, d_params, d_res}, 0,
                      &err)) {
      fprintf(stderr, "FAIL %s [%s] %s: %s\n", tpl->name, sh->name, text, err.msg);
    } else {
      cudaError_t e = cudaDeviceSynchronize();
      ck_assert_msg(e == cudaSuccess, "%s [%s] %s: %s", tpl->name, sh->name, text,
                    cudaGetErrorString(e));
      ck_assert_int_eq(cudaMemcpy(got, d_out, ob, cudaMemcpyDeviceToHost), cudaSuccess);
      size_t bad = 0, first = 0;
      for (size_t j = 0; j < no; j++) {
        const int gv = ob8 ? ((uint8_t *)got)[j] : got[j];
        const int wv = ob8 ? ((uint8_t *)want)[j] : want[j];
        if (gv != wv && bad++ == 0) first = j;
      }
      if (bad)
        fprintf(stderr, "FAIL %s [%s%s%s] %s: %zu of %zu wrong, first at %zu: %d, want %d\n",
                tpl->name, sh->name, onnx ? ", onnx" : "",
                fused  ? (fkind == 0   ? ", fused, int8 onnx per channel"
                          : fkind == 1 ? ", fused, uint8 onnx per tensor, zero points"
                          : fkind == 2 ? ", fused, int8 gemmlowp per channel, uint8 pre data"
                                       : ", fused, uint8 gemmlowp per tensor")
                : out8 ? (onnx && kind == 0   ? ", int8 out, residual Add(t, r)"
                          : onnx && u8        ? ", uint8 out, residual Add(r, t)"
                          : onnx && kind == 3 ? ", uint8 data and out"
                          : relu              ? ", uint8 out, ReLU"
                          : u8                ? ", uint8 out"
                          : slow              ? ", int8 out, slow channels"
                          : kind              ? ", int8 out"
                                              : ", int8 out, residual")
                       : "",
                text, bad, no, first, ob8 ? ((uint8_t *)got)[first] : got[first],
                ob8 ? ((uint8_t *)want)[first] : want[first]);
      else
        exact++;
    }
    kernel_unload(&k);
    cubin_free(&cb);
  }
  space_free(&sp);
  cudaFree(d_data);
  cudaFree(d_weights);
  cudaFree(d_out);
  cudaFree(d_params);
  cudaFree(d_res);
  if (qp) quant_store_free(&qs);
  free(params);
  free(data);
  free(weights);
  free(res);
  free(want);
  free(got);
  return exact;
}

static void run_template(const char *name, const shape *shapes, int n_shapes, const shape *more,
                         int n_more) {
  const template_desc *tpl = template_find(name);
  ck_assert_ptr_nonnull(tpl);
  rng r;
  rng_seed(&r, seed);
  int tried = 0, exact = 0, n_run = 0;
  n_seeded = n_hisat = 0;
  /* index i of the list shapes then more; CT_GT_SHAPES keeps i % M == R */
  for (int i = 0; i < n_shapes + n_more; i++) {
    if (i % shapes_mod != shapes_rem) continue;
    exact += run_shape(tpl, i < n_shapes ? &shapes[i] : &more[i - n_shapes], &r, &tried);
    n_run++;
  }
  char seeds[96] = "";
  if (onnx)
    snprintf(seeds, sizeof seeds, "; the seeded forms' values on %d workloads (%d without the min)",
             n_seeded, n_hisat);
  printf("%s: %d of %d random valid configs exact over %d workloads on %s (%s)%s%s\n", name, exact,
         tried, n_run, dev.name, dev.arch.name,
         onnx   ? ", 8-bit output with onnx rounding (int8 and uint8, residual both orders)"
         : out8 ? ", 8-bit output (int8 and uint8)"
                : "",
         seeds);
  fflush(stdout);
  ck_assert_int_eq(exact, tried);
}

/* run_template for a wgmma template: skipped (a SKIP line, counted) off
 * sm_90. */
static void run_wgmma(const char *name, const shape *shapes, int n_shapes) {
  if (dev.arch.cc_major != 9 || dev.arch.cc_minor != 0) {
    test_skip(name, "wgmma needs sm_90, this is %s", dev.arch.name);
    return;
  }
  run_template(name, shapes, n_shapes, NULL, 0);
}

/* run_wgmma with 8-bit output (requantized in the kernel). */
static void run_wgmma8(const char *name, const shape *shapes, int n_shapes) {
  out8 = 1;
  run_wgmma(name, shapes, n_shapes);
  out8 = 0;
}

/* run_template (wgmma: on sm_90 only) with onnx rounding: 8-bit output,
 * a fifth of the configs per workload (at least 2), the four onnx kinds by
 * turns over the workloads (every list has at least four). */
static void run_onnx(const char *name, const shape *shapes, int n_shapes, const shape *more,
                     int n_more) {
  const int saved = per_workload;
  per_workload = per_workload / 5 > 2 ? per_workload / 5 : 2;
  out8 = onnx = 1;
  if (strstr(name, "wgmma") && (dev.arch.cc_major != 9 || dev.arch.cc_minor != 0))
    test_skip(name, "wgmma needs sm_90, this is %s", dev.arch.name);
  else
    run_template(name, shapes, n_shapes, more, n_more);
  out8 = onnx = 0;
  per_workload = saved;
}

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

/* ---- the registry's templates, case by case ----------------------------------
 *
 * Each case below runs the registered templates (template_all) that its
 * kind takes, so that a template added to the registry is run here with no
 * edit to this file. A template's kind comes from its descriptor: its
 * layout and op, and the instruction family its name carries (wgmma: sm_90
 * only, else a counted SKIP; stem: the channels-last templates of C % 16
 * != 0); its shapes from the same. */
typedef struct kind {
  int packed, wgmma, stem, mma, grouped, dw; /* dw: depthwise only (also grouped) */
  int pw;                                    /* pointwise only (also mma) */
  int pwdw; /* a pointwise conv fused into a depthwise one (pre_c) only */
} kind;

static kind kind_of(const template_desc *t) {
  kind k;
  k.packed = t->layout == CT_LAYOUT_NCHW4C;
  k.wgmma = strstr(t->name, "wgmma") != NULL;
  k.stem = strstr(t->name, "stem") != NULL;
  k.mma = !k.wgmma && strstr(t->name, "mma") != NULL;
  k.dw = strstr(t->name, "_dw") != NULL;
  k.grouped = strstr(t->name, "grouped") != NULL || k.dw;
  k.pw = strstr(t->name, "_pw_") != NULL;
  k.pwdw = strstr(t->name, "_pwdw") != NULL;
  return k;
}

/* CT_GT_TEMPLATE: only the templates whose name contains it, or with a
 * final '$' ends in the rest (NULL: all) */
static const char *only_template;

static int template_selected(const char *name) {
  if (!only_template) return 1;
  const size_t n = strlen(only_template), m = strlen(name);
  if (n > 0 && only_template[n - 1] == '$')
    return m >= n - 1 && !strncmp(name + m - (n - 1), only_template, n - 1);
  return strstr(name, only_template) != NULL;
}

/* Whether case c runs t. */
static int in_case(const template_desc *t, const char *c) {
  if (!template_selected(t->name)) return 0;
  kind k = kind_of(t);
  int nhwc_wgmma = !k.packed && k.wgmma && !k.stem, stem_wgmma = !k.packed && k.wgmma && k.stem;
  /* pointwise: its own shapes, int32, the 8-bit kinds and onnx rounding */
  if (k.pw) return !strcmp(c, "pointwise");
  /* pwdw: the fused template on depthwise shapes with a pointwise conv before */
  if (k.pwdw) return !strcmp(c, "pwdw");
  /* grouped, grouped8, grouped_onnx: the grouped templates and the
   * channels-last mma ones on the grouped and odd-K shapes */
  /* grouped_zw: the channels-last fallback, which takes weight zero points */
  if (!strcmp(c, "grouped_zw")) return k.grouped && !k.packed && !k.dw && !k.mma;
  if (!strncmp(c, "grouped", 7)) return k.grouped || (!k.packed && k.mma);
  if (k.grouped) return 0;
  if (!strcmp(c, "gpu_templates")) return k.packed && !k.wgmma;
  if (!strcmp(c, "wgmma")) return k.packed && k.wgmma;
  if (!strcmp(c, "nhwc")) return !k.packed && !stem_wgmma;
  if (!strcmp(c, "nhwc8") || !strcmp(c, "pingpong") || !strcmp(c, "nhwc_zpad")) return nhwc_wgmma;
  if (!strcmp(c, "stem") || !strcmp(c, "stem8")) return stem_wgmma;
  if (!strcmp(c, "onnx")) return k.packed || nhwc_wgmma;
  if (!strcmp(c, "onnx_stem")) return !k.packed && !nhwc_wgmma;
  return 0;
}

/* The registry case whose tests run now (set by its fixture). */
static const char *running_case = "";

/* The templates of case c: their count, and the i-th (registry order). */
static int case_count(const char *c) {
  int n = 0;
  for (const template_desc *const *t = template_all(); *t; t++) n += in_case(*t, c);
  return n;
}

static const template_desc *case_template(const char *c, int i) {
  for (const template_desc *const *t = template_all(); *t; t++)
    if (in_case(*t, c) && i-- == 0) return *t;
  ck_abort_msg("case %s has no template %d", c, i);
  return NULL;
}

/* The shapes t runs: the packed lists (the mma ones also the wider
 * layers), the wgmma ones', the channels-last wgmma ones', or the stems'. */
typedef struct shapes_of_t {
  const shape *list, *more;
  int n, n_more;
} shapes_of_t;

static shapes_of_t shapes_of(const template_desc *t) {
  kind k = kind_of(t);
  int d3 = t->op == CT_OP_CONV3D;
  shapes_of_t r = {NULL, NULL, 0, 0};
  if (k.packed && k.wgmma)
    r.list = d3 ? wg3d : wg2d, r.n = d3 ? N_OF(wg3d) : N_OF(wg2d);
  else if (k.packed) {
    r.list = d3 ? shapes3d : shapes2d, r.n = d3 ? N_OF(shapes3d) : N_OF(shapes2d);
    if (k.mma) r.more = d3 ? wide3d : wide2d, r.n_more = d3 ? N_OF(wide3d) : N_OF(wide2d);
  } else if (k.wgmma && !k.stem)
    r.list = d3 ? nh3d : nh2d, r.n = d3 ? N_OF(nh3d) : N_OF(nh2d);
  else
    r.list = d3 ? nm3d : nm2d, r.n = d3 ? N_OF(nm3d) : N_OF(nm2d);
  return r;
}

/* The grouped cases' shapes of t: the grouped lists; channels-last also the
 * odd channel counts, and for the mma templates the odd K. */
static shapes_of_t grouped_shapes_of(const template_desc *t) {
  kind k = kind_of(t);
  int d3 = t->op == CT_OP_CONV3D;
  shapes_of_t r = {d3 ? gr3d : gr2d, NULL, d3 ? N_OF(gr3d) : N_OF(gr2d), 0};
  if (k.dw && k.mma) {
    r.list = d3 ? dwm3d : dwm2d, r.n = d3 ? N_OF(dwm3d) : N_OF(dwm2d);
    return r;
  }
  if (k.mma && strstr(t->name, "grouped")) {
    r.list = d3 ? gm3d : gm2d, r.n = d3 ? N_OF(gm3d) : N_OF(gm2d);
    return r;
  }
  if (k.dw) {
    r.list = d3 ? dw3d : dw2d, r.n = d3 ? N_OF(dw3d) : N_OF(dw2d);
    return r;
  }
  if (k.packed) return r;
  if (!d3 && k.grouped) r.more = grn2d, r.n_more = N_OF(grn2d);
  if (k.mma) r.more = d3 ? oddk3d : oddk2d, r.n_more = d3 ? N_OF(oddk3d) : N_OF(oddk2d);
  return r;
}

/* Cases grouped, grouped8 and grouped_onnx: int32, 8-bit (the four kinds)
 * and onnx rounding. */
START_TEST(registered_grouped_configs_match_the_reference) {
  const template_desc *t = case_template(running_case, _i);
  shapes_of_t sh = grouped_shapes_of(t);
  if (!strcmp(running_case, "grouped_zw")) { /* int32, then the 8-bit kinds */
    const int d3 = t->op == CT_OP_CONV3D;
    zw = 1;
    run_template(t->name, d3 ? zw3d : zw2d, d3 ? N_OF(zw3d) : N_OF(zw2d), NULL, 0);
    out8 = 1;
    run_template(t->name, d3 ? zw3d : zw2d, d3 ? N_OF(zw3d) : N_OF(zw2d), NULL, 0);
    out8 = zw = 0;
    return;
  }
  if (!strcmp(running_case, "grouped_onnx")) {
    run_onnx(t->name, sh.list, sh.n, sh.more, sh.n_more);
    return;
  }
  out8 = !strcmp(running_case, "grouped8");
  run_template(t->name, sh.list, sh.n, sh.more, sh.n_more);
  out8 = 0;
}
END_TEST

/* Case pointwise: the pointwise templates on their shapes, int32, the four
 * 8-bit kinds, then onnx rounding. */
START_TEST(registered_pointwise_configs_match_the_reference) {
  const template_desc *t = case_template(running_case, _i);
  const int d3 = t->op == CT_OP_CONV3D;
  const shape *list = d3 ? pw3d : pw2d;
  const int n = d3 ? N_OF(pw3d) : N_OF(pw2d);
  run_template(t->name, list, n, NULL, 0);
  out8 = 1;
  run_template(t->name, list, n, NULL, 0);
  out8 = 0;
  run_onnx(t->name, list, n, NULL, 0);
}
END_TEST

/* Case pwdw: the fused template on depthwise shapes of multiplier 1 (C a
 * multiple of 8), each with a pointwise conv before it, the four fused
 * kinds by turns (run_shape). */
START_TEST(registered_fused_configs_match_the_reference) {
  const template_desc *t = case_template(running_case, _i);
  fused = 1;
  run_template(t->name, pwdw2d, N_OF(pwdw2d), NULL, 0);
  fused = 0;
}
END_TEST

/* Cases gpu_templates, wgmma, nhwc, stem: random configs of each template
 * on its shapes, int32 output, exact. */
START_TEST(registered_configs_match_the_reference) {
  const template_desc *t = case_template(running_case, _i);
  shapes_of_t sh = shapes_of(t);
  if (kind_of(t).wgmma)
    run_wgmma(t->name, sh.list, sh.n);
  else
    run_template(t->name, sh.list, sh.n, sh.more, sh.n_more);
}
END_TEST

/* Cases nhwc8, stem8: the same with 8-bit output (the requantizing
 * epilogues, both out_stage forms). */
START_TEST(registered_int8_configs_match_the_reference) {
  const template_desc *t = case_template(running_case, _i);
  shapes_of_t sh = shapes_of(t);
  run_wgmma8(t->name, sh.list, sh.n);
}
END_TEST

/* run_wgmma then run_wgmma8 on t's shapes: int32, then 8-bit output. */
static void run_wgmma_both(const template_desc *t) {
  shapes_of_t sh = shapes_of(t);
  run_wgmma(t->name, sh.list, sh.n);
  run_wgmma8(t->name, sh.list, sh.n);
}

/* Case nhwc_zpad: the channels-last wgmma templates with a data zero point
 * (int8 and uint8 data by turns) and a bias, int32 then 8-bit output: TMA
 * fills the padding with zeros, and each border class's correction
 * (core/zpad.cuh) in the params block makes up the zero point's share. */
START_TEST(registered_zero_point_padding_configs_match_the_reference) {
  zpad = 1;
  run_wgmma_both(case_template(running_case, _i));
  zpad = 0;
}
END_TEST

/* Case pingpong: three and four consumer warpgroups taking the tiles in
 * turn, int32 and 8-bit output; half the configs as on 1 to 3 SMs, so
 * that every warpgroup runs several tiles and their counts differ. */
START_TEST(registered_pingpong_of_3_and_4_warpgroups_match_the_reference) {
  min_warpgroups = 3;
  run_wgmma_both(case_template(running_case, _i));
  min_warpgroups = 0;
}
END_TEST

/* Cases onnx, onnx_stem: every template with onnx rounding, exact against
 * reference_qconv. */
START_TEST(registered_onnx_configs_match_the_reference) {
  const template_desc *t = case_template(running_case, _i);
  shapes_of_t sh = shapes_of(t);
  run_onnx(t->name, sh.list, sh.n, sh.more, sh.n_more);
}
END_TEST

/* ---- case ref (CT_GT_REF=1): the runner's GPU reference in this process ----- */

/* The argument of ref_conv: struct ref_shape of templates/ref_conv.cu (32
 * ints), filled as tuner/runner.c fills it. */
typedef struct ref_shape {
  int n, c4, k4;
  int in[3], ker[3], str[3], pad[3], dil[3], out[3];
  int kr, cout, d2s, d2s_crd, d2s_3d, out_type, data_u8, has_res;
  int nhwc, c, groups;
} ref_shape;

/* runner.c's launch geometry: ref_conv one thread per conv output element,
 * ref_compare a grid-stride loop over at most 1024 blocks */
#define REF_BLOCK      256
#define CMP_BLOCK      256
#define CMP_MAX_BLOCKS 1024

typedef struct ref_kernels {
  cudaLibrary_t lib;
  cudaKernel_t conv, cmp;
} ref_kernels;

static ref_shape ref_shape_of(const ct_workload *w) {
  geom3 g;
  workload_geom(w, &g);
  ref_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.n = (int)g.n;
  sh.c4 = (int)(g.c / 4);
  sh.k4 = (int)((g.k + 3) / 4);
  for (int d = 0; d < 3; d++) {
    sh.in[d] = (int)g.in[d];
    sh.ker[d] = (int)g.ker[d];
    sh.str[d] = (int)g.str[d];
    sh.pad[d] = (int)g.pb[d];
    sh.dil[d] = (int)g.dil[d];
    sh.out[d] = (int)g.out[d];
  }
  sh.kr = (int)g.k;
  sh.cout = workload_out_channels(w);
  sh.d2s = w->epi.d2s_block;
  sh.d2s_crd = w->epi.d2s_mode == CT_D2S_CRD;
  sh.d2s_3d = w->op == CT_OP_CONV3D;
  sh.out_type = w->out_type == CT_DTYPE_INT32 ? 0 : w->out_type == CT_DTYPE_INT8 ? 1 : 2;
  sh.data_u8 = w->data_type == CT_DTYPE_UINT8;
  sh.has_res = w->epi.residual;
  sh.nhwc = w->layout == CT_LAYOUT_NHWC;
  sh.c = (int)g.c;
  sh.groups = (int)g.g;
  return sh;
}

/* ref_compare over the alloc bytes (whole words) of a and b: the words
 * that differ and the first of them (0xffffffff: none), in res. */
static void ref_compare_run(const ref_kernels *rk, const void *a, const void *b, size_t alloc,
                            unsigned *d_cmp, unsigned res[2], const char *name) {
  unsigned init[2] = {0, 0xffffffffu};
  long long n = (long long)(alloc / 4);
  ck_assert_int_eq(cudaMemcpy(d_cmp, init, sizeof init, cudaMemcpyHostToDevice), cudaSuccess);
  long long blocks = (n + CMP_BLOCK - 1) / CMP_BLOCK;
  dim3 grid = {(unsigned)(blocks < CMP_MAX_BLOCKS ? blocks : CMP_MAX_BLOCKS), 1, 1};
  dim3 block = {CMP_BLOCK, 1, 1};
  void *args[] = {&a, &b, &n, &d_cmp};
  if (trace) {
    printf("launch ref_compare [%s] %lld words\n", name, n);
    fflush(stdout);
  }
  ck_assert_int_eq(cudaLaunchKernel((const void *)rk->cmp, grid, block, args, 0, NULL),
                   cudaSuccess);
  ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
  ck_assert_int_eq(cudaMemcpy(res, d_cmp, 2 * sizeof *res, cudaMemcpyDeviceToHost), cudaSuccess);
}

/* One ref_conv launch on w (random inputs and epilogue values from r) as
 * the runner makes it, byte for byte against the CPU reference; then
 * ref_compare of that output with the CPU's (no word differs) and with the
 * CPU's with one byte changed (that word and only it). Returns 1. */
static int ref_check(const ref_kernels *rk, const ct_workload *w, const char *name, rng *r) {
  ct_err err = {0};
  ck_assert_msg(workload_validate(w, &err) == CT_OK, "%s: %s", name, err.msg);
  const size_t nd = (size_t)workload_data_elems(w), nw = (size_t)workload_weight_elems(w);
  const size_t no = (size_t)workload_out_elems(w), ob = no * workload_out_elem_bytes(w);
  /* as the runner: whole words, the tail zero (ref_compare reads words) */
  const size_t alloc = (ob + 3) / 4 * 4, nraw = quant_raw_words(w);
  const int plain = w->out_type == CT_DTYPE_INT32 && w->data_type == CT_DTYPE_INT8 &&
                    !w->epi.data_zero_point && !w->epi.weight_zero_point && !w->epi.bias;
  int8_t *data = malloc(nd), *weights = malloc(nw);
  uint8_t *res = malloc(no), *want = calloc(alloc, 1), *got = malloc(alloc);
  int32_t *raw = malloc(nraw * sizeof *raw);
  ck_assert(data && weights && res && want && got && raw);
  for (size_t i = 0; i < nd; i++) data[i] = (int8_t)rng_next(r);
  for (size_t i = 0; i < nw; i++) weights[i] = (int8_t)rng_next(r);
  for (size_t i = 0; i < no; i++) res[i] = (uint8_t)rng_next(r);
  quant_store qs = {0};
  ck_assert_msg(quant_random(w, rng_next(r), &qs, &err) == CT_OK, "%s: %s", name, err.msg);
  ck_assert_msg(quant_raw(w, &qs.q, raw, &err) == CT_OK, "%s: %s", name, err.msg);
  if (plain)
    ck_assert_msg(reference_conv(w, data, weights, (int32_t *)want, &err) == CT_OK, "%s: %s", name,
                  err.msg);
  else
    ck_assert_msg(
        reference_qconv(w, &qs.q, data, weights, w->epi.residual ? res : NULL, want, &err) == CT_OK,
        "%s: %s", name, err.msg);

  void *d_data = NULL, *d_weights = NULL, *d_ref = NULL, *d_want = NULL, *d_raw = NULL;
  void *d_res = NULL;
  unsigned *d_cmp = NULL;
  ck_assert_int_eq(cudaMalloc(&d_data, nd), cudaSuccess);
  ck_assert_int_eq(cudaMalloc(&d_weights, nw), cudaSuccess);
  ck_assert_int_eq(cudaMalloc(&d_ref, alloc), cudaSuccess);
  ck_assert_int_eq(cudaMalloc(&d_want, alloc), cudaSuccess);
  ck_assert_int_eq(cudaMalloc(&d_raw, nraw * sizeof *raw), cudaSuccess);
  ck_assert_int_eq(cudaMalloc((void **)&d_cmp, 2 * sizeof *d_cmp), cudaSuccess);
  ck_assert_int_eq(cudaMemcpy(d_data, data, nd, cudaMemcpyHostToDevice), cudaSuccess);
  ck_assert_int_eq(cudaMemcpy(d_weights, weights, nw, cudaMemcpyHostToDevice), cudaSuccess);
  ck_assert_int_eq(cudaMemcpy(d_raw, raw, nraw * sizeof *raw, cudaMemcpyHostToDevice), cudaSuccess);
  if (w->epi.residual) {
    ck_assert_int_eq(cudaMalloc(&d_res, no), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(d_res, res, no, cudaMemcpyHostToDevice), cudaSuccess);
  }
  /* the runner zeroes the reference first: the padding lanes of a remapped
   * packed output and the tail of the last word are never written */
  ck_assert_int_eq(cudaMemset(d_ref, 0, alloc), cudaSuccess);
  ref_shape sh = ref_shape_of(w);
  geom3 g;
  workload_geom(w, &g);
  const size_t elems = (size_t)(g.n * g.k * g.out[0] * g.out[1] * g.out[2]);
  dim3 grid = {(unsigned)((elems + REF_BLOCK - 1) / REF_BLOCK), 1, 1};
  dim3 block = {REF_BLOCK, 1, 1};
  void *args[] = {&sh, &d_data, &d_weights, &d_ref, &d_raw, &d_res};
  char key[CT_KEY_MAX];
  workload_key(w, key, sizeof key);
  if (trace) {
    printf("launch ref_conv [%s] %s\n", name, key);
    fflush(stdout);
  }
  ck_assert_int_eq(cudaLaunchKernel((const void *)rk->conv, grid, block, args, 0, NULL),
                   cudaSuccess);
  ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
  ck_assert_int_eq(cudaMemcpy(got, d_ref, alloc, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < ob; i++)
    if (got[i] != want[i] && bad++ == 0) first = i;
  ck_assert_msg(bad == 0, "%s (%s): %zu of %zu bytes differ, first at %zu: GPU %d, CPU %d", name,
                key, bad, ob, first, got[first], want[first]);
  for (size_t i = ob; i < alloc; i++) ck_assert_msg(got[i] == 0, "%s: the tail was written", key);

  unsigned cmp[2];
  ck_assert_int_eq(cudaMemcpy(d_want, want, alloc, cudaMemcpyHostToDevice), cudaSuccess);
  ref_compare_run(rk, d_ref, d_want, alloc, d_cmp, cmp, name);
  ck_assert_msg(cmp[0] == 0 && cmp[1] == 0xffffffffu, "%s: ref_compare of equal outputs: %u, %u",
                key, cmp[0], cmp[1]);
  const size_t j = ob / 2;
  want[j] ^= 0x5A;
  ck_assert_int_eq(
      cudaMemcpy((char *)d_want + j / 4 * 4, want + j / 4 * 4, 4, cudaMemcpyHostToDevice),
      cudaSuccess);
  ref_compare_run(rk, d_ref, d_want, alloc, d_cmp, cmp, name);
  ck_assert_msg(cmp[0] == 1 && cmp[1] == j / 4, "%s: ref_compare, byte %zu changed: %u, first %u",
                key, j, cmp[0], cmp[1]);

  cudaFree(d_data);
  cudaFree(d_weights);
  cudaFree(d_ref);
  cudaFree(d_want);
  cudaFree(d_raw);
  cudaFree(d_res);
  cudaFree(d_cmp);
  quant_store_free(&qs);
  free(data);
  free(weights);
  free(res);
  free(want);
  free(got);
  free(raw);
  return 1;
}

/* Variant v of sh in layout, test_runner's: 0 int32; 1 uint8 data with its
 * zero point, weight zero points, bias, int32 out; 2 int8 out (nhwc: uint8
 * for odd i) per channel with a residual, 3 the same with onnx rounding
 * (packed: with the zero points and bias of 1); 4 (packed only, K a
 * multiple of 4, 3D 8) uint8 in depth_to_space order, block 2, onnx for odd
 * i. Returns 0 where v does not apply. */
static int ref_variant(const shape *sh, ct_layout layout, int v, int i, ct_workload *w) {
  shape_workload(sh, w);
  w->layout = layout;
  const int nhwc = layout == CT_LAYOUT_NHWC;
  if (v == 0) return 1;
  if (v == 4 && (nhwc || sh->k % (sh->op == CT_OP_CONV3D ? 8 : 4))) return 0;
  if (v == 1 || !nhwc) {
    w->data_type = CT_DTYPE_UINT8;
    w->epi.data_zero_point = 1;
    w->epi.bias = 1;
    w->epi.weight_zero_point = v != 4;
  }
  if (v == 2 || v == 3) {
    w->out_type = nhwc && i % 2 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
    w->epi.bias = 1;
    w->epi.scale = CT_SCALE_CHANNEL;
    w->epi.residual = 1;
    if (v == 3) w->epi.rounding = CT_ROUND_ONNX;
  } else if (v == 4) {
    w->out_type = CT_DTYPE_UINT8;
    w->epi.d2s_block = 2;
    w->epi.d2s_mode = i % 2 ? CT_D2S_CRD : CT_D2S_DCR;
    if (i % 2) w->epi.rounding = CT_ROUND_ONNX;
  }
  return 1;
}

/* test_runner's channels-last shapes whose K is no multiple of 4: 8-bit
 * outputs that end inside a word (the tail ref_compare reads) */
/* clang-format off */
static const shape ref_odd[] = {
    {"c5k7 3x3 s2 b3", CT_OP_CONV2D, 3, 5, 7, {0, 9, 11}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"stem c3k6 7x7", CT_OP_CONV2D, 1, 3, 6, {0, 15, 13}, {0, 7, 7}, {0, 2, 2}, {0, 3, 3}, {0, 3, 3}, {0, 1, 1}, 1},
    {"3d c3k5", CT_OP_CONV3D, 1, 3, 5, {3, 7, 5}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
};
/* clang-format on */

/* The GPU reference on the packed shapes (shapes2d, shapes3d) and the
 * channels-last ones (nm2d, nm3d: 1 to 7 and 40 channels, odd sizes;
 * ref_odd), every variant that applies; CT_GT_SHAPES and CT_GT_SEED apply. */
START_TEST(gpu_reference_matches_the_cpu_reference) {
  ref_kernels rk;
  memset(&rk, 0, sizeof rk);
  const char *source = template_embedded("ref_conv.cu");
  ck_assert_ptr_nonnull(source);
  cubin c;
  ct_err err = {0};
  ck_assert_msg(nvrtc_compile_source("ref_conv.cu", source, NULL, 0, &dev.arch, &c, &err) == CT_OK,
                "%s", err.msg);
  ck_assert_int_eq(cudaLibraryLoadData(&rk.lib, c.data, NULL, NULL, 0, NULL, NULL, 0), cudaSuccess);
  cubin_free(&c);
  ck_assert_int_eq(cudaLibraryGetKernel(&rk.conv, rk.lib, "ref_conv"), cudaSuccess);
  ck_assert_int_eq(cudaLibraryGetKernel(&rk.cmp, rk.lib, "ref_compare"), cudaSuccess);
  struct {
    const shape *list;
    int n;
    ct_layout layout;
  } sets[] = {{shapes2d, N_OF(shapes2d), CT_LAYOUT_NCHW4C},
              {shapes3d, N_OF(shapes3d), CT_LAYOUT_NCHW4C},
              {nm2d, N_OF(nm2d), CT_LAYOUT_NHWC},
              {nm3d, N_OF(nm3d), CT_LAYOUT_NHWC},
              {ref_odd, N_OF(ref_odd), CT_LAYOUT_NHWC}};
  rng r;
  rng_seed(&r, seed);
  int n_checked = 0, n_workloads = 0;
  for (int s = 0; s < N_OF(sets); s++)
    for (int i = 0; i < sets[s].n; i++) {
      if (i % shapes_mod != shapes_rem) continue;
      n_workloads++;
      for (int v = 0; v < 5; v++) {
        ct_workload w;
        if (ref_variant(&sets[s].list[i], sets[s].layout, v, i, &w))
          n_checked += ref_check(&rk, &w, sets[s].list[i].name, &r);
      }
    }
  printf("ref_conv: %d workload variants exact over %d workloads, ref_compare right on each, "
         "on %s (%s)\n",
         n_checked, n_workloads, dev.name, dev.arch.name);
  fflush(stdout);
  cudaLibraryUnload(rk.lib);
}
END_TEST

/* CT_GT_SEED, CT_GT_SHAPES, CT_GT_TEMPLATE and CT_GT_TRACE from the environment: 0, or -1
 * with a message naming the variable and what it accepts. */
static int read_env(void) {
  const char *v = getenv("CT_GT_SEED");
  if (v && v[0]) {
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || errno || v[0] == '-') {
      fprintf(stderr, "test_gpu_templates: CT_GT_SEED '%s': accepted an integer in [0, 2^64)\n", v);
      return -1;
    }
    seed = x;
  }
  v = getenv("CT_GT_SHAPES");
  if (v && v[0]) {
    int rem = -1, mod = 0;
    char tail;
    if (sscanf(v, "%d/%d%c", &rem, &mod, &tail) != 2 || mod < 1 || mod > 1000 || rem < 0 ||
        rem >= mod) {
      fprintf(stderr,
              "test_gpu_templates: CT_GT_SHAPES '%s': accepted R/M, 1 <= M <= 1000, "
              "0 <= R < M\n",
              v);
      return -1;
    }
    shapes_rem = rem;
    shapes_mod = mod;
  }
  v = getenv("CT_GT_TEMPLATE");
  only_template = v && v[0] ? v : NULL;
  v = getenv("CT_GT_TRACE");
  trace = v && v[0] && strcmp(v, "0") != 0;
  v = getenv("CT_GT_LINEINFO");
  lineinfo = v && v[0] && strcmp(v, "0") != 0;
  return 0;
}

/* The registry-driven cases (CK_RUN_CASE=name runs one alone): each
 * loops over the templates of its kind (in_case); its fixture names the
 * case for the test body (Check's tcase_name() is the test's name, which
 * several cases share). */
#define REGISTRY_CASE(name, test)                                                                  \
  static void enter_##name(void) {                                                                 \
    running_case = #name;                                                                          \
  }                                                                                                \
  static void add_##name(TCase *tc) {                                                              \
    tcase_add_checked_fixture(tc, enter_##name, NULL);                                             \
    tcase_add_loop_test(tc, test, 0, case_count(#name));                                           \
  }
REGISTRY_CASE(gpu_templates, registered_configs_match_the_reference)
REGISTRY_CASE(wgmma, registered_configs_match_the_reference)
REGISTRY_CASE(nhwc, registered_configs_match_the_reference)
REGISTRY_CASE(nhwc8, registered_int8_configs_match_the_reference)
REGISTRY_CASE(pingpong, registered_pingpong_of_3_and_4_warpgroups_match_the_reference)
REGISTRY_CASE(nhwc_zpad, registered_zero_point_padding_configs_match_the_reference)
REGISTRY_CASE(stem, registered_configs_match_the_reference)
REGISTRY_CASE(stem8, registered_int8_configs_match_the_reference)
/* onnx_stem apart from onnx: the whole onnx case runs past 200 s on the H200 */
REGISTRY_CASE(onnx, registered_onnx_configs_match_the_reference)
REGISTRY_CASE(onnx_stem, registered_onnx_configs_match_the_reference)
REGISTRY_CASE(grouped, registered_grouped_configs_match_the_reference)
REGISTRY_CASE(grouped8, registered_grouped_configs_match_the_reference)
REGISTRY_CASE(grouped_onnx, registered_grouped_configs_match_the_reference)
REGISTRY_CASE(grouped_zw, registered_grouped_configs_match_the_reference)
REGISTRY_CASE(pointwise, registered_pointwise_configs_match_the_reference)
REGISTRY_CASE(pwdw, registered_fused_configs_match_the_reference)

/* CT_GT_REF=1, for the sanitizer run: CK_RUN_CASE=ref (otherwise empty) */
static void add_ref(TCase *tc) {
  const char *ref = getenv("CT_GT_REF");
  if (ref && strcmp(ref, "1") == 0) tcase_add_test(tc, gpu_reference_matches_the_cpu_reference);
}

static const test_case suite_cases[] = {
    {"gpu_templates", 1200, add_gpu_templates},
    {"wgmma", 1200, add_wgmma},
    {"nhwc", 1200, add_nhwc},
    {"nhwc8", 1200, add_nhwc8},
    {"pingpong", 1200, add_pingpong},
    {"nhwc_zpad", 1200, add_nhwc_zpad},
    {"stem", 1200, add_stem},
    {"stem8", 1200, add_stem8},
    {"onnx", 2400, add_onnx},
    {"onnx_stem", 2400, add_onnx_stem},
    {"grouped", 1200, add_grouped},
    {"grouped8", 1200, add_grouped8},
    {"grouped_onnx", 1200, add_grouped_onnx},
    {"grouped_zw", 1200, add_grouped_zw},
    {"pointwise", 1200, add_pointwise},
    {"pwdw", 1200, add_pwdw},
    {"ref", 1200, add_ref},
    {NULL, 0, NULL},
};

/* test_main's probe: a CUDA device, opened as dev for every case. */
static int have_gpu(char *why, size_t size) {
  if (device_count() == 0) {
    snprintf(why, size, "no CUDA device");
    return 0;
  }
  ct_err err = {0};
  if (device_open(0, &dev, &err)) {
    snprintf(why, size, "%s", err.msg);
    return -1;
  }
  return 1;
}

int main(int argc, char **argv) {
  if (read_env()) return EXIT_FAILURE;
  if (argc > 1) per_workload = atoi(argv[1]);
  if (seed != 20261122 || shapes_mod != 1)
    printf("test_gpu_templates: seed %llu, workloads %d mod %d, %d configs each\n",
           (unsigned long long)seed, shapes_rem, shapes_mod, per_workload);
  static const test_suite suite = {"gpu_templates", suite_cases, 1, have_gpu};
  return test_main(&suite);
}
