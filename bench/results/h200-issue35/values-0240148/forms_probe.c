/* forms_probe.c: a scratch probe, not built by CMake. For each conv of an
 * ONNX model at batch 32, the seeded-form word of its ONNX block
 * (quant_onnx_block's CTQO_FIRST: 2 SEED, 4 HISAT, bit 0 the residual's
 * order) under the model's values and under quant_random's with the tuner's
 * seed (1). Built on the development machine against build-rel's archives:
 *   gcc -std=c11 -I. -Ibuild-rel/include -Iinclude -I/usr/include/cjson \
 *     forms_probe.c -o forms build-rel/libct_model.a build-rel/libconvtune.a \
 *     build-rel/libct_core.a -L/usr/local/cuda/lib64 -lcudart -lcuda -lnvrtc \
 *     -lsqlite3 -lprotobuf-c -lcjson -lm -lpthread -ldl
 *   ./forms models/mobilenetv2_qdq.onnx > forms-b32.txt
 */
#include <stdio.h>
#include <stdlib.h>
#include "model/model.h"
#include "core/quant.h"
#include "core/quant.cuh"
int main(int argc, char **argv) {
  model_opts o; model_opts_default(&o); o.batch = 32;
  model *m; ct_err err = {0};
  if (model_load(argv[1], &o, &m, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
  int diff = 0;
  for (int i = 0; i < m->n_convs; i++) {
    model_conv *c = &m->convs[i];
    int32_t b[CTQO_WORDS], b2[CTQO_WORDS];
    quant_onnx_block(&c->w, &c->q, b);
    quant_store qs;
    if (quant_random(&c->w, 1, &qs, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    quant_onnx_block(&c->w, &qs.q, b2);
    char key[512]; ct_workload_key(&c->w, key, sizeof key);
    printf("%-28s model %d random %d %s\n", c->name, b[CTQO_FIRST], b2[CTQO_FIRST], b[CTQO_FIRST]!=b2[CTQO_FIRST]?"DIFF":"");
    diff += b[CTQO_FIRST]!=b2[CTQO_FIRST];
    quant_store_free(&qs);
  }
  printf("%d differ\n", diff);
  model_free(m);
}
