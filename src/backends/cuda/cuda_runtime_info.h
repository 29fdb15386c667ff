#pragma once
#include <string>

namespace tf {
// The CUDA runtime version this binary was built against ("13.0"); needs no GPU.
std::string cuda_runtime_version();
}  // namespace tf
