#pragma once
// Kimi delta attention (families-and-formats §1.4; GLM-5.3-Flash's linear layers): q, k and v projections run
// through one causal depthwise conv (GLM saves it fused over q|k|v) and SiLU; q and k are L2-normed per head (q
// also scaled by d^-0.5); beta = sigmoid(b_proj x); each key channel decays on its own, from a low-rank forget
// gate f_b(f_a(x)) (log-decay lower_bound * sigmoid(exp(A_log) (f + dt_bias)), or -exp(A_log) softplus(...)
// without a bound); the delta rule S = diag(decay) S, S += k (beta (v - S^T k))^T, o = S^T q per head; the output
// is RMSNorm(o) w * sigmoid(g_b(g_a(x))) per head, then o_proj.
// The recurrence is Backend::gated_delta with GatedDeltaSpec::channel_decay: its state (conv window and one
// [d, d] matrix a head) is the stream's RecurrentState, rolled back and snapshotted as Gated DeltaNet's is.
#include <cstdint>
#include <span>
#include <string>

#include "backends/backend.h"
#include "blocks/weight_source.h"

namespace tf {

struct KdaConfig {
  std::int64_t hidden = 0;
  int heads = 0, head_dim = 0, conv_kernel = 4;
  float lower_bound = 0.0f;  // < 0: the decay's lower bound (linear_lower_bound); 0: none
  float norm_eps = 1e-6f;
  // The recurrent store's shape: as many key heads as value heads, q|k|v conv channels, a decay per channel.
  GatedDeltaSpec spec() const;
};

struct KdaBlock {
  KdaConfig cfg;
  DeviceWeight q, k, v, conv, f_a, f_b, a_log, dt_bias, b, g_a, g_b, o_norm, o;

  // `prefix` + q_proj, k_proj, v_proj, conv1d ([3 heads * head_dim, 1, kernel]), forget_gate.{f_a_proj, f_b_proj,
  // dt_bias, A_log}, b_proj, g_a_proj, g_b_proj, o_norm, o_proj.
  static KdaBlock load(WeightSource& src, const std::string& prefix, const KdaConfig& cfg);
  // h [n, hidden] -> [n, hidden], continuing layer `slot` of each run's recurrent state.
  Tensor forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const;
};

}  // namespace tf
