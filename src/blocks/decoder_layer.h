#pragma once
// One layer of a decoder's residual stream: a pre-norm token mixer (attention, Gated DeltaNet or Mamba-2) and a
// pre-norm feed-forward block (SwiGLU or squared-ReLU MLP, or experts), each added to the stream; either may be
// absent (Nemotron-H's layers hold one block each). The decoders' layer plans and their MTP heads are lists of
// these.
#include <span>
#include <variant>

#include "backends/backend.h"
#include "blocks/attention.h"
#include "blocks/gated_delta.h"
#include "blocks/mamba2.h"
#include "blocks/moe.h"
#include "blocks/relu2_mlp.h"
#include "blocks/swiglu_mlp.h"

namespace tf {

struct DecoderLayer {
  DeviceWeight input_norm, post_norm;  // before the mixer, before the feed-forward block (plain multipliers)
  std::variant<std::monostate, AttentionBlock, GatedDeltaBlock, Mamba2Block> mixer;
  int slot = 0;  // the layer's index among the layers whose state is of its kind (KvCache / RecurrentState)
  std::variant<std::monostate, SwiGluMlp, Relu2Mlp, MoeBlock> ffn;

  bool attention() const { return std::holds_alternative<AttentionBlock>(mixer); }
  bool recurrent() const {
    return std::holds_alternative<GatedDeltaBlock>(mixer) || std::holds_alternative<Mamba2Block>(mixer);
  }
  // x [n, hidden] -> x + mixer(norm(x)), then + ffn(norm(.)); the mixer's state is layer `slot` of each run's.
  Tensor forward(Backend& b, Tensor x, std::span<const StreamRows> runs, float eps) const;
};

}  // namespace tf
