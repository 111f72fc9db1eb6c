/*
 * wgmma_ptx.cuh: the Hopper PTX that the wgmma templates share
 * (conv_wgmma.cuh on the channel-packed layouts, conv_wgmma_nhwc.cuh on
 * channels-last): mbarriers, the bulk tensor copies (TMA, tiled and
 * im2col, and the tiled store from shared memory), and wgmma.mma_async
 * m64nNk32 on int8 in its two forms, A from registers (_rs) and A from a
 * shared-memory descriptor (_ss), B always from a descriptor. Included
 * after quant.cuh and the shape macros.
 */
#ifndef CT_TEMPLATES_WGMMA_PTX_CUH
#define CT_TEMPLATES_WGMMA_PTX_CUH

/* ---- mbarriers ---------------------------------------------------------- */
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  /* the label is local to the braces, so the function inlines anywhere */
  asm volatile("{\n.reg .pred p;\nWAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra WAIT;\n}\n" ::"r"(bar),
               "r"(parity)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
/* One arrival on bar once this thread's earlier cp.async have landed. */
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
/* Generic-proxy writes (cp.async) seen by the async proxy (wgmma). */
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* ---- bulk tensor copies (TMA) --------------------------------------------- */
/* A tensor map, a kernel parameter (CUtensorMap: 128 bytes, 64-aligned). */
struct __align__(64) ct_tmap {
  unsigned long long v[16];
};

/* Tiled copies of a box at coordinates c0.. (innermost first). */
__device__ __forceinline__ void tma_tile2(unsigned dst, const ct_tmap *map, int c0, int c1,
                                          unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
               "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void tma_tile3(unsigned dst, const ct_tmap *map, int c0, int c1, int c2,
                                          unsigned bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
               "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void tma_tile5(unsigned dst, const ct_tmap *map, int c0, int c1, int c2,
                                          int c3, int c4, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(dst),
               "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar)
               : "memory");
}
/* im2col copies: the map's pixels per column from the pixel at (c, w, h,
 * [d,] n), walking W, H, [D,] N inside the map's bounding box, each read at
 * the tap offsets (ow, oh[, od]) from it; outside the tensor reads zero. */
__device__ __forceinline__ void tma_im2col4(unsigned dst, const ct_tmap *map, int c, int w, int h,
                                            int n, unsigned short ow, unsigned short oh,
                                            unsigned bar) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(dst),
               "l"((unsigned long long)map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar), "h"(ow),
               "h"(oh)
               : "memory");
}
__device__ __forceinline__ void tma_im2col5(unsigned dst, const ct_tmap *map, int c, int w, int h,
                                            int d, int n, unsigned short ow, unsigned short oh,
                                            unsigned short od, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};\n" ::"r"(dst),
               "l"((unsigned long long)map), "r"(c), "r"(w), "r"(h), "r"(d), "r"(n), "r"(bar),
               "h"(ow), "h"(oh), "h"(od)
               : "memory");
}

/* The tiled store of the box at src (shared memory, laid out as the map's
 * swizzle wants it) to coordinates (c0, c1) of the map's tensor; the parts
 * of the box outside the tensor are not written. One thread issues it,
 * after every writer's fence_proxy_async and a barrier; bulk_commit closes
 * the group of stores issued so far. */
__device__ __forceinline__ void tma_store2(const ct_tmap *map, int c0, int c1, unsigned src) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
          (unsigned long long)map),
      "r"(c0), "r"(c1), "r"(src)
      : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
/* Wait until this thread's committed store groups have read their shared
 * memory (READ 1), or are complete and their writes performed (0). */
template <int READ> __device__ __forceinline__ void bulk_wait_all() {
  if (READ)
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  else
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

/* ---- wgmma ------------------------------------------------------------------ */
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

#if CT_DATA_U8
#define WGMMA_OP(shape) "wgmma.mma_async.sync.aligned." shape ".s32.u8.s8 "
#else
#define WGMMA_OP(shape) "wgmma.mma_async.sync.aligned." shape ".s32.s8.s8 "
#endif
/* Accumulators d[i .. i + 7] as read-write operands. */
#define WG_D8(i)                                                                            \
  "+r"(d[(i)]), "+r"(d[(i) + 1]), "+r"(d[(i) + 2]), "+r"(d[(i) + 3]), "+r"(d[(i) + 4]), \
      "+r"(d[(i) + 5]), "+r"(d[(i) + 6]), "+r"(d[(i) + 7])

/* d (N/2 accumulators) += A x B, m64nNk32: A as the 4 registers of the
 * mma.sync m16n8k32 fragment (_rs) or by descriptor (_ss). The _ss forms
 * with scale_d 0: d = A x B, whatever d held (no zeroing before a tile). */
__device__ __forceinline__ void wgmma_rs_n64(int *d, const unsigned *a, unsigned long long b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      WGMMA_OP("m64n64k32")
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p;\n}\n"
      : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1)
      : "memory");
}
__device__ __forceinline__ void wgmma_ss_n64(int *d, unsigned long long a, unsigned long long b,
                                             int scale_d = 1) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      WGMMA_OP("m64n64k32")
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p;\n}\n"
      : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24)
      : "l"(a), "l"(b), "r"(scale_d)
      : "memory");
}
__device__ __forceinline__ void wgmma_rs_n128(int *d, const unsigned *a, unsigned long long b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      WGMMA_OP("m64n128k32")
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p;\n}\n"
      : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1)
      : "memory");
}
__device__ __forceinline__ void wgmma_ss_n128(int *d, unsigned long long a, unsigned long long b,
                                             int scale_d = 1) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      WGMMA_OP("m64n128k32")
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p;\n}\n"
      : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56)
      : "l"(a), "l"(b), "r"(scale_d)
      : "memory");
}
__device__ __forceinline__ void wgmma_rs_n256(int *d, const unsigned *a, unsigned long long b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      WGMMA_OP("m64n256k32")
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, "
      "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, "
      "%87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, "
      "%104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, "
      "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, %132, p;\n}\n"
      : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56), WG_D8(64), WG_D8(72), WG_D8(80), WG_D8(88), WG_D8(96), WG_D8(104), WG_D8(112), WG_D8(120)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1)
      : "memory");
}
__device__ __forceinline__ void wgmma_ss_n256(int *d, unsigned long long a, unsigned long long b,
                                             int scale_d = 1) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      WGMMA_OP("m64n256k32")
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, "
      "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, "
      "%87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, "
      "%104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, "
      "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p;\n}\n"
      : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56), WG_D8(64), WG_D8(72), WG_D8(80), WG_D8(88), WG_D8(96), WG_D8(104), WG_D8(112), WG_D8(120)
      : "l"(a), "l"(b), "r"(scale_d)
      : "memory");
}

#endif
