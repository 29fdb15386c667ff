#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tf {

// A read-only memory map of a whole file. Weights are read through it lazily, so opening a checkpoint
// touches only the pages of its headers. Move-only.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws CheckpointError
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::size_t size() const { return size_; }
  const std::uint8_t* data() const { return data_; }
  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }

 private:
  void release() noexcept;
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tf
