/*
 * fuzz_templates.c: libFuzzer harness of every template's host code (no
 * NVRTC compile). The bytes make a workload (op, layout, dtypes, sizes
 * within workload_validate's bounds, mostly small, sometimes anywhere, an
 * epilogue), an architecture of the named table with an SM count, and a
 * seed; a workload validation refuses is skipped. Each template that takes
 * the workload in its layout builds its space; its preferred config (in
 * one run of two: it costs as much as the rest), 16
 * random configs, one indexed by the bytes, a rejection sample and its
 * neighbour then go through valid() and instance_make, and must hold:
 *   valid() and instance_make agree, and a refusal says why;
 *   index <-> config and config <-> JSON round trips;
 *   describe() gives the same count for every config, no NaN;
 *   the instance: a kernel name, whole -D options that fit, at least one
 *   argument; block dims >= 1 within the architecture's threads per block
 *   (and CUDA's 1024 x 1024 x 64), grid x in 1..2^31-1 and y, z in
 *   1..65535, dynamic shared memory within the opt-in limit and equal to
 *   -DCT_SMEM_BYTES, -DCT_THREADS the block's threads; each tensor map it
 *   passes within what cuTensorMapEncodeTiled / Im2col accept (rank, dims
 *   <= 2^32, strides multiples of 16 below 2^40, boxes 1..256 with a
 *   16-byte inner row within the swizzle span, traversal strides 1..8,
 *   im2col corners within their rank's range).
 * Seeds: tests/fuzz/corpus/fuzz_templates (layers of the sets in each layout).
 * Cost: space building and up to ~20 valid() / instance_make per template.
 */
#include "fuzz.h"

#include <math.h>

#include "templates/template.h"

#define N_DRAWS      16
#define DESCRIBE_MAX 32

/* The workload of the bytes; 0 when validation refuses it. */
static int make_workload(fuzz_in *in, ct_workload *w) {
  uint32_t flags = fuzz_u8(in);
  workload_init(w, flags & 1 ? CT_OP_CONV3D : CT_OP_CONV2D);
  w->layout = (ct_layout)((flags >> 1 & 3) % 3);
  w->data_type = flags >> 3 & 1 ? CT_DTYPE_UINT8 : CT_DTYPE_INT8;
  static const ct_dtype outs[] = {CT_DTYPE_INT32, CT_DTYPE_INT8, CT_DTYPE_UINT8, CT_DTYPE_INT32};
  w->out_type = outs[flags >> 4 & 3];
  int nd = workload_nd(w);
  w->n = fuzz_range(in, 1, CT_MAX_BATCH);
  w->c = fuzz_range(in, 1, CT_MAX_CHANNELS);
  w->k = fuzz_range(in, 1, CT_MAX_CHANNELS);
  for (int d = 0; d < nd; d++) {
    w->in[d] = fuzz_range(in, 1, 1 << 20);
    w->kernel[d] = fuzz_range(in, 1, CT_MAX_KERNEL);
    w->stride[d] = fuzz_range(in, 1, CT_MAX_STRIDE);
    w->dilation[d] = fuzz_range(in, 1, CT_MAX_DILATION);
    w->pad_before[d] = fuzz_range(in, 0, CT_MAX_PAD);
    w->pad_after[d] = fuzz_range(in, 0, CT_MAX_PAD);
  }
  uint32_t epi = fuzz_u8(in), d2s = fuzz_u8(in);
  w->epi.data_zero_point = epi & 1;
  w->epi.weight_zero_point = epi >> 1 & 1;
  w->epi.bias = epi >> 2 & 1;
  w->epi.scale = epi >> 3 & 1 ? CT_SCALE_CHANNEL : CT_SCALE_TENSOR;
  w->epi.residual = epi >> 4 & 1;
  w->epi.rounding = epi >> 5 & 1 ? CT_ROUND_ONNX : CT_ROUND_GEMMLOWP;
  if (d2s >= 224) {
    w->epi.d2s_block = 2 + (int)(d2s & 3);
    w->epi.d2s_mode = d2s >> 2 & 1 ? CT_D2S_CRD : CT_D2S_DCR;
  }
  /* Round what the layout and depth_to_space need, so that the bytes are
   * not spent on refusals: C and K of the packed layout to 4, K to the
   * block's channels. */
  int64_t per = workload_d2s_volume(w) * (w->layout == CT_LAYOUT_NCHW4C ? 4 : 1);
  int64_t c = w->layout == CT_LAYOUT_NCHW4C ? ((int64_t)w->c + 3) / 4 * 4 : w->c;
  int64_t k = (w->k + per - 1) / per * per;
  if (c > INT32_MAX || k > INT32_MAX) return 0;
  w->c = (int)c;
  w->k = (int)k;
  return workload_validate(w, NULL) == CT_OK;
}

/* The value of option -DNAME=V of inst into *v; 0 when absent. */
static int option(const instance *inst, const char *name, long *v) {
  size_t len = strlen(name);
  for (int i = 0; i < inst->n_options; i++) {
    const char *o = inst->options[i];
    if (!strncmp(o, "-D", 2) && !strncmp(o + 2, name, len) && o[2 + len] == '=') {
      *v = strtol(o + 3 + len, NULL, 10);
      return 1;
    }
  }
  return 0;
}

/* A tensor map as the driver's encoders accept it. */
static void check_tmap(const tmap_desc *t, const char *what, const char *label) {
  FUZZ_CHECK(t->rank >= (t->im2col ? 3 : 1) && t->rank <= TMAP_MAX_RANK, "%s: %s rank %d", label,
             what, t->rank);
  FUZZ_CHECK(t->elem_bytes == 1 || t->elem_bytes == 4, "%s: %s elem_bytes %d", label, what,
             t->elem_bytes);
  FUZZ_CHECK(t->swizzle == 0 || t->swizzle == 32 || t->swizzle == 64 || t->swizzle == 128,
             "%s: %s swizzle %d", label, what, t->swizzle);
  for (int i = 0; i < t->rank; i++) {
    FUZZ_CHECK(t->dims[i] >= 1 && t->dims[i] <= 1ULL << 32, "%s: %s dims[%d] = %llu", label, what,
               i, t->dims[i]);
    FUZZ_CHECK(t->elem_strides[i] >= 1 && t->elem_strides[i] <= 8, "%s: %s elem_strides[%d] = %u",
               label, what, i, t->elem_strides[i]);
    if (i > 0)
      FUZZ_CHECK(t->strides[i - 1] % 16 == 0 && t->strides[i - 1] < 1ULL << 40,
                 "%s: %s strides[%d] = %llu", label, what, i - 1, t->strides[i - 1]);
  }
  unsigned inner;
  if (t->im2col) {
    FUZZ_CHECK(t->channels >= 1 && t->channels <= 256 && t->pixels >= 1 && t->pixels <= 1024,
               "%s: %s im2col channels %u, pixels %u", label, what, t->channels, t->pixels);
    /* the corners' range shrinks with the rank: 2^15, 2^7, 2^4 */
    int lim = t->rank == 3 ? 32768 : t->rank == 4 ? 128 : 16;
    for (int i = 0; i < t->rank - 2; i++)
      FUZZ_CHECK(t->lower[i] >= -lim && t->lower[i] < lim && t->upper[i] >= -lim &&
                     t->upper[i] < lim,
                 "%s: %s im2col corner %d: lower %d, upper %d, range [%d, %d]", label, what, i,
                 t->lower[i], t->upper[i], -lim, lim - 1);
    inner = t->channels * (unsigned)t->elem_bytes;
  } else {
    for (int i = 0; i < t->rank; i++)
      FUZZ_CHECK(t->box[i] >= 1 && t->box[i] <= 256, "%s: %s box[%d] = %u", label, what, i,
                 t->box[i]);
    inner = t->box[0] * (unsigned)t->elem_bytes;
  }
  FUZZ_CHECK(inner % 16 == 0, "%s: %s inner box row of %u bytes", label, what, inner);
  FUZZ_CHECK(!t->swizzle || inner <= (unsigned)t->swizzle,
             "%s: %s inner box row of %u bytes, swizzle %d", label, what, inner, t->swizzle);
}

static void check_instance(const template_desc *tpl, const arch *a, const instance *inst,
                           const char *label) {
  FUZZ_CHECK(inst->tpl == tpl, "%s: instance of another template", label);
  FUZZ_CHECK(inst->kernel_name[0] && memchr(inst->kernel_name, '\0', sizeof inst->kernel_name),
             "%s: no kernel name", label);
  FUZZ_CHECK(inst->n_options >= 1 && inst->n_options < INSTANCE_MAX_OPTIONS, "%s: %d options",
             label, inst->n_options);
  for (int i = 0; i < inst->n_options; i++)
    FUZZ_CHECK(!strncmp(inst->options[i], "-D", 2) &&
                   strlen(inst->options[i]) < INSTANCE_OPTION_MAX - 1,
               "%s: option %d may be cut: %.*s", label, i, INSTANCE_OPTION_MAX, inst->options[i]);
  long threads = (long)inst->block[0] * inst->block[1] * inst->block[2];
  FUZZ_CHECK(inst->block[0] >= 1 && inst->block[1] >= 1 && inst->block[2] >= 1 &&
                 inst->block[0] <= 1024 && inst->block[1] <= 1024 && inst->block[2] <= 64 &&
                 threads <= a->max_threads_per_block,
             "%s: block %u x %u x %u", label, inst->block[0], inst->block[1], inst->block[2]);
  FUZZ_CHECK(inst->grid[0] >= 1 && inst->grid[0] <= 2147483647u && inst->grid[1] >= 1 &&
                 inst->grid[1] <= 65535 && inst->grid[2] >= 1 && inst->grid[2] <= 65535,
             "%s: grid %u x %u x %u", label, inst->grid[0], inst->grid[1], inst->grid[2]);
  FUZZ_CHECK(inst->smem_bytes <= (size_t)a->smem_optin_bytes,
             "%s: %zu bytes of shared memory, %s allows %d", label, inst->smem_bytes, a->name,
             a->smem_optin_bytes);
  long v;
  /* the launch gives the kernel at least what it was compiled for; more
   * where the template pins its blocks to their residency by shared memory
   * (conv_pw_mma's persistent grids under programmatic dependent launch) */
  if (option(inst, "CT_SMEM_BYTES", &v))
    FUZZ_CHECK(v >= 0 && (size_t)v <= inst->smem_bytes,
               "%s: -DCT_SMEM_BYTES=%ld, launched with %zu", label, v, inst->smem_bytes);
  if (option(inst, "CT_THREADS", &v))
    FUZZ_CHECK(v == threads, "%s: -DCT_THREADS=%ld, launched with %ld", label, v, threads);
  FUZZ_CHECK(inst->n_args >= 1 && inst->n_args <= INSTANCE_MAX_ARGS, "%s: %d arguments", label,
             inst->n_args);
  for (int i = 0; i < inst->n_args; i++) {
    switch (inst->args[i]) {
    case ARG_DATA_TMAP:
      check_tmap(&inst->tmap, "data tensor map", label);
      break;
    case ARG_WEIGHTS_TMAP:
      check_tmap(&inst->wtmap, "weights tensor map", label);
      break;
    case ARG_OUT_TMAP:
      check_tmap(&inst->otmap, "output tensor map", label);
      break;
    default:
      FUZZ_CHECK(inst->args[i] >= ARG_DATA && inst->args[i] <= ARG_RESIDUAL, "%s: argument %d",
                 label, (int)inst->args[i]);
    }
  }
}

/* One config of tpl's space sp: validity and instance agree, round trips,
 * the instance's invariants. *n_desc: describe()'s count (-1: not yet). */
static void check_config(const template_desc *tpl, const ct_workload *w, const space *sp,
                         const arch *a, const config *cfg, int *n_desc, const char *key) {
  char label[CT_KEY_MAX + 160], text[128];
  snprintf(label, sizeof label, "%s on %s, %s: %s", tpl->name, a->name, key,
           space_config_str(sp, cfg, text, sizeof text));
  char why[TEMPLATE_WHY_MAX] = "";
  int ok = tpl->valid(w, sp, cfg, a, why);
  instance inst;
  ct_err err = {0};
  ct_status st = instance_make(tpl, w, sp, cfg, a, &inst, &err);
  if (!ok) {
    FUZZ_CHECK(why[0] && st == CT_ERR_INVALID_ARG,
               "%s: invalid without a reason (%s), or made "
               "(status %d)",
               label, why, (int)st);
    return;
  }
  FUZZ_CHECK(st == CT_OK, "%s: valid, but instance_make says %s", label, err.msg);
  check_instance(tpl, a, &inst, label);

  uint64_t index = space_index(sp, cfg);
  config back;
  FUZZ_CHECK(index < sp->size && space_config(sp, index, &back, &err) == CT_OK &&
                 !memcmp(back.choice, cfg->choice, (size_t)sp->n_knobs * sizeof *cfg->choice),
             "%s: index %llu does not give the config back", label, (unsigned long long)index);
  cJSON *j = space_config_to_json(sp, cfg);
  FUZZ_CHECK(j && space_config_from_json(sp, j, &back, &err) == CT_OK &&
                 !memcmp(back.choice, cfg->choice, (size_t)sp->n_knobs * sizeof *cfg->choice),
             "%s: its JSON does not give the config back: %s", label, err.msg);
  cJSON_Delete(j);
  if (tpl->describe) {
    float f[DESCRIBE_MAX];
    int n = tpl->describe(w, sp, cfg, f, DESCRIBE_MAX);
    FUZZ_CHECK(n >= 1 && n <= DESCRIBE_MAX && (*n_desc < 0 || n == *n_desc),
               "%s: describe gives %d values, before %d", label, n, *n_desc);
    *n_desc = n;
    for (int i = 0; i < n; i++) FUZZ_CHECK(!isnan(f[i]), "%s: describe value %d is NaN", label, i);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size};
  ct_workload w;
  if (!make_workload(&in, &w)) return 0;
  static const char *const archs[] = {"sm_75", "sm_80",  "sm_86",  "sm_89",
                                      "sm_90", "sm_100", "sm_120", "sm_90"};
  arch a;
  if (arch_from_name(archs[fuzz_u8(&in) % 8], &a, NULL) != CT_OK) abort();
  a.sm_count = (int)fuzz_u8(&in); /* 0: unknown, as for a named architecture */
  /* preferred() tries dozens of configs: most of a run's time, so one run
   * in two (by the bytes) asks for it */
  int ask_preferred = fuzz_u8(&in) & 1;
  uint64_t seed = fuzz_u32(&in), pick = (uint64_t)fuzz_u32(&in) << 32 | fuzz_u32(&in);
  char key[CT_KEY_MAX];
  workload_key(&w, key, sizeof key);

  for (const template_desc *const *t = template_all(); *t; t++) {
    const template_desc *tpl = *t;
    ct_workload tw;
    if (!workload_for_layout(&w, tpl->layout, &tw)) continue;
    space sp;
    ct_err err = {0};
    if (template_space(tpl, &tw, &sp, &err) != CT_OK) {
      FUZZ_CHECK(err.msg[0], "%s: %s: no space, no reason", tpl->name, key);
      continue;
    }
    FUZZ_CHECK(sp.size >= 1 && sp.n_knobs >= 0 && sp.n_knobs <= SPACE_MAX_KNOBS,
               "%s: %s: space of %llu, %d knobs", tpl->name, key, (unsigned long long)sp.size,
               sp.n_knobs);
    int n_desc = -1;
    rng r;
    rng_seed(&r, seed);
    config cfg;
    if (ask_preferred && tpl->preferred && tpl->preferred(&tw, &sp, &a, &cfg)) {
      FUZZ_CHECK(tpl->valid(&tw, &sp, &cfg, &a, NULL),
                 "%s on %s: %s: the preferred config is "
                 "not valid",
                 tpl->name, a.name, key);
      check_config(tpl, &tw, &sp, &a, &cfg, &n_desc, key);
    }
    for (int i = 0; i < N_DRAWS; i++) {
      space_random(&sp, &r, &cfg);
      check_config(tpl, &tw, &sp, &a, &cfg, &n_desc, key);
    }
    FUZZ_CHECK(space_config(&sp, pick % sp.size, &cfg, &err) == CT_OK, "%s: index %llu of %llu: %s",
               tpl->name, (unsigned long long)(pick % sp.size), (unsigned long long)sp.size,
               err.msg);
    check_config(tpl, &tw, &sp, &a, &cfg, &n_desc, key);
    if (template_sample(tpl, &tw, &sp, &a, &r, 64, &cfg, NULL) == CT_OK) {
      check_config(tpl, &tw, &sp, &a, &cfg, &n_desc, key);
      config nb;
      if (template_neighbor(tpl, &tw, &sp, &a, &r, &cfg, 16, &nb, NULL) == CT_OK) {
        FUZZ_CHECK(tpl->valid(&tw, &sp, &nb, &a, NULL), "%s: %s: an invalid neighbour", tpl->name,
                   key);
        check_config(tpl, &tw, &sp, &a, &nb, &n_desc, key);
      }
    }
    space_free(&sp);
  }
  return 0;
}
