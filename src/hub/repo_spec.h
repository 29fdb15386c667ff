#pragma once
#include <optional>
#include <string>

namespace tf::hub {

// `Org/Name`, `Org/Name@revision`, `Org/Name-GGUF:Q4_K_M` (llama.cpp's -hf form: the quantization picks the
// GGUF file), or both: `Org/Name-GGUF@rev:Q8_0`.
struct RepoSpec {
  std::string repo;          // "Org/Name"
  std::string revision;      // "main" unless given
  std::string quant;         // "" unless given
  std::string text() const;  // as the user would write it
};

// nullopt when `text` is not a repo id (e.g. a local path): two non-empty parts of [A-Za-z0-9._-], no "..",
// not ending in .gguf.
std::optional<RepoSpec> parse_repo_spec(const std::string& text);

}  // namespace tf::hub
