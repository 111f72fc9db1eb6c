/*
 * cmd_space.c: `convtune space`: for each selected workload and each
 * template that can run it, print every knob with its candidates, the size
 * of the space, and the share of valid configs estimated by uniform
 * sampling (validity needs an architecture: this machine's GPU, --arch, or
 * sm_90 when there is no GPU).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gpu/device.h"
#include "templates/template.h"

static const char usage[] =
    "usage: convtune space [options] [KEY | '{JSON}']\n"
    "Print each template's knob space for the workloads: the candidates of every knob,\n"
    "the size of the space and an estimate of its valid share. Each template shows the\n"
    "workload in its layout: a plain one packed (channels padded to 4) for the channel-\n"
    "packed templates, an nhwc one as it is for the channels-last ones.\n"
    "\n"
    "Options:\n"
    "  --template NAME        only this template (default: every one that runs the workload)\n"
    "  --arch sm_XY           the architecture whose limits decide validity (default: this\n"
    "                         machine's GPU, else sm_90)\n"
    "  --samples N            draws for the valid-share estimate (default 100000)\n"
    "  --json                 print JSON\n"
    "  -v                     list every candidate (default: the first 6 of each knob)\n"
    "  -q                     no note on stderr when validity falls back to sm_90\n"
    "  -h, --help             this text\n"
    "\n";

static const char *kind_name(knob_kind k) {
  return k == KNOB_SPLIT ? "split" : k == KNOB_REORDER ? "reorder" : "choice";
}

static void print_cand(const knob *k, int i) {
  const int *v = k->cands + (size_t)i * k->width;
  if (k->kind == KNOB_CHOICE) {
    printf(" %d", v[0]);
    return;
  }
  printf(" [");
  for (int j = 0; j < k->width; j++) printf(j ? ",%d" : "%d", v[j]);
  printf("]");
}

static void print_text(const char *name, const ct_workload *w, const template_desc *tpl,
                       const space *sp, const arch *a, double share, long samples, int all) {
  char key[CT_KEY_MAX];
  printf("%s: %s\n", name, workload_key(w, key, sizeof key));
  printf("  template %s (version %s), validity on %s\n", tpl->name, template_version(tpl), a->name);
  for (int i = 0; i < sp->n_knobs; i++) {
    const knob *k = &sp->knobs[i];
    char what[48];
    if (k->kind == KNOB_SPLIT)
      snprintf(what, sizeof what, "split %d in %d", k->extent, k->width);
    else if (k->kind == KNOB_REORDER)
      snprintf(what, sizeof what, "reorder of %d", k->width);
    else
      snprintf(what, sizeof what, "choice");
    printf("  %-22s %-16s %5d:", k->name, what, k->n_cands);
    int shown = all || k->n_cands <= 8 ? k->n_cands : 6;
    for (int c = 0; c < shown; c++) print_cand(k, c);
    if (shown < k->n_cands) printf(" ... (-v lists all)");
    printf("\n");
  }
  printf("  space size %llu, valid share %.4g%% (%ld samples), about %.3g valid configs\n\n",
         (unsigned long long)sp->size, share * 100, samples, share * (double)sp->size);
}

static cJSON *space_json(const char *name, const ct_workload *w, const template_desc *tpl,
                         const space *sp, const arch *a, double share, long samples) {
  char key[CT_KEY_MAX];
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "key", workload_key(w, key, sizeof key));
  cJSON_AddStringToObject(o, "template", tpl->name);
  cJSON_AddStringToObject(o, "version", template_version(tpl));
  cJSON_AddStringToObject(o, "arch", a->name);
  cJSON *knobs = cJSON_AddArrayToObject(o, "knobs");
  for (int i = 0; i < sp->n_knobs; i++) {
    const knob *k = &sp->knobs[i];
    cJSON *kj = cJSON_CreateObject();
    cJSON_AddItemToArray(knobs, kj);
    cJSON_AddStringToObject(kj, "name", k->name);
    cJSON_AddStringToObject(kj, "kind", kind_name(k->kind));
    if (k->kind == KNOB_SPLIT) cJSON_AddNumberToObject(kj, "extent", k->extent);
    cJSON *cands = cJSON_AddArrayToObject(kj, "candidates");
    for (int c = 0; c < k->n_cands; c++) {
      const int *v = k->cands + (size_t)c * k->width;
      cJSON_AddItemToArray(cands, k->kind == KNOB_CHOICE ? cJSON_CreateNumber(v[0])
                                                         : cJSON_CreateIntArray(v, k->width));
    }
  }
  cJSON_AddNumberToObject(o, "size", (double)sp->size);
  cJSON_AddNumberToObject(o, "valid_share", share);
  cJSON_AddNumberToObject(o, "samples", (double)samples);
  return o;
}

/* The architecture validity is judged on. */
static int pick_arch(const char *name, arch *a, const cli_common *cc) {
  ct_err err = {0};
  if (name) {
    if (arch_from_name(name, a, &err)) return cli_fail(cc, &err);
    return EXIT_OK;
  }
  device dev;
  if (device_count() > 0 && device_open(0, &dev, &err) == CT_OK) {
    *a = dev.arch;
    return EXIT_OK;
  }
  if (cc->verbose >= 0)
    fprintf(stderr, "convtune space: no GPU here: validity on the limits of sm_90 (--arch to "
                    "choose)\n");
  arch_from_name("sm_90", a, NULL);
  return EXIT_OK;
}

int cmd_space(int argc, char **argv) {
  enum { O_JSON = 1, O_TEMPLATE, O_ARCH, O_SAMPLES };
  struct option opts[40] = {{"json", no_argument, 0, O_JSON},
                            {"template", required_argument, 0, O_TEMPLATE},
                            {"arch", required_argument, 0, O_ARCH},
                            {"samples", required_argument, 0, O_SAMPLES},
                            {"help", no_argument, 0, 'h'}};
  int n_opts = 5;
  for (const struct option *o = cli_wl_options; o->name; o++) opts[n_opts++] = *o;
  cli_common cc = {0};
  cli_wl sel = {0};
  const char *tpl_name = NULL, *arch_name = NULL;
  long samples = 100000;
  int json = 0, opt, rc = EXIT_OK;
  optind = 1;
  opterr = 0;
  while ((opt = cli_getopt("space", argc, argv, opts)) != -1) {
    if (cli_wl_option(&sel, opt, optarg)) continue;
    switch (opt) {
    case O_JSON:
      json = 1;
      break;
    case O_TEMPLATE:
      tpl_name = optarg;
      break;
    case O_ARCH:
      arch_name = optarg;
      break;
    case O_SAMPLES: {
      char *end;
      samples = strtol(optarg, &end, 10);
      if (*end || samples < 1 || samples > 100000000) {
        cli_wl_free(&sel);
        return cli_usage_error("space", "--samples: expected 1 to 100000000, got '%s'",
                               cli_quote(optarg));
      }
      break;
    }
    default: {
      int code = cli_common_option("space", opt, argv, usage, &cc);
      if (code != CLI_GO_ON) {
        cli_wl_free(&sel);
        return code;
      }
    }
    }
  }
  if (cli_positional("space", argc, argv, &sel) != CLI_GO_ON) {
    cli_wl_free(&sel);
    return EXIT_USAGE;
  }
  const template_desc *only = NULL;
  if (tpl_name && !(only = template_find(tpl_name))) {
    /* every name, or as many as fit (the registry grows: 20 names are
     * about 450 bytes); snprintf's count past the end must not be added */
    char names[1024] = "";
    size_t len = 0;
    for (int i = 0; template_all()[i] && len < sizeof names; i++) {
      int n =
          snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", template_all()[i]->name);
      if (n < 0) break;
      len += (size_t)n;
    }
    cli_wl_free(&sel);
    return cli_usage_error("space", "--template: no template named '%s'; the templates are %s",
                           cli_quote(tpl_name), names);
  }
  if (!sel.positional && !sel.file && !sel.set && !sel.flags) {
    cli_wl_free(&sel);
    return cli_usage_error("space", "no workload given");
  }
  ct_err err = {0};
  wlset *s = NULL;
  arch a;
  if (cli_wl_load(&sel, NULL, &s, &err)) {
    rc = cli_fail(&cc, &err);
    goto done;
  }
  if ((rc = pick_arch(arch_name, &a, &cc))) goto done;
  cJSON *list = json ? cJSON_CreateArray() : NULL;
  for (int i = 0; i < s->n_items; i++) {
    int shown = 0;
    for (int t = 0; template_all()[t]; t++) {
      const template_desc *tpl = template_all()[t];
      if (only && tpl != only) continue;
      /* the workload in the template's layout (the tuner's and dispatch's rule) */
      ct_workload w;
      if (!workload_for_layout(&s->items[i].w, tpl->layout, &w)) {
        if (!only) continue;
        w = s->items[i].w; /* the named template: its refusal says why */
      }
      if (!only && !tpl->supports(&w, NULL)) continue;
      space sp;
      if (template_space(tpl, &w, &sp, &err)) {
        rc = cli_fail(&cc, &err);
        break;
      }
      rng r;
      rng_seed(&r, 1);
      double share = template_valid_share(tpl, &w, &sp, &a, &r, samples);
      if (json)
        cJSON_AddItemToArray(list, space_json(s->items[i].name, &w, tpl, &sp, &a, share, samples));
      else
        print_text(s->items[i].name, &w, tpl, &sp, &a, share, samples, cc.verbose > 0);
      space_free(&sp);
      shown++;
    }
    if (!shown && !rc) {
      fprintf(stderr, "convtune space: %s: no template runs this workload\n", s->items[i].name);
      rc = EXIT_USAGE;
    }
    if (rc) break;
  }
  if (json) {
    char *text = cJSON_Print(list);
    if (text && !rc) puts(text);
    free(text);
    cJSON_Delete(list);
  }
done:
  wlset_free(s);
  cli_wl_free(&sel);
  return rc;
}
