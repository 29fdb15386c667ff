// Whole requests through HttpServer against a fake engine: through dispatch() (no sockets) for status codes
// and bodies, and over a real socket for the size limit, streaming, client disconnects and /health under load.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "fake_service.h"
#include "server/http_server.h"

namespace tf::server {
namespace {

using json = nlohmann::ordered_json;
using testing::FakeService;

ServerOptions options(std::vector<std::string> keys = {}) {
  ServerOptions o;
  o.port = 0;
  o.names = {"smol", {"alias-1"}};
  o.api_keys = std::move(keys);
  o.default_max_tokens = 16;
  o.max_body_bytes = 4096;
  return o;
}

struct Reply {
  int status = 0;
  json body;
  std::string raw;
  httplib::Headers headers;
};

// Runs one request through the server's dispatch, including a streamed body when there is one.
Reply call(HttpServer& srv, const std::string& method, const std::string& path, const std::string& body = "",
           const std::string& auth = "") {
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.body = body;
  if (!auth.empty()) req.headers.emplace("Authorization", auth);
  httplib::Response res;
  srv.dispatch(req, res);
  Reply r;
  r.status = res.status;
  r.headers = res.headers;
  if (res.content_provider_) {
    httplib::DataSink sink;
    bool done = false;
    sink.write = [&](const char* d, std::size_t n) {
      r.raw.append(d, n);
      return true;
    };
    sink.done = [&] { done = true; };
    sink.is_writable = [] { return true; };
    EXPECT_TRUE(res.content_provider_(0, 0, sink));
    EXPECT_TRUE(done);
    res.content_provider_success_ = true;
  } else {
    r.raw = res.body;
    r.body = json::parse(res.body, nullptr, false);
  }
  return r;
}

std::vector<json> sse_payloads(const std::string& raw, std::vector<std::string>* names = nullptr) {
  std::vector<json> out;
  std::size_t at = 0;
  while ((at = raw.find("data: ", at)) != std::string::npos) {
    const auto end = raw.find("\n\n", at);
    const auto data = raw.substr(at + 6, end - at - 6);
    if (names) {
      const auto ev = raw.rfind("event: ", at);
      names->push_back(ev != std::string::npos && raw.find("\n\n", ev) > at ? raw.substr(ev + 7, raw.find('\n', ev) - ev - 7)
                                                                            : "");
    }
    out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
    at = end;
  }
  return out;
}

const std::string kChat = R"({"model":"smol","messages":[{"role":"user","content":"hi"}]})";

class ServerTest : public ::testing::Test {
 protected:
  FakeService svc;
};

TEST_F(ServerTest, ServesOnlyOnceReady) {
  HttpServer srv(options());
  auto health = call(srv, "GET", "/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body["status"], "loading");
  auto chat = call(srv, "POST", "/v1/chat/completions", kChat);
  EXPECT_EQ(chat.status, 503);
  EXPECT_EQ(chat.body["error"]["code"], "model_loading");
  srv.set_service(&svc);
  EXPECT_EQ(call(srv, "GET", "/health").body["status"], "ok");
}

TEST_F(ServerTest, ModelsListIdAliasesAndContext) {
  HttpServer srv(options());
  srv.set_service(&svc);
  const auto r = call(srv, "GET", "/v1/models");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body["object"], "list");
  ASSERT_EQ(r.body["data"].size(), 2u);
  EXPECT_EQ(r.body["data"][0]["id"], "smol");
  EXPECT_EQ(r.body["data"][0]["object"], "model");
  EXPECT_EQ(r.body["data"][0]["owned_by"], "tensorfold");
  EXPECT_EQ(r.body["data"][0]["context_length"], 64);
  EXPECT_EQ(r.body["data"][0]["aliases"], json::array({"alias-1"}));
  EXPECT_EQ(r.body["data"][1]["id"], "alias-1");
  EXPECT_EQ(call(srv, "GET", "/v1/models/alias-1").body["id"], "alias-1");
  EXPECT_EQ(call(srv, "GET", "/v1/models/gpt-4").status, 404);
}

TEST_F(ServerTest, AuthRequiresABearerKeyExceptForHealth) {
  HttpServer srv(options({"sk-test"}));
  srv.set_service(&svc);
  EXPECT_EQ(call(srv, "GET", "/health").status, 200);
  auto r = call(srv, "GET", "/v1/models");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.body["error"]["code"], "invalid_api_key");
  bool challenged = false;
  for (const auto& [k, v] : r.headers) challenged |= (k == "WWW-Authenticate" && v == "Bearer");
  EXPECT_TRUE(challenged);
  EXPECT_EQ(call(srv, "GET", "/v1/models", "", "Bearer wrong").status, 401);
  EXPECT_EQ(call(srv, "GET", "/v1/models", "", "Bearer sk-test").status, 200);
  EXPECT_EQ(call(srv, "POST", "/v1/chat/completions", kChat, "Bearer sk-test").status, 200);
}

TEST_F(ServerTest, AdmissionRefusalsAre400Or503WithRetryAfter) {
  HttpServer srv(options());
  srv.set_service(&svc);
  svc.refuse = AdmissionError(AdmissionError::Kind::NeverFits,
                              "This server's memory budget holds at most 40 tokens per request (prompt plus completion).",
                              40);
  auto r = call(srv, "POST", "/v1/chat/completions", kChat);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(r.body["error"]["type"], "invalid_request_error");
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("at most 40 tokens"), std::string::npos);
  svc.refuse = AdmissionError(AdmissionError::Kind::QueueFull, "The server is busy.", 0, 7);
  r = call(srv, "POST", "/v1/completions", R"({"model":"smol","prompt":"hi","stream":true})");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body["error"]["code"], "server_busy");
  EXPECT_EQ(r.body["error"]["type"], "server_error");
  std::string retry;
  for (const auto& [k, v] : r.headers)
    if (k == "Retry-After") retry = v;
  EXPECT_EQ(retry, "7");
  svc.refuse.reset();
  EXPECT_EQ(call(srv, "POST", "/v1/chat/completions", kChat).status, 200);
}

TEST_F(ServerTest, HealthAndMetricsCarryTheSchedulerCounters) {
  svc.stats_to_report.requests_running = 3;
  svc.stats_to_report.requests_waiting = 2;
  svc.stats_to_report.prompt_tokens_total = 120;
  svc.stats_to_report.time_to_first_token.observe(0.03);
  svc.stats_to_report.time_to_first_token.observe(3.0);
  {
    HttpServer srv(options());
    EXPECT_EQ(call(srv, "GET", "/metrics").status, 503);  // loading
    srv.set_service(&svc);
    const auto health = call(srv, "GET", "/health");
    EXPECT_EQ(health.body["requests_running"], 3);
    EXPECT_EQ(health.body["requests_waiting"], 2);
    const auto m = call(srv, "GET", "/metrics");
    EXPECT_EQ(m.status, 200);
    for (const char* line : {"vllm:num_requests_running{model_name=\"smol\"} 3\n",
                             "tensorfold:requests_waiting{model_name=\"smol\"} 2\n",
                             "vllm:prompt_tokens_total{model_name=\"smol\"} 120\n",
                             "# TYPE vllm:time_to_first_token_seconds histogram\n",
                             "vllm:time_to_first_token_seconds_bucket{model_name=\"smol\",le=\"0.04\"} 1\n",
                             "vllm:time_to_first_token_seconds_bucket{model_name=\"smol\",le=\"2.5\"} 1\n",
                             "vllm:time_to_first_token_seconds_bucket{model_name=\"smol\",le=\"5\"} 2\n",
                             "vllm:time_to_first_token_seconds_bucket{model_name=\"smol\",le=\"+Inf\"} 2\n",
                             "vllm:time_to_first_token_seconds_count{model_name=\"smol\"} 2\n"})
      EXPECT_NE(m.raw.find(line), std::string::npos) << line << " not in\n" << m.raw;
  }
  HttpServer keyed(options({"sk-test"}));
  keyed.set_service(&svc);
  EXPECT_EQ(call(keyed, "GET", "/metrics").status, 401);
  EXPECT_EQ(call(keyed, "GET", "/metrics", "", "Bearer sk-test").status, 200);
  EXPECT_FALSE(call(keyed, "GET", "/health").body.contains("requests_running"));
}

TEST_F(ServerTest, UnknownRoutesAndWrongMethods) {
  HttpServer srv(options());
  srv.set_service(&svc);
  auto r = call(srv, "GET", "/v1/nothing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body["error"]["type"], "invalid_request_error");
  r = call(srv, "GET", "/v1/chat/completions");
  EXPECT_EQ(r.status, 405);
  EXPECT_TRUE(r.body["error"]["message"].is_string());
  EXPECT_EQ(call(srv, "PUT", "/v1/models").status, 405);
}

TEST_F(ServerTest, ChatCompletion) {
  HttpServer srv(options());
  srv.set_service(&svc);
  const auto r = call(srv, "POST", "/v1/chat/completions",
                      R"({"model":"alias-1","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"seed":3,
                          "temperature":0,"stop":["x"],"draft":false})");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["object"], "chat.completion");
  EXPECT_EQ(r.body["model"], "smol");
  EXPECT_EQ(r.body["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(r.body["choices"][0]["message"]["content"], "Hello world");
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop");
  const auto sent = svc.last_request();
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], static_cast<int>(sent.prompt.size()));
  EXPECT_EQ(r.body["usage"]["completion_tokens"], 3);
  EXPECT_EQ(r.body["usage"]["total_tokens"], static_cast<int>(sent.prompt.size()) + 3);
  EXPECT_EQ(r.body["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(sent.max_tokens, 5);
  EXPECT_EQ(*sent.seed, 3u);
  EXPECT_EQ(sent.sampling.temperature, 0.0f);
  EXPECT_EQ(sent.stop, std::vector<std::string>{"x"});
  EXPECT_FALSE(sent.draft);
  EXPECT_EQ(svc.last_rendered, "user: hi\nassistant: ");
}

TEST_F(ServerTest, ChatStreamWithUsage) {
  HttpServer srv(options());
  srv.set_service(&svc);
  svc.finish = FinishReason::Length;
  const auto r = call(srv, "POST", "/v1/chat/completions",
                      R"({"model":"smol","messages":[{"role":"user","content":"hi"}],"stream":true,
                          "stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200);
  const auto chunks = sse_payloads(r.raw);
  ASSERT_EQ(chunks.size(), 1u + 3u + 1u + 1u + 1u);  // role, 3 pieces, finish, usage, [DONE]
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (std::size_t i = 1; i <= 3; ++i) {
    EXPECT_EQ(chunks[i]["object"], "chat.completion.chunk");
    EXPECT_EQ(chunks[i]["id"], chunks[0]["id"]);
    EXPECT_TRUE(chunks[i]["usage"].is_null());
    text += chunks[i]["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, "Hello world");
  EXPECT_EQ(chunks[4]["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(chunks[5]["choices"].empty());
  EXPECT_EQ(chunks[5]["usage"]["completion_tokens"], 3);
  EXPECT_EQ(chunks[6], "[DONE]");
}

TEST_F(ServerTest, ErrorAfterTheStreamOpenedIsAnEventThenDone) {
  HttpServer srv(options());
  srv.set_service(&svc);
  svc.finish = FinishReason::Error;
  svc.error = "device lost";
  const auto r = call(srv, "POST", "/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"hi"}],"stream":true})");
  const auto chunks = sse_payloads(r.raw);
  ASSERT_GE(chunks.size(), 2u);
  EXPECT_EQ(chunks[chunks.size() - 2]["error"]["type"], "server_error");
  EXPECT_NE(chunks[chunks.size() - 2]["error"]["message"].get<std::string>().find("device lost"),
            std::string::npos);
  EXPECT_EQ(chunks.back(), "[DONE]");
  // Not streamed: a 500 envelope.
  const auto plain = call(srv, "POST", "/v1/chat/completions", kChat);
  EXPECT_EQ(plain.status, 500);
  EXPECT_EQ(plain.body["error"]["type"], "server_error");
}

TEST_F(ServerTest, AnyModelNameIsTheServedModelUnlessStrict) {
  const std::string body = R"({"model":"claude-sonnet-4","messages":[{"role":"user","content":"hi"}]})";
  {
    HttpServer srv(options());
    srv.set_service(&svc);
    const auto r = call(srv, "POST", "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body["model"], "smol");  // the reply names the served id
  }
  auto strict = options();
  strict.names.strict = true;
  HttpServer srv(strict);
  srv.set_service(&svc);
  const auto r = call(srv, "POST", "/v1/chat/completions", body);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body["error"]["code"], "model_not_found");
  EXPECT_EQ(
      call(srv, "POST", "/v1/chat/completions", R"({"model":"alias-1","messages":[{"role":"user","content":"hi"}]})")
          .status,
      200);
}

TEST_F(ServerTest, ClientErrorsBeforeAnyToken) {
  auto strict = options();
  strict.names.strict = true;  // the unknown model's 404 below
  HttpServer srv(strict);
  srv.set_service(&svc);
  struct Case {
    std::string body;
    int status;
    std::string code;  // "" for any
  };
  const std::vector<Case> cases = {
      {"{not json", 400, ""},
      {"[]", 400, ""},
      {R"({"model":"smol"})", 400, ""},
      {R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})", 404, "model_not_found"},
      {R"({"messages":[{"role":"user","content":"hi"}],"n":0})", 400, "invalid_value"},
      {R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":{"999999":5}})", 400, "invalid_value"},
      {R"({"messages":[{"role":"user","content":"hi"}],"temperature":true})", 400, "invalid_type"},
      {R"({"messages":[{"role":"user","content":"hi"}],"top_k":1.5})", 400, "invalid_type"},
      {R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":60})", 400, "context_length_exceeded"},
      {R"({"messages":[{"role":"user","content":")" + std::string(80, 'a') + R"("}]})", 400, "context_length_exceeded"},
  };
  for (const auto& c : cases) {
    const auto r = call(srv, "POST", "/v1/chat/completions", c.body);
    EXPECT_EQ(r.status, c.status) << c.body;
    ASSERT_TRUE(r.body.contains("error")) << r.raw;
    for (const char* k : {"message", "type", "param", "code"}) EXPECT_TRUE(r.body["error"].contains(k)) << k;
    if (!c.code.empty()) {
      EXPECT_EQ(r.body["error"]["code"], c.code) << c.body;
    }
  }
  EXPECT_EQ(svc.request_count(), 0u);  // nothing reached the engine
  svc.template_throws = true;
  const auto t = call(srv, "POST", "/v1/chat/completions", kChat);
  EXPECT_EQ(t.status, 400);
  EXPECT_EQ(t.body["error"]["code"], "chat_template_error");
}

TEST_F(ServerTest, CompletionsTextAndTokenIds) {
  HttpServer srv(options());
  srv.set_service(&svc);
  auto r = call(srv, "POST", "/v1/completions", R"({"model":"smol","prompt":"abc","max_tokens":3})");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["object"], "text_completion");
  EXPECT_EQ(r.body["choices"][0]["text"], "Hello world");
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], 4);  // BOS + 3 bytes
  r = call(srv, "POST", "/v1/completions", R"({"prompt":[[5,6,7,8,9]],"max_tokens":3})");
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(svc.last_request().prompt, (std::vector<std::int32_t>{5, 6, 7, 8, 9}));
  r = call(srv, "POST", "/v1/completions", R"({"prompt":[5,300]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["param"], "prompt");
  // echo with logprobs asks the engine to score the prompt: its first token has no log-probability.
  r = call(srv, "POST", "/v1/completions", R"({"prompt":"x","echo":true,"logprobs":1,"max_tokens":0})");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(svc.last_request().prompt_logprobs);
  EXPECT_FALSE(svc.last_request().generate);
  EXPECT_EQ(r.body["choices"][0]["logprobs"]["tokens"][0], "\x01");
  EXPECT_TRUE(r.body["choices"][0]["logprobs"]["token_logprobs"][0].is_null());
  EXPECT_TRUE(r.body["choices"][0]["logprobs"]["top_logprobs"][0].is_null());
  r = call(srv, "POST", "/v1/completions", R"({"prompt":"x","max_tokens":0})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["param"], "max_tokens");
  r = call(srv, "POST", "/v1/completions", R"({"prompt":"x","echo":true})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body["choices"][0]["text"], "xHello world");
  r = call(srv, "POST", "/v1/completions", R"({"prompt":"x","stream":true})");
  const auto chunks = sse_payloads(r.raw);
  EXPECT_EQ(chunks.front()["choices"][0]["text"], "Hel");
  EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(chunks.back(), "[DONE]");
}

TEST_F(ServerTest, ResponsesStoreChainGetDelete) {
  HttpServer srv(options());
  srv.set_service(&svc);
  auto first = call(srv, "POST", "/v1/responses", R"({"model":"smol","input":"Hi","instructions":"Be brief"})");
  ASSERT_EQ(first.status, 200) << first.raw;
  const auto id = first.body["id"].get<std::string>();
  EXPECT_EQ(id.rfind("resp_", 0), 0u);
  EXPECT_EQ(first.body["status"], "completed");
  EXPECT_EQ(first.body["output"][0]["content"][0]["text"], "Hello world");
  EXPECT_EQ(first.body["usage"]["output_tokens"], 3);
  EXPECT_EQ(svc.last_rendered, "system: Be brief\nuser: Hi\nassistant: ");

  auto second = call(srv, "POST", "/v1/responses",
                     json{{"input", "And?"}, {"previous_response_id", id}}.dump());
  ASSERT_EQ(second.status, 200) << second.raw;
  EXPECT_EQ(second.body["previous_response_id"], id);
  // Instructions are not carried over; the earlier turns are.
  EXPECT_EQ(svc.last_rendered, "user: Hi\nassistant: Hello world\nuser: And?\nassistant: ");

  EXPECT_EQ(call(srv, "GET", "/v1/responses/" + id).body, first.body);
  auto del = call(srv, "DELETE", "/v1/responses/" + id);
  EXPECT_EQ(del.status, 200);
  EXPECT_EQ(del.body["deleted"], true);
  EXPECT_EQ(call(srv, "GET", "/v1/responses/" + id).status, 404);
  EXPECT_EQ(call(srv, "DELETE", "/v1/responses/" + id).status, 404);
  const auto gone = call(srv, "POST", "/v1/responses", json{{"input", "x"}, {"previous_response_id", id}}.dump());
  EXPECT_EQ(gone.status, 400);
  EXPECT_EQ(gone.body["error"]["param"], "previous_response_id");

  const auto unstored = call(srv, "POST", "/v1/responses", R"({"input":"x","store":false})");
  EXPECT_EQ(call(srv, "GET", "/v1/responses/" + unstored.body["id"].get<std::string>()).status, 404);
}

TEST_F(ServerTest, ResponsesStream) {
  HttpServer srv(options());
  srv.set_service(&svc);
  const auto r = call(srv, "POST", "/v1/responses", R"({"input":"Hi","stream":true})");
  std::vector<std::string> names;
  const auto events = sse_payloads(r.raw, &names);
  ASSERT_EQ(events.size(), 4u + 3u + 4u);
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["sequence_number"], static_cast<int>(i));
    EXPECT_EQ(events[i]["type"], names[i]);
  }
  EXPECT_EQ(names.front(), "response.created");
  EXPECT_EQ(names.back(), "response.completed");
  const auto id = events.back()["response"]["id"].get<std::string>();
  EXPECT_EQ(call(srv, "GET", "/v1/responses/" + id).body["output"][0]["content"][0]["text"], "Hello world");
}

// --- over a socket ---------------------------------------------------------------------------------

class LiveServer : public ::testing::Test {
 protected:
  void SetUp() override {
    srv = std::make_unique<HttpServer>(options());
    srv->bind();
    srv->start();
    srv->set_service(&svc);
  }
  void TearDown() override { srv->stop(); }
  FakeService svc;
  std::unique_ptr<HttpServer> srv;
};

TEST_F(LiveServer, BodyOverTheLimitIs413WithTheEnvelope) {
  httplib::Client cli("127.0.0.1", srv->port());
  const auto r = cli.Post("/v1/chat/completions", std::string(8192, ' '), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  const auto body = json::parse(r->body, nullptr, false);
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  // The connection's next request still works.
  const auto next = cli.Get("/health");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

TEST_F(LiveServer, StreamsOverHttp) {
  httplib::Client cli("127.0.0.1", srv->port());
  const auto r = cli.Post("/v1/chat/completions",
                          R"({"messages":[{"role":"user","content":"hi"}],"stream":true})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_NE(r->body.find("data: [DONE]"), std::string::npos);
}

// A connection that sent a chat request and reads nothing back (-1 when it could not).
int send_chat_request(int port, const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      send(fd, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

// A client that leaves cancels its generation, streamed or not.
void expect_cancel_on_disconnect(FakeService& svc, int port, const std::string& body) {
  const int fd = send_chat_request(port, body);
  ASSERT_GE(fd, 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!svc.last_stream() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto stream = svc.last_stream();
  ASSERT_TRUE(stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(stream->cancelled());
  close(fd);
  while (!stream->cancelled() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(stream->cancelled());
}

TEST_F(LiveServer, DisconnectCancelsAWaitingReply) {
  svc.slow = true;
  svc.context = 100000;
  expect_cancel_on_disconnect(svc, srv->port(), R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":5000})");
}

TEST_F(LiveServer, DisconnectCancelsAStream) {
  svc.slow = true;
  svc.context = 100000;
  expect_cancel_on_disconnect(svc, srv->port(),
                              R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":5000,"stream":true})");
}

// Every stream the engine holds keeps its connection's thread; /health and /metrics still answer at once.
// (A fixed pool of 32 threads let 40 streams take every thread: the last 8 and /health waited.) A burst of
// connections is not held back by the listen backlog either.
TEST_F(LiveServer, HealthAnswersWhileTheEngineHoldsEveryStream) {
  svc.slow = true;
  svc.context = 100000;
  constexpr int kStreams = 40;
  srv->set_engine_capacity(kStreams);
  std::vector<int> fds;
  struct CloseAll {
    std::vector<int>& fds;
    ~CloseAll() {
      for (int fd : fds)
        if (fd >= 0) close(fd);
    }
  } close_all{fds};  // also when an assertion returns early: stop() would wait for the unread streams
  const auto connecting = std::chrono::steady_clock::now();
  for (int i = 0; i < kStreams; ++i) {
    fds.push_back(send_chat_request(
        srv->port(), R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":5000,"stream":true})"));
    ASSERT_GE(fds.back(), 0);
  }
  // The kernel completes a connect without the server's accept thread, unless the listen backlog is full:
  // then it drops the SYN and the client retries a second later (httplib's own backlog is 5).
  EXPECT_LT(std::chrono::steady_clock::now() - connecting, std::chrono::seconds(1)) << "a connect was retried";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (svc.request_count() < kStreams && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(svc.request_count(), static_cast<std::size_t>(kStreams)) << "not every stream got a thread";
  {
    httplib::Client cli("127.0.0.1", srv->port());
    cli.set_connection_timeout(2, 0);
    cli.set_read_timeout(2, 0);
    const auto t0 = std::chrono::steady_clock::now();
    const auto health = cli.Get("/health");
    const auto metrics = cli.Get("/metrics");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 200);
  }  // closes its keep-alive connection, which would hold a thread (and stop()) for 5 s
  for (int& fd : fds) {  // the streams end as their clients leave
    close(fd);
    fd = -1;
  }
  const auto gone = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto all_cancelled = [&] { return srv->context().active().size() == 0; };
  while (!all_cancelled() && std::chrono::steady_clock::now() < gone)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(all_cancelled());
}

TEST_F(LiveServer, StopCancelsRunningGenerations) {
  svc.slow = true;
  svc.context = 100000;
  std::thread client([&] {
    httplib::Client cli("127.0.0.1", srv->port());
    cli.set_read_timeout(20, 0);
    cli.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":5000})",
             "application/json");
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!svc.last_stream() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!svc.last_stream()) {
    srv->stop();
    client.join();
    FAIL() << "the request never reached the engine";
  }
  const auto t0 = std::chrono::steady_clock::now();
  srv->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
  EXPECT_TRUE(svc.last_stream()->cancelled());
  client.join();
}

}  // namespace
}  // namespace tf::server
