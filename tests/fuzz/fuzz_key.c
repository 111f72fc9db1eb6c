/*
 * fuzz_key.c: libFuzzer harness of the canonical workload key parser
 * (workload_from_key): any bytes, NUL-terminated, are a key. A refused key
 * must come with a message; an accepted one must be valid, exactly its own
 * canonical form, and survive the round trips and size checks of
 * check_workload (fuzz.h). Seeds: tests/fuzz/corpus/fuzz_key (keys of the
 * shipped sets and every epilogue segment).
 * Cost: one parse, plus check_workload for an accepted key.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A key is under CT_KEY_MAX; longer inputs only test the refusal, which a
   * few KB show as well as megabytes. */
  if (size > 4096) return 0;
  char *key = fuzz_cstr(data, size);
  ct_workload w;
  ct_err err = {0};
  ct_status st = workload_from_key(key, &w, &err);
  if (st == CT_OK) {
    FUZZ_CHECK(strlen(key) < CT_KEY_MAX, "accepted a key of %zu bytes", strlen(key));
    char canon[CT_KEY_MAX];
    workload_key(&w, canon, sizeof canon);
    FUZZ_CHECK(!strcmp(canon, key), "accepted %s, whose canonical form is %s", key, canon);
    check_workload(&w, "key");
  } else {
    FUZZ_CHECK(st < 0 && err.status == st && err.msg[0] && memchr(err.msg, '\0', sizeof err.msg),
               "refused (status %d) without a message", (int)st);
  }
  free(key);
  return 0;
}
