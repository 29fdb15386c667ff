#pragma once
// A llama-shaped model whose weights are generated on the device (never stored), run by the decoder families'
// one forward pass (src/families/decoder_forward.h). Used by the CUDA benchmarks (8B and 27B-class
// shapes) and by the CUDA backend's invariance tests.
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "families/greedy_ahead.h"
#include "families/decoder_forward.h"

namespace tf::bench {

struct LlamaShape {
  const char* name = "";
  std::int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  int bits = 4, group = 64;
  HostDType scale_type = HostDType::BF16;
  int embed_bits = 4;  // the embedding (and the output projection when tied)
  bool tied = false;
  float rope_base = 10000.0f;
  bool interleaved = false;
};

class RandomLlama {
 public:
  RandomLlama(CudaBackend& b, const LlamaShape& s, std::uint64_t seed) : b_(b), s_(s) {
    std::uint64_t k = seed;
    auto w = [&](std::int64_t rows, std::int64_t cols, int bits) {
      return b_.random_weight(rows, cols, bits, s_.group, s_.scale_type, k += 7919);
    };
    w_.embed = w(s.vocab, s.hidden, s.embed_bits);
    AttentionConfig ac;
    ac.hidden = s.hidden;
    ac.spec = attention_spec(s.heads, s.kv_heads, s.head_dim);
    ac.rope.base = s.rope_base;
    ac.rope.interleaved = s.interleaved;
    for (std::int64_t i = 0; i < s.layers; ++i) {
      auto attn_norm = w(1, s.hidden, 0);
      auto q = w(s.heads * s.head_dim, s.hidden, s.bits);
      auto kk = w(s.kv_heads * s.head_dim, s.hidden, s.bits);
      auto v = w(s.kv_heads * s.head_dim, s.hidden, s.bits);
      auto o = w(s.hidden, s.heads * s.head_dim, s.bits);
      auto mlp_norm = w(1, s.hidden, 0);
      auto gate = w(s.ffn, s.hidden, s.bits);
      auto up = w(s.ffn, s.hidden, s.bits);
      auto down = w(s.hidden, s.ffn, s.bits);
      w_.layers.push_back(attention_layer(ac, static_cast<int>(i), attn_norm, q, kk, v, o, mlp_norm, gate, up, down));
    }
    w_.final_norm = w(1, s.hidden, 0);
    w_.output = s.tied ? w_.embed : w(s.vocab, s.hidden, s.bits);
    w_.rms_eps = 1e-5f;
  }

  const DecoderWeights& weights() const { return w_; }
  std::unique_ptr<KvCache> new_cache() const {
    return b_.new_kv_cache(static_cast<int>(s_.layers), static_cast<int>(s_.kv_heads), static_cast<int>(s_.head_dim));
  }

  // Runs tokens at positions kv.length() .., returns the logits of the last logit_rows positions.
  std::vector<float> forward(KvCache& kv, std::span<const std::int32_t> tokens, std::int64_t logit_rows) {
    return b_.to_host(logits(kv, tokens, logit_rows));
  }
  // The same forward, then each of the last `rows` positions' greedy token found on the device (the
  // engine's greedy rounds: ids, not logits, come back).
  std::vector<std::int32_t> forward_greedy(KvCache& kv, std::span<const std::int32_t> tokens, std::int64_t rows) {
    return b_.argmax_rows(logits(kv, tokens, rows));
  }
  // One greedy step as the engine's greedy rounds without drafts run it (families/greedy_ahead.h): a step
  // `queue` holds for `token` is used, and with queue_next the step after it is queued before the token
  // comes back.
  std::int32_t greedy_ahead(KvCache& kv, GreedyAhead& queue, std::int32_t token, bool queue_next) {
    return queue.next(b_, kv, token, queue_next,
                      [&](std::span<const std::int32_t> tokens, const std::shared_ptr<DeviceIds>& fed) {
                        const DecoderPart part{&kv, nullptr, tokens, fed};
                        return decoder_logits(b_, w_, std::span<const DecoderPart>(&part, 1), 1);
                      });
  }
  Tensor logits(KvCache& kv, std::span<const std::int32_t> tokens, std::int64_t logit_rows) {
    const DecoderPart part{&kv, nullptr, tokens, nullptr};
    return decoder_logits(b_, w_, std::span<const DecoderPart>(&part, 1), logit_rows);
  }
  // A shared round: every part's rows in one forward pass, each row's greedy token (parts' rows in order).
  std::vector<std::int32_t> forward_greedy_parts(std::span<const DecoderPart> parts) {
    return b_.argmax_rows(decoder_logits(b_, w_, parts, 0));
  }
  // The same, logits of every row.
  std::vector<float> forward_parts(std::span<const DecoderPart> parts) {
    return b_.to_host(decoder_logits(b_, w_, parts, 0));
  }

  // Weight bytes one decode step reads: every linear weight once (codes, scales, biases) and one embedding row.
  double weight_bytes_per_token() const {
    double total = 0.0;
    auto bytes = [&](const DeviceWeight& w) {
      const double elems = static_cast<double>(w.rows) * static_cast<double>(w.cols);
      if (!w.quantized()) return elems * 4.0;  // norms are float32
      const double groups = elems / w.group_size;
      const double sb = s_.scale_type == HostDType::F32 ? 4.0 : 2.0;
      return elems * w.bits / 8.0 + 2.0 * groups * sb;
    };
    for (const auto& l : w_.layers) {
      const auto& a = std::get<AttentionBlock>(l.mixer);
      const auto& mlp = std::get<SwiGluMlp>(l.ffn);
      for (const DeviceWeight* w : {&l.input_norm, &a.q, &a.k, &a.v, &a.o, &l.post_norm, &mlp.gate, &mlp.up, &mlp.down})
        total += bytes(*w);
    }
    total += bytes(w_.final_norm) + bytes(w_.output);
    total += bytes(w_.embed) / static_cast<double>(w_.embed.rows);
    return total;
  }
  // KV bytes one decode step reads at context length `ctx` (float32 K and V of every layer).
  double kv_bytes_per_token(std::int64_t ctx) const {
    return 2.0 * static_cast<double>(s_.layers) * static_cast<double>(s_.kv_heads) * static_cast<double>(s_.head_dim) * 4.0 *
           static_cast<double>(ctx);
  }
  const LlamaShape& shape() const { return s_; }

 private:
  CudaBackend& b_;
  LlamaShape s_;
  DecoderWeights w_;
};

}  // namespace tf::bench
