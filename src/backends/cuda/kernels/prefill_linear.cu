// The prefill GEMM: y [M, N] = x [M, K] * w^T, w [N, K] affine 2/4/8-bit or dense. 128x128 output tiles,
// K in steps of 16, 256 threads each computing 8x8 outputs in float32 (SIMT fused multiply-adds). Weights
// are dequantized (w = fma(scale, q, bias)) into shared memory once per tile and reused by 128 rows.
// Deterministic (fixed order), but the order differs from the decode kernel's: the chunk plan decides
// which path a row takes, never the number of rows of a decode or verify call (those use decode_linear).
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/tiled_layout.h"

namespace tf::cuda {
namespace {

constexpr int BM = 128, BN = 128, BK = 16, PAD = 4;

// Eight consecutive weights of row n starting at k (k % 8 == 0), as floats.
template <int BITS, ElemType E>
__device__ __forceinline__ void load_w8(const WeightView& w, std::int64_t row_bytes, std::int64_t gpr,
                                        std::int64_t n, std::int64_t k, float (&out)[8]) {
  const unsigned char* row = static_cast<const unsigned char*>(w.data) + n * row_bytes;
  // Word i of row n, in either code layout (tiled_layout.h).
  auto word_at = [&](std::int64_t i) {
    if (w.tiled) return __ldg(static_cast<const unsigned int*>(w.data) + tiled_word_index(n, i, row_bytes / 4));
    return __ldg(reinterpret_cast<const unsigned int*>(row) + i);
  };
  if constexpr (BITS == 2) {
    // Eight 2-bit codes are one 16-bit half of a word (k % 8 == 0): word k / 16, from bit (k % 16) * 2.
    const unsigned int half = word_at(k / 16) >> ((k % 16) * 2);
    const std::int64_t g = k / w.group;
    const float s = load_elem<E>(w.scales, n * gpr + g), b = load_elem<E>(w.biases, n * gpr + g);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fmaf_rn(s, static_cast<float>((half >> (2 * i)) & 0x3u), b);
  } else if constexpr (BITS == 4) {
    const unsigned int word = word_at(k / 8);
    const std::int64_t g = k / w.group;
    const float s = load_elem<E>(w.scales, n * gpr + g), b = load_elem<E>(w.biases, n * gpr + g);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __fmaf_rn(s, static_cast<float>((word >> (4 * i)) & 0xFu), b);
  } else if constexpr (BITS == 8) {
    const uint2 v = make_uint2(word_at(k / 4), word_at(k / 4 + 1));
    const std::int64_t g = k / w.group;
    const float s = load_elem<E>(w.scales, n * gpr + g), b = load_elem<E>(w.biases, n * gpr + g);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = __fmaf_rn(s, static_cast<float>((v.x >> (8 * i)) & 0xFFu), b);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[4 + i] = __fmaf_rn(s, static_cast<float>((v.y >> (8 * i)) & 0xFFu), b);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = load_elem<E>(row, k + i);
  }
}

template <int BITS, ElemType E>
__global__ void __launch_bounds__(256) prefill_linear_kernel(const float* __restrict__ x, std::int64_t x_stride,
                                                             std::int64_t M, WeightView w, float* __restrict__ y,
                                                             std::int64_t y_stride, std::int64_t row_bytes,
                                                             std::int64_t gpr) {
  pdl_launch();
  pdl_wait();
  __shared__ __align__(16) float xs[BK][BM + PAD];
  __shared__ __align__(16) float ws[BK][BN + PAD];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * BM, n0 = static_cast<std::int64_t>(blockIdx.x) * BN;
  const std::int64_t N = w.rows, K = w.cols;

  // Loader roles: x: 2 float4 per thread (rows lm, lm + 64; k quad lk); w: row ln, 8 weights at lkw.
  const int lm = tid / 4, lk = (tid % 4) * 4;
  const int ln = tid / 2, lkw = (tid % 2) * 8;
  const std::int64_t xm0 = min(m0 + lm, M - 1), xm1 = min(m0 + lm + 64, M - 1);
  const bool wvalid = n0 + ln < N;
  const std::int64_t wn = wvalid ? n0 + ln : 0;

  float4 rx0, rx1;
  float rw[8];
  auto load = [&](std::int64_t k0) {
    rx0 = *reinterpret_cast<const float4*>(x + xm0 * x_stride + k0 + lk);
    rx1 = *reinterpret_cast<const float4*>(x + xm1 * x_stride + k0 + lk);
    if (wvalid) {
      load_w8<BITS, E>(w, row_bytes, gpr, wn, k0 + lkw, rw);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) rw[i] = 0.0f;
    }
  };
  auto store = [&]() {
    xs[lk + 0][lm] = rx0.x;
    xs[lk + 1][lm] = rx0.y;
    xs[lk + 2][lm] = rx0.z;
    xs[lk + 3][lm] = rx0.w;
    xs[lk + 0][lm + 64] = rx1.x;
    xs[lk + 1][lm + 64] = rx1.y;
    xs[lk + 2][lm + 64] = rx1.z;
    xs[lk + 3][lm + 64] = rx1.w;
#pragma unroll
    for (int i = 0; i < 8; ++i) ws[lkw + i][ln] = rw[i];
  };

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  load(0);
  store();
  __syncthreads();
  for (std::int64_t k0 = 0; k0 < K; k0 += BK) {
    const bool more = k0 + BK < K;
    if (more) load(k0 + BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&xs[k][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&xs[k][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&ws[k][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&ws[k][64 + tx * 4]);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = __fmaf_rn(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
    if (more) {
      store();
      __syncthreads();
    }
  }

#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const std::int64_t m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    if (m >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int64_t n = n0 + h * 64 + tx * 4;
      float* dst = y + m * y_stride + n;
      if (n + 3 < N && (y_stride & 3) == 0) {
        *reinterpret_cast<float4*>(dst) = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
      } else {
        for (int j = 0; j < 4; ++j)
          if (n + j < N) dst[j] = acc[i][4 * h + j];
      }
    }
  }
}

template <int BITS, ElemType E>
void launch(const float* x, std::int64_t x_stride, std::int64_t M, const WeightView& w, float* y,
            std::int64_t y_stride, cudaStream_t s) {
  const std::int64_t row_bytes = BITS > 0 ? w.cols * BITS / 8 : w.cols * static_cast<std::int64_t>(elem_bytes(E));
  const std::int64_t gpr = BITS > 0 ? w.cols / w.group : 0;
  const dim3 grid(static_cast<unsigned int>(ceil_div(w.rows, BN)), static_cast<unsigned int>(ceil_div(M, BM)));
  launch_pdl(prefill_linear_kernel<BITS, E>, grid, dim3(256), 0, s, x, x_stride, M, w, y, y_stride, row_bytes, gpr);
  check_launch("prefill_linear");
}

template <int BITS>
void launch_dtype(const float* x, std::int64_t xs, std::int64_t M, const WeightView& w, float* y, std::int64_t ys,
                  cudaStream_t s) {
  switch (w.dtype) {
    case ElemType::F32: return launch<BITS, ElemType::F32>(x, xs, M, w, y, ys, s);
    case ElemType::F16: return launch<BITS, ElemType::F16>(x, xs, M, w, y, ys, s);
    case ElemType::BF16: return launch<BITS, ElemType::BF16>(x, xs, M, w, y, ys, s);
  }
}

}  // namespace

void prefill_linear(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                    std::int64_t y_stride, cudaStream_t s) {
  if (rows <= 0) return;
  if (w.cols % BK != 0 || (x_stride & 3) != 0 || (reinterpret_cast<std::uintptr_t>(x) & 15) != 0)
    throw std::invalid_argument("prefill_linear: cols must be a multiple of 16 and x 16-byte aligned");
  if (w.bits != 0 && (w.group % BK != 0)) throw std::invalid_argument("prefill_linear: group must be a multiple of 16");
  switch (w.bits) {
    case 2: return launch_dtype<2>(x, x_stride, rows, w, y, y_stride, s);
    case 4: return launch_dtype<4>(x, x_stride, rows, w, y, y_stride, s);
    case 8: return launch_dtype<8>(x, x_stride, rows, w, y, y_stride, s);
    case 0: return launch_dtype<0>(x, x_stride, rows, w, y, y_stride, s);
    default: throw std::invalid_argument("prefill_linear: bits must be 2, 4, 8 or 0 (dense)");
  }
}

}  // namespace tf::cuda
