#pragma once
#include <memory>
#include <string>

#include "families/model.h"

namespace tf {
class Backend;
// DeepSeek-V4 (config.json model_type deepseek_v4: V4-Flash and its shape): every layer a shared-KV attention over
// a sliding window plus, per layer_types, a compressed branch (blocks/compressed_attention.h), then experts routed
// by sqrtsoftplus scores or, on hash_moe layers, by a frozen token -> experts table, inside manifold-constrained
// hyper-connections with a learned head. Reads the names transformers' save_pretrained writes (the DeepSeek
// reference naming) in bf16, block FP8 with UE8M0 `.scale` tiles and MXFP4 experts.
std::unique_ptr<Model> load_deepseek_v4(const std::string& path, bool is_gguf, Backend& backend);
}  // namespace tf
