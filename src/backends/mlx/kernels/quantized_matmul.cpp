// The row-invariant product of float32 activations with a quantized matrix (quantized_matrix.h), on the CPU.
//
// The arithmetic, per output y[m, n] (row m of x, weight row n):
// - GGUF blocks. Each block decodes into integer codes and, per sub-block of 16 or 32 elements, a scale and a
//   min (element = scale * code + min; Q8_0 and Q6_K have signed codes and no min). The codes are exact floats,
//   so the sub-block's dot  inner = sum_j code_j * x_j  runs over 8 lanes (lane l takes j = l, l+8, ...), then
//   acc += scale * inner (lane-wise), and separately  mins += min * sum_j x_j  in sub-block order, where
//   sum_j x_j is computed once per row of x. y = (acc's lanes summed in a fixed tree) + mins. This is the
//   factoring llama.cpp uses, with float activations instead of its 8-bit ones: activations are never
//   quantized, so the result is as close to the float model as a float32 sum can be.
// - MLX affine codes. Each weight is computed exactly as MLX dequantizes it, w = rnd(rnd(scale * q) + bias)
//   in the checkpoint's scale type, and acc += w * x over 8 lanes in element order; y = acc's lanes summed.
// - Integer activations (ActivationPrecision::Int16Blocks for Q4_0, Q4_1, Q8_0, Q4_K and Q6_K, the default;
//   Int8Blocks for the first three, opt-in; see default_activation_precision). Each row of x is quantized alone, once
//   per call, per block of 32 at L levels a side (L = 32767 or 127): d = amax / L, a_j = rnd(x_j * (L / amax)) (to
//   nearest, ties to even, |a_j| <= L; all zero for a zero block). Per weight block, lanes_j (8 int32) = sum of code_i
//   * a_i over elements {2j, 2j+1, 16+2j, 17+2j} (16-bit: vpmaddwd twice, then an add) or {4j .. 4j+3} (8-bit:
//   vpmaddubsw then vpmaddwd by ones, Q8_0's signed codes through |code| and a's sign) -- exact: a lane is below 2^24,
//   so its float is exact too. Codes are unsigned nibbles for Q4_1, nibble - 8 for Q4_0 (so no min term), signed bytes
//   for Q8_0; a Q4_K super-block is 8 such blocks with the float kernel's sub-block scales and mins (Q4_1-like), a Q6_K
//   one 8 blocks of 6-bit signed codes (q - 32) whose two halves of 16 have their own scales, so their lanes (elements
//   {2j, 2j+1} and {16+2j, 17+2j}) are kept apart and each half takes its own epilogue step, low half first. Then, in k
//   order, acc = fma(float(lanes), splat(scale * d), acc) lane-wise and, where there is a min, mins = fma(min, s,
//   mins), s = d * sum_j a_j over the block (an exact integer sum, one rounding); y = reduce8(acc) (+ mins). So the
//   product is exactly sum_k w_k * (d * a_k): x replaced by its quantized values and nothing else, which the prefill
//   GEMM multiplies too (activations_as_products_see_them), so prompt rows and decode rows compute one model. Every
//   float step is one IEEE operation (fused where written so, std::fma on the portable path), so the AVX2 and the
//   portable code give the same bits. What it costs in accuracy: |x_j - d * a_j| <= amax / (2L). Measured on
//   the default model's golden prompts against the float32 activations: 16-bit logits within 1.7e-3 (the
//   golden's smallest top-2 gap is 5.6e-3; greedy agreement with transformers holds, 12 of 12 cases x 64
//   tokens), 8-bit logits off by up to 0.44 (0 of 12 cases agree). 16-bit decode rows' log-probabilities
//   then differ from a one-pass (float prefill) recomputation by up to 3.3e-3 (tests/e2e/test_sampling.py
//   checks both: the server's against decode rows recomputed, and decode rows against prefill rows).
// Every step depends only on the weight row and the row of x: blocking four rows of x per decoded weight row
// and spreading columns over threads change which core computes a value, never its operations. So a row has
// the same bits whatever rows share the call (the decode and verify windows' row invariance), at any thread
// count. With float activations, on x86 with AVX2 + FMA + F16C the lane steps are fused multiply-adds;
// elsewhere they are a multiply then an add (the build compiles this file with -ffp-contract=off, so nothing
// else is fused); the integer products are the same bits on both. Which of the two
// runs is fixed for a machine, checked once.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/mlx/kernels/chunk_pool.h"
#include "backends/mlx/kernels/quantized_matrix.h"
#include "checkpoint/half_float.h"

namespace tf {

#if defined(__x86_64__) && defined(__GNUC__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
namespace quant_avx2 {
// The operations first, then the body written over them (kept in this order).
// clang-format off
#include "backends/mlx/kernels/quantized_simd_avx2.inc"
#include "backends/mlx/kernels/quantized_matmul_body.inc"
#include "backends/mlx/kernels/quantized_integer_body.inc"
// clang-format on
}  // namespace quant_avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#define TF_QUANT_HAVE_AVX2 1
#endif

namespace quant_portable {
// clang-format off
#include "backends/mlx/kernels/quantized_simd_portable.inc"
#include "backends/mlx/kernels/quantized_matmul_body.inc"
#include "backends/mlx/kernels/quantized_integer_body.inc"
// clang-format on
}  // namespace quant_portable

#ifdef TF_QUANT_HAVE_AVX2
namespace {
bool have_avx2() {
  static const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return avx2;
}
}  // namespace
#endif

ActivationPrecision default_activation_precision() {
  static const ActivationPrecision p = [] {
    const char* v = std::getenv("TF_CPU_INT_ACTIVATIONS");
    const std::string s = v != nullptr ? v : "";
    return s == "0"   ? ActivationPrecision::Float32
           : s == "8" ? ActivationPrecision::Int8Blocks
                      : ActivationPrecision::Int16Blocks;
  }();
  return p;
}

void quantized_matmul(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y) {
  quantized_matmul(x, rows, w, y, default_activation_precision());
}

void quantized_matmul(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y, ActivationPrecision p) {
#ifdef TF_QUANT_HAVE_AVX2
  if (have_avx2()) {
    if (p == ActivationPrecision::Int8Blocks && quant_avx2::int_matmul<std::int8_t>(x, rows, w, y)) return;
    if (p == ActivationPrecision::Int16Blocks && quant_avx2::int_matmul<std::int16_t>(x, rows, w, y)) return;
    return quant_avx2::matmul(x, rows, w, y);
  }
#endif
  quantized_matmul_portable(x, rows, w, y, p);
}

bool activations_as_products_see_them(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* out) {
  const ActivationPrecision p = default_activation_precision();
  if (p == ActivationPrecision::Float32) return false;
  const bool wide = p == ActivationPrecision::Int16Blocks;
#ifdef TF_QUANT_HAVE_AVX2
  if (have_avx2())
    return wide ? quant_avx2::int_activations_as_float<std::int16_t>(x, rows, w, out)
                : quant_avx2::int_activations_as_float<std::int8_t>(x, rows, w, out);
#endif
  return wide ? quant_portable::int_activations_as_float<std::int16_t>(x, rows, w, out)
              : quant_portable::int_activations_as_float<std::int8_t>(x, rows, w, out);
}

void dequantize_for_gemm(const QuantizedMatrix& w, std::int64_t first, std::int64_t count, float* out) {
#ifdef TF_QUANT_HAVE_AVX2
  if (have_avx2() && quant_avx2::dequantize(w, first, count, out)) return;
#endif
  if (quant_portable::dequantize(w, first, count, out)) return;
  std::vector<std::int32_t> ids(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) ids[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(first + i);
  dequantize_rows(w, ids, out);
}

void quantized_matmul_portable(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y) {
  quantized_matmul_portable(x, rows, w, y, default_activation_precision());
}

void quantized_matmul_portable(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y,
                               ActivationPrecision p) {
  if (p == ActivationPrecision::Int8Blocks && quant_portable::int_matmul<std::int8_t>(x, rows, w, y)) return;
  if (p == ActivationPrecision::Int16Blocks && quant_portable::int_matmul<std::int16_t>(x, rows, w, y)) return;
  quant_portable::matmul(x, rows, w, y);
}

}  // namespace tf
