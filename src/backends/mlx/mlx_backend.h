#pragma once
#include <memory>

#include "backends/backend.h"

namespace tf {
// The Backend on MLX's C++ API: the CPU with mlx[cpu] on Linux, Metal on macOS.
std::unique_ptr<Backend> make_mlx_backend();
}  // namespace tf
