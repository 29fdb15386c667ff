#include "families/decoder_forward.h"

#include <stdexcept>

namespace tf {

namespace {
int window_of(const DecoderLayer& l) {
  const auto* a = std::get_if<AttentionBlock>(&l.mixer);
  return a != nullptr ? a->cfg.spec.window : 0;
}
}  // namespace

int DecoderWeights::attention_layers() const {
  int n = 0;
  for (const auto& l : layers) n += l.attention() && window_of(l) == 0 ? 1 : 0;
  return n;
}

int DecoderWeights::window_layers() const {
  int n = 0;
  for (const auto& l : layers) n += window_of(l) > 0 ? 1 : 0;
  return n;
}

std::vector<HostRowLayer> DecoderWeights::host_row_layers() const {
  std::vector<HostRowLayer> out;
  const auto put = [&](int slot, HostRowLayer layer) {
    if (out.size() <= static_cast<std::size_t>(slot)) out.resize(static_cast<std::size_t>(slot) + 1);
    out[static_cast<std::size_t>(slot)] = layer;
  };
  for (const auto& l : layers) {
    if (const auto* s = std::get_if<SparseAttentionBlock>(&l.mixer)) put(l.slot, {s->log_width()});
    if (const auto* m = std::get_if<MlaBlock>(&l.mixer)) put(l.slot, {m->log_width()});
    if (const auto* c = std::get_if<CompressedAttentionBlock>(&l.mixer)) {
      const auto kinds = c->log_layers();  // its recent rows, then (compressed) its entries at the next slot
      for (std::size_t k = 0; k < kinds.size(); ++k) put(l.slot + static_cast<int>(k), kinds[k]);
    }
    if (l.ngrams) put(l.ngrams->slot, {l.ngrams->log_width(), l.ngrams->reach()});
  }
  return out;
}

Tensor output_logits(Backend& b, const DecoderWeights& w, const Tensor& normed) {
  const Tensor logits = b.linear(normed, w.output);
  return w.logit_softcap > 0.0f ? b.softcap(logits, w.logit_softcap) : logits;
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
  // Streams with images: each run's M-RoPE positions, and the placeholder rows' embeddings (rows of the call).
  std::vector<std::vector<std::int32_t>> thw(parts.size());
  std::vector<std::int64_t> image_rows;
  std::vector<float> image_values;
  std::int64_t total = 0;
  for (const auto& p : parts) {
    if ((p.cache == nullptr && p.recurrent == nullptr && p.window == nullptr && p.host_rows == nullptr) ||
        p.tokens.empty())
      throw std::invalid_argument("decoder forward: an empty part");
    if (p.fed && (parts.size() > 1 || p.fed->rows() != static_cast<std::int64_t>(p.tokens.size())))
      throw std::invalid_argument("decoder forward: device-fed ids in a shared round or of another length");
    const auto n = static_cast<std::int64_t>(p.tokens.size());
    const std::int64_t start = p.cache != nullptr       ? p.cache->length()
                               : p.recurrent != nullptr ? p.recurrent->length()
                               : p.window != nullptr    ? p.window->length()
                                                        : p.host_rows->length();
    runs.push_back({p.cache, start, n, p.recurrent, p.window, p.host_rows, p.tokens, {}});
    if (p.images != nullptr) {
      auto& pos = thw[runs.size() - 1];
      p.images->positions(start, n, pos);
      runs.back().mrope = pos;
      const std::size_t before = image_rows.size();
      p.images->rows(start, n, image_rows, image_values);
      for (std::size_t i = before; i < image_rows.size(); ++i) image_rows[i] += total;
    }
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
  if (!image_rows.empty()) x = b.replace_rows(x, image_rows, image_values);
  if (w.embed_scale != 1.0f) x = b.scale(x, w.embed_scale);
  if (w.streams > 1) x = widen_streams(b, x, w.embed.cols, w.streams);
  for (const auto& l : w.layers) x = l.forward(b, x, runs, w.rms_eps);
  const auto final_row = [&](const Tensor& t) {
    return w.final_mixer ? w.final_mixer->enter(b, t, nullptr) : b.rms_norm(t, w.final_norm, w.rms_eps);
  };
  if (hidden != nullptr) *hidden = final_row(x);
  // Always through last_rows, even for every row: one tape shape for solo and shared rounds alike.
  Tensor last = b.last_rows(x, logit_rows);
  return output_logits(b, w, final_row(last));
}

}  // namespace tf
