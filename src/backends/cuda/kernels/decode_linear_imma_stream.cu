// The integer decode matmul for calls of 1-8 activation rows whose x terms were prepared for the launch
// (the decode and verify steps of the 8B- and 27B-class shapes): warps that stream.
//
// Why: the blocked kernel (decode_linear_imma.cu) gives a block 16 warps, one per K range, over four
// tiles. At 128 registers a thread that is one block an SM, and every block waits for its first loads,
// then for its slowest warp and a barrier: on the 8B stack it reached 26% of the copy bandwidth. Here a
// warp takes one unit (two tiles: consecutive ones, or a gate tile and its up tile) and streams G of its
// K ranges (G a function of the shape) with D pairs of weight loads in flight (codes, and scales from the
// weight's tiled scale/bias copy: one 8-byte load a tile and group) and DX pairs of x terms; blocks are
// small, and there is no barrier unless the unit's ranges are spread over several warps. Registers are
// what bounds the loads in flight: each one holds its bytes in registers until used, which is why the
// scales come from the tiled copy (half the registers of four 2-byte loads) and the x terms, L1/L2 hits,
// are fetched only DX pairs ahead.
//
// The bits are the blocked kernel's (decode_linear_imma_terms.cuh): every group's D is the same exact
// integer, each range's groups are added in k order from 0, and the ranges' sums in range order: a warp
// streaming all its unit's ranges folds them as it goes; otherwise the warps leave each range's sum in
// shared memory and the unit's first warp folds them in order.
//
// One or two activation rows use the mma's 8 columns for (row, term): columns 4r + term hold term q_term of
// row r (column 4r + 3 is zero), so a unit of 32 k is one mma, not three, and lane 4m + 2r of the quad
// gets D = C[., 4r] 2^14 + C[., 4r + 1] 2^7 + C[., 4r + 2] with one shuffle. Three to eight rows keep the
// blocked kernel's arrangement: a column per row, one mma per term.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "backends/cuda/kernels/decode_linear_imma_terms.cuh"

namespace tf::cuda::tiled {
namespace {

constexpr int kTW = 2;             // tiles per unit

// f(std::integral_constant<int, 0>) .. f(std::integral_constant<int, N - 1>), unrolled at compile time.
template <int N, int I = 0, class F>
__device__ __forceinline__ void static_for(F&& f) {
  if constexpr (I < N) {
    f(std::integral_constant<int, I>{});
    static_for<N, I + 1>(f);
  }
}

constexpr int kMaxBlockWarps = 16;

// One pair's loads: the codes and scales of both tiles (weights: these may be issued before pdl_wait) and
// the pair's x terms as this lane's B fragments, with the steps and quantized sums of its columns.
template <ElemType SE, bool PACKED, bool G64>
struct Stage {
  static constexpr int kGroups = G64 ? 1 : 2;
  static constexpr int kTerms = PACKED ? 1 : 3;  // B tiles a unit of 32 k
  static constexpr int kCols = PACKED ? 1 : 2;   // activation rows a lane's epilogue serves
  uint4 w[kTW];
  ScaleBias<SE> sb[kTW][kGroups][2];  // [tile][group][row r / r + 8]
  unsigned b[kTerms][2][2];           // [term][unit][register]
  float2 ex[kGroups][kCols];
};

// D: pairs of weight loads in flight a warp (codes and scales); DX: pairs of x terms in flight (L1/L2 hits,
// shared by every warp, so fewer registers go to them). The loop is unrolled over U = lcm(D, DX) pairs, so
// that both rings' slots are compile-time indices. PREP: the kernel has the SwiGLU prepare's code (the
// wide kernels; the deep ones, which never get it, keep their registers).
template <ElemType SE, bool PACKED, bool G64, int D, int DX, bool PREP>
__device__ __forceinline__ void imma_stream_body(const TiledArgs& ta, std::int64_t units, int G) {
  using St = Stage<SE, PACKED, G64>;
  constexpr int U = D % DX == 0 ? D : DX % D == 0 ? DX : D * DX;
  constexpr int kNV = PACKED ? 2 : 4;  // values a lane keeps per tile
  constexpr int kSB = SE == ElemType::F32 ? 4 : 2;
  const DecodeLinearArgs& a = ta.a;
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31), c = lane & 3;
  const int wpb = static_cast<int>(blockDim.x >> 5);
  const std::int64_t gw = static_cast<std::int64_t>(blockIdx.x) * wpb + warp;
  const std::int64_t unit = gw / G;
  const int j = static_cast<int>(gw % G), ul = warp / G;  // this warp's share of the unit; the unit in the block
  const bool active = unit < units;

  extern __shared__ __align__(16) float part[];  // G > 1: [unit in block][range][tile][value][lane]
  __shared__ OutRef outs[kMaxBlockWarps][kTW];
  TileRefs<kTW> tr;
  setup_tiles<kTW, SE>(ta, lane, tr, outs[warp], active ? unit : 0, lane);

  // This warp's ranges [r_lo, r_lo + R) and their pairs [P0, P1).
  auto range_begin = [&](int r) { return range_first_pair(ta, kMaxWarps, r); };
  const int R = kMaxWarps / G, r_lo = j * R;
  const std::int64_t P0 = range_begin(r_lo), P1 = active ? range_begin(r_lo + R) : P0;

  // Which B column this lane loads, and which activation rows its epilogue serves.
  const int bcol = lane >> 2;
  const int prow = bcol >> 2, pterm = bcol & 3;  // packed: column 4 * row + term
  const bool pon = PACKED && pterm < 3 && prow < a.rows;
  const int erow = c >> 1;                       // packed: lanes 4m and 4m + 2 serve rows 0 and 1
  const bool eon = PACKED && (c & 1) == 0 && erow < a.rows;

  // Running pointers at pair P0 + base (advanced U pairs a step), so that every load in the unrolled loop
  // is a pointer plus an immediate: address arithmetic was most of the loop's instructions.
  // Scales and biases from the tiled copy: a group of a tile is kTiledScaleGroupElems values, this lane's
  // four (rows r and r + 8) side by side.
  constexpr int kGroupBytes = kTiledScaleGroupElems * kSB;
  constexpr int kScaleStep = (G64 ? 1 : 2) * kGroupBytes;  // scale bytes a pair
  const uint4* cp[kTW];
  const unsigned char* sbp[kTW];
#pragma unroll
  for (int t = 0; t < kTW; ++t) {
    cp[t] = tr.codes[t] + P0 * 32;
    sbp[t] = tr.sbt[t] + P0 * kScaleStep;
  }
  // This lane's B words and its columns' (step, sum) in pair P0's WarpX.
  const WarpX* px0 = static_cast<const WarpX*>(ta.prepared) + P0;
  const unsigned char* xq;
  const float2* xe;
  if constexpr (PACKED) {
    xq = &px0->q[0][pterm < 3 ? pterm : 0][prow][4 * c];
    xe = &px0->ex[0][eon ? erow : 0];
  } else {
    xq = &px0->q[0][0][bcol][4 * c];
    xe = &px0->ex[0][0];
  }
  constexpr int kQTerm = kMaxDecodeRows * 32, kQUnit = 3 * kQTerm;  // byte strides in WarpX::q

  // Pair base + I's loads (I a compile-time offset from the running pointers).
  auto load_w = [&](St& s, auto I) {
    constexpr int i = decltype(I)::value;
#pragma unroll
    for (int t = 0; t < kTW; ++t) {
      s.w[t] = ldg_stream_at<i * 32 * 16>(cp[t]);
#pragma unroll
      for (int g = 0; g < St::kGroups; ++g) {
        const unsigned char* q = sbp[t] + i * kScaleStep + g * kGroupBytes;
        if constexpr (SE == ElemType::F32) {
          const float4 v = __ldg(reinterpret_cast<const float4*>(q));
          s.sb[t][g][0].s = v.x, s.sb[t][g][0].b = v.y, s.sb[t][g][1].s = v.z, s.sb[t][g][1].b = v.w;
        } else {
          const uint2 v = __ldg(reinterpret_cast<const uint2*>(q));  // (s, b) of row r, then of row r + 8
          s.sb[t][g][0].v = v.x;
          s.sb[t][g][1].v = v.y;
        }
      }
    }
  };
  auto load_x = [&](St& s, auto I) {
    constexpr int i = decltype(I)::value;
    const unsigned char* q = xq + i * static_cast<int>(sizeof(WarpX));
    const float2* e = reinterpret_cast<const float2*>(reinterpret_cast<const unsigned char*>(xe) + i * sizeof(WarpX));
    if constexpr (PACKED) {
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        s.b[0][u][0] = pon ? __ldg(reinterpret_cast<const unsigned*>(q + u * kQUnit)) : 0u;
        s.b[0][u][1] = pon ? __ldg(reinterpret_cast<const unsigned*>(q + u * kQUnit + 16)) : 0u;
      }
#pragma unroll
      for (int g = 0; g < St::kGroups; ++g) s.ex[g][0] = eon ? __ldg(e + g * kMaxDecodeRows) : make_float2(0.0f, 0.0f);
    } else {
#pragma unroll
      for (int term = 0; term < 3; ++term)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          s.b[term][u][0] = __ldg(reinterpret_cast<const unsigned*>(q + u * kQUnit + term * kQTerm));
          s.b[term][u][1] = __ldg(reinterpret_cast<const unsigned*>(q + u * kQUnit + term * kQTerm + 16));
        }
#pragma unroll
      for (int g = 0; g < St::kGroups; ++g)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = 2 * c + h;
          s.ex[g][h] = row < a.rows ? __ldg(e + g * kMaxDecodeRows + row) : make_float2(0.0f, 0.0f);
        }
    }
  };
  auto advance = [&]() {
#pragma unroll
    for (int t = 0; t < kTW; ++t) {
      cp[t] += U * 32;
      sbp[t] += U * kScaleStep;
    }
    xq += U * sizeof(WarpX);
    xe = reinterpret_cast<const float2*>(reinterpret_cast<const unsigned char*>(xe) + U * sizeof(WarpX));
  };

  const int n = static_cast<int>(P1 - P0);  // pairs this warp streams
  St ring[D], xring[DX];  // weights (codes, scales) and x terms (b, ex): each ring holds only its part
  pdl_launch();
  static_for<D>([&](auto I) {
    if (I.value < n) load_w(ring[I.value], I);
  });
  pdl_wait();  // the x terms are the previous kernel's output
  static_for<DX>([&](auto I) {
    if (I.value < n) load_x(xring[I.value], I);
  });

  float acc[kTW][kNV], total[kTW][kNV];
#pragma unroll
  for (int t = 0; t < kTW; ++t)
#pragma unroll
    for (int i = 0; i < kNV; ++i) acc[t][i] = total[t][i] = 0.0f;

  // One pair: per tile, codes to bytes, the mma chain of each group, then acc += s * (D * step) + b * sum.
  auto consume = [&](const St& s, const St& sx) {
#pragma unroll
    for (int t = 0; t < kTW; ++t) {
      int d[St::kTerms][4];
#pragma unroll
      for (int term = 0; term < St::kTerms; ++term)
#pragma unroll
        for (int i = 0; i < 4; ++i) d[term][i] = 0;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const unsigned w0 = u == 0 ? s.w[t].x : s.w[t].z;  // row r
        const unsigned w1 = u == 0 ? s.w[t].y : s.w[t].w;  // row r + 8
        unsigned af[4];
        codes_to_a(w0, w1, af);
#pragma unroll
        for (int term = 0; term < St::kTerms; ++term) mma_u8s8(d[term], af, sx.b[term][u][0], sx.b[term][u][1]);
        if (G64 && u == 0) continue;  // a group of 64 ends with the pair
        const int g = G64 ? 0 : u;
        const ScaleBias<SE>& s0 = s.sb[t][g][0];
        const ScaleBias<SE>& s1 = s.sb[t][g][1];
        if constexpr (PACKED) {
          // Lane 4m + 2r: columns 4r (q0) and 4r + 1 (q1) here, 4r + 2 (q2) in the next lane.
          // (Lanes whose columns are not whole rows compute a value nobody reads.)
          const int n0 = __shfl_down_sync(0xffffffffu, d[0][0], 1), n2 = __shfl_down_sync(0xffffffffu, d[0][2], 1);
          const int whole0 = group_whole(d[0][0], d[0][1], n0), whole1 = group_whole(d[0][2], d[0][3], n2);
          acc[t][0] = group_step(acc[t][0], s0, sx.ex[g][0], whole0);
          acc[t][1] = group_step(acc[t][1], s1, sx.ex[g][0], whole1);
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i)
            acc[t][i] = group_step(acc[t][i], i < 2 ? s0 : s1, sx.ex[g][i & 1], group_whole(d[0][i], d[1][i], d[2][i]));
        }
#pragma unroll
        for (int term = 0; term < St::kTerms; ++term)
#pragma unroll
          for (int i = 0; i < 4; ++i) d[term][i] = 0;
      }
    }
  };

  // A range ends: fold it into the running total (this warp has all of the unit's ranges) or leave it in
  // shared memory for the unit's first warp.
  int range = r_lo;
  int next_flush = static_cast<int>(range_begin(r_lo + 1) - P0);
  auto flush = [&]() {
#pragma unroll
    for (int t = 0; t < kTW; ++t)
#pragma unroll
      for (int i = 0; i < kNV; ++i) {
        if (G == 1) total[t][i] = range == 0 ? acc[t][i] : __fadd_rn(total[t][i], acc[t][i]);
        else part[(((ul * kMaxWarps + range) * kTW + t) * kNV + i) * 32 + lane] = acc[t][i];
        acc[t][i] = 0.0f;
      }
    ++range;
    next_flush = static_cast<int>(range_begin(range + 1) - P0);
  };

  for (int base = 0; base < n; base += U) {
    bool done = false;
    static_for<U>([&](auto I) {
      constexpr int i = decltype(I)::value;
      if (done || base + i >= n) {
        done = true;
        return;
      }
      consume(ring[i % D], xring[i % DX]);
      if (base + i + D < n) load_w(ring[i % D], std::integral_constant<int, i + D>{});
      if (base + i + DX < n) load_x(xring[i % DX], std::integral_constant<int, i + DX>{});
      if (base + i + 1 == next_flush) flush();
    });
    advance();
  }

  if (G > 1) {
    __syncthreads();
    if (j == 0 && active) {
#pragma unroll
      for (int t = 0; t < kTW; ++t)
#pragma unroll
        for (int i = 0; i < kNV; ++i) {
          const float* pp = part + ((ul * kMaxWarps) * kTW + t) * kNV * 32 + i * 32 + lane;
          float v = pp[0];
          for (int r = 1; r < kMaxWarps; ++r) v = __fadd_rn(v, pp[r * kTW * kNV * 32]);
          total[t][i] = v;
        }
    }
  }
  // SwiGLU outputs that are also the next matmul's x terms (a.swiglu_prepare): the block holds four whole
  // units, i.e. outputs 64 b .. 64 b + 63 of every row, kept in shared memory past the range sums.
  const bool prep = PREP && a.swiglu_prepare != nullptr;
  float* const xs = part + (G > 1 ? (wpb / G) * kMaxWarps * kTW * kNV * 32 : 0);  // [row][64]
  if (active && j == 0) {
    __syncwarp();  // outs
    const OutRef* o = outs[warp];
    const bool swiglu = a.swiglu_out != nullptr;
    const int r = lane >> 2;
#pragma unroll
    for (int i = 0; i < kNV; ++i) {
      // Packed: value i is weight row r + 8i for activation row c / 2 (lanes 4m, 4m + 2); otherwise weight
      // row r + 8 (i / 2) for activation row 2c + i % 2.
      const int rr = PACKED ? r + 8 * i : r + 8 * (i >> 1);
      const int row = PACKED ? erow : 2 * c + (i & 1);
      if ((PACKED && !eon) || row >= a.rows) continue;
#pragma unroll
      for (int t = 0; t < (swiglu ? 1 : kTW); ++t) {
        const std::int64_t n = o[t].first_row + rr;
        if (!o[t].valid || n >= o[t].rows) continue;
        const float v = store_output<kTW>(a, o, t, n, row, total[t][i], swiglu ? total[1][i] : 0.0f);
        if (prep) xs[row * 64 + static_cast<int>(n & 63)] = v;
      }
    }
  }
  if (prep) {
    __syncthreads();
    // The pair's terms: prepare_pair, the function every prepare path runs, on the same float values.
    if (warp == 0) prepare_pair<true>(xs, 64, a.rows, 0, lane, static_cast<WarpX*>(a.swiglu_prepare)[blockIdx.x]);
  }
}

// The same body under several register budgets. Deep: 128 registers a thread (launch bounds), D pairs in
// flight, at most 16 warps an SM. Wide (__maxnreg__, since a block has 4-16 warps): 1-2 rows with 80
// registers and D = 2 (24 warps an SM) or 64 and D = 1 (32); 3-8 rows with 96 and D = 1 (20). Each is
// the most pairs in flight that fits its budget without spilling (ptxas -v).
template <ElemType SE, bool PACKED, bool G64, int D, int DX>
__global__ void __launch_bounds__(kMaxBlockWarps * 32) imma_stream_deep(TiledArgs ta, std::int64_t units, int G) {
  imma_stream_body<SE, PACKED, G64, D, DX, false>(ta, units, G);
}
template <ElemType SE, bool PACKED, bool G64, int D, int DX, int R>
__global__ void __maxnreg__(R) imma_stream_wide(TiledArgs ta, std::int64_t units, int G) {
  imma_stream_body<SE, PACKED, G64, D, DX, true>(ta, units, G);
}

int sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return 132;
    return v;
  }();
  return n;
}

// Warps a block: at least 4, a unit's G warps together; with the SwiGLU prepare (`prep`), four whole units.
constexpr int kPrepUnits = 64 / (kTW / 2 * kTileRows);  // units of a SwiGLU launch that make a pair of 64
int block_warps(int G, bool prep) { return prep ? kPrepUnits * G : G < 4 ? 4 : G; }
// Dynamic shared memory a block: the range sums of its units when they are spread over G > 1 warps, then
// with the SwiGLU prepare its 64 outputs of every row.
std::size_t part_bytes(int G, int values_per_lane, bool prep) {
  const std::size_t unit_sums = static_cast<std::size_t>(kMaxWarps) * kTW * values_per_lane * 32 * sizeof(float);
  const std::size_t sums = G > 1 ? static_cast<std::size_t>(block_warps(G, prep) / G) * unit_sums : 0;
  return sums + (prep ? static_cast<std::size_t>(kMaxStreamRows) * 64 * sizeof(float) : 0);
}

// TF_CUDA_IMMA_G: G forced for every launch (A/B runs), if it is a power of two up to 16; else 0.
int forced_warps_per_unit() {
  static const int g = [] {
    const int v = env_int("TF_CUDA_IMMA_G", 0);
    return v == 1 || v == 2 || v == 4 || v == 8 || v == 16 ? v : 0;
  }();
  return g;
}

// Units of a launch: pairs of tiles, or a gate tile with its up tile.
std::int64_t stream_units(const TiledArgs& ta) { return ta.a.swiglu_out != nullptr ? ta.tiles : ceil_div(ta.tiles, kTW); }

// Deep kernels, warps per unit (G): the fewest powers of two (up to 16) that give the GPU 8 warps an SM
// (H200, ncu over G = 1-16 for each matrix of the 8B and 27B shapes). TF_CUDA_IMMA_WARPS_PER_SM sets the
// target (A/B runs).
int deep_warps_per_unit(std::int64_t units) {
  if (forced_warps_per_unit() > 0) return forced_warps_per_unit();
  static const int target = env_int("TF_CUDA_IMMA_WARPS_PER_SM", 8);
  int g = 1;
  while (g < kMaxWarps && units * g < static_cast<std::int64_t>(sm_count()) * target) g *= 2;
  return g;
}

// Wide kernels: a register budget (from `regs`, best first at equal warps) and G >= 2. The rule: as many
// warps as one wave of the GPU holds, and at equal warps the budget with more pairs in flight; a matrix too large
// for any one-wave launch (the lm_heads) takes the first budget and G = 2. Measured on the H200 (ncu, every
// matrix of the 8B and 27B shapes, 80 and 64 registers at G = 1-16; docs/benchmarks.md), it picks the
// fastest launch for all ten: e.g. 8B gate/up (896 units) 64 registers G 4 22.0 µs (80 G 2: 24.3; 80 G 4
// needs 1.1 waves: 27.6), 27B gate/up (1,088) 80 G 2 31.7 (64 G 2: 37.2; the deep kernel: 49.8), 27B down
// (160) 64 G 16 20.7 (80 G 8: 23.4; 80 G 16, 1.2 waves: 26.9), 8B lm_head 80 G 2 79.1 (G 1: 90.8). More
// warps hide the latency of each warp's chain of dependent instructions; a second wave mostly idles.
// A function of the shape alone, and of no consequence to the bits.
struct WidePlan {
  int regs, G;
  bool one_wave;  // some budget and G fit one wave (else the first budget and G = 2)
};
// With the SwiGLU prepare, G is at most kMaxBlockWarps / kPrepUnits (four units a block).
template <std::size_t N>
WidePlan wide_plan(std::int64_t units, int values_per_lane, const int (&regs)[N], bool prep) {
  const int max_g = prep ? kMaxBlockWarps / kPrepUnits : kMaxWarps;
  if (forced_warps_per_unit() > 0) return {regs[0], std::min(forced_warps_per_unit(), max_g), true};
  WidePlan best{regs[0], 2, false};
  std::int64_t best_warps = 0;
  for (int r : regs)
    for (int g = 2; g <= max_g; g *= 2) {  // G = 1 was never the fastest
      const int wpb = block_warps(g, prep);
      // Blocks an SM: registers, warps, blocks, and shared memory (227 KB; 1 KB reserved a block, 1.3 KB static).
      const int smem = static_cast<int>(part_bytes(g, values_per_lane, prep)) + 2560;
      const int per_sm = std::min({65536 / (r * 32 * wpb), 64 / wpb, 32, 227 * 1024 / smem});
      const std::int64_t blocks = ceil_div(units * g, wpb), warps = units * g;
      if (blocks <= static_cast<std::int64_t>(per_sm) * sm_count() && warps > best_warps) {
        best = {r, g, true};
        best_warps = warps;
      }
    }
  return best;
}

template <ElemType SE, bool PACKED, bool G64, int D, int DX, int R>
void launch(const TiledArgs& ta, std::int64_t units, int G, cudaStream_t s) {
  const bool prep = ta.a.swiglu_prepare != nullptr;
  const int wpb = block_warps(G, prep);
  constexpr int kNV = PACKED ? 2 : 4;
  const std::size_t smem = part_bytes(G, kNV, prep);
  const auto blocks = static_cast<unsigned int>(ceil_div(units * G, wpb));
  if constexpr (R == 0) {
    launch_pdl(imma_stream_deep<SE, PACKED, G64, D, DX>, dim3(blocks), dim3(32 * wpb), smem, s, ta, units, G);
  } else {
    // Four units of 3-8 rows spread over G = 4 warps each keep 64 KB of range sums: past the 48 KB that a
    // launch gets without asking (once per kernel, before any capture needs it).
    if (smem > 48 * 1024) {
      raise_smem_limit<imma_stream_wide<SE, PACKED, G64, D, DX, R>>(
          static_cast<int>(part_bytes(kMaxBlockWarps / kPrepUnits, kNV, true)), "decode_linear_imma_stream");
    }
    launch_pdl(imma_stream_wide<SE, PACKED, G64, D, DX, R>, dim3(blocks), dim3(32 * wpb), smem, s, ta, units, G);
  }
  check_launch("decode_linear_imma_stream");
}

// Returns whether the launch also wrote the SwiGLU prepare's x terms (the wide kernels do; the deep ones
// leave them to the caller).
template <ElemType SE, bool G64>
bool launch_rows(const TiledArgs& ta_in, cudaStream_t s) {
  const std::int64_t units = stream_units(ta_in);
  // g64 with 16-bit scales (the 8B and 27B shapes): the wide kernels (H200: 27B decode 124.6 -> 143.4 tok/s
  // with 80 registers alone, 162.5 with both budgets; 3-8 rows, in a run with G from a target of 9 warps an
  // SM: 27B verify over a decode step, 4 rows 1.30 -> 1.25x, 8 rows 1.43 -> 1.34x). TF_CUDA_IMMA_WIDE=0:
  // the deep kernels, for A/B runs.
  static const bool wide = env_int("TF_CUDA_IMMA_WIDE", 1) != 0;
  if constexpr (G64 && SE != ElemType::F32) {
    // The SwiGLU prepare needs whole pairs of 64 outputs a block (four units of the launch's), and a plan
    // of such blocks in one wave: otherwise the plain plan, and the caller's prepare kernel (27B gate/up at
    // 3-8 rows: 272 blocks of 8 warps for 264 places; verify 4 and 8 rows 1.51 / 1.61x a 1-row step ->
    // 1.81 / 1.91x on a second wave).
    bool prep = ta_in.a.swiglu_prepare != nullptr && ta_in.a.swiglu_out != nullptr && units % kPrepUnits == 0;
    auto plan = [&](int vpl, const auto& regs) {
      WidePlan p = wide_plan(units, vpl, regs, prep);
      if (prep && !p.one_wave) {
        prep = false;
        p = wide_plan(units, vpl, regs, false);
      }
      return p;
    };
    TiledArgs ta = ta_in;
    if (wide && ta.a.rows <= 2) {
      static constexpr int kRegs[] = {80, 64};
      const WidePlan p = plan(2, kRegs);
      if (!prep) ta.a.swiglu_prepare = nullptr;
      if (p.regs == 80) launch<SE, true, G64, 2, 2, 80>(ta, units, p.G, s);
      else launch<SE, true, G64, 1, 1, 64>(ta, units, p.G, s);
      return prep;
    }
    if (wide) {
      static constexpr int kRegs[] = {96};
      const WidePlan p = plan(4, kRegs);
      if (!prep) ta.a.swiglu_prepare = nullptr;
      launch<SE, false, G64, 1, 1, 96>(ta, units, p.G, s);
      return prep;
    }
  }
  // Deep: 6 pairs in flight for 1-2 rows at g64 with 16-bit scales (8B decode 332 -> 400 tok/s over 4).
  TiledArgs ta = ta_in;
  ta.a.swiglu_prepare = nullptr;
  const int G = deep_warps_per_unit(units);
  if (ta.a.rows <= 2) launch<SE, true, G64, G64 ? (SE == ElemType::F32 ? 4 : 6) : 3, G64 ? 2 : 3, 0>(ta, units, G, s);
  else launch<SE, false, G64, 2, 2, 0>(ta, units, G, s);
  return false;
}

}  // namespace

bool imma_stream_takes(const TiledArgs& ta) {
  static const bool on = env_int("TF_CUDA_IMMA_STREAM", 1) != 0;  // A/B runs
  if (!on || ta.prepared == nullptr || ta.a.rows < 1 || ta.a.rows > kMaxStreamRows || ta.warps != kMaxWarps)
    return false;
  for (int i = 0; i < ta.a.segments; ++i)
    if (ta.a.seg[i].w.sb_tiled == nullptr) return false;  // the scales stream from their tiled copy
  return true;
}

bool decode_linear_imma_stream(const TiledArgs& ta, cudaStream_t s) {
  const bool g64 = ta.a.seg[0].w.group == 64;
  switch (ta.a.seg[0].w.dtype) {
    case ElemType::F32: return g64 ? launch_rows<ElemType::F32, true>(ta, s) : launch_rows<ElemType::F32, false>(ta, s);
    case ElemType::F16: return g64 ? launch_rows<ElemType::F16, true>(ta, s) : launch_rows<ElemType::F16, false>(ta, s);
    case ElemType::BF16: return g64 ? launch_rows<ElemType::BF16, true>(ta, s) : launch_rows<ElemType::BF16, false>(ta, s);
  }
  return false;
}

}  // namespace tf::cuda::tiled
