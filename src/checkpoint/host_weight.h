#pragma once
// A weight as decoded from a checkpoint, before any backend sees it: dense float elements, or MLX-style
// affine group quantization (packed uint32 codes LSB-first, one bitstream per row; scales and biases per
// group). GGUF Q4_0/Q4_1/Q8_0 are repacked into the affine form at load (weight_reader.cpp). Lives in checkpoint/
// because the readers produce it; backends/ includes it from here (checkpoint/ never includes backends/).
#include <cstdint>
#include <string>
#include <vector>

namespace tf {

enum class HostDType { F32, F16, BF16 };

struct HostWeight {
  std::string name;
  // The stored shape, outermost first (e.g. [experts, out, in] for a stack of expert matrices; [n] for a
  // vector). The weight is read as a matrix of `rows` = the product of all but the last dimension and
  // `cols` = the last; a 1-D weight has rows == 1.
  std::vector<std::int64_t> shape;
  std::int64_t rows = 0, cols = 0;
  HostDType dtype = HostDType::F32;  // dense elements, or the affine scale/bias type
  std::vector<std::uint8_t> data;    // dense: rows*cols elements of dtype; affine: rows*cols*bits/32 uint32
  std::vector<std::uint8_t> scales, biases;  // affine: rows * cols/group_size values of dtype
  int bits = 0;  // 0: dense
  int group_size = 0;
};

}  // namespace tf
