#pragma once
// The gated activations of feed-forward blocks: act(gate) * up, with SiLU (SwiGLU: llama, Qwen, most experts)
// or GELU's tanh approximation (Gemma's MLPs and experts). With a limit > 0 the inputs are clamped first, gate
// to at most the limit and up to [-limit, limit] (GLM-5.3's swiglu_limit), on the host: each value alone.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/backend.h"

namespace tf {

enum class GluActivation { Silu, GeluTanh };

// gate and up are [n, cols]; `cols` is read only where limit > 0.
inline Tensor glu(Backend& b, const Tensor& gate, const Tensor& up, GluActivation act, float limit = 0.0f,
                  std::int64_t cols = 0) {
  if (limit > 0.0f) {
    std::vector<float> g = b.to_host(gate), u = b.to_host(up);
    for (float& v : g) v = std::min(v, limit);
    for (float& v : u) v = std::clamp(v, -limit, limit);
    const auto rows = static_cast<std::int64_t>(g.size()) / cols;
    const Tensor cg = b.from_host(g, rows, cols), cu = b.from_host(u, rows, cols);
    return act == GluActivation::Silu ? b.swiglu(cg, cu) : b.gelu_tanh_glu(cg, cu);
  }
  return act == GluActivation::Silu ? b.swiglu(gate, up) : b.gelu_tanh_glu(gate, up);
}

}  // namespace tf
