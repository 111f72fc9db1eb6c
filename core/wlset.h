/*
 * wlset.h: workload sets: a JSON list of named workloads, from a file or one
 * of the sets embedded at build time from scripts/workloads/ (one .json each)
 * ("resnet50", "resnet18", "resnet3d18", "c3d", and the grouped and depthwise
 * "mobilenetv2", "efficientnet_b0_dw", "resnext50_g", "csn_dw3d",
 * "resnext3d_g").
 *
 * Sets leave the batch free: loading with batch > 0 sets every workload's n
 * to it (a file's own "n" is overridden); batch 0 keeps each entry's n
 * (default 1). Loading is all or nothing: one bad entry rejects the set with
 * a message naming the entry (index and name) and the field.
 */
#ifndef CT_CORE_WLSET_H
#define CT_CORE_WLSET_H

#include "core/workload.h"

typedef struct wlset_item {
  char *name; /* owned by the set; "#i" (1-based) when the entry has none */
  ct_workload w;
} wlset_item;

typedef struct wlset {
  char *name; /* the set's name: the file's base name without ".json" */
  int n_items;
  wlset_item *items;
} wlset;

/* Parse text (a JSON list of workload objects, each with an optional
 * "name"; a single object is a set of one). origin names the text in
 * messages. Owned result: free with wlset_free. */
ct_status wlset_parse(const char *text, const char *origin, int batch, wlset **out, ct_err *err);

/* Load a set from a file path. */
ct_status wlset_load_file(const char *path, int batch, wlset **out, ct_err *err);

/* Load an embedded set by name ("resnet50"); CT_ERR_NOT_FOUND lists the names. */
ct_status wlset_load_named(const char *name, int batch, wlset **out, ct_err *err);

/* The names of the embedded sets, comma-separated, into buf. Returns buf. */
char *wlset_names(char *buf, size_t size);

/* Free a set; NULL is accepted. */
void wlset_free(wlset *s);

#endif
