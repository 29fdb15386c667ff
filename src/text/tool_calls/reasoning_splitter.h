#pragma once
// Splits generated text into the model's reasoning and its answer: <think>...</think> (Qwen3, DeepSeek R1,
// GLM, Nemotron and most others) or a family's own markers (Gemma 4: <|channel>thought ... <channel|>).
// Incremental like the tool-call parsers: fed pieces split anywhere, it returns the same parts (merged) as
// when fed the whole text.
//  - A block opens only at the start of the reply (after whitespace): a later "<think>" is content.
//  - start_inside: the prompt already opened the block (a template that ends its generation prompt with
//    "<think>\n"), so the reply starts as reasoning.
//  - `exits` (the tool-call openers) end a block the model never closed: the call is read as a call, the
//    marker staying in the content for the tool-call parser.
//  - Whitespace around the reasoning, and between the block and the answer, is dropped.
#include <string>
#include <string_view>
#include <vector>

namespace tf::tools {

struct ReasoningMarkers {
  std::string open = "<think>";
  std::string close = "</think>";
};

// The markers a chat template's thinking uses: Gemma 4's channel when the template has it, else <think>.
ReasoningMarkers detect_reasoning_markers(std::string_view template_source);

// True when `prompt` (a rendered prompt) ends inside an open reasoning block: its last non-blank text is the
// open marker.
bool prompt_opens_reasoning(std::string_view prompt, const ReasoningMarkers& markers);

class ReasoningSplitter {
 public:
  struct Part {
    bool reasoning = false;
    std::string text;
    bool operator==(const Part&) const = default;
  };
  ReasoningSplitter(ReasoningMarkers markers, bool start_inside, std::vector<std::string> exits = {});
  void feed(std::string_view piece, std::vector<Part>& out);
  void finish(std::vector<Part>& out);
  bool in_reasoning() const { return state_ == State::Inside; }

 private:
  enum class State { Before, Inside, After, Content };
  ReasoningMarkers markers_;
  std::vector<std::string> ends_;  // close, then the exits
  State state_;
  bool reasoning_started_ = false;  // a non-blank byte of reasoning was sent
  std::string buf_;
  bool ended_ = false;
  void run(std::vector<Part>& out);
  static void push(std::vector<Part>& out, bool reasoning, std::string_view text);
};

}  // namespace tf::tools
