#pragma once
// What every file of the CUDA backend uses: a failed CUDA call becomes an exception (TF_CK), sizes round up
// to an alignment (align_up), and A/B knobs come from the environment (env_i64). The backend's files share their types and functions in tf::cuda_internal
// (tf::cuda is the kernels' API).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tf::cuda_internal {

inline void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}
#define TF_CK(x) ::tf::cuda_internal::ck((x), #x)

constexpr std::size_t kAlign = 256;
inline std::size_t align_up(std::size_t n, std::size_t a = kAlign) { return (n + a - 1) / a * a; }

// An integer knob from the environment (A/B runs), `fallback` when unset or empty.
inline std::int64_t env_i64(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::atoll(v) : fallback;
}

}  // namespace tf::cuda_internal
