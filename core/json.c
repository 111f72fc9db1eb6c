/* json.c: cJSON parsing with a line and column in the error message. */
#include "core/json.h"

#include <stddef.h>

ct_status json_parse(const char *text, const char *origin, cJSON **out, ct_err *err) {
  const char *end = NULL;
  *out = cJSON_ParseWithOpts(text, &end, 1);
  if (*out) return CT_OK;
  char where[CT_EXCERPT_MAX]; /* origin may be a file name of any length */
  err_excerpt(where, sizeof where, origin);
  if (!end) return ERR_SET(err, CT_ERR_NO_MEMORY, "%s: out of memory parsing JSON", where);
  int line = 1, col = 1;
  for (const char *p = text; p < end; p++) {
    col = *p == '\n' ? 1 : col + 1;
    line += *p == '\n';
  }
  return ERR_SET(err, CT_ERR_PARSE, "%s: bad JSON: syntax error at line %d, column %d", where, line,
                 col);
}
