#pragma once
// The products of prefill chunks on the CPU (calls of more rows than a verify window): BLAS's sgemm over float32
// weights, quantized ones dequantized a tile of rows at a time exactly as dequantize_rows computes each value.
// For hundreds of rows this runs near the cores' FMA peak, where the row-invariant decode kernels (one weight
// read per few rows) are bound by decoding the weights. Not row-invariant (BLAS blocks over rows), but a pure
// function of x and w for a machine and a thread count. Decode and verify rows take quantized_matmul and
// invariant_matmul; where those quantize the activations (16 bits per block of 32, the default for Q4_0, Q4_1,
// Q8_0, Q4_K, Q6_K), quantized_gemm multiplies the same quantized activations, so prompt rows and decode rows
// compute one model.
#include <cstdint>

namespace tf {

struct QuantizedMatrix;

// y [rows, w.rows] = x [rows, w.cols] times w^T.
void quantized_gemm(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y);
// y [rows, out_features] = x [rows, in_features] times w^T, w [out_features, in_features] row-major.
void dense_gemm(const float* x, std::int64_t rows, const float* w, std::int64_t out_features, std::int64_t in_features,
                float* y);

}  // namespace tf
