/*
 * test_mpi.c: the records protocol between MPI ranks, without a GPU
 * (tests/test_mpi.sh runs it; tuner/mpi.c).
 *
 *   test_mpi --write FILE N     write N trial records (JSON lines: two
 *                               workloads, two templates, outcomes mixed)
 *   mpirun -n R test_mpi DB FILE [BATCH]
 *
 * Under mpirun, rank 0 serves the database DB (tune_mpi_session); every
 * other rank reads FILE and, through its proxy store, records the trials
 * in batches of BATCH (7; each a request, each one transaction on rank 0),
 * timed (records/s, printed: what rank 0 sustains), then
 * asks for them back: every (workload, template)'s trials by uid, the best,
 * the trials of other workloads, a kernel stored and found. With several
 * such ranks each records its own copy (uids made distinct by its rank).
 * Rank 0 then checks that the database holds each record exactly as the
 * file says, with the uid it had. Exit 0 when every check holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arch.h"
#include "db/db.h"
#include "tuner/mpi.h"

#define KEY_A "conv2d-nchw4c-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1"
#define KEY_B "conv2d-nchw4c-i8.i8.i32-n1-c64-k64-28x28-r3x3-s1x1-p1x1.1x1-d1x1"

static const char *tpl_names[2] = {"conv2d_nchw4c_dp4a", "conv2d_nchw4c_mma"};

static void fail(const char *fmt, const char *a) {
  fprintf(stderr, "test_mpi: ");
  fprintf(stderr, fmt, a);
  fputc('\n', stderr);
  exit(1);
}

static device test_device(void) {
  device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "NVIDIA H200");
  ct_err err = {0};
  if (arch_from_name("sm_90", &d.arch, &err)) fail("%s", err.msg);
  d.arch.sm_count = 132;
  d.driver_version = d.runtime_version = 13000;
  return d;
}

static int write_records(const char *path, int n) {
  device dev = test_device();
  trial *v = calloc((size_t)n, sizeof *v);
  if (!v) fail("%s", "out of memory");
  for (int i = 0; i < n; i++) {
    trial *t = &v[i];
    const template_desc *tpl = template_find(tpl_names[i % 2]);
    if (!tpl) fail("no template %s", tpl_names[i % 2]);
    snprintf(t->uid, sizeof t->uid, "rec-%d", i);
    snprintf(t->workload_key, sizeof t->workload_key, "%s", i % 3 ? KEY_A : KEY_B);
    snprintf(t->template_name, sizeof t->template_name, "%s", tpl->name);
    snprintf(t->template_version, sizeof t->template_version, "%s", template_version(tpl));
    t->config_index = (uint64_t)i;
    char cfg[64];
    snprintf(cfg, sizeof cfg, "{\"unroll\":%d}", i % 4);
    t->config_json = strdup(cfg);
    t->outcome = i % 5 == 4 ? OUT_WRONG_ANSWER : OUT_OK;
    t->error = t->outcome == OUT_OK ? NULL : strdup("first mismatch at 7: \"x\"");
    t->median_us = 10.0 + (double)((i * 7) % 23) / 4.0;
    t->n_samples = t->outcome == OUT_OK ? 2 : 0;
    if (t->n_samples) {
      t->samples_us = malloc(2 * sizeof *t->samples_us);
      t->samples_us[0] = t->median_us;
      t->samples_us[1] = t->median_us * 1.01;
    }
    t->compile_ms = 30.5 + i;
    t->options = strdup(i % 2 ? "-DBLOCK_N=64 -DUNROLL=2" : "-DBLOCK_N=32");
    snprintf(t->arch, sizeof t->arch, "sm_90");
    snprintf(t->tuner, sizeof t->tuner, "xgb");
    snprintf(t->session, sizeof t->session, "file-session");
    t->timestamp = 1790000000.25 + i;
    tune_db_device(&dev, &t->device);
  }
  size_t len = 0;
  char *text = mpi_trials_text(v, n, &len);
  FILE *f = fopen(path, "w");
  if (!text || !f || fwrite(text, 1, len, f) != len || fclose(f)) fail("cannot write %s", path);
  free(text);
  trials_free(v, n);
  return 0;
}

/* ---- a rank but 0 ----------------------------------------------------------- */

typedef struct sender {
  const char *path;
  int rank, batch;
  char why[512];
} sender;

/* A whole file, NUL-terminated (owned: free), its length in *len; NULL when
 * it cannot be read. */
static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *text = calloc(1, 1), buf[4096];
  size_t cap = 1, k;
  *len = 0;
  while (text && (k = fread(buf, 1, sizeof buf, f)) > 0) {
    if (*len + k + 1 > cap) {
      cap = (*len + k + 1) * 2;
      char *grown = realloc(text, cap);
      if (!grown) free(text);
      text = grown;
      if (!text) break;
    }
    memcpy(text + *len, buf, k);
    *len += k;
    text[*len] = '\0';
  }
  fclose(f);
  return text;
}

/* The file's trials, their uids made the rank's own. */
static ct_status read_file(sender *sd, trial **v, int *n, ct_err *err) {
  size_t len = 0;
  char *text = slurp(sd->path, &len);
  if (!text) return ERR_SET(err, CT_ERR_IO, "cannot read %s", sd->path);
  ct_status st = mpi_trials_parse(text, len, v, n, err);
  free(text);
  for (int i = 0; !st && i < *n; i++) {
    char uid[40];
    snprintf(uid, sizeof uid, "r%d-%.30s", sd->rank, (*v)[i].uid);
    snprintf((*v)[i].uid, sizeof(*v)[i].uid, "%s", uid);
  }
  return st;
}

static ct_status check(int ok, sender *sd, const char *what, ct_err *err) {
  if (ok) return CT_OK;
  snprintf(sd->why, sizeof sd->why, "%s", what);
  return ERR_SET(err, CT_ERR_INTERNAL, "rank %d: %s", sd->rank, what);
}

static ct_status send_and_ask(const tune_store *s, void *ctx, ct_err *err) {
  sender *sd = ctx;
  trial *v = NULL;
  int n = 0;
  ct_status st = read_file(sd, &v, &n, err);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const int bs = sd->batch;
  for (int i = 0; !st && i < n; i += bs)
    st = s->record(s->ctx, &v[i], n - i < bs ? n - i : bs, err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (!st)
    printf("test_mpi: rank %d recorded %d records in batches of %d in %.3f s: %.0f records/s\n",
           sd->rank, n, bs, secs, secs > 0 ? n / secs : 0);
  /* what a task's start asks rank 0 for: its own trials (resume) and up to
   * 4000 of other workloads (transfer), timed */
  if (!st) {
    clock_gettime(CLOCK_MONOTONIC, &t0);
    trial *tr = NULL, *to = NULL;
    int m1 = 0, m2 = 0;
    const template_desc *tpl = template_find(tpl_names[0]);
    st = s->trials(s->ctx, KEY_A, tpl, &tr, &m1, err);
    if (!st) st = s->trials_other(s->ctx, KEY_A, tpl, 4000, &to, &m2, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (!st)
      printf("test_mpi: rank %d: a task's start (resume %d, transfer %d trials) took %.1f ms\n",
             sd->rank, m1, m2, secs * 1e3);
    trials_free(tr, m1);
    trials_free(to, m2);
  }
  /* every (workload, template)'s trials come back, by uid, in order */
  for (int a = 0; !st && a < 2; a++)
    for (int b = 0; !st && b < 2; b++) {
      const char *key = a ? KEY_B : KEY_A;
      const template_desc *tpl = template_find(tpl_names[b]);
      trial *got = NULL;
      int m = 0;
      if ((st = s->trials(s->ctx, key, tpl, &got, &m, err))) break;
      int want = 0, same = 1;
      double best = 0;
      for (int i = 0; i < n; i++)
        if (!strcmp(v[i].workload_key, key) && !strcmp(v[i].template_name, tpl->name)) {
          if (want < m && strcmp(got[want].uid, v[i].uid)) same = 0;
          if (v[i].outcome == OUT_OK && (best == 0 || v[i].median_us < best)) best = v[i].median_us;
          want++;
        }
      /* with several sending ranks, each sees its own among the others' */
      int mine = 0;
      for (int j = 0; j < m; j++) mine += !strncmp(got[j].uid, v[0].uid, 3);
      st = check(mine == want && (m != want || same), sd, "a (workload, template)'s trials", err);
      trials_free(got, m);
      trial bt;
      int found = 0;
      if (!st && !(st = s->best(s->ctx, key, tpl, &bt, &found, err))) {
        st = check(found && bt.median_us <= best, sd, "the best trial", err);
        trial_free(&bt);
      }
      trial *other = NULL;
      int o = 0;
      if (!st && !(st = s->trials_other(s->ctx, key, tpl, 1000, &other, &o, err)))
        for (int j = 0; !st && j < o; j++)
          st = check(strcmp(other[j].workload_key, key) != 0, sd, "another workload's trials", err);
      trials_free(other, o);
    }
  /* the kernel cache: a kernel of this rank's own (its options name the rank) */
  char opts[64];
  snprintf(opts, sizeof opts, "-DSENDER=%d", sd->rank);
  if (!st && n > 0) {
    free(v[0].options);
    v[0].options = strdup(opts);
  }
  if (!st) st = check(!s->has_kernel(s->ctx, &v[0]), sd, "a kernel before it was stored", err);
  static const unsigned char image[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 3, 0xff};
  if (!st) st = s->put_kernel(s->ctx, &v[0], image, sizeof image, err);
  if (!st) st = check(s->has_kernel(s->ctx, &v[0]), sd, "a kernel stored", err);
  trials_free(v, n);
  return st;
}

/* ---- rank 0's checks -------------------------------------------------------- */

static int by_uid(const void *a, const void *b) {
  return strcmp(((const trial *)a)->uid, ((const trial *)b)->uid);
}

static int check_database(const char *db_path, const char *file, int senders) {
  size_t len = 0;
  char *text = slurp(file, &len);
  if (!text) fail("cannot read %s", file);
  trial *v = NULL;
  int n = 0;
  ct_err err = {0};
  if (mpi_trials_parse(text, len, &v, &n, &err)) fail("%s", err.msg);
  free(text);
  db *d = NULL;
  if (db_open(db_path, 1, &d, &err)) fail("%s", err.msg);
  /* every trial of the four (workload, template)s, sorted by uid */
  trial *all = NULL;
  int n_all = 0;
  for (int g = 0; g < 4; g++) {
    trial *got = NULL;
    int m = 0;
    if (db_trials(d, g / 2 ? KEY_B : KEY_A, NULL, tpl_names[g % 2], NULL, &got, &m, &err))
      fail("%s", err.msg);
    all = realloc(all, sizeof *all * (size_t)(n_all + m + 1));
    if (!all) fail("%s", "out of memory");
    memcpy(all + n_all, got, sizeof *got * (size_t)m);
    n_all += m;
    free(got); /* the trials' strings moved into all */
  }
  qsort(all, (size_t)n_all, sizeof *all, by_uid);
  int bad = 0;
  for (int r = 1; r <= senders; r++)
    for (int i = 0; i < n; i++) {
      trial want = v[i];
      snprintf(want.uid, sizeof want.uid, "r%d-%.30s", r % 100, v[i].uid);
      const trial *got = bsearch(&want, all, (size_t)n_all, sizeof *all, by_uid);
      int same = 0;
      if (got) {
        cJSON *a = trial_to_json(got), *b = trial_to_json(&want);
        same = cJSON_Compare(a, b, 1);
        cJSON_Delete(a);
        cJSON_Delete(b);
      }
      if (!same) {
        if (bad < 5)
          fprintf(stderr, "test_mpi: %s is not in the database as the file says\n", want.uid);
        bad++;
      }
    }
  if (n_all != n * senders) {
    fprintf(stderr, "test_mpi: the database holds %d trials, the senders sent %d\n", n_all,
            n * senders);
    bad++;
  }
  trials_free(all, n_all);
  db_close(d);
  trials_free(v, n);
  printf("test_mpi: %d records from %d rank%s, %s\n", n * senders, senders, senders == 1 ? "" : "s",
         bad ? "MISSING OR CHANGED" : "each in the database as its file says");
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--write")) return write_records(argv[2], atoi(argv[3]));
  if (argc != 3 && argc != 4)
    fail("%s", "usage: test_mpi --write FILE N | mpirun -n R test_mpi DB FILE [BATCH]");
  if (!tune_mpi_built()) {
    printf("test_mpi: skipped: this build has no MPI\n");
    return 77;
  }
  device dev = test_device();
  sender sd = {.path = argv[2], .batch = argc == 4 ? atoi(argv[3]) : 7};
  if (sd.batch < 1) fail("BATCH: %s is not a positive count", argv[3]);
  int rank = -1;
  ct_err err = {0};
  sd.rank = tune_mpi_env_rank();
  ct_status st = tune_mpi_session(argv[1], 30, &dev, send_and_ask, &sd, &rank, &err);
  if (st) {
    fprintf(stderr, "test_mpi: rank %d: %s\n", rank, err.msg);
    return 1;
  }
  if (rank != 0) return 0;
  int size = 0;
  const char *env = getenv("OMPI_COMM_WORLD_SIZE");
  size = env ? atoi(env) : 2;
  return check_database(argv[1], argv[2], size - 1);
}
