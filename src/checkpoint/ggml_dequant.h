#pragma once
#include <cstdint>
#include <span>

#include "checkpoint/ggml_types.h"

namespace tf {

// Reference dequantization of GGUF tensor data to float32, with the same arithmetic (and so the same
// bits) as the `gguf` Python package: F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K. `out.size()` is the
// element count and must be a whole number of blocks matching `data.size()`. Throws std::invalid_argument
// for other types or a size mismatch.
void dequantize_ggml(GgmlType type, std::span<const std::uint8_t> data, std::span<float> out);

}  // namespace tf
