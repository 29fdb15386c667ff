#include "server/chat_reply_reader.h"

#include "server/openai_ids.h"
#include "server/usage_json.h"

namespace tf::server {

ChatReplyReader::ChatReplyReader(const ToolPlan& tools, const ToolSettings& settings, const ReasoningPlan& reasoning,
                                 std::string id_prefix)
    : parallel_(settings.parallel), id_prefix_(std::move(id_prefix)) {
  if (tools.format) parser_ = tools::make_tool_call_parser(*tools.format, settings.specs);
  if (reasoning.split)
    splitter_.emplace(reasoning.markers, reasoning.start_inside,
                      tools.format ? tools::tool_call_openers(*tools.format) : std::vector<std::string>{});
}

void ChatReplyReader::tool_events(std::vector<tools::ToolEvent>& events, std::vector<nlohmann::ordered_json>& deltas) {
  using Kind = tools::ToolEvent::Kind;
  for (auto& e : events) {
    if (e.kind == Kind::Content) {
      content_ += e.text;
      deltas.push_back({{"content", e.text}});
      continue;
    }
    // parallel_tool_calls false: only the first call counts; later ones are dropped.
    if (!parallel_ && e.index > 0) continue;
    const auto i = static_cast<std::size_t>(e.index);
    if (calls_.size() <= i) calls_.resize(i + 1);
    auto& call = calls_[i];
    switch (e.kind) {
      case Kind::CallStart:
        call.id = random_id(id_prefix_);
        call.name = e.text;
        deltas.push_back({{"tool_calls", nlohmann::ordered_json::array({{{"index", e.index},
                                                                          {"id", call.id},
                                                                          {"type", "function"},
                                                                          {"function", {{"name", e.text}, {"arguments", ""}}}}})}});
        break;
      case Kind::Arguments:
        call.arguments += e.text;
        deltas.push_back({{"tool_calls", nlohmann::ordered_json::array(
                                             {{{"index", e.index}, {"function", {{"arguments", e.text}}}}})}});
        break;
      case Kind::CallEnd: call.complete = true; break;
      case Kind::CallInvalid:
        // Streamed: the deltas already sent stand and the call's text follows as content. Whole: the call is
        // dropped from message() and its text is the content.
        content_ += e.text;
        deltas.push_back({{"content", e.text}});
        break;
      default: break;
    }
  }
  events.clear();
}

void ChatReplyReader::content_text(const std::string& text, std::vector<nlohmann::ordered_json>& deltas) {
  if (!parser_) {
    if (text.empty()) return;
    content_ += text;
    deltas.push_back({{"content", text}});
    return;
  }
  std::vector<tools::ToolEvent> events;
  parser_->feed(text, events);
  tool_events(events, deltas);
}

std::vector<nlohmann::ordered_json> ChatReplyReader::feed(const std::string& piece) {
  std::vector<nlohmann::ordered_json> deltas;
  if (!splitter_) {
    content_text(piece, deltas);
    return deltas;
  }
  std::vector<tools::ReasoningSplitter::Part> parts;
  splitter_->feed(piece, parts);
  for (const auto& p : parts) {
    if (p.reasoning) {
      reasoning_ += p.text;
      deltas.push_back({{"reasoning_content", p.text}, {"reasoning", p.text}});
    } else {
      content_text(p.text, deltas);
    }
  }
  return deltas;
}

std::vector<nlohmann::ordered_json> ChatReplyReader::finish() {
  std::vector<nlohmann::ordered_json> deltas;
  if (splitter_) {
    std::vector<tools::ReasoningSplitter::Part> parts;
    splitter_->finish(parts);
    for (const auto& p : parts) {
      if (p.reasoning) {
        reasoning_ += p.text;
        deltas.push_back({{"reasoning_content", p.text}, {"reasoning", p.text}});
      } else {
        content_text(p.text, deltas);
      }
    }
  }
  if (parser_) {
    std::vector<tools::ToolEvent> events;
    parser_->finish(events);
    tool_events(events, deltas);
  }
  return deltas;
}

std::vector<ChatReplyReader::Call> ChatReplyReader::calls() const {
  std::vector<Call> out;
  for (const auto& c : calls_)
    if (c.complete) out.push_back(c);
  return out;
}

nlohmann::ordered_json ChatReplyReader::message() const {
  const auto done = calls();
  nlohmann::ordered_json m = {{"role", "assistant"}};
  m["content"] = done.empty() || has_text() ? nlohmann::ordered_json(content_) : nlohmann::ordered_json(nullptr);
  if (!reasoning_.empty()) {
    m["reasoning_content"] = reasoning_;
    m["reasoning"] = reasoning_;
  }
  if (!done.empty()) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& c : done)
      list.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    m["tool_calls"] = std::move(list);
  }
  m["refusal"] = nullptr;
  return m;
}

std::string ChatReplyReader::finish_reason(FinishReason finish) const {
  if (finish == FinishReason::Stop && !calls().empty()) return "tool_calls";
  return openai_finish_reason(finish);
}

}  // namespace tf::server
