/*
 * builder.c: the NVRTC compile pool (see builder.h).
 *
 * n worker processes, forked at start before any CUDA use, each joined to
 * the parent by a socketpair: a bidirectional pipe that the parent writes
 * with MSG_NOSIGNAL, so that a dead worker is an EPIPE and not a SIGPIPE that
 * kills the tuner. Protocol, one job at a time per worker:
 *   job    = the instance's bytes (POD except its tpl pointer, which points
 *            into this same binary image and so stays valid across fork);
 *   result = result_head {status, compile_ms, sizes, one-line message}, then
 *            the cubin bytes, then the log bytes.
 * The parent keeps a FIFO of queued jobs, hands one to each idle worker, and
 * builder_collect polls the busy ones. A worker that dies (NVRTC crashed) or
 * outlives BUILD_TIMEOUT_S is reaped and replaced, and its job reported as a
 * compile error saying so. Results, failures included, go into a bounded
 * in-memory cache keyed by (template, version, architecture, options), so a
 * config is compiled once per run; a hit completes at the next collect. The
 * parent never touches CUDA. Cost: a fork per worker at start (and per crash);
 * a job's bytes (about 5 KB) and its cubin (tens of KB) cross a socket.
 *
 * Threads: one builder serves the tuners of several GPUs (tune_pool), each
 * a client with its own tags and its own queue of finished jobs. A mutex
 * guards the state; one collecting thread at a time polls the workers with
 * the mutex released (a poll lasts at most POLL_SLICE_MS, so jobs that
 * other threads queue meanwhile are handed out soon), routes each result
 * to its client and wakes the others, who wait on a condition variable.
 * Only the poller reads from or reaps a busy worker; the others touch idle
 * ones alone, so the poll set stays valid while it is unlocked.
 */
#include "tuner/builder.h"

#include "tuner/proc.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
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

/* A compile that takes longer is killed and reported: the slowest dp4a
 * configs compile in a few seconds, so this only catches a compiler that
 * hangs, without cutting a legitimately slow one. */
#define BUILD_TIMEOUT_S 120.0
/* Bounds of the cubin cache. A dp4a cubin is 10-60 KB, so 4096 entries (a
 * long tuning run) stay far below the byte bound; the byte bound protects
 * against templates with huge cubins. The oldest entry goes first. */
#define CACHE_MAX_ENTRIES 4096
#define CACHE_MAX_BYTES   ((size_t)256 << 20)
/* No cubin or log of a sane compile comes near this: a larger size in a
 * result head means a broken stream. */
#define RESULT_MAX_BYTES ((uint64_t)1 << 30)
/* More workers than this would only thrash; cores beyond it go unused. */
#define MAX_WORKERS 256
/* The longest poll of one collecting thread, so that jobs queued by others
 * while it waits reach idle workers soon. */
#define POLL_SLICE_MS 20

typedef struct result_head {
  int32_t status; /* ct_status of nvrtc_compile in the worker */
  int32_t reserved;
  double compile_ms;
  uint64_t size;     /* cubin bytes that follow */
  uint64_t log_size; /* log bytes that follow the cubin (no NUL) */
  char msg[CT_ERRMSG_MAX];
} result_head;

/* A job waiting for a worker. */
typedef struct job {
  struct job *next;
  int client;
  long tag;
  uint64_t hash;
  char *key; /* owned: the cache key text */
  instance inst;
} job;

/* A finished job waiting for builder_collect. */
typedef struct done {
  struct done *next;
  int client;
  long tag;
  ct_status status;
  cubin c; /* owned until handed to the caller */
  char msg[CT_ERRMSG_MAX];
} done;

typedef struct cache_entry {
  uint64_t hash;
  char *key; /* owned */
  ct_status status;
  cubin c; /* owned */
  char msg[CT_ERRMSG_MAX];
  size_t bytes; /* what the entry holds, for the byte bound */
} cache_entry;

typedef struct worker {
  pid_t pid; /* 0: no process (could not be restarted) */
  int fd;    /* the parent's end, -1 without a process */
  job *cur;  /* the job being compiled, owned; NULL when idle */
  double started_s;
} worker;

struct builder {
  arch arch;
  int n_workers;
  worker *workers;
  job *queue_head, *queue_tail;
  /* finished jobs per client, and each client's jobs not yet collected */
  done *ready_head[BUILDER_MAX_CLIENTS], *ready_tail[BUILDER_MAX_CLIENTS];
  int pending[BUILDER_MAX_CLIENTS];
  int n_queued, n_busy, n_ready;
  pthread_mutex_t lock;
  pthread_cond_t changed; /* a result was routed, or the poller stepped down */
  int polling;            /* a thread polls the workers, unlocked */
  cache_entry *cache;     /* ring of CACHE_MAX_ENTRIES, oldest at cache_first */
  int cache_first, cache_count;
  size_t cache_bytes;
  long hits;
};

/* ---- the worker process ------------------------------------------------ */

/* Compile jobs until the parent goes away. Never returns.
 *
 * Without the driver's compute cache (NVRTC_NO_DRIVER_CACHE): otherwise
 * NVRTC loads the CUDA driver and starts it (cuInit) in a worker's first
 * compile, only to keep each result there for a later process compiling the
 * same source. On the 4-H200 host that start took 1.3 s alone and 8.5 s
 * each for 64 workers starting at once, the stall that began every tuning
 * run, and held 16 GPU device files open in every compiler. The cache
 * seldom pays here: a run compiles a config once (the builder's own cache
 * sees to that), and only a later run of the same configs would hit it. */
static void worker_main(int fd, void *arg) {
  const arch *a = arg;
  instance inst;
  for (;;) {
    if (proc_recv_all(fd, &inst, sizeof inst, 0) != PROC_OK) _exit(0);
    cubin c;
    ct_err err = {0};
    ct_status st = nvrtc_compile_flags(&inst, a, NVRTC_NO_DRIVER_CACHE, &c, &err);
    result_head h;
    memset(&h, 0, sizeof h);
    h.status = st;
    h.compile_ms = c.compile_ms;
    h.size = c.data ? c.size : 0;
    h.log_size = c.log ? strlen(c.log) : 0;
    if (st != CT_OK) snprintf(h.msg, sizeof h.msg, "%s", err.msg);
    if (proc_send_all(fd, &h, sizeof h) != 0 || proc_send_all(fd, c.data, h.size) != 0 ||
        proc_send_all(fd, c.log, h.log_size) != 0)
      _exit(1);
    cubin_free(&c);
  }
}

/* ---- the parent: workers ----------------------------------------------- */

static ct_status spawn(builder *b, worker *w, ct_err *err) {
  return proc_spawn("builder", worker_main, &b->arch, &w->pid, &w->fd, err);
}

/* Kill and reap w's process; its wait status, or -1 when unknown. */
static int reap(worker *w) {
  int ws = -1;
  if (w->fd >= 0) close(w->fd);
  if (w->pid > 0) {
    kill(w->pid, SIGKILL);
    while (waitpid(w->pid, &ws, 0) < 0 && errno == EINTR) {
    }
  }
  w->pid = 0;
  w->fd = -1;
  return ws;
}

/* ---- the parent: cache ------------------------------------------------- */

static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

/* The cache key of inst on a: everything that decides the cubin and log.
 * Owned: free(). NULL when out of memory. */
static char *make_key(const instance *inst, const arch *a) {
  const char *version = template_version(inst->tpl);
  const char *name = inst->tpl->name ? inst->tpl->name : "";
  size_t n = strlen(name) + strlen(version) + strlen(a->name) + 4;
  for (int i = 0; i < inst->n_options; i++) n += strlen(inst->options[i]) + 1;
  char *key = malloc(n);
  if (!key) return NULL;
  size_t len = (size_t)snprintf(key, n, "%s\n%s\n%s\n", name, version, a->name);
  for (int i = 0; i < inst->n_options; i++)
    len += (size_t)snprintf(key + len, n - len, "%s\n", inst->options[i]);
  return key;
}

static cache_entry *cache_at(builder *b, int i) {
  return &b->cache[(b->cache_first + i) % CACHE_MAX_ENTRIES];
}

static const cache_entry *cache_find(builder *b, uint64_t hash, const char *key) {
  for (int i = b->cache_count - 1; i >= 0; i--) {
    const cache_entry *e = cache_at(b, i);
    if (e->hash == hash && strcmp(e->key, key) == 0) return e;
  }
  return NULL;
}

static void cache_evict_oldest(builder *b) {
  cache_entry *e = cache_at(b, 0);
  b->cache_bytes -= e->bytes;
  free(e->key);
  cubin_free(&e->c);
  memset(e, 0, sizeof *e);
  b->cache_first = (b->cache_first + 1) % CACHE_MAX_ENTRIES;
  b->cache_count--;
}

/* Copy c into *out (data, log); CT_ERR_NO_MEMORY leaves out zeroed. */
static ct_status cubin_copy(const cubin *c, cubin *out, ct_err *err) {
  memset(out, 0, sizeof *out);
  size_t log_n = c->log ? strlen(c->log) : 0;
  out->log = malloc(log_n + 1);
  out->data = c->size ? malloc(c->size) : NULL;
  if (!out->log || (c->size && !out->data)) {
    cubin_free(out);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "builder: no memory for a %zu-byte cubin", c->size);
  }
  memcpy(out->log, c->log ? c->log : "", log_n + 1);
  if (c->size) memcpy(out->data, c->data, c->size);
  out->size = c->size;
  out->compile_ms = c->compile_ms;
  return CT_OK;
}

/* Keep a copy of a finished compile (best effort: out of memory skips it). */
static void cache_store(builder *b, const job *j, ct_status status, const cubin *c,
                        const char *msg) {
  size_t bytes = strlen(j->key) + c->size + (c->log ? strlen(c->log) : 0) + sizeof(cache_entry);
  if (bytes > CACHE_MAX_BYTES) return;
  while (b->cache_count > 0 &&
         (b->cache_count == CACHE_MAX_ENTRIES || b->cache_bytes + bytes > CACHE_MAX_BYTES))
    cache_evict_oldest(b);
  cache_entry e;
  memset(&e, 0, sizeof e);
  e.key = strdup(j->key);
  if (!e.key || cubin_copy(c, &e.c, NULL) != CT_OK) {
    free(e.key);
    return;
  }
  e.hash = j->hash;
  e.status = status;
  e.bytes = bytes;
  snprintf(e.msg, sizeof e.msg, "%s", msg);
  *cache_at(b, b->cache_count) = e;
  b->cache_count++;
  b->cache_bytes += bytes;
}

/* ---- the parent: queues ------------------------------------------------ */

static void ready_push(builder *b, done *d) {
  int c = d->client;
  d->next = NULL;
  if (b->ready_tail[c])
    b->ready_tail[c]->next = d;
  else
    b->ready_head[c] = d;
  b->ready_tail[c] = d;
  b->n_ready++;
}

/* Free j, whose result is lost (out of memory): its client waits no more. */
static void lose(builder *b, job *j) {
  b->pending[j->client]--;
  free(j->key);
  free(j);
}

/* Report j as finished with status, cubin c (taken over) and msg; j is freed. */
static ct_status finish(builder *b, job *j, ct_status status, cubin *c, const char *msg,
                        ct_err *err) {
  done *d = calloc(1, sizeof *d);
  if (!d) {
    cubin_free(c);
    long tag = j->tag;
    lose(b, j);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "builder: no memory for the result of job %ld", tag);
  }
  d->client = j->client;
  d->tag = j->tag;
  d->status = status;
  d->c = *c;
  memset(c, 0, sizeof *c);
  snprintf(d->msg, sizeof d->msg, "%s", msg);
  ready_push(b, d);
  free(j->key);
  free(j);
  return CT_OK;
}

/* A job that finishes from the cache. */
static ct_status finish_cached(builder *b, job *j, const cache_entry *e, ct_err *err) {
  cubin c;
  b->hits++;
  ct_status st = cubin_copy(&e->c, &c, err);
  if (st != CT_OK) {
    lose(b, j);
    return st;
  }
  return finish(b, j, e->status, &c, e->msg, err);
}

/* The job died with its worker (or was killed): a compile error that says so. */
static ct_status finish_dead(builder *b, job *j, const char *what, ct_err *err) {
  cubin c;
  memset(&c, 0, sizeof c);
  c.log = strdup(what);
  if (!c.log) {
    lose(b, j);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "builder: no memory for a log");
  }
  return finish(b, j, CT_ERR_NVRTC, &c, what, err);
}

/* Hand queued jobs to idle workers; jobs already cached finish at once.
 * Restarts workers that are gone. CT_ERR_IO only when no worker is alive
 * and none could be started (the jobs stay queued). */
static ct_status dispatch(builder *b, ct_err *err) {
  ct_status spawn_st = CT_OK;
  int alive = 0;
  for (int i = 0; i < b->n_workers; i++) {
    worker *w = &b->workers[i];
    int respawned = 0; /* at most once per slot and call: no fork loop */
    if (w->pid == 0 && b->n_queued > 0) {
      ct_status st = spawn(b, w, err);
      if (st != CT_OK) spawn_st = st;
      respawned = 1;
    }
    while (w->pid != 0 && !w->cur && b->queue_head) {
      job *j = b->queue_head;
      b->queue_head = j->next;
      if (!b->queue_head) b->queue_tail = NULL;
      b->n_queued--;
      j->next = NULL;
      const cache_entry *e = cache_find(b, j->hash, j->key);
      if (e) {
        ct_status st = finish_cached(b, j, e, err);
        if (st != CT_OK) return st;
        continue;
      }
      if (proc_send_all(w->fd, &j->inst, sizeof j->inst) != 0) {
        /* The worker died while idle: the job never reached it. Put the job
         * back at the head and give the slot a fresh process. */
        j->next = b->queue_head;
        b->queue_head = j;
        if (!b->queue_tail) b->queue_tail = j;
        b->n_queued++;
        reap(w);
        if (respawned) break;
        respawned = 1;
        ct_status st = spawn(b, w, err);
        if (st != CT_OK) spawn_st = st;
        continue;
      }
      w->cur = j;
      w->started_s = proc_now_s();
      b->n_busy++;
    }
    alive += w->pid != 0;
  }
  if (alive == 0 && b->n_queued > 0)
    return spawn_st != CT_OK ? spawn_st
                             : ERR_SET(err, CT_ERR_IO, "builder: no compiler process is running");
  return CT_OK;
}

/* Read w's finished job. A worker that closed its socket died: reap it,
 * report the job, start a replacement (its failure only leaves the slot
 * empty for dispatch to retry). */
static ct_status receive(builder *b, worker *w, ct_err *err) {
  job *j = w->cur;
  w->cur = NULL;
  b->n_busy--;
  result_head h;
  cubin c;
  memset(&c, 0, sizeof c);
  int ok = proc_recv_all(w->fd, &h, sizeof h, 0) == PROC_OK && h.size <= RESULT_MAX_BYTES &&
           h.log_size <= RESULT_MAX_BYTES;
  if (ok) {
    c.data = h.size ? malloc(h.size) : NULL;
    c.log = malloc(h.log_size + 1);
    if (!c.log || (h.size && !c.data)) {
      /* The stream cannot be resynchronised without the bytes: replace the
       * worker and report the job as a parent-side failure. */
      cubin_free(&c);
      reap(w);
      (void)spawn(b, w, NULL);
      long tag = j->tag;
      lose(b, j);
      return ERR_SET(err, CT_ERR_NO_MEMORY, "builder: no memory for the result of job %ld", tag);
    }
    ok = proc_recv_all(w->fd, c.data, h.size, 0) == PROC_OK &&
         proc_recv_all(w->fd, c.log, h.log_size, 0) == PROC_OK;
  }
  if (!ok) {
    cubin_free(&c);
    int ws = reap(w);
    char how[96], what[192];
    proc_describe_exit(ws, how, sizeof how);
    snprintf(what, sizeof what, "the compiler process died (%s) compiling this instance", how);
    (void)spawn(b, w, NULL);
    return finish_dead(b, j, what, err);
  }
  c.log[h.log_size] = '\0';
  c.size = h.size;
  c.compile_ms = h.compile_ms;
  h.msg[sizeof h.msg - 1] = '\0';
  ct_status status = (ct_status)h.status;
  /* A compile error is the config's, so it is cached like a cubin; other
   * failures (memory) are the moment's and are not. */
  if (status == CT_OK || status == CT_ERR_NVRTC) cache_store(b, j, status, &c, h.msg);
  return finish(b, j, status, &c, h.msg, err);
}

/* ---- the API ----------------------------------------------------------- */

ct_status builder_start(int n_workers, const arch *a, builder **out, ct_err *err) {
  if (!out) return ERR_SET(err, CT_ERR_INVALID_ARG, "builder_start: NULL out");
  *out = NULL;
  if (!a) return ERR_SET(err, CT_ERR_INVALID_ARG, "builder_start: NULL arch");
  if (n_workers < 0 || n_workers > MAX_WORKERS)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "builder: n_workers is %d, accepted 0..%d (0: one per core)", n_workers,
                   MAX_WORKERS);
  if (n_workers == 0) {
    long cores = proc_usable_cores();
    n_workers = cores < 1 ? 1 : cores > MAX_WORKERS ? MAX_WORKERS : (int)cores;
  }
  builder *b = calloc(1, sizeof *b);
  if (b) b->workers = calloc((size_t)n_workers, sizeof *b->workers);
  if (b) b->cache = calloc(CACHE_MAX_ENTRIES, sizeof *b->cache);
  if (!b || !b->workers || !b->cache) {
    if (b) free(b->workers);
    free(b);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "builder: no memory for %d workers", n_workers);
  }
  b->arch = *a;
  b->n_workers = n_workers;
  pthread_mutex_init(&b->lock, NULL);
  pthread_cond_init(&b->changed, NULL);
  for (int i = 0; i < n_workers; i++) b->workers[i].fd = -1;
  for (int i = 0; i < n_workers; i++) {
    ct_status st = spawn(b, &b->workers[i], err);
    if (st != CT_OK) {
      builder_stop(b);
      return st;
    }
  }
  *out = b;
  return CT_OK;
}

ct_status builder_submit(builder *b, const instance *inst, long tag, ct_err *err) {
  return builder_submit_for(b, 0, inst, tag, err);
}

ct_status builder_submit_for(builder *b, int client, const instance *inst, long tag, ct_err *err) {
  if (!b || !inst || !inst->tpl)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "builder_submit: NULL builder, instance or template");
  if (client < 0 || client >= BUILDER_MAX_CLIENTS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "builder_submit: client %d, accepted 0..%d", client,
                   BUILDER_MAX_CLIENTS - 1);
  if (inst->n_options < 0 || inst->n_options > INSTANCE_MAX_OPTIONS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: n_options is %d, accepted 0..%d",
                   inst->n_options, INSTANCE_MAX_OPTIONS);
  for (int i = 0; i < inst->n_options; i++)
    if (!memchr(inst->options[i], '\0', INSTANCE_OPTION_MAX))
      return ERR_SET(err, CT_ERR_INVALID_ARG, "instance: option %d is not NUL-terminated", i);
  job *j = malloc(sizeof *j);
  char *key = make_key(inst, &b->arch);
  if (!j || !key) {
    free(j);
    free(key);
    return ERR_SET(err, CT_ERR_NO_MEMORY, "builder: no memory for job %ld", tag);
  }
  j->next = NULL;
  j->client = client;
  j->tag = tag;
  j->key = key;
  j->hash = fnv1a(key);
  j->inst = *inst;
  pthread_mutex_lock(&b->lock);
  b->pending[client]++;
  const cache_entry *e = cache_find(b, j->hash, j->key);
  if (e) {
    ct_status st = finish_cached(b, j, e, err);
    pthread_mutex_unlock(&b->lock);
    return st;
  }
  if (b->queue_tail)
    b->queue_tail->next = j;
  else
    b->queue_head = j;
  b->queue_tail = j;
  b->n_queued++;
  /* Start compiling now, so that it overlaps the caller's measuring. A
   * failure to (re)start workers is reported by builder_collect. */
  (void)dispatch(b, NULL);
  pthread_mutex_unlock(&b->lock);
  return CT_OK;
}

ct_status builder_collect(builder *b, long *tag, cubin *out, ct_err *err) {
  return builder_collect_for(b, 0, tag, out, err);
}

/* Poll the busy workers once, for at most POLL_SLICE_MS, with the lock
 * released (the caller holds it and has set b->polling), then read what
 * finished and handle compiles past their time. */
static ct_status poll_workers(builder *b, ct_err *err) {
  struct pollfd fds[MAX_WORKERS];
  int who[MAX_WORKERS], n = 0;
  double now = proc_now_s(), wait_s = POLL_SLICE_MS / 1000.0;
  for (int i = 0; i < b->n_workers; i++) {
    worker *w = &b->workers[i];
    if (!w->cur) continue;
    double left = w->started_s + BUILD_TIMEOUT_S - now;
    if (left < wait_s) wait_s = left;
    fds[n].fd = w->fd;
    fds[n].events = POLLIN;
    fds[n].revents = 0;
    who[n++] = i;
  }
  int ms = wait_s <= 0 ? 0 : (int)(wait_s * 1000) + 1;
  pthread_mutex_unlock(&b->lock);
  int k = poll(fds, (nfds_t)n, ms);
  int poll_errno = errno;
  pthread_mutex_lock(&b->lock);
  if (k < 0 && poll_errno != EINTR)
    return ERR_SET(err, CT_ERR_IO, "builder: poll: %s", strerror(poll_errno));
  for (int i = 0; k > 0 && i < n; i++) {
    if (!fds[i].revents) continue;
    ct_status st = receive(b, &b->workers[who[i]], err);
    if (st != CT_OK) return st;
  }
  /* Compiles past their time: kill, report, replace. */
  now = proc_now_s();
  for (int i = 0; i < b->n_workers; i++) {
    worker *w = &b->workers[i];
    if (!w->cur || now - w->started_s < BUILD_TIMEOUT_S) continue;
    job *j = w->cur;
    w->cur = NULL;
    b->n_busy--;
    reap(w);
    (void)spawn(b, w, NULL);
    char what[128];
    snprintf(what, sizeof what,
             "the compiler process took more than %.0f s compiling this instance: killed",
             BUILD_TIMEOUT_S);
    ct_status st = finish_dead(b, j, what, err);
    if (st != CT_OK) return st;
  }
  return CT_OK;
}

ct_status builder_collect_for(builder *b, int client, long *tag, cubin *out, ct_err *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!b || !tag || !out)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "builder_collect: NULL builder, tag or out");
  if (client < 0 || client >= BUILDER_MAX_CLIENTS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "builder_collect: client %d, accepted 0..%d", client,
                   BUILDER_MAX_CLIENTS - 1);
  ct_status st = CT_OK;
  pthread_mutex_lock(&b->lock);
  for (;;) {
    done *d = b->ready_head[client];
    if (d) {
      b->ready_head[client] = d->next;
      if (!d->next) b->ready_tail[client] = NULL;
      b->n_ready--;
      b->pending[client]--;
      *tag = d->tag;
      *out = d->c;
      st = d->status;
      if (st != CT_OK) err_set(err, st, __FILE__, __LINE__, "%s", d->msg);
      free(d);
      break;
    }
    if (b->pending[client] == 0) {
      st = ERR_SET(err, CT_ERR_NOT_FOUND, "builder: nothing queued or compiling");
      break;
    }
    if ((st = dispatch(b, err)) != CT_OK) break;
    if (b->ready_head[client]) continue;
    if (b->polling) { /* another client polls: wait for its news */
      pthread_cond_wait(&b->changed, &b->lock);
      continue;
    }
    if (b->n_busy == 0) {
      /* nothing compiling, yet a job of this client is neither queued nor
       * finished: dispatch could not start a worker and said so */
      if (b->n_queued == 0) {
        st = ERR_SET(err, CT_ERR_INTERNAL, "builder: client %d waits for a job that is nowhere",
                     client);
        break;
      }
      continue;
    }
    b->polling = 1;
    st = poll_workers(b, err);
    b->polling = 0;
    pthread_cond_broadcast(&b->changed);
    if (st != CT_OK) break;
  }
  pthread_mutex_unlock(&b->lock);
  return st;
}

int builder_pending(builder *b) {
  if (!b) return 0;
  pthread_mutex_lock(&b->lock);
  int n = b->n_queued + b->n_busy + b->n_ready;
  pthread_mutex_unlock(&b->lock);
  return n;
}

long builder_cache_hits(builder *b) {
  if (!b) return 0;
  pthread_mutex_lock(&b->lock);
  long n = b->hits;
  pthread_mutex_unlock(&b->lock);
  return n;
}

void builder_stop(builder *b) {
  if (!b) return;
  /* Killed, not asked: a worker holds nothing worth a clean exit, and a
   * compile in flight would otherwise delay the stop by its whole length. */
  for (int i = 0; b->workers && i < b->n_workers; i++) {
    worker *w = &b->workers[i];
    reap(w);
    if (w->cur) {
      free(w->cur->key);
      free(w->cur);
    }
  }
  while (b->queue_head) {
    job *j = b->queue_head;
    b->queue_head = j->next;
    free(j->key);
    free(j);
  }
  for (int c = 0; c < BUILDER_MAX_CLIENTS; c++)
    while (b->ready_head[c]) {
      done *d = b->ready_head[c];
      b->ready_head[c] = d->next;
      cubin_free(&d->c);
      free(d);
    }
  while (b->cache && b->cache_count > 0) cache_evict_oldest(b);
  free(b->cache);
  free(b->workers);
  pthread_cond_destroy(&b->changed);
  pthread_mutex_destroy(&b->lock);
  free(b);
}
