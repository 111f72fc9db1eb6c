/*
 * db_int.h: what the files of the db module share, private to db/: the db
 * handle, the SQLite error macros, the columns of a trial read, and the
 * functions one file defines for another. db.c: open and close, the busy
 * handler, the batching writer; db_schema.c: schema, versions, migrations;
 * db_query.c: the reads and the kernel cache; db_jsonl.c: trial <-> JSON,
 * export and import; db_picks.c: the picks of tune --model.
 *
 * Invariants: every SQLite call goes through SQL_TRY / SQL_STEP; a function
 * here reports on err like the public ones (status and message).
 * Cost: declarations only.
 */
#ifndef CT_DB_DB_INT_H
#define CT_DB_DB_INT_H

#include <sqlite3.h>

#include "db/db.h"

struct db {
  sqlite3 *h;
  int readonly;
  int version; /* the schema as opened: DB_SCHEMA_VERSION, or older readonly */
  int tidy;   /* readonly and not immutable: remove an empty -wal and its -shm at close */
  char *path; /* owned copy, for messages */
  int n_bad;  /* malformed rows skipped by reads since db_bad_rows */
  char bad_msg[CT_ERRMSG_MAX]; /* the first of them */
  /* busy_wait's state: the files' signature when last seen to change, when,
   * and whether it gave up. */
  long long busy_sig[4];
  double busy_since_ms;
  int stalled;
};

/* On failure: record the call's text and SQLite's own message on err, set
 * the function's `st`, jump to its one cleanup label `done`. Functions using
 * them declare `ct_status st = CT_OK;` and end with `done: ...; return st;`. */
#define SQL_TRY(h, err, call)                                                                      \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != SQLITE_OK) {                                                                        \
      st = err_set((err), CT_ERR_DB, __FILE__, __LINE__, "%s: %s", #call, sqlite3_errmsg(h));      \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

/* sqlite3_step(stmt) into rc: SQLITE_ROW and SQLITE_DONE pass, anything else fails as above. */
#define SQL_STEP(h, err, stmt, rc)                                                                 \
  do {                                                                                             \
    (rc) = sqlite3_step(stmt);                                                                     \
    if ((rc) != SQLITE_ROW && (rc) != SQLITE_DONE) {                                               \
      st = err_set((err), CT_ERR_DB, __FILE__, __LINE__, "sqlite3_step(%s): %s", #stmt,            \
                   sqlite3_errmsg(h));                                                             \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

/* The columns db_row_trial reads, in its order. */
#define TRIAL_SELECT                                                                               \
  "SELECT t.uid, w.key, p.name, p.version, t.config_index, t.config_json, t.outcome, t.error,"     \
  " t.median_us, t.samples_us, t.n_samples, t.compile_ms, t.options, t.arch, t.tuner,"             \
  " t.tuner_settings, t.session, t.timestamp, d.name, d.cc_major, d.cc_minor, d.sm_count,"         \
  " d.driver_version, d.runtime_version, d.nvrtc_version"                                          \
  " FROM trials t JOIN workloads w ON w.id = t.workload_id"                                        \
  " JOIN devices d ON d.id = t.device_id JOIN templates p ON p.id = t.template_id"

/* db.c. An owned copy of s (free); NULL for NULL or out of memory. */
char *db_dup_str(const char *s);
/* Room in *v (*cap elements of elem bytes allocated) for element count:
 * when full, doubled (from 16); 0 when out of memory (*v kept). */
int db_grow(void **v, int count, int *cap, size_t elem);
/* The checks every trial passes before an insert (the parsed workload into *w). */
ct_status db_validate_trial(const trial *t, ct_workload *w, ct_err *err);
/* CT_ERR_DB: d was opened readonly, so it cannot do what. */
ct_status db_refuse_readonly(const db *d, const char *what, ct_err *err);
/* After a write transaction failed with st: a CT_ERR_DB message is
 * prefixed with the database, and with the hung writer when the busy
 * handler gave up waiting for it. Clear d->stalled before the write. */
void db_write_failed(db *d, ct_status st, ct_err *err);

/* db_schema.c. PRAGMA user_version into *out. */
ct_status db_user_version(sqlite3 *h, int *out, ct_err *err);
/* CT_ERR_DB unless the file is convtune's (or empty) at this version. */
ct_status db_check_schema(sqlite3 *h, int version, ct_err *err);
/* CT_ERR_DB: a schema newer than this code knows. */
ct_status db_refuse_newer(int version, ct_err *err);
/* Bring the schema to DB_SCHEMA_VERSION in one transaction. */
ct_status db_migrate(sqlite3 *h, ct_err *err);

/* db_query.c. A text column into a fixed buffer of size bytes ("" for
 * NULL); CT_ERR_DB when it does not fit (written by something else): never
 * truncated. */
ct_status db_col_fixed(sqlite3_stmt *s, int col, char *buf, size_t size, ct_err *err);
/* One row of TRIAL_SELECT into *t (owned: trial_free). */
ct_status db_row_trial(sqlite3_stmt *s, trial *t, ct_err *err);
/* Whether a read's failure st is a malformed row: counted on d and skipped. */
int db_bad_row(db *d, ct_status st, const ct_err *row_err);

/* db_picks.c. Whether a and b are the same pick, every field. */
int db_pick_equal(const db_pick *a, const db_pick *b);
/* CT_OK when p's trial_uid is an OK trial of its workload in
 * d, else CT_ERR_INVALID_ARG prefixed by what ("line 12"). */
ct_status db_pick_trial_check(db *d, const db_pick *p, const char *what, ct_err *err);
/* db_import's picks v[0..n) (lines[i] is v[i]'s line in the file), in one
 * IMMEDIATE transaction: a pick equal to the database's of its workload and
 * device is present, one no newer than it is kept out, any other replaces
 * it (db_import in db.h); the three counts into counts (may be NULL). */
ct_status db_import_picks(db *d, const db_pick_row *v, const int *lines, int n,
                          db_io_counts *counts, ct_err *err);

/* db_jsonl.c. The samples as a JSON list text; owned (free), NULL when out of memory. */
char *db_samples_text(const double *v, int n);
/* A JSON list of finite numbers into an owned array (NULL when empty). */
ct_status db_samples_from_json(const cJSON *a, double **out, int *n, const char *what, ct_err *err);

#endif
