#include "server/messages_request.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/image_parts.h"
#include "server/json_fields.h"

namespace tf::server {

namespace {

using json = nlohmann::ordered_json;

std::string text_of_blocks(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    throw invalid_request(fmt::format("Invalid type for '{}': expected a string or a list of content blocks.", param),
                          param, "invalid_type");
  std::string text;
  for (std::size_t i = 0; i < content.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", param, i);
    const auto& block = content[i];
    if (!block.is_object()) throw invalid_request(fmt::format("Invalid type for '{}': expected an object.", p), p);
    const JsonFields b(block, p + ".");
    const auto type = b.string("type");
    if (type != "text")
      throw invalid_request(fmt::format("Invalid '{}.type': only 'text' blocks are allowed here.", p), p + ".type",
                            "invalid_value");
    const auto t = b.string("text");
    if (!t) throw invalid_request(fmt::format("Missing required parameter: '{}.text'.", p), p + ".text");
    if (!text.empty()) text += "\n";
    text += *t;
  }
  return text;
}

// One Anthropic message as OpenAI-shaped chat messages (a user turn's tool results become tool messages); a user
// turn's image blocks go to `images` and leave kImagePlaceholder where they were in its text.
void add_message(const json& m, const std::string& p, json& out, std::vector<ImagePart>& images) {
  if (!m.is_object()) throw invalid_request(fmt::format("Invalid type for '{}': expected an object.", p), p);
  const JsonFields f(m, p + ".");
  const auto role = f.string("role");
  if (role != "user" && role != "assistant")
    throw invalid_request(fmt::format("Invalid '{}.role': expected 'user' or 'assistant'.", p), p + ".role",
                          "invalid_value");
  const auto* content = f.get("content");
  if (!content) throw invalid_request(fmt::format("Missing required parameter: '{}.content'.", p), p + ".content");
  if (content->is_string()) {
    out.push_back({{"role", *role}, {"content", content->get<std::string>()}});
    return;
  }
  if (!content->is_array())
    throw invalid_request(
        fmt::format("Invalid type for '{}.content': expected a string or a list of content blocks.", p), p + ".content",
        "invalid_type");
  std::vector<std::string> pieces;  // text blocks and image placeholders, in order
  std::string thinking;
  bool has_image = false;
  json calls = json::array();
  for (std::size_t i = 0; i < content->size(); ++i) {
    const std::string bp = fmt::format("{}.content[{}]", p, i);
    const auto& block = (*content)[i];
    if (!block.is_object()) throw invalid_request(fmt::format("Invalid type for '{}': expected an object.", bp), bp);
    const JsonFields b(block, bp + ".");
    const auto type = b.string("type");
    if (!type) throw invalid_request(fmt::format("Missing required parameter: '{}.type'.", bp), bp + ".type");
    if (*type == "text") {
      const auto t = b.string("text");
      if (!t) throw invalid_request(fmt::format("Missing required parameter: '{}.text'.", bp), bp + ".text");
      pieces.push_back(*t);
    } else if (*type == "image" && *role == "user") {
      images.push_back(anthropic_image_part(b, bp));
      pieces.emplace_back(kImagePlaceholder);
      has_image = true;
    } else if (*type == "tool_use" && *role == "assistant") {
      const auto id = b.string("id"), name = b.string("name");
      if (!id || !name)
        throw invalid_request(fmt::format("Missing required parameter: '{}.{}'.", bp, id ? "name" : "id"),
                              bp + (id ? ".name" : ".id"));
      const auto* input = b.object("input");
      calls.push_back({{"id", *id},
                       {"type", "function"},
                       {"function", {{"name", *name}, {"arguments", (input ? *input : json::object()).dump()}}}});
    } else if (*type == "tool_result" && *role == "user") {
      const auto id = b.string("tool_use_id");
      if (!id)
        throw invalid_request(fmt::format("Missing required parameter: '{}.tool_use_id'.", bp), bp + ".tool_use_id");
      const auto* c = b.get("content");
      std::string result = c ? text_of_blocks(*c, bp + ".content") : "";
      if (b.boolean("is_error").value_or(false)) result = "Error: " + result;
      out.push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", result}});
    } else if (*type == "thinking" && *role == "assistant") {
      // Earlier reasoning goes to the template as the turn's reasoning_content (the templates that show
      // reasoning of past turns, Qwen3's among them, render it; others drop it as transformers does).
      const auto t = b.string("thinking");
      if (!t) throw invalid_request(fmt::format("Missing required parameter: '{}.thinking'.", bp), bp + ".thinking");
      if (!thinking.empty()) thinking += "\n";
      thinking += *t;
    } else if (*type == "redacted_thinking" && *role == "assistant") {
      // Encrypted by Anthropic: nothing a local model can read.
    } else {
      throw invalid_request(fmt::format("Invalid '{}.type': '{}' blocks are not supported on a {} message by this "
                                        "server.",
                                        bp, *type, *role),
                            bp + ".type", "invalid_value");
    }
  }
  // Text blocks are joined by newlines; a content with an image has its parts joined with nothing between them,
  // as chat completions joins such a content (the same image and text make the same prompt on either API).
  std::string text;
  for (const auto& piece : pieces) {
    if (!text.empty() && !has_image) text += "\n";
    text += piece;
  }
  if (*role == "assistant") {
    json msg = {{"role", "assistant"}, {"content", text}};
    if (!thinking.empty()) msg["reasoning_content"] = thinking;
    if (!calls.empty()) msg["tool_calls"] = calls;
    out.push_back(std::move(msg));
  } else if (!text.empty()) {
    out.push_back({{"role", "user"}, {"content", text}});
  }
}

// Anthropic's tools and tool_choice as the chat request's.
void read_tools(const JsonFields& f, json& openai) {
  if (const auto* tools = f.array("tools")) {
    json list = json::array();
    for (std::size_t i = 0; i < tools->size(); ++i) {
      const auto& t = (*tools)[i];
      const std::string p = fmt::format("tools[{}]", i);
      if (!t.is_object()) throw invalid_request(fmt::format("Invalid type for '{}': expected an object.", p), p);
      const JsonFields tf(t, p + ".");
      if (auto type = tf.string("type"); type && *type != "custom")
        throw invalid_request(fmt::format("Invalid '{}.type': server tools ('{}') are not supported; give custom "
                                          "tools.",
                                          p, *type),
                              p + ".type", "invalid_value");
      json function = {{"name", tf.get("name") ? *tf.get("name") : json()}};
      if (const auto* d = tf.get("description")) function["description"] = *d;
      const auto* schema = tf.get("input_schema");
      if (!schema)
        throw invalid_request(fmt::format("Missing required parameter: '{}.input_schema'.", p), p + ".input_schema");
      if (!schema->is_object())
        throw invalid_request(fmt::format("Invalid '{}.input_schema': expected a JSON Schema object.", p),
                              p + ".input_schema", "invalid_type");
      function["parameters"] = *schema;
      list.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    openai["tools"] = std::move(list);
  }
  if (const auto* choice = f.object("tool_choice")) {
    const JsonFields c(*choice, "tool_choice.");
    const auto type = c.string("type");
    if (type == "auto")
      openai["tool_choice"] = "auto";
    else if (type == "any")
      openai["tool_choice"] = "required";
    else if (type == "none")
      openai["tool_choice"] = "none";
    else if (type == "tool")
      openai["tool_choice"] = {{"type", "function"}, {"function", {{"name", c.get("name") ? *c.get("name") : json()}}}};
    else
      throw invalid_request("Invalid 'tool_choice.type': expected 'auto', 'any', 'tool' or 'none'.", "tool_choice.type",
                            "invalid_value");
    if (c.boolean("disable_parallel_tool_use").value_or(false)) openai["parallel_tool_calls"] = false;
  }
}

}  // namespace

MessagesRequest parse_messages_request(const json& body, bool count_only) {
  const JsonFields f(body);
  MessagesRequest r;
  r.model = f.string("model");
  // The equivalent chat completions body, read by the chat request's own parser.
  json openai = {{"messages", json::array()}};
  if (const auto* system = f.get("system"))
    openai["messages"].push_back({{"role", "system"}, {"content", text_of_blocks(*system, "system")}});
  const auto* messages = f.array("messages");
  if (!messages) throw invalid_request("Missing required parameter: 'messages'.", "messages");
  std::vector<ImagePart> images;
  // Anthropic's rules: the conversation starts with a user turn.
  if (!messages->empty() && (*messages)[0].is_object() && (*messages)[0].value("role", "") == "assistant")
    throw invalid_request("messages[0].role: the first message must use the \"user\" role.", "messages[0].role",
                          "invalid_value");
  for (std::size_t i = 0; i < messages->size(); ++i)
    add_message((*messages)[i], fmt::format("messages[{}]", i), openai["messages"], images);
  if (openai["messages"].empty())
    throw invalid_request("Invalid 'messages': expected at least one message.", "messages", "invalid_value");
  if (!count_only) {
    const auto max_tokens = f.integer("max_tokens", 1, std::int64_t{1} << 30);
    if (!max_tokens) throw invalid_request("Missing required parameter: 'max_tokens'.", "max_tokens");
    openai["max_tokens"] = *max_tokens;
  }
  // Anthropic's ranges (not OpenAI's): temperature and top_p 0..1.
  if (const auto t = f.number("temperature", 0.0, 1.0)) openai["temperature"] = *t;
  if (const auto p = f.number("top_p", 0.0, 1.0)) openai["top_p"] = *p;
  // top_k is Anthropic's; seed and draft are this server's extensions, as on chat completions.
  for (const char* key : {"top_k", "stream", "seed", "draft"})
    if (const auto* v = f.get(key)) openai[key] = *v;
  if (const auto* stops = f.get("stop_sequences")) {
    if (!stops->is_array())
      throw invalid_request(fmt::format("Invalid type for 'stop_sequences': expected an array of strings, but got {} "
                                        "instead.",
                                        json_type_name(*stops)),
                            "stop_sequences", "invalid_type");
    for (std::size_t i = 0; i < stops->size(); ++i)
      if (!(*stops)[i].is_string())
        throw invalid_request(fmt::format("Invalid type for 'stop_sequences[{}]': expected a string.", i),
                              fmt::format("stop_sequences[{}]", i), "invalid_type");
    openai["stop"] = *stops;
  }
  read_tools(f, openai);
  if (const auto* thinking = f.object("thinking")) {
    const JsonFields t(*thinking, "thinking.");
    const auto type = t.string("type");
    json kwargs = json::object();
    if (type == "enabled" || type == "adaptive") {
      kwargs["enable_thinking"] = true;
      if (auto budget = t.integer("budget_tokens", 1, std::int64_t{1} << 30)) openai["thinking_budget"] = *budget;
    } else if (type == "disabled") {
      kwargs["enable_thinking"] = false;
    } else {
      throw invalid_request("Invalid 'thinking.type': expected 'enabled', 'adaptive' or 'disabled'.", "thinking.type",
                            "invalid_value");
    }
    openai["chat_template_kwargs"] = kwargs;
  }
  try {
    r.chat = parse_chat_request(openai);
  } catch (const ApiError& e) {
    // A field of the translated body: name Anthropic's own where it differs.
    std::optional<std::string> param = e.param();
    if (param == "stop") param = "stop_sequences";
    if (param && param->rfind("tool_choice.function.", 0) == 0) param = "tool_choice.name";
    if (param && param->rfind("tools[", 0) == 0 && param->find(".function.parameters") != std::string::npos)
      param = param->substr(0, param->find(".function.parameters")) + ".input_schema";
    else if (param && param->rfind("tools[", 0) == 0 && param->find(".function.") != std::string::npos)
      param = param->substr(0, param->find(".function.")) + "." + param->substr(param->find(".function.") + 10);
    throw ApiError(e.status(), e.type(), e.what(), param, e.code());
  }
  r.chat.images = std::move(images);  // their placeholders are in the messages' text, in this order
  return r;
}

}  // namespace tf::server
