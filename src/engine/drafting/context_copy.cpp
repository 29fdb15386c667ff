#include "engine/drafting/context_copy.h"

#include <algorithm>

namespace tf {

std::vector<std::int32_t> ContextCopyDrafter::propose(std::span<const std::int32_t> history, int max_tokens) {
  const auto size = static_cast<std::int64_t>(history.size());
  if (max_tokens <= 0) return {};
  for (int n = kMaxNgram; n >= kMinNgram; --n) {
    if (size < n + 1) continue;
    const auto tail = history.subspan(static_cast<std::size_t>(size - n));
    // Latest earlier occurrence: its match must end before the tail starts overlapping itself.
    for (std::int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(tail.begin(), tail.end(), history.begin() + start)) continue;
      const std::int64_t from = start + n;
      const std::int64_t count = std::min<std::int64_t>(max_tokens, size - from);
      if (count <= 0) continue;
      return {history.begin() + from, history.begin() + from + count};
    }
  }
  return {};
}

}  // namespace tf
