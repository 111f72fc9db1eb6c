/*
 * conv_mma_nhwc.cuh: the body of conv2d_nhwc_mma and conv3d_ndhwc_mma
 * (conv2d is the D = 1 case): channels-last int8 convolution of layers with
 * few input channels (the 3-channel stems), as implicit GEMM on mma.sync
 * m16n8k32 whose reduction runs over the flattened window rows.
 *
 * Data NHWC (NDHWC), weights OHWI (ODHWI), output NHWC, all unpadded. One
 * row of the kernel window (fixed depth tap t and row tap r, every column
 * tap s and channel c) is KW x C contiguous bytes, in the data (the input
 * row from the window's first column, the dilation along W being 1) and in
 * the weights (OHWI: w[k][t][r][s][c]). The reduction is over those rows,
 * each padded to whole k32 steps (ROW_PAD bytes): a 7x7 stem of 3 channels
 * is 7 rows of 21 bytes, 7 k32 steps, where padding C to 16 would be 49.
 * The padding's data bytes meet zero weights and add nothing.
 *
 * A tile is TH output rows x TW output columns of one image (and output
 * depth) by BN output channels. The block stages the input rows the tile
 * reads (every depth tap's, with padding reading the data zero point) in
 * shared memory, in NALIGN copies shifted by 0..3 bytes: output column j
 * starts at byte j * STR_W * C of its row, so that every fragment register
 * is one aligned 32-bit load from the copy its alignment picks. The
 * weights, in B fragment order ([k32 step][n8 tile][lane] 8 bytes), are
 * staged once per block: the grid is persistent over the tiles.
 *
 * Each warp owns MI m16 blocks (16 consecutive output columns of one row)
 * by the BN channels. The epilogue stores 4 channels of one pixel per
 * thread and store (lanes trade accumulator pairs): int32 16 bytes, 8-bit
 * 4 bytes after the requantization of tc_common.cuh. Weight zero points and
 * depth_to_space run on the packed templates (the descriptor refuses them).
 *
 * Any K: where the block's channels come in whole 4-channel groups (K a
 * multiple of 4, per super-group below) the stores above, predicated per
 * group; otherwise each lane stores its own 2 channels element by element.
 *
 * Groups (STEM_G > 1; weights [K][kvol][C/G]): GROUPS_PER_TILE consecutive
 * groups form a super-group, a dense convolution of C_IN = gpt C/G input
 * channels (contiguous in NHWC) and SG_K = gpt K/G output channels whose
 * weight matrix is block-diagonal. grid y runs over the super-groups times
 * their BLOCK_N tiles; a block stages its super-group's C_IN channels of
 * each pixel (a row of IW x C_IN bytes, as if the data had C_IN channels),
 * and its B tile with zeros where input and output channel are of
 * different groups. STEM_G == 1 compiles exactly the code of before.
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_mma_nhwc.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

#include "conv_shape.cuh"
#include "tc_common.cuh"
#include "nhwc_store.cuh"

static_assert(CT_D2S == 0 && CT_WZP == 0, "depth_to_space and weight zero points: packed templates");
static_assert(TILE_W == 16 || TILE_W == 32 || TILE_W == 64 || TILE_W == 128, "tile_w: 16 to 128");
static_assert(TILE_H == 1 || TILE_H == 2 || TILE_H == 4, "tile_h: 1, 2 or 4");
static_assert(BLOCK_N == 32 || BLOCK_N == 64 || BLOCK_N == 128, "block_n: 32, 64 or 128");
static_assert(WARP_M16 == 1 || WARP_M16 == 2 || WARP_M16 == 4, "warp_m16: 1, 2 or 4 m16 blocks per warp");
static_assert(BLOCKS_PER_SM >= 1 && BLOCKS_PER_SM <= 4, "blocks_per_sm: 1 to 4");
static_assert(STEM_C > 0 && (STEM_C + 3) / 4 == CT_C4, "STEM_C must round up to 4 * CT_C4");
static_assert(CT_DIL_W == 1, "the window row must be contiguous: no dilation along W");
static_assert(STEM_G >= 1 && STEM_C % STEM_G == 0 && CT_KR % STEM_G == 0,
              "STEM_G (the groups) must divide C and K");
static_assert(GROUPS_PER_TILE == 1 || GROUPS_PER_TILE == 2 || GROUPS_PER_TILE == 4 ||
                  GROUPS_PER_TILE == 8 || GROUPS_PER_TILE == 16 || GROUPS_PER_TILE == 32,
              "groups_per_tile: 1 to 32");
static_assert(STEM_G % GROUPS_PER_TILE == 0, "groups_per_tile must divide the groups");

#if STEM_G > 1
#define CPG (STEM_C / STEM_G)           /* input channels per group */
#define KPG (CT_KR / STEM_G)            /* output channels per group */
#define C_IN (GROUPS_PER_TILE * CPG)    /* a super-group's input channels, as staged */
#define SG_K (GROUPS_PER_TILE * KPG)    /* ... and its output channels */
#define W_C CPG                         /* the weights' input channels */
#define DATA_AT(o) ((o) / C_IN * STEM_C + (o) % C_IN) /* staged row byte -> data row byte */
#define ROW_ALIGNED (C_IN % 4 == 0)     /* a staged word is one aligned word of one pixel */
#else
#define C_IN STEM_C
#define SG_K CT_KR
#define W_C STEM_C
#define DATA_AT(o) (o)
#define ROW_ALIGNED ((CT_IW * C_IN) % 4 == 0) /* rows start at word boundaries */
#endif
#define TILES_NS ((SG_K + BLOCK_N - 1) / BLOCK_N) /* BLOCK_N tiles of a super-group */
#define ROW_BYTES (CT_KW * C_IN)                 /* one window row */
#define ROW_PAD ((ROW_BYTES + 31) / 32 * 32)     /* ... in whole k32 steps */
#define RSTEPS (ROW_PAD / 32)
#define TAPROWS (CT_KD * CT_KH)
#define KSTEPS (TAPROWS * RSTEPS)                /* k32 steps of the reduction */
#define IN_ROWS ((TILE_H - 1) * CT_STR_H + (CT_KH - 1) * CT_DIL_H + 1) /* per depth tap */
#define SROWS (CT_KD * IN_ROWS)
#define PSTEP (CT_STR_W * C_IN) /* bytes between the windows of adjacent output columns */
#define NALIGN (PSTEP % 4 == 0 ? 1 : PSTEP % 2 == 0 ? 2 : 4)
#define ASTEP (4 / NALIGN) /* the alignments that occur: multiples of ASTEP */
/* a staged row: the last column's window, a k32 step past its end read
 * whole, and a word of slack for the shifted copies */
#define ROWB (((TILE_W - 1) * PSTEP + ROW_PAD + 4 + 15) / 16 * 16)
/* a copy: its rows, padded so that copies start 16 banks apart (the odd
 * columns of a warp read the other copy than the even ones) */
#define COPY_RAW (SROWS * ROWB)
#define COPYB (COPY_RAW + ((16 - (COPY_RAW / 4) % 32) + 32) % 32 * 4)
#define IN_BYTES (NALIGN * COPYB)
#define RAWW (ROWB / 4 + 2) /* raw words per staged row: a copy's word reads two */
#define RAW_WORDS (SROWS * RAWW)
#define PF ((RAW_WORDS + THREADS - 1) / THREADS) /* raw words per thread */
#define NT (BLOCK_N / 8)
#define W_BYTES (KSTEPS * BLOCK_N * 32)
#define MBLK (TILE_H * TILE_W / 16) /* m16 blocks per tile */
#define WARPS (MBLK / WARP_M16)
#define THREADS (32 * WARPS)
#define TAPVOL (CT_KD * CT_KH * CT_KW * W_C) /* weight bytes per output channel */
/* the block's raw weight bytes (first, where the copies go later) */
#define WRAW_BYTES ((BLOCK_N * TAPVOL + 3 + 3) / 4 * 4)
#define SCRATCH_BYTES (IN_BYTES > WRAW_BYTES ? IN_BYTES : WRAW_BYTES)
#define SMEM_BYTES (W_BYTES + SCRATCH_BYTES + RAW_WORDS * 4)
#define TILES_W ((CT_OW + TILE_W - 1) / TILE_W)
#define TILES_H ((CT_OH + TILE_H - 1) / TILE_H)
#define TILES_M ((long)CT_N * CT_OD * TILES_H * TILES_W)

static_assert(MBLK % WARP_M16 == 0, "warp_m16 must divide the tile's m16 blocks");
static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the tile");
static_assert(SMEM_BYTES == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the tile");
static_assert(WARP_M16 * BLOCK_N / 2 <= 128, "accumulators: warp_m16 x block_n / 2 at most 128");

/* ---- staging ----------------------------------------------------------------- */
/* The raw input of a tile: per staged row (depth tap t, row y), RAWW words
 * of the input row from the 4-byte word holding the window span's first
 * byte (x0 * C, floored to a word); the pad byte outside the input. A
 * thread fetches PF of them into registers one tile ahead, so that their
 * latency hides behind the current tile's math. Rows of a 4-byte multiple
 * load whole words; others, and the words at a row's ends, bytes. With
 * groups the row is the super-group's C_IN channels of each pixel (data
 * points at its first channel; DATA_AT maps a staged byte to the data's),
 * whole words where C_IN is a multiple of 4. */
__device__ __forceinline__ int floor4(int x) {
  return x >= 0 ? x / 4 : -((3 - x) / 4);
}

__device__ __forceinline__ void fetch_rows(unsigned (&pf)[PF], const unsigned char *__restrict__ data,
                                           int n, int z0, int y0, int x0, unsigned pad) {
  const int wb0 = floor4(x0 * C_IN);
#pragma unroll
  for (int p = 0; p < PF; p++) {
    const int i = threadIdx.x + p * THREADS;
    if (RAW_WORDS % THREADS && i >= RAW_WORDS) break;
    const int srow = i / RAWW, col = i % RAWW;
    const int z = z0 + srow / IN_ROWS * CT_DIL_D, y = y0 + srow % IN_ROWS;
    const int o = (wb0 + col) * 4; /* the word's first byte in the row */
    unsigned v = pad * 0x01010101u;
    if (z >= 0 && z < CT_ID && y >= 0 && y < CT_IH) {
      const unsigned char *row = data + (((long)n * CT_ID + z) * CT_IH + y) * (CT_IW * STEM_C);
      if (ROW_ALIGNED && o >= 0 && o + 4 <= CT_IW * C_IN) {
        v = *(const unsigned *)(row + DATA_AT(o));
      } else if (o + 4 > 0 && o < CT_IW * C_IN) {
        v = 0;
#pragma unroll
        for (int q = 0; q < 4; q++)
          v |= (o + q >= 0 && o + q < CT_IW * C_IN ? (unsigned)row[DATA_AT(o + q)] : pad)
               << (8 * q);
      }
    }
    pf[p] = v;
  }
}

__device__ __forceinline__ void store_rows(unsigned *raw, const unsigned (&pf)[PF]) {
#pragma unroll
  for (int p = 0; p < PF; p++) {
    const int i = threadIdx.x + p * THREADS;
    if (RAW_WORDS % THREADS && i >= RAW_WORDS) break;
    raw[i] = pf[p];
  }
}

/* The NALIGN copies from the raw rows: copy a starts a * ASTEP bytes past
 * the window span's first byte, which is sh bytes into the raw row. */
__device__ __forceinline__ void make_copies(unsigned *sin, const unsigned *raw, int sh) {
#pragma unroll 1
  for (int i = threadIdx.x; i < NALIGN * SROWS * (ROWB / 4); i += THREADS) {
    const int a = i / (SROWS * (ROWB / 4)), r = i % (SROWS * (ROWB / 4));
    const int srow = r / (ROWB / 4), col = r % (ROWB / 4), b = sh + a * ASTEP;
    const unsigned *src = raw + srow * RAWW + col + b / 4;
    sin[a * (COPYB / 4) + r] = __funnelshift_r(src[0], src[1], 8 * (b % 4));
  }
}

/* The block's weights in B fragment order: for k32 step ks (row tr =
 * ks / RSTEPS, bytes 32 * (ks % RSTEPS) of it), n8 tile nt and lane (g,
 * t), 8 bytes: the bytes 4t..4t+3 and 16+4t..16+4t+3 of the step for
 * output channel n0 + 8 nt + g; zero past the row and past K. The block's
 * weight bytes (contiguous in ODHWI) are first loaded as words into wraw,
 * from the word holding the first. n0 counts in the super-group (SG_K
 * channels), n0g in the weights (n0g = n0 without groups). */
__device__ __forceinline__ void load_weights(unsigned *wraw, const unsigned char *__restrict__ w,
                                             int n0g, int n0) {
  const long b0 = (long)n0g * TAPVOL, w0 = b0 / 4;
  const long end = (long)CT_KR * TAPVOL; /* the weights' bytes */
  const long nb = ((n0 + BLOCK_N < SG_K ? n0 + BLOCK_N : SG_K) - n0) * (long)TAPVOL + (b0 - 4 * w0);
#pragma unroll 4
  for (int i = threadIdx.x; i < (nb + 3) / 4; i += THREADS) {
    const long o = (w0 + i) * 4;
    unsigned v = 0;
    if (o + 4 <= end) {
      v = *(const unsigned *)(w + o);
    } else {
#pragma unroll
      for (int q = 0; q < 4; q++) v |= (o + q < end ? (unsigned)w[o + q] : 0u) << (8 * q);
    }
    wraw[i] = v;
  }
}

/* With groups, byte k of a window row is column k / C_IN's channel c = k %
 * C_IN, of group c / CPG of the super-group: the weight where that is the
 * output channel's group (n0 + nl) / KPG, zero elsewhere (block-diagonal). */
__device__ __forceinline__ void make_weights(uint2 *sw, const unsigned *wraw, int n0g, int n0) {
  const unsigned char *wb = (const unsigned char *)wraw + ((long)n0g * TAPVOL) % 4;
#pragma unroll 1
  for (int i = threadIdx.x; i < KSTEPS * NT * 32; i += THREADS) {
    const int lane = i % 32, nt = (i / 32) % NT, ks = i / (32 * NT);
    const int tr = ks / RSTEPS, k0 = (ks % RSTEPS) * 32 + 4 * (lane & 3);
    const int nl = 8 * nt + (lane >> 2);
    unsigned v[2] = {0u, 0u};
    if (n0 + nl < SG_K) {
#if STEM_G > 1
      const int gi = (n0 + nl) / KPG;
      const unsigned char *src = wb + nl * TAPVOL + tr * (CT_KW * CPG);
#pragma unroll
      for (int h = 0; h < 2; h++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
          const int k = k0 + 16 * h + q, col = k / C_IN, c = k % C_IN;
          if (k < ROW_BYTES && c / CPG == gi)
            v[h] |= (unsigned)src[col * CPG + c - gi * CPG] << (8 * q);
        }
#else
      const unsigned char *src = wb + nl * TAPVOL + tr * ROW_BYTES;
#pragma unroll
      for (int h = 0; h < 2; h++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
          const int k = k0 + 16 * h + q;
          if (k < ROW_BYTES) v[h] |= (unsigned)src[k] << (8 * q);
        }
#endif
    }
    sw[i] = make_uint2(v[0], v[1]);
  }
}

/* A tile: image and output depth (nd = n * OD + od), its first output row
 * and its column of tiles. */
struct tile_pos {
  long nd;
  int th0, tw;
};

__device__ __forceinline__ tile_pos tile_at(long tile) {
  tile_pos p;
  p.tw = (int)(tile % TILES_W);
  p.th0 = (int)(tile / TILES_W % TILES_H);
  p.nd = tile / ((long)TILES_W * TILES_H);
  return p;
}

/* The input column of the window of a tile's first output column. */
__device__ __forceinline__ int tile_x0(int tw) {
  return tw * TILE_W * CT_STR_W - CT_PAD_W;
}

__device__ __forceinline__ void fetch_tile(unsigned (&pf)[PF], const unsigned char *__restrict__ data,
                                           long tile, unsigned pad) {
  const tile_pos p = tile_at(tile);
  fetch_rows(pf, data, (int)(p.nd / CT_OD), (int)(p.nd % CT_OD) * CT_STR_D - CT_PAD_D,
             p.th0 * TILE_H * CT_STR_H - CT_PAD_H, tile_x0(p.tw), pad);
}

/* ---- the kernel ---------------------------------------------------------- */
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    conv_mma_nhwc(const unsigned char *__restrict__ data, const unsigned char *__restrict__ weights,
                  void *__restrict__ out, const int *__restrict__ params,
                  const void *__restrict__ residual) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint2 *sw = (uint2 *)smem_raw;
  unsigned *sin = (unsigned *)(smem_raw + W_BYTES);
  unsigned *raw = (unsigned *)(smem_raw + W_BYTES + SCRATCH_BYTES);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
#if STEM_G > 1
  /* grid y: super-group sg, and the channels n0.. of its SG_K */
  const int sg = blockIdx.y / TILES_NS, n0 = (blockIdx.y % TILES_NS) * BLOCK_N;
  const int kb = sg * SG_K;                          /* its first output channel */
  const unsigned char *const dsg = data + sg * C_IN; /* its first input channel */
#else
  const int n0 = blockIdx.y * BLOCK_N;
  const int kb = 0;
  const unsigned char *const dsg = data;
#endif
  pdl_wait_then_release(); /* nothing global before: the previous kernel may still run */
#if CT_ZD
  const unsigned pad = (unsigned)params[CTQ_PAD_WORD] & 0xffu;
#else
  const unsigned pad = 0;
#endif
  const q_head qh = load_head(params);

  /* this thread's pixels: m16 block mb = warp * MI + i is row mb / (TW /
   * 16) of the tile, columns 16 (mb % (TW / 16)) + g and + 8; each reads
   * the copy of its alignment at its aligned offset */
  int off[WARP_M16][2];
#pragma unroll
  for (int i = 0; i < WARP_M16; i++) {
    const int mb = warp * WARP_M16 + i, th = mb / (TILE_W / 16);
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int j = (mb % (TILE_W / 16)) * 16 + g + 8 * h, al = (j * PSTEP) & 3;
      off[i][h] = (al / ASTEP) * COPYB + th * CT_STR_H * ROWB + j * PSTEP - al + 4 * t;
    }
  }
  const unsigned char *sinb = (const unsigned char *)sin;

  long tile = blockIdx.x;
  unsigned pf[PF];
  fetch_tile(pf, dsg, tile, pad);
  load_weights(sin, weights, kb + n0, n0); /* the raw weights where the copies go */
  __syncthreads();
  make_weights(sw, sin, kb + n0, n0);

#pragma unroll 1
  for (; tile < TILES_M; tile += gridDim.x) {
    const tile_pos tp = tile_at(tile);
    const long nd = tp.nd;
    const int th0 = tp.th0, tw = tp.tw, sh = tile_x0(tw) * C_IN;
    store_rows(raw, pf);
    __syncthreads(); /* the raw rows are in; every warp is done with the last tile */
    make_copies(sin, raw, sh - 4 * floor4(sh));
    /* the next tile's rows, in flight during this one */
    if (tile + gridDim.x < TILES_M) fetch_tile(pf, dsg, tile + gridDim.x, pad);
    __syncthreads();

    int acc[WARP_M16][NT][4];
#pragma unroll
    for (int i = 0; i < WARP_M16; i++)
#pragma unroll
      for (int j = 0; j < NT; j++)
#pragma unroll
        for (int l = 0; l < 4; l++) acc[i][j][l] = 0;

#pragma unroll 1
    for (int tr = 0; tr < TAPROWS; tr++) {
      /* staged row of tap row (td, r) for the tile's first output row */
      const int td = tr / CT_KH, r = tr % CT_KH;
      const int rowoff = (td * IN_ROWS + r * CT_DIL_H) * ROWB;
#pragma unroll
      for (int rs = 0; rs < RSTEPS; rs++) {
        const int ks = tr * RSTEPS + rs;
        uint2 b[NT];
#pragma unroll
        for (int j = 0; j < NT; j++) b[j] = sw[(ks * NT + j) * 32 + lane];
#pragma unroll
        for (int i = 0; i < WARP_M16; i++) {
          unsigned a[4];
          const unsigned char *p0 = sinb + off[i][0] + rowoff + rs * 32;
          const unsigned char *p1 = sinb + off[i][1] + rowoff + rs * 32;
          a[0] = *(const unsigned *)p0;
          a[1] = *(const unsigned *)p1;
          a[2] = *(const unsigned *)(p0 + 16);
          a[3] = *(const unsigned *)(p1 + 16);
#pragma unroll
          for (int j = 0; j < NT; j++) {
            const unsigned bb[2] = {b[j].x, b[j].y};
            mma16832(acc[i][j], a, bb);
          }
        }
      }
    }

    /* The epilogue: per pair of n8 tiles (j0 = 2 jp, j1 = j0 + 1), the
     * stores of nhwc_store.cuh for rows g and g + 8. Channels: kl in the
     * super-group (SG_K of them), k = kb + kl in the output. */
    const int odd = t & 1;
#pragma unroll
    for (int i = 0; i < WARP_M16; i++) {
      const int mb = warp * WARP_M16 + i, oh = th0 * TILE_H + mb / (TILE_W / 16);
      const int owa = tw * TILE_W + (mb % (TILE_W / 16)) * 16 + g, owb = owa + 8;
      const long ma = ((long)nd * CT_OH + oh) * CT_OW + owa; /* row a; row b is ma + 8 */
      const bool oka = oh < CT_OH && owa < CT_OW, okb = oh < CT_OH && owb < CT_OW;
      /* row a's output (row b's is 8 pixels on), in elements of the output type */
#if CT_OUT == 0
      int *const outa = (int *)out + ma * CT_KR;
#else
      unsigned char *const outa = (unsigned char *)out + ma * CT_KR;
#endif
#if SG_K % 4 == 0
#pragma unroll
      for (int jp = 0; jp < NT / 2; jp++) {
        int v[2][4]; /* [n8 tile of the pair][row a ch 0, 1, row b ch 0, 1] */
#if CT_OUT != 0
        unsigned r8[2][2]; /* 8-bit: [tile][row], 2 channels in bytes 0, 1 */
#endif
#pragma unroll
        for (int q = 0; q < 2; q++) {
          const int j = 2 * jp + q, kl = n0 + j * 8 + 2 * t, k = kb + kl;
          const int kk = kl < SG_K ? k : 0; /* params in range; not stored */
          q_chan c0, c1;
          load_chan2(params, qh, kk, c0, c1);
          v[q][0] = corrected(c0, acc[i][j][0], 0);
          v[q][1] = corrected(c1, acc[i][j][1], 0);
          v[q][2] = corrected(c0, acc[i][j][2], 0);
          v[q][3] = corrected(c1, acc[i][j][3], 0);
#if CT_OUT != 0
          unsigned ra = 0, rb = 0;
          if (CT_RES && kl < SG_K) {
            if (oka) ra = *(const unsigned short *)((const unsigned char *)residual + ma * CT_KR + k);
            if (okb)
              rb = *(const unsigned short *)((const unsigned char *)residual + (ma + 8) * CT_KR + k);
          }
          /* bytes 0, 1: channels k, k + 1 of rows a and b (one branch for the 4) */
          if (c0.f.ok && c1.f.ok) {
            r8[q][0] = requant2<RQ_FAST>(qh, c0, c1, v[q][0], v[q][1], ra);
            r8[q][1] = requant2<RQ_FAST>(qh, c0, c1, v[q][2], v[q][3], rb);
          } else {
            r8[q][0] = requant2<RQ_GENERAL>(qh, c0, c1, v[q][0], v[q][1], ra);
            r8[q][1] = requant2<RQ_GENERAL>(qh, c0, c1, v[q][2], v[q][3], rb);
          }
#endif
        }
        /* the stored tile and its first channel: j0 at 2t (even t), j1 at 2(t - 1) (odd t) */
        const int ks = n0 + (2 * jp + odd) * 8 + 2 * (t - odd);
        /* SG_K % 4 == 0: a 4-channel group is whole or absent, and all there when block_n
         * divides SG_K; K and kb are multiples of 4 too, so the stores stay aligned */
        const bool okk = SG_K % BLOCK_N == 0 || ks < SG_K;
#if CT_OUT == 0
        (void)residual;
        store_pair_nhwc(outa + kb + ks, outa + 8 * CT_KR + kb + ks, v, odd, okk && oka, okk && okb);
#else
        (void)v;
        store_pair_nhwc(outa + kb + ks, outa + 8 * CT_KR + kb + ks, r8, odd, okk && oka,
                        okk && okb);
#endif
      }
#else
      /* SG_K not a multiple of 4: a pixel's channels start at any byte
       * (int32: any word), so each lane stores its channels kl, kl + 1 of
       * rows a and b one by one, each where it exists; its params one
       * channel at a time (k may be odd with groups), the residual by bytes */
#pragma unroll
      for (int j = 0; j < NT; j++) {
        const int kl = n0 + j * 8 + 2 * t, k = kb + kl;
        const bool ok0 = kl < SG_K, ok1 = kl + 1 < SG_K;
        const q_chan c0 = load_chan(params, qh, ok0 ? k : 0);
        const q_chan c1 = load_chan(params, qh, ok1 ? k + 1 : 0);
        const int v0 = corrected(c0, acc[i][j][0], 0), v1 = corrected(c1, acc[i][j][1], 0);
        const int v2 = corrected(c0, acc[i][j][2], 0), v3 = corrected(c1, acc[i][j][3], 0);
#if CT_OUT == 0
        (void)residual;
        if (oka && ok0) outa[k] = v0;
        if (oka && ok1) outa[k + 1] = v1;
        if (okb && ok0) outa[8 * CT_KR + k] = v2;
        if (okb && ok1) outa[8 * CT_KR + k + 1] = v3;
#else
        unsigned ra = 0, rb = 0;
        if (CT_RES) {
          const unsigned char *res = (const unsigned char *)residual + ma * CT_KR + k;
          if (oka && ok0) ra = res[0];
          if (oka && ok1) ra |= (unsigned)res[1] << 8;
          if (okb && ok0) rb = res[8 * CT_KR];
          if (okb && ok1) rb |= (unsigned)res[8 * CT_KR + 1] << 8;
        }
        unsigned ya, yb; /* rows a and b: channels k, k + 1 in bytes 0, 1 */
        if (c0.f.ok && c1.f.ok) {
          ya = requant2<RQ_FAST>(qh, c0, c1, v0, v1, ra);
          yb = requant2<RQ_FAST>(qh, c0, c1, v2, v3, rb);
        } else {
          ya = requant2<RQ_GENERAL>(qh, c0, c1, v0, v1, ra);
          yb = requant2<RQ_GENERAL>(qh, c0, c1, v2, v3, rb);
        }
        if (oka && ok0) outa[k] = (unsigned char)ya;
        if (oka && ok1) outa[k + 1] = (unsigned char)(ya >> 8);
        if (okb && ok0) outa[8 * CT_KR + k] = (unsigned char)yb;
        if (okb && ok1) outa[8 * CT_KR + k + 1] = (unsigned char)(yb >> 8);
#endif
      }
#endif
    }
  }
}
