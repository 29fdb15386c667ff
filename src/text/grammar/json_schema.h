#pragma once
// JSON schemas (the subset structured output supports) and json_object, compiled to grammars.
//
// Supported: "type" (one or a list), "enum", "const", "anyOf", "oneOf" (read as anyOf: the alternatives
// should not overlap), "allOf" of one schema, "$ref" to any JSON pointer in the document ("#/$defs/...",
// "#/definitions/...", "#" itself; recursion allowed), objects ("properties", "required",
// "additionalProperties": false, true or a schema), arrays ("items", "prefixItems", "minItems", "maxItems",
// "uniqueItems": false), strings ("minLength", "maxLength", "pattern", "format" of date, time, date-time, uuid,
// email), integers ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"), and annotations (title,
// description, default, examples, ...), which are ignored. Anything else is a GrammarError naming the keyword.
//
// What the output looks like: properties in the schema's order, the required ones always, the others when the
// model writes them; no property beyond "properties" unless additionalProperties is true or a schema (when it
// is absent and properties are given, none: the output still validates); whitespace between tokens of at most
// one space, or a newline and up to 24 spaces or tabs; numbers of at most 16 integer and 16 fraction digits
// and a 3-digit exponent. Every output the grammar allows validates against the schema.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "text/grammar/grammar.h"

namespace tf::grammar {

// `schema`: the schema document (an object, or true). Throws GrammarError (keyword set) when it uses what is
// not supported, or cannot be satisfied.
Grammar json_schema_grammar(const nlohmann::ordered_json& schema);

// Any JSON object (response_format json_object).
Grammar json_object_grammar();

// The same schema rules inside another grammar (a tool call's syntax around each function's arguments). $ref
// pointers resolve in `document`, which must outlive this. Each method throws GrammarError as above.
class SchemaCompiler;
class JsonSchemaRules {
 public:
  JsonSchemaRules(GrammarBuilder& b, const nlohmann::ordered_json& document);
  ~JsonSchemaRules();
  GrammarBuilder::Expr document();  // one value of the whole document (no whitespace around it)
  // One value of `schema`, a part of the document found at `path` (for messages).
  GrammarBuilder::Expr value(const nlohmann::ordered_json& schema, const std::string& path);
  GrammarBuilder::Expr any_object();
  GrammarBuilder::Expr whitespace() const;  // the whitespace allowed between JSON tokens

 private:
  std::unique_ptr<SchemaCompiler> c_;
};

}  // namespace tf::grammar
