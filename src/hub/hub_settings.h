#pragma once
#include <string>

namespace tf::hub {

// The environment huggingface_hub reads, read the same way, so both tools agree on where and how.
struct HubSettings {
  std::string endpoint;   // $HF_ENDPOINT, else https://huggingface.co (no trailing slash)
  std::string token;      // $HF_TOKEN, else the file `hf auth login` writes ($HF_HOME/token); may be empty
  bool offline = false;   // $HF_HUB_OFFLINE is 1/ON/YES/TRUE: only the cache is used
  std::string cache_dir;  // $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
};

HubSettings hub_settings_from_env();

}  // namespace tf::hub
