#pragma once
// Reads a family's config.json values with errors that name the key: every problem is a CheckpointError of
// "<path>/config.json: '<key>' must be ...", so a malformed config is one line and exit 1, never a crash.
// A key that is absent or null takes the caller's fallback, as transformers' config classes do.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint/checkpoint_error.h"

namespace tf {

// A multimodal wrapper's text model (its `text_config` object), or the config itself for a text-only checkpoint.
inline const nlohmann::json& text_config(const nlohmann::json& top) {
  const auto tc = top.find("text_config");
  return tc != top.end() && tc->is_object() ? *tc : top;
}

class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& j, std::string file) : j_(j), file_(std::move(file)) {}

  std::int64_t integer(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end() || !it->is_number_integer() || it->get<std::int64_t>() <= 0)
      fail(std::string("'") + key + "' must be a positive integer");
    return it->get<std::int64_t>();
  }
  std::int64_t integer(const char* key, std::int64_t fallback) const {
    return present(j_, key) ? integer(key) : fallback;
  }
  // A count that may be 0 (e.g. num_nextn_predict_layers).
  std::int64_t count(const char* key, std::int64_t fallback) const {
    if (!present(j_, key)) return fallback;
    if (!j_[key].is_number_integer() || j_[key].get<std::int64_t>() < 0)
      fail(std::string("'") + key + "' must be an integer >= 0");
    return j_[key].get<std::int64_t>();
  }
  // A number of `obj` (this config or an object inside it, e.g. rope_parameters).
  double number(const nlohmann::json& obj, const char* key, double fallback) const {
    if (!present(obj, key)) return fallback;
    if (!obj[key].is_number()) fail(std::string("'") + key + "' must be a number");
    return obj[key].get<double>();
  }
  double number(const char* key, double fallback) const { return number(j_, key, fallback); }
  bool flag(const char* key, bool fallback) const {
    if (!present(j_, key)) return fallback;
    if (!j_[key].is_boolean()) fail(std::string("'") + key + "' must be true or false");
    return j_[key].get<bool>();
  }
  std::string text(const char* key, const std::string& fallback) const {
    if (!present(j_, key)) return fallback;
    if (!j_[key].is_string()) fail(std::string("'") + key + "' must be a string");
    return j_[key].get<std::string>();
  }
  const nlohmann::json& json() const { return j_; }
  [[noreturn]] void fail(const std::string& problem) const { throw CheckpointError(file_, problem); }

 private:
  static bool present(const nlohmann::json& obj, const char* key) {
    auto it = obj.find(key);
    return it != obj.end() && !it->is_null();
  }
  const nlohmann::json& j_;
  std::string file_;
};

}  // namespace tf
