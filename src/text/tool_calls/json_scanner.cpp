#include "text/tool_calls/json_scanner.h"

namespace tf::tools {

namespace {
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
}  // namespace

JsonScanner::Status JsonScanner::after_value() {
  if (stack_.empty()) return status_ = Status::Done;
  state_ = State::CommaOrClose;
  return status_;
}

bool JsonScanner::number_byte(char c) {
  // A number's grammar as a small automaton; states that may end a number are 1, 2, 4 and 7.
  switch (number_state_) {
    case 0:  // after '-'
      if (c == '0') return number_state_ = 1, true;
      if (is_digit(c)) return number_state_ = 2, true;
      return fail(), false;
    case 1:
    case 2:
      if (number_state_ == 2 && is_digit(c)) return true;
      if (c == '.') return number_state_ = 3, true;
      if (c == 'e' || c == 'E') return number_state_ = 5, true;
      return false;
    case 3:
      if (is_digit(c)) return number_state_ = 4, true;
      return fail(), false;
    case 4:
      if (is_digit(c)) return true;
      if (c == 'e' || c == 'E') return number_state_ = 5, true;
      return false;
    case 5:
      if (c == '+' || c == '-') return number_state_ = 6, true;
      if (is_digit(c)) return number_state_ = 7, true;
      return fail(), false;
    case 6:
      if (is_digit(c)) return number_state_ = 7, true;
      return fail(), false;
    default:
      return is_digit(c);
  }
}

JsonScanner::Status JsonScanner::feed(char c) {
  if (status_ != Status::More) return status_;
  switch (state_) {
    case State::String:
      if (c == '"') {
        if (string_is_key_) {
          state_ = State::Colon;
          return status_;
        }
        return after_value();
      }
      if (c == '\\') state_ = State::Escape;
      else if (static_cast<unsigned char>(c) < 0x20) return fail();
      return status_;
    case State::Escape:
      if (c == 'u') {
        state_ = State::Unicode;
        unicode_left_ = 4;
        return status_;
      }
      if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
        state_ = State::String;
        return status_;
      }
      return fail();
    case State::Unicode:
      if (!is_hex(c)) return fail();
      if (--unicode_left_ == 0) state_ = State::String;
      return status_;
    case State::Literal:
      if (c != literal_.front()) return fail();
      literal_.erase(0, 1);
      if (literal_.empty()) return after_value();
      return status_;
    case State::Number:
      if (number_byte(c)) return status_;
      if (status_ == Status::Error) return status_;
      if (number_state_ == 0 || number_state_ == 3 || number_state_ == 5 || number_state_ == 6) return fail();
      if (after_value() == Status::Done) return status_;  // a top-level number ends before c
      return feed(c);                                     // c follows the number inside a container
    default:
      break;
  }
  if (is_space(c)) return status_;
  switch (state_) {
    case State::Value:
    case State::ValueOrClose:
      if (state_ == State::ValueOrClose && c == ']') {
        stack_.pop_back();
        return after_value();
      }
      if (object_only_ && stack_.empty() && c != '{') return fail();
      if (c == '{') {
        stack_.push_back('{');
        state_ = State::KeyOrClose;
      } else if (c == '[') {
        stack_.push_back('[');
        state_ = State::ValueOrClose;
      } else if (c == '"') {
        state_ = State::String;
        string_is_key_ = false;
      } else if (c == '-' || is_digit(c)) {
        state_ = State::Number;
        number_state_ = c == '-' ? 0 : c == '0' ? 1 : 2;
      } else if (c == 't' || c == 'f' || c == 'n') {
        state_ = State::Literal;
        literal_ = c == 't' ? "rue" : c == 'f' ? "alse" : "ull";
      } else {
        return fail();
      }
      if (stack_.size() > 512) return fail();  // nesting no tool needs; keeps the stack small
      return status_;
    case State::KeyOrClose:
    case State::Key:
      if (state_ == State::KeyOrClose && c == '}') {
        stack_.pop_back();
        return after_value();
      }
      if (c != '"') return fail();
      state_ = State::String;
      string_is_key_ = true;
      return status_;
    case State::Colon:
      if (c != ':') return fail();
      state_ = State::Value;
      return status_;
    case State::CommaOrClose:
      if (c == ',') {
        state_ = stack_.back() == '{' ? State::Key : State::Value;
        return status_;
      }
      if ((c == '}' && stack_.back() == '{') || (c == ']' && stack_.back() == '[')) {
        stack_.pop_back();
        return after_value();
      }
      return fail();
    default:
      return fail();
  }
}

}  // namespace tf::tools
