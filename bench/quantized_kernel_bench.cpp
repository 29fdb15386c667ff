// The quantized CPU product's speed on one thread, in thread CPU time (what a loaded machine distorts least):
// random GGUF blocks of a type and shape, `rows` rows of x, both activation precisions.
//   tf_quantized_kernel_bench TYPE OUT IN ROWS [REPEATS]     TYPE: q4_0 | q4_1 | q8_0 | q4_k | q6_k
// Prints G weight-rows/s (OUT * IN * ROWS per product) for float32, 8-bit and 16-bit activations.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "backends/mlx/kernels/chunk_pool.h"
#include "backends/mlx/kernels/quantized_matrix.h"
#include "checkpoint/ggml_types.h"
#include "support/random_gguf_blocks.h"

namespace {

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s q4_0|q4_1|q8_0|q4_k|q6_k OUT IN ROWS [REPEATS]\n", argv[0]);
    return 2;
  }
  const std::string t = argv[1];
  const tf::GgmlType type = t == "q4_0"   ? tf::GgmlType::Q4_0
                            : t == "q4_1" ? tf::GgmlType::Q4_1
                            : t == "q8_0" ? tf::GgmlType::Q8_0
                            : t == "q4_k" ? tf::GgmlType::Q4_K
                                          : tf::GgmlType::Q6_K;
  const std::int64_t out = std::atoll(argv[2]), in = std::atoll(argv[3]), rows = std::atoll(argv[4]);
  const int repeats = argc > 5 ? std::atoi(argv[5]) : 200;
  const auto q = tf::quantized_matrix(tf::test_support::random_blocks(type, out, in, 1));
  std::vector<float> x(static_cast<std::size_t>(rows * in)), y(static_cast<std::size_t>(rows * out));
  std::mt19937 rng(2);
  std::normal_distribution<float> d;
  for (auto& v : x) v = d(rng);
  tf::SerialChunks one_thread;
  for (auto [p, name] :
       {std::pair{tf::ActivationPrecision::Float32, "float32"}, std::pair{tf::ActivationPrecision::Int8Blocks, "int8"},
        std::pair{tf::ActivationPrecision::Int16Blocks, "int16"}}) {
    tf::quantized_matmul(x.data(), rows, q, y.data(), p);  // warm
    const double t0 = thread_seconds();
    for (int i = 0; i < repeats; ++i) tf::quantized_matmul(x.data(), rows, q, y.data(), p);
    const double s = thread_seconds() - t0;
    std::printf("%s %lldx%lld rows %lld %-8s %.2f G weight-rows/s (%.3f ms CPU a product)\n", t.c_str(),
                static_cast<long long>(out), static_cast<long long>(in), static_cast<long long>(rows), name,
                static_cast<double>(out * in * rows) * repeats / s * 1e-9, s / repeats * 1e3);
  }
  return 0;
}
