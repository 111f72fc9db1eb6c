/*
 * conv_wgmma_stem.cuh: the body of conv2d_nhwc_wgmma_stem and
 * conv3d_ndhwc_wgmma_stem (conv2d is the D = 1 case): channels-last int8
 * convolution of layers with few input channels (the 3-channel stems) on
 * wgmma.mma_async m64nNk32 (sm_90a), with the reduction over the flattened
 * window rows of conv_mma_nhwc.cuh and both operands read by descriptor
 * from shared memory.
 *
 * Data NHWC (NDHWC), weights OHWI (ODHWI), output NHWC, all unpadded. One
 * row of the kernel window (depth tap t, row tap r, every column tap s and
 * channel c) is KW x C contiguous bytes in the data and in the weights; the
 * reduction runs over those rows, each padded to whole k32 steps (a 7x7
 * stem of 3 channels: 7 rows of 21 bytes, 7 steps where C padded to 16
 * would take 49). The padding's data bytes meet zero weights.
 *
 * A warpgroup owns a tile of block_m consecutive output pixels (across
 * rows and images) by block_n output channels and writes the tile's A
 * operand itself, one depth tap's window rows per stage: each thread takes
 * a pixel and some of its window rows, loads the row's words from global
 * memory (L1 holds the overlap of neighbouring windows), shifts them to
 * the window's first byte and stores 16-byte chunks K-major, as 8-row x
 * 16-byte core matrices without swizzle (the descriptor form of
 * conv_wgmma.cuh's weights). Padding reads the data zero point. With two A
 * buffers (a_buffers 2) the next stage is written while this stage's
 * wgmmas run. The block's weights (block_n channels, every k32 step) are
 * staged once, the same way, for all of its warpgroups and tiles: the
 * grid is persistent, and the warpgroups of a block share nothing else, so
 * one's epilogue overlaps another's stores and wgmmas with no block-wide
 * barrier after the start.
 *
 * The epilogue is wgmma_epilogue.cuh's: int32, or requantized to 8 bits,
 * stored by each thread or, with out_stage (OUT_STAGE), staged in its
 * warp's slab and stored as whole rows.
 * With out_tma (OUT_TMA, int32 output, K a multiple of 32) a warpgroup
 * writes its tile into a staging area of its own, laid out as the
 * output's tensor map stores a box of 32 channels x block_m pixels, and
 * one thread stores the boxes by TMA; the area is written again only once
 * the stores have read it (at the next tile's epilogue, a tile later).
 * Weight zero points and depth_to_space run on the packed templates (the
 * descriptor refuses them).
 *
 * Where it takes fewer k32 steps (ROW_PACK: window rows of 4 bytes or
 * more, whose stage is not already whole steps) a stage's window rows are
 * concatenated, as the weights lie in ODHWI, and padded once to whole
 * steps: a 7x7 stem of 3 channels takes 5 steps a depth tap where one step
 * a row takes 7, a 3x3 one 1 where it takes 3; so fewer wgmmas, fewer A
 * and B bytes through shared memory (written and read) and a smaller
 * weight stage: 3-19% faster on every stem config timed both ways (H200,
 * when it was a knob). Each of a pixel's 128 / block_m threads builds a
 * contiguous part of its stage from the rows that part covers (a
 * compile-time part, so that every byte's row and offset are constants):
 * the rows' words shifted to the window's first byte as before, then each
 * k32 word one funnel shift of its row's words, or one PRMT of two rows'
 * where it straddles them.
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_wgmma_stem.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

#include "conv_shape.cuh"
#include "tc_common.cuh"
#include "nhwc_store.cuh"
#include "wgmma_ptx.cuh"

static_assert(CT_D2S == 0 && CT_WZP == 0, "depth_to_space and weight zero points: packed templates");
static_assert(BLOCK_M == 64 || BLOCK_M == 128, "block_m: 64 or 128 rows per warpgroup");
static_assert(BLOCK_N == 32 || BLOCK_N == 64 || BLOCK_N == 128 || BLOCK_N == 256,
              "block_n is 32, 64, 128 or 256");
static_assert(WARPGROUPS == 1 || WARPGROUPS == 2, "warpgroups: 1 or 2 per block");
static_assert(A_BUFFERS == 1 || A_BUFFERS == 2, "a_buffers: 1 or 2 per warpgroup");
static_assert(BLOCKS_PER_SM >= 1 && BLOCKS_PER_SM <= 4, "blocks_per_sm: 1 to 4");
#ifndef OUT_TMA
#define OUT_TMA 0
#endif
#ifndef A_PREFETCH
#define A_PREFETCH 0
#endif
#ifndef OUT_STAGE
#define OUT_STAGE 0
#endif
static_assert(OUT_STAGE == 0 || CT_OUT != 0, "out_stage: 8-bit output");
static_assert(A_PREFETCH == 0 || A_PREFETCH == 1, "a_prefetch: 0 or 1");
static_assert(OUT_TMA == 0 || (CT_OUT == 0 && CT_KR % 32 == 0),
              "out_tma: int32 output, K a multiple of 32 (whole 128-byte box rows)");
static_assert(STEM_C > 0 && (STEM_C + 3) / 4 == CT_C4, "STEM_C must round up to 4 * CT_C4");
static_assert(CT_DIL_W == 1, "the window row must be contiguous: no dilation along W");
static_assert(CT_KR % 8 == 0, "the NHWC stores: K must be a multiple of 8");
static_assert((long)CT_N * CT_OD * CT_OH * CT_OW < 2147483648L &&
                  (long)CT_N * CT_ID * CT_IH < 2147483648L,
              "the stage's 32-bit arithmetic: fewer than 2^31 output pixels and input rows");

#define C_IN STEM_C
#define ROW_BYTES (CT_KW * C_IN)             /* one window row */
#define RSTEPS ((ROW_BYTES + 31) / 32)       /* ... in whole k32 steps */
#define STAGE_BYTES (CT_KH * ROW_BYTES)           /* a depth tap's window rows */
/* the stage's rows concatenated where that takes fewer k32 steps and a
 * word spans two rows at most (rows of 4 bytes or more) */
#define ROW_PACK (ROW_BYTES >= 4 && (STAGE_BYTES + 31) / 32 < CT_KH * RSTEPS)
/* k32 steps of a stage (one depth tap): whole steps a row, or the rows
 * concatenated */
#define CK              (ROW_PACK ? (STAGE_BYTES + 31) / 32 : CT_KH * RSTEPS)
#define KSTEPS (CT_KD * CK)                  /* of the reduction */
#define TAPVOL (CT_KD * CT_KH * ROW_BYTES)   /* weight bytes per output channel */
#define ROWW (CT_IW * C_IN)                  /* bytes of an input row */
#define ROW_ALIGNED (ROWW % 4 == 0)          /* rows start at word boundaries */
#define NWORDS ((ROW_BYTES + 6) / 4)         /* words of a window row from the word of its first byte */
/* GATHER8: in 3D, where rows are whole 8-byte pieces (the pointers are
 * 16-byte aligned), a window row's words are loaded 8 bytes at a time,
 * NPIECES from the piece of its first byte (covering NWORDS + 1 words from
 * its first byte's word), then each word by one select: a third fewer
 * load requests through L1 for a select a word. Same configs, H200
 * (ldg8-*.log in h200-issue36/stems): ResNet3D-18 b8's stem 64.9 -> 60.2
 * us (int32 62.5 -> 60.2); but 0.3-1.2% slower on ResNet-50's 7x7 stems
 * and 3.7% on MobileNetV2's 3x3 one, a stage a tile where 3D has three. */
#define GATHER8         (CT_KD > 1 && ROWW % 8 == 0)
#define NPIECES         ((NWORDS + 2) / 2)
#define ROWS_PER_THREAD ((BLOCK_M * CT_KH + 127) / 128)
/* ROW_PACK: a pixel's threads (PARTS, 1 or 2), each building PART_BYTES of
 * its stage */
#define PARTS      (128 / BLOCK_M)
#define PART_BYTES (CK * 32 / PARTS)
#define THREADS (128 * WARPGROUPS)
/* what wgmma_epilogue.cuh takes */
#define MI (BLOCK_M / 64)
#define SPLIT_K 1
#define JPR          (BLOCK_N / 8)
#define TILE_REQUANT 0 /* the requantization's form chosen per pair of channel groups */
#define M_TOTAL ((long)CT_N * CT_OD * CT_OH * CT_OW)
#define TILES_M ((M_TOTAL + BLOCK_M - 1) / BLOCK_M)
/* shared memory: the weights (a slab of block_n rows x 32 bytes per k32
 * step), with out_tma each warpgroup's output staging (block_m x block_n
 * int32, 1024-byte aligned: the weights are multiples of 2 KB), then each
 * warpgroup's A buffers (a slab of block_m rows per k32 step of a stage),
 * where the weights' raw bytes are first staged */
#define SLAB_A (BLOCK_M * 32)
#define SLAB_B (BLOCK_N * 32)
#define A_BUF (CK * SLAB_A)
#define B_BYTES (KSTEPS * SLAB_B)
#define OST_WG (OUT_TMA ? BLOCK_M * BLOCK_N * 4 : 0)
#define OST_BYTES (WARPGROUPS * OST_WG)
#define A_BYTES (WARPGROUPS * A_BUFFERS * A_BUF)
#define RAW_BYTES ((BLOCK_N * TAPVOL + 16 + 15) / 16 * 16 + 16) /* from a 16-byte chunk; slack */
#define SCRATCH_BYTES (A_BYTES > RAW_BYTES ? A_BYTES : RAW_BYTES)

#include "wgmma_epilogue.cuh"

/* then, 8-bit, each warpgroup's channel table and out_stage slabs; 1024:
 * to align the slabs */
#define SMEM_BYTES (B_BYTES + OST_BYTES + SCRATCH_BYTES + WARPGROUPS * EPI_WG_BYTES + 1024)

static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the warpgroups");
static_assert(SMEM_BYTES == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the tile");
static_assert(MI * BLOCK_N / 2 <= 128, "accumulators: block_m x block_n / 128 at most 128 per thread");
static_assert(B_BYTES % 1024 == 0, "the output staging 1024-byte aligned (the swizzle's)");

/* ---- shared memory ------------------------------------------------------- */
/* A K-major operand slab of one k32 step: 8-row x 16-byte core matrices,
 * the two 16-byte halves of an 8-row group 128 bytes apart (leading byte
 * offset), the groups 256 bytes apart (stride byte offset), no swizzle. */
__device__ __forceinline__ unsigned long long km_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (unsigned long long)(128 >> 4) << 16 |
         (unsigned long long)(256 >> 4) << 32;
}
/* The byte offset of row (pixel or channel) row's 16-byte half h in a slab. */
__device__ __forceinline__ unsigned km_off(int row, int h) {
  return (unsigned)((row >> 3) * 256 + h * 128 + (row & 7) * 16);
}
__device__ __forceinline__ void st_shared4(unsigned addr, unsigned v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared16(unsigned addr, const unsigned (&v)[4]) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v[0]), "r"(v[1]),
               "r"(v[2]), "r"(v[3])
               : "memory");
}
/* The 128 threads of warpgroup wg (barrier 0 is __syncthreads'). */
__device__ __forceinline__ void wg_bar(int wg) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(wg + 1) : "memory");
}

/* ---- the weights ------------------------------------------------------------ */
/* The block's raw weight bytes (channels n0 .. n0 + block_n - 1, contiguous
 * in ODHWI) into raw, from the 16-byte chunk holding the first. */
__device__ __forceinline__ void load_raw(unsigned char *raw, const unsigned char *__restrict__ w,
                                         int n0) {
  const long b0 = (long)n0 * TAPVOL, c0 = b0 / 16;
  const long end = (long)CT_KR * TAPVOL; /* the weights' bytes */
  const long nb = ((n0 + BLOCK_N < CT_KR ? n0 + BLOCK_N : CT_KR) - n0) * (long)TAPVOL + (b0 - 16 * c0);
#pragma unroll 4
  for (int i = threadIdx.x; i < (nb + 15) / 16; i += THREADS) {
    const long o = (c0 + i) * 16;
    uint4 v;
    if (o + 16 <= end) {
      v = __ldg((const uint4 *)(w + o));
    } else {
      unsigned b[4] = {0u, 0u, 0u, 0u};
#pragma unroll
      for (int q = 0; q < 16; q++)
        if (o + q < end) b[q / 4] |= (unsigned)w[o + q] << (8 * (q % 4));
      v = make_uint4(b[0], b[1], b[2], b[3]);
    }
    *(uint4 *)(raw + 16 * i) = v;
  }
}

/* The weights' slabs from the raw bytes: for k32 step ks (window row tr =
 * ks / RSTEPS, its bytes 32 (ks % RSTEPS) on; ROW_PACK: depth tap ks / CK,
 * its concatenated rows' bytes 32 (ks % CK) on, as ODHWI lays them out)
 * and channel n, 32 bytes, zero past the row (the stage) and past K. */
__device__ __forceinline__ void make_b(unsigned sb, const unsigned char *raw, int n0) {
  const int s0 = (int)((long)n0 * TAPVOL % 16);
#pragma unroll 4
  for (int i = threadIdx.x; i < KSTEPS * BLOCK_N * 8; i += THREADS) {
    const int q = i & 7, n = (i >> 3) % BLOCK_N, ks = i / (8 * BLOCK_N);
    /* the word's first byte in its run (a row, or a stage), the run's
     * bytes, the run's first byte in the channel's weights */
    const int j0 = (ks % (ROW_PACK ? CK : RSTEPS)) * 32 + 4 * q;
    const int run = ROW_PACK ? STAGE_BYTES : ROW_BYTES;
    const int r0 = ROW_PACK ? (ks / CK) * STAGE_BYTES : (ks / RSTEPS) * ROW_BYTES;
    unsigned v = 0;
    if (n0 + n < CT_KR && j0 < run) {
      const int b = s0 + n * TAPVOL + r0 + j0;
      const unsigned *wp = (const unsigned *)(raw + (b & ~3));
      v = __funnelshift_r(wp[0], wp[1], 8 * (b & 3));
      if (run - j0 < 4) v &= (1u << (8 * (run - j0))) - 1u;
    }
    st_shared4(sb + ks * SLAB_B + km_off(n, q >> 2) + (q & 3) * 4, v);
  }
}

/* ---- the data ------------------------------------------------------------- */
/* The word at p where ok, else otherwise: a predicated load, with nothing
 * that waits for it until the value is used (a select after a plain load
 * makes ptxas wait for each load in turn). */
__device__ __forceinline__ unsigned ldg_or(const unsigned *p, bool ok, unsigned otherwise) {
  unsigned v;
  asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %2, 0;\nmov.b32 %0, %3;\n"
               "@q ld.global.nc.u32 %0, [%1];\n}\n"
               : "=r"(v)
               : "l"(p), "r"((int)ok), "r"(otherwise));
  return v;
}

/* The 8 bytes at p where ok, else otherwise in both words: ldg_or's
 * 8-byte form. */
__device__ __forceinline__ uint2 ldg2_or(const uint2 *p, bool ok, unsigned otherwise) {
  uint2 v;
  asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %3, 0;\nmov.b32 %0, %4;\nmov.b32 %1, %4;\n"
               "@q ld.global.nc.v2.u32 {%0, %1}, [%2];\n}\n"
               : "=r"(v.x), "=r"(v.y)
               : "l"(p), "r"((int)ok), "r"(otherwise));
  return v;
}

/* The word at byte o of an input row whose words do not all start at word
 * boundaries, byte by byte, the pad byte outside the row. */
__device__ __forceinline__ unsigned row_bytes_word(const unsigned char *__restrict__ row, int o,
                                                   unsigned pad) {
  unsigned v = 0;
#pragma unroll
  for (int q = 0; q < 4; q++)
    v |= (o + q >= 0 && o + q < ROWW ? (unsigned)__ldg(row + o + q) : pad) << (8 * q);
  return v;
}

/* ROW_PACK: part h's first window row and how many rows its bytes cover
 * (0 where they are all padding), and the most of any part */
__host__ __device__ constexpr int part_row0(int h) {
  return h * PART_BYTES / ROW_BYTES < CT_KH ? h * PART_BYTES / ROW_BYTES : CT_KH - 1;
}
__host__ __device__ constexpr int part_rows(int h) {
  return h * PART_BYTES >= STAGE_BYTES ? 0
         : ((h + 1) * PART_BYTES - 1) / ROW_BYTES < CT_KH
             ? ((h + 1) * PART_BYTES - 1) / ROW_BYTES - h * PART_BYTES / ROW_BYTES + 1
             : CT_KH - h * PART_BYTES / ROW_BYTES;
}
__host__ __device__ constexpr int rows_a() {
  return !ROW_PACK                             ? ROWS_PER_THREAD
         : part_rows(0) > part_rows(PARTS - 1) ? part_rows(0)
                                               : part_rows(PARTS - 1);
}
#define ROWS_A (rows_a())
#define RWORDS ((ROW_BYTES + 3) / 4) /* a window row's words from its first byte */

/* A stage's loaded words and shift, between load_a and store_a. */
struct a_words {
  unsigned wv[ROWS_A][NWORDS + 1];
  int sh;
};

/* Stage td (the depth tap) of the tile from output pixel m0 into the A
 * buffer at as (build_a: load_a, then store_a; with a_prefetch the kernel
 * runs load_a for its next tile before this tile's epilogue and store_a
 * after it, so that the loads' latency passes under the epilogue, at the
 * cost of the words' registers held through it): thread wtid takes pixel
 * wtid % block_m and its window rows wtid / block_m, + 128 / block_m, ...
 * Every word of those rows is loaded before any is used (one memory
 * latency per stage, not per row); where rows start at word boundaries a
 * word is wholly inside its row or outside it, and one outside (or in a
 * row outside the input) is the pad word, by a predicated load.
 *
 * The stage is most of the kernel's instructions, so its arithmetic is
 * 32-bit (the pixel and the input row: valid() keeps both counts below
 * 2^31) and each row has one address, base + its row times ROWW, from
 * which every word of the row is an immediate offset: one load, one
 * predicate and one move of the pad word per word. */
template <int PART>
__device__ __forceinline__ void load_a_part(a_words &aw, const unsigned char *__restrict__ data,
                                            long m0, int td, unsigned pad, int wtid) {
  const int p = wtid % BLOCK_M;
  unsigned m = (unsigned)m0 + (unsigned)p;
  if (m >= (unsigned)M_TOTAL) m = (unsigned)M_TOTAL - 1u; /* a pixel that exists; not stored */
  const int ow = (int)(m % CT_OW);
  const unsigned m1 = m / CT_OW;
  const int oh = (int)(m1 % CT_OH);
  const unsigned m2 = m1 / CT_OH;
  const int od = (int)(m2 % CT_OD), n = (int)(m2 / CT_OD);
  const int z = od * CT_STR_D - CT_PAD_D + td * CT_DIL_D;
  const int y0 = oh * CT_STR_H - CT_PAD_H;
  const int o = (ow * CT_STR_W - CT_PAD_W) * C_IN; /* the window row's first byte in its input row */
  const int oal = ROW_ALIGNED ? o & ~3 : o;        /* o & ~3: down, also below 0 */
  const int oal8 = o & ~7;                         /* GATHER8: the first byte's piece */
  const bool hi = oal != oal8;                     /* ... whose second word is oal's */
  aw.sh = 8 * (o - oal);
  const bool zin = (unsigned)z < (unsigned)CT_ID;
  /* input row y0 of depth z (of a depth inside: an address that exists) */
  const unsigned row0 = ((unsigned)n * CT_ID + (unsigned)(zin ? z : 0)) * CT_IH;
  const unsigned padw = pad * 0x01010101u;
  /* byte oal (GATHER8: oal8) of input row 0 */
  const unsigned char *const base = data + (GATHER8 ? oal8 : oal);
  /* which of the row's words (pieces) lie inside it: the same for every row */
  bool wok[NWORDS], pok[NPIECES];
#pragma unroll
  for (int q = 0; q < NWORDS; q++) wok[q] = (unsigned)(oal + 4 * q) < (unsigned)ROWW;
#pragma unroll
  for (int q = 0; q < NPIECES; q++) pok[q] = (unsigned)(oal8 + 8 * q) < (unsigned)ROWW;
  (void)wok, (void)pok, (void)hi;
  unsigned(&wv)[ROWS_A][NWORDS + 1] = aw.wv;
#pragma unroll
  for (int j = 0; j < (PART < 0 ? ROWS_PER_THREAD : part_rows(PART)); j++) {
    /* rows: interleaved over the pixel's threads, or (ROW_PACK) the part's */
    const int r = PART < 0 ? wtid / BLOCK_M + j * (128 / BLOCK_M) : part_row0(PART) + j;
    const int y = y0 + r * CT_DIL_H;
    const bool in = (PART >= 0 || !((BLOCK_M * CT_KH) % 128) || r < CT_KH) && zin &&
                    (unsigned)y < (unsigned)CT_IH;
    /* the row's byte oal; a row outside reads none of it */
    const unsigned char *row = base + (size_t)(row0 + (in ? (unsigned)y : 0u)) * ROWW;
    if (GATHER8) {
      /* 8 bytes a load (fewer requests through L1, which the gathers and
       * the 8-bit slabs keep busy), then each word from oal's on: one
       * select a word */
      unsigned w[2 * NPIECES];
#pragma unroll
      for (int q = 0; q < NPIECES; q++) {
        const uint2 v = ldg2_or((const uint2 *)row + q, in && pok[q], padw);
        w[2 * q] = v.x, w[2 * q + 1] = v.y;
      }
#pragma unroll
      for (int q = 0; q < NWORDS; q++) wv[j][q] = hi ? w[q + 1] : w[q];
    } else {
#pragma unroll
      for (int q = 0; q < NWORDS; q++) {
        if (ROW_ALIGNED) {
          wv[j][q] = ldg_or((const unsigned *)row + q, in && wok[q], padw);
        } else {
          wv[j][q] = in ? row_bytes_word(row - oal, oal + 4 * q, pad) : padw;
        }
      }
    }
    wv[j][NWORDS] = 0;
  }
}

/* The words of load_a into the A buffer at as: nothing waits for the loads
 * before this. One k32 step (or RSTEPS) a window row. */
__device__ __forceinline__ void store_a_rows(unsigned as, const a_words &aw, int wtid) {
  const int p = wtid % BLOCK_M, sh = aw.sh;
  const unsigned(&wv)[ROWS_A][NWORDS + 1] = aw.wv;
#pragma unroll
  for (int j = 0; j < ROWS_PER_THREAD; j++) {
    const int r = wtid / BLOCK_M + j * (128 / BLOCK_M);
    if ((BLOCK_M * CT_KH) % 128 && r >= CT_KH) break;
    /* the window row's words from its first byte; past the row, whatever
     * (they meet zero weights), zero past the last word that holds some */
#pragma unroll
    for (int rs = 0; rs < RSTEPS; rs++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        unsigned c[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int k = 8 * rs + 4 * h + e, k0 = k < NWORDS ? k : NWORDS;
          c[e] = 4 * k < ROW_BYTES
                     ? __funnelshift_r(wv[j][k0], wv[j][k0 + 1 <= NWORDS ? k0 + 1 : NWORDS], sh)
                     : 0u;
        }
        st_shared16(as + (r * RSTEPS + rs) * SLAB_A + km_off(p, h), c);
      }
  }
}

/* ROW_PACK: part PART of the stage (bytes PART x PART_BYTES on, whole
 * 16-byte chunks) from the words of load_a_part<PART>: each row's words
 * from the window's first byte (one funnel shift each, as store_a_rows),
 * then each stage word from its row's words at a constant offset, or
 * (straddling two rows) one PRMT of the two; zero past the stage. */
template <int PART>
__device__ __forceinline__ void store_a_packed(unsigned as, const a_words &aw, int wtid) {
  const int p = wtid % BLOCK_M, sh = aw.sh;
  constexpr int R0 = part_row0(PART), NR = part_rows(PART) > 0 ? part_rows(PART) : 1;
  unsigned rw[NR][RWORDS + 1];
#pragma unroll
  for (int j = 0; j < NR; j++) {
#pragma unroll
    for (int k = 0; k < RWORDS; k++) /* a part of padding alone loaded nothing */
      rw[j][k] = part_rows(PART) > 0 ? __funnelshift_r(aw.wv[j][k], aw.wv[j][k + 1], sh) : 0u;
    rw[j][RWORDS] = 0;
  }
#pragma unroll
  for (int c = 0; c < PART_BYTES / 16; c++) {
    const int b16 = PART * PART_BYTES + 16 * c; /* the chunk's first byte in the stage */
    unsigned v[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int b = b16 + 4 * e, r = b / ROW_BYTES, o = b % ROW_BYTES, j = r - R0;
      v[e] = 0;
      if (b < STAGE_BYTES) {
        const unsigned lo =
            o % 4 ? __funnelshift_r(rw[j][o / 4], rw[j][o / 4 + 1], 8 * (o % 4)) : rw[j][o / 4];
        if (o + 4 <= ROW_BYTES) {
          v[e] = lo;
        } else { /* n bytes of row r, then the next row's first (zero past the stage) */
          const int n = ROW_BYTES - o;
          const unsigned hi = r + 1 < CT_KH ? rw[j + 1 < NR ? j + 1 : j][0] : 0u;
          v[e] = __byte_perm(lo, hi, n == 1 ? 0x6540u : n == 2 ? 0x5410u : 0x4210u);
        }
      }
    }
    st_shared16(as + (b16 / 32) * SLAB_A + km_off(p, (b16 / 16) & 1), v);
  }
}

/* A stage's words: ROW_PACK's part of the pixel's threads (a constant
 * per warp: block_m 64 gives threads 0-63 the first, 64-127 the second),
 * else the interleaved rows. */
__device__ __forceinline__ void load_a(a_words &aw, const unsigned char *__restrict__ data, long m0,
                                       int td, unsigned pad, int wtid) {
#if ROW_PACK
  if (PARTS == 1 || wtid < BLOCK_M)
    load_a_part<0>(aw, data, m0, td, pad, wtid);
  else
    load_a_part<PARTS - 1>(aw, data, m0, td, pad, wtid);
#else
  load_a_part<-1>(aw, data, m0, td, pad, wtid);
#endif
}
__device__ __forceinline__ void store_a(unsigned as, const a_words &aw, int wtid) {
#if ROW_PACK
  if (PARTS == 1 || wtid < BLOCK_M)
    store_a_packed<0>(as, aw, wtid);
  else
    store_a_packed<PARTS - 1>(as, aw, wtid);
#else
  store_a_rows(as, aw, wtid);
#endif
}

__device__ __forceinline__ void build_a(unsigned as, const unsigned char *__restrict__ data,
                                        long m0, int td, unsigned pad, int wtid) {
  a_words aw;
  load_a(aw, data, m0, td, pad, wtid);
  store_a(as, aw, wtid);
}

/* m64n32k32 (block_n 32), wgmma_ptx.cuh's _ss form. Here and not there:
 * a template's version hashes its sources, and a change to wgmma_ptx.cuh
 * would retire every wgmma template's tuned records, not the stems'. */
__device__ __forceinline__ void wgmma_ss_n32(int *d, unsigned long long a, unsigned long long b,
                                             int scale_d = 1) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n" WGMMA_OP(
          "m64n32k32") "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                       "%16, %17, p;\n}\n"
      : WG_D8(0), WG_D8(8)
      : "l"(a), "l"(b), "r"(scale_d)
      : "memory");
}
/* acc = (acc if accumulate) + A x B */
__device__ __forceinline__ void wgmma_ss(int *acc, unsigned long long a, unsigned long long b,
                                         int accumulate) {
#if BLOCK_N == 32
  wgmma_ss_n32(acc, a, b, accumulate);
#elif BLOCK_N == 64
  wgmma_ss_n64(acc, a, b, accumulate);
#elif BLOCK_N == 128
  wgmma_ss_n128(acc, a, b, accumulate);
#else
  wgmma_ss_n256(acc, a, b, accumulate);
#endif
}

/* ---- the kernel ---------------------------------------------------------- */
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    conv_wgmma_stem(const unsigned char *__restrict__ data,
                    const unsigned char *__restrict__ weights, void *__restrict__ out,
                    const int *__restrict__ params, const void *__restrict__ residual
#if OUT_TMA
                    ,
                    const __grid_constant__ ct_tmap omap
#endif
    ) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned raw = smem_addr(smem_raw), base = (raw + 1023u) & ~1023u;
  const int tid = threadIdx.x, wg = tid >> 7, wtid = tid & 127;
  const int n0 = blockIdx.y * BLOCK_N;
  const unsigned abase = base + B_BYTES + OST_BYTES; /* the A buffers, first the raw weights */
#if OUT_TMA
  /* the map's descriptor, a kernel parameter, fetched before the wait */
  if (tid == 0)
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)&omap) : "memory");
  /* this warpgroup's output staging */
  unsigned char *const ost = smem_raw + (base - raw) + B_BYTES + wg * OST_WG;
  (void)out, (void)residual;
#endif
  pdl_wait_then_release(); /* nothing global before: the previous kernel may still run */
#if CT_ZD
  const unsigned pad = (unsigned)params[CTQ_PAD_WORD] & 0xffu;
#else
  const unsigned pad = 0;
#endif
  const q_head qh = load_head(params);
  /* this warpgroup's channel table (8-bit output): the block's channels;
   * its warps' slabs after it (out_stage) */
  unsigned char *tab = smem_raw + (abase - raw) + SCRATCH_BYTES + wg * EPI_WG_BYTES;
  if (CT_OUT != 0) chan_tab_fill(tab, params, qh, n0, wtid);
  load_raw(smem_raw + (abase - raw), weights, n0);
  __syncthreads();
  make_b(base, smem_raw + (abase - raw), n0);
  fence_proxy_async(); /* the weights' slabs, written by threads, read by wgmma */
  __syncthreads();     /* and the raw bytes read before the A buffers overwrite them */

  /* warpgroup wg of block b takes tiles b * warpgroups + wg, then on by
   * every warpgroup of the grid; each tile in KD stages (depth taps) */
  const long nwg = (long)gridDim.x * WARPGROUPS;
  long tile = (long)blockIdx.x * WARPGROUPS + wg;
  if (tile >= TILES_M) return;
  const unsigned ab = abase + wg * (A_BUFFERS * A_BUF);
  int acc[MI][BLOCK_N / 2]; /* a tile's first wgmmas overwrite them (scale_d 0) */
  int buf = 0;
  a_words nxt; /* a_prefetch: the next tile's first stage, loaded before this tile's epilogue */
  (void)nxt;
  build_a(ab, data, tile * BLOCK_M, 0, pad, wtid);
#pragma unroll 1
  for (;;) {
    /* the tile's stages: nothing but wgmma touches the accumulators in
     * this loop, so that ptxas keeps the wgmmas asynchronous */
    long ntile = tile + nwg;
#pragma unroll 1
    for (int td = 0; td < CT_KD; td++) {
      fence_proxy_async(); /* this thread's A chunks, seen by wgmma */
      wg_bar(wg);          /* ... and every thread's */
      const unsigned as = ab + buf * A_BUF, bs = base + td * CK * SLAB_B;
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < CK; k++)
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
          wgmma_ss(acc[mi], km_desc(as + k * SLAB_A + mi * 64 * 32), km_desc(bs + k * SLAB_B),
                   k > 0 || td > 0);
      wgmma_commit();
      /* the next stage: this tile's next depth tap, or the next tile's first
       * (a_prefetch: its loads now, its stores after the epilogue) */
      const bool inner = td + 1 < CT_KD;
      if (A_PREFETCH && !inner && ntile < TILES_M) load_a(nxt, data, ntile * BLOCK_M, 0, pad, wtid);
      if (A_BUFFERS == 2 && (inner || (!A_PREFETCH && ntile < TILES_M))) {
        /* the other buffer, once the stage before this one has read it
         * (every warp's wgmmas: the barrier) */
        wgmma_wait<1>();
        wg_bar(wg);
        build_a(ab + (buf ^ 1) * A_BUF, data, inner ? tile * BLOCK_M : ntile * BLOCK_M,
                inner ? td + 1 : 0, pad, wtid);
        buf ^= 1;
      }
      if (A_BUFFERS == 1 && inner) {
        wgmma_wait<0>();
        wg_bar(wg); /* every warp's wgmmas have read the buffer */
        build_a(ab, data, tile * BLOCK_M, td + 1, pad, wtid);
      }
    }
    wgmma_wait<0>();
    acc_fence(acc);
#if OUT_TMA
    if (wtid == 0) bulk_wait_all<1>(); /* the last tile's stores have read the staging */
    wg_bar(wg);
    tile_stage32(acc, ost, blockIdx.y, params, qh, wtid);
    fence_proxy_async(); /* this thread's values, seen by the stores */
    wg_bar(wg);          /* ... and every thread's */
    if (wtid == 0) {
#pragma unroll
      for (int b = 0; b < BLOCK_N / 32; b++)
        if (n0 + 32 * b < CT_KR)
          tma_store2(&omap, n0 + 32 * b, (int)(tile * BLOCK_M), smem_addr(ost) + b * (BLOCK_M * 128));
      bulk_commit();
    }
#else
    tile_epilogue(acc, tile * BLOCK_M, 0, blockIdx.y, 0, params, qh, tab, residual, out, wtid);
#endif
    if (ntile >= TILES_M) break;
    if (A_PREFETCH) {
      wg_bar(wg); /* every warp's wgmmas have read the buffers */
      store_a(ab + (A_BUFFERS == 2 ? buf ^ 1 : 0) * A_BUF, nxt, wtid);
      if (A_BUFFERS == 2) buf ^= 1;
    } else if (A_BUFFERS == 1) {
      wg_bar(wg); /* every warp's wgmmas have read the buffer */
      build_a(ab, data, ntile * BLOCK_M, 0, pad, wtid);
    }
    tile = ntile;
  }
#if OUT_TMA
  if (wtid == 0) bulk_wait_all<0>(); /* the stores done before the block's end */
#endif
}
