#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hub/blob_download.h"
#include "hub/cached_checkpoint.h"
#include "hub/hub_settings.h"
#include "hub/repo_spec.h"

namespace tf::hub {

struct PullOptions {
  std::vector<std::string> include, exclude;
  DownloadOptions download;
};

struct PullResult {
  CachedCheckpoint checkpoint;
  std::string architecture;         // config.json model_type or GGUF general.architecture
  std::uint64_t bytes = 0;          // the selected files' total size
  std::uint64_t fetched_bytes = 0;  // of which this run downloaded (the rest was in the cache)
  std::size_t files = 0;
};

// `tensorfold pull`: resolves the revision, lists the files, fetches config.json (or the GGUF header) first
// and refuses a checkpoint no family serves before any weight is downloaded, then fetches what the cache
// lacks into the Hugging Face cache layout. Offline ($HF_HUB_OFFLINE) it only finds the cached checkpoint.
// Throws HubError with one line for the user.
PullResult pull_checkpoint(const RepoSpec& spec, const PullOptions& options, const HubSettings& settings);

// The cached checkpoint when complete, else pull_checkpoint's (what `serve REPO` does).
CachedCheckpoint cached_or_pull(const RepoSpec& spec, const PullOptions& options, const HubSettings& settings);

}  // namespace tf::hub
