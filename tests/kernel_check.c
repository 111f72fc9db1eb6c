/*
 * kernel_check.c: the template families' shared test loops (kernel_check.h).
 */
#include "tests/kernel_check.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/quant.cuh"
#include "core/quant.h"
#include "core/reference.h"
#include "gpu/nvrtc.h"

ct_workload dw_shape(int d3, int n, int c, int m, int in, int ker, int str, int pad) {
  ct_workload w;
  workload_init(&w, d3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NHWC;
  w.n = n, w.c = c, w.k = c * m, w.groups = c;
  for (int i = 0; i < (d3 ? 3 : 2); i++) {
    w.in[i] = in, w.kernel[i] = ker, w.stride[i] = str;
    w.pad_before[i] = w.pad_after[i] = pad;
  }
  return w;
}

void dw_epilogue(ct_workload *w, int e) {
  switch (e % 4) {
  case 1:
    w->out_type = CT_DTYPE_INT8, w->epi.bias = 1, w->epi.scale = CT_SCALE_CHANNEL;
    w->epi.residual = 1;
    break;
  case 2:
    w->data_type = w->out_type = CT_DTYPE_UINT8;
    w->epi.data_zero_point = w->epi.bias = w->epi.residual = 1;
    break;
  case 3:
    w->out_type = CT_DTYPE_INT8, w->epi.rounding = CT_ROUND_ONNX, w->epi.residual = 1;
    w->epi.data_zero_point = 1;
    break;
  default:
    w->epi.bias = 1;
    break;
  }
}

void emulated_store(const ct_workload *w, const int32_t *params, long o, long k, int32_t v,
                    const unsigned char *res, void *out, int *writes) {
  writes[o]++;
  if (w->out_type == CT_DTYPE_INT32) {
    ((int32_t *)out)[o] = v;
    return;
  }
  const int kp = (int)((w->k + 3) / 4 * 4);
  ((unsigned char *)out)[o] = (unsigned char)ctq_requant_lane(
      params, kp, (int)k, v, res ? res[o] : 0, w->epi.scale == CT_SCALE_CHANNEL,
      w->out_type == CT_DTYPE_UINT8, w->epi.residual, w->epi.rounding == CT_ROUND_ONNX);
}

void emulations_match(const tpl_family *f, int i, int draws, unsigned seed) {
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  a.sm_count = 132;
  rng r;
  rng_seed(&r, seed + (unsigned)i);
  for (int d = 0; d < draws; d++) {
    ct_workload w = f->shape(i);
    f->epilogue(&w, i + d);
    const template_desc *tpl = f->tpl_of(&w);
    char why[TEMPLATE_WHY_MAX];
    ct_err err = {0};
    ck_assert_msg(tpl->supports(&w, why), "case %d: %s", i, why);
    ck_assert_msg(workload_validate(&w, &err) == CT_OK, "case %d: %s", i, err.msg);
    space sp;
    space_init(&sp);
    ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
    config c;
    if (d == 0) {
      ck_assert_msg(tpl->preferred(&w, &sp, &a, &c), "case %d: no preferred config", i);
      ck_assert(tpl->valid(&w, &sp, &c, &a, NULL));
    } else {
      ck_assert_int_eq(template_sample(tpl, &w, &sp, &a, &r, 1000000, &c, NULL), CT_OK);
    }
    const long nx = workload_data_elems(&w), nw = workload_weight_elems(&w);
    const long no = workload_out_elems(&w);
    const size_t ob = workload_out_elem_bytes(&w);
    unsigned char *x = malloc(nx), *res = malloc(no);
    signed char *wt = malloc(nw);
    void *ref = malloc(no * ob), *got = malloc(no * ob);
    int *writes = calloc(no, sizeof *writes);
    ck_assert(x && res && wt && ref && got && writes);
    /* data and weights over their whole ranges */
    for (long j = 0; j < nx; j++) x[j] = (unsigned char)rng_next(&r);
    for (long j = 0; j < nw; j++) wt[j] = (signed char)rng_next(&r);
    for (long j = 0; j < no; j++) res[j] = (unsigned char)rng_next(&r);
    quant_store qs;
    memset(&qs, 0, sizeof qs);
    ck_assert_int_eq(quant_random(&w, 100 * seed + 16 * (unsigned)i + (unsigned)d, &qs, &err),
                     CT_OK);
    const ct_quant *q = workload_has_params(&w) ? &qs.q : NULL;
    int32_t *params = calloc(quant_params_words(&w) + 16, sizeof *params);
    int32_t *sums = malloc(w.k * sizeof *sums);
    ck_assert(params && sums);
    quant_weight_sums(&w, (const int8_t *)wt, sums);
    if (q) ck_assert_msg(quant_params(&w, q, sums, params, &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(reference_qconv(&w, q, x, (const int8_t *)wt, w.epi.residual ? res : NULL, ref,
                                  &err) == CT_OK,
                  "%s", err.msg);
    long bad = 0;
    f->emulate(&w, &sp, &c, x, wt, params, w.epi.residual ? res : NULL, got, writes, &bad, &r);
    char text[512];
    space_config_str(&sp, &c, text, sizeof text);
    ck_assert_msg(bad == 0, "case %d %s: %ld %s", i, text, bad, f->bad_reads);
    for (long j = 0; j < no; j++) {
      ck_assert_msg(writes[j] == 1, "case %d %s: output %ld written %d times", i, text, j,
                    writes[j]);
      ck_assert_msg(memcmp((char *)got + j * ob, (char *)ref + j * ob, ob) == 0,
                    "case %d epilogue %d %s: output %ld differs", i, (i + d) % 4, text, j);
    }
    free(x), free(res), free(wt), free(ref), free(got), free(writes), free(params), free(sums);
    quant_store_free(&qs);
    space_free(&sp);
  }
}

void configs_compile(const tpl_family *f, int i, int per, unsigned seed, int arch_step,
                     int no_spills, const char *must_option) {
  static const char *const archs[] = {"sm_90", "sm_80"};
  rng r;
  rng_seed(&r, seed + (unsigned)i);
  for (int ai = 0; ai < 2; ai++) {
    arch a;
    ck_assert_int_eq(arch_from_name(archs[ai], &a, NULL), CT_OK);
    a.sm_count = ai ? 108 : 132;
    for (int d = 0; d < per; d++) {
      ct_workload w = f->shape(i);
      f->epilogue(&w, d + arch_step * ai + i);
      const template_desc *tpl = f->tpl_of(&w);
      space sp;
      space_init(&sp);
      ck_assert_int_eq(tpl->space(&w, &sp, NULL), CT_OK);
      config c;
      if (d == 0)
        ck_assert(tpl->preferred(&w, &sp, &a, &c));
      else
        ck_assert_int_eq(template_sample(tpl, &w, &sp, &a, &r, 1000000, &c, NULL), CT_OK);
      instance inst;
      ct_err err = {0};
      ck_assert_msg(instance_make(tpl, &w, &sp, &c, &a, &inst, &err) == CT_OK, "%s", err.msg);
      if (must_option) {
        int n = 0;
        for (int o = 0; o < inst.n_options; o++) n += !strcmp(inst.options[o], must_option);
        ck_assert_int_eq(n, 1);
      }
      cubin cb;
      char text[512];
      const ct_status st = nvrtc_compile(&inst, &a, &cb, &err);
      ck_assert_msg(st == CT_OK && cb.size > 0, "case %d %s %s: %s\n%s", i, archs[ai],
                    space_config_str(&sp, &c, text, sizeof text), err.msg, cb.log ? cb.log : "");
      if (no_spills)
        ck_assert_msg(!cb.log || !strstr(cb.log, "stack frame"), "case %d %s: spills\n%s", i,
                      space_config_str(&sp, &c, text, sizeof text), cb.log);
      cubin_free(&cb);
      space_free(&sp);
    }
  }
}

void invalid_point_fails_to_compile(const ct_workload *w, const char *knob_name, int value,
                                    const char *why_part, const char *log_part,
                                    const template_desc *tpl) {
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  space sp;
  space_init(&sp);
  ck_assert_int_eq(tpl->space(w, &sp, NULL), CT_OK);
  config c;
  ck_assert(tpl->preferred(w, &sp, &a, &c));
  ck_assert(template_set_choice(&sp, &c, knob_name, value));
  char why[TEMPLATE_WHY_MAX];
  ck_assert_int_eq(tpl->valid(w, &sp, &c, &a, why), 0);
  ck_assert_ptr_nonnull(strstr(why, why_part));
  instance inst;
  memset(&inst, 0, sizeof inst);
  inst.tpl = tpl;
  ck_assert_int_eq(tpl->instance(w, &sp, &c, &a, &inst, NULL), CT_OK);
  cubin cb;
  ct_err err = {0};
  ck_assert_int_eq(nvrtc_compile(&inst, &a, &cb, &err), CT_ERR_NVRTC);
  ck_assert_ptr_nonnull(strstr(cb.log, log_part));
  cubin_free(&cb);
  space_free(&sp);
}

long instance_macro(const instance *inst, const char *name) {
  const size_t n = strlen(name);
  for (int i = 0; i < inst->n_options; i++) {
    const char *o = inst->options[i];
    if (!strncmp(o, "-D", 2) && !strncmp(o + 2, name, n) && o[2 + n] == '=') return atol(o + 3 + n);
  }
  ck_abort_msg("no -D%s in the instance", name);
  return 0;
}
