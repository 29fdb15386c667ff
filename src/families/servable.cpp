#include "families/servable.h"

#include <algorithm>

namespace tf {

// Keep in step with load_model() in registry.cpp, which dispatches on the same names.
std::vector<std::string> served_architectures() { return {"llama"}; }

bool family_serves(const std::string& architecture) {
  const auto archs = served_architectures();
  return std::find(archs.begin(), archs.end(), architecture) != archs.end();
}

}  // namespace tf
