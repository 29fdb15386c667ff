#pragma once
// The RoPE rotation, one definition for every kernel that rotates (rope.cu, rope_kv_write.cu, and the decode
// attention, which rotates a decode call's q and k itself): pair i of a head at position p turns by angle
// p * inv[i] (a float32 product, then sincosf), y0 = x0 cos - x1 sin, y1 = x0 sin + x1 cos, each product
// rounded on its own (-fmad=false). A decode step's keys are rotated by the attention kernel and a prefill
// chunk's by rope_kv_write, and the next step reads both from the cache: exact decoding needs these lines,
// with the same operands, in both.
#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {

// The angle's sine and cosine, and the rotation by them: split so that a kernel may take the sincosf
// before its inputs exist (the decode attention does it before its PDL wait).
__device__ __forceinline__ void rope_sincos(float p, float inv, float& sn, float& cs) {
  sincosf(__fmul_rn(p, inv), &sn, &cs);
}
__device__ __forceinline__ void rope_apply(float x0, float x1, float sn, float cs, float& y0, float& y1) {
  y0 = __fsub_rn(__fmul_rn(x0, cs), __fmul_rn(x1, sn));
  y1 = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, cs));
}

// Rotates the pair (x0, x1) by p * inv.
__device__ __forceinline__ void rope_rotate(float x0, float x1, float p, float inv, float& y0, float& y1) {
  float sn, cs;
  rope_sincos(p, inv, sn, cs);
  rope_apply(x0, x1, sn, cs, y0, y1);
}

// The two dims of pair i: (2i, 2i + 1) when interleaved (GGUF's permuted llama weights), else (i, i + half).
__device__ __forceinline__ void rope_pair(int i, int half, bool interleaved, int& i0, int& i1) {
  i0 = interleaved ? 2 * i : i;
  i1 = interleaved ? 2 * i + 1 : i + half;
}

}  // namespace tf::cuda
