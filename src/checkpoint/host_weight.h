#pragma once
// A weight as decoded from a checkpoint, before any backend sees it, in one of three forms: dense float
// elements; MLX-style affine group quantization (packed uint32 codes LSB-first, one bitstream per row; scales
// and biases per group); or GGUF blocks exactly as the file stores them (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
// Q5_K, Q6_K), for backends whose kernels read those blocks. A backend without such kernels takes portable_weight()
// (weight_forms.h): the affine or dense form of the same weight. Lives in checkpoint/ because the readers
// produce it; backends/ includes it from here (checkpoint/ never includes backends/).
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/ggml_types.h"

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
  std::vector<std::uint8_t> data;    // dense: rows*cols elements of dtype; affine: rows*cols*bits/32 uint32;
                                     // GGUF blocks: the blocks
  std::vector<std::uint8_t> scales, biases;  // affine: rows * cols/group_size values of dtype
  int bits = 0;  // 0: dense; GGUF blocks: the type's nominal code width (4, 5, 6 or 8)
  int group_size = 0;  // affine: elements per scale; GGUF blocks: elements per block (32 or 256)
  // GGUF blocks: the block type, `data` the tensor's blocks row after row (rows * cols / group_size blocks);
  // dtype, scales and biases unused. F32 (never a block type): not GGUF blocks.
  GgmlType block_type = GgmlType::F32;
  bool ggml_blocks() const { return block_type != GgmlType::F32; }
};

}  // namespace tf
