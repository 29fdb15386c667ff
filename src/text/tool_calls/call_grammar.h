#pragma once
// Tool calls held to their syntax and their schemas: the grammar of a reply's calls in one format, each
// function's arguments compiled by structured output's JSON-schema compiler (text/grammar/json_schema.h), so a
// call that closes has arguments that validate against its function's `parameters`.
//
// A forced call (tool_choice "required", a named function) holds the whole reply to this grammar; with
// tool_choice "auto" the reply is free until it writes one of the format's triggers, and the grammar reads the
// text from the trigger's first byte on (a lazy grammar, as llama.cpp's grammar triggers).
//
// What each format's arguments are held to (docs/tools-and-reasoning.md):
//  - hermes, llama3_json, nemotron, deepseek: the arguments are one JSON value of the schema;
//  - xml and glm (values written as text): the properties in the schema's order, the required ones always; a
//    string parameter is text that cannot contain the format's end markers (an enum or const: one of its
//    values), any other parameter is a JSON value of its schema (the parser types it);
//  - gemma4: the same, strings between <|"|> marks; a nested object or array is held to Gemma's notation only.
#include <string>
#include <vector>

#include "text/grammar/grammar.h"
#include "text/tool_calls/tool_call_parser.h"

namespace tf::tools {

// Text that starts a call when the reply writes it; `at_start`: only at the reply's start (after whitespace).
struct CallTrigger {
  std::string text;
  bool at_start = false;
};

// The calls of `tools` in `format`: up to 4 blanks, one call (several when `parallel`), up to 4 blanks, the end.
// A function whose parameters the compiler does not support gets any JSON object (any parameters) for its
// arguments, unless it is `strict`: then the GrammarError (naming the keyword) is thrown.
grammar::Grammar tool_call_grammar(ToolFormat format, const std::vector<ToolSpec>& tools, bool parallel);

// Where a call starts in `format`, for the lazy grammar.
std::vector<CallTrigger> call_triggers(ToolFormat format);

// The marker texts of every format: a tokenizer may spell them as special tokens, which a call's grammar may
// then write (structured output's vocabulary leaves special tokens out).
const std::vector<std::string>& tool_call_markers();

}  // namespace tf::tools
