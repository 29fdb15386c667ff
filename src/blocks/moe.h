#pragma once
// A mixture-of-experts feed-forward block (families-and-formats §1.5): a router (blocks/moe_router.h) picks
// each row's top-k routed experts; each expert is a SwiGLU MLP down(silu(gate x) * up x) or a non-gated one
// down(max(up x, 0)^2); their outputs, times the router's weights, are summed in ascending expert order; an
// optional latent projection wraps the routed experts (x -> latent_in x before them, latent_out after the sum);
// an optional shared expert (same activation) runs on every row and is added, unweighted or under a per-row
// sigmoid gate of its own (Qwen3-Next's shared_expert_gate).
//
// Exactness: each row is routed from its own logits alone and sums its experts' outputs in a fixed order. In
// calls of up to Backend::invariant_rows() rows (decode, verify windows, shared rounds) every expert product is
// one the backend computes with the same bits whatever rows share it, so a row's output never depends on the
// rows beside it. Longer calls are prefill chunks: an expert serving more rows than that takes the backend's
// prefill path, as the dense layers of the chunk do (bits fixed by the chunk plan: resumed == fresh).
// Expert weights are held one DeviceWeight per expert and projection, read from any of the stored layouts
// (load()).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "blocks/glu.h"
#include "blocks/moe_router.h"
#include "blocks/weight_source.h"

namespace tf {

struct MoeConfig {
  std::int64_t hidden = 0;
  std::int64_t ffn = 0;                            // each routed expert's intermediate width (moe_intermediate_size)
  std::int64_t shared_ffn = 0;                     // the shared expert's (0: none)
  std::int64_t latent = 0;                         // moe_latent_size (0: the experts read and write hidden rows)
  bool gated = true;                               // gated experts (act(gate) * up); false: up/down with squared ReLU
  GluActivation activation = GluActivation::Silu;  // the gated experts' (and shared expert's) activation
  float swiglu_limit = 0.0f;                       // > 0: the gated experts' inputs clamped (blocks/glu.h)
  std::string router_name = "gate.weight";         // the router's projection under the block's prefix
  std::string shared_name = "shared_experts.";     // the shared expert's prefix under the block's
  bool shared_expert_gate = false;  // the shared expert's output times sigmoid(shared_expert_gate.weight . x)
  // Per-expert projection names (experts.N.<name>.weight and the shared expert's): Hugging Face's, or the
  // DeepSeek reference's w1 / w3 / w2.
  std::string gate_proj = "gate_proj", up_proj = "up_proj", down_proj = "down_proj";
  std::string bias_name = "gate.e_score_correction_bias";  // the router's correction bias, where present
  std::string token_experts_name;  // hash routing: the [vocab, top_k] token -> experts table (empty: none)
  std::int64_t vocab = 0;          // hash routing: the table's rows
  RouterSpec router;
};

struct MoeBlock {
  MoeConfig cfg;
  DeviceWeight router;                       // [experts, hidden]
  std::vector<DeviceWeight> gate, up, down;  // per expert (gate only when gated)
  DeviceWeight shared_gate, shared_up, shared_down;
  DeviceWeight shared_expert_gate;  // [1, hidden], where cfg.shared_expert_gate
  DeviceWeight latent_in, latent_out;

  // From `prefix`: the router gate.weight (+ gate.e_score_correction_bias, read into cfg.router), the routed
  // experts in one of the layouts checkpoints use:
  //   experts.N.{gate,up,down}_proj.weight                 Hugging Face, one tensor per expert
  //   experts.{gate_up,up,down}_proj [E, out, in]          transformers 5 stacks (gate_up fused: gate rows first)
  //   switch_mlp.{gate,up,down}_proj.weight [E, out, in]   mlx-lm (quantized with a leading E dimension)
  //   switch_mlp.{fc1,fc2}.weight [E, out, in]             mlx-lm's non-gated experts (fc1 up, fc2 down)
  // then shared_experts.{gate,up,down}_proj (cfg.shared_name; + shared_expert_gate.weight) and fc1_latent_proj /
  // fc2_latent_proj where the config has them.
  static MoeBlock load(WeightSource& src, const std::string& prefix, const MoeConfig& cfg);
  // h [n, hidden] -> [n, hidden]; the router reads `router_input` [n, hidden] where given (Gemma 4 routes
  // from its own normed input, the experts from another), else h. A hash-routed block takes the rows' tokens.
  Tensor forward(Backend& b, const Tensor& h, const Tensor* router_input = nullptr,
                 std::span<const std::int32_t> tokens = {}) const;
  bool hashed() const { return !cfg.router.token_experts.empty(); }
};

}  // namespace tf
