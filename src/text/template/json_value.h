#pragma once
// JSON input as Python values (what json.loads gives transformers), and Python's json.dumps for the
// tojson filter.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "value.h"

namespace tf::jinja {

class Interpreter;

Value from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  bool ensure_ascii = true;
  std::optional<std::string> indent;      // nullopt: compact (no newlines)
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
// json.dumps(value, ...); throws TemplateError (TypeError/ValueError) for values JSON cannot hold.
std::string json_dumps(Interpreter& in, const Value& v, const JsonDumpOptions& opts);

}  // namespace tf::jinja
