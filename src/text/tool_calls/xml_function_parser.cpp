// Qwen3-Coder, Qwen3.5 and Nemotron 3: a call is XML-like text with the values as they are, one per line:
//   <tool_call>
//   <function=get_weather>
//   <parameter=city>
//   Paris
//   </parameter>
//   <parameter=days>
//   3
//   </parameter>
//   </function>
//   </tool_call>
// Values are text; the tool's schema types them (argument_types.h). A model that leaves out </parameter> or
// <tool_call> is still read.
#include "text/tool_calls/format_parsers.h"
#include "text/tool_calls/text_value_parser.h"

namespace tf::tools {

namespace {

const std::vector<std::string> kOpeners = {"<tool_call>", "<function="};
const std::string kFunction = "<function=";
const std::string kParameter = "<parameter=";
const std::string kFunctionEnd = "</function>";
const std::vector<std::string> kValueEnds = {"</parameter>", "<parameter=", "</function>"};
const std::vector<std::string> kAfterCall = {"</tool_call>", "<tool_call>", "<function="};
constexpr std::size_t kMaxName = 256;

class XmlFunctionParser final : public TextValueParser {
 public:
  using TextValueParser::TextValueParser;

 private:
  enum class State { Content, Function, Name, Parameters, Key, Value, Close };
  State state_ = State::Content;

  // The text at the read position starts with `word` (0), may still (1: more text needed), or does not (-1).
  // A name up to '>': false while it is incomplete; fails the call when it is not a plain name.
  bool read_name(std::string& name, bool& failed) {
    const auto r = rest();
    const auto end = r.find('>');
    const auto bad = r.find_first_of("\n<");
    failed = false;
    if (end == std::string_view::npos) {
      if (bad != std::string_view::npos || r.size() > kMaxName || ended()) failed = true;
      return false;
    }
    if (bad < end || end > kMaxName) {
      failed = true;
      return false;
    }
    name = std::string(r.substr(0, end));
    while (!name.empty() && name.back() == ' ') name.pop_back();
    consume(end + 1);
    return true;
  }

  bool fail() {
    fail_call();
    state_ = State::Content;
    return true;
  }

  bool step() override {
    switch (state_) {
      case State::Content: {
        const int found = content_until(kOpeners);
        if (found < 0) return false;
        begin_call();
        if (found == 0) consume(kOpeners[0].size());
        state_ = State::Function;
        return true;
      }
      case State::Function: {
        consume(leading_space(rest()));
        const int s = starts_with_word(kFunction);
        if (s == 1 || (rest().empty() && !ended())) return false;
        if (s < 0) return fail();
        consume(kFunction.size());
        state_ = State::Name;
        return true;
      }
      case State::Name: {
        std::string name;
        bool failed = false;
        if (!read_name(name, failed)) return failed ? fail() : false;
        if (!start_call(name)) return fail();
        begin_arguments(name);
        state_ = State::Parameters;
        return true;
      }
      case State::Parameters: {
        consume(leading_space(rest()));
        if (rest().empty() && !ended()) return false;
        const int p = starts_with_word(kParameter), f = starts_with_word(kFunctionEnd);
        if (p == 0) {
          consume(kParameter.size());
          state_ = State::Key;
          return true;
        }
        if (f == 0) {
          consume(kFunctionEnd.size());
          end_arguments();
          end_call();
          state_ = State::Close;
          return true;
        }
        if (p == 1 || f == 1) return false;
        return fail();
      }
      case State::Key: {
        std::string key;
        bool failed = false;
        if (!read_name(key, failed)) return failed ? fail() : false;
        begin_value(key);
        state_ = State::Value;
        return true;
      }
      case State::Value: {
        const auto r = read_value(kValueEnds, true);
        if (r == Value::More) return false;
        if (r == Value::Failed) {
          state_ = State::Content;
          return true;
        }
        state_ = State::Parameters;
        return true;
      }
      case State::Close: {
        // After </function>: the </tool_call> (and the whitespace before it) closes the block; a next call
        // may follow without it.
        const auto m = find_marker(rest(), kAfterCall);
        const auto space = leading_space(rest());
        if (m.found < 0) {
          if (!ended() && space == rest().size()) return false;
          if (!ended() && m.at == space && m.at < rest().size()) return false;  // a marker may be starting
          consume(space);
          state_ = State::Content;
          return true;
        }
        if (m.at != space) {  // other text first: it is content
          consume(space);
          state_ = State::Content;
          return true;
        }
        consume(space + (m.found == 0 ? kAfterCall[0].size() : 0));
        state_ = State::Content;
        return true;
      }
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_xml_function_parser(std::vector<ToolSpec> tools) {
  return std::make_unique<XmlFunctionParser>(std::move(tools));
}

}  // namespace tf::tools
