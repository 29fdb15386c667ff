// The decode matmul: 1..16 activation rows against an affine group-quantized (2, 4 or 8 bits) or dense weight.
//
// Work split (a function of the weight shape alone, never of the row count):
// - a weight row is cut into 16-byte chunks (64 2-bit codes, 32 4-bit, 16 8-bit, 8 bf16/f16 or 4 f32 values);
//   a chunk of codes lies in one group (decode_linear_supported), so one scale and bias serve it;
//   chunk c goes to lane c % 32 of the warp that owns the row; each lane walks its chunks in increasing
//   order, two at a time with the next two loading;
// - per chunk and activation row r: accq = sum x*q (fused multiply-adds in k order), sx = sum x (adds in k
//   order), then acc += scale*accq + bias*sx (affine); dense: acc = fma(x, w, acc) in k order;
// - acc is reduced over the lanes by the xor butterfly (16, 8, 4, 2, 1).
// A warp holds O weight rows so one x load serves O rows (a block is 4 such warps); the row tile RT (1, 2, 4, 8 or 16
// activation rows) only decides how many rows share the weight loads. Row r's arithmetic is the same in every tile.
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/decode_linear_tiled.cuh"
#include "backends/cuda/kernels/decode_linear_tiled_parts.cuh"
#include "backends/cuda/kernels/tiled_layout.h"

namespace tf::cuda {
namespace {

template <int BITS, ElemType E>
struct ChunkFormat {
  static constexpr bool kQuant = BITS > 0;
  static constexpr int kWeights = kQuant ? 128 / BITS : 16 / static_cast<int>(sizeof(typename ElemOf<E>::type));
};

// Weight values 4*s .. 4*s+3 of a 16-byte chunk, as floats. Affine codes come out scaled by a power of two
// per position (q * 4^i for 2-bit, q * 16^i for 4-bit, q * 256^(i%2) for 8-bit): masking a code in place and or-ing
// 2^23's exponent gives 2^23 + q*2^b exactly, one subtraction removes 2^23, and no shift is needed. prescale()
// multiplies x by the inverse power of two, so x' * w' == x * q exactly and the fused multiply-add rounds
// exactly as fma(x, q, acc) would.
template <int BITS, ElemType E>
__device__ __forceinline__ void chunk_quad(const uint4& q, int s, float (&w)[4]) {
  const unsigned int words[4] = {q.x, q.y, q.z, q.w};
  if constexpr (BITS == 2) {
    // Byte s of the chunk holds codes 4s..4s+3 (LSB first); s is a compile-time index, so is the shift.
    const unsigned int byte = (words[s >> 2] >> (8 * (s & 3))) & 0xFFu;
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = __fsub_rn(__uint_as_float((byte & (0x3u << (2 * i))) | 0x4B000000u), 8388608.0f);
  } else if constexpr (BITS == 4) {
    const unsigned int half = (s & 1) ? (words[s >> 1] >> 16) : words[s >> 1];
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = __fsub_rn(__uint_as_float((half & (0xFu << (4 * i))) | 0x4B000000u), 8388608.0f);
  } else if constexpr (BITS == 8) {
    const unsigned int word = words[s];
    const unsigned int hi = word >> 16;
    w[0] = __fsub_rn(__uint_as_float((word & 0xFFu) | 0x4B000000u), 8388608.0f);
    w[1] = __fsub_rn(__uint_as_float((word & 0xFF00u) | 0x4B000000u), 8388608.0f);
    w[2] = __fsub_rn(__uint_as_float((hi & 0xFFu) | 0x4B000000u), 8388608.0f);
    w[3] = __fsub_rn(__uint_as_float((hi & 0xFF00u) | 0x4B000000u), 8388608.0f);
  } else if constexpr (E == ElemType::F32) {
    w[0] = __uint_as_float(q.x);
    w[1] = __uint_as_float(q.y);
    w[2] = __uint_as_float(q.z);
    w[3] = __uint_as_float(q.w);
  } else {
    const unsigned int a = words[2 * s], b = words[2 * s + 1];
    if constexpr (E == ElemType::BF16) {
      w[0] = __uint_as_float(a << 16);
      w[1] = __uint_as_float(a & 0xFFFF0000u);
      w[2] = __uint_as_float(b << 16);
      w[3] = __uint_as_float(b & 0xFFFF0000u);
    } else {
      w[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(a & 0xFFFFu)));
      w[1] = __half2float(__ushort_as_half(static_cast<unsigned short>(a >> 16)));
      w[2] = __half2float(__ushort_as_half(static_cast<unsigned short>(b & 0xFFFFu)));
      w[3] = __half2float(__ushort_as_half(static_cast<unsigned short>(b >> 16)));
    }
  }
}

template <int BITS>
__device__ __forceinline__ float4 prescale(float4 x) {
  if constexpr (BITS == 2)
    return make_float4(x.x, __fmul_rn(x.y, 0.25f), __fmul_rn(x.z, 0.0625f), __fmul_rn(x.w, 0.015625f));
  else if constexpr (BITS == 4)
    return make_float4(x.x, __fmul_rn(x.y, 0.0625f), __fmul_rn(x.z, 0.00390625f), __fmul_rn(x.w, 0.000244140625f));
  else if constexpr (BITS == 8) return make_float4(x.x, __fmul_rn(x.y, 0.00390625f), x.z, __fmul_rn(x.w, 0.00390625f));
  else return x;
}

struct Slot {
  const unsigned char* row;
  const void* scales;
  const void* biases;
  float* out;
  std::int64_t out_stride;
  std::int64_t index;  // weight row
  bool valid;
};

template <int BITS, ElemType E, int RT, int O, bool NORM>
__global__ void __launch_bounds__(128, RT == 1 ? (NORM ? 3 : 4) : (RT == 2 ? 3 : 1)) decode_linear_kernel(DecodeLinearArgs a, std::int64_t cols, int group,
                                                            std::int64_t row_bytes, std::int64_t groups_per_row) {
  using F = ChunkFormat<BITS, E>;
  constexpr int CW = F::kWeights;
  constexpr int SUBS = CW / 4;
  constexpr int UC = 2;  // chunks a lane loads at once
  const bool swiglu = a.swiglu_out != nullptr;
  const int lane = threadIdx.x & 31;
  const std::int64_t wg = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);

  Slot slot[O];
#pragma unroll
  for (int j = 0; j < O; ++j) {
    int seg = 0;
    std::int64_t idx;
    if (swiglu) {
      seg = j < O / 2 ? 0 : 1;
      idx = wg * (O / 2) + (j % (O / 2));
    } else {
      idx = wg * O + j;
      if (a.segments > 1 && idx >= a.seg[0].w.rows) {
        idx -= a.seg[0].w.rows;
        seg = 1;
        if (a.segments > 2 && idx >= a.seg[1].w.rows) {
          idx -= a.seg[1].w.rows;
          seg = 2;
        }
      }
    }
    // Field by field with selects: a run-time index into the parameter struct would copy it to local memory.
#define TF_PICK(field) (seg == 0 ? a.seg[0].field : seg == 1 ? a.seg[1].field : a.seg[2].field)
    slot[j].valid = idx < TF_PICK(w.rows);
    const std::int64_t safe = slot[j].valid ? idx : 0;
    slot[j].index = safe;
    slot[j].row = static_cast<const unsigned char*>(TF_PICK(w.data)) + safe * row_bytes;
    slot[j].scales = TF_PICK(w.scales);
    slot[j].biases = TF_PICK(w.biases);
    slot[j].out = TF_PICK(out);
    slot[j].out_stride = TF_PICK(out_stride);
#undef TF_PICK
  }

  const float* xrow[RT];
#pragma unroll
  for (int r = 0; r < RT; ++r) xrow[r] = a.x + static_cast<std::int64_t>(r < a.rows ? r : a.rows - 1) * a.x_stride;

  float acc[RT][O];
#pragma unroll
  for (int r = 0; r < RT; ++r)
#pragma unroll
    for (int j = 0; j < O; ++j) acc[r][j] = 0.0f;

  // Chunks c = lane, lane + 32, ... in increasing order, UC loaded at once (the first UC before pdl_wait, so
  // they stream while the previous kernel drains); other warps hide each warp's load latency.
  const std::int64_t chunks = cols / CW;
  uint4 q[UC][O];
  float sc[UC][O], bi[UC][O];
  auto fetch = [&](std::int64_t c0) {
#pragma unroll
    for (int u = 0; u < UC; ++u) {
      const std::int64_t c = c0 + 32 * u;
      if (c >= chunks) continue;
#pragma unroll
      for (int j = 0; j < O; ++j) q[u][j] = ldg_stream(slot[j].row + c * 16);
      if constexpr (F::kQuant) {
        const std::int64_t g = (c * CW) / group;
#pragma unroll
        for (int j = 0; j < O; ++j) {
          sc[u][j] = load_elem<E>(slot[j].scales, slot[j].index * groups_per_row + g);
          bi[u][j] = load_elem<E>(slot[j].biases, slot[j].index * groups_per_row + g);
        }
      }
    }
  };
  pdl_launch();
  fetch(lane);
  pdl_wait();
  // Fused RMSNorm: per row, the sum of squares of x (+ b) in the order of norm_part_sum (common.cuh): the
  // parts one after another, added in part order, as the standalone norm kernel adds them; then
  // inv = rsqrt(mean + eps). The grid's first warp writes the residual sum.
  float inv[NORM ? RT : 1];
  if constexpr (NORM) {
    const std::int64_t c4 = cols / 4;
#pragma unroll
    for (int r = 0; r < RT; ++r) {
      const std::int64_t off = static_cast<std::int64_t>(r < a.rows ? r : a.rows - 1) * a.x_stride;
      auto load = [&](std::int64_t i) {
        float4 v = *reinterpret_cast<const float4*>(a.x + off + 4 * i);
        if (a.norm_b != nullptr) {
          const float4 b = *reinterpret_cast<const float4*>(a.norm_b + off + 4 * i);
          v = make_float4(__fadd_rn(v.x, b.x), __fadd_rn(v.y, b.y), __fadd_rn(v.z, b.z), __fadd_rn(v.w, b.w));
          if (wg == 0 && a.norm_sum != nullptr && r < a.rows) *reinterpret_cast<float4*>(a.norm_sum + off + 4 * i) = v;
        }
        return v;
      };
      float parts[kNormParts];
#pragma unroll
      for (int part = 0; part < kNormParts; ++part) parts[part] = norm_part_sum(load, part, c4, lane);
      inv[r] = norm_inv_rms(parts, 1, cols, a.norm_eps);
    }
  }
  for (std::int64_t c0 = lane; c0 < chunks; c0 += 32 * UC) {
    if (c0 != lane) fetch(c0);
#pragma unroll
    for (int u = 0; u < UC; ++u) {
      const std::int64_t c = c0 + 32 * u;
      if (c >= chunks) break;
      float accq[RT][O], sx[RT];
      if constexpr (F::kQuant) {
#pragma unroll
        for (int r = 0; r < RT; ++r) {
          sx[r] = 0.0f;
#pragma unroll
          for (int j = 0; j < O; ++j) accq[r][j] = 0.0f;
        }
      }
#pragma unroll
      for (int s = 0; s < SUBS; ++s) {
        float w[O][4];
#pragma unroll
        for (int j = 0; j < O; ++j) chunk_quad<BITS, E>(q[u][j], s, w[j]);
#pragma unroll
        for (int r = 0; r < RT; ++r) {
          float4 xv = *reinterpret_cast<const float4*>(xrow[r] + c * CW + 4 * s);
          if constexpr (NORM) {
            const std::int64_t k = c * CW + 4 * s;
            if (a.norm_b != nullptr) {
              const float4 b = *reinterpret_cast<const float4*>(a.norm_b + (xrow[r] - a.x) + k);
              xv = make_float4(__fadd_rn(xv.x, b.x), __fadd_rn(xv.y, b.y), __fadd_rn(xv.z, b.z), __fadd_rn(xv.w, b.w));
            }
            const float4 wv = *reinterpret_cast<const float4*>(a.norm_w + k);
            xv = make_float4(__fmul_rn(__fmul_rn(xv.x, inv[r]), wv.x), __fmul_rn(__fmul_rn(xv.y, inv[r]), wv.y),
                             __fmul_rn(__fmul_rn(xv.z, inv[r]), wv.z), __fmul_rn(__fmul_rn(xv.w, inv[r]), wv.w));
          }
          if constexpr (F::kQuant) {
            sx[r] = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(sx[r], xv.x), xv.y), xv.z), xv.w);
            const float4 xs = prescale<BITS>(xv);
#pragma unroll
            for (int j = 0; j < O; ++j) {
              float t = accq[r][j];
              t = __fmaf_rn(xs.x, w[j][0], t);
              t = __fmaf_rn(xs.y, w[j][1], t);
              t = __fmaf_rn(xs.z, w[j][2], t);
              t = __fmaf_rn(xs.w, w[j][3], t);
              accq[r][j] = t;
            }
          } else {
#pragma unroll
            for (int j = 0; j < O; ++j) {
              float t = acc[r][j];
              t = __fmaf_rn(xv.x, w[j][0], t);
              t = __fmaf_rn(xv.y, w[j][1], t);
              t = __fmaf_rn(xv.z, w[j][2], t);
              t = __fmaf_rn(xv.w, w[j][3], t);
              acc[r][j] = t;
            }
          }
        }
      }
      if constexpr (F::kQuant) {
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int j = 0; j < O; ++j)
            acc[r][j] = __fadd_rn(acc[r][j], __fmaf_rn(bi[u][j], sx[r], __fmul_rn(sc[u][j], accq[r][j])));
      }
    }
  }

  // The lanes' partial sums by the xor butterfly (every lane gets the same bits); lane row*O + j writes.
#pragma unroll
  for (int r = 0; r < RT; ++r)
#pragma unroll
    for (int j = 0; j < O; ++j) acc[r][j] = warp_sum(acc[r][j]);
  // The slots are indexed with compile-time indices only (a run-time index would move them to local memory).
  if (!swiglu) {
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int j = 0; j < O; ++j)
        if (lane == (r * O + j) % 32 && r < a.rows && slot[j].valid && slot[j].out != nullptr)
          slot[j].out[r * slot[j].out_stride + slot[j].index] = acc[r][j];
  } else {
    constexpr int H = O / 2;
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int j = 0; j < H; ++j) {
        if (lane != (r * H + j) % 32 || r >= a.rows || !slot[j].valid) continue;
        const float g = acc[r][j], u = acc[r][j + H];
        if (slot[j].out != nullptr) slot[j].out[r * slot[j].out_stride + slot[j].index] = g;
        if (slot[j + H].out != nullptr) slot[j + H].out[r * slot[j + H].out_stride + slot[j].index] = u;
        const float silu = __fdiv_rn(g, __fadd_rn(1.0f, expf(-g)));
        a.swiglu_out[r * a.swiglu_stride + slot[j].index] = __fmul_rn(silu, u);
      }
  }
}

int chunk_weights(const WeightView& w) {
  if (w.bits > 0) return 128 / w.bits;
  return static_cast<int>(16 / elem_bytes(w.dtype));
}

template <int BITS, ElemType E, int RT>
void launch_rt(const DecodeLinearArgs& a, cudaStream_t s) {
  constexpr int O = RT >= 8 ? 2 : 4;
  constexpr int kWarps = 4;
  const WeightView& w = a.seg[0].w;
  std::int64_t warps;
  if (a.swiglu_out != nullptr) {
    warps = ceil_div(w.rows, O / 2);
  } else {
    std::int64_t total = 0;
    for (int i = 0; i < a.segments; ++i) total += a.seg[i].w.rows;
    warps = ceil_div(total, O);
  }
  const std::int64_t row_bytes = BITS > 0 ? w.cols * BITS / 8 : w.cols * static_cast<std::int64_t>(elem_bytes(E));
  const std::int64_t gpr = BITS > 0 ? w.cols / w.group : 0;
  const dim3 grid(static_cast<unsigned int>(ceil_div(warps, kWarps)));
  if (a.norm_w != nullptr)
    launch_pdl(decode_linear_kernel<BITS, E, RT, O, true>, grid, dim3(32 * kWarps), 0, s, a, w.cols,
               BITS > 0 ? w.group : 1, row_bytes, gpr);
  else
    launch_pdl(decode_linear_kernel<BITS, E, RT, O, false>, grid, dim3(32 * kWarps), 0, s, a, w.cols,
               BITS > 0 ? w.group : 1, row_bytes, gpr);
  check_launch("decode_linear");
}

template <int BITS, ElemType E>
void launch_bits(const DecodeLinearArgs& a, cudaStream_t s) {
  if (a.rows <= 1) return launch_rt<BITS, E, 1>(a, s);
  if (a.rows <= 2) return launch_rt<BITS, E, 2>(a, s);
  if (a.rows <= 4) return launch_rt<BITS, E, 4>(a, s);
  if (a.rows <= 8) return launch_rt<BITS, E, 8>(a, s);
  return launch_rt<BITS, E, 16>(a, s);
}

template <int BITS>
void launch_dtype(const DecodeLinearArgs& a, cudaStream_t s) {
  switch (a.seg[0].w.dtype) {
    case ElemType::F32: return launch_bits<BITS, ElemType::F32>(a, s);
    case ElemType::F16: return launch_bits<BITS, ElemType::F16>(a, s);
    case ElemType::BF16: return launch_bits<BITS, ElemType::BF16>(a, s);
  }
}

}  // namespace

std::size_t elem_bytes(ElemType t) { return t == ElemType::F32 ? 4 : 2; }

bool decode_linear_supported(const WeightView& w) {
  if (w.tiled) return tileable(w.bits, w.group, w.cols);
  if (w.bits != 0 && w.bits != 2 && w.bits != 4 && w.bits != 8) return false;
  const std::int64_t cw = chunk_weights(w);
  // A chunk of codes takes one scale and bias: it must lie in one group (2-bit: groups of 64, 128, ...).
  if (w.bits != 0 && (w.group <= 0 || w.group % 32 != 0 || w.group % cw != 0 || w.cols % w.group != 0)) return false;
  return w.cols % cw == 0 && w.cols % 4 == 0;
}

int decode_linear_threads(const WeightView&) { return 32; }

bool decode_linear_takes_norm(const WeightView& w) {
  return w.tiled ? !tiled::imma_eligible(w) : w.cols <= kMaxFusedNormCols;
}

void decode_linear(const DecodeLinearArgs& a, cudaStream_t s) {
  if (a.rows < 1 || a.rows > kMaxDecodeRows) throw std::invalid_argument("decode_linear: 1..16 rows");
  if (a.segments < 1 || a.segments > 3) throw std::invalid_argument("decode_linear: 1..3 segments");
  const WeightView& w = a.seg[0].w;
  if (!decode_linear_supported(w)) throw std::invalid_argument("decode_linear: unsupported weight format");
  for (int i = 1; i < a.segments; ++i) {
    const WeightView& o = a.seg[i].w;
    if (o.cols != w.cols || o.bits != w.bits || o.group != w.group || o.dtype != w.dtype || o.tiled != w.tiled)
      throw std::invalid_argument("decode_linear: segments differ in format");
  }
  if (a.swiglu_out != nullptr && (a.segments != 2 || a.seg[1].w.rows != w.rows))
    throw std::invalid_argument("decode_linear: swiglu needs two segments of equal rows");
  if (a.swiglu_prepare != nullptr &&
      (a.swiglu_out == nullptr || !tiled::imma_eligible(w) || w.rows % 64 != 0 ||
       a.swiglu_prepare_bytes < tiled::imma_scratch_bytes(w.rows) || a.swiglu_prepare == a.imma_scratch))
    throw std::invalid_argument("decode_linear: swiglu_prepare needs the swiglu epilogue on the integer kernel, "
                                "whole pairs of 64, and scratch of its own");
  if ((reinterpret_cast<std::uintptr_t>(a.x) & 15) != 0 || (a.x_stride & 3) != 0)
    throw std::invalid_argument("decode_linear: x must be 16-byte aligned");
  if (w.tiled) {
    if (a.norm_w != nullptr && a.x_stride != w.cols) throw std::invalid_argument("decode_linear: a fused norm needs dense rows");
    return decode_linear_tiled(a, s);
  }
  if (a.norm_w != nullptr && (w.cols > kMaxFusedNormCols || a.x_stride != w.cols))
    throw std::invalid_argument("decode_linear: a fused norm needs cols <= kMaxFusedNormCols and dense rows");
  switch (w.bits) {
    case 2: return launch_dtype<2>(a, s);
    case 4: return launch_dtype<4>(a, s);
    case 8: return launch_dtype<8>(a, s);
    default: return launch_dtype<0>(a, s);
  }
}

}  // namespace tf::cuda
