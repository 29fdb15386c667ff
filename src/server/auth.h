#pragma once
// Bearer-token API keys (--api-key, repeatable). With none configured every request is allowed.
#include <string>
#include <string_view>
#include <vector>

namespace tf::server {

class ApiKeys {
 public:
  explicit ApiKeys(std::vector<std::string> keys = {});
  bool required() const { return !keys_.empty(); }
  // True when no key is configured, or `authorization` is "Bearer <one of the keys>" (scheme case-insensitive).
  // Keys are compared in time independent of where they differ.
  bool allows(std::string_view authorization) const;

 private:
  std::vector<std::string> keys_;
};

}  // namespace tf::server
