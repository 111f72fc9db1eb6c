/*
 * model_bench.c: a model's conv stack end to end (see model_bench.h).
 *
 * The plan (mbench_plan) is pure: from the model's convs it decides which
 * run and where each one's data and residual come from. The run
 * (mbench_run) then, in one process: opens the set benchmark's session
 * (bench_env_open: dispatch context, stream, cuDNN, the peaks measured
 * now); prepares each node once (its weights in the run's layout, its
 * params; a float model gets random weights and values); allocates every
 * node's output once and the fresh tensors; runs the chain once with the
 * outputs poisoned and checks every node against the CPU reference on the
 * node's actual, downloaded inputs (the first and last image, all
 * elements); times each node alone and the chain as one graph
 * (bench_time: R copies of the chain in one graph, the median replay / R;
 * nothing is flushed between nodes: a chain's producer leaves its output
 * in L2 for its consumer, as in inference). Then, with convtune's buffers
 * freed, each cuDNN side: every node's fastest algorithm found as the set
 * benchmark finds it (bench_cudnn_best; a node of the same shape reuses
 * the search), the chain bound to buffers of its own, wired as convtune's,
 * and timed the same way.
 *
 * A fused node (a 1x1 conv A run inside the conv B it feeds, model_pre_of)
 * is B's: convtune runs the fused workload, checked by ct_reference_qconv
 * of it (A into a temporary, then B); A's node does not run. cuDNN has no
 * such fusion, so its chains run A and B as two convolutions, the second
 * reading the first's output (slots 2i and 2i + 1 of node i), and the node
 * is timed as their sum.
 *
 * Cost: the set benchmark's per unique shape for cuDNN, plus the CPU
 * reference of two images per node (a ResNet-50 is about 8 GMAC, split
 * over the cores).
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "bench/bench_int.h"
#include "bench/model_bench.h"
#include "core/pack.h"
#include "core/quant.h"
#include "db/db.h"
#include "dispatch/dispatch.h"
#include "gpu/cuda_check.h"
#include "templates/template.h"

const char *const mbench_field_names[MBENCH_N_FIELDS] = {"floor_us", "convtune_us", "cudnn_fp16_us",
                                                         "cudnn_int8_us"};

/* What each field's column says, for the Markdown header. */
static const char *const field_titles[MBENCH_N_FIELDS] = {"floor us", "convtune us",
                                                          "cuDNN fp16 us", "cuDNN int8 us"};

int mbench_images(int n, int images[2]) {
  images[0] = 0;
  images[1] = n > 1 ? n - 1 : 0;
  return n > 1 ? 2 : 1;
}

/* ---- the plan ------------------------------------------------------------- */

/* The workload convtune runs for the model's w: nhwc as it is, any other
 * layout packed. */
static void run_workload(const ct_workload *w, ct_workload *out) {
  if (w->layout == CT_LAYOUT_NHWC)
    *out = *w;
  else
    workload_packed(w, out);
}

/* The key without what every node shares or what says nothing: the op and
 * layout (the run's), the batch, a unit dilation. */
static void short_key(const char *key, char *out, size_t size) {
  size_t n = 0;
  int field = 0;
  out[0] = '\0';
  for (const char *p = key; *p && n + 1 < size; field++) {
    const char *end = strchr(p, '-');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    int skip = field < 2; /* op, layout */
    if (len > 1 && p[0] == 'n' && strspn(p + 1, "0123456789") == len - 1) skip = 1;
    if ((len == 4 && !strncmp(p, "d1x1", 4)) || (len == 6 && !strncmp(p, "d1x1x1", 6))) skip = 1;
    if (!skip) n += (size_t)snprintf(out + n, size - n, "%s%.*s", n ? "-" : "", (int)len, p);
    p += len + (end ? 1 : 0);
  }
}

/* The data tensor's dimensions in w's layout, as workload_out_dims gives an
 * output's: NHWC: N, [D,] H, W, C; packed: N, ceil(C/4), [D,] H, W, 4. C
 * is the data's channels: a fused node's pre_c. */
static int data_dims(const ct_workload *w, int64_t dims[CT_MAX_SPATIAL + 3]) {
  int nd = workload_nd(w), n = 0, c = workload_data_channels(w);
  dims[n++] = w->n;
  if (w->layout == CT_LAYOUT_NCHW4C)
    dims[n++] = (c + 3) / 4;
  else if (w->layout == CT_LAYOUT_NCHW)
    dims[n++] = c;
  for (int d = 0; d < nd; d++) dims[n++] = w->in[d];
  if (w->layout == CT_LAYOUT_NHWC) dims[n++] = c;
  if (w->layout == CT_LAYOUT_NCHW4C) dims[n++] = 4;
  return n;
}

static void dims_text(const int64_t *dims, int n, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && len + 1 < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? "x" : "", (long long)dims[i]);
}

/* Whether producer p's output is exactly the tensor consumer c reads (as
 * its data, or with residual as its residual); else why not into why. */
static int feeds(const ct_workload *p, const ct_workload *c, int residual, const char *pname,
                 char *why, size_t why_size) {
  int64_t pd[CT_MAX_SPATIAL + 3], cd[CT_MAX_SPATIAL + 3];
  int np = workload_out_dims(p, pd);
  int nc = residual ? workload_out_dims(c, cd) : data_dims(c, cd);
  /* a fused node's data is its 1x1 conv's: pre_c channels of pre_data_type */
  ct_dtype want = residual ? c->out_type : c->pre_c > 0 ? c->pre_data_type : c->data_type;
  int cch = residual ? workload_out_channels(c) : workload_data_channels(c);
  int same = p->layout == c->layout && p->out_type == want && np == nc &&
             workload_out_channels(p) == cch && !memcmp(pd, cd, (size_t)np * sizeof *pd);
  if (!same) {
    char ps[96], cs[96];
    dims_text(pd, np, ps, sizeof ps);
    dims_text(cd, nc, cs, sizeof cs);
    snprintf(why, why_size, "fresh: %.50s writes %.40s %s (%d channels), this conv reads %.40s %s",
             pname, ps, workload_dtype_name(p->out_type), workload_out_channels(p), cs,
             workload_dtype_name(want));
  }
  return same;
}

/* Wire one input (data, or residual) of node i: the producer's output
 * when it can feed it, else fresh with the reason. Returns the producer
 * used, -1 for fresh. */
static int wire(const model *m, const mbench_node *nodes, const ct_workload *lw, int i,
                int residual, char *text, size_t size) {
  const model_conv *mc = &m->convs[i];
  int j = residual ? mc->residual_conv : mc->input_conv;
  const char *from = residual ? mc->residual_from : mc->input_from;
  if (j < 0) {
    snprintf(text, size, "fresh: %.200s", from && *from ? from : "an op convtune does not run");
    return -1;
  }
  if (j >= i || j >= m->n_convs) {
    snprintf(text, size, "fresh: conv #%d does not come before this one", j);
    return -1;
  }
  if (!nodes[j].runs) {
    snprintf(text, size, "fresh: %.150s is not run", nodes[j].name);
    return -1;
  }
  if (!feeds(&lw[j], &lw[i], residual, nodes[j].name, text, size)) return -1;
  snprintf(text, size, "conv %.200s", nodes[j].name);
  return j;
}

/* The model's name: its file's base name without the extension. */
static void model_name(const char *path, char *buf, size_t size) {
  const char *base = path ? strrchr(path, '/') : NULL;
  base = base ? base + 1 : path && *path ? path : "model";
  const char *dot = strrchr(base, '.');
  int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
  snprintf(buf, size, "%.*s", len, base);
}

ct_status mbench_plan(const model *m, const bench_peaks *p, const char *const *skip,
                      mbench_result *r, ct_err *err) {
  ct_status st = CT_OK;
  mbench_result_free(r);
  r->n_run = r->n_fresh_inputs = r->n_fused = 0;
  r->all_int32 = 0;
  model_name(m->path, r->head.set, sizeof r->head.set);
  snprintf(r->model_path, sizeof r->model_path, "%s", m->path ? m->path : "");
  snprintf(r->form, sizeof r->form, "%s", model_form_name(m->form));
  r->head.batch = m->batch;
  r->head.layout = CT_LAYOUT_NHWC;
  for (int i = 0; i < m->n_convs; i++)
    if (m->convs[i].supported) {
      r->head.layout = m->convs[i].w.layout == CT_LAYOUT_NHWC ? CT_LAYOUT_NHWC : CT_LAYOUT_NCHW4C;
      break;
    }
  r->n_images = mbench_images(m->batch, r->images);
  for (int f = 0; f < MBENCH_N_FIELDS; f++) {
    r->chain[f] = r->streams_chain[f] = BENCH_NONE;
    r->chain_note[f][0] = r->streams_note[f][0] = '\0';
  }
  r->copies_identical = 0;
  int n = m->n_convs;
  ct_workload *lw = calloc((size_t)(n ? n : 1), sizeof *lw);
  r->nodes = calloc((size_t)(n ? n : 1), sizeof *r->nodes);
  if (!lw || !r->nodes) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  r->n_nodes = n;
  int n_int32 = 0;
  for (int i = 0; i < n; i++) {
    const model_conv *mc = &m->convs[i];
    mbench_node *nd = &r->nodes[i];
    snprintf(nd->name, sizeof nd->name, "%s", mc->name ? mc->name : "");
    snprintf(nd->fused, sizeof nd->fused, "%s", mc->fused ? mc->fused : "");
    nd->input_conv = nd->residual_conv = -1;
    for (int f = 0; f < MBENCH_N_FIELDS; f++) nd->t[f] = BENCH_NONE;
    nd->in_chain = NAN;
    nd->pre_conv = model_pre_of(m, i);
    nd->fused_into = model_absorbed_by(m, i);
    if (nd->pre_conv >= 0)
      snprintf(nd->pre_name, sizeof nd->pre_name, "%s", m->convs[nd->pre_conv].name);
    nd->runs = mc->supported && nd->fused_into < 0 && !(skip && skip[i]);
    if (!mc->supported)
      snprintf(nd->why, sizeof nd->why, "%s", mc->why ? mc->why : "not supported");
    else if (skip && skip[i] && nd->fused_into < 0)
      snprintf(nd->why, sizeof nd->why, "%s", skip[i]);
    ct_err e = {0};
    if (workload_validate(&mc->w, &e)) {
      if (mc->supported) {
        st = ERR_SET(err, CT_ERR_INVALID_ARG, "conv %s: %s", nd->name, e.msg);
        goto done;
      }
      snprintf(nd->key, sizeof nd->key, "-");
      snprintf(nd->short_key, sizeof nd->short_key, "-");
      continue;
    }
    run_workload(&mc->w, &lw[i]);
    workload_key(&lw[i], nd->key, sizeof nd->key);
    short_key(nd->key, nd->short_key, sizeof nd->short_key);
    ct_workload plain = mc->w;
    plain.layout = CT_LAYOUT_NCHW; /* the real channels */
    int eb = (int)workload_out_elem_bytes(&plain);
    nd->ops = (double)workload_ops(&plain); /* a fused node's: both convs' */
    nd->bytes = bench_conv_bytes(&plain, eb);
    /* a fused node reads pre_c channels of data (workload_data_elems) and
     * the 1x1 conv's c x pre_c weights too; its intermediate never reaches
     * memory */
    if (plain.pre_c > 0) nd->bytes += (double)plain.c * plain.pre_c;
    if (plain.epi.residual) nd->bytes += (double)workload_out_elems(&plain) * eb;
    nd->t[MBENCH_FLOOR] = bench_floor_us(nd->ops, nd->bytes, p);
  }
  for (int i = 0; i < n; i++) {
    /* a conv absorbed by a fused node: where it runs, if it does */
    mbench_node *nd = &r->nodes[i];
    const mbench_node *b = nd->fused_into >= 0 ? &r->nodes[nd->fused_into] : NULL;
    if (!b || !m->convs[i].supported) continue;
    char bname[64], bwhy[128]; /* copies: b is another node, but the compiler cannot tell */
    snprintf(bname, sizeof bname, "%.63s", b->name);
    snprintf(bwhy, sizeof bwhy, "%.127s", b->why);
    if (b->runs)
      snprintf(nd->why, sizeof nd->why, "fused into %s: runs inside it as its 1x1 conv", bname);
    else
      snprintf(nd->why, sizeof nd->why, "fused into %s, which is not run: %s", bname, bwhy);
  }
  for (int i = 0; i < n; i++) {
    mbench_node *nd = &r->nodes[i];
    if (!nd->runs) continue;
    r->n_run++;
    r->n_fused += nd->pre_conv >= 0;
    n_int32 += lw[i].out_type == CT_DTYPE_INT32;
    nd->input_conv = wire(m, r->nodes, lw, i, 0, nd->input, sizeof nd->input);
    r->n_fresh_inputs += nd->input_conv < 0;
    if (lw[i].epi.residual) {
      nd->residual_conv = wire(m, r->nodes, lw, i, 1, nd->residual, sizeof nd->residual);
      r->n_fresh_inputs += nd->residual_conv < 0;
    }
  }
  r->all_int32 = r->n_run > 0 && n_int32 == r->n_run;
done:
  free(lw);
  if (st) mbench_result_free(r);
  return st;
}

/* ---- the check's comparison --------------------------------------------- */

/* The output's spatial sizes after the remap, outermost first; returns nd. */
static int out_sizes(const ct_workload *w, int64_t sz[CT_MAX_SPATIAL]) {
  int nd = workload_nd(w);
  for (int d = 0; d < nd; d++)
    sz[d] = workload_out_size(w, d) * (w->epi.d2s_block ? w->epi.d2s_block : 1);
  return nd;
}

static int64_t element(const ct_workload *w, const void *p, int64_t i) {
  if (w->out_type == CT_DTYPE_INT32) {
    int32_t v;
    memcpy(&v, (const int32_t *)p + i, sizeof v);
    return v;
  }
  return w->out_type == CT_DTYPE_UINT8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

int64_t mbench_compare(const ct_workload *w, const void *got, const void *want, int image,
                       char *note, size_t note_size) {
  int64_t sz[CT_MAX_SPATIAL];
  int nd = out_sizes(w, sz);
  int64_t sp = 1;
  for (int d = 0; d < nd; d++) sp *= sz[d];
  int64_t n = workload_out_channels(w) * sp, bad = 0, at = 0;
  size_t eb = workload_out_elem_bytes(w);
  for (int64_t i = 0; i < n; i++)
    if (memcmp((const uint8_t *)got + i * (int64_t)eb, (const uint8_t *)want + i * (int64_t)eb,
               eb) &&
        !bad++)
      at = i;
  if (!bad) {
    snprintf(note, note_size, "exact");
    return 0;
  }
  /* the position as (d, y, x) of the remapped output */
  int64_t pos = at % sp, coord[CT_MAX_SPATIAL];
  for (int d = nd - 1; d >= 0; d--) {
    coord[d] = pos % sz[d];
    pos /= sz[d];
  }
  char where[64];
  if (nd == 3)
    snprintf(where, sizeof where, "(d, y, x) = (%lld, %lld, %lld)", (long long)coord[0],
             (long long)coord[1], (long long)coord[2]);
  else
    snprintf(where, sizeof where, "(y, x) = (%lld, %lld)", (long long)coord[0],
             (long long)coord[1]);
  snprintf(note, note_size,
           "WRONG: image %d channel %lld at %s gives %lld, not %lld; %lld of %lld elements of "
           "the image differ",
           image, (long long)(at / sp), where, (long long)element(w, got, at),
           (long long)element(w, want, at), (long long)bad, (long long)n);
  return bad;
}

/* ---- sums and writers ------------------------------------------------------ */

double mbench_sum(const mbench_result *r, mbench_field f, int *n_null) {
  double sum = 0;
  int nulls = 0, n = 0;
  for (int i = 0; i < r->n_nodes; i++) {
    const mbench_node *nd = &r->nodes[i];
    if (!nd->runs) continue;
    if (bench_has(nd->t[f])) {
      sum += nd->t[f];
      n++;
    } else {
      nulls++;
    }
  }
  if (n_null) *n_null = nulls;
  return n && !nulls ? sum : BENCH_NONE;
}

int mbench_arena_plan(int n, const int *runs, const size_t *bytes, const int *last_use, int *buf_of,
                      size_t *buf_bytes) {
  int nb = 0;
  /* busy[b]: the last node that reads buffer b's tensor (free once it has run) */
  int *busy = calloc((size_t)(n ? n : 1), sizeof *busy);
  if (!busy) return -1;
  for (int i = 0; i < n; i++) {
    buf_of[i] = -1;
    if (!runs[i]) continue;
    int best = -1;
    for (int b = 0; b < nb; b++)
      if (busy[b] < i && buf_bytes[b] >= bytes[i] && (best < 0 || buf_bytes[b] < buf_bytes[best]))
        best = b;
    if (best < 0) {
      best = nb++;
      buf_bytes[best] = bytes[i];
    }
    buf_of[i] = best;
    busy[best] = last_use[i] > i ? last_use[i] : i;
  }
  free(busy);
  return nb;
}

int mbench_has_in_chain(double v) {
  return !isnan(v);
}

double mbench_in_chain_sum(const mbench_result *r) {
  double sum = 0;
  int n = 0;
  for (int i = 0; i < r->n_nodes; i++) {
    const mbench_node *nd = &r->nodes[i];
    if (!nd->runs) continue;
    if (!mbench_has_in_chain(nd->in_chain)) return BENCH_NONE;
    sum += nd->in_chain;
    n++;
  }
  return n ? sum : BENCH_NONE;
}

double mbench_images_per_s(const mbench_result *r, double chain_us) {
  return bench_has(chain_us) && chain_us > 0 ? r->head.batch / (chain_us * 1e-6) : BENCH_NONE;
}

char *mbench_results_path(const mbench_result *r, const char *dir, char *buf, size_t size) {
  return bench_results_file(dir, r->head.device, r->head.set, r->head.batch,
                            r->head.layout == CT_LAYOUT_NHWC ? "" : "-nchw4c", buf, size);
}

/* Whether node i is a conv absorbed by a fused node that runs: it runs,
 * inside that node, not skipped. */
static int runs_fused(const mbench_result *r, int i) {
  int b = r->nodes[i].fused_into;
  return b >= 0 && b < r->n_nodes && r->nodes[b].runs && r->nodes[b].pre_conv == i;
}

static const char *check_name(mbench_check c) {
  return c == MBENCH_EXACT ? "exact" : c == MBENCH_WRONG ? "wrong" : "unchecked";
}

static double ratio(double a, double b) {
  return bench_has(a) && bench_has(b) && b > 0 ? a / b : BENCH_NONE;
}

/* The chain's value of field f: the graph's time, or for the floor the
 * sum of the nodes' floors. */
static double chain_value(const mbench_result *r, mbench_field f) {
  return f == MBENCH_FLOOR ? mbench_sum(r, MBENCH_FLOOR, NULL) : r->chain[f];
}

/* --streams: the time of S chains at once per side (the floor's: S x the chain's floor). */
static double streams_value(const mbench_result *r, mbench_field f) {
  return f == MBENCH_FLOOR ? r->streams * mbench_sum(r, MBENCH_FLOOR, NULL) : r->streams_chain[f];
}

/* Images per second of S chains at once taking us. */
static double streams_images_per_s(const mbench_result *r, double us) {
  return bench_has(us) && us > 0 ? r->streams * r->head.batch / (us * 1e-6) : BENCH_NONE;
}

static void json_rate(cJSON *o, const char *name, double v, double unit) {
  if (bench_has(v))
    cJSON_AddNumberToObject(o, name, round(v / unit) * unit);
  else
    cJSON_AddNullToObject(o, name);
}

cJSON *mbench_to_json(const mbench_result *r) {
  const bench_result *h = &r->head;
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "device", h->device);
  cJSON_AddStringToObject(o, "arch", h->arch);
  cJSON_AddNumberToObject(o, "sm_count", h->sm_count);
  cJSON_AddStringToObject(o, "commit", h->commit);
  cJSON_AddStringToObject(o, "command", h->command);
  cJSON_AddStringToObject(o, "date", h->date);
  cJSON_AddStringToObject(o, "model", h->set);
  cJSON_AddStringToObject(o, "model_path", r->model_path);
  cJSON_AddStringToObject(o, "form", r->form);
  cJSON_AddNumberToObject(o, "batch", h->batch);
  cJSON_AddStringToObject(o, "layout", bench_layout_name(h->layout));
  bench_json_peaks(o, &h->peaks);
  cJSON_AddStringToObject(o, "peaks_source", "measured in this run (bench/peaks.c)");
  cJSON_AddNumberToObject(o, "repeats", h->repeats);
  if (h->cudnn_version[0])
    cJSON_AddStringToObject(o, "cudnn", h->cudnn_version);
  else
    cJSON_AddStringToObject(o, "cudnn", h->cudnn_built ? "not loaded" : "not built in");
  cJSON *imgs = cJSON_AddArrayToObject(o, "images_checked");
  for (int i = 0; imgs && i < r->n_images; i++)
    cJSON_AddItemToArray(imgs, cJSON_CreateNumber(r->images[i]));
  cJSON_AddBoolToObject(o, "all_exact", r->n_run > 0 && r->n_exact == r->n_run);
  cJSON_AddNumberToObject(o, "n_nodes", r->n_nodes);
  cJSON_AddNumberToObject(o, "n_run", r->n_run);
  cJSON_AddNumberToObject(o, "n_exact", r->n_exact);
  cJSON_AddNumberToObject(o, "n_wrong", r->n_wrong);
  cJSON_AddNumberToObject(o, "n_unchecked", r->n_unchecked);
  cJSON_AddNumberToObject(o, "n_fresh_inputs", r->n_fresh_inputs);
  /* fused pairs: n_fused_convs of the model's convs ran in n_fused_nodes nodes */
  cJSON_AddNumberToObject(o, "n_fused_nodes", r->n_fused);
  cJSON_AddStringToObject(o, "fuse_policy", r->fuse_policy[0] ? r->fuse_policy : "none");
  cJSON_AddNumberToObject(o, "n_fused_convs", 2 * r->n_fused);
  cJSON_AddBoolToObject(o, "all_int32", r->all_int32);
  cJSON_AddStringToObject(o, "tensors", r->arena ? "arena" : "own");
  if (r->arena) {
    cJSON_AddNumberToObject(o, "arena_buffers", r->arena_buffers);
    cJSON_AddNumberToObject(o, "arena_mb", round(r->arena_bytes / 1e3) / 1e3);
  }
  cJSON_AddNumberToObject(o, "outputs_mb", round(r->out_bytes / 1e3) / 1e3);
  cJSON *chain = cJSON_AddObjectToObject(o, "chain");
  cJSON *sum = cJSON_AddObjectToObject(o, "sum_of_nodes");
  cJSON *ips = cJSON_AddObjectToObject(o, "images_per_s");
  cJSON *cnotes = cJSON_AddObjectToObject(o, "chain_notes");
  for (int f = 0; f < MBENCH_N_FIELDS; f++) {
    if (chain) bench_json_time(chain, mbench_field_names[f], chain_value(r, (mbench_field)f));
    if (sum) bench_json_time(sum, mbench_field_names[f], mbench_sum(r, (mbench_field)f, NULL));
    if (ips) json_rate(ips, mbench_field_names[f], mbench_images_per_s(r, chain_value(r, f)), 0.1);
    if (cnotes && r->chain_note[f][0])
      cJSON_AddStringToObject(cnotes, mbench_field_names[f], r->chain_note[f]);
  }
  bench_json_time(o, "convtune_in_chain_sum_us", mbench_in_chain_sum(r));
  json_rate(o, "convtune_over_cudnn_fp16",
            ratio(r->chain[MBENCH_CONVTUNE], r->chain[MBENCH_CUDNN_FP16]), 1e-4);
  json_rate(o, "convtune_over_cudnn_int8",
            ratio(r->chain[MBENCH_CONVTUNE], r->chain[MBENCH_CUDNN_INT8]), 1e-4);
  json_rate(o, "floor_over_convtune",
            ratio(chain_value(r, MBENCH_FLOOR), r->chain[MBENCH_CONVTUNE]), 1e-4);
  if (r->streams > 1) {
    cJSON *so = cJSON_AddObjectToObject(o, "streams");
    cJSON *sch = so ? cJSON_AddObjectToObject(so, "chain") : NULL;
    cJSON *sips = so ? cJSON_AddObjectToObject(so, "images_per_s") : NULL;
    cJSON *snotes = so ? cJSON_AddObjectToObject(so, "notes") : NULL;
    if (so) {
      cJSON_AddNumberToObject(so, "copies", r->streams);
      cJSON_AddNumberToObject(so, "images", (double)r->streams * h->batch);
      cJSON_AddBoolToObject(so, "copies_identical", r->copies_identical);
    }
    for (int f = 0; f < MBENCH_N_FIELDS; f++) {
      if (sch) bench_json_time(sch, mbench_field_names[f], streams_value(r, (mbench_field)f));
      if (sips)
        json_rate(sips, mbench_field_names[f],
                  streams_images_per_s(r, streams_value(r, (mbench_field)f)), 0.1);
      if (snotes && r->streams_note[f][0])
        cJSON_AddStringToObject(snotes, mbench_field_names[f], r->streams_note[f]);
    }
    if (so) {
      json_rate(so, "convtune_over_cudnn_fp16",
                ratio(r->streams_chain[MBENCH_CONVTUNE], r->streams_chain[MBENCH_CUDNN_FP16]),
                1e-4);
      json_rate(so, "convtune_over_cudnn_int8",
                ratio(r->streams_chain[MBENCH_CONVTUNE], r->streams_chain[MBENCH_CUDNN_INT8]),
                1e-4);
    }
  }
  cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
  for (int i = 0; nodes && i < r->n_nodes; i++) {
    const mbench_node *nd = &r->nodes[i];
    cJSON *no = cJSON_CreateObject();
    if (!no) break;
    cJSON_AddItemToArray(nodes, no);
    cJSON_AddStringToObject(no, "name", nd->name);
    cJSON_AddStringToObject(no, "key", nd->key);
    cJSON_AddStringToObject(no, "fused", nd->fused);
    cJSON_AddBoolToObject(no, "runs", nd->runs);
    if (nd->fused_into >= 0) {
      cJSON_AddNumberToObject(no, "fused_into_conv", nd->fused_into);
      cJSON_AddStringToObject(no, "fused_into", r->nodes[nd->fused_into].name);
    }
    if (!nd->runs) {
      cJSON_AddStringToObject(no, "why", nd->why);
      continue;
    }
    if (nd->pre_conv >= 0) {
      /* a fused node: the 1x1 conv it runs before its own */
      cJSON_AddNumberToObject(no, "pre_conv", nd->pre_conv);
      cJSON_AddStringToObject(no, "pre", nd->pre_name);
    }
    cJSON_AddStringToObject(no, "input", nd->input);
    cJSON_AddNumberToObject(no, "input_conv", nd->input_conv);
    if (nd->residual[0]) {
      cJSON_AddStringToObject(no, "residual", nd->residual);
      cJSON_AddNumberToObject(no, "residual_conv", nd->residual_conv);
    }
    cJSON_AddNumberToObject(no, "ops", nd->ops);
    cJSON_AddNumberToObject(no, "bytes", nd->bytes);
    for (int f = 0; f < MBENCH_N_FIELDS; f++) bench_json_time(no, mbench_field_names[f], nd->t[f]);
    if (mbench_has_in_chain(nd->in_chain))
      cJSON_AddNumberToObject(no, "convtune_in_chain_us", round(nd->in_chain * 1e3) / 1e3);
    else
      cJSON_AddNullToObject(no, "convtune_in_chain_us");
    cJSON_AddStringToObject(no, "check", check_name(nd->check));
    cJSON_AddStringToObject(no, "check_note", nd->check_note);
    cJSON_AddStringToObject(no, "source", nd->source);
    cJSON *algo = cJSON_AddObjectToObject(no, "cudnn_algo");
    for (int c = 0; algo && c < 2; c++)
      if (nd->algo[c][0])
        cJSON_AddStringToObject(algo, mbench_field_names[MBENCH_CUDNN_FP16 + c], nd->algo[c]);
    cJSON *notes = cJSON_AddObjectToObject(no, "notes");
    for (int f = 0; notes && f < MBENCH_N_FIELDS; f++)
      if (nd->note[f][0]) cJSON_AddStringToObject(notes, mbench_field_names[f], nd->note[f]);
    if (nd->fusion[0]) cJSON_AddStringToObject(no, "fusion", nd->fusion);
  }
  cJSON_AddStringToObject(
      o, "method",
      "the conv nodes that run, in graph order, on one stream: chain = median over replays of "
      "a CUDA graph of R copies of the chain / R, no L2 flush between nodes; a node's time = "
      "the same for R launches of that node alone; a node whose producer conv runs reads its "
      "real output, others a fresh random tensor (input says which op it stands for); cuDNN "
      "sides: each node on the fastest algorithm for its shape (fp16: NHWC, tensor-op math, "
      "fp16 out, chain outputs scaled by 1 / (rms x sqrt(C x kernel volume)) to stay in range; "
      "int8: NHWC INT8 config, C and K padded to 4), wired as convtune's chain; a side's "
      "chain and sum are null unless every node runs on it; floor per node = max(ops / "
      "int8 mma.sync peak, (int8 data + int8 weights + residual + output bytes) / copy "
      "bandwidth), the chain's floor their sum; check: every element of the images in "
      "images_checked against the CPU reference of the node's formula on its actual inputs; "
      "convtune_in_chain_us (with --in-chain): convtune's chain cut after the node less the "
      "chain cut before it, each timed as the chain (negative where a small node is within "
      "the noise); tensors: own (each node's output in a buffer of its own) or arena (with "
      "--arena, every side: a buffer reused once the last node reading it has run, the nodes "
      "checked as the chain runs; arena_buffers and arena_mb: convtune's), outputs_mb: "
      "convtune's outputs; a fused node (pre: a 1x1 conv whose output only this conv reads, "
      "run inside it by one kernel) reads the 1x1 conv's input and is checked against the CPU "
      "reference of both convs chained; its cuDNN time is the sum of the two convs', which "
      "the cuDNN chains run one after the other; streams (with --streams S): S copies of "
      "each side's chain captured as one graph, forked from one stream onto S and joined "
      "back, each copy on outputs, workspace and fresh inputs of its own (copies of the "
      "first's; the weights shared), timed as the chain: S x batch images; "
      "copies_identical: every convtune copy's outputs equal the first copy's, byte for byte");
  return o;
}

ct_status mbench_write_json(const mbench_result *r, const char *path, ct_err *err) {
  cJSON *o = mbench_to_json(r);
  if (!o) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory writing %s", path);
  ct_status st = bench_write_doc(o, path, err);
  cJSON_Delete(o);
  return st;
}

void mbench_write_csv(const mbench_result *r, FILE *f) {
  fputs("index,name,key,fused,runs,input,residual", f);
  for (int fl = 0; fl < MBENCH_N_FIELDS; fl++) fprintf(f, ",%s", mbench_field_names[fl]);
  fputs(",convtune_in_chain_us,ratio_cudnn_fp16,ratio_cudnn_int8,check,check_note,source,"
        "cudnn_fp16_algo,cudnn_int8_algo,layout,why\n",
        f);
  for (int i = 0; i < r->n_nodes; i++) {
    const mbench_node *nd = &r->nodes[i];
    fprintf(f, "%d,", i);
    bench_csv_string(f, nd->name);
    fputc(',', f);
    bench_csv_string(f, nd->key);
    fputc(',', f);
    bench_csv_string(f, nd->fused);
    fprintf(f, ",%d,", nd->runs);
    bench_csv_string(f, nd->input);
    fputc(',', f);
    bench_csv_string(f, nd->residual);
    for (int fl = 0; fl < MBENCH_N_FIELDS; fl++) bench_csv_num(f, nd->t[fl], "%.3f");
    fputc(',', f);
    if (mbench_has_in_chain(nd->in_chain)) fprintf(f, "%.3f", nd->in_chain);
    bench_csv_num(f, ratio(nd->t[MBENCH_CONVTUNE], nd->t[MBENCH_CUDNN_FP16]), "%.4f");
    bench_csv_num(f, ratio(nd->t[MBENCH_CONVTUNE], nd->t[MBENCH_CUDNN_INT8]), "%.4f");
    fprintf(f, ",%s,", nd->runs ? check_name(nd->check) : "");
    bench_csv_string(f, nd->check_note);
    fputc(',', f);
    bench_csv_string(f, nd->source);
    for (int c = 0; c < 2; c++) {
      fputc(',', f);
      bench_csv_string(f, nd->algo[c]);
    }
    fprintf(f, ",%s,", bench_layout_name(r->head.layout));
    bench_csv_string(f, nd->runs ? "" : nd->why);
    fputc('\n', f);
  }
}

/* A Markdown cell's text: '|' would end the cell. */
static void md_text(FILE *f, const char *s) {
  fputc(' ', f);
  for (; *s; s++) {
    if (*s == '|')
      fputs("\\|", f);
    else
      fputc(*s, f);
  }
  fputs(" |", f);
}

static void md_images(const mbench_result *r, FILE *f) {
  if (r->n_images > 1)
    fprintf(f, "images %d and %d", r->images[0], r->images[1]);
  else
    fprintf(f, "image %d", r->images[0]);
}

/* A table cell of images per second, "-" without a figure. */
static void md_rate(FILE *f, double v) {
  if (bench_has(v))
    fprintf(f, " %.0f |", v);
  else
    fputs(" - |", f);
}

void mbench_write_markdown(const mbench_result *r, FILE *f) {
  /* the in-chain column and its lines only when measured (--in-chain) */
  int in_chain = 0;
  for (int i = 0; i < r->n_nodes; i++)
    in_chain |= r->nodes[i].runs && mbench_has_in_chain(r->nodes[i].in_chain);
  const bench_result *h = &r->head;
  const bench_peaks *p = &h->peaks;
  fprintf(f, "## convtune bench --model: %s, batch %d, layout %s, %s\n\n", h->set, h->batch,
          bench_layout_name(h->layout), h->device);
  fprintf(f, "- %s (%s, %d SMs), commit %s, %s\n", h->device, h->arch, h->sm_count, h->commit,
          h->date);
  fprintf(f, "- command: `%s`\n", h->command);
  int n_absorbed = 0;
  for (int i = 0; i < r->n_nodes; i++) n_absorbed += runs_fused(r, i);
  fprintf(f, "- model: %s (%s), %d conv nodes, %d run, %d skipped", r->model_path, r->form,
          r->n_nodes, r->n_run, r->n_nodes - r->n_run - n_absorbed);
  if (r->n_fused)
    fprintf(f,
            "; %d convs ran fused into %d node%s (a 1x1 conv run inside the conv it feeds, "
            "listed below)",
            2 * r->n_fused, r->n_fused, r->n_fused == 1 ? "" : "s");
  fputc('\n', f);
  fprintf(f,
          "- peaks measured in this run: int8 mma.sync %.1f TOPS, device copy %.2f TB/s (bytes "
          "read + written), dp4a %.1f TOPS\n",
          p->mma_int8_tops, p->copy_tbs, p->dp4a_tops);
  fputs("- chain: the nodes that run, in graph order, on one stream through libconvtune, "
        "captured as one CUDA graph; the median of the replays, nothing flushed between nodes "
        "(each producer's output is its consumer's input, as in inference); per node: the "
        "same for that node alone, replayed back to back\n",
        f);
  if (r->arena)
    fprintf(f,
            "- tensors (--arena): placed as a runtime's arena does, on every side: a buffer is "
            "reused once the last node that reads it has run; convtune's %.1f MB of outputs in "
            "%d buffers of %.1f MB (each node is checked right after it runs)\n",
            r->out_bytes / 1e6, r->arena_buffers, r->arena_bytes / 1e6);
  else
    fprintf(f,
            "- tensors: each node's output in a buffer of its own (%.1f MB on convtune's side)\n",
            r->out_bytes / 1e6);
  if (r->streams > 1)
    fprintf(f,
            "- %d chains at once (--streams %d): %d copies of each side's chain in one graph, "
            "each on a stream of its own, with outputs, workspace and fresh inputs of its own "
            "(the weights shared): %d x %d = %d images, as %d concurrent requests or a batch "
            "split in %d; convtune's copies: %s\n",
            r->streams, r->streams, r->streams, r->streams, h->batch, r->streams * h->batch,
            r->streams, r->streams,
            r->copies_identical ? "every copy's outputs equal the first's, byte for byte"
            : r->streams_note[MBENCH_CONVTUNE][0] ? r->streams_note[MBENCH_CONVTUNE]
                                                 : "not compared");
  if (in_chain)
    fputs("- in chain (--in-chain): convtune's chain cut after the node, timed as the chain, "
          "less the chain cut before it; the difference of two chain timings, so a small "
          "node's value carries their noise (the sum row adds them up)\n",
          f);
  fprintf(f,
          "- timing: every side alike, the median of %d replays of a CUDA graph of R copies, "
          "per copy\n",
          h->repeats);
  if (!h->cudnn_built)
    fputs("- cuDNN sides: cuDNN not built in\n", f);
  else if (!h->cudnn_version[0])
    fputs("- cuDNN sides: cuDNN did not load at run time\n", f);
  else
    fprintf(f,
            "- cuDNN %s, legacy API, each node on its shape's fastest algorithm (searched as in "
            "the set benchmark), wired as convtune's chain, convolutions only (no bias, "
            "activation or residual): fp16 NHWC (fp32 accumulate, tensor-op math, fp16 out; "
            "the chain's outputs scaled to stay in range), int8 NHWC (int32 compute, int8 "
            "out, C and K padded to 4); a side's totals only when it runs every node\n",
            h->cudnn_version);
  fputs("- floor per node: max(ops / int8 mma.sync peak, (int8 data + int8 weights [+ int8 "
        "residual] + output bytes) / copy bandwidth), real channels; the model's floor is "
        "their sum\n",
        f);
  int n_inputs = 0;
  for (int i = 0; i < r->n_nodes; i++)
    if (r->nodes[i].runs) n_inputs += 1 + (r->nodes[i].residual[0] != '\0');
  fprintf(f,
          "- inputs: %d of the %d node inputs (data and residuals) are fresh random tensors "
          "of the right shape, standing for the op named in the input column (pooling, "
          "Concat, a graph input) or for a conv output that cannot feed them; every other "
          "input is its producer conv's real output\n",
          r->n_fresh_inputs, n_inputs);
  if (r->all_int32)
    fputs("- every conv writes int32 (a float model read without --out int8): no output can "
          "feed the next conv's 8-bit data, so every input is fresh\n",
          f);
  fputs("- check: ", f);
  md_images(r, f);
  fprintf(f, " of the batch (an image's output depends only on that image), every element, "
             "against the CPU reference of the node's formula on its actual (downloaded) "
             "inputs\n");
  if (r->n_run && r->n_exact == r->n_run)
    fprintf(f, "- **every node exact** (%d of %d)\n", r->n_exact, r->n_run);
  else
    fprintf(f, "- **not every node exact: %d exact, %d wrong, %d unchecked** (see the table)\n",
            r->n_exact, r->n_wrong, r->n_unchecked);

  fputs("\n| # | node | workload | fused | input |", f);
  for (int fl = MBENCH_CONVTUNE; fl < MBENCH_N_FIELDS; fl++) {
    fprintf(f, " %s |", field_titles[fl]);
    if (fl == MBENCH_CONVTUNE && in_chain) fputs(" convtune in chain us |", f);
  }
  fprintf(f, " %s | convtune/fp16 | check |\n", field_titles[MBENCH_FLOOR]);
  fprintf(f, "| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |%s --- |\n",
          in_chain ? " ---: |" : "");
  for (int i = 0; i < r->n_nodes; i++) {
    const mbench_node *nd = &r->nodes[i];
    if (!nd->runs) continue;
    fprintf(f, "| %d |", i);
    md_text(f, nd->name);
    fprintf(f, " `%s` |", nd->short_key);
    md_text(f, nd->fused[0] ? nd->fused : "-");
    char in[480];
    if (nd->residual[0])
      snprintf(in, sizeof in, "%s; residual: %s", nd->input, nd->residual);
    else
      snprintf(in, sizeof in, "%s", nd->input);
    md_text(f, in);
    for (int fl = MBENCH_CONVTUNE; fl < MBENCH_N_FIELDS; fl++) {
      bench_md_time(f, nd->t[fl]);
      if (fl == MBENCH_CONVTUNE && in_chain) {
        if (mbench_has_in_chain(nd->in_chain))
          fprintf(f, " %.2f |", nd->in_chain);
        else
          fputs(" - |", f);
      }
    }
    bench_md_time(f, nd->t[MBENCH_FLOOR]);
    bench_md_ratio(f, nd->t[MBENCH_CONVTUNE], nd->t[MBENCH_CUDNN_FP16]);
    md_text(f, nd->check == MBENCH_EXACT ? "exact" : nd->check_note);
    fputc('\n', f);
  }

  fputs("\n| total | convtune | cuDNN fp16 | cuDNN int8 | floor |\n", f);
  fputs("| --- | ---: | ---: | ---: | ---: |\n", f);
  static const mbench_field cols[] = {MBENCH_CONVTUNE, MBENCH_CUDNN_FP16, MBENCH_CUDNN_INT8,
                                      MBENCH_FLOOR};
  fputs("| chain, one graph, us |", f);
  for (int c = 0; c < 4; c++) bench_md_time(f, chain_value(r, cols[c]));
  fputs("\n| sum of the nodes alone, us |", f);
  for (int c = 0; c < 4; c++) bench_md_time(f, mbench_sum(r, cols[c], NULL));
  if (in_chain) {
    fputs("\n| sum of the nodes in the chain (cut by cut), us |", f);
    bench_md_time(f, mbench_in_chain_sum(r));
    fputs(" - | - | - |", f);
  }
  fputs("\n| images per second (chain) |", f);
  for (int c = 0; c < 4; c++) md_rate(f, mbench_images_per_s(r, chain_value(r, cols[c])));
  fputs("\n| convtune / side (chain) |", f);
  for (int c = 0; c < 4; c++) bench_md_ratio(f, r->chain[MBENCH_CONVTUNE], chain_value(r, cols[c]));
  if (r->streams > 1) {
    fprintf(f, "\n| %d chains at once, %d images, us |", r->streams, r->streams * h->batch);
    for (int c = 0; c < 4; c++) bench_md_time(f, streams_value(r, cols[c]));
    fprintf(f, "\n| images per second (%d chains at once) |", r->streams);
    for (int c = 0; c < 4; c++) md_rate(f, streams_images_per_s(r, streams_value(r, cols[c])));
    fprintf(f, "\n| convtune / side (%d chains at once) |", r->streams);
    for (int c = 0; c < 4; c++)
      bench_md_ratio(f, r->streams_chain[MBENCH_CONVTUNE], streams_value(r, cols[c]));
  }
  fputs("\n", f);
  double speed = ratio(r->chain[MBENCH_CUDNN_FP16], r->chain[MBENCH_CONVTUNE]);
  if (bench_has(speed))
    fprintf(f, "\nconvtune's chain is %.2fx as fast as cuDNN fp16's (%.1f against %.1f us).\n",
            speed, r->chain[MBENCH_CONVTUNE], r->chain[MBENCH_CUDNN_FP16]);
  double s_speed = ratio(r->streams_chain[MBENCH_CUDNN_FP16], r->streams_chain[MBENCH_CONVTUNE]);
  if (r->streams > 1 && bench_has(s_speed))
    fprintf(f,
            "With %d chains at once (%d images), convtune's are %.2fx as fast as cuDNN fp16's "
            "(%.1f against %.1f us).\n",
            r->streams, r->streams * h->batch, s_speed, r->streams_chain[MBENCH_CONVTUNE],
            r->streams_chain[MBENCH_CUDNN_FP16]);
  double floor_share = ratio(chain_value(r, MBENCH_FLOOR), r->chain[MBENCH_CONVTUNE]);
  if (bench_has(floor_share))
    fprintf(f, "The floor is %.0f%% of convtune's chain.\n", 100 * floor_share);

  int header = 0;
  for (int fl = 0; fl < MBENCH_N_FIELDS; fl++) {
    if (!r->chain_note[fl][0]) continue;
    if (!header) fputs("\nNotes:\n", f);
    header = 1;
    fprintf(f, "- chain, %s: %s\n", mbench_field_names[fl], r->chain_note[fl]);
  }
  for (int fl = 0; r->streams > 1 && fl < MBENCH_N_FIELDS; fl++) {
    if (!r->streams_note[fl][0]) continue;
    if (!header) fputs("\nNotes:\n", f);
    header = 1;
    fprintf(f, "- %d chains at once, %s: %s\n", r->streams, mbench_field_names[fl],
            r->streams_note[fl]);
  }
  for (int i = 0; i < r->n_nodes; i++) {
    const mbench_node *nd = &r->nodes[i];
    if (!nd->runs) continue;
    for (int fl = 0; fl < MBENCH_N_FIELDS; fl++) {
      if (!nd->note[fl][0]) continue;
      if (!header) fputs("\nNotes:\n", f);
      header = 1;
      fprintf(f, "- %s, %s: %s\n", nd->name, mbench_field_names[fl], nd->note[fl]);
    }
  }
  if (r->n_fused) {
    fputs("\nFused nodes (convtune: one kernel, the 1x1 conv's output never in memory; cuDNN: "
          "the two convs, the node's time their sum):\n",
          f);
    for (int i = 0; i < r->n_nodes; i++) {
      const mbench_node *nd = &r->nodes[i];
      if (!nd->runs || nd->pre_conv < 0) continue;
      fprintf(f, "- %d %s runs %d %s `%s` before it: `%s`\n", i, nd->name, nd->pre_conv,
              nd->pre_name, r->nodes[nd->pre_conv].key, nd->key);
    }
  }
  int n_decided = 0;
  for (int i = 0; i < r->n_nodes; i++) n_decided += r->nodes[i].fusion[0] != 0;
  if (n_decided) {
    fprintf(f,
            "\nFusion by records (--fuse=auto): a pair runs fused where its records predict a "
            "gain in the chain (%d pair%s):\n",
            n_decided, n_decided == 1 ? "" : "s");
    for (int i = 0; i < r->n_nodes; i++)
      if (r->nodes[i].fusion[0])
        fprintf(f, "- %d %s: %s\n", i, r->nodes[i].name, r->nodes[i].fusion);
  }
  if (r->n_run + n_absorbed < r->n_nodes) {
    fputs("\nSkipped (not run on any side):\n", f);
    for (int i = 0; i < r->n_nodes; i++)
      if (!r->nodes[i].runs && !runs_fused(r, i))
        fprintf(f, "- %d %s `%s`: %s\n", i, r->nodes[i].name, r->nodes[i].key, r->nodes[i].why);
  }
}

void mbench_result_free(mbench_result *r) {
  if (!r) return;
  free(r->nodes);
  r->nodes = NULL;
  r->n_nodes = 0;
}

/* ---- the run ------------------------------------------------------------------ */

#define POISON 0x5A

/* One node on convtune's side: what it runs, its weights and values (made
 * once), and its tensors (made per plan). */
typedef struct node_rt {
  ct_context *ctx;
  ct_workload lw;    /* what runs, in the run's layout (a fused node: with its pre_c) */
  ct_workload pw;    /* its own convolution plain (NCHW data, OIHW weights, no pre), one image */
  int8_t *h_w;       /* pw's plain weights: the model's, zero-padded where packed */
  int8_t *h_lw;      /* a fused node's weights as lw takes them (OHWI): its check's */
  quant_store qs;    /* a float model's random values */
  const ct_quant *q; /* the values used; NULL when the workload needs none */
  void *d_w, *d_params;
  void *d_out, *d_fresh, *d_fresh_res;
  const void *d_data, *d_res;
  size_t data_bytes, out_bytes;
  char source[192];
} node_rt;

typedef struct mrun {
  const bench_opts *o;
  const model *m;
  mbench_result *r;
  bench_env e;
  rng rng;
  node_rt *rt;
  void **pool; /* --arena: convtune's output buffers (mbench_arena_plan), n_pool of them */
  int n_pool;
} mrun;

/* Each node's last reader of its output, among the nodes that run: its
 * input's consumer and, on convtune's side (res), its residual's. */
static void last_uses(const mbench_result *r, int res, int *last) {
  for (int i = 0; i < r->n_nodes; i++) last[i] = i;
  for (int j = 0; j < r->n_nodes; j++) {
    const mbench_node *nd = &r->nodes[j];
    if (!nd->runs) continue;
    if (nd->input_conv >= 0 && last[nd->input_conv] < j) last[nd->input_conv] = j;
    if (res && nd->residual_conv >= 0 && last[nd->residual_conv] < j) last[nd->residual_conv] = j;
  }
}

/* --arena: the n outputs (bytes[i] each where runs[i]; last[i] their last
 * reader) placed by mbench_arena_plan into *pool, *n_pool buffers
 * cudaMalloc'ed (the caller frees them, after a failure too), *total bytes
 * in all; out[i] gets node i's buffer (NULL where it does not run). */
static ct_status arena_alloc(int n, const int *runs, const size_t *bytes, const int *last,
                             void **out, void ***pool, int *n_pool, double *total, ct_err *err) {
  ct_status st = CT_OK;
  int *buf = calloc((size_t)(n ? n : 1), sizeof *buf);
  size_t *bb = calloc((size_t)(n ? n : 1), sizeof *bb);
  *pool = NULL, *n_pool = 0, *total = 0;
  const int nb = buf && bb ? mbench_arena_plan(n, runs, bytes, last, buf, bb) : -1;
  if (nb < 0 || !(*pool = calloc((size_t)(nb > 0 ? nb : 1), sizeof **pool))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the arena's plan");
    goto done;
  }
  for (int b = 0; b < nb; b++) {
    cudaError_t ce = cudaMalloc(&(*pool)[b], bb[b]);
    if (ce != cudaSuccess) {
      st = ERR_SET(err, CT_ERR_CUDA, "cudaMalloc of the arena's buffer %d (%zu bytes): %s", b,
                   bb[b], cudaGetErrorString(ce));
      goto done;
    }
    (*n_pool)++;
    *total += (double)bb[b];
  }
  for (int i = 0; i < n; i++) out[i] = buf[i] >= 0 ? (*pool)[buf[i]] : NULL;
done:
  free(buf);
  free(bb);
  return st;
}

static ct_status launch_node(void *user, struct CUstream_st *stream, ct_err *err) {
  const node_rt *n = user;
  ct_status st =
      n->lw.op == CT_OP_CONV3D
          ? ct_qconv3d(n->ctx, &n->lw, n->d_data, n->d_w, n->d_params, n->d_res, n->d_out, stream)
          : ct_qconv2d(n->ctx, &n->lw, n->d_data, n->d_w, n->d_params, n->d_res, n->d_out, stream);
  if (st) return ERR_SET(err, st, "%s", ct_errmsg(n->ctx));
  return CT_OK;
}

/* The whole chain, in order; failed gets the node whose call failed. */
typedef struct chain {
  node_rt *rt;
  const mbench_result *r;
  int last; /* the chain is cut after nodes[last] (n_nodes - 1: whole) */
  int failed;
} chain;

static ct_status launch_chain(void *user, struct CUstream_st *stream, ct_err *err) {
  chain *c = user;
  for (int i = 0; i <= c->last; i++) {
    if (!c->r->nodes[i].runs) continue;
    ct_status st = launch_node(&c->rt[i], stream, err);
    if (st) {
      c->failed = i;
      return st;
    }
  }
  return CT_OK;
}

static void node_free(node_rt *n) {
  free(n->h_w);
  free(n->h_lw);
  n->h_lw = NULL;
  quant_store_free(&n->qs);
  if (n->d_w) cudaFree(n->d_w);
  if (n->d_params) cudaFree(n->d_params);
  n->h_w = NULL;
  n->d_w = n->d_params = NULL;
}

/* Prepare node i once: its workloads, its plain weights (the model's, or
 * random for a float model), their layout form on the device (OHWI, or
 * packed by ct_pack_weights), its values and params. What convtune cannot
 * run is a reason in why (the node is skipped); an error status only when
 * the GPU fails. */
static ct_status prep_node(mrun *R, int i, char *why, size_t why_size, ct_err *err) {
  ct_status st = CT_OK;
  const model_conv *mc = &R->m->convs[i];
  node_rt *n = &R->rt[i];
  ct_context *ctx = R->e.ctx;
  cudaStream_t s = (cudaStream_t)R->e.t.stream;
  void *d_plain = NULL, *h_params = NULL;
  int8_t *h_lw = NULL;
  n->ctx = ctx;
  run_workload(&mc->w, &n->lw);
  workload_main(&n->lw, &n->pw); /* a fused node's own conv: plain has no pre */
  n->pw.layout = CT_LAYOUT_NCHW;
  n->pw.n = 1;
  const int nhwc = n->lw.layout == CT_LAYOUT_NHWC;
  if (n->lw.k != mc->w.k) {
    /* the values (bias, scales) are the model's K; packed K would read past them */
    snprintf(why, why_size, "%s pads K %d to %d, past the model's values: run it in nhwc",
             bench_layout_name(n->lw.layout), mc->w.k, n->lw.k);
    return CT_OK;
  }
  ct_explanation ex;
  if (ct_explain(ctx, &n->lw, &ex) != CT_OK) {
    snprintf(why, why_size, "no kernel runs it in layout %s: %.170s",
             bench_layout_name(n->lw.layout), ct_errmsg(ctx));
    return CT_OK;
  }
  bench_explain_source(ctx, &n->lw, n->source, sizeof n->source);
  geom3 g;
  workload_geom(&n->pw, &g);
  /* the weights' input channels: a group's (C/G) */
  int64_t kvol = g.ker[0] * g.ker[1] * g.ker[2], rc = workload_cpg(&mc->w);
  int64_t wc = workload_cpg(&n->pw);
  size_t n_w = (size_t)(g.k * wc * kvol);
  if (!(n->h_w = calloc(n_w ? n_w : 1, 1))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the weights of %s", mc->name);
    goto done;
  }
  /* the model's [K][C][kvol] into [K][C padded][kvol]; a float model's are random */
  for (int64_t k = 0; k < g.k; k++)
    for (int64_t c = 0; c < rc; c++) {
      int8_t *dst = n->h_w + (k * wc + c) * kvol;
      if (mc->weights)
        memcpy(dst, mc->weights + (k * rc + c) * kvol, (size_t)kvol);
      else
        bench_fill_random(&R->rng, dst, (size_t)kvol);
    }
  if (workload_has_params(&n->lw)) {
    if (mc->weights) {
      n->q = &mc->q;
    } else {
      /* a float model: plausible values, as the set benchmark's int8 column */
      if ((st = quant_random(&n->pw, R->o->seed + 7919u * (uint64_t)(i + 1), &n->qs, err)))
        goto done;
      n->q = &n->qs.q;
    }
  }
  if (nhwc) {
    if (!(h_lw = malloc(n_w ? n_w : 1))) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the weights of %s", mc->name);
      goto done;
    }
    pack_ohwi(n->h_w, h_lw, g.k, wc, kvol);
  }
  size_t n_params = n->q ? ct_params_bytes(&n->lw) : 0;
  if (n->q) {
    if (!(h_params = malloc(n_params))) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the params of %s", mc->name);
      goto done;
    }
    /* the weights as ct_make_params takes them: OHWI for nhwc, else plain */
    if (ct_make_params(ctx, &n->lw, n->q, nhwc ? h_lw : n->h_w, h_params)) {
      snprintf(why, why_size, "%.220s", ct_errmsg(ctx));
      goto done;
    }
    CUDA_TRY(err, cudaMalloc(&n->d_params, n_params));
    CUDA_TRY(err, cudaMemcpy(n->d_params, h_params, n_params, cudaMemcpyHostToDevice));
  }
  if (nhwc) {
    CUDA_TRY(err, cudaMalloc(&n->d_w, n_w));
    CUDA_TRY(err, cudaMemcpy(n->d_w, h_lw, n_w, cudaMemcpyHostToDevice));
  } else {
    CUDA_TRY(err, cudaMalloc(&n->d_w, ct_packed_weights_bytes(&n->lw)));
    CUDA_TRY(err, cudaMalloc(&d_plain, n_w));
    CUDA_TRY(err, cudaMemcpy(d_plain, n->h_w, n_w, cudaMemcpyHostToDevice));
    /* a pageable copy returns once staged; the stream is non-blocking */
    CUDA_TRY(err, cudaDeviceSynchronize());
    if (ct_pack_weights(ctx, &n->lw, d_plain, n->d_w, R->e.t.stream)) {
      st = ERR_SET(err, CT_ERR_CUDA, "ct_pack_weights of %s: %s", mc->name, ct_errmsg(ctx));
      goto done;
    }
    CUDA_TRY(err, cudaStreamSynchronize(s));
  }
  CUDA_TRY(err, cudaDeviceSynchronize());
  n->data_bytes = (size_t)workload_data_elems(&n->lw); /* 8-bit data (a fused node's pre_c) */
  n->out_bytes = ct_out_bytes(&n->lw);
  if (n->lw.pre_c > 0) { /* its check runs ct_reference_qconv on lw's own tensors */
    n->h_lw = h_lw;
    h_lw = NULL;
  }
done:
  free(h_lw);
  free(h_params);
  if (d_plain) cudaFree(d_plain);
  return st;
}

/* A fresh tensor of bytes at *out: random bytes (never a constant), for
 * packed data the lanes past the model's channels set to the data zero
 * point, as the library pads a plain tensor. */
static ct_status fresh(mrun *R, const node_rt *n, int real_c, int is_data, size_t bytes, void **out,
                       ct_err *err) {
  ct_status st = CT_OK;
  uint8_t *h = malloc(bytes ? bytes : 1);
  if (!h) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for a fresh tensor");
  bench_fill_random(&R->rng, h, bytes);
  if (is_data && n->lw.layout == CT_LAYOUT_NCHW4C && real_c < n->lw.c) {
    int64_t sp = (int64_t)bytes / n->lw.n / n->lw.c, c4 = n->lw.c / 4;
    uint8_t zx = (uint8_t)(n->q && n->lw.epi.data_zero_point ? n->q->data_zero_point : 0);
    for (size_t e = 0; e < bytes; e++) {
      int64_t lane = (int64_t)e % 4, chunk = (int64_t)e / 4 / sp % c4;
      if (chunk * 4 + lane >= real_c) h[e] = zx;
    }
  }
  CUDA_TRY(err, cudaMalloc(out, bytes));
  CUDA_TRY(err, cudaMemcpy(*out, h, bytes, cudaMemcpyHostToDevice));
  CUDA_TRY(err, cudaDeviceSynchronize());
done:
  free(h);
  return st;
}

static void free_tensors(mrun *R) {
  for (int b = 0; b < R->n_pool; b++) cudaFree(R->pool[b]);
  free(R->pool);
  R->pool = NULL;
  R->n_pool = 0;
  for (int i = 0; i < R->m->n_convs; i++) {
    node_rt *n = &R->rt[i];
    if (n->d_out && !R->o->arena) cudaFree(n->d_out);
    if (n->d_fresh) cudaFree(n->d_fresh);
    if (n->d_fresh_res) cudaFree(n->d_fresh_res);
    n->d_out = n->d_fresh = n->d_fresh_res = NULL;
    n->d_data = n->d_res = NULL;
  }
}

/* Every node's output once (--arena: in the buffers of mbench_arena_plan),
 * and its inputs: its producer's output, or a fresh tensor. */
static ct_status alloc_tensors(mrun *R, ct_err *err) {
  ct_status st = CT_OK;
  mbench_result *r = R->r;
  r->arena = R->o->arena;
  r->out_bytes = r->arena_bytes = 0;
  r->arena_buffers = 0;
  for (int i = 0; i < r->n_nodes; i++)
    if (r->nodes[i].runs) r->out_bytes += (double)R->rt[i].out_bytes;
  if (R->o->arena) {
    const int n = r->n_nodes;
    const size_t m = (size_t)(n ? n : 1);
    int *runs = calloc(m, sizeof *runs), *last = calloc(m, sizeof *last);
    size_t *bytes = calloc(m, sizeof *bytes);
    void **outs = calloc(m, sizeof *outs);
    if (!runs || !last || !bytes || !outs) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the arena's plan");
    } else {
      for (int i = 0; i < n; i++) runs[i] = r->nodes[i].runs, bytes[i] = R->rt[i].out_bytes;
      last_uses(r, 1, last);
      st = arena_alloc(n, runs, bytes, last, outs, &R->pool, &R->n_pool, &r->arena_bytes, err);
      r->arena_buffers = R->n_pool;
      for (int i = 0; !st && i < n; i++)
        if (runs[i]) R->rt[i].d_out = outs[i];
    }
    free(runs), free(last), free(bytes), free(outs);
    if (st) return st;
  } else {
    for (int i = 0; i < r->n_nodes; i++)
      if (r->nodes[i].runs) CUDA_TRY(err, cudaMalloc(&R->rt[i].d_out, R->rt[i].out_bytes));
  }
  for (int i = 0; i < r->n_nodes; i++) {
    const mbench_node *nd = &r->nodes[i];
    node_rt *n = &R->rt[i];
    if (!nd->runs) continue;
    if (nd->input_conv >= 0)
      n->d_data = R->rt[nd->input_conv].d_out;
    else if ((st = fresh(R, n, workload_data_channels(&R->m->convs[i].w), 1, n->data_bytes,
                         &n->d_fresh, err)))
      goto done;
    else
      n->d_data = n->d_fresh;
    if (!n->lw.epi.residual) continue;
    if (nd->residual_conv >= 0)
      n->d_res = R->rt[nd->residual_conv].d_out;
    else if ((st = fresh(R, n, 0, 0, n->out_bytes, &n->d_fresh_res, err)))
      goto done;
    else
      n->d_res = n->d_fresh_res;
  }
done:
  return st;
}

/* The chain once, every output poisoned first: the run the check reads.
 * *failed gets the node whose call failed (-1: something else did). */
static ct_status run_once(mrun *R, int *failed, ct_err *err) {
  ct_status st = CT_OK;
  cudaStream_t s = (cudaStream_t)R->e.t.stream;
  for (int i = 0; i < R->r->n_nodes; i++)
    if (R->r->nodes[i].runs)
      CUDA_TRY(err, cudaMemsetAsync(R->rt[i].d_out, POISON, R->rt[i].out_bytes, s));
  chain c = {R->rt, R->r, R->r->n_nodes - 1, -1};
  st = launch_chain(&c, R->e.t.stream, err);
  *failed = c.failed;
  if (st) goto done;
  CUDA_TRY(err, cudaStreamSynchronize(s));
done:
  return st;
}

/* An image of a data-like tensor in layout l into plain [c][spatial]. */
static void to_plain(ct_layout l, const void *src, void *dst, size_t eb, int64_t c, int64_t sp) {
  if (l == CT_LAYOUT_NHWC)
    unpack_nhwc(src, dst, eb, 1, c, sp);
  else
    unpack_nc4c(src, dst, eb, 1, c, sp);
}

/* The note of a node exact on every checked image. */
static void note_exact(const mbench_result *r, mbench_node *nd) {
  int len = snprintf(nd->check_note, sizeof nd->check_note, "exact (image%s %d",
                     r->n_images > 1 ? "s" : "", r->images[0]);
  if (r->n_images > 1 && len > 0)
    snprintf(nd->check_note + len, sizeof nd->check_note - (size_t)len, ", %d", r->images[1]);
  len = (int)strlen(nd->check_note);
  snprintf(nd->check_note + len, sizeof nd->check_note - (size_t)len, ")");
}

/* Check fused node i (a 1x1 conv before its own) on the checked images:
 * ct_reference_qconv of its fused workload, one image, channels-last as it
 * runs, with its values (q->pre: the 1x1 conv's), on its actual inputs
 * downloaded; the outputs compared plain. The reference computes the 1x1
 * conv into a tensor of its own, then the conv: the two convs as the model
 * has them. */
static ct_status check_fused(mrun *R, int i, ct_err *err) {
  ct_status st = CT_OK;
  node_rt *n = &R->rt[i];
  mbench_node *nd = &R->r->nodes[i];
  ct_workload w1 = n->lw;
  w1.n = 1;
  int64_t osz[CT_MAX_SPATIAL], out_sp = 1;
  for (int d = 0, nd3 = out_sizes(&n->pw, osz); d < nd3; d++) out_sp *= osz[d];
  const int64_t out_c = workload_out_channels(&n->pw);
  const size_t eb = workload_out_elem_bytes(&n->pw), batch = (size_t)n->lw.n;
  const size_t img_data = n->data_bytes / batch, img_out = n->out_bytes / batch;
  uint8_t *data = malloc(img_data ? img_data : 1), *res = malloc(img_out ? img_out : 1);
  uint8_t *raw = malloc(2 * (img_out ? img_out : 1));
  uint8_t *got = malloc(img_out ? img_out : 1), *want = malloc(img_out ? img_out : 1);
  char msg[256];
  if (!data || !res || !raw || !got || !want) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the check of %s", nd->name);
    goto done;
  }
  nd->check = MBENCH_EXACT;
  for (int k = 0; k < R->r->n_images && nd->check == MBENCH_EXACT; k++) {
    int b = R->r->images[k];
    CUDA_TRY(err, cudaMemcpy(data, (const uint8_t *)n->d_data + b * img_data, img_data,
                             cudaMemcpyDeviceToHost));
    if (n->d_res)
      CUDA_TRY(err, cudaMemcpy(res, (const uint8_t *)n->d_res + b * img_out, img_out,
                               cudaMemcpyDeviceToHost));
    CUDA_TRY(err, cudaMemcpy(raw, (const uint8_t *)n->d_out + b * img_out, img_out,
                             cudaMemcpyDeviceToHost));
    if (ct_reference_qconv(&w1, n->q, data, n->h_lw, n->d_res ? res : NULL, raw + img_out, msg,
                           sizeof msg)) {
      nd->check = MBENCH_UNCHECKED;
      snprintf(nd->check_note, sizeof nd->check_note, "the reference failed: %.200s", msg);
      break;
    }
    to_plain(n->lw.layout, raw, got, eb, out_c, out_sp);
    to_plain(n->lw.layout, raw + img_out, want, eb, out_c, out_sp);
    if (mbench_compare(&n->pw, got, want, b, nd->check_note, sizeof nd->check_note))
      nd->check = MBENCH_WRONG;
  }
  if (nd->check == MBENCH_EXACT) note_exact(R->r, nd);
done:
  free(data);
  free(res);
  free(raw);
  free(got);
  free(want);
  return st;
}

/* Check node i's output on the checked images against the CPU reference of
 * its formula on its actual inputs, downloaded. */
static ct_status check_node(mrun *R, int i, ct_err *err) {
  if (R->rt[i].lw.pre_c > 0) return check_fused(R, i, err);
  ct_status st = CT_OK;
  node_rt *n = &R->rt[i];
  mbench_node *nd = &R->r->nodes[i];
  const ct_workload *pw = &n->pw;
  geom3 g;
  workload_geom(pw, &g);
  int64_t osz[CT_MAX_SPATIAL], out_sp = 1, in_sp = g.in[0] * g.in[1] * g.in[2];
  for (int d = 0, nd3 = out_sizes(pw, osz); d < nd3; d++) out_sp *= osz[d];
  int64_t out_c = workload_out_channels(pw);
  size_t eb = workload_out_elem_bytes(pw), batch = (size_t)n->lw.n;
  size_t img_data = n->data_bytes / batch, img_out = n->out_bytes / batch;
  size_t plain_out = (size_t)(out_c * out_sp) * eb;
  uint8_t *raw = malloc(img_data > img_out ? img_data : img_out);
  uint8_t *data = malloc((size_t)(g.c * in_sp)), *res = malloc(plain_out);
  uint8_t *got = malloc(plain_out), *want = malloc(plain_out);
  if (!raw || !data || !res || !got || !want) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the check of %s", nd->name);
    goto done;
  }
  nd->check = MBENCH_EXACT;
  for (int k = 0; k < R->r->n_images && nd->check == MBENCH_EXACT; k++) {
    int b = R->r->images[k];
    CUDA_TRY(err, cudaMemcpy(raw, (const uint8_t *)n->d_data + b * img_data, img_data,
                             cudaMemcpyDeviceToHost));
    to_plain(n->lw.layout, raw, data, 1, g.c, in_sp);
    if (n->d_res) {
      CUDA_TRY(err, cudaMemcpy(raw, (const uint8_t *)n->d_res + b * img_out, img_out,
                               cudaMemcpyDeviceToHost));
      to_plain(n->lw.layout, raw, res, eb, out_c, out_sp);
    }
    CUDA_TRY(err, cudaMemcpy(raw, (const uint8_t *)n->d_out + b * img_out, img_out,
                             cudaMemcpyDeviceToHost));
    to_plain(n->lw.layout, raw, got, eb, out_c, out_sp);
    ct_err e = {0};
    if (bench_reference_image(pw, n->q, data, n->h_w, n->d_res ? res : NULL, want, R->e.n_threads,
                              &e)) {
      nd->check = MBENCH_UNCHECKED;
      snprintf(nd->check_note, sizeof nd->check_note, "the reference failed: %.200s", e.msg);
      break;
    }
    if (mbench_compare(pw, got, want, b, nd->check_note, sizeof nd->check_note))
      nd->check = MBENCH_WRONG;
  }
  if (nd->check == MBENCH_EXACT) note_exact(R->r, nd);
done:
  free(raw);
  free(data);
  free(res);
  free(got);
  free(want);
  return st;
}

static void progress(const mrun *R, const char *side, int i, double us, const char *what) {
  if (R->o->quiet) return;
  const mbench_node *nd = &R->r->nodes[i];
  if (bench_has(us))
    fprintf(stderr, "[bench] %s %d/%d %s: %.2f us%s%s\n", side, i + 1, R->r->n_nodes, nd->name, us,
            what && *what ? ", " : "", what ? what : "");
  else
    fprintf(stderr, "[bench] %s %d/%d %s: -%s%s\n", side, i + 1, R->r->n_nodes, nd->name,
            what && *what ? ", " : "", what ? what : "");
}

/* Each node inside the chain (--in-chain): the chain cut after it, timed
 * as the chain is, less the chain cut before it. A cut chain's copies
 * follow one another in its graph as the whole chain's do, so a node's
 * value carries what the chain does to it: its input just written by its
 * producer, the next copy's first node overlapping the cut's last. A cut
 * that cannot be timed leaves its node's value (and the next's) null. */
static ct_status time_in_chain(mrun *R, ct_err *err) {
  mbench_result *r = R->r;
  double before = 0;
  for (int i = 0; i < r->n_nodes; i++) {
    mbench_node *nd = &r->nodes[i];
    if (!nd->runs) continue;
    chain c = {R->rt, r, i, -1};
    ct_err e = {0};
    double upto = BENCH_NONE;
    if (bench_time(&R->e.t, launch_chain, &c, 0, &upto, &e)) {
      ct_status st = bench_still_healthy(err);
      if (st) return st;
      if (!R->o->quiet)
        fprintf(stderr, "[bench] the chain cut after node %d: timing: %s\n", i, e.msg);
    }
    if (bench_has(upto) && bench_has(before)) nd->in_chain = upto - before;
    before = upto;
    if (!R->o->quiet && mbench_has_in_chain(nd->in_chain))
      fprintf(stderr, "[bench] in the chain: node %d %s %.2f us (alone %.2f)\n", i, nd->name,
              nd->in_chain, nd->t[MBENCH_CONVTUNE]);
  }
  return CT_OK;
}

/* ---- S copies of a chain at once, on S streams (--streams) ---------------------------- */

/* S launchers, each on a stream of its own, forked from and joined back
 * into the caller's stream: captured, the graph holds S independent chains. */
typedef struct concurrent {
  int n;
  ct_status (*fn)(void *, struct CUstream_st *, ct_err *);
  void *user[MBENCH_MAX_STREAMS];
  cudaStream_t st[MBENCH_MAX_STREAMS]; /* [0] unused: the caller's */
  cudaEvent_t fork, join[MBENCH_MAX_STREAMS];
} concurrent;

static ct_status launch_concurrent(void *user, struct CUstream_st *stream, ct_err *err) {
  ct_status st = CT_OK;
  concurrent *c = user;
  cudaStream_t s0 = (cudaStream_t)stream;
  CUDA_TRY(err, cudaEventRecord(c->fork, s0));
  for (int k = 1; k < c->n; k++) CUDA_TRY(err, cudaStreamWaitEvent(c->st[k], c->fork, 0));
  for (int k = 0; k < c->n; k++)
    if ((st = c->fn(c->user[k], k ? (struct CUstream_st *)c->st[k] : stream, err))) goto done;
  for (int k = 1; k < c->n; k++) {
    CUDA_TRY(err, cudaEventRecord(c->join[k], c->st[k]));
    CUDA_TRY(err, cudaStreamWaitEvent(s0, c->join[k], 0));
  }
done:
  return st;
}

static ct_status concurrent_open(concurrent *c, int n, ct_err *err) {
  ct_status st = CT_OK;
  memset(c, 0, sizeof *c);
  c->n = n;
  CUDA_TRY(err, cudaEventCreateWithFlags(&c->fork, cudaEventDisableTiming));
  for (int k = 1; k < n; k++) {
    CUDA_TRY(err, cudaStreamCreateWithFlags(&c->st[k], cudaStreamNonBlocking));
    CUDA_TRY(err, cudaEventCreateWithFlags(&c->join[k], cudaEventDisableTiming));
  }
done:
  return st;
}

static void concurrent_close(concurrent *c) {
  for (int k = 1; k < c->n; k++) {
    if (c->st[k]) cudaStreamDestroy(c->st[k]);
    if (c->join[k]) cudaEventDestroy(c->join[k]);
  }
  if (c->fork) cudaEventDestroy(c->fork);
  memset(c, 0, sizeof *c);
}

/* A device copy of bytes at src into a new buffer *dst. */
static ct_status dup_tensor(const void *src, size_t bytes, void **dst, ct_err *err) {
  ct_status st = CT_OK;
  CUDA_TRY(err, cudaMalloc(dst, bytes));
  CUDA_TRY(err, cudaMemcpy(*dst, src, bytes, cudaMemcpyDeviceToDevice));
done:
  return st;
}

/* --streams on convtune's side: copy 0 is the run's chain; each other
 * copy has outputs of its own, and its fresh inputs are copies of copy 0's
 * (so that its outputs must equal copy 0's, and no copy reads another's
 * bytes from the L2). Then every node's outputs are compared. */
static ct_status time_copies(mrun *R, ct_err *err) {
  ct_status st = CT_OK;
  mbench_result *r = R->r;
  const int n = r->n_nodes, S = R->o->streams;
  node_rt *cp[MBENCH_MAX_STREAMS] = {0};
  chain ch[MBENCH_MAX_STREAMS];
  concurrent c;
  uint8_t *h0 = NULL, *hk = NULL;
  if ((st = concurrent_open(&c, S, err))) goto done;
  c.fn = launch_chain;
  for (int k = 0; k < S; k++) {
    ch[k] = (chain){R->rt, r, n - 1, -1};
    c.user[k] = &ch[k];
    if (!k) continue;
    if (!(cp[k] = calloc((size_t)(n ? n : 1), sizeof *cp[k]))) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for copy %d of the chain", k);
      goto done;
    }
    ch[k].rt = cp[k];
    for (int i = 0; i < n; i++) {
      node_rt *d = &cp[k][i];
      const node_rt *o = &R->rt[i];
      *d = *o;
      d->d_out = d->d_fresh = d->d_fresh_res = NULL;
      if (!r->nodes[i].runs) continue;
      CUDA_TRY(err, cudaMalloc(&d->d_out, o->out_bytes));
      if (o->d_fresh && (st = dup_tensor(o->d_fresh, o->data_bytes, &d->d_fresh, err))) goto done;
      if (o->d_fresh_res &&
          (st = dup_tensor(o->d_fresh_res, o->out_bytes, &d->d_fresh_res, err)))
        goto done;
    }
    for (int i = 0; i < n; i++) {
      const mbench_node *nd = &r->nodes[i];
      node_rt *d = &cp[k][i];
      if (!nd->runs) continue;
      d->d_data = nd->input_conv >= 0 ? cp[k][nd->input_conv].d_out : d->d_fresh;
      if (R->rt[i].d_res)
        d->d_res = nd->residual_conv >= 0 ? cp[k][nd->residual_conv].d_out : d->d_fresh_res;
    }
  }
  ct_err e = {0};
  if (bench_time(&R->e.t, launch_concurrent, &c, 0, &r->streams_chain[MBENCH_CONVTUNE], &e)) {
    snprintf(r->streams_note[MBENCH_CONVTUNE], sizeof r->streams_note[MBENCH_CONVTUNE],
             "timing: %.200s", e.msg);
    st = bench_still_healthy(err);
    goto done;
  }
  CUDA_TRY(err, cudaDeviceSynchronize());
  r->copies_identical = 1;
  for (int i = 0; i < n && r->copies_identical; i++) {
    if (!r->nodes[i].runs) continue;
    size_t b = R->rt[i].out_bytes;
    free(h0), free(hk);
    h0 = malloc(b ? b : 1), hk = malloc(b ? b : 1);
    if (!h0 || !hk) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the copies' comparison");
      goto done;
    }
    CUDA_TRY(err, cudaMemcpy(h0, R->rt[i].d_out, b, cudaMemcpyDeviceToHost));
    for (int k = 1; k < S && r->copies_identical; k++) {
      CUDA_TRY(err, cudaMemcpy(hk, cp[k][i].d_out, b, cudaMemcpyDeviceToHost));
      if (memcmp(h0, hk, b)) {
        /* a wrong result has no speed: the time goes, the reason stays */
        r->copies_identical = 0;
        r->streams_chain[MBENCH_CONVTUNE] = BENCH_NONE;
        snprintf(r->streams_note[MBENCH_CONVTUNE], sizeof r->streams_note[MBENCH_CONVTUNE],
                 "copy %d's output of node %d %.100s differs from copy 0's", k, i,
                 r->nodes[i].name);
      }
    }
  }
  if (!R->o->quiet && r->copies_identical)
    fprintf(stderr,
            "[bench] convtune, %d chains at once: %.2f us (one chain %.2f); every copy's "
            "outputs equal the first's\n",
            S, r->streams_chain[MBENCH_CONVTUNE], r->chain[MBENCH_CONVTUNE]);
  else if (!R->o->quiet)
    fprintf(stderr, "[bench] convtune, %d chains at once: %s\n", S,
            r->streams_note[MBENCH_CONVTUNE]);
done:
  free(h0), free(hk);
  for (int k = 1; k < S; k++) {
    if (!cp[k]) continue;
    for (int i = 0; i < n; i++) {
      if (cp[k][i].d_out) cudaFree(cp[k][i].d_out);
      if (cp[k][i].d_fresh) cudaFree(cp[k][i].d_fresh);
      if (cp[k][i].d_fresh_res) cudaFree(cp[k][i].d_fresh_res);
    }
    free(cp[k]);
  }
  concurrent_close(&c);
  return st;
}

/* Prepare every node, plan and wire the chain, and run it once; a node whose
 * call fails is skipped (its why says so) and the rest rewired. */
static ct_status wire_chain(mrun *R, ct_err *err) {
  ct_status st = CT_OK;
  const model *m = R->m;
  mbench_result *r = R->r;
  int n = m->n_convs;
  char(*why)[224] = calloc((size_t)(n ? n : 1), sizeof *why);
  const char **skip = calloc((size_t)(n ? n : 1), sizeof *skip);
  if (!why || !skip) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    /* a conv absorbed by a fused node runs inside that node's kernel */
    if (!m->convs[i].supported || model_absorbed_by(m, i) >= 0) continue;
    if ((st = prep_node(R, i, why[i], sizeof why[i], err))) goto done;
    if (why[i][0]) skip[i] = why[i];
  }
  /* wire and run once; a node whose call fails is skipped and the rest rewired */
  for (int attempt = 0;; attempt++) {
    if ((st = mbench_plan(m, &r->head.peaks, skip, r, err))) goto done;
    for (int i = 0; i < n; i++)
      snprintf(r->nodes[i].source, sizeof r->nodes[i].source, "%s", R->rt[i].source);
    if ((st = alloc_tensors(R, err))) goto done;
    int failed = -1;
    ct_err e = {0};
    if (!(st = run_once(R, &failed, &e))) break;
    if (failed < 0 || attempt >= n) {
      *err = e;
      goto done;
    }
    snprintf(why[failed], sizeof why[failed], "failed: %.210s", e.msg);
    skip[failed] = why[failed];
    if ((st = bench_still_healthy(err))) goto done;
    free_tensors(R);
  }
done:
  free(why);
  free(skip);
  return st;
}

/* convtune's side: prepare, wire, check, time node by node and as a chain. */
static ct_status run_convtune(mrun *R, ct_err *err) {
  ct_status st = CT_OK;
  mbench_result *r = R->r;
  int n = R->m->n_convs;
  if ((st = wire_chain(R, err))) return st;
  if (!R->o->quiet)
    fprintf(stderr,
            "[bench] %s: %d of %d conv nodes run (%d convs fused into %d nodes), %d "
            "fresh inputs; checking ",
            r->head.set, r->n_run, r->n_nodes, 2 * r->n_fused, r->n_fused, r->n_fresh_inputs);
  if (!R->o->quiet) {
    md_images(r, stderr);
    fputs(" of each node against the CPU reference\n", stderr);
  }
  if (!R->o->arena) {
    for (int i = 0; i < n; i++)
      if (r->nodes[i].runs && (st = check_node(R, i, err))) goto done;
  } else {
    /* the buffers are reused, so a node's inputs last only until their
     * last reader has run: the chain again, each node checked as soon as
     * it has run (its output poisoned first) */
    cudaStream_t s = (cudaStream_t)R->e.t.stream;
    for (int i = 0; i < n; i++) {
      if (!r->nodes[i].runs) continue;
      ct_err e = {0};
      if (cudaMemsetAsync(R->rt[i].d_out, POISON, R->rt[i].out_bytes, s) != cudaSuccess ||
          launch_node(&R->rt[i], R->e.t.stream, &e) || cudaStreamSynchronize(s) != cudaSuccess) {
        st = ERR_SET(err, CT_ERR_CUDA, "node %d %s again, to check it: %s", i, r->nodes[i].name,
                     e.msg[0] ? e.msg : cudaGetErrorString(cudaGetLastError()));
        goto done;
      }
      if ((st = check_node(R, i, err))) goto done;
    }
  }
  for (int i = 0; i < n; i++) {
    mbench_node *nd = &r->nodes[i];
    if (!nd->runs) continue;
    ct_err e = {0};
    if (bench_time(&R->e.t, launch_node, &R->rt[i], 0, &nd->t[MBENCH_CONVTUNE], &e)) {
      snprintf(nd->note[MBENCH_CONVTUNE], sizeof nd->note[MBENCH_CONVTUNE], "timing: %.200s",
               e.msg);
      if ((st = bench_still_healthy(err))) goto done;
    }
    progress(R, "convtune", i, nd->t[MBENCH_CONVTUNE],
             nd->check == MBENCH_EXACT ? "exact" : nd->check_note);
  }
  if (r->n_run) {
    chain c = {R->rt, r, r->n_nodes - 1, -1};
    ct_err e = {0};
    if (bench_time(&R->e.t, launch_chain, &c, 0, &r->chain[MBENCH_CONVTUNE], &e)) {
      snprintf(r->chain_note[MBENCH_CONVTUNE], sizeof r->chain_note[MBENCH_CONVTUNE],
               "timing: %.200s", e.msg);
      if ((st = bench_still_healthy(err))) goto done;
    } else {
      if (!R->o->quiet)
        fprintf(stderr, "[bench] convtune chain: %.2f us (sum of the nodes %.2f us)\n",
                r->chain[MBENCH_CONVTUNE], mbench_sum(r, MBENCH_CONVTUNE, NULL));
      if (R->o->in_chain && (st = time_in_chain(R, err))) goto done;
      if (R->o->streams > 1 && (st = time_copies(R, err))) goto done;
    }
  }
done:
  return st;
}

/* Whether cuDNN producer p's output is consumer c's input (plain sizes). */
static int cudnn_feeds(const ct_workload *p, const ct_workload *c) {
  int nd = workload_nd(p);
  if (workload_nd(c) != nd || p->n != c->n || p->k != c->c) return 0;
  for (int d = 0; d < nd; d++)
    if (workload_out_size(p, d) != c->in[d]) return 0;
  return 1;
}

typedef struct cudnn_chain {
  cudnn_conv **cv;
  int n;
} cudnn_chain;

/* A cuDNN conv's output scale in the chain. fp16: an output of the input's
 * scale (rms of the fill), so that a chain of convolutions neither
 * overflows nor fades to zero; int8 saturates, as a requantized chain
 * clamps. */
static double cudnn_alpha(const ct_workload *w, cudnn_side_kind kind) {
  double kvol = (double)w->kernel[0] * w->kernel[1] * (workload_nd(w) == 3 ? w->kernel[2] : 1);
  return kind == CUDNN_SIDE_FP16
             ? 1.0 / (cudnn_side_fill_rms(kind) * sqrt((double)workload_cpg(w) * kvol))
             : 1.0;
}

static ct_status launch_cudnn_chain(void *user, struct CUstream_st *stream, ct_err *err) {
  const cudnn_chain *c = user;
  for (int i = 0; i < c->n; i++) {
    if (!c->cv[i]) continue;
    ct_status st = cudnn_conv_launch(c->cv[i], stream, err);
    if (st) return st;
  }
  return CT_OK;
}

/* cuDNN's convolutions of the chain, in slots: 2i + 1 node i's own conv,
 * 2i the 1x1 conv a fused node runs before it (cuDNN has no such fusion:
 * it runs both, the second reading the first's output), the other even
 * slots empty. Each slot's conv alone, real channels, no epilogue: what
 * cuDNN is asked for. */
static int slot_workload(const mrun *R, int s, ct_workload *cw) {
  const mbench_node *nd = &R->r->nodes[s / 2];
  if (!nd->runs) return 0;
  if (s % 2 == 0) {
    if (nd->pre_conv < 0) return 0;
    *cw = R->m->convs[nd->pre_conv].w;
  } else {
    workload_main(&R->m->convs[s / 2].w, cw);
  }
  cw->layout = CT_LAYOUT_NCHW;
  memset(&cw->epi, 0, sizeof cw->epi);
  cw->data_type = cw->weight_type = CT_DTYPE_INT8;
  cw->out_type = CT_DTYPE_INT32;
  return 1;
}

/* --streams on a cuDNN side (time_copies' twin): copy 0 is the side's
 * chain; each other copy has its convs (the same algorithms), outputs,
 * workspace and fresh inputs (copies of copy 0's) of its own; the weights
 * are shared. */
static ct_status cudnn_copies(mrun *R, cudnn_side_kind kind, mbench_field f, cudnn_conv **cv,
                              int ns, const int *src, void **d_x, void **d_w, ct_err *err) {
  ct_status st = CT_OK;
  const int S = R->o->streams;
  mbench_result *r = R->r;
  cudnn_conv **cvk[MBENCH_MAX_STREAMS] = {0};
  void **yk[MBENCH_MAX_STREAMS] = {0}, **xk[MBENCH_MAX_STREAMS] = {0};
  void *wsk[MBENCH_MAX_STREAMS] = {0};
  cudnn_chain cc[MBENCH_MAX_STREAMS];
  concurrent c;
  if ((st = concurrent_open(&c, S, err))) goto done;
  c.fn = launch_cudnn_chain;
  for (int k = 0; k < S; k++) {
    cc[k] = (cudnn_chain){cv, ns};
    c.user[k] = &cc[k];
    if (!k) continue;
    const size_t nz = (size_t)(ns ? ns : 1);
    if (!(cvk[k] = calloc(nz, sizeof *cvk[k])) || !(yk[k] = calloc(nz, sizeof *yk[k])) ||
        !(xk[k] = calloc(nz, sizeof *xk[k]))) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for copy %d of the chain", k);
      goto done;
    }
    cc[k].cv = cvk[k];
    size_t ws = 0;
    for (int s = 0; s < ns; s++) {
      if (!cv[s]) continue;
      char why[224];
      if ((st = cudnn_conv_open(R->e.cudnn, cudnn_conv_workload(cv[s]), kind, &cvk[k][s], why,
                                sizeof why, err)))
        goto done;
      if (!cvk[k][s]) {
        st = ERR_SET(err, CT_ERR_CUDA, "cuDNN took a conv once and not for copy %d: %.180s", k,
                     why);
        goto done;
      }
      cudnn_conv_use_algo(cvk[k][s], cv[s]);
      if (cudnn_conv_bytes(cvk[k][s], CUDNN_CONV_WS) > ws)
        ws = cudnn_conv_bytes(cvk[k][s], CUDNN_CONV_WS);
      CUDA_TRY(err, cudaMalloc(&yk[k][s], cudnn_conv_bytes(cv[s], CUDNN_CONV_Y)));
      if (src[s] < 0 &&
          (st = dup_tensor(d_x[s], cudnn_conv_bytes(cv[s], CUDNN_CONV_X), &xk[k][s], err)))
        goto done;
    }
    if (ws) CUDA_TRY(err, cudaMalloc(&wsk[k], ws));
    for (int s = 0; s < ns; s++) {
      if (!cv[s]) continue;
      cudnn_conv_bind(cvk[k][s], src[s] >= 0 ? yk[k][src[s]] : xk[k][s], d_w[s], yk[k][s],
                      wsk[k], cudnn_alpha(cudnn_conv_workload(cv[s]), kind));
    }
  }
  ct_err e = {0};
  if (bench_time(&R->e.t, launch_concurrent, &c, 0, &r->streams_chain[f], &e)) {
    snprintf(r->streams_note[f], sizeof r->streams_note[f], "timing: %.200s", e.msg);
    st = bench_still_healthy(err);
  } else if (!R->o->quiet) {
    fprintf(stderr, "[bench] %s, %d chains at once: %.2f us (one chain %.2f)\n",
            mbench_field_names[f], S, r->streams_chain[f], r->chain[f]);
  }
done:
  for (int k = 1; k < S; k++) {
    for (int s = 0; s < ns; s++) {
      if (cvk[k] && cvk[k][s]) cudnn_conv_close(cvk[k][s]);
      if (yk[k] && yk[k][s]) cudaFree(yk[k][s]);
      if (xk[k] && xk[k][s]) cudaFree(xk[k][s]);
    }
    free(cvk[k]), free(yk[k]), free(xk[k]);
    if (wsk[k]) cudaFree(wsk[k]);
  }
  concurrent_close(&c);
  return st;
}

/* One cuDNN side into field f: each conv's fastest algorithm (a shape
 * searched once), then the chain on buffers of its own, wired as
 * convtune's, when every node runs; a fused node's time is the sum of its
 * two convs', and its algorithm "pre's + own". */
static ct_status run_cudnn(mrun *R, cudnn_side_kind kind, mbench_field f, ct_err *err) {
  ct_status st = CT_OK;
  mbench_result *r = R->r;
  const int n = r->n_nodes, ns = 2 * n, ai = f == MBENCH_CUDNN_FP16 ? 0 : 1;
  const size_t nz = (size_t)(ns ? ns : 1);
  const char *side = kind == CUDNN_SIDE_FP16 ? "cuDNN fp16" : "cuDNN int8";
  if (!R->e.cudnn) {
    snprintf(r->chain_note[f], sizeof r->chain_note[f], "%s",
             cudnn_side_built() ? "cuDNN did not load" : "cuDNN not built in");
    return CT_OK;
  }
  cudnn_conv **cv = calloc(nz, sizeof *cv);
  char(*keys)[CT_KEY_MAX] = calloc(nz, sizeof *keys);
  char(*algo)[sizeof r->nodes[0].algo[0]] = calloc(nz, sizeof *algo);
  char(*note)[sizeof r->nodes[0].note[0]] = calloc(nz, sizeof *note);
  double *us = calloc(nz, sizeof *us);
  int *used = calloc(nz, sizeof *used); /* the slot holds a conv to run */
  void **d_x = calloc(nz, sizeof *d_x);
  void **d_w = calloc(nz, sizeof *d_w);
  void **d_y = calloc(nz, sizeof *d_y);
  void *d_ws = NULL, **pool = NULL; /* --arena: the outputs' buffers, n_pool of them */
  int *src = NULL; /* the slot each conv reads its data from (below) */
  int n_pool = 0;
  int missing = 0, first_missing = -1;
  if (!cv || !keys || !algo || !note || !us || !used || !d_x || !d_w || !d_y) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int s = 0; s < ns; s++) {
    ct_workload cw;
    us[s] = BENCH_NONE;
    if (!(used[s] = slot_workload(R, s, &cw))) continue;
    workload_key(&cw, keys[s], sizeof keys[s]);
    int j = 0;
    while (j < s && !(used[j] && !strcmp(keys[j], keys[s]))) j++;
    if (j < s) {
      /* searched already: the same algorithm, and its time */
      us[s] = us[j];
      memcpy(algo[s], algo[j], sizeof algo[s]); /* j < s: other rows */
      memcpy(note[s], note[j], sizeof note[s]);
      if (cv[j]) {
        char why[224];
        if ((st = cudnn_conv_open(R->e.cudnn, cudnn_conv_workload(cv[j]), kind, &cv[s], why,
                                  sizeof why, err)))
          goto done;
        if (cv[s]) cudnn_conv_use_algo(cv[s], cv[j]);
      }
    } else {
      ct_err e = {0};
      if (bench_cudnn_best(R->e.cudnn, &R->e.t, &cw, kind, &cv[s], &us[s], algo[s], sizeof algo[s],
                           note[s], sizeof note[s], &e)) {
        snprintf(note[s], sizeof note[s], "%.200s", e.msg);
        if ((st = bench_still_healthy(err))) goto done;
      }
    }
    if (s % 2 == 0) continue; /* the node's own conv comes next */
    /* the node: its own conv, after the 1x1 conv it runs fused (if any) */
    const int i = s / 2, pre = s - 1;
    mbench_node *nd = &r->nodes[i];
    if (!used[pre]) {
      nd->t[f] = us[s];
      snprintf(nd->algo[ai], sizeof nd->algo[ai], "%s", algo[s]);
      snprintf(nd->note[f], sizeof nd->note[f], "%s", note[s]);
    } else {
      nd->t[f] = bench_has(us[pre]) && bench_has(us[s]) ? us[pre] + us[s] : BENCH_NONE;
      snprintf(nd->algo[ai], sizeof nd->algo[ai], "%.48s + %.48s", algo[pre], algo[s]);
      if (!cv[pre] || !cv[s])
        snprintf(nd->note[f], sizeof nd->note[f], "%.110s: %.110s",
                 !cv[pre] ? nd->pre_name : nd->name, !cv[pre] ? note[pre] : note[s]);
      else if (note[pre][0] || note[s][0])
        snprintf(nd->note[f], sizeof nd->note[f], "the two convs: %.100s%s%.100s", note[pre],
                 note[pre][0] && note[s][0] ? "; " : "", note[s]);
    }
    if ((!cv[s] || (used[pre] && !cv[pre])) && !missing++) first_missing = i;
    progress(R, side, i, nd->t[f], nd->algo[ai]);
  }
  if (missing) {
    snprintf(r->chain_note[f], sizeof r->chain_note[f],
             "%s does not run %d of the %d nodes (first %.40s: %.80s): no chain, no total", side,
             missing, r->n_run, r->nodes[first_missing].name, r->nodes[first_missing].note[f]);
    goto done;
  }
  if (!r->n_run) goto done;
  size_t ws = 0;
  for (int s = 0; s < ns; s++)
    if (cv[s] && cudnn_conv_bytes(cv[s], CUDNN_CONV_WS) > ws)
      ws = cudnn_conv_bytes(cv[s], CUDNN_CONV_WS);
  if (ws) CUDA_TRY(err, cudaMalloc(&d_ws, ws));
  /* the slot each conv reads its data from (-1: a fresh tensor): a fused
   * node's own conv its 1x1 conv's output, a node's first conv the output
   * of the node that feeds it (node i's last slot, 2i + 1), where the
   * shapes agree */
  src = malloc(nz * sizeof *src);
  if (!src) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int s = 0; s < ns; s++) {
    src[s] = -1;
    if (!cv[s]) continue;
    const int j = s % 2 && cv[s - 1] ? s - 1 : 2 * r->nodes[s / 2].input_conv + 1;
    if (j >= 0 && j < s && cv[j] &&
        cudnn_feeds(cudnn_conv_workload(cv[j]), cudnn_conv_workload(cv[s])))
      src[s] = j;
  }
  if (R->o->arena) {
    /* the outputs in reused buffers, as convtune's */
    int *runs = calloc(nz, sizeof *runs), *last = calloc(nz, sizeof *last);
    size_t *bytes = calloc(nz, sizeof *bytes);
    if (!runs || !last || !bytes) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for the arena's plan");
    } else {
      for (int s = 0; s < ns; s++) {
        runs[s] = cv[s] != NULL, last[s] = s;
        bytes[s] = cv[s] ? cudnn_conv_bytes(cv[s], CUDNN_CONV_Y) : 0;
      }
      for (int s = 0; s < ns; s++)
        if (src[s] >= 0 && last[src[s]] < s) last[src[s]] = s;
      double total;
      st = arena_alloc(ns, runs, bytes, last, d_y, &pool, &n_pool, &total, err);
    }
    free(runs), free(last), free(bytes);
    if (st) goto done;
  }
  for (int s = 0; s < ns && !st; s++) {
    if (!cv[s]) continue;
    if (!R->o->arena && cudaMalloc(&d_y[s], cudnn_conv_bytes(cv[s], CUDNN_CONV_Y)) != cudaSuccess)
      st = ERR_SET(err, CT_ERR_CUDA, "cudaMalloc of a cuDNN output: %s",
                   cudaGetErrorString(cudaGetLastError()));
    else if (cudaMalloc(&d_w[s], cudnn_conv_bytes(cv[s], CUDNN_CONV_W)) != cudaSuccess)
      st = ERR_SET(err, CT_ERR_CUDA, "cudaMalloc of cuDNN weights: %s",
                   cudaGetErrorString(cudaGetLastError()));
    else
      st = cudnn_side_fill(R->e.cudnn, d_w[s], cudnn_conv_bytes(cv[s], CUDNN_CONV_W), kind, err);
  }
  for (int s = 0; s < ns && !st; s++) {
    if (!cv[s]) continue;
    const ct_workload *w = cudnn_conv_workload(cv[s]);
    const void *x = NULL;
    if (src[s] >= 0) {
      x = d_y[src[s]];
    } else {
      size_t xb = cudnn_conv_bytes(cv[s], CUDNN_CONV_X);
      if (cudaMalloc(&d_x[s], xb) != cudaSuccess) {
        st = ERR_SET(err, CT_ERR_CUDA, "cudaMalloc of a cuDNN input (%zu bytes): %s", xb,
                     cudaGetErrorString(cudaGetLastError()));
        break;
      }
      if ((st = cudnn_side_fill(R->e.cudnn, d_x[s], xb, kind, err))) break;
      x = d_x[s];
    }
    cudnn_conv_bind(cv[s], x, d_w[s], d_y[s], d_ws, cudnn_alpha(w, kind));
  }
  if (st) goto done;
  {
    cudnn_chain c = {cv, ns};
    ct_err e = {0};
    if (bench_time(&R->e.t, launch_cudnn_chain, &c, 0, &r->chain[f], &e)) {
      snprintf(r->chain_note[f], sizeof r->chain_note[f], "timing: %.200s", e.msg);
      if ((st = bench_still_healthy(err))) goto done;
    } else if (!R->o->quiet) {
      fprintf(stderr, "[bench] %s chain: %.2f us (sum of the nodes %.2f us)\n", side, r->chain[f],
              mbench_sum(r, f, NULL));
    }
  }
  if (R->o->streams > 1 && bench_has(r->chain[f]))
    st = cudnn_copies(R, kind, f, cv, ns, src, d_x, d_w, err);
done:
  free(src);
  for (int s = 0; s < ns; s++) {
    if (cv) cudnn_conv_close(cv[s]);
    if (d_x && d_x[s]) cudaFree(d_x[s]);
    if (d_w && d_w[s]) cudaFree(d_w[s]);
    if (d_y && d_y[s] && !R->o->arena) cudaFree(d_y[s]);
  }
  for (int b = 0; b < n_pool; b++) cudaFree(pool[b]);
  free(pool);
  if (d_ws) cudaFree(d_ws);
  free(cv);
  free(keys);
  free(algo);
  free(note);
  free(us);
  free(used);
  free(d_x);
  free(d_w);
  free(d_y);
  return st;
}

ct_status mbench_run(const bench_opts *o, const model *m, mbench_result *r, ct_err *err) {
  ct_status st = CT_OK;
  mrun R = {.o = o, .m = m, .r = r};
  /* the plan first, on no peaks: a model that cannot be planned stops
   * here, before the GPU */
  bench_peaks none = {0};
  if ((st = mbench_plan(m, &none, NULL, r, err))) return st;
  if (o->streams < 1 || o->streams > MBENCH_MAX_STREAMS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "streams: %d, accepted 1..%d", o->streams,
                   MBENCH_MAX_STREAMS);
  if (o->streams > 1 && o->arena)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "streams and arena together: each copy of the chain has tensors of its own");
  r->streams = o->streams;
  if ((st = bench_env_open(o, &R.e, &r->head, err))) return st;
  rng_seed(&R.rng, o->seed);
  if (!(R.rt = calloc((size_t)(m->n_convs ? m->n_convs : 1), sizeof *R.rt))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  if ((st = run_convtune(&R, err))) goto done;
  /* convtune's memory back before cuDNN's chains take theirs */
  free_tensors(&R);
  for (int i = 0; i < m->n_convs; i++) node_free(&R.rt[i]);
  if ((st = run_cudnn(&R, CUDNN_SIDE_FP16, MBENCH_CUDNN_FP16, err))) goto done;
  if ((st = run_cudnn(&R, CUDNN_SIDE_INT8, MBENCH_CUDNN_INT8, err))) goto done;
done:
  r->n_exact = r->n_wrong = r->n_unchecked = 0;
  for (int i = 0; i < r->n_nodes; i++) {
    if (!r->nodes[i].runs) continue;
    r->n_exact += r->nodes[i].check == MBENCH_EXACT;
    r->n_wrong += r->nodes[i].check == MBENCH_WRONG;
    r->n_unchecked += r->nodes[i].check == MBENCH_UNCHECKED;
  }
  if (R.rt) {
    free_tensors(&R);
    for (int i = 0; i < m->n_convs; i++) node_free(&R.rt[i]);
    free(R.rt);
  }
  bench_env_close(&R.e);
  return st;
}

/* ---- the chain's configs chosen by the chain (mbench_refine) ---------------------- */

void mbench_refine_opts_default(mbench_refine_opts *o) {
  memset(o, 0, sizeof *o);
  o->candidates = 6;
  o->within = 1.25;
  o->pairs = 3;
  o->min_gain_us = 0.3;
  o->passes = 2;
}

void mbench_refined_free(mbench_refined *r) {
  if (!r) return;
  free(r->keys);
  free(r->picks);
  memset(r, 0, sizeof *r);
}

/* A unique workload of the chain and its candidates: all its trials on this
 * device (owned), c[0..n) indexing the distinct OK configs of current
 * template versions, fastest first; cur the one its nodes run (-1: none,
 * the dispatch's own choice: an untuned workload). */
typedef struct rwork {
  ct_workload w;
  trial *all;
  int n_all;
  int c[MBENCH_REFINE_MAX], n, cur;
  unsigned char pinned[MBENCH_REFINE_MAX]; /* 1 pinned in ctx[j], 2 failed there */
} rwork;

typedef struct refiner {
  mrun *R;
  const mbench_refine_opts *ro;
  rwork *w;
  int n_w;
  int *node_w; /* each node's workload (-1: does not run) */
  /* candidate rank j's context: each workload's j-th candidate, pinned on
   * first use, so that no kernel is compiled twice */
  ct_context *ctx[MBENCH_REFINE_MAX];
} refiner;

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void rlog(const refiner *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rlog(const refiner *f, const char *fmt, ...) {
  if (!f->ro->log) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  f->ro->log(f->ro->log_user, line);
}

/* w's candidates from its trials on dev (d readonly). */
static ct_status list_candidates(db *d, const db_device *dev, const mbench_refine_opts *ro,
                                 rwork *w, ct_err *err) {
  char key[CT_KEY_MAX];
  workload_key(&w->w, key, sizeof key);
  w->cur = -1;
  ct_status st = db_trials(d, key, dev, NULL, NULL, &w->all, &w->n_all, err);
  if (st) return st;
  int *ok = malloc(sizeof *ok * (size_t)(w->n_all ? w->n_all : 1)), n_ok = 0;
  if (!ok) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  for (int i = 0; i < w->n_all; i++) {
    const trial *t = &w->all[i];
    const template_desc *tpl = template_find(t->template_name);
    if (t->outcome == OUT_OK && t->median_us > 0 && tpl &&
        !strcmp(t->template_version, template_version(tpl)))
      ok[n_ok++] = i;
  }
  /* by median, insertion sort: a workload has tens to hundreds of trials */
  for (int i = 1; i < n_ok; i++)
    for (int j = i; j > 0 && w->all[ok[j]].median_us < w->all[ok[j - 1]].median_us; j--) {
      int t = ok[j];
      ok[j] = ok[j - 1];
      ok[j - 1] = t;
    }
  for (int i = 0; i < n_ok && w->n < ro->candidates; i++) {
    const trial *t = &w->all[ok[i]];
    if (t->median_us > ro->within * w->all[ok[0]].median_us) break;
    int dup = 0;
    for (int j = 0; j < w->n && !dup; j++) {
      const trial *o = &w->all[w->c[j]];
      dup = !strcmp(o->template_name, t->template_name) && !strcmp(o->config_json, t->config_json);
    }
    if (!dup) w->c[w->n++] = ok[i];
  }
  free(ok);
  if (w->n) w->cur = 0;
  return CT_OK;
}

/* Point workload wi's nodes at its candidate j (-1: the run's own context),
 * pinning it in rank j's context first: 0 when it cannot be built there. */
static int use_candidate(refiner *f, int wi, int j) {
  mrun *R = f->R;
  rwork *w = &f->w[wi];
  ct_context *ctx = R->e.ctx;
  if (j >= 0) {
    if (w->pinned[j] == 2) return 0;
    if (!f->ctx[j] && ct_open(R->o->db_path, R->o->device, &f->ctx[j]) != CT_OK) {
      rlog(f, "a context for candidate %d: %s", j, ct_errmsg(f->ctx[j]));
      ct_close(f->ctx[j]);
      f->ctx[j] = NULL;
      return 0;
    }
    if (!w->pinned[j]) {
      const trial *t = &w->all[w->c[j]];
      if (dispatch_pin(f->ctx[j], &w->w, t->template_name, t->config_json) != CT_OK) {
        rlog(f, "%s, candidate %d (%s): %s", t->workload_key, j, t->template_name,
             ct_errmsg(f->ctx[j]));
        w->pinned[j] = 2;
        return 0;
      }
      w->pinned[j] = 1;
    }
    ctx = f->ctx[j];
  }
  for (int i = 0; i < R->r->n_nodes; i++)
    if (f->node_w[i] == wi) R->rt[i].ctx = ctx;
  return 1;
}

/* The whole chain, timed as mbench_run times it: BENCH_NONE on failure. */
static double chain_us(refiner *f) {
  mrun *R = f->R;
  chain c = {R->rt, R->r, R->r->n_nodes - 1, -1};
  double us = BENCH_NONE;
  ct_err e = {0};
  if (bench_time(&R->e.t, launch_chain, &c, 0, &us, &e) != CT_OK) {
    rlog(f, "timing the chain: %s", e.msg);
    return BENCH_NONE;
  }
  return us;
}

/* Every workload at its fastest record (first) or at its incumbent. A
 * workload whose fastest cannot be built here loses its candidates and
 * runs what the dispatch serves it. */
static int use_all(refiner *f, int first) {
  for (int wi = 0; wi < f->n_w; wi++) {
    rwork *w = &f->w[wi];
    if (!w->n) continue;
    if (use_candidate(f, wi, first ? 0 : w->cur)) continue;
    if (!first && w->cur > 0) return 0;
    w->n = 0;
    w->cur = -1;
    use_candidate(f, wi, -1);
  }
  return 1;
}

/* The pairs' median of (chain with b) - (chain with a), a and b set by
 * set(f, arg, 0 or 1); NAN when a timing failed. */
static double paired_gain(refiner *f, int pairs, int (*set)(refiner *, int, int), int arg,
                          double *a_med, double *b_med) {
  double a[33], b[33], d[33];
  if (pairs > 33) pairs = 33;
  for (int p = 0; p < pairs; p++) {
    if (!set(f, arg, 0) || !bench_has(a[p] = chain_us(f))) return NAN;
    if (!set(f, arg, 1) || !bench_has(b[p] = chain_us(f))) return NAN;
    d[p] = b[p] - a[p];
  }
  if (a_med) *a_med = bench_median(a, pairs);
  if (b_med) *b_med = bench_median(b, pairs);
  return bench_median(d, pairs);
}

/* set for one comparison: workload (arg >> 8) at its incumbent (0) or at
 * candidate (arg & 255) (1) */
static int set_candidate(refiner *f, int arg, int which) {
  int wi = arg >> 8;
  return use_candidate(f, wi, which ? (arg & 255) : f->w[wi].cur);
}

/* set for the final comparison: every workload at its fastest (0) or at
 * its pick (1) */
static int set_all(refiner *f, int arg, int which) {
  (void)arg;
  return use_all(f, !which);
}

ct_status mbench_refine(const bench_opts *o, const model *m, const mbench_refine_opts *ro,
                        mbench_refined *out, ct_err *err) {
  ct_status st = CT_OK;
  memset(out, 0, sizeof *out);
  if (ro->candidates < 2 || ro->candidates > MBENCH_REFINE_MAX || ro->pairs < 1 || ro->pairs > 16 ||
      ro->passes < 1 || !(ro->within >= 1) || !(ro->min_gain_us >= 0))
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "mbench_refine: candidates %d (2..%d), pairs %d (1..16), passes %d (>= 1), "
                   "within %g (>= 1), min_gain_us %g (>= 0)",
                   ro->candidates, MBENCH_REFINE_MAX, ro->pairs, ro->passes, ro->within,
                   ro->min_gain_us);
  const double t0 = mono_s();
  bench_opts bo = *o;
  bo.convtune_only = 1;
  bo.streams = 1;
  bo.arena = 0;
  bo.in_chain = 0;
  mbench_result r;
  memset(&r, 0, sizeof r);
  mrun R = {.o = &bo, .m = m, .r = &r};
  refiner f = {.R = &R, .ro = ro};
  db *d = NULL;
  bench_peaks none = {0};
  if ((st = mbench_plan(m, &none, NULL, &r, err))) goto done;
  if ((st = bench_env_open(&bo, &R.e, &r.head, err))) goto done;
  rng_seed(&R.rng, bo.seed);
  if (!(R.rt = calloc((size_t)(m->n_convs ? m->n_convs : 1), sizeof *R.rt)) ||
      !(f.w = calloc((size_t)(r.n_nodes ? r.n_nodes : 1), sizeof *f.w)) ||
      !(f.node_w = malloc(sizeof *f.node_w * (size_t)(r.n_nodes ? r.n_nodes : 1)))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  if ((st = wire_chain(&R, err))) goto done;
  if (!r.n_run) {
    st = ERR_SET(err, CT_ERR_UNSUPPORTED, "no node of the model runs: no chain to refine");
    goto done;
  }
  /* the unique workloads, in graph order, and their candidates */
  db_device dev;
  memset(&dev, 0, sizeof dev);
  snprintf(dev.name, sizeof dev.name, "%s", R.e.dev.name);
  dev.cc_major = R.e.dev.arch.cc_major;
  dev.cc_minor = R.e.dev.arch.cc_minor;
  snprintf(out->device, sizeof out->device, "%s", dev.name);
  out->cc_major = dev.cc_major;
  out->cc_minor = dev.cc_minor;
  if ((st = db_open(bo.db_path, 1, &d, err))) goto done;
  for (int i = 0; i < r.n_nodes; i++) {
    f.node_w[i] = -1;
    if (!r.nodes[i].runs) continue;
    int wi = 0;
    while (wi < f.n_w && memcmp(&f.w[wi].w, &R.rt[i].lw, sizeof R.rt[i].lw)) wi++;
    if (wi == f.n_w) {
      f.w[f.n_w++].w = R.rt[i].lw;
      if ((st = list_candidates(d, &dev, ro, &f.w[wi], err))) goto done;
    }
    f.node_w[i] = wi;
  }
  db_close(d);
  d = NULL;
  if (!(out->keys = calloc((size_t)f.n_w, sizeof *out->keys)) ||
      !(out->picks = calloc((size_t)f.n_w, sizeof *out->picks))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  out->n_keys = f.n_w;
  for (int wi = 0; wi < f.n_w; wi++) workload_key(&f.w[wi].w, out->keys[wi], CT_KEY_MAX);
  /* everything at its fastest, and a run of that chain */
  use_all(&f, 1);
  {
    int failed = -1;
    if ((st = run_once(&R, &failed, err))) goto done;
  }
  for (int pass = 0; pass < ro->passes; pass++)
    for (int wi = 0; wi < f.n_w; wi++) {
      rwork *w = &f.w[wi];
      for (int j = 0; j < w->n; j++) {
        if (j == w->cur || w->pinned[j] == 2) continue;
        if (ro->budget_s > 0 && mono_s() - t0 > ro->budget_s) goto compared;
        if (!use_candidate(&f, wi, j)) {
          use_candidate(&f, wi, w->cur);
          continue;
        }
        int failed = -1;
        ct_err e = {0};
        if (run_once(&R, &failed, &e) != CT_OK) {
          rlog(&f, "%s, candidate %d: %s", out->keys[wi], j, e.msg);
          w->pinned[j] = 2;
          use_candidate(&f, wi, w->cur);
          if ((st = bench_still_healthy(err))) goto done;
          continue;
        }
        double gain = paired_gain(&f, ro->pairs, set_candidate, wi << 8 | j, NULL, NULL);
        out->n_compared++;
        const trial *c = &w->all[w->c[j]], *inc = &w->all[w->c[w->cur]];
        int take = gain == gain && gain < -ro->min_gain_us;
        rlog(&f, "%s: %s %.2f us alone against %.2f: %+.2f us in the chain%s", out->keys[wi],
             c->template_name, c->median_us, inc->median_us, gain, take ? ", taken" : "");
        if (take) w->cur = j;
        use_candidate(&f, wi, w->cur);
        if ((st = bench_still_healthy(err))) goto done;
      }
    }
compared:
  /* the picks against every workload's fastest, alternated */
  {
    int any = 0;
    for (int wi = 0; wi < f.n_w; wi++) any |= f.w[wi].cur > 0;
    double gain = 0, base = BENCH_NONE, picked = BENCH_NONE;
    if (any)
      gain = paired_gain(&f, 2 * ro->pairs + 1, set_all, 0, &base, &picked);
    else {
      use_all(&f, 1);
      base = picked = chain_us(&f);
    }
    out->base_us = base;
    out->chain_us = picked;
    if (any && !(gain < -ro->min_gain_us)) {
      rlog(&f, "the picks together: %+.2f us in the chain: none kept", gain);
      for (int wi = 0; wi < f.n_w; wi++)
        if (f.w[wi].n) f.w[wi].cur = 0;
      out->chain_us = base;
    }
  }
  for (int wi = 0; wi < f.n_w; wi++) {
    const rwork *w = &f.w[wi];
    if (w->cur <= 0) continue;
    mbench_pick *p = &out->picks[out->n_picks++];
    const trial *c = &w->all[w->c[w->cur]];
    snprintf(p->key, sizeof p->key, "%s", out->keys[wi]);
    snprintf(p->uid, sizeof p->uid, "%s", c->uid);
    snprintf(p->template_name, sizeof p->template_name, "%s", c->template_name);
    p->alone_us = c->median_us;
    p->fastest_us = w->all[w->c[0]].median_us;
  }
done:
  out->wall_s = mono_s() - t0;
  db_close(d);
  if (R.rt) {
    /* the nodes back on the run's context before the others close */
    for (int i = 0; i < m->n_convs; i++) R.rt[i].ctx = R.e.ctx;
    free_tensors(&R);
    for (int i = 0; i < m->n_convs; i++) node_free(&R.rt[i]);
    free(R.rt);
  }
  for (int j = 0; j < MBENCH_REFINE_MAX; j++) ct_close(f.ctx[j]);
  for (int wi = 0; f.w && wi < f.n_w; wi++) trials_free(f.w[wi].all, f.w[wi].n_all);
  free(f.w);
  free(f.node_w);
  bench_env_close(&R.e);
  mbench_result_free(&r);
  if (st) mbench_refined_free(out);
  return st;
}
