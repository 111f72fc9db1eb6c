/*
 * test_templates.c: the dp4a templates on the CPU: spaces for every layer of
 * the shipped sets, validity decided before compiling (with the reason),
 * index <-> config <-> JSON round trips of random valid configs, and those
 * configs compiled to sm_90 cubins by NVRTC (no GPU needed), the layers
 * taking every epilogue variant in turn (dtypes, zero points, bias,
 * per-channel scale, residual, depth_to_space in both orders, onnx
 * rounding with and without a residual); and the runner's GPU reference
 * (ref_conv.cu) compiled too.
 *
 * The compile check (case compile) is the costly part (NVRTC takes 0.1-1 s
 * per config on a CI core). It loops over the registry (template_all), so
 * a new template is drawn with no edit here. Its draws per template come
 * from the first argument: CMake passes a bounded sample in test_templates
 * and the full sweep in test_templates_sweep (label sweep, run on demand:
 * ctest -L sweep). The test forks one compiler process per core, as the
 * tuner's builder does.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/wlset.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"
#include "tests/util.h"

static long n_compile = 300;

/* The workloads of the sets a template runs, in its layout (packed, or
 * channels-last): the dense sets' layers for the templates of dense
 * layers, and the grouped sets' grouped layers (issue 35) for whichever
 * template supports them (the grouped templates run only those); for the
 * pointwise templates, the layers of every set that they run. */
static wlset *load_sets(const template_desc *tpl, int batch) {
  const char *names2[] = {"resnet50",           "resnet18",    "mobilenetv2",
                          "efficientnet_b0_dw", "resnext50_g", NULL};
  const char *names3[] = {"resnet3d18", "csn_dw3d", "resnext3d_g", NULL};
  const char **names = tpl->op == CT_OP_CONV2D ? names2 : names3;
  const int grouped_only = strstr(tpl->name, "grouped") != NULL || strstr(tpl->name, "_dw") != NULL;
  /* the pointwise templates: every set's layers they run (dense 1x1
   * without padding) */
  const int pointwise_only = strstr(tpl->name, "_pw_") != NULL;
  /* the fused pointwise + depthwise template: each depthwise layer of
   * multiplier 1 with an expansion before it (C / 6 channels, as the
   * mobile nets' blocks), 8-bit output and ONNX's rounding, as a QDQ
   * model gives them */
  const int fused_only = strstr(tpl->name, "_pwdw") != NULL;
  wlset *all = calloc(1, sizeof *all);
  ck_assert_ptr_nonnull(all);
  all->items = calloc(160, sizeof *all->items);
  for (int i = 0; names[i]; i++) {
    wlset *s = NULL;
    ct_err err = {0};
    ck_assert_msg(wlset_load_named(names[i], batch, &s, &err) == CT_OK, "%s", err.msg);
    for (int j = 0; j < s->n_items; j++) {
      ct_workload w;
      if (tpl->layout == CT_LAYOUT_NHWC) {
        w = s->items[j].w;
        w.layout = CT_LAYOUT_NHWC;
      } else {
        workload_packed(&s->items[j].w, &w);
      }
      /* the new sets' dense layers (MobileNet's pointwise ones) stay out:
       * they are the dense templates' sets' kind, and their checks below
       * are written for ResNet's */
      const int new_set = strcmp(names[i], "resnet50") && strcmp(names[i], "resnet18") &&
                          strcmp(names[i], "resnet3d18");
      if (fused_only) {
        if (w.layout != CT_LAYOUT_NHWC || w.groups != w.c || w.k != w.c) continue;
        w.out_type = w.data_type;
        w.epi.bias = 1;
        w.epi.scale = CT_SCALE_CHANNEL;
        w.epi.rounding = CT_ROUND_ONNX;
        w.pre_c = (w.c / 6 + 7) / 8 * 8;
        w.pre_data_type = w.data_type;
        w.pre_epi = w.epi;
      }
      if (fused_only       ? !tpl->supports(&w, NULL)
          : pointwise_only ? !tpl->supports(&w, NULL)
          : w.groups > 1   ? !tpl->supports(&w, NULL)
                           : grouped_only || new_set)
        continue;
      ck_assert_int_lt(all->n_items, 160);
      wlset_item *it = &all->items[all->n_items++];
      it->w = w;
      it->name = s->items[j].name;
      s->items[j].name = NULL;
    }
    wlset_free(s);
  }
  return all;
}

/* The config of sp that the JSON text names (the test's own: it must parse). */
static void config_of(const space *sp, const char *json, config *c) {
  cJSON *j = cJSON_Parse(json);
  ct_err err = {0};
  ck_assert_ptr_nonnull(j);
  ck_assert_msg(space_config_from_json(sp, j, c, &err) == CT_OK, "%s: %s", json, err.msg);
  cJSON_Delete(j);
}

/* inst compiles, and ptxas's log has no warning with code (e.g. "C75":
 * wgmma serialized or a wait injected). label names the config. Not in a
 * quick run (CT_TEST_QUICK: the sanitizer pass, where NVRTC is not
 * instrumented and its log is the normal pass's): the configs' host-side
 * checks before it still run there. */
static void compiles_without(const instance *inst, const arch *a, const char *label,
                             const char *code) {
  if (test_quick()) return;
  cubin cb;
  ct_err err = {0};
  ck_assert_msg(nvrtc_compile(inst, a, &cb, &err) == CT_OK, "%s: %s\n%s", label, err.msg, cb.log);
  ck_assert_msg(!cb.log || !strstr(cb.log, code), "%s: ptxas %s:\n%s", label, code, cb.log);
  cubin_free(&cb);
}

START_TEST(templates_are_registered_with_versions) {
  const template_desc *const *all = template_all();
  int n = 0;
  for (; all[n]; n++) {
    ck_assert_ptr_eq(template_find(all[n]->name), all[n]);
    /* `convtune list` gives the name a column of 24 */
    ck_assert_uint_le(strlen(all[n]->name), 24);
    ck_assert_ptr_nonnull(template_source(all[n]));
    const char *v = template_version(all[n]);
    ck_assert_uint_eq(strlen(v), 16);
    ck_assert_uint_eq(strspn(v, "0123456789abcdef"), 16);
  }
  ck_assert_int_ge(n, 12); /* the twelve shipped (named below), and a test build's extras */
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      ck_assert_str_ne(template_version(all[i]), template_version(all[j]));
  ck_assert_ptr_nonnull(template_find("conv2d_nchw4c_mma"));
  ck_assert_ptr_nonnull(template_find("conv3d_ncdhw4c_mma"));
  ck_assert_ptr_nonnull(template_find("conv2d_nchw4c_wgmma"));
  ck_assert_ptr_nonnull(template_find("conv3d_ncdhw4c_wgmma"));
  ck_assert_int_eq(template_find("conv2d_nhwc_wgmma")->layout, CT_LAYOUT_NHWC);
  ck_assert_int_eq(template_find("conv3d_ndhwc_wgmma")->layout, CT_LAYOUT_NHWC);
  ck_assert_int_eq(template_find("conv2d_nhwc_mma")->layout, CT_LAYOUT_NHWC);
  ck_assert_int_eq(template_find("conv3d_ndhwc_mma")->layout, CT_LAYOUT_NHWC);
  ck_assert_int_eq(template_find("conv2d_nhwc_wgmma_stem")->layout, CT_LAYOUT_NHWC);
  ck_assert_int_eq(template_find("conv3d_ndhwc_wgmma_stem")->layout, CT_LAYOUT_NHWC);
  ck_assert_ptr_null(template_find("nope"));
  const char *const *names, *const *sources;
  int nh = template_headers(&names, &sources);
  ck_assert_int_ge(nh, 1);
  ck_assert_str_eq(names[0], "conv_dp4a.cuh");
  ck_assert_ptr_nonnull(strstr(sources[0], "__dp4a"));
}
END_TEST

START_TEST(spaces_cover_every_layer_and_are_large) {
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  for (int t = 0; template_all()[t]; t++) {
    const template_desc *tpl = template_all()[t];
    wlset *s = load_sets(tpl, 1);
    uint64_t largest = 0;
    for (int i = 0; i < s->n_items; i++) {
      space sp;
      ct_err err = {0};
      const ct_workload *w = &s->items[i].w;
      const int pw = strstr(tpl->name, "_pw_mma") != NULL;
      const int nhwc_mma =
          tpl->layout == CT_LAYOUT_NHWC && strstr(tpl->name, "_mma") != NULL && !pw;
      const int nhwc_stem = tpl->layout == CT_LAYOUT_NHWC && strstr(tpl->name, "_stem") != NULL;
      if (tpl->layout == CT_LAYOUT_NHWC && w->groups == 1 && !pw &&
          (nhwc_mma || nhwc_stem ? w->c % 16 == 0 : w->c % 16 != 0)) {
        /* wgmma: all but the stems (C not a multiple of 16); the stem
         * templates (mma, wgmma_stem): the stems only */
        ck_assert_int_eq(template_space(tpl, w, &sp, &err), CT_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(err.msg, "multiple of 16"));
        continue;
      }
      if (strstr(tpl->name, "_wgmma") && tpl->layout != CT_LAYOUT_NHWC && w->c % 32) {
        /* the stems: C not a multiple of 32 */
        ck_assert_int_eq(template_space(tpl, w, &sp, &err), CT_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(err.msg, "multiple of 32"));
        continue;
      }
      ck_assert_msg(template_space(tpl, w, &sp, &err) == CT_OK, "%s: %s", s->items[i].name,
                    err.msg);
      if (pw) {
        /* the pointwise templates: a tile of pixels, the block's n-tiles,
         * the stages */
        ck_assert_int_ge(space_find(&sp, "m_tiles"), 0);
        ck_assert_int_ge(space_find(&sp, "n_tiles"), 0);
        ck_assert_int_ge(space_find(&sp, "stages"), 0);
      } else if (strstr(tpl->name, "_dw_mma")) {
        /* the depthwise mma templates: a pixel tile, n-tiles, warps */
        ck_assert_int_ge(space_find(&sp, "tile_w"), 0);
        ck_assert_int_ge(space_find(&sp, "n_tiles"), 0);
        ck_assert_int_ge(space_find(&sp, "m_unroll"), 0);
      } else if (strstr(tpl->name, "_pwdw")) {
        /* the fused template: an output tile, the block's channels, a
         * thread's pixels */
        ck_assert_int_ge(space_find(&sp, "tile_h"), 0);
        ck_assert_int_ge(space_find(&sp, "tile_w"), 0);
        ck_assert_int_ge(space_find(&sp, "cb8"), 0);
        ck_assert_int_ge(space_find(&sp, "pixt"), 0);
      } else if (strstr(tpl->name, "_dw")) {
        /* the depthwise templates: a thread's channels and the block's */
        ck_assert_int_ge(space_find(&sp, "chans"), 0);
        ck_assert_int_ge(space_find(&sp, "block_c"), 0);
      } else if (strstr(tpl->name, "_grouped")) {
        /* the grouped templates: a spatial tile and the channels per block */
        ck_assert_int_ge(space_find(&sp, "tile_w"), 0);
        ck_assert_int_ge(space_find(&sp, "tile_h"), 0);
      } else if (nhwc_mma) {
        ck_assert_int_ge(space_find(&sp, "tile_w"), 0);
        ck_assert_int_ge(space_find(&sp, "tile_h"), 0);
        ck_assert_int_ge(space_find(&sp, "warp_m16"), 0);
      } else if (nhwc_stem) {
        ck_assert_int_ge(space_find(&sp, "block_m"), 0);
        ck_assert_int_ge(space_find(&sp, "a_buffers"), 0);
        ck_assert_int_ge(space_find(&sp, "warpgroups"), 0);
      } else if (tpl->layout == CT_LAYOUT_NHWC) {
        ck_assert_int_ge(space_find(&sp, "block_n"), 0);
        ck_assert_int_ge(space_find(&sp, "rows_per_wg"), 0);
        ck_assert_int_ge(space_find(&sp, "split_k"), 0);
      } else if (strstr(tpl->name, "_wgmma")) {
        ck_assert_int_ge(space_find(&sp, "block_n"), 0);
        ck_assert_int_ge(space_find(&sp, "warpgroups"), 0);
        ck_assert_int_ge(space_find(&sp, "tile_h"), 0);
        ck_assert_int_ge(space_find(&sp, "split_k"), 0);
        ck_assert_int_eq(space_find(&sp, "tile_d") >= 0, tpl->op == CT_OP_CONV3D);
        /* TMA where the rows are 16-byte multiples and W has unit stride */
        int last = tpl->op == CT_OP_CONV3D ? 2 : 1;
        ck_assert_int_eq(space_find(&sp, "tma") >= 0, w->in[last] % 4 == 0 && w->stride[last] == 1);
      } else if (strstr(tpl->name, "_mma")) {
        ck_assert_int_ge(space_find(&sp, "block_m"), 0);
        ck_assert_int_ge(space_find(&sp, "split_k"), 0);
        ck_assert_int_ge(space_find(&sp, "smem_layout"), 0);
        /* 16-byte data loads only where 4 positions are contiguous */
        int unit = w->kernel[0] == 1 && w->kernel[1] == 1 && w->stride[0] == 1 &&
                   w->stride[1] == 1 && w->pad_before[0] == 0 && w->pad_before[1] == 0;
        if (!unit) ck_assert_int_lt(space_find(&sp, "a_vec"), 0);
      } else {
        ck_assert_int_ge(space_find(&sp, "tile_f"), 0);
        ck_assert_int_ge(space_find(&sp, "reorder_inner"), 0);
        ck_assert_int_eq(space_find(&sp, "tile_d") >= 0, tpl->op == CT_OP_CONV3D);
        ck_assert_int_eq(space_find(&sp, "tile_rd") >= 0, tpl->op == CT_OP_CONV3D);
      }
      if (sp.size > largest) largest = sp.size;
      /* some valid config among 20000 uniform draws: template_sample stops
       * at the first (a valid share above zero, without drawing the rest) */
      rng r;
      rng_seed(&r, 7);
      config c;
      ck_assert_msg(template_sample(tpl, &s->items[i].w, &sp, &a, &r, 20000, &c, &err) == CT_OK,
                    "%s: %s", s->items[i].name, err.msg);
      space_free(&sp);
    }
    ck_assert_msg(largest > (strstr(tpl->name, "_grouped") || strstr(tpl->name, "_dw") ? 500ULL
                             : strstr(tpl->name, "_stem")                              ? 50ULL
                             : strstr(tpl->name, "_wgmma")                             ? 500ULL
                             : tpl->layout == CT_LAYOUT_NHWC                           ? 200ULL
                             : strstr(tpl->name, "_mma")                               ? 50000ULL
                                                         : 100000000ULL),
                  "%s: largest space %llu", tpl->name, (unsigned long long)largest);
    wlset_free(s);
  }
}
END_TEST

/* The fused template runs a pointwise conv fused into a depthwise one
 * (pre_c) and says why it refuses the rest; every other template refuses
 * pre_c, naming the one that runs it. */
START_TEST(fused_workloads_are_refused_with_the_reason) {
  const template_desc *pd = template_find("conv2d_nhwc_pwdw");
  ck_assert_ptr_nonnull(pd);
  ct_workload w;
  ct_err err = {0};
  ck_assert_int_eq(workload_from_key("conv2d-nhwc-i8.i8.i8-n2-c48-k48-14x14-r3x3-s1x1-p1x1.1x1-"
                                     "d1x1-bias-qc-onnx-g48-pre16.i8.bias.qc.onnx",
                                     &w, &err),
                   CT_OK);
  char why[TEMPLATE_WHY_MAX];
  ck_assert_msg(pd->supports(&w, why), "%s", why);
  for (int t = 0; template_all()[t]; t++)
    if (template_all()[t] != pd) {
      ck_assert(!template_all()[t]->supports(&w, why));
      ck_assert_ptr_nonnull(strstr(why, "_pwdw"));
    }
  static const struct {
    const char *key, *reason;
  } refused[] = {
      /* no pre stage: the depthwise templates' */
      {"conv2d-nhwc-i8.i8.i8-n2-c48-k48-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g48", "pre_c"},
      /* a dense conv after the expansion */
      {"conv2d-nhwc-i8.i8.i8-n2-c48-k48-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-pre16.i8.bias."
       "qc."
       "onnx",
       "depthwise"},
      {"conv2d-nhwc-i8.i8.i8-n2-c44-k44-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g44-pre16.i8."
       "bias.qc.onnx",
       "C must be a multiple of 8"},
      {"conv2d-nhwc-i8.i8.i8-n2-c48-k48-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g48-pre12.i8."
       "bias.qc.onnx",
       "pre_c must be a multiple of 8"},
      {"conv2d-nhwc-i8.i8.i8-n2-c48-k48-14x14-r9x9-s1x1-p4x4.4x4-d1x1-bias-qc-onnx-g48-pre16.i8."
       "bias.qc.onnx",
       "above 8 x 8"},
      {"conv2d-nhwc-i8.i8.i8-n2-c48-k48-14x14-r3x3-s1x1-p2x2.2x2-d2x2-bias-qc-onnx-g48-pre16.i8."
       "bias.qc.onnx",
       "dilation"},
      {"conv2d-nhwc-i8.i8.u8-n2-c48-k48-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g48-pre16.i8."
       "bias.qc.onnx",
       "the intermediate's"},
      {"conv2d-nhwc-i8.i8.i8-n2-c48-k48-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g48-pre16.i8."
       "bias."
       "qc",
       "rounding"},
      {"conv2d-nhwc-i8.i8.i8-n2-c48-k48-14x14-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-res-onnx-g48-pre16."
       "i8."
       "bias.qc.onnx",
       "residual"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    ck_assert_msg(workload_from_key(refused[i].key, &w, &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(!pd->supports(&w, why), "%s", refused[i].key);
    ck_assert_msg(strstr(why, refused[i].reason) != NULL, "%s: %s", refused[i].key, why);
  }
}
END_TEST

START_TEST(unsupported_workloads_are_refused) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.c = 8, w.k = 8, w.in[0] = w.in[1] = 8, w.kernel[0] = w.kernel[1] = 3;
  space sp;
  ct_err err = {0};
  /* plain layout */
  ck_assert_int_eq(template_space(template_find("conv2d_nchw4c_dp4a"), &w, &sp, &err),
                   CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "nchw4c"));
  w.layout = CT_LAYOUT_NCHW4C;
  ck_assert_int_eq(template_space(template_find("conv3d_ncdhw4c_dp4a"), &w, &sp, &err),
                   CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "conv3d"));
  /* the channels-last templates: their layout, C % 16, no weight zero point */
  const template_desc *nh = template_find("conv2d_nhwc_wgmma");
  ck_assert_int_eq(template_space(nh, &w, &sp, &err), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "nhwc"));
  w.layout = CT_LAYOUT_NHWC;
  w.c = 24;
  ck_assert_int_eq(template_space(nh, &w, &sp, &err), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "multiple of 16"));
  w.c = 32;
  w.epi.weight_zero_point = 1;
  ck_assert_int_eq(template_space(nh, &w, &sp, &err), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "weight zero points"));
  w.epi.weight_zero_point = 0;
  w.epi.data_zero_point = 1; /* with padding 0: TMA's zero fill is not the zero point */
  ck_assert_int_eq(template_space(nh, &w, &sp, &err), CT_OK);
  space_free(&sp);
  /* with padding: the params block corrects each border class */
  w.pad_before[0] = w.pad_after[0] = 1;
  ck_assert_int_eq(template_space(nh, &w, &sp, &err), CT_OK);
  space_free(&sp);
  { /* but not past CTZ_MAX_CLASSES of them: a 33x33 kernel padded 16 on 40x40, 33 x 33 */
    ct_workload b = w;
    b.in[0] = b.in[1] = 40, b.kernel[0] = b.kernel[1] = 33;
    b.pad_before[0] = b.pad_before[1] = b.pad_after[0] = b.pad_after[1] = 16;
    ck_assert_int_eq(template_space(nh, &b, &sp, &err), CT_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than 1024 border classes"));
  }
  /* the channels-last mma templates: C not a multiple of 16 (or any C with
   * groups or K % 8 != 0), any K, no dilation along W; a data zero point
   * with padding is theirs */
  const template_desc *nm = template_find("conv2d_nhwc_mma");
  ck_assert_int_eq(template_space(nm, &w, &sp, &err), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "conv2d_nhwc_wgmma"));
  w.c = 3;
  ck_assert_int_eq(template_space(nm, &w, &sp, &err), CT_OK);
  space_free(&sp);
  w.k = 12; /* any K (issue 35); the wgmma stems still need K % 8 */
  ck_assert_int_eq(template_space(nm, &w, &sp, &err), CT_OK);
  space_free(&sp);
  ck_assert_int_eq(template_space(template_find("conv2d_nhwc_wgmma_stem"), &w, &sp, &err),
                   CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "multiple of 8"));
  w.k = 8;
  w.dilation[1] = 2;
  ck_assert_int_eq(template_space(nm, &w, &sp, &err), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "dilation along W"));
  w.dilation[1] = 1;
  w.epi.weight_zero_point = 1;
  ck_assert_int_eq(template_space(nm, &w, &sp, &err), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "weight zero points"));
  w.epi.weight_zero_point = 0;
  ck_assert_int_eq(template_space(template_find("conv3d_ndhwc_mma"), &w, &sp, &err),
                   CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "conv3d"));
  w.layout = CT_LAYOUT_NCHW4C;
  w.c = 0;
  ck_assert_int_eq(template_space(template_find("conv2d_nchw4c_dp4a"), &w, &sp, &err),
                   CT_ERR_INVALID_WORKLOAD);
}
END_TEST

/* A fixed workload: ResNet-50's l1_3x3_64 at batch 1, packed. */
static void l1_3x3(ct_workload *w) {
  workload_init(w, CT_OP_CONV2D);
  w->layout = CT_LAYOUT_NCHW4C;
  w->c = w->k = 64;
  w->in[0] = w->in[1] = 56;
  w->kernel[0] = w->kernel[1] = 3;
  w->pad_before[0] = w->pad_before[1] = w->pad_after[0] = w->pad_after[1] = 1;
}

START_TEST(invalid_configs_are_rejected_before_compiling_with_the_reason) {
  const template_desc *tpl = template_find("conv2d_nchw4c_dp4a");
  ct_workload w;
  l1_3x3(&w);
  space sp;
  ck_assert_int_eq(template_space(tpl, &w, &sp, NULL), CT_OK);
  arch a90, a75;
  arch_from_name("sm_90", &a90, NULL);
  arch_from_name("sm_75", &a75, NULL);
  config c;
  instance inst;
  ct_err err = {0};
  char why[TEMPLATE_WHY_MAX];

  /* Candidate 0 of every split is [1, ..., 1, extent]: one thread a block. */
  memset(&c, 0, sizeof c);
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "threads per block"));
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a90, &inst, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "threads per block"));
  ck_assert_ptr_nonnull(strstr(err.msg, "tile_f=["));

  /* A whole 56x56 plane with all 16 input chunks in shared memory: 197 KB
   * fits an H200's 227 KB but not sm_75's 64 KB. */
  const char *big = "{\"tile_n\":[1,1,1,1],\"tile_f\":[4,1,4,1],\"tile_y\":[1,1,14,4],"
                    "\"tile_x\":[1,1,7,8],\"tile_rc\":[1,16],\"tile_ry\":[3,1],\"tile_rx\":[3,1],"
                    "\"reorder_inner\":[0,1,2],\"fuse_yx\":1,\"auto_unroll_max_step\":0,"
                    "\"unroll_explicit\":0}";
  config_of(&sp, big, &c);
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a90, why), "%s", why);
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a75, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "shared memory"));
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a90, &inst, &err), CT_OK);
  /* weights: 4 chunks x 16 input chunks of int4; data: 16 chunks x 56 x 56 (one kernel tap per
   * step) */
  ck_assert_uint_eq(inst.smem_bytes, 16 * 4 * 16 + 4 * 16 * 56 * 56);
  ck_assert_uint_eq(inst.block[0], 4 * 14 * 7);
  ck_assert_uint_eq(inst.grid[0], 1);
  ck_assert_uint_eq(inst.grid[1], 4);
  ck_assert_uint_eq(inst.grid[2], 1);

  /* Too many accumulators: 16 output chunks x 4 lanes x 7 x 7 inner. */
  config_of(&sp,
            "{\"tile_n\":[1,1,1,1],\"tile_f\":[1,1,1,16],\"tile_y\":[1,1,8,7],"
            "\"tile_x\":[1,1,8,7],\"tile_rc\":[16,1],\"tile_ry\":[3,1],\"tile_rx\":[3,1],"
            "\"reorder_inner\":[0,1,2],\"fuse_yx\":1,\"auto_unroll_max_step\":0,"
            "\"unroll_explicit\":0}",
            &c);
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a90, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "accumulators"));
  space_free(&sp);
}
END_TEST

START_TEST(a_point_that_slips_through_fails_to_compile_with_a_clear_log) {
  const template_desc *tpl = template_find("conv2d_nchw4c_dp4a");
  ct_workload w;
  l1_3x3(&w);
  space sp;
  ck_assert_int_eq(template_space(tpl, &w, &sp, NULL), CT_OK);
  arch a;
  arch_from_name("sm_90", &a, NULL);
  rng r;
  rng_seed(&r, 3);
  config c;
  ck_assert_int_eq(template_sample(tpl, &w, &sp, &a, &r, 100000, &c, NULL), CT_OK);
  instance inst;
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, NULL), CT_OK);
  /* Corrupt the thread count as a descriptor bug would. */
  for (int i = 0; i < inst.n_options; i++)
    if (!strncmp(inst.options[i], "-DCT_THREADS=", 13)) strcpy(inst.options[i], "-DCT_THREADS=33");
  cubin cb;
  ct_err err = {0};
  ck_assert_int_eq(nvrtc_compile(&inst, &a, &cb, &err), CT_ERR_NVRTC);
  ck_assert_msg(strstr(cb.log, "CT_THREADS does not match") != NULL, "log: %s", cb.log);
  cubin_free(&cb);
  space_free(&sp);
}
END_TEST

/* wgmma split-K: the splits of a tile are a cluster along grid z, the
 * pipeline's memory holds the partial accumulators, and a split that would
 * get no stage of the reduction is refused with the reason. */
START_TEST(wgmma_split_k_is_a_cluster_along_z) {
  const template_desc *tpl = template_find("conv2d_nchw4c_wgmma");
  ct_workload w; /* ResNet-50's l4_1x1_2048_512 at batch 16 */
  workload_init(&w, CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NCHW4C;
  w.n = 16, w.c = 2048, w.k = 512, w.in[0] = w.in[1] = 7;
  w.kernel[0] = w.kernel[1] = 1;
  space sp;
  ct_err err = {0};
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_ge(space_find(&sp, "split_k"), 0);
  arch a;
  arch_from_name("sm_90", &a, NULL);
  config c;
  char why[TEMPLATE_WHY_MAX];
  config_of(&sp,
            "{\"block_n\":128,\"block_k\":32,\"stages\":2,\"warpgroups\":2,"
            "\"tile_h\":8,\"split_k\":4}",
            &c);
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
  instance inst;
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
  /* 2 images of 8 x 8 positions (7 x 7 used) per tile: 8 x 4 tiles, 4 splits of 16 of
   * the 64 stages */
  ck_assert_uint_eq(inst.grid[0], 8);
  ck_assert_uint_eq(inst.grid[1], 4);
  ck_assert_uint_eq(inst.grid[2], 4);
  /* the partial sums (256 consumer threads x 64 words) outgrow the 2 stages */
  long pipe = 2L * (128 * 32 * 3 / 2 + 128 * 32), red = 256L * 64 * 4;
  ck_assert_int_gt(red, pipe);
  ck_assert_uint_eq(inst.smem_bytes, red + 16 * 2);
  cubin cb;
  ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s\n%s", err.msg, cb.log);
  ck_assert_uint_gt(cb.size, 0);
  cubin_free(&cb);
  space_free(&sp);

  /* one stage of the reduction (C = 32, 1x1): nothing to split */
  w.c = 32;
  ck_assert_int_eq(template_space(tpl, &w, &sp, &err), CT_OK);
  config_of(&sp,
            "{\"block_n\":64,\"block_k\":32,\"stages\":2,\"warpgroups\":1,"
            "\"tile_h\":1,\"split_k\":2}",
            &c);
  ck_assert_int_eq(tpl->valid(&w, &sp, &c, &a, why), 0);
  ck_assert_ptr_nonnull(strstr(why, "leaves a split empty"));
  space_free(&sp);
}
END_TEST

/* ResNet-50's l3_3x3_256 at batch 16 in nhwc (3136 output pixels, C = K = 256). */
static void nhwc_l3_3x3_256(ct_workload *w) {
  workload_init(w, CT_OP_CONV2D);
  w->layout = CT_LAYOUT_NHWC;
  w->n = 16, w->c = 256, w->k = 256, w->in[0] = w->in[1] = 14;
  w->kernel[0] = w->kernel[1] = 3;
  w->pad_before[0] = w->pad_before[1] = w->pad_after[0] = w->pad_after[1] = 1;
}

/* The channels-last template on ResNet-50's l3_3x3_256 at batch 16 and its
 * stride-2 sibling: block_m output pixels per tile across images, the data
 * tensor map in im2col mode (C, W, H, N) with the bounding box of tap 0 and
 * the stride as traversal stride, the weights tiled as (C, taps, K), both
 * swizzled by block_k; the instance compiles. */
START_TEST(nhwc_instances_carry_an_im2col_and_a_tiled_tensor_map) {
  const template_desc *tpl = template_find("conv2d_nhwc_wgmma");
  ct_workload w;
  nhwc_l3_3x3_256(&w);
  space sp;
  ct_err err = {0};
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  arch a;
  arch_from_name("sm_90", &a, NULL);
  config c;
  char why[TEMPLATE_WHY_MAX];
  config_of(&sp,
            "{\"block_n\":128,\"block_k\":128,\"k_slices\":1,\"stages\":4,\"warpgroups\":2,"
            "\"rows_per_wg\":64,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":0,\"w_early\":0}",
            &c);
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
  instance inst;
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
  ck_assert_uint_eq(inst.grid[0], (16 * 14 * 14 + 127) / 128);
  ck_assert_uint_eq(inst.grid[1], 2);
  ck_assert_uint_eq(inst.grid[2], 1);
  ck_assert_uint_eq(inst.smem_bytes, 4 * (128 + 128) * 128 + 16 * 4 + 1024);
  ck_assert_int_eq(inst.n_args, 7);
  ck_assert_int_eq(inst.args[5], ARG_DATA_TMAP);
  ck_assert_int_eq(inst.pdl, 1); /* launched as a programmatic dependent */
  ck_assert_int_eq(inst.args[6], ARG_WEIGHTS_TMAP);
  const tmap_desc *t = &inst.tmap, *u = &inst.wtmap;
  ck_assert_int_eq(t->im2col, 1);
  ck_assert_int_eq(t->rank, 4);
  ck_assert_int_eq(t->elem_bytes, 1);
  ck_assert_int_eq(t->swizzle, 128);
  ck_assert_uint_eq(t->dims[0], 256);
  ck_assert_uint_eq(t->dims[1], 14);
  ck_assert_uint_eq(t->dims[2], 14);
  ck_assert_uint_eq(t->dims[3], 16);
  ck_assert_uint_eq(t->strides[0], 256);
  ck_assert_uint_eq(t->strides[1], 256 * 14);
  ck_assert_uint_eq(t->strides[2], 256 * 14 * 14);
  ck_assert_int_eq(t->lower[0], -1);
  ck_assert_int_eq(t->upper[0], -1);
  ck_assert_uint_eq(t->channels, 128);
  ck_assert_uint_eq(t->pixels, 128);
  ck_assert_int_eq(u->im2col, 0);
  ck_assert_int_eq(u->rank, 3);
  ck_assert_uint_eq(u->dims[1], 9);
  ck_assert_uint_eq(u->dims[2], 256);
  ck_assert_uint_eq(u->strides[1], 256 * 9);
  ck_assert_uint_eq(u->box[0], 128);
  ck_assert_uint_eq(u->box[1], 1);
  ck_assert_uint_eq(u->box[2], 128);
  cubin cb;
  ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s\n%s", err.msg, cb.log);
  ck_assert_uint_gt(cb.size, 0);
  cubin_free(&cb);
  space_free(&sp);

  /* stride 2 (l3_3x3_256_s2 from 28x28): the traversal strides, 14 x 14 outputs */
  w.in[0] = w.in[1] = 28;
  w.stride[0] = w.stride[1] = 2;
  ck_assert_int_eq(template_space(tpl, &w, &sp, &err), CT_OK);
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
  ck_assert_uint_eq(inst.tmap.elem_strides[1], 2);
  ck_assert_uint_eq(inst.tmap.elem_strides[2], 2);
  ck_assert_int_eq(inst.tmap.lower[1], -1);
  ck_assert_int_eq(inst.tmap.upper[1], -1);
  ck_assert_uint_eq(inst.grid[0], (16 * 14 * 14 + 127) / 128);
  space_free(&sp);

  /* 1x1 at stride 1 without padding (l3_1x1_1024_256): the data is the
   * matrix (C, pixels), read by tiled copies of block_k x block_m; at
   * stride 2 (l3_ds_512_1024_s2's shape) or with padding it stays im2col */
  w.in[0] = w.in[1] = 14;
  w.c = 1024;
  w.stride[0] = w.stride[1] = 1;
  w.kernel[0] = w.kernel[1] = 1;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 0;
  ck_assert_int_eq(template_space(tpl, &w, &sp, &err), CT_OK);
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
  ck_assert_int_eq(inst.tmap.im2col, 0);
  ck_assert_int_eq(inst.tmap.rank, 2);
  ck_assert_uint_eq(inst.tmap.dims[0], 1024);
  ck_assert_uint_eq(inst.tmap.dims[1], 16 * 14 * 14);
  ck_assert_uint_eq(inst.tmap.strides[0], 1024);
  ck_assert_uint_eq(inst.tmap.box[0], 128);
  ck_assert_uint_eq(inst.tmap.box[1], 128);
  ck_assert_int_eq(inst.tmap.swizzle, 128);
  int atile = -1;
  for (int i = 0; i < inst.n_options; i++)
    if (!strncmp(inst.options[i], "-DWG_ATILE=", 11)) atile = atoi(inst.options[i] + 11);
  ck_assert_int_eq(atile, 1);
  ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s\n%s", err.msg, cb.log);
  cubin_free(&cb);
  space_free(&sp);
  for (int v = 0; v < 2; v++) {
    w.in[0] = w.in[1] = 28;
    w.stride[0] = w.stride[1] = v ? 1 : 2;
    w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = v;
    ck_assert_int_eq(template_space(tpl, &w, &sp, &err), CT_OK);
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    ck_assert_int_eq(inst.tmap.im2col, 1);
    space_free(&sp);
  }
}
END_TEST

/* split_k on the channels-last template, ResNet-50's l3_3x3_256 at batch
 * 16 (18 stages of 128 channels): a cluster along grid z, the shared memory
 * the larger of the stages and the partial sums (consumer threads x
 * accumulators x 4 bytes); one and two m64 blocks per warpgroup, block_n
 * 128 and 256, 2 and 4 ranks: each compiles without wgmma serialization. */
START_TEST(nhwc_split_k_meets_in_a_cluster) {
  const template_desc *tpl = template_find("conv2d_nhwc_wgmma");
  ct_workload w;
  nhwc_l3_3x3_256(&w);
  space sp;
  ct_err err = {0};
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  arch a;
  arch_from_name("sm_90", &a, NULL);
  a.sm_count = 132;
  struct {
    int bn, wg, mw, split;
  } cases[] = {{128, 1, 64, 2}, {128, 1, 64, 4}, {256, 2, 64, 2}, {128, 2, 128, 4}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[320], why[TEMPLATE_WHY_MAX];
    snprintf(text, sizeof text,
             "{\"block_n\":%d,\"block_k\":128,\"k_slices\":1,\"stages\":4,\"warpgroups\":%d,"
             "\"rows_per_wg\":%d,\"split_k\":%d,\"blocks_per_sm\":1,\"persistent\":0,\"w_early\":0}",
             cases[i].bn, cases[i].wg, cases[i].mw, cases[i].split);
    config c;
    config_of(&sp, text, &c);
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s: %s", text, why);
    instance inst;
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    const long bm = (long)cases[i].wg * cases[i].mw;
    ck_assert_uint_eq(inst.grid[0], (16 * 14 * 14 + bm - 1) / bm);
    ck_assert_uint_eq(inst.grid[1], 256 / cases[i].bn);
    ck_assert_uint_eq(inst.grid[2], cases[i].split);
    const long pipe = 4L * (bm + cases[i].bn) * 128;
    const long red = 128L * cases[i].wg * (cases[i].mw / 64) * (cases[i].bn / 2) * 4;
    ck_assert_uint_eq(inst.smem_bytes, (pipe > red ? pipe : red) + 16 * 4 + 1024);
    compiles_without(&inst, &a, text, "C75");
  }
  space_free(&sp);
}
END_TEST

/* The one-warpgroup 64x128 config of block_k 128 with k_slices ks and
 * split_k split, 2 stages, into c. */
static void w1_slices(const space *sp, int ks, int split, config *c) {
  char text[320];
  snprintf(text, sizeof text,
           "{\"block_n\":128,\"block_k\":128,\"k_slices\":%d,\"stages\":2,"
           "\"warpgroups\":1,\"rows_per_wg\":64,\"split_k\":%d,\"blocks_per_sm\":1,"
           "\"persistent\":0,\"w_early\":0}",
           ks, split);
  config_of(sp, text, c);
}

/* k_slices on l3_3x3_256 at batch 16 (9 taps x 2 slices of 128 channels:
 * 18 slices): a stage holds k_slices slices, so the pipeline's shared
 * memory grows with it and the stages of the reduction shrink (split_k
 * divides those); 2 and 3 divide 18 and compile without serialized
 * wgmmas, alone and with split-K (the stages a rank takes) and ping-pong;
 * 4 does not divide 18 and is refused with the reason; split_k 4 fits 18
 * stages but not 6 (k_slices 3); a 1x1 of 512
 * channels at block_k 128 (4 slices) takes 4, not 3. */
START_TEST(nhwc_k_slices_group_a_stage) {
  const template_desc *tpl = template_find("conv2d_nhwc_wgmma");
  ct_workload w;
  nhwc_l3_3x3_256(&w);
  space sp;
  ct_err err = {0};
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_ge(space_find(&sp, "k_slices"), 0);
  arch a;
  arch_from_name("sm_90", &a, NULL);
  a.sm_count = 132;
  struct {
    int ks, stages, wg, split, persist;
  } cases[] = {{2, 3, 1, 1, 0}, {3, 2, 1, 1, 0}, {2, 2, 2, 2, 0}, {3, 3, 2, 1, 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[320], why[TEMPLATE_WHY_MAX];
    snprintf(text, sizeof text,
             "{\"block_n\":128,\"block_k\":128,\"k_slices\":%d,\"stages\":%d,"
             "\"warpgroups\":%d,\"rows_per_wg\":64,\"split_k\":%d,\"blocks_per_sm\":1,"
             "\"persistent\":%d,\"w_early\":0}",
             cases[i].ks, cases[i].stages, cases[i].wg, cases[i].split, cases[i].persist);
    config c;
    config_of(&sp, text, &c);
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s: %s", text, why);
    instance inst;
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    const long bm = cases[i].persist == 2 ? 64 : 64L * cases[i].wg;
    const long pipe = (long)cases[i].stages * cases[i].ks * (bm + 128) * 128;
    const long red = cases[i].split > 1 ? 128L * cases[i].wg * 64 * 4 : 0;
    ck_assert_uint_eq(inst.smem_bytes, (pipe > red ? pipe : red) + 16 * cases[i].stages +
                                           (cases[i].persist == 2 ? 16 : 0) + 1024);
    ck_assert_uint_eq(inst.grid[2], cases[i].split);
    char want[32];
    snprintf(want, sizeof want, "-DK_SLICES=%d", cases[i].ks);
    int seen = 0;
    for (int k = 0; k < inst.n_options; k++) seen += !strcmp(inst.options[k], want);
    ck_assert_msg(seen == 1, "%s: no -DK_SLICES=%d", text, cases[i].ks);
    compiles_without(&inst, &a, text, "C75");
  }
  config c;
  char why[TEMPLATE_WHY_MAX];
  w1_slices(&sp, 4, 1, &c);
  ck_assert(!tpl->valid(&w, &sp, &c, &a, why));
  ck_assert_msg(strstr(why, "k_slices 4 does not divide the 18 slices"), "%s", why);
  /* split_k splits stages: 4 ranks take 18 stages of 1 slice, not 6 of 3 */
  w1_slices(&sp, 1, 4, &c);
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
  w1_slices(&sp, 3, 4, &c);
  ck_assert(!tpl->valid(&w, &sp, &c, &a, why));
  ck_assert_msg(strstr(why, "split_k 4 over 6 stages"), "%s", why);
  space_free(&sp);

  /* a 1x1 of 512 channels: 4 slices of 128 */
  w.c = 512;
  w.kernel[0] = w.kernel[1] = 1;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = 0;
  ck_assert_int_eq(template_space(tpl, &w, &sp, &err), CT_OK);
  w1_slices(&sp, 4, 1, &c);
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
  w1_slices(&sp, 3, 1, &c);
  ck_assert(!tpl->valid(&w, &sp, &c, &a, why));
  ck_assert_msg(strstr(why, "k_slices 3 does not divide the 4 slices"), "%s", why);
  space_free(&sp);
}
END_TEST

/* out_stage and tile_requant, on the same layer requantized to int8
 * (bias, per-channel scales): the knobs exist only with 8-bit output;
 * staged, each consumer warpgroup reserves its channel table (block_n x 24
 * bytes) and 4 warps' slabs of 16 rows per m64 block, each row block_n +
 * 16 bytes; every form compiles without serialized wgmmas, in every
 * schedule, and the default stages and requantizes per tile. */
START_TEST(nhwc_out_stage_and_tile_requant_exist_with_8_bit_output_only) {
  const template_desc *tpl = template_find("conv2d_nhwc_wgmma");
  ct_workload w;
  nhwc_l3_3x3_256(&w);
  space sp;
  ct_err err = {0};
  ck_assert_int_eq(template_space(tpl, &w, &sp, &err), CT_OK);
  ck_assert_int_lt(space_find(&sp, "out_stage"), 0);
  ck_assert_int_lt(space_find(&sp, "tile_requant"), 0);
  space_free(&sp);
  w.out_type = CT_DTYPE_INT8;
  w.epi.bias = 1;
  w.epi.scale = CT_SCALE_CHANNEL;
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_ge(space_find(&sp, "out_stage"), 0);
  ck_assert_int_ge(space_find(&sp, "tile_requant"), 0);
  arch a;
  arch_from_name("sm_90", &a, NULL);
  a.sm_count = 132;
  config dflt;
  ck_assert(tpl->preferred(&w, &sp, &a, &dflt));
  ck_assert_int_eq(space_get(&sp, &dflt, "out_stage", -1), 1);
  ck_assert_int_eq(space_get(&sp, &dflt, "tile_requant", -1), 1);
  for (int i = 0; i < 4; i++) {
    const int st = i % 2;
    char text[256];
    snprintf(text, sizeof text,
             "{\"block_n\":128,\"block_k\":128,\"k_slices\":1,\"stages\":3,\"warpgroups\":2,"
             "\"rows_per_wg\":128,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":2,"
             "\"out_stage\":%d,\"tile_requant\":%d,\"w_early\":0}",
             st, i / 2);
    config c;
    config_of(&sp, text, &c);
    char why[TEMPLATE_WHY_MAX];
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
    instance inst;
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    const long tab = 2 * (128 * 24 + (st ? 4 * 16 * 2 * (128 + 16) : 0));
    /* ping-pong: a tile is one warpgroup's 128 rows; two turn barriers */
    ck_assert_uint_eq(inst.smem_bytes, 3 * (128 + 128) * 128 + 16 * 3 + 16 + tab + 1024);
    compiles_without(&inst, &a, text, "C75");
  }
  /* the other schedules, whose accumulators start at the channels' offsets
   * too: one block per tile (one or two consumer warpgroups), with split-K
   * (one rank takes the offsets), cooperative (as on 7 SMs: on 132 its 50
   * tiles would be the plain schedule); ptxas serializes none (the
   * producer's accumulators left undefined made it: C7515) */
  static const char *const others[] = {
      "\"warpgroups\":1,\"rows_per_wg\":64,\"split_k\":1,\"blocks_per_sm\":2,\"persistent\":0",
      "\"warpgroups\":2,\"rows_per_wg\":64,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":0",
      "\"warpgroups\":1,\"rows_per_wg\":64,\"split_k\":2,\"blocks_per_sm\":1,\"persistent\":0",
      "\"warpgroups\":2,\"rows_per_wg\":64,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":1",
  };
  for (int i = 0; i < 8; i++) {
    char text[256];
    snprintf(text, sizeof text,
             "{\"block_n\":128,\"block_k\":128,\"k_slices\":1,\"stages\":3,%s,\"out_stage\":%d,"
             "\"tile_requant\":%d,\"w_early\":0}",
             others[i / 2], i % 2, (i + i / 2) % 2);
    config c;
    config_of(&sp, text, &c);
    arch ai = a;
    if (i / 2 == 3) ai.sm_count = 7;
    char why[TEMPLATE_WHY_MAX];
    ck_assert_msg(tpl->valid(&w, &sp, &c, &ai, why), "%s: %s", text, why);
    instance inst;
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &ai, &inst, &err), CT_OK);
    compiles_without(&inst, &ai, text, "C75");
  }
  space_free(&sp);
  /* onnx rounding has one requantization form: no tile_requant (the space
   * half as large), out_stage kept; its default and both stagings compile */
  w.epi.rounding = CT_ROUND_ONNX;
  w.epi.residual = 1;
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_ge(space_find(&sp, "out_stage"), 0);
  ck_assert_int_lt(space_find(&sp, "tile_requant"), 0);
  ck_assert(tpl->preferred(&w, &sp, &a, &dflt));
  ck_assert_int_eq(space_get(&sp, &dflt, "out_stage", -1), 1);
  for (int st = 0; st < 2; st++) {
    config c = dflt;
    ck_assert(template_set_choice(&sp, &c, "out_stage", st));
    char text[256];
    space_config_str(&sp, &c, text, sizeof text);
    instance inst;
    ck_assert_msg(instance_make(tpl, &w, &sp, &c, &a, &inst, &err) == CT_OK, "%s", err.msg);
    int onnx_opt = 0;
    for (int i = 0; i < inst.n_options; i++)
      onnx_opt += strcmp(inst.options[i], "-DCT_ONNX=1") == 0;
    ck_assert_int_eq(onnx_opt, 1);
    compiles_without(&inst, &a, text, "C75");
  }
  space_free(&sp);
}
END_TEST

/* The runner's GPU reference (templates/ref_conv.cu, both roundings in one
 * kernel) compiles with NVRTC as the runner compiles it. */
START_TEST(gpu_reference_compiles) {
  arch a;
  arch_from_name("sm_90", &a, NULL);
  const char *src = template_embedded("ref_conv.cu");
  ck_assert_ptr_nonnull(src);
  cubin cb;
  ct_err err = {0};
  ck_assert_msg(nvrtc_compile_source("ref_conv.cu", src, NULL, 0, &a, &cb, &err) == CT_OK, "%s\n%s",
                err.msg, cb.log ? cb.log : "");
  ck_assert_uint_gt(cb.size, 0);
  cubin_free(&cb);
}
END_TEST

/* The persistent schedules of the channels-last wgmma template, on
 * ResNet-50's l3_3x3_256 at batch 16 (3136 output pixels, K 256):
 *   - cooperative (1), 2 x 64 rows, block_n 128: 25 x 2 tiles on as many
 *     blocks as fit at once, one grid row; the plain schedule where they
 *     all fit (refused: it would be the same kernel);
 *   - ping-pong (2): tiles of one warpgroup's rows (49 x 2 of 64), the
 *     pipeline sized for them and a barrier more per consumer warpgroup
 *     (its turn), on at most as many blocks as fit (7 SMs: 7; 132: 98,
 *     one per tile); it needs two to four consumer warpgroups, and only it
 *     takes more than two;
 *   - neither with split_k.
 * Every one compiles, and ptxas serializes no wgmma (C7520). */
START_TEST(nhwc_persistent_blocks_loop_over_tiles) {
  const template_desc *tpl = template_find("conv2d_nhwc_wgmma");
  ct_workload w;
  nhwc_l3_3x3_256(&w);
  space sp;
  ct_err err = {0};
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  arch a;
  arch_from_name("sm_90", &a, NULL); /* each case sets the SM count */
  config c;
  char why[TEMPLATE_WHY_MAX];
  static const char *const base =
      "{\"block_n\":128,\"block_k\":128,\"k_slices\":1,\"stages\":4,\"rows_per_wg\":64,";
  char text[256];
  struct {
    const char *rest;
    int sms, valid;
    unsigned grid0, grid1;
    long bm;
    const char *why;
  } cases[] = {
      {"\"warpgroups\":2,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":1,\"w_early\":0}", 20, 1, 20, 1, 128,
       NULL},
      {"\"warpgroups\":2,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":2,\"w_early\":0}", 7, 1, 7, 1, 64,
       NULL},
      {"\"warpgroups\":2,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":1,\"w_early\":0}", 132, 0, 0, 0, 0,
       "is the plain schedule"},
      {"\"warpgroups\":2,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":2,\"w_early\":0}", 20, 1, 20, 1, 64,
       NULL},
      {"\"warpgroups\":2,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":2,\"w_early\":0}", 132, 1, 98, 1, 64,
       NULL},
      {"\"warpgroups\":1,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":2,\"w_early\":0}", 20, 0, 0, 0, 0,
       "needs 2 to 4 consumer warpgroups"},
      {"\"warpgroups\":2,\"split_k\":2,\"blocks_per_sm\":1,\"persistent\":1,\"w_early\":0}", 20, 0, 0, 0, 0,
       "take whole tiles"},
      {"\"warpgroups\":2,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":0,\"w_early\":0}", 20, 1, 25, 2, 128,
       NULL},
      {"\"warpgroups\":3,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":2,\"w_early\":0}", 20, 1, 20, 1, 64,
       NULL},
      {"\"warpgroups\":4,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":2,\"w_early\":0}", 7, 0, 0, 0, 0,
       "registers per thread"},
      {"\"warpgroups\":3,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":1,\"w_early\":0}", 20, 0, 0, 0, 0,
       "run ping-pong (persistent 2) only"},
      {"\"warpgroups\":3,\"split_k\":1,\"blocks_per_sm\":1,\"persistent\":0,\"w_early\":0}", 20, 0, 0, 0, 0,
       "run ping-pong (persistent 2) only"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(text, sizeof text, "%s%s", base, cases[i].rest);
    cJSON *j = cJSON_Parse(text);
    ck_assert_msg(space_config_from_json(&sp, j, &c, &err) == CT_OK, "%s: %s", text, err.msg);
    cJSON_Delete(j);
    a.sm_count = cases[i].sms;
    int ok = tpl->valid(&w, &sp, &c, &a, why);
    ck_assert_msg(ok == cases[i].valid, "%s on %d SMs: %s", text, cases[i].sms, ok ? "valid" : why);
    if (!ok) {
      ck_assert_msg(strstr(why, cases[i].why), "%s: %s", text, why);
      continue;
    }
    instance inst;
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    ck_assert_msg(inst.grid[0] == cases[i].grid0 && inst.grid[1] == cases[i].grid1,
                  "%s: grid %u x %u", text, inst.grid[0], inst.grid[1]);
    ck_assert_uint_eq(inst.tmap.pixels, cases[i].bm); /* a copy is a tile's rows */
    /* the stages, their barriers, in ping-pong a turn barrier per consumer
     * warpgroup (in whole 16 bytes), the alignment slack */
    const int pingpong = strstr(cases[i].rest, "\"persistent\":2") != NULL;
    const int cwg = cases[i].rest[strlen("\"warpgroups\":")] - '0';
    ck_assert_uint_eq(inst.block[0], 128 * (cwg + 1));
    ck_assert_uint_eq(inst.smem_bytes, 4 * (cases[i].bm + 128) * 128 + 16 * 4 +
                                           (pingpong ? 16 * ((cwg + 1) / 2) : 0) + 1024);
    if (i == 1 || i == 7) continue; /* case 3's kernel; the plain one, compiled above */
    compiles_without(&inst, &a, text, "C7520");
  }
  space_free(&sp);
}
END_TEST

/* A channels-last conv2d stem: 3 channels at 224x224, kernel x kernel at
 * stride 2, padded by kernel / 2 (ResNet-50's: 7, K 64; MobileNet's: 3, K 32). */
static ct_workload nhwc_stem(int n, int k, int kernel) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NHWC;
  w.n = n, w.c = 3, w.k = k, w.in[0] = w.in[1] = 224;
  for (int i = 0; i < 2; i++) {
    w.kernel[i] = kernel, w.stride[i] = 2;
    w.pad_before[i] = w.pad_after[i] = kernel / 2;
  }
  return w;
}

/* conv2d_nhwc_mma on ResNet-50's stem at batch 16 (7x7, stride 2, C 3):
 * 7 window rows of 21 bytes are 7 k32 steps; the staged input rows and
 * weights make the shared memory; a named architecture (no SM count) gets
 * one block per tile; with 132 SMs the grid is persistent. It compiles. */
START_TEST(nhwc_mma_stages_window_rows) {
  const template_desc *tpl = template_find("conv2d_nhwc_mma");
  ct_workload w = nhwc_stem(16, 64, 7);
  space sp;
  ct_err err = {0};
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  arch a;
  arch_from_name("sm_90", &a, NULL);
  config c;
  char why[TEMPLATE_WHY_MAX];
  config_of(&sp,
            "{\"tile_w\":64,\"tile_h\":2,\"block_n\":64,\"warp_m16\":2,"
            "\"blocks_per_sm\":2}",
            &c);
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
  instance inst;
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
  /* 16 images x 56 row pairs x 2 column tiles of 112 columns */
  ck_assert_uint_eq(inst.grid[0], 16 * 56 * 2);
  ck_assert_uint_eq(inst.grid[1], 1);
  ck_assert_uint_eq(inst.block[0], 128); /* 8 m16 blocks, 2 per warp */
  /* weights: 7 steps x 64 channels x 32 bytes; rows: 9 input rows of
   * 63 x 6 + 32 + 4 bytes (416), padded to 16 banks apart, in 2 copies
   * (6-byte steps: 2 alignments: 7552 bytes), where the block's raw
   * weights go first (64 x 147 bytes and a word either side: larger);
   * then the raw rows (2 more words each) */
  ck_assert_int_lt(2 * (9 * 416 + 32), (64 * 147 + 6) / 4 * 4);
  ck_assert_uint_eq(inst.smem_bytes, 7 * 64 * 32 + (64 * 147 + 6) / 4 * 4 + 9 * (416 + 8));
  ck_assert_int_eq(inst.n_args, 5);
  ck_assert_int_eq(inst.arch_specific, 0);
  ck_assert_int_eq(inst.pdl, 1); /* sm_90: launched as a programmatic dependent */
  cubin cb;
  ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s\n%s", err.msg, cb.log);
  ck_assert_uint_gt(cb.size, 0);
  cubin_free(&cb);
  a.sm_count = 132;
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
  ck_assert_uint_eq(inst.grid[0], 132 * 2);
  /* a block too wide for the SM's registers twice over is refused */
  config_of(&sp,
            "{\"tile_w\":128,\"tile_h\":4,\"block_n\":64,\"warp_m16\":4,"
            "\"blocks_per_sm\":4}",
            &c);
  ck_assert(!tpl->valid(&w, &sp, &c, &a, why));
  ck_assert_ptr_nonnull(strstr(why, "registers"));
  space_free(&sp);
}
END_TEST

/* conv2d_nhwc_wgmma_stem on ResNet-50's stem at batch 16 and
 * conv3d_ndhwc_wgmma_stem on ResNet3D-18's at batch 8: 5 (15) k32 steps of
 * weights for the block (a depth tap's 7 window rows of 21 bytes packed);
 * per warpgroup the A buffers of a stage (one depth tap: 5 steps of
 * block_m rows); a named architecture gets every
 * warpgroup tile its own warpgroup, 132 SMs a persistent grid; both
 * compile with every wgmma asynchronous. */
START_TEST(nhwc_wgmma_stem_stages_a_depth_tap) {
  for (int op = CT_OP_CONV2D; op <= CT_OP_CONV3D; op++) {
    const template_desc *tpl =
        template_find(op == CT_OP_CONV2D ? "conv2d_nhwc_wgmma_stem" : "conv3d_ndhwc_wgmma_stem");
    ct_workload w;
    workload_init(&w, (ct_op)op);
    w.layout = CT_LAYOUT_NHWC;
    w.c = 3, w.k = 64;
    int d = 0; /* the first spatial axis */
    if (op == CT_OP_CONV3D) {
      w.n = 8, w.in[0] = 16, w.in[1] = w.in[2] = 112;
      w.kernel[0] = 3, w.pad_before[0] = w.pad_after[0] = 1, d = 1;
    } else {
      w.n = 16, w.in[0] = w.in[1] = 224;
    }
    for (int i = d; i < d + 2; i++) {
      w.kernel[i] = 7, w.stride[i] = 2;
      w.pad_before[i] = w.pad_after[i] = 3;
    }
    space sp;
    ct_err err = {0};
    ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
    arch a;
    arch_from_name("sm_90", &a, NULL);
    config c;
    char why[TEMPLATE_WHY_MAX];
    config_of(&sp,
              "{\"block_m\":128,\"block_n\":64,\"warpgroups\":2,\"a_buffers\":2,"
              "\"blocks_per_sm\":1,\"out_tma\":0,\"a_prefetch\":0}",
              &c);
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
    instance inst;
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    const long pixels = op == CT_OP_CONV2D ? 16L * 112 * 112 : 8L * 16 * 56 * 56;
    const long ksteps = op == CT_OP_CONV2D ? 5 : 15;
    ck_assert_uint_eq(inst.grid[0], (pixels / 128 + 1) / 2); /* 2 warpgroups a block */
    ck_assert_uint_eq(inst.grid[1], 1);
    ck_assert_uint_eq(inst.block[0], 256);
    /* the weights, 2 warpgroups x 2 buffers x 5 steps x 128 rows x 32 bytes, alignment */
    ck_assert_uint_eq(inst.smem_bytes, ksteps * 64 * 32 + 2 * 2 * 5 * 128 * 32 + 1024);
    ck_assert_int_eq(inst.n_args, 5);
    ck_assert_int_eq(inst.arch_specific, 1);
    ck_assert_int_eq(inst.pdl, 1);
    cubin cb;
    ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s\n%s", err.msg, cb.log);
    ck_assert_uint_gt(cb.size, 0);
    ck_assert_msg(!strstr(cb.log, "C75"), "%s", cb.log);
    cubin_free(&cb);
    a.sm_count = 132;
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    ck_assert_uint_eq(inst.grid[0], 132);
    /* sm_80 has no wgmma */
    arch a80;
    arch_from_name("sm_80", &a80, NULL);
    ck_assert(!tpl->valid(&w, &sp, &c, &a80, why));
    ck_assert_ptr_nonnull(strstr(why, "sm_90a"));
    /* the stages' 32-bit pixel arithmetic: 2^31 output pixels are refused */
    ct_workload big = w;
    big.n = op == CT_OP_CONV2D ? 171197 : 42800; /* just past 2^31 pixels */
    ck_assert(!tpl->valid(&big, &sp, &c, &a, why));
    ck_assert_msg(strstr(why, "below 2^31") != NULL, "%s", why);
    big.n -= 1;
    ck_assert_msg(tpl->valid(&big, &sp, &c, &a, why), "%s", why);
    space_free(&sp);
  }
}
END_TEST

/* The stems' out_tma (int32 output): the tile stored by TMA from a
 * staging area per warpgroup, described by the output's tensor map (K x
 * pixels int32, boxes of 32 channels x block_m pixels, 128-byte swizzle);
 * refused where K is not a multiple of 32. a_prefetch holds the next
 * tile's words through the epilogue: the register estimate counts them.
 * Neither is in an 8-bit workload's space. */
START_TEST(nhwc_wgmma_stem_out_tma_and_prefetch) {
  const template_desc *tpl = template_find("conv2d_nhwc_wgmma_stem");
  ct_workload w = nhwc_stem(16, 64, 7);
  space sp;
  ct_err err = {0};
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_ge(space_find(&sp, "out_tma"), 0);
  ck_assert_int_ge(space_find(&sp, "a_prefetch"), 0);
  arch a;
  arch_from_name("sm_90", &a, NULL);
  a.sm_count = 132;
  config c;
  char why[TEMPLATE_WHY_MAX];
  config_of(&sp,
            "{\"block_m\":128,\"block_n\":64,\"warpgroups\":2,\"a_buffers\":1,"
            "\"blocks_per_sm\":1,\"out_tma\":1,\"a_prefetch\":1}",
            &c);
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
  instance inst;
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
  /* the weights, 2 warpgroups' staging (128 x 64 int32), 2 x 1 buffer, alignment */
  ck_assert_uint_eq(inst.smem_bytes, 5 * 64 * 32 + 2 * 128 * 64 * 4 + 2 * 5 * 128 * 32 + 1024);
  ck_assert_int_eq(inst.n_args, 6);
  ck_assert_int_eq(inst.args[5], ARG_OUT_TMAP);
  const tmap_desc *t = &inst.otmap;
  ck_assert_int_eq(t->rank, 2);
  ck_assert_int_eq(t->elem_bytes, 4);
  ck_assert_int_eq(t->swizzle, 128);
  ck_assert_int_eq(t->im2col, 0);
  ck_assert_uint_eq(t->dims[0], 64);
  ck_assert_uint_eq(t->dims[1], 16UL * 112 * 112);
  ck_assert_uint_eq(t->strides[0], 64 * 4);
  ck_assert_uint_eq(t->box[0], 32);
  ck_assert_uint_eq(t->box[1], 128);
  cubin cb;
  ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s\n%s", err.msg, cb.log);
  ck_assert_msg(!strstr(cb.log, "C75"), "%s", cb.log);
  cubin_free(&cb);
  /* without out_tma: the five pointers, no staging */
  config_of(&sp,
            "{\"block_m\":128,\"block_n\":64,\"warpgroups\":2,\"a_buffers\":1,"
            "\"blocks_per_sm\":1,\"out_tma\":0,\"a_prefetch\":1}",
            &c);
  ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
  ck_assert_int_eq(inst.n_args, 5);
  ck_assert_uint_eq(inst.smem_bytes, 5 * 64 * 32 + 2 * 5 * 128 * 32 + 1024);
  /* a_prefetch's words (7 rows x 7 words) on top of 64 accumulators pass
   * the 128 registers of two 256-thread blocks per SM; without, they fit */
  config_of(&sp,
            "{\"block_m\":128,\"block_n\":64,\"warpgroups\":2,\"a_buffers\":1,"
            "\"blocks_per_sm\":2,\"out_tma\":0,\"a_prefetch\":1}",
            &c);
  ck_assert(!tpl->valid(&w, &sp, &c, &a, why));
  ck_assert_msg(strstr(why, "registers") != NULL, "%s", why);
  config_of(&sp,
            "{\"block_m\":128,\"block_n\":64,\"warpgroups\":2,\"a_buffers\":1,"
            "\"blocks_per_sm\":2,\"out_tma\":0,\"a_prefetch\":0}",
            &c);
  ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
  space_free(&sp);
  /* K 40: no whole 128-byte rows */
  w.k = 40;
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  config_of(&sp,
            "{\"block_m\":64,\"block_n\":64,\"warpgroups\":1,\"a_buffers\":1,"
            "\"blocks_per_sm\":1,\"out_tma\":1,\"a_prefetch\":0}",
            &c);
  ck_assert(!tpl->valid(&w, &sp, &c, &a, why));
  ck_assert_msg(strstr(why, "out_tma") != NULL, "%s", why);
  space_free(&sp);
  /* 8-bit output: neither knob */
  w.k = 64;
  w.out_type = CT_DTYPE_INT8;
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_lt(space_find(&sp, "out_tma"), 0);
  ck_assert_int_lt(space_find(&sp, "a_prefetch"), 0);
  space_free(&sp);
}
END_TEST

/* The stems' out_stage (8-bit output): each warpgroup's channel table and
 * then its 4 warps' slabs (16 rows per m64 block, the tile's channels and
 * 16 bytes of pad a row), whose whole rows the warps store; not in an
 * int32 workload's space. Compiled for MobileNetV2's stem (K 32: block_n
 * 32, its default, and 64, where half the lanes store nothing) and
 * ResNet-50's (K 64), with both roundings and a residual: no serialized
 * wgmma (C75xx). */
START_TEST(nhwc_wgmma_stem_out_stage) {
  const template_desc *tpl = template_find("conv2d_nhwc_wgmma_stem");
  ct_workload w = nhwc_stem(32, 32, 3);
  space sp;
  ct_err err = {0};
  ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_lt(space_find(&sp, "out_stage"), 0);
  space_free(&sp);
  arch a;
  arch_from_name("sm_90", &a, NULL);
  a.sm_count = 132;
  char why[TEMPLATE_WHY_MAX];
  static const struct {
    int k, kernel, onnx, residual, bn;
  } cases[] = {{32, 3, 1, 0, 32}, {64, 7, 0, 0, 64}, {64, 7, 0, 1, 64}, {32, 3, 0, 0, 64}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    w = nhwc_stem(32, cases[i].k, cases[i].kernel);
    w.out_type = CT_DTYPE_INT8;
    w.epi.bias = 1;
    w.epi.scale = CT_SCALE_CHANNEL;
    w.epi.rounding = cases[i].onnx ? CT_ROUND_ONNX : CT_ROUND_GEMMLOWP;
    w.epi.residual = cases[i].residual;
    ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
    ck_assert_int_ge(space_find(&sp, "out_stage"), 0);
    config c;
    char js[160];
    snprintf(js, sizeof js,
             "{\"block_m\":128,\"block_n\":%d,\"warpgroups\":2,\"a_buffers\":2,"
             "\"blocks_per_sm\":1,\"out_stage\":1}",
             cases[i].bn);
    config_of(&sp, js, &c);
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s", why);
    instance inst;
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    /* a stage's steps: its window rows packed */
    const long kw = cases[i].kernel, ck = (kw * kw * 3 + 31) / 32, bn = cases[i].bn;
    /* the weights; 2 warpgroups x 2 A buffers; 2 x (table + 4 warps x 32 rows x (bn + 16)) */
    const long fixed = ck * bn * 32 + 2 * 2 * ck * 128 * 32 + 1024;
    ck_assert_uint_eq(inst.smem_bytes, fixed + 2 * (bn * 24 + 4 * 32 * (bn + 16)));
    ck_assert_int_eq(inst.n_args, 5);
    cubin cb;
    ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s\n%s", err.msg, cb.log);
    ck_assert_msg(!strstr(cb.log, "C75"), "%s", cb.log);
    cubin_free(&cb);
    /* without: the table alone */
    snprintf(js, sizeof js,
             "{\"block_m\":128,\"block_n\":%d,\"warpgroups\":2,\"a_buffers\":2,"
             "\"blocks_per_sm\":1,\"out_stage\":0}",
             cases[i].bn);
    config_of(&sp, js, &c);
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    ck_assert_uint_eq(inst.smem_bytes, fixed + 2 * bn * 24);
    if (bn == 32) {
      /* the default: 32 channels in one N tile, where 64 would be half padding */
      ck_assert(tpl->preferred(&w, &sp, &a, &c));
      ck_assert_int_eq(space_get(&sp, &c, "block_n", 0), 32);
      ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK, "%s\n%s", err.msg, cb.log);
      ck_assert_msg(!strstr(cb.log, "C75"), "%s", cb.log);
      cubin_free(&cb);
    }
    space_free(&sp);
  }
}
END_TEST

/* The stems' packed stages: where it takes fewer k32 steps a depth tap's
 * window rows are concatenated, then padded to whole steps: ResNet-50's
 * 7x7 stem of 3 channels takes 5 steps where one step a row would take 7
 * (ResNet3D-18's 3x7x7 15 for 21), MobileNetV2's 3x3 1 for 3, so the
 * weights and A buffers shrink by as much. Not where rows of 4 channels
 * already fill the steps (7x7: 196 bytes are 7 steps either way), nor for
 * rows of fewer than 4 bytes (C 1, 3 taps), where a word could span three
 * rows. It compiles with every wgmma asynchronous for one part of the
 * stage a pixel (block_m 128) and two (64), with the 8-bit epilogue, a
 * residual and a_prefetch. The default takes one A buffer for a stage of
 * 3 steps or more (two for fewer) and, with 8-bit output, out_stage, as
 * the tuned bests did. */
START_TEST(nhwc_wgmma_stem_packs_rows) {
  arch a;
  arch_from_name("sm_90", &a, NULL);
  a.sm_count = 132;
  char why[TEMPLATE_WHY_MAX];
  static const struct {
    int op, c, kernel, bm, out8, residual, prefetch;
    long ksteps; /* of the whole reduction */
  } cases[] = {
      {CT_OP_CONV2D, 3, 7, 128, 0, 0, 0, 5},  {CT_OP_CONV2D, 3, 7, 64, 1, 1, 0, 5},
      {CT_OP_CONV3D, 3, 7, 128, 1, 0, 0, 15}, {CT_OP_CONV3D, 3, 7, 64, 0, 0, 1, 15},
      {CT_OP_CONV2D, 3, 3, 128, 1, 0, 0, 1},  {CT_OP_CONV2D, 3, 3, 64, 0, 0, 0, 1},
      {CT_OP_CONV2D, 3, 5, 64, 0, 0, 1, 3},   {CT_OP_CONV2D, 4, 7, 64, 0, 0, 0, 7},
      {CT_OP_CONV2D, 1, 3, 128, 0, 0, 0, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int is3d = cases[i].op == CT_OP_CONV3D;
    const template_desc *tpl =
        template_find(is3d ? "conv3d_ndhwc_wgmma_stem" : "conv2d_nhwc_wgmma_stem");
    ct_workload w;
    workload_init(&w, (ct_op)cases[i].op);
    w.layout = CT_LAYOUT_NHWC;
    w.n = 2, w.c = cases[i].c, w.k = 64;
    int d = 0;
    if (is3d) {
      w.in[0] = 4, w.in[1] = w.in[2] = 112;
      w.kernel[0] = 3, w.pad_before[0] = w.pad_after[0] = 1, d = 1;
    } else {
      w.in[0] = w.in[1] = 224;
    }
    for (int x = d; x < d + 2; x++) {
      w.kernel[x] = cases[i].kernel, w.stride[x] = 2;
      w.pad_before[x] = w.pad_after[x] = cases[i].kernel / 2;
    }
    if (cases[i].out8) {
      w.out_type = CT_DTYPE_INT8;
      w.epi.bias = 1;
      w.epi.scale = CT_SCALE_CHANNEL;
      w.epi.rounding = CT_ROUND_ONNX;
      w.epi.residual = cases[i].residual;
    }
    space sp;
    ct_err err = {0};
    ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s", err.msg);
    char js[200];
    snprintf(js, sizeof js,
             "{\"block_m\":%d,\"block_n\":64,\"warpgroups\":2,\"a_buffers\":2,"
             "\"blocks_per_sm\":1,%s}",
             cases[i].bm,
             cases[i].out8       ? "\"out_stage\":1"
             : cases[i].prefetch ? "\"out_tma\":0,\"a_prefetch\":1"
                                 : "\"out_tma\":0,\"a_prefetch\":0");
    config c;
    config_of(&sp, js, &c);
    ck_assert_msg(tpl->valid(&w, &sp, &c, &a, why), "%s: %s", js, why);
    instance inst;
    ck_assert_int_eq(instance_make(tpl, &w, &sp, &c, &a, &inst, &err), CT_OK);
    /* the weights (every step of every depth tap), 2 warpgroups x 2 A
     * buffers of a stage, the 8-bit tables and slabs, alignment */
    const long ks = cases[i].ksteps, ck = ks / (is3d ? 3 : 1), bm = cases[i].bm;
    const long epi = cases[i].out8 ? 2 * (64 * 24 + 4 * 16 * (bm / 64) * (64 + 16)) : 0;
    ck_assert_uint_eq(inst.smem_bytes, ks * 64 * 32 + 2 * 2 * ck * bm * 32 + epi + 1024);
    compiles_without(&inst, &a, js, "C75");
    /* the default: one A buffer for a stage of 3 steps or more, else two,
     * and out_stage for 8-bit output */
    config dc;
    ck_assert(tpl->preferred(&w, &sp, &a, &dc));
    ck_assert_int_eq(space_get(&sp, &dc, "a_buffers", 0), ck >= 3 ? 1 : 2);
    if (cases[i].out8) ck_assert_int_eq(space_get(&sp, &dc, "out_stage", 0), 1);
    space_free(&sp);
  }
}
END_TEST

/* The i-th epilogue variant of w: raw, then every dtype and epilogue part,
 * depth_to_space in both orders (block 2: every layer's K divides), and
 * onnx rounding (int8 out per channel; uint8 out with a residual). */
#define N_VARIANTS 9
static ct_workload variant(const ct_workload *w, int i) {
  ct_workload v = *w;
  ct_epilogue *e = &v.epi;
  switch (i % N_VARIANTS) {
  case 1:
    v.data_type = CT_DTYPE_UINT8;
    e->data_zero_point = 1;
    break;
  case 2:
    v.out_type = CT_DTYPE_INT8;
    e->data_zero_point = e->weight_zero_point = e->bias = 1;
    break;
  case 3:
    v.data_type = v.out_type = CT_DTYPE_UINT8;
    e->data_zero_point = e->weight_zero_point = e->bias = e->residual = 1;
    e->scale = CT_SCALE_CHANNEL;
    break;
  case 4:
    v.out_type = CT_DTYPE_INT8;
    e->bias = e->residual = 1;
    e->scale = CT_SCALE_CHANNEL;
    break;
  case 5:
    v.out_type = CT_DTYPE_INT8;
    e->d2s_block = 2;
    break;
  case 6:
    e->d2s_block = 2;
    e->d2s_mode = CT_D2S_CRD;
    break;
  case 7:
    v.out_type = CT_DTYPE_INT8;
    e->bias = 1;
    e->scale = CT_SCALE_CHANNEL;
    e->rounding = CT_ROUND_ONNX;
    break;
  case 8:
    v.data_type = v.out_type = CT_DTYPE_UINT8;
    e->bias = e->residual = 1;
    e->rounding = CT_ROUND_ONNX;
    break;
  default:
    break;
  }
  if (v.pre_c > 0) {
    /* a fused pointwise conv: its epilogue's kind as the conv's, its data
     * uint8 with a zero point on every other draw */
    v.pre_epi.rounding = e->rounding;
    v.pre_epi.scale = e->scale;
    v.pre_epi.bias = 1;
    v.pre_epi.data_zero_point = i % 2;
    v.pre_data_type = i % 2 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
  }
  return v;
}

/* Draw configs of tpl across its sets, each layer in turn with each
 * epilogue variant: round trips for each, then compile `count` of them,
 * split over `procs` processes. */
static void sample_and_compile(const template_desc *tpl, long count, int procs) {
  arch a;
  arch_from_name("sm_90", &a, NULL);
  wlset *s = load_sets(tpl, 1);
  rng r;
  rng_seed(&r, 0xC0FFEE + tpl->op);
  pid_t pid[16];
  for (int p = 0; p < procs; p++) {
    pid[p] = fork();
    ck_assert_int_ge(pid[p], 0);
    if (pid[p] > 0) continue;
    /* Child p compiles the configs i with i % procs == p; every child draws
     * the same sequence so that the union is exactly `count` configs. */
    int failed = 0;
    for (long i = 0; i < count; i++) {
      const ct_workload wv = variant(&s->items[i % s->n_items].w, (int)(i / s->n_items + i));
      const ct_workload *w = &wv;
      space sp;
      ct_err err = {0};
      ct_status sst = template_space(tpl, w, &sp, &err);
      if (sst == CT_ERR_UNSUPPORTED) continue; /* e.g. depth_to_space on mma */
      /* the nhwc layout itself has no depth_to_space, nor a packed grouped conv */
      if (sst == CT_ERR_INVALID_WORKLOAD && w->epi.d2s_block &&
          (w->layout == CT_LAYOUT_NHWC || w->groups > 1))
        continue;
      if (sst) _exit(10);
      config c, back;
      if (template_sample(tpl, w, &sp, &a, &r, 1000000, &c, &err)) _exit(11);
      /* index <-> config <-> JSON */
      uint64_t idx = space_index(&sp, &c);
      if (space_config(&sp, idx, &back, &err) || memcmp(&c, &back, sizeof c)) _exit(12);
      cJSON *j = space_config_to_json(&sp, &c);
      if (space_config_from_json(&sp, j, &back, &err) || space_index(&sp, &back) != idx) _exit(13);
      cJSON_Delete(j);
      if (i % procs == p) {
        instance inst;
        cubin cb;
        if (instance_make(tpl, w, &sp, &c, &a, &inst, &err)) _exit(14);
        if (nvrtc_compile(&inst, &a, &cb, &err) != CT_OK || cb.size == 0) {
          char text[512];
          char key[CT_KEY_MAX];
          fprintf(stderr, "%s %s (%s): %s\n%s\n", tpl->name, s->items[i % s->n_items].name,
                  workload_key(w, key, sizeof key), err.msg,
                  space_config_str(&sp, &c, text, sizeof text));
          failed++;
        } else if (cb.log && (strstr(cb.log, "C7520") || strstr(cb.log, "C7518") ||
                              strstr(cb.log, "C7517") || strstr(cb.log, "C7515"))) {
          /* ptxas serializes every wgmma of a kernel it sees diverge around
           * them (C7520, C7518) or where other instructions define their
           * accumulators inside the pipeline (C7515: e.g. a warpgroup's
           * accumulators left undefined on another's path), or waits for
           * them where registers they write are used (C7517): valid code
           * that runs at a fraction of the speed */
          char text[512];
          fprintf(stderr, "%s %s: wgmma serialized (C7515/C7517/C7518/C7520): %s\n%s\n", tpl->name,
                  s->items[i % s->n_items].name, space_config_str(&sp, &c, text, sizeof text),
                  cb.log);
          failed++;
        }
        cubin_free(&cb);
      }
      space_free(&sp);
    }
    _exit(failed ? 1 : 0);
  }
  int bad = 0;
  for (int p = 0; p < procs; p++) {
    int status = 0;
    waitpid(pid[p], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
      fprintf(stderr, "%s: compiler process %d ended with status %d\n", tpl->name, p, status);
      bad++;
    }
  }
  wlset_free(s);
  ck_assert_int_eq(bad, 0);
}

static int cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

/* The largest workloads workload_validate accepts (every CT_MAX_* bound at
 * once, where the element counts allow) through every template's host code:
 * supports, space, valid, instance, describe and preferred. Under the
 * sanitizer build any overflow in a tile, window or shared-memory estimate
 * aborts the test (issue 33: stride and pad 1e9 wrapped conv_dp4a.c's
 * estimate, a dilation near INT_MAX conv_wgmma.c's). */
static void extremes_through_templates(const ct_workload *w0, const char *what) {
  int n_spaces = 0, n_valid = 0;
  static const ct_layout layouts[] = {CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C, CT_LAYOUT_NHWC};
  static const ct_dtype outs[] = {CT_DTYPE_INT32, CT_DTYPE_INT8};
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  a.sm_count = 132; /* a real device's, so that persistent grids are computed too */
  for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
    for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
      ct_workload w = *w0;
      w.layout = layouts[l];
      w.out_type = outs[o];
      ct_err err = {0};
      if (w.layout == CT_LAYOUT_NCHW4C && (w.c % 4 || w.k % 4)) continue; /* packed needs 4s */
      ck_assert_msg(workload_validate(&w, &err) == CT_OK, "%s (layout %d): %s", what, (int)w.layout,
                    err.msg);
      for (int t = 0; template_all()[t]; t++) {
        const template_desc *tpl = template_all()[t];
        char why[TEMPLATE_WHY_MAX];
        space sp;
        ct_workload tw;
        if (!workload_for_layout(&w, tpl->layout, &tw) || !tpl->supports(&tw, why) ||
            template_space(tpl, &tw, &sp, &err))
          continue;
        n_spaces++;
        rng r;
        rng_seed(&r, 33);
        config c;
        if (tpl->preferred) tpl->preferred(&tw, &sp, &a, &c);
        for (int i = 0; i < 300; i++) {
          if (i == 0)
            space_config(&sp, 0, &c, NULL);
          else if (i == 1)
            space_config(&sp, sp.size - 1, &c, NULL);
          else
            space_random(&sp, &r, &c);
          if (!tpl->valid(&tw, &sp, &c, &a, why)) continue;
          n_valid++;
          instance inst;
          ck_assert_msg(instance_make(tpl, &tw, &sp, &c, &a, &inst, &err) == CT_OK, "%s %s: %s",
                        what, tpl->name, err.msg);
          float desc[64];
          if (tpl->describe) tpl->describe(&tw, &sp, &c, desc, 64);
        }
        space_free(&sp);
      }
    }
  /* some template takes each (and some config of it is valid), so that the
   * hooks did run on it */
  ck_assert_msg(n_spaces > 0, "%s: no template took it", what);
  fprintf(stderr, "%s: %d spaces, %d valid configs\n", what, n_spaces, n_valid);
}

START_TEST(largest_accepted_workloads_pass_every_template_without_overflow) {
  ct_workload w;
  /* most channels, largest stride, pad and dilation on a 1x1 input */
  workload_init(&w, CT_OP_CONV2D);
  w.c = CT_MAX_CHANNELS, w.k = 1 << 12; /* weights 2^30 */
  for (int d = 0; d < 2; d++) {
    w.in[d] = 1, w.kernel[d] = 2, w.stride[d] = CT_MAX_STRIDE, w.dilation[d] = CT_MAX_DILATION;
    w.pad_before[d] = w.pad_after[d] = CT_MAX_PAD;
  }
  extremes_through_templates(&w, "most channels");
  /* the largest kernel and dilation along h, the widest input along w */
  workload_init(&w, CT_OP_CONV2D);
  w.c = 4, w.k = 4;
  w.kernel[0] = CT_MAX_KERNEL, w.dilation[0] = CT_MAX_DILATION, w.stride[0] = CT_MAX_STRIDE;
  w.in[0] = CT_MAX_DILATION * (CT_MAX_KERNEL - 1) + 1 - 2 * CT_MAX_PAD;
  w.pad_before[0] = w.pad_after[0] = CT_MAX_PAD;
  w.in[1] = 64, w.kernel[1] = 3, w.stride[1] = CT_MAX_STRIDE;
  extremes_through_templates(&w, "largest kernel x dilation");
  workload_init(&w, CT_OP_CONV2D);
  w.c = 4, w.k = 4, w.in[0] = 1, w.in[1] = CT_MAX_ELEMS / 4;
  for (int d = 0; d < 2; d++)
    w.kernel[d] = 1, w.stride[d] = CT_MAX_STRIDE, w.dilation[d] = CT_MAX_DILATION;
  w.pad_before[1] = w.pad_after[1] = CT_MAX_PAD;
  extremes_through_templates(&w, "widest input");
  /* the largest batch; conv3d with stride and pad at their bounds */
  workload_init(&w, CT_OP_CONV3D);
  w.n = CT_MAX_BATCH, w.c = 4, w.k = 4;
  for (int d = 0; d < 3; d++) w.in[d] = 4, w.kernel[d] = 3, w.pad_before[d] = w.pad_after[d] = 1;
  extremes_through_templates(&w, "largest batch");
  workload_init(&w, CT_OP_CONV3D);
  w.c = 64, w.k = 64;
  for (int d = 0; d < 3; d++) {
    w.in[d] = 16, w.kernel[d] = 3, w.stride[d] = CT_MAX_STRIDE, w.dilation[d] = CT_MAX_DILATION;
    w.pad_before[d] = w.pad_after[d] = CT_MAX_PAD;
  }
  extremes_through_templates(&w, "conv3d, stride, pad and dilation at their bounds");
  /* the channels-last stem shape of the report: c = 3 */
  workload_init(&w, CT_OP_CONV2D);
  w.c = 3, w.k = 64;
  for (int d = 0; d < 2; d++) {
    w.in[d] = 224, w.kernel[d] = 7, w.stride[d] = CT_MAX_STRIDE;
    w.pad_before[d] = w.pad_after[d] = CT_MAX_PAD;
  }
  extremes_through_templates(&w, "c = 3, stride and pad at their bounds");
}
END_TEST

/* Every registered template (loop index _i into template_all()): n_compile
 * draws of random valid configs, compiled. A template added to the
 * registry is drawn here without any edit to this file. */
START_TEST(random_valid_configs_compile) {
  const template_desc *tpl = template_all()[_i];
  sample_and_compile(tpl, n_compile, cores());
  printf("templates: %s: %ld random configs drawn and compiled\n", tpl->name, n_compile);
  fflush(stdout);
}
END_TEST

static int n_templates(void) {
  int n = 0;
  while (template_all()[n]) n++;
  return n;
}

static void add_templates(TCase *tc) {
  tcase_add_test(tc, unsupported_workloads_are_refused);
  tcase_add_test(tc, fused_workloads_are_refused_with_the_reason);
  tcase_add_test(tc, invalid_configs_are_rejected_before_compiling_with_the_reason);
  tcase_add_test(tc, nhwc_split_k_meets_in_a_cluster);
  tcase_add_test(tc, nhwc_k_slices_group_a_stage);
  tcase_add_test(tc, nhwc_persistent_blocks_loop_over_tiles);
  tcase_add_test(tc, nhwc_out_stage_and_tile_requant_exist_with_8_bit_output_only);
}

/* The checks that end in NVRTC compiles (ptxas's log, a static_assert's
 * message): tag compile, so that the sanitizer builds leave them out as
 * they leave case compile out (NVRTC is not instrumented; the instances'
 * host code runs in the cases above and in tests/fuzz/fuzz_templates.c). */
static void add_templates_nvrtc(TCase *tc) {
  tcase_set_tags(tc, "compile");
  tcase_add_test(tc, a_point_that_slips_through_fails_to_compile_with_a_clear_log);
  tcase_add_test(tc, wgmma_split_k_is_a_cluster_along_z);
  tcase_add_test(tc, nhwc_instances_carry_an_im2col_and_a_tiled_tensor_map);
  tcase_add_test(tc, gpu_reference_compiles);
  tcase_add_test(tc, nhwc_mma_stages_window_rows);
  tcase_add_test(tc, nhwc_wgmma_stem_stages_a_depth_tap);
  tcase_add_test(tc, nhwc_wgmma_stem_out_tma_and_prefetch);
  tcase_add_test(tc, nhwc_wgmma_stem_out_stage);
  tcase_add_test(tc, nhwc_wgmma_stem_packs_rows);
}

/* The checks that loop over the registry (template_all), so that a new
 * template is checked with no edit here; tag registry (CK_INCLUDE_TAGS=registry
 * runs them and case compile alone, as test_templates_extra does). */
static void add_registry(TCase *tc) {
  tcase_set_tags(tc, "registry");
  tcase_add_test(tc, templates_are_registered_with_versions);
  tcase_add_test(tc, spaces_cover_every_layer_and_are_large);
  tcase_add_test(tc, largest_accepted_workloads_pass_every_template_without_overflow);
}

/* CK_RUN_CASE=compile: the compile draws alone (test_templates_sweep);
 * tags registry (test_templates_extra) and compile (left out under the
 * sanitizers). */
static void add_compile(TCase *tc) {
  tcase_set_tags(tc, "registry compile");
  tcase_add_loop_test(tc, random_valid_configs_compile, 0, n_templates());
}

static const test_case suite_cases[] = {
    {"templates", 3000, add_templates},
    {"templates_nvrtc", 3000, add_templates_nvrtc},
    {"registry", 3000, add_registry},
    {"compile", 3000, add_compile},
    {NULL, 0, NULL},
};

int main(int argc, char **argv) {
  if (argc > 1) n_compile = atol(argv[1]);
  static const test_suite suite = {"templates", suite_cases, 0, NULL};
  return test_main(&suite);
}
