#include "server/structured_fields.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "text/grammar/gbnf.h"
#include "text/grammar/json_schema.h"
#include "text/grammar/regex_grammar.h"

namespace tf::server {

namespace {

template <typename Compile>
StructuredOutput compiled(const std::string& kind, const std::string& param, Compile compile) {
  try {
    return {std::make_shared<const grammar::Grammar>(compile()), kind, param};
  } catch (const grammar::GrammarError& e) {
    throw invalid_request(fmt::format("Invalid '{}': {}.", param, e.what()), param,
                          kind == "json_schema" && !e.keyword().empty() ? "unsupported_schema_keyword" : "invalid_value");
  }
}

// `schema_required`: Responses' text.format needs it; chat's json_schema defaults to any JSON value.
StructuredOutput schema_output(const JsonFields& f, bool schema_required) {
  f.string("name");
  f.string("description");
  f.boolean("strict");  // the schema is always enforced exactly; strict only has to be a boolean
  const auto* schema = f.get("schema");
  if (!schema && schema_required)
    throw invalid_request(fmt::format("Missing required parameter: '{}'.", f.param("schema")), f.param("schema"));
  if (!schema)
    return compiled("json_schema", f.param("schema"), [] { return grammar::json_schema_grammar(true); });
  if (!schema->is_object() && !schema->is_boolean())
    throw invalid_request(fmt::format("Invalid type for '{}': expected an object, but got {} instead.",
                                      f.param("schema"), json_type_name(*schema)),
                          f.param("schema"), "invalid_type");
  return compiled("json_schema", f.param("schema"), [&] { return grammar::json_schema_grammar(*schema); });
}

StructuredOutput format_output(const nlohmann::ordered_json& format, const std::string& param, bool flat) {
  const JsonFields f(format, param + ".");
  const auto type = f.string("type");
  if (!type) throw invalid_request(fmt::format("Missing required parameter: '{}.type'.", param), param + ".type");
  if (*type == "text") return {};
  if (*type == "json_object") {
    // llama.cpp's extension: json_object with a schema is that schema.
    if (const auto* schema = f.get("schema")) {
      if (!schema->is_object() && !schema->is_boolean())
        throw invalid_request(fmt::format("Invalid type for '{}': expected an object, but got {} instead.",
                                          f.param("schema"), json_type_name(*schema)),
                              f.param("schema"), "invalid_type");
      return compiled("json_schema", f.param("schema"), [&] { return grammar::json_schema_grammar(*schema); });
    }
    return compiled("json_object", param, [] { return grammar::json_object_grammar(); });
  }
  if (*type == "json_schema") {
    if (flat) return schema_output(f, true);
    const auto* js = f.object("json_schema");
    if (!js)
      throw invalid_request(fmt::format("Missing required parameter: '{}.json_schema'.", param), param + ".json_schema");
    return schema_output(JsonFields(*js, param + ".json_schema."), false);
  }
  throw invalid_request(fmt::format("Invalid value for '{}.type': '{}'. Supported values are 'text', 'json_object' "
                                    "and 'json_schema'.",
                                    param, *type),
                        param + ".type", "invalid_value");
}

}  // namespace

StructuredOutput parse_structured_output(const JsonFields& f) {
  StructuredOutput out;
  int given = 0;
  if (const auto* rf = f.object("response_format")) {
    out = format_output(*rf, f.param("response_format"), false);
    given += out.grammar ? 1 : 0;
  }
  // llama.cpp's top-level json_schema: the reply held to that schema.
  if (const auto* schema = f.get("json_schema")) {
    if (!schema->is_object() && !schema->is_boolean())
      throw invalid_request(fmt::format("Invalid type for '{}': expected an object, but got {} instead.",
                                        f.param("json_schema"), json_type_name(*schema)),
                            f.param("json_schema"), "invalid_type");
    out = compiled("json_schema", f.param("json_schema"), [&] { return grammar::json_schema_grammar(*schema); });
    ++given;
  }
  if (const auto g = f.string("grammar")) {
    out = compiled("grammar", f.param("grammar"), [&] { return grammar::gbnf_grammar(*g); });
    ++given;
  }
  if (const auto r = f.string("regex")) {
    out = compiled("regex", f.param("regex"), [&] { return grammar::regex_grammar(*r); });
    ++given;
  }
  if (given > 1)
    throw invalid_request(
        "Invalid request: set at most one of 'response_format' (other than text), 'json_schema', "
        "'grammar' and 'regex'.",
        f.param("response_format"), "invalid_value");
  return out;
}

StructuredOutput parse_text_format(const nlohmann::ordered_json& format) { return format_output(format, "text.format", true); }

}  // namespace tf::server
