#include "engine/drafting/mtp_drafter.h"

#include <algorithm>
#include <stdexcept>

namespace tf {

MtpDrafter::MtpDrafter(DraftHead& head, std::int64_t width, const SamplingParams& sampling, std::uint64_t seed)
    : head_(head), state_(head.new_state()), width_(width), sampling_(sampling), seed_(seed) {}

DraftHead::Rows MtpDrafter::build(std::span<const std::int32_t> history) {
  const auto pending = static_cast<std::int64_t>(pending_.size()) / width_;
  // Row t needs the token at t + 1.
  const std::int64_t n = std::min(pending, static_cast<std::int64_t>(history.size()) - 1 - built_);
  if (n <= 0) return {};
  state_->truncate(built_);
  const auto rows = std::span<const float>(pending_).first(static_cast<std::size_t>(n * width_));
  auto out = head_.forward(*state_, history.subspan(static_cast<std::size_t>(built_ + 1), static_cast<std::size_t>(n)),
                           rows, 1);
  built_ += n;
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n * width_));
  return out;
}

void MtpDrafter::observe(std::span<const std::int32_t> history, std::int64_t start, std::span<const float> hidden,
                         std::int64_t kept) {
  if (start != built_ + static_cast<std::int64_t>(pending_.size()) / width_ ||
      static_cast<std::int64_t>(hidden.size()) < kept * width_)
    throw std::logic_error("MtpDrafter::observe: hidden rows out of order");
  state_->truncate(built_);  // the last proposal's chained rows
  pending_.insert(pending_.end(), hidden.begin(), hidden.begin() + static_cast<std::ptrdiff_t>(kept * width_));
  if (static_cast<std::int64_t>(pending_.size()) / width_ > kBuildAt) build(history);
}

std::vector<std::int32_t> MtpDrafter::propose(std::span<const std::int32_t> history, int max_tokens) {
  // history.back() is the token at position L = history.size() - 1, which the model has not run yet; the
  // model's hidden rows cover positions up to L - 1.
  const auto last = static_cast<std::int64_t>(history.size()) - 1;
  if (max_tokens <= 0) return {};
  if (built_ + static_cast<std::int64_t>(pending_.size()) / width_ != last)
    throw std::logic_error("MtpDrafter::propose: the model's hidden rows do not reach the stream's end");
  DraftHead::Rows r = build(history);
  if (r.logits.empty()) return {};  // nothing pending: no row predicts the next token
  std::vector<std::int32_t> drafts;
  for (int i = 0;; ++i) {
    drafts.push_back(sample_token(r.logits, sampling_, seed_, last + 1 + i));
    if (static_cast<int>(drafts.size()) == max_tokens) break;
    const std::int32_t token[1] = {drafts.back()};
    r = head_.forward(*state_, token, r.hidden, 1);  // speculative: dropped at the next observe()
  }
  return drafts;
}

}  // namespace tf
