// The CPU product with quantized weights (backends/mlx/kernels/quantized_matrix.h): each row of a call has the
// same bits alone, inside windows of any size and at any thread count, and the result is the float product
// with the reference-dequantized weights to float32 accuracy.
#include "backends/mlx/kernels/prefill_gemm.h"
#include "backends/mlx/kernels/quantized_matrix.h"

#include "backends/mlx/kernels/chunk_pool.h"

#include <gtest/gtest.h>
#include <mlx/mlx.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/ggml_types.h"
#include "checkpoint/half_float.h"
#include "support/random_gguf_blocks.h"

namespace tf {
namespace {

using test_support::random_blocks;

std::vector<float> randn(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

HostWeight random_affine(int bits, int group, HostDType dtype, std::int64_t rows, std::int64_t cols,
                         std::uint32_t seed) {
  HostWeight w;
  w.name = "affine";
  w.rows = rows;
  w.cols = cols;
  w.shape = {rows, cols};
  w.bits = bits;
  w.group_size = group;
  w.dtype = dtype;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  w.data.resize(static_cast<std::size_t>(rows * cols * bits / 8));
  for (auto& b : w.data) b = static_cast<std::uint8_t>(byte(rng));
  const auto groups = static_cast<std::size_t>(rows * cols / group);
  std::uniform_real_distribution<float> scale(0.002f, 0.03f), bias(-0.2f, 0.2f);
  const std::size_t size = dtype == HostDType::F32 ? 4 : 2;
  w.scales.resize(groups * size);
  w.biases.resize(groups * size);
  for (std::size_t g = 0; g < groups; ++g) {
    for (auto [vec, v] : {std::pair{&w.scales, scale(rng)}, std::pair{&w.biases, bias(rng)}}) {
      std::uint8_t* p = vec->data() + g * size;
      if (dtype == HostDType::F32) {
        std::memcpy(p, &v, 4);
      } else {
        const std::uint16_t h = dtype == HostDType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
        std::memcpy(p, &h, 2);
      }
    }
  }
  return w;
}

using Product = void (*)(const float*, std::int64_t, const QuantizedMatrix&, float*);

// The float32-activation product: row invariance (alone == in a window, every window size, on one thread and on the
// pool) and accuracy against a double product with the reference-dequantized weights, for the product this machine runs
// and the portable one.
void check_product(const QuantizedMatrix& q, const std::string& name) {
  const Product native = [](const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y) {
    quantized_matmul(x, rows, w, y, ActivationPrecision::Float32);
  };
  const Product portable = [](const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y) {
    quantized_matmul_portable(x, rows, w, y, ActivationPrecision::Float32);
  };
  for (auto [product, kind] :
       {std::pair<Product, const char*>{native, "native"}, std::pair<Product, const char*>{portable, "portable"}}) {
    const std::string what = name + " (" + kind + ")";
    const std::int64_t n = q.rows, k = q.cols;
    std::vector<std::int32_t> all(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
    std::vector<float> w(static_cast<std::size_t>(n * k));
    dequantize_rows(q, all, w.data());
    const std::int64_t max_rows = 16;
    const auto x = randn(static_cast<std::size_t>(max_rows * k), 7);
    std::vector<float> alone(static_cast<std::size_t>(max_rows * n));
    {
      SerialChunks one_thread;
      for (std::int64_t r = 0; r < max_rows; ++r) product(x.data() + r * k, 1, q, alone.data() + r * n);
    }
    for (std::int64_t r = 0; r < max_rows; ++r) {
      for (std::int64_t j = 0; j < n; ++j) {
        double exact = 0, magnitude = 0;
        for (std::int64_t i = 0; i < k; ++i) {
          const double p = static_cast<double>(x[r * k + i]) * w[j * k + i];
          exact += p;
          magnitude += std::fabs(p);
        }
        ASSERT_NEAR(alone[r * n + j], exact, 2e-6 * magnitude + 1e-30) << what << ": row " << r << ", column " << j;
      }
    }
    for (const bool pool : {false, true}) {
      std::optional<SerialChunks> one_thread;
      if (!pool) one_thread.emplace();
      for (std::int64_t rows : {1, 2, 3, 4, 5, 8, 13, 16}) {
        std::vector<float> window(static_cast<std::size_t>(rows * n), NAN);
        product(x.data(), rows, q, window.data());
        ASSERT_EQ(0, std::memcmp(window.data(), alone.data(), static_cast<std::size_t>(rows * n) * 4))
            << what << ": a window of " << rows << " rows " << (pool ? "on the pool" : "on one thread");
      }
    }
  }
}

TEST(QuantizedMatmul, GgufBlocksAreRowInvariantAndAccurate) {
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_K,
                     GgmlType::Q5_K, GgmlType::Q6_K}) {
    const auto info = *ggml_type_info(static_cast<std::uint32_t>(t));
    for (std::int64_t cols : {std::int64_t{512}, std::int64_t{1536}}) {
      const auto q = quantized_matrix(random_blocks(t, 37, cols, static_cast<std::uint32_t>(cols) + 1));
      EXPECT_EQ(q.bytes(), static_cast<std::size_t>(37 * cols / info.block_elements * info.block_bytes));
      check_product(q, std::string(info.name) + " x " + std::to_string(cols));
    }
  }
}

// The integer products (8- and 16-bit activations, L = 127 or 32767 levels a side): row-invariant for windows
// of 1 to 16 rows on one thread and on the pool, the AVX2 product equal to the portable one bit for bit, and
// within the error that quantizing x allows: |x_j - d * a_j| <= d / 2 = amax / (2L) per element, so a weight
// row w errs by at most sum_j amax_b(j) / (2L) * |c_j| with c_j = w_j - min (the part the integer sum
// carries), bounded here by |w_j| + max_b |w|, plus float32 rounding.
TEST(QuantizedMatmul, IntegerActivationsAreRowInvariantExactAcrossPathsAndAccurate) {
  for (auto [precision, levels] :
       {std::pair{ActivationPrecision::Int8Blocks, 127.0}, std::pair{ActivationPrecision::Int16Blocks, 32767.0}})
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
      const bool k_quant = t == GgmlType::Q4_K || t == GgmlType::Q6_K;
      if (k_quant && precision == ActivationPrecision::Int8Blocks) continue;  // 16-bit only
      const auto info = *ggml_type_info(static_cast<std::uint32_t>(t));
      for (std::int64_t cols : {k_quant ? std::int64_t{512} : std::int64_t{576}, std::int64_t{1536}}) {
        const std::string name = std::string(info.name) + " x " + std::to_string(cols) + ", " +
                                 std::to_string(static_cast<int>(levels)) + " levels";
        const auto q = quantized_matrix(random_blocks(t, 37, cols, static_cast<std::uint32_t>(cols) + 5));
        const std::int64_t n = q.rows, k = q.cols, max_rows = 16;
        std::vector<std::int32_t> all(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
        std::vector<float> w(static_cast<std::size_t>(n * k));
        dequantize_rows(q, all, w.data());
        auto x = randn(static_cast<std::size_t>(max_rows * k), 11);
        for (std::int64_t i = 0; i < 64; ++i) x[static_cast<std::size_t>(3 * k + i)] = 0.0f;  // blocks of zeros
        std::vector<float> native(static_cast<std::size_t>(max_rows * n)), portable(native.size());
        {
          SerialChunks one_thread;
          for (std::int64_t r = 0; r < max_rows; ++r) {
            quantized_matmul(x.data() + r * k, 1, q, native.data() + r * n, precision);
            quantized_matmul_portable(x.data() + r * k, 1, q, portable.data() + r * n, precision);
          }
        }
        ASSERT_EQ(0, std::memcmp(native.data(), portable.data(), native.size() * 4)) << name << ": AVX2 != portable";
        for (std::int64_t r = 0; r < max_rows; ++r)
          for (std::int64_t j = 0; j < n; ++j) {
            double exact = 0, magnitude = 0, bound = 0;
            for (std::int64_t b = 0; b < k; b += 32) {
              double amax = 0, wmax = 0;
              for (std::int64_t i = b; i < b + 32; ++i) {
                amax = std::max(amax, static_cast<double>(std::fabs(x[r * k + i])));
                wmax = std::max(wmax, static_cast<double>(std::fabs(w[j * k + i])));
              }
              for (std::int64_t i = b; i < b + 32; ++i) {
                const double p = static_cast<double>(x[r * k + i]) * w[j * k + i];
                exact += p;
                magnitude += std::fabs(p);
                bound += amax / (2 * levels) * (std::fabs(w[j * k + i]) + wmax);
              }
            }
            ASSERT_NEAR(native[r * n + j], exact, 1.001 * bound + 2e-6 * magnitude)
                << name << ": row " << r << ", column " << j;
            // Far inside the bound on average (the roundings' errors are independent): a wrong code or scale is not.
            ASSERT_LT(std::fabs(native[r * n + j] - exact), 0.25 * bound + 1e-6) << name << ": row " << r;
          }
        for (const bool is_native : {true, false}) {
          const char* kind = is_native ? "native" : "portable";
          for (const bool pool : {false, true}) {
            std::optional<SerialChunks> one_thread;
            if (!pool) one_thread.emplace();
            for (std::int64_t rows = 1; rows <= max_rows; ++rows) {
              std::vector<float> window(static_cast<std::size_t>(rows * n), NAN);
              if (is_native)
                quantized_matmul(x.data(), rows, q, window.data(), precision);
              else
                quantized_matmul_portable(x.data(), rows, q, window.data(), precision);
              ASSERT_EQ(0, std::memcmp(window.data(), native.data(), static_cast<std::size_t>(rows * n) * 4))
                  << name << " (" << kind << "): a window of " << rows << " rows "
                  << (pool ? "on the pool" : "on one thread");
            }
          }
        }
      }
    }
}

// The prefill GEMM's dequantization (scale * code + min) against the reference: within a rounding of each value,
// and the GEMM itself against the reference product of the activations the decode rows multiply (quantized where
// the default product quantizes them) and against the decode rows themselves: one model, sums in another order.
TEST(QuantizedMatmul, PrefillGemmMatchesTheReferenceAndTheDecodeRows) {
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_K,
                     GgmlType::Q5_K, GgmlType::Q6_K}) {
    const auto info = *ggml_type_info(static_cast<std::uint32_t>(t));
    const std::int64_t n = 37, k = 512, rows = 40;
    const auto q = quantized_matrix(random_blocks(t, n, k, 99));
    std::vector<std::int32_t> all(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
    std::vector<float> ref(static_cast<std::size_t>(n * k)), fast(ref.size());
    dequantize_rows(q, all, ref.data());
    dequantize_for_gemm(q, 0, n, fast.data());
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_NEAR(fast[i], ref[i], 4e-7 * std::fabs(ref[i]) + 1e-6) << info.name << " value " << i;
    const auto x = randn(static_cast<std::size_t>(rows * k), 3);
    std::vector<float> seen(x);
    const bool quantized = activations_as_products_see_them(x.data(), rows, q, seen.data());
    const bool float_only = t == GgmlType::Q5_0 || t == GgmlType::Q5_1 || t == GgmlType::Q5_K;  // no integer product
    EXPECT_EQ(quantized, default_activation_precision() != ActivationPrecision::Float32 && !float_only) << info.name;
    std::vector<float> y(static_cast<std::size_t>(rows * n)), decode(y.size());
    quantized_gemm(x.data(), rows, q, y.data());
    for (std::int64_t r = 0; r < rows; ++r) quantized_matmul(x.data() + r * k, 1, q, decode.data() + r * n);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < n; ++j) {
        double exact = 0, magnitude = 0;
        for (std::int64_t i = 0; i < k; ++i) {
          const double p = static_cast<double>(seen[r * k + i]) * ref[j * k + i];
          exact += p;
          magnitude += std::fabs(p);
        }
        ASSERT_NEAR(y[r * n + j], exact, 2e-6 * magnitude + 1e-30) << info.name << ": row " << r << ", column " << j;
        ASSERT_NEAR(decode[r * n + j], exact, 2e-6 * magnitude + 1e-30)
            << info.name << " decode row " << r << ", column " << j;
      }
  }
}

TEST(QuantizedMatmul, AffineCodesAreRowInvariantAndAccurate) {
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (HostDType dt : {HostDType::BF16, HostDType::F16, HostDType::F32}) {
        const auto q =
            quantized_matrix(random_affine(bits, group, dt, 21, 384, static_cast<std::uint32_t>(bits * group)));
        check_product(q, std::to_string(bits) + "-bit g" + std::to_string(group) + " dtype " +
                             std::to_string(static_cast<int>(dt)));
      }
}

// dequantize_rows of affine codes is MLX's own dequantization, bit for bit (what the kernel multiplies by).
TEST(QuantizedMatmul, AffineRowsEqualMlxDequantize) {
  namespace mx = mlx::core;
  // Every group size: dequantize_rows looks values up in a per-group table where a group has more values than
  // codes (2 * 2^bits <= group) and computes each one otherwise; both must be MLX's bits.
  for (int group : {32, 64, 128})
    for (int bits : {2, 3, 4, 6, 8})
      for (HostDType dt : {HostDType::BF16, HostDType::F16}) {
        const int rows = 5, cols = 256;
        auto hw = random_affine(bits, group, dt, rows, cols, 99);
        const auto mdt = dt == HostDType::F16 ? mx::float16 : mx::bfloat16;
        auto packed = mx::array(reinterpret_cast<const std::uint32_t*>(hw.data.data()), {rows, cols * bits / 32});
        auto scales =
            mx::view(mx::array(reinterpret_cast<const std::uint16_t*>(hw.scales.data()), {rows, cols / group}), mdt);
        auto biases =
            mx::view(mx::array(reinterpret_cast<const std::uint16_t*>(hw.biases.data()), {rows, cols / group}), mdt);
        auto ref = mx::astype(mx::dequantize(packed, scales, biases, group, bits), mx::float32);
        mx::eval(ref);
        const auto q = quantized_matrix(hw);
        std::vector<float> ours(static_cast<std::size_t>(rows * cols));
        const std::vector<std::int32_t> ids{0, 1, 2, 3, 4};
        dequantize_rows(q, ids, ours.data());
        ASSERT_EQ(0, std::memcmp(ours.data(), ref.data<float>(), ours.size() * 4)) << bits << "-bit, group " << group;
      }
}

TEST(QuantizedMatmul, RejectsLayoutsWithoutAKernel) {
  auto w = random_affine(4, 16, HostDType::F16, 2, 64, 1);
  EXPECT_THROW(quantized_matrix(w), std::invalid_argument);
}

}  // namespace
}  // namespace tf
