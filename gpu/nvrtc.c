/*
 * nvrtc.c: compiling CUDA C++ to an sm_XY cubin with NVRTC (see nvrtc.h).
 *
 * One program per compile: created, compiled, its log always read, its cubin
 * read on success, always destroyed. A failed nvrtcCompileProgram is data (a
 * COMPILE_ERROR outcome), so its result is kept aside until the log has been
 * fetched, then reported as CT_ERR_NVRTC with the log's first error line;
 * every other NVRTC call goes through NVRTC_TRY. Cost: NVRTC itself, about
 * 30 ms for a register-tiled conv kernel; it serialises inside a process.
 * Needs no GPU and no driver; but unless told --no-cache, NVRTC loads the
 * driver where there is one and starts it (cuInit) in a process's first
 * compile, to keep what it compiles in the driver's compute cache.
 */
#include "gpu/nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/cuda_check.h"

/* The options every compile gets after the caller's: SASS for the exact
 * architecture (loadable with no JIT step) and the C++ dialect the templates
 * are written in; --no-cache with NVRTC_NO_DRIVER_CACHE; and for a
 * template's instance, --minimal (COMPILE_MINIMAL). */
#define N_FIXED_OPTIONS 4

/* compile()'s own flag, beside nvrtc.h's: --minimal leaves out of NVRTC's
 * built-in header what no template uses (texture and surface functions, the
 * device runtime's cuda* functions, launches from device code, the runtime
 * API's types). The cubin is byte for byte the same; the compile takes
 * about 2% less (ResNet-50's set at batch 16, 77 configs, 227 -> 222 ms a
 * compile) and a process's first about 20% less (386 -> 309 ms). Only
 * where NVRTC has it (CUDA 13 does; 12.x is not asked), and not for
 * nvrtc_compile_source, whose callers' sources are their own. */
#define COMPILE_MINIMAL 0x100u

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Whether the n bytes at p contain word. */
static int contains(const char *p, size_t n, const char *word) {
  size_t w = strlen(word);
  for (size_t i = 0; i + w <= n; i++)
    if (memcmp(p + i, word, w) == 0) return 1;
  return 0;
}

/* The first line of log that contains "error" (NVRTC writes
 * "name(12): error: ..." and "nvrtc: error: ..."), else its first non-empty
 * line, else ""; *len is the line's length without the newline. */
static const char *first_error_line(const char *log, int *len) {
  const char *line = "";
  size_t line_n = 0;
  for (const char *p = log; *p;) {
    size_t n = strcspn(p, "\n");
    if (contains(p, n, "error")) {
      line = p;
      line_n = n;
      break;
    }
    if (line_n == 0 && n > 0) {
      line = p;
      line_n = n;
    }
    p += n + (p[n] == '\n');
  }
  *len = line_n > CT_ERRMSG_MAX ? CT_ERRMSG_MAX : (int)line_n;
  return line;
}

/* Compile source with headers and options into out; out is zeroed first and
 * out->log is non-NULL on return unless memory ran out. */
static ct_status compile(const char *name, const char *source, int n_headers,
                         const char *const *header_names, const char *const *header_sources,
                         const char *const *options, int n_options, const arch *a, unsigned flags,
                         cubin *out, ct_err *err) {
  ct_status st = CT_OK;
  nvrtcProgram prog = NULL;
  const char **opts = NULL;
  char arch_option[48];
  if (out) memset(out, 0, sizeof *out);
  if (!name || !source || !a || !out || n_options < 0 || (n_options > 0 && !options) ||
      n_headers < 0 || (n_headers > 0 && (!header_names || !header_sources))) {
    st = ERR_SET(err, CT_ERR_INVALID_ARG, "nvrtc: NULL argument or negative count");
    goto done;
  }
  for (int i = 0; i < n_options; i++) {
    if (!options[i]) {
      st = ERR_SET(err, CT_ERR_INVALID_ARG, "nvrtc: option %d of %d is NULL", i, n_options);
      goto done;
    }
  }
  opts = malloc(((size_t)n_options + N_FIXED_OPTIONS) * sizeof *opts);
  if (!opts) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "nvrtc: no memory for %d options", n_options);
    goto done;
  }
  for (int i = 0; i < n_options; i++) opts[i] = options[i];
  snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s", a->name);
  opts[n_options] = arch_option;
  opts[n_options + 1] = "-std=c++17";
  int n_opts = n_options + 2;
  if (flags & NVRTC_NO_DRIVER_CACHE) opts[n_opts++] = "--no-cache";
  if (flags & COMPILE_MINIMAL) {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS && major >= 13) opts[n_opts++] = "--minimal";
  }

  NVRTC_TRY(err, nvrtcCreateProgram(&prog, source, name, n_headers, header_sources, header_names));
  double t0 = now_ms();
  /* Not NVRTC_TRY: a failure here is the config's outcome, reported below
   * once the log is read. */
  nvrtcResult compiled = nvrtcCompileProgram(prog, n_opts, opts);
  out->compile_ms = now_ms() - t0;

  size_t log_size = 0;
  NVRTC_TRY(err, nvrtcGetProgramLogSize(prog, &log_size));
  out->log = malloc(log_size ? log_size : 1);
  if (!out->log) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "nvrtc: no memory for a %zu-byte log", log_size);
    goto done;
  }
  out->log[0] = '\0';
  if (log_size > 1) NVRTC_TRY(err, nvrtcGetProgramLog(prog, out->log));

  if (compiled != NVRTC_SUCCESS) {
    int len;
    const char *line = first_error_line(out->log, &len);
    if (len > 0)
      st = ERR_SET(err, CT_ERR_NVRTC, "compile error: %.*s", len, line);
    else
      st = ERR_SET(err, CT_ERR_NVRTC, "compile error: %s", nvrtcGetErrorString(compiled));
    goto done;
  }

  size_t size = 0;
  NVRTC_TRY(err, nvrtcGetCUBINSize(prog, &size));
  if (size == 0) {
    st = ERR_SET(err, CT_ERR_NVRTC, "nvrtc: empty cubin for %s (architecture %s)", name, a->name);
    goto done;
  }
  out->data = malloc(size);
  if (!out->data) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "nvrtc: no memory for a %zu-byte cubin", size);
    goto done;
  }
  NVRTC_TRY(err, nvrtcGetCUBIN(prog, out->data));
  out->size = size;

done:
  /* Not NVRTC_TRY: it would jump back here, and a program that cannot be
   * destroyed leaves nothing for the caller to do. */
  if (prog) nvrtcDestroyProgram(&prog);
  free(opts);
  if (out && st != CT_OK) {
    free(out->data);
    out->data = NULL;
    out->size = 0;
  }
  /* The log is promised non-NULL, "" when there is none (e.g. the program
   * could not even be created). */
  if (out && !out->log) {
    out->log = calloc(1, 1);
    if (!out->log && st == CT_OK) st = ERR_SET(err, CT_ERR_NO_MEMORY, "nvrtc: no memory for a log");
  }
  return st;
}

ct_status nvrtc_compile_source(const char *name, const char *source, const char *const *options,
                               int n_options, const arch *a, cubin *out, ct_err *err) {
  const char *const *names = NULL, *const *sources = NULL;
  int n_headers = template_headers(&names, &sources);
  return compile(name, source, n_headers, names, sources, options, n_options, a, 0, out, err);
}

ct_status nvrtc_compile(const instance *inst, const arch *a, cubin *out, ct_err *err) {
  return nvrtc_compile_flags(inst, a, 0, out, err);
}

ct_status nvrtc_compile_flags(const instance *inst, const arch *a, unsigned flags, cubin *out,
                              ct_err *err) {
  const char *options[INSTANCE_MAX_OPTIONS];
  if (out) memset(out, 0, sizeof *out);
  if (!inst || !inst->tpl || !a || !out)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "nvrtc_compile: NULL instance, template, arch or out");
  if (inst->n_options < 0 || inst->n_options > INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: n_options is %d, accepted 0..%d",
                   inst->n_options, INSTANCE_MAX_OPTIONS);
  for (int i = 0; i < inst->n_options; i++) {
    if (!memchr(inst->options[i], '\0', INSTANCE_OPTION_MAX))
      return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: option %d is not NUL-terminated", i);
    options[i] = inst->options[i];
  }
  const char *source = template_source(inst->tpl);
  if (!source)
    return ERR_SET(err, CT_ERR_NOT_FOUND, "template %s: no embedded source '%s'",
                   inst->tpl->name ? inst->tpl->name : "?",
                   inst->tpl->source ? inst->tpl->source : "?");
  const char *const *names = NULL, *const *sources = NULL;
  int n_headers = template_headers(&names, &sources);
  const char *name = inst->tpl->source ? inst->tpl->source : inst->tpl->name;
  arch target = *a;
  if (inst->arch_specific && target.name[0] &&
      strchr("0123456789", target.name[strnlen(target.name, sizeof target.name) - 1])) {
    /* "sm_90" -> "sm_90a": features of exactly this architecture */
    size_t len = strnlen(target.name, sizeof target.name);
    if (len + 2 > sizeof target.name)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "architecture name %.16s is too long", a->name);
    target.name[len] = 'a';
    target.name[len + 1] = '\0';
  }
  return compile(name, source, n_headers, names, sources, options, inst->n_options, &target,
                 flags | COMPILE_MINIMAL, out, err);
}

void cubin_free(cubin *c) {
  if (!c) return;
  free(c->data);
  free(c->log);
  memset(c, 0, sizeof *c);
}

#define FIRST_MAJOR 11
/* "MAJOR.MINOR" for every NVRTC release 11.0 to 19.9, so that the version
 * of the library actually loaded is reported without any mutable state. */
#define MINORS(M)                                                                                  \
#M ".0", #M ".1", #M ".2", #M ".3", #M ".4", #M ".5", #M ".6", #M ".7", #M ".8", #M ".9"
static const char *const version_names[] = {MINORS(11), MINORS(12), MINORS(13),
                                            MINORS(14), MINORS(15), MINORS(16),
                                            MINORS(17), MINORS(18), MINORS(19)};
#undef MINORS

const char *nvrtc_version_string(void) {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  int i = (major - FIRST_MAJOR) * 10 + minor;
  if (major < FIRST_MAJOR || minor < 0 || minor > 9 ||
      i >= (int)(sizeof version_names / sizeof version_names[0]))
    return "unknown";
  return version_names[i];
}
