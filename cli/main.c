/*
 * main.c: the convtune command: dispatch to a subcommand. Every subcommand
 * parses its own flags, prints results on stdout and progress and errors on
 * stderr, and returns an exit code: 0 done, 1 failed, 2 bad input.
 * `convtune -V` names the build and the CUDA pieces it runs on; it asks the
 * CUDA runtime, the driver and NVRTC for their versions and must work
 * without a GPU or driver (a machine that only builds, or help2man's run).
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cli/cli.h"
#include "gpu/nvrtc.h"

/* The commit the binary was built from: CMake passes it (git rev-parse at
 * configure time, or -DCT_BUILD_COMMIT=...). */
#ifndef CT_BUILD_COMMIT
#define CT_BUILD_COMMIT "unknown"
#endif

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
    "  history    the tuning curve of a workload (CSV, or JSON)\n"
    "  export     trials as JSON lines\n"
    "  import     trials from JSON lines\n"
    "  space      print the knob space of each template for workloads\n"
    "  bench      the best kernels against cuDNN and the GPU's peaks, one run\n"
    "  version    print the version (as -V, --version)\n"
    "\n"
    "Options:\n"
    "  -h, --help             this text\n"
    "  -V, --version          the version, build commit, and the CUDA runtime, driver and\n"
    "                         NVRTC versions\n"
    "\n"
    "'convtune COMMAND --help' lists the options of a command. Every command takes\n"
    "-v, -q and -h; --json, where a command has it, prints JSON on stdout.\n"
    "Exit status: 0 done, 1 failed, 2 bad input (a flag, workload or file).\n";

/* 13000 -> "13.0"; 0 (none) -> "none". */
static const char *cuda_version(int v, char *buf, size_t size) {
  if (v <= 0) return "none";
  snprintf(buf, size, "%d.%d", v / 1000, v % 1000 / 10);
  return buf;
}

/* The first line is what help2man reads as the version. */
static int print_version(void) {
  int runtime = 0, driver = 0;
  char rt[32], drv[32];
  /* both answer without a device; with no driver, cudaDriverGetVersion
   * gives 0 (or fails, on some runtimes): "none" either way */
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  printf("convtune %s\n", ct_version());
  printf("commit %s\n", CT_BUILD_COMMIT);
  printf("CUDA runtime %s\n", cuda_version(runtime, rt, sizeof rt));
  printf("CUDA driver %s\n", cuda_version(driver, drv, sizeof drv));
  printf("NVRTC %s\n", nvrtc_version_string());
  return EXIT_OK;
}

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
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
    if (argc > 2) return cli_usage_error(cmd, "unexpected argument '%s'", cli_quote(argv[2]));
    return print_version();
  }
  if (!strcmp(cmd, "workload")) return cmd_workload(argc - 1, argv + 1);
  if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
  if (!strcmp(cmd, "space")) return cmd_space(argc - 1, argv + 1);
  if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
  static const char *const db_cmds[] = {"query", "list", "history", "export", "import"};
  for (size_t i = 0; i < sizeof db_cmds / sizeof db_cmds[0]; i++)
    if (!strcmp(cmd, db_cmds[i])) return cmd_db(cmd, argc - 1, argv + 1);
  fprintf(stderr, "convtune: unknown command '%s'\n%s", cli_quote(cmd), usage);
  return EXIT_USAGE;
}
