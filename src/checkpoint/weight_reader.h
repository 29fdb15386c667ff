#pragma once
// Reads named weights out of a checkpoint as backend-neutral HostWeights. The family decides the names;
// the reader decides how the bytes decode (GGUF block types, safetensors floats, MLX affine triples).
#include <memory>
#include <optional>
#include <string>

#include "checkpoint/host_weight.h"

namespace tf {

class WeightReader {
 public:
  virtual ~WeightReader() = default;
  virtual bool has(const std::string& name) const = 0;
  // Throws CheckpointError when the weight is missing or cannot be decoded.
  virtual HostWeight read(const std::string& name) const = 0;
  virtual std::string path() const = 0;
};

// A GGUF file: Q4_0, Q4_1 and Q8_0 become affine group-32 weights (codes repacked, scale d, bias from the
// block's offset), F32/F16/BF16 stay dense, other block types (Q4_K, Q6_K, ...) are dequantized to F32.
std::unique_ptr<WeightReader> open_gguf_weights(const std::string& path);

// A checkpoint directory: dense F32/F16/BF16 safetensors, and MLX affine modules (`P.weight` uint32 with
// `P.scales`/`P.biases`, bits and group from config.json `quantization`, per-module overrides honoured).
std::unique_ptr<WeightReader> open_hf_weights(const std::string& dir);

}  // namespace tf
