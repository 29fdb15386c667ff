// The greedy token of each row of logits on the device: sampler.h's greedy_token, bit for bit.
//
// greedy_token is the first index of the largest value; NaN never wins and a NaN at index 0 gives 0. That is
// the maximum of a key under a total order, so any reduction order gives the same answer: key =
// (orderable(v) << 32) | ~index (higher v first, then the lower index), 0 for NaN (no other value maps
// there), with -0 taken as +0 (greedy_token compares with ==, under which they are equal).
//
// Why many blocks: one block of 1024 threads over a row took 38 µs for the 8B shape's 128k-entry vocabulary
// and 86 µs for the 27B shape's 248k, on the critical path of every greedy decode step (H200, kernel trace).
// Here each block reduces a contiguous slice and publishes its key, and the row's last block (elected by an
// atomic counter, which orders no arithmetic) takes the maximum of the slices' keys.
#include <cstdint>

#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxSlices = 64;            // blocks a row
constexpr std::int64_t kMinSlice = 2048;  // entries a slice at least (small vocabularies take fewer blocks)

// The scratch of a row: its counter (zero before the first launch, and left zero), then its slices' keys.
// The same layout whatever the rows of a launch, so a scratch sized for more rows serves fewer.
struct RowScratch {
  unsigned counter;
  unsigned pad;
  std::uint64_t keys[kMaxSlices];
};

__device__ __forceinline__ std::uint64_t greedy_key(float v, std::int64_t i) {
  if (isnan(v)) return 0;
  const std::uint32_t u = __float_as_uint(v == 0.0f ? 0.0f : v);  // -0 as +0
  const std::uint32_t ord = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<std::uint64_t>(ord) << 32) | (~static_cast<std::uint32_t>(i));
}

__device__ __forceinline__ std::uint64_t max_u64(std::uint64_t a, std::uint64_t b) { return a > b ? a : b; }

// Grid (slices, rows).
__global__ void __launch_bounds__(kThreads)
    greedy_kernel(const float* logits, std::int64_t vocab, std::int64_t slice, RowScratch* scratch, std::int32_t* out) {
  const int slices = static_cast<int>(gridDim.x), s = static_cast<int>(blockIdx.x), r = static_cast<int>(blockIdx.y);
  const float* row = logits + static_cast<std::int64_t>(r) * vocab;
  const std::int64_t lo = s * slice, hi = lo + slice < vocab ? lo + slice : vocab;
  std::uint64_t k = 0;
  for (std::int64_t i = lo + threadIdx.x; i < hi; i += kThreads) k = max_u64(k, greedy_key(row[i], i));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) k = max_u64(k, __shfl_xor_sync(0xffffffffu, k, o));
  __shared__ std::uint64_t warp_keys[kThreads / 32];
  __shared__ bool last;
  if ((threadIdx.x & 31) == 0) warp_keys[threadIdx.x >> 5] = k;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) k = max_u64(k, warp_keys[w]);
    scratch[r].keys[s] = k;
    __threadfence();
    last = atomicAdd(&scratch[r].counter, 1u) == static_cast<unsigned>(slices - 1);
  }
  __syncthreads();
  if (!last || threadIdx.x >= 32) return;
  __threadfence();
  std::uint64_t m = 0;
  for (int i = static_cast<int>(threadIdx.x); i < slices; i += 32) m = max_u64(m, __ldcg(&scratch[r].keys[i]));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = max_u64(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x == 0) {
    out[r] = (isnan(row[0]) || m == 0) ? 0 : static_cast<std::int32_t>(~static_cast<std::uint32_t>(m));
    scratch[r].counter = 0;  // for the next launch
  }
}

int slices_for(std::int64_t vocab) {
  const std::int64_t s = ceil_div(vocab, kMinSlice);
  return static_cast<int>(s < 1 ? 1 : s > kMaxSlices ? kMaxSlices : s);
}

}  // namespace

std::size_t greedy_rows_scratch_bytes(std::int64_t rows) { return static_cast<std::size_t>(rows) * sizeof(RowScratch); }

void greedy_rows(const float* logits, std::int64_t rows, std::int64_t vocab, std::int32_t* out_dev, void* scratch,
                 cudaStream_t s) {
  if (rows <= 0 || vocab <= 0) return;
  const int slices = slices_for(vocab);
  greedy_kernel<<<dim3(static_cast<unsigned>(slices), static_cast<unsigned>(rows)), kThreads, 0, s>>>(
      logits, vocab, ceil_div(vocab, slices), static_cast<RowScratch*>(scratch), out_dev);
  check_launch("greedy_rows");
}

}  // namespace tf::cuda
