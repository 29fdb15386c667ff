#include "backends/cuda/cuda_state_image.h"

#include <cstring>
#include <utility>

#include "backends/cuda/cuda_support.h"

namespace tf::cuda_internal {

CudaStateImage::CudaStateImage(std::vector<std::uint8_t> head, std::size_t device_bytes)
    : head_(std::move(head)), device_bytes_(device_bytes) {
  TF_CK(cudaGetDevice(&device_));
  if (device_bytes_ > 0) TF_CK(cudaMalloc(reinterpret_cast<void**>(&data_), device_bytes_));
}

CudaStateImage::~CudaStateImage() { cudaFree(data_); }

std::vector<std::uint8_t> CudaStateImage::host_bytes() const {
  std::vector<std::uint8_t> out(bytes());
  std::memcpy(out.data(), head_.data(), head_.size());
  if (device_bytes_ > 0) {
    // The prompt cache's writer thread calls this: its current device is not necessarily the image's.
    TF_CK(cudaSetDevice(device_));
    TF_CK(cudaMemcpy(out.data() + head_.size(), data_, device_bytes_, cudaMemcpyDeviceToHost));
  }
  return out;
}

}  // namespace tf::cuda_internal
