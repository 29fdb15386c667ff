#pragma once
// POST /v1/responses: the Responses API request read and validated; it runs as the equivalent chat.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/image_inputs.h"
#include "server/sampling_fields.h"
#include "server/structured_fields.h"
#include "server/tool_fields.h"

namespace tf::server {

struct ResponsesRequest {
  std::optional<std::string> model;
  // `input` as chat messages (see ChatRequest::messages): a string becomes one user message; message items
  // with input_text / output_text content become messages of their role; function_call items become an
  // assistant message's tool_calls (consecutive ones, one message), function_call_output items tool messages;
  // reasoning items are dropped (templates do not take earlier reasoning back).
  nlohmann::ordered_json input = nlohmann::ordered_json::array();
  std::optional<std::string> instructions;  // a system message ahead of the conversation; never carried over
  SamplingFields sampling;                  // max_output_tokens; extensions: top_k, min_p, seed, stop, draft
  // include: ["message.output_text.logprobs"] sets sampling.logprobs to top_logprobs (0 when unset); the
  // output_text part then carries every generated token's log-probability.
  bool stream = false;
  bool store = true;
  std::optional<std::string> previous_response_id;
  nlohmann::ordered_json metadata;  // null or an object of at most 16 string values
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  std::optional<std::string> user;
  // tools ({"type": "function", "name", "description", "parameters"}), tool_choice ("auto", "none", "required",
  // {"type": "function", "name"}), parallel_tool_calls: read as chat completions reads them.
  ToolSettings tools;
  StructuredOutput structured;  // text.format json_object / json_schema
  // input_image parts of message items, in prompt order (each is kImagePlaceholder in its message's content).
  std::vector<ImagePart> images;
  // The input item each message came from (input[i]), for errors about the tool turns.
  std::vector<std::size_t> input_index;
};

ResponsesRequest parse_responses_request(const nlohmann::ordered_json& body);

}  // namespace tf::server
