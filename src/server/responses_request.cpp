#include "server/responses_request.h"

#include <fmt/format.h>

#include <string_view>

#include "server/api_error.h"
#include "server/chat_request.h"

namespace tf::server {

namespace {

using json = nlohmann::ordered_json;

// One input item into `messages` (see ResponsesRequest::input); its input_image parts into `images`.
void add_input_item(const json& item, const std::string& param, json& messages, std::vector<ImagePart>& images) {
  if (!item.is_object())
    throw invalid_request(fmt::format("Invalid type for '{}': expected an input item object, but got {} instead.",
                                      param, json_type_name(item)),
                          param, "invalid_type");
  const JsonFields f(item, param + ".");
  const auto type = f.string("type").value_or("message");
  if (type == "reasoning") return;
  if (type == "function_call") {
    const auto call_id = f.string("call_id"), name = f.string("name"), arguments = f.string("arguments");
    for (const auto& [value, field] : {std::pair{&call_id, "call_id"}, {&name, "name"}, {&arguments, "arguments"}})
      if (!*value)
        throw invalid_request(fmt::format("Missing required parameter: '{}.{}'.", param, field), param + "." + field);
    json call = {{"id", *call_id}, {"type", "function"}, {"function", {{"name", *name}, {"arguments", *arguments}}}};
    if (!messages.empty() && messages.back()["role"] == "assistant" && messages.back().contains("tool_calls"))
      messages.back()["tool_calls"].push_back(std::move(call));
    else
      messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", json::array({std::move(call)})}});
    return;
  }
  if (type == "function_call_output") {
    const auto call_id = f.string("call_id");
    if (!call_id)
      throw invalid_request(fmt::format("Missing required parameter: '{}.call_id'.", param), param + ".call_id");
    const auto* output = f.get("output");
    if (!output)
      throw invalid_request(fmt::format("Missing required parameter: '{}.output'.", param), param + ".output");
    messages.push_back({{"role", "tool"},
                        {"tool_call_id", *call_id},
                        {"content", message_text(*output, param + ".output", {"input_text", "output_text", "text"})}});
    return;
  }
  if (type != "message")
    throw unsupported(fmt::format("Input items of type '{}' are not supported by this server (message, "
                                  "function_call, function_call_output and reasoning items).",
                                  type),
                      param + ".type");
  const auto role = f.string("role");
  if (!role) throw invalid_request(fmt::format("Missing required parameter: '{}.role'.", param), param + ".role");
  if (*role != "user" && *role != "assistant" && *role != "system" && *role != "developer")
    throw invalid_request(fmt::format("Invalid value for '{}.role': '{}'. Supported values are: 'user', "
                                      "'assistant', 'system' and 'developer'.",
                                      param, *role),
                          param + ".role", "invalid_value");
  const auto* content = f.get("content");
  if (!content)
    throw invalid_request(fmt::format("Missing required parameter: '{}.content'.", param), param + ".content");
  messages.push_back({{"role", *role == "developer" ? "system" : *role},
                      {"content", message_text(*content, param + ".content", {"input_text", "output_text", "text"},
                                               &images, "input_image")}});
}

// True when object `o` has `key` set to the string `want` (a null, a number or an object there is not).
bool has_string(const json& o, const char* key, std::string_view want) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() && it->get_ref<const std::string&>() == want;
}

// The Responses API's flat function tools as chat completions' tools, for parse_tool_settings.
json chat_tools_body(const JsonFields& f) {
  json body = json::object();
  if (const auto* tools = f.array("tools")) {
    json list = json::array();
    for (std::size_t i = 0; i < tools->size(); ++i) {
      const auto& t = (*tools)[i];
      const auto p = fmt::format("tools[{}]", i);
      if (!t.is_object())
        throw invalid_request(
            fmt::format("Invalid type for '{}': expected an object, but got {} instead.", p, json_type_name(t)), p,
            "invalid_type");
      if (!t.contains("type") || t["type"].is_null())
        throw invalid_request(fmt::format("Missing required parameter: '{}.type'.", p), p + ".type");
      if (!has_string(t, "type", "function"))
        throw unsupported(fmt::format("'{}.type': only function tools are supported by this server.", p), p + ".type");
      json function = json::object();
      for (const char* key : {"name", "description", "parameters", "strict"})
        if (t.contains(key) && !t[key].is_null()) function[key] = t[key];
      list.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    body["tools"] = std::move(list);
  }
  if (const auto* choice = f.get("tool_choice")) {
    if (choice->is_object() && has_string(*choice, "type", "function"))
      body["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice->value("name", json())}}}};
    else
      body["tool_choice"] = *choice;
  }
  if (const auto* p = f.get("parallel_tool_calls")) body["parallel_tool_calls"] = *p;
  return body;
}

}  // namespace

ResponsesRequest parse_responses_request(const nlohmann::ordered_json& body) {
  const JsonFields f(body);
  ResponsesRequest r;
  r.model = f.string("model");
  const auto* input = f.get("input");
  if (!input) throw invalid_request("Missing required parameter: 'input'.", "input");
  if (input->is_string()) {
    r.input.push_back({{"role", "user"}, {"content", input->get<std::string>()}});
    r.input_index.push_back(0);
  } else if (input->is_array()) {
    if (input->empty())
      throw invalid_request("Invalid 'input': expected a non-empty list of input items.", "input", "invalid_value");
    for (std::size_t i = 0; i < input->size(); ++i) {
      add_input_item((*input)[i], fmt::format("input[{}]", i), r.input, r.images);
      r.input_index.resize(r.input.size(), i);
    }
  } else {
    throw invalid_request(fmt::format("Invalid type for 'input': expected a string or a list of input items, but "
                                      "got {} instead.",
                                      json_type_name(*input)),
                          "input", "invalid_type");
  }
  r.instructions = f.string("instructions");
  r.sampling = parse_sampling_fields(f, {"max_output_tokens"});
  r.stream = f.boolean("stream").value_or(false);
  r.store = f.boolean("store").value_or(true);
  r.previous_response_id = f.string("previous_response_id");
  r.user = f.string("user");
  if (const auto* md = f.object("metadata")) {
    if (md->size() > 16)
      throw invalid_request("Invalid 'metadata': at most 16 key-value pairs are allowed.", "metadata", "invalid_value");
    for (const auto& [k, v] : md->items())
      if (!v.is_string() || k.size() > 64 || v.get<std::string>().size() > 512)
        throw invalid_request(
            "Invalid 'metadata': keys are strings of at most 64 characters and values strings of "
            "at most 512.",
            "metadata", "invalid_value");
    r.metadata = *md;
  }
  if (const auto* kw = f.object("chat_template_kwargs")) r.template_kwargs = *kw;

  const auto tools_body = chat_tools_body(f);
  try {
    r.tools = parse_tool_settings(JsonFields(tools_body));
  } catch (const ApiError& e) {
    // Name the Responses API's own field: tools[i].name, not tools[i].function.name.
    auto param = e.param();
    if (param && param->find(".function.") != std::string::npos)
      param = param->substr(0, param->find(".function.")) + "." + param->substr(param->find(".function.") + 10);
    if (param == "tool_choice.function.name") param = "tool_choice.name";
    throw ApiError(e.status(), e.type(), e.what(), param, e.code());
  }
  f.refuse_if_set("background", "responses run in the foreground.");
  bool output_logprobs = false;
  if (const auto* include = f.array("include")) {
    for (std::size_t i = 0; i < include->size(); ++i) {
      const auto& v = (*include)[i];
      if (!v.is_string())
        throw invalid_request(
            fmt::format("Invalid type for 'include[{}]': expected a string, but got {} instead.", i, json_type_name(v)),
            "include", "invalid_type");
      if (v.get_ref<const std::string&>() != "message.output_text.logprobs")
        throw invalid_request(fmt::format("Invalid value for 'include[{}]': '{}'. The only value this server "
                                          "supports is 'message.output_text.logprobs'.",
                                          i, v.get_ref<const std::string&>()),
                              "include", "invalid_value");
      output_logprobs = true;
    }
  }
  f.refuse_if_set("conversation", "use previous_response_id to continue a conversation.");
  f.refuse_if_set("prompt", "prompt templates are not available.");
  if (auto trunc = f.string("truncation"); trunc && *trunc != "disabled")
    throw unsupported("'truncation' other than \"disabled\" is not supported by this server.", "truncation");
  const auto top = f.integer("top_logprobs", 0, 20);
  if (top && *top > 0 && !output_logprobs)
    throw invalid_request("Invalid 'top_logprobs': it needs 'include' to list \"message.output_text.logprobs\".",
                          "top_logprobs", "invalid_value");
  if (output_logprobs) r.sampling.logprobs = static_cast<int>(top.value_or(0));
  if (const auto* text = f.object("text")) {
    if (const auto* format = JsonFields(*text, "text.").object("format")) r.structured = parse_text_format(*format);
  }
  if (auto n = f.integer("n", 1, 128); n && *n != 1)
    throw invalid_request("Invalid 'n': this server generates one output per request.", "n", "unsupported_value");
  return r;
}

}  // namespace tf::server
