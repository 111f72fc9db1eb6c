/*
 * tmpdir.h: test scratch folders: removing one and everything in it (the
 * tests make theirs with mkdtemp and remove them at the end).
 */
#ifndef CT_TESTS_TMPDIR_H
#define CT_TESTS_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Remove path and, for a folder, everything in it. */
static inline void remove_tree(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return;
  if (S_ISDIR(sb.st_mode)) {
    DIR *dir = opendir(path);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char child[4096];
      int len = snprintf(child, sizeof child, "%s/%s", path, e->d_name);
      if (len > 0 && (size_t)len < sizeof child) remove_tree(child);
    }
    if (dir) closedir(dir);
    rmdir(path);
  } else {
    unlink(path);
  }
}

#endif
