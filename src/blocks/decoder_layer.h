#pragma once
// One layer of a decoder's residual stream: a pre-norm token mixer (attention, Gated DeltaNet, Mamba-2, sparse or
// latent attention, Kimi delta attention) and a
// pre-norm feed-forward block (SwiGLU or squared-ReLU MLP, or experts), each added to the stream; either may be
// absent (Nemotron-H's layers hold one block each). Optionally each block's output is normed before it is
// added (Gemma's sandwich norms) and the layer's output scaled (Gemma 4's layer_scalar). The decoders' layer
// plans and their MTP heads are lists of these. With hyper-connections (blocks/hyper_connections.h) the residual
// stream is several streams wide and each block is entered and left through its own wrapper instead of the
// pre-norm and the add; an n-gram embedding (blocks/ngram_embedding.h) may add to the stream before the mixer.
// Hash-routed experts read the runs' tokens.
#include <memory>
#include <span>
#include <variant>

#include "backends/backend.h"
#include "blocks/attention.h"
#include "blocks/compressed_attention.h"
#include "blocks/gated_delta.h"
#include "blocks/hyper_connections.h"
#include "blocks/kda.h"
#include "blocks/mamba2.h"
#include "blocks/mla.h"
#include "blocks/mlp_beside_experts.h"
#include "blocks/moe.h"
#include "blocks/ngram_embedding.h"
#include "blocks/relu2_mlp.h"
#include "blocks/sparse_attention.h"
#include "blocks/swiglu_mlp.h"

namespace tf {

struct DecoderLayer {
  DeviceWeight input_norm, post_norm;  // before the mixer, before the feed-forward block (plain multipliers)
  std::variant<std::monostate, AttentionBlock, GatedDeltaBlock, Mamba2Block, SparseAttentionBlock, KdaBlock, MlaBlock,
               CompressedAttentionBlock>
      mixer;
  // the layer's index among the layers whose state is of its kind (KvCache / RecurrentState / HostRowLog)
  int slot = 0;
  std::variant<std::monostate, SwiGluMlp, Relu2Mlp, MoeBlock, MlpBesideExperts> ffn;
  DeviceWeight post_mixer_norm, post_ffn_norm;  // where present: each block's output normed before the add
  float scalar = 1.0f;                          // the layer's output times this (applied when != 1)
  // Where set: the hyper-connection wrappers around the mixer and the feed-forward block (in place of
  // input_norm / post_norm and the adds), and the n-gram embedding added before the mixer.
  std::shared_ptr<const StreamWrapper> mixer_hc, ffn_hc;
  std::shared_ptr<const NgramEmbeddingBlock> ngrams;

  bool attention() const { return std::holds_alternative<AttentionBlock>(mixer); }
  // its own HostRowLog slot
  bool host_rows() const {
    return std::holds_alternative<SparseAttentionBlock>(mixer) || std::holds_alternative<MlaBlock>(mixer) ||
           std::holds_alternative<CompressedAttentionBlock>(mixer);
  }
  bool recurrent() const {
    return std::holds_alternative<GatedDeltaBlock>(mixer) || std::holds_alternative<Mamba2Block>(mixer) ||
           std::holds_alternative<KdaBlock>(mixer);
  }
  // x [n, hidden] -> x + mixer(norm(x)), then + ffn(norm(.)); the mixer's state is layer `slot` of each run's.
  Tensor forward(Backend& b, Tensor x, std::span<const StreamRows> runs, float eps) const;
};

}  // namespace tf
