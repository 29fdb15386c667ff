#include <fmt/format.h>

#include <algorithm>

#include <CLI/CLI.hpp>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/known_checkpoints.h"
#include "checkpoint/model_cache.h"
#include "checkpoint/model_summary.h"
#include "cli/commands.h"
#include "families/servable.h"
#include "hub/cached_checkpoint.h"
#include "hub/download_progress.h"
#include "hub/hub_settings.h"

namespace tf::cli {
namespace {

// The checkpoints in the Hugging Face cache, each read from its headers (config.json, safetensors or GGUF
// header): family, size, quantization, and whether a family serves it today.
void print_cached(const std::string& cache_dir) {
  const auto cached = hub::list_cached_checkpoints(cache_dir);
  fmt::print("\nIn the Hugging Face cache ({}):\n", cache_dir);
  if (cached.empty()) {
    fmt::print("  none (tensorfold pull Org/Name fetches one)\n");
    return;
  }
  fmt::print("{:<44} {:<12} {:<10} {:<14} {:<12} {}\n", "REPO", "REVISION", "FAMILY", "QUANTIZATION", "SIZE", "SERVES");
  for (const auto& c : cached) {
    std::string name = c.repo;
    if (c.model_path != c.snapshot) name += ":" + c.model_path.filename().string();
    try {
      const ModelSummary s = summarize_model(c.model_path.string());
      fmt::print("{:<44} {:<12} {:<10} {:<14} {:<12} {}\n", name, c.commit.substr(0, 12), s.architecture,
                 s.quantization, hub::human_bytes(s.weight_bytes), family_serves(s.architecture) ? "yes" : "not yet");
    } catch (const CheckpointError& e) {
      fmt::print("{:<44} {:<12} unreadable: {}\n", name, c.commit.substr(0, 12), e.problem());
    }
  }
}

}  // namespace

Command add_models_command(CLI::App& app) {
  auto* sub = app.add_subcommand("models", "List model families, known checkpoints and the checkpoints in the cache");
  return {sub, [] {
            std::size_t format_width = 6;  // the FORMAT column as wide as its longest entry
            for (const auto& k : known_checkpoints()) format_width = std::max(format_width, k.format.size());
            fmt::print("{:<12} {:<12} {:<42} {:<{}} {}\n", "FAMILY", "MODEL_TYPE", "CHECKPOINT", "FORMAT", format_width,
                       "STATUS");
            for (const auto& k : known_checkpoints())
              fmt::print("{:<12} {:<12} {:<42} {:<{}} {}\n", k.family, k.model_type, k.checkpoint, k.format,
                         format_width, serving_status(std::string(k.model_type)));
            fmt::print("\nmodel cache: {}\n", model_cache_dir());
            print_cached(hub::hub_settings_from_env().cache_dir);
            return 0;
          }};
}

}  // namespace tf::cli
