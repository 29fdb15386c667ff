#include "checkpoint/safetensors.h"

#include <algorithm>
#include <array>
#include <unordered_set>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_error.h"

namespace tf {
namespace {

struct DTypeRow {
  StDType type;
  std::string_view name;
  unsigned bits;
};
constexpr std::array<DTypeRow, 22> kDTypes{{
    {StDType::BOOL, "BOOL", 8},       {StDType::U8, "U8", 8},
    {StDType::I8, "I8", 8},           {StDType::I16, "I16", 16},
    {StDType::U16, "U16", 16},        {StDType::F16, "F16", 16},
    {StDType::BF16, "BF16", 16},      {StDType::I32, "I32", 32},
    {StDType::U32, "U32", 32},        {StDType::F32, "F32", 32},
    {StDType::F64, "F64", 64},        {StDType::I64, "I64", 64},
    {StDType::U64, "U64", 64},        {StDType::C64, "C64", 64},
    {StDType::F8_E4M3, "F8_E4M3", 8}, {StDType::F8_E5M2, "F8_E5M2", 8},
    {StDType::F8_E8M0, "F8_E8M0", 8}, {StDType::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {StDType::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8}, {StDType::F4, "F4", 4},
    {StDType::F6_E2M3, "F6_E2M3", 6}, {StDType::F6_E3M2, "F6_E3M2", 6},
}};

constexpr std::uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;  // the format's own limit

// a * b, or nullopt on overflow
std::optional<std::uint64_t> mul_checked(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

StTensor parse_entry(const std::string& file, const std::string& name, const nlohmann::json& e) {
  auto bad = [&](const std::string& why) { return CheckpointError(file, "tensor '" + name + "': " + why); };
  if (!e.is_object()) throw bad("entry is not a JSON object");
  StTensor t;
  t.name = name;
  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) throw bad("missing or non-string 'dtype'");
  auto parsed = parse_st_dtype(dt->get<std::string>());
  if (!parsed) throw bad("unknown dtype '" + dt->get<std::string>() + "'");
  t.dtype = *parsed;
  auto shape = e.find("shape");
  if (shape == e.end() || !shape->is_array()) throw bad("missing or non-array 'shape'");
  if (shape->size() > 16) throw bad("shape has " + std::to_string(shape->size()) + " dimensions");
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<std::int64_t>() >= 0))
      throw bad("shape holds a value that is not a non-negative integer");
    t.shape.push_back(d.get<std::uint64_t>());
  }
  auto offs = e.find("data_offsets");
  if (offs == e.end() || !offs->is_array() || offs->size() != 2) throw bad("'data_offsets' is not [begin, end]");
  for (const auto& o : *offs)
    if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<std::int64_t>() >= 0))
      throw bad("'data_offsets' holds a value that is not a non-negative integer");
  t.begin = (*offs)[0].get<std::uint64_t>();
  t.end = (*offs)[1].get<std::uint64_t>();
  if (t.end < t.begin) throw bad("data_offsets end < begin");
  std::uint64_t elements = 1;
  for (auto d : t.shape) {
    auto m = mul_checked(elements, d);
    if (!m) throw bad("element count overflows");
    elements = *m;
  }
  auto bits = mul_checked(elements, st_dtype_bits(t.dtype));
  if (!bits) throw bad("byte size overflows");
  if (*bits % 8 != 0) throw bad("packed sub-byte tensor does not fill whole bytes");
  if (*bits / 8 != t.end - t.begin) {
    throw bad("shape x dtype size is " + std::to_string(*bits / 8) + " bytes but data_offsets span " +
              std::to_string(t.end - t.begin));
  }
  return t;
}

}  // namespace

std::optional<StDType> parse_st_dtype(std::string_view name) {
  for (const auto& r : kDTypes)
    if (r.name == name) return r.type;
  return std::nullopt;
}
std::string_view st_dtype_name(StDType t) { return kDTypes[static_cast<std::size_t>(t)].name; }
unsigned st_dtype_bits(StDType t) { return kDTypes[static_cast<std::size_t>(t)].bits; }

std::uint64_t StTensor::element_count() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;  // validated against overflow when parsed
  return n;
}

const StTensor* SafetensorsHeader::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

SafetensorsHeader parse_safetensors_header(std::span<const std::uint8_t> bytes, const std::string& file) {
  if (bytes.empty()) throw CheckpointError(file, "empty file (not safetensors)");
  if (bytes.size() < 8) throw CheckpointError(file, "truncated: shorter than the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<std::size_t>(i)];
  if (n > kMaxHeaderBytes) throw CheckpointError(file, "header length " + std::to_string(n) + " exceeds 100 MB");
  if (n > bytes.size() - 8) {
    throw CheckpointError(file, "truncated: header length " + std::to_string(n) + " but only " +
                                    std::to_string(bytes.size() - 8) + " bytes follow");
  }
  if (n < 2 || bytes[8] != '{') throw CheckpointError(file, "header does not start with '{' (not safetensors)");
  const auto* text = reinterpret_cast<const char*>(bytes.data() + 8);
  // JSON objects keep only the last of repeated keys; a tensor named twice would otherwise surface as a
  // misleading "gap" or pass unnoticed, so repeated top-level keys are caught while parsing.
  std::unordered_set<std::string> keys;
  std::string repeated;
  auto note_key = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && repeated.empty() && parsed.is_string() &&
        !keys.insert(parsed.get<std::string>()).second)
      repeated = parsed.get<std::string>();
    return true;
  };
  nlohmann::json j = nlohmann::json::parse(text, text + n, note_key, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw CheckpointError(file, "header is not valid JSON");
  if (!j.is_object()) throw CheckpointError(file, "header is not a JSON object");
  if (!repeated.empty()) throw CheckpointError(file, "header names '" + repeated + "' more than once");

  SafetensorsHeader h;
  h.data_start = 8 + n;
  const std::uint64_t buffer_size = bytes.size() - h.data_start;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it->is_null()) continue;  // what mx.save_safetensors writes without metadata; the Rust reader allows it
      if (!it->is_object()) throw CheckpointError(file, "__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) throw CheckpointError(file, "__metadata__ value of '" + m.key() + "' is not a string");
        h.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(parse_entry(file, it.key(), *it));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const StTensor& a, const StTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // The format requires the entries to tile the buffer exactly: no overlap, no gap, nothing past its end.
  std::uint64_t expected = 0;
  for (const auto& t : h.tensors) {
    if (t.begin < expected) throw CheckpointError(file, "tensor '" + t.name + "' overlaps the tensor before it");
    if (t.begin > expected) throw CheckpointError(file, "gap in the data buffer before tensor '" + t.name + "'");
    if (t.end > buffer_size) {
      throw CheckpointError(file, "tensor '" + t.name + "' ends at byte " + std::to_string(t.end) +
                                      " past the data buffer (" + std::to_string(buffer_size) + " bytes)");
    }
    expected = t.end;
  }
  if (expected != buffer_size) {
    throw CheckpointError(file, "data buffer has " + std::to_string(buffer_size - expected) +
                                    " trailing bytes that no tensor covers");
  }
  return h;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : map_(path), header_(parse_safetensors_header(map_.bytes(), path)) {}

std::span<const std::uint8_t> SafetensorsFile::data(const StTensor& t) const {
  return map_.bytes().subspan(header_.data_start + t.begin, t.end - t.begin);
}

}  // namespace tf
