/*
 * fuzz_onnx.c: libFuzzer harness of the ONNX reader. model_load takes a
 * path, so each input is written to m.onnx in a folder of this process's
 * own (mkdtemp under $TMPDIR, else /tmp; removed at exit), then loaded
 * with options picked by the input's size (the model's own batch or 2; the
 * layouts; a float model's 8-bit output with an epilogue), and for a
 * loaded model model_workloads. Nothing may crash or leak; a refusal comes
 * with a message; an accepted model's convs are either supported with a
 * valid workload (check_workload, fuzz.h) or carry the reason, and its set
 * counts each supported conv once.
 * Seeds: tests/fuzz/corpus/fuzz_onnx (tests/data's tiny models).
 * Cost: a file write and a full parse per input.
 */
#include "fuzz.h"

#include <unistd.h>

#include "core/wlset.h"
#include "model/model.h"

static char dir[4096], path[4200];

static void cleanup(void) {
  unlink(path);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/ct-fuzz-onnx-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("fuzz_onnx: mkdtemp");
    abort();
  }
  snprintf(path, sizeof path, "%s/m.onnx", dir);
  atexit(cleanup);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f)) abort();
  model_opts o;
  model_opts_default(&o);
  static const ct_layout layouts[] = {CT_LAYOUT_NHWC, CT_LAYOUT_NCHW, CT_LAYOUT_NCHW4C};
  o.batch = size % 2 ? 2 : 0;
  o.layout = layouts[size / 2 % 3];
  if (size / 6 % 2) {
    o.float_out = CT_DTYPE_INT8;
    o.float_epilogue = "bias,qc";
  }
  model *m = NULL;
  ct_err err = {0};
  ct_status st = model_load(path, &o, &m, &err);
  if (st != CT_OK) {
    FUZZ_CHECK(!m && st < 0 && err.msg[0], "refused (status %d) without a message", (int)st);
    return 0;
  }
  FUZZ_CHECK(m && m->n_convs >= 0 && m->batch >= 1, "loaded: batch %d", m ? m->batch : -1);
  int n_supported = 0;
  for (int i = 0; i < m->n_convs; i++) {
    const model_conv *c = &m->convs[i];
    FUZZ_CHECK(c->name && c->op_type && c->input_from && (c->supported == !c->why),
               "conv %d: name, op, input or reason missing", i);
    FUZZ_CHECK(c->input_conv >= -1 && c->input_conv < m->n_convs && c->residual_conv >= -1 &&
                   c->residual_conv < m->n_convs,
               "conv %d: input %d, residual %d of %d convs", i, c->input_conv, c->residual_conv,
               m->n_convs);
    if (!c->supported) continue;
    n_supported++;
    FUZZ_CHECK(c->w.n == m->batch && c->w.layout == o.layout, "conv %d: batch %d, layout %d", i,
               c->w.n, (int)c->w.layout);
    check_workload(&c->w, "onnx");
  }
  wlset *set = NULL;
  int *counts = NULL;
  FUZZ_CHECK(model_workloads(m, &set, &counts, &err) == CT_OK, "model_workloads: %s", err.msg);
  int total = 0;
  for (int i = 0; i < set->n_items; i++) {
    FUZZ_CHECK(counts[i] >= 1 && set->items[i].name, "item %d: count %d", i, counts[i]);
    total += counts[i];
  }
  FUZZ_CHECK(total == n_supported, "the set counts %d convs, %d are supported", total, n_supported);
  wlset_free(set);
  free(counts);
  model_free(m);
  return 0;
}
