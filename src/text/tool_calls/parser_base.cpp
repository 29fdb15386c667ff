#include "text/tool_calls/parser_base.h"

namespace tf::tools {

MarkerMatch find_marker(std::string_view text, const std::vector<std::string>& markers) {
  MarkerMatch m{-1, text.size()};
  for (std::size_t i = 0; i < markers.size(); ++i) {
    const auto at = text.find(markers[i]);
    if (at != std::string_view::npos && (m.found < 0 || at < m.at)) m = {static_cast<int>(i), at};
  }
  if (m.found >= 0) return m;
  // No whole marker: hold back the longest tail that a marker starts with.
  for (const auto& marker : markers)
    for (std::size_t len = std::min(marker.size() - 1, text.size()); len > 0; --len)
      if (text.substr(text.size() - len) == std::string_view(marker).substr(0, len)) {
        m.at = std::min(m.at, text.size() - len);
        break;
      }
  return m;
}

std::size_t leading_space(std::string_view text) {
  std::size_t n = 0;
  while (n < text.size() && (text[n] == ' ' || text[n] == '\t' || text[n] == '\n' || text[n] == '\r')) ++n;
  return n;
}

void ParserBase::feed(std::string_view piece, std::vector<ToolEvent>& out) {
  buf_.append(piece);
  out_ = &out;
  run();
}

void ParserBase::finish(std::vector<ToolEvent>& out) {
  out_ = &out;
  ended_ = true;
  run();
  // Every step at the end of input consumes or decides; what a format left is content.
  if (in_call_) fail_call();
  if (pos_ < buf_.size()) emit_content(rest());
  buf_.clear();
  pos_ = 0;
}

void ParserBase::run() {
  while (step()) {
  }
  buf_.erase(0, pos_);
  pos_ = 0;
}

void ParserBase::consume(std::size_t n) {
  if (in_call_) raw_.append(buf_, pos_, n);
  pos_ += n;
}

void ParserBase::push(ToolEvent::Kind kind, std::string_view text) {
  if (kind == ToolEvent::Kind::Content && text.empty()) return;
  out_->push_back({kind, kind == ToolEvent::Kind::Content ? -1 : next_index_ - 1, std::string(text)});
}

void ParserBase::emit_content(std::string_view text) { push(ToolEvent::Kind::Content, text); }

int ParserBase::content_until(const std::vector<std::string>& openers) {
  if (after_call_) {
    pos_ += leading_space(rest());
    if (rest().empty()) return -1;
    after_call_ = false;
  }
  const auto m = find_marker(rest(), openers);
  const std::size_t n = m.found >= 0 || !ended_ ? m.at : rest().size();
  emit_content(rest().substr(0, n));
  pos_ += n;
  return m.found;
}

int ParserBase::take_until(const std::vector<std::string>& markers, std::string& before) {
  const auto m = find_marker(rest(), markers);
  if (m.found < 0) {
    if (!ended_) return -1;
    before = std::string(rest());
    consume(before.size());
    return -2;
  }
  before = std::string(rest().substr(0, m.at));
  consume(m.at + markers[static_cast<std::size_t>(m.found)].size());
  return m.found;
}

int ParserBase::starts_with_word(std::string_view word) const {
  const auto r = rest();
  const auto n = std::min(r.size(), word.size());
  if (r.substr(0, n) != word.substr(0, n)) return -1;
  if (n < word.size()) return ended_ ? -1 : 1;
  return 0;
}

void ParserBase::begin_call(std::string_view read) {
  in_call_ = true;
  started_ = false;
  raw_.assign(read);
}

const ToolSpec* ParserBase::find_tool(std::string_view name) const {
  if (tools_.empty()) return &any_tool_;
  for (const auto& t : tools_)
    if (t.name == name) return &t;
  return nullptr;
}

bool ParserBase::start_call(std::string name) {
  if (name.empty() || !find_tool(name)) return false;
  started_ = true;
  ++next_index_;
  push(ToolEvent::Kind::CallStart, name);
  return true;
}

void ParserBase::emit_arguments(std::string_view text) {
  if (!text.empty()) push(ToolEvent::Kind::Arguments, text);
}

void ParserBase::end_call() {
  push(ToolEvent::Kind::CallEnd, "");
  after_call_ = true;
  in_call_ = started_ = false;
  raw_.clear();
}

void ParserBase::fail_call() {
  if (started_) push(ToolEvent::Kind::CallInvalid, raw_);
  else emit_content(raw_);
  in_call_ = started_ = false;
  raw_.clear();
}

}  // namespace tf::tools
