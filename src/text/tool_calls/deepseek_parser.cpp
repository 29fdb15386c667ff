// DeepSeek V3 / R1 and V3.1 (full-width bars and ▁ are part of the markers):
//   V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//   V3/R1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//          ```json
//          {"city": "Paris"}
//          ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
// Which of the two follows <｜tool▁sep｜> is told by its next byte: '{' (V3.1) or the name (V3).
// (V3.2 and V4 write calls in DSML, which this parser does not read.)
#include "text/tool_calls/format_parsers.h"
#include "text/tool_calls/json_call_reader.h"

namespace tf::tools {

namespace {

const std::string kCallsBegin = "<｜tool▁calls▁begin｜>";
const std::string kCallsEnd = "<｜tool▁calls▁end｜>";
const std::string kCallBegin = "<｜tool▁call▁begin｜>";
const std::string kCallEnd = "<｜tool▁call▁end｜>";
const std::string kSep = "<｜tool▁sep｜>";
const std::vector<std::string> kOpeners = {kCallsBegin, kCallBegin};
const std::vector<std::string> kSepOnly = {kSep};
const std::vector<std::string> kFence = {"```"};
const std::vector<std::string> kCallEndOnly = {kCallEnd};
constexpr std::size_t kMaxName = 256;

class DeepSeekParser final : public JsonCallParser {
 public:
  using JsonCallParser::JsonCallParser;

 private:
  enum class State { Content, Block, Head, AfterSep, V3Name, Arguments, CallEnd };
  State state_ = State::Content;
  std::string head_;  // the text before <｜tool▁sep｜>
  // A block was opened and no call of it has begun: its opener belongs to the first call (given back with it
  // when that call breaks) or, when no call follows, to the content.
  bool block_opened_ = false;
  bool reading_arguments_ = false;  // the object's first byte was read (whitespace is then its own)

  bool fail() {
    fail_call();
    state_ = State::Content;
    return true;
  }

  bool begin() {
    begin_call(block_opened_ ? std::string_view(kCallsBegin) : std::string_view());
    block_opened_ = false;
    consume(kCallBegin.size());
    reset_call_object();
    state_ = State::Head;
    return true;
  }

  bool step() override {
    switch (state_) {
      case State::Content: {
        const int found = content_until(kOpeners);
        if (found < 0) return false;
        if (found == 1) return begin();
        consume(kCallsBegin.size());
        block_opened_ = true;
        state_ = State::Block;
        return true;
      }
      case State::Block: {  // between calls of a block
        consume(leading_space(rest()));
        if (rest().empty() && !ended()) return false;
        const int b = starts_with_word(kCallBegin), e = starts_with_word(kCallsEnd);
        if (b == 0) return begin();
        if (e == 0) consume(kCallsEnd.size());
        else if (b == 1 || e == 1) return false;
        else if (block_opened_) emit_content(kCallsBegin);  // no call in it: the opener was text
        block_opened_ = false;
        state_ = State::Content;
        return true;
      }
      case State::Head: {
        const auto m = find_marker(rest(), kSepOnly);
        if (m.found < 0) {
          if (ended() || rest().size() > kMaxName + kSep.size()) return fail();
          return false;
        }
        if (m.at > kMaxName) return fail();
        head_ = std::string(rest().substr(0, m.at));
        consume(m.at + kSep.size());
        state_ = State::AfterSep;
        return true;
      }
      case State::AfterSep: {
        const auto space = leading_space(rest());
        if (space == rest().size()) return ended() ? fail() : false;
        if (rest()[space] == '{') {  // V3.1: the head was the name
          consume(space);
          if (!start_call(head_)) return fail();
          state_ = State::Arguments;
          return true;
        }
        state_ = State::V3Name;
        return true;
      }
      case State::V3Name: {  // NAME, then ```json and the object
        const auto m = find_marker(rest(), kFence);
        if (m.found < 0) return (ended() || rest().size() > kMaxName) ? fail() : false;
        std::string name(rest().substr(0, m.at));
        while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
        const auto after = rest().substr(m.at + 3);
        if (after.size() < 4 && !ended()) return false;
        if (after.substr(0, 4) != "json" || !start_call(name)) return fail();
        consume(m.at + 3 + 4);
        state_ = State::Arguments;
        return true;
      }
      case State::Arguments: {
        if (!reading_arguments_) consume(leading_space(rest()));
        if (rest().empty() && !ended()) return false;
        reading_arguments_ = true;
        const auto r = read_bare_arguments();
        if (r == Read::More) return false;
        reading_arguments_ = false;
        if (r == Read::Failed) {
          state_ = State::Content;
          return true;
        }
        end_call();
        state_ = State::CallEnd;
        return true;
      }
      case State::CallEnd: {  // the closing fence (V3) and <｜tool▁call▁end｜>, dropped
        std::string between;
        if (take_until(kCallEndOnly, between) == -1) return false;
        state_ = State::Block;
        return true;
      }
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_deepseek_parser(std::vector<ToolSpec> tools) {
  return std::make_unique<DeepSeekParser>(std::move(tools));
}

}  // namespace tf::tools
