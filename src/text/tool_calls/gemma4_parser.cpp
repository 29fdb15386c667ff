// Gemma 4: a call is <|tool_call>call:NAME{...}<tool_call|>, the arguments in Gemma's own notation: bare
// keys, strings between <|"|> marks, numbers, booleans and null as in JSON, nested {} and []:
//   <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>
// The arguments are rewritten to JSON as they arrive ({"city": "Paris", "days": 3} above), strings streamed.
#include "text/tool_calls/argument_types.h"
#include "text/tool_calls/format_parsers.h"
#include "text/tool_calls/parser_base.h"

namespace tf::tools {

namespace {

const std::vector<std::string> kOpen = {"<|tool_call>"};
const std::string kCall = "call:";
const std::string kQuote = "<|\"|>";
const std::vector<std::string> kQuotes = {kQuote};
const std::string kClose = "<tool_call|>";
constexpr std::size_t kMaxWord = 256;

class Gemma4Parser final : public ParserBase {
 public:
  using ParserBase::ParserBase;

 private:
  enum class State { Content, Call, Name, Key, Colon, Value, String, AfterValue, Close };
  State state_ = State::Content;
  std::string stack_;  // '{' / '[' of the containers open in the arguments
  bool key_string_ = false;
  bool list_opened_ = false;  // the value expected is a list's first: ']' may end it empty

  bool fail() {
    fail_call();
    stack_.clear();
    state_ = State::Content;
    return true;
  }

  // Bytes up to the first of `stops` (not consumed), at most kMaxWord: 1 read, 0 more needed, -1 failed.
  int read_word(std::string_view stops, std::string& word) {
    const auto r = rest();
    const auto end = r.find_first_of(stops);
    if (end == std::string_view::npos) return (ended() || r.size() > kMaxWord) ? -1 : 0;
    if (end > kMaxWord) return -1;
    word = std::string(r.substr(0, end));
    consume(end);
    return 1;
  }

  static bool is_json_scalar(const std::string& s) {
    if (s == "true" || s == "false" || s == "null") return true;
    const auto v = nlohmann::json::parse(s, nullptr, false);
    return v.is_number();
  }

  bool step() override {
    switch (state_) {
      case State::Content:
        if (content_until(kOpen) < 0) return false;
        begin_call();
        consume(kOpen[0].size());
        state_ = State::Call;
        return true;
      case State::Call: {
        const int s = starts_with_word(kCall);
        if (s == 1) return false;
        if (s < 0) return fail();
        consume(kCall.size());
        state_ = State::Name;
        return true;
      }
      case State::Name: {
        std::string name;
        const int r = read_word("{<\n", name);
        if (r == 0) return false;
        if (r < 0 || rest().front() != '{' || !start_call(name)) return fail();
        consume(1);
        emit_arguments("{");
        stack_ = "{";
        state_ = State::Key;
        return true;
      }
      case State::Key: {  // in an object: a key, or the object's end
        consume(leading_space(rest()));
        if (rest().empty()) return ended() ? fail() : false;
        if (rest().front() == '}') return close_container('}');
        const int q = starts_with_word(kQuote);
        if (q == 1) return false;
        if (q == 0) {
          consume(kQuote.size());
          emit_arguments("\"");
          key_string_ = true;
          state_ = State::String;
          return true;
        }
        std::string key;
        const int r = read_word(":{}[],<\"\n", key);
        if (r == 0) return false;
        while (!key.empty() && key.back() == ' ') key.pop_back();
        if (r < 0 || key.empty() || rest().front() != ':') return fail();
        emit_arguments("\"" + json_string_piece(key) + "\"");
        state_ = State::Colon;
        return true;
      }
      case State::Colon:
        consume(leading_space(rest()));
        if (rest().empty()) return ended() ? fail() : false;
        if (rest().front() != ':') return fail();
        consume(1);
        emit_arguments(": ");
        state_ = State::Value;
        return true;
      case State::Value: {
        consume(leading_space(rest()));
        if (rest().empty()) return ended() ? fail() : false;
        const char c = rest().front();
        const bool list_start = list_opened_;
        if (c == '{' || c == '[') {
          if (stack_.size() >= 64) return fail();
          consume(1);
          stack_ += c;
          list_opened_ = c == '[';
          emit_arguments(std::string(1, c));
          state_ = c == '{' ? State::Key : State::Value;
          return true;
        }
        if (c == ']' && list_start) {  // an empty list
          list_opened_ = false;
          return close_container(']');
        }
        const int q = starts_with_word(kQuote);
        if (q == 1) return false;
        if (q == 0) {
          consume(kQuote.size());
          emit_arguments("\"");
          key_string_ = false;
          list_opened_ = false;
          state_ = State::String;
          return true;
        }
        std::string word;
        const int r = read_word(",}]<\n", word);
        if (r == 0) return false;
        while (!word.empty() && word.back() == ' ') word.pop_back();
        if (r < 0 || word.empty()) return fail();
        list_opened_ = false;
        emit_arguments(is_json_scalar(word) ? word : "\"" + json_string_piece(word) + "\"");
        state_ = State::AfterValue;
        return true;
      }
      case State::String: {
        const auto m = find_marker(rest(), kQuotes);
        if (m.found < 0) {
          if (ended()) return fail();
          emit_arguments(json_string_piece(rest().substr(0, m.at)));
          consume(m.at);
          return false;
        }
        emit_arguments(json_string_piece(rest().substr(0, m.at)) + "\"");
        consume(m.at + kQuote.size());
        state_ = key_string_ ? State::Colon : State::AfterValue;
        return true;
      }
      case State::AfterValue: {
        consume(leading_space(rest()));
        if (rest().empty()) return ended() ? fail() : false;
        const char c = rest().front();
        if (c == ',') {
          consume(1);
          emit_arguments(", ");
          state_ = stack_.back() == '{' ? State::Key : State::Value;
          return true;
        }
        if (c == '}' || c == ']') return close_container(c);
        return fail();
      }
      case State::Close: {
        // The call is complete; <tool_call|> normally follows at once.
        const int s = starts_with_word(kClose);
        if (s == 1) return false;
        if (s == 0) consume(kClose.size());
        state_ = State::Content;
        return true;
      }
    }
    return false;
  }

  bool close_container(char c) {
    if (stack_.back() != (c == '}' ? '{' : '[')) return fail();
    consume(1);
    stack_.pop_back();
    emit_arguments(std::string(1, c));
    if (!stack_.empty()) {
      state_ = State::AfterValue;
      return true;
    }
    end_call();
    state_ = State::Close;
    return true;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_gemma4_parser(std::vector<ToolSpec> tools) {
  return std::make_unique<Gemma4Parser>(std::move(tools));
}

}  // namespace tf::tools
