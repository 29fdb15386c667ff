#pragma once
// The llama forward pass over the Backend interface: the one definition that the llama family, the CUDA
// benchmarks (random weights generated on the device) and the CUDA backend's tests all run.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tf {

struct LlamaLayerWeights {
  DeviceWeight attn_norm, q, k, v, o, mlp_norm, gate, up, down;
};

struct LlamaWeights {
  DeviceWeight embed, final_norm, output;  // output is embed when tied
  std::vector<LlamaLayerWeights> layers;
  RopeSpec rope;
  AttentionSpec attn;
  float rms_eps = 1e-5f;
};

// One stream's part of a forward: `tokens` at positions cache.length() .., appended to the cache.
struct LlamaPart {
  KvCache* cache = nullptr;
  std::span<const std::int32_t> tokens;
  // Set: the part's one token is this id on the device (GreedyAhead), and `tokens` holds a placeholder.
  std::shared_ptr<DeviceIds> fed;
};

// The logits left on the backend: with one part, of its last `logit_rows` positions (<= 0: every row); with
// several parts (a shared round), of every row, the parts' rows in order. Each part's rows are computed as in a forward of
// that part alone wherever the backend's kernels are row-invariant (Backend::invariant_rows).
Tensor llama_logits(Backend& b, const LlamaWeights& w, std::span<const LlamaPart> parts, std::int64_t logit_rows);

// Attention over `heads` query and `kv_heads` key/value heads of `head_dim`, scaled by 1/sqrt(head_dim).
AttentionSpec llama_attention(std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim);

// Weight bytes as uploaded (codes, scales and biases; dense weights as float32).
std::size_t device_weight_bytes(const DeviceWeight& w);

}  // namespace tf
