// Read-bandwidth probe for the decode matmul's floor (docs/benchmarks.md, "Seventh session"): how fast can
// warps that do nothing but stream contiguous 16-byte lane loads read a matrix of the decode shapes' sizes,
// and does an L2 prefetch issued during idle time make the next read faster?
//
//   tf_cuda_read_probe            read times at 7 / 33 / 66 / 300 MB, grid-stride and 8-64 warps an SM
//   tf_cuda_read_probe prefetch   read times after prefetching 0-48 MB of the matrix to L2 during a 10-20 µs spin
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

#include "probe_common.cuh"

namespace {

using tf::bench::load_stream;
using tf::bench::spin_ns;

// Each warp reads its own contiguous run of `steps` warp-loads (512 bytes each), D loads in flight.
template <int D>
__global__ void stream_kernel(const uint4* __restrict__ src, long long steps, unsigned* sink) {
  const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5;
  const uint4* p = src + warp * steps * 32 + (threadIdx.x & 31);
  unsigned acc = 0;
  for (long long s = 0; s < steps; s += D) {
    uint4 v[D];
#pragma unroll
    for (int i = 0; i < D; ++i) v[i] = load_stream(p + (s + i) * 32);
#pragma unroll
    for (int i = 0; i < D; ++i) acc ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
  }
  if (acc == 0x12345678u) *sink = acc;  // keeps the loads; never true for the fill pattern
}

__global__ void grid_kernel(const uint4* __restrict__ src, long long n, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const uint4 v = load_stream(src + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

__global__ void prefetch_kernel(const char* p, long long bytes, int chunk) {
  const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long threads = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long off = t * chunk; off < bytes; off += threads * chunk) {
    const int size = static_cast<int>(bytes - off < chunk ? bytes - off : chunk);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + off), "r"(size) : "memory");
  }
}

__global__ void spin_kernel(long long ns) { spin_ns(ns); }

}  // namespace

int main(int argc, char** argv) {
  const bool prefetch = argc > 1 && std::strcmp(argv[1], "prefetch") == 0;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  constexpr size_t kBuf = 2ull << 30;  // matrices rotate through 2 GB, so L2 (50 MB) never holds one between reads
  char* buf = nullptr;
  unsigned* sink = nullptr;
  if (cudaMalloc(&buf, kBuf) != cudaSuccess || cudaMalloc(&sink, 4) != cudaSuccess) {
    std::fprintf(stderr, "tf_cuda_read_probe: no device memory\n");
    return 1;
  }
  cudaMemset(buf, 1, kBuf);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::printf("SMs %d\n", sms);
  if (!prefetch) {
    for (size_t mb : {7, 33, 66, 300}) {
      const size_t bytes = mb << 20;
      const size_t copies = kBuf / bytes < 64 ? kBuf / bytes : 64;
      auto time_us = [&](auto launch) {
        constexpr int kReps = 40;
        for (int i = 0; i < 4; ++i) launch(reinterpret_cast<const uint4*>(buf + (i % copies) * bytes));
        cudaEventRecord(a);
        for (int i = 0; i < kReps; ++i) launch(reinterpret_cast<const uint4*>(buf + (i % copies) * bytes));
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        return ms * 1e3 / kReps;
      };
      const long long n = static_cast<long long>(bytes / 16);
      const double us = time_us([&](const uint4* s) { grid_kernel<<<sms * 8, 256>>>(s, n, sink); });
      std::printf("%4zu MB grid-stride, 64 warps an SM: %7.2f us %6.0f GB/s\n", mb, us, bytes / us / 1e3);
      for (int warps_per_sm : {8, 16, 32, 64}) {
        const long long warps = static_cast<long long>(sms) * warps_per_sm;
        auto run = [&](auto depth) {
          constexpr int D = decltype(depth)::value;
          const long long steps = n / 32 / warps / D * D;
          if (steps == 0) return;  // fewer than D warp-loads a warp: the matrix is too small for this many warps
          const double t = time_us([&](const uint4* s) { stream_kernel<D><<<sms * warps_per_sm / 8, 256>>>(s, steps, sink); });
          std::printf("%4zu MB streams, %2d warps an SM, %d loads in flight: %7.2f us %6.0f GB/s\n", mb, warps_per_sm, D, t,
                      static_cast<double>(steps) * warps * 512 / t / 1e3);
        };
        run(std::integral_constant<int, 2>{});
        run(std::integral_constant<int, 4>{});
        run(std::integral_constant<int, 8>{});
      }
    }
  } else {
    char* other = buf + (1ull << 30);  // read between trials to push the matrix out of L2
    for (int mb : {7, 33, 66}) {
      for (int pf : {0, 4, 8, 16, 24, 32, 48}) {
        if (pf > mb) continue;
        for (long long spin : {10000LL, 20000LL}) {
          double total = 0;
          constexpr int kReps = 10;
          for (int r = 0; r <= kReps; ++r) {
            grid_kernel<<<sms * 8, 256>>>(reinterpret_cast<const uint4*>(other), (512ll << 20) / 16, sink);
            if (pf > 0) prefetch_kernel<<<sms, 32>>>(buf, static_cast<long long>(pf) << 20, 64 << 10);
            spin_kernel<<<1, 32>>>(spin);
            cudaEventRecord(a);
            const long long steps = (static_cast<long long>(mb) << 20) / 16 / 32 / (sms * 16LL) / 4 * 4;
            stream_kernel<4><<<sms * 2, 256>>>(reinterpret_cast<const uint4*>(buf), steps, sink);
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            float ms = 0;
            cudaEventElapsedTime(&ms, a, b);
            if (r > 0) total += ms;  // the first is a warm-up
          }
          std::printf("matrix %2d MB, %2d MB prefetched during a %5lld ns spin: read %7.2f us\n", mb, pf, spin,
                      total * 1e3 / kReps);
        }
      }
    }
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "tf_cuda_read_probe: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
