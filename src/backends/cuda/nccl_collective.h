#pragma once
// Tensor-parallel sums over NCCL (backends/tensor_parallel/collective.h): one process drives every rank's
// device, each rank on its own thread, and a rank's sum is an NCCL all-reduce queued on its stream, inside its
// CUDA graphs. NCCL is loaded at run time (dlopen of libnccl.so.2, or TF_NCCL_LIBRARY), so that a binary that
// serves one GPU needs no NCCL installed; its few C entry points are declared in nccl_collective.cpp.
#include <memory>
#include <vector>

#include "backends/tensor_parallel/collective.h"

namespace tf {

// Communicators over `devices` (rank r on devices[r]). Throws std::runtime_error naming what is missing.
std::unique_ptr<Collective> make_nccl_collective(const std::vector<int>& devices);

}  // namespace tf
