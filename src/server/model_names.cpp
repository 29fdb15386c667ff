#include "server/model_names.h"

#include <algorithm>
#include <filesystem>

namespace tf::server {

std::string served_model_id(const std::string& name_flag, const std::string& model_path) {
  if (!name_flag.empty()) return name_flag;
  namespace fs = std::filesystem;
  fs::path p(model_path);
  while (!p.empty() && !p.has_filename() && p.has_parent_path() && p.parent_path() != p) p = p.parent_path();
  // Hugging Face hub cache: …/models--owner--name/snapshots/<revision>
  if (p.has_parent_path() && p.parent_path().filename() == "snapshots") {
    const std::string repo = p.parent_path().parent_path().filename().string();
    if (repo.rfind("models--", 0) == 0) {
      std::string id = repo.substr(8);
      if (auto at = id.find("--"); at != std::string::npos) id = id.substr(0, at) + "/" + id.substr(at + 2);
      return id;
    }
  }
  std::string name = p.filename().string();
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) name.resize(name.size() - 5);
  return name.empty() ? std::string("tensorfold") : name;
}

bool ModelNames::matches(std::string_view requested) const {
  return requested == id || std::find(aliases.begin(), aliases.end(), requested) != aliases.end();
}

}  // namespace tf::server
