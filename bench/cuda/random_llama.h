#pragma once
// A llama-shaped model whose weights are generated on the device (never stored), run through the Backend
// interface with the same op sequence as src/families/llama/llama_model.cpp. Used by the CUDA benchmarks
// (8B and 27B-class shapes) and by the CUDA backend's invariance tests.
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"

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
    embed_ = w(s.vocab, s.hidden, s.embed_bits);
    for (std::int64_t i = 0; i < s.layers; ++i) {
      Layer l;
      l.attn_norm = w(1, s.hidden, 0);
      l.q = w(s.heads * s.head_dim, s.hidden, s.bits);
      l.k = w(s.kv_heads * s.head_dim, s.hidden, s.bits);
      l.v = w(s.kv_heads * s.head_dim, s.hidden, s.bits);
      l.o = w(s.hidden, s.heads * s.head_dim, s.bits);
      l.mlp_norm = w(1, s.hidden, 0);
      l.gate = w(s.ffn, s.hidden, s.bits);
      l.up = w(s.ffn, s.hidden, s.bits);
      l.down = w(s.hidden, s.ffn, s.bits);
      layers_.push_back(std::move(l));
    }
    final_norm_ = w(1, s.hidden, 0);
    output_ = s.tied ? embed_ : w(s.vocab, s.hidden, s.bits);
    rope_.base = s.rope_base;
    rope_.interleaved = s.interleaved;
    attn_.heads = static_cast<int>(s.heads);
    attn_.kv_heads = static_cast<int>(s.kv_heads);
    attn_.head_dim = static_cast<int>(s.head_dim);
    attn_.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  }

  std::unique_ptr<KvCache> new_cache() const {
    return b_.new_kv_cache(static_cast<int>(s_.layers), attn_.kv_heads, attn_.head_dim);
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
  Tensor logits(KvCache& kv, std::span<const std::int32_t> tokens, std::int64_t logit_rows) {
    const std::int64_t start = kv.length();
    Backend& b = b_;
    Tensor x = b.embed(embed_, tokens);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const auto& l = layers_[i];
      Tensor h = b.rms_norm(x, l.attn_norm, 1e-5f);
      Tensor q = b.rope(b.linear(h, l.q), attn_.heads, attn_.head_dim, start, rope_);
      Tensor k = b.rope(b.linear(h, l.k), attn_.kv_heads, attn_.head_dim, start, rope_);
      Tensor v = b.linear(h, l.v);
      Tensor a = b.attend(kv, static_cast<int>(i), q, k, v, start, attn_);
      x = b.add(x, b.linear(a, l.o));
      h = b.rms_norm(x, l.mlp_norm, 1e-5f);
      x = b.add(x, b.linear(b.swiglu(b.linear(h, l.gate), b.linear(h, l.up)), l.down));
    }
    Tensor last = b.last_rows(x, logit_rows);
    return b.linear(b.rms_norm(last, final_norm_, 1e-5f), output_);
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
    for (const auto& l : layers_)
      for (const DeviceWeight* w : {&l.attn_norm, &l.q, &l.k, &l.v, &l.o, &l.mlp_norm, &l.gate, &l.up, &l.down})
        total += bytes(*w);
    total += bytes(final_norm_) + bytes(output_);
    total += bytes(embed_) / static_cast<double>(embed_.rows);
    return total;
  }
  // KV bytes one decode step reads at context length `ctx` (float32 K and V of every layer).
  double kv_bytes_per_token(std::int64_t ctx) const {
    return 2.0 * static_cast<double>(s_.layers) * static_cast<double>(s_.kv_heads) * static_cast<double>(s_.head_dim) * 4.0 *
           static_cast<double>(ctx);
  }
  const LlamaShape& shape() const { return s_; }

 private:
  struct Layer {
    DeviceWeight attn_norm, q, k, v, o, mlp_norm, gate, up, down;
  };
  CudaBackend& b_;
  LlamaShape s_;
  DeviceWeight embed_, final_norm_, output_;
  std::vector<Layer> layers_;
  RopeSpec rope_;
  AttentionSpec attn_;
};

}  // namespace tf::bench
