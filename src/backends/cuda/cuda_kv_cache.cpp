#include "backends/cuda/cuda_kv_cache.h"

#include <algorithm>

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

}  // namespace tf::cuda_internal
