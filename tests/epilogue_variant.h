/*
 * epilogue_variant.h: the four epilogue variants that the compile-only
 * checks rotate through (cubin_sums.c, test_mma_nhwc_groups.c): int32 out;
 * 8-bit out with zero points and bias (the out_stage / tile_requant knobs);
 * uint8 with residual, per-channel scale; onnx rounding. Header-only:
 * cubin_sums is no Check program.
 */
#ifndef CT_TESTS_EPILOGUE_VARIANT_H
#define CT_TESTS_EPILOGUE_VARIANT_H

#include "core/workload.h"

/* w with variant i % 4 of its epilogue. */
static inline ct_workload epilogue_variant(const ct_workload *w, int i) {
  ct_workload v = *w;
  ct_epilogue *e = &v.epi;
  switch (i % 4) {
  case 1:
    v.out_type = CT_DTYPE_INT8;
    e->data_zero_point = e->bias = 1;
    break;
  case 2:
    v.data_type = v.out_type = CT_DTYPE_UINT8;
    e->bias = e->residual = 1;
    e->scale = CT_SCALE_CHANNEL;
    break;
  case 3:
    v.out_type = CT_DTYPE_INT8;
    e->bias = 1;
    e->rounding = CT_ROUND_ONNX;
    break;
  default:
    break;
  }
  return v;
}

#endif
