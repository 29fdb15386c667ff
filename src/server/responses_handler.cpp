// POST /v1/responses, GET and DELETE /v1/responses/{id}. A response runs as the equivalent chat: the stored
// conversation of previous_response_id, then `input`, with `instructions` as a leading system message.
#include <fmt/format.h>

#include <set>
#include <span>
#include <vector>

#include "server/api_error.h"
#include "server/chat_setup.h"
#include "server/generation_runner.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/json_fields.h"
#include "server/logprobs_json.h"
#include "server/openai_ids.h"
#include "server/responses_request.h"
#include "server/responses_response.h"
#include "server/sse.h"

namespace tf::server {

namespace {

// Keeps a finished response (and the conversation through its answer) when the request asked to store it.
class Keeper {
 public:
  Keeper(ApiContext& ctx, bool store, nlohmann::ordered_json conversation, std::vector<ImagePart> images)
      : ctx_(ctx), store_(store), conversation_(std::move(conversation)), images_(std::move(images)) {}
  // `answer`: the assistant message (content, and tool_calls when the reply called tools).
  void keep(const std::string& id, const nlohmann::ordered_json& response, nlohmann::ordered_json answer) {
    if (!store_) return;
    auto conversation = conversation_;
    conversation.push_back(std::move(answer));
    ctx_.store().put(id, StoredResponse{response, std::move(conversation), images_});
  }

 private:
  ApiContext& ctx_;
  bool store_;
  nlohmann::ordered_json conversation_;
  std::vector<ImagePart> images_;
};

// Where a streamed response's token log-probabilities come from (include message.output_text.logprobs): each
// output_text delta carries the records read since the previous one (each record is pushed before its
// token's text); the done events and the finished part carry them all.
struct StreamedLogprobs {
  const InferenceService* service = nullptr;
  GenerationStream* stream = nullptr;  // null: not asked for
  std::vector<TokenLogprob> take() const { return stream ? stream->take_logprobs() : std::vector<TokenLogprob>(); }
  nlohmann::ordered_json list(std::span<const TokenLogprob> records, bool bytes) const {
    return stream ? token_logprob_list(*service, records, bytes) : nlohmann::ordered_json::array();
  }
  nlohmann::ordered_json since_last() const { return list(take(), false); }
  nlohmann::ordered_json all(const GenerationResult& r) const { return list(r.logprobs, true); }
};

class ResponsesSse final : public SseFormatter {
 public:
  ResponsesSse(ResponseMeta meta, Keeper keeper, StreamedLogprobs logprobs)
      : events_(std::move(meta)), keeper_(std::move(keeper)), logprobs_(logprobs) {}
  std::string opening() override { return events_.opening(); }
  std::string text(const std::string& piece) override { return events_.delta(piece, logprobs_.since_last()); }
  std::string closing(const std::string& full_text, const GenerationResult& r) override {
    nlohmann::ordered_json response;
    auto out = events_.closing(full_text, r, response, logprobs_.all(r));
    keeper_.keep(events_.meta().id, response, {{"role", "assistant"}, {"content", full_text}});
    return out;
  }
  std::string failure(const std::string& message) override { return events_.error(message) + "data: [DONE]\n\n"; }

 private:
  ResponseEvents events_;
  Keeper keeper_;
  StreamedLogprobs logprobs_;
};

using json = nlohmann::ordered_json;

// The assistant message a reply adds to the conversation (for previous_response_id).
json answer_message(const ChatReplyReader& reader) {
  json m = {{"role", "assistant"}, {"content", reader.content()}};
  json calls = json::array();
  for (const auto& c : reader.calls())
    calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  if (!calls.empty()) m["tool_calls"] = std::move(calls);
  return m;
}

// The output items of a finished reply: its reasoning, its message (when it has text or no call), its calls.
// `logprobs`: the message's output_text part's (every generated token's, as chat completions gives them).
// `streamed`: the ids a stream already gave its reasoning item and its calls' items (in order), which the final
// response must repeat; new ones where none was given.
struct StreamedIds {
  std::string reasoning;
  std::vector<std::string> calls;
};
json output_items(const ResponseMeta& meta, const ChatReplyReader& reader, const char* status,
                  json logprobs = json::array(), const StreamedIds& streamed = {}) {
  json items = json::array();
  if (!reader.reasoning().empty())
    items.push_back(
        reasoning_item(streamed.reasoning.empty() ? random_id("rs_", 32) : streamed.reasoning, reader.reasoning()));
  const auto calls = reader.calls();
  if (reader.has_text() || calls.empty())
    items.push_back(output_message(meta, reader.content(), status, true, std::move(logprobs)));
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto& c = calls[i];
    const auto id = i < streamed.calls.size() ? streamed.calls[i] : random_id("fc_", 32);
    items.push_back(function_call_item(id, c.id, c.name, c.arguments, "completed"));
  }
  return items;
}

// A streamed response whose items are only known as they come (tools): each delta of the reply opens or
// continues an item; function calls stream their arguments (response.function_call_arguments.delta/.done).
class ResponseItemsSse final : public SseFormatter {
 public:
  ResponseItemsSse(ResponseMeta meta, Keeper keeper, std::unique_ptr<ChatReplyReader> reader, StreamedLogprobs logprobs)
      : meta_(std::move(meta)), keeper_(std::move(keeper)), reader_(std::move(reader)), logprobs_(logprobs) {}
  std::string opening() override {
    const auto in_progress = response_object(meta_, "in_progress", json::array(), nullptr);
    // Two statements: the events' sequence numbers follow their order (the operands of + are unsequenced).
    std::string out = event("response.created", {{"response", in_progress}});
    return out + event("response.in_progress", {{"response", in_progress}});
  }
  std::string text(const std::string& piece) override { return deltas(reader_->feed(piece)); }
  std::string closing(const std::string&, const GenerationResult& r) override {
    std::string out = deltas(reader_->finish());
    for (auto& rec : logprobs_.take()) read_.push_back(std::move(rec));
    out += close_item();
    const auto status = r.finish == FinishReason::Length ? "incomplete" : "completed";
    const auto response =
        finished_response_items(meta_, output_items(meta_, *reader_, status, logprobs_.all(r), ids_), r);
    keeper_.keep(meta_.id, response, answer_message(*reader_));
    return out + event(std::string_view(status) == "completed" ? "response.completed" : "response.incomplete",
                       {{"response", response}});
  }
  std::string failure(const std::string& message) override {
    return event("error", {{"code", "server_error"}, {"message", message}, {"param", nullptr}}) + "data: [DONE]\n\n";
  }

 private:
  std::string event(const char* type, json payload) {
    payload["type"] = type;
    payload["sequence_number"] = sequence_++;
    return sse_event(type, payload);
  }
  std::string close_item() {
    std::string out;
    if (kind_ == "message") {
      // The records read so far: every token's when the reply ends here, those before a call that follows.
      const auto records = logprobs_.list(read_, true);
      out += event("response.output_text.done", {{"item_id", meta_.message_id},
                                                 {"output_index", index_},
                                                 {"content_index", 0},
                                                 {"text", text_},
                                                 {"logprobs", logprobs_.list(read_, false)}});
      out += event("response.content_part.done", {{"item_id", meta_.message_id},
                                                  {"output_index", index_},
                                                  {"content_index", 0},
                                                  {"part", output_text_part(text_, records)}});
      out += event("response.output_item.done",
                   {{"output_index", index_}, {"item", output_message(meta_, text_, "completed", true, records)}});
    } else if (kind_ == "reasoning") {
      out += event("response.reasoning_text.done",
                   {{"item_id", item_id_}, {"output_index", index_}, {"content_index", 0}, {"text", text_}});
      out += event("response.output_item.done", {{"output_index", index_}, {"item", reasoning_item(item_id_, text_)}});
    } else if (kind_ == "function_call") {
      out += event("response.function_call_arguments.done",
                   {{"item_id", item_id_}, {"output_index", index_}, {"arguments", text_}});
      out += event(
          "response.output_item.done",
          {{"output_index", index_}, {"item", function_call_item(item_id_, call_id_, name_, text_, "completed")}});
    }
    kind_.clear();
    text_.clear();
    return out;
  }
  std::string open_item(const char* kind, json item) {
    std::string out = close_item();
    kind_ = kind;
    ++index_;
    out += event("response.output_item.added", {{"output_index", index_}, {"item", std::move(item)}});
    return out;
  }
  std::string deltas(const std::vector<json>& list) {
    std::string out;
    for (const auto& d : list) {
      if (d.contains("reasoning_content")) {
        if (kind_ != "reasoning") {
          item_id_ = random_id("rs_", 32);
          ids_.reasoning = item_id_;
          out += open_item(
              "reasoning",
              {{"type", "reasoning"}, {"id", item_id_}, {"summary", json::array()}, {"content", json::array()}});
        }
        text_ += d["reasoning_content"].get<std::string>();
        out += event(
            "response.reasoning_text.delta",
            {{"item_id", item_id_}, {"output_index", index_}, {"content_index", 0}, {"delta", d["reasoning_content"]}});
      } else if (d.contains("content")) {
        if (d["content"].get<std::string>().empty()) continue;
        if (kind_ != "message") {
          out += open_item("message", output_message(meta_, "", "in_progress", false));
          out += event("response.content_part.added", {{"item_id", meta_.message_id},
                                                       {"output_index", index_},
                                                       {"content_index", 0},
                                                       {"part", output_text_part("")}});
        }
        text_ += d["content"].get<std::string>();
        const auto records = logprobs_.take();
        read_.insert(read_.end(), records.begin(), records.end());
        out += event("response.output_text.delta", {{"item_id", meta_.message_id},
                                                    {"output_index", index_},
                                                    {"content_index", 0},
                                                    {"delta", d["content"]},
                                                    {"logprobs", logprobs_.list(records, false)}});
      } else if (d.contains("tool_calls")) {
        const auto& call = d["tool_calls"][0];
        if (call.contains("id")) {
          item_id_ = random_id("fc_", 32);
          ids_.calls.push_back(item_id_);
          call_id_ = call["id"].get<std::string>();
          name_ = call["function"]["name"].get<std::string>();
          out += open_item("function_call", function_call_item(item_id_, call_id_, name_, "", "in_progress"));
        } else if (kind_ == "function_call") {
          text_ += call["function"]["arguments"].get<std::string>();
          out += event("response.function_call_arguments.delta",
                       {{"item_id", item_id_}, {"output_index", index_}, {"delta", call["function"]["arguments"]}});
        }
      }
    }
    return out;
  }

  ResponseMeta meta_;
  Keeper keeper_;
  std::unique_ptr<ChatReplyReader> reader_;
  StreamedLogprobs logprobs_;
  std::vector<TokenLogprob> read_;  // the records taken so far
  std::int64_t sequence_ = 0;
  int index_ = -1;
  std::string kind_, text_, item_id_, call_id_, name_;
  StreamedIds ids_;  // the items' ids as streamed, repeated by the final response
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

  nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
  std::vector<ImagePart> images;
  if (request.previous_response_id) {
    const auto previous = ctx.store().get(*request.previous_response_id);
    if (!previous)
      throw invalid_request(fmt::format("Previous response with id '{}' not found.", *request.previous_response_id),
                            "previous_response_id", "previous_response_not_found");
    conversation = previous->conversation;
    // Checked when they came; a limit that fails now (too many in the conversation) names the continuation.
    for (const auto& i : previous->images) images.push_back({"previous_response_id", i.url});
  }
  for (const auto& m : request.input) conversation.push_back(m);
  images.insert(images.end(), request.images.begin(), request.images.end());

  // Each tool output answers a call made earlier in the conversation.
  {
    std::set<std::string> ids;
    const std::size_t first_input = conversation.size() - request.input.size();
    for (std::size_t k = 0; k < conversation.size(); ++k) {
      const auto& m = conversation[k];
      if (m.contains("tool_calls"))
        for (const auto& c : m["tool_calls"]) ids.insert(c.value("id", ""));
      if (m.value("role", "") == "tool" && !ids.count(m.value("tool_call_id", ""))) {
        const auto i = k >= first_input ? request.input_index[k - first_input] : 0;
        throw invalid_request(fmt::format("Invalid 'input[{}].call_id': '{}' answers no function call of this "
                                          "conversation.",
                                          i, m.value("tool_call_id", "")),
                              fmt::format("input[{}].call_id", i), "invalid_value");
      }
    }
  }
  ChatRequest chat;
  if (request.instructions) chat.messages.push_back({{"role", "system"}, {"content", *request.instructions}});
  for (const auto& m : conversation) chat.messages.push_back(m);
  chat.add_generation_prompt = true;
  chat.template_kwargs = request.template_kwargs;
  chat.sampling = request.sampling;
  chat.tools = request.tools;
  chat.structured = request.structured;
  chat.images = images;
  auto setup = prepare_chat(ctx, chat, "input");
  auto reader = setup.reader(chat);
  auto& plan = setup.generation;

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

  Keeper keeper(ctx, request.store, std::move(conversation), std::move(images));
  const bool logprobs = plan.logprobs >= 0;
  auto generation = std::make_shared<Generation>(ctx, req, std::move(plan));
  if (request.stream) {
    const StreamedLogprobs streamed{&ctx.service(), logprobs ? &generation->stream() : nullptr};
    if (request.tools.active())
      send_stream(res, std::move(generation),
                  std::make_unique<ResponseItemsSse>(std::move(meta), std::move(keeper), std::move(reader), streamed));
    else
      send_stream(res, std::move(generation),
                  std::make_unique<ResponsesSse>(std::move(meta), std::move(keeper), streamed));
    return;
  }
  const auto done = generation->collect();
  check_finished(done.result);
  reader->feed(done.text);
  reader->finish();
  const char* status = done.result.finish == FinishReason::Length ? "incomplete" : "completed";
  const auto response = finished_response_items(
      meta,
      output_items(meta, *reader, status,
                   logprobs ? token_logprob_list(ctx.service(), done.result.logprobs) : json::array()),
      done.result);
  keeper.keep(meta.id, response, answer_message(*reader));
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
