/*
 * cmd_tune.c: `convtune tune`: select the workloads to tune. The tuning
 * engine (builder, runner, search, database) is not built yet, so this
 * prints what it would tune and stops with exit code 1: it never prints a
 * result it did not measure.
 */
#include <stdio.h>

#include "cli/cli.h"

/* The workload tuned when none is given: ResNet-50's first 3x3 layer at batch
 * 1, small enough to tune in a minute, in the packed layout of the dp4a
 * templates. */
static const char default_workload[] =
    "{\"name\":\"resnet50/l1_3x3_64\",\"op\":\"conv2d\",\"layout\":\"nchw4c\",\"n\":1,\"c\":64,"
    "\"h\":56,\"w\":56,\"k\":64,\"kernel\":3,\"stride\":1,\"pad\":1}";

static const char usage[] =
    "usage: convtune tune [options] [KEY | '{JSON}']\n"
    "Tune workloads on this machine's GPU; every measured config is stored in the\n"
    "database. Without a workload, tunes ResNet-50's l1_3x3_64 at batch 1.\n"
    "\n"
    "Options:\n"
    "  --db PATH              the database (default convtune.db)\n"
    "  -v, -q                 more or less output\n"
    "  -h, --help             this text\n"
    "\n";

int cmd_tune(int argc, char **argv) {
  enum { O_DB = 1 };
  struct option opts[32] = {{"db", required_argument, 0, O_DB}, {"help", no_argument, 0, 'h'}};
  int n_opts = 2;
  for (const struct option *o = cli_wl_options; o->name; o++) opts[n_opts++] = *o;
  cli_common cc = {0};
  cli_wl sel = {0};
  const char *db = "convtune.db";
  int opt, rc;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":hvq", opts, NULL)) != -1) {
    if (cli_wl_option(&sel, opt, optarg)) continue;
    switch (opt) {
    case O_DB:
      db = optarg;
      break;
    case 'h': {
      char names[256];
      fputs(usage, stdout);
      printf(cli_wl_help, wlset_names(names, sizeof names));
      cli_wl_free(&sel);
      return EXIT_OK;
    }
    case 'v':
      cc.verbose = 1;
      break;
    case 'q':
      cc.verbose = -1;
      break;
    case ':':
      cli_wl_free(&sel);
      return cli_usage_error("tune", "%s needs a value", argv[optind - 1]);
    default:
      cli_wl_free(&sel);
      return cli_usage_error("tune", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) sel.positional = argv[optind++];
  if (optind < argc) {
    cli_wl_free(&sel);
    return cli_usage_error("tune", "unexpected argument '%s'", argv[optind]);
  }
  ct_err err = {0};
  wlset *s = NULL;
  if (cli_wl_load(&sel, default_workload, &s, &err)) {
    rc = cli_fail(&cc, &err);
  } else {
    char key[CT_KEY_MAX];
    for (int i = 0; i < s->n_items; i++)
      printf("workload %s: %s\n", s->items[i].name, workload_key(&s->items[i].w, key, sizeof key));
    fprintf(stderr,
            "convtune tune: the tuning engine (builder, GPU runner, search, database) is not "
            "built yet; nothing was measured and nothing was written to %s\n",
            db);
    rc = EXIT_FAIL;
  }
  wlset_free(s);
  cli_wl_free(&sel);
  return rc;
}
