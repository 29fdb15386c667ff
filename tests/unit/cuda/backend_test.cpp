// The CUDA backend through the Backend interface against a float64 CPU forward of the same small llama
// (weights made on the host as HostWeights, uploaded like a checkpoint's): prefill (GEMM + flash attention),
// decode (decode kernels, CUDA graphs), a verify window, KV-cache growth and rollback, both RoPE pairings.
#include <cmath>

#include "backends/cuda/cuda_backend.h"
#include "families/decoder_forward.h"
#include "cuda_test_util.h"

namespace tf::cuda::test {
namespace {

struct Dims {
  std::int64_t hidden = 256, layers = 2, heads = 4, kv_heads = 2, head_dim = 64, ffn = 512, vocab = 1000;
  // Ternary Bonsai's format: every linear 2-bit in groups of 128, the (tied) embedding 2-bit in groups of 64.
  bool two_bit = false;
};

// A HostWeight in MLX affine layout plus its exact values; f16_exact makes scales/biases f16-representable
// (the GGUF case, which the backend stores as f16).
struct RefW {
  HostWeight hw;
  std::vector<double> v;
};
RefW make_affine(std::int64_t rows, std::int64_t cols, int bits, int group, bool f16_exact) {
  const HostW h = make_weight(rows, cols, bits, group, ElemType::F32);
  RefW r;
  r.hw.rows = rows;
  r.hw.cols = cols;
  r.hw.bits = bits;
  r.hw.group_size = group;
  r.hw.dtype = HostDType::F32;
  r.hw.data = h.data;
  r.hw.scales = h.scales;
  r.hw.biases = h.biases;
  if (f16_exact) {
    for (auto* b : {&r.hw.scales, &r.hw.biases})
      for (std::size_t i = 0; i < b->size(); i += 4) {
        float f;
        std::memcpy(&f, b->data() + i, 4);
        f = f16_to_f32(f32_to_f16(f));
        std::memcpy(b->data() + i, &f, 4);
      }
  }
  r.v.resize(static_cast<std::size_t>(rows * cols));
  const auto* words = reinterpret_cast<const std::uint32_t*>(r.hw.data.data());
  for (std::int64_t n = 0; n < rows; ++n)
    for (std::int64_t k = 0; k < cols; ++k) {
      const std::int64_t bit = (n * cols + k) * bits;
      const unsigned q = (words[bit >> 5] >> (bit & 31)) & ((1u << bits) - 1u);
      const auto g = static_cast<std::size_t>(n * (cols / group) + k / group);
      float s, b;
      std::memcpy(&s, r.hw.scales.data() + 4 * g, 4);
      std::memcpy(&b, r.hw.biases.data() + 4 * g, 4);
      r.v[static_cast<std::size_t>(n * cols + k)] = static_cast<double>(s) * q + b;
    }
  return r;
}
RefW make_norm(std::int64_t cols) {
  RefW r;
  const auto f = random_floats(static_cast<std::size_t>(cols), 0.8f, 1.2f);
  r.hw.rows = 1;
  r.hw.cols = cols;
  r.hw.dtype = HostDType::F32;
  r.hw.data.resize(f.size() * 4);
  std::memcpy(r.hw.data.data(), f.data(), r.hw.data.size());
  r.v.assign(f.begin(), f.end());
  return r;
}

struct RefModel {
  Dims d;
  bool interleaved;
  RefW embed, final_norm;
  struct L {
    RefW attn_norm, q, k, v, o, mlp_norm, gate, up, down;
  };
  std::vector<L> layers;
  std::vector<float> inv_freq;

  RefModel(const Dims& dims, bool il, bool f16_exact) : d(dims), interleaved(il) {
    const int bits = d.two_bit ? 2 : 4, g_attn = d.two_bit ? 128 : 64, g_mlp = d.two_bit ? 128 : 32;
    embed =
        d.two_bit ? make_affine(d.vocab, d.hidden, 2, 64, f16_exact) : make_affine(d.vocab, d.hidden, 8, 32, f16_exact);
    for (std::int64_t i = 0; i < d.layers; ++i) {
      L l;
      l.attn_norm = make_norm(d.hidden);
      l.q = make_affine(d.heads * d.head_dim, d.hidden, bits, g_attn, f16_exact);
      l.k = make_affine(d.kv_heads * d.head_dim, d.hidden, bits, g_attn, f16_exact);
      l.v = make_affine(d.kv_heads * d.head_dim, d.hidden, bits, g_attn, f16_exact);
      l.o = make_affine(d.hidden, d.heads * d.head_dim, bits, g_attn, f16_exact);
      l.mlp_norm = make_norm(d.hidden);
      l.gate = make_affine(d.ffn, d.hidden, bits, g_mlp, f16_exact);
      l.up = make_affine(d.ffn, d.hidden, bits, g_mlp, f16_exact);
      l.down = make_affine(d.hidden, d.ffn, bits, g_mlp, f16_exact);
      layers.push_back(std::move(l));
    }
    final_norm = make_norm(d.hidden);
    for (std::int64_t i = 0; i < d.head_dim / 2; ++i)
      inv_freq.push_back(1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / static_cast<float>(d.head_dim)));
  }

  // float64 state: K/V per layer, [pos][kv_heads * head_dim].
  std::vector<std::vector<std::vector<double>>> K, V;

  static std::vector<double> lin(const std::vector<double>& x, const RefW& w) {
    std::vector<double> y(static_cast<std::size_t>(w.hw.rows));
    for (std::int64_t n = 0; n < w.hw.rows; ++n) {
      double acc = 0.0;
      for (std::int64_t k = 0; k < w.hw.cols; ++k) acc += x[static_cast<std::size_t>(k)] * w.v[static_cast<std::size_t>(n * w.hw.cols + k)];
      y[static_cast<std::size_t>(n)] = acc;
    }
    return y;
  }
  static std::vector<double> norm(const std::vector<double>& x, const RefW& w) {
    double ss = 0.0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + 1e-5);
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w.v[i];
    return y;
  }
  void rope(std::vector<double>& x, std::int64_t heads, std::int64_t pos) const {
    const std::int64_t hd = d.head_dim, half = hd / 2;
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t i = 0; i < half; ++i) {
        const float ang = static_cast<float>(pos) * inv_freq[static_cast<std::size_t>(i)];
        const double c = std::cos(static_cast<double>(ang)), s = std::sin(static_cast<double>(ang));
        const auto i0 = static_cast<std::size_t>(h * hd + (interleaved ? 2 * i : i));
        const auto i1 = static_cast<std::size_t>(h * hd + (interleaved ? 2 * i + 1 : i + half));
        const double a = x[i0], b = x[i1];
        x[i0] = a * c - b * s;
        x[i1] = a * s + b * c;
      }
  }
  // One token at position pos (= current length); returns its logits.
  std::vector<double> step(std::int32_t token, std::int64_t pos) {
    if (K.empty()) {
      K.resize(static_cast<std::size_t>(d.layers));
      V.resize(static_cast<std::size_t>(d.layers));
    }
    std::vector<double> x(embed.v.begin() + token * d.hidden, embed.v.begin() + (token + 1) * d.hidden);
    for (std::size_t li = 0; li < layers.size(); ++li) {
      const L& l = layers[li];
      auto h = norm(x, l.attn_norm);
      auto q = lin(h, l.q), k = lin(h, l.k), v = lin(h, l.v);
      rope(q, d.heads, pos);
      rope(k, d.kv_heads, pos);
      K[li].resize(static_cast<std::size_t>(pos));
      V[li].resize(static_cast<std::size_t>(pos));
      K[li].push_back(k);
      V[li].push_back(v);
      std::vector<double> a(static_cast<std::size_t>(d.heads * d.head_dim));
      const double sc = static_cast<double>(1.0f / std::sqrt(static_cast<float>(d.head_dim)));
      for (std::int64_t hh = 0; hh < d.heads; ++hh) {
        const std::int64_t kvh = hh / (d.heads / d.kv_heads);
        std::vector<double> s(static_cast<std::size_t>(pos + 1));
        double m = -INFINITY;
        for (std::int64_t p = 0; p <= pos; ++p) {
          double dot = 0.0;
          for (std::int64_t i = 0; i < d.head_dim; ++i)
            dot += q[static_cast<std::size_t>(hh * d.head_dim + i)] * K[li][static_cast<std::size_t>(p)][static_cast<std::size_t>(kvh * d.head_dim + i)];
          s[static_cast<std::size_t>(p)] = dot * sc;
          m = std::max(m, s[static_cast<std::size_t>(p)]);
        }
        double sum = 0.0;
        for (auto& e : s) sum += (e = std::exp(e - m));
        for (std::int64_t i = 0; i < d.head_dim; ++i) {
          double acc = 0.0;
          for (std::int64_t p = 0; p <= pos; ++p)
            acc += s[static_cast<std::size_t>(p)] * V[li][static_cast<std::size_t>(p)][static_cast<std::size_t>(kvh * d.head_dim + i)];
          a[static_cast<std::size_t>(hh * d.head_dim + i)] = acc / sum;
        }
      }
      auto o = lin(a, l.o);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      h = norm(x, l.mlp_norm);
      auto g = lin(h, l.gate), u = lin(h, l.up);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      auto dn = lin(g, l.down);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += dn[i];
    }
    return lin(norm(x, final_norm), embed);  // tied output
  }
};

// The reference model's weights on the device, run by the llama family's forward pass.
struct DevModel {
  Backend& b;
  DecoderWeights w;
  DevModel(Backend& be, const RefModel& r) : b(be) {
    w.embed = b.upload(r.embed.hw);
    w.output = w.embed;
    w.final_norm = b.upload(r.final_norm.hw);
    AttentionConfig ac;
    ac.spec = attention_spec(r.d.heads, r.d.kv_heads, r.d.head_dim);
    ac.rope.interleaved = r.interleaved;
    int slot = 0;
    for (const auto& l : r.layers)
      w.layers.push_back(attention_layer(ac, slot++, b.upload(l.attn_norm.hw), b.upload(l.q.hw), b.upload(l.k.hw),
                                         b.upload(l.v.hw), b.upload(l.o.hw), b.upload(l.mlp_norm.hw), b.upload(l.gate.hw),
                                         b.upload(l.up.hw), b.upload(l.down.hw)));
    w.rms_eps = 1e-5f;
  }
  std::vector<float> forward(KvCache& kv, std::span<const std::int32_t> t, std::int64_t logit_rows) {
    const DecoderPart part{&kv, nullptr, t, nullptr};
    return b.to_host(decoder_logits(b, w, std::span<const DecoderPart>(&part, 1), logit_rows));
  }
};

void run_model(bool interleaved, bool f16_exact, const Dims d = Dims{}) {
  RefModel ref(d, interleaved, f16_exact);
  auto be = make_cuda_backend();
  DevModel dev(*be, ref);
  auto kv = be->new_kv_cache(static_cast<int>(d.layers), static_cast<int>(d.kv_heads), static_cast<int>(d.head_dim));
  std::vector<std::int32_t> prompt(500);
  for (auto& t : prompt) t = static_cast<std::int32_t>(rng()() % d.vocab);
  std::vector<std::vector<double>> ref_logits;
  for (std::size_t i = 0; i < prompt.size(); ++i) ref_logits.push_back(ref.step(prompt[i], static_cast<std::int64_t>(i)));
  const auto got = dev.forward(*kv, prompt, 3);  // prefill path: GEMM + flash attention
  for (int r = 0; r < 3; ++r) {
    std::vector<float> row(got.begin() + r * d.vocab, got.begin() + (r + 1) * d.vocab);
    EXPECT_LT(rel_err(row, ref_logits[prompt.size() - 3 + static_cast<std::size_t>(r)]), 1e-4) << "prefill row " << r;
  }
  // Decode across the cache's growth at 512 positions (graphs), then a verify window, then a rollback.
  std::int64_t pos = static_cast<std::int64_t>(prompt.size());
  std::vector<std::int32_t> tokens;
  for (int s = 0; s < 20; ++s) {
    const auto t = static_cast<std::int32_t>(rng()() % d.vocab);
    tokens.push_back(t);
    const auto want = ref.step(t, pos++);
    const std::int32_t one[1] = {t};
    EXPECT_LT(rel_err(dev.forward(*kv, one, 1), want), 1e-4) << "decode step " << s;
  }
  const std::int64_t mark = kv->length();
  std::vector<std::int32_t> window = {5, 6, 7, 8, 9};
  std::vector<std::vector<double>> want;
  for (auto t : window) want.push_back(ref.step(t, pos++));
  const auto w = dev.forward(*kv, window, 5);
  for (int r = 0; r < 5; ++r) {
    std::vector<float> row(w.begin() + r * d.vocab, w.begin() + (r + 1) * d.vocab);
    EXPECT_LT(rel_err(row, want[static_cast<std::size_t>(r)]), 1e-4) << "verify row " << r;
  }
  kv->truncate(mark + 2);  // keep two of the five
  pos = mark + 2;
  const std::int32_t one[1] = {42};
  EXPECT_LT(rel_err(dev.forward(*kv, one, 1), ref.step(42, pos)), 1e-4) << "after rollback";
  const auto st = be->stats();
  std::printf("[ backend ] interleaved %d f16-scales %d: %lld tapes, %lld graph replays, %lld captures, %lld launches in the last tape\n",
              interleaved, f16_exact, static_cast<long long>(st.flushes), static_cast<long long>(st.graph_replays),
              static_cast<long long>(st.graph_captures), static_cast<long long>(st.launches));
}

TEST(CudaBackend, LlamaForwardMatchesFloat64RotateHalf) {
  TF_NEED_GPU();
  run_model(false, false);
}
TEST(CudaBackend, LlamaForwardMatchesFloat64InterleavedF16Scales) {
  TF_NEED_GPU();
  run_model(true, true);
}
// Hidden 2304 (K > 2048) puts q/k/v and gate/up on the integer kernels: the 500-row prefill on the integer
// GEMM (its terms' scratch shared by consecutive linears), decode and verify on the integer decode kernels.
TEST(CudaBackend, LlamaForwardMatchesFloat64IntegerKernels) {
  TF_NEED_GPU();
  Dims d;
  d.hidden = 2304;
  run_model(false, false, d);
}

// Ternary Bonsai's format (2-bit linears in groups of 128, a 2-bit embedding in groups of 64): the codes stay
// packed (the SIMT decode kernel and GEMM), through prefill, decode, verify and rollback.
TEST(CudaBackend, LlamaForwardMatchesFloat64TwoBit) {
  TF_NEED_GPU();
  Dims d;
  d.two_bit = true;
  run_model(false, false, d);
  Dims wide = d;  // K > 2048: where 4-bit weights would take the integer kernels
  wide.hidden = 2304;
  run_model(false, true, wide);
}

// Which affine formats upload keeps packed: 2-bit in groups of a multiple of 64 (untiled, never on the
// tensor-core kernels), other 2-bit groups and 3-bit expanded to float32.
TEST(CudaBackend, TwoBitWeightsStayPacked) {
  TF_NEED_GPU();
  auto be = make_cuda_backend();
  for (int g : {64, 128}) {
    const DeviceWeight w = be->upload(make_affine(96, 2304, 2, g, false).hw);
    EXPECT_EQ(w.bits, 2) << g;
    EXPECT_EQ(w.group_size, g);
    const WeightView v = be->weight_view(w);
    EXPECT_FALSE(v.tiled) << g;
    EXPECT_TRUE(decode_linear_supported(v)) << g;
    EXPECT_FALSE(prefill_linear_imma_takes(v)) << g;
    EXPECT_EQ(decode_linear_scratch_bytes(v), 0u) << g;
  }
  EXPECT_EQ(be->upload(make_affine(96, 2304, 2, 32, false).hw).bits, 0);  // a chunk of 64 codes spans two groups
  EXPECT_EQ(be->upload(make_affine(96, 2304, 3, 64, false).hw).bits, 0);
  const DeviceWeight r = be->random_weight(96, 2304, 2, 128, HostDType::BF16, 7);
  EXPECT_EQ(r.bits, 2);
  EXPECT_FALSE(be->weight_view(r).tiled);
}

TEST(CudaBackend, AutoPicksCudaWhenAGpuIsVisible) {
  TF_NEED_GPU();
  EXPECT_TRUE(cuda_device_available());
  EXPECT_EQ(make_cuda_backend()->name(), "cuda");
}

}  // namespace
}  // namespace tf::cuda::test
