/*
 * main.c: the convtune command: dispatch to a subcommand. Every subcommand
 * parses its own flags, prints results on stdout and progress and errors on
 * stderr, and returns an exit code: 0 done, 1 failed, 2 bad input.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: convtune COMMAND [options]\n"
    "\n"
    "Find the fastest int8 convolution kernels for this machine's GPU.\n"
    "\n"
    "Commands:\n"
    "  tune       tune a workload, a file or a set into the database (default convtune.db)\n"
    "  workload   print workloads: name, key, output shape, operation count\n"
    "  query      the best config of a workload, per device\n"
    "  list       every tuned workload with its best\n"
    "  history    the tuning curve of a workload (CSV)\n"
    "  export     trials as JSON lines\n"
    "  import     trials from JSON lines\n"
    "  space      print the knob space of each template for workloads\n"
    "  bench      the best kernels against cuDNN and the GPU's peaks, one run\n"
    "  version    print the version\n"
    "\n"
    "'convtune COMMAND --help' describes a command.\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    fputs(usage, stdout);
    return EXIT_OK;
  }
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("convtune %s\n", ct_version());
    return EXIT_OK;
  }
  if (!strcmp(cmd, "workload")) return cmd_workload(argc - 1, argv + 1);
  if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
  if (!strcmp(cmd, "space")) return cmd_space(argc - 1, argv + 1);
  if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
  static const char *const db_cmds[] = {"query", "list", "history", "export", "import"};
  for (size_t i = 0; i < sizeof db_cmds / sizeof db_cmds[0]; i++)
    if (!strcmp(cmd, db_cmds[i])) return cmd_db(cmd, argc - 1, argv + 1);
  fprintf(stderr, "convtune: unknown command '%s'\n%s", cmd, usage);
  return EXIT_USAGE;
}
