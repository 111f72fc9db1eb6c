/*
 * db_schema.c: the schema of the database (db.h), its version checks and
 * its migrations: what db_open reads and checks before it writes anything.
 *
 * Invariants: PRAGMA user_version is the schema version; migrations[v]
 * takes a database from v to v + 1, all steps in one IMMEDIATE transaction,
 * and a version newer than DB_SCHEMA_VERSION is refused before anything is
 * written, as is another program's SQLite file (checked by its tables before
 * the switch to WAL). A readonly open never migrates: db_open refuses an
 * older schema there.
 * Cost: two small reads per open; a migration once per database.
 */
#include <stdio.h>

#include <sqlite3.h>

#include "db/db.h"
#include "db/db_int.h"

/* ---- the schema ------------------------------------------------------------- */

ct_status db_user_version(sqlite3 *h, int *out, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  int rc;
  SQL_TRY(h, err, sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &s, NULL));
  SQL_STEP(h, err, s, rc);
  *out = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
done:
  sqlite3_finalize(s);
  return st;
}

static const char SQL_SCHEMA_1[] =
    "CREATE TABLE workloads ("
    "  id INTEGER PRIMARY KEY,"
    "  key TEXT UNIQUE NOT NULL,"
    "  json TEXT NOT NULL);"
    "CREATE TABLE devices ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  cc_major INTEGER NOT NULL,"
    "  cc_minor INTEGER NOT NULL,"
    "  sm_count INTEGER NOT NULL,"
    "  driver_version INTEGER NOT NULL,"
    "  runtime_version INTEGER NOT NULL,"
    "  nvrtc_version TEXT NOT NULL,"
    "  UNIQUE (name, cc_major, cc_minor, sm_count, driver_version, runtime_version,"
    "          nvrtc_version));"
    "CREATE TABLE templates ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  UNIQUE (name, version));"
    /* config_index: the uint64 index's bit pattern as an int64. samples_us:
     * a JSON list with 17-digit precision. outcome: outcome_name(). */
    "CREATE TABLE trials ("
    "  id INTEGER PRIMARY KEY,"
    "  uid TEXT UNIQUE NOT NULL,"
    "  workload_id INTEGER NOT NULL REFERENCES workloads (id),"
    "  device_id INTEGER NOT NULL REFERENCES devices (id),"
    "  template_id INTEGER NOT NULL REFERENCES templates (id),"
    "  config_index INTEGER NOT NULL,"
    "  config_json TEXT NOT NULL,"
    "  outcome TEXT NOT NULL,"
    "  error TEXT,"
    "  median_us REAL NOT NULL,"
    "  samples_us TEXT NOT NULL,"
    "  n_samples INTEGER NOT NULL,"
    "  compile_ms REAL NOT NULL,"
    "  options TEXT,"
    "  arch TEXT NOT NULL,"
    "  tuner TEXT NOT NULL,"
    "  tuner_settings TEXT,"
    "  session TEXT NOT NULL,"
    "  timestamp REAL NOT NULL);"
    "CREATE INDEX trials_workload_device ON trials (workload_id, device_id);"
    "CREATE INDEX trials_template ON trials (template_id);"
    "CREATE TABLE kernels ("
    "  template_version TEXT NOT NULL,"
    "  options TEXT NOT NULL,"
    "  arch TEXT NOT NULL,"
    "  cubin BLOB NOT NULL,"
    "  PRIMARY KEY (template_version, options, arch)) WITHOUT ROWID;";

/* Version 0 -> 1: an empty database gets the schema. A version-0 database
 * that already has tables is somebody else's: refused, not written into. */
static ct_status migrate_0_to_1(sqlite3 *h, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  int rc;
  SQL_TRY(h, err, sqlite3_prepare_v2(h, "SELECT count(*) FROM sqlite_master", -1, &s, NULL));
  SQL_STEP(h, err, s, rc);
  if (rc == SQLITE_ROW && sqlite3_column_int(s, 0) > 0) {
    st = ERR_SET(err, CT_ERR_DB, "not a convtune database: schema version 0 but %d objects in it",
                 sqlite3_column_int(s, 0));
    goto done;
  }
  SQL_TRY(h, err, sqlite3_exec(h, SQL_SCHEMA_1, NULL, NULL, NULL));
done:
  sqlite3_finalize(s);
  return st;
}

/* Version 1 -> 2: an index that lets the best-trial query walk one
 * workload's OK trials in median order and stop at the first match, instead
 * of reading every trial row (0.5 ms for 200 trials: half the 1 ms budget
 * of a dispatch library's first call). */
static ct_status migrate_1_to_2(sqlite3 *h, ct_err *err) {
  ct_status st = CT_OK;
  SQL_TRY(h, err,
          sqlite3_exec(h, "CREATE INDEX trials_best ON trials (workload_id, outcome, median_us)",
                       NULL, NULL, NULL));
done:
  return st;
}

/* Version 2 -> 3: the picks of `convtune tune --model`. Inside a model's
 * chain the fastest config of a workload alone is not always the one that
 * makes the chain fastest, so the last stage of tune --model times the
 * chain with each workload's few fastest configs and keeps, per workload,
 * the one that made it fastest. Best (the fastest alone) is unchanged; a
 * pick names one OK trial of its workload (by id: trials are never deleted)
 * for a device name and compute capability, the device the chain was timed
 * on, with the chain's times with the picks and with every best, so that
 * what it gained is stated beside it. */
static ct_status migrate_2_to_3(sqlite3 *h, ct_err *err) {
  ct_status st = CT_OK;
  SQL_TRY(h, err,
          sqlite3_exec(h,
                       "CREATE TABLE picks ("
                       "  workload_id INTEGER NOT NULL REFERENCES workloads (id),"
                       "  device_name TEXT NOT NULL,"
                       "  cc_major INTEGER NOT NULL,"
                       "  cc_minor INTEGER NOT NULL,"
                       "  trial_id INTEGER NOT NULL REFERENCES trials (id),"
                       /* the chain's time with the picks; with every workload's fastest record */
                       "  chain_us REAL NOT NULL,"
                       "  base_us REAL NOT NULL,"
                       /* which chain: "mobilenetv2_qdq.onnx, batch 32" */
                       "  model TEXT NOT NULL,"
                       "  session TEXT NOT NULL,"
                       "  timestamp REAL NOT NULL,"
                       "  PRIMARY KEY (workload_id, device_name, cc_major, cc_minor))"
                       " WITHOUT ROWID",
                       NULL, NULL, NULL));
done:
  return st;
}

/* migrations[v] takes the schema from version v to v + 1. */
typedef ct_status (*migration)(sqlite3 *h, ct_err *err);
static const migration migrations[DB_SCHEMA_VERSION] = {migrate_0_to_1, migrate_1_to_2,
                                                        migrate_2_to_3};

/* The tables of the schema and the version that brought each: a database of
 * version v must hold those of versions <= v (an older one is checked
 * before it is migrated, so a later table is not required of it). */
static const struct {
  const char *name;
  int since;
} schema_tables[] = {{"workloads", 1}, {"devices", 1}, {"templates", 1},
                     {"trials", 1},    {"kernels", 1}, {"picks", 3}};

/* Whether the file is convtune's (or empty), before anything is written or
 * the journal mode switched: version 0 must hold no objects, a later version
 * every table of that version's schema. Another program's SQLite file is
 * refused whatever its user_version says. */
ct_status db_check_schema(sqlite3 *h, int version, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  int rc, n_objects;
  SQL_TRY(h, err, sqlite3_prepare_v2(h, "SELECT count(*) FROM sqlite_master", -1, &s, NULL));
  SQL_STEP(h, err, s, rc);
  n_objects = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
  sqlite3_finalize(s);
  s = NULL;
  if (version == 0) {
    if (n_objects > 0)
      st = ERR_SET(err, CT_ERR_DB, "not a convtune database: schema version 0 but %d objects in it",
                   n_objects);
    goto done;
  }
  SQL_TRY(
      h, err,
      sqlite3_prepare_v2(h, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                         -1, &s, NULL));
  for (size_t i = 0; i < sizeof schema_tables / sizeof schema_tables[0]; i++) {
    if (schema_tables[i].since > version) continue;
    SQL_TRY(h, err, sqlite3_reset(s));
    SQL_TRY(h, err, sqlite3_bind_text(s, 1, schema_tables[i].name, -1, SQLITE_STATIC));
    SQL_STEP(h, err, s, rc);
    if (rc != SQLITE_ROW || sqlite3_column_int(s, 0) != 1) {
      st = ERR_SET(err, CT_ERR_DB, "not a convtune database: schema version %d but no table %s",
                   version, schema_tables[i].name);
      goto done;
    }
  }
done:
  sqlite3_finalize(s);
  return st;
}

ct_status db_refuse_newer(int version, ct_err *err) {
  return ERR_SET(err, CT_ERR_DB, "was written by a newer convtune (schema %d, this one knows %d)",
                 version, DB_SCHEMA_VERSION);
}

/* Bring the schema to DB_SCHEMA_VERSION in one transaction. The version is
 * read again under the write lock: another process may have migrated since. */
ct_status db_migrate(sqlite3 *h, ct_err *err) {
  ct_status st = CT_OK;
  int in_tx = 0, version = 0;
  char sql[64];
  SQL_TRY(h, err, sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL));
  in_tx = 1;
  if ((st = db_user_version(h, &version, err)) != CT_OK) goto done;
  if (version > DB_SCHEMA_VERSION) {
    st = db_refuse_newer(version, err);
    goto done;
  }
  for (int v = version; v < DB_SCHEMA_VERSION; v++)
    if ((st = migrations[v](h, err)) != CT_OK) goto done;
  /* PRAGMA takes no bound parameters. */
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", DB_SCHEMA_VERSION);
  SQL_TRY(h, err, sqlite3_exec(h, sql, NULL, NULL, NULL));
  SQL_TRY(h, err, sqlite3_exec(h, "COMMIT", NULL, NULL, NULL));
  in_tx = 0;
done:
  /* Not SQL_TRY: it would jump back here, and the first error is the one to report. */
  if (in_tx) sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
  return st;
}
