/*
 * embed.h: files compiled into the library (workload sets now, kernel
 * template sources later) by cmake/embed.cmake. Each table ends with an entry
 * whose name is NULL; data is NUL-terminated so text can be used directly.
 * A table SYMBOL comes with SYMBOL_count and the parallel arrays
 * SYMBOL_names and SYMBOL_data (NULL-terminated), for APIs that take them.
 */
#ifndef CT_CORE_EMBED_H
#define CT_CORE_EMBED_H

#include <stddef.h>

typedef struct embedded_file {
  const char *name; /* base name, e.g. "resnet50.json" */
  const char *data; /* size bytes and a NUL; static */
  size_t size;
  const char *hash; /* 16 hex digits of SHA-256 over data and the headers it may include */
} embedded_file;

/* The entry named name in table, or NULL. */
const embedded_file *embed_find(const embedded_file *table, const char *name);

#endif
