#pragma once
// The integer decode matmul's x terms and its tensor-core step, shared by its two kernels (decode_linear_imma.cu:
// a block of 16 warps over K for any 1-16 rows; decode_linear_imma_stream.cu: warps streaming their K ranges,
// 1-8 rows) and by the prepare kernels.
//
// Exactness and row invariance:
// - x is cut per group and activation row: e = the exponent with max|x| < 2^e over the group, and
//   x = 2^(e-20) (q0 2^14 + q1 2^7 + q2) + err, each q in [-64, 64] (every step exact in float32 but the
//   three roundings to nearest), |err| <= 2^(e-21): 20 bits below the group's largest value.
// - Each term's products with the codes add up exactly in int32 (the mma), and so does D = D0 2^14 + D1 2^7
//   + D2 (at most 64 * 15 * 64 * 2^14 < 2^31): a group's sum of code * quantized x is an exact integer,
//   whatever the order or the mma layout. Then, in float32: acc = (s * 2^(e-20)) * D + (b * (2^(e-20) * the
//   quantized sum of x) + acc) (that sum an exact integer too).
// - K is cut into kRanges contiguous ranges of whole groups (a function of K alone); each range's groups are
//   added in k order from 0, and the ranges' sums are added in range order. Both kernels keep exactly this,
//   so a row's bits depend on nothing but its own x and the weight.
#include "backends/cuda/kernels/decode_linear_tiled_parts.cuh"

namespace tf::cuda::tiled {

__device__ __forceinline__ void mma_u8s8(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Adding 1.5 * 2^23 to |v| <= 2^22 rounds it to the nearest integer (ties to even) and leaves that integer
// in the low mantissa bits: the low byte is its two's-complement int8.
constexpr float kRound = 12582912.0f;

// The three int8 terms of x * 2^(6-e) (|.| < 64; `up` = 2^(6-e), up128 = 2^(13-e)) in bytes 0..2 of the
// result. Every step but the three roundings to nearest is exact: x * up is a power-of-two scaling, and
// each residual (x * up - q0, then (that) * 128 - q1) is a multiple of the value's ulp below 1/2 in size.
__device__ __forceinline__ unsigned three_terms(float x, float up, float up128) {
  const float r0 = __fmaf_rn(x, up, kRound);
  const float f1 = __fmaf_rn(x, up128, __fmul_rn(__fsub_rn(r0, kRound), -128.0f));
  const float r1 = __fadd_rn(f1, kRound);
  const float f2 = __fmaf_rn(f1, 128.0f, __fmul_rn(__fsub_rn(r1, kRound), -128.0f));
  const float r2 = __fadd_rn(f2, kRound);
  return __byte_perm(__byte_perm(__float_as_uint(r0), __float_as_uint(r1), 0x0040), __float_as_uint(r2), 0x0410);
}

// q0 2^14 + q1 2^7 + q2 summed over the bytes of three term words (signed, exact: order-free).
__device__ __forceinline__ int term_sum(unsigned t0, unsigned t1, unsigned t2) {
  return __dp4a(static_cast<int>(t0), 0x01010101, 0) * 16384 + __dp4a(static_cast<int>(t1), 0x01010101, 0) * 128 +
         __dp4a(static_cast<int>(t2), 0x01010101, 0);
}

// e with max|x| < 2^e (m's exponent + 1), kept where 2^(6-e) and 2^(e-20) are normal floats; returns
// 2^(6-e) and sets deq = 2^(e-20) (0 for an all-zero group).
__device__ __forceinline__ float group_scale(float m, float& deq) {
  int e = static_cast<int>((__float_as_uint(m) >> 23) & 0xFF) - 126;
  e = e < -100 ? -100 : e;
  deq = m == 0.0f ? 0.0f : __uint_as_float(static_cast<unsigned>(127 + e - 20) << 23);
  return __uint_as_float(static_cast<unsigned>(127 + 6 - e) << 23);
}

// Per warp: the pair's x terms as B fragments, [unit][term][row][32 slots] bytes, and per (group of the
// pair, row) the step 2^(e-20) and 2^(e-20) * the sum of the quantized x.
struct WarpX {
  unsigned char q[2][3][kMaxDecodeRows][32];
  float2 ex[2][kMaxDecodeRows];
};

// The mma's k slots: word j of a unit (codes 8j .. 8j + 7) gives its even codes to slots 4j .. 4j + 3
// (w & 0x0F0F0F0F) and its odd ones to 16 + 4j .. ((w >> 4) & 0x0F0F0F0F): slot s holds logical k =
// 8 ((s & 15) >> 2) + 2 (s & 3) + (s >> 4), and B is written in that order.

// One activation row's terms for one pair (64 k at xp, plain loads: global or shared memory) into row `row`
// of wx, by the whole warp (two values a lane), and per group 2^(e-20) and 2^(e-20) times the sum of the
// quantized x. prepare_pair uses it for calls of 1-2 rows; the decode attention's combine kernel for the
// row of a head it has just combined (the next matmul's terms, the same bits).
template <bool G64>
__device__ __forceinline__ void prepare_row(const float* __restrict__ xp, int row, int lane, WarpX& wx) {
  // Lane L prepares slots 2L and 2L + 1 of the pair's 64 (unit L / 16): logical k0 and k0 + 2 of the pair.
  const int unit_l = lane >> 4, ss = (lane & 15) << 1;
  const int kk0 = unit_l * 32 + (((ss >> 2) & 3) << 3) + ((ss & 3) << 1) + (ss >> 4);
  constexpr int first_off = G64 ? 16 : 8;  // butterfly span: the whole pair (g64) or the lane's unit (g32)
  const float x0 = xp[kk0], x1 = xp[kk0 + 2];
  float m = fmaxf(fabsf(x0), fabsf(x1));
#pragma unroll
  for (int o = first_off; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float deq;
  const float up = group_scale(m, deq), up128 = __fmul_rn(up, 128.0f);
  const unsigned q0 = three_terms(x0, up, up128), q1 = three_terms(x1, up, up128);
  unsigned two[3];
#pragma unroll
  for (int term = 0; term < 3; ++term) {
    two[term] = __byte_perm(q0, q1, 0x0040 + term * 0x0011) & 0xFFFFu;  // term of x0, term of x1
    *reinterpret_cast<unsigned short*>(&wx.q[unit_l][term][row][ss]) = static_cast<unsigned short>(two[term]);
  }
  int sq = term_sum(two[0], two[1], two[2]);
#pragma unroll
  for (int o = first_off; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  if ((lane & 15) == 0 && (unit_l == 0 || !G64)) wx.ex[unit_l][row] = make_float2(deq, __fmul_rn(deq, __int2float_rn(sq)));
}

// x's terms for pair p (64 k) of every activation row (x in global or shared memory: plain loads), and per
// group and row 2^(e-20) and 2^(e-20) times the sum of the quantized x (an exact integer, so both ways of
// preparing give the same bits): 1-2 rows by the whole warp a row at a time (prepare_row), more by a lane
// per row. `wx` may live in shared memory (the matmul preparing its own) or in global memory
// (imma_prepare_kernel, once per launch).
template <bool G64>
__device__ __forceinline__ void prepare_pair(const float* __restrict__ x, std::int64_t x_stride, int rows, std::int64_t p,
                                             int lane, WarpX& wx) {
  if (rows <= 2) {
    for (int row = 0; row < rows; ++row) prepare_row<G64>(x + static_cast<std::int64_t>(row) * x_stride + p * 64, row, lane, wx);
  } else {
    // Many rows: lane (r, j) takes row r (+ 8 on the second pass), values 8j .. 8j + 7 of both units,
    // and writes them straight into B's slots 4j.. (even k) and 16 + 4j.. (odd k).
    const int rq = lane >> 2, jq = lane & 3;
    for (int base = 0; base < rows; base += 8) {
      const int row = base + rq;
      const bool valid = row < rows;
      float xv[2][8];
      const float* xr = x + static_cast<std::int64_t>(valid ? row : 0) * x_stride + p * 64 + 8 * jq;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const float4 lo = *reinterpret_cast<const float4*>(xr + 32 * u);
        const float4 hi = *reinterpret_cast<const float4*>(xr + 32 * u + 4);
        xv[u][0] = lo.x, xv[u][1] = lo.y, xv[u][2] = lo.z, xv[u][3] = lo.w;
        xv[u][4] = hi.x, xv[u][5] = hi.y, xv[u][6] = hi.z, xv[u][7] = hi.w;
      }
      float mu[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        float m = fabsf(xv[u][0]);
#pragma unroll
        for (int i = 1; i < 8; ++i) m = fmaxf(m, fabsf(xv[u][i]));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        mu[u] = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      }
      if (G64) mu[0] = mu[1] = fmaxf(mu[0], mu[1]);
      int sq[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        float deq;
        const float up = group_scale(mu[u], deq), up128 = __fmul_rn(up, 128.0f);
        unsigned tt[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) tt[i] = three_terms(xv[u][i], up, up128);
        unsigned words[3][2];
#pragma unroll
        for (int term = 0; term < 3; ++term) {
          const unsigned sel = static_cast<unsigned>(term | ((4 + term) << 4));
          words[term][0] = __byte_perm(__byte_perm(tt[0], tt[2], sel), __byte_perm(tt[4], tt[6], sel), 0x5410);
          words[term][1] = __byte_perm(__byte_perm(tt[1], tt[3], sel), __byte_perm(tt[5], tt[7], sel), 0x5410);
          if (valid) {
            *reinterpret_cast<unsigned*>(&wx.q[u][term][row][4 * jq]) = words[term][0];
            *reinterpret_cast<unsigned*>(&wx.q[u][term][row][16 + 4 * jq]) = words[term][1];
          }
        }
        sq[u] = term_sum(words[0][0], words[1][0], words[2][0]) + term_sum(words[0][1], words[1][1], words[2][1]);
        if (!G64 || u == 1) {
          float d2;
          group_scale(mu[u], d2);
          int t = G64 ? sq[0] + sq[1] : sq[u];
          t += __shfl_xor_sync(0xffffffffu, t, 1);
          t += __shfl_xor_sync(0xffffffffu, t, 2);
          if (valid && jq == 0) wx.ex[G64 ? 0 : u][row] = make_float2(d2, __fmul_rn(d2, __int2float_rn(t)));
        }
      }
    }
  }
}

// A pair's B fragments for the 8 activation rows of block rb (slots 4c.. and 16 + 4c.. of row rb * 8 + lane / 4,
// each term and unit) and, per group, the step and quantized sum of this lane's two C columns (rows rb * 8 + 2c,
// + 1), zero from row `rows` on: how the blocked decode kernel and the prefill GEMM read prepared terms.
template <bool G64, class Rows>
__device__ __forceinline__ void load_b_block(const WarpX& src, int rb, Rows rows, int lane, unsigned (&bf)[3][2][2],
                                             float2 (&ex)[2][2]) {
  const int c = lane & 3, brow = rb * 8 + (lane >> 2);
#pragma unroll
  for (int term = 0; term < 3; ++term)
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      bf[term][u][0] = *reinterpret_cast<const unsigned*>(&src.q[u][term][brow][4 * c]);
      bf[term][u][1] = *reinterpret_cast<const unsigned*>(&src.q[u][term][brow][16 + 4 * c]);
    }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = rb * 8 + 2 * c + h;
#pragma unroll
    for (int g = 0; g < (G64 ? 1 : 2); ++g) ex[g][h] = row < rows ? src.ex[g][row] : make_float2(0.0f, 0.0f);
  }
}

// A word of eight codes of weight row r (w0) and of row r + 8 (w1) as the mma's A registers, two LOP3s a
// word: even codes to the unit's k slots 0-15, odd ones to 16-31 (B follows that order, see prepare_pair).
__device__ __forceinline__ void codes_to_a(unsigned w0, unsigned w1, unsigned (&af)[4]) {
  af[0] = w0 & 0x0F0F0F0Fu;
  af[1] = w1 & 0x0F0F0F0Fu;
  af[2] = (w0 >> 4) & 0x0F0F0F0Fu;
  af[3] = (w1 >> 4) & 0x0F0F0F0Fu;
}

// A group's exact integer sum D = D0 2^14 + D1 2^7 + D2 from its three terms' mma sums. Unsigned
// wrap-around keeps columns that are no real row (zero step, discarded) well defined; real rows never wrap.
__device__ __forceinline__ int group_whole(int d0, int d1, int d2) {
  return static_cast<int>(static_cast<unsigned>(d0) * 16384u + static_cast<unsigned>(d1) * 128u + static_cast<unsigned>(d2));
}

// One group added to a range's sum, in float32: acc = (s * step) * D + (b * (step * quantized sum) + acc),
// e = (step, step * quantized sum). Both kernels add every group this way: the same bits.
template <class SB>
__device__ __forceinline__ float group_step(float acc, const SB& sb, float2 e, int whole) {
  return __fmaf_rn(__fmul_rn(sb.scale(), e.x), __int2float_rn(whole), __fmaf_rn(sb.bias(), e.y, acc));
}

// The streaming kernel (decode_linear_imma_stream.cu) takes calls of 1-8 rows whose x terms are prepared
// for the launch; the blocked kernel the rest. It returns whether it also wrote a.swiglu_prepare's terms
// (its wide kernels do; otherwise the caller runs the prepare kernel on swiglu_out).
constexpr int kMaxStreamRows = 8;
bool imma_stream_takes(const TiledArgs& ta);
bool decode_linear_imma_stream(const TiledArgs& ta, cudaStream_t s);

}  // namespace tf::cuda::tiled
