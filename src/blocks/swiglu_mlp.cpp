#include "blocks/swiglu_mlp.h"

namespace tf {

SwiGluMlp SwiGluMlp::load(WeightSource& src, const std::string& prefix, std::int64_t hidden, std::int64_t ffn) {
  SwiGluMlp m;
  m.gate = src.matrix(prefix + "gate_proj.weight", ffn, hidden);
  m.up = src.matrix(prefix + "up_proj.weight", ffn, hidden);
  m.down = src.matrix(prefix + "down_proj.weight", hidden, ffn);
  return m;
}

}  // namespace tf
