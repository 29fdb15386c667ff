#pragma once
#include <cstdint>
#include <memory>

#include "engine/drafting/draft_source.h"
#include "engine/sampler.h"
#include "families/model.h"

namespace tf {

// Drafts with the model's MTP head (Model::draft_head()). The head's row t pairs the model's hidden row of
// position t with the token at t + 1, so its state trails the stream's by one: a proposal first builds the
// head's rows for the committed positions it lacks (the last one paired with the token just emitted), whose
// last row predicts the first draft, then chains: each further step feeds the head's own output row back as
// the hidden row, with the draft before it (as vLLM chains MTP steps). Those chained rows are speculative and
// dropped at the next observe(); the head's state then holds rows of committed positions only, always built
// from the model's own hidden rows. Drafts are picked as the stream samples (the same keyed noise at the
// same position), so a head that agrees with the model proposes the token the verify row will sample.
class MtpDrafter final : public DraftSource {
 public:
  // `head` must outlive the drafter; `width` is the model's hidden width.
  MtpDrafter(DraftHead& head, std::int64_t width, const SamplingParams& sampling, std::uint64_t seed);

  std::vector<std::int32_t> propose(std::span<const std::int32_t> history, int max_tokens) override;
  bool wants_hidden() const override { return true; }
  void observe(std::span<const std::int32_t> history, std::int64_t start, std::span<const float> hidden,
               std::int64_t kept) override;

 private:
  // Runs the pending rows whose next token `history` holds through the head; returns the head's result for the
  // last row run (empty when none ran).
  DraftHead::Rows build(std::span<const std::int32_t> history);

  // Pending rows beyond this many are built at observe() (long prompts), not held until the next proposal.
  static constexpr std::int64_t kBuildAt = 256;

  DraftHead& head_;
  std::unique_ptr<SequenceState> state_;
  std::int64_t width_;
  SamplingParams sampling_;
  std::uint64_t seed_;
  std::int64_t built_ = 0;      // the head's rows of committed positions: 0 .. built_ - 1
  std::vector<float> pending_;  // the model's hidden rows of positions built_ .., not run through the head yet
};

}  // namespace tf
