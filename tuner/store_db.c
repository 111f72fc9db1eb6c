/*
 * store_db.c: the tuning loop's store (store.h) over the SQLite database:
 * the one place where the tuner meets db.h's queries. A store holds the
 * open database and the db_device of the GPU it tunes on; every query is of
 * that device and of the template's current version (template_version), so
 * that a changed kernel never resumes from another's trials. Cost: what
 * the queries cost (db.h); record() is one transaction per batch.
 */
#include "tuner/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/nvrtc.h"
#include "resolve/resolve.h"

typedef struct store_db {
  db *db;
  db_device dev;
} store_db;

void tune_db_device(const device *dev, db_device *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", dev->name);
  out->cc_major = dev->arch.cc_major;
  out->cc_minor = dev->arch.cc_minor;
  out->sm_count = dev->arch.sm_count;
  out->driver_version = dev->driver_version;
  out->runtime_version = dev->runtime_version;
  snprintf(out->nvrtc_version, sizeof out->nvrtc_version, "%s", nvrtc_version_string());
}

static ct_status trials(void *ctx, const char *key, const template_desc *tpl, trial **out, int *n,
                        ct_err *err) {
  store_db *s = ctx;
  return db_trials(s->db, key, &s->dev, tpl->name, template_version(tpl), out, n, err);
}

static ct_status trials_other(void *ctx, const char *key, const template_desc *tpl, int limit,
                              trial **out, int *n, ct_err *err) {
  store_db *s = ctx;
  return db_trials_other(s->db, key, &s->dev, tpl->name, template_version(tpl), limit, out, n, err);
}

static ct_status nearest(void *ctx, const arch *a, const template_desc *tpl, const ct_workload *pw,
                         config *out, int *found, ct_err *err) {
  store_db *s = ctx;
  return resolve_nearest(s->db, &s->dev, a, tpl, pw, out, NULL, 0, found, err);
}

static ct_status retired(void *ctx, const arch *a, const template_desc *tpl, const ct_workload *pw,
                         config *out, int *found, ct_err *err) {
  store_db *s = ctx;
  return resolve_retired(s->db, &s->dev, a, tpl, pw, out, found, err);
}

static ct_status record(void *ctx, trial *trs, int n, ct_err *err) {
  store_db *s = ctx;
  for (int i = 0; i < n; i++) trs[i].device = s->dev;
  /* a uid is its session's: one already in the database means two
   * sessions had one name, and the trial would be lost without a word */
  int n_skipped = 0;
  ct_status st = db_insert_trials(s->db, trs, n, &n_skipped, err);
  if (!st && n_skipped > 0)
    st = ERR_SET(err, CT_ERR_INTERNAL,
                 "%d of %d trials not recorded: their uids (the first of the batch '%s') are in "
                 "the database already, another session's",
                 n_skipped, n, n > 0 ? trs[0].uid : "");
  return st;
}

static ct_status best(void *ctx, const char *key, const template_desc *tpl, trial *out, int *found,
                      ct_err *err) {
  store_db *s = ctx;
  db_match match = DB_MATCH_NONE;
  *found = 0;
  ct_status st = db_best(s->db, key, &s->dev, tpl->name, template_version(tpl), out, &match, err);
  if (st == CT_ERR_NOT_FOUND) return CT_OK;
  if (st) return st;
  *found = match == DB_MATCH_DEVICE;
  return CT_OK;
}

static int has_kernel(void *ctx, const trial *rec) {
  store_db *s = ctx;
  void *data = NULL;
  size_t size = 0;
  if (db_load_kernel(s->db, rec->template_version, rec->options, rec->arch, &data, &size, NULL))
    return 0;
  free(data);
  return 1;
}

static ct_status put_kernel(void *ctx, const trial *rec, const void *data, size_t size,
                            ct_err *err) {
  store_db *s = ctx;
  return db_store_kernel(s->db, rec->template_version, rec->options, rec->arch, data, size, err);
}

static void close_store(void *ctx) {
  store_db *s = ctx;
  if (!s) return;
  db_close(s->db);
  free(s);
}

ct_status tune_store_db_open(const char *db_path, const device *dev, tune_store *out, ct_err *err) {
  memset(out, 0, sizeof *out);
  store_db *s = calloc(1, sizeof *s);
  if (!s) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  ct_status st = db_open(db_path, 0, &s->db, err);
  if (st) {
    free(s);
    return st;
  }
  tune_db_device(dev, &s->dev);
  *out = (tune_store){.ctx = s,
                      .trials = trials,
                      .trials_other = trials_other,
                      .nearest = nearest,
                      .retired = retired,
                      .record = record,
                      .best = best,
                      .has_kernel = has_kernel,
                      .put_kernel = put_kernel,
                      .close = close_store};
  return CT_OK;
}
