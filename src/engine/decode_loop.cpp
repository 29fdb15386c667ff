#include "engine/decode_loop.h"

#include "engine/stream_decoder.h"

namespace tf {

// The step machine of stream_decoder.h driven to the end: one stream, one forward per round.
FinishReason decode_stream(Model& model, SequenceState& state, std::vector<float> logits,
                           std::vector<std::int32_t>& history, const DecodeSettings& s, DraftSource* drafts,
                           const std::function<bool(std::int32_t)>& on_token, const std::function<bool()>& cancelled,
                           DecodeCounters& c) {
  StreamDecoder d(model, state, std::move(logits), std::move(history), s, drafts, on_token);
  while (!d.done()) {
    if (cancelled()) {
      d.cancel();
      break;
    }
    const auto input = d.next_input();
    if (!input) break;
    d.accept(run_round(model, state, *input));
  }
  history = d.take_history();
  c.drafted += d.counters().drafted;
  c.accepted += d.counters().accepted;
  c.rounds += d.counters().rounds;
  c.emitted += d.counters().emitted;
  return d.finish();
}

}  // namespace tf
