// The glm5_next family (GLM-5.3-Flash): its config reader and its layer plan over the shared blocks
// (families-and-formats §1.3-1.7, §2.4). Every layer is mHC-wrapped [pre-norm -> KDA or latent attention] then
// mHC-wrapped [pre-norm -> dense SwiGLU or experts], the SwiGLU inputs clamped at swiglu_limit; the streams' mean
// goes through the final norm. Key layouts: model.language_model.* (Glm5NextForConditionalGeneration;
// model.visual.* skipped) or model.*, lm_head.weight.
// Block FP8 checkpoints (weight_scale_inv) are dequantized to float32 by the reader (checkpoint/fp8_blocks.h); MLX
// affine ones keep their codes (HF names: mlx-lm has no glm5_next model to rename them).
// The MTP layer, where the checkpoint has it, is layers.{num_hidden_layers}.* (transformers ignores it on load),
// wired as vLLM's glm5next drafter serves it (no public reference code says more): enorm, hnorm, eh_proj, then one
// pre-norm residual layer off the mHC path (it ships no hc_* maps): input_layernorm, latent attention with its own
// KPool indexer, post_attention_layernorm, experts (the dense MLP where the layer has no router), then
// shared_head.norm; the embedded row of position 0 is zeroed. The model serves it as its draft head
// (blocks/mtp_head.h).
// Not read yet: other quantized checkpoints (NVFP4 refused). qk_rope_head_dim > 0 is refused: the reference is NoPE.
#include "families/glm5_next/glm5_next.h"

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "blocks/manifold_hyper_connections.h"
#include "blocks/mtp_head.h"
#include "blocks/weight_source.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/config_reader.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/decoder_model.h"

namespace tf {
namespace {

struct Glm5NextConfig {
  std::int64_t vocab = 0, hidden = 0, layers = 0, ffn = 0, context = 0;
  float eps = 1e-5f;
  bool tied = false;
  std::vector<bool> indexed;  // per layer: latent attention, else KDA
  std::vector<bool> shared;   // per layer: the indexer is shared (reuses the layer before's choice)
  std::vector<bool> sparse;   // per layer: experts, else the dense MLP
  KdaConfig kda;
  MlaConfig mla;
  MoeConfig moe;
  float swiglu_limit = 0.0f;
  int streams = 0, sinkhorn_iters = 20;
  float hc_eps = 1e-6f;
  std::int64_t mtp_layers = 1;  // num_nextn_predict_layers: 0 leaves a stored MTP layer unread
};

// A per-layer list of strings (layer_types and the like), each one of `allowed`.
std::vector<std::string> layer_list(const ConfigReader& r, const char* key, std::int64_t layers,
                                    std::initializer_list<const char*> allowed) {
  const auto it = r.json().find(key);
  if (it == r.json().end() || it->is_null()) return {};
  if (!it->is_array() || static_cast<std::int64_t>(it->size()) != layers)
    r.fail(std::string("'") + key + "' must list num_hidden_layers (" + std::to_string(layers) + ") entries");
  std::vector<std::string> out;
  for (const auto& v : *it) {
    const std::string s = v.is_string() ? v.get<std::string>() : std::string();
    bool ok = false;
    for (const char* a : allowed) ok = ok || s == a;
    if (!ok) {
      std::string names;
      for (const char* a : allowed) names += std::string(names.empty() ? "" : ", ") + a;
      r.fail(std::string("'") + key + "' entries must be one of " + names + ", not " + v.dump());
    }
    out.push_back(s);
  }
  return out;
}

Glm5NextConfig read_config(const nlohmann::json& top, const std::string& path) {
  const nlohmann::json& text = text_config(top);
  const ConfigReader r(text, path + "/config.json");
  Glm5NextConfig c;
  c.vocab = r.integer("vocab_size");
  c.hidden = r.integer("hidden_size");
  c.layers = r.integer("num_hidden_layers");
  c.ffn = r.integer("intermediate_size");
  c.context = r.integer("max_position_embeddings", 4096);
  c.eps = static_cast<float>(r.number("rms_norm_eps", 1e-5));
  c.tied = r.flag("tie_word_embeddings", top.value("tie_word_embeddings", false));
  if (const std::string act = r.text("hidden_act", "silu"); act != "silu")
    r.fail("hidden_act '" + act + "' is not read (silu is)");
  if (r.flag("attention_bias", false)) r.fail("'attention_bias' true is not read yet");
  if (const auto lim = text.find("swiglu_limit"); lim == text.end())
    c.swiglu_limit = 10.0f;  // transformers' default; null: no clamp
  else if (!lim->is_null())
    c.swiglu_limit = static_cast<float>(r.number("swiglu_limit", 10.0));
  if (c.swiglu_limit < 0.0f) r.fail("'swiglu_limit' must be positive (or null: no clamp)");

  // Layers: linear_attention (KDA) or indexed_attention (latent attention; the released configs may say
  // full_attention or deepseek_sparse_attention); by default every fourth layer is indexed.
  const auto types =
      layer_list(r, "layer_types", c.layers,
                 {"linear_attention", "indexed_attention", "full_attention", "deepseek_sparse_attention"});
  for (std::int64_t i = 0; i < c.layers; ++i)
    c.indexed.push_back(types.empty() ? i % 4 == 3 : types[static_cast<std::size_t>(i)] != "linear_attention");
  // Indexers: indexer_types, else index_topk_pattern ("F"ull / "S"hared), else index_topk_freq/offset.
  auto kinds = layer_list(r, "indexer_types", c.layers, {"full", "shared"});
  if (kinds.empty()) {
    if (const auto pat = text.find("index_topk_pattern"); pat != text.end() && !pat->is_null()) {
      const std::string s = pat->is_string() ? pat->get<std::string>() : std::string();
      if (static_cast<std::int64_t>(s.size()) != c.layers || s.find_first_not_of("FS") != std::string::npos)
        r.fail("'index_topk_pattern' must be one F or S a layer (" + std::to_string(c.layers) + ")");
      for (const char ch : s) kinds.push_back(ch == 'F' ? "full" : "shared");
    } else {
      const std::int64_t freq = std::max<std::int64_t>(r.integer("index_topk_freq", 1), 1);
      const std::int64_t offset = r.count("index_skip_topk_offset", 2);
      for (std::int64_t i = 0; i < c.layers; ++i)
        kinds.push_back(std::max<std::int64_t>(i - offset + 1, 0) % freq == 0 ? "full" : "shared");
    }
  }
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const bool shared = c.indexed[static_cast<std::size_t>(i)] && kinds[static_cast<std::size_t>(i)] == "shared";
    // The reference hands a layer's choice only to the layer right after it, and only from a full indexer layer.
    if (shared && (i == 0 || !c.indexed[static_cast<std::size_t>(i - 1)] || c.shared[static_cast<std::size_t>(i - 1)]))
      r.fail("layer " + std::to_string(i) +
             " shares an indexer, but the layer before it is not a latent-attention layer with its own indexer");
    c.shared.push_back(shared);
  }
  // Feed-forward: mlp_layer_types, else the first first_k_dense_replace (3) layers dense.
  const auto mlp = layer_list(r, "mlp_layer_types", c.layers, {"dense", "sparse"});
  const std::int64_t dense_first = r.count("first_k_dense_replace", 3);
  for (std::int64_t i = 0; i < c.layers; ++i)
    c.sparse.push_back(mlp.empty() ? i >= dense_first : mlp[static_cast<std::size_t>(i)] == "sparse");

  // KDA: the linear_* keys, or a linear_attn_config object.
  KdaConfig& k = c.kda;
  k.hidden = c.hidden;
  k.norm_eps = c.eps;
  k.heads = static_cast<int>(r.integer("linear_num_heads", 64));
  k.head_dim = static_cast<int>(r.integer("linear_head_dim", 128));
  k.conv_kernel = static_cast<int>(r.integer("linear_conv_kernel_dim", 4));
  const auto lb = text.find("linear_lower_bound");
  bool bounded = lb == text.end() || !lb->is_null();
  double bound = bounded ? r.number("linear_lower_bound", -5.0) : 0.0;
  if (const auto la = text.find("linear_attn_config"); la != text.end() && !la->is_null()) {
    if (!la->is_object()) r.fail("'linear_attn_config' must be an object");
    const ConfigReader lr(*la, path + "/config.json");  // its keys named as linear_attn_config has them
    k.heads = static_cast<int>(lr.integer("num_heads", k.heads));
    k.head_dim = static_cast<int>(lr.integer("head_dim", k.head_dim));
    k.conv_kernel = static_cast<int>(lr.integer("short_conv_kernel_size", k.conv_kernel));
    if (const auto g = la->find("gate_lower_bound"); g != la->end()) {
      bounded = !g->is_null();
      bound = bounded ? lr.number("gate_lower_bound", -5.0) : 0.0;
    }
    if (!bounded && lr.flag("safe_gate", true)) bounded = true, bound = -5.0;
  }
  if (bounded && bound >= 0.0) r.fail("'linear_lower_bound' must be negative (or null: no bound)");
  k.lower_bound = bounded ? static_cast<float>(bound) : 0.0f;

  // Latent attention and its indexer.
  MlaConfig& m = c.mla;
  m.hidden = c.hidden;
  m.eps = c.eps;
  m.heads = static_cast<int>(r.integer("num_attention_heads"));
  if (r.integer("num_key_value_heads", m.heads) != m.heads)
    r.fail("'num_key_value_heads' must equal num_attention_heads (latent attention has no key/value groups)");
  m.q_rank = static_cast<int>(r.integer("q_lora_rank"));
  m.kv_rank = static_cast<int>(r.integer("kv_lora_rank"));
  m.nope_dim = static_cast<int>(r.integer("qk_nope_head_dim"));
  m.v_dim = static_cast<int>(r.integer("v_head_dim"));
  if (r.count("qk_rope_head_dim", 0) != 0)
    r.fail(
        "'qk_rope_head_dim' > 0 (a rotary part in latent attention) is not served: GLM-5.3's latent attention is "
        "NoPE (transformers' glm5_next refuses a RoPE part too)");
  KpoolIndexerConfig& ix = m.indexer;
  ix.hidden = c.hidden;
  ix.q_rank = m.q_rank;
  ix.heads = static_cast<int>(r.integer("index_n_heads"));
  ix.head_dim = static_cast<int>(r.integer("index_head_dim"));
  ix.pool = static_cast<int>(r.integer("index_kpool", 16));
  ix.top_k = static_cast<int>(r.integer("index_topk"));
  if (ix.top_k % ix.pool != 0) r.fail("'index_topk' must be a multiple of index_kpool");
  if (!r.flag("index_kpool_always_select_tail", true))
    r.fail("'index_kpool_always_select_tail' false is not served (the tail is always attended)");

  // Experts: sigmoid scores, correction bias, group-limited top-k, routed_scaling_factor, one shared expert.
  MoeConfig& e = c.moe;
  e.hidden = c.hidden;
  e.ffn = r.integer("moe_intermediate_size");
  e.shared_ffn = e.ffn * r.count("n_shared_experts", 1);
  e.swiglu_limit = c.swiglu_limit;
  e.router.score = RouterSpec::Score::Sigmoid;
  e.router.experts = static_cast<int>(r.integer("n_routed_experts"));
  e.router.top_k = static_cast<int>(r.integer("num_experts_per_tok"));
  e.router.groups = static_cast<int>(r.integer("n_group", 1));
  e.router.top_groups = static_cast<int>(r.integer("topk_group", 1));
  e.router.norm_top_k = r.flag("norm_topk_prob", true);
  e.router.scaling = static_cast<float>(r.number("routed_scaling_factor", 2.5));

  c.streams = static_cast<int>(r.integer("hc_mult", 4));
  c.sinkhorn_iters = static_cast<int>(r.integer("hc_sinkhorn_iters", 20));
  c.hc_eps = static_cast<float>(r.number("hc_eps", 1e-6));
  // The released config may not name it (transformers' has no such key): a stored layer is read unless it is 0.
  c.mtp_layers = r.count("num_nextn_predict_layers", 1);
  return c;
}

}  // namespace

std::unique_ptr<Model> load_glm5_next(const std::string& path, bool is_gguf, Backend& backend) {
  if (is_gguf) throw CheckpointError(path, "glm5_next GGUF files are not read yet: use a safetensors directory");
  if (!backend.has_linear_attention() || !backend.has_channel_decay() || !backend.has_state_space())
    throw CheckpointError(path, "glm5_next needs Kimi delta attention and the host blocks, which the " +
                                    backend.name() + " backend does not run yet: use --backend mlx");
  const HfCheckpoint ck(path);
  const Glm5NextConfig cfg = read_config(ck.config(), path);
  // Block FP8 (the default release: float8 E4M3 with 128x128 weight_scale_inv) is dequantized by the reader; other
  // quantizations are refused (NVFP4's ModelOpt scales, MLX affine, FP8 without blocks).
  // MLX affine checkpoints (config.json `quantization`, mirrored as a quantization_config without quant_method) are
  // read by the reader too, each quantized matrix as its codes.
  if (const auto q = ck.config().find("quantization_config");
      q != ck.config().end() && !q->is_null() && !(q->is_object() && !q->contains("quant_method"))) {
    const std::string method = q->is_object() ? q->value("quant_method", std::string()) : std::string();
    const std::string algo = q->is_object() && q->contains("quant_algo") && (*q)["quant_algo"].is_string()
                                 ? (*q)["quant_algo"].get<std::string>()
                                 : std::string();
    if (method == "modelopt" || algo.find("FP4") != std::string::npos || method.find("fp4") != std::string::npos)
      throw CheckpointError(path, "glm5_next: NVFP4 checkpoints are not served: use the FP8 or BF16 release");
    if (method != "fp8" || !q->contains("weight_block_size"))
      throw CheckpointError(path, "glm5_next: quantization '" + (method.empty() ? q->dump() : method) +
                                      "' is not read yet (block FP8 and bf16 are)");
  }
  auto reader = open_hf_weights(path);
  std::string body;
  for (const char* b : {"model.language_model.", "model."})
    if (reader->has(std::string(b) + "embed_tokens.weight")) {
      body = b;
      break;
    }
  if (body.empty())
    throw CheckpointError(path,
                          "no embedding found (model.language_model.embed_tokens.weight or model.embed_tokens.weight)");
  WeightSource src(*reader, backend);
  const auto wrapper = [&](const std::string& prefix, const std::string& norm) {
    return std::make_shared<const ManifoldHyperConnections>(ManifoldHyperConnections::load(
        src, prefix, norm, cfg.streams, cfg.hidden, cfg.sinkhorn_iters, cfg.hc_eps, cfg.eps));
  };

  DecoderWeights w;
  w.rms_eps = cfg.eps;
  w.streams = cfg.streams;
  w.embed = src.matrix(body + "embed_tokens.weight", cfg.vocab, cfg.hidden);
  // Experts, or the dense SwiGLU MLP under the clamp.
  const auto feed_forward = [&](const std::string& p, bool sparse) {
    decltype(DecoderLayer::ffn) ffn;
    if (sparse) {
      ffn = MoeBlock::load(src, p + "mlp.", cfg.moe);
    } else {
      SwiGluMlp mlp = SwiGluMlp::load(src, p + "mlp.", cfg.hidden, cfg.ffn);
      mlp.limit = cfg.swiglu_limit;
      ffn = std::move(mlp);
    }
    return ffn;
  };
  int recurrent = 0, host_rows = 0;
  for (std::int64_t i = 0; i < cfg.layers; ++i) {
    const std::string p = body + "layers." + std::to_string(i) + ".";
    const auto at = static_cast<std::size_t>(i);
    DecoderLayer l;
    if (cfg.indexed[at]) {
      MlaConfig mc = cfg.mla;
      mc.selection = cfg.shared[at] ? MlaConfig::Selection::Shared : MlaConfig::Selection::Own;
      mc.shared_from = host_rows - 1;  // the layer before's slot (read_config checked it is one with an indexer)
      l.mixer = MlaBlock::load(src, p + "self_attn.", mc);
      l.slot = host_rows++;
    } else {
      l.mixer = KdaBlock::load(src, p + "self_attn.", cfg.kda);
      l.slot = recurrent++;
    }
    l.mixer_hc = wrapper(p + "attn_hc.", p + "input_layernorm.weight");
    l.ffn = feed_forward(p, cfg.sparse[at]);
    l.ffn_hc = wrapper(p + "ffn_hc.", p + "post_attention_layernorm.weight");
    w.layers.push_back(std::move(l));
  }
  w.final_mixer = std::make_shared<const ManifoldHyperConnections>(
      ManifoldHyperConnections::head(src, body + "norm.weight", cfg.streams, cfg.hidden, cfg.eps));
  if (cfg.tied)
    w.output = w.embed;
  else if (!src.has("lm_head.weight"))
    src.fail("missing tensor 'lm_head.weight' (tie_word_embeddings is false)");
  else
    w.output = src.matrix("lm_head.weight", cfg.vocab, cfg.hidden);

  // The MTP layer (one step: a deeper head's later layers go unused). Its attention is latent attention with its
  // own indexer over the head's own rows; a KDA layer there would need a rollback of its own, which no head has.
  std::optional<MtpHead> mtp;
  const std::string m = body + "layers." + std::to_string(cfg.layers) + ".";
  if (cfg.mtp_layers >= 1 && src.has(m + "eh_proj.weight")) {
    if (!src.has(m + "self_attn.kv_a_proj_with_mqa.weight"))
      src.fail("the MTP layer " + m + "* is not a latent-attention layer: only such a head is served");
    MtpHead& h = mtp.emplace();
    h.eps = cfg.eps;
    h.zero_first_embedding = true;
    h.load_fusion(src, m + "enorm.weight", m + "hnorm.weight", m + "eh_proj.weight", cfg.hidden, false);
    DecoderLayer l;
    MlaConfig mc = cfg.mla;
    mc.selection = MlaConfig::Selection::Own;
    l.input_norm = src.vector(m + "input_layernorm.weight", cfg.hidden);
    l.mixer = MlaBlock::load(src, m + "self_attn.", mc);
    l.slot = 0;  // the head's own HostRowLog
    l.post_norm = src.vector(m + "post_attention_layernorm.weight", cfg.hidden);
    l.ffn = feed_forward(m, src.has(m + "mlp.gate.weight"));
    h.layers.push_back(std::move(l));
    h.final_norm = src.vector(m + "shared_head.norm.weight", cfg.hidden);
  }

  ModelInfo info;
  info.family = "glm5_next";
  info.architecture = ck.config().value("model_type", std::string("glm5_next"));
  info.vocab = cfg.vocab;
  info.context = cfg.context;
  info.weight_bytes = src.bytes();
  return std::make_unique<DecoderModel>(backend, std::move(info), std::move(w), cfg.kda.spec(), std::move(mtp));
}

}  // namespace tf
