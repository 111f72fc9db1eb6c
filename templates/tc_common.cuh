/*
 * tc_common.cuh: what the tensor-core templates (conv_mma.cuh on
 * mma.sync, conv_wgmma.cuh on wgmma) share: the cp.async and mma.sync PTX,
 * the cluster PTX of split-K, the epilogue's arithmetic on the params
 * block, and the store of one accumulator fragment pair (the m16n8
 * layout, which wgmma's accumulators also have per warp). Included after
 * conv_shape.cuh.
 */
#ifndef CT_TEMPLATES_TC_COMMON_CUH
#define CT_TEMPLATES_TC_COMMON_CUH

/* ---- PTX ------------------------------------------------------------------- */
__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
/* 4 or 16 bytes global -> shared, the rest of the destination zero-filled
 * when src_bytes is 0. */
__device__ __forceinline__ void cp_async4(unsigned dst, const void *src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async16(unsigned dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
/* 8 bytes global -> shared, asynchronously (cp.async.ca: 4, 8 or 16). */
__device__ __forceinline__ void cp_async8(unsigned dst, const void *src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src));
}
/* 8 bytes of shared memory at byte offset off. */
__device__ __forceinline__ uint2 lds64(unsigned off) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(off));
  return v;
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* d += a x b: A 16x32 row-major (4 registers), B 32x8 column-major (2). */
__device__ __forceinline__ void mma16832(int *d, const unsigned *a, const unsigned *b) {
#if CT_DATA_U8
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
#else
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
#endif
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* a . b + c over 4 byte lanes: data lanes signed, or unsigned for uint8 data
 * (PTX dp4a.u32.s32: the weights stay signed). The CUDA-core templates'. */
__device__ __forceinline__ int dp4a_data(unsigned a, unsigned b, int c) {
#if CT_DATA_U8
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  return __dp4a((int)a, (int)b, c);
#endif
}

/* Thread-block clusters (sm_90): split-K blocks meet in distributed
 * shared memory. */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
/* The shared address addr of this block as seen in block rank's memory. */
__device__ __forceinline__ unsigned cluster_map(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ unsigned cluster_load(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
#endif

/* Programmatic dependent launch (instance pdl): wait until the previous
 * kernel on the stream has finished and its writes are visible, before any
 * global memory access; then let the next kernel's blocks start (they wait
 * likewise). No-ops before sm_90, where a pdl launch is never made. */
__device__ __forceinline__ void pdl_wait_then_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* ---- the epilogue's arithmetic ------------------------------------------ */
/* The params a store needs, read once: the header per kernel, each channel's
 * values per channel (not per element: at one load per value and element
 * the loads, not the arithmetic, bound an 8-bit epilogue). A channel also
 * carries its requantization precomputed (ctq_fast, quant.cuh): one 64-bit
 * multiply-add and a shift per element where ctq_requant's general form
 * takes several times that.
 *
 * CT_ONNX 1 (ONNX Runtime's float requantization): the header's onnx
 * block is read once (q_head.onnx), a channel's mult is its float scale's
 * bits, and no channel takes the fast forms: fast, sat and every f.ok are
 * constant 0, so the callers' RQ_FAST and RQ_SAT branches compile away and
 * RQ_GENERAL runs ctq_requant_onnx. */
#define KP (4 * CT_K4)
struct q_head {
  int zp, lo, hi, mult, shift, rmult, rshift, rzp;
  int fast; /* ctq_fast_head: the zero point and clamp admit the fast form */
  int sat;  /* and ctq_sat_head, no residual: RQ_SAT applies (to f.ok channels) */
#if CT_ONNX
  ctq_onnx onnx;
#endif
};
struct q_chan {
  int off, zw, mult, shift;
  ctq_fast f; /* 8-bit output: f.ok where the fast form applies */
};

__device__ __forceinline__ q_head load_head(const int *__restrict__ params) {
  q_head h = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
#if CT_OUT != 0
  h.zp = params[CTQ_OUT_ZP];
  h.lo = params[CTQ_LO];
  h.hi = params[CTQ_HI];
  h.mult = params[CTQ_MULT];
  h.shift = params[CTQ_SHIFT];
#if CT_RES && !CT_ONNX
  h.rmult = params[CTQ_RES_MULT];
  h.rshift = params[CTQ_RES_SHIFT];
  h.rzp = params[CTQ_RES_ZP];
#endif
#if CT_ONNX
  h.onnx = ctq_onnx_load(params + CTQ_ONNX, h.lo, h.hi);
#else
  h.fast = ctq_fast_head(h.zp, h.lo, h.hi);
  h.sat = !CT_RES && h.fast && ctq_sat_head(h.lo, h.hi, CT_OUT == 2);
#endif
#endif
  return h;
}

/* Channel k's values (k < KP), its requantization precomputed. */
__device__ __forceinline__ q_chan load_chan(const int *__restrict__ params, const q_head &h, int k) {
  q_chan c;
  c.off = CT_OFF ? params[CTQ_HEADER + CTQ_OFF * KP + k] : 0;
  c.zw = CT_WZP ? params[CTQ_HEADER + CTQ_ZW * KP + k] : 0;
  c.mult = CT_QC ? params[CTQ_HEADER + CTQ_MULTS * KP + k] : h.mult;
  c.shift = CT_QC ? params[CTQ_HEADER + CTQ_SHIFTS * KP + k] : h.shift;
#if CT_OUT != 0 && !CT_ONNX
  c.f = ctq_fast_make(c.mult, c.shift, h.zp, h.fast);
#else
  c.f = ctq_fast{0, 0, 0, 0};
#endif
  return c;
}

/* Channels k and k + 1 (k even, k + 1 < KP) as load_chan gives them, with
 * one 8-byte load per array where load_chan takes two 4-byte ones: the
 * params block is 16-byte aligned (convtune.h) and so are its arrays. */
__device__ __forceinline__ void load_chan2(const int *__restrict__ params, const q_head &h, int k,
                                           q_chan &c0, q_chan &c1) {
  const int2 z = make_int2(0, 0);
  const int2 off = CT_OFF ? *(const int2 *)&params[CTQ_HEADER + CTQ_OFF * KP + k] : z;
  const int2 zw = CT_WZP ? *(const int2 *)&params[CTQ_HEADER + CTQ_ZW * KP + k] : z;
  const int2 mult = CT_QC ? *(const int2 *)&params[CTQ_HEADER + CTQ_MULTS * KP + k]
                          : make_int2(h.mult, h.mult);
  const int2 shift = CT_QC ? *(const int2 *)&params[CTQ_HEADER + CTQ_SHIFTS * KP + k]
                           : make_int2(h.shift, h.shift);
  c0.off = off.x, c0.zw = zw.x, c0.mult = mult.x, c0.shift = shift.x;
  c1.off = off.y, c1.zw = zw.y, c1.mult = mult.y, c1.shift = shift.y;
#if CT_OUT != 0 && !CT_ONNX
  c0.f = ctq_fast_make(c0.mult, c0.shift, h.zp, h.fast);
  c1.f = ctq_fast_make(c1.mult, c1.shift, h.zp, h.fast);
#else
  c0.f = c1.f = ctq_fast{0, 0, 0, 0};
#endif
}

__device__ __forceinline__ int corrected(const q_chan &c, int v, int xsum) {
#if CT_OFF || CT_WZP
  return ctq_correct(v, c.off, c.zw, xsum);
#else
  (void)c, (void)xsum;
  return v;
#endif
}

/* The 8-bit output value (not yet cut to its byte; with CT_ONNX only its
 * low byte is the value's) of a corrected value, rb the residual's byte;
 * FAST: c.f.ok holds (the caller's branch, taken once for several
 * elements; never with CT_ONNX). */
template <bool FAST>
__device__ __forceinline__ int requant_value(const q_head &h, const q_chan &c, int v, unsigned rb) {
  const int r = CT_OUT == 2 ? (int)rb : (int)(signed char)rb;
#if CT_ONNX
  /* the residual's float by the magic number: ctq_i2f of a byte's value
   * becomes I2F.S8, on the slow conversion pipe */
  return (int)ctq_requant_onnx_word(v, __int_as_float(c.mult), &h.onnx, CT_RES, ctq_i2f_small(r));
#else
  if (FAST) return ctq_requant_fast(c.f, v, h.lo, h.hi, CT_RES, r, h.rmult, h.rshift, h.rzp);
  return ctq_requant(v, c.mult, c.shift, h.zp, h.lo, h.hi, CT_RES, r, h.rmult, h.rshift, h.rzp);
#endif
}

/* The 8-bit output (low byte) of a corrected value, rb the residual's byte. */
__device__ __forceinline__ unsigned requant(const q_head &h, const q_chan &c, int v, unsigned rb) {
  const int y = c.f.ok ? requant_value<true>(h, c, v, rb) : requant_value<false>(h, c, v, rb);
  return (unsigned)y & 0xffu;
}

/* y0 and y1 saturated to the 8-bit output type, in bytes 0 and 1 (bytes
 * 2 and 3 zero): one I2IP. cvt.pack.sat puts its second source in the low
 * byte, its first in the next. */
__device__ __forceinline__ unsigned pack_sat2(int y0, int y1) {
  unsigned d;
#if CT_OUT == 2
  asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, 0;\n" : "=r"(d) : "r"(y1), "r"(y0));
#else
  asm("cvt.pack.sat.s8.s32.b32 %0, %1, %2, 0;\n" : "=r"(d) : "r"(y1), "r"(y0));
#endif
  return d;
}

/* How requant2 takes a pair, chosen by the caller once for several pairs:
 * RQ_FAST where both channels' f.ok, RQ_SAT where also the header's sat
 * (ctq_requant_fast_sat: max, then the saturating pack), else
 * RQ_GENERAL. With CT_ONNX: RQ_ONNX_SAT where the onnx block's seed and
 * hisat hold, RQ_ONNX_SEED where its seed alone does (requant2_onnx_seeded,
 * the caller's sums seeded), else RQ_GENERAL. */
enum { RQ_GENERAL = 0, RQ_FAST = 1, RQ_SAT = 2, RQ_ONNX_SAT = 3, RQ_ONNX_SEED = 4 };

#if CT_ONNX
/* A pair's outputs in a seeded onnx form (quant.cuh's
 * ctq_requant_onnx_seeded, where h.onnx.seed; without the clamp's min,
 * CLAMP_HI 0, where h.onnx.hisat too): v0, v1 the corrected sums seeded
 * with CTQ_MAGIC_I (the caller's sums start from off + CTQ_MAGIC_I),
 * saturated to the output type and packed by one cvt.pack.sat into bytes
 * 0, 1 (2, 3 zero). */
template <int CLAMP_HI>
__device__ __forceinline__ unsigned requant2_onnx_seeded(const q_head &h, const q_chan &c0,
                                                         const q_chan &c1, int v0, int v1) {
  return pack_sat2(ctq_requant_onnx_seeded(v0, __int_as_float(c0.mult), &h.onnx, CLAMP_HI),
                   ctq_requant_onnx_seeded(v1, __int_as_float(c1.mult), &h.onnx, CLAMP_HI));
}
#endif

/* Channels c0 and c1 of one row: their 8-bit outputs in bytes 0 and 1
 * (bytes 2, 3 undefined: join two with join_halves), rb2 the residual's two
 * bytes (ignored by RQ_SAT, which has none). */
template <int MODE>
__device__ __forceinline__ unsigned requant2(const q_head &h, const q_chan &c0, const q_chan &c1,
                                             int v0, int v1, unsigned rb2) {
  if (MODE == RQ_SAT && !CT_ONNX) {
    (void)rb2;
    const int y0 = ctq_fast_value(c0.f, v0), y1 = ctq_fast_value(c1.f, v1);
    return pack_sat2(y0 > h.lo ? y0 : h.lo, y1 > h.lo ? y1 : h.lo);
  }
  const int y0 = requant_value<MODE == RQ_FAST>(h, c0, v0, rb2 & 0xffu);
  const int y1 = requant_value<MODE == RQ_FAST>(h, c1, v1, (rb2 >> 8) & 0xffu);
  return __byte_perm((unsigned)y0, (unsigned)y1, 0x0040u); /* one PRMT, no masks */
}

/* c with its multiplier opaque to the compiler (an empty asm), for use in
 * a loop: otherwise it hoists the value's sign extension out of the loop
 * and splits the requantization's 64-bit multiply-add into five
 * instructions. */
__device__ __forceinline__ q_chan opaque_chan(q_chan c) {
  asm("" : "+r"(c.f.m));
  return c;
}

/* A fragment's two rows of one channel pair (c0, c1): values v00, v01
 * (row 0) and v10, v11 (row 1), rr the residual's two bytes of each row,
 * into y0 and y1 (requant2's bytes 0, 1), in the form the pair admits,
 * chosen once for both rows: RQ_SAT where both channels take the fast form
 * and the header saturates, RQ_FAST where they take it, else RQ_GENERAL. */
__device__ __forceinline__ void requant2_rows(const q_head &qh, const q_chan &c0, const q_chan &c1,
                                              int v00, int v01, int v10, int v11,
                                              const unsigned (&rr)[2], unsigned &y0, unsigned &y1) {
  if (c0.f.ok && c1.f.ok) {
    if (qh.sat) {
      y0 = requant2<RQ_SAT>(qh, c0, c1, v00, v01, rr[0]);
      y1 = requant2<RQ_SAT>(qh, c0, c1, v10, v11, rr[1]);
    } else {
      y0 = requant2<RQ_FAST>(qh, c0, c1, v00, v01, rr[0]);
      y1 = requant2<RQ_FAST>(qh, c0, c1, v10, v11, rr[1]);
    }
  } else {
    y0 = requant2<RQ_GENERAL>(qh, c0, c1, v00, v01, rr[0]);
    y1 = requant2<RQ_GENERAL>(qh, c0, c1, v10, v11, rr[1]);
  }
}

#if CT_ONNX
/* requant2 of ONNX rounding with the residual's values r0, r1 as ints,
 * loaded as the type's bytes (a signed or unsigned byte load each, then
 * I2FP): taken from one 2-byte word, ptxas converted each byte with I2F.S8
 * on the slow conversion pipe. */
__device__ __forceinline__ unsigned
requant2_onnx(const q_head &h, const q_chan &c0, const q_chan &c1, int v0, int v1, int r0, int r1) {
  const float s0 = __int_as_float(c0.mult), s1 = __int_as_float(c1.mult);
  const unsigned w0 = ctq_requant_onnx_word(v0, s0, &h.onnx, CT_RES, ctq_i2f(r0));
  const unsigned w1 = ctq_requant_onnx_word(v1, s1, &h.onnx, CT_RES, ctq_i2f(r1));
  return __byte_perm(w0, w1, 0x0040u);
}
#endif

/* The low halves of lo and hi as one word (lo's in bytes 0, 1). */
__device__ __forceinline__ unsigned join_halves(unsigned lo, unsigned hi) {
  return __byte_perm(lo, hi, 0x5410u);
}

/* Store a fragment pair: channels k, k + 1 (k = 4 * k4 + 2 * (t & 1)) of
 * rows r0 and r1 (output word offsets o0, o1 in 4-channel units; ok0, ok1
 * whether the row exists), corrected values v00, v01 (r0) and v10, v11
 * (r1). int32: 8 bytes per row. 8-bit: lanes t and t ^ 1 hold the 4
 * channels of one chunk: after one exchange the even lane stores row r0
 * and the odd one row r1, so every lane of the warp must call it. */
__device__ __forceinline__ void store_frag(void *__restrict__ out, const void *__restrict__ residual,
                                           const q_head &qh, const q_chan &c0, const q_chan &c1,
                                           int k4, int t, int v00, int v01, int v10, int v11,
                                           long o0, bool ok0, long o1, bool ok1) {
#if CT_OUT == 0
  (void)residual, (void)qh, (void)c0, (void)c1;
  if (k4 < CT_K4) {
    if (ok0) *(int2 *)((int *)out + o0 * 4 + 2 * (t & 1)) = make_int2(v00, v01);
    if (ok1) *(int2 *)((int *)out + o1 * 4 + 2 * (t & 1)) = make_int2(v10, v11);
  }
#else
  unsigned r0 = 0, r1 = 0;
  if (CT_RES && k4 < CT_K4) {
    if (ok0) r0 = ((const unsigned short *)residual)[o0 * 2 + (t & 1)];
    if (ok1) r1 = ((const unsigned short *)residual)[o1 * 2 + (t & 1)];
  }
  unsigned lo, hi; /* one branch for the 4 values */
  if (c0.f.ok && c1.f.ok) {
    lo = requant2<RQ_FAST>(qh, c0, c1, v00, v01, r0);
    hi = requant2<RQ_FAST>(qh, c0, c1, v10, v11, r1);
  } else {
    lo = requant2<RQ_GENERAL>(qh, c0, c1, v00, v01, r0);
    hi = requant2<RQ_GENERAL>(qh, c0, c1, v10, v11, r1);
  }
  const unsigned recv = __shfl_xor_sync(0xffffffffu, (t & 1) ? lo : hi, 1);
  if (k4 < CT_K4 && ((t & 1) ? ok1 : ok0))
    ((unsigned *)out)[(t & 1) ? o1 : o0] = (t & 1) ? join_halves(recv, hi) : join_halves(lo, recv);
#endif
}

#endif
