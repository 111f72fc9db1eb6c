/*
 * space.c: knob candidates, mixed-radix index <-> config, the JSON form of a
 * config, uniform sampling and neighbours.
 *
 * Invariants: every knob has n_cands >= 1 candidates of `width` ints, stored
 * in the order space.h promises (splits and reorders lexicographic, choices
 * as given and distinct); size is the exact product of the n_cands and never
 * overflows (an adder that would overflow fails); a failed add leaves the
 * space untouched. Knob names are C identifiers, since templates turn them
 * into -D macros.
 * Cost: a split is counted from the extent's prime factors, then filled by a
 * walk over its divisors (O(n_cands * d(extent)), microseconds for real conv
 * extents; more than 2^20 candidates is refused); index, config, sampling and
 * neighbours are O(n_knobs); parsing a config binary-searches each split.
 */
#include "space/space.h"

#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"split", "reorder", "choice"};

void space_init(space *s) {
  memset(s, 0, sizeof *s);
  s->size = 1;
}

void space_free(space *s) {
  if (!s) return;
  for (int k = 0; k < s->n_knobs; k++) free(s->knobs[k].cands);
  space_init(s);
}

/* ---- adding knobs ---------------------------------------------------------- */

/* The checks every adder shares: a usable name and room for one more knob. */
static ct_status check_new_knob(const space *s, const char *name, const char *kind, ct_err *err) {
  if (!s || !name) return ERR_SET(err, CT_ERR_INVALID_ARG, "%s knob: NULL space or name", kind);
  size_t len = strlen(name);
  if (len == 0) return ERR_SET(err, CT_ERR_INVALID_ARG, "%s knob: empty name", kind);
  if (len >= KNOB_NAME_MAX)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "knob '%s': name too long (%zu characters, at most %d)",
                   name, len, KNOB_NAME_MAX - 1);
  /* Names become JSON keys and -D macro names, so keep them identifiers. */
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
             (i > 0 && c >= '0' && c <= '9');
    if (!ok)
      return ERR_SET(err, CT_ERR_INVALID_ARG,
                     "knob '%s': name must be a C identifier (letters, digits, '_', not starting "
                     "with a digit)",
                     name);
  }
  if (space_find(s, name) >= 0)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "knob '%s': duplicate name", name);
  if (s->n_knobs >= SPACE_MAX_KNOBS)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "knob '%s': too many knobs (at most %d)", name,
                   SPACE_MAX_KNOBS);
  return CT_OK;
}

/* Whether the space can grow by a factor of n_cands without overflowing. */
static ct_status check_size(const space *s, const char *name, uint64_t n_cands, ct_err *err) {
  if (s->size > UINT64_MAX / n_cands)
    return ERR_SET(err, CT_ERR_UNSUPPORTED,
                   "knob '%s': the space would exceed 2^64 points (%llu x %llu)", name,
                   (unsigned long long)s->size, (unsigned long long)n_cands);
  return CT_OK;
}

/* Commit a knob whose candidates are ready; takes ownership of cands. */
static void push_knob(space *s, const char *name, knob_kind kind, int width, int extent,
                      int n_cands, int *cands) {
  knob *k = &s->knobs[s->n_knobs++];
  memset(k, 0, sizeof *k);
  memcpy(k->name, name, strlen(name) + 1);
  k->kind = kind;
  k->width = width;
  k->extent = extent;
  k->n_cands = n_cands;
  k->cands = cands;
  s->size *= (uint64_t)n_cands;
}

/* A split knob beyond this many candidates is not a tiling anyone tunes (the
 * worst int extent, 2095133040 into 4, has 5 million); refusing it bounds the
 * memory (16 bytes a candidate) and the walk below. */
#define SPLIT_MAX_CANDS (1 << 20)

/* The number of ordered factorisations of extent into parts factors: each
 * prime power p^a spreads its a over the parts in C(a + parts - 1, parts - 1)
 * ways, independently of the other primes. O(sqrt(extent)). */
static uint64_t count_splits(int extent, int parts) {
  uint64_t n = 1;
  for (int p = 2; p <= extent / p; p++) {
    int a = 0;
    while (extent % p == 0) {
      extent /= p;
      a++;
    }
    uint64_t c = 1; /* C(a + parts - 1, parts - 1), exact at each step */
    for (int i = 1; i < parts; i++) c = c * (uint64_t)(a + i) / (uint64_t)i;
    n *= c;
  }
  if (extent > 1) n *= (uint64_t)parts; /* one prime left, exponent 1 */
  return n;
}

/* Depth-first over the factors, outermost first. */
typedef struct split_walk {
  const int *divs; /* divisors of the extent, ascending */
  int n_divs, parts;
  int prefix[KNOB_MAX_WIDTH];
  size_t n; /* candidates written so far */
  int *out; /* n_cands * parts ints */
} split_walk;

static void split_rec(split_walk *w, int rest, int depth) {
  if (depth == w->parts - 1) {
    /* the innermost factor is whatever is left */
    memcpy(w->out + w->n * w->parts, w->prefix, (size_t)depth * sizeof(int));
    w->out[w->n * w->parts + depth] = rest;
    w->n++;
    return;
  }
  /* Divisors of rest are divisors of the extent; ascending order gives
   * lexicographic candidates. */
  for (int i = 0; i < w->n_divs && w->divs[i] <= rest; i++) {
    if (rest % w->divs[i]) continue;
    w->prefix[depth] = w->divs[i];
    split_rec(w, rest / w->divs[i], depth + 1);
  }
}

ct_status space_add_split(space *s, const char *name, int extent, int parts, ct_err *err) {
  ct_status st = check_new_knob(s, name, "split", err);
  if (st) return st;
  if (extent < 1)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "knob '%s': extent %d (must be >= 1)", name, extent);
  if (parts < 1 || parts > KNOB_MAX_WIDTH)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "knob '%s': %d parts (must be 1..%d)", name, parts,
                   KNOB_MAX_WIDTH);
  uint64_t n_cands = count_splits(extent, parts);
  if (n_cands > SPLIT_MAX_CANDS)
    return ERR_SET(err, CT_ERR_UNSUPPORTED,
                   "knob '%s': %d into %d factors has %llu splits (at most %d)", name, extent,
                   parts, (unsigned long long)n_cands, SPLIT_MAX_CANDS);
  st = check_size(s, name, n_cands, err);
  if (st) return st;

  /* Divisors by trial division up to sqrt(extent): at most 46341 steps. An
   * int has at most 1600 divisors, so both arrays stay small. */
  int n_divs = 0, cap = 64;
  int *divs = malloc((size_t)cap * sizeof *divs);
  int *cands = malloc((size_t)n_cands * (size_t)parts * sizeof *cands);
  if (!divs || !cands) goto no_memory;
  for (int d = 1; d <= extent / d; d++) {
    if (extent % d) continue;
    if (2 * (n_divs + 1) > cap) { /* room for d and, later, extent / d */
      int *grown = realloc(divs, (size_t)cap * 2 * sizeof *divs);
      if (!grown) goto no_memory;
      divs = grown;
      cap *= 2;
    }
    divs[n_divs++] = d;
  }
  /* The large divisors extent / d, in ascending order, skipping a square root. */
  for (int i = n_divs - 1; i >= 0; i--)
    if (extent / divs[i] != divs[i]) divs[n_divs++] = extent / divs[i];

  split_walk w = {.divs = divs, .n_divs = n_divs, .parts = parts, .out = cands};
  split_rec(&w, extent, 0);
  assert(w.n == n_cands);
  free(divs);
  push_knob(s, name, KNOB_SPLIT, parts, extent, (int)n_cands, cands);
  return CT_OK;

no_memory:
  free(divs);
  free(cands);
  return ERR_SET(err, CT_ERR_NO_MEMORY, "knob '%s': out of memory for %llu candidates", name,
                 (unsigned long long)n_cands);
}

/* Step a to the next permutation in lexicographic order; 0 after the last. */
static int next_perm(int *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) i--;
  if (i < 0) return 0;
  int j = n - 1;
  while (a[j] <= a[i]) j--;
  int t = a[i];
  a[i] = a[j];
  a[j] = t;
  for (int lo = i + 1, hi = n - 1; lo < hi; lo++, hi--) {
    t = a[lo];
    a[lo] = a[hi];
    a[hi] = t;
  }
  return 1;
}

ct_status space_add_reorder(space *s, const char *name, int n_axes, ct_err *err) {
  ct_status st = check_new_knob(s, name, "reorder", err);
  if (st) return st;
  if (n_axes < 1 || n_axes > KNOB_MAX_WIDTH)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "knob '%s': %d axes (must be 1..%d)", name, n_axes,
                   KNOB_MAX_WIDTH);
  int n_cands = 1;
  for (int i = 2; i <= n_axes; i++) n_cands *= i;
  st = check_size(s, name, (uint64_t)n_cands, err);
  if (st) return st;
  int *cands = malloc((size_t)n_cands * (size_t)n_axes * sizeof *cands);
  if (!cands) return ERR_SET(err, CT_ERR_NO_MEMORY, "knob '%s': out of memory", name);
  int perm[KNOB_MAX_WIDTH];
  for (int i = 0; i < n_axes; i++) perm[i] = i;
  int c = 0;
  do memcpy(cands + (size_t)c++ * n_axes, perm, (size_t)n_axes * sizeof *perm);
  while (next_perm(perm, n_axes));
  assert(c == n_cands);
  push_knob(s, name, KNOB_REORDER, n_axes, 0, n_cands, cands);
  return CT_OK;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

ct_status space_add_choice(space *s, const char *name, const int *values, int n, ct_err *err) {
  ct_status st = check_new_knob(s, name, "choice", err);
  if (st) return st;
  if (!values) return ERR_SET(err, CT_ERR_INVALID_ARG, "knob '%s': values is NULL", name);
  if (n < 1)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "knob '%s': %d values (must be >= 1)", name, n);
  st = check_size(s, name, (uint64_t)n, err);
  if (st) return st;
  int *cands = malloc((size_t)n * sizeof *cands);
  if (!cands) return ERR_SET(err, CT_ERR_NO_MEMORY, "knob '%s': out of memory", name);
  /* Duplicates would make two indices name one config: find them sorted. */
  memcpy(cands, values, (size_t)n * sizeof *cands);
  qsort(cands, (size_t)n, sizeof *cands, cmp_int);
  for (int i = 1; i < n; i++) {
    if (cands[i] == cands[i - 1]) {
      int dup = cands[i];
      free(cands);
      return ERR_SET(err, CT_ERR_INVALID_ARG, "knob '%s': value %d appears twice", name, dup);
    }
  }
  memcpy(cands, values, (size_t)n * sizeof *cands);
  push_knob(s, name, KNOB_CHOICE, 1, 0, n, cands);
  return CT_OK;
}

/* ---- reading a config ------------------------------------------------------ */

/* The first byte first: valid() reads every knob of a config by name, and
 * sampling calls it millions of times. */
int space_find(const space *s, const char *name) {
  for (int k = 0; k < s->n_knobs; k++)
    if (s->knobs[k].name[0] == name[0] && strcmp(s->knobs[k].name, name) == 0) return k;
  return -1;
}

const int *space_value(const space *s, const config *cfg, int k) {
  const knob *kn = &s->knobs[k];
  assert(cfg->choice[k] >= 0 && cfg->choice[k] < kn->n_cands);
  return kn->cands + (size_t)cfg->choice[k] * (size_t)kn->width;
}

int space_get(const space *s, const config *cfg, const char *name, int dflt) {
  int k = space_find(s, name);
  return k < 0 ? dflt : space_value(s, cfg, k)[0];
}

uint64_t space_index(const space *s, const config *cfg) {
  uint64_t index = 0;
  for (int k = s->n_knobs - 1; k >= 0; k--)
    index = index * (uint64_t)s->knobs[k].n_cands + (uint64_t)cfg->choice[k];
  return index;
}

ct_status space_config(const space *s, uint64_t index, config *out, ct_err *err) {
  if (index >= s->size)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "config index %llu out of range (space size %llu)",
                   (unsigned long long)index, (unsigned long long)s->size);
  memset(out, 0, sizeof *out);
  for (int k = 0; k < s->n_knobs; k++) {
    uint64_t n = (uint64_t)s->knobs[k].n_cands;
    out->choice[k] = (int)(index % n);
    index /= n;
  }
  return CT_OK;
}

/* ---- JSON ------------------------------------------------------------------ */

cJSON *space_config_to_json(const space *s, const config *cfg) {
  cJSON *obj = cJSON_CreateObject();
  if (!obj) return NULL;
  for (int k = 0; k < s->n_knobs; k++) {
    const knob *kn = &s->knobs[k];
    const int *v = space_value(s, cfg, k);
    cJSON *item =
        kn->kind == KNOB_CHOICE ? cJSON_CreateNumber(v[0]) : cJSON_CreateIntArray(v, kn->width);
    if (!item || !cJSON_AddItemToObject(obj, kn->name, item)) {
      cJSON_Delete(item);
      cJSON_Delete(obj);
      return NULL;
    }
  }
  return obj;
}

/* Append printf-style text at *pos, never past size - 1; keeps buf terminated. */
static void append(char *buf, size_t size, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *pos, const char *fmt, ...) {
  if (size == 0 || *pos >= size - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *pos, size - *pos, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  *pos = (size_t)n >= size - 1 - *pos ? size - 1 : *pos + (size_t)n;
}

/* "a, b, c": the knob names, for messages. */
static void knob_names(const space *s, char *buf, size_t size) {
  size_t pos = 0;
  buf[0] = '\0';
  for (int k = 0; k < s->n_knobs; k++)
    append(buf, size, &pos, "%s%s", k ? ", " : "", s->knobs[k].name);
  if (s->n_knobs == 0) append(buf, size, &pos, "(none)");
}

/* "0, 512, 1500": a choice knob's values, for messages. */
static void choice_values(const knob *kn, char *buf, size_t size) {
  size_t pos = 0;
  buf[0] = '\0';
  for (int i = 0; i < kn->n_cands; i++)
    append(buf, size, &pos, "%s%d", i ? ", " : "", kn->cands[i]);
}

/* "[3,1,1,1]", for messages and config_str. */
static void int_list(const int *v, int n, char *buf, size_t size, size_t *pos) {
  append(buf, size, pos, "[");
  for (int i = 0; i < n; i++) append(buf, size, pos, "%s%d", i ? "," : "", v[i]);
  append(buf, size, pos, "]");
}

/* Whether item is a JSON number with an int value; stores it in *v. */
static int json_int(const cJSON *item, int *v) {
  if (!cJSON_IsNumber(item)) return 0;
  double d = item->valuedouble;
  if (!(d >= INT_MIN && d <= INT_MAX) || (double)(int)d != d) return 0;
  *v = (int)d;
  return 1;
}

/* What a JSON value is, for "got a string" in messages. */
static const char *json_type(const cJSON *item) {
  if (cJSON_IsNumber(item)) return "a number";
  if (cJSON_IsString(item)) return "a string";
  if (cJSON_IsBool(item)) return "a boolean";
  if (cJSON_IsNull(item)) return "null";
  if (cJSON_IsArray(item)) return "a list";
  if (cJSON_IsObject(item)) return "an object";
  return "an invalid value";
}

/* Read a list of exactly kn->width ints into v, or say what was expected. */
static ct_status json_list(const knob *kn, const cJSON *item, int *v, const char *expected,
                           ct_err *err) {
  if (!cJSON_IsArray(item))
    return ERR_SET(err, CT_ERR_PARSE, "knob '%s': got %s; expected %s", kn->name, json_type(item),
                   expected);
  int n = cJSON_GetArraySize(item);
  if (n != kn->width)
    return ERR_SET(err, CT_ERR_PARSE, "knob '%s': got a list of %d; expected %s", kn->name, n,
                   expected);
  int i = 0;
  for (const cJSON *e = item->child; e; e = e->next, i++)
    if (!json_int(e, &v[i]))
      return ERR_SET(err, CT_ERR_PARSE, "knob '%s': element %d is not an integer; expected %s",
                     kn->name, i, expected);
  return CT_OK;
}

static int cmp_cand(const int *a, const int *b, int width) {
  for (int i = 0; i < width; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

/* The position of v among a lexicographically sorted knob's candidates, or -1. */
static int find_sorted(const knob *kn, const int *v) {
  int lo = 0, hi = kn->n_cands - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int c = cmp_cand(kn->cands + (size_t)mid * (size_t)kn->width, v, kn->width);
    if (c == 0) return mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

static ct_status parse_split(const knob *kn, const cJSON *item, int *choice, ct_err *err) {
  char expected[128];
  snprintf(expected, sizeof expected, "a list of %d positive integers whose product is %d",
           kn->width, kn->extent);
  int v[KNOB_MAX_WIDTH];
  ct_status st = json_list(kn, item, v, expected, err);
  if (st) return st;
  long long product = 1;
  for (int i = 0; i < kn->width && product <= kn->extent; i++)
    product = v[i] < 1 ? kn->extent + 1LL : product * v[i];
  int c = product == kn->extent ? find_sorted(kn, v) : -1;
  if (c < 0) {
    char got[96];
    size_t pos = 0;
    int_list(v, kn->width, got, sizeof got, &pos);
    return ERR_SET(err, CT_ERR_PARSE, "knob '%s': %s is not a split of %d into %d factors",
                   kn->name, got, kn->extent, kn->width);
  }
  *choice = c;
  return CT_OK;
}

static ct_status parse_reorder(const knob *kn, const cJSON *item, int *choice, ct_err *err) {
  char expected[96];
  snprintf(expected, sizeof expected, "a permutation of 0..%d", kn->width - 1);
  int v[KNOB_MAX_WIDTH];
  ct_status st = json_list(kn, item, v, expected, err);
  if (st) return st;
  int seen = 0, ok = 1;
  for (int i = 0; i < kn->width && ok; i++) {
    ok = v[i] >= 0 && v[i] < kn->width && !(seen & (1 << v[i]));
    if (ok) seen |= 1 << v[i];
  }
  int c = -1;
  for (int i = 0; ok && i < kn->n_cands && c < 0; i++)
    if (cmp_cand(kn->cands + (size_t)i * (size_t)kn->width, v, kn->width) == 0) c = i;
  if (c < 0) {
    char got[96];
    size_t pos = 0;
    int_list(v, kn->width, got, sizeof got, &pos);
    return ERR_SET(err, CT_ERR_PARSE, "knob '%s': %s is not %s", kn->name, got, expected);
  }
  *choice = c;
  return CT_OK;
}

static ct_status parse_choice(const knob *kn, const cJSON *item, int *choice, ct_err *err) {
  char values[256];
  choice_values(kn, values, sizeof values);
  int v;
  if (!json_int(item, &v))
    return ERR_SET(err, CT_ERR_PARSE, "knob '%s': got %s; expected an integer, one of %s", kn->name,
                   cJSON_IsNumber(item) ? "a non-integer" : json_type(item), values);
  for (int i = 0; i < kn->n_cands; i++) {
    if (kn->cands[i] == v) {
      *choice = i;
      return CT_OK;
    }
  }
  return ERR_SET(err, CT_ERR_PARSE, "knob '%s': %d is not one of %s", kn->name, v, values);
}

ct_status space_config_from_json(const space *s, const cJSON *json, config *out, ct_err *err) {
  if (!cJSON_IsObject(json))
    return ERR_SET(err, CT_ERR_PARSE, "config: not a JSON object of knob values");
  char names[SPACE_MAX_KNOBS * (KNOB_NAME_MAX + 2) + 8];
  /* Unknown and repeated keys first: cJSON keeps duplicates, and a silent
   * "first one wins" would hide a typo'd record. */
  int seen[SPACE_MAX_KNOBS] = {0};
  for (const cJSON *e = json->child; e; e = e->next) {
    int k = e->string ? space_find(s, e->string) : -1;
    if (k < 0) {
      knob_names(s, names, sizeof names);
      return ERR_SET(err, CT_ERR_PARSE, "unknown knob '%s'; the knobs are %s",
                     e->string ? e->string : "", names);
    }
    if (seen[k]++) return ERR_SET(err, CT_ERR_PARSE, "knob '%s' appears twice", e->string);
  }
  config cfg;
  memset(&cfg, 0, sizeof cfg);
  for (int k = 0; k < s->n_knobs; k++) {
    const knob *kn = &s->knobs[k];
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(json, kn->name);
    if (!item)
      return ERR_SET(err, CT_ERR_PARSE, "knob '%s' (%s) is missing", kn->name,
                     kind_names[kn->kind]);
    ct_status st = kn->kind == KNOB_SPLIT     ? parse_split(kn, item, &cfg.choice[k], err)
                   : kn->kind == KNOB_REORDER ? parse_reorder(kn, item, &cfg.choice[k], err)
                                              : parse_choice(kn, item, &cfg.choice[k], err);
    if (st) return st;
  }
  *out = cfg;
  return CT_OK;
}

/* ---- sampling -------------------------------------------------------------- */

void space_random(const space *s, rng *r, config *out) {
  /* Independent uniform digits make the index uniform over the whole space. */
  memset(out, 0, sizeof *out);
  for (int k = 0; k < s->n_knobs; k++)
    out->choice[k] = (int)rng_below(r, (uint64_t)s->knobs[k].n_cands);
}

int space_neighbor(const space *s, rng *r, const config *cfg, config *out) {
  config c = *cfg; /* cfg and out may be the same */
  int movable = 0;
  for (int k = 0; k < s->n_knobs; k++) movable += s->knobs[k].n_cands > 1;
  if (movable == 0) {
    *out = c;
    return -1;
  }
  int pick = (int)rng_below(r, (uint64_t)movable), k = 0;
  for (;; k++)
    if (s->knobs[k].n_cands > 1 && pick-- == 0) break;
  /* Uniform among the other n - 1 candidates: draw in [0, n-1), skip the current. */
  int next = (int)rng_below(r, (uint64_t)s->knobs[k].n_cands - 1);
  c.choice[k] = next >= c.choice[k] ? next + 1 : next;
  *out = c;
  return k;
}

/* ---- text ------------------------------------------------------------------ */

char *space_config_str(const space *s, const config *cfg, char *buf, size_t size) {
  if (!buf || size == 0) return buf;
  size_t pos = 0;
  buf[0] = '\0';
  for (int k = 0; k < s->n_knobs; k++) {
    const knob *kn = &s->knobs[k];
    const int *v = space_value(s, cfg, k);
    append(buf, size, &pos, "%s%s=", k ? " " : "", kn->name);
    if (kn->kind == KNOB_CHOICE)
      append(buf, size, &pos, "%d", v[0]);
    else
      int_list(v, kn->width, buf, size, &pos);
  }
  return buf;
}
