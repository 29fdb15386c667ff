#include "text/tool_calls/reasoning_splitter.h"

#include "text/tool_calls/parser_base.h"

namespace tf::tools {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t trailing_space_start(std::string_view s) {
  std::size_t n = s.size();
  while (n > 0 && is_space(s[n - 1])) --n;
  return n;
}

}  // namespace

ReasoningMarkers detect_reasoning_markers(std::string_view t) {
  if (t.find("<|channel>") != std::string_view::npos) return {"<|channel>thought", "<channel|>"};
  return {};
}

bool prompt_opens_reasoning(std::string_view prompt, const ReasoningMarkers& markers) {
  const auto end = trailing_space_start(prompt);
  return end >= markers.open.size() && prompt.substr(end - markers.open.size(), markers.open.size()) == markers.open;
}

ReasoningSplitter::ReasoningSplitter(ReasoningMarkers markers, bool start_inside, std::vector<std::string> exits)
    : markers_(std::move(markers)), state_(start_inside ? State::Inside : State::Before) {
  ends_.push_back(markers_.close);
  for (auto& e : exits)
    if (!e.empty()) ends_.push_back(std::move(e));
}

void ReasoningSplitter::push(std::vector<Part>& out, bool reasoning, std::string_view text) {
  if (!text.empty()) out.push_back({reasoning, std::string(text)});
}

void ReasoningSplitter::feed(std::string_view piece, std::vector<Part>& out) {
  buf_.append(piece);
  run(out);
}

void ReasoningSplitter::finish(std::vector<Part>& out) {
  ended_ = true;
  run(out);
  buf_.clear();
}

void ReasoningSplitter::run(std::vector<Part>& out) {
  for (;;) {
    switch (state_) {
      case State::Before: {
        const auto space = leading_space(buf_);
        const std::string_view after = std::string_view(buf_).substr(space);
        const auto n = std::min(after.size(), markers_.open.size());
        const bool may_open = after.substr(0, n) == std::string_view(markers_.open).substr(0, n);
        if (may_open && n == markers_.open.size()) {
          buf_.erase(0, space + n);
          state_ = State::Inside;
          continue;
        }
        if (may_open && !ended_) return;  // blank so far, or the marker's start
        state_ = State::Content;
        continue;
      }
      case State::Inside: {
        if (!reasoning_started_) buf_.erase(0, leading_space(buf_));
        const auto m = find_marker(buf_, ends_);
        if (m.found < 0) {
          const auto upto = ended_ ? buf_.size() : m.at;
          const auto keep = ended_ ? trailing_space_start(buf_) : trailing_space_start(std::string_view(buf_).substr(0, upto));
          push(out, true, std::string_view(buf_).substr(0, keep));
          if (keep > 0) reasoning_started_ = true;
          buf_.erase(0, ended_ ? buf_.size() : keep);
          return;
        }
        push(out, true, std::string_view(buf_).substr(0, trailing_space_start(std::string_view(buf_).substr(0, m.at))));
        // The close marker is dropped; an exit (a tool call) stays for the content.
        buf_.erase(0, m.at + (m.found == 0 ? markers_.close.size() : 0));
        state_ = State::After;
        continue;
      }
      case State::After: {
        buf_.erase(0, leading_space(buf_));
        if (buf_.empty() && !ended_) return;
        state_ = State::Content;
        continue;
      }
      case State::Content:
        push(out, false, buf_);
        buf_.clear();
        return;
    }
  }
}

}  // namespace tf::tools
