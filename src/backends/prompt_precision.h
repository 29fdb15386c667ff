#pragma once
// How prompt rows are multiplied by quantized weights where a backend has a prompt path of its own (CUDA's
// prefill GEMM: calls of more than Backend::invariant_rows() rows, i.e. prefill chunks). Decode and verify
// rows never take it, so drafted == serial == concurrent == resumed hold in either mode.
//   Bf16: x rounded once to bf16 (8 significant bits), the exact weights (codes on the tensor cores, scale and
//         offset once a group in float32), float32 accumulation: one tensor-core pass. What vLLM ships for
//         prompts; the reference TensorFold's default.
//   Full: x carried to 16 significant bits as two bf16 terms, every product exact: two passes, float32-close.
#include <optional>
#include <string>
#include <string_view>

namespace tf {

enum class PromptPrecision { Bf16, Full };

inline const char* prompt_precision_name(PromptPrecision p) { return p == PromptPrecision::Full ? "full" : "bf16"; }

// "bf16" or "full"; anything else is nullopt.
inline std::optional<PromptPrecision> parse_prompt_precision(std::string_view s) {
  if (s == "bf16") return PromptPrecision::Bf16;
  if (s == "full") return PromptPrecision::Full;
  return std::nullopt;
}

}  // namespace tf
