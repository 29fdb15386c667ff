// Keyed sampling on the device: the engine's sample_token (src/engine/sampler.cpp) bit for bit, every row of
// a launch at once (a shared round's streams, a verify window's rows), one block a row, ids left on the
// device. The arithmetic is engine/sampling_math.h itself (host and device compile the same functions, each
// operation rounded alone), so the only question is which candidates are kept, and that is decided exactly:
//
// - Candidates are ordered by a 64-bit key (sampling::order_key: v, then the lower id), unique per row.
// - top-k is the k-th largest key, found by a select over histograms of counts in shared memory: first bins of
//   the gap to the max (1/64 nat), then the key's 11-bit radix digits inside the bin found, stopping as soon
//   as a bin holds the key alone.
// - top-p is the first key in descending order whose running mass reaches the cut. Masses are integers, so the
//   mass above any key is the same sum in any order: the same select, with histograms of mass, finds it (the
//   gap bins hold every candidate with mass, so they also give the total).
// - Gumbel-max over the kept candidates, seeded with the first candidate's score; a candidate that provably
//   cannot reach the best (sampling::cannot_win, from its hash alone) skips its two logs.
// A greedy row (temperature <= 0) is greedy_token: the first index of the largest value, NaN at 0 giving 0.
#include <cfloat>
#include <vector>

#include "backends/cuda/kernels/common.cuh"
#include "engine/sampling_math.h"

namespace tf::cuda {
namespace {

namespace sm = tf::sampling;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;
constexpr int kRowsPerLaunch = 64;  // SampleArgs travel in the launch's parameters (64 x 32 bytes)

struct Batch {
  SampleArgs a[kRowsPerLaunch];
};

__device__ __forceinline__ std::uint64_t max_u64(std::uint64_t a, std::uint64_t b) { return a > b ? a : b; }

// Block-wide reductions (every thread gets the result). The two __syncthreads make back-to-back calls safe.
__device__ std::uint64_t block_max(std::uint64_t x) {
  __shared__ std::uint64_t part[kWarps];
  for (int o = 16; o > 0; o >>= 1) x = max_u64(x, __shfl_xor_sync(0xffffffffu, x, o));
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = x;
  __syncthreads();
  x = part[0];
  for (int w = 1; w < kWarps; ++w) x = max_u64(x, part[w]);
  __syncthreads();
  return x;
}
__device__ std::uint64_t block_sum(std::uint64_t x) {
  __shared__ std::uint64_t part[kWarps];
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = x;
  __syncthreads();
  x = 0;
  for (int w = 0; w < kWarps; ++w) x += part[w];
  __syncthreads();
  return x;
}

// Best (score, id): the larger score, equal scores to the lower id; id < 0 is none.
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
  __shared__ double ss[kWarps];
  __shared__ std::int32_t si[kWarps];
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
  for (int w = 1; w < kWarps; ++w) {
    Best other{ss[w], si[w]};
    if (better(other, r)) r = other;
  }
  __syncthreads();
  return r;
}

struct Hist {
  unsigned count[kBins];
  unsigned long long mass[kBins];
  unsigned long long top[kBins];  // the largest key in the bin
};

// The bin that holds the key sought, scanning bins from the top: by count (the `want`-th largest) or by mass
// (the first whose running mass, from `above`, reaches the cut). Warp 0 decides; every thread gets the bin and
// what lies above it (count or mass).
struct Pick {
  int bin;
  std::uint64_t above;
};
__device__ Pick pick_bin(const Hist& h, bool by_mass, std::uint64_t want, std::uint64_t above, std::uint64_t total,
                         float top_p) {
  __shared__ Pick result;
  if (threadIdx.x < 32) {
    constexpr int kPerLane = kBins / 32;
    const int lane = static_cast<int>(threadIdx.x);
    const int hi = kBins - 1 - lane * kPerLane;  // lane 0 holds the top bins
    std::uint64_t mine = 0;
    for (int b = hi; b > hi - kPerLane; --b) mine += by_mass ? h.mass[b] : h.count[b];
    std::uint64_t incl = mine;  // running sum over lanes 0..lane (inclusive)
    for (int o = 1; o < 32; o <<= 1) {
      const std::uint64_t up = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += up;
    }
    const auto reached = [&](std::uint64_t sum) {
      return by_mass ? sm::top_p_reached(above + sum, total, top_p) : sum >= want;
    };
    const unsigned hit = __ballot_sync(0xffffffffu, reached(incl));
    const int first = hit ? __ffs(hit) - 1 : 31;
    if (lane == first) {
      std::uint64_t run = incl - mine;
      int bin = hi - kPerLane + 1;
      for (int b = hi; b > hi - kPerLane; --b) {
        const std::uint64_t add = by_mass ? h.mass[b] : h.count[b];
        if (h.count[b] != 0 && reached(run + add)) {
          bin = b;
          break;
        }
        run += add;
      }
      result = {bin, by_mass ? above + run : run};
    }
  }
  __syncthreads();
  const Pick p = result;
  __syncthreads();
  return p;
}

// The bin of a candidate's gap to the max, v_max - v, 1/64 nat wide over [0, kMasslessGap] (-1 further down,
// where nothing has mass). Bins of the gap are ranges of v, so ranges of keys, in the keys' order.
constexpr int kPerNat = 64;
__device__ __forceinline__ int gap_bin(float v, float v_max) {
  const double d = exact::sub(static_cast<double>(v_max), static_cast<double>(v));
  return d <= sm::kMasslessGap ? static_cast<int>(exact::mul(d, static_cast<double>(kPerNat))) : -1;
}
static_assert(static_cast<int>(sm::kMasslessGap) * kPerNat < kBins, "the gap's bins fit the histogram");

// The key of the `want`-th largest candidate (by count) or of top-p's last kept one (by mass) among the
// candidates with key >= floor. A first level bins the candidates by their gap to the max: spread over
// 1,921 bins, their atomics rarely meet (the keys' top 11 bits put most of a row into a handful of bins,
// whose shared-memory atomics then serialise), and by mass it sees every candidate with mass, so it also
// gives the total. The key's radix digits then resolve the bin found (by count, when the k-th lies past
// the bins, every candidate).
__device__ std::uint64_t radix_select(Hist& h, const float* row, std::int64_t vocab, float temperature, float v_max,
                                      std::uint64_t floor, bool by_mass, std::uint64_t want, float top_p) {
  std::uint64_t above = 0, total = 0;
  int gap = -1;  // the gap bin holding the key sought, once known
  for (int b = static_cast<int>(threadIdx.x); b < kBins; b += kThreads) h.count[b] = 0, h.mass[b] = 0, h.top[b] = 0;
  __syncthreads();
  for (std::int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float v = __fdiv_rn(row[i], temperature);
    if (isnan(v)) continue;
    const std::uint64_t key = sm::order_key(v, static_cast<std::int32_t>(i));
    const int g = gap_bin(v, v_max);
    if (key < floor || g < 0) continue;
    const int b = kBins - 1 - g;  // higher bins hold higher keys, as pick_bin scans them
    atomicAdd(&h.count[b], 1u);
    atomicMax(&h.top[b], static_cast<unsigned long long>(key));
    if (by_mass) {
      const std::uint64_t m = sm::mass_of_weight(sm::weight(v, v_max));
      if (m) atomicAdd(&h.mass[b], static_cast<unsigned long long>(m));
    }
  }
  __syncthreads();
  std::uint64_t part = 0;
  for (int b = static_cast<int>(threadIdx.x); b < kBins; b += kThreads) part += by_mass ? h.mass[b] : h.count[b];
  const std::uint64_t binned = block_sum(part);
  if (by_mass) total = binned;
  if (by_mass || binned >= want) {
    const Pick p = pick_bin(h, by_mass, want, 0, total, top_p);
    const bool alone = h.count[p.bin] == 1;
    const std::uint64_t top = h.top[p.bin];
    __syncthreads();
    if (alone) return top;
    gap = kBins - 1 - p.bin;
    if (by_mass) {
      above = p.above;
    } else {
      want -= p.above;
    }
  }
  std::uint64_t prefix = 0;
  for (int hi = 64; hi > 0;) {
    const int bits = hi < kDigitBits ? hi : kDigitBits;
    const int shift = hi - bits;
    const std::uint64_t high_mask = hi == 64 ? 0 : ~((std::uint64_t{1} << hi) - 1);
    for (int b = static_cast<int>(threadIdx.x); b < kBins; b += kThreads) h.count[b] = 0, h.mass[b] = 0, h.top[b] = 0;
    __syncthreads();
    for (std::int64_t i = threadIdx.x; i < vocab; i += kThreads) {
      const float v = __fdiv_rn(row[i], temperature);
      if (isnan(v)) continue;
      const std::uint64_t key = sm::order_key(v, static_cast<std::int32_t>(i));
      if (key < floor || (key & high_mask) != prefix || (gap >= 0 && gap_bin(v, v_max) != gap)) continue;
      const int b = static_cast<int>((key >> shift) & ((std::uint64_t{1} << bits) - 1));
      atomicAdd(&h.count[b], 1u);
      atomicMax(&h.top[b], static_cast<unsigned long long>(key));
      if (by_mass) {
        const std::uint64_t m = sm::mass(v, v_max);
        if (m) atomicAdd(&h.mass[b], static_cast<unsigned long long>(m));
      }
    }
    __syncthreads();
    const Pick p = pick_bin(h, by_mass, want, above, total, top_p);
    const bool alone = h.count[p.bin] == 1;
    const std::uint64_t top = h.top[p.bin];
    __syncthreads();  // every thread has read the bins before they are cleared again
    if (alone) return top;  // alone in its bin: that key
    if (by_mass) {
      above = p.above;
    } else {
      want -= p.above;
    }
    prefix |= static_cast<std::uint64_t>(p.bin) << shift;
    hi = shift;
  }
  return prefix;
}

__global__ void __launch_bounds__(kThreads) sample_rows_kernel(const float* logits, std::int64_t vocab, Batch batch,
                                                               std::int32_t* out) {
  __shared__ Hist hist;
  const SampleArgs p = batch.a[blockIdx.x];
  const float* row = logits + static_cast<std::int64_t>(blockIdx.x) * vocab;
  std::int32_t* dst = out + blockIdx.x;

  if (p.temperature <= 0.0f) {  // greedy_token
    std::uint64_t k = 0;
    for (std::int64_t i = threadIdx.x; i < vocab; i += kThreads) {
      const float v = row[i];
      if (!isnan(v)) k = max_u64(k, sm::order_key(v, static_cast<std::int32_t>(i)));
    }
    k = block_max(k);
    if (threadIdx.x == 0) *dst = (isnan(row[0]) || k == 0) ? 0 : sm::id_of_key(k);
    return;
  }

  // The first candidate (the largest key; keys of real values are never 0) and the count.
  std::uint64_t first = 0, count = 0;
  for (std::int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float v = __fdiv_rn(row[i], p.temperature);
    if (isnan(v)) continue;
    ++count;
    first = max_u64(first, sm::order_key(v, static_cast<std::int32_t>(i)));
  }
  first = block_max(first);
  count = block_sum(count);
  if (count == 0) {
    if (threadIdx.x == 0) *dst = 0;
    return;
  }
  const std::int32_t first_id = sm::id_of_key(first);
  const float v_max = __fdiv_rn(row[first_id], p.temperature);

  std::uint64_t floor = 0;  // candidates kept by top-k and top-p: key >= floor
  if (p.top_k > 0 && static_cast<std::uint64_t>(p.top_k) < count)
    floor = radix_select(hist, row, vocab, p.temperature, v_max, 0, false, static_cast<std::uint64_t>(p.top_k), 1.0f);
  if (p.top_p < 1.0f) {
    const std::uint64_t cut = radix_select(hist, row, vocab, p.temperature, v_max, floor, true, 0, p.top_p);
    floor = max_u64(floor, cut);
  }
  if (!(1.0 >= static_cast<double>(p.min_p))) {  // min-p keeps nothing (the first's weight is 1): the first
    if (threadIdx.x == 0) *dst = first_id;
    return;
  }

  const std::uint64_t rk = row_key(p.seed, p.position);
  Best b{sm::score(v_max, rk, first_id), first_id};
  const bool min_p = p.min_p > 0.0f;
  for (std::int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float v = __fdiv_rn(row[i], p.temperature);
    if (isnan(v)) continue;
    const auto id = static_cast<std::int32_t>(i);
    if (sm::order_key(v, id) < floor) continue;
    if (min_p && !(sm::weight(v, v_max) >= static_cast<double>(p.min_p))) continue;
    const std::uint64_t key = mix64(rk ^ static_cast<std::uint32_t>(id));
    if (sm::cannot_win(v, key, b.score)) continue;
    const Best c{exact::add(static_cast<double>(v), gumbel_of_key(key)), id};
    if (better(c, b)) b = c;
  }
  b = block_best(b);
  if (threadIdx.x == 0) *dst = b.id;
}

__global__ void gumbel_kernel(std::uint64_t seed, std::int64_t position, const std::int32_t* tokens, std::int64_t n,
                              double* out) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = gumbel_noise(seed, position, tokens[i]);
}

}  // namespace

void gumbel_noise_device(std::uint64_t seed, std::int64_t position, const std::int32_t* tokens_dev, std::int64_t n,
                         double* out_dev, cudaStream_t s) {
  if (n <= 0) return;
  gumbel_kernel<<<static_cast<unsigned int>(ceil_div(n, 256)), 256, 0, s>>>(seed, position, tokens_dev, n, out_dev);
  check_launch("gumbel_noise");
}

void sample_rows(const float* logits, std::int64_t rows, std::int64_t vocab, const SampleArgs* args,
                 std::int32_t* out_dev, cudaStream_t s) {
  if (vocab > sm::kMaxVocab) throw std::invalid_argument("sample_rows: vocabulary over 2^21");
  for (std::int64_t r0 = 0; r0 < rows; r0 += kRowsPerLaunch) {
    const std::int64_t n = rows - r0 < kRowsPerLaunch ? rows - r0 : kRowsPerLaunch;
    Batch b{};
    for (std::int64_t i = 0; i < n; ++i) b.a[i] = args[r0 + i];
    sample_rows_kernel<<<static_cast<unsigned>(n), kThreads, 0, s>>>(logits + r0 * vocab, vocab, b, out_dev + r0);
    check_launch("sample_rows");
  }
}

void sample_tokens(const float* logits, std::int64_t rows, std::int64_t vocab, const SampleArgs* args,
                   std::int32_t* out_host, cudaStream_t s) {
  if (rows <= 0) return;
  std::int32_t* d_out = nullptr;
  auto check = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string("sample_tokens: ") + what + ": " + cudaGetErrorString(e));
  };
  check(cudaMalloc(&d_out, static_cast<std::size_t>(rows) * sizeof(std::int32_t)), "alloc");
  sample_rows(logits, rows, vocab, args, d_out, s);
  check(cudaMemcpyAsync(out_host, d_out, static_cast<std::size_t>(rows) * sizeof(std::int32_t), cudaMemcpyDeviceToHost, s),
        "copy out");
  check(cudaStreamSynchronize(s), "sync");
  cudaFree(d_out);
}

}  // namespace tf::cuda
