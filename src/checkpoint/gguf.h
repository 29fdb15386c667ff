#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "checkpoint/ggml_types.h"
#include "checkpoint/mapped_file.h"

namespace tf {

enum class GgufValueType : std::uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9,
  U64 = 10, I64 = 11, F64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType t);

struct GgufArray;

// One metadata value. Integers keep their signedness; the declared GGUF type is kept beside the value.
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string, std::shared_ptr<GgufArray>> v;

  std::optional<std::uint64_t> as_uint() const;  // any integer type that holds a non-negative value
  std::optional<double> as_number() const;       // any integer or float
  const std::string* as_string() const;
  const GgufArray* as_array() const;
};

struct GgufArray {
  GgufValueType element_type = GgufValueType::U8;
  std::vector<GgufValue> items;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<std::uint64_t> dims;  // innermost first (dims[0] is contiguous)
  GgmlType type = GgmlType::F32;
  std::uint64_t offset = 0;  // relative to the data section
  std::uint64_t element_count = 0;
  std::uint64_t byte_size = 0;
};

// Parsed, validated GGUF v2/v3 header: metadata of every value type, tensor infos, alignment, and the
// data-section offset. Tensor data is checked to lie within the file without overlap.
struct GgufHeader {
  std::uint32_t version = 0;
  std::uint32_t alignment = 32;
  std::uint64_t data_offset = 0;  // absolute file offset of the data section
  std::vector<std::pair<std::string, GgufValue>> metadata;  // file order
  std::vector<GgufTensorInfo> tensors;                      // file order

  const GgufValue* get(std::string_view key) const;
  std::optional<std::uint64_t> get_uint(std::string_view key) const;
  std::optional<double> get_number(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  const GgufArray* get_array(std::string_view key) const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;
};
GgufHeader parse_gguf_header(std::span<const std::uint8_t> file_bytes, const std::string& file);

// A memory-mapped GGUF file.
class GgufFile {
 public:
  explicit GgufFile(const std::string& path);
  const std::string& path() const { return map_.path(); }
  const GgufHeader& header() const { return header_; }
  std::span<const std::uint8_t> data(const GgufTensorInfo& t) const;

 private:
  MappedFile map_;
  GgufHeader header_;
};

}  // namespace tf
