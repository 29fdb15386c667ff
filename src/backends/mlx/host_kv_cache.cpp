#include "backends/mlx/host_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tf {

HostKvCache::HostKvCache(int layers, int kv_heads, int head_dim)
    : kv_heads_(kv_heads), head_dim_(head_dim), layers_(static_cast<std::size_t>(layers)) {
  if (layers < 1 || kv_heads < 1 || head_dim < 1) throw std::invalid_argument("kv cache: shape");
}

void HostKvCache::truncate(std::int64_t length) {
  if (length < 0 || length > length_) throw std::invalid_argument("kv cache truncate past its length");
  length_ = length;
}

std::size_t HostKvCache::bytes() const {
  std::size_t n = 0;
  for (const auto& l : layers_) n += (l.keys.capacity() + l.values.capacity()) * sizeof(float);
  return n;
}

// Grows l to hold `positions`, keeping its first `keep` positions of each head.
void HostKvCache::reserve(Layer& l, std::int64_t positions, std::int64_t keep) {
  if (positions <= l.capacity) return;
  const std::int64_t cap = (positions + kStep - 1) / kStep * kStep, d = head_dim_;
  for (auto* buf : {&l.keys, &l.values}) {
    std::vector<float> grown(static_cast<std::size_t>(kv_heads_ * cap * d), 0.0f);
    for (int h = 0; h < kv_heads_ && keep > 0; ++h)
      std::memcpy(grown.data() + h * cap * d, buf->data() + h * l.capacity * d,
                  static_cast<std::size_t>(keep * d) * sizeof(float));
    *buf = std::move(grown);
  }
  l.capacity = cap;
}

void HostKvCache::write(int layer, const float* k, const float* v, std::int64_t rows, std::int64_t start) {
  if (layer < 0 || static_cast<std::size_t>(layer) >= layers_.size()) throw std::invalid_argument("kv cache: layer");
  if (start < 0 || start > length_) throw std::invalid_argument("kv cache: a gap before the rows");
  auto& l = layers_[static_cast<std::size_t>(layer)];
  reserve(l, start + rows, start);
  const std::int64_t d = head_dim_, width = kv_heads_ * d;
  for (std::int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < kv_heads_; ++h) {
      const std::size_t at = static_cast<std::size_t>((h * l.capacity + start + r) * d);
      std::memcpy(l.keys.data() + at, k + r * width + h * d, static_cast<std::size_t>(d) * sizeof(float));
      std::memcpy(l.values.data() + at, v + r * width + h * d, static_cast<std::size_t>(d) * sizeof(float));
    }
  if (static_cast<std::size_t>(layer) + 1 == layers_.size()) length_ = start + rows;
}

std::vector<std::uint8_t> HostKvCache::snapshot() const {
  const std::size_t block = static_cast<std::size_t>(length_ * head_dim_) * sizeof(float);
  std::vector<std::uint8_t> out(layers_.size() * 2 * static_cast<std::size_t>(kv_heads_) * block);
  std::size_t off = 0;
  for (const auto& l : layers_)
    for (const auto* buf : {&l.keys, &l.values})
      for (int h = 0; h < kv_heads_ && length_ > 0; ++h) {
        std::memcpy(out.data() + off, buf->data() + h * l.capacity * head_dim_, block);
        off += block;
      }
  return out;
}

void HostKvCache::restore(std::span<const std::uint8_t> bytes) {
  const std::size_t per_position = layers_.size() * 2 * static_cast<std::size_t>(kv_heads_ * head_dim_) * sizeof(float);
  if (bytes.size() % per_position != 0) throw std::invalid_argument("kv cache restore: bytes of another shape");
  const auto n = static_cast<std::int64_t>(bytes.size() / per_position);
  const std::size_t block = static_cast<std::size_t>(n * head_dim_) * sizeof(float);
  std::size_t off = 0;
  for (auto& l : layers_) {
    l = Layer{};
    reserve(l, std::max<std::int64_t>(n, 1), 0);
    for (auto* buf : {&l.keys, &l.values})
      for (int h = 0; h < kv_heads_; ++h) {
        std::memcpy(buf->data() + h * l.capacity * head_dim_, bytes.data() + off, block);
        off += block;
      }
  }
  length_ = n;
}

}  // namespace tf
