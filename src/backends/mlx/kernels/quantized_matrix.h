#pragma once
// A quantized weight matrix held on the CPU in its checkpoint's own packing (GGUF blocks as the file stores
// them, MLX affine codes as packed), and its row-invariant product with float32 activations. The product is
// what decode and verify windows run on the CPU: a row of the result has the same bits whatever rows share the
// call and whichever thread computes it (ARCHITECTURE §4). The arithmetic is in quantized_matmul.cpp.
#include <cstdint>
#include <span>
#include <vector>

#include "checkpoint/ggml_types.h"
#include "checkpoint/host_weight.h"

namespace tf {

struct QuantizedMatrix {
  GgmlType blocks = GgmlType::F32;         // the GGUF block type; F32: MLX affine codes
  std::int64_t rows = 0, cols = 0;         // [out, in]
  int bits = 0;                            // affine: code width, 2 to 8
  int group = 0;                           // affine: elements per scale and bias; GGUF: elements per block
  HostDType scale_dtype = HostDType::F32;  // affine: the checkpoint's scale type (MLX dequantizes in it)
  std::vector<std::uint8_t> data;          // GGUF: the blocks, row after row; affine: rows*cols*bits/8 code bytes
  std::vector<float> scales, biases;       // affine: rows * cols/group, exact widenings of the checkpoint's

  std::size_t row_bytes() const;
  std::size_t bytes() const;  // held in memory
};

// From a HostWeight of GGUF blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K) or affine codes (bits 2,
// 3, 4, 5, 6 or 8; groups of 32, 64 or 128). Throws std::invalid_argument for anything else.
QuantizedMatrix quantized_matrix(HostWeight w);

// How the product meets Q4_0, Q4_1, Q8_0, Q4_K and Q6_K blocks (other layouts always take Float32): float32
// activations against codes widened to floats, or activations quantized per block of 32 to 8 or 16 bits and
// multiplied with the codes in integers (quantized_matmul.cpp gives the arithmetics). All are row-invariant.
enum class ActivationPrecision { Float32, Int8Blocks, Int16Blocks };
// The process's choice, read once: Int16Blocks by default (greedy agreement with the goldens holds; 1.3-1.9x the
// float kernel's speed on one row; decode rows' log-probabilities are within 3.3e-3 of a float one-pass
// recomputation). TF_CPU_INT_ACTIVATIONS=0 takes Float32 (the float model's arithmetic, slower), =8 Int8Blocks
// (measurement only: logits moved by up to 0.44 on the golden prompts and greedy agreement broke).
ActivationPrecision default_activation_precision();

// x [rows, w.cols] as the default product quantizes it for w (each block of 32 of a row to integers a_j and a
// scale d, then d * a_j in float32), so that products over float weights (the prefill GEMM) compute the model the
// decode rows compute. False, and nothing written, where the product takes x as it is (float activations).
bool activations_as_products_see_them(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* out);

// y[m, n] = sum_k x[m, k] * w[n, k] for `rows` rows of x [rows, cols] (row-major float32); y is [rows, w.rows].
void quantized_matmul(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y);  // the default
void quantized_matmul(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y, ActivationPrecision p);
// The same product in plain C++ (what CPUs without AVX2 + FMA + F16C run, Arm's included), so tests check it
// on any machine. With Int8Blocks or Int16Blocks it has the same bits as the AVX2 product (integer sums are exact and
// the float epilogue is the same unfused operations in the same order).
void quantized_matmul_portable(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y);
void quantized_matmul_portable(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y,
                               ActivationPrecision p);

// Rows first .. first + count - 1 of w as float32 for the prefill GEMM (prefill_gemm.h): GGUF values as
// scale * code + min (a rounded product, then the sum: the decode kernels' factoring, within a rounding of the
// reference), affine codes as dequantize_rows. Faster than dequantize_rows by the SIMD decoders.
void dequantize_for_gemm(const QuantizedMatrix& w, std::int64_t first, std::int64_t count, float* out);

// Rows `ids` of w as float32 values, one after the other, exactly as the reference dequantizes them:
// ggml_dequant.h for GGUF blocks; for affine codes MLX's rounding, rnd(rnd(scale * q) + bias) in the scale type.
void dequantize_rows(const QuantizedMatrix& w, std::span<const std::int32_t> ids, float* out);

}  // namespace tf
