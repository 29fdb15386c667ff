#pragma once
#include <string>
#include <vector>

namespace tf {

struct BackendInfo {
  std::string name;     // "mlx", "cuda"
  std::string version;  // the runtime's own version string
};
// The backends this binary was built with (not which devices are present).
std::vector<BackendInfo> compiled_backends();

}  // namespace tf
