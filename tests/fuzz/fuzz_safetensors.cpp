// libFuzzer target: parse_safetensors_header over arbitrary bytes. Bad input may only throw
// tf::CheckpointError; an accepted header must tile the data buffer exactly with consistent sizes.
#include <cstdint>
#include <span>
#include <string>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/safetensors.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  tf::SafetensorsHeader h;
  try {
    h = tf::parse_safetensors_header(bytes, "fuzz.safetensors");
  } catch (const tf::CheckpointError&) {
    return 0;  // the one allowed way to refuse
  }

  using u128 = unsigned __int128;
  FUZZ_CHECK(h.data_start >= 8 && h.data_start <= size, "data_start %llu",
             static_cast<unsigned long long>(h.data_start));
  const std::uint64_t buffer = size - h.data_start;
  std::uint64_t expected = 0;
  for (const auto& t : h.tensors) {
    FUZZ_CHECK(h.find(t.name) != nullptr, "find() misses '%s'", t.name.c_str());
    FUZZ_CHECK(t.name != "__metadata__", "__metadata__ taken as a tensor");
    FUZZ_CHECK(t.begin == expected, "tensor '%s' does not start where the previous ended", t.name.c_str());
    FUZZ_CHECK(t.end >= t.begin && t.end <= buffer, "tensor '%s' out of the buffer", t.name.c_str());
    expected = t.end;
    u128 elements = 1;
    for (auto d : t.shape) {
      elements *= d;
      if (elements > (u128{1} << 64)) break;
    }
    FUZZ_CHECK(elements < (u128{1} << 64) && elements == t.element_count(), "element count of '%s'", t.name.c_str());
    const unsigned bits = tf::st_dtype_bits(t.dtype);
    FUZZ_CHECK(bits >= 4 && bits <= 64, "dtype bits %u", bits);
    FUZZ_CHECK(elements * bits == u128{t.byte_size()} * 8, "tensor '%s': shape x dtype != byte span", t.name.c_str());
    FUZZ_CHECK(tf::parse_st_dtype(tf::st_dtype_name(t.dtype)) == t.dtype, "dtype name round trip");
  }
  FUZZ_CHECK(expected == buffer, "buffer not covered exactly");
  for (const auto& [k, v] : h.metadata) (void)(k.size() + v.size());
  return 0;
}
