// POST /v1/completions
#include <fmt/format.h>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/completion_response.h"
#include "server/generation_runner.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/json_fields.h"
#include "server/openai_ids.h"
#include "server/sse.h"

namespace tf::server {

namespace {

class CompletionSse final : public SseFormatter {
 public:
  CompletionSse(ReplyMeta meta, bool include_usage) : meta_(std::move(meta)), include_usage_(include_usage) {}
  std::string opening() override { return {}; }
  std::string text(const std::string& piece) override {
    return sse_data(text_completion_chunk(meta_, piece, nullptr, include_usage_));
  }
  std::string closing(const std::string&, const GenerationResult& r) override {
    std::string out = sse_data(text_completion_chunk(
        meta_, "", r.finish == FinishReason::Length ? "length" : "stop", include_usage_));
    if (include_usage_) out += sse_data(text_completion_usage_chunk(meta_, r));
    return out + sse_done();
  }
  std::string failure(const std::string& message) override {
    return sse_data({{"error", error_object(message, "server_error", std::nullopt, "server_error")}}) + sse_done();
  }

 private:
  ReplyMeta meta_;
  bool include_usage_;
};

std::vector<std::int32_t> prompt_tokens(const InferenceService& service, const CompletionRequest& r) {
  if (const auto* text = std::get_if<std::string>(&r.prompt)) return service.tokenize(*text, /*add_special=*/true);
  const auto& ids = std::get<std::vector<std::int32_t>>(r.prompt);
  const auto vocab = service.vocab_size();
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw invalid_request(
          fmt::format("Invalid 'prompt': token id {} at position {} is outside the vocabulary (0 to {}).", ids[i],
                      i, vocab - 1),
          "prompt", "invalid_value");
  return ids;
}

}  // namespace

void handle_completions(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  const auto request = parse_completion_request(body);
  auto& service = ctx.service();
  const ReplyMeta meta{random_id("cmpl-"), ctx.check_model(request.model), unix_now(),
                       ctx.system_fingerprint()};
  auto plan = plan_generation(service, ctx.options(), prompt_tokens(service, request), request.sampling, "prompt");

  auto generation = std::make_shared<Generation>(ctx, req, std::move(plan));
  if (request.stream) {
    send_stream(res, std::move(generation), std::make_unique<CompletionSse>(meta, request.include_usage));
    return;
  }
  const auto done = generation->collect();
  check_finished(done.result);
  auto reply = text_completion(meta, done.text, done.result);
  if (request.sampling.return_token_ids) reply["choices"][0]["token_ids"] = done.result.token_ids;
  send_json(res, 200, reply);
}

}  // namespace tf::server
