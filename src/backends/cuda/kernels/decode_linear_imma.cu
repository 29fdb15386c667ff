// The decode matmul on integer tensor cores, for tiled affine 4-bit weights in groups of 32 or 64 and
// K > kMaxFusedNormCols (the 8B- and 27B-class shapes): y[r, n] = sum_k x[r, k] * (s[n, g] q[n, k] + b[n, g]).
//
// Why: the bf16 kernel (decode_linear_tiled.cu) spends most of its issue slots turning codes into bf16 and x
// into hi/lo bf16 pairs, once per block. Here the codes go into mma.m16n8k32 as bytes (two LOP3s per word
// of eight codes) and x is split into three int8 terms (decode_linear_imma_terms.cuh, which also says why
// the result is exact and row-invariant), once per launch where the caller gives scratch.
//
// This file: the prepare kernels, the blocked kernel (a block of 16 warps over K, T tiles, any 1-16 rows;
// calls of 9-16 rows and calls without scratch) and the dispatch; 1-8 rows with prepared x go to the
// streaming kernel (decode_linear_imma_stream.cu).
#include <algorithm>

#include "backends/cuda/kernels/decode_linear_imma_terms.cuh"

namespace tf::cuda::tiled {
namespace {
// Prepares x once per launch: block p writes pair p's WarpX to `out`.
template <bool G64>
__global__ void __launch_bounds__(32) imma_prepare_kernel(const float* __restrict__ x, std::int64_t x_stride, int rows,
                                                          WarpX* out) {
  pdl_launch();
  pdl_wait();  // x is the previous kernel's output, and the previous matmul may still read `out`
  prepare_pair<G64>(x, x_stride, rows, blockIdx.x, static_cast<int>(threadIdx.x), out[blockIdx.x]);
}
// The launch of it: the terms of `cols` columns of x (whole pairs of 64).
template <bool G64>
void prepare_terms(const float* x, std::int64_t x_stride, int rows, std::int64_t cols, void* out, cudaStream_t s) {
  launch_pdl(imma_prepare_kernel<G64>, dim3(static_cast<unsigned int>(cols / 64)), dim3(32), 0, s, x, x_stride, rows,
             static_cast<WarpX*>(out));
  check_launch("imma_prepare");
}

// The RMSNorm (with its residual add) and x's terms in one launch (rms_norm_imma_prepare): block p computes
// every row's sum of squares in norm_part_sum's order (each block the whole rows: rows <= kMaxImmaNormRows),
// forms pair p's normed values as rms_norm_parts_kernel does, writes pair p's part of the residual sum, and
// prepares the pair from shared memory: the bits of rms_norm then imma_prepare_kernel. The pair's sums
// (a + b) are kept in shared memory as the sum of squares loads them, and the norm weights are loaded
// before pdl_wait: one round trip to L2 fewer on every layer's critical path than reloading them.
template <bool G64>
__global__ void __launch_bounds__(32 * kNormParts) imma_norm_prepare_kernel(const float* __restrict__ a,
                                                                            const float* __restrict__ b,
                                                                            float* __restrict__ sum_out,
                                                                            const float* __restrict__ weight, int rows,
                                                                            std::int64_t cols, float eps, WarpX* out) {
  static_assert(kMaxImmaNormRows * 64 <= 32 * kNormParts, "a thread for every (row, k) of the pair");
  __shared__ float parts[kMaxImmaNormRows][kNormParts];
  __shared__ __align__(16) float xs[kMaxImmaNormRows][64];  // pair p's a + b
  __shared__ __align__(16) float xn[kMaxImmaNormRows][64];
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  const std::int64_t p = blockIdx.x, n4 = cols / 4;
  const int t = static_cast<int>(threadIdx.x), k = t & 63;
  pdl_launch();
  const float w = weight[p * 64 + k];  // a weight, never written: before the wait
  pdl_wait();  // a and b are earlier kernels' outputs, and the previous matmul may still read `out`
  for (int row = 0; row < rows; ++row) {
    const float4* ar = reinterpret_cast<const float4*>(a + row * cols);
    const float4* br = b != nullptr ? reinterpret_cast<const float4*>(b + row * cols) : nullptr;
    auto load = [&](std::int64_t i) {
      const float4 v = load_sum4(ar, br, i);
      if (i >= 16 * p && i < 16 * p + 16) reinterpret_cast<float4*>(xs[row])[i - 16 * p] = v;
      return v;
    };
    const float ss = norm_part_sum(load, warp, n4, lane);
    if (lane == 0) parts[row][warp] = ss;
  }
  __syncthreads();
  if (t < rows * 64) {
    const int row = t >> 6;
    const float v = xs[row][k];
    if (sum_out != nullptr) sum_out[row * cols + p * 64 + k] = v;
    const float inv = norm_inv_rms(parts[row], 1, cols, eps);
    xn[row][k] = __fmul_rn(__fmul_rn(v, inv), w);
  }
  __syncthreads();
  if (warp == 0) prepare_pair<G64>(&xn[0][0], 64, rows, 0, lane, out[p]);
}

template <ElemType SE, int RB, int T, bool G64>
__global__ void __launch_bounds__(kMaxWarps * 32) decode_linear_imma_kernel(TiledArgs ta) {
  const DecodeLinearArgs& a = ta.a;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const bool swiglu = a.swiglu_out != nullptr;
  const int W = ta.warps;
  constexpr int kSlots = T * RB * 4;

  extern __shared__ __align__(16) unsigned char smem[];
  // The per-warp x terms during the loop, the warps' partial sums after it (the same bytes).
  WarpX& wx = reinterpret_cast<WarpX*>(smem)[warp];
  float(*red)[kSlots][32] = reinterpret_cast<float(*)[kSlots][32]>(smem);

  __shared__ OutRef outs[T];
  TileRefs<T> tr;
  setup_tiles<T, SE>(ta, lane, tr, outs, blockIdx.x, static_cast<int>(threadIdx.x));
  constexpr int kSB = SE == ElemType::F32 ? 4 : 2;

  // This warp's K range in pairs (64 k).
  const std::int64_t p_begin = range_first_pair(ta, W, warp), p_end = range_first_pair(ta, W, warp + 1);

  uint4 wq[T];
  ScaleBias<SE> sb[T][2][2];  // [tile][group of the pair][row r / r + 8]
  auto fetch_tile = [&](int t, std::int64_t p) {
    if (p >= p_end) return;
    wq[t] = ldg_stream(tr.codes[t] + p * 32);
#pragma unroll
    for (int g = 0; g < (G64 ? 1 : 2); ++g) {
      tr.load_scales(t, (G64 ? p : 2 * p + g) * kSB, sb[t][g][0], sb[t][g][1]);
    }
  };
  constexpr int kAhead = 6;
  auto prefetch_w = [&](std::int64_t p) {
    if (p < p_end) tr.prefetch_codes(p, lane);
  };
  pdl_launch();
#pragma unroll
  for (int t = 0; t < T; ++t) fetch_tile(t, p_begin);
#pragma unroll
  for (int s = 1; s < kAhead; ++s) prefetch_w(p_begin + s);
  pdl_wait();

  // x's terms: prepared once per launch (when the caller gave scratch), or by each warp for its pairs.
  const WarpX* prepared = static_cast<const WarpX*>(ta.prepared);

  float acc[T][RB][4];
#pragma unroll
  for (int t = 0; t < T; ++t)
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[t][rb][i] = 0.0f;

  for (std::int64_t p = p_begin; p < p_end; ++p) {
    // 1. x's terms for this pair (prepare_pair).
    __syncwarp();
    if (prepared == nullptr) prepare_pair<G64>(a.x, a.x_stride, a.rows, p, lane, wx);
    __syncwarp();
    const WarpX& src = prepared != nullptr ? prepared[p] : wx;
    // 2. B fragments (slots 4c.. and 16 + 4c.. of row rb * 8 + lane / 4, each term) and, per group, the
    //    step and quantized sum of this lane's two C columns (rows rb * 8 + 2c, + 1); zero past the rows.
    unsigned bf[RB][3][2][2];
    float2 ex[RB][2][2];  // [rb][group][column]
#pragma unroll
    for (int rb = 0; rb < RB; ++rb) load_b_block<G64>(src, rb, a.rows, lane, bf[rb], ex[rb]);
    prefetch_w(p + kAhead);
    // 3. Tiles: codes to bytes, one mma chain per group and term, then D = D0 2^14 + D1 2^7 + D2 (exact)
    //    and acc += s * (D * step) + b * (quantized sum).
#pragma unroll
    for (int t = 0; t < T; ++t) {
      int d[RB][3][4];
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int term = 0; term < 3; ++term)
#pragma unroll
          for (int i = 0; i < 4; ++i) d[rb][term][i] = 0;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const unsigned w0 = u == 0 ? wq[t].x : wq[t].z;  // row r
        const unsigned w1 = u == 0 ? wq[t].y : wq[t].w;  // row r + 8
        unsigned af[4];
        codes_to_a(w0, w1, af);
#pragma unroll
        for (int rb = 0; rb < RB; ++rb)
#pragma unroll
          for (int term = 0; term < 3; ++term) mma_u8s8(d[rb][term], af, bf[rb][term][u][0], bf[rb][term][u][1]);
        if (G64 && u == 0) continue;  // a group of 64 ends with the pair
        const int g = G64 ? 0 : u;
        const ScaleBias<SE>& s0 = sb[t][g][0];
        const ScaleBias<SE>& s1 = sb[t][g][1];
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) {
          float* ac = acc[t][rb];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            ac[i] = group_step(ac[i], i < 2 ? s0 : s1, ex[rb][g][i & 1], group_whole(d[rb][0][i], d[rb][1][i], d[rb][2][i]));
            d[rb][0][i] = d[rb][1][i] = d[rb][2][i] = 0;
          }
        }
      }
      fetch_tile(t, p + 1);
    }
  }

  // The warps' partial sums, added in warp order; then each output adds its three term columns in order.
  __syncthreads();  // every warp is done with its x terms (the same bytes)
#pragma unroll
  for (int t = 0; t < T; ++t)
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int i = 0; i < 4; ++i) red[warp][(t * RB + rb) * 4 + i][lane] = acc[t][rb][i];
  __syncthreads();
  // Weight row rr of tile t, activation row `row`: register (rr / 8) * 2 + row % 2 of lane 4 (rr % 8) +
  // (row % 8) / 2, column block row / 8.
  auto value = [&](int t, int rr, int row) {
    const int slot = (t * RB + (row >> 3)) * 4 + (rr >> 3) * 2 + (row & 1);
    const int ln = ((rr & 7) << 2) | ((row & 7) >> 1);
    float v = red[0][slot][ln];
    for (int w = 1; w < W; ++w) v = __fadd_rn(v, red[w][slot][ln]);
    return v;
  };
  const int tiles_out = swiglu ? T / 2 : T;
  const int n_out = tiles_out * kTileRows * a.rows;
  for (int e = threadIdx.x; e < n_out; e += blockDim.x) {
    const int t = e / (kTileRows * a.rows), rem = e - t * kTileRows * a.rows;
    const int rr = rem / a.rows, row = rem - rr * a.rows;
    const OutRef& o = outs[t];
    const std::int64_t n = o.first_row + rr;
    if (!o.valid || n >= o.rows) continue;
    store_output<T>(a, outs, t, n, row, value(t, rr, row), swiglu ? value(t + T / 2, rr, row) : 0.0f);
  }
}

template <ElemType SE, int RB, int T, bool G64>
void launch(const TiledArgs& ta, cudaStream_t s) {
  constexpr int kSlots = T * RB * 4;
  const std::size_t red = static_cast<std::size_t>(ta.warps) * kSlots * 32 * sizeof(float);
  const std::size_t xq = static_cast<std::size_t>(ta.warps) * sizeof(WarpX);
  const std::size_t smem = red > xq ? red : xq;
  const std::size_t most = std::max<std::size_t>(kMaxWarps * sizeof(WarpX), kMaxWarps * kSlots * 32 * sizeof(float));
  raise_smem_limit<decode_linear_imma_kernel<SE, RB, T, G64>>(static_cast<int>(most), "decode_linear_imma");
  const auto blocks = static_cast<unsigned int>(ceil_div(ta.tiles, ta.a.swiglu_out != nullptr ? T / 2 : T));
  launch_pdl(decode_linear_imma_kernel<SE, RB, T, G64>, dim3(blocks), dim3(32 * ta.warps), smem, s, ta);
  check_launch("decode_linear_imma");
}

// Activation rows in blocks of 8 (RB: 1 for up to 8 rows, 2 for 9-16), each block three 8-column tiles
// of B (one a term). Tiles per block: four where the matrix has 256 tiles or more (x's terms shared by
// more tiles), else two (eight spill registers: the 27B shape ran 9% slower). Neither choice touches a row's arithmetic.
template <ElemType SE, bool G64>
void launch_shape(const TiledArgs& ta_in, cudaStream_t s) {
  TiledArgs ta = ta_in;
  ta.prepared = nullptr;
  // Where the caller gave room, x is prepared once for the launch rather than once per block (H200, 27B shape:
  // a 1-row step 10.8 -> ~10.4 ms, an 8-row verify 13.9 -> 10.4 ms).
  if (ta.a.x_prepared) {
    if (ta.a.imma_scratch == nullptr || ta.a.imma_scratch_bytes < imma_scratch_bytes(ta.cols))
      throw std::invalid_argument("decode_linear: x_prepared needs the scratch that holds the terms");
    ta.prepared = ta.a.imma_scratch;
  } else if (ta.a.imma_scratch != nullptr && ta.a.imma_scratch_bytes >= imma_scratch_bytes(ta.cols)) {
    prepare_terms<G64>(ta.a.x, ta.a.x_stride, ta.a.rows, ta.cols, ta.a.imma_scratch, s);
    ta.prepared = ta.a.imma_scratch;
  }
  bool prepared_next = false;
  if (imma_stream_takes(ta)) {
    prepared_next = decode_linear_imma_stream(ta, s);
  } else {
    static const int forced = env_int("TF_CUDA_IMMA_T", 0);  // A/B: 2 or 4 tiles per block everywhere
    if (ta.a.rows > 8) launch<SE, 2, 2, G64>(ta, s);
    else if (forced == 2) launch<SE, 1, 2, G64>(ta, s);
    else if (forced == 4) launch<SE, 1, 4, G64>(ta, s);
    else if (ta.tiles >= 256) launch<SE, 1, 4, G64>(ta, s);
    else launch<SE, 1, 2, G64>(ta, s);
  }
  // The next matmul's terms where the matmul did not write them: the prepare kernel on swiglu_out.
  if (ta.a.swiglu_prepare != nullptr && !prepared_next)
    prepare_terms<true>(ta.a.swiglu_out, ta.a.swiglu_stride, ta.a.rows, ta.a.seg[0].w.rows, ta.a.swiglu_prepare, s);
}

template <ElemType SE>
void launch_group(const TiledArgs& ta, cudaStream_t s) {
  if (ta.a.seg[0].w.group == 64) launch_shape<SE, true>(ta, s);
  else launch_shape<SE, false>(ta, s);
}

}  // namespace

std::size_t imma_scratch_bytes(std::int64_t cols) { return static_cast<std::size_t>(cols / 64) * sizeof(WarpX); }

}  // namespace tf::cuda::tiled

namespace tf::cuda {
namespace {
// Thread (tile, group, r): the four values of rows 16 tile + r and + 8 at that group (tiled_scale_index).
template <typename E>
__global__ void tile_scale_bias_kernel(const E* __restrict__ s, const E* __restrict__ b, std::int64_t rows,
                                       std::int64_t gpr, std::int64_t tiles, E* __restrict__ out) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= tiles * gpr * 8) return;
  const int r = static_cast<int>(i & 7);
  const std::int64_t g = (i >> 3) % gpr, tile = (i >> 3) / gpr;
  const std::int64_t n0 = tile * kTileRows + r, n1 = n0 + 8;
  const std::int64_t c0 = n0 < rows ? n0 : rows - 1, c1 = n1 < rows ? n1 : rows - 1;
  E* o = out + tiled_scale_index(tile, g, r, 0, gpr);
  o[0] = s[c0 * gpr + g];
  o[1] = b[c0 * gpr + g];
  o[2] = s[c1 * gpr + g];
  o[3] = b[c1 * gpr + g];
}
}  // namespace

std::size_t tiled_scale_bias_bytes(const WeightView& w) {
  if (!tiled::imma_eligible(w)) return 0;
  return static_cast<std::size_t>(tiled_rows(w.rows) / kTileRows * (w.cols / w.group) * kTiledScaleGroupElems) *
         elem_bytes(w.dtype);
}

void tile_scale_bias(const WeightView& w, void* out, cudaStream_t st) {
  if (tiled_scale_bias_bytes(w) == 0) throw std::invalid_argument("tile_scale_bias: not an integer-kernel weight");
  const std::int64_t gpr = w.cols / w.group, tiles = tiled_rows(w.rows) / kTileRows, n = tiles * gpr * 8;
  const dim3 grid(static_cast<unsigned int>(ceil_div(n, 256))), block(256);
  switch (w.dtype) {
    case ElemType::F32:
      tile_scale_bias_kernel<<<grid, block, 0, st>>>(static_cast<const float*>(w.scales), static_cast<const float*>(w.biases),
                                                     w.rows, gpr, tiles, static_cast<float*>(out));
      break;
    default:  // f16 and bf16: 16-bit values moved as they are
      tile_scale_bias_kernel<<<grid, block, 0, st>>>(static_cast<const unsigned short*>(w.scales),
                                                     static_cast<const unsigned short*>(w.biases), w.rows, gpr, tiles,
                                                     static_cast<unsigned short*>(out));
  }
  check_launch("tile_scale_bias");
}

std::size_t decode_linear_scratch_bytes(const WeightView& w) {
  return tiled::imma_eligible(w) ? tiled::imma_scratch_bytes(w.cols) : 0;
}

bool imma_norm_fusable(const WeightView& w, std::int64_t rows, std::int64_t cols) {
  static const bool on = env_int("TF_CUDA_IMMA_NORM", 1) != 0;  // A/B runs
  return on && tiled::imma_eligible(w) && w.cols == cols && rows >= 1 && rows <= kMaxImmaNormRows && cols % 64 == 0;
}

bool swiglu_prepare_fusable(const WeightView& gate, const WeightView& down, std::int64_t rows) {
  static const bool on = env_int("TF_CUDA_SWIGLU_PREPARE", 1) != 0;  // A/B runs
  // imma_eligible(down) makes its K, the gate's rows, whole pairs of 64.
  return on && tiled::imma_eligible(gate) && tiled::imma_eligible(down) && down.group == 64 && down.cols == gate.rows &&
         rows >= 1 && rows <= kMaxDecodeRows;
}

bool attention_prepare_fusable(const WeightView& w, int heads, int head_dim) {
  static const bool on = env_int("TF_CUDA_ATTN_PREPARE", 1) != 0;  // A/B runs
  return on && tiled::imma_eligible(w) && w.cols == static_cast<std::int64_t>(heads) * head_dim && head_dim % 64 == 0;
}

void rms_norm_imma_prepare(const float* a, const float* b, float* sum_out, const float* weight, int rows,
                           std::int64_t cols, float eps, int group, void* imma_scratch, std::size_t scratch_bytes,
                           cudaStream_t s) {
  auto aligned = [](const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; };
  if (rows < 1 || rows > kMaxImmaNormRows || cols % 64 != 0 || (group != 32 && group != 64))
    throw std::invalid_argument("rms_norm_imma_prepare: 1-4 rows, cols a multiple of 64, groups of 32 or 64");
  // The standalone norm takes norm_part_sum's order only on 16-byte aligned rows; so must this one.
  if (!aligned(a) || !aligned(b) || !aligned(sum_out) || !aligned(weight))
    throw std::invalid_argument("rms_norm_imma_prepare: rows must be 16-byte aligned");
  if (imma_scratch == nullptr || scratch_bytes < tiled::imma_scratch_bytes(cols))
    throw std::invalid_argument("rms_norm_imma_prepare: scratch too small");
  auto* out = static_cast<tiled::WarpX*>(imma_scratch);
  const dim3 grid(static_cast<unsigned int>(cols / 64)), block(32 * kNormParts);
  if (group == 64) launch_pdl(tiled::imma_norm_prepare_kernel<true>, grid, block, 0, s, a, b, sum_out, weight, rows, cols, eps, out);
  else launch_pdl(tiled::imma_norm_prepare_kernel<false>, grid, block, 0, s, a, b, sum_out, weight, rows, cols, eps, out);
  check_launch("rms_norm_imma_prepare");
}
}  // namespace tf::cuda

namespace tf::cuda::tiled {

bool imma_eligible(const WeightView& w) {
  static const bool on = env_int("TF_CUDA_IMMA", 1) != 0;
  return on && w.tiled && w.bits == 4 && (w.group == 32 || w.group == 64) && w.cols > kMaxFusedNormCols &&
         w.cols % 64 == 0;
}

void decode_linear_imma(const TiledArgs& ta, cudaStream_t s) {
  switch (ta.a.seg[0].w.dtype) {
    case ElemType::F32: return launch_group<ElemType::F32>(ta, s);
    case ElemType::F16: return launch_group<ElemType::F16>(ta, s);
    case ElemType::BF16: return launch_group<ElemType::BF16>(ta, s);
  }
}

}  // namespace tf::cuda::tiled
