#include "engine/decode_loop.h"

#include <algorithm>
#include <optional>

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
  // Greedy decoding on a backend that finds the argmax itself: rounds return token ids, not logits (the
  // same tokens: the backend's argmax is greedy_token bit for bit).
  const bool greedy_ids = s.sampling.temperature <= 0.0f && model.greedy_on_backend();
  std::optional<std::int32_t> next;  // the token at state.length(), when the last round found it already
  for (;;) {
    if (cancelled()) return FinishReason::Cancelled;
    const std::int64_t p = state.length();
    const std::int32_t t = next ? *next : sample_token(logits, s.sampling, s.seed, p);
    if (!emit(t)) return finish;
    std::vector<std::int32_t> proposal;
    if (drafts != nullptr && window > 0) {
      const auto room = static_cast<int>(std::min<std::int64_t>(window, s.budget - c.emitted));
      proposal = drafts->propose(history, room);
    }
    std::vector<std::int32_t> input{t};
    input.insert(input.end(), proposal.begin(), proposal.end());
    const auto n = static_cast<std::int64_t>(input.size());
    std::vector<std::int32_t> ids;
    std::vector<float> rows;
    if (greedy_ids) ids = model.forward_greedy(state, input, n);
    else rows = model.forward(state, input, n);
    // The target model's token at position p + 1 + i.
    const auto target_at = [&](std::size_t i) {
      if (greedy_ids) return ids[i];
      const std::span<const float> row(rows.data() + i * vocab, vocab);
      return sample_token(row, s.sampling, s.seed, p + 1 + static_cast<std::int64_t>(i));
    };
    ++c.rounds;
    c.drafted += static_cast<std::int64_t>(proposal.size());
    std::size_t accepted = 0;
    bool stream_ended = false;
    for (; accepted < proposal.size(); ++accepted) {
      const std::int32_t target = target_at(accepted);
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
    if (greedy_ids) {
      next = ids[accepted];
    } else {
      logits.assign(rows.begin() + static_cast<std::ptrdiff_t>(accepted * vocab),
                    rows.begin() + static_cast<std::ptrdiff_t>((accepted + 1) * vocab));
    }
    if (s.max_drafts > 0 && !proposal.empty() && !s.full_windows) {  // adapt to recent acceptance
      window = accepted == proposal.size() ? std::min(s.max_drafts, window + 2)
                                                                : std::max(1, static_cast<int>(accepted) + 1);
    }
  }
}

}  // namespace tf
