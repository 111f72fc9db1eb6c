/*
 * onnx_oracle.c: the C side of tests/test_onnx_oracle.py. Loads a
 * single-conv ONNX model with the importer (model_load, layout NCHW: ONNX
 * tensors are NCHW / NCDHW), reads the conv's data (and its residual, when
 * the importer folded an Add into the conv) from raw files, runs the CPU
 * reference (ct_reference_qconv) with the values the importer found, and
 * writes the output bytes, which the test compares with ONNX Runtime's.
 *
 *   onnx_oracle MODEL DATA [RESIDUAL] OUT
 *
 * DATA and RESIDUAL are the raw bytes of the graph's tensors (int8 or uint8,
 * NCHW / NCDHW); their sizes must be the workload's exactly. Prints one
 * line, the conv's name, key and fused ops, to stdout. Exit 0 on success, 1
 * on any failure (one line on stderr), 2 on a usage error.
 *
 * The model is read without fusing pointwise convs (model_opts.fuse_pre
 * NULL, and NCHW, where none is ever fused): every conv's own output is a
 * tensor of the graph that ONNX Runtime also computes. A conv absorbed by a
 * fused one writes no tensor of its own, so one would be refused, named.
 */
#include <stdio.h>
#include <stdlib.h>

#include "convtune/convtune.h"
#include "core/error.h"
#include "core/workload.h"
#include "model/model.h"

/* The whole of path into a new buffer of exactly `want` bytes; NULL (and a
 * message) when it cannot be read or its size differs. */
static void *read_exact(const char *path, size_t want, const char *what) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "onnx_oracle: cannot open %s file %s\n", what, path);
    return NULL;
  }
  unsigned char *buf = malloc(want + 1);
  size_t got = buf ? fread(buf, 1, want + 1, f) : 0;
  fclose(f);
  if (!buf || got != want) {
    fprintf(stderr, "onnx_oracle: %s file %s has %s%zu bytes, the workload needs %zu\n", what, path,
            got > want ? "more than " : "", got > want ? want : got, want);
    free(buf);
    return NULL;
  }
  return buf;
}

static size_t data_bytes(const ct_workload *w) {
  size_t n = (size_t)w->n * (size_t)w->c;
  int dims = w->op == CT_OP_CONV3D ? 3 : 2;
  for (int d = 0; d < dims; d++) n *= (size_t)w->in[d];
  return n;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: onnx_oracle MODEL DATA [RESIDUAL] OUT\n");
    return 2;
  }
  const char *out_path = argv[argc - 1];
  model_opts o;
  model_opts_default(&o);
  o.layout = CT_LAYOUT_NCHW;
  o.fuse_pre = NULL; /* each conv apart: its own output is the graph's tensor */
  model *m = NULL;
  const model_conv *mc = NULL;
  const ct_workload *w = NULL;
  size_t out_bytes = 0;
  ct_err err;
  err_clear(&err);
  void *data = NULL, *residual = NULL, *out = NULL;
  FILE *f = NULL;
  char msg[512] = "", key[CT_KEY_MAX];
  ct_status st;
  int rc = 1;
  if (model_load(argv[1], &o, &m, &err) != CT_OK) {
    fprintf(stderr, "onnx_oracle: %s\n", err.msg);
    goto done;
  }
  if (m->n_convs != 1) {
    fprintf(stderr, "onnx_oracle: %s has %d convolutions, expected 1\n", argv[1], m->n_convs);
    goto done;
  }
  mc = &m->convs[0];
  if (model_absorbed_by(m, 0) >= 0 || model_pre_of(m, 0) >= 0) {
    fprintf(stderr,
            "onnx_oracle: %s: conv %s was fused with another: its output is no tensor of "
            "the graph\n",
            argv[1], mc->name);
    goto done;
  }
  if (!mc->supported) {
    fprintf(stderr, "onnx_oracle: %s: conv %s is not supported: %s\n", argv[1], mc->name,
            mc->why ? mc->why : "(no reason)");
    goto done;
  }
  w = &mc->w;
  if (w->epi.residual != (argc == 5)) {
    fprintf(stderr, "onnx_oracle: conv %s takes %s residual, but %s residual file was given\n",
            mc->name, w->epi.residual ? "a" : "no", argc == 5 ? "a" : "no");
    goto done;
  }
  out_bytes = ct_out_bytes(w);
  if (out_bytes == 0) {
    fprintf(stderr, "onnx_oracle: conv %s: its workload is not valid\n", mc->name);
    goto done;
  }
  data = read_exact(argv[2], data_bytes(w), "data");
  if (!data) goto done;
  if (argc == 5 && !(residual = read_exact(argv[3], out_bytes, "residual"))) goto done;
  out = malloc(out_bytes);
  if (!out) {
    fprintf(stderr, "onnx_oracle: out of memory\n");
    goto done;
  }
  st = ct_reference_qconv(w, &mc->q, data, mc->weights, residual, out, msg, sizeof msg);
  if (st != CT_OK) {
    fprintf(stderr, "onnx_oracle: conv %s: ct_reference_qconv: %s: %s\n", mc->name,
            ct_status_name(st), msg);
    goto done;
  }
  f = fopen(out_path, "wb");
  if (!f || fwrite(out, 1, out_bytes, f) != out_bytes) {
    fprintf(stderr, "onnx_oracle: cannot write %s\n", out_path);
    goto done;
  }
  if (fclose(f) != 0) {
    f = NULL;
    fprintf(stderr, "onnx_oracle: cannot write %s\n", out_path);
    goto done;
  }
  f = NULL;
  printf("%s %s fused=%s\n", mc->name, workload_key(w, key, sizeof key),
         mc->fused && *mc->fused ? mc->fused : "-");
  rc = 0;
done:
  if (f) fclose(f);
  free(data);
  free(residual);
  free(out);
  model_free(m);
  return rc;
}
