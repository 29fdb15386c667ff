#pragma once
// A stream's state for blocks that keep it on the host as one row of floats per position and layer: sparse
// attention's keys, values and indexer keys, an n-gram embedding's tokens and conv inputs. Layers have their own
// widths; a forward opens each layer's call (start_call) and appends its rows in position order, and the log's
// length follows its last layer.
// A layer keeps either every position (sparse attention reads any earlier row: truncation to any length is
// exact and a snapshot is the rows themselves) or, when a call reads at most `reach` positions before its first
// row (an n-gram window and its dilated conv), only those and the last call's rows: a fixed size per stream,
// as the sliding-window store keeps it (backends/mlx/host_window_cache.h). Such a layer's rows sit in one
// buffer from held_from(layer) on; when a call's rows would not fit behind them, the positions it reads move
// to the front first. The buffer grows up to reach + call_rows positions (the largest call the family plans:
// its prefill chunk); a longer call grows it to what that call needs. It rolls back only as far as its kept
// rows allow (inside the last call, never further than `reach` before it), and snapshots the last `reach`
// positions, all that a continuation reads.
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tf {

struct HostRowLayer {
  std::int64_t width = 0;
  // The positions before a call's first row that the call reads; kEveryPosition: any (every position kept).
  std::int64_t reach = kEveryPosition;
  static constexpr std::int64_t kEveryPosition = -1;
  bool bounded() const { return reach >= 0; }
};

class HostRowLog final : public StateStore {
 public:
  // Layers that keep every position.
  explicit HostRowLog(std::vector<std::int64_t> widths);
  // `call_rows`: the largest call the family plans, which a bounded layer's buffer holds beside its reach.
  HostRowLog(std::vector<HostRowLayer> layers, std::int64_t call_rows);

  std::int64_t length() const override;
  // Back to `length`; a bounded layer refuses (std::logic_error) a length whose reach it no longer holds.
  void truncate(std::int64_t length) override;
  std::size_t bytes() const override;
  // [length u64][per layer: its rows from max(0, length - reach) on (every row for an unbounded layer),
  // float32]; the widths and reaches are the model's, so a state of another shape is told by its size.
  std::vector<std::uint8_t> snapshot() const override;
  void restore(std::span<const std::uint8_t> bytes) override;

  std::int64_t width(int layer) const { return at(layer).shape.width; }
  std::int64_t rows(int layer) const;       // the positions layer `layer` has seen (its length)
  std::int64_t held_from(int layer) const;  // the first position it still holds (0 for an unbounded layer)
  // The row of `position` (held_from(layer) <= position < rows(layer); std::logic_error otherwise).
  std::span<const float> row(int layer, std::int64_t position) const;
  // Opens a call of `rows` rows at positions start .. of layer `layer`: drops what it holds from `start` on
  // (a rolled-back call's rows) and makes room for the call's rows, keeping the `reach` positions before them.
  void start_call(int layer, std::int64_t start, std::int64_t rows);
  // Appends one position's row to layer `layer` (width(layer) values), inside the room start_call made.
  void append(int layer, std::span<const float> row);
  // The bytes a bounded layer holds once calls of up to call_rows have filled it (the memory plan's figure).
  static std::size_t steady_bytes(const HostRowLayer& layer, std::int64_t call_rows);

 private:
  struct Layer {
    HostRowLayer shape;
    std::vector<float> rows;  // positions first .. first + rows.size() / width - 1
    std::int64_t first = 0;
  };
  const Layer& at(int layer) const;
  Layer& at(int layer) { return const_cast<Layer&>(static_cast<const HostRowLog&>(*this).at(layer)); }
  static std::int64_t end_of(const Layer& l) {
    return l.first + static_cast<std::int64_t>(l.rows.size()) / l.shape.width;
  }
  // The first position a continuation from `length` reads in `l`.
  static std::int64_t needed_from(const Layer& l, std::int64_t length);
  // The positions a bounded layer's buffer holds before a longer call grows it.
  std::int64_t limit(const Layer& l) const { return l.shape.reach + call_rows_; }

  std::vector<Layer> layers_;
  std::int64_t call_rows_ = 1;
};

}  // namespace tf
