#include "backends/cuda/cuda_kv_cache.h"

#include <algorithm>

#include "backends/cuda/cuda_state_image.h"
#include "backends/cuda/cuda_support.h"

namespace tf::cuda_internal {

void grow_kv_cache(CudaKvCache& c, std::int64_t need, cudaStream_t stream) {
  KvStorage& s = *c.st;
  const int new_cap = static_cast<int>(std::max<std::int64_t>(align_up(static_cast<std::size_t>(need), 256),
                                                              2 * static_cast<std::int64_t>(s.cap)));
  KvStorage next;
  next.layers = s.layers;
  next.kv_heads = s.kv_heads;
  next.head_dim = s.head_dim;
  next.cap = new_cap;
  TF_CK(cudaMalloc(reinterpret_cast<void**>(&next.buf), next.bytes()));
  if (s.buf != nullptr && c.length_ > 0) {
    const std::size_t row = static_cast<std::size_t>(s.head_dim) * 4;
    for (int l = 0; l < s.layers; ++l)
      for (int kv = 0; kv < 2; ++kv) {
        float* src = kv == 0 ? s.k(l) : s.v(l);
        float* dst = kv == 0 ? next.k(l) : next.v(l);
        TF_CK(cudaMemcpy2DAsync(dst, row * static_cast<std::size_t>(new_cap), src, row * static_cast<std::size_t>(s.cap),
                                row * static_cast<std::size_t>(c.length_), static_cast<std::size_t>(s.kv_heads),
                                cudaMemcpyDeviceToDevice, stream));
      }
  }
  TF_CK(cudaStreamSynchronize(stream));
  cudaFree(s.buf);
  s.buf = next.buf;
  s.cap = new_cap;
  next.buf = nullptr;
}

namespace {
// Copies rows 0 .. length - 1 of every layer's keys and values between the cache and a buffer laid out
// [layer][k|v][kv_heads][length][head_dim], in host or device memory (cudaMemcpyDefault: unified addressing
// tells which), and waits for the copies.
void copy_rows(const KvStorage& s, std::int64_t length, std::uint8_t* buf, bool to_buf, cudaStream_t stream) {
  const std::size_t row = static_cast<std::size_t>(s.head_dim) * 4;
  const std::size_t head_bytes = row * static_cast<std::size_t>(length);
  std::size_t off = 0;
  for (int l = 0; l < s.layers; ++l)
    for (int kv = 0; kv < 2; ++kv) {
      float* dev = kv == 0 ? s.k(l) : s.v(l);
      if (to_buf)
        TF_CK(cudaMemcpy2DAsync(buf + off, head_bytes, dev, row * static_cast<std::size_t>(s.cap), head_bytes,
                                static_cast<std::size_t>(s.kv_heads), cudaMemcpyDefault, stream));
      else
        TF_CK(cudaMemcpy2DAsync(dev, row * static_cast<std::size_t>(s.cap), buf + off, head_bytes, head_bytes,
                                static_cast<std::size_t>(s.kv_heads), cudaMemcpyDefault, stream));
      off += head_bytes * static_cast<std::size_t>(s.kv_heads);
    }
  TF_CK(cudaStreamSynchronize(stream));
}
}  // namespace

std::vector<std::uint8_t> CudaKvCache::snapshot() const {
  cudaStream_t stream = settle_();
  std::vector<std::uint8_t> out(bytes_per_position() * static_cast<std::size_t>(length_));
  if (length_ > 0) copy_rows(*st, length_, out.data(), /*to_buf=*/true, stream);
  return out;
}

std::shared_ptr<const StateImage> CudaKvCache::image() const {
  cudaStream_t stream = settle_();
  auto image = std::make_shared<CudaStateImage>(std::vector<std::uint8_t>{},
                                                bytes_per_position() * static_cast<std::size_t>(length_));
  if (length_ > 0) copy_rows(*st, length_, image->device_data(), /*to_buf=*/true, stream);
  return image;
}

void CudaKvCache::restore(std::span<const std::uint8_t> bytes) { restore_rows(bytes.data(), bytes.size()); }

void CudaKvCache::restore_image(const StateImage& image) {
  const auto* dev = dynamic_cast<const CudaStateImage*>(&image);
  if (dev == nullptr || !dev->head().empty()) return restore_from_bytes(*this, image);
  restore_rows(dev->device_data(), dev->device_bytes());
}

void CudaKvCache::restore_rows(const std::uint8_t* bytes, std::size_t n) {
  const std::size_t per_position = bytes_per_position();
  if (n % per_position != 0) throw std::invalid_argument("kv cache restore: bytes of another shape");
  const auto length = static_cast<std::int64_t>(n / per_position);
  cudaStream_t stream = settle_();
  length_ = 0;  // nothing to keep when growing
  if (length > st->cap) grow_kv_cache(*this, length, stream);
  if (length > 0) copy_rows(*st, length, const_cast<std::uint8_t*>(bytes), /*to_buf=*/false, stream);
  length_ = length;
}

}  // namespace tf::cuda_internal
