#include "blocks/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace tf {
MoeBlock MoeBlock::load(WeightSource& src, const std::string& prefix, const MoeConfig& cfg) {
  MoeBlock m;
  m.cfg = cfg;
  const std::int64_t E = cfg.router.experts, I = cfg.ffn, width = cfg.latent > 0 ? cfg.latent : cfg.hidden;
  m.router = src.matrix(prefix + cfg.router_name, E, cfg.hidden);
  const std::string bias = prefix + cfg.bias_name;
  if (src.has(bias)) m.cfg.router.correction_bias = src.floats(bias, E);
  if (!cfg.token_experts_name.empty()) {
    // Expert ids, read as float values (exact: far below 2^24).
    for (const float v : src.floats(prefix + cfg.token_experts_name, cfg.vocab * cfg.router.top_k))
      m.cfg.router.token_experts.push_back(static_cast<std::int32_t>(v));
  }
  if (const std::string problem = router_spec_problem(m.cfg.router); !problem.empty())
    src.fail(prefix + ": " + problem);

  const auto per_expert = [&](const std::string& proj, std::int64_t rows, std::int64_t cols) {
    std::vector<DeviceWeight> out;
    for (std::int64_t e = 0; e < E; ++e)
      out.push_back(src.matrix(prefix + "experts." + std::to_string(e) + "." + proj + ".weight", rows, cols));
    return out;
  };
  if (src.has(prefix + "experts.0." + cfg.up_proj + ".weight")) {
    if (cfg.gated) m.gate = per_expert(cfg.gate_proj, I, width);
    m.up = per_expert(cfg.up_proj, I, width);
    m.down = per_expert(cfg.down_proj, width, I);
  } else if (src.has(prefix + "experts.down_proj")) {
    if (cfg.gated) {
      m.gate = src.stack(prefix + "experts.gate_up_proj", E, 2 * I, width, 0, I);
      m.up = src.stack(prefix + "experts.gate_up_proj", E, 2 * I, width, I, I);
    } else {
      m.up = src.stack(prefix + "experts.up_proj", E, I, width);
    }
    m.down = src.stack(prefix + "experts.down_proj", E, width, I);
  } else if (!cfg.gated && src.has(prefix + "switch_mlp.fc1.weight")) {
    m.up = src.stack(prefix + "switch_mlp.fc1.weight", E, I, width);
    m.down = src.stack(prefix + "switch_mlp.fc2.weight", E, width, I);
  } else if (const std::string sw = src.has(prefix + "switch_mlp.up_proj.weight")
                                        ? prefix + "switch_mlp."
                                        : prefix + "experts.switch_glu.";  // mlx-lm's SwitchGLU, by model
             src.has(sw + "up_proj.weight")) {
    if (cfg.gated) m.gate = src.stack(sw + "gate_proj.weight", E, I, width);
    m.up = src.stack(sw + "up_proj.weight", E, I, width);
    m.down = src.stack(sw + "down_proj.weight", E, width, I);
  } else {
    src.fail("missing tensor '" + prefix + "experts.0.up_proj.weight' (no routed experts under '" + prefix +
             "' in any known layout)");
  }
  if (cfg.shared_ffn > 0) {
    const std::string s = prefix + cfg.shared_name;
    if (cfg.gated) m.shared_gate = src.matrix(s + cfg.gate_proj + ".weight", cfg.shared_ffn, cfg.hidden);
    m.shared_up = src.matrix(s + cfg.up_proj + ".weight", cfg.shared_ffn, cfg.hidden);
    m.shared_down = src.matrix(s + cfg.down_proj + ".weight", cfg.hidden, cfg.shared_ffn);
    if (cfg.shared_expert_gate) m.shared_expert_gate = src.matrix(prefix + "shared_expert_gate.weight", 1, cfg.hidden);
  }
  if (cfg.latent > 0) {
    m.latent_in = src.matrix(prefix + "fc1_latent_proj.weight", cfg.latent, cfg.hidden);
    m.latent_out = src.matrix(prefix + "fc2_latent_proj.weight", cfg.hidden, cfg.latent);
  }
  return m;
}

Tensor MoeBlock::forward(Backend& b, const Tensor& h, const Tensor* router_input,
                         std::span<const std::int32_t> tokens) const {
  const auto& rs = cfg.router;
  const std::vector<float> logits = b.to_host(b.linear(router_input != nullptr ? *router_input : h, router));
  const Tensor routed_in = cfg.latent > 0 ? b.linear(h, latent_in) : h;
  const std::vector<float> x = b.to_host(routed_in);
  const std::int64_t width = cfg.latent > 0 ? cfg.latent : cfg.hidden;
  const auto n = static_cast<std::int64_t>(logits.size()) / rs.experts;
  const auto k = static_cast<std::size_t>(rs.top_k);

  // Each row's choices, and for each expert the (row, slot) pairs it serves, in row order.
  std::vector<std::vector<ExpertChoice>> choices(static_cast<std::size_t>(n));
  std::vector<std::vector<std::pair<std::int64_t, std::size_t>>> served(static_cast<std::size_t>(rs.experts));
  if (hashed() && static_cast<std::int64_t>(tokens.size()) != n)
    throw std::logic_error("hash-routed experts: the rows' tokens are missing");
  for (std::int64_t r = 0; r < n; ++r) {
    const auto row_logits = std::span<const float>(logits).subspan(static_cast<std::size_t>(r * rs.experts),
                                                                   static_cast<std::size_t>(rs.experts));
    choices[static_cast<std::size_t>(r)] =
        hashed() ? route_row(row_logits, rs, tokens[static_cast<std::size_t>(r)]) : route_row(row_logits, rs);
    for (std::size_t s = 0; s < k; ++s)
      served[static_cast<std::size_t>(choices[static_cast<std::size_t>(r)][s].expert)].push_back({r, s});
  }

  // Every (row, slot)'s expert output, each expert's rows in one product. In a call of up to
  // Backend::invariant_rows() rows (decode, verify windows, shared rounds) that product is one the backend
  // computes with the same bits whatever rows share it. A longer call is a prefill chunk, whose dense products
  // already take the backend's faster path with bits that depend on the chunk (fixed by the chunk plan, so a
  // resumed prompt equals a fresh one): an expert serving more rows than the invariant size takes it too.
  std::vector<float> outputs(static_cast<std::size_t>(n) * k * static_cast<std::size_t>(width));
  std::vector<float> rows;
  for (std::size_t e = 0; e < served.size(); ++e) {
    const auto& list = served[e];
    if (list.empty()) continue;
    const std::size_t m = list.size();
    rows.resize(m * static_cast<std::size_t>(width));
    for (std::size_t i = 0; i < m; ++i)
      std::memcpy(rows.data() + i * static_cast<std::size_t>(width),
                  x.data() + static_cast<std::size_t>(list[i].first * width),
                  static_cast<std::size_t>(width) * sizeof(float));
    const Tensor in = b.from_host(rows, static_cast<std::int64_t>(m), width);
    const Tensor act =
        cfg.gated ? glu(b, b.linear(in, gate[e]), b.linear(in, up[e]), cfg.activation, cfg.swiglu_limit, cfg.ffn)
                  : b.relu_squared(b.linear(in, up[e]));
    const std::vector<float> y = b.to_host(b.linear(act, down[e]));
    for (std::size_t i = 0; i < m; ++i) {
      const auto [r, s] = list[i];
      std::memcpy(outputs.data() + (static_cast<std::size_t>(r) * k + s) * static_cast<std::size_t>(width),
                  y.data() + i * static_cast<std::size_t>(width), static_cast<std::size_t>(width) * sizeof(float));
    }
  }

  // Each row's weighted sum, from zero, in ascending expert order (its choices' order).
  std::vector<float> sum(static_cast<std::size_t>(n * width), 0.0f);
  for (std::int64_t r = 0; r < n; ++r) {
    float* acc = sum.data() + r * width;
    for (std::size_t s = 0; s < k; ++s) {
      const float w = choices[static_cast<std::size_t>(r)][s].weight;
      const float* y = outputs.data() + (static_cast<std::size_t>(r) * k + s) * static_cast<std::size_t>(width);
      for (std::int64_t j = 0; j < width; ++j) acc[j] = acc[j] + y[j] * w;
    }
  }
  Tensor out = b.from_host(sum, n, width);
  if (cfg.latent > 0) out = b.linear(out, latent_out);
  if (cfg.shared_ffn > 0) {
    const Tensor act = cfg.gated ? glu(b, b.linear(h, shared_gate), b.linear(h, shared_up), cfg.activation,
                                       cfg.swiglu_limit, cfg.shared_ffn)
                                 : b.relu_squared(b.linear(h, shared_up));
    Tensor shared = b.linear(act, shared_down);
    if (cfg.shared_expert_gate) {
      // Each row's own gate on the host (one value a row).
      const std::vector<float> g = b.to_host(b.linear(h, shared_expert_gate));
      std::vector<float> y = b.to_host(shared);
      for (std::int64_t r = 0; r < n; ++r) {
        const float s = 1.0f / (1.0f + std::exp(-g[static_cast<std::size_t>(r)]));
        for (std::int64_t j = 0; j < cfg.hidden; ++j) y[static_cast<std::size_t>(r * cfg.hidden + j)] *= s;
      }
      shared = b.from_host(y, n, cfg.hidden);
    }
    out = b.add(out, shared);
  }
  return out;
}

}  // namespace tf
