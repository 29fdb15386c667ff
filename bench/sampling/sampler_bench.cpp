// The host sampler's cost a row: sample_token at the settings chat clients send, beside greedy_token, on
// rows shaped like a small model's logits (a normal body with sd 3 and a few peaks), one thread.
//   build/bench/tf_sampler_bench [VOCAB=49152] [ROWS=400]
// Prints microseconds a row (the median of 5 passes over ROWS distinct rows) and the ratio to greedy.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/sampler.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t vocab = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 49152;
  const int rows = argc > 2 ? std::atoi(argv[2]) : 400;
  std::mt19937 rng(1);
  std::normal_distribution<float> body(0.0f, 3.0f);
  std::vector<std::vector<float>> logits(static_cast<std::size_t>(rows), std::vector<float>(vocab));
  for (auto& row : logits) {
    for (auto& x : row) x = body(rng);
    for (int i = 0; i < 8; ++i) row[rng() % vocab] = 12.0f + static_cast<float>(rng() % 6);
  }
  struct Setting {
    const char* name;
    tf::SamplingParams p;
  };
  const std::vector<Setting> settings = {{"greedy", {0.0f, 0, 1.0f, 0.0f}},
                                         {"T0.8 top-p 0.95", {0.8f, 0, 0.95f, 0.0f}},
                                         {"T0.7 top-k 40", {0.7f, 40, 1.0f, 0.0f}},
                                         {"T1.0 filters off", {1.0f, 0, 1.0f, 0.0f}},
                                         {"T1.0 min-p 0.05", {1.0f, 0, 1.0f, 0.05f}}};
  double greedy_us = 0;
  long sink = 0;
  for (const auto& s : settings) {
    std::vector<double> passes;
    for (int pass = 0; pass < 5; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < rows; ++r) sink += tf::sample_token(logits[static_cast<std::size_t>(r)], s.p, 7, r + pass);
      passes.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / rows);
    }
    const double us = median(passes);
    if (greedy_us == 0) greedy_us = us;
    std::printf("%-18s %9.1f us/row  %6.2fx greedy\n", s.name, us, us / greedy_us);
  }
  std::printf("(vocab %zu, %d rows, checksum %ld)\n", vocab, rows, sink);
}
