/*
 * l2_prefetch.cuh: a kernel's constant operands (weights, params) fetched
 * into L2 before griddepcontrol.wait.
 *
 * In a chain of layers a layer's weights and params were last read one
 * pass of the network ago, so they come from DRAM; the activations come
 * from L2, just written by the kernel before. A mainloop that loads a
 * slice of the weights per k-step then waits on DRAM's latency once per
 * round of its pipeline (a 1x1 layer of 576-960 input channels at 14x14:
 * 2-3 us a node in MobileNetV2's chain, not seen when the node runs
 * alone). The weights and params are not the previous kernel's output,
 * so a prefetch may run before the wait, under the previous kernel's
 * last wave; it is a hint, and reads nothing a thread depends on.
 * Included by the families that use it only: a header's change retires
 * the records of every template that includes it.
 */
#ifndef CT_TEMPLATES_L2_PREFETCH_CUH
#define CT_TEMPLATES_L2_PREFETCH_CUH

/* Fetch [p, p + bytes) into L2, asynchronously (sm_90's bulk prefetch;
 * nothing before): the whole 16-byte pieces of the range from p, which
 * must be 16-byte aligned (the API's pointers are; anything else is
 * skipped). One thread issues it. */
__device__ __forceinline__ void l2_prefetch(const void *p, unsigned long long bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned long long a = (unsigned long long)p;
  if (p == nullptr || (a & 15u) != 0) return;
  bytes &= ~15ull;
  while (bytes > 0) {
    const unsigned n = bytes > (1u << 30) ? (1u << 30) : (unsigned)bytes;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(n) : "memory");
    p = (const unsigned char *)p + n;
    bytes -= n;
  }
#else
  (void)p, (void)bytes;
#endif
}

/* Bytes of a params block's header and per-channel arrays (quant.h,
 * quant_params_words: CTQ_HEADER + 4 x round4(K) words; the border
 * classes' corrections after them are left out). */
#define L2P_PARAMS_BYTES(k) (4ull * (CTQ_HEADER + CTQ_ARRAYS * (((k) + 3) / 4 * 4)))

#endif
