// Tool calls and reasoning through /v1/chat/completions against the fake engine: the prompt a template
// without tool support gets, replies with calls (whole and streamed), tool_choice, parallel_tool_calls, the
// 400s for bad tool input, and reasoning split from the answer.
#include <gtest/gtest.h>
#include <httplib.h>

#include "fake_service.h"
#include "server/http_server.h"

namespace tf::server {
namespace {

using json = nlohmann::ordered_json;
using testing::FakeService;

ServerOptions options() {
  ServerOptions o;
  o.port = 0;
  o.names = {"smol", {}};
  o.default_max_tokens = 16;
  o.max_body_bytes = 1 << 20;
  return o;
}

struct Reply {
  int status = 0;
  json body;
  std::vector<json> chunks;  // streamed: the data payloads before [DONE]
};

Reply post(HttpServer& srv, const json& body) {
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = body.dump();
  httplib::Response res;
  srv.dispatch(req, res);
  Reply r;
  r.status = res.status;
  if (!res.content_provider_) {
    r.body = json::parse(res.body, nullptr, false);
    return r;
  }
  std::string raw;
  httplib::DataSink sink;
  sink.write = [&](const char* d, std::size_t n) {
    raw.append(d, n);
    return true;
  };
  sink.done = [] {};
  sink.is_writable = [] { return true; };
  res.content_provider_(0, 0, sink);
  res.content_provider_success_ = true;
  for (std::size_t at = 0; (at = raw.find("data: ", at)) != std::string::npos;) {
    const auto end = raw.find("\n\n", at);
    const auto data = raw.substr(at + 6, end - at - 6);
    if (data != "[DONE]") r.chunks.push_back(json::parse(data));
    at = end;
  }
  return r;
}

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}])");

json request(json extra = json::object()) {
  json body = {{"model", "smol"}, {"messages", json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}})},
               {"tools", kTools}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

class ChatTools : public ::testing::Test {
 protected:
  void SetUp() override {
    svc.context = 4096;  // room for the tool descriptions
    srv.set_service(&svc);
    svc.pieces = {"<tool_call>\n{\"name\": \"get_wea", "ther\", \"arguments\": {\"ci", "ty\": \"Paris\"}}\n</tool_call>",
                  "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"};
  }
  FakeService svc;
  HttpServer srv{options()};
};

TEST_F(ChatTools, AWholeReplyCarriesTheCallsAndFinishesWithToolCalls) {
  const auto r = post(srv, request());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const auto& choice = r.body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  const auto& calls = choice["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_NE(calls[0]["id"], calls[1]["id"]);
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(calls[1]["function"]["name"], "get_time");
  // The fake template knows no tools: the fallback block describes them in the system message.
  EXPECT_NE(svc.last_rendered.find("system: # Tools"), std::string::npos) << svc.last_rendered;
  EXPECT_NE(svc.last_rendered.find("\"name\":\"get_weather\""), std::string::npos) << svc.last_rendered;
  EXPECT_NE(svc.last_rendered.find("<tool_call>\n{\"name\": <function-name>"), std::string::npos);
  // tool_choice auto: the lazy call grammar (free text until a call opens).
  EXPECT_NE(svc.last_request().constraint, nullptr);
  EXPECT_FALSE(svc.last_triggers.empty());
}

TEST_F(ChatTools, AStreamSendsIdAndNameFirstThenArgumentsAsGenerated) {
  const auto r = post(srv, request({{"stream", true}}));
  ASSERT_EQ(r.status, 200);
  std::vector<json> deltas;
  for (const auto& c : r.chunks)
    if (c["choices"][0]["delta"].contains("tool_calls")) deltas.push_back(c["choices"][0]["delta"]["tool_calls"][0]);
  ASSERT_GE(deltas.size(), 4u);
  EXPECT_EQ(deltas[0]["index"], 0);
  EXPECT_EQ(deltas[0]["function"]["name"], "get_weather");
  EXPECT_EQ(deltas[0]["type"], "function");
  EXPECT_EQ(deltas[0]["id"].get<std::string>().rfind("call_", 0), 0u);
  std::string args0;
  int pieces0 = 0;
  for (const auto& d : deltas)
    if (d["index"] == 0 && !d.contains("id")) {
      args0 += d["function"]["arguments"].get<std::string>();
      ++pieces0;
    }
  EXPECT_GE(pieces0, 2) << "arguments were not streamed in pieces";
  EXPECT_EQ(json::parse(args0), json({{"city", "Paris"}}));
  EXPECT_EQ(r.chunks.back()["choices"][0]["finish_reason"], "tool_calls");
  for (const auto& c : r.chunks) {
    if (c["choices"][0]["delta"].contains("content")) {
      EXPECT_EQ(c["choices"][0]["delta"]["content"], "") << "call text leaked into content";
    }
  }
}

// Whether the call grammar the server built reads `text` to its end.
bool grammar_reads(const grammar::Grammar& g, const std::string& text) {
  grammar::GrammarMatcher m(g);
  return m.accepting(m.run(m.initial(), text));
}

TEST_F(ChatTools, ToolChoiceRequiredAndNamedHoldTheReplyToTheCallsGrammar) {
  ASSERT_EQ(post(srv, request({{"tool_choice", "required"}})).status, 200);
  EXPECT_NE(svc.last_request().constraint, nullptr);
  ASSERT_NE(svc.last_call_grammar, nullptr);
  EXPECT_TRUE(svc.last_triggers.empty()) << "a forced call is held from the reply's start";
  const auto& g = *svc.last_call_grammar;
  EXPECT_TRUE(
      grammar_reads(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(grammar_reads(g, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  // The schema holds the arguments: city is required and a string.
  EXPECT_FALSE(grammar_reads(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(
      grammar_reads(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n</tool_call>"));
  EXPECT_FALSE(grammar_reads(g, "<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>"));
  ASSERT_EQ(post(srv, request({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}})).status, 200);
  EXPECT_FALSE(
      grammar_reads(*svc.last_call_grammar,
                    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(
      grammar_reads(*svc.last_call_grammar, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
}

TEST_F(ChatTools, ToolChoiceAutoHoldsACallFromItsOpeningOn) {
  ASSERT_EQ(post(srv, request()).status, 200);
  ASSERT_NE(svc.last_call_grammar, nullptr);
  ASSERT_EQ(svc.last_triggers.size(), 1u);
  EXPECT_EQ(svc.last_triggers[0].text, "<tool_call>");
}

TEST_F(ChatTools, AStrictToolWithAnUnsupportedSchemaIsA400NamingIt) {
  auto body = request({{"tool_choice", "required"}});
  body["tools"][0]["function"]["strict"] = true;
  body["tools"][0]["function"]["parameters"] = json::parse(R"({"type": "object", "not": {}})");
  const auto r = post(srv, body);
  ASSERT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["param"], "tools[0].function.parameters");
  EXPECT_EQ(r.body["error"]["code"], "unsupported_schema_keyword");
  // Not strict: the call is held to any object instead.
  body["tools"][0]["function"].erase("strict");
  EXPECT_EQ(post(srv, body).status, 200);
}

TEST_F(ChatTools, ToolChoiceNoneHidesTheToolsAndReadsNoCalls) {
  const auto r = post(srv, request({{"tool_choice", "none"}}));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(svc.last_rendered.find("# Tools"), std::string::npos);
  EXPECT_FALSE(r.body["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop");
  EXPECT_NE(r.body["choices"][0]["message"]["content"].get<std::string>().find("<tool_call>"), std::string::npos);
}

TEST_F(ChatTools, ParallelToolCallsFalseKeepsTheFirstCall) {
  const auto r = post(srv, request({{"parallel_tool_calls", false}}));
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.body["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(r.body["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_weather");
}

TEST_F(ChatTools, AToolTurnInTheHistoryIsWrittenForATemplateWithoutTools) {
  auto body = request();
  body["messages"].push_back(json::parse(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
      "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]})"));
  body["messages"].push_back(json::parse(R"({"role": "tool", "tool_call_id": "call_1", "content": "18 C"})"));
  ASSERT_EQ(post(srv, body).status, 200);
  EXPECT_NE(svc.last_rendered.find("assistant: <tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n"
                                   "</tool_call>\n"),
            std::string::npos)
      << svc.last_rendered;
  EXPECT_NE(svc.last_rendered.find("user: <tool_response>\n18 C\n</tool_response>"), std::string::npos);
}

TEST_F(ChatTools, BadToolInputIsA400NamingTheField) {
  const auto expect_400 = [&](const json& body, const std::string& param) {
    const auto r = post(srv, body);
    EXPECT_EQ(r.status, 400) << body.dump();
    EXPECT_EQ(r.body["error"]["param"], param) << r.body.dump();
  };
  auto bad_schema = request();
  bad_schema["tools"][0]["function"]["parameters"] = "object";
  expect_400(bad_schema, "tools[0].function.parameters");
  auto no_name = request();
  no_name["tools"][1]["function"].erase("name");
  expect_400(no_name, "tools[1].function.name");
  expect_400(request({{"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}),
             "tool_choice.function.name");
  expect_400(request({{"tool_choice", "sometimes"}}), "tool_choice");
  auto required_without_tools = request({{"tool_choice", "required"}});
  required_without_tools.erase("tools");
  expect_400(required_without_tools, "tool_choice");
  auto orphan = request();
  orphan["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_9"}, {"content", "x"}});
  expect_400(orphan, "messages[1].tool_call_id");
  auto block = request();
  block["messages"][0]["content"] = json::parse(R"([{"type": "hologram", "text": "x"}])");
  expect_400(block, "messages[0].content[0].type");
  auto bad_call = request();
  bad_call["messages"].push_back(
      json::parse(R"({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {}}]})"));
  expect_400(bad_call, "messages[1].tool_calls[0].function.name");
  // Every field OpenAI requires of a call in the history, and of a declared tool.
  for (const auto& [field, param] : std::vector<std::pair<std::string, std::string>>{
           {"id", "messages[1].tool_calls[0].id"},
           {"type", "messages[1].tool_calls[0].type"},
           {"arguments", "messages[1].tool_calls[0].function.arguments"}}) {
    auto call = json::parse(R"({"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}})");
    if (field == "arguments")
      call["function"].erase("arguments");
    else
      call.erase(field);
    auto missing = request();
    missing["messages"].push_back({{"role", "assistant"}, {"tool_calls", json::array({call})}});
    expect_400(missing, param);
  }
  auto many = request();
  for (int i = 0; i < 128; ++i)
    many["tools"].push_back({{"type", "function"}, {"function", {{"name", "f" + std::to_string(i)}}}});
  expect_400(many, "tools");
  auto untyped_tool = request();
  untyped_tool["tools"][0].erase("type");
  expect_400(untyped_tool, "tools[0].type");
  auto not_a_function = request();
  not_a_function["tools"][0] = "get_weather";
  expect_400(not_a_function, "tools[0]");
}

TEST_F(ChatTools, ReasoningIsSplitFromTheAnswer) {
  svc.pieces = {"<think>\nIt is", " sunny.\n</th", "ink>\n\nSunny", "."};
  const auto r = post(srv, request());
  ASSERT_EQ(r.status, 200);
  const auto& m = r.body["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "It is sunny.");
  EXPECT_EQ(m["reasoning"], "It is sunny.");
  EXPECT_EQ(m["content"], "Sunny.");
  const auto s = post(srv, request({{"stream", true}}));
  std::string reasoning, content;
  for (const auto& c : s.chunks) {
    const auto& d = c["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) content += d["content"].get<std::string>();
  }
  EXPECT_EQ(reasoning, "It is sunny.");
  EXPECT_EQ(content, "Sunny.");
}

}  // namespace
}  // namespace tf::server
