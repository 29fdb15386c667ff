// libFuzzer target for the MLX affine quantization code.
//
// Input: JSON text, optionally followed by a NUL byte and binary parameters:
//   <config.json bytes> [ '\0' p0 p1 p2 [rows:u64le cols:u64le n_packed n_codes n_scales] ]
// The JSON goes through parse_affine_quant_config (malformed blocks may only throw std::invalid_argument).
// Every spec that comes out dequantizes a small consistent [rows, cols] matrix built from the input
// (p0..p2 pick rows, groups per row and the scale type). With the 16-byte tail, unpack_affine_codes and
// dequantize_affine also get that arbitrary (hostile) shape with small buffers: they must throw
// std::invalid_argument or be consistent, never read past the buffers.
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "checkpoint/mlx_affine.h"
#include "fuzz_check.h"

namespace {

using u128 = unsigned __int128;

// Bytes of the input, cycled, so buffers of any length get fuzzer-controlled contents.
class Filler {
 public:
  explicit Filler(std::span<const std::uint8_t> src) : src_(src) {}
  std::uint8_t next() { return src_.empty() ? std::uint8_t{0x5a} : src_[pos_++ % src_.size()]; }
  template <typename T>
  std::vector<T> make(std::size_t n) {
    std::vector<T> v(n);
    for (auto& x : v) {
      std::uint8_t b[sizeof(T)];
      for (auto& c : b) c = next();
      std::memcpy(&x, b, sizeof(T));
    }
    return v;
  }

 private:
  std::span<const std::uint8_t> src_;
  std::size_t pos_ = 0;
};

// The JSON integer behind `key` of object `j`, when there is one, must be what the parser returned.
void check_int_field(const nlohmann::json& j, const char* key, int got) {
  if (!j.is_object()) return;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return;
  if (it->is_number_unsigned())
    FUZZ_CHECK(it->get<std::uint64_t>() == static_cast<std::uint64_t>(got), "%s: json %llu parsed as %d", key,
               static_cast<unsigned long long>(it->get<std::uint64_t>()), got);
  else
    FUZZ_CHECK(it->get<std::int64_t>() == got, "%s: json %lld parsed as %d", key,
               static_cast<long long>(it->get<std::int64_t>()), got);
}

void consistent_round(const tf::AffineSpec& spec, std::span<const std::uint8_t> p, Filler& fill) {
  FUZZ_CHECK(tf::is_supported_affine(spec), "unsupported spec bits=%d group=%d came out", spec.bits, spec.group_size);
  const std::size_t rows = 1 + (p.size() > 0 ? p[0] % 3 : 0);
  const std::size_t groups = 1 + (p.size() > 1 ? p[1] % 2 : 0);
  const auto ft = static_cast<tf::AffineFloat>(p.size() > 2 ? p[2] % 3 : 0);
  const std::size_t fb = ft == tf::AffineFloat::F32 ? 4 : 2;
  const auto bits = static_cast<std::size_t>(spec.bits);
  const std::size_t cols = static_cast<std::size_t>(spec.group_size) * groups;
  const std::size_t words = cols * bits / 32;

  auto packed = fill.make<std::uint32_t>(rows * words);
  std::vector<std::uint8_t> codes(rows * cols);
  tf::unpack_affine_codes(packed, rows, cols, spec.bits, codes);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) {
      unsigned expect = 0;  // bit by bit from the row's little-endian bitstream
      for (std::size_t k = 0; k < bits; ++k) {
        const std::size_t bit = j * bits + k;
        expect |= ((packed[r * words + bit / 32] >> (bit % 32)) & 1u) << k;
      }
      FUZZ_CHECK(codes[r * cols + j] == expect, "code %zu of row %zu: %u != %u", j, r, codes[r * cols + j], expect);
    }

  auto scales = fill.make<std::uint8_t>(rows * groups * fb);
  auto biases = fill.make<std::uint8_t>(rows * groups * fb);
  std::vector<float> out(rows * cols);
  tf::dequantize_affine(packed, scales, biases, ft, rows, cols, spec, out);  // consistent: must not throw
}

void hostile_round(const tf::AffineSpec& spec, std::span<const std::uint8_t> p, Filler& fill) {
  if (p.size() < 3 + 16) return;
  std::uint64_t rows64, cols64;
  std::memcpy(&rows64, p.data() + 3, 8);
  std::memcpy(&cols64, p.data() + 11, 8);
  const auto rows = static_cast<std::size_t>(rows64), cols = static_cast<std::size_t>(cols64);
  const std::size_t n_packed = p.size() > 19 ? p[19] % 64 : 0;
  const std::size_t n_codes = p.size() > 20 ? p[20] : 0;
  const std::size_t n_scales = p.size() > 21 ? p[21] % 64 : 0;
  const auto ft = static_cast<tf::AffineFloat>(p[2] % 3);
  const u128 fb = ft == tf::AffineFloat::F32 ? 4 : 2;
  auto packed = fill.make<std::uint32_t>(n_packed);

  std::vector<std::uint8_t> codes(n_codes);
  try {
    tf::unpack_affine_codes(packed, rows, cols, spec.bits, codes);
    const u128 bits = u128{cols} * static_cast<unsigned>(spec.bits);
    FUZZ_CHECK(bits % 32 == 0 && u128{rows} * (bits / 32) == n_packed && u128{rows} * cols == n_codes,
               "unpack_affine_codes accepted rows=%zu cols=%zu with %zu words and %zu codes", rows, cols, n_packed,
               n_codes);
  } catch (const std::invalid_argument&) {
  }

  auto scales = fill.make<std::uint8_t>(n_scales);
  auto biases = fill.make<std::uint8_t>(n_scales);
  std::vector<float> out(n_codes);
  try {
    tf::dequantize_affine(packed, scales, biases, ft, rows, cols, spec, out);
    const u128 groups = u128{cols} / static_cast<unsigned>(spec.group_size);
    FUZZ_CHECK(u128{rows} * cols == n_codes && u128{rows} * groups * fb == n_scales,
               "dequantize_affine accepted rows=%zu cols=%zu with %zu outputs and %zu scale bytes", rows, cols,
               n_codes, n_scales);
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  std::size_t json_len = 0;
  while (json_len < size && data[json_len] != 0) ++json_len;
  const auto params = json_len < size ? bytes.subspan(json_len + 1) : std::span<const std::uint8_t>{};

  const auto* text = reinterpret_cast<const char*>(data);
  const nlohmann::json config = nlohmann::json::parse(text, text + json_len, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return 0;

  std::optional<tf::AffineQuantConfig> q;
  try {
    q = tf::parse_affine_quant_config(config);
  } catch (const std::invalid_argument&) {
    return 0;  // the documented way to refuse a malformed block
  }
  if (!q) return 0;

  // Which block was read, to check numbers were taken as written (not truncated into range).
  const nlohmann::json* block = nullptr;
  if (auto it = config.find("quantization"); it != config.end()) block = &*it;
  else if (auto jt = config.find("quantization_config"); jt != config.end()) block = &*jt;
  FUZZ_CHECK(block != nullptr && block->is_object(), "a config came out of a document without a block");
  check_int_field(*block, "bits", q->defaults.bits);
  check_int_field(*block, "group_size", q->defaults.group_size);

  Filler fill(bytes);
  consistent_round(q->defaults, params, fill);
  hostile_round(q->defaults, params, fill);
  int rounds = 0;
  for (const auto& [module, spec] : q->overrides) {
    FUZZ_CHECK(q->spec_for(module) == spec, "spec_for('%s') differs from the override", module.c_str());
    if (!spec) continue;
    if (auto j = block->find(module); j != block->end() && j->is_object()) {
      check_int_field(*j, "bits", spec->bits);
      check_int_field(*j, "group_size", spec->group_size);
    }
    if (++rounds <= 4) consistent_round(*spec, params, fill);
  }
  if (!q->overrides.contains("no.such.module"))
    FUZZ_CHECK(q->spec_for("no.such.module") == q->defaults, "spec_for() of an unknown module");
  return 0;
}
