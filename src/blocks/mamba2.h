#pragma once
// The Mamba-2 selective state-space mixer (families-and-formats §1.4): in_proj to [z | x B C | dt]; the causal
// depthwise conv (with its bias) and SiLU over x|B|C and the selective scan (Backend::mamba2_scan, state in the
// stream's RecurrentState: conv window and SSM state, rolled back and snapshotted as Gated DeltaNet's);
// then the gated group RMSNorm, gate first: rms_norm_groups(y * silu(z)) (norm_before_gate false, as the
// reference does), and out_proj. Its state does not grow with the sequence.
#include <cstdint>
#include <span>
#include <string>

#include "backends/backend.h"
#include "blocks/weight_source.h"

namespace tf {

struct Mamba2Config {
  std::int64_t hidden = 0;
  Mamba2Spec spec;
  float norm_eps = 1e-5f;
};

struct Mamba2Block {
  Mamba2Config cfg;
  DeviceWeight in_proj, conv, conv_bias, a_log, dt_bias, d, norm, out;

  // Weights `prefix` + in_proj, conv1d (+ its bias where stored), A_log, dt_bias, D, norm, out_proj.
  static Mamba2Block load(WeightSource& src, const std::string& prefix, const Mamba2Config& cfg);
  // h [n, hidden] -> [n, hidden], continuing layer `slot` of each run's recurrent state.
  Tensor forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const;
};

}  // namespace tf
