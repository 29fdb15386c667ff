// The llama family: a config reader (GGUF metadata or config.json) and a layer plan of plain attention and
// SwiGLU blocks over the shared decoder (families/decoder_model.h).
#include "families/llama/llama.h"

#include <array>
#include <cstring>
#include <utility>

#include "backends/backend.h"
#include "blocks/weight_source.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/decoder_model.h"
#include "families/llama/llama_config.h"

namespace tf {
namespace {

// GGUF's names for the Hugging Face names the blocks use.
std::string gguf_name(const std::string& hf) {
  static const std::array<std::pair<const char*, const char*>, 3> top{{
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  }};
  for (const auto& [from, to] : top)
    if (hf == from) return to;
  static const std::array<std::pair<const char*, const char*>, 9> layer{{
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  }};
  const std::string prefix = "model.layers.";
  if (hf.starts_with(prefix)) {
    const auto dot = hf.find('.', prefix.size());
    const std::string index = hf.substr(prefix.size(), dot - prefix.size()), rest = hf.substr(dot + 1);
    for (const auto& [from, to] : layer)
      if (rest == from) return "blk." + index + "." + to;
  }
  return hf;
}

}  // namespace

std::unique_ptr<Model> load_llama(const std::string& path, bool is_gguf, Backend& backend) {
  std::unique_ptr<WeightReader> reader;
  LlamaConfig cfg;
  ModelInfo info;
  info.family = "llama";
  if (is_gguf) {
    GgufFile f(path);
    cfg = llama_config_from_gguf(f.header(), path);
    info.architecture = f.header().get_string("general.architecture").value_or("llama");
    reader = open_gguf_weights(path);
    if (reader->has("rope_freqs.weight")) {
      auto rf = reader->read("rope_freqs.weight");
      cfg.rope_freq_factors.resize(rf.data.size() / 4);
      std::memcpy(cfg.rope_freq_factors.data(), rf.data.data(), rf.data.size());
    }
  } else {
    HfCheckpoint ck(path);
    cfg = llama_config_from_json(ck.config(), path);
    info.architecture = ck.config().value("model_type", std::string("llama"));
    reader = open_hf_weights(path);
  }
  WeightSource src(*reader, backend, is_gguf ? std::function<std::string(const std::string&)>(gguf_name) : nullptr);

  AttentionConfig ac;
  ac.hidden = cfg.hidden;
  ac.spec = attention_spec(cfg.heads, cfg.kv_heads, cfg.head_dim);
  ac.rope.base = cfg.rope_base;
  ac.rope.interleaved = cfg.rope_interleaved;
  ac.rope.freq_factors = cfg.rope_freq_factors;

  DecoderWeights w;
  w.rms_eps = cfg.rms_eps;
  w.embed = src.matrix("model.embed_tokens.weight", cfg.vocab, cfg.hidden);
  for (std::int64_t i = 0; i < cfg.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    DecoderLayer l;
    l.input_norm = src.vector(p + "input_layernorm.weight", cfg.hidden);
    l.mixer = AttentionBlock::load(src, p + "self_attn.", ac);
    l.slot = static_cast<int>(i);
    l.post_norm = src.vector(p + "post_attention_layernorm.weight", cfg.hidden);
    l.ffn = SwiGluMlp::load(src, p + "mlp.", cfg.hidden, cfg.ffn);
    w.layers.push_back(std::move(l));
  }
  w.final_norm = src.vector("model.norm.weight", cfg.hidden);
  // Tied (or no output weight): the embedding table is the output projection.
  w.output = !cfg.tied_embeddings && src.has("lm_head.weight") ? src.matrix("lm_head.weight", cfg.vocab, cfg.hidden) : w.embed;
  info.vocab = cfg.vocab;
  info.context = cfg.context;
  info.weight_bytes = src.bytes();
  return std::make_unique<DecoderModel>(backend, std::move(info), std::move(w));
}

}  // namespace tf
