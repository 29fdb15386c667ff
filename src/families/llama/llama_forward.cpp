#include "families/llama/llama_forward.h"

#include <cmath>
#include <stdexcept>

namespace tf {

Tensor llama_logits(Backend& b, const LlamaWeights& w, std::span<const LlamaPart> parts, std::int64_t logit_rows) {
  if (parts.empty()) throw std::invalid_argument("llama forward: no parts");
  std::vector<std::int32_t> joined;
  std::vector<StreamRows> runs;
  runs.reserve(parts.size());
  std::int64_t total = 0;
  for (const auto& p : parts) {
    if (p.cache == nullptr || p.tokens.empty()) throw std::invalid_argument("llama forward: an empty part");
    if (p.fed && (parts.size() > 1 || p.fed->rows() != static_cast<std::int64_t>(p.tokens.size())))
      throw std::invalid_argument("llama forward: device-fed ids in a shared round or of another length");
    const auto n = static_cast<std::int64_t>(p.tokens.size());
    runs.push_back({p.cache, p.cache->length(), n});
    total += n;
  }
  std::span<const std::int32_t> tokens = parts.front().tokens;
  if (parts.size() > 1 || logit_rows <= 0) logit_rows = total;
  if (parts.size() > 1) {
    joined.reserve(static_cast<std::size_t>(total));
    for (const auto& p : parts) joined.insert(joined.end(), p.tokens.begin(), p.tokens.end());
    tokens = joined;
  }
  const AttentionSpec& at = w.attn;
  const auto& fed = parts.front().fed;
  Tensor x = fed ? b.embed(w.embed, fed) : b.embed(w.embed, tokens);
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const auto& l = w.layers[i];
    Tensor h = b.rms_norm(x, l.attn_norm, w.rms_eps);
    Tensor q = b.rope(b.linear(h, l.q), at.heads, at.head_dim, runs, w.rope);
    Tensor k = b.rope(b.linear(h, l.k), at.kv_heads, at.head_dim, runs, w.rope);
    Tensor v = b.linear(h, l.v);
    Tensor a = b.attend(runs, static_cast<int>(i), q, k, v, at);
    x = b.add(x, b.linear(a, l.o));
    h = b.rms_norm(x, l.mlp_norm, w.rms_eps);
    x = b.add(x, b.linear(b.swiglu(b.linear(h, l.gate), b.linear(h, l.up)), l.down));
  }
  // Always through last_rows, even for every row: one tape shape for solo and shared rounds alike.
  Tensor last = b.last_rows(x, logit_rows);
  return b.linear(b.rms_norm(last, w.final_norm, w.rms_eps), w.output);
}

AttentionSpec llama_attention(std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim) {
  AttentionSpec a;
  a.heads = static_cast<int>(heads);
  a.kv_heads = static_cast<int>(kv_heads);
  a.head_dim = static_cast<int>(head_dim);
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return a;
}

std::size_t device_weight_bytes(const DeviceWeight& w) {
  const auto elems = static_cast<std::size_t>(w.rows * w.cols);
  if (!w.quantized()) return elems * 4;
  const auto groups = elems / static_cast<std::size_t>(w.group_size);
  return elems * static_cast<std::size_t>(w.bits) / 8 + groups * 8;
}

}  // namespace tf
