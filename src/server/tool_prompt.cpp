#include "server/tool_prompt.h"

#include <fmt/format.h>

#include "server/api_error.h"

namespace tf::server {

namespace {

bool has_tool_turns(const nlohmann::ordered_json& messages) {
  for (const auto& m : messages)
    if (m.contains("tool_calls") || m.value("role", "") == "tool") return true;
  return false;
}

std::string arguments_text(const nlohmann::ordered_json& arguments) {
  if (arguments.is_string()) return arguments.get<std::string>();
  return arguments.is_null() ? "{}" : arguments.dump();
}

// The history for a template that knows no tools: calls written as the fallback asks the model to write them.
void write_tool_turns_as_text(nlohmann::ordered_json& messages) {
  for (auto& m : messages) {
    if (const auto calls = m.find("tool_calls"); calls != m.end()) {
      std::string text = m.value("content", "");
      for (const auto& call : *calls) {
        const auto& fn = call["function"];
        const auto args = nlohmann::ordered_json::parse(arguments_text(fn.value("arguments", nlohmann::ordered_json())),
                                                        nullptr, false);
        nlohmann::ordered_json written = {{"name", fn["name"]}, {"arguments", args.is_discarded() ? nlohmann::ordered_json::object() : args}};
        if (!text.empty()) text += "\n";
        text += "<tool_call>\n" + written.dump() + "\n</tool_call>";
      }
      m.erase("tool_calls");
      m["content"] = text;
    } else if (m.value("role", "") == "tool") {
      m = {{"role", "user"}, {"content", "<tool_response>\n" + m.value("content", "") + "\n</tool_response>"}};
    }
  }
}

}  // namespace

std::string fallback_tools_block(const nlohmann::ordered_json& tools) {
  std::string block =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nThe functions you can call "
      "are described as JSON schemas inside <tools></tools> tags:\n<tools>";
  for (const auto& tool : tools) block += "\n" + tool.dump();
  block +=
      "\n</tools>\n\nTo call a function, write a JSON object with its name and arguments inside <tool_call></tool_call> "
      "tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
  return block;
}

ToolPlan plan_tools(const InferenceService& service, const ToolSettings& settings, ChatInput& input) {
  ToolPlan plan;
  if (settings.specs.empty() && !has_tool_turns(input.messages)) return plan;
  ChatInput probe = input;
  if (settings.tools.is_array()) probe.tools = settings.tools;
  const auto native = tools::detect_tool_format(service.chat_template_source(probe));
  const tools::ToolFormat format = native.value_or(tools::ToolFormat::Hermes);
  if (native) {
    if (settings.active()) input.tools = settings.tools;  // "none" hides the tools from the model
  } else {
    write_tool_turns_as_text(input.messages);
    if (settings.active()) {
      const std::string block = fallback_tools_block(settings.tools);
      auto& messages = input.messages;
      if (!messages.empty() && messages[0].value("role", "") == "system")
        messages[0]["content"] = messages[0].value("content", "") + "\n\n" + block;
      else
        messages.insert(messages.begin(), nlohmann::ordered_json{{"role", "system"}, {"content", block}});
    }
  }
  if (!settings.active()) return plan;
  plan.format = format;
  // The calls' grammar: forced (required, a named function: only that one) or lazy (auto), each function's
  // arguments held to its schema.
  plan.forced = settings.choice == ToolSettings::Choice::Named || settings.choice == ToolSettings::Choice::Required;
  std::vector<tools::ToolSpec> callable;
  for (const auto& spec : settings.specs)
    if (settings.choice != ToolSettings::Choice::Named || spec.name == settings.named) callable.push_back(spec);
  try {
    plan.calls =
        std::make_shared<const grammar::Grammar>(tools::tool_call_grammar(format, callable, settings.parallel));
  } catch (const grammar::GrammarError& e) {
    throw invalid_request(
        fmt::format("Invalid 'tools': a tool's parameters cannot be held to their schema: {}.", e.what()), "tools",
        e.keyword().empty() ? "invalid_value" : "unsupported_schema_keyword");
  }
  return plan;
}

}  // namespace tf::server
