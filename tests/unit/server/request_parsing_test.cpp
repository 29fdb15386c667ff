// Request bodies: JSON reading rules and each endpoint's parsing and validation.
#include <gtest/gtest.h>

#include <limits>

#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/completion_request.h"
#include "server/json_fields.h"
#include "server/messages_request.h"
#include "server/responses_request.h"

namespace tf::server {
namespace {

using json = nlohmann::ordered_json;

// Runs `f`, expecting an ApiError; returns it for inspection.
template <class F>
ApiError expect_error(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an ApiError";
  return ApiError(0, "", "");
}

json chat(json extra = json::object()) {
  json body = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  body.update(extra);
  return body;
}

TEST(JsonBody, ParsesAnObject) { EXPECT_EQ(parse_json_body(R"({"a": 1})")["a"], 1); }

TEST(JsonBody, RefusesMalformedEmptyAndNonObjects) {
  for (const char* body : {"{", "", "   ", "[1,2]", "\"text\"", "42", "{\"a\": }", "{\"a\": NaN}"}) {
    const auto e = expect_error([&] { parse_json_body(body); });
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.type(), "invalid_request_error") << body;
  }
}

TEST(JsonBody, RefusesDeepNestingBeforeParsing) {
  std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(expect_error([&] { parse_json_body(deep); }).status(), 400);
  // Brackets inside strings do not count.
  EXPECT_NO_THROW(parse_json_body("{\"a\": \"" + std::string(1000, '[') + "\"}"));
}

TEST(JsonBody, RefusesInvalidUtf8) {
  EXPECT_EQ(expect_error([] { parse_json_body("{\"a\": \"\xff\xfe\"}"); }).status(), 400);
}

// JSON that breaks inside a field names it: a lone surrogate in a string, a number that overflows a double.
TEST(JsonBody, AValueThatDoesNotParseNamesItsField) {
  EXPECT_EQ(expect_error([] { parse_json_body(R"({"messages": [{"role": "user", "content": "a\ud800b"}]})"); }).param(),
            "messages[0].content");
  EXPECT_EQ(expect_error([] { parse_json_body(R"({"model": "m", "temperature": 1e999})"); }).param(), "temperature");
  EXPECT_EQ(expect_error([] { parse_json_body(R"({"a": [1, 2, {"b": [0, 1e999]}]})"); }).param(), "a[2].b[1]");
  // Broken outside any value: no field to name.
  const auto e = expect_error([] { parse_json_body("{\"a\": 1,,}"); });
  EXPECT_TRUE(!e.param() || e.param()->empty());
}

TEST(ChatRequest, ContinueFinalMessageAndTrailingAssistants) {
  auto body = chat({{"continue_final_message", true}});
  body["messages"].push_back({{"role", "assistant"}, {"content", "It is"}});
  const auto r = parse_chat_request(body);
  EXPECT_TRUE(r.continue_final_message);
  EXPECT_FALSE(r.add_generation_prompt);
  body["add_generation_prompt"] = true;
  EXPECT_EQ(expect_error([&] { parse_chat_request(body); }).param(), "continue_final_message");
  body.erase("add_generation_prompt");
  body["messages"].push_back({{"role", "assistant"}, {"content", "more"}});
  EXPECT_EQ(expect_error([&] { check_trailing_assistants(parse_chat_request(body).messages); }).param(), "messages[2]");
}

TEST(MessagesRequest, ThinkingOfEarlierTurnsAndAnthropicsRanges) {
  const auto body = json::parse(R"({"model": "m", "max_tokens": 5, "messages": [
      {"role": "user", "content": "hi"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": ""},
                                        {"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "yo"}]},
      {"role": "user", "content": "and?"}]})");
  const auto r = parse_messages_request(body, false);
  EXPECT_EQ(r.chat.messages[1]["reasoning_content"], "hmm");
  EXPECT_EQ(r.chat.messages[1]["content"], "yo");
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, json>>{{"temperature", 1.5}, {"top_p", 2}, {"stop_sequences", "END"}}) {
    auto bad = body;
    bad[field] = value;
    EXPECT_EQ(expect_error([&] { parse_messages_request(bad, false); }).param(), field) << field;
  }
  auto first_assistant = body;
  first_assistant["messages"].erase(0);
  EXPECT_EQ(expect_error([&] { parse_messages_request(first_assistant, false); }).param(), "messages[0].role");
  auto temperature_one = body;
  temperature_one["temperature"] = 1;
  EXPECT_EQ(parse_messages_request(temperature_one, false).chat.sampling.temperature, 1.0f);
}

TEST(JsonFields, NumbersAreFiniteNonBooleanAndInRange) {
  const json o = {
      {"t", 0.5},    {"b", true}, {"s", "1"}, {"big", 3.0}, {"inf", std::numeric_limits<double>::infinity()},
      {"n", nullptr}};
  const JsonFields f(o);
  EXPECT_DOUBLE_EQ(*f.number("t", 0, 2), 0.5);
  EXPECT_FALSE(f.number("n", 0, 2).has_value());
  EXPECT_FALSE(f.number("absent", 0, 2).has_value());
  auto e = expect_error([&] { f.number("b", 0, 2); });
  EXPECT_EQ(e.param(), "b");
  EXPECT_EQ(e.code(), "invalid_type");
  EXPECT_NE(std::string(e.what()).find("boolean"), std::string::npos);
  EXPECT_EQ(expect_error([&] { f.number("s", 0, 2); }).code(), "invalid_type");
  EXPECT_EQ(expect_error([&] { f.number("big", 0, 2); }).code(), "invalid_value");
  EXPECT_EQ(expect_error([&] { f.number("inf", -1e308, 1e308); }).code(), "invalid_value");
}

TEST(JsonFields, IntegersMustBeIntegral) {
  const json o = {{"i", 7}, {"f", 7.0}, {"half", 7.5}, {"b", false}, {"neg", -3}, {"huge", 18446744073709551615ull}};
  const JsonFields f(o);
  EXPECT_EQ(*f.integer("i", 0, 10), 7);
  EXPECT_EQ(*f.integer("f", 0, 10), 7);
  EXPECT_EQ(expect_error([&] { f.integer("half", 0, 10); }).code(), "invalid_type");
  EXPECT_EQ(expect_error([&] { f.integer("b", 0, 10); }).code(), "invalid_type");
  EXPECT_EQ(expect_error([&] { f.integer("neg", 0, 10); }).code(), "invalid_value");
  EXPECT_EQ(expect_error([&] { f.integer("huge", 0, 10); }).code(), "invalid_value");
  EXPECT_EQ(*f.bits64("neg"), static_cast<std::uint64_t>(-3));
  EXPECT_EQ(*f.bits64("huge"), 18446744073709551615ull);
  EXPECT_EQ(expect_error([&] { f.bits64("half"); }).code(), "invalid_type");
}

TEST(ChatRequest, ReadsTheOpenAIFields) {
  const auto r = parse_chat_request(chat({{"max_completion_tokens", 5},
                                          {"max_tokens", 9},
                                          {"temperature", 0},
                                          {"top_p", 0.5},
                                          {"top_k", 12},
                                          {"min_p", 0.1},
                                          {"seed", 42},
                                          {"stop", "END"},
                                          {"stream", true},
                                          {"stream_options", {{"include_usage", true}}},
                                          {"n", 1},
                                          {"user", "u"},
                                          {"draft", false},
                                          {"chat_template_kwargs", {{"enable_thinking", false}}}}));
  EXPECT_EQ(*r.model, "m");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["content"], "hi");
  EXPECT_EQ(*r.sampling.max_tokens, 5);  // max_completion_tokens wins
  EXPECT_EQ(r.sampling.max_tokens_param, "max_completion_tokens");
  EXPECT_EQ(*r.sampling.temperature, 0.0f);
  EXPECT_EQ(*r.sampling.top_k, 12);
  EXPECT_EQ(*r.sampling.seed, 42u);
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"END"});
  EXPECT_FALSE(r.sampling.draft);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(*r.user, "u");
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
}

TEST(ChatRequest, NullsKeepDefaults) {
  const auto r = parse_chat_request(chat(
      {{"temperature", nullptr}, {"stop", nullptr}, {"n", nullptr}, {"stream_options", nullptr}, {"seed", nullptr}}));
  EXPECT_FALSE(r.sampling.temperature);
  EXPECT_TRUE(r.sampling.stop.empty());
  EXPECT_FALSE(r.sampling.seed);
  EXPECT_FALSE(r.sampling.max_tokens);
}

TEST(ChatRequest, ContentPartsAreJoinedAndDeveloperIsSystem) {
  const auto r = parse_chat_request(
      {{"messages",
        {{{"role", "developer"}, {"content", "be brief"}},
         {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}},
         {{"role", "assistant"},
          {"content", nullptr},
          {"tool_calls",
           json::array({{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}})}},
         {{"role", "tool"}, {"content", "42"}, {"tool_call_id", "c1"}}}}});
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  EXPECT_EQ(r.messages[2]["content"], "");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["id"], "c1");
  EXPECT_EQ(r.messages[3]["tool_call_id"], "c1");
  EXPECT_FALSE(r.model);
}

// image_url parts become the image placeholder where they stood (parts of such a message joined with nothing between,
// as Qwen's templates render them) and are collected in order, naming their field; whether images are served is
// decided later (chat_setup: --vision).
TEST(ChatRequest, ImagePartsAreCollectedInOrder) {
  const auto r = parse_chat_request(
      {{"messages",
        {{{"role", "user"},
          {"content",
           {{{"type", "text"}, {"text", "a"}},
            {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}, {"detail", "low"}}}},
            {{"type", "text"}, {"text", "b"}}}}},
         {{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "data:image/png;base64,BBBB"}}}}}}}});
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].param, "messages[0].content[1].image_url");
  EXPECT_EQ(r.images[0].url, "data:image/png;base64,AAAA");
  EXPECT_EQ(r.images[1].param, "messages[1].content[0].image_url");
  EXPECT_EQ(r.messages[0]["content"], std::string("a") + kImagePlaceholder + "b");
  EXPECT_EQ(r.messages[1]["content"], kImagePlaceholder);
}

// The Responses API's input_image parts and Anthropic's image blocks take the chat path: the same placeholder in
// the text (parts joined with nothing between them), the part collected in order, naming the API's own field.
TEST(ResponsesRequest, InputImagePartsAreCollectedInOrder) {
  const auto r = parse_responses_request(
      {{"input",
        {{{"role", "user"},
          {"content",
           {{{"type", "input_image"}, {"image_url", "data:image/png;base64,AAAA"}, {"detail", "auto"}},
            {{"type", "input_text"}, {"text", "Describe."}}}}}}}});
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_EQ(r.images[0].param, "input[0].content[0].image_url");
  EXPECT_EQ(r.images[0].url, "data:image/png;base64,AAAA");
  EXPECT_EQ(r.input[0]["content"], std::string(kImagePlaceholder) + "Describe.");
}

TEST(ResponsesRequest, RefusesBadImageParts) {
  const auto part = [](json p) { return json{{"input", {{{"role", "user"}, {"content", {std::move(p)}}}}}}; };
  const std::pair<json, std::string> cases[] = {
      {part({{"type", "input_image"}, {"image_url", "data:,"}, {"detail", "huge"}}), "input[0].content[0].detail"},
      {part({{"type", "input_image"}, {"file_id", "file-1"}}), "input[0].content[0].file_id"},
      {part({{"type", "input_image"}}), "input[0].content[0].image_url"},
      {part({{"type", "input_image"}, {"image_url", 5}}), "input[0].content[0].image_url"},
  };
  for (const auto& [body, param] : cases) {
    try {
      parse_responses_request(body);
      ADD_FAILURE() << body.dump();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), param) << body.dump();
    }
  }
}

TEST(MessagesRequest, ImageBlocksAreCollectedInOrder) {
  const auto r = parse_messages_request(
      {{"max_tokens", 4},
       {"system", "Be brief."},
       {"messages",
        {{{"role", "user"},
          {"content",
           {{{"type", "image"}, {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", "AAAA"}}}},
            {{"type", "text"}, {"text", "Describe."}}}}},
         {{"role", "assistant"}, {"content", "A square."}},
         {{"role", "user"},
          {"content",
           {{{"type", "text"}, {"text", "And"}},
            {{"type", "text"}, {"text", "this?"}},
            {{"type", "image"}, {"source", {{"type", "url"}, {"url", "https://example.com/b.png"}}}}}}}}}},
      false);
  ASSERT_EQ(r.chat.images.size(), 2u);
  EXPECT_EQ(r.chat.images[0].param, "messages[0].content[0].source");
  EXPECT_EQ(r.chat.images[0].url, "data:image/png;base64,AAAA");
  EXPECT_EQ(r.chat.images[1].param, "messages[2].content[2].source");
  EXPECT_EQ(r.chat.images[1].url, "https://example.com/b.png");
  EXPECT_EQ(r.chat.messages[1]["content"], std::string(kImagePlaceholder) + "Describe.");
  EXPECT_EQ(r.chat.messages[3]["content"], std::string("Andthis?") + kImagePlaceholder);
}

TEST(MessagesRequest, RefusesBadImageBlocks) {
  const auto block = [](json b) {
    return json{{"max_tokens", 4}, {"messages", {{{"role", "user"}, {"content", {std::move(b)}}}}}};
  };
  const std::pair<json, std::string> cases[] = {
      {block({{"type", "image"}}), "messages[0].content[0].source"},
      {block({{"type", "image"}, {"source", {{"type", "base64"}, {"media_type", "image/gif"}, {"data", "R0lG"}}}}),
       "messages[0].content[0].source.media_type"},
      {block({{"type", "image"}, {"source", {{"type", "base64"}, {"media_type", "image/png"}}}}),
       "messages[0].content[0].source.data"},
      {block({{"type", "image"}, {"source", {{"type", "file"}, {"file_id", "f"}}}}),
       "messages[0].content[0].source.type"},
      {block({{"type", "image"}, {"source", {{"type", "url"}}}}), "messages[0].content[0].source.url"},
      {json{{"max_tokens", 4},
            {"messages",
             {{{"role", "user"}, {"content", "hi"}},
              {{"role", "assistant"},
               {"content", {{{"type", "image"}, {"source", {{"type", "url"}, {"url", "https://a.b/c.png"}}}}}}}}}},
       "messages[1].content[0].type"},
  };
  for (const auto& [body, param] : cases) {
    try {
      parse_messages_request(body, false);
      ADD_FAILURE() << body.dump();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), param) << body.dump();
    }
  }
}

TEST(ChatRequest, RefusesBadMessages) {
  struct Case {
    json body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"model", "m"}}, "messages"},
      {{{"messages", json::array()}}, "messages"},
      {{{"messages", "hi"}}, "messages"},
      {{{"messages", {"hi"}}}, "messages[0]"},
      {{{"messages", {{{"content", "hi"}}}}}, "messages[0].role"},
      {{{"messages", {{{"role", "wizard"}, {"content", "hi"}}}}}, "messages[0].role"},
      {{{"messages", {{{"role", "user"}}}}}, "messages[0].content"},
      {{{"messages", {{{"role", "user"}, {"content", 5}}}}}, "messages[0].content"},
      {{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", 5}}}}}}}},
       "messages[0].content[0].image_url.url"},
      {{{"messages", {{{"role", "user"}, {"content", {{{"type", "input_audio"}}}}}}}}, "messages[0].content[0].type"},
      {{{"messages", {{{"role", "user"}, {"content", {{{"type", "text"}}}}}}}}, "messages[0].content[0].text"},
  };
  for (const auto& c : cases) {
    const auto e = expect_error([&] { parse_chat_request(c.body); });
    EXPECT_EQ(e.status(), 400) << c.body.dump();
    EXPECT_EQ(e.param(), c.param) << c.body.dump();
  }
}

TEST(ChatRequest, RefusesWrongTypesAndRanges) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"temperature", true}}, "temperature"},
      {{{"temperature", "0.5"}}, "temperature"},
      {{{"temperature", 2.5}}, "temperature"},
      {{{"temperature", -0.1}}, "temperature"},
      {{{"top_p", 1.5}}, "top_p"},
      {{{"min_p", -1}}, "min_p"},
      {{{"top_k", 2.5}}, "top_k"},
      {{{"top_k", true}}, "top_k"},
      {{{"seed", 1.5}}, "seed"},
      {{{"seed", "1"}}, "seed"},
      {{{"max_tokens", 0}}, "max_tokens"},
      {{{"max_tokens", 3.5}}, "max_tokens"},
      {{{"max_completion_tokens", -1}}, "max_completion_tokens"},
      {{{"stream", 1}}, "stream"},
      {{{"stream_options", {{"include_usage", "yes"}}}}, "stream_options.include_usage"},
      {{{"stop", 5}}, "stop"},
      {{{"stop", {"a", 5}}}, "stop"},
      {{{"stop", ""}}, "stop"},
      {{{"n", 0}}, "n"},
      {{{"n", 129}}, "n"},
      {{{"n", true}}, "n"},
      {{{"model", 5}}, "model"},
      {{{"user", 5}}, "user"},
      {{{"draft", "no"}}, "draft"},
      {{{"chat_template_kwargs", "x"}}, "chat_template_kwargs"},
      {{{"logprobs", 1}}, "logprobs"},
      {{{"top_logprobs", 3}}, "top_logprobs"},
      {{{"logprobs", true}, {"top_logprobs", 21}}, "top_logprobs"},
      {{{"presence_penalty", 2.5}}, "presence_penalty"},
      {{{"frequency_penalty", -3}}, "frequency_penalty"},
      {{{"repetition_penalty", 0}}, "repetition_penalty"},
      {{{"logit_bias", {{"abc", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"-5", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"5", 101}}}}, "logit_bias.5"},
      {{{"logit_bias", {{"5", "1"}}}}, "logit_bias.5"},
      {{{"response_format", {{"type", "xml"}}}}, "response_format.type"},
      {{{"response_format", {{"type", "json_schema"}}}}, "response_format.json_schema"},
      {{{"response_format",
         {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "string"}, {"not", 1}}}}}}}},
       "response_format.json_schema.schema"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", {}}, {"strict", 1}}}}}},
       "response_format.json_schema.strict"},
      {{{"grammar", "root ::= nothing"}}, "grammar"},
      {{{"regex", "(?!a)"}}, "regex"},
      {{{"regex", "a"}, {"response_format", {{"type", "json_object"}}}}, "response_format"},
      {{{"tool_choice", "required"}}, "tool_choice"},
  };
  for (const auto& [extra, param] : cases) {
    const auto e = expect_error([&] { parse_chat_request(chat(extra)); });
    EXPECT_EQ(e.status(), 400) << extra.dump();
    EXPECT_EQ(e.param(), param) << extra.dump();
    EXPECT_EQ(e.type(), "invalid_request_error") << extra.dump();
  }
}

TEST(ChatRequest, AcceptsHarmlessDefaults) {
  EXPECT_NO_THROW(parse_chat_request(chat({{"logprobs", false},
                                           {"top_logprobs", 0},
                                           {"presence_penalty", 0},
                                           {"frequency_penalty", 0.0},
                                           {"logit_bias", json::object()},
                                           {"response_format", {{"type", "text"}}},
                                           {"tool_choice", "auto"},
                                           {"stop", json::array()},
                                           {"top_k", -1},
                                           {"seed", -5}})));
  EXPECT_EQ(*parse_chat_request(chat({{"top_k", -1}})).sampling.top_k, 0);
  const auto none = parse_chat_request(
      chat({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}}, {"tool_choice", "none"}}));
  EXPECT_EQ(none.tools.specs.size(), 1u);
  EXPECT_FALSE(none.tools.active());
}

TEST(ChatRequest, StructuredOutputCompilesToAGrammar) {
  EXPECT_FALSE(parse_chat_request(chat({{"response_format", {{"type", "text"}}}})).structured.grammar);
  const auto object = parse_chat_request(chat({{"response_format", {{"type", "json_object"}}}}));
  ASSERT_TRUE(object.structured.grammar);
  EXPECT_EQ(object.structured.kind, "json_object");
  const auto schema = parse_chat_request(
      chat({{"response_format",
             {{"type", "json_schema"},
              {"json_schema", {{"name", "n"}, {"strict", true}, {"schema", {{"type", "object"}}}}}}}}));
  ASSERT_TRUE(schema.structured.grammar);
  EXPECT_EQ(schema.structured.param, "response_format.json_schema.schema");
  EXPECT_EQ(parse_chat_request(chat({{"regex", "[0-9]+"}})).structured.kind, "regex");
  EXPECT_EQ(parse_chat_request(chat({{"grammar", "root ::= \"a\""}})).structured.kind, "grammar");
  const auto e = expect_error([&] {
    parse_chat_request(
        chat({{"response_format",
               {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "integer"}, {"multipleOf", 2}}}}}}}}));
  });
  EXPECT_NE(std::string(e.what()).find("'multipleOf'"), std::string::npos) << e.what();
}

TEST(ChatRequest, SamplingSurface) {
  const auto r = parse_chat_request(chat({{"n", 3},
                                          {"logprobs", true},
                                          {"top_logprobs", 5},
                                          {"presence_penalty", 0.5},
                                          {"frequency_penalty", -0.25},
                                          {"repetition_penalty", 1.3},
                                          {"logit_bias", {{"7", -100}, {"3", 2.5}}}}));
  EXPECT_EQ(r.sampling.n, 3);
  EXPECT_EQ(r.sampling.logprobs, 5);
  EXPECT_FLOAT_EQ(r.sampling.adjust.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.adjust.frequency_penalty, -0.25f);
  EXPECT_FLOAT_EQ(r.sampling.adjust.repetition_penalty, 1.3f);
  ASSERT_EQ(r.sampling.adjust.bias.size(), 2u);  // sorted by id
  EXPECT_EQ(r.sampling.adjust.bias[0], (std::pair<std::int32_t, float>{3, 2.5f}));
  EXPECT_EQ(r.sampling.adjust.bias[1], (std::pair<std::int32_t, float>{7, -100.0f}));
  EXPECT_EQ(parse_chat_request(chat({{"logprobs", true}})).sampling.logprobs, 0);
  EXPECT_EQ(parse_chat_request(chat(json::object())).sampling.logprobs, -1);
}

TEST(ChatRequest, StopListUpToSixteen) {
  EXPECT_EQ(parse_chat_request(chat({{"stop", {"a", "b"}}})).sampling.stop.size(), 2u);
  EXPECT_EQ(expect_error([] {
              parse_chat_request(chat({{"stop", json(std::vector<std::string>(17, "x"))}}));
            }).param(),
            "stop");
}

TEST(CompletionRequest, PromptForms) {
  auto text = [](const json& p) {
    return std::get<std::string>(parse_completion_request({{"prompt", p}}).prompts.at(0));
  };
  auto ids = [](const json& p) {
    return std::get<std::vector<std::int32_t>>(parse_completion_request({{"prompt", p}}).prompts.at(0));
  };
  const auto list = parse_completion_request({{"prompt", {"a", json::array({1, 2}), "b"}}}).prompts;
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(std::get<std::string>(list[2]), "b");
  EXPECT_EQ(std::get<std::vector<std::int32_t>>(list[1]), (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(text("Once"), "Once");
  EXPECT_EQ(text(json::array({"Once"})), "Once");
  EXPECT_EQ(ids(json::array({1, 2, 3})), (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(ids(json::array({json::array({4, 5})})), (std::vector<std::int32_t>{4, 5}));
}

TEST(CompletionRequest, RefusesBadPromptsAndUnsupportedOptions) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"model", "m"}}, "prompt"},
      {{{"prompt", 5}}, "prompt"},
      {{{"prompt", json::array()}}, "prompt"},
      {{{"prompt", {"a", 5}}}, "prompt"},
      {{{"prompt", {1, "b"}}}, "prompt"},
      {{{"prompt", {1, -2}}}, "prompt"},
      {{{"prompt", {1, 2.5}}}, "prompt"},
      {{{"prompt", {json::array()}}}, "prompt"},
      {{{"prompt", "x"}, {"max_tokens", 0}}, "max_tokens"},  // 0 only with echo (the prompt scored)
      {{{"prompt", "x"}, {"echo", true}, {"max_tokens", -1}}, "max_tokens"},
      {{{"prompt", "x"}, {"echo", true}, {"logprobs", 21}}, "logprobs"},
      {{{"prompt", "x"}, {"logprobs", 21}}, "logprobs"},
      {{{"prompt", "x"}, {"logprobs", true}}, "logprobs"},
      {{{"prompt", "x"}, {"suffix", "end"}}, "suffix"},
      {{{"prompt", "x"}, {"best_of", 2}, {"n", 3}}, "best_of"},
      {{{"prompt", "x"}, {"best_of", 2}, {"stream", true}}, "best_of"},
      {{{"prompt", "x"}, {"n", 0}}, "n"},
      {{{"prompt", json(std::vector<std::string>(129, "x"))}}, "prompt"},
      {{{"prompt", "x"}, {"max_tokens", true}}, "max_tokens"},
  };
  for (const auto& [body, param] : cases) {
    const auto e = expect_error([&] { parse_completion_request(body); });
    EXPECT_EQ(e.status(), 400) << body.dump();
    EXPECT_EQ(e.param(), param) << body.dump();
  }
  const auto r = parse_completion_request({{"prompt", "x"}, {"echo", true}, {"n", 2}, {"best_of", 3}});
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.sampling.n, 2);
  EXPECT_EQ(r.best_of, 3);
  EXPECT_EQ(r.sampling.logprobs, -1);
  EXPECT_EQ(parse_completion_request({{"prompt", "x"}, {"logprobs", 0}}).sampling.logprobs, 0);
  EXPECT_EQ(parse_completion_request({{"prompt", "x"}, {"n", 4}}).best_of, 4);
  // echo with logprobs scores the prompt; with max_tokens 0 nothing is generated.
  const auto scored = parse_completion_request({{"prompt", "x"}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}});
  EXPECT_TRUE(scored.echo);
  EXPECT_EQ(scored.sampling.logprobs, 2);
  EXPECT_EQ(scored.sampling.max_tokens, 0);
  EXPECT_EQ(parse_completion_request({{"prompt", "x"}, {"echo", true}, {"max_tokens", 3}}).sampling.max_tokens, 3);
  EXPECT_NO_THROW(parse_completion_request(
      {{"prompt", "x"}, {"echo", false}, {"logprobs", nullptr}, {"suffix", nullptr}, {"best_of", 1}}));
}

TEST(ResponsesRequest, InputStringAndItems) {
  auto r = parse_responses_request({{"input", "hi"}, {"instructions", "be nice"}, {"max_output_tokens", 7}});
  ASSERT_EQ(r.input.size(), 1u);
  EXPECT_EQ(r.input[0], (json{{"role", "user"}, {"content", "hi"}}));
  EXPECT_EQ(*r.instructions, "be nice");
  EXPECT_EQ(*r.sampling.max_tokens, 7);
  EXPECT_EQ(r.sampling.max_tokens_param, "max_output_tokens");
  EXPECT_TRUE(r.store);
  EXPECT_EQ(r.sampling.logprobs, -1);
  EXPECT_EQ(parse_responses_request({{"input", "hi"}, {"include", {"message.output_text.logprobs"}}}).sampling.logprobs,
            0);
  EXPECT_EQ(
      parse_responses_request({{"input", "hi"}, {"include", {"message.output_text.logprobs"}}, {"top_logprobs", 4}})
          .sampling.logprobs,
      4);
  EXPECT_EQ(
      parse_responses_request({{"input", "hi"}, {"include", json::array()}, {"top_logprobs", 0}}).sampling.logprobs,
      -1);

  r = parse_responses_request(
      {{"input",
        {{{"type", "message"}, {"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "a"}}}}},
         {{"role", "assistant"}, {"content", {{{"type", "output_text"}, {"text", "b"}}}}},
         {{"role", "developer"}, {"content", "c"}}}},
       {"store", false},
       {"previous_response_id", "resp_1"},
       {"metadata", {{"k", "v"}}}});
  ASSERT_EQ(r.input.size(), 3u);
  EXPECT_EQ(r.input[0]["content"], "a");
  EXPECT_EQ(r.input[1]["role"], "assistant");
  EXPECT_EQ(r.input[2]["role"], "system");
  EXPECT_FALSE(r.store);
  EXPECT_EQ(*r.previous_response_id, "resp_1");
  EXPECT_EQ(r.metadata["k"], "v");
}

TEST(ResponsesRequest, RefusesWhatItCannotServe) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json::object(), "input"},
      {{{"input", 3}}, "input"},
      {{{"input", json::array()}}, "input"},
      {{{"input", {{{"type", "function_call_output"}, {"call_id", "c"}}}}}, "input[0].output"},
      // input_image parts are read (ResponsesRequest.InputImagePartsAreCollectedInOrder); other media are not.
      {{{"input", {{{"role", "user"}, {"content", {{{"type", "input_file"}, {"file_id", "x"}}}}}}}},
       "input[0].content[0].type"},
      {{{"input", {{{"role", "tool"}, {"content", "x"}}}}}, "input[0].role"},
      {{{"input", "x"}, {"temperature", false}}, "temperature"},
      {{{"input", "x"}, {"max_output_tokens", 0}}, "max_output_tokens"},
      {{{"input", "x"}, {"store", "yes"}}, "store"},
      {{{"input", "x"}, {"tools", {{{"type", "web_search"}}}}}, "tools[0].type"},
      // A null or non-string type is a 400 naming it, not a server error (found by schemathesis).
      {{{"input", "x"}, {"tools", {{{"type", nullptr}, {"name", "f"}}}}}, "tools[0].type"},
      {{{"input", "x"}, {"tools", {{{"type", 3}, {"name", "f"}}}}}, "tools[0].type"},
      {{{"input", "x"}, {"tools", {"f"}}}, "tools[0]"},
      {{{"input", "x"}, {"tool_choice", {{"type", nullptr}}}}, "tool_choice.name"},
      {{{"input", "x"}, {"background", true}}, "background"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}}}}}}, "text.format.schema"},
      {{{"input", "x"},
        {"text", {{"format", {{"type", "json_schema"}, {"schema", {{"type", "object"}, {"minProperties", 1}}}}}}}},
       "text.format.schema"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "yaml"}}}}}}, "text.format.type"},
      {{{"input", "x"}, {"metadata", {{"k", 5}}}}, "metadata"},
      {{{"input", "x"}, {"include", {"file_search_call.results"}}}, "include"},
      {{{"input", "x"}, {"include", "message.output_text.logprobs"}}, "include"},
      {{{"input", "x"}, {"include", {3}}}, "include"},
      {{{"input", "x"}, {"top_logprobs", 2}}, "top_logprobs"},  // without include: nothing would carry them
      {{{"input", "x"}, {"include", {"message.output_text.logprobs"}}, {"top_logprobs", 21}}, "top_logprobs"},
  };
  for (const auto& [body, param] : cases) {
    const auto e = expect_error([&] { parse_responses_request(body); });
    EXPECT_EQ(e.status(), 400) << body.dump();
    EXPECT_EQ(e.param(), param) << body.dump();
  }
}

}  // namespace
}  // namespace tf::server
