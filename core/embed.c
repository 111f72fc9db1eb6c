/* embed.c: lookup in the tables that cmake/embed.cmake generates. Linear: the
 * tables hold a handful of entries. */
#include "core/embed.h"

#include <string.h>

const embedded_file *embed_find(const embedded_file *table, const char *name) {
  for (const embedded_file *f = table; f && f->name; f++)
    if (strcmp(f->name, name) == 0) return f;
  return NULL;
}
