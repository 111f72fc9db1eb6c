/*
 * outfile.h: output files that appear whole or not at all, and the check
 * that an output path is not a database. A file is written to a temporary
 * name beside it and renamed over it once flushed and synced; a failure
 * removes the temporary and leaves the old file as it was. What is not a
 * regular file (a device, a pipe) is written in place.
 */
#ifndef CT_CORE_OUTFILE_H
#define CT_CORE_OUTFILE_H

#include <limits.h>
#include <stdio.h>

#include "core/error.h"

typedef struct outfile {
  FILE *f; /* write here */
  char target[PATH_MAX];
  char tmp[PATH_MAX + 16]; /* "" when written in place */
} outfile;

/* Open o for path (through a symbolic link: its target) with fopen's mode
 * ("w" or "wb"); the new file gets the old one's permissions, or a new
 * file's. CT_ERR_IO naming path when it cannot be written. */
ct_status outfile_open(outfile *o, const char *path, const char *mode, ct_err *err);

/* Close o; when ok and everything reached the disk, rename it into place,
 * else remove it. CT_ERR_IO when ok but the write failed. */
ct_status outfile_close(outfile *o, int ok, ct_err *err);

/* path made absolute with every symbolic link resolved, into out: the file
 * itself when it exists, else its folder resolved and its name appended.
 * 0 when neither resolves. */
int outfile_resolve(const char *path, char out[PATH_MAX]);

/* Whether writing path would write over the SQLite database at db_path or
 * one of its side files (-wal, -shm, -journal), by any path: the same file
 * (a hard or symbolic link, another spelling), or the name SQLite would
 * give a side file that does not exist yet. */
int outfile_is_database(const char *path, const char *db_path);

#endif
