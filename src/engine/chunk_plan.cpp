#include "engine/chunk_plan.h"

#include <algorithm>

namespace tf {

std::string ChunkPlanRule::identity() const {
  return "chunk=" + std::to_string(chunk) + ";message_start=" + std::to_string(message_start);
}

ChunkPlan plan_chunks(std::span<const std::int32_t> tokens, const ChunkPlanRule& rule) {
  ChunkPlan plan;
  const auto n = static_cast<std::int64_t>(tokens.size());
  const std::int64_t chunk = std::max<std::int64_t>(1, rule.chunk);
  if (rule.message_start >= 0)
    for (std::int64_t i = 1; i < n; ++i)
      if (tokens[static_cast<std::size_t>(i)] == rule.message_start) plan.message_starts.push_back(i);
  std::int64_t start = 0;
  auto next = plan.message_starts.begin();
  while (start < n) {
    while (next != plan.message_starts.end() && *next <= start) ++next;
    std::int64_t end = std::min(start + chunk, n);
    if (next != plan.message_starts.end()) end = std::min(end, *next);
    plan.ends.push_back(end);
    start = end;
  }
  return plan;
}

}  // namespace tf
