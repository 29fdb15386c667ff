#pragma once
// The gated feed-forward block: down(act(gate(h)) * up(h)), act SiLU (SwiGLU) unless set (blocks/glu.h).
#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "blocks/glu.h"
#include "blocks/weight_source.h"

namespace tf {

struct SwiGluMlp {
  DeviceWeight gate, up, down;
  GluActivation act = GluActivation::Silu;
  float limit = 0.0f;  // > 0: gate and up clamped first (blocks/glu.h)

  // Weights `prefix` + gate_proj, up_proj, down_proj.
  static SwiGluMlp load(WeightSource& src, const std::string& prefix, std::int64_t hidden, std::int64_t ffn);
  Tensor forward(Backend& b, const Tensor& h) const {
    return b.linear(glu(b, b.linear(h, gate), b.linear(h, up), act, limit, gate.rows), down);
  }
};

}  // namespace tf
