// DeepSeek-V4's prompt encoding (text/template/dsv4_encoding.h) against the reference encoder: every case of
// tests/conformance/templates/dsv4_corpus.json (scripts/golden/make_dsv4_corpus.py ran encoding_dsv4.py over
// them) rendered byte for byte, through the chat-template interface as the server calls it; and the inputs the
// reference would raise on, refused with the field named.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "text/template/chat_template.h"
#include "text/template/dsv4_encoding.h"
#include "text/template/py_json.h"

namespace tf {
namespace {

using J = nlohmann::ordered_json;

const J& corpus() {
  static const J c = [] {
    std::ifstream f(TF_DSV4_CORPUS);
    std::stringstream ss;
    ss << f.rdbuf();
    return J::parse(ss.str());
  }();
  return c;
}

ChatInput chat_input(const J& req) {
  ChatInput in;
  in.messages = req.at("messages");
  if (req.contains("tools")) in.tools = req["tools"];
  if (req.contains("chat_template_kwargs")) in.kwargs = req["chat_template_kwargs"];
  in.add_generation_prompt = req.value("add_generation_prompt", true);
  in.continue_final_message = req.value("continue_final_message", false);
  return in;
}

Dsv4Options options(const J& o) {
  Dsv4Options opts;
  opts.thinking = o.at("thinking_mode") == "thinking";
  opts.drop_thinking = o.value("drop_thinking", true);
  if (o.contains("reasoning_effort") && !o["reasoning_effort"].is_null()) opts.reasoning_effort = o["reasoning_effort"];
  return opts;
}

TEST(Dsv4Encoding, CorpusIsByteIdenticalWithTheReference) {
  const ChatTemplate t = ChatTemplate::builtin(BuiltinEncoding::DeepSeekV4);
  int chat = 0, encode = 0;
  for (const auto& c : corpus().at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const std::string expected = c.at("expected");
    if (c.at("kind") == "chat") {
      ChatInput in = chat_input(c.at("request"));
      EXPECT_EQ(t.render(in), expected);
      // The engine hands templates tool-call arguments parsed into objects (the Hugging Face convention).
      normalize_chat_messages(in.messages);
      EXPECT_EQ(t.render(in), expected) << "with arguments as objects";
      ++chat;
    } else {
      EXPECT_EQ(encode_dsv4_messages(c.at("messages"), options(c.at("options"))), expected);
      ++encode;
    }
  }
  EXPECT_GE(chat, 30);
  EXPECT_GE(encode, 10);
}

std::string refusal(const ChatInput& in) {
  try {
    const std::string out = encode_dsv4(in);
    ADD_FAILURE() << "rendered: " << out;
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Input);
    return e.what();
  }
  return {};
}

ChatInput with_call(const std::string& arguments) {
  ChatInput in;
  in.messages = J::parse(R"([{"role": "user", "content": "u"},
      {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": ""}}]}])");
  in.messages[1]["tool_calls"][0]["function"]["arguments"] = arguments;
  return in;
}

TEST(Dsv4Encoding, RefusesWhatTheReferenceRaisesOnNamingTheField) {
  ChatInput in;
  in.messages = J::parse(R"([{"role": "narrator", "content": "x"}])");
  EXPECT_EQ(refusal(in), "messages[0].role: unknown role 'narrator'");
  in.messages = J::parse(R"([{"role": "developer", "content": ""}])");
  EXPECT_EQ(refusal(in), "messages[0].content: a developer message needs content");
  in.messages = J::parse(R"([{"role": "user", "content": "x", "task": "poem"}])");
  EXPECT_NE(refusal(in).find("messages[0].task: must be one of"), std::string::npos);
  in.messages = J::parse(R"([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])");
  EXPECT_NE(refusal(in).find("messages[0].content[0]: DeepSeek-V4's encoding takes text parts only"),
            std::string::npos);
  in.messages = J::parse(R"([{"role": "user", "content": null}])");
  EXPECT_EQ(refusal(in), "messages[0].content: must be text");
  EXPECT_EQ(refusal(with_call("[1, 2]")),
            "messages[1].tool_calls[0].function.arguments: must be a JSON object (the reference reads its keys)");
  // What Python reads but our JSON values cannot hold exactly: refused, never rendered differently.
  EXPECT_NE(refusal(with_call(R"({"n": 123456789012345678901234567890})")).find("an integer past 64 bits"),
            std::string::npos);
  EXPECT_NE(refusal(with_call(R"({"n": NaN})")).find("NaN or Infinity"), std::string::npos);
  in = with_call("{}");
  in.kwargs = {{"reasoning_effort", "extreme"}};
  EXPECT_NE(refusal(in).find("reasoning_effort: must be one of"), std::string::npos);
  in.kwargs = {{"thinking", "yes"}};
  EXPECT_NE(refusal(in).find("chat_template_kwargs.thinking: must be true or false"), std::string::npos);
  in = with_call("{}");
  in.tools = J::parse(R"([{"type": "function"}])");
  EXPECT_NE(refusal(in).find("messages[0].tools[0]: needs \"function\""), std::string::npos);
  in = with_call("{}");
  in.messages.erase(1);
  in.continue_final_message = true;
  EXPECT_EQ(refusal(in), "continue_final_message: the final message must be the assistant's");
}

TEST(Dsv4Encoding, ErrorsNameTheCallersMessageAfterToolMerging) {
  // Three tool results fold into one user turn: the broken assistant message is still messages[5].
  ChatInput in;
  in.messages = J::parse(R"([{"role": "user", "content": "u"},
      {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "a", "content": "1"}, {"role": "tool", "tool_call_id": "a", "content": "2"},
      {"role": "tool", "tool_call_id": "a", "content": "3"}, {"role": "assistant", "content": 5}])");
  EXPECT_EQ(refusal(in), "messages[5].content: must be text");
}

TEST(Dsv4Encoding, PythonJsonNumbersAndStrings) {
  EXPECT_EQ(py_json_dumps(J::parse(R"({"a": [1.0, 1e-05, 1e22, -0.0, 0.1, 18446744073709551615], "é": "\u0001\"/"})")),
            "{\"a\": [1.0, 1e-05, 1e+22, -0.0, 0.1, 18446744073709551615], \"é\": \"\\u0001\\\"/\"}");
  EXPECT_FALSE(py_json_loads("{\"a\": }").has_value());
  EXPECT_EQ(py_json_loads(R"({"a": 1, "b": 2, "a": 3})")->dump(), R"({"a":3,"b":2})");  // last value, first place
}

TEST(Dsv4Encoding, LoadsForArchitecturesThatShipNoTemplate) {
  EXPECT_EQ(builtin_encoding_for_architecture("deepseek_v4"), BuiltinEncoding::DeepSeekV4);
  EXPECT_EQ(builtin_encoding_for_architecture("deepseek4"), BuiltinEncoding::DeepSeekV4);
  EXPECT_FALSE(builtin_encoding_for_architecture("deepseek_v3").has_value());
  const ChatTemplate t = load_chat_template("", "builtin:deepseek_v4");
  EXPECT_EQ(t.builtin_encoding(), BuiltinEncoding::DeepSeekV4);
  // A checkpoint directory: config.json's model_type chooses it when no template is there; a template wins.
  const auto dir = std::filesystem::temp_directory_path() / ("tf_dsv4_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "deepseek_v4"})";
  EXPECT_EQ(load_chat_template(dir.string()).builtin_encoding(), BuiltinEncoding::DeepSeekV4);
  std::ofstream(dir / "chat_template.jinja") << "{{ messages[0].content }}";
  EXPECT_FALSE(load_chat_template(dir.string()).builtin_encoding().has_value());
  std::filesystem::remove(dir / "chat_template.jinja");
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen3_5"})";
  EXPECT_THROW(load_chat_template(dir.string()), TemplateError);  // no template, no builtin for it
  std::filesystem::remove_all(dir);
  try {
    load_chat_template("", "builtin:deepseek_v9");
    ADD_FAILURE() << "loaded an unknown builtin";
  } catch (const TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("no such builtin encoding"), std::string::npos);
  }
}

}  // namespace
}  // namespace tf
