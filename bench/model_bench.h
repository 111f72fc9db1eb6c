/*
 * model_bench.h: `convtune bench --model`: a model's conv stack measured end
 * to end. Every conv node the engine runs goes, in graph order, through
 * libconvtune (ct_qconv2d / ct_qconv3d) on one stream, captured into one
 * CUDA graph; where the graph connects two convs directly (through the ops
 * fused into the first), the second reads the first's real 8-bit output,
 * and where a tensor comes from an op convtune does not run (pooling,
 * Concat, a graph input) or cannot be fed (int32 output into int8 data), it
 * is a fresh random tensor of the right shape, and the node says which op
 * it stands for. The same chain runs on cuDNN fp16 NHWC and cuDNN int8 NHWC
 * (each node on cuDNN's fastest algorithm for its shape), timed the same
 * way in the same run; every side is also timed node by node. Each node's
 * output is checked once against the CPU reference on a subset of the
 * batch's images (mbench_images), every element.
 *
 * A fused pair of the model (model_pre_of: a 1x1 conv A run inside the conv
 * B it feeds) is one node, B's: it reads A's input and writes B's output,
 * its check is the CPU reference of both convs chained (ct_reference_qconv
 * of the fused workload); A's node does not run (fused_into). cuDNN's
 * chains still run A, then B, so that every side computes the same
 * network, and B's cuDNN time is the two convs' sum.
 *
 * Times are microseconds, BENCH_NONE when not measured (null in JSON, "-"
 * in tables). The planning (wiring, floors), the check's comparison and
 * the writers need no GPU and are tested in tests/test_model_bench.c.
 */
#ifndef CT_BENCH_MODEL_BENCH_H
#define CT_BENCH_MODEL_BENCH_H

#include <stdio.h>

#include <cJSON.h>

#include "bench/bench.h"
#include "model/model.h"

/* The per-node time fields, in the order of the results file. */
typedef enum mbench_field {
  MBENCH_FLOOR = 0,  /* roofline: int8 data, weights (and residual) in, the output type out */
  MBENCH_CONVTUNE,   /* libconvtune, the run's layout */
  MBENCH_CUDNN_FP16, /* cuDNN NHWC fp16, tensor-op math, fp16 out */
  MBENCH_CUDNN_INT8, /* cuDNN NHWC INT8 config, int8 out */
  MBENCH_N_FIELDS
} mbench_field;

/* "floor_us", "convtune_us", "cudnn_fp16_us", "cudnn_int8_us". */
extern const char *const mbench_field_names[MBENCH_N_FIELDS];

typedef enum mbench_check {
  MBENCH_UNCHECKED = 0, /* not run, or the check could not be made (check_note says why) */
  MBENCH_EXACT,
  MBENCH_WRONG
} mbench_check;

/* One conv node of the model, nodes[i] for model.convs[i]. */
typedef struct mbench_node {
  char name[128];
  char key[CT_KEY_MAX];       /* the workload convtune runs, in the run's layout */
  char short_key[CT_KEY_MAX]; /* key without op, layout, batch and unit dilation */
  char fused[192]; /* the model's fused ops ("Relu", "pre: A (1x1), Clip"), "" when none */
  int runs;        /* 1: in the chain; 0: skipped or absorbed, why says why */
  /* A fused pair (indices into nodes, -1: none): pre_conv on the node that
   * runs the 1x1 conv pre_name inside it; fused_into on that 1x1 conv's
   * node, which does not run on its own */
  int pre_conv, fused_into;
  char pre_name[128];
  char why[224];
  /* The chain as run (indices into nodes, -1: a fresh tensor), and what a
   * reader needs to know about each: "conv NAME" or "fresh: OP ..." */
  int input_conv, residual_conv;
  char input[224];
  char residual[224]; /* "" when the node has no residual */
  double ops;         /* 2 x multiply-adds of the real channels (a fused node: both convs') */
  double bytes; /* int8 data + int8 weights (both convs') [+ residual] + output, real channels */
  double t[MBENCH_N_FIELDS];
  /* convtune's node inside the chain (bench_opts.in_chain): the chain cut
   * after this node less the chain cut before it, each timed as the chain
   * is; NAN when not measured (mbench_has_in_chain). A difference of two
   * timings: a small node's value may come out negative, and is kept, so
   * that the nodes' values add up to the last cut's time, the chain's give
   * or take the timing's noise. */
  double in_chain;
  mbench_check check;
  char check_note[256];            /* "exact (images 0, 15)" or the first mismatch */
  char source[192];                /* where convtune's kernel comes from (ct_explain) */
  char algo[2][100];               /* cuDNN's algorithm: fp16, int8 ("A + B" for a fused node) */
  char note[MBENCH_N_FIELDS][224]; /* why a field is null, or what went wrong */
  /* bench --fuse=auto, on the conv of a pair that could fuse (the fused
   * node, or the conv a 1x1 conv feeds where the pair stays apart): the
   * decision and its terms (resolve_fuse_estimate's why); "" otherwise */
  char fusion[224];
} mbench_node;

/* The images of a batch of n that the check covers: the first and the last
 * (each image's output depends only on that image, so these catch both a
 * wrong kernel and wrong batch indexing). Returns how many (1 or 2). */
int mbench_images(int n, int images[2]);

typedef struct mbench_result {
  /* The run's identity and environment, filled as the set benchmark fills
   * them: device, arch, sm_count, commit, command, date, set (the model's
   * name), batch, layout, repeats, peaks, cudnn_built, cudnn_version. Its
   * layers are not used. */
  bench_result head;
  char model_path[512];
  char form[16]; /* model_form_name */
  int n_nodes;
  mbench_node *nodes; /* owned: mbench_result_free */
  int n_run, n_fresh_inputs;
  int n_fused; /* nodes that run a fused pair: 2 x n_fused of the model's convs in n_fused nodes */
  int all_int32; /* every conv writes int32: no output can feed int8 data */
  int n_images;
  int images[2]; /* the images checked (mbench_images) */
  /* The chain of the nodes that run as one CUDA graph, per side (the floor:
   * the sum of the nodes' floors); BENCH_NONE with the reason in chain_note
   * where a side does not run every node. */
  double chain[MBENCH_N_FIELDS];
  char chain_note[MBENCH_N_FIELDS][224];
  int n_exact, n_wrong, n_unchecked;
  /* the tensors (bench_opts.arena): 0, each node's output in a buffer of
   * its own; 1, convtune's outputs in arena_buffers buffers of
   * arena_bytes in all, against out_bytes of outputs (the cuDNN sides'
   * alike, on their own tensors) */
  int arena, arena_buffers;
  double arena_bytes, out_bytes;
  /* bench_opts.streams S > 1: S copies of each side's chain at once, each
   * on a stream of its own, captured as one graph (S independent chains
   * forked from one stream and joined back), each copy on tensors of its
   * own (its inputs copies of the first's; the weights and params shared,
   * as one model serves every request): S x batch images, as S concurrent
   * requests or a batch of S x batch split in S. streams_chain per side
   * (the floor: S x the chain's floor), BENCH_NONE with streams_note's
   * reason where not measured; copies_identical: every convtune copy's
   * outputs equal the first copy's, byte for byte (1), or not (0: then
   * convtune's streams_chain is BENCH_NONE, the copy and node in its note). */
  int streams;
  double streams_chain[MBENCH_N_FIELDS];
  char streams_note[MBENCH_N_FIELDS][224];
  int copies_identical;
  /* how pairs were fused: "" (none), "all" (every pair a template runs) or
   * "records" (where the database's records predict a gain: the nodes'
   * fusion says why) */
  char fuse_policy[16];
} mbench_result;

/* The most copies bench_opts.streams asks for. */
#define MBENCH_MAX_STREAMS 8

/* ---- CPU parts ------------------------------------------------------------ */

/* Fill r's nodes from m (r->head's layout, batch and model fields are set
 * too; earlier nodes are freed): names, keys, fused ops, ops, bytes and
 * floor for peaks p, and the wiring. A node runs when the model supports it,
 * it is not absorbed by a fused conv (model_absorbed_by: its why names the
 * conv it runs inside) and skip (may be NULL; m->n_convs entries) has no
 * reason for it; its
 * input is its producer's output when that conv runs, comes earlier in the
 * order, and writes exactly the tensor the node reads (type, channels,
 * sizes, layout), else a fresh tensor, and the node says why. The layout
 * convtune runs is the workloads' own: nhwc, or packed (nchw4c; a plain
 * nchw model is run packed). CT_ERR_NO_MEMORY, or CT_ERR_INVALID_ARG for a
 * workload that is not valid. */
ct_status mbench_plan(const model *m, const bench_peaks *p, const char *const *skip,
                      mbench_result *r, ct_err *err);

/* Compare one image's output, both plain (NCHW, w's output type and
 * remapped shape; w plain with n = 1): the number of elements that differ,
 * and into note "exact" or the first mismatch (channel, position, got,
 * wanted) and the count, naming image. */
int64_t mbench_compare(const ct_workload *w, const void *got, const void *want, int image,
                       char *note, size_t note_size);

/* Sums over the nodes that run: field f's per-node times (BENCH_NONE when
 * any node that runs lacks it; *n_null, may be NULL, gets how many). */
double mbench_sum(const mbench_result *r, mbench_field f, int *n_null);

/* Tensors placed as a runtime's arena places them (bench_opts.arena): node
 * i (of n, where runs[i]) writes bytes[i] into a buffer that no node still
 * to read holds; last_use[i] is the last node that reads node i's output
 * (i itself when none does). In order, each output takes the smallest free
 * buffer that is large enough, or a new one; a buffer is free again once
 * the node of its last_use has run. buf_of[i] gets node i's buffer (-1 for
 * a node that does not run), buf_bytes (room for n) each buffer's size;
 * returns the number of buffers. */
int mbench_arena_plan(int n, const int *runs, const size_t *bytes, const int *last_use, int *buf_of,
                      size_t *buf_bytes);

/* Whether an in_chain value was measured (negative ones included). */
int mbench_has_in_chain(double v);

/* The sum of the nodes' in_chain values, BENCH_NONE unless every node
 * that runs has one. */
double mbench_in_chain_sum(const mbench_result *r);

/* Images per second of a chain time for the batch; BENCH_NONE without one. */
double mbench_images_per_s(const mbench_result *r, double chain_us);

/* dir/<device>-<model>-b<batch>.json (-nchw4c before .json when r's layout
 * is packed; nhwc is the default). Returns buf. */
char *mbench_results_path(const mbench_result *r, const char *dir, char *buf, size_t size);

/* The results document. Owned: cJSON_Delete; NULL when out of memory. */
cJSON *mbench_to_json(const mbench_result *r);

/* Write the results document to path (parent directories created). */
ct_status mbench_write_json(const mbench_result *r, const char *path, ct_err *err);

/* One row per node, a header first, nulls as empty fields. */
void mbench_write_csv(const mbench_result *r, FILE *f);

/* The Markdown report: what was measured and how, the per-node table, the
 * totals (chain and sum of nodes per side, images per second, ratios,
 * floor), whether every node was exact, and the notes. */
void mbench_write_markdown(const mbench_result *r, FILE *f);

/* Release the nodes; NULL is accepted. The struct itself is the caller's. */
void mbench_result_free(mbench_result *r);

/* ---- the chain's configs chosen by the chain (tune --model's last stage) ----
 *
 * A node's time alone does not say what it costs inside the chain: its
 * start and end overlap its neighbours' (programmatic dependent launch),
 * its blocks share the SMs and the L2 with theirs. On MobileNetV2 at batch
 * 32 (H200) configs within a few percent of each other alone differ by up
 * to 2.5 us in the chain, and a longer tuning that made the nodes faster
 * alone left the chain slower. mbench_refine runs the model's chain as
 * mbench_run does (convtune's side only, not checked: every candidate is an
 * OK trial, exact against the reference when it was measured) and, per
 * unique workload in graph order, compares the fastest few of its distinct
 * OK configs on this device (within `within` of its fastest alone) by the
 * time of the whole chain: each candidate against the incumbent in `pairs`
 * alternated timings, taken when the median gain exceeds min_gain_us. Then
 * the chain with every workload's fastest record and the chain with the
 * picks, alternated 2 x pairs + 1 times: when the picks do not win by
 * min_gain_us, none is kept. Each candidate rank runs in a context of its
 * own (dispatch_pin), so that a kernel is compiled once.
 * Cost: a context and the chain's kernels per candidate rank (compiled
 * unless the database holds their cubins: a record's best only), and
 * 2 x pairs chain timings per comparison (each a CUDA graph of copies of
 * the chain, the median of o->repeats replays). */
#define MBENCH_REFINE_MAX 8
typedef struct mbench_refine_opts {
  int candidates; /* per workload, its fastest included, 2..MBENCH_REFINE_MAX (6) */
  double within;  /* only configs whose time alone is within this factor of the fastest (1.25) */
  int pairs;      /* alternated chain timings per comparison, 1..16 (3) */
  double min_gain_us; /* what a candidate must gain in the chain to be taken (0.3) */
  int passes;         /* over the workloads (2) */
  double budget_s;    /* no comparison starts after this long (0: none) */
  /* progress (may be NULL): each comparison, as a line */
  void (*log)(void *user, const char *line);
  void *log_user;
} mbench_refine_opts;

void mbench_refine_opts_default(mbench_refine_opts *o);

typedef struct mbench_pick {
  char key[CT_KEY_MAX]; /* the workload, in the run's layout */
  char uid[40];         /* the trial picked */
  char template_name[48];
  double alone_us;   /* its median alone */
  double fastest_us; /* the workload's fastest alone */
} mbench_pick;

typedef struct mbench_refined {
  int n_keys; /* the chain's unique workloads, keys[i] each (owned) */
  char (*keys)[CT_KEY_MAX];
  int n_compared; /* comparisons made */
  int n_picks;    /* the workloads whose pick is not their fastest alone */
  mbench_pick *picks;
  char device[256]; /* the GPU, and its compute capability: whose picks these are */
  int cc_major, cc_minor;
  double base_us;  /* the chain with every workload's fastest (the final alternation's median) */
  double chain_us; /* with the picks; base_us when none is kept */
  double wall_s;
} mbench_refined;

/* Refine m's chain on the database o->db_path (readonly) and device
 * o->device; o->layout is the run's. Writes nothing: the caller stores
 * out's picks (db_set_picks). CT_ERR_NO_DEVICE without a GPU; a model with
 * no node that runs: CT_ERR_UNSUPPORTED. */
ct_status mbench_refine(const bench_opts *o, const model *m, const mbench_refine_opts *ro,
                        mbench_refined *out, ct_err *err);
void mbench_refined_free(mbench_refined *r);

/* ---- GPU ------------------------------------------------------------------ */

/* Run the benchmark of m (loaded in the layout convtune is to run: nhwc or
 * nchw4c) into r with o's database, device, repeats, seed (o->layout is not
 * used: the model's workloads carry theirs); r's stamp fields are left as
 * they are (bench_result_stamp on r->head). CT_ERR_NO_DEVICE without a GPU.
 * A wrong node is reported in its check and r->n_wrong, a node no template
 * runs is skipped with the reason; an error status only for what stops the
 * run (the CUDA context lost, out of memory). Progress goes to stderr. */
ct_status mbench_run(const bench_opts *o, const model *m, mbench_result *r, ct_err *err);

#endif
