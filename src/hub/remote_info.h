#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hub/hub_settings.h"
#include "hub/repo_spec.h"

namespace tf::hub {

// What `tensorfold info REPO` can say about a repo the cache lacks, from the hub's file list plus
// config.json or the GGUF file's first bytes: no weights are downloaded (config.json lands in the cache,
// a GGUF prefix stays as the start of a later pull).
struct RemoteInfo {
  std::string repo, commit;
  std::string format;        // "gguf" or "safetensors"
  std::string architecture;  // model_type or general.architecture
  std::string weights_file;  // the GGUF file the spec picks
  std::uint64_t bytes = 0;   // the files a pull would fetch
  std::size_t files = 0;
  std::string config_text;  // config.json's numbers, "key value" lines (safetensors repos)
};

RemoteInfo remote_info(const RepoSpec& spec, const HubSettings& settings);

}  // namespace tf::hub
