#pragma once
// Affine codes as bf16 integers for the bf16 tensor-core GEMMs (prefill_linear_mma.cu, prefill_linear_wgmma.cu):
// a code is a small integer, exact in bf16, so the tensor cores take the codes themselves.
#include <cuda_bf16.h>

#include <cstdint>

namespace tf::cuda {

// Two small integers (< 128) at bits 0.. and 16.. of v as a bf16 pair: 128 + q has q in the mantissa of
// 0x4300 (128.0), and subtracting 128 is exact.
__device__ __forceinline__ std::uint32_t small_pair_bf16(std::uint32_t v) {
  const std::uint32_t biased = v | 0x43004300u;
  const __nv_bfloat162 r =
      __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&biased), __floats2bfloat162_rn(128.0f, 128.0f));
  return *reinterpret_cast<const std::uint32_t*>(&r);
}

// One word of eight 4-bit codes (LSB first) as eight bf16 values in k order.
__device__ __forceinline__ uint4 four_bit_word_bf16(std::uint32_t w) {
  uint4 o;
  o.x = small_pair_bf16((w & 0xFu) | ((w << 12) & 0xF0000u));
  o.y = small_pair_bf16(((w >> 8) & 0xFu) | ((w << 4) & 0xF0000u));
  o.z = small_pair_bf16(((w >> 16) & 0xFu) | ((w >> 4) & 0xF0000u));
  o.w = small_pair_bf16(((w >> 24) & 0xFu) | ((w >> 12) & 0xF0000u));
  return o;
}

}  // namespace tf::cuda
