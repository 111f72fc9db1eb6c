/*
 * test_mma_nhwc_groups.c: conv2d_nhwc_mma / conv3d_ndhwc_mma with any K and
 * with groups, on the CPU. Case emulate runs the kernel's index math
 * (templates/conv_mma_nhwc.cuh, macro for macro, read from the instance's
 * -D options) for random valid configs: the raw rows and their shifted
 * copies, the block-diagonal B tile, the m16n8k32 fragments, and the
 * stores of both epilogues (4-channel groups traded between lanes, and
 * element by element where the super-group's K is not a multiple of 4),
 * every read and write bounds- and alignment-checked, and compares the
 * output with core/reference.c exactly (int32; 8-bit with the
 * requantization replaced by the value's low byte, which checks where each
 * byte goes). Case support: what the templates take and refuse, and a
 * default for each of the GPU suite's grouped and odd-K shapes. Case
 * compile: those configs compiled by NVRTC for sm_90 and sm_80 in every
 * epilogue variant (about 1 s a compile; with the argument "all" a minute
 * or two, by default one variant per workload and arch, a quarter of it).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/reference.h"
#include "gpu/nvrtc.h"
#include "templates/template.h"
#include "tests/epilogue_variant.h"
#include "tests/kernel_check.h"
#include "tests/util.h"

/* ---- the kernel's macros ------------------------------------------------ */
typedef struct km {
  long N, ID, IH, IW, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH, KR, OUT;
  long TW, TH, BN, MI, GPT, SC, SG, THREADS_OPT, SMEM_OPT;
  long CPG, KPG, C_IN, SG_K, W_C, ROW_ALIGNED, TILES_NS, ROW_BYTES, ROW_PAD, RSTEPS, TAPROWS;
  long KSTEPS, IN_ROWS, SROWS, PSTEP, NALIGN, ASTEP, ROWB, COPY_RAW, COPYB, IN_BYTES, RAWW;
  long RAW_WORDS, NT, W_BYTES, MBLK, WARPS, THREADS, TAPVOL, WRAW_BYTES, SCRATCH, SMEM;
  long TILES_W, TILES_H, TILES_M;
} km;

static void macros(const instance *inst, km *m) {
#define opt(inst, name) instance_macro(inst, name)
  m->N = opt(inst, "CT_N"), m->ID = opt(inst, "CT_ID"), m->IH = opt(inst, "CT_IH");
  m->IW = opt(inst, "CT_IW"), m->OD = opt(inst, "CT_OD"), m->OH = opt(inst, "CT_OH");
  m->OW = opt(inst, "CT_OW"), m->KD = opt(inst, "CT_KD"), m->KH = opt(inst, "CT_KH");
  m->KW = opt(inst, "CT_KW"), m->SD = opt(inst, "CT_STR_D"), m->SH = opt(inst, "CT_STR_H");
  m->SW = opt(inst, "CT_STR_W"), m->PD = opt(inst, "CT_PAD_D"), m->PH = opt(inst, "CT_PAD_H");
  m->PW = opt(inst, "CT_PAD_W"), m->DD = opt(inst, "CT_DIL_D"), m->DH = opt(inst, "CT_DIL_H");
  m->KR = opt(inst, "CT_KR"), m->OUT = opt(inst, "CT_OUT");
  m->TW = opt(inst, "TILE_W"), m->TH = opt(inst, "TILE_H"), m->BN = opt(inst, "BLOCK_N");
  m->MI = opt(inst, "WARP_M16"), m->GPT = opt(inst, "GROUPS_PER_TILE");
  m->SC = opt(inst, "STEM_C"), m->SG = opt(inst, "STEM_G");
  m->THREADS_OPT = opt(inst, "CT_THREADS"), m->SMEM_OPT = opt(inst, "CT_SMEM_BYTES");
  ck_assert_int_eq(opt(inst, "CT_DIL_W"), 1);
  if (m->SG > 1) {
    m->CPG = m->SC / m->SG, m->KPG = m->KR / m->SG;
    m->C_IN = m->GPT * m->CPG, m->SG_K = m->GPT * m->KPG, m->W_C = m->CPG;
    m->ROW_ALIGNED = m->C_IN % 4 == 0;
  } else {
    ck_assert_int_eq(m->GPT, 1);
    m->CPG = m->C_IN = m->W_C = m->SC, m->KPG = m->SG_K = m->KR;
    m->ROW_ALIGNED = (m->IW * m->C_IN) % 4 == 0;
  }
  m->TILES_NS = (m->SG_K + m->BN - 1) / m->BN;
  m->ROW_BYTES = m->KW * m->C_IN;
  m->ROW_PAD = (m->ROW_BYTES + 31) / 32 * 32;
  m->RSTEPS = m->ROW_PAD / 32;
  m->TAPROWS = m->KD * m->KH;
  m->KSTEPS = m->TAPROWS * m->RSTEPS;
  m->IN_ROWS = (m->TH - 1) * m->SH + (m->KH - 1) * m->DH + 1;
  m->SROWS = m->KD * m->IN_ROWS;
  m->PSTEP = m->SW * m->C_IN;
  m->NALIGN = m->PSTEP % 4 == 0 ? 1 : m->PSTEP % 2 == 0 ? 2 : 4;
  m->ASTEP = 4 / m->NALIGN;
  m->ROWB = ((m->TW - 1) * m->PSTEP + m->ROW_PAD + 4 + 15) / 16 * 16;
  m->COPY_RAW = m->SROWS * m->ROWB;
  m->COPYB = m->COPY_RAW + ((16 - (m->COPY_RAW / 4) % 32) + 32) % 32 * 4;
  m->IN_BYTES = m->NALIGN * m->COPYB;
  m->RAWW = m->ROWB / 4 + 2;
  m->RAW_WORDS = m->SROWS * m->RAWW;
  m->NT = m->BN / 8;
  m->W_BYTES = m->KSTEPS * m->BN * 32;
  m->MBLK = m->TH * m->TW / 16;
  m->WARPS = m->MBLK / m->MI;
  m->THREADS = 32 * m->WARPS;
  m->TAPVOL = m->KD * m->KH * m->KW * m->W_C;
  m->WRAW_BYTES = (m->BN * m->TAPVOL + 3 + 3) / 4 * 4;
  m->SCRATCH = m->IN_BYTES > m->WRAW_BYTES ? m->IN_BYTES : m->WRAW_BYTES;
  m->SMEM = m->W_BYTES + m->SCRATCH + m->RAW_WORDS * 4;
  m->TILES_W = (m->OW + m->TW - 1) / m->TW;
  m->TILES_H = (m->OH + m->TH - 1) / m->TH;
  m->TILES_M = m->N * m->OD * m->TILES_H * m->TILES_W;
#undef opt
}

/* ---- the emulation -------------------------------------------------------- */
static long floor4(long x) {
  return x >= 0 ? x / 4 : -((3 - x) / 4);
}

static long data_at(const km *m, long o) {
  return m->SG > 1 ? o / m->C_IN * m->SC + o % m->C_IN : o;
}

static uint32_t word_at(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The output as the kernel leaves it, and how often each byte was written. */
typedef struct emu_out {
  uint8_t *bytes;
  int *writes;
  long n_bytes;
} emu_out;

static void put(emu_out *o, long byte, long size, const void *v) {
  ck_assert_msg(byte >= 0 && byte + size <= o->n_bytes, "store past the output: %ld", byte);
  ck_assert_msg(byte % size == 0, "store of %ld bytes at byte %ld: misaligned", size, byte);
  memcpy(o->bytes + byte, v, (size_t)size);
  for (long i = 0; i < size; i++) o->writes[byte + i]++;
}

/* One block (bx, by) of the kernel over its tiles. data: n_data bytes;
 * weights: n_w bytes. The 8-bit requantization is the low byte. */
static void emulate_block(const km *m, long grid_x, long bx, long by, const uint8_t *data,
                          long n_data, const uint8_t *weights, long n_w, emu_out *out) {
  long sg = 0, n0 = by * m->BN, kb = 0, dsg = 0;
  if (m->SG > 1) {
    sg = by / m->TILES_NS, n0 = (by % m->TILES_NS) * m->BN, kb = sg * m->SG_K, dsg = sg * m->C_IN;
  }
  /* weights: raw words, then B fragments [ks][nt][lane] as 2 words */
  const long n0g = kb + n0;
  const long b0 = n0g * m->TAPVOL, w0 = b0 / 4, end = m->KR * m->TAPVOL;
  const long nb = ((n0 + m->BN < m->SG_K ? n0 + m->BN : m->SG_K) - n0) * m->TAPVOL + (b0 - 4 * w0);
  ck_assert_int_le((nb + 3) / 4 * 4, m->SCRATCH);
  uint8_t *wraw = xcalloc((size_t)m->SCRATCH, 1);
  for (long i = 0; i < (nb + 3) / 4; i++) {
    const long o = (w0 + i) * 4;
    for (int q = 0; q < 4; q++) {
      if (o + 4 <= end) ck_assert(o + 4 <= n_w && o % 4 == 0);
      wraw[4 * i + q] = o + q < end ? weights[o + q] : 0;
    }
  }
  const long sw_n = m->KSTEPS * m->NT * 32;
  uint32_t(*sw)[2] = xcalloc((size_t)sw_n, sizeof *sw);
  const long wshift = (n0g * m->TAPVOL) % 4;
  for (long i = 0; i < sw_n; i++) {
    const long lane = i % 32, nt = (i / 32) % m->NT, ks = i / (32 * m->NT);
    const long tr = ks / m->RSTEPS, k0 = (ks % m->RSTEPS) * 32 + 4 * (lane & 3);
    const long nl = 8 * nt + (lane >> 2);
    uint32_t v[2] = {0, 0};
    if (n0 + nl < m->SG_K) {
      for (int h = 0; h < 2; h++)
        for (int q = 0; q < 4; q++) {
          const long k = k0 + 16 * h + q;
          long src = -1;
          if (m->SG > 1) {
            const long gi = (n0 + nl) / m->KPG, col = k / m->C_IN, c = k % m->C_IN;
            if (k < m->ROW_BYTES && c / m->CPG == gi)
              src = nl * m->TAPVOL + tr * (m->KW * m->CPG) + col * m->CPG + c - gi * m->CPG;
          } else if (k < m->ROW_BYTES) {
            src = nl * m->TAPVOL + tr * m->ROW_BYTES + k;
          }
          if (src >= 0) {
            ck_assert_msg(wshift + src < nb, "B tile reads byte %ld of %ld loaded", wshift + src,
                          nb);
            v[h] |= (uint32_t)wraw[wshift + src] << (8 * q);
          }
        }
    }
    sw[i][0] = v[0], sw[i][1] = v[1];
  }

  uint32_t *raw = xcalloc((size_t)m->RAW_WORDS, 4);
  uint8_t *sin = xcalloc((size_t)m->SCRATCH, 1);
  const long row_len = m->IW * m->C_IN; /* a staged row's bytes */
  for (long tile = bx; tile < m->TILES_M; tile += grid_x) {
    const long tw = tile % m->TILES_W, th0 = tile / m->TILES_W % m->TILES_H;
    const long nd = tile / (m->TILES_W * m->TILES_H);
    const long n = nd / m->OD, z0 = nd % m->OD * m->SD - m->PD, y0 = th0 * m->TH * m->SH - m->PH;
    const long x0 = tw * m->TW * m->SW - m->PW, wb0 = floor4(x0 * m->C_IN);
    for (long i = 0; i < m->RAW_WORDS; i++) {
      const long srow = i / m->RAWW, col = i % m->RAWW;
      const long z = z0 + srow / m->IN_ROWS * m->DD, y = y0 + srow % m->IN_ROWS;
      const long o = (wb0 + col) * 4;
      uint32_t v = 0; /* pad: the data zero point, 0 here */
      if (z >= 0 && z < m->ID && y >= 0 && y < m->IH) {
        const long row = dsg + ((n * m->ID + z) * m->IH + y) * (m->IW * m->SC);
        if (m->ROW_ALIGNED && o >= 0 && o + 4 <= row_len) {
          const long at = row + data_at(m, o);
          ck_assert_msg(at % 4 == 0 && at + 4 <= n_data, "data word at %ld", at);
          /* the word is one pixel's 4 channels of the super-group */
          if (m->SG > 1) ck_assert_int_eq(data_at(m, o + 3), data_at(m, o) + 3);
          v = word_at(data + at);
        } else if (o + 4 > 0 && o < row_len) {
          for (int q = 0; q < 4; q++)
            if (o + q >= 0 && o + q < row_len) {
              const long at = row + data_at(m, o + q);
              ck_assert(at >= 0 && at < n_data);
              v |= (uint32_t)data[at] << (8 * q);
            }
        }
      }
      raw[i] = v;
    }
    const long shf = x0 * m->C_IN, sh = shf - 4 * floor4(shf);
    for (long i = 0; i < m->NALIGN * m->SROWS * (m->ROWB / 4); i++) {
      const long a = i / (m->SROWS * (m->ROWB / 4)), r = i % (m->SROWS * (m->ROWB / 4));
      const long srow = r / (m->ROWB / 4), col = r % (m->ROWB / 4), b = sh + a * m->ASTEP;
      const long src = srow * m->RAWW + col + b / 4;
      ck_assert(src + 1 < m->RAW_WORDS);
      const uint64_t pair = (uint64_t)raw[src] | (uint64_t)raw[src + 1] << 32;
      const uint32_t w = (uint32_t)(pair >> (8 * (b % 4)));
      const long at = (a * (m->COPYB / 4) + r) * 4;
      ck_assert(at + 4 <= m->IN_BYTES);
      memcpy(sin + at, &w, 4);
    }
    for (long warp = 0; warp < m->WARPS; warp++)
      for (long i = 0; i < m->MI; i++) {
        const long mb = warp * m->MI + i, thr = mb / (m->TW / 16);
        int32_t acc[32][16][4]; /* [lane][n8 tile][element] */
        memset(acc, 0, sizeof acc);
        ck_assert_int_le(m->NT, 16);
        for (long tr = 0; tr < m->TAPROWS; tr++) {
          const long td = tr / m->KH, rr = tr % m->KH;
          const long rowoff = (td * m->IN_ROWS + rr * m->DH) * m->ROWB;
          for (long rs = 0; rs < m->RSTEPS; rs++) {
            const long ks = tr * m->RSTEPS + rs;
            int8_t A[16][32], B[16][32][8];
            for (long lane = 0; lane < 32; lane++) {
              const long g = lane >> 2, t = lane & 3;
              for (int h = 0; h < 2; h++) {
                const long j = (mb % (m->TW / 16)) * 16 + g + 8 * h, al = (j * m->PSTEP) & 3;
                const long off =
                    (al / m->ASTEP) * m->COPYB + thr * m->SH * m->ROWB + j * m->PSTEP - al + 4 * t;
                const long p = off + rowoff + rs * 32;
                ck_assert_msg(p % 4 == 0 && p >= 0 && p + 16 + 4 <= m->IN_BYTES, "A at %ld", p);
                for (int q = 0; q < 4; q++) {
                  A[g + 8 * h][4 * t + q] = (int8_t)sin[p + q];
                  A[g + 8 * h][16 + 4 * t + q] = (int8_t)sin[p + 16 + q];
                }
              }
              for (long jn = 0; jn < m->NT; jn++) {
                const uint32_t *b = sw[(ks * m->NT + jn) * 32 + lane];
                for (int q = 0; q < 4; q++) {
                  B[jn][4 * t + q][g] = (int8_t)(b[0] >> (8 * q));
                  B[jn][16 + 4 * t + q][g] = (int8_t)(b[1] >> (8 * q));
                }
              }
            }
            for (long lane = 0; lane < 32; lane++) {
              const long g = lane >> 2, t = lane & 3;
              for (long jn = 0; jn < m->NT; jn++)
                for (int e = 0; e < 4; e++) {
                  const long row = g + 8 * (e >> 1), cn = 2 * t + (e & 1);
                  uint32_t s = (uint32_t)acc[lane][jn][e];
                  for (int k = 0; k < 32; k++) s += (uint32_t)(A[row][k] * B[jn][k][cn]);
                  acc[lane][jn][e] = (int32_t)s;
                }
            }
          }
        }
        /* the epilogue */
        const long es = m->OUT == 0 ? 4 : 1;
        for (long jp = 0; jp < (m->SG_K % 4 == 0 ? m->NT / 2 : 0); jp++) {
          uint32_t give[32][4]; /* what each lane hands its partner (lane ^ 1) */
          for (long lane = 0; lane < 32; lane++) {
            const long odd = lane & 1;
            for (int l = 0; l < 4; l++) give[lane][l] = (uint32_t)acc[lane][2 * jp + !odd][l];
          }
          for (long lane = 0; lane < 32; lane++) {
            const long g = lane >> 2, t = lane & 3, odd = t & 1;
            const long oh = th0 * m->TH + thr, owa = tw * m->TW + (mb % (m->TW / 16)) * 16 + g;
            const long ma = (nd * m->OH + oh) * m->OW + owa;
            const int oka = oh < m->OH && owa < m->OW, okb = oh < m->OH && owa + 8 < m->OW;
            const long ks = n0 + (2 * jp + odd) * 8 + 2 * (t - odd);
            const int okk = m->SG_K % m->BN == 0 || ks < m->SG_K;
            const int32_t *mine = acc[lane][2 * jp + odd];
            const uint32_t *x = give[lane ^ 1];
            /* 4 channels ks.. of rows a and b: the even lane's own 2 first */
            for (int h = 0; h < 2; h++) {
              if (!okk || !(h ? okb : oka)) continue;
              uint32_t v4[4];
              v4[odd ? 2 : 0] = (uint32_t)mine[2 * h], v4[odd ? 3 : 1] = (uint32_t)mine[2 * h + 1];
              v4[odd ? 0 : 2] = x[2 * h], v4[odd ? 1 : 3] = x[2 * h + 1];
              const long at = ((ma + 8 * h) * m->KR + kb + ks) * es;
              if (es == 4) {
                put(out, at, 16, v4);
              } else {
                const uint8_t b4[4] = {(uint8_t)v4[0], (uint8_t)v4[1], (uint8_t)v4[2],
                                       (uint8_t)v4[3]};
                put(out, at, 4, b4);
              }
            }
          }
        }
        if (m->SG_K % 4)
          for (long lane = 0; lane < 32; lane++)
            for (long jn = 0; jn < m->NT; jn++) {
              const long g = lane >> 2, t = lane & 3;
              const long oh = th0 * m->TH + thr, owa = tw * m->TW + (mb % (m->TW / 16)) * 16 + g;
              const long ma = (nd * m->OH + oh) * m->OW + owa;
              const int oka = oh < m->OH && owa < m->OW, okb = oh < m->OH && owa + 8 < m->OW;
              const long kl = n0 + jn * 8 + 2 * t, k = kb + kl;
              for (int e = 0; e < 4; e++) {
                const int okr = e >> 1 ? okb : oka, okc = (e & 1) ? kl + 1 < m->SG_K : kl < m->SG_K;
                if (!okr || !okc) continue;
                const long at = ((ma + 8 * (e >> 1)) * m->KR + k + (e & 1)) * es;
                const int32_t v = acc[lane][jn][e];
                const uint8_t b = (uint8_t)v;
                put(out, at, es, es == 4 ? (const void *)&v : (const void *)&b);
              }
            }
      }
  }
  free(raw);
  free(sin);
  free(sw);
  free(wraw);
}

/* ---- workloads ------------------------------------------------------------ */
typedef struct wl {
  const char *name;
  int nd; /* 2 or 3 */
  int n, c, k, g;
  int in[3], ker[3], str[3], pad[3];
} wl;

/* clang-format off */
static const wl wls[] = {
    /* the odd layer and its 3D counterpart (any K: K % 8 == 4) */
    {"odd 5x5 s2 K20", 2, 3, 12, 20, 1, {17, 17}, {5, 5}, {2, 2}, {2, 2}},
    {"odd3d 3x5x5 s2 K20", 3, 1, 12, 20, 1, {5, 17, 17}, {3, 5, 5}, {2, 2, 2}, {1, 2, 2}},
    /* K not a multiple of 4: element stores; C a multiple of 16 */
    {"K10 C16", 2, 2, 16, 10, 1, {9, 11}, {3, 3}, {1, 1}, {1, 1}},
    {"K7 C3 7x7 s2", 2, 1, 3, 7, 1, {19, 19}, {7, 7}, {2, 2}, {3, 3}},
    {"K3 C5 1x1", 2, 2, 5, 3, 1, {7, 9}, {1, 1}, {1, 1}, {0, 0}},
    /* groups: ResNeXt-like narrow groups (4, 8 channels), stride 2 */
    {"G32 cpg4 s2", 2, 2, 128, 128, 32, {9, 9}, {3, 3}, {2, 2}, {1, 1}},
    {"G8 cpg8", 2, 1, 64, 64, 8, {10, 12}, {3, 3}, {1, 1}, {1, 1}},
    {"G2 cpg16 K64", 2, 1, 32, 64, 2, {8, 8}, {3, 3}, {1, 1}, {1, 1}},
    /* groups with K' not a multiple of 4 (odd kb), C' not of 4 (byte loads) */
    {"G3 cpg3 kpg5", 2, 2, 9, 15, 3, {9, 9}, {3, 3}, {1, 1}, {1, 1}},
    {"G4 cpg4 kpg6", 2, 1, 16, 24, 4, {11, 7}, {3, 3}, {2, 1}, {1, 1}},
    /* depthwise (multiplier 1 and 2) */
    {"dw32", 2, 1, 32, 32, 32, {7, 7}, {3, 3}, {1, 1}, {1, 1}},
    {"dw16 x2 s2", 2, 1, 16, 32, 16, {9, 9}, {3, 3}, {2, 2}, {1, 1}},
    /* 3D groups */
    {"3d G4 cpg4", 3, 1, 16, 16, 4, {4, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"3d G8 cpg2 kpg3 s2", 3, 2, 16, 24, 8, {5, 7, 9}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}},
    {"3d G3 cpg4 kpg7", 3, 1, 12, 21, 3, {3, 5, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
};
/* clang-format on */
#define N_WLS ((int)(sizeof wls / sizeof wls[0]))

static ct_workload make_wl(const wl *s) {
  ct_workload w;
  workload_init(&w, s->nd == 3 ? CT_OP_CONV3D : CT_OP_CONV2D);
  w.layout = CT_LAYOUT_NHWC;
  w.n = s->n, w.c = s->c, w.k = s->k, w.groups = s->g;
  for (int d = 0; d < s->nd; d++) {
    w.in[d] = s->in[d], w.kernel[d] = s->ker[d], w.stride[d] = s->str[d];
    w.pad_before[d] = w.pad_after[d] = s->pad[d];
  }
  ct_err err = {0};
  ck_assert_msg(workload_validate(&w, &err) == CT_OK, "%s: %s", s->name, err.msg);
  return w;
}

static const template_desc *tpl_of(const ct_workload *w) {
  return template_find(w->op == CT_OP_CONV3D ? "conv3d_ndhwc_mma" : "conv2d_nhwc_mma");
}

/* The configs checked per workload: the preferred one and random valid ones. */
#define N_CFG 5

/* 1 (argument "all"): the whole run: case emulate takes N_CFG configs per
 * workload and output (by default the first 2: the preferred one and a
 * random one), case compile every epilogue variant of every workload (by
 * default one per workload and arch, the variants in turn: 30 compiles
 * instead of 120), for CI's time. */
static int all_variants;

static int configs(const ct_workload *w, const space *sp, const arch *a, uint64_t seed,
                   config *out) {
  const template_desc *tpl = tpl_of(w);
  int n = 0;
  if (tpl->preferred(w, sp, a, &out[n])) n++;
  ck_assert_msg(n == 1, "no preferred config");
  rng r;
  rng_seed(&r, seed);
  ct_err err = {0};
  while (n < N_CFG) {
    ck_assert_msg(template_sample(tpl, w, sp, a, &r, 200000, &out[n], &err) == CT_OK, "%s",
                  err.msg);
    n++;
  }
  return n;
}

static void emulate(const ct_workload *w, const space *sp, const config *c, const arch *a,
                    const char *label) {
  const template_desc *tpl = tpl_of(w);
  instance inst;
  ct_err err = {0};
  ck_assert_msg(instance_make(tpl, w, sp, c, a, &inst, &err) == CT_OK, "%s", err.msg);
  km m;
  macros(&inst, &m);
  /* the descriptor and the kernel agree (the kernel's static_asserts) */
  ck_assert_int_eq(m.THREADS, m.THREADS_OPT);
  ck_assert_int_eq(m.SMEM, m.SMEM_OPT);
  ck_assert_int_eq(inst.block[0], m.THREADS);
  ck_assert_int_eq(inst.grid[1], (m.SG > 1 ? m.SG / m.GPT : 1) * m.TILES_NS);
  ck_assert_int_eq((long)inst.smem_bytes, m.SMEM);

  const long n_data = workload_data_elems(w), n_w = workload_weight_elems(w);
  const long n_out = workload_out_elems(w);
  uint8_t *data = xmalloc((size_t)n_data), *weights = xmalloc((size_t)n_w);
  rng r;
  rng_seed(&r, 99 + (uint64_t)n_out);
  for (long i = 0; i < n_data; i++) data[i] = (uint8_t)rng_range(&r, -128, 127);
  for (long i = 0; i < n_w; i++) weights[i] = (uint8_t)rng_range(&r, -128, 127);
  int32_t *ref = xmalloc((size_t)n_out * 4);
  ct_workload w32 = *w; /* the reference's int32 sums; 8-bit output is their low byte */
  w32.out_type = CT_DTYPE_INT32;
  ck_assert_msg(reference_conv(&w32, (const int8_t *)data, (const int8_t *)weights, ref, &err) ==
                    CT_OK,
                "%s", err.msg);
  const long es = m.OUT == 0 ? 4 : 1;
  emu_out o = {xmalloc((size_t)(n_out * es)), xcalloc((size_t)(n_out * es), sizeof(int)),
               n_out * es};
  memset(o.bytes, 0xa5, (size_t)(n_out * es));
  for (long by = 0; by < (long)inst.grid[1]; by++)
    for (long bx = 0; bx < (long)inst.grid[0]; bx++)
      emulate_block(&m, inst.grid[0], bx, by, data, n_data, weights, n_w, &o);
  for (long i = 0; i < n_out * es; i++)
    ck_assert_msg(o.writes[i] == 1, "%s: output byte %ld written %d times", label, i, o.writes[i]);
  for (long i = 0; i < n_out; i++) {
    if (es == 4) {
      int32_t v;
      memcpy(&v, o.bytes + 4 * i, 4);
      ck_assert_msg(v == ref[i], "%s: out[%ld] = %d, want %d", label, i, v, ref[i]);
    } else {
      ck_assert_msg(o.bytes[i] == (uint8_t)ref[i], "%s: out[%ld] byte %u, want %u", label, i,
                    o.bytes[i], (uint8_t)ref[i]);
    }
  }
  free(o.bytes);
  free(o.writes);
  free(ref);
  free(data);
  free(weights);
}

/* Every workload, N_CFG configs, int32 and 8-bit stores, exact. */
START_TEST(kernel_index_math_matches_the_reference) {
  /* quick (sanitizers): every other workload */
  if (test_quick() && _i % 2) return;
  const wl *s = &wls[_i];
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  a.sm_count = 132;
  for (int out8 = 0; out8 < 2; out8++) {
    ct_workload w = make_wl(s);
    if (out8) w.out_type = CT_DTYPE_INT8;
    space sp;
    ct_err err = {0};
    ck_assert_msg(template_space(tpl_of(&w), &w, &sp, &err) == CT_OK, "%s: %s", s->name, err.msg);
    ck_assert_int_eq(space_find(&sp, "groups_per_tile") >= 0, s->g > 1);
    config cfg[N_CFG];
    int n = configs(&w, &sp, &a, 1234 + (uint64_t)_i, cfg);
    if (!all_variants && n > (test_quick() ? 1 : 2)) n = test_quick() ? 1 : 2;
    for (int i = 0; i < n; i++) {
      char text[256], label[400];
      space_config_str(&sp, &cfg[i], text, sizeof text);
      snprintf(label, sizeof label, "%s %s %s", s->name, out8 ? "int8" : "int32", text);
      emulate(&w, &sp, &cfg[i], &a, label);
    }
    space_free(&sp);
  }
}
END_TEST

/* Every groups_per_tile that is valid for the ResNeXt-like layer runs exact. */
START_TEST(every_groups_per_tile_matches_the_reference) {
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  a.sm_count = 132;
  ct_workload w = make_wl(&wls[5]); /* G32 cpg4 */
  space sp;
  ct_err err = {0};
  ck_assert_int_eq(template_space(tpl_of(&w), &w, &sp, &err), CT_OK);
  static const int gpts[] = {1, 2, 4, 8, 16, 32}, bns[] = {32, 64, 128};
  int ran = 0;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 3; j++) {
      config c;
      ck_assert(tpl_of(&w)->preferred(&w, &sp, &a, &c));
      ck_assert(template_set_choice(&sp, &c, "groups_per_tile", gpts[i]));
      ck_assert(template_set_choice(&sp, &c, "block_n", bns[j]));
      ck_assert(template_set_choice(&sp, &c, "tile_w", 16));
      ck_assert(template_set_choice(&sp, &c, "warp_m16", 1));
      ck_assert(template_set_choice(&sp, &c, "tile_h", 1));
      ck_assert(template_set_choice(&sp, &c, "blocks_per_sm", 1));
      char why[TEMPLATE_WHY_MAX] = "";
      /* 4 channels a group: 1 and 2 groups leave block_n 32 mostly empty */
      const int sgk = 4 * gpts[i];
      const int want = (bns[j] == 32 || bns[j] < 2 * sgk) && !(bns[j] > 2 * sgk && gpts[i] < 32);
      ck_assert_msg(tpl_of(&w)->valid(&w, &sp, &c, &a, why) == want, "gpt %d bn %d: %s", gpts[i],
                    bns[j], why);
      if (!want) continue;
      /* quick (sanitizers): the valid points' emulations in turn, one in 3 */
      if (test_quick() && (i * 3 + j) % 3) continue;
      char label[64];
      snprintf(label, sizeof label, "G32 gpt %d bn %d", gpts[i], bns[j]);
      emulate(&w, &sp, &c, &a, label);
      ran++;
    }
  ck_assert_int_ge(ran, test_quick() ? 2 : 4);
  space_free(&sp);
}
END_TEST

/* ---- what is taken and refused -------------------------------------------- */
START_TEST(any_k_and_groups_are_taken_the_stems_still_refuse) {
  const template_desc *m2 = template_find("conv2d_nhwc_mma");
  const template_desc *st = template_find("conv2d_nhwc_wgmma_stem");
  const template_desc *wg = template_find("conv2d_nhwc_wgmma");
  ck_assert_ptr_nonnull(m2);
  char why[TEMPLATE_WHY_MAX];
  /* the odd layer: no other channels-last template runs it */
  ct_workload w = make_wl(&wls[0]);
  ck_assert(m2->supports(&w, why));
  if (st) ck_assert(!st->supports(&w, why) && strstr(why, "multiple of 8"));
  if (wg) ck_assert(!wg->supports(&w, why));
  ct_workload w3 = make_wl(&wls[1]);
  ck_assert(template_find("conv3d_ndhwc_mma")->supports(&w3, why));
  /* C % 16 == 0: K % 8 == 0 stays conv2d_nhwc_wgmma's; K = 10 is ours */
  w = make_wl(&wls[2]);
  ck_assert(m2->supports(&w, why));
  if (wg) ck_assert(!wg->supports(&w, why));
  w.k = 16;
  ck_assert(!m2->supports(&w, why) && strstr(why, "conv2d_nhwc_wgmma"));
  if (wg) ck_assert(wg->supports(&w, why));
  /* groups: ours, never the stems' or wgmma's */
  w = make_wl(&wls[5]);
  ck_assert(m2->supports(&w, why));
  if (st) ck_assert(!st->supports(&w, why) && strstr(why, "groups"));
  if (wg) ck_assert(!wg->supports(&w, why));
  /* the rules that stay */
  w = make_wl(&wls[0]);
  w.dilation[1] = 2;
  ck_assert(!m2->supports(&w, why) && strstr(why, "dilation along W"));
  w.dilation[1] = 1;
  w.epi.weight_zero_point = 1;
  ck_assert(!m2->supports(&w, why) && strstr(why, "weight zero points"));
  w.epi.weight_zero_point = 0;
  w.layout = CT_LAYOUT_NCHW;
  ck_assert(!m2->supports(&w, why) && strstr(why, "nhwc"));
}
END_TEST

START_TEST(groups_per_tile_is_refused_where_it_does_not_divide) {
  arch a;
  ck_assert_int_eq(arch_from_name("sm_90", &a, NULL), CT_OK);
  ct_workload w = make_wl(&wls[8]); /* G3: only 1 divides */
  const template_desc *tpl = tpl_of(&w);
  space sp;
  ct_err err = {0};
  ck_assert_int_eq(template_space(tpl, &w, &sp, &err), CT_OK);
  config c;
  ck_assert(tpl->preferred(&w, &sp, &a, &c));
  ck_assert_int_eq(knobs_get(tpl->knobs, &sp, &c, "groups_per_tile"), 1);
  ck_assert(template_set_choice(&sp, &c, "groups_per_tile", 2));
  char why[TEMPLATE_WHY_MAX];
  ck_assert(!tpl->valid(&w, &sp, &c, &a, why));
  ck_assert_msg(strstr(why, "does not divide"), "%s", why);
  space_free(&sp);
  /* G == 1: the space is the five knobs of before */
  w = make_wl(&wls[0]);
  ck_assert_int_eq(template_space(tpl, &w, &sp, &err), CT_OK);
  ck_assert_int_eq(sp.n_knobs, 5);
  ck_assert_int_lt(space_find(&sp, "groups_per_tile"), 0);
  space_free(&sp);
}
END_TEST

/* The GPU suite's grouped and odd-K shapes (tests/test_gpu_templates.c)
 * and ResNeXt-50's grouped layers at batch 32 (resnext50_g): each has a
 * default and valid configs on sm_90 and sm_80. */
/* clang-format off */
static const wl gpu_wls[] = {
    {"dw 3x3 c32 b2", 2, 2, 32, 32, 32, {14, 13}, {3, 3}, {1, 1}, {1, 1}},
    {"dw 3x3 s2 c24 b3", 2, 3, 24, 24, 24, {15, 17}, {3, 3}, {2, 2}, {1, 1}},
    {"dw x2 5x5 s2 c16", 2, 1, 16, 32, 16, {13, 12}, {5, 5}, {2, 2}, {2, 2}},
    {"dw 5x5 c40 b2", 2, 2, 40, 40, 40, {9, 9}, {5, 5}, {1, 1}, {2, 2}},
    {"g32 cpg4 c128 b2", 2, 2, 128, 128, 32, {8, 8}, {3, 3}, {1, 1}, {1, 1}},
    {"g32 cpg8 s2 c256", 2, 1, 256, 256, 32, {9, 9}, {3, 3}, {2, 2}, {1, 1}},
    {"g32 cpg16 c512 b2", 2, 2, 512, 512, 32, {7, 7}, {3, 3}, {1, 1}, {1, 1}},
    {"g4 cpg32 c128 k64", 2, 1, 128, 64, 4, {6, 6}, {3, 3}, {1, 1}, {1, 1}},
    {"dw 3x3x3 c32 b2", 3, 2, 32, 32, 32, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"dw 3x3x3 s2 c24", 3, 1, 24, 24, 24, {5, 9, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}},
    {"g8 cpg8 3x3x3 c64 b2", 3, 2, 64, 64, 8, {4, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"g3 cpg2 c6 k9 b2", 2, 2, 6, 9, 3, {9, 10}, {3, 3}, {1, 1}, {1, 1}},
    {"dw x3 s2 c5 k15", 2, 1, 5, 15, 5, {7, 7}, {3, 3}, {2, 2}, {1, 1}},
    {"5x5 s2 c12 k20 b3", 2, 3, 12, 20, 1, {17, 17}, {5, 5}, {2, 2}, {2, 2}},
    {"3x3 c16 k20 b2", 2, 2, 16, 20, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}},
    {"1x1 c24 k12 b3", 2, 3, 24, 12, 1, {8, 7}, {1, 1}, {1, 1}, {0, 0}},
    {"3x3 c5 k7 b2", 2, 2, 5, 7, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}},
    {"(3,5,5) s2 c12 k20 b3", 3, 3, 12, 20, 1, {5, 17, 17}, {3, 5, 5}, {2, 2, 2}, {1, 2, 2}},
    {"3x3x3 c16 k12", 3, 1, 16, 12, 1, {4, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    {"g3x3_128 b32", 2, 32, 128, 128, 32, {56, 56}, {3, 3}, {1, 1}, {1, 1}},
    {"g3x3_256_s2 b32", 2, 32, 256, 256, 32, {56, 56}, {3, 3}, {2, 2}, {1, 1}},
    {"g3x3_256 b32", 2, 32, 256, 256, 32, {28, 28}, {3, 3}, {1, 1}, {1, 1}},
    {"g3x3_512_s2 b32", 2, 32, 512, 512, 32, {28, 28}, {3, 3}, {2, 2}, {1, 1}},
    {"g3x3_512 b32", 2, 32, 512, 512, 32, {14, 14}, {3, 3}, {1, 1}, {1, 1}},
    {"g3x3_1024_s2 b32", 2, 32, 1024, 1024, 32, {14, 14}, {3, 3}, {2, 2}, {1, 1}},
    {"g3x3_1024 b32", 2, 32, 1024, 1024, 32, {7, 7}, {3, 3}, {1, 1}, {1, 1}},
};
/* clang-format on */

START_TEST(gpu_suite_and_resnext_shapes_have_defaults) {
  static const char *archs[] = {"sm_90", "sm_80"};
  for (int ai = 0; ai < 2; ai++) {
    arch a;
    ck_assert_int_eq(arch_from_name(archs[ai], &a, NULL), CT_OK);
    if (ai == 0) a.sm_count = 132;
    for (size_t i = 0; i < sizeof gpu_wls / sizeof gpu_wls[0]; i++) {
      const ct_workload w = make_wl(&gpu_wls[i]);
      const template_desc *tpl = tpl_of(&w);
      space sp;
      ct_err err = {0};
      ck_assert_msg(template_space(tpl, &w, &sp, &err) == CT_OK, "%s: %s", gpu_wls[i].name,
                    err.msg);
      config c;
      ck_assert_msg(tpl->preferred(&w, &sp, &a, &c), "%s %s: no default", gpu_wls[i].name,
                    archs[ai]);
      ck_assert(tpl->valid(&w, &sp, &c, &a, NULL));
      if (getenv("CT_SHOW_DEFAULTS")) {
        char text[256];
        printf("%s %s: %s\n", archs[ai], gpu_wls[i].name,
               space_config_str(&sp, &c, text, sizeof text));
      }
      space_free(&sp);
    }
  }
}
END_TEST

/* ---- NVRTC ------------------------------------------------------------------ */
/* Each workload in each epilogue variant, compiled for sm_90 (132 SMs) and
 * sm_80: the preferred config (variants 0, 2) or a random valid one. */
START_TEST(configs_compile_for_sm90_and_sm80) {
  const wl *s = &wls[_i];
  static const char *archs[] = {"sm_90", "sm_80"};
  for (int ai = 0; ai < 2; ai++) {
    arch a;
    ck_assert_int_eq(arch_from_name(archs[ai], &a, NULL), CT_OK);
    if (ai == 0) a.sm_count = 132;
    for (int v = 0; v < 4; v++) {
      /* the default run: one variant per workload and arch, in turn */
      if (!all_variants && v != (_i + ai) % 4) continue;
      const ct_workload base = make_wl(s);
      const ct_workload w = epilogue_variant(&base, v + ai);
      space sp;
      ct_err err = {0};
      ck_assert_int_eq(template_space(tpl_of(&w), &w, &sp, &err), CT_OK);
      config cfg[N_CFG];
      configs(&w, &sp, &a, 777 + (uint64_t)(_i * 8 + v), cfg);
      const int i = v % 2;
      instance inst;
      ck_assert_msg(instance_make(tpl_of(&w), &w, &sp, &cfg[i], &a, &inst, &err) == CT_OK, "%s",
                    err.msg);
      cubin cb;
      char text[256];
      space_config_str(&sp, &cfg[i], text, sizeof text);
      ck_assert_msg(nvrtc_compile(&inst, &a, &cb, &err) == CT_OK && cb.size > 0,
                    "%s %s variant %d %s: %s\n%s", s->name, archs[ai], v, text, err.msg,
                    cb.log ? cb.log : "");
      cubin_free(&cb);
      space_free(&sp);
    }
  }
}
END_TEST

static void add_emulate(TCase *tc) {
  tcase_add_loop_test(tc, kernel_index_math_matches_the_reference, 0, N_WLS);
  tcase_add_test(tc, every_groups_per_tile_matches_the_reference);
}

static void add_refuse(TCase *tc) {
  tcase_add_test(tc, any_k_and_groups_are_taken_the_stems_still_refuse);
  tcase_add_test(tc, groups_per_tile_is_refused_where_it_does_not_divide);
  tcase_add_test(tc, gpu_suite_and_resnext_shapes_have_defaults);
}

static void add_compile(TCase *tc) {
  tcase_add_loop_test(tc, configs_compile_for_sm90_and_sm80, 0, N_WLS);
}

static const test_case suite_cases[] = {
    {"support", -1, add_refuse},
    {"emulate", 600, add_emulate},
    {"compile", 1800, add_compile},
    {NULL, 0, NULL},
};

int main(int argc, char **argv) {
  all_variants = argc > 1 && !strcmp(argv[1], "all");
  static const test_suite suite = {"mma_nhwc_groups", suite_cases, 0, NULL};
  return test_main(&suite);
}
