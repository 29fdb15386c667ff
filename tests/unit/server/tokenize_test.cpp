// POST /tokenize and /detokenize against the fake engine (one token per byte): llama.cpp's and vLLM's shapes.
#include <gtest/gtest.h>
#include <httplib.h>

#include "fake_service.h"
#include "server/http_server.h"

namespace tf::server {
namespace {

using json = nlohmann::ordered_json;

std::pair<int, json> post(HttpServer& srv, const std::string& path, const json& body) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  httplib::Response res;
  srv.dispatch(req, res);
  return {res.status, json::parse(res.body, nullptr, false)};
}

class Tokenize : public ::testing::Test {
 protected:
  void SetUp() override { srv.set_service(&svc); }
  testing::FakeService svc;
  HttpServer srv{[] {
    ServerOptions o;
    o.port = 0;
    o.names = {"smol", {}};
    return o;
  }()};
};

TEST_F(Tokenize, TextInLlamaCppAndVllmShapes) {
  auto [status, r] = post(srv, "/tokenize", {{"content", "hi"}});
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["tokens"], json({104, 105}));
  EXPECT_EQ(r["count"], 2);
  EXPECT_EQ(r["max_model_len"], 64);
  // vLLM: "prompt", add_special_tokens defaults to true; token_strs on request.
  std::tie(status, r) = post(srv, "/v1/tokenize", {{"prompt", "hi"}, {"return_token_strs", true}});
  ASSERT_EQ(status, 200);
  EXPECT_EQ(r["tokens"], json({1, 104, 105}));
  EXPECT_EQ(r["token_strs"].size(), 3u);
  std::tie(status, r) = post(srv, "/tokenize", {{"content", "hi"}, {"with_pieces", true}});
  EXPECT_EQ(r["tokens"][0], json({{"id", 104}, {"piece", "h"}}));
}

TEST_F(Tokenize, MessagesCountTheChatPrompt) {
  const auto [status, r] = post(srv, "/tokenize", {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}});
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["count"], std::string("user: hi\nassistant: ").size());
}

TEST_F(Tokenize, DetokenizeAndBadInput) {
  auto [status, r] = post(srv, "/detokenize", {{"tokens", {104, 105}}});
  ASSERT_EQ(status, 200);
  EXPECT_EQ(r["content"], "hi");
  EXPECT_EQ(r["prompt"], "hi");
  std::tie(status, r) = post(srv, "/v1/detokenize", {{"tokens", {104, 300}}});
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["error"]["param"], "tokens[1]");
  std::tie(status, r) = post(srv, "/tokenize", json::object());
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["error"]["param"], "content");
}

}  // namespace
}  // namespace tf::server
