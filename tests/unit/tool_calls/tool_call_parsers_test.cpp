// Each format's parser on recorded text of that format: what it reads, that the text split at every byte
// offset (and into single bytes) reads the same, and that arguments stream while they are generated.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "parser_harness.h"

namespace tf::tools {
namespace {

using test::expect_split_invariant;
using test::run_bytes;
using test::run_whole;
using J = nlohmann::ordered_json;

std::vector<ToolSpec> tools() {
  return {
      {"get_weather", J::parse(R"({"type": "object", "properties": {"city": {"type": "string"},
          "days": {"type": "integer"}, "units": {"type": "string", "enum": ["c", "f"]}}})")},
      {"set_flags", J::parse(R"({"type": "object", "properties": {"enabled": {"type": "boolean"},
          "tags": {"type": "array", "items": {"type": "string"}}, "options": {"type": "object"},
          "ratio": {"type": "number"}, "note": {"type": ["string", "null"]}}})")},
  };
}

struct Expected {
  std::string content;
  std::vector<std::pair<std::string, J>> calls;  // name, arguments
};

// The whole text's collected reply is `want`; every split reads the same; with single bytes, each call's
// arguments arrive in more than one piece (streamed, not sent at the end) when `streams`.
void check(ToolFormat f, const std::string& text, const Expected& want, bool streams = true) {
  SCOPED_TRACE(std::string(tool_format_name(f)) + ": " + text);
  const auto reply = collect_tool_calls(run_whole(f, tools(), text));
  EXPECT_EQ(reply.content, want.content);
  ASSERT_EQ(reply.calls.size(), want.calls.size());
  for (std::size_t i = 0; i < want.calls.size(); ++i) {
    EXPECT_EQ(reply.calls[i].name, want.calls[i].first);
    const auto args = J::parse(reply.calls[i].arguments, nullptr, false);
    EXPECT_EQ(args, want.calls[i].second) << reply.calls[i].arguments;
  }
  expect_split_invariant(f, tools(), text);
  if (!streams) return;
  const auto bytes = run_bytes(f, tools(), text);
  for (std::size_t i = 0; i < want.calls.size(); ++i) {
    int pieces = 0;
    for (const auto& e : bytes)
      if (e.kind == ToolEvent::Kind::Arguments && e.index == static_cast<int>(i)) ++pieces;
    EXPECT_GT(pieces, 2) << "call " << i << "'s arguments were not streamed";
  }
}

const J kParis = J::parse(R"({"city": "Paris", "days": 3})");
const J kTokyo = J::parse(R"({"city": "Tokyo"})");

TEST(HermesParser, ReadsCallsAndContent) {
  check(ToolFormat::Hermes,
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n"
        "</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}\n</tool_call>",
        {"Let me check.\n", {{"get_weather", kParis}, {"get_weather", kTokyo}}});
}

TEST(HermesParser, KeysInAnotherOrderAndStringArgumentsAreReadWhole) {
  check(ToolFormat::Hermes,
        "<tool_call>{\"arguments\": {\"city\": \"Tokyo\"}, \"name\": \"get_weather\"}</tool_call>"
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\", \\\"days\\\": 3}\"}"
        "</tool_call>",
        {"", {{"get_weather", kTokyo}, {"get_weather", kParis}}}, false);
}

TEST(HermesParser, AnUnknownToolOrPlainMentionStaysContent) {
  check(ToolFormat::Hermes,
        "Use <tool_call> tags like <tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>.",
        {"Use <tool_call> tags like <tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>.", {}});
}

TEST(HermesParser, AMissingCloseBeforeTheNextCallOrTheEndStillReads) {
  check(ToolFormat::Hermes,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}\n"
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}",
        {"", {{"get_weather", kTokyo}, {"get_weather", kParis}}});
}

TEST(XmlFunctionParser, ReadsValuesTypedBySchema) {
  check(ToolFormat::XmlFunction,
        "I'll look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
        {"I'll look.\n", {{"get_weather", kParis}}});
  check(ToolFormat::XmlFunction,
        "<tool_call>\n<function=set_flags>\n<parameter=enabled>\nTrue\n</parameter>\n<parameter=tags>\n"
        "[\"a\", \"b\"]\n</parameter>\n<parameter=options>\n{\"x\": 1}\n</parameter>\n<parameter=ratio>\n0.5\n"
        "</parameter>\n<parameter=note>\nNone\n</parameter>\n</function>\n</tool_call>",
        {"", {{"set_flags", J::parse(R"({"enabled": true, "tags": ["a", "b"], "options": {"x": 1}, "ratio": 0.5,
                                        "note": null})")}}});
}

TEST(XmlFunctionParser, MultilineTextKeepsItsInnerNewlinesAndQuotes) {
  check(ToolFormat::XmlFunction,
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nline \"one\"\n\nline\\two\n\n</parameter>\n"
        "</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n"
        "</function>\n</tool_call>",
        {"", {{"get_weather", J{{"city", "line \"one\"\n\nline\\two\n"}}}, {"get_weather", kTokyo}}});
}

TEST(XmlFunctionParser, MissingParameterCloseAndToolCallOpenerAreTolerated) {
  check(ToolFormat::XmlFunction, "<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n3\n</function>",
        {"", {{"get_weather", kParis}}});
}

TEST(XmlFunctionParser, AValueThatDoesNotFitItsTypeStaysText) {
  check(ToolFormat::XmlFunction,
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n<parameter=days>\nthree\n"
        "</parameter>\n</function>\n</tool_call>",
        {"", {{"get_weather", J{{"city", "Tokyo"}, {"days", "three"}}}}});
}

TEST(Llama3JsonParser, ReadsTheReplyAsCalls) {
  check(ToolFormat::Llama3Json,
        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 3}}; "
        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Tokyo\"}}",
        {"", {{"get_weather", kParis}, {"get_weather", kTokyo}}});
  check(ToolFormat::Llama3Json, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Tokyo\"}}",
        {"", {{"get_weather", kTokyo}}});
}

TEST(Llama3JsonParser, JsonThatIsNotACallAndLaterJsonStayContent) {
  check(ToolFormat::Llama3Json, "{\"answer\": 42}", {"{\"answer\": 42}", {}}, false);
  check(ToolFormat::Llama3Json, "Here: {\"name\": \"get_weather\", \"parameters\": {}}",
        {"Here: {\"name\": \"get_weather\", \"parameters\": {}}", {}}, false);
}

TEST(GlmParser, ReadsBothLineStyles) {
  check(ToolFormat::Glm,
        "Checking.<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
        {"Checking.", {{"get_weather", kParis}}});
  check(ToolFormat::Glm,
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Tokyo</arg_value></tool_call>"
        "<tool_call>set_flags<arg_key>tags</arg_key><arg_value>[\"x\"]</arg_value><arg_key>enabled</arg_key>"
        "<arg_value>false</arg_value></tool_call>",
        {"", {{"get_weather", kTokyo}, {"set_flags", J{{"tags", J::array({"x"})}, {"enabled", false}}}}});
}

TEST(Gemma4Parser, RewritesItsNotationToJson) {
  check(ToolFormat::Gemma4,
        "Sure.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|>"
        "<|tool_call>call:set_flags{tags:[<|\"|>a, b<|\"|>,<|\"|>c<|\"|>],options:{x:1,y:{}},enabled:true,"
        "note:null,ratio:-0.5e1}<tool_call|>",
        {"Sure.",
         {{"get_weather", kParis},
          {"set_flags", J::parse(R"({"tags": ["a, b", "c"], "options": {"x": 1, "y": {}}, "enabled": true,
                                             "note": null, "ratio": -5.0})")}}});
  check(ToolFormat::Gemma4, "<|tool_call>call:get_weather{city:<|\"|>Tokyo<|\"|>,units:c,extra:[]}<tool_call|>",
        {"", {{"get_weather", J{{"city", "Tokyo"}, {"units", "c"}, {"extra", J::array()}}}}});
}

TEST(DeepSeekParser, ReadsV31AndV3Calls) {
  check(ToolFormat::DeepSeek,
        "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\", "
        "\"days\": 3}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Tokyo\"}"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        {"Checking.", {{"get_weather", kParis}, {"get_weather", kTokyo}}});
  check(ToolFormat::DeepSeek,
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
        "{\"city\": \"Tokyo\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        {"", {{"get_weather", kTokyo}}});
}

const std::string kDsmlCalls =
    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
    "<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" "
    "string=\"true\">Tokyo</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";

TEST(DsmlParser, ReadsTheBlockOfInvokesTypedByTheirStringMark) {
  check(ToolFormat::Dsml, "Checking both." + kDsmlCalls,
        {"Checking both.", {{"get_weather", kParis}, {"get_weather", kTokyo}}});
  check(ToolFormat::Dsml, kDsmlCalls, {"", {{"get_weather", kParis}, {"get_weather", kTokyo}}});
  // JSON values of every kind; text kept as written (quotes, newlines, markup, non-ASCII), escaped for JSON.
  check(
      ToolFormat::Dsml,
      "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"set_flags\">\n"
      "<｜DSML｜parameter name=\"enabled\" string=\"false\">true</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"tags\" string=\"false\">[\"a\", \"b\"]</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"options\" string=\"false\">{\"deep\": {\"x\": [1, 2.5, null]}}</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"ratio\" string=\"false\">1e-05</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"note\" string=\"true\">say \"hi\"\n<b>naïve</b> 😀</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
      {"", {{"set_flags", J::parse(R"({"enabled": true, "tags": ["a", "b"], "options": {"deep": {"x": [1, 2.5, null]}},
                                        "ratio": 1e-05, "note": "say \"hi\"\n<b>naïve</b> 😀"})")}}});
}

TEST(DsmlParser, ArgumentsAreTheReferencesBytesAndABrokenJsonValueIsTypedBySchema) {
  const auto reply =
      collect_tool_calls(run_whole(ToolFormat::Dsml, tools(),
                                   "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
                                   "<｜DSML｜parameter name=\"city\" string=\"true\">São \"P\"</｜DSML｜parameter>\n"
                                   "<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n"
                                   "<｜DSML｜parameter name=\"units\" "
                                   "string=\"false\">c</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>"));
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(reply.calls[0].arguments, R"({"city": "São \"P\"", "days": 3, "units": "c"})");
}

TEST(DsmlParser, AnInvokeWithoutParametersAndTextAfterTheBlock) {
  check(ToolFormat::Dsml,
        "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n\n</｜DSML｜invoke>\n</｜DSML｜tool_calls> done",
        {"done", {{"get_weather", J::object()}}}, false);
}

TEST(NemotronParser, ReadsTheListOfCalls) {
  check(ToolFormat::Nemotron,
        "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}, "
        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}]</TOOLCALL>",
        {"", {{"get_weather", kParis}, {"get_weather", kTokyo}}});
}

TEST(ToolFormats, DetectedFromTheTemplatesMarkers) {
  EXPECT_EQ(detect_tool_format("{{ '<|tool_call>call:' }}"), ToolFormat::Gemma4);
  EXPECT_EQ(detect_tool_format("<｜tool▁calls▁begin｜>"), ToolFormat::DeepSeek);
  EXPECT_EQ(detect_tool_format("<TOOLCALL>"), ToolFormat::Nemotron);
  EXPECT_EQ(detect_tool_format("{#- builtin:deepseek_v4 <｜DSML｜tool_calls> -#}"), ToolFormat::Dsml);
  EXPECT_EQ(detect_tool_format("<tool_call>{{ name }}<arg_key>"), ToolFormat::Glm);
  EXPECT_EQ(detect_tool_format("<tool_call>\n<function=x>\n<parameter=y>"), ToolFormat::XmlFunction);
  EXPECT_EQ(detect_tool_format("<tool_call>\n{\"name\": <function-name>}"), ToolFormat::Hermes);
  EXPECT_EQ(detect_tool_format("<|start_header_id|>{% if tools %}\"parameters\"{% endif %}"), ToolFormat::Llama3Json);
  EXPECT_EQ(detect_tool_format("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}"), std::nullopt);
  for (const auto f : all_tool_formats()) EXPECT_EQ(tool_format_from_name(tool_format_name(f)), f);
}

TEST(ToolFormats, WithoutDeclaredToolsAnyNameIsReadAndValuesStayText) {
  const auto events =
      run_whole(ToolFormat::XmlFunction, {},
                "<tool_call>\n<function=anything>\n<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>");
  const auto reply = collect_tool_calls(events);
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(reply.calls[0].name, "anything");
  EXPECT_EQ(reply.calls[0].arguments, "{\"n\": \"3\"}");
}

}  // namespace
}  // namespace tf::tools

namespace tf::tools {
namespace {

// A reply forced to start with call_opening() and then given arguments is read as that call, in every format.
TEST(ToolFormats, CallOpeningStartsACallOfThatName) {
  const std::vector<ToolSpec> tools = {{"get_weather", nlohmann::ordered_json::object()}};
  for (const auto f : all_tool_formats()) {
    std::string rest = "{\"city\": \"Paris\"}}";
    if (f == ToolFormat::XmlFunction) rest = "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";
    if (f == ToolFormat::Glm) rest = "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>";
    if (f == ToolFormat::Gemma4) rest = "city:<|\"|>Paris<|\"|>}<tool_call|>";
    if (f == ToolFormat::DeepSeek) rest = "{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    if (f == ToolFormat::Nemotron) rest = "{\"city\": \"Paris\"}}]</TOOLCALL>";
    if (f == ToolFormat::Dsml)
      rest =
          "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
          "</｜DSML｜tool_calls>";
    const auto reply = collect_tool_calls(test::run_whole(f, tools, call_opening(f, "get_weather") + rest));
    ASSERT_EQ(reply.calls.size(), 1u) << tool_format_name(f);
    EXPECT_EQ(reply.calls[0].name, "get_weather");
    EXPECT_EQ(nlohmann::json::parse(reply.calls[0].arguments), nlohmann::json({{"city", "Paris"}}))
        << tool_format_name(f);
    EXPECT_EQ(reply.content, "") << tool_format_name(f);
  }
}

}  // namespace
}  // namespace tf::tools
