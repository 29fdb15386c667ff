// The qwen3_5 family: its config reader and its layer plan over the shared blocks (families-and-formats
// §1.1-1.4, §2.2, §2.7). Three key layouts hold the same weights:
//   Hugging Face, multimodal wrapper: model.language_model.layers.N..., lm_head.weight
//   Hugging Face, text only:          model.layers.N..., lm_head.weight
//   mlx-community (mlx-lm's sanitize): language_model.model.layers.N..., language_model.lm_head.weight,
//                                     with the zero-centred norms stored as 1 + w and conv1d as [C, K, 1].
// The multi-token-prediction head, where the checkpoint has one, is `mtp.*` at the top level in both Hugging
// Face layouts (mlx-lm's conversion drops it); the model serves it as its draft head (blocks/mtp_head.h).
#include "families/qwen3_5/qwen3_5.h"

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

struct Qwen35Config {
  std::int64_t vocab = 0, hidden = 0, ffn = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, context = 0;
  float rms_eps = 1e-6f;
  float rope_theta = 10000.0f;
  double partial_rotary = 1.0;
  bool output_gate = true;
  bool tied = false;
  GatedDeltaSpec gdn;
  std::vector<bool> full_attention;  // per layer: full attention, else Gated DeltaNet
  std::int64_t mtp_layers = 1;       // MTP layers, where the checkpoint holds mtp.* weights
};

Qwen35Config read_config(const nlohmann::json& top, const std::string& path) {
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
  c.partial_rotary = r.number(rope, "partial_rotary_factor", r.number("partial_rotary_factor", 1.0));
  if (const std::string type = rope.value("rope_type", std::string("default")); type != "default")
    r.fail("rope type '" + type + "' is not supported for qwen3_5 yet");
  c.gdn.k_heads = static_cast<int>(r.integer("linear_num_key_heads"));
  c.gdn.v_heads = static_cast<int>(r.integer("linear_num_value_heads"));
  c.gdn.k_dim = static_cast<int>(r.integer("linear_key_head_dim"));
  c.gdn.v_dim = static_cast<int>(r.integer("linear_value_head_dim"));
  c.gdn.conv_kernel = static_cast<int>(r.integer("linear_conv_kernel_dim", 4));
  if (c.gdn.v_heads % c.gdn.k_heads != 0) r.fail("linear_num_value_heads must be a multiple of linear_num_key_heads");
  const double rot = static_cast<double>(c.head_dim) * c.partial_rotary;
  if (c.partial_rotary <= 0.0 || c.partial_rotary > 1.0 || rot != static_cast<double>(static_cast<std::int64_t>(rot)) ||
      static_cast<std::int64_t>(rot) % 2 != 0)
    r.fail("partial_rotary_factor must give an even number of rotary dimensions of head_dim");
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

// Where the text model's weights are in this checkpoint, and whether its norms still need the + 1.
struct Layout {
  std::string body;  // prefix of embed_tokens, layers, norm
  std::string head;  // lm_head.weight's name
  bool norms_plus_one = true;
};

Layout find_layout(const WeightReader& reader, const Qwen35Config& c, const std::string& path) {
  for (const auto& [body, head] : {std::pair<std::string, std::string>{"model.language_model.", "lm_head.weight"},
                                   {"model.", "lm_head.weight"},
                                   {"language_model.model.", "language_model.lm_head.weight"}}) {
    if (!reader.has(body + "embed_tokens.weight")) continue;
    Layout l{body, head, true};
    // mlx-lm converts a Hugging Face checkpoint once: it adds 1 to the zero-centred norms and stores the conv
    // kernel as [C, K, 1]; it tells a converted checkpoint by that conv shape, and so do we.
    for (std::int64_t i = 0; i < c.layers; ++i) {
      if (c.full_attention[static_cast<std::size_t>(i)]) continue;
      const auto conv = reader.read(body + "layers." + std::to_string(i) + ".linear_attn.conv1d.weight");
      l.norms_plus_one = !(conv.shape.size() == 3 && conv.shape[2] == 1 && c.gdn.conv_kernel > 1);
      break;
    }
    return l;
  }
  throw CheckpointError(path,
                        "no embedding found (model.language_model.embed_tokens.weight, model.embed_tokens.weight "
                        "or language_model.model.embed_tokens.weight)");
}

}  // namespace

std::unique_ptr<Model> load_qwen3_5(const std::string& path, bool is_gguf, Backend& backend) {
  if (is_gguf) throw CheckpointError(path, "qwen3_5 GGUF files are not read yet: use a safetensors directory");
  if (!backend.has_linear_attention())
    throw CheckpointError(path, "qwen3_5 needs linear-attention layers, which the " + backend.name() +
                                    " backend does not run yet: use --backend mlx");
  HfCheckpoint ck(path);
  const Qwen35Config cfg = read_config(ck.config(), path);
  auto reader = open_hf_weights(path);
  const Layout lay = find_layout(*reader, cfg, path);
  WeightSource src(*reader, backend);

  AttentionConfig ac;
  ac.hidden = cfg.hidden;
  ac.spec = attention_spec(cfg.heads, cfg.kv_heads, cfg.head_dim);
  ac.rope.base = cfg.rope_theta;
  ac.rope.rotary_dims = static_cast<int>(static_cast<double>(cfg.head_dim) * cfg.partial_rotary);
  ac.qk_norm = true;
  ac.zero_centred_qk_norm = lay.norms_plus_one;
  ac.output_gate = cfg.output_gate;
  ac.norm_eps = cfg.rms_eps;
  GatedDeltaConfig gc{cfg.hidden, cfg.gdn, cfg.rms_eps};

  DecoderWeights w;
  w.rms_eps = cfg.rms_eps;
  w.embed = src.matrix(lay.body + "embed_tokens.weight", cfg.vocab, cfg.hidden);
  // A layer as the checkpoint stores it (the MTP head's one layer is a full-attention layer too).
  const auto layer = [&](const std::string& p, bool full_attention, int slot) {
    DecoderLayer l;
    l.input_norm = src.vector(p + "input_layernorm.weight", cfg.hidden, lay.norms_plus_one);
    if (full_attention)
      l.mixer = AttentionBlock::load(src, p + "self_attn.", ac);
    else
      l.mixer = GatedDeltaBlock::load(src, p + "linear_attn.", gc);
    l.slot = slot;
    l.post_norm = src.vector(p + "post_attention_layernorm.weight", cfg.hidden, lay.norms_plus_one);
    l.ffn = SwiGluMlp::load(src, p + "mlp.", cfg.hidden, cfg.ffn);
    return l;
  };
  int attention = 0, recurrent = 0;
  for (std::int64_t i = 0; i < cfg.layers; ++i) {
    const bool full = cfg.full_attention[static_cast<std::size_t>(i)];
    w.layers.push_back(layer(lay.body + "layers." + std::to_string(i) + ".", full, full ? attention++ : recurrent++));
  }
  w.final_norm = src.vector(lay.body + "norm.weight", cfg.hidden, lay.norms_plus_one);
  if (cfg.tied)
    w.output = w.embed;
  else if (!src.has(lay.head))
    src.fail("missing tensor '" + lay.head + "' (tie_word_embeddings is false)");
  else
    w.output = src.matrix(lay.head, cfg.vocab, cfg.hidden);

  // One MTP layer is what Qwen3.5 checkpoints ship; a head of another depth is left unused (no drafts from it).
  std::optional<MtpHead> mtp;
  if (cfg.mtp_layers == 1 && src.has("mtp.fc.weight")) {
    MtpHead& h = mtp.emplace();
    h.eps = cfg.rms_eps;
    h.load_fusion(src, "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight", "mtp.fc.weight", cfg.hidden,
                  lay.norms_plus_one);
    h.layers.push_back(layer("mtp.layers.0.", true, 0));
    h.final_norm = src.vector("mtp.norm.weight", cfg.hidden, lay.norms_plus_one);
  }

  ModelInfo info;
  info.family = "qwen3_5";
  info.architecture = ck.config().value("model_type", std::string("qwen3_5"));
  info.vocab = cfg.vocab;
  info.context = cfg.context;
  info.weight_bytes = src.bytes();
  return std::make_unique<DecoderModel>(backend, std::move(info), std::move(w), cfg.gdn, std::move(mtp));
}

}  // namespace tf
