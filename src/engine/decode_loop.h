#pragma once
// The decode loop of one stream, serial or with drafts (ARCHITECTURE §4). A draft is accepted iff it
// equals the keyed sample of the verify logits at its position; at the first mismatch the target's own
// token is taken and the state rolls back to the accepted length. With row-invariant forward passes this
// emits exactly the tokens of serial decoding.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/decode_settings.h"
#include "engine/generation.h"

namespace tf {

class Model;
class SequenceState;
class DraftSource;

// `logits` is the distribution for position state.length(); `history` holds the prompt (the loop appends
// what it emits). `on_token` returns false to stop (a stop string completed); `cancelled` is polled once per
// round. Returns Stop (EOS or on_token), Length (budget) or Cancelled.
FinishReason decode_stream(Model& model, SequenceState& state, std::vector<float> logits,
                           std::vector<std::int32_t>& history, const DecodeSettings& settings, DraftSource* drafts,
                           const std::function<bool(std::int32_t)>& on_token, const std::function<bool()>& cancelled,
                           DecodeCounters& counters);

}  // namespace tf
