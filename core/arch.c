/*
 * arch.c: the table of named architectures (see arch.h). Shared memory
 * figures are the per-block opt-in maxima of the CUDA C Programming Guide
 * (e.g. 227 KB = 232448 bytes on sm_90, 163 KB on sm_80). The table starts
 * at sm_75, the oldest architecture NVRTC 13 compiles for.
 */
#include "core/arch.h"

#include <stdio.h>
#include <string.h>

static const arch table[] = {
    {"sm_75", 7, 5, 65536, 65536, 1024, 65536, 65536, 255, 0},
    {"sm_80", 8, 0, 166912, 167936, 1024, 65536, 65536, 255, 0},
    {"sm_86", 8, 6, 101376, 102400, 1024, 65536, 65536, 255, 0},
    {"sm_87", 8, 7, 166912, 167936, 1024, 65536, 65536, 255, 0},
    {"sm_89", 8, 9, 101376, 102400, 1024, 65536, 65536, 255, 0},
    {"sm_90", 9, 0, 232448, 233472, 1024, 65536, 65536, 255, 0},
    {"sm_100", 10, 0, 232448, 233472, 1024, 65536, 65536, 255, 0},
    {"sm_120", 12, 0, 101376, 102400, 1024, 65536, 65536, 255, 0},
};

void arch_set_name(arch *a) {
  snprintf(a->name, sizeof a->name, "sm_%d%d", a->cc_major, a->cc_minor);
}

ct_status arch_from_name(const char *name, arch *out, ct_err *err) {
  if (!name || !out) return ERR_SET(err, CT_ERR_INVALID_ARG, "NULL argument");
  char want[16];
  int major, minor;
  if (sscanf(name, "%d.%d", &major, &minor) == 2)
    snprintf(want, sizeof want, "sm_%d%d", major, minor);
  else if (strncmp(name, "sm_", 3) && strlen(name) < 8)
    snprintf(want, sizeof want, "sm_%s", name);
  else
    snprintf(want, sizeof want, "%.15s", name);
  char names[256] = "";
  size_t len = 0;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (strcmp(table[i].name, want) == 0) {
      *out = table[i];
      return CT_OK;
    }
    len += snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", table[i].name);
  }
  return ERR_SET(err, CT_ERR_NOT_FOUND, "unknown architecture '%s'; known: %s", name, names);
}
