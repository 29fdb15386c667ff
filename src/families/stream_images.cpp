#include "families/stream_images.h"

#include <algorithm>
#include <stdexcept>

namespace tf {

StreamImages::StreamImages(std::vector<ImageSpan> spans) : spans_(std::move(spans)) {
  std::int64_t end = 0;
  for (const auto& s : spans_) {
    if (s.start < end || s.grid_h < 1 || s.grid_w < 1 || s.embeds.empty() ||
        s.embeds.size() % static_cast<std::size_t>(s.tokens()) != 0 ||
        s.embeds.size() / static_cast<std::size_t>(s.tokens()) !=
            spans_.front().embeds.size() / static_cast<std::size_t>(spans_.front().tokens()))
      throw std::invalid_argument("StreamImages: spans out of order, overlapping or with embeddings of another shape");
    end = s.end();
  }
}

std::size_t StreamImages::hidden() const {
  return spans_.empty() ? 0 : spans_.front().embeds.size() / static_cast<std::size_t>(spans_.front().tokens());
}

void StreamImages::positions(std::int64_t start, std::int64_t n, std::vector<std::int32_t>& thw) const {
  // shift: how far the rope position of a text row after the spans seen so far is from its stream position
  std::int64_t shift = 0;
  std::size_t next = 0;
  for (std::int64_t p = start; p < start + n; ++p) {
    while (next < spans_.size() && spans_[next].end() <= p) {
      shift += std::max(spans_[next].grid_h, spans_[next].grid_w) - spans_[next].tokens();
      ++next;
    }
    if (next < spans_.size() && p >= spans_[next].start) {
      const ImageSpan& s = spans_[next];
      const std::int64_t base = s.start + shift, i = p - s.start;
      thw.push_back(static_cast<std::int32_t>(base));
      thw.push_back(static_cast<std::int32_t>(base + i / s.grid_w));
      thw.push_back(static_cast<std::int32_t>(base + i % s.grid_w));
    } else {
      const auto q = static_cast<std::int32_t>(p + shift);
      thw.insert(thw.end(), {q, q, q});
    }
  }
}

void StreamImages::rows(std::int64_t start, std::int64_t n, std::vector<std::int64_t>& offsets,
                        std::vector<float>& values) const {
  const std::size_t h = hidden();
  for (const auto& s : spans_) {
    const std::int64_t a = std::max(start, s.start), b = std::min(start + n, s.end());
    for (std::int64_t p = a; p < b; ++p) {
      offsets.push_back(p - start);
      const auto* row = s.embeds.data() + static_cast<std::size_t>(p - s.start) * h;
      values.insert(values.end(), row, row + h);
    }
  }
}

}  // namespace tf
