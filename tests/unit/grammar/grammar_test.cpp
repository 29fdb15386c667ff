// Structured output's grammars (src/text/grammar): the builder and matcher, JSON schemas, json_object, GBNF and
// regular expressions, checked on texts they must accept and texts they must refuse.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "text/grammar/gbnf.h"
#include "text/grammar/grammar.h"
#include "text/grammar/json_schema.h"
#include "text/grammar/regex_grammar.h"

namespace tf::grammar {
namespace {

using json = nlohmann::ordered_json;

// Whether `text` is a whole text of the grammar (complete), or at least a prefix of one.
bool complete(const Grammar& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.accepting(m.run(m.initial(), text));
}
bool prefix(const Grammar& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.run(m.initial(), text) != GrammarMatcher::kDead;
}

Grammar schema(const char* text) { return json_schema_grammar(json::parse(text)); }

std::string keyword_of(const char* text) {
  try {
    schema(text);
  } catch (const GrammarError& e) {
    return e.keyword();
  }
  return "(compiled)";
}

TEST(Utf8Sequences, CoverEveryLengthAndSkipSurrogates) {
  const auto all = utf8_sequences(0, 0x10FFFF);
  // A code point is covered iff some sequence holds its encoding; check a few around the boundaries.
  const auto covered = [&](std::string_view bytes) {
    for (const auto& seq : all) {
      if (seq.size() != bytes.size()) continue;
      bool ok = true;
      for (std::size_t i = 0; i < seq.size(); ++i) {
        const auto b = static_cast<std::uint8_t>(bytes[i]);
        ok = ok && b >= seq[i].first && b <= seq[i].second;
      }
      if (ok) return true;
    }
    return false;
  };
  EXPECT_TRUE(covered("A"));
  EXPECT_TRUE(covered("\xC3\xA9"));          // é
  EXPECT_TRUE(covered("\xE2\x82\xAC"));      // €
  EXPECT_TRUE(covered("\xF0\x9F\x98\x80"));  // 😀
  EXPECT_FALSE(covered("\xED\xA0\x80"));     // a surrogate
  EXPECT_FALSE(covered("\xC0\x80"));         // overlong
  EXPECT_FALSE(covered("\xF4\x90\x80\x80"));  // beyond U+10FFFF
}

TEST(GrammarBuilder, RefusesLeftRecursionAndUndefinedRules) {
  {
    GrammarBuilder b;
    const auto r = b.rule("expr");
    b.add(r, GrammarBuilder::cat({b.ref(r), b.bytes("+1")}));
    b.add(r, b.bytes("1"));
    EXPECT_THROW(b.build(r), GrammarError);
  }
  {
    GrammarBuilder b;
    const auto r = b.rule("root");
    const auto missing = b.rule("missing");
    b.add(r, b.ref(missing));
    EXPECT_THROW(b.build(r), GrammarError);
  }
}

TEST(GrammarMatcher, RepetitionBoundsAndStepsAreCached) {
  GrammarBuilder b;
  const auto r = b.rule("root");
  b.add(r, GrammarBuilder::cat({b.bytes("a"), b.repeat(b.bytes("b"), 2, 4), b.bytes("c")}));
  const auto g = b.build(r);
  EXPECT_FALSE(complete(g, "abc"));
  EXPECT_TRUE(complete(g, "abbc"));
  EXPECT_TRUE(complete(g, "abbbbc"));
  EXPECT_FALSE(prefix(g, "abbbbb"));
  GrammarMatcher m(g);
  const auto s1 = m.run(m.initial(), "ab");
  const auto states = m.states();
  EXPECT_EQ(m.run(m.initial(), "ab"), s1);  // the same state, nothing new
  EXPECT_EQ(m.states(), states);
  EXPECT_TRUE(m.finished(m.run(m.initial(), "abbbbc")));
}

TEST(JsonObject, AnyObjectAndNothingElse) {
  const auto g = json_object_grammar();
  EXPECT_TRUE(complete(g, R"({"a": [1, 2.5e3, "x\n\u00e9", true, null, {"b": {}}], "c": -0.5})"));
  EXPECT_TRUE(complete(g, "{}"));
  EXPECT_TRUE(complete(g, "\n{\n  \"a\": 1\n}"));
  EXPECT_FALSE(prefix(g, "[1]"));
  EXPECT_FALSE(prefix(g, R"({"a": 01})"));
  EXPECT_FALSE(prefix(g, R"({"a": "\x"})"));
  EXPECT_FALSE(prefix(g, "{\"a\": \"\x01\"}"));
  EXPECT_FALSE(prefix(g, "{} "));                    // nothing after the object
  EXPECT_FALSE(prefix(g, "{\"a\":    1}"));           // whitespace is bounded
  EXPECT_TRUE(complete(g, "{\"\xC3\xA9\": \"\xF0\x9F\x98\x80\"}"));
  EXPECT_FALSE(prefix(g, "{\"\xC3\x28"));            // invalid UTF-8
}

TEST(JsonSchema, ObjectPropertiesInOrderRequiredAndOptional) {
  const auto g = schema(R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                           "email": {"type": "string"}}, "required": ["name", "email"]})");
  EXPECT_TRUE(complete(g, R"({"name": "Ann", "age": 31, "email": "a@b"})"));
  EXPECT_TRUE(complete(g, R"({"name": "Ann", "email": "a@b"})"));
  EXPECT_FALSE(complete(g, R"({"name": "Ann"})"));
  EXPECT_FALSE(prefix(g, R"({"age": 31)"));                   // name comes first
  EXPECT_FALSE(prefix(g, R"({"name": "Ann", "extra": 1)"));   // no property beyond properties
  EXPECT_FALSE(prefix(g, R"({"name": "Ann", "age": 3.5)"));   // an integer
}

TEST(JsonSchema, AllOptionalAndAdditionalProperties) {
  const auto g = schema(R"({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}}})");
  EXPECT_TRUE(complete(g, "{}"));
  EXPECT_TRUE(complete(g, R"({"b": null})"));
  EXPECT_TRUE(complete(g, R"({"a": true, "b": null})"));
  EXPECT_FALSE(prefix(g, R"({, )"));
  const auto extra = schema(R"({"type": "object", "properties": {"id": {"type": "integer"}},
                                "additionalProperties": {"type": "string"}, "required": ["id"]})");
  EXPECT_TRUE(complete(extra, R"({"id": 1, "note": "x", "tag": "y"})"));
  EXPECT_FALSE(prefix(extra, R"({"id": 1, "note": 2)"));
  EXPECT_FALSE(prefix(extra, R"({"id": 1, "id")"));  // a declared key is not an extra one
  EXPECT_TRUE(complete(extra, R"({"id": 1, "idx": "y"})"));
  const auto free = schema(R"({"type": "object"})");
  EXPECT_TRUE(complete(free, R"({"anything": [1, {"x": null}]})"));
}

TEST(JsonSchema, ArraysWithBoundsAndTuples) {
  const auto g = schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
  EXPECT_FALSE(complete(g, "[1]"));
  EXPECT_TRUE(complete(g, "[1, 2]"));
  EXPECT_TRUE(complete(g, "[1,2,3]"));
  EXPECT_FALSE(prefix(g, "[1, 2, 3, 4"));
  EXPECT_FALSE(prefix(g, "[]"));
  const auto tuple = schema(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}],
                                "items": false})");
  EXPECT_TRUE(complete(tuple, R"(["a", 1.5])"));
  EXPECT_TRUE(complete(tuple, R"(["a"])"));
  EXPECT_TRUE(complete(tuple, "[]"));
  EXPECT_FALSE(prefix(tuple, R"(["a", 1.5, )"));
  EXPECT_FALSE(prefix(tuple, "[1"));
}

TEST(JsonSchema, EnumsConstsAnyOfRefsAndRecursion) {
  const auto e = schema(R"({"enum": ["red", "green", 3, null, {"k": [1]}]})");
  EXPECT_TRUE(complete(e, R"("green")"));
  EXPECT_TRUE(complete(e, "3"));
  EXPECT_TRUE(complete(e, "null"));
  EXPECT_TRUE(complete(e, R"({"k":[1]})"));
  EXPECT_FALSE(prefix(e, R"("blue")"));
  const auto c = schema(R"({"const": "a\"b"})");
  EXPECT_TRUE(complete(c, R"("a\"b")"));
  const auto any = schema(R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}]})");
  EXPECT_TRUE(complete(any, R"("ab")"));
  EXPECT_FALSE(prefix(any, R"("abc)"));
  EXPECT_TRUE(complete(any, "-12"));
  const auto tree = schema(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}}, "$ref": "#/$defs/node"})");
  EXPECT_TRUE(complete(tree, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"));
  EXPECT_FALSE(prefix(tree, R"({"v": 1, "kids": [{"kids")"));
  const auto types = schema(R"({"type": ["string", "null"]})");
  EXPECT_TRUE(complete(types, "null"));
  EXPECT_TRUE(complete(types, R"("x")"));
}

TEST(JsonSchema, StringsNumbersAndIntegerRanges) {
  const auto s = schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_FALSE(complete(s, R"("a")"));
  EXPECT_TRUE(complete(s, R"("a\n")"));  // an escape is one character
  EXPECT_TRUE(complete(s, "\"\xC3\xA9\xC3\xA9\xC3\xA9\""));
  EXPECT_FALSE(prefix(s, R"("abcd)"));
  const auto n = schema(R"({"type": "number"})");
  for (const char* ok : {"0", "-0.5", "12e3", "1.25E-2", "3"}) EXPECT_TRUE(complete(n, ok)) << ok;
  for (const char* bad : {"01", ".5", "1.", "+1", "1e"}) EXPECT_FALSE(complete(n, bad)) << bad;
  const auto r = schema(R"({"type": "integer", "minimum": -15, "maximum": 120})");
  for (int v = -30; v <= 200; ++v)
    EXPECT_EQ(complete(r, std::to_string(v)), v >= -15 && v <= 120) << v;
  EXPECT_FALSE(complete(r, "007"));
  const auto ex = schema(R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1000})");
  for (int v = -5; v <= 1005; ++v) EXPECT_EQ(complete(ex, std::to_string(v)), v > 0 && v < 1000) << v;
  const auto lo = schema(R"({"type": "integer", "minimum": 18})");
  EXPECT_FALSE(complete(lo, "17"));
  EXPECT_TRUE(complete(lo, "18"));
  EXPECT_TRUE(complete(lo, "1000000"));
  const auto unit = schema(R"({"type": "number", "minimum": 0, "maximum": 1})");
  for (const char* ok : {"0", "0.25", "1", "1.0", "0.999"}) EXPECT_TRUE(complete(unit, ok)) << ok;
  for (const char* bad : {"-0.1", "1.5", "2", "1.01"}) EXPECT_FALSE(complete(unit, bad)) << bad;
}

TEST(JsonSchema, PatternsAndFormats) {
  const auto p = schema(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})");
  EXPECT_TRUE(complete(p, R"("AB-123")"));
  EXPECT_FALSE(prefix(p, R"("ab)"));
  const auto search = schema(R"({"type": "string", "pattern": "x\"y"})");  // unanchored: anything around
  EXPECT_TRUE(complete(search, R"("-- x\"y --")"));
  EXPECT_FALSE(complete(search, R"("xy")"));
  const auto date = schema(R"({"type": "string", "format": "date"})");
  EXPECT_TRUE(complete(date, R"("2024-02-28")"));
  EXPECT_FALSE(prefix(date, R"("2024-02-30)"));
  EXPECT_FALSE(prefix(date, R"("2024-13)"));
  const auto uuid = schema(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(complete(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  EXPECT_EQ(keyword_of(R"({"type": "string", "contentEncoding": "base64"})"), "contentEncoding");
  EXPECT_EQ(keyword_of(R"({"type": "array", "uniqueItems": true})"), "uniqueItems");
  EXPECT_EQ(keyword_of(R"({"not": {"type": "string"}})"), "not");
  EXPECT_EQ(keyword_of(R"({"type": "object", "patternProperties": {"^a": {}}})"), "patternProperties");
  EXPECT_EQ(keyword_of(R"({"type": "object", "properties": {"a": {"if": {}}}})"), "if");
  EXPECT_EQ(keyword_of(R"({"type": "string", "format": "hostname"})"), "format");
  EXPECT_EQ(keyword_of(R"({"type": "number", "multipleOf": 2})"), "multipleOf");
  EXPECT_EQ(keyword_of(R"({"type": "number", "minimum": 0.5})"), "minimum");
  EXPECT_EQ(keyword_of(R"({"$ref": "http://example.com/s.json"})"), "$ref");
  EXPECT_EQ(keyword_of(R"({"$ref": "#/$defs/missing"})"), "$ref");
  EXPECT_EQ(keyword_of(R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})"), "allOf");
  EXPECT_EQ(keyword_of(R"({"type": "strin"})"), "type");
  EXPECT_EQ(keyword_of(R"({"type": "string", "maxLength": 100000})"), "maxLength");
  EXPECT_EQ(keyword_of(R"({"type": "string", "pattern": "(a)\\1"})"), "pattern");
  EXPECT_EQ(keyword_of(R"({"type": "object", "properties": {"a": false}, "required": ["a"]})"), "false");
  EXPECT_EQ(keyword_of(R"({"title": "x", "description": "y", "type": "string", "default": "z"})"), "(compiled)");
}

TEST(Regex, FullMatches) {
  const auto g = regex_grammar(R"((?:yes|no)\.? [0-9]{2,3}[a-c]*)");
  EXPECT_TRUE(complete(g, "yes 12"));
  EXPECT_TRUE(complete(g, "no. 123abcab"));
  EXPECT_FALSE(prefix(g, "maybe"));
  EXPECT_FALSE(complete(g, "yes 1"));
  const auto neg = regex_grammar(R"([^a-z\s]+)");
  EXPECT_TRUE(complete(neg, "ABC123\xC3\xA9"));
  EXPECT_FALSE(prefix(neg, "A b"));
  EXPECT_THROW(regex_grammar("(?=a)b"), GrammarError);
  EXPECT_THROW(regex_grammar("(a*)*"), GrammarError);
  EXPECT_THROW(regex_grammar("a{3,2}"), GrammarError);
}

TEST(Gbnf, ParsesLlamaCppGrammars) {
  const auto g = gbnf_grammar(R"(
# a list of key=value pairs
root ::= pair ("," ws pair)*
pair ::= key "=" value
key  ::= [a-z_]+
value ::= [0-9]+ | "\"" [^"\n]* "\""
ws ::= [ \t]?
)");
  EXPECT_TRUE(complete(g, "a=1, b_c=\"x y\",c=22"));
  EXPECT_FALSE(prefix(g, "A=1"));
  EXPECT_FALSE(complete(g, "a="));
  const auto multi = gbnf_grammar("root ::= \"a\"\n  | \"b\"{2}\n  | [\\u00e9]");
  EXPECT_TRUE(complete(multi, "bb"));
  EXPECT_TRUE(complete(multi, "\xC3\xA9"));
  EXPECT_THROW(gbnf_grammar("start ::= \"a\""), GrammarError);           // no root
  EXPECT_THROW(gbnf_grammar("root ::= other"), GrammarError);            // undefined
  EXPECT_THROW(gbnf_grammar("root ::= root \"a\" | \"b\""), GrammarError);  // left recursive
  EXPECT_THROW(gbnf_grammar("root ::= (\"a\"?)*"), GrammarError);        // would repeat nothing forever
  EXPECT_THROW(gbnf_grammar("root ::= \"a"), GrammarError);
}

}  // namespace
}  // namespace tf::grammar
