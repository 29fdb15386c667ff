#pragma once
// The decode loop of one stream, serial or with drafts (ARCHITECTURE §4). A draft is accepted iff it
// equals the keyed sample of the verify logits at its position; at the first mismatch the target's own
// token is taken and the state rolls back to the accepted length. With row-invariant forward passes this
// emits exactly the tokens of serial decoding.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/generation.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"

namespace tf {

class Model;
class SequenceState;
class DraftSource;

struct DecodeSettings {
  SamplingParams sampling;
  std::uint64_t seed = 0;
  std::int64_t budget = 0;                  // tokens to emit at most (max_tokens clipped to the context)
  std::span<const std::int32_t> eos;        // sorted; sampling one ends the stream (it is not emitted)
  int max_drafts = 0;                       // 0: serial
  // Propose max_drafts every round (a backend whose verify costs about one decode step, whatever the
  // width), rather than adapting the window to recent acceptance (a backend whose cost grows with rows).
  bool full_windows = false;
  // Masks each row before it is sampled, by the tokens generated before that row (token_constraint.h); the
  // rows then come back as logits, never as backend greedy ids.
  const TokenConstraint* constraint = nullptr;
};

struct DecodeCounters {
  std::int64_t drafted = 0, accepted = 0, rounds = 0, emitted = 0;
};

// `logits` is the distribution for position state.length(); `history` holds the prompt (the loop appends
// what it emits). `on_token` returns false to stop (a stop string completed); `cancelled` is polled once per
// round. Returns Stop (EOS or on_token), Length (budget) or Cancelled.
FinishReason decode_stream(Model& model, SequenceState& state, std::vector<float> logits,
                           std::vector<std::int32_t>& history, const DecodeSettings& settings, DraftSource* drafts,
                           const std::function<bool(std::int32_t)>& on_token, const std::function<bool()>& cancelled,
                           DecodeCounters& counters);

}  // namespace tf
