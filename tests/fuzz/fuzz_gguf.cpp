// libFuzzer target: parse_gguf_header over arbitrary bytes, then check what it accepted and dequantize
// every tensor it has a reference dequantizer for. Bad input may only throw tf::CheckpointError; an
// accepted header must describe tensors that really lie in the buffer with consistent sizes.
#include <cstdint>
#include <span>
#include <vector>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/ggml_dequant.h"
#include "checkpoint/ggml_types.h"
#include "checkpoint/gguf.h"
#include "fuzz_check.h"

namespace {

constexpr std::uint64_t kMaxDequantElements = 1ull << 20;  // per input, keeps each run fast

using u128 = unsigned __int128;

// Touches every value through the public accessors (recursing into arrays).
std::uint64_t walk(const tf::GgufValue& v) {
  std::uint64_t n = 1;
  (void)v.as_uint();
  (void)v.as_number();
  (void)tf::gguf_value_type_name(v.type);
  if (const auto* s = v.as_string()) n += s->size();
  if (const auto* a = v.as_array()) {
    for (const auto& item : a->items) {
      FUZZ_CHECK(item.type == a->element_type, "array item type differs from the element type");
      n += walk(item);
    }
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  tf::GgufHeader h;
  try {
    h = tf::parse_gguf_header(bytes, "fuzz.gguf");
  } catch (const tf::CheckpointError&) {
    return 0;  // the one allowed way to refuse
  }

  FUZZ_CHECK(h.version == 2 || h.version == 3, "version %u", h.version);
  FUZZ_CHECK(h.alignment != 0 && (h.alignment & (h.alignment - 1)) == 0, "alignment %u", h.alignment);
  FUZZ_CHECK(h.data_offset % h.alignment == 0, "data offset %llu", static_cast<unsigned long long>(h.data_offset));

  std::uint64_t touched = 0;
  for (const auto& [key, value] : h.metadata) {
    FUZZ_CHECK(h.get(key) == &value, "get() does not find key");
    touched += walk(value);
  }
  (void)touched;
  (void)h.get_uint("general.alignment");
  (void)h.get_number("general.alignment");
  (void)h.get_string("general.architecture");
  (void)h.get_array("tokenizer.ggml.tokens");

  std::uint64_t budget = kMaxDequantElements;
  for (const auto& t : h.tensors) {
    FUZZ_CHECK(h.find_tensor(t.name) == &t, "find_tensor() does not find '%s'", t.name.c_str());
    FUZZ_CHECK(!t.dims.empty() && t.dims.size() <= 4, "%zu dims", t.dims.size());
    const auto info = tf::ggml_type_info(static_cast<std::uint32_t>(t.type));
    FUZZ_CHECK(info.has_value(), "tensor of unknown type %u", static_cast<unsigned>(t.type));

    // The sizes must be exact in wide arithmetic: a wrapped byte_size would let a huge tensor pass the
    // bounds check with a tiny (or empty) data span.
    u128 elements = 1;
    for (auto d : t.dims) {
      elements *= d;
      if (elements > (u128{1} << 64)) break;
    }
    FUZZ_CHECK(elements == t.element_count, "element_count %llu != product of dims",
               static_cast<unsigned long long>(t.element_count));
    FUZZ_CHECK(t.dims[0] % info->block_elements == 0, "row not a whole number of blocks");
    const u128 wide_bytes = elements / info->block_elements * info->block_bytes;
    FUZZ_CHECK(wide_bytes == t.byte_size, "tensor '%s': byte_size %llu but %llu elements of %s need more",
               t.name.c_str(), static_cast<unsigned long long>(t.byte_size),
               static_cast<unsigned long long>(t.element_count), std::string(info->name).c_str());
    const u128 end = u128{h.data_offset} + t.offset + t.byte_size;
    FUZZ_CHECK(end <= size, "tensor '%s' ends past the buffer", t.name.c_str());

    if (!info->dequantizable || t.element_count > budget) continue;
    budget -= t.element_count;
    std::vector<float> out(static_cast<std::size_t>(t.element_count));
    // Must not throw: the header said these bytes hold exactly this many elements.
    tf::dequantize_ggml(t.type, bytes.subspan(static_cast<std::size_t>(h.data_offset + t.offset),
                                              static_cast<std::size_t>(t.byte_size)),
                        out);
  }
  return 0;
}
