#include "blocks/host_row_log.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tf {

namespace {

std::vector<HostRowLayer> every_position(const std::vector<std::int64_t>& widths) {
  std::vector<HostRowLayer> out;
  for (const auto w : widths) out.push_back({w, HostRowLayer::kEveryPosition});
  return out;
}

}  // namespace

HostRowLog::HostRowLog(std::vector<std::int64_t> widths) : HostRowLog(every_position(widths), 1) {}

HostRowLog::HostRowLog(std::vector<HostRowLayer> layers, std::int64_t call_rows)
    : call_rows_(std::max<std::int64_t>(call_rows, 1)) {
  if (layers.empty()) throw std::invalid_argument("HostRowLog: no layers");
  for (const auto& l : layers) {
    if (l.width <= 0) throw std::invalid_argument("HostRowLog: a layer of no width");
    if (l.reach < HostRowLayer::kEveryPosition) throw std::invalid_argument("HostRowLog: a negative reach");
    layers_.push_back({l, {}, 0});
  }
}

std::size_t HostRowLog::steady_bytes(const HostRowLayer& layer, std::int64_t call_rows) {
  return static_cast<std::size_t>(layer.reach + std::max<std::int64_t>(call_rows, 1)) *
         static_cast<std::size_t>(layer.width) * sizeof(float);
}

const HostRowLog::Layer& HostRowLog::at(int layer) const {
  if (layer < 0 || static_cast<std::size_t>(layer) >= layers_.size())
    throw std::invalid_argument("HostRowLog: no such layer");
  return layers_[static_cast<std::size_t>(layer)];
}

std::int64_t HostRowLog::needed_from(const Layer& l, std::int64_t length) {
  return l.shape.bounded() ? std::max<std::int64_t>(0, length - l.shape.reach) : 0;
}

std::int64_t HostRowLog::rows(int layer) const { return end_of(at(layer)); }
std::int64_t HostRowLog::held_from(int layer) const { return at(layer).first; }
std::int64_t HostRowLog::length() const { return end_of(layers_.back()); }

void HostRowLog::truncate(std::int64_t length) {
  if (length < 0 || length > this->length()) throw std::invalid_argument("HostRowLog::truncate: beyond its length");
  for (const auto& l : layers_)  // every layer checked before any is cut
    if (needed_from(l, length) < l.first)
      throw std::logic_error("HostRowLog: rolled back past the positions it keeps (only inside the last call)");
  for (auto& l : layers_)
    if (length < end_of(l)) l.rows.resize(static_cast<std::size_t>((length - l.first) * l.shape.width));
}

std::size_t HostRowLog::bytes() const {
  std::size_t n = 0;
  for (const auto& l : layers_) n += l.rows.capacity() * sizeof(float);
  return n;
}

std::span<const float> HostRowLog::row(int layer, std::int64_t position) const {
  const Layer& l = at(layer);
  if (position < l.first || position >= end_of(l))
    throw std::logic_error("HostRowLog: a row it does not hold (position " + std::to_string(position) + ")");
  const auto w = static_cast<std::size_t>(l.shape.width);
  return std::span<const float>(l.rows).subspan(static_cast<std::size_t>(position - l.first) * w, w);
}

void HostRowLog::start_call(int layer, std::int64_t start, std::int64_t rows) {
  Layer& l = at(layer);
  const std::int64_t keep = needed_from(l, start), w = l.shape.width;
  if (start < 0 || start > end_of(l) || rows < 0) throw std::invalid_argument("HostRowLog: a gap before the rows");
  if (keep < l.first) throw std::logic_error("HostRowLog: a call reading rows it no longer holds");
  l.rows.resize(static_cast<std::size_t>((start - l.first) * w));  // a rolled-back call's rows go
  if (!l.shape.bounded()) return;                                  // every position: the vector grows as it may
  const auto capacity = static_cast<std::int64_t>(l.rows.capacity()) / w;
  std::int64_t need = start + rows - l.first;
  if (need > std::max(limit(l), capacity) && keep > l.first) {
    // Past the budget: what no later row reads goes, and the positions the call reads move to the front.
    l.rows.erase(l.rows.begin(), l.rows.begin() + static_cast<std::ptrdiff_t>((keep - l.first) * w));
    l.first = keep;
    need = start + rows - keep;
  }
  // Grown in steps that double, to the budget (a call longer than it: to what that call needs), never past.
  if (need > capacity) l.rows.reserve(static_cast<std::size_t>(std::max(need, std::min(limit(l), 2 * capacity)) * w));
}

void HostRowLog::append(int layer, std::span<const float> row) {
  Layer& l = at(layer);
  if (static_cast<std::int64_t>(row.size()) != l.shape.width)
    throw std::invalid_argument("HostRowLog::append: a row of another width");
  l.rows.insert(l.rows.end(), row.begin(), row.end());
}

std::vector<std::uint8_t> HostRowLog::snapshot() const {
  const std::int64_t n = length();
  std::size_t total = 8;
  for (const auto& l : layers_)
    total += static_cast<std::size_t>((n - needed_from(l, n)) * l.shape.width) * sizeof(float);
  std::vector<std::uint8_t> out(total);
  const auto len = static_cast<std::uint64_t>(n);
  std::memcpy(out.data(), &len, 8);
  std::size_t off = 8;
  for (const auto& l : layers_) {
    const std::int64_t from = needed_from(l, n);
    if (from < l.first || end_of(l) < n) throw std::logic_error("HostRowLog::snapshot: layers of different lengths");
    const std::size_t count = static_cast<std::size_t>((n - from) * l.shape.width);
    if (count > 0)
      std::memcpy(out.data() + off, l.rows.data() + static_cast<std::size_t>((from - l.first) * l.shape.width),
                  count * sizeof(float));
    off += count * sizeof(float);
  }
  return out;
}

void HostRowLog::restore(std::span<const std::uint8_t> bytes) {
  std::uint64_t n = 0;
  if (bytes.size() < 8) throw std::invalid_argument("HostRowLog::restore: truncated");
  std::memcpy(&n, bytes.data(), 8);
  const std::size_t body = bytes.size() - 8;
  std::size_t total = 0;
  for (const auto& l : layers_) {
    const auto w = static_cast<std::size_t>(l.shape.width) * sizeof(float);
    const std::uint64_t held = l.shape.bounded() ? std::min(n, static_cast<std::uint64_t>(l.shape.reach)) : n;
    if (held > body / w) throw std::invalid_argument("HostRowLog::restore: a state of another shape");
    total += static_cast<std::size_t>(held) * w;
  }
  if (total != body) throw std::invalid_argument("HostRowLog::restore: a state of another shape");
  const auto length = static_cast<std::int64_t>(n);
  std::size_t off = 8;
  for (auto& l : layers_) {
    l.first = needed_from(l, length);
    const auto count = static_cast<std::size_t>((length - l.first) * l.shape.width);
    l.rows.assign(count, 0.0f);
    l.rows.shrink_to_fit();  // a bounded layer grows back to its budget with its calls
    if (count > 0) std::memcpy(l.rows.data(), bytes.data() + off, count * sizeof(float));
    off += count * sizeof(float);
  }
}

}  // namespace tf
