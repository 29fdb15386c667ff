#pragma once
#include "engine/drafting/draft_source.h"

namespace tf {

// Drafts by copying: finds the latest earlier place where the stream's last n tokens occurred (n from
// 8 down to 2) in the prompt or the reply, and proposes what followed there. Cheap, and strong on
// rewrites, quotes and repeated structure.
class ContextCopyDrafter final : public DraftSource {
 public:
  static constexpr int kMaxNgram = 8;
  static constexpr int kMinNgram = 2;
  std::vector<std::int32_t> propose(std::span<const std::int32_t> history, int max_tokens) override;
};

}  // namespace tf
