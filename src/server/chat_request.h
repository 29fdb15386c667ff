#pragma once
// POST /v1/chat/completions: the request body read and validated into what the engine renders.
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/image_inputs.h"
#include "server/sampling_fields.h"
#include "server/structured_fields.h"
#include "server/tool_fields.h"

namespace tf::server {

struct ChatRequest {
  std::optional<std::string> model;
  // Normalized for the chat template: every message has a string "role" (developer becomes system) and a
  // string "content" (content-part lists joined); assistant tool_calls, tool_call_id and name pass through.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  ToolSettings tools;  // tools, tool_choice, parallel_tool_calls
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  bool add_generation_prompt = true;
  // continue_final_message (vLLM): the prompt ends inside the final message, which the reply continues.
  bool continue_final_message = false;
  // thinking_budget: close the reasoning block after this many tokens (server default: --reasoning-budget).
  std::optional<std::int64_t> thinking_budget;
  SamplingFields sampling;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::optional<std::string> user;
  StructuredOutput structured;  // response_format json_object / json_schema, grammar, regex
  // image_url parts, in prompt order; each is image_inputs.h's kImagePlaceholder in its message's content.
  std::vector<ImagePart> images;
};

ChatRequest parse_chat_request(const nlohmann::ordered_json& body);

// Chat completions' own rule (llama.cpp's): at most one assistant message ends the conversation (the one a
// reply may continue); two are a 400 naming the last. Anthropic's API merges such turns instead.
void check_trailing_assistants(const nlohmann::ordered_json& messages);

// reasoning_effort ("none", "minimal", "low", "medium", "high", "xhigh", "max") into the template's
// variables: reasoning_effort itself (templates with effort levels read it) and, for "none", enable_thinking
// false (templates that only switch thinking on and off); a kwarg the client set wins.
void apply_reasoning_effort(const JsonFields& fields, nlohmann::ordered_json& template_kwargs);

// The text of a message "content": a string, or a list of text parts (types in `text_types`) joined by "\n".
// Other part types are refused (this server reads text only). `param` names the field in errors.
// With `images`, image parts of type `image_type` are taken too (chat completions' image_url, the Responses API's
// input_image; server/image_parts.h reads them): each becomes kImagePlaceholder in the text and is appended to
// `images`, and a content holding one joins its parts with nothing between them (as Qwen's templates render them).
std::string message_text(const nlohmann::ordered_json& content, const std::string& param,
                         std::initializer_list<std::string_view> text_types, std::vector<ImagePart>* images = nullptr,
                         std::string_view image_type = "image_url");

// One chat message normalized as ChatRequest::messages describes; throws ApiError naming `param`.
nlohmann::ordered_json normalize_chat_message(const nlohmann::ordered_json& message, const std::string& param,
                                              std::vector<ImagePart>* images = nullptr);

}  // namespace tf::server
