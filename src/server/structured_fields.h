#pragma once
// Structured output in requests: response_format (chat and completions), text.format (Responses), and the
// extension fields `grammar` (GBNF) and `regex`, each compiled to a grammar here (docs/structured-output.md).
// A schema, grammar or regex that cannot be compiled is a 400 naming the field and, for a schema, the keyword.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/json_fields.h"
#include "text/grammar/grammar.h"

namespace tf::server {

struct StructuredOutput {
  std::shared_ptr<const grammar::Grammar> grammar;  // null: free text
  std::string kind;                                  // "json_schema", "json_object", "grammar" or "regex"
  std::string param;                                 // the field it came from, for errors
};

// Chat and text completions: response_format {"type": "text" | "json_object" | "json_schema", "json_schema":
// {"name", "schema", "strict", "description"}}, or one of the extensions grammar and regex (at most one of all).
StructuredOutput parse_structured_output(const JsonFields& fields);

// Responses: text.format {"type": "text" | "json_object" | "json_schema", "name", "schema", "strict"}.
StructuredOutput parse_text_format(const nlohmann::ordered_json& format);

}  // namespace tf::server
