#pragma once
// The small per-row operations of a decode step (norms, RoPE, SwiGLU, gates, residual adds) on host float32
// rows, so that a decode or verify call on the CPU runs from embedding to logits without handing each op to
// MLX's graph and its stream thread (each hand-off cost more than the op: docs/benchmarks.md). Every output
// row is a function of that row's inputs (and, for RoPE, its position) alone, computed in a fixed order: the
// rows beside it never change its bits. Prefill chunks keep MLX's ops.
#include <cstdint>
#include <span>

namespace tf {

struct RopeSpec;

// y[r] = x[r] * rsqrt(mean(x[r]^2) + eps) * weight, over each of `rows` rows of `width` values. In place is fine.
void rms_norm_rows(const float* x, std::int64_t rows, std::int64_t width, const float* weight, float eps, float* y);

// Rotates `heads` heads of `head_dim` values in each of `rows` rows, row r at position start + r (RopeSpec's
// pairing, partial rotation and frequency factors, as MLX's fast::rope computes them). In place.
// `thw`: null, or (t, h, w) positions for each row (M-RoPE, RopeSpec::mrope_section); else row r is at start + r.
void rope_rows(float* x, std::int64_t rows, int heads, int head_dim, std::int64_t start, const RopeSpec& spec,
               const std::int32_t* thw = nullptr);

void add_rows(const float* a, const float* b, std::int64_t n, float* y);              // y = a + b
void swiglu_rows(const float* gate, const float* up, std::int64_t n, float* y);       // y = silu(gate) * up
void gelu_tanh_glu_rows(const float* gate, const float* up, std::int64_t n, float* y);  // y = gelu_tanh(gate) * up
void sigmoid_gate_rows(const float* x, const float* gate, std::int64_t n, float* y);  // y = x * sigmoid(gate)

}  // namespace tf
