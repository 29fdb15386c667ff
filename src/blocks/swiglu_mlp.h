#pragma once
// The SwiGLU feed-forward block: down(silu(gate(h)) * up(h)).
#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "blocks/weight_source.h"

namespace tf {

struct SwiGluMlp {
  DeviceWeight gate, up, down;

  // Weights `prefix` + gate_proj, up_proj, down_proj.
  static SwiGluMlp load(WeightSource& src, const std::string& prefix, std::int64_t hidden, std::int64_t ffn);
  Tensor forward(Backend& b, const Tensor& h) const {
    return b.linear(b.swiglu(b.linear(h, gate), b.linear(h, up)), down);
  }
};

}  // namespace tf
