#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/mapped_file.h"

namespace tf {

// Element types of the safetensors format (sub-byte types are bit-packed).
enum class StDType {
  BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, C64,
  F8_E4M3, F8_E5M2, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, F4, F6_E2M3, F6_E3M2,
};
std::optional<StDType> parse_st_dtype(std::string_view name);
std::string_view st_dtype_name(StDType t);
unsigned st_dtype_bits(StDType t);

struct StTensor {
  std::string name;
  StDType dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;  // byte offsets relative to the data buffer
  std::uint64_t end = 0;
  std::uint64_t element_count() const;
  std::uint64_t byte_size() const { return end - begin; }
};

// The validated header of one safetensors file: size bounds, JSON, dtypes, shape x dtype size == offset
// span, offsets within the buffer, no overlaps or gaps. Parsing works on bytes so fuzzers can drive it.
struct SafetensorsHeader {
  std::uint64_t data_start = 0;  // 8 + header length
  std::vector<StTensor> tensors;  // in file order of their offsets
  std::map<std::string, std::string> metadata;
  const StTensor* find(std::string_view name) const;
};
SafetensorsHeader parse_safetensors_header(std::span<const std::uint8_t> file_bytes, const std::string& file);

// A memory-mapped safetensors file; tensor data is read on demand.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::string& path() const { return map_.path(); }
  const SafetensorsHeader& header() const { return header_; }
  const std::vector<StTensor>& tensors() const { return header_.tensors; }
  const StTensor* find(std::string_view name) const { return header_.find(name); }
  std::span<const std::uint8_t> data(const StTensor& t) const;

 private:
  MappedFile map_;
  SafetensorsHeader header_;
};

}  // namespace tf
