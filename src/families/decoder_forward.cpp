#include "families/decoder_forward.h"

#include <stdexcept>

namespace tf {

int DecoderWeights::attention_layers() const {
  int n = 0;
  for (const auto& l : layers) n += l.attention() ? 1 : 0;
  return n;
}

int DecoderWeights::recurrent_layers() const {
  int n = 0;
  for (const auto& l : layers) n += l.recurrent() ? 1 : 0;
  return n;
}

DecoderLayer attention_layer(const AttentionConfig& cfg, int slot, DeviceWeight input_norm, DeviceWeight q,
                             DeviceWeight k, DeviceWeight v, DeviceWeight o, DeviceWeight post_norm, DeviceWeight gate,
                             DeviceWeight up, DeviceWeight down) {
  DecoderLayer l;
  l.input_norm = std::move(input_norm);
  AttentionBlock a;
  a.cfg = cfg;
  a.q = std::move(q);
  a.k = std::move(k);
  a.v = std::move(v);
  a.o = std::move(o);
  l.mixer = std::move(a);
  l.slot = slot;
  l.post_norm = std::move(post_norm);
  l.ffn = SwiGluMlp{std::move(gate), std::move(up), std::move(down)};
  return l;
}

Tensor decoder_logits(Backend& b, const DecoderWeights& w, std::span<const DecoderPart> parts, std::int64_t logit_rows,
                      Tensor* hidden) {
  if (parts.empty()) throw std::invalid_argument("decoder forward: no parts");
  std::vector<std::int32_t> joined;
  std::vector<StreamRows> runs;
  runs.reserve(parts.size());
  std::int64_t total = 0;
  for (const auto& p : parts) {
    if ((p.cache == nullptr && p.recurrent == nullptr) || p.tokens.empty())
      throw std::invalid_argument("decoder forward: an empty part");
    if (p.fed && (parts.size() > 1 || p.fed->rows() != static_cast<std::int64_t>(p.tokens.size())))
      throw std::invalid_argument("decoder forward: device-fed ids in a shared round or of another length");
    const auto n = static_cast<std::int64_t>(p.tokens.size());
    const std::int64_t start = p.cache != nullptr ? p.cache->length() : p.recurrent->length();
    runs.push_back({p.cache, start, n, p.recurrent});
    total += n;
  }
  std::span<const std::int32_t> tokens = parts.front().tokens;
  if (parts.size() > 1 || logit_rows <= 0) logit_rows = total;
  if (parts.size() > 1) {
    joined.reserve(static_cast<std::size_t>(total));
    for (const auto& p : parts) joined.insert(joined.end(), p.tokens.begin(), p.tokens.end());
    tokens = joined;
  }
  const auto& fed = parts.front().fed;
  Tensor x = fed ? b.embed(w.embed, fed) : b.embed(w.embed, tokens);
  for (const auto& l : w.layers) x = l.forward(b, x, runs, w.rms_eps);
  if (hidden != nullptr) *hidden = b.rms_norm(x, w.final_norm, w.rms_eps);
  // Always through last_rows, even for every row: one tape shape for solo and shared rounds alike.
  Tensor last = b.last_rows(x, logit_rows);
  return b.linear(b.rms_norm(last, w.final_norm, w.rms_eps), w.output);
}

}  // namespace tf
