// Nemotron Nano 2 and Llama-Nemotron: the calls of a turn as one JSON list inside <TOOLCALL>:
//   <TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": ...}]</TOOLCALL>
// (Nemotron 3 writes the XML format instead; detect_tool_format tells them apart by the template.)
#include "text/tool_calls/format_parsers.h"
#include "text/tool_calls/json_call_reader.h"

namespace tf::tools {

namespace {

const std::vector<std::string> kOpen = {"<TOOLCALL>"};
const std::vector<std::string> kClose = {"</TOOLCALL>"};

class NemotronParser final : public JsonCallParser {
 public:
  using JsonCallParser::JsonCallParser;

 private:
  enum class State { Content, List, Item, Separator, Close };
  State state_ = State::Content;

  bool step() override {
    switch (state_) {
      case State::Content:
        if (content_until(kOpen) < 0) return false;
        begin_call();
        consume(kOpen[0].size());
        state_ = State::List;
        return true;
      case State::List:
        consume(leading_space(rest()));
        if (rest().empty()) {
          if (!ended()) return false;
          fail_call();
          state_ = State::Content;
          return true;
        }
        if (rest().front() != '[') {
          fail_call();
          state_ = State::Content;
          return true;
        }
        consume(1);
        reset_call_object();
        state_ = State::Item;
        return true;
      case State::Item: {
        if (!reading_object()) consume(leading_space(rest()));
        if (rest().empty() && !ended()) return false;
        const auto r = read_call_object();
        if (r == Read::More) return false;
        state_ = r == Read::Done ? State::Separator : State::Content;
        return true;
      }
      case State::Separator:
        consume(leading_space(rest()));
        if (rest().empty() && !ended()) return false;
        if (!rest().empty() && rest().front() == ',') {
          consume(1);
          begin_call();
          reset_call_object();
          state_ = State::Item;
          return true;
        }
        state_ = State::Close;
        return true;
      case State::Close: {  // "]</TOOLCALL>"; anything else before the close is dropped with it
        std::string between;
        if (take_until(kClose, between) == -1) return false;
        state_ = State::Content;
        return true;
      }
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_nemotron_parser(std::vector<ToolSpec> tools) {
  return std::make_unique<NemotronParser>(std::move(tools));
}

}  // namespace tf::tools
