#include "server/tokenize_request.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace tf::server {

TokenizeRequest parse_tokenize_request(const nlohmann::ordered_json& body) {
  const JsonFields f(body);
  TokenizeRequest r;
  const auto content = f.string("content");
  const auto prompt = f.string("prompt");
  if (content && prompt) throw invalid_request("Give one of 'content' and 'prompt', not both.", "prompt");
  if (f.get("messages")) {
    if (content || prompt) throw invalid_request("Give 'messages' or a text, not both.", "messages");
    auto chat = body;
    chat.erase("max_tokens");
    r.chat = parse_chat_request(chat);
  } else {
    r.text = content ? content : prompt;
    if (!r.text) throw invalid_request("Missing required parameter: 'content' (or 'prompt', or 'messages').", "content");
    // vLLM's add_special_tokens defaults to true, llama.cpp's add_special to false.
    if (auto v = f.boolean("add_special_tokens")) r.add_special = *v;
    else if (prompt && !f.get("add_special")) r.add_special = true;
    if (auto v = f.boolean("add_special")) r.add_special = *v;
  }
  r.with_pieces = f.boolean("with_pieces").value_or(false);
  r.token_strs = f.boolean("return_token_strs").value_or(false);
  return r;
}

std::vector<std::int32_t> parse_detokenize_request(const nlohmann::ordered_json& body, std::int64_t vocab) {
  const JsonFields f(body);
  const auto* tokens = f.array("tokens");
  if (!tokens) throw invalid_request("Missing required parameter: 'tokens'.", "tokens");
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < tokens->size(); ++i) {
    const auto& t = (*tokens)[i];
    const std::string p = fmt::format("tokens[{}]", i);
    if (!t.is_number_integer() || t.get<std::int64_t>() < 0 || t.get<std::int64_t>() >= vocab)
      throw invalid_request(fmt::format("Invalid '{}': expected a token id from 0 to {}.", p, vocab - 1), p,
                            "invalid_value");
    ids.push_back(static_cast<std::int32_t>(t.get<std::int64_t>()));
  }
  return ids;
}

}  // namespace tf::server
