// Each CUDA kernel against a float64 CPU reference: ||out - ref|| / ||ref|| on fresh random inputs, outputs
// poisoned (NaN) before every run so an unwritten element fails. Runs only on a machine with a GPU.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cuda/kernels/prefill_linear_wgmma.h"
#include "cuda_test_util.h"
#include "engine/keyed_noise.h"
#include "engine/sampler.h"

namespace tf::cuda::test {
namespace {

// The tensor-core decode matmul (tiled affine weights) carries x as two bf16 terms, 16 significant bits: a
// relative error of up to 2^-17 per element, about 5e-6 to 1e-5 on these random dot products.
constexpr double kTiledTol = 3e-5;

struct LinCase {
  int bits, group;
  ElemType dtype;
  std::int64_t n, k;
};

std::string name(const LinCase& c) {
  const char* t = c.dtype == ElemType::F32 ? "f32" : c.dtype == ElemType::F16 ? "f16" : "bf16";
  return "bits" + std::to_string(c.bits) + "_g" + std::to_string(c.group) + "_" + t + "_" + std::to_string(c.n) + "x" +
         std::to_string(c.k);
}

std::vector<LinCase> linear_cases() {
  std::vector<LinCase> v;
  for (int bits : {4, 8})
    for (int g : {32, 64, 128})
      for (ElemType t : {ElemType::F32, ElemType::F16, ElemType::BF16}) v.push_back({bits, g, t, 300, 1024});
  // 2-bit (Ternary Bonsai: groups of 128; also 64): untiled, on the SIMT decode kernel and the SIMT GEMM.
  for (int g : {64, 128})
    for (ElemType t : {ElemType::F32, ElemType::F16, ElemType::BF16}) v.push_back({2, g, t, 300, 1024});
  v.push_back({2, 128, ElemType::BF16, 200, 5120});  // 27B-class K
  v.push_back({4, 32, ElemType::F16, 1536, 576});  // SmolLM2 Q4_1 shapes
  v.push_back({8, 32, ElemType::F16, 576, 1536});
  v.push_back({4, 64, ElemType::BF16, 200, 14336});  // 8B down projection's K (integer tensor cores)
  v.push_back({4, 64, ElemType::F32, 100, 5120});     // 27B-class K, f32 scales (integer tensor cores)
  v.push_back({4, 32, ElemType::F16, 200, 4096});     // groups of 32 (integer tensor cores)
  v.push_back({4, 64, ElemType::BF16, 16400, 4096});  // 1,025 tiles: eight tiles a block (integer tensor cores)
  // The tiny qwen3_5 MLX checkpoints (hidden 128): K of two groups, and in_proj_a/b's 4 rows (a quarter of a
  // tile): the kernels match float64 here (session 24: 6.4e-6 over all cases).
  v.push_back({4, 64, ElemType::BF16, 4, 128});
  v.push_back({4, 64, ElemType::BF16, 256, 128});
  v.push_back({4, 64, ElemType::F32, 320, 128});
  v.push_back({8, 64, ElemType::BF16, 320, 128});
  v.push_back({4, 64, ElemType::BF16, 128, 256});
  for (ElemType t : {ElemType::F32, ElemType::F16, ElemType::BF16}) v.push_back({0, 0, t, 300, 1024});
  return v;
}

TEST(CudaKernels, DecodeLinearMatchesFloat64) {
  TF_NEED_GPU();
  double worst = 0.0;  // the tiled kernel carries x to 16 significant bits (two bf16 terms)
  for (const auto& c : linear_cases()) {
    const HostW hw = make_weight(c.n, c.k, c.bits, c.group, c.dtype);
    DevW dw(hw);
    for (int rows : {1, 2, 3, 5, 8, 9, 16}) {
      const auto x = random_floats(static_cast<std::size_t>(rows * c.k));
      DevBuf<float> dx(x), dy(static_cast<std::size_t>(rows * c.n));
      dy.poison();
      DecodeLinearArgs a = linear_args(dx.p, c.k, rows, dw.view, dy.p, c.n);
      decode_linear(a, nullptr);
      const auto got = dy.download();
      const double e = rel_err(got, ref_linear(x, rows, hw));
      EXPECT_LT(e, dw.view.tiled ? kTiledTol : kF32Tol) << name(c) << " rows " << rows;
      worst = std::max(worst, e);
      // With scratch, the integer kernel prepares x once per launch (and 1-8 rows stream): the same bits.
      if (const std::size_t scratch = decode_linear_scratch_bytes(dw.view); scratch > 0) {
        DevBuf<std::uint8_t> sb(scratch);
        DevBuf<float> dy2(static_cast<std::size_t>(rows * c.n));
        a.seg[0].out = dy2.p;
        a.imma_scratch = sb.p;
        a.imma_scratch_bytes = scratch;
        decode_linear(a, nullptr);
        const auto got2 = dy2.download();
        EXPECT_TRUE(same_bits(got.data(), got2.data(), got.size())) << name(c) << " rows " << rows << ": x prepared per launch";
      }
    }
  }
  std::printf("[ decode ] largest relative error against float64 over all cases: %.3g\n", worst);
}

TEST(CudaKernels, DecodeLinearSegmentsAndSwiglu) {
  TF_NEED_GPU();
  for (const std::int64_t k : {576, 4096}) {  // bf16 and integer tensor cores
  for (const bool with_scratch : {false, true}) {  // integer: the blocked kernel; the streaming one for 1-8 rows
  if (with_scratch && k == 576) continue;
  DevBuf<std::uint8_t> scratch(k / 64 * 4096);  // room for the x terms (decode_linear_scratch_bytes checks)
  auto give_scratch = [&](DecodeLinearArgs& a, const WeightView& w) {
    if (!with_scratch) return;
    a.imma_scratch = scratch.p;
    a.imma_scratch_bytes = decode_linear_scratch_bytes(w);
    ASSERT_LE(a.imma_scratch_bytes, scratch.n);
  };
  const HostW q = make_weight(576, k, 4, 32, ElemType::F16), kk = make_weight(192, k, 4, 32, ElemType::F16),
              v = make_weight(192, k, 4, 32, ElemType::F16);
  DevW dq(q), dk(kk), dv(v);
  for (int rows : {1, 4, 16}) {
    const auto x = random_floats(static_cast<std::size_t>(rows * k));
    DevBuf<float> dx(x), yq(static_cast<std::size_t>(rows * 576)), yk(static_cast<std::size_t>(rows * 192)),
        yv(static_cast<std::size_t>(rows * 192));
    yq.poison();
    yk.poison();
    yv.poison();
    DecodeLinearArgs a;
    a.x = dx.p;
    a.x_stride = k;
    a.rows = rows;
    a.segments = 3;
    a.seg[0] = {dq.view, yq.p, 576};
    a.seg[1] = {dk.view, yk.p, 192};
    a.seg[2] = {dv.view, yv.p, 192};
    give_scratch(a, dq.view);
    decode_linear(a, nullptr);
    EXPECT_LT(rel_err(yq.download(), ref_linear(x, rows, q)), kTiledTol) << rows;
    EXPECT_LT(rel_err(yk.download(), ref_linear(x, rows, kk)), kTiledTol) << rows;
    EXPECT_LT(rel_err(yv.download(), ref_linear(x, rows, v)), kTiledTol) << rows;
  }
  const HostW g = make_weight(1536, k, 4, 64, ElemType::BF16), u = make_weight(1536, k, 4, 64, ElemType::BF16);
  DevW dg(g), du(u);
  for (int rows : {1, 3, 16}) {
    const auto x = random_floats(static_cast<std::size_t>(rows * k));
    DevBuf<float> dx(x), yg(static_cast<std::size_t>(rows * 1536)), ys(static_cast<std::size_t>(rows * 1536));
    yg.poison();
    ys.poison();
    DecodeLinearArgs a;
    a.x = dx.p;
    a.x_stride = k;
    a.rows = rows;
    a.segments = 2;
    a.seg[0] = {dg.view, yg.p, 1536};
    a.seg[1] = {du.view, nullptr, 1536};
    a.swiglu_out = ys.p;
    a.swiglu_stride = 1536;
    give_scratch(a, dg.view);
    decode_linear(a, nullptr);
    const auto rg = ref_linear(x, rows, g), ru = ref_linear(x, rows, u);
    std::vector<double> rs(rg.size());
    for (std::size_t i = 0; i < rs.size(); ++i) rs[i] = rg[i] / (1.0 + std::exp(-rg[i])) * ru[i];
    EXPECT_LT(rel_err(yg.download(), rg), kTiledTol);
    EXPECT_LT(rel_err(ys.download(), rs), kTiledTol);
  }
  }
  }
}

TEST(CudaKernels, PrefillLinearMatchesFloat64) {
  TF_NEED_GPU();
  for (const auto& c : linear_cases()) {
    const HostW hw = make_weight(c.n, c.k, c.bits, c.group, c.dtype);
    DevW dw(hw);
    for (int rows : {17, 40, 200}) {
      const auto x = random_floats(static_cast<std::size_t>(rows * c.k));
      DevBuf<float> dx(x), dy(static_cast<std::size_t>(rows * c.n));
      dy.poison();
      prefill_linear(dx.p, c.k, rows, dw.view, dy.p, c.n, nullptr);
      EXPECT_LT(rel_err(dy.download(), ref_linear(x, rows, hw)), kF32Tol) << name(c) << " rows " << rows;
    }
  }
}

// The integer prefill GEMM runs the decode kernels' arithmetic in their order: every row has the bits a
// decode call gives it, whether that call holds 16 rows (the blocked kernel), 1 (the streaming one) or a
// partial chunk, and is within the tiled kernels' tolerance of float64.
TEST(CudaKernels, PrefillLinearImmaEqualsDecodeBitwise) {
  TF_NEED_GPU();
  int cases = 0;
  for (const auto& c : linear_cases()) {
    const HostW hw = make_weight(c.n, c.k, c.bits, c.group, c.dtype);
    DevW dw(hw);
    if (!prefill_linear_imma_takes(dw.view)) continue;
    ++cases;
    const std::size_t dscratch = decode_linear_scratch_bytes(dw.view);
    DevBuf<std::uint8_t> dsb(dscratch);
    for (int rows : {17, 40, 200}) {
      const auto x = random_floats(static_cast<std::size_t>(rows * c.k));
      DevBuf<float> dx(x), dy(static_cast<std::size_t>(rows * c.n));
      dy.poison();
      const std::size_t pscratch = prefill_imma_scratch_bytes(rows, c.k);
      DevBuf<std::uint8_t> psb(pscratch);
      prefill_linear_imma(dx.p, c.k, rows, dw.view, dy.p, c.n, psb.p, pscratch, nullptr);
      const auto got = dy.download();
      EXPECT_LT(rel_err(got, ref_linear(x, rows, hw)), kTiledTol) << name(c) << " rows " << rows;
      // Decode calls of the same rows: 16 at a time (the last one partial), with and without scratch, and
      // the first and last rows alone.
      auto decode_rows = [&](int first, int n, bool scratch) {
        DevBuf<float> out(static_cast<std::size_t>(n * c.n));
        DecodeLinearArgs a = linear_args(dx.p + static_cast<std::size_t>(first) * c.k, c.k, n, dw.view, out.p, c.n);
        if (scratch) {
          a.imma_scratch = dsb.p;
          a.imma_scratch_bytes = dscratch;
        }
        decode_linear(a, nullptr);
        return out.download();
      };
      for (int first = 0; first < rows; first += kMaxDecodeRows) {
        const int n = std::min(kMaxDecodeRows, rows - first);
        for (bool scratch : {false, true}) {
          const auto want = decode_rows(first, n, scratch);
          EXPECT_TRUE(same_bits(want.data(), got.data() + static_cast<std::size_t>(first) * c.n, want.size()))
              << name(c) << " rows " << rows << ": decode rows " << first << ".." << first + n - 1
              << (scratch ? " (scratch)" : "");
        }
      }
      for (int r : {0, rows - 1}) {
        const auto want = decode_rows(r, 1, true);
        EXPECT_TRUE(same_bits(want.data(), got.data() + static_cast<std::size_t>(r) * c.n, want.size()))
            << name(c) << " rows " << rows << ": row " << r << " alone";
      }
    }
  }
  EXPECT_GE(cases, 4);
}

// The bf16 prefill GEMM (codes as bf16 integers, scale and bias once a group), in both forms of x (the prompt
// precision): a second run gives the same bits (the prompt cache's chunk grid needs a chunk's result to be a
// pure function of its inputs), and a row's result depends on that row alone (the first 40 rows of a 200-row
// call equal a 40-row call's, bit for bit).
// TwoTerms (--precision full): x to 16 significant bits, within the tiled kernels' tolerance of float64.
// Bf16 (the default): x rounded once to bf16. Its bound is derived, not picked:
//  - the function: within the same float32 tolerance of float64's sum_k w x~ (x~ = bf16(x), rounded to nearest
//    even on the host), so the kernel computes exactly "x rounded once, exact weights" up to accumulation;
//  - the rounding: |x~ - x| <= 2^-8 |x| (8 significant bits), so every output is within
//    2^-8 A + K 2^-23 A of float64's exact sum_k w x, A = sum_k |w x| (the second term: float32 accumulation
//    of K terms, each add off by at most 2^-23 of a partial sum <= A, whatever rounding the tensor cores use).
//    Its norm-wise error is printed beside the expectation for rounding errors of random sign:
//    sqrt(sum_n sum_k w^2 x^2 E[(dx/x)^2]) / ||y||, with E[(dx/x)^2] = 2^-16 / 3 * E[1/m^2] (m the significand,
//    ~0.541 for log-uniform m): 0.42 * 2^-8 = 1.66e-3 of the products' RMS.
std::vector<double> ref_linear_bf16_x(const std::vector<float>& x, std::int64_t rows, const HostW& w) {
  std::vector<float> xr(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xr[i] = bf16_to_f32(f32_to_bf16(x[i]));
  return ref_linear(xr, rows, w);
}

// With `wgmma`, the bf16 form on the sm_90a kernel (prefill_linear_wgmma.cu) instead: the same checks, the
// same bound.
void check_prefill_mma(PrefillX form, bool wgmma = false) {
  int cases = 0;
  double worst = 0.0, worst_rounded = 0.0, worst_share = 0.0, worst_predicted = 0.0;
  for (const auto& c : linear_cases()) {
    const HostW hw = make_weight(c.n, c.k, c.bits, c.group, c.dtype);
    DevW dw(hw);
    if (!prefill_linear_mma_takes(dw.view) || (wgmma && !prefill_wgmma_takes(dw.view))) continue;
    ++cases;
    const auto x = random_floats(static_cast<std::size_t>(200 * c.k));
    DevBuf<float> dx(x);
    std::vector<float> first40;
    for (int rows : {40, 17, 200}) {
      DevBuf<float> dy(static_cast<std::size_t>(rows * c.n)), dy2(static_cast<std::size_t>(rows * c.n));
      dy.poison();
      dy2.poison();
      const std::size_t scratch = prefill_mma_scratch_bytes(rows, c.k);
      DevBuf<std::uint8_t> sb(scratch);
      for (float* y : {dy.p, dy2.p}) {
        if (wgmma)
          prefill_linear_wgmma(dx.p, c.k, rows, dw.view, y, c.n, sb.p, scratch, nullptr);
        else
          prefill_linear_mma(dx.p, c.k, rows, dw.view, y, c.n, sb.p, scratch, form, nullptr);
      }
      const auto got = dy.download(), again = dy2.download();
      const std::vector<float> xr(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(rows) * c.k);
      const auto ref = ref_linear(xr, rows, hw);
      const double e = rel_err(got, ref);
      worst = std::max(worst, e);
      if (form == PrefillX::TwoTerms) {
        EXPECT_LT(e, kTiledTol) << name(c) << " rows " << rows;
      } else {
        // The first `checked` rows (all but in the largest cases, whose host references take seconds a row).
        const std::int64_t checked = std::min<std::int64_t>(rows, std::max<std::int64_t>(4, 400000000 / (c.n * c.k)));
        const std::vector<float> got_c(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(checked * c.n));
        const std::vector<float> x_c(xr.begin(), xr.begin() + static_cast<std::ptrdiff_t>(checked * c.k));
        const double er = rel_err(got_c, ref_linear_bf16_x(x_c, checked, hw));
        worst_rounded = std::max(worst_rounded, er);
        EXPECT_LT(er, kTiledTol) << name(c) << " rows " << rows << ": against float64 of the rounded x";
        // The element-wise bound, and the error of random sign it should be near.
        double share = 0.0, num = 0.0, den = 0.0;
        std::int64_t over = 0;
        for (std::int64_t r = 0; r < checked; ++r)
          for (std::int64_t n = 0; n < c.n; ++n) {
            double a = 0.0, sq = 0.0;
            for (std::int64_t k = 0; k < c.k; ++k) {
              const double p = static_cast<double>(xr[static_cast<std::size_t>(r * c.k + k)]) *
                               hw.values[static_cast<std::size_t>(n * c.k + k)];
              a += std::abs(p);
              sq += p * p;
            }
            const auto o = static_cast<std::size_t>(r * c.n + n);
            const double d = std::abs(static_cast<double>(got[o]) - ref[o]);
            const double bound = (std::ldexp(1.0, -8) + static_cast<double>(c.k) * std::ldexp(1.0, -23)) * a;
            if (!(d <= bound)) ++over;
            share = std::max(share, d / std::max(a, 1e-300));
            num += sq * 0.541 * std::ldexp(1.0, -16) / 3.0;
            den += ref[o] * ref[o];
          }
        EXPECT_EQ(over, 0) << name(c) << " rows " << rows << ": outputs past 2^-8 A + K 2^-23 A";
        worst_share = std::max(worst_share, share);
        worst_predicted = std::max(worst_predicted, std::sqrt(num / den));
      }
      EXPECT_TRUE(same_bits(got.data(), again.data(), got.size())) << name(c) << " rows " << rows << ": second run";
      if (rows == 40) {
        first40 = got;
      } else if (rows > 40) {
        EXPECT_TRUE(same_bits(first40.data(), got.data(), first40.size())) << name(c) << " rows " << rows << ": first 40";
      }
    }
  }
  if (form == PrefillX::TwoTerms)
    std::printf("[ mma ] x as two terms: %d weight formats, worst relative error %.3g\n", cases, worst);
  else
    std::printf(
        "[ %s ] x as bf16: %d weight formats, worst relative error %.3g against float64 (random-sign "
        "expectation at most %.3g), %.3g against float64 of the rounded x; worst |err| / sum|w x| %.3g "
        "(bound 2^-8 = %.3g plus K 2^-23)\n",
        wgmma ? "wgmma" : "mma", cases, worst, worst_predicted, worst_rounded, worst_share, std::ldexp(1.0, -8));
  EXPECT_GE(cases, wgmma ? 15 : 20);  // wgmma: the 4-bit formats
}

TEST(CudaKernels, PrefillLinearMmaTwoTermsMatchesFloat64AndRepeats) {
  TF_NEED_GPU();
  check_prefill_mma(PrefillX::TwoTerms);
}

TEST(CudaKernels, PrefillLinearMmaBf16WithinItsBoundAndRepeats) {
  TF_NEED_GPU();
  check_prefill_mma(PrefillX::Bf16);
}

TEST(CudaKernels, PrefillLinearWgmmaBf16WithinItsBoundAndRepeats) {
  TF_NEED_GPU();
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major != 9)
    GTEST_SKIP() << "wgmma needs compute capability 9.x";
  if (!prefill_wgmma_takes(WeightView{nullptr, nullptr, nullptr, 4, 64, ElemType::BF16, 64, 64}))
    GTEST_SKIP() << "built without sm_90a code (CMAKE_CUDA_ARCHITECTURES=90a builds it)";
  check_prefill_mma(PrefillX::Bf16, true);
}

TEST(CudaKernels, RmsNormWithResidual) {
  TF_NEED_GPU();
  for (std::int64_t cols : {576, 4096, 5120}) {
    const std::int64_t rows = 7;
    const auto a = random_floats(static_cast<std::size_t>(rows * cols)), b = random_floats(static_cast<std::size_t>(rows * cols)),
               w = random_floats(static_cast<std::size_t>(cols), 0.5f, 1.5f);
    DevBuf<float> da(a), db(b), dw(w), sum(a.size()), out(a.size()), out2(a.size());
    sum.poison();
    out.poison();
    out2.poison();
    rms_norm(da.p, db.p, sum.p, out.p, dw.p, rows, cols, 1e-5f, nullptr);
    rms_norm(da.p, nullptr, nullptr, out2.p, dw.p, rows, cols, 1e-5f, nullptr);
    std::vector<double> rsum(a.size()), rout(a.size()), rout2(a.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      double ss = 0.0, ss2 = 0.0;
      for (std::int64_t i = 0; i < cols; ++i) {
        const auto j = static_cast<std::size_t>(r * cols + i);
        rsum[j] = static_cast<double>(a[j]) + b[j];
        ss += rsum[j] * rsum[j];
        ss2 += static_cast<double>(a[j]) * a[j];
      }
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(cols) + 1e-5), inv2 = 1.0 / std::sqrt(ss2 / static_cast<double>(cols) + 1e-5);
      for (std::int64_t i = 0; i < cols; ++i) {
        const auto j = static_cast<std::size_t>(r * cols + i);
        rout[j] = rsum[j] * inv * w[static_cast<std::size_t>(i)];
        rout2[j] = a[j] * inv2 * w[static_cast<std::size_t>(i)];
      }
    }
    EXPECT_LT(rel_err(sum.download(), rsum), kF32Tol);
    EXPECT_LT(rel_err(out.download(), rout), kF32Tol);
    EXPECT_LT(rel_err(out2.download(), rout2), kF32Tol);
  }
}

TEST(CudaKernels, AddAndSwiglu) {
  TF_NEED_GPU();
  const std::size_t n = 100003;
  const auto a = random_floats(n, -6.0f, 6.0f), b = random_floats(n);
  DevBuf<float> da(a), db(b), s(n), g(n);
  s.poison();
  g.poison();
  add(da.p, db.p, s.p, static_cast<std::int64_t>(n), nullptr);
  swiglu(da.p, db.p, g.p, static_cast<std::int64_t>(n), nullptr);
  std::vector<double> rs(n), rg(n);
  for (std::size_t i = 0; i < n; ++i) {
    rs[i] = static_cast<double>(a[i]) + b[i];
    rg[i] = a[i] / (1.0 + std::exp(-static_cast<double>(a[i]))) * b[i];
  }
  EXPECT_LT(rel_err(s.download(), rs), 1e-7);
  EXPECT_LT(rel_err(g.download(), rg), 1e-6);
}

TEST(CudaKernels, EmbedQuantizedAndDense) {
  TF_NEED_GPU();
  struct C {
    int bits, group;
    ElemType t;
  };
  for (const C& c : {C{4, 64, ElemType::F16}, C{8, 32, ElemType::F32}, C{4, 32, ElemType::BF16},
                     C{2, 64, ElemType::BF16}, C{0, 0, ElemType::BF16}, C{0, 0, ElemType::F32}}) {
    const HostW hw = make_weight(1000, 576, c.bits, c.group, c.t);
    DevW dw(hw);
    std::vector<std::int32_t> ids(33);
    for (auto& id : ids) id = static_cast<std::int32_t>(rng()() % 1000);
    DevBuf<std::int32_t> dids(ids);
    DevBuf<float> out(ids.size() * 576);
    out.poison();
    embed(dw.view, dids.p, static_cast<std::int64_t>(ids.size()), out.p, nullptr);
    std::vector<double> ref(ids.size() * 576);
    for (std::size_t r = 0; r < ids.size(); ++r)
      for (std::size_t k = 0; k < 576; ++k) ref[r * 576 + k] = hw.values[static_cast<std::size_t>(ids[r]) * 576 + k];
    EXPECT_LT(rel_err(out.download(), ref), 1e-6) << c.bits;
  }
}

TEST(CudaKernels, GumbelNoiseBitExact) {
  TF_NEED_GPU();
  const std::int64_t n = 200000;
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(n));
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng()() % 300000);
  for (std::uint64_t seed : {0ull, 42ull, 0xdeadbeefcafef00dull})
    for (std::int64_t pos : {std::int64_t{0}, std::int64_t{17}, std::int64_t{123456789}}) {
      DevBuf<std::int32_t> dt(tokens);
      DevBuf<double> out(tokens.size());
      gumbel_noise_device(seed, pos, dt.p, n, out.p, nullptr);
      const auto got = out.download();
      std::size_t bad = 0;
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        const double want = tf::gumbel_noise(seed, pos, tokens[i]);
        if (std::memcmp(&want, &got[i], 8) != 0) ++bad;
      }
      EXPECT_EQ(bad, 0u) << "seed " << seed << " pos " << pos;
    }
}

// sample_rows against the host's sample_token: every setting of a launch in one call (one row each, greedy
// rows among them), on rows shaped like a model's (a normal body, peaks with ties at the top, a NaN, -inf,
// zeros of both signs) and on degenerate ones (every value equal; every value a zero), vocabularies from a
// small one to the 8B shape's. Every draw must be the host's, bit for bit (sampling_math.h is shared).
TEST(CudaKernels, SamplingMatchesTheCpuSampler) {
  TF_NEED_GPU();
  struct P {
    float t;
    int k;
    float p, minp;
  };
  const std::vector<P> params = {{0.0f, 0, 1.0f, 0.0f},   {1.0f, 0, 1.0f, 0.0f},   {0.7f, 40, 1.0f, 0.0f},
                                 {0.8f, 0, 0.95f, 0.0f},  {1.0f, 0, 1.0f, 0.05f},  {0.6f, 20, 0.95f, 0.02f},
                                 {1.3f, 100, 0.5f, 0.0f}, {0.9f, 0, 0.8f, 0.1f},   {2.0f, 1, 1.0f, 0.0f},
                                 {0.3f, 0, 0.999f, 0.0f}, {1.0f, 0, 0.95f, 1e-14f}, {0.8f, 5000, 0.95f, 0.0f}};
  int mismatches = 0, total = 0;
  std::normal_distribution<float> body(0.0f, 3.0f);
  for (std::int64_t vocab : {1000, 49152, 128256}) {
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<float> row(static_cast<std::size_t>(vocab));
      for (auto& x : row) x = body(rng());
      for (int i = 0; i < 20; ++i) row[rng()() % row.size()] = 14.0f + static_cast<float>(i % 5);
      row[rng()() % row.size()] = std::numeric_limits<float>::quiet_NaN();
      row[rng()() % row.size()] = -std::numeric_limits<float>::infinity();
      row[rng()() % row.size()] = -0.0f;
      if (trial == 6) std::fill(row.begin(), row.end(), 1.5f);
      if (trial == 7)
        for (auto& x : row) x = rng()() % 2 ? 0.0f : -0.0f;
      std::vector<float> logits;
      std::vector<SampleArgs> args;
      for (const auto& p : params) {
        logits.insert(logits.end(), row.begin(), row.end());
        SampleArgs a;
        a.temperature = p.t;
        a.top_k = p.k;
        a.top_p = p.p;
        a.min_p = p.minp;
        a.seed = rng()();
        a.position = static_cast<std::int64_t>(rng()() % 100000);
        args.push_back(a);
      }
      DevBuf<float> dl(logits);
      std::vector<std::int32_t> got(args.size(), -1);
      sample_tokens(dl.p, static_cast<std::int64_t>(args.size()), vocab, args.data(), got.data(), nullptr);
      for (std::size_t r = 0; r < args.size(); ++r) {
        const auto& a = args[r];
        tf::SamplingParams sp;
        sp.temperature = a.temperature;
        sp.top_k = a.top_k;
        sp.top_p = a.top_p;
        sp.min_p = a.min_p;
        const std::int32_t want = tf::sample_token(row, sp, a.seed, a.position);
        ++total;
        if (got[r] != want) {
          ++mismatches;
          ADD_FAILURE() << "vocab " << vocab << " trial " << trial << " T " << a.temperature << " k " << a.top_k
                        << " p " << a.top_p << " minp " << a.min_p << ": gpu " << got[r] << " cpu " << want;
        }
      }
    }
  }
  std::printf("[ sampling ] %d of %d draws identical to the CPU sampler\n", total - mismatches, total);
}

// greedy_rows (many blocks a row, the slices' keys reduced by the last block) against greedy_token: ties of
// the maximum at several places (the first wins), NaNs (never win; a NaN at 0 gives 0), all -inf, a maximum
// of zero held by both -0 and +0 (the first of either, as greedy_token's == finds it), and NaN everywhere
// but a few entries. Several rows at once, vocabularies from one slice to the 27B shape's, and one scratch
// reused by every launch.
TEST(CudaKernels, GreedyRowsMatchesGreedyToken) {
  TF_NEED_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::int64_t kMaxRows = 4;
  DevBuf<char> scratch(greedy_rows_scratch_bytes(kMaxRows));
  ck(cudaMemset(scratch.p, 0, scratch.n), "memset");
  int checked = 0;
  for (std::int64_t vocab : {1, 7, 1000, 2049, 49152, 128256, 248320}) {
    for (int kind = 0; kind < 6; ++kind) {
      const std::int64_t rows = 1 + (kind + vocab) % kMaxRows;
      std::vector<float> all;
      for (std::int64_t r = 0; r < rows; ++r) {
        auto v = random_floats(static_cast<std::size_t>(vocab), -8.0f, 8.0f);
        auto at = [&] { return static_cast<std::size_t>(rng()() % static_cast<std::uint64_t>(vocab)); };
        if (kind == 1)  // ties of the maximum
          for (int i = 0; i < 5; ++i) v[at()] = 9.0f;
        if (kind == 2)  // NaNs; row 0's at index 0
          for (int i = 0; i < 5; ++i) v[r == 0 ? 0 : at()] = nan;
        if (kind == 3) std::fill(v.begin(), v.end(), -inf);
        if (kind == 4) {  // the maximum is zero, of both signs
          std::fill(v.begin(), v.end(), -1.0f);
          v[at()] = -0.0f;
          v[at()] = 0.0f;
          v[at()] = -0.0f;
        }
        if (kind == 5) {  // NaN everywhere but a few entries
          std::fill(v.begin(), v.end(), nan);
          v[at()] = -3.0f;
          v[at()] = -2.0f;
        }
        all.insert(all.end(), v.begin(), v.end());
      }
      DevBuf<float> dl(all);
      DevBuf<std::int32_t> out(static_cast<std::size_t>(rows));
      out.poison();
      greedy_rows(dl.p, rows, vocab, out.p, scratch.p, nullptr);
      const auto got = out.download();
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::span<const float> row(all.data() + r * vocab, static_cast<std::size_t>(vocab));
        EXPECT_EQ(got[static_cast<std::size_t>(r)], tf::greedy_token(row))
            << "vocab " << vocab << " kind " << kind << " row " << r;
        ++checked;
      }
    }
  }
  // The counters are zero again (the keys are scratch).
  const auto left = scratch.download();
  for (std::int64_t r = 0; r < kMaxRows; ++r) {
    unsigned counter = 0;
    std::memcpy(&counter, left.data() + r * static_cast<std::int64_t>(greedy_rows_scratch_bytes(1)), sizeof(counter));
    EXPECT_EQ(counter, 0u) << "row " << r;
  }
  std::printf("[ greedy ] %d rows identical to greedy_token\n", checked);
}

}  // namespace
}  // namespace tf::cuda::test

namespace tf::cuda::test {
namespace {

// decode_linear with the RMSNorm (and residual add) fused into its prologue, against float64, and its rows
// bit-identical alone and in larger calls.
// A norm fused into the matmul and the same norm launched on its own give the same bits (the fusion rule
// picks one or the other by width, and a row must not change with it): tiled, untiled affine and dense.
TEST(CudaKernels, FusedNormEqualsStandaloneNormBitwise) {
  TF_NEED_GPU();
  struct Case {
    std::int64_t k, n;
    int bits, group;
    ElemType dt;
  };
  for (const Case c : {Case{576, 320, 4, 32, ElemType::F16}, Case{5120, 256, 4, 64, ElemType::BF16},
                       Case{4096, 192, 8, 64, ElemType::BF16}, Case{1568, 200, 4, 32, ElemType::BF16},
                       Case{576, 96, 0, 0, ElemType::BF16}, Case{2048, 160, 2, 128, ElemType::BF16},
                       Case{576, 96, 2, 64, ElemType::F16}}) {
    const HostW hw = make_weight(c.n, c.k, c.bits, c.group, c.dt);
    DevW dw(hw);
    const auto nw = random_floats(static_cast<std::size_t>(c.k), 0.5f, 1.5f);
    DevBuf<float> dnw(nw);
    for (int rows : {1, 2, 8, 16}) {
      const auto a = random_floats(static_cast<std::size_t>(rows * c.k), -2.0f, 2.0f), b = random_floats(a.size());
      DevBuf<float> da(a), db(b), sum(a.size()), sum2(a.size()), h(a.size()), y(static_cast<std::size_t>(rows * c.n)),
          y2(static_cast<std::size_t>(rows * c.n));
      DecodeLinearArgs args;
      args.x = da.p;
      args.x_stride = c.k;
      args.rows = rows;
      args.seg[0] = {dw.view, y.p, c.n};
      args.norm_w = dnw.p;
      args.norm_b = db.p;
      args.norm_sum = sum.p;
      args.norm_eps = 1e-5f;
      const bool fusable = decode_linear_takes_norm(dw.view);
      if (!fusable) continue;
      decode_linear(args, nullptr);
      rms_norm(da.p, db.p, sum2.p, h.p, dnw.p, rows, c.k, 1e-5f, nullptr);
      DecodeLinearArgs plain;
      plain.x = h.p;
      plain.x_stride = c.k;
      plain.rows = rows;
      plain.seg[0] = {dw.view, y2.p, c.n};
      decode_linear(plain, nullptr);
      const auto s1 = sum.download(), s2 = sum2.download(), o1 = y.download(), o2 = y2.download();
      EXPECT_TRUE(same_bits(s1.data(), s2.data(), s1.size())) << "residual sum, k " << c.k << " rows " << rows;
      EXPECT_TRUE(same_bits(o1.data(), o2.data(), o1.size()))
          << "fused vs standalone norm, k " << c.k << " bits " << c.bits << " rows " << rows;
    }
  }
}

// The norm that writes the integer matmul's x terms itself (rms_norm_imma_prepare, then decode_linear with
// x_prepared) gives the bits of rms_norm then decode_linear: outputs and the residual sum, with and without
// the residual, 1-4 rows, groups of 64 and 32, a swiglu pair.
TEST(CudaKernels, NormWritingXTermsEqualsNormThenMatmul) {
  TF_NEED_GPU();
  struct Case {
    std::int64_t k, n;
    int group;
    ElemType dt;
  };
  for (const Case c : {Case{5120, 384, 64, ElemType::BF16}, Case{4096, 200, 32, ElemType::F16}}) {
    const HostW hw = make_weight(c.n, c.k, 4, c.group, c.dt), hu = make_weight(c.n, c.k, 4, c.group, c.dt);
    DevW dw(hw), du(hu);
    ASSERT_TRUE(imma_norm_fusable(dw.view, 1, c.k));
    EXPECT_FALSE(imma_norm_fusable(dw.view, kMaxImmaNormRows + 1, c.k));
    const auto nw = random_floats(static_cast<std::size_t>(c.k), 0.5f, 1.5f);
    DevBuf<float> dnw(nw);
    const std::size_t scratch = decode_linear_scratch_bytes(dw.view);
    DevBuf<std::uint8_t> sc1(scratch), sc2(scratch);
    for (int rows = 1; rows <= kMaxImmaNormRows; ++rows)
      for (bool residual : {false, true})
        for (bool swiglu : {false, true}) {
          const auto a = random_floats(static_cast<std::size_t>(rows * c.k), -2.0f, 2.0f), b = random_floats(a.size());
          const auto yn = static_cast<std::size_t>(rows * c.n);
          DevBuf<float> da(a), db(b), sum(a.size()), sum2(a.size()), h(a.size()), y(yn), y2(yn), s1(yn), s2(yn);
          sum.poison();
          sum2.poison();
          y.poison();
          y2.poison();
          s1.poison();
          s2.poison();
          const float* bp = residual ? db.p : nullptr;
          rms_norm(da.p, bp, residual ? sum.p : nullptr, h.p, dnw.p, rows, c.k, 1e-5f, nullptr);
          DecodeLinearArgs plain;
          plain.x = h.p;
          plain.x_stride = c.k;
          plain.rows = rows;
          plain.seg[0] = {dw.view, y.p, c.n};
          if (swiglu) {
            plain.segments = 2;
            plain.seg[1] = {du.view, nullptr, c.n};
            plain.swiglu_out = s1.p;
            plain.swiglu_stride = c.n;
          }
          plain.imma_scratch = sc1.p;
          plain.imma_scratch_bytes = scratch;
          decode_linear(plain, nullptr);
          rms_norm_imma_prepare(da.p, bp, residual ? sum2.p : nullptr, dnw.p, rows, c.k, 1e-5f, c.group, sc2.p, scratch,
                                nullptr);
          DecodeLinearArgs fused = plain;
          fused.x = nullptr;
          fused.x_prepared = true;
          fused.seg[0].out = y2.p;
          fused.swiglu_out = swiglu ? s2.p : nullptr;
          fused.imma_scratch = sc2.p;
          decode_linear(fused, nullptr);
          const std::string what = "k " + std::to_string(c.k) + " rows " + std::to_string(rows) +
                                   (residual ? " residual" : "") + (swiglu ? " swiglu" : "");
          const auto o1 = y.download(), o2 = y2.download();
          EXPECT_TRUE(same_bits(o1.data(), o2.data(), o1.size())) << what;
          // Both outputs start as the same NaN pattern: equal bits alone could mean neither was written.
          EXPECT_TRUE(std::all_of(o1.begin(), o1.end(), [](float v) { return std::isfinite(v); })) << what;
          if (swiglu) {
            const auto w1 = s1.download(), w2 = s2.download();
            EXPECT_TRUE(same_bits(w1.data(), w2.data(), w1.size())) << what << ": swiglu";
          }
          if (residual) {
            const auto r1 = sum.download(), r2 = sum2.download();
            EXPECT_TRUE(same_bits(r1.data(), r2.data(), r1.size())) << what << ": residual sum";
          }
        }
  }
}

// The SwiGLU matmul that also writes the down projection's x terms (swiglu_prepare, then the down matmul
// with x_prepared on them) gives the bits of the two matmuls each preparing its own: 1-16 rows (1-8 on the
// streaming kernel's fused blocks, 9-16 on the blocked kernel and the prepare kernel after it), 16-bit
// scales of both kinds.
TEST(CudaKernels, SwigluWritingXTermsEqualsPlainDown) {
  TF_NEED_GPU();
  const std::int64_t k = 4096, f = 2560, n = 384;
  for (const ElemType dt : {ElemType::BF16, ElemType::F16}) {
    const HostW hg = make_weight(f, k, 4, 64, dt), hu = make_weight(f, k, 4, 64, dt), hd = make_weight(n, f, 4, 64, dt);
    DevW dg(hg), du(hu), dd(hd);
    ASSERT_TRUE(swiglu_prepare_fusable(dg.view, dd.view, 1));
    const HostW hd32 = make_weight(n, f, 4, 32, dt);
    DevW dd32(hd32);
    EXPECT_FALSE(swiglu_prepare_fusable(dg.view, dd32.view, 1)) << "the fused prepare makes groups of 64 only";
    const std::size_t scratch = std::max(decode_linear_scratch_bytes(dg.view), decode_linear_scratch_bytes(dd.view));
    DevBuf<std::uint8_t> sc1(scratch), sc2(scratch), sc3(scratch);
    for (int rows : {1, 2, 3, 5, 8, 9, 16}) {
      const auto x = random_floats(static_cast<std::size_t>(rows * k), -2.0f, 2.0f);
      const auto fn = static_cast<std::size_t>(rows * f), yn = static_cast<std::size_t>(rows * n);
      DevBuf<float> dx(x), s1(fn), s2(fn), y1(yn), y2(yn);
      s1.poison();
      s2.poison();
      y1.poison();
      y2.poison();
      DecodeLinearArgs gu;
      gu.x = dx.p;
      gu.x_stride = k;
      gu.rows = rows;
      gu.segments = 2;
      gu.seg[0] = {dg.view, nullptr, f};
      gu.seg[1] = {du.view, nullptr, f};
      gu.swiglu_out = s1.p;
      gu.swiglu_stride = f;
      gu.imma_scratch = sc1.p;
      gu.imma_scratch_bytes = scratch;
      decode_linear(gu, nullptr);
      DecodeLinearArgs down;
      down.x = s1.p;
      down.x_stride = f;
      down.rows = rows;
      down.seg[0] = {dd.view, y1.p, n};
      down.imma_scratch = sc1.p;
      down.imma_scratch_bytes = scratch;
      decode_linear(down, nullptr);
      DecodeLinearArgs gu2 = gu;
      gu2.swiglu_out = s2.p;
      gu2.imma_scratch = sc2.p;
      gu2.swiglu_prepare = sc3.p;
      gu2.swiglu_prepare_bytes = scratch;
      decode_linear(gu2, nullptr);
      DecodeLinearArgs down2 = down;
      down2.x = nullptr;
      down2.x_prepared = true;
      down2.seg[0].out = y2.p;
      down2.imma_scratch = sc3.p;
      decode_linear(down2, nullptr);
      const std::string what = std::string(dt == ElemType::BF16 ? "bf16" : "f16") + " rows " + std::to_string(rows);
      const auto a1 = s1.download(), a2 = s2.download(), o1 = y1.download(), o2 = y2.download();
      EXPECT_TRUE(same_bits(a1.data(), a2.data(), a1.size())) << what << ": swiglu";
      EXPECT_TRUE(same_bits(o1.data(), o2.data(), o1.size())) << what << ": down";
      // Both outputs start as the same NaN pattern: equal bits alone could mean neither was written.
      EXPECT_TRUE(std::all_of(o1.begin(), o1.end(), [](float v) { return std::isfinite(v); })) << what;
      // Terms written over the ones the launch reads are refused.
      DecodeLinearArgs bad = gu2;
      bad.swiglu_prepare = sc2.p;  // the scratch the launch reads its own terms from
      EXPECT_THROW(decode_linear(bad, nullptr), std::invalid_argument) << what;
    }
  }
}

TEST(CudaKernels, DecodeLinearWithFusedNorm) {
  TF_NEED_GPU();
  const std::int64_t k = 576, n = 960;
  const HostW hw = make_weight(n, k, 4, 32, ElemType::F16);
  DevW dw(hw);
  const auto nw = random_floats(static_cast<std::size_t>(k), 0.5f, 1.5f);
  DevBuf<float> dnw(nw);
  std::vector<float> first_row;
  for (int rows : {1, 3, 16}) {
    const auto a = random_floats(static_cast<std::size_t>(rows * k), -2.0f, 2.0f), b = random_floats(a.size());
    auto a2 = a, b2 = b;
    if (!first_row.empty()) {  // row 0 repeats the first call's row
      std::copy(first_row.begin(), first_row.begin() + k, a2.begin());
      std::copy(first_row.begin() + k, first_row.end(), b2.begin());
    } else {
      first_row.assign(a.begin(), a.begin() + k);
      first_row.insert(first_row.end(), b.begin(), b.begin() + k);
    }
    DevBuf<float> da(a2), db(b2), sum(a2.size()), y(static_cast<std::size_t>(rows * n));
    sum.poison();
    y.poison();
    DecodeLinearArgs args;
    args.x = da.p;
    args.x_stride = k;
    args.rows = rows;
    args.seg[0] = {dw.view, y.p, n};
    args.norm_w = dnw.p;
    args.norm_b = db.p;
    args.norm_sum = sum.p;
    args.norm_eps = 1e-5f;
    decode_linear(args, nullptr);
    std::vector<float> h(a2.size());
    std::vector<double> rsum(a2.size());
    for (int r = 0; r < rows; ++r) {
      double ss = 0.0;
      for (std::int64_t i = 0; i < k; ++i) {
        const auto j = static_cast<std::size_t>(r * k + i);
        rsum[j] = static_cast<double>(a2[j]) + b2[j];
        ss += rsum[j] * rsum[j];
      }
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(k) + 1e-5);
      for (std::int64_t i = 0; i < k; ++i) {
        const auto j = static_cast<std::size_t>(r * k + i);
        h[j] = static_cast<float>(rsum[j] * inv * nw[static_cast<std::size_t>(i)]);
      }
    }
    EXPECT_LT(rel_err(sum.download(), rsum), 1e-7);
    const auto got = y.download();
    EXPECT_LT(rel_err(got, ref_linear(h, rows, hw)), kTiledTol) << rows;
    static std::vector<float> alone;
    if (rows == 1) alone.assign(got.begin(), got.begin() + n);
    else EXPECT_TRUE(same_bits(alone.data(), got.data(), static_cast<std::size_t>(n))) << "fused-norm row 0 differs in a " << rows << "-row call";
  }
}

}  // namespace
}  // namespace tf::cuda::test
