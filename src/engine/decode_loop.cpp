#include "engine/decode_loop.h"

#include <algorithm>

#include "engine/drafting/draft_source.h"
#include "families/model.h"

namespace tf {

FinishReason decode_stream(Model& model, SequenceState& state, std::vector<float> logits,
                           std::vector<std::int32_t>& history, const DecodeSettings& s, DraftSource* drafts,
                           const std::function<bool(std::int32_t)>& on_token, const std::function<bool()>& cancelled,
                           DecodeCounters& c) {
  const auto vocab = static_cast<std::size_t>(model.info().vocab);
  const auto is_eos = [&](std::int32_t t) { return std::binary_search(s.eos.begin(), s.eos.end(), t); };
  // Emits one token; false when the stream ends with it.
  FinishReason finish = FinishReason::Length;
  const auto emit = [&](std::int32_t t) {
    if (is_eos(t)) {
      finish = FinishReason::Stop;
      return false;
    }
    ++c.emitted;
    history.push_back(t);
    if (!on_token(t)) {
      finish = FinishReason::Stop;
      return false;
    }
    if (c.emitted >= s.budget) {
      finish = FinishReason::Length;
      return false;
    }
    return true;
  };
  int window = s.full_windows ? s.max_drafts : std::min(4, s.max_drafts);  // drafts per round
  if (s.budget <= 0) return FinishReason::Length;
  for (;;) {
    if (cancelled()) return FinishReason::Cancelled;
    const std::int64_t p = state.length();
    const std::int32_t t = sample_token(logits, s.sampling, s.seed, p);
    if (!emit(t)) return finish;
    std::vector<std::int32_t> proposal;
    if (drafts != nullptr && window > 0) {
      const auto room = static_cast<int>(std::min<std::int64_t>(window, s.budget - c.emitted));
      proposal = drafts->propose(history, room);
    }
    std::vector<std::int32_t> input{t};
    input.insert(input.end(), proposal.begin(), proposal.end());
    const auto rows = model.forward(state, input, static_cast<std::int64_t>(input.size()));
    ++c.rounds;
    c.drafted += static_cast<std::int64_t>(proposal.size());
    std::size_t accepted = 0;
    bool stream_ended = false;
    for (; accepted < proposal.size(); ++accepted) {
      const std::span<const float> row(rows.data() + accepted * vocab, vocab);
      const std::int32_t target = sample_token(row, s.sampling, s.seed, p + 1 + static_cast<std::int64_t>(accepted));
      if (target != proposal[accepted]) break;
      ++c.accepted;
      if (!emit(target)) {
        stream_ended = true;
        break;
      }
    }
    if (stream_ended) return finish;
    // Keep the sampled token and the accepted drafts; the next distribution is the row after them.
    state.truncate(p + 1 + static_cast<std::int64_t>(accepted));
    logits.assign(rows.begin() + static_cast<std::ptrdiff_t>(accepted * vocab),
                  rows.begin() + static_cast<std::ptrdiff_t>((accepted + 1) * vocab));
    if (s.max_drafts > 0 && !proposal.empty() && !s.full_windows) {  // adapt to recent acceptance
      window = accepted == proposal.size() ? std::min(s.max_drafts, window + 2)
                                                                : std::max(1, static_cast<int>(accepted) + 1);
    }
  }
}

}  // namespace tf
