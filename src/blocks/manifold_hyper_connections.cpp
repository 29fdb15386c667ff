#include "blocks/manifold_hyper_connections.h"

#include <algorithm>
#include <cmath>

namespace tf {
namespace {
float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }
}  // namespace

ManifoldHyperConnections ManifoldHyperConnections::load(WeightSource& src, const std::string& prefix,
                                                        const std::string& norm_name, int streams, std::int64_t hidden,
                                                        int sinkhorn_iters, float hc_eps, float rms_eps) {
  ManifoldHyperConnections h;
  h.streams = streams;
  h.hidden = hidden;
  h.sinkhorn_iters = sinkhorn_iters;
  h.hc_eps = hc_eps;
  h.rms_eps = rms_eps;
  const std::int64_t wide = streams * hidden, mix = static_cast<std::int64_t>(2 + streams) * streams;
  h.ones = src.values(prefix + "(unweighted norm)", std::vector<float>(static_cast<std::size_t>(wide), 1.0f));
  h.fn = src.matrix(prefix + "fn", mix, wide);
  h.base = src.floats(prefix + "base", mix);
  h.scale = src.floats(prefix + "scale", 3);
  h.norm = src.vector(norm_name, hidden);
  return h;
}

ManifoldHyperConnections ManifoldHyperConnections::head(WeightSource& src, const std::string& norm_name, int streams,
                                                        std::int64_t hidden, float rms_eps) {
  ManifoldHyperConnections h;
  h.streams = streams;
  h.hidden = hidden;
  h.rms_eps = rms_eps;
  h.mean_only = true;
  h.norm = src.vector(norm_name, hidden);
  return h;
}

ManifoldHyperConnections ManifoldHyperConnections::learned_head(WeightSource& src, const std::string& prefix,
                                                                const std::string& norm_name, int streams,
                                                                std::int64_t hidden, float hc_eps, float rms_eps) {
  ManifoldHyperConnections h;
  h.streams = streams;
  h.hidden = hidden;
  h.hc_eps = hc_eps;
  h.rms_eps = rms_eps;
  h.pre_only = true;
  const std::int64_t wide = streams * hidden;
  h.ones = src.values(prefix + "(unweighted norm)", std::vector<float>(static_cast<std::size_t>(wide), 1.0f));
  h.fn = src.matrix(prefix + "fn", streams, wide);
  h.base = src.floats(prefix + "base", streams);
  h.scale = src.floats(prefix + "scale", 1);
  h.norm = src.vector(norm_name, hidden);
  return h;
}

void manifold_mixing(const float* logits, int streams, const std::vector<float>& base, const std::vector<float>& scale,
                     int sinkhorn_iters, float hc_eps, float* pre, float* post, float* comb) {
  const int S = streams;
  for (int s = 0; s < S; ++s) {
    pre[s] = sigmoid(logits[s] * scale[0] + base[static_cast<std::size_t>(s)]) + hc_eps;
    post[s] = 2.0f * sigmoid(logits[S + s] * scale[1] + base[static_cast<std::size_t>(S + s)]);
  }
  for (int i = 0; i < S; ++i) {  // softmax over each row
    float* row = comb + i * S;
    float top = -INFINITY;
    for (int j = 0; j < S; ++j) {
      row[j] = logits[2 * S + i * S + j] * scale[2] + base[static_cast<std::size_t>(2 * S + i * S + j)];
      top = std::max(top, row[j]);
    }
    float sum = 0.0f;
    for (int j = 0; j < S; ++j) sum += (row[j] = std::exp(row[j] - top));
    for (int j = 0; j < S; ++j) row[j] = row[j] / sum + hc_eps;
  }
  const auto columns = [&] {
    for (int j = 0; j < S; ++j) {
      float sum = 0.0f;
      for (int i = 0; i < S; ++i) sum += comb[i * S + j];
      for (int i = 0; i < S; ++i) comb[i * S + j] /= sum + hc_eps;
    }
  };
  columns();
  for (int it = 1; it < sinkhorn_iters; ++it) {
    for (int i = 0; i < S; ++i) {
      float sum = 0.0f;
      for (int j = 0; j < S; ++j) sum += comb[i * S + j];
      for (int j = 0; j < S; ++j) comb[i * S + j] /= sum + hc_eps;
    }
    columns();
  }
}

Tensor ManifoldHyperConnections::enter(Backend& b, const Tensor& x, std::vector<float>* weights) const {
  const auto S = static_cast<std::size_t>(streams), H = static_cast<std::size_t>(hidden);
  const std::vector<float> xs = b.to_host(x);
  const std::size_t n = xs.size() / (S * H);
  std::vector<float> collapsed(n * H, 0.0f);
  if (mean_only) {
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t j = 0; j < H; ++j) {
        float acc = 0.0f;
        for (std::size_t s = 0; s < S; ++s) acc += xs[(r * S + s) * H + j];
        collapsed[r * H + j] = acc / static_cast<float>(S);
      }
  } else if (pre_only) {
    const std::vector<float> logits = b.to_host(b.linear(b.rms_norm(x, ones, rms_eps), fn));
    std::vector<float> pre(S);
    for (std::size_t r = 0; r < n; ++r) {
      for (std::size_t s = 0; s < S; ++s) pre[s] = sigmoid(logits[r * S + s] * scale[0] + base[s]) + hc_eps;
      for (std::size_t j = 0; j < H; ++j) {
        float acc = 0.0f;
        for (std::size_t s = 0; s < S; ++s) acc += pre[s] * xs[(r * S + s) * H + j];
        collapsed[r * H + j] = acc;
      }
    }
  } else {
    const std::size_t mix = (2 + S) * S;
    const std::vector<float> logits = b.to_host(b.linear(b.rms_norm(x, ones, rms_eps), fn));
    std::vector<float> pre(S);
    if (weights != nullptr) weights->assign(n * (S + S * S), 0.0f);
    std::vector<float> post(S), comb(S * S);
    for (std::size_t r = 0; r < n; ++r) {
      float* po = weights != nullptr ? weights->data() + r * (S + S * S) : post.data();
      float* co = weights != nullptr ? po + S : comb.data();
      manifold_mixing(logits.data() + r * mix, streams, base, scale, sinkhorn_iters, hc_eps, pre.data(), po, co);
      for (std::size_t j = 0; j < H; ++j) {
        float acc = 0.0f;
        for (std::size_t s = 0; s < S; ++s) acc += pre[s] * xs[(r * S + s) * H + j];
        collapsed[r * H + j] = acc;
      }
    }
  }
  return b.rms_norm(b.from_host(collapsed, static_cast<std::int64_t>(n), hidden), norm, rms_eps);
}

Tensor ManifoldHyperConnections::leave(Backend& b, const Tensor& x, const Tensor& y,
                                       const std::vector<float>& weights) const {
  const auto S = static_cast<std::size_t>(streams), H = static_cast<std::size_t>(hidden);
  const std::vector<float> xs = b.to_host(x), add = b.to_host(y);
  const std::size_t n = add.size() / H;
  std::vector<float> out(n * S * H);
  for (std::size_t r = 0; r < n; ++r) {
    const float* post = weights.data() + r * (S + S * S);
    const float* comb = post + S;
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t j = 0; j < H; ++j) {
        float acc = post[s] * add[r * H + j];
        for (std::size_t t = 0; t < S; ++t) acc += comb[t * S + s] * xs[(r * S + t) * H + j];
        out[(r * S + s) * H + j] = acc;
      }
  }
  return b.from_host(out, static_cast<std::int64_t>(n), streams * hidden);
}

}  // namespace tf
