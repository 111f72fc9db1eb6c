/*
 * db_query.c: the reads of the database (db.h): the best trial, a
 * workload's trials, other workloads' trials (transfer learning), the
 * summary of tuned workloads, and the kernel cache.
 *
 * Invariants: every trial read selects TRIAL_SELECT and goes through
 * db_row_trial; a malformed row (written by something other than convtune)
 * is counted on the db and skipped (db_bad_row), never truncated, and fails
 * no read. A uint64 config index is read back from its int64 bit pattern.
 * Cost: one statement prepare per query; db_best walks one workload's OK
 * trials in median order (index trials_best) and stops at the first that
 * reads.
 */
#include "db/db.h"

#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db_int.h"

/* ---- reading trials ------------------------------------------------------------------- */

/* ?2 NULL matches any device; else its name and compute capability (?2..?4). */
#define DEVICE_FILTER   " AND (?2 IS NULL OR (d.name = ?2 AND d.cc_major = ?3 AND d.cc_minor = ?4))"
#define TEMPLATE_FILTER " AND (?5 IS NULL OR p.name = ?5) AND (?6 IS NULL OR p.version = ?6)"

static const char SQL_BEST[] =
    TRIAL_SELECT " WHERE w.key = ?1 AND t.outcome = 'OK' AND d.cc_major = ?3 AND d.cc_minor = ?4"
                 " AND (?2 IS NULL OR d.name = ?2) AND (?5 IS NULL OR p.name = ?5)"
                 " AND (?6 IS NULL OR p.version = ?6)"
                 " ORDER BY t.median_us, t.id";
/* db_best_retired's: the same order, one template under every version but ?6 */
static const char SQL_BEST_RETIRED[] =
    TRIAL_SELECT " WHERE w.key = ?1 AND t.outcome = 'OK' AND d.cc_major = ?3 AND d.cc_minor = ?4"
                 " AND (?2 IS NULL OR d.name = ?2) AND p.name = ?5 AND p.version <> ?6"
                 " ORDER BY t.median_us, t.id";
static const char SQL_TRIALS[] =
    TRIAL_SELECT " WHERE w.key = ?1" DEVICE_FILTER TEMPLATE_FILTER " ORDER BY t.id";
static const char SQL_TRIALS_OTHER[] =
    TRIAL_SELECT " WHERE w.key <> ?1" DEVICE_FILTER TEMPLATE_FILTER " ORDER BY t.id DESC LIMIT ?7";

/* A text column into a fixed buffer; a value that does not fit is an error
 * (the database was edited by something else), never truncated. */
ct_status db_col_fixed(sqlite3_stmt *s, int col, char *buf, size_t size, ct_err *err) {
  const unsigned char *v = sqlite3_column_text(s, col);
  size_t n = (size_t)sqlite3_column_bytes(s, col);
  buf[0] = '\0';
  if (!v) {
    if (sqlite3_column_type(s, col) == SQLITE_NULL) return CT_OK;
    return ERR_SET(err, CT_ERR_NO_MEMORY, "column %s: out of memory", sqlite3_column_name(s, col));
  }
  if (n >= size)
    return ERR_SET(err, CT_ERR_DB, "column %s: %zu bytes, at most %zu", sqlite3_column_name(s, col),
                   n, size - 1);
  memcpy(buf, v, n);
  buf[n] = '\0';
  return CT_OK;
}

/* A text column into an owned copy; NULL for SQL NULL. */
static ct_status col_dup(sqlite3_stmt *s, int col, char **out, ct_err *err) {
  *out = NULL;
  if (sqlite3_column_type(s, col) == SQLITE_NULL) return CT_OK;
  const unsigned char *v = sqlite3_column_text(s, col);
  *out = v ? db_dup_str((const char *)v) : NULL;
  if (!*out)
    return ERR_SET(err, CT_ERR_NO_MEMORY, "column %s: out of memory", sqlite3_column_name(s, col));
  return CT_OK;
}

/* One row of TRIAL_SELECT into *t (zeroed first; freed again on failure). */
ct_status db_row_trial(sqlite3_stmt *s, trial *t, ct_err *err) {
  ct_status st = CT_OK;
  cJSON *samples = NULL;
  int oc, n = 0;
  memset(t, 0, sizeof *t);
  if ((st = db_col_fixed(s, 0, t->uid, sizeof t->uid, err)) != CT_OK ||
      (st = db_col_fixed(s, 1, t->workload_key, sizeof t->workload_key, err)) != CT_OK ||
      (st = db_col_fixed(s, 2, t->template_name, sizeof t->template_name, err)) != CT_OK ||
      (st = db_col_fixed(s, 3, t->template_version, sizeof t->template_version, err)) != CT_OK)
    goto done;
  t->config_index = (uint64_t)sqlite3_column_int64(s, 4);
  if ((st = col_dup(s, 5, &t->config_json, err)) != CT_OK) goto done;
  oc = outcome_from_name((const char *)sqlite3_column_text(s, 6));
  if (oc < 0) {
    st = ERR_SET(err, CT_ERR_DB, "trial %s: unknown outcome '%s'", t->uid,
                 (const char *)sqlite3_column_text(s, 6));
    goto done;
  }
  t->outcome = (outcome)oc;
  if ((st = col_dup(s, 7, &t->error, err)) != CT_OK) goto done;
  t->median_us = sqlite3_column_double(s, 8);
  const char *text = (const char *)sqlite3_column_text(s, 9);
  samples = text ? cJSON_Parse(text) : NULL;
  if (!samples) {
    st = ERR_SET(err, CT_ERR_DB, "trial %s: samples_us is not a JSON list", t->uid);
    goto done;
  }
  if ((st = db_samples_from_json(samples, &t->samples_us, &n, "samples_us", err)) != CT_OK) {
    st = CT_ERR_DB;
    if (err) err->status = st;
    goto done;
  }
  t->n_samples = n;
  if (n != sqlite3_column_int(s, 10)) {
    st = ERR_SET(err, CT_ERR_DB, "trial %s: %d samples, n_samples says %d", t->uid, n,
                 sqlite3_column_int(s, 10));
    goto done;
  }
  t->compile_ms = sqlite3_column_double(s, 11);
  if ((st = col_dup(s, 12, &t->options, err)) != CT_OK ||
      (st = db_col_fixed(s, 13, t->arch, sizeof t->arch, err)) != CT_OK ||
      (st = db_col_fixed(s, 14, t->tuner, sizeof t->tuner, err)) != CT_OK ||
      (st = col_dup(s, 15, &t->tuner_settings, err)) != CT_OK ||
      (st = db_col_fixed(s, 16, t->session, sizeof t->session, err)) != CT_OK)
    goto done;
  t->timestamp = sqlite3_column_double(s, 17);
  if ((st = db_col_fixed(s, 18, t->device.name, sizeof t->device.name, err)) != CT_OK) goto done;
  t->device.cc_major = sqlite3_column_int(s, 19);
  t->device.cc_minor = sqlite3_column_int(s, 20);
  t->device.sm_count = sqlite3_column_int(s, 21);
  t->device.driver_version = sqlite3_column_int(s, 22);
  t->device.runtime_version = sqlite3_column_int(s, 23);
  st = db_col_fixed(s, 24, t->device.nvrtc_version, sizeof t->device.nvrtc_version, err);
done:
  cJSON_Delete(samples);
  if (st != CT_OK) trial_free(t);
  return st;
}

/* Bind the filters of SQL_TRIALS / SQL_TRIALS_OTHER / SQL_BEST. */
static ct_status bind_filters(sqlite3 *h, sqlite3_stmt *s, const char *key, const db_device *dev,
                              const char *template_name, const char *template_version,
                              ct_err *err) {
  ct_status st = CT_OK;
  SQL_TRY(h, err, sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC));
  if (dev) {
    SQL_TRY(h, err, sqlite3_bind_text(s, 2, dev->name, -1, SQLITE_STATIC));
    SQL_TRY(h, err, sqlite3_bind_int(s, 3, dev->cc_major));
    SQL_TRY(h, err, sqlite3_bind_int(s, 4, dev->cc_minor));
  }
  SQL_TRY(h, err, sqlite3_bind_text(s, 5, template_name, -1, SQLITE_STATIC));
  if (sqlite3_bind_parameter_count(s) >= 6)
    SQL_TRY(h, err, sqlite3_bind_text(s, 6, template_version, -1, SQLITE_STATIC));
done:
  return st;
}

/* Whether db_row_trial's failure st is a malformed row (written by something
 * else): counted on d, the first message kept, and the row skipped. */
int db_bad_row(db *d, ct_status st, const ct_err *row_err) {
  if (st != CT_ERR_DB) return 0;
  if (d->n_bad++ == 0) snprintf(d->bad_msg, sizeof d->bad_msg, "%s", row_err->msg);
  return 1;
}

int db_bad_rows(db *d, char *msg, size_t size) {
  int n = d ? d->n_bad : 0;
  if (msg && size) snprintf(msg, size, "%s", n ? d->bad_msg : "");
  if (d) {
    d->n_bad = 0;
    d->bad_msg[0] = '\0';
  }
  return n;
}

/* Every row of s (bound) into an owned array; a malformed row is skipped
 * (db_bad_row). */
static ct_status collect(db *d, sqlite3_stmt *s, trial **out, int *n, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3 *h = d->h;
  trial *v = NULL;
  int count = 0, cap = 0, rc;
  for (;;) {
    SQL_STEP(h, err, s, rc);
    if (rc == SQLITE_DONE) break;
    if (count == cap) {
      int grown = cap ? 2 * cap : 64;
      trial *p = realloc(v, (size_t)grown * sizeof *p);
      if (!p) {
        st = ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for %d trials", grown);
        goto done;
      }
      v = p;
      cap = grown;
    }
    ct_err row_err = {0};
    if ((st = db_row_trial(s, &v[count], &row_err)) != CT_OK) {
      if (db_bad_row(d, st, &row_err)) {
        st = CT_OK;
        continue;
      }
      if (err) *err = row_err;
      goto done;
    }
    count++;
  }
done:
  if (st != CT_OK) {
    trials_free(v, count);
    v = NULL;
    count = 0;
  }
  *out = v;
  *n = count;
  return st;
}

/* The first row of s (bound) that reads, into out; a malformed one is
 * skipped (db_bad_row). *found 0 when none is left. */
static ct_status first_good(db *d, sqlite3_stmt *s, trial *out, int *found, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3 *h = d->h;
  int rc;
  *found = 0;
  for (;;) {
    SQL_STEP(h, err, s, rc);
    if (rc == SQLITE_DONE) break;
    ct_err row_err = {0};
    if ((st = db_row_trial(s, out, &row_err)) == CT_OK) {
      *found = 1;
      break;
    }
    trial_free(out);
    memset(out, 0, sizeof *out);
    if (!db_bad_row(d, st, &row_err)) {
      if (err) *err = row_err;
      goto done;
    }
    st = CT_OK;
  }
done:
  return st;
}

/* db_best and db_best_retired: the first good row of sql on this device,
 * else on its compute capability; what names the search in the message. */
static ct_status best_of(db *d, const char *sql, const char *what, const char *workload_key,
                         const db_device *dev, const char *template_name,
                         const char *template_version, trial *out, db_match *match, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d->h;
  int found = 0;
  /* In order of median: a malformed best row gives way to the next best. */
  SQL_TRY(h, err, sqlite3_prepare_v2(h, sql, -1, &s, NULL));
  if ((st = bind_filters(h, s, workload_key, dev, template_name, template_version, err)) != CT_OK)
    goto done;
  if ((st = first_good(d, s, out, &found, err)) != CT_OK) goto done;
  if (found) {
    if (match) *match = DB_MATCH_DEVICE;
  } else {
    /* No trial on this device: any device of the same compute capability. */
    SQL_TRY(h, err, sqlite3_reset(s));
    SQL_TRY(h, err, sqlite3_bind_null(s, 2));
    if ((st = first_good(d, s, out, &found, err)) != CT_OK) goto done;
    if (found && match) *match = DB_MATCH_CC;
  }
  if (!found)
    st = ERR_SET(err, CT_ERR_NOT_FOUND, "no OK %strial of %s on %s or another sm_%d%d device%s%s",
                 what, workload_key, dev->name, dev->cc_major, dev->cc_minor,
                 template_name ? " with template " : "", template_name ? template_name : "");
done:
  if (st != CT_OK && match) *match = DB_MATCH_NONE;
  sqlite3_finalize(s);
  return st;
}

ct_status db_best(db *d, const char *workload_key, const db_device *dev, const char *template_name,
                  const char *template_version, trial *out, db_match *match, ct_err *err) {
  if (match) *match = DB_MATCH_NONE;
  if (out) memset(out, 0, sizeof *out);
  if (!d || !workload_key || !dev || !out)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "db_best: NULL database, workload key or out");
  return best_of(d, SQL_BEST, "", workload_key, dev, template_name, template_version, out, match,
                 err);
}

ct_status db_best_retired(db *d, const char *workload_key, const db_device *dev,
                          const char *template_name, const char *current_version, trial *out,
                          db_match *match, ct_err *err) {
  if (match) *match = DB_MATCH_NONE;
  if (out) memset(out, 0, sizeof *out);
  if (!d || !workload_key || !dev || !template_name || !current_version || !out)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "db_best_retired: NULL database, workload key, template, version or out");
  return best_of(d, SQL_BEST_RETIRED, "retired ", workload_key, dev, template_name,
                 current_version, out, match, err);
}

ct_status db_trials(db *d, const char *workload_key, const db_device *dev,
                    const char *template_name, const char *template_version, trial **out, int *n,
                    ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d ? d->h : NULL;
  if (out) *out = NULL;
  if (n) *n = 0;
  if (!d || !workload_key || !out || !n)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "db_trials: NULL database, workload key or out");
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_TRIALS, -1, &s, NULL));
  if ((st = bind_filters(h, s, workload_key, dev, template_name, template_version, err)) != CT_OK)
    goto done;
  st = collect(d, s, out, n, err);
done:
  sqlite3_finalize(s);
  return st;
}

ct_status db_trials_other(db *d, const char *workload_key, const db_device *dev,
                          const char *template_name, const char *template_version, int limit,
                          trial **out, int *n, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d ? d->h : NULL;
  if (out) *out = NULL;
  if (n) *n = 0;
  if (!d || !workload_key || !out || !n)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "db_trials_other: NULL database, workload key or out");
  if (limit < 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "db_trials_other: limit %d, accepted >= 0", limit);
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_TRIALS_OTHER, -1, &s, NULL));
  if ((st = bind_filters(h, s, workload_key, dev, template_name, template_version, err)) != CT_OK)
    goto done;
  SQL_TRY(h, err, sqlite3_bind_int(s, 7, limit));
  st = collect(d, s, out, n, err);
done:
  sqlite3_finalize(s);
  return st;
}

/* ---- the kernel cache ------------------------------------------------------------------ */

static const char SQL_STORE_KERNEL[] = "INSERT OR REPLACE INTO kernels (template_version, options, "
                                       "arch, cubin) VALUES (?1, ?2, ?3, ?4)";
static const char SQL_LOAD_KERNEL[] =
    "SELECT cubin FROM kernels WHERE template_version = ?1 AND options = ?2 AND arch = ?3";

ct_status db_store_kernel(db *d, const char *template_version, const char *options,
                          const char *arch_name, const void *data, size_t size, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d ? d->h : NULL;
  int rc;
  if (!d || !template_version || !options || !arch_name || !data || size == 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "db_store_kernel: NULL database, template version, options, arch or data, or "
                   "an empty cubin");
  if (d->readonly) return db_refuse_readonly(d, "store a kernel", err);
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_STORE_KERNEL, -1, &s, NULL));
  SQL_TRY(h, err, sqlite3_bind_text(s, 1, template_version, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 2, options, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 3, arch_name, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_blob64(s, 4, data, (sqlite3_uint64)size, SQLITE_STATIC));
  SQL_STEP(h, err, s, rc);
done:
  sqlite3_finalize(s);
  return st;
}

ct_status db_load_kernel(db *d, const char *template_version, const char *options,
                         const char *arch_name, void **data, size_t *size, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d ? d->h : NULL;
  int rc;
  if (data) *data = NULL;
  if (size) *size = 0;
  if (!d || !template_version || !options || !arch_name || !data || !size)
    return ERR_SET(err, CT_ERR_INVALID_ARG,
                   "db_load_kernel: NULL database, template version, options, arch or out");
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_LOAD_KERNEL, -1, &s, NULL));
  SQL_TRY(h, err, sqlite3_bind_text(s, 1, template_version, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 2, options, -1, SQLITE_STATIC));
  SQL_TRY(h, err, sqlite3_bind_text(s, 3, arch_name, -1, SQLITE_STATIC));
  SQL_STEP(h, err, s, rc);
  if (rc != SQLITE_ROW) {
    st =
        ERR_SET(err, CT_ERR_NOT_FOUND, "no cached kernel for template version %s, %s, options '%s'",
                template_version, arch_name, options);
    goto done;
  }
  const void *blob = sqlite3_column_blob(s, 0);
  int bytes = sqlite3_column_bytes(s, 0);
  if (!blob || bytes <= 0) {
    st = ERR_SET(err, CT_ERR_DB, "cached kernel for template version %s, %s: empty cubin",
                 template_version, arch_name);
    goto done;
  }
  *data = malloc((size_t)bytes);
  if (!*data) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for a %d-byte cubin", bytes);
    goto done;
  }
  memcpy(*data, blob, (size_t)bytes);
  *size = (size_t)bytes;
done:
  sqlite3_finalize(s);
  return st;
}

/* ---- summaries ---------------------------------------------------------------------------- */

/* Per workload and device name: counts, the best OK median, and the
 * template of the trial that holds it (ties: the earliest). */
static const char SQL_LIST[] =
    "SELECT w.key, d.name, count(*), sum(t.outcome = 'OK'),"
    " min(CASE WHEN t.outcome = 'OK' THEN t.median_us END),"
    " (SELECT p.name FROM trials t2 JOIN devices d2 ON d2.id = t2.device_id"
    "  JOIN templates p ON p.id = t2.template_id"
    "  WHERE t2.workload_id = w.id AND d2.name = d.name AND t2.outcome = 'OK'"
    "  ORDER BY t2.median_us, t2.id LIMIT 1)"
    " FROM trials t JOIN workloads w ON w.id = t.workload_id JOIN devices d ON d.id = t.device_id"
    " GROUP BY w.id, d.name ORDER BY w.key, d.name";

ct_status db_list(db *d, db_summary **out, int *n, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d ? d->h : NULL;
  db_summary *v = NULL;
  int count = 0, cap = 0, rc;
  if (out) *out = NULL;
  if (n) *n = 0;
  if (!d || !out || !n) return ERR_SET(err, CT_ERR_INVALID_ARG, "db_list: NULL database or out");
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_LIST, -1, &s, NULL));
  for (;;) {
    SQL_STEP(h, err, s, rc);
    if (rc == SQLITE_DONE) break;
    if (!db_grow((void **)&v, count, &cap, sizeof *v)) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for %d summaries", 2 * cap);
      goto done;
    }
    db_summary *r = &v[count];
    memset(r, 0, sizeof *r);
    ct_err row_err = {0};
    if ((st = db_col_fixed(s, 0, r->workload_key, sizeof r->workload_key, &row_err)) != CT_OK ||
        (st = db_col_fixed(s, 1, r->device, sizeof r->device, &row_err)) != CT_OK ||
        (st = db_col_fixed(s, 5, r->template_name, sizeof r->template_name, &row_err)) != CT_OK) {
      /* A text that does not fit (written by something else) costs its summary. */
      err_prefix(&row_err, "workload summary");
      if (db_bad_row(d, st, &row_err)) {
        st = CT_OK;
        continue;
      }
      if (err) *err = row_err;
      goto done;
    }
    r->n_trials = sqlite3_column_int(s, 2);
    r->n_ok = sqlite3_column_int(s, 3);
    r->best_us = r->n_ok ? sqlite3_column_double(s, 4) : 0;
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
