/*
 * space.h: knob spaces: the tunable choices of a template for one workload.
 *
 * A space is a list of knobs; each knob has a list of candidates:
 *   split:   every ordered factorisation of an axis extent into `parts`
 *            factors (outermost first, product exactly the extent), in
 *            lexicographic order; e.g. 12 into 2 parts: [1,12] [2,6] ... [12,1];
 *   reorder: every permutation of n axes (lexicographic, identity first);
 *   choice:  a list of integer values (e.g. fuse_yx {0, 1}).
 * A config picks one candidate per knob. Its index is mixed-radix, knob 0
 * the least significant digit: index = c0 + n0 * (c1 + n1 * (c2 + ...)).
 * Spaces reach 10^9 points and more, so nothing here enumerates a whole
 * space: sampling and neighbourhoods work on digits. Validity is the
 * template's business (templates/template.h), not the space's.
 */
#ifndef CT_SPACE_SPACE_H
#define CT_SPACE_SPACE_H

#include <stdint.h>

#include <cJSON.h>

#include "core/error.h"
#include "core/rng.h"

#define KNOB_NAME_MAX   32
#define KNOB_MAX_WIDTH  4 /* ints per candidate: split parts, reorder axes */
#define SPACE_MAX_KNOBS 24

typedef enum knob_kind { KNOB_SPLIT, KNOB_REORDER, KNOB_CHOICE } knob_kind;

typedef struct knob {
  char name[KNOB_NAME_MAX];
  knob_kind kind;
  int width;   /* ints per candidate: parts (split), axes (reorder), 1 (choice) */
  int extent;  /* split: the axis extent; else 0 */
  int n_cands; /* >= 1 */
  int *cands;  /* n_cands * width ints, owned by the space */
} knob;

typedef struct space {
  int n_knobs;
  knob knobs[SPACE_MAX_KNOBS];
  uint64_t size; /* product of the n_cands; 1 for an empty space */
} space;

/* One point: the candidate chosen for each knob, by position. */
typedef struct config {
  int choice[SPACE_MAX_KNOBS];
} config;

/* An empty space (size 1). */
void space_init(space *s);
/* Free the candidates; the space is empty afterwards. NULL is accepted. */
void space_free(space *s);

/* Add knobs. Names are C identifiers (they become -D macros and JSON keys).
 * Each fails with CT_ERR_INVALID_ARG (bad extent, parts or n, duplicate or
 * malformed name, too many knobs), CT_ERR_UNSUPPORTED (the size would
 * overflow uint64, or a split of more than 2^20 candidates) or
 * CT_ERR_NO_MEMORY, leaving the space as it was. */
ct_status space_add_split(space *s, const char *name, int extent, int parts, ct_err *err);
ct_status space_add_reorder(space *s, const char *name, int n_axes, ct_err *err);
ct_status space_add_choice(space *s, const char *name, const int *values, int n, ct_err *err);

/* The position of the knob named name, or -1. */
int space_find(const space *s, const char *name);

/* The ints of the candidate cfg picks for knob k (width of them). Borrowed:
 * valid while the space lives. */
const int *space_value(const space *s, const config *cfg, int k);

/* The value of a choice knob, or the first int of any knob, by name; dflt
 * when the space has no such knob. */
int space_get(const space *s, const config *cfg, const char *name, int dflt);

/* Mixed-radix index of cfg, and the inverse (CT_ERR_INVALID_ARG when
 * index >= size). */
uint64_t space_index(const space *s, const config *cfg);
ct_status space_config(const space *s, uint64_t index, config *out, ct_err *err);

/* {"tile_f": [2, 1, 8, 1], "reorder_inner": [0, 2, 1], "fuse_yx": 1, ...};
 * owned (cJSON_Delete), NULL when out of memory. */
cJSON *space_config_to_json(const space *s, const config *cfg);
/* The inverse. Every knob must be present once with a value that is one of
 * its candidates; unknown names are rejected. CT_ERR_PARSE for any content
 * error, with a message that names the knob and says what is accepted (for a
 * split: the extent and the number of parts); out is written only on success. */
ct_status space_config_from_json(const space *s, const cJSON *json, config *out, ct_err *err);

/* A uniformly random point of the whole space. */
void space_random(const space *s, rng *r, config *out);

/* A neighbour of cfg: one knob with more than one candidate changed to
 * another of its candidates, knob and candidate uniformly random. Returns the
 * knob changed, or -1 (out = cfg) when no knob has a second candidate. out
 * may be cfg. */
int space_neighbor(const space *s, rng *r, const config *cfg, config *out);

/* Write a compact text form of cfg, e.g.
 * "tile_f=[2,1,8,1] reorder_inner=[0,2,1] fuse_yx=1", into buf. Returns buf. */
char *space_config_str(const space *s, const config *cfg, char *buf, size_t size);

#endif
