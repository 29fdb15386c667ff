// The decode matmul on tensor cores: 1..16 activation rows against a tiled affine 4- or 8-bit weight
// (tiled_layout.h), y[r, n] = sum_k x[r, k] * (scale[n, g] * q[n, k] + bias[n, g]).
//
// Why tensor cores: on the CUDA cores a 4-bit weight costs about five instructions to unpack and multiply,
// so one row already runs out of issue slots at a fifth of the memory bandwidth, and every extra row of a
// verify window costs another full pass of multiply-adds. mma.m16n8k16 multiplies 16 weight rows by 8
// activation rows in one instruction, so 1 to 8 rows cost the same. (One row is still bound by the
// instructions that unpack codes and convert x, not by bytes: docs/cuda.md, "Not done yet".)
//
// Exactness and row invariance:
// - A (16 weight rows x 16 k) holds the codes q themselves (0..255 are exact in bf16); scale and bias are
//   applied per group outside the tensor core: acc += scale * D_g + bias * sx_g, where D_g = sum_k x*q over
//   the group (the mma chain) and sx_g = sum_k x over the group (float32 adds in a fixed order).
// - B (16 k x 8 rows of x) is x split into two bf16 terms, hi = bf16(x) and lo = bf16(x - hi) (both exact
//   splits), multiplied in turn: x is carried to 16 significant bits, the products are exact, and the
//   tensor core accumulates in float32. Each output element depends only on its own weight row and its own
//   activation row: padding rows or other rows in the call never change its bits.
// - The reduction order is a function of the weight's shape alone: the K axis is cut into W contiguous
//   ranges of whole groups (W = warps per block, from the shape), each warp accumulates its groups in k order,
//   and the warps' sums are added in warp order through shared memory. The number of activation rows only
//   decides how many 8-row column tiles (1 or 2) each mma covers, and the number of weight tiles per block
//   only decides how blocks share x: neither touches the arithmetic of a row.
// - The fused RMSNorm computes each activation row's inverse RMS once per block, its sum of squares in the
//   order of norm_part_sum (common.cuh), shared with the standalone norm kernel: every block, every call and
//   the unfused path form the same normed x.
#include "backends/cuda/kernels/decode_linear_tiled.cuh"
#include "backends/cuda/kernels/decode_linear_tiled_parts.cuh"

namespace tf::cuda {
namespace {
using namespace tiled;

__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Nibbles i and i + 4 of w as a bf16 pair (low half: nibble i): or-ing a nibble into 128.0's mantissa gives
// 128 + q exactly, and subtracting 128 leaves q.
// (The and-or is one lop3 with the mask as its immediate and 128.0's bits in a register.)
__device__ __forceinline__ unsigned nibble_pair(unsigned w, int i, unsigned magic) {
  unsigned t;
  asm("lop3.b32 %0, %1, 0x000F000F, %2, 0xEA;" : "=r"(t) : "r"(w >> (4 * i)), "r"(magic));
  __nv_bfloat162 v = *reinterpret_cast<const __nv_bfloat162*>(&t);
  v = __hsub2(v, *reinterpret_cast<const __nv_bfloat162*>(&magic));
  return *reinterpret_cast<const unsigned*>(&v);
}

// Bytes i and i + 2 of w as a bf16 pair (low half: byte i). A code below 256 has at most 8 significant
// bits, so the upper half of its float32 is its bf16, exactly.
__device__ __forceinline__ unsigned byte_pair(unsigned w, int i) {
  const unsigned t = (w >> (8 * i)) & 0x00FF00FFu;
  const float f0 = __fsub_rn(__uint_as_float((t & 0xFFFFu) | 0x4B000000u), 8388608.0f);
  const float f1 = __fsub_rn(__uint_as_float((t >> 16) | 0x4B000000u), 8388608.0f);
  return __byte_perm(__float_as_uint(f0), __float_as_uint(f1), 0x7632);
}

// x0, x1 as two bf16 pairs: hi = bf16(x), lo = bf16(x - hi) (the subtraction is exact).
__device__ __forceinline__ void split_pair(float x0, float x1, unsigned& hi, unsigned& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  hi = *reinterpret_cast<const unsigned*>(&h);
  const float r0 = __fsub_rn(x0, __uint_as_float(hi << 16));
  const float r1 = __fsub_rn(x1, __uint_as_float(hi & 0xFFFF0000u));
  const __nv_bfloat162 l = __floats2bfloat162_rn(r0, r1);
  lo = *reinterpret_cast<const unsigned*>(&l);
}

// Block shape: W warps split K (W from the weight's shape only); T weight tiles per block (any choice: it
// only decides how many tiles share each x load); NT 8-row column tiles of activation rows (1: up to 8 rows).
// At most 128 registers a thread, so a 512-thread block (W = 16) or two 256-thread blocks fit an SM.
template <int BITS, ElemType SE, int NT, int T>
__global__ void __launch_bounds__(kMaxWarps * 32) decode_linear_tiled_kernel(TiledArgs ta) {
  const DecodeLinearArgs& a = ta.a;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r = lane >> 2, j = lane & 3;
  const bool swiglu = a.swiglu_out != nullptr;
  const int W = ta.warps;
  constexpr int kUnitK = BITS == 4 ? 32 : 16;
  constexpr int kPairK = 2 * kUnitK;
  constexpr int kSlots = T * NT * 4;

  __shared__ OutRef outs[T];
  TileRefs<T> tr;
  setup_tiles<T, SE>(ta, lane, tr, outs, blockIdx.x, static_cast<int>(threadIdx.x));
  constexpr int kSB = SE == ElemType::F32 ? 4 : 2;

  // This warp's K range, in pairs.
  const std::int64_t p_begin = range_first_pair(ta, W, warp), p_end = range_first_pair(ta, W, warp + 1);
  // A unit u ends a group when (u + 1) is a multiple of units_per_group (a power of two).
  const std::int64_t group_mask = ta.units_per_group - 1;
  const int group_shift = ta.group_shift;

  // Each tile's codes and group parameters are loaded one pair ahead (right after the tile's last use);
  // pairs further ahead are pulled into L2 (no registers), so these loads wait on L2 rather than on DRAM.
  uint4 wq[T];
  ScaleBias<SE> sb[T][2][2];  // [tile][group ending at unit 0 / 1 of the pair][row r / r + 8]
  auto fetch_tile = [&](int t, std::int64_t p) {
    if (p >= p_end) return;
    wq[t] = ldg_stream(tr.codes[t] + p * 32);
#pragma unroll
    for (int sub = 0; sub < 2; ++sub) {
      const std::int64_t u = 2 * p + sub;
      if (((u + 1) & group_mask) != 0) continue;
      tr.load_scales(t, (u >> group_shift) * kSB, sb[t][sub][0], sb[t][sub][1]);
    }
  };
  constexpr int kAhead = 6;
  auto prefetch_w = [&](std::int64_t p) {
    if (p < p_end) tr.prefetch_codes(p, lane);
  };
  // x (and the norm's inputs) for pair p, pulled into L1 ahead of use. Only after pdl_wait (x is the
  // previous kernel's output). A line is 128 bytes: one unit of a row for 4 bits, one pair for 8 bits.
  const bool norm = a.norm_w != nullptr;
  auto prefetch_x = [&](std::int64_t p) {
    if (p >= p_end || j != 0) return;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int row = nt * 8 + r;
      if (row >= a.rows) continue;
      const std::int64_t off = static_cast<std::int64_t>(row) * a.x_stride + p * kPairK;
#pragma unroll
      for (int q = 0; q < kPairK; q += 32) {
        asm volatile("prefetch.global.L1 [%0];" ::"l"(a.x + off + q));
        if (norm && a.norm_b != nullptr) asm volatile("prefetch.global.L1 [%0];" ::"l"(a.norm_b + off + q));
      }
    }
    if (norm && r == 0)
#pragma unroll
      for (int q = 0; q < kPairK; q += 32) asm volatile("prefetch.global.L1 [%0];" ::"l"(a.norm_w + p * kPairK + q));
  };
  pdl_launch();
#pragma unroll
  for (int t = 0; t < T; ++t) fetch_tile(t, p_begin);
#pragma unroll
  for (int s = 1; s < kAhead; ++s) prefetch_w(p_begin + s);
  pdl_wait();
#pragma unroll
  for (int s = 0; s < kAhead; ++s) prefetch_x(p_begin + s);

  // Fused RMSNorm: each row's 1 / rms once per block, its sum of squares in the order of norm_part_sum
  // (common.cuh): warp w sums parts w, w + W, ..., and the parts are added in part order, so the bits are
  // those of the standalone norm kernel. Block 0 also writes the residual sum x + norm_b.
  __shared__ float inv_rms[kMaxDecodeRows];
  __shared__ float norm_part[kNormParts][kMaxDecodeRows];
  if (norm) {
    const std::int64_t n4 = ta.cols / 4;
    for (int row = 0; row < a.rows; ++row) {
      const std::int64_t off = static_cast<std::int64_t>(row) * a.x_stride;
      auto load = [&](std::int64_t i) {
        float4 v = *reinterpret_cast<const float4*>(a.x + off + 4 * i);
        if (a.norm_b != nullptr) {
          const float4 b = *reinterpret_cast<const float4*>(a.norm_b + off + 4 * i);
          v = make_float4(__fadd_rn(v.x, b.x), __fadd_rn(v.y, b.y), __fadd_rn(v.z, b.z), __fadd_rn(v.w, b.w));
          if (blockIdx.x == 0 && a.norm_sum != nullptr) *reinterpret_cast<float4*>(a.norm_sum + off + 4 * i) = v;
        }
        return v;
      };
      for (int part = warp; part < kNormParts; part += W) {
        const float ss = norm_part_sum(load, part, n4, lane);
        if (lane == 0) norm_part[part][row] = ss;
      }
    }
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < a.rows)
      inv_rms[threadIdx.x] = norm_inv_rms(&norm_part[0][threadIdx.x], kMaxDecodeRows, ta.cols, a.norm_eps);
    __syncthreads();
  }

  // The activation row this lane feeds into B (row r of each 8-row column tile), if any: offsets rather
  // than pointers, so every load stays a global (LDG) load.
  std::int64_t xoff[NT];
  bool xvalid[NT];
  float inv[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int row = nt * 8 + r;
    xvalid[nt] = row < a.rows;
    xoff[nt] = xvalid[nt] ? static_cast<std::int64_t>(row) * a.x_stride : 0;
    inv[nt] = norm && xvalid[nt] ? inv_rms[row] : 0.0f;
  }
  const float* __restrict__ xg = a.x;
  const float* __restrict__ nbg = a.norm_b;
  const float* __restrict__ nwg = a.norm_w;
  // Loads lane's values k0 .. k0 + N - 1 of its activation row (normed when fused); zeros past the rows.
  auto load_x = [&](int nt, std::int64_t k0, float* v, int n) {
    if (!xvalid[nt]) {
      for (int i = 0; i < n; ++i) v[i] = 0.0f;
      return;
    }
    for (int i = 0; i < n; i += 4) {
      float4 q = __ldg(reinterpret_cast<const float4*>(xg + xoff[nt] + k0 + i));
      if (norm) {
        if (nbg != nullptr) {
          const float4 b = __ldg(reinterpret_cast<const float4*>(nbg + xoff[nt] + k0 + i));
          q = make_float4(__fadd_rn(q.x, b.x), __fadd_rn(q.y, b.y), __fadd_rn(q.z, b.z), __fadd_rn(q.w, b.w));
        }
        const float4 w = __ldg(reinterpret_cast<const float4*>(nwg + k0 + i));
        q = make_float4(__fmul_rn(__fmul_rn(q.x, inv[nt]), w.x), __fmul_rn(__fmul_rn(q.y, inv[nt]), w.y),
                        __fmul_rn(__fmul_rn(q.z, inv[nt]), w.z), __fmul_rn(__fmul_rn(q.w, inv[nt]), w.w));
      }
      v[i] = q.x;
      v[i + 1] = q.y;
      v[i + 2] = q.z;
      v[i + 3] = q.w;
    }
  };

  const unsigned magic = 0x43004300u;  // 128.0 twice, in bf16
  float acc[T][NT][4], d[T][NT][4];
#pragma unroll
  for (int t = 0; t < T; ++t)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[t][nt][i] = d[t][nt][i] = 0.0f;
  float psx[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) psx[nt] = 0.0f;

  constexpr int kSteps = BITS == 4 ? 2 : 1;  // mma k-steps per unit
  for (std::int64_t p = p_begin; p < p_end; ++p) {
    // B for both units of the pair (x as hi and lo bf16 pairs), and each unit's sum of x, once for all T
    // tiles: lane's 8 (4-bit) or 4 (8-bit) values of x per unit at k = u * unit + j * (unit / 4).
    unsigned bhi[2][NT][kSteps][2], blo[2][NT][kSteps][2];
    float usx[2][NT];
#pragma unroll
    for (int sub = 0; sub < 2; ++sub) {
      const std::int64_t u = 2 * p + sub;
      constexpr int XN = kUnitK / 4;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        float x[XN];
        load_x(nt, u * kUnitK + j * XN, x, XN);
        float sx = x[0];
#pragma unroll
        for (int i = 1; i < XN; ++i) sx = __fadd_rn(sx, x[i]);
        usx[sub][nt] = sx;
        if constexpr (BITS == 4) {
#pragma unroll
          for (int st = 0; st < 2; ++st) {
            split_pair(x[2 * st], x[2 * st + 4], bhi[sub][nt][st][0], blo[sub][nt][st][0]);
            split_pair(x[2 * st + 1], x[2 * st + 5], bhi[sub][nt][st][1], blo[sub][nt][st][1]);
          }
        } else {
          split_pair(x[0], x[2], bhi[sub][nt][0][0], blo[sub][nt][0][0]);
          split_pair(x[1], x[3], bhi[sub][nt][0][1], blo[sub][nt][0][1]);
        }
      }
    }
    // Group ends in this pair, and sum(x) over each ending group for activation rows 2j and 2j + 1.
    bool ends[2];
    float sx0[2][NT], sx1[2][NT];
#pragma unroll
    for (int sub = 0; sub < 2; ++sub) {
      ends[sub] = ((2 * p + sub + 1) & group_mask) == 0;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        psx[nt] = __fadd_rn(psx[nt], usx[sub][nt]);
        sx0[sub][nt] = sx1[sub][nt] = 0.0f;
        if (ends[sub]) {  // uniform across the warp
          float q = __fadd_rn(psx[nt], __shfl_xor_sync(0xffffffffu, psx[nt], 1));
          q = __fadd_rn(q, __shfl_xor_sync(0xffffffffu, q, 2));
          sx0[sub][nt] = __shfl_sync(0xffffffffu, q, 8 * j);
          sx1[sub][nt] = __shfl_sync(0xffffffffu, q, 8 * j + 4);
          psx[nt] = 0.0f;
        }
      }
    }
    // Tiles: multiply, then load the tile's codes and group parameters of the next pair.
    prefetch_w(p + kAhead);
    prefetch_x(p + kAhead);
#pragma unroll
    for (int t = 0; t < T; ++t) {
#pragma unroll
      for (int sub = 0; sub < 2; ++sub) {
        const unsigned w0 = sub == 0 ? wq[t].x : wq[t].z;  // row r
        const unsigned w1 = sub == 0 ? wq[t].y : wq[t].w;  // row r + 8
#pragma unroll
        for (int st = 0; st < kSteps; ++st) {
          unsigned af[4];
          if constexpr (BITS == 4) {
            af[0] = nibble_pair(w0, 2 * st, magic);
            af[1] = nibble_pair(w1, 2 * st, magic);
            af[2] = nibble_pair(w0, 2 * st + 1, magic);
            af[3] = nibble_pair(w1, 2 * st + 1, magic);
          } else {
            af[0] = byte_pair(w0, 0);
            af[1] = byte_pair(w1, 0);
            af[2] = byte_pair(w0, 1);
            af[3] = byte_pair(w1, 1);
          }
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            mma_bf16(d[t][nt], af, bhi[sub][nt][st][0], bhi[sub][nt][st][1]);
            mma_bf16(d[t][nt], af, blo[sub][nt][st][0], blo[sub][nt][st][1]);
          }
        }
        if (ends[sub]) {
          // Group end: acc += scale * D + bias * sum(x), per (weight row, activation row).
          const ScaleBias<SE>& s0 = sb[t][sub][0];
          const ScaleBias<SE>& s1 = sb[t][sub][1];
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            float* dd = d[t][nt];
            float* ac = acc[t][nt];
            ac[0] = __fadd_rn(ac[0], __fmaf_rn(s0.bias(), sx0[sub][nt], __fmul_rn(s0.scale(), dd[0])));
            ac[1] = __fadd_rn(ac[1], __fmaf_rn(s0.bias(), sx1[sub][nt], __fmul_rn(s0.scale(), dd[1])));
            ac[2] = __fadd_rn(ac[2], __fmaf_rn(s1.bias(), sx0[sub][nt], __fmul_rn(s1.scale(), dd[2])));
            ac[3] = __fadd_rn(ac[3], __fmaf_rn(s1.bias(), sx1[sub][nt], __fmul_rn(s1.scale(), dd[3])));
            dd[0] = dd[1] = dd[2] = dd[3] = 0.0f;
          }
        }
      }
      fetch_tile(t, p + 1);
    }
  }

  // The warps' partial sums, added in warp order.
  __shared__ float red[kMaxWarps][kSlots][32];
#pragma unroll
  for (int t = 0; t < T; ++t)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) red[warp][(t * NT + nt) * 4 + i][lane] = acc[t][nt][i];
  __syncthreads();
  auto total = [&](int slot, int ln) {
    float v = red[0][slot][ln];
    for (int w = 1; w < W; ++w) v = __fadd_rn(v, red[w][slot][ln]);
    return v;
  };
  // Element (slot, ln): tile t, column tile nt, register i of lane ln: weight row (ln / 4) + 8 * (i / 2) of
  // the tile, activation row nt * 8 + 2 * (ln % 4) + i % 2.
  const int n_out = (swiglu ? T / 2 : T) * NT * 4 * 32;
  for (int e = threadIdx.x; e < n_out; e += blockDim.x) {
    const int slot = e >> 5, ln = e & 31;
    const int t = slot / (NT * 4), nt = (slot / 4) % NT, i = slot % 4;
    const int row = nt * 8 + 2 * (ln & 3) + (i & 1);
    if (row >= a.rows) continue;
    const OutRef& tr = outs[t];
    const std::int64_t n = tr.first_row + (ln >> 2) + 8 * (i >> 1);
    if (!tr.valid || n >= tr.rows) continue;
    store_output<T>(a, outs, t, n, row, total(slot, ln), swiglu ? total(slot + (T / 2) * NT * 4, ln) : 0.0f);
  }
}

template <int BITS, ElemType SE, int NT, int T>
void launch_tiled(const TiledArgs& ta, cudaStream_t s) {
  const auto blocks = static_cast<unsigned int>(ceil_div(ta.tiles, ta.a.swiglu_out != nullptr ? T / 2 : T));
  launch_pdl(decode_linear_tiled_kernel<BITS, SE, NT, T>, dim3(blocks), dim3(32 * ta.warps), 0, s, ta);
  check_launch("decode_linear_tiled");
}

// A/B knobs for measurements (docs/benchmarks.md), read once: TF_CUDA_TILED_WARPS caps the K split (a
// process-wide constant, so every call still adds a row's sum in one order); TF_CUDA_TILED_T=2 or 4 forces
// the tiles per block.
int tiled_forced_t() {
  static const int t = env_int("TF_CUDA_TILED_T", 0);
  return t;
}

template <int BITS, ElemType SE>
void launch_shape(const TiledArgs& ta, cudaStream_t s) {
  if (tiled_forced_t() == 2) return ta.a.rows > 8 ? launch_tiled<BITS, SE, 2, 2>(ta, s) : launch_tiled<BITS, SE, 1, 2>(ta, s);
  if (tiled_forced_t() == 4 && ta.a.rows <= 8) return launch_tiled<BITS, SE, 1, 4>(ta, s);
  // Four weight tiles per block where the matrix has enough of them (x's loads and conversions shared by
  // more tiles), else two (more blocks). Neither choice touches a row's arithmetic.
  if (ta.a.rows > 8) return launch_tiled<BITS, SE, 2, 2>(ta, s);
  if (ta.tiles >= 256) return launch_tiled<BITS, SE, 1, 4>(ta, s);
  return launch_tiled<BITS, SE, 1, 2>(ta, s);
}

template <int BITS>
void launch_scale_type(const TiledArgs& ta, cudaStream_t s) {
  switch (ta.a.seg[0].w.dtype) {
    case ElemType::F32: return launch_shape<BITS, ElemType::F32>(ta, s);
    case ElemType::F16: return launch_shape<BITS, ElemType::F16>(ta, s);
    case ElemType::BF16: return launch_shape<BITS, ElemType::BF16>(ta, s);
  }
}

}  // namespace

namespace tiled {

TiledArgs tiled_args(const DecodeLinearArgs& a) {
  const WeightView& w = a.seg[0].w;
  TiledArgs ta;
  ta.a = a;
  ta.cols = w.cols;
  const std::int64_t words_per_row = w.cols * w.bits / 32;
  ta.pairs = words_per_row / 8;
  ta.units_per_group = w.group / (w.bits == 4 ? 32 : 16);
  while ((1 << ta.group_shift) < ta.units_per_group) ++ta.group_shift;
  ta.pairs_per_atom = ta.units_per_group > 2 ? ta.units_per_group / 2 : 1;
  ta.atoms = ta.pairs / ta.pairs_per_atom;
  for (int i = 0; i < a.segments; ++i) ta.seg_tiles[i] = ceil_div(a.seg[i].w.rows, kTileRows);
  ta.tiles = a.swiglu_out != nullptr ? ta.seg_tiles[0] : ta.seg_tiles[0] + ta.seg_tiles[1] + ta.seg_tiles[2];
  // The K split: 16 warps per block (fewer only when K has fewer atoms). A function of the weight's K
  // alone (never of its rows, its neighbours in a fused launch, or the activation rows), since it fixes the
  // order in which a row's sum is added up.
  const int max_warps = tiled_max_warps();
  ta.warps = static_cast<int>(ta.atoms < max_warps ? ta.atoms : max_warps);
  ta.groups_per_row = w.cols / w.group;
  return ta;
}

}  // namespace tiled

void decode_linear_tiled(const DecodeLinearArgs& a, cudaStream_t s) {
  const WeightView& w = a.seg[0].w;
  const TiledArgs ta = tiled::tiled_args(a);
  if (imma_eligible(w)) {
    if (a.norm_w != nullptr) throw std::invalid_argument("decode_linear: no fused norm for this weight (decode_linear_takes_norm)");
    return decode_linear_imma(ta, s);
  }
  if (w.bits == 4) launch_scale_type<4>(ta, s);
  else launch_scale_type<8>(ta, s);
}

}  // namespace tf::cuda
