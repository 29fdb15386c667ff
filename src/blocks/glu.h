#pragma once
// The gated activations of feed-forward blocks: act(gate) * up, with SiLU (SwiGLU: llama, Qwen, most experts)
// or GELU's tanh approximation (Gemma's MLPs and experts).
#include "backends/backend.h"

namespace tf {

enum class GluActivation { Silu, GeluTanh };

inline Tensor glu(Backend& b, const Tensor& gate, const Tensor& up, GluActivation act) {
  return act == GluActivation::Silu ? b.swiglu(gate, up) : b.gelu_tanh_glu(gate, up);
}

}  // namespace tf
