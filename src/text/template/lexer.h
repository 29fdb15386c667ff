#pragma once
// Tokenizer for jinja2 template source with transformers' settings: trim_blocks and lstrip_blocks on,
// default delimiters, no line statements, newlines normalized to "\n" and one trailing newline dropped.
// The whitespace rules follow jinja2's lexer regexes exactly (see lexer.cpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tf::jinja {

enum class Tok : std::uint8_t {
  Add, Sub, Div, FloorDiv, Mul, Mod, Pow, Tilde, LBracket, RBracket, LParen, RParen, LBrace, RBrace,
  Eq, Ne, Gt, Gteq, Lt, Lteq, Assign, Dot, Colon, Pipe, Comma, Semicolon,
  Name, String, Integer, Float, Data, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Eof,
};

struct Token {
  Tok type = Tok::Eof;
  std::string value;       // name, decoded string literal, template data, or the operator text
  std::int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

const char* describe(Tok t);
std::string describe(const Token& t);

// Throws TemplateError(Syntax) on lexical errors.
std::vector<Token> tokenize(std::string_view source);

}  // namespace tf::jinja
