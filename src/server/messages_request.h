#pragma once
// POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API): the body read into the chat
// request the rest of the server runs. Content blocks: text, tool_use (assistant), tool_result (user);
// `system` as a string or text blocks; `tools` as {name, description, input_schema}; `tool_choice`
// {type: auto | any | tool | none}; `thinking` {type: enabled, budget_tokens} | {type: disabled};
// `stop_sequences`. Other block types are a 400 naming the block.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/chat_request.h"

namespace tf::server {

struct MessagesRequest {
  ChatRequest chat;  // messages in the OpenAI shape, tools, sampling, stream, template kwargs
  std::optional<std::string> model;
};

// count_only: /count_tokens, where max_tokens is not required.
MessagesRequest parse_messages_request(const nlohmann::ordered_json& body, bool count_only);

}  // namespace tf::server
