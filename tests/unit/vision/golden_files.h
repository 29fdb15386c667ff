#pragma once
// The vision golden's files for the tests: raw bytes of an image and named tensors of references.safetensors.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"

namespace tf::vision::testing {

inline std::string golden_path(const std::string& name) { return std::string(TF_VISION_GOLDEN) + "/" + name; }

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

template <class T>
std::vector<T> tensor(const SafetensorsFile& f, const std::string& name, std::vector<std::uint64_t>* shape = nullptr) {
  const StTensor* t = f.find(name);
  if (!t) return {};
  if (shape) *shape = t->shape;
  const auto bytes = f.data(*t);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

inline const SafetensorsFile& references() {
  static const SafetensorsFile f(golden_path("references.safetensors"));
  return f;
}

}  // namespace tf::vision::testing
