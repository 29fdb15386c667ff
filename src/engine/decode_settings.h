#pragma once
// What one stream's decode rounds are asked to do (DecodeSettings) and what they did (DecodeCounters): shared by
// the step machine (stream_decoder.h) and the loop that drives it (decode_loop.h).
#include <cstdint>
#include <span>

#include "engine/logit_adjust.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"

namespace tf {

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
  // Bias and penalties applied to each row before the constraint's mask (logit_adjust.h); null: none.
  const LogitAdjustments* adjust = nullptr;
  // >= 0: each emitted token's log-probability and this many alternatives are recorded (TokenLogprob).
  int logprobs = -1;
};

struct DecodeCounters {
  std::int64_t drafted = 0, accepted = 0, rounds = 0, emitted = 0;
};

}  // namespace tf
