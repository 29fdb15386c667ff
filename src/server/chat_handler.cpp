// POST /v1/chat/completions
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/chat_response.h"
#include "server/generation_runner.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/json_fields.h"
#include "server/openai_ids.h"
#include "server/sse.h"

namespace tf::server {

namespace {

class ChatSse final : public SseFormatter {
 public:
  ChatSse(ReplyMeta meta, bool include_usage) : meta_(std::move(meta)), include_usage_(include_usage) {}
  std::string opening() override {
    return sse_data(chat_chunk(meta_, {{"role", "assistant"}, {"content", ""}}, nullptr, include_usage_));
  }
  std::string text(const std::string& piece) override {
    return sse_data(chat_chunk(meta_, {{"content", piece}}, nullptr, include_usage_));
  }
  std::string closing(const std::string&, const GenerationResult& r) override {
    std::string out =
        sse_data(chat_chunk(meta_, nlohmann::ordered_json::object(), openai_finish_reason_json(r), include_usage_));
    if (include_usage_) out += sse_data(chat_usage_chunk(meta_, r));
    return out + sse_done();
  }
  std::string failure(const std::string& message) override {
    return sse_data({{"error", error_object(message, "server_error", std::nullopt, "server_error")}}) + sse_done();
  }

 private:
  static nlohmann::ordered_json openai_finish_reason_json(const GenerationResult& r) {
    return r.finish == FinishReason::Length ? "length" : "stop";
  }
  ReplyMeta meta_;
  bool include_usage_;
};

}  // namespace

void handle_chat_completions(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  const auto request = parse_chat_request(body);
  auto& service = ctx.service();
  const ReplyMeta meta{random_id("chatcmpl-"), ctx.check_model(request.model), unix_now(),
                       ctx.system_fingerprint()};

  ChatInput input;
  input.messages = request.messages;
  if (request.tools.is_array()) input.tools = request.tools;
  input.add_generation_prompt = request.add_generation_prompt;
  input.kwargs = request.template_kwargs;
  auto plan = plan_generation(service, ctx.options(), chat_prompt(service, input), request.sampling, "messages");

  auto generation = std::make_shared<Generation>(ctx, req, std::move(plan));
  if (request.stream) {
    send_stream(res, std::move(generation), std::make_unique<ChatSse>(meta, request.include_usage));
    return;
  }
  const auto done = generation->collect();
  check_finished(done.result);
  auto reply = chat_completion(meta, done.text, done.result);
  if (request.sampling.return_token_ids) reply["choices"][0]["token_ids"] = done.result.token_ids;
  send_json(res, 200, reply);
}

}  // namespace tf::server
