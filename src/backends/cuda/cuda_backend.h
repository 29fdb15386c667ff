#pragma once
// The CUDA backend (ARCHITECTURE §2): tf::Backend on our own kernels (src/backends/cuda/kernels/), one CUDA
// stream, lazy execution with CUDA graphs for decode. docs/cuda.md describes the design.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/kernels/kernels.h"

namespace tf {

struct CudaBackendStats {
  std::int64_t flushes = 0;          // tapes executed
  std::int64_t graph_replays = 0;    // tapes run by replaying a captured graph
  std::int64_t graph_captures = 0;   // graphs captured and instantiated
  std::int64_t eager_flushes = 0;    // tapes launched kernel by kernel (prefill, or graphs off)
  std::int64_t launches = 0;         // kernels of the last step (the tapes run since the wait before it)
  double plan_us = 0;                // host time in tape execution before the final wait (all tapes)
  double wait_us = 0;                // host time waiting for the GPU at the end of tapes (all tapes)
};

// A sum over tensor-parallel ranks on a rank's stream: NCCL's all-reduce of the rank's communicator
// (nccl_collective.h), queued in stream order and captured into the rank's CUDA graphs like a kernel.
class StreamReduce {
 public:
  virtual ~StreamReduce() = default;
  virtual void sum(const float* in, float* out, std::size_t count, cudaStream_t stream) const = 0;
};

class CudaBackend : public Backend {
 public:
  // Graphs on (the default) replays a captured graph for every decode tape (all rows <= 16) seen before.
  virtual void set_graphs(bool on) = 0;
  virtual CudaBackendStats stats() const = 0;
  // A weight whose values are generated on the device (benchmarks: nothing crosses PCIe or reaches disk).
  // bits 0: dense `dtype` (uniform in [-a, a)); else affine codes of random bits and scales/biases of `dtype`.
  // A 1-row dense weight (a norm) is float32 around 1.
  virtual DeviceWeight random_weight(std::int64_t rows, std::int64_t cols, int bits, int group, HostDType dtype,
                                     std::uint64_t seed) = 0;
  // The engine's sampling function on the device, one token per row of logits [rows, vocab].
  virtual std::vector<std::int32_t> sample(const Tensor& logits, std::span<const cuda::SampleArgs> args) = 0;
  virtual cuda::WeightView weight_view(const DeviceWeight& w) const = 0;
  // Device bytes of every weight uploaded or generated so far (codes, scales, biases, dense values).
  virtual std::size_t weight_bytes() const = 0;
  virtual cudaStream_t stream() const = 0;
  virtual int device() const = 0;
  // x summed over the ranks by `reduce` (recorded on the tape like any op; the ranks' sums meet on the GPU).
  virtual Tensor all_reduce_sum(const Tensor& x, std::shared_ptr<const StreamReduce> reduce) = 0;
};

// True when a CUDA device is visible to this process (never throws).
bool cuda_device_available();
// Throws std::runtime_error when no device is usable. `device`: the CUDA device this backend computes on (every
// call it serves makes it the calling thread's current device).
std::unique_ptr<CudaBackend> make_cuda_backend(int device = 0);
// `ranks` tensor-parallel ranks (backends/tensor_parallel/), rank r on device r, summing over NCCL
// (nccl_collective.h). TF_TP_ONE_DEVICE=1 puts every rank on device 0 summing through the host on the ranks'
// threads instead (tests of the split on one GPU: NCCL refuses two ranks on one device).
std::unique_ptr<Backend> make_cuda_ranks(int ranks);

}  // namespace tf
