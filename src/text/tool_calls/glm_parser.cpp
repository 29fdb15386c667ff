// GLM-4.5 / 4.6 / 4.7: the name right after <tool_call>, then key and value pairs; GLM-4.5 puts newlines
// between the parts, GLM-4.7 none:
//   <tool_call>get_weather
//   <arg_key>city</arg_key>
//   <arg_value>Beijing</arg_value>
//   </tool_call>
// Values are text exactly as written (the template writes non-strings as JSON); the schema types them.
#include "text/tool_calls/format_parsers.h"
#include "text/tool_calls/text_value_parser.h"

namespace tf::tools {

namespace {

const std::vector<std::string> kOpen = {"<tool_call>"};
const std::vector<std::string> kNameEnds = {"\n", "<arg_key>", "</tool_call>"};
const std::string kKey = "<arg_key>";
const std::vector<std::string> kKeyEnd = {"</arg_key>"};
const std::string kValue = "<arg_value>";
const std::vector<std::string> kValueEnd = {"</arg_value>"};
const std::string kClose = "</tool_call>";
constexpr std::size_t kMaxName = 256;

class GlmParser final : public TextValueParser {
 public:
  using TextValueParser::TextValueParser;

 private:
  enum class State { Content, Name, Arguments, Key, BeforeValue, Value };
  State state_ = State::Content;

  bool fail() {
    fail_call();
    state_ = State::Content;
    return true;
  }

  // Text up to the first of `ends` (not consumed), at most kMaxName bytes: 1 read, 0 more needed, -1 failed.
  int read_short(const std::vector<std::string>& ends, std::string& text) {
    const auto m = find_marker(rest(), ends);
    if (m.found < 0) return (ended() || rest().size() > kMaxName) ? -1 : 0;
    if (m.at > kMaxName) return -1;
    text = std::string(rest().substr(0, m.at));
    consume(m.at);
    return 1;
  }

  bool step() override {
    switch (state_) {
      case State::Content:
        if (content_until(kOpen) < 0) return false;
        begin_call();
        consume(kOpen[0].size());
        state_ = State::Name;
        return true;
      case State::Name: {
        std::string name;
        const int r = read_short(kNameEnds, name);
        if (r == 0) return false;
        while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
        while (!name.empty() && name.front() == ' ') name.erase(0, 1);
        if (r < 0 || !start_call(name)) return fail();
        begin_arguments(name);
        state_ = State::Arguments;
        return true;
      }
      case State::Arguments: {
        consume(leading_space(rest()));
        if (rest().empty() && !ended()) return false;
        const int k = starts_with_word(kKey), c = starts_with_word(kClose);
        if (k == 0) {
          consume(kKey.size());
          state_ = State::Key;
          return true;
        }
        if (c == 0) {
          consume(kClose.size());
          end_arguments();
          end_call();
          state_ = State::Content;
          return true;
        }
        if (k == 1 || c == 1) return false;
        return fail();
      }
      case State::Key: {
        std::string key;
        const int r = read_short(kKeyEnd, key);
        if (r == 0) return false;
        if (r < 0) return fail();
        consume(kKeyEnd[0].size());
        begin_value(key);
        state_ = State::BeforeValue;
        return true;
      }
      case State::BeforeValue: {
        consume(leading_space(rest()));
        const int v = starts_with_word(kValue);
        if (v == 1 || (rest().empty() && !ended())) return false;
        if (v < 0) return fail();
        consume(kValue.size());
        state_ = State::Value;
        return true;
      }
      case State::Value: {
        const auto r = read_value(kValueEnd, false);
        if (r == Value::More) return false;
        state_ = r == Value::Failed ? State::Content : State::Arguments;
        return true;
      }
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_glm_parser(std::vector<ToolSpec> tools) {
  return std::make_unique<GlmParser>(std::move(tools));
}

}  // namespace tf::tools
