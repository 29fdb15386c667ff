#pragma once
// Weights on the device: HostWeights uploaded into the layouts the kernels read, random weights generated on
// the device, and the kernels' view of either (cuda::WeightView).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "backends/backend.h"
#include "backends/cuda/cuda_support.h"
#include "backends/cuda/kernels/kernels.h"

namespace tf::cuda_internal {

using cuda::ElemType;

// ---- device memory ----
struct DeviceBlob final : Tensor::Impl {
  DeviceBlob(std::size_t n, ElemType t) : bytes(n), dtype(t) { TF_CK(cudaMalloc(&ptr, std::max<std::size_t>(n, 16))); }
  ~DeviceBlob() override { cudaFree(ptr); }
  void* ptr = nullptr;
  std::size_t bytes;
  ElemType dtype;
  // Where a second layout of the blob's values starts, in bytes (0: none). A scales blob of a weight on the
  // integer kernel carries the tiled copy of the scales and biases there (kernels.h, tile_scale_bias).
  std::size_t aux_offset = 0;
};

// The device memory of a weight's tensor (a weight of another backend throws).
inline DeviceBlob* blob(const Tensor& t) {
  auto* b = dynamic_cast<DeviceBlob*>(t.impl());
  if (b == nullptr) throw std::logic_error("weight does not belong to the CUDA backend");
  return b;
}

// A HostWeight on the device: dense f16/bf16 as they are, norms and f32 as float32; 4- and 8-bit affine codes
// (groups a multiple of 32) in the tiled layout where the format allows, 2-bit codes (groups a multiple of 64)
// as the checkpoint stores them, float32 scales and biases as f16 where every value is exact; other bit
// widths and groups dequantized to float32.
DeviceWeight upload_weight(const HostWeight& w);
// CudaBackend::random_weight (cuda_backend.h), generated on `stream`; waits for it.
DeviceWeight random_device_weight(std::int64_t rows, std::int64_t cols, int bits, int group, HostDType dtype,
                                  std::uint64_t seed, cudaStream_t stream);
cuda::WeightView device_weight_view(const DeviceWeight& d);

}  // namespace tf::cuda_internal
