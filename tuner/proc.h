/*
 * proc.h: the tuner's worker processes (builder and runner): spawning a
 * child that talks to the parent over a socketpair, whole-message I/O with
 * an optional deadline, and how a child ended. A child closes every
 * descriptor it inherited but its socket, ignores the terminal's SIGINT and
 * SIGTERM (the parent decides when to stop, after the trial in flight, so
 * an interrupt is never recorded as a faulting config) and dies with its
 * parent.
 */
#ifndef CT_TUNER_PROC_H
#define CT_TUNER_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "core/error.h"

enum { PROC_OK, PROC_EOF, PROC_TIMEOUT };

/* The cores this process may run on (its affinity mask: a launcher such
 * as mpirun may have bound it to a few), at least 1. */
int proc_usable_cores(void);

/* Monotonic seconds. */
double proc_now_s(void);

/* Write all n bytes: 0, or -1 (the peer is gone, or another error); never
 * raises SIGPIPE. */
int proc_send_all(int fd, const void *p, size_t n);

/* Read all n bytes by deadline (proc_now_s() based; 0: none): PROC_OK,
 * PROC_EOF (also an error) or PROC_TIMEOUT. */
int proc_recv_all(int fd, void *p, size_t n, double deadline);

/* Fork a child running fn(fd, arg) on its end of a new socketpair; fn must
 * not return (it _exits). The parent gets the pid and its end. who names
 * the caller in messages. The child gets SIGKILL when the thread that
 * forked it ends (PR_SET_PDEATHSIG: the thread, not the process), so call
 * this from a thread that lives as long as the worker: convtune forks only
 * from its main thread. */
ct_status proc_spawn(const char *who, void (*fn)(int fd, void *arg), void *arg, pid_t *pid, int *fd,
                     ct_err *err);

/* The GPU device files (/dev/nvidia0, /dev/nvidia1, ...; not the driver's
 * /dev/nvidiactl or /dev/nvidia-uvm) that process pid (0: this one) holds
 * open, from /proc/PID/fd; -1 when that cannot be listed. A compiler holds
 * none (builder.c); test_builder and bench/nvrtc_probe.c count them. */
int proc_gpu_files(pid_t pid);

/* How a process ended, from its wait status: "signal 9 (Killed)",
 * "exit code 3" ("unknown status" for -1). */
void proc_describe_exit(int ws, char *buf, size_t size);

#endif
