#pragma once
#include <memory>
#include <string>

#include "families/model.h"

namespace tf {
class Backend;
// Nemotron-H hybrids (config.json model_type nemotron_h: Nemotron 3 Nano, Nemotron 3.5 Lightning): a plan of
// single-block layers from `layers_block_type` (or the legacy `hybrid_override_pattern` M * E -): Mamba-2
// mixers, attention without RoPE, squared-ReLU MLPs and sigmoid-routed experts with a shared expert; plain
// RMSNorms. Reads the Hugging Face layout (backbone.* or model.*, per-expert or stacked experts) and
// mlx-community's (switch_mlp stacks), bf16/f16/f32 or MLX affine of any bits, mixed per module; the MTP head
// (mtp.layers.N, Hugging Face checkpoints) as the model's draft head.
std::unique_ptr<Model> load_nemotron_h(const std::string& path, bool is_gguf, Backend& backend);
}  // namespace tf
