#include <filesystem>
#include <fmt/format.h>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/model_cache.h"
#include "checkpoint/model_summary.h"
#include "cli/commands.h"

namespace tf::cli {

std::string resolve_model_path(const std::string& model) {
  if (!model.empty()) return model;
  const std::string path = default_model_path();
  if (!std::filesystem::exists(path))
    throw CheckpointError(path, "the default model is not in the cache; run scripts/fetch_default_model.sh (make does)");
  return path;
}

int run_info(const std::string& model) {
  try {
    const ModelSummary s = summarize_model(resolve_model_path(model));
    fmt::print("{}", format_summary(s));
    return 0;
  } catch (const CheckpointError& e) {
    fmt::print(stderr, "tensorfold info: {}\n", e.what());
    return 1;
  }
}

int run_serve(const std::string& model) {
  try {
    const ModelSummary s = summarize_model(resolve_model_path(model));
    fmt::print(stderr, "tensorfold serve: {} ({}, {} layers, {}) is readable, but serving is not implemented yet "
                       "(the vertical-slice issue #4 brings the engine and the HTTP API).\n",
               s.path, s.architecture, s.layers, s.quantization);
    return 2;
  } catch (const CheckpointError& e) {
    fmt::print(stderr, "tensorfold serve: {}\n", e.what());
    return 1;
  }
}

}  // namespace tf::cli
