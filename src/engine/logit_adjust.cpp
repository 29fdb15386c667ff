#include "engine/logit_adjust.h"

#include <algorithm>

namespace tf {

namespace {
bool in_row(std::int32_t id, std::span<float> row) { return id >= 0 && static_cast<std::size_t>(id) < row.size(); }
}  // namespace

void adjust_logits(const LogitAdjustments& a, std::span<const std::int32_t> prompt,
                   std::span<const std::int32_t> generated, std::span<float> row) {
  if (a.repetition_penalty != 1.0f) {
    std::vector<std::int32_t> seen(prompt.begin(), prompt.end());
    seen.insert(seen.end(), generated.begin(), generated.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (const auto id : seen) {
      if (!in_row(id, row)) continue;
      float& v = row[static_cast<std::size_t>(id)];
      v = v > 0.0f ? v / a.repetition_penalty : v * a.repetition_penalty;
    }
  }
  if (a.presence_penalty != 0.0f || a.frequency_penalty != 0.0f) {
    std::vector<std::int32_t> ids(generated.begin(), generated.end());
    std::sort(ids.begin(), ids.end());
    for (std::size_t i = 0; i < ids.size();) {
      std::size_t j = i;
      while (j < ids.size() && ids[j] == ids[i]) ++j;
      if (in_row(ids[i], row)) {
        float& v = row[static_cast<std::size_t>(ids[i])];
        v = v - static_cast<float>(j - i) * a.frequency_penalty;
        v = v - a.presence_penalty;
      }
      i = j;
    }
  }
  for (const auto& [id, b] : a.bias)
    if (in_row(id, row)) row[static_cast<std::size_t>(id)] = row[static_cast<std::size_t>(id)] + b;
}

}  // namespace tf
