#pragma once
// The prompt side of tool calling: the tools and the history's tool turns put where the model's template
// expects them, and the call format the reply will be read in.
//
// A template that writes tool calls (its text has a format's markers, text/tool_calls) gets `tools` and the
// history as they are. A template without tool support gets the fallback (docs/tools-and-reasoning.md): a
// system block describing the tools and asking for Hermes-style calls, assistant calls written into their
// message as <tool_call> blocks, and tool results as user messages in <tool_response> blocks.
#include <optional>
#include <string>
#include <vector>

#include "server/inference_service.h"
#include "server/tool_fields.h"
#include "text/tool_calls/call_grammar.h"
#include "text/tool_calls/tool_call_parser.h"

namespace tf::server {

struct ToolPlan {
  std::optional<tools::ToolFormat> format;        // read calls in this format; none: the reply is all content
  std::shared_ptr<const grammar::Grammar> calls;  // the grammar of the reply's calls (with a format)
  bool forced = false;  // tool_choice required / named: the reply must be calls; else the grammar is lazy
};

// Adjusts `input` (messages, tools) for `settings` and returns how to read and constrain the reply.
ToolPlan plan_tools(const InferenceService& service, const ToolSettings& settings, ChatInput& input);

// The fallback system block for templates without tool support.
std::string fallback_tools_block(const nlohmann::ordered_json& tools);

}  // namespace tf::server
