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
 * A pick is a line of its own (DB_PICK_FORMAT, "record": "pick"), after the
 * trials, naming its trial by uid and its device by name and compute
 * capability, as the picks table does.
 * Cost: export streams the trials row by row (the picks, a few hundred at
 * most, are read at once); import holds the file's trials and picks in
 * memory, inserts the trials in one db_insert_trials and the picks in one
 * transaction.
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
  ok = ok && cJSON_AddNumberToObject(o, "format", DB_TRIAL_FORMAT);
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
  if (format != DB_TRIAL_FORMAT) {
    st = ERR_SET(err, CT_ERR_PARSE,
                 "format: %d is a pick's (with \"record\": \"pick\"); a trial is format %d", format,
                 DB_TRIAL_FORMAT);
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

/* ---- a pick as one JSON object ------------------------------------------------------------ */

static const char *const pick_fields[] = {
    "format",   "record",  "workload_key", "trial_uid", "device",
    "chain_us", "base_us", "model",        "session",   "timestamp",
};
static const char *const pick_device_fields[] = {"name", "cc_major", "cc_minor"};

/* A pick of db_list_picks as its export line's object; NULL when out of memory. */
static cJSON *pick_to_json(const db_pick_row *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON *dev = cJSON_CreateObject();
  int ok = o && dev;
  ok = ok && cJSON_AddNumberToObject(o, "format", DB_PICK_FORMAT);
  ok = ok && cJSON_AddStringToObject(o, "record", "pick");
  ok = ok && cJSON_AddStringToObject(o, "workload_key", r->p.workload_key);
  ok = ok && cJSON_AddStringToObject(o, "trial_uid", r->p.trial_uid);
  ok = ok && cJSON_AddStringToObject(dev, "name", r->device_name);
  ok = ok && cJSON_AddNumberToObject(dev, "cc_major", r->cc_major);
  ok = ok && cJSON_AddNumberToObject(dev, "cc_minor", r->cc_minor);
  if (ok) {
    ok = cJSON_AddItemToObject(o, "device", dev);
    if (ok) dev = NULL;
  }
  ok = ok && add_double(o, "chain_us", r->p.chain_us);
  ok = ok && add_double(o, "base_us", r->p.base_us);
  ok = ok && cJSON_AddStringToObject(o, "model", r->p.model);
  ok = ok && cJSON_AddStringToObject(o, "session", r->p.session);
  ok = ok && add_double(o, "timestamp", r->p.timestamp);
  cJSON_Delete(dev);
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* Whether the line's object is a pick ("record" present: it must say so). */
static int is_pick_line(const cJSON *j) {
  return cJSON_IsObject(j) && field(j, "record") != NULL;
}

/* A pick line into *out, with db_set_picks' checks of its fields (times
 * finite and > 0) and a workload key that parses; its trial is checked by
 * db_import. */
static ct_status pick_from_json(const cJSON *j, db_pick_row *out, ct_err *err) {
  ct_status st;
  int format = 0;
  ct_workload w;
  memset(out, 0, sizeof *out);
  const cJSON *rec = field(j, "record");
  if (!cJSON_IsString(rec) || !rec->valuestring || strcmp(rec->valuestring, "pick") != 0)
    return ERR_SET(err, CT_ERR_PARSE, "record: expected \"pick\", the only record besides trials");
  if ((st = get_int(j, "format", "", &format, err)) != CT_OK) return st;
  if (format > DB_EXPORT_FORMAT)
    return ERR_SET(err, CT_ERR_PARSE,
                   "format: %d is newer than this convtune knows; this convtune reads format "
                   "1..%d",
                   format, DB_EXPORT_FORMAT);
  if (format != DB_PICK_FORMAT)
    return ERR_SET(err, CT_ERR_PARSE, "format: %d; a pick is format %d", format, DB_PICK_FORMAT);
  if ((st = check_fields(j, pick_fields, (int)(sizeof pick_fields / sizeof *pick_fields), "",
                         err)) != CT_OK ||
      (st = get_fixed(j, "workload_key", "", out->p.workload_key, sizeof out->p.workload_key,
                      err)) != CT_OK ||
      (st = get_fixed(j, "trial_uid", "", out->p.trial_uid, sizeof out->p.trial_uid, err)) !=
          CT_OK ||
      (st = get_fixed(j, "model", "", out->p.model, sizeof out->p.model, err)) != CT_OK ||
      (st = get_fixed(j, "session", "", out->p.session, sizeof out->p.session, err)) != CT_OK ||
      (st = get_double(j, "chain_us", &out->p.chain_us, err)) != CT_OK ||
      (st = get_double(j, "base_us", &out->p.base_us, err)) != CT_OK ||
      (st = get_double(j, "timestamp", &out->p.timestamp, err)) != CT_OK)
    return st;
  const cJSON *dev = field(j, "device");
  if (!cJSON_IsObject(dev))
    return ERR_SET(err, CT_ERR_PARSE, "device: %s, expected an object",
                   dev ? "not an object" : "missing");
  if ((st = check_fields(dev, pick_device_fields,
                         (int)(sizeof pick_device_fields / sizeof *pick_device_fields), "device.",
                         err)) != CT_OK ||
      (st = get_fixed(dev, "name", "device.", out->device_name, sizeof out->device_name, err)) !=
          CT_OK ||
      (st = get_int(dev, "cc_major", "device.", &out->cc_major, err)) != CT_OK ||
      (st = get_int(dev, "cc_minor", "device.", &out->cc_minor, err)) != CT_OK)
    return st;
  if (!out->device_name[0])
    return ERR_SET(err, CT_ERR_PARSE, "device.name: empty; a pick is for a named device");
  if (!out->p.trial_uid[0]) return ERR_SET(err, CT_ERR_PARSE, "trial_uid: empty");
  if (!(out->p.chain_us > 0) || !(out->p.base_us > 0))
    return ERR_SET(err, CT_ERR_PARSE, "%s: %g, expected a time > 0",
                   out->p.chain_us > 0 ? "base_us" : "chain_us",
                   out->p.chain_us > 0 ? out->p.base_us : out->p.chain_us);
  if ((st = workload_from_key(out->p.workload_key, &w, err)) != CT_OK) {
    err_prefix(err, "workload_key");
    if (st != CT_ERR_NO_MEMORY) st = CT_ERR_PARSE;
    if (err) err->status = st;
    return st;
  }
  return CT_OK;
}

static const char SQL_EXPORT[] = TRIAL_SELECT " WHERE (?1 IS NULL OR w.key = ?1) ORDER BY t.id";

/* ---- export and import ------------------------------------------------------------------ */

/* One line of f: the object j printed compactly; what names it for errors. */
static ct_status put_line(FILE *f, const cJSON *j, const char *what, int written, ct_err *err) {
  char *line = j ? cJSON_PrintUnformatted(j) : NULL;
  if (!line) return ERR_SET(err, CT_ERR_NO_MEMORY, "export: no memory for %s", what);
  ct_status st = CT_OK;
  if (fputs(line, f) == EOF || fputc('\n', f) == EOF)
    st = ERR_SET(err, CT_ERR_IO, "export: write failed after %d lines: %s", written,
                 strerror(errno));
  free(line);
  return st;
}

/* The picks (of workload_key, or all) after the trials; none below schema 3. */
static ct_status export_picks(db *d, const char *workload_key, FILE *f, int written, int *n_picks,
                              ct_err *err) {
  db_pick_row *v = NULL;
  int n = 0;
  ct_status st = db_list_picks(d, &v, &n, err);
  for (int i = 0; st == CT_OK && i < n; i++) {
    if (workload_key && strcmp(workload_key, v[i].p.workload_key) != 0) continue;
    cJSON *j = pick_to_json(&v[i]);
    st = put_line(f, j, "a pick", written + *n_picks, err);
    cJSON_Delete(j);
    if (st == CT_OK) ++*n_picks;
  }
  free(v);
  return st;
}

ct_status db_export(db *d, const char *workload_key, FILE *f, db_io_counts *counts, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d ? d->h : NULL;
  trial t = {0};
  cJSON *j = NULL;
  int count = 0, n_picks = 0, rc;
  if (counts) memset(counts, 0, sizeof *counts);
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
    if ((st = put_line(f, j, "a trial", count, err)) != CT_OK) goto done;
    count++;
    trial_free(&t);
    cJSON_Delete(j);
    j = NULL;
  }
  if ((st = export_picks(d, workload_key, f, count, &n_picks, err)) != CT_OK) goto done;
  if (counts) {
    counts->trials = count;
    counts->picks = n_picks;
  }
done:
  trial_free(&t);
  cJSON_Delete(j);
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

/* A pick of the import with its line, sorted by workload and device to
 * find conflicts. */
typedef struct pick_line {
  const db_pick_row *r;
  int line;
} pick_line;

static int by_pick_slot(const void *a, const void *b) {
  const pick_line *x = a, *y = b;
  int c = strcmp(x->r->p.workload_key, y->r->p.workload_key);
  if (!c) c = strcmp(x->r->device_name, y->r->device_name);
  if (!c) c = (x->r->cc_major > y->r->cc_major) - (x->r->cc_major < y->r->cc_major);
  if (!c) c = (x->r->cc_minor > y->r->cc_minor) - (x->r->cc_minor < y->r->cc_minor);
  return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Two different picks of one workload and device in the import (lines[i]
 * is v[i]'s line): a conflict, refused with both lines. The same pick twice
 * is not. Sorted, so that a file of many picks costs n log n. */
static ct_status check_pick_conflicts(const db_pick_row *v, const int *lines, int n, ct_err *err) {
  ct_status st = CT_OK;
  pick_line *order = malloc((size_t)(n ? n : 1) * sizeof *order);
  if (!order) return ERR_SET(err, CT_ERR_NO_MEMORY, "import: no memory to sort %d picks", n);
  for (int i = 0; i < n; i++) order[i] = (pick_line){.r = &v[i], .line = lines[i]};
  qsort(order, (size_t)n, sizeof *order, by_pick_slot);
  for (int i = 1; i < n && st == CT_OK; i++) {
    const db_pick_row *a = order[i - 1].r, *b = order[i].r;
    if (strcmp(a->p.workload_key, b->p.workload_key) || strcmp(a->device_name, b->device_name) ||
        a->cc_major != b->cc_major || a->cc_minor != b->cc_minor || db_pick_equal(&a->p, &b->p))
      continue;
    st = ERR_SET(err, CT_ERR_PARSE,
                 "line %d: a pick of %s on %s (%d.%d) conflicts with line %d: two different picks "
                 "of one workload and device",
                 order[i].line, b->p.workload_key, b->device_name, b->cc_major, b->cc_minor,
                 order[i - 1].line);
  }
  free(order);
  return st;
}

static int by_uid(const void *a, const void *b) {
  return strcmp((*(const trial *const *)a)->uid, (*(const trial *const *)b)->uid);
}

/* Each pick's trial must be an OK trial of its workload: one of the file's
 * (sorted by uid in by), else one in the database. Checked before anything
 * is written, so that a bad pick imports nothing. */
static ct_status check_pick_trials(db *d, const db_pick_row *pk, const int *lines, int n,
                                   const trial *const *by, int n_trials, ct_err *err) {
  for (int i = 0; i < n; i++) {
    const db_pick *p = &pk[i].p;
    trial key;
    strcpy(key.uid, p->trial_uid);
    const trial *kp = &key;
    const trial *const *hit =
        n_trials ? bsearch(&kp, by, (size_t)n_trials, sizeof *by, by_uid) : NULL;
    if (!hit) {
      char what[32];
      snprintf(what, sizeof what, "line %d", lines[i]);
      ct_status st = db_pick_trial_check(d, p, what, err);
      /* a pick of a trial that is neither here nor there: the file's fault */
      if (st == CT_ERR_INVALID_ARG) {
        st = CT_ERR_PARSE;
        if (err) err->status = st;
      }
      if (st != CT_OK) return st;
      continue;
    }
    if (strcmp((*hit)->workload_key, p->workload_key) != 0)
      return ERR_SET(err, CT_ERR_PARSE, "line %d: trial_uid: trial %s is of workload %s, not %s",
                     lines[i], p->trial_uid, (*hit)->workload_key, p->workload_key);
    if ((*hit)->outcome != OUT_OK)
      return ERR_SET(err, CT_ERR_PARSE, "line %d: trial_uid: trial %s is %s, accepted OK", lines[i],
                     p->trial_uid, outcome_name((*hit)->outcome));
  }
  return CT_OK;
}

/* Room for one more element in *v (and its line in *lines). */
static int grow_with_lines(void **v, int **lines, int count, int *cap, size_t elem) {
  int cap_v = *cap;
  if (!db_grow(v, count, &cap_v, elem)) return 0;
  if (cap_v != *cap) {
    int *q = realloc(*lines, (size_t)cap_v * sizeof *q);
    if (!q) return 0;
    *lines = q;
    *cap = cap_v;
  }
  return 1;
}

ct_status db_import(db *d, FILE *f, db_io_counts *counts, ct_err *err) {
  ct_status st = CT_OK;
  trial *v = NULL;
  const trial **by = NULL;
  db_pick_row *pk = NULL;
  int *lines = NULL, *pk_lines = NULL;
  int count = 0, cap = 0, n_pk = 0, cap_pk = 0, skipped = 0, line_no = 0;
  char *line = NULL;
  size_t line_cap = 0;
  cJSON *j = NULL;
  char origin[32];
  db_io_counts c = {0};
  if (counts) memset(counts, 0, sizeof *counts);
  if (!d || !f) return ERR_SET(err, CT_ERR_INVALID_ARG, "db_import: NULL database or file");
  if (d->readonly) return db_refuse_readonly(d, "import trials", err);
  /* Every line is parsed and checked before the first insert, so that a bad
   * line imports nothing. */
  while (getline(&line, &line_cap, f) != -1) {
    line_no++;
    if (blank(line)) continue;
    snprintf(origin, sizeof origin, "line %d", line_no);
    if ((st = json_parse(line, origin, &j, err)) != CT_OK) goto done;
    if (is_pick_line(j)) {
      if (!grow_with_lines((void **)&pk, &pk_lines, n_pk, &cap_pk, sizeof *pk)) {
        st = ERR_SET(err, CT_ERR_NO_MEMORY, "import: no memory for %d picks", n_pk + 1);
        goto done;
      }
      pk_lines[n_pk] = line_no;
      if ((st = pick_from_json(j, &pk[n_pk], err)) != CT_OK) {
        err_prefix(err, "%s", origin);
        goto done;
      }
      n_pk++;
      cJSON_Delete(j);
      j = NULL;
      continue;
    }
    if (!grow_with_lines((void **)&v, &lines, count, &cap, sizeof *v)) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "import: no memory for %d trials", count + 1);
      goto done;
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
  if (n_pk) {
    if ((st = check_pick_conflicts(pk, pk_lines, n_pk, err)) != CT_OK) goto done;
    if (count && !(by = malloc((size_t)count * sizeof *by))) {
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "import: no memory to sort %d uids", count);
      goto done;
    }
    for (int i = 0; i < count; i++) by[i] = &v[i];
    if (count) qsort(by, (size_t)count, sizeof *by, by_uid);
    if ((st = check_pick_trials(d, pk, pk_lines, n_pk, by, count, err)) != CT_OK) goto done;
  }
  if ((st = db_insert_trials(d, v, count, &skipped, err)) != CT_OK) goto done;
  c.trials = count - skipped;
  c.trials_present = skipped;
  if ((st = db_import_picks(d, pk, pk_lines, n_pk, &c, err)) != CT_OK) goto done;
  if (counts) *counts = c;
done:
  cJSON_Delete(j);
  free(line);
  free(lines);
  free(pk_lines);
  free(pk);
  free(by);
  trials_free(v, count);
  return st;
}
