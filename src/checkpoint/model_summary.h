#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tf {

// What `tensorfold info` reports about a checkpoint, read from metadata and headers only.
struct ModelSummary {
  std::string path;
  std::string format;        // "gguf" or "safetensors"
  std::string architecture;  // GGUF general.architecture or config.json model_type
  std::string name;
  std::uint64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0, context = 0;
  std::string quantization;                           // e.g. "Q4_1" or "MLX affine 4-bit, group 64"
  std::vector<std::string> quantization_overrides;    // per-module MLX overrides, "path: 8-bit g64"
  std::map<std::string, std::uint64_t> tensor_types;  // dtype or ggml type -> tensor count
  std::uint64_t tensor_count = 0;
  std::uint64_t weight_bytes = 0;
  std::uint64_t attention_layers = 0;    // layers with a KV cache (all but linear-attention ones)
  std::uint64_t kv_bytes_per_token = 0;  // f16 K and V over the attention layers
  std::string kv_detail;                 // what kv_bytes_per_token holds, where it is not f16 K and V
  std::uint64_t recurrent_bytes = 0;     // float32 conv windows and states of linear-attention layers, per stream
  std::uint64_t recurrent_layers = 0;    // linear-attention (Gated DeltaNet, Mamba-2) layers
  // Sliding-window attention layers (not in kv_bytes_per_token): their f16 K and V over the window, per stream.
  std::uint64_t window_layers = 0, window = 0, window_bytes = 0;
  std::string experts;           // mixture-of-experts layers: experts, top-k and routed parameters, total and active
  std::uint64_t parameters = 0;  // every weight's values (a quantized weight's codes count as values)
  std::uint64_t mtp_parameters = 0;  // of them, the MTP head's (`mtp.*`), which runs only to draft
  std::uint64_t vision_parameters = 0;  // of them, the vision tower's (`model.visual.*`), run with serve --vision
  std::uint64_t routed_parameters = 0, active_routed_parameters = 0;  // the routed experts', all and per token
  std::string serving;  // which family serves it and where (filled in by the CLI)
  bool has_chat_template = false;
  std::string tokenizer;  // "gpt2 (GGUF)", "tokenizer.json", or ""

  // Weights plus a full-context f16 KV cache: the floor for serving one stream at `context` tokens.
  std::uint64_t memory_estimate() const {
    return weight_bytes + kv_bytes_per_token * context + recurrent_bytes + window_bytes;
  }
};

// A GGUF file or a checkpoint directory (config.json + safetensors). Throws CheckpointError.
ModelSummary summarize_model(const std::string& path);

// Human-readable lines for the CLI.
std::string format_summary(const ModelSummary& s);
std::string format_bytes(std::uint64_t bytes);

}  // namespace tf
