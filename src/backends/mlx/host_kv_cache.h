#pragma once
// Keys and values of a stream's attention layers in host memory, for the MLX backend on the CPU: decode and
// verify rows write and read them in place (kernels/invariant_attention.h), with no MLX graph between, and
// prefill chunks read them through MLX arrays over the same memory. Each layer's buffers are
// [kv_heads, capacity, head_dim] and grow in steps of kStep positions.
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tf {

class HostKvCache final : public KvCache {
 public:
  HostKvCache(int layers, int kv_heads, int head_dim);

  std::int64_t length() const override { return length_; }
  void truncate(std::int64_t length) override;
  std::size_t bytes() const override;
  // [per layer: keys [kv_heads, length, head_dim], then values], float32.
  std::vector<std::uint8_t> snapshot() const override;
  void restore(std::span<const std::uint8_t> bytes) override;

  // Stores k and v [rows, kv_heads * head_dim] at positions start .. start + rows - 1 of `layer`; the store's
  // length follows its last layer.
  void write(int layer, const float* k, const float* v, std::int64_t rows, std::int64_t start);
  // A layer's buffers and their capacity in positions (head stride capacity * head_dim).
  const float* keys(int layer) const { return layers_[static_cast<std::size_t>(layer)].keys.data(); }
  const float* values(int layer) const { return layers_[static_cast<std::size_t>(layer)].values.data(); }
  std::int64_t capacity(int layer) const { return layers_[static_cast<std::size_t>(layer)].capacity; }
  int kv_heads() const { return kv_heads_; }
  int head_dim() const { return head_dim_; }

 private:
  static constexpr std::int64_t kStep = 256;
  struct Layer {
    std::vector<float> keys, values;
    std::int64_t capacity = 0;
  };
  void reserve(Layer& l, std::int64_t positions, std::int64_t keep);

  int kv_heads_, head_dim_;
  std::vector<Layer> layers_;
  std::int64_t length_ = 0;
};

}  // namespace tf
