/*
 * db_picks.c: the picks of `convtune tune --model` (db.h): per workload and
 * device (name and compute capability), the OK trial that made a model's
 * chain fastest. db_set_picks replaces the picks of a set of workloads,
 * db_picked reads one, db_list_picks reads them all.
 *
 * Invariants: a pick names an OK trial of its own workload, checked under
 * the write lock in the transaction that writes it, so a set lands whole or
 * not at all. Trials are never deleted or changed, so the trial id a pick
 * holds stays valid, and a read needs no transaction across its two
 * statements.
 * Cost: a set is one IMMEDIATE transaction (a uid lookup per pick, a delete
 * per key, an insert per pick); a read is two primary-key lookups.
 */
#include "db/db.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db_int.h"

static const char SQL_PICK_TRIAL[] = "SELECT t.id, t.workload_id, w.key, t.outcome FROM trials t"
                                     " JOIN workloads w ON w.id = t.workload_id WHERE t.uid = ?1";
/* A key with no workload row matches nothing: clearing it is a no-op. */
static const char SQL_DEL_PICK[] =
    "DELETE FROM picks WHERE workload_id = (SELECT id FROM workloads WHERE key = ?1)"
    " AND device_name = ?2 AND cc_major = ?3 AND cc_minor = ?4";
static const char SQL_INS_PICK[] =
    "INSERT INTO picks (workload_id, device_name, cc_major, cc_minor, trial_id, chain_us, base_us,"
    " model, session, timestamp) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
static const char SQL_PICKED[] =
    "SELECT k.trial_id, w.key, t.uid, k.chain_us, k.base_us, k.model, k.session, k.timestamp"
    " FROM picks k JOIN workloads w ON w.id = k.workload_id JOIN trials t ON t.id = k.trial_id"
    " WHERE w.key = ?1 AND k.device_name = ?2 AND k.cc_major = ?3 AND k.cc_minor = ?4";
static const char SQL_PICKED_TRIAL[] = TRIAL_SELECT " WHERE t.id = ?1";
static const char SQL_LIST_PICKS[] =
    "SELECT w.key, t.uid, k.chain_us, k.base_us, k.model, k.session, k.timestamp, k.device_name,"
    " k.cc_major, k.cc_minor, p.name, t.config_json, t.median_us"
    " FROM picks k JOIN workloads w ON w.id = k.workload_id JOIN trials t ON t.id = k.trial_id"
    " JOIN templates p ON p.id = t.template_id"
    " ORDER BY w.key, k.device_name, k.cc_major, k.cc_minor";

/* Whether buf (a fixed field of size bytes) holds a NUL-terminated string. */
static int terminated(const char *buf, size_t size) {
  return memchr(buf, '\0', size) != NULL;
}

/* The checks of picks[i] that need no database: its fields, its key among
 * keys, and no other pick of the same key. */
static ct_status check_pick(const db_pick *picks, int i, const char *const *keys, int n_keys,
                            ct_err *err) {
  const db_pick *p = &picks[i];
#define FIXED(field)                                                                               \
  if (!terminated(p->field, sizeof p->field))                                                      \
    return ERR_SET(err, CT_ERR_INVALID_ARG,                                                        \
                   "picks[%d]." #field ": not NUL-terminated within %zu bytes", i,                 \
                   sizeof p->field);
  FIXED(workload_key)
  FIXED(trial_uid)
  FIXED(model)
  FIXED(session)
#undef FIXED
  if (!isfinite(p->chain_us) || !(p->chain_us > 0))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "picks[%d].chain_us: %g, accepted a finite value > 0",
                   i, p->chain_us);
  if (!isfinite(p->base_us) || !(p->base_us > 0))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "picks[%d].base_us: %g, accepted a finite value > 0", i,
                   p->base_us);
  if (!isfinite(p->timestamp))
    return ERR_SET(err, CT_ERR_INVALID_ARG, "picks[%d].timestamp: not finite", i);
  int in_keys = 0;
  for (int k = 0; k < n_keys && !in_keys; k++) in_keys = strcmp(keys[k], p->workload_key) == 0;
  if (!in_keys)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "picks[%d].workload_key: %s is not one of the %d keys whose picks are set", i,
                   p->workload_key, n_keys);
  for (int j = 0; j < i; j++)
    if (strcmp(picks[j].workload_key, p->workload_key) == 0)
      return ERR_SET(err, CT_ERR_INVALID_ARG,
                     "picks[%d] and picks[%d]: two picks of workload %s, accepted one", j, i,
                     p->workload_key);
  return CT_OK;
}

/* The trial p names, looked up by uid (sel): its id and its workload's id
 * into ids[0..1]; CT_ERR_INVALID_ARG (what names the pick: "picks[3]",
 * "line 12") unless it is an OK trial of the pick's workload. */
static ct_status pick_trial(sqlite3 *h, sqlite3_stmt *sel, const db_pick *p, const char *what,
                            int64_t ids[2], ct_err *err) {
  ct_status st = CT_OK;
  int rc;
  SQL_TRY(h, err, sqlite3_reset(sel));
  SQL_TRY(h, err, sqlite3_bind_text(sel, 1, p->trial_uid, -1, SQLITE_STATIC));
  SQL_STEP(h, err, sel, rc);
  if (rc != SQLITE_ROW) {
    st = ERR_SET(err, CT_ERR_INVALID_ARG, "%s: trial_uid: no trial %s in the database", what,
                 p->trial_uid);
    goto done;
  }
  const char *key = (const char *)sqlite3_column_text(sel, 2);
  const char *oc = (const char *)sqlite3_column_text(sel, 3);
  if (!key || strcmp(key, p->workload_key) != 0) {
    st = ERR_SET(err, CT_ERR_INVALID_ARG, "%s: trial_uid: trial %s is of workload %s, not %s", what,
                 p->trial_uid, key ? key : "(none)", p->workload_key);
    goto done;
  }
  if (!oc || strcmp(oc, outcome_name(OUT_OK)) != 0) {
    st = ERR_SET(err, CT_ERR_INVALID_ARG, "%s: trial_uid: trial %s is %s, accepted OK", what,
                 p->trial_uid, oc ? oc : "(none)");
    goto done;
  }
  ids[0] = sqlite3_column_int64(sel, 0);
  ids[1] = sqlite3_column_int64(sel, 1);
done:
  return st;
}

/* Bind the device filter (?2..?4) of SQL_DEL_PICK, SQL_INS_PICK and SQL_PICKED. */
static ct_status bind_device(sqlite3 *h, sqlite3_stmt *s, const db_device *dev, ct_err *err) {
  ct_status st = CT_OK;
  SQL_TRY(h, err, sqlite3_bind_text(s, 2, dev->name, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_int(s, 3, dev->cc_major));
  SQL_TRY(h, err, sqlite3_bind_int(s, 4, dev->cc_minor));
done:
  return st;
}

/* Insert pick p of the trial and workload ids (pick_trial's) for dev by
 * SQL_INS_PICK (ins), and reset it. */
static ct_status insert_pick(sqlite3 *h, sqlite3_stmt *ins, const db_device *dev,
                             const int64_t ids[2], const db_pick *p, ct_err *err) {
  ct_status st = CT_OK;
  int rc;
  if ((st = bind_device(h, ins, dev, err)) != CT_OK) goto done;
  SQL_TRY(h, err, sqlite3_bind_int64(ins, 1, ids[1]));
  SQL_TRY(h, err, sqlite3_bind_int64(ins, 5, ids[0]));
  SQL_TRY(h, err, sqlite3_bind_double(ins, 6, p->chain_us));
  SQL_TRY(h, err, sqlite3_bind_double(ins, 7, p->base_us));
  SQL_TRY(h, err, sqlite3_bind_text(ins, 8, p->model, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(ins, 9, p->session, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_double(ins, 10, p->timestamp));
  SQL_STEP(h, err, ins, rc);
  SQL_TRY(h, err, sqlite3_reset(ins));
done:
  return st;
}

ct_status db_set_picks(db *d, const db_device *dev, const char *const *keys, int n_keys,
                       const db_pick *picks, int n_picks, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3 *h = d ? d->h : NULL;
  sqlite3_stmt *sel = NULL, *del = NULL, *ins = NULL;
  int64_t(*ids)[2] = NULL; /* per pick: its trial's id and its workload's */
  int in_tx = 0, rc;
  if (!d || !dev || n_keys < 0 || (n_keys > 0 && !keys) || n_picks < 0 || (n_picks > 0 && !picks))
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "db_set_picks: NULL database, device, keys or picks, or a count < 0");
  for (int k = 0; k < n_keys; k++)
    if (!keys[k]) return ERR_SET(err, CT_ERR_INVALID_ARG, "db_set_picks: keys[%d] is NULL", k);
  if (!terminated(dev->name, sizeof dev->name) || !dev->name[0])
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "device.name: empty or not NUL-terminated; the device name is required");
  if (d->readonly) return db_refuse_readonly(d, "set picks", err);
  for (int i = 0; i < n_picks; i++)
    if ((st = check_pick(picks, i, keys, n_keys, err)) != CT_OK) return st;
  if (n_keys == 0) return CT_OK;
  if (n_picks > 0 && !(ids = malloc((size_t)n_picks * sizeof *ids)))
    return ERR_SET(err, CT_ERR_NO_MEMORY, "db_set_picks: no memory for %d picks", n_picks);
  d->stalled = 0;
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_PICK_TRIAL, -1, &sel, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_DEL_PICK, -1, &del, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_INS_PICK, -1, &ins, NULL));
  /* IMMEDIATE, as db_insert_trials: the write lock is taken here, under the
   * busy handler (a deferred transaction's upgrade would fail at once), and
   * the trials are checked under it. One transaction, not batches: a chain
   * has at most a few hundred workloads, far less than the ~100 ms a batch
   * of db_insert_trials may hold the lock. */
  SQL_TRY(h, err, sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL));
  in_tx = 1;
  for (int i = 0; i < n_picks; i++) {
    char what[32];
    snprintf(what, sizeof what, "picks[%d]", i);
    if ((st = pick_trial(h, sel, &picks[i], what, ids[i], err)) != CT_OK) goto done;
  }
  if ((st = bind_device(h, del, dev, err)) != CT_OK) goto done;
  for (int k = 0; k < n_keys; k++) {
    SQL_TRY(h, err, sqlite3_bind_text(del, 1, keys[k], -1, SQLITE_STATIC));
    SQL_STEP(h, err, del, rc);
    SQL_TRY(h, err, sqlite3_reset(del));
  }
  for (int i = 0; i < n_picks; i++)
    if ((st = insert_pick(h, ins, dev, ids[i], &picks[i], err)) != CT_OK) goto done;
  SQL_TRY(h, err, sqlite3_exec(h, "COMMIT", NULL, NULL, NULL));
  in_tx = 0;
done:
  /* Not SQL_TRY: it would jump back here, and the first error is the one to report. */
  if (in_tx) sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_finalize(sel);
  sqlite3_finalize(del);
  sqlite3_finalize(ins);
  free(ids);
  db_write_failed(d, st, err);
  return st;
}

/* A pick of SQL_PICKED's row into *p; its trial's id into *trial_id. */
static ct_status row_pick(sqlite3_stmt *s, db_pick *p, int64_t *trial_id, ct_err *err) {
  ct_status st;
  memset(p, 0, sizeof *p);
  *trial_id = sqlite3_column_int64(s, 0);
  if ((st = db_col_fixed(s, 1, p->workload_key, sizeof p->workload_key, err)) != CT_OK ||
      (st = db_col_fixed(s, 2, p->trial_uid, sizeof p->trial_uid, err)) != CT_OK ||
      (st = db_col_fixed(s, 5, p->model, sizeof p->model, err)) != CT_OK ||
      (st = db_col_fixed(s, 6, p->session, sizeof p->session, err)) != CT_OK)
    return st;
  p->chain_us = sqlite3_column_double(s, 3);
  p->base_us = sqlite3_column_double(s, 4);
  p->timestamp = sqlite3_column_double(s, 7);
  return CT_OK;
}

ct_status db_picked(db *d, const char *workload_key, const db_device *dev, trial *out,
                    db_pick *pick, int *found, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3 *h = d ? d->h : NULL;
  sqlite3_stmt *s = NULL, *t = NULL;
  db_pick got;
  int64_t trial_id = 0;
  int rc;
  ct_err row_err = {0};
  if (out) memset(out, 0, sizeof *out);
  if (pick) memset(pick, 0, sizeof *pick);
  if (found) *found = 0;
  if (!d || !workload_key || !dev || !out || !found)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "db_picked: NULL database, workload key, device or out");
  if (d->version < 3) return CT_OK; /* an older schema read as it is: no picks */
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_PICKED, -1, &s, NULL));
  SQL_TRY(h, err, sqlite3_bind_text(s, 1, workload_key, -1, SQLITE_STATIC));
  if ((st = bind_device(h, s, dev, err)) != CT_OK) goto done;
  SQL_STEP(h, err, s, rc);
  if (rc != SQLITE_ROW) goto done;
  /* A malformed pick or trial (written by something else) reads as none:
   * the caller falls back on the best, as a read skips such a row. */
  if ((st = row_pick(s, &got, &trial_id, &row_err)) != CT_OK) goto bad_row;
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_PICKED_TRIAL, -1, &t, NULL));
  SQL_TRY(h, err, sqlite3_bind_int64(t, 1, trial_id));
  SQL_STEP(h, err, t, rc);
  /* Trials are never deleted, and the foreign key holds the trial: no row
   * is a database changed by something else. */
  if (rc != SQLITE_ROW) {
    st = ERR_SET(&row_err, CT_ERR_DB, "pick of %s: its trial (id %lld) is missing", workload_key,
                 (long long)trial_id);
    goto bad_row;
  }
  if ((st = db_row_trial(t, out, &row_err)) != CT_OK) goto bad_row;
  if (pick) *pick = got;
  *found = 1;
  goto done;
bad_row:
  err_prefix(&row_err, "pick of %s", workload_key);
  if (db_bad_row(d, st, &row_err))
    st = CT_OK;
  else if (err)
    *err = row_err;
done:
  sqlite3_finalize(s);
  sqlite3_finalize(t);
  return st;
}

ct_status db_list_picks(db *d, db_pick_row **out, int *n, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d ? d->h : NULL;
  db_pick_row *v = NULL;
  int count = 0, cap = 0, rc;
  if (out) *out = NULL;
  if (n) *n = 0;
  if (!d || !out || !n)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "db_list_picks: NULL database or out");
  if (d->version < 3) return CT_OK; /* an older schema read as it is: no picks */
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_LIST_PICKS, -1, &s, NULL));
  for (;;) {
    SQL_STEP(h, err, s, rc);
    if (rc == SQLITE_DONE) break;
    if (!db_grow((void **)&v, count, &cap, sizeof *v)) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for %d picks", 2 * cap);
      goto done;
    }
    db_pick_row *r = &v[count];
    memset(r, 0, sizeof *r);
    ct_err row_err = {0};
    if ((st = db_col_fixed(s, 0, r->p.workload_key, sizeof r->p.workload_key, &row_err)) != CT_OK ||
        (st = db_col_fixed(s, 1, r->p.trial_uid, sizeof r->p.trial_uid, &row_err)) != CT_OK ||
        (st = db_col_fixed(s, 4, r->p.model, sizeof r->p.model, &row_err)) != CT_OK ||
        (st = db_col_fixed(s, 5, r->p.session, sizeof r->p.session, &row_err)) != CT_OK ||
        (st = db_col_fixed(s, 7, r->device_name, sizeof r->device_name, &row_err)) != CT_OK ||
        (st = db_col_fixed(s, 10, r->template_name, sizeof r->template_name, &row_err)) != CT_OK) {
      /* A text that does not fit (written by something else) costs its row. */
      err_prefix(&row_err, "pick");
      if (db_bad_row(d, st, &row_err)) {
        st = CT_OK;
        continue;
      }
      if (err) *err = row_err;
      goto done;
    }
    r->p.chain_us = sqlite3_column_double(s, 2);
    r->p.base_us = sqlite3_column_double(s, 3);
    r->p.timestamp = sqlite3_column_double(s, 6);
    r->cc_major = sqlite3_column_int(s, 8);
    r->cc_minor = sqlite3_column_int(s, 9);
    /* Only for display: a config longer than the buffer is cut, not refused. */
    const char *config = (const char *)sqlite3_column_text(s, 11);
    snprintf(r->config_json, sizeof r->config_json, "%s", config ? config : "");
    r->alone_us = sqlite3_column_double(s, 12);
    count++;
  }
  *out = v;
  *n = count;
  v = NULL;
done:
  free(v);
  sqlite3_finalize(s);
  return st;
}

ct_status db_pick_trial_check(db *d, const db_pick *p, const char *what, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3 *h = d->h;
  sqlite3_stmt *sel = NULL;
  int64_t ids[2];
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_PICK_TRIAL, -1, &sel, NULL));
  st = pick_trial(h, sel, p, what, ids, err);
done:
  sqlite3_finalize(sel);
  return st;
}

int db_pick_equal(const db_pick *a, const db_pick *b) {
  return !strcmp(a->workload_key, b->workload_key) && !strcmp(a->trial_uid, b->trial_uid) &&
         !strcmp(a->model, b->model) && !strcmp(a->session, b->session) &&
         a->chain_us == b->chain_us && a->base_us == b->base_us && a->timestamp == b->timestamp;
}

ct_status db_import_picks(db *d, const db_pick_row *v, const int *lines, int n,
                          db_io_counts *counts, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3 *h = d->h;
  sqlite3_stmt *sel = NULL, *cur = NULL, *del = NULL, *ins = NULL;
  int in_tx = 0, rc, taken = 0, present = 0, kept = 0;
  if (n == 0) return CT_OK;
  if (d->readonly) return db_refuse_readonly(d, "import picks", err);
  d->stalled = 0;
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_PICK_TRIAL, -1, &sel, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_PICKED, -1, &cur, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_DEL_PICK, -1, &del, NULL));
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_INS_PICK, -1, &ins, NULL));
  /* One IMMEDIATE transaction, as db_set_picks: the trials are checked and
   * the database's picks compared under the write lock. */
  SQL_TRY(h, err, sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL));
  in_tx = 1;
  for (int i = 0; i < n; i++) {
    const db_pick *p = &v[i].p;
    db_device dev = {.cc_major = v[i].cc_major, .cc_minor = v[i].cc_minor};
    snprintf(dev.name, sizeof dev.name, "%s", v[i].device_name);
    char what[32];
    snprintf(what, sizeof what, "line %d", lines[i]);
    int64_t ids[2];
    if ((st = pick_trial(h, sel, p, what, ids, err)) != CT_OK) goto done;
    SQL_TRY(h, err, sqlite3_reset(cur));
    SQL_TRY(h, err, sqlite3_bind_text(cur, 1, p->workload_key, -1, SQLITE_STATIC));
    if ((st = bind_device(h, cur, &dev, err)) != CT_OK) goto done;
    SQL_STEP(h, err, cur, rc);
    if (rc == SQLITE_ROW) {
      /* the database's pick (one it cannot read is not the same) */
      db_pick old;
      int64_t old_trial;
      ct_err row_err = {0};
      if (row_pick(cur, &old, &old_trial, &row_err) == CT_OK && db_pick_equal(&old, p)) {
        present++;
        continue;
      }
      if (sqlite3_column_double(cur, 7) >= p->timestamp) {
        kept++;
        continue;
      }
    }
    SQL_TRY(h, err, sqlite3_reset(cur));
    SQL_TRY(h, err, sqlite3_reset(del));
    SQL_TRY(h, err, sqlite3_bind_text(del, 1, p->workload_key, -1, SQLITE_STATIC));
    if ((st = bind_device(h, del, &dev, err)) != CT_OK) goto done;
    SQL_STEP(h, err, del, rc);
    if ((st = insert_pick(h, ins, &dev, ids, p, err)) != CT_OK) goto done;
    taken++;
  }
  SQL_TRY(h, err, sqlite3_exec(h, "COMMIT", NULL, NULL, NULL));
  in_tx = 0;
  if (counts) {
    counts->picks = taken;
    counts->picks_present = present;
    counts->picks_kept = kept;
  }
done:
  if (in_tx) sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_finalize(sel);
  sqlite3_finalize(cur);
  sqlite3_finalize(del);
  sqlite3_finalize(ins);
  db_write_failed(d, st, err);
  return st;
}
