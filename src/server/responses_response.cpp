#include "server/responses_response.h"

#include "server/openai_ids.h"
#include "server/sse.h"
#include "server/usage_json.h"

namespace tf::server {

nlohmann::ordered_json output_text_part(const std::string& text, nlohmann::ordered_json logprobs) {
  return {{"type", "output_text"},
          {"text", text},
          {"annotations", nlohmann::ordered_json::array()},
          {"logprobs", std::move(logprobs)}};
}

nlohmann::ordered_json output_message(const ResponseMeta& meta, const std::string& text, const char* status,
                                      bool with_text, nlohmann::ordered_json logprobs) {
  return {{"type", "message"},
          {"id", meta.message_id},
          {"status", status},
          {"role", "assistant"},
          {"content", with_text ? nlohmann::ordered_json::array({output_text_part(text, std::move(logprobs))})
                                : nlohmann::ordered_json::array()}};
}

namespace {

// The events' records (response.output_text.done) from the part's: the same without "bytes".
nlohmann::ordered_json without_bytes(const nlohmann::ordered_json& logprobs) {
  auto out = logprobs;
  for (auto& e : out) {
    e.erase("bytes");
    for (auto& t : e["top_logprobs"]) t.erase("bytes");
  }
  return out;
}

}  // namespace

nlohmann::ordered_json response_object(const ResponseMeta& meta, const char* status, nlohmann::ordered_json output,
                               nlohmann::ordered_json usage, nlohmann::ordered_json incomplete_details, nlohmann::ordered_json error) {
  nlohmann::ordered_json j = {{"id", meta.id},
                      {"object", "response"},
                      {"created_at", meta.created_at},
                      {"status", status},
                      {"background", false},
                      {"error", std::move(error)},
                      {"incomplete_details", std::move(incomplete_details)},
                      {"instructions", meta.instructions},
                      {"max_output_tokens", meta.max_output_tokens},
                      {"model", meta.model},
                      {"output", std::move(output)},
                      {"parallel_tool_calls", true},
                      {"previous_response_id", meta.previous_response_id},
                      {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
                      {"store", meta.store},
                      {"temperature", meta.temperature},
                      {"text", {{"format", {{"type", "text"}}}}},
                      {"tool_choice", "auto"},
                      {"tools", nlohmann::ordered_json::array()},
                      {"top_p", meta.top_p},
                      {"truncation", "disabled"},
                      {"usage", std::move(usage)},
                      {"user", meta.user},
                      {"metadata", meta.metadata.is_object() ? meta.metadata : nlohmann::ordered_json::object()}};
  if (std::string_view(status) == "completed") j["completed_at"] = unix_now();
  return j;
}

nlohmann::ordered_json finished_response_items(const ResponseMeta& meta, nlohmann::ordered_json output,
                                               const GenerationResult& result) {
  const bool incomplete = result.finish == FinishReason::Length;
  const char* status = incomplete ? "incomplete" : "completed";
  return response_object(meta, status, std::move(output), responses_usage(result),
                         incomplete ? nlohmann::ordered_json{{"reason", "max_output_tokens"}} : nlohmann::ordered_json(nullptr));
}

nlohmann::ordered_json finished_response(const ResponseMeta& meta, const std::string& text,
                                         const GenerationResult& result, nlohmann::ordered_json logprobs) {
  const char* status = result.finish == FinishReason::Length ? "incomplete" : "completed";
  return finished_response_items(
      meta, nlohmann::ordered_json::array({output_message(meta, text, status, true, std::move(logprobs))}), result);
}

nlohmann::ordered_json function_call_item(const std::string& id, const std::string& call_id, const std::string& name,
                                          const std::string& arguments, const char* status) {
  return {{"type", "function_call"}, {"id", id},           {"call_id", call_id},
          {"name", name},            {"arguments", arguments}, {"status", status}};
}

nlohmann::ordered_json reasoning_item(const std::string& id, const std::string& text) {
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", nlohmann::ordered_json::array()},
          {"content", nlohmann::ordered_json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

std::string ResponseEvents::event(const char* type, nlohmann::ordered_json payload) {
  payload["type"] = type;
  payload["sequence_number"] = sequence_++;
  return sse_event(type, payload);
}

std::string ResponseEvents::opening() {
  const auto in_progress = response_object(meta_, "in_progress", nlohmann::ordered_json::array(), nullptr);
  std::string out = event("response.created", {{"response", in_progress}});
  out += event("response.in_progress", {{"response", in_progress}});
  out += event("response.output_item.added",
               {{"output_index", 0}, {"item", output_message(meta_, "", "in_progress", false)}});
  out += event("response.content_part.added",
               {{"item_id", meta_.message_id}, {"output_index", 0}, {"content_index", 0},
                {"part", output_text_part("")}});
  return out;
}

std::string ResponseEvents::delta(const std::string& text, nlohmann::ordered_json logprobs) {
  return event("response.output_text.delta", {{"item_id", meta_.message_id},
                                              {"output_index", 0},
                                              {"content_index", 0},
                                              {"delta", text},
                                              {"logprobs", std::move(logprobs)}});
}

std::string ResponseEvents::closing(const std::string& text, const GenerationResult& result,
                                    nlohmann::ordered_json& final_response, const nlohmann::ordered_json& logprobs) {
  final_response = finished_response(meta_, text, result, logprobs);
  const char* status = final_response["status"] == "completed" ? "completed" : "incomplete";
  std::string out = event("response.output_text.done", {{"item_id", meta_.message_id},
                                                        {"output_index", 0},
                                                        {"content_index", 0},
                                                        {"text", text},
                                                        {"logprobs", without_bytes(logprobs)}});
  out += event("response.content_part.done", {{"item_id", meta_.message_id},
                                              {"output_index", 0},
                                              {"content_index", 0},
                                              {"part", output_text_part(text, logprobs)}});
  out += event("response.output_item.done",
               {{"output_index", 0}, {"item", output_message(meta_, text, status, true, logprobs)}});
  out += event(std::string_view(status) == "completed" ? "response.completed" : "response.incomplete",
               {{"response", final_response}});
  return out;
}

std::string ResponseEvents::error(const std::string& message) {
  return event("error", {{"code", "server_error"}, {"message", message}, {"param", nullptr}});
}

}  // namespace tf::server
