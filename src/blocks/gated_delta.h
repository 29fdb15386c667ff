#pragma once
// The Gated DeltaNet mixer of Qwen3-Next / Qwen3.5 linear-attention layers (families-and-formats §1.4):
// projections to q|k|v (through a causal depthwise conv), z, b and a; the delta-rule recurrence with a
// per-head decay (Backend::gated_delta, state in the stream's RecurrentState); a gated RMSNorm with z; and
// the output projection. Its state does not grow with the sequence.
#include <cstdint>
#include <span>
#include <string>

#include "backends/backend.h"
#include "blocks/weight_source.h"

namespace tf {

struct GatedDeltaConfig {
  std::int64_t hidden = 0;
  GatedDeltaSpec spec;
  float norm_eps = 1e-6f;
  // The output norm's gate: silu(z) (Qwen3-Next, Qwen3.5), or sigmoid(z) (a config's output_gate_type).
  bool sigmoid_output_gate = false;
  // The decay rate's stored form: A_log (Hugging Face), or A = -exp(A_log) itself (llama.cpp's GGUF `ssm_a`),
  // which the block takes back to A_log at load.
  bool stored_a = false;
};

struct GatedDeltaBlock {
  GatedDeltaConfig cfg;
  DeviceWeight in_qkv, in_z, in_b, in_a, conv, a_log, dt_bias, norm, out;

  // Weights `prefix` + in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, conv1d, A_log (or A), dt_bias, norm,
  // out_proj.
  static GatedDeltaBlock load(WeightSource& src, const std::string& prefix, const GatedDeltaConfig& cfg);
  // h [n, hidden] -> [n, hidden], continuing layer `slot` of each run's recurrent state.
  Tensor forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const;
};

}  // namespace tf
