// The reasoning splitter: <think> blocks and Gemma 4's channel, a block the prompt opened, a block a tool
// call ends, and the same parts however the text is split.
#include "text/tool_calls/reasoning_splitter.h"

#include <gtest/gtest.h>

#include "text/tool_calls/tool_call_parser.h"

namespace tf::tools {
namespace {

using Part = ReasoningSplitter::Part;

std::vector<Part> merge(const std::vector<Part>& parts) {
  std::vector<Part> out;
  for (const auto& p : parts) {
    if (!out.empty() && out.back().reasoning == p.reasoning) out.back().text += p.text;
    else out.push_back(p);
  }
  return out;
}

std::vector<Part> split(const std::string& text, const std::vector<std::size_t>& cuts, const ReasoningMarkers& m,
                        bool inside, std::vector<std::string> exits = {}) {
  ReasoningSplitter s(m, inside, std::move(exits));
  std::vector<Part> out;
  std::size_t at = 0;
  for (const auto c : cuts) {
    s.feed(std::string_view(text).substr(at, c - at), out);
    at = c;
  }
  s.feed(std::string_view(text).substr(at), out);
  s.finish(out);
  return merge(out);
}

// The whole text gives `want`, and so does every split into two and into single bytes.
void check(const std::string& text, const std::vector<Part>& want, const ReasoningMarkers& m = {},
           bool inside = false, const std::vector<std::string>& exits = {}) {
  SCOPED_TRACE(text);
  EXPECT_EQ(split(text, {}, m, inside, exits), want);
  for (std::size_t k = 1; k < text.size(); ++k) ASSERT_EQ(split(text, {k}, m, inside, exits), want) << k;
  std::vector<std::size_t> bytes;
  for (std::size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  ASSERT_EQ(split(text, bytes, m, inside, exits), want);
}

TEST(ReasoningSplitter, SplitsAThinkBlockFromTheAnswer) {
  check("<think>\nLet me think.\nYes.\n</think>\n\nThe answer is 4.", {{true, "Let me think.\nYes."}, {false, "The answer is 4."}});
  check("  <think>x</think>y", {{true, "x"}, {false, "y"}});
}

TEST(ReasoningSplitter, OnlyABlockAtTheStartIsReasoning) {
  check("Use <think> tags.", {{false, "Use <think> tags."}});
  check("<thinking>", {{false, "<thinking>"}});
  check("<thi", {{false, "<thi"}});
}

TEST(ReasoningSplitter, APromptThatOpenedTheBlockStartsInside) {
  check("step one\n</think>\n\nDone.", {{true, "step one"}, {false, "Done."}}, {}, true);
  check("never closed  ", {{true, "never closed"}}, {}, true);
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", {}));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", {}));
}

TEST(ReasoningSplitter, AToolCallEndsAnUnclosedBlock) {
  check("<think>I should call it.\n<tool_call>\n{\"name\": \"f\"}</tool_call>",
        {{true, "I should call it."}, {false, "<tool_call>\n{\"name\": \"f\"}</tool_call>"}}, {}, false,
        tool_call_openers(ToolFormat::Hermes));
}

TEST(ReasoningSplitter, Gemma4Channel) {
  const auto m = detect_reasoning_markers("{{ '<|channel>thought\\n' }}...<channel|>");
  EXPECT_EQ(m.open, "<|channel>thought");
  check("<|channel>thought\nhmm\n<channel|>Hello.", {{true, "hmm"}, {false, "Hello."}}, m);
}

}  // namespace
}  // namespace tf::tools
