#pragma once
// Formats that write every argument as text (the XML formats, GLM) lose the JSON types; the tool's schema
// gives them back: `"days": 3` for an integer parameter, `"tags": ["a"]` for an array, and so on.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tf::tools {

// The schema of one parameter in a tool's "parameters" schema, or nullptr when it declares none.
const nlohmann::ordered_json* parameter_schema(const nlohmann::ordered_json& parameters, const std::string& key);

// True when the parameter's value is text as written: its schema allows only "string", or there is no schema
// for it. Such values are streamed as they are generated.
bool is_text_parameter(const nlohmann::ordered_json* schema);

// The value written as `text` typed per the schema: null ("null"/"None"), booleans ("true"/"True"...),
// integers, numbers, objects and arrays (JSON) where the schema allows them, in that order; else the text
// as a string.
nlohmann::ordered_json typed_argument(std::string_view text, const nlohmann::ordered_json* schema);

// `text` escaped for the inside of a JSON string literal, byte by byte (so pieces escape independently).
std::string json_string_piece(std::string_view text);

}  // namespace tf::tools
