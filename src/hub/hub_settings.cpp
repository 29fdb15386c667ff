#include "hub/hub_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tf::hub {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

bool env_true(const char* name) {
  std::string v = env(name);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

}  // namespace

HubSettings hub_settings_from_env() {
  namespace fs = std::filesystem;
  HubSettings s;
  s.endpoint = env("HF_ENDPOINT");
  if (s.endpoint.empty()) s.endpoint = "https://huggingface.co";
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();

  const std::string home = env("HOME").empty() ? std::string(".") : env("HOME");
  std::string hf_home = env("HF_HOME");
  if (hf_home.empty()) {
    const std::string xdg = env("XDG_CACHE_HOME");
    hf_home = ((xdg.empty() ? fs::path(home) / ".cache" : fs::path(xdg)) / "huggingface").string();
  }
  s.cache_dir = env("HF_HUB_CACHE");
  if (s.cache_dir.empty()) s.cache_dir = env("HUGGINGFACE_HUB_CACHE");  // the older name, still honoured
  if (s.cache_dir.empty()) s.cache_dir = (fs::path(hf_home) / "hub").string();

  s.token = trimmed(env("HF_TOKEN"));
  if (s.token.empty()) {
    std::string token_path = env("HF_TOKEN_PATH");
    if (token_path.empty()) token_path = (fs::path(hf_home) / "token").string();
    std::ifstream in(token_path);
    std::string line;
    if (in && std::getline(in, line)) s.token = trimmed(line);
  }
  s.offline = env_true("HF_HUB_OFFLINE");
  return s;
}

}  // namespace tf::hub
