#pragma once
#include <cstdint>
#include <string>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace tf {

struct GgufHeader;

// Hyper-parameters of a llama-family checkpoint, from GGUF metadata or config.json.
struct LlamaConfig {
  std::int64_t layers = 0, hidden = 0, ffn = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0, context = 0;
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  bool rope_interleaved = false;      // GGUF stores Q/K permuted for pairwise (2i, 2i+1) rotation
  std::vector<float> rope_freq_factors;  // llama3 scaling, one per rotated pair; empty: none
  bool tied_embeddings = false;
};

LlamaConfig llama_config_from_gguf(const GgufHeader& h, const std::string& path);
LlamaConfig llama_config_from_json(const nlohmann::json& config, const std::string& path);

}  // namespace tf
