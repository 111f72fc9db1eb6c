/*
 * db.c: the connection to the SQLite database of trials (see db.h): open
 * and close, the busy handler, the batching writer (db_insert_trials), the
 * outcome names, and the checks a trial passes before it is written. The
 * schema is in db_schema.c, the reads in db_query.c, JSON lines in
 * db_jsonl.c, the picks in db_picks.c; what they share is in db_int.h.
 *
 * Invariants: a readonly open creates, migrates and converts nothing, and
 * removes the empty -wal/-shm SQLite makes for a reader; in a folder it
 * cannot write it reads the file immutable. Every write is an IMMEDIATE
 * transaction holding the lock at most DB_HOLD_MS, then a pause that lets a
 * waiting writer in; a waiting writer waits as long as the files show
 * commits, and gives up only after DB_STALL_MS without one (a hung holder).
 * Cost: an insert is one fsync and three id lookups per batch.
 */
#include "db/db.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db/db_int.h"

/* How long a waiting writer lets the holder of the lock go without a
 * commit: a write transaction holds it at most DB_HOLD_MS, so 10 s only
 * runs out when the holder hangs. */
#define DB_STALL_MS 10000
/* The longest an insert holds the write lock before it commits and pauses
 * DB_YIELD_US; waiters look every DB_POLL_US, so one of them takes the lock
 * in the pause. A pause per 100 ms costs a long import about 2%. */
#define DB_HOLD_MS  100
#define DB_POLL_US  1000
#define DB_YIELD_US 2000
/* The pause between tries where SQLite itself does not wait (set_wal). */
#define DB_RETRY_MS 5

/* ---- outcomes --------------------------------------------------------------------- */

static const char *const outcome_names[OUT_COUNT] = {
    "OK", "INVALID", "COMPILE_ERROR", "LAUNCH_ERROR", "RUNTIME_ERROR", "WRONG_ANSWER", "TIMEOUT",
};

const char *outcome_name(outcome o) {
  if ((int)o < 0 || o >= OUT_COUNT) return "UNKNOWN";
  return outcome_names[o];
}

int outcome_from_name(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < OUT_COUNT; i++)
    if (strcmp(name, outcome_names[i]) == 0) return i;
  return -1;
}

/* ---- trials in memory --------------------------------------------------------------- */

void trial_free(trial *t) {
  if (!t) return;
  free(t->config_json);
  free(t->error);
  free(t->samples_us);
  free(t->options);
  free(t->tuner_settings);
  t->config_json = t->error = t->options = t->tuner_settings = NULL;
  t->samples_us = NULL;
  t->n_samples = 0;
}

void trials_free(trial *t, int n) {
  if (!t) return;
  for (int i = 0; i < n; i++) trial_free(&t[i]);
  free(t);
}

char *db_dup_str(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

int db_grow(void **v, int count, int *cap, size_t elem) {
  if (count < *cap) return 1;
  int grown = *cap ? 2 * *cap : 16;
  void *p = realloc(*v, (size_t)grown * elem);
  if (!p) return 0;
  *v = p;
  *cap = grown;
  return 1;
}

/* Whether buf (a fixed field of size bytes) holds a NUL-terminated string. */
static int terminated(const char *buf, size_t size) {
  return memchr(buf, '\0', size) != NULL;
}

/* Whether text is one JSON value. */
static int is_json(const char *text) {
  cJSON *j = cJSON_ParseWithOpts(text, NULL, 1);
  cJSON_Delete(j);
  return j != NULL;
}

/* Everything an insert relies on, with a message naming the field; the
 * parsed workload goes to *w. Non-OK trials may carry any finite median:
 * best only ever looks at OK ones. */
ct_status db_validate_trial(const trial *t, ct_workload *w, ct_err *err) {
#define FIXED(field)                                                                               \
  if (!terminated(t->field, sizeof t->field))                                                      \
    return ERR_SET(err, CT_ERR_INVALID_ARG, #field ": not NUL-terminated within %zu bytes",        \
                   sizeof t->field);
  FIXED(uid)
  FIXED(workload_key)
  FIXED(template_name)
  FIXED(template_version)
  FIXED(arch)
  FIXED(tuner)
  FIXED(session)
  FIXED(device.name)
  FIXED(device.nvrtc_version)
#undef FIXED
  ct_status st = workload_from_key(t->workload_key, w, err);
  if (st != CT_OK) {
    err_prefix(err, "workload_key");
    return st;
  }
  if (!t->template_name[0])
    return ERR_SET(err, CT_ERR_INVALID_ARG, "template_name: empty; a template name is required");
  if ((int)t->outcome < 0 || t->outcome >= OUT_COUNT)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "outcome: %d is out of range 0..%d", (int)t->outcome,
                   OUT_COUNT - 1);
  if (!t->config_json || !is_json(t->config_json))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "config_json: %s",
                   t->config_json ? "not JSON" : "NULL");
  if (t->tuner_settings && !is_json(t->tuner_settings))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "tuner_settings: not JSON (NULL when none)");
  if (!isfinite(t->median_us) || t->median_us < 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "median_us: %g, accepted a finite value >= 0",
                   t->median_us);
  if (t->outcome == OUT_OK && !(t->median_us > 0))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "median_us: 0 for an OK trial, accepted > 0");
  if (t->n_samples < 0 || (t->n_samples > 0 && !t->samples_us))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "n_samples: %d with samples_us %s, accepted >= 0",
                   t->n_samples, t->samples_us ? "set" : "NULL");
  for (int i = 0; i < t->n_samples; i++)
    if (!isfinite(t->samples_us[i]) || t->samples_us[i] < 0)
      return ERR_SET(err, CT_ERR_INVALID_ARG, "samples_us[%d]: %g, accepted a finite value >= 0", i,
                     t->samples_us[i]);
  if (!isfinite(t->compile_ms) || t->compile_ms < 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "compile_ms: %g, accepted a finite value >= 0",
                   t->compile_ms);
  if (!isfinite(t->timestamp)) return ERR_SET(err, CT_ERR_INVALID_ARG, "timestamp: not finite");
  if (!t->device.name[0])
    return ERR_SET(err, CT_ERR_INVALID_ARG, "device.name: empty; the device name is required");
  return CT_OK;
}

/* ---- opening and closing ----------------------------------------------------------------- */

/* Switch the file to WAL. The switch takes the write lock from inside the
 * statement's own read transaction, and there SQLite does not call the busy
 * handler (two readers upgrading would deadlock), so a process that races
 * another to the switch, or to a migration, gets SQLITE_BUSY at once. Each
 * try ends its read transaction, so retrying is safe; give up after as long
 * as the busy handler would wait. */
static ct_status set_wal(sqlite3 *h, ct_err *err) {
  int rc, waited_ms = 0;
  while ((rc = sqlite3_exec(h, "PRAGMA journal_mode = WAL", NULL, NULL, NULL)) == SQLITE_BUSY &&
         waited_ms < DB_STALL_MS) {
    int slept = sqlite3_sleep(DB_RETRY_MS);
    waited_ms += slept > 0 ? slept : DB_RETRY_MS;
  }
  if (rc == SQLITE_OK) return CT_OK;
  if (rc == SQLITE_BUSY)
    return ERR_SET(err, CT_ERR_DB, "PRAGMA journal_mode = WAL: %s after %d ms", sqlite3_errmsg(h),
                   waited_ms);
  return ERR_SET(err, CT_ERR_DB, "PRAGMA journal_mode = WAL: %s", sqlite3_errmsg(h));
}

/* usleep is gone from POSIX 2008. */
static void pause_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Size and modification time of the database and its -wal: a commit
 * appends to the -wal (or, rolled back, rewrites the file), so a change
 * means some writer is getting on. */
static void files_sig(const char *path, long long sig[4]) {
  char wal[4096];
  struct stat sb;
  memset(sig, 0, 4 * sizeof *sig);
  if (stat(path, &sb) == 0) {
    sig[0] = (long long)sb.st_size;
    sig[1] = (long long)sb.st_mtim.tv_sec * 1000000000ll + sb.st_mtim.tv_nsec;
  }
  int n = snprintf(wal, sizeof wal, "%s-wal", path);
  if (n > 0 && (size_t)n < sizeof wal && stat(wal, &sb) == 0) {
    sig[2] = (long long)sb.st_size;
    sig[3] = (long long)sb.st_mtim.tv_sec * 1000000000ll + sb.st_mtim.tv_nsec;
  }
}

/* SQLite's busy handler: called while another connection holds the lock
 * wanted; nonzero to try again. SQLite's own (sqlite3_busy_timeout) gives up
 * after a fixed time, however many commits the others make meanwhile, so a
 * writer behind a long import failed. This one waits while the files show
 * commits, looking every DB_POLL_US, and gives up after DB_STALL_MS of none.
 * Writers take turns through the pause each makes after a commit
 * (DB_YIELD_US), not through a queue: SQLite's locks have none. */
static int busy_wait(void *arg, int n_calls) {
  db *d = arg;
  long long sig[4];
  double now = now_ms();
  files_sig(d->path, sig);
  if (n_calls == 0 || memcmp(sig, d->busy_sig, sizeof sig) != 0) {
    memcpy(d->busy_sig, sig, sizeof sig);
    d->busy_since_ms = now;
    d->stalled = 0;
  } else if (now - d->busy_since_ms >= DB_STALL_MS) {
    d->stalled = 1;
    return 0;
  }
  pause_us(DB_POLL_US);
  return 1;
}

/* Whether path + suffix names an existing file. */
static int side_exists(const char *path, const char *suffix) {
  char side[4096];
  struct stat sb;
  int n = snprintf(side, sizeof side, "%s%s", path, suffix);
  return n > 0 && (size_t)n < sizeof side && stat(side, &sb) == 0;
}

/* Whether this process may create files in the folder of path (a read-only
 * install, or a read-only file system, may not). */
static int folder_writable(const char *path) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash) return access(".", W_OK) == 0;
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  if (n >= sizeof dir) return 1;
  memcpy(dir, path, n);
  dir[n] = '\0';
  return access(dir, W_OK) == 0;
}

/* "file:PATH?immutable=1" with PATH percent-encoded (a '?', '#' or '%' in
 * a file name would otherwise end or change the URI). Owned; NULL: no memory. */
static char *immutable_uri(const char *path) {
  static const char hex[] = "0123456789abcdef";
  char *uri = malloc(strlen(path) * 3 + sizeof "file:?immutable=1");
  if (!uri) return NULL;
  char *p = uri + sprintf(uri, "file:");
  for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
    if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
        strchr("/._-~", *c)) {
      *p++ = (char)*c;
    } else {
      *p++ = '%';
      *p++ = hex[*c >> 4];
      *p++ = hex[*c & 15];
    }
  }
  strcpy(p, "?immutable=1");
  return uri;
}

/* Open the SQLite handle of a readonly db. A WAL database needs its -wal and
 * -shm files, and SQLite creates them even for a reader: where the folder
 * cannot be written and there is no -wal, no WAL writer can exist (a writer
 * must create -wal), so the file is opened immutable (no locks, no side
 * files). Elsewhere a plain readonly open, tidied at close. */
static ct_status open_readonly(db *d, const char *path, ct_err *err) {
  ct_status st = CT_OK;
  int had_wal = side_exists(path, "-wal");
  char *uri = NULL;
  if (!had_wal && !folder_writable(path)) {
    if (!(uri = immutable_uri(path))) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    SQL_TRY(d->h, err, sqlite3_open_v2(uri, &d->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL));
  } else {
    d->tidy = 1;
    SQL_TRY(d->h, err, sqlite3_open_v2(path, &d->h, SQLITE_OPEN_READONLY, NULL));
  }
done:
  free(uri);
  return st;
}

/* After a readonly db is closed: the -wal and -shm that SQLite made for it
 * (a reader cannot checkpoint, so it never removes them) go away the way
 * SQLite itself removes them: the last connection to close takes the
 * exclusive lock, checkpoints and deletes. So, when the -wal is empty, a
 * writable connection is opened and closed; it writes nothing (an empty
 * -wal has no frame to checkpoint), and it deletes nothing while another
 * connection is open, since then it cannot take the lock. A -wal with
 * frames belongs to a writer and stays. Where the file cannot be written
 * SQLite opens it readonly and the side files stay. */
static void tidy_side_files(const char *path) {
  char wal[4096];
  struct stat sb;
  int n = snprintf(wal, sizeof wal, "%s-wal", path);
  if (n <= 0 || (size_t)n >= sizeof wal || stat(wal, &sb) != 0 || sb.st_size != 0) return;
  sqlite3 *h = NULL;
  /* No SQL_TRY: no caller to report to; a failure leaves the files as SQLite has them. */
  if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
    sqlite3_exec(h, "PRAGMA user_version", NULL, NULL, NULL);
  sqlite3_close(h);
}

/* The schema version and the check of the file's objects
 * (db_check_schema), both read in one transaction. Read apart, another
 * process's first migration could commit between them: version 0 read,
 * then its tables seen, and a database two processes were creating at
 * once was refused as another program's (1 open in 300, two processes
 * opening a new file together). */
static ct_status read_schema(sqlite3 *h, int *version, ct_err *err) {
  ct_status st = CT_OK;
  SQL_TRY(h, err, sqlite3_exec(h, "BEGIN", NULL, NULL, NULL));
  if ((st = db_user_version(h, version, err)) == CT_OK)
    st = *version > DB_SCHEMA_VERSION ? db_refuse_newer(*version, err)
                                      : db_check_schema(h, *version, err);
  /* Not SQL_TRY: a read transaction's end has nothing to report but the
   * reads' own status. */
  sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
done:
  return st;
}

ct_status db_open(const char *path, int readonly, db **out, ct_err *err) {
  ct_status st = CT_OK;
  db *d = NULL;
  int version = 0;
  struct stat sb;
  if (out) *out = NULL;
  if (!path || !path[0] || !out)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "db_open: NULL or empty path, or NULL out");
  if (readonly && stat(path, &sb) != 0) {
    if (errno == ENOENT) return ERR_SET(err, CT_ERR_NOT_FOUND, "%s: no such database", path);
    return ERR_SET(err, CT_ERR_IO, "%s: %s", path, strerror(errno));
  }
  /* SQLite reads a 0-byte file as an empty database; only a writer may give it the schema. */
  if (readonly && S_ISREG(sb.st_mode) && sb.st_size == 0)
    return ERR_SET(err, CT_ERR_DB,
                   "%s: empty file, not a convtune database yet: create it with a writing "
                   "command first (convtune import or tune)",
                   path);
  d = calloc(1, sizeof *d);
  if (!d || !(d->path = db_dup_str(path))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  d->readonly = readonly != 0;
  if (readonly) {
    if ((st = open_readonly(d, path, err)) != CT_OK) goto done;
  } else {
    SQL_TRY(d->h, err,
            sqlite3_open_v2(path, &d->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL));
  }
  SQL_TRY(d->h, err, sqlite3_busy_handler(d->h, busy_wait, d));
  /* The first reads: a file that is not a database, or another program's,
   * fails here, before anything is written or converted. */
  if ((st = read_schema(d->h, &version, err)) != CT_OK) goto done;
  if (readonly && version < DB_READ_VERSION) {
    if (version == 0)
      st = ERR_SET(err, CT_ERR_DB,
                   "no convtune schema in it yet: create it with a writing command first "
                   "(convtune import or tune)");
    else
      st = ERR_SET(err, CT_ERR_DB,
                   "database schema %d is older than %d: a readonly open does not migrate; "
                   "open it with a writing command first (convtune import or tune)",
                   version, DB_READ_VERSION);
    goto done;
  }
  d->version = readonly ? version : DB_SCHEMA_VERSION;
  SQL_TRY(d->h, err, sqlite3_exec(d->h, "PRAGMA foreign_keys = ON", NULL, NULL, NULL));
  if (!readonly) {
    if (version < DB_SCHEMA_VERSION && (st = db_migrate(d->h, err)) != CT_OK) goto done;
    /* WAL: readers never block the writer, and a commit is one append. The
     * mode is stored in the file, so later opens find it already set. */
    if ((st = set_wal(d->h, err)) != CT_OK) goto done;
  }
  *out = d;
  d = NULL;
done:
  if (st != CT_OK) err_prefix(err, "%s", path);
  db_close(d);
  return st;
}

void db_close(db *d) {
  if (!d) return;
  /* Not SQL_TRY: every statement is finalized by the function that made it,
   * so close cannot be refused for a pending one, and there is nothing left
   * to report to. */
  sqlite3_close(d->h);
  if (d->tidy) tidy_side_files(d->path);
  free(d->path);
  free(d);
}

ct_status db_refuse_readonly(const db *d, const char *what, ct_err *err) {
  return ERR_SET(err, CT_ERR_DB, "%s: opened readonly: cannot %s", d->path, what);
}

void db_write_failed(db *d, ct_status st, ct_err *err) {
  if (st == CT_ERR_DB && d->stalled)
    err_prefix(err, "database %s: another writer held the lock for %d s without committing",
               d->path, DB_STALL_MS / 1000);
  else if (st == CT_ERR_DB)
    err_prefix(err, "database %s", d->path);
}

/* ---- inserting ------------------------------------------------------------------------ */

static const char SQL_SEL_WORKLOAD[] = "SELECT id FROM workloads WHERE key = ?1";
static const char SQL_INS_WORKLOAD[] = "INSERT INTO workloads (key, json) VALUES (?1, ?2)";
static const char SQL_SEL_DEVICE[] =
    "SELECT id FROM devices WHERE name = ?1 AND cc_major = ?2 AND cc_minor = ?3 AND sm_count = ?4"
    " AND driver_version = ?5 AND runtime_version = ?6 AND nvrtc_version = ?7";
static const char SQL_INS_DEVICE[] =
    "INSERT INTO devices (name, cc_major, cc_minor, sm_count, driver_version, runtime_version,"
    " nvrtc_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char SQL_SEL_TEMPLATE[] = "SELECT id FROM templates WHERE name = ?1 AND version = ?2";
static const char SQL_INS_TEMPLATE[] = "INSERT INTO templates (name, version) VALUES (?1, ?2)";
static const char SQL_INS_TRIAL[] =
    "INSERT INTO trials (uid, workload_id, device_id, template_id, config_index, config_json,"
    " outcome, error, median_us, samples_us, n_samples, compile_ms, options, arch, tuner,"
    " tuner_settings, session, timestamp)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
    " ON CONFLICT (uid) DO NOTHING";

/* The statements of one insert batch. */
typedef struct inserter {
  sqlite3_stmt *sel_w, *ins_w, *sel_d, *ins_d, *sel_t, *ins_t, *ins_trial;
} inserter;

/* Step sel (bound by the caller): its id into *id, or 0 when there is no row; reset. */
static ct_status select_id(sqlite3 *h, sqlite3_stmt *sel, int64_t *id, ct_err *err) {
  ct_status st = CT_OK;
  int rc;
  *id = 0;
  SQL_STEP(h, err, sel, rc);
  if (rc == SQLITE_ROW) *id = sqlite3_column_int64(sel, 0);
  SQL_TRY(h, err, sqlite3_reset(sel));
done:
  return st;
}

/* Step ins (bound by the caller) and return the new row's id; reset. */
static ct_status insert_id(sqlite3 *h, sqlite3_stmt *ins, int64_t *id, ct_err *err) {
  ct_status st = CT_OK;
  int rc;
  SQL_STEP(h, err, ins, rc);
  *id = sqlite3_last_insert_rowid(h);
  SQL_TRY(h, err, sqlite3_reset(ins));
done:
  return st;
}

static ct_status workload_id(sqlite3 *h, inserter *q, const char *key, const ct_workload *w,
                             int64_t *id, ct_err *err) {
  ct_status st = CT_OK;
  cJSON *j = NULL;
  char *text = NULL;
  SQL_TRY(h, err, sqlite3_bind_text(q->sel_w, 1, key, -1, SQLITE_STATIC));
  if ((st = select_id(h, q->sel_w, id, err)) != CT_OK || *id) goto done;
  j = workload_to_json(w);
  text = j ? cJSON_PrintUnformatted(j) : NULL;
  if (!text) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "workload %s: no memory for its JSON", key);
    goto done;
  }
  SQL_TRY(h, err, sqlite3_bind_text(q->ins_w, 1, key, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(q->ins_w, 2, text, -1, SQLITE_STATIC));
  st = insert_id(h, q->ins_w, id, err);
done:
  cJSON_Delete(j);
  free(text);
  return st;
}

static ct_status device_id(sqlite3 *h, inserter *q, const db_device *dev, int64_t *id,
                           ct_err *err) {
  ct_status st = CT_OK;
  for (int pass = 0; pass < 2; pass++) {
    sqlite3_stmt *s = pass ? q->ins_d : q->sel_d;
    SQL_TRY(h, err, sqlite3_bind_text(s, 1, dev->name, -1, SQLITE_STATIC));
    SQL_TRY(h, err, sqlite3_bind_int(s, 2, dev->cc_major));
    SQL_TRY(h, err, sqlite3_bind_int(s, 3, dev->cc_minor));
    SQL_TRY(h, err, sqlite3_bind_int(s, 4, dev->sm_count));
    SQL_TRY(h, err, sqlite3_bind_int(s, 5, dev->driver_version));
    SQL_TRY(h, err, sqlite3_bind_int(s, 6, dev->runtime_version));
    SQL_TRY(h, err, sqlite3_bind_text(s, 7, dev->nvrtc_version, -1, SQLITE_STATIC));
    if (pass) {
      st = insert_id(h, s, id, err);
    } else if ((st = select_id(h, s, id, err)) == CT_OK && *id) {
      break;
    }
    if (st != CT_OK) goto done;
  }
done:
  return st;
}

static ct_status template_id(sqlite3 *h, inserter *q, const trial *t, int64_t *id, ct_err *err) {
  ct_status st = CT_OK;
  for (int pass = 0; pass < 2; pass++) {
    sqlite3_stmt *s = pass ? q->ins_t : q->sel_t;
    SQL_TRY(h, err, sqlite3_bind_text(s, 1, t->template_name, -1, SQLITE_STATIC));
    SQL_TRY(h, err, sqlite3_bind_text(s, 2, t->template_version, -1, SQLITE_STATIC));
    if (pass) {
      st = insert_id(h, s, id, err);
    } else if ((st = select_id(h, s, id, err)) == CT_OK && *id) {
      break;
    }
    if (st != CT_OK) goto done;
  }
done:
  return st;
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* 32 hex digits: SQLite's randomness mixed with the process id, the clock
 * and seq. SQLite's generator is per process, and a process forked after it
 * was seeded repeats its parent's stream: the pid keeps the two apart. */
static void new_uid(char uid[40], uint64_t seq) {
  unsigned char r[16];
  struct timespec ts;
  sqlite3_randomness((int)sizeof r, r);
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t mix[2] = {splitmix64(((uint64_t)getpid() << 32) ^ seq),
                     splitmix64((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec)};
  for (int i = 0; i < 16; i++) {
    unsigned b = r[i] ^ (unsigned)((mix[i / 8] >> (8 * (i % 8))) & 0xff);
    snprintf(uid + 2 * i, 3, "%02x", b);
  }
}

/* Bind every column of trial t (with its ids and uid) to the insert statement. */
static ct_status bind_trial(sqlite3 *h, sqlite3_stmt *s, const trial *t, const char *uid,
                            const int64_t ids[3], const char *samples, ct_err *err) {
  ct_status st = CT_OK;
  SQL_TRY(h, err, sqlite3_bind_text(s, 1, uid, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_int64(s, 2, ids[0]));
  SQL_TRY(h, err, sqlite3_bind_int64(s, 3, ids[1]));
  SQL_TRY(h, err, sqlite3_bind_int64(s, 4, ids[2]));
  /* The bit pattern: SQLite integers are int64, and the cast back restores it. */
  SQL_TRY(h, err, sqlite3_bind_int64(s, 5, (sqlite3_int64)t->config_index));
  SQL_TRY(h, err, sqlite3_bind_text(s, 6, t->config_json, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 7, outcome_name(t->outcome), -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 8, t->error, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_double(s, 9, t->median_us));
  SQL_TRY(h, err, sqlite3_bind_text(s, 10, samples, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_int(s, 11, t->n_samples));
  SQL_TRY(h, err, sqlite3_bind_double(s, 12, t->compile_ms));
  SQL_TRY(h, err, sqlite3_bind_text(s, 13, t->options, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 14, t->arch, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 15, t->tuner, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 16, t->tuner_settings, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 17, t->session, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_double(s, 18, t->timestamp));
done:
  return st;
}

ct_status db_insert_trials(db *d, const trial *trials, int n, int *n_skipped, ct_err *err) {
  ct_status st = CT_OK;
  inserter q = {0};
  int in_tx = 0, skipped = 0, committed = 0, rc;
  char *samples = NULL;
  int64_t ids[3] = {0, 0, 0}; /* workload, device, template of the previous trial */
  sqlite3 *h = d ? d->h : NULL;
  ct_workload w;
  if (n_skipped) *n_skipped = 0;
  if (!d || n < 0 || (n > 0 && !trials))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "db_insert_trials: NULL database or trials, or n < 0");
  if (d->readonly) return db_refuse_readonly(d, "insert trials", err);
  if (n == 0) return CT_OK;
  d->stalled = 0;
  /* Every trial is checked before the first insert: a bad one inserts
   * nothing, whichever batch it would have fallen in. */
  for (int i = 0; i < n; i++)
    if ((st = db_validate_trial(&trials[i], &w, err)) != CT_OK) {
      err_prefix(err, "trial %d of %d", i, n);
      return st;
    }
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_SEL_WORKLOAD, -1, &q.sel_w, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_INS_WORKLOAD, -1, &q.ins_w, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_SEL_DEVICE, -1, &q.sel_d, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_INS_DEVICE, -1, &q.ins_d, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_SEL_TEMPLATE, -1, &q.sel_t, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_INS_TEMPLATE, -1, &q.ins_t, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_INS_TRIAL, -1, &q.ins_trial, NULL));
  /* Batches of at most DB_HOLD_MS each, so that another writer waits at most
   * that long (busy_wait) rather than for the whole insert. An insert cut
   * short (killed, disk full) leaves whole batches; records keep their
   * uids, so inserting the same trials again adds only the rest. */
  for (int i = 0; i < n;) {
    if (i > 0) pause_us(DB_YIELD_US); /* a waiting writer takes the lock here */
    /* IMMEDIATE: the write lock is taken here, under busy_wait. A deferred
     * transaction would take it at the first insert, and SQLite refuses that
     * upgrade at once (no waiting) when another writer holds it. */
    SQL_TRY(h, err, sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL));
    in_tx = 1;
    /* prev starts again with each transaction, so its first trial's ids are
     * looked up again: three selects per batch. */
    const trial *prev = NULL;
    double begun = now_ms();
    for (; i < n && (prev == NULL || now_ms() - begun < DB_HOLD_MS); i++) {
      const trial *t = &trials[i];
      char uid[40];
      /* A batch is nearly always one task on one device: look ids up on change. */
      if (!prev || strcmp(prev->workload_key, t->workload_key) != 0)
        if ((st = workload_from_key(t->workload_key, &w, err)) != CT_OK ||
            (st = workload_id(h, &q, t->workload_key, &w, &ids[0], err)) != CT_OK)
          goto done;
      if (!prev || memcmp(&prev->device, &t->device, sizeof t->device) != 0)
        if ((st = device_id(h, &q, &t->device, &ids[1], err)) != CT_OK) goto done;
      if (!prev || strcmp(prev->template_name, t->template_name) != 0 ||
          strcmp(prev->template_version, t->template_version) != 0)
        if ((st = template_id(h, &q, t, &ids[2], err)) != CT_OK) goto done;
      if (t->uid[0])
        memcpy(uid, t->uid, sizeof uid);
      else
        new_uid(uid, (uint64_t)i);
      samples = db_samples_text(t->samples_us, t->n_samples);
      if (!samples) {
        st = ERR_SET(err, CT_ERR_NO_MEMORY, "trial %d: no memory for %d samples", i, t->n_samples);
        goto done;
      }
      if ((st = bind_trial(h, q.ins_trial, t, uid, ids, samples, err)) != CT_OK) goto done;
      SQL_STEP(h, err, q.ins_trial, rc);
      if (sqlite3_changes(h) == 0) skipped++; /* the uid is present: ON CONFLICT DO NOTHING */
      SQL_TRY(h, err, sqlite3_reset(q.ins_trial));
      free(samples);
      samples = NULL;
      prev = t;
    }
    SQL_TRY(h, err, sqlite3_exec(h, "COMMIT", NULL, NULL, NULL));
    in_tx = 0;
    committed = i;
  }
  if (n_skipped) *n_skipped = skipped;
done:
  /* Not SQL_TRY: it would jump back here, and the first error is the one to report. */
  if (in_tx) sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_finalize(q.sel_w);
  sqlite3_finalize(q.ins_w);
  sqlite3_finalize(q.sel_d);
  sqlite3_finalize(q.ins_d);
  sqlite3_finalize(q.sel_t);
  sqlite3_finalize(q.ins_t);
  sqlite3_finalize(q.ins_trial);
  free(samples);
  /* A failed write names the database: a caller's own prefix (the file
   * imported, the workload tuned) would otherwise be taken for the culprit. */
  if (st != CT_OK && committed > 0)
    err_prefix(err,
               "%d of %d trials committed before the failure; inserting them again adds "
               "the rest",
               committed, n);
  db_write_failed(d, st, err);
  return st;
}
