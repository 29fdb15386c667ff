// The nemotron_h family: its config reader and its layer plan over the shared blocks (families-and-formats
// §1.4, §1.5, §2.1). Every layer is one pre-norm block added to the residual stream: M a Mamba-2 mixer, * an
// attention mixer without RoPE, - a squared-ReLU MLP, E experts. Key layouts:
//   Hugging Face:   backbone.embeddings.weight, backbone.layers.N.{norm,mixer.*}, backbone.norm_f.weight, lm_head
//   transformers 5: model.embeddings / model.embed_tokens, model.layers.N..., model.norm_f / model.norm
//   mlx-community:  as Hugging Face, experts stacked as mixer.switch_mlp.{fc1,fc2} (blocks/moe.h reads them all)
// The MTP head (Hugging Face only) is `mtp.layers.N.{norm, mixer.*}` sublayers of mtp_layers_block_type, the
// first with the fusion (enorm, hnorm, eh_proj), the last with final_layernorm (blocks/mtp_head.h).
#include "families/nemotron_h/nemotron_h.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "backends/backend.h"
#include "blocks/mtp_head.h"
#include "blocks/weight_source.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/config_reader.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/decoder_model.h"

namespace tf {
namespace {

enum class Block { Mamba, Attention, Mlp, Moe };

struct NemotronHConfig {
  std::int64_t vocab = 0, hidden = 0, ffn = 0, heads = 0, kv_heads = 0, head_dim = 0, context = 0;
  float eps = 1e-5f;
  bool tied = false;
  std::vector<Block> plan;
  std::vector<Block> mtp_plan;  // the MTP head's sublayers (empty: the config declares none)
  Mamba2Spec mamba;
  MoeConfig moe;
};

// One layer kind from a layers_block_type entry (current or legacy names) or a pattern character.
Block block_of(const std::string& s, const ConfigReader& r) {
  if (s == "M" || s == "mamba" || s == "linear_attention") return Block::Mamba;
  if (s == "*" || s == "attention" || s == "full_attention") return Block::Attention;
  if (s == "-" || s == "mlp") return Block::Mlp;
  if (s == "E" || s == "moe") return Block::Moe;
  r.fail("unknown layer kind '" + s + "' (layers_block_type takes mamba, attention, mlp or moe; the pattern M * - E)");
}

// One end of time_step_limit. JSON has no infinity: transformers 5 writes {"__float__": "Infinity"}, other
// writers "Infinity" or "inf" as a string, or null for no limit.
float limit_value(const nlohmann::json& v, const ConfigReader& r) {
  if (v.is_number()) return v.get<float>();
  if (v.is_null()) return std::numeric_limits<float>::infinity();
  const nlohmann::json& text = v.is_object() && v.contains("__float__") ? v["__float__"] : v;
  if (text.is_string()) {
    try {
      return std::stof(text.get<std::string>());
    } catch (const std::exception&) {
    }
  }
  r.fail("'time_step_limit' values must be numbers (or Infinity), not " + v.dump());
}

// A plan from its list key (layers_block_type) or, in older configs, its pattern string; empty when neither.
std::vector<Block> read_plan(const ConfigReader& r, const char* list_key, const char* pattern_key) {
  std::vector<Block> plan;
  const auto& j = r.json();
  if (auto it = j.find(list_key); it != j.end() && !it->is_null()) {
    if (!it->is_array()) r.fail(std::string("'") + list_key + "' must be a list of layer kinds");
    for (const auto& t : *it) plan.push_back(block_of(t.is_string() ? t.get<std::string>() : t.dump(), r));
  } else if (auto p = j.find(pattern_key); p != j.end() && p->is_string()) {
    for (const char c : p->get<std::string>()) plan.push_back(block_of(std::string(1, c), r));
  }
  return plan;
}

NemotronHConfig read_config(const nlohmann::json& j, const std::string& path) {
  const ConfigReader r(j, path + "/config.json");
  NemotronHConfig c;
  c.vocab = r.integer("vocab_size");
  c.hidden = r.integer("hidden_size");
  c.context = r.integer("max_position_embeddings", 4096);
  c.eps = static_cast<float>(r.number("layer_norm_epsilon", 1e-5));
  c.tied = r.flag("tie_word_embeddings", false);
  c.plan = read_plan(r, "layers_block_type", "hybrid_override_pattern");
  if (c.plan.empty()) r.fail("neither 'layers_block_type' nor 'hybrid_override_pattern' gives a layer plan");
  if (auto n = j.find("num_hidden_layers");
      n != j.end() && n->is_number_integer() && n->get<std::int64_t>() != static_cast<std::int64_t>(c.plan.size()))
    r.fail("the layer plan has " + std::to_string(c.plan.size()) + " layers, num_hidden_layers says " +
           std::to_string(n->get<std::int64_t>()));
  // The MTP head: one step of these sublayers (vLLM reads one; a deeper head's later steps go unused).
  if (r.count("num_nextn_predict_layers", 0) > 0) {
    c.mtp_plan = read_plan(r, "mtp_layers_block_type", "mtp_hybrid_override_pattern");
    if (c.mtp_plan.empty()) c.mtp_plan = {Block::Attention, Block::Moe};  // transformers' default, "*E"
    if (std::find(c.mtp_plan.begin(), c.mtp_plan.end(), Block::Attention) == c.mtp_plan.end() ||
        std::find(c.mtp_plan.begin(), c.mtp_plan.end(), Block::Mamba) != c.mtp_plan.end())
      r.fail(
          "'mtp_layers_block_type' must hold an attention layer and no mamba layer (an MTP head's state is "
          "its KV cache)");
  }
  const auto has = [&](Block b) {
    return std::find(c.plan.begin(), c.plan.end(), b) != c.plan.end() ||
           std::find(c.mtp_plan.begin(), c.mtp_plan.end(), b) != c.mtp_plan.end();
  };
  for (const char* key : {"attention_bias", "mlp_bias", "use_bias", "mamba_proj_bias"})
    if (r.flag(key, false))
      r.fail(std::string("'") + key + "' true is not read yet (every released checkpoint has false)");
  if (has(Block::Attention)) {
    c.heads = r.integer("num_attention_heads");
    c.kv_heads = r.integer("num_key_value_heads", c.heads);
    c.head_dim = r.integer("head_dim", 128);  // transformers' default, not hidden / heads
    if (c.heads % c.kv_heads != 0) r.fail("num_attention_heads must be a multiple of num_key_value_heads");
  }
  if (has(Block::Mlp) || has(Block::Moe)) {
    if (const auto act = r.text("mlp_hidden_act", "relu2"); act != "relu2")
      r.fail("mlp_hidden_act '" + act + "' is not read yet (relu2 is)");
  }
  if (has(Block::Mlp)) c.ffn = r.integer("intermediate_size");
  if (has(Block::Mamba)) {
    auto& m = c.mamba;
    m.heads = static_cast<int>(r.integer("mamba_num_heads"));
    m.head_dim = static_cast<int>(r.integer("mamba_head_dim"));
    m.state_size = static_cast<int>(r.integer("ssm_state_size"));
    // transformers' defaults, and the legacy names it still reads (mamba_n_groups, mamba_d_conv, mamba_dt_limit).
    m.groups = static_cast<int>(r.integer("n_groups", r.integer("mamba_n_groups", 8)));
    m.conv_kernel = static_cast<int>(r.integer("conv_kernel", r.integer("mamba_d_conv", 4)));
    if (m.heads % m.groups != 0) r.fail("mamba_num_heads must be a multiple of n_groups");
    if (const auto act = r.text("mamba_hidden_act", "silu"); act != "silu")
      r.fail("mamba_hidden_act '" + act + "' is not read yet (silu is)");
    auto it = j.find("time_step_limit");
    if (it == j.end()) it = j.find("mamba_dt_limit");
    if (it != j.end() && !it->is_null()) {
      if (!it->is_array() || it->size() != 2) r.fail("'time_step_limit' must be [min, max]");
      m.dt_min = limit_value((*it)[0], r);
      m.dt_max = limit_value((*it)[1], r);
      if (!(m.dt_min <= m.dt_max)) r.fail("'time_step_limit' must be [min, max] with min <= max");
    }
  }
  if (has(Block::Moe)) {
    auto& e = c.moe;
    e.hidden = c.hidden;
    e.gated = false;
    e.ffn = r.integer("moe_intermediate_size");
    e.shared_ffn = r.integer("n_shared_experts", 1) > 0 ? r.integer("moe_shared_expert_intermediate_size") : 0;
    e.latent = r.integer("moe_latent_size", 0);
    e.router.score = RouterSpec::Score::Sigmoid;
    e.router.experts = static_cast<int>(r.integer("n_routed_experts"));
    e.router.top_k = static_cast<int>(r.integer("num_experts_per_tok"));
    e.router.groups = static_cast<int>(r.integer("n_group", 1));
    e.router.top_groups = static_cast<int>(r.integer("topk_group", 1));
    e.router.norm_top_k = r.flag("norm_topk_prob", true);
    e.router.scaling = static_cast<float>(r.number("routed_scaling_factor", 1.0));
    if (const std::string problem = router_spec_problem(e.router); !problem.empty()) r.fail(problem);
  }
  return c;
}

// Where the weights are in this checkpoint.
struct Layout {
  std::string body;   // prefix of the layers
  std::string embed;  // the embedding's name
  std::string norm;   // the final norm's name
};

Layout find_layout(const WeightReader& reader, const std::string& path) {
  for (const std::string body : {"backbone.", "model."})
    for (const std::string embed : {"embeddings.weight", "embed_tokens.weight"}) {
      if (!reader.has(body + embed)) continue;
      const std::string norm = reader.has(body + "norm_f.weight") ? "norm_f.weight" : "norm.weight";
      return {body, body + embed, body + norm};
    }
  throw CheckpointError(path, "no embedding found (backbone.embeddings.weight or model.embed_tokens.weight)");
}

}  // namespace

std::unique_ptr<Model> load_nemotron_h(const std::string& path, bool is_gguf, Backend& backend) {
  if (is_gguf) throw CheckpointError(path, "nemotron_h GGUF files are not read yet: use a safetensors directory");
  if (!backend.has_state_space())
    throw CheckpointError(path, "nemotron_h needs Mamba-2 and mixture-of-experts layers, which this " + backend.name() +
                                    " backend does not run yet (they run on --backend mlx without --tp)");
  HfCheckpoint ck(path);
  const NemotronHConfig cfg = read_config(ck.config(), path);
  auto reader = open_hf_weights(path);
  const Layout lay = find_layout(*reader, path);
  WeightSource src(*reader, backend);

  AttentionConfig ac;
  ac.hidden = cfg.hidden;
  if (cfg.heads > 0) ac.spec = attention_spec(cfg.heads, cfg.kv_heads, cfg.head_dim);
  ac.use_rope = false;
  ac.norm_eps = cfg.eps;
  const Mamba2Config mc{cfg.hidden, cfg.mamba, cfg.eps};

  DecoderWeights w;
  w.rms_eps = cfg.eps;
  w.embed = src.matrix(lay.embed, cfg.vocab, cfg.hidden);
  // A layer as the checkpoint stores it: `p`norm.weight before its one block `p`mixer.*.
  const auto layer = [&](const std::string& p, Block kind, int slot) {
    DecoderLayer l;
    const DeviceWeight norm = src.vector(p + "norm.weight", cfg.hidden);
    const std::string mixer = p + "mixer.";
    l.slot = slot;
    switch (kind) {
      case Block::Mamba:
        l.input_norm = norm, l.mixer = Mamba2Block::load(src, mixer, mc);
        break;
      case Block::Attention:
        l.input_norm = norm, l.mixer = AttentionBlock::load(src, mixer, ac);
        break;
      case Block::Mlp:
        l.post_norm = norm, l.ffn = Relu2Mlp::load(src, mixer, cfg.hidden, cfg.ffn);
        break;
      case Block::Moe:
        l.post_norm = norm, l.ffn = MoeBlock::load(src, mixer, cfg.moe);
        break;
    }
    return l;
  };
  int attention = 0, recurrent = 0;
  for (std::size_t i = 0; i < cfg.plan.size(); ++i) {
    const Block kind = cfg.plan[i];
    const int slot = kind == Block::Attention ? attention++ : kind == Block::Mamba ? recurrent++ : 0;
    w.layers.push_back(layer(lay.body + "layers." + std::to_string(i) + ".", kind, slot));
  }
  w.final_norm = src.vector(lay.norm, cfg.hidden);
  if (cfg.tied)
    w.output = w.embed;
  else if (!src.has("lm_head.weight"))
    src.fail("missing tensor 'lm_head.weight' (tie_word_embeddings is false)");
  else
    w.output = src.matrix("lm_head.weight", cfg.vocab, cfg.hidden);

  // The MTP head, where the checkpoint holds it (mlx-lm's conversion drops it): mtp.layers.0 carries the fusion
  // (enorm, hnorm, eh_proj), the last sublayer the final norm.
  std::optional<MtpHead> mtp;
  if (!cfg.mtp_plan.empty() && src.has("mtp.layers.0.eh_proj.weight")) {
    MtpHead& h = mtp.emplace();
    h.eps = cfg.eps;
    h.load_fusion(src, "mtp.layers.0.enorm.weight", "mtp.layers.0.hnorm.weight", "mtp.layers.0.eh_proj.weight",
                  cfg.hidden, false);
    int slot = 0;
    for (std::size_t i = 0; i < cfg.mtp_plan.size(); ++i)
      h.layers.push_back(layer("mtp.layers." + std::to_string(i) + ".", cfg.mtp_plan[i],
                               cfg.mtp_plan[i] == Block::Attention ? slot++ : 0));
    h.final_norm =
        src.vector("mtp.layers." + std::to_string(cfg.mtp_plan.size() - 1) + ".final_layernorm.weight", cfg.hidden);
  }

  ModelInfo info;
  info.family = "nemotron_h";
  info.architecture = ck.config().value("model_type", std::string("nemotron_h"));
  info.vocab = cfg.vocab;
  info.context = cfg.context;
  info.weight_bytes = src.bytes();
  return std::make_unique<DecoderModel>(backend, std::move(info), std::move(w), GatedDeltaSpec{}, std::move(mtp),
                                        cfg.mamba);
}

}  // namespace tf
