#pragma once
// The forward pass every decoder family shares: embed, then each layer's pre-norm token mixer (attention,
// Gated DeltaNet or Mamba-2) and pre-norm feed-forward block (SwiGLU or squared-ReLU MLP, or experts) on the
// residual stream, then the final norm and the output
// projection. A family is a layer plan over these blocks (src/blocks/); this is its one forward pass, also run
// by the CUDA benchmarks and tests on random weights.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "blocks/decoder_layer.h"
#include "blocks/host_row_log.h"
#include "families/stream_images.h"

namespace tf {

struct DecoderWeights {
  DeviceWeight embed, final_norm, output;  // output is embed when tied
  std::vector<DecoderLayer> layers;
  float rms_eps = 1e-5f;
  float embed_scale = 1.0f;    // the embedding rows times this (Gemma: sqrt(hidden))
  float logit_softcap = 0.0f;  // > 0: logits = cap * tanh(logits / cap)
  // Hyper-connections: the embedding row is copied into `streams` residual streams, and `final_mixer` (its
  // enter()) makes the row the output projection reads, in place of final_norm.
  int streams = 1;
  std::shared_ptr<const StreamWrapper> final_mixer;
  int attention_layers() const;  // attending over every position (the KvCache store)
  int window_layers() const;     // sliding-window attention (the window store)
  int recurrent_layers() const;
  // The layers whose state a HostRowLog keeps (sparse attention: every position; n-gram embeddings: bounded by
  // their reach), in the slots the layer plan gave them; empty when none.
  std::vector<HostRowLayer> host_row_layers() const;
};

// The logits of rows after the final norm: the output projection, soft-capped where the model says.
Tensor output_logits(Backend& b, const DecoderWeights& w, const Tensor& normed);

// A plain attention + SwiGLU layer from weights made elsewhere (the CUDA tests and benchmarks generate them).
DecoderLayer attention_layer(const AttentionConfig& cfg, int slot, DeviceWeight input_norm, DeviceWeight q,
                             DeviceWeight k, DeviceWeight v, DeviceWeight o, DeviceWeight post_norm, DeviceWeight gate,
                             DeviceWeight up, DeviceWeight down);

// One stream's part of a forward: `tokens` at positions state length .., appended to its stores.
struct DecoderPart {
  KvCache* cache = nullptr;             // null when no layer attends
  RecurrentState* recurrent = nullptr;  // null when no layer is recurrent
  std::span<const std::int32_t> tokens;
  // Set: the part's one token is this id on the device (GreedyAhead), and `tokens` holds a placeholder.
  std::shared_ptr<DeviceIds> fed;
  KvCache* window = nullptr;        // null when no layer has a sliding window
  StateStore* host_rows = nullptr;  // null when no block keeps host rows (blocks/host_row_log.h)
  const StreamImages* images = nullptr;  // the stream's images (embeddings and M-RoPE positions), or null
};

// The logits left on the backend: with one part, of its last `logit_rows` positions (<= 0: every row); with
// several parts (a shared round), of every row, the parts' rows in order. Each part's rows are computed as in
// a forward of that part alone wherever the backend's kernels are row-invariant (Backend::invariant_rows).
// With `hidden`, also every row's hidden state after the final norm (a draft head's input), computed beside
// the logits so that the logits' ops stay those of a forward without it.
Tensor decoder_logits(Backend& b, const DecoderWeights& w, std::span<const DecoderPart> parts, std::int64_t logit_rows,
                      Tensor* hidden = nullptr);

}  // namespace tf
