/*
 * conv_dw_ring.cuh: the body of conv2d_nhwc_dw_ring: depthwise int8 conv2d,
 * channels-last, multiplier 1, the multiply-adds on dp4a as
 * conv_dw_nhwc.cuh's mac 1 (whose helpers it includes, with DW_RING set),
 * the input streamed through a ring of rows in shared memory.
 *
 * Why: conv_dw_nhwc.cuh's mac 1 holds a thread's whole window in
 * registers, so the loads in flight an SM are bounded by the registers;
 * on the large 3x3 layers it waits on them at a fifth of the warps (ncu,
 * bench/results/h200-issue35). Here cp.async moves the rows into shared
 * memory, AHEAD steps ahead of the compute, without holding registers.
 *
 * A block: BLOCK_C x BLOCK_W threads (channels fastest), a strip of
 * TILE_W = BLOCK_W x PIX output columns and BLOCK_C x CHANS channels over
 * STRIP = STEPS x ROWS output rows, walked a step (ROWS rows) at a time.
 * A step reads HROW input rows of the strip's window (WWW pixels x CWB
 * bytes each, padding included) from the ring; consecutive steps share
 * HROW - SADV of them. The ring holds SLOTS = HROW + (AHEAD + 1) x SADV
 * rows: those of steps s - 1 .. s + AHEAD, so that the copies issued at
 * step s (for step s + AHEAD) land in rows no thread still reads (a thread
 * may be in step s - 1; every thread has left step s - 2, as each passed
 * step s - 1's barrier). One commit group a step (empty past the strip):
 * wait_group AHEAD then the barrier make step s's rows visible. Padding
 * and channels past C are written by plain stores (the data zero point's
 * bytes), before the same barrier.
 *
 * Every thread copies and meets the barriers; a thread whose channels or
 * columns lie past the layer computes and stores nothing. The filters and
 * the params are no kernel's output: they load before the PDL wait.
 */
#define DW_RING 1
#include "conv_dw_nhwc.cuh"

static_assert(CT_KD == 1 && CT_OD == 1 && DEPTHS == 1, "the ring runs conv2d, one plane a thread");
static_assert(MAC == 1 && MODE == 0 && DW_M == 1, "the ring: dp4a (mac 1), multiplier 1");
static_assert(BLOCK_H == 1 && STAGING == 0, "the ring: a block is one row of threads");
static_assert(STEPS >= 1 && AHEAD >= 1 && AHEAD <= 6, "steps >= 1, ahead 1 to 6");

#define SADV  (ROWS * CT_STR_H)               /* input rows a step advances */
#define STRIP (STEPS * ROWS)                  /* output rows a block */
#define SLOTS (HROW + (AHEAD + 1) * SADV)     /* the ring's rows */
#define RB    ((long)WWW * CWP)               /* a ring row's bytes */
#define RTHN  ((CT_OH + STRIP - 1) / STRIP)   /* strips along the rows */
/* a copy's bytes: the widest of 16, 8 and 4 dividing a row's slice of a
 * pixel (CWB) and C (every slice starts at a multiple of CWB) */
#define CPB   (CWB % 16 == 0 && DW_C % 16 == 0 ? 16 : CWB % 8 == 0 && DW_C % 8 == 0 ? 8 : 4)
#define CPR   (WWW * (CWB / CPB))             /* copies a ring row */
static_assert(CWB % 4 == 0 && DW_C % 4 == 0, "the ring copies 4-byte pieces at least");
static_assert((long)SLOTS * RB == CT_SMEM_BYTES, "CT_SMEM_BYTES does not match the ring");

/* Copy the strip's input rows [r0, r1) (0: its first, iy0 in the image)
 * into their ring rows: cp.async for the pixels inside the image and
 * channels below C, the data zero point's bytes for the rest. */
__device__ __forceinline__ void ring_fill(unsigned char *ring, const unsigned char *__restrict__ data,
                                          int n, int iy0, int x0, int cs, unsigned padw, int r0,
                                          int r1) {
#pragma unroll 1
  for (int u = threadIdx.x; u < (r1 - r0) * CPR; u += THREADS) {
    const int rr = r0 + u / CPR, v = u % CPR;
    const int xx = v / (CWB / CPB), cu = v % (CWB / CPB);
    const int iy = iy0 + rr, ix = x0 + xx, c = cs + cu * CPB;
    unsigned char *dst = ring + (long)(rr % SLOTS) * RB + (long)xx * CWP + cu * CPB;
    if (iy >= 0 && iy < CT_IH && ix >= 0 && ix < CT_IW && c < DW_C) {
      const unsigned char *src = data + (((long)n * CT_IH + iy) * CT_IW + ix) * DW_C + c;
      if (CPB == 16)
        cp_async16(smem_addr(dst), src, 16);
      else if (CPB == 8)
        cp_async8(smem_addr(dst), src);
      else
        cp_async4(smem_addr(dst), src, 4);
    } else if (CPB == 16) {
      *(uint4 *)dst = make_uint4(padw, padw, padw, padw);
    } else if (CPB == 8) {
      *(uint2 *)dst = make_uint2(padw, padw);
    } else {
      *(unsigned *)dst = padw;
    }
  }
}

/* The input rows step t reads first and last + 1 (the strip's, from 0):
 * step 0 all HROW of its window, each later one the SADV new ones. */
__device__ __forceinline__ int step_rows_from(int t) {
  return t == 0 ? 0 : (t - 1) * SADV + HROW;
}
__device__ __forceinline__ int step_rows_to(int t) {
  return t * SADV + HROW;
}

extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    conv_dw_ring(const unsigned char *__restrict__ data, const unsigned char *__restrict__ weights,
                 void *__restrict__ out, const int *__restrict__ params,
                 const void *__restrict__ residual) {
  extern __shared__ __align__(16) unsigned char ring[];
  const int tid = threadIdx.x;
  const int tc = tid % BLOCK_C, txw = tid / BLOCK_C;
  const long bx = blockIdx.x;
  const int tw = (int)(bx % TWN), th = (int)(bx / TWN % RTHN), n = (int)(bx / ((long)TWN * RTHN));
  const int k0b = blockIdx.y * (BLOCK_C * CHANS), k0 = k0b + tc * CHANS;
  const int oh_first = th * STRIP, ow0 = tw * TILE_W + txw * PIX;
  const int iy0 = oh_first * CT_STR_H - CT_PAD_H, x0 = tw * TILE_W * CT_STR_W - CT_PAD_W;
  /* the steps whose rows exist (the last strip's may not all) */
  const int steps = (CT_OH - oh_first + ROWS - 1) / ROWS < STEPS
                        ? (CT_OH - oh_first + ROWS - 1) / ROWS
                        : STEPS;
  const bool live = k0 < CT_KR && ow0 < CT_OW;
  const int kw = live ? k0 : k0b; /* a past-the-layer thread reads its block's first channels */

  /* the filters as 4-tap words of each kernel row, and the params: no
   * kernel writes them, so they load under the previous kernel's tail */
  unsigned wq[CHANS][CT_KD * CT_KH][KWW];
  {
    const unsigned *wp = (const unsigned *)(weights + (long)kw * KVOL);
    unsigned wraw[CHANS * KVOL / 4];
#pragma unroll
    for (int i = 0; i < CHANS * KVOL / 4; i++) wraw[i] = wp[i];
#pragma unroll
    for (int j = 0; j < CHANS; j++)
#pragma unroll
      for (int t = 0; t < CT_KH; t++)
#pragma unroll
        for (int a = 0; a < KWW; a++)
          wq[j][t][a] =
              bytes_at(wraw, (j * CT_KH + t) * CT_KW + 4 * a, CT_KW - 4 * a < 4 ? CT_KW - 4 * a : 4);
  }
  const q_head qh = load_head(params);
  q_chan qc[CHANS];
  load_chans(params, qh, kw, qc);
  pdl_wait_then_release();
#if CT_ZD
  const unsigned padw = (unsigned)params[CTQ_PAD_WORD];
#else
  const unsigned padw = 0;
#endif

  /* steps 0 .. AHEAD - 1 in flight, a group each */
#pragma unroll
  for (int t = 0; t < AHEAD; t++) {
    if (t < steps) ring_fill(ring, data, n, iy0, x0, k0b, padw, step_rows_from(t), step_rows_to(t));
    cp_async_commit();
  }
  const unsigned char *col = ring + (long)txw * PIX * CT_STR_W * CWP + tc * NIN;
#pragma unroll 1
  for (int s = 0; s < steps; s++) {
    if (s + AHEAD < steps)
      ring_fill(ring, data, n, iy0, x0, k0b, padw, step_rows_from(s + AHEAD),
                step_rows_to(s + AHEAD));
    cp_async_commit();
    cp_async_wait<AHEAD>();
    __syncthreads();
    if (!live) continue;
    int acc[1][ROWS][PIX][CHANS];
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
      for (int p = 0; p < PIX; p++)
#pragma unroll
        for (int j = 0; j < CHANS; j++) acc[0][r][p][j] = qc[j].off; /* corrected(): from off */
#pragma unroll
    for (int y = 0; y < HROW; y++) {
      if (!row_used(y)) continue;
      const unsigned char *rowp = col + (long)((s * SADV + y) % SLOTS) * RB;
      unsigned xw[WROW][NW];
#pragma unroll
      for (int x = 0; x < WROW; x++) {
        if (col_used(x))
          load_px(xw[x], rowp + (long)x * CWP);
        else
#pragma unroll
          for (int i = 0; i < NW; i++) xw[x][i] = 0;
      }
      mac_row(xw, 0, y, wq, acc);
    }
    store_out(out, residual, qh, qc, acc, n, 0, oh_first + s * ROWS, ow0, k0);
  }
}
