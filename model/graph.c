/*
 * graph.c: reading an ONNX file into the indexed graph of graph.h: the
 * file's bytes, protobuf-c's unpack (after a check of the nesting depth,
 * which protobuf-c recurses over without a limit), the name -> value table,
 * producers and uses, a topological order, attributes and constants.
 *
 * Constants are decoded from raw_data (little-endian, as ONNX stores it),
 * the typed fields (float_data, int32_data, int64_data) or external data
 * (a file relative to the model's folder, at offset, of length bytes),
 * each size checked against the dims before anything is copied.
 */
#include "model/graph.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian; this reader copies it as it is"
#endif

/* Deepest nesting of messages accepted. ONNX nests a model, its graph, a
 * node, an attribute, a subgraph and so on: real models stay under 30
 * levels, and protobuf-c's unpack recurses once per level. */
#define NEST_MAX 100

/* Files above this are refused: protobuf caps a message at 2 GiB, which is
 * why larger models keep their weights in external data. */
#define FILE_MAX ((size_t)INT32_MAX)

/* Names and nodes above this are refused: indices are int. */
#define COUNT_MAX (1 << 26)

ct_status graph_err(const graph *g, ct_err *err, ct_status st, int node, const char *fmt, ...) {
  char msg[CT_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (node >= 0 && node < g->n_nodes) {
    /* the node's name and op as excerpts: a long one cannot push msg out */
    char name[CT_EXCERPT_MAX], op[CT_EXCERPT_MAX];
    return ERR_SET(err, st, "%s: node '%s' (%s): %s", g->path,
                   err_excerpt(name, sizeof name, g->nodes[node].name),
                   err_excerpt(op, sizeof op, g->nodes[node].op), msg);
  }
  return ERR_SET(err, st, "%s: %s", g->path, msg);
}

/* ---- the nesting check -------------------------------------------------- */

static int read_varint(const uint8_t *p, size_t end, size_t *pos, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= end) return 0;
    uint8_t b = p[(*pos)++];
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return 1;
    }
  }
  return 0;
}

/* 0 when buf nests messages deeper than NEST_MAX, else 1. Walks the wire
 * format's tags and lengths only, guided by the generated descriptors
 * (which fields are messages); anything malformed stops the walk and is
 * left to protobuf-c's unpack to reject. Iterative: the stack is bounded. */
static int nesting_ok(const uint8_t *buf, size_t len) {
  struct {
    const ProtobufCMessageDescriptor *d;
    size_t end;
  } st[NEST_MAX + 1];
  int top = 0;
  st[0].d = &onnx__model_proto__descriptor;
  st[0].end = len;
  size_t pos = 0;
  for (;;) {
    while (top > 0 && pos == st[top].end) top--;
    if (pos >= st[top].end) return 1; /* the end, or a field ran past its message */
    uint64_t tag, v;
    if (!read_varint(buf, st[top].end, &pos, &tag)) return 1;
    switch (tag & 7) {
    case 0:
      if (!read_varint(buf, st[top].end, &pos, &v)) return 1;
      break;
    case 1:
      if (st[top].end - pos < 8) return 1;
      pos += 8;
      break;
    case 5:
      if (st[top].end - pos < 4) return 1;
      pos += 4;
      break;
    case 2: {
      if (!read_varint(buf, st[top].end, &pos, &v) || v > st[top].end - pos) return 1;
      const ProtobufCFieldDescriptor *f =
          tag >> 3 <= UINT_MAX
              ? protobuf_c_message_descriptor_get_field(st[top].d, (unsigned)(tag >> 3))
              : NULL;
      if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && f->descriptor) {
        if (top == NEST_MAX) return 0;
        top++;
        st[top].d = f->descriptor;
        st[top].end = pos + (size_t)v;
      } else {
        pos += (size_t)v;
      }
      break;
    }
    default:
      return 1;
    }
  }
}

/* ---- the index ------------------------------------------------------------ */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

int graph_find(const graph *g, const char *name) {
  if (!name || !*name || !g->table_size) return -1;
  size_t mask = g->table_size - 1;
  for (size_t i = hash_str(name) & mask;; i = (i + 1) & mask) {
    int slot = g->table[i];
    if (!slot) return -1;
    if (!strcmp(g->values[slot - 1].name, name)) return slot - 1;
  }
}

/* The value called name, created when new; -1 for "" (an omitted input). */
static int intern(graph *g, const char *name) {
  if (!name || !*name) return -1;
  size_t mask = g->table_size - 1;
  size_t i = hash_str(name) & mask;
  for (; g->table[i]; i = (i + 1) & mask)
    if (!strcmp(g->values[g->table[i] - 1].name, name)) return g->table[i] - 1;
  gvalue *v = &g->values[g->n_values];
  memset(v, 0, sizeof *v);
  v->name = name;
  v->producer = -1;
  v->shape.rank = -1;
  v->declared.rank = -1;
  v->shape_why_node = -1;
  g->table[i] = ++g->n_values;
  return g->n_values - 1;
}

int graph_in(const graph *g, int n, int i) {
  if (n < 0 || n >= g->n_nodes || i < 0 || i >= g->nodes[n].n_in) return -1;
  return g->nodes[n].in[i];
}

int graph_out(const graph *g, int n, int i) {
  if (n < 0 || n >= g->n_nodes || i < 0 || i >= g->nodes[n].n_out) return -1;
  return g->nodes[n].out[i];
}

static int default_domain(const char *d) {
  return !*d || !strcmp(d, "ai.onnx");
}

int graph_is(const graph *g, int n, const char *op) {
  return n >= 0 && n < g->n_nodes && default_domain(g->nodes[n].domain) &&
         !strcmp(g->nodes[n].op, op);
}

int graph_is_ms(const graph *g, int n, const char *op) {
  return n >= 0 && n < g->n_nodes &&
         (default_domain(g->nodes[n].domain) || !strcmp(g->nodes[n].domain, "com.microsoft")) &&
         !strcmp(g->nodes[n].op, op);
}

int graph_sole_use(const graph *g, int v) {
  if (v < 0 || v >= g->n_values || g->values[v].is_output || g->values[v].n_uses != 1) return -1;
  return g->values[v].uses[0];
}

static const char *str_or_empty(const char *s) {
  return s ? s : "";
}

/* A Constant node's value_* attribute as a tensor (borrowing its data). */
static ct_status constant_value(graph *g, int n, ct_err *err) {
  const Onnx__NodeProto *p = g->nodes[n].p;
  int v = graph_out(g, n, 0);
  if (v < 0) return CT_OK;
  for (size_t i = 0; i < p->n_attribute; i++) {
    const Onnx__AttributeProto *a = p->attribute[i];
    if (!a || !a->name) continue;
    if (!strcmp(a->name, "value") && a->t) {
      g->values[v].constant = a->t;
      return CT_OK;
    }
    int is_int = !strcmp(a->name, "value_int") || !strcmp(a->name, "value_ints");
    int is_float = !strcmp(a->name, "value_float") || !strcmp(a->name, "value_floats");
    if (!is_int && !is_float) continue;
    int scalar = !strcmp(a->name, "value_int") || !strcmp(a->name, "value_float");
    Onnx__TensorProto *t = malloc(sizeof *t);
    int64_t *dims = malloc(sizeof *dims);
    if (!t || !dims) {
      free(t);
      free(dims);
      return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    }
    Onnx__TensorProto init = ONNX__TENSOR_PROTO__INIT;
    *t = init;
    t->has_data_type = 1;
    t->data_type = is_int ? ONNX_INT64 : ONNX_FLOAT;
    t->name = (char *)g->values[v].name;
    if (scalar) {
      free(dims);
      dims = NULL;
      if (is_int) {
        t->n_int64_data = 1;
        t->int64_data = (int64_t *)&a->i;
      } else {
        t->n_float_data = 1;
        t->float_data = (float *)&a->f;
      }
    } else {
      t->n_dims = 1;
      dims[0] = (int64_t)(is_int ? a->n_ints : a->n_floats);
      if (is_int) {
        t->n_int64_data = a->n_ints;
        t->int64_data = a->ints;
      } else {
        t->n_float_data = a->n_floats;
        t->float_data = a->floats;
      }
    }
    t->dims = dims;
    g->synth[g->n_synth++] = t;
    g->values[v].constant = t;
    return CT_OK;
  }
  return CT_OK;
}

/* The value index for each of a node's names (n_names of them) into *idx. */
static ct_status node_names(graph *g, char **names, size_t n_names, int **idx, int *count,
                            ct_err *err) {
  *count = (int)n_names;
  *idx = malloc((n_names ? n_names : 1) * sizeof **idx);
  if (!*idx) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < n_names; i++) (*idx)[i] = intern(g, names[i]);
  return CT_OK;
}

/* A min-heap of node indices, for an order that keeps the file's where free. */
static void heap_push(int *h, int *n, int v) {
  int i = (*n)++;
  while (i > 0 && h[(i - 1) / 2] > v) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = v;
}

static int heap_pop(int *h, int *n) {
  int top = h[0], last = h[--(*n)], i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1] < h[c]) c++;
    if (h[c] >= last) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = last;
  return top;
}

static ct_status topo_order(graph *g, ct_err *err) {
  int *indeg = calloc((size_t)g->n_nodes + 1, sizeof *indeg);
  int *heap = malloc(((size_t)g->n_nodes + 1) * sizeof *heap);
  g->order = malloc(((size_t)g->n_nodes + 1) * sizeof *g->order);
  ct_status st = CT_OK;
  if (!indeg || !heap || !g->order) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  int n_heap = 0, n_done = 0;
  for (int n = 0; n < g->n_nodes; n++) {
    for (int i = 0; i < g->nodes[n].n_in; i++) {
      int v = g->nodes[n].in[i];
      if (v >= 0 && g->values[v].producer >= 0) indeg[n]++;
    }
    if (!indeg[n]) heap_push(heap, &n_heap, n);
  }
  while (n_heap) {
    int n = heap_pop(heap, &n_heap);
    g->order[n_done++] = n;
    for (int o = 0; o < g->nodes[n].n_out; o++) {
      int v = g->nodes[n].out[o];
      if (v < 0) continue;
      for (int u = 0; u < g->values[v].n_uses; u++)
        if (--indeg[g->values[v].uses[u]] == 0) heap_push(heap, &n_heap, g->values[v].uses[u]);
    }
  }
  if (n_done < g->n_nodes) {
    int n = 0;
    while (n < g->n_nodes && !indeg[n]) n++;
    st = graph_err(g, err, CT_ERR_PARSE, n,
                   "the graph has a cycle: this node waits on its own output (or on a node that "
                   "does)");
  }
done:
  free(indeg);
  free(heap);
  return st;
}

ct_status graph_order_units(const graph *g, const int *unit, int *out, int *count, ct_err *err) {
  size_t nn = (size_t)g->n_nodes + 1;
  int *indeg = calloc(nn, sizeof *indeg), *heap = malloc(nn * sizeof *heap);
  int *first = malloc((nn + 1) * sizeof *first), *members = malloc(nn * sizeof *members);
  ct_status st = CT_OK;
  *count = 0;
  if (!indeg || !heap || !first || !members) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  /* members of each unit, contiguous: first[u] .. first[u + 1] */
  for (int u = 0; u <= g->n_nodes; u++) first[u] = 0;
  for (int n = 0; n < g->n_nodes; n++) first[unit[n] + 1]++;
  for (int u = 0; u < g->n_nodes; u++) first[u + 1] += first[u];
  for (int n = 0, *fill = indeg; n < g->n_nodes; n++) members[first[unit[n]] + fill[unit[n]]++] = n;
  memset(indeg, 0, nn * sizeof *indeg);
  int n_units = 0, n_heap = 0;
  for (int n = 0; n < g->n_nodes; n++) {
    if (unit[n] == n) n_units++;
    for (int i = 0; i < g->nodes[n].n_in; i++) {
      int v = g->nodes[n].in[i];
      if (v >= 0 && g->values[v].producer >= 0 && unit[g->values[v].producer] != unit[n])
        indeg[unit[n]]++;
    }
  }
  for (int n = 0; n < g->n_nodes; n++)
    if (unit[n] == n && !indeg[n]) heap_push(heap, &n_heap, n);
  while (n_heap) {
    int u = heap_pop(heap, &n_heap);
    out[(*count)++] = u;
    for (int m = first[u]; m < first[u + 1]; m++) {
      const gnode *nd = &g->nodes[members[m]];
      for (int o = 0; o < nd->n_out; o++) {
        int v = nd->out[o];
        for (int k = 0; v >= 0 && k < g->values[v].n_uses; k++) {
          int w = unit[g->values[v].uses[k]];
          if (w != u && --indeg[w] == 0) heap_push(heap, &n_heap, w);
        }
      }
    }
  }
  if (*count < n_units) {
    int n = 0;
    while (n < g->n_nodes && !(unit[n] == n && indeg[n])) n++;
    st = graph_err(g, err, CT_ERR_PARSE, n,
                   "the fused convolutions wait on each other's outputs: no order runs them");
  }
done:
  free(indeg);
  free(heap);
  free(first);
  free(members);
  return st;
}

static ct_status build_index(graph *g, ct_err *err) {
  const Onnx__GraphProto *gp = g->gp;
  /* every name the graph can mention, an upper bound for the table */
  uint64_t names = (uint64_t)gp->n_input + gp->n_initializer + gp->n_output + gp->n_value_info;
  if (gp->n_node > COUNT_MAX) return graph_err(g, err, CT_ERR_PARSE, -1, "too many nodes");
  for (size_t n = 0; n < gp->n_node; n++) {
    if (!gp->node[n]) return graph_err(g, err, CT_ERR_PARSE, -1, "node %zu is empty", n);
    names += (uint64_t)gp->node[n]->n_input + gp->node[n]->n_output;
  }
  if (names > COUNT_MAX) return graph_err(g, err, CT_ERR_PARSE, -1, "too many tensor names");
  g->table_size = 16;
  while (g->table_size < 2 * names + 1) g->table_size *= 2;
  g->table = calloc(g->table_size, sizeof *g->table);
  g->values = malloc((names + 1) * sizeof *g->values);
  g->n_nodes = (int)gp->n_node;
  g->nodes = calloc((size_t)g->n_nodes + 1, sizeof *g->nodes);
  g->synth = calloc((size_t)g->n_nodes + 1, sizeof *g->synth);
  if (!g->table || !g->values || !g->nodes || !g->synth)
    return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  ct_status st;

  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    int v = t ? intern(g, t->name) : -1;
    if (v < 0) continue; /* an initializer without a name cannot be read */
    if (g->values[v].constant)
      return graph_err(g, err, CT_ERR_PARSE, -1, "initializer '%s' is defined twice",
                       err_excerpt((char[CT_EXCERPT_MAX]){0}, CT_EXCERPT_MAX, t->name));
    g->values[v].constant = t;
  }
  for (size_t i = 0; i < gp->n_input; i++) {
    int v = gp->input[i] ? intern(g, gp->input[i]->name) : -1;
    if (v >= 0 && !g->values[v].constant) g->values[v].is_input = 1;
  }
  for (int n = 0; n < g->n_nodes; n++) {
    const Onnx__NodeProto *p = gp->node[n];
    gnode *nd = &g->nodes[n];
    nd->p = p;
    nd->op = str_or_empty(p->op_type);
    nd->domain = str_or_empty(p->domain);
    if (p->name && *p->name) {
      nd->name = strdup(p->name);
    } else {
      size_t len = strlen(nd->op) + 16;
      if ((nd->name = malloc(len))) snprintf(nd->name, len, "%s#%d", nd->op, n);
    }
    if (!nd->name) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    if ((st = node_names(g, p->input, p->n_input, &nd->in, &nd->n_in, err)) ||
        (st = node_names(g, p->output, p->n_output, &nd->out, &nd->n_out, err)))
      return st;
    for (int o = 0; o < nd->n_out; o++) {
      int v = nd->out[o];
      if (v < 0) continue;
      gvalue *val = &g->values[v];
      if (val->producer >= 0)
        return graph_err(g, err, CT_ERR_PARSE, n, "its output '%s' is also node '%s''s output",
                         val->name, g->nodes[val->producer].name);
      if (val->constant || val->is_input)
        return graph_err(g, err, CT_ERR_PARSE, n,
                         "its output '%s' is also a graph %s: a tensor has one source", val->name,
                         val->constant ? "initializer" : "input");
      val->producer = n;
    }
    if (graph_is(g, n, "Constant") && (st = constant_value(g, n, err))) return st;
  }
  for (size_t i = 0; i < gp->n_output; i++) {
    int v = gp->output[i] ? intern(g, gp->output[i]->name) : -1;
    if (v >= 0) g->values[v].is_output = 1;
  }
  for (size_t i = 0; i < gp->n_value_info; i++)
    if (gp->value_info[i]) (void)intern(g, gp->value_info[i]->name);

  /* uses: count, then fill */
  for (int n = 0; n < g->n_nodes; n++)
    for (int i = 0; i < g->nodes[n].n_in; i++)
      if (g->nodes[n].in[i] >= 0) g->values[g->nodes[n].in[i]].n_uses++;
  for (int v = 0; v < g->n_values; v++) {
    g->values[v].uses = malloc(((size_t)g->values[v].n_uses + 1) * sizeof(int));
    if (!g->values[v].uses) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    g->values[v].n_uses = 0;
  }
  for (int n = 0; n < g->n_nodes; n++)
    for (int i = 0; i < g->nodes[n].n_in; i++) {
      int v = g->nodes[n].in[i];
      if (v >= 0) g->values[v].uses[g->values[v].n_uses++] = n;
    }
  return topo_order(g, err);
}

/* ---- open / free --------------------------------------------------------- */

static ct_status read_file(graph *g, ct_err *err) {
  FILE *f = fopen(g->path, "rb");
  if (!f)
    return ERR_SET(err, errno == ENOENT ? CT_ERR_NOT_FOUND : CT_ERR_IO, "%s: cannot open: %s",
                   g->path, strerror(errno));
  struct stat sb;
  ct_status st = CT_OK;
  if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
    st = ERR_SET(err, CT_ERR_IO, "%s: not a regular file", g->path);
  } else if ((uint64_t)sb.st_size > FILE_MAX) {
    st = ERR_SET(err, CT_ERR_PARSE,
                 "%s: %lld bytes; an ONNX protobuf holds at most 2 GiB (larger models keep their "
                 "weights in external data)",
                 g->path, (long long)sb.st_size);
  } else {
    g->n_bytes = (size_t)sb.st_size;
    g->bytes = malloc(g->n_bytes + 1);
    if (!g->bytes)
      st = ERR_SET(err, CT_ERR_NO_MEMORY, "%s: out of memory for %zu bytes", g->path, g->n_bytes);
    else if (fread(g->bytes, 1, g->n_bytes, f) != g->n_bytes)
      st = ERR_SET(err, CT_ERR_IO, "%s: read error", g->path);
  }
  fclose(f);
  return st;
}

ct_status graph_open(const char *path, graph **out, ct_err *err) {
  *out = NULL;
  if (!path) return ERR_SET(err, CT_ERR_INVALID_ARG, "model path is NULL");
  graph *g = calloc(1, sizeof *g);
  if (!g) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  g->path = path;
  ct_status st;
  if ((st = read_file(g, err))) goto fail;
  const char *slash = strrchr(path, '/');
  g->dir = slash ? strndup(path, (size_t)(slash - path + 1)) : strdup("");
  if (!g->dir) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
    goto fail;
  }
  if (!nesting_ok(g->bytes, g->n_bytes)) {
    st = ERR_SET(err, CT_ERR_PARSE,
                 "%s: messages nested more than %d deep; not a model this "
                 "reader accepts",
                 path, NEST_MAX);
    goto fail;
  }
  g->mp = onnx__model_proto__unpack(NULL, g->n_bytes, g->bytes);
  if (!g->mp) {
    st = ERR_SET(err, CT_ERR_PARSE,
                 "%s: not a valid ONNX model: the protobuf is malformed or truncated", path);
    goto fail;
  }
  if (!g->mp->graph) {
    st = ERR_SET(err, CT_ERR_PARSE, "%s: not an ONNX model: it has no graph", path);
    goto fail;
  }
  g->gp = g->mp->graph;
  if ((st = build_index(g, err))) goto fail;
  *out = g;
  return CT_OK;
fail:
  graph_free(g);
  return st;
}

void graph_free(graph *g) {
  if (!g) return;
  for (int n = 0; n < g->n_nodes && g->nodes; n++) {
    free(g->nodes[n].name);
    free(g->nodes[n].in);
    free(g->nodes[n].out);
  }
  free(g->nodes);
  for (int v = 0; v < g->n_values; v++) free(g->values[v].uses);
  free(g->values);
  free(g->table);
  free(g->order);
  for (int i = 0; i < g->n_synth; i++) {
    free(g->synth[i]->dims);
    free(g->synth[i]);
  }
  free(g->synth);
  if (g->mp) onnx__model_proto__free_unpacked(g->mp, NULL);
  free(g->bytes);
  free(g->dir);
  free(g);
}

/* ---- attributes ------------------------------------------------------------ */

const Onnx__AttributeProto *graph_attr(const graph *g, int n, const char *name) {
  if (n < 0 || n >= g->n_nodes) return NULL;
  const Onnx__NodeProto *p = g->nodes[n].p;
  for (size_t i = 0; i < p->n_attribute; i++)
    if (p->attribute[i] && p->attribute[i]->name && !strcmp(p->attribute[i]->name, name))
      return p->attribute[i];
  return NULL;
}

/* Whether a is of type t (an attribute without a type: by its fields). */
static int attr_is(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t) {
  if (a->has_type) return a->type == t;
  switch (t) {
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
    return a->has_i;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
    return a->has_f;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
    return a->has_s;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
    return a->n_ints > 0;
  default:
    return 0;
  }
}

ct_status graph_attr_int(const graph *g, int n, const char *name, int64_t dflt, int64_t *v,
                         ct_err *err) {
  const Onnx__AttributeProto *a = graph_attr(g, n, name);
  *v = dflt;
  if (!a) return CT_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT))
    return graph_err(g, err, CT_ERR_PARSE, n, "attribute '%s' must be an integer", name);
  *v = a->i;
  return CT_OK;
}

ct_status graph_attr_float(const graph *g, int n, const char *name, float dflt, float *v,
                           ct_err *err) {
  const Onnx__AttributeProto *a = graph_attr(g, n, name);
  *v = dflt;
  if (!a) return CT_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT))
    return graph_err(g, err, CT_ERR_PARSE, n, "attribute '%s' must be a float", name);
  *v = a->f;
  return CT_OK;
}

ct_status graph_attr_ints(const graph *g, int n, const char *name, int64_t *v, int max, int *count,
                          ct_err *err) {
  const Onnx__AttributeProto *a = graph_attr(g, n, name);
  *count = -1;
  if (!a) return CT_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) &&
      !(a->has_type == 0 && a->n_ints == 0))
    return graph_err(g, err, CT_ERR_PARSE, n, "attribute '%s' must be a list of integers", name);
  if (a->n_ints > (size_t)max)
    return graph_err(g, err, CT_ERR_PARSE, n, "attribute '%s' has %zu values; at most %d fit", name,
                     a->n_ints, max);
  for (size_t i = 0; i < a->n_ints; i++) v[i] = a->ints[i];
  *count = (int)a->n_ints;
  return CT_OK;
}

ct_status graph_attr_str(const graph *g, int n, const char *name, const char *dflt, char *buf,
                         size_t size, ct_err *err) {
  const Onnx__AttributeProto *a = graph_attr(g, n, name);
  if (!a) {
    snprintf(buf, size, "%s", dflt);
    return CT_OK;
  }
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING))
    return graph_err(g, err, CT_ERR_PARSE, n, "attribute '%s' must be a string", name);
  if (a->s.len >= size || (a->s.len && !a->s.data))
    return graph_err(g, err, CT_ERR_PARSE, n, "attribute '%s' is too long (%zu bytes)", name,
                     a->s.len);
  if (a->s.len) memcpy(buf, a->s.data, a->s.len);
  buf[a->s.len] = '\0';
  return CT_OK;
}

/* ---- constants -------------------------------------------------------------- */

const char *onnx_type_name(int t, char *buf, size_t size) {
  static const char *const names[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
      "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4"};
  if (t >= 0 && t < (int)(sizeof names / sizeof names[0])) return names[t];
  snprintf(buf, size, "type %d", t);
  return buf;
}

static size_t elem_size(int dtype) {
  switch (dtype) {
  case ONNX_FLOAT:
  case ONNX_INT32:
    return 4;
  case ONNX_UINT8:
  case ONNX_INT8:
    return 1;
  case ONNX_INT64:
    return 8;
  }
  return 0;
}

void gtensor_free(gtensor *t) {
  if (!t) return;
  free(t->data);
  t->data = NULL;
}

int64_t gtensor_i64(const gtensor *t, int64_t i) {
  switch (t->dtype) {
  case ONNX_UINT8:
    return ((const uint8_t *)t->data)[i];
  case ONNX_INT8:
    return ((const int8_t *)t->data)[i];
  case ONNX_INT32:
    return ((const int32_t *)t->data)[i];
  case ONNX_INT64:
    return ((const int64_t *)t->data)[i];
  case ONNX_FLOAT:
    return (int64_t)((const float *)t->data)[i];
  }
  return 0;
}

float gtensor_f32(const gtensor *t, int64_t i) {
  if (t->dtype == ONNX_FLOAT) return ((const float *)t->data)[i];
  return (float)gtensor_i64(t, i);
}

/* A non-negative decimal in s into *v: 1, or 0 when it is not one. */
static int parse_u64(const char *s, uint64_t *v) {
  if (!s || !*s) return 0;
  uint64_t r = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || r > (UINT64_MAX - 9) / 10) return 0;
    r = r * 10 + (uint64_t)(*s - '0');
  }
  *v = r;
  return 1;
}

/* External data of t (bytes wanted) into buf. */
static ct_status read_external(const graph *g, const Onnx__TensorProto *t, int node, void *buf,
                               size_t bytes, ct_err *err) {
  char quoted[CT_EXCERPT_MAX]; /* the name as the messages quote it */
  const char *location = NULL, *name = err_excerpt(quoted, sizeof quoted, str_or_empty(t->name));
  uint64_t offset = 0, length = 0;
  int has_length = 0;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = t->external_data[i];
    if (!e || !e->key) continue;
    const char *val = str_or_empty(e->value);
    if (!strcmp(e->key, "location")) {
      location = val;
    } else if (!strcmp(e->key, "offset")) {
      if (!parse_u64(val, &offset))
        return graph_err(g, err, CT_ERR_PARSE, node,
                         "tensor '%s': external data offset '%s' is not a byte count", name, val);
    } else if (!strcmp(e->key, "length")) {
      if (!parse_u64(val, &length))
        return graph_err(g, err, CT_ERR_PARSE, node,
                         "tensor '%s': external data length '%s' is not a byte count", name, val);
      has_length = 1;
    }
  }
  if (!location || !*location)
    return graph_err(g, err, CT_ERR_PARSE, node,
                     "tensor '%s': its data is external but names no location", name);
  if (location[0] == '/')
    return graph_err(g, err, CT_ERR_PARSE, node,
                     "tensor '%s': external data location '%s' must be relative to the model's "
                     "folder",
                     name, location);
  size_t len = strlen(g->dir) + strlen(location) + 1;
  char *full = malloc(len);
  if (!full) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory");
  snprintf(full, len, "%s%s", g->dir, location);
  ct_status st = CT_OK;
  FILE *f = fopen(full, "rb");
  struct stat sb;
  if (!f) {
    st = graph_err(g, err, errno == ENOENT ? CT_ERR_NOT_FOUND : CT_ERR_IO, node,
                   "tensor '%s': cannot open its external data file '%s': %s", name, full,
                   strerror(errno));
  } else if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
    st = graph_err(g, err, CT_ERR_IO, node, "tensor '%s': external data '%s' is not a regular file",
                   name, full);
  } else {
    uint64_t size = (uint64_t)sb.st_size;
    if (!has_length) length = offset <= size ? size - offset : 0;
    if (offset > size || length > size - offset)
      st = graph_err(g, err, CT_ERR_PARSE, node,
                     "tensor '%s': external data '%s' is %" PRIu64 " bytes, too short for "
                     "%" PRIu64 " bytes at offset %" PRIu64,
                     name, full, size, length, offset);
    else if (length != bytes)
      st = graph_err(g, err, CT_ERR_PARSE, node,
                     "tensor '%s': external data holds %" PRIu64 " bytes; its dims need %zu", name,
                     length, bytes);
    else if (offset > (uint64_t)LONG_MAX || fseek(f, (long)offset, SEEK_SET) ||
             fread(buf, 1, bytes, f) != bytes)
      st = graph_err(g, err, CT_ERR_IO, node, "tensor '%s': cannot read external data '%s'", name,
                     full);
  }
  if (f) fclose(f);
  free(full);
  return st;
}

ct_status graph_const(const graph *g, int v, int node, gtensor *out, ct_err *err) {
  memset(out, 0, sizeof *out);
  if (v < 0 || v >= g->n_values || !g->values[v].constant)
    return graph_err(g, err, CT_ERR_UNSUPPORTED, node, "'%s' is not a constant",
                     v >= 0 && v < g->n_values
                         ? err_excerpt((char[CT_EXCERPT_MAX]){0}, CT_EXCERPT_MAX, g->values[v].name)
                         : "(absent input)");
  const Onnx__TensorProto *t = g->values[v].constant;
  char quoted[CT_EXCERPT_MAX]; /* the name as the messages quote it */
  const char *name = err_excerpt(quoted, sizeof quoted, g->values[v].name);
  char tb[32];
  int dtype = t->has_data_type ? t->data_type : 0;
  size_t es = elem_size(dtype);
  if (!es)
    return graph_err(g, err, CT_ERR_PARSE, node,
                     "tensor '%s' has data type %s; the importer reads FLOAT, UINT8, INT8, INT32 "
                     "and INT64",
                     name, onnx_type_name(dtype, tb, sizeof tb));
  if (t->n_dims > GRAPH_MAX_RANK)
    return graph_err(g, err, CT_ERR_PARSE, node, "tensor '%s' has rank %zu; at most %d is read",
                     name, t->n_dims, GRAPH_MAX_RANK);
  int64_t n = 1;
  for (size_t d = 0; d < t->n_dims; d++) {
    if (t->dims[d] < 0 || __builtin_mul_overflow(n, t->dims[d], &n) || n > INT32_MAX)
      return graph_err(g, err, CT_ERR_PARSE, node,
                       "tensor '%s': dims[%zu] = %" PRId64 " makes a negative or too large size",
                       name, d, t->dims[d]);
    out->dims[d] = t->dims[d];
  }
  out->rank = (int)t->n_dims;
  out->dtype = dtype;
  out->n = n;
  size_t bytes = (size_t)n * es;
  out->data = malloc(bytes ? bytes : 1);
  if (!out->data) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for tensor '%s'", name);
  ct_status st = CT_OK;
  size_t have = 0;
  const char *field = NULL;
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    st = read_external(g, t, node, out->data, bytes, err);
  } else if (t->has_raw_data) {
    if (t->raw_data.len != bytes || (bytes && !t->raw_data.data))
      st = graph_err(g, err, CT_ERR_PARSE, node,
                     "tensor '%s': raw_data holds %zu bytes; its dims need %zu", name,
                     t->raw_data.len, bytes);
    else if (bytes)
      memcpy(out->data, t->raw_data.data, bytes);
  } else if (dtype == ONNX_FLOAT) {
    field = "float_data";
    if ((have = t->n_float_data) == (size_t)n && n) memcpy(out->data, t->float_data, bytes);
  } else if (dtype == ONNX_INT64) {
    field = "int64_data";
    if ((have = t->n_int64_data) == (size_t)n && n) memcpy(out->data, t->int64_data, bytes);
  } else {
    field = "int32_data";
    have = t->n_int32_data;
    int32_t lo = dtype == ONNX_INT8 ? -128 : dtype == ONNX_UINT8 ? 0 : INT32_MIN;
    int32_t hi = dtype == ONNX_INT8 ? 127 : dtype == ONNX_UINT8 ? 255 : INT32_MAX;
    for (size_t i = 0; have == (size_t)n && i < have && !st; i++) {
      int32_t x = t->int32_data[i];
      if (x < lo || x > hi)
        st = graph_err(g, err, CT_ERR_PARSE, node,
                       "tensor '%s': int32_data[%zu] = %d is out of range for %s", name, i, x,
                       onnx_type_name(dtype, tb, sizeof tb));
      else if (dtype == ONNX_INT8)
        ((int8_t *)out->data)[i] = (int8_t)x;
      else if (dtype == ONNX_UINT8)
        ((uint8_t *)out->data)[i] = (uint8_t)x;
      else
        ((int32_t *)out->data)[i] = x;
    }
  }
  if (!st && field && have != (size_t)n)
    st = graph_err(g, err, CT_ERR_PARSE, node,
                   "tensor '%s' holds %zu values in %s; its dims need %" PRId64, name, have, field,
                   n);
  if (st) gtensor_free(out);
  return st;
}
