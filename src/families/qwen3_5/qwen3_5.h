#pragma once
#include <memory>
#include <string>

#include "families/model.h"

namespace tf {
class Backend;
// Qwen3.5 / Qwen3.8 dense hybrids and Ternary Bonsai 2 (config.json model_type qwen3_5 with text_config, or
// qwen3_5_text): Gated DeltaNet layers and output-gated full attention (q/k norm, partial RoPE) in the plan
// `layer_types` gives, zero-centred RMSNorms, SwiGLU MLPs, tied or untied head. Reads Hugging Face and
// mlx-community layouts (bf16/f16/f32 safetensors, MLX affine of any bits, mixed per module).
std::unique_ptr<Model> load_qwen3_5(const std::string& path, bool is_gguf, Backend& backend);
}  // namespace tf
