/*
 * conv_shape.cuh: the checks every convolution template makes of the shape
 * and epilogue macros its C descriptor sets (instance_conv_options in
 * templates/template.c), so that an illegal point that slips through the
 * descriptor fails as a COMPILE_ERROR with a clear log. Included by
 * conv_dp4a.cuh and conv_mma.cuh after their #error guard.
 */
#ifndef CT_TEMPLATES_CONV_SHAPE_CUH
#define CT_TEMPLATES_CONV_SHAPE_CUH

static_assert(CT_N > 0 && CT_C4 > 0 && CT_K4 > 0, "N, C/4 and K/4 must be positive");
static_assert(CT_ID > 0 && CT_IH > 0 && CT_IW > 0, "input sizes must be positive");
static_assert(CT_OD > 0 && CT_OH > 0 && CT_OW > 0, "output sizes must be positive");
static_assert(CT_STR_D > 0 && CT_STR_H > 0 && CT_STR_W > 0, "strides must be positive");
static_assert(CT_DIL_D > 0 && CT_DIL_H > 0 && CT_DIL_W > 0, "dilations must be positive");
static_assert(CT_OD == (CT_ID + CT_PAD_D + CT_PADA_D - CT_DIL_D * (CT_KD - 1) - 1) / CT_STR_D + 1,
              "CT_OD does not match the shape");
static_assert(CT_OH == (CT_IH + CT_PAD_H + CT_PADA_H - CT_DIL_H * (CT_KH - 1) - 1) / CT_STR_H + 1,
              "CT_OH does not match the shape");
static_assert(CT_OW == (CT_IW + CT_PAD_W + CT_PADA_W - CT_DIL_W * (CT_KW - 1) - 1) / CT_STR_W + 1,
              "CT_OW does not match the shape");
#if !CT_TEMPLATE_CONV3D
static_assert(CT_ID == 1 && CT_KD == 1 && CT_OD == 1, "conv2d: the depth axes must all be 1");
#endif
/* The epilogue: CT_OUT 0 int32, 1 int8, 2 uint8; CT_KR the real K. */
static_assert(CT_OUT >= 0 && CT_OUT <= 2, "CT_OUT is 0 (int32), 1 (int8) or 2 (uint8)");
static_assert(!CT_RES || CT_OUT != 0, "a residual needs an 8-bit output");
/* CT_ONNX 1: ONNX Runtime's float requantization (quant.cuh ctq_requant_onnx)
 * instead of gemmlowp's fixed point; the params block's form follows it. */
static_assert(CT_ONNX == 0 || CT_ONNX == 1, "CT_ONNX is 0 (gemmlowp) or 1 (onnx)");
static_assert(!CT_ONNX || CT_OUT != 0, "onnx rounding needs an 8-bit output");
static_assert(CT_KR > 4 * (CT_K4 - 1) && CT_KR <= 4 * CT_K4, "CT_KR must round up to 4 * CT_K4");

#endif
