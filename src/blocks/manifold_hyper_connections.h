#pragma once
// Manifold-constrained hyper-connections (mHC, families-and-formats §1.6; GLM-5.3-Flash): the residual is
// `streams` copies of the hidden row ([n, streams * hidden]); around each block, from the streams x_s:
//   mix = fn . rmsnorm(x) (unweighted, over all streams), (2 + S) S values split into pre, post and comb logits;
//   pre_s = sigmoid(mix_s scale_0 + base_s) + hc_eps; post_s = 2 sigmoid(mix_{S+s} scale_1 + base_{S+s});
//   comb = softmax over each row of the S x S logits (scale_2, base) + hc_eps, then normalised over columns,
//     then `sinkhorn_iters` - 1 rounds of rows then columns (each sum + hc_eps): near doubly stochastic;
//   enter: the block's input is its pre-norm of sum_s pre_s x_s;
//   leave: stream s becomes post_s y + sum_t comb[t][s] x_t.
// The model's head collapses the streams by their mean before the final norm (head(): GLM-5.3), or by learned
// weights pre_s = sigmoid(mix_s scale + base_s) + hc_eps from mix = fn . rmsnorm(x) (learned_head(): DeepSeek-V4's
// hc_head, S logits). All in float32 on the
// host over each row alone (the fn product runs on the backend): a row never depends on the rows beside it.
#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "blocks/hyper_connections.h"
#include "blocks/weight_source.h"

namespace tf {

struct ManifoldHyperConnections final : StreamWrapper {
  int streams = 0;
  std::int64_t hidden = 0;
  int sinkhorn_iters = 20;
  float hc_eps = 1e-6f, rms_eps = 1e-6f;
  bool mean_only = false;          // the head: the streams' mean, no learned maps
  bool pre_only = false;           // a learned head: fn gives pre alone (S logits, one scale)
  DeviceWeight ones, fn;           // [streams * hidden] ones (the unweighted norm); [(2 + S) S, streams * hidden]
  std::vector<float> base, scale;  // [(2 + S) S], [3]
  DeviceWeight norm;               // the block's pre-norm (or the final norm), applied to the collapsed row

  // `prefix` + fn, base, scale; `norm_name`: the block's pre-norm weight [hidden].
  static ManifoldHyperConnections load(WeightSource& src, const std::string& prefix, const std::string& norm_name,
                                       int streams, std::int64_t hidden, int sinkhorn_iters, float hc_eps,
                                       float rms_eps);
  // The final collapse: rmsnorm(mean of the streams) with `norm_name`'s weight.
  static ManifoldHyperConnections head(WeightSource& src, const std::string& norm_name, int streams,
                                       std::int64_t hidden, float rms_eps);
  // The final collapse by learned weights: `prefix` + fn [S, S * hidden], base [S], scale [1].
  static ManifoldHyperConnections learned_head(WeightSource& src, const std::string& prefix,
                                               const std::string& norm_name, int streams, std::int64_t hidden,
                                               float hc_eps, float rms_eps);
  // `weights`: per row post [S] then comb [S, S] (row t, column s).
  Tensor enter(Backend& b, const Tensor& x, std::vector<float>* weights) const override;
  Tensor leave(Backend& b, const Tensor& x, const Tensor& y, const std::vector<float>& weights) const override;
};

// One row's mixing from its (2 + S) S logits: pre [S], post [S], comb [S * S], as above (exposed for the tests).
void manifold_mixing(const float* logits, int streams, const std::vector<float>& base, const std::vector<float>& scale,
                     int sinkhorn_iters, float hc_eps, float* pre, float* post, float* comb);

}  // namespace tf
