/*
 * tuner_probe.h: the probe of a GPU test that goes through the tuner, for
 * test_main (tests/util.h): open a tuner on a database in the run's scratch
 * folder, the way the tuner does it (its runner's worker makes the CUDA
 * context), so that the test process never initialises CUDA.
 */
#ifndef CT_TESTS_TUNER_PROBE_H
#define CT_TESTS_TUNER_PROBE_H

#include <stdio.h>

#include "tests/util.h"
#include "tuner/tune.h"

/* A test_probe: 1 when the tuner opens (or fails for another reason, which
 * the tests then report); 0 without a GPU, with the reason in why. */
static inline int tuner_probe(char *why, size_t size) {
  tune_opts o;
  tune_opts_default(&o);
  tuner *t = NULL;
  ct_err err = {0};
  char probe[600];
  snprintf(probe, sizeof probe, "%s/probe.db", test_root());
  ct_status st = tuner_open(probe, &o, &t, &err);
  tuner_close(t);
  if (st == CT_ERR_NO_DEVICE) {
    snprintf(why, size, "%s", err.msg);
    return 0;
  }
  return 1;
}

#endif
