#pragma once
// Responses API objects: the response, its one output message, and the typed stream events numbered by
// sequence_number.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/generation.h"

namespace tf::server {

struct ResponseMeta {
  std::string id;          // resp_…
  std::string message_id;  // msg_…, the output message item
  std::string model;
  std::int64_t created_at = 0;
  nlohmann::ordered_json instructions;          // null or a string
  nlohmann::ordered_json max_output_tokens;     // null or an integer
  double temperature = 1.0, top_p = 1.0;  // as used
  nlohmann::ordered_json previous_response_id;  // null or a string
  bool store = true;
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  nlohmann::ordered_json user;                  // null or a string
};

// `logprobs`: the part's token log-probabilities (token_logprob_list), empty unless the request included them.
nlohmann::ordered_json output_text_part(const std::string& text,
                                        nlohmann::ordered_json logprobs = nlohmann::ordered_json::array());
// The assistant message item; status "in_progress", "completed" or "incomplete". With `with_text` false its
// content list is empty (as announced before any text).
nlohmann::ordered_json output_message(const ResponseMeta& meta, const std::string& text, const char* status,
                                      bool with_text = true,
                                      nlohmann::ordered_json logprobs = nlohmann::ordered_json::array());
// The response object. `status`: "in_progress", "completed", "incomplete" or "failed".
nlohmann::ordered_json response_object(const ResponseMeta& meta, const char* status, nlohmann::ordered_json output,
                               nlohmann::ordered_json usage, nlohmann::ordered_json incomplete_details = nullptr,
                               nlohmann::ordered_json error = nullptr);
// The finished response: "completed", or "incomplete" with reason max_output_tokens when the limit stopped it.
nlohmann::ordered_json finished_response(const ResponseMeta& meta, const std::string& text,
                                         const GenerationResult& result,
                                         nlohmann::ordered_json logprobs = nlohmann::ordered_json::array());
// The same with the output items given (reasoning, message, function_call items).
nlohmann::ordered_json finished_response_items(const ResponseMeta& meta, nlohmann::ordered_json output,
                                               const GenerationResult& result);
// A function_call output item (id fc_…, the call's call_id, name, arguments as JSON text).
nlohmann::ordered_json function_call_item(const std::string& id, const std::string& call_id, const std::string& name,
                                          const std::string& arguments, const char* status);
// A reasoning output item with its text as one reasoning_text part.
nlohmann::ordered_json reasoning_item(const std::string& id, const std::string& text);

// Formats the stream of one response: every event carries "type" and an increasing "sequence_number".
class ResponseEvents {
 public:
  explicit ResponseEvents(ResponseMeta meta) : meta_(std::move(meta)) {}
  // response.created, response.in_progress, response.output_item.added, response.content_part.added.
  std::string opening();
  // response.output_text.delta; `logprobs`: its tokens' records (token_logprob_list without bytes).
  std::string delta(const std::string& text, nlohmann::ordered_json logprobs = nlohmann::ordered_json::array());
  // response.output_text.done, response.content_part.done, response.output_item.done, then response.completed
  // (or response.incomplete when max_output_tokens stopped it). `final_response` receives the response object.
  // `logprobs`: every token's records, with bytes (the part's shape; the done event's drop the bytes).
  std::string closing(const std::string& text, const GenerationResult& result, nlohmann::ordered_json& final_response,
                      const nlohmann::ordered_json& logprobs = nlohmann::ordered_json::array());
  // An "error" event (code server_error) for a failure after the stream opened.
  std::string error(const std::string& message);
  const ResponseMeta& meta() const { return meta_; }

 private:
  std::string event(const char* type, nlohmann::ordered_json payload);
  ResponseMeta meta_;
  std::int64_t sequence_ = 0;
};

}  // namespace tf::server
