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
#include "server/logprobs_json.h"
#include "server/openai_ids.h"
#include "server/sse.h"
#include "server/usage_json.h"

namespace tf::server {

namespace {

// One choice's chunks. With logprobs, the records of the tokens read so far ride on the next chunk written
// (each record is pushed before its token's text, so a chunk never carries text without its records).
class ChatSse final : public SseFormatter {
 public:
  ChatSse(ReplyMeta meta, bool include_usage, std::unique_ptr<ChatReplyReader> reader, std::int64_t index, bool last,
          const InferenceService* service, GenerationStream* logprobs)
      : meta_(std::move(meta)),
        include_usage_(include_usage),
        reader_(std::move(reader)),
        index_(index),
        last_(last),
        service_(service),
        logprobs_(logprobs) {}
  std::string opening() override { return sse_data(chunk({{"role", "assistant"}, {"content", ""}}, nullptr, false)); }
  std::string text(const std::string& piece) override { return chunks(reader_->feed(piece)); }
  std::string closing(const std::string&, const GenerationResult& r) override {
    std::string out = chunks(reader_->finish());
    out += sse_data(chunk(nlohmann::ordered_json::object(), reader_->finish_reason(r.finish)));
    if (!last_) return out;
    if (include_usage_) out += sse_data(chat_usage_chunk(meta_, r));
    return out + sse_done();
  }
  std::string failure(const std::string& message) override {
    return sse_data({{"error", error_object(message, "server_error", std::nullopt, "server_error")}}) + sse_done();
  }

 private:
  nlohmann::ordered_json chunk(nlohmann::ordered_json delta, nlohmann::ordered_json finish_reason,
                               bool with_logprobs = true) {
    auto j = chat_chunk(meta_, std::move(delta), std::move(finish_reason), include_usage_);
    j["choices"][0]["index"] = index_;
    if (logprobs_ && with_logprobs) {
      auto records = logprobs_->take_logprobs();
      if (!records.empty()) j["choices"][0]["logprobs"] = chat_logprobs(*service_, records);
    }
    return j;
  }
  std::string chunks(const std::vector<nlohmann::ordered_json>& deltas) {
    std::string out;
    for (const auto& d : deltas) out += sse_data(chunk(d, nullptr));
    return out;
  }
  ReplyMeta meta_;
  bool include_usage_;
  std::unique_ptr<ChatReplyReader> reader_;
  std::int64_t index_;
  bool last_;
  const InferenceService* service_;
  GenerationStream* logprobs_;  // null: not asked for
};

}  // namespace

void handle_chat_completions(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  const auto request = parse_chat_request(body);
  check_trailing_assistants(request.messages);
  const ReplyMeta meta{random_id("chatcmpl-"), ctx.check_model(request.model), unix_now(),
                       ctx.system_fingerprint()};

  auto setup = prepare_chat(ctx, request);
  const auto n = request.sampling.n;
  // Every choice is submitted before any is read: they decode side by side.
  std::vector<std::shared_ptr<Generation>> generations;
  for (std::int64_t i = 0; i < n; ++i)
    generations.push_back(
        std::make_shared<Generation>(ctx, req, n == 1 ? setup.generation : choice_request(setup.generation, i)));
  const bool logprobs = request.sampling.logprobs >= 0;
  if (request.stream) {
    std::vector<std::unique_ptr<SseFormatter>> formatters;
    for (std::int64_t i = 0; i < n; ++i) {
      formatters.push_back(
          std::make_unique<ChatSse>(meta, request.include_usage, setup.reader(request), i, i + 1 == n, &ctx.service(),
                                    logprobs ? &generations[static_cast<std::size_t>(i)]->stream() : nullptr));
      formatters.back()->counts_prompt = i == 0;
    }
    send_streams(res, std::move(generations), std::move(formatters));
    return;
  }
  nlohmann::ordered_json reply;
  std::vector<GenerationResult> results;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto done = generations[static_cast<std::size_t>(i)]->collect();
    check_finished(done.result);
    auto reader = setup.reader(request);
    reader->feed(done.text);
    reader->finish();
    auto one = chat_completion(meta, reader->message(), reader->finish_reason(done.result.finish), done.result);
    auto& choice = one["choices"][0];
    choice["index"] = i;
    if (logprobs) choice["logprobs"] = chat_logprobs(ctx.service(), done.result.logprobs);
    if (request.sampling.return_token_ids) choice["token_ids"] = done.result.token_ids;
    if (i == 0)
      reply = std::move(one);
    else
      reply["choices"].push_back(std::move(choice));
    results.push_back(done.result);
  }
  if (n > 1) {
    std::vector<bool> first(results.size(), false);
    first[0] = true;
    reply["usage"] = completion_usage(sum_results(results, first));
  }
  send_json(res, 200, reply);
}

}  // namespace tf::server
