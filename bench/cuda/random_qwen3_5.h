#pragma once
// A qwen3_5-shaped hybrid (Gated DeltaNet layers with full-attention layers every `attention_every`, the
// attention output-gated with q/k norms and partial RoPE) whose weights are generated on the device, run by
// the decoder families' one forward pass. Used by the CUDA benchmarks (the Qwen3.8-27B shape, issue 36).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/tensor_parallel/tp_backend.h"
#include "families/decoder_forward.h"

namespace tf::bench {

struct Qwen35Shape {
  const char* name = "";
  std::int64_t hidden = 0, layers = 0, attention_every = 4, ffn = 0, vocab = 0;
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0, rotary_dims = 0;  // attention layers
  int k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0, conv_kernel = 4;  // Gated DeltaNet layers
  int bits = 4, group = 64;
  HostDType scale_type = HostDType::BF16;
};

// Qwen3.8-27B's text shape (issue 36): 64 layers, 48 Gated DeltaNet + 16 attention, hidden 5120, FFN 17408.
inline Qwen35Shape qwen27b_shape() {
  Qwen35Shape s;
  s.name = "qwen3_5_27b_shape";
  s.hidden = 5120;
  s.layers = 64;
  s.ffn = 17408;
  s.vocab = 248320;
  s.heads = 24;
  s.kv_heads = 4;
  s.head_dim = 256;
  s.rotary_dims = 64;
  s.k_heads = 16;
  s.v_heads = 48;
  s.k_dim = 128;
  s.v_dim = 128;
  return s;
}

// Makes a random weight of [rows, cols] (bits 0: dense of `dtype`), divided among tensor-parallel ranks as
// `split` says: the plain maker ignores the split (one rank), tensor_parallel_maker makes each rank's part on
// its device.
using WeightMaker = std::function<DeviceWeight(std::int64_t rows, std::int64_t cols, int bits, int group,
                                               HostDType dtype, std::uint64_t seed, const WeightSplit& split)>;

inline WeightMaker plain_maker(CudaBackend& b) {
  return [&b](std::int64_t rows, std::int64_t cols, int bits, int group, HostDType dtype, std::uint64_t seed,
              const WeightSplit&) { return b.random_weight(rows, cols, bits, group, dtype, seed); };
}

// Each rank's part of a backend made by make_cuda_ranks: the output rows (a vector's values) or the input
// columns divided evenly; random values, so a divided weight's parts need not match a one-rank weight's.
inline WeightMaker tensor_parallel_maker(Backend& tp) {
  return [&tp](std::int64_t rows, std::int64_t cols, int bits, int group, HostDType dtype, std::uint64_t seed,
               const WeightSplit& split) {
    const std::vector<Backend*> ranks = tensor_parallel_ranks(tp);
    const auto n = static_cast<std::int64_t>(ranks.size());
    std::vector<DeviceWeight> parts;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      std::int64_t pr = rows, pc = cols;
      if (split.kind == WeightSplit::Kind::Outputs) (rows == 1 ? pc : pr) /= n;
      if (split.kind == WeightSplit::Kind::Inputs) pc /= n;
      // A whole weight is the same on every rank (the ranks' copies of the residual stream must agree).
      const std::uint64_t s = split.kind == WeightSplit::Kind::Whole ? seed : seed + 31 * r;
      parts.push_back(dynamic_cast<CudaBackend&>(*ranks[r]).random_weight(pr, pc, bits, group, dtype, s));
    }
    return rank_weight(std::move(parts), split.kind, rows, cols);
  };
}

class RandomQwen35 {
 public:
  RandomQwen35(CudaBackend& b, const Qwen35Shape& s, std::uint64_t seed) : RandomQwen35(b, s, seed, plain_maker(b)) {}
  // On any backend (tensor-parallel ranks: tensor_parallel_maker), its weights from `make`.
  RandomQwen35(Backend& b, const Qwen35Shape& s, std::uint64_t seed, const WeightMaker& make) : b_(b), s_(s) {
    std::uint64_t k = seed;
    const WeightSplit outputs = WeightSplit::outputs(), inputs = WeightSplit::inputs();
    auto w = [&](std::int64_t rows, std::int64_t cols, int bits, const WeightSplit& split = {}) {
      return make(rows, cols, bits, s_.group, s_.scale_type, k += 7919, split);
    };
    auto dense = [&](std::int64_t rows, std::int64_t cols, const WeightSplit& split) {
      return make(rows, cols, 0, 0, HostDType::BF16, k += 7919, split);
    };
    w_.embed = w(s.vocab, s.hidden, s.bits);
    AttentionConfig ac;
    ac.hidden = s.hidden;
    ac.spec = attention_spec(s.heads, s.kv_heads, s.head_dim);
    ac.rope.base = 10000000.0f;
    ac.rope.rotary_dims = static_cast<int>(s.rotary_dims);
    ac.qk_norm = true;
    ac.output_gate = true;
    GatedDeltaConfig gc;
    gc.hidden = s.hidden;
    gc.spec = {s.k_heads, s.v_heads, s.k_dim, s.v_dim, s.conv_kernel};
    int attn_slot = 0, gdn_slot = 0;
    // The splits are the blocks' (blocks/attention.cpp, gated_delta.cpp, swiglu_mlp.cpp).
    for (std::int64_t i = 0; i < s.layers; ++i) {
      DecoderLayer l;
      l.input_norm = w(1, s.hidden, 0);
      l.post_norm = w(1, s.hidden, 0);
      if ((i + 1) % s.attention_every == 0) {
        AttentionBlock a;
        a.cfg = ac;
        a.q = w(2 * s.heads * s.head_dim, s.hidden, s.bits, outputs);
        a.k = w(s.kv_heads * s.head_dim, s.hidden, s.bits, outputs);
        a.v = w(s.kv_heads * s.head_dim, s.hidden, s.bits, outputs);
        a.o = w(s.hidden, s.heads * s.head_dim, s.bits, inputs);
        a.q_norm = w(1, s.head_dim, 0);
        a.k_norm = w(1, s.head_dim, 0);
        l.mixer = a;
        l.slot = attn_slot++;
      } else {
        GatedDeltaBlock g;
        g.cfg = gc;
        const std::int64_t value_width = static_cast<std::int64_t>(s.v_heads) * s.v_dim;
        g.in_qkv = w(gc.spec.conv_channels(), s.hidden, s.bits, outputs);
        g.in_z = w(value_width, s.hidden, s.bits, outputs);
        // in_proj_b / in_proj_a have 48 rows: checkpoints keep them dense (bf16).
        g.in_b = dense(s.v_heads, s.hidden, outputs);
        g.in_a = dense(s.v_heads, s.hidden, outputs);
        g.conv = dense(gc.spec.conv_channels(), s.conv_kernel, outputs);
        g.a_log = w(1, s.v_heads, 0, outputs);
        g.dt_bias = w(1, s.v_heads, 0, outputs);
        g.norm = w(1, s.v_dim, 0);
        g.out = w(s.hidden, value_width, s.bits, inputs);
        l.mixer = g;
        l.slot = gdn_slot++;
      }
      l.ffn = SwiGluMlp{w(s.ffn, s.hidden, s.bits, outputs), w(s.ffn, s.hidden, s.bits, outputs),
                        w(s.hidden, s.ffn, s.bits, inputs)};
      w_.layers.push_back(std::move(l));
    }
    w_.final_norm = w(1, s.hidden, 0);
    w_.output = w(s.vocab, s.hidden, s.bits);
    w_.rms_eps = 1e-6f;
  }

  // A stream's state: a KV cache for the attention layers and a recurrent state for the others.
  struct Stream {
    std::unique_ptr<KvCache> kv;
    std::unique_ptr<RecurrentState> rec;
    DecoderPart part(std::span<const std::int32_t> tokens) const { return {kv.get(), rec.get(), tokens, nullptr}; }
    std::int64_t length() const { return kv->length(); }
    void truncate(std::int64_t n) {
      kv->truncate(n);
      rec->truncate(n);
    }
  };
  Stream new_stream() const {
    Stream st;
    st.kv = b_.new_kv_cache(w_.attention_layers(), static_cast<int>(s_.kv_heads), static_cast<int>(s_.head_dim));
    st.rec =
        b_.new_recurrent_state(w_.recurrent_layers(), {s_.k_heads, s_.v_heads, s_.k_dim, s_.v_dim, s_.conv_kernel});
    return st;
  }

  // Every part's rows in one forward pass; each row's greedy token (the last `rows` rows with one part).
  std::vector<std::int32_t> forward_greedy(std::span<const DecoderPart> parts, std::int64_t rows) {
    return b_.argmax_rows(decoder_logits(b_, w_, parts, parts.size() == 1 ? rows : 0));
  }

  // Bytes one decode step reads: every linear weight once, one embedding row, the recurrent states read and
  // written (conv windows and fp32 states), and the KV cache at context `ctx` (float32).
  double bytes_per_token(std::int64_t ctx) const {
    double total = 0.0;
    auto bytes = [&](const DeviceWeight& w) {
      const double elems = static_cast<double>(w.rows) * static_cast<double>(w.cols);
      if (!w.quantized()) return elems * (w.rows == 1 ? 4.0 : 2.0);  // norms float32, other dense bf16
      const double groups = elems / w.group_size;
      return elems * w.bits / 8.0 + 2.0 * groups * 2.0;
    };
    for (const auto& l : w_.layers) {
      const auto& mlp = std::get<SwiGluMlp>(l.ffn);
      total += bytes(l.input_norm) + bytes(l.post_norm) + bytes(mlp.gate) + bytes(mlp.up) + bytes(mlp.down);
      if (l.attention()) {
        const auto& a = std::get<AttentionBlock>(l.mixer);
        for (const DeviceWeight* x : {&a.q, &a.k, &a.v, &a.o, &a.q_norm, &a.k_norm}) total += bytes(*x);
      } else {
        const auto& g = std::get<GatedDeltaBlock>(l.mixer);
        for (const DeviceWeight* x :
             {&g.in_qkv, &g.in_z, &g.in_b, &g.in_a, &g.conv, &g.a_log, &g.dt_bias, &g.norm, &g.out})
          total += bytes(*x);
      }
    }
    total += bytes(w_.final_norm) + bytes(w_.output) + bytes(w_.embed) / static_cast<double>(w_.embed.rows);
    const GatedDeltaSpec spec{s_.k_heads, s_.v_heads, s_.k_dim, s_.v_dim, s_.conv_kernel};
    total += 2.0 * static_cast<double>(w_.recurrent_layers()) * static_cast<double>(spec.layer_bytes());
    total += 2.0 * static_cast<double>(w_.attention_layers()) * static_cast<double>(s_.kv_heads * s_.head_dim) * 4.0 *
             static_cast<double>(ctx);
    return total;
  }
  const Qwen35Shape& shape() const { return s_; }
  const DecoderWeights& weights() const { return w_; }

 private:
  Backend& b_;
  Qwen35Shape s_;
  DecoderWeights w_;
};

}  // namespace tf::bench
