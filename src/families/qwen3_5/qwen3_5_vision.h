#pragma once
#include <memory>
#include <string>

#include "families/image_encoder.h"

namespace tf {
// The vision tower of a Qwen3.5 / Qwen3.8 checkpoint in Hugging Face's layout (config.json vision_config,
// weights model.visual.*, preprocessor_config.json beside them), or null when config.json has no vision_config.
std::unique_ptr<ImageEncoder> load_qwen3_5_image_encoder(const std::string& path, Backend& backend);
}  // namespace tf
