#pragma once
// The names a client may use for the served model: its id (--name, else derived from the checkpoint path)
// and the --alias names.
#include <string>
#include <string_view>
#include <vector>

namespace tf::server {

// --name when given; else the checkpoint's file name without ".gguf", or its directory name; a Hugging Face
// cache snapshot (…/models--owner--name/snapshots/<rev>) is "owner/name".
std::string served_model_id(const std::string& name_flag, const std::string& model_path);

struct ModelNames {
  std::string id;
  std::vector<std::string> aliases;
  // --model-names strict: a request's `model` must be the id or an alias (vLLM: else 404). any (the default,
  // one model being served): any name is this model, as llama-server and most local servers do, so clients
  // that hard-code a name (Claude Code's claude-...) work; replies still name the served id.
  bool strict = false;
  bool matches(std::string_view requested) const;  // the id or an alias
  bool accepts(std::string_view requested) const { return !strict || matches(requested); }
};

}  // namespace tf::server
