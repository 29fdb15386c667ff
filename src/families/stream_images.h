#pragma once
// The images a stream's prompt carries: where each image's placeholder tokens sit, the embeddings the vision
// tower made of it, and the M-RoPE positions they imply (transformers' get_rope_index: an image of
// grid_h x grid_w merged tokens takes positions (p, p + row, p + col) and advances the text after it by
// max(grid_h, grid_w); text rows have t = h = w). A text-only stream has none, and its positions are its rows'.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tf {

struct ImageSpan {
  std::int64_t start = 0;               // the stream position of the image's first placeholder token
  std::int64_t grid_h = 0, grid_w = 0;  // in merged tokens: grid_h * grid_w placeholders
  std::vector<float> embeds;            // [grid_h * grid_w, hidden]: the rows that replace the placeholders' embeddings
  std::string content_hash;             // of the tower's input (ImageEncoder::content_hash): the prompt cache's key
  std::int64_t tokens() const { return grid_h * grid_w; }
  std::int64_t end() const { return start + tokens(); }
};

class StreamImages {
 public:
  // Spans in stream order, not overlapping; throws std::invalid_argument otherwise.
  explicit StreamImages(std::vector<ImageSpan> spans);
  const std::vector<ImageSpan>& spans() const { return spans_; }

  // (t, h, w) for stream positions start .. start + n - 1, appended to `thw` (3 per position).
  void positions(std::int64_t start, std::int64_t n, std::vector<std::int32_t>& thw) const;
  // The rows among positions start .. start + n - 1 that are image placeholders (offsets from start), and
  // their embeddings, appended in order.
  void rows(std::int64_t start, std::int64_t n, std::vector<std::int64_t>& offsets, std::vector<float>& values) const;
  std::size_t hidden() const;  // the embeddings' width (0 without spans)

 private:
  std::vector<ImageSpan> spans_;
};

}  // namespace tf
