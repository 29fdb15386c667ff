#include "server/chat_request.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/api_error.h"
#include "server/image_parts.h"

namespace tf::server {

std::string message_text(const nlohmann::ordered_json& content, const std::string& param,
                         std::initializer_list<std::string_view> text_types, std::vector<ImagePart>* images,
                         std::string_view image_type) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    throw invalid_request(fmt::format("Invalid type for '{}': expected a string or a list of content parts, but "
                                      "got {} instead.",
                                      param, json_type_name(content)),
                          param, "invalid_type");
  std::vector<std::string> texts;
  bool has_image = false;
  for (std::size_t i = 0; i < content.size(); ++i) {
    const auto& part = content[i];
    const std::string p = fmt::format("{}[{}]", param, i);
    if (!part.is_object())
      throw invalid_request(fmt::format("Invalid type for '{}': expected a content part object, but got {} instead.", p,
                                        json_type_name(part)),
                            p, "invalid_type");
    const JsonFields f(part, p + ".");
    const auto type = f.string("type");
    if (!type) throw invalid_request(fmt::format("Missing required parameter: '{}.type'.", p), p + ".type");
    if (images != nullptr && *type == image_type) {
      images->push_back(image_type == "input_image" ? responses_image_part(f, p) : chat_image_part(f, p));
      texts.emplace_back(kImagePlaceholder);
      has_image = true;
      continue;
    }
    if (std::find(text_types.begin(), text_types.end(), *type) == text_types.end()) {
      const bool media = type->find("image") != std::string::npos || type->find("audio") != std::string::npos ||
                         type->find("file") != std::string::npos || type->find("video") != std::string::npos;
      throw unsupported(
          media ? fmt::format("Content parts of type '{}' are not supported: this server reads text "
                              "only.",
                              *type)
                : fmt::format("Invalid value for '{}.type': '{}' is not a known text content part.", p, *type),
          p + ".type");
    }
    const auto t = f.string("text");
    if (!t) throw invalid_request(fmt::format("Missing required parameter: '{}.text'.", p), p + ".text");
    texts.push_back(*t);
  }
  std::string text;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (i > 0 && !has_image) text += '\n';
    text += texts[i];
  }
  return text;
}

nlohmann::ordered_json normalize_chat_message(const nlohmann::ordered_json& m, const std::string& param,
                                              std::vector<ImagePart>* images) {
  if (!m.is_object())
    throw invalid_request(
        fmt::format("Invalid type for '{}': expected an object, but got {} instead.", param, json_type_name(m)), param,
        "invalid_type");
  const JsonFields f(m, param + ".");
  auto role = f.string("role");
  if (!role) throw invalid_request(fmt::format("Missing required parameter: '{}.role'.", param), param + ".role");
  static constexpr std::string_view kRoles[] = {"system", "developer", "user", "assistant", "tool"};
  if (std::find(std::begin(kRoles), std::end(kRoles), *role) == std::end(kRoles))
    throw invalid_request(fmt::format("Invalid value for '{}.role': '{}'. Supported values are: 'system', "
                                      "'developer', 'user', 'assistant' and 'tool'.",
                                      param, *role),
                          param + ".role", "invalid_value");
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["role"] = *role == "developer" ? "system" : *role;
  const auto* content = f.get("content");
  const auto* tool_calls = f.array("tool_calls");
  if (content) {
    out["content"] = message_text(*content, param + ".content", {"text", "input_text", "output_text"}, images);
  } else if (*role == "assistant") {
    out["content"] = "";  // an assistant turn that only calls tools
  } else {
    throw invalid_request(fmt::format("Missing required parameter: '{}.content'.", param), param + ".content");
  }
  if (tool_calls) {
    if (*role != "assistant")
      throw invalid_request(
          fmt::format("Invalid parameter: '{}.tool_calls' is only allowed on assistant messages.", param),
          param + ".tool_calls");
    out["tool_calls"] = *tool_calls;
  }
  // Reasoning of an earlier assistant turn (vLLM's reasoning_content, or reasoning): templates that show it
  // (Qwen3's and others) render it.
  if (*role == "assistant") {
    if (auto r = f.string("reasoning_content"))
      out["reasoning_content"] = *r;
    else if (auto r2 = f.string("reasoning"))
      out["reasoning_content"] = *r2;
  }
  if (auto id = f.string("tool_call_id")) out["tool_call_id"] = *id;
  if (auto name = f.string("name")) out["name"] = *name;
  return out;
}

void apply_reasoning_effort(const JsonFields& f, nlohmann::ordered_json& kwargs) {
  const auto effort = f.string("reasoning_effort");
  if (!effort) return;
  static constexpr std::string_view kLevels[] = {"none", "minimal", "low", "medium", "high", "xhigh", "max"};
  if (std::find(std::begin(kLevels), std::end(kLevels), *effort) == std::end(kLevels))
    throw invalid_request(fmt::format("Invalid value for 'reasoning_effort': '{}'. Supported values are 'none', "
                                      "'minimal', 'low', 'medium', 'high', 'xhigh' and 'max'.",
                                      *effort),
                          "reasoning_effort", "invalid_value");
  if (!kwargs.contains("reasoning_effort")) kwargs["reasoning_effort"] = *effort;
  if (*effort == "none" && !kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = false;
}

ChatRequest parse_chat_request(const nlohmann::ordered_json& body) {
  const JsonFields f(body);
  ChatRequest r;
  r.model = f.string("model");
  const auto* messages = f.array("messages");
  if (!messages) throw invalid_request("Missing required parameter: 'messages'.", "messages");
  if (messages->empty())
    throw invalid_request("Invalid 'messages': expected a non-empty list of messages.", "messages", "invalid_value");
  for (std::size_t i = 0; i < messages->size(); ++i)
    r.messages.push_back(normalize_chat_message((*messages)[i], fmt::format("messages[{}]", i), &r.images));

  r.sampling = parse_sampling_fields(f, {"max_completion_tokens", "max_tokens"});
  parse_adjustment_fields(f, r.sampling);
  r.stream = f.boolean("stream").value_or(false);
  if (const auto* so = f.object("stream_options"))
    r.include_usage = JsonFields(*so, "stream_options.").boolean("include_usage").value_or(false);
  r.user = f.string("user");
  if (const auto* kw = f.object("chat_template_kwargs")) r.template_kwargs = *kw;
  apply_reasoning_effort(f, r.template_kwargs);
  r.thinking_budget = f.integer("thinking_budget", 0, std::int64_t{1} << 30);
  const auto agp = f.boolean("add_generation_prompt");
  if (agp) r.add_generation_prompt = *agp;
  r.continue_final_message = f.boolean("continue_final_message").value_or(false);
  if (r.continue_final_message) {
    if (agp.value_or(false))
      throw invalid_request(
          "Invalid request: 'continue_final_message' and 'add_generation_prompt' cannot both be "
          "true (the reply either continues the final message or starts a new one).",
          "continue_final_message", "invalid_value");
    r.add_generation_prompt = false;
    if (r.messages.back()["content"].get<std::string>().empty())
      throw invalid_request(fmt::format("Invalid 'messages[{}].content': continue_final_message needs a final "
                                        "message with text to continue.",
                                        r.messages.size() - 1),
                            fmt::format("messages[{}].content", r.messages.size() - 1), "invalid_value");
  }

  r.tools = parse_tool_settings(f);
  check_tool_history(r.messages);
  const bool logprobs = f.boolean("logprobs").value_or(false);
  const auto top = f.integer("top_logprobs", 0, 20);
  if (top && *top > 0 && !logprobs)
    throw invalid_request("Invalid 'top_logprobs': it needs 'logprobs' set to true.", "top_logprobs", "invalid_value");
  if (logprobs) r.sampling.logprobs = static_cast<int>(top.value_or(0));
  r.structured = parse_structured_output(f);
  return r;
}

void check_trailing_assistants(const nlohmann::ordered_json& messages) {
  const auto n = messages.size();
  if (n >= 2 && messages[n - 1].value("role", "") == "assistant" && messages[n - 2].value("role", "") == "assistant")
    throw invalid_request(fmt::format("Invalid 'messages[{}]': the conversation ends with two assistant messages; at "
                                      "most one (a reply to continue) may end it.",
                                      n - 1),
                          fmt::format("messages[{}]", n - 1), "invalid_value");
}

}  // namespace tf::server
