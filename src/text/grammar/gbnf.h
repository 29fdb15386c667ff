#pragma once
// GBNF, llama.cpp's grammar notation, compiled to a Grammar (the `grammar` request field):
//
//   root  ::= "{" ws pair ("," ws pair)* "}"     # the rule named root is the whole text
//   pair  ::= [a-z]+ ":" [0-9]+
//   ws    ::= [ \t\n]*
//
// Literals "..." (escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH), classes [...] and [^...], "." (any
// character), rule names ([A-Za-z0-9_-]+), groups ( ), alternation |, the postfixes * + ? {m} {m,} {m,n}, and
// comments from # to the end of the line. A rule's alternatives may continue over lines. Text is UTF-8.
#include <string_view>

#include "text/grammar/grammar.h"

namespace tf::grammar {

// Throws GrammarError (a message naming the line) for a syntax error, an undefined rule, no root rule, or left
// recursion.
Grammar gbnf_grammar(std::string_view text);

}  // namespace tf::grammar
