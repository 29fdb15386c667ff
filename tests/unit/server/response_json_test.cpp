// Response objects, stream chunks, events and error envelopes in OpenAI's shapes.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/chat_response.h"
#include "server/completion_response.h"
#include "server/json_fields.h"
#include "server/openai_ids.h"
#include "server/responses_response.h"
#include "server/sse.h"
#include "server/usage_json.h"

namespace tf::server {
namespace {

using json = nlohmann::ordered_json;

GenerationResult result(FinishReason f, std::int64_t prompt, std::int64_t completion, std::int64_t cached = 0) {
  GenerationResult r;
  r.finish = f;
  r.prompt_tokens = prompt;
  r.completion_tokens = completion;
  r.cached_tokens = cached;
  return r;
}

const ReplyMeta kMeta{"chatcmpl-1", "smol", 1700000000, "fp_x"};

// The events of an SSE text as (event name or "", data) pairs.
std::vector<std::pair<std::string, std::string>> events(const std::string& sse) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 0;
  while (at < sse.size()) {
    const auto end = sse.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "unterminated event";
    if (end == std::string::npos) break;
    std::string block = sse.substr(at, end - at), name, data;
    if (block.rfind("event: ", 0) == 0) {
      const auto nl = block.find('\n');
      name = block.substr(7, nl - 7);
      block = block.substr(nl + 1);
    }
    EXPECT_EQ(block.rfind("data: ", 0), 0u) << block;
    EXPECT_EQ(block.find('\n'), std::string::npos) << "data must be one line";
    out.emplace_back(name, block.substr(6));
    at = end + 2;
  }
  return out;
}

TEST(Usage, CompletionAndResponsesShapes) {
  auto r = result(FinishReason::Length, 10, 5, 3);
  r.drafted = 6;
  r.accepted = 4;
  r.rounds = 2;
  EXPECT_EQ(completion_usage(r), (json{{"prompt_tokens", 10},
                                       {"completion_tokens", 5},
                                       {"total_tokens", 15},
                                       {"prompt_tokens_details", {{"cached_tokens", 3}}},
                                       {"tensorfold", {{"drafted", 6}, {"accepted", 4}, {"rounds", 2}}}}));
  const auto u = responses_usage(r);
  EXPECT_EQ(u["input_tokens"], 10);
  EXPECT_EQ(u["output_tokens"], 5);
  EXPECT_EQ(u["total_tokens"], 15);
  EXPECT_EQ(u["input_tokens_details"]["cached_tokens"], 3);
  EXPECT_EQ(u["output_tokens_details"]["reasoning_tokens"], 0);
  EXPECT_EQ(u["tensorfold"]["accepted"], 4);
  EXPECT_STREQ(openai_finish_reason(FinishReason::Length), "length");
  EXPECT_STREQ(openai_finish_reason(FinishReason::Stop), "stop");
}

TEST(ChatResponse, Completion) {
  const auto j = chat_completion(kMeta, {{"role", "assistant"}, {"content", "Hello"}}, "stop",
                                 result(FinishReason::Stop, 4, 2));
  EXPECT_EQ(j["id"], "chatcmpl-1");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "smol");
  EXPECT_EQ(j["system_fingerprint"], "fp_x");
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["total_tokens"], 6);
}

TEST(ChatResponse, Chunks) {
  const auto first = chat_chunk(kMeta, {{"role", "assistant"}, {"content", ""}}, nullptr, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  EXPECT_FALSE(chat_chunk(kMeta, {{"content", "x"}}, nullptr, false).contains("usage"));
  const auto last = chat_chunk(kMeta, json::object(), "length", false);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  const auto usage = chat_usage_chunk(kMeta, result(FinishReason::Length, 3, 4));
  EXPECT_TRUE(usage["choices"].is_array() && usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
}

TEST(CompletionResponse, ObjectAndChunks) {
  const auto j = text_completion(kMeta, "once", result(FinishReason::Length, 2, 1));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "once");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(text_completion_chunk(kMeta, "a", nullptr, false)["choices"][0]["text"], "a");
  EXPECT_TRUE(text_completion_usage_chunk(kMeta, result(FinishReason::Stop, 1, 1))["choices"].empty());
}

ResponseMeta response_meta() {
  ResponseMeta m;
  m.id = "resp_1";
  m.message_id = "msg_1";
  m.model = "smol";
  m.created_at = 1700000000;
  m.instructions = "be nice";
  m.max_output_tokens = 8;
  m.temperature = 0.5;
  return m;
}

TEST(ResponsesResponse, CompletedAndIncomplete) {
  const auto done = finished_response(response_meta(), "Hi", result(FinishReason::Stop, 5, 1));
  EXPECT_EQ(done["object"], "response");
  EXPECT_EQ(done["status"], "completed");
  EXPECT_TRUE(done["incomplete_details"].is_null());
  EXPECT_TRUE(done["error"].is_null());
  EXPECT_EQ(done["instructions"], "be nice");
  EXPECT_EQ(done["max_output_tokens"], 8);
  EXPECT_EQ(done["temperature"], 0.5);
  EXPECT_EQ(done["output"][0]["type"], "message");
  EXPECT_EQ(done["output"][0]["id"], "msg_1");
  EXPECT_EQ(done["output"][0]["role"], "assistant");
  EXPECT_EQ(done["output"][0]["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0], (json{{"type", "output_text"}, {"text", "Hi"},
                                                  {"annotations", json::array()}, {"logprobs", json::array()}}));
  EXPECT_EQ(done["usage"]["input_tokens"], 5);
  EXPECT_TRUE(done["parallel_tool_calls"].is_boolean());
  EXPECT_TRUE(done["tools"].is_array());
  const auto cut = finished_response(response_meta(), "Hi", result(FinishReason::Length, 5, 8));
  EXPECT_EQ(cut["status"], "incomplete");
  EXPECT_EQ(cut["incomplete_details"]["reason"], "max_output_tokens");
}

TEST(ResponsesResponse, StreamEventsInOrderWithSequenceNumbers) {
  ResponseEvents ev(response_meta());
  json final_response;
  std::string sse = ev.opening();  // one call per statement: the numbering follows the calls
  sse += ev.delta("H");
  sse += ev.delta("i");
  sse += ev.closing("Hi", result(FinishReason::Stop, 5, 2), final_response);
  const auto list = events(sse);
  const std::vector<std::string> want = {
      "response.created",          "response.in_progress",       "response.output_item.added",
      "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.completed"};
  ASSERT_EQ(list.size(), want.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto data = json::parse(list[i].second);
    EXPECT_EQ(list[i].first, want[i]);
    EXPECT_EQ(data["type"], want[i]);
    EXPECT_EQ(data["sequence_number"], static_cast<int>(i));
  }
  EXPECT_EQ(json::parse(list[0].second)["response"]["status"], "in_progress");
  EXPECT_EQ(json::parse(list[4].second)["delta"], "H");
  EXPECT_EQ(json::parse(list[4].second)["item_id"], "msg_1");
  EXPECT_EQ(json::parse(list[6].second)["text"], "Hi");
  EXPECT_EQ(json::parse(list[9].second)["response"]["usage"]["output_tokens"], 2);
  EXPECT_EQ(final_response["status"], "completed");

  ResponseEvents cut(response_meta());
  std::string cut_sse = cut.opening();
  cut_sse += cut.closing("", result(FinishReason::Length, 1, 8), final_response);
  const auto cut_list = events(cut_sse);
  EXPECT_EQ(cut_list.back().first, "response.incomplete");
  const auto err = events(ResponseEvents(response_meta()).error("boom"));
  EXPECT_EQ(json::parse(err[0].second)["code"], "server_error");
}

TEST(Sse, DataLinesAndDone) {
  EXPECT_EQ(sse_data({{"a", "x\ny"}}), "data: {\"a\":\"x\\ny\"}\n\n");
  EXPECT_EQ(sse_event("e", {{"a", 1}}), "event: e\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

TEST(Json, DumpReplacesInvalidUtf8) {
  EXPECT_EQ(dump_json(json("a\xff")), "\"a\xEF\xBF\xBD\"");
}

TEST(Errors, Envelope) {
  const auto e = model_not_found("gpt-9");
  EXPECT_EQ(e.status(), 404);
  const auto j = error_envelope(e);
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("gpt-9"), std::string::npos);
  const auto plain = error_envelope(server_error("x"));
  EXPECT_TRUE(plain["error"]["param"].is_null());
  EXPECT_TRUE(plain["error"]["code"].is_null());
  for (int status : {400, 404, 405, 413, 500, 503}) {
    const auto env = envelope_for_status(status);
    EXPECT_TRUE(env["error"]["message"].is_string()) << status;
    EXPECT_TRUE(env["error"].contains("param") && env["error"].contains("code")) << status;
  }
}

TEST(Errors, ContextLengthMessage) {
  const auto e = context_length_exceeded(2048, 2000, 100, true, "messages", "max_tokens");
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "context_length_exceeded");
  EXPECT_EQ(std::string(e.what()).rfind("This server's maximum context length is 2048 tokens", 0), 0u);
  EXPECT_NE(std::string(e.what()).find("2100"), std::string::npos);
  const auto p = context_length_exceeded(2048, 3000, 0, false, "prompt", "max_tokens");
  EXPECT_EQ(p.param(), "prompt");
  EXPECT_EQ(std::string(p.what()).rfind("This server's maximum context length is 2048 tokens", 0), 0u);
}

TEST(Ids, PrefixAndRandomness) {
  const auto a = random_id("chatcmpl-"), b = random_id("chatcmpl-");
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 9u + 24u);
  EXPECT_NE(a, b);
  EXPECT_EQ(random_id("resp_", 32).size(), 37u);
}

}  // namespace
}  // namespace tf::server
