/*
 * db_jsonl.c: a trial as one JSON object and back, export and import as
 * JSON lines (db.h), and the exact text of doubles that both the JSON lines
 * and the samples_us column use.
 *
 * Invariants: doubles are printed with the fewest of 15-17 significant
 * digits that read back to the same bits (cJSON's own printer accepts a
 * 15-digit form within an epsilon, which changes about one double in six),
 * and a uint64 config index travels as a decimal string. trial_from_json
 * refuses unknown fields and runs the insert's own checks, so an import
 * takes every line of a file or none.
 * Cost: export streams row by row; import holds the file's trials in memory
 * and inserts them in one db_insert_trials.
 */
#include "db/db.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "core/json.h"
#include "db/db_int.h"
#include "templates/template.h"

/* ---- numbers as text -------------------------------------------------------------------- */

/* Room for "-1.2345678901234567e-308" and a NUL. */
#define DOUBLE_TEXT_MAX 32

/* The shortest of %.15g, %.16g and %.17g that reads back as exactly v (17
 * always does for a finite double). */
static void fmt_double(double v, char buf[DOUBLE_TEXT_MAX]) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, DOUBLE_TEXT_MAX, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* The samples as a JSON array text, "[1.5,2.25]"; owned (free), NULL when out of memory. */
char *db_samples_text(const double *v, int n) {
  char *s = malloc((size_t)n * DOUBLE_TEXT_MAX + 3);
  if (!s) return NULL;
  size_t len = 0;
  s[len++] = '[';
  for (int i = 0; i < n; i++) {
    if (i) s[len++] = ',';
    fmt_double(v[i], s + len);
    len += strlen(s + len);
  }
  s[len++] = ']';
  s[len] = '\0';
  return s;
}

/* A finite number from a cJSON number, or from a raw number that trial_to_json wrote. */
static int json_double(const cJSON *j, double *out) {
  int ok = 0;
  if (cJSON_IsNumber(j)) {
    *out = j->valuedouble;
    ok = isfinite(*out);
  } else if (cJSON_IsRaw(j) && j->valuestring && j->valuestring[0]) {
    char *end = NULL;
    *out = strtod(j->valuestring, &end);
    ok = *end == '\0' && isfinite(*out);
  }
  /* -0 reads as 0: SQLite's REAL columns drop the sign of a zero, so a
   * trial that kept it would export differently from how it came in. */
  if (ok && *out == 0) *out = 0;
  return ok;
}

/* The samples of a JSON array into an owned array (NULL when n is 0). */
ct_status db_samples_from_json(const cJSON *a, double **out, int *n, const char *what,
                               ct_err *err) {
  *out = NULL;
  *n = 0;
  if (!cJSON_IsArray(a)) return ERR_SET(err, CT_ERR_PARSE, "%s: expected a list of numbers", what);
  int count = cJSON_GetArraySize(a);
  if (count == 0) return CT_OK;
  double *v = malloc((size_t)count * sizeof *v);
  if (!v) return ERR_SET(err, CT_ERR_NO_MEMORY, "%s: no memory for %d samples", what, count);
  int i = 0;
  for (const cJSON *e = a->child; e; e = e->next, i++) {
    if (!json_double(e, &v[i])) {
      free(v);
      return ERR_SET(err, CT_ERR_PARSE, "%s[%d]: expected a finite number", what, i);
    }
  }
  *out = v;
  *n = count;
  return CT_OK;
}

/* ---- trial <-> JSON ---------------------------------------------------------------------- */

/* Add a JSON text under name: as the value itself when it is an object or
 * list that cJSON prints back to the very same text (the compact form the
 * tuner writes), else as a string, so that reading it back is exact either
 * way; NULL as null. Returns 0 when out of memory. */
static int add_json_text(cJSON *o, const char *name, const char *text) {
  if (!text) return cJSON_AddNullToObject(o, name) != NULL;
  cJSON *v = cJSON_ParseWithOpts(text, NULL, 1);
  if (v && (cJSON_IsObject(v) || cJSON_IsArray(v))) {
    char *printed = cJSON_PrintUnformatted(v);
    int same = printed && strcmp(printed, text) == 0;
    free(printed);
    if (same && cJSON_AddItemToObject(o, name, v)) return 1;
    if (same) {
      cJSON_Delete(v);
      return 0;
    }
  }
  cJSON_Delete(v);
  return cJSON_AddStringToObject(o, name, text) != NULL;
}

static int add_double(cJSON *o, const char *name, double v) {
  char buf[DOUBLE_TEXT_MAX];
  /* JSON has no NaN or infinity; db_validate_trial keeps them out of the database. */
  if (!isfinite(v)) return cJSON_AddNullToObject(o, name) != NULL;
  fmt_double(v, buf);
  return cJSON_AddRawToObject(o, name, buf) != NULL;
}

static int add_string_or_null(cJSON *o, const char *name, const char *s) {
  if (!s) return cJSON_AddNullToObject(o, name) != NULL;
  return cJSON_AddStringToObject(o, name, s) != NULL;
}

cJSON *trial_to_json(const trial *t) {
  if (!t) return NULL;
  cJSON *o = cJSON_CreateObject();
  cJSON *dev = cJSON_CreateObject();
  cJSON *samples = cJSON_CreateArray();
  int ok = o && dev && samples;
  char index[24];
  snprintf(index, sizeof index, "%llu", (unsigned long long)t->config_index);
  ok = ok && cJSON_AddNumberToObject(o, "format", DB_EXPORT_FORMAT);
  ok = ok && cJSON_AddStringToObject(o, "uid", t->uid);
  ok = ok && cJSON_AddStringToObject(o, "workload_key", t->workload_key);
  ok = ok && cJSON_AddStringToObject(o, "template_name", t->template_name);
  ok = ok && cJSON_AddStringToObject(o, "template_version", t->template_version);
  /* A string: a double holds only 53 bits of a uint64. */
  ok = ok && cJSON_AddStringToObject(o, "config_index", index);
  ok = ok && add_json_text(o, "config", t->config_json);
  ok = ok && cJSON_AddStringToObject(o, "outcome", outcome_name(t->outcome));
  ok = ok && add_string_or_null(o, "error", t->error);
  ok = ok && add_double(o, "median_us", t->median_us);
  for (int i = 0; ok && i < t->n_samples && t->samples_us; i++) {
    char buf[DOUBLE_TEXT_MAX];
    cJSON *e = NULL;
    if (isfinite(t->samples_us[i])) {
      fmt_double(t->samples_us[i], buf);
      e = cJSON_CreateRaw(buf);
    } else {
      e = cJSON_CreateNull();
    }
    ok = e && cJSON_AddItemToArray(samples, e);
    if (!ok) cJSON_Delete(e);
  }
  if (ok) {
    ok = cJSON_AddItemToObject(o, "samples_us", samples);
    if (ok) samples = NULL;
  }
  ok = ok && add_double(o, "compile_ms", t->compile_ms);
  ok = ok && add_string_or_null(o, "options", t->options);
  ok = ok && cJSON_AddStringToObject(o, "arch", t->arch);
  ok = ok && cJSON_AddStringToObject(o, "tuner", t->tuner);
  ok = ok && add_json_text(o, "tuner_settings", t->tuner_settings);
  ok = ok && cJSON_AddStringToObject(o, "session", t->session);
  ok = ok && add_double(o, "timestamp", t->timestamp);
  ok = ok && cJSON_AddStringToObject(dev, "name", t->device.name);
  ok = ok && cJSON_AddNumberToObject(dev, "cc_major", t->device.cc_major);
  ok = ok && cJSON_AddNumberToObject(dev, "cc_minor", t->device.cc_minor);
  ok = ok && cJSON_AddNumberToObject(dev, "sm_count", t->device.sm_count);
  ok = ok && cJSON_AddNumberToObject(dev, "driver_version", t->device.driver_version);
  ok = ok && cJSON_AddNumberToObject(dev, "runtime_version", t->device.runtime_version);
  ok = ok && cJSON_AddStringToObject(dev, "nvrtc_version", t->device.nvrtc_version);
  if (ok) {
    ok = cJSON_AddItemToObject(o, "device", dev);
    if (ok) dev = NULL;
  }
  cJSON_Delete(samples);
  cJSON_Delete(dev);
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* The fields trial_from_json accepts; anything else is rejected so that a
 * typo (or a field of a format this code does not know) is never ignored. */
static const char *const trial_fields[] = {
    "format",         "uid",        "workload_key", "template_name", "template_version",
    "config_index",   "config",     "outcome",      "error",         "median_us",
    "samples_us",     "compile_ms", "options",      "arch",          "tuner",
    "tuner_settings", "session",    "timestamp",    "device",
};
static const char *const device_fields[] = {
    "name",           "cc_major",        "cc_minor",      "sm_count",
    "driver_version", "runtime_version", "nvrtc_version",
};

static ct_status check_fields(const cJSON *o, const char *const *names, int n, const char *what,
                              ct_err *err) {
  for (const cJSON *e = o->child; e; e = e->next) {
    int known = 0;
    for (int i = 0; i < n && !known; i++) known = e->string && strcmp(e->string, names[i]) == 0;
    if (!known)
      return ERR_SET(err, CT_ERR_PARSE, "%s%s: unknown field", what, e->string ? e->string : "?");
  }
  return CT_OK;
}

static const cJSON *field(const cJSON *o, const char *name) {
  return cJSON_GetObjectItemCaseSensitive(o, name);
}

/* A required string field into a fixed buffer of size bytes. */
static ct_status get_fixed(const cJSON *o, const char *name, const char *what, char *buf,
                           size_t size, ct_err *err) {
  const cJSON *v = field(o, name);
  if (!cJSON_IsString(v) || !v->valuestring)
    return ERR_SET(err, CT_ERR_PARSE, "%s%s: %s, expected a string", what, name,
                   v ? "not a string" : "missing");
  size_t n = strlen(v->valuestring);
  if (n >= size)
    return ERR_SET(err, CT_ERR_PARSE, "%s%s: %zu characters, at most %zu", what, name, n, size - 1);
  memcpy(buf, v->valuestring, n + 1);
  return CT_OK;
}

/* A required field that is a string or null, into an owned copy (NULL for null). */
static ct_status get_string_or_null(const cJSON *o, const char *name, char **out, ct_err *err) {
  const cJSON *v = field(o, name);
  *out = NULL;
  if (cJSON_IsNull(v)) return CT_OK;
  if (!cJSON_IsString(v) || !v->valuestring)
    return ERR_SET(err, CT_ERR_PARSE, "%s: %s, expected a string or null", name,
                   v ? "wrong type" : "missing");
  *out = db_dup_str(v->valuestring);
  if (!*out) return ERR_SET(err, CT_ERR_NO_MEMORY, "%s: out of memory", name);
  return CT_OK;
}

/* The inverse of add_json_text: an object or list is printed compactly, a
 * string is the text itself, null is NULL (when null_ok). */
static ct_status get_json_text(const cJSON *o, const char *name, int null_ok, char **out,
                               ct_err *err) {
  const cJSON *v = field(o, name);
  *out = NULL;
  if (null_ok && cJSON_IsNull(v)) return CT_OK;
  if (cJSON_IsObject(v) || cJSON_IsArray(v))
    *out = cJSON_PrintUnformatted(v);
  else if (cJSON_IsString(v) && v->valuestring)
    *out = db_dup_str(v->valuestring);
  else
    return ERR_SET(err, CT_ERR_PARSE, "%s: %s, expected an object, a list or a JSON string%s", name,
                   v ? "wrong type" : "missing", null_ok ? " or null" : "");
  if (!*out) return ERR_SET(err, CT_ERR_NO_MEMORY, "%s: out of memory", name);
  return CT_OK;
}

static ct_status get_double(const cJSON *o, const char *name, double *out, ct_err *err) {
  if (!json_double(field(o, name), out))
    return ERR_SET(err, CT_ERR_PARSE, "%s: %s, expected a finite number", name,
                   field(o, name) ? "not a finite number" : "missing");
  return CT_OK;
}

static ct_status get_int(const cJSON *o, const char *name, const char *what, int *out,
                         ct_err *err) {
  const cJSON *v = field(o, name);
  double x = cJSON_IsNumber(v) ? v->valuedouble : 0.5;
  if (x != floor(x) || x < INT32_MIN || x > INT32_MAX)
    return ERR_SET(err, CT_ERR_PARSE, "%s%s: %s, expected an integer in %d..%d", what, name,
                   v ? "not an integer" : "missing", INT32_MIN, INT32_MAX);
  *out = (int)x;
  return CT_OK;
}

/* config_index: a decimal string 0..2^64-1, or a number up to 2^53 (exact in a double). */
static ct_status get_index(const cJSON *o, uint64_t *out, ct_err *err) {
  const cJSON *v = field(o, "config_index");
  if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0 &&
      v->valuedouble == floor(v->valuedouble)) {
    *out = (uint64_t)v->valuedouble;
    return CT_OK;
  }
  const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
  uint64_t x = 0;
  int ok = s && s[0] && strlen(s) <= 20;
  for (const char *p = s; ok && *p; p++) {
    unsigned digit = (unsigned)(*p - '0');
    ok = digit <= 9 && x <= (UINT64_MAX - digit) / 10;
    x = x * 10 + digit;
  }
  if (!ok)
    return ERR_SET(err, CT_ERR_PARSE,
                   "config_index: %s, expected a decimal string 0..18446744073709551615",
                   v ? "malformed" : "missing");
  *out = x;
  return CT_OK;
}

ct_status trial_from_json(const cJSON *j, trial *out, ct_err *err) {
  ct_status st = CT_OK;
  ct_workload w;
  int format = 0, oc;
  const cJSON *dev = NULL;
  if (!out) return ERR_SET(err, CT_ERR_INVALID_ARG, "trial_from_json: NULL out");
  memset(out, 0, sizeof *out);
  if (!cJSON_IsObject(j)) {
    st = ERR_SET(err, CT_ERR_PARSE, "trial: expected a JSON object");
    goto done;
  }
  if ((st = get_int(j, "format", "", &format, err)) != CT_OK) goto done;
  if (format > DB_EXPORT_FORMAT || format < 1) {
    st = ERR_SET(err, CT_ERR_PARSE, "format: %d is %s; this convtune reads format 1..%d", format,
                 format > DB_EXPORT_FORMAT ? "newer than this convtune knows" : "not a format",
                 DB_EXPORT_FORMAT);
    goto done;
  }
  if ((st = check_fields(j, trial_fields, (int)(sizeof trial_fields / sizeof *trial_fields), "",
                         err)) != CT_OK)
    goto done;
  if ((st = get_fixed(j, "uid", "", out->uid, sizeof out->uid, err)) != CT_OK ||
      (st = get_fixed(j, "workload_key", "", out->workload_key, sizeof out->workload_key, err)) !=
          CT_OK ||
      (st = get_fixed(j, "template_name", "", out->template_name, sizeof out->template_name,
                      err)) != CT_OK ||
      (st = get_fixed(j, "template_version", "", out->template_version,
                      sizeof out->template_version, err)) != CT_OK ||
      (st = get_index(j, &out->config_index, err)) != CT_OK ||
      (st = get_json_text(j, "config", 0, &out->config_json, err)) != CT_OK)
    goto done;
  const cJSON *o = field(j, "outcome");
  oc = cJSON_IsString(o) ? outcome_from_name(o->valuestring) : -1;
  if (oc < 0) {
    st = ERR_SET(err, CT_ERR_PARSE,
                 "outcome: %s, expected one of OK, INVALID, COMPILE_ERROR, "
                 "LAUNCH_ERROR, RUNTIME_ERROR, WRONG_ANSWER, TIMEOUT",
                 o ? "unknown" : "missing");
    goto done;
  }
  out->outcome = (outcome)oc;
  if ((st = get_string_or_null(j, "error", &out->error, err)) != CT_OK ||
      (st = get_double(j, "median_us", &out->median_us, err)) != CT_OK ||
      (st = db_samples_from_json(field(j, "samples_us"), &out->samples_us, &out->n_samples,
                                 "samples_us", err)) != CT_OK ||
      (st = get_double(j, "compile_ms", &out->compile_ms, err)) != CT_OK ||
      (st = get_string_or_null(j, "options", &out->options, err)) != CT_OK ||
      (st = get_fixed(j, "arch", "", out->arch, sizeof out->arch, err)) != CT_OK ||
      (st = get_fixed(j, "tuner", "", out->tuner, sizeof out->tuner, err)) != CT_OK ||
      (st = get_json_text(j, "tuner_settings", 1, &out->tuner_settings, err)) != CT_OK ||
      (st = get_fixed(j, "session", "", out->session, sizeof out->session, err)) != CT_OK ||
      (st = get_double(j, "timestamp", &out->timestamp, err)) != CT_OK)
    goto done;
  dev = field(j, "device");
  if (!cJSON_IsObject(dev)) {
    st = ERR_SET(err, CT_ERR_PARSE, "device: %s, expected an object",
                 dev ? "wrong type" : "missing");
    goto done;
  }
  db_device *d = &out->device;
  if ((st = check_fields(dev, device_fields, (int)(sizeof device_fields / sizeof *device_fields),
                         "device.", err)) != CT_OK ||
      (st = get_fixed(dev, "name", "device.", d->name, sizeof d->name, err)) != CT_OK ||
      (st = get_int(dev, "cc_major", "device.", &d->cc_major, err)) != CT_OK ||
      (st = get_int(dev, "cc_minor", "device.", &d->cc_minor, err)) != CT_OK ||
      (st = get_int(dev, "sm_count", "device.", &d->sm_count, err)) != CT_OK ||
      (st = get_int(dev, "driver_version", "device.", &d->driver_version, err)) != CT_OK ||
      (st = get_int(dev, "runtime_version", "device.", &d->runtime_version, err)) != CT_OK ||
      (st = get_fixed(dev, "nvrtc_version", "device.", d->nvrtc_version, sizeof d->nvrtc_version,
                      err)) != CT_OK)
    goto done;
  /* The same checks as an insert, so that a bad line is caught while parsing. */
  if ((st = db_validate_trial(out, &w, err)) != CT_OK && st != CT_ERR_NO_MEMORY) st = CT_ERR_PARSE;
  if (err && st != CT_OK) err->status = st;

done:
  if (st != CT_OK) trial_free(out);
  return st;
}

static const char SQL_EXPORT[] = TRIAL_SELECT " WHERE (?1 IS NULL OR w.key = ?1) ORDER BY t.id";

/* ---- export and import ------------------------------------------------------------------ */

ct_status db_export(db *d, const char *workload_key, FILE *f, int *n_written, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d ? d->h : NULL;
  trial t = {0};
  cJSON *j = NULL;
  char *line = NULL;
  int count = 0, rc;
  if (n_written) *n_written = 0;
  if (!d || !f) return ERR_SET(err, CT_ERR_INVALID_ARG, "db_export: NULL database or file");
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_EXPORT, -1, &s, NULL));
  SQL_TRY(h, err, sqlite3_bind_text(s, 1, workload_key, -1, SQLITE_STATIC));
  /* Streamed row by row: an export never holds the whole database in memory. */
  for (;;) {
    SQL_STEP(h, err, s, rc);
    if (rc == SQLITE_DONE) break;
    ct_err row_err = {0};
    if ((st = db_row_trial(s, &t, &row_err)) != CT_OK) {
      if (db_bad_row(d, st, &row_err)) {
        st = CT_OK;
        continue;
      }
      if (err) *err = row_err;
      goto done;
    }
    j = trial_to_json(&t);
    line = j ? cJSON_PrintUnformatted(j) : NULL;
    if (!line) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "export: no memory for trial %s", t.uid);
      goto done;
    }
    if (fputs(line, f) == EOF || fputc('\n', f) == EOF) {
      st = ERR_SET(err, CT_ERR_IO, "export: write failed after %d trials: %s", count,
                   strerror(errno));
      goto done;
    }
    count++;
    trial_free(&t);
    cJSON_Delete(j);
    j = NULL;
    free(line);
    line = NULL;
  }
  if (n_written) *n_written = count;
done:
  trial_free(&t);
  cJSON_Delete(j);
  free(line);
  sqlite3_finalize(s);
  return st;
}

/* Whether a line holds nothing but white space (skipped by import). */
static int blank(const char *s) {
  for (; *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return 0;
  return 1;
}

/* An imported trial's template must be one convtune knows, of its
 * workload's op: another would be listed as best for a workload it cannot
 * run. */
static ct_status check_template(const trial *t, ct_err *err) {
  const template_desc *tpl = template_find(t->template_name);
  if (!tpl)
    return ERR_SET(err, CT_ERR_PARSE, "template_name: '%s' is no template of convtune",
                   t->template_name);
  ct_workload w;
  ct_status st = workload_from_key(t->workload_key, &w, err);
  if (st != CT_OK) {
    err_prefix(err, "workload_key");
    return st;
  }
  if (tpl->op != w.op)
    return ERR_SET(err, CT_ERR_PARSE, "template_name: '%s' is a %s template, the workload a %s",
                   t->template_name, workload_op_name(tpl->op), workload_op_name(w.op));
  return CT_OK;
}

/* A trial of an import file with its line, sorted by uid to find conflicts. */
typedef struct import_line {
  const trial *t;
  int line;
} import_line;

static int by_uid_then_line(const void *a, const void *b) {
  const import_line *x = a, *y = b;
  int c = strcmp(x->t->uid, y->t->uid);
  return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Whether two trials are the same record (their export lines are equal). */
static int same_record(const trial *a, const trial *b) {
  cJSON *ja = trial_to_json(a), *jb = trial_to_json(b);
  char *ta = ja ? cJSON_PrintUnformatted(ja) : NULL;
  char *tb = jb ? cJSON_PrintUnformatted(jb) : NULL;
  int same = ta && tb && !strcmp(ta, tb);
  free(ta);
  free(tb);
  cJSON_Delete(ja);
  cJSON_Delete(jb);
  return same;
}

/* Two different records of one uid in the import (lines[i] is v[i]'s line):
 * a conflict, refused with both lines. The same record twice is not. */
static ct_status check_uid_conflicts(const trial *v, const int *lines, int n, ct_err *err) {
  ct_status st = CT_OK;
  import_line *order = malloc((size_t)(n ? n : 1) * sizeof *order);
  if (!order) return ERR_SET(err, CT_ERR_NO_MEMORY, "import: no memory to sort %d uids", n);
  for (int i = 0; i < n; i++) order[i] = (import_line){.t = &v[i], .line = lines[i]};
  qsort(order, (size_t)n, sizeof *order, by_uid_then_line);
  for (int i = 1; i < n && st == CT_OK; i++)
    if (!strcmp(order[i - 1].t->uid, order[i].t->uid) && !same_record(order[i - 1].t, order[i].t))
      st = ERR_SET(err, CT_ERR_PARSE,
                   "line %d: uid '%s' conflicts with line %d: two different trials of one uid",
                   order[i].line, order[i].t->uid, order[i - 1].line);
  free(order);
  return st;
}

/* A record of the import whose uid the database holds with other values: a
 * conflict, refused with its line and the first field that differs (a
 * record already there and equal is skipped by the insert). One indexed
 * lookup a trial. */
static ct_status check_db_conflicts(db *d, const trial *v, const int *lines, int n, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3 *h = d->h;
  sqlite3_stmt *s = NULL;
  int rc;
  SQL_TRY(h, err, sqlite3_prepare_v2(h, TRIAL_SELECT " WHERE t.uid = ?1", -1, &s, NULL));
  for (int i = 0; i < n && st == CT_OK; i++) {
    SQL_TRY(h, err, sqlite3_reset(s));
    SQL_TRY(h, err, sqlite3_bind_text(s, 1, v[i].uid, -1, SQLITE_STATIC));
    SQL_STEP(h, err, s, rc);
    if (rc == SQLITE_DONE) continue;
    trial old;
    if ((st = db_row_trial(s, &old, err)) != CT_OK) goto done;
    if (!same_record(&old, &v[i])) {
      cJSON *a = trial_to_json(&old), *b = trial_to_json(&v[i]);
      const char *field = "?";
      for (const cJSON *x = a ? a->child : NULL; x; x = x->next) {
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
        if (!y || !cJSON_Compare(x, y, 1)) {
          field = x->string;
          break;
        }
      }
      st = ERR_SET(err, CT_ERR_PARSE,
                   "line %d: uid '%s' is in the database with another %s: two different trials "
                   "of one uid",
                   lines[i], v[i].uid, field);
      cJSON_Delete(a);
      cJSON_Delete(b);
    }
    trial_free(&old);
  }
done:
  sqlite3_finalize(s);
  return st;
}

ct_status db_import(db *d, FILE *f, int *n_imported, int *n_skipped, ct_err *err) {
  ct_status st = CT_OK;
  trial *v = NULL;
  int *lines = NULL;
  int count = 0, cap = 0, skipped = 0, line_no = 0;
  char *line = NULL;
  size_t line_cap = 0;
  cJSON *j = NULL;
  char origin[32];
  if (n_imported) *n_imported = 0;
  if (n_skipped) *n_skipped = 0;
  if (!d || !f) return ERR_SET(err, CT_ERR_INVALID_ARG, "db_import: NULL database or file");
  if (d->readonly) return db_refuse_readonly(d, "import trials", err);
  /* Every line is parsed and checked before the first insert, so that a bad
   * line imports nothing. */
  while (getline(&line, &line_cap, f) != -1) {
    line_no++;
    if (blank(line)) continue;
    snprintf(origin, sizeof origin, "line %d", line_no);
    if ((st = json_parse(line, origin, &j, err)) != CT_OK) goto done;
    if (count == cap) {
      int grown = cap ? 2 * cap : 256;
      trial *p = realloc(v, (size_t)grown * sizeof *p);
      if (!p) {
        st = ERR_SET(err, CT_ERR_NO_MEMORY, "import: no memory for %d trials", grown);
        goto done;
      }
      v = p;
      int *q = realloc(lines, (size_t)grown * sizeof *q);
      if (!q) {
        st = ERR_SET(err, CT_ERR_NO_MEMORY, "import: no memory for %d trials", grown);
        goto done;
      }
      lines = q;
      cap = grown;
    }
    lines[count] = line_no;
    if ((st = trial_from_json(j, &v[count], err)) != CT_OK) {
      err_prefix(err, "%s", origin);
      goto done;
    }
    count++;
    if ((st = check_template(&v[count - 1], err)) != CT_OK) {
      err_prefix(err, "%s", origin);
      goto done;
    }
    if (!v[count - 1].uid[0]) {
      /* A generated uid would differ on each import: no longer idempotent. */
      st = ERR_SET(err, CT_ERR_PARSE, "%s: uid: empty; an imported trial keeps its uid", origin);
      goto done;
    }
    cJSON_Delete(j);
    j = NULL;
  }
  if (ferror(f)) {
    st = ERR_SET(err, CT_ERR_IO, "import: read failed after line %d: %s", line_no, strerror(errno));
    goto done;
  }
  if ((st = check_uid_conflicts(v, lines, count, err)) != CT_OK) goto done;
  if ((st = check_db_conflicts(d, v, lines, count, err)) != CT_OK) goto done;
  if ((st = db_insert_trials(d, v, count, &skipped, err)) != CT_OK) goto done;
  if (n_imported) *n_imported = count - skipped;
  if (n_skipped) *n_skipped = skipped;
done:
  cJSON_Delete(j);
  free(line);
  free(lines);
  trials_free(v, count);
  return st;
}
