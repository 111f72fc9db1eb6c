/*
 * cmd_tune.c: `convtune tune`: tune a workload, a file or a set on this
 * machine's GPU into the database, each workload with its own budget; or a
 * model (--model, or a set or file --as-model) with one budget that the task
 * scheduler (tuner/sched.h) shares among its unique workloads. Progress on
 * stderr (a live line on a terminal, one line per batch, or per round for a
 * model, otherwise); a table of the results on stdout (--json for machines).
 * Without a GPU: a clear message, exit 1, nothing written.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/model_bench.h"
#include "cli/cli.h"
#include "core/json.h"
#include "db/db.h"
#include "model/model.h"
#include "tuner/mpi.h"
#include "tuner/pool.h"
#include "tuner/proc.h"
#include "tuner/sched.h"
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
    "  --time-budget T        per workload at most, or for a model the whole run's: seconds\n"
    "                         (120, 120s), minutes (10m) or hours (1h) (default: none)\n"
    "  --as-model             tune the set or file as one model (each workload once): the\n"
    "                         scheduler shares --time-budget among its workloads, as with\n"
    "                         --model, whose workloads count as often as the graph runs them\n"
    "  --round-trials N       a model's trials per round (default: from the budget, 16-64)\n"
    "  --refine-time T        with --model, after the budget: compare each workload's\n"
    "                         fastest few configs by the time of the whole chain, as bench\n"
    "                         --model runs it, and record the ones that make it faster\n"
    "                         (picks, served before a workload's fastest record) for at\n"
    "                         most T (default 60s; 0: not)\n"
    "  --tuner KIND           xgb (model-based, default), random, grid, ga\n"
    "  --template NAME        only this template (default: every one that runs the workload);\n"
    "                         in a set or file, the workloads it cannot run are skipped;\n"
    "                         with --model, a 1x1 conv is fused into the conv it feeds\n"
    "                         only where this template runs the pair\n"
    "  --device N             CUDA device ordinal (default 0)\n"
    "  --devices LIST|all     tune on several GPUs of this host at once (e.g. 0,1,3): one\n"
    "                         measuring process per GPU, the compilers shared, each task\n"
    "                         (workload x template) on whichever GPU is free; GPUs of one\n"
    "                         kind share the work, each kind of a mixed host tunes it all\n"
    "  --mpi                  tune across the ranks of mpirun (or srun): rank 0 keeps the\n"
    "                         database and hands out the tasks, every rank tunes on its\n"
    "                         GPUs (--devices, else one: its local rank's); start mpirun\n"
    "                         with its enable-recovery option, so that a lost rank costs\n"
    "                         only its trials in flight\n"
    "  --rank-timeout S       with --mpi: a rank not heard from for S seconds is lost, its\n"
    "                         tasks go to the others (default 60)\n"
    "  --builders N           compiler processes (each rank's, under --mpi), at most 256\n"
    "                         (default: one per core this process may use; under --mpi,\n"
    "                         twice the host's cores shared out by its ranks, at most its\n"
    "                         cores)\n"
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
  int fallback_told; /* the cost model's fallback was reported */
} progress_ctx;

static void fmt_eta(double s, char *buf, size_t size) {
  long t = (long)(s + 0.5);
  snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
}

/* Once per run: the cost model failed and the search went random. */
static void tell_fallback(int tty, int *told, const char *note) {
  if (!note || *told) return;
  *told = 1;
  fprintf(stderr, "%s[tune] the cost model failed, proposing random configs: %s\n",
          tty ? "\r\033[K" : "", note);
}

static void on_progress(void *user, const tune_progress *p) {
  progress_ctx *pc = user;
  if (pc->quiet) return;
  tell_fallback(pc->tty, &pc->fallback_told, p->model_fallback);
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

/* A duration: a number of seconds, or one with the unit s, m or h. */
static int parse_duration(const char *flag, const char *arg, double *out) {
  char *end;
  double v = strtod(arg, &end), unit = 0;
  if (end != arg && !*end)
    unit = 1;
  else if (end != arg && !end[1])
    unit = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600 : 0;
  v *= unit;
  if (!unit || !(v > 0) || v > 1e7) {
    cli_usage_error("tune",
                    "--%s: expected a positive duration: seconds (120, 120s), minutes (10m) or "
                    "hours (1h), got '%s'",
                    flag, cli_quote(arg));
    return 0;
  }
  *out = v;
  return 1;
}

static int parse_seconds(const char *flag, const char *arg, double *out) {
  char *end;
  double v = strtod(arg, &end);
  if (*end || !*arg || !(v > 0) || v > 1e7) {
    cli_usage_error("tune", "--%s: expected a positive number of seconds, got '%s'", flag,
                    cli_quote(arg));
    return 0;
  }
  *out = v;
  return 1;
}

/* "model_fallback": why the cost model fell back to random proposals, or
 * null when it never did. */
static void add_fallback(cJSON *o, const char *note) {
  if (note[0])
    cJSON_AddStringToObject(o, "model_fallback", note);
  else
    cJSON_AddNullToObject(o, "model_fallback");
}

/* One workload's result: a row of the table, or an object of the JSON list
 * out (when not NULL); why (or "") why it ran no trial, from the plan on
 * its device (tune_device_refusal). */
static void emit_result(cJSON *out, const char *name, const tune_result *r, const char *why,
                        const cli_common *cc) {
  int errors = r->n_trials - r->by_outcome[OUT_OK];
  if (out) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(out, o);
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "key", r->key);
    cJSON_AddStringToObject(o, "template", r->template_name);
    cJSON_AddNumberToObject(o, "best_us", r->best_us);
    cJSON_AddNumberToObject(o, "best_tops", r->best_tops);
    cJSON_AddItemToObject(o, "best_config",
                          r->best_config[0] ? cJSON_Parse(r->best_config) : cJSON_CreateNull());
    cJSON_AddNumberToObject(o, "trials", r->n_trials);
    cJSON_AddNumberToObject(o, "resumed", r->n_resumed);
    cJSON *by = cJSON_AddObjectToObject(o, "outcomes");
    for (int oc = 0; oc < OUT_COUNT; oc++)
      cJSON_AddNumberToObject(by, outcome_name((outcome)oc), r->by_outcome[oc]);
    cJSON_AddNumberToObject(o, "wall_s", r->wall_s);
    cJSON_AddNumberToObject(o, "trials_per_s", r->trials_per_s);
    cJSON_AddBoolToObject(o, "stopped_early", r->stopped_early);
    add_fallback(o, r->model_fallback);
    if (why[0]) cJSON_AddStringToObject(o, "why", why);
  } else {
    printf("%-28s %-24s %10.2f %8.2f %8d %7d %8.1f  %s\n", name, r->template_name, r->best_us,
           r->best_tops, r->n_trials, errors, r->trials_per_s, r->key);
    if (r->best_config[0] && cc->verbose >= 0) printf("  best config %s\n", r->best_config);
    fflush(stdout);
  }
  if (r->best_us == 0 && cc->verbose >= 0) {
    if (why[0])
      fprintf(stderr, "convtune tune: %s\n", why);
    else
      fprintf(stderr, "convtune tune: %s: no config ran correctly in %d trials\n", name,
              r->n_trials);
  }
}

static void print_header(void) {
  printf("%-28s %-24s %10s %8s %8s %7s %8s  %s\n", "name", "template", "best us", "TOPS", "trials",
         "errors", "trial/s", "key"); /* 24: the longest template name, whole */
}

/* ---- several GPUs: the pool ------------------------------------------------ */

/* --devices: "all" (every GPU, counted in a child process) or a list of
 * distinct ordinals. */
static int parse_devices(const char *arg, int *devs, int *n, ct_err *err) {
  *n = 0;
  if (!strcmp(arg, "all")) {
    int count = runner_device_count(err);
    if (count < 0) return 0;
    if (count == 0) {
      ERR_SET(err, CT_ERR_NO_DEVICE, "--devices all: this machine has no CUDA device");
      return 0;
    }
    for (int i = 0; i < count && i < POOL_MAX_GPUS; i++) devs[(*n)++] = i;
    return 1;
  }
  const char *p = arg;
  for (;;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 0 || v > 1023 || (*end && *end != ',')) {
      ERR_SET(err, CT_ERR_INVALID_ARG,
              "--devices: expected 'all' or distinct device ordinals such as 0,1,3, got '%s'", arg);
      return 0;
    }
    for (int i = 0; i < *n; i++)
      if (devs[i] == v) {
        ERR_SET(err, CT_ERR_INVALID_ARG, "--devices: %ld is named twice in '%s'", v, arg);
        return 0;
      }
    if (*n == POOL_MAX_GPUS) {
      ERR_SET(err, CT_ERR_INVALID_ARG, "--devices: at most %d GPUs", POOL_MAX_GPUS);
      return 0;
    }
    devs[(*n)++] = (int)v;
    if (!*end) return 1;
    p = end + 1;
  }
}

typedef struct pool_ctx {
  int quiet;
  int verbose; /* every batch's line, with the run's time */
  int fallback_told;
  double last_s; /* the last progress line's time: one a second at most */
} pool_ctx;

static void on_pool_progress(void *user, const pool_progress *p) {
  pool_ctx *pc = user;
  if (pc->quiet) return;
  tell_fallback(0, &pc->fallback_told, p->task->model_fallback);
  if (!pc->verbose && !p->task->finished && p->elapsed_s - pc->last_s < 1.0) return;
  pc->last_s = p->elapsed_s;
  char best[64] = "best -", at[32] = "";
  if (p->task->best_us > 0) snprintf(best, sizeof best, "best %.2f us", p->task->best_us);
  if (pc->verbose) snprintf(at, sizeof at, " at %.2f s", p->elapsed_s);
  fprintf(stderr, "[tune gpu %d] %s %s %d/%d %s%s; gpu %.1f trials/s, all %.1f trials/s%s\n", p->gpu,
          p->task->name, p->task->template_name, p->task->done, p->task->total, best,
          p->task->finished ? " (done)" : "", p->gpu_trials_per_s,
          p->elapsed_s > 0 ? p->trials / p->elapsed_s : 0, at);
}

/* The selection's tasks (tune_plan's, per workload in order): tasks,
 * with each workload's first task and count, and the workloads' names. */
typedef struct plan {
  pool_task *tasks;
  int n_tasks;
  int *first, *count;
  char (*names)[300];
  const template_desc *tpl; /* the named template, or NULL */
} plan;

static void plan_free(plan *pl) {
  free(pl->tasks);
  free(pl->first);
  free(pl->count);
  free(pl->names);
}

/* EXIT_OK, or the exit code of a workload no template runs (skipped, with
 * a message, when a named template cannot run a set's layer). */
static int make_plan(const wlset *s, int named, const template_desc *tpl, plan *pl, cli_common *cc,
                     int verbose) {
  ct_err err = {0};
  memset(pl, 0, sizeof *pl);
  pl->tpl = tpl;
  pl->tasks = calloc((size_t)s->n_items * TUNE_MAX_TASKS + 1, sizeof *pl->tasks);
  pl->first = calloc((size_t)s->n_items + 1, sizeof *pl->first);
  pl->count = calloc((size_t)s->n_items + 1, sizeof *pl->count);
  pl->names = calloc((size_t)s->n_items + 1, sizeof *pl->names);
  if (!pl->tasks || !pl->first || !pl->count || !pl->names) {
    ERR_SET(&err, CT_ERR_NO_MEMORY, "out of memory");
    return cli_fail(cc, &err);
  }
  for (int i = 0; i < s->n_items; i++) {
    if (named)
      snprintf(pl->names[i], sizeof pl->names[i], "%s/%s", s->name, s->items[i].name);
    else
      snprintf(pl->names[i], sizeof pl->names[i], "%s", s->items[i].name);
    tune_task tt[TUNE_MAX_TASKS];
    int nt = 0;
    pl->first[i] = pl->n_tasks;
    if (workload_validate(&s->items[i].w, &err) ||
        tune_plan(pl->names[i], &s->items[i].w, tpl, NULL, tt, &nt, &err)) {
      if (err.status == CT_ERR_UNSUPPORTED && tpl && s->n_items > 1) {
        if (verbose >= 0) fprintf(stderr, "convtune tune: skipped %s\n", err.msg);
        memset(&err, 0, sizeof err);
        continue;
      }
      return verbose >= -1 ? cli_fail(cc, &err) : EXIT_FAIL;
    }
    for (int j = 0; j < nt; j++)
      pl->tasks[pl->n_tasks++] = (pool_task){.name = pl->names[i], .tpl = tt[j].tpl, .w = tt[j].w};
    pl->count[i] = nt;
  }
  return EXIT_OK;
}

/* Each workload's best of its tasks per kind (res: task i on kind k at
 * i * kinds + k), in the selection's order, as one GPU reports them; with
 * several kinds each row names its kind's device. */
static void report(const wlset *s, const plan *pl, const tune_result *res, int kinds,
                   const device *kind_dev, int json, cli_common *cc) {
  cJSON *out = json ? cJSON_CreateArray() : NULL;
  if (!json) print_header();
  for (int k = 0; k < kinds; k++)
    for (int i = 0; i < s->n_items; i++) {
      if (!pl->count[i]) continue;
      tune_result tmp[TUNE_MAX_TASKS], best;
      for (int j = 0; j < pl->count[i]; j++) tmp[j] = res[(size_t)(pl->first[i] + j) * kinds + k];
      tune_results_best(tmp, pl->count[i], &best);
      if (!best.key[0]) continue; /* not tuned: stopped, or its kind failed */
      char name[600];
      if (kinds > 1)
        snprintf(name, sizeof name, "%s @ %s (kind %d)", pl->names[i], kind_dev[k].name, k);
      else
        snprintf(name, sizeof name, "%s", pl->names[i]);
      char why[CT_ERRMSG_MAX] = "";
      if (best.best_us == 0 && best.n_trials == 0)
        tune_device_refusal(pl->names[i], &s->items[i].w, pl->tpl, &kind_dev[k].arch, why);
      emit_result(out, name, &best, why, cc);
    }
  if (json) {
    char *text = cJSON_Print(out);
    if (text) puts(text);
    free(text);
    cJSON_Delete(out);
  }
}

/* Tune the selection's workloads on the devices: their tasks go to the
 * pool, then each workload's best is reported. */
static int tune_on_devices(const char *db_path, const tune_opts *to, const int *devs, int n_devs,
                           const wlset *s, int named, const template_desc *tpl, int json,
                           cli_common *cc) {
  ct_err err = {0};
  plan pl;
  tune_result *res = NULL;
  tune_pool *p = NULL;
  int rc = make_plan(s, named, tpl, &pl, cc, cc->verbose);
  if (rc != EXIT_OK) goto done;
  if (tune_pool_open(db_path, to, devs, n_devs, &p, &err)) {
    if (err.status == CT_ERR_NO_DEVICE)
      fprintf(stderr, "convtune tune: %s\n", err.msg);
    else
      cli_fail(cc, &err);
    rc = EXIT_FAIL;
    goto done;
  }
  const int kinds = tune_pool_kinds(p);
  device kind_dev[POOL_MAX_GPUS];
  for (int g = 0; g < tune_pool_gpus(p); g++) {
    const device *d = tune_pool_device(p, g);
    kind_dev[tune_pool_kind(p, g)] = *d;
    if (cc->verbose >= 0)
      fprintf(stderr, "[tune] gpu %d: device %d, %s (%s, %d SMs), kind %d\n", g, d->ordinal,
              d->name, d->arch.name, d->arch.sm_count, tune_pool_kind(p, g));
  }
  if (cc->verbose >= 0)
    fprintf(stderr, "[tune] %d GPUs, %d tasks, database %s\n", tune_pool_gpus(p), pl.n_tasks,
            cli_path(db_path));
  if (!(res = calloc((size_t)(pl.n_tasks ? pl.n_tasks : 1) * kinds, sizeof *res))) {
    ERR_SET(&err, CT_ERR_NO_MEMORY, "out of memory");
    rc = cli_fail(cc, &err);
    goto done;
  }
  pool_ctx pc = {.quiet = cc->verbose < 0, .verbose = cc->verbose > 0};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ct_status st = tune_pool_run(p, pl.tasks, pl.n_tasks, on_pool_progress, &pc, res, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double wall = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  report(s, &pl, res, kinds, kind_dev, json, cc);
  if (cc->verbose >= 0) {
    long all = 0;
    char per[1024] = "";
    size_t len = 0;
    for (int g = 0; g < tune_pool_gpus(p); g++) {
      long tr;
      double busy;
      tune_pool_gpu_stats(p, g, &tr, &busy);
      all += tr;
      if (len < sizeof per)
        len += (size_t)snprintf(per + len, sizeof per - len, "%sgpu %d %ld trials %.1f/s",
                                g ? ", " : "", g, tr, wall > 0 ? tr / wall : 0);
    }
    fprintf(stderr, "[tune] %d GPUs: %ld trials in %.1f s, %.1f trials/s (%s)\n", tune_pool_gpus(p),
            all, wall, wall > 0 ? all / wall : 0, per);
  }
  if (st) rc = cli_fail(cc, &err);
done:
  tune_pool_close(p);
  free(res);
  plan_free(&pl);
  return rc;
}

/* --mpi: the ranks of mpirun, rank 0 owning the database and the tasks
 * (tuner/mpi.h). Only rank 0 prints: progress of its own GPUs, the results
 * and any rank's failure, once. */
static int tune_with_mpi(const mpi_opts *mo, const wlset *s, int named, const template_desc *tpl,
                         int json, cli_common *cc) {
  ct_err err = {0};
  plan pl;
  mpi_result mr;
  const int rank0 = tune_mpi_env_rank() == 0;
  int rc = make_plan(s, named, tpl, &pl, cc, rank0 ? cc->verbose : -2);
  if (rc != EXIT_OK) {
    plan_free(&pl);
    return rc;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (rank0 && cc->verbose >= 0 && proc_usable_cores() < online / 2)
    fprintf(stderr,
            "convtune tune: warning: rank 0 may run on %d of this host's %ld cores (the "
            "launcher's binding): its compilers share them; start mpirun with --bind-to none\n",
            proc_usable_cores(), online);
  pool_ctx pc = {.quiet = cc->verbose < 0 || !rank0, .verbose = cc->verbose > 0};
  ct_status st =
      tune_mpi_run(mo, pl.tasks, pl.n_tasks, rank0 ? on_pool_progress : NULL, &pc, &mr, &err);
  if (mr.rank == 0 && mr.results) {
    report(s, &pl, mr.results, mr.n_kinds, mr.kinds, json, cc);
    if (cc->verbose >= 0)
      fprintf(stderr, "[tune] %d ranks, %d GPUs: %ld trials in %.1f s, %.1f trials/s%s%s\n",
              mr.size, mr.gpus, mr.trials, mr.wall_s, mr.wall_s > 0 ? mr.trials / mr.wall_s : 0,
              mr.lost ? "; lost " : "", mr.lost ? mr.lost_msg : "");
  }
  if (st) {
    if (mr.quiet)
      rc = cli_exit_code(err.status);
    else if (err.status == CT_ERR_NO_DEVICE) {
      fprintf(stderr, "convtune tune: %s\n", err.msg);
      rc = EXIT_FAIL;
    } else
      rc = cli_fail(cc, &err);
  }
  mpi_result_free(&mr);
  plan_free(&pl);
  return rc;
}

/* ---- a model: one budget, the scheduler ---------------------------------- */

typedef struct model_ctx {
  int tty, quiet;
  int fallback_told; /* the cost model's fallback was reported */
} model_ctx;

static void fmt_total(double total_us, int n_unknown, char *buf, size_t size) {
  if (n_unknown)
    snprintf(buf, size, "total %.2f us + %d unknown", total_us, n_unknown);
  else
    snprintf(buf, size, "total %.2f us", total_us);
}

/* Per batch on a terminal (a live line), per round otherwise. */
static void on_round(void *user, const sched_progress *p) {
  model_ctx *mc = user;
  if (mc->quiet) return;
  if (p->batch) tell_fallback(mc->tty, &mc->fallback_told, p->batch->model_fallback);
  if (p->batch && !mc->tty) return;
  char total[96], elapsed[32], budget[40] = "";
  fmt_total(p->total_us, p->n_unknown, total, sizeof total);
  fmt_eta(p->elapsed_s, elapsed, sizeof elapsed);
  if (p->budget_s > 0) {
    char b[32];
    fmt_eta(p->budget_s, b, sizeof b);
    snprintf(budget, sizeof budget, "/%s", b);
  }
  if (p->batch) {
    const tune_progress *b = p->batch;
    double best =
        b->best_us > 0 && (p->best_us == 0 || b->best_us < p->best_us) ? b->best_us : p->best_us;
    int done = b->done - (b->total - p->round_trials);
    fprintf(stderr, "\r\033[K[tune] %s%s %s, round %d: %s x%d %d/%d best %.2f us", elapsed, budget,
            total, p->round, p->name, p->count, done, p->round_trials, best);
    fflush(stderr);
    return;
  }
  char best[64] = "best -", was[48] = "";
  if (p->best_us > 0) snprintf(best, sizeof best, "best %.2f us", p->best_us);
  if (p->prev_best_us > 0 && round(p->best_us * 100) < round(p->prev_best_us * 100))
    snprintf(was, sizeof was, " (was %.2f)", p->prev_best_us);
  const char *why = p->warmup ? " warm-up" : p->explore ? " explore" : "";
  fprintf(stderr, "%s[tune] %s%s %s, round %d%s: %s x%d (%s) %s%s, %d trials\n",
          mc->tty ? "\r\033[K" : "", elapsed, budget, total, p->round, why, p->name, p->count,
          p->template_name, best, was, p->n_trials);
  fflush(stderr);
}

static const char *end_name(const sched_result *r) {
  if (r->interrupted) return "interrupted";
  return r->end == SCHED_BUDGET_SPENT ? "budget" : r->end == SCHED_ALL_DONE ? "done" : "error";
}

static void print_model(const sched_result *r, const char *mname, int verbose) {
  printf("%-36s %5s %10s %8s %7s %6s %7s  %-24s %s\n", "name", "count", "best us", "TOPS", "trials",
         "stored", "rounds", "template", "state");
  for (int i = 0; i < r->n_workloads; i++) {
    const sched_wl *x = &r->workloads[i];
    if (!x->supported) {
      printf("%-36s %5d %10s %8s %7s %6s %7s  %-24s %s\n", x->name, x->count, "-", "-", "-", "-",
             "-", "-", "unsupported");
      continue;
    }
    char best[32] = "-", t[32] = "-";
    if (x->best_us > 0) {
      snprintf(best, sizeof best, "%.2f", x->best_us);
      snprintf(t, sizeof t, "%.2f", x->best_tops);
    }
    printf("%-36s %5d %10s %8s %7d %6d %7d  %-24s %s\n", x->name, x->count, best, t, x->n_trials,
           x->n_stored, x->rounds, x->template_name[0] ? x->template_name : "-",
           sched_state_name(x->state));
    if (verbose > 0 && x->best_config[0]) printf("  best config %s\n", x->best_config);
  }
  char total[96], start[96];
  fmt_total(r->total_us, r->n_unknown, total, sizeof total);
  fmt_total(r->start_total_us, r->start_unknown, start, sizeof start);
  printf("\nmodel %s: %s (count x best, %d unique workloads", mname, total, r->n_workloads);
  if (r->n_unsupported) printf(", %d unsupported and left out", r->n_unsupported);
  printf(")\nstarted from %s; %d trials in %d rounds, %.1f s (%.1f trials/s); ended: %s\n", start,
         r->n_trials, r->n_rounds, r->wall_s, r->trials_per_s, end_name(r));
  for (int i = 0; i < r->n_workloads; i++)
    if (!r->workloads[i].supported && verbose >= 0)
      fprintf(stderr, "convtune tune: %s is not tuned: %s\n", r->workloads[i].name,
              r->workloads[i].why);
}

static cJSON *model_json(const sched_result *r, const char *mname) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model", mname);
  cJSON_AddNumberToObject(o, "total_us", r->total_us);
  cJSON_AddNumberToObject(o, "unknown", r->n_unknown);
  cJSON_AddNumberToObject(o, "unsupported", r->n_unsupported);
  cJSON_AddNumberToObject(o, "start_total_us", r->start_total_us);
  cJSON_AddNumberToObject(o, "start_unknown", r->start_unknown);
  cJSON_AddNumberToObject(o, "budget_s", r->budget_s);
  cJSON_AddNumberToObject(o, "wall_s", r->wall_s);
  cJSON_AddNumberToObject(o, "trials", r->n_trials);
  cJSON_AddNumberToObject(o, "rounds", r->n_rounds);
  cJSON_AddNumberToObject(o, "trials_per_s", r->trials_per_s);
  cJSON_AddStringToObject(o, "ended", end_name(r));
  add_fallback(o, r->model_fallback);
  cJSON *ws = cJSON_AddArrayToObject(o, "workloads");
  for (int i = 0; i < r->n_workloads; i++) {
    const sched_wl *x = &r->workloads[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToArray(ws, j);
    cJSON_AddStringToObject(j, "name", x->name);
    cJSON_AddStringToObject(j, "key", x->key);
    cJSON_AddNumberToObject(j, "count", x->count);
    cJSON_AddBoolToObject(j, "supported", x->supported);
    if (!x->supported) {
      cJSON_AddStringToObject(j, "why", x->why);
      continue;
    }
    cJSON_AddNumberToObject(j, "best_us", x->best_us);
    cJSON_AddNumberToObject(j, "best_tops", x->best_tops);
    if (x->template_name[0])
      cJSON_AddStringToObject(j, "template", x->template_name);
    else
      cJSON_AddNullToObject(j, "template");
    cJSON_AddItemToObject(j, "best_config",
                          x->best_config[0] ? cJSON_Parse(x->best_config) : cJSON_CreateNull());
    cJSON_AddNumberToObject(j, "trials", x->n_trials);
    cJSON_AddNumberToObject(j, "stored", x->n_stored);
    cJSON_AddNumberToObject(j, "rounds", x->rounds);
    cJSON_AddNumberToObject(j, "errors", x->errors);
    cJSON_AddStringToObject(j, "state", sched_state_name(x->state));
    add_fallback(j, x->model_fallback);
  }
  /* the estimated total after each round, to plot and compare */
  cJSON *cv = cJSON_AddArrayToObject(o, "curve");
  for (int i = 0; i < r->n_points; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToArray(cv, j);
    cJSON_AddNumberToObject(j, "elapsed_s", r->curve[i].elapsed_s);
    cJSON_AddNumberToObject(j, "total_us", r->curve[i].total_us);
    cJSON_AddNumberToObject(j, "unknown", r->curve[i].n_unknown);
    cJSON_AddNumberToObject(j, "trials", r->curve[i].n_trials);
  }
  return o;
}

/* Tune s as one model: counts[i] occurrences of item i (NULL: 1 each);
 * n_fused of its nodes run a 1x1 conv fused before them (--model), said in
 * the opening line. */
static int tune_model(tuner *t, const wlset *s, const char *prefix, const int *counts, int n_fused,
                      int own_values, const template_desc *tpl, const sched_opts *so, int json,
                      const cli_common *cc) {
  sched_item *items = calloc(s->n_items + 1, sizeof *items);
  char(*names)[300] = calloc(s->n_items + 1, sizeof *names);
  if (!items || !names) {
    free(items);
    free(names);
    fprintf(stderr, "convtune tune: out of memory\n");
    return EXIT_FAIL;
  }
  for (int i = 0; i < s->n_items; i++) {
    if (prefix)
      snprintf(names[i], sizeof names[i], "%s/%s", prefix, s->items[i].name);
    else
      snprintf(names[i], sizeof names[i], "%s", s->items[i].name);
    items[i] = (sched_item){.name = names[i], .w = s->items[i].w, .count = counts ? counts[i] : 1};
  }
  const char *mname = prefix ? prefix : s->items[0].name;
  if (cc->verbose >= 0) {
    int convs = 0;
    for (int i = 0; i < s->n_items; i++) convs += items[i].count;
    char budget[48] = "no budget";
    if (so->budget_s > 0) {
      char b[32];
      fmt_eta(so->budget_s, b, sizeof b);
      snprintf(budget, sizeof budget, "budget %s", b);
    }
    char fused[96] = "";
    if (n_fused > 0)
      snprintf(fused, sizeof fused, "; %d pair%s of convs tuned fused and apart (--fuse)", n_fused,
               n_fused == 1 ? "" : "s");
    fprintf(stderr, "[tune] model %s: %d workloads (%d occurrences%s), %s%s\n", cli_path(mname),
            s->n_items, convs, fused, budget,
            own_values ? "; trials use the model's epilogue values" : "");
  }
  model_ctx mc = {.tty = isatty(2), .quiet = cc->verbose < 0};
  sched_result *r = NULL;
  ct_err err = {0};
  ct_status st = sched_run(t, mname, items, s->n_items, tpl, so, on_round, &mc, &r, &err);
  int rc = EXIT_OK;
  if (r) {
    if (json) {
      cJSON *o = model_json(r, mname);
      char *text = cJSON_Print(o);
      if (text) puts(text);
      free(text);
      cJSON_Delete(o);
    } else {
      print_model(r, mname, cc->verbose);
    }
    if (!st && r->n_unsupported == r->n_workloads) {
      if (cc->verbose >= 0)
        fprintf(stderr, "convtune tune: no workload of %s can be tuned%s\n", cli_path(mname),
                tpl ? " with this template" : "");
      rc = EXIT_FAIL;
    }
  }
  if (st) rc = cli_fail(cc, &err);
  sched_result_free(r);
  free(items);
  free(names);
  return rc;
}

/* ---- the chain refinement (--refine-time): bench/model_bench.h, mbench_refine ---- */

typedef struct refine_job {
  const char *db_path;
  const cli_wl *sel;
  int device;
  uint64_t seed;
  double budget_s;
  int verbose;
} refine_job;

/* What the refinement's process reports: its outcome and figures. */
typedef struct refine_msg {
  int status; /* ct_status */
  int n_keys, n_compared, n_picks;
  double base_us, chain_us, wall_s;
  char msg[CT_ERRMSG_MAX];
} refine_msg;

static void refine_log(void *user, const char *line) {
  (void)user;
  fprintf(stderr, "[refine] %s\n", line);
}

/* Store r's picks on the database: dev's picks of the chain's workloads
 * replaced by them, one transaction. */
static ct_status store_picks(const char *db_path, const model *m, const mbench_refined *r,
                             ct_err *err) {
  db *d = NULL;
  ct_status st = db_open(db_path, 0, &d, err);
  db_pick *picks = calloc((size_t)(r->n_picks ? r->n_picks : 1), sizeof *picks);
  const char **keys = calloc((size_t)(r->n_keys ? r->n_keys : 1), sizeof *keys);
  if (!st && (!picks || !keys)) st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  if (!st) {
    db_device dev;
    memset(&dev, 0, sizeof dev);
    snprintf(dev.name, sizeof dev.name, "%s", r->device);
    dev.cc_major = r->cc_major;
    dev.cc_minor = r->cc_minor;
    char session[40];
    snprintf(session, sizeof session, "refine-%lld-%d", (long long)time(NULL), (int)getpid());
    for (int i = 0; i < r->n_keys; i++) keys[i] = r->keys[i];
    for (int i = 0; i < r->n_picks; i++) {
      db_pick *p = &picks[i];
      snprintf(p->workload_key, sizeof p->workload_key, "%s", r->picks[i].key);
      snprintf(p->trial_uid, sizeof p->trial_uid, "%s", r->picks[i].uid);
      p->chain_us = r->chain_us;
      p->base_us = r->base_us;
      snprintf(p->model, sizeof p->model, "%.200s, batch %d", cli_path(m->path), m->batch);
      snprintf(p->session, sizeof p->session, "%s", session);
      p->timestamp = (double)time(NULL);
    }
    st = db_set_picks(d, &dev, keys, r->n_keys, picks, r->n_picks, err);
  }
  free(picks);
  free(keys);
  db_close(d);
  return st;
}

/* The refinement's process: the model again (unfused, in the tuned
 * layout), mbench_refine, the picks stored, one refine_msg back. */
static void refine_child(int fd, void *arg) {
  const refine_job *j = arg;
  refine_msg m;
  memset(&m, 0, sizeof m);
  ct_err err = {0};
  model *md = NULL;
  cli_wl ms = *j->sel;
  ms.fuse = 0;
  ms.loaded = NULL;
  bench_opts bo;
  bench_opts_default(&bo); /* bench --model's timing */
  bo.db_path = j->db_path;
  bo.device = j->device;
  bo.quiet = 1;
  bo.seed = j->seed;
  ct_layout l = CT_LAYOUT_NHWC;
  if (ms.layout) {
    l = !strcmp(ms.layout, "nhwc") || !strcmp(ms.layout, "ndhwc") ? CT_LAYOUT_NHWC
                                                                  : CT_LAYOUT_NCHW4C;
    /* packed layouts as bench --model runs them: read plain, packed per node */
    if (l == CT_LAYOUT_NCHW4C) ms.layout = "nchw";
  }
  bo.layout = l;
  mbench_refined r;
  memset(&r, 0, sizeof r);
  ct_status st = cli_wl_model(&ms, &md, &err);
  if (!st) {
    mbench_refine_opts ro;
    mbench_refine_opts_default(&ro);
    ro.budget_s = j->budget_s;
    if (j->verbose > 0) ro.log = refine_log;
    st = mbench_refine(&bo, md, &ro, &r, &err);
  }
  if (!st) st = store_picks(j->db_path, md, &r, &err);
  m.status = st;
  m.n_keys = r.n_keys;
  m.n_compared = r.n_compared;
  m.n_picks = r.n_picks;
  m.base_us = r.base_us;
  m.chain_us = r.chain_us;
  m.wall_s = r.wall_s;
  if (st) snprintf(m.msg, sizeof m.msg, "%s", err.msg);
  proc_send_all(fd, &m, sizeof m);
  mbench_refined_free(&r);
  model_free(md);
  _exit(0);
}

/* Run the refinement in a process of its own (a fault there costs the
 * refinement, not the tuning, whose records are committed) and report. */
static int refine_chain(const refine_job *job, const cli_common *cc) {
  if (cc->verbose >= 0) {
    char b[32];
    fmt_eta(job->budget_s, b, sizeof b);
    fprintf(stderr,
            "[tune] the chain: each workload's fastest configs compared by the time of %s's "
            "chain, at most %s\n",
            cli_path(job->sel->model), b);
  }
  pid_t pid = -1;
  int fd = -1;
  ct_err err = {0};
  if (proc_spawn("the chain refinement", refine_child, (void *)job, &pid, &fd, &err)) {
    fprintf(stderr, "convtune tune: %s\n", err.msg);
    return EXIT_FAIL;
  }
  /* the budget bounds its comparisons; its start (the model, the kernels'
   * compiles) and the last comparisons get 10 minutes more */
  const double deadline = proc_now_s() + job->budget_s + 600;
  refine_msg m;
  memset(&m, 0, sizeof m);
  int got = 0, why = 0; /* why: 1 interrupted, 2 too long */
  while (!got && !why) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, 500);
    if (stop_requested)
      why = 1;
    else if (proc_now_s() > deadline)
      why = 2;
    else if (n > 0)
      got = proc_recv_all(fd, &m, sizeof m, deadline) == PROC_OK ? 1 : -1;
  }
  if (why || got < 0) kill(pid, SIGKILL);
  int ws = -1;
  waitpid(pid, &ws, 0);
  close(fd);
  if (why == 1) {
    if (cc->verbose >= 0) fprintf(stderr, "[tune] the chain refinement interrupted: no picks\n");
    return EXIT_OK;
  }
  if (why == 2 || got < 0) {
    char how[64];
    proc_describe_exit(ws, how, sizeof how);
    fprintf(stderr, "convtune tune: the chain refinement %s (%s): no picks stored\n",
            why == 2 ? "ran out of time" : "died", how);
    return EXIT_FAIL;
  }
  if (m.status) {
    fprintf(stderr, "convtune tune: the chain refinement: %s\n", m.msg);
    return EXIT_FAIL;
  }
  if (cc->verbose >= 0)
    fprintf(stderr,
            "[tune] the chain: %.2f us with each workload's fastest, %.2f us with %d pick%s "
            "(%d workloads, %d comparisons, %.0f s)\n",
            m.base_us, m.chain_us, m.n_picks, m.n_picks == 1 ? "" : "s", m.n_keys, m.n_compared,
            m.wall_s);
  return EXIT_OK;
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
    O_JSON,
    O_AS_MODEL,
    O_ROUND_TRIALS,
    O_DEVICES,
    O_MPI,
    O_RANK_TIMEOUT,
    O_BUILDERS,
    O_REFINE_TIME
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
                            {"as-model", no_argument, 0, O_AS_MODEL},
                            {"round-trials", required_argument, 0, O_ROUND_TRIALS},
                            {"devices", required_argument, 0, O_DEVICES},
                            {"mpi", no_argument, 0, O_MPI},
                            {"rank-timeout", required_argument, 0, O_RANK_TIMEOUT},
                            {"builders", required_argument, 0, O_BUILDERS},
                            {"refine-time", required_argument, 0, O_REFINE_TIME},
                            {"help", no_argument, 0, 'h'}};
  int n_opts = 19;
  for (const struct option *o = cli_wl_options; o->name; o++) opts[n_opts++] = *o;
  cli_common cc = {0};
  cli_wl sel = {0};
  quant_table values = {0}; /* --model: its convs' epilogue values, for the runner */
  const char *db_path = "convtune.db", *tuner_kind = "xgb", *tpl_name = NULL;
  tune_opts to;
  tune_opts_default(&to);
  to.stop = &stop_requested;
  long v;
  int json = 0, opt, rc = EXIT_OK, as_model = 0, round_trials = 0, have_device = 0;
  const char *devices_arg = NULL;
  int mpi = 0, refine_given = 0;
  double rank_timeout = 60, refine_time = 60;
  /* Under mpirun every rank parses the same arguments: only rank 0 says
   * what is wrong with them, once for the run. */
  int saved_stderr = -1;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--mpi") && tune_mpi_env_rank() != 0) {
      fflush(stderr);
      saved_stderr = dup(2);
      int null_fd = open("/dev/null", O_WRONLY);
      if (null_fd >= 0) {
        dup2(null_fd, 2);
        close(null_fd);
      }
      break;
    }
  optind = 1;
  opterr = 0;
  while ((opt = cli_getopt("tune", argc, argv, opts)) != -1) {
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
      if (!parse_duration("time-budget", optarg, &to.time_budget_s)) goto usage;
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
      have_device = 1;
      break;
    case O_DEVICES:
      devices_arg = optarg;
      break;
    case O_MPI:
      mpi = 1;
      break;
    case O_RANK_TIMEOUT:
      if (!parse_seconds("rank-timeout", optarg, &rank_timeout)) goto usage;
      break;
    case O_BUILDERS:
      if (!cli_parse_long("tune", "builders", optarg, 1, 256, &v)) goto usage;
      to.n_builders = (int)v;
      break;
    case O_REFINE_TIME:
      if (!strcmp(optarg, "0"))
        refine_time = 0;
      else if (!parse_duration("refine-time", optarg, &refine_time))
        goto usage;
      refine_given = 1;
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
    case O_AS_MODEL:
      as_model = 1;
      break;
    case O_ROUND_TRIALS:
      if (!cli_parse_long("tune", "round-trials", optarg, 1, 100000, &v)) goto usage;
      round_trials = (int)v;
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
    cli_usage_error("tune", "--tuner: expected xgb, random, grid or ga, got '%s'",
                    cli_quote(tuner_kind));
    goto usage;
  }
  uint64_t seed = to.runner.seed;
  search_opts_default(&to.search, kinds[k]);
  to.search.seed = seed;
  const template_desc *tpl = NULL;
  if (tpl_name && !(tpl = template_find(tpl_name))) {
    cli_usage_error("tune", "--template: no template named '%s'", cli_quote(tpl_name));
    goto usage;
  }
  /* A model: the scheduler takes the budget, the trial cap and early
   * stopping per workload over the whole run; its rounds ask the tuner for
   * trials without limits of its own. */
  const int model_mode = as_model || sel.model;
  if (round_trials && !model_mode) {
    cli_usage_error("tune", "--round-trials: only for a model (--model, or --as-model)");
    goto usage;
  }
  if (refine_given && !sel.model) {
    cli_usage_error("tune", "--refine-time: only with --model (the chain is a model's)");
    goto usage;
  }
  if (!mpi && rank_timeout != 60) {
    cli_usage_error("tune", "--rank-timeout: only with --mpi");
    goto usage;
  }
  if (mpi && have_device) {
    cli_usage_error("tune", "--mpi and --device: give a rank its GPUs with --devices");
    goto usage;
  }
  if (mpi && model_mode) {
    cli_usage_error("tune", "--mpi: a model's scheduler (--model, --as-model) tunes on one host; "
                            "tune the set or file without --as-model across the ranks");
    goto usage;
  }
  if (devices_arg && have_device) {
    cli_usage_error("tune", "--device and --devices: give one of them");
    goto usage;
  }
  if (devices_arg && model_mode) {
    cli_usage_error("tune", "--devices: a model's scheduler (--model, --as-model) tunes on one "
                            "GPU; tune the set or file without --as-model on several");
    goto usage;
  }
  int devs[POOL_MAX_GPUS], n_devs = 0;
  if (devices_arg) {
    ct_err derr = {0};
    if (!parse_devices(devices_arg, devs, &n_devs, &derr)) {
      if (derr.status == CT_ERR_INVALID_ARG) {
        cli_usage_error("tune", "%s", derr.msg);
        goto usage;
      }
      fprintf(stderr, "convtune tune: %s\n", derr.msg);
      cli_wl_free(&sel);
      return EXIT_FAIL;
    }
  }
  sched_opts so;
  sched_opts_default(&so);
  if (model_mode) {
    so.budget_s = to.time_budget_s;
    so.max_trials = to.n_trials;
    so.early_stopping = to.early_stopping;
    so.round_trials = round_trials;
    so.seed = seed;
    so.stop = &stop_requested;
    /* whole waves of the compile pool (sched.h) */
    long cores = to.n_builders > 0 ? to.n_builders : proc_usable_cores();
    so.round_multiple = cores < 1 ? 1 : cores > so.max_round ? so.max_round : (int)cores;
    to.time_budget_s = 0;
    to.early_stopping = 0;
  }

  ct_err err = {0};
  wlset *s = NULL;
  tuner *t = NULL;
  sel.fuse_template = tpl ? tpl->name : NULL; /* --model: pairs the named template runs */
  sel.fuse_both = !tpl; /* --fuse: each pair both ways, for bench --fuse to decide by */
  sel.keep_model = 1; /* --model: its trials run with its own epilogue values */
  if (cli_wl_load(&sel, default_workload, &s, &err)) {
    rc = cli_fail(&cc, &err);
    goto done;
  }
  if (sel.loaded) {
    if (model_quant_table(sel.loaded, &values, &err)) {
      rc = cli_fail(&cc, &err);
      goto done;
    }
    to.runner.values = &values;
  }
  if (saved_stderr >= 0) { /* the arguments are good: a rank's own failures show again */
    dup2(saved_stderr, 2);
    close(saved_stderr);
  }
  if (devices_arg || mpi) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (mpi) {
      mpi_opts mo = {.db_path = db_path,
                     .tune = to,
                     .devices = devs,
                     .n_devices = n_devs,
                     .rank_timeout_s = rank_timeout};
      rc = tune_with_mpi(&mo, s, sel.set || sel.file, tpl, json, &cc);
    } else {
      rc = tune_on_devices(db_path, &to, devs, n_devs, s, sel.set || sel.file, tpl, json, &cc);
    }
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
            dev->arch.sm_count, cli_path(db_path), kinds[k]);
  if (model_mode) {
    rc = tune_model(t, s, sel.set || sel.file || sel.model ? s->name : NULL, sel.counts,
                    sel.n_fused, values.n > 0, tpl, &so, json, &cc);
    if (rc == EXIT_OK && sel.model && refine_time > 0 && !stop_requested) {
      if (sel.n_fused > 0) {
        if (cc.verbose >= 0)
          fprintf(stderr, "[tune] no chain refinement: it runs the model unfused (--fuse)\n");
      } else {
        /* the GPU to the refinement: the tuner's workers end first */
        tuner_close(t);
        t = NULL;
        refine_job job = {db_path, &sel, to.runner.device, seed, refine_time, cc.verbose};
        rc = refine_chain(&job, &cc);
      }
    }
    goto done;
  }
  progress_ctx pc = {.tty = isatty(2), .quiet = cc.verbose < 0};
  cJSON *out = json ? cJSON_CreateArray() : NULL;
  if (!json) print_header();
  for (int i = 0; i < s->n_items; i++) {
    char name[300];
    if (sel.set || sel.file)
      snprintf(name, sizeof name, "%s/%s", s->name, s->items[i].name);
    else
      snprintf(name, sizeof name, "%s", s->items[i].name);
    if (stop_requested) break;
    tune_result r;
    if (tuner_tune(t, name, &s->items[i].w, tpl, on_progress, &pc, &r, &err)) {
      char why[CT_ERRMSG_MAX];
      if (err.status == CT_ERR_UNSUPPORTED && s->n_items > 1 &&
          (tpl || tune_device_refusal(name, &s->items[i].w, tpl, &tuner_device(t)->arch, why))) {
        /* a named template tunes the layers of a set or file that it can
         * run, and a device those that some template has a config for there */
        if (cc.verbose >= 0) fprintf(stderr, "convtune tune: skipped %s\n", err.msg);
        memset(&err, 0, sizeof err);
        continue;
      }
      rc = cli_fail(&cc, &err);
      break;
    }
    emit_result(out, name, &r, "", &cc);
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
  quant_table_free(&values); /* before the model whose values it borrows */
  cli_wl_free(&sel);
  return rc;
usage:
  cli_wl_free(&sel);
  return EXIT_USAGE;
}
