#pragma once
// One stream's decode rounds as a step machine (ARCHITECTURE §4), so that a scheduler can advance many
// streams a round at a time: next_input() samples and emits the token the last round found and proposes
// drafts, returning the tokens this round must run; the caller runs them (one forward per stream,
// or one shared forward pass over several streams' inputs of a tick) and hands the result to accept(), which
// takes the drafts that equal the target's keyed samples and rolls the state back past the first mismatch.
// decode_stream() (decode_loop.h) is this machine driven in a loop: there is one definition of a round.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "engine/decode_settings.h"
#include "engine/generation.h"
#include "families/model.h"

namespace tf {

class DraftSource;

// The forward one round needs: `tokens` at positions state.length().., with every row's result. With
// `ids` the result is each row's token id chosen under `choice` on the backend (Model::forward_greedy or
// forward_sampled), else logits.
struct RoundInput {
  std::vector<std::int32_t> tokens;
  bool ids = false;
  TokenChoice choice;  // with ids: the stream's sampling settings and seed (ForwardPart::choice)
  bool ahead = false;  // ForwardPart::ahead: the next round will be the one token this one finds
  bool hidden = false;  // ForwardPart::hidden: the draft source reads the rows' hidden states
};

using RoundOutput = ForwardResult;  // [rows, vocab] logits, or [rows] greedy ids

// Runs one round's forward for one stream (a shared round of one part).
RoundOutput run_round(Model& model, SequenceState& state, const RoundInput& input);

class StreamDecoder {
 public:
  // `logits` is the distribution for position state.length() (the prefill's last row); `history` holds the
  // prompt. `settings.eos` must outlive the decoder. `on_token` returns false to end the stream (a stop
  // string completed). The state and drafts are the stream's own and must outlive the decoder.
  StreamDecoder(Model& model, SequenceState& state, std::vector<float> logits, std::vector<std::int32_t> history,
                const DecodeSettings& settings, DraftSource* drafts, std::function<bool(std::int32_t)> on_token);

  bool done() const { return done_; }
  FinishReason finish() const { return finish_; }
  // Emits the token at state.length() and returns the round's forward; nullopt when the stream ended
  // (EOS, budget or on_token) with that token.
  std::optional<RoundInput> next_input();
  // The forward's result for the input next_input() returned.
  void accept(RoundOutput output);
  // Ends the stream as cancelled (the caller polls its client between rounds).
  void cancel();

  const DecodeCounters& counters() const { return c_; }
  const std::vector<std::int32_t>& history() const { return history_; }
  std::vector<std::int32_t> take_history() { return std::move(history_); }
  // One record per emitted token when settings.logprobs >= 0 (appended before on_token sees the token).
  const std::vector<TokenLogprob>& logprobs() const { return logprobs_; }

 private:
  bool emit(std::int32_t t);  // false when the stream ends with it
  // The keyed sample of `row` at `position`, adjusted (bias, penalties) and masked by the constraint first,
  // for the tokens emitted so far; with logprobs on it also keeps the sample's record for emit().
  std::int32_t sample(std::span<float> row, std::int64_t position);
  bool processes_rows() const { return s_.constraint || (s_.adjust && s_.adjust->active()) || s_.logprobs >= 0; }
  void end(FinishReason r);

  SequenceState& state_;
  std::size_t vocab_;
  DecodeSettings s_;
  DraftSource* drafts_;
  std::function<bool(std::int32_t)> on_token_;
  std::vector<float> logits_;
  std::vector<std::int32_t> history_;
  std::size_t prompt_length_;
  bool hidden_;  // the draft source reads hidden rows (DraftSource::wants_hidden)
  bool ids_;  // tokens are chosen on the backend: rounds return ids, not logits
  int window_;                        // drafts per round
  std::optional<std::int32_t> next_;  // the token at state.length(), when the last round found it already
  std::int64_t round_start_ = 0;      // p: the position of the token the pending round starts with
  std::size_t proposed_ = 0;          // drafts in the pending round
  std::vector<std::int32_t> proposal_;
  DecodeCounters c_;
  std::vector<TokenLogprob> logprobs_;
  TokenLogprob pending_;  // the record of the last sample
  bool done_ = false;
  FinishReason finish_ = FinishReason::Length;
};

}  // namespace tf
