// Rotary position embedding. Pair i of a head turns by angle pos * inv_freq[i] (float32 product, then
// sincosf), the per-pair frequency factors folded into inv_freq by the host. Pairs are (2i, 2i+1) for
// GGUF's permuted llama weights (interleaved) or (i, i + d/2) (rotate-half).
#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

__global__ void rope_kernel(const float* __restrict__ x, float* __restrict__ out, int heads, int head_dim,
                            const std::int64_t* __restrict__ pos, const float* __restrict__ inv_freq, bool interleaved) {
  pdl_launch();
  pdl_wait();
  const std::int64_t r = blockIdx.x;
  const int half = head_dim / 2;
  const float p = static_cast<float>(pos[r]);
  const std::int64_t base = r * static_cast<std::int64_t>(heads) * head_dim;
  for (int t = threadIdx.x; t < heads * half; t += blockDim.x) {
    const int h = t / half, i = t % half;
    const int i0 = interleaved ? 2 * i : i;
    const int i1 = interleaved ? 2 * i + 1 : i + half;
    float sn, cs;
    sincosf(__fmul_rn(p, inv_freq[i]), &sn, &cs);
    const float x0 = x[base + h * head_dim + i0], x1 = x[base + h * head_dim + i1];
    out[base + h * head_dim + i0] = __fsub_rn(__fmul_rn(x0, cs), __fmul_rn(x1, sn));
    out[base + h * head_dim + i1] = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, cs));
  }
}

}  // namespace

void rope(const float* x, float* out, std::int64_t rows, int heads, int head_dim, const std::int64_t* pos,
          const float* inv_freq, bool interleaved, cudaStream_t s) {
  if (rows <= 0) return;
  if (head_dim % 2 != 0) throw std::invalid_argument("rope: head_dim must be even");
  launch_pdl(rope_kernel, dim3(static_cast<unsigned int>(rows)), dim3(256), 0, s, x, out, heads, head_dim, pos, inv_freq,
             interleaved);
  check_launch("rope");
}

}  // namespace tf::cuda
