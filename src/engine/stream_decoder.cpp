#include "engine/stream_decoder.h"

#include <algorithm>
#include <span>
#include <stdexcept>

#include "engine/drafting/draft_source.h"
#include "families/model.h"

namespace tf {

RoundOutput run_round(Model& model, SequenceState& state, const RoundInput& in) {
  const ForwardPart part{&state, in.tokens, in.ids, in.ahead, in.hidden, in.choice};
  return std::move(model.forward_parts(std::span<const ForwardPart>(&part, 1)).front());
}

StreamDecoder::StreamDecoder(Model& model, SequenceState& state, std::vector<float> logits,
                             std::vector<std::int32_t> history, const DecodeSettings& settings, DraftSource* drafts,
                             std::function<bool(std::int32_t)> on_token)
    : state_(state),
      vocab_(static_cast<std::size_t>(model.info().vocab)),
      s_(settings),
      drafts_(drafts),
      on_token_(std::move(on_token)),
      logits_(std::move(logits)),
      history_(std::move(history)),
      prompt_length_(history_.size()),
      hidden_(drafts != nullptr && drafts->wants_hidden()),
      // On a backend that finds the argmax (greedy) or the keyed sample itself, rounds return token ids, not
      // logits (the same tokens: the backend's choice is greedy_token / sample_token bit for bit). A
      // constraint, penalties and logprobs need the logits, and so do hidden rows (they come with logits).
      ids_((settings.sampling.temperature <= 0.0f ? model.greedy_on_backend() : model.samples_on_backend()) &&
           !settings.constraint && !(settings.adjust && settings.adjust->active()) && settings.logprobs < 0 &&
           !hidden_),
      window_(settings.full_windows ? settings.max_drafts : std::min(4, settings.max_drafts)) {
  if (s_.budget <= 0) end(FinishReason::Length);
}

void StreamDecoder::end(FinishReason r) {
  done_ = true;
  finish_ = r;
}

void StreamDecoder::cancel() {
  if (!done_) end(FinishReason::Cancelled);
}

bool StreamDecoder::emit(std::int32_t t) {
  if (std::binary_search(s_.eos.begin(), s_.eos.end(), t)) {
    end(FinishReason::Stop);
    return false;
  }
  ++c_.emitted;
  history_.push_back(t);
  if (s_.logprobs >= 0) logprobs_.push_back(pending_);
  if (!on_token_(t)) {
    end(FinishReason::Stop);
    return false;
  }
  if (c_.emitted >= s_.budget) {
    end(FinishReason::Length);
    return false;
  }
  return true;
}

std::int32_t StreamDecoder::sample(std::span<float> row, std::int64_t position) {
  const auto prompt = std::span<const std::int32_t>(history_).first(prompt_length_);
  const auto generated = std::span<const std::int32_t>(history_).subspan(prompt_length_);
  if (s_.adjust && s_.adjust->active()) adjust_logits(*s_.adjust, prompt, generated, row);
  if (s_.constraint) s_.constraint->mask(generated, row);
  const std::int32_t t = sample_token(row, s_.sampling, s_.seed, position);
  if (s_.logprobs >= 0) pending_ = token_logprob(row, s_.sampling, t, s_.logprobs);
  return t;
}

std::optional<RoundInput> StreamDecoder::next_input() {
  if (done_) return std::nullopt;
  const std::int64_t p = state_.length();
  const std::int32_t t = next_ ? *next_ : sample(logits_, p);
  if (!emit(t)) return std::nullopt;
  proposal_.clear();
  if (drafts_ != nullptr && window_ > 0) {
    const auto room = static_cast<int>(std::min<std::int64_t>(window_, s_.budget - c_.emitted));
    proposal_ = drafts_->propose(history_, room);
  }
  RoundInput in;
  in.tokens.reserve(1 + proposal_.size());
  in.tokens.push_back(t);
  in.tokens.insert(in.tokens.end(), proposal_.begin(), proposal_.end());
  in.ids = ids_;
  in.choice = {s_.sampling.temperature, s_.sampling.top_k, s_.sampling.top_p, s_.sampling.min_p, s_.seed, 0};
  in.hidden = hidden_;  // every round, drafts or not: the source's state follows every committed position
  // Without drafts every round is one token, the one the round before found; it runs unless that token ends
  // the stream (EOS, a stop string, cancellation: then the queued round is dropped unused) or the budget does
  // (known now: no round is queued for it).
  in.ahead = ids_ && proposal_.empty() && !(drafts_ != nullptr && window_ > 0) && c_.emitted + 1 < s_.budget;
  round_start_ = p;
  proposed_ = proposal_.size();
  return in;
}

void StreamDecoder::accept(RoundOutput out) {
  if (done_) return;
  const std::int64_t p = round_start_;
  const std::size_t rows = proposed_ + 1;
  if (ids_ ? out.ids.size() != rows : out.logits.size() != rows * vocab_)
    throw std::logic_error("StreamDecoder::accept: the forward returned the wrong number of rows");
  // The target model's token at position p + 1 + i. Rows are taken in order, each after the drafts before it
  // were emitted, so history_ then holds exactly the row's prefix (what a constraint masks by).
  const auto target_at = [&](std::size_t i) {
    if (ids_) return out.ids[i];
    if (!processes_rows()) {
      const std::span<const float> row(out.logits.data() + i * vocab_, vocab_);
      return sample_token(row, s_.sampling, s_.seed, p + 1 + static_cast<std::int64_t>(i));
    }
    std::vector<float> row(out.logits.begin() + static_cast<std::ptrdiff_t>(i * vocab_),
                           out.logits.begin() + static_cast<std::ptrdiff_t>((i + 1) * vocab_));
    return sample(row, p + 1 + static_cast<std::int64_t>(i));
  };
  ++c_.rounds;
  c_.drafted += static_cast<std::int64_t>(proposed_);
  std::size_t accepted = 0;
  for (; accepted < proposed_; ++accepted) {
    const std::int32_t target = target_at(accepted);
    if (target != proposal_[accepted]) break;
    ++c_.accepted;
    if (!emit(target)) return;  // the stream ended inside the window
  }
  // Keep the sampled token and the accepted drafts; the next distribution is the row after them.
  state_.truncate(p + 1 + static_cast<std::int64_t>(accepted));
  if (hidden_) drafts_->observe(history_, p, out.hidden, static_cast<std::int64_t>(accepted) + 1);
  if (ids_) {
    next_ = out.ids[accepted];
  } else {
    logits_.assign(out.logits.begin() + static_cast<std::ptrdiff_t>(accepted * vocab_),
                   out.logits.begin() + static_cast<std::ptrdiff_t>((accepted + 1) * vocab_));
  }
  if (s_.max_drafts > 0 && proposed_ > 0 && !s_.full_windows) {  // adapt to recent acceptance
    window_ = accepted == proposed_ ? std::min(s_.max_drafts, window_ + 2) : std::max(1, static_cast<int>(accepted) + 1);
  }
}

}  // namespace tf
