#include "server/auth.h"

#include <algorithm>
#include <cctype>

namespace tf::server {

namespace {

bool same_secret(std::string_view a, std::string_view b) {
  // Walks the whole of `a` whatever the contents, so timing does not say where a guess went wrong.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

ApiKeys::ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {
  keys_.erase(std::remove(keys_.begin(), keys_.end(), std::string()), keys_.end());
}

bool ApiKeys::allows(std::string_view authorization) const {
  if (keys_.empty()) return true;
  authorization = trim(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  if (authorization[kScheme.size()] != ' ' && authorization[kScheme.size()] != '\t') return false;
  const auto token = trim(authorization.substr(kScheme.size() + 1));
  bool ok = false;
  for (const auto& key : keys_) ok |= same_secret(token, key);
  return ok;
}

}  // namespace tf::server
