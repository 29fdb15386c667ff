#pragma once
// Reads a family's GGUF metadata (`<arch>.<key>`) with errors that name the key, as ConfigReader does for
// config.json: every problem is a CheckpointError "<file>: '<arch>.<key>' must be ...", one line, never a crash.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"

namespace tf {

class GgufKeys {
 public:
  GgufKeys(const GgufHeader& h, std::string arch, std::string file)
      : h_(h), prefix_(std::move(arch) + "."), file_(std::move(file)) {}

  bool has(const std::string& key) const { return h_.get(prefix_ + key) != nullptr; }
  // A positive integer of any GGUF integer type.
  std::int64_t integer(const std::string& key) const {
    const auto v = h_.get_uint(prefix_ + key);
    if (!v || *v == 0 || *v > kMax) fail(key, "a positive integer");
    return static_cast<std::int64_t>(*v);
  }
  std::int64_t integer(const std::string& key, std::int64_t fallback) const {
    return has(key) ? integer(key) : fallback;
  }
  // An integer that may be 0 (e.g. nextn_predict_layers).
  std::int64_t count(const std::string& key, std::int64_t fallback) const {
    if (!has(key)) return fallback;
    const auto v = h_.get_uint(prefix_ + key);
    if (!v || *v > kMax) fail(key, "an integer >= 0");
    return static_cast<std::int64_t>(*v);
  }
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    const auto v = h_.get_number(prefix_ + key);
    if (!v) fail(key, "a number");
    return *v;
  }
  // An array of booleans (e.g. attention.recurrent_layers); empty when the key is absent.
  std::vector<bool> flags(const std::string& key) const {
    std::vector<bool> out;
    if (!has(key)) return out;
    const auto* a = h_.get_array(prefix_ + key);
    if (a == nullptr || a->element_type != GgufValueType::BOOL) fail(key, "an array of booleans");
    for (const auto& v : a->items) out.push_back(std::get<bool>(v.v));
    return out;
  }
  const std::string& file() const { return file_; }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw CheckpointError(file_, "'" + prefix_ + key + "' must be " + what);
  }

 private:
  static constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
  const GgufHeader& h_;
  std::string prefix_;
  std::string file_;
};

}  // namespace tf
