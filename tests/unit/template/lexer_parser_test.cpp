// The lexer and parser: whitespace control exactly as jinja2 with trim_blocks + lstrip_blocks, and the
// compile-time errors jinja2 raises.
#include <gtest/gtest.h>

#include "test_util.h"
#include "text/template/lexer.h"

namespace tf {
namespace {

using test::render;
using test::render_error;

TEST(TemplateLexer, TokenizesTagsAndData) {
  const auto toks = jinja::tokenize("a{{ x|f(1, 'y') }}b{% if z %}");
  std::vector<jinja::Tok> types;
  for (const auto& t : toks) types.push_back(t.type);
  using jinja::Tok;
  const std::vector<Tok> expected = {Tok::Data, Tok::VariableBegin, Tok::Name, Tok::Pipe, Tok::Name, Tok::LParen,
                                     Tok::Integer, Tok::Comma, Tok::String, Tok::RParen, Tok::VariableEnd, Tok::Data,
                                     Tok::BlockBegin, Tok::Name, Tok::Name, Tok::BlockEnd, Tok::Eof};
  EXPECT_EQ(types, expected);
  EXPECT_EQ(toks[8].value, "y");
  EXPECT_EQ(toks[6].int_value, 1);
}

TEST(TemplateLexer, StringLiteralEscapesAsPythonUnicodeEscape) {
  const auto toks = jinja::tokenize(R"({{ 'a\n\t\x41\u00e9\101\q"\'' }})");
  ASSERT_EQ(toks[1].type, jinja::Tok::String);
  EXPECT_EQ(toks[1].value, "a\n\tA\xC3\xA9" "A\\q\"'");
}

TEST(TemplateLexer, NumbersFollowJinjaRegexes) {
  EXPECT_EQ(render("{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 2.50 }}"), "1000 31 15 5 1500.0 2.5");
}

TEST(TemplateWhitespace, TrimBlocksRemovesOneNewlineAfterABlockTag) {
  EXPECT_EQ(render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
  EXPECT_EQ(render("{% if true %}\n\nx{% endif %}"), "\nx");
  // not after a variable tag
  EXPECT_EQ(render("{{ 'a' }}\nb"), "a\nb");
  // comments trim too
  EXPECT_EQ(render("{# c #}\nx"), "x");
}

TEST(TemplateWhitespace, LstripBlocksStripsIndentationBeforeBlockTagsOnly) {
  EXPECT_EQ(render("  {% if true %}x{% endif %}"), "x");
  EXPECT_EQ(render("a\n    {% if true %}x\n    {% endif %}b"), "a\nx\nb");
  EXPECT_EQ(render("  {{ 'v' }}"), "  v");            // not before a variable tag
  EXPECT_EQ(render("a  {% if true %}x{% endif %}"), "a  x");  // not after other text on the line
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");  // + keeps it
}

TEST(TemplateWhitespace, MinusStripsAllWhitespaceOnThatSide) {
  EXPECT_EQ(render("a \n\t {{- 'b' -}} \n c"), "abc");
  EXPECT_EQ(render("a\n{%- if true -%}\n  b  \n{%- endif -%}\n\nc"), "abc");
  EXPECT_EQ(render("x {#- c -#} y"), "xy");
}

TEST(TemplateWhitespace, NewlinesNormalizedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(render("a\r\nb\rc\n"), "a\nb\nc");
  EXPECT_EQ(render("a\n\n"), "a\n");
  EXPECT_EQ(render(""), "");
}

TEST(TemplateWhitespace, RawBlocksAreText) {
  EXPECT_EQ(render("{% raw %}{{ x }}{% if %}{% endraw %}"), "{{ x }}{% if %}");
  EXPECT_EQ(render("{% raw -%}  a  {%- endraw %}"), "a");
}

TEST(TemplateParser, SyntaxErrorsAreTemplateErrorsWithALine) {
  const std::vector<std::string> bad = {"{% if x %}", "{% for %}{% endfor %}", "{{ 1 + }}", "{% endif %}",
                                        "{{ 'unterminated }}", "{% frobnicate %}", "{{ (1, 2 }}", "{{ a b }}",
                                        "{% macro m(a=1, b) %}{% endmacro %}", "{{ x is defined is defined }}",
                                        "{% set x = 1 %}{% endset %}", "{# open comment", "{% raw %}no end"};
  for (const auto& src : bad) {
    const TemplateError e = render_error(src);
    EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax) << src << ": " << e.what();
    EXPECT_GE(e.line(), 1) << src;
  }
  EXPECT_EQ(render_error("a\nb\n{% if %}").line(), 3);
}

TEST(TemplateParser, UnknownFilterFailsAtCompileTimeUnlessInsideAConditional) {
  EXPECT_EQ(render_error("{{ x|nosuch }}").kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(render_error("{{ x is nosuch }}").kind(), TemplateError::Kind::Syntax);
  // inside {% if %} or a conditional expression jinja2 defers the error to the call
  EXPECT_EQ(render("{% if false %}{{ x|nosuch }}{% endif %}ok"), "ok");
  EXPECT_EQ(render("{{ 'b' if true else x|nosuch }}"), "b");
  const TemplateError e = render_error("{% if true %}{{ 'x'|nosuch }}{% endif %}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Runtime);
  EXPECT_NE(std::string(e.what()).find("No filter named 'nosuch'"), std::string::npos);
  // but not inside a loop body nested in the if
  EXPECT_EQ(render_error("{% if true %}{% for i in [1] %}{{ i|nosuch }}{% endfor %}{% endif %}").kind(),
            TemplateError::Kind::Syntax);
}

TEST(TemplateParser, LoopControlsAndLoopVariableRules) {
  EXPECT_EQ(render_error("{% break %}").kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(render_error("{% for i in [1] %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}").kind(),
            TemplateError::Kind::Syntax);
  EXPECT_EQ(render_error("{% for loop in [1] %}{% endfor %}").kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(render_error("{% include 'x.jinja' %}").kind(), TemplateError::Kind::Runtime);
}

TEST(TemplateParser, DeepNestingIsRefusedNotACrash) {
  std::string deep(5000, '(');
  deep = "{{ " + deep + "1" + std::string(5000, ')') + " }}";
  EXPECT_EQ(render_error(deep).kind(), TemplateError::Kind::Syntax);
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_EQ(render_error(chain + " }}").kind(), TemplateError::Kind::Syntax);
  std::string ifs;
  for (int i = 0; i < 500; ++i) ifs += "{% if true %}";
  EXPECT_EQ(render_error(ifs).kind(), TemplateError::Kind::Syntax);
}

TEST(TemplateParser, InvalidUtf8SourceIsRefused) {
  EXPECT_EQ(render_error(std::string("ok \xff\xfe")).kind(), TemplateError::Kind::Syntax);
}

}  // namespace
}  // namespace tf
