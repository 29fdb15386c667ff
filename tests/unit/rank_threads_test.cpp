// The threads that run tensor-parallel ranks apart (backends/tensor_parallel/rank_threads.h): every rank runs
// at once, sums meet in rank order with the same bits on every rank round after round, and a rank that fails
// while its peers wait for it makes the call return with its error instead of hanging.
#include "backends/tensor_parallel/rank_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tf {
namespace {

TEST(RankThreads, SumsMeetInRankOrderRoundAfterRound) {
  constexpr int kRanks = 3;
  RankThreads threads(kRanks);
  Rendezvous meet(kRanks);
  std::vector<std::vector<float>> got(kRanks);
  threads.run(
      [&](int r) {
        for (int round = 0; round < 200; ++round) {
          // Values whose sum depends on the order of the additions: rank order must be kept.
          std::vector<float> part{r == 0 ? 1e8f : 1.0f, static_cast<float>(r + round)};
          const auto sum = meet.sum(static_cast<std::size_t>(r), part);
          if (round == 199) got[static_cast<std::size_t>(r)] = sum;
        }
      },
      [&] { meet.abort(); });
  const float first = (1e8f + 1.0f) + 1.0f;  // ranks 0, 1, 2 in order
  for (const auto& g : got) {
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0], first);
    EXPECT_EQ(g[1], 0.0f + 199 + 200 + 201);
  }
}

TEST(RankThreads, AFailingRankNeverLeavesItsPeersWaiting) {
  for (int failing : {0, 1, 2}) {
    RankThreads threads(3);
    Rendezvous meet(3);
    auto done = std::async(std::launch::async, [&] {
      try {
        threads.run(
            [&](int r) {
              meet.sum(static_cast<std::size_t>(r), {1.0f});  // one good round
              if (r == failing) throw std::runtime_error("rank failed");
              meet.sum(static_cast<std::size_t>(r), {2.0f});  // its peers wait here for it
            },
            [&] { meet.abort(); });
      } catch (const std::runtime_error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    });
    ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "rank " << failing << " hung";
    EXPECT_EQ(done.get(), "rank failed") << "the failing rank's own error is the one reported";
  }
}

}  // namespace
}  // namespace tf
