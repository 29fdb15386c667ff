#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/model_cache.h"
#include "checkpoint/model_summary.h"
#include "cli/commands.h"
#include "families/model.h"

namespace tf::cli {

std::string resolve_model_path(const std::string& model) {
  if (!model.empty()) return model;
  const std::string path = default_model_path();
  if (!std::filesystem::exists(path))
    throw CheckpointError(path, "the default model is not in the cache; run scripts/fetch_default_model.sh (make does)");
  return path;
}

Command add_info_command(CLI::App& app) {
  auto model = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("info", "Describe a checkpoint from its metadata (weights are not read)");
  sub->add_option("model", *model, "GGUF file or checkpoint directory (default: the embedded model)");
  return {sub, [model] {
            try {
              auto summary = summarize_model(resolve_model_path(*model));
              summary.serving = serving_summary(summary.architecture);
              fmt::print("{}", format_summary(summary));
              return 0;
            } catch (const CheckpointError& e) {
              fmt::print(stderr, "tensorfold info: {}\n", e.what());
              return 1;
            }
          }};
}

}  // namespace tf::cli
