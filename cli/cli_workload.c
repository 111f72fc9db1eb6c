/*
 * cli_workload.c: selecting workloads on the command line, and the error
 * printing every command shares.
 *
 * Flags are turned into a workload JSON object and parsed by the same
 * workload_from_json as files, so that one parser checks every input and its
 * messages name the same fields ("--kernel 3x3" becomes "kernel": [3, 3]).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/json.h"
#include "model/model.h"
#include "templates/template.h"

int cli_fail(const cli_common *cc, const ct_err *err) {
  if (cc && cc->verbose > 0 && err->file)
    fprintf(stderr, "convtune: %s [%s, %s:%d]\n", err->msg, ct_status_name(err->status), err->file,
            err->line);
  else
    fprintf(stderr, "convtune: %s\n", err->msg);
  return err->status ? cli_exit_code(err->status) : EXIT_FAIL;
}

int cli_exit_code(ct_status st) {
  switch (st) {
  case CT_OK:
    return EXIT_OK;
  case CT_ERR_INVALID_ARG:
  case CT_ERR_INVALID_WORKLOAD:
  case CT_ERR_PARSE:
  case CT_ERR_NOT_FOUND:
  case CT_ERR_UNSUPPORTED:
    return EXIT_USAGE;
  default:
    return EXIT_FAIL;
  }
}

const char *cli_quote(const char *text) {
  static char bufs[4][CT_EXCERPT_MAX];
  static unsigned next;
  char *b = bufs[next++ % 4];
  return err_excerpt(b, CT_EXCERPT_MAX, text);
}

const char *cli_path(const char *path) {
  static char bufs[4][4 * CLI_PATH_BYTES + 4];
  static unsigned next;
  char *b = bufs[next++ % 4];
  return err_escape(b, sizeof bufs[0], path, CLI_PATH_BYTES);
}

/* The message is formatted first and written by one fprintf (one write on
 * unbuffered stderr): written piecewise, a line could be split by another
 * writer to the same stream, as mpirun's banner did under test_mpi. A
 * message of any length (it may quote an argument) is kept whole. */
int cli_usage_error(const char *cmd, const char *fmt, ...) {
  char small[512], *msg = small;
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  const int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1)) != NULL)
    vsnprintf(msg, (size_t)n + 1, fmt, again);
  else if (n >= (int)sizeof small)
    msg = small; /* out of memory: the message cut at its first 511 bytes */
  va_end(again);
  va_end(ap);
  fprintf(stderr, "convtune %s: %s (see 'convtune %s --help')\n", cmd, n < 0 ? fmt : msg, cmd);
  if (msg != small) free(msg);
  return EXIT_USAGE;
}

int cli_common_option(const char *cmd, int opt, char **argv, const char *usage, cli_common *cc) {
  switch (opt) {
  case 'h': {
    char names[256];
    fputs(usage, stdout);
    printf(cli_wl_help, wlset_names(names, sizeof names));
    return EXIT_OK;
  }
  case 'v':
    cc->verbose = 1;
    return CLI_GO_ON;
  case 'q':
    cc->verbose = -1;
    return CLI_GO_ON;
  case ':':
    return cli_usage_error(cmd, "%s needs a value", argv[optind - 1]);
  case CLI_OPT_BAD:
    return EXIT_USAGE;
  default:
    /* an unknown short option in a group (-vx) leaves optind where it was:
     * name the letter, not the argument before it */
    if (optopt) return cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return cli_usage_error(cmd, "unknown option '%s'", cli_quote(argv[optind - 1]));
  }
}

int cli_getopt(const char *cmd, int argc, char **argv, const struct option *opts) {
  int idx = -1;
  int opt = getopt_long(argc, argv, ":hvq", opts, &idx);
  if (opt == -1 || idx < 0) return opt;
  /* the argument as typed: the one before optind, or the one before its
   * value when the value came as the next argument */
  const char *typed = argv[optind - 1];
  if (opts[idx].has_arg != no_argument && optarg == argv[optind - 1] && optind >= 2)
    typed = argv[optind - 2];
  size_t len = strcspn(typed + 2, "=");
  if (strncmp(typed, "--", 2) || len != strlen(opts[idx].name) ||
      strncmp(typed + 2, opts[idx].name, len)) {
    cli_usage_error(cmd, "unknown option '%.*s' (flags are spelled in full)", (int)(len + 2),
                    typed);
    return CLI_OPT_BAD;
  }
  return opt;
}

int cli_positional(const char *cmd, int argc, char **argv, cli_wl *sel) {
  if (optind < argc) sel->positional = argv[optind++];
  if (optind < argc)
    return cli_usage_error(cmd, "unexpected argument '%s'", cli_quote(argv[optind]));
  return CLI_GO_ON;
}

int cli_parse_long(const char *cmd, const char *flag, const char *arg, long lo, long hi,
                   long *out) {
  char *end;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno || *end || !*arg || v < lo || v > hi) {
    cli_usage_error(cmd, "--%s: expected an integer from %ld to %ld, got '%s'", flag, lo, hi,
                    cli_quote(arg));
    return 0;
  }
  *out = v;
  return 1;
}

enum {
  O_OP = CLI_WL_OPT_BASE,
  O_C,
  O_K,
  O_SIZE,
  O_KERNEL,
  O_STRIDE,
  O_PAD,
  O_DILATION,
  O_GROUPS,
  O_LAYOUT,
  O_FILE,
  O_SET,
  O_BATCH,
  O_DATA,
  O_OUT,
  O_EPILOGUE,
  O_MODEL,
  O_FUSE,
};

const struct option cli_wl_options[] = {
    {"op", required_argument, 0, O_OP},
    {"c", required_argument, 0, O_C},
    {"k", required_argument, 0, O_K},
    {"size", required_argument, 0, O_SIZE},
    {"kernel", required_argument, 0, O_KERNEL},
    {"stride", required_argument, 0, O_STRIDE},
    {"pad", required_argument, 0, O_PAD},
    {"dilation", required_argument, 0, O_DILATION},
    {"groups", required_argument, 0, O_GROUPS},
    {"layout", required_argument, 0, O_LAYOUT},
    {"file", required_argument, 0, O_FILE},
    {"set", required_argument, 0, O_SET},
    {"batch", required_argument, 0, O_BATCH},
    {"data", required_argument, 0, O_DATA},
    {"out", required_argument, 0, O_OUT},
    {"epilogue", required_argument, 0, O_EPILOGUE},
    {"model", required_argument, 0, O_MODEL},
    {"fuse", optional_argument, 0, O_FUSE},
    {0, 0, 0, 0},
};

const char cli_wl_help[] =
    "Workload selection (one of):\n"
    "  KEY                    a canonical key, e.g.\n"
    "                         conv2d-nchw4c-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1\n"
    "  '{JSON}'               a workload object, e.g. "
    "'{\"op\":\"conv2d\",\"c\":64,\"h\":56,\"w\":56,\n"
    "                         \"k\":64,\"kernel\":3,\"pad\":1}'\n"
    "  '[JSON, ...]'          a list of workload objects, as in a --file\n"
    "  flags                  --c C --k K --size [Dx]HxW --kernel R[xS[xT]] [--stride S]\n"
    "                         [--pad P | --pad BEFORE.AFTER (e.g. 1x1.2x2)] [--dilation D]\n"
    "                         [--layout nchw|nchw4c|nhwc, conv3d: ncdhw|ncdhw4c|ndhwc]\n"
    "                         [--op conv2d|conv3d] [--groups G]; sizes take one value or\n"
    "                         one per dimension\n"
    "  --file FILE            a JSON list of named workloads\n"
    "  --set NAME             a shipped set: %s\n"
    "  --model FILE           an ONNX model's convolutions (QDQ, QLinearConv, ConvInteger\n"
    "                         or float Conv), each unique workload once, with the epilogue\n"
    "                         its graph implies; --batch N gives a symbolic batch its size\n"
    "  --fuse[=auto|all]      with --model: a 1x1 conv whose output only the next conv\n"
    "                         reads (an inverted residual block's expansion) may run fused\n"
    "                         into it, where a template runs the pair. tune tunes each\n"
    "                         such pair both ways (fused, and its two convs apart); bench\n"
    "                         fuses the pairs whose records predict a gain in the chain\n"
    "                         (auto, the default) or every pair (all); workload lists\n"
    "                         every pair fused (default: every conv apart)\n"
    "  --batch N              the batch size of every selected workload\n"
    "Quantization, applied to every selected workload:\n"
    "  --data int8|uint8      the data type\n"
    "  --out int32|int8|uint8 the output: raw accumulators, or requantized\n"
    "  --epilogue LIST        comma-separated, the key's segments: zd (data zero point),\n"
    "                         zw (weight zero points), bias, qc (per-channel scale), res\n"
    "                         (residual), d2sBdcr / d2sBcrd (depth_to_space, block B),\n"
    "                         onnx (ONNX Runtime's float rounding, 8-bit output); 'none'\n"
    "                         clears them\n";

/* A strict positive decimal int, or -1. */
static int parse_int(const char *s, int lo) {
  if (!s || !*s) return -1;
  errno = 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > INT_MAX) return -1;
  return (int)v;
}

/* "AxBxC" into a JSON list (one element stays a number: all dimensions). */
static cJSON *parse_dims(const char *s, int lo) {
  char buf[128];
  if (!s || strlen(s) >= sizeof buf) return NULL;
  strcpy(buf, s);
  cJSON *list = cJSON_CreateArray();
  char *save = NULL;
  int count = 0;
  for (char *t = strtok_r(buf, "x", &save); t; t = strtok_r(NULL, "x", &save), count++) {
    int v = parse_int(t, lo);
    if (v < 0) {
      cJSON_Delete(list);
      return NULL;
    }
    cJSON_AddItemToArray(list, cJSON_CreateNumber(v));
  }
  if (count == 0 || s[strlen(s) - 1] == 'x' || s[0] == 'x' || strstr(s, "xx")) {
    cJSON_Delete(list);
    return NULL;
  }
  if (count == 1) {
    cJSON *one = cJSON_Duplicate(cJSON_GetArrayItem(list, 0), 0);
    cJSON_Delete(list);
    return one;
  }
  return list;
}

static void flag_error(cli_wl *s, const char *flag, const char *arg, const char *want) {
  if (s->err) return;
  char quoted[CT_EXCERPT_MAX];
  snprintf(s->errbuf, sizeof s->errbuf, "--%s: expected %s, got '%s'", flag, want,
           err_excerpt(quoted, sizeof quoted, arg));
  s->err = s->errbuf;
}

static void set_flag(cli_wl *s, const char *field, cJSON *v) {
  if (!s->flags) s->flags = cJSON_CreateObject();
  cJSON_DeleteItemFromObjectCaseSensitive(s->flags, field);
  cJSON_AddItemToObject(s->flags, field, v);
}

int cli_wl_option(cli_wl *s, int opt, const char *arg) {
  const char *name = NULL;
  for (const struct option *o = cli_wl_options; o->name; o++)
    if (o->val == opt) name = o->name;
  if (!name) return 0;
  cJSON *v = NULL;
  int x;
  switch (opt) {
  case O_FILE:
    s->file = arg;
    return 1;
  case O_SET:
    s->set = arg;
    return 1;
  case O_MODEL:
    s->model = arg;
    return 1;
  case O_FUSE:
    if (!arg || !strcmp(arg, "auto"))
      s->fuse = CLI_FUSE_AUTO;
    else if (!strcmp(arg, "all"))
      s->fuse = CLI_FUSE_ALL;
    else
      flag_error(s, name, arg, "auto or all");
    return 1;
  case O_BATCH:
    if ((s->batch = parse_int(arg, 1)) < 0) flag_error(s, name, arg, "an integer of at least 1");
    return 1;
  case O_DATA:
    s->data_type = arg;
    return 1;
  case O_OUT:
    s->out_type = arg;
    return 1;
  case O_EPILOGUE:
    s->epilogue = arg;
    return 1;
  case O_LAYOUT:
    s->layout = arg;
    return 1;
  case O_OP:
    set_flag(s, "op", cJSON_CreateString(arg));
    return 1;
  case O_C:
  case O_K:
  case O_GROUPS:
    if ((x = parse_int(arg, 0)) < 0)
      flag_error(s, name, arg, "an integer");
    else
      set_flag(s, name, cJSON_CreateNumber(x));
    return 1;
  case O_SIZE:
    if (!(v = parse_dims(arg, 0))) return flag_error(s, name, arg, "HxW or DxHxW"), 1;
    if (!cJSON_IsArray(v) || (cJSON_GetArraySize(v) != 2 && cJSON_GetArraySize(v) != 3)) {
      cJSON_Delete(v);
      return flag_error(s, name, arg, "HxW or DxHxW"), 1;
    }
    {
      int nd = cJSON_GetArraySize(v);
      static const char *const dn[] = {"d", "h", "w"};
      for (int d = 0; d < nd; d++)
        set_flag(s, dn[3 - nd + d], cJSON_CreateNumber(cJSON_GetArrayItem(v, d)->valuedouble));
      if (!cJSON_GetObjectItemCaseSensitive(s->flags, "op"))
        set_flag(s, "op", cJSON_CreateString(nd == 3 ? "conv3d" : "conv2d"));
      cJSON_Delete(v);
    }
    return 1;
  case O_KERNEL:
  case O_STRIDE:
  case O_DILATION:
    if (!(v = parse_dims(arg, 0)))
      return flag_error(s, name, arg, "N, or one value per dimension such as 3x3"), 1;
    set_flag(s, name, v);
    return 1;
  case O_PAD: {
    char before[64], *after;
    if (strlen(arg) >= sizeof before) return flag_error(s, name, arg, "P, PxQ or PxQ.RxS"), 1;
    strcpy(before, arg);
    if ((after = strchr(before, '.'))) *after++ = '\0';
    cJSON *b = parse_dims(before, 0), *a = after ? parse_dims(after, 0) : NULL;
    if (!b || (after && (!a || cJSON_IsArray(a) != cJSON_IsArray(b) ||
                         cJSON_GetArraySize(a) != cJSON_GetArraySize(b)))) {
      cJSON_Delete(a);
      cJSON_Delete(b);
      return flag_error(s, name, arg, "P, PxQ, or BEFORE.AFTER such as 1x1.2x2"), 1;
    }
    if (a) {
      /* befores then afters, as the JSON form takes them */
      cJSON *list = cJSON_IsArray(b) ? b : NULL;
      if (!list) {
        list = cJSON_CreateArray();
        cJSON_AddItemToArray(list, b);
      }
      if (cJSON_IsArray(a)) {
        while (cJSON_GetArraySize(a)) cJSON_AddItemToArray(list, cJSON_DetachItemFromArray(a, 0));
        cJSON_Delete(a);
      } else {
        cJSON_AddItemToArray(list, a);
      }
      b = list;
    }
    set_flag(s, name, b);
    return 1;
  }
  }
  return 0;
}

void cli_wl_free(cli_wl *s) {
  cJSON_Delete(s->flags);
  s->flags = NULL;
  free(s->counts);
  s->counts = NULL;
  model_free(s->loaded);
  s->loaded = NULL;
}

static int dtype_of(const char *name, ct_dtype *t) {
  static const struct {
    const char *name;
    ct_dtype t;
  } types[] = {{"int8", CT_DTYPE_INT8}, {"uint8", CT_DTYPE_UINT8}, {"int32", CT_DTYPE_INT32}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(name, types[i].name)) {
      *t = types[i].t;
      return 1;
    }
  return 0;
}

/* Apply --layout to every item of set: the same convolution with its
 * tensors in that layout (a name of the item's op: nchw / nchw4c / nhwc,
 * ncdhw / ncdhw4c / ndhwc). */
static ct_status apply_layout(const cli_wl *s, wlset *set, ct_err *err) {
  static const ct_layout all[] = {CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C, CT_LAYOUT_NHWC};
  char layout[CT_EXCERPT_MAX], name[CT_EXCERPT_MAX];
  for (int i = 0; i < set->n_items; i++) {
    ct_workload *w = &set->items[i].w;
    int found = 0;
    for (int l = 0; l < 3 && !found; l++)
      if (strcmp(s->layout, workload_layout_name(all[l], w->op)) == 0) {
        w->layout = all[l];
        found = 1;
      }
    if (!found)
      return ERR_SET(err, CT_ERR_INVALID_ARG,
                     "--layout: '%s' is no layout of %s workload '%s' (%s, %s or %s)",
                     err_excerpt(layout, sizeof layout, s->layout),
                     w->op == CT_OP_CONV3D ? "conv3d" : "conv2d",
                     err_excerpt(name, sizeof name, set->items[i].name),
                     workload_layout_name(CT_LAYOUT_NCHW, w->op),
                     workload_layout_name(CT_LAYOUT_NCHW4C, w->op),
                     workload_layout_name(CT_LAYOUT_NHWC, w->op));
    ct_status st = workload_validate(w, err);
    if (st) {
      err_prefix(err, "workload '%s' in layout %s",
                 err_excerpt(name, sizeof name, set->items[i].name), s->layout);
      return st;
    }
  }
  return CT_OK;
}

/* Apply --data, --out and --epilogue to every item of set, each checked. */
static ct_status apply_quant(const cli_wl *s, wlset *set, ct_err *err) {
  ct_dtype data = CT_DTYPE_INT8, outt = CT_DTYPE_INT32;
  char quoted[CT_EXCERPT_MAX];
  if (s->data_type && (!dtype_of(s->data_type, &data) || data == CT_DTYPE_INT32))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "--data: expected int8 or uint8, got '%s'",
                   err_excerpt(quoted, sizeof quoted, s->data_type));
  if (s->out_type && !dtype_of(s->out_type, &outt))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "--out: expected int32, int8 or uint8, got '%s'",
                   err_excerpt(quoted, sizeof quoted, s->out_type));
  ct_epilogue e;
  ct_status st;
  if (s->epilogue && (st = workload_epilogue_parse(s->epilogue, &e, err))) {
    err_prefix(err, "--epilogue");
    return st;
  }
  for (int i = 0; i < set->n_items; i++) {
    ct_workload *w = &set->items[i].w;
    if (s->data_type) w->data_type = data;
    if (s->out_type) w->out_type = outt;
    if (s->epilogue) w->epi = e;
    if ((st = workload_validate(w, err))) {
      err_prefix(err, "workload '%s' with the quantization flags",
                 err_excerpt(quoted, sizeof quoted, set->items[i].name));
      return st;
    }
  }
  return CT_OK;
}

static ct_status load_selection(cli_wl *s, const char *dflt, wlset **out, ct_err *err);

/* --layout's name for either op ("nhwc" and "ndhwc" alike). */
static ct_status layout_of(const char *name, ct_layout *out, ct_err *err) {
  static const ct_layout all[] = {CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C, CT_LAYOUT_NHWC};
  for (int l = 0; l < 3; l++)
    if (!strcmp(name, workload_layout_name(all[l], CT_OP_CONV2D)) ||
        !strcmp(name, workload_layout_name(all[l], CT_OP_CONV3D))) {
      *out = all[l];
      return CT_OK;
    }
  char quoted[CT_EXCERPT_MAX];
  return ERR_SET(err, CT_ERR_INVALID_ARG,
                 "--layout: expected nchw, nchw4c or nhwc (for conv3d also ncdhw, ncdhw4c, "
                 "ndhwc), got '%s'",
                 err_excerpt(quoted, sizeof quoted, name));
}

/* model_opts.fuse_pre: fuse a pair where some template runs it, as tune
 * and the dispatch would pick one; with user (tune --template), where that
 * template does, so that a named template never gets pairs it refuses. */
static int fuse_if_supported(const ct_workload *w, void *user) {
  const template_desc *tpl = user;
  ct_workload tw;
  if (!tpl) return template_any_supports(w);
  return tpl->op == w->op && workload_for_layout(w, tpl->layout, &tw) && tpl->supports(&tw, NULL);
}

ct_status cli_wl_model(const cli_wl *s, struct model **out, ct_err *err) {
  *out = NULL;
  if (s->err) return ERR_SET(err, CT_ERR_INVALID_ARG, "%s", s->err);
  if (!s->model) return ERR_SET(err, CT_ERR_INVALID_ARG, "no --model given");
  int others = !!s->positional + !!s->file + !!s->set + !!s->flags;
  if (others)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "give one workload source: --model, a key, a JSON object, workload flags, "
                   "--file or --set (got --model and %d more)",
                   others);
  model_opts o;
  model_opts_default(&o);
  o.batch = s->batch;
  ct_status st;
  char quoted[CT_EXCERPT_MAX];
  if (s->layout && (st = layout_of(s->layout, &o.layout, err))) return st;
  if (s->data_type && (!dtype_of(s->data_type, &o.float_data) || o.float_data == CT_DTYPE_INT32))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "--data: expected int8 or uint8, got '%s'",
                   err_excerpt(quoted, sizeof quoted, s->data_type));
  if (s->out_type && !dtype_of(s->out_type, &o.float_out))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "--out: expected int32, int8 or uint8, got '%s'",
                   err_excerpt(quoted, sizeof quoted, s->out_type));
  o.float_epilogue = s->epilogue;
  if (s->fuse && s->fuse_hook) {
    o.fuse_pre = s->fuse_hook;
    o.fuse_user = s->fuse_user;
  } else if (s->fuse) {
    o.fuse_pre = fuse_if_supported;
    o.fuse_user = s->fuse_template ? (void *)template_find(s->fuse_template) : NULL;
  }
  if ((st = model_load(s->model, &o, out, err))) return st;
  if ((*out)->form != MODEL_FLOAT && (s->data_type || s->out_type || s->epilogue)) {
    st = ERR_SET(err, CT_ERR_INVALID_ARG,
                 "--data, --out and --epilogue apply to float models only: %s is a %s model, "
                 "whose types and epilogues come from its graph",
                 err_excerpt(quoted, sizeof quoted, s->model), model_form_name((*out)->form));
    model_free(*out);
    *out = NULL;
  }
  return st;
}

/* tune --fuse: the model's workloads apart appended to set (its fused
 * ones, counts in s->counts) where set lacks them: each fused pair's two
 * convs, so that both ways get records. Their counts are the apart
 * model's. */
static ct_status add_apart(cli_wl *s, wlset *set, ct_err *err) {
  cli_wl a = *s;
  a.fuse = 0;
  a.counts = NULL;
  model *m;
  wlset *ap = NULL;
  int *counts = NULL;
  ct_status st = cli_wl_model(&a, &m, err);
  if (st) return st;
  st = model_workloads(m, &ap, &counts, err);
  model_free(m);
  if (st) return st;
  int n = set->n_items;
  wlset_item *items = realloc(set->items, ((size_t)n + (size_t)ap->n_items) * sizeof *items);
  int *cn = realloc(s->counts, ((size_t)n + (size_t)ap->n_items) * sizeof *cn);
  if (items) set->items = items;
  if (cn) s->counts = cn;
  if (!items || !cn) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < ap->n_items; i++) {
    char key[CT_KEY_MAX], other[CT_KEY_MAX];
    workload_key(&ap->items[i].w, key, sizeof key);
    int j = 0;
    while (j < n && (workload_key(&set->items[j].w, other, sizeof other), strcmp(key, other))) j++;
    if (j < n) continue;
    set->items[set->n_items] = ap->items[i]; /* the name moves */
    ap->items[i].name = NULL;
    s->counts[set->n_items++] = counts[i];
  }
done:
  wlset_free(ap);
  free(counts);
  return st;
}

/* --model's unique supported workloads, with their counts in s->counts. */
static ct_status load_model(cli_wl *s, wlset **out, ct_err *err) {
  model *m;
  ct_status st = cli_wl_model(s, &m, err);
  if (st) return st;
  free(s->counts);
  s->counts = NULL;
  s->n_fused = model_n_fused(m);
  st = model_workloads(m, out, &s->counts, err);
  if (!st && s->fuse && s->fuse_both && s->n_fused > 0) st = add_apart(s, *out, err);
  if (!st && (*out)->n_items == 0) {
    char where[CT_EXCERPT_MAX], node[CT_EXCERPT_MAX];
    err_excerpt(where, sizeof where, s->model);
    int i = 0;
    while (i < m->n_convs && m->convs[i].supported) i++;
    if (m->n_convs == 0)
      st = ERR_SET(err, CT_ERR_UNSUPPORTED, "%s: the model has no convolution", where);
    else
      st = ERR_SET(err, CT_ERR_UNSUPPORTED,
                   "%s: none of its %d convolutions can run (node '%s': %s)", where, m->n_convs,
                   err_excerpt(node, sizeof node, m->convs[i].name), m->convs[i].why);
    wlset_free(*out);
    *out = NULL;
  }
  if (!st && s->keep_model) {
    model_free(s->loaded);
    s->loaded = m;
  } else {
    model_free(m);
  }
  return st;
}

ct_status cli_wl_load(cli_wl *s, const char *dflt, wlset **out, ct_err *err) {
  if (s->model) return load_model(s, out, err);
  ct_status st = load_selection(s, dflt, out, err);
  if (!st && s->layout && (st = apply_layout(s, *out, err))) {
    wlset_free(*out);
    *out = NULL;
  }
  if (st || (!s->data_type && !s->out_type && !s->epilogue)) return st;
  if ((st = apply_quant(s, *out, err))) {
    wlset_free(*out);
    *out = NULL;
  }
  return st;
}

static ct_status load_selection(cli_wl *s, const char *dflt, wlset **out, ct_err *err) {
  if (s->err) return ERR_SET(err, CT_ERR_INVALID_ARG, "%s", s->err);
  if (s->fuse)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "--fuse is about a model's convs: it needs --model (other workloads are "
                   "never fused)");
  int sources = !!s->positional + !!s->file + !!s->set + !!s->flags;
  if (sources > 1)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "give one workload source: a key, a JSON object, workload flags, --file or "
                   "--set (got %d)",
                   sources);
  if (s->file) return wlset_load_file(s->file, s->batch, out, err);
  if (s->set) return wlset_load_named(s->set, s->batch, out, err);

  const char *text = s->positional;
  ct_status st = CT_OK;
  char *owned = NULL;
  if (s->flags) {
    text = owned = cJSON_PrintUnformatted(s->flags);
    if (!owned) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  } else if (!text) {
    if (!dflt) return ERR_SET(err, CT_ERR_INVALID_ARG, "no workload given");
    text = dflt;
  }
  /* '{' an object, '[' a list of them (as in a --file); anything else is
   * a key, which never starts with either */
  const char first = text[strspn(text, " \t\r\n")];
  if (first != '{' && first != '[') {
    /* a key: turn it into JSON so that --batch and the set machinery apply */
    ct_workload w;
    if ((st = workload_from_key(text, &w, err))) return st;
    cJSON *j = workload_to_json(&w);
    owned = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!owned) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    text = owned;
  }
  st = wlset_parse(text, s->flags ? "flags" : "workload", s->batch, out, err);
  free(owned);
  return st;
}
