#pragma once
#include <memory>
#include <string>

#include "families/model.h"

namespace tf {
class Backend;
// Gemma 4 text models (config.json model_type gemma4 with text_config, or gemma4_text): sliding-window and
// full attention layers of their own head shapes (k_eq_v, q/k/v norms, proportional RoPE on full layers),
// sandwich norms, a gelu-tanh MLP beside a mixture of experts, per-layer scalars, scaled embeddings and
// soft-capped logits. Reads the Hugging Face layouts (model.language_model.* with the vision tower skipped, and
// model.*); per-layer input embeddings and KV sharing (E2B/E4B) are refused with one line.
std::unique_ptr<Model> load_gemma4(const std::string& path, bool is_gguf, Backend& backend);
}  // namespace tf
