// Llama 3.1 / 3.2 / 3.3 with JSON tool calling: the whole reply is the call, optionally after <|python_tag|>,
// several separated by ';':
//   {"name": "get_weather", "parameters": {"city": "Paris"}}
// A reply that does not start with '{' (after whitespace) is content, and so is one whose object is not a
// call of a declared tool: JSON the model answers with stays text.
#include "text/tool_calls/format_parsers.h"
#include "text/tool_calls/json_call_reader.h"

namespace tf::tools {

namespace {

const std::string kPythonTag = "<|python_tag|>";

class Llama3JsonParser final : public JsonCallParser {
 public:
  using JsonCallParser::JsonCallParser;

 private:
  enum class State { Start, Call, Separator, Content };
  State state_ = State::Start;

  bool step() override {
    switch (state_) {
      case State::Start: {  // a call only at the start of the reply
        const auto space = leading_space(rest());
        const auto after = rest().substr(space);
        if (after.empty() && !ended()) return false;
        const int tag = starts_with_word(std::string(rest().substr(0, space)) + kPythonTag);
        if (tag == 1) return false;
        if (after.empty() || (after.front() != '{' && tag != 0)) {
          state_ = State::Content;
          return true;
        }
        begin_call();
        consume(space + (tag == 0 ? kPythonTag.size() : 0));
        reset_call_object();
        state_ = State::Call;
        return true;
      }
      case State::Call: {
        if (!reading_object()) consume(leading_space(rest()));
        if (rest().empty() && !ended()) return false;
        const auto r = read_call_object();
        if (r == Read::More) return false;
        state_ = r == Read::Done ? State::Separator : State::Content;
        return true;
      }
      case State::Separator: {
        const auto space = leading_space(rest());
        if (space == rest().size() && !ended()) return false;
        if (space < rest().size() && rest()[space] == ';') {
          const auto next = leading_space(rest().substr(space + 1));
          if (space + 1 + next == rest().size() && !ended()) return false;  // ';' and then?
          if (space + 1 + next < rest().size() && rest()[space + 1 + next] == '{') {
            consume(space + 1 + next);
            begin_call();
            reset_call_object();
            state_ = State::Call;
            return true;
          }
        }
        consume(space);  // trailing whitespace (and what follows is content)
        state_ = State::Content;
        return true;
      }
      case State::Content:
        content_until({});
        return false;
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_llama3_json_parser(std::vector<ToolSpec> tools) {
  return std::make_unique<Llama3JsonParser>(std::move(tools));
}

}  // namespace tf::tools
