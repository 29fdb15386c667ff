#pragma once
// Python's string formatting and number parsing: str.format (through jinja2's sandboxed formatter),
// printf-style `%`, format(value, spec), int(str, base) and float(str).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "value.h"

namespace tf::jinja {

class Interpreter;

std::string str_format(Interpreter& in, std::string_view fmt, const CallArgs& args);  // fmt.format(*a, **kw)
std::string percent_format(Interpreter& in, const Value& fmt, const Value& args);     // fmt % args
std::string format_value(Interpreter& in, const Value& v, std::string_view spec);     // format(v, spec)

std::optional<std::int64_t> parse_py_int(std::string_view s, int base);  // int(s, base); nullopt: ValueError
std::optional<double> parse_py_float(std::string_view s);                // float(s); nullopt: ValueError

}  // namespace tf::jinja
