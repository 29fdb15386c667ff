#include "backends/cuda/cuda_device_ids.h"

#include <algorithm>

#include "backends/cuda/cuda_support.h"
#include "backends/cuda/kernels/kernels.h"

namespace tf::cuda_internal {

CudaDeviceIds::CudaDeviceIds(std::shared_ptr<DeviceIdSlots> slots, int slot, std::int64_t rows)
    : slots_(std::move(slots)), slot_(slot), rows_(rows) {}

CudaDeviceIds::~CudaDeviceIds() { slots_->give(slot_); }

const std::vector<std::int32_t>& CudaDeviceIds::get() {
  if (!ready_) {
    TF_CK(cudaEventSynchronize(copied()));
    ids_.assign(host(), host() + rows_);
    ready_ = true;
  }
  return ids_;
}

std::int32_t* CudaDeviceIds::device() const { return slots_->device(slot_); }
std::int32_t* CudaDeviceIds::host() const { return slots_->host(slot_); }
cudaEvent_t CudaDeviceIds::copied() const { return slots_->event(slot_); }

DeviceIdSlots::~DeviceIdSlots() {
  for (auto* p : dev_) cudaFree(p);
  for (auto* p : host_) cudaFreeHost(p);
  for (auto e : events_) cudaEventDestroy(e);
}

int DeviceIdSlots::take(std::int64_t rows) {
  for (std::size_t i = free_.size(); i-- > 0;) {  // the latest given back first
    const int slot = free_[i];
    if (capacity_[static_cast<std::size_t>(slot)] >= rows) {
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      return slot;
    }
  }
  const std::int64_t cap = std::max<std::int64_t>(rows, cuda::kMaxDecodeRows);
  std::int32_t* d = nullptr;
  std::int32_t* h = nullptr;
  cudaEvent_t e = nullptr;
  TF_CK(cudaMalloc(reinterpret_cast<void**>(&d), static_cast<std::size_t>(cap) * sizeof(std::int32_t)));
  TF_CK(cudaMallocHost(reinterpret_cast<void**>(&h), static_cast<std::size_t>(cap) * sizeof(std::int32_t)));
  TF_CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  dev_.push_back(d);
  host_.push_back(h);
  events_.push_back(e);
  capacity_.push_back(cap);
  return static_cast<int>(dev_.size()) - 1;
}

}  // namespace tf::cuda_internal
