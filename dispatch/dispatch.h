/*
 * dispatch.h: what the dispatch library (libconvtune, dispatch.c) offers
 * inside convtune beyond its public API (include/convtune/convtune.h).
 */
#ifndef CT_DISPATCH_DISPATCH_H
#define CT_DISPATCH_DISPATCH_H

#include "convtune/convtune.h"

/* Make ctx run w (ct_qconv*) with template_name and config_json (a
 * record's knob values, resolve_config) instead of what its database would
 * serve: the kernel is built now, compiled or loaded from the database's
 * cubins. For the chain refinement (bench/model_bench.h, mbench_refine),
 * which times a model's chain with one workload's candidate configs, each
 * in a context of its own. CT_ERR_INVALID_ARG (message on ctx) when w has a
 * kernel in ctx already or the config is not valid for w; the errors of a
 * first ct_qconv* call otherwise. */
ct_status dispatch_pin(ct_context *ctx, const ct_workload *w, const char *template_name,
                       const char *config_json);

#endif
