#pragma once
// Regular expressions compiled to grammar expressions: the `regex` request field (the whole reply matches) and
// JSON Schema's "pattern" and "format" (inside a JSON string, where a quote, a backslash and control characters
// are written as escapes).
//
// The syntax is ECMAScript's, less what a grammar cannot express: literals; "."; classes "[...]" and "[^...]"
// with ranges and the escapes \d \D \w \W \s \S; groups "(...)", "(?:...)", "(?<name>...)"; alternation "|";
// the quantifiers *, +, ?, {n}, {n,}, {n,m} (a lazy "?" after one changes nothing here); escapes \n \r \t \f
// \v \0 \xHH \uHHHH \u{H...} and escaped punctuation; "^" at the start and "$" at the end. Backreferences,
// lookaround, \b and anchors elsewhere are a GrammarError.
#include <string_view>

#include "text/grammar/grammar.h"

namespace tf::grammar {

enum class RegexMode {
  Raw,         // the text itself
  JsonString,  // the text as the content of a JSON string literal (escapes where JSON needs them)
};

// An expression matching exactly the texts the regex matches in full.
GrammarBuilder::Expr regex_expr(GrammarBuilder& b, std::string_view regex, RegexMode mode);

// JSON Schema's "pattern" searches: unless anchored by ^ (or $), any text may come before (or after) a match.
GrammarBuilder::Expr pattern_expr(GrammarBuilder& b, std::string_view pattern);

// A grammar whose texts are the regex's full matches.
Grammar regex_grammar(std::string_view regex);

}  // namespace tf::grammar
