#pragma once
// The qwen3_5 family's hyper-parameters, from config.json (model_type qwen3_5 / qwen3_5_text) or from a GGUF
// header (llama.cpp's arch `qwen35`, as convert_hf_to_gguf writes it).
#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace tf {

struct GgufHeader;

struct Qwen35Config {
  std::int64_t vocab = 0, hidden = 0, ffn = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, context = 0;
  float rms_eps = 1e-6f;
  float rope_theta = 10000.0f;
  int rotary_dims = 0;  // the leading dims of each head that RoPE turns (partial_rotary_factor * head_dim)
  std::array<int, 3> mrope_section{0, 0, 0};  // interleaved M-RoPE sections (used where a stream has images)
  bool output_gate = true;
  bool tied = false;
  GatedDeltaSpec gdn;
  std::vector<bool> full_attention;  // per layer: full attention, else Gated DeltaNet
  std::int64_t mtp_layers = 1;       // MTP layers, where the checkpoint holds the MTP head's weights
};

// `top` is config.json (a multimodal wrapper's text_config is read); `path` the checkpoint directory.
Qwen35Config qwen3_5_config_from_json(const nlohmann::json& top, const std::string& path);
// The `qwen35.*` keys; the GGUF's value heads are tiled over the key heads (GatedDeltaSpec). The MTP layers
// are the last nextn_predict_layers of block_count.
Qwen35Config qwen3_5_config_from_gguf(const GgufHeader& h, const std::string& path);

}  // namespace tf
