#pragma once
// What the two tiled decode matmuls share (decode_linear_tiled.cu: bf16 tensor cores; decode_linear_imma.cu:
// integer tensor cores): the launch arguments, a block's tiles, the scale/bias loads and the output refs.
#include <cstdlib>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/tiled_layout.h"

namespace tf::cuda::tiled {

constexpr int kMaxWarps = 16;

struct TiledArgs {
  DecodeLinearArgs a;
  std::int64_t cols = 0;
  std::int64_t pairs = 0;     // 16-byte lane loads per tile along K (two units each)
  int units_per_group = 1;    // 4-bit: group / 32; 8-bit: group / 16 (1, 2, 4 or 8)
  int group_shift = 0;        // log2(units_per_group): group indices by shifts, never 64-bit division
  int pairs_per_atom = 1;     // an atom: whole groups and whole pairs (the unit of the K split)
  std::int64_t atoms = 0;
  int warps = 1;              // W: the K split, from the shape only
  std::int64_t groups_per_row = 0;
  std::int64_t seg_tiles[3] = {0, 0, 0};
  std::int64_t tiles = 0;     // tiles the grid covers (the gate's tiles with the swiglu epilogue)
  const void* prepared = nullptr;  // the integer kernel's x terms, prepared once for the launch (or null)
};

// The launch arguments of a tiled weight call (decode_linear_tiled.cu): pairs, groups, atoms and the K split
// (`warps`, a function of K alone), which the decode kernels and the integer prefill GEMM share.
TiledArgs tiled_args(const DecodeLinearArgs& a);

// The first pair (64 k) of K range r when K is cut into W ranges of whole atoms: range r is
// [range_first_pair(ta, W, r), range_first_pair(ta, W, r + 1)). Every kernel of tiled weights cuts K this way
// and adds each range in k order, then the ranges in range order: this split fixes a row's bits.
__device__ __forceinline__ std::int64_t range_first_pair(const TiledArgs& ta, int W, std::int64_t r) {
  return (r * ta.atoms / W) * ta.pairs_per_atom;
}

// A scale and a bias, kept as loaded (two 16-bit values in one register, or two floats).
template <ElemType SE>
struct ScaleBias {
  unsigned v;
  __device__ __forceinline__ void load(const unsigned char* s, const unsigned char* b) {
    v = static_cast<unsigned>(__ldg(reinterpret_cast<const unsigned short*>(s))) |
        (static_cast<unsigned>(__ldg(reinterpret_cast<const unsigned short*>(b))) << 16);
  }
  __device__ __forceinline__ float scale() const {
    if constexpr (SE == ElemType::BF16) return __uint_as_float(v << 16);
    else return __half2float(__ushort_as_half(static_cast<unsigned short>(v & 0xFFFFu)));
  }
  __device__ __forceinline__ float bias() const {
    if constexpr (SE == ElemType::BF16) return __uint_as_float(v & 0xFFFF0000u);
    else return __half2float(__ushort_as_half(static_cast<unsigned short>(v >> 16)));
  }
};
template <>
struct ScaleBias<ElemType::F32> {
  float s, b;
  __device__ __forceinline__ void load(const unsigned char* sp, const unsigned char* bp) {
    s = __ldg(reinterpret_cast<const float*>(sp));
    b = __ldg(reinterpret_cast<const float*>(bp));
  }
  __device__ __forceinline__ float scale() const { return s; }
  __device__ __forceinline__ float bias() const { return b; }
};

struct OutRef {
  float* out;
  std::int64_t out_stride;
  std::int64_t first_row;
  std::int64_t rows;
  bool valid;
};

// Per tile of a block: the lane's codes, the scale and bias of its row r at group 0, and the bytes from row
// r's scales to row r + 8's.
template <int T>
struct TileRefs {
  const uint4* codes[T];
  const unsigned char* sptr[T];
  const unsigned char* bptr[T];
  int d8[T];
  const unsigned char* sbt[T];  // lane's rows in the tiled scale/bias copy at group 0 (null without one)

  // Tile t's scale and bias of rows r and r + 8 at byte offset `off` of row r's.
  template <class SB>
  __device__ __forceinline__ void load_scales(int t, std::int64_t off, SB& row_r, SB& row_r8) const {
    row_r.load(sptr[t] + off, bptr[t] + off);
    row_r8.load(sptr[t] + off + d8[t], bptr[t] + off + d8[t]);
  }
  // Pulls pair p's codes of every tile into L2 (no registers); one lane in eight of the warp issues it.
  __device__ __forceinline__ void prefetch_codes(std::int64_t p, int lane) const {
    if ((lane & 7) != 0) return;
#pragma unroll
    for (int t = 0; t < T; ++t) asm volatile("prefetch.global.L2 [%0];" ::"l"(codes[t] + p * 32));
  }
};

// The tiles of work unit `unit` (a block, or a warp of the streaming kernel): T consecutive tiles of the
// segments laid end to end, or T/2 gate tiles and the up tiles of the same rows (swiglu). Padding rows (past
// the weight) read the last real row's scales; where results go lives in shared memory (`outs`, filled by
// the threads whose `writer` index is 0 .. T-1).
template <int T, ElemType SE>
__device__ __forceinline__ void setup_tiles(const TiledArgs& ta, int lane, TileRefs<T>& tr, OutRef* outs,
                                            std::int64_t unit, int writer) {
  const DecodeLinearArgs& a = ta.a;
  const int r = lane >> 2;
  const bool swiglu = a.swiglu_out != nullptr;
  constexpr int kSB = SE == ElemType::F32 ? 4 : 2;
  constexpr int kHalf = T > 1 ? T / 2 : 1;  // gate tiles of a SwiGLU unit (T = 1: a single tile, never SwiGLU)
#pragma unroll
  for (int t = 0; t < T; ++t) {
    int seg;
    std::int64_t lt;
    if (swiglu) {
      seg = t < kHalf ? 0 : 1;
      lt = unit * kHalf + (t % kHalf);
    } else {
      lt = unit * T + t;
      seg = 0;
      if (a.segments > 1 && lt >= ta.seg_tiles[0]) {
        lt -= ta.seg_tiles[0];
        seg = 1;
        if (a.segments > 2 && lt >= ta.seg_tiles[1]) {
          lt -= ta.seg_tiles[1];
          seg = 2;
        }
      }
    }
    // Field by field with selects: a run-time index into the parameter struct would copy it to local memory.
#define TF_PICK(field) (seg == 0 ? a.seg[0].field : seg == 1 ? a.seg[1].field : a.seg[2].field)
    const std::int64_t seg_tiles = seg == 0 ? ta.seg_tiles[0] : seg == 1 ? ta.seg_tiles[1] : ta.seg_tiles[2];
    const bool valid = lt < seg_tiles;
    const std::int64_t safe = valid ? lt : 0;
    const std::int64_t rows = TF_PICK(w.rows);
    tr.codes[t] = static_cast<const uint4*>(TF_PICK(w.data)) + safe * ta.pairs * 32 + lane;
    // Scale rows r and r + 8 of the tile; padding rows (past the weight) read the last real row.
    const std::int64_t n0 = safe * kTileRows + r, n1 = n0 + 8;
    const std::int64_t c0 = n0 < rows ? n0 : rows - 1, c1 = n1 < rows ? n1 : rows - 1;
    tr.sptr[t] = static_cast<const unsigned char*>(TF_PICK(w.scales)) + c0 * ta.groups_per_row * kSB;
    tr.bptr[t] = static_cast<const unsigned char*>(TF_PICK(w.biases)) + c0 * ta.groups_per_row * kSB;
    tr.d8[t] = static_cast<int>((c1 - c0) * ta.groups_per_row * kSB);
    const auto* sbt = static_cast<const unsigned char*>(TF_PICK(w.sb_tiled));
    tr.sbt[t] = sbt != nullptr ? sbt + tiled_scale_index(safe, 0, r, 0, ta.groups_per_row) * kSB : nullptr;
    if (writer == t) outs[t] = {TF_PICK(out), TF_PICK(out_stride), safe * kTileRows, rows, valid};
#undef TF_PICK
  }
}

// Stores one result: weight row n of tile t's segment for activation row `row`. With the SwiGLU epilogue,
// g is the gate, `up` the up projection's same element (tile t + T/2), and silu(g) * up goes to swiglu_out;
// returns that value (0 without the epilogue), for a kernel that also prepares it as the next x terms.
template <int T>
__device__ __forceinline__ float store_output(const DecodeLinearArgs& a, const OutRef* outs, int t, std::int64_t n,
                                              int row, float g, float up) {
  const OutRef& o = outs[t];
  if (o.out != nullptr) o.out[row * o.out_stride + n] = g;
  if (a.swiglu_out == nullptr) return 0.0f;
  const OutRef& ou = outs[t + T / 2];
  if (ou.out != nullptr) ou.out[row * ou.out_stride + n] = up;
  const float silu = __fdiv_rn(g, __fadd_rn(1.0f, expf(-g)));
  const float v = __fmul_rn(silu, up);
  a.swiglu_out[row * a.swiglu_stride + n] = v;
  return v;
}

inline int tiled_max_warps() {
  static const int w = [] {
    const int v = env_int("TF_CUDA_TILED_WARPS", kMaxWarps);
    return v < 1 ? 1 : v > kMaxWarps ? kMaxWarps : v;
  }();
  return w;
}

// The integer tensor-core kernel (decode_linear_imma.cu): which weights it takes (a function of the weight's
// format and K alone; TF_CUDA_IMMA=0 turns it off for A/B runs) and its launch.
bool imma_eligible(const WeightView& w);
std::size_t imma_scratch_bytes(std::int64_t cols);
void decode_linear_imma(const TiledArgs& ta, cudaStream_t s);

}  // namespace tf::cuda::tiled
