/*
 * cmd_workload.c: `convtune workload`: print each selected workload's name,
 * key, output shape and operation count, as a table or JSON; with --model,
 * the model's conv nodes (workload, fused ops, input, whether convtune runs
 * it and why not), its unique workloads with how often each occurs, and
 * the totals. A fused pair (a 1x1 conv run inside the conv it feeds) shows
 * as the fused conv's "pre: NAME (1x1)" and the absorbed conv's status.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/model.h"

static const char usage[] =
    "usage: convtune workload [options] [KEY | '{JSON}' | '[JSON, ...]']\n"
    "Print each workload's name, canonical key, output shape (in its layout) and\n"
    "operation count (2 x multiply-adds). With --model m.onnx: the model's conv\n"
    "nodes (workload, fused ops, input, supported or why not), then its unique\n"
    "workloads with how often each occurs. With --fuse, a 1x1 conv fused into the\n"
    "conv it feeds (fused: pre: NAME) is listed as fused into that conv, not as a\n"
    "node of its own.\n"
    "\n"
    "Options:\n"
    "  --json                 print JSON instead of a table\n"
    "  -v, -q                 more or less detail on errors\n"
    "  -h, --help             this text\n"
    "\n";

/* Print doc (NULL: out of memory) as JSON on stdout and free it. */
static int print_doc(cJSON *doc) {
  char *text = doc ? cJSON_Print(doc) : NULL;
  cJSON_Delete(doc);
  if (!text) {
    fprintf(stderr, "convtune: out of memory\n");
    return EXIT_FAIL;
  }
  puts(text);
  free(text);
  return EXIT_OK;
}

static int print_json(const wlset *s) {
  cJSON *list = cJSON_CreateArray();
  for (int i = 0; list && i < s->n_items; i++) {
    const ct_workload *w = &s->items[i].w;
    char key[CT_KEY_MAX];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(list, o);
    cJSON_AddStringToObject(o, "name", s->items[i].name);
    cJSON_AddStringToObject(o, "key", workload_key(w, key, sizeof key));
    cJSON_AddItemToObject(o, "workload", workload_to_json(w));
    /* the same dimensions as the table's "output" column, in w's layout */
    cJSON *shape = cJSON_AddArrayToObject(o, "out_shape");
    int64_t dims[CT_MAX_SPATIAL + 3];
    int n_dims = workload_out_dims(w, dims);
    for (int d = 0; d < n_dims; d++)
      cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)dims[d]));
    cJSON_AddNumberToObject(o, "ops", (double)workload_ops(w));
  }
  return print_doc(list);
}

static void print_table(const wlset *s) {
  int name_w = 4, key_w = 3;
  char key[CT_KEY_MAX], shape[64];
  for (int i = 0; i < s->n_items; i++) {
    int n = (int)strlen(s->items[i].name);
    int k = (int)strlen(workload_key(&s->items[i].w, key, sizeof key));
    name_w = n > name_w ? n : name_w;
    key_w = k > key_w ? k : key_w;
  }
  printf("%-*s  %-*s  %-18s %10s\n", name_w, "name", key_w, "key", "output", "GOP");
  double total = 0;
  for (int i = 0; i < s->n_items; i++) {
    const ct_workload *w = &s->items[i].w;
    double gop = (double)workload_ops(w) / 1e9;
    total += gop;
    printf("%-*s  %-*s  %-18s %10.3f\n", name_w, s->items[i].name, key_w,
           workload_key(w, key, sizeof key), workload_out_shape(w, shape, sizeof shape), gop);
  }
  if (s->n_items > 1) printf("%-*s  %-*s  %-18s %10.3f\n", name_w, "total", key_w, "", "", total);
}

/* How many of s's workloads differ in their shapes alone (op, sizes,
 * layout), not in dtypes or epilogue: a block-closing conv with a residual
 * and a downsample of the same shape are two workloads of one shape. */
static int count_shapes(const wlset *s) {
  int n = 0;
  for (int i = 0; i < s->n_items; i++) {
    ct_workload a = s->items[i].w;
    int seen = 0;
    memset(&a.epi, 0, sizeof a.epi);
    a.data_type = a.out_type = CT_DTYPE_INT8;
    for (int j = 0; j < i && !seen; j++) {
      ct_workload b = s->items[j].w;
      memset(&b.epi, 0, sizeof b.epi);
      b.data_type = b.out_type = CT_DTYPE_INT8;
      char ka[CT_KEY_MAX], kb[CT_KEY_MAX];
      seen = !strcmp(workload_key(&a, ka, sizeof ka), workload_key(&b, kb, sizeof kb));
    }
    n += !seen;
  }
  return n;
}

/* A column's width: the longest of its values and its title. */
static int width(int w, const char *s) {
  int n = (int)strlen(s);
  return n > w ? n : w;
}

/* What feeds conv c: its input, with its residual after a '+'. */
static void inputs_of(const model_conv *c, char *buf, size_t size) {
  snprintf(buf, size, "%s%s%s", c->input_from ? c->input_from : "?", c->residual_from ? " + " : "",
           c->residual_from ? c->residual_from : "");
}

/* Conv i's status column: "ok", "fused into B" (absorbed: runs inside B),
 * or "unsupported: why". */
static void status_of(const model *m, int i, char *buf, size_t size) {
  const model_conv *c = &m->convs[i];
  int b = model_absorbed_by(m, i);
  if (!c->supported)
    snprintf(buf, size, "unsupported: %s", c->why ? c->why : "?");
  else if (b >= 0)
    snprintf(buf, size, "fused into %s", m->convs[b].name);
  else
    snprintf(buf, size, "ok");
}

static void print_model_table(const model *m, const wlset *s, const int *counts) {
  char key[CT_KEY_MAX], in[512], status[CT_ERRMSG_MAX + 64];
  int name_w = 4, key_w = 8, fused_w = 5, in_w = 5, n_unsup = 0;
  for (int i = 0; i < m->n_convs; i++) {
    const model_conv *c = &m->convs[i];
    name_w = width(name_w, c->name);
    key_w = width(key_w, c->supported ? workload_key(&c->w, key, sizeof key) : "-");
    fused_w = width(fused_w, *c->fused ? c->fused : "-");
    inputs_of(c, in, sizeof in);
    in_w = width(in_w, in);
  }
  printf("model %s: %s, batch %d\n", m->path, model_form_name(m->form), m->batch);
  printf("%-*s  %-*s  %-*s  %-*s  %s\n", name_w, "node", key_w, "workload", fused_w, "fused", in_w,
         "input", "status");
  for (int i = 0; i < m->n_convs; i++) {
    const model_conv *c = &m->convs[i];
    inputs_of(c, in, sizeof in);
    n_unsup += !c->supported;
    status_of(m, i, status, sizeof status);
    printf("%-*s  %-*s  %-*s  %-*s  %s\n", name_w, c->name, key_w,
           c->supported ? workload_key(&c->w, key, sizeof key) : "-", fused_w,
           *c->fused ? c->fused : "-", in_w, in, status);
  }
  if (s->n_items) {
    int item_w = 4;
    for (int i = 0; i < s->n_items; i++) item_w = width(item_w, s->items[i].name);
    printf("\nunique workloads\n%5s  %-*s  %s\n", "count", item_w, "name", "workload");
    for (int i = 0; i < s->n_items; i++)
      printf("%5d  %-*s  %s\n", counts[i], item_w, s->items[i].name,
             workload_key(&s->items[i].w, key, sizeof key));
  }
  int shapes = count_shapes(s), n_fused = model_n_fused(m);
  printf("\n%d conv node%s, %d unique workload%s (%d shape%s), %d unsupported", m->n_convs,
         m->n_convs == 1 ? "" : "s", s->n_items, s->n_items == 1 ? "" : "s", shapes,
         shapes == 1 ? "" : "s", n_unsup);
  if (n_fused)
    printf(", %d convs fused into %d node%s (a 1x1 conv inside the conv it feeds)", 2 * n_fused,
           n_fused, n_fused == 1 ? "" : "s");
  putchar('\n');
}

static int print_model_json(const model *m, const wlset *s, const int *counts) {
  char key[CT_KEY_MAX];
  int n_unsup = 0;
  cJSON *o = cJSON_CreateObject(), *convs = cJSON_CreateArray(), *wls = cJSON_CreateArray();
  if (!o || !convs || !wls) {
    cJSON_Delete(o);
    cJSON_Delete(convs);
    cJSON_Delete(wls);
    fprintf(stderr, "convtune: out of memory\n");
    return EXIT_FAIL;
  }
  cJSON_AddStringToObject(o, "model", m->path);
  cJSON_AddStringToObject(o, "form", model_form_name(m->form));
  cJSON_AddNumberToObject(o, "batch", m->batch);
  cJSON_AddItemToObject(o, "convs", convs);
  for (int i = 0; i < m->n_convs; i++) {
    const model_conv *c = &m->convs[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToArray(convs, j);
    n_unsup += !c->supported;
    cJSON_AddStringToObject(j, "name", c->name);
    cJSON_AddStringToObject(j, "op_type", c->op_type);
    if (c->supported) {
      cJSON_AddStringToObject(j, "key", workload_key(&c->w, key, sizeof key));
      cJSON_AddItemToObject(j, "workload", workload_to_json(&c->w));
    }
    cJSON_AddStringToObject(j, "fused", c->fused);
    cJSON_AddBoolToObject(j, "supported", c->supported);
    if (!c->supported) cJSON_AddStringToObject(j, "why", c->why);
    cJSON_AddStringToObject(j, "input", c->input_from ? c->input_from : "?");
    if (c->input_conv >= 0) cJSON_AddNumberToObject(j, "input_conv", c->input_conv);
    /* a fused pair: the conv run inside this one, or the one this runs inside */
    int pre = model_pre_of(m, i), into = model_absorbed_by(m, i);
    if (pre >= 0) {
      cJSON_AddNumberToObject(j, "pre_conv", pre);
      cJSON_AddStringToObject(j, "pre", m->convs[pre].name);
    }
    if (into >= 0) {
      cJSON_AddNumberToObject(j, "fused_into_conv", into);
      cJSON_AddStringToObject(j, "fused_into", m->convs[into].name);
    }
    if (c->residual_from) cJSON_AddStringToObject(j, "residual", c->residual_from);
    if (c->residual_conv >= 0) cJSON_AddNumberToObject(j, "residual_conv", c->residual_conv);
    /* the graph's tensor names, to match the convs to a run of the graph */
    cJSON *t = cJSON_AddObjectToObject(j, "tensors");
    cJSON_AddStringToObject(t, "data", c->data_tensor);
    cJSON_AddStringToObject(t, "out", c->out_tensor);
    if (c->residual_tensor) cJSON_AddStringToObject(t, "residual", c->residual_tensor);
  }
  cJSON_AddItemToObject(o, "workloads", wls);
  for (int i = 0; i < s->n_items; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToArray(wls, j);
    cJSON_AddStringToObject(j, "name", s->items[i].name);
    cJSON_AddStringToObject(j, "key", workload_key(&s->items[i].w, key, sizeof key));
    cJSON_AddNumberToObject(j, "count", counts[i]);
    cJSON_AddItemToObject(j, "workload", workload_to_json(&s->items[i].w));
  }
  cJSON_AddNumberToObject(o, "conv_nodes", m->n_convs);
  cJSON_AddNumberToObject(o, "unique_workloads", s->n_items);
  cJSON_AddNumberToObject(o, "unique_shapes", count_shapes(s));
  cJSON_AddNumberToObject(o, "unsupported", n_unsup);
  /* the fused nodes, each running two of the model's convs */
  cJSON_AddNumberToObject(o, "fused_nodes", model_n_fused(m));
  cJSON_AddNumberToObject(o, "fused_convs", 2 * model_n_fused(m));
  return print_doc(o);
}

/* `convtune workload --model FILE`. */
static int show_model(const cli_common *cc, const cli_wl *sel, int json) {
  ct_err err = {0};
  model *m = NULL;
  wlset *s = NULL;
  int *counts = NULL, rc = EXIT_OK;
  if (cli_wl_model(sel, &m, &err) || model_workloads(m, &s, &counts, &err))
    rc = cli_fail(cc, &err);
  else if (json)
    rc = print_model_json(m, s, counts);
  else
    print_model_table(m, s, counts);
  wlset_free(s);
  free(counts);
  model_free(m);
  return rc;
}

int cmd_workload(int argc, char **argv) {
  enum { O_JSON = 1, O_HELP };
  struct option opts[32] = {{"json", no_argument, 0, O_JSON}, {"help", no_argument, 0, 'h'}};
  int n_opts = 2;
  for (const struct option *o = cli_wl_options; o->name; o++) opts[n_opts++] = *o;
  cli_common cc = {0};
  cli_wl sel = {0};
  int json = 0, opt, rc = EXIT_OK;
  optind = 1;
  opterr = 0;
  while ((opt = cli_getopt("workload", argc, argv, opts)) != -1) {
    if (cli_wl_option(&sel, opt, optarg)) continue;
    switch (opt) {
    case O_JSON:
      json = 1;
      break;
    default: {
      int code = cli_common_option("workload", opt, argv, usage, &cc);
      if (code != CLI_GO_ON) {
        cli_wl_free(&sel);
        return code;
      }
    }
    }
  }
  if (cli_positional("workload", argc, argv, &sel) != CLI_GO_ON) {
    cli_wl_free(&sel);
    return EXIT_USAGE;
  }
  if (!sel.positional && !sel.file && !sel.set && !sel.flags && !sel.model) {
    cli_wl_free(&sel);
    return cli_usage_error("workload", "no workload given");
  }
  if (sel.model) {
    rc = show_model(&cc, &sel, json);
    cli_wl_free(&sel);
    return rc;
  }
  ct_err err = {0};
  wlset *s = NULL;
  if (cli_wl_load(&sel, NULL, &s, &err)) {
    rc = cli_fail(&cc, &err);
  } else if (json) {
    rc = print_json(s);
  } else {
    print_table(s);
  }
  wlset_free(s);
  cli_wl_free(&sel);
  return rc;
}
