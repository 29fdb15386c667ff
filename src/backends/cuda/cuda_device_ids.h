#pragma once
// Greedy ids on their way from the device (Backend::argmax_rows_async): each handle holds a slot (ids on the
// device, a pinned copy for the host, an event after the copy) from a pool the backend owns. Slots go back to
// the pool when their handle goes; a later user's writes come after the earlier ones in stream order, and the
// host reads a slot only after its own event, so a handle dropped with its copy still queued is harmless.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"

namespace tf::cuda_internal {

class DeviceIdSlots;

class CudaDeviceIds final : public DeviceIds {
 public:
  CudaDeviceIds(std::shared_ptr<DeviceIdSlots> slots, int slot, std::int64_t rows);
  ~CudaDeviceIds() override;
  CudaDeviceIds(const CudaDeviceIds&) = delete;
  CudaDeviceIds& operator=(const CudaDeviceIds&) = delete;
  std::int64_t rows() const override { return rows_; }
  const std::vector<std::int32_t>& get() override;
  std::int32_t* device() const;  // where the argmax writes and a fed embedding reads
  std::int32_t* host() const;    // the pinned copy
  cudaEvent_t copied() const;    // recorded after the copy to host()

 private:
  std::shared_ptr<DeviceIdSlots> slots_;
  int slot_;
  std::int64_t rows_;
  bool ready_ = false;
  std::vector<std::int32_t> ids_;
};

class DeviceIdSlots {
 public:
  ~DeviceIdSlots();
  // A free slot of at least `rows` ids (a decode step's kMaxDecodeRows at least when a new one is made).
  int take(std::int64_t rows);
  void give(int slot) { free_.push_back(slot); }
  std::int32_t* device(int slot) const { return dev_[static_cast<std::size_t>(slot)]; }
  std::int32_t* host(int slot) const { return host_[static_cast<std::size_t>(slot)]; }
  cudaEvent_t event(int slot) const { return events_[static_cast<std::size_t>(slot)]; }

 private:
  std::vector<std::int32_t*> dev_, host_;
  std::vector<std::int64_t> capacity_;
  std::vector<cudaEvent_t> events_;
  std::vector<int> free_;
};

}  // namespace tf::cuda_internal
