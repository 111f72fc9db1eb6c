/*
 * outfile.c: see outfile.h. The temporary is mkstemp's ".NAME.XXXXXX" in the
 * target's folder, so that the rename stays on one file system and is
 * atomic; it is fsync'd before the rename, so that a crash leaves the old
 * file or the new one, never a part. Cost: one fsync per file.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "core/outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int outfile_resolve(const char *path, char out[PATH_MAX]) {
  if (realpath(path, out)) return 1;
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
  size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
  if (n >= sizeof dir || !*name) return 0;
  memcpy(dir, slash ? path : ".", n);
  dir[n] = '\0';
  char real[PATH_MAX];
  if (!realpath(dir, real)) return 0;
  return snprintf(out, PATH_MAX, "%s/%s", strcmp(real, "/") ? real : "", name) < PATH_MAX;
}

/* SQLite's files of a database: the database and what it keeps beside it. */
static const char *const db_suffixes[] = {"", "-wal", "-shm", "-journal"};

int outfile_is_database(const char *path, const char *db_path) {
  struct stat so, sd;
  char real_out[PATH_MAX], side[PATH_MAX + 16], real_db[PATH_MAX];
  int have_out = stat(path, &so) == 0, have_real = outfile_resolve(path, real_out);
  for (size_t i = 0; i < sizeof db_suffixes / sizeof db_suffixes[0]; i++) {
    snprintf(side, sizeof side, "%s%s", db_path, db_suffixes[i]);
    if (have_out && stat(side, &sd) == 0 && so.st_dev == sd.st_dev && so.st_ino == sd.st_ino)
      return 1;
    /* by name: the path as given, and with the database's links resolved
     * (SQLite names side files after the file a link points to) */
    if (have_real && outfile_resolve(side, real_db) && !strcmp(real_out, real_db)) return 1;
    if (have_real && realpath(db_path, real_db)) {
      snprintf(side, sizeof side, "%s%s", real_db, db_suffixes[i]);
      if (!strcmp(real_out, side)) return 1;
    }
  }
  return 0;
}

ct_status outfile_open(outfile *o, const char *path, const char *mode, ct_err *err) {
  struct stat sb;
  int exists = stat(path, &sb) == 0;
  memset(o, 0, sizeof *o);
  if (exists && !S_ISREG(sb.st_mode)) {
    snprintf(o->target, sizeof o->target, "%s", path);
    if (!(o->f = fopen(path, mode))) goto fail;
    return CT_OK;
  }
  /* rename needs only the folder writable: keep fopen's refusal of a file
   * the user may not write */
  if ((exists && access(path, W_OK) != 0) || !outfile_resolve(path, o->target)) goto fail;
  const char *slash = strrchr(o->target, '/');
  snprintf(o->tmp, sizeof o->tmp, "%.*s/.%s.XXXXXX", (int)(slash - o->target), o->target,
           slash + 1);
  int fd = mkstemp(o->tmp);
  if (fd < 0) goto fail;
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, exists ? sb.st_mode & 07777 : 0666 & ~mask) != 0 || !(o->f = fdopen(fd, mode))) {
    int e = errno;
    close(fd);
    unlink(o->tmp);
    errno = e;
    goto fail;
  }
  return CT_OK;
fail:
  o->tmp[0] = '\0';
  o->f = NULL;
  return ERR_SET(err, CT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
}

ct_status outfile_close(outfile *o, int ok, ct_err *err) {
  int e = 0;
  if (!o->f) return ok ? ERR_SET(err, CT_ERR_IO, "%s: not open", o->target) : CT_OK;
  if (ok && (fflush(o->f) != 0 || (o->tmp[0] && fsync(fileno(o->f)) != 0))) e = errno;
  if (fclose(o->f) != 0 && ok && !e) e = errno;
  o->f = NULL;
  if (ok && !e && o->tmp[0] && rename(o->tmp, o->target) != 0) e = errno;
  if ((!ok || e) && o->tmp[0]) unlink(o->tmp);
  if (e) return ERR_SET(err, CT_ERR_IO, "%s: write failed: %s", o->target, strerror(e));
  return CT_OK;
}
