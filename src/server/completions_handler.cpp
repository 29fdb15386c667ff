// POST /v1/completions
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/completion_response.h"
#include "server/generation_runner.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/json_fields.h"
#include "server/logprobs_json.h"
#include "server/openai_ids.h"
#include "server/sse.h"
#include "server/usage_json.h"

namespace tf::server {

namespace {

// One choice's chunks: with echo the prompt's text first; with logprobs the records read so far ride on each
// text chunk (each record is pushed before its token's text). With echo and logprobs the prompt's chunk waits
// for its records, which the engine sets when prefill ends, before any text: it goes out with the first text
// or the closing.
class CompletionSse final : public SseFormatter {
 public:
  CompletionSse(ReplyMeta meta, bool include_usage, std::int64_t index, bool last, std::string echo,
                std::optional<std::int32_t> scored, const InferenceService* service, GenerationStream* logprobs)
      : meta_(std::move(meta)),
        include_usage_(include_usage),
        index_(index),
        last_(last),
        echo_(std::move(echo)),
        first_prompt_token_(scored.value_or(0)),
        service_(service),
        logprobs_(logprobs),
        echo_pending_(scored.has_value() && logprobs_ != nullptr),
        offset_(echo_.size()) {}
  std::string opening() override {
    return echo_.empty() || echo_pending_ ? std::string() : sse_data(chunk(echo_, nullptr, false));
  }
  std::string text(const std::string& piece) override { return scored_echo() + sse_data(chunk(piece, nullptr, true)); }
  std::string closing(const std::string&, const GenerationResult& r) override {
    std::string out = scored_echo();
    out += sse_data(chunk("", r.finish == FinishReason::Length ? "length" : "stop", true));
    if (!last_) return out;
    if (include_usage_) out += sse_data(text_completion_usage_chunk(meta_, r));
    return out + sse_done();
  }
  std::string failure(const std::string& message) override {
    return sse_data({{"error", error_object(message, "server_error", std::nullopt, "server_error")}}) + sse_done();
  }

 private:
  nlohmann::ordered_json chunk(const std::string& text, nlohmann::ordered_json finish, bool with_logprobs) {
    auto j = text_completion_chunk(meta_, text, std::move(finish), include_usage_);
    j["choices"][0]["index"] = index_;
    if (logprobs_ && with_logprobs) {
      const auto records = logprobs_->take_logprobs();
      j["choices"][0]["logprobs"] = completion_logprobs(*service_, records, offset_);
    }
    return j;
  }
  // The prompt's chunk with the prompt's records, once.
  std::string scored_echo() {
    if (!echo_pending_) return {};
    echo_pending_ = false;
    auto j = text_completion_chunk(meta_, echo_, nullptr, include_usage_);
    j["choices"][0]["index"] = index_;
    std::size_t prompt_end = 0;
    j["choices"][0]["logprobs"] =
        echo_logprobs(*service_, first_prompt_token_, logprobs_->prompt_logprobs(), prompt_end);
    return sse_data(j);
  }
  ReplyMeta meta_;
  bool include_usage_;
  std::int64_t index_;
  bool last_;
  std::string echo_;
  std::int32_t first_prompt_token_;  // of a scored prompt
  const InferenceService* service_;
  GenerationStream* logprobs_;  // null: not asked for
  bool echo_pending_;           // echo with logprobs: the prompt's chunk is still to be sent
  std::size_t offset_;          // of the next completion token in the choice's text (after the echo)
};

std::vector<std::int32_t> prompt_tokens(const InferenceService& service, const CompletionPrompt& prompt,
                                        const std::string& param) {
  if (const auto* text = std::get_if<std::string>(&prompt)) return service.tokenize(*text, /*add_special=*/true);
  const auto& ids = std::get<std::vector<std::int32_t>>(prompt);
  const auto vocab = service.vocab_size();
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw invalid_request(fmt::format("Invalid '{}': token id {} at position {} is outside the vocabulary (0 to {}).",
                                        param, ids[i], i, vocab - 1),
                            "prompt", "invalid_value");
  return ids;
}

std::string prompt_text(const InferenceService& service, const CompletionPrompt& prompt) {
  if (const auto* text = std::get_if<std::string>(&prompt)) return *text;
  return service.detokenize(std::get<std::vector<std::int32_t>>(prompt));
}

double total_logprob(const GenerationResult& r) {
  double sum = 0.0;
  for (const auto& t : r.logprobs) sum += static_cast<double>(t.logprob);
  return sum;
}

}  // namespace

void handle_completions(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  const auto request = parse_completion_request(body);
  auto& service = ctx.service();
  const ReplyMeta meta{random_id("cmpl-"), ctx.check_model(request.model), unix_now(),
                       ctx.system_fingerprint()};
  const bool several = request.prompts.size() > 1;
  const auto n = request.sampling.n;
  const auto candidates = request.best_of;  // per prompt; >= n
  // Every prompt is planned (and refused) before any generation starts.
  std::vector<GenerationRequest> plans;
  for (std::size_t p = 0; p < request.prompts.size(); ++p) {
    const std::string param = several ? fmt::format("prompt[{}]", p) : std::string("prompt");
    plans.push_back(plan_generation(service, ctx.options(), prompt_tokens(service, request.prompts[p], param),
                                    request.sampling, "prompt"));
    if (request.structured.grammar) plans.back().constraint = service.grammar_constraint(request.structured.grammar, {});
    // best_of ranks candidates by their tokens' log-probabilities.
    if (candidates > n) plans.back().logprobs = std::max(plans.back().logprobs, 0);
    plans.back().prompt_logprobs = request.echo && request.sampling.logprobs >= 0;
  }
  std::vector<std::shared_ptr<Generation>> generations;
  for (const auto& plan : plans)
    for (std::int64_t j = 0; j < candidates; ++j)
      generations.push_back(std::make_shared<Generation>(ctx, req, candidates == 1 ? plan : choice_request(plan, j)));
  const bool logprobs = request.sampling.logprobs >= 0;

  if (request.stream) {  // best_of == n here
    std::vector<std::unique_ptr<SseFormatter>> formatters;
    for (std::size_t i = 0; i < generations.size(); ++i) {
      const auto p = i / static_cast<std::size_t>(n);
      formatters.push_back(std::make_unique<CompletionSse>(
          meta, request.include_usage, static_cast<std::int64_t>(i), i + 1 == generations.size(),
          request.echo ? prompt_text(service, request.prompts[p]) : std::string(),
          plans[p].prompt_logprobs ? std::optional(plans[p].prompt.front()) : std::nullopt, &service,
          logprobs ? &generations[i]->stream() : nullptr));
      formatters.back()->counts_prompt = i % static_cast<std::size_t>(n) == 0;
    }
    send_streams(res, std::move(generations), std::move(formatters));
    return;
  }
  std::vector<GenerationResult> results;
  std::vector<bool> first;
  auto choices = nlohmann::ordered_json::array();
  for (std::size_t p = 0; p < plans.size(); ++p) {
    std::vector<Generation::Collected> done;
    for (std::int64_t j = 0; j < candidates; ++j) {
      done.push_back(generations[p * static_cast<std::size_t>(candidates) + static_cast<std::size_t>(j)]->collect());
      check_finished(done.back().result);
    }
    std::vector<std::size_t> order(done.size());
    std::iota(order.begin(), order.end(), 0);
    if (candidates > n)  // the n with the highest total log-probability, best first (ties: lower index)
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return total_logprob(done[a].result) > total_logprob(done[b].result);
      });
    const std::string echo = request.echo ? prompt_text(service, request.prompts[p]) : std::string();
    for (std::int64_t k = 0; k < n; ++k) {
      const auto& d = done[order[static_cast<std::size_t>(k)]];
      auto one = text_completion(meta, echo + d.text, d.result);
      auto choice = std::move(one["choices"][0]);
      choice["index"] = static_cast<std::int64_t>(p) * n + k;
      if (logprobs) {
        std::size_t offset = echo.size();
        auto generated = completion_logprobs(service, d.result.logprobs, offset);
        if (request.echo) {
          std::size_t prompt_end = 0;
          choice["logprobs"] = echo_logprobs(service, plans[p].prompt.front(), d.result.prompt_logprobs, prompt_end);
          append_completion_logprobs(choice["logprobs"], generated);
        } else {
          choice["logprobs"] = std::move(generated);
        }
      }
      if (request.sampling.return_token_ids) choice["token_ids"] = d.result.token_ids;
      choices.push_back(std::move(choice));
    }
    for (std::int64_t j = 0; j < candidates; ++j) {  // usage counts every candidate generated
      results.push_back(done[static_cast<std::size_t>(j)].result);
      first.push_back(j == 0);
    }
  }
  auto reply = text_completion(meta, "", results.front());
  reply["choices"] = std::move(choices);
  reply["usage"] = completion_usage(sum_results(results, first));
  send_json(res, 200, reply);
}

}  // namespace tf::server
