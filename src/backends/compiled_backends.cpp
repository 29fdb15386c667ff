#include "backends/compiled_backends.h"

#ifdef TENSORFOLD_HAVE_MLX
#include "backends/mlx/mlx_runtime.h"
#endif
#ifdef TENSORFOLD_HAVE_CUDA
#include "backends/cuda/cuda_runtime_info.h"
#endif

namespace tf {

std::vector<BackendInfo> compiled_backends() {
  std::vector<BackendInfo> out;
#ifdef TENSORFOLD_HAVE_MLX
  out.push_back({"mlx", mlx_runtime_version()});
#endif
#ifdef TENSORFOLD_HAVE_CUDA
  out.push_back({"cuda", cuda_runtime_version()});
#endif
  return out;
}

}  // namespace tf
