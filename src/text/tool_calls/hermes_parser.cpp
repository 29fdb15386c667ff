// Hermes / Qwen2.5 / Qwen3: each call is a JSON object inside <tool_call>...</tool_call>, with newlines
// around the object:
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
#include "text/tool_calls/format_parsers.h"
#include "text/tool_calls/json_call_reader.h"

namespace tf::tools {

namespace {

const std::vector<std::string> kOpen = {"<tool_call>"};
const std::vector<std::string> kCloseOrOpen = {"</tool_call>", "<tool_call>"};

class HermesParser final : public JsonCallParser {
 public:
  using JsonCallParser::JsonCallParser;

 private:
  enum class State { Content, Object, Close };
  State state_ = State::Content;

  bool step() override {
    switch (state_) {
      case State::Content:
        if (content_until(kOpen) < 0) return false;
        begin_call();
        consume(kOpen[0].size());
        reset_call_object();
        state_ = State::Object;
        return true;
      case State::Object: {
        if (!reading_object()) consume(leading_space(rest()));
        if (rest().empty() && !ended()) return false;
        const auto r = read_call_object();
        if (r == Read::More) return false;
        state_ = r == Read::Done ? State::Close : State::Content;
        return true;
      }
      case State::Close: {
        // Whatever stands between the object and </tool_call> (normally a newline) is dropped with it; a
        // next <tool_call> without the close starts the next call.
        const auto m = find_marker(rest(), kCloseOrOpen);
        if (m.found < 0 && !ended()) {
          consume(m.at);
          return false;
        }
        consume(m.found == 0 ? m.at + kCloseOrOpen[0].size() : m.found == 1 ? m.at : rest().size());
        state_ = State::Content;
        return true;
      }
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_hermes_parser(std::vector<ToolSpec> tools) {
  return std::make_unique<HermesParser>(std::move(tools));
}

}  // namespace tf::tools
