/*
 * test_gpu_model_bench.c (label gpu): `convtune bench --model` end to end on
 * a GPU (mbench_run), on small models built here in memory: a stem from
 * the graph input (3 channels: the channels-last stem templates), a
 * stride-2 conv fed by it, a 1x1 conv, a block's last conv with a residual
 * from an earlier conv, and a conv after a "MaxPool" (a fresh input). Run
 * channels-last (nhwc), packed (nchw4c: the stem's fourth channel), and as
 * a float model (no values: random weights and quant values). Each run
 * must check every node exact on the first and last image, time every
 * node and the chain (one CUDA graph), and, where cuDNN loads, time the
 * fp16 chain. The importer's tiny models (tests/data, found through
 * CT_SOURCE_DIR) run too, and CT_MODEL_BENCH_ONNX names one more model
 * file (e.g. a ResNet-50 made by scripts/models), each node exact.
 * Exits 77 without a GPU. The reports go to stdout.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/model_bench.h"
#include "convtune/convtune.h"
#include "core/quant.h"
#include "core/rng.h"
#include "db/db.h"
#include "gpu/device.h"
#include "resolve/resolve.h"
#include "templates/template.h"
#include "tests/gpu_probe.h"
#include "tests/util.h"

#define N_CONVS 5

typedef struct tiny {
  model m;
  model_conv convs[N_CONVS];
  quant_store qs[N_CONVS];
} tiny;

static ct_workload conv(int n, int c, int k, int hw, int r, int s, int p, int res,
                        ct_layout layout) {
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.layout = layout;
  w.n = n, w.c = c, w.k = k;
  w.in[0] = w.in[1] = hw;
  w.kernel[0] = w.kernel[1] = r;
  w.stride[0] = w.stride[1] = s;
  w.pad_before[0] = w.pad_before[1] = w.pad_after[0] = w.pad_after[1] = p;
  w.out_type = CT_DTYPE_INT8;
  w.epi.bias = 1;
  w.epi.scale = CT_SCALE_CHANNEL;
  w.epi.residual = res;
  return w;
}

/* Conv i of t: its workload, wiring and (quantized) values: random weights,
 * quant_random's values with a ReLU clamp. */
static void add(tiny *t, int i, const char *name, ct_workload w, int input_conv,
                const char *input_from, int residual_conv, int quantized) {
  model_conv *c = &t->convs[i];
  c->name = (char *)name;
  c->op_type = (char *)"QLinearConv";
  c->w = w;
  c->supported = 1;
  c->fused = (char *)(w.epi.residual ? "Add(residual),Relu" : "Relu");
  c->input_conv = input_conv;
  c->input_from = (char *)input_from;
  c->residual_conv = residual_conv;
  c->residual_from = (char *)(residual_conv < 0 ? "graph input 'r'" : NULL);
  if (!quantized) return;
  ct_err err = {0};
  ck_assert_msg(quant_random(&w, 100 + (uint64_t)i, &t->qs[i], &err) == CT_OK, "%s", err.msg);
  t->qs[i].q.clamp_min = t->qs[i].q.out_zero_point; /* ReLU */
  size_t nw = (size_t)workload_weight_elems(&w);
  c->weights = malloc(nw);
  ck_assert_ptr_nonnull(c->weights);
  rng r;
  rng_seed(&r, 7 + (uint64_t)i);
  for (size_t j = 0; j < nw; j++) c->weights[j] = (int8_t)rng_next(&r);
  c->bias = t->qs[i].bias;
  c->scale = t->qs[i].scale;
  c->q = t->qs[i].q;
}

static void build(tiny *t, ct_layout layout, int quantized) {
  memset(t, 0, sizeof *t);
  const int n = 2;
  add(t, 0, "stem", conv(n, 3, 16, 16, 3, 1, 1, 0, layout), -1, "graph input 'x'", -1, quantized);
  add(t, 1, "down", conv(n, 16, 32, 16, 3, 2, 1, 0, layout), 0, NULL, -1, quantized);
  add(t, 2, "pointwise", conv(n, 32, 32, 8, 1, 1, 0, 0, layout), 1, NULL, -1, quantized);
  add(t, 3, "block_end", conv(n, 32, 32, 8, 3, 1, 1, 1, layout), 2, NULL, 1, quantized);
  add(t, 4, "after_pool", conv(n, 32, 64, 4, 1, 1, 0, 0, layout), -1, "MaxPool /pool", -1,
      quantized);
  t->m.path = (char *)(quantized ? "tiny_in_memory.onnx" : "tiny_float.onnx");
  t->m.form = quantized ? MODEL_QDQ : MODEL_FLOAT;
  t->m.batch = n;
  t->m.n_convs = N_CONVS;
  t->m.convs = t->convs;
}

static void release(tiny *t) {
  for (int i = 0; i < N_CONVS; i++) {
    free(t->convs[i].weights);
    quant_store_free(&t->qs[i]);
  }
}

/* Run m and hold the result to the brief: every node exact, timed, the
 * chain timed on convtune and (where cuDNN loads) on cuDNN fp16; with
 * in_chain, every node timed inside the chain too, the values adding up
 * to the chain's time (the last cut is the whole chain, timed again). */
static void run_and_check(const model *m, const char *label, int expect_run, int in_chain,
                          int arena, int streams) {
  bench_opts o;
  bench_opts_default(&o);
  o.db_path = getenv("CT_DISPATCH_DB"); /* unset: no database, the defaults */
  o.repeats = 3;
  o.min_replay_us = 200;
  o.quiet = getenv("CT_VERBOSE") == NULL;
  o.in_chain = in_chain;
  o.arena = arena;
  o.streams = streams;
  mbench_result r;
  memset(&r, 0, sizeof r);
  snprintf(r.head.commit, sizeof r.head.commit, "test");
  snprintf(r.head.command, sizeof r.head.command, "test_gpu_model_bench %s", label);
  ct_err err = {0};
  ct_status st = mbench_run(&o, m, &r, &err);
  mbench_write_markdown(&r, stdout);
  fflush(stdout);
  ck_assert_msg(st == CT_OK, "%s: %s", label, err.msg);
  if (expect_run >= 0) ck_assert_int_eq(r.n_run, expect_run);
  ck_assert_int_gt(r.n_run, 0);
  for (int i = 0; i < r.n_nodes; i++) {
    const mbench_node *nd = &r.nodes[i];
    if (!nd->runs) continue;
    ck_assert_msg(nd->check == MBENCH_EXACT, "%s, %s: %s", label, nd->name, nd->check_note);
    ck_assert_msg(bench_has(nd->t[MBENCH_CONVTUNE]) && nd->t[MBENCH_CONVTUNE] > 0, "%s, %s: %s",
                  label, nd->name, nd->note[MBENCH_CONVTUNE]);
  }
  ck_assert_int_eq(r.n_exact, r.n_run);
  ck_assert_int_eq(r.n_wrong, 0);
  ck_assert_msg(bench_has(r.chain[MBENCH_CONVTUNE]) && r.chain[MBENCH_CONVTUNE] > 0, "%s: %s",
                label, r.chain_note[MBENCH_CONVTUNE]);
  if (r.head.cudnn_version[0]) {
    ck_assert_msg(bench_has(r.chain[MBENCH_CUDNN_FP16]), "%s: cuDNN fp16: %s", label,
                  r.chain_note[MBENCH_CUDNN_FP16]);
    /* int8 runs the chain or says why not */
    ck_assert(bench_has(r.chain[MBENCH_CUDNN_INT8]) || r.chain_note[MBENCH_CUDNN_INT8][0]);
  }
  double in_sum = mbench_in_chain_sum(&r);
  if (in_chain) {
    ck_assert_msg(bench_has(in_sum), "%s: a node not timed inside the chain", label);
    ck_assert_msg(fabs(in_sum - r.chain[MBENCH_CONVTUNE]) <= 0.1 * r.chain[MBENCH_CONVTUNE] + 2,
                  "%s: the nodes in the chain add up to %.2f us, the chain %.2f", label, in_sum,
                  r.chain[MBENCH_CONVTUNE]);
  } else {
    ck_assert(!bench_has(in_sum));
  }
  /* --arena: the outputs in reused buffers, no more of them or their bytes
   * than one a node (the checks above ran node by node as the chain went) */
  ck_assert_int_eq(r.arena, arena);
  if (arena) {
    ck_assert_int_ge(r.arena_buffers, 1);
    ck_assert_int_le(r.arena_buffers, r.n_run);
    ck_assert(r.arena_bytes > 0 && r.arena_bytes <= r.out_bytes);
  }
  /* --streams: every copy's outputs equal the first's, each side timed
   * where its one chain was */
  ck_assert_int_eq(r.streams, streams);
  if (streams > 1) {
    ck_assert_msg(r.copies_identical, "%s: %s", label, r.streams_note[MBENCH_CONVTUNE]);
    ck_assert_msg(bench_has(r.streams_chain[MBENCH_CONVTUNE]) &&
                      r.streams_chain[MBENCH_CONVTUNE] > 0,
                  "%s: %s", label, r.streams_note[MBENCH_CONVTUNE]);
    for (int f = MBENCH_CUDNN_FP16; f <= MBENCH_CUDNN_INT8; f++)
      ck_assert_msg(bench_has(r.streams_chain[f]) == bench_has(r.chain[f]), "%s, %s: %s", label,
                    mbench_field_names[f], r.streams_note[f]);
  } else {
    ck_assert(!bench_has(r.streams_chain[MBENCH_CONVTUNE]));
  }
  mbench_result_free(&r);
}

START_TEST(nhwc_chain_exact) {
  tiny t;
  build(&t, CT_LAYOUT_NHWC, 1);
  run_and_check(&t.m, "nhwc", N_CONVS, 1, 0, 1);
  release(&t);
}
END_TEST

START_TEST(nhwc_chain_arena_exact) {
  tiny t;
  build(&t, CT_LAYOUT_NHWC, 1);
  run_and_check(&t.m, "nhwc --arena", N_CONVS, 1, 1, 1);
  release(&t);
}
END_TEST

/* three copies of the chain at once (an odd count), on their own tensors */
START_TEST(nhwc_chain_streams) {
  tiny t;
  build(&t, CT_LAYOUT_NHWC, 1);
  run_and_check(&t.m, "nhwc --streams 3", N_CONVS, 0, 0, 3);
  release(&t);
}
END_TEST

START_TEST(wiring_as_planned) {
  /* the real tensors flow where the graph connects the convs */
  tiny t;
  build(&t, CT_LAYOUT_NHWC, 1);
  mbench_result r;
  memset(&r, 0, sizeof r);
  bench_peaks p = {0};
  ct_err err = {0};
  ck_assert_int_eq(mbench_plan(&t.m, &p, NULL, &r, &err), CT_OK);
  ck_assert_int_eq(r.nodes[1].input_conv, 0);
  ck_assert_int_eq(r.nodes[2].input_conv, 1);
  ck_assert_int_eq(r.nodes[3].input_conv, 2);
  ck_assert_int_eq(r.nodes[3].residual_conv, 1);
  ck_assert_int_eq(r.nodes[4].input_conv, -1);
  ck_assert_int_eq(r.n_fresh_inputs, 2);
  mbench_result_free(&r);
  release(&t);
}
END_TEST

START_TEST(nchw4c_chain_exact) {
  tiny t;
  build(&t, CT_LAYOUT_NCHW, 1); /* run packed */
  run_and_check(&t.m, "nchw4c", N_CONVS, 0, 0, 1);
  release(&t);
}
END_TEST

START_TEST(float_model_random_values) {
  tiny t;
  build(&t, CT_LAYOUT_NHWC, 0);
  run_and_check(&t.m, "float", N_CONVS, 0, 0, 1);
  release(&t);
}
END_TEST

/* A model file, at batch 2, every node exact. */
static void run_file(const char *path) {
  model_opts mo;
  model_opts_default(&mo);
  mo.batch = 2;
  model *m = NULL;
  ct_err err = {0};
  ck_assert_msg(model_load(path, &mo, &m, &err) == CT_OK, "%s", err.msg);
  run_and_check(m, path, -1, 0, 0, 1);
  model_free(m);
}

START_TEST(onnx_files) {
  /* the importer's tiny models (tests/data), and CT_MODEL_BENCH_ONNX */
  const char *src = getenv("CT_SOURCE_DIR");
  static const char *const files[] = {"tests/data/tiny_qdq.onnx", "tests/data/tiny_float.onnx"};
  for (size_t i = 0; src && i < sizeof files / sizeof files[0]; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", src, files[i]);
    run_file(path);
  }
  const char *extra = getenv("CT_MODEL_BENCH_ONNX");
  if (extra && *extra) run_file(extra);
}
END_TEST

/* ---- mbench_refine -------------------------------------------------------- */

/* Three OK trials on dev of each of t's workloads (nhwc), all of the first
 * template that runs it: its default config (10 us) and two random valid
 * ones (10.5, 11 us), each a uid of its own, "w<i>c<j>". */
/* bad_fastest: workload 0's fastest record (w0c0) holds a config its
 * template cannot build (a knob's value out of its range), as a database
 * written by something else might. */
static void seed_db(const tiny *t, const device *g, const char *path, int bad_fastest) {
  db *d = NULL;
  ct_err err = {0};
  ck_assert_msg(db_open(path, 0, &d, &err) == CT_OK, "%s", err.msg);
  db_device dev;
  memset(&dev, 0, sizeof dev);
  snprintf(dev.name, sizeof dev.name, "%s", g->name);
  dev.cc_major = g->arch.cc_major;
  dev.cc_minor = g->arch.cc_minor;
  rng r;
  rng_seed(&r, 5);
  for (int i = 0; i < N_CONVS; i++) {
    const ct_workload *w = &t->convs[i].w;
    const template_desc *const *all = template_all();
    const template_desc *tpl = NULL;
    ct_workload pw;
    for (int k = 0; all[k] && !tpl; k++)
      if (all[k]->op == w->op && workload_for_layout(w, all[k]->layout, &pw) &&
          all[k]->supports(&pw, NULL))
        tpl = all[k];
    ck_assert_msg(tpl != NULL, "no template runs %s", t->convs[i].name);
    space s;
    ck_assert_int_eq(template_space(tpl, &pw, &s, &err), CT_OK);
    for (int j = 0; j < 3; j++) {
      config c;
      if (j == 0)
        ck_assert_int_eq(resolve_default(tpl, &pw, &s, &g->arch, &c, &err), CT_OK);
      else
        ck_assert_int_eq(template_sample(tpl, &pw, &s, &g->arch, &r, 100000, &c, &err), CT_OK);
      trial tr;
      memset(&tr, 0, sizeof tr);
      snprintf(tr.uid, sizeof tr.uid, "w%dc%d", i, j);
      workload_key(&pw, tr.workload_key, sizeof tr.workload_key);
      snprintf(tr.template_name, sizeof tr.template_name, "%s", tpl->name);
      snprintf(tr.template_version, sizeof tr.template_version, "%s", template_version(tpl));
      tr.config_index = space_index(&s, &c);
      cJSON *j_cfg = space_config_to_json(&s, &c);
      if (bad_fastest && i == 0 && j == 0) {
        /* a value none of its knob's: every knob present, so resolve
         * fills nothing from the default, and the config does not parse */
        cJSON *e = j_cfg->child;
        while (e && !cJSON_IsNumber(e)) e = e->next;
        ck_assert_msg(e != NULL, "%s: no knob of a number to spoil", tpl->name);
        cJSON_SetNumberValue(e, 12345);
      }
      tr.config_json = cJSON_PrintUnformatted(j_cfg);
      cJSON_Delete(j_cfg);
      tr.outcome = OUT_OK;
      tr.median_us = 10 + 0.5 * j;
      tr.n_samples = 1;
      tr.samples_us = xmalloc(sizeof *tr.samples_us);
      tr.samples_us[0] = tr.median_us;
      tr.options = xstrdup("");
      snprintf(tr.arch, sizeof tr.arch, "%s", g->arch.name);
      snprintf(tr.tuner, sizeof tr.tuner, "test");
      snprintf(tr.session, sizeof tr.session, "test_gpu_model_bench");
      tr.timestamp = 1700000000 + j;
      tr.device = dev;
      ck_assert_msg(db_insert_trials(d, &tr, 1, NULL, &err) == CT_OK, "%s", err.msg);
      trial_free(&tr);
    }
    space_free(&s);
  }
  db_close(d);
}

static bench_opts refine_bench_opts(const char *path) {
  bench_opts o;
  bench_opts_default(&o);
  o.db_path = path;
  o.repeats = 3;
  o.min_replay_us = 200;
  o.quiet = 1;
  o.layout = CT_LAYOUT_NHWC;
  return o;
}

/* The refinement's options of these tests: 3 candidates, 2 pairs, one
 * pass, any gain taken (picks are likely, and checked). */
static mbench_refine_opts test_refine_opts(void) {
  mbench_refine_opts ro;
  mbench_refine_opts_default(&ro);
  ro.candidates = 3;
  ro.pairs = 2;
  ro.passes = 1;
  ro.min_gain_us = 0;
  return ro;
}

/* A refinement test's state: the tiny model, the GPU, a scratch database
 * that seed_db filled, the options and the first refinement's result. */
typedef struct refine_case {
  tiny t;
  device g;
  char dir[4096], path[4200];
  bench_opts o;
  mbench_refine_opts ro;
  mbench_refined rr;
} refine_case;

/* Seed the database NAME (bad_fastest as seed_db's) and refine the tiny
 * model's chain on it: every workload in rr.keys. */
static void refine_start(refine_case *c, const char *name, int bad_fastest) {
  ct_err err = {0};
  build(&c->t, CT_LAYOUT_NHWC, 1);
  ck_assert_msg(device_open(0, &c->g, &err) == CT_OK, "%s", err.msg);
  scratch(c->dir, sizeof c->dir);
  snprintf(c->path, sizeof c->path, "%s/%s", c->dir, name);
  seed_db(&c->t, &c->g, c->path, bad_fastest);
  c->o = refine_bench_opts(c->path);
  c->ro = test_refine_opts();
  ck_assert_msg(mbench_refine(&c->o, &c->t.m, &c->ro, &c->rr, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(c->rr.n_keys, N_CONVS);
}

/* The chain benched on the database as it is now: every node exact. */
static void refine_chain_exact(refine_case *c) {
  ct_err err = {0};
  c->o.repeats = 3;
  mbench_result r;
  memset(&r, 0, sizeof r);
  ck_assert_msg(mbench_run(&c->o, &c->t.m, &r, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(r.n_exact, N_CONVS);
  mbench_result_free(&r);
}

static void refine_end(refine_case *c) {
  remove_tree(c->dir);
  release(&c->t);
}

/* The tiny model's chain refined on a database seeded here: every workload
 * compared, the figures sane, each pick one of its workload's trials and
 * not its fastest; stored, a new context serves the picks (ct_explain says
 * so) and mbench_run checks that chain exact. Then with a gain no candidate
 * can show: no pick, the chain's two figures one. */
START_TEST(refine_chain) {
  refine_case c;
  refine_start(&c, "refine.db", 0);
  mbench_refined *rr = &c.rr;
  ct_err err = {0};
  ck_assert_int_eq(rr->n_compared, 2 * N_CONVS); /* every candidate built and ran */
  ck_assert(rr->base_us > 0 && rr->chain_us > 0 && rr->chain_us <= rr->base_us);
  ck_assert_str_eq(rr->device, c.g.name);
  for (int i = 0; i < rr->n_picks; i++) {
    const mbench_pick *p = &rr->picks[i];
    int wi = -1, cj = -1;
    ck_assert_int_eq(sscanf(p->uid, "w%dc%d", &wi, &cj), 2);
    ck_assert(wi >= 0 && wi < N_CONVS && cj >= 1 && cj <= 2);
    ck_assert(p->alone_us == 10 + 0.5 * cj && p->fastest_us == 10);
    int found = 0;
    for (int k = 0; k < rr->n_keys; k++) found |= !strcmp(rr->keys[k], p->key);
    ck_assert(found);
  }
  /* stored: served, and exact in the chain */
  db *d = NULL;
  ck_assert_int_eq(db_open(c.path, 0, &d, &err), CT_OK);
  db_device dev;
  memset(&dev, 0, sizeof dev);
  snprintf(dev.name, sizeof dev.name, "%s", rr->device);
  dev.cc_major = rr->cc_major;
  dev.cc_minor = rr->cc_minor;
  const char *keys[N_CONVS];
  db_pick picks[N_CONVS];
  memset(picks, 0, sizeof picks);
  for (int i = 0; i < rr->n_keys; i++) keys[i] = rr->keys[i];
  for (int i = 0; i < rr->n_picks; i++) {
    snprintf(picks[i].workload_key, sizeof picks[i].workload_key, "%s", rr->picks[i].key);
    snprintf(picks[i].trial_uid, sizeof picks[i].trial_uid, "%s", rr->picks[i].uid);
    picks[i].chain_us = rr->chain_us;
    picks[i].base_us = rr->base_us;
    snprintf(picks[i].model, sizeof picks[i].model, "tiny, batch 2");
    snprintf(picks[i].session, sizeof picks[i].session, "test");
    picks[i].timestamp = 1800000000;
  }
  ck_assert_msg(db_set_picks(d, &dev, keys, rr->n_keys, picks, rr->n_picks, &err) == CT_OK, "%s",
                err.msg);
  db_close(d);
  ct_context *ctx = NULL;
  ck_assert_int_eq(ct_open(c.path, 0, &ctx), CT_OK);
  for (int i = 0; i < rr->n_picks; i++) {
    ct_workload w;
    ck_assert_int_eq(ct_workload_parse(rr->picks[i].key, &w, NULL, 0), CT_OK);
    ct_explanation ex;
    ck_assert_msg(ct_explain(ctx, &w, &ex) == CT_OK, "%s", ct_errmsg(ctx));
    ck_assert_int_eq(ex.source, CT_SOURCE_CHAIN);
    ck_assert_str_eq(ex.template_name, rr->picks[i].template_name);
  }
  ct_close(ctx);
  printf("refine_chain: %d picks of %d workloads, chain %.2f -> %.2f us\n", rr->n_picks, rr->n_keys,
         rr->base_us, rr->chain_us);
  mbench_refined_free(rr);
  refine_chain_exact(&c);
  /* a gain nothing shows: no pick */
  c.ro.min_gain_us = 1e9;
  ck_assert_msg(mbench_refine(&c.o, &c.t.m, &c.ro, rr, &err) == CT_OK, "%s", err.msg);
  ck_assert_int_eq(rr->n_picks, 0);
  ck_assert(rr->chain_us == rr->base_us);
  mbench_refined_free(rr);
  refine_end(&c);
}
END_TEST

/* A workload whose fastest record cannot be built loses its candidates and
 * runs what the dispatch serves; the others are compared as before, no
 * pick names the bad record, and the chain stays exact. */
START_TEST(refine_chain_unbuildable_fastest) {
  refine_case c;
  refine_start(&c, "refine-bad.db", 1);
  const mbench_refined *rr = &c.rr;
  /* workload 0 compared nothing; every other one its two candidates */
  ck_assert_int_eq(rr->n_compared, 2 * (N_CONVS - 1));
  ck_assert(rr->base_us > 0 && rr->chain_us > 0 && rr->chain_us <= rr->base_us);
  for (int i = 0; i < rr->n_picks; i++) {
    int wi = -1, cj = -1;
    ck_assert_int_eq(sscanf(rr->picks[i].uid, "w%dc%d", &wi, &cj), 2);
    ck_assert_msg(wi != 0, "a pick of workload 0: %s", rr->picks[i].uid);
  }
  printf("refine_chain_unbuildable_fastest: %d picks of %d workloads, chain %.2f -> %.2f us\n",
         rr->n_picks, rr->n_keys, rr->base_us, rr->chain_us);
  mbench_refined_free(&c.rr);
  refine_chain_exact(&c);
  refine_end(&c);
}
END_TEST

static void add_gpu(TCase *tc) {
  tcase_add_test(tc, wiring_as_planned);
  tcase_add_test(tc, nhwc_chain_exact);
  tcase_add_test(tc, nhwc_chain_arena_exact);
  tcase_add_test(tc, nhwc_chain_streams);
  tcase_add_test(tc, nchw4c_chain_exact);
  tcase_add_test(tc, float_model_random_values);
  tcase_add_test(tc, onnx_files);
  tcase_add_test(tc, refine_chain);
  tcase_add_test(tc, refine_chain_unbuildable_fastest);
}

static const test_case suite_cases[] = {
    {"gpu", 600, add_gpu},
    {NULL, 0, NULL},
};

int main(void) {
  static const test_suite suite = {"gpu_model_bench", suite_cases, 1, gpu_probe};
  return test_main(&suite);
}
