// Malformed and truncated calls: a call that breaks before it started stays content, one that breaks after
// ends as CallInvalid whose raw text puts the whole reply back into the content; random text made of the
// formats' own fragments never crashes, never hangs, reads the same however it is split, and every call
// that ends has a JSON object as its arguments.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "parser_harness.h"

namespace tf::tools {
namespace {

using test::expect_split_invariant;
using test::merged;
using test::run_cuts;
using test::run_whole;
using J = nlohmann::ordered_json;

std::vector<ToolSpec> tools() {
  return {{"get_weather", J::parse(R"({"type": "object", "properties": {"city": {"type": "string"},
                                      "days": {"type": "integer"}}})")}};
}

// A broken call: the reply as a whole comes back as content, and no call is complete.
void expect_all_content(ToolFormat f, const std::string& text) {
  SCOPED_TRACE(std::string(tool_format_name(f)) + ": " + text);
  const auto events = run_whole(f, tools(), text);
  const auto reply = collect_tool_calls(events);
  EXPECT_TRUE(reply.calls.empty());
  EXPECT_EQ(reply.content, text);
  expect_split_invariant(f, tools(), text);
}

TEST(MalformedCalls, BrokenArgumentsEndTheCallAsInvalid) {
  const std::string text =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": Paris}}\n</tool_call> after";
  const auto events = run_whole(ToolFormat::Hermes, tools(), text);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].kind, ToolEvent::Kind::CallStart);
  EXPECT_EQ(events[1].kind, ToolEvent::Kind::Arguments);
  EXPECT_EQ(events[1].text, "{\"city\": ");  // streamed while it was still JSON
  EXPECT_EQ(events[2].kind, ToolEvent::Kind::CallInvalid);
  expect_all_content(ToolFormat::Hermes, text);
}

TEST(MalformedCalls, TruncatedCallsOfEveryFormatComeBackAsContent) {
  expect_all_content(ToolFormat::Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par");
  expect_all_content(ToolFormat::Hermes, "<tool_call>\n{\"name\": \"get_wea");
  expect_all_content(ToolFormat::XmlFunction, "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar");
  expect_all_content(ToolFormat::XmlFunction,
                     "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n");
  expect_all_content(ToolFormat::Llama3Json, "{\"name\": \"get_weather\", \"parameters\": {\"city\": ");
  expect_all_content(ToolFormat::Glm, "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Par");
  expect_all_content(ToolFormat::Gemma4, "<|tool_call>call:get_weather{city:<|\"|>Par");
  expect_all_content(ToolFormat::DeepSeek, "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\"");
  // The block's opener too (it was dropped from the content: a lazy call cut short by max_tokens lost it).
  expect_all_content(ToolFormat::DeepSeek,
                     "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Par");
  expect_all_content(ToolFormat::Nemotron, "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {");
  expect_all_content(ToolFormat::Dsml,
                     "Sure.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter "
                     "name=\"city\" string=\"true\">Par");
  expect_all_content(ToolFormat::Dsml, "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_wea");
}

TEST(MalformedCalls, BrokenOpenersAndUnknownNamesStayContent) {
  expect_all_content(ToolFormat::Hermes, "<tool_call>not json</tool_call>");
  expect_all_content(ToolFormat::Hermes, "<tool_call>{\"name\": 42}</tool_call>");
  expect_all_content(ToolFormat::XmlFunction, "<tool_call>\n<function=nope>\n</function>\n</tool_call>");
  expect_all_content(ToolFormat::XmlFunction, "<function=get weather\nis nice");
  expect_all_content(ToolFormat::Glm, "<tool_call>unknown\n<arg_key>a</arg_key></tool_call>");
  expect_all_content(ToolFormat::Gemma4, "<|tool_call>call:get_weather(city: 1)<tool_call|>");
  expect_all_content(ToolFormat::Gemma4, "<|tool_call>call:get_weather{city:<|\"|>x<|\"|>]<tool_call|>");
  expect_all_content(ToolFormat::DeepSeek, "<｜tool▁call▁begin｜>nope<｜tool▁sep｜>{}<｜tool▁call▁end｜>");
  expect_all_content(ToolFormat::DeepSeek, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>nope<｜tool▁sep｜>{}");
  expect_all_content(ToolFormat::DeepSeek, "<｜tool▁calls▁begin｜>no call here");
  expect_all_content(ToolFormat::Nemotron, "<TOOLCALL>{\"name\": \"get_weather\"}</TOOLCALL>");
  expect_all_content(ToolFormat::Dsml, "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"nope\">\n</｜DSML｜invoke>");
  expect_all_content(ToolFormat::Dsml, "\n\n<｜DSML｜tool_calls>\nno call here");
  expect_all_content(ToolFormat::Dsml, "<｜DSML｜tool_calls>\n</｜DSML｜tool_calls>");
  // A repeated parameter name (the reference refuses it) and an unknown string mark.
  expect_all_content(ToolFormat::Dsml,
                     "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" "
                     "string=\"true\">a</｜DSML｜parameter>\n<｜DSML｜parameter name=\"city\" string=\"true\">b"
                     "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>");
  expect_all_content(ToolFormat::Dsml,
                     "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" "
                     "string=\"maybe\">a</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>");
}

TEST(MalformedCalls, AnEmptyReplyAndPlainTextAreContent) {
  for (const auto f : all_tool_formats()) {
    expect_all_content(f, "");
    expect_all_content(f, "Just an answer, with <b>tags</b> and {braces}.");
  }
}

// Random texts from each format's fragments (and fragments cut short), split at random: no crash, the same
// events as the whole text, every ended call's arguments a JSON object, every started call ended.
TEST(MalformedCalls, RandomFragmentsNeverBreakTheParsers) {
  const std::vector<std::string> pieces = {"<tool_call>",
                                           "</tool_call>",
                                           "<function=",
                                           "get_weather",
                                           ">",
                                           "<parameter=",
                                           "city",
                                           "</parameter>",
                                           "</function>",
                                           "\n",
                                           " ",
                                           "{",
                                           "}",
                                           "[",
                                           "]",
                                           ":",
                                           ",",
                                           "\"",
                                           "\"name\"",
                                           "\"arguments\"",
                                           "\"parameters\"",
                                           "\"get_weather\"",
                                           "\"city\"",
                                           "\"Paris\"",
                                           "3",
                                           "-",
                                           ".5",
                                           "e",
                                           "true",
                                           "nul",
                                           "\\",
                                           "<arg_key>",
                                           "</arg_key>",
                                           "<arg_value>",
                                           "</arg_value>",
                                           "<|tool_call>",
                                           "<tool_call|>",
                                           "call:",
                                           "<|\"|>",
                                           "<|\"",
                                           "<｜tool▁calls▁begin｜>",
                                           "<｜tool▁call▁begin｜>",
                                           "<｜tool▁sep｜>",
                                           "<｜tool▁call▁end｜>",
                                           "```json",
                                           "```",
                                           "<TOOLCALL>",
                                           "</TOOLCALL>",
                                           "<|python_tag|>",
                                           ";",
                                           "text",
                                           "é",
                                           "\xe2\x82",
                                           "<",
                                           "</",
                                           "<｜DSML｜tool_calls>",
                                           "</｜DSML｜tool_calls>",
                                           "<｜DSML｜invoke name=\"",
                                           "\">",
                                           "</｜DSML｜invoke>",
                                           "<｜DSML｜parameter name=\"",
                                           "\" string=\"",
                                           "true\">",
                                           "false\">",
                                           "</｜DSML｜parameter>",
                                           "\n\n"};
  std::mt19937 rng(1234);
  for (const auto f : all_tool_formats()) {
    for (int round = 0; round < 300; ++round) {
      std::string text;
      const int n = 1 + static_cast<int>(rng() % 40);
      for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
      std::vector<std::size_t> cuts;
      for (std::size_t i = 1; i < text.size(); ++i)
        if (rng() % 3 == 0) cuts.push_back(i);
      const auto whole = run_whole(f, tools(), text);
      ASSERT_EQ(merged(run_cuts(f, tools(), text, cuts)), whole) << tool_format_name(f) << ": " << text;
      int open = -1;
      for (const auto& e : whole) {
        if (e.kind == ToolEvent::Kind::CallStart) {
          ASSERT_EQ(open, -1) << text;
          open = e.index;
        } else if (e.kind == ToolEvent::Kind::CallEnd || e.kind == ToolEvent::Kind::CallInvalid) {
          ASSERT_EQ(open, e.index) << text;
          open = -1;
        }
      }
      ASSERT_EQ(open, -1) << "a call never ended: " << text;
      for (const auto& call : collect_tool_calls(whole).calls)
        ASSERT_TRUE(J::parse(call.arguments, nullptr, false).is_object())
            << tool_format_name(f) << ": " << call.arguments << " from " << text;
    }
  }
}

}  // namespace
}  // namespace tf::tools
