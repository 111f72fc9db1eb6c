/*
 * builder.h: compiling batches of instances with NVRTC in parallel worker
 * processes (NVRTC serialises inside a process: 16 processes compile about
 * four times as fast as 16 threads), with a cache of cubins by (template
 * version, options, architecture) so that a config compiled once is never
 * compiled again in a run. Jobs are submitted and collected asynchronously,
 * so that the next batch compiles while the runner measures this one.
 * Several threads may share one builder (the tuners of a host's GPUs), each
 * as a client: a client collects only the jobs it submitted, with its own
 * tags. builder_submit and builder_collect are client 0's.
 */
#ifndef CT_TUNER_BUILDER_H
#define CT_TUNER_BUILDER_H

#include "core/arch.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"

typedef struct builder builder;

/* Clients are numbered 0 .. BUILDER_MAX_CLIENTS - 1. */
#define BUILDER_MAX_CLIENTS 64

/* Start n_workers compiler processes (0: one per core this process may
 * use, proc_usable_cores) for architecture a.
 * Must be called before the process initialises CUDA. Owned: builder_stop. */
ct_status builder_start(int n_workers, const arch *a, builder **out, ct_err *err);

/* Queue inst (copied) under the caller's tag. */
ct_status builder_submit(builder *b, const instance *inst, long tag, ct_err *err);
ct_status builder_submit_for(builder *b, int client, const instance *inst, long tag, ct_err *err);

/* Wait for one finished job (any order): *tag and the cubin (owned by the
 * caller: cubin_free) with status CT_OK, or CT_ERR_NVRTC with the log in
 * out->log (a COMPILE_ERROR outcome). Returns CT_ERR_NOT_FOUND when nothing
 * is queued or running. A cached result returns without compiling. */
ct_status builder_collect(builder *b, long *tag, cubin *out, ct_err *err);
/* builder_collect of one client's jobs: NOT_FOUND when it has none pending. */
ct_status builder_collect_for(builder *b, int client, long *tag, cubin *out, ct_err *err);

/* Jobs submitted and not yet collected, all clients'. */
int builder_pending(builder *b);
/* Cache hits so far. */
long builder_cache_hits(builder *b);

void builder_stop(builder *b);

#endif
