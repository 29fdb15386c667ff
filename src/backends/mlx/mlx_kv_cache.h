#pragma once
// Keys and values of a stream's attention layers as MLX arrays (Metal; the CPU keeps them on the host:
// host_kv_cache.h).
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "backends/mlx/mlx_arrays.h"

namespace tf {

// Keys and values of one layer live in a buffer that grows in steps, so a decode step writes in place
// rather than concatenating the whole history.
class MlxKvCache final : public KvCache {
 public:
  MlxKvCache(int layers, int kv_heads, int head_dim)
      : kv_heads_(kv_heads),
        head_dim_(head_dim),
        keys_(static_cast<std::size_t>(layers)),
        values_(static_cast<std::size_t>(layers)) {}
  std::int64_t length() const override { return length_; }
  void truncate(std::int64_t length) override {
    if (length < 0 || length > length_) throw std::invalid_argument("kv cache truncate past its length");
    length_ = length;
  }
  std::size_t bytes() const override {
    std::size_t n = 0;
    for (const auto& k : keys_)
      if (k) n += 2 * k->nbytes();
    return n;
  }

  std::vector<std::uint8_t> snapshot() const override {
    const std::size_t per_head = static_cast<std::size_t>(length_) * static_cast<std::size_t>(head_dim_) * 4;
    std::vector<std::uint8_t> out(keys_.size() * 2 * static_cast<std::size_t>(kv_heads_) * per_head);
    if (length_ == 0) return out;
    std::size_t off = 0;
    const int n = static_cast<int>(length_);
    for (std::size_t l = 0; l < keys_.size(); ++l)
      for (const auto* buf : {&keys_[l], &values_[l]}) {
        auto rows = host_f32(mx::slice(**buf, {0, 0, 0, 0}, {1, kv_heads_, n, head_dim_}));
        std::memcpy(out.data() + off, rows.data<float>(), rows.nbytes());
        off += rows.nbytes();
      }
    return out;
  }

  void restore(std::span<const std::uint8_t> bytes) override {
    const std::size_t per_position =
        keys_.size() * 2 * static_cast<std::size_t>(kv_heads_) * static_cast<std::size_t>(head_dim_) * 4;
    if (per_position == 0 || bytes.size() % per_position != 0)
      throw std::invalid_argument("kv cache restore: bytes of another shape");
    const int n = static_cast<int>(bytes.size() / per_position);
    const int cap = std::max(kStep, (n + kStep - 1) / kStep * kStep);
    std::size_t off = 0;
    const std::size_t block =
        static_cast<std::size_t>(kv_heads_) * static_cast<std::size_t>(n) * static_cast<std::size_t>(head_dim_) * 4;
    for (std::size_t l = 0; l < keys_.size(); ++l)
      for (auto* buf : {&keys_[l], &values_[l]}) {
        mx::array full = mx::zeros({1, kv_heads_, cap, head_dim_}, mx::float32);
        if (n > 0) {
          std::vector<std::uint8_t> part(bytes.begin() + static_cast<std::ptrdiff_t>(off),
                                         bytes.begin() + static_cast<std::ptrdiff_t>(off + block));
          const mx::Shape zero{0, 0, 0, 0}, upto{1, kv_heads_, n, head_dim_};
          full = mx::slice_update(full, from_bytes(part, upto, mx::float32), zero, upto);
        }
        mx::eval(full);
        *buf = full;
        off += block;
      }
    length_ = n;
  }

  // Stores k, v [1, kv_heads, n, head_dim] at `start` of `layer`; returns views over 0 .. start + n.
  std::pair<mx::array, mx::array> write(int layer, const mx::array& k, const mx::array& v, std::int64_t start) {
    auto& K = keys_[static_cast<std::size_t>(layer)];
    auto& V = values_[static_cast<std::size_t>(layer)];
    const int n = k.shape(2);
    const auto end = static_cast<int>(start) + n;
    const int cap = K ? K->shape(2) : 0;
    if (end > cap) {
      const int new_cap = (end + kStep - 1) / kStep * kStep;
      mx::array K2 = mx::zeros({1, kv_heads_, new_cap, head_dim_}, mx::float32);
      mx::array V2 = mx::zeros({1, kv_heads_, new_cap, head_dim_}, mx::float32);
      if (K && start > 0) {
        const int keep = static_cast<int>(start);
        const mx::Shape zero{0, 0, 0, 0}, upto{1, kv_heads_, keep, head_dim_};
        K2 = mx::slice_update(K2, mx::slice(*K, zero, upto), zero, upto);
        V2 = mx::slice_update(V2, mx::slice(*V, zero, upto), zero, upto);
      }
      K = K2;
      V = V2;
    }
    const int s = static_cast<int>(start);
    const mx::Shape from{0, 0, s, 0}, to{1, kv_heads_, end, head_dim_};
    K = mx::slice_update(*K, k, from, to);
    V = mx::slice_update(*V, v, from, to);
    if (layer == static_cast<int>(keys_.size()) - 1) length_ = end;
    return {mx::slice(*K, {0, 0, 0, 0}, {1, kv_heads_, end, head_dim_}),
            mx::slice(*V, {0, 0, 0, 0}, {1, kv_heads_, end, head_dim_})};
  }

 private:
  static constexpr int kStep = 256;
  int kv_heads_, head_dim_;
  std::vector<std::optional<mx::array>> keys_, values_;
  std::int64_t length_ = 0;
};

}  // namespace tf
