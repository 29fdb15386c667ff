#pragma once
// A CUDA store's image (backends/state_image.h): its snapshot() bytes kept in device memory, so that the
// prompt cache restores a retained prefix with a copy inside the device instead of two trips over PCIe (a
// float32 KV row of an 8B model is 256 KiB; session 24 measured ~0.37 ms per restored token through the host).
// A few leading bytes (a store's header, e.g. the recurrent state's length) stay on the host. The stores write
// an image on their stream and wait for it, so an image is complete once made.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/state_image.h"

namespace tf::cuda_internal {

class CudaStateImage final : public StateImage {
 public:
  CudaStateImage(std::vector<std::uint8_t> head, std::size_t device_bytes);
  ~CudaStateImage() override;
  CudaStateImage(const CudaStateImage&) = delete;
  CudaStateImage& operator=(const CudaStateImage&) = delete;

  std::size_t bytes() const override { return head_.size() + device_bytes_; }
  // head, then the device bytes copied to the host (the snapshot file's payload); any thread.
  std::vector<std::uint8_t> host_bytes() const override;
  const std::vector<std::uint8_t>& head() const { return head_; }
  std::uint8_t* device_data() const { return data_; }
  std::size_t device_bytes() const { return device_bytes_; }

 private:
  std::vector<std::uint8_t> head_;
  std::uint8_t* data_ = nullptr;
  std::size_t device_bytes_ = 0;
  int device_ = 0;
};

}  // namespace tf::cuda_internal
