// DeepSeek-V3.2 / V4 DSML (encoding_dsv4.py; the full-width bars are part of the markers): a block of invokes,
// each parameter a value with its type told by `string`: "true", the text as it is; "false", JSON.
//
//   Checking.
//
//   <｜DSML｜tool_calls>
//   <｜DSML｜invoke name="get_weather">
//   <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
//   <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
//   </｜DSML｜invoke>
//   </｜DSML｜tool_calls>
//
// The arguments are built as the reference's decode_dsml_to_arguments builds them ("{", `"KEY": VALUE` joined by
// ", ", "}"; a text value as json.dumps writes it, a JSON value as written), so they are its bytes; a value
// marked JSON that is not is typed by the tool's schema instead (the reference would give broken JSON). The two
// newlines before the block are the format's (the reference's "\n\n<｜DSML｜tool_calls" start token), not content.
#include <set>

#include "text/tool_calls/argument_types.h"
#include "text/tool_calls/format_parsers.h"
#include "text/tool_calls/parser_base.h"

namespace tf::tools {

namespace {

const std::string kBlock = "<｜DSML｜tool_calls>";
const std::vector<std::string> kOpeners = {"\n\n" + kBlock, kBlock};
const std::string kBlockEnd = "</｜DSML｜tool_calls>";
const std::string kInvoke = "<｜DSML｜invoke name=\"";
const std::string kInvokeEnd = "</｜DSML｜invoke>";
const std::string kParameter = "<｜DSML｜parameter name=\"";
const std::vector<std::string> kParameterEnd = {"</｜DSML｜parameter>"};
const std::string kStringTrue = "true\">";
const std::string kStringFalse = "false\">";
constexpr std::size_t kMaxName = 256;

class DsmlParser final : public ParserBase {
 public:
  using ParserBase::ParserBase;

 private:
  enum class State { Content, Block, Name, Parameters, Key, Kind, Value };
  State state_ = State::Content;
  // Text read since the block opened and before its first call: given back as content when no call follows,
  // part of the first call's raw text when one does.
  std::string pending_;
  nlohmann::ordered_json parameters_;  // the tool's schema
  std::set<std::string> keys_;
  std::string key_;
  bool text_ = true;   // the value being read is string="true"
  std::string typed_;  // a JSON value's text so far

  bool fail() {
    fail_call();
    state_ = State::Content;
    return true;
  }

  // Text up to `end` (not consumed; no newline, at most kMaxName bytes): 1 read, 0 more needed, -1 failed.
  int read_short(const std::string& end, std::string& text) {
    const auto m = find_marker(rest(), {end});
    const auto bad = rest().substr(0, m.at).find('\n');
    if (bad != std::string_view::npos || m.at > kMaxName) return -1;
    if (m.found < 0) return (ended() || rest().size() > kMaxName + end.size()) ? -1 : 0;
    text = std::string(rest().substr(0, m.at));
    consume(m.at);
    return 1;
  }

  // Leaves the block (no call in it was read): what it consumed was text.
  bool not_a_block() {
    emit_content(pending_);
    pending_.clear();
    state_ = State::Content;
    return true;
  }

  bool step() override {
    switch (state_) {
      case State::Content: {
        const int found = content_until(kOpeners);
        if (found < 0) return false;
        pending_ = kOpeners[static_cast<std::size_t>(found)];
        consume(pending_.size());
        state_ = State::Block;
        return true;
      }
      case State::Block: {  // before a call, between calls, or at the block's end
        const auto space = leading_space(rest());
        if (space == rest().size() && !ended()) return false;
        const auto blank = rest().substr(0, space);
        const auto after = rest().substr(space);
        const auto starts = [&](const std::string& word) {
          const auto n = std::min(after.size(), word.size());
          if (after.substr(0, n) != std::string_view(word).substr(0, n)) return -1;
          return n < word.size() ? (ended() ? -1 : 1) : 0;
        };
        const int invoke = starts(kInvoke), end = starts(kBlockEnd);
        if (invoke == 0) {
          pending_ += blank;
          consume(space);
          begin_call(pending_);
          pending_.clear();
          consume(kInvoke.size());
          state_ = State::Name;
          return true;
        }
        if (end == 0 && pending_.empty()) {  // the end of a block whose calls were read
          consume(space + kBlockEnd.size());
          state_ = State::Content;
          return true;
        }
        if (invoke == 1 || end == 1) return false;
        if (!pending_.empty()) {
          pending_ += blank;
          consume(space);
          return not_a_block();
        }
        state_ = State::Content;  // the block was left unclosed: what follows is text
        return true;
      }
      case State::Name: {
        std::string name;
        const int r = read_short("\">", name);
        if (r == 0) return false;
        if (r < 0 || !start_call(name)) return fail();
        consume(2);
        const ToolSpec* tool = find_tool(name);
        parameters_ = tool ? tool->parameters : nlohmann::ordered_json::object();
        keys_.clear();
        emit_arguments("{");
        state_ = State::Parameters;
        return true;
      }
      case State::Parameters: {
        consume(leading_space(rest()));
        if (rest().empty() && !ended()) return false;
        const int p = starts_with_word(kParameter), e = starts_with_word(kInvokeEnd);
        if (p == 0) {
          consume(kParameter.size());
          state_ = State::Key;
          return true;
        }
        if (e == 0) {
          consume(kInvokeEnd.size());
          emit_arguments("}");
          end_call();
          state_ = State::Block;
          return true;
        }
        if (p == 1 || e == 1) return false;
        return fail();
      }
      case State::Key: {
        const int r = read_short("\" string=\"", key_);
        if (r == 0) return false;
        if (r < 0 || !keys_.insert(key_).second) return fail();  // the reference refuses a repeated name
        consume(10);
        state_ = State::Kind;
        return true;
      }
      case State::Kind: {
        const int t = starts_with_word(kStringTrue), f = starts_with_word(kStringFalse);
        if (t == 1 || f == 1) return false;
        if (t < 0 && f < 0) return fail();
        text_ = t == 0;
        consume(text_ ? kStringTrue.size() : kStringFalse.size());
        std::string head = keys_.size() == 1 ? "\"" : ", \"";
        head += json_string_piece(key_);
        head += text_ ? "\": \"" : "\": ";
        emit_arguments(head);
        typed_.clear();
        state_ = State::Value;
        return true;
      }
      case State::Value: {
        const auto m = find_marker(rest(), kParameterEnd);
        if (m.found < 0) {
          if (ended()) return fail();
          const auto piece = rest().substr(0, m.at);
          if (text_)
            emit_arguments(json_string_piece(piece));
          else
            typed_.append(piece);
          consume(m.at);
          return false;
        }
        const auto last = rest().substr(0, m.at);
        if (text_) {
          emit_arguments(json_string_piece(last));
          emit_arguments("\"");
        } else {
          typed_.append(last);
          if (nlohmann::ordered_json::accept(typed_))
            emit_arguments(typed_);
          else
            emit_arguments(typed_argument(typed_, parameter_schema(parameters_, key_))
                               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        }
        consume(m.at + kParameterEnd[0].size());
        state_ = State::Parameters;
        return true;
      }
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_dsml_parser(std::vector<ToolSpec> tools) {
  return std::make_unique<DsmlParser>(std::move(tools));
}

}  // namespace tf::tools
