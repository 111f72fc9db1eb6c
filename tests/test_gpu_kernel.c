/*
 * test_gpu_kernel.c: device identity, cubin loading and launching on a GPU
 * (gpu/device.c, gpu/kernel.c, with gpu/nvrtc.c end to end).
 *
 * Hand-written kernels are compiled for the device's own architecture,
 * loaded, launched with hand-filled instances, and their outputs compared
 * exactly with the same arithmetic done here on the host: a dp4a kernel over
 * a size that is not a multiple of the block (with the arguments in a
 * different order than the instance's kinds, so the mapping is tested), and
 * a kernel that uses all the device's opt-in dynamic shared memory. Failures
 * that the tuner records as outcomes (bad launch geometry, too much shared
 * memory, a missing kernel, a compile error) must come back as statuses and
 * leave the context usable. Exits 77 (skipped) without a GPU. Check runs in
 * CK_NOFORK mode: a CUDA context does not survive a fork.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "core/rng.h"
#include "gpu/device.h"
#include "gpu/kernel.h"
#include "gpu/nvrtc.h"
#include "tests/util.h"

#define POISON ((int32_t)0x7EADBEEF)

/* 1000 is not a multiple of the 128-thread block: the last block has a tail. */
#define N_ELEMS 1000
#define BLOCK   128

static const char dp4a_source[] =
    "extern \"C\" __global__ void add_dp4a(int *out, const int *a, const int4 *b) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < N) out[i] = __dp4a(a[i], b[i].x, b[i].y) + __dp4a(b[i].z, b[i].w, 0);\n"
    "}\n";

/* Each thread fills a strided share of the whole dynamic shared memory,
 * then sums the mirror images of its share: every word written is read by
 * another thread, so a short allocation or a missing barrier shows. */
static const char smem_source[] =
    "extern \"C\" __global__ void smem_sum(const int *seed, int *out) {\n"
    "  extern __shared__ int s[];\n"
    "  for (int j = threadIdx.x; j < SMEM_INTS; j += blockDim.x)\n"
    "    s[j] = j * 3 + seed[blockIdx.x];\n"
    "  __syncthreads();\n"
    "  int sum = 0;\n"
    "  for (int j = threadIdx.x; j < SMEM_INTS; j += blockDim.x) sum += s[SMEM_INTS - 1 - j];\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;\n"
    "}\n";

/* What __dp4a(a, b, c) computes: the dot product of the four signed bytes
 * of a and b, plus c. */
static int32_t dp4a_host(int32_t a, int32_t b, int32_t c) {
  int32_t sum = c;
  for (int k = 0; k < 4; k++)
    sum += (int32_t)(int8_t)((uint32_t)a >> (8 * k)) * (int32_t)(int8_t)((uint32_t)b >> (8 * k));
  return sum;
}

static device open_device(void) {
  device dev;
  ct_err err = {0};
  ct_status st = device_open(0, &dev, &err);
  ck_assert_msg(st == CT_OK, "device_open: %s", err.msg);
  return dev;
}

static void compile_for_device(const device *dev, const char *name, const char *source,
                               const char *const *options, int n_options, cubin *out) {
  ct_err err = {0};
  ct_status st = nvrtc_compile_source(name, source, options, n_options, &dev->arch, out, &err);
  ck_assert_msg(st == CT_OK, "%s: %s\n%s", name, err.msg, out->log ? out->log : "");
}

static instance make_instance(const char *kernel_name, unsigned grid_x, unsigned block_x,
                              size_t smem_bytes) {
  instance inst;
  memset(&inst, 0, sizeof inst);
  snprintf(inst.kernel_name, sizeof inst.kernel_name, "%s", kernel_name);
  inst.grid[0] = grid_x;
  inst.grid[1] = inst.grid[2] = 1;
  inst.block[0] = block_x;
  inst.block[1] = inst.block[2] = 1;
  inst.smem_bytes = smem_bytes;
  return inst;
}

static void *device_alloc(size_t bytes) {
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes);
  ck_assert_msg(e == cudaSuccess, "cudaMalloc(%zu): %s", bytes, cudaGetErrorString(e));
  return p;
}

static void check_cuda(cudaError_t e, const char *what) {
  ck_assert_msg(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
}

START_TEST(device_reports_sane_limits) {
  device dev = open_device();
  ct_err err = {0};
  ck_assert_int_eq(dev.ordinal, 0);
  ck_assert_uint_gt(strlen(dev.name), 0);
  ck_assert_int_ge(dev.arch.cc_major, 6);
  ck_assert_int_ge(dev.arch.cc_minor, 0);
  char want[16];
  snprintf(want, sizeof want, "sm_%d%d", dev.arch.cc_major, dev.arch.cc_minor);
  ck_assert_str_eq(dev.arch.name, want);
  ck_assert_int_ge(dev.arch.smem_optin_bytes, 48 * 1024);
  ck_assert_int_ge(dev.arch.smem_per_sm_bytes, dev.arch.smem_optin_bytes);
  ck_assert_int_eq(dev.arch.max_threads_per_block, 1024);
  ck_assert_int_ge(dev.arch.regs_per_sm, 32768);
  ck_assert_int_ge(dev.arch.regs_per_block, 32768);
  ck_assert_int_eq(dev.arch.max_regs_per_thread, 255);
  ck_assert_int_gt(dev.arch.sm_count, 0);
  ck_assert_int_ge(dev.driver_version, 12000);
  ck_assert_int_ge(dev.runtime_version, 12000);
  ck_assert_int_gt(dev.global_mem_bytes, 1LL << 30);
  ck_assert_int_gt(dev.l2_bytes, 0);
  ck_assert_int_gt(dev.clock_khz, 0);
  /* Where the table knows the architecture, the device agrees on its limits. */
  arch named;
  if (arch_from_name(dev.arch.name, &named, NULL) == CT_OK) {
    ck_assert_int_eq(dev.arch.smem_optin_bytes, named.smem_optin_bytes);
    ck_assert_int_eq(dev.arch.smem_per_sm_bytes, named.smem_per_sm_bytes);
  }
  device bad;
  ck_assert_int_eq(device_open(-1, &bad, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(device_open(device_count(), &bad, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "out of range"));
}
END_TEST

START_TEST(dp4a_kernel_matches_host) {
  device dev = open_device();
  char n_option[32];
  snprintf(n_option, sizeof n_option, "-DN=%d", N_ELEMS);
  const char *options[] = {n_option};
  cubin c;
  compile_for_device(&dev, "add_dp4a.cu", dp4a_source, options, 1, &c);

  /* The kernel takes (out, a, b): the instance's kinds say which is which. */
  instance inst = make_instance("add_dp4a", (N_ELEMS + BLOCK - 1) / BLOCK, BLOCK, 0);
  inst.n_args = 3;
  inst.args[0] = ARG_OUT;
  inst.args[1] = ARG_DATA;
  inst.args[2] = ARG_WEIGHTS;
  kernel k;
  ct_err err = {0};
  ct_status st = kernel_load(c.data, c.size, &inst, &k, &err);
  ck_assert_msg(st == CT_OK, "kernel_load: %s", err.msg);
  ck_assert_ptr_nonnull(k.lib);
  ck_assert_ptr_nonnull(k.fn);

  int32_t *a = malloc(N_ELEMS * sizeof *a), *b = malloc(4 * N_ELEMS * sizeof *b);
  int32_t *out = malloc((N_ELEMS + 1) * sizeof *out);
  ck_assert(a && b && out);
  /* Random words: every byte value, signs included, reaches dp4a. */
  rng r;
  rng_seed(&r, 12345);
  for (int i = 0; i < N_ELEMS; i++) a[i] = (int32_t)(uint32_t)rng_next(&r);
  for (int i = 0; i < 4 * N_ELEMS; i++) b[i] = (int32_t)(uint32_t)rng_next(&r);
  /* One extra output word after the end catches a kernel that overruns. */
  for (int i = 0; i <= N_ELEMS; i++) out[i] = POISON;
  void *d_a = device_alloc(N_ELEMS * sizeof *a), *d_b = device_alloc(4 * N_ELEMS * sizeof *b);
  void *d_out = device_alloc((N_ELEMS + 1) * sizeof *out);
  check_cuda(cudaMemcpy(d_a, a, N_ELEMS * sizeof *a, cudaMemcpyHostToDevice), "copy a");
  check_cuda(cudaMemcpy(d_b, b, 4 * N_ELEMS * sizeof *b, cudaMemcpyHostToDevice), "copy b");
  check_cuda(cudaMemcpy(d_out, out, (N_ELEMS + 1) * sizeof *out, cudaMemcpyHostToDevice),
             "poison out");

  st = kernel_launch(&k, &inst, &(kernel_io){d_a, d_b, d_out, NULL, NULL}, 0, &err);
  ck_assert_msg(st == CT_OK, "kernel_launch: %s", err.msg);
  check_cuda(cudaDeviceSynchronize(), "synchronise");
  check_cuda(cudaMemcpy(out, d_out, (N_ELEMS + 1) * sizeof *out, cudaMemcpyDeviceToHost),
             "copy out");
  for (int i = 0; i < N_ELEMS; i++) {
    const int32_t *bi = b + 4 * i;
    int32_t want = dp4a_host(a[i], bi[0], bi[1]) + dp4a_host(bi[2], bi[3], 0);
    if (out[i] != want) ck_abort_msg("out[%d] is %d, want %d", i, out[i], want);
  }
  ck_assert_int_eq(out[N_ELEMS], POISON);

  kernel_unload(&k);
  ck_assert_ptr_null(k.lib);
  ck_assert_ptr_null(k.fn);
  kernel_unload(&k); /* a zeroed kernel is accepted */
  kernel_unload(NULL);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_out);
  free(a);
  free(b);
  free(out);
  cubin_free(&c);
}
END_TEST

START_TEST(opt_in_shared_memory_is_usable) {
  device dev = open_device();
  /* All of it: 227 KB on an H200, well past the 48 KB default. */
  size_t smem = (size_t)dev.arch.smem_optin_bytes;
  int smem_ints = (int)(smem / sizeof(int32_t));
  char smem_option[48];
  snprintf(smem_option, sizeof smem_option, "-DSMEM_INTS=%d", smem_ints);
  const char *options[] = {smem_option};
  cubin c;
  compile_for_device(&dev, "smem_sum.cu", smem_source, options, 1, &c);

  enum { GRID = 3, THREADS = 256 };
  instance inst = make_instance("smem_sum", GRID, THREADS, smem);
  inst.n_args = 2;
  inst.args[0] = ARG_DATA;
  inst.args[1] = ARG_OUT;
  kernel k;
  ct_err err = {0};
  ct_status st = kernel_load(c.data, c.size, &inst, &k, &err);
  ck_assert_msg(st == CT_OK, "kernel_load: %s", err.msg);
  ck_assert_uint_eq(k.smem_bytes, smem);

  int32_t seeds[GRID] = {7, -1000, 123456};
  int32_t out[GRID * THREADS];
  for (int i = 0; i < GRID * THREADS; i++) out[i] = POISON;
  void *d_seed = device_alloc(sizeof seeds), *d_out = device_alloc(sizeof out);
  check_cuda(cudaMemcpy(d_seed, seeds, sizeof seeds, cudaMemcpyHostToDevice), "copy seeds");
  check_cuda(cudaMemcpy(d_out, out, sizeof out, cudaMemcpyHostToDevice), "poison out");
  st = kernel_launch(&k, &inst, &(kernel_io){d_seed, NULL, d_out, NULL, NULL}, 0, &err);
  ck_assert_msg(st == CT_OK, "kernel_launch: %s", err.msg);
  check_cuda(cudaDeviceSynchronize(), "synchronise");
  check_cuda(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost), "copy out");
  for (int b = 0; b < GRID; b++) {
    for (int t = 0; t < THREADS; t++) {
      int32_t want = 0;
      for (int j = t; j < smem_ints; j += THREADS) want += (smem_ints - 1 - j) * 3 + seeds[b];
      int32_t got = out[b * THREADS + t];
      if (got != want) ck_abort_msg("block %d thread %d: %d, want %d", b, t, got, want);
    }
  }

  /* Asking the launch for more than the load opted in to is refused. */
  kernel small;
  instance small_inst = inst;
  small_inst.smem_bytes = 0;
  ck_assert_int_eq(kernel_load(c.data, c.size, &small_inst, &small, &err), CT_OK);
  ck_assert_int_eq(
      kernel_launch(&small, &inst, &(kernel_io){d_seed, NULL, d_out, NULL, NULL}, 0, &err),
      CT_ERR_INVALID_ARG);
  kernel_unload(&small);

  /* More than the device allows fails at load, as a status, unloaded. */
  instance big = inst;
  big.smem_bytes = smem + 1024;
  kernel k_big;
  ck_assert_int_eq(kernel_load(c.data, c.size, &big, &k_big, &err), CT_ERR_CUDA);
  ck_assert_ptr_nonnull(strstr(err.msg, "smem_sum"));
  ck_assert_ptr_null(k_big.lib);
  ck_assert_ptr_null(k_big.fn);

  kernel_unload(&k);
  cudaFree(d_seed);
  cudaFree(d_out);
  cubin_free(&c);
  check_cuda(cudaGetLastError(), "no error left behind");
}
END_TEST

START_TEST(failures_are_statuses_and_the_context_survives) {
  device dev = open_device();
  char n_option[32];
  snprintf(n_option, sizeof n_option, "-DN=%d", N_ELEMS);
  const char *options[] = {n_option};
  cubin c;
  compile_for_device(&dev, "add_dp4a.cu", dp4a_source, options, 1, &c);
  ct_err err = {0};
  kernel k;

  /* A name the cubin does not have. */
  instance missing = make_instance("no_such_kernel", 1, 1, 0);
  ck_assert_int_eq(kernel_load(c.data, c.size, &missing, &k, &err), CT_ERR_CUDA);
  ck_assert_ptr_nonnull(strstr(err.msg, "no_such_kernel"));
  ck_assert_ptr_null(k.lib);

  /* Too many threads per block: a launch error, reported at once. */
  instance inst = make_instance("add_dp4a", 1, 2048, 0);
  inst.n_args = 3;
  inst.args[0] = ARG_OUT;
  inst.args[1] = ARG_DATA;
  inst.args[2] = ARG_WEIGHTS;
  ck_assert_int_eq(kernel_load(c.data, c.size, &inst, &k, &err), CT_OK);
  void *d_a = device_alloc(N_ELEMS * sizeof(int32_t));
  void *d_b = device_alloc(4 * N_ELEMS * sizeof(int32_t));
  void *d_out = device_alloc(N_ELEMS * sizeof(int32_t));
  check_cuda(cudaMemset(d_a, 0x01, N_ELEMS * sizeof(int32_t)), "fill a");
  check_cuda(cudaMemset(d_b, 0x02, 4 * N_ELEMS * sizeof(int32_t)), "fill b");
  ck_assert_int_eq(kernel_launch(&k, &inst, &(kernel_io){d_a, d_b, d_out, NULL, NULL}, 0, &err),
                   CT_ERR_CUDA);
  ck_assert_ptr_nonnull(strstr(err.msg, "cudaLaunchKernel"));
  ck_assert_ptr_nonnull(strstr(err.msg, "2048"));
  /* The error was reported, not left for the next config to find. */
  check_cuda(cudaGetLastError(), "last error after a failed launch");

  /* The same kernel with a sane block then runs: bytes 1 and 2 give
   * dp4a(0x01010101, 0x02020202, 0x02020202) + dp4a(0x02020202, 0x02020202, 0). */
  inst.grid[0] = (N_ELEMS + BLOCK - 1) / BLOCK;
  inst.block[0] = BLOCK;
  ck_assert_int_eq(kernel_launch(&k, &inst, &(kernel_io){d_a, d_b, d_out, NULL, NULL}, 0, &err),
                   CT_OK);
  check_cuda(cudaDeviceSynchronize(), "synchronise");
  int32_t out[N_ELEMS];
  check_cuda(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost), "copy out");
  for (int i = 0; i < N_ELEMS; i++)
    if (out[i] != 4 * 2 + 0x02020202 + 4 * 4)
      ck_abort_msg("out[%d] is %d, want %d", i, out[i], 4 * 2 + 0x02020202 + 4 * 4);

  /* An argument kind out of range and an unloaded kernel are refused. */
  instance bad_arg = inst;
  bad_arg.args[2] = (kernel_arg)7;
  ck_assert_int_eq(kernel_launch(&k, &bad_arg, &(kernel_io){d_a, d_b, d_out, NULL, NULL}, 0, &err),
                   CT_ERR_INVALID_ARG);
  kernel none;
  memset(&none, 0, sizeof none);
  ck_assert_int_eq(kernel_launch(&none, &inst, &(kernel_io){d_a, d_b, d_out, NULL, NULL}, 0, &err),
                   CT_ERR_INVALID_ARG);

  kernel_unload(&k);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_out);
  cubin_free(&c);
}
END_TEST

START_TEST(compile_error_is_a_status_with_its_log) {
  device dev = open_device();
  cubin c;
  ct_err err = {0};
  const char *bad = "extern \"C\" __global__ void k(int *p) { p[0] = undefined_name; }\n";
  ck_assert_int_eq(nvrtc_compile_source("bad.cu", bad, NULL, 0, &dev.arch, &c, &err), CT_ERR_NVRTC);
  ck_assert_ptr_null(c.data);
  ck_assert_ptr_nonnull(c.log);
  ck_assert_ptr_nonnull(strstr(c.log, "error"));
  ck_assert_msg(strncmp(err.msg, "compile error: ", 15) == 0, "msg: %s", err.msg);
  cubin_free(&c);
}
END_TEST

static void add_gpu_kernel(TCase *tc) {
  tcase_add_test(tc, device_reports_sane_limits);
  tcase_add_test(tc, dp4a_kernel_matches_host);
  tcase_add_test(tc, opt_in_shared_memory_is_usable);
  tcase_add_test(tc, failures_are_statuses_and_the_context_survives);
  tcase_add_test(tc, compile_error_is_a_status_with_its_log);
}

static const test_case suite_cases[] = {
    {"gpu_kernel", 120, add_gpu_kernel},
    {NULL, 0, NULL},
};

/* test_main's probe: a CUDA device. */
static int have_gpu(char *why, size_t size) {
  if (device_count() > 0) return 1;
  snprintf(why, size, "no CUDA device");
  return 0;
}

int main(void) {
  static const test_suite suite = {"gpu_kernel", suite_cases, 1, have_gpu};
  return test_main(&suite);
}
