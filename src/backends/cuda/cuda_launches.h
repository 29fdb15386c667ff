#pragma once
// The kernel launches of a fused tape: each step becomes its kernel launches with every argument fixed, the
// values that change from step to step read from the dyn block on the device.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "backends/cuda/cuda_fusion.h"

namespace tf::cuda_internal {

struct Launch {
  std::function<void(cudaStream_t)> run;
};

// Where an op's dyn values start in the dyn block (TapeRunner::build_dyn lays it out).
struct DynRefs {
  std::size_t ids = 0, pos = 0, rows = 0, start = 0;
};

// The device buffers launches read besides activations, weights and caches.
struct LaunchBuffers {
  void* dyn_dev = nullptr;        // the dyn block (copied there before the launches)
  void* attn_work = nullptr;      // decode attention's partials (cuda::DecodeAttnArgs::work)
  void* imma_scratch = nullptr;   // the integer matmul's x terms (cuda::DecodeLinearArgs::imma_scratch)
  void* imma_scratch_alt = nullptr;  // a second one, of the same size (Step::x_in_alt)
  std::size_t imma_scratch_bytes = 0;
  void* prefill_scratch = nullptr;  // the integer prefill GEMM's x terms (cuda::prefill_linear_imma)
  std::size_t prefill_scratch_bytes = 0;
};

// The launches of `steps` (fuse()'s; dead ones launch nothing), in order. Every output the plan needs has its
// memory already (TapeRunner::place_outputs); an input without memory throws std::logic_error.
std::vector<Launch> build_launches(const std::vector<Op>& ops, const std::vector<Step>& steps,
                                   const std::vector<DynRefs>& dref, const LaunchBuffers& buffers);

}  // namespace tf::cuda_internal
