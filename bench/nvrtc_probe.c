/*
 * nvrtc_probe.c: what one process's NVRTC compiles cost, as the builder's
 * workers run them (nvrtc_compile on an instance, in a fresh process), for
 * bench/issue38_gpu.sh's compile phase. The environment it runs in is the
 * variable: CUDA_VISIBLE_DEVICES (empty hides the GPUs from the CUDA driver
 * that NVRTC starts for its compute cache) and CUDA_CACHE_PATH (that cache's
 * folder, cold when fresh); with NVRTC_PROBE_NO_CACHE set (non-empty) every
 * compile is the builder's, NVRTC_NO_DRIVER_CACHE (--no-cache).
 *
 *   nvrtc_probe first
 *     compiles the same config of conv2d_nhwc_wgmma on ResNet-50's
 *     l3_3x3_256 (batch 16) twice; prints one JSON object: the wall time of
 *     each compile (the first pays NVRTC's start-up), the process's CPU
 *     seconds, and how many GPU device files (/dev/nvidiaN) it holds open
 *     after compiling.
 *   nvrtc_probe set NAME PER SEED
 *     compiles PER random valid configs (seed SEED) of every template that
 *     runs each layer of set NAME at batch 16 in nhwc; prints one JSON
 *     object: compiles, their summed wall time, the process's wall and CPU
 *     seconds, and by_template: each template's compiles and mean time.
 *     Its first compile is left out of the sums, and reported apart.
 *
 * Exit status 1 on any error (a compile error included), with a message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/rng.h"
#include "core/wlset.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"
#include "tuner/proc.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "nvrtc_probe: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* This process's user plus system CPU seconds. */
static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
         (double)u.ru_stime.tv_usec * 1e-6;
}

static double compile_ms(const instance *inst, const arch *a) {
  const char *no_cache = getenv("NVRTC_PROBE_NO_CACHE");
  unsigned flags = no_cache && *no_cache ? NVRTC_NO_DRIVER_CACHE : 0;
  cubin c;
  ct_err err = {0};
  double t0 = now_s();
  if (nvrtc_compile_flags(inst, a, flags, &c, &err) != CT_OK) die("compile: %s", err.msg);
  double ms = (now_s() - t0) * 1e3;
  cubin_free(&c);
  return ms;
}

static wlset *load_set(const char *name) {
  wlset *s = NULL;
  ct_err err = {0};
  if (wlset_load_named(name, 16, &s, &err) != CT_OK) die("%s", err.msg);
  for (int i = 0; i < s->n_items; i++) s->items[i].w.layout = CT_LAYOUT_NHWC;
  return s;
}

static void first(const arch *a) {
  wlset *s = load_set("resnet50");
  const ct_workload *w = NULL;
  for (int i = 0; i < s->n_items; i++)
    if (strcmp(s->items[i].name, "l3_3x3_256") == 0) w = &s->items[i].w;
  if (!w) die("resnet50 has no l3_3x3_256");
  const template_desc *tpl = template_find("conv2d_nhwc_wgmma");
  if (!tpl) die("no template conv2d_nhwc_wgmma");
  space sp;
  config c;
  instance inst;
  rng r;
  ct_err err = {0};
  rng_seed(&r, 1);
  if (template_space(tpl, w, &sp, &err) != CT_OK ||
      template_sample(tpl, w, &sp, a, &r, 100000, &c, &err) != CT_OK ||
      instance_make(tpl, w, &sp, &c, a, &inst, &err) != CT_OK)
    die("%s", err.msg);
  double t1 = compile_ms(&inst, a);
  double t2 = compile_ms(&inst, a);
  printf("{\"first_ms\": %.1f, \"second_ms\": %.1f, \"cpu_s\": %.3f, \"gpu_files\": %d}\n", t1, t2,
         cpu_s(), proc_gpu_files(0));
  space_free(&sp);
  wlset_free(s);
}

static void set(const arch *a, const char *name, int per, unsigned seed) {
  wlset *s = load_set(name);
  rng r;
  rng_seed(&r, seed);
  double t0 = now_s(), sum_ms = 0, first_ms = -1;
  int n = 0;
  /* per template, by its index in template_all() */
  enum { MAX_T = 64 };
  const template_desc *const *all = template_all();
  double t_ms[MAX_T] = {0};
  int t_n[MAX_T] = {0};
  for (int i = 0; i < s->n_items; i++)
    for (const template_desc *const *t = all; *t; t++) {
      const int ti = (int)(t - all);
      if (ti == MAX_T) die("more than %d templates", MAX_T);
      space sp;
      ct_err err = {0};
      if (template_space(*t, &s->items[i].w, &sp, &err) != CT_OK) continue;
      for (int k = 0; k < per; k++) {
        config c;
        instance inst;
        if (template_sample(*t, &s->items[i].w, &sp, a, &r, 100000, &c, &err) != CT_OK) break;
        if (instance_make(*t, &s->items[i].w, &sp, &c, a, &inst, &err) != CT_OK)
          die("%s: %s", (*t)->name, err.msg);
        double ms = compile_ms(&inst, a);
        if (first_ms < 0) {
          first_ms = ms;
        } else {
          sum_ms += ms;
          n++;
          t_ms[ti] += ms;
          t_n[ti]++;
        }
      }
      space_free(&sp);
    }
  printf("{\"compiles\": %d, \"first_ms\": %.1f, \"sum_ms\": %.1f, \"wall_s\": %.3f, "
         "\"cpu_s\": %.3f, \"by_template\": {",
         n, first_ms, sum_ms, now_s() - t0, cpu_s());
  for (int ti = 0, shown = 0; ti < MAX_T && all[ti]; ti++)
    if (t_n[ti])
      printf("%s\"%s\": {\"compiles\": %d, \"mean_ms\": %.1f}", shown++ ? ", " : "",
             all[ti]->name, t_n[ti], t_ms[ti] / t_n[ti]);
  printf("}}\n");
  wlset_free(s);
}

int main(int argc, char **argv) {
  arch a;
  ct_err err = {0};
  if (arch_from_name("sm_90", &a, &err) != CT_OK) die("%s", err.msg);
  if (argc == 2 && strcmp(argv[1], "first") == 0) {
    first(&a);
  } else if (argc == 5 && strcmp(argv[1], "set") == 0) {
    int per = atoi(argv[3]);
    if (per < 1) die("PER must be at least 1, not '%s'", argv[3]);
    set(&a, argv[2], per, (unsigned)strtoul(argv[4], NULL, 10));
  } else {
    die("usage: nvrtc_probe first | nvrtc_probe set NAME PER SEED");
  }
  return 0;
}
