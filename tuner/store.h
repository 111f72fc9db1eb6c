/*
 * store.h: where the tuning loop keeps its trials and finds what it starts
 * from, as a table of functions over a context, so that the loop (tune.c)
 * knows no storage: it proposes, measures and reports, and hands each batch
 * to record(). The default store is the database (store_db.c); every query
 * is of the device the store was opened for and of a template's current
 * version, and record() stamps that device on the trials it writes.
 * The records themselves are db.h's types (trial, outcome, db_device): the
 * store's currency, whatever keeps them.
 */
#ifndef CT_TUNER_STORE_H
#define CT_TUNER_STORE_H

#include <stddef.h>

#include "db/db.h"
#include "gpu/device.h"
#include "space/space.h"
#include "templates/template.h"

typedef struct tune_store {
  void *ctx;
  /* Every trial of workload key with tpl (resume). Owned: trials_free. */
  ct_status (*trials)(void *ctx, const char *key, const template_desc *tpl, trial **out, int *n,
                      ct_err *err);
  /* At most limit trials with tpl of workloads other than key, newest first
   * (transfer learning). Owned: trials_free. */
  ct_status (*trials_other)(void *ctx, const char *key, const template_desc *tpl, int limit,
                            trial **out, int *n, ct_err *err);
  /* The best config of the nearest tuned workload other than pw that is
   * valid for pw on a (resolve_nearest), *found 1 when there is one. */
  ct_status (*nearest)(void *ctx, const arch *a, const template_desc *tpl, const ct_workload *pw,
                       config *out, int *found, ct_err *err);
  /* The best config of pw itself under a retired version of tpl, valid for
   * pw on a now (resolve_retired), *found 1 when there is one. */
  ct_status (*retired)(void *ctx, const arch *a, const template_desc *tpl, const ct_workload *pw,
                       config *out, int *found, ct_err *err);
  /* Keep a batch of trials, all or none of it; the device is stamped. */
  ct_status (*record)(void *ctx, trial *trials, int n, ct_err *err);
  /* The best OK trial of key with tpl on this very device into *out (owned:
   * trial_free), *found 1; *found 0 when none (the same compute capability
   * elsewhere does not count). */
  ct_status (*best)(void *ctx, const char *key, const template_desc *tpl, trial *out, int *found,
                    ct_err *err);
  /* Kernel cache, keyed by a trial's template version, options and arch:
   * whether it holds rec's cubin, and keeping one. */
  int (*has_kernel)(void *ctx, const trial *rec);
  ct_status (*put_kernel)(void *ctx, const trial *rec, const void *data, size_t size, ct_err *err);
  /* Release ctx; called once, by tuner_close. */
  void (*close)(void *ctx);
} tune_store;

/* The database store: opens (creating, migrating) the database at db_path
 * for records of dev, into *out. Owned: out->close(out->ctx). */
ct_status tune_store_db_open(const char *db_path, const device *dev, tune_store *out, ct_err *err);

/* The db_device of a device (for records and queries). */
void tune_db_device(const device *dev, db_device *out);

#endif
