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
  // Whether the source reads the stream's hidden rows: then every forward of the stream (prefill chunks and
  // rounds) asks for them (ForwardPart::hidden) and hands them to observe().
  virtual bool wants_hidden() const { return false; }
  // The hidden rows [rows, width] of a forward that ran positions start .. start + rows - 1 of the stream,
  // of which the first `kept` stay (the state was truncated to start + kept). `history` holds the stream's
  // tokens known so far (at least those up to start + kept - 1).
  virtual void observe(std::span<const std::int32_t> /*history*/, std::int64_t /*start*/,
                       std::span<const float> /*hidden*/, std::int64_t /*kept*/) {}
};

}  // namespace tf
