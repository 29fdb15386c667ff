#include "blocks/swiglu_mlp.h"

namespace tf {

SwiGluMlp SwiGluMlp::load(WeightSource& src, const std::string& prefix, std::int64_t hidden, std::int64_t ffn) {
  SwiGluMlp m;
  // Tensor parallelism: each rank holds a part of the intermediate features and sums its part of down's product.
  m.gate = src.matrix(prefix + "gate_proj.weight", ffn, hidden, WeightSplit::outputs());
  m.up = src.matrix(prefix + "up_proj.weight", ffn, hidden, WeightSplit::outputs());
  m.down = src.matrix(prefix + "down_proj.weight", hidden, ffn, WeightSplit::inputs());
  return m;
}

}  // namespace tf
