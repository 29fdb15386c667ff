// The lazy call grammar's openings: a token that completes a call's trigger is held to the call's grammar too.
#include "engine/grammar_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "text/tool_calls/call_grammar.h"

namespace tf {
namespace {

const tools::ToolSpec kTool{"f",
                            nlohmann::ordered_json::parse(
                                R"({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})")};

// Which of `words` the lazy constraint of `format` masks after the words `generated`.
std::vector<std::string> masked(tools::ToolFormat format, const std::vector<std::string>& words,
                                const std::vector<std::int32_t>& generated) {
  const auto constraint = make_grammar_constraint(
      token_vocabulary(words), tools::tool_call_grammar(format, {kTool}, false), {}, {}, tools::call_triggers(format));
  std::vector<float> row(words.size(), 0.0f);
  constraint->mask(generated, row);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < words.size(); ++i)
    if (std::isinf(row[i])) out.push_back(words[i]);
  return out;
}

TEST(LazyCallGrammar, ATokenThatCompletesATriggerMustGoOnAsTheCall) {
  const std::vector<std::string> words = {
      "<tool_call>", "<tool_call>{",    "<tool_call>`", "<tool", "_call>", "_call>`",
      "_call>\n{",   "hi <tool_call>x", "hi",           "`",     "{"};
  // Nothing generated: whole triggers with what follows them in the token; text is free.
  EXPECT_EQ(masked(tools::ToolFormat::Hermes, words, {}),
            (std::vector<std::string>{"<tool_call>`", "hi <tool_call>x"}));
  // After a trigger's first part: the tokens that complete it and leave the call's syntax.
  EXPECT_EQ(masked(tools::ToolFormat::Hermes, words, {8, 3}),
            (std::vector<std::string>{"<tool_call>`", "_call>`", "hi <tool_call>x"}));
  // Once the trigger is written, the grammar holds the call: all but "{".
  EXPECT_EQ(masked(tools::ToolFormat::Hermes, words, {0}).size(), words.size() - 1);
}

TEST(LazyCallGrammar, ATriggerThatCountsOnlyAtTheStartIsHeldOnlyThere) {
  // Llama 3 JSON: `{"name"` opens a call at the reply's start only; later it is text.
  const std::vector<std::string> words = {"{\"name\"", "{\"name\": \"f\"", "{\"name\"x", "{", "\"name\"x", " ", "a"};
  EXPECT_EQ(masked(tools::ToolFormat::Llama3Json, words, {}), (std::vector<std::string>{"{\"name\"x"}));
  EXPECT_EQ(masked(tools::ToolFormat::Llama3Json, words, {5, 3}), (std::vector<std::string>{"\"name\"x"}));
  EXPECT_TRUE(masked(tools::ToolFormat::Llama3Json, words, {6, 3}).empty());
}

}  // namespace
}  // namespace tf
