#pragma once
#include <memory>
#include <string>

#include "families/model.h"

namespace tf {
class Backend;
// The llama family (Llama 2/3, SmolLM2, ...): RMSNorm, RoPE, GQA attention over a KV cache, SwiGLU MLP,
// tied or untied output. Reads a GGUF file or an HF directory (bf16/f16/f32 or MLX affine).
std::unique_ptr<Model> load_llama(const std::string& path, bool is_gguf, Backend& backend);
}  // namespace tf
