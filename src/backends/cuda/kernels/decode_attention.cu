// KV-cache writes and decode attention.
//
// Decode attention splits each query row's cache at fixed boundaries (kAttnSplit positions): block (split,
// head, row) copies the split's keys and values to shared memory (all loads in flight at once), computes
// the scores (one warp per position, lanes over head_dim, the xor butterfly), their max, exp(score - max),
// their sum in a fixed order, and o = sum p * v in position order (a thread per dim).
// A row with one split writes o / l; with several, each block writes (m, l, o) and the last block to finish
// combines the splits in split order (the atomic counter only elects that block; it orders no arithmetic).
// So a row's output depends on its query, its cache and its length alone: not on the other rows in the
// call, on which streams they belong to, or on the grid.
#include <cfloat>

#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;

__global__ void kv_write_kernel(const AttnRow* __restrict__ rows, const float* __restrict__ k,
                                const float* __restrict__ v, int kv_heads, int head_dim) {
  pdl_launch();
  pdl_wait();
  const std::int64_t r = blockIdx.x;
  const AttnRow row = rows[r];
  const int width = kv_heads * head_dim;
  for (int t = threadIdx.x; t < width; t += blockDim.x) {
    const int h = t / head_dim, d = t % head_dim;
    const std::int64_t at = (static_cast<std::int64_t>(h) * row.cap + row.write_pos) * head_dim + d;
    row.k[at] = k[r * width + t];
    row.v[at] = v[r * width + t];
  }
}

__device__ __forceinline__ float block_sum_fixed(float v, float* scratch) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = scratch[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) t = __fadd_rn(t, scratch[w]);
  __syncthreads();
  return t;
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
  v = warp_max(v);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = scratch[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) t = fmaxf(t, scratch[w]);
  __syncthreads();
  return t;
}

__global__ void __launch_bounds__(kThreads) decode_attention_kernel(DecodeAttnArgs a) {
  pdl_launch();
  pdl_wait();
  const int split = blockIdx.x, h = blockIdx.y, r = blockIdx.z;
  const AttnRow row = a.rows[r];
  const int len = row.len;
  const int nsplit = (len + kAttnSplit - 1) / kAttnSplit;
  if (split >= nsplit) return;
  const int D = a.head_dim;
  const int p0 = split * kAttnSplit;
  const int n = min(len - p0, kAttnSplit);
  const int kvh = h / (a.heads / a.kv_heads);
  const float* K = row.k + (static_cast<std::int64_t>(kvh) * row.cap + p0) * D;
  const float* V = row.v + (static_cast<std::int64_t>(kvh) * row.cap + p0) * D;
  const float* q = a.q + (static_cast<std::int64_t>(r) * a.heads + h) * D;

  // The split's keys and values (n x D each, contiguous in the cache) and the query go to shared memory
  // with all their loads in flight at once; everything after reads shared memory.
  extern __shared__ float4 smem4[];
  float* ks = reinterpret_cast<float*>(smem4);
  float* vs = ks + kAttnSplit * D;
  float* qs = vs + kAttnSplit * D;
  __shared__ float sc[kAttnSplit];
  __shared__ float scratch[kThreads / 32];
  __shared__ int is_last;
  {
    const int n4 = n * D / 4;
    const float4* K4 = reinterpret_cast<const float4*>(K);
    const float4* V4 = reinterpret_cast<const float4*>(V);
    float4* ks4 = reinterpret_cast<float4*>(ks);
    float4* vs4 = reinterpret_cast<float4*>(vs);
    for (int i = threadIdx.x; i < n4; i += kThreads) {
      ks4[i] = K4[i];
      vs4[i] = V4[i];
    }
    for (int d = threadIdx.x; d < D; d += kThreads) qs[d] = q[d];
  }
  __syncthreads();

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  constexpr int NW = kThreads / 32;
  // Scores: warp w takes positions w, w + NW, ...; each dot sums its lanes' dims in order, then the butterfly.
  for (int i = warp; i < n; i += NW) {
    const float* kr = ks + i * D;
    float dot = 0.0f;
    for (int d = lane; d < D; d += 32) dot = __fmaf_rn(qs[d], kr[d], dot);
    dot = warp_sum(dot);
    if (lane == 0) sc[i] = __fmul_rn(dot, a.scale);
  }
  __syncthreads();

  float m = -FLT_MAX;
  for (int i = threadIdx.x; i < n; i += kThreads) m = fmaxf(m, sc[i]);
  m = block_max(m, scratch);
  float l = 0.0f;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float e = expf(__fsub_rn(sc[i], m));
    sc[i] = e;
    l = __fadd_rn(l, e);
  }
  l = block_sum_fixed(l, scratch);  // ends with a barrier: every sc[i] is the weight now

  // o = sum p v: thread per dim, over the positions in order.
  const std::int64_t slot = static_cast<std::int64_t>(r) * a.heads + h;
  float o[kMaxHeadDim / kThreads];
#pragma unroll
  for (int u = 0; u < kMaxHeadDim / kThreads; ++u) {
    const int d = threadIdx.x + u * kThreads;
    float acc = 0.0f;
    if (d < D)
      for (int i = 0; i < n; ++i) acc = __fmaf_rn(sc[i], vs[i * D + d], acc);
    o[u] = acc;
  }
  if (nsplit == 1) {
#pragma unroll
    for (int u = 0; u < kMaxHeadDim / kThreads; ++u) {
      const int d = threadIdx.x + u * kThreads;
      if (d < D) a.out[slot * D + d] = __fdiv_rn(o[u], l);
    }
    return;
  }

  // Several splits: publish (m, l, o), then the last block combines in split order.
  float* mine = a.work + (slot * a.max_splits + split) * (D + 2);
#pragma unroll
  for (int u = 0; u < kMaxHeadDim / kThreads; ++u) {
    const int d = threadIdx.x + u * kThreads;
    if (d < D) mine[2 + d] = o[u];
  }
  if (threadIdx.x == 0) {
    mine[0] = m;
    mine[1] = l;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) is_last = atomicAdd(&a.counters[slot], 1u) == static_cast<unsigned int>(nsplit - 1);
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  const float* base = a.work + slot * a.max_splits * (D + 2);
  float M = -FLT_MAX;
  for (int s = 0; s < nsplit; ++s) M = fmaxf(M, __ldcg(base + s * (D + 2)));
  float L = 0.0f;
  for (int s = 0; s < nsplit; ++s) {
    const float f = expf(__fsub_rn(__ldcg(base + s * (D + 2)), M));
    L = __fadd_rn(L, __fmul_rn(f, __ldcg(base + s * (D + 2) + 1)));
  }
#pragma unroll
  for (int u = 0; u < kMaxHeadDim / kThreads; ++u) {
    const int d = threadIdx.x + u * kThreads;
    if (d >= D) continue;
    float acc = 0.0f;
    for (int s = 0; s < nsplit; ++s) {
      const float f = expf(__fsub_rn(__ldcg(base + s * (D + 2)), M));
      acc = __fmaf_rn(f, __ldcg(base + s * (D + 2) + 2 + d), acc);
    }
    a.out[slot * D + d] = __fdiv_rn(acc, L);
  }
  if (threadIdx.x == 0) a.counters[slot] = 0u;
}

}  // namespace

void kv_write(const AttnRow* rows, const float* k, const float* v, std::int64_t n_rows, int kv_heads, int head_dim,
              cudaStream_t s) {
  if (n_rows <= 0) return;
  launch_pdl(kv_write_kernel, dim3(static_cast<unsigned int>(n_rows)), dim3(256), 0, s, rows, k, v, kv_heads, head_dim);
  check_launch("kv_write");
}

std::size_t decode_attention_smem(int head_dim) {
  return (2 * static_cast<std::size_t>(kAttnSplit) + 1) * static_cast<std::size_t>(head_dim) * sizeof(float);
}

void prepare_decode_attention() {
  static const bool done = [] {
    cudaFuncSetAttribute(decode_attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         static_cast<int>(decode_attention_smem(kMaxHeadDim)));
    return true;
  }();
  (void)done;
}

std::size_t decode_attention_work_floats(int n_rows, int heads, int head_dim, int max_splits) {
  return static_cast<std::size_t>(n_rows) * heads * max_splits * (head_dim + 2);
}

void decode_attention(const DecodeAttnArgs& a, cudaStream_t s) {
  if (a.n_rows <= 0) return;
  if (a.head_dim > kMaxHeadDim || a.head_dim <= 0 || a.head_dim % 4 != 0)
    throw std::invalid_argument("decode_attention: head_dim a multiple of 4, at most 256");
  if (a.kv_heads <= 0 || a.heads % a.kv_heads != 0) throw std::invalid_argument("decode_attention: heads % kv_heads");
  if (a.max_splits > 1 && (a.work == nullptr || a.counters == nullptr))
    throw std::invalid_argument("decode_attention: several splits need work and counters");
  prepare_decode_attention();
  const dim3 grid(static_cast<unsigned int>(a.max_splits), static_cast<unsigned int>(a.heads),
                  static_cast<unsigned int>(a.n_rows));
  launch_pdl(decode_attention_kernel, grid, dim3(kThreads), decode_attention_smem(a.head_dim), s, a);
  check_launch("decode_attention");
}

}  // namespace tf::cuda
