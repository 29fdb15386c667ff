#pragma once
// What every format's parser shares: the text received and not yet decided, the events, the call being read
// and its raw text. A format implements step(), which decides what it can at the read position and returns
// false when it needs more text; feed() and finish() run it until then. Because a step only decides when
// the text it needs is there (or the input ended), how the text was split cannot change what is decided.
#include <string>
#include <string_view>
#include <vector>

#include "text/tool_calls/tool_call_parser.h"

namespace tf::tools {

// Where the first of some markers starts in a text: `found` is the marker's index (-1: none); `at` is where it
// starts, or with none found, where a suffix that may still become a marker starts (text.size() if none).
struct MarkerMatch {
  int found = -1;
  std::size_t at = 0;
};
MarkerMatch find_marker(std::string_view text, const std::vector<std::string>& markers);

// How many bytes of JSON whitespace (space, tab, CR, LF) `text` starts with.
std::size_t leading_space(std::string_view text);

class ParserBase : public ToolCallParser {
 public:
  explicit ParserBase(std::vector<ToolSpec> tools) : tools_(std::move(tools)) {}
  void feed(std::string_view piece, std::vector<ToolEvent>& out) final;
  void finish(std::vector<ToolEvent>& out) final;

 protected:
  virtual bool step() = 0;

  std::string_view rest() const { return std::string_view(buf_).substr(pos_); }
  bool ended() const { return ended_; }
  void consume(std::size_t n);  // moves the read position; inside a call the bytes join its raw text

  // Plain text up to the first of `openers`: emits what cannot be part of an opener and returns the index of
  // the opener now at the read position (not consumed), or -1 when more text is needed. Whitespace right
  // after a call is the format's (between calls, before the end), not content: it is dropped.
  int content_until(const std::vector<std::string>& openers);
  // With the read position at a marker in `markers` or before more text is needed: the text before it. Returns
  // the marker's index with the text before it in `before` and the read position moved past both; -1 with
  // nothing consumed when it is not there yet; at the end of input, -2 with `before` the whole rest.
  int take_until(const std::vector<std::string>& markers, std::string& before);

  // The text at the read position starts with `word`: 0 yes, 1 it may (more text needed), -1 no.
  int starts_with_word(std::string_view word) const;

  void emit_content(std::string_view text);
  // The raw text of a possible call starts at the read position; `read` is text already consumed that belongs
  // to it (a block's opener), so that a call that breaks gives it back too.
  void begin_call(std::string_view read = {});
  // A declared tool (any name when none were declared); nullptr when unknown.
  const ToolSpec* find_tool(std::string_view name) const;
  bool start_call(std::string name);  // commits the call; false (nothing emitted) for an unknown name
  void emit_arguments(std::string_view text);
  void end_call();
  // The call cannot be read: before it started, its raw text is content; after, CallInvalid.
  void fail_call();
  bool in_call() const { return in_call_; }
  bool started() const { return started_; }

 private:
  std::vector<ToolSpec> tools_;
  ToolSpec any_tool_;
  std::string buf_;
  std::size_t pos_ = 0;
  bool ended_ = false;
  std::vector<ToolEvent>* out_ = nullptr;
  bool in_call_ = false;
  bool started_ = false;
  std::string raw_;
  int next_index_ = 0;
  bool after_call_ = false;
  void run();
  void push(ToolEvent::Kind kind, std::string_view text);
};

}  // namespace tf::tools
