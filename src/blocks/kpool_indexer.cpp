#include "blocks/kpool_indexer.h"

#include <algorithm>
#include <cmath>

namespace tf {

KpoolIndexer KpoolIndexer::load(WeightSource& src, const std::string& prefix, const KpoolIndexerConfig& cfg) {
  KpoolIndexer x;
  x.cfg = cfg;
  if (cfg.pool < 1 || cfg.top_k < cfg.pool || cfg.top_k % cfg.pool != 0)
    src.fail("'index_topk' must be a positive multiple of 'index_kpool'");
  const std::int64_t hd = cfg.head_dim;
  x.wq_b = src.matrix(prefix + "wq_b.weight", cfg.heads * hd, cfg.q_rank);
  x.wk = src.matrix(prefix + "wk.weight", hd, cfg.hidden);
  x.weights_proj = src.matrix(prefix + "weights_proj.weight", cfg.heads, cfg.hidden);
  x.compress_gate = src.matrix(prefix + "index_kpool_compress_gate", hd, cfg.hidden);
  x.k_norm_weight = src.floats(prefix + "k_norm.weight", hd);
  x.k_norm_bias = src.floats(prefix + "k_norm.bias", hd);
  x.ape = src.floats(prefix + "index_kpool_compress_ape", cfg.pool * hd);
  return x;
}

KpoolIndexer::Rows KpoolIndexer::project(Backend& b, const Tensor& h, const Tensor& q_resid) const {
  Rows r;
  r.q = b.to_host(b.linear(q_resid, wq_b));
  r.w = b.to_host(b.linear(h, weights_proj));
  const float head_scale = 1.0f / std::sqrt(static_cast<float>(cfg.heads));
  for (float& v : r.w) v *= head_scale;
  r.k = b.to_host(b.linear(h, wk));
  r.gate = b.to_host(b.linear(h, compress_gate));
  // LayerNorm of each row's index key (mean and variance over head_dim, eps 1e-6, weight and bias).
  const auto d = static_cast<std::size_t>(cfg.head_dim);
  for (std::size_t at = 0; at < r.k.size(); at += d) {
    float* k = r.k.data() + at;
    float mean = 0.0f;
    for (std::size_t j = 0; j < d; ++j) mean += k[j];
    mean /= static_cast<float>(d);
    float var = 0.0f;
    for (std::size_t j = 0; j < d; ++j) var += (k[j] - mean) * (k[j] - mean);
    const float inv = 1.0f / std::sqrt(var / static_cast<float>(d) + 1e-6f);
    for (std::size_t j = 0; j < d; ++j) k[j] = (k[j] - mean) * inv * k_norm_weight[j] + k_norm_bias[j];
  }
  return r;
}

void KpoolIndexer::pool_key(std::span<const float* const> keys, std::span<const float* const> gates, float* out) const {
  const auto d = static_cast<std::size_t>(cfg.head_dim), P = keys.size();
  for (std::size_t j = 0; j < d; ++j) {
    float top = -INFINITY;
    for (std::size_t t = 0; t < P; ++t) top = std::max(top, gates[t][j] + ape[t * d + j]);
    float sum = 0.0f, acc = 0.0f;
    for (std::size_t t = 0; t < P; ++t) {
      const float e = std::exp(gates[t][j] + ape[t * d + j] - top);
      sum += e;
      acc += e * keys[t][j];
    }
    out[j] = acc / sum;
  }
}

void KpoolIndexer::score(const float* q, const float* w, std::span<const float> pool_keys, std::int64_t pools,
                         std::vector<float>& out) const {
  const auto d = static_cast<std::size_t>(cfg.head_dim), H = static_cast<std::size_t>(cfg.heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  out.assign(static_cast<std::size_t>(pools), 0.0f);
  for (std::size_t p = 0; p < static_cast<std::size_t>(pools); ++p) {
    const float* key = pool_keys.data() + p * d;
    float s = 0.0f;
    for (std::size_t hh = 0; hh < H; ++hh) {
      float dot = 0.0f;
      for (std::size_t j = 0; j < d; ++j) dot += q[hh * d + j] * key[j];
      s += w[hh] * std::max(dot * scale, 0.0f);
    }
    out[p] = s;
  }
}

}  // namespace tf
