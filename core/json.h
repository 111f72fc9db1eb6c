/*
 * json.h: parsing JSON text with a message that says where it broke.
 * cJSON reports only a pointer to the failure; users need a line and column.
 */
#ifndef CT_CORE_JSON_H
#define CT_CORE_JSON_H

#include <cJSON.h>

#include "core/error.h"

/* Parse text (NUL-terminated, nothing after the value but white space) into
 * *out, an owned tree (cJSON_Delete). Fails with CT_ERR_PARSE ("ORIGIN: bad
 * JSON: syntax error at line L, column C") or CT_ERR_NO_MEMORY. */
ct_status json_parse(const char *text, const char *origin, cJSON **out, ct_err *err);

#endif
