// Rotary position embedding. Pair i of a head turns by angle pos * inv_freq[i] (float32 product, then
// sincosf), the per-pair frequency factors folded into inv_freq by the host. Pairs are (2i, 2i+1) for
// GGUF's permuted llama weights (interleaved) or (i, i + d/2) (rotate-half), d the rotated dims (all of a
// head, or its first ones: partial RoPE). The arithmetic is
// rope_math.cuh's, shared with rope_kv_write.cu and the decode attention (which rotates decode calls' q and k
// itself), so every path gives the same bits.
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/rope_math.cuh"

namespace tf::cuda {
namespace {

__global__ void rope_kernel(const float* __restrict__ x, float* __restrict__ out, int heads, int head_dim, int rotary,
                            const std::int64_t* __restrict__ pos, const float* __restrict__ inv_freq, bool interleaved,
                            MropeSections mrope) {
  pdl_launch();
  pdl_wait();
  const std::int64_t r = blockIdx.x;
  const int half = rotary / 2, rest = head_dim - rotary;
  const std::int64_t base = r * static_cast<std::int64_t>(heads) * head_dim;
  for (int t = threadIdx.x; t < heads * half; t += blockDim.x) {
    const int h = t / half, i = t % half;
    // The row's position this pair turns with: its only one, or (M-RoPE) its t, h or w.
    const int axis = mrope.axes == 3 && i % 3 == 1 && i < 3 * mrope.h   ? 1
                     : mrope.axes == 3 && i % 3 == 2 && i < 3 * mrope.w ? 2
                                                                        : 0;
    const float p = static_cast<float>(pos[r * mrope.axes + axis]);
    int i0, i1;
    rope_pair(i, half, interleaved, i0, i1);
    rope_rotate(x[base + h * head_dim + i0], x[base + h * head_dim + i1], p, inv_freq[i], out[base + h * head_dim + i0],
                out[base + h * head_dim + i1]);
  }
  // Partial RoPE: the dims past `rotary` pass through.
  for (int t = threadIdx.x; t < heads * rest; t += blockDim.x) {
    const std::int64_t at = base + (t / rest) * head_dim + rotary + t % rest;
    out[at] = x[at];
  }
}

}  // namespace

void rope(const float* x, float* out, std::int64_t rows, int heads, int head_dim, int rotary, const std::int64_t* pos,
          const float* inv_freq, bool interleaved, cudaStream_t s, MropeSections mrope) {
  if (rows <= 0) return;
  if (head_dim % 2 != 0 || rotary % 2 != 0 || rotary <= 0 || rotary > head_dim)
    throw std::invalid_argument("rope: head_dim and the rotated dims must be even, rotary in (0, head_dim]");
  if (mrope.axes != 1 && mrope.axes != 3) throw std::invalid_argument("rope: one or three positions a row");
  launch_pdl(rope_kernel, dim3(static_cast<unsigned int>(rows)), dim3(256), 0, s, x, out, heads, head_dim, rotary, pos,
             inv_freq, interleaved, mrope);
  check_launch("rope");
}

}  // namespace tf::cuda
