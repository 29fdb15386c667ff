// Which family serves which checkpoint: by GGUF general.architecture or config.json model_type.
#include <filesystem>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "families/llama/llama_model.h"
#include "families/model.h"

namespace tf {

std::unique_ptr<Model> load_model(const std::string& path, Backend& backend) {
  std::error_code ec;
  const bool is_dir = std::filesystem::is_directory(path, ec);
  std::string arch;
  if (is_dir) {
    auto config = read_json_file((std::filesystem::path(path) / "config.json").string());
    arch = config.is_object() ? config.value("model_type", std::string()) : std::string();
  } else {
    GgufFile f(path);
    arch = f.header().get_string("general.architecture").value_or("");
  }
  if (arch == "llama") return load_llama(path, !is_dir, backend);
  throw CheckpointError(path, "architecture '" + arch + "' is not served yet (tensorfold models lists the families)");
}

}  // namespace tf
