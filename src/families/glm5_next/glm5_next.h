#pragma once
#include <memory>
#include <string>

#include "families/model.h"

namespace tf {
class Backend;
// GLM-5.3-Flash text models (config.json model_type glm5_next, with text_config or flat; glm5_next_text): Kimi
// delta attention layers and latent attention layers with a KPool indexer (own or shared with the layer before),
// each followed by a dense MLP or sigmoid-routed experts with a shared expert, all inside manifold-constrained
// hyper-connections. Reads the Hugging Face layouts (model.language_model.* with the vision tower skipped, and
// model.*).
std::unique_ptr<Model> load_glm5_next(const std::string& path, bool is_gguf, Backend& backend);
}  // namespace tf
