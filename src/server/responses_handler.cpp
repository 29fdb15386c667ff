// POST /v1/responses, GET and DELETE /v1/responses/{id}. A response runs as the equivalent chat: the stored
// conversation of previous_response_id, then `input`, with `instructions` as a leading system message.
#include <fmt/format.h>

#include "server/api_error.h"
#include "server/generation_runner.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/json_fields.h"
#include "server/openai_ids.h"
#include "server/responses_request.h"
#include "server/responses_response.h"

namespace tf::server {

namespace {

// Keeps a finished response (and the conversation through its answer) when the request asked to store it.
class Keeper {
 public:
  Keeper(ApiContext& ctx, bool store, nlohmann::ordered_json conversation)
      : ctx_(ctx), store_(store), conversation_(std::move(conversation)) {}
  void keep(const std::string& id, const nlohmann::ordered_json& response, const std::string& text) {
    if (!store_) return;
    auto conversation = conversation_;
    conversation.push_back({{"role", "assistant"}, {"content", text}});
    ctx_.store().put(id, StoredResponse{response, std::move(conversation)});
  }

 private:
  ApiContext& ctx_;
  bool store_;
  nlohmann::ordered_json conversation_;
};

class ResponsesSse final : public SseFormatter {
 public:
  ResponsesSse(ResponseMeta meta, Keeper keeper) : events_(std::move(meta)), keeper_(std::move(keeper)) {}
  std::string opening() override { return events_.opening(); }
  std::string text(const std::string& piece) override { return events_.delta(piece); }
  std::string closing(const std::string& full_text, const GenerationResult& r) override {
    nlohmann::ordered_json response;
    auto out = events_.closing(full_text, r, response);
    keeper_.keep(events_.meta().id, response, full_text);
    return out;
  }
  std::string failure(const std::string& message) override { return events_.error(message) + "data: [DONE]\n\n"; }

 private:
  ResponseEvents events_;
  Keeper keeper_;
};

ApiError response_not_found(const std::string& id) {
  return ApiError(404, "invalid_request_error", fmt::format("No response found with id '{}'.", id), "response_id",
                  "not_found");
}

}  // namespace

void handle_create_response(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  const auto request = parse_responses_request(body);
  const auto model = ctx.check_model(request.model);
  auto& service = ctx.service();

  nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
  if (request.previous_response_id) {
    const auto previous = ctx.store().get(*request.previous_response_id);
    if (!previous)
      throw invalid_request(fmt::format("Previous response with id '{}' not found.", *request.previous_response_id),
                            "previous_response_id", "previous_response_not_found");
    conversation = previous->conversation;
  }
  for (const auto& m : request.input) conversation.push_back(m);

  ChatInput input;
  if (request.instructions) input.messages.push_back({{"role", "system"}, {"content", *request.instructions}});
  for (const auto& m : conversation) input.messages.push_back(m);
  input.add_generation_prompt = true;
  input.kwargs = request.template_kwargs;
  auto plan = plan_generation(service, ctx.options(), chat_prompt(service, input, "input"), request.sampling, "input");

  ResponseMeta meta;
  meta.id = random_id("resp_", 32);
  meta.message_id = random_id("msg_", 32);
  meta.model = model;
  meta.created_at = unix_now();
  if (request.instructions) meta.instructions = *request.instructions;
  if (request.sampling.max_tokens) meta.max_output_tokens = *request.sampling.max_tokens;
  meta.temperature = plan.sampling.temperature;
  meta.top_p = plan.sampling.top_p;
  if (request.previous_response_id) meta.previous_response_id = *request.previous_response_id;
  meta.store = request.store;
  if (request.metadata.is_object()) meta.metadata = request.metadata;
  if (request.user) meta.user = *request.user;

  Keeper keeper(ctx, request.store, std::move(conversation));
  auto generation = std::make_shared<Generation>(ctx, req, std::move(plan));
  if (request.stream) {
    send_stream(res, std::move(generation), std::make_unique<ResponsesSse>(std::move(meta), std::move(keeper)));
    return;
  }
  const auto done = generation->collect();
  check_finished(done.result);
  const auto response = finished_response(meta, done.text, done.result);
  keeper.keep(meta.id, response, done.text);
  send_json(res, 200, response);
}

void handle_get_response(ApiContext& ctx, const std::string& id, httplib::Response& res) {
  const auto stored = ctx.store().get(id);
  if (!stored) throw response_not_found(id);
  send_json(res, 200, stored->response);
}

void handle_delete_response(ApiContext& ctx, const std::string& id, httplib::Response& res) {
  if (!ctx.store().erase(id)) throw response_not_found(id);
  send_json(res, 200, {{"id", id}, {"object", "response.deleted"}, {"deleted", true}});
}

}  // namespace tf::server
