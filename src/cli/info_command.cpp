#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/model_cache.h"
#include "checkpoint/model_summary.h"
#include "cli/commands.h"
#include "families/model.h"
#include "families/servable.h"
#include "hub/download_progress.h"
#include "hub/hub_pull.h"
#include "hub/remote_info.h"

namespace tf::cli {

std::string resolve_model_path(const std::string& model) {
  if (!model.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(model, ec)) return model;
    // Not a path: a hub repo id is taken from the cache, pulled first when the cache lacks it.
    if (const auto spec = hub::parse_repo_spec(model))
      return hub::cached_or_pull(*spec, {}, hub::hub_settings_from_env()).model_path.string();
    return model;
  }
  const std::string path = default_model_path();
  if (!std::filesystem::exists(path))
    throw CheckpointError(path, "the default model is not in the cache; run scripts/fetch_default_model.sh (make does)");
  return path;
}

std::string hub_model_name(const std::string& model) {
  std::error_code ec;
  if (model.empty() || std::filesystem::exists(model, ec)) return std::string();
  const auto spec = hub::parse_repo_spec(model);
  return spec ? spec->text() : std::string();
}

namespace {

// `info Org/Name` for a repo the cache lacks: what config.json (or the GGUF header) and the file list say,
// without downloading weights. False when MODEL is a path or a cached checkpoint (summarized in full).
bool print_remote_info(const std::string& model) {
  std::error_code ec;
  if (model.empty() || std::filesystem::exists(model, ec)) return false;
  const auto spec = hub::parse_repo_spec(model);
  if (!spec) return false;
  const auto settings = hub::hub_settings_from_env();
  if (hub::find_cached_checkpoint(*spec, settings.cache_dir)) return false;
  const hub::RemoteInfo r = hub::remote_info(*spec, settings);
  fmt::print("{} @ {} (not in the cache; from the hub's file list and {})\n", spec->text(), r.commit,
             r.format == "gguf" ? "the GGUF header" : "config.json");
  fmt::print("  format                     {}\n", r.format);
  if (!r.weights_file.empty()) fmt::print("  file                       {}\n", r.weights_file);
  fmt::print("  architecture               {} ({})\n", r.architecture.empty() ? "unknown" : r.architecture,
             family_serves(r.architecture) ? "served" : "not served yet");
  fmt::print("  download                   {} files, {}\n", r.files, hub::human_bytes(r.bytes));
  fmt::print("{}", r.config_text);
  return true;
}

}  // namespace

Command add_info_command(CLI::App& app) {
  auto model = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("info", "Describe a checkpoint from its metadata (weights are not read)");
  sub->add_option("model", *model, "GGUF file, checkpoint directory or hub repo Org/Name[@REV][:QUANT] (default: the embedded model)");
  return {sub, [model] {
            try {
              if (print_remote_info(*model)) return 0;
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
