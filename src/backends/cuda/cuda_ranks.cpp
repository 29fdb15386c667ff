// make_cuda_ranks (cuda_backend.h): CUDA backends as tensor-parallel ranks.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/nccl_collective.h"
#include "backends/tensor_parallel/tp_backend.h"

namespace tf {

std::unique_ptr<Backend> make_cuda_ranks(int ranks) {
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
  std::vector<std::unique_ptr<Backend>> backends;
  const char* one = std::getenv("TF_TP_ONE_DEVICE");
  if (one != nullptr && std::string(one) == "1") {
    for (int r = 0; r < ranks; ++r) backends.push_back(make_cuda_backend(0));
    return make_tensor_parallel_backend(std::move(backends), std::make_unique<ThreadCollective>(ranks),
                                        /*shared_memory=*/true);
  }
  if (visible < ranks)
    throw std::runtime_error("--tp " + std::to_string(ranks) + " needs " + std::to_string(ranks) +
                             " CUDA devices, one per rank; " + std::to_string(visible) + " visible");
  std::vector<int> devices;
  for (int r = 0; r < ranks; ++r) devices.push_back(r);
  auto collective = make_nccl_collective(devices);
  for (int r = 0; r < ranks; ++r) backends.push_back(make_cuda_backend(r));
  return make_tensor_parallel_backend(std::move(backends), std::move(collective));
}

}  // namespace tf
