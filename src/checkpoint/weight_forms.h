#pragma once
// Conversions between a HostWeight's forms (host_weight.h) for backends that do not read GGUF blocks.
#include "checkpoint/host_weight.h"

namespace tf {

// The weight in a form every backend reads: GGUF Q4_0, Q4_1 and Q8_0 blocks become 4/8-bit affine groups of
// 32 (float32 scale and bias per block, the same values), other GGUF block types dense float32 (the reference
// dequantization, ggml_dequant.h); dense and affine weights come back unchanged.
HostWeight portable_weight(HostWeight w);

}  // namespace tf
