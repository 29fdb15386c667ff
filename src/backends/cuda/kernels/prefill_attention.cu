// Prefill attention, flash-style: block (query tile of 32 rows, head) walks the cache in tiles of 32 positions
// up to its last row's position, keeping a running max, sum and output per row (online softmax), so the
// score matrix never reaches device memory. Causal: row i (position start + i) sees positions <= start + i.
// GQA: head h reads kv head h / (heads / kv_heads). Four threads per query row: each scores 8 keys of a
// tile and owns head_dim / 4 output dims. float32 SIMT throughout; fixed order, so deterministic.
#include <cfloat>

#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

constexpr int BQ = 32, BKV = 32, kThreads = 128;

template <int D>
__global__ void __launch_bounds__(kThreads) prefill_attention_kernel(PrefillAttnArgs a) {
  pdl_launch();
  pdl_wait();
  extern __shared__ float smem[];
  constexpr int S = D + 1;  // padded row stride: rows land in different banks
  float* qs = smem;
  float* ks = qs + BQ * S;
  float* vs = ks + BKV * S;

  const int h = blockIdx.y;
  const int q0 = blockIdx.x * BQ;
  const int kvh = h / (a.heads / a.kv_heads);
  const std::int64_t start = *a.start;
  const int tid = threadIdx.x;
  const int qi = tid / 4, sub = tid % 4;
  const int width = a.heads * D;

  for (int t = tid; t < BQ * D; t += kThreads) {
    const int i = t / D, d = t % D;
    const int row = min(q0 + i, a.n_rows - 1);
    qs[i * S + d] = a.q[static_cast<std::int64_t>(row) * width + h * D + d];
  }

  const std::int64_t my_pos = start + q0 + qi;
  const std::int64_t last_pos = start + min(q0 + BQ, a.n_rows) - 1;
  const float* K = a.k + static_cast<std::int64_t>(kvh) * a.cap * D;
  const float* V = a.v + static_cast<std::int64_t>(kvh) * a.cap * D;

  float m = -FLT_MAX, l = 0.0f;
  float o[D / 4];
#pragma unroll
  for (int u = 0; u < D / 4; ++u) o[u] = 0.0f;

  for (std::int64_t t0 = 0; t0 <= last_pos; t0 += BKV) {
    __syncthreads();  // the previous tile is consumed (and the q tile is written, on the first pass)
    const std::int64_t left = last_pos + 1 - t0;
    const int nk = static_cast<int>(left < BKV ? left : BKV);
    for (int t = tid; t < BKV * D; t += kThreads) {
      const int j = t / D, d = t % D;
      const std::int64_t p = t0 + min(j, nk - 1);
      ks[j * S + d] = K[p * D + d];
      vs[j * S + d] = V[p * D + d];
    }
    __syncthreads();
    float s[BKV / 4];
    float tile_max = -FLT_MAX;
#pragma unroll
    for (int t = 0; t < BKV / 4; ++t) {
      const int j = sub + 4 * t;
      float dot = 0.0f;
#pragma unroll 8
      for (int d = 0; d < D; ++d) dot = __fmaf_rn(qs[qi * S + d], ks[j * S + d], dot);
      const bool ok = j < nk && t0 + j <= my_pos;
      s[t] = ok ? __fmul_rn(dot, a.scale) : -INFINITY;
      tile_max = fmaxf(tile_max, s[t]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float m_new = fmaxf(m, tile_max);
    const float corr = expf(__fsub_rn(m, m_new));
    float psum = 0.0f;
#pragma unroll
    for (int t = 0; t < BKV / 4; ++t) {
      s[t] = expf(__fsub_rn(s[t], m_new));
      psum = __fadd_rn(psum, s[t]);
    }
    psum = __fadd_rn(psum, __shfl_xor_sync(0xffffffffu, psum, 1));
    psum = __fadd_rn(psum, __shfl_xor_sync(0xffffffffu, psum, 2));
    l = __fadd_rn(__fmul_rn(l, corr), psum);
    m = m_new;
#pragma unroll
    for (int u = 0; u < D / 4; ++u) o[u] = __fmul_rn(o[u], corr);
    const int lane_base = (tid & 31) & ~3;
#pragma unroll
    for (int j = 0; j < BKV; ++j) {
      const float p = __shfl_sync(0xffffffffu, s[j / 4], lane_base + (j % 4));
#pragma unroll
      for (int u = 0; u < D / 4; ++u) o[u] = __fmaf_rn(p, vs[j * S + sub + 4 * u], o[u]);
    }
  }
  if (q0 + qi < a.n_rows) {
    float* out = a.out + static_cast<std::int64_t>(q0 + qi) * width + h * D;
#pragma unroll
    for (int u = 0; u < D / 4; ++u) out[sub + 4 * u] = __fdiv_rn(o[u], l);
  }
}

template <int D>
void launch(const PrefillAttnArgs& a, cudaStream_t s) {
  const std::size_t smem = static_cast<std::size_t>(BQ + 2 * BKV) * (D + 1) * sizeof(float);
  static bool configured = false;
  if (!configured) {
    cudaFuncSetAttribute(prefill_attention_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         static_cast<int>(smem));
    configured = true;
  }
  const dim3 grid(static_cast<unsigned int>(ceil_div(a.n_rows, BQ)), static_cast<unsigned int>(a.heads));
  launch_pdl(prefill_attention_kernel<D>, grid, dim3(kThreads), smem, s, a);
  check_launch("prefill_attention");
}

}  // namespace

void prefill_attention(const PrefillAttnArgs& a, cudaStream_t s) {
  if (a.n_rows <= 0) return;
  if (a.kv_heads <= 0 || a.heads % a.kv_heads != 0) throw std::invalid_argument("prefill_attention: heads % kv_heads");
  switch (a.head_dim) {
    case 32: return launch<32>(a, s);
    case 64: return launch<64>(a, s);
    case 80: return launch<80>(a, s);
    case 96: return launch<96>(a, s);
    case 128: return launch<128>(a, s);
    case 256: return launch<256>(a, s);
    default: throw std::invalid_argument("prefill_attention: head_dim must be 32, 64, 80, 96, 128 or 256");
  }
}

}  // namespace tf::cuda
