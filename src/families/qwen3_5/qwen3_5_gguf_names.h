#pragma once
#include <cstdint>
#include <string>

namespace tf {

// llama.cpp's `qwen35` tensor name for a Hugging Face name the qwen3_5 layer plan reads (text-only layout:
// model.layers.N..., model.embed_tokens/norm, lm_head, and the MTP head's mtp.*, which convert_hf_to_gguf
// stores as block `layers` + its index, blk.L.nextn.* for the fusion and the shared head's norm). A name
// without a GGUF counterpart comes back unchanged, so the reader's "no tensor" error names it.
std::string qwen3_5_gguf_name(const std::string& hf, std::int64_t layers);

}  // namespace tf
