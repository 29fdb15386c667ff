// Prefill attention on tensor cores, flash-style: block (query tile of 64 rows, head) walks the cache in tiles
// of BKV positions up to its last row's position, keeping a running max, sum and output per row (online
// softmax), so the score matrix never reaches device memory. Causal: row i (position start + i) sees positions
// <= start + i. GQA: head h reads kv head h / (heads / kv_heads) (the heads of a group run side by side and
// share the K/V tiles through L2).
//
// Arithmetic: the cache and activations are float32, and the goldens judge logits to 1e-4, so one tf32 pass
// (10 explicit mantissa bits) is too coarse. Each product runs as three tf32 mma.sync.m16n8k8 over a split
// x = big + small (big = tf32(x), small = tf32(x - big)): a_small*b_big + a_big*b_small + a_big*b_big, the
// dropped small*small term ~2^-22 of the product, close to float32 (~5e-7 relative error measured against
// float64 in the kernel test). Each warp owns 16 query rows. Scores of a key tile stay in the mma's
// accumulator registers and feed the P·V mma as its A operand directly: a thread holds keys 2t and 2t+1 of
// each 8-key group, so the P·V product takes its k index t as key 2t and t + 4 as key 2t + 1 (a sum over keys
// is free to permute them), and no shuffle is needed. Every sum runs in a fixed order (the mma's, then the
// tiles in position order; the row sums per thread, then over the quad once at the end): a block's result is
// a pure function of its inputs, whatever runs beside it (the prompt cache's chunk grid relies on that).
#include <cfloat>
#include <cstdint>

#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

constexpr int kWarps = 4, BQ = 16 * kWarps, kThreads = 32 * kWarps;

template <int D>
struct Tiles {
  static constexpr int BKV = D <= 128 ? 64 : 32;  // keys a tile (D 256: registers for the output rows)
  static constexpr int S = D + 4;                 // padded smem row stride: fragment loads hit 32 banks
  static constexpr int NT = BKV / 8;              // 8-key groups of a tile
  static constexpr int DT = D / 8;                // 8-dim groups of a head
  static constexpr std::size_t smem_bytes = static_cast<std::size_t>(BQ + 2 * BKV) * S * sizeof(float);
};

__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

struct Split {
  std::uint32_t big, small;
};
__device__ __forceinline__ Split split(float x) {
  const std::uint32_t big = to_tf32(x);
  return {big, to_tf32(__fsub_rn(x, __uint_as_float(big)))};
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// c += a * b in three tf32 passes, small terms first.
__device__ __forceinline__ void mma_3xtf32(float (&c)[4], const Split (&a)[4], Split b0, Split b1) {
  mma_tf32(c, a[0].small, a[1].small, a[2].small, a[3].small, b0.big, b1.big);
  mma_tf32(c, a[0].big, a[1].big, a[2].big, a[3].big, b0.small, b1.small);
  mma_tf32(c, a[0].big, a[1].big, a[2].big, a[3].big, b0.big, b1.big);
}

template <int D>
__global__ void __launch_bounds__(kThreads) prefill_attention_kernel(PrefillAttnArgs a) {
  using T = Tiles<D>;
  constexpr int BKV = T::BKV, S = T::S, NT = T::NT, DT = T::DT;
  pdl_launch();
  pdl_wait();
  extern __shared__ float4 smem4[];
  float* qs = reinterpret_cast<float*>(smem4);
  float* ks = qs + BQ * S;
  float* vs = ks + BKV * S;

  const int h = blockIdx.y;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ;  // the longest tiles first: they set the kernel's length
  const int kvh = h / (a.heads / a.kv_heads);
  const std::int64_t start = *a.start;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int width = a.heads * D;

  for (int i = tid; i < BQ * (D / 4); i += kThreads) {
    const int r = i / (D / 4), c = i % (D / 4);
    const int row = min(q0 + r, a.n_rows - 1);
    *reinterpret_cast<float4*>(qs + r * S + 4 * c) =
        *reinterpret_cast<const float4*>(a.q + static_cast<std::int64_t>(row) * width + h * D + 4 * c);
  }

  const int wr = warp * 16;  // the warp's first row in the tile
  const std::int64_t pos0 = start + q0 + wr + g, pos1 = pos0 + 8;
  const std::int64_t warp_last = start + min(q0 + wr + 15, a.n_rows - 1);
  const std::int64_t last_pos = start + min(q0 + BQ, a.n_rows) - 1;
  const float* K = a.k + static_cast<std::int64_t>(kvh) * a.cap * D;
  const float* V = a.v + static_cast<std::int64_t>(kvh) * a.cap * D;

  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
  float o[DT][4];
#pragma unroll
  for (int j = 0; j < DT; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;

  for (std::int64_t t0 = 0; t0 <= last_pos; t0 += BKV) {
    __syncthreads();  // the previous tile is consumed (and the q tile is written, on the first pass)
    const std::int64_t left = last_pos + 1 - t0;
    const int nk = static_cast<int>(left < BKV ? left : BKV);
    for (int i = tid; i < BKV * (D / 4); i += kThreads) {
      const int j = i / (D / 4), c = i % (D / 4);
      const std::int64_t p = t0 + min(j, nk - 1);  // past the last position: a copy of it, masked below
      *reinterpret_cast<float4*>(ks + j * S + 4 * c) = *reinterpret_cast<const float4*>(K + p * D + 4 * c);
      *reinterpret_cast<float4*>(vs + j * S + 4 * c) = *reinterpret_cast<const float4*>(V + p * D + 4 * c);
    }
    __syncthreads();
    if (t0 > warp_last) continue;  // every row of this warp precedes the tile

    // Scores: s[n] holds rows g (0, 1) and g + 8 (2, 3) at keys t0 + 8n + 2t (0, 2) and + 1 (1, 3).
    float s[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll 2
    for (int kk = 0; kk < DT; ++kk) {
      const float* qa = qs + (wr + g) * S + kk * 8 + t;
      const Split qf[4] = {split(qa[0]), split(qa[8 * S]), split(qa[4]), split(qa[8 * S + 4])};
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        const float* kb = ks + (n * 8 + g) * S + kk * 8 + t;
        mma_3xtf32(s[n], qf, split(kb[0]), split(kb[4]));
      }
    }

    float tmax0 = -INFINITY, tmax1 = -INFINITY;
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const std::int64_t kp = t0 + n * 8 + 2 * t + e;
        s[n][e] = kp <= pos0 ? __fmul_rn(s[n][e], a.scale) : -INFINITY;
        s[n][2 + e] = kp <= pos1 ? __fmul_rn(s[n][2 + e], a.scale) : -INFINITY;
        tmax0 = fmaxf(tmax0, s[n][e]);
        tmax1 = fmaxf(tmax1, s[n][2 + e]);
      }
    tmax0 = fmaxf(tmax0, __shfl_xor_sync(0xffffffffu, tmax0, 1));
    tmax0 = fmaxf(tmax0, __shfl_xor_sync(0xffffffffu, tmax0, 2));
    tmax1 = fmaxf(tmax1, __shfl_xor_sync(0xffffffffu, tmax1, 1));
    tmax1 = fmaxf(tmax1, __shfl_xor_sync(0xffffffffu, tmax1, 2));
    // A row whose position precedes the whole tile has tmax -inf here but a finite m (tile 0 holds position
    // 0, which every row sees), so its corrections are 1 and its probabilities 0.
    const float mn0 = fmaxf(m0, tmax0), mn1 = fmaxf(m1, tmax1);
    const float corr0 = expf(__fsub_rn(m0, mn0)), corr1 = expf(__fsub_rn(m1, mn1));
    m0 = mn0;
    m1 = mn1;
    float ps0 = 0.0f, ps1 = 0.0f;
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        s[n][e] = expf(__fsub_rn(s[n][e], mn0));
        s[n][2 + e] = expf(__fsub_rn(s[n][2 + e], mn1));
        ps0 = __fadd_rn(ps0, s[n][e]);
        ps1 = __fadd_rn(ps1, s[n][2 + e]);
      }
    l0 = __fadd_rn(__fmul_rn(l0, corr0), ps0);
    l1 = __fadd_rn(__fmul_rn(l1, corr1), ps1);
#pragma unroll
    for (int j = 0; j < DT; ++j) {
      o[j][0] = __fmul_rn(o[j][0], corr0);
      o[j][1] = __fmul_rn(o[j][1], corr0);
      o[j][2] = __fmul_rn(o[j][2], corr1);
      o[j][3] = __fmul_rn(o[j][3], corr1);
    }

    // O += P V over the tile's 8-key groups; k index t is key 2t, t + 4 is key 2t + 1 (see the top).
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      const Split pf[4] = {split(s[n][0]), split(s[n][2]), split(s[n][1]), split(s[n][3])};
      const float* vb = vs + (n * 8 + 2 * t) * S + g;
#pragma unroll
      for (int j = 0; j < DT; ++j) mma_3xtf32(o[j], pf, split(vb[j * 8]), split(vb[S + j * 8]));
    }
  }

  l0 = __fadd_rn(l0, __shfl_xor_sync(0xffffffffu, l0, 1));
  l0 = __fadd_rn(l0, __shfl_xor_sync(0xffffffffu, l0, 2));
  l1 = __fadd_rn(l1, __shfl_xor_sync(0xffffffffu, l1, 1));
  l1 = __fadd_rn(l1, __shfl_xor_sync(0xffffffffu, l1, 2));
  const int r0 = q0 + wr + g, r1 = r0 + 8;
#pragma unroll
  for (int j = 0; j < DT; ++j) {
    const int col = h * D + j * 8 + 2 * t;
    if (r0 < a.n_rows)
      *reinterpret_cast<float2*>(a.out + static_cast<std::int64_t>(r0) * width + col) =
          make_float2(__fdiv_rn(o[j][0], l0), __fdiv_rn(o[j][1], l0));
    if (r1 < a.n_rows)
      *reinterpret_cast<float2*>(a.out + static_cast<std::int64_t>(r1) * width + col) =
          make_float2(__fdiv_rn(o[j][2], l1), __fdiv_rn(o[j][3], l1));
  }
}

template <int D>
void launch(const PrefillAttnArgs& a, cudaStream_t s) {
  const std::size_t smem = Tiles<D>::smem_bytes;
  raise_smem_limit<prefill_attention_kernel<D>>(static_cast<int>(smem), "prefill_attention");
  const dim3 grid(static_cast<unsigned int>(ceil_div(a.n_rows, BQ)), static_cast<unsigned int>(a.heads));
  launch_pdl(prefill_attention_kernel<D>, grid, dim3(kThreads), smem, s, a);
  check_launch("prefill_attention");
}

}  // namespace

void prefill_attention(const PrefillAttnArgs& a, cudaStream_t s) {
  if (a.n_rows <= 0) return;
  if (a.kv_heads <= 0 || a.heads % a.kv_heads != 0) throw std::invalid_argument("prefill_attention: heads % kv_heads");
  switch (a.head_dim) {
    case 32:
      return launch<32>(a, s);
    case 64:
      return launch<64>(a, s);
    case 80:
      return launch<80>(a, s);
    case 96:
      return launch<96>(a, s);
    case 128:
      return launch<128>(a, s);
    case 256:
      return launch<256>(a, s);
    default:
      throw std::invalid_argument("prefill_attention: head_dim must be 32, 64, 80, 96, 128 or 256");
  }
}

}  // namespace tf::cuda
