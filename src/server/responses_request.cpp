#include "server/responses_request.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/chat_request.h"

namespace tf::server {

namespace {

nlohmann::ordered_json input_message(const nlohmann::ordered_json& item, const std::string& param) {
  if (!item.is_object())
    throw invalid_request(fmt::format("Invalid type for '{}': expected an input item object, but got {} instead.",
                                      param, json_type_name(item)),
                          param, "invalid_type");
  const JsonFields f(item, param + ".");
  const auto type = f.string("type").value_or("message");
  if (type != "message")
    throw unsupported(fmt::format("Input items of type '{}' are not supported by this server (message items "
                                  "only).",
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
  return {{"role", *role == "developer" ? "system" : *role},
          {"content", message_text(*content, param + ".content", {"input_text", "output_text", "text"})}};
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
  } else if (input->is_array()) {
    if (input->empty())
      throw invalid_request("Invalid 'input': expected a non-empty list of input items.", "input", "invalid_value");
    for (std::size_t i = 0; i < input->size(); ++i)
      r.input.push_back(input_message((*input)[i], fmt::format("input[{}]", i)));
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
      throw invalid_request("Invalid 'metadata': at most 16 key-value pairs are allowed.", "metadata",
                            "invalid_value");
    for (const auto& [k, v] : md->items())
      if (!v.is_string() || k.size() > 64 || v.get<std::string>().size() > 512)
        throw invalid_request("Invalid 'metadata': keys are strings of at most 64 characters and values strings of "
                              "at most 512.",
                              "metadata", "invalid_value");
    r.metadata = *md;
  }
  if (const auto* kw = f.object("chat_template_kwargs")) r.template_kwargs = *kw;

  if (const auto* tools = f.array("tools"); tools && !tools->empty())
    throw unsupported("'tools' are not supported on /v1/responses by this server yet.", "tools");
  if (const auto* choice = f.get("tool_choice");
      choice && !(choice->is_string() && (*choice == "auto" || *choice == "none")))
    throw unsupported("'tool_choice' other than \"auto\" or \"none\" is not supported by this server.",
                      "tool_choice");
  f.refuse_if_set("background", "responses run in the foreground.");
  f.refuse_if_set("include", "no additional output data is available.");
  f.refuse_if_set("conversation", "use previous_response_id to continue a conversation.");
  f.refuse_if_set("prompt", "prompt templates are not available.");
  if (auto trunc = f.string("truncation"); trunc && *trunc != "disabled")
    throw unsupported("'truncation' other than \"disabled\" is not supported by this server.", "truncation");
  if (auto top = f.integer("top_logprobs", 0, 20); top && *top > 0)
    throw unsupported("'top_logprobs' is not supported by this server.", "top_logprobs");
  if (const auto* text = f.object("text")) {
    if (const auto* format = JsonFields(*text, "text.").object("format")) {
      const auto type = JsonFields(*format, "text.format.").string("type");
      if (type && *type != "text")
        throw unsupported(fmt::format("'text.format' of type '{}' is not supported by this server (text only).",
                                      *type),
                          "text.format");
    }
  }
  if (auto n = f.integer("n", 1, 128); n && *n != 1)
    throw invalid_request("Invalid 'n': this server generates one output per request.", "n", "unsupported_value");
  return r;
}

}  // namespace tf::server
