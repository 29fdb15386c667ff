// The qwen4_exp family (Qwen3.8 Flash Next): its config reader and its layer plan over the shared blocks
// (families-and-formats §1.3, §1.5-1.7, §2.3). Every layer is [n-gram embedding] -> hyper-connected mixer (Gated
// DeltaNet, or sparse attention with an indexer) -> hyper-connected experts with a gated shared expert; there are
// no pre-norms (each wrapper norms its streams) and no final norm (the final mixer makes the row lm_head reads).
// Key layouts: model.language_model.* (Qwen4ExpForConditionalGeneration; model.visual.* skipped) or model.*
// (Qwen4ExpForCausalLM), lm_head.weight; or mlx-lm's conventions (language_model.model.*, experts stacked in
// switch_mlp, MLX affine codes, norms with their + 1); the n-gram tables as ...ngram_embedding.shard_N.weight,
// float or affine codes, read from the mapped file.
// The mtp.* head is not read yet (transformers ignores it too: no reference to check it against).
#include "families/qwen4_exp/qwen4_exp.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "backends/backend.h"
#include "blocks/weight_source.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/config_reader.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/decoder_model.h"

namespace tf {
namespace {

struct Qwen4ExpConfig {
  std::int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, context = 0;
  float eps = 1e-6f, rope_theta = 1e7f;
  int rotary_dims = 0;
  bool tied = false, sigmoid_output_gate = false;
  GatedDeltaSpec gdn;
  std::vector<bool> indexed;  // per layer: sparse attention, else Gated DeltaNet
  MoeConfig moe;
  int streams = 0;
  std::int64_t hc_rank = 0;
  SparseAttentionConfig sparse;
  std::vector<std::int64_t> ple_layers;  // one-indexed, ascending
  NgramHashSpec ngram;
  std::int64_t ple_dim = 0, ple_kernel = 4, ple_shards = 1;
};

Qwen4ExpConfig read_config(const nlohmann::json& top, const std::string& path) {
  const nlohmann::json& text = text_config(top);
  const ConfigReader r(text, path + "/config.json");
  Qwen4ExpConfig c;
  c.vocab = r.integer("vocab_size");
  c.hidden = r.integer("hidden_size");
  c.layers = r.integer("num_hidden_layers");
  c.heads = r.integer("num_attention_heads");
  c.kv_heads = r.integer("num_key_value_heads", c.heads);
  c.head_dim = r.integer("head_dim", c.hidden / c.heads);
  c.context = r.integer("max_position_embeddings", 32768);
  c.eps = static_cast<float>(r.number("rms_norm_eps", 1e-6));
  c.tied = r.flag("tie_word_embeddings", top.value("tie_word_embeddings", false));
  if (c.heads % c.kv_heads != 0) r.fail("num_attention_heads must be a multiple of num_key_value_heads");
  if (r.flag("attention_bias", false)) r.fail("'attention_bias' true is not read yet");
  const std::string act = r.text("hidden_act", "silu");
  if (act != "silu") r.fail("hidden_act '" + act + "' is not read (silu is)");
  const std::string gate = r.text("output_gate_type", act);  // the linear-attention output norm's gate
  if (gate != "silu" && gate != "sigmoid") r.fail("output_gate_type '" + gate + "' is not read (silu or sigmoid)");
  c.sigmoid_output_gate = gate == "sigmoid";
  const auto rp = text.find("rope_parameters");
  const nlohmann::json& rope = rp != text.end() && rp->is_object() ? *rp : text;
  if (const std::string type = rope.value("rope_type", std::string("default")); type != "default")
    r.fail("rope type '" + type + "' is not supported for qwen4_exp yet");
  c.rope_theta = static_cast<float>(r.number(rope, "rope_theta", 1e7));
  const double rot = static_cast<double>(c.head_dim) * r.number(rope, "partial_rotary_factor", 1.0);
  c.rotary_dims = static_cast<int>(rot);
  if (rot <= 0.0 || rot > static_cast<double>(c.head_dim) || rot != static_cast<double>(c.rotary_dims) ||
      c.rotary_dims % 2 != 0)
    r.fail("partial_rotary_factor must give an even number of rotary dimensions of head_dim");
  c.gdn.k_heads = static_cast<int>(r.integer("linear_num_key_heads"));
  c.gdn.v_heads = static_cast<int>(r.integer("linear_num_value_heads"));
  c.gdn.k_dim = static_cast<int>(r.integer("linear_key_head_dim"));
  c.gdn.v_dim = static_cast<int>(r.integer("linear_value_head_dim"));
  c.gdn.conv_kernel = static_cast<int>(r.integer("linear_conv_kernel_dim", 4));
  if (c.gdn.v_heads % c.gdn.k_heads != 0) r.fail("linear_num_value_heads must be a multiple of linear_num_key_heads");

  // Layers: linear_attention or indexed_attention (the released configs say full_attention for the latter).
  if (auto lt = text.find("layer_types"); lt != text.end() && !lt->is_null()) {
    if (!lt->is_array() || static_cast<std::int64_t>(lt->size()) != c.layers)
      r.fail("'layer_types' must list num_hidden_layers (" + std::to_string(c.layers) + ") entries");
    for (const auto& t : *lt) {
      const std::string s = t.is_string() ? t.get<std::string>() : std::string();
      if (s != "linear_attention" && s != "indexed_attention" && s != "full_attention")
        r.fail("'layer_types' entries must be linear_attention, indexed_attention or full_attention, not " + t.dump());
      c.indexed.push_back(s != "linear_attention");
    }
  } else {
    const std::int64_t every = r.integer("full_attention_interval", 4);
    for (std::int64_t i = 0; i < c.layers; ++i) c.indexed.push_back((i + 1) % every == 0);
  }

  c.moe.hidden = c.hidden;
  c.moe.ffn = r.integer("moe_intermediate_size");
  c.moe.shared_ffn = r.integer("shared_expert_intermediate_size");
  c.moe.shared_name = "shared_expert.";
  c.moe.shared_expert_gate = true;
  c.moe.router.experts = static_cast<int>(r.integer("num_experts"));
  c.moe.router.top_k = static_cast<int>(r.integer("num_experts_per_tok"));
  c.moe.router.norm_top_k = r.flag("norm_topk_prob", true);
  if (c.moe.router.top_k > c.moe.router.experts) r.fail("num_experts_per_tok must be at most num_experts");

  c.streams = static_cast<int>(r.integer("hc_count", 4));
  if (c.streams < 2) r.fail("'hc_count' must be at least 2");
  c.hc_rank = r.integer("hc_lowrank", 320);

  SparseAttentionConfig& s = c.sparse;
  s.index_heads = static_cast<int>(r.integer("indexer_n_heads"));
  if (r.integer("indexer_kv_heads") != 1) r.fail("'indexer_kv_heads' must be 1 (one index key head)");
  s.index_head_dim = static_cast<int>(r.integer("indexer_head_dim"));
  s.budget = static_cast<int>(r.integer("indexer_budget"));
  s.compress_ratio = static_cast<int>(r.integer("indexer_compress_ratio"));
  if (s.budget % s.compress_ratio != 0) r.fail("'indexer_budget' must be a multiple of indexer_compress_ratio");
  if (c.rotary_dims > s.index_head_dim) r.fail("the rotary dimensions must fit indexer_head_dim");

  if (auto ids = text.find("ple_layer_ids"); ids != text.end() && !ids->is_null()) {
    if (!ids->is_array()) r.fail("'ple_layer_ids' must be a list of layer numbers");
    for (const auto& v : *ids) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > c.layers)
        r.fail("'ple_layer_ids' entries must be layer numbers 1.." + std::to_string(c.layers));
      if (c.indexed[static_cast<std::size_t>(v.get<std::int64_t>() - 1)])
        r.fail("'ple_layer_ids' may name linear_attention layers only");
      c.ple_layers.push_back(v.get<std::int64_t>());
    }
    std::sort(c.ple_layers.begin(), c.ple_layers.end());
    c.ple_layers.erase(std::unique(c.ple_layers.begin(), c.ple_layers.end()), c.ple_layers.end());
  }
  if (!c.ple_layers.empty()) {
    NgramHashSpec& g = c.ngram;
    g.ngram_size = static_cast<int>(r.integer("ngram_size", 3));
    g.heads_per_ngram = static_cast<int>(r.integer("heads_per_ngram", 8));
    if (g.ngram_size < 2) r.fail("'ngram_size' must be at least 2");
    g.vocab = c.vocab;
    g.vocab_base = r.integer("ngram_vocab_size_base", 20000000);
    g.divisor = r.integer("make_ngram_vocab_size_divisible_by", 128);
    g.seed = r.count("seed", 1234);
    c.ple_dim = r.integer("ple_embed_dim", c.hidden);
    if (c.ple_dim % g.heads() != 0) r.fail("'ple_embed_dim' must be a multiple of (ngram_size - 1) * heads_per_ngram");
    c.ple_kernel = r.integer("ple_conv_kernel_size", 4);
    c.ple_shards = r.integer("split_ngram_parts", 512);
    const auto eos = text.find("eos_token_id");
    const nlohmann::json* e = eos != text.end() && eos->is_array() && !eos->empty() ? &(*eos)[0]
                              : eos != text.end()                                   ? &*eos
                                                                                    : nullptr;
    if (e == nullptr || !e->is_number_integer() || e->get<std::int64_t>() < 0 || e->get<std::int64_t>() >= c.vocab)
      r.fail("'eos_token_id' must be a token id: the n-gram windows restart after it");
    g.eos = static_cast<std::int32_t>(e->get<std::int64_t>());
  }
  return c;
}

}  // namespace

std::unique_ptr<Model> load_qwen4_exp(const std::string& path, bool is_gguf, Backend& backend) {
  if (is_gguf) throw CheckpointError(path, "qwen4_exp GGUF files are not read yet: use a safetensors directory");
  if (!backend.has_linear_attention() || !backend.has_state_space())
    throw CheckpointError(path, "qwen4_exp needs linear-attention layers and grouped norms, which the " +
                                    backend.name() + " backend does not run yet: use --backend mlx");
  const auto ck = std::make_shared<const HfCheckpoint>(path);  // the n-gram tables are read from its mappings
  const Qwen4ExpConfig cfg = read_config(ck->config(), path);
  auto reader = open_hf_weights(path);
  // mlx-lm's conventions (language_model.model.*, language_model.lm_head): norms stored with their + 1 and the
  // conv kernels as [C, K, 1], which is how mlx-lm itself tells a converted checkpoint; the GDN's gated norm is
  // a plain multiplier in both layouts.
  std::string body, head = "lm_head.weight";
  bool zero_centred = true;
  for (const auto& [b, h] : {std::pair<std::string, std::string>{"model.language_model.", "lm_head.weight"},
                             {"model.", "lm_head.weight"},
                             {"language_model.model.", "language_model.lm_head.weight"}})
    if (reader->has(b + "embed_tokens.weight")) {
      body = b;
      head = h;
      break;
    }
  if (body.empty())
    throw CheckpointError(path,
                          "no embedding found (model.language_model.embed_tokens.weight, model.embed_tokens.weight "
                          "or language_model.model.embed_tokens.weight)");
  for (std::int64_t i = 0; i < cfg.layers; ++i)
    if (!cfg.indexed[static_cast<std::size_t>(i)]) {
      const auto conv = reader->read(body + "layers." + std::to_string(i) + ".linear_attn.conv1d.weight");
      zero_centred = !(conv.shape.size() == 3 && conv.shape[2] == 1 && cfg.gdn.conv_kernel > 1);
      break;
    }
  WeightSource src(*reader, backend);

  SparseAttentionConfig sc = cfg.sparse;
  AttentionConfig& ac = sc.attention;
  ac.hidden = cfg.hidden;
  ac.spec = attention_spec(cfg.heads, cfg.kv_heads, cfg.head_dim);
  ac.rope.base = cfg.rope_theta;
  ac.rope.rotary_dims = cfg.rotary_dims;
  ac.qk_norm = ac.output_gate = true;
  ac.zero_centred_qk_norm = sc.zero_centred_index_norms = zero_centred;
  ac.norm_eps = cfg.eps;
  const GatedDeltaConfig gc{
      .hidden = cfg.hidden, .spec = cfg.gdn, .norm_eps = cfg.eps, .sigmoid_output_gate = cfg.sigmoid_output_gate};
  const auto wrapper = [&](const std::string& prefix, bool inject) {
    return std::make_shared<const HyperConnections>(
        HyperConnections::load(src, prefix, cfg.streams, cfg.hidden, cfg.hc_rank, cfg.eps, inject, zero_centred));
  };

  DecoderWeights w;
  w.rms_eps = cfg.eps;
  w.streams = cfg.streams;
  w.embed = src.matrix(body + "embed_tokens.weight", cfg.vocab, cfg.hidden);
  int recurrent = 0, host_rows = 0;
  for (std::int64_t i = 0; i < cfg.layers; ++i) {
    const std::string p = body + "layers." + std::to_string(i) + ".";
    DecoderLayer l;
    if (cfg.indexed[static_cast<std::size_t>(i)]) {
      l.mixer = SparseAttentionBlock::load(src, p + "self_attn.", sc);
      l.slot = host_rows++;
    } else {
      l.mixer = GatedDeltaBlock::load(src, p + "linear_attn.", gc);
      l.slot = recurrent++;
    }
    l.mixer_hc = wrapper(p + "attn_hyper_connection.", true);
    l.ffn = MoeBlock::load(src, p + "mlp.", cfg.moe);
    l.ffn_hc = wrapper(p + "mlp_hyper_connection.", true);
    w.layers.push_back(std::move(l));
  }
  // The n-gram layers take the host-row slots after the attention layers'.
  // Their tables stay in the mapped file (NgramTable): not in weight_bytes, which counts what the backend holds.
  for (std::size_t k = 0; k < cfg.ple_layers.size(); ++k) {
    NgramEmbeddingConfig nc;
    nc.hash = cfg.ngram;
    nc.hash.layer_index = static_cast<int>(k);
    nc.streams = cfg.streams;
    nc.hidden = cfg.hidden;
    nc.embed_dim = cfg.ple_dim;
    nc.conv_kernel = static_cast<int>(cfg.ple_kernel);
    nc.eps = cfg.eps;
    nc.zero_centred_norms = zero_centred;
    const std::int64_t layer = cfg.ple_layers[k] - 1;
    auto block =
        NgramEmbeddingBlock::load(src, ck, body + "layers." + std::to_string(layer) + ".ple.", nc, cfg.ple_shards);
    block.slot = host_rows++;
    w.layers[static_cast<std::size_t>(layer)].ngrams = std::make_shared<const NgramEmbeddingBlock>(std::move(block));
  }
  w.final_mixer = wrapper(body + "hyper_connection_mixer.", false);
  if (cfg.tied)
    w.output = w.embed;
  else if (!src.has(head))
    src.fail("missing tensor '" + head + "' (tie_word_embeddings is false)");
  else
    w.output = src.matrix(head, cfg.vocab, cfg.hidden);

  ModelInfo info;
  info.family = "qwen4_exp";
  info.architecture = ck->config().value("model_type", std::string("qwen4_exp"));
  info.vocab = cfg.vocab;
  info.context = cfg.context;
  info.weight_bytes = src.bytes();
  for (const auto& l : w.layers)
    if (l.ngrams) info.mapped_bytes += l.ngrams->table.bytes();
  return std::make_unique<DecoderModel>(backend, std::move(info), std::move(w), cfg.gdn);
}

}  // namespace tf
