// The scheduler (engine/scheduler.h) over a fake model: interleaved streams equal their solo runs, cancelled
// streams leave and free their state, admission refuses what never fits and what the queue cannot hold, and
// the queue is first in, first out.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "engine/admission_error.h"
#include "engine/keyed_noise.h"
#include "fake_logits.h"
#include "families/model.h"

namespace tf {
namespace {

constexpr int kVocab = test::kFakeVocab;
std::atomic<int> g_live_states{0};

// Logits at a position are a fixed function of (position, token there, token before), as in
// decode_loop_test.cpp; a stream whose forward saw another stream's tokens would change them.
class FakeState final : public test::FakeTokenState {
 public:
  FakeState() { ++g_live_states; }
  ~FakeState() override { --g_live_states; }
};

class FakeModel final : public Model {
 public:
  explicit FakeModel(std::int64_t prefill_chunk = 4, int delay_ms = 0) : delay_ms_(delay_ms) {
    info_.vocab = kVocab;
    info_.context = 1 << 20;
    info_.prefill_chunk = prefill_chunk;
  }
  const ModelInfo& info() const override { return info_; }
  std::unique_ptr<SequenceState> new_state() const override { return std::make_unique<FakeState>(); }
  std::vector<float> forward(SequenceState& state, std::span<const std::int32_t> tokens, std::int64_t rows) override {
    if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    auto& st = dynamic_cast<FakeState&>(state);
    {
      std::lock_guard lock(mu);
      if (st.tokens.empty()) started.push_back(tokens[0]);  // a prompt's first chunk: admission order
      calls.push_back(&state);
    }
    auto out = test::fake_forward(st.tokens, tokens, rows);
    return out;
  }
  // A shared round: every part's rows from the same fake forward, as a real family computes each part's
  // rows as in a forward of its own. Records each round's parts and rows.
  std::vector<ForwardResult> forward_parts(std::span<const ForwardPart> parts) override {
    if (parts.size() < 2) return Model::forward_parts(parts);  // a lone round: a plain forward, as llama's
    std::vector<ForwardResult> out;
    std::int64_t rows = 0;
    for (const auto& p : parts) {
      auto& st = dynamic_cast<FakeState&>(*p.state);
      out.push_back({test::fake_forward(st.tokens, p.tokens, static_cast<std::int64_t>(p.tokens.size())), {}, {}});
      rows += static_cast<std::int64_t>(p.tokens.size());
    }
    std::lock_guard lock(mu);
    rounds.emplace_back(parts.size(), rows);
    return out;
  }
  std::vector<std::pair<std::size_t, std::int64_t>> rounds;  // (parts, rows) of each forward_parts call
  // How often consecutive forwards belonged to different streams.
  int switches() {
    std::lock_guard lock(mu);
    int n = 0;
    for (std::size_t i = 1; i < calls.size(); ++i) n += calls[i] != calls[i - 1];
    return n;
  }
  std::mutex mu;
  std::vector<const SequenceState*> calls;
  std::vector<std::int32_t> started;

 private:
  ModelInfo info_;
  int delay_ms_;
};

class FakeText final : public TokenText {
 public:
  std::string push(std::int32_t t) override { return "<" + std::to_string(t) + ">"; }
  std::string flush() override { return ""; }
};

SchedulerOptions options(int parallel, std::size_t max_queue = 64) {
  SchedulerOptions o;
  o.parallel = parallel;
  o.max_queue = max_queue;
  o.context = 4096;
  o.max_drafts = 4;
  o.memory.budget_bytes = std::size_t{1} << 40;
  o.memory.weight_bytes = 1000;
  o.memory.state_bytes_per_token = 16;
  o.memory.workspace_bytes = 64;
  return o;
}

std::unique_ptr<Scheduler> make(FakeModel& model, SchedulerOptions o) {
  return std::make_unique<Scheduler>(model, std::move(o), [] { return std::make_unique<FakeText>(); });
}

struct Reply {
  std::string text;
  GenerationResult result;
};

Reply collect(GenerationStream& s) {
  Reply r;
  std::string piece;
  while (s.next(piece)) r.text += piece;
  r.result = s.result();
  return r;
}

GenerationRequest request(int i) {
  GenerationRequest r;
  // Different prompts (some repetitive, so context copies draft), lengths, seeds and temperatures.
  for (int k = 0; k < 5 + 3 * i; ++k) r.prompt.push_back(static_cast<std::int32_t>((k * (i + 1)) % (i % 3 == 0 ? 4 : 29)));
  r.sampling.temperature = i % 3 == 0 ? 0.0f : (i % 3 == 1 ? 0.7f : 1.0f);
  if (i % 2 == 0) r.seed = 100 + static_cast<std::uint64_t>(i);
  r.max_tokens = 10 + 7 * (i % 4);
  r.draft = i % 4 != 1;
  if (i == 5) r.stop = {"<3>"};
  return r;
}

TEST(Scheduler, InterleavedStreamsEqualTheirSoloRuns) {
  constexpr int kStreams = 8;
  std::vector<Reply> solo;
  {
    FakeModel model;
    auto s = make(model, options(1));
    for (int i = 0; i < kStreams; ++i) solo.push_back(collect(*s->submit(request(i))));
  }
  FakeModel model;
  auto s = make(model, options(kStreams));
  std::vector<std::shared_ptr<GenerationStream>> streams;
  for (int i = 0; i < kStreams; ++i) streams.push_back(s->submit(request(i)));
  std::int64_t drafted = 0;
  for (int i = 0; i < kStreams; ++i) {
    const Reply r = collect(*streams[static_cast<std::size_t>(i)]);
    const Reply& want = solo[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.result.token_ids, want.result.token_ids) << "stream " << i;
    EXPECT_EQ(r.text, want.text) << "stream " << i;
    EXPECT_EQ(r.result.finish, want.result.finish) << "stream " << i;
    EXPECT_EQ(r.result.completion_tokens, want.result.completion_tokens) << "stream " << i;
    EXPECT_FALSE(r.result.token_ids.empty());
    drafted += r.result.drafted;
  }
  EXPECT_GT(drafted, 0);                     // some streams drafted
  EXPECT_EQ(solo[1].result.drafted, 0);      // draft: false decodes serially
  EXPECT_EQ(solo[5].result.finish, FinishReason::Stop);
  // The rounds really interleaved: consecutive forwards kept changing stream.
  EXPECT_GT(model.switches(), 8 * kStreams);
  const auto st = s->stats();
  EXPECT_EQ(st.requests_total, kStreams);
  EXPECT_EQ(st.requests_running, 0);
  EXPECT_EQ(st.time_to_first_token.count, kStreams);
}

TEST(Scheduler, SharedRoundsEqualSoloRunsWithinTheirRowBound) {
  constexpr int kStreams = 8;
  constexpr std::int64_t kSharedRows = 6;
  std::vector<Reply> solo;
  {
    FakeModel model;
    auto s = make(model, options(1));
    for (int i = 0; i < kStreams; ++i) solo.push_back(collect(*s->submit(request(i))));
    EXPECT_TRUE(model.rounds.empty());  // one stream: every round is its own forward
  }
  FakeModel model;
  auto o = options(kStreams);
  o.shared_rows = kSharedRows;
  auto s = make(model, o);
  std::vector<std::shared_ptr<GenerationStream>> streams;
  for (int i = 0; i < kStreams; ++i) streams.push_back(s->submit(request(i)));
  for (int i = 0; i < kStreams; ++i) {
    const Reply r = collect(*streams[static_cast<std::size_t>(i)]);
    EXPECT_EQ(r.result.token_ids, solo[static_cast<std::size_t>(i)].result.token_ids) << "stream " << i;
    EXPECT_EQ(r.text, solo[static_cast<std::size_t>(i)].text) << "stream " << i;
  }
  std::lock_guard lock(model.mu);
  ASSERT_FALSE(model.rounds.empty());
  std::size_t most_parts = 0;
  for (const auto& [parts, rows] : model.rounds) {
    EXPECT_GE(parts, 2u);  // a lone stream's round is a plain forward
    EXPECT_LE(rows, kSharedRows);
    most_parts = std::max(most_parts, parts);
  }
  EXPECT_GE(most_parts, 3u);
}

TEST(Scheduler, CancelledStreamsLeaveAndFreeTheirState) {
  FakeModel model(4, /*delay_ms=*/2);
  auto s = make(model, options(2, 8));
  GenerationRequest long_one = request(2);
  long_one.max_tokens = 100000;
  auto a = s->submit(long_one);
  auto b = s->submit(long_one);
  auto queued = s->submit(long_one);  // both slots taken: it waits
  std::string piece;
  ASSERT_TRUE(a->next(piece));
  ASSERT_TRUE(b->next(piece));
  EXPECT_EQ(s->stats().requests_waiting, 1);
  EXPECT_EQ(g_live_states.load(), 2);
  queued->cancel();  // leaves the queue without ever running
  a->cancel();
  const Reply ra = collect(*a);
  EXPECT_EQ(ra.result.finish, FinishReason::Cancelled);
  EXPECT_EQ(collect(*queued).result.finish, FinishReason::Cancelled);
  // a's state is gone as it closes; b still runs, alone.
  EXPECT_EQ(g_live_states.load(), 1);
  auto st = s->stats();
  EXPECT_EQ(st.requests_running, 1);
  EXPECT_EQ(st.requests_waiting, 0);
  EXPECT_EQ(st.memory_reserved_bytes, options(2).memory.request_bytes(s->request_tokens(long_one)));
  b->cancel();
  EXPECT_EQ(collect(*b).result.finish, FinishReason::Cancelled);
  EXPECT_EQ(g_live_states.load(), 0);
  st = s->stats();
  EXPECT_EQ(st.requests_running, 0);
  EXPECT_EQ(st.memory_reserved_bytes, 0u);
  EXPECT_EQ(st.requests_cancelled, 3);
}

TEST(Scheduler, AdmissionRefusesWhatNeverFitsAndBeyondTheQueue) {
  FakeModel model(4, /*delay_ms=*/2);
  auto o = options(1, 1);
  o.memory.budget_bytes = o.memory.weight_bytes + o.memory.workspace_bytes + 100 * o.memory.state_bytes_per_token;
  auto s = make(model, o);
  GenerationRequest big = request(0);
  big.max_tokens = 101 - static_cast<std::int64_t>(big.prompt.size());  // 101 tokens: one too many
  try {
    s->submit(big);
    FAIL() << "a request over the budget was admitted";
  } catch (const AdmissionError& e) {
    EXPECT_EQ(e.kind(), AdmissionError::Kind::NeverFits);
    EXPECT_EQ(e.fits_tokens(), 100);
    EXPECT_NE(std::string(e.what()).find("at most 100 tokens"), std::string::npos) << e.what();
  }
  big.max_tokens -= 1;  // exactly 100 fits
  auto a = s->submit(big);
  auto b = s->submit(big);  // waits for a's memory and slot
  try {
    s->submit(big);
    FAIL() << "a request beyond the queue bound was queued";
  } catch (const AdmissionError& e) {
    EXPECT_EQ(e.kind(), AdmissionError::Kind::QueueFull);
    EXPECT_GE(e.retry_after_s(), 1);
  }
  EXPECT_EQ(collect(*a).result.finish, FinishReason::Length);
  EXPECT_EQ(collect(*b).result.finish, FinishReason::Length);
  EXPECT_EQ(s->stats().requests_refused, 2);
}

TEST(Scheduler, QueueIsFirstInFirstOut) {
  FakeModel model(4, /*delay_ms=*/5);
  auto o = options(4);
  // Memory for one request at a time, so that every later one waits in the queue.
  o.memory.budget_bytes = o.memory.weight_bytes + o.memory.workspace_bytes + 60 * o.memory.state_bytes_per_token;
  auto s = make(model, o);
  std::vector<std::shared_ptr<GenerationStream>> streams;
  std::vector<std::int32_t> firsts;
  for (int i = 0; i < 5; ++i) {
    GenerationRequest r;
    r.prompt = {static_cast<std::int32_t>(10 + i), 1, 2};
    r.max_tokens = i == 1 ? 50 : 5;  // a big one second: the small ones behind it do not pass it
    r.sampling.temperature = 0.0f;
    firsts.push_back(r.prompt[0]);
    streams.push_back(s->submit(r));
  }
  EXPECT_EQ(s->stats().requests_waiting, 4);
  for (auto& st : streams) collect(*st);
  std::lock_guard lock(model.mu);
  EXPECT_EQ(model.started, firsts);
}

// Prompt scoring (echo with logprobs): every prompt token after the first is scored by the row before it, over
// several prefill chunks; the reply that follows is the plain request's, and max_tokens 0 (generate false)
// ends after prefill with the records and no token.
TEST(Scheduler, PromptScoringRecordsEveryPromptRowAcrossChunks) {
  const std::vector<std::int32_t> prompt = {3, 17, 5, 5, 9, 30, 1, 2, 8, 21, 4};  // three chunks of 4
  std::vector<TokenLogprob> want;
  {
    std::vector<std::int32_t> history;
    const auto rows = test::fake_forward(history, prompt, static_cast<std::int64_t>(prompt.size()));
    SamplingParams raw;
    raw.temperature = 0.0f;
    for (std::size_t i = 0; i + 1 < prompt.size(); ++i)
      want.push_back(token_logprob(std::span<const float>(rows).subspan(i * kVocab, kVocab), raw, prompt[i + 1], 2));
  }
  const auto same = [](const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].token != b[i].token || a[i].logprob != b[i].logprob || a[i].top != b[i].top) return false;
    return true;
  };
  FakeModel model;
  auto o = options(2);
  o.plan.chunk = 4;
  auto s = make(model, o);
  GenerationRequest plain;
  plain.prompt = prompt;
  plain.sampling.temperature = 0.8f;
  plain.seed = 5;
  plain.max_tokens = 6;
  plain.logprobs = 2;
  const Reply base = collect(*s->submit(plain));
  EXPECT_TRUE(base.result.prompt_logprobs.empty());

  GenerationRequest scored = plain;
  scored.prompt_logprobs = true;
  const auto stream = s->submit(scored);
  const Reply r = collect(*stream);
  EXPECT_TRUE(same(r.result.prompt_logprobs, want));
  EXPECT_TRUE(same(stream->prompt_logprobs(), want));
  EXPECT_EQ(r.result.token_ids, base.result.token_ids);
  EXPECT_TRUE(same(r.result.logprobs, base.result.logprobs));
  EXPECT_EQ(r.text, base.text);

  GenerationRequest only = scored;
  only.generate = false;
  const Reply o2 = collect(*s->submit(only));
  EXPECT_TRUE(same(o2.result.prompt_logprobs, want));
  EXPECT_TRUE(o2.result.token_ids.empty());
  EXPECT_EQ(o2.text, "");
  EXPECT_EQ(o2.result.finish, FinishReason::Length);
  EXPECT_EQ(o2.result.completion_tokens, 0);
  EXPECT_EQ(o2.result.prompt_tokens, static_cast<std::int64_t>(prompt.size()));
  EXPECT_EQ(s->request_tokens(only), static_cast<std::int64_t>(prompt.size()));
}

}  // namespace
}  // namespace tf
