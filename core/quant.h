/*
 * quant.h: the values of a quantized epilogue (ct_quant): checking them
 * against a workload, converting float scales to fixed point once, folding
 * them with the weights into the params block that the legalized kernels
 * read (layout and arithmetic: core/quant.cuh), the raw form the GPU
 * reference reads (the formula as written, nothing folded), and random
 * values for the runner and the tests.
 *
 * Cost: folding is one pass over the weights (the per-channel sums); the
 * rest is O(K).
 */
#ifndef CT_CORE_QUANT_H
#define CT_CORE_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/workload.h"

/* ct_quantize_multiplier with a message. */
ct_status quant_multiplier(double scale, int32_t *multiplier, int *shift, ct_err *err);

/* Defaults for w: zero points 0, clamp to the output type's range, residual
 * scale 1, every pointer NULL. */
void quant_init(ct_quant *q, const ct_workload *w);

/* CT_OK when q holds every value w's epilogue needs, each in range;
 * CT_ERR_INVALID_ARG naming the field otherwise. q may be NULL only when w
 * has no params (workload_has_params). */
ct_status quant_check(const ct_workload *w, const ct_quant *q, ct_err *err);

/* Words (int32) of w's params block: CTQ_HEADER + 4 x round4(K), and for
 * a channels-last layer with a data zero point and padding its border
 * classes' corrections (core/zpad.cuh), quant_zpad_classes(w) x round4(K)
 * more. With a fused pointwise convolution (pre_c) three parts, each
 * 16-byte aligned: the block of w's own convolution (workload_main), at
 * quant_pre_offset the pointwise convolution's block (workload_pre), and at
 * quant_pre_weights_offset its weights, c rows of pre_c bytes, each padded
 * with zeros to quant_pre_row_bytes (a multiple of QUANT_PRE_ROW_ALIGN:
 * whole k-steps of an int8 mma). */
size_t quant_params_words(const ct_workload *w);
#define QUANT_PRE_ROW_ALIGN 32
size_t quant_pre_offset(const ct_workload *w);
size_t quant_pre_weights_offset(const ct_workload *w);
size_t quant_pre_row_bytes(const ct_workload *w);

/* The border classes whose corrections w's params block carries
 * (core/zpad.cuh): 0 unless w is channels-last, groups 1, with a data zero
 * point and padding, and has at most CTZ_MAX_CLASSES of them. */
long quant_zpad_classes(const ct_workload *w);

/* Fill the border classes' corrections of params (after quant_params,
 * which zeroes them) from w's weights in OHWI / ODHWI, w's layout: zx x
 * the sum of channel k's weights over the taps a class's pixels read
 * outside the input. Nothing where quant_zpad_classes(w) is 0. q checked.
 * Cost: one pass over the weights, then K x taps per class. */
ct_status quant_zpad_fill(const ct_workload *w, const ct_quant *q, const int8_t *weights,
                          int32_t *params, ct_err *err);

/* Per-output-channel sums of the weights (K values) from weights in w's
 * layout: plain OIHW, packed OIHW4o4i or channels-last OHWI. */
void quant_weight_sums(const ct_workload *w, const int8_t *weights, int32_t *sums);

/* Fold q and the weight sums into params (quant_params_words). q checked.
 * With pre_c, weight_sums are the main convolution's; the pointwise one's
 * come from q->pre_weights here. */
ct_status quant_params(const ct_workload *w, const ct_quant *q, const int32_t *weight_sums,
                       int32_t *params, ct_err *err);

/* The raw form for the GPU reference, of w's own convolution (a fused
 * pointwise one's is quant_raw of workload_pre and q->pre), QRAW_HEADER + 4
 * x K words:
 * [zx, zy, lo, hi, residual mult, residual shift, residual zp, flags,
 * the onnx block (CTQO_WORDS, core/quant.cuh), 0] then bias[K],
 * zw[K], mult[K], shift[K] (zeros where w has none; a per-tensor
 * multiplier repeated). flags: QRAW_ONNX_FLAG with onnx rounding, whose
 * mult is the float scale's bits (shift 0, the residual's words 0). q
 * checked. */
#define QRAW_HEADER    16
#define QRAW_FLAGS     7
#define QRAW_ONNX      8
#define QRAW_ONNX_FLAG 1
size_t quant_raw_words(const ct_workload *w);
ct_status quant_raw(const ct_workload *w, const ct_quant *q, int32_t *raw, ct_err *err);

/* The onnx block of w and q (CTQO_WORDS words: core/quant.cuh), as
 * the params block and the raw form carry it: all zero unless w has onnx
 * rounding. QLinearAdd's fixed part f is computed here and nowhere else. q
 * checked. */
void quant_onnx_block(const ct_workload *w, const ct_quant *q, int32_t *block);

/* Random values for w (reproducible from seed): zero points over their
 * whole ranges, biases up to +-2^20, scales that put the typical output
 * inside the clamp, clamps that are ReLU half of the time; with onnx
 * rounding half the scales powers of two (exact ties) and random mid_*
 * values and Add order. The arrays live in s; s->q points at them. Owned:
 * quant_store_free. */
typedef struct quant_store {
  ct_quant q;
  int32_t *zw, *bias;
  float *scale;
  /* with pre_c: the pointwise convolution's values and weights (q.pre,
   * q.pre_weights point at them) */
  struct quant_store *pre;
  int8_t *pre_weights;
} quant_store;
ct_status quant_random(const ct_workload *w, uint64_t seed, quant_store *s, ct_err *err);
void quant_store_free(quant_store *s);

/* Epilogue values by workload: what a tuning measures with instead of
 * quant_random's, so that a model's trials run the epilogue forms the
 * model serves (a form is chosen by the values, not the key: the seeded
 * forms by the biases, scales and the clamp's top, quant_onnx_block; the
 * borrow-free clamp by its bottom). Each entry holds a workload's key and a
 * borrowed ct_quant (its arrays the caller's, alive while the table is
 * used). Add and find are linear in the entries: a model has tens. */
typedef struct quant_entry {
  char key[CT_KEY_MAX];
  const ct_quant *q;
} quant_entry;
typedef struct quant_table {
  int n, cap;
  quant_entry *e;
} quant_table;

/* Add q as w's values (q checked against w: CT_ERR_INVALID_ARG naming the
 * field), and for a plain NCHW / NCDHW w as those of its packed form too
 * (what the tuner tunes for it; not where packing pads K: q has K
 * values). The first values added for a key stay: *added says whether w's
 * were new (may be NULL). CT_ERR_NO_MEMORY leaves the table as it was. */
ct_status quant_table_add(quant_table *t, const ct_workload *w, const ct_quant *q, int *added,
                          ct_err *err);

/* w's values, or NULL when t is NULL or has none for w's key. */
const ct_quant *quant_table_find(const quant_table *t, const ct_workload *w);

/* Free the entries (not the values); NULL is accepted. */
void quant_table_free(quant_table *t);

#endif
