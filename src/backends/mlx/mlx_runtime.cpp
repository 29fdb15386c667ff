#include "backends/mlx/mlx_runtime.h"

#include <mlx/mlx.h>

namespace tf {

std::string mlx_runtime_version() {
  namespace mx = mlx::core;
  const bool gpu = mx::is_available(mx::Device::gpu);
  return std::string(mx::version()) + (gpu ? ", gpu" : ", cpu");
}

}  // namespace tf
