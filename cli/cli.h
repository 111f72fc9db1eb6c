/*
 * cli.h: what the convtune subcommands share: exit codes, error printing,
 * and the selection of workloads from flags, a key or JSON, a file or a set.
 * Only cli/ prints, parses argv or exits.
 */
#ifndef CT_CLI_H
#define CT_CLI_H

#include <getopt.h>

#include "core/error.h"
#include "core/wlset.h"

enum {
  EXIT_OK = 0,
  EXIT_FAIL = 1,  /* the job could not be done (no GPU, I/O, ...) */
  EXIT_USAGE = 2, /* bad input: flags, workload, JSON, file */
};

/* Options common to every command (-v, -q). */
typedef struct cli_common {
  int verbose; /* -1 quiet, 0 normal, 1 verbose */
} cli_common;

/* Print "convtune: MSG" for err on stderr (with its origin under -v) and
 * return the exit code that fits its status. */
int cli_fail(const cli_common *cc, const ct_err *err);
/* The exit code of a status, as cli_fail returns it, without printing. */
int cli_exit_code(ct_status st);

/* Print "convtune CMD: MSG" and a hint to see --help; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* text (user input: a flag's value, an argument) as a message quotes it:
 * err_excerpt's first CT_EXCERPT_BYTES bytes, escaped, then "..." (core/
 * error.h). The result lives in one of 4 static buffers, reused in turn:
 * enough for the quotes of one message (the CLI is one thread). */
const char *cli_quote(const char *text);
/* A path (--db, --output, a file to import or read) as a message quotes it:
 * whole up to CLI_PATH_BYTES bytes (a path's end is the part that matters,
 * so no 60-byte excerpt), but escaped as err_excerpt escapes, so that no
 * control byte reaches the terminal. The same 4 buffers' scheme as
 * cli_quote, apart from its. */
#define CLI_PATH_BYTES 4096
const char *cli_path(const char *path);

/* Workload selection: flags (--op, --c, --k, --size, --kernel, --stride,
 * --pad, --dilation, --groups, --layout), one positional key or JSON
 * object, --file FILE, --set NAME or --model FILE (an ONNX model's unique
 * conv workloads; with --fuse a pointwise conv fused into the conv it feeds
 * where a template runs the pair), and --batch
 * for all of them. */
struct model;
typedef struct cli_wl {
  const char *positional, *file, *set, *model;
  /* --model: how many conv nodes run each workload of the loaded set
   * (cli_wl_load fills it; owned, freed by cli_wl_free); NULL otherwise */
  int *counts;
  int n_fused; /* --model: the fused nodes (model_n_fused), each two of its convs */
  /* --model with keep_model set: the model cli_wl_load read (owned, freed
   * by cli_wl_free), for its values; NULL otherwise */
  int keep_model;
  struct model *loaded;
  /* --fuse[=auto|all] (CLI_FUSE_*; 0: none): load the model with its
   * pointwise convs fused into the convs they feed, where a template runs
   * the pair and fuse_hook (when set) agrees */
  int fuse;
  /* tune --template NAME: fuse only the pairs that template runs (NULL: any) */
  const char *fuse_template;
  /* tune: with --fuse, each fused pair's two convs apart are tuned too, so
   * that records of both ways exist to decide by (bench --fuse) */
  int fuse_both;
  /* bench --fuse=auto: who decides each pair a template runs
   * (model_opts.fuse_pre's form); NULL: every such pair fuses */
  int (*fuse_hook)(const ct_workload *w, void *user);
  void *fuse_user;
  int batch; /* 0: keep */
  /* --data, --out, --epilogue, --layout: applied to every selected workload */
  const char *data_type, *out_type, *epilogue, *layout;
  cJSON *flags;    /* the flags as a workload JSON object, NULL when none */
  const char *err; /* first flag error, reported by cli_wl_load */
  char errbuf[256];
} cli_wl;

/* --fuse's modes: bare --fuse is auto */
enum { CLI_FUSE_AUTO = 1, CLI_FUSE_ALL = 2 };

/* The long options for workload selection, to be merged into a command's
 * table; getopt_long returns the val of each (all >= CLI_WL_OPT_BASE). */
#define CLI_WL_OPT_BASE 1000
extern const struct option cli_wl_options[];

/* Take one parsed option of cli_wl_options. Returns 1 if it was one. */
int cli_wl_option(cli_wl *s, int opt, const char *arg);

/* Build the set the selection names (flags, key, JSON, file or set; exactly
 * one of them). When nothing is selected and dflt is not NULL, dflt (a JSON
 * object text) is used. Owned result: wlset_free. */
ct_status cli_wl_load(cli_wl *s, const char *dflt, wlset **out, ct_err *err);

/* --model FILE as a model, with --batch and --layout, and for a float
 * model --data, --out and --epilogue (a quantized model's epilogue comes
 * from its graph: those flags are refused); its pointwise convs fused into
 * the convs they feed where a template runs the pair (template_any_supports),
 * with --fuse only. Owned result: model_free. */
ct_status cli_wl_model(const cli_wl *s, struct model **out, ct_err *err);

/* Release what cli_wl_option and cli_wl_load allocated. */
void cli_wl_free(cli_wl *s);

/* What cli_common_option and cli_positional return to let parsing go on. */
#define CLI_GO_ON (-1)

/* What cli_getopt returns for a flag it refused (after printing why). */
#define CLI_OPT_BAD 0x7fff

/* getopt_long over opts (short options "hvq"), refusing what getopt_long
 * would let through: an abbreviated long option ("--jso" for "--json", or
 * bench's old "--json FILE" taken as "--json-out"). Every flag is taken
 * whole or refused: prints the usage error naming it and returns
 * CLI_OPT_BAD, which cli_common_option turns into EXIT_USAGE. */
int cli_getopt(const char *cmd, int argc, char **argv, const struct option *opts);

/* The options every command shares, handled in its switch's default: -h
 * (prints usage, then the workload-selection help), -v, -q, and getopt's
 * missing-value (':'), unknown-option and CLI_OPT_BAD cases (exit 2, the
 * flag named). Returns CLI_GO_ON, or the exit code to return now (the
 * caller frees what it holds). */
int cli_common_option(const char *cmd, int opt, char **argv, const char *usage, cli_common *cc);

/* After the options: take one positional workload (key or JSON) into sel
 * and refuse anything after it. CLI_GO_ON or EXIT_USAGE. */
int cli_positional(const char *cmd, int argc, char **argv, cli_wl *sel);

/* A flag's integer in [lo, hi] into *out: 1, or 0 after printing a usage
 * error that names --flag and the range. */
int cli_parse_long(const char *cmd, const char *flag, const char *arg, long lo, long hi, long *out);

/* Help text of the selection options, for each command's --help. */
extern const char cli_wl_help[];

/* Commands. */
int cmd_workload(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_space(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* query, list, history, export, import */
int cmd_db(const char *cmd, int argc, char **argv);

#endif
