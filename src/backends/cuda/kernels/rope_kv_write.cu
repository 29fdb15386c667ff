// RoPE of q and k fused with the KV-cache write: one launch where the tape had three (rope q, rope k, the
// cache write). Row r: q_out[r] = rope(q[r]); the cache of rows[r] gets rope(k[r]) and v[r] at
// rows[r].write_pos. The rotation is rope.cu's, step for step, so fused and unfused give the same bits.
#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

__device__ __forceinline__ void rotate(float x0, float x1, float p, float inv, float& y0, float& y1) {
  float sn, cs;
  sincosf(__fmul_rn(p, inv), &sn, &cs);
  y0 = __fsub_rn(__fmul_rn(x0, cs), __fmul_rn(x1, sn));
  y1 = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, cs));
}

// Block (row r, head h): h < heads rotates query head h; h >= heads rotates key head h - heads and writes
// it and its value to the cache. One block per head rather than per row: each element's arithmetic is the
// same, and a decode row's latency is one head's work instead of every head's in turn.
__global__ void rope_kv_write_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                                     float* __restrict__ q_out, const AttnRow* __restrict__ rows,
                                     const std::int64_t* __restrict__ pos, const float* __restrict__ inv_freq,
                                     bool interleaved, int heads, int kv_heads, int head_dim) {
  pdl_launch();
  pdl_wait();
  const std::int64_t r = blockIdx.x;
  const int hb = blockIdx.y;
  const int half = head_dim / 2;
  const float p = static_cast<float>(pos[r]);
  if (hb < heads) {
    const std::int64_t base = (r * heads + hb) * static_cast<std::int64_t>(head_dim);
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
      const int i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
      float y0, y1;
      rotate(q[base + i0], q[base + i1], p, inv_freq[i], y0, y1);
      q_out[base + i0] = y0;
      q_out[base + i1] = y1;
    }
    return;
  }
  const int h = hb - heads;
  const AttnRow row = rows[r];
  const std::int64_t base = (r * kv_heads + h) * static_cast<std::int64_t>(head_dim);
  const std::int64_t at = (static_cast<std::int64_t>(h) * row.cap + row.write_pos) * head_dim;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const int i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
    float y0, y1;
    rotate(k[base + i0], k[base + i1], p, inv_freq[i], y0, y1);
    row.k[at + i0] = y0;
    row.k[at + i1] = y1;
  }
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) row.v[at + d] = v[base + d];
}

}  // namespace

void rope_kv_write(const float* q, const float* k, const float* v, float* q_out, const AttnRow* rows,
                   const std::int64_t* pos, const float* inv_freq, bool interleaved, std::int64_t n_rows, int heads,
                   int kv_heads, int head_dim, cudaStream_t s) {
  if (n_rows <= 0) return;
  if (head_dim % 2 != 0) throw std::invalid_argument("rope_kv_write: head_dim must be even");
  launch_pdl(rope_kv_write_kernel, dim3(static_cast<unsigned int>(n_rows), static_cast<unsigned int>(heads + kv_heads)),
             dim3(128), 0, s, q, k, v, q_out, rows, pos, inv_freq, interleaved, heads, kv_heads, head_dim);
}

}  // namespace tf::cuda
