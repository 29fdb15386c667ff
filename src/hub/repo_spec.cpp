#include "hub/repo_spec.h"

#include <cctype>

namespace tf::hub {
namespace {

bool valid_part(const std::string& s) {
  if (s.empty() || s.size() > 96 || s == "." || s == ".." || s.find("..") != std::string::npos) return false;
  if (s.front() == '-' || s.front() == '.' || s.back() == '.') return false;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool valid_revision(const std::string& s) {
  if (s.empty() || s.size() > 255 || s.find("..") != std::string::npos || s.front() == '/') return false;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.' && c != '/') return false;
  }
  return true;
}

}  // namespace

std::string RepoSpec::text() const {
  std::string t = repo;
  if (revision != "main") t += "@" + revision;
  if (!quant.empty()) t += ":" + quant;
  return t;
}

std::optional<RepoSpec> parse_repo_spec(const std::string& text) {
  RepoSpec spec;
  std::string rest = text;
  if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
    spec.quant = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (!valid_part(spec.quant)) return std::nullopt;
  }
  spec.revision = "main";
  if (const auto at = rest.find('@'); at != std::string::npos) {
    spec.revision = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (!valid_revision(spec.revision)) return std::nullopt;
  }
  const auto slash = rest.find('/');
  if (slash == std::string::npos || rest.find('/', slash + 1) != std::string::npos) return std::nullopt;
  if (!valid_part(rest.substr(0, slash)) || !valid_part(rest.substr(slash + 1))) return std::nullopt;
  // "models/x.gguf" that does not exist is a mistyped path, not a repo to look for on the hub.
  if (rest.size() > 5 && rest.substr(rest.size() - 5) == ".gguf") return std::nullopt;
  spec.repo = rest;
  return spec;
}

}  // namespace tf::hub
