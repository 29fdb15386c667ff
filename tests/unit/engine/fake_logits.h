#pragma once
// The fake targets of the engine tests (decode loop, scheduler, row check): a row's logits are a fixed
// function of (position, token there, token before), so a state that kept stale tokens after a rollback, a
// row taken for the wrong position, or a stream that saw another stream's tokens changes them.
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "engine/keyed_noise.h"
#include "families/model.h"

namespace tf::test {

constexpr int kFakeVocab = 32;

inline void append_fake_logits(std::vector<float>& out, std::int64_t pos, std::int32_t token, std::int32_t prev) {
  for (int v = 0; v < kFakeVocab; ++v) {
    const auto h = mix64(static_cast<std::uint64_t>(pos) * 1000003u ^ static_cast<std::uint64_t>(token) * 7919u ^
                         static_cast<std::uint64_t>(prev + 1) * 104729u ^ static_cast<std::uint64_t>(v));
    out.push_back(static_cast<float>(h % 1000) / 100.0f);
  }
}

// A fake stream's state: the tokens its forwards appended.
class FakeTokenState : public SequenceState {
 public:
  std::vector<std::int32_t> tokens;
  std::int64_t length() const override { return static_cast<std::int64_t>(tokens.size()); }
  void truncate(std::int64_t n) override { tokens.resize(static_cast<std::size_t>(n)); }
  std::size_t bytes() const override { return tokens.size() * 4; }
  std::vector<std::uint8_t> snapshot() const override {
    std::vector<std::uint8_t> out(tokens.size() * 4);
    std::memcpy(out.data(), tokens.data(), out.size());
    return out;
  }
  void restore(std::span<const std::uint8_t> bytes) override {
    tokens.resize(bytes.size() / 4);
    std::memcpy(tokens.data(), bytes.data(), bytes.size());
  }
};

// The fake forward: appends `tokens` to the stream's `history` (what its state holds) and returns the logits
// of the last `rows` of them.
inline std::vector<float> fake_forward(std::vector<std::int32_t>& history, std::span<const std::int32_t> tokens,
                                       std::int64_t rows) {
  std::vector<float> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const auto pos = static_cast<std::int64_t>(history.size());
    const std::int32_t prev = history.empty() ? -1 : history.back();
    history.push_back(tokens[i]);
    if (static_cast<std::int64_t>(tokens.size() - i) > rows) continue;
    append_fake_logits(out, pos, tokens[i], prev);
  }
  return out;
}

}  // namespace tf::test
