#include "engine/memory_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

namespace tf {

std::size_t MemoryPlan::request_bytes(std::int64_t tokens) const {
  return static_cast<std::size_t>(std::max<std::int64_t>(tokens, 0)) * state_bytes_per_token + state_bytes_per_stream +
         workspace_bytes;
}

std::int64_t MemoryPlan::max_tokens_alone() const {
  const auto room = stream_room();
  if (room <= workspace_bytes + state_bytes_per_stream) return 0;
  if (state_bytes_per_token == 0) return INT64_MAX;
  return static_cast<std::int64_t>((room - workspace_bytes - state_bytes_per_stream) / state_bytes_per_token);
}

std::size_t prefill_workspace_bytes(std::int64_t prefill_chunk, std::size_t state_bytes_per_token, std::int64_t vocab,
                                    int window_rows) {
  // A chunk's hidden states, attention and MLP activations are a small multiple of the keys and values it
  // writes; 4x is a deliberate overestimate (the budget must hold, not be tight).
  constexpr std::size_t kActivationFactor = 4;
  const auto chunk = static_cast<std::size_t>(std::max<std::int64_t>(prefill_chunk, 1));
  return chunk * state_bytes_per_token * kActivationFactor +
         static_cast<std::size_t>(std::max(window_rows, 1)) * static_cast<std::size_t>(std::max<std::int64_t>(vocab, 0)) * 4;
}

std::size_t memory_limit_from_env() {
  const char* v = std::getenv("TENSORFOLD_MEMORY_LIMIT_GB");
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const double gib = std::strtod(v, &end);
  if (end == v || *end != '\0' || !std::isfinite(gib) || gib <= 0.0)
    throw std::runtime_error(std::string("TENSORFOLD_MEMORY_LIMIT_GB must be a positive number of GiB, not '") + v + "'");
  return static_cast<std::size_t>(gib * 1024.0 * 1024.0 * 1024.0);
}

}  // namespace tf
