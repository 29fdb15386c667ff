// The chat-template API: inputs as transformers passes them, template selection, loading from model
// files, and input normalization.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "../byte_builder.h"
#include "test_util.h"

namespace tf {
namespace {

using J = nlohmann::ordered_json;
namespace fs = std::filesystem;

const char* kChatml =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

ChatInput user(const std::string& text) {
  ChatInput in;
  in.messages = J::array({{{"role", "user"}, {"content", text}}});
  return in;
}

TEST(ChatTemplate, RendersMessagesAndGenerationPrompt) {
  const ChatTemplate t(kChatml);
  ChatInput in = user("hi");
  EXPECT_EQ(t.render(in), "<|im_start|>user\nhi<|im_end|>\n");
  in.add_generation_prompt = true;
  EXPECT_EQ(t.render(in), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, SpecialTokensAreVariablesThatKwargsOverride) {
  const ChatTemplate t("{{ bos_token }}{{ eos_token }}|{{ unk_token is defined }}|{{ enable_thinking }}",
                       J{{"bos_token", "<s>"}, {"eos_token", "</s>"}});
  ChatInput in = user("x");
  EXPECT_EQ(t.render(in), "<s></s>|False|");
  in.kwargs = {{"eos_token", "<|end|>"}, {"enable_thinking", false}};
  EXPECT_EQ(t.render(in), "<s><|end|>|False|False");
}

TEST(ChatTemplate, ToolsAndDocumentsAreNoneWhenAbsent) {
  const ChatTemplate t("{{ tools is none }}|{{ tools is defined }}|{{ documents is none }}|{{ tools|length if tools else 0 }}");
  ChatInput in = user("x");
  EXPECT_EQ(t.render(in), "True|True|True|0");
  in.tools = J::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  EXPECT_EQ(t.render(in), "False|True|True|1");
}

TEST(ChatTemplate, KwargsCannotReplaceTheFixedVariables) {
  const ChatTemplate t("x");
  ChatInput in = user("x");
  in.kwargs = {{"messages", J::array()}};
  try {
    t.render(in);
    ADD_FAILURE() << "no error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Input);
  }
}

TEST(ChatTemplate, NamedTemplatesPickToolUseWhenToolsAreGiven) {
  const ChatTemplate t(std::vector<std::pair<std::string, std::string>>{{"default", "D"}, {"tool_use", "T"}, {"rag", "R"}});
  ChatInput in = user("x");
  EXPECT_EQ(t.render(in), "D");
  in.tools = J::array();
  EXPECT_EQ(t.render(in), "T");
  in.template_name = "rag";
  EXPECT_EQ(t.render(in), "R");
  in.template_name = "nope";
  EXPECT_THROW(t.render(in), TemplateError);
  const ChatTemplate no_default(std::vector<std::pair<std::string, std::string>>{{"a", "A"}, {"b", "B"}});
  EXPECT_THROW(no_default.render(user("x")), TemplateError);
}

TEST(ChatTemplate, ContinueFinalMessageCutsAfterTheLastMessage) {
  const ChatTemplate t(kChatml);
  ChatInput in;
  in.messages = J::parse(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "The answer is  "}])");
  in.continue_final_message = true;
  EXPECT_EQ(t.render(in), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nThe answer is  ");
  in.add_generation_prompt = true;
  EXPECT_THROW(t.render(in), TemplateError);
}

TEST(ChatTemplate, NormalizeParsesJsonStringArguments) {
  J messages = J::parse(R"([{"role": "assistant", "tool_calls": [
      {"function": {"name": "a", "arguments": "{\"x\": 1, \"b\": [true]}"}},
      {"function": {"name": "b", "arguments": "not json"}},
      {"function": {"name": "c", "arguments": "[1, 2]"}},
      {"function": {"name": "d", "arguments": {"already": "object"}}}]}])");
  normalize_chat_messages(messages);
  const auto& calls = messages[0]["tool_calls"];
  EXPECT_EQ(calls[0]["function"]["arguments"], J::parse(R"({"x": 1, "b": [true]})"));
  EXPECT_EQ(calls[0]["function"]["arguments"].begin().key(), "x");  // key order kept
  EXPECT_EQ(calls[1]["function"]["arguments"], "not json");
  EXPECT_EQ(calls[2]["function"]["arguments"], "[1, 2]");
  EXPECT_EQ(calls[3]["function"]["arguments"]["already"], "object");
}

TEST(ChatTemplate, ParsesTemplateTimes) {
  auto t = parse_template_time("2024-02-29");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->tm_wday, 4);  // a Thursday
  EXPECT_EQ(t->tm_yday, 59);
  t = parse_template_time("2026-03-14T15:09:26");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->tm_hour, 15);
  EXPECT_EQ(t->tm_sec, 26);
  EXPECT_FALSE(parse_template_time("2026-02-30").has_value());
  EXPECT_FALSE(parse_template_time("2026-03-14X").has_value());
  EXPECT_FALSE(parse_template_time("yesterday").has_value());
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tf_template_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name, std::ios::binary) << text;
  }

 private:
  fs::path path_;
};

TEST(LoadChatTemplate, HuggingFaceDirectoryForms) {
  TempDir d;
  d.write("tokenizer_config.json",
          R"({"bos_token": {"content": "<s>", "special": true}, "eos_token": "</s>", "pad_token": null,
              "additional_special_tokens": ["<x>"], "chat_template": "CFG {{ bos_token }}{{ pad_token is defined }}{{ additional_special_tokens }}"})");
  EXPECT_EQ(load_chat_template(d.path().string()).render(user("x")), "CFG <s>False['<x>']");
  d.write("chat_template.jinja", "JINJA {{ eos_token }}");  // the .jinja file wins
  EXPECT_EQ(load_chat_template(d.path().string()).render(user("x")), "JINJA </s>");
  d.write("override.jinja", "OVERRIDE {{ eos_token }}");
  EXPECT_EQ(load_chat_template(d.path().string(), (d.path() / "override.jinja").string()).render(user("x")), "OVERRIDE </s>");
}

TEST(LoadChatTemplate, NamedListInTokenizerConfig) {
  TempDir d;
  d.write("tokenizer_config.json",
          R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]})");
  const ChatTemplate t = load_chat_template(d.path().string());
  EXPECT_EQ(t.names(), (std::vector<std::string>{"default", "tool_use"}));
  ChatInput in = user("x");
  in.tools = J::array();
  EXPECT_EQ(t.render(in), "T");
}

TEST(LoadChatTemplate, MissingTemplateIsAnInputError) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  try {
    load_chat_template(d.path().string());
    ADD_FAILURE() << "no error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Input);
  }
  EXPECT_THROW(load_chat_template((d.path() / "nope").string()), TemplateError);
}

TEST(LoadChatTemplate, GgufTemplateAndSpecialTokens) {
  test::ByteBuilder b;
  b.raw("GGUF").put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(5);
  b.gguf_string("general.architecture").put<std::uint32_t>(8).gguf_string("llama");
  b.gguf_string("tokenizer.chat_template").put<std::uint32_t>(8).gguf_string("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}");
  b.gguf_string("tokenizer.ggml.tokens").put<std::uint32_t>(9).put<std::uint32_t>(8).put<std::uint64_t>(3);
  b.gguf_string("<unk>").gguf_string("<|start|>").gguf_string("<|end|>");
  b.gguf_string("tokenizer.ggml.bos_token_id").put<std::uint32_t>(4).put<std::uint32_t>(1);
  b.gguf_string("tokenizer.ggml.eos_token_id").put<std::uint32_t>(4).put<std::uint32_t>(2);
  TempDir d;
  d.write("m.gguf", std::string(b.bytes().begin(), b.bytes().end()));
  const ChatTemplate t = load_chat_template((d.path() / "m.gguf").string());
  EXPECT_EQ(t.render(user("hey")), "<|start|>hey<|end|>");
  EXPECT_EQ(t.special_tokens(), J({{"bos_token", "<|start|>"}, {"eos_token", "<|end|>"}}));
}

}  // namespace
}  // namespace tf
