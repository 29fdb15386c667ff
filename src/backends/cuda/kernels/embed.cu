// Embedding lookup: out[r] = row ids[r] of the table, dequantized (w = scale*q + bias, each step rounded in
// float32, as the reference dequantizer does) for affine tables of any bit width, converted for dense ones.
#include <algorithm>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/tiled_layout.h"

namespace tf::cuda {
namespace {

template <ElemType E>
__global__ void embed_affine_kernel(WeightView t, const std::int32_t* __restrict__ ids, float* __restrict__ out) {
  pdl_launch();
  pdl_wait();
  const std::int64_t r = blockIdx.x;
  std::int64_t id = ids[r];
  if (id < 0 || id >= t.rows) id = 0;  // the backend checks ids on the host; never read out of bounds
  const std::int64_t words_per_row = t.cols * t.bits / 32;
  const auto* words = static_cast<const std::uint32_t*>(t.data);
  const auto* row = words + id * words_per_row;
  const std::int64_t gpr = t.cols / t.group;
  for (std::int64_t k = blockIdx.y * blockDim.x + threadIdx.x; k < t.cols; k += blockDim.x * gridDim.y) {
    const std::int64_t g = id * gpr + k / t.group;
    // Tiled codes (4 or 8 bits) never straddle words: find the word, then the code in it.
    const float q = static_cast<float>(
        t.tiled ? (words[tiled_word_index(id, k * t.bits / 32, words_per_row)] >> ((k * t.bits) & 31)) & ((1u << t.bits) - 1u)
                : code_at(row, k, t.bits));
    out[r * t.cols + k] = __fadd_rn(__fmul_rn(load_elem<E>(t.scales, g), q), load_elem<E>(t.biases, g));
  }
}

template <ElemType E>
__global__ void embed_dense_kernel(WeightView t, const std::int32_t* __restrict__ ids, float* __restrict__ out) {
  pdl_launch();
  pdl_wait();
  const std::int64_t r = blockIdx.x;
  std::int64_t id = ids[r];
  if (id < 0 || id >= t.rows) id = 0;
  for (std::int64_t k = blockIdx.y * blockDim.x + threadIdx.x; k < t.cols; k += blockDim.x * gridDim.y)
    out[r * t.cols + k] = load_elem<E>(t.data, id * t.cols + k);
}

}  // namespace

void embed(const WeightView& t, const std::int32_t* ids, std::int64_t rows, float* out, cudaStream_t s) {
  if (rows <= 0) return;
  // A block per row and 256 columns: a decode step's one row took 9-11 µs at the head of every step (8B,
  // 27B-class) as one block whose threads each waited for 16 loads in turn; every element is computed
  // alone, so the split changes no bits.
  const std::int64_t chunks = std::min<std::int64_t>(ceil_div(t.cols, 256), 64);
  const dim3 grid(static_cast<unsigned int>(rows), static_cast<unsigned int>(chunks));
  if (t.bits > 0) {
    if ((t.cols * t.bits) % 32 != 0 || t.group <= 0) throw std::invalid_argument("embed: bad affine table");
    switch (t.dtype) {
      case ElemType::F32: launch_pdl(embed_affine_kernel<ElemType::F32>, grid, dim3(256), 0, s, t, ids, out); break;
      case ElemType::F16: launch_pdl(embed_affine_kernel<ElemType::F16>, grid, dim3(256), 0, s, t, ids, out); break;
      case ElemType::BF16: launch_pdl(embed_affine_kernel<ElemType::BF16>, grid, dim3(256), 0, s, t, ids, out); break;
    }
  } else {
    switch (t.dtype) {
      case ElemType::F32: launch_pdl(embed_dense_kernel<ElemType::F32>, grid, dim3(256), 0, s, t, ids, out); break;
      case ElemType::F16: launch_pdl(embed_dense_kernel<ElemType::F16>, grid, dim3(256), 0, s, t, ids, out); break;
      case ElemType::BF16: launch_pdl(embed_dense_kernel<ElemType::BF16>, grid, dim3(256), 0, s, t, ids, out); break;
    }
  }
  check_launch("embed");
}

}  // namespace tf::cuda
