#pragma once
// Random GGUF quantized blocks for the CPU kernels' unit test and benchmark: random code bytes, finite f16
// scales of the size real checkpoints have (one definition for both, so the bench times what the test checks).
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "checkpoint/ggml_types.h"
#include "checkpoint/half_float.h"
#include "checkpoint/host_weight.h"

namespace tf::test_support {

inline void put_half(std::uint8_t* p, float v) {
  const std::uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

inline HostWeight random_blocks(GgmlType type, std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  const auto info = *ggml_type_info(static_cast<std::uint32_t>(type));
  HostWeight w;
  w.name = std::string(info.name);
  w.rows = rows;
  w.cols = cols;
  w.shape = {rows, cols};
  w.block_type = type;
  w.group_size = static_cast<int>(info.block_elements);
  w.bits = 4;
  const auto blocks = static_cast<std::size_t>(rows * cols / info.block_elements);
  w.data.resize(blocks * info.block_bytes);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.002f, 0.03f);
  for (auto& b : w.data) b = static_cast<std::uint8_t>(byte(rng));
  for (std::size_t i = 0; i < blocks; ++i) {
    std::uint8_t* b = w.data.data() + i * info.block_bytes;
    switch (type) {
      case GgmlType::Q4_1:
      case GgmlType::Q5_1:
      case GgmlType::Q4_K:
      case GgmlType::Q5_K:
        put_half(b, scale(rng));
        put_half(b + 2, scale(rng));
        break;
      case GgmlType::Q6_K:
        put_half(b + 208, scale(rng));
        break;
      default:
        put_half(b, scale(rng));
        break;
    }
  }
  return w;
}

}  // namespace tf::test_support
