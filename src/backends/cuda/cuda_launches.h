#pragma once
// The kernel launches of a fused tape: each step becomes its kernel launches with every argument fixed, the
// values that change from step to step read from the dyn block on the device.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "backends/cuda/cuda_fusion.h"
#include "backends/cuda/cuda_support.h"

namespace tf::cuda_internal {

struct Launch {
  std::function<void(cudaStream_t)> run;
};

// Where an op's dyn values start in the dyn block (TapeRunner::build_dyn lays it out).
struct DynRefs {
  std::size_t ids = 0, pos = 0, rows = 0, start = 0;
};

// Appends values to the dyn block (TapeRunner::build_dyn; an op's OpDescriptor::put_dyn), each at a 16-byte
// boundary.
class DynWriter {
 public:
  explicit DynWriter(std::vector<char>& block) : block_(block) {}
  // Copies `bytes` bytes of `data` to the end of the block; returns where they start.
  std::size_t put(const void* data, std::size_t bytes) {
    const std::size_t off = align_up(block_.size(), 16);
    block_.resize(off + bytes);
    std::memcpy(block_.data() + off, data, bytes);
    return off;
  }

 private:
  std::vector<char>& block_;
};

// The device buffers launches read besides activations, weights and caches.
struct LaunchBuffers {
  void* dyn_dev = nullptr;        // the dyn block (copied there before the launches)
  void* attn_work = nullptr;      // decode attention's partials (cuda::DecodeAttnArgs::work)
  void* imma_scratch = nullptr;   // the integer matmul's x terms (cuda::DecodeLinearArgs::imma_scratch)
  void* imma_scratch_alt = nullptr;  // a second one, of the same size (Step::x_in_alt)
  std::size_t imma_scratch_bytes = 0;
  void* prefill_scratch = nullptr;  // the prefill GEMMs' x terms (cuda::prefill_linear_mma, prefill_linear_imma)
  std::size_t prefill_scratch_bytes = 0;
  cuda::PrefillX prefill_x = cuda::PrefillX::Bf16;  // which terms prefill_linear_mma writes there (prompt precision)
};

// What the runner's buffers must hold for a tape's launches (TapeRunner::reserve_launch_buffers), gathered
// op by op (OpDescriptor::need_buffers).
struct LaunchBufferNeeds {
  std::size_t prefill_need = 0;  // the prefill GEMMs' x terms (LaunchBuffers::prefill_scratch)
  // Decode attention's partials (LaunchBuffers::attn_work): the most rows, splits, heads and head size.
  std::int64_t max_attn_rows = 0;
  int max_splits = 1, max_heads = 0, max_dim = 0;
};

// What an op's launch function (OpDescriptor::launch) reads: the tape, its steps, the dyn block and the
// runner's buffers. It appends the launches of one step to `launches`.
struct LaunchContext {
  const std::vector<Op>& ops;
  const std::vector<Step>& steps;
  const std::vector<DynRefs>& dref;
  const LaunchBuffers& buffers;
  char* dyn_dev;  // buffers.dyn_dev
  std::vector<Launch>& launches;
  // An input's memory; an input without memory throws std::logic_error.
  const float* in_ptr(const ActP& a) const;
  // The step after `st` (a step that writes the next one's x terms reads that one's weight).
  const Step& next(const Step& st) const { return steps[static_cast<std::size_t>(&st - steps.data()) + 1]; }
};

// The launches of `steps` (fuse()'s; dead ones launch nothing), in order. Every output the plan needs has its
// memory already (TapeRunner::place_outputs); an input without memory throws std::logic_error.
std::vector<Launch> build_launches(const std::vector<Op>& ops, const std::vector<Step>& steps,
                                   const std::vector<DynRefs>& dref, const LaunchBuffers& buffers);

}  // namespace tf::cuda_internal
