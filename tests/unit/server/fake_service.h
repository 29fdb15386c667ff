#pragma once
// An InferenceService without a model: one token per prompt byte, canned replies, and optionally a slow
// generation that runs until cancelled (to test disconnects and shutdown).
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/admission_error.h"
#include "server/inference_service.h"
#include "text/template/template_error.h"

namespace tf::server::testing {

class FakeService : public InferenceService {
 public:
  std::int64_t context = 64;
  std::int64_t vocab = 300;
  SamplingParams defaults{0.7f, 40, 0.9f, 0.05f};
  std::vector<std::string> pieces = {"Hel", "lo", " world"};
  FinishReason finish = FinishReason::Stop;
  std::string error;
  bool template_throws = false;
  bool slow = false;
  std::optional<AdmissionError> refuse;  // submit throws it (the engine's admission refusal)
  EngineStats stats_to_report;           // what stats() says besides requests_total

  ~FakeService() override {
    for (auto& t : threads_) t.join();
  }

  std::int64_t context_length() const override { return context; }
  std::int64_t vocab_size() const override { return vocab; }
  SamplingParams default_sampling() const override { return defaults; }
  std::string render_chat(const ChatInput& input) const override {
    if (template_throws) throw TemplateError(TemplateError::Kind::Raised, "System role not supported");
    std::string text;
    for (const auto& m : input.messages)
      text += m["role"].get<std::string>() + ": " + m["content"].get<std::string>() + "\n";
    if (input.add_generation_prompt) text += "assistant: ";
    last_rendered = text;
    return text;
  }
  std::string chat_template_source(const ChatInput&) const override { return template_source; }
  // Records the grammar; masks nothing (the fake's replies are canned).
  std::shared_ptr<const TokenConstraint> call_grammar_constraint(
      std::shared_ptr<const grammar::Grammar> grammar, std::string after,
      std::vector<tools::CallTrigger> triggers) const override {
    struct Unmasked final : TokenConstraint {
      void mask(std::span<const std::int32_t>, std::span<float>) const override {}
    };
    last_call_grammar = std::move(grammar);
    last_call_after = std::move(after);
    last_triggers = std::move(triggers);
    return std::make_shared<Unmasked>();
  }
  std::shared_ptr<const TokenConstraint> reasoning_budget(ReasoningBudget budget) const override {
    struct Unmasked final : TokenConstraint {
      void mask(std::span<const std::int32_t>, std::span<float>) const override {}
    };
    last_budget = std::move(budget);
    return std::make_shared<Unmasked>();
  }
  // Records the grammar; masks nothing.
  std::shared_ptr<const TokenConstraint> grammar_constraint(std::shared_ptr<const grammar::Grammar> grammar,
                                                            std::string after) const override {
    struct Unmasked final : TokenConstraint {
      void mask(std::span<const std::int32_t>, std::span<float>) const override {}
    };
    last_structured = std::move(grammar);
    last_after = std::move(after);
    return std::make_shared<Unmasked>();
  }
  std::vector<std::int32_t> tokenize(const std::string& text, bool add_special) const override {
    std::vector<std::int32_t> ids;
    if (add_special) ids.push_back(1);
    for (unsigned char c : text) ids.push_back(c);
    return ids;
  }
  std::string detokenize(std::span<const std::int32_t> ids) const override {
    std::string text;
    for (const auto id : ids) text += static_cast<char>(id);
    return text;
  }
  std::vector<std::string> token_strings(std::span<const std::int32_t> ids) const override {
    std::vector<std::string> out;
    for (const auto id : ids) out.push_back(std::string(1, static_cast<char>(id)));
    return out;
  }
  EngineStats stats() const override {
    EngineStats s = stats_to_report;
    std::lock_guard lock(mu_);
    s.requests_total = static_cast<std::int64_t>(requests.size());
    return s;
  }
  std::shared_ptr<GenerationStream> submit(GenerationRequest request) override {
    if (refuse) throw *refuse;
    auto stream = std::make_shared<GenerationStream>();
    GenerationResult result;
    result.prompt_tokens = static_cast<std::int64_t>(request.prompt.size());
    {
      std::lock_guard lock(mu_);
      requests.push_back(request);
      streams.push_back(stream);
    }
    if (slow) {
      std::lock_guard lock(mu_);
      threads_.emplace_back([stream, result]() mutable {
        for (int i = 0; i < 4000 && !stream->cancelled(); ++i) {
          stream->push("x");
          ++result.completion_tokens;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        result.finish = stream->cancelled() ? FinishReason::Cancelled : FinishReason::Length;
        stream->close(result);
      });
      return stream;
    }
    for (const auto& p : pieces) stream->push(p);
    result.completion_tokens = static_cast<std::int64_t>(pieces.size());
    result.cached_tokens = 2;
    result.finish = finish;
    result.error = error;
    stream->close(result);
    return stream;
  }

  GenerationRequest last_request() {
    std::lock_guard lock(mu_);
    return requests.back();
  }
  std::size_t request_count() {
    std::lock_guard lock(mu_);
    return requests.size();
  }
  // The newest submitted stream, or null.
  std::shared_ptr<GenerationStream> last_stream() {
    std::lock_guard lock(mu_);
    return streams.empty() ? nullptr : streams.back();
  }

  mutable std::string last_rendered;
  mutable std::shared_ptr<const grammar::Grammar> last_call_grammar;
  mutable std::string last_call_after;
  mutable std::vector<tools::CallTrigger> last_triggers;
  mutable std::optional<ReasoningBudget> last_budget;
  mutable std::shared_ptr<const grammar::Grammar> last_structured;
  mutable std::string last_after;
  // The template text reported to the server: no tool markers (the server describes tools itself).
  std::string template_source = "{% for m in messages %}{{ m.content }}{% endfor %}";

 private:
  std::vector<GenerationRequest> requests;
  std::vector<std::shared_ptr<GenerationStream>> streams;
  mutable std::mutex mu_;
  std::vector<std::thread> threads_;
};

}  // namespace tf::server::testing
