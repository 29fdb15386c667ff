// The qwen3_5 family: its config reader and its layer plan over the shared blocks (families-and-formats
// §1.1-1.4, §2.2, §2.7). Three key layouts hold the same weights:
//   Hugging Face, multimodal wrapper: model.language_model.layers.N..., lm_head.weight
//   Hugging Face, text only:          model.layers.N..., lm_head.weight
//   mlx-community (mlx-lm's sanitize): language_model.model.layers.N..., language_model.lm_head.weight,
//                                     with the zero-centred norms stored as 1 + w and conv1d as [C, K, 1].
// The multi-token-prediction head, where the checkpoint has one, is `mtp.*` at the top level in both Hugging
// Face layouts (mlx-lm's conversion drops it); the model serves it as its draft head (blocks/mtp_head.h).
// A GGUF file (llama.cpp's arch qwen35) is a fourth layout of the same plan: its names through
// qwen3_5_gguf_name, norms stored as 1 + w, A stored as -exp(A_log), value heads tiled over the key heads.
#include "families/qwen3_5/qwen3_5.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "backends/backend.h"
#include "blocks/mtp_head.h"
#include "blocks/weight_source.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/decoder_model.h"
#include "families/qwen3_5/qwen3_5_config.h"
#include "families/qwen3_5/qwen3_5_gguf_names.h"

namespace tf {
namespace {

// Where the text model's weights are in this checkpoint, whether its norms still need the + 1, and whether it
// stores A rather than A_log.
struct Layout {
  std::string body;  // prefix of embed_tokens, layers, norm
  std::string head;  // lm_head.weight's name
  bool norms_plus_one = true;
  bool stored_a = false;
};

Layout find_layout(const WeightReader& reader, const Qwen35Config& c, const std::string& path) {
  for (const auto& [body, head] : {std::pair<std::string, std::string>{"model.language_model.", "lm_head.weight"},
                                   {"model.", "lm_head.weight"},
                                   {"language_model.model.", "language_model.lm_head.weight"}}) {
    if (!reader.has(body + "embed_tokens.weight")) continue;
    Layout l{body, head, true, false};
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

// The checkpoint's reader, config and layout, from a GGUF file or a safetensors directory.
struct Opened {
  std::unique_ptr<WeightReader> reader;
  Qwen35Config cfg;
  Layout lay;
  std::function<std::string(const std::string&)> rename;
  std::string architecture;
};

Opened open_checkpoint(const std::string& path, bool is_gguf) {
  Opened o;
  if (is_gguf) {
    const GgufFile f(path);
    o.cfg = qwen3_5_config_from_gguf(f.header(), path);
    o.reader = open_gguf_weights(path);
    o.lay = {"model.", "lm_head.weight", false, true};
    o.rename = [layers = o.cfg.layers](const std::string& name) { return qwen3_5_gguf_name(name, layers); };
    o.architecture = f.header().get_string("general.architecture").value_or("qwen35");
    return o;
  }
  HfCheckpoint ck(path);
  o.cfg = qwen3_5_config_from_json(ck.config(), path);
  o.reader = open_hf_weights(path);
  o.lay = find_layout(*o.reader, o.cfg, path);
  o.architecture = ck.config().value("model_type", std::string("qwen3_5"));
  return o;
}

}  // namespace

std::unique_ptr<Model> load_qwen3_5(const std::string& path, bool is_gguf, Backend& backend) {
  if (!backend.has_linear_attention())
    throw CheckpointError(path, "qwen3_5 needs linear-attention layers, which the " + backend.name() +
                                    " backend does not run yet: use --backend mlx");
  Opened ck = open_checkpoint(path, is_gguf);
  const Qwen35Config& cfg = ck.cfg;
  const Layout& lay = ck.lay;
  // A backend that cannot run this Gated DeltaNet shape (its kernels' head sizes; on tensor parallel ranks, a
  // GGUF's tiled value heads) says so now, naming the file, rather than at the first request.
  try {
    backend.new_recurrent_state(1, cfg.gdn);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(path, std::string("the ") + backend.name() + " backend cannot run it: " + e.what());
  }
  WeightSource src(*ck.reader, backend, ck.rename);

  AttentionConfig ac;
  ac.hidden = cfg.hidden;
  ac.spec = attention_spec(cfg.heads, cfg.kv_heads, cfg.head_dim);
  ac.rope.base = cfg.rope_theta;
  ac.rope.rotary_dims = cfg.rotary_dims;
  ac.rope.mrope_section = cfg.mrope_section;
  ac.qk_norm = true;
  ac.zero_centred_qk_norm = lay.norms_plus_one;
  ac.output_gate = cfg.output_gate;
  ac.norm_eps = cfg.rms_eps;
  GatedDeltaConfig gc{.hidden = cfg.hidden, .spec = cfg.gdn, .norm_eps = cfg.rms_eps, .stored_a = lay.stored_a};

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
  info.architecture = ck.architecture;
  info.vocab = cfg.vocab;
  info.context = cfg.context;
  info.weight_bytes = src.bytes();
  return std::make_unique<DecoderModel>(backend, std::move(info), std::move(w), cfg.gdn, std::move(mtp));
}

}  // namespace tf
