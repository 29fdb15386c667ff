#include "blocks/host_row_log.h"

#include <cstring>
#include <stdexcept>

namespace tf {

HostRowLog::HostRowLog(std::vector<std::int64_t> widths) : widths_(std::move(widths)), rows_(widths_.size()) {
  if (widths_.empty()) throw std::invalid_argument("HostRowLog: no layers");
  for (const auto w : widths_)
    if (w <= 0) throw std::invalid_argument("HostRowLog: a layer of no width");
}

std::int64_t HostRowLog::rows(int layer) const {
  return static_cast<std::int64_t>(rows_[static_cast<std::size_t>(layer)].size()) /
         widths_[static_cast<std::size_t>(layer)];
}

std::int64_t HostRowLog::length() const { return rows(static_cast<int>(widths_.size()) - 1); }

void HostRowLog::truncate(std::int64_t length) {
  if (length < 0 || length > this->length()) throw std::invalid_argument("HostRowLog::truncate: beyond its length");
  for (std::size_t l = 0; l < rows_.size(); ++l) cut(static_cast<int>(l), length);
}

void HostRowLog::cut(int layer, std::int64_t position) {
  auto& r = rows_[static_cast<std::size_t>(layer)];
  const auto keep = static_cast<std::size_t>(position * widths_[static_cast<std::size_t>(layer)]);
  if (keep < r.size()) r.resize(keep);
}

std::size_t HostRowLog::bytes() const {
  std::size_t n = 0;
  for (const auto& r : rows_) n += r.capacity() * sizeof(float);
  return n;
}

std::span<const float> HostRowLog::row(int layer, std::int64_t position) const {
  const auto w = static_cast<std::size_t>(widths_[static_cast<std::size_t>(layer)]);
  return std::span<const float>(rows_[static_cast<std::size_t>(layer)])
      .subspan(static_cast<std::size_t>(position) * w, w);
}

void HostRowLog::append(int layer, std::span<const float> row) {
  if (static_cast<std::int64_t>(row.size()) != widths_[static_cast<std::size_t>(layer)])
    throw std::invalid_argument("HostRowLog::append: a row of another width");
  auto& r = rows_[static_cast<std::size_t>(layer)];
  r.insert(r.end(), row.begin(), row.end());
}

// [length u64][per layer: its rows as float32]; the widths are the model's, so a state of another shape is
// told by its size.
std::vector<std::uint8_t> HostRowLog::snapshot() const {
  const std::uint64_t n = static_cast<std::uint64_t>(length());
  std::size_t total = 8;
  for (std::size_t l = 0; l < rows_.size(); ++l)
    total += static_cast<std::size_t>(n) * static_cast<std::size_t>(widths_[l]) * 4;
  std::vector<std::uint8_t> out(total);
  std::memcpy(out.data(), &n, 8);
  std::size_t at = 8;
  for (std::size_t l = 0; l < rows_.size(); ++l) {
    const std::size_t len = static_cast<std::size_t>(n) * static_cast<std::size_t>(widths_[l]) * 4;
    if (rows_[l].size() * 4 < len) throw std::logic_error("HostRowLog::snapshot: layers of different lengths");
    std::memcpy(out.data() + at, rows_[l].data(), len);
    at += len;
  }
  return out;
}

void HostRowLog::restore(std::span<const std::uint8_t> bytes) {
  std::uint64_t n = 0;
  if (bytes.size() < 8) throw std::invalid_argument("HostRowLog::restore: truncated");
  std::memcpy(&n, bytes.data(), 8);
  std::size_t per_position = 0;
  for (const auto w : widths_) per_position += static_cast<std::size_t>(w) * 4;
  if (n > (bytes.size() - 8) / per_position || (bytes.size() - 8) != n * per_position)
    throw std::invalid_argument("HostRowLog::restore: a state of another shape");
  std::size_t at = 8;
  for (std::size_t l = 0; l < rows_.size(); ++l) {
    const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(widths_[l]);
    rows_[l].resize(count);
    std::memcpy(rows_[l].data(), bytes.data() + at, count * 4);
    at += count * 4;
  }
}

}  // namespace tf
