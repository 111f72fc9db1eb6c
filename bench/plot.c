/*
 * plot.c: the benchmark's PNG chart, with no plotting library: a minimal
 * PNG encoder (8-bit RGB, filter 0 on every row, zlib's compress2 for the
 * IDAT stream and its crc32 for the chunk checksums) and a tiny rasteriser
 * (rectangles, and text in a 5x7 bitmap font of digits, capitals and a few
 * signs; lower case is drawn as capitals).
 *
 * The chart: one group of bars per layer on a log time axis (decades
 * labelled): convtune (int32 out), cuDNN fp16 and cuDNN int8 (the faster of
 * its two configs), with each layer's roofline floor as a black line across
 * its group. Cost: one pass over the image; a 23-layer chart is ~1 MB raw.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "core/outfile.h"

#ifdef CT_HAVE_ZLIB
#include <zlib.h>
#endif

/* ---- PNG ------------------------------------------------------------------- */

#ifdef CT_HAVE_ZLIB

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

/* Write a chunk at p (length, type, data, CRC of type + data); returns its size. */
static size_t put_chunk(uint8_t *p, const char *type, const uint8_t *data, uint32_t len) {
  put_be32(p, len);
  memcpy(p + 4, type, 4);
  if (len) memcpy(p + 8, data, len);
  uLong crc = crc32(0L, p + 4, 4 + len);
  put_be32(p + 8 + len, (uint32_t)crc);
  return 12 + (size_t)len;
}

ct_status plot_png_encode(const uint8_t *rgb, int w, int h, uint8_t **out, size_t *size,
                          ct_err *err) {
  *out = NULL;
  *size = 0;
  if (w < 1 || h < 1 || w > 16384 || h > 16384)
    return ERR_SET(err, CT_ERR_INVALID_ARG, "PNG size %dx%d: accepted 1..16384 per side", w, h);
  size_t row = 1 + 3 * (size_t)w, raw_len = row * (size_t)h;
  uLongf zlen = compressBound((uLong)raw_len);
  uint8_t *raw = malloc(raw_len), *z = malloc(zlen);
  uint8_t *png = NULL;
  ct_status st = CT_OK;
  if (!raw || !z) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory encoding a %dx%d PNG", w, h);
    goto done;
  }
  for (int y = 0; y < h; y++) {
    raw[row * (size_t)y] = 0; /* filter type None */
    memcpy(raw + row * (size_t)y + 1, rgb + 3 * (size_t)w * (size_t)y, 3 * (size_t)w);
  }
  if (compress2(z, &zlen, raw, (uLong)raw_len, 9) != Z_OK) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "zlib could not compress the PNG data");
    goto done;
  }
  size_t total = 8 + (12 + 13) + (12 + zlen) + 12;
  if (!(png = malloc(total))) {
    st = ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory encoding a %dx%d PNG", w, h);
    goto done;
  }
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  uint8_t ihdr[13];
  put_be32(ihdr, (uint32_t)w);
  put_be32(ihdr + 4, (uint32_t)h);
  ihdr[8] = 8;  /* bits per channel */
  ihdr[9] = 2;  /* colour type: RGB */
  ihdr[10] = 0; /* deflate */
  ihdr[11] = 0; /* adaptive filtering (each row says None) */
  ihdr[12] = 0; /* no interlace */
  size_t n = 0;
  memcpy(png, sig, 8);
  n = 8;
  n += put_chunk(png + n, "IHDR", ihdr, 13);
  n += put_chunk(png + n, "IDAT", z, (uint32_t)zlen);
  n += put_chunk(png + n, "IEND", NULL, 0);
  *out = png;
  *size = n;
done:
  free(raw);
  free(z);
  return st;
}

#else /* no zlib at build time */

ct_status plot_png_encode(const uint8_t *rgb, int w, int h, uint8_t **out, size_t *size,
                          ct_err *err) {
  (void)rgb, (void)w, (void)h;
  *out = NULL;
  *size = 0;
  return ERR_SET(err, CT_ERR_UNSUPPORTED, "PNG output not built: zlib was not found at build time");
}

#endif

/* ---- rasteriser --------------------------------------------------------------- */

typedef struct image {
  int w, h;
  uint8_t *px; /* RGB, rows top to bottom */
} image;

typedef struct rgb {
  uint8_t r, g, b;
} rgb;

static void rect(image *im, int x0, int y0, int x1, int y1, rgb c) {
  if (x0 < 0) x0 = 0;
  if (y0 < 0) y0 = 0;
  if (x1 > im->w) x1 = im->w;
  if (y1 > im->h) y1 = im->h;
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      uint8_t *p = im->px + 3 * ((size_t)y * (size_t)im->w + (size_t)x);
      p[0] = c.r;
      p[1] = c.g;
      p[2] = c.b;
    }
}

/* 5x7 glyphs: 7 rows of 5 bits, the leftmost pixel in bit 4. */
static const char glyph_chars[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_./:()%,=+*";
static const uint8_t glyphs[][7] = {
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}, /* 0 */
    {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}, /* 1 */
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}, /* 2 */
    {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}, /* 3 */
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}, /* 4 */
    {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}, /* 5 */
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}, /* 6 */
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}, /* 7 */
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}, /* 8 */
    {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}, /* 9 */
    {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11}, /* A */
    {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}, /* B */
    {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}, /* C */
    {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}, /* D */
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}, /* E */
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}, /* F */
    {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}, /* G */
    {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}, /* H */
    {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}, /* I */
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}, /* J */
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}, /* K */
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}, /* L */
    {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}, /* M */
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}, /* N */
    {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, /* O */
    {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}, /* P */
    {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}, /* Q */
    {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}, /* R */
    {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}, /* S */
    {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, /* T */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, /* U */
    {0x11, 0x11, 0x11, 0x0A, 0x0A, 0x0A, 0x04}, /* V */
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}, /* W */
    {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}, /* X */
    {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}, /* Y */
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}, /* Z */
    {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}, /* - */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}, /* _ */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}, /* . */
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}, /* / */
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}, /* : */
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}, /* ( */
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}, /* ) */
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}, /* % */
    {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}, /* , */
    {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}, /* = */
    {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}, /* + */
    {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00}, /* * */
};

#define CHAR_W 6 /* 5 pixels and a space */

static const uint8_t *glyph(char c) {
  if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
  const char *p = c ? strchr(glyph_chars, c) : NULL;
  return p ? glyphs[p - glyph_chars] : NULL; /* unknown: blank */
}

/* Text with its top-left at (x, y); vertical: turned a quarter clockwise,
 * reading downwards from (x, y). */
static void text(image *im, int x, int y, const char *s, rgb c, int vertical) {
  for (int i = 0; s[i]; i++) {
    const uint8_t *g = glyph(s[i]);
    if (!g) continue;
    for (int row = 0; row < 7; row++)
      for (int col = 0; col < 5; col++) {
        if (!(g[row] >> (4 - col) & 1)) continue;
        int px = vertical ? x + 6 - row : x + i * CHAR_W + col;
        int py = vertical ? y + i * CHAR_W + col : y + row;
        rect(im, px, py, px + 1, py + 1, c);
      }
  }
}

/* ---- the chart ------------------------------------------------------------------ */

enum { S_CONVTUNE, S_FP16, S_INT8, N_SERIES };

static double series_value(const bench_layer *l, int s) {
  if (s == S_CONVTUNE) return l->t[BENCH_CONVTUNE];
  if (s == S_FP16) return l->t[BENCH_CUDNN_FP16];
  double a = l->t[BENCH_CUDNN_INT8], b = l->t[BENCH_CUDNN_INT8X32];
  if (!bench_has(a)) return b;
  if (!bench_has(b)) return a;
  return a < b ? a : b;
}

#define BAR_W    8
#define GROUP_W  (N_SERIES * (BAR_W + 1) + 10)
#define LEFT     72
#define RIGHT    24
#define TOP      64
#define PLOT_H   360
#define MAX_NAME 28

ct_status plot_write(const bench_result *r, const char *path, ct_err *err) {
  static const rgb colours[N_SERIES] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44}};
  static const char *const labels[N_SERIES] = {"convtune (int32 out)", "cuDNN fp16 (fp16 out)",
                                               "cuDNN int8, best config (int8 out)"};
  const rgb white = {255, 255, 255}, black = {0, 0, 0}, grey = {200, 200, 200},
            light = {235, 235, 235}, dark = {60, 60, 60};
  int n = r->n_layers, longest = 0;
  double lo_v = INFINITY, hi_v = 0;
  for (int i = 0; i < n; i++) {
    const bench_layer *l = &r->layers[i];
    int len = (int)strlen(l->name);
    if (len > longest) longest = len;
    for (int s = 0; s <= N_SERIES; s++) {
      double v = s < N_SERIES ? series_value(l, s) : l->t[BENCH_FLOOR];
      if (!bench_has(v) || v <= 0) continue;
      if (v < lo_v) lo_v = v;
      if (v > hi_v) hi_v = v;
    }
  }
  if (longest > MAX_NAME) longest = MAX_NAME;
  if (!(hi_v > 0)) lo_v = 1, hi_v = 10; /* nothing measured: an empty frame */
  int lo = (int)floor(log10(lo_v)), hi = (int)ceil(log10(hi_v));
  if (hi <= lo) hi = lo + 1;
  int w = LEFT + (n > 0 ? n : 1) * GROUP_W + RIGHT;
  if (w < 640) w = 640;
  int bottom = TOP + PLOT_H, h = bottom + 12 + longest * CHAR_W + 12;
  image im = {w, h, malloc(3 * (size_t)w * (size_t)h)};
  if (!im.px) return ERR_SET(err, CT_ERR_NO_MEMORY, "out of memory for a %dx%d chart", w, h);
  rect(&im, 0, 0, w, h, white);

  char buf[256];
  snprintf(buf, sizeof buf,
           "%.100s, %.60s, batch %d: time per layer, us (log scale), lower is better", r->device,
           r->set, r->batch);
  text(&im, 8, 8, buf, black, 0);
  int lx = 8;
  for (int s = 0; s < N_SERIES; s++) {
    rect(&im, lx, 26, lx + 10, 36, colours[s]);
    text(&im, lx + 14, 28, labels[s], black, 0);
    lx += 14 + (int)strlen(labels[s]) * CHAR_W + 16;
  }
  rect(&im, lx, 30, lx + 10, 32, black);
  text(&im, lx + 14, 28, "roofline floor", black, 0);

  /* decades, with 2 and 5 between them */
  double span = hi - lo;
#define Y_OF(v) (bottom - (int)lround((log10(v) - lo) / span * PLOT_H))
  for (int d = lo; d <= hi; d++) {
    double v = pow(10, d);
    for (int m = 2; d < hi && m <= 5; m += 3)
      rect(&im, LEFT, Y_OF(m * v), w - RIGHT, Y_OF(m * v) + 1, light);
    rect(&im, LEFT, Y_OF(v), w - RIGHT, Y_OF(v) + 1, grey);
    snprintf(buf, sizeof buf, "%g", v);
    text(&im, LEFT - 6 - (int)strlen(buf) * CHAR_W, Y_OF(v) - 3, buf, dark, 0);
  }
  text(&im, 8, TOP - 14, "us", dark, 0);

  for (int i = 0; i < n; i++) {
    const bench_layer *l = &r->layers[i];
    int gx = LEFT + i * GROUP_W + 5;
    for (int s = 0; s < N_SERIES; s++) {
      double v = series_value(l, s);
      if (!bench_has(v) || v <= 0) continue;
      int x = gx + s * (BAR_W + 1), y = Y_OF(v);
      rect(&im, x, y < TOP ? TOP : y, x + BAR_W, bottom, colours[s]);
    }
    double fl = l->t[BENCH_FLOOR];
    if (bench_has(fl) && fl > 0) {
      int y = Y_OF(fl);
      rect(&im, gx - 2, y - 1, gx + N_SERIES * (BAR_W + 1) + 1, y + 1, black);
    }
    snprintf(buf, sizeof buf, "%.*s", MAX_NAME, l->name);
    text(&im, gx + 4, bottom + 8, buf, black, 1);
  }
#undef Y_OF
  rect(&im, LEFT - 1, TOP, LEFT, bottom + 1, black);
  rect(&im, LEFT - 1, bottom, w - RIGHT, bottom + 1, black);

  uint8_t *png = NULL;
  size_t size = 0;
  ct_status st = plot_png_encode(im.px, w, h, &png, &size, err);
  free(im.px);
  if (st) return st;
  /* whole or not at all: a temporary renamed into place (outfile) */
  outfile f;
  if ((st = outfile_open(&f, path, "wb", err)) == CT_OK) {
    int ok = fwrite(png, 1, size, f.f) == size;
    st = outfile_close(&f, ok, err);
    if (!ok) st = ERR_SET(err, CT_ERR_IO, "%s: cannot write", path);
  }
  free(png);
  return st;
}
