/*
 * registry.c: the list of templates (template_all, template_find). Apart
 * from template.c, which every template's version hashes, so that adding a
 * template does not retire the records of the others.
 */
#include <string.h>

#include "templates/template.h"

extern const template_desc tpl_conv2d_nchw4c_dp4a;
extern const template_desc tpl_conv3d_ncdhw4c_dp4a;
extern const template_desc tpl_conv2d_nchw4c_mma;
extern const template_desc tpl_conv3d_ncdhw4c_mma;
extern const template_desc tpl_conv2d_nchw4c_wgmma;
extern const template_desc tpl_conv3d_ncdhw4c_wgmma;
extern const template_desc tpl_conv2d_nhwc_wgmma;
extern const template_desc tpl_conv3d_ndhwc_wgmma;
extern const template_desc tpl_conv2d_nhwc_wgmma_stem;
extern const template_desc tpl_conv3d_ndhwc_wgmma_stem;
extern const template_desc tpl_conv2d_nhwc_mma;
extern const template_desc tpl_conv3d_ndhwc_mma;
extern const template_desc tpl_conv2d_nhwc_grouped;
extern const template_desc tpl_conv3d_ndhwc_grouped;
extern const template_desc tpl_conv2d_nchw4c_grouped;
extern const template_desc tpl_conv3d_ncdhw4c_grouped;
extern const template_desc tpl_conv2d_nhwc_dw;
extern const template_desc tpl_conv3d_ndhwc_dw;
extern const template_desc tpl_conv2d_nhwc_dw_mma;
extern const template_desc tpl_conv3d_ndhwc_dw_mma;
extern const template_desc tpl_conv2d_nhwc_grouped_mma;
extern const template_desc tpl_conv3d_ndhwc_grouped_mma;
extern const template_desc tpl_conv2d_nhwc_pw_mma;
extern const template_desc tpl_conv3d_ndhwc_pw_mma;
extern const template_desc tpl_conv2d_nhwc_pwdw;
#ifdef CT_EXTRA_TEMPLATES
/* Test builds only: -DCT_EXTRA_TEMPLATES=tpl_x appends the descriptor tpl_x
 * (test_templates_extra: a throwaway template that the registry-driven
 * tests must pick up with no edit to a test list). */
extern const template_desc CT_EXTRA_TEMPLATES;
#endif

/* The tensor-core templates first: where nothing is tuned, the dispatch
 * library's default comes from the first template that has a valid one on
 * the device (the mma ones need sm_80; wgmma exactly sm_90, and runs only
 * layers with C % 32 == 0, so mma's default serves every layer). The
 * channels-last templates serve the nhwc layout only; of the stems (C not
 * a multiple of 16), the wgmma ones give the default on sm_90, the mma
 * ones elsewhere. Depthwise layers take the depthwise CUDA-core family's
 * default, and grouped ones the grouped mma family's, before mma's: on an
 * H200 at batch 32 mma's default ran the 22 2D depthwise layers of the
 * shipped sets 5-42x slower than conv2d_nhwc_dw's (CSN's 7 3D ones
 * 16-91x) and ResNeXt's 7 grouped layers 3.3-22x slower than
 * conv2d_nhwc_grouped_mma's (h200-issue35/defaults-d3aad6f). On sm_90 no
 * dense layer changes hands: the grouped mma family's (C 8, 16, 32) are
 * the wgmma templates' and stems'. On sm_80, where those have no valid
 * config, a dense layer of 8 channels now gets the grouped mma family's
 * default instead of mma's (not measured). Within a layout the order is
 * also tune_plan's, so the order of a model's warm-up rounds. */
static const template_desc *const all[] = {&tpl_conv2d_nchw4c_mma,
                                           &tpl_conv3d_ncdhw4c_mma,
                                           &tpl_conv2d_nchw4c_wgmma,
                                           &tpl_conv3d_ncdhw4c_wgmma,
                                           &tpl_conv2d_nchw4c_dp4a,
                                           &tpl_conv3d_ncdhw4c_dp4a,
                                           &tpl_conv2d_nhwc_wgmma,
                                           &tpl_conv3d_ndhwc_wgmma,
                                           &tpl_conv2d_nhwc_wgmma_stem,
                                           &tpl_conv3d_ndhwc_wgmma_stem,
                                           &tpl_conv2d_nhwc_dw,
                                           &tpl_conv3d_ndhwc_dw,
                                           &tpl_conv2d_nhwc_grouped_mma,
                                           &tpl_conv3d_ndhwc_grouped_mma,
                                           &tpl_conv2d_nhwc_mma,
                                           &tpl_conv3d_ndhwc_mma,
                                           &tpl_conv2d_nhwc_grouped,
                                           &tpl_conv3d_ndhwc_grouped,
                                           &tpl_conv2d_nchw4c_grouped,
                                           &tpl_conv3d_ncdhw4c_grouped,
                                           &tpl_conv2d_nhwc_dw_mma,
                                           &tpl_conv3d_ndhwc_dw_mma,
                                           &tpl_conv2d_nhwc_pw_mma,
                                           &tpl_conv3d_ndhwc_pw_mma,
                                           &tpl_conv2d_nhwc_pwdw,
#ifdef CT_EXTRA_TEMPLATES
                                           &CT_EXTRA_TEMPLATES,
#endif
                                           NULL};

const template_desc *const *template_all(void) {
  return all;
}

const template_desc *template_find(const char *name) {
  for (int i = 0; name && all[i]; i++)
    if (strcmp(all[i]->name, name) == 0) return all[i];
  return NULL;
}
