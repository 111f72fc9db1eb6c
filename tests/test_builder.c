/*
 * test_builder.c: the NVRTC compile pool (tuner/builder.c), no GPU needed.
 *
 * Twelve distinct random valid configs of conv2d_nchw4c_dp4a on a small
 * packed workload and one corrupted instance (a wrong -DCT_THREADS, so the
 * template's static_assert fails) go through two worker processes for
 * sm_90: every tag comes back once, the good ones as ELF cubins, the bad one
 * as CT_ERR_NVRTC with its log; resubmitted, all come from the cache,
 * byte-identical. A worker killed mid-compile is replaced and its job
 * reported as a compile error that names the signal. Workers, idle or
 * busy, end within a second of a kill -9 of the process that started them.
 * A compiler holds no GPU device file open after compiling.
 * About 15 compiles of tens to hundreds of milliseconds each: a few seconds
 * on two cores.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/rng.h"
#include "tuner/builder.h"
#include "tuner/proc.h"
#include "tests/util.h"

#define N_GOOD  12
#define BAD_TAG 999

static arch sm90(void) {
  arch a;
  ct_err err = {0};
  ck_assert_int_eq(arch_from_name("sm_90", &a, &err), CT_OK);
  return a;
}

/* conv2d, batch 1, 16 -> 16 channels, 14x14, 3x3, padding 1, packed. */
static void small_workload(ct_workload *w) {
  workload_init(w, CT_OP_CONV2D);
  w->layout = CT_LAYOUT_NCHW4C;
  w->n = 1;
  w->c = 16;
  w->k = 16;
  w->in[0] = w->in[1] = 14;
  w->kernel[0] = w->kernel[1] = 3;
  w->pad_before[0] = w->pad_before[1] = 1;
  w->pad_after[0] = w->pad_after[1] = 1;
  ct_err err = {0};
  ck_assert_msg(workload_validate(w, &err) == CT_OK, "%s", err.msg);
}

/* n instances of distinct random valid configs, then the corrupted one. */
static void make_instances(const arch *a, instance *out, int n) {
  const template_desc *tpl = template_find("conv2d_nchw4c_dp4a");
  ck_assert_ptr_nonnull(tpl);
  ct_workload w;
  small_workload(&w);
  space s;
  ct_err err = {0};
  ck_assert_msg(template_space(tpl, &w, &s, &err) == CT_OK, "%s", err.msg);
  rng r;
  rng_seed(&r, 42);
  uint64_t seen[N_GOOD];
  for (int i = 0; i < n;) {
    config c;
    ck_assert_msg(template_sample(tpl, &w, &s, a, &r, 1000000, &c, &err) == CT_OK, "%s", err.msg);
    uint64_t idx = space_index(&s, &c);
    int dup = 0;
    for (int j = 0; j < i; j++) dup |= seen[j] == idx;
    if (dup) continue;
    seen[i] = idx;
    ck_assert_msg(instance_make(tpl, &w, &s, &c, a, &out[i], &err) == CT_OK, "%s", err.msg);
    i++;
  }
  out[n] = out[0];
  int found = 0;
  for (int i = 0; i < out[n].n_options; i++)
    if (strncmp(out[n].options[i], "-DCT_THREADS=", 13) == 0) {
      snprintf(out[n].options[i], INSTANCE_OPTION_MAX, "-DCT_THREADS=%d", 7);
      found = 1;
    }
  ck_assert_msg(found, "the instance has no -DCT_THREADS option");
  space_free(&s);
}

static int is_elf(const cubin *c) {
  return c->data && c->size > 4 &&
         memcmp(c->data,
                "\x7f"
                "ELF",
                4) == 0;
}

/* Collect everything pending; results[i] gets the job tagged base + i (i in
 * 0..n-1; the bad job is tagged base + BAD_TAG and stored in results[n]),
 * statuses in st[]. Every tag must come back exactly once. */
static void collect_all(builder *b, long base, int n, cubin *results, ct_status *st) {
  int seen[N_GOOD + 1] = {0};
  ct_err err = {0};
  for (int got = 0; got < n + 1; got++) {
    ck_assert_int_eq(builder_pending(b), n + 1 - got);
    long tag = -1;
    cubin c;
    ct_status s = builder_collect(b, &tag, &c, &err);
    ck_assert_msg(s == CT_OK || s == CT_ERR_NVRTC, "collect: %s: %s", ct_status_name(s), err.msg);
    int i = tag == base + BAD_TAG ? n : (int)(tag - base);
    ck_assert_msg(i >= 0 && i <= n, "unknown tag %ld", tag);
    ck_assert_msg(!seen[i], "tag %ld came back twice", tag);
    seen[i] = 1;
    results[i] = c;
    st[i] = s;
  }
  ck_assert_int_eq(builder_pending(b), 0);
  long tag;
  cubin c;
  ck_assert_int_eq(builder_collect(b, &tag, &c, &err), CT_ERR_NOT_FOUND);
}

START_TEST(compiles_reports_and_caches) {
  arch a = sm90();
  instance inst[N_GOOD + 1];
  make_instances(&a, inst, N_GOOD);
  builder *b = NULL;
  ct_err err = {0};
  ck_assert_msg(builder_start(2, &a, &b, &err) == CT_OK, "%s", err.msg);
  long tag;
  cubin c;
  ck_assert_int_eq(builder_collect(b, &tag, &c, &err), CT_ERR_NOT_FOUND);
  ck_assert_int_eq(builder_pending(b), 0);

  for (int i = 0; i < N_GOOD; i++)
    ck_assert_int_eq(builder_submit(b, &inst[i], 100 + i, &err), CT_OK);
  ck_assert_int_eq(builder_submit(b, &inst[N_GOOD], 100 + BAD_TAG, &err), CT_OK);
  ck_assert_int_eq(builder_pending(b), N_GOOD + 1);

  cubin first[N_GOOD + 1];
  ct_status st[N_GOOD + 1];
  collect_all(b, 100, N_GOOD, first, st);
  for (int i = 0; i < N_GOOD; i++) {
    ck_assert_msg(st[i] == CT_OK, "job %d: %s\n%s", i, ct_status_name(st[i]), first[i].log);
    ck_assert_msg(is_elf(&first[i]), "job %d: not an ELF cubin", i);
    ck_assert_ptr_nonnull(first[i].log);
    ck_assert_double_gt(first[i].compile_ms, 0.0);
  }
  ck_assert_int_eq(st[N_GOOD], CT_ERR_NVRTC);
  ck_assert_ptr_null(first[N_GOOD].data);
  ck_assert_ptr_nonnull(first[N_GOOD].log);
  ck_assert_msg(strstr(first[N_GOOD].log, "CT_THREADS"), "log: %s", first[N_GOOD].log);
  ck_assert_int_eq(builder_cache_hits(b), 0);

  /* Again, under new tags: all from the cache, identical, the failure too. */
  for (int i = 0; i < N_GOOD; i++)
    ck_assert_int_eq(builder_submit(b, &inst[i], 200 + i, &err), CT_OK);
  ck_assert_int_eq(builder_submit(b, &inst[N_GOOD], 200 + BAD_TAG, &err), CT_OK);
  ck_assert_int_eq(builder_cache_hits(b), N_GOOD + 1);
  cubin again[N_GOOD + 1];
  collect_all(b, 200, N_GOOD, again, st);
  for (int i = 0; i <= N_GOOD; i++) {
    ck_assert_int_eq(st[i], i < N_GOOD ? CT_OK : CT_ERR_NVRTC);
    ck_assert_uint_eq(again[i].size, first[i].size);
    if (first[i].size) ck_assert_int_eq(memcmp(again[i].data, first[i].data, first[i].size), 0);
    ck_assert_str_eq(again[i].log, first[i].log);
    ck_assert_double_eq(again[i].compile_ms, first[i].compile_ms);
  }
  ck_assert_int_eq(builder_cache_hits(b), N_GOOD + 1);
  for (int i = 0; i <= N_GOOD; i++) {
    cubin_free(&first[i]);
    cubin_free(&again[i]);
  }
  builder_stop(b);
}
END_TEST

/* The pids of this process's children, at most max. */
static int children(pid_t *out, int max) {
  DIR *d = opendir("/proc");
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < max) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    const char *p = strrchr(buf, ')'); /* "pid (comm) state ppid ..." */
    char state;
    int ppid;
    if (p && sscanf(p + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid())
      out[n++] = (pid_t)atoi(e->d_name);
  }
  closedir(d);
  return n;
}

/* Whether pid has exited (a zombie, or gone). */
static int exited(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 1;
  size_t k = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[k] = '\0';
  const char *p = strrchr(buf, ')');
  return !p || p[2] == 'Z' || p[2] == 'X';
}

/* Clients of one builder in threads (the tuners of a host's GPUs): each
 * submits the same instances under its own tags and gets back exactly its
 * own, every one once, while the others' results arrive in between. */
#define N_CLIENTS 4
typedef struct client_arg {
  builder *b;
  const instance *inst;
  int client;
  char failure[256];
} client_arg;

static void *client_main(void *p) {
  client_arg *a = p;
  ct_err err = {0};
  int seen[N_GOOD + 1] = {0};
  long base = 1000L * a->client;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i <= N_GOOD; i++)
      if (builder_submit_for(a->b, a->client, &a->inst[i], base + i, &err) != CT_OK) {
        snprintf(a->failure, sizeof a->failure, "submit: %.200s", err.msg);
        return NULL;
      }
    memset(seen, 0, sizeof seen);
    for (int got = 0; got <= N_GOOD; got++) {
      long tag = -1;
      cubin c;
      ct_status st = builder_collect_for(a->b, a->client, &tag, &c, &err);
      int i = (int)(tag - base);
      if ((st != CT_OK && st != CT_ERR_NVRTC) || i < 0 || i > N_GOOD || seen[i] ||
          (st == CT_OK) != (i < N_GOOD) || (st == CT_OK && !is_elf(&c))) {
        snprintf(a->failure, sizeof a->failure, "client %d: tag %ld, %s (%.160s)", a->client, tag,
                 ct_status_name(st), err.msg);
        cubin_free(&c);
        return NULL;
      }
      seen[i] = 1;
      cubin_free(&c);
    }
    long tag;
    cubin c;
    if (builder_collect_for(a->b, a->client, &tag, &c, &err) != CT_ERR_NOT_FOUND) {
      snprintf(a->failure, sizeof a->failure, "client %d: a job too many", a->client);
      return NULL;
    }
  }
  return NULL;
}

START_TEST(clients_in_threads_collect_their_own_jobs) {
  arch a = sm90();
  instance inst[N_GOOD + 1];
  make_instances(&a, inst, N_GOOD);
  builder *b = NULL;
  ct_err err = {0};
  ck_assert_msg(builder_start(2, &a, &b, &err) == CT_OK, "%s", err.msg);
  pthread_t th[N_CLIENTS];
  client_arg args[N_CLIENTS];
  for (int c = 0; c < N_CLIENTS; c++) {
    args[c] = (client_arg){.b = b, .inst = inst, .client = c + 1};
    ck_assert_int_eq(pthread_create(&th[c], NULL, client_main, &args[c]), 0);
  }
  for (int c = 0; c < N_CLIENTS; c++) {
    pthread_join(th[c], NULL);
    ck_assert_msg(!args[c].failure[0], "%s", args[c].failure);
  }
  ck_assert_int_eq(builder_pending(b), 0);
  /* 13 distinct jobs: compiled at most once each per client, the rest cached */
  ck_assert_int_ge(builder_cache_hits(b), N_CLIENTS * (N_GOOD + 1));
  long tag;
  cubin c;
  ck_assert_int_eq(builder_submit_for(b, BUILDER_MAX_CLIENTS, &inst[0], 1, &err),
                   CT_ERR_INVALID_ARG);
  ck_assert_int_eq(builder_collect_for(b, -1, &tag, &c, &err), CT_ERR_INVALID_ARG);
  builder_stop(b);
}
END_TEST

START_TEST(a_dead_worker_is_replaced_and_its_job_reported) {
  arch a = sm90();
  instance inst[N_GOOD + 1];
  make_instances(&a, inst, 2); /* two good ones, inst[2] the bad one */
  builder *b = NULL;
  ct_err err = {0};
  ck_assert_msg(builder_start(2, &a, &b, &err) == CT_OK, "%s", err.msg);
  pid_t pids[8];
  int n = children(pids, 8);
  ck_assert_int_eq(n, 2);

  /* The job is sent at once; a compile takes tens of milliseconds, so both
   * workers die before any result (one mid-compile, one idle). */
  ck_assert_int_eq(builder_submit(b, &inst[0], 7, &err), CT_OK);
  for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
  for (int i = 0; i < n; i++)
    for (int t = 0; t < 5000 && !exited(pids[i]); t++) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  long tag = -1;
  cubin c;
  ck_assert_int_eq(builder_collect(b, &tag, &c, &err), CT_ERR_NVRTC);
  ck_assert_int_eq(tag, 7);
  ck_assert_ptr_null(c.data);
  ck_assert_msg(strstr(c.log, "compiler process died") && strstr(c.log, "signal 9"), "log: %s",
                c.log);
  ck_assert_msg(strstr(err.msg, "signal 9"), "err: %s", err.msg);
  cubin_free(&c);

  /* Not cached: submitted again it compiles, on a replacement (the idle
   * dead worker is found when the job is handed to it). */
  ck_assert_int_eq(builder_submit(b, &inst[0], 8, &err), CT_OK);
  ck_assert_int_eq(builder_submit(b, &inst[1], 9, &err), CT_OK);
  for (int k = 0; k < 2; k++) {
    ct_status st = builder_collect(b, &tag, &c, &err);
    ck_assert_msg(st == CT_OK, "%s: %s", ct_status_name(st), err.msg);
    ck_assert(tag == 8 || tag == 9);
    if (tag == 8) ck_assert(is_elf(&c));
    cubin_free(&c);
  }
  ck_assert_int_eq(builder_cache_hits(b), 0);
  n = children(pids, 8);
  ck_assert_int_eq(n, 2);
  builder_stop(b);
  /* Stopped: every worker reaped. */
  ck_assert_int_eq(children(pids, 8), 0);
}
END_TEST

/* A compiler holds no GPU: its compiles never start the CUDA driver, which
 * NVRTC otherwise does for its compute cache (builder.c, worker_main). On a
 * machine without a GPU this holds trivially; the GPU machine's run
 * (bench/issue38_gpu.sh tests) is where it can fail. */
START_TEST(a_compiler_holds_no_gpu) {
  arch a = sm90();
  instance inst[2];
  make_instances(&a, inst, 1);
  builder *b = NULL;
  ct_err err = {0};
  ck_assert_msg(builder_start(1, &a, &b, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(builder_submit(b, &inst[0], 1, &err), CT_OK);
  long tag = -1;
  cubin c;
  ck_assert_msg(builder_collect(b, &tag, &c, &err) == CT_OK, "%s", err.msg);
  ck_assert(is_elf(&c));
  cubin_free(&c);
  pid_t pids[4];
  int n = children(pids, 4);
  ck_assert_int_eq(n, 1);
  int open = proc_gpu_files(pids[0]);
  ck_assert_msg(open == 0, "the compiler process holds %d GPU device files open (-1: unknown)",
                open);
  builder_stop(b);
}
END_TEST

/* A worker busy with something long (the runner in a measurement, a builder
 * in a slow compile): it never reads its socket, so only its parent's death
 * can end it. */
static void busy_main(int fd, void *arg) {
  (void)fd;
  (void)arg;
  for (;;) pause();
}

/* The helper process of workers_die_with_their_parent: starts a pool of 3
 * builders and one busy worker, writes their count and pids to fd, waits to
 * be killed. Check's assertions do not work here: on failure it writes 0. */
static void pool_helper(int fd) {
  arch a;
  ct_err err = {0};
  builder *b = NULL;
  pid_t busy, pids[16];
  int busy_fd, n = 0;
  if (arch_from_name("sm_90", &a, &err) == CT_OK && builder_start(3, &a, &b, &err) == CT_OK &&
      proc_spawn("test", busy_main, NULL, &busy, &busy_fd, &err) == CT_OK)
    n = children(pids, 16);
  if (write(fd, &n, sizeof n) != (ssize_t)sizeof n ||
      write(fd, pids, (size_t)n * sizeof *pids) != (ssize_t)((size_t)n * sizeof *pids))
    _exit(1);
  for (;;) pause();
}

/* Issue 33, defect 8: kill -9 of the process that started the workers ends
 * every one of them within a second, idle (they may see their socket close
 * first) or busy (only PR_SET_PDEATHSIG ends those). This process is made
 * their subreaper, so that the orphans come to it to be reaped: a zombie
 * left to an init that does not reap would look alive to kill(pid, 0). */
START_TEST(workers_die_with_their_parent) {
  ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L), 0);
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t helper = fork();
  ck_assert_int_ge(helper, 0);
  if (helper == 0) {
    close(p[0]);
    pool_helper(p[1]);
  }
  close(p[1]);
  int n = 0;
  pid_t pids[16];
  ck_assert_int_eq(read(p[0], &n, sizeof n), (ssize_t)sizeof n);
  ck_assert_int_eq(n, 4); /* 3 builders and the busy one */
  ck_assert_int_eq(read(p[0], pids, (size_t)n * sizeof *pids), (ssize_t)((size_t)n * sizeof *pids));
  close(p[0]);
  for (int i = 0; i < n; i++) ck_assert_msg(!exited(pids[i]), "worker %d died early", (int)pids[i]);

  ck_assert_int_eq(kill(helper, SIGKILL), 0);
  ck_assert_int_eq(waitpid(helper, NULL, 0), helper);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int status[16], left = n;
  for (int i = 0; i < n; i++) status[i] = -1;
  double elapsed = 0;
  while (left > 0 && elapsed < 1.0) {
    for (int i = 0; i < n; i++) {
      int ws;
      if (status[i] == -1 && waitpid(pids[i], &ws, WNOHANG) == pids[i]) {
        status[i] = ws;
        left--;
      }
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t);
    elapsed = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
  }
  int alive = 0;
  for (int i = 0; i < n; i++)
    if (status[i] == -1) { /* still running: end it, not to leave an orphan, and fail */
      alive++;
      kill(pids[i], SIGKILL);
      waitpid(pids[i], NULL, 0);
    }
  ck_assert_msg(alive == 0, "%d of %d workers alive 1 s after their parent's kill -9", alive, n);
  for (int i = 0; i < n; i++) {
    char how[64];
    proc_describe_exit(status[i], how, sizeof how);
    /* an idle builder may see its socket close before the signal comes */
    ck_assert_msg((WIFSIGNALED(status[i]) && WTERMSIG(status[i]) == SIGKILL) ||
                      (WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0),
                  "worker %d ended by %s", (int)pids[i], how);
  }
}
END_TEST

START_TEST(bad_arguments_are_rejected) {
  arch a = sm90();
  builder *b = NULL;
  ct_err err = {0};
  ck_assert_int_eq(builder_start(-1, &a, &b, &err), CT_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err.msg, "n_workers"));
  ck_assert_ptr_null(b);
  ck_assert_int_eq(builder_start(1, NULL, &b, &err), CT_ERR_INVALID_ARG);
  /* 0: one worker per core. */
  ck_assert_msg(builder_start(0, &a, &b, &err) == CT_OK, "%s", err.msg);
  pid_t pids[1024];
  ck_assert_int_eq(children(pids, 1024), (int)sysconf(_SC_NPROCESSORS_ONLN));
  instance inst;
  memset(&inst, 0, sizeof inst);
  ck_assert_int_eq(builder_submit(b, &inst, 1, &err), CT_ERR_INVALID_ARG); /* no template */
  inst.tpl = template_find("conv2d_nchw4c_dp4a");
  inst.n_options = INSTANCE_MAX_OPTIONS + 1;
  ck_assert_int_eq(builder_submit(b, &inst, 1, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(builder_pending(b), 0);
  ck_assert_int_eq(builder_submit(NULL, &inst, 1, &err), CT_ERR_INVALID_ARG);
  long tag;
  cubin c;
  ck_assert_int_eq(builder_collect(b, NULL, &c, &err), CT_ERR_INVALID_ARG);
  ck_assert_int_eq(builder_collect(b, &tag, &c, &err), CT_ERR_NOT_FOUND);
  builder_stop(b);
  builder_stop(NULL);
  ck_assert_int_eq(builder_pending(NULL), 0);
}
END_TEST

static void add_builder(TCase *tc) {
  tcase_add_test(tc, compiles_reports_and_caches);
  tcase_add_test(tc, clients_in_threads_collect_their_own_jobs);
  tcase_add_test(tc, a_dead_worker_is_replaced_and_its_job_reported);
  tcase_add_test(tc, bad_arguments_are_rejected);
  tcase_add_test(tc, a_compiler_holds_no_gpu);
  tcase_add_test(tc, workers_die_with_their_parent);
}

static const test_case suite_cases[] = {
    {"builder", 120, add_builder},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"builder", suite_cases, 0, NULL};
  return test_main(&suite);
}
