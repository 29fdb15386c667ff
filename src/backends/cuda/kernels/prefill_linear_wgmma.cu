// The prefill GEMM on Hopper's warpgroup matrix instruction (wgmma.mma_async, sm_90a) for x rounded once to bf16
// (--precision bf16): y [M, N] = x~ [M, K] w^T with w[n, k] = s[n, g] q[n, k] + b[n, g], computed as
//   y[m, n] = sum_g ( s[n, g] D[m, n, g] + b[n, g] X[m, g] ),  D = sum_{k in g} q[n, k] x~[m, k],  X = sum x~,
// the arithmetic of prefill_linear_mma.cu's Bf16 form (its header says why: a code is exact in bf16, so the
// tensor cores take the codes and the weights stay exact; scale and bias once a group in float32). What
// changes is the instruction: mma.sync runs near a fifth of Hopper's dense rate in that kernel, wgmma is the
// instruction cuBLAS reaches ~780 TFLOPS with on the same shapes (docs/benchmarks.md).
//
// Work: a block of two warpgroups computes 128 x rows x 128 weight rows over K in steps of 64 codes, three
// shared-memory stages deep. Every thread loads: x~ arrives by cp.async two steps ahead; a step's codes (one
// 16-byte load a thread) are loaded into registers two steps ahead and written as bf16 integers one step
// ahead, while the tensor cores run the current step. Warpgroup g multiplies its 64 x rows by the 128 weight
// rows (m64n128k16, A and B from shared memory, K-major, no swizzle: 8 x 16-byte core matrices, a tile's
// 8-code column of 128 rows contiguous, so rows of a core matrix are 16 bytes apart and a K chunk is 2048).
// A group's D accumulates in registers (groups of 32: two sets, the second group's slices issued before the
// first's epilogue); after its last slice the warpgroup waits for it and adds s D + b X into its totals
// (the same fused multiply-adds as the mma kernel), while the other warpgroup's slices keep the tensor
// cores busy. A fixed summation order (slices, then groups in k order), no atomics, no split-K: a row's
// result depends on its own x row and the weight alone, and is the same on every run.
#include "backends/cuda/kernels/prefill_linear_wgmma.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "backends/cuda/kernels/bf16_codes.cuh"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/tiled_layout.h"

namespace tf::cuda {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 64;  // x rows, weight rows, codes a step
constexpr int kStages = 3;
constexpr int kThreads = 256;                 // two warpgroups of 64 x rows
constexpr int kChunkBytes = 16;               // 8 bf16 along K: a core matrix's row
constexpr int kKChunks = kBK / 8;             // 8-code chunks a step
constexpr int kColBytes = kBM * kChunkBytes;  // one chunk of all 128 rows: the K step between core matrices
static_assert(kBM == kBN, "x and weight tiles share one layout");

// Chunk c of row r of a tile at c * kColBytes + r * kChunkBytes.
struct Stage {
  alignas(128) unsigned char x[kKChunks * kColBytes];
  alignas(128) unsigned char w[kKChunks * kColBytes];
  float4 sb[2][kBN / 2];  // the groups ending in this step: {s[n], s[n + 1], b[n], b[n + 1]} for even n
  float xsum[2][kBM];     // X of those groups
};
constexpr std::size_t kSmemBytes = kStages * sizeof(Stage);
// The descriptors' strides: between core matrices along K (leading) and along the rows (stride).
constexpr std::uint32_t kLeadingBytes = kColBytes, kStrideBytes = 8 * kChunkBytes;

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;  // 0: the destination is zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// A shared-memory matrix descriptor without swizzling: start address, leading and stride byte offsets (each
// in 16-byte units).
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t addr, std::uint32_t leading, std::uint32_t stride) {
  return static_cast<std::uint64_t>((addr & 0x3FFFFu) >> 4) | (static_cast<std::uint64_t>(leading >> 4) << 16) |
         (static_cast<std::uint64_t>(stride >> 4) << 32);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// After a wait: the accumulators count as written here, so no read of them moves above the wait.
__device__ __forceinline__ void fence_accumulators(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Generic-proxy writes to shared memory (cp.async, stores) made visible to the tensor cores' reads.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// d[0..63] (+)= A B over one 16-code slice: A 64 x rows, B 128 weight rows, both K-major bf16 in shared memory
// (descriptors), accumulate = 0 starts the sum (a group's first slice), else adds to it.
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b,
                                                 int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#endif

// A step's 4-bit codes: 128 weight rows x 64 codes = 256 uint4s, one a thread. Each word (8 codes) becomes one
// chunk of the tile.
template <bool TILED>
struct StepCodes {
  uint4 v;
  __device__ __forceinline__ void load(const WeightView& w, std::int64_t n0, std::int64_t step, int tid) {
    const std::int64_t wpr = w.cols / 8;
    v = make_uint4(0, 0, 0, 0);
    if constexpr (TILED) {
      // 16-row tiles, a step is one pair (tiled_layout.h): a warp a tile, a lane its uint4.
      const std::int64_t t = n0 / kTileRows + (tid >> 5);
      if (t * kTileRows >= w.rows) return;  // rows are padded to whole tiles
      v = *reinterpret_cast<const uint4*>(static_cast<const std::uint32_t*>(w.data) +
                                          ((t * (wpr / 8) + step) * 32 + (tid & 31)) * 4);
    } else {
      // Lanes 0-7 and 8-15 take the two halves of 8 rows: a row's 32 bytes come in one request.
      const std::int64_t n = n0 + (tid & 7) + 8 * (tid >> 4);
      if (n >= w.rows) return;
      v = *reinterpret_cast<const uint4*>(static_cast<const std::uint32_t*>(w.data) + n * wpr + step * 8 +
                                          ((tid >> 3) & 1) * 4);
    }
  }
  __device__ __forceinline__ void store(Stage& st, int tid) const {
    const std::uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      int row, chunk;
      if constexpr (TILED) {  // word e = 2 sub + half: row rr + 8 half, word 4 sub + j of the step
        const int lane = tid & 31;
        row = (tid >> 5) * kTileRows + (lane >> 2) + 8 * (e & 1);
        chunk = 4 * (e >> 1) + (lane & 3);
      } else {
        row = (tid & 7) + 8 * (tid >> 4);
        chunk = 4 * ((tid >> 3) & 1) + e;
      }
      *reinterpret_cast<uint4*>(st.w + chunk * kColBytes + row * kChunkBytes) = four_bit_word_bf16(words[e]);
    }
  }
};

template <int GROUP, ElemType SE, bool TILED>
__global__ void __launch_bounds__(kThreads, 1)
    prefill_wgmma_kernel(const __nv_bfloat16* __restrict__ xh, const float* __restrict__ xsum, std::int64_t M,
                         WeightView w, float* __restrict__ y, std::int64_t y_stride, std::uint32_t leading,
                         std::uint32_t stride) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Stage* stages = reinterpret_cast<Stage*>(smem_raw);
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31, wg = warp >> 2;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * kBM, n0 = static_cast<std::int64_t>(blockIdx.y) * kBN;
  const std::int64_t K = w.cols, steps = K / kBK, gpr = K / GROUP;

  StepCodes<TILED> codes;
  codes.load(w, n0, 0, tid);  // weights are never written: before the wait
  pdl_launch();
  pdl_wait();  // x~ and X are the split kernel's output

  // x~ of a step: 128 rows x 8 chunks, four cp.async a thread. A warp takes 8 rows x 4 chunks (each row's
  // 64 bytes whole); in each quarter-warp rows 0-3 and 4-7 take chunks of different parity, so its eight
  // 16-byte writes fall on distinct banks.
  auto load_x = [&](Stage& st, std::int64_t step) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int u = i * 8 + warp, p = lane >> 3, q = lane & 7;
      const int r = (u & 15) * 8 + q, c = 4 * (u >> 4) + 2 * (p >> 1) + ((p & 1) ^ (q >> 2));
      const bool valid = m0 + r < M;
      cp_async16(st.x + c * kColBytes + r * kChunkBytes, xh + (valid ? m0 + r : 0) * K + step * kBK + c * 8, valid);
    }
  };
  // Scales, biases and X of the groups ending in `step` (threads 0-127: a weight row's s and b; 128-255: an x
  // row's X), into registers a step ahead and stored with the codes.
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
      } else {
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
        float* f = reinterpret_cast<float*>(&st.sb[j][i >> 1]);
        f[i & 1] = gs[j];
        f[2 + (i & 1)] = gb[j];
      } else {
        st.xsum[j][i] = gs[j];
      }
    }
  };

  // Accumulator fragment of m64nNk16: value 4 j + e of a thread is x row 16 (warp % 4) + lane / 4 + 8 (e / 2)
  // of its warpgroup's 64, weight row 8 j + 2 (lane % 4) + e % 2.
  float total[64], da[64], db[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) total[i] = da[i] = db[i] = 0.0f;
  const int rl = wg * 64 + (warp & 3) * 16 + (lane >> 2);  // the thread's first x row in the block
  auto epilogue = [&](const float(&d)[64], const Stage& st, int slot) {
    const float x0 = st.xsum[slot][rl], x1 = st.xsum[slot][rl + 8];
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const float4 sb = st.sb[slot][4 * j + (lane & 3)];
      float* t = &total[4 * j];
      const float* dd = &d[4 * j];
      t[0] = __fmaf_rn(sb.x, dd[0], __fmaf_rn(sb.z, x0, t[0]));
      t[1] = __fmaf_rn(sb.y, dd[1], __fmaf_rn(sb.w, x0, t[1]));
      t[2] = __fmaf_rn(sb.x, dd[2], __fmaf_rn(sb.z, x1, t[2]));
      t[3] = __fmaf_rn(sb.y, dd[3], __fmaf_rn(sb.w, x1, t[3]));
    }
  };

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) load_x(stages[s], s);
    cp_async_commit();
  }
  load_group_terms(0);
  codes.store(stages[0], tid);
  store_group_terms(stages[0], 0);
  if (steps > 1) {
    codes.load(w, n0, 1, tid);
    load_group_terms(1);
  }

  const std::uint32_t base = smem_addr(smem_raw);
  for (std::int64_t step = 0; step < steps; ++step) {
    cp_async_wait<kStages - 2>();  // this step's x~ (own copies)
    fence_proxy_async();
    __syncthreads();  // everyone's copies and code stores; the stage refilled below was finished last step
    if (step + kStages - 1 < steps) load_x(stages[(step + kStages - 1) % kStages], step + kStages - 1);
    cp_async_commit();

    const int cur = static_cast<int>(step % kStages);
    const std::uint32_t xa =
        base + cur * static_cast<std::uint32_t>(sizeof(Stage)) + offsetof(Stage, x) + wg * 64 * kChunkBytes;
    const std::uint32_t wa = base + cur * static_cast<std::uint32_t>(sizeof(Stage)) + offsetof(Stage, w);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      const std::uint64_t a = smem_desc(xa + 2 * kk * kColBytes, leading, stride),
                          b = smem_desc(wa + 2 * kk * kColBytes, leading, stride);
      if constexpr (GROUP == 32) {
        if (kk < 2)
          wgmma_m64n128k16(da, a, b, kk & 1);
        else
          wgmma_m64n128k16(db, a, b, kk & 1);
        if (kk == 1) wgmma_commit();
      } else if constexpr (GROUP == 64) {
        wgmma_m64n128k16(da, a, b, kk != 0);
      } else {
        wgmma_m64n128k16(da, a, b, kk != 0 || (step & 1) != 0);
      }
    }
    wgmma_commit();
    // The next step's codes and group terms while the tensor cores run this one.
    if (step + 1 < steps) {
      Stage& next = stages[(step + 1) % kStages];
      codes.store(next, tid);
      store_group_terms(next, step + 1);
      if (step + 2 < steps) {
        codes.load(w, n0, step + 2, tid);
        load_group_terms(step + 2);
      }
    }
    const Stage& st = stages[cur];
    if constexpr (GROUP == 32) {
      wgmma_wait<1>();
      fence_accumulators(da);
      epilogue(da, st, 0);
      wgmma_wait<0>();
      fence_accumulators(db);
      epilogue(db, st, 1);
    } else {
      wgmma_wait<0>();
      fence_accumulators(da);
      if (GROUP == 64 || (step & 1) != 0) epilogue(da, st, 0);
    }
  }

#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t m = m0 + rl + 8 * (e >> 1), n = n0 + 8 * j + 2 * (lane & 3) + (e & 1);
      if (m < M && n < w.rows) y[m * y_stride + n] = total[4 * j + e];
    }
#endif
}

template <int GROUP, ElemType SE, bool TILED>
void launch_wgmma(const __nv_bfloat16* xh, const float* xsum, std::int64_t M, const WeightView& w, float* y,
                  std::int64_t y_stride, cudaStream_t s, std::uint32_t leading = kLeadingBytes,
                  std::uint32_t stride = kStrideBytes) {
  raise_smem_limit<prefill_wgmma_kernel<GROUP, SE, TILED>>(static_cast<int>(kSmemBytes), "prefill_linear_wgmma");
  const dim3 grid(static_cast<unsigned int>(ceil_div(M, kBM)), static_cast<unsigned int>(ceil_div(w.rows, kBN)));
  launch_pdl(prefill_wgmma_kernel<GROUP, SE, TILED>, grid, dim3(kThreads), kSmemBytes, s, xh, xsum, M, w, y, y_stride,
             leading, stride);
}

template <int GROUP, bool TILED>
void dispatch_scale(const __nv_bfloat16* xh, const float* xsum, std::int64_t M, const WeightView& w, float* y,
                    std::int64_t ys, cudaStream_t s) {
  switch (w.dtype) {
    case ElemType::F32:
      launch_wgmma<GROUP, ElemType::F32, TILED>(xh, xsum, M, w, y, ys, s);
      break;
    case ElemType::F16:
      launch_wgmma<GROUP, ElemType::F16, TILED>(xh, xsum, M, w, y, ys, s);
      break;
    case ElemType::BF16:
      launch_wgmma<GROUP, ElemType::BF16, TILED>(xh, xsum, M, w, y, ys, s);
      break;
  }
}

template <int GROUP>
void dispatch_tiled(const __nv_bfloat16* xh, const float* xsum, std::int64_t M, const WeightView& w, float* y,
                    std::int64_t ys, cudaStream_t s) {
  if (w.tiled)
    dispatch_scale<GROUP, true>(xh, xsum, M, w, y, ys, s);
  else
    dispatch_scale<GROUP, false>(xh, xsum, M, w, y, ys, s);
}

}  // namespace

bool prefill_wgmma_takes(const WeightView& w) {
#if defined(TF_CUDA_WGMMA)
  if (w.bits != 4 || (w.group != 32 && w.group != 64 && w.group != 128)) return false;
  return w.cols % kBK == 0 && w.cols % w.group == 0;
#else
  (void)w;
  return false;  // built without sm_90a code
#endif
}

bool prefill_wgmma_on() {
  static const bool on = [] {
    if (env_int("TF_CUDA_PREFILL_WGMMA", 0) == 0) return false;
    int device = 0, major = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major == 9;
  }();
  return on;
}

void prefill_wgmma(const void* xh, const float* xsum, std::int64_t M, const WeightView& w, float* y,
                   std::int64_t y_stride, cudaStream_t s) {
  if (!prefill_wgmma_takes(w)) throw std::invalid_argument("prefill_wgmma: weight not on the wgmma GEMM");
  const auto* x = static_cast<const __nv_bfloat16*>(xh);
  switch (w.group) {
    case 32:
      dispatch_tiled<32>(x, xsum, M, w, y, y_stride, s);
      break;
    case 64:
      dispatch_tiled<64>(x, xsum, M, w, y, y_stride, s);
      break;
    default:
      dispatch_tiled<128>(x, xsum, M, w, y, y_stride, s);
      break;
  }
  check_launch("prefill_linear_wgmma");
}

}  // namespace tf::cuda
