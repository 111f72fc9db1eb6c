/*
 * runner.c: measuring configs in a worker process that owns the CUDA context
 * (see runner.h). The parent never calls CUDA, and its caller must not
 * either, nor compile with NVRTC: nvrtcCompileProgram initialises the CUDA
 * driver in its process (measured on the H200 machine), after which no
 * worker forked from it can initialise CUDA (it fails with
 * cudaErrorInitializationError, which the worker reports with that hint).
 *
 * Parent and worker talk over one socketpair (a bidirectional pipe that is
 * written with MSG_NOSIGNAL, so that writing to a dead worker is an EPIPE,
 * not a SIGPIPE that kills the tuner). Every request gets one response:
 *   request  = req_head {type, size} + payload:
 *              SET_TASK ct_workload | MEASURE instance + cubin bytes |
 *              REFERENCE (none) | QUIT (none)
 *   response = rsp_head {status, exiting, size, message} + payload:
 *              (on start) device | MEASURE run_result |
 *              REFERENCE data, weights and reference output bytes
 * The parent waits with poll() and a deadline: timeout_s for a trial,
 * SETUP_TIMEOUT_S to start a worker or set a task up (CUDA initialisation,
 * NVRTC, the reference run). On a timeout or EOF it kills and reaps the
 * worker, records TIMEOUT or RUNTIME_ERROR, starts a new worker and sets its
 * copy of the task up again. After a fault (a sticky error: the context is
 * lost) the worker answers with `exiting` set and exits itself.
 *
 * In the worker, per task: data, weights, out, ref on the device (in the
 * task's layouts: packed NCHW4c / OIHW4o4i, or channels-last NHWC / OHWI),
 * random inputs from opts.seed (the same after a restart), the reference
 * from templates/ref_conv.cu (compiled once per worker; the shape and the
 * layout are a kernel argument). Per trial: load, poison (0xA5 bytes), one
 * launch, exact comparison on the GPU, then the timing described in
 * runner.h. out and ref are allocated rounded up to whole 32-bit words (an
 * 8-bit NHWC output of odd size is not), the tail zeroed once and never
 * poisoned, so that the comparison runs on words and a kernel that writes
 * past its output is caught.
 * Cost per trial: cubin load (0.14 ms) + compare (one pass) + a capture of
 * number launches per growth step (a few us of host time per launch) +
 * roughly (repeats + 3) x min_repeat_ms.
 */
#include "tuner/runner.h"

#include "tuner/proc.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "core/quant.h"
#include "core/rng.h"
#include "gpu/cuda_check.h"
#include "gpu/kernel.h"
#include "gpu/nvrtc.h"

/* Starting a worker (CUDA initialisation: seconds at worst, plus the
 * reference kernel's NVRTC compile) and setting a task up (allocations, a
 * reference run of a naive kernel: a second or two on the largest layers)
 * take far longer than a trial: they get their own generous deadline. */
#define SETUP_TIMEOUT_S 120.0
/* How long runner_stop waits for a worker to quit before killing it. */
#define STOP_GRACE_S 2.0
/* How long a worker that announced its exit gets to do it. */
#define EXIT_GRACE_S 10.0
/* samples_us holds at most this many repeats. */
#define MAX_REPEATS ((int)(sizeof(((run_result *)0)->samples_us) / sizeof(double)))
/* Requests larger than this (a cubin of a gigabyte) mean a broken stream. */
#define PAYLOAD_MAX ((uint64_t)1 << 30)
/* Reference and compare launches: plain 256-thread blocks; the compare
 * kernel strides over the output with at most 1024 blocks (one atomic per
 * thread at the end). */
#define REF_BLOCK      256
#define CMP_BLOCK      256
#define CMP_MAX_BLOCKS 1024
#define POISON_BYTE    0xA5

enum { REQ_SET_TASK = 1, REQ_MEASURE, REQ_REFERENCE, REQ_QUIT };

typedef struct req_head {
  uint32_t type;
  uint32_t reserved;
  uint64_t size; /* payload bytes that follow */
} req_head;

typedef struct rsp_head {
  int32_t status;  /* ct_status of the request */
  int32_t exiting; /* the worker lost its context and exits after this */
  uint64_t size;   /* payload bytes that follow */
  char msg[CT_ERRMSG_MAX];
} rsp_head;

/* The argument of ref_conv: laid out as struct ref_shape in ref_conv.cu. */
typedef struct ref_shape {
  int n, c4, k4;
  int in[3], ker[3], str[3], pad[3], dil[3], out[3];
  int kr, cout, d2s, d2s_crd, d2s_3d, out_type, data_u8, has_res;
  int nhwc, c, groups;
} ref_shape;

struct runner {
  runner_opts o;
  pid_t pid; /* the worker; 0 when there is none */
  int fd;    /* the parent's end of the socket; -1 when there is none */
  device dev;
  int has_task;
  ct_workload task; /* the parent's copy, set up again after a restart */
  int restarts;
};

void runner_opts_default(runner_opts *o) {
  /* Fast without being noisy: a 10 us kernel runs about 110 launches per
   * repeat (min_repeat_ms 1.0, so the graph's launch and event resolution,
   * a few us, are amortised), and 5 repeats (a median that shrugs off one
   * disturbed repeat) make about 5 ms per trial on the GPU, well within a
   * budget of 30 trials/s.
   * max_number 1000 bounds a repeat of a kernel under 1 us. timeout_s 5 is
   * 1000 times a slow layer's time, so only hangs hit it. The L2 is flushed
   * so that a small layer is not timed on inputs left warm in a 60 MB L2. */
  o->device = 0;
  o->timeout_s = 5.0;
  o->min_repeat_ms = 1.0;
  o->repeats = 5;
  o->max_number = 1000;
  o->flush_l2 = 1;
  o->seed = 1;
  o->values = NULL;
}

/* ---- plumbing ------------------------------------------------------------ */

/* Read and drop n bytes (a request that cannot be served). */
static int drain(int fd, uint64_t n) {
  char buf[4096];
  while (n > 0) {
    size_t k = n < sizeof buf ? (size_t)n : sizeof buf;
    if (proc_recv_all(fd, buf, k, 0) != PROC_OK) return -1;
    n -= k;
  }
  return 0;
}

/* ---- the worker -------------------------------------------------------- */

typedef struct wstate {
  runner_opts o;
  device dev;
  cudaStream_t stream;
  cudaEvent_t ev0, ev1;
  cudaLibrary_t ref_lib;
  cudaKernel_t ref_fn, cmp_fn;
  unsigned *cmp; /* device: {elements that differ, smallest such index} */
  void *flush;   /* device: 2 x L2, written between repeats to evict the L2 */
  size_t flush_bytes;
  /* the task */
  int has_task;
  ct_workload w;
  ref_shape shape;
  size_t data_bytes, weight_bytes, out_bytes, res_bytes, params_bytes, raw_bytes;
  size_t out_alloc;           /* out_bytes rounded up to 4: the words ref_compare reads */
  void *data, *weights, *res; /* res: the residual, NULL without one */
  void *out, *ref;
  int32_t *params, *raw; /* the kernels' folded block; the reference's raw values */
  /* a fused pointwise conv (w.pre_c): its reference's shape, weights, raw
   * values and output (the main conv's reference reads it) */
  ref_shape pre_shape;
  void *pre_weights, *mid;
  int32_t *pre_raw;
} wstate;

/* Whether the context is lost: a sticky error (illegal address, launch
 * failure, ...) is returned by every later call, so a synchronisation
 * tells. */
static int context_lost(void) {
  (void)cudaGetLastError();
  return cudaDeviceSynchronize() != cudaSuccess;
}

/* Open the device and make what every task shares. On failure the worker
 * reports and exits, so nothing is released here. */
static ct_status worker_init(wstate *s, ct_err *err) {
  ct_status st = device_open(s->o.device, &s->dev, err);
  cubin c;
  memset(&c, 0, sizeof c);
  if (st != CT_OK && strstr(err ? err->msg : "", "cudaErrorInitializationError"))
    err_prefix(err, "runner: the worker cannot initialise CUDA, most likely because the tuner "
                    "process used CUDA or NVRTC (which loads the driver) before forking it");
  if (st != CT_OK) return st;
  CUDA_TRY(err, cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  CUDA_TRY(err, cudaEventCreate(&s->ev0));
  CUDA_TRY(err, cudaEventCreate(&s->ev1));
  CUDA_TRY(err, cudaMalloc((void **)&s->cmp, 2 * sizeof(unsigned)));
  s->flush_bytes = 2 * (size_t)(s->dev.l2_bytes > 0 ? s->dev.l2_bytes : 0);
  if (s->flush_bytes) CUDA_TRY(err, cudaMalloc(&s->flush, s->flush_bytes));
  const char *source = template_embedded("ref_conv.cu");
  if (!source) {
    st = ERR_SET(err, CT_ERR_NOT_FOUND, "runner: the reference kernel ref_conv.cu is not embedded");
    goto done;
  }
  st = nvrtc_compile_source("ref_conv.cu", source, NULL, 0, &s->dev.arch, &c, err);
  if (st != CT_OK) {
    err_prefix(err, "runner: reference kernel");
    goto done;
  }
  CUDA_TRY(err, cudaLibraryLoadData(&s->ref_lib, c.data, NULL, NULL, 0, NULL, NULL, 0));
  CUDA_TRY(err, cudaLibraryGetKernel(&s->ref_fn, s->ref_lib, "ref_conv"));
  CUDA_TRY(err, cudaLibraryGetKernel(&s->cmp_fn, s->ref_lib, "ref_compare"));
done:
  cubin_free(&c);
  return st;
}

static void task_free(wstate *s) {
  /* Failures (a lost context) leave nothing to do: the worker exits next. */
  (void)cudaFree(s->data);
  (void)cudaFree(s->weights);
  (void)cudaFree(s->res);
  (void)cudaFree(s->out);
  (void)cudaFree(s->ref);
  (void)cudaFree(s->params);
  (void)cudaFree(s->raw);
  (void)cudaFree(s->pre_weights);
  (void)cudaFree(s->mid);
  (void)cudaFree(s->pre_raw);
  s->data = s->weights = s->res = s->out = s->ref = s->pre_weights = s->mid = NULL;
  s->params = s->raw = s->pre_raw = NULL;
  s->has_task = 0;
}

/* n random bytes, every int8 value equally likely; never all zero. */
static void fill_random(int8_t *p, size_t n, rng *r) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng_next(r);
    for (size_t j = 0; j < 8 && i + j < n; j++) p[i + j] = (int8_t)(uint8_t)(v >> (8 * j));
  }
  size_t i = 0;
  while (i < n && p[i] == 0) i++;
  if (n > 0 && i == n) p[0] = 1;
}

/* Upload n bytes of host to dev on the worker's stream and wait: it is a
 * non-blocking stream, which a plain cudaMemcpy (legacy default stream,
 * returning once a pageable buffer is staged) does not order against, so
 * the reference kernel could read inputs still in flight. That race once
 * made a whole layer's trials WRONG_ANSWER. Waiting also frees host for
 * the next fill. */
static ct_status upload(wstate *s, void *dev, const void *host, size_t n, ct_err *err) {
  ct_status st = CT_OK;
  CUDA_TRY(err, cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, s->stream));
  CUDA_TRY(err, cudaStreamSynchronize(s->stream));
done:
  return st;
}

/* The reference kernel's shape of w (without a fused pointwise conv). */
static ref_shape shape_of(const ct_workload *w) {
  geom3 g;
  workload_geom(w, &g);
  ref_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.n = (int)g.n;
  sh.c4 = (int)(g.c / 4);
  sh.k4 = (int)((g.k + 3) / 4);
  for (int d = 0; d < 3; d++) {
    sh.in[d] = (int)g.in[d];
    sh.ker[d] = (int)g.ker[d];
    sh.str[d] = (int)g.str[d];
    sh.pad[d] = (int)g.pb[d];
    sh.dil[d] = (int)g.dil[d];
    sh.out[d] = (int)g.out[d];
  }
  sh.kr = (int)g.k;
  sh.cout = workload_out_channels(w);
  sh.d2s = w->epi.d2s_block;
  sh.d2s_crd = w->epi.d2s_mode == CT_D2S_CRD;
  sh.d2s_3d = w->op == CT_OP_CONV3D;
  sh.out_type = w->out_type == CT_DTYPE_INT32 ? 0 : w->out_type == CT_DTYPE_INT8 ? 1 : 2;
  sh.data_u8 = w->data_type == CT_DTYPE_UINT8;
  sh.has_res = w->epi.residual;
  sh.nhwc = w->layout == CT_LAYOUT_NHWC;
  sh.c = (int)g.c;
  sh.groups = (int)g.g;
  return sh;
}

/* Launch the reference kernel of shape sh over out's elems elements. */
static ct_status ref_launch(wstate *s, const ref_shape *sh, void *data, void *weights, void *out,
                            int32_t *raw, void *res, size_t elems, ct_err *err) {
  ct_status st = CT_OK;
  ref_shape shape = *sh;
  dim3 grid = {(unsigned)((elems + REF_BLOCK - 1) / REF_BLOCK), 1, 1};
  dim3 block = {REF_BLOCK, 1, 1};
  void *args[] = {&shape, &data, &weights, &out, &raw, &res};
  CUDA_TRY(err, cudaLaunchKernel((const void *)s->ref_fn, grid, block, args, 0, s->stream));
done:
  return st;
}

static ct_status task_set(wstate *s, const ct_workload *w, ct_err *err) {
  ct_status st = CT_OK;
  int8_t *host = NULL, *wts = NULL;
  int32_t *sums = NULL;
  quant_store qs;
  memset(&qs, 0, sizeof qs);
  task_free(s);
  geom3 g;
  workload_geom(w, &g);
  s->w = *w;
  ct_workload main_conv, pre;
  workload_main(w, &main_conv);
  s->shape = shape_of(&main_conv);
  size_t mid_bytes = 0, pre_w_bytes = 0, pre_raw_bytes = 0;
  if (w->pre_c > 0) {
    workload_pre(w, &pre);
    s->pre_shape = shape_of(&pre);
    mid_bytes = (size_t)workload_out_elems(&pre);
    pre_w_bytes = (size_t)workload_weight_elems(&pre);
    pre_raw_bytes = quant_raw_words(&pre) * sizeof(int32_t);
    CUDA_TRY(err, cudaMalloc(&s->mid, (mid_bytes + 3) / 4 * 4));
    CUDA_TRY(err, cudaMalloc(&s->pre_weights, pre_w_bytes));
    CUDA_TRY(err, cudaMalloc((void **)&s->pre_raw, pre_raw_bytes));
  }
  s->data_bytes = (size_t)workload_data_elems(w);
  s->weight_bytes = (size_t)workload_weight_elems(w);
  s->out_bytes = (size_t)workload_out_elems(w) * workload_out_elem_bytes(w);
  s->res_bytes = w->epi.residual ? (size_t)workload_out_elems(w) : 0;
  s->params_bytes = quant_params_words(w) * sizeof(int32_t);
  s->raw_bytes = quant_raw_words(w) * sizeof(int32_t);
  s->out_alloc = (s->out_bytes + 3) / 4 * 4;
  CUDA_TRY(err, cudaMalloc(&s->data, s->data_bytes));
  CUDA_TRY(err, cudaMalloc(&s->weights, s->weight_bytes));
  CUDA_TRY(err, cudaMalloc(&s->out, s->out_alloc));
  CUDA_TRY(err, cudaMalloc(&s->ref, s->out_alloc));
  CUDA_TRY(err, cudaMalloc((void **)&s->params, s->params_bytes));
  CUDA_TRY(err, cudaMalloc((void **)&s->raw, s->raw_bytes));
  if (s->res_bytes) CUDA_TRY(err, cudaMalloc(&s->res, s->res_bytes));

  /* One stream from the seed, data first, then weights and residual, and
   * the epilogue's values from the seed too: the same task after a restart. */
  size_t host_n = s->data_bytes;
  if (s->weight_bytes > host_n) host_n = s->weight_bytes;
  if (s->res_bytes > host_n) host_n = s->res_bytes;
  if (s->params_bytes > host_n) host_n = s->params_bytes;
  if (s->raw_bytes > host_n) host_n = s->raw_bytes;
  if (pre_raw_bytes > host_n) host_n = pre_raw_bytes;
  host = malloc(host_n);
  sums = malloc((size_t)g.k * sizeof *sums);
  wts = malloc(s->weight_bytes); /* kept for the border classes (quant_zpad_fill) */
  if (!host || !sums || !wts) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "runner: no memory for %zu bytes of inputs", host_n);
    goto done;
  }
  rng r;
  rng_seed(&r, s->o.seed);
  fill_random(host, s->data_bytes, &r);
  if ((st = upload(s, s->data, host, s->data_bytes, err))) goto done;
  fill_random(wts, s->weight_bytes, &r);
  quant_weight_sums(w, wts, sums); /* in w's layout: packed or OHWI */
  if ((st = upload(s, s->weights, wts, s->weight_bytes, err))) goto done;
  if (s->res_bytes) {
    fill_random(host, s->res_bytes, &r);
    if ((st = upload(s, s->res, host, s->res_bytes, err))) goto done;
  }
  /* the values the caller gave for this workload (a model's), else random */
  const ct_quant *q = quant_table_find(s->o.values, w);
  if (!q) {
    if ((st = quant_random(w, s->o.seed, &qs, err))) goto done;
    q = &qs.q;
  }
  if ((st = quant_params(w, q, sums, (int32_t *)host, err)) ||
      (st = quant_zpad_fill(w, q, wts, (int32_t *)host, err)) ||
      (st = upload(s, s->params, host, s->params_bytes, err)) ||
      (st = quant_raw(w, q, (int32_t *)host, err)) ||
      (st = upload(s, s->raw, host, s->raw_bytes, err)))
    goto done;
  if (w->pre_c > 0 && ((st = upload(s, s->pre_weights, q->pre_weights, pre_w_bytes, err)) ||
                       (st = quant_raw(&pre, q->pre, (int32_t *)host, err)) ||
                       (st = upload(s, s->pre_raw, host, pre_raw_bytes, err))))
    goto done;

  /* The reference writes every real element; the rest (the padding lanes
   * of a remapped packed output, the tail of the last word) must be zero.
   * Trials poison only out_bytes, so out's tail stays zero. */
  CUDA_TRY(err, cudaMemsetAsync(s->ref, 0, s->out_alloc, s->stream));
  CUDA_TRY(err, cudaMemsetAsync(s->out, 0, s->out_alloc, s->stream));
  size_t elems = (size_t)g.n * (size_t)g.k * (size_t)(g.out[0] * g.out[1] * g.out[2]);
  void *in = s->data;
  if (w->pre_c > 0) {
    /* the fused pointwise conv's reference first, into mid: the two convs
     * as written */
    if ((st = ref_launch(s, &s->pre_shape, s->data, s->pre_weights, s->mid, s->pre_raw, NULL,
                         mid_bytes, err)))
      goto done;
    in = s->mid;
  }
  if ((st = ref_launch(s, &s->shape, in, s->weights, s->ref, s->raw, s->res, elems, err)))
    goto done;
  CUDA_TRY(err, cudaStreamSynchronize(s->stream));
  s->has_task = 1;
done:
  free(host);
  free(wts);
  free(sums);
  quant_store_free(&qs);
  if (st != CT_OK) {
    err_prefix(err, "runner: setting the task up");
    task_free(s);
  }
  return st;
}

/* Copy the task's data, weights, residual (when it has one) and reference
 * output into host (their sizes in that order). */
static ct_status copy_back(wstate *s, char *host, ct_err *err) {
  ct_status st = CT_OK;
  CUDA_TRY(err, cudaMemcpy(host, s->data, s->data_bytes, cudaMemcpyDeviceToHost));
  host += s->data_bytes;
  CUDA_TRY(err, cudaMemcpy(host, s->weights, s->weight_bytes, cudaMemcpyDeviceToHost));
  host += s->weight_bytes;
  if (s->res_bytes) CUDA_TRY(err, cudaMemcpy(host, s->res, s->res_bytes, cudaMemcpyDeviceToHost));
  host += s->res_bytes;
  CUDA_TRY(err, cudaMemcpy(host, s->ref, s->out_bytes, cudaMemcpyDeviceToHost));
done:
  return st;
}

/* Compare out with ref on the GPU, 32-bit word by word (a packed output is
 * whole words; a channels-last one is compared with its zeroed tail);
 * *n_bad and the first mismatch's word index, value and wanted value. */
static ct_status compare(wstate *s, unsigned *n_bad, unsigned *first, int32_t *got, int32_t *want,
                         ct_err *err) {
  ct_status st = CT_OK;
  unsigned init[2] = {0, 0xffffffffu}, res[2] = {0, 0};
  long long n = (long long)(s->out_alloc / 4);
  CUDA_TRY(err, cudaMemcpyAsync(s->cmp, init, sizeof init, cudaMemcpyHostToDevice, s->stream));
  long long blocks = (n + CMP_BLOCK - 1) / CMP_BLOCK;
  dim3 grid = {(unsigned)(blocks < CMP_MAX_BLOCKS ? blocks : CMP_MAX_BLOCKS), 1, 1};
  dim3 block = {CMP_BLOCK, 1, 1};
  void *args[] = {&s->out, &s->ref, &n, &s->cmp};
  CUDA_TRY(err, cudaLaunchKernel((const void *)s->cmp_fn, grid, block, args, 0, s->stream));
  CUDA_TRY(err, cudaMemcpyAsync(res, s->cmp, sizeof res, cudaMemcpyDeviceToHost, s->stream));
  CUDA_TRY(err, cudaStreamSynchronize(s->stream));
  *n_bad = res[0];
  *first = res[1];
  if (res[0] > 0 && res[1] < (unsigned long long)n) {
    CUDA_TRY(err, cudaMemcpy(got, (int32_t *)s->out + res[1], sizeof *got, cudaMemcpyDeviceToHost));
    CUDA_TRY(err,
             cudaMemcpy(want, (int32_t *)s->ref + res[1], sizeof *want, cudaMemcpyDeviceToHost));
  }
done:
  return st;
}

/* The first mismatch of a channels-last output, from ref_compare's word
 * index and the two words: the element (for 8-bit outputs the first byte
 * of the word that differs), and where it is: image, output pixel (flat,
 * of the remapped output) and channel; or that the kernel wrote into the
 * tail past the output. */
static void describe_nhwc(const wstate *s, unsigned n_bad, unsigned first, int32_t got,
                          int32_t want, char *buf, size_t size) {
  size_t eb = workload_out_elem_bytes(&s->w), elems = s->out_bytes / eb;
  size_t e = first; /* int32: the word is the element */
  int32_t g = got, v = want;
  if (eb == 1) {
    int j = 0;
    while (j < 3 && (((uint32_t)got >> (8 * j)) & 0xffu) == (((uint32_t)want >> (8 * j)) & 0xffu))
      j++;
    e = (size_t)first * 4 + (size_t)j;
    int8_t gb = (int8_t)(uint8_t)((uint32_t)got >> (8 * j));
    int8_t vb = (int8_t)(uint8_t)((uint32_t)want >> (8 * j));
    int u8 = s->w.out_type == CT_DTYPE_UINT8;
    g = u8 ? (uint8_t)gb : gb;
    v = u8 ? (uint8_t)vb : vb;
  }
  const char *what = eb == 1 ? "words (4 bytes of the nhwc output each)" : "elements";
  if (e >= elems) {
    snprintf(buf, size, "%u of %zu %s differ, first at element %zu: past the output's %zu", n_bad,
             s->out_alloc / 4, what, e, elems);
    return;
  }
  size_t cout = (size_t)workload_out_channels(&s->w);
  size_t pixels = elems / ((size_t)s->w.n * cout);
  snprintf(buf, size,
           "%u of %zu %s differ, first at element %zu (image %zu, pixel %zu, channel %zu): got "
           "%d, want %d",
           n_bad, s->out_alloc / 4, what, e, e / cout / pixels, e / cout % pixels, e % cout, g, v);
}

/* A repeat's number launches, captured once into a graph: replayed, they
 * run back to back on the GPU whatever the host's launch time (a few us
 * per launch, with the tensor maps encoded: longer than many kernels, so
 * that launches from the host would time the host). As the benchmark
 * times its layers. */
static ct_status capture(wstate *s, const kernel *k, const instance *inst, int number,
                         cudaGraphExec_t *exec, ct_err *err) {
  ct_status st = CT_OK;
  cudaGraph_t graph = NULL;
  int capturing = 0;
  *exec = NULL;
  kernel_io io = {s->data, s->weights, s->out, s->params, s->res};
  CUDA_TRY(err, cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
  capturing = 1;
  for (int i = 0; i < number; i++)
    if ((st = kernel_launch(k, inst, &io, s->stream, err)) != CT_OK) goto done;
  capturing = 0;
  CUDA_TRY(err, cudaStreamEndCapture(s->stream, &graph));
  CUDA_TRY(err, cudaGraphInstantiate(exec, graph, 0));
  CUDA_TRY(err, cudaGraphUpload(*exec, s->stream));
done:
  if (capturing) {
    /* leave the stream out of capture whatever happened inside it */
    cudaGraph_t dead = NULL;
    (void)cudaStreamEndCapture(s->stream, &dead);
    if (dead) cudaGraphDestroy(dead);
    (void)cudaGetLastError();
  }
  if (graph) cudaGraphDestroy(graph);
  if (st != CT_OK && *exec) {
    cudaGraphExecDestroy(*exec);
    *exec = NULL;
  }
  return st;
}

/* One repeat: a replay of the captured launches between two events, the
 * L2 flushed first (outside the events) when flush; its length in *ms. */
static ct_status timed(wstate *s, cudaGraphExec_t exec, int number, int flush, float *ms,
                       ct_err *err) {
  ct_status st = CT_OK;
  if (flush) CUDA_TRY(err, cudaMemsetAsync(s->flush, number & 0xff, s->flush_bytes, s->stream));
  CUDA_TRY(err, cudaEventRecord(s->ev0, s->stream));
  CUDA_TRY(err, cudaGraphLaunch(exec, s->stream));
  CUDA_TRY(err, cudaEventRecord(s->ev1, s->stream));
  CUDA_TRY(err, cudaEventSynchronize(s->ev1));
  CUDA_TRY(err, cudaEventElapsedTime(ms, s->ev0, s->ev1));
done:
  return st;
}

static double median(const double *v, int n) {
  double a[MAX_REPEATS];
  for (int i = 0; i < n; i++) {
    int j = i;
    for (; j > 0 && a[j - 1] > v[i]; j--) a[j] = a[j - 1];
    a[j] = v[i];
  }
  return n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
}

/* One trial into *res. Returns 1 when the context is lost: the worker
 * answers, then exits. */
static int measure(wstate *s, const instance *inst, const void *image, size_t size,
                   run_result *res) {
  ct_err err = {0};
  kernel k;
  cudaGraphExec_t exec = NULL; /* the timed launches */
  memset(&k, 0, sizeof k);
  memset(res, 0, sizeof *res);
  const char *name = inst->kernel_name;
  if (!s->has_task) {
    res->outcome = OUT_LAUNCH_ERROR;
    snprintf(res->error, sizeof res->error, "no task is set up");
    return 0;
  }
  /* Load or launch refused: the config's geometry or resources. */
  if (kernel_load(image, size, inst, &k, &err) != CT_OK) {
    res->outcome = OUT_LAUNCH_ERROR;
    snprintf(res->error, sizeof res->error, "%s", err.msg);
    goto done;
  }
  cudaError_t e = cudaMemsetAsync(s->out, POISON_BYTE, s->out_bytes, s->stream);
  if (e != cudaSuccess) {
    res->outcome = OUT_RUNTIME_ERROR;
    snprintf(res->error, sizeof res->error, "poisoning the output: %s (%s)", cudaGetErrorString(e),
             cudaGetErrorName(e));
    goto done;
  }
  kernel_io io = {s->data, s->weights, s->out, s->params, s->res};
  if (kernel_launch(&k, inst, &io, s->stream, &err) != CT_OK) {
    res->outcome = OUT_LAUNCH_ERROR;
    snprintf(res->error, sizeof res->error, "%s", err.msg);
    goto done;
  }
  /* A fault (illegal address, ...) shows here, sticky. */
  e = cudaStreamSynchronize(s->stream);
  if (e != cudaSuccess) {
    res->outcome = OUT_RUNTIME_ERROR;
    snprintf(res->error, sizeof res->error, "kernel %.48s: %s (%s)", name, cudaGetErrorString(e),
             cudaGetErrorName(e));
    goto done;
  }

  unsigned n_bad = 0, first = 0;
  int32_t got = 0, want = 0;
  if (compare(s, &n_bad, &first, &got, &want, &err) != CT_OK) {
    res->outcome = OUT_RUNTIME_ERROR;
    snprintf(res->error, sizeof res->error, "comparing the output: %s", err.msg);
    goto done;
  }
  if (n_bad > 0) {
    res->outcome = OUT_WRONG_ANSWER;
    if (s->w.layout == CT_LAYOUT_NHWC)
      describe_nhwc(s, n_bad, first, got, want, res->error, sizeof res->error);
    else if (s->w.out_type == CT_DTYPE_INT32)
      snprintf(res->error, sizeof res->error,
               "%u of %zu elements differ, first at index %u: got %d, want %d", n_bad,
               s->out_bytes / 4, first, got, want);
    else /* 8-bit output: words of 4 channels */
      snprintf(res->error, sizeof res->error,
               "%u of %zu words (4 channels each) differ, first at word %u: got %08x, want %08x",
               n_bad, s->out_bytes / 4, first, (unsigned)got, (unsigned)want);
    goto done;
  }

  /* Timing: a warm-up, number grown (at least doubled, at most to
   * max_number) until a replay lasts min_repeat_ms, then the repeats. Any
   * failure now is a fault of a kernel that ran right once (e.g. a race):
   * a runtime error. */
  float ms = 0;
  int number = 1;
  if (kernel_launch(&k, inst, &io, s->stream, &err) != CT_OK) goto timing_failed;
  for (;;) {
    if (capture(s, &k, inst, number, &exec, &err) != CT_OK ||
        timed(s, exec, number, 0, &ms, &err) != CT_OK)
      goto timing_failed;
    if (ms >= s->o.min_repeat_ms || number >= s->o.max_number) break;
    cudaGraphExecDestroy(exec);
    exec = NULL;
    /* where the replay says how far min_repeat_ms is, one step there (with
     * a tenth to spare) */
    double goal = ms > 0 ? 1.1 * number * s->o.min_repeat_ms / ms : (double)s->o.max_number;
    int next = goal < (double)s->o.max_number ? (int)goal + 1 : s->o.max_number;
    number = next > 2 * number ? next : 2 * number;
    if (number > s->o.max_number) number = s->o.max_number;
  }
  /* Flushing pays only when the working set fits in the L2; beyond it the
   * launches evict each other's inputs anyway. */
  size_t working_set =
      s->data_bytes + s->weight_bytes + s->out_bytes + s->res_bytes + s->params_bytes;
  int flush = s->o.flush_l2 && s->flush && working_set <= (size_t)s->dev.l2_bytes;
  for (int i = 0; i < s->o.repeats; i++) {
    if (timed(s, exec, number, flush, &ms, &err) != CT_OK) goto timing_failed;
    res->samples_us[i] = (double)ms * 1000.0 / number;
  }
  res->outcome = OUT_OK;
  res->n_samples = s->o.repeats;
  res->number = number;
  res->median_us = median(res->samples_us, res->n_samples);
  goto done;

timing_failed:
  res->outcome = OUT_RUNTIME_ERROR;
  res->n_samples = 0;
  snprintf(res->error, sizeof res->error, "while timing: %s", err.msg);
done:
  if (exec) cudaGraphExecDestroy(exec);
  kernel_unload(&k);
  if (res->outcome == OUT_RUNTIME_ERROR) return 1;
  return res->outcome != OUT_OK && context_lost();
}

static int send_rsp(int fd, ct_status status, int exiting, const char *msg, const void *payload,
                    size_t n) {
  rsp_head h;
  memset(&h, 0, sizeof h);
  h.status = status;
  h.exiting = exiting;
  h.size = n;
  snprintf(h.msg, sizeof h.msg, "%s", msg ? msg : "");
  return proc_send_all(fd, &h, sizeof h) != 0 || proc_send_all(fd, payload, n) != 0 ? -1 : 0;
}

/* Serve requests until QUIT or EOF. Never returns. */
static void worker_main(int fd, void *arg) {
  const runner_opts *o = arg;
  wstate s;
  memset(&s, 0, sizeof s);
  s.o = *o;
  ct_err err = {0};
  ct_status st = worker_init(&s, &err);
  if (send_rsp(fd, st, st != CT_OK, err.msg, &s.dev, st == CT_OK ? sizeof s.dev : 0) != 0 ||
      st != CT_OK)
    _exit(1);
  for (;;) {
    req_head q;
    if (proc_recv_all(fd, &q, sizeof q, 0) != PROC_OK) _exit(0);
    err_clear(&err);
    int lost = 0;
    switch (q.type) {
    case REQ_SET_TASK: {
      ct_workload w;
      if (q.size != sizeof w || proc_recv_all(fd, &w, sizeof w, 0) != PROC_OK) _exit(4);
      st = task_set(&s, &w, &err);
      lost = st != CT_OK && context_lost();
      if (send_rsp(fd, st, lost, err.msg, NULL, 0) != 0) _exit(1);
      break;
    }
    case REQ_MEASURE: {
      if (q.size <= sizeof(instance) || q.size > PAYLOAD_MAX) _exit(4);
      char *p = malloc(q.size);
      if (!p) {
        if (drain(fd, q.size) != 0) _exit(1);
        ERR_SET(&err, CT_ERR_NO_MEMORY, "runner: no memory for a %llu-byte trial",
                (unsigned long long)q.size);
        if (send_rsp(fd, CT_ERR_NO_MEMORY, 0, err.msg, NULL, 0) != 0) _exit(1);
        break;
      }
      if (proc_recv_all(fd, p, q.size, 0) != PROC_OK) _exit(1);
      instance inst;
      memcpy(&inst, p, sizeof inst);
      inst.kernel_name[sizeof inst.kernel_name - 1] = '\0';
      run_result res;
      lost = measure(&s, &inst, p + sizeof inst, q.size - sizeof inst, &res);
      free(p);
      if (send_rsp(fd, CT_OK, lost, "", &res, sizeof res) != 0) _exit(1);
      break;
    }
    case REQ_REFERENCE: {
      if (q.size != 0) _exit(4);
      size_t n = s.data_bytes + s.weight_bytes + s.res_bytes + s.out_bytes;
      char *host = NULL;
      if (!s.has_task)
        st = ERR_SET(&err, CT_ERR_INVALID_ARG, "runner_reference: no task is set up");
      else if (!(host = malloc(n)))
        st = ERR_SET(&err, CT_ERR_NO_MEMORY, "runner: no memory for %zu bytes", n);
      else
        st = copy_back(&s, host, &err);
      lost = st != CT_OK && context_lost();
      int bad = send_rsp(fd, st, lost, err.msg, host, st == CT_OK ? n : 0);
      free(host);
      if (bad) _exit(1);
      break;
    }
    default: /* REQ_QUIT */
      task_free(&s);
      _exit(0);
    }
    if (lost) _exit(3);
  }
}

/* ---- the parent -------------------------------------------------------- */

/* Close the worker's socket, wait up to grace_s for it to exit, then kill
 * it; reap it. Its wait status, or -1 when unknown. */
/* The device count, from a child that initialises CUDA (this process
 * never does): one int32 over its socket. */
static void count_main(int fd, void *arg) {
  (void)arg;
  int32_t n = device_count();
  _exit(proc_send_all(fd, &n, sizeof n) == 0 ? 0 : 1);
}

int runner_device_count(ct_err *err) {
  pid_t pid = 0;
  int fd = -1;
  if (proc_spawn("runner", count_main, NULL, &pid, &fd, err)) return -1;
  int32_t n = -1;
  int rc = proc_recv_all(fd, &n, sizeof n, proc_now_s() + SETUP_TIMEOUT_S);
  close(fd);
  if (rc != PROC_OK) kill(pid, SIGKILL);
  int ws;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (rc != PROC_OK) {
    ERR_SET(err, CT_ERR_CUDA, "runner: the process counting the GPUs %s",
            rc == PROC_TIMEOUT ? "did not answer" : "ended without answering");
    return -1;
  }
  return n;
}

static int stop_worker(runner *r, double grace_s) {
  int ws = -1;
  if (r->fd >= 0) close(r->fd);
  r->fd = -1;
  if (r->pid > 0) {
    double end = proc_now_s() + grace_s;
    for (;;) {
      pid_t p = waitpid(r->pid, &ws, WNOHANG);
      if (p == r->pid) break;
      if (p < 0 && errno != EINTR) { /* not our child any more (SIGCHLD ignored) */
        ws = -1;
        break;
      }
      if (proc_now_s() >= end) {
        kill(r->pid, SIGKILL);
        while (waitpid(r->pid, &ws, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  }
  r->pid = 0;
  return ws;
}

/* Fork a worker and wait for it to report its device. */
static ct_status spawn(runner *r, ct_err *err) {
  ct_status spawned = proc_spawn("runner", worker_main, &r->o, &r->pid, &r->fd, err);
  if (spawned) return spawned;

  rsp_head h;
  double deadline = proc_now_s() + SETUP_TIMEOUT_S;
  int rc = proc_recv_all(r->fd, &h, sizeof h, deadline);
  if (rc == PROC_OK) {
    h.msg[sizeof h.msg - 1] = '\0';
    if (h.status == CT_OK && h.size == sizeof r->dev &&
        proc_recv_all(r->fd, &r->dev, sizeof r->dev, deadline) == PROC_OK)
      return CT_OK;
    if (h.status != CT_OK) {
      ct_status st = err_set(err, (ct_status)h.status, __FILE__, __LINE__, "%s", h.msg);
      stop_worker(r, EXIT_GRACE_S);
      return st;
    }
  }
  int ws = stop_worker(r, 0);
  char how[96];
  proc_describe_exit(ws, how, sizeof how);
  if (rc == PROC_TIMEOUT)
    return ERR_SET(err, CT_ERR_CUDA, "runner: the worker did not report its device within %.0f s",
                   SETUP_TIMEOUT_S);
  return ERR_SET(err, CT_ERR_CUDA, "runner: the worker ended (%s) before reporting its device",
                 how);
}

typedef enum { CALL_OK, CALL_DIED, CALL_TIMEOUT } call_result;

/* Send a request (header and up to two payload parts) and read the
 * response's head by deadline. */
static call_result call(runner *r, uint32_t type, const void *p1, size_t n1, const void *p2,
                        size_t n2, double deadline, rsp_head *h) {
  req_head q = {.type = type, .reserved = 0, .size = n1 + n2};
  if (proc_send_all(r->fd, &q, sizeof q) != 0 || proc_send_all(r->fd, p1, n1) != 0 ||
      proc_send_all(r->fd, p2, n2) != 0)
    return CALL_DIED;
  int rc = proc_recv_all(r->fd, h, sizeof *h, deadline);
  if (rc == PROC_TIMEOUT) return CALL_TIMEOUT;
  if (rc != PROC_OK) return CALL_DIED;
  h->msg[sizeof h->msg - 1] = '\0';
  return CALL_OK;
}

/* Set the parent's copy of the task up in the worker. */
static ct_status send_task(runner *r, ct_err *err) {
  rsp_head h;
  call_result c =
      call(r, REQ_SET_TASK, &r->task, sizeof r->task, NULL, 0, proc_now_s() + SETUP_TIMEOUT_S, &h);
  if (c == CALL_OK && h.size == 0) {
    if (h.exiting) stop_worker(r, EXIT_GRACE_S);
    if (h.status == CT_OK) return CT_OK;
    r->has_task = 0;
    return err_set(err, (ct_status)h.status, __FILE__, __LINE__, "%s", h.msg);
  }
  r->has_task = 0;
  int ws = stop_worker(r, 0);
  char how[96];
  proc_describe_exit(ws, how, sizeof how);
  if (c == CALL_TIMEOUT)
    return ERR_SET(err, CT_ERR_CUDA, "runner: setting the task up took more than %.0f s",
                   SETUP_TIMEOUT_S);
  return ERR_SET(err, CT_ERR_CUDA, "runner: the worker ended (%s) setting the task up", how);
}

/* Replace the worker (whatever state it is in) and set the task up again. */
static ct_status restart(runner *r, ct_err *err) {
  stop_worker(r, 0);
  r->restarts++;
  ct_status st = spawn(r, err);
  if (st == CT_OK && r->has_task) st = send_task(r, err);
  return st;
}

ct_status runner_start(const runner_opts *o, runner **out, device *dev, ct_err *err) {
  if (!out) return ERR_SET(err, CT_ERR_INVALID_ARG, "runner_start: NULL out");
  *out = NULL;
  runner_opts def;
  if (!o) {
    runner_opts_default(&def);
    o = &def;
  }
  if (o->device < 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner: device is %d, accepted 0 or more", o->device);
  if (!(o->timeout_s > 0 && o->timeout_s <= 86400))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner: timeout_s is %g, accepted (0, 86400]",
                   o->timeout_s);
  if (!(o->min_repeat_ms >= 0 && o->min_repeat_ms <= 10000))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner: min_repeat_ms is %g, accepted 0..10000",
                   o->min_repeat_ms);
  if (o->repeats < 1 || o->repeats > MAX_REPEATS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner: repeats is %d, accepted 1..%d", o->repeats,
                   MAX_REPEATS);
  if (o->max_number < 1 || o->max_number > 1000000)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner: max_number is %d, accepted 1..1000000",
                   o->max_number);
  if (o->flush_l2 != 0 && o->flush_l2 != 1)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner: flush_l2 is %d, accepted 0 or 1", o->flush_l2);
  runner *r = calloc(1, sizeof *r);
  if (!r) return ERR_SET(err, CT_ERR_NO_MEMORY, "runner: no memory");
  r->o = *o;
  r->fd = -1;
  ct_status st = spawn(r, err);
  if (st != CT_OK) {
    free(r);
    return st;
  }
  if (dev) *dev = r->dev;
  *out = r;
  return CT_OK;
}

ct_status runner_set_task(runner *r, const ct_workload *w, ct_err *err) {
  if (!r || !w) return ERR_SET(err, CT_ERR_INVALID_ARG, "runner_set_task: NULL runner or workload");
  ct_status st = workload_validate(w, err);
  if (st != CT_OK) return st;
  if ((w->layout != CT_LAYOUT_NCHW4C && w->layout != CT_LAYOUT_NHWC) ||
      w->weight_type != CT_DTYPE_INT8)
    return ERR_SET(err, CT_ERR_UNSUPPORTED,
                   "runner: the task must be a workload the templates run: layout nchw4c "
                   "(ncdhw4c) or nhwc (ndhwc), int8 weights; got layout %s",
                   workload_layout_name(w->layout, w->op));
  r->task = *w;
  r->has_task = 1;
  if (r->pid == 0) return restart(r, err);
  return send_task(r, err);
}

ct_status runner_measure(runner *r, const instance *inst, const void *image, size_t size,
                         run_result *res, ct_err *err) {
  if (res) memset(res, 0, sizeof *res);
  if (!r || !inst || !image || size == 0 || !res)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "runner_measure: NULL runner, instance or result, or an empty cubin");
  if (size > PAYLOAD_MAX - sizeof *inst)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner_measure: a %zu-byte cubin, at most %llu", size,
                   (unsigned long long)(PAYLOAD_MAX - sizeof *inst));
  if (!r->has_task)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner_measure: no task: call runner_set_task first");
  /* a template reads and writes the tensors of its own layout: on the
   * task's buffers of another one it would be a wrong answer, or a fault */
  if (inst->tpl && inst->tpl->layout != r->task.layout)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "runner_measure: template %s runs layout %s; the task is %s", inst->tpl->name,
                   workload_layout_name(inst->tpl->layout, inst->tpl->op),
                   workload_layout_name(r->task.layout, r->task.op));
  if (r->pid == 0) {
    ct_status st = restart(r, err);
    if (st != CT_OK) return st;
  }
  rsp_head h;
  double deadline = proc_now_s() + r->o.timeout_s;
  call_result c = call(r, REQ_MEASURE, inst, sizeof *inst, image, size, deadline, &h);
  if (c == CALL_OK && h.status != CT_OK && h.size == 0 && !h.exiting)
    return err_set(err, (ct_status)h.status, __FILE__, __LINE__, "%s", h.msg);
  if (c == CALL_OK && h.status == CT_OK && h.size == sizeof *res) {
    int rc = proc_recv_all(r->fd, res, sizeof *res, deadline);
    if (rc == PROC_OK) {
      res->error[sizeof res->error - 1] = '\0';
      if (!h.exiting) return CT_OK;
      stop_worker(r, EXIT_GRACE_S);
      return restart(r, err);
    }
    c = rc == PROC_TIMEOUT ? CALL_TIMEOUT : CALL_DIED;
  } else if (c == CALL_OK) {
    c = CALL_DIED; /* a response out of protocol: treat the worker as gone */
  }
  memset(res, 0, sizeof *res);
  int ws = stop_worker(r, 0);
  if (c == CALL_TIMEOUT) {
    res->outcome = OUT_TIMEOUT;
    snprintf(res->error, sizeof res->error, "no result within %g s: the worker was killed",
             r->o.timeout_s);
  } else {
    char how[96];
    proc_describe_exit(ws, how, sizeof how);
    res->outcome = OUT_RUNTIME_ERROR;
    snprintf(res->error, sizeof res->error, "the worker died (%s) during the trial", how);
  }
  return restart(r, err);
}

ct_status runner_reference(runner *r, void *out, void *data, int8_t *weights, void *residual,
                           ct_err *err) {
  if (!r || !out || !data || !weights)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner_reference: NULL argument");
  if (!r->has_task)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "runner_reference: no task: call runner_set_task first");
  if (r->task.epi.residual && !residual)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "runner_reference: the task has a residual: NULL");
  if (r->pid == 0) {
    ct_status st = restart(r, err);
    if (st != CT_OK) return st;
  }
  size_t nd = (size_t)workload_data_elems(&r->task), nw = (size_t)workload_weight_elems(&r->task);
  size_t nr = r->task.epi.residual ? (size_t)workload_out_elems(&r->task) : 0;
  size_t no = (size_t)workload_out_elems(&r->task) * workload_out_elem_bytes(&r->task);
  double deadline = proc_now_s() + SETUP_TIMEOUT_S;
  rsp_head h;
  call_result c = call(r, REQ_REFERENCE, NULL, 0, NULL, 0, deadline, &h);
  if (c == CALL_OK && h.status != CT_OK && h.size == 0) {
    ct_status st = err_set(err, (ct_status)h.status, __FILE__, __LINE__, "%s", h.msg);
    if (h.exiting) {
      stop_worker(r, EXIT_GRACE_S);
      (void)restart(r, NULL);
    }
    return st;
  }
  if (c == CALL_OK && h.size == nd + nw + nr + no &&
      proc_recv_all(r->fd, data, nd, deadline) == PROC_OK &&
      proc_recv_all(r->fd, weights, nw, deadline) == PROC_OK &&
      (nr == 0 || proc_recv_all(r->fd, residual, nr, deadline) == PROC_OK) &&
      proc_recv_all(r->fd, out, no, deadline) == PROC_OK)
    return CT_OK;
  ct_status st = restart(r, err);
  if (st != CT_OK) return st;
  return ERR_SET(err, CT_ERR_CUDA,
                 "runner_reference: the worker ended or timed out; it was restarted");
}

int runner_restarts(const runner *r) {
  return r ? r->restarts : 0;
}

void runner_stop(runner *r) {
  if (!r) return;
  if (r->pid > 0) {
    req_head q = {.type = REQ_QUIT, .reserved = 0, .size = 0};
    (void)proc_send_all(r->fd, &q, sizeof q);
    stop_worker(r, STOP_GRACE_S);
  }
  free(r);
}
