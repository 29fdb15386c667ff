#pragma once
// POST /tokenize and /detokenize (also under /v1/), in llama.cpp's and vLLM's shapes:
//   tokenize:   {"content" | "prompt": text, "add_special" | "add_special_tokens": bool, "with_pieces": bool,
//                "return_token_strs": bool}  or  {"messages": [...], "add_generation_prompt", "tools",
//                "chat_template_kwargs", "reasoning_effort"} (the chat prompt, rendered as chat completions does)
//   detokenize: {"tokens": [ids]}
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/chat_request.h"

namespace tf::server {

struct TokenizeRequest {
  std::optional<std::string> text;  // content / prompt
  bool add_special = false;         // default: llama.cpp's false; vLLM's add_special_tokens defaults to true
  std::optional<ChatRequest> chat;  // messages given
  bool with_pieces = false;         // llama.cpp: tokens as [{"id", "piece"}]
  bool token_strs = false;          // vLLM: "token_strs" beside "tokens"
};
TokenizeRequest parse_tokenize_request(const nlohmann::ordered_json& body);

// The ids to decode; each must be in 0 .. vocab - 1 (param "tokens[i]").
std::vector<std::int32_t> parse_detokenize_request(const nlohmann::ordered_json& body, std::int64_t vocab);

}  // namespace tf::server
