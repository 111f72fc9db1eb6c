/* proc.c: worker processes of the tuner (see proc.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "tuner/proc.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int proc_usable_cores(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (int)n;
}

int proc_gpu_files(pid_t pid) {
  char dir[64];
  if (pid > 0)
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
  else
    snprintf(dir, sizeof dir, "/proc/self/fd");
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char path[400], target[256];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    ssize_t k = readlink(path, target, sizeof target - 1);
    if (k <= 0) continue;
    target[k] = '\0';
    n += strncmp(target, "/dev/nvidia", 11) == 0 && target[11] >= '0' && target[11] <= '9';
  }
  closedir(d);
  return n;
}

double proc_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int proc_send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

int proc_recv_all(int fd, void *p, size_t n, double deadline) {
  char *c = p;
  while (n > 0) {
    if (deadline > 0) {
      double left = deadline - proc_now_s();
      if (left <= 0) return PROC_TIMEOUT;
      struct pollfd pfd = {.fd = fd, .events = POLLIN, .revents = 0};
      int k = poll(&pfd, 1, (int)(left * 1000) + 1);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) return PROC_EOF;
      if (k == 0) continue; /* the deadline check above decides */
    }
    ssize_t k = recv(fd, c, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return PROC_EOF;
    c += k;
    n -= (size_t)k;
  }
  return PROC_OK;
}

/* In a fresh child: close every inherited descriptor but 0-2 and keep, so
 * that it holds no end of another worker's socket and none of the parent's
 * files. Best effort: without /proc nothing is closed. */
static void close_inherited(int keep) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  int dfd = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end == '\0' && end != e->d_name && fd > 2 && fd != keep && fd != dfd) close((int)fd);
  }
  closedir(d);
}

ct_status proc_spawn(const char *who, void (*fn)(int fd, void *arg), void *arg, pid_t *pid, int *fd,
                     ct_err *err) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    return ERR_SET(err, CT_ERR_IO, "%s: socketpair: %s", who, strerror(errno));
  pid_t parent = getpid();
  pid_t p = fork();
  if (p < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    return ERR_SET(err, CT_ERR_IO, "%s: fork: %s", who, strerror(e));
  }
  if (p == 0) {
    /* Die with the parent, whatever way it goes, first thing: a worker busy
     * in a compile or a measurement would not see its socket close. The
     * parent may have died before the prctl: then getppid() is another
     * process (init or a subreaper) and no signal will come. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(0);
    close(sv[0]);
    close_inherited(sv[1]);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    fn(sv[1], arg);
    _exit(0);
  }
  close(sv[1]);
  *pid = p;
  *fd = sv[0];
  return CT_OK;
}

void proc_describe_exit(int ws, char *buf, size_t size) {
  if (ws != -1 && WIFSIGNALED(ws))
    snprintf(buf, size, "signal %d (%s)", WTERMSIG(ws), strsignal(WTERMSIG(ws)));
  else if (ws != -1 && WIFEXITED(ws))
    snprintf(buf, size, "exit code %d", WEXITSTATUS(ws));
  else
    snprintf(buf, size, "unknown status");
}
