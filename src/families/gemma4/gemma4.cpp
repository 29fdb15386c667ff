// The gemma4 family: its config reader and its layer plan over the shared blocks (families-and-formats §1.1-1.3,
// §1.5, §2.5; transformers' modeling_gemma4.py). A layer, in the blocks' terms:
//   x += post_attention_layernorm(attention(input_layernorm(x)))          sliding or full, scale 1
//   x += post_feedforward_layernorm(ffn(pre_feedforward_layernorm(x), x))   gelu-tanh MLP, beside experts
//   x *= layer_scalar
// Key layouts: model.language_model.* (Gemma4ForConditionalGeneration: vision and audio towers skipped) and
// model.* (Gemma4ForCausalLM); the output projection is the embedding (tied).
#include "families/gemma4/gemma4.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "blocks/weight_source.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/config_reader.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/decoder_model.h"

namespace tf {
namespace {

struct LayerShape {
  std::int64_t head_dim = 0, kv_heads = 0;
  float rope_theta = 10000.0f;
  double rotary = 1.0;  // proportional RoPE: the share of the head's pairs that turn (1: default RoPE)
};

struct Gemma4Config {
  std::int64_t vocab = 0, hidden = 0, ffn = 0, heads = 0, context = 0, window = 0;
  float eps = 1e-6f, softcap = 0.0f;
  bool k_eq_v = false, tied = true;
  std::vector<bool> full;  // per layer: full attention, else sliding
  LayerShape sliding, global;
  std::int64_t experts = 0, top_k = 0, expert_ffn = 0;  // experts 0: no expert block
};

// A layer type's RoPE: "default" over the whole head, or "proportional" (the first pairs turn, at frequencies of
// the whole head's dimension).
void read_rope(const ConfigReader& r, const nlohmann::json& params, const char* type, LayerShape& s) {
  if (!params.is_object()) return;
  const auto it = params.find(type);
  if (it == params.end() || it->is_null()) return;
  if (!it->is_object()) r.fail(std::string("'rope_parameters.") + type + "' must be an object");
  const std::string kind = it->value("rope_type", std::string("default"));
  s.rope_theta = static_cast<float>(r.number(*it, "rope_theta", s.rope_theta));
  if (kind == "proportional")
    s.rotary = r.number(*it, "partial_rotary_factor", 1.0);
  else if (kind != "default")
    r.fail("rope type '" + kind + "' is not read for gemma4 (default and proportional are)");
  if (!(s.rotary > 0.0 && s.rotary <= 1.0)) r.fail("'partial_rotary_factor' must be in (0, 1]");
}

Gemma4Config read_config(const nlohmann::json& top, const std::string& path) {
  const nlohmann::json& text = text_config(top);
  const ConfigReader r(text, path + "/config.json");
  Gemma4Config c;
  c.vocab = r.integer("vocab_size");
  c.hidden = r.integer("hidden_size");
  c.ffn = r.integer("intermediate_size");
  c.heads = r.integer("num_attention_heads");
  c.context = r.integer("max_position_embeddings", 131072);
  c.eps = static_cast<float>(r.number("rms_norm_eps", 1e-6));
  c.softcap = static_cast<float>(r.number("final_logit_softcapping", 0.0));
  c.k_eq_v = r.flag("attention_k_eq_v", false);
  c.tied = r.flag("tie_word_embeddings", top.value("tie_word_embeddings", true));
  if (!c.tied) r.fail("'tie_word_embeddings' false is not read yet (Gemma 4 ties its output to the embedding)");
  if (const auto act = r.text("hidden_activation", "gelu_pytorch_tanh"); act != "gelu_pytorch_tanh")
    r.fail("hidden_activation '" + act + "' is not read (gelu_pytorch_tanh is)");
  if (r.flag("attention_bias", false)) r.fail("'attention_bias' true is not read yet");
  if (r.text("use_bidirectional_attention", "") == "all") r.fail("bidirectional attention is not served");
  if (r.count("hidden_size_per_layer_input", 0) > 0)
    r.fail("per-layer input embeddings (hidden_size_per_layer_input: Gemma 4 E2B/E4B) are not read yet");
  if (r.count("num_kv_shared_layers", 0) > 0) r.fail("KV sharing (num_kv_shared_layers) is not read yet");
  const std::int64_t layers = r.integer("num_hidden_layers");
  if (auto lt = text.find("layer_types"); lt != text.end() && !lt->is_null()) {
    if (!lt->is_array() || static_cast<std::int64_t>(lt->size()) != layers)
      r.fail("'layer_types' must list num_hidden_layers (" + std::to_string(layers) + ") entries");
    for (const auto& t : *lt) {
      const std::string s = t.is_string() ? t.get<std::string>() : t.dump();
      if (s != "full_attention" && s != "sliding_attention")
        r.fail("'layer_types' entries must be full_attention or sliding_attention, not " + s);
      c.full.push_back(s == "full_attention");
    }
  } else {
    for (std::int64_t i = 0; i < layers; ++i) c.full.push_back((i + 1) % 6 == 0);  // transformers' default, 5:1
  }
  c.full.back() = true;  // transformers forces the last layer to full attention
  c.window = r.integer("sliding_window", 512);
  c.sliding.head_dim = r.integer("head_dim", 256);
  c.sliding.kv_heads = r.integer("num_key_value_heads", c.heads);
  // Full layers' shape: per_layer_config (transformers >= 5.25 writes it) or global_head_dim and, with k_eq_v,
  // num_global_key_value_heads (the released configs).
  c.global.head_dim = r.integer("global_head_dim", 512);
  c.global.kv_heads = c.k_eq_v ? r.integer("num_global_key_value_heads", c.sliding.kv_heads) : c.sliding.kv_heads;
  if (auto pl = text.find("per_layer_config"); pl != text.end() && pl->is_object())
    for (std::size_t i = 0; i < c.full.size(); ++i) {
      const auto one = pl->find(std::to_string(i));
      if (one == pl->end() || !one->is_object()) continue;
      if (!c.full[i]) r.fail("'per_layer_config' gives a shape to sliding layer " + std::to_string(i));
      const ConfigReader lr(*one, path + "/config.json");
      c.global.head_dim = lr.integer("head_dim", c.global.head_dim);
      c.global.kv_heads = lr.integer("num_key_value_heads", c.global.kv_heads);
    }
  c.global.rope_theta = 1e6f;
  c.global.rotary = 0.25;  // transformers' defaults for full layers
  if (auto rp = text.find("rope_parameters"); rp != text.end() && !rp->is_null()) {
    read_rope(r, *rp, "sliding_attention", c.sliding);
    read_rope(r, *rp, "full_attention", c.global);
  }
  for (const LayerShape* s : {&c.sliding, &c.global})
    if (c.heads % s->kv_heads != 0) r.fail("num_attention_heads must be a multiple of every layer's key/value heads");
  if (r.flag("enable_moe_block", false)) {
    c.experts = r.integer("num_experts");
    c.top_k = r.integer("top_k_experts");
    c.expert_ffn = r.integer("moe_intermediate_size");
    if (c.top_k > c.experts) r.fail("top_k_experts must be at most num_experts");
  }
  return c;
}

AttentionConfig attention_config(const Gemma4Config& c, const LayerShape& s, bool full) {
  AttentionConfig ac;
  ac.hidden = c.hidden;
  ac.spec = attention_spec(c.heads, s.kv_heads, s.head_dim);
  ac.spec.scale = 1.0f;  // q and k are RMS-normed: no 1/sqrt(d)
  ac.spec.window = full ? 0 : static_cast<int>(c.window);
  ac.rope.base = s.rope_theta;
  if (s.rotary < 1.0) {  // proportional: pairs past the share do not turn (an infinite period: angle 0)
    const auto pairs = static_cast<std::size_t>(s.head_dim / 2);
    const auto turning = static_cast<std::size_t>(std::floor(s.rotary * static_cast<double>(s.head_dim) / 2.0));
    ac.rope.freq_factors.assign(pairs, std::numeric_limits<float>::infinity());
    std::fill(ac.rope.freq_factors.begin(), ac.rope.freq_factors.begin() + static_cast<std::ptrdiff_t>(turning), 1.0f);
  }
  ac.qk_norm = true;
  ac.value_norm = true;
  ac.values_from_keys = full && c.k_eq_v;
  ac.norm_eps = c.eps;
  return ac;
}

std::string find_body(const WeightReader& reader, const std::string& path) {
  for (const std::string body : {"model.language_model.", "model.", "language_model.model."})
    if (reader.has(body + "embed_tokens.weight")) return body;
  throw CheckpointError(path,
                        "no embedding found (model.language_model.embed_tokens.weight or model.embed_tokens.weight)");
}

}  // namespace

std::unique_ptr<Model> load_gemma4(const std::string& path, bool is_gguf, Backend& backend) {
  if (is_gguf) throw CheckpointError(path, "gemma4 GGUF files are not read yet: use a safetensors directory");
  if (!backend.has_sliding_window())
    throw CheckpointError(path, "gemma4 needs sliding-window attention and experts, which this " + backend.name() +
                                    " backend does not run yet (they run on --backend mlx without --tp)");
  HfCheckpoint ck(path);
  const Gemma4Config cfg = read_config(ck.config(), path);
  auto reader = open_hf_weights(path);
  const std::string body = find_body(*reader, path);
  WeightSource src(*reader, backend);
  const AttentionConfig sliding = attention_config(cfg, cfg.sliding, false),
                        full = attention_config(cfg, cfg.global, true);

  DecoderWeights w;
  w.rms_eps = cfg.eps;
  w.embed = src.matrix(body + "embed_tokens.weight", cfg.vocab, cfg.hidden);
  w.embed_scale = std::sqrt(static_cast<float>(cfg.hidden));
  w.logit_softcap = cfg.softcap;
  MoeConfig mc;
  mc.hidden = cfg.hidden;
  mc.ffn = cfg.expert_ffn;
  mc.activation = GluActivation::GeluTanh;
  mc.router_name = "router.proj.weight";
  mc.router.score = RouterSpec::Score::Softmax;
  mc.router.experts = static_cast<int>(cfg.experts);
  mc.router.top_k = static_cast<int>(cfg.top_k);
  mc.router.norm_top_k = true;
  int full_slot = 0, window_slot = 0;
  for (std::size_t i = 0; i < cfg.full.size(); ++i) {
    const std::string p = body + "layers." + std::to_string(i) + ".";
    const auto norm = [&](const char* name) { return src.vector(p + name + ".weight", cfg.hidden); };
    DecoderLayer l;
    l.input_norm = norm("input_layernorm");
    l.mixer = AttentionBlock::load(src, p + "self_attn.", cfg.full[i] ? full : sliding);
    l.slot = cfg.full[i] ? full_slot++ : window_slot++;
    l.post_mixer_norm = norm("post_attention_layernorm");
    l.post_norm = norm("pre_feedforward_layernorm");
    SwiGluMlp mlp = SwiGluMlp::load(src, p + "mlp.", cfg.hidden, cfg.ffn);
    mlp.act = GluActivation::GeluTanh;
    if (cfg.experts > 0) {
      MlpBesideExperts f;
      f.eps = cfg.eps;
      f.mlp = std::move(mlp);
      MoeConfig lc = mc;
      lc.router.expert_scale = src.floats(p + "router.per_expert_scale", cfg.experts);
      f.experts = MoeBlock::load(src, p, lc);
      f.mlp_out_norm = norm("post_feedforward_layernorm_1");
      f.experts_in_norm = norm("pre_feedforward_layernorm_2");
      f.experts_out_norm = norm("post_feedforward_layernorm_2");
      // The router's input: RMS-normed without a weight, times its scale vector and 1 / sqrt(hidden), folded.
      std::vector<float> scale = src.floats(p + "router.scale", cfg.hidden);
      for (auto& v : scale) v = v * (1.0f / std::sqrt(static_cast<float>(cfg.hidden)));
      f.router_in_norm = src.values(p + "router.scale / sqrt(hidden)", scale);
      l.ffn = std::move(f);
    } else {
      l.ffn = std::move(mlp);
    }
    l.post_ffn_norm = norm("post_feedforward_layernorm");
    if (src.has(p + "layer_scalar")) l.scalar = src.floats(p + "layer_scalar", 1)[0];
    w.layers.push_back(std::move(l));
  }
  w.final_norm = src.vector(body + "norm.weight", cfg.hidden);
  w.output = w.embed;

  ModelInfo info;
  info.family = "gemma4";
  info.architecture = ck.config().value("model_type", std::string("gemma4"));
  info.vocab = cfg.vocab;
  info.context = cfg.context;
  info.weight_bytes = src.bytes();
  return std::make_unique<DecoderModel>(backend, std::move(info), std::move(w));
}

}  // namespace tf
