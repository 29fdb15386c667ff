#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "checkpoint/known_checkpoints.h"
#include "checkpoint/model_cache.h"
#include "cli/commands.h"

namespace tf::cli {

Command add_models_command(CLI::App& app) {
  auto* sub = app.add_subcommand("models", "List model families and known checkpoints");
  return {sub, [] {
            fmt::print("{:<12} {:<12} {:<42} {:<36} {}\n", "FAMILY", "MODEL_TYPE", "CHECKPOINT", "FORMAT", "STATUS");
            for (const auto& k : known_checkpoints())
              fmt::print("{:<12} {:<12} {:<42} {:<36} {}\n", k.family, k.model_type, k.checkpoint, k.format,
                         k.status);
            fmt::print("\nmodel cache: {}\n", model_cache_dir());
            return 0;
          }};
}

}  // namespace tf::cli
