/*
 * gpu_probe.h: the start of a GPU test that goes through convtune.h: open a
 * context on device 0 to see whether there is a GPU. The probe creates the
 * CUDA context, which a fork would not carry, so these tests run Check in
 * CK_NOFORK mode.
 */
#ifndef CT_TESTS_GPU_PROBE_H
#define CT_TESTS_GPU_PROBE_H

#include <stdio.h>
#include <stdlib.h>

#include "convtune/convtune.h"

/* 0 when there is a GPU; else what main returns: 77 (skipped, with the
 * reason) without one, EXIT_FAILURE when ct_open fails otherwise. */
static inline int gpu_probe(const char *test) {
  ct_context *probe = NULL;
  ct_status st = ct_open(NULL, 0, &probe);
  int rc = 0;
  if (st == CT_ERR_NO_DEVICE) {
    fprintf(stderr, "%s: skipped: %s\n", test, ct_errmsg(probe));
    rc = 77;
  } else if (st != CT_OK) {
    fprintf(stderr, "%s: ct_open: %s: %s\n", test, ct_status_name(st), ct_errmsg(probe));
    rc = EXIT_FAILURE;
  }
  ct_close(probe);
  return rc;
}

#endif
