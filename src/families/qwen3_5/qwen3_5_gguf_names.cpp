// convert_hf_to_gguf's renaming of a Qwen3.5 checkpoint (its Qwen3NextModel / _QwenMtpMixin and gguf-py's
// tensor map), undone. The values change too in places, which the layer plan is told of (qwen3_5.cpp): the
// zero-centred norms are stored as 1 + w, A_log as A = -exp(A_log), the conv kernel as [channels, kernel], and
// the Gated DeltaNet value heads are tiled over the key heads.
#include "families/qwen3_5/qwen3_5_gguf_names.h"

#include <array>
#include <utility>

namespace tf {
namespace {

using Pair = std::pair<const char*, const char*>;

// A layer's names after "model.layers.N." (or "mtp.layers.I.") and after "blk.L.".
constexpr std::array<Pair, 20> kLayer{{
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
    {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
    {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
    {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
    {"linear_attn.A_log", "ssm_a"},
    {"linear_attn.dt_bias", "ssm_dt.bias"},
    {"linear_attn.norm.weight", "ssm_norm.weight"},
    {"linear_attn.out_proj.weight", "ssm_out.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
}};

constexpr std::array<Pair, 3> kTop{{
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
}};

// The MTP head's own weights (blk.L.nextn.*).
constexpr std::array<Pair, 4> kMtp{{
    {"mtp.fc.weight", "nextn.eh_proj.weight"},
    {"mtp.pre_fc_norm_embedding.weight", "nextn.enorm.weight"},
    {"mtp.pre_fc_norm_hidden.weight", "nextn.hnorm.weight"},
    {"mtp.norm.weight", "nextn.shared_head_norm.weight"},
}};

// "P<index>.<rest>" -> {index, rest}, or {-1, ""} when `name` does not start with P and an index.
std::pair<std::int64_t, std::string> indexed(const std::string& name, const std::string& p) {
  if (!name.starts_with(p)) return {-1, ""};
  const auto dot = name.find('.', p.size());
  if (dot == std::string::npos || dot == p.size()) return {-1, ""};
  std::int64_t i = 0;
  for (std::size_t c = p.size(); c < dot; ++c) {
    if (name[c] < '0' || name[c] > '9') return {-1, ""};
    i = i * 10 + (name[c] - '0');
  }
  return {i, name.substr(dot + 1)};
}

std::string layer_name(std::int64_t block, const std::string& rest, const std::string& hf) {
  for (const auto& [from, to] : kLayer)
    if (rest == from) return "blk." + std::to_string(block) + "." + to;
  return hf;
}

}  // namespace

std::string qwen3_5_gguf_name(const std::string& hf, std::int64_t layers) {
  for (const auto& [from, to] : kTop)
    if (hf == from) return to;
  for (const auto& [from, to] : kMtp)
    if (hf == from) return "blk." + std::to_string(layers) + "." + to;
  if (const auto [i, rest] = indexed(hf, "model.layers."); i >= 0) return layer_name(i, rest, hf);
  if (const auto [i, rest] = indexed(hf, "mtp.layers."); i >= 0) return layer_name(layers + i, rest, hf);
  return hf;
}

}  // namespace tf
