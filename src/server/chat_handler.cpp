// POST /v1/chat/completions
#include "server/api_error.h"
#include "server/chat_reply_reader.h"
#include "server/chat_request.h"
#include "server/chat_response.h"
#include "server/chat_setup.h"
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
  ChatSse(ReplyMeta meta, bool include_usage, std::unique_ptr<ChatReplyReader> reader)
      : meta_(std::move(meta)), include_usage_(include_usage), reader_(std::move(reader)) {}
  std::string opening() override {
    return sse_data(chat_chunk(meta_, {{"role", "assistant"}, {"content", ""}}, nullptr, include_usage_));
  }
  std::string text(const std::string& piece) override { return chunks(reader_->feed(piece)); }
  std::string closing(const std::string&, const GenerationResult& r) override {
    std::string out = chunks(reader_->finish());
    out += sse_data(chat_chunk(meta_, nlohmann::ordered_json::object(), reader_->finish_reason(r.finish), include_usage_));
    if (include_usage_) out += sse_data(chat_usage_chunk(meta_, r));
    return out + sse_done();
  }
  std::string failure(const std::string& message) override {
    return sse_data({{"error", error_object(message, "server_error", std::nullopt, "server_error")}}) + sse_done();
  }

 private:
  std::string chunks(const std::vector<nlohmann::ordered_json>& deltas) {
    std::string out;
    for (const auto& d : deltas) out += sse_data(chat_chunk(meta_, d, nullptr, include_usage_));
    return out;
  }
  ReplyMeta meta_;
  bool include_usage_;
  std::unique_ptr<ChatReplyReader> reader_;
};

}  // namespace

void handle_chat_completions(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  const auto request = parse_chat_request(body);
  const ReplyMeta meta{random_id("chatcmpl-"), ctx.check_model(request.model), unix_now(),
                       ctx.system_fingerprint()};

  auto setup = prepare_chat(ctx, request);
  auto reader = setup.reader(request);
  auto generation = std::make_shared<Generation>(ctx, req, std::move(setup.generation));
  if (request.stream) {
    send_stream(res, std::move(generation), std::make_unique<ChatSse>(meta, request.include_usage, std::move(reader)));
    return;
  }
  const auto done = generation->collect();
  check_finished(done.result);
  reader->feed(done.text);
  reader->finish();
  auto reply = chat_completion(meta, reader->message(), reader->finish_reason(done.result.finish), done.result);
  if (request.sampling.return_token_ids) reply["choices"][0]["token_ids"] = done.result.token_ids;
  send_json(res, 200, reply);
}

}  // namespace tf::server
