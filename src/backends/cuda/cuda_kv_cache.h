#pragma once
// The CUDA backend's KV cache, and its growth by copying into a larger allocation.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>
#include <memory>
#include <stdexcept>

#include "backends/backend.h"

namespace tf::cuda_internal {

// ---- KV cache: one allocation, [layer][k|v][kv_heads][cap][head_dim] float32 ----
struct KvStorage {
  ~KvStorage() { cudaFree(buf); }
  float* buf = nullptr;
  int layers = 0, kv_heads = 0, head_dim = 0, cap = 0;
  float* k(int layer) const { return buf + (static_cast<std::size_t>(layer) * 2) * kv_heads * cap * head_dim; }
  float* v(int layer) const { return buf + (static_cast<std::size_t>(layer) * 2 + 1) * kv_heads * cap * head_dim; }
  std::size_t bytes() const { return static_cast<std::size_t>(layers) * 2 * kv_heads * cap * head_dim * 4; }
};

class CudaKvCache final : public KvCache {
 public:
  // `settle` runs whatever the backend has recorded but not launched and returns its stream, so that a copy
  // of the cache sees every write recorded before it (and a restore lands before any later one).
  CudaKvCache(int layers, int kv_heads, int head_dim, std::function<cudaStream_t()> settle)
      : st(std::make_shared<KvStorage>()), settle_(std::move(settle)) {
    st->layers = layers;
    st->kv_heads = kv_heads;
    st->head_dim = head_dim;
  }
  std::int64_t length() const override { return length_; }
  void truncate(std::int64_t length) override {
    if (length < 0 || length > length_) throw std::invalid_argument("kv cache truncate past its length");
    length_ = length;
  }
  std::size_t bytes() const override { return st->bytes(); }
  // [layer][k|v][kv_heads][length][head_dim] float32.
  std::vector<std::uint8_t> snapshot() const override;
  void restore(std::span<const std::uint8_t> bytes) override;
  // The same bytes in device memory (cuda_state_image.h), and back with a device-to-device copy.
  std::shared_ptr<const StateImage> image() const override;
  void restore_image(const StateImage& image) override;
  std::shared_ptr<KvStorage> st;
  std::int64_t length_ = 0;

 private:
  std::size_t bytes_per_position() const { return static_cast<std::size_t>(st->layers) * 2 * st->kv_heads * st->head_dim * 4; }
  // restore()'s body for bytes anywhere (host or device: the copies infer the direction).
  void restore_rows(const std::uint8_t* bytes, std::size_t n);
  std::function<cudaStream_t()> settle_;
};

// Moves c's rows to a buffer of capacity max(need rounded up to 256, twice the old), and waits for the copy.
// The caller first runs any pending tape that writes c: its writes must land in the old buffer.
void grow_kv_cache(CudaKvCache& c, std::int64_t need, cudaStream_t stream);

}  // namespace tf::cuda_internal
