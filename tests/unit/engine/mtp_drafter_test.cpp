// MtpDrafter's bookkeeping against a fake model and a fake MTP head: the head must only ever hold rows of
// committed positions built from the model's own hidden rows (row t: the model's hidden row of position t
// with the token at t + 1), chained rows must follow the head's own output and be dropped before the next
// committed row, and drafted decoding must equal serial decoding.
#include "engine/drafting/mtp_drafter.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/decode_loop.h"
#include "fake_logits.h"

namespace tf {
namespace {

constexpr int kVocab = test::kFakeVocab;
constexpr std::int64_t kWidth = 2;

// A fake target whose hidden row at position t is [t, token at t]: a row taken from the wrong position or a
// stale one is visible to the head.
class HiddenModel final : public Model {
 public:
  HiddenModel() {
    info_.vocab = kVocab;
    info_.context = 1 << 20;
    info_.hidden = kWidth;
  }
  const ModelInfo& info() const override { return info_; }
  std::unique_ptr<SequenceState> new_state() const override { return std::make_unique<test::FakeTokenState>(); }
  std::vector<float> forward(SequenceState& state, std::span<const std::int32_t> tokens, std::int64_t rows) override {
    return test::fake_forward(dynamic_cast<test::FakeTokenState&>(state).tokens, tokens, rows);
  }
  std::vector<float> forward_hidden(SequenceState& state, std::span<const std::int32_t> tokens, std::int64_t rows,
                                    std::vector<float>& hidden) override {
    const auto start = state.length();
    hidden.clear();
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      hidden.push_back(static_cast<float>(start + static_cast<std::int64_t>(i)));
      hidden.push_back(static_cast<float>(tokens[i]));
    }
    return forward(state, tokens, rows);
  }

 private:
  ModelInfo info_;
};

struct HeadRow {
  float h0, h1;
  std::int32_t token;
};
class HeadState final : public SequenceState {
 public:
  std::vector<HeadRow> rows;
  std::int64_t length() const override { return static_cast<std::int64_t>(rows.size()); }
  void truncate(std::int64_t n) override { rows.resize(static_cast<std::size_t>(n)); }
  std::size_t bytes() const override { return 0; }
  std::vector<std::uint8_t> snapshot() const override { return {}; }
  void restore(std::span<const std::uint8_t>) override {}
};

// A fake head that knows the stream's true tokens: its row at position q predicts the token at q + 2, rightly
// except at every third position (so drafts are accepted, and rejected inside windows). It checks every row
// it is given: a committed row q must carry the model's hidden row of q and the token at q + 1; a chained row
// must carry the head's own output of row q - 1 (h0 = -q).
class FakeHead final : public DraftHead {
 public:
  explicit FakeHead(std::vector<std::int32_t> truth) : truth_(std::move(truth)) {}
  std::unique_ptr<SequenceState> new_state() const override { return std::make_unique<HeadState>(); }
  std::size_t state_bytes_per_token() const override { return 0; }
  Rows forward(SequenceState& state, std::span<const std::int32_t> tokens, std::span<const float> hidden,
               std::int64_t rows) override {
    auto& st = dynamic_cast<HeadState&>(state);
    Rows out;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const auto q = st.length();
      const float h0 = hidden[i * kWidth], h1 = hidden[i * kWidth + 1];
      if (h0 >= 0) {
        ++committed_rows;
        if (h0 != static_cast<float>(q) || h1 != static_cast<float>(truth(q)) || tokens[i] != truth(q + 1)) ++violations;
      } else {
        ++chained_rows;
        if (h0 != -static_cast<float>(q)) ++violations;
      }
      st.rows.push_back({h0, h1, tokens[i]});
      if (static_cast<std::int64_t>(tokens.size() - i) > rows) continue;
      const std::int32_t guess = q % 3 == 0 ? (truth(q + 2) + 1) % kVocab : truth(q + 2);
      for (int v = 0; v < kVocab; ++v) out.logits.push_back(v == guess ? 100.0f : 0.0f);
      out.hidden.push_back(-static_cast<float>(q + 1));
      out.hidden.push_back(static_cast<float>(tokens[i]));
    }
    return out;
  }
  int violations = 0, committed_rows = 0, chained_rows = 0;

 private:
  std::int32_t truth(std::int64_t q) const {
    return q < static_cast<std::int64_t>(truth_.size()) ? truth_[static_cast<std::size_t>(q)] : -1;
  }
  std::vector<std::int32_t> truth_;
};

struct Decoded {
  std::vector<std::int32_t> tokens;
  DecodeCounters counters;
};

// Prefills in chunks of `chunk` tokens (0: the whole prompt at once), then decodes.
Decoded decode(HiddenModel& model, const std::vector<std::int32_t>& prompt, const DecodeSettings& s, MtpDrafter* drafter,
               std::size_t chunk = 0) {
  auto state = model.new_state();
  std::vector<float> logits;
  if (drafter != nullptr) {  // as the scheduler prefills for a draft source that reads hidden rows
    if (chunk == 0) chunk = prompt.size();
    for (std::size_t at = 0; at < prompt.size(); at += chunk) {
      const auto part = std::span<const std::int32_t>(prompt).subspan(at, std::min(chunk, prompt.size() - at));
      std::vector<float> hidden;
      logits = model.forward_hidden(*state, part, 1, hidden);
      drafter->observe(prompt, static_cast<std::int64_t>(at), hidden, static_cast<std::int64_t>(part.size()));
    }
  } else {
    logits = model.forward(*state, prompt, 1);
  }
  std::vector<std::int32_t> history = prompt;
  Decoded r;
  decode_stream(
      model, *state, logits, history, s, drafter,
      [&](std::int32_t t) {
        r.tokens.push_back(t);
        return true;
      },
      [] { return false; }, r.counters);
  return r;
}

TEST(MtpDrafter, HeadHoldsOnlyCommittedRowsAndDraftedEqualsSerial) {
  HiddenModel model;
  const std::vector<std::int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
  for (const float temperature : {0.0f, 0.7f, 1.0f}) {
    DecodeSettings s;
    s.sampling.temperature = temperature;
    s.seed = 11;
    s.budget = 80;
    const Decoded serial = decode(model, prompt, s, nullptr);
    ASSERT_EQ(serial.tokens.size(), 80u);
    std::vector<std::int32_t> truth = prompt;
    truth.insert(truth.end(), serial.tokens.begin(), serial.tokens.end());
    for (const int max_drafts : {1, 3, 8}) {
      FakeHead head(truth);
      MtpDrafter drafter(head, kWidth, s.sampling, s.seed);
      DecodeSettings ds = s;
      ds.max_drafts = max_drafts;
      const Decoded drafted = decode(model, prompt, ds, &drafter);
      EXPECT_EQ(drafted.tokens, serial.tokens) << "T " << temperature << ", up to " << max_drafts << " drafts";
      EXPECT_EQ(head.violations, 0);
      EXPECT_GT(drafted.counters.accepted, 0);
      EXPECT_LT(drafted.counters.accepted, drafted.counters.drafted);  // some drafts rejected
      // Every committed position but the last few ran through the head exactly once.
      EXPECT_GE(head.committed_rows, static_cast<int>(truth.size()) - 2 - max_drafts);
      EXPECT_LE(head.committed_rows, static_cast<int>(truth.size()));
      if (max_drafts > 1) {
        EXPECT_GT(head.chained_rows, 0);
      }
    }
  }
}

// A long prompt in chunks: the head builds the prompt's rows as the chunks come (not all at the first
// proposal), and they are the same rows.
TEST(MtpDrafter, LongPromptInChunks) {
  HiddenModel model;
  std::vector<std::int32_t> prompt;
  for (int i = 0; i < 700; ++i) prompt.push_back(static_cast<std::int32_t>((i * 7 + i / 5) % kVocab));
  DecodeSettings s;
  s.sampling.temperature = 1.0f;
  s.seed = 5;
  s.budget = 40;
  const Decoded serial = decode(model, prompt, s, nullptr);
  std::vector<std::int32_t> truth = prompt;
  truth.insert(truth.end(), serial.tokens.begin(), serial.tokens.end());
  FakeHead head(truth);
  MtpDrafter drafter(head, kWidth, s.sampling, s.seed);
  DecodeSettings ds = s;
  ds.max_drafts = 4;
  const Decoded drafted = decode(model, prompt, ds, &drafter, 128);
  EXPECT_EQ(drafted.tokens, serial.tokens);
  EXPECT_EQ(head.violations, 0);
  EXPECT_GT(drafted.counters.accepted, 0);
  EXPECT_GE(head.committed_rows, static_cast<int>(truth.size()) - 2 - ds.max_drafts);
}

}  // namespace
}  // namespace tf
