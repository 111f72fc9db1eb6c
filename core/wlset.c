/*
 * wlset.c: parsing of workload sets (see wlset.h). Entries are parsed by
 * workload_from_json after the batch override is applied, so every item of a
 * returned set is valid at that batch. Names must be unique within a set, so
 * that "set/name" identifies a layer.
 */
#include "core/wlset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/embed.h"
#include "core/json.h"

extern const embedded_file embedded_sets[];

void wlset_free(wlset *s) {
  if (!s) return;
  for (int i = 0; i < s->n_items; i++) free(s->items[i].name);
  free(s->items);
  free(s->name);
  free(s);
}

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* The set's name from a path: base name without a ".json" suffix. */
static char *set_name(const char *origin) {
  const char *base = strrchr(origin, '/');
  base = base ? base + 1 : origin;
  char *name = dupstr(base);
  if (!name) return NULL;
  size_t n = strlen(name);
  if (n > 5 && strcmp(name + n - 5, ".json") == 0) name[n - 5] = '\0';
  return name;
}

/* Parse entry index of a set; in_list says whether the set is a list (its
 * messages then name the entry). */
static ct_status parse_item(const cJSON *entry, int index, int in_list, int batch, wlset_item *item,
                            ct_err *err) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(entry, "name");
  char label[CT_EXCERPT_MAX + 32], quoted[CT_EXCERPT_MAX];
  snprintf(label, sizeof label, "#%d", index + 1);
  if (name && (!cJSON_IsString(name) || !name->valuestring[0]))
    return ERR_SET(err, CT_ERR_INVALID_WORKLOAD,
                   "workload %s: field 'name' must be a non-empty string", label);
  if (name)
    snprintf(label, sizeof label, "#%d (%s)", index + 1,
             err_excerpt(quoted, sizeof quoted, name->valuestring));
  ct_status st;
  if (batch > 0 && cJSON_IsObject(entry)) {
    /* Override n on a copy, so that validation sees the real batch. */
    cJSON *copy = cJSON_Duplicate(entry, 1);
    if (!copy) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory copying workload %s", label);
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "n");
    cJSON_AddNumberToObject(copy, "n", batch);
    st = workload_from_json(copy, &item->w, err);
    cJSON_Delete(copy);
  } else {
    st = workload_from_json(entry, &item->w, err);
  }
  if (st) {
    if (in_list) err_prefix(err, "workload %s", label);
    return st;
  }
  if (name) {
    item->name = err_printable(name->valuestring); /* printed in tables: no control byte */
  } else {
    snprintf(label, sizeof label, "#%d", index + 1);
    item->name = dupstr(label);
  }
  if (!item->name) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  return CT_OK;
}

ct_status wlset_parse(const char *text, const char *origin, int batch, wlset **out, ct_err *err) {
  if (!text || !origin || !out) return ERR_SET(err, CT_ERR_INVALID_ARG, "NULL argument");
  if (batch < 0) return ERR_SET(err, CT_ERR_INVALID_ARG, "batch must be at least 1, got %d", batch);
  *out = NULL;
  char where[CT_EXCERPT_MAX], quoted[CT_EXCERPT_MAX]; /* origin may be a long file name */
  err_excerpt(where, sizeof where, origin);
  cJSON *root;
  ct_status st = json_parse(text, origin, &root, err);
  if (st) return st;
  wlset *s = calloc(1, sizeof *s);
  int count = cJSON_IsArray(root) ? cJSON_GetArraySize(root) : 1;
  if (!s || !(s->name = set_name(origin)) ||
      !(s->items = calloc(count ? count : 1, sizeof *s->items))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "%s: out of memory", where);
    goto done;
  }
  if (!cJSON_IsArray(root) && !cJSON_IsObject(root)) {
    st = ERR_SET(err, CT_ERR_PARSE, "%s: a workload file holds a JSON list of workload objects",
                 where);
    goto done;
  }
  if (count == 0) {
    st = ERR_SET(err, CT_ERR_INVALID_WORKLOAD, "%s: the list of workloads is empty", where);
    goto done;
  }
  const cJSON *entry = cJSON_IsArray(root) ? root->child : root;
  for (int i = 0; i < count; i++, entry = entry->next) {
    if ((st = parse_item(entry, i, cJSON_IsArray(root), batch, &s->items[i], err))) {
      err_prefix(err, "%s", where);
      goto done;
    }
    s->n_items++;
    for (int j = 0; j < i; j++) {
      if (strcmp(s->items[j].name, s->items[i].name) == 0) {
        st = ERR_SET(err, CT_ERR_INVALID_WORKLOAD,
                     "%s: workload #%d: name '%s' is already used by workload #%d; names must "
                     "be unique",
                     where, i + 1, err_excerpt(quoted, sizeof quoted, s->items[i].name), j + 1);
        goto done;
      }
    }
  }
done:
  cJSON_Delete(root);
  if (st) {
    wlset_free(s);
    return st;
  }
  *out = s;
  return CT_OK;
}

ct_status wlset_load_file(const char *path, int batch, wlset **out, ct_err *err) {
  if (!path || !out) return ERR_SET(err, CT_ERR_INVALID_ARG, "NULL argument");
  char where[CT_EXCERPT_MAX]; /* a path may be long: quote an excerpt */
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    return ERR_SET(err, e == ENOENT ? CT_ERR_NOT_FOUND : CT_ERR_IO, "%s: cannot open: %s",
                   err_excerpt(where, sizeof where, path), strerror(e));
  }
  err_excerpt(where, sizeof where, path);
  char *text = NULL;
  size_t len = 0, cap = 0;
  ct_status st = CT_OK;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 8192;
      char *grown = realloc(text, cap);
      if (!grown) {
        st = ERR_SET(err, CT_ERR_NO_MEMORY, "%s: out of memory reading the file", where);
        goto done;
      }
      text = grown;
    }
    size_t got = fread(text + len, 1, cap - len - 1, f);
    len += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    st = ERR_SET(err, CT_ERR_IO, "%s: read error", where);
    goto done;
  }
  text[len] = '\0';
  if (strlen(text) != len) {
    st = ERR_SET(err, CT_ERR_PARSE, "%s: bad JSON: the file contains a NUL byte", where);
    goto done;
  }
  st = wlset_parse(text, path, batch, out, err);
done:
  fclose(f);
  free(text);
  return st;
}

char *wlset_names(char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (const embedded_file *f = embedded_sets; f->name && len < size; f++) {
    size_t n = strlen(f->name);
    if (n > 5) n -= 5; /* ".json" */
    len += snprintf(buf + len, size - len, "%s%.*s", len ? ", " : "", (int)n, f->name);
  }
  return buf;
}

ct_status wlset_load_named(const char *name, int batch, wlset **out, ct_err *err) {
  if (!name || !out) return ERR_SET(err, CT_ERR_INVALID_ARG, "NULL argument");
  char file[128];
  snprintf(file, sizeof file, "%s.json", name);
  const embedded_file *f = embed_find(embedded_sets, file);
  if (!f) {
    char names[256];
    char quoted[CT_EXCERPT_MAX];
    return ERR_SET(err, CT_ERR_NOT_FOUND, "no workload set named '%s'; the sets are %s",
                   err_excerpt(quoted, sizeof quoted, name), wlset_names(names, sizeof names));
  }
  return wlset_parse(f->data, file, batch, out, err);
}
