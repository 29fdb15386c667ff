// Keyed sampling on the device: the engine's sample_token (src/engine/sampler.cpp) step for step.
//
// - Greedy (temperature <= 0): greedy_rows (greedy.cu): the first maximum, NaN never wins, and a NaN at id 0
//   keeps 0 (the CPU scan).
// - Otherwise v = logit / temperature (float division); NaN dropped; top-k and top-p order the candidates by
//   (v descending, id ascending) (a stable radix sort of (v, ~id)); top-p and min-p weigh w = exp(v - max)
//   in double and top-p sums them in that order on one thread, as the CPU does; then Gumbel-max over the
//   survivors with noise -log(-log(u)), u from the counter hash of (seed, position, id), and the software log
//   written with explicitly rounded double operations (__dadd_rn, __dmul_rn, __ddiv_rn): the same bits as
//   keyed_noise.h. The max score wins, equal scores go to the lowest id (an exact, order-free reduction).
// The one function that is not bit-portable is exp (CUDA's double exp vs the host libm's, both within an
// ulp): it decides only where a cumulative probability or a weight lands within an ulp of top_p or min_p.
#include <cub/device/device_radix_sort.cuh>

#include <cfloat>
#include <vector>

#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

constexpr int kThreads = 1024;

__device__ __forceinline__ std::uint64_t mix64_dev(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ double portable_log_dev(double x) {
  std::uint64_t bits = static_cast<std::uint64_t>(__double_as_longlong(x));
  auto e = static_cast<std::int64_t>((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  double m = __longlong_as_double(static_cast<long long>(bits));
  if (m > 1.4142135623730951) {
    m = __dmul_rn(m, 0.5);
    e += 1;
  }
  const double s = __ddiv_rn(__dsub_rn(m, 1.0), __dadd_rn(m, 1.0));
  const double s2 = __dmul_rn(s, s);
  double term = s, sum = 0.0;
  for (int k = 1; k <= 29; k += 2) {
    sum = __dadd_rn(sum, __ddiv_rn(term, static_cast<double>(k)));
    term = __dmul_rn(term, s2);
  }
  return __dadd_rn(__dmul_rn(2.0, sum), __dmul_rn(static_cast<double>(e), 0.6931471805599453));
}

__device__ __forceinline__ double gumbel_dev(std::uint64_t seed, std::int64_t position, std::int32_t token) {
  const std::uint64_t key =
      mix64_dev(mix64_dev(mix64_dev(seed) ^ static_cast<std::uint64_t>(position)) ^ static_cast<std::uint32_t>(token));
  const double u = __dmul_rn(__dadd_rn(static_cast<double>(key >> 12), 0.5), 1.0 / 4503599627370496.0);
  return -portable_log_dev(-portable_log_dev(u));
}

__global__ void gumbel_kernel(std::uint64_t seed, std::int64_t position, const std::int32_t* tokens, std::int64_t n,
                              double* out) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = gumbel_dev(seed, position, tokens[i]);
}

// Best (score, id): larger score, equal scores to the lower id. id < 0 is "none".
struct Best {
  double score;
  std::int32_t id;
};
__device__ __forceinline__ bool better(const Best& a, const Best& b) {
  if (a.id < 0) return false;
  if (b.id < 0) return true;
  return a.score > b.score || (a.score == b.score && a.id < b.id);
}
__device__ Best block_best(Best b) {
  __shared__ double ss[kThreads / 32];
  __shared__ std::int32_t si[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) {
    Best other{__shfl_xor_sync(0xffffffffu, b.score, o), __shfl_xor_sync(0xffffffffu, b.id, o)};
    if (better(other, b)) b = other;
  }
  if ((threadIdx.x & 31) == 0) {
    ss[threadIdx.x >> 5] = b.score;
    si[threadIdx.x >> 5] = b.id;
  }
  __syncthreads();
  Best r{ss[0], si[0]};
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) {
    Best other{ss[w], si[w]};
    if (better(other, r)) r = other;
  }
  __syncthreads();
  return r;
}

__device__ __forceinline__ std::uint32_t orderable(float v) {
  const std::uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float from_orderable(std::uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// Sort keys: (orderable(v) << 32) | ~id, so a descending sort puts higher v first and, among equal v, lower
// ids first. NaN gets key 0 (after every real value, -inf included).
__global__ void keys_kernel(const float* row, std::int64_t vocab, float temperature, std::uint64_t* keys,
                            unsigned int* valid) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= vocab) return;
  const float v = __fdiv_rn(row[i], temperature);
  if (isnan(v)) {
    keys[i] = 0;
    return;
  }
  keys[i] = (static_cast<std::uint64_t>(orderable(v)) << 32) | (0xFFFFFFFFu - static_cast<std::uint32_t>(i));
  atomicAdd(valid, 1u);
}

// The filters and the Gumbel-max over a candidate list. sorted: candidates are keys[0 .. count) in sorted
// order; else all ids in id order (v recomputed from the logits), NaN skipped.
__global__ void __launch_bounds__(kThreads) filter_sample_kernel(const float* row, std::int64_t vocab,
                                                                 const std::uint64_t* keys, const unsigned int* valid,
                                                                 bool sorted, SampleArgs p, double* w,
                                                                 std::int32_t* out) {
  __shared__ std::int64_t s_keep;
  __shared__ float s_max;
  __shared__ std::int32_t s_first;
  const std::int64_t count = static_cast<std::int64_t>(*valid);
  if (count == 0) {
    if (threadIdx.x == 0) *out = 0;
    return;
  }
  auto cand_v = [&](std::int64_t i, std::int32_t* id) -> float {
    if (sorted) {
      const std::uint64_t k = keys[i];
      *id = static_cast<std::int32_t>(0xFFFFFFFFu - static_cast<std::uint32_t>(k & 0xFFFFFFFFu));
      return from_orderable(static_cast<std::uint32_t>(k >> 32));
    }
    *id = static_cast<std::int32_t>(i);
    return __fdiv_rn(row[i], p.temperature);
  };
  const std::int64_t n = sorted ? count : vocab;
  std::int64_t keep = n;
  if (sorted && p.top_k > 0 && p.top_k < count) keep = p.top_k;
  const bool weigh = p.top_p < 1.0f || p.min_p > 0.0f;
  if (weigh) {
    // max v over the candidates: the first one when sorted, else a reduction (exact).
    if (sorted) {
      if (threadIdx.x == 0) {
        std::int32_t id;
        s_max = cand_v(0, &id);
      }
      __syncthreads();
    } else {
      Best b{0.0, -1};
      for (std::int64_t i = threadIdx.x; i < n; i += kThreads) {
        std::int32_t id;
        const float v = cand_v(i, &id);
        if (isnan(v)) continue;
        Best c{static_cast<double>(v), id};
        if (better(c, b)) b = c;
      }
      b = block_best(b);
      if (threadIdx.x == 0) s_max = static_cast<float>(b.score);
      __syncthreads();
    }
    const double mx = static_cast<double>(s_max);
    for (std::int64_t i = threadIdx.x; i < keep; i += kThreads) {
      std::int32_t id;
      const float v = cand_v(i, &id);
      w[i] = isnan(v) ? 0.0 : exp(__dsub_rn(static_cast<double>(v), mx));
    }
    __syncthreads();
    if (p.top_p < 1.0f) {  // only when sorted
      if (threadIdx.x == 0) {
        double total = 0.0;
        for (std::int64_t i = 0; i < keep; ++i) total = __dadd_rn(total, w[i]);
        double cum = 0.0;
        std::int64_t k = keep;
        for (std::int64_t i = 0; i < keep; ++i) {
          cum = __dadd_rn(cum, __ddiv_rn(w[i], total));
          if (cum >= static_cast<double>(p.top_p)) {
            k = i + 1;
            break;
          }
        }
        s_keep = k;
      }
      __syncthreads();
      keep = s_keep;
    }
  }
  // The first candidate (what min-p keeps when it keeps nothing): sorted: index 0; else the lowest non-NaN id.
  if (threadIdx.x == 0) s_first = -1;
  __syncthreads();
  if (!sorted) {
    Best f{0.0, -1};
    for (std::int64_t i = threadIdx.x; i < n; i += kThreads) {
      std::int32_t id;
      if (isnan(cand_v(i, &id))) continue;
      Best c{0.0, id};
      if (better(c, f)) f = c;
    }
    f = block_best(f);
    if (threadIdx.x == 0) s_first = f.id;
  } else if (threadIdx.x == 0) {
    std::int32_t id;
    cand_v(0, &id);
    s_first = id;
  }
  __syncthreads();
  const bool min_p = p.min_p > 0.0f;
  Best b{0.0, -1};
  bool any_kept = false;
  for (std::int64_t i = threadIdx.x; i < keep; i += kThreads) {
    std::int32_t id;
    const float v = cand_v(i, &id);
    if (isnan(v)) continue;
    if (min_p && !(w[i] >= static_cast<double>(p.min_p))) continue;
    any_kept = true;
    Best c{__dadd_rn(static_cast<double>(v), gumbel_dev(p.seed, p.position, id)), id};
    if (better(c, b)) b = c;
  }
  const int kept = __syncthreads_or(any_kept);
  b = block_best(b);
  if (threadIdx.x == 0) *out = kept ? b.id : s_first;
}

}  // namespace

void gumbel_noise_device(std::uint64_t seed, std::int64_t position, const std::int32_t* tokens_dev, std::int64_t n,
                         double* out_dev, cudaStream_t s) {
  if (n <= 0) return;
  gumbel_kernel<<<static_cast<unsigned int>(ceil_div(n, 256)), 256, 0, s>>>(seed, position, tokens_dev, n, out_dev);
  check_launch("gumbel_noise");
}

void sample_tokens(const float* logits, std::int64_t rows, std::int64_t vocab, const SampleArgs* args,
                   std::int32_t* out_host, cudaStream_t s) {
  if (rows <= 0) return;
  std::int32_t* d_out = nullptr;
  std::uint64_t *keys = nullptr, *sorted = nullptr;
  unsigned int* valid = nullptr;
  double* w = nullptr;
  void* temp = nullptr;
  void* greedy_scratch = nullptr;
  std::size_t temp_bytes = 0;
  auto check = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string("sample_tokens: ") + what + ": " + cudaGetErrorString(e));
  };
  check(cudaMalloc(&d_out, static_cast<std::size_t>(rows) * sizeof(std::int32_t)), "alloc");
  check(cudaMalloc(&keys, static_cast<std::size_t>(vocab) * 8), "alloc");
  check(cudaMalloc(&sorted, static_cast<std::size_t>(vocab) * 8), "alloc");
  check(cudaMalloc(&valid, sizeof(unsigned int)), "alloc");
  check(cudaMalloc(&w, static_cast<std::size_t>(vocab) * sizeof(double)), "alloc");
  cub::DeviceRadixSort::SortKeysDescending(nullptr, temp_bytes, keys, sorted, static_cast<int>(vocab), 0, 64, s);
  check(cudaMalloc(&temp, temp_bytes), "alloc");
  check(cudaMalloc(&greedy_scratch, greedy_rows_scratch_bytes(1)), "alloc");
  check(cudaMemsetAsync(greedy_scratch, 0, greedy_rows_scratch_bytes(1), s), "memset");
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = logits + r * vocab;
    const SampleArgs& p = args[r];
    if (p.temperature <= 0.0f) {
      greedy_rows(row, 1, vocab, d_out + r, greedy_scratch, s);
      continue;
    }
    check(cudaMemsetAsync(valid, 0, sizeof(unsigned int), s), "memset");
    keys_kernel<<<static_cast<unsigned int>(ceil_div(vocab, 256)), 256, 0, s>>>(row, vocab, p.temperature, keys, valid);
    check_launch("sample keys");
    unsigned int count = 0;
    check(cudaMemcpyAsync(&count, valid, sizeof(count), cudaMemcpyDeviceToHost, s), "copy");
    check(cudaStreamSynchronize(s), "sync");
    const bool need_sort = (p.top_k > 0 && static_cast<unsigned int>(p.top_k) < count) || p.top_p < 1.0f;
    if (need_sort)
      check(cub::DeviceRadixSort::SortKeysDescending(temp, temp_bytes, keys, sorted, static_cast<int>(vocab), 0, 64, s),
            "sort");
    filter_sample_kernel<<<1, kThreads, 0, s>>>(row, vocab, sorted, valid, need_sort, p, w, d_out + r);
    check_launch("sample filter");
  }
  check(cudaMemcpyAsync(out_host, d_out, static_cast<std::size_t>(rows) * sizeof(std::int32_t), cudaMemcpyDeviceToHost, s),
        "copy out");
  check(cudaStreamSynchronize(s), "sync");
  cudaFree(d_out);
  cudaFree(keys);
  cudaFree(sorted);
  cudaFree(valid);
  cudaFree(w);
  cudaFree(temp);
  cudaFree(greedy_scratch);
}

}  // namespace tf::cuda
