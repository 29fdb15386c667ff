// Tensor parallelism's CUDA parts on one GPU (NCCL refuses two ranks on one device, so the two-rank NCCL run
// waits for a two-GPU machine: scripts/device/tensor-parallel.sh):
// - the AllReduce op over a one-rank NCCL communicator, captured into decode graphs and replayed;
// - two ranks on one device apart (each on its own thread, ops queued, sums through the host): a column-divided
//   then row-divided pair of linears, and a queued decode loop, equal to one rank within float32 rounding and
//   the same bits on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/nccl_collective.h"
#include "backends/tensor_parallel/tp_backend.h"

namespace tf {
namespace {

HostWeight dense(const std::string& name, std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  HostWeight w;
  w.name = name;
  w.rows = rows;
  w.cols = cols;
  w.shape = {rows, cols};
  w.dtype = HostDType::F32;
  w.data.resize(static_cast<std::size_t>(rows * cols) * 4);
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    const float f = u(rng);
    std::memcpy(w.data.data() + 4 * i, &f, 4);
  }
  return w;
}

TEST(CudaTensorParallel, NcclSumInsideDecodeGraphs) {
  auto collective = make_nccl_collective({0});
  auto b = make_cuda_backend(0);
  for (int step = 0; step < 4; ++step) {
    std::vector<float> v(4 * 64);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 97) * 0.25f + static_cast<float>(step);
    const Tensor x = b->from_host(v, 4, 64);
    const Tensor y = collective->all_reduce_rank(0, *b, b->add(x, x), 64);
    const auto out = b->to_host(y);
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(out[i], 2 * v[i]) << "step " << step << " value " << i;
  }
  const auto s = b->stats();
  EXPECT_GE(s.graph_captures, 1);
  EXPECT_GE(s.graph_replays, 2) << "the sum should replay inside the captured decode graph";
  std::printf("[ tensor parallel ] %s: 4 decode steps, %lld graph captures, %lld replays\n", collective->name().c_str(),
              static_cast<long long>(s.graph_captures), static_cast<long long>(s.graph_replays));
}

TEST(CudaTensorParallel, TwoRanksOnOneDeviceApartMatchOneRank) {
  setenv("TF_TP_ONE_DEVICE", "1", 1);
  auto two = make_cuda_ranks(2);
  auto one = make_cuda_backend(0);
  const HostWeight up = dense("up", 256, 128, 1), down = dense("down", 128, 256, 2);
  const DeviceWeight up2 = two->upload_split(up, WeightSplit::outputs()),
                     down2 = two->upload_split(down, WeightSplit::inputs());
  const DeviceWeight up1 = one->upload(up), down1 = one->upload(down);
  double worst = 0;
  for (int step = 0; step < 6; ++step) {  // decode-sized calls: captured, then replayed, queued on the ranks' threads
    std::vector<float> x(3 * 128);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i + 11 * step));
    const auto got = two->to_host(two->linear(
        two->swiglu(two->linear(two->from_host(x, 3, 128), up2), two->linear(two->from_host(x, 3, 128), up2)), down2));
    const Tensor h1 = one->linear(one->from_host(x, 3, 128), up1);
    const auto want = one->to_host(one->linear(one->swiglu(h1, h1), down1));
    ASSERT_EQ(got.size(), want.size());
    double scale = 0;
    for (float w : want) scale = std::max(scale, static_cast<double>(std::abs(w)));
    // Relative to the largest output: a sum split in two rounds differently from one over all 256 terms.
    for (std::size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]) / scale);
  }
  EXPECT_LT(worst, 1e-5);
  std::printf("[ tensor parallel ] two ranks on one device vs one rank: worst difference %.2e of the largest output\n",
              worst);
  unsetenv("TF_TP_ONE_DEVICE");
}

}  // namespace
}  // namespace tf
