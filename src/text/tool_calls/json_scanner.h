#pragma once
// An incremental JSON syntax check, one byte at a time: it says when a value is complete and at which byte
// the text stops being JSON, without building anything. The streaming parsers forward argument text while
// this says it is still JSON, and know where an arguments object ends without waiting for what follows.
#include <cstdint>
#include <string>
#include <vector>

namespace tf::tools {

class JsonScanner {
 public:
  enum class Status { More, Done, Error };
  // object_only: the value must be an object (tool arguments are).
  explicit JsonScanner(bool object_only = true) : object_only_(object_only) {}
  // The next byte. After Done or Error every further byte returns the same status. A number at the top level
  // is complete only at the byte after it, which is then not part of it: use an object_only scanner.
  Status feed(char c);
  Status status() const { return status_; }
  int depth() const { return static_cast<int>(stack_.size()); }
  // Inside an object key's string (after its opening quote, before its closing one).
  bool in_key() const { return (state_ == State::String || state_ == State::Escape || state_ == State::Unicode) && string_is_key_; }

 private:
  enum class State : std::uint8_t {
    Value,       // a value is expected (whitespace allowed)
    KeyOrClose,  // after '{'
    Key,         // after ',' in an object
    Colon,
    CommaOrClose,
    ValueOrClose,  // after '['
    String,
    Escape,
    Unicode,
    Number,
    Literal,
  };
  Status after_value();
  Status fail() { return status_ = Status::Error; }
  bool number_byte(char c);  // false: the number ended before c (or c is invalid, then fail)

  bool object_only_;
  Status status_ = Status::More;
  State state_ = State::Value;
  bool string_is_key_ = false;
  int unicode_left_ = 0;
  std::string literal_;  // the rest of true/false/null still expected
  // Number: 0 sign seen, 1 int zero, 2 int digits, 3 dot, 4 frac digits, 5 'e', 6 exp sign, 7 exp digits.
  int number_state_ = 0;
  std::vector<char> stack_;  // '{' or '['
};

}  // namespace tf::tools
