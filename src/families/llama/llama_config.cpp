#include "families/llama/llama_config.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"

namespace tf {
namespace {

void validate(const LlamaConfig& c, const std::string& path) {
  if (c.layers <= 0 || c.hidden <= 0 || c.heads <= 0 || c.kv_heads <= 0 || c.head_dim <= 0 || c.ffn <= 0 ||
      c.vocab <= 0)
    throw CheckpointError(path, "llama config lacks layers, hidden size, heads, ffn size or vocab");
  if (c.heads % c.kv_heads != 0) throw CheckpointError(path, "attention heads are not a multiple of kv heads");
  if (c.head_dim % 2 != 0) throw CheckpointError(path, "head dim is odd");
}

// Llama 3's frequency-dependent RoPE scaling, expressed as a divisor per rotated pair.
std::vector<float> llama3_factors(const nlohmann::json& rs, float base, std::int64_t head_dim) {
  const double factor = rs.value("factor", 8.0);
  const double low = rs.value("low_freq_factor", 1.0);
  const double high = rs.value("high_freq_factor", 4.0);
  const double original = rs.value("original_max_position_embeddings", 8192.0);
  const double low_wavelen = original / low, high_wavelen = original / high;
  std::vector<float> out(static_cast<std::size_t>(head_dim / 2));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double freq = 1.0 / std::pow(static_cast<double>(base), 2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double f;
    if (wavelen < high_wavelen) {
      f = 1.0;
    } else if (wavelen > low_wavelen) {
      f = factor;
    } else {
      const double smooth = (original / wavelen - low) / (high - low);
      f = freq / ((1.0 - smooth) * freq / factor + smooth * freq);
    }
    out[i] = static_cast<float>(f);
  }
  return out;
}

std::int64_t as_int(const nlohmann::json& j, const char* key, std::int64_t fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

}  // namespace

LlamaConfig llama_config_from_gguf(const GgufHeader& h, const std::string& path) {
  LlamaConfig c;
  const std::string a = h.get_string("general.architecture").value_or("llama") + ".";
  auto u = [&](const std::string& k) { return static_cast<std::int64_t>(h.get_uint(a + k).value_or(0)); };
  c.layers = u("block_count");
  c.hidden = u("embedding_length");
  c.ffn = u("feed_forward_length");
  c.heads = u("attention.head_count");
  c.kv_heads = u("attention.head_count_kv");
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  c.head_dim = u("attention.key_length");
  if (c.head_dim == 0 && c.heads > 0) c.head_dim = c.hidden / c.heads;
  c.context = u("context_length");
  c.vocab = u("vocab_size");
  if (c.vocab == 0)
    if (const auto* tokens = h.get_array("tokenizer.ggml.tokens")) c.vocab = static_cast<std::int64_t>(tokens->items.size());
  c.rms_eps = static_cast<float>(h.get_number(a + "attention.layer_norm_rms_epsilon").value_or(1e-5));
  c.rope_base = static_cast<float>(h.get_number(a + "rope.freq_base").value_or(10000.0));
  c.rope_interleaved = true;  // convert_hf_to_gguf permutes llama Q/K rows for ggml's pairwise rope
  c.tied_embeddings = h.find_tensor("output.weight") == nullptr;
  validate(c, path);
  return c;
}

LlamaConfig llama_config_from_json(const nlohmann::json& j, const std::string& path) {
  LlamaConfig c;
  c.layers = as_int(j, "num_hidden_layers", 0);
  c.hidden = as_int(j, "hidden_size", 0);
  c.ffn = as_int(j, "intermediate_size", 0);
  c.heads = as_int(j, "num_attention_heads", 0);
  c.kv_heads = as_int(j, "num_key_value_heads", c.heads);
  c.head_dim = as_int(j, "head_dim", c.heads > 0 ? c.hidden / c.heads : 0);
  c.vocab = as_int(j, "vocab_size", 0);
  c.context = as_int(j, "max_position_embeddings", 0);
  if (auto it = j.find("rms_norm_eps"); it != j.end() && it->is_number()) c.rms_eps = it->get<float>();
  if (auto it = j.find("rope_theta"); it != j.end() && it->is_number()) c.rope_base = it->get<float>();
  c.tied_embeddings = j.value("tie_word_embeddings", false);
  if (auto rs = j.find("rope_scaling"); rs != j.end() && rs->is_object()) {
    const std::string type = rs->value("rope_type", rs->value("type", std::string()));
    if (type == "llama3") {
      c.rope_freq_factors = llama3_factors(*rs, c.rope_base, c.head_dim);
    } else if (!type.empty() && type != "default") {
      throw CheckpointError(path, "rope_scaling type '" + type + "' is not supported for llama yet");
    }
  }
  validate(c, path);
  return c;
}

}  // namespace tf
