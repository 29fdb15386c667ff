#pragma once
// What the read probes (read_probe.cu, stack_probe.cu) share: the streaming load they time and a spin.
#include <cuda_runtime.h>

namespace tf::bench {

// A 16-byte load that bypasses L1 allocation and asks L2 for 256-byte sectors: how weights stream.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Busy for `ns` nanoseconds of the global timer.
__device__ __forceinline__ void spin_ns(long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < static_cast<unsigned long long>(ns));
}

}  // namespace tf::bench
