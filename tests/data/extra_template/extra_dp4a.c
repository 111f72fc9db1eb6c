/*
 * extra_dp4a.c: the descriptor of the throwaway template conv2d_extra_dp4a
 * (test builds only: test_templates_extra compiles templates/registry.c
 * with -DCT_EXTRA_TEMPLATES=tpl_extra_dp4a). Only the public template.h
 * API: every hook defers to the registered conv2d_nchw4c_dp4a, the source
 * is conv2d_extra_dp4a.cu, embedded beside the real ones by that target.
 */
#include "templates/template.h"

extern const template_desc tpl_extra_dp4a;

static const template_desc *real(void) {
  return template_find("conv2d_nchw4c_dp4a");
}

static int x_supports(const ct_workload *w, char *why) {
  return real()->supports(w, why);
}

static ct_status x_space(const ct_workload *w, space *s, ct_err *err) {
  return real()->space(w, s, err);
}

static int x_valid(const ct_workload *w, const space *s, const config *c, const arch *a,
                   char *why) {
  return real()->valid(w, s, c, a, why);
}

static ct_status x_instance(const ct_workload *w, const space *s, const config *c, const arch *a,
                            instance *inst, ct_err *err) {
  return real()->instance(w, s, c, a, inst, err);
}

static int x_describe(const ct_workload *w, const space *s, const config *c, float *out, int max) {
  return real()->describe ? real()->describe(w, s, c, out, max) : 0;
}

const template_desc tpl_extra_dp4a = {
    .name = "conv2d_extra_dp4a",
    .source = "conv2d_extra_dp4a.cu",
    .op = CT_OP_CONV2D,
    .layout = CT_LAYOUT_NCHW4C,
    .supports = x_supports,
    .space = x_space,
    .valid = x_valid,
    .instance = x_instance,
    .describe = x_describe,
};
