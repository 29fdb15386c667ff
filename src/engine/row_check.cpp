#include "engine/row_check.h"

#include <cstring>

#include "engine/engine.h"
#include "families/model.h"

namespace tf {

RowCheckReport check_verify_rows(Model& model, int max_window) {
  RowCheckReport report;
  const auto vocab = static_cast<std::size_t>(model.info().vocab);
  // A fixed, model-independent token sequence: 12 tokens of context, then the checked positions.
  std::vector<std::int32_t> tokens;
  for (int i = 0; i < 12 + max_window; ++i)
    tokens.push_back(static_cast<std::int32_t>((1000 + 7919 * i) % static_cast<int>(vocab)));
  const std::span<const std::int32_t> all(tokens);
  const auto prefix = all.first(12);
  // Serial: one token per forward.
  std::vector<std::vector<float>> serial;
  {
    auto state = model.new_state();
    model.forward(*state, prefix, 1);
    for (int i = 0; i < max_window; ++i) serial.push_back(model.forward(*state, all.subspan(12 + static_cast<std::size_t>(i), 1), 1));
  }
  bool all_ok = true;
  for (int width = 2; width <= max_window; ++width) {
    auto state = model.new_state();
    model.forward(*state, prefix, 1);
    const auto rows = model.forward(*state, all.subspan(12, static_cast<std::size_t>(width)), width);
    bool same = rows.size() == static_cast<std::size_t>(width) * vocab;
    for (int r = 0; same && r < width; ++r)
      same = std::memcmp(rows.data() + static_cast<std::size_t>(r) * vocab, serial[static_cast<std::size_t>(r)].data(),
                         vocab * sizeof(float)) == 0;
    report.widths.emplace_back(width, same);
    if (same && all_ok) report.max_window = width;
    all_ok = all_ok && same;
  }
  return report;
}

}  // namespace tf
