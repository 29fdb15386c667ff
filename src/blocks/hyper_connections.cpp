#include "blocks/hyper_connections.h"

#include <algorithm>
#include <cmath>

namespace tf {
namespace {
float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }
}  // namespace

HyperConnections HyperConnections::load(WeightSource& src, const std::string& prefix, int streams, std::int64_t hidden,
                                        std::int64_t rank, float eps, bool with_inject, bool zero_centred_norm) {
  HyperConnections h;
  h.streams = streams;
  h.hidden = hidden;
  h.rank = rank;
  h.eps = eps;
  const std::int64_t wide = streams * hidden;
  h.norm = src.vector(prefix + "hc_norm.weight", wide, zero_centred_norm);
  h.mix_down = src.matrix(prefix + "input_mix_weight_down.weight", rank, wide);
  h.mix_up = src.matrix(prefix + "input_mix_weight_up.weight", wide, rank);
  if (with_inject) h.inject = src.matrix(prefix + "block_inject_weight.weight", streams, wide);
  return h;
}

Tensor HyperConnections::enter(Backend& b, const Tensor& x, std::vector<float>* weights) const {
  const Tensor normed = b.rms_norm_groups(x, norm, streams, eps);
  const auto S = static_cast<std::size_t>(streams), H = static_cast<std::size_t>(hidden);
  const float inv_s = 1.0f / static_cast<float>(streams);
  std::vector<float> low = b.to_host(b.linear(normed, mix_down));
  for (float& v : low) {
    const float a = v * inv_s;
    v = a * sigmoid(a);  // silu
  }
  const std::size_t n = low.size() / static_cast<std::size_t>(rank);
  const std::vector<float> mix = b.to_host(b.linear(b.from_host(low, static_cast<std::int64_t>(n), rank), mix_up));
  const std::vector<float> u = b.to_host(normed);
  std::vector<float> in(n * H);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < H; ++j) {
      float acc = 0.0f;
      for (std::size_t s = 0; s < S; ++s) {
        const std::size_t at = r * S * H + s * H + j;
        acc += sigmoid(mix[at]) * u[at];
      }
      in[r * H + j] = acc * inv_s;
    }
  if (weights != nullptr) {
    *weights = b.to_host(b.linear(normed, inject));
    for (float& v : *weights) v = 2.0f * sigmoid(v * inv_s);
  }
  return b.from_host(in, static_cast<std::int64_t>(n), hidden);
}

Tensor HyperConnections::leave(Backend& b, const Tensor& x, const Tensor& y, const std::vector<float>& weights) const {
  std::vector<float> out = b.to_host(x);
  const std::vector<float> add = b.to_host(y);
  const auto S = static_cast<std::size_t>(streams), H = static_cast<std::size_t>(hidden);
  const std::size_t n = add.size() / H;
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t s = 0; s < S; ++s) {
      const float g = weights[r * S + s];
      float* dst = out.data() + r * S * H + s * H;
      for (std::size_t j = 0; j < H; ++j) dst[j] = dst[j] + add[r * H + j] * g;
    }
  return b.from_host(out, static_cast<std::int64_t>(n), streams * hidden);
}

Tensor widen_streams(Backend& b, const Tensor& x, std::int64_t hidden, int streams) {
  const std::vector<float> rows = b.to_host(x);
  const auto H = static_cast<std::size_t>(hidden), S = static_cast<std::size_t>(streams);
  const std::size_t n = rows.size() / H;
  std::vector<float> wide(n * S * H);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t s = 0; s < S; ++s) std::copy_n(rows.data() + r * H, H, wide.data() + (r * S + s) * H);
  return b.from_host(wide, static_cast<std::int64_t>(n), streams * hidden);
}

}  // namespace tf
