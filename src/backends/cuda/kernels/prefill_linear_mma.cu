// The prefill GEMM on the bf16 tensor cores for affine 2/4/8-bit weights: y [M, N] = x [M, K] w^T with
// w[n, k] = s[n, g] q[n, k] + b[n, g] (g = k / group).
//
// Why this form: an affine code q is a small integer, exact in bf16, so the tensor cores can take the codes
// themselves and the scale and bias are applied once a group in float32:
//   y[m, n] = sum_g ( s[n, g] D[m, n, g] + b[n, g] X[m, g] ),  D = sum_{k in g} q[n, k] x[m, k],  X = sum_{k in g} x[m,
//   k].
// x comes in one of two forms (PrefillX, the prompt precision):
// - Bf16 (the default): x rounded once to bf16, x~ = bf16(x) (8 significant bits), and X the sum of the x~:
//   y is exactly sum_k w[n, k] x~[m, k] up to float32 accumulation, one pass of mma.m16n8k16 a k step. The
//   rounding moves each x by at most 2^-8 of itself, so |y - y(x)| <= 2^-8 sum_k |w x| (the kernel test's
//   bound, with float32's share added; its RMS is ~0.42 * 2^-8 of the products' RMS).
// - TwoTerms (--precision full): x = hi + lo (hi = bf16(x), lo = bf16(x - hi): 16 significant bits), and D
//   accumulates q hi + q lo in one float32 accumulator: each product is exact, so D is float32-accurate to
//   ~2^-17 of x, and rows keep the float64 reference within the kernel test's 3e-5 (the integer kernel's
//   tolerance); X is the sum of x itself. Two passes a k step.
// Either way fewer tensor-core passes than the integer kernel's three s8 terms and its integer-to-float
// conversions per group (a quarter-rate instruction on Hopper), which had bound prefill_linear_imma.cu.
//
// Prefill rows need not have decode rows' bits (docs/cuda.md, "Row invariance"): a chunk's result has to be
// a pure function of its inputs, and is: a fixed summation order (the mma's, then the groups in k order), no
// atomics, no split-K; each output element depends on its own x row and weight row only.
//
// Work: a block of 16 warps computes a 128 (x rows) x 128 (weight rows) tile over K in steps of 64 codes,
// double-buffered in shared memory: x's terms arrive by cp.async from the split kernel's scratch; the codes
// are loaded into registers a step ahead and written as bf16 integers (once a block, reused by 128 rows).
// Fragments come from shared memory by ldmatrix (rows padded by 16 bytes: no bank conflicts). A warp owns
// 32 x rows x 32 weight rows: 2 x 4 mma tiles, group sums D and running totals in registers (128 registers).
// 8 warps of 64 x 32 (222 registers, 2 warps a scheduler) ran as fast (H100: 99.5 against 97.5 TFLOPS). Blocks of the
// same weight columns are consecutive along x, so a weight tile comes from DRAM about once.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/bf16_codes.cuh"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/prefill_linear_wgmma.h"
#include "backends/cuda/kernels/tiled_layout.h"

namespace tf::cuda {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 64;  // x rows, weight rows, codes a step
// 16 warps: 4 along x rows x 4 along weight rows, a warp 32 x rows (kMT 16-row mma tiles) x 32 weight rows.
constexpr int kWarpsM = 4, kMT = 2, kThreads = kWarpsM * 4 * 32;
constexpr int kPitch = kBK + 8;  // bf16 elements a shared-memory row: 144 bytes, ldmatrix rows on distinct banks
constexpr int kGroupsAStep = 2;  // at most two groups end within a step (groups of 32)

struct Stage {
  __nv_bfloat16 xh[kBM][kPitch];
  __nv_bfloat16 xl[kBM][kPitch];
  __nv_bfloat16 w[kBN][kPitch];
  float s[kGroupsAStep][kBN];  // scale and bias of the groups that end in this step
  float b[kGroupsAStep][kBN];
  float xsum[kGroupsAStep][kBM];  // X of those groups
};
constexpr std::size_t kSmemBytes = 2 * sizeof(Stage);

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;  // 0: the destination is zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// Not volatile: a pure function of its registers, so the compiler may interleave independent mmas (volatile
// asm keeps source order, and the hi and lo passes into one accumulator would then wait on each other).
__device__ __forceinline__ void mma_bf16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One word's codes as bf16, k order, into dst (8-, 4- or 2-bit: 4, 8 or 16 codes).
template <int BITS>
__device__ __forceinline__ void store_word(__nv_bfloat16* dst, std::uint32_t w) {
  if constexpr (BITS == 4) {
    *reinterpret_cast<uint4*>(dst) = four_bit_word_bf16(w);
  } else if constexpr (BITS == 2) {
    std::uint32_t o[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const std::uint32_t two = w >> (4 * i);
      o[i] = small_pair_bf16((two & 0x3u) | ((two << 14) & 0x30000u));
    }
    *reinterpret_cast<uint4*>(dst) = make_uint4(o[0], o[1], o[2], o[3]);
    *reinterpret_cast<uint4*>(dst + 8) = make_uint4(o[4], o[5], o[6], o[7]);
  } else {
    // 0..255 is exact in bf16, but not as 128 + q: through float (2^23 + q has q in the mantissa).
    float f[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) f[i] = __fsub_rn(__uint_as_float(0x4B000000u | ((w >> (8 * i)) & 0xFFu)), 8388608.0f);
    const __nv_bfloat162 lo = __floats2bfloat162_rn(f[0], f[1]), hi = __floats2bfloat162_rn(f[2], f[3]);
    *reinterpret_cast<uint2*>(dst) =
        make_uint2(*reinterpret_cast<const std::uint32_t*>(&lo), *reinterpret_cast<const std::uint32_t*>(&hi));
  }
}

// The codes of one step: 128 weight rows x 64 codes = 2 * BITS words a row, loaded as uint4s (2-bit: 128 of
// them, 4-bit: 256, 8-bit: 512; a thread takes at most one). Each word is stored at (row, first code) of the tile.
template <int BITS, bool TILED>
struct CodeLoader {
  static constexpr int kWordsARow = 2 * BITS;         // a step's words of one row
  static constexpr int kVecs = kBN * kWordsARow / 4;  // uint4s a step
  static constexpr int kPerThread = (kVecs + kThreads - 1) / kThreads;
  static constexpr int kCodesAWord = 32 / BITS;
  uint4 v[kPerThread];

  __device__ __forceinline__ void load(const WeightView& w, std::int64_t n0, std::int64_t step, int tid) {
    const std::int64_t wpr = w.cols * BITS / 32;
    const std::int64_t alloc_rows = TILED ? ceil_div(w.rows, kTileRows) * kTileRows : w.rows;  // tiles padded
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int idx = tid + i * kThreads;
      v[i] = make_uint4(0, 0, 0, 0);
      if (idx >= kVecs) continue;
      if constexpr (TILED) {
        // 16-row tiles of pairs (8 words a row) laid out lane by lane (tiled_layout.h): a uint4 is one
        // lane's four words, rows rr and rr + 8, words j of the pair's two units.
        constexpr int kPairs = kWordsARow / 8;
        const int tile = idx / (32 * kPairs), pp = (idx / 32) % kPairs, lane = idx % 32;
        const std::int64_t t = n0 / kTileRows + tile;
        if (t * kTileRows >= alloc_rows) continue;
        const std::int64_t pair = step * kPairs + pp;
        v[i] = *reinterpret_cast<const uint4*>(static_cast<const std::uint32_t*>(w.data) +
                                               ((t * (wpr / 8) + pair) * 32 + lane) * 4);
      } else {
        constexpr int kVecsARow = kWordsARow / 4;
        const std::int64_t n = n0 + idx / kVecsARow;
        if (n >= alloc_rows) continue;
        v[i] = *reinterpret_cast<const uint4*>(static_cast<const std::uint32_t*>(w.data) + n * wpr + step * kWordsARow +
                                               (idx % kVecsARow) * 4);
      }
    }
  }

  __device__ __forceinline__ void store(Stage& st, int tid) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int idx = tid + i * kThreads;
      if (idx >= kVecs) continue;
      const std::uint32_t words[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
      if constexpr (TILED) {
        constexpr int kPairs = kWordsARow / 8;
        const int tile = idx / (32 * kPairs), pp = (idx / 32) % kPairs, lane = idx % 32;
        const int rr = lane >> 2, j = lane & 3;
#pragma unroll
        for (int e = 0; e < 4; ++e) {  // e = 2 sub + half
          const int row = tile * kTileRows + rr + 8 * (e & 1);
          const int word = (2 * pp + (e >> 1)) * 4 + j;
          store_word<BITS>(&st.w[row][word * kCodesAWord], words[e]);
        }
      } else {
        constexpr int kVecsARow = kWordsARow / 4;
        const int row = idx / kVecsARow, word0 = (idx % kVecsARow) * 4;
#pragma unroll
        for (int e = 0; e < 4; ++e) store_word<BITS>(&st.w[row][(word0 + e) * kCodesAWord], words[e]);
      }
    }
  }
};

// TWO: x's lo terms too (PrefillX::TwoTerms), a second mma pass; else xl is never read.
template <int BITS, int GROUP, ElemType SE, bool TILED, bool TWO>
__global__ void __launch_bounds__(kThreads, 1)
    prefill_mma_kernel(const __nv_bfloat16* __restrict__ xh, const __nv_bfloat16* __restrict__ xl,
                       const float* __restrict__ xsum, std::int64_t M, WeightView w, float* __restrict__ y,
                       std::int64_t y_stride) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Stage* stages = reinterpret_cast<Stage*>(smem_raw);
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31;
  const int wm = (warp % kWarpsM) * 16 * kMT, wn = (warp / kWarpsM) * 32;  // the warp's x rows, weight rows
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * kBM, n0 = static_cast<std::int64_t>(blockIdx.y) * kBN;
  const std::int64_t K = w.cols, steps = K / kBK, gpr = K / GROUP;

  CodeLoader<BITS, TILED> codes;
  codes.load(w, n0, 0, tid);  // weights are never written: before the wait
  pdl_launch();
  pdl_wait();  // x's terms are the split kernel's output

  // x's terms of a step: 128 rows x 64 bf16 = 1024 16-byte pieces each of hi and lo.
  auto load_x = [&](Stage& st, std::int64_t step) {
#pragma unroll
    for (int i = 0; i < kBM * kBK / 8 / kThreads; ++i) {
      const int idx = tid + i * kThreads, r = idx >> 3, c = (idx & 7) * 8;
      const bool valid = m0 + r < M;
      const std::int64_t off = (valid ? m0 + r : 0) * K + step * kBK + c;
      cp_async16(&st.xh[r][c], xh + off, valid);
      if constexpr (TWO) cp_async16(&st.xl[r][c], xl + off, valid);
    }
  };
  // Scales, biases and X of the groups ending in `step` (slot j: the j-th of them), a value a thread and slot
  // (threads 0-127 a weight row's scale and bias, 128-255 an x row's X): loaded into registers a step ahead,
  // like the codes, and stored after the step's mmas, so their latency hides behind them.
  constexpr int kEnding = GROUP == 32 ? 2 : 1;
  float gs[kEnding], gb[kEnding];
  auto load_group_terms = [&](std::int64_t step) {
    const std::int64_t k_end = (step + 1) * kBK;
    if (GROUP > kBK && k_end % GROUP != 0) return;
    const int i = tid & 127;
#pragma unroll
    for (int j = 0; j < kEnding; ++j) {
      const std::int64_t g = k_end / GROUP - kEnding + j;
      if (tid < 128) {
        const std::int64_t n = n0 + i;
        const bool ok = n < w.rows;
        gs[j] = ok ? load_elem<SE>(w.scales, n * gpr + g) : 0.0f;
        gb[j] = ok ? load_elem<SE>(w.biases, n * gpr + g) : 0.0f;
      } else if (tid < 256) {
        const std::int64_t m = m0 + i;
        gs[j] = m < M ? xsum[g * M + m] : 0.0f;
      }
    }
  };
  auto store_group_terms = [&](Stage& st, std::int64_t step) {
    const std::int64_t k_end = (step + 1) * kBK;
    if (GROUP > kBK && k_end % GROUP != 0) return;
    const int i = tid & 127;
#pragma unroll
    for (int j = 0; j < kEnding; ++j) {
      if (tid < 128) {
        st.s[j][i] = gs[j];
        st.b[j][i] = gb[j];
      } else if (tid < 256) {
        st.xsum[j][i] = gs[j];
      }
    }
  };

  float d[kMT][4][4], total[kMT][4][4];
#pragma unroll
  for (int i = 0; i < kMT; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) d[i][j][e] = total[i][j][e] = 0.0f;

  load_x(stages[0], 0);
  cp_async_commit();
  load_group_terms(0);
  codes.store(stages[0], tid);
  store_group_terms(stages[0], 0);
  cp_async_wait_all();
  __syncthreads();

  const int g = lane >> 2, t = lane & 3;
  for (std::int64_t step = 0; step < steps; ++step) {
    Stage& cur = stages[step & 1];
    Stage& next = stages[(step + 1) & 1];
    const bool more = step + 1 < steps;
    if (more) {
      load_x(next, step + 1);
      cp_async_commit();
      codes.load(w, n0, step + 1, tid);
      load_group_terms(step + 1);
    }
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      std::uint32_t ah[kMT][4], al[kMT][4], bw[2][4];
#pragma unroll
      for (int i = 0; i < kMT; ++i) {
        const int r = wm + 16 * i + (lane & 15), c = kk * 16 + (lane >> 4) * 8;
        ldmatrix_x4(ah[i], &cur.xh[r][c]);
        if constexpr (TWO) ldmatrix_x4(al[i], &cur.xl[r][c]);
      }
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const int r = wn + 16 * jj + (lane >> 4) * 8 + (lane & 7), c = kk * 16 + ((lane >> 3) & 1) * 8;
        ldmatrix_x4(bw[jj], &cur.w[r][c]);
      }
      // The hi pass over all 8 tiles, then the lo pass: an accumulator's two mmas are 8 apart.
#pragma unroll
      for (int i = 0; i < kMT; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma_bf16(d[i][j], ah[i], bw[j >> 1][2 * (j & 1)], bw[j >> 1][2 * (j & 1) + 1]);
      if constexpr (TWO) {
#pragma unroll
        for (int i = 0; i < kMT; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) mma_bf16(d[i][j], al[i], bw[j >> 1][2 * (j & 1)], bw[j >> 1][2 * (j & 1) + 1]);
      }
      // A group ends after this 16-code slice: total += b X + s D, D back to 0.
      const bool group_ends = GROUP == 32 ? (kk & 1) == 1 : kk == 3 && (GROUP == 64 || (step & 1) == 1);
      if (group_ends) {
        const int slot = GROUP == 32 ? kk >> 1 : 0;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int n = wn + 8 * j + 2 * t;
          const float2 s = *reinterpret_cast<const float2*>(&cur.s[slot][n]);
          const float2 b = *reinterpret_cast<const float2*>(&cur.b[slot][n]);
#pragma unroll
          for (int i = 0; i < kMT; ++i) {
            const float x0 = cur.xsum[slot][wm + 16 * i + g], x1 = cur.xsum[slot][wm + 16 * i + g + 8];
            float* dd = d[i][j];
            float* tt = total[i][j];
            tt[0] = __fmaf_rn(s.x, dd[0], __fmaf_rn(b.x, x0, tt[0]));
            tt[1] = __fmaf_rn(s.y, dd[1], __fmaf_rn(b.y, x0, tt[1]));
            tt[2] = __fmaf_rn(s.x, dd[2], __fmaf_rn(b.x, x1, tt[2]));
            tt[3] = __fmaf_rn(s.y, dd[3], __fmaf_rn(b.y, x1, tt[3]));
            dd[0] = dd[1] = dd[2] = dd[3] = 0.0f;
          }
        }
      }
    }
    if (more) {
      codes.store(next, tid);
      store_group_terms(next, step + 1);
      cp_async_wait_all();
    }
    __syncthreads();
  }

  // C fragment: value e of tile (i, j) is x row wm + 16 i + g + 8 (e / 2), weight row wn + 8 j + 2 t + e % 2.
#pragma unroll
  for (int i = 0; i < kMT; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const std::int64_t m = m0 + wm + 16 * i + g + 8 * (e >> 1), n = n0 + wn + 8 * j + 2 * t + (e & 1);
        if (m < M && n < w.rows) y[m * y_stride + n] = total[i][j][e];
      }
}

// x [M, K] float32 -> hi, lo bf16 [M, K] and X [K / group, M] (each group's sum of x, in a fixed order: a
// thread's eight values in k order, then a butterfly over the group's threads). Without TWO: hi alone, and X
// the sum of the hi terms (the x the GEMM multiplies), in the same order.
template <int GROUP, bool TWO>
__global__ void __launch_bounds__(256)
    split_x_kernel(const float* __restrict__ x, std::int64_t x_stride, std::int64_t M, std::int64_t K,
                   __nv_bfloat16* __restrict__ xh, __nv_bfloat16* __restrict__ xl, float* __restrict__ xsum) {
  pdl_launch();
  pdl_wait();  // x is the previous kernel's output; the previous GEMM may still read the scratch
  const std::int64_t eights = K / 8;
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool valid = idx < M * eights;  // whole groups a warp (eights % (GROUP / 8) == 0), so lanes agree per group
  const std::int64_t m = valid ? idx / eights : 0, c = valid ? idx % eights : 0;
  float v[8] = {};
  if (valid) {
    const float4 a = *reinterpret_cast<const float4*>(x + m * x_stride + 8 * c);
    const float4 b = *reinterpret_cast<const float4*>(x + m * x_stride + 8 * c + 4);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  }
  std::uint32_t hi[4], lo[4] = {};
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
    const float2 hf = __bfloat1622float2(h);
    hi[i] = *reinterpret_cast<const std::uint32_t*>(&h);
    if constexpr (TWO) {
      const __nv_bfloat162 l = __floats2bfloat162_rn(__fsub_rn(v[2 * i], hf.x), __fsub_rn(v[2 * i + 1], hf.y));
      lo[i] = *reinterpret_cast<const std::uint32_t*>(&l);
      sum = __fadd_rn(__fadd_rn(sum, v[2 * i]), v[2 * i + 1]);
    } else {
      sum = __fadd_rn(__fadd_rn(sum, hf.x), hf.y);
    }
  }
#pragma unroll
  for (int o = 1; o < GROUP / 8; o <<= 1) sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, o));
  if (!valid) return;
  *reinterpret_cast<uint4*>(xh + m * K + 8 * c) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
  if constexpr (TWO) *reinterpret_cast<uint4*>(xl + m * K + 8 * c) = make_uint4(lo[0], lo[1], lo[2], lo[3]);
  if (c % (GROUP / 8) == 0) xsum[(8 * c / GROUP) * M + m] = sum;
}

struct ScratchParts {
  __nv_bfloat16 *xh, *xl;
  float* xsum;
};
ScratchParts scratch_parts(void* scratch, std::int64_t M, std::int64_t K) {
  auto* base = static_cast<unsigned char*>(scratch);
  const std::size_t terms = static_cast<std::size_t>(M * K) * sizeof(__nv_bfloat16);
  return {reinterpret_cast<__nv_bfloat16*>(base), reinterpret_cast<__nv_bfloat16*>(base + terms),
          reinterpret_cast<float*>(base + 2 * terms)};
}

template <int BITS, int GROUP, ElemType SE, bool TILED, bool TWO>
void launch_gemm(const ScratchParts& p, std::int64_t M, const WeightView& w, float* y, std::int64_t y_stride,
                 cudaStream_t s) {
  auto* kernel = prefill_mma_kernel<BITS, GROUP, SE, TILED, TWO>;
  raise_smem_limit<prefill_mma_kernel<BITS, GROUP, SE, TILED, TWO>>(static_cast<int>(kSmemBytes), "prefill_linear_mma");
  const dim3 grid(static_cast<unsigned int>(ceil_div(M, kBM)), static_cast<unsigned int>(ceil_div(w.rows, kBN)));
  launch_pdl(kernel, grid, dim3(kThreads), kSmemBytes, s, p.xh, p.xl, p.xsum, M, w, y, y_stride);
}

template <int BITS, int GROUP, bool TILED, bool TWO>
void dispatch_scale(const ScratchParts& p, std::int64_t M, const WeightView& w, float* y, std::int64_t ys,
                    cudaStream_t s) {
  switch (w.dtype) {
    case ElemType::F32:
      launch_gemm<BITS, GROUP, ElemType::F32, TILED, TWO>(p, M, w, y, ys, s);
      break;
    case ElemType::F16:
      launch_gemm<BITS, GROUP, ElemType::F16, TILED, TWO>(p, M, w, y, ys, s);
      break;
    case ElemType::BF16:
      launch_gemm<BITS, GROUP, ElemType::BF16, TILED, TWO>(p, M, w, y, ys, s);
      break;
  }
}

template <int GROUP, bool TWO>
void dispatch_bits(const ScratchParts& p, std::int64_t M, const WeightView& w, float* y, std::int64_t ys,
                   cudaStream_t s) {
  if (w.bits == 2)
    dispatch_scale<2, GROUP, false, TWO>(p, M, w, y, ys, s);  // 2-bit codes are never tiled
  else if (w.bits == 4 && w.tiled)
    dispatch_scale<4, GROUP, true, TWO>(p, M, w, y, ys, s);
  else if (w.bits == 4)
    dispatch_scale<4, GROUP, false, TWO>(p, M, w, y, ys, s);
  else if (w.tiled)
    dispatch_scale<8, GROUP, true, TWO>(p, M, w, y, ys, s);
  else
    dispatch_scale<8, GROUP, false, TWO>(p, M, w, y, ys, s);
}

// The split kernel, then the GEMM, for one group size and form of x: the bf16 form on the wgmma kernel when
// `wgmma` (prefill_linear_wgmma.cu, the same scratch), else on this file's.
template <int GROUP, bool TWO>
void split_and_multiply(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                        std::int64_t y_stride, const ScratchParts& p, bool wgmma, cudaStream_t s) {
  const std::int64_t threads = rows * (w.cols / 8);
  const dim3 sgrid(static_cast<unsigned int>(ceil_div(threads, 256)));
  launch_pdl(split_x_kernel<GROUP, TWO>, sgrid, dim3(256), 0, s, x, x_stride, rows, w.cols, p.xh, p.xl, p.xsum);
  check_launch("prefill_split_x");
  if (!TWO && wgmma)
    prefill_wgmma(p.xh, p.xsum, rows, w, y, y_stride, s);
  else
    dispatch_bits<GROUP, TWO>(p, rows, w, y, y_stride, s);
}

template <bool TWO>
void split_and_multiply(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                        std::int64_t y_stride, const ScratchParts& p, bool wgmma, cudaStream_t s) {
  switch (w.group) {
    case 32:
      split_and_multiply<32, TWO>(x, x_stride, rows, w, y, y_stride, p, wgmma, s);
      break;
    case 64:
      split_and_multiply<64, TWO>(x, x_stride, rows, w, y, y_stride, p, wgmma, s);
      break;
    default:
      split_and_multiply<128, TWO>(x, x_stride, rows, w, y, y_stride, p, wgmma, s);
      break;
  }
}

}  // namespace

bool prefill_linear_mma_takes(const WeightView& w) {
  static const bool on = env_int("TF_CUDA_PREFILL_MMA", 1) != 0;  // A/B runs
  if (!on || (w.bits != 2 && w.bits != 4 && w.bits != 8)) return false;
  if (w.group != 32 && w.group != 64 && w.group != 128) return false;
  if (w.bits == 2 && (w.group == 32 || w.tiled)) return false;  // a 2-bit word spans 16 codes; groups of 64+
  return w.cols % kBK == 0 && w.cols % w.group == 0;
}

std::size_t prefill_mma_scratch_bytes(std::int64_t rows, std::int64_t cols) {
  // hi and lo terms, then X for groups of 32 (the most groups)
  return static_cast<std::size_t>(rows * cols) * 2 * sizeof(__nv_bfloat16) +
         static_cast<std::size_t>(rows * (cols / 32)) * sizeof(float);
}

void prefill_linear_mma(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                        std::int64_t y_stride, void* scratch, std::size_t scratch_bytes, PrefillX x_terms,
                        cudaStream_t s) {
  if (!prefill_linear_mma_takes(w) || scratch_bytes < prefill_mma_scratch_bytes(rows, w.cols) || x_stride % 4 != 0 ||
      reinterpret_cast<std::uintptr_t>(x) % 16 != 0)
    throw std::invalid_argument("prefill_linear_mma: weight not on the bf16 GEMM, scratch too small or x misaligned");
  const ScratchParts p = scratch_parts(scratch, rows, w.cols);
  if (x_terms == PrefillX::TwoTerms)
    split_and_multiply<true>(x, x_stride, rows, w, y, y_stride, p, false, s);
  else
    split_and_multiply<false>(x, x_stride, rows, w, y, y_stride, p, prefill_wgmma_on() && prefill_wgmma_takes(w), s);
  check_launch("prefill_linear_mma");
}

void prefill_linear_wgmma(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                          std::int64_t y_stride, void* scratch, std::size_t scratch_bytes, cudaStream_t s) {
  if (!prefill_linear_mma_takes(w) || !prefill_wgmma_takes(w) ||
      scratch_bytes < prefill_mma_scratch_bytes(rows, w.cols) || x_stride % 4 != 0 ||
      reinterpret_cast<std::uintptr_t>(x) % 16 != 0)
    throw std::invalid_argument(
        "prefill_linear_wgmma: weight not on the wgmma GEMM, scratch too small or x misaligned");
  split_and_multiply<false>(x, x_stride, rows, w, y, y_stride, scratch_parts(scratch, rows, w.cols), true, s);
  check_launch("prefill_linear_wgmma");
}

}  // namespace tf::cuda
