/*
 * mpi.c: tuning across hosts with MPI (see mpi.h).
 *
 * Rank 0 runs a server thread beside its own pool: it polls for requests
 * (MPI_Iprobe, MPI_ANY_SOURCE), answers each from the database and the
 * task queue, and watches the other ranks' heartbeats. Its own GPUs reach
 * the same stores and the same queue directly, without messages. Every
 * other rank runs its pool on proxy stores and a proxy task source, and a
 * heartbeat thread. MPI is called under one mutex per rank
 * (MPI_THREAD_SERIALIZED); a request holds it until its reply is in, so
 * replies never cross.
 */
#include "tuner/mpi.h"

#ifndef CT_HAVE_MPI

int tune_mpi_built(void) {
  return 0;
}

#else

#include <mpi.h>

#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/json.h"
#include "resolve/resolve.h"
#include "tuner/proc.h"

int tune_mpi_env_rank(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                     "SLURM_PROCID"};
  for (int i = 0; i < 4; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return atoi(v);
  }
  return 0;
}

/* ---- the records protocol: trials as JSON lines ----------------------------------- */

char *mpi_trials_text(const trial *t, int n, size_t *len) {
  size_t cap = 1, used = 0;
  char *text = malloc(cap);
  if (!text) return NULL;
  text[0] = '\0';
  for (int i = 0; i < n; i++) {
    cJSON *j = trial_to_json(&t[i]);
    char *line = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!line) {
      free(text);
      return NULL;
    }
    size_t k = strlen(line);
    if (used + k + 2 > cap) {
      size_t grown = (used + k + 2) * 2;
      char *p = realloc(text, grown);
      if (!p) {
        free(line);
        free(text);
        return NULL;
      }
      text = p;
      cap = grown;
    }
    memcpy(text + used, line, k);
    used += k;
    text[used++] = '\n';
    text[used] = '\0';
    free(line);
  }
  *len = used;
  return text;
}

ct_status mpi_trials_parse(const char *text, size_t len, trial **out, int *n, ct_err *err) {
  *out = NULL;
  *n = 0;
  int count = 0, cap = 0, line_no = 0;
  trial *v = NULL;
  ct_status st = CT_OK;
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
    line_no++;
    if (k) {
      char *line = malloc(k + 1);
      if (!line) {
        st = ERR_SET(err, CT_ERR_NO_MEMORY, "records: no memory for line %d", line_no);
        break;
      }
      memcpy(line, p, k);
      line[k] = '\0';
      char origin[32];
      snprintf(origin, sizeof origin, "record %d", line_no);
      cJSON *j = NULL;
      st = json_parse(line, origin, &j, err);
      free(line);
      if (st) break;
      if (count == cap) {
        int grown = cap ? 2 * cap : 64;
        trial *q = realloc(v, (size_t)grown * sizeof *q);
        if (!q) {
          cJSON_Delete(j);
          st = ERR_SET(err, CT_ERR_NO_MEMORY, "records: no memory for %d trials", grown);
          break;
        }
        v = q;
        cap = grown;
      }
      st = trial_from_json(j, &v[count], err);
      cJSON_Delete(j);
      if (st) {
        err_prefix(err, "%s", origin);
        break;
      }
      count++;
    }
    p += k + 1;
  }
  if (st) {
    trials_free(v, count);
    return st;
  }
  *out = v;
  *n = count;
  return CT_OK;
}

#ifdef CT_HAVE_MPI

int tune_mpi_built(void) {
  return 1;
}

enum { TAG_REQ = 101, TAG_REP = 102 };

typedef enum {
  OP_HEARTBEAT,
  OP_NEXT,
  OP_DONE,
  OP_TRIALS,
  OP_TRIALS_OTHER,
  OP_NEAREST,
  OP_RETIRED,
  OP_RECORD,
  OP_BEST,
  OP_HAS_KERNEL,
  OP_PUT_KERNEL,
  OP_BYE
} op_kind;

/* A request's fixed head; text_len bytes of text (JSON lines, or a
 * trial's JSON) and bin_len bytes (a cubin) follow. */
typedef struct req_head {
  int32_t op;
  int32_t limit;
  int32_t status;
  int32_t reserved;
  int64_t id;
  uint64_t text_len, bin_len;
  device dev; /* the GPU the request is for: its kind */
  char tpl[48];
  char key[CT_KEY_MAX];
  arch a;
  ct_workload w;
  tune_result res;
  char msg[CT_ERRMSG_MAX];
} req_head;

/* A reply's fixed head; text_len bytes follow. */
typedef struct rep_head {
  int32_t status;
  int32_t found;
  int64_t id;
  uint64_t text_len;
  config cfg;
  char msg[CT_ERRMSG_MAX];
} rep_head;

typedef struct link_ {
  int rank, size;
  pthread_mutex_t lock; /* MPI calls of this rank */
  double timeout_s;
  volatile int rank0_lost;
} link_;

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void wait_a_little(void) {
  struct timespec ts = {0, 200000000}; /* 0.2 s */
  nanosleep(&ts, NULL);
}

static void nap(void) {
  struct timespec ts = {0, 300000}; /* 0.3 ms */
  nanosleep(&ts, NULL);
}

/* A head and its payload parts as one message buffer. Owned: free(). */
static char *pack(const void *head, size_t head_len, const void *a, size_t a_len, const void *b,
                  size_t b_len, size_t *len) {
  *len = head_len + a_len + b_len;
  char *m = malloc(*len ? *len : 1);
  if (!m) return NULL;
  memcpy(m, head, head_len);
  if (a_len) memcpy(m + head_len, a, a_len);
  if (b_len) memcpy(m + head_len + a_len, b, b_len);
  return m;
}

/* Receive the next message of (src, tag) whole, waiting at most until
 * deadline (0: none), polling with the lock held by the caller. */
static ct_status recv_msg(int src, int tag, double deadline, char **buf, int *len, int *from,
                          ct_err *err) {
  *buf = NULL;
  MPI_Status ms;
  for (;;) {
    int flag = 0;
    if (MPI_Iprobe(src, tag, MPI_COMM_WORLD, &flag, &ms) != MPI_SUCCESS)
      return ERR_SET(err, CT_ERR_IO, "MPI_Iprobe failed");
    if (flag) break;
    if (deadline > 0 && mono_s() > deadline)
      return ERR_SET(err, CT_ERR_IO, "rank %d did not answer", src);
    nap();
  }
  int n = 0;
  MPI_Get_count(&ms, MPI_BYTE, &n);
  char *m = malloc(n ? (size_t)n : 1);
  if (!m) return ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for a %d-byte message", n);
  if (MPI_Recv(m, n, MPI_BYTE, ms.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
      MPI_SUCCESS) {
    free(m);
    return ERR_SET(err, CT_ERR_IO, "MPI_Recv from rank %d failed", ms.MPI_SOURCE);
  }
  *buf = m;
  *len = n;
  if (from) *from = ms.MPI_SOURCE;
  return CT_OK;
}

/* ---- a worker: requests to rank 0 -------------------------------------------------- */

/* Send q (and its payload) to rank 0 and wait for the reply: *rh, and its
 * text (owned, NUL-terminated) when text is not NULL. */
static ct_status call0(link_ *l, req_head *q, const void *text, size_t text_len, const void *bin,
                       size_t bin_len, rep_head *rh, char **rtext, ct_err *err) {
  if (rtext) *rtext = NULL;
  if (l->rank0_lost)
    return ERR_SET(err, CT_ERR_IO, "rank 0 is lost: no answer within %.0f s", l->timeout_s);
  q->text_len = text_len;
  q->bin_len = bin_len;
  size_t len;
  char *m = pack(q, sizeof *q, text, text_len, bin, bin_len, &len);
  if (!m) return ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for a request");
  pthread_mutex_lock(&l->lock);
  ct_status st = CT_OK;
  if (MPI_Send(m, (int)len, MPI_BYTE, 0, TAG_REQ, MPI_COMM_WORLD) != MPI_SUCCESS)
    st = ERR_SET(err, CT_ERR_IO, "MPI_Send to rank 0 failed");
  char *r = NULL;
  int rlen = 0;
  if (!st) st = recv_msg(0, TAG_REP, mono_s() + l->timeout_s, &r, &rlen, NULL, err);
  pthread_mutex_unlock(&l->lock);
  free(m);
  if (st) {
    if (st == CT_ERR_IO) l->rank0_lost = 1;
    return st;
  }
  if ((size_t)rlen < sizeof *rh) {
    free(r);
    return ERR_SET(err, CT_ERR_IO, "a reply of %d bytes from rank 0", rlen);
  }
  memcpy(rh, r, sizeof *rh);
  rh->msg[sizeof rh->msg - 1] = '\0';
  if (rh->text_len != (uint64_t)rlen - sizeof *rh) {
    free(r);
    return ERR_SET(err, CT_ERR_IO, "a reply from rank 0 with a wrong length");
  }
  if (rtext) {
    char *t = malloc(rh->text_len + 1);
    if (!t) {
      free(r);
      return ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for a reply");
    }
    memcpy(t, r + sizeof *rh, rh->text_len);
    t[rh->text_len] = '\0';
    *rtext = t;
  }
  free(r);
  if (rh->status)
    return err_set(err, (ct_status)rh->status, __FILE__, __LINE__, "rank 0: %s", rh->msg);
  return CT_OK;
}

/* A proxy store: its calls are requests for the kind of dev. */
typedef struct proxy {
  link_ *l;
  device dev;
} proxy;

static req_head *new_req(const proxy *px, op_kind op, const template_desc *tpl, const char *key) {
  req_head *q = calloc(1, sizeof *q);
  if (!q) return NULL;
  q->op = op;
  q->dev = px->dev;
  if (tpl) snprintf(q->tpl, sizeof q->tpl, "%s", tpl->name);
  if (key) snprintf(q->key, sizeof q->key, "%s", key);
  return q;
}

#define NEW_REQ(q, op, tpl, key)                                                                   \
  req_head *q = new_req(ctx, op, tpl, key);                                                        \
  if (!q) return ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for a request")

static ct_status trials_reply(proxy *px, req_head *q, trial **out, int *n, ct_err *err) {
  rep_head rh;
  char *text = NULL;
  ct_status st = call0(px->l, q, NULL, 0, NULL, 0, &rh, &text, err);
  if (!st) st = mpi_trials_parse(text, rh.text_len, out, n, err);
  free(text);
  free(q);
  return st;
}

static ct_status p_trials(void *ctx, const char *key, const template_desc *tpl, trial **out, int *n,
                          ct_err *err) {
  NEW_REQ(q, OP_TRIALS, tpl, key);
  return trials_reply(ctx, q, out, n, err);
}

static ct_status p_trials_other(void *ctx, const char *key, const template_desc *tpl, int limit,
                                trial **out, int *n, ct_err *err) {
  NEW_REQ(q, OP_TRIALS_OTHER, tpl, key);
  q->limit = limit;
  return trials_reply(ctx, q, out, n, err);
}

static ct_status config_call(proxy *px, req_head *q, const arch *a, const ct_workload *pw,
                             config *out, int *found, ct_err *err) {
  q->a = *a;
  q->w = *pw;
  rep_head rh;
  ct_status st = call0(px->l, q, NULL, 0, NULL, 0, &rh, NULL, err);
  free(q);
  if (st) return st;
  *found = rh.found;
  if (rh.found) *out = rh.cfg;
  return CT_OK;
}

static ct_status p_nearest(void *ctx, const arch *a, const template_desc *tpl,
                           const ct_workload *pw, config *out, int *found, ct_err *err) {
  NEW_REQ(q, OP_NEAREST, tpl, NULL);
  return config_call(ctx, q, a, pw, out, found, err);
}

static ct_status p_retired(void *ctx, const arch *a, const template_desc *tpl,
                           const ct_workload *pw, config *out, int *found, ct_err *err) {
  NEW_REQ(q, OP_RETIRED, tpl, NULL);
  return config_call(ctx, q, a, pw, out, found, err);
}

static ct_status p_record(void *ctx, trial *trs, int n, ct_err *err) {
  proxy *px = ctx;
  for (int i = 0; i < n; i++) tune_db_device(&px->dev, &trs[i].device);
  size_t len = 0;
  char *text = mpi_trials_text(trs, n, &len);
  if (!text) return ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for %d records", n);
  req_head *q = new_req(px, OP_RECORD, NULL, NULL);
  if (!q) {
    free(text);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for a request");
  }
  rep_head rh;
  ct_status st = call0(px->l, q, text, len, NULL, 0, &rh, NULL, err);
  free(q);
  free(text);
  return st;
}

static ct_status p_best(void *ctx, const char *key, const template_desc *tpl, trial *out,
                        int *found, ct_err *err) {
  NEW_REQ(q, OP_BEST, tpl, key);
  trial *v = NULL;
  int n = 0;
  ct_status st = trials_reply(ctx, q, &v, &n, err);
  if (st) return st;
  *found = n > 0;
  if (n > 0) {
    *out = v[0];
    memset(&v[0], 0, sizeof v[0]);
  }
  trials_free(v, n);
  return CT_OK;
}

/* A trial's kernel-cache identity (template version, options, arch) as text. */
static char *kernel_text(const trial *rec, size_t *len) {
  return mpi_trials_text(rec, 1, len);
}

static int p_has_kernel(void *ctx, const trial *rec) {
  proxy *px = ctx;
  size_t len = 0;
  char *text = kernel_text(rec, &len);
  req_head *q = text ? new_req(px, OP_HAS_KERNEL, NULL, NULL) : NULL;
  rep_head rh = {0};
  int has = q && call0(px->l, q, text, len, NULL, 0, &rh, NULL, NULL) == CT_OK && rh.found;
  free(q);
  free(text);
  return has;
}

static ct_status p_put_kernel(void *ctx, const trial *rec, const void *data, size_t size,
                              ct_err *err) {
  proxy *px = ctx;
  size_t len = 0;
  char *text = kernel_text(rec, &len);
  if (!text) return ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for a kernel's record");
  req_head *q = new_req(px, OP_PUT_KERNEL, NULL, NULL);
  if (!q) {
    free(text);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for a request");
  }
  rep_head rh;
  ct_status st = call0(px->l, q, text, len, data, size, &rh, NULL, err);
  free(q);
  free(text);
  return st;
}

static void p_close(void *ctx) {
  free(ctx);
}

static ct_status proxy_store(void *ctx, const device *dev, tune_store *out, ct_err *err) {
  proxy *px = calloc(1, sizeof *px);
  if (!px) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  px->l = ctx;
  px->dev = *dev;
  *out = (tune_store){.ctx = px,
                      .trials = p_trials,
                      .trials_other = p_trials_other,
                      .nearest = p_nearest,
                      .retired = p_retired,
                      .record = p_record,
                      .best = p_best,
                      .has_kernel = p_has_kernel,
                      .put_kernel = p_put_kernel,
                      .close = p_close};
  return CT_OK;
}

/* The task source of a worker: rank 0's queue. */
typedef struct remote_src {
  link_ *l;
  const pool_task *tasks;
  int n_tasks;
  const volatile int *stop;
} remote_src;

static int r_next(void *ctx, int kind, const device *dev, pool_task *out, long *id) {
  (void)kind;
  remote_src *rs = ctx;
  proxy px = {.l = rs->l, .dev = *dev};
  rep_head rh;
  int got = 0;
  for (;;) {
    req_head *q = new_req(&px, OP_NEXT, NULL, NULL);
    int ok = q && call0(rs->l, q, NULL, 0, NULL, 0, &rh, NULL, NULL) == CT_OK;
    free(q);
    got = ok && rh.id >= 0 && rh.id < rs->n_tasks;
    if (!ok || rh.id != -2 || (rs->stop && *rs->stop)) break;
    wait_a_little();
  }
  if (!got) return 0;
  *out = rs->tasks[rh.id];
  *id = rh.id;
  return 1;
}

static void r_done(void *ctx, int kind, const device *dev, long id, ct_status st,
                   const tune_result *res, const ct_err *err) {
  (void)kind;
  remote_src *rs = ctx;
  proxy px = {.l = rs->l, .dev = *dev};
  req_head *q = new_req(&px, OP_DONE, NULL, NULL);
  if (!q) return;
  q->id = id;
  q->status = st;
  if (res) q->res = *res;
  if (st && err) snprintf(q->msg, sizeof q->msg, "%s", err->msg);
  rep_head rh;
  (void)call0(rs->l, q, NULL, 0, NULL, 0, &rh, NULL, NULL);
  free(q);
}

/* The heartbeat of a worker, until *stop. */
typedef struct beat {
  link_ *l;
  volatile int stop;
  volatile int *set_stop; /* the tuners' stop flag: set when rank 0 is lost */
} beat;

static void *heartbeat_main(void *arg) {
  beat *b = arg;
  proxy px = {.l = b->l};
  double next = 0;
  while (!b->stop) {
    if (mono_s() >= next) {
      req_head *q = new_req(&px, OP_HEARTBEAT, NULL, NULL);
      rep_head rh;
      ct_status st = q ? call0(b->l, q, NULL, 0, NULL, 0, &rh, NULL, NULL) : CT_ERR_NO_MEMORY;
      free(q);
      if (st == CT_ERR_IO || (st && b->l->rank0_lost)) {
        if (b->set_stop) *b->set_stop = 1;
        break;
      }
      next = mono_s() + MPI_HEARTBEAT_S;
    }
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* ---- rank 0: the server -------------------------------------------------------------- */

typedef struct server {
  link_ *l;
  const char *db_path;
  pthread_mutex_t db_lock; /* every store call, local or remote */
  pthread_mutex_t q_lock;  /* the queue, kinds and ranks */
  int n_kinds;
  device kinds[POOL_MAX_GPUS];
  tune_store stores[POOL_MAX_GPUS];
  tune_locked_store locked[POOL_MAX_GPUS];
  /* the tasks: once per kind */
  const pool_task *tasks;
  int n_tasks;
  int8_t *state; /* per task and kind: 0 to do, 1 running, 2 done */
  int *owner;    /* per task and kind: the rank running it */
  tune_result *results;
  /* the ranks */
  double *heard;
  int8_t *bye, *lost;
  int lost_n;
  char lost_msg[CT_ERRMSG_MAX];
  long trials;
  int local_done;
  const volatile int *stop;
  int gpus;
} server;

/* The kind of dev, registered (with its store) when new; -1 when it cannot be. */
static int kind_of(server *sv, const device *dev, ct_err *err) {
  for (int k = 0; k < sv->n_kinds; k++)
    if (tune_same_kind(&sv->kinds[k], dev)) return k;
  if (sv->n_kinds == POOL_MAX_GPUS) {
    ERR_SET(err, CT_ERR_INVALID_ARG, "more than %d kinds of GPU", POOL_MAX_GPUS);
    return -1;
  }
  int k = sv->n_kinds;
  if (tune_store_db_open(sv->db_path, dev, &sv->stores[k], err)) return -1;
  sv->kinds[k] = *dev;
  sv->locked[k] = (tune_locked_store){.inner = sv->stores[k], .lock = &sv->db_lock};
  sv->n_kinds++;
  return k;
}

/* Rank 0's own pool asks for its kinds' stores here: the server's. */
static ct_status server_store(void *ctx, const device *dev, tune_store *out, ct_err *err) {
  server *sv = ctx;
  pthread_mutex_lock(&sv->q_lock);
  int k = kind_of(sv, dev, err);
  pthread_mutex_unlock(&sv->q_lock);
  if (k < 0) return err && err->status ? err->status : CT_ERR_INTERNAL;
  *out = tune_store_locked(&sv->locked[k]);
  return CT_OK;
}

/* The next task of kind k for rank (under q_lock): the first to do; -2
 * (wait and ask again) when none is left to do but some are running, which
 * a lost rank would hand back; -1 when all are done, or on stop. */
static long take(server *sv, int k, int rank) {
  if (sv->stop && *sv->stop) return -1;
  int running = 0;
  for (int i = 0; i < sv->n_tasks; i++) {
    size_t at = (size_t)i * POOL_MAX_GPUS + k;
    if (sv->state[at] == 0) {
      sv->state[at] = 1;
      sv->owner[at] = rank;
      return i;
    }
    running |= sv->state[at] == 1;
  }
  return running ? -2 : -1;
}

static void finish(server *sv, int k, long id, ct_status st, const tune_result *res) {
  size_t at = (size_t)id * POOL_MAX_GPUS + k;
  if (id < 0 || id >= sv->n_tasks || sv->state[at] != 1) return;
  if (st) { /* the GPU failed: the task goes back */
    sv->state[at] = 0;
    return;
  }
  sv->state[at] = 2;
  sv->results[at] = *res;
}

/* A rank is lost: its running tasks go back to the queue. */
static void lose(server *sv, int rank, const char *why) {
  if (sv->lost[rank]) return;
  sv->lost[rank] = 1;
  if (!sv->lost_n++) snprintf(sv->lost_msg, sizeof sv->lost_msg, "rank %d: %s", rank, why);
  for (size_t at = 0; at < (size_t)sv->n_tasks * POOL_MAX_GPUS; at++)
    if (sv->state[at] == 1 && sv->owner[at] == rank) sv->state[at] = 0;
}

/* Rank 0's own GPUs take tasks from the same queue. */
static int l_next(void *ctx, int kind, const device *dev, pool_task *out, long *id) {
  (void)kind;
  server *sv = ctx;
  long i;
  for (;;) {
    pthread_mutex_lock(&sv->q_lock);
    int k = kind_of(sv, dev, NULL);
    i = k < 0 ? -1 : take(sv, k, 0);
    pthread_mutex_unlock(&sv->q_lock);
    if (i != -2) break;
    wait_a_little();
  }
  if (i < 0) return 0;
  *out = sv->tasks[i];
  *id = i;
  return 1;
}

static void l_done(void *ctx, int kind, const device *dev, long id, ct_status st,
                   const tune_result *res, const ct_err *err) {
  (void)kind;
  (void)err;
  server *sv = ctx;
  pthread_mutex_lock(&sv->q_lock);
  int k = kind_of(sv, dev, NULL);
  if (k >= 0) finish(sv, k, id, st, res);
  if (!st) sv->trials += res->n_trials;
  pthread_mutex_unlock(&sv->q_lock);
}

/* The answer to one request from rank src: *rh and its text (owned). */
static void serve_one(server *sv, int src, const req_head *q, const char *text, const char *bin,
                      rep_head *rh, char **rtext) {
  ct_err err = {0};
  ct_status st = CT_OK;
  *rtext = NULL;
  rh->text_len = 0;
  int k = -1;
  if (q->op != OP_HEARTBEAT && q->op != OP_BYE) {
    pthread_mutex_lock(&sv->q_lock);
    k = kind_of(sv, &q->dev, &err);
    pthread_mutex_unlock(&sv->q_lock);
    if (k < 0) {
      rh->status = err.status ? err.status : CT_ERR_INTERNAL;
      snprintf(rh->msg, sizeof rh->msg, "%s", err.msg);
      return;
    }
  }
  const template_desc *tpl = q->tpl[0] ? template_find(q->tpl) : NULL;
  tune_store s = k >= 0 ? tune_store_locked(&sv->locked[k]) : (tune_store){0};
  trial *v = NULL;
  int n = 0;
  switch ((op_kind)q->op) {
  case OP_HEARTBEAT:
    break;
  case OP_BYE:
    pthread_mutex_lock(&sv->q_lock);
    sv->bye[src] = 1;
    pthread_mutex_unlock(&sv->q_lock);
    break;
  case OP_NEXT:
    pthread_mutex_lock(&sv->q_lock);
    rh->id = take(sv, k, src);
    pthread_mutex_unlock(&sv->q_lock);
    break;
  case OP_DONE:
    pthread_mutex_lock(&sv->q_lock);
    finish(sv, k, q->id, (ct_status)q->status, &q->res);
    if (!q->status) sv->trials += q->res.n_trials;
    pthread_mutex_unlock(&sv->q_lock);
    break;
  case OP_TRIALS:
  case OP_TRIALS_OTHER:
  case OP_BEST:
    if (!tpl) {
      st = ERR_SET(&err, CT_ERR_NOT_FOUND, "no template named '%s' here", q->tpl);
      break;
    }
    if (q->op == OP_TRIALS)
      st = s.trials(s.ctx, q->key, tpl, &v, &n, &err);
    else if (q->op == OP_TRIALS_OTHER)
      st = s.trials_other(s.ctx, q->key, tpl, q->limit, &v, &n, &err);
    else {
      int found = 0;
      v = calloc(1, sizeof *v);
      if (!v) {
        st = ERR_SET(&err, CT_ERR_NO_MEMORY, "out of memory");
        break;
      }
      st = s.best(s.ctx, q->key, tpl, v, &found, &err);
      n = !st && found;
    }
    if (!st) {
      size_t len = 0;
      *rtext = mpi_trials_text(v, n, &len);
      if (!*rtext)
        st = ERR_SET(&err, CT_ERR_NO_MEMORY, "no memory for %d records", n);
      else
        rh->text_len = len;
    }
    break;
  case OP_NEAREST:
  case OP_RETIRED: {
    if (!tpl) {
      st = ERR_SET(&err, CT_ERR_NOT_FOUND, "no template named '%s' here", q->tpl);
      break;
    }
    int found = 0;
    st = q->op == OP_NEAREST ? s.nearest(s.ctx, &q->a, tpl, &q->w, &rh->cfg, &found, &err)
                             : s.retired(s.ctx, &q->a, tpl, &q->w, &rh->cfg, &found, &err);
    rh->found = found;
    break;
  }
  case OP_RECORD:
    if (!(st = mpi_trials_parse(text, q->text_len, &v, &n, &err))) {
      st = s.record(s.ctx, v, n, &err);
    }
    break;
  case OP_HAS_KERNEL:
  case OP_PUT_KERNEL:
    if ((st = mpi_trials_parse(text, q->text_len, &v, &n, &err))) break;
    if (n != 1) {
      st = ERR_SET(&err, CT_ERR_PARSE, "a kernel request with %d records", n);
      break;
    }
    if (q->op == OP_HAS_KERNEL)
      rh->found = s.has_kernel(s.ctx, &v[0]);
    else
      st = s.put_kernel(s.ctx, &v[0], bin, q->bin_len, &err);
    break;
  default:
    st = ERR_SET(&err, CT_ERR_INVALID_ARG, "unknown request %d", q->op);
  }
  if (q->op == OP_BEST) {
    trials_free(v, 1);
  } else {
    trials_free(v, n);
  }
  rh->status = st;
  if (st) snprintf(rh->msg, sizeof rh->msg, "%s", err.msg);
}

/* Whether every rank but 0 said bye or is lost (under q_lock). */
static int all_gone(const server *sv) {
  for (int r = 1; r < sv->l->size; r++)
    if (!sv->bye[r] && !sv->lost[r]) return 0;
  return 1;
}

static void *server_main(void *arg) {
  server *sv = arg;
  link_ *l = sv->l;
  for (;;) {
    pthread_mutex_lock(&sv->q_lock);
    int done = sv->local_done && all_gone(sv);
    /* ranks silent past the timeout are lost */
    double now = mono_s();
    for (int r = 1; r < l->size; r++)
      if (!sv->bye[r] && !sv->lost[r] && now - sv->heard[r] > l->timeout_s) {
        char why[96];
        snprintf(why, sizeof why, "not heard from for %.0f s: its tasks in flight went to others",
                 l->timeout_s);
        lose(sv, r, why);
      }
    pthread_mutex_unlock(&sv->q_lock);
    if (done) break;
    pthread_mutex_lock(&l->lock);
    int flag = 0;
    MPI_Status ms;
    MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &flag, &ms);
    char *m = NULL;
    int len = 0, src = -1;
    ct_err err = {0};
    if (flag && recv_msg(ms.MPI_SOURCE, TAG_REQ, 0, &m, &len, &src, &err)) flag = 0;
    pthread_mutex_unlock(&l->lock);
    if (!flag) {
      nap();
      continue;
    }
    rep_head rh;
    memset(&rh, 0, sizeof rh);
    rh.id = -1;
    char *rtext = NULL;
    req_head q;
    if ((size_t)len < sizeof q) {
      rh.status = CT_ERR_IO;
      snprintf(rh.msg, sizeof rh.msg, "a request of %d bytes", len);
    } else {
      memcpy(&q, m, sizeof q);
      q.msg[sizeof q.msg - 1] = '\0';
      q.tpl[sizeof q.tpl - 1] = '\0';
      q.key[sizeof q.key - 1] = '\0';
      pthread_mutex_lock(&sv->q_lock);
      sv->heard[src] = mono_s();
      int was_lost = sv->lost[src];
      pthread_mutex_unlock(&sv->q_lock);
      if (q.text_len + q.bin_len != (uint64_t)len - sizeof q) {
        rh.status = CT_ERR_IO;
        snprintf(rh.msg, sizeof rh.msg, "a request with a wrong length");
      } else if (was_lost) {
        /* too late: its tasks went to others; it stops */
        rh.status = CT_ERR_IO;
        snprintf(rh.msg, sizeof rh.msg, "rank %d was declared lost", src);
      } else {
        serve_one(sv, src, &q, m + sizeof q, m + sizeof q + q.text_len, &rh, &rtext);
      }
    }
    free(m);
    size_t out_len;
    char *out = pack(&rh, sizeof rh, rtext, rh.text_len, NULL, 0, &out_len);
    free(rtext);
    if (out) {
      pthread_mutex_lock(&l->lock);
      MPI_Send(out, (int)out_len, MPI_BYTE, src, TAG_REP, MPI_COMM_WORLD);
      pthread_mutex_unlock(&l->lock);
      free(out);
    }
  }
  return NULL;
}

static void server_free(server *sv) {
  for (int k = 0; k < sv->n_kinds; k++)
    if (sv->stores[k].close) sv->stores[k].close(sv->stores[k].ctx);
  free(sv->state);
  free(sv->owner);
  free(sv->results);
  free(sv->heard);
  free(sv->bye);
  free(sv->lost);
  pthread_mutex_destroy(&sv->db_lock);
  pthread_mutex_destroy(&sv->q_lock);
}

/* Rank 0's server over the database at db_path and n_tasks tasks (none for
 * a session); every rank counted as heard from now. */
static ct_status server_init(server *sv, link_ *l, const char *db_path, const pool_task *tasks,
                             int n_tasks, const volatile int *stop, ct_err *err) {
  memset(sv, 0, sizeof *sv);
  *sv = (server){.l = l, .db_path = db_path, .tasks = tasks, .n_tasks = n_tasks, .stop = stop};
  pthread_mutex_init(&sv->db_lock, NULL);
  pthread_mutex_init(&sv->q_lock, NULL);
  size_t cells = (size_t)(n_tasks ? n_tasks : 1) * POOL_MAX_GPUS;
  sv->state = calloc(cells, 1);
  sv->owner = calloc(cells, sizeof *sv->owner);
  sv->results = calloc(cells, sizeof *sv->results);
  sv->heard = calloc((size_t)l->size, sizeof *sv->heard);
  sv->bye = calloc((size_t)l->size, 1);
  sv->lost = calloc((size_t)l->size, 1);
  if (!sv->state || !sv->owner || !sv->results || !sv->heard || !sv->bye || !sv->lost)
    return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  for (int r = 0; r < l->size; r++) sv->heard[r] = mono_s();
  return CT_OK;
}

/* Start MPI and this rank's link. A failure of MPI_Init_thread leaves MPI
 * down (every rank fails alike); a thread level too low is returned with
 * MPI up, for the ranks to agree on. */
static ct_status link_start(link_ *l, double timeout_s, ct_err *err) {
  int provided = 0;
  memset(l, 0, sizeof *l);
  l->rank = -1;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return ERR_SET(err, CT_ERR_IO, "MPI_Init_thread failed");
  l->timeout_s = timeout_s > 0 ? timeout_s : 60;
  pthread_mutex_init(&l->lock, NULL);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &l->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &l->size);
  if (provided < MPI_THREAD_SERIALIZED)
    return ERR_SET(err, CT_ERR_IO,
                   "this MPI gives thread level %d, convtune needs MPI_THREAD_SERIALIZED",
                   provided);
  return CT_OK;
}

static void link_end(link_ *l) {
  pthread_mutex_destroy(&l->lock);
  if (!l->rank0_lost) MPI_Finalize(); /* with rank 0 gone it could wait for ever */
}

/* A worker's last request: it is done. st, or the request's failure when st
 * is CT_OK. */
static ct_status say_bye(link_ *l, ct_status st, ct_err *err) {
  proxy px = {.l = l};
  req_head *q = new_req(&px, OP_BYE, NULL, NULL);
  rep_head rh;
  ct_err bye_err = {0};
  if (q && call0(l, q, NULL, 0, NULL, 0, &rh, NULL, &bye_err) && !st)
    st = err_set(err, bye_err.status, __FILE__, __LINE__, "%s", bye_err.msg);
  free(q);
  return st;
}

/* ---- the run ------------------------------------------------------------------ */

/* This rank's place among the ranks of its host. */
static void local_place(int *local, int *local_size) {
  MPI_Comm node;
  *local = 0;
  *local_size = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_rank(node, local);
    MPI_Comm_size(node, local_size);
    MPI_Comm_free(&node);
  }
}

/* The GPUs of this rank: the given ones, or its local rank's. */
static int local_devices(const mpi_opts *o, int local, int *devs, ct_err *err) {
  if (o->n_devices > 0) {
    memcpy(devs, o->devices, sizeof *devs * (size_t)o->n_devices);
    return o->n_devices;
  }
  int count = runner_device_count(err);
  if (count <= 0) {
    if (count == 0) ERR_SET(err, CT_ERR_NO_DEVICE, "no CUDA device on this host");
    return -1;
  }
  devs[0] = local % count;
  return 1;
}

/* Every rank's status before the run to rank 0, which names the first
 * failure once; returns the run's verdict on every rank. */
static ct_status agree(link_ *l, ct_status mine, const ct_err *my_err, ct_err *err) {
  typedef struct verdict {
    int32_t status;
    char msg[CT_ERRMSG_MAX];
  } verdict;
  verdict v = {.status = mine};
  if (mine && my_err) snprintf(v.msg, sizeof v.msg, "%s", my_err->msg);
  verdict *all = l->rank == 0 ? calloc((size_t)l->size, sizeof *all) : NULL;
  if (l->rank == 0 && !all) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  MPI_Gather(&v, (int)sizeof v, MPI_BYTE, all, (int)sizeof v, MPI_BYTE, 0, MPI_COMM_WORLD);
  verdict out = {0};
  if (l->rank == 0) {
    int failed = 0, first = -1;
    for (int r = 0; r < l->size; r++)
      if (all[r].status) {
        failed++;
        if (first < 0) first = r;
      }
    if (failed) {
      out.status = all[first].status;
      all[first].msg[sizeof all[first].msg - 1] = '\0';
      if (failed > 1)
        snprintf(out.msg, sizeof out.msg, "rank %d: %.400s (and %d rank%s more)", first,
                 all[first].msg, failed - 1, failed == 2 ? "" : "s");
      else
        snprintf(out.msg, sizeof out.msg, "rank %d: %.400s", first, all[first].msg);
    }
    free(all);
  }
  MPI_Bcast(&out, (int)sizeof out, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (out.status) return err_set(err, (ct_status)out.status, __FILE__, __LINE__, "%s", out.msg);
  return CT_OK;
}

ct_status tune_mpi_run(const mpi_opts *o, const pool_task *tasks, int n_tasks, pool_progress_fn fn,
                       void *user, mpi_result *out, ct_err *err) {
  memset(out, 0, sizeof *out);
  link_ l;
  ct_err my_err = {0};
  ct_status st = CT_OK, mine = link_start(&l, o->rank_timeout_s, &my_err);
  if (l.rank < 0) {
    *err = my_err;
    return mine;
  }
  out->rank = l.rank;
  out->size = l.size;
  out->quiet = l.rank != 0;
  server sv = {0}; /* sv.l is set by server_init: rank 0's, when it ran */
  if (l.rank == 0 && !mine)
    mine = server_init(&sv, &l, o->db_path, tasks, n_tasks, o->tune.stop, &my_err);
  int devs[POOL_MAX_GPUS], n_devs = 0, local = 0, local_size = 1;
  tune_pool *p = NULL;
  local_place(&local, &local_size);
  /* Twice the host's cores shared out by its ranks, at most the cores: a
   * rank's compiles come in bursts (a batch, then none while it measures),
   * so a rank that had only its share left cores idle that another rank's
   * batch waited for. 4 ranks on the 4-H200 host's 64 cores tuned 137.2
   * trials/s with 16 compilers each, 151.0 with 24 and 156.5 with 32; the
   * pool of --devices, one builder for all GPUs, 161.5 (4a9d604). */
  tune_opts to = o->tune;
  if (to.n_builders <= 0) {
    int cores = proc_usable_cores(), share = 2 * cores / local_size;
    to.n_builders = share > cores ? cores : share < 1 ? 1 : share;
  }
  if (!mine && (n_devs = local_devices(o, local, devs, &my_err)) < 0) mine = my_err.status;
  if (!mine)
    mine = l.rank == 0 ? tune_pool_open_with(server_store, &sv, &to, devs, n_devs, &p, &my_err)
                       : tune_pool_open_with(proxy_store, &l, &to, devs, n_devs, &p, &my_err);
  int gpus = p ? tune_pool_gpus(p) : 0, all_gpus = 0;
  MPI_Reduce(&gpus, &all_gpus, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if ((st = agree(&l, mine, &my_err, err))) goto done;
  double t0 = mono_s();
  if (l.rank == 0) {
    for (int r = 0; r < l.size; r++) sv.heard[r] = t0;
    pthread_t th;
    if (pthread_create(&th, NULL, server_main, &sv)) {
      st = ERR_SET(err, CT_ERR_INTERNAL, "could not start rank 0's server thread");
      /* the others wait for answers that never come, and end at their timeout */
      goto done;
    }
    pool_source src = {.ctx = &sv, .next = l_next, .done = l_done};
    st = tune_pool_run_source(p, &src, fn, user, err);
    pthread_mutex_lock(&sv.q_lock);
    sv.local_done = 1;
    pthread_mutex_unlock(&sv.q_lock);
    pthread_join(th, NULL);
    out->wall_s = mono_s() - t0;
    out->n_kinds = sv.n_kinds;
    memcpy(out->kinds, sv.kinds, sizeof sv.kinds[0] * (size_t)sv.n_kinds);
    out->results = calloc((size_t)(n_tasks ? n_tasks : 1) * (sv.n_kinds ? sv.n_kinds : 1),
                          sizeof *out->results);
    if (!out->results && !st) st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    int undone = 0;
    for (int i = 0; out->results && i < n_tasks; i++)
      for (int k = 0; k < sv.n_kinds; k++) {
        size_t at = (size_t)i * POOL_MAX_GPUS + k;
        out->results[(size_t)i * sv.n_kinds + k] = sv.results[at];
        undone += sv.state[at] != 2;
      }
    out->gpus = all_gpus;
    out->trials = sv.trials;
    out->lost = sv.lost_n;
    snprintf(out->lost_msg, sizeof out->lost_msg, "%s", sv.lost_msg);
    if (!st && undone && !(o->tune.stop && *o->tune.stop))
      st = ERR_SET(err, CT_ERR_CUDA, "%d tasks were not tuned: no GPU of their kind was left%s%s",
                   undone, sv.lost_n ? "; " : "", sv.lost_msg);
  } else {
    remote_src rs = {.l = &l, .tasks = tasks, .n_tasks = n_tasks, .stop = o->tune.stop};
    beat b = {.l = &l, .set_stop = (volatile int *)o->tune.stop};
    pthread_t hb;
    int hb_ok = pthread_create(&hb, NULL, heartbeat_main, &b) == 0;
    pool_source src = {.ctx = &rs, .next = r_next, .done = r_done};
    st = tune_pool_run_source(p, &src, fn, user, err);
    b.stop = 1;
    if (hb_ok) pthread_join(hb, NULL);
    st = say_bye(&l, st, err);
    if (!st && l.rank0_lost) st = ERR_SET(err, CT_ERR_IO, "rank 0 was lost");
  }
done:
  tune_pool_close(p);
  if (l.rank == 0 && sv.l) server_free(&sv);
  link_end(&l);
  return st;
}

ct_status tune_mpi_session(const char *db_path, double timeout_s, const device *dev,
                           mpi_session_fn fn, void *ctx, int *rank, ct_err *err) {
  link_ l;
  ct_status st = link_start(&l, timeout_s, err);
  *rank = l.rank;
  if (l.rank < 0) return st;
  if (st) { /* a thread level too low: every rank alike */
    link_end(&l);
    return st;
  }
  if (l.rank == 0) {
    server sv;
    if (!(st = server_init(&sv, &l, db_path, NULL, 0, NULL, err))) {
      sv.local_done = 1;
      server_main(&sv);
      if (sv.lost_n) st = ERR_SET(err, CT_ERR_IO, "%s", sv.lost_msg);
    }
    server_free(&sv);
  } else {
    tune_store s;
    if (!(st = proxy_store(&l, dev, &s, err))) {
      st = fn(&s, ctx, err);
      s.close(s.ctx);
    }
    st = say_bye(&l, st, err);
  }
  link_end(&l);
  return st;
}

#else /* no MPI */

ct_status tune_mpi_session(const char *db_path, double timeout_s, const device *dev,
                           mpi_session_fn fn, void *ctx, int *rank, ct_err *err) {
  (void)db_path, (void)timeout_s, (void)dev, (void)fn, (void)ctx;
  *rank = -1;
  return ERR_SET(err, CT_ERR_UNSUPPORTED, "this convtune was built without MPI");
}

ct_status tune_mpi_run(const mpi_opts *o, const pool_task *tasks, int n_tasks, pool_progress_fn fn,
                       void *user, mpi_result *out, ct_err *err) {
  (void)o, (void)tasks, (void)n_tasks, (void)fn, (void)user;
  memset(out, 0, sizeof *out);
  out->quiet = tune_mpi_env_rank() != 0;
  return ERR_SET(err, CT_ERR_UNSUPPORTED,
                 "--mpi: this convtune was built without MPI (install libopenmpi-dev and rebuild)");
}

#endif

void mpi_result_free(mpi_result *r) {
  if (!r) return;
  free(r->results);
  r->results = NULL;
}
