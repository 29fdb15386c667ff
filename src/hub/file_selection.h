#pragma once
#include <string>
#include <vector>

#include "hub/hub_api.h"
#include "hub/repo_spec.h"

namespace tf::hub {

// Which of a repo's files a pull fetches.
//  - GGUF repos (GGUF files and no config.json + safetensors, or a :QUANT given): the GGUF file whose name
//    holds the quantization, as llama.cpp's -hf picks it (default Q4_K_M, else the first), with all parts
//    of a split file; mmproj files are left out.
//  - safetensors repos: everything but other frameworks' weights (*.bin, *.pt, *.h5, *.onnx, *.gguf, ...).
//  - --include GLOB (any of them) narrows the list, --exclude GLOB (any) removes; globs match the whole
//    repo path with fnmatch, '*' crossing '/' as in huggingface_hub's allow/ignore patterns.
// A repo with neither config.json + safetensors nor a GGUF file has nothing tensorfold reads: HubError.
struct FileSelection {
  bool gguf = false;
  std::vector<RepoFile> files;  // config.json first, then small files, then the weights
  std::string weights_entry;    // gguf: the (first) GGUF file; otherwise empty
  bool has_config = false;      // the repo has a config.json (fetched first, to check its model_type)
};

FileSelection select_files(const std::vector<RepoFile>& listing, const RepoSpec& spec,
                           const std::vector<std::string>& include, const std::vector<std::string>& exclude);

bool glob_match(const std::string& pattern, const std::string& path);

}  // namespace tf::hub
