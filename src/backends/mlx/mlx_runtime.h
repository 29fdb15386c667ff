#pragma once
#include <string>

namespace tf {
// MLX's version plus the device it runs on here ("0.32.4, cpu" on Linux, "..., gpu" with Metal).
std::string mlx_runtime_version();
}  // namespace tf
