#pragma once
// The non-gated feed-forward block with squared ReLU: down(max(up(h), 0)^2) (Nemotron-H's MLP layers, its
// shared experts and each of its routed experts).
#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "blocks/weight_source.h"

namespace tf {

struct Relu2Mlp {
  DeviceWeight up, down;

  // Weights `prefix` + up_proj, down_proj.
  static Relu2Mlp load(WeightSource& src, const std::string& prefix, std::int64_t hidden, std::int64_t ffn);
  Tensor forward(Backend& b, const Tensor& h) const { return b.linear(b.relu_squared(b.linear(h, up)), down); }
};

}  // namespace tf
