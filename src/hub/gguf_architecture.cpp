#include "hub/gguf_architecture.h"

#include "checkpoint/byte_reader.h"

namespace tf::hub {
namespace {

// GGUF metadata value types (gguf.md).
enum : std::uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

std::size_t scalar_size(std::uint32_t type, ByteReader& r) {
  switch (type) {
    case kU8:
    case kI8:
    case kBool:
      return 1;
    case kU16:
    case kI16:
      return 2;
    case kU32:
    case kI32:
    case kF32:
      return 4;
    case kU64:
    case kI64:
    case kF64:
      return 8;
    default:
      r.fail("unknown GGUF value type " + std::to_string(type));
  }
}

std::string read_string(ByteReader& r) {
  const auto n = r.read<std::uint64_t>("string length");
  if (n > r.remaining()) r.read_bytes(r.remaining() + 1, "string");  // throws: truncated
  return std::string(r.read_bytes(static_cast<std::size_t>(n), "string"));
}

void skip_value(std::uint32_t type, ByteReader& r, int depth) {
  if (type == kString) {
    read_string(r);
  } else if (type == kArray) {
    if (depth > 4) r.fail("arrays nested too deep");
    const auto elem = r.read<std::uint32_t>("array type");
    const auto count = r.read<std::uint64_t>("array length");
    if (elem != kString && elem != kArray) {
      const std::size_t size = scalar_size(elem, r);
      if (count > r.remaining() / size) r.read_bytes(r.remaining() + 1, "array");
      r.read_bytes(static_cast<std::size_t>(count) * size, "array");
    } else {
      for (std::uint64_t i = 0; i < count; ++i) skip_value(elem, r, depth + 1);
    }
  } else {
    r.read_bytes(scalar_size(type, r), "value");
  }
}

}  // namespace

std::optional<std::string> gguf_architecture_from_prefix(std::span<const std::uint8_t> bytes, const std::string& name) {
  ByteReader r(bytes, name);
  if (bytes.size() < 4) return std::nullopt;
  if (r.read_bytes(4, "magic") != "GGUF") r.fail("not a GGUF file (no GGUF magic)");
  try {
    r.read<std::uint32_t>("version");
    r.read<std::uint64_t>("tensor count");
    const auto kv_count = r.read<std::uint64_t>("metadata count");
    for (std::uint64_t i = 0; i < kv_count; ++i) {
      const std::string key = read_string(r);
      const auto type = r.read<std::uint32_t>("value type");
      if (key == "general.architecture" && type == kString) return read_string(r);
      skip_value(type, r, 0);
    }
  } catch (const CheckpointError& e) {
    if (std::string(e.problem()).rfind("truncated", 0) == 0) return std::nullopt;  // the key lies further on
    throw;
  }
  throw CheckpointError(name, "GGUF metadata has no general.architecture");
}

}  // namespace tf::hub
