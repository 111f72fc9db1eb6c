/*
 * cmd_workload.c: `convtune workload`: print each selected workload's name,
 * key, output shape and operation count, as a table or JSON.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: convtune workload [options] [KEY | '{JSON}']\n"
    "Print each workload's name, canonical key, output shape (in its layout) and\n"
    "operation count (2 x multiply-adds).\n"
    "\n"
    "Options:\n"
    "  --json                 print JSON instead of a table\n"
    "  -v, -q                 more or less detail on errors\n"
    "  -h, --help             this text\n"
    "\n";

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
  char *text = list ? cJSON_Print(list) : NULL;
  cJSON_Delete(list);
  if (!text) {
    fprintf(stderr, "convtune: out of memory\n");
    return EXIT_FAIL;
  }
  puts(text);
  free(text);
  return EXIT_OK;
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
  while ((opt = getopt_long(argc, argv, ":hvq", opts, NULL)) != -1) {
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
  if (!sel.positional && !sel.file && !sel.set && !sel.flags) {
    cli_wl_free(&sel);
    return cli_usage_error("workload", "no workload given");
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
