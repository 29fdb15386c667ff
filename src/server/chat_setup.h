#pragma once
// What chat completions, Anthropic's messages and the Responses API share between reading a chat request and
// generating: the template input with the tools and thinking options, the prompt, the constraints, and the
// reader that splits the reply into reasoning, content and calls.
#include <memory>
#include <string>

#include "server/api_context.h"
#include "server/chat_reply_reader.h"
#include "server/chat_request.h"
#include "server/generation_runner.h"

namespace tf::server {

struct ChatSetup {
  GenerationRequest generation;
  ToolPlan tools;
  ReasoningPlan reasoning;
  std::unique_ptr<ChatReplyReader> reader(const ChatRequest& request, std::string id_prefix = "call_") const {
    return std::make_unique<ChatReplyReader>(tools, request.tools, reasoning, std::move(id_prefix));
  }
};

// `param`: the field prompt errors name ("messages", "input").
ChatSetup prepare_chat(ApiContext& ctx, const ChatRequest& request, const std::string& param = "messages");

}  // namespace tf::server
