#include "checkpoint/model_cache.h"

#include <cstdlib>
#include <filesystem>

namespace tf {

std::string model_cache_dir() {
  if (const char* home = std::getenv("TENSORFOLD_HOME"); home != nullptr && *home != '\0') return home;
  const char* user_home = std::getenv("HOME");
  return (std::filesystem::path(user_home != nullptr ? user_home : ".") / ".cache" / "tensorfold" / "models").string();
}

std::string default_model_path() { return (std::filesystem::path(model_cache_dir()) / kDefaultModelFile).string(); }

}  // namespace tf
