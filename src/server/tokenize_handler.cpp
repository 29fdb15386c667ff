// POST /tokenize, /detokenize (and /v1/…): counting tokens without generating.
#include "server/generation_runner.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/json_fields.h"
#include "server/tokenize_request.h"
#include "server/tool_prompt.h"

namespace tf::server {

void handle_tokenize(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  const auto request = parse_tokenize_request(body);
  auto& service = ctx.service();
  std::vector<std::int32_t> ids;
  if (request.chat) {
    // The prompt chat completions would run: the same template input, tools and reasoning options.
    ChatInput input;
    input.messages = request.chat->messages;
    input.add_generation_prompt = request.chat->add_generation_prompt;
    input.kwargs = request.chat->template_kwargs;
    if (ctx.options().reasoning && !input.kwargs.contains("enable_thinking"))
      input.kwargs["enable_thinking"] = *ctx.options().reasoning;
    plan_tools(service, request.chat->tools, input);
    ids = chat_prompt(service, input);
  } else {
    ids = service.tokenize(*request.text, request.add_special);
  }
  nlohmann::ordered_json reply = nlohmann::ordered_json::object();
  if (request.with_pieces) {
    auto tokens = nlohmann::ordered_json::array();
    for (const auto id : ids) tokens.push_back({{"id", id}, {"piece", service.detokenize({&id, 1})}});
    reply["tokens"] = std::move(tokens);
  } else {
    reply["tokens"] = ids;
  }
  reply["count"] = ids.size();
  reply["max_model_len"] = service.context_length();
  if (request.token_strs) reply["token_strs"] = service.token_strings(ids);
  send_json(res, 200, reply);
}

void handle_detokenize(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  auto& service = ctx.service();
  const auto ids = parse_detokenize_request(body, service.vocab_size());
  const auto text = service.detokenize(ids);
  send_json(res, 200, {{"content", text}, {"prompt", text}});
}

}  // namespace tf::server
