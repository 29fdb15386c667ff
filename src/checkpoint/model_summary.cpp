#include "checkpoint/model_summary.h"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <filesystem>
#include <string_view>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/mlx_affine.h"

namespace tf {
namespace fs = std::filesystem;

namespace {

void finish_kv(ModelSummary& s) {
  if (s.head_dim == 0 && s.heads != 0) s.head_dim = s.hidden / s.heads;
  if (s.attention_layers == 0) s.attention_layers = s.layers;
  s.kv_bytes_per_token = 2 /*K,V*/ * s.attention_layers * s.kv_heads * s.head_dim * 2 /*f16*/;
}

// Hybrid configs (Qwen3-Next / Qwen3.5): `layer_types` (or every full_attention_interval-th layer) says which
// layers attend; the others are Gated DeltaNet layers with a fixed-size state.
void count_hybrid_layers(ModelSummary& s, const nlohmann::json& t) {
  auto get = [&](const char* k) -> std::uint64_t {
    auto it = t.find(k);
    return it != t.end() && it->is_number_integer() && it->get<std::int64_t>() > 0 ? it->get<std::uint64_t>() : 0;
  };
  const std::uint64_t vh = get("linear_num_value_heads"), kh = get("linear_num_key_heads"),
                      kd = get("linear_key_head_dim"), vd = get("linear_value_head_dim"),
                      kernel = get("linear_conv_kernel_dim");
  if (vh == 0 || kd == 0 || vd == 0) return;
  std::uint64_t full = 0;
  if (auto lt = t.find("layer_types"); lt != t.end() && lt->is_array()) {
    // Qwen3.8 Flash Next's sparse attention layers (indexed_attention) keep keys for every position too.
    for (const auto& x : *lt) full += x == "full_attention" || x == "indexed_attention" ? 1 : 0;
  } else if (const auto every = get("full_attention_interval"); every > 0) {
    full = s.layers / every;
  } else {
    return;
  }
  s.attention_layers = full;
  s.recurrent_layers = s.layers - full;
  const std::uint64_t channels = 2 * kh * kd + vh * vd;
  s.recurrent_bytes = (s.layers - full) * 4 * (vh * kd * vd + (kernel > 0 ? kernel - 1 : 3) * channels);
}

// Nemotron-H configs: a plan of single-block layers (`layers_block_type`, or the legacy
// `hybrid_override_pattern`: M Mamba-2, * attention, - MLP, E experts); num_hidden_layers may be absent.
void count_nemotron_layers(ModelSummary& s, const nlohmann::json& t) {
  std::vector<char> plan;
  if (auto lt = t.find("layers_block_type"); lt != t.end() && lt->is_array()) {
    for (const auto& x : *lt) {
      const std::string k = x.is_string() ? x.get<std::string>() : "";
      plan.push_back(k == "mamba" || k == "linear_attention"     ? 'M'
                     : k == "attention" || k == "full_attention" ? '*'
                     : k == "moe"                                ? 'E'
                                                                 : '-');
    }
  } else if (auto p = t.find("hybrid_override_pattern"); p != t.end() && p->is_string()) {
    for (const char c : p->get<std::string>()) plan.push_back(c);
  } else {
    return;
  }
  auto get = [&](const char* k, std::uint64_t fallback) -> std::uint64_t {
    auto it = t.find(k);
    return it != t.end() && it->is_number_integer() && it->get<std::int64_t>() > 0 ? it->get<std::uint64_t>()
                                                                                   : fallback;
  };
  const auto count = [&](char c) { return static_cast<std::uint64_t>(std::count(plan.begin(), plan.end(), c)); };
  s.layers = plan.size();
  if (s.head_dim == 0) s.head_dim = 128;  // transformers' default for nemotron_h, not hidden / heads
  s.attention_layers = count('*');
  s.recurrent_layers = count('M');
  const std::uint64_t heads = get("mamba_num_heads", 0), dim = get("mamba_head_dim", 0),
                      state = get("ssm_state_size", 0), groups = get("n_groups", get("mamba_n_groups", 8)),
                      kernel = get("conv_kernel", get("mamba_d_conv", 4));  // transformers' defaults and legacy names
  const std::uint64_t inner = heads * dim, channels = inner + 2 * groups * state;
  s.recurrent_bytes = s.recurrent_layers * 4 * (inner * state + (kernel - 1) * channels);
  if (const std::uint64_t moe = count('E'); moe > 0) {
    const std::uint64_t experts = get("n_routed_experts", 0), top = get("num_experts_per_tok", 0),
                        width = get("moe_latent_size", s.hidden), ffn = get("moe_intermediate_size", 0);
    const std::uint64_t per_expert = 2 * ffn * width;  // up and down (squared-ReLU experts)
    s.routed_parameters = moe * experts * per_expert;
    s.active_routed_parameters = moe * top * per_expert;
    s.experts = fmt::format(
        "{} routed (top {} per token) + {} shared, in {} layers; routed-expert parameters {}, "
        "active {} per token",
        experts, top, get("n_shared_experts", 1), moe, moe * experts * per_expert, moe * top * per_expert);
  }
}

// GLM-5.3-Flash configs (glm5_next): Kimi delta attention layers (one [d, d] state a head and a conv window over
// q|k|v) and latent-attention layers, each position held as float32 host rows: the kv_lora_rank latent, and for a
// layer with its own indexer the index key, pool gates, pool key and the chosen pools (blocks/mla.h); experts on
// the sparse layers (mlp_layer_types, else all but the first first_k_dense_replace).
// DeepSeek-V4 configs (deepseek_v4): every layer a compressed attention (blocks/compressed_attention.h), held as
// float32 host rows: per token, each compressed layer's entries compacted to ceil((head_dim + index_head_dim for a
// compressed sparse layer) / rate) floats; per stream, each layer's recent rows (what a call reads before its first
// row plus a 512-row prefill chunk: the window key, and the compressor's inputs and newest entry).
void count_deepseek_v4_layers(ModelSummary& s, const nlohmann::json& t) {
  auto get = [&](const nlohmann::json& o, const char* k, std::uint64_t fallback) -> std::uint64_t {
    auto it = o.find(k);
    return it != o.end() && it->is_number_integer() && it->get<std::int64_t>() >= 0 ? it->get<std::uint64_t>()
                                                                                    : fallback;
  };
  const auto cr = t.find("compress_rates");
  const nlohmann::json& rates = cr != t.end() && cr->is_object() ? *cr : t;
  const std::uint64_t csa = std::max<std::uint64_t>(get(rates, "compressed_sparse_attention", 4), 1),
                      hca = std::max<std::uint64_t>(get(rates, "heavily_compressed_attention", 128), 1);
  const std::uint64_t d = get(t, "head_dim", 512), id = get(t, "index_head_dim", 128),
                      window = get(t, "sliding_window", 128), chunk = 512;
  const auto lt = t.find("layer_types"), ratios = t.find("compress_ratios");
  s.kv_bytes_per_token = 0;
  s.window_bytes = 0;
  for (std::uint64_t i = 0; i < s.layers; ++i) {
    std::uint64_t rate = i < 2 || (i - 2) % 2 == 0 ? hca : csa;  // transformers' default plan
    if (lt != t.end() && lt->is_array() && i < lt->size())
      rate = (*lt)[i] == "sliding_attention" ? 0 : (*lt)[i] == "compressed_sparse_attention" ? csa : hca;
    else if (ratios != t.end() && ratios->is_array() && i < ratios->size() && (*ratios)[i].is_number_integer())
      rate = (*ratios)[i].get<std::uint64_t>();
    const bool sparse = rate == csa && rate != 0;
    std::uint64_t width = d, reach = window > 0 ? window - 1 : 0;
    if (rate > 0) {
      const std::uint64_t entry = d + (sparse ? id : 0), inputs = sparse ? 2 * d : d;
      width += 2 * inputs + d + (sparse ? 5 * id : 0);
      reach = std::max({reach, sparse ? 2 * rate - 1 : rate - 1, rate});
      s.kv_bytes_per_token += 4 * ((entry + rate - 1) / rate);
    }
    s.window_bytes += 4 * (reach + chunk) * width;
  }
  s.attention_layers = s.layers;
  s.kv_detail = fmt::format("float32 compressed entries; + {} per stream of recent rows", format_bytes(s.window_bytes));
  const std::uint64_t experts = get(t, "n_routed_experts", 0), top = get(t, "num_experts_per_tok", 0);
  const std::uint64_t per_expert = 3 * get(t, "moe_intermediate_size", 0) * s.hidden;  // w1, w3 and w2
  s.routed_parameters = s.layers * experts * per_expert;
  s.active_routed_parameters = s.layers * top * per_expert;
  s.experts = fmt::format(
      "{} routed (top {} per token) + {} shared, in {} layers; routed-expert parameters {}, active {} per token",
      experts, top, get(t, "n_shared_experts", 1), s.layers, s.routed_parameters, s.active_routed_parameters);
}

void count_glm5_next_layers(ModelSummary& s, const nlohmann::json& t) {
  auto get = [&](const nlohmann::json& o, const char* k, std::uint64_t fallback) -> std::uint64_t {
    auto it = o.find(k);
    return it != o.end() && it->is_number_integer() && it->get<std::int64_t>() >= 0 ? it->get<std::uint64_t>()
                                                                                    : fallback;
  };
  std::vector<bool> indexed, shared, sparse;
  const auto lt = t.find("layer_types"), it = t.find("indexer_types"), mt = t.find("mlp_layer_types");
  const auto pat = t.find("index_topk_pattern");
  for (std::uint64_t i = 0; i < s.layers; ++i) {
    const bool idx = lt != t.end() && lt->is_array() && i < lt->size() ? (*lt)[i] != "linear_attention" : i % 4 == 3;
    bool sh = it != t.end() && it->is_array() && i < it->size() && (*it)[i] == "shared";
    if (pat != t.end() && pat->is_string() && i < pat->get<std::string>().size())
      sh = pat->get<std::string>()[i] == 'S';
    indexed.push_back(idx);
    shared.push_back(idx && sh);
    sparse.push_back(mt != t.end() && mt->is_array() && i < mt->size() ? (*mt)[i] == "sparse"
                                                                       : i >= get(t, "first_k_dense_replace", 3));
  }
  const auto la = t.find("linear_attn_config");
  const nlohmann::json& lin = la != t.end() && la->is_object() ? *la : t;
  const std::uint64_t heads = get(lin, la != t.end() ? "num_heads" : "linear_num_heads", 64),
                      dim = get(lin, la != t.end() ? "head_dim" : "linear_head_dim", 128),
                      kernel = get(lin, la != t.end() ? "short_conv_kernel_size" : "linear_conv_kernel_dim", 4);
  const std::uint64_t rank = get(t, "kv_lora_rank", 512), id = get(t, "index_head_dim", 128),
                      pools = get(t, "index_topk", 2048) / std::max<std::uint64_t>(get(t, "index_kpool", 16), 1);
  s.head_dim = get(t, "qk_nope_head_dim", 256) + get(t, "qk_rope_head_dim", 0);
  s.attention_layers = static_cast<std::uint64_t>(std::count(indexed.begin(), indexed.end(), true));
  s.recurrent_layers = s.layers - s.attention_layers;
  s.recurrent_bytes = s.recurrent_layers * 4 * (heads * dim * dim + (kernel - 1) * 3 * heads * dim);
  s.kv_bytes_per_token = 0;
  for (std::uint64_t i = 0; i < s.layers; ++i)
    if (indexed[i]) s.kv_bytes_per_token += 4 * (rank + (shared[i] ? 0 : 3 * id + pools));
  s.kv_detail =
      fmt::format("float32 latent rows with the indexer's; {} of {} layers attend", s.attention_layers, s.layers);
  const std::uint64_t moe = static_cast<std::uint64_t>(std::count(sparse.begin(), sparse.end(), true));
  if (moe > 0) {
    const std::uint64_t experts = get(t, "n_routed_experts", 0), top = get(t, "num_experts_per_tok", 0);
    const std::uint64_t per_expert = 3 * get(t, "moe_intermediate_size", 0) * s.hidden;  // gate, up and down
    s.routed_parameters = moe * experts * per_expert;
    s.active_routed_parameters = moe * top * per_expert;
    s.experts = fmt::format(
        "{} routed (top {} per token) + {} shared, in {} layers; routed-expert parameters {}, active {} per token",
        experts, top, get(t, "n_shared_experts", 1), moe, s.routed_parameters, s.active_routed_parameters);
  }
}

// Gemma 4 configs: sliding and full attention layers of their own key/value shapes (global_head_dim,
// num_global_key_value_heads or per_layer_config for the full ones), and experts beside every layer's MLP.
void count_gemma4_layers(ModelSummary& s, const nlohmann::json& t) {
  auto get = [&](const nlohmann::json& o, const char* k, std::uint64_t fallback) -> std::uint64_t {
    auto it = o.find(k);
    return it != o.end() && it->is_number_integer() && it->get<std::int64_t>() > 0 ? it->get<std::uint64_t>()
                                                                                   : fallback;
  };
  std::uint64_t full = 0;
  if (auto lt = t.find("layer_types"); lt != t.end() && lt->is_array())
    for (const auto& x : *lt) full += x.is_string() && x.get<std::string>() == "full_attention" ? 1 : 0;
  else
    full = s.layers / 6;
  std::uint64_t ghd = get(t, "global_head_dim", 512), gkv = s.kv_heads;
  if (auto v = t.find("attention_k_eq_v"); v != t.end() && v->is_boolean() && v->get<bool>())
    gkv = get(t, "num_global_key_value_heads", s.kv_heads);
  if (auto pl = t.find("per_layer_config"); pl != t.end() && pl->is_object())
    for (const auto& [k, o] : pl->items())
      if (o.is_object()) ghd = get(o, "head_dim", ghd), gkv = get(o, "num_key_value_heads", gkv);
  s.attention_layers = s.layers;
  s.kv_bytes_per_token = 2 * 2 * full * gkv * ghd;  // K, V; f16
  s.window_layers = s.layers - full;
  s.window = get(t, "sliding_window", 512);
  s.window_bytes = 2 * 2 * s.window_layers * s.kv_heads * s.head_dim * s.window;
  if (auto moe = t.find("enable_moe_block"); moe != t.end() && moe->is_boolean() && moe->get<bool>()) {
    const std::uint64_t experts = get(t, "num_experts", 0), top = get(t, "top_k_experts", 0),
                        ffn = get(t, "moe_intermediate_size", 0);
    const std::uint64_t per_expert = 3 * ffn * s.hidden;  // gate, up and down
    s.routed_parameters = s.layers * experts * per_expert;
    s.active_routed_parameters = s.layers * top * per_expert;
    s.experts = fmt::format(
        "{} routed (top {} per token) beside each layer's MLP, in {} layers; routed-expert "
        "parameters {}, active {} per token",
        experts, top, s.layers, s.routed_parameters, s.active_routed_parameters);
  }
}

// llama.cpp's name for general.file_type (llama.h's LLAMA_FTYPE_MOSTLY_*), or "" for a value it does not name.
std::string_view llama_file_type_name(std::uint64_t t) {
  static constexpr std::array<std::string_view, 42> kNames{
      "F32",    "F16",     "Q4_0",   "Q4_1",   "",       "",          "",       "Q8_0",  "Q5_0",    "Q5_1",   "Q2_K",
      "Q3_K_S", "Q3_K_M",  "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S",    "Q5_K_M", "Q6_K",  "IQ2_XXS", "IQ2_XS", "Q2_K_S",
      "IQ3_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S",  "IQ3_M",     "IQ2_S",  "IQ2_M", "IQ4_XS",  "IQ1_M",  "BF16",
      "",       "",        "",       "TQ1_0",  "TQ2_0",  "MXFP4_MOE", "NVFP4",  "Q1_0",  "Q2_0"};
  return t < kNames.size() ? kNames[t] : std::string_view();
}

// Hybrid GGUFs (llama.cpp's qwen35, qwen3next, ...): block_count closes with the MTP head's nextn_predict_layers,
// attention.recurrent_layers marks the Gated DeltaNet layers, whose state the ssm.* keys size.
void count_gguf_hybrid_layers(ModelSummary& s, const GgufHeader& h, const std::string& a) {
  const std::uint64_t nextn = h.get_uint(a + "nextn_predict_layers").value_or(0);
  if (nextn > 0 && nextn < s.layers) {
    s.layers -= nextn;
    for (const auto& t : h.tensors) {
      if (!t.name.starts_with("blk.")) continue;
      const auto dot = t.name.find('.', 4);
      const std::string index = t.name.substr(4, dot == std::string::npos ? std::string::npos : dot - 4);
      if (!index.empty() && index.size() <= 9 && index.find_first_not_of("0123456789") == std::string::npos &&
          std::stoull(index) >= s.layers)
        s.mtp_parameters += t.element_count;
    }
  }
  const auto* rec = h.get_array(a + "attention.recurrent_layers");
  if (rec == nullptr || rec->element_type != GgufValueType::BOOL) return;
  std::uint64_t recurrent = 0;
  for (std::size_t i = 0; i < rec->items.size() && i < s.layers; ++i)
    recurrent += std::get<bool>(rec->items[i].v) ? 1 : 0;
  const std::uint64_t kh = h.get_uint(a + "ssm.group_count").value_or(0),
                      vh = h.get_uint(a + "ssm.time_step_rank").value_or(0),
                      kd = h.get_uint(a + "ssm.state_size").value_or(0),
                      inner = h.get_uint(a + "ssm.inner_size").value_or(0),
                      kernel = h.get_uint(a + "ssm.conv_kernel").value_or(4);
  if (recurrent == 0 || vh == 0 || kd == 0 || inner % vh != 0 || kernel == 0) return;
  s.recurrent_layers = recurrent;
  s.attention_layers = s.layers - recurrent;
  const std::uint64_t channels = 2 * kh * kd + inner;
  s.recurrent_bytes = recurrent * 4 * (vh * kd * (inner / vh) + (kernel - 1) * channels);
}

ModelSummary summarize_gguf(const std::string& path) {
  GgufFile f(path);
  const auto& h = f.header();
  ModelSummary s;
  s.path = path;
  s.format = "gguf";
  s.architecture = h.get_string("general.architecture").value_or("");
  if (s.architecture.empty()) throw CheckpointError(path, "GGUF has no general.architecture");
  s.name = h.get_string("general.name").value_or("");
  const std::string a = s.architecture + ".";
  s.layers = h.get_uint(a + "block_count").value_or(0);
  s.hidden = h.get_uint(a + "embedding_length").value_or(0);
  s.ffn = h.get_uint(a + "feed_forward_length").value_or(0);
  s.heads = h.get_uint(a + "attention.head_count").value_or(0);
  s.kv_heads = h.get_uint(a + "attention.head_count_kv").value_or(s.heads);
  s.head_dim = h.get_uint(a + "attention.key_length").value_or(0);
  s.context = h.get_uint(a + "context_length").value_or(0);
  s.vocab = h.get_uint(a + "vocab_size").value_or(0);
  if (s.vocab == 0)
    if (const auto* tokens = h.get_array("tokenizer.ggml.tokens")) s.vocab = tokens->items.size();
  count_gguf_hybrid_layers(s, h, a);
  finish_kv(s);
  if (auto model = h.get_string("tokenizer.ggml.model")) s.tokenizer = *model + " (GGUF)";
  s.has_chat_template = h.get("tokenizer.chat_template") != nullptr;

  std::map<std::string, std::uint64_t> bytes_by_type;
  for (const auto& t : h.tensors) {
    const std::string type(ggml_type_name(t.type));
    ++s.tensor_types[type];
    bytes_by_type[type] += t.byte_size;
    s.weight_bytes += t.byte_size;
    s.parameters += t.element_count;
  }
  s.tensor_count = h.tensors.size();
  // The quantization is the type of the most weight bytes among the block-quantized types.
  std::uint64_t best = 0;
  for (const auto& [type, bytes] : bytes_by_type)
    if (bytes > best && type != "F32") best = bytes, s.quantization = type;
  if (s.quantization.empty()) s.quantization = "F32";
  // llama-quantize's mixes (Q4_K_M, ...) store several block types, and rows that are not whole blocks of the
  // mix's type fall back to others: the file type names the mix.
  if (const auto ft = h.get_uint("general.file_type")) {
    const auto name = llama_file_type_name(*ft);
    if (!name.empty() && name != s.quantization) s.quantization += fmt::format(" (file type {})", name);
  }
  return s;
}

ModelSummary summarize_hf(const std::string& dir) {
  HfCheckpoint ck(dir);
  const auto& c = ck.config();
  ModelSummary s;
  s.path = dir;
  s.format = "safetensors";
  // Multimodal configs (e.g. Qwen3.5) keep the language model's numbers under text_config.
  const nlohmann::json& t = c.contains("text_config") && c["text_config"].is_object() ? c["text_config"] : c;
  auto num = [&](std::initializer_list<const char*> keys) -> std::uint64_t {
    for (const char* k : keys) {
      for (const auto* src : {&t, &c}) {
        auto it = src->find(k);
        if (it != src->end() && it->is_number_unsigned()) return it->get<std::uint64_t>();
        if (it != src->end() && it->is_number_integer() && it->get<std::int64_t>() >= 0)
          return static_cast<std::uint64_t>(it->get<std::int64_t>());
      }
    }
    return 0;
  };
  if (auto mt = c.find("model_type"); mt != c.end() && mt->is_string()) s.architecture = mt->get<std::string>();
  if (auto ar = c.find("architectures"); ar != c.end() && ar->is_array() && !ar->empty() && (*ar)[0].is_string())
    s.name = (*ar)[0].get<std::string>();
  s.layers = num({"num_hidden_layers", "n_layers", "num_layers"});
  s.hidden = num({"hidden_size", "d_model"});
  s.ffn = num({"intermediate_size"});
  s.heads = num({"num_attention_heads", "n_heads"});
  s.kv_heads = num({"num_key_value_heads"});
  if (s.kv_heads == 0) s.kv_heads = s.heads;
  s.head_dim = num({"head_dim"});
  s.vocab = num({"vocab_size"});
  s.context = num({"max_position_embeddings", "max_seq_len", "seq_length"});
  count_hybrid_layers(s, t);
  if (s.architecture == "nemotron_h") count_nemotron_layers(s, t);
  finish_kv(s);
  if (s.architecture == "gemma4" || s.architecture == "gemma4_text") count_gemma4_layers(s, t);
  if (s.architecture == "glm5_next" || s.architecture == "glm5_next_text") count_glm5_next_layers(s, t);
  if (s.architecture == "deepseek_v4") count_deepseek_v4_layers(s, t);
  if (fs::exists(fs::path(dir) / "tokenizer.json")) s.tokenizer = "tokenizer.json";
  s.has_chat_template = fs::exists(fs::path(dir) / "chat_template.jinja");
  if (!s.has_chat_template && fs::exists(fs::path(dir) / "tokenizer_config.json")) {
    try {
      const auto tc = read_json_file((fs::path(dir) / "tokenizer_config.json").string());
      s.has_chat_template = tc.is_object() && tc.contains("chat_template");
    } catch (const CheckpointError&) {  // a broken tokenizer_config.json is the tokenizer's error to report, not info's
    }
  }

  std::optional<AffineQuantConfig> q;
  try {
    q = parse_affine_quant_config(c);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(dir + "/config.json", e.what());
  }
  // Parameters: a quantized weight's packed codes count as the values they hold; its scales and biases are not
  // parameters.
  const auto quantized = [&](const std::string& module) {
    const auto w = ck.find(module + ".weight");
    return q && w.tensor != nullptr && w.tensor->dtype == StDType::U32 && ck.find(module + ".scales").tensor != nullptr;
  };
  // DeepSeek-style MTP layers (GLM-5.3) follow the body as layers.{num_hidden_layers}.*.
  const std::string mtp_layer = s.layers > 0 ? "layers." + std::to_string(s.layers) + "." : std::string();
  for (const auto& loc : ck.all_tensors()) {
    const StTensor& tensor = *loc.tensor;
    ++s.tensor_types[std::string(st_dtype_name(tensor.dtype))];
    s.weight_bytes += tensor.byte_size();
    const auto dot = tensor.name.rfind('.');
    const std::string module = dot == std::string::npos ? tensor.name : tensor.name.substr(0, dot);
    const std::string_view leaf =
        dot == std::string::npos ? std::string_view{} : std::string_view(tensor.name).substr(dot);
    std::uint64_t n = tensor.element_count();
    if ((leaf == ".scales" || leaf == ".biases") && quantized(module)) continue;
    if (leaf == ".weight_scale_inv") continue;  // block FP8's scales are not parameters either
    if (leaf == ".weight" && quantized(module))
      if (const auto spec = q->spec_for(module); spec && spec->bits > 0)
        n = n * 32 / static_cast<std::uint64_t>(spec->bits);
    s.parameters += n;
    if (tensor.name.starts_with("mtp.") ||
        (!mtp_layer.empty() && (tensor.name.starts_with("model." + mtp_layer) ||
                                tensor.name.starts_with("model.language_model." + mtp_layer))))
      s.mtp_parameters += n;
    if (tensor.name.starts_with("model.visual.")) s.vision_parameters += n;
  }
  s.tensor_count = ck.all_tensors().size();

  if (q) {
    s.quantization = fmt::format("MLX {} {}-bit, group {}", q->mode, q->defaults.bits, q->defaults.group_size);
    for (const auto& [path, spec] : q->overrides)
      s.quantization_overrides.push_back(spec ? fmt::format("{}: {}-bit g{}", path, spec->bits, spec->group_size)
                                              : fmt::format("{}: not quantized", path));
  } else if (auto qc = c.find("quantization_config");
             qc != c.end() && qc->is_object() && qc->contains("quant_method")) {
    const auto bs = qc->find("weight_block_size");
    if ((*qc)["quant_method"] == "fp8" && bs != qc->end() && bs->is_array() && bs->size() == 2)
      s.quantization =
          fmt::format("FP8 E4M3 in {}x{} blocks (weight_scale_inv), read as float32", (*bs)[0].dump(), (*bs)[1].dump());
    else
      s.quantization = fmt::format("{} (not read yet)", (*qc)["quant_method"].dump());
  } else {
    std::uint64_t best = 0;
    for (const auto& [type, n] : s.tensor_types)
      if (n > best) best = n, s.quantization = type;
  }
  return s;
}

bool starts_with_gguf_magic(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char magic[4] = {};
  const bool ok = std::fread(magic, 1, 4, f) == 4 && std::string_view(magic, 4) == "GGUF";
  std::fclose(f);
  return ok;
}

}  // namespace

ModelSummary summarize_model(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return summarize_hf(path);
  if (!fs::exists(path, ec)) throw CheckpointError(path, "no such file or directory");
  if (path.ends_with(".gguf") || starts_with_gguf_magic(path)) return summarize_gguf(path);
  throw CheckpointError(path, "not a GGUF file or a checkpoint directory (config.json + safetensors)");
}

std::string format_bytes(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / (1ull << 20));
  if (bytes >= (1ull << 10)) return fmt::format("{:.1f} KiB", b / (1ull << 10));
  return fmt::format("{} B", bytes);
}

std::string format_summary(const ModelSummary& s) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) { out += fmt::format("{:<16}{}\n", key, value); };
  line("path", s.path);
  line("format", s.format);
  line("architecture", s.architecture);
  if (!s.serving.empty()) line("family", s.serving);
  if (!s.name.empty()) line("name", s.name);
  line("layers", std::to_string(s.layers));
  line("hidden size", std::to_string(s.hidden));
  line("ffn size", std::to_string(s.ffn));
  line("heads", fmt::format("{} / {} kv", s.heads, s.kv_heads));
  line("head dim", std::to_string(s.head_dim));
  line("vocab", std::to_string(s.vocab));
  line("context", std::to_string(s.context));
  line("quantization", s.quantization);
  for (const auto& o : s.quantization_overrides) line("  override", o);
  std::string types;
  for (const auto& [t, n] : s.tensor_types) types += fmt::format("{}{} {}", types.empty() ? "" : ", ", t, n);
  line("tensors", fmt::format("{} ({})", s.tensor_count, types));
  line("weights", fmt::format("{} ({} bytes)", format_bytes(s.weight_bytes), s.weight_bytes));
  if (s.parameters > 0) {
    std::string p = std::to_string(s.parameters);
    if (s.mtp_parameters > 0) p += fmt::format(" ({} of them the MTP head's, run only to draft)", s.mtp_parameters);
    if (s.routed_parameters > 0 && s.routed_parameters + s.mtp_parameters <= s.parameters)
      p += fmt::format("; active per token {} (routed experts: top-k of each layer's)",
                       s.parameters - s.mtp_parameters - s.routed_parameters + s.active_routed_parameters);
    line("parameters", p);
  }
  if (s.vision_parameters > 0)
    line("vision tower", fmt::format("{} parameters (model.visual.*; images with serve --vision, docs/vision.md)",
                                     s.vision_parameters));
  line("tokenizer", s.tokenizer.empty() ? "none found" : s.tokenizer);
  line("chat template", s.has_chat_template ? "yes" : "no");
  if (s.recurrent_bytes > 0) {
    line("kv cache",
         fmt::format("{} per token ({})", format_bytes(s.kv_bytes_per_token),
                     s.kv_detail.empty() ? fmt::format("f16; {} of {} layers attend", s.attention_layers, s.layers)
                                         : s.kv_detail));
    line("recurrent", fmt::format("{} per stream (float32; {} linear-attention layers)",
                                  format_bytes(s.recurrent_bytes), s.recurrent_layers));
  } else if (s.window_layers > 0) {
    line("kv cache", fmt::format("{} per token (f16; the {} full-attention layers) + {} per stream (the {} "
                                 "sliding-window layers' last {} positions)",
                                 format_bytes(s.kv_bytes_per_token), s.layers - s.window_layers,
                                 format_bytes(s.window_bytes), s.window_layers, s.window));
  } else if (!s.kv_detail.empty()) {
    line("kv cache", fmt::format("{} per token ({})", format_bytes(s.kv_bytes_per_token), s.kv_detail));
  } else {
    line("kv cache", fmt::format("{} per token (f16)", format_bytes(s.kv_bytes_per_token)));
  }
  if (!s.experts.empty()) line("experts", s.experts);
  line("memory",
       fmt::format("{} for weights + a full {}-token KV cache{}", format_bytes(s.memory_estimate()), s.context,
                   s.recurrent_bytes > 0 ? " + recurrent state"
                   : s.window_layers > 0 ? " (full layers) + the sliding windows"
                   : s.window_bytes > 0  ? " + the recent rows"
                                         : ""));
  return out;
}

}  // namespace tf
