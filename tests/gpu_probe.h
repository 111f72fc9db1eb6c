/*
 * gpu_probe.h: the probe of a GPU test that goes through convtune.h, for
 * test_main (tests/util.h): open a context on device 0 to see whether there
 * is a GPU. The probe creates the CUDA context, which a fork would not
 * carry, so these tests run Check without forking.
 */
#ifndef CT_TESTS_GPU_PROBE_H
#define CT_TESTS_GPU_PROBE_H

#include <stdio.h>

#include "convtune/convtune.h"

/* A test_probe: 1 when there is a GPU; 0 without one and -1 when ct_open
 * fails otherwise, with the reason in why. */
static inline int gpu_probe(char *why, size_t size) {
  ct_context *probe = NULL;
  ct_status st = ct_open(NULL, 0, &probe);
  int rc = 1;
  if (st == CT_ERR_NO_DEVICE) {
    snprintf(why, size, "%s", ct_errmsg(probe));
    rc = 0;
  } else if (st != CT_OK) {
    snprintf(why, size, "ct_open: %s: %s", ct_status_name(st), ct_errmsg(probe));
    rc = -1;
  }
  ct_close(probe);
  return rc;
}

#endif
