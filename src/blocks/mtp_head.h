#pragma once
// Qwen3.5's multi-token-prediction head (families-and-formats §1.7; vLLM's Qwen3_5MultiTokenPredictor): from
// the model's hidden row h_t (after the final norm) and the embedding of the token x_{t+1} it computes
//   u = fc(concat[norm_e(E x_{t+1}), norm_h(h_t)])        embedding first, hidden second
//   y = a gated full-attention decoder layer over u at position t (its own KV cache), dense SwiGLU MLP
//   out = norm(y)                                          what the shared output projection reads
// Every norm is zero-centred (1 + w) in Hugging Face checkpoints.
#include <cstdint>
#include <span>
#include <string>

#include "backends/backend.h"
#include "blocks/attention.h"
#include "blocks/swiglu_mlp.h"
#include "blocks/weight_source.h"

namespace tf {

struct MtpHeadConfig {
  AttentionConfig attention;  // its layer's attention (the model's full-attention shape)
  std::int64_t ffn = 0;
  float eps = 1e-6f;
  bool norms_plus_one = true;  // norm weights stored zero-centred
};

struct MtpHead {
  DeviceWeight norm_embedding, norm_hidden, fc, input_norm, post_norm, final_norm;
  AttentionBlock attention;
  SwiGluMlp mlp;
  float eps = 1e-6f;

  // Whether the checkpoint holds a head under `prefix` (e.g. "mtp.").
  static bool present(const WeightSource& src, const std::string& prefix);
  // Weights `prefix` + pre_fc_norm_embedding, pre_fc_norm_hidden, fc, layers.0.{input_layernorm, self_attn.*,
  // post_attention_layernorm, mlp.*}, norm.
  static MtpHead load(WeightSource& src, const std::string& prefix, const MtpHeadConfig& cfg);
  // embedded [n, hidden] (each row's next token, embedded) and hidden [n, hidden] -> out [n, hidden]; keys
  // and values go to layer `slot` of each run's cache.
  Tensor forward(Backend& b, const Tensor& embedded, const Tensor& hidden, std::span<const StreamRows> runs,
                 int slot) const;
};

}  // namespace tf
