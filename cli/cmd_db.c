/*
 * cmd_db.c: the commands that read or move the database: `query` (the best
 * config of a workload per device), `list` (every tuned workload with its
 * best), `history` (the tuning curve as CSV, or JSON), `export` and
 * `import` (JSON lines). Each takes only its own flags (db_cmds): --json
 * only where it prints JSON, --output only for export. All but import open
 * the database read-only: they never create, migrate or convert it. Every argument is checked
 * before the database is opened, so a usage error changes nothing on disk. export never writes over
 * the database (by any path to it), and writes its output to a temporary file beside it, renamed
 * into place only when complete.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/outfile.h"
#include "db/db.h"

typedef struct db_args {
  const char *cmd;
  const char *db_path;
  const char *output;
  int json;
  int picks; /* list --picks */
  cli_common cc;
  cli_wl sel;
  int n_pos;
  const char *pos[2];
  int has_wl;    /* a workload was given (query, history, export) */
  ct_workload w; /* that workload, parsed before the database is opened */
  FILE *in;      /* import: the file to read, opened before the database */
  char *in_buf;  /* import of a database: its export in memory, which in reads */
} db_args;

/* What each command takes besides -h, -v and -q: a flag that is not its
 * command's is refused (exit 2), never ignored. */
enum { TAKES_JSON = 1, TAKES_OUTPUT = 2, TAKES_WORKLOAD = 4, TAKES_PICKS = 8 };

static const struct db_cmd {
  const char *name;
  int takes;
  const char *usage;
} db_cmds[] = {
    {"query", TAKES_JSON | TAKES_WORKLOAD,
     "usage: convtune query [options] WORKLOAD\n"
     "Print the best config of a workload on each device it was tuned on, with its\n"
     "median time, TOPS and the number of trials.\n"
     "\n"
     "Options:\n"
     "  --db PATH              the database (default convtune.db), opened read-only\n"
     "  --json                 print JSON\n"
     "  -v, -q                 more or less output\n"
     "  -h, --help             this text\n"
     "\n"},
    {"list", TAKES_JSON | TAKES_PICKS,
     "usage: convtune list [options]\n"
     "Print every tuned workload with its best time per device and template.\n"
     "\n"
     "Options:\n"
     "  --db PATH              the database (default convtune.db), opened read-only\n"
     "  --picks                print the picks instead: per workload and device, the config\n"
     "                         that tuning a model chose by the time of its chain (served\n"
     "                         before the fastest record), its time alone, and the chain's\n"
     "                         time with the picks and with the fastest records\n"
     "  --json                 print JSON\n"
     "  -v, -q                 more or less output\n"
     "  -h, --help             this text\n"},
    {"history", TAKES_JSON | TAKES_WORKLOAD,
     "usage: convtune history [options] WORKLOAD\n"
     "Print the tuning curve as CSV: every trial in order with the best so far\n"
     "(per device and template).\n"
     "\n"
     "Options:\n"
     "  --db PATH              the database (default convtune.db), opened read-only\n"
     "  --json                 print JSON (a list of the same rows) instead of CSV\n"
     "  -v, -q                 more or less output\n"
     "  -h, --help             this text\n"
     "\n"},
    {"export", TAKES_OUTPUT | TAKES_WORKLOAD,
     "usage: convtune export [options] [WORKLOAD]\n"
     "Write every trial (of one workload, when given) as JSON lines (default: stdout),\n"
     "then the picks of models' tunings (per workload and device, the trial that made\n"
     "a model's chain fastest), each a line of format 2 after the trials.\n"
     "\n"
     "Options:\n"
     "  --db PATH              the database (default convtune.db), opened read-only\n"
     "  --output FILE          write to FILE: whole or not at all, never over the database\n"
     "  -v, -q                 more or less output (-q: no counts on stderr)\n"
     "  -h, --help             this text\n"
     "\n"},
    {"import", 0,
     "usage: convtune import [options] FILE\n"
     "Read trials into the database from JSON lines (FILE, or - for stdin) or from\n"
     "another convtune database (FILE, e.g. one tuned on another host); trials already\n"
     "there are skipped and every trial keeps its uid. Two different trials of one\n"
     "uid, in FILE or between FILE and the database, or a trial whose template is not\n"
     "convtune's or not of its workload's op, is a conflict: the import is refused\n"
     "whole, naming the line (of the database's export, for a database).\n"
     "A pick (of a model's tuning) must name an OK trial of its workload, in FILE or in\n"
     "the database. It replaces the database's pick of that workload and device only\n"
     "when it is newer, as a later tuning's would; one as old or older is counted as\n"
     "not taken. Two different picks of one workload and device in FILE are a conflict.\n"
     "\n"
     "Options:\n"
     "  --db PATH              the database (default convtune.db), created when missing\n"
     "  -v, -q                 more or less output\n"
     "  -h, --help             this text\n"},
};

static const struct db_cmd *cmd_of(const char *name) {
  for (size_t i = 0; i < sizeof db_cmds / sizeof db_cmds[0]; i++)
    if (!strcmp(db_cmds[i].name, name)) return &db_cmds[i];
  return &db_cmds[0];
}

/* Parse the flags a->cmd takes; returns -1 to go on, else an exit code. */
static int parse_args(int argc, char **argv, db_args *a) {
  enum { O_DB = 1, O_JSON, O_OUTPUT, O_PICKS };
  const struct db_cmd *c = cmd_of(a->cmd);
  struct option opts[40] = {{"db", required_argument, 0, O_DB}, {"help", no_argument, 0, 'h'}};
  int n_opts = 2, opt;
  if (c->takes & TAKES_JSON) opts[n_opts++] = (struct option){"json", no_argument, 0, O_JSON};
  if (c->takes & TAKES_OUTPUT)
    opts[n_opts++] = (struct option){"output", required_argument, 0, O_OUTPUT};
  if (c->takes & TAKES_PICKS) opts[n_opts++] = (struct option){"picks", no_argument, 0, O_PICKS};
  if (c->takes & TAKES_WORKLOAD)
    for (const struct option *o = cli_wl_options; o->name; o++) opts[n_opts++] = *o;
  a->db_path = "convtune.db";
  optind = 1;
  opterr = 0;
  while ((opt = cli_getopt(a->cmd, argc, argv, opts)) != -1) {
    if ((c->takes & TAKES_WORKLOAD) && cli_wl_option(&a->sel, opt, optarg)) continue;
    switch (opt) {
    case O_DB:
      a->db_path = optarg;
      break;
    case O_JSON:
      a->json = 1;
      break;
    case O_OUTPUT:
      a->output = optarg;
      break;
    case O_PICKS:
      a->picks = 1;
      break;
    case 'h':
      /* with a workload: the usage, then the workload-selection help */
      if (c->takes & TAKES_WORKLOAD) return cli_common_option(a->cmd, opt, argv, c->usage, &a->cc);
      fputs(c->usage, stdout);
      return EXIT_OK;
    default: {
      int code = cli_common_option(a->cmd, opt, argv, c->usage, &a->cc);
      if (code != CLI_GO_ON) return code;
    }
    }
  }
  while (optind < argc) {
    if (a->n_pos == 2)
      return cli_usage_error(a->cmd, "unexpected argument '%s'", cli_quote(argv[optind]));
    a->pos[a->n_pos++] = argv[optind++];
  }
  return -1;
}

/* The one workload of query, history and export (optional there) into
 * a->w, before the database is opened. Returns -1 to go on, else an exit code. */
static int parse_workload(db_args *a, int required) {
  if (a->n_pos > 1)
    return cli_usage_error(a->cmd, "unexpected argument '%s'", cli_quote(a->pos[1]));
  if (!required && !a->n_pos && !a->sel.flags && !a->sel.file && !a->sel.set) return -1;
  if (a->n_pos) a->sel.positional = a->pos[0];
  wlset *s = NULL;
  ct_err err = {0};
  if (cli_wl_load(&a->sel, NULL, &s, &err)) return cli_fail(&a->cc, &err);
  if (s->n_items != 1) {
    wlset_free(s);
    return cli_usage_error(a->cmd, "give one workload (a key, JSON or flags), not a set");
  }
  a->w = s->items[0].w;
  a->has_wl = 1;
  wlset_free(s);
  return -1;
}

/* --json's document on stdout, and freed. */
static void print_json(cJSON *doc) {
  char *text = cJSON_Print(doc);
  if (text) puts(text);
  free(text);
  cJSON_Delete(doc);
}

/* The key a->w was tuned under: as given, or (for a plain layout) the
 * packed form the dp4a templates tune. */
static void resolve_key(const db_args *a, db *d, char *key) {
  workload_key(&a->w, key, CT_KEY_MAX);
  trial *tr = NULL;
  int n = 0;
  /* a plain workload is tuned packed; an nhwc one only as itself */
  if (a->w.layout == CT_LAYOUT_NCHW &&
      db_trials(d, key, NULL, NULL, NULL, &tr, &n, NULL) == CT_OK && n == 0) {
    ct_workload packed;
    workload_packed(&a->w, &packed);
    workload_key(&packed, key, CT_KEY_MAX);
  }
  trials_free(tr, n);
}

static int open_db(db_args *a, int readonly, db **d) {
  ct_err err = {0};
  ct_status st = db_open(a->db_path, readonly, d, &err);
  if (st == CT_ERR_NOT_FOUND) {
    fprintf(stderr, "convtune %s: no database at %s (tune first, or give --db)\n", a->cmd,
            cli_path(a->db_path));
    return EXIT_USAGE;
  }
  if (st) return cli_fail(&a->cc, &err);
  return -1;
}

/* Per device and template: the best OK trial and the counts. */
typedef struct best_row {
  const trial *best;
  const trial *first;
  int n, n_ok;
} best_row;

static int same_group(const trial *a, const trial *b) {
  return !strcmp(a->device.name, b->device.name) && a->device.cc_major == b->device.cc_major &&
         a->device.cc_minor == b->device.cc_minor && !strcmp(a->template_name, b->template_name);
}

static double tops_of(const char *key, double us) {
  ct_workload w;
  if (us <= 0 || workload_from_key(key, &w, NULL)) return 0;
  return (double)workload_ops(&w) / (us * 1e-6) / 1e12;
}

static int cmd_query(db_args *a, db *d) {
  char key[CT_KEY_MAX];
  ct_err err = {0};
  resolve_key(a, d, key);
  trial *tr = NULL;
  int n = 0;
  if (db_trials(d, key, NULL, NULL, NULL, &tr, &n, &err)) return cli_fail(&a->cc, &err);
  if (n == 0) {
    fprintf(stderr, "convtune query: no trials of %s in %s\n", key, cli_path(a->db_path));
    return EXIT_FAIL;
  }
  best_row rows[64];
  int n_rows = 0;
  for (int i = 0; i < n; i++) {
    int g = 0;
    while (g < n_rows && !same_group(rows[g].first, &tr[i])) g++;
    if (g == n_rows) {
      if (n_rows == 64) continue;
      rows[n_rows++] = (best_row){.first = &tr[i]};
    }
    rows[g].n++;
    if (tr[i].outcome == OUT_OK) {
      rows[g].n_ok++;
      if (!rows[g].best || tr[i].median_us < rows[g].best->median_us) rows[g].best = &tr[i];
    }
  }
  cJSON *list = a->json ? cJSON_CreateArray() : NULL;
  if (!a->json) printf("workload %s\n", key);
  for (int g = 0; g < n_rows; g++) {
    const trial *b = rows[g].best, *f = rows[g].first;
    if (a->json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(list, o);
      cJSON_AddStringToObject(o, "key", key);
      cJSON_AddStringToObject(o, "device", f->device.name);
      char cc[16];
      snprintf(cc, sizeof cc, "%d.%d", f->device.cc_major, f->device.cc_minor);
      cJSON_AddStringToObject(o, "compute_capability", cc);
      cJSON_AddStringToObject(o, "template", f->template_name);
      cJSON_AddNumberToObject(o, "trials", rows[g].n);
      cJSON_AddNumberToObject(o, "ok", rows[g].n_ok);
      if (b) {
        cJSON_AddStringToObject(o, "template_version", b->template_version);
        cJSON_AddNumberToObject(o, "median_us", b->median_us);
        cJSON_AddNumberToObject(o, "tops", tops_of(key, b->median_us));
        cJSON_AddItemToObject(o, "config", cJSON_Parse(b->config_json));
        cJSON_AddNumberToObject(o, "config_index", (double)b->config_index);
      } else {
        cJSON_AddNullToObject(o, "median_us");
      }
    } else {
      printf("  %s (sm_%d%d), %s: ", f->device.name, f->device.cc_major, f->device.cc_minor,
             f->template_name);
      if (b)
        printf("best %.2f us (%.2f TOPS) of %d trials (%d OK)\n    config %s\n", b->median_us,
               tops_of(key, b->median_us), rows[g].n, rows[g].n_ok, b->config_json);
      else
        printf("no correct config in %d trials\n", rows[g].n);
    }
  }
  if (a->json) print_json(list);
  trials_free(tr, n);
  return EXIT_OK;
}

/* list --picks */
static int list_picks(db_args *a, db *d) {
  ct_err err = {0};
  db_pick_row *rows = NULL;
  int n = 0;
  if (db_list_picks(d, &rows, &n, &err)) return cli_fail(&a->cc, &err);
  cJSON *list = a->json ? cJSON_CreateArray() : NULL;
  if (!a->json)
    printf("%-20s %-24s %9s %9s %9s  %-32s %s\n", "device", "template", "alone us", "chain us",
           "base us", "model", "key");
  for (int i = 0; i < n; i++) {
    const db_pick_row *r = &rows[i];
    if (a->json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(list, o);
      cJSON_AddStringToObject(o, "key", r->p.workload_key);
      cJSON_AddStringToObject(o, "device", r->device_name);
      char cc[16];
      snprintf(cc, sizeof cc, "%d.%d", r->cc_major, r->cc_minor);
      cJSON_AddStringToObject(o, "compute_capability", cc);
      cJSON_AddStringToObject(o, "template", r->template_name);
      cJSON *cfg = cJSON_Parse(r->config_json);
      cJSON_AddItemToObject(o, "config", cfg ? cfg : cJSON_CreateString(r->config_json));
      cJSON_AddStringToObject(o, "trial_uid", r->p.trial_uid);
      cJSON_AddNumberToObject(o, "alone_us", r->alone_us);
      cJSON_AddNumberToObject(o, "chain_us", r->p.chain_us);
      cJSON_AddNumberToObject(o, "base_us", r->p.base_us);
      cJSON_AddStringToObject(o, "model", r->p.model);
      cJSON_AddStringToObject(o, "session", r->p.session);
      cJSON_AddNumberToObject(o, "timestamp", r->p.timestamp);
    } else {
      printf("%-20.20s %-24s %9.2f %9.2f %9.2f  %-32.32s %s\n", r->device_name, r->template_name,
             r->alone_us, r->p.chain_us, r->p.base_us, r->p.model, r->p.workload_key);
    }
  }
  if (a->json) print_json(list);
  free(rows);
  return EXIT_OK;
}

static int cmd_list(db_args *a, db *d) {
  if (a->picks) return list_picks(a, d);
  ct_err err = {0};
  db_summary *rows = NULL;
  int n = 0;
  if (db_list(d, &rows, &n, &err)) return cli_fail(&a->cc, &err);
  cJSON *list = a->json ? cJSON_CreateArray() : NULL;
  if (!a->json)
    printf("%-20s %-24s %10s %8s %7s %6s  %s\n", "device", "template", "best us", "TOPS", "trials",
           "ok", "key"); /* 24: the longest template name, conv3d_ndhwc_wgmma_stem, whole */
  for (int i = 0; i < n; i++) {
    double tops = tops_of(rows[i].workload_key, rows[i].best_us);
    if (a->json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(list, o);
      cJSON_AddStringToObject(o, "key", rows[i].workload_key);
      cJSON_AddStringToObject(o, "device", rows[i].device);
      cJSON_AddStringToObject(o, "template", rows[i].template_name);
      if (rows[i].n_ok) {
        cJSON_AddNumberToObject(o, "best_us", rows[i].best_us);
        cJSON_AddNumberToObject(o, "tops", tops);
      } else {
        cJSON_AddNullToObject(o, "best_us");
      }
      cJSON_AddNumberToObject(o, "trials", rows[i].n_trials);
      cJSON_AddNumberToObject(o, "ok", rows[i].n_ok);
    } else {
      printf("%-20.20s %-24s %10.2f %8.2f %7d %6d  %s\n", rows[i].device, rows[i].template_name,
             rows[i].best_us, tops, rows[i].n_trials, rows[i].n_ok, rows[i].workload_key);
    }
  }
  if (a->json) print_json(list);
  free(rows);
  return EXIT_OK;
}

/* One CSV field, quoted as RFC 4180 says where it must be: a field with a
 * comma, a quote, CR or LF is put in quotes, its quotes doubled. */
static void csv_field(const char *s, char end) {
  if (strpbrk(s, ",\"\r\n")) {
    putchar('"');
    for (; *s; s++) {
      if (*s == '"') putchar('"');
      putchar(*s);
    }
    putchar('"');
  } else {
    fputs(s, stdout);
  }
  putchar(end);
}

static int cmd_history(db_args *a, db *d) {
  char key[CT_KEY_MAX];
  ct_err err = {0};
  resolve_key(a, d, key);
  trial *tr = NULL;
  int n = 0;
  if (db_trials(d, key, NULL, NULL, NULL, &tr, &n, &err)) return cli_fail(&a->cc, &err);
  if (n == 0) {
    fprintf(stderr, "convtune history: no trials of %s in %s\n", key, cli_path(a->db_path));
    return EXIT_FAIL;
  }
  /* best so far per (device, template): the curve of each tuning */
  best_row rows[64];
  int n_rows = 0;
  cJSON *list = a->json ? cJSON_CreateArray() : NULL;
  if (!a->json) printf("trial,device,template,tuner,outcome,median_us,best_us\n");
  for (int i = 0; i < n; i++) {
    int g = 0;
    while (g < n_rows && !same_group(rows[g].first, &tr[i])) g++;
    if (g == n_rows && n_rows < 64) rows[n_rows++] = (best_row){.first = &tr[i]};
    if (g == n_rows) continue;
    rows[g].n++;
    if (tr[i].outcome == OUT_OK && (!rows[g].best || tr[i].median_us < rows[g].best->median_us))
      rows[g].best = &tr[i];
    if (a->json) {
      /* the CSV's row; a time that is not there is null */
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(list, o);
      cJSON_AddNumberToObject(o, "trial", rows[g].n);
      cJSON_AddStringToObject(o, "device", tr[i].device.name);
      cJSON_AddStringToObject(o, "template", tr[i].template_name);
      cJSON_AddStringToObject(o, "tuner", tr[i].tuner);
      cJSON_AddStringToObject(o, "outcome", outcome_name(tr[i].outcome));
      if (tr[i].outcome == OUT_OK)
        cJSON_AddNumberToObject(o, "median_us", tr[i].median_us);
      else
        cJSON_AddNullToObject(o, "median_us");
      if (rows[g].best)
        cJSON_AddNumberToObject(o, "best_us", rows[g].best->median_us);
      else
        cJSON_AddNullToObject(o, "best_us");
      continue;
    }
    char med[32] = "", best[32] = "";
    if (tr[i].outcome == OUT_OK) snprintf(med, sizeof med, "%.4f", tr[i].median_us);
    if (rows[g].best) snprintf(best, sizeof best, "%.4f", rows[g].best->median_us);
    printf("%d,", rows[g].n);
    csv_field(tr[i].device.name, ',');
    csv_field(tr[i].template_name, ',');
    csv_field(tr[i].tuner, ',');
    printf("%s,%s,%s\n", outcome_name(tr[i].outcome), med, best);
  }
  if (a->json) print_json(list);
  trials_free(tr, n);
  return EXIT_OK;
}

static int cmd_export(db_args *a, db *d) {
  char key[CT_KEY_MAX];
  ct_err err = {0};
  const char *only = NULL;
  if (a->has_wl) {
    resolve_key(a, d, key);
    only = key;
  }
  outfile o = {.f = stdout};
  if (a->output && outfile_open(&o, a->output, "w", &err)) return cli_fail(&a->cc, &err);
  db_io_counts n = {0};
  ct_status st = db_export(d, only, o.f, &n, &err);
  if (a->output) {
    ct_err cerr = {0};
    if (outfile_close(&o, st == CT_OK, &cerr) && !st) {
      st = CT_ERR_IO;
      err = cerr;
    }
  } else if (fflush(stdout) != 0 && !st) {
    st = ERR_SET(&err, CT_ERR_IO, "stdout: write failed: %s", strerror(errno));
  }
  if (st) return cli_fail(&a->cc, &err);
  if (a->cc.verbose >= 0)
    fprintf(stderr, "convtune export: %d trials, %d pick%s\n", n.trials, n.picks,
            n.picks == 1 ? "" : "s");
  return EXIT_OK;
}

/* Whether f starts as an SQLite database does (its 16-byte header); f is
 * left at its start. */
static int is_sqlite(FILE *f) {
  char head[16];
  size_t n = fread(head, 1, sizeof head, f);
  rewind(f);
  return n == sizeof head && !memcmp(head, "SQLite format 3", 16);
}

/* The trials of the database at path as JSON lines in a memory file, read
 * from the start (db_export's lines: the same checks as a file's). */
static ct_status export_database(const char *path, FILE **out, char **mem_buf, ct_err *err) {
  *out = NULL;
  *mem_buf = NULL;
  db *src = NULL;
  char *buf = NULL;
  size_t len = 0;
  ct_status st = db_open(path, 1, &src, err);
  if (st) return st;
  FILE *mem = open_memstream(&buf, &len);
  if (!mem) {
    db_close(src);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "no memory to read %s", cli_quote(path));
  }
  st = db_export(src, NULL, mem, NULL, err);
  db_close(src);
  fclose(mem);
  if (!st && !(*out = fmemopen(buf, len ? len : 1, "r")))
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "no memory to read %s", cli_quote(path));
  if (st) {
    free(buf);
    return st;
  }
  *mem_buf = buf; /* freed after the memory file is closed */
  return CT_OK;
}

static int cmd_import(db_args *a, db *d) {
  ct_err err = {0};
  db_io_counts n = {0};
  if (a->in != stdin && is_sqlite(a->in)) {
    FILE *mem = NULL;
    if (export_database(a->pos[0], &mem, &a->in_buf, &err)) {
      err_prefix(&err, "%s", a->pos[0]);
      return cli_fail(&a->cc, &err);
    }
    fclose(a->in);
    a->in = mem;
  }
  ct_status st = db_import(d, a->in, &n, &err);
  if (st) {
    /* a database failure names the database (db_insert_trials), not FILE */
    if (st != CT_ERR_DB) err_prefix(&err, "%s", a->pos[0]);
    return cli_fail(&a->cc, &err);
  }
  printf("imported %d trials, skipped %d already present", n.trials, n.trials_present);
  if (n.picks + n.picks_present + n.picks_kept)
    printf("; %d pick%s taken, %d already present, %d not taken (the database's as new or newer)",
           n.picks, n.picks == 1 ? "" : "s", n.picks_present, n.picks_kept);
  printf("\n");
  return EXIT_OK;
}

int cmd_db(const char *cmd, int argc, char **argv) {
  db_args a = {.cmd = cmd};
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) {
    cli_wl_free(&a.sel);
    return rc;
  }
  /* Every argument is checked before the database is touched. */
  if (!strcmp(cmd, "list")) {
    if (a.n_pos) rc = cli_usage_error(a.cmd, "unexpected argument '%s'", cli_quote(a.pos[0]));
  } else if (!strcmp(cmd, "import")) {
    if (a.n_pos != 1) {
      rc = cli_usage_error(a.cmd, "give one file to import");
    } else if (strcmp(a.pos[0], "-") && outfile_is_database(a.pos[0], a.db_path)) {
      rc = cli_usage_error(a.cmd, "%s is the database %s itself", cli_path(a.pos[0]),
                           cli_path(a.db_path));
    } else if (!(a.in = strcmp(a.pos[0], "-") ? fopen(a.pos[0], "r") : stdin)) {
      fprintf(stderr, "convtune import: cannot open %s: %s\n", cli_path(a.pos[0]), strerror(errno));
      rc = EXIT_USAGE;
    }
  } else {
    rc = parse_workload(&a, strcmp(cmd, "export") != 0);
    if (rc < 0 && a.output && outfile_is_database(a.output, a.db_path))
      rc = cli_usage_error(a.cmd, "--output %s is the database %s (or one of its files)",
                           cli_path(a.output), cli_path(a.db_path));
  }
  db *d = NULL;
  int readonly = strcmp(cmd, "import") != 0;
  if (rc < 0) rc = open_db(&a, readonly, &d);
  if (rc >= 0) {
    if (a.in && a.in != stdin) fclose(a.in);
    cli_wl_free(&a.sel);
    return rc;
  }
  if (!strcmp(cmd, "query"))
    rc = cmd_query(&a, d);
  else if (!strcmp(cmd, "list"))
    rc = cmd_list(&a, d);
  else if (!strcmp(cmd, "history"))
    rc = cmd_history(&a, d);
  else if (!strcmp(cmd, "export"))
    rc = cmd_export(&a, d);
  else
    rc = cmd_import(&a, d);
  char bad[CT_ERRMSG_MAX];
  int n_bad = db_bad_rows(d, bad, sizeof bad);
  if (n_bad)
    fprintf(stderr, "convtune %s: warning: skipped %d malformed trial%s in %s, the first: %s\n",
            cmd, n_bad, n_bad == 1 ? "" : "s", cli_path(a.db_path), bad);
  if (a.in && a.in != stdin) fclose(a.in);
  free(a.in_buf);
  db_close(d);
  cli_wl_free(&a.sel);
  return rc;
}
