/*
 * test_runner.c (label gpu): the measuring worker (tuner/runner.c) on a GPU.
 *
 * (1) The GPU reference kernel (templates/ref_conv.cu) equals the CPU
 * reference exactly on awkward shapes: batch 3, stride 2, padding (also
 * asymmetric), dilation, odd sizes, 1x1, 7x7, 1x7, 3D 3x3x3; quantized
 * with gemmlowp's and with ONNX Runtime's rounding. (2) A valid
 * config compiled by the builder measures OK with sane times. (3) Planted
 * faults come back as outcomes and the runner goes on: an illegal address
 * (RUNTIME_ERROR, a restart, the task set up again with the same inputs), a
 * hang (TIMEOUT after timeout_s = 1, a restart), wrong values and an
 * unwritten output (WRONG_ANSWER with the exact first mismatch), a block of
 * 2048 threads and a corrupt cubin (LAUNCH_ERROR, no restart); after each a
 * good config still measures OK. (4) Channels-last (nhwc) tasks: the GPU
 * reference equals the CPU one on the same shapes and on channels that are
 * no multiple of 4 (int32, and 8-bit outputs whose size is no multiple of
 * 4 bytes, with a residual); an unwritten 8-bit output of odd size is a
 * WRONG_ANSWER located by image, pixel and channel; a template of another
 * layout is refused; and, when the nhwc templates are registered and the
 * GPU is sm_90, a random config of each measures OK (else skipped, with a
 * message). (5) Epilogue values given by workload (opts.values, as tune
 * --model gives a model's): the task's GPU reference is the CPU one with
 * those values, after a restart too, and a task without an entry keeps the
 * seed's random values.
 *
 * This process must not initialise CUDA: the runner and the builder fork,
 * and a CUDA context does not survive a fork (device_count() would create
 * one; so may NVRTC: the planted kernels are compiled in a child). So the
 * GPU is detected by runner_start itself, whose forked worker opens the
 * device: CT_ERR_NO_DEVICE (or no /dev/nvidiactl at all) exits 77
 * (skipped). Check runs in CK_NOFORK mode for the same reason.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/quant.h"
#include "core/reference.h"
#include "core/rng.h"
#include "gpu/nvrtc.h"
#include "tests/shapes.h"
#include "tuner/builder.h"
#include "tuner/runner.h"
#include "tests/util.h"

/* The device, as the probe in main found it. */
static device dev;

/* clang-format off */
static const shape shapes[] = {
    {"3x3 s1 p1", CT_OP_CONV2D, 1, 16, 16, {0, 14, 14}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"3x3 s2 b3 odd", CT_OP_CONV2D, 3, 8, 12, {0, 15, 13}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"7x7 s2 p3 stem", CT_OP_CONV2D, 1, 4, 16, {0, 23, 23}, {0, 7, 7}, {0, 2, 2}, {0, 3, 3}, {0, 3, 3}, {0, 1, 1}, 1},
    {"1x7", CT_OP_CONV2D, 1, 8, 16, {0, 9, 11}, {0, 1, 7}, {0, 1, 1}, {0, 0, 3}, {0, 0, 3}, {0, 1, 1}, 1},
    {"1x1 s2 b3", CT_OP_CONV2D, 3, 16, 8, {0, 14, 14}, {0, 1, 1}, {0, 2, 2}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1},
    {"3x3 dil2 asym pad", CT_OP_CONV2D, 1, 8, 8, {0, 10, 12}, {0, 3, 3}, {0, 1, 2}, {0, 1, 2}, {0, 2, 0}, {0, 2, 2}, 1},
    {"3x3x3 s1 p1", CT_OP_CONV3D, 1, 8, 8, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {"3x3x3 s2 b3 odd", CT_OP_CONV3D, 3, 4, 8, {5, 7, 6}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
};
/* clang-format on */

static void make_workload(const shape *sh, ct_workload *w) {
  shape_workload(sh, w);
  ct_err err = {0};
  ck_assert_msg(workload_validate(w, &err) == CT_OK, "%s: %s", sh->name, err.msg);
}

static runner *start(const runner_opts *o) {
  runner *r = NULL;
  ct_err err = {0};
  device d;
  ct_status st = runner_start(o, &r, &d, &err);
  ck_assert_msg(st == CT_OK, "runner_start: %s", err.msg);
  ck_assert_str_eq(d.name, dev.name);
  return r;
}

static void set_task(runner *r, const ct_workload *w) {
  ct_err err = {0};
  ct_status st = runner_set_task(r, w, &err);
  ck_assert_msg(st == CT_OK, "runner_set_task: %s", err.msg);
}

/* The task's reference output (owned: free), and its inputs if asked; the
 * residual too when the task has one (owned: free). */
static void *reference_res(runner *r, const ct_workload *w, int8_t **data, int8_t **weights,
                           uint8_t **residual) {
  size_t nd = (size_t)workload_data_elems(w), nw = (size_t)workload_weight_elems(w);
  size_t no = (size_t)workload_out_elems(w);
  int8_t *d = malloc(nd), *wt = malloc(nw);
  uint8_t *res = malloc(no);
  void *out = malloc(no * workload_out_elem_bytes(w));
  ck_assert(d && wt && out && res);
  ct_err err = {0};
  ct_status st = runner_reference(r, out, d, wt, res, &err);
  ck_assert_msg(st == CT_OK, "runner_reference: %s", err.msg);
  if (data)
    *data = d;
  else
    free(d);
  if (weights)
    *weights = wt;
  else
    free(wt);
  if (residual)
    *residual = res;
  else
    free(res);
  return out;
}

static int32_t *reference_of(runner *r, const ct_workload *w, int8_t **data, int8_t **weights) {
  return reference_res(r, w, data, weights, NULL);
}

/* A random valid config of tpl for w, compiled by b. */
static void build_config(builder *b, const template_desc *tpl, const ct_workload *w, instance *inst,
                         cubin *c) {
  ck_assert_ptr_nonnull(tpl);
  ct_err err = {0};
  space s;
  ck_assert_msg(template_space(tpl, w, &s, &err) == CT_OK, "%s", err.msg);
  rng r;
  rng_seed(&r, 7);
  config cfg;
  ck_assert_msg(template_sample(tpl, w, &s, &dev.arch, &r, 1000000, &cfg, &err) == CT_OK, "%s",
                err.msg);
  ck_assert_msg(instance_make(tpl, w, &s, &cfg, &dev.arch, inst, &err) == CT_OK, "%s", err.msg);
  space_free(&s);
  ck_assert_int_eq(builder_submit(b, inst, 1, &err), CT_OK);
  long tag = 0;
  ct_status st = builder_collect(b, &tag, c, &err);
  ck_assert_msg(st == CT_OK, "builder_collect: %s\n%s", err.msg, c->log ? c->log : "");
  ck_assert_int_eq(tag, 1);
}

/* A random valid config of the dp4a template for w, compiled by b. */
static void build_good(builder *b, const ct_workload *w, instance *inst, cubin *c) {
  build_config(b,
               template_find(w->op == CT_OP_CONV2D ? "conv2d_nchw4c_dp4a" : "conv3d_ncdhw4c_dp4a"),
               w, inst, c);
}

static run_result measure(runner *r, const instance *inst, const void *bytes, size_t size) {
  run_result res;
  ct_err err = {0};
  ct_status st = runner_measure(r, inst, bytes, size, &res, &err);
  ck_assert_msg(st == CT_OK, "runner_measure: %s", err.msg);
  return res;
}

static run_result measures_ok(runner *r, const instance *inst, const cubin *c,
                              const runner_opts *o) {
  run_result res = measure(r, inst, c->data, c->size);
  ck_assert_msg(res.outcome == OUT_OK, "%s: %s", outcome_name(res.outcome), res.error);
  ck_assert_str_eq(res.error, "");
  ck_assert_int_eq(res.n_samples, o->repeats);
  ck_assert_int_ge(res.number, 1);
  ck_assert_int_le(res.number, o->max_number);
  double lo = 1e300, hi = 0;
  for (int i = 0; i < res.n_samples; i++) {
    ck_assert_double_gt(res.samples_us[i], 0.0);
    lo = res.samples_us[i] < lo ? res.samples_us[i] : lo;
    hi = res.samples_us[i] > hi ? res.samples_us[i] : hi;
  }
  ck_assert_double_ge(res.median_us, lo);
  ck_assert_double_le(res.median_us, hi);
  /* A small conv on an H200 runs in microseconds; 10 ms would be absurd. */
  ck_assert_double_lt(res.median_us, 10000.0);
  /* number was grown until a repeat lasted min_repeat_ms (allow noise). */
  if (res.number < o->max_number)
    ck_assert_double_ge(res.number * res.median_us, 0.5 * 1000.0 * o->min_repeat_ms);
  return res;
}

static void read_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n > 0) {
    ssize_t k = read(fd, c, n);
    ck_assert_msg(k > 0, "reading from the compiling child failed");
    c += k;
    n -= (size_t)k;
  }
}

static void write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t k = write(fd, c, n);
    if (k <= 0) _exit(1);
    c += k;
    n -= (size_t)k;
  }
}

/* Compile source for the device in a child process. Not here: on a machine
 * with a GPU, NVRTC may initialise the CUDA driver in the calling process,
 * after which the runner's workers, forked from it, could not use CUDA. */
static void compile_isolated(const char *file, const char *source, cubin *out) {
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    cubin c;
    ct_err err = {0};
    int32_t st = nvrtc_compile_source(file, source, NULL, 0, &dev.arch, &c, &err);
    uint64_t n = st == CT_OK ? c.size : 0;
    write_all(fds[1], &st, sizeof st);
    write_all(fds[1], err.msg, sizeof err.msg);
    write_all(fds[1], &n, sizeof n);
    write_all(fds[1], c.data, n);
    _exit(0);
  }
  close(fds[1]);
  int32_t st;
  char msg[CT_ERRMSG_MAX];
  uint64_t n;
  read_all(fds[0], &st, sizeof st);
  read_all(fds[0], msg, sizeof msg);
  read_all(fds[0], &n, sizeof n);
  msg[sizeof msg - 1] = '\0';
  ck_assert_msg(st == CT_OK, "%s: %s", file, msg);
  memset(out, 0, sizeof *out);
  out->data = malloc(n);
  ck_assert_ptr_nonnull(out->data);
  read_all(fds[0], out->data, n);
  out->size = n;
  close(fds[0]);
  int ws;
  ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
}

/* A planted kernel with the signature of the templates and the geometry of
 * a real instance. */
static void plant(const instance *good, const char *name, const char *source, instance *inst,
                  cubin *c) {
  *inst = *good;
  snprintf(inst->kernel_name, sizeof inst->kernel_name, "%s", name);
  inst->n_options = 0;
  inst->smem_bytes = 0;
  char file[64];
  snprintf(file, sizeof file, "%s.cu", name);
  compile_isolated(file, source, c);
}

START_TEST(gpu_reference_equals_cpu_reference) {
  runner *r = start(NULL);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    ct_workload w;
    make_workload(&shapes[i], &w);
    set_task(r, &w);
    int8_t *data, *weights;
    int32_t *got = reference_of(r, &w, &data, &weights);
    size_t nd = (size_t)workload_data_elems(&w), nw = (size_t)workload_weight_elems(&w);
    size_t no = (size_t)workload_out_elems(&w);
    /* Random over the whole int8 range, not zeros. */
    int dmin = 0, dmax = 0, wmin = 0, wmax = 0;
    for (size_t j = 0; j < nd; j++) {
      dmin = data[j] < dmin ? data[j] : dmin;
      dmax = data[j] > dmax ? data[j] : dmax;
    }
    for (size_t j = 0; j < nw; j++) {
      wmin = weights[j] < wmin ? weights[j] : wmin;
      wmax = weights[j] > wmax ? weights[j] : wmax;
    }
    ck_assert_msg(dmin < -100 && dmax > 100 && wmin < -100 && wmax > 100,
                  "%s: inputs span [%d, %d] and [%d, %d]", shapes[i].name, dmin, dmax, wmin, wmax);
    int32_t *want = malloc(no * sizeof *want);
    ck_assert_ptr_nonnull(want);
    ct_err err = {0};
    ck_assert_msg(reference_conv(&w, data, weights, want, &err) == CT_OK, "%s", err.msg);
    size_t bad = 0, first = 0;
    for (size_t j = 0; j < no; j++)
      if (got[j] != want[j] && bad++ == 0) first = j;
    ck_assert_msg(bad == 0, "%s: %zu of %zu differ, first at %zu: GPU %d, CPU %d", shapes[i].name,
                  bad, no, first, got[bad ? first : 0], want[bad ? first : 0]);
    free(want);
    free(got);
    free(data);
    free(weights);
  }
  /* quantized tasks: the GPU reference of the unfolded formula (values from
   * quant_random with the runner's seed) against reference_qconv */
  runner_opts o;
  runner_opts_default(&o);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int variant = 0; variant < 5; variant++) {
      ct_workload w;
      make_workload(&shapes[i], &w);
      w.data_type = CT_DTYPE_UINT8;
      w.epi.data_zero_point = 1;
      w.epi.bias = 1;
      if (variant == 0) { /* int32 with weight zero points */
        w.epi.weight_zero_point = 1;
      } else if (variant == 1 || variant == 3) { /* int8, per channel, residual (3: onnx) */
        w.out_type = CT_DTYPE_INT8;
        w.epi.weight_zero_point = 1;
        w.epi.scale = CT_SCALE_CHANNEL;
        w.epi.residual = 1;
        if (variant == 3) w.epi.rounding = CT_ROUND_ONNX;
      } else { /* uint8 in depth_to_space order: block 2, K / 4 (or / 8) channels (4: onnx) */
        int vol = w.op == CT_OP_CONV3D ? 8 : 4;
        if (w.k % vol) continue;
        w.out_type = CT_DTYPE_UINT8;
        w.epi.d2s_block = 2;
        w.epi.d2s_mode = i % 2 ? CT_D2S_CRD : CT_D2S_DCR;
        if (variant == 4) w.epi.rounding = CT_ROUND_ONNX;
      }
      set_task(r, &w);
      int8_t *data, *weights;
      uint8_t *residual;
      void *got = reference_res(r, &w, &data, &weights, &residual);
      quant_store qs;
      ct_err err = {0};
      ck_assert_msg(quant_random(&w, o.seed, &qs, &err) == CT_OK, "%s", err.msg);
      size_t bytes = (size_t)workload_out_elems(&w) * workload_out_elem_bytes(&w);
      void *want = malloc(bytes);
      ck_assert_ptr_nonnull(want);
      ck_assert_msg(reference_qconv(&w, &qs.q, data, weights, residual, want, &err) == CT_OK, "%s",
                    err.msg);
      char key[CT_KEY_MAX];
      ck_assert_msg(memcmp(got, want, bytes) == 0, "%s: the GPU reference differs from the CPU's",
                    workload_key(&w, key, sizeof key));
      quant_store_free(&qs);
      free(want);
      free(got);
      free(data);
      free(weights);
      free(residual);
    }
  ck_assert_int_eq(runner_restarts(r), 0);
  runner_stop(r);
}
END_TEST

START_TEST(a_valid_config_measures_ok) {
  /* The builder first: it must be safe to start before the runner. */
  builder *b = NULL;
  ct_err err = {0};
  ck_assert_msg(builder_start(1, &dev.arch, &b, &err) == CT_OK, "%s", err.msg);
  runner_opts o;
  runner_opts_default(&o);
  runner *r = start(&o);
  instance inst;
  cubin c;
  run_result res;
  /* No task yet: refused. */
  ct_workload w;
  make_workload(&shapes[0], &w);
  build_good(b, &w, &inst, &c);
  ck_assert_int_eq(runner_measure(r, &inst, c.data, c.size, &res, &err), CT_ERR_INVALID_ARG);
  set_task(r, &w);
  for (int i = 0; i < 2; i++) {
    if (i == 1) { /* and a conv3d, batch 3, stride 2 */
      make_workload(&shapes[7], &w);
      set_task(r, &w);
      build_good(b, &w, &inst, &c);
    }
    res = measures_ok(r, &inst, &c, &o);
    printf("%s: median %.2f us, %d samples of %d launches on %s\n", shapes[i ? 7 : 0].name,
           res.median_us, res.n_samples, res.number, dev.name);
    fflush(stdout);
    cubin_free(&c);
  }
  ck_assert_int_eq(runner_restarts(r), 0);
  runner_stop(r);
  builder_stop(b);
}
END_TEST

static const char oob_source[] =
    "extern \"C\" __global__ void oob(const int *data, const int4 *weights, int *out) {\n"
    "  out[(1ll << 58) + threadIdx.x] = 1; /* 1 EiB past the output: beyond any GPU address */\n"
    "}\n";

/* Waits for a value that nobody writes (the output is poisoned). A volatile
 * local would not do: NVRTC keeps it in a register and drops the loop. */
static const char hang_source[] =
    "extern \"C\" __global__ void hang(const int *data, const int4 *weights, int *out) {\n"
    "  volatile int *flag = out;\n"
    "  while (flag[0] != 0x600dcafe) {\n"
    "  }\n"
    "}\n";

static const char lazy_source[] =
    "extern \"C\" __global__ void lazy(const int *data, const int4 *weights, int *out) {\n"
    "}\n";

/* The reference itself, with one lane of one position off by one: appended
 * to ref_conv.cu, so the rest is exact. Its shape as a ref_shape literal. */
static const char off_by_one_fmt[] =
    "%s\n"
    "extern \"C\" __global__ void off_by_one(const int *data, const int4 *weights, int *out,\n"
    "                                        const int *params, const void *residual) {\n"
    "  const ref_shape s = {%d, %d, %d, {%d, %d, %d}, {%d, %d, %d}, {%d, %d, %d},\n"
    "                       {%d, %d, %d}, {%d, %d, %d}, {%d, %d, %d}, %d, %d, 0, 0, 0, 0, 0, 0};\n"
    "  const long long total = (long long)s.n * s.kr * s.out[0] * s.out[1] * s.out[2];\n"
    "  const long long threads = (long long)blockDim.x * blockDim.y * blockDim.z;\n"
    "  const long long block =\n"
    "      blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);\n"
    "  const long long step = threads * gridDim.x * gridDim.y * gridDim.z;\n"
    "  const long long t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n"
    "  for (long long i = block * threads + t; i < total; i += step) {\n"
    "    long long e;\n"
    "    int v = ref_conv_value(s, data, weights, 0, 0, i, &e);\n"
    "    if (e == %d) v = (int)((unsigned)v + 1u);\n"
    "    out[e] = v;\n"
    "  }\n"
    "}\n";

#define OFF_POSITION 5

START_TEST(planted_faults_are_outcomes) {
  builder *b = NULL;
  ct_err err = {0};
  ck_assert_msg(builder_start(1, &dev.arch, &b, &err) == CT_OK, "%s", err.msg);
  runner_opts o;
  runner_opts_default(&o);
  o.timeout_s = 1.0;
  runner *r = start(&o);
  ct_workload w;
  make_workload(&shapes[0], &w);
  set_task(r, &w);
  instance good;
  cubin good_c;
  build_good(b, &w, &good, &good_c);
  measures_ok(r, &good, &good_c, &o);
  int8_t *data0, *weights0;
  int32_t *ref0 = reference_of(r, &w, &data0, &weights0);
  size_t nd = (size_t)workload_data_elems(&w), nw = (size_t)workload_weight_elems(&w);
  size_t no = (size_t)workload_out_elems(&w);
  instance inst;
  cubin c;
  run_result res;
  char want[1024];

  /* An illegal address: a fault, the worker replaced, the task set up
   * again with the same inputs. */
  plant(&good, "oob", oob_source, &inst, &c);
  res = measure(r, &inst, c.data, c.size);
  ck_assert_msg(res.outcome == OUT_RUNTIME_ERROR, "%s: %s", outcome_name(res.outcome), res.error);
  ck_assert_msg(strstr(res.error, "cudaErrorIllegalAddress"), "%s", res.error);
  ck_assert_int_eq(runner_restarts(r), 1);
  cubin_free(&c);
  measures_ok(r, &good, &good_c, &o);
  int8_t *data1, *weights1;
  int32_t *ref1 = reference_of(r, &w, &data1, &weights1);
  ck_assert_int_eq(memcmp(data0, data1, nd), 0);
  ck_assert_int_eq(memcmp(weights0, weights1, nw), 0);
  ck_assert_int_eq(memcmp(ref0, ref1, no * sizeof *ref0), 0);
  free(data1);
  free(weights1);
  free(ref1);

  /* A hang: killed after timeout_s, replaced. */
  plant(&good, "hang", hang_source, &inst, &c);
  res = measure(r, &inst, c.data, c.size);
  ck_assert_msg(res.outcome == OUT_TIMEOUT, "%s: %s", outcome_name(res.outcome), res.error);
  ck_assert_msg(strstr(res.error, "no result within 1 s"), "%s", res.error);
  ck_assert_int_eq(runner_restarts(r), 2);
  cubin_free(&c);
  measures_ok(r, &good, &good_c, &o);

  /* One wrong lane: exactly reported. */
  geom3 g;
  workload_geom(&w, &g);
  const char *ref_source = template_embedded("ref_conv.cu");
  ck_assert_ptr_nonnull(ref_source);
  size_t n_src = strlen(ref_source) + sizeof off_by_one_fmt + 256;
  char *src = malloc(n_src);
  ck_assert_ptr_nonnull(src);
  snprintf(src, n_src, off_by_one_fmt, ref_source, (int)g.n, (int)g.c / 4, (int)g.k / 4,
           (int)g.in[0], (int)g.in[1], (int)g.in[2], (int)g.ker[0], (int)g.ker[1], (int)g.ker[2],
           (int)g.str[0], (int)g.str[1], (int)g.str[2], (int)g.pb[0], (int)g.pb[1], (int)g.pb[2],
           (int)g.dil[0], (int)g.dil[1], (int)g.dil[2], (int)g.out[0], (int)g.out[1], (int)g.out[2],
           (int)g.k, (int)g.k, 4 * OFF_POSITION + 1);
  plant(&good, "off_by_one", src, &inst, &c);
  free(src);
  res = measure(r, &inst, c.data, c.size);
  ck_assert_msg(res.outcome == OUT_WRONG_ANSWER, "%s: %s", outcome_name(res.outcome), res.error);
  int bad = 4 * OFF_POSITION + 1;
  snprintf(want, sizeof want, "1 of %zu elements differ, first at index %d: got %d, want %d", no,
           bad, (int32_t)((uint32_t)ref0[bad] + 1u), ref0[bad]);
  ck_assert_str_eq(res.error, want);
  cubin_free(&c);
  measures_ok(r, &good, &good_c, &o);

  /* Nothing written: the poison shows everywhere. */
  plant(&good, "lazy", lazy_source, &inst, &c);
  res = measure(r, &inst, c.data, c.size);
  ck_assert_msg(res.outcome == OUT_WRONG_ANSWER, "%s: %s", outcome_name(res.outcome), res.error);
  snprintf(want, sizeof want, "%zu of %zu elements differ, first at index 0: got %d, want %d", no,
           no, (int32_t)0xA5A5A5A5u, ref0[0]);
  ck_assert_str_eq(res.error, want);
  cubin_free(&c);
  ck_assert_int_eq(runner_restarts(r), 2);

  /* A block of 2048 threads cannot launch; a corrupt cubin cannot load. */
  inst = good;
  inst.block[0] = 2048;
  res = measure(r, &inst, good_c.data, good_c.size);
  ck_assert_msg(res.outcome == OUT_LAUNCH_ERROR, "%s: %s", outcome_name(res.outcome), res.error);
  ck_assert_msg(strstr(res.error, "cudaLaunchKernel"), "%s", res.error);
  measures_ok(r, &good, &good_c, &o);
  static const char garbage[] = "this is not a cubin, though it is long enough to be read";
  res = measure(r, &good, garbage, sizeof garbage);
  ck_assert_msg(res.outcome == OUT_LAUNCH_ERROR, "%s: %s", outcome_name(res.outcome), res.error);
  measures_ok(r, &good, &good_c, &o);
  ck_assert_int_eq(runner_restarts(r), 2);

  free(data0);
  free(weights0);
  free(ref0);
  cubin_free(&good_c);
  runner_stop(r);
  builder_stop(b);
}
END_TEST

/* ---- channels last ------------------------------------------------------------ */

/* The shapes, and a few with channels that are no multiple of 4 (which the
 * packed layout would pad), in nhwc. */
/* clang-format off */
static const shape odd_channels[] = {
    {"c5k7 3x3 s2 b3", CT_OP_CONV2D, 3, 5, 7, {0, 9, 11}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
    {"stem c3k6 7x7", CT_OP_CONV2D, 1, 3, 6, {0, 15, 13}, {0, 7, 7}, {0, 2, 2}, {0, 3, 3}, {0, 3, 3}, {0, 1, 1}, 1},
    {"3d c3k5", CT_OP_CONV3D, 1, 3, 5, {3, 7, 5}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
};
/* clang-format on */

/* Bytes of w's output. */
static size_t out_bytes(const ct_workload *w) {
  return (size_t)workload_out_elems(w) * workload_out_elem_bytes(w);
}

static void nhwc_workload(const shape *sh, ct_workload *w) {
  shape_workload(sh, w);
  w->layout = CT_LAYOUT_NHWC;
  ct_err err = {0};
  ck_assert_msg(workload_validate(w, &err) == CT_OK, "%s: %s", sh->name, err.msg);
}

/* The GPU reference of the nhwc task w against reference_qconv on the same
 * inputs (copied back from the worker), byte for byte. */
static void nhwc_matches_cpu(runner *r, const ct_workload *w, const char *name) {
  runner_opts o;
  runner_opts_default(&o);
  set_task(r, w);
  int8_t *data, *weights;
  uint8_t *residual;
  void *got = reference_res(r, w, &data, &weights, &residual);
  quant_store qs;
  ct_err err = {0};
  ck_assert_msg(quant_random(w, o.seed, &qs, &err) == CT_OK, "%s", err.msg);
  size_t bytes = (size_t)workload_out_elems(w) * workload_out_elem_bytes(w);
  void *want = malloc(bytes);
  ck_assert_ptr_nonnull(want);
  ck_assert_msg(reference_qconv(w, &qs.q, data, weights, residual, want, &err) == CT_OK, "%s: %s",
                name, err.msg);
  size_t eb = workload_out_elem_bytes(w), bad = 0, first = 0;
  for (size_t j = 0; j < bytes; j++)
    if (((uint8_t *)got)[j] != ((uint8_t *)want)[j] && bad++ == 0) first = j / eb;
  char key[CT_KEY_MAX];
  ck_assert_msg(bad == 0, "%s (%s): %zu bytes of %zu differ, first in element %zu", name,
                workload_key(w, key, sizeof key), bad, bytes, first);
  quant_store_free(&qs);
  free(want);
  free(got);
  free(data);
  free(weights);
  free(residual);
}

START_TEST(gpu_reference_nhwc_equals_cpu_reference) {
  runner *r = start(NULL);
  int n_odd_bytes = 0;
  for (int set = 0; set < 2; set++) {
    const shape *list = set ? odd_channels : shapes;
    size_t n =
        set ? sizeof odd_channels / sizeof odd_channels[0] : sizeof shapes / sizeof shapes[0];
    for (size_t i = 0; i < n; i++)
      for (int variant = 0; variant < 4; variant++) {
        ct_workload w;
        nhwc_workload(&list[i], &w);
        if (variant == 1) { /* uint8 data with a zero point, weight zero points, bias */
          w.data_type = CT_DTYPE_UINT8;
          w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = 1;
        } else if (variant >= 2) { /* int8 out, per channel, residual, uint8 for odd i; 3: onnx */
          w.out_type = i % 2 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
          w.epi.bias = 1;
          w.epi.scale = CT_SCALE_CHANNEL;
          w.epi.residual = 1;
          if (variant == 3) w.epi.rounding = CT_ROUND_ONNX;
          n_odd_bytes += out_bytes(&w) % 4 != 0;
        }
        nhwc_matches_cpu(r, &w, list[i].name);
      }
  }
  ck_assert_int_gt(n_odd_bytes, 0); /* c5k7: 3 x 30 pixels x 7 bytes, the tail of a word */
  ck_assert_int_eq(runner_restarts(r), 0);
  runner_stop(r);
}
END_TEST

/* Grouped and depthwise (issue 35): the GPU reference against the CPU's in
 * both layouts, int32 and requantized with every epilogue field. */
START_TEST(gpu_reference_grouped_equals_cpu_reference) {
  /* clang-format off */
  static const shape grouped[] = {
    {"dw 3x3 c8", CT_OP_CONV2D, 2, 8, 8, {0, 9, 11}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 8},
    {"dw x2 5x5 s2", CT_OP_CONV2D, 1, 8, 16, {0, 13, 12}, {0, 5, 5}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, {0, 1, 1}, 8},
    {"g4 cpg4 s2", CT_OP_CONV2D, 3, 16, 16, {0, 10, 9}, {0, 3, 3}, {0, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 4},
    {"g2 cpg6 dil2", CT_OP_CONV2D, 1, 12, 8, {0, 9, 9}, {0, 3, 3}, {0, 1, 1}, {0, 2, 2}, {0, 2, 2}, {0, 2, 2}, 2},
    {"dw 3d c8", CT_OP_CONV3D, 1, 8, 8, {4, 7, 6}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 8},
  };
  /* clang-format on */
  runner *r = start(NULL);
  for (size_t i = 0; i < sizeof grouped / sizeof grouped[0]; i++)
    for (int nhwc = 0; nhwc < 2; nhwc++)
      for (int variant = 0; variant < 3; variant++) {
        ct_workload w;
        shape_workload(&grouped[i], &w);
        if (nhwc) w.layout = CT_LAYOUT_NHWC;
        if (variant == 1) { /* uint8 data with a zero point, weight zero points, bias */
          w.data_type = CT_DTYPE_UINT8;
          w.epi.data_zero_point = w.epi.weight_zero_point = w.epi.bias = 1;
        } else if (variant == 2) { /* int8 out, per channel, residual, onnx rounding */
          w.out_type = CT_DTYPE_INT8;
          w.epi.bias = w.epi.residual = 1;
          w.epi.scale = CT_SCALE_CHANNEL;
          w.epi.rounding = CT_ROUND_ONNX;
        }
        ct_err err = {0};
        ck_assert_msg(workload_validate(&w, &err) == CT_OK, "%s: %s", grouped[i].name, err.msg);
        nhwc_matches_cpu(r, &w, grouped[i].name);
      }
  ck_assert_int_eq(runner_restarts(r), 0);
  runner_stop(r);
}
END_TEST

/* An 8-bit nhwc output of odd size left unwritten: a wrong answer located
 * in the output; a template of another layout: refused before the worker. */
START_TEST(nhwc_wrong_answers_and_layouts) {
  builder *b = NULL;
  ct_err err = {0};
  ck_assert_msg(builder_start(1, &dev.arch, &b, &err) == CT_OK, "%s", err.msg);
  runner *r = start(NULL);
  ct_workload p4, w;
  make_workload(&shapes[0], &p4);
  instance good;
  cubin good_c;
  build_good(b, &p4, &good, &good_c);
  nhwc_workload(&odd_channels[0], &w);
  w.out_type = CT_DTYPE_INT8;
  w.epi.bias = 1;
  ck_assert_uint_ne(out_bytes(&w) % 4, 0);
  set_task(r, &w);
  run_result res;
  ck_assert_int_eq(runner_measure(r, &good, good_c.data, good_c.size, &res, &err),
                   CT_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err.msg, "runs layout nchw4c; the task is nhwc"), "%s", err.msg);
  instance inst;
  cubin c;
  plant(&good, "lazy", lazy_source, &inst, &c);
  inst.tpl = NULL; /* a planted kernel: no template, no layout */
  res = measure(r, &inst, c.data, c.size);
  ck_assert_msg(res.outcome == OUT_WRONG_ANSWER, "%s: %s", outcome_name(res.outcome), res.error);
  char want[128];
  snprintf(want, sizeof want, " of %zu words (4 bytes of the nhwc output each) differ",
           (out_bytes(&w) + 3) / 4);
  ck_assert_msg(strstr(res.error, want) && strstr(res.error, "(image 0, pixel ") &&
                    strstr(res.error, ": got -91, want "),
                "%s", res.error);
  cubin_free(&c);
  ck_assert_int_eq(runner_restarts(r), 0);
  cubin_free(&good_c);
  runner_stop(r);
  builder_stop(b);
}
END_TEST

/* A random config of each registered nhwc template measures OK on an nhwc
 * task (int32, and int8 with bias and per-channel scales). */
START_TEST(nhwc_templates_measure_ok) {
  static const char *const names[] = {"conv2d_nhwc_wgmma", "conv3d_ndhwc_wgmma"};
  /* clang-format off */
  static const shape nhwc_shapes[] = {
      {"3x3 c64 k64 b2", CT_OP_CONV2D, 2, 64, 64, {0, 14, 14}, {0, 3, 3}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},
      {"3x3x3 c32 k64", CT_OP_CONV3D, 1, 32, 64, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
  };
  /* clang-format on */
  if (dev.arch.cc_major != 9 || dev.arch.cc_minor != 0) {
    TEST_SKIP("the nhwc templates run on sm_90 only, this is %s", dev.arch.name);
  }
  builder *b = NULL;
  ct_err err = {0};
  ck_assert_msg(builder_start(1, &dev.arch, &b, &err) == CT_OK, "%s", err.msg);
  runner_opts o;
  runner_opts_default(&o);
  runner *r = start(&o);
  for (int i = 0; i < 2; i++) {
    const template_desc *tpl = template_find(names[i]);
    ck_assert_msg(tpl != NULL, "%s is not registered", names[i]);
    ck_assert_int_eq(tpl->layout, CT_LAYOUT_NHWC);
    for (int q = 0; q < 2; q++) {
      ct_workload w;
      nhwc_workload(&nhwc_shapes[i], &w);
      if (q) {
        w.out_type = CT_DTYPE_INT8;
        w.epi.bias = 1;
        w.epi.scale = CT_SCALE_CHANNEL;
      }
      set_task(r, &w);
      instance inst;
      cubin c;
      build_config(b, tpl, &w, &inst, &c);
      run_result res = measures_ok(r, &inst, &c, &o);
      printf("%s %s%s: median %.2f us\n", names[i], nhwc_shapes[i].name, q ? " int8 out" : "",
             res.median_us);
      fflush(stdout);
      cubin_free(&c);
    }
  }
  ck_assert_int_eq(runner_restarts(r), 0);
  runner_stop(r);
  builder_stop(b);
}
END_TEST

/* opts.values (tune --model): a task whose workload has an entry runs with
 * those values, not quant_random's, and again after a restart; a task
 * without one keeps the random values of the runner's seed. */
START_TEST(given_values_are_used) {
  ct_workload ws[2];
  make_workload(&shapes[1], &ws[0]); /* packed, batch 3, stride 2: in the table */
  nhwc_workload(&shapes[0], &ws[1]); /* channels-last, a residual: not in it */
  quant_store given[2], seeded[2];
  runner_opts o;
  runner_opts_default(&o);
  ct_err err = {0};
  for (int i = 0; i < 2; i++) {
    ct_workload *w = &ws[i];
    w->out_type = CT_DTYPE_INT8;
    w->epi.bias = 1;
    w->epi.scale = CT_SCALE_CHANNEL;
    w->epi.residual = i == 1;
    w->epi.rounding = CT_ROUND_ONNX;
    ck_assert_msg(quant_random(w, o.seed + 98, &given[i], &err) == CT_OK, "%s", err.msg);
    ck_assert_msg(quant_random(w, o.seed, &seeded[i], &err) == CT_OK, "%s", err.msg);
  }
  quant_table t = {0};
  ck_assert_msg(quant_table_add(&t, &ws[0], &given[0].q, NULL, &err) == CT_OK, "%s", err.msg);
  o.values = &t;
  runner *r = start(&o);
  builder *b = NULL;
  ck_assert_msg(builder_start(1, &dev.arch, &b, &err) == CT_OK, "%s", err.msg);
  for (int pass = 0; pass < 3; pass++) {
    const int x = pass == 2; /* 0, 0 (after a fault), 1 */
    const ct_workload *w = &ws[x];
    if (pass == 1) { /* a fault: the worker replaced, the task set up again */
      instance good, bad;
      cubin good_c, bad_c;
      build_good(b, w, &good, &good_c);
      plant(&good, "oob", oob_source, &bad, &bad_c);
      run_result res = measure(r, &bad, bad_c.data, bad_c.size);
      ck_assert_msg(res.outcome == OUT_RUNTIME_ERROR, "%s: %s", outcome_name(res.outcome),
                    res.error);
      ck_assert_int_eq(runner_restarts(r), 1);
      cubin_free(&bad_c);
      cubin_free(&good_c);
    } else {
      set_task(r, w);
    }
    const ct_quant *want_q = x ? &seeded[1].q : &given[0].q;
    const ct_quant *not_q = x ? &given[1].q : &seeded[0].q;
    int8_t *data, *weights;
    uint8_t *residual;
    void *got = reference_res(r, w, &data, &weights, &residual);
    size_t bytes = (size_t)workload_out_elems(w) * workload_out_elem_bytes(w);
    void *want = malloc(bytes), *other = malloc(bytes);
    ck_assert(want && other);
    ck_assert_msg(reference_qconv(w, want_q, data, weights, x ? residual : NULL, want, &err) ==
                      CT_OK,
                  "%s", err.msg);
    ck_assert_msg(reference_qconv(w, not_q, data, weights, x ? residual : NULL, other, &err) ==
                      CT_OK,
                  "%s", err.msg);
    ck_assert_msg(memcmp(got, want, bytes) == 0, "pass %d: not the values expected", pass);
    ck_assert_msg(memcmp(want, other, bytes) != 0, "pass %d: both values give one output", pass);
    free(want);
    free(other);
    free(got);
    free(data);
    free(weights);
    free(residual);
  }
  builder_stop(b);
  runner_stop(r);
  quant_table_free(&t);
  for (int i = 0; i < 2; i++) {
    quant_store_free(&given[i]);
    quant_store_free(&seeded[i]);
  }
}
END_TEST

START_TEST(bad_options_are_rejected) {
  runner_opts o;
  runner_opts_default(&o);
  ck_assert_int_eq(o.device, 0);
  ck_assert_double_eq(o.timeout_s, 5.0);
  ck_assert_double_eq(o.min_repeat_ms, 1.0);
  ck_assert_int_eq(o.repeats, 5);
  ck_assert_int_eq(o.max_number, 1000);
  ck_assert_int_eq(o.flush_l2, 1);
  ck_assert_ptr_null(o.values);
  runner *r = NULL;
  ct_err err = {0};
  o.repeats = 17;
  ck_assert_int_eq(runner_start(&o, &r, NULL, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "repeats"));
  ck_assert_ptr_null(r);
  runner_opts_default(&o);
  o.timeout_s = 0;
  ck_assert_int_eq(runner_start(&o, &r, NULL, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "timeout_s"));
  runner_stop(NULL);
}
END_TEST

static void add_runner(TCase *tc) {
  tcase_add_test(tc, bad_options_are_rejected);
  tcase_add_test(tc, gpu_reference_equals_cpu_reference);
  tcase_add_test(tc, a_valid_config_measures_ok);
  tcase_add_test(tc, planted_faults_are_outcomes);
  tcase_add_test(tc, gpu_reference_nhwc_equals_cpu_reference);
  tcase_add_test(tc, gpu_reference_grouped_equals_cpu_reference);
  tcase_add_test(tc, nhwc_wrong_answers_and_layouts);
  tcase_add_test(tc, nhwc_templates_measure_ok);
  tcase_add_test(tc, given_values_are_used);
}

static const test_case suite_cases[] = {
    {"runner", 300, add_runner},
    {NULL, 0, NULL},
};

/* test_main's probe: a runner started and stopped (its worker makes the
 * CUDA context, so this process never does). */
static int have_gpu(char *why, size_t size) {
  ct_err err = {0};
  runner *probe = NULL;
  ct_status st = runner_start(NULL, &probe, &dev, &err);
  if (st == CT_ERR_NO_DEVICE || (st != CT_OK && access("/dev/nvidiactl", F_OK) != 0)) {
    snprintf(why, size, "no CUDA device (%s)", err.msg);
    return 0;
  }
  if (st != CT_OK) {
    snprintf(why, size, "runner_start: %s", err.msg);
    return -1;
  }
  runner_stop(probe);
  return 1;
}

int main(void) {
  static const test_suite suite = {"runner", suite_cases, 1, have_gpu};
  return test_main(&suite);
}
