#pragma once
// A dense MLP and a mixture of experts side by side on one residual stream (Gemma 4's layers):
//   out = mlp_out_norm(mlp(h)) + experts_out_norm(experts(experts_in_norm(x)))
// where h is the layer's pre-feed-forward norm of the stream x, and the router reads router_in_norm(x): a norm
// without its own scale whose weight folds in the router's scale vector and 1 / sqrt(hidden).
#include "backends/backend.h"
#include "blocks/moe.h"
#include "blocks/swiglu_mlp.h"

namespace tf {

struct MlpBesideExperts {
  SwiGluMlp mlp;
  MoeBlock experts;
  DeviceWeight mlp_out_norm, experts_in_norm, experts_out_norm, router_in_norm;
  float eps = 1e-6f;

  // h: the layer's normed input [n, hidden]; x: the residual stream itself.
  Tensor forward(Backend& b, const Tensor& h, const Tensor& x) const {
    const Tensor dense = b.rms_norm(mlp.forward(b, h), mlp_out_norm, eps);
    const Tensor router_in = b.rms_norm(x, router_in_norm, eps);
    const Tensor routed = experts.forward(b, b.rms_norm(x, experts_in_norm, eps), &router_in);
    return b.add(dense, b.rms_norm(routed, experts_out_norm, eps));
  }
};

}  // namespace tf
