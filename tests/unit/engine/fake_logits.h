#pragma once
// The fake targets' logits (decode_loop_test.cpp, scheduler_test.cpp): a row is a fixed function of
// (position, token there, token before), so a state that kept stale tokens after a rollback, a row taken for
// the wrong position, or a stream that saw another stream's tokens changes it.
#include <cstdint>
#include <vector>

#include "engine/keyed_noise.h"

namespace tf::test {

constexpr int kFakeVocab = 32;

inline void append_fake_logits(std::vector<float>& out, std::int64_t pos, std::int32_t token, std::int32_t prev) {
  for (int v = 0; v < kFakeVocab; ++v) {
    const auto h = mix64(static_cast<std::uint64_t>(pos) * 1000003u ^ static_cast<std::uint64_t>(token) * 7919u ^
                         static_cast<std::uint64_t>(prev + 1) * 104729u ^ static_cast<std::uint64_t>(v));
    out.push_back(static_cast<float>(h % 1000) / 100.0f);
  }
}

}  // namespace tf::test
