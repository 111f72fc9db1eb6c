/*
 * db.c: the SQLite database of trials, devices, workloads, templates and the
 * kernel cache (see db.h), and the JSON-lines form of a trial.
 *
 * Invariants: PRAGMA user_version is the schema version; migrations[v]
 * takes a database from v to v + 1, all steps in one IMMEDIATE transaction,
 * and a version newer than DB_SCHEMA_VERSION is refused before anything is
 * written, as is another program's SQLite file (checked by its tables before
 * the switch to WAL). A readonly open creates, migrates and converts
 * nothing, and removes the empty -wal/-shm SQLite makes for a reader; in a
 * folder it cannot write it reads the file immutable. Every write is an
 * IMMEDIATE transaction holding the lock at most DB_HOLD_MS, then a pause
 * that lets a waiting writer in; a waiting writer waits as long as the
 * files show commits, and gives up only after DB_STALL_MS without one (a
 * hung holder). Every SQLite call goes through
 * SQL_TRY / SQL_STEP. Doubles are printed with the fewest of 15-17
 * significant digits that read back to the same bits
 * (cJSON's own printer accepts a 15-digit form within an epsilon, which
 * changes about one double in six), and a uint64 config index travels as a
 * decimal string in JSON and as its int64 bit pattern in SQLite.
 * Cost: one statement prepare per query; an insert is one fsync per batch.
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

#include "core/json.h"
#include "templates/template.h"

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

struct db {
  sqlite3 *h;
  int readonly;
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

static char *dup_str(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
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
static ct_status validate_trial(const trial *t, ct_workload *w, ct_err *err) {
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
static char *samples_text(const double *v, int n) {
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
static ct_status samples_from_json(const cJSON *a, double **out, int *n, const char *what,
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
  /* JSON has no NaN or infinity; validate_trial keeps them out of the database. */
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
  *out = dup_str(v->valuestring);
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
    *out = dup_str(v->valuestring);
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
      (st = samples_from_json(field(j, "samples_us"), &out->samples_us, &out->n_samples,
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
  if ((st = validate_trial(out, &w, err)) != CT_OK && st != CT_ERR_NO_MEMORY) st = CT_ERR_PARSE;
  if (err && st != CT_OK) err->status = st;

done:
  if (st != CT_OK) trial_free(out);
  return st;
}

/* ---- opening and the schema ------------------------------------------------------------- */

static ct_status user_version(sqlite3 *h, int *out, ct_err *err) {
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

/* migrations[v] takes the schema from version v to v + 1. */
typedef ct_status (*migration)(sqlite3 *h, ct_err *err);
static const migration migrations[DB_SCHEMA_VERSION] = {migrate_0_to_1, migrate_1_to_2};

/* The tables of every schema version >= 1. */
static const char *const schema_tables[] = {"workloads", "devices", "templates", "trials",
                                            "kernels"};

/* Whether the file is convtune's (or empty), before anything is written or
 * the journal mode switched: version 0 must hold no objects, a later version
 * every table of the schema. Another program's SQLite file is refused
 * whatever its user_version says. */
static ct_status check_schema(sqlite3 *h, int version, ct_err *err) {
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
    SQL_TRY(h, err, sqlite3_reset(s));
    SQL_TRY(h, err, sqlite3_bind_text(s, 1, schema_tables[i], -1, SQLITE_STATIC));
    SQL_STEP(h, err, s, rc);
    if (rc != SQLITE_ROW || sqlite3_column_int(s, 0) != 1) {
      st = ERR_SET(err, CT_ERR_DB, "not a convtune database: schema version %d but no table %s",
                   version, schema_tables[i]);
      goto done;
    }
  }
done:
  sqlite3_finalize(s);
  return st;
}

static ct_status refuse_newer(int version, ct_err *err) {
  return ERR_SET(err, CT_ERR_DB, "was written by a newer convtune (schema %d, this one knows %d)",
                 version, DB_SCHEMA_VERSION);
}

/* Bring the schema to DB_SCHEMA_VERSION in one transaction. The version is
 * read again under the write lock: another process may have migrated since. */
static ct_status migrate(sqlite3 *h, ct_err *err) {
  ct_status st = CT_OK;
  int in_tx = 0, version = 0;
  char sql[64];
  SQL_TRY(h, err, sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL));
  in_tx = 1;
  if ((st = user_version(h, &version, err)) != CT_OK) goto done;
  if (version > DB_SCHEMA_VERSION) {
    st = refuse_newer(version, err);
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
  if (!d || !(d->path = dup_str(path))) {
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
  if ((st = user_version(d->h, &version, err)) != CT_OK) goto done;
  if (version > DB_SCHEMA_VERSION) {
    st = refuse_newer(version, err);
    goto done;
  }
  if ((st = check_schema(d->h, version, err)) != CT_OK) goto done;
  if (readonly && version < DB_SCHEMA_VERSION) {
    if (version == 0)
      st = ERR_SET(err, CT_ERR_DB,
                   "no convtune schema in it yet: create it with a writing command first "
                   "(convtune import or tune)");
    else
      st = ERR_SET(err, CT_ERR_DB,
                   "database schema %d is older than %d: a readonly open does not migrate; "
                   "open it with a writing command first (convtune import or tune)",
                   version, DB_SCHEMA_VERSION);
    goto done;
  }
  SQL_TRY(d->h, err, sqlite3_exec(d->h, "PRAGMA foreign_keys = ON", NULL, NULL, NULL));
  if (!readonly) {
    if (version < DB_SCHEMA_VERSION && (st = migrate(d->h, err)) != CT_OK) goto done;
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

static ct_status refuse_readonly(const db *d, const char *what, ct_err *err) {
  return ERR_SET(err, CT_ERR_DB, "%s: opened readonly: cannot %s", d->path, what);
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
  if (d->readonly) return refuse_readonly(d, "insert trials", err);
  if (n == 0) return CT_OK;
  d->stalled = 0;
  /* Every trial is checked before the first insert: a bad one inserts
   * nothing, whichever batch it would have fallen in. */
  for (int i = 0; i < n; i++)
    if ((st = validate_trial(&trials[i], &w, err)) != CT_OK) {
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
      samples = samples_text(t->samples_us, t->n_samples);
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
  if (st == CT_ERR_DB && d->stalled)
    err_prefix(err, "database %s: another writer held the lock for %d s without committing",
               d->path, DB_STALL_MS / 1000);
  else if (st == CT_ERR_DB)
    err_prefix(err, "database %s", d->path);
  return st;
}

/* ---- reading trials ------------------------------------------------------------------- */

/* The columns row_trial reads, in its order. */
#define TRIAL_SELECT                                                                               \
  "SELECT t.uid, w.key, p.name, p.version, t.config_index, t.config_json, t.outcome, t.error,"     \
  " t.median_us, t.samples_us, t.n_samples, t.compile_ms, t.options, t.arch, t.tuner,"             \
  " t.tuner_settings, t.session, t.timestamp, d.name, d.cc_major, d.cc_minor, d.sm_count,"         \
  " d.driver_version, d.runtime_version, d.nvrtc_version"                                          \
  " FROM trials t JOIN workloads w ON w.id = t.workload_id"                                        \
  " JOIN devices d ON d.id = t.device_id JOIN templates p ON p.id = t.template_id"

/* ?2 NULL matches any device; else its name and compute capability (?2..?4). */
#define DEVICE_FILTER   " AND (?2 IS NULL OR (d.name = ?2 AND d.cc_major = ?3 AND d.cc_minor = ?4))"
#define TEMPLATE_FILTER " AND (?5 IS NULL OR p.name = ?5) AND (?6 IS NULL OR p.version = ?6)"

static const char SQL_BEST[] =
    TRIAL_SELECT " WHERE w.key = ?1 AND t.outcome = 'OK' AND d.cc_major = ?3 AND d.cc_minor = ?4"
                 " AND (?2 IS NULL OR d.name = ?2) AND (?5 IS NULL OR p.name = ?5)"
                 " AND (?6 IS NULL OR p.version = ?6)"
                 " ORDER BY t.median_us, t.id";
static const char SQL_TRIALS[] =
    TRIAL_SELECT " WHERE w.key = ?1" DEVICE_FILTER TEMPLATE_FILTER " ORDER BY t.id";
static const char SQL_TRIALS_OTHER[] =
    TRIAL_SELECT " WHERE w.key <> ?1" DEVICE_FILTER TEMPLATE_FILTER " ORDER BY t.id DESC LIMIT ?7";
static const char SQL_EXPORT[] = TRIAL_SELECT " WHERE (?1 IS NULL OR w.key = ?1) ORDER BY t.id";

/* A text column into a fixed buffer; a value that does not fit is an error
 * (the database was edited by something else), never truncated. */
static ct_status col_fixed(sqlite3_stmt *s, int col, char *buf, size_t size, ct_err *err) {
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
  *out = v ? dup_str((const char *)v) : NULL;
  if (!*out)
    return ERR_SET(err, CT_ERR_NO_MEMORY, "column %s: out of memory", sqlite3_column_name(s, col));
  return CT_OK;
}

/* One row of TRIAL_SELECT into *t (zeroed first; freed again on failure). */
static ct_status row_trial(sqlite3_stmt *s, trial *t, ct_err *err) {
  ct_status st = CT_OK;
  cJSON *samples = NULL;
  int oc, n = 0;
  memset(t, 0, sizeof *t);
  if ((st = col_fixed(s, 0, t->uid, sizeof t->uid, err)) != CT_OK ||
      (st = col_fixed(s, 1, t->workload_key, sizeof t->workload_key, err)) != CT_OK ||
      (st = col_fixed(s, 2, t->template_name, sizeof t->template_name, err)) != CT_OK ||
      (st = col_fixed(s, 3, t->template_version, sizeof t->template_version, err)) != CT_OK)
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
  if ((st = samples_from_json(samples, &t->samples_us, &n, "samples_us", err)) != CT_OK) {
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
      (st = col_fixed(s, 13, t->arch, sizeof t->arch, err)) != CT_OK ||
      (st = col_fixed(s, 14, t->tuner, sizeof t->tuner, err)) != CT_OK ||
      (st = col_dup(s, 15, &t->tuner_settings, err)) != CT_OK ||
      (st = col_fixed(s, 16, t->session, sizeof t->session, err)) != CT_OK)
    goto done;
  t->timestamp = sqlite3_column_double(s, 17);
  if ((st = col_fixed(s, 18, t->device.name, sizeof t->device.name, err)) != CT_OK) goto done;
  t->device.cc_major = sqlite3_column_int(s, 19);
  t->device.cc_minor = sqlite3_column_int(s, 20);
  t->device.sm_count = sqlite3_column_int(s, 21);
  t->device.driver_version = sqlite3_column_int(s, 22);
  t->device.runtime_version = sqlite3_column_int(s, 23);
  st = col_fixed(s, 24, t->device.nvrtc_version, sizeof t->device.nvrtc_version, err);
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

/* Whether row_trial's failure st is a malformed row (written by something
 * else): counted on d, the first message kept, and the row skipped. */
static int bad_row(db *d, ct_status st, const ct_err *row_err) {
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
 * (bad_row). */
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
    if ((st = row_trial(s, &v[count], &row_err)) != CT_OK) {
      if (bad_row(d, st, &row_err)) {
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
 * skipped (bad_row). *found 0 when none is left. */
static ct_status first_good(db *d, sqlite3_stmt *s, trial *out, int *found, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3 *h = d->h;
  int rc;
  *found = 0;
  for (;;) {
    SQL_STEP(h, err, s, rc);
    if (rc == SQLITE_DONE) break;
    ct_err row_err = {0};
    if ((st = row_trial(s, out, &row_err)) == CT_OK) {
      *found = 1;
      break;
    }
    trial_free(out);
    memset(out, 0, sizeof *out);
    if (!bad_row(d, st, &row_err)) {
      if (err) *err = row_err;
      goto done;
    }
    st = CT_OK;
  }
done:
  return st;
}

ct_status db_best(db *d, const char *workload_key, const db_device *dev, const char *template_name,
                  const char *template_version, trial *out, db_match *match, ct_err *err) {
  ct_status st = CT_OK;
  sqlite3_stmt *s = NULL;
  sqlite3 *h = d ? d->h : NULL;
  int found = 0;
  if (match) *match = DB_MATCH_NONE;
  if (out) memset(out, 0, sizeof *out);
  if (!d || !workload_key || !dev || !out)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "db_best: NULL database, workload key or out");
  /* In order of median: a malformed best row gives way to the next best. */
  SQL_TRY(h, err, sqlite3_prepare_v2(h, SQL_BEST, -1, &s, NULL));
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
    st = ERR_SET(err, CT_ERR_NOT_FOUND, "no OK trial of %s on %s or another sm_%d%d device%s%s",
                 workload_key, dev->name, dev->cc_major, dev->cc_minor,
                 template_name ? " with template " : "", template_name ? template_name : "");
done:
  if (st != CT_OK && match) *match = DB_MATCH_NONE;
  sqlite3_finalize(s);
  return st;
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
  if (d->readonly) return refuse_readonly(d, "store a kernel", err);
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
    if (count == cap) {
      int grown = cap ? 2 * cap : 16;
      db_summary *p = realloc(v, (size_t)grown * sizeof *p);
      if (!p) {
        st = ERR_SET(err, CT_ERR_NO_MEMORY, "no memory for %d summaries", grown);
        goto done;
      }
      v = p;
      cap = grown;
    }
    db_summary *r = &v[count];
    memset(r, 0, sizeof *r);
    ct_err row_err = {0};
    if ((st = col_fixed(s, 0, r->workload_key, sizeof r->workload_key, &row_err)) != CT_OK ||
        (st = col_fixed(s, 1, r->device, sizeof r->device, &row_err)) != CT_OK ||
        (st = col_fixed(s, 5, r->template_name, sizeof r->template_name, &row_err)) != CT_OK) {
      /* A text that does not fit (written by something else) costs its summary. */
      err_prefix(&row_err, "workload summary");
      if (bad_row(d, st, &row_err)) {
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
    if ((st = row_trial(s, &t, &row_err)) != CT_OK) {
      if (bad_row(d, st, &row_err)) {
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
  if (d->readonly) return refuse_readonly(d, "import trials", err);
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
