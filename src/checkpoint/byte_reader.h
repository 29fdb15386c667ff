#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "checkpoint/checkpoint_error.h"

namespace tf {

// A little-endian cursor over untrusted bytes. Every read is bounds-checked and a short read throws a
// CheckpointError that says what was being read and where, so parsers never index past the end.
class ByteReader {
 public:
  ByteReader(std::span<const std::uint8_t> bytes, std::string file) : bytes_(bytes), file_(std::move(file)) {}

  std::size_t offset() const { return pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  const std::string& file() const { return file_; }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));  // the host is little-endian (x86-64, arm64)
    pos_ += sizeof(T);
    return v;
  }

  std::string_view read_bytes(std::size_t n, std::string_view what) {
    need(n, what);
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw CheckpointError(file_, problem + " (at byte " + std::to_string(pos_) + ")");
  }

 private:
  void need(std::size_t n, std::string_view what) const {
    if (n > remaining()) {
      throw CheckpointError(file_, "truncated: " + std::string(what) + " needs " + std::to_string(n) +
                                       " bytes at byte " + std::to_string(pos_) + ", file has " +
                                       std::to_string(remaining()) + " left");
    }
  }
  std::span<const std::uint8_t> bytes_;
  std::string file_;
  std::size_t pos_ = 0;
};

}  // namespace tf
