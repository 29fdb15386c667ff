#include "families/servable.h"

#include <array>

namespace tf {
namespace {

struct ServedArchitecture {
  const char* architecture;  // GGUF general.architecture or config.json model_type
  const char* family;        // our folder under src/families/
  const char* works;         // what serves today
};

// A new family is one line here and one loader in registry.cpp.
constexpr std::array<ServedArchitecture, 3> kServed{{
    {"llama", "llama", "serves on MLX and CUDA"},
    {"qwen3_5", "qwen3_5", "serves on MLX (CUDA not yet; MTP heads not used yet)"},
    {"qwen3_5_text", "qwen3_5", "serves on MLX (CUDA not yet; MTP heads not used yet)"},
}};

const ServedArchitecture* find(const std::string& architecture) {
  for (const auto& s : kServed)
    if (architecture == s.architecture) return &s;
  return nullptr;
}

}  // namespace

const char* serving_family(const std::string& architecture) {
  const auto* s = find(architecture);
  return s ? s->family : nullptr;
}

bool family_serves(const std::string& architecture) { return find(architecture) != nullptr; }

std::string serving_summary(const std::string& architecture) {
  const auto* s = find(architecture);
  return s ? std::string(s->family) + ": " + s->works : "not served yet";
}

std::vector<std::string> served_architectures() {
  std::vector<std::string> out;
  for (const auto& s : kServed) out.emplace_back(s.architecture);
  return out;
}

}  // namespace tf
