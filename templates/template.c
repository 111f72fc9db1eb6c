/*
 * template.c: the registry of templates, their embedded sources and
 * versions, and what every template shares: space building with a support
 * check, instance_make, and sampling of valid configs by rejection (uniform
 * over the valid configs because the draws are uniform over the whole
 * space; the cost is 1 / valid share draws per sample).
 */
#include "templates/template.h"

#include <stdio.h>
#include <string.h>

#include "core/embed.h"

extern const embedded_file embedded_templates[];
extern const int embedded_template_headers_count;
extern const char *const embedded_template_headers_names[];
extern const char *const embedded_template_headers_data[];

extern const template_desc tpl_conv2d_nchw4c_dp4a;
extern const template_desc tpl_conv3d_ncdhw4c_dp4a;
extern const template_desc tpl_conv2d_nchw4c_mma;
extern const template_desc tpl_conv3d_ncdhw4c_mma;

/* The tensor-core templates first: where nothing is tuned, the dispatch
 * library's default comes from the first template that has a valid one on
 * the device (the mma ones need sm_80). */
static const template_desc *const all[] = {&tpl_conv2d_nchw4c_mma, &tpl_conv3d_ncdhw4c_mma,
                                           &tpl_conv2d_nchw4c_dp4a, &tpl_conv3d_ncdhw4c_dp4a,
                                           NULL};

const template_desc *const *template_all(void) {
  return all;
}

const template_desc *template_find(const char *name) {
  for (int i = 0; name && all[i]; i++)
    if (strcmp(all[i]->name, name) == 0) return all[i];
  return NULL;
}

const char *template_source(const template_desc *tpl) {
  const embedded_file *f = embed_find(embedded_templates, tpl->source);
  return f ? f->data : NULL;
}

const char *template_embedded(const char *file) {
  const embedded_file *f = embed_find(embedded_templates, file);
  return f ? f->data : NULL;
}

int template_headers(const char *const **names, const char *const **sources) {
  *names = embedded_template_headers_names;
  *sources = embedded_template_headers_data;
  return embedded_template_headers_count;
}

const char *template_version(const template_desc *tpl) {
  const embedded_file *f = embed_find(embedded_templates, tpl->source);
  return f ? f->hash : "unknown";
}

ct_status template_space(const template_desc *tpl, const ct_workload *w, space *out, ct_err *err) {
  ct_status st = workload_validate(w, err);
  if (st) return st;
  char why[TEMPLATE_WHY_MAX];
  if (!tpl->supports(w, why))
    return ERR_SET(err, CT_ERR_UNSUPPORTED, "template %s cannot run this workload: %s", tpl->name,
                   why);
  space_init(out);
  st = tpl->space(w, out, err);
  if (st) space_free(out);
  return st;
}

ct_status instance_make(const template_desc *tpl, const ct_workload *w, const space *s,
                        const config *cfg, const arch *a, instance *out, ct_err *err) {
  char why[TEMPLATE_WHY_MAX];
  if (!tpl->valid(w, s, cfg, a, why)) {
    char text[256];
    return ERR_SET(err, CT_ERR_INVALID_ARG, "config %s is not valid for %s on %s: %s",
                   space_config_str(s, cfg, text, sizeof text), tpl->name, a->name, why);
  }
  memset(out, 0, sizeof *out);
  out->tpl = tpl;
  return tpl->instance(w, s, cfg, a, out, err);
}

ct_status template_sample(const template_desc *tpl, const ct_workload *w, const space *s,
                          const arch *a, rng *r, long max_tries, config *out, ct_err *err) {
  for (long i = 0; i < max_tries; i++) {
    space_random(s, r, out);
    if (tpl->valid(w, s, out, a, NULL)) return CT_OK;
  }
  return ERR_SET(err, CT_ERR_NOT_FOUND, "%s: no valid config in %ld random draws (space of %llu)",
                 tpl->name, max_tries, (unsigned long long)s->size);
}

double template_valid_share(const template_desc *tpl, const ct_workload *w, const space *s,
                            const arch *a, rng *r, long n) {
  long ok = 0;
  config c;
  for (long i = 0; i < n; i++) {
    space_random(s, r, &c);
    ok += tpl->valid(w, s, &c, a, NULL);
  }
  return n > 0 ? (double)ok / n : 0.0;
}

ct_status template_neighbor(const template_desc *tpl, const ct_workload *w, const space *s,
                            const arch *a, rng *r, const config *cfg, long max_tries, config *out,
                            ct_err *err) {
  for (long i = 0; i < max_tries; i++) {
    if (space_neighbor(s, r, cfg, out) < 0) break;
    if (tpl->valid(w, s, out, a, NULL)) return CT_OK;
  }
  return ERR_SET(err, CT_ERR_NOT_FOUND, "%s: no valid neighbour in %ld draws", tpl->name,
                 max_tries);
}
