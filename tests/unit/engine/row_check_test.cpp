// The load-time row check against fake targets whose rows are exact, or that a verify window or a shared
// round perturbs: the check must serve exactly the widths and the sharing that equal serial decoding.
#include "engine/row_check.h"

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "fake_logits.h"
#include "families/model.h"

namespace tf {
namespace {

using FakeState = test::FakeTokenState;

// Rows are a fixed function of (position, token, token before) (fake_logits.h). `wide_from` perturbs every
// forward of that many rows or more; `leaky_rounds` lets a shared round's rows see the previous part's last
// token, as a batched kernel mixing streams would.
class FakeModel final : public Model {
 public:
  explicit FakeModel(std::int64_t wide_from = 1 << 30, bool leaky_rounds = false)
      : wide_from_(wide_from), leaky_(leaky_rounds) {
    info_.vocab = test::kFakeVocab;
    info_.context = 1 << 20;
  }
  const ModelInfo& info() const override { return info_; }
  std::unique_ptr<SequenceState> new_state() const override { return std::make_unique<FakeState>(); }
  std::vector<float> forward(SequenceState& state, std::span<const std::int32_t> tokens, std::int64_t rows) override {
    auto out = test::fake_forward(dynamic_cast<FakeState&>(state).tokens, tokens, rows);
    if (static_cast<std::int64_t>(tokens.size()) >= wide_from_) out.back() += 1e-3f;
    return out;
  }
  std::int64_t shared_round_rows() const override { return 16; }
  std::vector<ForwardResult> forward_parts(std::span<const ForwardPart> parts) override {
    ++rounds;
    std::vector<ForwardResult> out;
    std::int32_t before = -1;
    for (const auto& p : parts) {
      auto& st = dynamic_cast<FakeState&>(*p.state);
      if (leaky_ && before >= 0) st.tokens.back() = before;  // the stream's history now holds another's token
      const auto rows = static_cast<std::int64_t>(p.tokens.size());
      out.push_back({test::fake_forward(st.tokens, p.tokens, rows), {}, {}});
      before = p.tokens.back();
    }
    return out;
  }
  int rounds = 0;

 private:
  ModelInfo info_;
  std::int64_t wide_from_;
  bool leaky_;
};

TEST(RowCheck, ExactRowsServeEveryWidthAndShareRounds) {
  FakeModel model;
  const auto r = check_rows(model, 9, 16);
  EXPECT_EQ(r.max_window, 9);
  ASSERT_EQ(r.widths.size(), 8u);
  for (const auto& [width, same] : r.widths) EXPECT_TRUE(same) << width;
  EXPECT_TRUE(r.shared_checked);
  EXPECT_EQ(r.shared_rows, 16);
  EXPECT_EQ(model.rounds, 1);
}

TEST(RowCheck, AWideWindowThatDiffersIsNotServed) {
  FakeModel model(/*wide_from=*/6);
  const auto r = check_rows(model, 9, 0);
  EXPECT_EQ(r.max_window, 5);
  EXPECT_FALSE(r.shared_checked);
  EXPECT_EQ(r.shared_rows, 0);
  EXPECT_EQ(model.rounds, 0);
}

TEST(RowCheck, SharedRoundsThatMixStreamsAreNotShared) {
  FakeModel model(1 << 30, /*leaky_rounds=*/true);
  const auto r = check_rows(model, 0, 16);
  EXPECT_TRUE(r.widths.empty());
  EXPECT_TRUE(r.shared_checked);
  EXPECT_EQ(r.shared_rows, 0);
  EXPECT_EQ(model.rounds, 1);
}

}  // namespace
}  // namespace tf
