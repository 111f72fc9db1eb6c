/*
 * shapes.h: the convolution shapes the GPU tests run, written compactly:
 * op, n, c, k, then per (d, h, w): input size, kernel, stride, pad before,
 * pad after, dilation (conv2d uses the last two of each triple), groups
 * (optional), and how one becomes a packed workload.
 */
#ifndef CT_TESTS_SHAPES_H
#define CT_TESTS_SHAPES_H

#include "core/workload.h"

typedef struct shape {
  const char *name;
  ct_op op;
  int n, c, k, in[3], ker[3], str[3], pb[3], pa[3], dil[3];
  int groups; /* left out (0): 1 */
} shape;

/* sh as a packed (NCHW4c / NCDHW4c) workload; not validated. */
static inline void shape_workload(const shape *sh, ct_workload *w) {
  workload_init(w, sh->op);
  w->layout = CT_LAYOUT_NCHW4C;
  w->n = sh->n, w->c = sh->c, w->k = sh->k;
  w->groups = sh->groups > 1 ? sh->groups : 1;
  int off = sh->op == CT_OP_CONV2D ? 1 : 0;
  for (int d = 0; d + off < 3; d++) {
    w->in[d] = sh->in[d + off];
    w->kernel[d] = sh->ker[d + off];
    w->stride[d] = sh->str[d + off];
    w->pad_before[d] = sh->pb[d + off];
    w->pad_after[d] = sh->pa[d + off];
    w->dilation[d] = sh->dil[d + off];
  }
}

#endif
