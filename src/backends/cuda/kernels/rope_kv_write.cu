// RoPE of q and k fused with the KV-cache write: one launch where the tape had three (rope q, rope k, the
// cache write). Row r: q_out[r] = rope(q[r]); the cache of rows[r] gets rope(k[r]) and v[r] at
// rows[r].write_pos. The rotation is rope_math.cuh's, shared with rope.cu, so fused and unfused give the
// same bits. The backend launches it for prefill calls (more than kMaxDecodeRows rows) only: a decode
// call's RoPE and cache write are done by the decode attention kernel itself (DecodeAttnArgs::k_new), one
// launch a layer fewer.
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/rope_math.cuh"

namespace tf::cuda {
namespace {

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
      int i0, i1;
      rope_pair(i, half, interleaved, i0, i1);
      float y0, y1;
      rope_rotate(q[base + i0], q[base + i1], p, inv_freq[i], y0, y1);
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
    int i0, i1;
    rope_pair(i, half, interleaved, i0, i1);
    float y0, y1;
    rope_rotate(k[base + i0], k[base + i1], p, inv_freq[i], y0, y1);
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
