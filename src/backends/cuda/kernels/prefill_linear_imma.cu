// The prefill GEMM on the integer tensor cores: y [M, N] = x [M, K] w^T for the weights the integer decode
// kernel takes (tiled 4-bit codes in groups of 32 or 64, K > 2048: tiled::imma_eligible).
//
// Why: the SIMT prefill GEMM (prefill_linear.cu) dequantizes the weights to float32 and runs float FMAs
// (8B shape at a 2k prompt: 1.74k tokens/s on the H200). Here the codes go to the tensor cores as they are
// (mma.m16n8k32, u8 codes against x's three s8 terms), the integer decode kernel's arithmetic.
//
// The bits are the decode kernels': x's terms are prepare_pair's (per 16 activation rows and pair of 64 k,
// in scratch), each group is added to its range's sum with group_step, every range from 0 in k order, and the
// ranges (ta.warps of them, a function of K alone) are added in range order, as decode_linear_imma.cu and
// decode_linear_imma_stream.cu add them. So a row prefilled here has the bits a decode or verify call gives it
// (the kernel test compares them bit for bit), and which path a row takes no longer changes its result for
// these weights.
//
// Work: a warp takes one weight tile (16 rows) and 32 activation rows (two 16-row chunks of terms: four
// 8-column B tiles) over the whole K; a block of 8 warps takes 8 consecutive tiles and the same 32 rows, so
// the terms are L1 hits for all but the first warp to load them. Blocks of the same tiles are consecutive
// along x, so a weight tile comes from DRAM about once and from L2 for the other row blocks. The per-group
// float32 epilogue (about six instructions a value) is most of the instructions. Measured and not kept
// (H200, 8B / 27B-class prefill at 2k tokens, this kernel 3,660 / 1,165 tok/s): the terms staged through
// shared memory by cp.async with ldmatrix reads and a block barrier a pair (3,457 / 1,130 one pair ahead,
// 3,107 / 1,011 two ahead); both chunks computed without a branch between them, each group's first mma on a
// zero accumulator (2,374 / 721).
#include <cuda_runtime.h>

#include "backends/cuda/kernels/decode_linear_imma_terms.cuh"

namespace tf::cuda::tiled {
namespace {

constexpr int kBlockWarps = 8;  // weight tiles a block
constexpr int kChunks = 2;      // 16-row chunks of activation rows a warp

// x's terms for pair blockIdx.x of the 16 activation rows of chunk blockIdx.y, at [chunk][pair].
template <bool G64>
__global__ void __launch_bounds__(32) prefill_prepare_kernel(const float* __restrict__ x, std::int64_t x_stride,
                                                             std::int64_t rows, std::int64_t pairs, WarpX* out) {
  pdl_launch();
  pdl_wait();  // x is the previous kernel's output, and the previous GEMM may still read `out`
  const std::int64_t chunk = blockIdx.y, p = blockIdx.x;
  const std::int64_t left = rows - chunk * kMaxDecodeRows;
  const int n = static_cast<int>(left < kMaxDecodeRows ? left : kMaxDecodeRows);
  prepare_pair<G64>(x + chunk * kMaxDecodeRows * x_stride, x_stride, n, p, static_cast<int>(threadIdx.x),
                    out[chunk * pairs + p]);
}

template <ElemType SE, bool G64>
__global__ void __launch_bounds__(kBlockWarps * 32) prefill_imma_kernel(TiledArgs ta, std::int64_t rows,
                                                                        const WarpX* __restrict__ terms) {
  pdl_launch();
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31), c = lane & 3;
  const std::int64_t tile = static_cast<std::int64_t>(blockIdx.y) * kBlockWarps + warp;
  const std::int64_t chunk0 = static_cast<std::int64_t>(blockIdx.x) * kChunks;
  const std::int64_t pairs = ta.pairs, chunks = ceil_div(rows, kMaxDecodeRows);
  __shared__ OutRef outs[kBlockWarps][1];
  TileRefs<1> tr;
  setup_tiles<1, SE>(ta, lane, tr, outs[warp], tile < ta.tiles ? tile : 0, lane);
  constexpr int kSB = SE == ElemType::F32 ? 4 : 2;
  constexpr int kGroups = G64 ? 1 : 2;
  // A warp past the last tile has nothing to do (no block barrier follows).
  if (tile >= ta.tiles) return;

  uint4 wq = ldg_stream(tr.codes[0]);  // pair 0's codes and scales; the next pair's load while this one runs
  ScaleBias<SE> sb[kGroups][2];
#pragma unroll
  for (int g = 0; g < kGroups; ++g) tr.load_scales(0, (G64 ? 0 : g) * kSB, sb[g][0], sb[g][1]);
  pdl_wait();  // the terms are the prepare kernel's output

  float acc[kChunks][2][4], total[kChunks][2][4];
#pragma unroll
  for (int h = 0; h < kChunks; ++h)
#pragma unroll
    for (int ct = 0; ct < 2; ++ct)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[h][ct][i] = total[h][ct][i] = 0.0f;

  // Range r ends where range r + 1 begins: K cut as the decode kernels cut it.
  auto range_end = [&](int r) { return range_first_pair(ta, ta.warps, static_cast<std::int64_t>(r) + 1); };
  int range = 0;
  std::int64_t fold_at = range_end(0);

  for (std::int64_t p = 0; p < pairs; ++p) {
    const uint4 w = wq;
    ScaleBias<SE> s[kGroups][2];
#pragma unroll
    for (int g = 0; g < kGroups; ++g) s[g][0] = sb[g][0], s[g][1] = sb[g][1];
    if (p + 1 < pairs) {
      wq = ldg_stream(tr.codes[0] + (p + 1) * 32);
#pragma unroll
      for (int g = 0; g < kGroups; ++g) tr.load_scales(0, (G64 ? p + 1 : 2 * (p + 1) + g) * kSB, sb[g][0], sb[g][1]);
    }
#pragma unroll
    for (int h = 0; h < kChunks; ++h) {
      const std::int64_t ch = chunk0 + h;
      if (ch >= chunks) break;  // the same for the whole warp
      const WarpX& src = terms[ch * pairs + p];
      const std::int64_t valid_rows = rows - ch * kMaxDecodeRows;
      // B fragments and each group's (step, quantized sum) of this lane's two C columns, as the blocked
      // decode kernel loads them (zero past the rows).
      unsigned bf[2][3][2][2];
      float2 ex[2][2][2];  // [C tile][group][column]
#pragma unroll
      for (int ct = 0; ct < 2; ++ct) load_b_block<G64>(src, ct, valid_rows, lane, bf[ct], ex[ct]);
      int d[2][3][4];
#pragma unroll
      for (int ct = 0; ct < 2; ++ct)
#pragma unroll
        for (int term = 0; term < 3; ++term)
#pragma unroll
          for (int i = 0; i < 4; ++i) d[ct][term][i] = 0;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        unsigned af[4];
        codes_to_a(u == 0 ? w.x : w.z, u == 0 ? w.y : w.w, af);  // rows r and r + 8
#pragma unroll
        for (int ct = 0; ct < 2; ++ct)
#pragma unroll
          for (int term = 0; term < 3; ++term) mma_u8s8(d[ct][term], af, bf[ct][term][u][0], bf[ct][term][u][1]);
        if (G64 && u == 0) continue;  // a group of 64 ends with the pair
        const int g = G64 ? 0 : u;
#pragma unroll
        for (int ct = 0; ct < 2; ++ct)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            acc[h][ct][i] = group_step(acc[h][ct][i], i < 2 ? s[g][0] : s[g][1], ex[ct][g][i & 1],
                                       group_whole(d[ct][0][i], d[ct][1][i], d[ct][2][i]));
            d[ct][0][i] = d[ct][1][i] = d[ct][2][i] = 0;
          }
      }
    }
    if (p + 1 == fold_at) {  // a range ends: into the total, in range order
#pragma unroll
      for (int h = 0; h < kChunks; ++h)
#pragma unroll
        for (int ct = 0; ct < 2; ++ct)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            total[h][ct][i] = range == 0 ? acc[h][ct][i] : __fadd_rn(total[h][ct][i], acc[h][ct][i]);
            acc[h][ct][i] = 0.0f;
          }
      ++range;
      fold_at = range_end(range);
    }
  }

  // Value i of C tile ct: weight row r + 8 (i / 2), activation row ct * 8 + 2c + i % 2 of the chunk.
  __syncwarp();  // outs
  const OutRef& o = outs[warp][0];
  const int r = lane >> 2;
#pragma unroll
  for (int h = 0; h < kChunks; ++h) {
    const std::int64_t base = (chunk0 + h) * kMaxDecodeRows;
#pragma unroll
    for (int ct = 0; ct < 2; ++ct)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::int64_t n = o.first_row + r + 8 * (i >> 1), m = base + ct * 8 + 2 * c + (i & 1);
        if (o.valid && n < o.rows && m < rows) o.out[m * o.out_stride + n] = total[h][ct][i];
      }
  }
}

template <ElemType SE>
void launch_gemm(const TiledArgs& ta, std::int64_t rows, const WarpX* terms, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned int>(ceil_div(ceil_div(rows, kMaxDecodeRows), kChunks)),
                  static_cast<unsigned int>(ceil_div(ta.tiles, kBlockWarps)));
  const dim3 block(kBlockWarps * 32);
  if (ta.a.seg[0].w.group == 64) launch_pdl(prefill_imma_kernel<SE, true>, grid, block, 0, s, ta, rows, terms);
  else launch_pdl(prefill_imma_kernel<SE, false>, grid, block, 0, s, ta, rows, terms);
}

}  // namespace
}  // namespace tf::cuda::tiled

namespace tf::cuda {

bool prefill_linear_imma_takes(const WeightView& w) {
  static const bool on = env_int("TF_CUDA_PREFILL_IMMA", 1) != 0;  // A/B runs
  return on && tiled::imma_eligible(w);
}

std::size_t prefill_imma_scratch_bytes(std::int64_t rows, std::int64_t cols) {
  return static_cast<std::size_t>(ceil_div(rows, kMaxDecodeRows)) * static_cast<std::size_t>(cols / 64) *
         sizeof(tiled::WarpX);
}

void prefill_linear_imma(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                         std::int64_t y_stride, void* scratch, std::size_t scratch_bytes, cudaStream_t s) {
  if (!prefill_linear_imma_takes(w) || scratch_bytes < prefill_imma_scratch_bytes(rows, w.cols))
    throw std::invalid_argument("prefill_linear_imma: weight not on the integer kernel, or scratch too small");
  DecodeLinearArgs a;
  a.x = x;
  a.x_stride = x_stride;
  a.seg[0] = {w, y, y_stride};
  a.segments = 1;
  const tiled::TiledArgs ta = tiled::tiled_args(a);
  auto* terms = static_cast<tiled::WarpX*>(scratch);
  const dim3 pgrid(static_cast<unsigned int>(ta.pairs), static_cast<unsigned int>(ceil_div(rows, kMaxDecodeRows)));
  if (w.group == 64) launch_pdl(tiled::prefill_prepare_kernel<true>, pgrid, dim3(32), 0, s, x, x_stride, rows, ta.pairs, terms);
  else launch_pdl(tiled::prefill_prepare_kernel<false>, pgrid, dim3(32), 0, s, x, x_stride, rows, ta.pairs, terms);
  check_launch("prefill_prepare");
  switch (w.dtype) {
    case ElemType::F32: tiled::launch_gemm<ElemType::F32>(ta, rows, terms, s); break;
    case ElemType::F16: tiled::launch_gemm<ElemType::F16>(ta, rows, terms, s); break;
    case ElemType::BF16: tiled::launch_gemm<ElemType::BF16>(ta, rows, terms, s); break;
  }
  check_launch("prefill_linear_imma");
}

}  // namespace tf::cuda
