/*
 * db.h: the SQLite database of convtune: every measured trial, with its
 * provenance, the devices it was measured on, the workloads and templates,
 * a kernel cache (the cubin of each workload's best config), and the picks
 * of `convtune tune --model` (per workload and device, the OK trial that
 * made a model's chain fastest, which is not always the fastest alone).
 *
 * One file, WAL mode, a busy timeout, the schema version in
 * PRAGMA user_version with forward migrations. Writers take one transaction
 * per batch of trials. Best = lowest median among OK trials for (workload,
 * device); else for the same compute capability. Every trial is kept.
 * Export and import are JSON lines, one trial or pick per line, versioned
 * by a "format" field, and import is idempotent (a trial already present, by
 * its uid, is skipped; so is a pick already there). A database of a newer
 * schema than this code knows is refused (CT_ERR_DB), never written.
 */
#ifndef CT_DB_DB_H
#define CT_DB_DB_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/workload.h"

#define DB_SCHEMA_VERSION 3
/* The oldest schema a readonly open reads as it is (it never migrates):
 * version 3 only added the picks table, which reads as empty below it. */
#define DB_READ_VERSION 2
/* The JSON lines' "format": a trial is a line of format 1, a pick one of
 * format 2 with "record": "pick" (after the trials), so that a convtune
 * older than the picks refuses a pick line by its format ("newer than this
 * convtune knows") rather than misreading it. Import reads both. */
#define DB_TRIAL_FORMAT  1
#define DB_PICK_FORMAT   2
#define DB_EXPORT_FORMAT 2 /* the newest format import reads */

typedef enum outcome {
  OUT_OK = 0,
  OUT_INVALID,       /* rejected before compiling */
  OUT_COMPILE_ERROR, /* NVRTC failed */
  OUT_LAUNCH_ERROR,  /* load or launch refused */
  OUT_RUNTIME_ERROR, /* the kernel faulted (sticky error) */
  OUT_WRONG_ANSWER,  /* ran, output differs from the reference */
  OUT_TIMEOUT,       /* did not finish within the per-trial timeout */
  OUT_COUNT
} outcome;

/* "OK", "INVALID", "COMPILE_ERROR", ...; and back (-1 when unknown). */
const char *outcome_name(outcome o);
int outcome_from_name(const char *name);

/* The identity of a device; records are per device. */
typedef struct db_device {
  char name[256]; /* "NVIDIA H200" */
  int cc_major, cc_minor;
  int sm_count;
  int driver_version;  /* 13000 */
  int runtime_version; /* cudart, 13000 */
  char nvrtc_version[16];
} db_device;

/* One trial. Strings marked owned are malloc'd and freed by trial_free;
 * fixed buffers are copied in. */
typedef struct trial {
  char uid[40]; /* unique id, e.g. session + sequence; set by db_insert_trials if "" */
  char workload_key[CT_KEY_MAX];
  char template_name[48];
  char template_version[17];
  uint64_t config_index;
  char *config_json; /* owned: the knob values, compact JSON */
  outcome outcome;
  char *error;      /* owned, may be NULL: log excerpt (at most ~2 KB) */
  double median_us; /* OK only; else 0 */
  int n_samples;
  double *samples_us; /* owned: every repeat's time per launch, n_samples of them */
  double compile_ms;
  char *options;        /* owned: the NVRTC options, space separated */
  char arch[16];        /* "sm_90": what the cubin was compiled for */
  char tuner[32];       /* "xgb", "random", "grid", "ga", "import" */
  char *tuner_settings; /* owned, may be NULL: JSON of the tuner's settings */
  char session[40];     /* the tuning run that produced it */
  double timestamp;     /* unix seconds */
  db_device device;     /* where it was measured */
} trial;

/* Free what a trial owns and zero those pointers; NULL accepted. */
void trial_free(trial *t);

typedef struct db db;

/* Open (create if missing, unless readonly) the database at path, migrating
 * an older schema (not when readonly). CT_ERR_DB with a message for a file
 * that is not a database or another program's, is corrupt, or has a newer
 * schema, and when readonly for an empty file or a schema older than
 * DB_READ_VERSION (one from there up to DB_SCHEMA_VERSION is read as it
 * is, the tables it lacks as empty; a readonly open creates, migrates and
 * converts nothing, and leaves no
 * -wal/-shm behind where SQLite allows; a WAL database in a folder this
 * process cannot write is read as immutable). CT_ERR_NOT_FOUND for a
 * missing file when readonly. Owned: db_close. */
ct_status db_open(const char *path, int readonly, db **out, ct_err *err);
void db_close(db *d);

/* Insert trials. Every trial is checked first, and one that is invalid
 * inserts none. They are committed in batches that hold the write lock at
 * most ~100 ms each, so that other writers wait that long, not for the
 * whole insert; a failure midway (or a kill) leaves whole batches, and the
 * message says how many trials were committed. Workloads, templates and
 * devices are added as needed. A trial whose uid exists is skipped (counted
 * in *n_skipped, which may be NULL), so inserting again completes a cut
 * insert. A writer waits for another as long as that one commits, and fails
 * (CT_ERR_DB, saying so) after 10 s without a commit. */
ct_status db_insert_trials(db *d, const trial *trials, int n, int *n_skipped, ct_err *err);

/* Where a best trial came from. */
typedef enum db_match { DB_MATCH_NONE, DB_MATCH_DEVICE, DB_MATCH_CC } db_match;

/* The best OK trial of workload_key: on a device of this name and compute
 * capability, else on any device of the same compute capability. Template
 * name and version filters: NULL for any. *match says which;
 * CT_ERR_NOT_FOUND when none. out is owned by the caller (trial_free). */
ct_status db_best(db *d, const char *workload_key, const db_device *dev, const char *template_name,
                  const char *template_version, trial *out, db_match *match, ct_err *err);

/* The same for records a template change retired: the best OK trial of
 * workload_key with template_name under any version but current_version
 * (both required), this device's, else its compute capability's. */
ct_status db_best_retired(db *d, const char *workload_key, const db_device *dev,
                          const char *template_name, const char *current_version, trial *out,
                          db_match *match, ct_err *err);

/* Every trial of workload_key (any device when dev is NULL; else that
 * device name and cc), optionally of one template and template version
 * (NULL for any), in insertion order. Owned array: trials_free. */
ct_status db_trials(db *d, const char *workload_key, const db_device *dev,
                    const char *template_name, const char *template_version, trial **out, int *n,
                    ct_err *err);
/* Trials of other workloads of a template version on a device (for
 * transfer learning), at most limit of them, newest first. */
ct_status db_trials_other(db *d, const char *workload_key, const db_device *dev,
                          const char *template_name, const char *template_version, int limit,
                          trial **out, int *n, ct_err *err);
void trials_free(trial *t, int n);

/* Reads (db_best, db_trials, db_trials_other, db_list, db_picked,
 * db_list_picks, db_export) skip a malformed row (an unknown outcome, an
 * over-long text, a samples/n_samples mismatch: written by something other
 * than convtune) rather than fail the whole read; db_best then answers the
 * next best. The number skipped since the last call, the first one's
 * message into msg (may be NULL); resets the count. */
int db_bad_rows(db *d, char *msg, size_t size);

/* Kernel cache: the cubin of (template version, options, arch). Store
 * replaces; load returns CT_ERR_NOT_FOUND when absent. Owned *data: free(). */
ct_status db_store_kernel(db *d, const char *template_version, const char *options,
                          const char *arch, const void *data, size_t size, ct_err *err);
ct_status db_load_kernel(db *d, const char *template_version, const char *options, const char *arch,
                         void **data, size_t *size, ct_err *err);

/* One row of db_list: a tuned workload with its best on a device. */
typedef struct db_summary {
  char workload_key[CT_KEY_MAX];
  char device[256];
  char template_name[48];
  double best_us;
  int n_trials, n_ok;
} db_summary;
/* Every (workload, device) with at least one trial; owned array: free(). */
ct_status db_list(db *d, db_summary **out, int *n, ct_err *err);

/* A config chosen for a workload by its time in a model's chain. */
typedef struct db_pick {
  char workload_key[CT_KEY_MAX];
  char trial_uid[40]; /* the OK trial of workload_key it serves */
  double chain_us;    /* the chain with the picks */
  double base_us;     /* the chain with every workload's fastest record */
  char model[256];    /* which chain: "mobilenetv2_qdq.onnx, batch 32" */
  char session[40];   /* the tuning run that picked it */
  double timestamp;   /* unix seconds */
} db_pick;

/* Replace dev's picks (its name and compute capability) of the workloads
 * keys[0..n_keys) by picks[0..n_picks), in one IMMEDIATE transaction: every
 * key's old pick is deleted, then each pick inserted. Each pick's
 * workload_key must be one of keys (one pick per key), its trial_uid an OK
 * trial of that workload (any device), its times finite and > 0: else
 * CT_ERR_INVALID_ARG naming the pick and field, and nothing written.
 * n_picks 0 clears them; a key with no workload row yet is fine to clear.
 * CT_ERR_DB on a readonly database (db_refuse_readonly), and as
 * db_insert_trials when another writer holds the lock too long. */
ct_status db_set_picks(db *d, const db_device *dev, const char *const *keys, int n_keys,
                       const db_pick *picks, int n_picks, ct_err *err);

/* The pick of workload_key for a device of dev's name and compute
 * capability: its trial into *out (owned: trial_free) and the pick into
 * *pick (may be NULL); *found 0 (out and *pick zeroed) when none, or when
 * the row is malformed (counted by db_bad_rows). Fails only on a database
 * error (and CT_ERR_INVALID_ARG for NULL arguments). */
ct_status db_picked(db *d, const char *workload_key, const db_device *dev, trial *out,
                    db_pick *pick, int *found, ct_err *err);

/* One row of db_list_picks: a pick, the device it is for, and its trial's
 * template, config (truncated to the buffer) and median alone. */
typedef struct db_pick_row {
  db_pick p;
  char device_name[256];
  int cc_major, cc_minor;
  char template_name[48];
  char config_json[1024];
  double alone_us; /* the trial's median_us */
} db_pick_row;
/* Every pick of every device (for `convtune list`), ordered by workload key,
 * device name and cc; owned array: free(). A malformed row is skipped
 * (db_bad_rows). */
ct_status db_list_picks(db *d, db_pick_row **out, int *n, ct_err *err);

/* What db_export wrote, or what db_import did. */
typedef struct db_io_counts {
  int trials;         /* export: written; import: inserted */
  int trials_present; /* import: already in the database, skipped */
  int picks;          /* export: written; import: taken */
  int picks_present;  /* import: the same pick already in the database */
  int picks_kept;     /* import: not taken, the database's pick of that workload
                       * and device being as new or newer (its timestamp) */
} db_io_counts;

/* Export every trial (of one workload when key is not NULL) as JSON lines to
 * f, then the picks (of that workload) with their device; import JSON lines
 * from f (idempotent). Import validates each line (a trial's template must
 * be one of convtune's, of the workload's op; a pick must name an OK trial
 * of its workload, in f or in the database) and reports the line number of
 * the first bad one, importing nothing then (a large import commits its
 * trials in batches, then its picks in one transaction: see
 * db_insert_trials); two different trials of one uid in f are a conflict
 * (CT_ERR_PARSE naming both lines), the same trial twice is not; so is a
 * trial whose uid the database holds with other values (CT_ERR_PARSE naming
 * the line and the field), and two different picks of one workload and
 * device in f. A pick replaces the database's pick of its workload and
 * device only when it is newer (its timestamp), as a later `tune --model`
 * replaces an earlier one's; else it is counted in picks_kept. counts may
 * be NULL. */
ct_status db_export(db *d, const char *workload_key, FILE *f, db_io_counts *counts, ct_err *err);
ct_status db_import(db *d, FILE *f, db_io_counts *counts, ct_err *err);

/* A trial as one JSON object (the export line) and back. */
cJSON *trial_to_json(const trial *t);
ct_status trial_from_json(const cJSON *j, trial *out, ct_err *err);

#endif
