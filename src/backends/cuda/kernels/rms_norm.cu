// RMSNorm with the residual add fused: sum = a + b (written when asked), out = sum * rsqrt(mean(sum^2) + eps)
// * weight. One block per row, so a row's result never depends on the other rows. Where the width is a
// multiple of 4 (every model's hidden size), the sum of squares is added in the order of norm_part_sum
// (common.cuh), the order of the norms fused into the decode matmuls: a norm gives the same bits whether a
// matmul computes it in its prologue (narrow calls) or this kernel does (wide ones). Other widths use
// thread-strided partials, the butterfly and the warps in order.
#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

constexpr int kThreads = 256;

// MAXV: values per thread kept in registers (cols <= kThreads * MAXV), so the row is read once.
template <int MAXV>
__global__ void __launch_bounds__(kThreads) rms_norm_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                                            float* __restrict__ sum_out, float* __restrict__ out,
                                                            const float* __restrict__ weight, std::int64_t cols,
                                                            float eps) {
  pdl_launch();
  pdl_wait();
  const std::int64_t row = blockIdx.x;
  const float* ar = a + row * cols;
  const float* br = b != nullptr ? b + row * cols : nullptr;
  float v[MAXV];
#pragma unroll
  for (int k = 0; k < MAXV; ++k) {
    const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * kThreads;
    v[k] = i < cols ? ar[i] : 0.0f;
  }
  if (br != nullptr) {
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
      const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * kThreads;
      if (i < cols) {
        v[k] = __fadd_rn(v[k], br[i]);
        if (sum_out != nullptr) sum_out[row * cols + i] = v[k];
      }
    }
  }
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < MAXV; ++k)
    if (threadIdx.x + static_cast<std::int64_t>(k) * kThreads < cols) ss = __fmaf_rn(v[k], v[k], ss);
  __shared__ float part[kThreads / 32];
  ss = warp_sum(ss);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = ss;
  __syncthreads();
  float total = part[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) total = __fadd_rn(total, part[w]);
  const float inv = rsqrtf(__fadd_rn(__fdiv_rn(total, static_cast<float>(cols)), eps));
#pragma unroll
  for (int k = 0; k < MAXV; ++k) {
    const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * kThreads;
    if (i < cols) out[row * cols + i] = __fmul_rn(__fmul_rn(v[k], inv), weight[i]);
  }
}

// The canonical order: warp p sums part p of the row's float4s; then every thread forms 1 / rms.
__global__ void __launch_bounds__(32 * kNormParts)
    rms_norm_parts_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ sum_out,
                          float* __restrict__ out, const float* __restrict__ weight, std::int64_t cols, float eps) {
  pdl_launch();
  pdl_wait();
  const std::int64_t row = blockIdx.x;
  const float4* ar = reinterpret_cast<const float4*>(a + row * cols);
  const float4* br = b != nullptr ? reinterpret_cast<const float4*>(b + row * cols) : nullptr;
  float4* sr = sum_out != nullptr ? reinterpret_cast<float4*>(sum_out + row * cols) : nullptr;
  const std::int64_t n4 = cols / 4;
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  auto load = [&](std::int64_t i) { return load_sum4(ar, br, i); };
  __shared__ float parts[kNormParts];
  const float ss = norm_part_sum(load, warp, n4, lane);
  if (lane == 0) parts[warp] = ss;
  __syncthreads();
  const float inv = norm_inv_rms(parts, 1, cols, eps);
  const float4* wr = reinterpret_cast<const float4*>(weight);
  float4* orow = reinterpret_cast<float4*>(out + row * cols);
  for (std::int64_t i = threadIdx.x; i < n4; i += blockDim.x) {
    const float4 v = load(i);
    if (sr != nullptr) sr[i] = v;
    const float4 w = wr[i];
    orow[i] = make_float4(__fmul_rn(__fmul_rn(v.x, inv), w.x), __fmul_rn(__fmul_rn(v.y, inv), w.y),
                          __fmul_rn(__fmul_rn(v.z, inv), w.z), __fmul_rn(__fmul_rn(v.w, inv), w.w));
  }
}

bool aligned16(const void* p) { return p == nullptr || (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

template <int MAXV>
void launch(const float* a, const float* b, float* sum_out, float* out, const float* weight, std::int64_t rows,
            std::int64_t cols, float eps, cudaStream_t s) {
  launch_pdl(rms_norm_kernel<MAXV>, dim3(static_cast<unsigned int>(rows)), dim3(kThreads), 0, s, a, b, sum_out, out,
             weight, cols, eps);
}

}  // namespace

void rms_norm(const float* a, const float* b, float* sum_out, float* out, const float* weight, std::int64_t rows,
              std::int64_t cols, float eps, cudaStream_t s) {
  if (rows <= 0) return;
  if (cols % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(sum_out) && aligned16(out) && aligned16(weight)) {
    launch_pdl(rms_norm_parts_kernel, dim3(static_cast<unsigned int>(rows)), dim3(32 * kNormParts), 0, s, a, b, sum_out,
               out, weight, cols, eps);
    check_launch("rms_norm");
    return;
  }
  if (cols <= kThreads * 4) launch<4>(a, b, sum_out, out, weight, rows, cols, eps, s);
  else if (cols <= kThreads * 8) launch<8>(a, b, sum_out, out, weight, rows, cols, eps, s);
  else if (cols <= kThreads * 16) launch<16>(a, b, sum_out, out, weight, rows, cols, eps, s);
  else if (cols <= kThreads * 24) launch<24>(a, b, sum_out, out, weight, rows, cols, eps, s);
  else if (cols <= kThreads * 32) launch<32>(a, b, sum_out, out, weight, rows, cols, eps, s);
  else throw std::invalid_argument("rms_norm: at most 8192 columns");
  check_launch("rms_norm");
}

}  // namespace tf::cuda
