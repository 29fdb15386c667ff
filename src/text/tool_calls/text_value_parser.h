#pragma once
// The formats that write each argument as KEY and VALUE text between markers (XML <parameter=KEY>, GLM
// <arg_key>/<arg_value>) build the JSON arguments here: "{", then per argument `"KEY": VALUE`, then "}".
// A text parameter (is_text_parameter) streams as a JSON string while it is generated; any other is typed
// per the schema (typed_argument) once its end marker is read.
#include <string>
#include <vector>

#include "text/tool_calls/parser_base.h"

namespace tf::tools {

class TextValueParser : public ParserBase {
 public:
  using ParserBase::ParserBase;

 protected:
  // After start_call(): remembers the tool's schema and sends "{".
  void begin_arguments(const std::string& tool_name);
  // Starts the value of `key`: sends the separator, the key and, for a text parameter, the opening quote.
  void begin_value(const std::string& key);
  enum class Value { More, Done, Failed };
  // Reads the value up to the first of `ends`; `ends[0]` (the value's own closer) is consumed, the others
  // (the next parameter, the function's end: a closer the model left out) are not. `trim_newline`: one
  // newline right after the start and one right before the end are the format's, not the value's.
  Value read_value(const std::vector<std::string>& ends, bool trim_newline);
  void end_arguments();  // sends "}"

 private:
  nlohmann::ordered_json parameters_;
  const nlohmann::ordered_json* schema_ = nullptr;
  bool text_ = true;
  bool first_key_ = true;
  bool at_start_ = true;  // no byte of the value read yet
  std::string typed_;     // a typed value's text so far
  void finish_value(std::string_view last);
};

}  // namespace tf::tools
