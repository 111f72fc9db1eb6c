/*
 * cmd_tune.c: `convtune tune`: tune a workload, a file or a set on this
 * machine's GPU into the database. Progress on stderr (a live line on a
 * terminal, one line per batch otherwise); a table of the results on stdout
 * (--json for machines). Without a GPU: a clear message, exit 1, nothing
 * written.
 */
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tuner/tune.h"

/* The workload tuned when none is given: ResNet-50's first 3x3 layer at batch
 * 1, small enough to tune in a minute, in the packed layout of the dp4a
 * templates. */
static const char default_workload[] =
    "{\"name\":\"resnet50/l1_3x3_64\",\"op\":\"conv2d\",\"layout\":\"nchw4c\",\"n\":1,\"c\":64,"
    "\"h\":56,\"w\":56,\"k\":64,\"kernel\":3,\"stride\":1,\"pad\":1}";

static const char usage[] =
    "usage: convtune tune [options] [KEY | '{JSON}']\n"
    "Tune workloads on this machine's GPU; every measured config is stored in the\n"
    "database, and tuning again resumes where it stopped. Without a workload, tunes\n"
    "ResNet-50's l1_3x3_64 at batch 1.\n"
    "\n"
    "Options:\n"
    "  --db PATH              the database (default convtune.db)\n"
    "  --trials N             new trials per workload at most (default 1000)\n"
    "  --early-stopping N     stop after N trials without a better one (default: never)\n"
    "  --time-budget S        seconds per workload at most (default: none)\n"
    "  --tuner KIND           xgb (model-based, default), random, grid, ga\n"
    "  --template NAME        only this template (default: every one that runs the workload);\n"
    "                         in a set or file, the workloads it cannot run are skipped\n"
    "  --device N             CUDA device ordinal (default 0)\n"
    "  --seed N               seed of the search and the inputs (default 1)\n"
    "  --timeout S            per-trial timeout in seconds (default 5)\n"
    "  --no-transfer          do not seed the model with other workloads' trials\n"
    "  --json                 print the results as JSON\n"
    "  -v, -q                 more or less output\n"
    "  -h, --help             this text\n"
    "\n";

/* Set by SIGINT / SIGTERM: the tuner stops after the batch in flight, so
 * that everything measured is in the database. */
static volatile int stop_requested;

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

typedef struct progress_ctx {
  int tty, quiet;
} progress_ctx;

static void fmt_eta(double s, char *buf, size_t size) {
  long t = (long)(s + 0.5);
  snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
}

static void on_progress(void *user, const tune_progress *p) {
  const progress_ctx *pc = user;
  if (pc->quiet) return;
  char eta[32];
  fmt_eta(p->finished ? p->elapsed_s : p->eta_s, eta, sizeof eta);
  char errors[160] = "";
  size_t len = snprintf(errors, sizeof errors, "errors %d", p->errors);
  const char *sep = " (";
  for (int o = 1; o < OUT_COUNT && p->errors && len < sizeof errors; o++)
    if (p->by_outcome[o]) {
      len += snprintf(errors + len, sizeof errors - len, "%s%s %d", sep, outcome_name((outcome)o),
                      p->by_outcome[o]);
      sep = ", ";
    }
  if (p->errors && len < sizeof errors) snprintf(errors + len, sizeof errors - len, ")");
  char best[64] = "best -";
  if (p->best_us > 0)
    snprintf(best, sizeof best, "best %.2f us (%.1f TOPS)", p->best_us, p->best_tops);
  fprintf(stderr, "%s[tune] %s %d/%d %s %s %s %s%s", pc->tty ? "\r\033[K" : "", p->name, p->done,
          p->total, best, errors, p->finished ? "took" : "eta", eta,
          pc->tty && !p->finished ? "" : "\n");
  fflush(stderr);
}

static int parse_seconds(const char *flag, const char *arg, double *out) {
  char *end;
  double v = strtod(arg, &end);
  if (*end || !*arg || !(v > 0) || v > 1e7) {
    cli_usage_error("tune", "--%s: expected a positive number of seconds, got '%s'", flag, arg);
    return 0;
  }
  *out = v;
  return 1;
}

int cmd_tune(int argc, char **argv) {
  enum {
    O_DB = 1,
    O_TRIALS,
    O_EARLY,
    O_BUDGET,
    O_TUNER,
    O_TEMPLATE,
    O_DEVICE,
    O_SEED,
    O_TIMEOUT,
    O_NO_TRANSFER,
    O_JSON
  };
  struct option opts[48] = {{"db", required_argument, 0, O_DB},
                            {"trials", required_argument, 0, O_TRIALS},
                            {"early-stopping", required_argument, 0, O_EARLY},
                            {"time-budget", required_argument, 0, O_BUDGET},
                            {"tuner", required_argument, 0, O_TUNER},
                            {"template", required_argument, 0, O_TEMPLATE},
                            {"device", required_argument, 0, O_DEVICE},
                            {"seed", required_argument, 0, O_SEED},
                            {"timeout", required_argument, 0, O_TIMEOUT},
                            {"no-transfer", no_argument, 0, O_NO_TRANSFER},
                            {"json", no_argument, 0, O_JSON},
                            {"help", no_argument, 0, 'h'}};
  int n_opts = 12;
  for (const struct option *o = cli_wl_options; o->name; o++) opts[n_opts++] = *o;
  cli_common cc = {0};
  cli_wl sel = {0};
  const char *db_path = "convtune.db", *tuner_kind = "xgb", *tpl_name = NULL;
  tune_opts to;
  tune_opts_default(&to);
  to.stop = &stop_requested;
  long v;
  int json = 0, opt, rc = EXIT_OK;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":hvq", opts, NULL)) != -1) {
    if (cli_wl_option(&sel, opt, optarg)) continue;
    switch (opt) {
    case O_DB:
      db_path = optarg;
      break;
    case O_TRIALS:
      if (!cli_parse_long("tune", "trials", optarg, 1, 100000000, &v)) goto usage;
      to.n_trials = (int)v;
      break;
    case O_EARLY:
      if (!cli_parse_long("tune", "early-stopping", optarg, 1, 100000000, &v)) goto usage;
      to.early_stopping = (int)v;
      break;
    case O_BUDGET:
      if (!parse_seconds("time-budget", optarg, &to.time_budget_s)) goto usage;
      break;
    case O_TUNER:
      tuner_kind = optarg;
      break;
    case O_TEMPLATE:
      tpl_name = optarg;
      break;
    case O_DEVICE:
      if (!cli_parse_long("tune", "device", optarg, 0, 1023, &v)) goto usage;
      to.runner.device = (int)v;
      break;
    case O_SEED:
      if (!cli_parse_long("tune", "seed", optarg, 0, LONG_MAX, &v)) goto usage;
      to.runner.seed = (uint64_t)v;
      break;
    case O_TIMEOUT:
      if (!parse_seconds("timeout", optarg, &to.runner.timeout_s)) goto usage;
      break;
    case O_NO_TRANSFER:
      to.transfer = 0;
      break;
    case O_JSON:
      json = 1;
      break;
    default: {
      int code = cli_common_option("tune", opt, argv, usage, &cc);
      if (code != CLI_GO_ON) {
        cli_wl_free(&sel);
        return code;
      }
    }
    }
  }
  if (cli_positional("tune", argc, argv, &sel) != CLI_GO_ON) {
    cli_wl_free(&sel);
    return EXIT_USAGE;
  }
  static const char *const kinds[] = {"xgb", "random", "grid", "ga"};
  int k = 0;
  while (k < 4 && strcmp(kinds[k], tuner_kind)) k++;
  if (k == 4) {
    cli_usage_error("tune", "--tuner: expected xgb, random, grid or ga, got '%s'", tuner_kind);
    goto usage;
  }
  uint64_t seed = to.runner.seed;
  search_opts_default(&to.search, kinds[k]);
  to.search.seed = seed;
  const template_desc *tpl = NULL;
  if (tpl_name && !(tpl = template_find(tpl_name))) {
    cli_usage_error("tune", "--template: no template named '%s'", tpl_name);
    goto usage;
  }

  ct_err err = {0};
  wlset *s = NULL;
  tuner *t = NULL;
  if (cli_wl_load(&sel, default_workload, &s, &err)) {
    rc = cli_fail(&cc, &err);
    goto done;
  }
  /* The GPU is found before the database is touched: without one, nothing
   * is written. */
  if (tuner_open(db_path, &to, &t, &err)) {
    if (err.status == CT_ERR_NO_DEVICE)
      fprintf(stderr, "convtune tune: %s\n", err.msg);
    else
      cli_fail(&cc, &err);
    rc = EXIT_FAIL;
    goto done;
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  const device *dev = tuner_device(t);
  if (cc.verbose >= 0)
    fprintf(stderr, "[tune] %s (%s, %d SMs), database %s, tuner %s\n", dev->name, dev->arch.name,
            dev->arch.sm_count, db_path, kinds[k]);
  progress_ctx pc = {.tty = isatty(2), .quiet = cc.verbose < 0};
  cJSON *out = json ? cJSON_CreateArray() : NULL;
  if (!json)
    printf("%-28s %-10s %10s %8s %8s %7s %8s  %s\n", "name", "template", "best us", "TOPS",
           "trials", "errors", "trial/s", "key");
  for (int i = 0; i < s->n_items; i++) {
    char name[300];
    if (sel.set || sel.file)
      snprintf(name, sizeof name, "%s/%s", s->name, s->items[i].name);
    else
      snprintf(name, sizeof name, "%s", s->items[i].name);
    if (stop_requested) break;
    tune_result r;
    if (tuner_tune(t, name, &s->items[i].w, tpl, on_progress, &pc, &r, &err)) {
      if (err.status == CT_ERR_UNSUPPORTED && tpl && s->n_items > 1) {
        /* a named template tunes the layers of a set or file it can run */
        if (cc.verbose >= 0) fprintf(stderr, "convtune tune: skipped %s\n", err.msg);
        memset(&err, 0, sizeof err);
        continue;
      }
      rc = cli_fail(&cc, &err);
      break;
    }
    int errors = r.n_trials - r.by_outcome[OUT_OK];
    if (json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(out, o);
      cJSON_AddStringToObject(o, "name", name);
      cJSON_AddStringToObject(o, "key", r.key);
      cJSON_AddStringToObject(o, "template", r.template_name);
      cJSON_AddNumberToObject(o, "best_us", r.best_us);
      cJSON_AddNumberToObject(o, "best_tops", r.best_tops);
      cJSON_AddItemToObject(o, "best_config",
                            r.best_config[0] ? cJSON_Parse(r.best_config) : cJSON_CreateNull());
      cJSON_AddNumberToObject(o, "trials", r.n_trials);
      cJSON_AddNumberToObject(o, "resumed", r.n_resumed);
      cJSON *by = cJSON_AddObjectToObject(o, "outcomes");
      for (int oc = 0; oc < OUT_COUNT; oc++)
        cJSON_AddNumberToObject(by, outcome_name((outcome)oc), r.by_outcome[oc]);
      cJSON_AddNumberToObject(o, "wall_s", r.wall_s);
      cJSON_AddNumberToObject(o, "trials_per_s", r.trials_per_s);
      cJSON_AddBoolToObject(o, "stopped_early", r.stopped_early);
    } else {
      printf("%-28s %-10.10s %10.2f %8.2f %8d %7d %8.1f  %s\n", name, r.template_name, r.best_us,
             r.best_tops, r.n_trials, errors, r.trials_per_s, r.key);
      if (r.best_config[0] && cc.verbose >= 0) printf("  best config %s\n", r.best_config);
      fflush(stdout);
    }
    if (r.best_us == 0 && cc.verbose >= 0)
      fprintf(stderr, "convtune tune: %s: no config ran correctly in %d trials\n", name,
              r.n_trials);
  }
  if (json) {
    char *text = cJSON_Print(out);
    if (text) puts(text);
    free(text);
    cJSON_Delete(out);
  }
done:
  tuner_close(t);
  wlset_free(s);
  cli_wl_free(&sel);
  return rc;
usage:
  cli_wl_free(&sel);
  return EXIT_USAGE;
}
