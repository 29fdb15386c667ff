#pragma once
// A draft source proposes tokens that may follow a stream; the target model verifies them (decode_loop).
// Sources are per stream and need not be thread-safe.
#include <cstdint>
#include <span>
#include <vector>

namespace tf {

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // Up to `max_tokens` tokens that might follow `history` (the prompt and every token emitted so far).
  virtual std::vector<std::int32_t> propose(std::span<const std::int32_t> history, int max_tokens) = 0;
};

}  // namespace tf
