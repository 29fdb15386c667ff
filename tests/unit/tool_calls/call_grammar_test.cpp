// The tool-call grammars (text/tool_calls/call_grammar.h): for every format, a call written as the format
// writes it is read by the grammar to its end and by the format's parser into arguments of the schema; calls
// whose arguments break the schema (a wrong type, a value out of range, a required key missing, an unknown
// function) are not; several calls only when parallel calls are allowed.
#include "text/tool_calls/call_grammar.h"

#include <gtest/gtest.h>

#include <functional>

namespace tf::tools {
namespace {

using json = nlohmann::ordered_json;

const json kSchema = json::parse(R"({"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14},
    "unit": {"enum": ["c", "f"]}}, "required": ["city", "days"]})");

std::vector<ToolSpec> tools() { return {{"get_weather", kSchema}, {"get_time", json::object()}}; }

// A call of get_weather in `f` with the value texts given (nullopt: days left out).
using Writer = std::function<std::string(const std::string& city, const std::optional<std::string>& days)>;

Writer writer(ToolFormat f) {
  switch (f) {
    case ToolFormat::Hermes:
      return [](const std::string& c, const std::optional<std::string>& d) {
        return "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" + c + "\"" +
               (d ? ", \"days\": " + *d : "") + "}}\n</tool_call>";
      };
    case ToolFormat::Llama3Json:
      return [](const std::string& c, const std::optional<std::string>& d) {
        return "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"" + c + "\"" + (d ? ", \"days\": " + *d : "") +
               "}}";
      };
    case ToolFormat::Nemotron:
      return [](const std::string& c, const std::optional<std::string>& d) {
        return "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" + c + "\"" +
               (d ? ", \"days\": " + *d : "") + "}}]</TOOLCALL>";
      };
    case ToolFormat::DeepSeek:
      return [](const std::string& c, const std::optional<std::string>& d) {
        return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"" + c + "\"" +
               (d ? ", \"days\": " + *d : "") + "}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
      };
    case ToolFormat::XmlFunction:
      return [](const std::string& c, const std::optional<std::string>& d) {
        return "<tool_call>\n<function=get_weather>\n<parameter=city>\n" + c + "\n</parameter>\n" +
               (d ? "<parameter=days>\n" + *d + "\n</parameter>\n" : "") + "</function>\n</tool_call>";
      };
    case ToolFormat::Glm:
      return [](const std::string& c, const std::optional<std::string>& d) {
        return "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>" + c + "</arg_value>\n" +
               (d ? "<arg_key>days</arg_key>\n<arg_value>" + *d + "</arg_value>\n" : "") + "</tool_call>";
      };
    case ToolFormat::Gemma4:
      return [](const std::string& c, const std::optional<std::string>& d) {
        return "<|tool_call>call:get_weather{city:<|\"|>" + c + "<|\"|>" + (d ? ",days:" + *d : "") + "}<tool_call|>";
      };
    case ToolFormat::Dsml:
      return [](const std::string& c, const std::optional<std::string>& d) {
        return "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" "
               "string=\"true\">" +
               c + "</｜DSML｜parameter>\n" +
               (d ? "<｜DSML｜parameter name=\"days\" string=\"false\">" + *d + "</｜DSML｜parameter>\n" : "") +
               "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
      };
  }
  return {};
}

bool reads(const grammar::Grammar& g, const std::string& text) {
  grammar::GrammarMatcher m(g);
  return m.accepting(m.run(m.initial(), text));
}

std::vector<CollectedCall> parsed(ToolFormat f, const std::string& text) {
  auto parser = make_tool_call_parser(f, tools());
  std::vector<ToolEvent> events;
  parser->feed(text, events);
  parser->finish(events);
  return collect_tool_calls(events).calls;
}

class CallGrammar : public testing::TestWithParam<ToolFormat> {};

TEST_P(CallGrammar, ACallOfTheSchemaIsReadAndOneThatBreaksItIsNot) {
  const auto f = GetParam();
  const auto g = tool_call_grammar(f, tools(), false);
  const auto write = writer(f);
  const bool json_format =
      f == ToolFormat::Hermes || f == ToolFormat::Llama3Json || f == ToolFormat::Nemotron || f == ToolFormat::DeepSeek;
  const auto good = write("Paris", "3");
  ASSERT_TRUE(reads(g, good)) << good;
  ASSERT_TRUE(reads(g, "\n " + good)) << "whitespace may come first";
  const auto calls = parsed(f, good);
  ASSERT_EQ(calls.size(), 1u) << good;
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(calls[0].arguments), json::parse(R"({"city": "Paris", "days": 3})"));
  // A string may hold text that looks like markup, but not the format's own end markers.
  EXPECT_TRUE(reads(g, write(json_format ? "a < b" : "a < b & <c>", "14")));
  EXPECT_FALSE(reads(g, write("Paris", "20"))) << "above maximum";
  EXPECT_FALSE(reads(g, write("Paris", "0"))) << "below minimum";
  EXPECT_FALSE(reads(g, write("Paris", json_format ? "\"3\"" : "three"))) << "not an integer";
  EXPECT_FALSE(reads(g, write("Paris", std::nullopt))) << "a required key left out";
  EXPECT_FALSE(reads(g, good + "Done.")) << "text after the call";
  EXPECT_TRUE(reads(g, good + "\n")) << "a newline after the call, then the end";
  EXPECT_FALSE(reads(g, std::string(5, '\n') + good)) << "blank lines before a call are bounded";
  // One call only, unless parallel calls are allowed.
  const std::string two = f == ToolFormat::Llama3Json ? good + "; " + good : good + "\n" + good;
  if (f != ToolFormat::DeepSeek && f != ToolFormat::Nemotron && f != ToolFormat::Dsml) {
    EXPECT_FALSE(reads(g, two));
    EXPECT_TRUE(reads(tool_call_grammar(f, tools(), true), two)) << two;
    EXPECT_EQ(parsed(f, two).size(), 2u);
  }
  // The end markers do not fit inside a string.
  if (!json_format) {
    const std::string marker = f == ToolFormat::XmlFunction ? "</parameter>"
                               : f == ToolFormat::Glm       ? "</arg_value>"
                               : f == ToolFormat::Dsml      ? "</｜DSML｜parameter>"
                                                            : "<|\"|>";
    EXPECT_FALSE(reads(g, write("a" + marker + "b", "3")));
  }
}

TEST_P(CallGrammar, EveryFormatHasATriggerItsGrammarStartsWith) {
  const auto f = GetParam();
  const auto g = tool_call_grammar(f, tools(), true);
  const auto good = writer(f)("Paris", "3");
  bool found = false;
  for (const auto& t : call_triggers(f))
    if (good.compare(0, t.text.size(), t.text) == 0) found = true;
  EXPECT_TRUE(found) << good;
}

INSTANTIATE_TEST_SUITE_P(Formats, CallGrammar, testing::ValuesIn(all_tool_formats()),
                         [](const testing::TestParamInfo<ToolFormat>& i) {
                           return std::string(tool_format_name(i.param));
                         });

TEST(CallGrammarTools, AFunctionWithoutParametersTakesAnyObjectAndAnUnsupportedSchemaFallsBackUnlessStrict) {
  const json unsupported = json::parse(R"({"type": "object", "not": {"required": ["x"]}})");
  const auto g = tool_call_grammar(ToolFormat::Hermes, {{"f", unsupported}}, false);
  EXPECT_TRUE(reads(g, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": [1, {\"y\": null}]}}\n</tool_call>"));
  EXPECT_THROW(tool_call_grammar(ToolFormat::Hermes, {{"f", unsupported, true}}, false), grammar::GrammarError);
}

TEST(CallGrammarTools, AnEnumStringParameterOfATextFormatIsOneOfItsValues) {
  const auto g = tool_call_grammar(ToolFormat::XmlFunction, tools(), false);
  const std::string head =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n";
  EXPECT_TRUE(reads(g, head + "<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(reads(g, head + "<parameter=unit>\nk\n</parameter>\n</function>\n</tool_call>"));
}

TEST(CallGrammarTools, ALengthBoundedStringOfATextFormatIsHeldToItsLength) {
  const json schema = json::parse(R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}},
                                      "required": ["s"]})");
  const auto g = tool_call_grammar(ToolFormat::XmlFunction, {{"f", schema}}, false);
  const auto call = [](const std::string& v) {
    return "<tool_call>\n<function=f>\n<parameter=s>\n" + v + "\n</parameter>\n</function>\n</tool_call>";
  };
  EXPECT_TRUE(reads(g, call("abc")));
  EXPECT_TRUE(reads(g, call("")));
  EXPECT_FALSE(reads(g, call("abcd")));
  // A strict tool whose text parameter has a pattern cannot be held to it in this format.
  const json pattern = json::parse(R"({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}}})");
  EXPECT_THROW(tool_call_grammar(ToolFormat::XmlFunction, {{"f", pattern, true}}, false), grammar::GrammarError);
  EXPECT_NO_THROW(tool_call_grammar(ToolFormat::Hermes, {{"f", pattern, true}}, false));
}

}  // namespace
}  // namespace tf::tools
