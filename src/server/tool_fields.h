#pragma once
// The tool fields of a chat request (tools, tool_choice, parallel_tool_calls) read and checked, and the tool
// turns of its history checked against each other. Every fault is a 400 naming the field.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/json_fields.h"
#include "text/tool_calls/tool_call_parser.h"

namespace tf::server {

struct ToolSettings {
  enum class Choice { Auto, None, Required, Named };
  nlohmann::ordered_json tools = nullptr;  // the request's tools as given (a non-empty array), else null
  std::vector<tools::ToolSpec> specs;      // name and parameters schema of each
  Choice choice = Choice::Auto;
  std::string named;  // Choice::Named: the function
  bool parallel = true;
  // Tools the reply may call: none when there are none or tool_choice is "none".
  bool active() const { return !specs.empty() && choice != Choice::None; }
};

// `tools` as OpenAI's chat completions takes it: [{"type": "function", "function": {"name", "description",
// "parameters"}}]; `tool_choice`: "auto" | "none" | "required" | {"type": "function", "function": {"name"}}.
ToolSettings parse_tool_settings(const JsonFields& fields);

// The request's own tools as a tool list (also used by the Responses and Messages APIs, whose tools are
// flatter): `name` must be a function name ([A-Za-z0-9_.:-], 1..128), `parameters` an object when given.
tools::ToolSpec read_tool_function(const nlohmann::ordered_json& function, const std::string& param);

// Checks the history's tool turns: each tool message answers a call id an earlier assistant message made
// (param messages[i].tool_call_id), and each assistant tool call has a function name and string or object
// arguments.
void check_tool_history(const nlohmann::ordered_json& messages);

}  // namespace tf::server
