/*
 * fuzz.h: what the libFuzzer harnesses of tests/fuzz share: the entry
 * points' prototypes, FUZZ_CHECK (a violated property prints one line and
 * aborts, which libFuzzer reports as a crash with its input), a reader that
 * turns fuzz bytes into bounded numbers, and the checks every parsed
 * workload must pass (round trips through the key and the JSON form, the
 * size helpers, the output's dimensions).
 *
 * Invariant: a harness prints nothing unless a property is violated.
 * Cost: check_workload is a few microseconds (two printings, two parses).
 */
#ifndef CT_TESTS_FUZZ_H
#define CT_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property that must hold: print where and why, then abort (libFuzzer
 * saves the input as crash-*). */
#define FUZZ_CHECK(cond, ...)                                                                      \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: property violated: %s: ", __FILE__, __LINE__, #cond);                \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

/* A copy of data with a NUL after it (owned: free). Embedded NULs stay and
 * end the string early, as they would for any C caller. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  if (size) memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* Bytes consumed in order; past the end every read gives 0. */
typedef struct fuzz_in {
  const uint8_t *p;
  size_t n;
} fuzz_in;

static inline uint32_t fuzz_u8(fuzz_in *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

static inline uint32_t fuzz_u32(fuzz_in *in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v = v << 8 | fuzz_u8(in);
  return v;
}

/* A value in [lo, hi]: mostly small (lo + one byte's worth, where real
 * layers live), sometimes anywhere in the range, sometimes its ends. */
static inline int fuzz_range(fuzz_in *in, int lo, int hi) {
  uint32_t sel = fuzz_u8(in), span = (uint32_t)(hi - lo) + 1;
  if (sel < 192) return lo + (int)(fuzz_u8(in) % (span < 64 ? span : 64));
  if (sel < 224) return lo + (int)(fuzz_u32(in) % span);
  return sel & 1 ? hi : lo;
}

/* Whether a and b are the same workload, field by field (ct_workload is
 * ints and enums, with no padding, and every parser zeroes it first). */
static inline int same_workload(const ct_workload *a, const ct_workload *b) {
  return memcmp(a, b, sizeof *a) == 0;
}

/* Everything that must hold for a workload a parser accepted (where names
 * the parser, for the message). */
static inline void check_workload(const ct_workload *w, const char *where) {
  ct_err err = {0};
  FUZZ_CHECK(workload_validate(w, &err) == CT_OK, "%s: accepted, then refused: %s", where, err.msg);
  /* The key: canonical, within CT_KEY_MAX, and parsed back to w. */
  char key[CT_KEY_MAX + 8];
  memset(key, 'x', sizeof key);
  workload_key(w, key, CT_KEY_MAX);
  FUZZ_CHECK(strlen(key) < CT_KEY_MAX - 1, "%s: key of %zu bytes may be cut: %s", where,
             strlen(key), key);
  ct_workload back;
  FUZZ_CHECK(workload_from_key(key, &back, &err) == CT_OK, "%s: its key %s is refused: %s", where,
             key, err.msg);
  FUZZ_CHECK(same_workload(w, &back), "%s: key %s parses to another workload", where, key);
  /* The JSON form parses back to w. */
  cJSON *j = workload_to_json(w);
  char *text = j ? cJSON_PrintUnformatted(j) : NULL;
  FUZZ_CHECK(text != NULL, "%s: workload_to_json failed for %s", where, key);
  FUZZ_CHECK(workload_from_json_text(text, &back, &err) == CT_OK, "%s: its JSON %s is refused: %s",
             where, text, err.msg);
  FUZZ_CHECK(same_workload(w, &back), "%s: JSON %s parses to another workload", where, text);
  free(text);
  cJSON_Delete(j);
  /* Sizes: positive, within what validation promised; UBSan watches the
   * arithmetic inside. */
  int64_t data = workload_data_elems(w), wts = workload_weight_elems(w),
          out = workload_out_elems(w), ops = workload_ops(w);
  FUZZ_CHECK(data >= 1 && data <= CT_MAX_ELEMS, "%s: %s: data elements %lld", where, key,
             (long long)data);
  FUZZ_CHECK(wts >= 1 && wts <= CT_MAX_ELEMS, "%s: %s: weight elements %lld", where, key,
             (long long)wts);
  FUZZ_CHECK(out >= 1 && out <= CT_MAX_ELEMS, "%s: %s: output elements %lld", where, key,
             (long long)out);
  FUZZ_CHECK(ops >= 2, "%s: %s: ops %lld", where, key, (long long)ops);
  /* The output's dimensions multiply to its element count. */
  int64_t dims[CT_MAX_SPATIAL + 3], prod = 1;
  int n_dims = workload_out_dims(w, dims);
  FUZZ_CHECK(n_dims >= 3 && n_dims <= CT_MAX_SPATIAL + 3, "%s: %s: %d output dims", where, key,
             n_dims);
  for (int i = 0; i < n_dims; i++) {
    FUZZ_CHECK(dims[i] >= 1 && !__builtin_mul_overflow(prod, dims[i], &prod),
               "%s: %s: output dim %d is %lld", where, key, i, (long long)dims[i]);
  }
  FUZZ_CHECK(prod == out, "%s: %s: output dims give %lld elements, workload_out_elems %lld", where,
             key, (long long)prod, (long long)out);
  char shape[64];
  workload_out_shape(w, shape, sizeof shape);
  FUZZ_CHECK(strlen(shape) < sizeof shape - 1, "%s: %s: output shape may be cut: %s", where, key,
             shape);
  /* The normalised view: output sizes as workload_out_size says, all >= 1. */
  geom3 g;
  workload_geom(w, &g);
  int nd = workload_nd(w), off = 3 - nd;
  for (int d = 0; d < 3; d++)
    FUZZ_CHECK(g.out[d] >= 1 && (d < off || g.out[d] == workload_out_size(w, d - off)),
               "%s: %s: geom out[%d] = %lld", where, key, d, (long long)g.out[d]);
  int64_t per = workload_d2s_volume(w);
  FUZZ_CHECK(per >= 1 && w->k % per == 0 && workload_out_channels(w) >= 1,
             "%s: %s: depth_to_space volume %lld for k %d", where, key, (long long)per, w->k);
}

#endif
