// DeepSeek-V4 replies read as the reference's parse_message_from_completion_text reads them: the "parse" cases of
// tests/conformance/templates/dsv4_corpus.json (made by scripts/golden/make_dsv4_corpus.py with the reference),
// through the reasoning splitter and the DSML parser as the server runs them, whole and split at every byte.
// The calls' arguments are the reference's bytes.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "parser_harness.h"
#include "text/tool_calls/reasoning_splitter.h"

namespace tf::tools {
namespace {

using J = nlohmann::ordered_json;

struct Read {
  std::string reasoning;
  CollectedReply reply;
};

// The reply cut at `cuts`: reasoning first when the prompt opened it, then the answer through the DSML parser.
Read read(const std::string& text, bool thinking, const std::vector<std::size_t>& cuts) {
  ReasoningSplitter splitter(ReasoningMarkers{}, thinking, tool_call_openers(ToolFormat::Dsml));
  auto parser = make_tool_call_parser(ToolFormat::Dsml, {});
  std::vector<ReasoningSplitter::Part> parts;
  std::vector<ToolEvent> events;
  Read r;
  const auto drain = [&] {
    for (const auto& p : parts) {
      if (p.reasoning)
        r.reasoning += p.text;
      else
        parser->feed(p.text, events);
    }
    parts.clear();
  };
  std::size_t at = 0;
  for (std::size_t i = 0; i <= cuts.size(); ++i) {
    const std::size_t end = i < cuts.size() ? cuts[i] : text.size();
    splitter.feed(std::string_view(text).substr(at, end - at), parts);
    drain();
    at = end;
  }
  splitter.finish(parts);
  drain();
  parser->finish(events);
  r.reply = collect_tool_calls(events);
  return r;
}

TEST(DsmlCorpus, RepliesReadAsTheReferenceReadsThem) {
  std::ifstream f(TF_DSV4_CORPUS);
  std::stringstream ss;
  ss << f.rdbuf();
  const J corpus = J::parse(ss.str());
  const std::string eos = "<｜end▁of▁sentence｜>";
  int n = 0;
  for (const auto& c : corpus.at("parse")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    std::string text = c.at("text");
    ASSERT_EQ(text.substr(text.size() - eos.size()), eos);
    text.resize(text.size() - eos.size());  // the server stops at EOS; it is never text
    const J& want = c.at("expected");
    const bool thinking = c.at("thinking_mode") == "thinking";
    std::vector<std::size_t> bytes;
    for (std::size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
    for (const auto& cuts : {std::vector<std::size_t>{}, bytes}) {
      const Read r = read(text, thinking, cuts);
      EXPECT_EQ(r.reasoning, want.at("reasoning_content"));
      EXPECT_EQ(r.reply.content, want.at("content"));
      ASSERT_EQ(r.reply.calls.size(), want.at("tool_calls").size());
      for (std::size_t i = 0; i < r.reply.calls.size(); ++i) {
        EXPECT_EQ(r.reply.calls[i].name, want["tool_calls"][i].at("name"));
        EXPECT_EQ(r.reply.calls[i].arguments, want["tool_calls"][i].at("arguments"));
      }
    }
    ++n;
  }
  EXPECT_GE(n, 5);
}

// A call written before the reasoning was closed ends the reasoning (the block is an exit of the splitter) and is
// read as a call.
TEST(DsmlCorpus, ACallEndsUnclosedReasoning) {
  const std::string text =
      "Need the weather.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter "
      "name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  std::vector<std::size_t> bytes;
  for (std::size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  for (const auto& cuts : {std::vector<std::size_t>{}, bytes}) {
    const Read r = read(text, true, cuts);
    EXPECT_EQ(r.reasoning, "Need the weather.");
    EXPECT_EQ(r.reply.content, "");
    ASSERT_EQ(r.reply.calls.size(), 1u);
    EXPECT_EQ(r.reply.calls[0].arguments, R"({"city": "Paris"})");
  }
}

}  // namespace
}  // namespace tf::tools
