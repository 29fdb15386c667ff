#pragma once
// A multi-token-prediction head (families-and-formats §1.7), in the one shape every family's takes: from the
// model's hidden row h_t (after its final norm) and the embedding of the token x_{t+1} it computes
//   u = fc(concat[norm_e(E x_{t+1}), norm_h(h_t)])   embedding first, hidden second
//   y = its decoder layers over u                    pre-norm blocks on a residual stream; attention over the
//                                                    head's own KV cache, causal over the head's positions t
//   out = final_norm(y)                              what the model's output projection reads
// Families differ in names and layers only: Qwen3.5's is one gated-attention + SwiGLU layer (mtp.fc, mtp.norm),
// Nemotron-H's an attention sublayer then an experts sublayer (mtp.layers.0.eh_proj, ...final_layernorm).
// GLM-5.3's is one pre-norm latent-attention + experts layer (layers.{L}.eh_proj, ...shared_head.norm) whose
// embedding row at position 0 is zeroed (vLLM's fused_eh_norm). Its layers keep their state in a KV cache
// (attention) and a HostRowLog (latent attention), never recurrent.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "blocks/decoder_layer.h"
#include "blocks/host_row_log.h"
#include "blocks/weight_source.h"

namespace tf {

struct MtpHead {
  DeviceWeight norm_embedding, norm_hidden, fc, final_norm;
  std::vector<DecoderLayer> layers;  // no recurrent mixer; attention layers numbered 0.. (their cache slots)
  float eps = 1e-6f;
  bool zero_first_embedding = false;  // the embedded row of position 0 is zeros (GLM-5.3, as vLLM serves it)

  // The fusion's weights: norms of `hidden` (zero-centred when norms_plus_one) and fc [hidden, 2 * hidden].
  void load_fusion(WeightSource& src, const std::string& norm_embedding_name, const std::string& norm_hidden_name,
                   const std::string& fc_name, std::int64_t hidden, bool norms_plus_one);
  int attention_layers() const;
  AttentionSpec kv_shape() const;  // of its attention layers (they share one)
  // Its layers keeping host rows (latent attention), by their slots; empty: none.
  std::vector<HostRowLayer> host_row_layers() const;
  // embedded [n, hidden] (each row's next token, embedded) and hidden [n, hidden] -> out [n, hidden]; keys and
  // values go to the runs' caches (one layer per attention layer of the head), host rows to their HostRowLogs.
  Tensor forward(Backend& b, const Tensor& embedded, const Tensor& hidden, std::span<const StreamRows> runs) const;
};

}  // namespace tf
