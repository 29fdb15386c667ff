// The deepseek_v4 family (DeepSeek-V4-Flash): its config reader and its layer plan over the shared blocks
// (families-and-formats §1.3, §1.5, §1.6, §2.6). Every layer is mHC-wrapped [attn_norm -> compressed attention]
// then mHC-wrapped [ffn_norm -> experts]; the learned hc_head collapses the streams before the final norm.
// Names: those transformers' save_pretrained writes (model.layers.N.attn.{wq_a, q_norm, wq_b, wkv, norm, wo_a,
// wo_b, attn_sink, compressor.*, indexer.*}, ffn.{gate.{weight, bias, tid2eid}, experts.N.w1/w2/w3,
// shared_experts.*}, hc_attn_* / hc_ffn_*, model.hc_head.hc_*, model.norm, model.embed_tokens, head.weight).
// The release's own names are read too (embed, layers.N., norm, hc_head_fn, attn.kv_norm; head). Not read yet: the
// runtime (self_attn.q_a_proj ...) names, the MTP layers (mtp.*: transformers ignores them too). MLX affine codes are
// read under the saved names (mlx-lm has no deepseek_v4 model to rename them).
#include "families/deepseek_v4/deepseek_v4.h"

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "blocks/manifold_hyper_connections.h"
#include "blocks/weight_source.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/config_reader.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/decoder_model.h"

namespace tf {
namespace {

using Branch = CompressedAttentionConfig::Branch;

struct DeepseekV4Config {
  std::int64_t vocab = 0, hidden = 0, layers = 0, context = 0;
  float eps = 1e-6f;
  bool tied = false;
  std::vector<Branch> branch;  // per layer
  std::vector<bool> hashed;    // per layer: hash_moe
  CompressedAttentionConfig attn;
  int csa_rate = 4, hca_rate = 128;
  std::vector<float> main_freq, compress_freq;
  MoeConfig moe;
  int streams = 4, sinkhorn_iters = 20;
  float hc_eps = 1e-6f;
};

// One rope's inverse frequencies from its parameters object (default or YaRN).
std::vector<float> rope_freq(const ConfigReader& r, const nlohmann::json& p, const char* which, int dims,
                             double fallback_theta) {
  const std::string type = p.value("rope_type", p.value("type", std::string("default")));
  const double theta = r.number(p, "rope_theta", fallback_theta);
  if (type == "default") return default_inv_freq(dims, theta);
  if (type != "yarn") r.fail(std::string("rope_parameters.") + which + ": rope_type '" + type + "' is not read");
  if (r.number(p, "attention_factor", 1.0) != 1.0)
    r.fail(std::string("rope_parameters.") + which + ": a YaRN attention_factor other than 1 is not read");
  if (!p.contains("factor") || !p.contains("original_max_position_embeddings"))
    r.fail(std::string("rope_parameters.") + which + ": YaRN needs factor and original_max_position_embeddings");
  const bool truncate = p.value("truncate", true);
  return yarn_inv_freq(dims, theta, r.number(p, "factor", 1.0), r.number(p, "original_max_position_embeddings", 1.0),
                       r.number(p, "beta_fast", 32.0), r.number(p, "beta_slow", 1.0), truncate);
}

DeepseekV4Config read_config(const nlohmann::json& top, const std::string& path) {
  const ConfigReader r(top, path + "/config.json");
  DeepseekV4Config c;
  c.vocab = r.integer("vocab_size");
  c.hidden = r.integer("hidden_size");
  c.layers = r.integer("num_hidden_layers");
  c.context = r.integer("max_position_embeddings", 1048576);
  c.eps = static_cast<float>(r.number("rms_norm_eps", 1e-6));
  c.tied = r.flag("tie_word_embeddings", false);
  if (const std::string act = r.text("hidden_act", "silu"); act != "silu")
    r.fail("hidden_act '" + act + "' is not read (silu is)");
  if (r.flag("attention_bias", false) || r.flag("mlp_bias", false)) r.fail("attention or MLP biases are not read");
  if (r.integer("num_key_value_heads", 1) != 1) r.fail("'num_key_value_heads' must be 1 (one shared key/value head)");

  // Compression rates: compress_rates {compressed_sparse_attention, heavily_compressed_attention}, or the legacy
  // compress_rate_csa / compress_rate_hca.
  c.csa_rate = static_cast<int>(r.integer("compress_rate_csa", 4));
  c.hca_rate = static_cast<int>(r.integer("compress_rate_hca", 128));
  if (const auto cr = top.find("compress_rates"); cr != top.end() && !cr->is_null()) {
    if (!cr->is_object()) r.fail("'compress_rates' must be an object");
    const ConfigReader rr(*cr, path + "/config.json");
    c.csa_rate = static_cast<int>(rr.integer("compressed_sparse_attention", c.csa_rate));
    c.hca_rate = static_cast<int>(rr.integer("heavily_compressed_attention", c.hca_rate));
  }
  // Layers: layer_types, else the legacy compress_ratios (0 / csa / hca), else transformers' default (two
  // heavily compressed layers, then compressed sparse and heavily compressed in turn).
  const auto types = top.find("layer_types");
  const auto ratios = top.find("compress_ratios");
  for (std::int64_t i = 0; i < c.layers; ++i) {
    // transformers: "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention" over i in
    // range(n - 2), after the two heavily compressed ones.
    Branch b = i >= 2 && (i - 2) % 2 == 1 ? Branch::Overlapping : Branch::Pooled;
    if (types != top.end() && !types->is_null()) {
      if (!types->is_array() || static_cast<std::int64_t>(types->size()) != c.layers)
        r.fail("'layer_types' must list num_hidden_layers (" + std::to_string(c.layers) + ") entries");
      const auto& v = (*types)[static_cast<std::size_t>(i)];
      const std::string s = v.is_string() ? v.get<std::string>() : std::string();
      if (s == "sliding_attention")
        b = Branch::None;
      else if (s == "compressed_sparse_attention")
        b = Branch::Overlapping;
      else if (s == "heavily_compressed_attention")
        b = Branch::Pooled;
      else
        r.fail(
            "'layer_types' entries must be sliding_attention, compressed_sparse_attention or "
            "heavily_compressed_attention, not " +
            v.dump());
    } else if (ratios != top.end() && !ratios->is_null()) {
      // The release lists its MTP layers' ratios after the main layers' (transformers reads the first ones).
      if (!ratios->is_array() || static_cast<std::int64_t>(ratios->size()) < c.layers)
        r.fail("'compress_ratios' must list at least num_hidden_layers (" + std::to_string(c.layers) + ") entries");
      const auto& v = (*ratios)[static_cast<std::size_t>(i)];
      const std::int64_t rate = v.is_number_integer() ? v.get<std::int64_t>() : -1;
      if (rate == 0)
        b = Branch::None;
      else if (rate == c.csa_rate)
        b = Branch::Overlapping;
      else if (rate == c.hca_rate)
        b = Branch::Pooled;
      else
        r.fail("'compress_ratios' entries must be 0, " + std::to_string(c.csa_rate) + " or " +
               std::to_string(c.hca_rate) + ", not " + v.dump());
    }
    c.branch.push_back(b);
  }
  // Feed-forward: mlp_layer_types, else the first num_hash_layers (3) hash-routed.
  const std::int64_t hash_first = r.count("num_hash_layers", 3);
  const auto mlp = top.find("mlp_layer_types");
  for (std::int64_t i = 0; i < c.layers; ++i) {
    bool hashed = i < hash_first;
    if (mlp != top.end() && !mlp->is_null()) {
      if (!mlp->is_array() || static_cast<std::int64_t>(mlp->size()) != c.layers)
        r.fail("'mlp_layer_types' must list num_hidden_layers (" + std::to_string(c.layers) + ") entries");
      const auto& v = (*mlp)[static_cast<std::size_t>(i)];
      if (v != "hash_moe" && v != "moe") r.fail("'mlp_layer_types' entries must be hash_moe or moe, not " + v.dump());
      hashed = v == "hash_moe";
    }
    c.hashed.push_back(hashed);
  }

  CompressedAttentionConfig& a = c.attn;
  a.hidden = c.hidden;
  a.eps = c.eps;
  a.heads = static_cast<int>(r.integer("num_attention_heads"));
  a.head_dim = static_cast<int>(r.integer("head_dim"));
  a.q_rank = static_cast<int>(r.integer("q_lora_rank"));
  a.window = static_cast<int>(r.integer("sliding_window", 128));
  a.o_groups = static_cast<int>(r.integer("o_groups", 8));
  a.o_rank = static_cast<int>(r.integer("o_lora_rank", 1024));
  a.index_heads = static_cast<int>(r.integer("index_n_heads", 64));
  a.index_dim = static_cast<int>(r.integer("index_head_dim", 128));
  a.top_k = static_cast<int>(r.integer("index_topk", 512));
  // Rotary dims: partial_rotary_factor x head_dim, else the legacy qk_rope_head_dim, else 64 / 512 of it.
  double partial = r.number("partial_rotary_factor", 0.0);
  if (partial <= 0.0) partial = static_cast<double>(r.integer("qk_rope_head_dim", a.head_dim / 8)) / a.head_dim;
  a.rope_dims = static_cast<int>(a.head_dim * partial);
  if (a.rope_dims % 2 != 0 || a.rope_dims <= 0)
    r.fail("the rotary dims (partial_rotary_factor x head_dim) must be even");
  // Ropes: rope_parameters {main, compress} (each default or YaRN), else rope_theta and compress_rope_theta with
  // the flat rope_parameters / rope_scaling as the compressed branch's YaRN.
  const double main_theta = r.number("rope_theta", 10000.0), compress_theta = r.number("compress_rope_theta", 160000.0);
  nlohmann::json main = {{"rope_type", "default"}, {"rope_theta", main_theta}};
  nlohmann::json compress = {{"rope_type", "default"}, {"rope_theta", compress_theta}};
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const auto rp = top.find(key);
    if (rp == top.end() || rp->is_null()) continue;
    if (!rp->is_object()) r.fail(std::string("'") + key + "' must be an object");
    if (rp->contains("main") || rp->contains("compress")) {
      if (!(*rp)["main"].is_object() || !(*rp)["compress"].is_object())
        r.fail(std::string("'") + key + "' must hold both main and compress objects");
      main = (*rp)["main"];
      compress = (*rp)["compress"];
    } else {
      for (const auto& [k, v] : rp->items()) compress[k == "type" ? "rope_type" : k] = v;  // legacy "type"
      compress["rope_theta"] = compress_theta;
    }
    break;
  }
  for (const auto* p : {&main, &compress})
    if (p->contains("partial_rotary_factor") && (*p)["partial_rotary_factor"].is_number() &&
        static_cast<int>(a.head_dim * (*p)["partial_rotary_factor"].get<double>()) != a.rope_dims)
      r.fail("rope_parameters: main and compress must rotate the same dims as partial_rotary_factor says");
  c.main_freq = rope_freq(r, main, "main", a.rope_dims, main_theta);
  c.compress_freq = rope_freq(r, compress, "compress", a.rope_dims, compress_theta);
  a.compress_inv_freq = c.compress_freq;

  MoeConfig& e = c.moe;
  e.hidden = c.hidden;
  e.vocab = c.vocab;
  e.ffn = r.integer("moe_intermediate_size");
  e.shared_ffn = e.ffn * r.count("n_shared_experts", 1);
  if (const auto lim = top.find("swiglu_limit"); lim == top.end())
    e.swiglu_limit = 10.0f;
  else if (!lim->is_null())
    e.swiglu_limit = static_cast<float>(r.number("swiglu_limit", 10.0));
  if (e.swiglu_limit < 0.0f) r.fail("'swiglu_limit' must be positive (or null: no clamp)");
  e.gate_proj = "w1";
  e.up_proj = "w3";
  e.down_proj = "w2";
  e.bias_name = "gate.bias";
  const std::string score = r.text("scoring_func", "sqrtsoftplus");
  if (score == "sqrtsoftplus")
    e.router.score = RouterSpec::Score::SqrtSoftplus;
  else if (score == "sigmoid")
    e.router.score = RouterSpec::Score::Sigmoid;
  else if (score == "softmax")
    e.router.score = RouterSpec::Score::Softmax;
  else
    r.fail("'scoring_func' must be sqrtsoftplus, sigmoid or softmax, not '" + score + "'");
  e.router.experts = static_cast<int>(r.integer("n_routed_experts"));
  e.router.top_k = static_cast<int>(r.integer("num_experts_per_tok"));
  e.router.norm_top_k = r.flag("norm_topk_prob", true);
  e.router.scaling = static_cast<float>(r.number("routed_scaling_factor", 1.5));

  c.streams = static_cast<int>(r.integer("hc_mult", 4));
  c.sinkhorn_iters = static_cast<int>(r.integer("hc_sinkhorn_iters", 20));
  c.hc_eps = static_cast<float>(r.number("hc_eps", 1e-6));
  return c;
}

}  // namespace

std::unique_ptr<Model> load_deepseek_v4(const std::string& path, bool is_gguf, Backend& backend) {
  if (is_gguf) throw CheckpointError(path, "deepseek_v4 GGUF files are not read yet: use a safetensors directory");
  if (!backend.has_state_space())
    throw CheckpointError(path, "deepseek_v4 needs the host blocks, which the " + backend.name() +
                                    " backend does not run yet: use --backend mlx");
  const HfCheckpoint ck(path);
  const DeepseekV4Config cfg = read_config(ck.config(), path);
  // bf16, or block FP8 (e4m3 with 128x128 UE8M0 `.scale` tiles) with MXFP4 experts, dequantized by the reader, or
  // MLX affine codes under the same names (config.json `quantization`, mirrored as a quantization_config without
  // quant_method), each quantized matrix kept as its codes.
  if (const auto q = ck.config().find("quantization_config");
      q != ck.config().end() && !q->is_null() && !(q->is_object() && !q->contains("quant_method"))) {
    const std::string method = q->is_object() ? q->value("quant_method", std::string()) : std::string();
    if (method != "fp8" || !q->contains("weight_block_size"))
      throw CheckpointError(path, "deepseek_v4: quantization '" + (method.empty() ? q->dump() : method) +
                                      "' is not read yet (bf16, block FP8 with MXFP4 experts and MLX affine are)");
  }
  auto reader = open_hf_weights(path);
  WeightSource src(*reader, backend);
  // transformers' saved names (model.embed_tokens, model.layers.N., model.norm, model.hc_head.hc_fn), or the
  // release's (embed, layers.N., norm, hc_head_fn; its key/value norm attn.kv_norm).
  const bool release = !src.has("model.embed_tokens.weight") && src.has("embed.weight");
  const std::string body = release ? "" : "model.";
  if (!release && !src.has(body + "embed_tokens.weight"))
    src.fail("no embedding found (model.embed_tokens.weight, or the release's embed.weight)");
  CompressedAttentionNames names;
  if (release) names.kv_norm = "kv_norm.weight";
  const auto wrapper = [&](const std::string& prefix, const std::string& norm) {
    return std::make_shared<const ManifoldHyperConnections>(ManifoldHyperConnections::load(
        src, prefix, norm, cfg.streams, cfg.hidden, cfg.sinkhorn_iters, cfg.hc_eps, cfg.eps));
  };

  DecoderWeights w;
  w.rms_eps = cfg.eps;
  w.streams = cfg.streams;
  w.embed = src.matrix(release ? "embed.weight" : body + "embed_tokens.weight", cfg.vocab, cfg.hidden);
  int host_rows = 0;
  for (std::int64_t i = 0; i < cfg.layers; ++i) {
    const std::string p = body + "layers." + std::to_string(i) + ".";
    const auto at = static_cast<std::size_t>(i);
    DecoderLayer l;
    CompressedAttentionConfig ac = cfg.attn;
    ac.branch = cfg.branch[at];
    ac.rate = ac.branch == Branch::Overlapping ? cfg.csa_rate : ac.branch == Branch::Pooled ? cfg.hca_rate : 1;
    // Sliding-only layers turn by the main rope, compressed ones (their window too) by the compress rope.
    ac.inv_freq = ac.branch == Branch::None ? cfg.main_freq : cfg.compress_freq;
    auto block = CompressedAttentionBlock::load(src, p + "attn.", ac, names);
    l.slot = host_rows;  // its recent rows, and its entries at the next slot
    host_rows += static_cast<int>(block.log_layers().size());
    l.mixer = std::move(block);
    l.mixer_hc = wrapper(p + "hc_attn_", p + "attn_norm.weight");
    MoeConfig mc = cfg.moe;
    if (cfg.hashed[at]) mc.token_experts_name = "gate.tid2eid";
    l.ffn = MoeBlock::load(src, p + "ffn.", mc);
    l.ffn_hc = wrapper(p + "hc_ffn_", p + "ffn_norm.weight");
    w.layers.push_back(std::move(l));
  }
  w.final_mixer = std::make_shared<const ManifoldHyperConnections>(
      ManifoldHyperConnections::learned_head(src, release ? "hc_head_" : body + "hc_head.hc_", body + "norm.weight",
                                             cfg.streams, cfg.hidden, cfg.hc_eps, cfg.eps));
  if (cfg.tied)
    w.output = w.embed;
  else if (!src.has("head.weight"))
    src.fail("missing tensor 'head.weight' (tie_word_embeddings is false)");
  else
    w.output = src.matrix("head.weight", cfg.vocab, cfg.hidden);

  ModelInfo info;
  info.family = "deepseek_v4";
  info.architecture = ck.config().value("model_type", std::string("deepseek_v4"));
  info.vocab = cfg.vocab;
  info.context = cfg.context;
  info.weight_bytes = src.bytes();
  return std::make_unique<DecoderModel>(backend, std::move(info), std::move(w));
}

}  // namespace tf
