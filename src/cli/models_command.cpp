#include <fmt/format.h>

#include "checkpoint/known_checkpoints.h"
#include "checkpoint/model_cache.h"
#include "cli/commands.h"

namespace tf::cli {

int run_models() {
  fmt::print("{:<12} {:<12} {:<42} {:<36} {}\n", "FAMILY", "MODEL_TYPE", "CHECKPOINT", "FORMAT", "STATUS");
  for (const auto& k : known_checkpoints())
    fmt::print("{:<12} {:<12} {:<42} {:<36} {}\n", k.family, k.model_type, k.checkpoint, k.format, k.status);
  fmt::print("\nmodel cache: {}\n", model_cache_dir());
  return 0;
}

int run_not_implemented(const std::string& what, const std::string& issue) {
  fmt::print(stderr, "tensorfold {}: not implemented yet ({}).\n", what, issue);
  return 2;
}

}  // namespace tf::cli
