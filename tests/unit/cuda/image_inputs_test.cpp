// Image inputs on the CUDA backend (vision, issue 61): M-RoPE through rope (text rows at (p, p, p) give
// plain RoPE's bits; image rows against float64), replace_rows (the placeholder rows replaced, the rest
// untouched, in a decode tape's CUDA graph replayed with other rows) and host_matmul (the image encoder's
// float32 products against float64, the same bits on repeat). Runs only on a machine with a GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "cuda_test_util.h"

namespace tf::cuda::test {
namespace {

constexpr int kHeads = 3, kHeadDim = 64;

RopeSpec mrope_spec(int rotary) {
  RopeSpec s;
  s.base = 10000.0f;
  s.rotary_dims = rotary;
  const int half = (rotary == 0 ? kHeadDim : rotary) / 2;
  // Qwen3.5's proportions: t, h and w take about a third of the pairs each.
  s.mrope_section = {half - 2 * (half / 3), half / 3, half / 3};
  return s;
}

// x rotated on the host in float64 by per-row (t, h, w) positions, as RopeSpec::mrope_section says (rotate-half
// pairs within the first `rotary` dims, the rest passed through).
std::vector<double> ref_mrope(const std::vector<float>& x, std::int64_t rows, const std::vector<std::int32_t>& thw,
                              const RopeSpec& s) {
  const int dims = s.rotary_dims == 0 ? kHeadDim : s.rotary_dims, half = dims / 2;
  std::vector<double> out(x.begin(), x.end());
  for (std::int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < kHeads; ++h)
      for (int i = 0; i < half; ++i) {
        const int axis = i % 3 == 1 && i < 3 * s.mrope_section[1]   ? 1
                         : i % 3 == 2 && i < 3 * s.mrope_section[2] ? 2
                                                                    : 0;
        const double inv = std::pow(static_cast<double>(s.base), -2.0 * i / dims);
        const double angle = thw[static_cast<std::size_t>(3 * r + axis)] * inv;
        const std::size_t a = static_cast<std::size_t>((r * kHeads + h) * kHeadDim + i), b = a + half;
        out[a] = x[a] * std::cos(angle) - x[b] * std::sin(angle);
        out[b] = x[a] * std::sin(angle) + x[b] * std::cos(angle);
      }
  return out;
}

TEST(CudaImageInputs, MropeOfTextRowsIsRopeAndImageRowsMatchFloat64) {
  TF_NEED_GPU();
  auto be = make_cuda_backend();
  for (int rotary : {0, 16}) {
    for (std::int64_t rows : {5, 40}) {  // a decode tape (graphs) and a prefill one
      SCOPED_TRACE("rotary " + std::to_string(rotary) + " rows " + std::to_string(rows));
      const RopeSpec spec = mrope_spec(rotary);
      const auto x = random_floats(static_cast<std::size_t>(rows * kHeads * kHeadDim));
      const std::int64_t start = 7;
      // Text rows: (p, p, p) give plain RoPE's bits.
      std::vector<std::int32_t> text(static_cast<std::size_t>(3 * rows));
      for (std::int64_t r = 0; r < 3 * rows; ++r)
        text[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(start + r / 3);
      StreamRows plain{.start = start, .rows = rows}, as_mrope = plain;
      as_mrope.mrope = text;
      const auto a = be->to_host(be->rope(be->from_host(x, rows, kHeads * kHeadDim), kHeads, kHeadDim,
                                          std::span<const StreamRows>(&plain, 1), spec));
      const auto b = be->to_host(be->rope(be->from_host(x, rows, kHeads * kHeadDim), kHeads, kHeadDim,
                                          std::span<const StreamRows>(&as_mrope, 1), spec));
      ASSERT_EQ(a.size(), b.size());
      EXPECT_TRUE(same_bits(a.data(), b.data(), a.size())) << "text rows under M-RoPE differ from RoPE";
      // Image rows: three different positions a row.
      std::vector<std::int32_t> thw(static_cast<std::size_t>(3 * rows));
      for (std::int64_t r = 0; r < rows; ++r) {
        thw[static_cast<std::size_t>(3 * r)] = static_cast<std::int32_t>(start);
        thw[static_cast<std::size_t>(3 * r + 1)] = static_cast<std::int32_t>(start + r / 4);
        thw[static_cast<std::size_t>(3 * r + 2)] = static_cast<std::int32_t>(start + 2 * (r % 4) + 1);
      }
      StreamRows image = plain;
      image.mrope = thw;
      const auto got = be->to_host(be->rope(be->from_host(x, rows, kHeads * kHeadDim), kHeads, kHeadDim,
                                            std::span<const StreamRows>(&image, 1), spec));
      const auto want = ref_mrope(x, rows, thw, spec);
      double worst = 0.0;
      for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
      std::printf("[ mrope ] rotary %d rows %lld: max |diff| from float64 %.3g\n", rotary, static_cast<long long>(rows),
                  worst);
      EXPECT_LT(worst, 2e-5);  // float32 angles (positions < 60) and sincosf
    }
  }
}

TEST(CudaImageInputs, ReplaceRowsWritesTheRowsAndLeavesTheRest) {
  TF_NEED_GPU();
  auto be = make_cuda_backend();
  const std::int64_t cols = 96;
  // The second 8-row call replays the first's CUDA graph with other rows; 40 rows are a prefill tape.
  const std::vector<std::vector<std::int64_t>> cases{{1, 5, 6, 7}, {2, 3, 4, 7}, {0, 17, 18, 39}};
  for (const auto& at : cases) {
    const std::int64_t rows = at.back() == 39 ? 40 : 8;
    const auto x = random_floats(static_cast<std::size_t>(rows * cols));
    const auto values = random_floats(at.size() * static_cast<std::size_t>(cols));
    // An op after it, as in a forward (the embeddings feed the first layer's norm).
    const Tensor t = be->add(be->replace_rows(be->from_host(x, rows, cols), at, values), be->from_host(x, rows, cols));
    const auto got = be->to_host(t);
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto it = std::find(at.begin(), at.end(), r);
      for (std::int64_t c = 0; c < cols; ++c) {
        const auto i = static_cast<std::size_t>(r * cols + c);
        const float base = it == at.end() ? x[i] : values[static_cast<std::size_t>((it - at.begin()) * cols + c)];
        ASSERT_EQ(got[i], base + x[i]) << "row " << r << " col " << c;
      }
    }
  }
}

TEST(CudaImageInputs, HostMatmulMatchesFloat64AndRepeats) {
  TF_NEED_GPU();
  auto be = make_cuda_backend();
  ASSERT_TRUE(be->has_image_inputs());
  const std::int64_t rows = 137, out = 72, in = 200;
  const auto x = random_floats(static_cast<std::size_t>(rows * in)),
             w = random_floats(static_cast<std::size_t>(out * in));
  std::vector<float> y(static_cast<std::size_t>(rows * out)), again(y.size());
  be->host_matmul(x.data(), rows, w.data(), out, in, y.data());
  be->host_matmul(x.data(), rows, w.data(), out, in, again.data());
  EXPECT_TRUE(same_bits(y.data(), again.data(), y.size()));
  double worst = 0.0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t n = 0; n < out; ++n) {
      double ref = 0.0, mag = 0.0;
      for (std::int64_t k = 0; k < in; ++k) {
        const double p =
            static_cast<double>(x[static_cast<std::size_t>(r * in + k)]) * w[static_cast<std::size_t>(n * in + k)];
        ref += p;
        mag += std::abs(p);
      }
      worst = std::max(worst, std::abs(y[static_cast<std::size_t>(r * out + n)] - ref) / mag);
    }
  std::printf("[ host_matmul ] max |diff| / sum |x w| from float64 %.3g\n", worst);
  EXPECT_LT(worst, 1e-6);
}

}  // namespace
}  // namespace tf::cuda::test
