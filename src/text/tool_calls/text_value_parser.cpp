#include "text/tool_calls/text_value_parser.h"

#include "text/tool_calls/argument_types.h"

namespace tf::tools {

void TextValueParser::begin_arguments(const std::string& tool_name) {
  const ToolSpec* tool = find_tool(tool_name);
  parameters_ = tool ? tool->parameters : nlohmann::ordered_json::object();
  first_key_ = true;
  emit_arguments("{");
}

void TextValueParser::begin_value(const std::string& key) {
  schema_ = parameter_schema(parameters_, key);
  text_ = is_text_parameter(schema_);
  at_start_ = true;
  typed_.clear();
  std::string head = first_key_ ? "\"" : ", \"";
  head += json_string_piece(key);
  head += text_ ? "\": \"" : "\": ";
  first_key_ = false;
  emit_arguments(head);
}

void TextValueParser::finish_value(std::string_view last) {
  if (text_) {
    emit_arguments(json_string_piece(last));
    emit_arguments("\"");
    return;
  }
  typed_.append(last);
  emit_arguments(typed_argument(typed_, schema_).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

TextValueParser::Value TextValueParser::read_value(const std::vector<std::string>& ends, bool trim_newline) {
  if (at_start_ && trim_newline) {
    if (rest().empty()) {
      if (!ended()) return Value::More;
    } else {
      if (rest().front() == '\n') consume(1);
      at_start_ = false;
    }
  }
  at_start_ = false;
  const auto m = find_marker(rest(), ends);
  if (m.found < 0) {
    if (ended()) {
      fail_call();
      return Value::Failed;
    }
    // Hold back a newline that may turn out to be the format's, before the end marker.
    std::size_t safe = m.at;
    if (trim_newline && safe > 0 && rest()[safe - 1] == '\n') --safe;
    const auto piece = rest().substr(0, safe);
    if (text_) emit_arguments(json_string_piece(piece));
    else typed_.append(piece);
    consume(safe);
    return Value::More;
  }
  auto value = rest().substr(0, m.at);
  if (trim_newline && !value.empty() && value.back() == '\n') value.remove_suffix(1);
  finish_value(value);
  consume(m.at + (m.found == 0 ? ends[0].size() : 0));
  return Value::Done;
}

void TextValueParser::end_arguments() { emit_arguments("}"); }

}  // namespace tf::tools
