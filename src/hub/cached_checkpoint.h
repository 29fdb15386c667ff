#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hub/repo_spec.h"

namespace tf::hub {

// A checkpoint complete in the cache: what `serve REPO` uses without touching the network.
struct CachedCheckpoint {
  std::string repo;
  std::string commit;
  std::filesystem::path snapshot;
  std::filesystem::path model_path;  // the snapshot folder (config.json + safetensors) or the GGUF file
};

// The snapshot that `spec`'s revision names in the cache (refs/<rev>, or the hash itself), when it holds a
// whole checkpoint: config.json with model.safetensors or every shard of model.safetensors.index.json, or
// the GGUF file the spec picks (every part of a split one). nullopt otherwise.
std::optional<CachedCheckpoint> find_cached_checkpoint(const RepoSpec& spec, const std::string& cache_dir);

// Every complete checkpoint in the cache, one per snapshot (a snapshot with several GGUF files gives each).
std::vector<CachedCheckpoint> list_cached_checkpoints(const std::string& cache_dir);

}  // namespace tf::hub
