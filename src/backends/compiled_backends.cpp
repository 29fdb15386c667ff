#include "backends/compiled_backends.h"

#include <cstdlib>
#include <stdexcept>

#include "backends/tensor_parallel/tp_backend.h"
#ifdef TENSORFOLD_HAVE_MLX
#include "backends/mlx/mlx_backend.h"
#include "backends/mlx/mlx_runtime.h"
#endif
#ifdef TENSORFOLD_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
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

std::unique_ptr<Backend> make_backend(const std::string& name, int tp) {
  if (name != "auto" && name != "mlx" && name != "cuda")
    throw std::runtime_error("unknown backend '" + name + "' (auto, mlx, cuda)");
  if (tp < 1 || tp > 8) throw std::runtime_error("--tp must be 1 to 8, got " + std::to_string(tp));
#ifdef TENSORFOLD_HAVE_CUDA
  if (name == "cuda" || (name == "auto" && cuda_device_available()))
    return tp == 1 ? std::unique_ptr<Backend>(make_cuda_backend()) : make_cuda_ranks(tp);
#else
  if (name == "cuda") throw std::runtime_error("this build has no CUDA backend (configure with -DTENSORFOLD_CUDA=ON)");
#endif
#ifdef TENSORFOLD_HAVE_MLX
  if (tp == 1) return make_mlx_backend();
  std::vector<std::unique_ptr<Backend>> ranks;
  for (int r = 0; r < tp; ++r) ranks.push_back(make_mlx_backend());
  // TF_TP_APART=1: the ranks apart, each on its own thread with its ops queued, summing through the host: the
  // path CUDA ranks take, so that the CPU tests cover it too.
  const char* apart = std::getenv("TF_TP_APART");
  if (apart != nullptr && std::string(apart) == "1")
    return make_tensor_parallel_backend(std::move(ranks), std::make_unique<ThreadCollective>(tp), true);
  return make_tensor_parallel_backend(std::move(ranks), std::make_unique<HostCollective>(), /*shared_memory=*/true);
#else
  throw std::runtime_error("this build has no MLX backend (configure with -DTENSORFOLD_MLX=ON)");
#endif
}

}  // namespace tf
