/*
 * mpi.h: tuning across hosts with MPI (`mpirun -n R convtune tune --mpi`).
 *
 * Rank 0 owns the database and the tasks; every rank (rank 0 too) tunes
 * on its own GPUs with a pool (pool.h) and its own compilers. The ranks
 * other than 0 hold no database: their tuners' store (store.h) is a proxy
 * whose calls go to rank 0 as messages and are answered from its database.
 * Trial records, for instance, travel as a batch of JSON lines (the export
 * format) and are committed by rank 0 as one transaction. The ranks build
 * the same task list from the same arguments, so a task is named by its
 * index. Rank 0 hands each task once per kind of GPU (pool.h's kinds,
 * across the ranks) to whichever GPU asks.
 *
 * Failures. Every rank sends a heartbeat every MPI_HEARTBEAT_S. A rank
 * that rank 0 has not heard from for rank_timeout_s is lost: its tasks in
 * flight go to the others, and what it committed stays. Only its trials in
 * flight are lost. (Launch with `mpirun --enable-recovery`, without which
 * Open MPI ends the whole job when one process dies.) A worker that does
 * not hear from rank 0 for as long ends. Rank 0's database is consistent
 * after every batch, so a rerun resumes. SIGINT / SIGTERM: every rank
 * stops after its batches in flight, which rank 0 still records, and rank
 * 0 hands out no more tasks.
 *
 * Messages are one MPI_BYTE message each: a request (a fixed head and a
 * payload) with tag MPI_TAG_REQ to rank 0, and its reply with MPI_TAG_REP.
 * The heads carry convtune's own structs (device, arch, workload, config,
 * tune_result) as bytes: every rank must run the same convtune build, as
 * mpirun starts it. A rank's tuner threads share one mutex for MPI calls
 * (MPI_THREAD_SERIALIZED), each request waiting for its reply under it.
 */
#ifndef CT_TUNER_MPI_H
#define CT_TUNER_MPI_H

#include "tuner/pool.h"

#define MPI_HEARTBEAT_S 2.0

typedef struct mpi_opts {
  const char *db_path;   /* rank 0's database */
  tune_opts tune;        /* every rank's tuner options */
  const int *devices;    /* this rank's GPUs; n_devices 0: one, the rank's local */
  int n_devices;         /* rank (among the ranks of its host) modulo the host's GPUs */
  double rank_timeout_s; /* a rank not heard from this long is lost (60) */
} mpi_opts;

typedef struct mpi_result {
  int rank, size;
  int n_kinds;                  /* rank 0: the kinds of GPU of the run */
  device kinds[POOL_MAX_GPUS];  /* rank 0: a device of each kind */
  tune_result *results;         /* rank 0: task i on kind k at i * n_kinds + k; owned */
  int gpus;                     /* rank 0: GPUs in the run, all ranks' */
  long trials;                  /* rank 0: trials recorded */
  double wall_s;                /* rank 0: the run's wall time */
  int lost;                     /* rank 0: ranks lost */
  char lost_msg[CT_ERRMSG_MAX]; /* rank 0: the first lost rank, and why */
  int quiet;                    /* 1 on ranks but 0: rank 0 reports every failure */
} mpi_result;

/* Whether this build has MPI (CMake found it). */
int tune_mpi_built(void);

/* The rank the launcher gave this process, read from its environment
 * (Open MPI, PMIx, PMI, Slurm) before MPI starts: 0 when none says. */
int tune_mpi_env_rank(void);

/* Collective over MPI_COMM_WORLD: starts MPI (and ends it), every rank with
 * the same tasks. *out gets the run's results on rank 0 (free them with
 * mpi_result_free). A failure of any rank before the run (no GPU, a
 * database refused) is reported once, by rank 0, naming the rank; the
 * others return it with out->quiet set. */
ct_status tune_mpi_run(const mpi_opts *o, const pool_task *tasks, int n_tasks, pool_progress_fn fn,
                       void *user, mpi_result *out, ct_err *err);
void mpi_result_free(mpi_result *r);

/* A session without tasks or GPUs, for tests and tools: rank 0 serves the
 * database at db_path until every other rank is done; every other rank
 * calls fn with a proxy store for GPUs like dev (its calls are requests to
 * rank 0), then is done. Collective over MPI_COMM_WORLD (starts and ends
 * MPI); *rank gets this process's rank. */
typedef ct_status (*mpi_session_fn)(const tune_store *s, void *ctx, ct_err *err);
ct_status tune_mpi_session(const char *db_path, double timeout_s, const device *dev,
                           mpi_session_fn fn, void *ctx, int *rank, ct_err *err);

/* The records protocol alone, for tests: a batch of trials as JSON lines
 * (one per trial, the export format) and back. Owned: free() / trials_free. */
char *mpi_trials_text(const trial *t, int n, size_t *len);
ct_status mpi_trials_parse(const char *text, size_t len, trial **out, int *n, ct_err *err);

#endif
