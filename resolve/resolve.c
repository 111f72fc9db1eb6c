/*
 * resolve.c: the lookup and fallback order of the dispatch library and the
 * tuner's first trials (see resolve.h). Cost: one indexed query for a tuned
 * workload; for an untuned one, a scan of the database's summary (one row
 * per tuned workload and device) and one query per candidate until one is
 * valid, then the default search (a few thousand validity checks, well
 * under a second).
 */
#include "resolve/resolve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

void resolution_free(resolution *r) {
  if (!r) return;
  space_free(&r->s);
  trial_free(&r->rec);
}

double resolve_distance(const ct_workload *a, const ct_workload *b) {
  double d = 0;
  int nd = workload_nd(a);
  for (int i = 0; i < nd; i++) {
    d += 4.0 * (a->kernel[i] != b->kernel[i]) + 4.0 * (a->stride[i] != b->stride[i]) +
         2.0 * (a->dilation[i] != b->dilation[i]) +
         1.0 * (a->pad_before[i] != b->pad_before[i] || a->pad_after[i] != b->pad_after[i]);
    d += fabs(log2((double)a->in[i] / b->in[i]));
  }
  d += fabs(log2((double)a->n / b->n)) + fabs(log2((double)a->c / b->c)) +
       fabs(log2((double)a->k / b->k));
  /* groups: channels per group, the shape of each group's reduction (a
   * dense layer is one group of all C) */
  d += 2.0 * fabs(log2((double)workload_cpg(a) / workload_cpg(b)));
  /* Another epilogue on the same shape: the same loops, a different store;
   * nearer than any change of shape, farther than the same epilogue. */
  d += 0.25 * (a->data_type != b->data_type) + 0.25 * (a->out_type != b->out_type) +
       0.25 * (memcmp(&a->epi, &b->epi, sizeof a->epi) != 0);
  /* a fused pointwise convolution: its reduction's depth, then its epilogue */
  if (a->pre_c > 0 && b->pre_c > 0)
    d += fabs(log2((double)a->pre_c / b->pre_c)) + 0.25 * (a->pre_data_type != b->pre_data_type) +
         0.25 * (memcmp(&a->pre_epi, &b->pre_epi, sizeof a->pre_epi) != 0);
  return d;
}

/* Lower is better: how far cfg's shape is from what tuning finds good. The
 * template's describe hook gives log2 of threads, vthreads, accumulators,
 * registers, shared memory, blocks, threads in flight, x per thread and
 * fuse_yx (conv_dp4a.c). */
static double default_score(const template_desc *tpl, const ct_workload *pw, const space *s,
                            const config *cfg, const arch *a) {
  float f[16];
  int n = tpl->describe ? tpl->describe(pw, s, cfg, f, 16) : 0;
  if (n < 9) return 0;
  double sms = a->sm_count > 0 ? a->sm_count : 100;
  double score = fabs(f[0] - 7.5)                                    /* 128-256 threads */
                 + 0.5 * f[1]                                        /* vthreads */
                 + 0.5 * fabs(f[2] - 3.0)                            /* about 8 accumulators */
                 + (f[5] < log2(2 * sms) ? log2(2 * sms) - f[5] : 0) /* blocks for every SM */
                 + (f[4] > 15.6 ? f[4] - 15.6 : 0)                   /* over 48 KB of shared */
                 + (f[8] < 0.5 ? 1.0 : 0);                           /* spatial threads fastest */
  int unroll = space_get(s, cfg, "auto_unroll_max_step", 512);
  int expl = space_get(s, cfg, "unroll_explicit", 1);
  if (unroll != 512 || !expl) score += 0.25;
  return score;
}

ct_status resolve_default(const template_desc *tpl, const ct_workload *pw, const space *s,
                          const arch *a, config *out, ct_err *err) {
  if (tpl->preferred) {
    if (tpl->preferred(pw, s, a, out)) return CT_OK;
    return ERR_SET(err, CT_ERR_NOT_FOUND, "%s: no valid config found for the default on %s",
                   tpl->name, a->name);
  }
  rng r;
  rng_seed(&r, 20261122);
  double best = INFINITY;
  int found = 0;
  for (int i = 0; i < 3000; i++) {
    config c;
    if (template_sample(tpl, pw, s, a, &r, 20000, &c, NULL)) break;
    double score = default_score(tpl, pw, s, &c, a);
    if (!found || score < best) {
      best = score;
      *out = c;
      found = 1;
    }
  }
  if (!found)
    return ERR_SET(err, CT_ERR_NOT_FOUND, "%s: no valid config found for the default on %s",
                   tpl->name, a->name);
  return CT_OK;
}

/* Carry a config to another workload: a split whose factors do not
 * multiply to this space's extent keeps its inner factors (vthread, thread,
 * inner: the shape of a block) and takes the outermost one (the number of
 * blocks) from the new extent when that divides. A batch-16 workload can so
 * reuse a batch-1 config with 16 times the blocks. */
static void adapt_splits(const space *s, cJSON *j) {
  for (int k = 0; k < s->n_knobs; k++) {
    const knob *kb = &s->knobs[k];
    cJSON *v = cJSON_GetObjectItemCaseSensitive(j, kb->name);
    if (kb->kind != KNOB_SPLIT || !cJSON_IsArray(v) || cJSON_GetArraySize(v) != kb->width) continue;
    long inner = 1;
    for (int i = 1; i < kb->width; i++) inner *= cJSON_GetArrayItem(v, i)->valueint;
    if (inner > 0 && kb->extent % inner == 0)
      cJSON_ReplaceItemInArray(v, 0, cJSON_CreateNumber(kb->extent / inner));
  }
}

/* Carry a config to a space with other knobs (a template's space depends
 * on the workload: 8-bit output has knobs that int32 output has not): drop
 * the knobs the space lacks, and take those the config lacks from the
 * template's default for r's workload. Their indices into miss; returns
 * how many. */
static int match_knobs(const resolution *r, const arch *a, cJSON *j, int *miss) {
  for (cJSON *e = j->child; e;) {
    cJSON *next = e->next;
    if (space_find(&r->s, e->string) < 0) cJSON_Delete(cJSON_DetachItemViaPointer(j, e));
    e = next;
  }
  int n = 0;
  for (int k = 0; k < r->s.n_knobs; k++)
    if (!cJSON_GetObjectItemCaseSensitive(j, r->s.knobs[k].name)) miss[n++] = k;
  config d;
  if (!n || resolve_default(r->tpl, &r->pw, &r->s, a, &d, NULL) != CT_OK) return n;
  cJSON *dj = space_config_to_json(&r->s, &d);
  for (int i = 0; dj && i < n; i++) {
    const char *name = r->s.knobs[miss[i]].name;
    cJSON_AddItemToObject(j, name, cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(dj, name), 1));
  }
  cJSON_Delete(dj);
  return n;
}

/* The knobs c took from the default (miss) set otherwise, in index order,
 * until c is valid (at most 256 tries); 1 if one is. */
static int other_fill(const resolution *r, const arch *a, config *c, const int *miss, int n) {
  long combos = 1;
  for (int i = 0; i < n && combos <= 256; i++) combos *= r->s.knobs[miss[i]].n_cands;
  if (combos > 256) return 0;
  config t = *c;
  for (long x = 0; x < combos; x++) {
    long rest = x;
    for (int i = 0; i < n; i++) {
      const int nc = r->s.knobs[miss[i]].n_cands;
      t.choice[miss[i]] = (int)(rest % nc);
      rest /= nc;
    }
    if (r->tpl->valid(&r->pw, &r->s, &t, a, NULL)) {
      *c = t;
      return 1;
    }
  }
  return 0;
}

/* Parse rec's config in r's space (adapted, see adapt_splits and
 * match_knobs: where the default's values for the knobs it lacks make it
 * invalid, the first others that do not); 1 if it is a valid config
 * there. */
static int take_config(resolution *r, const arch *a, const trial *rec) {
  cJSON *j = NULL;
  config c;
  int miss[SPACE_MAX_KNOBS], n_miss = 0;
  int parsed = json_parse(rec->config_json, "config", &j, NULL) == CT_OK && cJSON_IsObject(j);
  if (parsed) {
    adapt_splits(&r->s, j);
    n_miss = match_knobs(r, a, j, miss);
  }
  int ok = parsed && space_config_from_json(&r->s, j, &c, NULL) == CT_OK;
  if (ok && !r->tpl->valid(&r->pw, &r->s, &c, a, NULL))
    ok = n_miss > 0 && other_fill(r, a, &c, miss, n_miss);
  cJSON_Delete(j);
  if (ok) r->cfg = c;
  return ok;
}

static void explain_record(resolution *r, ct_source source, const char *why) {
  r->ex.source = source;
  snprintf(r->ex.tuned_key, sizeof r->ex.tuned_key, "%s", r->rec.workload_key);
  snprintf(r->ex.device, sizeof r->ex.device, "%s", r->rec.device.name);
  r->ex.measured_us = r->rec.median_us;
  snprintf(r->ex.reason, sizeof r->ex.reason, "%s", why);
}

/* A layer's kind: dense, depthwise (one channel a group) or grouped. */
static int layer_kind(const ct_workload *w) {
  return w->groups <= 1 ? 0 : w->groups == w->c ? 1 : 2;
}

/* (3): the nearest tuned workload whose best config is valid for pw; its
 * distance into *dist. */
static int try_nearest(db *d, const db_device *dev, const arch *a, resolution *r, double *dist) {
  db_summary *rows = NULL;
  int n = 0;
  if (db_list(d, &rows, &n, NULL) || n == 0) {
    free(rows);
    return 0;
  }
  /* candidates: distinct keys of the same op, layout and kind, nearest
   * first (a template that runs several kinds, as conv2d_nhwc_mma does,
   * tuned on one is no guide to another: mma ran depthwise layers 5-42x
   * slower than the depthwise family's default, which they get instead) */
  typedef struct cand {
    double dist;
    int row;
  } cand;
  cand *c = malloc(sizeof *c * n);
  int m = 0;
  char key[CT_KEY_MAX];
  workload_key(&r->pw, key, sizeof key);
  for (int i = 0; c && i < n; i++) {
    ct_workload o;
    if (!strcmp(rows[i].workload_key, key) || workload_from_key(rows[i].workload_key, &o, NULL) ||
        o.op != r->pw.op || o.layout != r->pw.layout || (o.pre_c > 0) != (r->pw.pre_c > 0) ||
        layer_kind(&o) != layer_kind(&r->pw) || !rows[i].n_ok)
      continue;
    int dup = 0;
    for (int j = 0; j < m && !dup; j++)
      dup = !strcmp(rows[c[j].row].workload_key, rows[i].workload_key);
    if (dup) continue;
    c[m++] = (cand){resolve_distance(&r->pw, &o), i};
  }
  /* insertion sort: a database holds tens to hundreds of tuned workloads */
  for (int i = 1; i < m; i++)
    for (int j = i; j > 0 && c[j].dist < c[j - 1].dist; j--) {
      cand t = c[j];
      c[j] = c[j - 1];
      c[j - 1] = t;
    }
  int found = 0;
  for (int i = 0; i < m && !found; i++) {
    trial rec;
    db_match match;
    if (db_best(d, rows[c[i].row].workload_key, dev, r->tpl->name, template_version(r->tpl), &rec,
                &match, NULL))
      continue;
    if (take_config(r, a, &rec)) {
      r->rec = rec;
      found = 1;
      *dist = c[i].dist;
      char why[256];
      snprintf(why, sizeof why,
               "not tuned here; the best config of the nearest tuned workload that is valid "
               "for it (%d candidates, distance %.2f)",
               m, c[i].dist);
      explain_record(r, CT_SOURCE_NEAREST, why);
    } else {
      trial_free(&rec);
    }
  }
  free(c);
  free(rows);
  return found;
}

/* An empty resolution of pw by tpl, with pw's space built (resolution_free
 * releases it), for the tuner's single-template lookups. */
static ct_status resolution_for(resolution *r, const template_desc *tpl, const ct_workload *pw,
                                ct_err *err) {
  memset(r, 0, sizeof *r);
  r->tpl = tpl;
  r->pw = *pw;
  return template_space(tpl, pw, &r->s, err);
}

ct_status resolve_nearest(db *d, const db_device *dev, const arch *a, const template_desc *tpl,
                          const ct_workload *pw, config *out, char *key, size_t key_size,
                          int *found, ct_err *err) {
  *found = 0;
  if (key && key_size) key[0] = '\0';
  if (!d) return CT_OK;
  resolution r;
  ct_status st = resolution_for(&r, tpl, pw, err);
  if (st) return st;
  double dist;
  if (try_nearest(d, dev, a, &r, &dist)) {
    *out = r.cfg;
    *found = 1;
    if (key && key_size) snprintf(key, key_size, "%s", r.rec.workload_key);
  }
  resolution_free(&r);
  return CT_OK;
}

ct_status resolve_retired(db *d, const db_device *dev, const arch *a, const template_desc *tpl,
                          const ct_workload *pw, config *out, int *found, ct_err *err) {
  *found = 0;
  if (!d) return CT_OK;
  resolution r;
  ct_status st = resolution_for(&r, tpl, pw, err);
  if (st) return st;
  char key[CT_KEY_MAX];
  workload_key(pw, key, sizeof key);
  if (db_best_retired(d, key, dev, tpl->name, template_version(tpl), &r.rec, NULL, NULL) == CT_OK &&
      take_config(&r, a, &r.rec)) {
    *out = r.cfg;
    *found = 1;
  }
  resolution_free(&r);
  return CT_OK;
}

static int takes_layout(const template_desc *tpl, const ct_workload *w, ct_workload *pw);

/* (0): w's pick on dev (db.h, db_picked: a config chosen by its time in a
 * model's chain) into *r, where its template is compiled in at the pick's
 * version, takes w's layout and runs it, and its config is valid: 1, with
 * the pick's timestamp in *when. */
static int try_pick(db *d, const db_device *dev, const arch *a, const ct_workload *w, resolution *r,
                    double *when) {
  /* the key the chain ran: plain nchw runs packed */
  ct_workload kw = *w;
  if (w->layout == CT_LAYOUT_NCHW) workload_packed(w, &kw);
  char key[CT_KEY_MAX];
  workload_key(&kw, key, sizeof key);
  trial rec;
  db_pick pk;
  int found = 0;
  if (db_picked(d, key, dev, &rec, &pk, &found, NULL) != CT_OK || !found) return 0;
  memset(r, 0, sizeof *r);
  r->tpl = template_find(rec.template_name);
  int ok = r->tpl && !strcmp(rec.template_version, template_version(r->tpl)) &&
           takes_layout(r->tpl, w, &r->pw) && r->tpl->supports(&r->pw, NULL) &&
           !template_space(r->tpl, &r->pw, &r->s, NULL) && take_config(r, a, &rec);
  if (!ok) {
    trial_free(&rec);
    resolution_free(r);
    memset(r, 0, sizeof *r);
    return 0;
  }
  r->rec = rec;
  char why[256];
  snprintf(why, sizeof why,
           "chosen by its time in a model's chain (%.120s: %.1f us, %.1f with the fastest "
           "records)",
           pk.model, pk.chain_us, pk.base_us);
  explain_record(r, CT_SOURCE_CHAIN, why);
  *when = pk.timestamp;
  return 1;
}

ct_status resolve_config(const ct_workload *w, const char *template_name, const char *config_json,
                         const arch *a, resolution *out, ct_err *err) {
  memset(out, 0, sizeof *out);
  ct_status st = workload_validate(w, err);
  if (st) return st;
  out->tpl = template_find(template_name);
  if (!out->tpl) return ERR_SET(err, CT_ERR_INVALID_ARG, "no template %s", template_name);
  if (!takes_layout(out->tpl, w, &out->pw) || !out->tpl->supports(&out->pw, NULL)) {
    char key[CT_KEY_MAX];
    return ERR_SET(err, CT_ERR_UNSUPPORTED, "%s does not run %s", template_name,
                   workload_key(w, key, sizeof key));
  }
  if ((st = template_space(out->tpl, &out->pw, &out->s, err))) {
    resolution_free(out);
    return st;
  }
  trial rec;
  memset(&rec, 0, sizeof rec);
  rec.config_json = (char *)config_json;
  if (!take_config(out, a, &rec)) {
    resolution_free(out);
    return ERR_SET(err, CT_ERR_INVALID_ARG, "%s: config %.200s is not valid here", template_name,
                   config_json);
  }
  out->ex.source = CT_SOURCE_CHAIN;
  snprintf(out->ex.reason, sizeof out->ex.reason, "given by the caller");
  snprintf(out->ex.template_name, sizeof out->ex.template_name, "%s", template_name);
  snprintf(out->ex.config, sizeof out->ex.config, "%s", config_json);
  return CT_OK;
}

/* (1) and (2) for one template: 1 with r->rec and r->cfg set, and the
 * match in *match. */
static int try_exact(db *d, const db_device *dev, const arch *a, resolution *r, db_match *match) {
  char key[CT_KEY_MAX];
  workload_key(&r->pw, key, sizeof key);
  trial rec;
  if (db_best(d, key, dev, r->tpl->name, template_version(r->tpl), &rec, match, NULL) != CT_OK)
    return 0;
  r->rec = rec;
  if (!take_config(r, a, &r->rec)) {
    trial_free(&r->rec);
    memset(&r->rec, 0, sizeof r->rec);
    return 0;
  }
  if (*match == DB_MATCH_DEVICE)
    explain_record(r, CT_SOURCE_EXACT, "tuned on this device");
  else
    explain_record(r, CT_SOURCE_SAME_CC, "tuned on another device of this compute capability");
  return 1;
}

/* The workload tpl runs for w into *pw: 1 when tpl takes w's layout
 * (core/workload.h, workload_for_layout: the rule the tuner selects by). */
static int takes_layout(const template_desc *tpl, const ct_workload *w, ct_workload *pw) {
  return workload_for_layout(w, tpl->layout, pw);
}

/* Why no template runs w: the refusals of the templates of its op that take
 * its layout, "; "-joined into buf, or that none of its layout exists. */
static void refusals(const ct_workload *w, char *buf, size_t size) {
  const template_desc *const *all = template_all();
  int n = 0;
  buf[0] = '\0';
  for (int i = 0; all[i]; i++) {
    ct_workload pw;
    char why[TEMPLATE_WHY_MAX] = "";
    if (all[i]->op != w->op || !takes_layout(all[i], w, &pw)) continue;
    n++;
    if (all[i]->supports(&pw, why)) continue;
    err_join(buf, size, all[i]->name, why);
  }
  if (!n)
    snprintf(buf, size, "no template of layout %s is registered",
             workload_layout_name(w->layout, w->op));
}

/* For a channels-last workload no channels-last template runs on a: a
 * hint when a channel-packed template has a default for it there, else
 * "". (Before sm_90, nhwc's dense layers with C % 16 == 0 and K % 8 == 0,
 * the 1x1 ones aside, have only the wgmma templates.) */
static const char *packed_hint(const ct_workload *w, const arch *a) {
  if (w->layout != CT_LAYOUT_NHWC) return "";
  ct_workload pw;
  workload_packed(w, &pw);
  const template_desc *const *all = template_all();
  for (int i = 0; all[i]; i++) {
    if (all[i]->layout != CT_LAYOUT_NCHW4C || !all[i]->supports(&pw, NULL)) continue;
    space s;
    config c;
    if (template_space(all[i], &pw, &s, NULL)) continue;
    int ok = resolve_default(all[i], &pw, &s, a, &c, NULL) == CT_OK;
    space_free(&s);
    if (ok)
      return w->op == CT_OP_CONV2D
                 ? "; the channel-packed templates run it there: use layout nchw or nchw4c"
                 : "; the channel-packed templates run it there: use layout ncdhw or ncdhw4c";
  }
  return "";
}

/* Whether candidate b beats a: a rank (lower is better: 0 this device, 1
 * the same compute capability, 2 nearest), then the distance (nearest),
 * then the measured time. */
typedef struct standing {
  int rank;
  double dist, us;
} standing;

static int better(const standing *b, const standing *a) {
  if (b->rank != a->rank) return b->rank < a->rank;
  if (b->dist != a->dist) return b->dist < a->dist;
  return b->us < a->us;
}

ct_status resolve(db *d, const db_device *dev, const arch *a, const ct_workload *w, resolution *out,
                  ct_err *err) {
  memset(out, 0, sizeof *out);
  ct_status st = workload_validate(w, err);
  if (st) return st;
  /* every registered template that runs w in its layout (takes_layout) */
  const template_desc *const *all = template_all();
  int n_run = 0, n_tuned = 0;
  standing best_at = {0};
  resolution cur;
  for (int pass = 0; pass < 2; pass++) {
    /* pass 0: records of w itself; pass 1 (none): the nearest tuned workload */
    for (int i = 0; all[i]; i++) {
      memset(&cur, 0, sizeof cur);
      cur.tpl = all[i];
      if (!takes_layout(cur.tpl, w, &cur.pw) || !cur.tpl->supports(&cur.pw, NULL)) continue;
      if (pass == 0) n_run++;
      if (!d) continue;
      if ((st = template_space(cur.tpl, &cur.pw, &cur.s, err))) {
        resolution_free(out);
        return st;
      }
      standing at = {0};
      int ok = 0;
      db_match match;
      if (pass == 0 && (ok = try_exact(d, dev, a, &cur, &match))) {
        at.rank = match == DB_MATCH_DEVICE ? 0 : 1;
        n_tuned++;
      } else if (pass == 1 && (ok = try_nearest(d, dev, a, &cur, &at.dist))) {
        at.rank = 2;
      }
      at.us = cur.rec.median_us;
      if (ok && (!out->tpl || better(&at, &best_at))) {
        resolution_free(out);
        *out = cur;
        best_at = at;
      } else {
        resolution_free(&cur);
      }
    }
    if (out->tpl) break;
  }
  if (n_run == 0) {
    char why[768];
    refusals(w, why, sizeof why);
    return ERR_SET(err, CT_ERR_UNSUPPORTED, "no template runs this workload in layout %s: %s",
                   workload_layout_name(w->layout, w->op), why);
  }
  /* (0) the pick, unless a faster record of w on this device came after it */
  resolution pick;
  double picked_at = 0;
  if (d && try_pick(d, dev, a, w, &pick, &picked_at)) {
    if (out->tpl && best_at.rank == 0 && out->rec.timestamp > picked_at &&
        out->rec.median_us < pick.rec.median_us) {
      resolution_free(&pick);
    } else {
      resolution_free(out);
      *out = pick;
      n_tuned = 0;
    }
  }
  if (out->tpl && n_tuned > 1) {
    size_t len = strlen(out->ex.reason);
    snprintf(out->ex.reason + len, sizeof out->ex.reason - len,
             "; the fastest of %d templates tuned for it", n_tuned);
  }
  if (!out->tpl) {
    /* (4): the default of the first template that has one on a */
    ct_err why;
    char whys[768] = "";
    for (int i = 0; all[i] && !out->tpl; i++) {
      memset(&cur, 0, sizeof cur);
      cur.tpl = all[i];
      if (!takes_layout(cur.tpl, w, &cur.pw) || !cur.tpl->supports(&cur.pw, NULL)) continue;
      if ((st = template_space(cur.tpl, &cur.pw, &cur.s, err))) return st;
      err_clear(&why);
      if (resolve_default(cur.tpl, &cur.pw, &cur.s, a, &cur.cfg, &why) == CT_OK) {
        *out = cur;
      } else {
        resolution_free(&cur);
        err_join(whys, sizeof whys, NULL, why.msg);
      }
    }
    if (!out->tpl)
      return ERR_SET(err, CT_ERR_UNSUPPORTED,
                     "no template of layout %s has a valid config for this workload on %s (%s)%s",
                     workload_layout_name(w->layout, w->op), a->name, whys, packed_hint(w, a));
    out->ex.source = CT_SOURCE_DEFAULT;
    snprintf(out->ex.reason, sizeof out->ex.reason, "%s",
             d ? "no tuned workload has a config valid for it: the heuristic default"
               : "no database: the heuristic default");
  }
  snprintf(out->ex.template_name, sizeof out->ex.template_name, "%s", out->tpl->name);
  cJSON *j = space_config_to_json(&out->s, &out->cfg);
  char *text = j ? cJSON_PrintUnformatted(j) : NULL;
  snprintf(out->ex.config, sizeof out->ex.config, "%s", text ? text : "");
  free(text);
  cJSON_Delete(j);
  return CT_OK;
}

/* w's best record on dev or its compute capability (resolve's steps 1 and
 * 2): its median, or 0 (none, or no template runs w). */
static ct_status record_us(db *d, const db_device *dev, const arch *a, const ct_workload *w,
                           double *us, ct_err *err) {
  *us = 0;
  resolution r;
  ct_err e2;
  err_clear(&e2);
  ct_status st = resolve(d, dev, a, w, &r, &e2);
  if (st == CT_ERR_UNSUPPORTED) return CT_OK;
  if (st) {
    *err = e2;
    return st;
  }
  if ((r.ex.source == CT_SOURCE_EXACT || r.ex.source == CT_SOURCE_SAME_CC) && r.ex.measured_us > 0)
    *us = r.ex.measured_us;
  resolution_free(&r);
  return CT_OK;
}

ct_status resolve_fuse_estimate(db *d, const db_device *dev, const arch *a, const ct_workload *w,
                                fuse_estimate *out, ct_err *err) {
  memset(out, 0, sizeof *out);
  ct_status st = workload_validate(w, err);
  if (st) return st;
  if (w->pre_c <= 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "fuse estimate: the workload has no fused conv (pre_c 0)");
  ct_workload pre, m;
  workload_pre(w, &pre);
  workload_main(w, &m);
  if ((st = record_us(d, dev, a, w, &out->fused_us, err)) ||
      (st = record_us(d, dev, a, &pre, &out->pre_us, err)) ||
      (st = record_us(d, dev, a, &m, &out->main_us, err)))
    return st;
  out->mid_bytes = (double)workload_out_elems(&pre) * (double)workload_out_elem_bytes(&pre);
  out->known = out->fused_us > 0 && out->pre_us > 0 && out->main_us > 0;
  if (!out->known) {
    snprintf(out->why, sizeof out->why, "apart: no record of the %s",
             out->fused_us <= 0 ? "fused workload (tune it with --fuse)"
             : out->pre_us <= 0 ? "1x1 conv alone"
                                : "conv alone");
    return CT_OK;
  }
  out->gain_us = out->pre_us + out->main_us + RESOLVE_FUSE_LAUNCH_US - out->fused_us;
  snprintf(out->why, sizeof out->why,
           "%s: fused %.2f us against apart %.2f + %.2f and a launch %.1f (the intermediate's "
           "%.1f MB not credited): %.2f us %s",
           out->gain_us > 0 ? "fused" : "apart", out->fused_us, out->pre_us, out->main_us,
           RESOLVE_FUSE_LAUNCH_US, out->mid_bytes / 1e6, fabs(out->gain_us),
           out->gain_us > 0 ? "predicted saved" : "predicted lost");
  return CT_OK;
}
