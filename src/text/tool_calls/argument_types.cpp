#include "text/tool_calls/argument_types.h"

#include <fmt/format.h>

#include <set>

namespace tf::tools {

namespace {

// The JSON types a schema allows: "type" as a string or a list, and the types of anyOf / oneOf branches.
void collect_types(const nlohmann::ordered_json& schema, std::set<std::string>& types, int depth = 0) {
  if (!schema.is_object() || depth > 8) return;
  if (const auto t = schema.find("type"); t != schema.end()) {
    if (t->is_string()) types.insert(t->get<std::string>());
    if (t->is_array())
      for (const auto& e : *t)
        if (e.is_string()) types.insert(e.get<std::string>());
  }
  for (const char* key : {"anyOf", "oneOf"})
    if (const auto b = schema.find(key); b != schema.end() && b->is_array())
      for (const auto& e : *b) collect_types(e, types, depth + 1);
  if (types.empty() && schema.contains("enum")) types.insert("string");
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

const nlohmann::ordered_json* parameter_schema(const nlohmann::ordered_json& parameters, const std::string& key) {
  if (!parameters.is_object()) return nullptr;
  const auto props = parameters.find("properties");
  if (props == parameters.end() || !props->is_object()) return nullptr;
  const auto p = props->find(key);
  return p == props->end() ? nullptr : &*p;
}

bool is_text_parameter(const nlohmann::ordered_json* schema) {
  if (!schema) return true;
  std::set<std::string> types;
  collect_types(*schema, types);
  // A nullable string is typed at its end: "None" or "null" may mean null there.
  return types.empty() || (types.size() == 1 && *types.begin() == "string");
}

nlohmann::ordered_json typed_argument(std::string_view text, const nlohmann::ordered_json* schema) {
  std::set<std::string> types;
  if (schema) collect_types(*schema, types);
  const auto t = trim(text);
  if (types.count("null") && (t == "null" || t == "None")) return nullptr;
  if (types.count("boolean")) {
    if (t == "true" || t == "True") return true;
    if (t == "false" || t == "False") return false;
  }
  const bool structured = types.count("integer") || types.count("number") || types.count("object") ||
                          types.count("array");
  if (structured) {
    const auto v = nlohmann::ordered_json::parse(t, nullptr, false);
    if ((v.is_number_integer() && (types.count("integer") || types.count("number"))) ||
        (v.is_number() && types.count("number")) || (v.is_object() && types.count("object")) ||
        (v.is_array() && types.count("array")))
      return v;
    // An integer written as 3.0 for an "integer" parameter.
    if (v.is_number_float() && types.count("integer")) {
      const double d = v.get<double>();
      if (d == static_cast<double>(static_cast<long long>(d))) return static_cast<long long>(d);
    }
  }
  return std::string(text);
}

std::string json_string_piece(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else out += c;
    }
  }
  return out;
}

}  // namespace tf::tools
