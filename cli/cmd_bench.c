/*
 * cmd_bench.c: `convtune bench`: convtune's tuned kernels against cuDNN and
 * the hardware's peaks, for a workload set at a batch size, in one run
 * (bench/bench.h). The Markdown table goes to stdout (--json: the results
 * document instead), progress to stderr; --json-out and --csv-out write
 * files, and the results file <dir>/<device>-<set>-b<batch>[-nhwc].json is
 * written unless --no-results. Flags named after a format print it
 * (--json, as everywhere); FORMAT-out FILE writes it to FILE. Charts are
 * drawn from a results file by scripts/plot_bench (matplotlib), never here:
 * the command runs no Python.
 * --layout picks the layout convtune's side runs in (nchw4c, or nhwc); it
 * takes the place of the workload flags' --layout, which the benchmark
 * would ignore anyway (every layer is taken as a plain convolution).
 * Without a GPU: a clear message, exit 1, nothing written. A layer whose
 * output does not match the CPU reference makes the exit status 1 (after
 * everything is written, so that the evidence is kept).
 *
 * With --model m.onnx the unit is the model's conv stack, end to end
 * (bench/model_bench.h): the model is read in the layout convtune runs
 * (nhwc by default; --layout nchw4c), and the results file is
 * <dir>/<device>-<model>-b<batch>[-nchw4c].json. With --fuse a model is
 * read with its pointwise convs fused into the convs they feed
 * (cli_wl_model): where the database's records predict a gain in the
 * chain (auto: resolve_fuse_estimate, on this device), or every pair a
 * template runs (--fuse=all).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/model_bench.h"
#include "cli/cli.h"
#include "core/outfile.h"
#include "gpu/device.h"
#include "model/model.h"
#include "resolve/resolve.h"
#include "tuner/store.h"

static const char usage[] =
    "usage: convtune bench --set NAME --batch N [options]\n"
    "       convtune bench --model m.onnx --batch N [options]\n"
    "Benchmark the database's best kernels against cuDNN (int8 NHWC, int8x32\n"
    "NCHW_VECT_C, fp16 NHWC on tensor cores) and the GPU's peaks, measured in one\n"
    "run; every side is timed alike (CUDA graph replays, median). Prints a Markdown\n"
    "table (--json: the results document); writes the results file\n"
    "bench/results/<device>-<set>-b<batch>.json\n"
    "(-nhwc.json with --layout nhwc).\n"
    "\n"
    "With --model: the model's conv nodes in graph order, each through libconvtune,\n"
    "captured as one CUDA graph, each conv reading the real int8 output of the conv\n"
    "that feeds it (fresh tensors stand for pooling, Concat and the other ops convtune\n"
    "does not run); per node and in total, against the same chain on cuDNN fp16 and\n"
    "int8, with the model's roofline floor; every node checked once against the CPU\n"
    "reference (the first and the last image). With --fuse, a 1x1 conv whose output\n"
    "only the next conv reads is fused into it where a template runs the pair and the\n"
    "database's records on this GPU predict a gain in the chain (the fused kernel's\n"
    "time against the two convs' and one launch; tune --model --fuse records both\n"
    "ways); --fuse=all fuses every such pair.\n"
    "A fused node reads the 1x1 conv's input and is checked against the CPU reference\n"
    "of both convs; cuDNN still runs both, the node's time their sum.\n"
    "Writes bench/results/<device>-<model>-b<batch>.json (-nchw4c.json with --layout\n"
    "nchw4c).\n"
    "\n"
    "Options:\n"
    "  --layout nchw4c|nhwc   the layout convtune runs in (default nchw4c, with the cost of\n"
    "                         packing from plain NCHW); nhwc: channels-last tensors on the\n"
    "                         nhwc templates, no pack column; layers no nhwc template runs\n"
    "                         are left empty with a note. With --model the default is nhwc\n"
    "  --db PATH              the database of tuned kernels (default convtune.db)\n"
    "  --device N             CUDA device ordinal (default 0)\n"
    "  --repeats N            timed replays per measurement, 1..101 (default 7)\n"
    "  --min-replay-ms MS     launches per graph enough for this long (default 1)\n"
    "  --json                 print the results document (JSON) instead of the table\n"
    "  --json-out FILE        also write the results document to FILE\n"
    "  --csv-out FILE         write one CSV row per layer (per node with --model) to FILE\n"
    "  --results-dir DIR      where the results file goes (default bench/results)\n"
    "  --no-results           do not write the results file\n"
    "  --seed N               seed of the random inputs (default 1)\n"
    "  --in-chain             with --model: also time each convtune node inside the chain\n"
    "                         (the chain cut after the node less the chain cut before it;\n"
    "                         one chain timing per node)\n"
    "  --arena                with --model: place the chain's tensors as a runtime's arena\n"
    "                         does, on every side (a buffer reused once the last node that\n"
    "                         reads it has run), not each node's output in its own buffer\n"
    "  --streams S            with --model: also time S copies of each side's chain at once,\n"
    "                         each on a stream and tensors of its own (S x batch images: S\n"
    "                         concurrent requests, or a batch of S x batch split in S; the\n"
    "                         workloads stay at --batch), 1..8 (default 1: none)\n"
    "  -q, -v                 less or more output\n"
    "  -h, --help             this text\n"
    "\n"
    "The commit recorded is $CT_COMMIT when set, else the commit this binary was\n"
    "built from, else git's short hash of HEAD where git works, else \"unknown\".\n"
    "\n"
    "Charts: scripts/plot_bench (in the source tree; Python 3 with matplotlib,\n"
    "Debian's python3-matplotlib) draws one from any results file, a set's or a\n"
    "model's, each layer's floor marked at its value, into a PNG beside it:\n"
    "  scripts/plot_bench bench/results/h200-resnet50-b16.json\n"
    "\n";

/* Write the CSV of r (a set's bench_result, or with mr a model's): whole or
 * not at all (outfile). */
static int write_csv(const char *path, const bench_result *r, const mbench_result *mr) {
  outfile o;
  ct_err err = {0};
  if (outfile_open(&o, path, "w", &err) == CT_OK) {
    if (mr)
      mbench_write_csv(mr, o.f);
    else
      bench_write_csv(r, o.f);
    if (outfile_close(&o, 1, &err) == CT_OK) return 1;
  }
  fprintf(stderr, "convtune bench: %s\n", err.msg);
  return 0;
}

/* A file flag (--json-out, --csv-out) that names the database or one of
 * its side files: refused before anything runs. */
static int refuse_database(const char *flag, const char *path, const char *db_path) {
  if (!path || !db_path || !outfile_is_database(path, db_path)) return 0;
  cli_usage_error("bench", "%s %s is the database %s (or one of its files)", flag, cli_path(path),
                  cli_path(db_path));
  return 1;
}

/* The files a run writes besides stdout, and what stdout gets. */
typedef struct outputs {
  const char *json, *csv, *results_dir; /* --json-out, --csv-out, --results-dir */
  int no_results;
  const char *db_path; /* never written over */
  int print_json;      /* --json: the results document on stdout, not the table */
} outputs;

/* The results document on stdout (--json); NULL: out of memory, said so. */
static void print_doc(cJSON *doc) {
  char *text = doc ? cJSON_Print(doc) : NULL;
  cJSON_Delete(doc);
  if (text)
    puts(text);
  else
    fprintf(stderr, "convtune bench: out of memory printing the results document\n");
  free(text);
  fflush(stdout);
}

/* --json, the results file and --csv of a set's run (r) or a model's (mr);
 * the exit code of the first failure, or EXIT_OK. */
static int write_files(const cli_common *cc, const outputs *out, const bench_result *r,
                       const mbench_result *mr) {
  int rc = EXIT_OK;
  ct_err err = {0};
  char results[4096];
  if (mr)
    mbench_results_path(mr, out->results_dir, results, sizeof results);
  else
    bench_results_path(r, out->results_dir, results, sizeof results);
  const char *paths[2] = {out->json, out->no_results ? NULL : results};
  for (int i = 0; i < 2; i++) {
    if (!paths[i]) continue;
    ct_status st = CT_OK;
    if (out->db_path && outfile_is_database(paths[i], out->db_path))
      st = ERR_SET(&err, CT_ERR_INVALID_ARG, "%s is the database %s: not written",
                   cli_quote(paths[i]), cli_quote(out->db_path));
    else
      st = mr ? mbench_write_json(mr, paths[i], &err) : bench_write_json(r, paths[i], &err);
    if (st) {
      int code = cli_fail(cc, &err);
      if (!rc) rc = code;
    } else if (cc->verbose >= 0) {
      fprintf(stderr, "[bench] wrote %s\n", cli_path(paths[i]));
    }
  }
  if (out->csv) {
    if (!write_csv(out->csv, r, mr))
      rc = rc ? rc : EXIT_FAIL;
    else if (cc->verbose >= 0)
      fprintf(stderr, "[bench] wrote %s\n", cli_path(out->csv));
  }
  return rc;
}

/* The command as typed, "convtune bench ...", with the commit and date. */
static void stamp(bench_result *r, int argc, char **argv) {
  char *args[256];
  int n = 0;
  args[n++] = "convtune";
  for (int i = 0; i < argc && n < 256; i++) args[n++] = argv[i];
  bench_result_stamp(r, CT_BUILD_COMMIT, n, args);
}

/* bench --fuse=auto: a pair fuses where a template runs it and this
 * device's records predict a gain (resolve_fuse_estimate); each decision
 * kept by the fused workload's key for the report. */
typedef struct fuse_decision {
  char fused_key[CT_KEY_MAX], main_key[CT_KEY_MAX];
  fuse_estimate e;
} fuse_decision;
typedef struct fuse_policy {
  db *d;
  db_device dev;
  arch a;
  int n, cap;
  fuse_decision *v;
  ct_status st; /* the first failure, in err */
  ct_err err;
} fuse_policy;

static int fuse_by_records(const ct_workload *w, void *user) {
  fuse_policy *p = user;
  if (p->st || !template_any_supports(w)) return 0;
  char key[CT_KEY_MAX];
  workload_key(w, key, sizeof key);
  int i = 0;
  while (i < p->n && strcmp(p->v[i].fused_key, key)) i++;
  if (i == p->n) {
    if (p->n == p->cap) {
      int cap = p->cap ? 2 * p->cap : 16;
      fuse_decision *v = realloc(p->v, (size_t)cap * sizeof *v);
      if (!v) {
        p->st = ERR_SET(&p->err, CT_ERR_NO_MEMORY, "out of memory");
        return 0;
      }
      p->v = v, p->cap = cap;
    }
    fuse_decision *dn = &p->v[p->n];
    memset(dn, 0, sizeof *dn);
    memcpy(dn->fused_key, key, sizeof key);
    ct_workload m;
    workload_main(w, &m);
    workload_key(&m, dn->main_key, sizeof dn->main_key);
    if ((p->st = resolve_fuse_estimate(p->d, &p->dev, &p->a, w, &dn->e, &p->err)))
      return 0;
    p->n++;
  }
  return p->v[i].e.known && p->v[i].e.gain_us > 0;
}

/* The database and this GPU for fuse_by_records. */
static ct_status fuse_policy_open(fuse_policy *p, const bench_opts *bo, ct_err *err) {
  memset(p, 0, sizeof *p);
  device dv;
  ct_status st = device_open(bo->device, &dv, err);
  if (st) return st;
  tune_db_device(&dv, &p->dev);
  p->a = dv.arch;
  if (bo->db_path && (st = db_open(bo->db_path, 1, &p->d, err))) return st;
  return CT_OK;
}

static void fuse_policy_close(fuse_policy *p) {
  db_close(p->d);
  free(p->v);
  memset(p, 0, sizeof *p);
}

/* Each decision onto its node: the fused node, or the conv the pair's 1x1
 * conv feeds where the pair stayed apart. */
static void fuse_policy_report(const fuse_policy *p, mbench_result *r) {
  for (int k = 0; k < p->n; k++) {
    const fuse_decision *dn = &p->v[k];
    int fused = dn->e.known && dn->e.gain_us > 0;
    for (int i = 0; i < r->n_nodes; i++) {
      mbench_node *nd = &r->nodes[i];
      if (fused ? nd->pre_conv >= 0 && !strcmp(nd->key, dn->fused_key)
                : nd->pre_conv < 0 && !strcmp(nd->key, dn->main_key))
        snprintf(nd->fusion, sizeof nd->fusion, "%s", dn->e.why);
    }
  }
}

/* The --model run: read the model in layout, benchmark its chain, print
 * the report, write the files. */
static int bench_model(const cli_common *cc, const cli_wl *sel, const bench_opts *bo,
                       const outputs *out, int argc, char **argv) {
  ct_err err = {0};
  model *m = NULL;
  mbench_result r;
  memset(&r, 0, sizeof r);
  int rc = EXIT_OK;
  /* the model in the layout convtune's side runs (bench's own --layout: the
   * selection's never sees it); for nchw4c read plain, which the benchmark
   * packs node by node, so that a stem's 3 channels pad to 4 as the
   * library pads them */
  cli_wl ms = *sel;
  ms.layout = bo->layout == CT_LAYOUT_NHWC ? "nhwc" : "nchw";
  fuse_policy fp = {0};
  if (ms.fuse == CLI_FUSE_AUTO) {
    if (fuse_policy_open(&fp, bo, &err)) {
      rc = cli_fail(cc, &err);
      goto done;
    }
    ms.fuse_hook = fuse_by_records;
    ms.fuse_user = &fp;
  }
  if (cli_wl_model(&ms, &m, &err) || (fp.st && (err = fp.err, 1))) {
    rc = cli_fail(cc, &err);
    goto done;
  }
  stamp(&r.head, argc, argv);
  ct_status st = mbench_run(bo, m, &r, &err);
  if (ms.fuse) {
    snprintf(r.fuse_policy, sizeof r.fuse_policy, "%s",
             ms.fuse == CLI_FUSE_AUTO ? "records" : "all");
    fuse_policy_report(&fp, &r);
  }
  if (st == CT_ERR_NO_DEVICE) {
    fprintf(stderr, "convtune bench: %s\n", err.msg);
    rc = EXIT_FAIL;
    goto done;
  }
  if (r.n_nodes && out->print_json) {
    print_doc(mbench_to_json(&r));
  } else if (r.n_nodes) {
    if (st) printf("**Incomplete: the run stopped: %s**\n\n", err.msg);
    mbench_write_markdown(&r, stdout);
    fflush(stdout);
  }
  if (st) {
    rc = cli_fail(cc, &err);
    if (rc == EXIT_USAGE) rc = EXIT_FAIL;
    goto done;
  }
  rc = write_files(cc, out, NULL, &r);
  if (r.n_wrong || r.n_unchecked) {
    fprintf(stderr,
            "convtune bench: %d node(s) gave a wrong answer, %d unchecked: see the check "
            "column\n",
            r.n_wrong, r.n_unchecked);
    rc = EXIT_FAIL;
  }
done:
  mbench_result_free(&r);
  model_free(m);
  fuse_policy_close(&fp);
  return rc;
}

int cmd_bench(int argc, char **argv) {
  enum {
    O_DB = 1,
    O_DEVICE,
    O_REPEATS,
    O_MIN_REPLAY,
    O_JSON,
    O_JSON_OUT,
    O_CSV_OUT,
    O_RESULTS_DIR,
    O_NO_RESULTS,
    O_SEED,
    O_LAYOUT,
    O_IN_CHAIN,
    O_ARENA,
    O_STREAMS
  };
  struct option opts[48] = {{"db", required_argument, 0, O_DB},
                            {"device", required_argument, 0, O_DEVICE},
                            {"repeats", required_argument, 0, O_REPEATS},
                            {"min-replay-ms", required_argument, 0, O_MIN_REPLAY},
                            {"json", no_argument, 0, O_JSON},
                            {"json-out", required_argument, 0, O_JSON_OUT},
                            {"csv-out", required_argument, 0, O_CSV_OUT},
                            {"results-dir", required_argument, 0, O_RESULTS_DIR},
                            {"no-results", no_argument, 0, O_NO_RESULTS},
                            {"seed", required_argument, 0, O_SEED},
                            /* before the workload flags' --layout: the first match wins */
                            {"layout", required_argument, 0, O_LAYOUT},
                            {"in-chain", no_argument, 0, O_IN_CHAIN},
                            {"arena", no_argument, 0, O_ARENA},
                            {"streams", required_argument, 0, O_STREAMS},
                            {"help", no_argument, 0, 'h'}};
  int n_opts = 15;
  for (const struct option *o = cli_wl_options; o->name; o++) opts[n_opts++] = *o;
  cli_common cc = {0};
  cli_wl sel = {0};
  bench_opts bo;
  bench_opts_default(&bo);
  const char *json_path = NULL, *csv_path = NULL;
  const char *results_dir = "bench/results";
  int no_results = 0, opt, rc = EXIT_OK, layout_given = 0, json = 0;
  long v;
  optind = 1;
  opterr = 0;
  while ((opt = cli_getopt("bench", argc, argv, opts)) != -1) {
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
                        cli_quote(optarg));
        goto usage;
      }
      bo.min_replay_us = ms * 1000;
      break;
    }
    case O_JSON:
      json = 1;
      break;
    case O_JSON_OUT:
      json_path = optarg;
      break;
    case O_CSV_OUT:
      csv_path = optarg;
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
    case O_IN_CHAIN:
      bo.in_chain = 1;
      break;
    case O_ARENA:
      bo.arena = 1;
      break;
    case O_STREAMS:
      if (!cli_parse_long("bench", "streams", optarg, 1, MBENCH_MAX_STREAMS, &v)) goto usage;
      bo.streams = (int)v;
      break;
    case O_LAYOUT: {
      ct_err lerr = {0};
      if (bench_layout_from_name(optarg, &bo.layout, &lerr)) {
        cli_usage_error("bench", "--%s", lerr.msg);
        goto usage;
      }
      layout_given = 1;
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
  /* the old spelling, --json FILE: say where the file goes now rather than
   * fail on FILE as a workload */
  size_t n_pos = sel.positional ? strlen(sel.positional) : 0;
  if (json && n_pos > 5 && !strcmp(sel.positional + n_pos - 5, ".json")) {
    cli_usage_error("bench",
                    "--json prints the results document and takes no file: "
                    "write '%s' with --json-out FILE",
                    sel.positional);
    goto usage;
  }
  if (refuse_database("--json-out", json_path, bo.db_path) ||
      refuse_database("--csv-out", csv_path, bo.db_path))
    goto usage;
  if (sel.model && bo.arena && bo.streams > 1) {
    cli_usage_error("bench",
                    "--streams and --arena: not together (each copy of the chain has tensors of "
                    "its own)");
    goto usage;
  }
  if (sel.model) {
    bo.quiet = cc.verbose < 0;
    if (!layout_given) bo.layout = CT_LAYOUT_NHWC;
    outputs out = {json_path, csv_path, results_dir, no_results, bo.db_path, json};
    rc = bench_model(&cc, &sel, &bo, &out, argc, argv);
    cli_wl_free(&sel);
    return rc;
  }
  if (bo.in_chain || bo.arena || bo.streams > 1) {
    cli_usage_error("bench", "--%s is about a model's chain: it needs --model",
                    bo.in_chain ? "in-chain" : bo.arena ? "arena" : "streams");
    goto usage;
  }
  if (!sel.positional && !sel.file && !sel.set && !sel.flags) {
    char names[256];
    cli_usage_error("bench",
                    "choose the workloads: --set NAME (%s), --model FILE, --file FILE or a "
                    "workload",
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
  stamp(&r, argc, argv);
  r.batch = sel.batch ? sel.batch : s->items[0].w.n;
  ct_status st = bench_run(&bo, s, &r, &err);
  if (st == CT_ERR_NO_DEVICE) {
    fprintf(stderr, "convtune bench: %s\n", err.msg);
    rc = EXIT_FAIL;
    goto done;
  }
  if (sel.set) snprintf(r.set, sizeof r.set, "%s", sel.set);
  if (r.n_layers && json) {
    print_doc(bench_to_json(&r));
  } else if (r.n_layers) {
    if (st) printf("**Incomplete: the run stopped at layer %d: %s**\n\n", r.n_layers, err.msg);
    bench_write_markdown(&r, stdout);
    fflush(stdout);
  }
  if (st) {
    rc = cli_fail(&cc, &err);
    if (rc == EXIT_USAGE && st != CT_ERR_NOT_FOUND) rc = EXIT_FAIL;
    goto done;
  }
  {
    outputs out = {json_path, csv_path, results_dir, no_results, bo.db_path, json};
    rc = write_files(&cc, &out, &r, NULL);
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
