// POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API over the chat machinery. The
// reply's reasoning, text and calls become thinking, text and tool_use blocks; a stream sends Anthropic's
// events in its order: message_start, then per block content_block_start, its deltas and content_block_stop,
// then message_delta (stop_reason, usage) and message_stop.
#include "server/chat_setup.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/json_fields.h"
#include "server/messages_request.h"
#include "server/openai_ids.h"
#include "server/sse.h"

namespace tf::server {

namespace {

using json = nlohmann::ordered_json;

std::string stop_reason(const ChatReplyReader& reader, const GenerationResult& r) {
  if (reader.finish_reason(r.finish) == "tool_calls") return "tool_use";
  if (r.finish == FinishReason::Length) return "max_tokens";
  return r.stop_sequence.empty() ? "end_turn" : "stop_sequence";
}

// The stop sequence that ended the reply (Anthropic's stop_sequence), else null.
json stop_sequence(const GenerationResult& r) { return r.stop_sequence.empty() ? json() : json(r.stop_sequence); }

json usage(std::int64_t input, std::int64_t output, std::int64_t cached) {
  return {{"input_tokens", input - cached},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", cached},
          {"output_tokens", output}};
}

json message_object(const std::string& id, const std::string& model) {
  return {{"id", id},          {"type", "message"},        {"role", "assistant"}, {"model", model},
          {"content", json::array()}, {"stop_reason", nullptr}, {"stop_sequence", nullptr}};
}

json tool_input(const std::string& arguments) {
  auto input = json::parse(arguments, nullptr, false);
  return input.is_object() ? input : json::object();
}

class MessagesSse final : public SseFormatter {
 public:
  MessagesSse(std::string id, std::string model, std::int64_t prompt_tokens, std::unique_ptr<ChatReplyReader> reader)
      : id_(std::move(id)), model_(std::move(model)), prompt_tokens_(prompt_tokens), reader_(std::move(reader)) {}
  std::string opening() override {
    auto m = message_object(id_, model_);
    m["usage"] = usage(prompt_tokens_, 0, 0);
    return sse_event("message_start", {{"type", "message_start"}, {"message", m}});
  }
  std::string text(const std::string& piece) override { return events(reader_->feed(piece)); }
  std::string closing(const std::string&, const GenerationResult& r) override {
    std::string out = events(reader_->finish());
    out += close_block();
    out += sse_event("message_delta",
                     {{"type", "message_delta"},
                      {"delta", {{"stop_reason", stop_reason(*reader_, r)}, {"stop_sequence", stop_sequence(r)}}},
                      {"usage", {{"output_tokens", r.completion_tokens}}}});
    return out + sse_event("message_stop", {{"type", "message_stop"}});
  }
  std::string failure(const std::string& message) override {
    return sse_event("error", {{"type", "error"}, {"error", {{"type", "api_error"}, {"message", message}}}});
  }

 private:
  // The open block: "thinking", "text" or "tool_use" (with the call's index).
  std::string kind_;
  int call_ = -1;
  int index_ = -1;

  std::string close_block() {
    if (kind_.empty()) return {};
    std::string out;
    if (kind_ == "thinking")
      out += sse_event("content_block_delta", {{"type", "content_block_delta"},
                                               {"index", index_},
                                               {"delta", {{"type", "signature_delta"}, {"signature", ""}}}});
    out += sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
    kind_.clear();
    return out;
  }
  std::string open_block(const std::string& kind, json block) {
    std::string out = close_block();
    kind_ = kind;
    ++index_;
    return out + sse_event("content_block_start",
                           {{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(block)}});
  }
  std::string delta(json d) {
    return sse_event("content_block_delta", {{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(d)}});
  }
  std::string events(const std::vector<json>& deltas) {
    std::string out;
    for (const auto& d : deltas) {
      if (d.contains("reasoning_content")) {
        if (kind_ != "thinking") out += open_block("thinking", {{"type", "thinking"}, {"thinking", ""}});
        out += delta({{"type", "thinking_delta"}, {"thinking", d["reasoning_content"]}});
      } else if (d.contains("content")) {
        if (d["content"].get<std::string>().empty()) continue;
        if (kind_ != "text") out += open_block("text", {{"type", "text"}, {"text", ""}});
        out += delta({{"type", "text_delta"}, {"text", d["content"]}});
      } else if (d.contains("tool_calls")) {
        const auto& call = d["tool_calls"][0];
        if (call.contains("id")) {
          out += open_block("tool_use", {{"type", "tool_use"},
                                         {"id", call["id"]},
                                         {"name", call["function"]["name"]},
                                         {"input", json::object()}});
          call_ = call["index"].get<int>();
        } else if (kind_ == "tool_use" && call["index"] == call_) {
          out += delta({{"type", "input_json_delta"}, {"partial_json", call["function"]["arguments"]}});
        }
      }
    }
    return out;
  }

  std::string id_, model_;
  std::int64_t prompt_tokens_;
  std::unique_ptr<ChatReplyReader> reader_;
};

}  // namespace

void handle_messages(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  const auto request = parse_messages_request(body, false);
  const std::string model = ctx.check_model(request.model);
  auto setup = prepare_chat(ctx, request.chat);
  auto reader = setup.reader(request.chat, "toolu_");
  const auto prompt_tokens = static_cast<std::int64_t>(setup.generation.prompt.size());
  const std::string id = random_id("msg_");
  auto generation = std::make_shared<Generation>(ctx, req, std::move(setup.generation));
  if (request.chat.stream) {
    send_stream(res, std::move(generation), std::make_unique<MessagesSse>(id, model, prompt_tokens, std::move(reader)));
    return;
  }
  const auto done = generation->collect();
  check_finished(done.result);
  reader->feed(done.text);
  reader->finish();
  auto m = message_object(id, model);
  if (!reader->reasoning().empty())
    m["content"].push_back({{"type", "thinking"}, {"thinking", reader->reasoning()}, {"signature", ""}});
  if (reader->has_text() || (reader->calls().empty() && !reader->content().empty()))
    m["content"].push_back({{"type", "text"}, {"text", reader->content()}});
  for (const auto& call : reader->calls())
    m["content"].push_back({{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", tool_input(call.arguments)}});
  m["stop_reason"] = stop_reason(*reader, done.result);
  m["stop_sequence"] = stop_sequence(done.result);
  m["usage"] = usage(done.result.prompt_tokens, done.result.completion_tokens, done.result.cached_tokens);
  send_json(res, 200, m);
}

void handle_count_tokens(ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto body = parse_json_body(req.body);
  const auto request = parse_messages_request(body, true);
  ctx.check_model(request.model);
  auto setup = prepare_chat(ctx, request.chat);
  send_json(res, 200, {{"input_tokens", setup.generation.prompt.size()}});
}

}  // namespace tf::server
