/*
 * cubin_sums.c: a fingerprint of every template's kernels, to prove that a
 * change to the descriptors (not the kernels) leaves every cubin as it was.
 *
 * For each template, the layers of its embedded sets (resnet50 and resnet18,
 * or resnet3d18, in the layout the template takes) each with an epilogue
 * variant, it draws configs from a fixed seed and prints one line a config:
 * template, arch, workload key, the config (knob=value) and the 64-bit
 * FNV-1a hash of the cubin NVRTC makes, on sm_90 (132 SMs, so that the
 * persistent schedules are valid) and, for the templates that allow it,
 * sm_80. Run it before and after a change and diff the outputs: the same
 * lines mean the same spaces, the same sampling (so the same validity) and
 * the same machine code. CPU only (NVRTC needs no GPU); one process, about
 * 1 s a compile, so `cubin_sums N` (N configs per template and arch,
 * default 24) takes some minutes. A config that fails to compile prints
 * "compile-error"; exit status 1 on any engine error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wlset.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"
#include "tests/epilogue_variant.h"

static uint64_t fnv1a(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

/* The template's workloads (n of them, at most max) that it supports. */
static int workloads(const template_desc *tpl, ct_workload *out, int max) {
  const char *names2[] = {"resnet50", "resnet18", NULL}, *names3[] = {"resnet3d18", NULL};
  const char **names = tpl->op == CT_OP_CONV2D ? names2 : names3;
  int n = 0;
  for (int i = 0; names[i]; i++) {
    wlset *s = NULL;
    ct_err err = {0};
    if (wlset_load_named(names[i], 1, &s, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      exit(1);
    }
    for (int j = 0; j < s->n_items && n < max; j++) {
      ct_workload w = s->items[j].w;
      if (tpl->layout == CT_LAYOUT_NHWC)
        w.layout = CT_LAYOUT_NHWC;
      else
        workload_packed(&s->items[j].w, &w);
      char why[TEMPLATE_WHY_MAX];
      if (workload_validate(&w, &err) == CT_OK && tpl->supports(&w, why)) out[n++] = w;
    }
    wlset_free(s);
  }
  return n;
}

int main(int argc, char **argv) {
  const long per = argc > 1 ? atol(argv[1]) : 24;
  const char *only = argc > 2 ? argv[2] : NULL;
  const template_desc *const *all = template_all();
  int bad = 0;
  for (int t = 0; all[t]; t++) {
    const template_desc *tpl = all[t];
    if (only && strcmp(only, tpl->name)) continue;
    ct_workload ws[128];
    const int n_ws = workloads(tpl, ws, 128);
    if (n_ws == 0) {
      fprintf(stderr, "%s: no workload\n", tpl->name);
      bad = 1;
      continue;
    }
    const char *archs[] = {"sm_90", "sm_80"};
    for (int ai = 0; ai < 2; ai++) {
      arch a;
      arch_from_name(archs[ai], &a, NULL);
      if (ai == 0) a.sm_count = 132;
      rng r;
      rng_seed(&r, 0x5EED + 131 * (uint64_t)t + ai);
      /* workloads in a stride through the list: spread over the set */
      for (long i = 0; i < per; i++) {
        const ct_workload w = epilogue_variant(&ws[(i * 7) % n_ws], (int)i);
        space sp;
        ct_err err = {0};
        if (template_space(tpl, &w, &sp, &err)) continue; /* e.g. a zero point with padding */
        config c;
        if (template_sample(tpl, &w, &sp, &a, &r, 200000, &c, &err)) {
          space_free(&sp);
          if (ai == 1) break; /* sm_80: a wgmma template has none */
          continue;
        }
        instance inst;
        char text[512], key[CT_KEY_MAX];
        if (instance_make(tpl, &w, &sp, &c, &a, &inst, &err)) {
          fprintf(stderr, "%s: %s\n", tpl->name, err.msg);
          bad = 1;
          space_free(&sp);
          continue;
        }
        cubin cb;
        ct_status st = nvrtc_compile(&inst, &a, &cb, &err);
        char sum[32];
        if (st == CT_OK)
          snprintf(sum, sizeof sum, "%016llx", (unsigned long long)fnv1a(cb.data, cb.size));
        else
          snprintf(sum, sizeof sum, "compile-error");
        printf("%s %s %s %s %s\n", tpl->name, a.name, workload_key(&w, key, sizeof key),
               space_config_str(&sp, &c, text, sizeof text), sum);
        fflush(stdout);
        cubin_free(&cb);
        space_free(&sp);
      }
    }
  }
  return bad;
}
