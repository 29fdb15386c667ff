#pragma once
// Keys and values of a stream's sliding-window attention layers in host memory (the MLX backend on the CPU):
// only the positions a later row can still attend, so a stream holds a fixed size whatever its length. Each
// layer's buffers are [kv_heads, capacity, head_dim] holding consecutive positions from held_from(layer) on;
// a write first moves the positions the call's rows attend (the last window - 1 before it) to the front when
// the rows would not fit behind them, so positions stay contiguous and the attention kernel reads them as it
// reads a full cache. Capacity grows in steps of kStep up to window - 1 + call_rows (the largest call the
// family plans: its prefill chunk), at which the positions are moved once every call_rows positions or so; a
// longer call grows it to what that call needs.
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tf {

class HostWindowCache final : public WindowKvCache {
 public:
  HostWindowCache(int layers, int kv_heads, int head_dim, int window, std::int64_t call_rows);

  std::int64_t length() const override { return length_; }
  // Back to any length whose window is still held: from the start of the last call on (never further than the
  // window - 1 positions before it, which is all a call keeps).
  void truncate(std::int64_t length) override;
  std::size_t bytes() const override;
  // [length i64][positions n i64][per layer: keys [kv_heads, n, head_dim], then values], float32: the last
  // n = min(length, window - 1) positions, all that a continuation attends.
  std::vector<std::uint8_t> snapshot() const override;
  void restore(std::span<const std::uint8_t> bytes) override;

  // Stores k and v [rows, kv_heads * head_dim] at positions start .. start + rows - 1 of `layer` (start at most
  // the length, and no earlier than the positions held allow); the store's length follows its last layer.
  void write(int layer, const float* k, const float* v, std::int64_t rows, std::int64_t start);
  // A layer's buffers: position p at index p - held_from(layer) of each head (head stride capacity * head_dim).
  const float* keys(int layer) const { return at(layer).keys.data(); }
  const float* values(int layer) const { return at(layer).values.data(); }
  std::int64_t capacity(int layer) const { return at(layer).capacity; }
  std::int64_t held_from(int layer) const { return at(layer).first; }
  int window() const { return window_; }
  // The bytes a stream holds once its calls of up to call_rows have filled the window (the memory plan's figure).
  static std::size_t steady_bytes(int layers, int kv_heads, int head_dim, int window, std::int64_t call_rows);

 private:
  static constexpr std::int64_t kStep = 256;
  struct Layer {
    std::vector<float> keys, values;
    std::int64_t capacity = 0;
    std::int64_t first = 0;  // the position at index 0
  };
  const Layer& at(int layer) const;
  // Makes room for positions up to `end` (exclusive), keeping the held positions from `keep` up to `held_end`.
  void make_room(Layer& l, std::int64_t keep, std::int64_t held_end, std::int64_t end);
  // The first position a row at `position` attends.
  std::int64_t window_start(std::int64_t position) const { return position + 1 > window_ ? position + 1 - window_ : 0; }

  int kv_heads_, head_dim_, window_;
  std::int64_t limit_;  // capacity growth stops here: window - 1 + call_rows
  std::vector<Layer> layers_;
  std::int64_t length_ = 0;
};

}  // namespace tf
