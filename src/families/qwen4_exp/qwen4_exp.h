#pragma once
#include <memory>
#include <string>

#include "families/model.h"

namespace tf {
class Backend;
// Qwen3.8 Flash Next text models (config.json model_type qwen4_exp with text_config, or qwen4_exp_text): Gated
// DeltaNet layers and sparse attention layers with an indexer, each followed by experts with a gated shared
// expert, all wrapped in hyper-connections, with hashed n-gram embeddings before some linear layers. Reads the
// Hugging Face layouts (model.language_model.* with the vision tower skipped, and model.*).
std::unique_ptr<Model> load_qwen4_exp(const std::string& path, bool is_gguf, Backend& backend);
}  // namespace tf
