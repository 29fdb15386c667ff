#include "checkpoint/gguf.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "checkpoint/byte_reader.h"
#include "checkpoint/checkpoint_error.h"

namespace tf {
namespace {

constexpr std::uint32_t kMaxKeyBytes = 65535;    // the spec's limit on key length
constexpr std::uint64_t kMaxTensorNameBytes = 64;  // the spec's limit on tensor names
constexpr std::uint32_t kMaxDims = 4;
constexpr int kMaxArrayNesting = 4;  // real files nest at most once; bounds recursion on hostile input
// Memory the parsed header may take. The counts and lengths in a file are only bounded by its size, and
// a (sparse) file of many GiB could otherwise make the parser allocate many times that and die in
// std::bad_alloc. Real headers, tokenizer included, take well under 100 MiB.
constexpr std::uint64_t kMaxHeaderMemory = 1ull << 30;
constexpr std::uint64_t kMaxReserve = 4096;  // counts are untrusted: reserve at most this much up front

// Smallest encoding of one value of a type; used to refuse counts the remaining bytes cannot hold.
std::uint64_t min_value_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::BOOL: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::STRING: case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    case GgufValueType::ARRAY: return 12;
  }
  return 1;
}

bool valid_value_type(std::uint32_t raw) { return raw <= static_cast<std::uint32_t>(GgufValueType::F64); }

// What is left of kMaxHeaderMemory while parsing.
class MemoryBudget {
 public:
  void charge(ByteReader& r, std::uint64_t bytes, const std::string& what) {
    if (bytes > left_) r.fail(what + " would take the parsed header past its 1 GiB memory limit");
    left_ -= bytes;
  }
  void charge_items(ByteReader& r, std::uint64_t count, std::uint64_t item_bytes, const std::string& what) {
    if (count > left_ / item_bytes) r.fail(what + " would take the parsed header past its 1 GiB memory limit");
    left_ -= count * item_bytes;
  }

 private:
  std::uint64_t left_ = kMaxHeaderMemory;
};

std::string read_string(ByteReader& r, std::string_view what, std::uint64_t max_len, MemoryBudget& budget) {
  auto len = r.read<std::uint64_t>(what);
  if (len > max_len) r.fail(std::string(what) + " length " + std::to_string(len) + " exceeds " + std::to_string(max_len));
  auto bytes = r.read_bytes(static_cast<std::size_t>(len), what);
  budget.charge(r, len, std::string(what) + " of " + std::to_string(len) + " bytes");  // before copying it
  return std::string(bytes);
}

GgufValue read_value(ByteReader& r, GgufValueType type, int depth, MemoryBudget& budget) {
  GgufValue out;
  out.type = type;
  switch (type) {
    case GgufValueType::U8: out.v = std::uint64_t{r.read<std::uint8_t>("u8 value")}; break;
    case GgufValueType::I8: out.v = std::int64_t{r.read<std::int8_t>("i8 value")}; break;
    case GgufValueType::U16: out.v = std::uint64_t{r.read<std::uint16_t>("u16 value")}; break;
    case GgufValueType::I16: out.v = std::int64_t{r.read<std::int16_t>("i16 value")}; break;
    case GgufValueType::U32: out.v = std::uint64_t{r.read<std::uint32_t>("u32 value")}; break;
    case GgufValueType::I32: out.v = std::int64_t{r.read<std::int32_t>("i32 value")}; break;
    case GgufValueType::U64: out.v = r.read<std::uint64_t>("u64 value"); break;
    case GgufValueType::I64: out.v = r.read<std::int64_t>("i64 value"); break;
    case GgufValueType::F32: out.v = double{r.read<float>("f32 value")}; break;
    case GgufValueType::F64: out.v = r.read<double>("f64 value"); break;
    case GgufValueType::BOOL: {
      auto b = r.read<std::uint8_t>("bool value");
      if (b > 1) r.fail("bool value " + std::to_string(b) + " is neither 0 nor 1");
      out.v = b == 1;
      break;
    }
    case GgufValueType::STRING:  // no limit but the file's end, which read_bytes reports as truncation
      out.v = read_string(r, "string value", std::numeric_limits<std::uint64_t>::max(), budget);
      break;
    case GgufValueType::ARRAY: {
      if (depth >= kMaxArrayNesting) r.fail("arrays nested deeper than " + std::to_string(kMaxArrayNesting));
      auto raw = r.read<std::uint32_t>("array element type");
      if (!valid_value_type(raw)) r.fail("unknown array element type " + std::to_string(raw));
      auto elem = static_cast<GgufValueType>(raw);
      auto count = r.read<std::uint64_t>("array length");
      if (count > r.remaining() / min_value_bytes(elem)) {
        r.fail("array of " + std::to_string(count) + " " + std::string(gguf_value_type_name(elem)) +
               " values cannot fit in the " + std::to_string(r.remaining()) + " bytes left");
      }
      budget.charge_items(r, count, sizeof(GgufValue),
                          "array of " + std::to_string(count) + " " + std::string(gguf_value_type_name(elem)) + " values");
      auto arr = std::make_shared<GgufArray>();
      arr->element_type = elem;
      arr->items.reserve(static_cast<std::size_t>(std::min(count, kMaxReserve)));
      for (std::uint64_t i = 0; i < count; ++i) arr->items.push_back(read_value(r, elem, depth + 1, budget));
      out.v = std::move(arr);
      break;
    }
  }
  return out;
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType t) {
  static constexpr std::string_view names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                               "bool", "string", "array", "u64", "i64", "f64"};
  auto i = static_cast<std::uint32_t>(t);
  return i < std::size(names) ? names[i] : "unknown";
}

std::optional<std::uint64_t> GgufValue::as_uint() const {
  if (auto* u = std::get_if<std::uint64_t>(&v)) return *u;
  if (auto* s = std::get_if<std::int64_t>(&v); s && *s >= 0) return static_cast<std::uint64_t>(*s);
  return std::nullopt;
}
std::optional<double> GgufValue::as_number() const {
  if (auto* u = std::get_if<std::uint64_t>(&v)) return static_cast<double>(*u);
  if (auto* s = std::get_if<std::int64_t>(&v)) return static_cast<double>(*s);
  if (auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}
const std::string* GgufValue::as_string() const { return std::get_if<std::string>(&v); }
const GgufArray* GgufValue::as_array() const {
  auto* a = std::get_if<std::shared_ptr<GgufArray>>(&v);
  return a ? a->get() : nullptr;
}

const GgufValue* GgufHeader::get(std::string_view key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}
std::optional<std::uint64_t> GgufHeader::get_uint(std::string_view key) const {
  auto* v = get(key);
  return v ? v->as_uint() : std::nullopt;
}
std::optional<double> GgufHeader::get_number(std::string_view key) const {
  auto* v = get(key);
  return v ? v->as_number() : std::nullopt;
}
std::optional<std::string> GgufHeader::get_string(std::string_view key) const {
  auto* v = get(key);
  auto* s = v ? v->as_string() : nullptr;
  return s ? std::optional<std::string>(*s) : std::nullopt;
}
const GgufArray* GgufHeader::get_array(std::string_view key) const {
  auto* v = get(key);
  return v ? v->as_array() : nullptr;
}
const GgufTensorInfo* GgufHeader::find_tensor(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

GgufHeader parse_gguf_header(std::span<const std::uint8_t> bytes, const std::string& file) {
  if (bytes.empty()) throw CheckpointError(file, "empty file (not GGUF)");
  ByteReader r(bytes, file);
  if (bytes.size() < 4 || std::string_view(reinterpret_cast<const char*>(bytes.data()), 4) != "GGUF")
    throw CheckpointError(file, "wrong magic (not a GGUF file)");
  r.read_bytes(4, "magic");
  GgufHeader h;
  h.version = r.read<std::uint32_t>("version");
  if (h.version == 0x02000000u || h.version == 0x03000000u)
    throw CheckpointError(file, "big-endian GGUF is not supported");
  if (h.version != 2 && h.version != 3)
    throw CheckpointError(file, "unsupported GGUF version " + std::to_string(h.version) + " (2 and 3 are read)");
  const auto tensor_count = r.read<std::uint64_t>("tensor count");
  const auto kv_count = r.read<std::uint64_t>("metadata count");
  // Each metadata entry takes at least 13 bytes, each tensor info at least 24: refuse absurd counts
  // before allocating anything for them.
  if (kv_count > r.remaining() / 13)
    throw CheckpointError(file, "absurd metadata count " + std::to_string(kv_count) + " for a file of " +
                                    std::to_string(bytes.size()) + " bytes (truncated or corrupt)");
  if (tensor_count > r.remaining() / 24)
    throw CheckpointError(file, "absurd tensor count " + std::to_string(tensor_count) + " for a file of " +
                                    std::to_string(bytes.size()) + " bytes (truncated or corrupt)");

  MemoryBudget budget;
  std::unordered_set<std::string> seen;
  h.metadata.reserve(static_cast<std::size_t>(std::min(kv_count, kMaxReserve)));
  for (std::uint64_t i = 0; i < kv_count; ++i) {
    std::string key = read_string(r, "metadata key", kMaxKeyBytes, budget);
    budget.charge(r, sizeof(std::pair<std::string, GgufValue>) + key.size(), "metadata key '" + key + "'");
    if (!seen.insert(key).second) r.fail("duplicate metadata key '" + key + "'");
    auto raw = r.read<std::uint32_t>("metadata value type");
    if (!valid_value_type(raw)) r.fail("metadata key '" + key + "' has unknown value type " + std::to_string(raw));
    h.metadata.emplace_back(std::move(key), read_value(r, static_cast<GgufValueType>(raw), 0, budget));
  }

  if (const auto* a = h.get("general.alignment")) {
    auto val = a->as_uint();
    if (a->type != GgufValueType::U32 || !val || *val == 0 || (*val & (*val - 1)) != 0)
      throw CheckpointError(file, "general.alignment must be a u32 power of two");
    h.alignment = static_cast<std::uint32_t>(*val);
  }

  seen.clear();
  h.tensors.reserve(static_cast<std::size_t>(std::min(tensor_count, kMaxReserve)));
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    t.name = read_string(r, "tensor name", kMaxTensorNameBytes, budget);
    budget.charge(r, sizeof(GgufTensorInfo) + t.name.size() + kMaxDims * sizeof(std::uint64_t),
                  "tensor info '" + t.name + "'");
    if (!seen.insert(t.name).second) r.fail("duplicate tensor name '" + t.name + "'");
    auto n_dims = r.read<std::uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      r.fail("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
    t.element_count = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      auto dim = r.read<std::uint64_t>("tensor dimension");
      if (dim > (1ull << 62) || __builtin_mul_overflow(t.element_count, dim, &t.element_count))
        r.fail("tensor '" + t.name + "' has an absurd shape");
      t.dims.push_back(dim);
    }
    if (t.element_count > (1ull << 62)) r.fail("tensor '" + t.name + "' has an absurd element count");
    auto raw_type = r.read<std::uint32_t>("tensor type");
    auto info = ggml_type_info(raw_type);
    if (!info) r.fail("tensor '" + t.name + "' has unknown ggml type " + std::to_string(raw_type));
    t.type = info->type;
    if (t.dims[0] % info->block_elements != 0) {
      r.fail("tensor '" + t.name + "' row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
             std::string(info->name) + " block of " + std::to_string(info->block_elements));
    }
    // 2^62 F32 elements would wrap to 0 bytes and pass the bounds check below with an empty data span.
    if (__builtin_mul_overflow(t.element_count / info->block_elements, std::uint64_t{info->block_bytes}, &t.byte_size))
      r.fail("tensor '" + t.name + "' has an absurd byte size");
    t.offset = r.read<std::uint64_t>("tensor offset");
    if (t.offset % h.alignment != 0)
      r.fail("tensor '" + t.name + "' offset " + std::to_string(t.offset) + " is not aligned to " +
             std::to_string(h.alignment));
    h.tensors.push_back(std::move(t));
  }

  const std::uint64_t end_of_infos = r.offset();
  h.data_offset = (end_of_infos + h.alignment - 1) / h.alignment * h.alignment;
  if (h.tensors.empty()) return h;  // vocab-only files may end right after the metadata

  if (h.data_offset > bytes.size())
    throw CheckpointError(file, "truncated: the data section would start past the end of the file");
  const std::uint64_t data_size = bytes.size() - h.data_offset;
  std::vector<const GgufTensorInfo*> by_offset;
  for (const auto& t : h.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  std::uint64_t prev_end = 0;
  const GgufTensorInfo* prev = nullptr;
  for (const auto* t : by_offset) {
    if (t->offset > data_size || t->byte_size > data_size - t->offset)
      throw CheckpointError(file, "truncated: tensor '" + t->name + "' (" + std::to_string(t->byte_size) +
                                      " bytes at data offset " + std::to_string(t->offset) +
                                      ") runs past the end of the file");
    if (prev != nullptr && t->offset < prev_end)
      throw CheckpointError(file, "tensor '" + t->name + "' overlaps tensor '" + prev->name + "'");
    prev_end = t->offset + t->byte_size;
    prev = t;
  }
  return h;
}

GgufFile::GgufFile(const std::string& path) : map_(path), header_(parse_gguf_header(map_.bytes(), path)) {}

std::span<const std::uint8_t> GgufFile::data(const GgufTensorInfo& t) const {
  return map_.bytes().subspan(header_.data_offset + t.offset, t.byte_size);
}

}  // namespace tf
