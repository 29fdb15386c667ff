#include "backends/mlx/host_window_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tf {

namespace {

std::int64_t round_up(std::int64_t n, std::int64_t step) { return (n + step - 1) / step * step; }

}  // namespace

HostWindowCache::HostWindowCache(int layers, int kv_heads, int head_dim, int window, std::int64_t call_rows)
    : kv_heads_(kv_heads),
      head_dim_(head_dim),
      window_(window),
      limit_(window - 1 + std::max<std::int64_t>(call_rows, 1)),
      layers_(static_cast<std::size_t>(layers)) {
  if (layers < 1 || kv_heads < 1 || head_dim < 1 || window < 1) throw std::invalid_argument("window cache: shape");
}

std::size_t HostWindowCache::steady_bytes(int layers, int kv_heads, int head_dim, int window, std::int64_t call_rows) {
  const std::int64_t positions = window - 1 + std::max<std::int64_t>(call_rows, 1);
  return static_cast<std::size_t>(layers) * 2 * static_cast<std::size_t>(kv_heads) *
         static_cast<std::size_t>(head_dim) * static_cast<std::size_t>(positions) * sizeof(float);
}

const HostWindowCache::Layer& HostWindowCache::at(int layer) const {
  if (layer < 0 || static_cast<std::size_t>(layer) >= layers_.size())
    throw std::invalid_argument("window cache: layer");
  return layers_[static_cast<std::size_t>(layer)];
}

void HostWindowCache::truncate(std::int64_t length) {
  if (length < 0 || length > length_) throw std::invalid_argument("window cache truncate past its length");
  for (const auto& l : layers_)
    if (window_start(length) < l.first)
      throw std::logic_error("window cache: rolled back past the positions it keeps (only inside the last call)");
  length_ = length;
}

std::size_t HostWindowCache::bytes() const {
  std::size_t n = 0;
  for (const auto& l : layers_) n += (l.keys.size() + l.values.size()) * sizeof(float);
  return n;
}

void HostWindowCache::make_room(Layer& l, std::int64_t keep, std::int64_t held_end, std::int64_t end) {
  if (end - l.first <= l.capacity) return;
  // Grow in place while the budget allows; past it, drop what no row attends any more, growing only for a call
  // longer than the family's planned one.
  std::int64_t first = l.first, capacity = std::min(limit_, round_up(end - l.first, kStep));
  if (end - l.first > capacity) {
    first = keep;
    capacity = std::max(capacity, end - keep);
  }
  const std::int64_t d = head_dim_, moved = std::max<std::int64_t>(0, held_end - first);
  if (capacity == l.capacity) {  // the same buffers: each head's kept positions move to its front
    for (auto* buf : {&l.keys, &l.values})
      for (int h = 0; h < kv_heads_ && moved > 0; ++h)
        std::memmove(buf->data() + h * capacity * d, buf->data() + (h * capacity + first - l.first) * d,
                     static_cast<std::size_t>(moved * d) * sizeof(float));
  } else {
    for (auto* buf : {&l.keys, &l.values}) {
      std::vector<float> grown(static_cast<std::size_t>(kv_heads_ * capacity * d), 0.0f);
      for (int h = 0; h < kv_heads_ && moved > 0; ++h)
        std::memcpy(grown.data() + h * capacity * d, buf->data() + (h * l.capacity + first - l.first) * d,
                    static_cast<std::size_t>(moved * d) * sizeof(float));
      *buf = std::move(grown);
    }
  }
  l.first = first;
  l.capacity = capacity;
}

void HostWindowCache::write(int layer, const float* k, const float* v, std::int64_t rows, std::int64_t start) {
  if (layer < 0 || static_cast<std::size_t>(layer) >= layers_.size())
    throw std::invalid_argument("window cache: layer");
  if (start < 0 || start > length_) throw std::invalid_argument("window cache: a gap before the rows");
  auto& l = layers_[static_cast<std::size_t>(layer)];
  const std::int64_t keep = window_start(start);
  if (keep < l.first) throw std::logic_error("window cache: rows before the positions it keeps");
  // Positions from `start` on are rewritten: what is held past it (a rolled-back call's rows) is not moved.
  make_room(l, keep, start, start + rows);
  const std::int64_t d = head_dim_, width = kv_heads_ * d;
  for (std::int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < kv_heads_; ++h) {
      const std::size_t to = static_cast<std::size_t>((h * l.capacity + start + r - l.first) * d);
      std::memcpy(l.keys.data() + to, k + r * width + h * d, static_cast<std::size_t>(d) * sizeof(float));
      std::memcpy(l.values.data() + to, v + r * width + h * d, static_cast<std::size_t>(d) * sizeof(float));
    }
  if (static_cast<std::size_t>(layer) + 1 == layers_.size()) length_ = start + rows;
}

std::vector<std::uint8_t> HostWindowCache::snapshot() const {
  const std::int64_t n = std::min<std::int64_t>(length_, window_ - 1), from = length_ - n;
  const std::size_t block = static_cast<std::size_t>(n * head_dim_) * sizeof(float);
  std::vector<std::uint8_t> out(16 + layers_.size() * 2 * static_cast<std::size_t>(kv_heads_) * block);
  std::memcpy(out.data(), &length_, 8);
  std::memcpy(out.data() + 8, &n, 8);
  std::size_t off = 16;
  for (const auto& l : layers_)
    for (const auto* buf : {&l.keys, &l.values})
      for (int h = 0; h < kv_heads_ && n > 0; ++h) {
        std::memcpy(out.data() + off, buf->data() + (h * l.capacity + from - l.first) * head_dim_, block);
        off += block;
      }
  return out;
}

void HostWindowCache::restore(std::span<const std::uint8_t> bytes) {
  std::int64_t length = 0, n = 0;
  if (bytes.size() < 16) throw std::invalid_argument("window cache restore: bytes of another shape");
  std::memcpy(&length, bytes.data(), 8);
  std::memcpy(&n, bytes.data() + 8, 8);
  const std::size_t block = static_cast<std::size_t>(std::max<std::int64_t>(n, 0) * head_dim_) * sizeof(float);
  if (length < 0 || n != std::min<std::int64_t>(length, window_ - 1) ||
      bytes.size() != 16 + layers_.size() * 2 * static_cast<std::size_t>(kv_heads_) * block)
    throw std::invalid_argument("window cache restore: bytes of another shape");
  std::size_t off = 16;
  for (auto& l : layers_) {
    l = Layer{};
    l.first = length - n;
    l.capacity = round_up(std::max<std::int64_t>(n, 1), kStep);
    for (auto* buf : {&l.keys, &l.values}) {
      buf->assign(static_cast<std::size_t>(kv_heads_ * l.capacity * head_dim_), 0.0f);
      for (int h = 0; h < kv_heads_ && n > 0; ++h) {
        std::memcpy(buf->data() + h * l.capacity * head_dim_, bytes.data() + off, block);
        off += block;
      }
    }
  }
  length_ = length;
}

}  // namespace tf
