// Builds the family that serves a checkpoint: servable.cpp says which family serves its GGUF
// general.architecture or config.json model_type; a new family adds its loader here (and its folder).
#include <array>
#include <filesystem>
#include <string_view>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "families/llama/llama.h"
#include "families/model.h"
#include "families/qwen3_5/qwen3_5.h"
#include "families/servable.h"

namespace tf {
namespace {

struct FamilyLoader {
  const char* family;  // our folder under src/families/, as servable.cpp names it
  std::unique_ptr<Model> (*load)(const std::string& path, bool is_gguf, Backend& backend);
};

constexpr std::array<FamilyLoader, 2> kLoaders{{
    {"llama", load_llama},
    {"qwen3_5", load_qwen3_5},
}};

}  // namespace

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
  if (const char* family = serving_family(arch))
    for (const auto& f : kLoaders)
      if (std::string_view(family) == f.family) return f.load(path, !is_dir, backend);
  throw CheckpointError(path, "architecture '" + arch + "' is not served yet (tensorfold models lists the families)");
}

}  // namespace tf
