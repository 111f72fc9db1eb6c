/*
 * fuzz_import.c: libFuzzer harness of the JSON-lines import. The input is
 * an import file. Each line goes through trial_from_json alone (an accepted
 * trial prints back, by trial_to_json, to a line that parses to the same
 * record); then the whole file through db_import into an in-memory
 * database (":memory:"; kept while imports are refused, each of which must
 * leave it empty, and fresh for each one that succeeds). When the import
 * succeeds, what it reports is what the database holds:
 *   imported + skipped = the trial lines, and the picks taken, present and
 *     kept = the pick lines; db_export writes back exactly the trials
 *     imported, each the export form of the input trial of its uid, and the
 *     picks taken, each naming a trial of its workload;
 *   the export imported into a second fresh database exports the same bytes,
 *     and imported again into the first one is all skipped (its picks all
 *     present);
 *   db_list counts the same trials, and db_best of every OK trial's
 *     workload and device is no slower than that trial.
 * A refused file must come with a message. Seeds: tests/fuzz/corpus/fuzz_import.
 * Cost: dominated by SQLite: about 2000 runs a second of small files (ASan,
 * one core), 500 when every run opened a database.
 */
#include "fuzz.h"

#include "db/db.h"

/* A trial's export line (owned: free). */
static char *trial_line(const trial *t) {
  cJSON *j = trial_to_json(t);
  char *s = j ? cJSON_PrintUnformatted(j) : NULL;
  FUZZ_CHECK(s != NULL, "trial_to_json failed for uid %s", t->uid);
  cJSON_Delete(j);
  return s;
}

/* The trial of one JSON line; 0 when the line is not one. */
static int parse_trial(const char *line, trial *t) {
  cJSON *j = cJSON_Parse(line);
  ct_err err = {0};
  ct_status st = j ? trial_from_json(j, t, &err) : CT_ERR_PARSE;
  cJSON_Delete(j);
  if (j && st != CT_OK)
    FUZZ_CHECK(err.msg[0] && t->config_json == NULL && t->samples_us == NULL,
               "trial_from_json refused without a message or kept memory");
  return st == CT_OK;
}

/* The lines of text (split on '\n', blank ones dropped) into an owned,
 * NULL-terminated array of owned strings. */
static char **split_lines(const char *text, int *n) {
  int cap = 1;
  for (const char *p = text; *p; p++) cap += *p == '\n';
  char **v = calloc((size_t)cap + 1, sizeof *v);
  if (!v) abort();
  *n = 0;
  for (const char *p = text; *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    int blank = 1;
    for (size_t i = 0; i < len && blank; i++) blank = strchr(" \t\r", p[i]) != NULL;
    if (!blank) v[(*n)++] = fuzz_cstr((const uint8_t *)p, len);
    p += len + (end != NULL);
  }
  return v;
}

static void free_lines(char **v) {
  for (int i = 0; v && v[i]; i++) free(v[i]);
  free(v);
}

/* A fresh in-memory database. */
static db *fresh_db(void) {
  db *d = NULL;
  ct_err err = {0};
  FUZZ_CHECK(db_open(":memory:", 0, &d, &err) == CT_OK, "db_open(:memory:): %s", err.msg);
  return d;
}

/* Import text (size bytes) into d. */
static ct_status import_text(db *d, const char *text, size_t size, db_io_counts *c, ct_err *err) {
  if (!size) text = "\n", size = 1; /* fmemopen refuses an empty buffer */
  FILE *f = fmemopen((void *)text, size, "r");
  if (!f) abort();
  ct_status st = db_import(d, f, c, err);
  fclose(f);
  return st;
}

/* Export all of d into an owned string; *n_written what it wrote. */
static char *export_all(db *d, db_io_counts *n_written) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) abort();
  ct_err err = {0};
  ct_status st = db_export(d, NULL, f, n_written, &err);
  fclose(f);
  FUZZ_CHECK(st == CT_OK, "export after a successful import failed: %s", err.msg);
  FUZZ_CHECK(db_bad_rows(d, NULL, 0) == 0, "export skipped rows that import wrote");
  return buf;
}

/* Whether a line is a pick's (an object with "record"), as import tells them. */
static int pick_line(const char *line) {
  cJSON *j = cJSON_Parse(line);
  int pick = cJSON_IsObject(j) && cJSON_GetObjectItemCaseSensitive(j, "record");
  cJSON_Delete(j);
  return pick;
}

/* What the database holds after a successful import of lines (n of them),
 * reported as c. */
static void check_database(db *d, char **lines, int n, const db_io_counts *c) {
  trial *ins = calloc((size_t)n + 1, sizeof *ins);
  if (!ins) abort();
  int n_tr = 0, n_pk = 0;
  for (int i = 0; i < n; i++) {
    if (pick_line(lines[i])) {
      n_pk++;
      continue;
    }
    FUZZ_CHECK(parse_trial(lines[i], &ins[n_tr]), "import accepted line %d, trial_from_json not",
               i + 1);
    n_tr++;
  }
  FUZZ_CHECK(c->trials + c->trials_present == n_tr,
             "import reported %d imported + %d skipped of %d trial lines", c->trials,
             c->trials_present, n_tr);
  FUZZ_CHECK(c->picks + c->picks_present + c->picks_kept == n_pk,
             "import reported %d + %d + %d picks of %d pick lines", c->picks, c->picks_present,
             c->picks_kept, n_pk);

  db_io_counts written = {-1, -1, -1, -1, -1};
  char *out = export_all(d, &written);
  FUZZ_CHECK(written.trials == c->trials && written.picks == c->picks,
             "import reported %d trials and %d picks, export wrote %d and %d", c->trials, c->picks,
             written.trials, written.picks);
  int n_out = 0;
  char **out_lines = split_lines(out, &n_out);
  FUZZ_CHECK(n_out == written.trials + written.picks, "export said %d + %d lines, wrote %d",
             written.trials, written.picks, n_out);
  for (int i = 0; i < n_out; i++) {
    if (i >= written.trials) {
      /* a pick, after the trials, of a trial exported above */
      cJSON *j = cJSON_Parse(out_lines[i]);
      const cJSON *uid = cJSON_GetObjectItemCaseSensitive(j, "trial_uid");
      const cJSON *key = cJSON_GetObjectItemCaseSensitive(j, "workload_key");
      FUZZ_CHECK(pick_line(out_lines[i]) && cJSON_IsString(uid) && cJSON_IsString(key),
                 "export line %d is not a pick: %s", i + 1, out_lines[i]);
      int found = 0;
      for (int k = 0; k < n_tr && !found; k++)
        found = !strcmp(ins[k].uid, uid->valuestring) &&
                !strcmp(ins[k].workload_key, key->valuestring) && ins[k].outcome == OUT_OK;
      FUZZ_CHECK(found, "export line %d picks %s, no OK trial of %s in the input", i + 1,
                 uid->valuestring, key->valuestring);
      cJSON_Delete(j);
      continue;
    }
    trial t;
    FUZZ_CHECK(parse_trial(out_lines[i], &t), "export line %d does not parse: %s", i + 1,
               out_lines[i]);
    int found = 0;
    for (int k = 0; k < n_tr && !found; k++) {
      if (strcmp(ins[k].uid, t.uid)) continue;
      char *want = trial_line(&ins[k]);
      FUZZ_CHECK(!strcmp(want, out_lines[i]), "uid %s: imported\n%s\nexported\n%s", t.uid, want,
                 out_lines[i]);
      free(want);
      found = 1;
    }
    FUZZ_CHECK(found, "export line %d has uid %s, which no input line has", i + 1, t.uid);
    /* The best of this trial's workload on its device is no slower. */
    if (t.outcome == OUT_OK) {
      trial best;
      db_match match;
      ct_err err = {0};
      FUZZ_CHECK(db_best(d, t.workload_key, &t.device, NULL, NULL, &best, &match, &err) == CT_OK,
                 "no best for %s on %s, which has an OK trial: %s", t.workload_key, t.device.name,
                 err.msg);
      FUZZ_CHECK(match == DB_MATCH_DEVICE && best.median_us <= t.median_us,
                 "best of %s is %g us (match %d), a trial has %g", t.workload_key, best.median_us,
                 (int)match, t.median_us);
      trial_free(&best);
    }
    trial_free(&t);
  }

  /* db_list counts the same trials. */
  db_summary *sum = NULL;
  int n_sum = 0, total = 0;
  ct_err err = {0};
  FUZZ_CHECK(db_list(d, &sum, &n_sum, &err) == CT_OK, "db_list: %s", err.msg);
  for (int i = 0; i < n_sum; i++) {
    FUZZ_CHECK(sum[i].n_ok >= 0 && sum[i].n_ok <= sum[i].n_trials, "db_list: %d OK of %d",
               sum[i].n_ok, sum[i].n_trials);
    total += sum[i].n_trials;
  }
  FUZZ_CHECK(total == c->trials, "db_list counts %d trials, import %d", total, c->trials);
  free(sum);

  /* The export is a fixed point: into a fresh database and back out, the
   * same bytes; into this one again, nothing new. */
  db *d2 = fresh_db();
  db_io_counts c2;
  size_t out_len = out ? strlen(out) : 0;
  FUZZ_CHECK(import_text(d2, out ? out : "", out_len, &c2, &err) == CT_OK,
             "its own export is refused: %s", err.msg);
  FUZZ_CHECK(c2.trials == written.trials && c2.trials_present == 0 && c2.picks == written.picks &&
                 c2.picks_present == 0 && c2.picks_kept == 0,
             "re-import: %d imported, %d skipped of %d; %d picks taken of %d", c2.trials,
             c2.trials_present, written.trials, c2.picks, written.picks);
  db_io_counts written2;
  char *out2 = export_all(d2, &written2);
  FUZZ_CHECK(!strcmp(out ? out : "", out2 ? out2 : ""), "export changes on re-import:\n%s\n%s", out,
             out2);
  free(out2);
  db_close(d2);
  FUZZ_CHECK(import_text(d, out ? out : "", out_len, &c2, &err) == CT_OK,
             "its own export is refused by the same database: %s", err.msg);
  FUZZ_CHECK(c2.trials == 0 && c2.trials_present == written.trials && c2.picks == 0 &&
                 c2.picks_present == written.picks && c2.picks_kept == 0,
             "same database: %d imported, %d skipped of %d; picks %d taken, %d present of %d",
             c2.trials, c2.trials_present, written.trials, c2.picks, c2.picks_present,
             written.picks);

  free_lines(out_lines);
  free(out);
  trials_free(ins, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  char *text = fuzz_cstr(data, size);
  int n = 0;
  char **lines = split_lines(text, &n);
  /* Each line alone: an accepted trial prints to a line that parses back
   * to the same print. */
  for (int i = 0; i < n; i++) {
    trial t;
    if (!parse_trial(lines[i], &t)) continue;
    char *line = trial_line(&t);
    trial back;
    FUZZ_CHECK(parse_trial(line, &back), "its own export line is refused: %s", line);
    char *again = trial_line(&back);
    FUZZ_CHECK(!strcmp(line, again), "export line changes when read back:\n%s\n%s", line, again);
    free(again);
    free(line);
    trial_free(&back);
    trial_free(&t);
  }

  /* The file as db_import reads it: the raw bytes (a NUL inside a line
   * ends that line's JSON for both readers). Into a database kept from run
   * to run while imports are refused (each must leave it empty: opening
   * one costs more than the rest of a run), fresh after one succeeds. */
  static db *d;
  if (!d) d = fresh_db();
  db_io_counts c;
  ct_err err = {0};
  ct_status st = import_text(d, (const char *)data, size, &c, &err);
  if (st == CT_OK) {
    /* split_lines cut at the first NUL; the import reads past it: compare
     * only where both saw the same text. */
    if (!memchr(data, '\0', size)) check_database(d, lines, n, &c);
    db_close(d);
    d = NULL;
  } else {
    FUZZ_CHECK(st < 0 && err.msg[0], "import refused (status %d) without a message", (int)st);
    db_io_counts written;
    char *out = export_all(d, &written);
    FUZZ_CHECK(written.trials == 0 && written.picks == 0,
               "a refused import left %d trials and %d picks", written.trials, written.picks);
    free(out);
  }
  free_lines(lines);
  free(text);
  return 0;
}
