#pragma once
// A chat reply read as it is generated: the model's reasoning (text/tool_calls/reasoning_splitter.h), its
// content and its tool calls (the format's parser), in chat completions' shapes. A streamed reply sends
// feed()'s deltas as they come; a whole reply feeds all its text once and takes message(). Both read the
// same, since the parsers read any split of the text alike.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "server/tool_prompt.h"
#include "text/tool_calls/reasoning_splitter.h"

namespace tf::server {

struct ReasoningPlan {
  bool split = false;  // read a reasoning block out of the reply
  tools::ReasoningMarkers markers;
  bool start_inside = false;  // the prompt opened the block
};

class ChatReplyReader {
 public:
  // `id_prefix`: call ids are this and random hex ("call_" for OpenAI, "toolu_" for Anthropic).
  ChatReplyReader(const ToolPlan& tools, const ToolSettings& settings, const ReasoningPlan& reasoning,
                  std::string id_prefix = "call_");
  // The deltas ({"content"}, {"reasoning_content", "reasoning"} or {"tool_calls": [...]}) this piece gives.
  std::vector<nlohmann::ordered_json> feed(const std::string& piece);
  // The deltas of what was held back, at the end of the reply.
  std::vector<nlohmann::ordered_json> finish();

  struct Call {
    std::string id, name, arguments;
    bool complete = false;
  };
  const std::string& content() const { return content_; }
  // The content is more than whitespace (blanks around calls are not an answer: a reply of calls and blanks has
  // null content, no text block, no message item).
  bool has_text() const { return content_.find_first_not_of(" \n\r\t") != std::string::npos; }
  const std::string& reasoning() const { return reasoning_; }
  // The complete calls (a call that broke is content).
  std::vector<Call> calls() const;
  // The chat.completion message: role, content (null when only calls), reasoning_content and reasoning when
  // there was reasoning, tool_calls when there are calls.
  nlohmann::ordered_json message() const;
  // "tool_calls" when the reply ended by itself with a complete call, else the generation's own reason.
  std::string finish_reason(FinishReason finish) const;

 private:
  void content_text(const std::string& text, std::vector<nlohmann::ordered_json>& deltas);
  void tool_events(std::vector<tools::ToolEvent>& events, std::vector<nlohmann::ordered_json>& deltas);
  std::optional<tools::ReasoningSplitter> splitter_;
  std::unique_ptr<tools::ToolCallParser> parser_;
  bool parallel_ = true;
  std::string id_prefix_;
  std::string content_, reasoning_;
  std::vector<Call> calls_;  // by event index
};

}  // namespace tf::server
