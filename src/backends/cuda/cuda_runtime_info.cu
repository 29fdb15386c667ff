#include <cuda_runtime_api.h>

#include <string>

#include "backends/cuda/cuda_runtime_info.h"

namespace tf {

std::string cuda_runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return "unknown";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace tf
