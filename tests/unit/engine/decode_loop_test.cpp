#include "engine/decode_loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <cmath>

#include "engine/drafting/context_copy.h"
#include "engine/drafting/draft_source.h"
#include "engine/grammar_constraint.h"
#include "engine/keyed_noise.h"
#include "engine/sampler.h"
#include "engine/stream_decoder.h"
#include "engine/token_constraint.h"
#include "fake_logits.h"
#include "families/model.h"
#include "text/grammar/json_schema.h"
#include "text/tool_calls/call_grammar.h"
#include "text/tool_calls/json_scanner.h"

namespace tf {
namespace {

constexpr int kVocab = test::kFakeVocab;

// A fake target: the logits at a position are a fixed function of (position, token there, token before).
// A state that keeps stale tokens after a rollback, or a row taken for the wrong position, changes them.
class FakeState final : public test::FakeTokenState {
 public:
  void truncate(std::int64_t n) override {
    ASSERT_LE(n, length());
    FakeTokenState::truncate(n);
  }
};

class FakeModel final : public Model {
 public:
  FakeModel() {
    info_.vocab = kVocab;
    info_.context = 1 << 20;
  }
  const ModelInfo& info() const override { return info_; }
  std::unique_ptr<SequenceState> new_state() const override { return std::make_unique<FakeState>(); }
  std::vector<float> forward(SequenceState& state, std::span<const std::int32_t> tokens, std::int64_t rows) override {
    auto& st = dynamic_cast<FakeState&>(state);
    auto out = test::fake_forward(st.tokens, tokens, rows);
    ++forwards;
    return out;
  }
  // A backend that finds greedy tokens itself: the host's greedy_token of each row, as the CUDA one is.
  bool greedy_on_backend() const override { return greedy_ids; }
  std::vector<std::int32_t> forward_greedy(SequenceState& state, std::span<const std::int32_t> tokens,
                                           std::int64_t rows) override {
    const auto logits = forward(state, tokens, rows);
    std::vector<std::int32_t> out;
    for (std::int64_t r = 0; r < rows; ++r)
      out.push_back(greedy_token(std::span<const float>(logits).subspan(static_cast<std::size_t>(r * kVocab), kVocab)));
    ++greedy_calls;
    return out;
  }
  // A backend that samples itself: the host's sample_token of each row at its position, as the CUDA one is.
  bool samples_on_backend() const override { return sampled_ids; }
  std::vector<std::int32_t> forward_sampled(SequenceState& state, std::span<const std::int32_t> tokens,
                                            std::int64_t rows, const TokenChoice& c) override {
    const auto logits = forward(state, tokens, rows);
    std::vector<std::int32_t> out;
    const SamplingParams sp{c.temperature, c.top_k, c.top_p, c.min_p};
    for (std::int64_t r = 0; r < rows; ++r)
      out.push_back(sample_token(std::span<const float>(logits).subspan(static_cast<std::size_t>(r * kVocab), kVocab),
                                 sp, c.seed, c.position + r));
    ++sampled_calls;
    return out;
  }
  std::vector<ForwardResult> forward_parts(std::span<const ForwardPart> parts) override {
    for (const auto& p : parts) ahead_flags.push_back(p.ahead);
    return Model::forward_parts(parts);
  }
  int forwards = 0;
  bool greedy_ids = false;
  int greedy_calls = 0;
  bool sampled_ids = false;
  int sampled_calls = 0;
  std::vector<bool> ahead_flags;  // each round's ForwardPart::ahead

 private:
  ModelInfo info_;
};

// Proposes the target's true continuation (computed by a serial oracle run) with planted errors.
class OracleDrafter final : public DraftSource {
 public:
  OracleDrafter(std::vector<std::int32_t> truth, std::size_t prompt_len, int error_every)
      : truth_(std::move(truth)), prompt_len_(prompt_len), error_every_(error_every) {}
  std::vector<std::int32_t> propose(std::span<const std::int32_t> history, int max_tokens) override {
    std::vector<std::int32_t> out;
    const std::size_t at = history.size() - prompt_len_;
    for (int i = 0; i < max_tokens && at + static_cast<std::size_t>(i) < truth_.size(); ++i) {
      std::int32_t t = truth_[at + static_cast<std::size_t>(i)];
      if (error_every_ > 0 && (++calls_ % error_every_) == 0) t = (t + 1) % kVocab;
      out.push_back(t);
    }
    return out;
  }

 private:
  std::vector<std::int32_t> truth_;
  std::size_t prompt_len_;
  int error_every_;
  int calls_ = 0;
};

struct Outcome {
  std::vector<std::int32_t> tokens;
  FinishReason finish;
  DecodeCounters counters;
  std::int64_t final_length;
};

Outcome run_decode(const SamplingParams& sp, int max_drafts, DraftSource* drafter, std::int64_t budget,
        std::vector<std::int32_t> eos = {}, bool full_windows = false, bool greedy_ids = false,
        int* greedy_calls = nullptr, std::vector<bool>* ahead_flags = nullptr,
        const TokenConstraint* constraint = nullptr, bool sampled_ids = false, int* sampled_calls = nullptr) {
  FakeModel model;
  model.greedy_ids = greedy_ids;
  model.sampled_ids = sampled_ids;
  auto state = model.new_state();
  std::vector<std::int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
  auto logits = model.forward(*state, prompt, 1);
  std::vector<std::int32_t> history = prompt;
  DecodeSettings s;
  s.sampling = sp;
  s.seed = 42;
  s.budget = budget;
  s.eos = eos;
  s.max_drafts = max_drafts;
  s.full_windows = full_windows;
  s.constraint = constraint;
  Outcome r;
  r.finish = decode_stream(model, *state, logits, history, s, drafter, [&](std::int32_t t) {
    r.tokens.push_back(t);
    return true;
  }, [] { return false; }, r.counters);
  r.final_length = state->length();
  if (greedy_calls != nullptr) *greedy_calls = model.greedy_calls;
  if (sampled_calls != nullptr) *sampled_calls = model.sampled_calls;
  if (ahead_flags != nullptr) *ahead_flags = model.ahead_flags;
  return r;
}

// A greedy round on ids is marked ahead (the family may queue the next one) exactly when the next round is
// the one token it finds: no drafts, and budget left after that token. Never with drafts or sampling.
TEST(DecodeLoop, GreedyRoundsWithoutDraftsAreMarkedAhead) {
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  std::vector<bool> flags;
  const Outcome plain = run_decode(greedy, 0, nullptr, 20, {}, false, true, nullptr, &flags);
  ASSERT_EQ(plain.counters.rounds, 19);  // the first token comes from the prompt's logits
  std::vector<bool> want(19, true);
  want.back() = false;  // the round that finds the 20th token: the budget ends with it
  EXPECT_EQ(flags, want);
  OracleDrafter d(plain.tokens, 8, 3);
  run_decode(greedy, 6, &d, 20, {}, true, true, nullptr, &flags);
  EXPECT_FALSE(flags.empty());
  EXPECT_EQ(std::count(flags.begin(), flags.end(), true), 0) << "a drafted stream's round marked ahead";
  SamplingParams warm;
  warm.temperature = 0.7f;
  run_decode(warm, 0, nullptr, 20, {}, false, true, nullptr, &flags);
  EXPECT_EQ(std::count(flags.begin(), flags.end(), true), 0) << "a sampled round marked ahead";
}

// Greedy rounds that bring back ids (a backend's argmax) give the tokens of rounds that bring back logits,
// serial and drafted, and sampled requests never take that path.
TEST(DecodeLoop, GreedyIdsFromTheBackendEqualHostSampling) {
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  const Outcome host = run_decode(greedy, 0, nullptr, 50);
  int calls = 0;
  const Outcome ids = run_decode(greedy, 0, nullptr, 50, {}, false, true, &calls);
  EXPECT_EQ(ids.tokens, host.tokens);
  EXPECT_EQ(ids.final_length, host.final_length);
  EXPECT_GT(calls, 40);
  for (int error_every : {0, 1, 3}) {
    OracleDrafter d(host.tokens, 8, error_every);
    const Outcome drafted = run_decode(greedy, 6, &d, 50, {}, true, true, &calls);
    EXPECT_EQ(drafted.tokens, host.tokens) << "errors every " << error_every;
    EXPECT_GT(calls, 0);
  }
  SamplingParams warm;
  warm.temperature = 0.7f;
  run_decode(warm, 0, nullptr, 10, {}, false, true, &calls);
  EXPECT_EQ(calls, 0);
}

// Sampled rounds that bring back ids (a backend's keyed sample, each row at its own position) give the
// tokens of rounds that bring back logits, serial and drafted with planted errors, at the settings clients
// send; without drafts their rounds are queued ahead like greedy ones.
TEST(DecodeLoop, SampledIdsFromTheBackendEqualHostSampling) {
  for (const auto& [t, k, p] : std::vector<std::tuple<float, int, float>>{{0.8f, 0, 0.95f}, {0.7f, 40, 1.0f}, {1.0f, 0, 1.0f}}) {
    SamplingParams sp;
    sp.temperature = t;
    sp.top_k = k;
    sp.top_p = p;
    const Outcome host = run_decode(sp, 0, nullptr, 50);
    int calls = 0;
    std::vector<bool> flags;
    const Outcome ids = run_decode(sp, 0, nullptr, 50, {}, false, false, nullptr, &flags, nullptr, true, &calls);
    EXPECT_EQ(ids.tokens, host.tokens) << "T " << t;
    EXPECT_EQ(ids.final_length, host.final_length);
    EXPECT_GT(calls, 40);
    EXPECT_EQ(std::count(flags.begin(), flags.end(), true), 48) << "sampled rounds queued ahead";
    for (int error_every : {0, 1, 3}) {
      OracleDrafter d(host.tokens, 8, error_every);
      const Outcome drafted = run_decode(sp, 6, &d, 50, {}, true, false, nullptr, nullptr, nullptr, true, &calls);
      EXPECT_EQ(drafted.tokens, host.tokens) << "T " << t << " errors every " << error_every;
      EXPECT_GT(calls, 0);
    }
  }
}

TEST(DecodeLoop, DraftedEqualsSerialWithPlantedErrorsAtEveryTemperature) {
  for (float temperature : {0.0f, 0.7f, 1.0f}) {
    SamplingParams sp;
    sp.temperature = temperature;
    const Outcome serial = run_decode(sp, 0, nullptr, 60);
    ASSERT_EQ(serial.tokens.size(), 60u);
    EXPECT_EQ(serial.counters.drafted, 0);
    // Both window policies: adapting to acceptance, and the most drafts every round.
    for (bool full : {false, true})
    for (int error_every : {0, 1, 2, 3, 5, 7}) {
      for (int max_drafts : {1, 2, 4, 8}) {
        OracleDrafter d(serial.tokens, 8, error_every);
        const Outcome drafted = run_decode(sp, max_drafts, &d, 60, {}, full);
        EXPECT_EQ(drafted.tokens, serial.tokens) << "T " << temperature << " errors every " << error_every
                                                 << " max drafts " << max_drafts << " full windows " << full;
        EXPECT_EQ(drafted.finish, FinishReason::Length);
        if (error_every == 0) {
          // every draft right: each round emits 1 + its drafts, so rounds shrink as the window grows
          EXPECT_EQ(drafted.counters.accepted, drafted.counters.drafted);
          EXPECT_LE(drafted.counters.rounds, max_drafts >= 4 ? 15 : 30);
        } else if (error_every == 1) {
          EXPECT_EQ(drafted.counters.accepted, 0);  // every draft wrong: nothing accepted, output unchanged
        } else {
          EXPECT_GT(drafted.counters.accepted, 0);
        }
        EXPECT_EQ(drafted.counters.emitted, 60);
      }
    }
  }
}

// StreamDecoder driven as decode_stream drives it, keeping its log-probability records.
struct Recorded {
  std::vector<std::int32_t> tokens;
  std::vector<TokenLogprob> logprobs;
  DecodeCounters counters;
};

Recorded run_recorded(const SamplingParams& sp, DraftSource* drafter, int max_drafts, std::int64_t budget,
                      const LogitAdjustments* adjust, int logprobs, bool greedy_ids = false) {
  FakeModel model;
  model.greedy_ids = greedy_ids;
  auto state = model.new_state();
  const std::vector<std::int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
  auto logits = model.forward(*state, prompt, 1);
  DecodeSettings s;
  s.sampling = sp;
  s.seed = 42;
  s.budget = budget;
  s.max_drafts = max_drafts;
  s.adjust = adjust;
  s.logprobs = logprobs;
  Recorded r;
  StreamDecoder d(model, *state, logits, prompt, s, drafter, [&](std::int32_t t) {
    r.tokens.push_back(t);
    return true;
  });
  while (!d.done()) {
    const auto in = d.next_input();
    if (!in) break;
    d.accept(run_round(model, *state, *in));
  }
  r.logprobs = d.logprobs();
  r.counters = d.counters();
  EXPECT_EQ(greedy_ids ? 0 : model.greedy_calls, 0);
  return r;
}

// Bias and penalties change each row by the tokens before it, and logprobs are recorded per emitted token:
// drafted (planted errors, both window policies) equals serial in tokens and in every record, bit for bit;
// each record is the log-softmax of the adjusted, scaled, filtered row recomputed here from the fake logits.
TEST(DecodeLoop, PenaltiesBiasAndLogprobsAreExactUnderDrafts) {
  LogitAdjustments adj;
  adj.presence_penalty = 0.7f;
  adj.frequency_penalty = 0.4f;
  adj.repetition_penalty = 1.3f;
  adj.bias = {{5, 3.0f}, {7, -100.0f}};
  for (float temperature : {0.0f, 0.8f}) {
    SamplingParams sp;
    sp.temperature = temperature;
    sp.top_k = temperature > 0 ? 12 : 0;
    const Recorded plain = run_recorded(sp, nullptr, 0, 50, nullptr, -1);
    const Recorded serial = run_recorded(sp, nullptr, 0, 50, &adj, 5);
    ASSERT_EQ(serial.tokens.size(), 50u);
    ASSERT_EQ(serial.logprobs.size(), 50u);
    EXPECT_NE(serial.tokens, plain.tokens) << "the adjustments changed nothing";
    EXPECT_EQ(std::count(serial.tokens.begin(), serial.tokens.end(), 7), 0) << "a -100 bias token was sampled";
    // Logprobs alone change no token; with greedy ids on, a stream asking for logprobs takes logits instead.
    EXPECT_EQ(run_recorded(sp, nullptr, 0, 50, nullptr, 3, true).tokens, plain.tokens);
    // The reference recomputation.
    const std::vector<std::int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
    std::vector<std::int32_t> seen = prompt;
    for (std::size_t i = 0; i < serial.tokens.size(); ++i) {
      std::vector<std::int32_t> history = prompt;
      history.insert(history.end(), serial.tokens.begin(), serial.tokens.begin() + static_cast<std::ptrdiff_t>(i));
      std::vector<std::int32_t> hist;
      auto row = test::fake_forward(hist, history, 1);
      const auto generated = std::span<const std::int32_t>(serial.tokens).first(i);
      for (int v = 0; v < kVocab; ++v) {
        double x = row[static_cast<std::size_t>(v)];
        const bool in_seen = std::find(history.begin(), history.end(), v) != history.end();
        if (in_seen) x = x > 0 ? x / 1.3 : x * 1.3;
        const auto count = std::count(generated.begin(), generated.end(), v);
        if (count > 0) x -= 0.4 * static_cast<double>(count) + 0.7;
        if (v == 5) x += 3.0;
        if (v == 7) x -= 100.0;
        row[static_cast<std::size_t>(v)] = static_cast<float>(x);
      }
      const double t = temperature > 0 ? temperature : 1.0;
      std::vector<double> scaled;
      for (float v : row) scaled.push_back(static_cast<double>(v) / t);
      std::vector<int> order(kVocab);
      for (int v = 0; v < kVocab; ++v) order[static_cast<std::size_t>(v)] = v;
      std::sort(order.begin(), order.end(), [&](int a, int b) {
        const double x = scaled[static_cast<std::size_t>(a)], y = scaled[static_cast<std::size_t>(b)];
        return x != y ? x > y : a < b;
      });
      const std::size_t kept = sp.top_k > 0 ? static_cast<std::size_t>(sp.top_k) : order.size();
      double z = 0;
      for (std::size_t k = 0; k < kept; ++k) z += std::exp(scaled[static_cast<std::size_t>(order[k])]);
      const double best = scaled[static_cast<std::size_t>(order[0])];
      const auto& rec = serial.logprobs[i];
      EXPECT_EQ(rec.token, serial.tokens[i]);
      EXPECT_NEAR(rec.logprob, scaled[static_cast<std::size_t>(rec.token)] - std::log(z), 1e-4) << "row " << i;
      ASSERT_EQ(rec.top.size(), 5u);
      EXPECT_NEAR(rec.top[0].second, best - std::log(z), 1e-4);
      if (temperature == 0.0f) {
        EXPECT_EQ(rec.top[0].first, rec.token);
      }
    }
    for (int error_every : {0, 1, 3})
      for (int max_drafts : {2, 6}) {
        OracleDrafter d(serial.tokens, 8, error_every);
        const Recorded drafted = run_recorded(sp, &d, max_drafts, 50, &adj, 5);
        EXPECT_EQ(drafted.tokens, serial.tokens) << "T " << temperature << " errors every " << error_every;
        ASSERT_EQ(drafted.logprobs.size(), serial.logprobs.size());
        for (std::size_t i = 0; i < serial.logprobs.size(); ++i) {
          EXPECT_EQ(drafted.logprobs[i].logprob, serial.logprobs[i].logprob) << i;
          EXPECT_EQ(drafted.logprobs[i].top, serial.logprobs[i].top) << i;
        }
        if (error_every == 0) {
          EXPECT_GT(drafted.counters.accepted, 0);
        }
      }
  }
}

// A constraint that depends on everything generated before a row: token t may follow `generated` only when
// (t + its length + the sum of its tokens) % 4 == 0.
class PrefixRule final : public TokenConstraint {
 public:
  static bool allows(std::span<const std::int32_t> generated, std::int32_t t) {
    std::int64_t sum = 0;
    for (const auto g : generated) sum += g;
    return (t + static_cast<std::int64_t>(generated.size()) + sum) % 4 == 0;
  }
  void mask(std::span<const std::int32_t> generated, std::span<float> logits) const override {
    for (std::size_t t = 0; t < logits.size(); ++t)
      if (!allows(generated, static_cast<std::int32_t>(t))) logits[t] = -INFINITY;
  }
};

// A constrained stream emits only allowed tokens, and drafting (verify rows masked by their own prefixes) and
// backend greedy ids (which a constraint turns off) give exactly the serial tokens.
TEST(DecodeLoop, AConstraintMasksEveryRowAndDraftedStillEqualsSerial) {
  const PrefixRule rule;
  for (float temperature : {0.0f, 0.8f}) {
    SamplingParams sp;
    sp.temperature = temperature;
    const Outcome serial = run_decode(sp, 0, nullptr, 40, {}, false, false, nullptr, nullptr, &rule);
    ASSERT_EQ(serial.tokens.size(), 40u);
    for (std::size_t i = 0; i < serial.tokens.size(); ++i)
      ASSERT_TRUE(PrefixRule::allows(std::span<const std::int32_t>(serial.tokens).first(i), serial.tokens[i])) << i;
    const Outcome free = run_decode(sp, 0, nullptr, 40);
    EXPECT_NE(free.tokens, serial.tokens);
    for (int error_every : {0, 1, 3})
      for (bool full : {false, true}) {
        OracleDrafter d(serial.tokens, 8, error_every);
        const Outcome drafted = run_decode(sp, 6, &d, 40, {}, full, false, nullptr, nullptr, &rule);
        EXPECT_EQ(drafted.tokens, serial.tokens) << "T " << temperature << " errors every " << error_every;
        if (error_every == 0) {
          EXPECT_GT(drafted.counters.accepted, 0);
        }
      }
    int calls = 0;
    const Outcome ids = run_decode(sp, 0, nullptr, 40, {}, false, true, &calls, nullptr, &rule);
    EXPECT_EQ(ids.tokens, serial.tokens);
    EXPECT_EQ(calls, 0) << "a constrained stream took greedy ids from the backend";
  }
}

// A tool call's lazy grammar over a toy vocabulary (Hermes): the text is free until it writes <tool_call>, then
// the call's syntax with the function's schema holds it; every call that closes is read by the Hermes parser
// with arguments of the schema; drafted equals serial.
TEST(DecodeLoop, ALazyCallGrammarHoldsACallFromItsTriggerAndDraftedEqualsSerial) {
  // Every token a dead end could start from is left out (a lone quote, letter or '<'): the mask does not look ahead,
  // so a toy vocabulary must be able to finish whatever it starts, as a real one (all bytes are tokens) can.
  std::vector<std::string> words = {
      "<tool_call>",   "</tool_call>", "{", "}", "3",  "name", "\"name\"", ":", " ",    "\"f\"", ",",
      "\"arguments\"", "\"n\"",        "1", "2", "\n", "hi",   "4",        "6", "tool", "_call", ">",
      "true",          "\"n\": ",      "0", "-", "5",  "}\n",  "a",        "b", "f",    "EOS"};
  ASSERT_EQ(words.size(), static_cast<std::size_t>(kVocab));
  const std::int32_t eos = kVocab - 1;
  const tools::ToolSpec tool{"f",
                             nlohmann::ordered_json::parse(
                                 R"({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})")};
  const auto g = tools::tool_call_grammar(tools::ToolFormat::Hermes, {tool}, false);
  const auto vocabulary = token_vocabulary(words, {eos});
  const auto constraint =
      make_grammar_constraint(vocabulary, g, {eos}, {}, tools::call_triggers(tools::ToolFormat::Hermes));
  // Before the trigger: nothing masked.
  std::vector<float> row(static_cast<std::size_t>(kVocab), 0.0f);
  constraint->mask(std::vector<std::int32_t>{16, 8}, row);
  EXPECT_TRUE(std::all_of(row.begin(), row.end(), [](float x) { return x == 0.0f; }));
  // After it: only what continues the call ('{', whitespace), not the end or text.
  constraint->mask(std::vector<std::int32_t>{16, 0}, row);
  EXPECT_EQ(row[2], 0.0f);
  EXPECT_TRUE(std::isinf(row[static_cast<std::size_t>(eos)]));
  EXPECT_TRUE(std::isinf(row[16]));
  // The same grammar forced (no trigger): the reply is the call from its first token.
  const auto forced = make_grammar_constraint(vocabulary, g, {eos});
  int closed = 0;
  for (const auto* c : {constraint.get(), forced.get()}) {
    for (float temperature : {0.0f, 0.8f, 1.2f}) {
      SamplingParams sp;
      sp.temperature = temperature;
      const Outcome serial = run_decode(sp, 0, nullptr, 80, {eos}, false, false, nullptr, nullptr, c);
      std::string text;
      for (const auto t : serial.tokens) text += words[static_cast<std::size_t>(t)];
      const auto at = c == forced.get() ? text.find_first_not_of(" \n") : text.find("<tool_call>");
      if (c == forced.get()) {
        ASSERT_EQ(text.compare(at, 11, "<tool_call>"), 0) << text;
      }
      if (at != std::string::npos) {
        grammar::GrammarMatcher m(g);
        const auto state = m.run(m.initial(), std::string_view(text).substr(at));
        ASSERT_NE(state, grammar::GrammarMatcher::kDead) << ::testing::PrintToString(text) << " from " << at;
        if (serial.finish == FinishReason::Stop) {
          ++closed;
          EXPECT_TRUE(m.accepting(state)) << text;
          auto parser = tools::make_tool_call_parser(tools::ToolFormat::Hermes, {tool});
          std::vector<tools::ToolEvent> events;
          parser->feed(text, events);
          parser->finish(events);
          const auto reply = tools::collect_tool_calls(events);
          ASSERT_EQ(reply.calls.size(), 1u) << text;
          EXPECT_TRUE(nlohmann::json::parse(reply.calls[0].arguments)["n"].is_number_integer()) << text;
        }
      }
      for (int error_every : {0, 2}) {
        OracleDrafter d(serial.tokens, 8, error_every);
        const Outcome drafted = run_decode(sp, 6, &d, 80, {eos}, true, false, nullptr, nullptr, c);
        EXPECT_EQ(drafted.tokens, serial.tokens) << "T " << temperature;
        EXPECT_EQ(drafted.finish, serial.finish);
      }
    }
  }
  EXPECT_GT(closed, 0) << "no call closed";
}

// Structured output over a toy vocabulary: the replies are JSON of the schema (complete ones end with EOS), and
// drafted equals serial, the grammar masking every verify row by its own prefix.
TEST(DecodeLoop, AGrammarConstraintHoldsRepliesToASchemaAndDraftedEqualsSerial) {
  std::vector<std::string> words = {"{", "}", "\"", "a", "b", "\"a\"", "\"b\"", ":", ",", " ", "1", "2", "-",
                                    "true", "[", "]", "\"a\": ", "{\"", "\\", "n", "\n", "x", "\xC3\xA9", "\xC3",
                                    "\xA9", "0", ".", "\"]", "\",", "1}", "\"\"", "EOS"};
  ASSERT_EQ(words.size(), static_cast<std::size_t>(kVocab));
  const std::int32_t eos = kVocab - 1;
  const auto schema = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
      "a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3}},
      "required": ["a", "b"]})");
  const auto vocabulary = token_vocabulary(words, {eos});
  const auto constraint = make_grammar_constraint(vocabulary, grammar::json_schema_grammar(schema), {eos});
  // The first row: whitespace or an opening brace, nothing else (no EOS: the reply is not complete).
  std::vector<float> first(static_cast<std::size_t>(kVocab), 0.0f);
  constraint->mask({}, first);
  std::vector<std::string> allowed;
  for (std::size_t i = 0; i < first.size(); ++i)
    if (first[i] == 0.0f) allowed.push_back(words[i]);
  EXPECT_EQ(allowed, (std::vector<std::string>{"{", " ", "{\"", "\n"}));
  int completed = 0;
  for (float temperature : {0.0f, 0.7f, 1.0f, 1.5f}) {
    SamplingParams sp;
    sp.temperature = temperature;
    const Outcome serial = run_decode(sp, 0, nullptr, 80, {eos}, false, false, nullptr, nullptr, constraint.get());
    std::string text;
    for (const auto t : serial.tokens) text += words[static_cast<std::size_t>(t)];
    grammar::GrammarMatcher m(grammar::json_schema_grammar(schema));
    const auto state = m.run(m.initial(), text);
    ASSERT_NE(state, grammar::GrammarMatcher::kDead) << text;
    if (serial.finish == FinishReason::Stop) {
      ++completed;
      EXPECT_TRUE(m.accepting(state)) << text;
      EXPECT_NO_THROW((void)nlohmann::json::parse(text)) << text;
    }
    for (int error_every : {0, 2}) {
      OracleDrafter d(serial.tokens, 8, error_every);
      const Outcome drafted = run_decode(sp, 6, &d, 80, {eos}, true, false, nullptr, nullptr, constraint.get());
      EXPECT_EQ(drafted.tokens, serial.tokens) << "T " << temperature;
      EXPECT_EQ(drafted.finish, serial.finish);
    }
  }
  EXPECT_GT(completed, 0) << "no reply completed its JSON";
  const auto stats = grammar_mask_stats(*constraint);
  EXPECT_GT(stats.cached, 0);  // states met again take their mask from the cache
}

// The reasoning budget: the block holds exactly `budget` tokens, then the close is forced; drafted equals
// serial; a reply that does not open a block is not touched.
TEST(DecodeLoop, TheReasoningBudgetClosesTheBlockAfterExactlyItsTokens) {
  auto texts = std::make_shared<TokenTexts>();
  // Every byte of the forced text is a token, as in byte-level and byte-fallback vocabularies.
  for (int i = 0; i < kVocab - 7; ++i) texts->push_back(std::string(1, static_cast<char>('a' + i)));
  for (const char* w : {"\n", "<", "/", ">", "</", "t>", "\n\n"}) texts->push_back(w);
  for (const std::int64_t budget : {1, 5, 12}) {
    const auto constraint = make_reasoning_budget(texts, {budget, true, "<t>", "</t>"});
    for (float temperature : {0.0f, 1.0f}) {
      SamplingParams sp;
      sp.temperature = temperature;
      const Outcome serial = run_decode(sp, 0, nullptr, 30, {}, false, false, nullptr, nullptr, constraint.get());
      std::string before, after;
      for (std::size_t i = 0; i < serial.tokens.size(); ++i)
        (static_cast<std::int64_t>(i) < budget ? before : after) += (*texts)[static_cast<std::size_t>(serial.tokens[i])];
      if (before.find("</t>") == std::string::npos) {
        EXPECT_EQ(after.substr(0, 7), "\n</t>\n\n") << "budget " << budget << ": " << before << "|" << after;
      }
      OracleDrafter d(serial.tokens, 8, 3);
      const Outcome drafted = run_decode(sp, 6, &d, 30, {}, true, false, nullptr, nullptr, constraint.get());
      EXPECT_EQ(drafted.tokens, serial.tokens) << "budget " << budget << " T " << temperature;
    }
  }
  // starts_open false and a reply that does not start with the open marker: no mask at all.
  const auto unopened = make_reasoning_budget(texts, {1, false, "<t>", "</t>"});
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  EXPECT_EQ(run_decode(greedy, 0, nullptr, 20, {}, false, false, nullptr, nullptr, unopened.get()).tokens,
            run_decode(greedy, 0, nullptr, 20).tokens);
}

TEST(DecodeLoop, StopsOnEosInsideAnAcceptedWindowWithoutEmittingIt) {
  SamplingParams sp;
  sp.temperature = 0.0f;
  const Outcome serial = run_decode(sp, 0, nullptr, 40);
  // Make the 10th generated token an end-of-sequence id: both runs must stop right before it.
  const std::int32_t eos = serial.tokens[9];
  const std::size_t first = static_cast<std::size_t>(
      std::find(serial.tokens.begin(), serial.tokens.end(), eos) - serial.tokens.begin());
  const Outcome s2 = run_decode(sp, 0, nullptr, 40, {eos});
  OracleDrafter d(serial.tokens, 8, 0);
  const Outcome d2 = run_decode(sp, 8, &d, 40, {eos});
  EXPECT_EQ(s2.tokens.size(), first);
  EXPECT_EQ(d2.tokens, s2.tokens);
  EXPECT_EQ(d2.finish, FinishReason::Stop);
}

TEST(DecodeLoop, BudgetEndsInsideADraftWindow) {
  SamplingParams sp;
  sp.temperature = 0.0f;
  const Outcome serial = run_decode(sp, 0, nullptr, 13);
  OracleDrafter d(run_decode(sp, 0, nullptr, 40).tokens, 8, 0);
  const Outcome drafted = run_decode(sp, 8, &d, 13);
  EXPECT_EQ(drafted.tokens, serial.tokens);
  EXPECT_EQ(drafted.tokens.size(), 13u);
  OracleDrafter d2(run_decode(sp, 0, nullptr, 40).tokens, 8, 0);
  const Outcome full = run_decode(sp, 8, &d2, 13, {}, true);
  EXPECT_EQ(full.tokens, serial.tokens);
}

TEST(ContextCopy, ProposesWhatFollowedTheLatestEarlierMatch) {
  ContextCopyDrafter d;
  std::vector<std::int32_t> h = {1, 2, 3, 4, 5, 9, 1, 2, 3, 7, 8, 1, 2, 3};
  // last 3 tokens "1 2 3" occurred at 6..8 (latest), followed by 7 8 1 2 3
  EXPECT_EQ(d.propose(h, 3), (std::vector<std::int32_t>{7, 8, 1}));
  EXPECT_EQ(d.propose(h, 10), (std::vector<std::int32_t>{7, 8, 1, 2, 3}));
  EXPECT_TRUE(d.propose(std::vector<std::int32_t>{1, 2, 3}, 4).empty());
  EXPECT_TRUE(d.propose(h, 0).empty());
}

}  // namespace
}  // namespace tf
