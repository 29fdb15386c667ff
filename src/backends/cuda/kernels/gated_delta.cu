// Gated DeltaNet (Qwen3-Next / Qwen3.5 linear attention) on the GPU: the causal depthwise conv with SiLU, then
// the gated delta-rule recurrence. Both walk each stream's rows in position order, so a position's bits depend
// only on its inputs and the state before it: prefill chunks, decode steps, verify windows and the replay of a
// rolled-back window all compute the same values (exact drafting and the prompt cache rely on it). A chunked
// (parallel-in-time) prefill would change those bits; prefill takes the sequential path for now
// (docs/cuda.md, "Gated DeltaNet").
#include <cmath>

#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

__device__ __forceinline__ float sigmoid(float x) { return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x))); }

// torch's softplus (beta 1, threshold 20).
__device__ __forceinline__ float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

// A thread per channel (blockIdx.x's) of the run starting at row slot blockIdx.y: window in registers,
// conv weights in registers, the run's rows in order.
template <ElemType E>
__global__ void gdn_conv_kernel(const GdnRow* __restrict__ rows, const float* __restrict__ qkv,
                                const void* __restrict__ conv_w, GdnShape s, float* __restrict__ y) {
  pdl_launch();
  pdl_wait();
  const GdnRow row = rows[blockIdx.y];
  const std::int64_t C = s.channels();
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row.rows <= 0 || c >= C) return;
  const int K = s.conv_kernel;
  float w[kGdnMaxConv], win[kGdnMaxConv];
#pragma unroll
  for (int j = 0; j < kGdnMaxConv; ++j) {
    w[j] = j < K ? load_elem<E>(conv_w, c * K + j) : 0.0f;
    win[j] = j < K - 1 ? row.conv_in[j * C + c] : 0.0f;
  }
  const std::int64_t r0 = blockIdx.y;
  for (int t = 0; t < row.rows; ++t) {
    const float x = qkv[(r0 + t) * C + c];
    if (row.save != nullptr) row.save[t * C + c] = x;
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < kGdnMaxConv - 1; ++j)
      if (j < K - 1) acc = __fadd_rn(acc, __fmul_rn(w[j], win[j]));
    // The current input's tap: w[K - 1] (a register array indexed by a runtime K would live in local memory).
    float wl = 0.0f;
#pragma unroll
    for (int j = 0; j < kGdnMaxConv; ++j)
      if (j == K - 1) wl = w[j];
    acc = __fadd_rn(acc, __fmul_rn(wl, x));
    y[(r0 + t) * C + c] = __fmul_rn(acc, sigmoid(acc));  // SiLU
#pragma unroll
    for (int j = 0; j < kGdnMaxConv - 1; ++j)
      if (j < K - 2) win[j] = win[j + 1];
#pragma unroll
    for (int j = 0; j < kGdnMaxConv - 1; ++j)
      if (j == K - 2) win[j] = x;
  }
#pragma unroll
  for (int j = 0; j < kGdnMaxConv - 1; ++j)
    if (j < K - 1) row.conv_out[j * C + c] = win[j];
}

// A warp per (value head, 32 columns of its state) of the run starting at row slot blockIdx.y. Lane j keeps
// column j of S [k_dim, v_dim] in registers for the whole run; q and k of the head's key head are normalised
// into shared memory by the warp (every lane adds the squares in the same butterfly order: one value).
template <int KD>
__global__ void __launch_bounds__(32)
    gdn_recurrence_kernel(const GdnRow* __restrict__ rows, const float* __restrict__ y, const float* __restrict__ a,
                          const float* __restrict__ b, const float* __restrict__ a_log,
                          const float* __restrict__ dt_bias, GdnShape s, float* __restrict__ out) {
  pdl_launch();
  pdl_wait();
  const GdnRow row = rows[blockIdx.y];
  if (row.rows <= 0) return;
  const int chunks = (s.v_dim + 31) / 32;
  const int h = static_cast<int>(blockIdx.x) / chunks, chunk = static_cast<int>(blockIdx.x) % chunks;
  const int lane = static_cast<int>(threadIdx.x);
  const int j = chunk * 32 + lane;
  const bool active = j < s.v_dim;
  const int kh = s.tiled_value_heads ? h % s.k_heads : h / (s.v_heads / s.k_heads);
  const std::int64_t C = s.channels(), key_width = static_cast<std::int64_t>(s.k_heads) * KD;
  const int H = s.v_heads, dv = s.v_dim;
  const float* S_in = row.state_in + static_cast<std::int64_t>(h) * KD * dv;
  float* S_out = row.state_out + static_cast<std::int64_t>(h) * KD * dv;
  float st[KD];
#pragma unroll
  for (int i = 0; i < KD; ++i) st[i] = active ? S_in[static_cast<std::int64_t>(i) * dv + j] : 0.0f;
  __shared__ float qs[KD], ks[KD];
  const float q_scale = __fdiv_rn(1.0f, __fsqrt_rn(static_cast<float>(KD)));
  const float A = expf(a_log[h]), dtb = dt_bias[h];
  const std::int64_t r0 = blockIdx.y;
  for (int t = 0; t < row.rows; ++t) {
    const float* yr = y + (r0 + t) * C;
    float qss = 0.0f, kss = 0.0f;
    for (int i = lane; i < KD; i += 32) {
      const float q = yr[kh * KD + i], k = yr[key_width + kh * KD + i];
      qss = __fadd_rn(qss, __fmul_rn(q, q));
      kss = __fadd_rn(kss, __fmul_rn(k, k));
    }
    qss = warp_sum(qss);
    kss = warp_sum(kss);
    const float qinv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(qss, 1e-6f)));
    const float kinv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(kss, 1e-6f)));
    for (int i = lane; i < KD; i += 32) {
      qs[i] = __fmul_rn(__fmul_rn(yr[kh * KD + i], qinv), q_scale);
      ks[i] = __fmul_rn(yr[key_width + kh * KD + i], kinv);
    }
    const float at = a[(r0 + t) * H + h], bt = b[(r0 + t) * H + h];
    if (row.save != nullptr && chunk == 0 && lane == 0) {
      row.save[static_cast<std::int64_t>(row.save_rows) * C + t * H + h] = at;
      row.save[static_cast<std::int64_t>(row.save_rows) * (C + H) + t * H + h] = bt;
    }
    __syncwarp();
    const float beta = sigmoid(bt);
    const float decay = expf(-__fmul_rn(A, softplus(__fadd_rn(at, dtb))));
    const float v = active ? yr[2 * key_width + static_cast<std::int64_t>(h) * dv + j] : 0.0f;
    float kv_mem = 0.0f;
#pragma unroll
    for (int i = 0; i < KD; ++i) {
      st[i] = __fmul_rn(st[i], decay);
      kv_mem = __fadd_rn(kv_mem, __fmul_rn(st[i], ks[i]));
    }
    const float delta = __fmul_rn(__fsub_rn(v, kv_mem), beta);
    float o = 0.0f;
#pragma unroll
    for (int i = 0; i < KD; ++i) {
      st[i] = __fadd_rn(st[i], __fmul_rn(ks[i], delta));
      o = __fadd_rn(o, __fmul_rn(st[i], qs[i]));
    }
    if (active) out[(r0 + t) * H * dv + static_cast<std::int64_t>(h) * dv + j] = o;
    __syncwarp();  // qs and ks are read before the next row writes them
  }
  if (active)
#pragma unroll
    for (int i = 0; i < KD; ++i) S_out[static_cast<std::int64_t>(i) * dv + j] = st[i];
}

template <ElemType E>
void launch_conv(const GdnRow* rows, std::int64_t n, const float* qkv, const void* w, const GdnShape& s, float* y,
                 cudaStream_t st) {
  const dim3 grid(static_cast<unsigned int>(ceil_div(s.channels(), 128)), static_cast<unsigned int>(n));
  launch_pdl(gdn_conv_kernel<E>, grid, dim3(128), 0, st, rows, qkv, w, s, y);
}

template <int KD>
void launch_recurrence(const GdnRow* rows, std::int64_t n, const float* y, const float* a, const float* b,
                       const float* a_log, const float* dt_bias, const GdnShape& s, float* out, cudaStream_t st) {
  const dim3 grid(static_cast<unsigned int>(s.v_heads * ((s.v_dim + 31) / 32)), static_cast<unsigned int>(n));
  launch_pdl(gdn_recurrence_kernel<KD>, grid, dim3(32), 0, st, rows, y, a, b, a_log, dt_bias, s, out);
}

}  // namespace

bool gdn_supported(const GdnShape& s) {
  const bool kd = s.k_dim == 16 || s.k_dim == 32 || s.k_dim == 64 || s.k_dim == 128;
  return kd && s.k_heads > 0 && s.v_heads > 0 && s.v_heads % s.k_heads == 0 && s.v_dim > 0 && s.conv_kernel >= 1 &&
         s.conv_kernel <= kGdnMaxConv;
}

void gdn_conv(const GdnRow* rows, std::int64_t n, const float* qkv, const void* conv_w, ElemType conv_t,
              const GdnShape& s, float* y, cudaStream_t st) {
  if (n <= 0) return;
  if (!gdn_supported(s)) throw std::invalid_argument("gdn_conv: shape");
  if (n > 65535) throw std::invalid_argument("gdn_conv: at most 65535 rows a call");
  switch (conv_t) {
    case ElemType::F32: launch_conv<ElemType::F32>(rows, n, qkv, conv_w, s, y, st); break;
    case ElemType::F16: launch_conv<ElemType::F16>(rows, n, qkv, conv_w, s, y, st); break;
    case ElemType::BF16: launch_conv<ElemType::BF16>(rows, n, qkv, conv_w, s, y, st); break;
  }
  check_launch("gdn_conv");
}

void gdn_recurrence(const GdnRow* rows, std::int64_t n, const float* y, const float* a, const float* b,
                    const float* a_log, const float* dt_bias, const GdnShape& s, float* out, cudaStream_t st) {
  if (n <= 0) return;
  if (!gdn_supported(s)) throw std::invalid_argument("gdn_recurrence: shape");
  if (n > 65535) throw std::invalid_argument("gdn_recurrence: at most 65535 rows a call");
  switch (s.k_dim) {
    case 16: launch_recurrence<16>(rows, n, y, a, b, a_log, dt_bias, s, out, st); break;
    case 32: launch_recurrence<32>(rows, n, y, a, b, a_log, dt_bias, s, out, st); break;
    case 64: launch_recurrence<64>(rows, n, y, a, b, a_log, dt_bias, s, out, st); break;
    default: launch_recurrence<128>(rows, n, y, a, b, a_log, dt_bias, s, out, st); break;
  }
  check_launch("gdn_recurrence");
}

}  // namespace tf::cuda
