/*
 * conv_grouped_packed.cuh: the body of conv2d_nchw4c_grouped and
 * conv3d_ncdhw4c_grouped, grouped and depthwise int8 convolution on the
 * CUDA cores in the packed layout (conv2d is the D = 1 case).
 *
 * Data [N][C/4][D][H][W][4] int8 (or uint8), weights pack_oi4o4i(K, C/G):
 * [K/4][CW = ceil((C/G)/4)][kvol][4 out][4 in], lanes beyond C/G zero;
 * output [N][K/4][D][H][W][4], int32 or 8-bit through the epilogue of
 * conv_dp4a (quant.cuh). Output channel k is of group g = k / KPG and reads
 * input channels g * CPG .. g * CPG + CPG - 1, which need not start on a
 * word (CPG % 4 != 0) and may differ between the 4 lanes of an output word.
 *
 * One form serves every G: output word f reads NWIN consecutive data words
 * from J(f) = (4f / KPG) * CPG / 4, the first word of lane 0's group (NWIN,
 * the most any word spans, is the descriptor's). For each of them each
 * lane has an aligned weight word whose byte b multiplies byte b of the
 * data word: the lane's weight of that input channel, 0 where the channel
 * is not the lane's. Aligned words are funnel shifts of the packed ones
 * (the lane's channels start delta = g * CPG - 4 J(f) bytes into the
 * window), made once per block into shared memory. Then every case is one
 * dp4a per lane and window word: with CPG % 4 == 0 and KPG % 4 == 0 the
 * aligned words are the packed words (dp4a on whole words); depthwise with
 * multiplier 1 is one data word against 4 one-byte weight words (a byte
 * multiply-add per lane, one instruction).
 *
 * A block: one image, TILE_D x TILE_H x TILE_W output pixels, BLOCK_F
 * output words; a thread: PIX consecutive pixels along W of THREAD_F
 * words. Its PIX pixels' taps along W share one row window of RW words
 * held in registers (loaded once per row, used KW x PIX times). STAGE 1
 * loads the block's input halo of every window word into shared memory
 * first; STAGE 0 reads global memory (L1) directly. Outputs past the
 * extents are computed and not stored (tiles need not divide them).
 * Cost per output word and tap: NWIN x 4 dp4a, NWIN data words.
 */
#include "quant.cuh"

#ifndef CT_N
#error "conv_grouped_packed.cuh: compile through convtune: every shape and knob is a -D macro"
#endif

#include "conv_shape.cuh"

#if !CT_TEMPLATE_CONV3D
static_assert(TILE_D == 1, "conv2d: tile_d must be 1");
#endif
static_assert(CT_G > 1 && CT_CPG * CT_G == 4 * CT_C4 && CT_KPG * CT_G == CT_KR,
              "groups must divide C and K");
static_assert(CT_KR == 4 * CT_K4, "grouped packed: K must be a multiple of 4");
static_assert(CT_CW == (CT_CPG + 3) / 4, "CT_CW must be ceil(C/G / 4)");
static_assert(CT_D2S == 0, "grouped packed: no depth_to_space");
static_assert(NWIN >= 1 && NWIN <= CT_C4, "NWIN: 1 to C/4 window words");
static_assert(JB >= NWIN && JB <= CT_C4, "JB: the staged words, NWIN to C/4");
static_assert(PIX >= 1 && TILE_W % PIX == 0, "pix must divide tile_w");
static_assert(THREAD_F >= 1 && BLOCK_F % THREAD_F == 0, "thread_f must divide block_f");
static_assert(TILE_D >= 1 && TILE_H >= 1, "tiles must be positive");
static_assert(STAGE == 0 || STAGE == 1, "stage is 0 (direct loads) or 1 (halo in shared memory)");
static_assert(W_SHARED == 0 || W_SHARED == 1, "W_SHARED is 0 or 1");
static_assert(BLOCKS_PER_SM >= 1, "blocks_per_sm is at least 1");

#define KVOL (CT_KD * CT_KH * CT_KW)
#define TX (TILE_W / PIX)
#define TF (BLOCK_F / THREAD_F)
#define THREADS (TX * TILE_H * TILE_D * TF)
static_assert(THREADS == CT_THREADS, "CT_THREADS does not match the tiles");
static_assert(THREADS >= 1 && THREADS <= 1024, "threads per block must be 1 to 1024");
/* A thread's row window along W: its PIX pixels' taps. Beyond RW_MAX words
 * the taps are loaded one by one (no register window). */
#define RW ((PIX - 1) * CT_STR_W + (CT_KW - 1) * CT_DIL_W + 1)
#define RW_MAX 32
/* The block's input halo (STAGE 1). */
#define HD ((TILE_D - 1) * CT_STR_D + (CT_KD - 1) * CT_DIL_D + 1)
#define HH ((TILE_H - 1) * CT_STR_H + (CT_KH - 1) * CT_DIL_H + 1)
#define HW ((TILE_W - 1) * CT_STR_W + (CT_KW - 1) * CT_DIL_W + 1)
/* Shared memory, in ints: aligned weights [BLOCK_F][KVOL][NWIN][4] (when
 * W_SHARED), the weight-zero-point masks [BLOCK_F][NWIN][4], the halo
 * [JB][HD][HH][HW]. */
#define W_WORDS (W_SHARED ? BLOCK_F * KVOL * NWIN * 4 : 0)
#define M_WORDS (CT_WZP ? BLOCK_F * NWIN * 4 : 0)
#define A_WORDS (STAGE ? JB * HD * HH * HW : 0)
static_assert(4L * (W_WORDS + M_WORDS + A_WORDS) == CT_SMEM_BYTES,
              "CT_SMEM_BYTES does not match the shared tiles");
#define NTX ((CT_OW + TILE_W - 1) / TILE_W)
#define NTY ((CT_OH + TILE_H - 1) / TILE_H)
#define NTD ((CT_OD + TILE_D - 1) / TILE_D)

#define CT_PRAGMA(x) _Pragma(#x)
/* Window words and kernel rows: unrolled when few (the accumulators are
 * indexed by constants either way). */
#if NWIN <= 4
#define UNROLL_WIN CT_PRAGMA(unroll)
#else
#define UNROLL_WIN CT_PRAGMA(unroll 1)
#endif
#if CT_KW <= 16
#define UNROLL_KX CT_PRAGMA(unroll)
#else
#define UNROLL_KX CT_PRAGMA(unroll 1)
#endif

/* a . b + c over 4 byte lanes: data lanes signed, or unsigned for uint8
 * data (dp4a.u32.s32: the weights stay signed). */
__device__ __forceinline__ int gp_dp4a(int a, int b, int c) {
#if CT_DATA_U8
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  return __dp4a(a, b, c);
#endif
}

/* The first data word output word f reads: lane 0's group's first channel,
 * in words. */
__device__ __forceinline__ int gp_jbase(int f) {
  return (4 * f / CT_KPG) * CT_CPG / 4;
}

/* 0xff in the bytes of packed word q (input channels 4q .. 4q+3 of a
 * group) that are real channels, 0 for q out of [0, CW). */
__device__ __forceinline__ unsigned gp_lanes(int q) {
  if (q < 0 || q >= CT_CW) return 0u;
  const int n = CT_CPG - 4 * q; /* real channels in the word, >= 1 */
  return n >= 4 ? 0xffffffffu : (1u << (8 * n)) - 1u;
}

/* The aligned word of output channel k = 4f + l for window word t: byte b
 * holds packed word q's byte (b - dr) mod 4 for the funnel of P[t - dq]
 * and P[t - dq - 1], delta = 4 dq + dr = g CPG - 4 J(f). p(q) gives the
 * packed word q (masked to real channels; 0 outside [0, CW)). */
template <typename P>
__device__ __forceinline__ unsigned gp_align(int f, int l, int t, P p) {
  const int g = (4 * f + l) / CT_KPG;
  const int delta = g * CT_CPG - 4 * gp_jbase(f);
  const int q = t - delta / 4, dr = delta % 4;
  const unsigned hi = p(q), lo = p(q - 1);
  return dr ? (hi << (8 * dr)) | (lo >> (32 - 8 * dr)) : hi;
}

/* Aligned weight word of (f, l, t, tap), from the packed weights. */
__device__ __forceinline__ int gp_weight(const int *__restrict__ weights, int f, int l, int t,
                                         int tap) {
  if (f >= CT_K4) return 0; /* a partial block's words past K */
  return (int)gp_align(f, l, t, [&](int q) -> unsigned {
    const unsigned m = gp_lanes(q);
    return m ? (unsigned)weights[(((long)f * CT_CW + q) * KVOL + tap) * 4 + l] & m : 0u;
  });
}

/* 0x01 in the bytes of window word t that are output channel (f, l)'s
 * input channels: a dp4a against it sums the lane's raw data. */
__device__ __forceinline__ int gp_mask(int f, int l, int t) {
  if (f >= CT_K4) return 0;
  return (int)gp_align(f, l, t, [](int q) -> unsigned { return gp_lanes(q) & 0x01010101u; });
}

#if CT_OUT != 0
__device__ __forceinline__ unsigned gp_requant(const int *__restrict__ params, int k, int v,
                                               unsigned rb) {
  return ctq_requant_lane(params, 4 * CT_K4, k, v, rb, CT_QC, CT_OUT == 2, CT_RES, CT_ONNX);
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    conv_grouped(const int *__restrict__ data, const int *__restrict__ weights,
                 void *__restrict__ out, const int *__restrict__ params,
                 const void *__restrict__ residual) {
  extern __shared__ int4 smem[];
  int *const w_sh = (int *)smem;         /* [BLOCK_F][KVOL][NWIN][4] */
  int *const m_sh = w_sh + W_WORDS;      /* [BLOCK_F][NWIN][4] */
  int *const a_sh = m_sh + M_WORDS;      /* [JB][HD][HH][HW] */
  (void)w_sh, (void)m_sh, (void)a_sh;

  /* Thread coordinates: W fastest, so that a warp's loads and stores run
   * along a row. */
  int t = threadIdx.x;
  const int tx = t % TX; t /= TX;
  const int ty = t % TILE_H; t /= TILE_H;
  const int td = t % TILE_D;
  const int tf = t / TILE_D;
  /* Block coordinates: x the image and the spatial tile, y the words. */
  long b = blockIdx.x;
  const int bx = (int)(b % NTX); b /= NTX;
  const int by = (int)(b % NTY); b /= NTY;
  const int bd = (int)(b % NTD);
  const int n = (int)(b / NTD);
  const int f0 = blockIdx.y * BLOCK_F;
  const int od0 = bd * TILE_D, oh0 = by * TILE_H, ow0 = bx * TILE_W;
  const int od = od0 + td, oh = oh0 + ty, owt = ow0 + tx * PIX; /* the thread's first pixel */
  const int j0 = gp_jbase(f0 < CT_K4 ? f0 : CT_K4 - 1);          /* the block's first data word */
#if CT_ZD
  const int pad_word = params[CTQ_PAD_WORD]; /* padding reads the zero point */
#else
  const int pad_word = 0;
#endif

#if W_SHARED
  for (int i = threadIdx.x; i < W_WORDS; i += THREADS) {
    int r = i;
    const int l = r % 4; r /= 4;
    const int tw = r % NWIN; r /= NWIN;
    const int tap = r % KVOL;
    const int fl = r / KVOL;
    w_sh[i] = gp_weight(weights, f0 + fl, l, tw, tap);
  }
#endif
#if CT_WZP
  for (int i = threadIdx.x; i < M_WORDS; i += THREADS) {
    const int l = i % 4, tw = (i / 4) % NWIN, fl = i / (4 * NWIN);
    m_sh[i] = gp_mask(f0 + fl, l, tw);
  }
#endif
#if STAGE
  {
    const int id0 = od0 * CT_STR_D - CT_PAD_D, ih0 = oh0 * CT_STR_H - CT_PAD_H;
    const int iw0 = ow0 * CT_STR_W - CT_PAD_W;
    for (int i = threadIdx.x; i < A_WORDS; i += THREADS) {
      int r = i;
      const int x = r % HW; r /= HW;
      const int y = r % HH; r /= HH;
      const int z = r % HD;
      const int jj = r / HD;
      const int j = j0 + jj < CT_C4 ? j0 + jj : CT_C4 - 1;
      const int id = id0 + z, ih = ih0 + y, iw = iw0 + x;
      int v = pad_word;
      if (id >= 0 && id < CT_ID && ih >= 0 && ih < CT_IH && iw >= 0 && iw < CT_IW)
        v = data[(((long)(n * CT_C4 + j) * CT_ID + id) * CT_IH + ih) * CT_IW + iw];
      a_sh[i] = v;
    }
  }
#endif
  __syncthreads();

  /* The thread's words: f = f0 + tf * THREAD_F + i; their first data words
   * (clamped: a word past K has zero weights and reads any word). */
  int jb[THREAD_F];
#pragma unroll
  for (int i = 0; i < THREAD_F; i++) {
    const int f = f0 + tf * THREAD_F + i;
    jb[i] = gp_jbase(f < CT_K4 ? f : CT_K4 - 1);
  }
  int acc[THREAD_F][PIX][4];
#if CT_WZP
  int xs[THREAD_F][PIX][4]; /* each lane's raw data over its window */
#endif
#pragma unroll
  for (int i = 0; i < THREAD_F; i++)
#pragma unroll
    for (int p = 0; p < PIX; p++)
#pragma unroll
      for (int l = 0; l < 4; l++) {
        acc[i][p][l] = 0;
#if CT_WZP
        xs[i][p][l] = 0;
#endif
      }

#pragma unroll 1
  for (int kd = 0; kd < CT_KD; kd++)
#pragma unroll 1
    for (int ky = 0; ky < CT_KH; ky++) {
      const int id = od * CT_STR_D - CT_PAD_D + kd * CT_DIL_D;
      const int ih = oh * CT_STR_H - CT_PAD_H + ky * CT_DIL_H;
      const int iw0 = owt * CT_STR_W - CT_PAD_W; /* the row window's first column */
      const bool row_in = id >= 0 && id < CT_ID && ih >= 0 && ih < CT_IH;
#pragma unroll
      for (int i = 0; i < THREAD_F; i++) {
        const int fl = tf * THREAD_F + i;
        UNROLL_WIN
        for (int tw = 0; tw < NWIN; tw++) {
          const int j = jb[i] + tw < CT_C4 ? jb[i] + tw : CT_C4 - 1;
          /* word x of the row window (column iw0 + x) */
#if STAGE
          const int *const row =
              a_sh + (((j - j0) * HD + td * CT_STR_D + kd * CT_DIL_D) * HH + ty * CT_STR_H +
                      ky * CT_DIL_H) * HW + tx * PIX * CT_STR_W;
#define GP_WORD(x) (row[(x)])
#else
          const int *const row = data + (((long)(n * CT_C4 + j) * CT_ID + id) * CT_IH + ih) * CT_IW;
#define GP_WORD(x)                                                                                 \
  (row_in && iw0 + (x) >= 0 && iw0 + (x) < CT_IW ? __ldg(row + iw0 + (x)) : pad_word)
#endif
#if RW <= RW_MAX
          int rw[RW];
#pragma unroll
          for (int x = 0; x < RW; x++) rw[x] = GP_WORD(x);
#define GP_TAP(p, kx) rw[(p) * CT_STR_W + (kx) * CT_DIL_W]
#else
#define GP_TAP(p, kx) GP_WORD((p) * CT_STR_W + (kx) * CT_DIL_W)
#endif
#if CT_WZP
          int mk[4];
#pragma unroll
          for (int l = 0; l < 4; l++) mk[l] = m_sh[(fl * NWIN + tw) * 4 + l];
#endif
          UNROLL_KX
          for (int kx = 0; kx < CT_KW; kx++) {
            const int tap = (kd * CT_KH + ky) * CT_KW + kx;
            int wv[4];
#if W_SHARED
            const int4 w4 = ((const int4 *)w_sh)[(fl * KVOL + tap) * NWIN + tw];
            wv[0] = w4.x, wv[1] = w4.y, wv[2] = w4.z, wv[3] = w4.w;
#else
#pragma unroll
            for (int l = 0; l < 4; l++) wv[l] = gp_weight(weights, f0 + fl, l, tw, tap);
#endif
#pragma unroll
            for (int p = 0; p < PIX; p++) {
              const int a = GP_TAP(p, kx);
#pragma unroll
              for (int l = 0; l < 4; l++) {
                acc[i][p][l] = gp_dp4a(a, wv[l], acc[i][p][l]);
#if CT_WZP
                xs[i][p][l] = gp_dp4a(a, mk[l], xs[i][p][l]);
#endif
              }
            }
          }
#undef GP_TAP
#undef GP_WORD
        }
      }
    }

  /* Store: per pixel and word, 4 lanes through the epilogue; one int4
   * (int32) or one int (8-bit). */
  if (od >= CT_OD || oh >= CT_OH) return;
#pragma unroll
  for (int i = 0; i < THREAD_F; i++) {
    const int f = f0 + tf * THREAD_F + i;
    if (f >= CT_K4) continue;
#pragma unroll
    for (int p = 0; p < PIX; p++) {
      const int ow = owt + p;
      if (ow >= CT_OW) continue;
      int v[4];
#pragma unroll
      for (int l = 0; l < 4; l++) {
        v[l] = acc[i][p][l];
#if CT_OFF || CT_WZP
        const int k = f * 4 + l;
        v[l] = ctq_correct(v[l], CT_OFF ? params[CTQ_HEADER + CTQ_OFF * 4 * CT_K4 + k] : 0,
                           CT_WZP ? params[CTQ_HEADER + CTQ_ZW * 4 * CT_K4 + k] : 0,
#if CT_WZP
                           xs[i][p][l]
#else
                           0
#endif
        );
#endif
      }
      const long pos = (((long)(n * CT_K4 + f) * CT_OD + od) * CT_OH + oh) * CT_OW + ow;
#if CT_OUT == 0
      ((int4 *)out)[pos] = make_int4(v[0], v[1], v[2], v[3]);
#else
      const unsigned rword = CT_RES ? ((const unsigned *)residual)[pos] : 0u;
      unsigned word = 0;
#pragma unroll
      for (int l = 0; l < 4; l++)
        word |= gp_requant(params, f * 4 + l, v[l], (rword >> (8 * l)) & 0xffu) << (8 * l);
      ((unsigned *)out)[pos] = word;
#endif
    }
  }
}
