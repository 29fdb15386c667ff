#include "blocks/relu2_mlp.h"

namespace tf {

Relu2Mlp Relu2Mlp::load(WeightSource& src, const std::string& prefix, std::int64_t hidden, std::int64_t ffn) {
  Relu2Mlp m;
  m.up = src.matrix(prefix + "up_proj.weight", ffn, hidden, WeightSplit::outputs());
  m.down = src.matrix(prefix + "down_proj.weight", hidden, ffn, WeightSplit::inputs());
  return m;
}

}  // namespace tf
