/*
 * dispatch.c: the runtime library behind convtune.h.
 *
 * A context holds the read-only database, the device, and a hash table of
 * loaded kernels keyed by the workload's bytes (normalised: unused spatial
 * entries zeroed), under a read-write lock: a cached call takes the read
 * lock, hashes about 100 bytes, and launches (no allocation, no string
 * formatting). The first call of a workload takes the write lock, resolves
 * its config (resolve.c), builds the instance with the same instance_make
 * the tuner used, loads the stored cubin or compiles one with NVRTC, and
 * inserts the entry. Plain layouts are packed and unpacked on the GPU in
 * stream-ordered scratch (cudaMallocAsync), so calls on different streams
 * never share a buffer; packed (nchw4c) and channels-last (nhwc) ones go to
 * the kernel as they are, nhwc to the channels-last templates only (no
 * layout kernel, no scratch: resolve.c). Errors are statuses with the
 * message on the context; nothing is printed.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cuda_runtime.h>

#include "convtune/convtune.h"
#include "core/quant.h"
#include "core/reference.h"
#include "db/db.h"
#include "gpu/cuda_check.h"
#include "gpu/device.h"
#include "gpu/kernel.h"
#include "gpu/nvrtc.h"
#include "dispatch/dispatch.h"
#include "resolve/resolve.h"

typedef struct entry {
  ct_workload w; /* normalised, the table key */
  uint64_t hash;
  ct_workload pw; /* what the kernel runs: w, or plain w packed */
  int plain;      /* w is plain nchw: pack data, unpack output */
  instance inst;
  kernel k;
  ct_explanation ex;
} entry;

struct ct_context {
  pthread_rwlock_t lock; /* the table and the pack kernels */
  pthread_mutex_t msg_lock;
  db *db;
  int has_device;
  device dev;
  arch arch;
  db_device dbdev;
  entry **slots; /* open addressing, power-of-two size */
  int n_slots, n_entries;
  int pack_loaded;
  kernel pack[3]; /* pack_data, unpack_out, pack_weights */
  instance pack_inst[3];
  cudaMemPool_t pool; /* scratch of plain layouts; keeps its memory between calls */
  int has_pool;
  ct_log_fn log;
  void *log_user;
  ct_log_level log_level;
  /* The last error message of each thread on this context (so that one
   * thread's error never overwrites another's while it reads it). */
  pthread_key_t msg_key;
  char **msgs; /* every thread's buffer, freed by ct_close */
  int n_msgs, cap_msgs;
};

enum { K_PACK_DATA, K_UNPACK_OUT, K_PACK_WEIGHTS };

static ct_status use_device(ct_context *ctx, ct_err *err);
static ct_status load_pack_kernels(ct_context *ctx, ct_err *err);
static const char *const pack_names[3] = {"pack_data", "unpack_out", "pack_weights"};

/* ---- messages ---------------------------------------------------------- */

/* This thread's message buffer on ctx, made on first use (NULL when out of
 * memory). */
static char *thread_msg(ct_context *ctx) {
  char *buf = pthread_getspecific(ctx->msg_key);
  if (buf) return buf;
  if (!(buf = calloc(1, CT_ERRMSG_MAX))) return NULL;
  pthread_mutex_lock(&ctx->msg_lock);
  if (ctx->n_msgs == ctx->cap_msgs) {
    int cap = ctx->cap_msgs ? 2 * ctx->cap_msgs : 8;
    char **grown = realloc(ctx->msgs, sizeof *grown * cap);
    if (!grown) {
      pthread_mutex_unlock(&ctx->msg_lock);
      free(buf);
      return NULL;
    }
    ctx->msgs = grown;
    ctx->cap_msgs = cap;
  }
  ctx->msgs[ctx->n_msgs++] = buf;
  pthread_mutex_unlock(&ctx->msg_lock);
  pthread_setspecific(ctx->msg_key, buf);
  return buf;
}

static ct_status fail(ct_context *ctx, const ct_err *err) {
  char *buf = thread_msg(ctx);
  if (buf) snprintf(buf, CT_ERRMSG_MAX, "%s", err->msg);
  pthread_mutex_lock(&ctx->msg_lock);
  ct_log_fn fn = ctx->log;
  void *user = ctx->log_user;
  pthread_mutex_unlock(&ctx->msg_lock);
  if (fn) fn(user, CT_LOG_ERROR, err->msg);
  return err->status;
}

static ct_status failf(ct_context *ctx, ct_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ct_status failf(ct_context *ctx, ct_status st, const char *fmt, ...) {
  ct_err err = {.status = st};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err.msg, sizeof err.msg, fmt, ap);
  va_end(ap);
  return fail(ctx, &err);
}

static void logf_(ct_context *ctx, ct_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(ct_context *ctx, ct_log_level level, const char *fmt, ...) {
  pthread_mutex_lock(&ctx->msg_lock);
  ct_log_fn fn = ctx->log;
  void *user = ctx->log_user;
  int on = fn && level <= ctx->log_level;
  pthread_mutex_unlock(&ctx->msg_lock);
  if (!on) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fn(user, level, msg);
}

const char *ct_errmsg(const ct_context *ctx) {
  if (!ctx) return "no context (NULL)";
  const char *buf = pthread_getspecific(ctx->msg_key);
  return buf ? buf : "";
}

void ct_set_log(ct_context *ctx, ct_log_fn fn, void *user, ct_log_level level) {
  if (!ctx) return;
  pthread_mutex_lock(&ctx->msg_lock);
  ctx->log = fn;
  ctx->log_user = user;
  ctx->log_level = level;
  pthread_mutex_unlock(&ctx->msg_lock);
}

/* ---- public helpers ---------------------------------------------------- */

void ct_workload_init(ct_workload *w, ct_op op) {
  if (w) workload_init(w, op);
}

ct_status ct_workload_key(const ct_workload *w, char *buf, size_t size) {
  ct_err err = {0};
  if (!w || !buf || size < CT_KEY_MAX) {
    if (buf && size)
      snprintf(buf, size, "ct_workload_key: NULL argument or buffer under %d bytes", CT_KEY_MAX);
    return CT_ERR_INVALID_ARG;
  }
  if (workload_validate(w, &err)) {
    snprintf(buf, size, "%s", err.msg);
    return err.status;
  }
  workload_key(w, buf, size);
  return CT_OK;
}

ct_status ct_workload_parse(const char *text, ct_workload *out, char *msg, size_t msg_size) {
  ct_err err = {0};
  ct_status st;
  if (msg && msg_size) msg[0] = '\0';
  if (!text || !out) {
    if (msg && msg_size) snprintf(msg, msg_size, "ct_workload_parse: NULL text or out");
    return CT_ERR_INVALID_ARG;
  }
  /* a JSON object starts with '{' (after blanks); anything else is a key */
  const char *p = text;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  st = *p == '{' ? workload_from_json_text(text, out, &err) : workload_from_key(text, out, &err);
  if (st && msg && msg_size) snprintf(msg, msg_size, "%s", err.msg);
  return st;
}

ct_status ct_workload_json(const ct_workload *w, char *buf, size_t size) {
  ct_err err = {0};
  if (!w || !buf || !size) {
    if (buf && size) snprintf(buf, size, "ct_workload_json: NULL workload or buffer");
    return CT_ERR_INVALID_ARG;
  }
  if (workload_validate(w, &err)) {
    snprintf(buf, size, "%s", err.msg);
    return err.status;
  }
  cJSON *j = workload_to_json(w);
  char *text = j ? cJSON_PrintUnformatted(j) : NULL;
  cJSON_Delete(j);
  if (!text) {
    snprintf(buf, size, "ct_workload_json: out of memory");
    return CT_ERR_NO_MEMORY;
  }
  const size_t n = strlen(text);
  ct_status st = CT_OK;
  if (n >= size) {
    snprintf(buf, size, "ct_workload_json: %zu bytes needed, the buffer has %zu", n + 1, size);
    st = CT_ERR_INVALID_ARG;
  } else {
    memcpy(buf, text, n + 1);
  }
  free(text);
  return st;
}

int ct_workload_out_dims(const ct_workload *w, int64_t dims[6]) {
  if (!w || !dims || workload_validate(w, NULL)) return 0;
  return workload_out_dims(w, dims);
}

int64_t ct_workload_ops(const ct_workload *w) {
  if (!w || workload_validate(w, NULL)) return -1;
  return workload_ops(w);
}

size_t ct_packed_weights_bytes(const ct_workload *w) {
  /* nhwc's OHWI weights are used as they are: there are no packed ones */
  if (!w || w->layout == CT_LAYOUT_NHWC || workload_validate(w, NULL)) return 0;
  ct_workload pw;
  if (!workload_for_layout(w, CT_LAYOUT_NCHW4C, &pw)) return 0; /* a grouped one that cannot pack */
  return (size_t)workload_weight_elems(&pw);
}

ct_status ct_reference_conv(const ct_workload *w, const int8_t *data, const int8_t *weights,
                            int32_t *out) {
  if (!data || !weights || !out) return CT_ERR_INVALID_ARG;
  return reference_conv(w, data, weights, out, NULL);
}

/* ---- open and close ---------------------------------------------------- */

static ct_context *new_context(void) {
  ct_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  if (pthread_key_create(&ctx->msg_key, NULL)) {
    free(ctx);
    return NULL;
  }
  pthread_rwlock_init(&ctx->lock, NULL);
  pthread_mutex_init(&ctx->msg_lock, NULL);
  ctx->log_level = CT_LOG_INFO;
  return ctx;
}

static ct_status open_db(ct_context *ctx, const char *db_path) {
  if (!db_path) return CT_OK;
  ct_err err = {0};
  if (db_open(db_path, 1, &ctx->db, &err)) return fail(ctx, &err);
  return CT_OK;
}

ct_status ct_open(const char *db_path, int device_ordinal, ct_context **out) {
  if (!out) return CT_ERR_INVALID_ARG;
  ct_context *ctx = *out = new_context();
  if (!ctx) return CT_ERR_NO_MEMORY;
  if (device_ordinal < 0)
    return failf(ctx, CT_ERR_INVALID_ARG, "ct_open: device must be a CUDA ordinal >= 0, got %d",
                 device_ordinal);
  ct_status st = open_db(ctx, db_path);
  if (st) return st;
  ct_err err = {0};
  if (device_open(device_ordinal, &ctx->dev, &err)) return fail(ctx, &err);
  ctx->has_device = 1;
  ctx->arch = ctx->dev.arch;
  memset(&ctx->dbdev, 0, sizeof ctx->dbdev);
  snprintf(ctx->dbdev.name, sizeof ctx->dbdev.name, "%s", ctx->dev.name);
  ctx->dbdev.cc_major = ctx->arch.cc_major;
  ctx->dbdev.cc_minor = ctx->arch.cc_minor;
  ctx->dbdev.sm_count = ctx->arch.sm_count;
  /* The layout kernels are compiled here, once (NVRTC, ~0.1 s), so that no
   * first call of a workload pays for them; the scratch pool keeps its
   * memory between calls (the default pool would give it back at every
   * synchronisation). */
  if (load_pack_kernels(ctx, &err)) return fail(ctx, &err);
  struct cudaMemPoolProps props = {
      .allocType = cudaMemAllocationTypePinned,
      .location = {.type = cudaMemLocationTypeDevice, .id = device_ordinal}};
  unsigned long long keep = ~0ULL;
  if (cudaMemPoolCreate(&ctx->pool, &props) != cudaSuccess ||
      cudaMemPoolSetAttribute(ctx->pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess) {
    cudaGetLastError();
    return failf(ctx, CT_ERR_CUDA, "ct_open: cannot create a memory pool on device %d",
                 device_ordinal);
  }
  ctx->has_pool = 1;
  /* Map the pool's first 64 MB now: the first allocation from a fresh pool
   * maps physical memory (a few hundred microseconds), which would otherwise
   * land on the first plain-layout call. Kept by the release threshold. */
  void *warm = NULL;
  if (cudaMallocFromPoolAsync(&warm, 64u << 20, ctx->pool, 0) == cudaSuccess) {
    cudaFreeAsync(warm, 0);
    cudaStreamSynchronize(0);
  }
  cudaGetLastError(); /* an allocation refused here is retried per call */
  return CT_OK;
}

ct_status ct_open_arch(const char *db_path, const char *arch_name, ct_context **out) {
  if (!out) return CT_ERR_INVALID_ARG;
  ct_context *ctx = *out = new_context();
  if (!ctx) return CT_ERR_NO_MEMORY;
  ct_err err = {0};
  if (!arch_name) return failf(ctx, CT_ERR_INVALID_ARG, "ct_open_arch: architecture is NULL");
  if (arch_from_name(arch_name, &ctx->arch, &err)) {
    /* an unknown name is the caller's argument; CT_ERR_NOT_FOUND would read
     * as a missing database (the message lists the known names) */
    err.status = CT_ERR_INVALID_ARG;
    return fail(ctx, &err);
  }
  ct_status st = open_db(ctx, db_path);
  if (st) return st;
  /* no device name: records match by compute capability */
  ctx->dbdev.cc_major = ctx->arch.cc_major;
  ctx->dbdev.cc_minor = ctx->arch.cc_minor;
  return CT_OK;
}

void ct_close(ct_context *ctx) {
  if (!ctx) return;
  for (int i = 0; i < ctx->n_slots; i++)
    if (ctx->slots[i]) {
      kernel_unload(&ctx->slots[i]->k);
      free(ctx->slots[i]);
    }
  free(ctx->slots);
  for (int i = 0; i < 3; i++) kernel_unload(&ctx->pack[i]);
  if (ctx->has_pool) cudaMemPoolDestroy(ctx->pool);
  db_close(ctx->db);
  for (int i = 0; i < ctx->n_msgs; i++) free(ctx->msgs[i]);
  free(ctx->msgs);
  pthread_key_delete(ctx->msg_key);
  pthread_rwlock_destroy(&ctx->lock);
  pthread_mutex_destroy(&ctx->msg_lock);
  free(ctx);
}

/* ---- the table --------------------------------------------------------- */

static void normalise(const ct_workload *w, ct_workload *out) {
  memset(out, 0, sizeof *out);
  *out = *w;
  for (int d = workload_nd(w); d < CT_MAX_SPATIAL; d++)
    out->in[d] = out->kernel[d] = out->stride[d] = out->pad_before[d] = out->pad_after[d] =
        out->dilation[d] = 0;
}

/* FNV-1a over the workload's bytes (ints only: no padding inside). */
static uint64_t hash_workload(const ct_workload *w) {
  const unsigned char *p = (const unsigned char *)w;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < sizeof *w; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

static entry *find(const ct_context *ctx, const ct_workload *w, uint64_t h) {
  if (!ctx->n_slots) return NULL;
  for (int i = (int)(h & (uint64_t)(ctx->n_slots - 1));; i = (i + 1) & (ctx->n_slots - 1)) {
    entry *e = ctx->slots[i];
    if (!e) return NULL;
    if (e->hash == h && !memcmp(&e->w, w, sizeof *w)) return e;
  }
}

static int insert(ct_context *ctx, entry *e) {
  if (2 * (ctx->n_entries + 1) > ctx->n_slots) {
    int n = ctx->n_slots ? 2 * ctx->n_slots : 64;
    entry **slots = calloc(n, sizeof *slots);
    if (!slots) return 0;
    for (int i = 0; i < ctx->n_slots; i++) {
      entry *o = ctx->slots[i];
      if (!o) continue;
      int j = (int)(o->hash & (uint64_t)(n - 1));
      while (slots[j]) j = (j + 1) & (n - 1);
      slots[j] = o;
    }
    free(ctx->slots);
    ctx->slots = slots;
    ctx->n_slots = n;
  }
  int j = (int)(e->hash & (uint64_t)(ctx->n_slots - 1));
  while (ctx->slots[j]) j = (j + 1) & (ctx->n_slots - 1);
  ctx->slots[j] = e;
  ctx->n_entries++;
  return 1;
}

/* Compile and load the layout kernels (once, from ct_open). */
static ct_status load_pack_kernels(ct_context *ctx, ct_err *err) {
  if (ctx->pack_loaded) return CT_OK;
  cubin cb = {0};
  ct_status st =
      nvrtc_compile_source("pack.cu", template_embedded("pack.cu"), NULL, 0, &ctx->arch, &cb, err);
  for (int i = 0; !st && i < 3; i++) {
    instance *inst = &ctx->pack_inst[i];
    memset(inst, 0, sizeof *inst);
    snprintf(inst->kernel_name, sizeof inst->kernel_name, "%s", pack_names[i]);
    st = kernel_load(cb.data, cb.size, inst, &ctx->pack[i], err);
  }
  cubin_free(&cb);
  if (st) {
    for (int i = 0; i < 3; i++) kernel_unload(&ctx->pack[i]);
    return st;
  }
  ctx->pack_loaded = 1;
  return CT_OK;
}

/* Build the entry of a workload not seen before, without holding the table
 * lock: resolving and compiling take milliseconds to seconds, and cached
 * calls of other workloads must not wait for them. */
static ct_status build_entry(ct_context *ctx, const ct_workload *nw, uint64_t h,
                             const char *pin_tpl, const char *pin_cfg, entry **out, ct_err *err) {
  resolution r;
  ct_status st = pin_tpl ? resolve_config(nw, pin_tpl, pin_cfg, &ctx->arch, &r, err)
                         : resolve(ctx->db, &ctx->dbdev, &ctx->arch, nw, &r, err);
  if (st) return st;
  entry *e = calloc(1, sizeof *e);
  cubin cb = {0};
  char *options = NULL;
  if (!e) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  e->w = *nw;
  e->hash = h;
  e->pw = r.pw;
  /* resolve serves nchw4c and nhwc by templates of their own layout, and
   * plain nchw by the packed templates */
  e->plain = nw->layout == CT_LAYOUT_NCHW && r.pw.layout == CT_LAYOUT_NCHW4C;
  e->ex = r.ex;
  if ((st = instance_make(r.tpl, &r.pw, &r.s, &r.cfg, &ctx->arch, &e->inst, err))) goto done;
  /* the stored cubin of exactly this instance on this architecture */
  size_t len = 1;
  for (int i = 0; i < e->inst.n_options; i++) len += strlen(e->inst.options[i]) + 1;
  if (!(options = malloc(len))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  char *p = options;
  for (int i = 0; i < e->inst.n_options; i++) p += sprintf(p, i ? " %s" : "%s", e->inst.options[i]);
  *p = '\0';
  void *data = NULL;
  size_t size = 0;
  const char *how = "stored cubin";
  st = CT_ERR_NOT_FOUND;
  if (ctx->db && db_load_kernel(ctx->db, template_version(r.tpl), options, ctx->arch.name, &data,
                                &size, NULL) == CT_OK) {
    ct_err ignored = {0};
    st = kernel_load(data, size, &e->inst, &e->k, &ignored);
    free(data);
    if (st) how = "compiled with NVRTC (the stored cubin did not load)";
  }
  if (st) {
    /* none stored for this architecture (or it did not load): compile */
    if (!strcmp(how, "stored cubin")) how = "compiled with NVRTC";
    if (!(st = nvrtc_compile(&e->inst, &ctx->arch, &cb, err)))
      st = kernel_load(cb.data, cb.size, &e->inst, &e->k, err);
  }
  if (st) goto done;
  char key[CT_KEY_MAX];
  static const char *const sources[] = {"exact record", "same compute capability",
                                        "nearest tuned workload", "default", "chain pick"};
  logf_(ctx, CT_LOG_INFO, "%s: %s, %s (%s%s%.2f us), %s", workload_key(nw, key, sizeof key),
        sources[e->ex.source], r.tpl->name, e->ex.device, e->ex.device[0] ? ", " : "",
        e->ex.measured_us, how);
  *out = e;
  e = NULL;
done:
  free(e);
  free(options);
  cubin_free(&cb);
  resolution_free(&r);
  return st;
}

/* The entry of w, built on first use (pin_tpl NULL: as resolve says; else
 * that template and config, and an entry already there is an error). Two
 * threads that miss the same workload at once may both build it; the first
 * to insert wins and the other's copy is dropped. */
static ct_status get_entry_as(ct_context *ctx, const ct_workload *w, const char *pin_tpl,
                              const char *pin_cfg, entry **out) {
  ct_workload nw;
  normalise(w, &nw);
  uint64_t h = hash_workload(&nw);
  pthread_rwlock_rdlock(&ctx->lock);
  entry *e = find(ctx, &nw, h);
  pthread_rwlock_unlock(&ctx->lock);
  if (e && pin_tpl)
    return failf(ctx, CT_ERR_INVALID_ARG, "dispatch_pin: the workload has a kernel already");
  if (e) {
    *out = e;
    return CT_OK;
  }
  ct_err err = {0};
  if (workload_validate(w, &err)) return fail(ctx, &err);
  if (!ctx->has_device)
    return failf(ctx, CT_ERR_NO_DEVICE,
                 "this context has no GPU (opened for %s): it can explain, not run",
                 ctx->arch.name);
  entry *built = NULL;
  ct_status st = use_device(ctx, &err);
  if (!st) st = build_entry(ctx, &nw, h, pin_tpl, pin_cfg, &built, &err);
  if (st) return fail(ctx, &err);
  pthread_rwlock_wrlock(&ctx->lock);
  if (!(e = find(ctx, &nw, h))) {
    if (insert(ctx, built)) {
      e = built;
      built = NULL;
    } else {
      st = ERR_SET(&err, CT_ERR_NO_MEMORY, "out of memory growing the kernel table");
    }
  }
  pthread_rwlock_unlock(&ctx->lock);
  if (built) {
    kernel_unload(&built->k);
    free(built);
  }
  if (st) return fail(ctx, &err);
  *out = e;
  return CT_OK;
}

static ct_status get_entry(ct_context *ctx, const ct_workload *w, entry **out) {
  return get_entry_as(ctx, w, NULL, NULL, out);
}

ct_status dispatch_pin(ct_context *ctx, const ct_workload *w, const char *template_name,
                       const char *config_json) {
  if (!ctx) return CT_ERR_INVALID_ARG;
  if (!w || !template_name || !config_json)
    return failf(ctx, CT_ERR_INVALID_ARG, "dispatch_pin: NULL workload, template or config");
  entry *e;
  return get_entry_as(ctx, w, template_name, config_json, &e);
}

/* ---- launching --------------------------------------------------------- */

/* Make the context's device current on this thread (threads start on
 * device 0; the caller's other work may have switched it). */
static ct_status use_device(ct_context *ctx, ct_err *err) {
  ct_status st = CT_OK;
  int cur = -1;
  CUDA_TRY(err, cudaGetDevice(&cur));
  if (cur != ctx->dev.ordinal) CUDA_TRY(err, cudaSetDevice(ctx->dev.ordinal));
done:
  return st;
}

/* Launch a layout kernel over `total` threads with the given arguments. */
static ct_status launch_pack(ct_context *ctx, int which, long long total, void **args,
                             cudaStream_t stream, ct_err *err) {
  ct_status st = CT_OK;
  unsigned threads = 256;
  unsigned long long blocks = (unsigned long long)(total + threads - 1) / threads;
  dim3 grid = {(unsigned)blocks, 1, 1}, block = {threads, 1, 1};
  CUDA_TRY(err, cudaLaunchKernel((const void *)ctx->pack[which].fn, grid, block, args, 0, stream));
done:
  return st;
}

static ct_status conv(ct_context *ctx, ct_op op, const char *fn, const ct_workload *w,
                      const void *data, const void *weights, const void *params,
                      const void *residual, void *out, struct CUstream_st *stream_) {
  if (!ctx) return CT_ERR_INVALID_ARG;
  if (!w || !data || !weights || !out)
    return failf(ctx, CT_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                 !w         ? "the workload"
                 : !data    ? "data"
                 : !weights ? "weights"
                            : "out");
  if (w->op != op)
    return failf(ctx, CT_ERR_INVALID_ARG, "%s: the workload is %s", fn,
                 w->op == CT_OP_CONV2D   ? "conv2d (use ct_conv2d or ct_qconv2d)"
                 : w->op == CT_OP_CONV3D ? "conv3d (use ct_conv3d or ct_qconv3d)"
                                         : "of no known op");
  if (workload_has_params(w) && !params)
    return failf(ctx, CT_ERR_INVALID_ARG,
                 "%s: the workload's epilogue (zero points, bias or 8-bit output) needs its params "
                 "block (ct_make_params, copied to the device)%s",
                 fn, strcmp(fn, "ct_conv2d") && strcmp(fn, "ct_conv3d") ? "" : ": use ct_qconv*");
  if (w->epi.residual && !residual)
    return failf(ctx, CT_ERR_INVALID_ARG, "%s: the workload has a residual; it is NULL", fn);
  /* the kernels load 16-byte vectors and TMA boxes: a misaligned pointer
   * would fault on the device, after the call returned */
  const void *const ptrs[] = {data, weights, out, params, w->epi.residual ? residual : NULL};
  static const char *const names[] = {"data", "weights", "out", "params", "the residual"};
  for (int i = 0; i < 5; i++)
    if ((uintptr_t)ptrs[i] % 16)
      return failf(ctx, CT_ERR_INVALID_ARG,
                   "%s: %s (%p) is not 16-byte aligned (cudaMalloc's pointers are)", fn, names[i],
                   ptrs[i]);
  entry *e = NULL;
  ct_status st = get_entry(ctx, w, &e);
  if (st) return st;
  cudaStream_t stream = (cudaStream_t)stream_;
  ct_err err = {0};
  if ((st = use_device(ctx, &err))) return fail(ctx, &err);
  const void *res = w->epi.residual ? residual : NULL;
  if (!e->plain) {
    kernel_io io = {data, weights, out, params, res};
    if ((st = kernel_launch(&e->k, &e->inst, &io, stream, &err))) return fail(ctx, &err);
    return CT_OK;
  }
  /* plain layout: pack data (and the residual), run, unpack the output, in
   * stream-ordered scratch; padded data channels read the zero point */
  geom3 g;
  workload_geom(&e->pw, &g);
  long long in_sp = g.in[0] * g.in[1] * g.in[2];
  long long out_sp = g.out[0] * g.out[1] * g.out[2] * workload_d2s_volume(w);
  int eb = (int)workload_out_elem_bytes(w);
  size_t data_bytes = (size_t)workload_data_elems(&e->pw);
  size_t pout_elems = (size_t)workload_out_elems(&e->pw);
  void *pdata = NULL, *pout = NULL, *pres = NULL;
  int n = (int)g.n, c = w->c, c4 = (int)g.c / 4;
  int cout = workload_out_channels(w), cout4 = (cout + 3) / 4;
  const int *pad = w->epi.data_zero_point ? params : NULL, *no_pad = NULL;
  CUDA_TRY(&err, cudaMallocFromPoolAsync(&pdata, data_bytes, ctx->pool, stream));
  CUDA_TRY(&err, cudaMallocFromPoolAsync(&pout, pout_elems * (size_t)eb, ctx->pool, stream));
  {
    void *args[] = {(void *)&data, &pdata, &n, &c, &c4, &in_sp, (void *)&pad};
    if ((st = launch_pack(ctx, K_PACK_DATA, (long long)n * c4 * in_sp, args, stream, &err)))
      goto done;
  }
  if (res) { /* the residual has the output's shape: pack it like data */
    CUDA_TRY(&err, cudaMallocFromPoolAsync(&pres, pout_elems, ctx->pool, stream));
    void *args[] = {(void *)&res, &pres, &n, &cout, &cout4, &out_sp, (void *)&no_pad};
    if ((st = launch_pack(ctx, K_PACK_DATA, (long long)n * cout4 * out_sp, args, stream, &err)))
      goto done;
  }
  {
    kernel_io io = {pdata, weights, pout, params, pres};
    if ((st = kernel_launch(&e->k, &e->inst, &io, stream, &err))) goto done;
  }
  {
    void *args[] = {&pout, &out, &n, &cout, &cout4, &out_sp, &eb};
    if ((st = launch_pack(ctx, K_UNPACK_OUT, (long long)n * cout * out_sp, args, stream, &err)))
      goto done;
  }
done:
  if (pdata) cudaFreeAsync(pdata, stream);
  if (pout) cudaFreeAsync(pout, stream);
  if (pres) cudaFreeAsync(pres, stream);
  return st ? fail(ctx, &err) : CT_OK;
}

ct_status ct_conv2d(ct_context *ctx, const ct_workload *w, const void *data, const void *weights,
                    void *out, struct CUstream_st *stream) {
  return conv(ctx, CT_OP_CONV2D, "ct_conv2d", w, data, weights, NULL, NULL, out, stream);
}

ct_status ct_conv3d(ct_context *ctx, const ct_workload *w, const void *data, const void *weights,
                    void *out, struct CUstream_st *stream) {
  return conv(ctx, CT_OP_CONV3D, "ct_conv3d", w, data, weights, NULL, NULL, out, stream);
}

ct_status ct_qconv2d(ct_context *ctx, const ct_workload *w, const void *data, const void *weights,
                     const void *params, const void *residual, void *out,
                     struct CUstream_st *stream) {
  return conv(ctx, CT_OP_CONV2D, "ct_qconv2d", w, data, weights, params, residual, out, stream);
}

ct_status ct_qconv3d(ct_context *ctx, const ct_workload *w, const void *data, const void *weights,
                     const void *params, const void *residual, void *out,
                     struct CUstream_st *stream) {
  return conv(ctx, CT_OP_CONV3D, "ct_qconv3d", w, data, weights, params, residual, out, stream);
}

ct_status ct_quantize_multiplier(double scale, int32_t *multiplier, int *shift) {
  return quant_multiplier(scale, multiplier, shift, NULL);
}

size_t ct_params_bytes(const ct_workload *w) {
  if (!w || workload_validate(w, NULL)) return 0;
  return quant_params_words(w) * sizeof(int32_t);
}

size_t ct_out_bytes(const ct_workload *w) {
  if (!w || workload_validate(w, NULL)) return 0;
  return (size_t)workload_out_elems(w) * workload_out_elem_bytes(w);
}

ct_status ct_make_params(ct_context *ctx, const ct_workload *w, const ct_quant *q,
                         const int8_t *weights, void *params) {
  if (!ctx) return CT_ERR_INVALID_ARG;
  if (!w || !weights || !params)
    return failf(ctx, CT_ERR_INVALID_ARG, "ct_make_params: %s is NULL",
                 !w         ? "the workload"
                 : !weights ? "weights"
                            : "params");
  ct_err err = {0};
  if (workload_validate(w, &err)) return fail(ctx, &err);
  /* the weights are plain OIHW whatever w's layout, or OHWI for nhwc: a
   * channel's weights are contiguous in both, so their sums are the same */
  ct_workload plain = *w;
  plain.layout = CT_LAYOUT_NCHW;
  int32_t *sums = malloc((size_t)w->k * sizeof *sums);
  if (!sums) return failf(ctx, CT_ERR_NO_MEMORY, "ct_make_params: out of memory");
  quant_weight_sums(&plain, weights, sums);
  /* channels-last with a data zero point and padding: the border classes'
   * corrections too, from the OHWI weights (core/zpad.cuh) */
  ct_status st = quant_params(w, q, sums, params, &err);
  if (!st) st = quant_zpad_fill(w, q, weights, params, &err);
  free(sums);
  if (st) {
    err_prefix(&err, "ct_make_params");
    return fail(ctx, &err);
  }
  return CT_OK;
}

ct_status ct_reference_qconv(const ct_workload *w, const ct_quant *q, const void *data,
                             const int8_t *weights, const void *residual, void *out, char *errbuf,
                             size_t errbuf_size) {
  ct_err err = {0};
  ct_status st = !data || !weights || !out
                     ? ERR_SET(&err, CT_ERR_INVALID_ARG, "ct_reference_qconv: NULL tensor")
                     : reference_qconv(w, q, data, weights, residual, out, &err);
  if (errbuf && errbuf_size) snprintf(errbuf, errbuf_size, "%s", st ? err.msg : "");
  return st;
}

ct_status ct_pack_weights(ct_context *ctx, const ct_workload *w, const void *weights, void *packed,
                          struct CUstream_st *stream) {
  if (!ctx) return CT_ERR_INVALID_ARG;
  if (w && w->layout == CT_LAYOUT_NHWC)
    return failf(ctx, CT_ERR_INVALID_ARG,
                 "ct_pack_weights: layout %s takes its weights as they are (%s, unpadded): there "
                 "is nothing to pack; pass them to ct_%sconv%dd directly",
                 workload_layout_name(w->layout, w->op), w->op == CT_OP_CONV3D ? "ODHWI" : "OHWI",
                 workload_has_params(w) ? "q" : "", w->op == CT_OP_CONV3D ? 3 : 2);
  if (!w || !weights || !packed)
    return failf(ctx, CT_ERR_INVALID_ARG, "ct_pack_weights: %s is NULL",
                 !w         ? "the workload"
                 : !weights ? "weights"
                            : "packed");
  ct_err err = {0};
  if (workload_validate(w, &err)) return fail(ctx, &err);
  ct_workload pw;
  if (!workload_for_layout(w, CT_LAYOUT_NCHW4C, &pw))
    return failf(ctx, CT_ERR_UNSUPPORTED,
                 "ct_pack_weights: a grouped convolution packs only when C (%d) and K (%d) are "
                 "multiples of 4 and it has no depth_to_space",
                 w->c, w->k);
  if (!ctx->has_device)
    return failf(ctx, CT_ERR_NO_DEVICE, "this context has no GPU (opened for %s)", ctx->arch.name);
  ct_status st = use_device(ctx, &err);
  if (st) return fail(ctx, &err);
  geom3 g;
  workload_geom(&pw, &g);
  /* grouped: the weights' input channels are a group's, rounded up to 4 */
  int k = w->k, c = (int)workload_cpg(w), k4 = (int)(g.k + 3) / 4;
  int c4 = w->groups > 1 ? (c + 3) / 4 : (int)g.c / 4;
  int kvol = (int)(g.ker[0] * g.ker[1] * g.ker[2]);
  void *args[] = {(void *)&weights, &packed, &k, &c, &k4, &c4, &kvol};
  if ((st = launch_pack(ctx, K_PACK_WEIGHTS, (long long)k4 * c4 * kvol, args, (cudaStream_t)stream,
                        &err)))
    return fail(ctx, &err);
  return CT_OK;
}

ct_status ct_explain(ct_context *ctx, const ct_workload *w, ct_explanation *out) {
  if (!ctx) return CT_ERR_INVALID_ARG;
  if (!w || !out) return failf(ctx, CT_ERR_INVALID_ARG, "ct_explain: NULL workload or out");
  ct_workload nw;
  ct_err err = {0};
  if (workload_validate(w, &err)) return fail(ctx, &err);
  normalise(w, &nw);
  uint64_t h = hash_workload(&nw);
  pthread_rwlock_rdlock(&ctx->lock);
  entry *e = find(ctx, &nw, h);
  if (e) *out = e->ex;
  pthread_rwlock_unlock(&ctx->lock);
  if (e) return CT_OK;
  resolution r;
  ct_status st = resolve(ctx->db, &ctx->dbdev, &ctx->arch, &nw, &r, &err);
  if (st) return fail(ctx, &err);
  *out = r.ex;
  resolution_free(&r);
  return CT_OK;
}
