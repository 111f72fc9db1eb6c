/*
 * fuzz_json.c: libFuzzer harness of the workload's JSON form and the
 * epilogue list. The same bytes, NUL-terminated, go to
 * workload_from_json_text (one object), wlset_parse (a list of named
 * objects, the form of --file and the shipped sets) and
 * workload_epilogue_parse (the --epilogue list). Every accepted workload
 * must pass check_workload (fuzz.h: valid, key and JSON round trips, sizes);
 * an accepted epilogue must print back to a list that parses to itself, and
 * be valid on a workload with an 8-bit output, through its key too. A
 * refusal must come with a message. Seeds: tests/fuzz/corpus/fuzz_json.
 * Cost: three parses of the input, and the checks of what they accept.
 */
#include "fuzz.h"

#include "core/wlset.h"

/* e as the comma-separated list workload_epilogue_parse reads, in the
 * key's order of segments (workload.h). */
static void epilogue_list(const ct_epilogue *e, char *buf, size_t size) {
  const struct {
    int on;
    const char *text;
  } segs[] = {{e->data_zero_point, "zd"}, {e->weight_zero_point, "zw"},
              {e->bias, "bias"},          {e->scale == CT_SCALE_CHANNEL, "qc"},
              {e->residual, "res"},       {e->rounding == CT_ROUND_ONNX, "onnx"}};
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof segs / sizeof segs[0]; i++)
    if (segs[i].on)
      len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", segs[i].text);
  if (e->d2s_block)
    snprintf(buf + len, size - len, "%sd2s%d%s", len ? "," : "", e->d2s_block,
             e->d2s_mode == CT_D2S_CRD ? "crd" : "dcr");
}

static void check_epilogue(const ct_epilogue *e) {
  const int flags[] = {e->data_zero_point, e->weight_zero_point, e->bias, e->residual};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    FUZZ_CHECK(flags[i] == 0 || flags[i] == 1, "epilogue flag %zu is %d", i, flags[i]);
  FUZZ_CHECK(e->d2s_block == 0 || (e->d2s_block >= 2 && e->d2s_block <= CT_D2S_MAX_BLOCK),
             "epilogue d2s block %d", e->d2s_block);
  char list[128];
  epilogue_list(e, list, sizeof list);
  ct_epilogue back;
  ct_err err = {0};
  FUZZ_CHECK(workload_epilogue_parse(list, &back, &err) == CT_OK, "'%s' refused: %s", list,
             err.msg);
  FUZZ_CHECK(!memcmp(e, &back, sizeof back), "'%s' parses to another epilogue", list);
  /* On a conv2d with an 8-bit output and K a multiple of the block's
   * channels, every epilogue the list accepts is valid. */
  ct_workload w;
  workload_init(&w, CT_OP_CONV2D);
  w.out_type = CT_DTYPE_INT8;
  w.c = 16;
  w.k = 4 * (e->d2s_block ? e->d2s_block * e->d2s_block : 1);
  w.in[0] = w.in[1] = 8;
  w.kernel[0] = w.kernel[1] = 3;
  w.epi = *e;
  FUZZ_CHECK(workload_validate(&w, &err) == CT_OK, "epilogue '%s' refused on a workload: %s", list,
             err.msg);
  check_workload(&w, "epilogue");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 16384) return 0;
  char *text = fuzz_cstr(data, size);
  ct_err err = {0};
  ct_workload w;
  ct_status st = workload_from_json_text(text, &w, &err);
  if (st == CT_OK)
    check_workload(&w, "json");
  else
    FUZZ_CHECK(st < 0 && err.msg[0], "json: refused (status %d) without a message", (int)st);

  /* A set: the batch override (n replaced before validation) by the size,
   * so that the corpus exercises both paths. */
  wlset *set = NULL;
  int batch = size % 3 ? 0 : (int)(size % 7) + 1;
  st = wlset_parse(text, "fuzz", batch, &set, &err);
  if (st == CT_OK) {
    FUZZ_CHECK(set && set->n_items >= 0, "set: accepted without items");
    for (int i = 0; i < set->n_items; i++) {
      FUZZ_CHECK(set->items[i].name && set->items[i].name[0], "set: item %d has no name", i);
      FUZZ_CHECK(!batch || set->items[i].w.n == batch, "set: item %d has n %d, batch %d", i,
                 set->items[i].w.n, batch);
      check_workload(&set->items[i].w, "set");
    }
  } else {
    FUZZ_CHECK(!set && err.msg[0], "set: refused (status %d) without a message", (int)st);
  }
  wlset_free(set);

  ct_epilogue e;
  st = workload_epilogue_parse(text, &e, &err);
  if (st == CT_OK)
    check_epilogue(&e);
  else
    FUZZ_CHECK(st < 0 && err.msg[0], "epilogue: refused (status %d) without a message", (int)st);
  free(text);
  return 0;
}
