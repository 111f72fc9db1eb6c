/*
 * template.c: the templates' embedded sources and versions, and what
 * every template shares: space building with a support
 * check, instance_make, and sampling of valid configs by rejection (uniform
 * over the valid configs because the draws are uniform over the whole
 * space; the cost is 1 / valid share draws per sample). Also what the
 * families' descriptors share: the knob tables (space, defaults, -D
 * options; a knob read is a scan of its table, a dozen rows), the support
 * check and the validity checks that more than one family makes.
 */
#include "templates/template.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/embed.h"

extern const embedded_file embedded_templates[];
extern const int embedded_template_headers_count;
extern const char *const embedded_template_headers_names[];
extern const char *const embedded_template_headers_data[];

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

const char *template_conv_refusal(const ct_workload *w, ct_op op) {
  if (w->op != op) return op == CT_OP_CONV2D ? "it runs conv2d only" : "it runs conv3d only";
  if (w->layout != CT_LAYOUT_NCHW4C)
    return op == CT_OP_CONV2D ? "it needs layout nchw4c" : "it needs layout ncdhw4c";
  if (w->weight_type != CT_DTYPE_INT8) return "it takes int8 weights";
  if (w->groups != 1) return "it runs groups = 1 only";
  return NULL;
}

int template_fail(char *why, const char *fmt, long a, long b) {
  if (why) snprintf(why, TEMPLATE_WHY_MAX, fmt, a, b);
  return 0;
}

int template_supports_pre(const ct_workload *w, ct_op op,
                          const char *(*refusal)(const ct_workload *w, ct_op op), char *why) {
  const char *reason = refusal(w, op);
  if (reason && why) snprintf(why, TEMPLATE_WHY_MAX, "%s", reason);
  return reason == NULL;
}

int template_supports(const ct_workload *w, ct_op op,
                      const char *(*refusal)(const ct_workload *w, ct_op op), char *why) {
  if (w->pre_c > 0) {
    if (why)
      snprintf(why, TEMPLATE_WHY_MAX,
               "it runs no fused pointwise convolution (pre_c %d): only the _pwdw family does",
               w->pre_c);
    return 0;
  }
  return template_supports_pre(w, op, refusal, why);
}

int template_need_sm90(const arch *a, char *why) {
  if (a->cc_major != 9 || a->cc_minor != 0)
    return template_fail(why, "wgmma needs sm_90a (compute capability 9.0), not sm_%ld%ld",
                         a->cc_major, a->cc_minor);
  return 1;
}

int template_regs_fit(const arch *a, long threads, long blocks_per_sm, long regs, char *why) {
  long cap = a->regs_per_block / threads / 8 * 8;
  if (blocks_per_sm > 1 && a->regs_per_sm / (blocks_per_sm * threads) / 8 * 8 < cap)
    cap = a->regs_per_sm / (blocks_per_sm * threads) / 8 * 8;
  if (cap > a->max_regs_per_thread) cap = a->max_regs_per_thread;
  if (regs > cap)
    return template_fail(why, "at least %ld registers per thread; at most %ld", regs, cap);
  return 1;
}

int template_tile_fits(const char *name, long tile, long floor, long have, const char *unit,
                       char *why) {
  if (tile > floor && tile >= 2 * have) {
    if (why)
      snprintf(why, TEMPLATE_WHY_MAX, "%s %ld for %ld %s: half the tile would be padding", name,
               tile, have, unit);
    return 0;
  }
  return 1;
}

int template_acc_fits(long acc, const char *name, long value, char *why) {
  if (acc > 128) {
    if (why)
      snprintf(why, TEMPLATE_WHY_MAX, "%ld accumulators per thread (%s %ld x block_n); at most 128",
               acc, name, value);
    return 0;
  }
  return 1;
}

int template_blocks_fit(const arch *a, long threads, long blocks_per_sm, long smem_bytes,
                        char *why) {
  if (threads > a->max_threads_per_block)
    return template_fail(why, "%ld threads per block; at most %ld", threads,
                         a->max_threads_per_block);
  if (smem_bytes > a->smem_optin_bytes)
    return template_fail(why, "%ld bytes of shared memory; at most %ld", smem_bytes,
                         a->smem_optin_bytes);
  /* 1 KB per block is the runtime's */
  if (blocks_per_sm * (smem_bytes + 1024) > a->smem_per_sm_bytes)
    return template_fail(why, "%ld blocks per SM of %ld bytes of shared memory exceed the SM's",
                         blocks_per_sm, smem_bytes);
  if (blocks_per_sm * threads > 2048)
    return template_fail(why, "%ld blocks per SM of %ld threads exceed 2048", blocks_per_sm,
                         threads);
  return 1;
}

int template_features(const double *v, int n, float *out, int max) {
  for (int i = 0; i < n && i < max; i++) out[i] = (float)log2(v[i]);
  return n < max ? n : max;
}

void template_grow_split(const ct_workload *w, const space *s, const arch *a, long tiles, long sms,
                         int (*valid)(const ct_workload *w, const space *s, const config *cfg,
                                      const arch *a, char *why),
                         config *out) {
  static const int split_ks[] = {1, 2, 4, 8};
  for (int k = 1; k < 4 && 2 * tiles * split_ks[k - 1] <= sms; k++) {
    config c = *out;
    if (!template_set_choice(s, &c, "split_k", split_ks[k]) || !valid(w, s, &c, a, NULL)) break;
    *out = c;
  }
}

int template_block_fits(const arch *a, long threads, long regs, long smem_bytes, char *why) {
  if (regs > a->max_regs_per_thread)
    return template_fail(why, "at least %ld registers per thread; at most %ld", regs,
                         a->max_regs_per_thread);
  if (regs * threads > a->regs_per_block)
    return template_fail(why, "at least %ld registers per block; at most %ld", regs * threads,
                         a->regs_per_block);
  if (smem_bytes > a->smem_optin_bytes)
    return template_fail(why, "%ld bytes of shared memory; at most %ld", smem_bytes,
                         a->smem_optin_bytes);
  return 1;
}

/* The row of knobs named name. */
static const knob_def *knob_row(const knob_def *knobs, const char *name) {
  for (; knobs->name; knobs++)
    if (knobs->name[0] == name[0] && strcmp(knobs->name, name) == 0) return knobs;
  return NULL;
}

ct_status knobs_space(const knob_def *knobs, const ct_workload *w, space *s, ct_err *err) {
  ct_status st = CT_OK;
  for (const knob_def *k = knobs; k->name && !st; k++) {
    if ((k->only3d && w->op != CT_OP_CONV3D) || (k->when && !k->when(w))) continue;
    if (k->kind == KNOB_CHOICE)
      st = space_add_choice(s, k->name, k->values, k->n_values, err);
    else if (k->kind == KNOB_SPLIT)
      st = space_add_split(s, k->name, k->extent(w), (int)strlen(k->parts), err);
    else
      st = space_add_reorder(s, k->name, k->extent(w), err);
  }
  return st;
}

/* One search of the space when the knob is in it (valid() reads every knob
 * of a config and sampling calls it millions of times: the table is read
 * only for an absent knob's default). */
int knobs_get(const knob_def *knobs, const space *s, const config *cfg, const char *name) {
  const int at = space_find(s, name);
#ifndef NDEBUG
  const knob_def *row = knob_row(knobs, name);
  assert(row && row->kind == KNOB_CHOICE);
#endif
  if (at >= 0) return space_value(s, cfg, at)[0];
  const knob_def *k = knob_row(knobs, name);
  assert(k);
  return k->dflt;
}

char *knob_macro(const char *name, char *buf, size_t size) {
  size_t i = 0;
  for (; name[i] && i + 1 < size; i++) buf[i] = (char)toupper((unsigned char)name[i]);
  buf[i] = 0;
  return buf;
}

void knobs_options(const knob_def *knobs, const space *s, const config *cfg, instance *inst) {
  char macro[KNOB_NAME_MAX - 2], part[KNOB_NAME_MAX]; /* NAME_P within KNOB_NAME_MAX */
  for (const knob_def *k = knobs; k->name; k++) {
    knob_macro(k->name, macro, sizeof macro);
    if (k->kind == KNOB_CHOICE) {
      instance_opt(inst, macro, space_get(s, cfg, k->name, k->dflt));
    } else if (k->kind == KNOB_SPLIT) {
      const int at = space_find(s, k->name);
      for (int i = 0; k->parts[i]; i++) {
        snprintf(part, sizeof part, "%s_%c", macro, k->parts[i]);
        instance_opt(inst, part, at >= 0 ? space_value(s, cfg, at)[i] : 1);
      }
    }
  }
}

void instance_opt(instance *inst, const char *name, long value) {
  if (inst->n_options < INSTANCE_MAX_OPTIONS)
    snprintf(inst->options[inst->n_options++], INSTANCE_OPTION_MAX, "-D%s=%ld", name, value);
}

void instance_conv_options(instance *inst, const ct_workload *w) {
  geom3 g;
  workload_geom(w, &g);
  instance_opt(inst, "CT_N", g.n);
  instance_opt(inst, "CT_C4", g.c / 4);
  instance_opt(inst, "CT_K4", (g.k + 3) / 4);
  const ct_epilogue *e = &w->epi;
  instance_opt(inst, "CT_KR", g.k);
  instance_opt(inst, "CT_COUT", workload_out_channels(w));
  instance_opt(inst, "CT_DATA_U8", w->data_type == CT_DTYPE_UINT8);
  instance_opt(inst, "CT_OUT",
               w->out_type == CT_DTYPE_INT32  ? 0
               : w->out_type == CT_DTYPE_INT8 ? 1
                                              : 2);
  instance_opt(inst, "CT_OFF", e->bias || e->data_zero_point || e->weight_zero_point);
  instance_opt(inst, "CT_ZD", e->data_zero_point);
  instance_opt(inst, "CT_WZP", e->weight_zero_point);
  instance_opt(inst, "CT_QC", e->scale == CT_SCALE_CHANNEL);
  instance_opt(inst, "CT_RES", e->residual);
  instance_opt(inst, "CT_D2S", e->d2s_block);
  instance_opt(inst, "CT_D2S_CRD", e->d2s_mode == CT_D2S_CRD);
  instance_opt(inst, "CT_D2S_3D", w->op == CT_OP_CONV3D);
  instance_opt(inst, "CT_ONNX", e->rounding == CT_ROUND_ONNX);
  static const char dims[3] = {'D', 'H', 'W'};
  char name[32];
  for (int d = 0; d < 3; d++) {
    const struct {
      const char *fmt;
      long v;
    } shape[] = {{"CT_I%c", g.in[d]},    {"CT_K%c", g.ker[d]},    {"CT_STR_%c", g.str[d]},
                 {"CT_PAD_%c", g.pb[d]}, {"CT_PADA_%c", g.pa[d]}, {"CT_DIL_%c", g.dil[d]},
                 {"CT_O%c", g.out[d]}};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
      snprintf(name, sizeof name, shape[i].fmt, dims[d]);
      instance_opt(inst, name, shape[i].v);
    }
  }
}

void tmap_tiled2(tmap_desc *t, int elem_bytes, int swizzle, unsigned long long cols,
                 unsigned long long rows, unsigned box_cols, unsigned box_rows) {
  memset(t, 0, sizeof *t);
  t->rank = 2;
  t->elem_bytes = elem_bytes;
  t->swizzle = swizzle;
  t->dims[0] = cols;
  t->dims[1] = rows;
  t->strides[0] = cols * (unsigned long long)elem_bytes;
  t->box[0] = box_cols;
  t->box[1] = box_rows;
  t->elem_strides[0] = t->elem_strides[1] = 1;
}

void instance_conv_args(instance *inst) {
  static const kernel_arg args[] = {ARG_DATA, ARG_WEIGHTS, ARG_OUT, ARG_PARAMS, ARG_RESIDUAL};
  inst->n_args = (int)(sizeof args / sizeof args[0]);
  for (int i = 0; i < inst->n_args; i++) inst->args[i] = args[i];
}

int template_set_choice(const space *s, config *cfg, const char *name, int value) {
  int k = space_find(s, name);
  if (k < 0) return 0;
  for (int i = 0; i < s->knobs[k].n_cands; i++)
    if (s->knobs[k].cands[i] == value) {
      cfg->choice[k] = i;
      return 1;
    }
  return 0;
}

int template_any_supports(const ct_workload *w) {
  const template_desc *const *all = template_all();
  for (int i = 0; w && all[i]; i++) {
    ct_workload tw;
    if (all[i]->op == w->op && workload_for_layout(w, all[i]->layout, &tw) &&
        all[i]->supports(&tw, NULL))
      return 1;
  }
  return 0;
}
