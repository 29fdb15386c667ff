#pragma once
// Builds little-endian byte buffers for hand-made test files.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tf::test {

class ByteBuilder {
 public:
  template <typename T>
  ByteBuilder& put(T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  ByteBuilder& raw(const std::string& s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  ByteBuilder& gguf_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    return raw(s);
  }
  ByteBuilder& pad_to(std::size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    return *this;
  }
  ByteBuilder& zeros(std::size_t n) {
    bytes_.insert(bytes_.end(), n, 0);
    return *this;
  }
  std::size_t size() const { return bytes_.size(); }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

}  // namespace tf::test
