#include "families/qwen3_5/qwen3_5_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/config_reader.h"
#include "checkpoint/gguf.h"
#include "checkpoint/gguf_keys.h"

namespace tf {

Qwen35Config qwen3_5_config_from_json(const nlohmann::json& top, const std::string& path) {
  const std::string file = path + "/config.json";
  const nlohmann::json& text = text_config(top);
  const ConfigReader r(text, file);
  Qwen35Config c;
  c.vocab = r.integer("vocab_size");
  c.hidden = r.integer("hidden_size");
  c.ffn = r.integer("intermediate_size");
  c.layers = r.integer("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.kv_heads = r.integer("num_key_value_heads", c.heads);
  c.head_dim = r.integer("head_dim", c.hidden / c.heads);
  c.context = r.integer("max_position_embeddings", 4096);
  c.rms_eps = static_cast<float>(r.number("rms_norm_eps", 1e-6));
  c.output_gate = text.value("attn_output_gate", true);
  // tie_word_embeddings may sit on the wrapper or in text_config.
  c.tied = text.value("tie_word_embeddings", top.value("tie_word_embeddings", false));
  const auto rp = text.find("rope_parameters");
  const nlohmann::json& rope = rp != text.end() && rp->is_object() ? *rp : text;
  c.rope_theta = static_cast<float>(r.number(rope, "rope_theta", r.number("rope_theta", 10000.0)));
  const double partial = r.number(rope, "partial_rotary_factor", r.number("partial_rotary_factor", 1.0));
  if (const std::string type = rope.value("rope_type", std::string("default")); type != "default")
    r.fail("rope type '" + type + "' is not supported for qwen3_5 yet");
  c.gdn.k_heads = static_cast<int>(r.integer("linear_num_key_heads"));
  c.gdn.v_heads = static_cast<int>(r.integer("linear_num_value_heads"));
  c.gdn.k_dim = static_cast<int>(r.integer("linear_key_head_dim"));
  c.gdn.v_dim = static_cast<int>(r.integer("linear_value_head_dim"));
  c.gdn.conv_kernel = static_cast<int>(r.integer("linear_conv_kernel_dim", 4));
  if (c.gdn.v_heads % c.gdn.k_heads != 0) r.fail("linear_num_value_heads must be a multiple of linear_num_key_heads");
  const double rot = static_cast<double>(c.head_dim) * partial;
  if (partial <= 0.0 || partial > 1.0 || rot != static_cast<double>(static_cast<std::int64_t>(rot)) ||
      static_cast<std::int64_t>(rot) % 2 != 0)
    r.fail("partial_rotary_factor must give an even number of rotary dimensions of head_dim");
  c.rotary_dims = static_cast<int>(rot);
  if (const auto ms = rope.find("mrope_section"); ms != rope.end() && rope.value("mrope_interleaved", false)) {
    if (!ms->is_array() || ms->size() != 3 || !std::all_of(ms->begin(), ms->end(), [](auto& v) {
          return v.is_number_integer() && v.template get<std::int64_t>() >= 0;
        }))
      r.fail("'mrope_section' must be 3 integers >= 0");
    int sum = 0;
    for (int i = 0; i < 3; ++i)
      sum += c.mrope_section[static_cast<std::size_t>(i)] = (*ms)[static_cast<std::size_t>(i)].get<int>();
    if (sum * 2 > c.rotary_dims) r.fail("'mrope_section' covers more than the rotary dimensions");
  }
  if (auto it = text.find("mtp_num_hidden_layers"); it != text.end() && it->is_number_integer())
    c.mtp_layers = it->get<std::int64_t>();
  if (auto lt = text.find("layer_types"); lt != text.end()) {
    if (!lt->is_array() || static_cast<std::int64_t>(lt->size()) != c.layers)
      r.fail("'layer_types' must list num_hidden_layers (" + std::to_string(c.layers) + ") entries");
    for (const auto& t : *lt) {
      const std::string s = t.is_string() ? t.get<std::string>() : std::string();
      if (s != "full_attention" && s != "linear_attention")
        r.fail("'layer_types' entries must be full_attention or linear_attention, not " + t.dump());
      c.full_attention.push_back(s == "full_attention");
    }
  } else {
    const std::int64_t every = r.integer("full_attention_interval", 4);
    for (std::int64_t i = 0; i < c.layers; ++i) c.full_attention.push_back((i + 1) % every == 0);
  }
  return c;
}

Qwen35Config qwen3_5_config_from_gguf(const GgufHeader& h, const std::string& path) {
  const GgufKeys k(h, "qwen35", path);
  Qwen35Config c;
  const auto* embed = h.find_tensor("token_embd.weight");
  if (embed == nullptr || embed->dims.size() != 2) throw CheckpointError(path, "no 2-D tensor 'token_embd.weight'");
  c.vocab = static_cast<std::int64_t>(embed->dims[1]);
  c.hidden = k.integer("embedding_length");
  c.ffn = k.integer("feed_forward_length");
  // The MTP head's layers follow the main model's in block_count (convert_hf_to_gguf's nextn layers).
  const std::int64_t blocks = k.integer("block_count");
  c.mtp_layers = k.count("nextn_predict_layers", 0);
  if (c.mtp_layers >= blocks) k.fail("nextn_predict_layers", "fewer than block_count (" + std::to_string(blocks) + ")");
  c.layers = blocks - c.mtp_layers;
  c.heads = k.integer("attention.head_count");
  c.kv_heads = k.integer("attention.head_count_kv", c.heads);
  c.head_dim = k.integer("attention.key_length", c.hidden / c.heads);
  if (k.integer("attention.value_length", c.head_dim) != c.head_dim)
    k.fail("attention.value_length", "attention.key_length (" + std::to_string(c.head_dim) + ")");
  c.context = k.integer("context_length", 4096);
  c.rms_eps = static_cast<float>(k.number("attention.layer_norm_rms_epsilon", 1e-6));
  c.rope_theta = static_cast<float>(k.number("rope.freq_base", 10000.0));
  // Text positions are equal in each of the M-RoPE sections (rope.dimension_sections), so the rotation is
  // plain RoPE over the rotary dims, as on the safetensors path.
  c.rotary_dims = static_cast<int>(k.integer("rope.dimension_count", c.head_dim));
  if (c.rotary_dims > c.head_dim || c.rotary_dims % 2 != 0)
    k.fail("rope.dimension_count", "an even number of dims of a head (" + std::to_string(c.head_dim) + ")");
  if (const auto type = h.get_string("qwen35.rope.scaling.type"); type && *type != "none")
    throw CheckpointError(path, "rope scaling '" + *type + "' is not supported for qwen3_5 yet");
  c.output_gate = true;  // llama.cpp's qwen35 always gates the attention output (attn_q holds q and gate)
  c.tied = h.find_tensor("output.weight") == nullptr;
  c.gdn.k_heads = static_cast<int>(k.integer("ssm.group_count"));
  c.gdn.v_heads = static_cast<int>(k.integer("ssm.time_step_rank"));
  c.gdn.k_dim = static_cast<int>(k.integer("ssm.state_size"));
  const std::int64_t inner = k.integer("ssm.inner_size");
  if (inner % c.gdn.v_heads != 0) k.fail("ssm.inner_size", "a multiple of ssm.time_step_rank (the value heads)");
  c.gdn.v_dim = static_cast<int>(inner / c.gdn.v_heads);
  c.gdn.conv_kernel = static_cast<int>(k.integer("ssm.conv_kernel", 4));
  if (c.gdn.v_heads % c.gdn.k_heads != 0) k.fail("ssm.time_step_rank", "a multiple of ssm.group_count (the key heads)");
  c.gdn.tiled_value_heads = true;
  // Per block (the MTP layers' entries included): recurrent, else full attention.
  const std::vector<bool> recurrent = k.flags("attention.recurrent_layers");
  if (!recurrent.empty()) {
    if (static_cast<std::int64_t>(recurrent.size()) != blocks)
      k.fail("attention.recurrent_layers", "one entry per block (" + std::to_string(blocks) + ")");
    for (std::int64_t i = 0; i < c.layers; ++i) c.full_attention.push_back(!recurrent[static_cast<std::size_t>(i)]);
  } else {
    const std::int64_t every = k.integer("full_attention_interval", 4);
    for (std::int64_t i = 0; i < c.layers; ++i) c.full_attention.push_back((i + 1) % every == 0);
  }
  return c;
}

}  // namespace tf
