#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace tf {

struct BackendInfo {
  std::string name;     // "mlx", "cuda"
  std::string version;  // the runtime's own version string
};
// The backends this binary was built with (not which devices are present).
std::vector<BackendInfo> compiled_backends();

// The backend `name` (auto: CUDA where a device is visible, else MLX) with `tp` tensor-parallel ranks
// (backends/tensor_parallel/): CUDA ranks on one device each, summing over NCCL; MLX ranks in this process on
// the CPU, summing on the host. Throws std::runtime_error naming what is missing.
std::unique_ptr<Backend> make_backend(const std::string& name, int tp = 1);

}  // namespace tf
