#pragma once
// Python's json module over nlohmann's JSON values, for encoders written in Python that we reproduce byte for
// byte: json.dumps (default separators ", " and ": ") and json.loads's reading of a text.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tf {

// The string literal json.dumps writes for `s` (quotes included), appended to `out`. With ensure_ascii,
// non-ASCII code points are \uXXXX escapes (surrogate pairs above U+FFFF); without it they are kept as UTF-8.
void append_py_json_string(std::string& out, std::string_view s, bool ensure_ascii);

// json.dumps(value, ensure_ascii=False): ", " and ": " separators, keys in their order, floats as repr(float)
// (NaN and Infinity as Python writes them).
std::string py_json_dumps(const nlohmann::ordered_json& value);

// json.loads(text): the value, or nullopt when Python would raise. Throws std::invalid_argument (its message
// says what) for texts Python reads but nlohmann's values cannot hold exactly: NaN / Infinity literals and
// integers past 64 bits.
std::optional<nlohmann::ordered_json> py_json_loads(std::string_view text);

}  // namespace tf
