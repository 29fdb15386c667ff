#pragma once
// A stream's state for blocks that keep it on the host as one row of floats per position and layer: sparse
// attention's keys, values and indexer keys, an n-gram embedding's tokens and conv inputs. Every position is
// kept, so a truncation to any earlier length (a verify window's rejected rows, or further back) leaves exactly
// the rows the accepted positions wrote, and a snapshot is the rows themselves. Layers have their own widths;
// a forward appends each layer's rows in position order, and the log's length follows its last layer.
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tf {

class HostRowLog final : public StateStore {
 public:
  explicit HostRowLog(std::vector<std::int64_t> widths);

  std::int64_t length() const override;
  void truncate(std::int64_t length) override;
  std::size_t bytes() const override;
  std::vector<std::uint8_t> snapshot() const override;
  void restore(std::span<const std::uint8_t> bytes) override;

  std::int64_t width(int layer) const { return widths_[static_cast<std::size_t>(layer)]; }
  std::int64_t rows(int layer) const;  // positions layer `layer` holds
  // Layer `layer`'s rows of positions [0, rows(layer)), row after row.
  std::span<const float> all(int layer) const { return rows_[static_cast<std::size_t>(layer)]; }
  std::span<const float> row(int layer, std::int64_t position) const;
  // Appends one position's row to layer `layer` (width(layer) values).
  void append(int layer, std::span<const float> row);
  // Drops layer `layer`'s rows from `position` on (a call that overwrites the positions it runs).
  void cut(int layer, std::int64_t position);

 private:
  std::vector<std::int64_t> widths_;
  std::vector<std::vector<float>> rows_;
};

}  // namespace tf
