/*
 * cmd_bench.c: `convtune bench`: convtune's tuned kernels against cuDNN and
 * the hardware's peaks, for a workload set at a batch size, in one run
 * (bench/bench.h). The Markdown table goes to stdout, progress to stderr;
 * --json, --csv and --plot write files, and the results file
 * <dir>/<device>-<set>-b<batch>[-nhwc].json is written unless --no-results.
 * --layout picks the layout convtune's side runs in (nchw4c, or nhwc); it
 * takes the place of the workload flags' --layout, which the benchmark
 * would ignore anyway (every layer is taken as a plain convolution).
 * Without a GPU: a clear message, exit 1, nothing written. A layer whose
 * output does not match the CPU reference makes the exit status 1 (after
 * everything is written, so that the evidence is kept).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"

static const char usage[] =
    "usage: convtune bench --set NAME --batch N [options]\n"
    "Benchmark the database's best kernels against cuDNN (int8 NHWC, int8x32\n"
    "NCHW_VECT_C, fp16 NHWC on tensor cores) and the GPU's peaks, measured in one\n"
    "run; every side is timed alike (CUDA graph replays, median). Prints a Markdown\n"
    "table; writes the results file bench/results/<device>-<set>-b<batch>.json\n"
    "(-nhwc.json with --layout nhwc).\n"
    "\n"
    "Options:\n"
    "  --layout nchw4c|nhwc   the layout convtune runs in (default nchw4c, with the cost of\n"
    "                         packing from plain NCHW); nhwc: channels-last tensors on the\n"
    "                         nhwc templates, no pack column; layers no nhwc template runs\n"
    "                         are left empty with a note\n"
    "  --db PATH              the database of tuned kernels (default convtune.db)\n"
    "  --device N             CUDA device ordinal (default 0)\n"
    "  --repeats N            timed replays per measurement, 1..101 (default 7)\n"
    "  --min-replay-ms MS     launches per graph enough for this long (default 1)\n"
    "  --json FILE            also write the results document to FILE\n"
    "  --csv FILE             write one CSV row per layer to FILE\n"
    "  --plot FILE.png        write a bar chart per layer, convtune against cuDNN\n"
    "  --results-dir DIR      where the results file goes (default bench/results)\n"
    "  --no-results           do not write the results file\n"
    "  --seed N               seed of the random inputs (default 1)\n"
    "  -q, -v                 less or more output\n"
    "  -h, --help             this text\n"
    "\n"
    "The commit recorded is $CT_COMMIT when set, else `git rev-parse --short\n"
    "HEAD` where git works, else \"unknown\".\n"
    "\n";

static int write_csv(const char *path, const bench_result *r) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "convtune bench: %s: %s\n", path, strerror(errno));
    return 0;
  }
  bench_write_csv(r, f);
  if (fclose(f)) {
    fprintf(stderr, "convtune bench: %s: %s\n", path, strerror(errno));
    return 0;
  }
  return 1;
}

int cmd_bench(int argc, char **argv) {
  enum {
    O_DB = 1,
    O_DEVICE,
    O_REPEATS,
    O_MIN_REPLAY,
    O_JSON,
    O_CSV,
    O_PLOT,
    O_RESULTS_DIR,
    O_NO_RESULTS,
    O_SEED,
    O_LAYOUT
  };
  struct option opts[48] = {{"db", required_argument, 0, O_DB},
                            {"device", required_argument, 0, O_DEVICE},
                            {"repeats", required_argument, 0, O_REPEATS},
                            {"min-replay-ms", required_argument, 0, O_MIN_REPLAY},
                            {"json", required_argument, 0, O_JSON},
                            {"csv", required_argument, 0, O_CSV},
                            {"plot", required_argument, 0, O_PLOT},
                            {"results-dir", required_argument, 0, O_RESULTS_DIR},
                            {"no-results", no_argument, 0, O_NO_RESULTS},
                            {"seed", required_argument, 0, O_SEED},
                            /* before the workload flags' --layout: the first match wins */
                            {"layout", required_argument, 0, O_LAYOUT},
                            {"help", no_argument, 0, 'h'}};
  int n_opts = 12;
  for (const struct option *o = cli_wl_options; o->name; o++) opts[n_opts++] = *o;
  cli_common cc = {0};
  cli_wl sel = {0};
  bench_opts bo;
  bench_opts_default(&bo);
  const char *json_path = NULL, *csv_path = NULL, *plot_path = NULL;
  const char *results_dir = "bench/results";
  int no_results = 0, opt, rc = EXIT_OK;
  long v;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":hvq", opts, NULL)) != -1) {
    if (cli_wl_option(&sel, opt, optarg)) continue;
    switch (opt) {
    case O_DB:
      bo.db_path = optarg;
      break;
    case O_DEVICE:
      if (!cli_parse_long("bench", "device", optarg, 0, 1023, &v)) goto usage;
      bo.device = (int)v;
      break;
    case O_REPEATS:
      if (!cli_parse_long("bench", "repeats", optarg, 1, BENCH_MAX_REPEATS, &v)) goto usage;
      bo.repeats = (int)v;
      break;
    case O_MIN_REPLAY: {
      char *end;
      double ms = strtod(optarg, &end);
      if (*end || !*optarg || !(ms > 0) || ms > 1000) {
        cli_usage_error("bench", "--min-replay-ms: expected a number in (0, 1000], got '%s'",
                        optarg);
        goto usage;
      }
      bo.min_replay_us = ms * 1000;
      break;
    }
    case O_JSON:
      json_path = optarg;
      break;
    case O_CSV:
      csv_path = optarg;
      break;
    case O_PLOT:
      plot_path = optarg;
      break;
    case O_RESULTS_DIR:
      results_dir = optarg;
      break;
    case O_NO_RESULTS:
      no_results = 1;
      break;
    case O_SEED:
      if (!cli_parse_long("bench", "seed", optarg, 0, LONG_MAX, &v)) goto usage;
      bo.seed = (uint64_t)v;
      break;
    case O_LAYOUT: {
      ct_err lerr = {0};
      if (bench_layout_from_name(optarg, &bo.layout, &lerr)) {
        cli_usage_error("bench", "--%s", lerr.msg);
        goto usage;
      }
      break;
    }
    default: {
      int code = cli_common_option("bench", opt, argv, usage, &cc);
      if (code != CLI_GO_ON) {
        cli_wl_free(&sel);
        return code;
      }
    }
    }
  }
  if (cli_positional("bench", argc, argv, &sel) != CLI_GO_ON) {
    cli_wl_free(&sel);
    return EXIT_USAGE;
  }
  if (!sel.positional && !sel.file && !sel.set && !sel.flags) {
    char names[256];
    cli_usage_error("bench", "choose the workloads: --set NAME (%s), --file FILE or a workload",
                    wlset_names(names, sizeof names));
    goto usage;
  }
  bo.quiet = cc.verbose < 0;

  ct_err err = {0};
  wlset *s = NULL;
  bench_result r;
  memset(&r, 0, sizeof r);
  if (cli_wl_load(&sel, NULL, &s, &err)) {
    rc = cli_fail(&cc, &err);
    goto done;
  }
  if (!s->n_items) {
    fprintf(stderr, "convtune bench: the selection has no workloads\n");
    rc = EXIT_USAGE;
    goto done;
  }
  {
    /* the command as typed: "convtune bench ..." */
    char *args[256];
    int n = 0;
    args[n++] = "convtune";
    for (int i = 0; i < argc && n < 256; i++) args[n++] = argv[i];
    bench_result_stamp(&r, n, args);
  }
  r.batch = sel.batch ? sel.batch : s->items[0].w.n;
  ct_status st = bench_run(&bo, s, &r, &err);
  if (st == CT_ERR_NO_DEVICE) {
    fprintf(stderr, "convtune bench: %s\n", err.msg);
    rc = EXIT_FAIL;
    goto done;
  }
  if (sel.set) snprintf(r.set, sizeof r.set, "%s", sel.set);
  if (r.n_layers) {
    if (st) printf("**Incomplete: the run stopped at layer %d: %s**\n\n", r.n_layers, err.msg);
    bench_write_markdown(&r, stdout);
    fflush(stdout);
  }
  if (st) {
    rc = cli_fail(&cc, &err);
    if (rc == EXIT_USAGE && st != CT_ERR_NOT_FOUND) rc = EXIT_FAIL;
    goto done;
  }
  if (json_path) {
    if (bench_write_json(&r, json_path, &err))
      rc = cli_fail(&cc, &err);
    else if (cc.verbose >= 0)
      fprintf(stderr, "[bench] wrote %s\n", json_path);
  }
  if (csv_path) {
    if (!write_csv(csv_path, &r))
      rc = EXIT_FAIL;
    else if (cc.verbose >= 0)
      fprintf(stderr, "[bench] wrote %s\n", csv_path);
  }
  if (plot_path) {
    if (plot_write(&r, plot_path, &err))
      rc = cli_fail(&cc, &err);
    else if (cc.verbose >= 0)
      fprintf(stderr, "[bench] wrote %s\n", plot_path);
  }
  if (!no_results) {
    char path[4096];
    bench_results_path(&r, results_dir, path, sizeof path);
    if (bench_write_json(&r, path, &err))
      rc = cli_fail(&cc, &err);
    else if (cc.verbose >= 0)
      fprintf(stderr, "[bench] wrote %s\n", path);
  }
  if (r.n_wrong) {
    fprintf(stderr, "convtune bench: %d layer(s) gave a wrong answer: see the notes\n", r.n_wrong);
    rc = EXIT_FAIL;
  }
done:
  bench_result_free(&r);
  wlset_free(s);
  cli_wl_free(&sel);
  return rc;
usage:
  cli_wl_free(&sel);
  return EXIT_USAGE;
}
